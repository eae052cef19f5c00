/* CUDA backend of the lattice Boltzmann step on one part, compiled once per lattice and storage
 * like the CPU loops (LBM_Q, LBM_FP16 with __half populations, LBM_KERNELS, LBM_CPU_KERNELS).
 * One thread per node of a box of the part: bulk nodes and nodes next to boundaries call the
 * node updates of lbm_node.h, the CPU's code. The part's host arrays mirror the device's: the
 * CPU backend builds the nodes and the initial state, attach copies them up, and to_host copies
 * the populations down before host code computes moments. A part wraps its odd steps across the
 * periodic axes the split does not cut (lbm_part.wrap), so its periodic images are refreshed
 * only for host code; they and the wall slots kept across the push-back exchanges are small
 * kernels over the part's lists. */
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

/* Device side of a part: populations, node kinds, the nodes that are computed but not bulk, the
 * periodic and kept-slot lists, stream, and the events that order it against other streams (mark:
 * its own work, halo_mark: the halo copies to its device). */
typedef struct lbm_gpu {
  lbm_store *f;     /* local node 0's populations, lbm_part.lead into `block` */
  lbm_store *block; /* the populations' allocation */
  unsigned char *type;
  int64_t *edge; /* computed nodes that are not bulk nodes, ascending */
  int nedge;
  int64_t *periodic_node, *periodic_partner, *keep_slot;
  uint32_t *periodic_pushed, *periodic_pulled;
  lbm_store *keep_value;
  cudaStream_t stream;
  cudaEvent_t mark, halo_mark;
  /* The edge nodes' kernel runs beside the bulk kernel, on a stream of higher priority forked
   * from and joined back to `stream` (a step's nodes touch disjoint slots) */
  cudaStream_t side;
  cudaEvent_t fork, join;
} lbm_gpu;

static lbm_gpu *gpu_of(const lbm_part *p) { return (lbm_gpu *)p->gpu; }

/* The part's device state, with its GPU made current for this thread. */
static lbm_gpu *use(const lbm_part *p) {
  cudaSetDevice(p->device);
  return gpu_of(p);
}

static void check(cudaError_t e, const char *what) { ts_gpu_check((int)e, what); }

/* Where the kernels find a part's nodes, the element offset of the neighbour along each
 * direction, and the axes the part wraps across (lbm_part.wrap; step: lbm_view.wrap). */
struct nodes_t {
  int lo[3], len[3];
  int off[LBM_Q];
  int wrap[3];
  int64_t step[3];
};

/* Threads per block of the bulk kernel and blocks per multiprocessor. Measured at D3Q19 384^3
 * (docs/PERFORMANCE.md): fp32 populations run best at 1024 threads per multiprocessor (64
 * registers each), 5 % faster in blocks of 256 threads than of 128 on an H100 (512: the same as
 * 256; 64 and 1024: slower), and 5 to 17 % slower at 1280 threads (48 registers) on an H200.
 * Binary16 ones carry half the bytes a thread, so they need more threads in flight: on an H200
 * 1280 threads (10 blocks of 128, 48 registers, no spill) run 7 % faster than 1024 (1536 at 40
 * registers spill and lose 3 %). The Smagorinsky collision stays at 1024 threads: at 48
 * registers it spills. */
#if LBM_FP16
#define LBM_BLOCK 128
#define LBM_BLOCKS_PER_SM 10
#else
#define LBM_BLOCK 256
#define LBM_BLOCKS_PER_SM 4
#endif

/* A population loaded with a hint that L2 fetch the 128-byte block around it from memory (PTX
 * ld.global.L2::128B): the bulk kernel's warps read each plane in runs, and on an H200 at 384^3
 * this makes fp32 steps 7 % faster (21,810 -> 23,370 MLUPs) and binary16 ones 1 % (the same bits).
 * Volatile with a memory clobber: the compiler cannot see what the assembly reads, and must not
 * move the node's stores (to the slots it loads) above it. */
__device__ static inline lbm_store load_population(const lbm_store *at) {
#if LBM_FP16
  unsigned short bits;
  asm volatile("ld.global.L2::128B.b16 %0, [%1];" : "=h"(bits) : "l"(at) : "memory");
  return __ushort_as_half(bits);
#else
  float value;
  asm volatile("ld.global.L2::128B.f32 %0, [%1];" : "=f"(value) : "l"(at) : "memory");
  return value;
#endif
}

