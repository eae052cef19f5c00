/* RMCRT on a GPU (rmcrt_cuda.h): one thread per cell of a box calls rmcrt_cell_divq, the
 * function the CPU loops call; built without fused multiply-add, so the GPU computes the CPU's
 * bits. */
#include <cuda_runtime.h>
#include <stdlib.h>

#include "physics/rmcrt/rmcrt_cuda.h"
#include "tessera/gpu.h"

struct rmcrt_gpu {
  int device;
  float *cells;  /* the medium (rmcrt_medium) */
  float *coarse; /* its coarse level (NULL without) */
  size_t coarse_bytes;
  double *divq;                /* the box being traced */
  size_t divq_cells;           /* allocated */
  double *grid_divq;           /* the whole grid, for bands traced on streams (NULL until then) */
  unsigned long long *crossed; /* counted by every launch */
  cudaStream_t stream;
};

static __global__ void k_trace(rmcrt_medium m, int3 lo, int3 size, int rays, double *divq,
                               unsigned long long *crossed) {
  int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  int64_t cells = (int64_t)size.x * size.y * size.z;
  int64_t mine = 0;
  if (idx < cells) {
    int c[3] = {lo.x + (int)(idx % size.x), lo.y + (int)((idx / size.x) % size.y),
                lo.z + (int)(idx / ((int64_t)size.x * size.y))};
    divq[idx] = rmcrt_cell_divq(&m, c, rays, &mine);
  }
  atomicAdd(crossed, (unsigned long long)mine);
}

static ts_status fail(cudaError_t e, const char *what) {
  return ts_error(TS_ERR_INTERNAL, "rmcrt: CUDA %s: %s", what, cudaGetErrorString(e));
}

extern "C" ts_status rmcrt_gpu_create(rmcrt_gpu **out, int device, const rmcrt_medium *m) {
  *out = NULL;
  rmcrt_gpu *g = (rmcrt_gpu *)calloc(1, sizeof *g);
  if (!g)
    return ts_error(TS_ERR_NOMEM, "rmcrt: out of memory");
  g->device = device;
  size_t bytes = 2 * sizeof(float) * (size_t)m->n[0] * m->n[1] * m->n[2];
  cudaError_t e = cudaSetDevice(device);
  if (e == cudaSuccess)
    e = cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking);
  if (e == cudaSuccess)
    e = cudaMalloc(&g->cells, bytes);
  if (e == cudaSuccess)
    e = cudaMalloc(&g->crossed, sizeof *g->crossed);
  if (e == cudaSuccess)
    e = cudaMemset(g->crossed, 0, sizeof *g->crossed);
  if (e == cudaSuccess)
    e = cudaMemcpy(g->cells, m->cells, bytes, cudaMemcpyHostToDevice);
  g->coarse_bytes = m->coarse ? 2 * sizeof(float) * (size_t)m->nc[0] * m->nc[1] * m->nc[2] : 0;
  if (e == cudaSuccess && m->coarse)
    e = cudaMalloc(&g->coarse, g->coarse_bytes);
  if (e == cudaSuccess && m->coarse)
    e = cudaMemcpy(g->coarse, m->coarse, g->coarse_bytes, cudaMemcpyHostToDevice);
  if (e != cudaSuccess) {
    rmcrt_gpu_destroy(g);
    return fail(e, "set-up of the medium");
  }
  *out = g;
  return TS_OK;
}

