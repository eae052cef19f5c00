/* The tile engine of the shallow-water CUDA backend (swe_gpu.cuh), compiled once per precision:
 * a block per tile of a stage, in shared memory. */
#include "physics/swe/swe_gpu.cuh"
#include "physics/swe/swe_window.cuh"

/* ------------------------------------------------------------------ the tile engine
 *
 * A block updates one tile of TILE_W x TILE_H cells of a stage in one kernel. It copies the
 * state, beds and activity of the tile and a ring of SWE_STAGE_REACH cells into shared memory,
 * computes the velocities there, reconstructs each cell once per axis, the fluxes of every face
 * of the tile and its first ring, the outflow limiters and speed caps of those cells, and
 * updates the tile: the passes of the CPU sweep, with the same stage functions (swe_stage.h) on
 * a tile-sized copy of the arrays. A stage reads one state buffer and writes the other
 * (neighbouring blocks read the cells a block writes), so the state at the start of the step
 * needs no copy: stage 0 reads (w, hu, hv) and writes (w0, hu0, hv0); stage 1 reads those and
 * writes the average back into (w, hu, hv).
 *
 * Shared memory holds 14 arrays of the working precision and the reconstructed sides; arrays
 * whose lives do not overlap share storage (y fluxes over the velocities and corners, one
 * correction array for both axes, limiters and speed caps over the sides), so that two blocks of
 * 1024 threads fit on an SM. Loops over the tile have constant extents, chosen so that each
 * pass is about one round of the block's threads. */
#define TILE_W 32
#if TS_REAL_DOUBLE
#define TILE_H 8
#define TILE_THREADS 512
#else
#define TILE_H 24
#define TILE_THREADS 1024
#endif
static const dim3 tile_threads(32, TILE_THREADS / 32);
#ifndef SWE_TILE_BLOCKS
#define SWE_TILE_BLOCKS 2 /* blocks of a tile kernel per SM: shared memory allows two */
#endif
#define SH_ROW (TILE_W + 2 * RING + 1) /* the ring, and one more corner */
#define SH_COLS (TILE_H + 2 * RING + 1)
#define SH_PLANE (SH_ROW * SH_COLS)
#define SH_REALS 14

/* The shared-memory copy of a tile: a window (swe_window.cuh) in the tile's layout (row SH_ROW),
 * and per cell whether it lies in the part's window in a tile that early exit computes. */
struct tile_t : window_t {
  unsigned char *on;
  int *tile_col, *tile_row; /* early-exit tile of each shared column / row, -1 outside */
  int i0, j0;               /* local cell at shared index (RING, RING) */
};

static size_t tile_shared_bytes(void) {
  return (size_t)SH_PLANE * (SH_REALS * sizeof(ts_real) + 2 * sizeof(side_t) + 2) +
         (size_t)(SH_ROW + SH_COLS) * sizeof(int);
}

__device__ static inline tile_t tile_layout(char *mem, int i0, int j0) {
  tile_t t;
  ts_real *r = (ts_real *)mem;
  t.a.w = r;
  t.a.hu = r + SH_PLANE;
  t.a.hv = r + 2 * SH_PLANE;
  t.a.bed = r + 3 * SH_PLANE;
  t.a.corner = r + 4 * SH_PLANE;
  t.a.u = r + 5 * SH_PLANE;
  t.a.v = r + 6 * SH_PLANE;
  t.a.char_speed = r + 7 * SH_PLANE;
  t.a.fx[0] = r + 8 * SH_PLANE;
  t.a.fx[1] = r + 9 * SH_PLANE;
  t.a.fx[2] = r + 10 * SH_PLANE;
  t.corr = r + 11 * SH_PLANE;
  t.a.src_x = r + 12 * SH_PLANE;
  t.a.src_y = r + 13 * SH_PLANE;
  /* computed after the last reconstruction, which reads velocities and corners */
  t.a.fy[0] = t.a.u;
  t.a.fy[1] = t.a.v;
  t.a.fy[2] = (ts_real *)t.a.corner;
  t.lo = (side_t *)(r + SH_REALS * SH_PLANE);
  t.hi = t.lo + SH_PLANE;
  /* computed after the last faces, which read the sides */
  t.a.drain = (ts_real *)t.lo;
  t.a.speed_cap = t.a.drain + SH_PLANE;
  t.tile_col = (int *)(t.hi + SH_PLANE);
  t.tile_row = t.tile_col + SH_ROW;
  t.a.active = (const unsigned char *)(t.tile_row + SH_COLS);
  t.on = (unsigned char *)t.a.active + SH_PLANE;
  t.a.w_carry = t.a.w0 = t.a.hu0 = t.a.hv0 = NULL;
  t.a.friction = NULL;
  t.a.row = SH_ROW;
  t.a.start_kept = 1;
  t.i0 = i0;
  t.j0 = j0;
  return t;
}

