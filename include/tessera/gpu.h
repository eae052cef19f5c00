/* The GPUs a process sees, through the CUDA runtime: count, names, memory, peer access, and the
 * measured device-to-device copy bandwidth that benchmarks report their roofline against.
 * Without CUDA in the build every call says there is no GPU. */
#ifndef TESSERA_GPU_H
#define TESSERA_GPU_H

#include "tessera/error.h"
#include "tessera/halo.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ts_gpu_info {
  char name[256];
  double memory_gib;
  int major, minor; /* compute capability */
  int multiprocessors;
} ts_gpu_info;

int ts_gpu_count(void); /* 0 without CUDA, without a driver or without a GPU */
ts_status ts_gpu_info_of(int device, ts_gpu_info *info);
int ts_gpu_peer_access(int from, int to); /* 1 when `from` can read and write `to`'s memory */
/* "CUDA runtime 13.0, driver 13.0", or "none (CPU build)". */
const char *ts_gpu_runtime(void);
/* The device memory in use (by any process) and free, summed over the n GPUs devices[] (n = 0:
 * every GPU of this process), in bytes; 0 and 0 without CUDA. Benchmarks take the difference
 * over a run as the run's device memory. */
void ts_gpu_memory(const int *devices, int n, double *used, double *free_bytes);
/* Creates the CUDA contexts of the n GPUs devices[] (n = 0: every GPU) on a thread of its own,
 * what the first call on a device costs (about 0.3 s on an H100), so that a run reads its input
 * meanwhile; ts_gpu_warm_wait waits for it (and returns at once when nothing was started).
 * Nothing is started without CUDA. */
void ts_gpu_warm_start(const int *devices, int n);
void ts_gpu_warm_wait(void);
/* Copy bandwidth of a device (GB/s, bytes read plus bytes written) over a copy of `bytes`
 * bytes, the median of 10 copies; 0 on failure. */
double ts_gpu_copy_bandwidth(int device, double bytes);

#if TESSERA_HAVE_CUDA
/* Stops the program with "tessera: CUDA <what> failed: <reason>" unless error (a cudaError_t)
 * is success: a failing device call leaves no consistent state to return to. */
void ts_gpu_check(int error, const char *what);
/* Lets `device` (made current) read and write the memory of every GPU it has peer access to:
 * enabled once per pair in the process, with the halo copier's own (ts_gpu_copy_box). */
void ts_gpu_enable_peers(int device);
/* The halo engine's copier (ts_halo_copier) for fields in GPU memory: halo copies between
 * subdomains of one process (one copy per component for boxes of several whole layers, a kernel
 * per field for other 3D boxes and narrow columns, 2D copies for long rows), through peer access
 * between devices, queued on a stream of the destination device
 * (the subdomains' own work must be finished when the exchange starts); ts_gpu_halo_wait waits
 * for the copies queued so far. */
void ts_gpu_copy_box(const ts_box *box, int nfields, const uint32_t *masks,
                     const ts_halo_field *from, const ts_halo_field *to);
void ts_gpu_halo_wait(void);
/* The stream of the halo copies to `device` (created when first needed; a cudaStream_t). */
void *ts_gpu_halo_stream(int device);
/* Work queued on `waiter` (a stream of any device) from now on waits for the halo copies queued
 * so far to each of the n devices listed (repeats count once): a part waits for the copies to
 * every device of the exchange, since those to the others read its cells. */
void ts_gpu_after_halos(void *waiter, const int *devices, int n);
/* Work queued on streams of several devices as one CUDA graph (device runs over the GPU parts
 * of a process): ts_gpu_capture_begin records, instead of running, what is queued from then on
 * on `stream` and on the streams that wait for it, until they are joined back; capture_end
 * makes the record an executable graph, which graph_launch queues on a stream (work on other
 * devices included) and graph_destroy frees. Streams are cudaStream_t. */
void ts_gpu_capture_begin(void *stream);
/* Work queued on `waiter` from now on waits for what is queued on `signal` so far, through
 * `event` (a cudaEvent_t of signal's device, recorded on it). Streams are cudaStream_t. */
void ts_gpu_stream_after(void *waiter, void *signal, void *event);
void *ts_gpu_capture_end(void *stream);
void ts_gpu_graph_launch(void *graph, void *stream);
void ts_gpu_graph_destroy(void *graph);
#endif

#ifdef __cplusplus
}
#endif
#endif
