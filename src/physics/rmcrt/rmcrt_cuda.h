/* The GPU side of RMCRT (rmcrt_kernels.cu): a device's copy of the medium, and the tracing of
 * the cells of a box on it with rmcrt_ray.h's functions (one thread per cell). */
#ifndef TESSERA_RMCRT_CUDA_H
#define TESSERA_RMCRT_CUDA_H

#include "physics/rmcrt/rmcrt_ray.h"
#include "tessera/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rmcrt_gpu rmcrt_gpu;
/* Copies the medium's absorption and source (m->n cells, and its coarse level) to `device`. */
ts_status rmcrt_gpu_create(rmcrt_gpu **out, int device, const rmcrt_medium *m);
/* divQ of the cells [lo, hi) into divq (host, the whole grid's layout), the cell crossings
 * added to *crossed. */
ts_status rmcrt_gpu_trace(rmcrt_gpu *g, const rmcrt_medium *m, const int lo[3], const int hi[3],
                          int rays, double *divq, int64_t *crossed);
/* Work queued on a stream (for the task runtime): the tracing of the cells of z-layers [z0, z1)
 * (one contiguous band), their divQ copied into divq (host, pinned, the whole grid's layout);
 * the medium of layers [z0, z1) copied from cells (host, pinned) to the device; and the cell
 * crossings counted by the queued tracing so far (waits for the device), reset. */
ts_status rmcrt_gpu_trace_band(rmcrt_gpu *g, const rmcrt_medium *m, int z0, int z1, int rays,
                               double *divq, void *stream);
ts_status rmcrt_gpu_upload_band(rmcrt_gpu *g, const float *cells, const int n[3], int z0, int z1,
                                void *stream);
/* The coarse level (host, pinned) copied to the device on a stream. */
ts_status rmcrt_gpu_upload_coarse(rmcrt_gpu *g, const float *coarse, void *stream);
int64_t rmcrt_gpu_take_crossings(rmcrt_gpu *g);
void rmcrt_gpu_destroy(rmcrt_gpu *g);

#ifdef __cplusplus
}
#endif
#endif