extern "C" ts_status rmcrt_gpu_trace(rmcrt_gpu *g, const rmcrt_medium *m, const int lo[3],
                                     const int hi[3], int rays, double *divq, int64_t *crossed) {
  int3 size = make_int3(hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]);
  size_t cells = (size_t)size.x * size.y * size.z;
  cudaError_t e = cudaSetDevice(g->device);
  if (e == cudaSuccess && cells > g->divq_cells) {
    cudaFree(g->divq);
    g->divq = NULL;
    e = cudaMalloc(&g->divq, sizeof(double) * cells);
    g->divq_cells = e == cudaSuccess ? cells : 0;
  }
  if (e != cudaSuccess)
    return fail(e, "allocation of divQ");
  rmcrt_medium dm = *m;
  dm.cells = g->cells;
  dm.coarse = g->coarse;
  unsigned long long count = 0;
  double *box = (double *)malloc(sizeof(double) * (cells ? cells : 1));
  if (!box)
    return ts_error(TS_ERR_NOMEM, "rmcrt: out of memory");
  e = cudaMemsetAsync(g->crossed, 0, sizeof *g->crossed, g->stream);
  if (e == cudaSuccess && cells > 0) {
    k_trace<<<(unsigned)((cells + 127) / 128), 128, 0, g->stream>>>(
        dm, make_int3(lo[0], lo[1], lo[2]), size, rays, g->divq, g->crossed);
    e = cudaGetLastError();
  }
  if (e == cudaSuccess)
    e = cudaMemcpyAsync(box, g->divq, sizeof(double) * cells, cudaMemcpyDeviceToHost, g->stream);
  if (e == cudaSuccess)
    e = cudaMemcpyAsync(&count, g->crossed, sizeof count, cudaMemcpyDeviceToHost, g->stream);
  if (e == cudaSuccess)
    e = cudaStreamSynchronize(g->stream);
  if (e == cudaSuccess) {
    for (size_t q = 0; q < cells; q++) {
      size_t i = q % (size_t)size.x, j = (q / size.x) % size.y, k = q / ((size_t)size.x * size.y);
      divq[(lo[0] + i) + (size_t)m->n[0] * ((lo[1] + j) + (size_t)m->n[1] * (lo[2] + k))] = box[q];
    }
    *crossed += (int64_t)count;
  }
  free(box);
  return e == cudaSuccess ? TS_OK : fail(e, "tracing");
}

extern "C" ts_status rmcrt_gpu_trace_band(rmcrt_gpu *g, const rmcrt_medium *m, int z0, int z1,
                                          int rays, double *divq, void *stream) {
  size_t layer = (size_t)m->n[0] * m->n[1], cells = layer * (size_t)(z1 - z0);
  cudaStream_t s = (cudaStream_t)stream;
  cudaError_t e = cudaSetDevice(g->device);
  if (e == cudaSuccess && !g->grid_divq)
    e = cudaMalloc(&g->grid_divq, sizeof(double) * layer * m->n[2]);
  if (e != cudaSuccess)
    return fail(e, "allocation of divQ");
  rmcrt_medium dm = *m;
  dm.cells = g->cells;
  dm.coarse = g->coarse;
  double *band = g->grid_divq + layer * z0;
  if (cells > 0) {
    k_trace<<<(unsigned)((cells + 127) / 128), 128, 0, s>>>(
        dm, make_int3(0, 0, z0), make_int3(m->n[0], m->n[1], z1 - z0), rays, band, g->crossed);
    e = cudaGetLastError();
  }
  if (e == cudaSuccess)
    e = cudaMemcpyAsync(divq + layer * z0, band, sizeof(double) * cells, cudaMemcpyDeviceToHost, s);
  return e == cudaSuccess ? TS_OK : fail(e, "tracing a band");
}

extern "C" ts_status rmcrt_gpu_upload_band(rmcrt_gpu *g, const float *cells, const int n[3], int z0,
                                           int z1, void *stream) {
  size_t layer = 2 * (size_t)n[0] * n[1];
  cudaError_t e = cudaSetDevice(g->device);
  if (e == cudaSuccess)
    e = cudaMemcpyAsync(g->cells + layer * z0, cells + layer * z0,
                        sizeof(float) * layer * (size_t)(z1 - z0), cudaMemcpyHostToDevice,
                        (cudaStream_t)stream);
  return e == cudaSuccess ? TS_OK : fail(e, "upload of the medium");
}

extern "C" ts_status rmcrt_gpu_upload_coarse(rmcrt_gpu *g, const float *coarse, void *stream) {
  cudaError_t e = cudaSetDevice(g->device);
  if (e == cudaSuccess && g->coarse)
    e = cudaMemcpyAsync(g->coarse, coarse, g->coarse_bytes, cudaMemcpyHostToDevice,
                        (cudaStream_t)stream);
  return e == cudaSuccess ? TS_OK : fail(e, "upload of the coarse level");
}

extern "C" int64_t rmcrt_gpu_take_crossings(rmcrt_gpu *g) {
  unsigned long long count = 0;
  cudaSetDevice(g->device);
  cudaDeviceSynchronize();
  cudaMemcpy(&count, g->crossed, sizeof count, cudaMemcpyDeviceToHost);
  cudaMemset(g->crossed, 0, sizeof count);
  return (int64_t)count;
}

extern "C" void rmcrt_gpu_destroy(rmcrt_gpu *g) {
  if (!g)
    return;
  cudaSetDevice(g->device);
  cudaFree(g->cells);
  cudaFree(g->coarse);
  cudaFree(g->divq);
  cudaFree(g->grid_divq);
  cudaFree(g->crossed);
  if (g->stream)
    cudaStreamDestroy(g->stream);
  free(g);
}
