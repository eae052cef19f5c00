/* CUDA backend of the shallow-water passes on one part, compiled once per precision: with
 * TS_REAL_DOUBLE=0 it defines swe_kernels_cuda_float, with 1 swe_kernels_cuda_double. The
 * kernels call the stage functions of swe_stage.h, the same code as the CPU loops; the host
 * arrays of the part mirror the device arrays (copied at creation, before host code reads the
 * state and after it writes it), so initialisation, access and checkpoints are the CPU
 * backend's code on the mirror.
 *
 * Stage 0 computes its fluxes (k_fluxes or k_rows<false>, which also reduce the wave speeds
 * for the time step: per warp, then an atomic maximum on their bits, as non-negative floats
 * order like integers) and finishes with per-cell limiter and update kernels; stage 1 is one
 * fused kernel (k_stage or k_rows<true>) that also records the step's maxima. Two engines run
 * these stage kernels with the same values: the tile engine (a block per tile in shared
 * memory) on small regions, the row engine (a warp per strip of columns, marching up the rows
 * with the cells in registers) on large ones (ts_swe_gpu_kernels); each has a file of its own
 * (swe_tiles.cu, swe_rows.cu) and this file holds the rest. Each cell's bed
 * source is completed with its high face's correction in the order the CPU sweep uses, and the
 * build turns off fused multiply-add, so both backends compute the same values. Halo copies
 * between the GPUs of one process are queued on per-device streams (ts_gpu_copy_box). */
#include "physics/swe/swe_gpu.cuh"

/* ------------------------------------------------------------------ kernels */

static __global__ void k_velocity(swe_arrays a, swe_consts k, region_t r, int64_t origin) {
  int i, j;
  if (cell_of(r, 0, 0, &i, &j))
    swe_cell_velocity(&a, &k, origin + i + j * a.row);
}

/* Ghost cells of a global side for a stage, its inflow discharge from the clock (signed along
 * the axis, as the ghosts store it). */
static __global__ void k_fill_side(swe_arrays a, swe_consts k, int side, int type, ts_real level,
                                   const swe_clock *clock, int stage, int nx, int ny,
                                   int64_t origin) {
  int along = side < 2 ? ny : nx;
  int t = (int)(blockIdx.x * blockDim.x + threadIdx.x);
  if (t >= along * SWE_GHOST || clock->idle)
    return;
  double q = clock->qunit[stage][side];
  ts_real q_unit = (ts_real)(side == TS_EAST || side == TS_NORTH ? -q : q);
  swe_fill_side_ghost(&a, &k, origin, nx, ny, side, t / SWE_GHOST, 1 + t % SWE_GHOST, type, level,
                      q_unit);
}

/* The first stage's outflow limiters and speed caps of the cells of r in active tiles, from
 * the stored fluxes and characteristic speeds (swe_drain_cell). */
static __global__ void k_limit(swe_arrays g, swe_consts k, region_t r, int64_t origin,
                               const swe_clock *clock, tiles_t tiles) {
  int i, j;
  if (!clock->idle && cell_of(r, 0, 0, &i, &j) && tile_on(tiles, i, j))
    swe_drain_cell(&g, &k, (swe_idx)(origin + i + (int64_t)j * g.row), (ts_real)clock->dt);
}

/* The first stage's update of the active cells of r in active tiles, from the stored fluxes,
 * limiters and sources, into `out` (swe_update_cell). */
static __global__ void k_update_first(swe_arrays g, swe_arrays out, swe_consts k, region_t r,
                                      int64_t origin, swe_clock *clock, tiles_t tiles) {
  int i, j;
  if (clock->idle || !cell_of(r, 0, 0, &i, &j) || !tile_on(tiles, i, j))
    return;
  swe_idx c = (swe_idx)(origin + i + (int64_t)j * g.row);
  if (g.active[c] && swe_update_cell(&out, &g, &k, c, c, (ts_real)clock->dt, 0))
    clock->bad = 1;
}

/* Inflow sides of the first stage: their boundary faces carry the prescribed discharge. */
static __global__ void k_inflow(swe_arrays g, int side, int nx, int ny, int64_t origin,
                                const swe_clock *clock) {
  int along = side < 2 ? ny : nx;
  int at = (int)(blockIdx.x * blockDim.x + threadIdx.x);
  if (at < along && !clock->idle)
    swe_impose_side_flux(&g, (swe_idx)origin, nx, ny, side, at, (ts_real)clock->qunit[0][side]);
}

/* Whether the part's stage kernels on region r are the row engine's. */
static int use_rows(const swe_part *s, swe_region r) {
  if (s->p->parallel.kernels != TS_SWE_GPU_AUTO)
    return s->p->parallel.kernels == TS_SWE_GPU_ROWS;
  /* A part that skips dry tiles may have few wet ones, whose few warps would march their rows
   * with too little latency hidden (Malpasset: 11.4 s on rows against 7.4 s on tiles). */
  return !s->early_exit && (int64_t)(r.i1 - r.i0) * (r.j1 - r.j0) >= TS_SWE_ROWS_MIN_CELLS;
}

/* The maxima of the owned cells at the end of the step (or at the clock's time outside steps). */
static __global__ void k_maxima(swe_arrays a, region_t own, int64_t origin, swe_maps m,
                                tiles_t tiles, const swe_clock *clock) {
  int i, j;
  if (clock->idle || !cell_of(own, 0, 0, &i, &j) || !tile_on(tiles, i, j))
    return;
  m.t = clock->t_after;
  m.dt = clock->dt;
  int64_t c = origin + i + j * a.row;
  if (a.active[c])
    swe_record_cell(&m, c, a.w[c], a.bed[c], a.hu[c], a.hv[c]);
}

/* The water through global side `side` of the owned edge cells [lo, hi) along it in a stage
 * (swe_boundary_flux), times the stage's RK weight, into their inflow and outflow volumes. Cells
 * of early-exit tiles that are not computed pass nothing (they are dry among dry cells), and
 * RK2's second stage reads its state from buffers that such tiles never wrote: they are left
 * out. */
static __global__ void k_boundary(swe_arrays a, swe_consts k, int side, int lo, int hi, int edge,
                                  int64_t origin, const swe_clock *clock, int stage, int inflow,
                                  double weight, double width, tiles_t tiles, double *in_vol,
                                  double *out_vol) {
  int at = lo + (int)(blockIdx.x * blockDim.x + threadIdx.x);
  if (clock->idle || at >= hi)
    return;
  int i = side < 2 ? edge : at, j = side < 2 ? at : edge;
  swe_idx c = (swe_idx)(origin + i + (int64_t)j * a.row);
  if (!a.active[c] || !tile_on(tiles, i, j))
    return;
  ts_real q_in = inflow ? (ts_real)clock->qunit[stage][side] : SWE_R(0);
  double into = weight * clock->dt * width *
                (double)swe_boundary_flux(&a, &k, c, side, (ts_real)clock->dt, inflow, q_in);
  if (into > 0)
    in_vol[c] += into;
  else
    out_vol[c] -= into;
}

