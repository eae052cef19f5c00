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
 * with the cells in registers) on large ones (ts_swe_gpu_kernels). Each cell's bed
 * source is completed with its high face's correction in the order the CPU sweep uses, and the
 * build turns off fused multiply-add, so both backends compute the same values. Halo copies
 * between the GPUs of one process are queued on per-device streams (ts_gpu_copy_box). */
#include <cuda_runtime.h>

#include <limits.h>
#include <math.h>
#include <stdio.h>

extern "C" {
#include "physics/swe/swe_internal.h"
#include "tessera/gpu.h"
#include "tessera/transport.h"
}

#if TS_REAL_DOUBLE
typedef double ts_real;
typedef unsigned long long swe_bits;
#define SWE_SQRT sqrt
#define SWE_CBRT cbrt
#define SWE_CUDA_KERNELS swe_kernels_cuda_double
#define SWE_CPU_KERNELS swe_kernels_double
#define SWE_CUDA_ATTACH swe_cuda_attach_double
#define SWE_CUDA_FIELDS swe_cuda_fields_double
__device__ static inline swe_bits swe_to_bits(ts_real x) {
  return (swe_bits)__double_as_longlong(x);
}
#else
typedef float ts_real;
typedef unsigned int swe_bits;
#define SWE_SQRT sqrtf
#define SWE_CBRT cbrtf
#define SWE_CUDA_KERNELS swe_kernels_cuda_float
#define SWE_CPU_KERNELS swe_kernels_float
#define SWE_CUDA_ATTACH swe_cuda_attach_float
#define SWE_CUDA_FIELDS swe_cuda_fields_float
__device__ static inline swe_bits swe_to_bits(ts_real x) { return __float_as_uint(x); }
#endif

__host__ __device__ static inline ts_real swe_from_bits(swe_bits b) {
  ts_real x;
  memcpy(&x, &b, sizeof x);
  return x;
}

static inline swe_bits swe_to_bits_host(ts_real x) {
  swe_bits b;
  memcpy(&b, &x, sizeof b);
  return b;
}

typedef int swe_idx;          /* GPU parts hold fewer than 2^31 elements per array */
enum { SWE_PHASE_RING = 64 }; /* timed phases in flight per part (about 13 steps) */
#include "physics/swe/swe_stage.h"

/* The clock of a part's steps, in device memory, so that steps run without the host: the step
 * being taken, the target and stop time of the run of steps (swe_kernels.begin_steps), the
 * inflow unit discharges (m2/s, unsigned) of both stages, and the run's state. */
struct swe_clock {
  double t, dt, t_after;
  double target, stop;
  double qunit[2][4];
  int idle;      /* the run has ended: the passes of later steps do nothing */
  int bad;       /* a stage produced a non-finite value */
  int collapsed; /* the time step collapsed (dt is its value) */
  int steps;     /* steps taken in the run */
};

/* The inflow hydrographs of the global sides on the device, for the stage times the device
 * computes: on where the side is an inflow with active cells (else its discharge is 0). */
struct hydro_t {
  const double *t[4], *q[4];
  int n[4], on[4];
  double width[4]; /* of the side's active cells (m) */
};

__device__ static inline double inflow_unit(const hydro_t *h, int side, double t) {
  if (!h->on[side])
    return 0;
  return swe_hydrograph(h->t[side], h->q[side], h->n[side], t) / h->width[side];
}

/* Cells whose state and maxima are recorded after every step of a run: per step a row of 4n
 * doubles (maxima) then 5n reals (w, hu, hv, u, v), as k_gather lays them out. */
struct watch_t {
  const int64_t *cells;
  int n;
  char *rows;
};

__host__ __device__ static inline size_t watch_row_bytes(int n) {
  size_t bytes = (size_t)n * (4 * sizeof(double) + 5 * sizeof(ts_real));
  return (bytes + 7) & ~(size_t)7; /* rows start at doubles */
}

/* Device side of a part: a device array for every host array of the layout, the maxima, the
 * wave-speed maxima, the clock and the step log (with pinned host copies), the early-exit
 * tiles, the probe and watch buffers, the graph of a step, and the part's stream. */
typedef struct swe_gpu {
  swe_arrays dev; /* device pointers, same layout as the host arrays */
  unsigned char *active;
  double *max[4];                           /* max_h, max_speed, arrival, max_eta */
  double *rec[5];                           /* duration, max_hazard, loss, inflow, outflow */
  ts_real *rain, *loss_initial, *loss_rate; /* NULL where the host's are */
  double *rain_rate; /* the current frame's uniform rate (m/s), then its longest step (s) */
  swe_bits *amax;    /* 2 */
  swe_clock *clock, *clock_host;
  double *log, *log_host; /* per step of a run: time after it, then its length */
  hydro_t hydro;
  double *hydro_mem;
  unsigned char *tile_wet, *tile_on; /* early exit: per tile of the window */
  int mid_step;                      /* the state of the stage lies in (w0, hu0, hv0) */
  int maxima_done;                   /* the last stage recorded the step's maxima */
  char *probe_dev, *probe_host;      /* gather buffers of to_host_cells (pinned on the host) */
  swe_bits *amax_host;               /* pinned: the wave speeds read back or given */
  size_t probe_bytes;
  watch_t watch;         /* rows of TS_SWE_ADVANCE_MAX steps */
  int64_t *watch_list;   /* the watched cells on the host */
  char *watch_host;      /* pinned copy of the rows */
  int inflow_on[4];      /* inflow sides of the part */
  cudaGraphExec_t graph; /* the passes of one step (device runs), NULL until recorded */
  cudaStream_t stream;
  int sms; /* multiprocessors of the device */
  /* Phases of host-driven steps timed on the stream (the load balancer's cost): a ring of
   * start/stop event pairs, read back when full or asked, and the seconds read so far. */
  cudaEvent_t phase_events[2 * SWE_PHASE_RING];
  int phase_head, phase_pending;
  double busy_s;
} swe_gpu;

