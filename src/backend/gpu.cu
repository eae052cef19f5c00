/* The halo copier for fields in GPU memory (ts_gpu_copy_box): halo copies between subdomains of
 * one process, queued on a stream of the destination device. A box of one layer whose rows are
 * long goes by 2D copies (the copy engines, no multiprocessor time); other boxes (3D faces, or
 * the few-cell-wide columns of a split along x) by one kernel per field that moves every masked
 * component, reading the source through peer access where it lies on another device (one copy
 * call per component and layer would cost more than the copy). Also the CUDA graphs that record
 * work on streams of several devices (device runs over the GPU parts of a process). */
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdint.h>

#include "tessera/gpu.h"

/* Streams of the halo copies, one per destination device (created when first needed, kept for
 * the process); the halo engine copies on several threads. */
static cudaStream_t halo_streams[64];
static int halo_pending[64];
static cudaEvent_t halo_marks[64];     /* recorded on each halo stream for ts_gpu_after_halos */
static signed char peer_reads[64][64]; /* 0 not tried, 1 dst reads src's memory, -1 cannot */
static pthread_mutex_t halo_streams_lock = PTHREAD_MUTEX_INITIALIZER;

/* The device holding ptr, or -1 for memory that is not device memory. */
static int device_of(const void *ptr) {
  cudaPointerAttributes at;
  ts_gpu_check((int)cudaPointerGetAttributes(&at, ptr), "pointer attributes");
  return at.type == cudaMemoryTypeDevice && at.device >= 0 && at.device < 64 ? at.device : -1;
}

/* Whether kernels on device dst can read device src's memory: peer access enabled from dst,
 * tried once per pair in the process (here and by ts_gpu_enable_peers alike: enabling a pair a
 * second time returns cudaErrorPeerAccessAlreadyEnabled, which compute-sanitizer reports as an
 * error). "Already enabled" (by another library, such as NCCL) counts as enabled, and the error
 * is read back at once, so no later check on this thread sees it. */
static int dst_reads_src(int dst, int src) {
  if (dst == src)
    return 1;
  pthread_mutex_lock(&halo_streams_lock);
  if (peer_reads[dst][src] == 0) {
    int can = 0;
    peer_reads[dst][src] = -1;
    if (cudaDeviceCanAccessPeer(&can, dst, src) == cudaSuccess && can &&
        cudaSetDevice(dst) == cudaSuccess) {
      cudaError_t e = cudaDeviceEnablePeerAccess(src, 0);
      if (e == cudaSuccess || e == cudaErrorPeerAccessAlreadyEnabled)
        peer_reads[dst][src] = 1;
      cudaGetLastError(); /* that error is not sticky */
    }
  }
  int ok = peer_reads[dst][src] > 0;
  pthread_mutex_unlock(&halo_streams_lock);
  return ok;
}

void ts_gpu_enable_peers(int device) {
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) == cudaSuccess)
    for (int peer = 0; peer < ndev && peer < 64; peer++)
      dst_reads_src(device, peer);
  cudaSetDevice(device);
}

/* The halo stream of device d, made the calling thread's current device (a copy must be queued
 * from its stream's device). */
static cudaStream_t halo_stream_of(int d) {
  ts_gpu_check((int)cudaSetDevice(d), "device selection");
  pthread_mutex_lock(&halo_streams_lock);
  if (!halo_streams[d])
    ts_gpu_check((int)cudaStreamCreateWithFlags(&halo_streams[d], cudaStreamNonBlocking), "stream");
  halo_pending[d] = 1;
  cudaStream_t stream = halo_streams[d];
  pthread_mutex_unlock(&halo_streams_lock);
  return stream;
}

/* The masked components of one field in a box: each one's first cell in the source and the
 * destination, the box's extent and both layouts' row and layer strides (elements). */
struct box_copy {
  const char *src[TS_HALO_MAX_COMP];
  char *dst[TS_HALO_MAX_COMP];
  int nx, ny, nz;
  int64_t src_row, src_layer, dst_row, dst_layer;
};

/* One thread per cell of the box (x fastest) and component (the grid's y). */
template <typename T> static __global__ void k_copy_box(const __grid_constant__ box_copy c) {
  int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (int64_t)c.nx * c.ny * c.nz)
    return;
  int x = (int)(i % c.nx);
  int64_t r = i / c.nx;
  int y = (int)(r % c.ny), z = (int)(r / c.ny);
  const T *src = (const T *)c.src[blockIdx.y];
  T *dst = (T *)c.dst[blockIdx.y];
  dst[x + y * c.dst_row + z * c.dst_layer] = src[x + y * c.src_row + z * c.src_layer];
}