/* Rain and losses of the step on the active cells of r (swe_source_cell). */
static __global__ void k_sources(swe_arrays a, region_t r, int64_t origin, const swe_clock *clock,
                                 const double *rain_rate, const ts_real *rain,
                                 const ts_real *initial, const ts_real *rate, double loss_initial,
                                 double loss_rate, double *lost) {
  int i, j;
  if (clock->idle || !cell_of(r, 0, 0, &i, &j))
    return;
  int64_t c = origin + i + (int64_t)j * a.row;
  if (!a.active[c])
    return;
  ts_real dt = (ts_real)clock->dt;
  swe_source_cell(&a, (swe_idx)c, rain ? rain[c] * dt : (ts_real)*rain_rate * dt,
                  initial ? (double)initial[c] : loss_initial,
                  rate ? rate[c] * dt : (ts_real)loss_rate * dt, &lost[c]);
}

/* Tile wet flags: one block per tile; a tile reaching outside `valid` counts as wet. */
static __global__ void k_tile_wet(swe_arrays a, int64_t origin, int nx, int ny, int size,
                                  int tiles_x, region_t valid, unsigned char *wet) {
  int tx = (int)blockIdx.x, ty = (int)blockIdx.y;
  int i0 = tx * size, j0 = ty * size;
  int i1 = min(i0 + size, nx), j1 = min(j0 + size, ny);
  int any = i0 < valid.i0 || i1 > valid.i1 || j0 < valid.j0 || j1 > valid.j1;
  for (int c = (int)threadIdx.x; c < (i1 - i0) * (j1 - j0) && !any; c += (int)blockDim.x) {
    int64_t cell = origin + (i0 + c % (i1 - i0)) + (int64_t)(j0 + c / (i1 - i0)) * a.row;
    any = a.active[cell] && a.w[cell] > a.bed[cell];
  }
  any = __syncthreads_or(any);
  if (threadIdx.x == 0)
    wet[tx + ty * tiles_x] = (unsigned char)any;
}

/* A tile is on when it or one of its 8 neighbours is wet, or a level or inflow side feeds it. */
static __global__ void k_tile_dilate(const unsigned char *wet, int tiles_x, int tiles_y,
                                     unsigned feeds, unsigned char *on) {
  int t = (int)(blockIdx.x * blockDim.x + threadIdx.x);
  if (t >= tiles_x * tiles_y)
    return;
  on[t] = (unsigned char)swe_tile_on(wet, tiles_x, tiles_y, t % tiles_x, t / tiles_x, feeds);
}

/* ------------------------------------------------------------------ the clock */

/* The clock at time t (the first stage's inflow discharges from the device's hydrographs, as
 * every later step computes them), with no run of steps under way. */
static __global__ void k_clock_start(swe_clock *clock, double t, hydro_t hydro) {
  memset(clock, 0, sizeof *clock);
  clock->t = clock->t_after = clock->target = clock->stop = t;
  for (int side = 0; side < 4; side++)
    clock->qunit[0][side] = inflow_unit(&hydro, side, t);
}

/* A run of steps begins: towards `target`, ending after the first step that reaches `stop`. */
static __global__ void k_begin(swe_clock *clock, double target, double stop) {
  clock->target = target;
  clock->stop = stop;
  clock->idle = clock->bad = clock->collapsed = clock->steps = 0;
}

/* The step from the largest wave speeds, as the host computes it (swe_time_step), and the
 * inflow discharges of the second stage. A collapsed step ends the run. */
__device__ static void take_time_step(swe_clock *clock, double ax, double ay, double cfl, double dx,
                                      double dy, const double *rain, const hydro_t *hydro) {
  double t_after;
  double dt = swe_time_step(ax, ay, cfl, dx, dy, rain[1], clock->t, clock->target,
                            sizeof(ts_real) == 8, &t_after);
  clock->dt = dt;
  if (!(dt > 0)) {
    clock->collapsed = clock->idle = 1;
    return;
  }
  clock->t_after = t_after;
  for (int side = 0; side < 4; side++)
    clock->qunit[1][side] = inflow_unit(hydro, side, clock->t + dt);
}

/* The step from the first stage's wave speeds (reset for the next step). */
static __global__ void k_dt(swe_clock *clock, swe_bits *amax, double cfl, double dx, double dy,
                            const double *rain, hydro_t hydro) {
  if (clock->idle)
    return;
  double ax = (double)swe_from_bits(amax[0]), ay = (double)swe_from_bits(amax[1]);
  amax[0] = amax[1] = 0;
  take_time_step(clock, ax, ay, cfl, dx, dy, rain, &hydro);
}

/* Device runs over several parts: each part publishes its first stage's wave speeds (and resets
 * them) in the slot of the step's parity, so that a part still reading the last step's slot of
 * another finds it unchanged; after the parts wait for each other, each takes the step from the
 * largest published speeds (bits of non-negative reals order as the reals). */
static __global__ void k_publish(const swe_clock *clock, swe_bits *amax, swe_bits *published) {
  if (clock->idle)
    return;
  swe_bits *slot = published + 2 * (clock->steps & 1);
  slot[0] = amax[0], slot[1] = amax[1];
  amax[0] = amax[1] = 0;
}

struct published_t {
  const swe_bits *of[SWE_DEVICE_RUN_PARTS];
  int n;
};

static __global__ void k_dt_over(swe_clock *clock, published_t pub, double cfl, double dx,
                                 double dy, const double *rain, hydro_t hydro) {
  if (clock->idle)
    return;
  int parity = clock->steps & 1;
  swe_bits ax = 0, ay = 0;
  for (int q = 0; q < pub.n; q++) {
    const volatile swe_bits *slot = pub.of[q] + 2 * parity;
    ax = slot[0] > ax ? slot[0] : ax;
    ay = slot[1] > ay ? slot[1] : ay;
  }
  take_time_step(clock, (double)swe_from_bits(ax), (double)swe_from_bits(ay), cfl, dx, dy, rain,
                 &hydro);
}

/* The state, velocities and maxima of a cell into 5 reals and 4 doubles. */
__device__ static inline void gather_cell(const swe_arrays *a, const swe_consts *k,
                                          const double *const *max, int64_t c, ts_real *reals,
                                          double *doubles) {
  ts_real h = a->w[c] - a->bed[c];
  ts_real vals[5] = {a->w[c], a->hu[c], a->hv[c],
                     h > 0 ? swe_velocity(a->hu[c], h, k->kappa) : SWE_R(0),
                     h > 0 ? swe_velocity(a->hv[c], h, k->kappa) : SWE_R(0)};
  for (int v = 0; v < 5; v++)
    reals[v] = vals[v];
  for (int v = 0; v < 4; v++)
    doubles[v] = max[v][c];
}

