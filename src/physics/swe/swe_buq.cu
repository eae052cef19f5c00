/* CUDA passes of the shallow-water block engine on quadtree grids (swe_buq.h), compiled once per
 * precision: TS_REAL_DOUBLE=0 defines swe_buq_gpu_float, 1 swe_buq_gpu_double. A mirror in
 * device memory of the engine's arrays (swe_buq_leaf.h's view) takes the passes of a step as
 * kernels that call the view's functions, the same code as the CPU loops, built without fused
 * multiply-add: both backends give the same bits. A thread per ghost cell, per cell (limiters,
 * update, maps); the sweeps a thread block per leaf (per four leaves of 8^2 cells), with the
 * reconstructions and face corrections in shared memory; the leaves of the step are lists in
 * device memory (the passes' nested ranges, and for the ghosts by level from the coarsest, so
 * the prolongations run level by level). The host reads back the leaves holding water (early
 * exit), the wave speeds of each level (the time step) and the non-finite flag. Each pass makes
 * its part's device current: the parts of one engine may lie on several GPUs. */
#include "physics/swe/swe_gpu.cuh"

extern "C" {
#include "physics/swe/swe_buq.h"
}
#include "physics/swe/swe_buq_leaf.h"

#if TS_REAL_DOUBLE
#define SWE_BUQ_GPU swe_buq_gpu_double
#else
#define SWE_BUQ_GPU swe_buq_gpu_float
#endif

enum { THREADS = 256 };

/* The device's mirror: the view on device arrays, the lists of the step's leaves (the passes'
 * ranges of `list`, and ghost_list by level with each level's range), the leaves' levels on the
 * host, and the read-back buffers. */
typedef struct gpu_state {
  int device, nblocks, levels;
  swe_buq_view d;
  ts_buq_block *blocks;
  int *list, *ghost_list, *dropped, counts[4];
  int level_first[TS_BUQ_MAX_LEVELS], level_count[TS_BUQ_MAX_LEVELS];
  int *level_of; /* host: each leaf's level */
  int *by_level; /* host: the ghost list being sorted */
  unsigned char *wet;
  swe_bits *amax; /* 2 per level: x, y */
  int *bad;
  char *probe; /* read_cells: the cells, then their values (device), grown as needed */
  size_t probe_bytes;
} gpu_state;

static inline int grid_of(long n) { return (int)((n + THREADS - 1) / THREADS); }

/* ------------------------------------------------------------------ kernels */

static __global__ void k_wet(swe_buq_view v, int nblocks, unsigned char *wet) {
  int k = blockIdx.x, M = v.M, any = 0;
  for (int c = threadIdx.x; c < M * M; c += blockDim.x)
    any |= buq_wet_cell(&v, k, c % M, c / M);
  any = __syncthreads_or(any);
  if (threadIdx.x == 0 && k < nblocks)
    wet[k] = (unsigned char)any;
}

/* Dropped leaves: zero fluxes and limiters 1 (their neighbours read them). */
static __global__ void k_drop(swe_buq_view v, const int *dropped, int n) {
  long t = (long)blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= (long)n * v.P)
    return;
  swe_idx e = (swe_idx)dropped[t / v.P] * v.P + (swe_idx)(t % v.P);
  for (int c = 0; c < 3; c++)
    v.fx[c][e] = v.fy[c][e] = 0;
  v.drain[e] = SWE_R(1);
}

/* Copies and restrictions: a thread per (leaf, side, layer, position). */
static __global__ void k_fill(swe_buq_view v, const int *list, int n) {
  int t = (int)(blockIdx.x * blockDim.x + threadIdx.x), M = v.M;
  int per = 4 * SWE_GHOST * M;
  if (t >= n * per)
    return;
  int k = list[t / per], r = t % per, side = r / (SWE_GHOST * M);
  r %= SWE_GHOST * M;
  if (v.blocks[k].side_relation[side] != TS_BUQ_COARSER)
    buq_fill_ghost(&v, k, side, r / M, r % M);
}

