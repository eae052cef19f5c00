/* CUDA backend of the lattice Boltzmann step on one part, compiled once per lattice and storage
 * like the CPU loops (LBM_Q, LBM_FP16 with __half populations, LBM_KERNELS, LBM_CPU_KERNELS).
 * One thread per node of a box of the part: bulk nodes and nodes next to boundaries call the
 * node updates of lbm_node.h, the CPU's code. The part's host arrays mirror the device's: the
 * CPU backend builds the nodes and the initial state, attach copies them up, and to_host copies
 * the populations down before host code computes moments. Periodic images and the wall slots kept
 * across the push-back exchanges are small kernels over the part's lists. */
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <stdio.h>
#include <stdlib.h>

extern "C" {
#include "physics/lbm/lbm_internal.h"
#include "tessera/gpu.h"
}

#if LBM_FP16
typedef __half lbm_store;
#define LBM_LOAD(x) __half2float(x)
#define LBM_STORE(x) __float2half(x)
#else
typedef float lbm_store;
#define LBM_LOAD(x) (x)
#define LBM_STORE(x) (x)
#endif

#include "physics/lbm/lbm_node.h"

/* Device side of a part: populations, node kinds, the periodic and kept-slot lists, stream. */
typedef struct lbm_gpu {
  lbm_store *f;
  unsigned char *type;
  int64_t *periodic_node, *periodic_partner, *keep_slot;
  uint32_t *periodic_pushed;
  lbm_store *keep_value;
  cudaStream_t stream;
} lbm_gpu;

static lbm_gpu *gpu_of(const lbm_part *p) { return (lbm_gpu *)p->gpu; }

/* The part's device state, with its GPU made current for this thread. */
static lbm_gpu *use(const lbm_part *p) {
  cudaSetDevice(p->device);
  return gpu_of(p);
}

static void check(cudaError_t e, const char *what) { ts_gpu_check((int)e, what); }

/* Where the kernels find a part's nodes. */
struct nodes_t {
  int lo[3], len[3];
};

/* The node (x, y, z) of a step (see k_step). */
__device__ static inline void step_node(const lbm_view *v, const lbm_consts *k, const nodes_t *at,
                                        const ts_box *inner, int which, int odd, int x, int y,
                                        int z) {
  if (which == LBM_BORDER && x >= inner->lo[0] && x < inner->hi[0] && y >= inner->lo[1] &&
      y < inner->hi[1] && z >= inner->lo[2] && z < inner->hi[2])
    return;
  int64_t n = (x - at->lo[0]) +
              (int64_t)at->len[0] * ((y - at->lo[1]) + (int64_t)at->len[1] * (z - at->lo[2]));
  unsigned char t = v->type[n];
  if (!lbm_computed(t))
    return;
  lbm_model m = lbm_model_of(k);
  if (t & LBM_BULK) {
    int64_t from[LBM_Q], to[LBM_Q];
    lbm_bulk_offsets(v, odd, from, to);
    lbm_bulk_node(v->f, from, to, &m, n);
  } else if (odd) {
    lbm_odd_node(v, k, &m, n);
  } else {
    lbm_even_node(v, k, &m, n);
  }
}

/* One step on the nodes of box b (which: LBM_ALL or LBM_INNER b itself, LBM_BORDER b less
 * `inner`): bulk nodes through lbm_bulk_node, the others through the boundary-aware updates. The
 * grid's y blocks take the rows (y, z) of b in turn, so any number of rows fits the grid. */
static __global__ void k_step(lbm_view v, lbm_consts k, nodes_t at, ts_box b, ts_box inner,
                              int which, int odd) {
  int x = b.lo[0] + (int)(blockIdx.x * blockDim.x + threadIdx.x);
  int rows = b.hi[1] - b.lo[1], all = rows * (b.hi[2] - b.lo[2]);
  if (x >= b.hi[0])
    return;
  for (int r = (int)blockIdx.y; r < all; r += (int)gridDim.y)
    step_node(&v, &k, &at, &inner, which, odd, x, b.lo[1] + r % rows, b.lo[2] + r / rows);
}

