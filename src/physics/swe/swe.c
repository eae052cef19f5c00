/* Shallow-water solver API: parameter checks, creation of this rank's parts from the global
 * rasters, time stepping (swe_step.c), state access gathered over parts and ranks, exact
 * volume, moving boundaries, statistics and checkpoint blobs in the order of the whole grid. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "physics/swe/swe_buq.h"
#include "physics/swe/swe_internal.h"
#include "tessera/buq.h"
#include "tessera/cpu.h"
#include "tessera/gpu.h"

void ts_swe_params_default(ts_swe_params *p) {
  memset(p, 0, sizeof *p);
  p->precision = TS_FLOAT;
  p->gravity = 9.81;
  p->cfl = 0.25;
  p->theta = 1.3;
  p->rk_order = 2;
  p->dry_depth = 1e-4;
  p->friction = TS_FRICTION_NONE;
  p->tile_size = TS_SWE_TILE_SIZE;
  p->arrival_depth = 0.01;
  p->early_exit = 1;
  for (int side = 0; side < 4; side++)
    p->bc[side].type = TS_BC_WALL;
  p->parallel.ghost_expansion = 1;
  p->parallel.overlap = 1;
  p->grid.type = TS_GRID_UNIFORM;
  p->grid.block = 16;
  p->grid.levels = 1;
  p->grid.refine_water = -1;
  /* TESSERA_BACKEND=cpu|cuda|auto changes the default backend (like OMP_NUM_THREADS, for runs
   * and tests that do not choose one). */
  const char *backend = getenv("TESSERA_BACKEND");
  if (backend && strcmp(backend, "cuda") == 0)
    p->parallel.backend = TS_BACKEND_CUDA;
  else if (backend && strcmp(backend, "auto") == 0)
    p->parallel.backend = TS_BACKEND_AUTO;
}

static ts_status check_params(const ts_swe_params *p) {
  if (p->precision != TS_FLOAT && p->precision != TS_DOUBLE)
    return ts_error(TS_ERR_INPUT, "swe: precision must be float or double");
  if (!(p->gravity > 0) || !isfinite(p->gravity))
    return ts_error(TS_ERR_INPUT, "swe: gravity must be positive (got %g)", p->gravity);
  if (!(p->cfl > 0 && p->cfl <= 0.5))
    return ts_error(TS_ERR_INPUT, "swe: cfl must be in (0, 0.5] (got %g)", p->cfl);
  if (!(p->theta >= 1 && p->theta <= 2))
    return ts_error(TS_ERR_INPUT, "swe: theta must be in [1, 2] (got %g)", p->theta);
  if (p->rk_order != 1 && p->rk_order != 2)
    return ts_error(TS_ERR_INPUT, "swe: rk_order must be 1 or 2 (got %d)", p->rk_order);
  if (!(p->dry_depth > 0))
    return ts_error(TS_ERR_INPUT, "swe: dry_depth must be positive (got %g)", p->dry_depth);
  if (p->tile_size < 2 && p->tile_size != 0)
    return ts_error(TS_ERR_INPUT, "swe: tile_size must be 0 (auto) or at least 2 (got %d)",
                    p->tile_size);
  if (p->friction != TS_FRICTION_NONE && !(p->friction_value >= 0))
    return ts_error(TS_ERR_INPUT, "swe: friction coefficient must be >= 0 (got %g)",
                    p->friction_value);
  for (int side = 0; side < 4; side++) {
    const ts_swe_bc *bc = &p->bc[side];
    if (bc->type == TS_BC_LEVEL && !isfinite(bc->level))
      return ts_error(TS_ERR_INPUT, "swe: boundary level must be finite");
    if (bc->type == TS_BC_INFLOW && (bc->npoints < 1 || !bc->t || !bc->q))
      return ts_error(TS_ERR_INPUT, "swe: an inflow boundary needs a hydrograph");
  }
  const ts_swe_rain *rain = &p->rain;
  if (rain->nframes < 0 || (rain->nframes > 0 && (!rain->t || (!rain->rate == !rain->grids))))
    return ts_error(TS_ERR_INPUT, "swe: rain needs frame times and either rates or grids");
  for (int f = 0; f < rain->nframes; f++) {
    double next = f + 1 < rain->nframes ? rain->t[f + 1] : rain->end;
    if (!isfinite(rain->t[f]) || !(next > rain->t[f]))
      return ts_error(TS_ERR_INPUT, "swe: rain frame times must increase (frame %d at %g s)", f,
                      rain->t[f]);
    if (rain->rate && !(rain->rate[f] >= 0 && isfinite(rain->rate[f])))
      return ts_error(TS_ERR_INPUT, "swe: rain rate must be >= 0 (got %g)", rain->rate[f]);
  }
  if (p->grid.type == TS_GRID_BUQ && p->grid.block != 8 && p->grid.block != 16)
    return ts_error(TS_ERR_INPUT, "swe: grid block must be 8 or 16 (got %d)", p->grid.block);
  if (p->grid.type == TS_GRID_BUQ && (p->grid.levels < 1 || p->grid.levels > TS_BUQ_MAX_LEVELS))
    return ts_error(TS_ERR_INPUT, "swe: grid levels must be 1 to %d (got %d)", TS_BUQ_MAX_LEVELS,
                    p->grid.levels);
  if (!(p->losses.initial >= 0 && p->losses.rate >= 0 && isfinite(p->losses.initial) &&
        isfinite(p->losses.rate)))
    return ts_error(TS_ERR_INPUT, "swe: losses must be >= 0");
  return TS_OK;
}

static ts_status check_raster(const ts_raster *bed, const ts_raster *r, const char *what) {
  if (r && !ts_raster_same_geometry(bed, r))
    return ts_error(TS_ERR_INPUT, "swe: %s grid (%d x %d) does not match the bed grid (%d x %d)",
                    what, r->ncols, r->nrows, bed->ncols, bed->nrows);
  return TS_OK;
}

static ts_status copy_raster(ts_raster *dst, const ts_raster *src) {
  TS_CALL(
      ts_raster_alloc(dst, src->ncols, src->nrows, src->xll, src->yll, src->cellsize, src->nodata));
  memcpy(dst->v, src->v, sizeof(double) * (size_t)src->ncols * src->nrows);
  return TS_OK;
}

/* Active cells of the whole grid and along each side (the inflow width). */
static void count_active(ts_swe *s, const ts_raster *bed) {
  for (int side = 0; side < 4; side++) {
    int along = side < 2 ? s->ny : s->nx, n = 0;
    for (int a = 0; a < along; a++) {
      int i = side == TS_WEST ? 0 : (side == TS_EAST ? s->nx - 1 : a);
      int j = side == TS_SOUTH ? 0 : (side == TS_NORTH ? s->ny - 1 : a);
      n += !ts_raster_is_nodata(bed, bed->v[i + (int64_t)j * s->nx]);
    }
    s->bc_cells[side] = n;
  }
  for (int64_t c = 0; c < (int64_t)s->nx * s->ny; c++)
    s->active_cells += !ts_raster_is_nodata(bed, bed->v[c]);
}

/* The rain frames (times, rates or grids, and each frame's rate summed over the active cells
 * as the working precision holds it) and the loss grids, copied. */