/* Puts gathered values of n cells into the host arrays. */
static void scatter_cells(swe_part *s, const int64_t *cells, int n, const double *doubles,
                          const ts_real *reals) {
  ts_real *dst_r[5] = {(ts_real *)s->w, (ts_real *)s->hu, (ts_real *)s->hv, (ts_real *)s->u,
                       (ts_real *)s->v};
  double *dst_d[4] = {s->max_h, s->max_speed, s->arrival, s->max_eta};
  for (int t = 0; t < n; t++) {
    for (int v = 0; v < 5; v++)
      dst_r[v][cells[t]] = reals[5 * t + v];
    for (int v = 0; v < 4; v++)
      dst_d[v][cells[t]] = doubles[4 * t + v];
  }
}

struct max_ptrs {
  const double *p[4];
};

/* The end of a step: the watched cells and the step are recorded, the clock moves to the end
 * of the step with the first stage's inflow discharges of the next, and the run ends after a
 * non-finite value, at its stop or target time, or when its log is full. */
static __global__ void k_step_end(swe_clock *clock, double *log, swe_arrays a, swe_consts k,
                                  max_ptrs max, watch_t watch, hydro_t hydro) {
  if (clock->idle)
    return;
  int slot = clock->steps;
  char *row = watch.rows + (size_t)slot * watch_row_bytes(watch.n);
  double *doubles = (double *)row;
  ts_real *reals = (ts_real *)(doubles + 4 * (size_t)watch.n);
  for (int q = (int)threadIdx.x; q < watch.n; q += (int)blockDim.x)
    gather_cell(&a, &k, max.p, watch.cells[q], reals + 5 * q, doubles + 4 * q);
  __syncthreads();
  if (threadIdx.x != 0)
    return;
  log[slot] = clock->t_after;
  log[TS_SWE_ADVANCE_MAX + slot] = clock->dt;
  clock->t = clock->t_after;
  clock->steps = slot + 1;
  for (int side = 0; side < 4; side++)
    clock->qunit[0][side] = inflow_unit(&hydro, side, clock->t);
  if (clock->bad || clock->t >= clock->stop || clock->t >= clock->target ||
      clock->steps == TS_SWE_ADVANCE_MAX)
    clock->idle = 1;
}

/* ------------------------------------------------------------------ the table */

static tiles_t tiles_of(const swe_part *s) {
  return tiles_t{gpu_of(s)->tile_on, s->p->tile_size, s->tiles_x};
}

static swe_maps maxima_of(const swe_part *s) {
  const swe_gpu *g = gpu_of(s);
  return swe_maps{g->max[0],
                  g->max[1],
                  g->max[2],
                  g->max[3],
                  g->rec[0],
                  g->rec[1],
                  s->p->arrival_depth,
                  0,
                  0,
                  (ts_real)s->p->dry_depth,
                  swe_part_consts(s).kappa};
}

static region_t region(swe_region r) { return region_t{r.i0, r.i1, r.j0, r.j1}; }

static dim3 blocks_for(swe_region r, int extra_i, int extra_j, dim3 threads) {
  int w = r.i1 - r.i0 + extra_i, h = r.j1 - r.j0 + extra_j;
  return dim3((unsigned)((w + (int)threads.x - 1) / (int)threads.x),
              (unsigned)((h + (int)threads.y - 1) / (int)threads.y));
}

static const dim3 block2d(32, 8);

static int empty(swe_region r) { return r.i0 >= r.i1 || r.j0 >= r.j1; }

/* Velocities of the cells of r, for the host mirror (no kernel reads them: the stage kernels
 * compute them in their tiles). */
static void gpu_velocities(swe_part *s, swe_region r) {
  swe_gpu *g = use(s);
  swe_consts k = swe_part_consts(s);
  k_velocity<<<blocks_for(r, 0, 0, block2d), block2d, 0, g->stream>>>(g->dev, k, region(r),
                                                                      s->origin);
}

/* Nothing to do: the device keeps no velocities between passes. */
static void gpu_refresh_velocities(swe_part *s, swe_region r) { (void)s, (void)r; }

/* The device arrays with the state of the current stage as (w, hu, hv). */
static swe_arrays stage_state(const swe_gpu *g) {
  swe_arrays a = g->dev;
  if (g->mid_step) {
    a.w = g->dev.w0;
    a.hu = g->dev.hu0;
    a.hv = g->dev.hv0;
  }
  return a;
}

/* The ghost cells of the stage (its time is the clock's, not t). */
static void gpu_fill_boundaries(swe_part *s, double t) {
  (void)t;
  swe_gpu *g = use(s);
  swe_consts k = swe_part_consts(s);
  for (int side = 0; side < 4; side++) {
    const ts_swe_bc *bc = &s->p->bc[side];
    if (bc->type == TS_BC_WALL || s->internal[side])
      continue;
    int n = (side < 2 ? s->ny : s->nx) * SWE_GHOST;
    k_fill_side<<<(n + 127) / 128, 128, 0, g->stream>>>(stage_state(g), k, side, (int)bc->type,
                                                        (ts_real)bc->level, g->clock, g->mid_step,
                                                        s->nx, s->ny, s->origin);
  }
}

/* The first stage's fluxes and wave speeds (the time step needs them before any update); the
 * second stage computes its fluxes in the stage kernel. */
static void gpu_fluxes(swe_part *s, swe_region r, double amax[2]) {
  if (!amax || empty(r))
    return;
  swe_gpu *g = use(s);
  swe_consts k = swe_part_consts(s);
  if (use_rows(s, r)) {
    inflow_t none = {{0, 0, 0, 0}, 0};
    SWE_ROWS_STAGE(0, stage_state(g), stage_state(g), k, region(r), region(s->own), s->origin,
                   s->nx, s->ny, g->clock, 0, none, tiles_of(s), maxima_of(s), g->amax, g->sms,
                   g->stream);
  } else {
    SWE_TILES_FLUXES(stage_state(g), k, region(r), region(s->own), s->origin, s->nx, s->ny, g->amax,
                     tiles_of(s), g->clock, g->stream);
  }
}

/* The maximum over the ranks of the wave speeds of the first stage (NCCL, on the stream). */
static void reduce_speeds(swe_part *s) {
  if (!s->reduce_ranks)
    return;
  ts_status st = ts_transport_max(gpu_of(s)->amax, 2, (int)sizeof(swe_bits), gpu_of(s)->stream);
  if (st != TS_OK) {
    fprintf(stderr, "tessera: %s\n", ts_error_message());
    exit(1); /* a collective that failed leaves the ranks out of step */
  }
}

/* The wave speeds accumulated by the first stage's flux kernels (over the ranks with NCCL),
 * read back. */
static void gpu_take_speeds(swe_part *s, double amax[2]) {
  swe_gpu *g = use(s);
  reduce_speeds(s);
  check(cudaMemcpyAsync(g->amax_host, g->amax, 2 * sizeof(swe_bits), cudaMemcpyDeviceToHost,
                        g->stream),
        "copy of the wave speeds");
  check(cudaStreamSynchronize(g->stream), "fluxes");
  amax[0] = fmax(amax[0], (double)swe_from_bits(g->amax_host[0]));
  amax[1] = fmax(amax[1], (double)swe_from_bits(g->amax_host[1]));
}