/* Periodic images: all slots from the partner (forward), or the pushed slots back to it. */
static __global__ void k_periodic(lbm_store *f, int64_t plane, const int64_t *node,
                                  const int64_t *partner, const uint32_t *pushed, int count,
                                  int forward) {
  int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= count)
    return;
  for (int q = 0; q < LBM_Q; q++) {
    lbm_store *slot = f + (int64_t)q * plane;
    if (forward)
      slot[node[i]] = slot[partner[i]];
    else if (pushed[i] >> q & 1u)
      slot[partner[i]] = slot[node[i]];
  }
}

/* The wall slots of subdomain borders, saved before the push-back exchanges and restored after. */
static __global__ void k_keep(lbm_store *f, const int64_t *slot, lbm_store *value, int count,
                              int restore) {
  int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= count)
    return;
  if (restore)
    f[slot[i]] = value[i];
  else
    value[i] = f[slot[i]];
}

static lbm_view view_of(const lbm_part *p) {
  lbm_view v;
  v.f = gpu_of(p)->f;
  v.type = gpu_of(p)->type;
  v.plane = p->plane;
  for (int q = 0; q < LBM_Q; q++)
    v.off[q] = lbm_c(q, 0) + (int64_t)p->len[0] * (lbm_c(q, 1) + (int64_t)p->len[1] * lbm_c(q, 2));
  return v;
}

static void launch_step(lbm_part *p, const lbm_consts *k, int odd, const ts_box *inner, int which) {
  lbm_gpu *g = use(p);
  ts_box b = which == LBM_INNER ? *inner : p->own;
  int w = b.hi[0] - b.lo[0], rows = b.hi[1] - b.lo[1], layers = b.hi[2] - b.lo[2];
  if (w <= 0 || rows <= 0 || layers <= 0)
    return;
  nodes_t at = {{p->lo[0], p->lo[1], p->lo[2]}, {p->len[0], p->len[1], p->len[2]}};
  long all = (long)rows * layers;
  dim3 grid((unsigned)((w + 127) / 128), (unsigned)(all < 65535 ? all : 65535));
  k_step<<<grid, 128, 0, g->stream>>>(view_of(p), *k, at, b, inner ? *inner : b, which, odd);
  check(cudaGetLastError(), "launch of the step kernel");
}

static void gpu_even(lbm_part *p, const lbm_consts *k) { launch_step(p, k, 0, NULL, LBM_ALL); }

static void gpu_odd(lbm_part *p, const lbm_consts *k, const ts_box *inner, int which) {
  launch_step(p, k, 1, inner, which);
}

static void gpu_periodic(lbm_part *p, int forward) {
  lbm_gpu *g = use(p);
  if (p->nperiodic > 0)
    k_periodic<<<(p->nperiodic + 127) / 128, 128, 0, g->stream>>>(
        g->f, p->plane, g->periodic_node, g->periodic_partner, g->periodic_pushed, p->nperiodic,
        forward);
  check(cudaGetLastError(), "launch of the periodic kernel");
}

static void gpu_keep(lbm_part *p, int restore) {
  lbm_gpu *g = use(p);
  if (p->nkeep > 0)
    k_keep<<<(p->nkeep + 127) / 128, 128, 0, g->stream>>>(g->f, g->keep_slot, g->keep_value,
                                                          p->nkeep, restore);
  check(cudaGetLastError(), "launch of the wall-slot kernel");
}

static void gpu_sync(lbm_part *p) { check(cudaStreamSynchronize(use(p)->stream), "step"); }

static void gpu_to_host(lbm_part *p) {
  lbm_gpu *g = use(p);
  check(cudaMemcpyAsync(p->f, g->f, (size_t)p->plane * LBM_Q * sizeof(lbm_store),
                        cudaMemcpyDeviceToHost, g->stream),
        "copy of the populations");
  check(cudaStreamSynchronize(g->stream), "copy of the populations");
}