/* Element offset of the box's first cell in field f's layout (rows are contiguous: the fields
 * of GPU solvers have stride[0] 1, as the copies by layers have always assumed). */
static int64_t first_cell(const ts_box *box, const ts_halo_field *f) {
  return f->origin + (box->lo[0] - f->lo[0]) + (int64_t)(box->lo[1] - f->lo[1]) * f->stride[1] +
         (int64_t)(box->lo[2] - f->lo[2]) * f->stride[2];
}

/* Field f of a box by one kernel on the destination's device; 0 when that cannot be done (host
 * memory, an element size without a kernel, or no peer access between the devices). */
static int copy_by_kernel(const ts_box *box, uint32_t mask, const ts_halo_field *from,
                          const ts_halo_field *to, int src_device, int dst_device) {
  size_t e = from->elem;
  if (src_device < 0 || dst_device < 0 || (e != 1 && e != 2 && e != 4 && e != 8) ||
      !dst_reads_src(dst_device, src_device))
    return 0;
  box_copy c;
  c.nx = box->hi[0] - box->lo[0];
  c.ny = box->hi[1] - box->lo[1];
  c.nz = box->hi[2] - box->lo[2];
  c.src_row = from->stride[1];
  c.src_layer = from->stride[2];
  c.dst_row = to->stride[1];
  c.dst_layer = to->stride[2];
  int64_t so = first_cell(box, from), dof = first_cell(box, to);
  unsigned n = 0;
  for (int k = 0; k < from->ncomp; k++)
    if (mask >> k & 1u) {
      c.src[n] = (const char *)from->comp[k] + (size_t)so * e;
      c.dst[n] = (char *)to->comp[k] + (size_t)dof * e;
      n++;
    }
  int64_t cells = (int64_t)c.nx * c.ny * c.nz;
  if (n == 0 || cells <= 0)
    return 1;
  cudaStream_t stream = halo_stream_of(dst_device);
  dim3 grid((unsigned)((cells + 255) / 256), n);
  switch (e) {
  case 1: k_copy_box<uint8_t><<<grid, 256, 0, stream>>>(c); break;
  case 2: k_copy_box<uint16_t><<<grid, 256, 0, stream>>>(c); break;
  case 4: k_copy_box<uint32_t><<<grid, 256, 0, stream>>>(c); break;
  default: k_copy_box<uint64_t><<<grid, 256, 0, stream>>>(c); break;
  }
  ts_gpu_check((int)cudaGetLastError(), "launch of the halo copy kernel");
  return 1;
}

/* Field f of a box by one 2D copy per masked component and layer (any memory the runtime can
 * copy: the stream is the destination's, or device 0's for host memory). */
static void copy_by_layers(const ts_box *box, uint32_t mask, const ts_halo_field *from,
                           const ts_halo_field *to, int dst_device) {
  size_t e = from->elem, width = (size_t)(box->hi[0] - box->lo[0]) * e;
  int64_t so = first_cell(box, from), dof = first_cell(box, to);
  cudaStream_t stream = halo_stream_of(dst_device >= 0 ? dst_device : 0);
  for (int z = 0; z < box->hi[2] - box->lo[2]; z++)
    for (int k = 0; k < from->ncomp; k++)
      if (mask >> k & 1u) {
        char *dst = (char *)to->comp[k] + (size_t)(dof + z * to->stride[2]) * e;
        const char *src = (const char *)from->comp[k] + (size_t)(so + z * from->stride[2]) * e;
        ts_gpu_check((int)cudaMemcpy2DAsync(
                         dst, (size_t)to->stride[1] * e, src, (size_t)from->stride[1] * e, width,
                         (size_t)(box->hi[1] - box->lo[1]), cudaMemcpyDefault, stream),
                     "halo copy");
      }
}

/* Whether the box is several whole layers of field f: one contiguous run of its memory (the
 * windows of quadtree leaves, a layer each). */
static int whole_layers(const ts_box *box, const ts_halo_field *f) {
  int64_t nx = box->hi[0] - box->lo[0], ny = box->hi[1] - box->lo[1];
  return box->hi[2] - box->lo[2] > 1 && nx == f->stride[1] && nx * ny == f->stride[2];
}

/* Field f of a box of whole layers in both layouts: one copy per masked component (peer copies
 * between devices by their copy engines). */