static ts_status copy_sources(ts_swe *s, const ts_swe_params *params) {
  const ts_swe_rain *rain = &params->rain;
  int n = rain->nframes;
  s->rain_frame = -1;
  s->p.rain.t = s->p.rain.rate = NULL;
  s->p.rain.grids = NULL;
  s->p.losses.initial_grid = s->p.losses.rate_grid = NULL;
  if (params->losses.initial_grid)
    TS_CALL(copy_raster(&s->loss_initial, params->losses.initial_grid));
  if (params->losses.rate_grid)
    TS_CALL(copy_raster(&s->loss_rate, params->losses.rate_grid));
  if (n == 0)
    return TS_OK;
  s->rain_t = malloc(sizeof(double) * (size_t)n);
  s->rain_sums = calloc((size_t)n, sizeof(double));
  s->rain_step_max = calloc((size_t)n, sizeof(double));
  if (rain->rate)
    s->rain_rate = malloc(sizeof(double) * (size_t)n);
  else
    s->rain_grids = calloc((size_t)n, sizeof(ts_raster));
  if (!s->rain_t || !s->rain_sums || !s->rain_step_max || (!s->rain_rate && !s->rain_grids))
    return ts_error(TS_ERR_NOMEM, "swe: out of memory");
  memcpy(s->rain_t, rain->t, sizeof(double) * (size_t)n);
  int is_double = params->precision == TS_DOUBLE;
  double cell = fmin(s->grid.dx[0], s->grid.dx[1]);
  for (int f = 0; f < n; f++) {
    if (rain->rate) {
      s->rain_rate[f] = rain->rate[f];
      double r = is_double ? rain->rate[f] : (double)(float)rain->rate[f];
      s->rain_sums[f] = r * (double)s->active_cells;
      s->rain_step_max[f] = swe_rain_step_max(r, params->cfl, cell, params->gravity);
      continue;
    }
    TS_CALL(check_raster(&s->bed, &rain->grids[f], "rain"));
    TS_CALL(copy_raster(&s->rain_grids[f], &rain->grids[f]));
    const ts_raster *g = &s->rain_grids[f];
    ts_exact_sum sum = {0, 0};
    double largest = 0;
    for (int64_t c = 0; c < (int64_t)s->nx * s->ny; c++) {
      if (ts_raster_is_nodata(&s->bed, s->bed.v[c]) || ts_raster_is_nodata(g, g->v[c]))
        continue;
      ts_exact_sum_add(&sum, is_double ? g->v[c] : (double)(float)g->v[c]);
      largest = fmax(largest, g->v[c]);
    }
    s->rain_sums[f] = ts_exact_sum_value(sum);
    s->rain_step_max[f] = swe_rain_step_max(largest, params->cfl, cell, params->gravity);
  }
  s->p.rain.t = s->rain_t;
  s->p.rain.rate = s->rain_rate;
  s->p.rain.grids = s->rain_grids;
  return TS_OK;
}

int swe_rain_frame(const ts_swe *s, double t) {
  const ts_swe_rain *rain = &s->p.rain;
  int f = -1;
  while (f + 1 < rain->nframes && rain->t[f + 1] <= t)
    f++;
  return f >= 0 && (f + 1 < rain->nframes || t < rain->end) ? f : -1;
}

double swe_rain_next_time(const ts_swe *s, double t) {
  const ts_swe_rain *rain = &s->p.rain;
  for (int f = 0; f < rain->nframes; f++)
    if (rain->t[f] > t)
      return rain->t[f];
  return rain->nframes > 0 && rain->end > t ? rain->end : INFINITY;
}

/* Threads: one part takes them all; several share them (nested when there are more threads
 * than parts). A GPU part needs one thread to drive it: the parts on the CPU share the others. */
void swe_assign_threads(ts_swe *s) {
  int threads = omp_get_max_threads(), on_gpu = 0;
  for (int k = 0; k < s->nparts; k++)
    on_gpu += s->parts[k]->device >= 0;
  s->outer_threads = s->nparts < threads ? s->nparts : threads;
  int inner =
      s->nparts == 1 ? threads : (threads / s->outer_threads > 1 ? threads / s->outer_threads : 1);
  if (on_gpu > 0 && on_gpu < s->nparts) {
    int left = threads - on_gpu, on_cpu = s->nparts - on_gpu;
    inner = left / on_cpu > 1 ? left / on_cpu : 1;
  }
  if (s->nparts > 1 && inner > 1)
    omp_set_max_active_levels(2);
  for (int k = 0; k < s->nparts; k++)
    s->parts[k]->threads = s->parts[k]->device >= 0 ? 1 : inner;
}

static int lists_cpu(const ts_swe_parallel *par) {
  for (int d = 0; d < par->ndevices; d++)
    if (par->devices[d] < 0)
      return 1;
  return 0;
}

/* backend = auto takes the GPUs when there are any; cuda without a GPU is an error. A device
 * list may name the CPU (-1) beside GPUs: its subdomains run on the host's cores, in one
 * process (their halos move between host and GPU memory by copies, not through a transport). */
static ts_status resolve_backend(ts_swe *s) {
  const ts_swe_parallel *par = &s->p.parallel;
  int gpus = ts_gpu_count();
  s->backend = par->backend == TS_BACKEND_AUTO ? (gpus > 0 ? TS_BACKEND_CUDA : TS_BACKEND_CPU)
                                               : par->backend;
  if (s->backend == TS_BACKEND_CUDA && !TESSERA_HAVE_CUDA)
    return ts_error(TS_ERR_INPUT, "swe: backend cuda: this tessera was built without CUDA");
  if (s->backend == TS_BACKEND_CUDA && gpus == 0)
    return ts_error(TS_ERR_INPUT, "swe: backend cuda: no CUDA device found");
  for (int d = 0; d < par->ndevices && s->backend == TS_BACKEND_CUDA; d++) {
    if (par->devices[d] >= gpus)
      return ts_error(TS_ERR_INPUT, "swe: CUDA device %d does not exist (%d found)",
                      par->devices[d], gpus);
  }
  if (s->backend == TS_BACKEND_CUDA && lists_cpu(par) && s->nranks > 1)
    return ts_error(TS_ERR_INPUT,
                    "swe: devices with cpu run in one process (this run has %d "
                    "ranks): list GPUs only, or run one process",
                    s->nranks);
  s->gpus = gpus;
  return TS_OK;
}

/* subdomains = auto: on the CPU one per rank; on GPUs one per device of the rank, the listed
 * (or all) devices of a node shared among its ranks (OpenMPI's local size), the same number on
 * every rank (the most any rank has). */
static int auto_parts_per_rank(const ts_swe *s) {
  if (s->backend != TS_BACKEND_CUDA)
    return 1;
  const ts_swe_parallel *par = &s->p.parallel;
  int devices = par->ndevices > 0 ? par->ndevices : s->gpus;
  const char *local = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  int ranks_here = local && atoi(local) > 0 ? atoi(local) : 1;
  double per_rank = devices / ranks_here > 1 ? devices / ranks_here : 1;
  if (ts_comm_max(s->comm, &per_rank, 1) != TS_OK)
    return 1;
  return (int)per_rank;
}