/* The step on the device, from the host's maxima (exact in the working precision: they are
 * maxima of its values) or from the device's own. */
static void gpu_time_step(swe_part *s, const double amax[2]) {
  swe_gpu *g = use(s);
  if (amax) {
    g->amax_host[0] = swe_to_bits_host((ts_real)amax[0]);
    g->amax_host[1] = swe_to_bits_host((ts_real)amax[1]);
    check(cudaMemcpyAsync(g->amax, g->amax_host, 2 * sizeof(swe_bits), cudaMemcpyHostToDevice,
                          g->stream),
          "copy of the wave speeds");
  } else {
    reduce_speeds(s);
  }
  k_dt<<<1, 1, 0, g->stream>>>(g->clock, g->amax, s->p->cfl, s->grid.dx[0], s->grid.dx[1],
                               g->rain_rate, g->hydro);
}

/* Device runs over several parts (swe_step.c). */
static void *gpu_stream(swe_part *s) { return use(s)->stream; }

static void gpu_order(swe_part *s, const swe_part *after) {
  swe_gpu *a = use(after);
  ts_gpu_stream_after(gpu_of(s)->stream, a->stream, a->mark);
}

static void gpu_stream_after(swe_part *s, void *stream) {
  swe_gpu *g = use(s);
  ts_gpu_stream_after(stream, g->stream, g->mark);
}

static void gpu_after_stream(swe_part *s, void *stream) {
  swe_gpu *g = use(s);
  ts_gpu_stream_after(g->stream, stream, g->halo_mark);
}

static void gpu_share_speeds(swe_part *s) {
  swe_gpu *g = use(s);
  k_publish<<<1, 1, 0, g->stream>>>(g->clock, g->amax, g->published);
}

static void gpu_time_step_over(swe_part *s, swe_part *const *parts, int n) {
  published_t pub = {};
  pub.n = n;
  for (int q = 0; q < n; q++)
    pub.of[q] = gpu_of(parts[q])->published;
  swe_gpu *g = use(s);
  k_dt_over<<<1, 1, 0, g->stream>>>(g->clock, pub, s->p->cfl, s->grid.dx[0], s->grid.dx[1],
                                    g->rain_rate, g->hydro);
}

static void gpu_end_step(swe_part *s) {
  swe_gpu *g = use(s);
  max_ptrs max = {{g->max[0], g->max[1], g->max[2], g->max[3]}};
  k_step_end<<<1, 128, 0, g->stream>>>(g->clock, g->log, g->dev, swe_part_consts(s), max, g->watch,
                                       g->hydro);
}

/* The first stage imposes the clock's inflow discharges on its stored fluxes; the second
 * stage's kernel imposes its own. */
static void gpu_impose_inflow(swe_part *s, double t) {
  (void)t;
  swe_gpu *g = use(s);
  for (int side = 0; side < 4 && !g->mid_step; side++) {
    int n = side < 2 ? s->ny : s->nx;
    if (g->inflow_on[side])
      k_inflow<<<(n + 127) / 128, 128, 0, g->stream>>>(stage_state(g), side, s->nx, s->ny,
                                                       s->origin, g->clock);
  }
}

/* The first stage's limiters (the second stage's kernel computes its own). */
static void gpu_drain(swe_part *s, swe_region r, double dt) {
  (void)dt;
  swe_gpu *g = use(s);
  if (g->mid_step || empty(r))
    return;
  k_limit<<<blocks_for(r, 0, 0, block2d), block2d, 0, g->stream>>>(
      stage_state(g), swe_part_consts(s), region(r), s->origin, g->clock, tiles_of(s));
}

/* A stage's update with the clock's step (not dt). */
static int gpu_update(swe_part *s, swe_region r, double dt, int stage) {
  (void)dt;
  swe_gpu *g = use(s);
  swe_consts k = swe_part_consts(s);
  swe_arrays in = stage_state(g), out = g->dev;
  out.u = NULL; /* velocities are recomputed where they are needed */
  out.start_kept = 1;
  out.w0 = g->dev.w; /* the start of the step, for stage 1's average */
  out.hu0 = g->dev.hu;
  out.hv0 = g->dev.hv;
  if (stage == 0) {
    /* RK2's first stage goes to (w0, hu0, hv0) and keeps the start in (w, hu, hv); an Euler
     * step updates in place, like the CPU (a cell's update reads no other cell's state). */
    if (k.rk_order == 2) {
      out.w = g->dev.w0;
      out.hu = g->dev.hu0;
      out.hv = g->dev.hv0;
    }
    if (!empty(r))
      k_update_first<<<blocks_for(r, 0, 0, block2d), block2d, 0, g->stream>>>(
          in, out, k, region(r), s->origin, g->clock, tiles_of(s));
  } else {
    inflow_t inflow;
    inflow.any = 0;
    for (int side = 0; side < 4; side++) {
      inflow.on[side] = g->inflow_on[side];
      inflow.any |= inflow.on[side];
    }
    if (!empty(r) && use_rows(s, r))
      SWE_ROWS_STAGE(1, in, out, k, region(r), region(s->own), s->origin, s->nx, s->ny, g->clock,
                     stage, inflow, tiles_of(s), maxima_of(s), g->amax, g->sms, g->stream);
    else if (!empty(r))
      SWE_TILES_STAGE(in, out, k, region(r), s->origin, s->nx, s->ny, g->clock, stage, inflow,
                      tiles_of(s), region(s->own), maxima_of(s), g->stream);
    g->maxima_done = 1;
  }
  g->mid_step = stage == 0 && k.rk_order == 2;
  return 0;
}

/* The tile mask on the device, by the CPU's rule; the host's work list stays full (host code
 * on the mirror reads every tile). */
static void gpu_tile_mask(swe_part *s, swe_region valid) {
  swe_gpu *g = use(s);
  int ntiles = s->tiles_x * s->tiles_y;
  s->ntile_list = ntiles;
  for (int t = 0; t < ntiles; t++)
    s->tile_list[t] = t;
  if (!s->early_exit) {
    check(cudaMemsetAsync(g->tile_on, 1, (size_t)ntiles, g->stream), "memset");
    return;
  }
  unsigned feeds = swe_feeding_sides(s->p, s->internal);
  k_tile_wet<<<dim3((unsigned)s->tiles_x, (unsigned)s->tiles_y), 128, 0, g->stream>>>(
      g->dev, s->origin, s->nx, s->ny, s->p->tile_size, s->tiles_x, region(valid), g->tile_wet);
  k_tile_dilate<<<(ntiles + 127) / 128, 128, 0, g->stream>>>(g->tile_wet, s->tiles_x, s->tiles_y,
                                                             feeds, g->tile_on);
}