/* Prolongations of the leaves list[first .. first + n): a thread per (leaf, side, coarse cell). */
static __global__ void k_coarser(swe_buq_view v, const int *list, int first, int n) {
  int t = (int)(blockIdx.x * blockDim.x + threadIdx.x), half = v.M / 2;
  if (t >= n * 4 * half)
    return;
  int k = list[first + t / (4 * half)], side = (t / half) % 4;
  if (v.blocks[k].side_relation[side] == TS_BUQ_COARSER)
    buq_fill_coarser(&v, k, side, t % half);
}

/* Velocities of the ghost cells (of every cell of a copy of another part's leaf): a thread per
 * (leaf, cell of its window). */
static __global__ void k_ghost_velocity(swe_buq_view v, const int *list, int n) {
  int t = (int)(blockIdx.x * blockDim.x + threadIdx.x), M = v.M, side = M + 2 * SWE_GHOST;
  if (t >= n * side * side)
    return;
  int k = list[t / (side * side)], c = t % (side * side);
  int i = c % side - SWE_GHOST, j = c / side - SWE_GHOST;
  if (i >= 0 && j >= 0 && i < M && j < M && k < v.owned)
    return;
  swe_arrays a = buq_leaf_arrays(&v, k);
  swe_consts kc = buq_consts(&v, v.blocks[k].level);
  swe_cell_velocity(&a, &kc, buq_local(&v, i, j));
}

/* The sweeps of the leaves of one thread block (SWEEP_THREADS / M^2 of them: one of 16^2 cells,
 * four of 8^2), each axis in three passes over shared memory: every cell of every line
 * reconstructed once, every face computed once (its flux stored, its pressure corrections
 * kept), every cell's bed source. Consecutive threads take consecutive cells across the lines
 * or along them, whichever lies along x. The wave speeds are reduced per leaf and axis in
 * shared memory, then an atomic maximum per level and axis where they exceed it. */
enum { SWEEP_THREADS = 256, SWEEP_LEAVES = SWEEP_THREADS / 64 };
template <int M>
static __global__ void __launch_bounds__(SWEEP_THREADS)
    k_sweep(swe_buq_view v, const int *list, int n, swe_bits *amax) {
  enum { LEAVES = SWEEP_THREADS / (M * M), CELLS = M * (M + 2), FACES = M * (M + 1) };
  enum { FACE_THREADS = (LEAVES * FACES + 31) / 32 * 32 }; /* whole warps: they shuffle */
  __shared__ swe_side lo[LEAVES * CELLS], hi[LEAVES * CELLS];
  __shared__ int act[LEAVES * CELLS];
  __shared__ ts_real corr_lo[LEAVES * FACES], corr_hi[LEAVES * FACES];
  __shared__ swe_bits smax[LEAVES][2];
  int base = blockIdx.x * LEAVES, leaves = min(LEAVES, n - base);
  if (threadIdx.x < 2 * LEAVES)
    smax[threadIdx.x / 2][threadIdx.x % 2] = 0;
  for (int axis = 1; axis >= 0; axis--) {
    __syncthreads(); /* the shared arrays of the previous axis are read */
    for (int t = threadIdx.x; t < leaves * CELLS; t += SWEEP_THREADS) {
      int q = t / CELLS, r = t % CELLS;
      int line = axis ? r / (M + 2) : r % M, cell = (axis ? r % (M + 2) : r / M) - 1;
      int at = q * CELLS + line * (M + 2) + cell + 1;
      act[at] = buq_line_cell(&v, list[base + q], axis, buq_line_of(&v, line, axis), cell, &lo[at],
                              &hi[at]);
    }
    __syncthreads();
    for (int t = threadIdx.x; t < FACE_THREADS; t += SWEEP_THREADS) {
      int q = t / FACES, r = t % FACES;
      int line = axis ? r / (M + 1) : r % M, f = axis ? r % (M + 1) : r / M;
      ts_real speed = 0;
      if (q < leaves) { /* (t beyond the faces: q >= LEAVES) */
        int g = q * CELLS + line * (M + 2), at = q * FACES + line * (M + 1) + f;
        speed = buq_line_face(&v, list[base + q], line, axis, buq_line_of(&v, line, axis), f,
                              lo + g, hi + g, act + g, &corr_lo[at], &corr_hi[at]);
      }
      for (int p = 0; p < LEAVES; p++) { /* the warp's largest speed of each leaf */
        ts_real s = q == p ? speed : SWE_R(0);
        for (int off = 16; off > 0; off /= 2)
          s = swe_max(s, __shfl_xor_sync(0xffffffffu, s, off));
        if ((threadIdx.x & 31) == 0 && s > 0)
          atomicMax(&smax[p][axis], swe_to_bits(s));
      }
    }
    __syncthreads();
    for (int t = threadIdx.x; t < leaves * M * M; t += SWEEP_THREADS) {
      int q = t / (M * M), r = t % (M * M);
      int line = axis ? r / M : r % M, cell = axis ? r % M : r / M;
      int g = q * CELLS + line * (M + 2) + cell + 1, face = q * FACES + line * (M + 1) + cell;
      buq_line_source(&v, list[base + q], axis, buq_line_of(&v, line, axis), cell, act[g], lo[g],
                      hi[g], corr_hi[face], corr_lo[face + 1]);
    }
  }
  __syncthreads();
  if (amax && threadIdx.x < 2 * leaves) {
    int q = threadIdx.x / 2, axis = threadIdx.x % 2;
    swe_bits *to = &amax[2 * v.blocks[list[base + q]].level + (axis ? 0 : 1)];
    if (smax[q][axis] > *(volatile swe_bits *)to)
      atomicMax(to, smax[q][axis]);
  }
}