/* The device of this rank's k-th part: the listed (or all) devices in turn, ranks of a node
 * taking consecutive ones. */
static int device_of(const ts_swe *s, int k) {
  const ts_swe_parallel *par = &s->p.parallel;
  int n = par->ndevices > 0 ? par->ndevices : (s->gpus > 0 ? s->gpus : 1);
  const char *local = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
  int rank = local ? atoi(local) : s->rank;
  int slot = (rank * s->nparts_hint + k) % n;
  return par->ndevices > 0 ? par->devices[slot] : slot;
}

/* The grid and the ranks of a new solver. */
static void start_solver(ts_swe *s, const ts_raster *bed) {
  s->grid = ts_grid_2d(bed->ncols, bed->nrows, bed->cellsize, bed->xll, bed->yll);
  s->nx = bed->ncols;
  s->ny = bed->nrows;
  s->comm = ts_comm_world();
  s->rank = ts_comm_rank(s->comm);
  s->nranks = ts_comm_size(s->comm);
}

static ts_status create_solver(ts_swe *s, const ts_swe_params *params, const ts_raster *bed,
                               const swe_inputs *in) {
  s->p = *params;
  s->p.grid.refine = s->p.grid.water_surface = NULL; /* read by the quadtree's creation only */
  s->tune.tile_size_auto = params->tile_size == 0;
  if (s->tune.tile_size_auto)
    s->p.tile_size = TS_SWE_TILE_SIZE; /* until the tuner has timed the candidates */
  s->built_tile_size = s->p.tile_size;
  start_solver(s, bed);
  s->early_exit = params->early_exit;
  for (int side = 0; side < 4; side++) {
    const ts_swe_bc *bc = &params->bc[side];
    if (bc->type != TS_BC_INFLOW)
      continue;
    s->bc_t[side] = malloc(sizeof(double) * (size_t)bc->npoints);
    s->bc_q[side] = malloc(sizeof(double) * (size_t)bc->npoints);
    if (!s->bc_t[side] || !s->bc_q[side])
      return ts_error(TS_ERR_NOMEM, "swe: out of memory");
    memcpy(s->bc_t[side], bc->t, sizeof(double) * (size_t)bc->npoints);
    memcpy(s->bc_q[side], bc->q, sizeof(double) * (size_t)bc->npoints);
    s->p.bc[side].t = s->bc_t[side];
    s->p.bc[side].q = s->bc_q[side];
  }
  count_active(s, bed);
  TS_CALL(copy_raster(&s->bed, bed));
  TS_CALL(copy_sources(s, params));
  if (in->friction) {
    TS_CALL(copy_raster(&s->friction, in->friction));
    s->has_friction = 1;
  }
  const ts_swe_parallel *par = &params->parallel;
  TS_CALL(resolve_backend(s));
  int count = par->subdomains > 0 ? par->subdomains : s->nranks * auto_parts_per_rank(s);
  if (count < s->nranks)
    return ts_error(TS_ERR_INPUT, "swe: %d subdomains for %d ranks: every rank needs at least one",
                    count, s->nranks);
  int n[3] = {s->nx, s->ny, 1}, parts[3] = {par->parts[0], par->parts[1], 1};
  ts_decomp_kind kind = par->decomposition;
  if (kind == TS_DECOMP_AUTO && count > 1 && par->balance != TS_BALANCE_OFF)
    kind = s->nx <= s->ny ? TS_DECOMP_ROWS : TS_DECOMP_COLUMNS; /* the balancer moves bands */
  if (s->backend == TS_BACKEND_CUDA && s->nranks == 1 && lists_cpu(par))
    count = swe_balance_plan_cpu_trial(s, count, kind);
  TS_CALL(ts_decomp_create(&s->decomp, 2, n, count, kind, parts));
  s->p.parallel.weights = NULL;
  if (par->nweights > 0) {
    if (par->nweights != count)
      return ts_error(TS_ERR_INPUT, "swe: %d weights for %d subdomains", par->nweights, count);
    s->weights = malloc(sizeof(double) * (size_t)count);
    if (!s->weights)
      return ts_error(TS_ERR_NOMEM, "swe: out of memory");
    memcpy(s->weights, par->weights, sizeof(double) * (size_t)count);
    s->p.parallel.weights = s->weights;
    TS_CALL(ts_decomp_weigh(&s->decomp, s->weights));
  } else if (s->backend == TS_BACKEND_CUDA && s->nranks == 1 && lists_cpu(par) &&
             !s->balance.cpu_trial) {
    /* Until the balancer measures them, the CPU's subdomains start thin. */
    TS_CALL(swe_balance_thin_cpu(&s->decomp, par->devices, par->ndevices));
  }
  s->ghost_expansion = par->ghost_expansion > 0 ? par->ghost_expansion : 1;
  s->halo_width = SWE_STAGE_REACH * (params->rk_order == 1 ? 1 : 2) * s->ghost_expansion;
  s->sub_device = calloc((size_t)count, sizeof *s->sub_device);
  s->sub_rank = malloc(sizeof(int) * (size_t)count);
  s->by_sub = calloc((size_t)count, sizeof *s->by_sub);
  s->fields = calloc((size_t)count, sizeof *s->fields);
  s->halo_times = calloc((size_t)count, sizeof *s->halo_times);
  s->parts = calloc((size_t)count, sizeof *s->parts);
  if (!s->sub_rank || !s->sub_device || !s->by_sub || !s->fields || !s->halo_times || !s->parts)
    return ts_error(TS_ERR_NOMEM, "swe: out of memory");
  for (int sub = 0; sub < count; sub++)
    s->nparts_hint += ts_decomp_rank(sub, count, s->nranks) == s->rank;
  for (int sub = 0; sub < count; sub++) {
    s->sub_rank[sub] = ts_decomp_rank(sub, count, s->nranks);
    if (s->sub_rank[sub] != s->rank)
      continue;
    swe_part *part;
    s->sub_device[sub] =
        s->balance.cpu_trial ? swe_balance_trial_gpu(s, sub) : device_of(s, s->nparts);
    TS_CALL(swe_part_create(&part, s, sub, s->sub_device[sub], in));
    s->parts[s->nparts++] = part;
    s->by_sub[sub] = part;
  }
  swe_assign_threads(s);
  swe_tune_init(s);
  TS_CALL(swe_balance_init(s));
  return swe_build_halo_plan(s);
}

/* A solver on a quadtree grid: the block engine of the precision on the CPU or GPUs, its leaves
 * cut into [parallel] subdomains partitions over the ranks (auto: one per rank, or one per GPU
 * of a rank), with walls (and NODATA) around the water (what the engine covers so far), rain and
 * losses. One subdomain for the callers that read the split. */