/* Where the kernels find the activity of a cell's tile (early exit). */
struct tiles_t {
  const unsigned char *on;
  int size, nx;
};

__device__ static inline int tile_on(tiles_t t, int i, int j) {
  return t.on[i / t.size + (j / t.size) * t.nx];
}

static swe_gpu *gpu_of(const swe_part *s) { return (swe_gpu *)s->gpu; }

/* The part's device state, with its GPU made current for this thread (parts run on the OpenMP
 * threads, and each thread has its own current device). */
static swe_gpu *use(const swe_part *s) {
  cudaSetDevice(s->device);
  return gpu_of(s);
}

static void check(cudaError_t e, const char *what) { ts_gpu_check((int)e, what); }

/* ------------------------------------------------------------------ kernels */

struct region_t {
  int i0, i1, j0, j1;
};

__device__ static inline int cell_of(region_t r, int extra_i, int extra_j, int *i, int *j) {
  *i = r.i0 + (int)(blockIdx.x * blockDim.x + threadIdx.x);
  *j = r.j0 + (int)(blockIdx.y * blockDim.y + threadIdx.y);
  return *i < r.i1 + extra_i && *j < r.j1 + extra_j;
}

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

__device__ static inline void block_max(ts_real v, swe_bits *out) {
  for (int o = 16; o > 0; o /= 2)
    v = swe_max(v, __shfl_down_sync(0xffffffffu, v, o));
  if ((threadIdx.x & 31) == 0 && v > 0)
    atomicMax(out, swe_to_bits(v));
}

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
#define RING SWE_STAGE_REACH
#define SH_ROW (TILE_W + 2 * RING + 1) /* the ring, and one more corner */
#define SH_COLS (TILE_H + 2 * RING + 1)
#define SH_PLANE (SH_ROW * SH_COLS)
#define SH_REALS 14

/* A reconstructed side without its implied bed, which is w - h (swe_reconstruct). */
struct side_t {
  ts_real w, h, u, v;
};

__device__ static inline side_t side_pack(swe_side s) { return side_t{s.w, s.h, s.u, s.v}; }
__device__ static inline swe_side side_unpack(side_t s) {
  return swe_side{s.w, s.w - s.h, s.h, s.u, s.v};
}

/* The shared-memory copy of a tile: the arrays of swe_arrays in the tile's layout (row SH_ROW),
 * the reconstructed sides of each cell along the axis being computed, and per cell whether it
 * lies in the window in a tile that early exit computes. */