/* Local cell of shared index e. */
__device__ static inline void tile_cell(const tile_t *t, int e, int *i, int *j) {
  *i = t->i0 - RING + e % SH_ROW;
  *j = t->j0 - RING + e / SH_ROW;
}

/* Copies the state `in` (w, hu, hv), beds and activity of the tile and its ring; cells outside
 * the part's padded layout are inactive. Cells of the window in tiles that early exit skipped
 * were not written by the first stage: with `start` (the second stage), their state comes from
 * the start of the step, as on the CPU, whose single state they kept. Then the velocities. */
__device__ static void tile_load(tile_t *t, const swe_arrays *g, const swe_arrays *in,
                                 const swe_arrays *start, tiles_t tiles, const swe_consts *k,
                                 int64_t origin, int nx, int ny) {
  WINDOW_FOR(e, SH_ROW + SH_COLS) {
    int col = e < SH_ROW, n = col ? e : e - SH_ROW, at = (col ? t->i0 : t->j0) - RING + n;
    int inside = at >= 0 && at < (col ? nx : ny);
    (col ? t->tile_col : t->tile_row)[n] = inside ? at / tiles.size : -1;
  }
  __syncthreads();
  WINDOW_FOR(e, SH_PLANE) {
    int i, j;
    tile_cell(t, e, &i, &j);
    int inside = i >= -SWE_GHOST && i <= nx + SWE_GHOST && j >= -SWE_GHOST && j <= ny + SWE_GHOST;
    int tx = t->tile_col[e % SH_ROW], ty = t->tile_row[e / SH_ROW];
    int window = tx >= 0 && ty >= 0, on = window && tiles.on[tx + ty * tiles.nx];
    t->on[e] = (unsigned char)on;
    const swe_arrays *from = start && window && !on ? start : in;
    int64_t c = origin + i + (int64_t)j * g->row;
    t->a.w[e] = inside ? from->w[c] : SWE_R(0);
    t->a.hu[e] = inside ? from->hu[c] : SWE_R(0);
    t->a.hv[e] = inside ? from->hv[c] : SWE_R(0);
    ((ts_real *)t->a.bed)[e] = inside ? g->bed[c] : SWE_R(0);
    ((ts_real *)t->a.corner)[e] = inside ? g->corner[c] : SWE_R(0);
    ((unsigned char *)t->a.active)[e] = inside ? g->active[c] : 0;
  }
  __syncthreads();
  WINDOW_FOR(e, SH_PLANE) { swe_cell_velocity(&t->a, k, e); }
  __syncthreads();
}

/* Where a block's tile lies: cells [i0, i1) x [j0, j1) of region r; 0 when no tile of the early
 * exit mask under it is active (each of the first threads looks at one of those tiles). */
__device__ static int tile_place(region_t r, tiles_t tiles, int *i0, int *i1, int *j0, int *j1) {
  *i0 = r.i0 + (int)blockIdx.x * TILE_W;
  *j0 = r.j0 + (int)blockIdx.y * TILE_H;
  *i1 = min(*i0 + TILE_W, r.i1);
  *j1 = min(*j0 + TILE_H, r.j1);
  /* i / size for 0 <= i < 2^30: (i + 1/2) / size in double is never within rounding error of
   * an integer, so the floor is exact (and cheaper than an integer division) */
  double inv = 1.0 / tiles.size;
  int tx0 = (int)((*i0 + 0.5) * inv), tx1 = (int)((*i1 - 0.5) * inv);
  int ty0 = (int)((*j0 + 0.5) * inv), ty1 = (int)((*j1 - 0.5) * inv);
  int nx = tx1 - tx0 + 1, n = nx * (ty1 - ty0 + 1);
  int me = (int)(threadIdx.x + threadIdx.y * blockDim.x);
  int on = me < n && tiles.on[tx0 + me % nx + (ty0 + me / nx) * tiles.nx];
  return __syncthreads_or(on);
}