static ts_status create_buq(ts_swe *s, const ts_swe_params *params, const ts_raster *bed,
                            const swe_inputs *in) {
  s->p = *params;
  start_solver(s, bed);
  s->early_exit = params->early_exit != 0;
  s->transport = s->nranks > 1 ? "mpi" : "memory";
  s->balance.mode = TS_BALANCE_OFF;
  s->p.grid.refine = s->p.grid.water_surface = NULL;
  TS_CALL(resolve_backend(s));
  if (swe_has_open_sides(params))
    return ts_error(TS_ERR_INPUT, "swe: grid type = buq takes wall boundaries only for now");
  int parts = params->parallel.subdomains > 0 ? params->parallel.subdomains
                                              : s->nranks * auto_parts_per_rank(s);
  if (parts < s->nranks)
    return ts_error(TS_ERR_INPUT, "swe: %d subdomains for %d ranks: at least one per rank", parts,
                    s->nranks);
  int *part_rank = malloc(sizeof(int) * (size_t)parts);
  int *part_device = malloc(sizeof(int) * (size_t)parts);
  if (!part_rank || !part_device) {
    free(part_rank);
    free(part_device);
    return ts_error(TS_ERR_NOMEM, "swe: out of memory");
  }
  s->nparts_hint = 0;
  for (int i = 0; i < parts; i++) { /* each rank's consecutive */
    part_rank[i] = (int)((int64_t)i * s->nranks / parts);
    s->nparts_hint += part_rank[i] == s->rank;
  }
  for (int i = 0, k = 0; i < parts; i++)
    part_device[i] =
        s->backend == TS_BACKEND_CUDA && part_rank[i] == s->rank ? device_of(s, k++) : -1;
  count_active(s, bed);
  ts_status st = copy_raster(&s->bed, bed);
  if (st == TS_OK)
    st = copy_sources(s, params);
  int n[3] = {s->nx, s->ny, 1}, split[3] = {0, 0, 1};
  if (st == TS_OK)
    st = ts_decomp_create(&s->decomp, 2, n, 1, TS_DECOMP_ROWS, split);
  if (st == TS_OK && !(s->sub_rank = calloc(1, sizeof *s->sub_rank)))
    st = ts_error(TS_ERR_NOMEM, "swe: out of memory");
  s->buq_ops = params->precision == TS_DOUBLE ? TS_CPU_KERNELS(swe_buq_ops_double)
                                              : TS_CPU_KERNELS(swe_buq_ops_float);
  if (st == TS_OK)
    st = s->buq_ops->create(&s->buq, params, in, params->grid.water_surface, omp_get_max_threads(),
                            s->comm, parts, part_rank, part_device);
  free(part_rank);
  free(part_device);
  return st;
}

ts_status ts_swe_create(ts_swe **out, const ts_swe_params *params, const ts_raster *bed,
                        const ts_raster *h0, const ts_raster *hu0, const ts_raster *hv0,
                        const ts_raster *friction_grid) {
  *out = NULL;
  TS_CALL(check_params(params));
  if (!bed || bed->ncols < 1 || bed->nrows < 1 || !(bed->cellsize > 0))
    return ts_error(TS_ERR_INPUT, "swe: the bed grid is empty");
  TS_CALL(check_raster(bed, h0, "initial depth"));
  TS_CALL(check_raster(bed, hu0, "initial hu"));
  TS_CALL(check_raster(bed, hv0, "initial hv"));
  TS_CALL(check_raster(bed, friction_grid, "friction"));
  ts_swe *s = calloc(1, sizeof *s);
  if (!s)
    return ts_error(TS_ERR_NOMEM, "swe: out of memory");
  swe_inputs in = {bed, h0, hu0, hv0, friction_grid};
  ts_status st = params->grid.type == TS_GRID_BUQ ? create_buq(s, params, bed, &in)
                                                  : create_solver(s, params, bed, &in);
  if (st == TS_ERR_NOMEM)
    st = ts_error(TS_ERR_NOMEM, "swe: out of memory for a %d x %d grid", bed->ncols, bed->nrows);
  st = ts_comm_agree(s->comm, st);
  if (st != TS_OK) {
    ts_swe_destroy(s);
    return st;
  }
  *out = s;
  return TS_OK;
}

void ts_swe_destroy(ts_swe *s) {
  if (!s)
    return;
  if (s->buq)
    s->buq_ops->destroy(s->buq);
  if (s->in_flight)
    swe_finish_exchange(s);
  swe_drop_run_graphs(s);
  ts_halo_plan_destroy(s->halo);
  if (s->device_halo && s->nranks > 1)
    ts_transport_close();
  for (int k = 0; k < s->nparts; k++)
    swe_part_destroy(s->parts[k]);
  free(s->parts);
  free(s->by_sub);
  free(s->fields);
  free(s->halo_times);
  free(s->sub_rank);
  free(s->sub_device);
  ts_decomp_destroy(&s->decomp);
  free(s->watch_i);
  free(s->watch_j);
  ts_raster_free(&s->bed);
  if (s->has_friction)
    ts_raster_free(&s->friction);
  for (int side = 0; side < 4; side++) {
    free(s->bc_t[side]);
    free(s->bc_q[side]);
  }
  for (int f = 0; s->rain_grids && f < s->p.rain.nframes; f++)
    ts_raster_free(&s->rain_grids[f]);
  free(s->rain_grids);
  free(s->rain_t);
  free(s->rain_rate);
  free(s->rain_sums);
  free(s->rain_step_max);
  free(s->weights);
  free(s->balance.trial_devices);
  ts_raster_free(&s->loss_initial);
  ts_raster_free(&s->loss_rate);
  free(s);
}

static void reset_part(swe_part *p, const ts_raster *eta) {
  swe_part_to_host(p);
  p->k->set_surface(p, eta);
  for (int64_t c = 0; c < p->plane; c++) {
    p->max_h[c] = p->max_speed[c] = 0;
    p->arrival[c] = p->max_eta[c] = NAN;
    p->duration[c] = p->max_hazard[c] = p->loss[c] = p->inflow[c] = p->outflow[c] = 0;
  }
  p->t = 0;
  swe_part_changed_on_host(p); /* the device's clock too */
  p->k->tile_mask(p, (swe_region){0, p->nx, 0, p->ny});
  p->k->maxima(p, 0);
}

ts_status ts_swe_set_surface(ts_swe *s, const ts_raster *eta) {
  TS_CALL(check_raster(&s->bed, eta, "initial surface"));
  if (s->buq)
    s->buq_ops->set_surface(s->buq, eta);
  TS_CALL(swe_finish_exchange(s));
  for (int k = 0; k < s->nparts; k++)
    reset_part(s->parts[k], eta);
  s->cycle = 0;
  return TS_OK;
}

ts_status ts_swe_step(ts_swe *s, double dt_max, double *dt_taken) {
  if (!(dt_max > 0))
    return ts_error(TS_ERR_INTERNAL, "swe: dt_max must be positive (got %g)", dt_max);
  ts_swe_run taken = {0};
  double target = s->t + dt_max;
  TS_CALL(ts_swe_advance(s, target, target, 1, &taken));
  *dt_taken = taken.dt[0];
  return TS_OK;
}

/* The parts (or the quadtree engine) take the rain frame of time t when it is not the one they
 * hold; the engine gives the frame's rain summed over its cells (its cells are not the bed's). */