/* Bulk nodes of box b, one thread per node: populations loaded from their slots, collided by
 * lbm_collide (the CPU's function) and stored, as lbm_bulk_node does on the CPU. The slot
 * indices are of type I (32 bits where the part has fewer than 2^32 slots: fewer registers
 * than 64-bit offsets); the step's parity and the collision variant are constants, so the
 * collision has no branch left. In odd steps the first and last nodes of the axes the part
 * wraps across pull and push across the wrap (lbm_wrap_pull) instead of through images. Other
 * nodes are left to k_edge. */
template <typename I, int ODD, int TRT, int SMAG>
static __global__ void __launch_bounds__(LBM_BLOCK, SMAG ? 1024 / LBM_BLOCK : LBM_BLOCKS_PER_SM)
    k_bulk(lbm_store *__restrict__ f, const unsigned char *__restrict__ type, I plane,
           const __grid_constant__ nodes_t at, const __grid_constant__ lbm_model model, ts_box b,
           int x0, I row, I count) {
  I i = (I)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= count)
    return;
  I rows = (I)(b.hi[1] - b.lo[1]);
  I r = i / row, y = r % rows, z = r / rows;
  int x = x0 + (int)(i % row);
  if (x < b.lo[0] || x >= b.hi[0])
    return;
  I n = (I)(x - at.lo[0]) +
        (I)at.len[0] * ((b.lo[1] - at.lo[1] + y) + (I)at.len[1] * (b.lo[2] - at.lo[2] + z));
  if (!(type[n] & LBM_BULK))
    return;
  unsigned wrap = 0;
  if (ODD) {
    int c[3] = {x, b.lo[1] + (int)y, b.lo[2] + (int)z};
    wrap = lbm_wrap_code(c, at.wrap);
  }
  lbm_model m = model;
  m.trt = TRT;
  m.smag = SMAG;
  float fq[LBM_Q], u[3];
  if (ODD && wrap) {
    LBM_UNROLL
    for (int q = 0; q < LBM_Q; q++)
      fq[q] = LBM_LOAD(load_population(
          &f[(I)lbm_opposite(q) * plane + n - (I)at.off[q] + (I)lbm_wrap_pull(at.step, wrap, q)]));
  } else {
    LBM_UNROLL
    for (int q = 0; q < LBM_Q; q++)
      fq[q] = LBM_LOAD(load_population(
          &f[ODD ? (I)lbm_opposite(q) * plane + n - (I)at.off[q] : (I)q * plane + n]));
  }
  lbm_collide(&m, fq, u);
  if (ODD && wrap) {
    LBM_UNROLL
    for (int q = 0; q < LBM_Q; q++)
      f[(I)q * plane + n + (I)at.off[q] + (I)lbm_wrap_pull(at.step, wrap, lbm_opposite(q))] =
          LBM_STORE(fq[q]);
  } else {
    LBM_UNROLL
    for (int q = 0; q < LBM_Q; q++)
      f[ODD ? (I)q * plane + n + (I)at.off[q] : (I)lbm_opposite(q) * plane + n] = LBM_STORE(fq[q]);
  }
}

/* The computed nodes that are not bulk nodes (the list `edge`), by the boundary-aware updates
 * (which: LBM_ALL, or the nodes in (LBM_INNER) or outside (LBM_BORDER) the box `inner`). */
static __global__ void k_edge(lbm_view v, const __grid_constant__ lbm_consts k, nodes_t at,
                              const int64_t *edge, int count, ts_box inner, int which, int odd) {
  int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= count)
    return;
  int64_t n = edge[i], rest = n / at.len[0];
  int c[3] = {at.lo[0] + (int)(n % at.len[0]), at.lo[1] + (int)(rest % at.len[1]),
              at.lo[2] + (int)(rest / at.len[1])};
  if (which != LBM_ALL) {
    int in = c[0] >= inner.lo[0] && c[0] < inner.hi[0] && c[1] >= inner.lo[1] &&
             c[1] < inner.hi[1] && c[2] >= inner.lo[2] && c[2] < inner.hi[2];
    if (in != (which == LBM_INNER))
      return;
  }
  lbm_model m = lbm_model_of(&k);
  if (odd)
    lbm_odd_node(&v, &k, &m, n, lbm_wrap_code(c, at.wrap));
  else
    lbm_even_node(&v, &k, &m, n);
}

/* Periodic images: the slots nodes pull, from the partner (forward), or the slots nodes pushed
 * into the image, back to it. One thread per image, over the image's flagged slots (5 of 19 on
 * a face), so that neighbouring threads touch neighbouring images. */