static void copy_contiguous(const ts_box *box, uint32_t mask, const ts_halo_field *from,
                            const ts_halo_field *to, int dst_device) {
  size_t bytes = (size_t)(box->hi[0] - box->lo[0]) * (size_t)(box->hi[1] - box->lo[1]) *
                 (size_t)(box->hi[2] - box->lo[2]) * from->elem;
  int64_t so = first_cell(box, from), dof = first_cell(box, to);
  cudaStream_t stream = halo_stream_of(dst_device >= 0 ? dst_device : 0);
  for (int k = 0; k < from->ncomp; k++)
    if (mask >> k & 1u)
      ts_gpu_check((int)cudaMemcpyAsync((char *)to->comp[k] + (size_t)dof * to->elem,
                                        (const char *)from->comp[k] + (size_t)so * from->elem,
                                        bytes, cudaMemcpyDefault, stream),
                   "halo copy");
}

void ts_gpu_copy_box(const ts_box *box, int nfields, const uint32_t *masks,
                     const ts_halo_field *from, const ts_halo_field *to) {
  for (int f = 0; f < nfields; f++) {
    if (!masks[f] || from[f].ncomp == 0)
      continue;
    int dst_device = device_of(to[f].comp[0]), src_device = device_of(from[f].comp[0]);
    if (whole_layers(box, &from[f]) && whole_layers(box, &to[f])) {
      copy_contiguous(box, masks[f], &from[f], &to[f], dst_device);
      continue;
    }
    size_t row_bytes = (size_t)(box->hi[0] - box->lo[0]) * from[f].elem;
    int layers = box->hi[2] - box->lo[2];
    if ((layers > 1 || row_bytes < 256) &&
        copy_by_kernel(box, masks[f], &from[f], &to[f], src_device, dst_device))
      continue;
    copy_by_layers(box, masks[f], &from[f], &to[f], dst_device);
  }
}

void ts_gpu_halo_wait(void) {
  for (int d = 0; d < 64; d++)
    if (halo_pending[d]) {
      ts_gpu_check((int)cudaSetDevice(d), "device selection");
      ts_gpu_check((int)cudaStreamSynchronize(halo_streams[d]), "halo copies");
      halo_pending[d] = 0;
    }
}

void *ts_gpu_halo_stream(int device) { return halo_stream_of(device); }

void ts_gpu_after_halos(void *waiter, const int *devices, int n) {
  for (int q = 0; q < n; q++) {
    int d = devices[q], seen = 0;
    for (int r = 0; r < q; r++)
      seen |= devices[r] == d;
    if (seen || d < 0 || d >= 64)
      continue;
    cudaStream_t halo = halo_stream_of(d); /* device d current: its event is made there */
    pthread_mutex_lock(&halo_streams_lock);
    if (!halo_marks[d])
      ts_gpu_check((int)cudaEventCreateWithFlags(&halo_marks[d], cudaEventDisableTiming),
                   "event creation");
    ts_gpu_check((int)cudaEventRecord(halo_marks[d], halo), "event record");
    ts_gpu_check((int)cudaStreamWaitEvent((cudaStream_t)waiter, halo_marks[d], 0),
                 "wait between streams");
    pthread_mutex_unlock(&halo_streams_lock);
  }
}

void ts_gpu_capture_begin(void *stream) {
  ts_gpu_check((int)cudaStreamBeginCapture((cudaStream_t)stream, cudaStreamCaptureModeThreadLocal),
               "graph capture");
}

void ts_gpu_stream_after(void *waiter, void *signal, void *event) {
  ts_gpu_check((int)cudaEventRecord((cudaEvent_t)event, (cudaStream_t)signal), "event record");
  ts_gpu_check((int)cudaStreamWaitEvent((cudaStream_t)waiter, (cudaEvent_t)event, 0),
               "wait between streams");
}

void *ts_gpu_capture_end(void *stream) {
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  ts_gpu_check((int)cudaStreamEndCapture((cudaStream_t)stream, &graph), "graph capture");
  ts_gpu_check((int)cudaGraphInstantiate(&exec, graph, 0), "graph instantiation");
  cudaGraphDestroy(graph);
  return exec;
}

void ts_gpu_graph_launch(void *graph, void *stream) {
  ts_gpu_check((int)cudaGraphLaunch((cudaGraphExec_t)graph, (cudaStream_t)stream), "graph launch");
}

void ts_gpu_graph_destroy(void *graph) {
  if (graph)
    cudaGraphExecDestroy((cudaGraphExec_t)graph);
}
