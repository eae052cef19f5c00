/* CUDA passes of the shallow-water block engine on quadtree grids (swe_buq.h), compiled once per
 * precision: TS_REAL_DOUBLE=0 defines swe_buq_gpu_float, 1 swe_buq_gpu_double. A mirror in
 * device memory of the engine's arrays (swe_buq_leaf.h's view) takes the passes of a step as
 * kernels that call the view's functions, the same code as the CPU loops, built without fused
 * multiply-add: both backends give the same bits. A thread per ghost cell, per cell (limiters,
 * update, maps); the sweeps a thread block per leaf (per four leaves of 8^2 cells), with the
 * reconstructions and face corrections in shared memory; the leaves of the step are lists in
 * device memory (the passes' nested ranges, and for the ghosts by level from the coarsest, so
 * the prolongations run level by level). Every kernel skips the leaves out of the step (`on`)
 * and takes the step's length from a clock in device memory: the host sets it (steps it drives:
 * it reads back the leaves holding water when they change, the wave speeds of each level and the
 * non-finite flag), or, for a part alone in its process, the device computes it and takes runs
 * of steps from a CUDA graph without the host, every leaf listed and the leaves of each step
 * marked on the device. Leaves whose sides and corners all touch leaves of their own level take
 * fused kernels instead (the plain leaves, below). Each pass makes its part's device current and
 * queues on the part's stream: the parts of one engine may lie on several GPUs. */
#include "physics/swe/swe_gpu.cuh"
#include "physics/swe/swe_window.cuh"

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

/* Leaves for the passes on device: `list` with the passes' nested ranges (update and maps,
 * limiters, fluxes, ghosts: list[0 .. counts[i])), and the ghost range by level from the
 * coarsest, each level's range. */
typedef struct leaf_lists {
  int *list, *ghost_list;
  int counts[4];
  int level_first[TS_BUQ_MAX_LEVELS], level_count[TS_BUQ_MAX_LEVELS];
} leaf_lists;

/* The device's mirror: the view on device arrays; the lists of the step's leaves (`all`, as the
 * engine gave them; with plain leaves, `first` without them for the first stage's ghosts and
 * sweeps, `second` for the second stage: without the plain leaves whose limiters no other
 * updated leaf reads, the others after the updated leaves); the plain leaves of the update
 * (plain_list); which leaves are plain and their levels on the host; the read-back buffers. */
/* The clock of a part's steps in device memory: the step under way (its start, length and end),
 * the run's target and stop time and longest step, and its state; per step of the run the time
 * after it and its length. Host-driven steps set t_after and dt only. */
typedef struct buq_clock {
  double t, dt, t_after, target, stop, step_max;
  int idle;      /* the run has ended: the passes of later steps do nothing */
  int bad;       /* a stage produced a non-finite value */
  int collapsed; /* the time step collapsed (dt is its value) */
  int steps;     /* steps taken in the run */
  double log[2][TS_SWE_ADVANCE_MAX];
} buq_clock;

/* What every pass of a step reads: the clock, and the leaves of the step. */
struct step_t {
  const buq_clock *clock;
  const unsigned char *on;
};

__device__ static inline bool skip(step_t s, int k) { return s.clock->idle || !s.on[k]; }

typedef struct gpu_state {
  int device, nblocks, levels;
  cudaStream_t stream;
  swe_buq_view d;
  ts_buq_block *blocks;
  leaf_lists all, first, second;
  int *plain_list, nplain, *dropped;
  int *unit_list, nruns, nsingle; /* device: the plain leaves in units (runs, then single) */
  int *unit_host;                 /* host: unit_list being built */
  unsigned char *in_plain;        /* device: 1 for the leaves of plain_list */
  int stage;                      /* the stage the next passes belong to */
  int plain_recorded;             /* the last stage recorded the plain leaves' maps */
  int maps_done;                  /* ... and the other leaves' */
  unsigned char *plain, *mark;    /* host: plain leaves; scratch */
  ts_buq_block *host_blocks;
  int *level_of;             /* host: each leaf's level */
  int *by_level, *host_list; /* host: lists being built */
  unsigned char *wet, *on;   /* device: per leaf, holds water, in the step */
  int chosen;                /* choose has given the leaves once */
  int marked, change_read;   /* take_bad marked the next step's leaves and read their flag */
  int early_exit;            /* that of the last marking */
  swe_bits *amax;            /* 2 per level: x, y */
  int *bad;
  char *probe; /* read_cells: the cells, then their values (device), grown as needed */
  size_t probe_bytes;
  buq_clock *clock;         /* device */
  unsigned char *plain_on;  /* device: plain leaves (runs of steps mark in_plain from it) */
  unsigned char *was;       /* device: the leaves of the step before (runs of steps) */
  long long *watch;         /* device: watched cells (pairs as read_cells') */
  double *rows, *rows_host; /* their 11 values per cell after each step of a run */
  int nwatch;               /* watched cells */
  int taken;                /* steps of the last run */
  int graph_early_exit;     /* that of the recorded graph */
  cudaGraphExec_t graph;    /* the passes of one step (runs of steps), NULL until recorded */
  int joined;               /* the passes stand as recorded in the graph of several parts */
  swe_bits *published;      /* device: the first stage's wave speeds for the other parts */
  cudaEvent_t order_mark, stream_mark; /* ordering with other streams (on the part's, on another) */
} gpu_state;

static inline int grid_of(long n) { return (int)((n + THREADS - 1) / THREADS); }

/* ------------------------------------------------------------------ kernels */

/* Per leaf, whether it holds water (all leaves without the early exit). */
static __global__ void k_wet(swe_buq_view v, int nblocks, unsigned char *wet, int early_exit,
                             const buq_clock *clock) {
  int k = blockIdx.x, M = v.M, any = !early_exit;
  if (clock->idle)
    return;
  for (int c = threadIdx.x; c < M * M && !any; c += blockDim.x)
    any |= buq_wet_cell(&v, k, c % M, c / M);
  any = __syncthreads_or(any);
  if (threadIdx.x == 0 && k < nblocks)
    wet[k] = (unsigned char)any;
}

/* The leaves of the step (buq_leaf_on) into `on`; *changed set where one differs from before. */
static __global__ void k_choose(swe_buq_view v, int nblocks, const unsigned char *wet,
                                unsigned char *on, int *changed) {
  int k = (int)(blockIdx.x * blockDim.x + threadIdx.x);
  if (k >= nblocks)
    return;
  unsigned char now = (unsigned char)buq_leaf_on(v.blocks, wet, k);
  if (now != on[k])
    *changed = 1, on[k] = now;
}

/* Element e of a dropped leaf: zero fluxes and limiter 1, and its state in (w0, hu0, hv0) too,
 * where a second stage reads the state of its neighbours (its own is no longer updated). */
__device__ static inline void drop_element(const swe_buq_view *v, swe_idx e) {
  for (int c = 0; c < 3; c++)
    v->fx[c][e] = v->fy[c][e] = 0;
  v->drain[e] = SWE_R(1);
  v->w0[e] = v->w[e], v->hu0[e] = v->hu[e], v->hv0[e] = v->hv[e];
}

/* The same in a run of steps, where every leaf is listed, a thread block per leaf: the leaves of
 * the step before kept (was), which plain leaves are in the step (in_plain), and a leaf that
 * leaves it dropped. */
static __global__ void k_mark_run(swe_buq_view v, const unsigned char *wet, unsigned char *on,
                                  const unsigned char *plain, unsigned char *in_plain,
                                  unsigned char *was, const buq_clock *clock) {
  __shared__ bool dropped;
  int k = blockIdx.x;
  if (clock->idle)
    return;
  if (threadIdx.x == 0) {
    unsigned char now = (unsigned char)buq_leaf_on(v.blocks, wet, k), before = on[k];
    was[k] = before, on[k] = now, in_plain[k] = plain[k] && now;
    dropped = before && !now;
  }
  __syncthreads();
  for (int c = threadIdx.x; c < v.P && dropped; c += blockDim.x)
    drop_element(&v, (swe_idx)k * v.P + c);
}

/* Dropped leaves (a list: steps the host drives). */
static __global__ void k_drop(swe_buq_view v, const int *dropped, int n) {
  long t = (long)blockIdx.x * blockDim.x + threadIdx.x;
  if (t < (long)n * v.P)
    drop_element(&v, (swe_idx)dropped[t / v.P] * v.P + (swe_idx)(t % v.P));
}

/* Copies and restrictions: a thread per (leaf, side, layer, position). */
static __global__ void k_fill(swe_buq_view v, step_t st, const int *list, int n) {
  int t = (int)(blockIdx.x * blockDim.x + threadIdx.x), M = v.M;
  int per = 4 * SWE_GHOST * M;
  if (t >= n * per)
    return;
  int k = list[t / per], r = t % per, side = r / (SWE_GHOST * M);
  if (skip(st, k))
    return;
  r %= SWE_GHOST * M;
  if (v.blocks[k].side_relation[side] != TS_BUQ_COARSER)
    buq_fill_ghost(&v, k, side, r / M, r % M);
}

/* Prolongations of the leaves list[first .. first + n): a thread per (leaf, side, coarse cell). */
static __global__ void k_coarser(swe_buq_view v, step_t st, const int *list, int first, int n) {
  int t = (int)(blockIdx.x * blockDim.x + threadIdx.x), half = v.M / 2;
  if (t >= n * 4 * half)
    return;
  int k = list[first + t / (4 * half)], side = (t / half) % 4;
  if (!skip(st, k) && v.blocks[k].side_relation[side] == TS_BUQ_COARSER)
    buq_fill_coarser(&v, k, side, t % half);
}