static void take_rain_frame(ts_swe *s) {
  int frame = swe_rain_frame(s, s->t);
  if (frame == s->rain_frame)
    return;
  s->rain_frame = frame;
  for (int k = 0; k < s->nparts; k++)
    swe_part_set_rain(s->parts[k], s, frame);
  if (s->buq) {
    const ts_raster *grid = frame >= 0 && s->rain_grids ? &s->rain_grids[frame] : NULL;
    double rate = frame >= 0 && s->rain_rate ? s->rain_rate[frame] : 0;
    double sum = s->buq_ops->set_rain(s->buq, grid, rate);
    if (frame >= 0)
      s->rain_sums[frame] = sum;
  }
}

/* Steps land on the rain's frame times, so each step lies in one frame, whose rain it adds to
 * the budget. */
ts_status ts_swe_advance(ts_swe *s, double target, double stop, int max_steps, ts_swe_run *out) {
  out->taken = 0;
  if (!(target > s->t))
    return ts_error(TS_ERR_INTERNAL, "swe: target time %g is not after %g", target, s->t);
  if (max_steps < 1)
    return TS_OK;
  target = fmin(target, swe_rain_next_time(s, s->t));
  stop = fmin(stop, target);
  take_rain_frame(s);
  ts_status st;
  s->ran_on_device = !s->buq && swe_steps_on_device(s);
  if (s->buq) {
    double step_max = s->rain_frame >= 0 ? s->rain_step_max[s->rain_frame] : INFINITY;
    st = s->buq_ops->advance(s->buq, s->t, target, stop, step_max, max_steps, out);
    if (out->taken > 0) {
      s->t = out->t[out->taken - 1];
      s->steps += out->taken;
    }
  } else if (s->ran_on_device) {
    swe_steps_report report;
    st = swe_run_on_device(s, target, stop, max_steps, &report);
    *out = report.steps;
  } else {
    double dt = 0;
    st = swe_tuning(s) ? swe_tune_step(s, target, &dt) : swe_step(s, target, &dt);
    if (st == TS_OK) {
      out->taken = 1;
      out->t[0] = s->t;
      out->dt[0] = dt;
    }
  }
  double rain_per_s = s->rain_frame >= 0 ? s->rain_sums[s->rain_frame] : 0;
  for (int q = 0; q < out->taken; q++)
    s->rain_volume += rain_per_s * out->dt[q] * s->grid.dx[0] * s->grid.dx[1];
  if (st == TS_OK)
    st = swe_balance_after_steps(s, out->taken);
  return st;
}

void ts_swe_balance_get(const ts_swe *s, ts_swe_balance *out) {
  if (s->buq) {
    s->buq_ops->balance(s->buq, out);
    return;
  }
  const swe_balance_state *b = &s->balance;
  *out = (ts_swe_balance){b->mode,   b->rebalances,       b->moved_cells,
                          b->move_s, b->imbalance_before, b->imbalance_after};
}

/* The watched cells of a part, as its element indices. */
static ts_status watch_part(const ts_swe *s, swe_part *p) {
  if (!p->k->watch)
    return TS_OK;
  int64_t *cells = malloc(sizeof *cells * (size_t)(s->nwatch + 1));
  if (!cells)
    return ts_error(TS_ERR_NOMEM, "out of memory");
  int m = 0;
  for (int q = 0; q < s->nwatch; q++) {
    int li = s->watch_i[q] - p->gi0, lj = s->watch_j[q] - p->gj0;
    if (li >= 0 && lj >= 0 && li < p->nx && lj < p->ny)
      cells[m++] = swe_index(p, li, lj);
  }
  ts_status st = p->k->watch(p, cells, m);
  free(cells);
  return st;
}

ts_status ts_swe_watch(ts_swe *s, int n, const int *i, const int *j) {
  swe_drop_run_graphs(s); /* they record the old cells */
  free(s->watch_i);
  free(s->watch_j);
  s->nwatch = 0;
  s->watch_i = malloc(sizeof(int) * (size_t)(n + 1));
  s->watch_j = malloc(sizeof(int) * (size_t)(n + 1));
  if (!s->watch_i || !s->watch_j)
    return ts_error(TS_ERR_NOMEM, "out of memory");
  memcpy(s->watch_i, i, sizeof(int) * (size_t)n);
  memcpy(s->watch_j, j, sizeof(int) * (size_t)n);
  s->nwatch = n;
  if (s->buq)
    return s->buq_ops->watch(s->buq, n, i, j);
  for (int k = 0; k < s->nparts; k++)
    TS_CALL(watch_part(s, s->parts[k]));
  return TS_OK;
}

ts_status swe_watch_new_part(const ts_swe *s, swe_part *p) {
  return s->nwatch ? watch_part(s, p) : TS_OK;
}

double swe_inflow_discharge(const ts_swe_params *p, int side, double t) {
  const ts_swe_bc *bc = &p->bc[side];
  return swe_hydrograph(bc->t, bc->q, bc->npoints, t);
}

double swe_inflow_unit(const swe_part *s, int side, double t, int signed_axis) {
  if (s->p->bc[side].type != TS_BC_INFLOW || s->bc_cells[side] == 0)
    return 0;
  double width = s->bc_cells[side] * s->grid.dx[side < 2 ? 1 : 0];
  double q = swe_inflow_discharge(s->p, side, t) / width;
  return signed_axis && (side == TS_EAST || side == TS_NORTH) ? -q : q;
}

double ts_swe_time(const ts_swe *s) { return s->t; }
int64_t ts_swe_steps(const ts_swe *s) { return s->steps; }
const ts_grid *ts_swe_grid(const ts_swe *s) { return &s->grid; }
const ts_swe_params *ts_swe_get_params(const ts_swe *s) { return &s->p; }
int64_t ts_swe_active_cells(const ts_swe *s) { return s->active_cells; }
const ts_decomp *ts_swe_decomp(const ts_swe *s) { return &s->decomp; }
int ts_swe_ranks(const ts_swe *s) { return s->nranks; }
int ts_swe_ghost_expansion(const ts_swe *s) { return s->ghost_expansion; }
int ts_swe_early_exit(const ts_swe *s) { return s->early_exit > 0; }
ts_backend ts_swe_backend(const ts_swe *s) { return s->backend; }

const char *ts_swe_transport(const ts_swe *s) { return s->transport; }

/* Brings the host mirrors of GPU parts up to date before host code reads them. An exchange in
 * flight is finished first: its in-process copies already sit in the host arrays, and a download
 * would overwrite them with the device's older halo. */
static void parts_to_host(const ts_swe *s) {
  if (s->backend != TS_BACKEND_CUDA)
    return;
  if (s->in_flight)
    swe_finish_exchange((ts_swe *)s);
  for (int k = 0; k < s->nparts; k++)
    swe_part_to_host(s->parts[k]);
}

/* The same for the cells of n probes only (gauges are read every few steps). */
static void probes_to_host(const ts_swe *s, int n, const int *i, const int *j) {
  if (s->backend != TS_BACKEND_CUDA)
    return;
  if (s->in_flight)
    swe_finish_exchange((ts_swe *)s);
  int64_t *cells = malloc(sizeof *cells * (size_t)(n > 0 ? n : 1));
  for (int k = 0; k < s->nparts; k++) {
    swe_part *p = s->parts[k];
    int m = 0;
    for (int q = 0; q < n && cells; q++) {
      int li = i[q] - p->gi0, lj = j[q] - p->gj0;
      if (li >= 0 && lj >= 0 && li < p->nx && lj < p->ny)
        cells[m++] = swe_index(p, li, lj);
    }
    if (!cells)
      swe_part_to_host(p);
    else if (m > 0 && p->k->to_host_cells) /* a part on the CPU is current already */
      p->k->to_host_cells(p, cells, m);
  }
  free(cells);
}