static __global__ void k_limit(swe_buq_view v, const int *list, int n, ts_real dt) {
  int t = (int)(blockIdx.x * blockDim.x + threadIdx.x), MM = v.M * v.M;
  if (t < n * MM)
    buq_drain_cell(&v, list[t / MM], (t % MM) % v.M, (t % MM) / v.M, dt);
}

static __global__ void k_limit_ghosts(swe_buq_view v, const int *list, int n) {
  int t = (int)(blockIdx.x * blockDim.x + threadIdx.x), per = 4 * v.M;
  if (t < n * per)
    buq_drain_ghost(&v, list[t / per], (t % per) / v.M, (t % per) % v.M);
}

static __global__ void k_update(swe_buq_view v, const int *list, int n, ts_real dt, int stage,
                                int *bad) {
  int t = (int)(blockIdx.x * blockDim.x + threadIdx.x), MM = v.M * v.M;
  if (t >= n * MM)
    return;
  int k = list[t / MM], i = (t % MM) % v.M, j = (t % MM) / v.M;
  if (v.active[buq_cell(&v, k, i, j)] && buq_update_cell(&v, k, i, j, dt, stage))
    *bad = 1;
}

static __global__ void k_sources(swe_buq_view v, int n, double dt) {
  int t = (int)(blockIdx.x * blockDim.x + threadIdx.x), MM = v.M * v.M;
  if (t < n * MM)
    buq_source_cell(&v, t / MM, (t % MM) % v.M, (t % MM) / v.M, dt);
}

static __global__ void k_record(swe_buq_view v, const int *list, int n, double t_now, double dt) {
  int t = (int)(blockIdx.x * blockDim.x + threadIdx.x), MM = v.M * v.M;
  if (t < n * MM)
    buq_record_cell(&v, list[t / MM], (t % MM) % v.M, (t % MM) / v.M, t_now, dt);
}

/* The maps and state of n cells (window element, maps' element) into `out`, 11 doubles per
 * cell: the 6 maps, then w, hu, hv, u, v in the working precision. */
static __global__ void k_gather(swe_buq_view v, const long long *cells, int n, double *out) {
  int q = (int)(blockIdx.x * blockDim.x + threadIdx.x);
  if (q >= n)
    return;
  swe_idx c = (swe_idx)cells[2 * q], m = (swe_idx)cells[2 * q + 1];
  double *d = out + 11 * q;
  const double *maps[SWE_BUQ_NMAPS] = {v.max_h,   v.max_speed, v.arrival,
                                       v.max_eta, v.duration,  v.max_hazard};
  for (int k = 0; k < SWE_BUQ_NMAPS; k++)
    d[k] = maps[k][m];
  ts_real *r = (ts_real *)(d + 6);
  r[0] = v.w[c], r[1] = v.hu[c], r[2] = v.hv[c], r[3] = v.u[c], r[4] = v.v[c];
}