static __global__ void k_periodic(lbm_store *f, int64_t plane, const int64_t *node,
                                  const int64_t *partner, const uint32_t *slots, int count,
                                  int forward) {
  int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= count)
    return;
  int64_t image = node[i], source = partner[i];
  uint32_t flags = slots[i];
  LBM_UNROLL
  for (int q = 0; q < LBM_Q; q++)
    if (flags >> q & 1u) {
      lbm_store *slot = f + (int64_t)q * plane;
      if (forward)
        slot[image] = slot[source];
      else
        slot[source] = slot[image];
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

static nodes_t nodes_of(const lbm_part *p) {
  nodes_t at;
  for (int a = 0; a < 3; a++) {
    at.lo[a] = p->lo[a];
    at.len[a] = p->len[a];
  }
  for (int q = 0; q < LBM_Q; q++)
    at.off[q] = lbm_c(q, 0) + p->len[0] * (lbm_c(q, 1) + p->len[1] * lbm_c(q, 2));
  int64_t stride[3] = {1, p->len[0], (int64_t)p->len[0] * p->len[1]};
  for (int a = 0; a < 3; a++) {
    at.wrap[a] = p->wrap[a];
    at.step[a] = (int64_t)p->wrap[a] * stride[a];
  }
  return at;
}

static lbm_view view_of(const lbm_part *p) {
  lbm_view v;
  v.f = gpu_of(p)->f;
  v.type = gpu_of(p)->type;
  v.plane = p->plane;
  nodes_t at = nodes_of(p);
  for (int q = 0; q < LBM_Q; q++)
    v.off[q] = at.off[q];
  for (int a = 0; a < 3; a++)
    v.wrap[a] = at.step[a];
  return v;
}

static int64_t volume(const ts_box *b) {
  int64_t v = 1;
  for (int a = 0; a < 3; a++)
    v *= b->hi[a] > b->lo[a] ? b->hi[a] - b->lo[a] : 0;
  return v;
}

/* The bulk nodes of box b (clipped to the part's cells, the only nodes that can be bulk) in rows
 * of threads that start at a sector's start: at the row's first node where that is one (the
 * part's first cell is, by the layout: lbm_part.lead), else up to lbm_row_align - 1 nodes before
 * it, and that are a whole number of warps long, so that a warp's loads and stores of a plane span
 * whole 32-byte sectors. Rows shorter than two warps keep one thread a node. */
template <typename I, int ODD, int TRT, int SMAG>
static void launch_bulk(lbm_part *p, const lbm_model *m, const ts_box *box) {
  lbm_gpu *g = gpu_of(p);
  ts_box b = *box;
  for (int a = 0; a < 3; a++) {
    b.lo[a] = b.lo[a] > p->cells.lo[a] ? b.lo[a] : p->cells.lo[a];
    b.hi[a] = b.hi[a] < p->cells.hi[a] ? b.hi[a] : p->cells.hi[a];
  }
  if (volume(&b) == 0)
    return;
  int w = b.hi[0] - b.lo[0], x0 = b.lo[0], row = w;
  if (w >= 64) {
    int align = lbm_row_align(sizeof(lbm_store));
    x0 -= (b.lo[0] - p->cells.lo[0]) % align;
    row = (b.hi[0] - x0 + 31) / 32 * 32;
  }
  int64_t count = (int64_t)row * (b.hi[1] - b.lo[1]) * (b.hi[2] - b.lo[2]);
  k_bulk<I, ODD, TRT, SMAG>
      <<<(unsigned)((count + LBM_BLOCK - 1) / LBM_BLOCK), LBM_BLOCK, 0, g->stream>>>(
          g->f, g->type, (I)p->plane, nodes_of(p), *m, b, x0, (I)row, (I)count);
}

/* The bulk nodes of box b, through the instance of k_bulk for the part's size, the step's
 * parity and the collision. */
template <typename I>
static void bulk_in(lbm_part *p, const lbm_model *m, int odd, const ts_box *b) {
  switch ((odd ? 4 : 0) + (m->trt ? 2 : 0) + (m->smag ? 1 : 0)) {
  case 0: launch_bulk<I, 0, 0, 0>(p, m, b); break;
  case 1: launch_bulk<I, 0, 0, 1>(p, m, b); break;
  case 2: launch_bulk<I, 0, 1, 0>(p, m, b); break;
  case 3: launch_bulk<I, 0, 1, 1>(p, m, b); break;
  case 4: launch_bulk<I, 1, 0, 0>(p, m, b); break;
  case 5: launch_bulk<I, 1, 0, 1>(p, m, b); break;
  case 6: launch_bulk<I, 1, 1, 0>(p, m, b); break;
  default: launch_bulk<I, 1, 1, 1>(p, m, b); break;
  }
}

/* One step on the part's nodes (which: LBM_ALL the owned box, LBM_INNER the box `inner`,
 * LBM_BORDER the owned box less `inner`, as up to six slabs): bulk nodes box by box, then the
 * listed edge nodes. */
static void launch_step(lbm_part *p, const lbm_consts *k, int odd, const ts_box *inner, int which) {
  if (which == LBM_BORDER && volume(inner) == volume(&p->own))
    return; /* no border: the inner box is the part */
  lbm_gpu *g = use(p);
  lbm_model m = lbm_model_of(k);
  ts_box boxes[6];
  int nboxes = 0;
  if (which != LBM_BORDER) {
    boxes[nboxes++] = which == LBM_INNER ? *inner : p->own;
  } else { /* own less inner: slabs along z, then y, then x */
    ts_box rest = p->own;
    for (int a = 2; a >= 0; a--) {
      ts_box lo = rest, hi = rest;
      lo.hi[a] = inner->lo[a];
      hi.lo[a] = inner->hi[a];
      boxes[nboxes++] = lo;
      boxes[nboxes++] = hi;
      rest.lo[a] = inner->lo[a];
      rest.hi[a] = inner->hi[a];
    }
  }
  if (which == LBM_BORDER && volume(inner) == 0)
    boxes[0] = p->own, nboxes = 1;
  if (g->nedge > 0) { /* beside the bulk nodes: each slot is read and written by one node */
    ts_gpu_stream_after(g->side, g->stream, g->fork);
    k_edge<<<(g->nedge + 127) / 128, 128, 0, g->side>>>(
        view_of(p), *k, nodes_of(p), g->edge, g->nedge, inner ? *inner : p->own, which, odd);
    check(cudaGetLastError(), "launch of the edge kernel");
  }
  int small = p->plane * LBM_Q < ((int64_t)1 << 32);
  for (int b = 0; b < nboxes; b++)
    small ? bulk_in<uint32_t>(p, &m, odd, &boxes[b]) : bulk_in<uint64_t>(p, &m, odd, &boxes[b]);
  check(cudaGetLastError(), "launch of the bulk kernel");
  if (g->nedge > 0)
    ts_gpu_stream_after(g->stream, g->side, g->join);
}

static void gpu_even(lbm_part *p, const lbm_consts *k) { launch_step(p, k, 0, NULL, LBM_ALL); }

static void gpu_odd(lbm_part *p, const lbm_consts *k, const ts_box *inner, int which) {
  launch_step(p, k, 1, inner, which);
}

static void gpu_periodic(lbm_part *p, int forward) {
  lbm_gpu *g = use(p);
  if (p->nperiodic > 0)
    k_periodic<<<(unsigned)(p->nperiodic + 127) / 128, 128, 0, g->stream>>>(
        g->f, p->plane, g->periodic_node, g->periodic_partner,
        forward ? g->periodic_pulled : g->periodic_pushed, p->nperiodic, forward);
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

static void *gpu_stream(lbm_part *p) { return use(p)->stream; }

static void gpu_order(lbm_part *p, lbm_part *after) {
  lbm_gpu *a = use(after);
  ts_gpu_stream_after(gpu_of(p)->stream, a->stream, a->mark);
}

static void gpu_stream_after(lbm_part *p, void *stream) {
  lbm_gpu *g = use(p);
  ts_gpu_stream_after(stream, g->stream, g->mark);
}

static void gpu_after_stream(lbm_part *p, void *stream) {
  lbm_gpu *g = use(p);
  ts_gpu_stream_after(g->stream, stream, g->halo_mark);
}

static void gpu_to_host(lbm_part *p) {
  lbm_gpu *g = use(p);
  check(cudaMemcpyAsync(p->f, g->f, (size_t)p->plane * LBM_Q * sizeof(lbm_store),
                        cudaMemcpyDeviceToHost, g->stream),
        "copy of the populations");
  check(cudaStreamSynchronize(g->stream), "copy of the populations");
}

static void gpu_to_device(lbm_part *p) {
  lbm_gpu *g = use(p);
  check(cudaMemcpyAsync(g->f, p->f, (size_t)p->plane * LBM_Q * sizeof(lbm_store),
                        cudaMemcpyHostToDevice, g->stream),
        "copy of the populations");
  check(cudaStreamSynchronize(g->stream), "copy of the populations");
}

static void gpu_release(lbm_part *p) {
  lbm_gpu *g = gpu_of(p);
  if (!g)
    return;
  cudaSetDevice(p->device);
  cudaFree(g->block);
  cudaFree(g->type);
  cudaFree(g->edge);
  cudaFree(g->periodic_node);
  cudaFree(g->periodic_partner);
  cudaFree(g->periodic_pushed);
  cudaFree(g->periodic_pulled);
  cudaFree(g->keep_slot);
  cudaFree(g->keep_value);
  if (g->stream)
    cudaStreamDestroy(g->stream);
  if (g->mark)
    cudaEventDestroy(g->mark);
  if (g->halo_mark)
    cudaEventDestroy(g->halo_mark);
  if (g->side)
    cudaStreamDestroy(g->side);
  if (g->fork)
    cudaEventDestroy(g->fork);
  if (g->join)
    cudaEventDestroy(g->join);
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

/* The list of the part's owned nodes that are computed but not bulk nodes, on the host. */
static int64_t *edge_nodes(const lbm_part *p, int *count) {
  int64_t n = 0, *list = NULL;
  for (int pass = 0; pass < 2; pass++) {
    if (pass == 1 && !(list = (int64_t *)malloc(sizeof *list * (size_t)(n ? n : 1))))
      return NULL;
    n = 0;
    for (int z = p->own.lo[2]; z < p->own.hi[2]; z++)
      for (int y = p->own.lo[1]; y < p->own.hi[1]; y++)
        for (int x = p->own.lo[0]; x < p->own.hi[0]; x++) {
          int64_t node = lbm_local(p, x, y, z);
          unsigned char t = p->type[node];
          if (lbm_computed(t) && !(t & LBM_BULK)) {
            if (list)
              list[n] = node;
            n++;
          }
        }
  }
  *count = (int)n;
  return list;
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
  if (e == cudaSuccess)
    e = cudaEventCreateWithFlags(&g->mark, cudaEventDisableTiming);
  if (e == cudaSuccess)
    e = cudaEventCreateWithFlags(&g->halo_mark, cudaEventDisableTiming);
  int least, greatest;
  if (e == cudaSuccess)
    e = cudaDeviceGetStreamPriorityRange(&least, &greatest);
  if (e == cudaSuccess)
    e = cudaStreamCreateWithPriority(&g->side, cudaStreamNonBlocking, greatest);
  if (e == cudaSuccess)
    e = cudaEventCreateWithFlags(&g->fork, cudaEventDisableTiming);
  if (e == cudaSuccess)
    e = cudaEventCreateWithFlags(&g->join, cudaEventDisableTiming);
  size_t np = (size_t)p->nperiodic, nk = (size_t)p->nkeep;
  /* the populations offset as on the host (lbm_part.lead): cudaMalloc starts at a sector */
  int lead = p->lead;
  size_t bytes = (size_t)p->plane * LBM_Q * sizeof(lbm_store);
  if (e == cudaSuccess)
    e = cudaMalloc((void **)&g->block, bytes + (size_t)lead * sizeof(lbm_store));
  if (e == cudaSuccess) {
    g->f = g->block + lead;
    e = cudaMemcpy(g->f, p->f, bytes, cudaMemcpyHostToDevice);
  }
  if (e == cudaSuccess)
    e = upload((void **)&g->type, p->type, (size_t)p->plane);
  int64_t *edge = e == cudaSuccess ? edge_nodes(p, &g->nedge) : NULL;
  if (e == cudaSuccess && !edge)
    e = cudaErrorMemoryAllocation;
  if (e == cudaSuccess)
    e = upload((void **)&g->edge, edge, (size_t)g->nedge * sizeof(int64_t));
  free(edge);
  if (e == cudaSuccess)
    e = upload((void **)&g->periodic_node, p->periodic_node, np * sizeof(int64_t));
  if (e == cudaSuccess)
    e = upload((void **)&g->periodic_partner, p->periodic_partner, np * sizeof(int64_t));
  if (e == cudaSuccess)
    e = upload((void **)&g->periodic_pushed, p->periodic_pushed, np * sizeof(uint32_t));
  if (e == cudaSuccess)
    e = upload((void **)&g->periodic_pulled, p->periodic_pulled, np * sizeof(uint32_t));
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
    .to_device = gpu_to_device,
    .sync = gpu_sync,
    .periodic = gpu_periodic,
    .keep = gpu_keep,
    .wraps = 1,
    .stream = gpu_stream,
    .order = gpu_order,
    .stream_after = gpu_stream_after,
    .after_stream = gpu_after_stream,
};