double ts_swe_volume(const ts_swe *s) {
  parts_to_host(s);
  ts_exact_sum sum = {0, 0};
  if (s->buq)
    s->buq_ops->volume(s->buq, &sum);
  for (int k = 0; k < s->nparts; k++)
    s->parts[k]->k->volume(s->parts[k], &sum);
  if (ts_comm_exact_sum(s->comm, &sum) != TS_OK)
    return NAN;
  return ts_exact_sum_value(sum) * s->grid.dx[0] * s->grid.dx[1];
}

ts_status ts_swe_budget_get(const ts_swe *s, ts_swe_budget *out) {
  parts_to_host(s);
  ts_exact_sum sums[3] = {{0, 0}, {0, 0}, {0, 0}};
  for (int k = 0; k < s->nparts; k++) {
    const swe_part *p = s->parts[k];
    double *const records[3] = {p->inflow, p->outflow, p->loss};
    for (int j = p->own.j0; j < p->own.j1; j++)
      for (int i = p->own.i0; i < p->own.i1; i++) {
        int64_t c = swe_index(p, i, j);
        for (int r = 0; r < 3; r++)
          ts_exact_sum_add(&sums[r], records[r][c]);
      }
  }
  if (s->buq)
    s->buq_ops->losses(s->buq, &sums[2]);
  for (int r = 0; r < 3; r++)
    TS_CALL(ts_comm_exact_sum(s->comm, &sums[r]));
  out->rain = s->rain_volume;
  out->inflow = ts_exact_sum_value(sums[0]);
  out->outflow = ts_exact_sum_value(sums[1]);
  out->losses = ts_exact_sum_value(sums[2]) * s->grid.dx[0] * s->grid.dx[1];
  return TS_OK;
}

int64_t ts_swe_wet_cells(const ts_swe *s) {
  parts_to_host(s);
  int64_t n = s->buq ? s->buq_ops->wet_cells(s->buq) : 0;
  for (int k = 0; k < s->nparts; k++)
    n += s->parts[k]->k->wet_cells(s->parts[k]);
  ts_comm_sum_i64(s->comm, &n, 1);
  return n;
}

/* The part of this rank owning global cell (i, j), or NULL. */
static const swe_part *owner_part(const ts_swe *s, int i, int j) {
  int c[3] = {i, j, 0};
  int sub = ts_decomp_owner(&s->decomp, c);
  return sub >= 0 ? s->by_sub[sub] : NULL;
}

static double local_value(const ts_swe *s, ts_swe_var var, int i, int j, int *owned) {
  if (s->buq) {
    *owned = 1;
    return s->buq_ops->value(s->buq, var, i, j);
  }
  const swe_part *p = owner_part(s, i, j);
  *owned = p != NULL;
  if (!p)
    return 0;
  int li = i - p->gi0, lj = j - p->gj0;
  return p->active[swe_index(p, li, lj)] ? p->k->get_cell(p, var, li, lj) : NAN;
}

/* Values of probes from the host arrays of the parts, gathered over the ranks. */
static ts_status probe_values(const ts_swe *s, int n, const int *i, const int *j,
                              const ts_swe_var *var, double *out) {
  double *mine = calloc((size_t)n * 2, sizeof *mine);
  double *all = calloc((size_t)n * 2 * (size_t)s->nranks, sizeof *all);
  ts_status st = mine && all ? TS_OK : ts_error(TS_ERR_NOMEM, "out of memory");
  for (int k = 0; k < n && st == TS_OK; k++) {
    int owned = 0;
    if (i[k] >= 0 && j[k] >= 0 && i[k] < s->nx && j[k] < s->ny)
      mine[2 * k] = local_value(s, var[k], i[k], j[k], &owned);
    mine[2 * k + 1] = owned;
  }
  if (st == TS_OK)
    st = ts_comm_allgather(s->comm, mine, sizeof *mine * 2 * (size_t)n, all);
  for (int k = 0; k < n && st == TS_OK; k++) {
    out[k] = NAN;
    for (int r = 0; r < s->nranks; r++)
      if (all[(size_t)r * 2 * n + 2 * k + 1] != 0)
        out[k] = all[(size_t)r * 2 * n + 2 * k];
  }
  free(mine);
  free(all);
  return st;
}

ts_status ts_swe_probe(const ts_swe *s, int n, const int *i, const int *j, const ts_swe_var *var,
                       double *out) {
  if (n == 0)
    return TS_OK;
  if (s->buq) {
    for (int q = 0; q < n; q++)
      if (i[q] < 0 || j[q] < 0 || i[q] >= s->nx || j[q] >= s->ny)
        return probe_values(s, n, i, j, var, out); /* NaN outside, as on the uniform grid */
    s->buq_ops->probe(s->buq, n, i, j, var, out);
    return TS_OK;
  }
  probes_to_host(s, n, i, j);
  return probe_values(s, n, i, j, var, out);
}

static int watched(const ts_swe *s, int i, int j) {
  for (int q = 0; q < s->nwatch; q++)
    if (s->watch_i[q] == i && s->watch_j[q] == j)
      return 1;
  return 0;
}

ts_status ts_swe_probe_step(const ts_swe *s, int k, int n, const int *i, const int *j,
                            const ts_swe_var *var, double *out) {
  if (!s->ran_on_device && !s->buq)
    return ts_swe_probe(s, n, i, j, var, out); /* one step at a time: the current state */
  for (int q = 0; q < n; q++)
    if (!watched(s, i[q], j[q]))
      return ts_error(TS_ERR_INTERNAL, "swe: cell (%d, %d) is not watched", i[q], j[q]);
  if (s->buq) {
    for (int q = 0; q < n; q++)
      if (i[q] < 0 || j[q] < 0 || i[q] >= s->nx || j[q] >= s->ny)
        return probe_values(s, n, i, j, var, out); /* NaN outside, as on the uniform grid */
    s->buq_ops->probe_step(s->buq, k, n, i, j, var, out);
    return TS_OK;
  }
  for (int p = 0; p < s->nparts; p++)
    s->parts[p]->k->watched_to_host(s->parts[p], k);
  return probe_values(s, n, i, j, var, out);
}

double ts_swe_get_cell(const ts_swe *s, ts_swe_var var, int i, int j) {
  double v = NAN;
  if (ts_swe_probe(s, 1, &i, &j, &var, &v) != TS_OK)
    return NAN;
  return v;
}

/* Writes `elem` bytes of cell (i, j) (local coordinates) of part p to dst. */
typedef void (*cell_writer)(const swe_part *p, int i, int j, const void *arg, char *dst);

/* Gathers the owned cells of every part, elem bytes each, from the host arrays (parts_to_host
 * first) into out[i + j * nx] on rank 0 (rows on every OpenMP thread). */