/* The maxima of the step, unless the last stage's kernel already recorded them. */
static void gpu_maxima(swe_part *s, double dt) {
  (void)dt; /* the clock's */
  swe_gpu *g = use(s);
  if (g->maxima_done) {
    g->maxima_done = 0;
    return;
  }
  k_maxima<<<blocks_for(s->own, 0, 0, block2d), block2d, 0, g->stream>>>(
      g->dev, region(s->own), s->origin, maxima_of(s), tiles_of(s), g->clock);
}

/* The water through the open global sides of the owned edge cells in the stage. */
static void gpu_boundary_flux(swe_part *s, double t, double dt, int stage) {
  (void)t, (void)dt; /* the clock's */
  swe_gpu *g = use(s);
  swe_consts k = swe_part_consts(s);
  double weight = s->p->rk_order == 2 ? 0.5 : 1.0;
  for (int side = 0; side < 4; side++) {
    const ts_swe_bc *bc = &s->p->bc[side];
    if (bc->type == TS_BC_WALL || s->internal[side])
      continue;
    int lo = side < 2 ? s->own.j0 : s->own.i0, hi = side < 2 ? s->own.j1 : s->own.i1;
    int edge = side == TS_WEST || side == TS_SOUTH ? 0 : (side == TS_EAST ? s->nx : s->ny) - 1;
    if (hi > lo)
      k_boundary<<<(hi - lo + 127) / 128, 128, 0, g->stream>>>(
          stage_state(g), k, side, lo, hi, edge, s->origin, g->clock, stage,
          bc->type == TS_BC_INFLOW, weight, s->grid.dx[0], tiles_of(s), g->rec[3], g->rec[4]);
  }
}

/* Rain and losses of the step on the cells of r. */
static void gpu_sources(swe_part *s, swe_region r, double dt) {
  (void)dt; /* the clock's */
  if (empty(r))
    return;
  swe_gpu *g = use(s);
  k_sources<<<blocks_for(r, 0, 0, block2d), block2d, 0, g->stream>>>(
      stage_state(g), region(r), s->origin, g->clock, g->rain_rate, g->rain, g->loss_initial,
      g->loss_rate, s->p->losses.initial, s->p->losses.rate, g->rec[2]);
}

/* The host's rain of the current frame goes up. */
static void gpu_rain_changed(swe_part *s) {
  swe_gpu *g = use(s);
  double rain[2] = {s->rain_rate, s->rain_step_max};
  check(cudaMemcpyAsync(g->rain_rate, rain, sizeof rain, cudaMemcpyHostToDevice, g->stream),
        "copy of the rain rate");
  if (g->rain)
    check(cudaMemcpyAsync(g->rain, s->rain, (size_t)s->plane * sizeof(ts_real),
                          cudaMemcpyHostToDevice, g->stream),
          "copy of the rain");
  check(cudaStreamSynchronize(g->stream), "copy of the rain");
}

/* The non-finite flag of the step (cleared when the next step begins). */
static int gpu_take_bad(swe_part *s) {
  swe_gpu *g = use(s);
  check(cudaMemcpyAsync(g->clock_host, g->clock, sizeof(swe_clock), cudaMemcpyDeviceToHost,
                        g->stream),
        "copy of the clock");
  check(cudaStreamSynchronize(g->stream), "step");
  return g->clock_host->bad;
}

/* The oldest timed phase of the ring, waited for and added to busy_s. */
static void read_oldest_phase(swe_gpu *g) {
  int k = (g->phase_head - g->phase_pending + SWE_PHASE_RING) % SWE_PHASE_RING;
  float ms = 0;
  check(cudaEventSynchronize(g->phase_events[2 * k + 1]), "phase timing");
  check(cudaEventElapsedTime(&ms, g->phase_events[2 * k], g->phase_events[2 * k + 1]),
        "phase timing");
  g->busy_s += 1e-3 * ms;
  g->phase_pending--;
}

static void gpu_phase_clock(swe_part *s, int begin) {
  swe_gpu *g = use(s);
  if (begin && g->phase_pending == SWE_PHASE_RING)
    read_oldest_phase(g);
  check(cudaEventRecord(g->phase_events[2 * g->phase_head + !begin], g->stream), "phase timing");
  if (!begin) {
    g->phase_head = (g->phase_head + 1) % SWE_PHASE_RING;
    g->phase_pending++;
  }
}

static double gpu_busy_seconds(swe_part *s) {
  swe_gpu *g = use(s);
  while (g->phase_pending > 0)
    read_oldest_phase(g);
  double busy = g->busy_s;
  g->busy_s = 0;
  return busy;
}

static void gpu_begin_steps(swe_part *s, double target, double stop) {
  swe_gpu *g = use(s);
  k_begin<<<1, 1, 0, g->stream>>>(g->clock, target, stop);
}

static int gpu_capture_step(swe_part *s, int begin) {
  swe_gpu *g = use(s);
  if (begin) {
    if (g->graph)
      return 0;
    graph_begin(g->stream);
    return 1;
  }
  g->graph = graph_end(g->stream);
  return 0;
}

static void gpu_run_steps(swe_part *s, int n) {
  swe_gpu *g = use(s);
  graph_launch(g->graph, g->stream, n);
}

static void gpu_finish_steps(swe_part *s, swe_steps_report *report) {
  swe_gpu *g = use(s);
  check(cudaMemcpyAsync(g->clock_host, g->clock, sizeof(swe_clock), cudaMemcpyDeviceToHost,
                        g->stream),
        "copy of the clock");
  check(cudaMemcpyAsync(g->log_host, g->log, 2 * TS_SWE_ADVANCE_MAX * sizeof(double),
                        cudaMemcpyDeviceToHost, g->stream),
        "copy of the step log");
  if (g->watch.n > 0)
    check(cudaMemcpyAsync(g->watch_host, g->watch.rows,
                          TS_SWE_ADVANCE_MAX * watch_row_bytes(g->watch.n), cudaMemcpyDeviceToHost,
                          g->stream),
          "copy of the watched cells");
  check(cudaStreamSynchronize(g->stream), "steps");
  const swe_clock *c = g->clock_host;
  report->steps.taken = c->steps;
  for (int k = 0; k < c->steps; k++) {
    report->steps.t[k] = g->log_host[k];
    report->steps.dt[k] = g->log_host[TS_SWE_ADVANCE_MAX + k];
  }
  report->bad = c->bad;
  report->collapsed = c->collapsed;
  report->collapsed_dt = c->dt;
}