struct tile_t {
  swe_arrays a;
  ts_real *corr;
  side_t *lo, *hi;
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

#define TILE_FOR(e, n)                                                                             \
  for (int e = (int)(threadIdx.x + threadIdx.y * blockDim.x); e < (n);                             \
       e += (int)(blockDim.x * blockDim.y))

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
  TILE_FOR(e, SH_ROW + SH_COLS) {
    int col = e < SH_ROW, n = col ? e : e - SH_ROW, at = (col ? t->i0 : t->j0) - RING + n;
    int inside = at >= 0 && at < (col ? nx : ny);
    (col ? t->tile_col : t->tile_row)[n] = inside ? at / tiles.size : -1;
  }
  __syncthreads();
  TILE_FOR(e, SH_PLANE) {
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
  TILE_FOR(e, SH_PLANE) { swe_cell_velocity(&t->a, k, e); }
  __syncthreads();
}

/* Reconstructs, along one axis, ALONG x LINES cells of the tile from shared cell (lo_cell,
 * lo_line) (along, across the axis); inactive cells get zero sides (faces ignore them). The
 * extents are constants, the same for a tile cut short by its region's end (the cells past it
 * are computed for nothing). Without FULL only what the wave speeds need is kept. */
template <int ALONG, int LINES, bool FULL>
__device__ static void tile_reconstruct(tile_t *t, const swe_consts *k, int x_axis, int lo_cell,
                                        int lo_line) {
  int step = x_axis ? 1 : SH_ROW, corner_step = x_axis ? SH_ROW : 1;
  TILE_FOR(n, ALONG * LINES) {
    int a = lo_cell + n % ALONG, b = lo_line + n / ALONG;
    int c = x_axis ? a + b * SH_ROW : b + a * SH_ROW;
    swe_side lo = {0, 0, 0, 0, 0}, hi = lo;
    if (t->a.active[c])
      swe_reconstruct_cell(&t->a, k, c, step, x_axis,
                           swe_face_bed(&t->a, c - step, step, corner_step),
                           swe_face_bed(&t->a, c, step, corner_step), &lo, &hi);
    if (!FULL)
      lo.v = hi.v = 0;
    t->lo[c] = side_pack(lo);
    t->hi[c] = side_pack(hi);
  }
}

/* Faces of one axis between shared cells, ALONG x LINES from face (lo_face, lo_line): the face
 * at c lies between c - step and c. With FULL, stores the flux, the low cell's correction, and
 * the high cell's correction plus its bed source in src (completed with the high face's
 * correction later). Returns the largest wave speed of the faces that `counts` accepts. */
template <int ALONG, int LINES, bool FULL, typename Counts>
__device__ static ts_real tile_faces(tile_t *t, const swe_consts *k, int x_axis, int lo_face,
                                     int lo_line, Counts counts) {
  int step = x_axis ? 1 : SH_ROW;
  ts_real *f0 = x_axis ? t->a.fx[0] : t->a.fy[0], *f1 = x_axis ? t->a.fx[1] : t->a.fy[1];
  ts_real *f2 = x_axis ? t->a.fx[2] : t->a.fy[2], *src = x_axis ? t->a.src_x : t->a.src_y;
  ts_real amax = 0;
  TILE_FOR(n, ALONG * LINES) {
    int a = lo_face + n % ALONG, b = lo_line + n / ALONG;
    int c = x_axis ? a + b * SH_ROW : b + a * SH_ROW, cl = c - step;
    int act_l = t->a.active[cl], act_h = t->a.active[c];
    swe_side lo_h = side_unpack(t->lo[c]);
    ts_real f[3], corr_l, corr_h;
    ts_real speed =
        swe_face_between(k, act_l, act_h, side_unpack(t->hi[cl]), lo_h, f, &corr_l, &corr_h);
    if (FULL) {
      f0[c] = f[0];
      f1[c] = f[1];
      f2[c] = f[2];
      t->corr[c] = corr_l;
      src[c] = act_h ? corr_h + swe_bed_source(lo_h, side_unpack(t->hi[c]), k->g) : SWE_R(0);
    }
    if (counts(a, b, c, step))
      amax = swe_max(amax, speed);
  }
  return amax;
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
  TILE_FOR(n, ALONG * LINES) {
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
  TILE_FOR(n, (TILE_W + 2) * (TILE_H + 2)) {
    int a = RING - 1 + n % (TILE_W + 2), b = RING - 1 + n / (TILE_W + 2), c = a + b * SH_ROW;
    int i = ox + a, j = oy + b;
    if (i >= 0 && i < nx && j >= 0 && j < ny)
      g.char_speed[origin + i + (int64_t)j * g.row] = t.a.char_speed[c];
  }
  int w = i1 - i0, h = j1 - j0;
  /* the faces of the tile's cells: x faces [RING, RING + TILE_W], y faces [RING, RING + TILE_H] */
  tile_reconstruct<TILE_W + 2, TILE_H, true>(&t, &k, 1, RING - 1, RING);
  __syncthreads();
  ts_real ax = tile_faces<TILE_W + 1, TILE_H, true>(&t, &k, 1, RING, RING, counts_x);
  __syncthreads();
  TILE_FOR(n, TILE_W * TILE_H) {
    int c = (RING + n % TILE_W) + (RING + n / TILE_W) * SH_ROW;
    t.a.src_x[c] = t.a.src_x[c] - t.corr[c + 1];
  }
  tile_reconstruct<TILE_H + 2, TILE_W, true>(&t, &k, 0, RING - 1, RING);
  __syncthreads();
  tile_store_faces<TILE_W + 1, TILE_H>(&t, &g, origin, 1, w, h);
  ts_real ay = tile_faces<TILE_H + 1, TILE_W, true>(&t, &k, 0, RING, RING, counts_y);
  __syncthreads();
  TILE_FOR(n, TILE_W * TILE_H) {
    int c = (RING + n % TILE_W) + (RING + n / TILE_W) * SH_ROW;
    t.a.src_y[c] = t.a.src_y[c] - t.corr[c + SH_ROW];
  }
  __syncthreads();
  tile_store_faces<TILE_H + 1, TILE_W>(&t, &g, origin, 0, h, w);
  block_max(ax, amax);
  block_max(ay, amax + 1);
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

/* Inflow sides of a stage (their boundary faces carry the clock's unit discharge). */
struct inflow_t {
  int on[4];
  int any;
};

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
  tile_reconstruct<TILE_W + 4, cells_y, true>(&t, &k, 1, RING - 2, RING - 1);
  __syncthreads();
  tile_faces<TILE_W + 3, cells_y, true>(&t, &k, 1, RING - 1, RING - 1, none);
  __syncthreads();
  /* x sources completed (the corrections are then free for y) */
  TILE_FOR(n, cells_x * cells_y) {
    int c = (RING - 1 + n % cells_x) + (RING - 1 + n / cells_x) * SH_ROW;
    t.a.src_x[c] = t.a.src_x[c] - t.corr[c + 1];
  }
  tile_reconstruct<TILE_H + 4, cells_x, true>(&t, &k, 0, RING - 2, RING - 1);
  __syncthreads();
  tile_faces<TILE_H + 3, cells_x, true>(&t, &k, 0, RING - 1, RING - 1, none);
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
    TILE_FOR(n, l_hi - l_lo) {
      swe_impose_side_flux(&t.a, sh_origin, nx, ny, side, l_lo + n,
                           (ts_real)clock->qunit[stage][side]);
    }
  }
  if (inflow.any)
    __syncthreads();
  /* Limiters and speed caps of the cells of the window among the tile and its first ring (the
   * others keep a limiter of 1, like the CPU's ghost cells); y sources completed. */
  TILE_FOR(n, cells_x * cells_y) {
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
  TILE_FOR(n, TILE_W * TILE_H) {
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

/* ------------------------------------------------------------------ the row engine
 *
 * A warp computes a stage on a strip of ROW_OUT columns and a segment of rows, marching up the
 * rows with the cells in registers: each lane holds one column of the strip or of its ring of
 * RING columns on either side (ROW_OUT = 32 - 2 RING). Neighbours along x come from the next
 * lanes (warp shuffles), neighbours along y from the rows the lane keeps. The iteration that
 * loads row t reconstructs row t - 1 along y and computes the face below it, reconstructs row
 * t - 2 along x and computes its faces, the limiter of row t - 2 and the update of row t - 3,
 * each with the stage functions of swe_stage.h on windows of a few registers: the same values
 * as the CPU sweep, without shared memory or block barriers. Lanes whose ring reaches past the
 * warp compute values nobody uses. */
#define ROW_OUT (32 - 2 * RING)
#define ROW_WARPS 4
/* blocks per multiprocessor: float at most 128 registers (5.28 Gcells/s at 8192^2 on an H100,
 * against 4.90 with the 149 the compiler takes); double keeps its registers */
#if TS_REAL_DOUBLE
#define ROW_MIN_BLOCKS 1
#else
#define ROW_MIN_BLOCKS 4
#endif
static const dim3 row_threads(32, ROW_WARPS);

/* A loaded cell: state, bed, velocities, characteristic speed, activity, and whether it lies in
 * the window in an early-exit tile that is computed. */
struct rcell_t {
  ts_real w, hu, hv, bed, u, v, cs;
  int act, on;
};

__device__ static inline ts_real from_right(ts_real v) {
  return __shfl_down_sync(0xffffffffu, v, 1);
}
__device__ static inline ts_real from_left(ts_real v) { return __shfl_up_sync(0xffffffffu, v, 1); }
__device__ static inline int from_right(int v) { return __shfl_down_sync(0xffffffffu, v, 1); }
__device__ static inline int from_left(int v) { return __shfl_up_sync(0xffffffffu, v, 1); }

/* The cell of the next lane to the right (dir 1) or left (dir -1). */
__device__ static inline rcell_t rcell_next(rcell_t c, int dir) {
  rcell_t n;
  n.w = dir > 0 ? from_right(c.w) : from_left(c.w);
  n.hu = dir > 0 ? from_right(c.hu) : from_left(c.hu);
  n.hv = dir > 0 ? from_right(c.hv) : from_left(c.hv);
  n.bed = dir > 0 ? from_right(c.bed) : from_left(c.bed);
  n.u = dir > 0 ? from_right(c.u) : from_left(c.u);
  n.v = dir > 0 ? from_right(c.v) : from_left(c.v);
  n.cs = dir > 0 ? from_right(c.cs) : from_left(c.cs);
  n.act = dir > 0 ? from_right(c.act) : from_left(c.act);
  n.on = dir > 0 ? from_right(c.on) : from_left(c.on);
  return n;
}

/* The high side of the cell of the lane to the left (its implied bed is w - h). */
__device__ static inline swe_side side_from_left(swe_side s) {
  side_t p = side_pack(s);
  return side_unpack(side_t{from_left(p.w), from_left(p.h), from_left(p.u), from_left(p.v)});
}

/* Cell (i, j) of the part's window as loaded, before its velocities: state, bed, the bed of
 * its low corner, activity, early exit. */
struct rraw_t {
  ts_real w, hu, hv, bed, corner;
  int act, on;
};

/* Loads cell (i, j) as tile_load does (from `start` in skipped tiles of the second stage; cells
 * outside the padded layout are inactive). tx: the early-exit tile column of i. */
__device__ static inline rraw_t row_fetch(const swe_arrays *g, const swe_arrays *in,
                                          const swe_arrays *start, tiles_t tiles, int64_t origin,
                                          int nx, int ny, int i, int j, int tx) {
  int inside = i >= -SWE_GHOST && i <= nx + SWE_GHOST && j >= -SWE_GHOST && j <= ny + SWE_GHOST;
  int window = i >= 0 && i < nx && j >= 0 && j < ny;
  int on = window && tiles.on[tx + (j / tiles.size) * tiles.nx];
  const swe_arrays *from = start && window && !on ? start : in;
  int64_t c = origin + i + (int64_t)j * g->row;
  if (!inside)
    return rraw_t{0, 0, 0, 0, 0, 0, on};
  return rraw_t{from->w[c], from->hu[c], from->hv[c], g->bed[c], g->corner[c], g->active[c], on};
}

/* A loaded cell with its velocities (swe_cell_velocity on a window of one cell). */
__device__ static inline rcell_t row_cell(const swe_consts *k, rraw_t r) {
  ts_real w[1] = {r.w}, hu[1] = {r.hu}, hv[1] = {r.hv}, bed[1] = {r.bed}, u[1], v[1], cs[1];
  swe_arrays one = {};
  one.w = w, one.hu = hu, one.hv = hv, one.bed = bed, one.u = u, one.v = v, one.char_speed = cs;
  swe_cell_velocity(&one, k, 0);
  return rcell_t{r.w, r.hu, r.hv, r.bed, u[0], v[0], cs[0], r.act, r.on};
}

/* What the update of a cell reads of the output arrays and the flood maps, fetched an iteration
 * ahead: the state at the step's start, the surface carry, the friction coefficient, and the
 * maps (depth, speed, arrival, surface, duration, hazard). Fetched at the update instead, the
 * maps cost 11 % at 8192^2 float on an H100 (4.27 against 4.81 Gcells/s, same call). */
struct rkeep_t {
  ts_real w0, hu0, hv0, carry, friction;
  double max_h, max_speed, arrival, max_eta, duration, hazard;
};

__device__ static inline rkeep_t row_fetch_kept(const swe_arrays *out, const swe_maps *m, int64_t c,
                                                int maxima) {
  rkeep_t r = {};
  r.w0 = out->w0[c], r.hu0 = out->hu0[c], r.hv0 = out->hv0[c], r.carry = out->w_carry[c];
  r.friction = out->friction ? out->friction[c] : SWE_R(0);
  if (maxima)
    r.max_h = m->h[c], r.max_speed = m->speed[c], r.arrival = m->arrival[c], r.max_eta = m->eta[c],
    r.duration = m->duration[c], r.hazard = m->hazard[c];
  return r;
}

/* The sides of cell m along an axis, from its neighbours lo and hi (tile_reconstruct: an
 * inactive cell gets zero sides). */
__device__ static inline void row_reconstruct(const swe_consts *k, rcell_t lo, rcell_t m,
                                              rcell_t hi, int x_axis, ts_real face_lo,
                                              ts_real face_hi, swe_side *s_lo, swe_side *s_hi) {
  *s_lo = *s_hi = swe_side{0, 0, 0, 0, 0};
  if (!m.act)
    return;
  int act[3] = {lo.act, m.act, hi.act};
  ts_real w[3] = {lo.w, m.w, hi.w}, bed[3] = {lo.bed, m.bed, hi.bed};
  ts_real hu[3] = {lo.hu, m.hu, hi.hu}, hv[3] = {lo.hv, m.hv, hi.hv};
  ts_real u[3] = {lo.u, m.u, hi.u}, v[3] = {lo.v, m.v, hi.v};
  if (x_axis)
    swe_reconstruct_mirrored(act, w, bed, hu, hv, u, v, k, face_lo, face_hi, s_lo, s_hi);
  else
    swe_reconstruct_mirrored(act, w, bed, hv, hu, v, u, k, face_lo, face_hi, s_lo, s_hi);
}

/* The face between a low cell (active act_a, high side hi_a) and a high cell (act_b, sides lo_b
 * and hi_b), as tile_faces computes it: its flux, the low cell's pressure correction, and the
 * high cell's source before its own high face's correction. Returns the wave speed. */
__device__ static inline ts_real row_face(const swe_consts *k, int act_a, int act_b, swe_side hi_a,
                                          swe_side lo_b, swe_side hi_b, ts_real f[3],
                                          ts_real *corr_a, ts_real *src_b) {
  ts_real corr_b;
  ts_real speed = swe_face_between(k, act_a, act_b, hi_a, lo_b, f, corr_a, &corr_b);
  *src_b = act_b ? corr_b + swe_bed_source(lo_b, hi_b, k->g) : SWE_R(0);
  return speed;
}

/* Outflow limiter and speed cap of cell m (swe_drain_cell on a window of registers): mass
 * fluxes of its west, east, south and north faces, characteristic speeds of its neighbours. */
__device__ static inline void row_drain(const swe_consts *k, ts_real dt, rcell_t m, ts_real fx_w,
                                        ts_real fx_e, ts_real fy_s, ts_real fy_n, ts_real cs_w,
                                        ts_real cs_e, ts_real cs_s, ts_real cs_n, ts_real *drain,
                                        ts_real *cap) {
  ts_real fx[9] = {}, fy[9] = {}, cs[9] = {}, w[9] = {}, bed[9] = {}, dr[9] = {}, sc[9] = {};
  fx[4] = fx_w, fx[5] = fx_e, fy[4] = fy_s, fy[7] = fy_n;
  cs[1] = cs_s, cs[3] = cs_w, cs[4] = m.cs, cs[5] = cs_e, cs[7] = cs_n;
  w[4] = m.w, bed[4] = m.bed;
  swe_arrays a = {};
  a.fx[0] = fx, a.fy[0] = fy, a.char_speed = cs, a.w = w, a.bed = bed, a.drain = dr;
  a.speed_cap = sc, a.row = 3;
  swe_drain_cell(&a, k, 4, dt);
  *drain = dr[4];
  *cap = sc[4];
}

/* The fluxes, limiters and sources around cell m, for its update (a window of registers laid
 * out like the part's arrays with rows of 3, m at 4). */
struct row_window_t {
  ts_real w[9], hu[9], hv[9], bed[9], drain[9], cap[9], fx[3][9], fy[3][9], src_x[9], src_y[9];
};

/* Update of cell m of the second stage into `out` at c (swe_update_cell, on windows of
 * registers with what `kept` fetched), and its maxima where `maxima`; returns nonzero for a
 * non-finite value. */
__device__ static inline int row_update(const swe_arrays *out, const swe_consts *k,
                                        const swe_maps *m, int64_t c, ts_real dt, int stage,
                                        rcell_t cell, rkeep_t kept, int maxima,
                                        const ts_real fx_w[3], const ts_real fx_e[3],
                                        const ts_real fy_s[3], const ts_real fy_n[3], ts_real src_x,
                                        ts_real src_y, ts_real cap, ts_real d_w, ts_real d_e,
                                        ts_real d_s, ts_real d_n, ts_real d_m) {
  row_window_t r = {};
  r.w[4] = cell.w, r.hu[4] = cell.hu, r.hv[4] = cell.hv, r.bed[4] = cell.bed;
  r.drain[1] = d_s, r.drain[3] = d_w, r.drain[4] = d_m, r.drain[5] = d_e, r.drain[7] = d_n;
  r.cap[4] = cap, r.src_x[4] = src_x, r.src_y[4] = src_y;
  for (int q = 0; q < 3; q++) {
    r.fx[q][4] = fx_w[q], r.fx[q][5] = fx_e[q];
    r.fy[q][4] = fy_s[q], r.fy[q][7] = fy_n[q];
  }
  swe_arrays f = {};
  f.w = r.w, f.hu = r.hu, f.hv = r.hv, f.bed = r.bed, f.drain = r.drain, f.speed_cap = r.cap;
  f.src_x = r.src_x, f.src_y = r.src_y, f.row = 3;
  for (int q = 0; q < 3; q++)
    f.fx[q] = r.fx[q], f.fy[q] = r.fy[q];
  ts_real w[1], hu[1], hv[1], w0[1] = {kept.w0}, hu0[1] = {kept.hu0}, hv0[1] = {kept.hv0};
  ts_real carry[1] = {kept.carry}, fric[1] = {kept.friction};
  swe_arrays a = {};
  a.w = w, a.hu = hu, a.hv = hv, a.w0 = w0, a.hu0 = hu0, a.hv0 = hv0, a.w_carry = carry;
  a.friction = out->friction ? fric : NULL, a.start_kept = out->start_kept;
  int bad = swe_update_cell(&a, &f, k, 0, 4, dt, stage);
  out->w[c] = w[0], out->hu[c] = hu[0], out->hv[c] = hv[0], out->w_carry[c] = carry[0];
  if (maxima) {
    double h[1] = {kept.max_h}, sp[1] = {kept.max_speed}, arr[1] = {kept.arrival};
    double eta[1] = {kept.max_eta}, dur[1] = {kept.duration}, haz[1] = {kept.hazard};
    swe_maps one = *m;
    one.h = h, one.speed = sp, one.arrival = arr, one.eta = eta, one.duration = dur;
    one.hazard = haz;
    swe_record_cell(&one, 0, w[0], cell.bed, hu[0], hv[0]);
    if (dur[0] != kept.duration)
      m->duration[c] = dur[0];
    if (haz[0] != kept.hazard)
      m->hazard[c] = haz[0];
    if (h[0] != kept.max_h)
      m->h[c] = h[0];
    if (sp[0] != kept.max_speed)
      m->speed[c] = sp[0];
    if (!(arr[0] == kept.arrival) && !(isnan(arr[0]) && isnan(kept.arrival)))
      m->arrival[c] = arr[0];
    if (!(eta[0] == kept.max_eta) && !(isnan(eta[0]) && isnan(kept.max_eta)))
      m->eta[c] = eta[0];
  }
  return bad;
}

/* Whether an early-exit tile under cells [i0, i1) x [j0, j1) is computed (the whole warp). */
__device__ static int row_any_on(tiles_t tiles, int i0, int i1, int j0, int j1) {
  int tx0 = i0 / tiles.size, tx1 = (i1 - 1) / tiles.size;
  int ty0 = j0 / tiles.size, ty1 = (j1 - 1) / tiles.size;
  int n_x = tx1 - tx0 + 1, n = n_x * (ty1 - ty0 + 1), on = 0;
  for (int e = (int)threadIdx.x; e < n && !on; e += 32)
    on = tiles.on[tx0 + e % n_x + (ty0 + e / n_x) * tiles.nx];
  return __any_sync(0xffffffffu, on);
}

__device__ static inline int within(int x, int lo, int hi) { return x >= lo && x < hi; }

/* A stage on the cells of region r, SEG rows per warp. FUSED: the second stage whole (fluxes,
 * limiters, update from state `in` into `out`, maxima; k_stage's work). Otherwise the first
 * stage's fluxes, sources and characteristic speeds, stored, and its wave speeds (k_fluxes's
 * work). */
template <bool FUSED>
static __global__ void __launch_bounds__(32 * ROW_WARPS, ROW_MIN_BLOCKS)
    k_rows(swe_arrays in, swe_arrays out, swe_consts k, region_t r, region_t own, int64_t origin,
           int nx, int ny, swe_clock *clock, int stage, inflow_t inflow, tiles_t tiles,
           swe_maps maxima, swe_bits *amax, int seg) {
  int io0 = r.i0 + (int)(blockIdx.x * ROW_WARPS + threadIdx.y) * ROW_OUT;
  int jo0 = r.j0 + (int)blockIdx.y * seg;
  if (clock->idle || io0 >= r.i1)
    return;
  int io1 = min(io0 + ROW_OUT, r.i1), jo1 = min(jo0 + seg, r.j1);
  if (!row_any_on(tiles, io0, io1, jo0, jo1))
    return;
  int lane = (int)threadIdx.x, i = io0 - RING + lane;
  int tx = i >= 0 && i < nx ? i / tiles.size : 0;
  int mine = lane >= RING && i < io1; /* an output column */
  ts_real dt = FUSED ? (ts_real)clock->dt : SWE_R(0);
  maxima.t = clock->t_after;
  maxima.dt = clock->dt;
  const swe_arrays *start = FUSED && stage == 1 ? &out : NULL;
  ts_real q_in[4];
  for (int side = 0; side < 4; side++)
    q_in[side] = (ts_real)clock->qunit[stage][side];
  /* faces whose wave speeds count (k_fluxes's rule) */
  int cx0 = max(r.i0, own.i0), cx1 = min(r.i1, own.i1), cy0 = max(r.j0, own.j0);
  int cy1 = min(r.j1, own.j1);
  /* rows t - 1, t - 2, t - 3 and what the lane keeps of them */
  const rcell_t none = {0, 0, 0, 0, 0, 0, 0, 0, 0};
  rcell_t c1 = none, c2 = none, c3 = none;
  ts_real corner1 = 0, corner2 = 0, ybed1 = 0;
  swe_side yh2 = {0, 0, 0, 0, 0};
  ts_real srcy_part2 = 0, srcy3 = 0, srcx3 = 0, d3 = 1, d4 = 1, cap3 = 0;
  ts_real fy2[3] = {0, 0, 0}, fy3[3] = {0, 0, 0}, fx3[3] = {0, 0, 0};
  ts_real ax = 0, ay = 0;
  int bad = 0;
  rraw_t next = row_fetch(&in, &in, start, tiles, origin, nx, ny, i, jo0 - RING, tx);
  rkeep_t kept3 = {}, kept2 = {};
  for (int t = jo0 - RING; t < jo1 + RING; t++) {
    rcell_t c0 = row_cell(&k, next);
    ts_real corner0 = next.corner;
    if (t + 1 < jo1 + RING) /* the next row's loads are in flight during this one */
      next = row_fetch(&in, &in, start, tiles, origin, nx, ny, i, t + 1, tx);
    /* row t - 1 along y and its low face (face t - 1, between rows t - 2 and t - 1) */
    ts_real ybed0 = swe_corner_mean(corner0, from_right(corner0));
    swe_side yl1, yh1;
    row_reconstruct(&k, c2, c1, c0, 0, ybed1, ybed0, &yl1, &yh1);
    ts_real fy1[3], corr_y, srcy_part1;
    ts_real sy = row_face(&k, c2.act, c1.act, yh2, yl1, yh1, fy1, &corr_y, &srcy_part1);
    ts_real srcy2 = srcy_part2 - corr_y;
    /* row t - 2 along x and the low faces of its cells */
    ts_real xbed = swe_corner_mean(corner2, corner1);
    rcell_t left2 = rcell_next(c2, -1), right2 = rcell_next(c2, 1);
    swe_side xl2, xh2;
    row_reconstruct(&k, left2, c2, right2, 1, xbed, from_right(xbed), &xl2, &xh2);
    ts_real fx2[3], corr_x, srcx_part2;
    ts_real sx =
        row_face(&k, left2.act, c2.act, side_from_left(xh2), xl2, xh2, fx2, &corr_x, &srcx_part2);
    ts_real srcx2 = srcx_part2 - from_right(corr_x);
    if (FUSED) {
      /* inflow sides: their boundary faces carry the prescribed discharge */
      int in_x = within(i, 0, nx), row2 = within(t - 2, 0, ny);
      if (inflow.any) {
        if (inflow.on[TS_SOUTH] && t - 1 == 0 && in_x && c1.act)
          fy1[0] = q_in[TS_SOUTH];
        if (inflow.on[TS_NORTH] && t - 1 == ny && in_x && c2.act)
          fy1[0] = -q_in[TS_NORTH];
        if (inflow.on[TS_WEST] && i == 0 && row2 && c2.act)
          fx2[0] = q_in[TS_WEST];
        if (inflow.on[TS_EAST] && i == nx && row2 && left2.act)
          fx2[0] = -q_in[TS_EAST];
      }
      /* limiter and speed cap of row t - 2 (1 outside the window, like the CPU's ghosts); the
       * neighbours' speeds are shuffled again rather than kept from left2 and right2, which
       * would hold two more registers across the faces (28 bytes of spills instead of 16) */
      ts_real fx_e = from_right(fx2[0]), cs_w = from_left(c2.cs), cs_e = from_right(c2.cs);
      ts_real d2 = SWE_R(1), cap2 = SWE_R(0);
      if (in_x && row2)
        row_drain(&k, dt, c2, fx2[0], fx_e, fy2[0], fy1[0], cs_w, cs_e, c3.cs, c1.cs, &d2, &cap2);
      /* update of row t - 3 */
      ts_real d_w = from_left(d3), d_e = from_right(d3);
      ts_real fx3_e[3] = {from_right(fx3[0]), from_right(fx3[1]), from_right(fx3[2])};
      int j = t - 3, own3 = within(i, own.i0, own.i1) && within(j, own.j0, own.j1);
      int updates2 = mine && within(j + 1, jo0, jo1) && c2.act && c2.on;
      int own2 = within(i, own.i0, own.i1) && within(j + 1, own.j0, own.j1);
      if (updates2) /* what the update of row t - 2 reads, in flight during this one */
        kept2 = row_fetch_kept(&out, &maxima, origin + i + (int64_t)(j + 1) * out.row, own2);
      if (mine && within(j, jo0, jo1) && c3.act && c3.on)
        bad |=
            row_update(&out, &k, &maxima, origin + i + (int64_t)j * out.row, dt, stage, c3, kept3,
                       own3, fx3, fx3_e, fy3, fy2, srcx3, srcy3, cap3, d_w, d_e, d4, d2, d3);
      d4 = d3, d3 = d2, cap3 = cap2, kept3 = kept2;
    } else {
      /* characteristic speeds of the strip and its first ring (for k_limit) */
      int j = t - 2;
      if (lane >= RING - 1 && i <= io1 && within(j, jo0 - 1, jo1 + 1) && within(i, 0, nx) &&
          within(j, 0, ny))
        out.char_speed[origin + i + (int64_t)j * out.row] = c2.cs;
      /* the x faces of the cells of row t - 2, their sources, their wave speeds */
      if (mine || (lane >= RING && i == io1)) {
        if (within(j, jo0, jo1)) {
          int64_t c = origin + i + (int64_t)j * out.row;
          out.fx[0][c] = fx2[0], out.fx[1][c] = fx2[1], out.fx[2][c] = fx2[2];
          if (i < io1)
            out.src_x[c] = srcx2;
          int counted = (i < r.i1 && c2.on) || (i > r.i0 && left2.on);
          if (counted && i >= cx0 && i <= cx1 && within(j, cy0, cy1))
            ax = swe_max(ax, sx);
        }
      }
      /* the y faces of row t - 1 (the low faces of its cells and the high face of the last),
       * and the y sources of row t - 2 */
      if (mine) {
        int f = t - 1;
        if (f >= jo0 && f <= jo1) {
          int64_t c = origin + i + (int64_t)f * out.row;
          out.fy[0][c] = fy1[0], out.fy[1][c] = fy1[1], out.fy[2][c] = fy1[2];
          int counted = (f < r.j1 && c1.on) || (f > r.j0 && c2.on);
          if (counted && f >= cy0 && f <= cy1 && within(i, cx0, cx1))
            ay = swe_max(ay, sy);
        }
        if (within(j, jo0, jo1))
          out.src_y[origin + i + (int64_t)j * out.row] = srcy2;
      }
    }
    c3 = c2, c2 = c1, c1 = c0;
    corner2 = corner1, corner1 = corner0, ybed1 = ybed0;
    yh2 = yh1, srcy_part2 = srcy_part1, srcy3 = srcy2, srcx3 = srcx2;
    for (int q = 0; q < 3; q++)
      fy3[q] = fy2[q], fy2[q] = fy1[q], fx3[q] = fx2[q];
  }
  if (FUSED) {
    if (__any_sync(0xffffffffu, bad) && lane == 0)
      clock->bad = 1;
  } else {
    block_max(ax, amax);
    block_max(ay, amax + 1);
  }
}

/* Whether the part's stage kernels on region r are the row engine's. */
static int use_rows(const swe_part *s, swe_region r) {
  if (s->p->parallel.kernels != TS_SWE_GPU_AUTO)
    return s->p->parallel.kernels == TS_SWE_GPU_ROWS;
  /* A part that skips dry tiles may have few wet ones, whose few warps would march their rows
   * with too little latency hidden (Malpasset: 11.4 s on rows against 7.4 s on tiles). */
  return !s->early_exit && (int64_t)(r.i1 - r.i0) * (r.j1 - r.j0) >= TS_SWE_ROWS_MIN_CELLS;
}

/* Blocks of k_rows over region r, and the rows per warp: the most (128 to 16) that still give
 * 64 warps per multiprocessor (measured on an H100 at 2048^2: 16 rows 3.80 Gcells/s, 32 rows
 * 3.63; fewer rows per warp add the ring rows to more segments, fewer warps hide less latency). */
static dim3 rows_for(swe_region r, int sms, int *seg) {
  int w = r.i1 - r.i0, h = r.j1 - r.j0, strips = (w + ROW_OUT - 1) / ROW_OUT;
  *seg = 128;
  while (*seg > 16 && (int64_t)strips * ((h + *seg - 1) / *seg) < 64 * (int64_t)sms)
    *seg /= 2;
  return dim3((unsigned)((strips + ROW_WARPS - 1) / ROW_WARPS), (unsigned)((h + *seg - 1) / *seg));
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

/* The step from the first stage's wave speeds (reset for the next step), as the host computes
 * it (swe_time_step), and the inflow discharges of the second stage. A collapsed step ends the
 * run. */
static __global__ void k_dt(swe_clock *clock, swe_bits *amax, double cfl, double dx, double dy,
                            const double *rain, hydro_t hydro) {
  if (clock->idle)
    return;
  double ax = (double)swe_from_bits(amax[0]), ay = (double)swe_from_bits(amax[1]);
  amax[0] = amax[1] = 0;
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
    clock->qunit[1][side] = inflow_unit(&hydro, side, clock->t + dt);
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

static dim3 tiles_for(swe_region r) {
  return dim3((unsigned)((r.i1 - r.i0 + TILE_W - 1) / TILE_W),
              (unsigned)((r.j1 - r.j0 + TILE_H - 1) / TILE_H));
}

/* The first stage's fluxes and wave speeds (the time step needs them before any update); the
 * second stage computes its fluxes in the stage kernel. */
static void gpu_fluxes(swe_part *s, swe_region r, double amax[2]) {
  if (!amax || empty(r))
    return;
  swe_gpu *g = use(s);
  swe_consts k = swe_part_consts(s);
  if (use_rows(s, r)) {
    int seg;
    dim3 blocks = rows_for(r, g->sms, &seg);
    inflow_t none = {{0, 0, 0, 0}, 0};
    k_rows<false><<<blocks, row_threads, 0, g->stream>>>(
        stage_state(g), stage_state(g), k, region(r), region(s->own), s->origin, s->nx, s->ny,
        g->clock, 0, none, tiles_of(s), maxima_of(s), g->amax, seg);
  } else {
    k_fluxes<<<tiles_for(r), tile_threads, tile_shared_bytes(), g->stream>>>(
        stage_state(g), k, region(r), region(s->own), s->origin, s->nx, s->ny, g->amax, tiles_of(s),
        g->clock);
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
    if (!empty(r) && use_rows(s, r)) {
      int seg;
      dim3 blocks = rows_for(r, g->sms, &seg);
      k_rows<true><<<blocks, row_threads, 0, g->stream>>>(
          in, out, k, region(r), region(s->own), s->origin, s->nx, s->ny, g->clock, stage, inflow,
          tiles_of(s), maxima_of(s), g->amax, seg);
    } else if (!empty(r)) {
      k_stage<<<tiles_for(r), tile_threads, tile_shared_bytes(), g->stream>>>(
          in, out, k, region(r), s->origin, s->nx, s->ny, g->clock, stage, inflow, tiles_of(s),
          region(s->own), maxima_of(s));
    }
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
    check(cudaStreamBeginCapture(g->stream, cudaStreamCaptureModeThreadLocal), "graph capture");
    return 1;
  }
  cudaGraph_t graph;
  check(cudaStreamEndCapture(g->stream, &graph), "graph capture");
  check(cudaGraphInstantiate(&g->graph, graph, 0), "graph instantiation");
  cudaGraphDestroy(graph);
  return 0;
}

static void gpu_run_steps(swe_part *s, int n) {
  swe_gpu *g = use(s);
  for (int k = 0; k < n; k++)
    check(cudaGraphLaunch(g->graph, g->stream), "graph launch");
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
  int shared = (int)tile_shared_bytes();
  check(cudaFuncSetAttribute(k_stage, cudaFuncAttributeMaxDynamicSharedMemorySize, shared),
        "shared memory of the stage kernel");
  check(cudaFuncSetAttribute(k_fluxes, cudaFuncAttributeMaxDynamicSharedMemorySize, shared),
        "shared memory of the flux kernel");
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