static ts_status gather_host_cells(const ts_swe *s, size_t elem, cell_writer write, const void *arg,
                                   void *out) {
  if (s->nranks == 1) {
    for (int k = 0; k < s->nparts; k++) {
      const swe_part *p = s->parts[k];
#pragma omp parallel for schedule(static)
      for (int j = p->own.j0; j < p->own.j1; j++)
        for (int i = p->own.i0; i < p->own.i1; i++)
          write(p, i, j, arg,
                (char *)out + elem * ((size_t)(p->gi0 + i) + (size_t)(p->gj0 + j) * s->nx));
    }
    return TS_OK;
  }
  /* Each rank packs its parts in subdomain order; rank 0 places them by their boxes. */
  size_t *counts = calloc((size_t)s->nranks, sizeof *counts);
  if (!counts)
    return ts_error(TS_ERR_NOMEM, "out of memory");
  for (int sub = 0; sub < s->decomp.count; sub++)
    counts[s->sub_rank[sub]] += (size_t)ts_box_cells(&s->decomp.boxes[sub]) * elem;
  char *mine = malloc(counts[s->rank] ? counts[s->rank] : 1);
  char *all = s->rank == 0 ? malloc((size_t)s->nx * s->ny * elem) : NULL;
  ts_status st = mine && (s->rank != 0 || all) ? TS_OK : ts_error(TS_ERR_NOMEM, "out of memory");
  if (st == TS_OK) {
    char *q = mine;
    for (int k = 0; k < s->nparts; k++) {
      const swe_part *p = s->parts[k];
      int width = p->own.i1 - p->own.i0;
#pragma omp parallel for schedule(static)
      for (int j = p->own.j0; j < p->own.j1; j++)
        for (int i = p->own.i0; i < p->own.i1; i++)
          write(p, i, j, arg,
                q + elem * ((size_t)(i - p->own.i0) + (size_t)(j - p->own.j0) * width));
      q += elem * (size_t)width * (size_t)(p->own.j1 - p->own.j0);
    }
  }
  st = ts_comm_agree(s->comm, st);
  if (st == TS_OK)
    st = ts_comm_gather(s->comm, mine, counts, all, 0);
  if (st == TS_OK && s->rank == 0) {
    const char *q = all;
    for (int r = 0; r < s->nranks; r++)
      for (int sub = 0; sub < s->decomp.count; sub++) {
        if (s->sub_rank[sub] != r)
          continue;
        const ts_box *b = &s->decomp.boxes[sub];
        for (int j = b->lo[1]; j < b->hi[1]; j++)
          for (int i = b->lo[0]; i < b->hi[0]; i++, q += elem)
            memcpy((char *)out + elem * ((size_t)i + (size_t)j * s->nx), q, elem);
      }
  }
  free(counts);
  free(mine);
  free(all);
  return st;
}

static void write_variable(const swe_part *p, int i, int j, const void *arg, char *dst) {
  ts_swe_var var = *(const ts_swe_var *)arg;
  double v = p->active[swe_index(p, i, j)] ? p->k->get_cell(p, var, i, j) : NAN;
  memcpy(dst, &v, sizeof v);
}

ts_status ts_swe_get_many(const ts_swe *s, int n, const ts_swe_var *var, double *const *out) {
  for (int q = 0; q < n; q++)
    if (var[q] < TS_SWE_H || var[q] > TS_SWE_LOSS)
      return ts_error(TS_ERR_INTERNAL, "swe: unknown variable %d", (int)var[q]);
  if (s->buq) {
    for (int q = 0; q < n; q++)
      s->buq_ops->get(s->buq, var[q], out[q]);
    return TS_OK;
  }
  parts_to_host(s);
  for (int q = 0; q < n; q++)
    TS_CALL(gather_host_cells(s, sizeof(double), write_variable, &var[q], out[q]));
  return TS_OK;
}

ts_status ts_swe_get(const ts_swe *s, ts_swe_var var, double *out) {
  return ts_swe_get_many(s, 1, &var, &out);
}

void ts_swe_tiles(const ts_swe *s, int *ntiles_x, int *ntiles_y, int64_t *active_tiles) {
  if (s->buq) { /* the blocks are the tiles */
    int64_t blocks;
    *active_tiles = s->buq_ops->active_blocks(s->buq, &blocks);
    *ntiles_x = (int)blocks;
    *ntiles_y = 1;
    return;
  }
  int tile = s->p.tile_size;
  int tx = (s->nx + tile - 1) / tile, ty = (s->ny + tile - 1) / tile;
  *ntiles_x = tx;
  *ntiles_y = ty;
  *active_tiles = (int64_t)tx * ty;
  int64_t *wet = calloc((size_t)tx * ty, sizeof *wet);
  if (!wet)
    return;
  parts_to_host(s);
  for (int k = 0; k < s->nparts; k++)
    s->parts[k]->k->tiles_wet(s->parts[k], tile, tx, wet);
  ts_comm_sum_i64(s->comm, wet, tx * ty);
  unsigned char *flags = malloc((size_t)tx * ty);
  if (s->early_exit && flags) {
    for (int64_t t = 0; t < (int64_t)tx * ty; t++)
      flags[t] = wet[t] != 0;
    unsigned feeds = swe_feeding_sides(&s->p, NULL);
    int64_t active = 0;
    for (int y = 0; y < ty; y++)
      for (int x = 0; x < tx; x++)
        active += swe_tile_on(flags, tx, ty, x, y, feeds);
    *active_tiles = active;
  }
  free(flags);
  free(wet);
}

ts_status ts_swe_move_boundary(ts_swe *s, int a, int b, int delta) {
  if (s->buq)
    return ts_error(TS_ERR_INPUT, "swe: a quadtree grid has no boundaries to move");
  ts_decomp d;
  TS_CALL(ts_decomp_copy(&d, &s->decomp));
  ts_status st = ts_decomp_move_boundary(&d, a, b, delta);
  if (st == TS_OK)
    st = swe_rebuild(s, &d, NULL, s->ghost_expansion);
  ts_decomp_destroy(&d);
  return st;
}

ts_status ts_swe_stats(const ts_swe *s, ts_swe_sub_stats *stats) {
  int nsub = s->decomp.count;
  enum { PER_SUB = 5 }; /* compute, pack, wait, unpack, device + 1 */
  double *t = calloc((size_t)nsub * PER_SUB, sizeof *t);
  if (!t)
    return ts_error(TS_ERR_NOMEM, "out of memory");
  for (int k = 0; k < s->nparts; k++) {
    int sub = s->parts[k]->sub;
    ts_halo_times h = ts_halo_times_of(s->halo, sub);
    double *row = t + PER_SUB * sub;
    row[0] = swe_part_compute_seconds(s->parts[k]);
    row[1] = h.pack + s->halo_times[sub].pack;
    row[2] = h.wait + s->halo_times[sub].wait;
    row[3] = h.unpack + s->halo_times[sub].unpack;
    row[4] = s->parts[k]->device + 1;
  }
  ts_status st = ts_comm_max(s->comm, t, PER_SUB * nsub);
  for (int sub = 0; sub < nsub && st == TS_OK; sub++) {
    const double *row = t + PER_SUB * sub;
    stats[sub] = (ts_swe_sub_stats){.rank = s->sub_rank[sub],
                                    .device = (int)row[4] - 1,
                                    .box = s->decomp.boxes[sub],
                                    .compute = row[0],
                                    .pack = row[1],
                                    .wait = row[2],
                                    .unpack = row[3]};
  }
  free(t);
  return st;
}