/* Stores the fluxes of ALONG x LINES faces from shared face (lo_face, lo_line) of one axis, and
 * the sources of the cells whose low face they are, into the part's arrays. */
template <int ALONG, int LINES>
__device__ static void tile_store_faces(const tile_t *t, const swe_arrays *g, int64_t origin,
                                        int x_axis, int n_faces, int n_lines) {
  WINDOW_FOR(n, ALONG * LINES) {
    int a = RING + n % ALONG, b = RING + n / ALONG;
    if (a - RING > n_faces || b - RING >= n_lines)
      continue;
    int c = x_axis ? a + b * SH_ROW : b + a * SH_ROW, i, j;
    tile_cell(t, c, &i, &j);
    int64_t gc = origin + i + (int64_t)j * g->row;
    ts_real *const *flux = x_axis ? g->fx : g->fy;
    const ts_real *const *sflux = x_axis ? t->a.fx : t->a.fy;
    flux[0][gc] = sflux[0][c];
    flux[1][gc] = sflux[1][c];
    flux[2][gc] = sflux[2][c];
    if (a - RING < n_faces)
      (x_axis ? g->src_x : g->src_y)[gc] = (x_axis ? t->a.src_x : t->a.src_y)[c];
  }
}

/* The first stage's fluxes of the faces of the cells of r (stored, with the cells' bed sources,
 * and the characteristic speeds of the tile and its first ring, for k_limit and k_update_first),
 * and the largest wave speeds (x, y) over the faces that the CPU sweep counts: faces of owned
 * cells, where the tile of the high cell (inside r) or of the low cell (inside r) is active. */
static __global__ void __launch_bounds__(TILE_THREADS, SWE_TILE_BLOCKS)
    k_fluxes(swe_arrays g, swe_consts k, region_t r, region_t own, int64_t origin, int nx, int ny,
             swe_bits *amax, tiles_t tiles, const swe_clock *clock) {
  extern __shared__ __align__(16) char shared_mem[];
  int i0, i1, j0, j1;
  if (clock->idle || !tile_place(r, tiles, &i0, &i1, &j0, &j1))
    return;
  tile_t t = tile_layout(shared_mem, i0, j0);
  tile_load(&t, &g, &g, NULL, tiles, &k, origin, nx, ny);
  /* Faces of r and of owned cells, in shared coordinates: x faces [fx0, fx1] on rows
   * [lx0, lx1), y faces [fy0, fy1] on columns [ly0, ly1); r's own faces [rx0, rx1], [ry0, ry1]. */
  int ox = i0 - RING, oy = j0 - RING;
  int rx0 = r.i0 - ox, rx1 = r.i1 - ox, ry0 = r.j0 - oy, ry1 = r.j1 - oy;
  int fx0 = max(r.i0, own.i0) - ox, fx1 = min(r.i1, own.i1) - ox;
  int lx0 = max(r.j0, own.j0) - oy, lx1 = min(r.j1, own.j1) - oy;
  int fy0 = max(r.j0, own.j0) - oy, fy1 = min(r.j1, own.j1) - oy;
  int ly0 = max(r.i0, own.i0) - ox, ly1 = min(r.i1, own.i1) - ox;
  auto counts_x = [&](int a, int b, int c, int step) {
    int on = (a < rx1 && t.on[c]) || (a > rx0 && t.on[c - step]);
    return on && a >= fx0 && a <= fx1 && b >= lx0 && b < lx1;
  };
  auto counts_y = [&](int a, int b, int c, int step) {
    int on = (a < ry1 && t.on[c]) || (a > ry0 && t.on[c - step]);
    return on && a >= fy0 && a <= fy1 && b >= ly0 && b < ly1;
  };
  /* characteristic speeds of the window's cells among the tile and its first ring */
  WINDOW_FOR(n, (TILE_W + 2) * (TILE_H + 2)) {
    int a = RING - 1 + n % (TILE_W + 2), b = RING - 1 + n / (TILE_W + 2), c = a + b * SH_ROW;
    int i = ox + a, j = oy + b;
    if (i >= 0 && i < nx && j >= 0 && j < ny)
      g.char_speed[origin + i + (int64_t)j * g.row] = t.a.char_speed[c];
  }
  int w = i1 - i0, h = j1 - j0;
  /* the faces of the tile's cells: x faces [RING, RING + TILE_W], y faces [RING, RING + TILE_H] */
  window_reconstruct<TILE_W + 2, TILE_H, SH_ROW>(&t, &k, 1, RING - 1, RING);
  __syncthreads();
  ts_real ax = window_faces<TILE_W + 1, TILE_H, SH_ROW>(&t, &k, 1, RING, RING, counts_x);
  __syncthreads();
  WINDOW_FOR(n, TILE_W * TILE_H) {
    int c = (RING + n % TILE_W) + (RING + n / TILE_W) * SH_ROW;
    t.a.src_x[c] = t.a.src_x[c] - t.corr[c + 1];
  }
  window_reconstruct<TILE_H + 2, TILE_W, SH_ROW>(&t, &k, 0, RING - 1, RING);
  __syncthreads();
  tile_store_faces<TILE_W + 1, TILE_H>(&t, &g, origin, 1, w, h);
  ts_real ay = window_faces<TILE_H + 1, TILE_W, SH_ROW>(&t, &k, 0, RING, RING, counts_y);
  __syncthreads();
  WINDOW_FOR(n, TILE_W * TILE_H) {
    int c = (RING + n % TILE_W) + (RING + n / TILE_W) * SH_ROW;
    t.a.src_y[c] = t.a.src_y[c] - t.corr[c + SH_ROW];
  }
  __syncthreads();
  tile_store_faces<TILE_H + 1, TILE_W>(&t, &g, origin, 0, h, w);
  block_max(ax, amax);
  block_max(ay, amax + 1);
}