/* Velocities of the ghost cells (of every cell of a copy of another part's leaf): a thread per
 * (leaf, cell of its window). */
static __global__ void k_ghost_velocity(swe_buq_view v, step_t st, const int *list, int n) {
  int t = (int)(blockIdx.x * blockDim.x + threadIdx.x), M = v.M, side = M + 2 * SWE_GHOST;
  if (t >= n * side * side)
    return;
  int k = list[t / (side * side)], c = t % (side * side);
  int i = c % side - SWE_GHOST, j = c / side - SWE_GHOST;
  if ((i >= 0 && j >= 0 && i < M && j < M && k < v.owned) || skip(st, k))
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
    k_sweep(swe_buq_view v, step_t st, const int *list, int n, swe_bits *amax) {
  enum { LEAVES = SWEEP_THREADS / (M * M), CELLS = M * (M + 2), FACES = M * (M + 1) };
  enum { FACE_THREADS = (LEAVES * FACES + 31) / 32 * 32 }; /* whole warps: they shuffle */
  __shared__ swe_side lo[LEAVES * CELLS], hi[LEAVES * CELLS];
  __shared__ int act[LEAVES * CELLS];
  __shared__ ts_real corr_lo[LEAVES * FACES], corr_hi[LEAVES * FACES];
  __shared__ swe_bits smax[LEAVES][2];
  __shared__ bool live[LEAVES]; /* the leaf is in the step */
  int base = blockIdx.x * LEAVES, leaves = min(LEAVES, n - base);
  if (threadIdx.x < 2 * LEAVES)
    smax[threadIdx.x / 2][threadIdx.x % 2] = 0;
  if (threadIdx.x < LEAVES)
    live[threadIdx.x] = (int)threadIdx.x < leaves && !skip(st, list[base + threadIdx.x]);
  if (!__syncthreads_or(threadIdx.x < LEAVES && live[threadIdx.x]))
    return;
  for (int axis = 1; axis >= 0; axis--) {
    __syncthreads(); /* the shared arrays of the previous axis are read */
    for (int t = threadIdx.x; t < leaves * CELLS; t += SWEEP_THREADS) {
      int q = t / CELLS, r = t % CELLS;
      if (!live[q])
        continue;
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
      if (q < leaves && live[q]) { /* (t beyond the faces: q >= LEAVES) */
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
      if (!live[q])
        continue;
      int line = axis ? r / M : r % M, cell = axis ? r % M : r / M;
      int g = q * CELLS + line * (M + 2) + cell + 1, face = q * FACES + line * (M + 1) + cell;
      buq_line_source(&v, list[base + q], axis, buq_line_of(&v, line, axis), cell, act[g], lo[g],
                      hi[g], corr_hi[face], corr_lo[face + 1]);
    }
  }
  __syncthreads();
  if (amax && threadIdx.x < 2 * leaves && live[threadIdx.x / 2]) {
    int q = threadIdx.x / 2, axis = threadIdx.x % 2;
    swe_bits *to = &amax[2 * v.blocks[list[base + q]].level + (axis ? 0 : 1)];
    if (smax[q][axis] > *(volatile swe_bits *)to)
      atomicMax(to, smax[q][axis]);
  }
}

static __global__ void k_limit(swe_buq_view v, step_t st, const int *list, int n) {
  int t = (int)(blockIdx.x * blockDim.x + threadIdx.x), MM = v.M * v.M;
  if (t < n * MM && !skip(st, list[t / MM]))
    buq_drain_cell(&v, list[t / MM], (t % MM) % v.M, (t % MM) / v.M, (ts_real)st.clock->dt);
}

static __global__ void k_limit_ghosts(swe_buq_view v, step_t st, const int *list, int n) {
  int t = (int)(blockIdx.x * blockDim.x + threadIdx.x), per = 4 * v.M;
  if (t < n * per && !skip(st, list[t / per]))
    buq_drain_ghost(&v, list[t / per], (t % per) / v.M, (t % per) % v.M);
}

/* The update of a stage from the state of v into that of `to`; with `record`, the step's last
 * stage also records the maps. */
static __global__ void k_update(swe_buq_view v, swe_buq_view to, step_t st, const int *list, int n,
                                int stage, int record, int *bad) {
  int t = (int)(blockIdx.x * blockDim.x + threadIdx.x), MM = v.M * v.M;
  if (t >= n * MM)
    return;
  int k = list[t / MM], i = (t % MM) % v.M, j = (t % MM) / v.M;
  if (skip(st, k) || !v.active[buq_cell(&v, k, i, j)])
    return;
  if (buq_update_cell(&v, &to, k, i, j, (ts_real)st.clock->dt, stage))
    *bad = 1;
  if (record)
    buq_record_cell(&to, k, i, j, st.clock->t_after, st.clock->dt);
}

/* Rain and losses on every leaf of the part. */
static __global__ void k_sources(swe_buq_view v, int n, const buq_clock *clock) {
  int t = (int)(blockIdx.x * blockDim.x + threadIdx.x), MM = v.M * v.M;
  if (t < n * MM && !clock->idle)
    buq_source_cell(&v, t / MM, (t % MM) % v.M, (t % MM) / v.M, clock->dt);
}

static __global__ void k_record(swe_buq_view v, step_t st, const int *list, int n) {
  int t = (int)(blockIdx.x * blockDim.x + threadIdx.x), MM = v.M * v.M;
  if (t < n * MM && !skip(st, list[t / MM]))
    buq_record_cell(&v, list[t / MM], (t % MM) % v.M, (t % MM) / v.M, st.clock->t_after,
                    st.clock->dt);
}

/* The maps and state of cell q of `cells` (window element, maps' element) into `out`, 11 doubles
 * per cell: the 6 maps, then w, hu, hv, u, v in the working precision. */
enum { GATHERED = 11 };
__device__ static void gather_cell(const swe_buq_view &v, const long long *cells, int q,
                                   double *out) {
  swe_idx c = (swe_idx)cells[2 * q], m = (swe_idx)cells[2 * q + 1];
  double *d = out + GATHERED * q;
  const double *maps[SWE_BUQ_NMAPS] = {v.max_h,   v.max_speed, v.arrival,
                                       v.max_eta, v.duration,  v.max_hazard};
  for (int k = 0; k < SWE_BUQ_NMAPS; k++)
    d[k] = maps[k][m];
  ts_real *r = (ts_real *)(d + 6);
  r[0] = v.w[c], r[1] = v.hu[c], r[2] = v.hv[c], r[3] = v.u[c], r[4] = v.v[c];
}

/* ... of n cells (read_cells). */
static __global__ void k_gather(swe_buq_view v, const long long *cells, int n, double *out) {
  int q = (int)(blockIdx.x * blockDim.x + threadIdx.x);
  if (q < n)
    gather_cell(v, cells, q, out);
}

/* ------------------------------------------------------------------ the clock */

/* A step the host drives: its length and end time. */
static __global__ void k_set_step(buq_clock *clock, double dt, double t_after) {
  clock->dt = dt, clock->t_after = t_after, clock->idle = 0;
}

/* A run of steps from t towards `target` (steps shortened to land on it, none longer than
 * step_max), ending after the first that reaches `stop`. */
static __global__ void k_begin(buq_clock *clock, double t, double target, double stop,
                               double step_max, int *bad) {
  clock->t = clock->t_after = t;
  clock->target = target, clock->stop = stop, clock->step_max = step_max;
  clock->idle = clock->bad = clock->collapsed = clock->steps = 0;
  *bad = 0;
}

/* The step from the first stage's wave speeds of every level (in finest cells per second, bits
 * of non-negative reals, x and y per level), as the host computes it (swe_time_step). A
 * collapsed step ends the run. */
__device__ static void take_step(buq_clock *clock, const swe_bits *amax, int levels, double cfl,
                                 double dx) {
  double ax = 0, ay = 0;
  for (int l = 0; l < levels; l++) {
    ax = fmax(ax, ldexp((double)swe_from_bits(amax[2 * l]), -l));
    ay = fmax(ay, ldexp((double)swe_from_bits(amax[2 * l + 1]), -l));
  }
  double t_after;
  double dt = swe_time_step(ax, ay, cfl, dx, dx, clock->step_max, clock->t, clock->target,
                            sizeof(ts_real) == 8, &t_after);
  clock->dt = dt;
  if (!(dt > 0)) {
    clock->collapsed = clock->idle = 1;
    return;
  }
  clock->t_after = t_after;
}

static __global__ void k_dt(buq_clock *clock, const swe_bits *amax, int levels, double cfl,
                            double dx) {
  if (!clock->idle)
    take_step(clock, amax, levels, cfl, dx);
}

/* Runs over several parts: each part publishes its first stage's wave speeds in the slot of the
 * step's parity (a part still reading the last step's slot finds it unchanged); after the parts
 * waited for each other, each takes the step from the largest speeds of each level published. */
static __global__ void k_publish(const buq_clock *clock, const swe_bits *amax, int levels,
                                 swe_bits *published) {
  if (clock->idle)
    return;
  swe_bits *slot = published + 2 * levels * (clock->steps & 1);
  for (int c = 0; c < 2 * levels; c++)
    slot[c] = amax[c];
}

struct published_t {
  const swe_bits *of[SWE_DEVICE_RUN_PARTS];
  int n;
};

static __global__ void k_dt_over(buq_clock *clock, published_t pub, int levels, double cfl,
                                 double dx) {
  if (clock->idle)
    return;
  swe_bits amax[2 * TS_BUQ_MAX_LEVELS] = {0};
  for (int q = 0; q < pub.n; q++) {
    const volatile swe_bits *slot = pub.of[q] + 2 * levels * (clock->steps & 1);
    for (int c = 0; c < 2 * levels; c++)
      amax[c] = slot[c] > amax[c] ? slot[c] : amax[c];
  }
  take_step(clock, amax, levels, cfl, dx);
}

/* The end of a step of a run (a thread block): the watched cells into the row of the step
 * (rows, n cells), the step logged, the clock at its end; the run ends after a non-finite value,
 * at its stop or target time, or when its log is full. */
static __global__ void k_end(buq_clock *clock, const int *bad, swe_buq_view v,
                             const long long *watch, int n, double *rows) {
  if (clock->idle)
    return;
  int slot = clock->steps;
  for (int q = threadIdx.x; q < n; q += blockDim.x)
    gather_cell(v, watch, q, rows + (size_t)slot * GATHERED * n);
  __syncthreads();
  if (threadIdx.x != 0)
    return;
  clock->log[0][slot] = clock->t_after;
  clock->log[1][slot] = clock->dt;
  clock->t = clock->t_after;
  clock->steps = slot + 1;
  clock->bad = *bad;
  if (clock->bad || clock->t >= clock->stop || clock->t >= clock->target ||
      clock->steps == TS_SWE_ADVANCE_MAX)
    clock->idle = 1;
}

/* ------------------------------------------------------------------ plain leaves
 *
 * A leaf of this part whose four sides and four corners touch leaves of its own level here (a
 * plain leaf) needs no ghost cells: a thread block copies its cells and a ring of R cells of its
 * neighbours into shared memory and runs the passes there, as the tile engine does on the
 * uniform grid (swe_tiles.cu), with the same functions on the same values, so the bits are
 * those of the passes above. A thread block takes a run of PX plain leaves of the step side by
 * side along x (a unit: the first leaf and its east neighbours, plain_run(M) of them where the
 * step has them, else one), so that the ring of neighbours' cells it copies and the faces and
 * cells of the ring it computes twice are shared by PX leaves. k_plain_fluxes gives the first
 * stage's fluxes, bed sources, start state and the characteristic speeds of the first ghost
 * ring; the time step waits for every wave speed; then k_plain_update computes the limiters of
 * the leaf and its first ring from the stored fluxes and updates the leaf. k_plain_stage runs a
 * second stage whole: the fluxes of the unit and its first ring, their limiters, the update and
 * the flood maps. The updates of RK2 write the other stage's arrays (gpu_update), so a block
 * reads its neighbours' state while other blocks update theirs; Euler's update runs in place
 * after k_plain_fluxes saved the start of the step in (w0, hu0, hv0), which the limiters of a
 * plain neighbour's cells read. A leaf out of the step (early exit) in a unit is read, never
 * written.
 * Shared arrays whose lives do not overlap share storage: the y fluxes the velocities and
 * corners, the limiters and speed caps the reconstructed sides. */
template <int M, int R, int PX> struct plain_tile {
  /* the unit, R cells around, one more corner */
  enum { SX = PX * M + 2 * R + 1, SY = M + 2 * R + 1, N = SX * SY };
  static size_t bytes() { return (size_t)N * (14 * sizeof(ts_real) + 2 * sizeof(side_t) + 1); }
};

/* Plain leaves side by side in a thread block: four of 8^2 cells (2,358 -> 2,740 Mcells/s on the
 * wet basin at 8192^2 on an H200), one of 16^2 (two: 3,452 -> 3,275). */
__host__ __device__ static constexpr int plain_run(int M) { return M == 16 ? 1 : 4; }

template <int M, int R, int PX> __device__ static window_t plain_layout(char *mem) {
  enum { N = plain_tile<M, R, PX>::N };
  window_t t;
  ts_real *r = (ts_real *)mem;
  t.a.w = r, t.a.hu = r + N, t.a.hv = r + 2 * N, t.a.bed = r + 3 * N, t.a.corner = r + 4 * N;
  t.a.u = r + 5 * N, t.a.v = r + 6 * N, t.a.char_speed = r + 7 * N;
  for (int c = 0; c < 3; c++)
    t.a.fx[c] = r + (8 + c) * N;
  t.corr = r + 11 * N, t.a.src_x = r + 12 * N, t.a.src_y = r + 13 * N;
  t.a.fy[0] = t.a.u, t.a.fy[1] = t.a.v, t.a.fy[2] = (ts_real *)t.a.corner;
  t.lo = (side_t *)(r + 14 * N), t.hi = t.lo + N;
  t.a.drain = (ts_real *)t.lo, t.a.speed_cap = t.a.drain + N;
  t.a.active = (const unsigned char *)(t.hi + N);
  t.a.w_carry = t.a.w0 = t.a.hu0 = t.a.hv0 = NULL;
  t.a.friction = NULL;
  t.a.row = plain_tile<M, R, PX>::SX;
  t.a.start_kept = 0;
  return t;
}

/* Shared index of the unit's cell (i, j) (i across its PX leaves). */
template <int M, int R, int PX> __device__ static inline int plain_at(int i, int j) {
  return (i + R) + (j + R) * plain_tile<M, R, PX>::SX;
}

/* A unit's leaves from its first along x, and those in the step (bit q for leaf q). Leaf q is
 * picked by selects, not by index, so that the leaves stay in registers. */
template <int PX> struct plain_unit {
  int leaf[PX];
  unsigned on;
  __device__ plain_unit(const swe_buq_view *v, step_t st, int first) {
    on = 0;
#pragma unroll
    for (int q = 0; q < PX; q++) {
      leaf[q] = q == 0 ? first : v->blocks[leaf[q - 1]].side[TS_BUQ_EAST][0];
      on |= (unsigned)!skip(st, leaf[q]) << q;
    }
  }
  __device__ int at(int q) const {
    int k = leaf[0];
#pragma unroll
    for (int p = 1; p < PX; p++)
      k = q == p ? leaf[p] : k;
    return k;
  }
  __device__ bool in_step(int q) const { return (on >> q) & 1u; }
};

/* Copies the state, beds and activity of the unit's leaves and R cells of their neighbours, then
 * computes the velocities. */
template <int M, int R, int PX>
__device__ static void plain_load(window_t *t, const swe_buq_view *v, const plain_unit<PX> &u,
                                  const swe_consts *kc) {
  enum { SX = plain_tile<M, R, PX>::SX, N = plain_tile<M, R, PX>::N, COLS = PX + 2 };
  __shared__ int around[3 * COLS]; /* the leaf of each (column, row) of leaves, from (-1, -1) */
  WINDOW_FOR(e, 3 * COLS) {
    int qi = e % COLS - 1, qj = e / COLS - 1;
    const ts_buq_block *b = &v->blocks[u.at(qi < 0 ? 0 : (qi >= PX ? PX - 1 : qi))];
    int n;
    if (qi >= 0 && qi < PX)
      n = qj == 0 ? u.at(qi) : b->side[qj < 0 ? TS_BUQ_SOUTH : TS_BUQ_NORTH][0];
    else if (qj == 0)
      n = b->side[qi < 0 ? TS_BUQ_WEST : TS_BUQ_EAST][0];
    else
      n = b->corner[(qi > 0) + 2 * (qj > 0)];
    around[e] = n;
  }
  __syncthreads();
  WINDOW_FOR(e, N) {
    int i = e % SX - R, j = e / SX - R;
    int qi = i < 0 ? -1 : i / M, qj = j < 0 ? -1 : (j >= M ? 1 : 0);
    swe_idx c = buq_cell(v, around[(qi + 1) + (qj + 1) * COLS], i - qi * M, j - qj * M);
    t->a.w[e] = v->w[c], t->a.hu[e] = v->hu[c], t->a.hv[e] = v->hv[c];
    ((ts_real *)t->a.bed)[e] = v->bed[c];
    ((ts_real *)t->a.corner)[e] = v->corner[c];
    ((unsigned char *)t->a.active)[e] = v->active[c];
  }
  __syncthreads();
  WINDOW_FOR(e, N) { swe_cell_velocity(&t->a, kc, e); }
  __syncthreads();
}

/* Stores the fluxes of the faces of the unit's leaves in the step along one axis and their
 * cells' bed sources (completed with their high faces' corrections). */
template <int M, int R, int PX>
__device__ static void plain_store(const window_t *t, const swe_buq_view *v,
                                   const plain_unit<PX> &u, int x_axis) {
  enum { SX = plain_tile<M, R, PX>::SX };
  int step = x_axis ? 1 : SX;
  ts_real *const *to = x_axis ? v->fx : v->fy;
  ts_real *const *from = x_axis ? t->a.fx : t->a.fy;
  WINDOW_FOR(e, PX * (M + 1) * M) { /* consecutive threads along x */
    int q = e / ((M + 1) * M), n = e % ((M + 1) * M);
    if (!u.in_step(q))
      continue;
    int f = x_axis ? n % (M + 1) : n / M, line = x_axis ? n / (M + 1) : n % M;
    int i = x_axis ? f : line, j = x_axis ? line : f;
    int c = plain_at<M, R, PX>(i + q * M, j);
    swe_idx g = buq_cell(v, u.at(q), i, j);
    to[0][g] = from[0][c], to[1][g] = from[1][c], to[2][g] = from[2][c];
    if (f < M)
      (x_axis ? v->src_x : v->src_y)[g] = (x_axis ? t->a.src_x : t->a.src_y)[c] - t->corr[c + step];
  }
}

/* The first stage's sweeps of the plain units `list` (a block each): fluxes, bed sources, the
 * characteristic speeds of the first ghost ring (the speed caps read them), for Euler the state
 * at the start of the step in (w0, hu0, hv0), and, with amax, the largest wave speeds per level
 * and axis over the faces of the leaves in the step. */
template <int M, int PX>
static __global__ void __launch_bounds__(PX *M *M)
    k_plain_fluxes(swe_buq_view v, step_t st, const int *list, swe_bits *amax) {
  enum { R = 2, S = plain_tile<M, R, PX>::SX, W = PX * M };
  extern __shared__ __align__(16) char plain_mem[];
  plain_unit<PX> u(&v, st, list[blockIdx.x]);
  if (!u.on)
    return;
  int level = v.blocks[u.leaf[0]].level;
  window_t t = plain_layout<M, R, PX>(plain_mem);
  /* a face counts where the leaf of its low or high cell is in the step */
  auto x_face = [&](int a, int, int, int) {
    int f = a - R;
    return (f < W && u.in_step(f / M)) || (f > 0 && u.in_step((f - 1) / M));
  };
  auto y_face = [&](int, int b, int, int) { return (int)u.in_step((b - R) / M); };
  swe_consts kc = buq_consts(&v, level);
  plain_load<M, R, PX>(&t, &v, u, &kc);
  WINDOW_FOR(e, PX * 4 * M) {
    int q = e / (4 * M), n = e % (4 * M), gi, gj;
    if (!u.in_step(q))
      continue;
    buq_ghost_at(M, n / M, 0, n % M, &gi, &gj);
    v.char_speed[buq_cell(&v, u.at(q), gi, gj)] =
        t.a.char_speed[plain_at<M, R, PX>(gi + q * M, gj)];
  }
  WINDOW_FOR(e, PX * M * M * (v.rk_order == 1)) { /* Euler's start of the step */
    int q = e / (M * M), n = e % (M * M);
    int c_sh = plain_at<M, R, PX>(n % M + q * M, n / M);
    swe_idx c = buq_cell(&v, u.at(q), n % M, n / M);
    if (u.in_step(q) && t.a.active[c_sh])
      v.w0[c] = t.a.w[c_sh], v.hu0[c] = t.a.hu[c_sh], v.hv0[c] = t.a.hv[c_sh];
  }
  window_reconstruct<W + 2, M, S>(&t, &kc, 1, R - 1, R);
  __syncthreads();
  ts_real ax = window_faces<W + 1, M, S>(&t, &kc, 1, R, R, x_face);
  __syncthreads();
  plain_store<M, R, PX>(&t, &v, u, 1);
  window_reconstruct<M + 2, W, S>(&t, &kc, 0, R - 1, R);
  __syncthreads();
  ts_real ay = window_faces<M + 1, W, S>(&t, &kc, 0, R, R, y_face);
  __syncthreads();
  plain_store<M, R, PX>(&t, &v, u, 0);
  if (amax) {
    block_max(ax, amax + 2 * level);
    block_max(ay, amax + 2 * level + 1);
  }
}

/* The cells a second stage reads around a plain unit. */
enum { PLAIN_REACH = 3 };

/* A second stage of the plain units `list` (a block each), whole, from the state of v: the new
 * state into `to`'s, the velocities, the non-finite flag, and the flood maps at the end of the
 * step. */
template <int M, int PX>
static __global__ void __launch_bounds__(PX *M *M)
    k_plain_stage(swe_buq_view v, swe_buq_view to, step_t st, const int *list, int stage,
                  int *bad) {
  enum { R = PLAIN_REACH, S = plain_tile<M, R, PX>::SX, W = PX * M, CX = W + 2, CY = M + 2 };
  extern __shared__ __align__(16) char plain_mem[];
  plain_unit<PX> u(&v, st, list[blockIdx.x]);
  if (!u.on)
    return;
  ts_real dt = (ts_real)st.clock->dt;
  window_t t = plain_layout<M, R, PX>(plain_mem);
  auto every_face = [](int, int, int, int) { return 1; };
  swe_consts kc = buq_consts(&v, v.blocks[u.leaf[0]].level);
  plain_load<M, R, PX>(&t, &v, u, &kc);
  /* the faces of the unit's cells and of its first ring */
  window_reconstruct<W + 4, CY, S>(&t, &kc, 1, R - 2, R - 1);
  __syncthreads();
  window_faces<W + 3, CY, S>(&t, &kc, 1, R - 1, R - 1, every_face);
  __syncthreads();
  WINDOW_FOR(n, CX * CY) {
    int c = (R - 1 + n % CX) + (R - 1 + n / CX) * S;
    t.a.src_x[c] = t.a.src_x[c] - t.corr[c + 1];
  }
  window_reconstruct<M + 4, CX, S>(&t, &kc, 0, R - 2, R - 1);
  __syncthreads();
  window_faces<M + 3, CX, S>(&t, &kc, 0, R - 1, R - 1, every_face);
  __syncthreads();
  WINDOW_FOR(n, CX * CY) {
    int c = (R - 1 + n % CX) + (R - 1 + n / CX) * S;
    t.a.src_y[c] = t.a.src_y[c] - t.corr[c + S];
    swe_drain_cell(&t.a, &kc, c, dt);
  }
  __syncthreads();
  swe_maps maps = buq_maps(&v, st.clock->t_after, st.clock->dt);
  int any_bad = 0;
  WINDOW_FOR(e, W * M) {
    int i = e % W, j = e / W, q = i / M, cf = plain_at<M, R, PX>(i, j);
    if (!u.in_step(q) || !t.a.active[cf])
      continue;
    int k = u.at(q);
    swe_idx c = buq_local(&v, i - q * M, j);
    swe_arrays out = buq_leaf_arrays(&to, k);
    out.start_kept = 1;
    any_bad |= swe_update_cell(&out, &t.a, &kc, c, cf, dt, stage);
    swe_record_cell(&maps, (swe_idx)k * M * M + (i - q * M) + j * M, out.w[c], out.bed[c],
                    out.hu[c], out.hv[c]);
  }
  if (__syncthreads_or(any_bad) && threadIdx.x == 0)
    *bad = 1;
}

/* The first stage's update of the plain leaves `list` (a block each), after their sweeps
 * (k_plain_fluxes) and before the other leaves' updates: the limiters of the leaf's cells and
 * of its first ring from the stored fluxes and the depths at the start of the step (for Euler,
 * which updates in place, those of a plain neighbour in its (w0, hu0, hv0), as it may be
 * updating its own), the speed caps, then the update from the state of v into `to`'s.
 * in_plain: 1 for the leaves of `list`. */
template <int M>
static __global__ void __launch_bounds__(M *M)
    k_plain_update(swe_buq_view v, swe_buq_view to, step_t st, const int *list,
                   const unsigned char *in_plain, int stage, int *bad) {
  enum { P_MAX = SWE_BUQ_PITCH(SWE_BUQ_MAX_BLOCK) * (SWE_BUQ_MAX_BLOCK + 2 * SWE_GHOST + 1) };
  __shared__ ts_real drain[P_MAX], cap[P_MAX];
  int k = list[blockIdx.x];
  if (skip(st, k))
    return;
  ts_real dt = (ts_real)st.clock->dt;
  const ts_buq_block *b = &v.blocks[k];
  swe_consts kc = buq_consts(&v, b->level);
  swe_idx W = v.W;
  WINDOW_FOR(n, (M + 2) * (M + 2)) {
    int i = n % (M + 2) - 1, j = n / (M + 2) - 1;
    int qi = i < 0 ? -1 : (i >= M ? 1 : 0), qj = j < 0 ? -1 : (j >= M ? 1 : 0);
    if (qi != 0 && qj != 0)
      continue; /* (corners: no update reads them) */
    int nb = qi ? b->side[qi < 0 ? TS_BUQ_WEST : TS_BUQ_EAST][0]
                : (qj ? b->side[qj < 0 ? TS_BUQ_SOUTH : TS_BUQ_NORTH][0] : k);
    swe_idx c = buq_cell(&v, nb, i - qi * M, j - qj * M);
    ts_real w_start = v.rk_order == 1 && nb != k && in_plain[nb] ? v.w0[c] : v.w[c];
    drain[buq_local(&v, i, j)] = swe_drain_of(&kc, dt, v.fx[0][c], v.fx[0][c + 1], v.fy[0][c],
                                              v.fy[0][c + W], w_start - v.bed[c]);
  }
  swe_arrays f = buq_leaf_arrays(&v, k), a = buq_leaf_arrays(&to, k);
  WINDOW_FOR(n, M * M) {
    swe_idx c = buq_local(&v, n % M, n / M);
    cap[c] = swe_speed_cap(f.char_speed, c, W);
  }
  __syncthreads();
  f.drain = drain, f.speed_cap = cap;
  a.start_kept = 1; /* elsewhere (RK2) or saved by k_plain_fluxes (Euler) */
  int any_bad = 0;
  WINDOW_FOR(n, M * M) {
    swe_idx c = buq_local(&v, n % M, n / M);
    if (a.active[c])
      any_bad |= swe_update_cell(&a, &f, &kc, c, c, dt, stage);
  }
  if (__syncthreads_or(any_bad) && threadIdx.x == 0)
    *bad = 1;
}

/* The shared memory the plain units' kernels of M^2 leaves, PX to a unit, take. */
template <int M, int PX> static void plain_setup_unit(void) {
  check(cudaFuncSetAttribute(k_plain_fluxes<M, PX>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             (int)plain_tile<M, 2, PX>::bytes()),
        "shared memory of the plain leaves' sweeps");
  check(cudaFuncSetAttribute(k_plain_stage<M, PX>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             (int)plain_tile<M, PLAIN_REACH, PX>::bytes()),
        "shared memory of the plain leaves' stage");
}

template <int M> static void plain_setup(void) {
  plain_setup_unit<M, plain_run(M)>();
  if (plain_run(M) > 1)
    plain_setup_unit<M, 1>();
}

/* The plain units' first-stage sweeps and second stage (from the state of v into `to`'s): the
 * runs, then the single leaves. */
template <int M>
static void plain_fluxes(const gpu_state *g, const swe_buq_view &v, step_t st, swe_bits *amax) {
  enum { PX = plain_run(M) };
  if (g->nruns > 0)
    k_plain_fluxes<M, PX><<<g->nruns, PX * M * M, plain_tile<M, 2, PX>::bytes(), g->stream>>>(
        v, st, g->unit_list, amax);
  if (g->nsingle > 0)
    k_plain_fluxes<M, 1><<<g->nsingle, M * M, plain_tile<M, 2, 1>::bytes(), g->stream>>>(
        v, st, g->unit_list + g->nruns, amax);
}

template <int M>
static void plain_stage(const gpu_state *g, const swe_buq_view &v, const swe_buq_view &to,
                        step_t st, int stage) {
  enum { PX = plain_run(M), R = PLAIN_REACH };
  if (g->nruns > 0)
    k_plain_stage<M, PX><<<g->nruns, PX * M * M, plain_tile<M, R, PX>::bytes(), g->stream>>>(
        v, to, st, g->unit_list, stage, g->bad);
  if (g->nsingle > 0)
    k_plain_stage<M, 1><<<g->nsingle, M * M, plain_tile<M, R, 1>::bytes(), g->stream>>>(
        v, to, st, g->unit_list + g->nruns, stage, g->bad);
}

/* ------------------------------------------------------------------ passes */

/* The recorded step is no longer the one to run (its lists, cells or rain changed). */
static void drop_graph(gpu_state *g) {
  if (g->graph)
    cudaGraphExecDestroy(g->graph);
  g->graph = NULL;
  g->joined = 0;
}

static void gpu_release(void *x) {
  gpu_state *g = (gpu_state *)x;
  if (!g)
    return;
  cudaSetDevice(g->device);
  ts_real **arrays[SWE_BUQ_NARRAYS] = SWE_BUQ_ARRAYS(&g->d);
  for (int k = 0; k < SWE_BUQ_NARRAYS; k++)
    if (*arrays[k])
      cudaFree(*arrays[k] - SWE_BUQ_LEAD);
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
  leaf_lists *lists[3] = {&g->all, &g->first, &g->second};
  for (int l = 0; l < 3; l++)
    cudaFree(lists[l]->list), cudaFree(lists[l]->ghost_list);
  cudaFree(g->plain_list);
  cudaFree(g->unit_list);
  cudaFree(g->in_plain);
  cudaFree(g->dropped);
  cudaFree(g->wet);
  cudaFree(g->on);
  cudaFree(g->amax);
  cudaFree(g->bad);
  cudaFree(g->probe);
  cudaFree(g->clock);
  cudaFree(g->plain_on);
  cudaFree(g->was);
  cudaFree(g->watch);
  cudaFree(g->rows);
  cudaFree(g->published);
  free(g->rows_host);
  drop_graph(g);
  if (g->order_mark)
    cudaEventDestroy(g->order_mark);
  if (g->stream_mark)
    cudaEventDestroy(g->stream_mark);
  if (g->stream)
    cudaStreamDestroy(g->stream);
  free(g->level_of);
  free(g->by_level);
  free(g->host_list);
  free(g->plain);
  free(g->mark);
  free(g->unit_host);
  free(g->host_blocks);
  free(g);
}

/* What the passes of a step read: the clock and the leaves of the step. */
static step_t step_of(const gpu_state *g) { return step_t{g->clock, g->on}; }

/* The view whose state the passes of the current stage read: RK2's second stage reads the
 * first's in (w0, hu0, hv0), and finds the start of the step as its (w0, hu0, hv0). */
static swe_buq_view stage_view(const gpu_state *g) {
  swe_buq_view v = g->d;
  if (g->stage == 1) {
    v.w = g->d.w0, v.hu = g->d.hu0, v.hv = g->d.hv0;
    v.w0 = g->d.w, v.hu0 = g->d.hu, v.hv0 = g->d.hv;
  }
  return v;
}

/* The view whose state the current stage's updates write: RK2's first stage into (w0, hu0,
 * hv0), its second into (w, hu, hv), each keeping the start of the step in (w, hu, hv), so
 * that no update overwrites what another leaf's pass reads (no copy of the start, none of a
 * leaf's new edge); Euler's in place. */
static swe_buq_view update_view(const gpu_state *g) {
  swe_buq_view v = g->d;
  if (g->d.rk_order == 2 && g->stage == 0)
    v.w = g->d.w0, v.hu = g->d.hu0, v.hv = g->d.hv0;
  if (g->d.rk_order == 2)
    v.w0 = g->d.w, v.hu0 = g->d.hu, v.hv0 = g->d.hv;
  return v;
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
  for (int k = 0; k < 3 && up; k++) /* the state in the other stage's arrays too (update_view) */
    check(cudaMemcpy(*dev[4 + k], *dev[k], cells * sizeof(ts_real), cudaMemcpyDeviceToDevice),
          "quadtree state");
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

/* (The host then lists every leaf: the next choose reads the leaves of the step back.) */
static void gpu_upload(void *x, const void *view) {
  gpu_state *g = on_device(x);
  copy_arrays(g, (swe_buq_view *)view, 1);
  /* every leaf computed, as the host lists them all: those out of the next step are dropped */
  check(cudaMemset(g->on, 1, (size_t)g->nblocks), "leaves of the step");
  g->chosen = g->marked = 0;
}

/* Array `to` of the part's leaves, per elements a leaf, from those of the old parts (`from`: a
 * table of their arrays in device memory): leaf l from leaf slot[l] of part part_of[l]. */
template <typename T>
static __global__ void k_take(T *to, const T *const *from, const int *part_of, const int *slot,
                              int n, int per) {
  long t = (long)blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= (long)n * per)
    return;
  int l = (int)(t / per);
  to[t] = from[part_of[l]][(size_t)slot[l] * per + t % per];
}

/* The part's leaves from the old parts' device arrays (one process; kernels on the part's
 * device read the others' memory), every array as gpu_upload puts it. */
static ts_status gpu_take_leaves(void *x, void *const *old, int nold, const int *part_of,
                                 const int *slot) {
  gpu_state *g = on_device(x);
  int n = g->nblocks, MM = g->d.M * g->d.M, P = g->d.P;
  enum { WINDOW = SWE_BUQ_NARRAYS + 2, LEAF = SWE_BUQ_NMAPS + 4, ROWS = WINDOW + LEAF };
  /* the arrays: the window's (SWE_BUQ_ARRAYS, friction, activity), the leaf cells' (maps,
   * losses, rain, loss parameters); to[a] and, per old part, from[a][q] */
  void *to[ROWS], **from = (void **)calloc((size_t)ROWS * nold, sizeof(void *));
  for (int q = 0; q < nold && from; q++) {
    swe_buq_view o = ((const gpu_state *)old[q])->d, d = g->d;
    o.w0 = o.w, o.hu0 = o.hu, o.hv0 = o.hv; /* the state in both stages' arrays (update_view) */
    ts_real **ow[SWE_BUQ_NARRAYS] = SWE_BUQ_ARRAYS(&o), **dw[SWE_BUQ_NARRAYS] = SWE_BUQ_ARRAYS(&d);
    double **om[SWE_BUQ_NMAPS] = SWE_BUQ_MAPS(&o), **dm[SWE_BUQ_NMAPS] = SWE_BUQ_MAPS(&d);
    for (int a = 0; a < SWE_BUQ_NARRAYS; a++)
      to[a] = *dw[a], from[a * nold + q] = *ow[a];
    to[WINDOW - 2] = d.friction, from[(WINDOW - 2) * nold + q] = o.friction;
    to[WINDOW - 1] = d.active, from[(WINDOW - 1) * nold + q] = o.active;
    for (int a = 0; a < SWE_BUQ_NMAPS; a++)
      to[WINDOW + a] = *dm[a], from[(WINDOW + a) * nold + q] = *om[a];
    void *leaf_to[4] = {d.lost, d.rain, d.loss_initial, d.loss_rate};
    void *leaf_from[4] = {o.lost, o.rain, o.loss_initial, o.loss_rate};
    for (int a = 0; a < 4; a++)
      to[WINDOW + SWE_BUQ_NMAPS + a] = leaf_to[a],
                                  from[(WINDOW + SWE_BUQ_NMAPS + a) * nold + q] = leaf_from[a];
  }
  void **table = NULL;
  int *map = NULL;
  if (!from || cudaMalloc((void **)&table, sizeof(void *) * ROWS * nold) != cudaSuccess ||
      cudaMalloc((void **)&map, sizeof(int) * 2 * n) != cudaSuccess) {
    cudaGetLastError();
    cudaFree(table), free(from);
    return ts_error(TS_ERR_NOMEM, "swe: out of GPU memory for moving quadtree leaves");
  }
  check(cudaMemcpy(table, from, sizeof(void *) * ROWS * nold, cudaMemcpyHostToDevice), "tables");
  check(cudaMemcpy(map, part_of, sizeof(int) * n, cudaMemcpyHostToDevice), "leaves' parts");
  check(cudaMemcpy(map + n, slot, sizeof(int) * n, cudaMemcpyHostToDevice), "leaves' slots");
  cudaStream_t s = g->stream;
  for (int a = 0; a < ROWS; a++) {
    int per = a < WINDOW ? P : MM;
    void *const *src = table + (size_t)a * nold;
    if (!to[a])
      continue;
    if (a == WINDOW - 1)
      k_take<unsigned char><<<grid_of((long)n * per), THREADS, 0, s>>>(
          (unsigned char *)to[a], (const unsigned char *const *)src, map, map + n, n, per);
    else if (a >= WINDOW && a < WINDOW + SWE_BUQ_NMAPS + 1) /* the maps and losses: doubles */
      k_take<double><<<grid_of((long)n * per), THREADS, 0, s>>>(
          (double *)to[a], (const double *const *)src, map, map + n, n, per);
    else
      k_take<ts_real><<<grid_of((long)n * per), THREADS, 0, s>>>(
          (ts_real *)to[a], (const ts_real *const *)src, map, map + n, n, per);
  }
  /* every leaf computed, as the host lists them all (gpu_upload) */
  check(cudaMemsetAsync(g->on, 1, (size_t)n, s), "leaves of the step");
  check(cudaStreamSynchronize(s), "leaves moved between parts");
  cudaFree(table), cudaFree(map), free(from);
  g->chosen = g->marked = 0;
  return TS_OK;
}

static void gpu_download(void *x, void *view) {
  copy_arrays(on_device(x), (swe_buq_view *)view, 0);
}

/* Gathered values of n cells (k_gather's) into the host's view. */
static void scatter_cells(swe_buq_view *h, int n, const int64_t *cells, const double *values) {
  double **maps[SWE_BUQ_NMAPS] = SWE_BUQ_MAPS(h);
  for (int q = 0; q < n; q++) {
    const double *d = values + GATHERED * q;
    for (int k = 0; k < SWE_BUQ_NMAPS; k++)
      (*maps[k])[cells[2 * q + 1]] = d[k];
    const ts_real *r = (const ts_real *)(d + 6);
    int64_t c = cells[2 * q];
    h->w[c] = r[0], h->hu[c] = r[1], h->hv[c] = r[2], h->u[c] = r[3], h->v[c] = r[4];
  }
}

static void gpu_read_cells(void *x, void *view, int n, const int64_t *cells) {
  gpu_state *g = on_device(x);
  size_t in = sizeof(long long) * 2 * n, bytes = in + sizeof(double) * GATHERED * n;
  double *values = n > 0 ? (double *)malloc(sizeof(double) * GATHERED * n) : NULL;
  if (!values)
    return;
  if (bytes > g->probe_bytes) {
    cudaFree(g->probe);
    check(cudaMalloc((void **)&g->probe, bytes), "probe buffer");
    g->probe_bytes = bytes;
  }
  check(cudaMemcpy(g->probe, cells, in, cudaMemcpyHostToDevice), "probed cells");
  k_gather<<<grid_of(n), THREADS, 0, g->stream>>>(g->d, (const long long *)g->probe, n,
                                                  (double *)(g->probe + in));
  check(cudaMemcpy(values, g->probe + in, sizeof(double) * GATHERED * n, cudaMemcpyDeviceToHost),
        "probed values");
  scatter_cells((swe_buq_view *)view, n, cells, values);
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
  size_t nb = (size_t)nblocks;
  if (!g || !(g->level_of = (int *)malloc(sizeof(int) * nb)) ||
      !(g->by_level = (int *)malloc(sizeof(int) * nb)) ||
      !(g->host_list = (int *)malloc(sizeof(int) * nb)) ||
      !(g->plain = (unsigned char *)malloc(nb)) || !(g->mark = (unsigned char *)malloc(nb)) ||
      !(g->unit_host = (int *)malloc(sizeof(int) * nb)) ||
      !(g->host_blocks = (ts_buq_block *)malloc(sizeof(ts_buq_block) * nb))) {
    if (g)
      free(g->level_of), free(g->by_level), free(g->host_list), free(g->plain), free(g->mark),
          free(g->unit_host);
    free(g);
    return ts_error(TS_ERR_NOMEM, "out of memory");
  }
  g->device = device, g->nblocks = nblocks, g->levels = levels;
  g->d = *h;
  memcpy(g->host_blocks, h->blocks, sizeof(ts_buq_block) * nb);
  for (int k = 0; k < nblocks; k++) {
    const ts_buq_block *b = &h->blocks[k];
    g->level_of[k] = b->level;
    int plain = k < h->owned;
    for (int s = 0; s < 4; s++)
      plain &= b->side_relation[s] == TS_BUQ_SAME && b->side[s][0] >= 0 &&
               b->corner_relation[s] == TS_BUQ_SAME && b->corner[s] >= 0;
    g->plain[k] = (unsigned char)plain;
  }
  size_t cells = (size_t)nblocks * h->P, leaf_cells = (size_t)nblocks * h->M * h->M;
  ts_real **arrays[SWE_BUQ_NARRAYS] = SWE_BUQ_ARRAYS(&g->d);
  double **maps[SWE_BUQ_NMAPS] = SWE_BUQ_MAPS(&g->d);
  int failed = 0;
  for (int k = 0; k < SWE_BUQ_NARRAYS; k++) { /* each leaf's cell (0, 0) starts a sector */
    ts_real *base = NULL;
    int ok = cudaMalloc((void **)&base, (cells + SWE_BUQ_LEAD) * sizeof(ts_real)) == cudaSuccess;
    *arrays[k] = ok ? base + SWE_BUQ_LEAD : NULL;
    failed |= !ok;
  }
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
  leaf_lists *lists[3] = {&g->all, &g->first, &g->second};
  for (int l = 0; l < 3; l++) {
    failed |= cudaMalloc((void **)&lists[l]->list, sizeof(int) * nblocks) != cudaSuccess;
    failed |= cudaMalloc((void **)&lists[l]->ghost_list, sizeof(int) * nblocks) != cudaSuccess;
  }
  failed |= cudaMalloc((void **)&g->plain_list, sizeof(int) * nblocks) != cudaSuccess;
  failed |= cudaMalloc((void **)&g->unit_list, sizeof(int) * nblocks) != cudaSuccess;
  failed |= cudaMalloc((void **)&g->in_plain, nblocks) != cudaSuccess;
  failed |= cudaMalloc((void **)&g->dropped, sizeof(int) * nblocks) != cudaSuccess;
  failed |= cudaMalloc((void **)&g->wet, nblocks) != cudaSuccess;
  failed |= cudaMalloc((void **)&g->on, nblocks) != cudaSuccess;
  failed |= cudaMalloc((void **)&g->amax, sizeof(swe_bits) * 2 * levels) != cudaSuccess;
  failed |= cudaMalloc((void **)&g->bad, 2 * sizeof(int)) != cudaSuccess;
  failed |= cudaMalloc((void **)&g->clock, sizeof(buq_clock)) != cudaSuccess;
  failed |= cudaMalloc((void **)&g->plain_on, nb) != cudaSuccess;
  failed |= cudaMalloc((void **)&g->was, nb) != cudaSuccess;
  failed |= cudaMalloc((void **)&g->published, sizeof(swe_bits) * 4 * levels) != cudaSuccess;
  failed |= cudaStreamCreate(&g->stream) != cudaSuccess;
  failed |= cudaEventCreateWithFlags(&g->order_mark, cudaEventDisableTiming) != cudaSuccess;
  failed |= cudaEventCreateWithFlags(&g->stream_mark, cudaEventDisableTiming) != cudaSuccess;
  if (failed) {
    cudaGetLastError();
    gpu_release(g);
    return ts_error(TS_ERR_NOMEM, "swe: out of GPU memory for %d quadtree blocks", nblocks);
  }
  g->d.blocks = g->blocks;
  check(cudaMemcpy(g->blocks, h->blocks, sizeof(ts_buq_block) * nblocks, cudaMemcpyHostToDevice),
        "quadtree blocks");
  check(cudaMemset(g->bad, 0, 2 * sizeof(int)), "flags");
  check(cudaMemset(g->on, 0, nb), "leaves of the step");
  check(cudaMemset(g->clock, 0, sizeof(buq_clock)), "clock");
  check(cudaMemset(g->published, 0, sizeof(swe_bits) * 4 * levels), "published wave speeds");
  ts_gpu_enable_peers(device); /* runs over several parts read the others' wave speeds */
  check(cudaMemcpy(g->plain_on, g->plain, nb, cudaMemcpyHostToDevice), "plain leaves");
  plain_setup<16>(), plain_setup<8>();
  *out = g;
  return TS_OK;
}

static const void *gpu_mirror(const void *x) { return &((const gpu_state *)x)->d; }

static void gpu_finish(void *x) {
  check(cudaStreamSynchronize(on_device(x)->stream), "quadtree passes");
}

/* Marks the leaves of the next step on the device (the flag bad[1] set where they change). */
static void mark_leaves(gpu_state *g, int early_exit) {
  int n = g->nblocks;
  k_wet<<<n, THREADS, 0, g->stream>>>(g->d, n, g->wet, early_exit, g->clock);
  k_choose<<<grid_of(n), THREADS, 0, g->stream>>>(g->d, n, g->wet, g->on, g->bad + 1);
  g->early_exit = early_exit;
}

/* The leaves of the step on the device; read back only when they change (and the first time).
 * After a step, take_bad marked them already (with the early exit of the step before) and read
 * their change flag with the non-finite one: one read-back fewer. */
static int gpu_choose(void *x, int early_exit, unsigned char *on) {
  gpu_state *g = on_device(x);
  int changed = g->change_read;
  if (!g->marked || g->early_exit != early_exit) {
    mark_leaves(g, early_exit);
    check(cudaMemcpy(&changed, g->bad + 1, sizeof changed, cudaMemcpyDeviceToHost), "leaves");
  }
  g->marked = 0;
  if (changed || !g->chosen) {
    check(cudaMemcpy(on, g->on, (size_t)g->nblocks, cudaMemcpyDeviceToHost), "leaves of the step");
    check(cudaMemsetAsync(g->bad + 1, 0, sizeof(int)), "leaves");
  }
  g->chosen = 1;
  return changed;
}

/* Sends the leaves list[0 .. counts[3]) with the passes' ranges, and the ghost range by level
 * from the coarsest. */
static void send_lists(gpu_state *g, leaf_lists *to, const int *list, const int counts[4]) {
  int n = counts[3], at = 0;
  for (int c = 0; c < 4; c++)
    to->counts[c] = counts[c];
  for (int l = g->levels - 1; l >= 0; l--) {
    to->level_first[l] = at;
    for (int p = 0; p < n; p++)
      if (g->level_of[list[p]] == l)
        g->by_level[at++] = list[p];
    to->level_count[l] = at - to->level_first[l];
  }
  if (n > 0) {
    check(cudaMemcpy(to->list, list, sizeof(int) * n, cudaMemcpyHostToDevice), "leaf list");
    check(cudaMemcpy(to->ghost_list, g->by_level, sizeof(int) * n, cudaMemcpyHostToDevice),
          "leaf list");
  }
}

/* The plain leaves of the step (`plain`, n of them, marked 1 in g->mark) in units for their
 * kernels: runs of plain_run(M) leaves side by side along x, each given by its first (west)
 * leaf, then the leaves in no run. Leaves a run takes are marked 2. */
static void send_units(gpu_state *g, const int *plain, int n) {
  int run = plain_run(g->d.M), nruns = 0, m = 0;
  int *u = g->unit_host;
  for (int p = 0; p < n; p++) {
    int k = plain[p], len = 1, e = k;
    while (len < run && g->mark[e] == 1) {
      int east = g->host_blocks[e].side[TS_BUQ_EAST][0];
      if (east < 0 || g->mark[east] != 1)
        break;
      e = east, len++;
    }
    if (g->mark[k] != 1 || len < run)
      continue;
    u[nruns++] = k;
    for (int q = 0, e2 = k; q < run; q++, e2 = g->host_blocks[e2].side[TS_BUQ_EAST][0])
      g->mark[e2] = 2;
  }
  m = nruns;
  for (int p = 0; p < n; p++)
    if (g->mark[plain[p]] == 1)
      u[m++] = plain[p];
  g->nruns = nruns, g->nsingle = m - nruns;
  check(cudaMemcpy(g->unit_list, u, sizeof(int) * m, cudaMemcpyHostToDevice), "plain units");
}

/* The step's lists: the engine's (all); with plain leaves among the updated ones, those leaves
 * (plain_list), the first stage's ghosts and sweeps without them (first), and the limiters and
 * updates of both stages and the second stage's ghosts and sweeps (second): the other updated
 * leaves, then the plain leaves next to them (whose limiters those read), then the limiter,
 * flux and ghost rings. */
static void gpu_set_list(void *x, const int *list, const int counts[4], const int *dropped,
                         int ndropped) {
  gpu_state *g = on_device(x);
  int n = counts[3], c0 = counts[0], nplain = 0, *h = g->host_list;
  drop_graph(g);
  send_lists(g, &g->all, list, counts);
  for (int p = 0; p < c0; p++)
    if (g->plain[list[p]])
      h[nplain++] = list[p];
  g->nplain = nplain;
  if (nplain > 0) {
    check(cudaMemcpy(g->plain_list, h, sizeof(int) * nplain, cudaMemcpyHostToDevice),
          "plain leaves");
    memset(g->mark, 0, (size_t)g->nblocks);
    for (int p = 0; p < nplain; p++)
      g->mark[h[p]] = 1;
    check(cudaMemcpy(g->in_plain, g->mark, (size_t)g->nblocks, cudaMemcpyHostToDevice),
          "plain leaves");
    send_units(g, h, nplain);
    int first_counts[4], second_counts[4], m = 0;
    for (int p = 0; p < n; p++)
      if (p >= c0 || !g->plain[list[p]])
        h[m++] = list[p];
    for (int c = 0; c < 4; c++)
      first_counts[c] = counts[c] - nplain;
    send_lists(g, &g->first, h, first_counts);
    /* mark: updated and not plain */
    memset(g->mark, 0, (size_t)g->nblocks);
    for (int p = 0; p < c0; p++)
      g->mark[list[p]] = !g->plain[list[p]];
    m = 0;
    for (int p = 0; p < c0; p++)
      if (g->mark[list[p]])
        h[m++] = list[p];
    second_counts[0] = m;
    for (int p = 0; p < c0; p++) {
      int k = list[p], next_to_other = 0;
      for (int side = 0; side < 4 && g->plain[k]; side++)
        next_to_other |= g->mark[g->host_blocks[k].side[side][0]];
      if (next_to_other)
        h[m++] = k;
    }
    int deep = c0 - m;
    for (int p = c0; p < n; p++)
      h[m++] = list[p];
    for (int c = 1; c < 4; c++)
      second_counts[c] = counts[c] - deep;
    send_lists(g, &g->second, h, second_counts);
  }
  if (ndropped > 0) {
    check(cudaMemcpy(g->dropped, dropped, sizeof(int) * ndropped, cudaMemcpyHostToDevice),
          "dropped leaves");
    k_drop<<<grid_of((long)ndropped * g->d.P), THREADS, 0, g->stream>>>(g->d, g->dropped, ndropped);
  }
}

/* The lists of the ghosts and sweeps of this stage: the first stage leaves the plain leaves
 * out, the second stage those whose limiters no other leaf reads. */
static const leaf_lists *stage_lists(const gpu_state *g) {
  return g->nplain == 0 ? &g->all : (g->stage == 0 ? &g->first : &g->second);
}

static void gpu_ghosts(void *x) {
  gpu_state *g = on_device(x);
  const leaf_lists *L = stage_lists(g);
  int n = L->counts[3], M = g->d.M, frame = M + 2 * SWE_GHOST;
  step_t st = step_of(g);
  swe_buq_view v = stage_view(g);
  if (n == 0)
    return;
  k_fill<<<grid_of((long)n * 4 * SWE_GHOST * M), THREADS, 0, g->stream>>>(v, st, L->ghost_list, n);
  for (int l = g->levels - 2; l >= 0; l--)
    if (L->level_count[l] > 0)
      k_coarser<<<grid_of((long)L->level_count[l] * 4 * (M / 2)), THREADS, 0, g->stream>>>(
          v, st, L->ghost_list, L->level_first[l], L->level_count[l]);
  k_ghost_velocity<<<grid_of((long)n * frame * frame), THREADS, 0, g->stream>>>(v, st,
                                                                                L->ghost_list, n);
}

static void gpu_fluxes(void *x, int speeds) {
  gpu_state *g = on_device(x);
  const leaf_lists *L = stage_lists(g);
  int n = L->counts[2], M = g->d.M;
  step_t st = step_of(g);
  cudaStream_t s = g->stream;
  swe_bits *amax = speeds ? g->amax : NULL;
  swe_buq_view v = stage_view(g);
  if (speeds)
    check(cudaMemsetAsync(g->amax, 0, sizeof(swe_bits) * 2 * g->levels, s), "wave speeds");
  if (n > 0 && M == 16)
    k_sweep<16><<<n, SWEEP_THREADS, 0, s>>>(v, st, L->list, n, amax);
  else if (n > 0)
    k_sweep<8>
        <<<(n + SWEEP_LEAVES - 1) / SWEEP_LEAVES, SWEEP_THREADS, 0, s>>>(v, st, L->list, n, amax);
  if (g->nplain > 0 && g->stage == 0 && M == 16)
    plain_fluxes<16>(g, v, st, amax);
  else if (g->nplain > 0 && g->stage == 0)
    plain_fluxes<8>(g, v, st, amax);
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

/* The limiters of the leaves the other passes update, and of the plain leaves next to them;
 * the plain leaves' kernels limit their own cells. */
static void gpu_limit(void *x, double dt) {
  (void)dt; /* the clock's */
  gpu_state *g = on_device(x);
  const leaf_lists *L = g->nplain > 0 ? &g->second : &g->all;
  int n = L->counts[1], M = g->d.M;
  step_t st = step_of(g);
  swe_buq_view v = stage_view(g);
  if (n == 0)
    return;
  k_limit<<<grid_of((long)n * M * M), THREADS, 0, g->stream>>>(v, st, L->list, n);
  k_limit_ghosts<<<grid_of((long)n * 4 * M), THREADS, 0, g->stream>>>(v, st, L->list, n);
}

/* The plain leaves' kernel runs first (Euler's reads the other leaves' state), then the other
 * leaves' updates. */
static void gpu_update(void *x, double dt, int stage, double t_after) {
  (void)dt, (void)t_after; /* the clock's */
  gpu_state *g = on_device(x);
  int M = g->d.M, np = g->nplain, whole = stage == 1 && np > 0;
  const leaf_lists *L = np > 0 ? &g->second : &g->all;
  int n = L->counts[0];
  step_t st = step_of(g);
  cudaStream_t s = g->stream;
  const int *pl = g->plain_list;
  swe_buq_view v = stage_view(g), to = update_view(g);
  if (np > 0 && stage == 0 && M == 16)
    k_plain_update<16><<<np, 16 * 16, 0, s>>>(v, to, st, pl, g->in_plain, stage, g->bad);
  else if (np > 0 && stage == 0)
    k_plain_update<8><<<np, 8 * 8, 0, s>>>(v, to, st, pl, g->in_plain, stage, g->bad);
  else if (whole && M == 16)
    plain_stage<16>(g, v, to, st, stage);
  else if (whole)
    plain_stage<8>(g, v, to, st, stage);
  /* the other leaves' maps with their last stage when they are the leaves the maps want */
  g->maps_done = stage + 1 == g->d.rk_order && (np == 0 || whole);
  if (n > 0)
    k_update<<<grid_of((long)n * M * M), THREADS, 0, s>>>(v, to, st, L->list, n, stage,
                                                          g->maps_done, g->bad);
  g->plain_recorded = whole;
  g->stage = stage + 1 < g->d.rk_order ? stage + 1 : 0;
}

/* The non-finite flag, read with the change flag of the next step's leaves, marked first (the
 * step's sources ran: the leaves' water is that of the next step). */
static int gpu_take_bad(void *x) {
  gpu_state *g = on_device(x);
  int flags[2] = {0, 0};
  if (g->chosen)
    mark_leaves(g, g->early_exit);
  check(cudaMemcpy(flags, g->bad, sizeof flags, cudaMemcpyDeviceToHost), "non-finite flag");
  g->marked = g->chosen, g->change_read = flags[1];
  if (flags[0])
    check(cudaMemset(g->bad, 0, sizeof(int)), "non-finite flag");
  return flags[0];
}

/* The maps of the updated leaves (but the plain ones where their stage recorded them). */
static void gpu_record(void *x, double t, double dt) {
  (void)t, (void)dt; /* the clock's */
  gpu_state *g = on_device(x);
  const leaf_lists *L = g->plain_recorded ? &g->second : &g->all;
  int n = L->counts[0], M = g->d.M;
  if (n > 0 && !g->maps_done)
    k_record<<<grid_of((long)n * M * M), THREADS, 0, g->stream>>>(g->d, step_of(g), L->list, n);
  check(cudaGetLastError(), "quadtree kernels");
}

static void gpu_sources(void *x, double dt) {
  (void)dt; /* the clock's */
  gpu_state *g = on_device(x);
  k_sources<<<grid_of((long)g->d.owned * g->d.M * g->d.M), THREADS, 0, g->stream>>>(
      g->d, g->d.owned, g->clock);
}

static void gpu_set_rain(void *x, const void *view) {
  gpu_state *g = on_device(x);
  const swe_buq_view *h = (const swe_buq_view *)view;
  g->d.rain_rate = h->rain_rate; /* (the kernels take it by value) */
  drop_graph(g);
  if (h->rain)
    check(cudaMemcpy(g->d.rain, h->rain, sizeof(ts_real) * g->nblocks * g->d.M * g->d.M,
                     cudaMemcpyHostToDevice),
          "rain");
}

/* ------------------------------------------------------------------ runs of steps */

static void gpu_set_step(void *x, double dt, double t_after) {
  gpu_state *g = on_device(x);
  k_set_step<<<1, 1, 0, g->stream>>>(g->clock, dt, t_after);
}

/* The leaves of the next step of a run marked on the device (every leaf is listed). */
static void mark_run_leaves(gpu_state *g, int early_exit) {
  int n = g->nblocks;
  cudaStream_t s = g->stream;
  k_wet<<<n, THREADS, 0, s>>>(g->d, n, g->wet, early_exit, g->clock);
  k_mark_run<<<n, 128, 0, s>>>(g->d, g->wet, g->on, g->plain_on, g->in_plain, g->was, g->clock);
}

static void gpu_begin_steps(void *x, double t, double target, double stop, double step_max,
                            int early_exit) {
  gpu_state *g = on_device(x);
  k_begin<<<1, 1, 0, g->stream>>>(g->clock, t, target, stop, step_max, g->bad);
  mark_run_leaves(g, early_exit);
  g->early_exit = early_exit;
}

static void gpu_time_step(void *x, double cfl, double dx) {
  gpu_state *g = on_device(x);
  k_dt<<<1, 1, 0, g->stream>>>(g->clock, g->amax, g->levels, cfl, dx);
}

static void gpu_end_step(void *x) {
  gpu_state *g = on_device(x);
  mark_run_leaves(g, g->early_exit); /* (the watched cells' values do not change) */
  k_end<<<1, THREADS, 0, g->stream>>>(g->clock, g->bad, g->d, g->watch, g->nwatch, g->rows);
}

/* Records the passes of one step into a graph (begin = 1; 0 when it has one for this early
 * exit already, its steps then run from it), or ends the recording. */
static int gpu_capture_step(void *x, int begin) {
  gpu_state *g = on_device(x);
  if (begin && g->graph && g->graph_early_exit == g->early_exit)
    return 0;
  if (begin) {
    drop_graph(g);
    graph_begin(g->stream);
    return 1;
  }
  g->graph = graph_end(g->stream);
  g->graph_early_exit = g->early_exit;
  return 1;
}

static void gpu_run_steps(void *x, int n) {
  gpu_state *g = on_device(x);
  graph_launch(g->graph, g->stream, n);
}

static void gpu_finish_steps(void *x, swe_buq_steps *out) {
  gpu_state *g = on_device(x);
  buq_clock c;
  check(cudaMemcpyAsync(&c, g->clock, sizeof c, cudaMemcpyDeviceToHost, g->stream), "clock");
  check(cudaStreamSynchronize(g->stream), "quadtree steps");
  out->run.taken = g->taken = c.steps;
  for (int q = 0; q < c.steps; q++)
    out->run.t[q] = c.log[0][q], out->run.dt[q] = c.log[1][q];
  out->bad = c.bad, out->collapsed = c.collapsed, out->collapsed_dt = c.dt;
  if (g->nwatch > 0 && c.steps > 0)
    check(cudaMemcpy(g->rows_host, g->rows, sizeof(double) * GATHERED * g->nwatch * c.steps,
                     cudaMemcpyDeviceToHost),
          "watched cells");
}

/* The leaves of the last step of a run. */
static void gpu_leaves_on(void *x, unsigned char *on) {
  gpu_state *g = on_device(x);
  check(cudaMemcpy(on, g->was, (size_t)g->nblocks, cudaMemcpyDeviceToHost), "leaves of the step");
}

static ts_status gpu_watch(void *x, int n, const int64_t *cells) {
  gpu_state *g = on_device(x);
  cudaFree(g->watch), cudaFree(g->rows), free(g->rows_host);
  drop_graph(g);
  g->watch = NULL, g->rows = NULL, g->rows_host = NULL, g->nwatch = 0;
  if (n == 0)
    return TS_OK;
  size_t rows = sizeof(double) * GATHERED * n * TS_SWE_ADVANCE_MAX;
  if (cudaMalloc((void **)&g->watch, sizeof(long long) * 2 * n) != cudaSuccess ||
      cudaMalloc((void **)&g->rows, rows) != cudaSuccess ||
      !(g->rows_host = (double *)malloc(rows))) {
    cudaGetLastError();
    return ts_error(TS_ERR_NOMEM, "swe: out of memory for %d watched cells", n);
  }
  check(cudaMemcpy(g->watch, cells, sizeof(long long) * 2 * n, cudaMemcpyHostToDevice),
        "watched cells");
  g->nwatch = n;
  drop_graph(g); /* its gathers are of the cells before */
  return TS_OK;
}

static void gpu_watched_to_host(void *x, void *view, int k, const int64_t *cells) {
  gpu_state *g = (gpu_state *)x;
  if (k >= 0 && k < g->taken)
    scatter_cells((swe_buq_view *)view, g->nwatch, cells,
                  g->rows_host + (size_t)k * GATHERED * g->nwatch);
}

/* ------------------------------------------------------------------ runs over several parts */

static void *gpu_stream(void *x) { return ((gpu_state *)x)->stream; }

static void gpu_stream_after(void *x, void *stream) {
  gpu_state *g = on_device(x);
  ts_gpu_stream_after(stream, g->stream, g->order_mark);
}

static void gpu_after_stream(void *x, void *stream) {
  gpu_state *g = on_device(x);
  ts_gpu_stream_after(g->stream, stream, g->stream_mark);
}

static void gpu_share_speeds(void *x) {
  gpu_state *g = on_device(x);
  k_publish<<<1, 1, 0, g->stream>>>(g->clock, g->amax, g->levels, g->published);
}

static void gpu_time_step_over(void *x, void *const *parts, int n, double cfl, double dx) {
  published_t pub = {};
  pub.n = n;
  for (int q = 0; q < n; q++)
    pub.of[q] = ((const gpu_state *)parts[q])->published;
  gpu_state *g = on_device(x);
  k_dt_over<<<1, 1, 0, g->stream>>>(g->clock, pub, g->levels, cfl, dx);
}

static int gpu_joined(void *x, int record) {
  gpu_state *g = (gpu_state *)x;
  if (record) {
    drop_graph(g);
    g->joined = 1, g->graph_early_exit = g->early_exit;
  }
  return g->joined && g->graph_early_exit == g->early_exit;
}

extern "C" const swe_buq_passes SWE_BUQ_GPU = {
    gpu_attach,         gpu_release,      gpu_upload,          gpu_download,
    gpu_read_cells,     gpu_mirror,       gpu_choose,          gpu_set_list,
    gpu_ghosts,         gpu_fluxes,       gpu_speeds,          gpu_limit,
    gpu_update,         gpu_take_bad,     gpu_record,          gpu_sources,
    gpu_set_rain,       gpu_finish,       gpu_set_step,        gpu_begin_steps,
    gpu_time_step,      gpu_end_step,     gpu_capture_step,    gpu_run_steps,
    gpu_finish_steps,   gpu_watch,        gpu_watched_to_host, gpu_leaves_on,
    gpu_stream,         gpu_stream_after, gpu_after_stream,    gpu_share_speeds,
    gpu_time_step_over, gpu_joined,       gpu_take_leaves,     1};