static void gpu_release(lbm_part *p) {
  lbm_gpu *g = gpu_of(p);
  if (!g)
    return;
  cudaSetDevice(p->device);
  cudaFree(g->f);
  cudaFree(g->type);
  cudaFree(g->periodic_node);
  cudaFree(g->periodic_partner);
  cudaFree(g->periodic_pushed);
  cudaFree(g->keep_slot);
  cudaFree(g->keep_value);
  if (g->stream)
    cudaStreamDestroy(g->stream);
  free(g);
  p->gpu = NULL;
  p->dev_f = NULL;
}

/* A device copy of `bytes` bytes of host data (nothing for 0 bytes). */
static cudaError_t upload(void **dev, const void *host, size_t bytes) {
  if (bytes == 0)
    return cudaSuccess;
  cudaError_t e = cudaMalloc(dev, bytes);
  return e == cudaSuccess ? cudaMemcpy(*dev, host, bytes, cudaMemcpyHostToDevice) : e;
}

static ts_status gpu_attach(lbm_part *p, int device) {
  if (cudaSetDevice(device) != cudaSuccess)
    return ts_error(TS_ERR_INPUT, "lbm: CUDA device %d cannot be used", device);
  lbm_gpu *g = (lbm_gpu *)calloc(1, sizeof *g);
  if (!g)
    return ts_error(TS_ERR_NOMEM, "out of memory");
  p->gpu = g;
  p->device = device;
  ts_gpu_enable_peers(device);
  cudaError_t e = cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking);
  size_t np = (size_t)p->nperiodic, nk = (size_t)p->nkeep;
  if (e == cudaSuccess)
    e = upload((void **)&g->f, p->f, (size_t)p->plane * LBM_Q * sizeof(lbm_store));
  if (e == cudaSuccess)
    e = upload((void **)&g->type, p->type, (size_t)p->plane);
  if (e == cudaSuccess)
    e = upload((void **)&g->periodic_node, p->periodic_node, np * sizeof(int64_t));
  if (e == cudaSuccess)
    e = upload((void **)&g->periodic_partner, p->periodic_partner, np * sizeof(int64_t));
  if (e == cudaSuccess)
    e = upload((void **)&g->periodic_pushed, p->periodic_pushed, np * sizeof(uint32_t));
  if (e == cudaSuccess)
    e = upload((void **)&g->keep_slot, p->keep_slot, nk * sizeof(int64_t));
  if (e == cudaSuccess && nk > 0)
    e = cudaMalloc((void **)&g->keep_value, nk * sizeof(lbm_store));
  if (e != cudaSuccess) {
    gpu_release(p);
    return ts_error(TS_ERR_NOMEM, "lbm: out of GPU memory on device %d for %lld nodes (%s)", device,
                    (long long)p->plane, cudaGetErrorString(e));
  }
  e = cudaDeviceSynchronize(); /* the uploads landed before the part's stream runs */
  if (e != cudaSuccess) {
    gpu_release(p);
    return ts_error(TS_ERR_INPUT, "lbm: device %d: %s", device, cudaGetErrorString(e));
  }
  p->dev_f = g->f;
  return TS_OK;
}

/* Node kinds, initial state and moments are the CPU backend's code on the host mirror
 * (initialised when the program starts, after the CPU tables). */
extern "C" const lbm_kernels LBM_KERNELS = {
    .q = LBM_Q,
    .elem = sizeof(lbm_store),
    .velocity = LBM_CPU_KERNELS.velocity,
    .opposite = LBM_CPU_KERNELS.opposite,
    .init = LBM_CPU_KERNELS.init,
    .even = gpu_even,
    .odd = gpu_odd,
    .moments = LBM_CPU_KERNELS.moments,
    .attach = gpu_attach,
    .release = gpu_release,
    .to_host = gpu_to_host,
    .sync = gpu_sync,
    .periodic = gpu_periodic,
    .keep = gpu_keep,
};