/* One stage on the tile: fluxes of the faces of the tile and its first ring, limiters and speed
 * caps of those cells, then the update of the tile's active cells in active early-exit tiles,
 * from state `in` into `out` (see the head of this section). */
static __global__ void __launch_bounds__(TILE_THREADS, SWE_TILE_BLOCKS)
    k_stage(swe_arrays in, swe_arrays out, swe_consts k, region_t r, int64_t origin, int nx, int ny,
            swe_clock *clock, int stage, inflow_t inflow, tiles_t tiles, region_t own,
            swe_maps maxima) {
  extern __shared__ __align__(16) char shared_mem[];
  int i0, i1, j0, j1;
  if (clock->idle || !tile_place(r, tiles, &i0, &i1, &j0, &j1))
    return;
  ts_real dt = (ts_real)clock->dt;
  maxima.t = clock->t_after;
  maxima.dt = clock->dt;
  tile_t t = tile_layout(shared_mem, i0, j0);
  tile_load(&t, &in, &in, stage == 1 ? &out : NULL, tiles, &k, origin, nx, ny);
  auto none = [](int, int, int, int) { return 0; };
  /* The cells of the tile and its first ring: [RING - 1, RING + TILE_W] along x. */
  const int cells_x = TILE_W + 2, cells_y = TILE_H + 2;
  window_reconstruct<TILE_W + 4, cells_y, SH_ROW>(&t, &k, 1, RING - 2, RING - 1);
  __syncthreads();
  window_faces<TILE_W + 3, cells_y, SH_ROW>(&t, &k, 1, RING - 1, RING - 1, none);
  __syncthreads();
  /* x sources completed (the corrections are then free for y) */
  WINDOW_FOR(n, cells_x * cells_y) {
    int c = (RING - 1 + n % cells_x) + (RING - 1 + n / cells_x) * SH_ROW;
    t.a.src_x[c] = t.a.src_x[c] - t.corr[c + 1];
  }
  window_reconstruct<TILE_H + 4, cells_x, SH_ROW>(&t, &k, 0, RING - 2, RING - 1);
  __syncthreads();
  window_faces<TILE_H + 3, cells_x, SH_ROW>(&t, &k, 0, RING - 1, RING - 1, none);
  __syncthreads();
  /* Inflow sides: their boundary faces carry the prescribed discharge. */
  int64_t sh_origin = (int64_t)(RING - i0) + (int64_t)(RING - j0) * SH_ROW;
  for (int side = 0; side < 4 && inflow.any; side++) {
    if (!inflow.on[side])
      continue;
    int x_side = side < 2, face = side == 0 ? 0 : (side == 1 ? nx : (side == 2 ? 0 : ny));
    int f_lo = x_side ? i0 - 1 : j0 - 1, f_hi = x_side ? i1 + 1 : j1 + 1;
    int l_lo = x_side ? max(j0 - 1, 0) : max(i0 - 1, 0);
    int l_hi = x_side ? min(j1 + 1, ny) : min(i1 + 1, nx);
    if (face < f_lo || face > f_hi)
      continue;
    WINDOW_FOR(n, l_hi - l_lo) {
      swe_impose_side_flux(&t.a, sh_origin, nx, ny, side, l_lo + n,
                           (ts_real)clock->qunit[stage][side]);
    }
  }
  if (inflow.any)
    __syncthreads();
  /* Limiters and speed caps of the cells of the window among the tile and its first ring (the
   * others keep a limiter of 1, like the CPU's ghost cells); y sources completed. */
  WINDOW_FOR(n, cells_x * cells_y) {
    int a = RING - 1 + n % cells_x, b = RING - 1 + n / cells_x;
    int c = a + b * SH_ROW;
    int i = i0 - RING + a, j = j0 - RING + b;
    t.a.src_y[c] = t.a.src_y[c] - t.corr[c + SH_ROW];
    if (i >= 0 && i < nx && j >= 0 && j < ny)
      swe_drain_cell(&t.a, &k, c, dt);
    else
      t.a.drain[c] = SWE_R(1);
  }
  __syncthreads();
  int any_bad = 0;
  WINDOW_FOR(n, TILE_W * TILE_H) {
    int i = i0 + n % TILE_W, j = j0 + n / TILE_W;
    int cf = (RING + n % TILE_W) + (RING + n / TILE_W) * SH_ROW;
    if (i < i1 && j < j1 && t.a.active[cf] && t.on[cf]) {
      swe_idx c = (swe_idx)(origin + i + (int64_t)j * out.row);
      any_bad |= swe_update_cell(&out, &t.a, &k, c, cf, dt, stage);
      /* the last stage records the step's maxima of the owned cells (k_maxima's work) */
      if (i >= own.i0 && i < own.i1 && j >= own.j0 && j < own.j1)
        swe_record_cell(&maxima, c, out.w[c], t.a.bed[cf], out.hu[c], out.hv[c]);
    }
  }
  if (__syncthreads_or(any_bad) && threadIdx.x == 0 && threadIdx.y == 0)
    clock->bad = 1;
}

