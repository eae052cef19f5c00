/* GPU transports for the halo engine: the messages of a plan between ranks whose fields live in
 * GPU memory are packed and unpacked on the device (2D copies into device buffers, on one
 * stream) and moved by NCCL (grouped sends and receives on that stream), by CUDA-aware MPI
 * (device pointers), or staged through pinned host memory and MPI. One transport per process,
 * on the GPU of this rank. Without CUDA in the build only `host` exists, and it is the engine's
 * own MPI path. */
#ifndef TESSERA_TRANSPORT_H
#define TESSERA_TRANSPORT_H

#include "tessera/comm.h"
#include "tessera/halo.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ts_transport_kind {
  TS_TRANSPORT_AUTO,     /* NCCL, else CUDA-aware MPI, else host (see ts_transport_open) */
  TS_TRANSPORT_HOST,     /* device packs staged through pinned host buffers, MPI */
  TS_TRANSPORT_CUDA_MPI, /* MPI on device buffers */
  TS_TRANSPORT_NCCL      /* NCCL send/receive on a stream */
} ts_transport_kind;

const char *ts_transport_name(ts_transport_kind k); /* auto, host, cuda-mpi, nccl */
/* 0 when `name` is not one of them. */
int ts_transport_parse(const char *name, ts_transport_kind *k);
/* Whether this build (NCCL) and MPI library (CUDA-aware) can provide kind k at all. */
int ts_transport_available(ts_transport_kind k);

/* Sets up this process's transport on GPU `device` (collective over the ranks of c; device -1
 * when the rank's subdomains are on several GPUs). auto picks NCCL when it is built in and
 * every rank drives one GPU of its own, else CUDA-aware MPI when the MPI library is, else
 * host staging. A kind that cannot be provided is an error naming why. Opening again with the
 * same arguments returns the same transport. */
ts_status ts_transport_open(const ts_comm *c, int device, ts_transport_kind want,
                            const ts_halo_transport **out, ts_transport_kind *chosen);
/* Element-wise maximum over the ranks of `count` unsigned integers of `bytes` (4 or 8) bytes in
 * device memory, in place, queued on a CUDA stream (cudaStream_t) of this rank's GPU: NCCL's
 * all-reduce. Only with the nccl transport open. */
ts_status ts_transport_max(void *device_buf, int count, int bytes, void *stream);

/* The stream of the open transport's packs, messages and unpacks (a cudaStream_t), NULL when
 * none is open. While it is being captured into a CUDA graph the transport does not wait for
 * it: the captured work that follows the exchange waits for it instead. */
void *ts_transport_stream(void);

/* Frees the transport (collective). */
void ts_transport_close(void);

#ifdef __cplusplus
}
#endif
#endif