/* ------------------------------------------------------------------ passes */

static void gpu_release(void *x) {
  gpu_state *g = (gpu_state *)x;
  if (!g)
    return;
  cudaSetDevice(g->device);
  ts_real **arrays[SWE_BUQ_NARRAYS] = SWE_BUQ_ARRAYS(&g->d);
  for (int k = 0; k < SWE_BUQ_NARRAYS; k++)
    cudaFree(*arrays[k]);
  double **maps[SWE_BUQ_NMAPS] = SWE_BUQ_MAPS(&g->d);
  for (int k = 0; k < SWE_BUQ_NMAPS; k++)
    cudaFree(*maps[k]);
  cudaFree(g->d.active);
  cudaFree(g->d.friction);
  cudaFree(g->d.rain);
  cudaFree(g->d.loss_initial);
  cudaFree(g->d.loss_rate);
  cudaFree(g->d.lost);
  cudaFree(g->blocks);
  cudaFree(g->list);
  cudaFree(g->ghost_list);
  cudaFree(g->dropped);
  cudaFree(g->wet);
  cudaFree(g->amax);
  cudaFree(g->bad);
  cudaFree(g->probe);
  free(g->level_of);
  free(g->by_level);
  free(g);
}

/* The part's mirror, its device made current. */
static gpu_state *on_device(void *x) {
  gpu_state *g = (gpu_state *)x;
  check(cudaSetDevice(g->device), "device");
  return g;
}

/* Copies the arrays between the host's view and the device's (all of them: at creation, after
 * a new surface or a checkpoint; back: the state, velocities and maps). */
static void copy_arrays(gpu_state *g, swe_buq_view *h, int up) {
  size_t cells = (size_t)g->nblocks * g->d.P, leaf_cells = (size_t)g->nblocks * g->d.M * g->d.M;
  ts_real **dev[SWE_BUQ_NARRAYS] = SWE_BUQ_ARRAYS(&g->d);
  ts_real **host[SWE_BUQ_NARRAYS] = SWE_BUQ_ARRAYS(h);
  int down[SWE_BUQ_NARRAYS] = {1, 1, 1, 1, 0, 0, 0, 1, 1, 1}; /* w .. w_carry, u, v, speed */
  cudaSetDevice(g->device);
  for (int k = 0; k < SWE_BUQ_NARRAYS; k++)
    if (up || down[k])
      check(cudaMemcpy(up ? (void *)*dev[k] : (void *)*host[k], up ? (void *)*host[k] : *dev[k],
                       cells * sizeof(ts_real),
                       up ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost),
            "quadtree arrays");
  double **dmaps[SWE_BUQ_NMAPS] = SWE_BUQ_MAPS(&g->d);
  double **hmaps[SWE_BUQ_NMAPS] = SWE_BUQ_MAPS(h);
  for (int k = 0; k < SWE_BUQ_NMAPS; k++)
    check(cudaMemcpy(up ? (void *)*dmaps[k] : (void *)*hmaps[k], up ? (void *)*hmaps[k] : *dmaps[k],
                     leaf_cells * sizeof(double),
                     up ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost),
          "quadtree maps");
  if (h->lost)
    check(cudaMemcpy(up ? (void *)g->d.lost : (void *)h->lost, up ? (void *)h->lost : g->d.lost,
                     leaf_cells * sizeof(double),
                     up ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost),
          "losses");
  ts_real *const inputs[3][2] = {
      {g->d.rain, h->rain}, {g->d.loss_initial, h->loss_initial}, {g->d.loss_rate, h->loss_rate}};
  for (int k = 0; k < 3 && up; k++)
    if (inputs[k][1])
      check(cudaMemcpy(inputs[k][0], inputs[k][1], leaf_cells * sizeof(ts_real),
                       cudaMemcpyHostToDevice),
            "rain and losses");
  if (up)
    check(cudaMemcpy(g->d.active, h->active, cells, cudaMemcpyHostToDevice), "activity");
  if (up && h->friction)
    check(cudaMemcpy(g->d.friction, h->friction, cells * sizeof(ts_real), cudaMemcpyHostToDevice),
          "friction");
}

