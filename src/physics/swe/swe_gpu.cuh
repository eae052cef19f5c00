/* The shared part of the shallow-water CUDA backend (swe_kernels.cu, and its two engines of
 * stage kernels, swe_tiles.cu and swe_rows.cu), compiled once per precision (TS_REAL_DOUBLE 0 or
 * 1): the working precision, the part's device state (swe_gpu), the clock of its steps in device
 * memory, the early-exit tiles and regions the kernels take, and the engines' entry points, whose
 * names carry the precision. */
#ifndef TESSERA_SWE_GPU_CUH
#define TESSERA_SWE_GPU_CUH
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
  double *rain_rate;   /* the current frame's uniform rate (m/s), then its longest step (s) */
  swe_bits *amax;      /* 2 */
  swe_bits *published; /* 4: device runs over several parts, by step parity (k_publish) */
  cudaEvent_t mark, halo_mark; /* device runs over several parts: where one stream waits */
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

static inline swe_gpu *gpu_of(const swe_part *s) { return (swe_gpu *)s->gpu; }

/* The part's device state, with its GPU made current for this thread (parts run on the OpenMP
 * threads, and each thread has its own current device). */
static inline swe_gpu *use(const swe_part *s) {
  cudaSetDevice(s->device);
  return gpu_of(s);
}

static inline void check(cudaError_t e, const char *what) { ts_gpu_check((int)e, what); }

/* A step's passes as a CUDA graph (steps that run without the host): graph_begin records what
 * is queued on the stream from then on, graph_end makes it a graph to launch, graph_launch
 * launches it n times on the stream (gpu.cu's capture, for the graph type of the kernels). */
static inline void graph_begin(cudaStream_t stream) { ts_gpu_capture_begin(stream); }

static inline cudaGraphExec_t graph_end(cudaStream_t stream) {
  return (cudaGraphExec_t)ts_gpu_capture_end(stream);
}

static inline void graph_launch(cudaGraphExec_t exec, cudaStream_t stream, int n) {
  for (int k = 0; k < n; k++)
    ts_gpu_graph_launch(exec, stream);
}

struct region_t {
  int i0, i1, j0, j1;
};

__device__ static inline int cell_of(region_t r, int extra_i, int extra_j, int *i, int *j) {
  *i = r.i0 + (int)(blockIdx.x * blockDim.x + threadIdx.x);
  *j = r.j0 + (int)(blockIdx.y * blockDim.y + threadIdx.y);
  return *i < r.i1 + extra_i && *j < r.j1 + extra_j;
}

__device__ static inline void block_max(ts_real v, swe_bits *out) {
  for (int o = 16; o > 0; o /= 2)
    v = swe_max(v, __shfl_down_sync(0xffffffffu, v, o));
  if ((threadIdx.x & 31) == 0 && v > 0)
    atomicMax(out, swe_to_bits(v));
}

/* Inflow sides of a stage (their boundary faces carry the clock's unit discharge). */
struct inflow_t {
  int on[4];
  int any;
};

/* A reconstructed side without its implied bed, which is w - h (swe_reconstruct). */
struct side_t {
  ts_real w, h, u, v;
};

__device__ static inline side_t side_pack(swe_side s) { return side_t{s.w, s.h, s.u, s.v}; }
__device__ static inline swe_side side_unpack(side_t s) {
  return swe_side{s.w, s.w - s.h, s.h, s.u, s.v};
}

/* The cells a stage kernel reaches beyond the cells it updates. */
#define RING SWE_STAGE_REACH

#if TS_REAL_DOUBLE
#define SWE_TILES_SETUP swe_tiles_setup_double
#define SWE_TILES_FLUXES swe_tiles_fluxes_double
#define SWE_TILES_STAGE swe_tiles_stage_double
#define SWE_ROWS_STAGE swe_rows_stage_double
#else
#define SWE_TILES_SETUP swe_tiles_setup_float
#define SWE_TILES_FLUXES swe_tiles_fluxes_float
#define SWE_TILES_STAGE swe_tiles_stage_float
#define SWE_ROWS_STAGE swe_rows_stage_float
#endif

/* The tile engine (swe_tiles.cu): its kernels' shared memory allowed on the current device (once
 * per part), the first stage's fluxes, sources, characteristic speeds and
 * wave speeds of the cells of r (k_fluxes), and a whole later stage from `in` into `out` with the
 * step's maxima (k_stage), queued on `stream`. */
void SWE_TILES_SETUP(void);
void SWE_TILES_FLUXES(swe_arrays g, swe_consts k, region_t r, region_t own, int64_t origin, int nx,
                      int ny, swe_bits *amax, tiles_t tiles, const swe_clock *clock,
                      cudaStream_t stream);
void SWE_TILES_STAGE(swe_arrays in, swe_arrays out, swe_consts k, region_t r, int64_t origin,
                     int nx, int ny, swe_clock *clock, int stage, inflow_t inflow, tiles_t tiles,
                     region_t own, swe_maps maxima, cudaStream_t stream);
/* The row engine (swe_rows.cu): fused, a whole later stage (k_stage's work); otherwise the first
 * stage's fluxes (k_fluxes's work); sms: the device's multiprocessors. */
void SWE_ROWS_STAGE(int fused, swe_arrays in, swe_arrays out, swe_consts k, region_t r,
                    region_t own, int64_t origin, int nx, int ny, swe_clock *clock, int stage,
                    inflow_t inflow, tiles_t tiles, swe_maps maxima, swe_bits *amax, int sms,
                    cudaStream_t stream);

#endif