static ts_status gpu_watch(swe_part *s, const int64_t *cells, int n) {
  swe_gpu *g = use(s);
  cudaStreamSynchronize(g->stream);
  cudaFree((void *)g->watch.cells);
  cudaFree(g->watch.rows);
  cudaFreeHost(g->watch_host);
  free(g->watch_list);
  memset(&g->watch, 0, sizeof g->watch);
  g->watch_host = NULL;
  g->watch_list = NULL;
  if (g->graph) { /* the graph's step records the old list */
    cudaGraphExecDestroy(g->graph);
    g->graph = NULL;
  }
  if (n == 0)
    return TS_OK;
  size_t rows = TS_SWE_ADVANCE_MAX * watch_row_bytes(n), list = sizeof(int64_t) * (size_t)n;
  int64_t *dev_cells = NULL;
  cudaError_t e = cudaMalloc((void **)&dev_cells, list);
  g->watch.cells = dev_cells;
  if (e == cudaSuccess)
    e = cudaMemcpy(dev_cells, cells, list, cudaMemcpyHostToDevice);
  if (e == cudaSuccess)
    e = cudaMalloc((void **)&g->watch.rows, rows);
  if (e == cudaSuccess)
    e = cudaMallocHost((void **)&g->watch_host, rows);
  g->watch_list = (int64_t *)malloc(list);
  if (e != cudaSuccess || !g->watch_list)
    return ts_error(TS_ERR_NOMEM, "swe: no memory for %d watched cells on device %d", n, s->device);
  memcpy(g->watch_list, cells, list);
  g->watch.n = n;
  return TS_OK;
}

static void gpu_watched_to_host(swe_part *s, int k) {
  swe_gpu *g = gpu_of(s);
  if (g->watch.n == 0)
    return;
  double *doubles = (double *)(g->watch_host + (size_t)k * watch_row_bytes(g->watch.n));
  scatter_cells(s, g->watch_list, g->watch.n, doubles,
                (const ts_real *)(doubles + 4 * (size_t)g->watch.n));
}

/* Host and device arrays of the part that the mirror copies: the state, velocities, maxima. */
static void mirror(swe_part *s, int down) {
  swe_gpu *g = use(s);
  size_t rb = (size_t)s->plane * sizeof(ts_real), db = (size_t)s->plane * sizeof(double);
  void *host_r[6] = {s->w, s->hu, s->hv, s->w_carry, s->u, s->v};
  void *dev_r[6] = {g->dev.w, g->dev.hu, g->dev.hv, g->dev.w_carry, g->dev.u, g->dev.v};
  double *host_d[4] = {s->max_h, s->max_speed, s->arrival, s->max_eta};
  int nr = down ? 6 : 4; /* the device keeps no velocities */
  cudaMemcpyKind kind = down ? cudaMemcpyDeviceToHost : cudaMemcpyHostToDevice;
  if (down)
    gpu_velocities(s, swe_region{-SWE_GHOST, s->nx + SWE_GHOST, -SWE_GHOST, s->ny + SWE_GHOST});
  if (!down) /* the clock restarts at the part's time */
    k_clock_start<<<1, 1, 0, g->stream>>>(g->clock, s->t, g->hydro);
  for (int a = 0; a < nr; a++)
    check(cudaMemcpyAsync(down ? host_r[a] : dev_r[a], down ? dev_r[a] : host_r[a], rb, kind,
                          g->stream),
          "copy of the state");
  for (int a = 0; a < 4; a++)
    check(cudaMemcpyAsync(down ? (void *)host_d[a] : (void *)g->max[a],
                          down ? (void *)g->max[a] : (void *)host_d[a], db, kind, g->stream),
          "copy of the maxima");
  double *host_rec[5] = {s->duration, s->max_hazard, s->loss, s->inflow, s->outflow};
  for (int a = 0; a < 5; a++)
    check(cudaMemcpyAsync(down ? (void *)host_rec[a] : (void *)g->rec[a],
                          down ? (void *)g->rec[a] : (void *)host_rec[a], db, kind, g->stream),
          "copy of the records");
  check(cudaStreamSynchronize(g->stream), "copy");
}

static void gpu_to_host(swe_part *s) { mirror(s, 1); }

/* Gathers the state, velocities and maxima of n cells into one buffer (5 reals, 4 doubles). */
static __global__ void k_gather(swe_arrays a, swe_consts k, const double *const *max,
                                const int64_t *cells, int n, ts_real *reals, double *doubles) {
  int t = (int)(blockIdx.x * blockDim.x + threadIdx.x);
  if (t < n)
    gather_cell(&a, &k, max, cells[t], reals + 5 * t, doubles + 4 * t);
}

static void gpu_to_host_cells(swe_part *s, const int64_t *cells, int n) {
  if (n <= 0)
    return;
  swe_gpu *g = use(s);
  size_t bytes = (size_t)n * (sizeof(int64_t) + 5 * sizeof(ts_real) + 4 * sizeof(double)) +
                 4 * sizeof(double *);
  if (bytes > g->probe_bytes) { /* kept between calls: gauges are read every step */
    cudaFree(g->probe_dev);
    cudaFreeHost(g->probe_host);
    check(cudaMalloc((void **)&g->probe_dev, bytes), "allocation for probes");
    check(cudaMallocHost((void **)&g->probe_host, bytes), "allocation for probes");
    g->probe_bytes = bytes;
  }
  char *dev = g->probe_dev, *host = g->probe_host;
  int64_t *h_cells = (int64_t *)host;
  memcpy(h_cells, cells, sizeof(int64_t) * (size_t)n);
  memcpy(h_cells + n, g->max, 4 * sizeof(double *));
  int64_t *d_cells = (int64_t *)dev;
  double **d_max = (double **)(d_cells + n);
  double *d_doubles = (double *)(d_max + 4);
  ts_real *d_reals = (ts_real *)(d_doubles + 4 * (size_t)n);
  size_t head = sizeof(int64_t) * (size_t)n + 4 * sizeof(double *);
  check(cudaMemcpyAsync(dev, host, head, cudaMemcpyHostToDevice, g->stream), "copy");
  k_gather<<<(n + 127) / 128, 128, 0, g->stream>>>(g->dev, swe_part_consts(s), d_max, d_cells, n,
                                                   d_reals, d_doubles);
  check(cudaMemcpyAsync(host + head, dev + head, bytes - head, cudaMemcpyDeviceToHost, g->stream),
        "copy of probes");
  check(cudaStreamSynchronize(g->stream), "probes");
  double *h_doubles = (double *)(host + head);
  scatter_cells(s, cells, n, h_doubles, (ts_real *)(h_doubles + 4 * (size_t)n));
}
static void gpu_to_device(swe_part *s) { mirror(s, 0); }