static void gpu_upload(void *x, const void *view) {
  copy_arrays(on_device(x), (swe_buq_view *)view, 1);
}

static void gpu_download(void *x, void *view) {
  copy_arrays(on_device(x), (swe_buq_view *)view, 0);
}

static void gpu_read_cells(void *x, void *view, int n, const int64_t *cells) {
  gpu_state *g = on_device(x);
  swe_buq_view *h = (swe_buq_view *)view;
  size_t in = sizeof(long long) * 2 * n, bytes = in + sizeof(double) * 11 * n;
  double *values = n > 0 ? (double *)malloc(sizeof(double) * 11 * n) : NULL;
  if (!values)
    return;
  if (bytes > g->probe_bytes) {
    cudaFree(g->probe);
    check(cudaMalloc((void **)&g->probe, bytes), "probe buffer");
    g->probe_bytes = bytes;
  }
  check(cudaMemcpy(g->probe, cells, in, cudaMemcpyHostToDevice), "probed cells");
  k_gather<<<grid_of(n), THREADS>>>(g->d, (const long long *)g->probe, n,
                                    (double *)(g->probe + in));
  check(cudaMemcpy(values, g->probe + in, sizeof(double) * 11 * n, cudaMemcpyDeviceToHost),
        "probed values");
  double **maps[SWE_BUQ_NMAPS] = SWE_BUQ_MAPS(h);
  for (int q = 0; q < n; q++) {
    const double *d = values + 11 * q;
    for (int k = 0; k < SWE_BUQ_NMAPS; k++)
      (*maps[k])[cells[2 * q + 1]] = d[k];
    const ts_real *r = (const ts_real *)(d + 6);
    int64_t c = cells[2 * q];
    h->w[c] = r[0], h->hu[c] = r[1], h->hv[c] = r[2], h->u[c] = r[3], h->v[c] = r[4];
  }
  free(values);
}

static ts_status gpu_attach(void **out, const void *view, int nblocks, int levels, int device) {
  const swe_buq_view *h = (const swe_buq_view *)view;
  if ((long long)nblocks * h->P > INT_MAX)
    return ts_error(TS_ERR_INPUT,
                    "swe: %d quadtree blocks are too many for one GPU (at most 2^31 elements "
                    "per array)",
                    nblocks);
  if (cudaSetDevice(device) != cudaSuccess)
    return ts_error(TS_ERR_INPUT, "swe: CUDA device %d cannot be used", device);
  gpu_state *g = (gpu_state *)calloc(1, sizeof *g);
  if (!g || !(g->level_of = (int *)malloc(sizeof(int) * (size_t)nblocks)) ||
      !(g->by_level = (int *)malloc(sizeof(int) * (size_t)nblocks))) {
    if (g)
      free(g->level_of);
    free(g);
    return ts_error(TS_ERR_NOMEM, "out of memory");
  }
  g->device = device, g->nblocks = nblocks, g->levels = levels;
  g->d = *h;
  for (int k = 0; k < nblocks; k++)
    g->level_of[k] = h->blocks[k].level;
  size_t cells = (size_t)nblocks * h->P, leaf_cells = (size_t)nblocks * h->M * h->M;
  ts_real **arrays[SWE_BUQ_NARRAYS] = SWE_BUQ_ARRAYS(&g->d);
  double **maps[SWE_BUQ_NMAPS] = SWE_BUQ_MAPS(&g->d);
  int failed = 0;
  for (int k = 0; k < SWE_BUQ_NARRAYS; k++)
    failed |= cudaMalloc((void **)arrays[k], cells * sizeof(ts_real)) != cudaSuccess;
  for (int k = 0; k < SWE_BUQ_NMAPS; k++)
    failed |= cudaMalloc((void **)maps[k], leaf_cells * sizeof(double)) != cudaSuccess;
  failed |= cudaMalloc((void **)&g->d.active, cells) != cudaSuccess;
  if (h->friction)
    failed |= cudaMalloc((void **)&g->d.friction, cells * sizeof(ts_real)) != cudaSuccess;
  ts_real **inputs[3] = {&g->d.rain, &g->d.loss_initial, &g->d.loss_rate};
  const ts_real *host_inputs[3] = {h->rain, h->loss_initial, h->loss_rate};
  for (int k = 0; k < 3; k++) {
    *inputs[k] = NULL;
    if (host_inputs[k])
      failed |= cudaMalloc((void **)inputs[k], leaf_cells * sizeof(ts_real)) != cudaSuccess;
  }
  g->d.lost = NULL;
  if (h->lost)
    failed |= cudaMalloc((void **)&g->d.lost, leaf_cells * sizeof(double)) != cudaSuccess;
  failed |= cudaMalloc((void **)&g->blocks, sizeof(ts_buq_block) * nblocks) != cudaSuccess;
  failed |= cudaMalloc((void **)&g->list, sizeof(int) * nblocks) != cudaSuccess;
  failed |= cudaMalloc((void **)&g->ghost_list, sizeof(int) * nblocks) != cudaSuccess;
  failed |= cudaMalloc((void **)&g->dropped, sizeof(int) * nblocks) != cudaSuccess;
  failed |= cudaMalloc((void **)&g->wet, nblocks) != cudaSuccess;
  failed |= cudaMalloc((void **)&g->amax, sizeof(swe_bits) * 2 * levels) != cudaSuccess;
  failed |= cudaMalloc((void **)&g->bad, sizeof(int)) != cudaSuccess;
  if (failed) {
    cudaGetLastError();
    gpu_release(g);
    return ts_error(TS_ERR_NOMEM, "swe: out of GPU memory for %d quadtree blocks", nblocks);
  }
  g->d.blocks = g->blocks;
  check(cudaMemcpy(g->blocks, h->blocks, sizeof(ts_buq_block) * nblocks, cudaMemcpyHostToDevice),
        "quadtree blocks");
  check(cudaMemset(g->bad, 0, sizeof(int)), "flag");
  *out = g;
  return TS_OK;
}