/* ------------------------------------------------------------------ checkpoints */

/* Checkpoint blob: a header (with the rain fallen so far), then w, hu, hv, w_carry (working
 * precision), the four maxima and the five records (double) of every cell of the grid, in grid
 * order. */
typedef struct swe_checkpoint_header {
  char magic[8];
  int32_t nx, ny, real_size, reserved;
  double t;
  int64_t steps;
  double rain_volume;
} swe_checkpoint_header;

enum { CHECKPOINT_ARRAYS = 13 };
static const char checkpoint_magic[8] = "TSSWE03";
static const char checkpoint_magic_buq[8] = "TSBUQ01"; /* the leaves' cells in leaf order */

static size_t checkpoint_bytes(const ts_swe *s) {
  if (s->buq)
    return sizeof(swe_checkpoint_header) + s->buq_ops->state_bytes(s->buq);
  return sizeof(swe_checkpoint_header) +
         (size_t)s->nx * s->ny * (4 * (size_t)s->p.precision + 9 * sizeof(double));
}

ts_status ts_swe_checkpoint_size(const ts_swe *s, size_t *bytes) {
  *bytes = checkpoint_bytes(s);
  return TS_OK;
}

/* Array `which` of a part: 0..3 the state, 4..7 the maxima, 8..12 the records. */
static char *part_array(const swe_part *p, int which) {
  void *arrays[CHECKPOINT_ARRAYS] = {
      p->w,       p->hu,       p->hv,         p->w_carry, p->max_h,  p->max_speed, p->arrival,
      p->max_eta, p->duration, p->max_hazard, p->loss,    p->inflow, p->outflow};
  return arrays[which];
}

static size_t array_elem(const swe_part *p, int which) {
  return which < 4 ? p->real_size : sizeof(double);
}

static void write_raw(const swe_part *p, int i, int j, const void *arg, char *dst) {
  int which = *(const int *)arg;
  size_t elem = array_elem(p, which);
  memcpy(dst, part_array(p, which) + elem * (size_t)swe_index(p, i, j), elem);
}

ts_status ts_swe_checkpoint_save(const ts_swe *s, void *blob, size_t bytes) {
  if (s->rank == 0 && bytes != checkpoint_bytes(s))
    return ts_error(TS_ERR_INTERNAL, "swe: checkpoint buffer has the wrong size");
  char *p = blob;
  if (s->rank == 0) {
    swe_checkpoint_header h = {.nx = s->nx,
                               .ny = s->ny,
                               .real_size = (int32_t)s->p.precision,
                               .t = s->t,
                               .steps = s->steps,
                               .rain_volume = s->rain_volume};
    memcpy(h.magic, s->buq ? checkpoint_magic_buq : checkpoint_magic, sizeof h.magic);
    memcpy(p, &h, sizeof h);
    p += sizeof h;
  }
  if (s->buq) {
    s->buq_ops->save(s->buq, p);
    return TS_OK;
  }
  size_t cells = (size_t)s->nx * s->ny;
  parts_to_host(s);
  for (int which = 0; which < CHECKPOINT_ARRAYS; which++) {
    size_t elem = array_elem(s->parts[0], which);
    TS_CALL(gather_host_cells(s, elem, write_raw, &which, p));
    if (p)
      p += elem * cells;
  }
  return TS_OK;
}

ts_status ts_swe_checkpoint_load(ts_swe *s, const void *blob, size_t bytes) {
  swe_checkpoint_header h;
  if (bytes < sizeof h)
    return ts_error(TS_ERR_INPUT, "checkpoint is truncated");
  memcpy(&h, blob, sizeof h);
  if (memcmp(h.magic, s->buq ? checkpoint_magic_buq : checkpoint_magic, sizeof h.magic) != 0)
    return ts_error(TS_ERR_INPUT, "checkpoint is not a Tessera shallow-water checkpoint%s",
                    s->buq ? " of a quadtree grid" : "");
  if (h.nx != s->nx || h.ny != s->ny || h.real_size != (int32_t)s->p.precision)
    return ts_error(TS_ERR_INPUT,
                    "checkpoint is for a %d x %d grid in %s, this case is %d x %d in %s", h.nx,
                    h.ny, h.real_size == 8 ? "double" : "float", s->nx, s->ny,
                    ts_precision_name(s->p.precision));
  if (bytes != checkpoint_bytes(s))
    return ts_error(TS_ERR_INPUT, "checkpoint has the wrong size");
  if (s->buq) {
    s->buq_ops->load(s->buq, (const char *)blob + sizeof h);
    s->t = h.t;
    s->steps = h.steps;
    s->rain_volume = h.rain_volume;
    return TS_OK;
  }
  TS_CALL(swe_finish_exchange(s));
  const char *data = (const char *)blob + sizeof h;
  size_t cells = (size_t)s->nx * s->ny;
  for (int k = 0; k < s->nparts; k++) {
    swe_part *p = s->parts[k];
    const char *a = data;
    for (int which = 0; which < CHECKPOINT_ARRAYS; which++) {
      size_t elem = array_elem(p, which);
      char *dst = part_array(p, which);
      for (int j = 0; j < p->ny; j++)
        for (int i = 0; i < p->nx; i++)
          memcpy(dst + elem * (size_t)swe_index(p, i, j),
                 a + elem * ((size_t)(p->gi0 + i) + (size_t)(p->gj0 + j) * s->nx), elem);
      a += elem * cells;
    }
    p->t = h.t;
    swe_part_changed_on_host(p);
    p->k->tile_mask(p, (swe_region){0, p->nx, 0, p->ny});
  }
  s->t = h.t;
  s->steps = h.steps;
  s->rain_volume = h.rain_volume;
  s->cycle = 0;
  return TS_OK;
}

int64_t ts_swe_leaf_cells(const ts_swe *s, int *i0, int *j0, int *width, int *level) {
  return s->buq ? s->buq_ops->leaf_cells(s->buq, i0, j0, width, level) : 0;
}

ts_status ts_swe_leaf_values(const ts_swe *s, ts_swe_var var, double *out) {
  if (!s->buq)
    return ts_error(TS_ERR_INTERNAL, "swe: a uniform grid has no leaf cells");
  s->buq_ops->leaf_values(s->buq, var, out);
  return TS_OK;
}

int ts_swe_grid_info(const ts_swe *s, ts_swe_grid_stats *out) {
  memset(out, 0, sizeof *out);
  if (s->buq) {
    s->buq_ops->stats(s->buq, out);
    return 1;
  }
  out->levels = 1;
  out->cells = out->cells_uniform_finest = out->cells_per_level[0] = (int64_t)s->nx * s->ny;
  return 0;
}

double ts_swe_bytes_per_cell_step(const ts_swe *s) {
  /* What a fused RK2 step must move per cell: stage 1 reads w, hu, hv and the bed and writes
   * w, hu, hv; stage 2 also reads the saved start state. Euler: one stage without the copy. */
  double values = s->p.rk_order == 1 ? 7 : 7 + 10;
  return values * (double)s->p.precision;
}