static void gpu_release(swe_part *s) {
  swe_gpu *g = use(s);
  if (!g)
    return;
  cudaSetDevice(s->device);
  ts_real *arrays[] = {g->dev.w,
                       g->dev.hu,
                       g->dev.hv,
                       g->dev.w_carry,
                       g->dev.w0,
                       g->dev.hu0,
                       g->dev.hv0,
                       g->dev.u,
                       g->dev.v,
                       g->dev.char_speed,
                       g->dev.speed_cap,
                       g->dev.drain,
                       (ts_real *)g->dev.corner,
                       (ts_real *)g->dev.bed,
                       (ts_real *)g->dev.friction,
                       g->dev.fx[0],
                       g->dev.fx[1],
                       g->dev.fx[2],
                       g->dev.fy[0],
                       g->dev.fy[1],
                       g->dev.fy[2],
                       g->dev.src_x,
                       g->dev.src_y};
  for (size_t a = 0; a < sizeof arrays / sizeof arrays[0]; a++)
    cudaFree(arrays[a]);
  for (int a = 0; a < 4; a++)
    cudaFree(g->max[a]);
  for (int a = 0; a < 5; a++)
    cudaFree(g->rec[a]);
  cudaFree(g->rain);
  cudaFree(g->loss_initial);
  cudaFree(g->loss_rate);
  cudaFree(g->rain_rate);
  cudaFree(g->active);
  cudaFree(g->amax);
  cudaFree(g->published);
  if (g->mark)
    cudaEventDestroy(g->mark);
  if (g->halo_mark)
    cudaEventDestroy(g->halo_mark);
  cudaFree(g->clock);
  cudaFree(g->log);
  cudaFree(g->hydro_mem);
  cudaFree((void *)g->watch.cells);
  cudaFree(g->watch.rows);
  cudaFreeHost(g->watch_host);
  free(g->watch_list);
  if (g->graph)
    cudaGraphExecDestroy(g->graph);
  cudaFree(g->tile_wet);
  cudaFree(g->tile_on);
  cudaFree(g->probe_dev);
  cudaFreeHost(g->probe_host);
  cudaFreeHost(g->amax_host);
  cudaFreeHost(g->clock_host);
  cudaFreeHost(g->log_host);
  for (int e = 0; e < 2 * SWE_PHASE_RING; e++)
    if (g->phase_events[e])
      cudaEventDestroy(g->phase_events[e]);
  cudaStreamDestroy(g->stream);
  free(g);
  s->gpu = NULL;
}

/* Device copies of every host array of the layout; static data and state go up once. */
extern "C" ts_status SWE_CUDA_ATTACH(swe_part *s, int device) {
  if (cudaSetDevice(device) != cudaSuccess)
    return ts_error(TS_ERR_INPUT, "swe: CUDA device %d cannot be used", device);
  if (s->plane > INT_MAX)
    return ts_error(TS_ERR_INPUT,
                    "swe: a %d x %d subdomain is too large for one GPU part (at most 2^31 "
                    "cells per array); use more subdomains",
                    s->nx, s->ny);
  swe_gpu *g = (swe_gpu *)calloc(1, sizeof *g);
  if (!g)
    return ts_error(TS_ERR_NOMEM, "out of memory");
  s->gpu = g;
  s->device = device;
  ts_gpu_enable_peers(device);
  check(cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking), "stream");
  for (int e = 0; e < 2 * SWE_PHASE_RING; e++)
    check(cudaEventCreate(&g->phase_events[e]), "phase timing events");
  check(cudaDeviceGetAttribute(&g->sms, cudaDevAttrMultiProcessorCount, device),
        "device attributes");
  SWE_TILES_SETUP();
  size_t rb = (size_t)s->plane * sizeof(ts_real), db = (size_t)s->plane * sizeof(double);
  swe_arrays host = swe_part_arrays(s);
  ts_real **dev_r[] = {&g->dev.w,     &g->dev.hu,         &g->dev.hv,        &g->dev.w_carry,
                       &g->dev.w0,    &g->dev.hu0,        &g->dev.hv0,       &g->dev.u,
                       &g->dev.v,     &g->dev.char_speed, &g->dev.speed_cap, &g->dev.drain,
                       &g->dev.fx[0], &g->dev.fx[1],      &g->dev.fx[2],     &g->dev.fy[0],
                       &g->dev.fy[1], &g->dev.fy[2],      &g->dev.src_x,     &g->dev.src_y};
  const ts_real *host_r[] = {host.w,         host.hu,    host.hv,    host.w_carry, host.w0,
                             host.hu0,       host.hv0,   host.u,     host.v,       host.char_speed,
                             host.speed_cap, host.drain, host.fx[0], host.fx[1],   host.fx[2],
                             host.fy[0],     host.fy[1], host.fy[2], host.src_x,   host.src_y};
  size_t n = sizeof dev_r / sizeof dev_r[0];
  cudaError_t e = cudaSuccess;
  for (size_t a = 0; a < n && e == cudaSuccess; a++) {
    e = cudaMalloc((void **)dev_r[a], rb);
    if (e == cudaSuccess)
      e = cudaMemcpy(*dev_r[a], host_r[a], rb, cudaMemcpyHostToDevice);
  }
  ts_real *corner = NULL, *bed = NULL, *friction = NULL;
  if (e == cudaSuccess && (e = cudaMalloc((void **)&corner, rb)) == cudaSuccess)
    e = cudaMemcpy(corner, s->corner, rb, cudaMemcpyHostToDevice);
  if (e == cudaSuccess && (e = cudaMalloc((void **)&bed, rb)) == cudaSuccess)
    e = cudaMemcpy(bed, s->bed, rb, cudaMemcpyHostToDevice);
  if (e == cudaSuccess && s->friction && (e = cudaMalloc((void **)&friction, rb)) == cudaSuccess)
    e = cudaMemcpy(friction, s->friction, rb, cudaMemcpyHostToDevice);
  g->dev.corner = corner;
  g->dev.bed = bed;
  g->dev.friction = friction;
  if (e == cudaSuccess && (e = cudaMalloc((void **)&g->active, (size_t)s->plane)) == cudaSuccess)
    e = cudaMemcpy(g->active, s->active, (size_t)s->plane, cudaMemcpyHostToDevice);
  g->dev.active = g->active;
  g->dev.row = s->row;
  for (int a = 0; a < 4 && e == cudaSuccess; a++)
    e = cudaMalloc((void **)&g->max[a], db);
  double *host_rec[5] = {s->duration, s->max_hazard, s->loss, s->inflow, s->outflow};
  for (int a = 0; a < 5 && e == cudaSuccess; a++)
    if ((e = cudaMalloc((void **)&g->rec[a], db)) == cudaSuccess)
      e = cudaMemcpy(g->rec[a], host_rec[a], db, cudaMemcpyHostToDevice);
  void *host_src[3] = {s->rain, s->loss_initial, s->loss_rate};
  ts_real **dev_src[3] = {&g->rain, &g->loss_initial, &g->loss_rate};
  for (int a = 0; a < 3 && e == cudaSuccess; a++)
    if (host_src[a] && (e = cudaMalloc((void **)dev_src[a], rb)) == cudaSuccess)
      e = cudaMemcpy(*dev_src[a], host_src[a], rb, cudaMemcpyHostToDevice);
  double rain[2] = {s->rain_rate, s->rain_step_max};
  if (e == cudaSuccess && (e = cudaMalloc((void **)&g->rain_rate, sizeof rain)) == cudaSuccess)
    e = cudaMemcpy(g->rain_rate, rain, sizeof rain, cudaMemcpyHostToDevice);
  if (e == cudaSuccess && (e = cudaMalloc((void **)&g->amax, 2 * sizeof(swe_bits))) == cudaSuccess)
    e = cudaMemset(g->amax, 0, 2 * sizeof(swe_bits));
  if (e == cudaSuccess &&
      (e = cudaMalloc((void **)&g->published, 4 * sizeof(swe_bits))) == cudaSuccess)
    e = cudaMemset(g->published, 0, 4 * sizeof(swe_bits));
  if (e == cudaSuccess)
    e = cudaEventCreateWithFlags(&g->mark, cudaEventDisableTiming);
  if (e == cudaSuccess)
    e = cudaEventCreateWithFlags(&g->halo_mark, cudaEventDisableTiming);
  if (e == cudaSuccess)
    e = cudaMallocHost((void **)&g->amax_host, 2 * sizeof(swe_bits));
  if (e == cudaSuccess)
    e = cudaMalloc((void **)&g->clock, sizeof(swe_clock));
  if (e == cudaSuccess)
    e = cudaMallocHost((void **)&g->clock_host, sizeof(swe_clock));
  if (e == cudaSuccess)
    e = cudaMalloc((void **)&g->log, 2 * TS_SWE_ADVANCE_MAX * sizeof(double));
  if (e == cudaSuccess)
    e = cudaMallocHost((void **)&g->log_host, 2 * TS_SWE_ADVANCE_MAX * sizeof(double));
  /* the hydrographs of the inflow sides, and which sides of the part impose them */
  size_t points = 0;
  for (int side = 0; side < 4; side++) {
    const ts_swe_bc *bc = &s->p->bc[side];
    g->hydro.on[side] = bc->type == TS_BC_INFLOW && s->bc_cells[side] != 0;
    g->inflow_on[side] = g->hydro.on[side] && !s->internal[side];
    points += g->hydro.on[side] ? (size_t)bc->npoints : 0;
  }
  if (e == cudaSuccess && points)
    e = cudaMalloc((void **)&g->hydro_mem, 2 * points * sizeof(double));
  for (int side = 0, at = 0; side < 4 && e == cudaSuccess; side++) {
    const ts_swe_bc *bc = &s->p->bc[side];
    if (!g->hydro.on[side])
      continue;
    size_t bytes = (size_t)bc->npoints * sizeof(double);
    g->hydro.t[side] = g->hydro_mem + at;
    g->hydro.q[side] = g->hydro_mem + at + bc->npoints;
    g->hydro.n[side] = bc->npoints;
    g->hydro.width[side] = s->bc_cells[side] * s->grid.dx[side < 2 ? 1 : 0];
    e = cudaMemcpy(g->hydro_mem + at, bc->t, bytes, cudaMemcpyHostToDevice);
    if (e == cudaSuccess)
      e = cudaMemcpy(g->hydro_mem + at + bc->npoints, bc->q, bytes, cudaMemcpyHostToDevice);
    at += 2 * bc->npoints;
  }
  size_t ntiles = (size_t)s->tiles_x * s->tiles_y;
  if (e == cudaSuccess)
    e = cudaMalloc((void **)&g->tile_wet, ntiles);
  if (e == cudaSuccess && (e = cudaMalloc((void **)&g->tile_on, ntiles)) == cudaSuccess)
    e = cudaMemset(g->tile_on, 1, ntiles);
  if (e != cudaSuccess) {
    gpu_release(s);
    return ts_error(TS_ERR_NOMEM,
                    "swe: out of GPU memory on device %d for a %d x %d subdomain "
                    "(%s)",
                    device, s->nx, s->ny, cudaGetErrorString(e));
  }
  mirror(s, 0);
  return TS_OK;
}