static dim3 tiles_for(region_t r) {
  return dim3((unsigned)((r.i1 - r.i0 + TILE_W - 1) / TILE_W),
              (unsigned)((r.j1 - r.j0 + TILE_H - 1) / TILE_H));
}

void SWE_TILES_SETUP(void) {
  int shared = (int)tile_shared_bytes();
  check(cudaFuncSetAttribute(k_stage, cudaFuncAttributeMaxDynamicSharedMemorySize, shared),
        "shared memory of the stage kernel");
  check(cudaFuncSetAttribute(k_fluxes, cudaFuncAttributeMaxDynamicSharedMemorySize, shared),
        "shared memory of the flux kernel");
}

void SWE_TILES_FLUXES(swe_arrays g, swe_consts k, region_t r, region_t own, int64_t origin, int nx,
                      int ny, swe_bits *amax, tiles_t tiles, const swe_clock *clock,
                      cudaStream_t stream) {
  k_fluxes<<<tiles_for(r), tile_threads, tile_shared_bytes(), stream>>>(g, k, r, own, origin, nx,
                                                                        ny, amax, tiles, clock);
}

void SWE_TILES_STAGE(swe_arrays in, swe_arrays out, swe_consts k, region_t r, int64_t origin,
                     int nx, int ny, swe_clock *clock, int stage, inflow_t inflow, tiles_t tiles,
                     region_t own, swe_maps maxima, cudaStream_t stream) {
  k_stage<<<tiles_for(r), tile_threads, tile_shared_bytes(), stream>>>(
      in, out, k, r, origin, nx, ny, clock, stage, inflow, tiles, own, maxima);
}