static const void *gpu_mirror(const void *x) { return &((const gpu_state *)x)->d; }

static void gpu_finish(void *x) {
  on_device(x);
  check(cudaDeviceSynchronize(), "quadtree passes");
}

static void gpu_wet(void *x, unsigned char *wet) {
  gpu_state *g = on_device(x);
  k_wet<<<g->nblocks, THREADS>>>(g->d, g->nblocks, g->wet);
  check(cudaMemcpy(wet, g->wet, g->nblocks, cudaMemcpyDeviceToHost), "wet leaves");
}

static void gpu_set_list(void *x, const int *list, const int counts[4], const int *dropped,
                         int ndropped) {
  gpu_state *g = on_device(x);
  int n = counts[3];
  for (int c = 0; c < 4; c++)
    g->counts[c] = counts[c];
  /* the ghost list by level from the coarsest, each level's range */
  int at = 0;
  for (int l = g->levels - 1; l >= 0; l--) {
    g->level_first[l] = at;
    for (int p = 0; p < n; p++)
      if (g->level_of[list[p]] == l)
        g->by_level[at++] = list[p];
    g->level_count[l] = at - g->level_first[l];
  }
  if (n > 0) {
    check(cudaMemcpy(g->list, list, sizeof(int) * n, cudaMemcpyHostToDevice), "leaf list");
    check(cudaMemcpy(g->ghost_list, g->by_level, sizeof(int) * n, cudaMemcpyHostToDevice),
          "leaf list");
  }
  if (ndropped > 0) {
    check(cudaMemcpy(g->dropped, dropped, sizeof(int) * ndropped, cudaMemcpyHostToDevice),
          "dropped leaves");
    k_drop<<<grid_of((long)ndropped * g->d.P), THREADS>>>(g->d, g->dropped, ndropped);
  }
}

static void gpu_ghosts(void *x) {
  gpu_state *g = on_device(x);
  int n = g->counts[3], M = g->d.M, frame = M + 2 * SWE_GHOST;
  if (n == 0)
    return;
  k_fill<<<grid_of((long)n * 4 * SWE_GHOST * M), THREADS>>>(g->d, g->ghost_list, n);
  for (int l = g->levels - 2; l >= 0; l--)
    if (g->level_count[l] > 0)
      k_coarser<<<grid_of((long)g->level_count[l] * 4 * (M / 2)), THREADS>>>(
          g->d, g->ghost_list, g->level_first[l], g->level_count[l]);
  k_ghost_velocity<<<grid_of((long)n * frame * frame), THREADS>>>(g->d, g->ghost_list, n);
}