/* Passes of the step run on the device; everything else is the CPU backend's code on the host
 * mirror (initialised when the program starts, after the CPU tables). */
extern "C" const swe_kernels SWE_CUDA_KERNELS = {
    .init = SWE_CPU_KERNELS.init,
    .set_surface = SWE_CPU_KERNELS.set_surface,
    .fill_boundaries = gpu_fill_boundaries,
    .fluxes = gpu_fluxes,
    .take_speeds = gpu_take_speeds,
    .time_step = gpu_time_step,
    .end_step = gpu_end_step,
    .stream = gpu_stream,
    .order = gpu_order,
    .stream_after = gpu_stream_after,
    .after_stream = gpu_after_stream,
    .share_speeds = gpu_share_speeds,
    .time_step_over = gpu_time_step_over,
    .begin_steps = gpu_begin_steps,
    .capture_step = gpu_capture_step,
    .run_steps = gpu_run_steps,
    .finish_steps = gpu_finish_steps,
    .watch = gpu_watch,
    .watched_to_host = gpu_watched_to_host,
    .impose_inflow = gpu_impose_inflow,
    .drain = gpu_drain,
    .boundary_flux = gpu_boundary_flux,
    .sources = gpu_sources,
    .rain_changed = gpu_rain_changed,
    .update = gpu_update,
    .tile_mask = gpu_tile_mask,
    .maxima = gpu_maxima,
    .refresh_velocities = gpu_refresh_velocities,
    .get_cell = SWE_CPU_KERNELS.get_cell,
    .volume = SWE_CPU_KERNELS.volume,
    .wet_cells = SWE_CPU_KERNELS.wet_cells,
    .tiles_wet = SWE_CPU_KERNELS.tiles_wet,
    .to_host = gpu_to_host,
    .to_host_cells = gpu_to_host_cells,
    .to_device = gpu_to_device,
    .take_bad = gpu_take_bad,
    .phase_clock = gpu_phase_clock,
    .busy_seconds = gpu_busy_seconds,
    .release = gpu_release,
};

/* The state fields of a GPU part in device memory, for halo copies between devices. */
extern "C" int SWE_CUDA_FIELDS(const swe_part *s, int with_maxima, ts_halo_field *out) {
  const swe_gpu *g = gpu_of(s);
  ts_halo_field f;
  memset(&f, 0, sizeof f);
  f.ncomp = 4;
  f.elem = sizeof(ts_real);
  f.comp[0] = g->dev.w;
  f.comp[1] = g->dev.hu;
  f.comp[2] = g->dev.hv;
  f.comp[3] = g->dev.w_carry;
  f.origin = s->origin;
  f.stride[0] = 1;
  f.stride[1] = s->row;
  f.lo[0] = s->gi0;
  f.lo[1] = s->gj0;
  out[0] = f;
  if (!with_maxima)
    return 1;
  f.elem = sizeof(double);
  for (int a = 0; a < 4; a++)
    f.comp[a] = g->max[a];
  out[1] = f;
  f.ncomp = 5;
  for (int a = 0; a < 5; a++)
    f.comp[a] = g->rec[a];
  out[2] = f;
  return SWE_MIGRATED_FIELDS;
}

#if !TS_REAL_DOUBLE /* once for both precisions */
/* Waits for a part's queued work (before its arrays are copied outside its stream). */
extern "C" void swe_cuda_sync(const swe_part *s) {
  check(cudaStreamSynchronize(use(s)->stream), "synchronisation");
}
#endif
