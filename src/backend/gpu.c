/* GPU discovery, the copy-bandwidth measurement, error checks and peer access, through the CUDA
 * runtime API (plain C); the halo copies between GPU subdomains of one process are in gpu.cu. */
#include "tessera/gpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tessera/job.h"

#if TESSERA_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

int ts_gpu_count(void) {
#if TESSERA_HAVE_CUDA
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess)
    return 0;
  return n;
#else
  return 0;
#endif
}

#if TESSERA_HAVE_CUDA
/* The warm-up job and the devices it makes contexts on. */
static struct {
  ts_job job;
  int started, n, devices[64];
} warm;

static ts_status warm_devices(void *arg) {
  (void)arg;
  int n = warm.n;
  if (n == 0 && cudaGetDeviceCount(&n) != cudaSuccess)
    n = 0;
  for (int k = 0; k < n && k < 64; k++)
    if (cudaSetDevice(warm.n ? warm.devices[k] : k) == cudaSuccess)
      cudaFree(NULL); /* creates the device's primary context */
  cudaGetLastError(); /* a failure here is the run's to report, where it uses the device */
  return TS_OK;
}
#endif

void ts_gpu_warm_start(const int *devices, int n) {
#if TESSERA_HAVE_CUDA
  if (warm.started || n < 0 || n > 64)
    return;
  warm.n = n;
  for (int k = 0; k < n; k++)
    warm.devices[k] = devices[k];
  warm.started = 1;
  ts_job_start(&warm.job, warm_devices, NULL);
#else
  (void)devices, (void)n;
#endif
}

void ts_gpu_warm_wait(void) {
#if TESSERA_HAVE_CUDA
  if (warm.started)
    ts_job_finish(&warm.job, TS_OK);
  warm.started = 0;
#endif
}

ts_status ts_gpu_info_of(int device, ts_gpu_info *info) {
  memset(info, 0, sizeof *info);
#if TESSERA_HAVE_CUDA
  struct cudaDeviceProp p;
  if (cudaGetDeviceProperties(&p, device) != cudaSuccess)
    return ts_error(TS_ERR_INPUT, "CUDA device %d cannot be queried", device);
  snprintf(info->name, sizeof info->name, "%s", p.name);
  info->memory_gib = (double)p.totalGlobalMem / (1024.0 * 1024.0 * 1024.0);
  info->major = p.major;
  info->minor = p.minor;
  info->multiprocessors = p.multiProcessorCount;
  return TS_OK;
#else
  return ts_error(TS_ERR_INPUT, "CUDA device %d: this tessera was built without CUDA", device);
#endif
}

int ts_gpu_peer_access(int from, int to) {
#if TESSERA_HAVE_CUDA
  int ok = 0;
  if (cudaDeviceCanAccessPeer(&ok, from, to) != cudaSuccess)
    return 0;
  return ok;
#else
  (void)from;
  (void)to;
  return 0;
#endif
}

void ts_gpu_memory(const int *devices, int n, double *used, double *free_bytes) {
  *used = *free_bytes = 0;
#if TESSERA_HAVE_CUDA
  int current = 0, all = n <= 0;
  if (all)
    n = ts_gpu_count();
  cudaGetDevice(&current);
  for (int k = 0; k < n; k++) {
    size_t available = 0, total = 0;
    int d = all ? k : devices[k];
    if (cudaSetDevice(d) == cudaSuccess && cudaMemGetInfo(&available, &total) == cudaSuccess) {
      *used += (double)(total - available);
      *free_bytes += (double)available;
    }
  }
  cudaSetDevice(current);
#else
  (void)devices, (void)n;
#endif
}

const char *ts_gpu_runtime(void) {
#if TESSERA_HAVE_CUDA
  static char text[64];
  int runtime = 0, driver = 0;
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver);
  snprintf(text, sizeof text, "CUDA runtime %d.%d, driver %d.%d", runtime / 1000,
           runtime % 1000 / 10, driver / 1000, driver % 1000 / 10);
  return text;
#else
  return "none (CPU build)";
#endif
}

#if TESSERA_HAVE_CUDA
static int compare_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}
#endif

double ts_gpu_copy_bandwidth(int device, double bytes) {
#if TESSERA_HAVE_CUDA
  void *a = NULL, *b = NULL;
  size_t n = (size_t)bytes;
  cudaEvent_t start, stop;
  double times[10], result = 0;
  if (cudaSetDevice(device) != cudaSuccess || cudaMalloc(&a, n) != cudaSuccess ||
      cudaMalloc(&b, n) != cudaSuccess) {
    cudaFree(a);
    return 0;
  }
  cudaMemset(a, 1, n);
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  cudaMemcpy(b, a, n, cudaMemcpyDeviceToDevice); /* warm-up */
  for (int k = 0; k < 10; k++) {
    float ms = 0;
    cudaEventRecord(start, 0);
    cudaMemcpy(b, a, n, cudaMemcpyDeviceToDevice);
    cudaEventRecord(stop, 0);
    cudaEventSynchronize(stop);
    cudaEventElapsedTime(&ms, start, stop);
    times[k] = ms * 1e-3;
  }
  qsort(times, 10, sizeof times[0], compare_double);
  double median = 0.5 * (times[4] + times[5]);
  if (median > 0)
    result = 2.0 * (double)n / median / 1e9;
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaFree(a);
  cudaFree(b);
  return result;
#else
  (void)device;
  (void)bytes;
  return 0;
#endif
}

#if TESSERA_HAVE_CUDA
void ts_gpu_check(int error, const char *what) {
  if (error != cudaSuccess) {
    /* a failing device call leaves no consistent state to return to: report and stop */
    fprintf(stderr, "tessera: CUDA %s failed: %s\n", what, cudaGetErrorString((cudaError_t)error));
    exit(1);
  }
}

#endif