static void gpu_fluxes(void *x, int speeds) {
  gpu_state *g = on_device(x);
  int n = g->counts[2], M = g->d.M;
  if (speeds)
    check(cudaMemsetAsync(g->amax, 0, sizeof(swe_bits) * 2 * g->levels), "wave speeds");
  if (n > 0 && M == 16)
    k_sweep<16><<<n, SWEEP_THREADS>>>(g->d, g->list, n, speeds ? g->amax : NULL);
  else if (n > 0)
    k_sweep<8><<<(n + SWEEP_LEAVES - 1) / SWEEP_LEAVES, SWEEP_THREADS>>>(g->d, g->list, n,
                                                                         speeds ? g->amax : NULL);
}

static void gpu_speeds(void *x, double amax[][2]) {
  gpu_state *g = on_device(x);
  swe_bits bits[2 * TS_BUQ_MAX_LEVELS];
  check(cudaMemcpy(bits, g->amax, sizeof(swe_bits) * 2 * g->levels, cudaMemcpyDeviceToHost),
        "wave speeds");
  for (int l = 0; l < g->levels; l++)
    amax[l][0] = (double)swe_from_bits(bits[2 * l]),
    amax[l][1] = (double)swe_from_bits(bits[2 * l + 1]);
}

static void gpu_limit(void *x, double dt) {
  gpu_state *g = on_device(x);
  int n = g->counts[1], M = g->d.M;
  if (n == 0)
    return;
  k_limit<<<grid_of((long)n * M * M), THREADS>>>(g->d, g->list, n, (ts_real)dt);
  k_limit_ghosts<<<grid_of((long)n * 4 * M), THREADS>>>(g->d, g->list, n);
}

static void gpu_update(void *x, double dt, int stage) {
  gpu_state *g = on_device(x);
  int n = g->counts[0], M = g->d.M;
  if (n > 0)
    k_update<<<grid_of((long)n * M * M), THREADS>>>(g->d, g->list, n, (ts_real)dt, stage, g->bad);
}

static int gpu_take_bad(void *x) {
  gpu_state *g = on_device(x);
  int bad = 0;
  check(cudaMemcpy(&bad, g->bad, sizeof bad, cudaMemcpyDeviceToHost), "non-finite flag");
  if (bad)
    check(cudaMemset(g->bad, 0, sizeof(int)), "non-finite flag");
  return bad;
}

static void gpu_record(void *x, double t, double dt) {
  gpu_state *g = on_device(x);
  int n = g->counts[0], M = g->d.M;
  if (n > 0)
    k_record<<<grid_of((long)n * M * M), THREADS>>>(g->d, g->list, n, t, dt);
  check(cudaGetLastError(), "quadtree kernels");
}

static void gpu_sources(void *x, double dt) {
  gpu_state *g = on_device(x);
  k_sources<<<grid_of((long)g->d.owned * g->d.M * g->d.M), THREADS>>>(g->d, g->d.owned, dt);
}

static void gpu_set_rain(void *x, const void *view) {
  gpu_state *g = on_device(x);
  const swe_buq_view *h = (const swe_buq_view *)view;
  g->d.rain_rate = h->rain_rate;
  if (h->rain)
    check(cudaMemcpy(g->d.rain, h->rain, sizeof(ts_real) * g->nblocks * g->d.M * g->d.M,
                     cudaMemcpyHostToDevice),
          "rain");
}

extern "C" const swe_buq_passes SWE_BUQ_GPU = {
    gpu_attach, gpu_release,  gpu_upload, gpu_download, gpu_read_cells, gpu_mirror,
    gpu_wet,    gpu_set_list, gpu_ghosts, gpu_fluxes,   gpu_speeds,     gpu_limit,
    gpu_update, gpu_take_bad, gpu_record, gpu_sources,  gpu_set_rain,   gpu_finish};
