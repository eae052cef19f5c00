/* CUDA backend of the shallow-water passes on one part, compiled once per precision: with
 * TS_REAL_DOUBLE=0 it defines swe_kernels_cuda_float, with 1 swe_kernels_cuda_double. The
 * kernels call the stage functions of swe_stage.h, the same code as the CPU loops; the host
 * arrays of the part mirror the device arrays (copied at creation, before host code reads the
 * state and after it writes it), so everything that is not a pass of the step (initialisation,
 * access, checkpoints, the halo engine) is the CPU backend's code on the mirror.
 *
 * One thread per face computes the face's flux from the reconstructions of its two cells and
 * stores the correction of the low cell; the outflow-limiter pass completes each cell's bed
 * source with its high face's correction, in the order the CPU sweep uses, so both backends
 * compute the same values (the build turns off fused multiply-add). The largest wave speeds are
 * reduced per block and combined with an atomic maximum on their bits (non-negative floats
 * order like integers). */
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>

extern "C" {
#include "physics/swe/swe_internal.h"
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
static inline ts_real swe_from_bits(swe_bits b) {
  ts_real x;
  memcpy(&x, &b, sizeof x);
  return x;
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
static inline ts_real swe_from_bits(swe_bits b) {
  ts_real x;
  memcpy(&x, &b, sizeof x);
  return x;
}
#endif

#include "physics/swe/swe_stage.h"

/* Device side of a part: a device array for every host array of the layout, two arrays of
 * face corrections, the wave-speed maxima and the non-finite flag, and the part's stream. */
typedef struct swe_gpu {
  swe_arrays dev; /* device pointers, same layout as the host arrays */
  ts_real *corr_x, *corr_y;
  unsigned char *active;
  double *max[4]; /* max_h, max_speed, arrival, max_eta */
  swe_bits *amax; /* 2 */
  int *bad;
  unsigned char *tile_wet, *tile_on; /* early exit: per tile of the window */
  cudaStream_t stream;
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

static void check(cudaError_t e, const char *what) {
  if (e != cudaSuccess) {
    /* A failing device call leaves no consistent state to return to: report and stop. */
    fprintf(stderr, "tessera: CUDA %s failed: %s\n", what, cudaGetErrorString(e));
    exit(1);
  }
}

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

static __global__ void k_fill_side(swe_arrays a, swe_consts k, int side, int type, ts_real level,
                                   ts_real q_unit, int nx, int ny, int64_t origin) {
  int along = side < 2 ? ny : nx;
  int t = (int)(blockIdx.x * blockDim.x + threadIdx.x);
  if (t >= along * SWE_GHOST)
    return;
  swe_fill_side_ghost(&a, &k, origin, nx, ny, side, t / SWE_GHOST, 1 + t % SWE_GHOST, type, level,
                      q_unit);
}

__device__ static inline void block_max(ts_real v, swe_bits *out) {
  for (int o = 16; o > 0; o /= 2)
    v = swe_max(v, __shfl_down_sync(0xffffffffu, v, o));
  if ((threadIdx.x & 31) == 0 && v > 0)
    atomicMax(out, swe_to_bits(v));
}

/* Faces of the cells of r along one axis (x: step 1, y: step row): the face at cell c lies
 * between c - step and c. Stores the flux, the low cell's correction, and the high cell's bed
 * source less nothing yet (completed by k_drain). */
static __global__ void k_flux(swe_arrays a, swe_consts k, region_t r, region_t own, int64_t origin,
                              int x_axis, ts_real *corr, swe_bits *amax, tiles_t tiles) {
  int i, j;
  int64_t step = x_axis ? 1 : a.row, corner_step = x_axis ? a.row : 1;
  int in = cell_of(r, x_axis, !x_axis, &i, &j);
  /* Early exit as on the CPU, whose sweeps compute the faces of the cells of active tiles
   * (both faces of each cell): a face counts when the tile of its high cell, inside r, or of its
   * low cell, inside r, is active. */
  int f = x_axis ? i : j, f0 = x_axis ? r.i0 : r.j0, f1 = x_axis ? r.i1 : r.j1;
  int high_on = in && f < f1 && tile_on(tiles, i, j);
  in = in && (high_on || (f > f0 && tile_on(tiles, x_axis ? i - 1 : i, x_axis ? j : j - 1)));
  ts_real speed = 0;
  if (in) {
    int64_t c = origin + i + j * a.row, cl = c - step;
    int act_l = a.active[cl], act_h = a.active[c];
    swe_side lo_l = {0, 0, 0, 0, 0}, hi_l = lo_l, lo_h = lo_l, hi_h = lo_l;
    ts_real bed_lo = swe_face_bed(&a, cl - step, step, corner_step);
    ts_real bed_mid = swe_face_bed(&a, cl, step, corner_step);
    ts_real bed_hi = swe_face_bed(&a, c, step, corner_step);
    if (act_l)
      swe_reconstruct_cell(&a, &k, cl, step, x_axis, bed_lo, bed_mid, &lo_l, &hi_l);
    if (act_h)
      swe_reconstruct_cell(&a, &k, c, step, x_axis, bed_mid, bed_hi, &lo_h, &hi_h);
    ts_real flux[3], corr_l, corr_h;
    speed = swe_face_between(&k, act_l, act_h, hi_l, lo_h, flux, &corr_l, &corr_h);
    ts_real **f = x_axis ? a.fx : a.fy;
    f[0][c] = flux[0];
    f[1][c] = flux[1];
    f[2][c] = flux[2];
    corr[c] = corr_l;
    if (high_on)
      (x_axis ? a.src_x : a.src_y)[c] = act_h ? corr_h + swe_bed_source(lo_h, hi_h, k.g) : 0;
    int face = x_axis ? i : j, line = x_axis ? j : i;
    int owned = x_axis ? (face >= own.i0 && face <= own.i1 && line >= own.j0 && line < own.j1)
                       : (face >= own.j0 && face <= own.j1 && line >= own.i0 && line < own.i1);
    if (!owned)
      speed = 0;
  }
  block_max(speed, amax);
}

static __global__ void k_drain(swe_arrays a, swe_consts k, region_t r, int64_t origin, ts_real dt,
                               const ts_real *corr_x, const ts_real *corr_y, tiles_t tiles) {
  int i, j;
  if (!cell_of(r, 0, 0, &i, &j) || !tile_on(tiles, i, j))
    return;
  int64_t c = origin + i + j * a.row;
  a.src_x[c] = a.src_x[c] - corr_x[c + 1];
  a.src_y[c] = a.src_y[c] - corr_y[c + a.row];
  swe_drain_cell(&a, &k, c, dt);
}

static __global__ void k_update(swe_arrays a, swe_consts k, region_t r, int64_t origin, ts_real dt,
                                int stage, int *bad, tiles_t tiles) {
  int i, j;
  if (!cell_of(r, 0, 0, &i, &j) || !tile_on(tiles, i, j))
    return;
  int64_t c = origin + i + j * a.row;
  if (a.active[c] && swe_update_cell(&a, &k, c, dt, stage))
    *bad = 1;
}

static __global__ void k_inflow(swe_arrays a, int side, int nx, int ny, int64_t origin, ts_real q) {
  int along = side < 2 ? ny : nx;
  int at = (int)(blockIdx.x * blockDim.x + threadIdx.x);
  if (at >= along)
    return;
  swe_impose_side_flux(&a, origin, nx, ny, side, at, q);
}

static __global__ void k_maxima(swe_arrays a, region_t own, int64_t origin, ts_real dry,
                                double arrival_depth, double t, double *max_h, double *max_speed,
                                double *arrival, double *max_eta, tiles_t tiles) {
  int i, j;
  if (!cell_of(own, 0, 0, &i, &j) || !tile_on(tiles, i, j))
    return;
  int64_t c = origin + i + j * a.row;
  if (!a.active[c] || !(a.w[c] - a.bed[c] > dry))
    return;
  double h = (double)(a.w[c] - a.bed[c]);
  double u = (double)a.u[c], v = (double)a.v[c], sp = sqrt(u * u + v * v);
  if (h > max_h[c])
    max_h[c] = h;
  if (sp > max_speed[c])
    max_speed[c] = sp;
  if (isnan(max_eta[c]) || (double)a.w[c] > max_eta[c])
    max_eta[c] = (double)a.w[c];
  if (isnan(arrival[c]) && h > arrival_depth)
    arrival[c] = t;
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

/* ------------------------------------------------------------------ the table */

static tiles_t tiles_of(const swe_part *s) {
  return tiles_t{gpu_of(s)->tile_on, s->p->tile_size, s->tiles_x};
}

static region_t region(swe_region r) { return region_t{r.i0, r.i1, r.j0, r.j1}; }

static dim3 blocks_for(swe_region r, int extra_i, int extra_j, dim3 threads) {
  int w = r.i1 - r.i0 + extra_i, h = r.j1 - r.j0 + extra_j;
  return dim3((unsigned)((w + (int)threads.x - 1) / (int)threads.x),
              (unsigned)((h + (int)threads.y - 1) / (int)threads.y));
}

static const dim3 block2d(32, 8);

static int empty(swe_region r) { return r.i0 >= r.i1 || r.j0 >= r.j1; }

static void gpu_refresh_velocities(swe_part *s, swe_region r) {
  if (empty(r))
    return;
  swe_gpu *g = use(s);
  swe_consts k = swe_part_consts(s);
  k_velocity<<<blocks_for(r, 0, 0, block2d), block2d, 0, g->stream>>>(g->dev, k, region(r),
                                                                      s->origin);
}

static void gpu_fill_boundaries(swe_part *s, double t) {
  swe_gpu *g = use(s);
  swe_consts k = swe_part_consts(s);
  for (int side = 0; side < 4; side++) {
    const ts_swe_bc *bc = &s->p->bc[side];
    if (bc->type == TS_BC_WALL || s->internal[side])
      continue;
    double q_unit = swe_inflow_unit(s, side, t, 1);
    int n = (side < 2 ? s->ny : s->nx) * SWE_GHOST;
    k_fill_side<<<(n + 127) / 128, 128, 0, g->stream>>>(g->dev, k, side, (int)bc->type,
                                                        (ts_real)bc->level, (ts_real)q_unit, s->nx,
                                                        s->ny, s->origin);
  }
}

static void gpu_fluxes(swe_part *s, swe_region r, double amax[2]) {
  swe_gpu *g = use(s);
  swe_consts k = swe_part_consts(s);
  if (amax)
    check(cudaMemsetAsync(g->amax, 0, 2 * sizeof(swe_bits), g->stream), "memset");
  k_flux<<<blocks_for(r, 1, 0, block2d), block2d, 0, g->stream>>>(
      g->dev, k, region(r), region(s->own), s->origin, 1, g->corr_x, g->amax, tiles_of(s));
  k_flux<<<blocks_for(r, 0, 1, block2d), block2d, 0, g->stream>>>(
      g->dev, k, region(r), region(s->own), s->origin, 0, g->corr_y, g->amax + 1, tiles_of(s));
  if (!amax)
    return; /* no time step to reduce: no need to wait for the device */
  swe_bits bits[2];
  check(cudaMemcpyAsync(bits, g->amax, sizeof bits, cudaMemcpyDeviceToHost, g->stream),
        "copy of the wave speeds");
  check(cudaStreamSynchronize(g->stream), "fluxes");
  amax[0] = fmax(amax[0], (double)swe_from_bits(bits[0]));
  amax[1] = fmax(amax[1], (double)swe_from_bits(bits[1]));
}

static void gpu_impose_inflow(swe_part *s, double t) {
  swe_gpu *g = use(s);
  for (int side = 0; side < 4; side++) {
    if (s->p->bc[side].type != TS_BC_INFLOW || s->bc_cells[side] == 0 || s->internal[side])
      continue;
    ts_real q = (ts_real)swe_inflow_unit(s, side, t, 0);
    int n = side < 2 ? s->ny : s->nx;
    k_inflow<<<(n + 127) / 128, 128, 0, g->stream>>>(g->dev, side, s->nx, s->ny, s->origin, q);
  }
}

static void gpu_drain(swe_part *s, swe_region r, double dt) {
  if (empty(r))
    return;
  swe_gpu *g = use(s);
  swe_consts k = swe_part_consts(s);
  k_drain<<<blocks_for(r, 0, 0, block2d), block2d, 0, g->stream>>>(
      g->dev, k, region(r), s->origin, (ts_real)dt, g->corr_x, g->corr_y, tiles_of(s));
}

static int gpu_update(swe_part *s, swe_region r, double dt, int stage) {
  if (empty(r))
    return 0;
  swe_gpu *g = use(s);
  swe_consts k = swe_part_consts(s);
  k_update<<<blocks_for(r, 0, 0, block2d), block2d, 0, g->stream>>>(
      g->dev, k, region(r), s->origin, (ts_real)dt, stage, g->bad, tiles_of(s));
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

static void gpu_maxima(swe_part *s) {
  swe_gpu *g = use(s);
  k_maxima<<<blocks_for(s->own, 0, 0, block2d), block2d, 0, g->stream>>>(
      g->dev, region(s->own), s->origin, (ts_real)s->p->dry_depth, s->p->arrival_depth, s->t,
      g->max[0], g->max[1], g->max[2], g->max[3], tiles_of(s));
}

static int gpu_take_bad(swe_part *s) {
  swe_gpu *g = use(s);
  int bad = 0;
  check(cudaMemcpyAsync(&bad, g->bad, sizeof bad, cudaMemcpyDeviceToHost, g->stream), "copy");
  check(cudaStreamSynchronize(g->stream), "step");
  if (bad)
    check(cudaMemset(g->bad, 0, sizeof(int)), "memset");
  return bad;
}

/* Host and device arrays of the part that the mirror copies: the state, velocities, maxima. */
static void mirror(swe_part *s, int down) {
  swe_gpu *g = use(s);
  size_t rb = (size_t)s->plane * sizeof(ts_real), db = (size_t)s->plane * sizeof(double);
  void *host_r[6] = {s->w, s->hu, s->hv, s->w_carry, s->u, s->v};
  void *dev_r[6] = {g->dev.w, g->dev.hu, g->dev.hv, g->dev.w_carry, g->dev.u, g->dev.v};
  double *host_d[4] = {s->max_h, s->max_speed, s->arrival, s->max_eta};
  int nr = down ? 6 : 4; /* velocities are recomputed on the device after an upload */
  cudaMemcpyKind kind = down ? cudaMemcpyDeviceToHost : cudaMemcpyHostToDevice;
  for (int a = 0; a < nr; a++)
    check(cudaMemcpyAsync(down ? host_r[a] : dev_r[a], down ? dev_r[a] : host_r[a], rb, kind,
                          g->stream),
          "copy of the state");
  for (int a = 0; a < 4; a++)
    check(cudaMemcpyAsync(down ? (void *)host_d[a] : (void *)g->max[a],
                          down ? (void *)g->max[a] : (void *)host_d[a], db, kind, g->stream),
          "copy of the maxima");
  if (!down)
    gpu_refresh_velocities(
        s, swe_region{-SWE_GHOST, s->nx + SWE_GHOST, -SWE_GHOST, s->ny + SWE_GHOST});
  check(cudaStreamSynchronize(g->stream), "copy");
}

static void gpu_to_host(swe_part *s) { mirror(s, 1); }

/* Gathers the state, velocities and maxima of n cells into one buffer (5 reals, 4 doubles). */
static __global__ void k_gather(swe_arrays a, const double *const *max, const int64_t *cells, int n,
                                ts_real *reals, double *doubles) {
  int t = (int)(blockIdx.x * blockDim.x + threadIdx.x);
  if (t >= n)
    return;
  int64_t c = cells[t];
  const ts_real *src[5] = {a.w, a.hu, a.hv, a.u, a.v};
  for (int v = 0; v < 5; v++)
    reals[5 * t + v] = src[v][c];
  for (int v = 0; v < 4; v++)
    doubles[4 * t + v] = max[v][c];
}

static void gpu_to_host_cells(swe_part *s, const int64_t *cells, int n) {
  if (n <= 0)
    return;
  swe_gpu *g = use(s);
  size_t bytes = (size_t)n * (sizeof(int64_t) + 5 * sizeof(ts_real) + 4 * sizeof(double)) +
                 4 * sizeof(double *);
  char *dev = NULL, *host = (char *)malloc(bytes);
  check(cudaMalloc((void **)&dev, bytes), "allocation for probes");
  int64_t *d_cells = (int64_t *)dev;
  double **d_max = (double **)(d_cells + n);
  double *d_doubles = (double *)(d_max + 4);
  ts_real *d_reals = (ts_real *)(d_doubles + 4 * (size_t)n);
  check(cudaMemcpyAsync(d_cells, cells, sizeof(int64_t) * (size_t)n, cudaMemcpyHostToDevice,
                        g->stream),
        "copy");
  check(cudaMemcpyAsync(d_max, g->max, 4 * sizeof(double *), cudaMemcpyHostToDevice, g->stream),
        "copy");
  k_gather<<<(n + 127) / 128, 128, 0, g->stream>>>(g->dev, d_max, d_cells, n, d_reals, d_doubles);
  check(cudaMemcpyAsync(host, dev, bytes, cudaMemcpyDeviceToHost, g->stream), "copy of probes");
  check(cudaStreamSynchronize(g->stream), "probes");
  double *h_doubles = (double *)((double **)((int64_t *)host + n) + 4);
  ts_real *h_reals = (ts_real *)(h_doubles + 4 * (size_t)n);
  ts_real *dst_r[5] = {(ts_real *)s->w, (ts_real *)s->hu, (ts_real *)s->hv, (ts_real *)s->u,
                       (ts_real *)s->v};
  double *dst_d[4] = {s->max_h, s->max_speed, s->arrival, s->max_eta};
  for (int t = 0; t < n; t++) {
    for (int v = 0; v < 5; v++)
      dst_r[v][cells[t]] = h_reals[5 * t + v];
    for (int v = 0; v < 4; v++)
      dst_d[v][cells[t]] = h_doubles[4 * t + v];
  }
  cudaFree(dev);
  free(host);
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
                       g->dev.src_y,
                       g->corr_x,
                       g->corr_y};
  for (size_t a = 0; a < sizeof arrays / sizeof arrays[0]; a++)
    cudaFree(arrays[a]);
  for (int a = 0; a < 4; a++)
    cudaFree(g->max[a]);
  cudaFree(g->active);
  cudaFree(g->amax);
  cudaFree(g->bad);
  cudaFree(g->tile_wet);
  cudaFree(g->tile_on);
  cudaStreamDestroy(g->stream);
  free(g);
  s->gpu = NULL;
}

/* Device copies of every host array of the layout; static data and state go up once. */
extern "C" ts_status SWE_CUDA_ATTACH(swe_part *s, int device) {
  if (cudaSetDevice(device) != cudaSuccess)
    return ts_error(TS_ERR_INPUT, "swe: CUDA device %d cannot be used", device);
  swe_gpu *g = (swe_gpu *)calloc(1, sizeof *g);
  if (!g)
    return ts_error(TS_ERR_NOMEM, "out of memory");
  s->gpu = g;
  s->device = device;
  int ndev = 0;
  cudaGetDeviceCount(&ndev);
  for (int peer = 0; peer < ndev; peer++) {
    int can = 0;
    if (peer != device && cudaDeviceCanAccessPeer(&can, device, peer) == cudaSuccess && can)
      cudaDeviceEnablePeerAccess(peer, 0); /* "already enabled" is fine */
  }
  cudaGetLastError();
  check(cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking), "stream");
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
  if (e == cudaSuccess)
    e = cudaMalloc((void **)&g->corr_x, rb);
  if (e == cudaSuccess)
    e = cudaMemset(g->corr_x, 0, rb);
  if (e == cudaSuccess)
    e = cudaMalloc((void **)&g->corr_y, rb);
  if (e == cudaSuccess)
    e = cudaMemset(g->corr_y, 0, rb);
  if (e == cudaSuccess && (e = cudaMalloc((void **)&g->active, (size_t)s->plane)) == cudaSuccess)
    e = cudaMemcpy(g->active, s->active, (size_t)s->plane, cudaMemcpyHostToDevice);
  g->dev.active = g->active;
  g->dev.row = s->row;
  for (int a = 0; a < 4 && e == cudaSuccess; a++)
    e = cudaMalloc((void **)&g->max[a], db);
  if (e == cudaSuccess)
    e = cudaMalloc((void **)&g->amax, 2 * sizeof(swe_bits));
  if (e == cudaSuccess && (e = cudaMalloc((void **)&g->bad, sizeof(int))) == cudaSuccess)
    e = cudaMemset(g->bad, 0, sizeof(int));
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
    .impose_inflow = gpu_impose_inflow,
    .drain = gpu_drain,
    .update = gpu_update,
    .tile_mask = gpu_tile_mask,
    .maxima = gpu_maxima,
    .refresh_velocities = gpu_refresh_velocities,
    .get_cell = SWE_CPU_KERNELS.get_cell,
    .volume = SWE_CPU_KERNELS.volume,
    .wet_cells = SWE_CPU_KERNELS.wet_cells,
    .tiles_wet = SWE_CPU_KERNELS.tiles_wet,
    .round = SWE_CPU_KERNELS.round,
    .to_host = gpu_to_host,
    .to_host_cells = gpu_to_host_cells,
    .to_device = gpu_to_device,
    .take_bad = gpu_take_bad,
    .release = gpu_release,
};

/* The state fields of a GPU part in device memory, for halo copies between devices. */
extern "C" int SWE_CUDA_FIELDS(const swe_part *s, ts_halo_field *out) {
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
  return 1;
}

#if !TS_REAL_DOUBLE /* once for both precisions */
/* Halo copies between GPU parts of one process: one 2D copy per component, between devices
 * through peer access where the GPUs have it. */
extern "C" void swe_cuda_copy_box(const ts_box *box, int nfields, const uint32_t *masks,
                                  const ts_halo_field *from, const ts_halo_field *to) {
  for (int f = 0; f < nfields; f++) {
    size_t e = from[f].elem, width = (size_t)(box->hi[0] - box->lo[0]) * e;
    int64_t so = from[f].origin + (box->lo[0] - from[f].lo[0]) +
                 (int64_t)(box->lo[1] - from[f].lo[1]) * from[f].stride[1];
    int64_t dof = to[f].origin + (box->lo[0] - to[f].lo[0]) +
                  (int64_t)(box->lo[1] - to[f].lo[1]) * to[f].stride[1];
    for (int c = 0; c < from[f].ncomp; c++)
      if (masks[f] >> c & 1u)
        check(cudaMemcpy2D((char *)to[f].comp[c] + (size_t)dof * e, (size_t)to[f].stride[1] * e,
                           (const char *)from[f].comp[c] + (size_t)so * e,
                           (size_t)from[f].stride[1] * e, width, (size_t)(box->hi[1] - box->lo[1]),
                           cudaMemcpyDefault),
              "halo copy");
  }
}

/* Waits for a part's queued work (before its arrays are copied outside its stream). */
extern "C" void swe_cuda_sync(const swe_part *s) {
  check(cudaStreamSynchronize(use(s)->stream), "synchronisation");
}

/* Waits for everything queued on a part's GPU, the halo copies included: device-to-device
 * copies return before they are done, on streams the parts' own streams do not wait for. */
extern "C" void swe_cuda_device_sync(const swe_part *s) {
  use(s);
  check(cudaDeviceSynchronize(), "synchronisation");
}
#endif
