/* GPU transports for the halo engine (transport.h): device packs with cudaMemcpy2DAsync on the
 * transport's stream; NCCL grouped sends/receives on that stream; CUDA-aware MPI on device
 * buffers; or host staging (device packs copied to pinned host buffers, MPI, copied back). */
#define _DEFAULT_SOURCE /* gethostid */
#include "tessera/transport.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if TESSERA_HAVE_MPI
#include <mpi.h>
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif
#endif
#if TESSERA_HAVE_CUDA
#include <cuda_runtime.h>
#endif
#if TESSERA_HAVE_NCCL
#include <nccl.h>
#endif

static const char *const kind_names[] = {"auto", "host", "cuda-mpi", "nccl"};

const char *ts_transport_name(ts_transport_kind k) { return kind_names[k]; }

int ts_transport_parse(const char *name, ts_transport_kind *k) {
  for (int i = 0; i < 4; i++)
    if (strcmp(name, kind_names[i]) == 0) {
      *k = (ts_transport_kind)i;
      return 1;
    }
  return 0;
}

/* Whether the MPI library passes device pointers (Open MPI's extension says so at run time). */
static int mpi_cuda_aware(void) {
#if TESSERA_HAVE_MPI && defined(MPIX_CUDA_AWARE_SUPPORT)
  return MPIX_Query_cuda_support() == 1;
#else
  return 0;
#endif
}

int ts_transport_available(ts_transport_kind k) {
  switch (k) {
  case TS_TRANSPORT_AUTO: return 1;
  case TS_TRANSPORT_HOST: return TESSERA_HAVE_MPI && TESSERA_HAVE_CUDA;
  case TS_TRANSPORT_CUDA_MPI: return TESSERA_HAVE_CUDA && mpi_cuda_aware();
  case TS_TRANSPORT_NCCL: return TESSERA_HAVE_NCCL && TESSERA_HAVE_MPI;
  }
  return 0;
}

#if TESSERA_HAVE_CUDA && TESSERA_HAVE_MPI

/* A device buffer and, for host staging, its pinned host mirror. */
typedef struct staged {
  char *dev, *host;
  size_t bytes;
} staged;

static struct {
  int open, device;
  ts_transport_kind kind;
  const ts_comm *comm;
  cudaStream_t stream;
  staged *buffers;
  int nbuffers;
  MPI_Request *requests;
  int capacity, active; /* requests allocated, requests posted */
  int nrecvs;           /* host staging: receives to copy up after the wait */
  const ts_halo_message *recvs;
#if TESSERA_HAVE_NCCL
  ncclComm_t nccl;
#endif
  ts_halo_transport vtable;
} T;

static ts_status cuda_fail(cudaError_t e, const char *what) {
  return ts_error(TS_ERR_INTERNAL, "transport %s: %s failed: %s", kind_names[T.kind], what,
                  cudaGetErrorString(e));
}

static void *t_alloc(size_t bytes) {
  cudaSetDevice(T.device);
  staged b = {NULL, NULL, bytes};
  if (cudaMalloc((void **)&b.dev, bytes) != cudaSuccess)
    return NULL;
  if (T.kind == TS_TRANSPORT_HOST && cudaMallocHost((void **)&b.host, bytes) != cudaSuccess) {
    cudaFree(b.dev);
    return NULL;
  }
  staged *list = realloc(T.buffers, sizeof *list * (size_t)(T.nbuffers + 1));
  if (!list) {
    cudaFree(b.dev);
    cudaFreeHost(b.host);
    return NULL;
  }
  list[T.nbuffers++] = b;
  T.buffers = list;
  return b.dev;
}

static void t_release(void *buf) {
  for (int k = 0; k < T.nbuffers; k++)
    if (T.buffers[k].dev == buf) {
      cudaFree(T.buffers[k].dev);
      cudaFreeHost(T.buffers[k].host);
      T.buffers[k] = T.buffers[--T.nbuffers];
      return;
    }
}

/* The pinned host address mirroring device address p (host staging). */
static char *host_of(const void *p) {
  for (int k = 0; k < T.nbuffers; k++) {
    const staged *b = &T.buffers[k];
    if ((const char *)p >= b->dev && (const char *)p < b->dev + b->bytes)
      return b->host + ((const char *)p - b->dev);
  }
  return NULL;
}

/* Packs or unpacks a box, component by component (the engine's packed order), on the
 * transport's stream: one 3D copy per component where the field's layers are whole planes of
 * its rows (the layers of a deep box, such as a run of quadtree blocks, in one call), else a 2D
 * copy per layer. */
static void t_move(const ts_box *box, int nfields, const uint32_t *masks,
                   const ts_halo_field *fields, char *buf, int pack) {
  cudaSetDevice(T.device);
  size_t offset = 0, height = (size_t)(box->hi[1] - box->lo[1]);
  size_t depth = (size_t)(box->hi[2] - box->lo[2]);
  for (int f = 0; f < nfields; f++) {
    const ts_halo_field *fl = &fields[f];
    size_t width = (size_t)(box->hi[0] - box->lo[0]) * fl->elem;
    size_t pitch = (size_t)fl->stride[1] * fl->elem;
    int planes =
        depth > 1 && fl->stride[0] == 1 && fl->stride[1] > 0 && fl->stride[2] % fl->stride[1] == 0;
    for (int c = 0; c < fl->ncomp; c++) {
      if (!(masks[f] >> c & 1u))
        continue;
      if (planes) {
        int64_t e = fl->origin + (box->lo[0] - fl->lo[0]) * fl->stride[0] +
                    (int64_t)(box->lo[1] - fl->lo[1]) * fl->stride[1] +
                    (int64_t)(box->lo[2] - fl->lo[2]) * fl->stride[2];
        char *field = (char *)fl->comp[c] + (size_t)e * fl->elem, *packed = buf + offset;
        struct cudaPitchedPtr in_field =
            make_cudaPitchedPtr(field, pitch, width, (size_t)(fl->stride[2] / fl->stride[1]));
        struct cudaPitchedPtr in_buf = make_cudaPitchedPtr(packed, width, width, height);
        struct cudaMemcpy3DParms copy = {0};
        copy.srcPtr = pack ? in_field : in_buf;
        copy.dstPtr = pack ? in_buf : in_field;
        copy.extent = make_cudaExtent(width, height, depth);
        copy.kind = cudaMemcpyDefault;
        cudaMemcpy3DAsync(&copy, T.stream);
        offset += width * height * depth;
        continue;
      }
      for (int z = box->lo[2]; z < box->hi[2]; z++) {
        int64_t e = fl->origin + (box->lo[0] - fl->lo[0]) * fl->stride[0] +
                    (int64_t)(box->lo[1] - fl->lo[1]) * fl->stride[1] +
                    (int64_t)(z - fl->lo[2]) * fl->stride[2];
        char *field = (char *)fl->comp[c] + (size_t)e * fl->elem, *packed = buf + offset;
        if (pack)
          cudaMemcpy2DAsync(packed, width, field, pitch, width, height, cudaMemcpyDefault,
                            T.stream);
        else
          cudaMemcpy2DAsync(field, pitch, packed, width, width, height, cudaMemcpyDefault,
                            T.stream);
        offset += width * height;
      }
    }
  }
}

static ts_status t_post(int nrecvs, const ts_halo_message *recvs, int nsends,
                        const ts_halo_message *sends) {
  cudaSetDevice(T.device);
#if TESSERA_HAVE_NCCL
  if (T.kind == TS_TRANSPORT_NCCL) {
    /* Between two ranks, sends and receives match in the order they are posted: the plan lists
     * them by (receiving, sending) subdomain on every rank. */
    ncclGroupStart();
    for (int k = 0; k < nrecvs; k++)
      ncclRecv(recvs[k].buf, recvs[k].bytes, ncclChar, recvs[k].peer, T.nccl, T.stream);
    for (int k = 0; k < nsends; k++)
      ncclSend(sends[k].buf, sends[k].bytes, ncclChar, sends[k].peer, T.nccl, T.stream);
    ncclResult_t r = ncclGroupEnd();
    if (r != ncclSuccess)
      return ts_error(TS_ERR_INTERNAL, "transport nccl: send/receive failed: %s",
                      ncclGetErrorString(r));
    return TS_OK;
  }
#endif
  int n = nrecvs + nsends;
  if (n > T.capacity) {
    MPI_Request *r = realloc(T.requests, sizeof *r * (size_t)n);
    if (!r)
      return ts_error(TS_ERR_NOMEM, "out of memory");
    T.requests = r;
    T.capacity = n;
  }
  int staging = T.kind == TS_TRANSPORT_HOST;
  cudaError_t e = cudaSuccess;
  for (int k = 0; staging && k < nsends && e == cudaSuccess; k++)
    e = cudaMemcpyAsync(host_of(sends[k].buf), sends[k].buf, sends[k].bytes, cudaMemcpyDeviceToHost,
                        T.stream);
  if (e == cudaSuccess)
    e = cudaStreamSynchronize(T.stream); /* MPI reads what the packs wrote */
  if (e != cudaSuccess)
    return cuda_fail(e, "packing");
  for (int k = 0; k < nrecvs; k++)
    MPI_Irecv(staging ? host_of(recvs[k].buf) : recvs[k].buf, (int)recvs[k].bytes, MPI_BYTE,
              recvs[k].peer, recvs[k].tag, MPI_COMM_WORLD, &T.requests[k]);
  for (int k = 0; k < nsends; k++)
    MPI_Isend(staging ? host_of(sends[k].buf) : sends[k].buf, (int)sends[k].bytes, MPI_BYTE,
              sends[k].peer, sends[k].tag, MPI_COMM_WORLD, &T.requests[nrecvs + k]);
  T.active = n;
  T.nrecvs = nrecvs;
  T.recvs = recvs;
  return TS_OK;
}

static ts_status t_wait(void) {
  if (T.kind == TS_TRANSPORT_NCCL)
    return TS_OK; /* the unpacks follow the receives on the stream */
  int rc = MPI_Waitall(T.active, T.requests, MPI_STATUSES_IGNORE);
  T.active = 0;
  if (rc != MPI_SUCCESS)
    return ts_error(TS_ERR_INTERNAL, "transport %s: MPI wait failed", kind_names[T.kind]);
  cudaSetDevice(T.device);
  for (int k = 0; T.kind == TS_TRANSPORT_HOST && k < T.nrecvs; k++) {
    cudaError_t e = cudaMemcpyAsync(T.recvs[k].buf, host_of(T.recvs[k].buf), T.recvs[k].bytes,
                                    cudaMemcpyHostToDevice, T.stream);
    if (e != cudaSuccess)
      return cuda_fail(e, "copy of the received halos");
  }
  return TS_OK;
}

static ts_status t_done(void) {
  cudaSetDevice(T.device);
  enum cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  cudaError_t e = cudaStreamIsCapturing(T.stream, &capture);
  if (e == cudaSuccess && capture == cudaStreamCaptureStatusActive)
    return TS_OK; /* recorded: what follows in the graph waits for the stream */
  if (e == cudaSuccess)
    e = cudaStreamSynchronize(T.stream);
  return e == cudaSuccess ? TS_OK : cuda_fail(e, "halo exchange");
}

/* NCCL needs one GPU per rank: every rank drives one device, no two ranks of a host the same. */
static ts_status one_gpu_per_rank(const ts_comm *c, int device, int *ok) {
  struct {
    long host;
    int device;
  } me = {gethostid(), device}, *all = NULL;
  int n = ts_comm_size(c);
  all = malloc(sizeof *all * (size_t)n);
  if (!all)
    return ts_error(TS_ERR_NOMEM, "out of memory");
  ts_status st = ts_comm_allgather(c, &me, sizeof me, all);
  *ok = st == TS_OK;
  for (int a = 0; a < n && *ok; a++) {
    *ok = all[a].device >= 0;
    for (int b = a + 1; b < n && *ok; b++)
      *ok = !(all[a].host == all[b].host && all[a].device == all[b].device);
  }
  free(all);
  return st;
}

ts_status ts_transport_open(const ts_comm *c, int device, ts_transport_kind want,
                            const ts_halo_transport **out, ts_transport_kind *chosen) {
  if (T.open && T.comm == c && T.device == device &&
      (want == TS_TRANSPORT_AUTO || want == T.kind)) {
    *out = &T.vtable;
    *chosen = T.kind;
    return TS_OK;
  }
  ts_transport_close();
  int distinct = 0;
  TS_CALL(one_gpu_per_rank(c, device, &distinct));
  ts_transport_kind kind = want;
  if (want == TS_TRANSPORT_AUTO)
    kind = TESSERA_HAVE_NCCL && distinct     ? TS_TRANSPORT_NCCL
           : mpi_cuda_aware() && device >= 0 ? TS_TRANSPORT_CUDA_MPI
                                             : TS_TRANSPORT_HOST;
  if (kind == TS_TRANSPORT_NCCL && !TESSERA_HAVE_NCCL)
    return ts_error(TS_ERR_INPUT, "transport nccl: this build has no NCCL");
  if (kind == TS_TRANSPORT_NCCL && !distinct)
    return ts_error(TS_ERR_INPUT, "transport nccl needs one GPU of its own per rank (devices = one "
                                  "GPU per rank, no two ranks of a node on the same GPU)");
  if (kind == TS_TRANSPORT_CUDA_MPI && !mpi_cuda_aware())
    return ts_error(TS_ERR_INPUT, "transport cuda-mpi: the MPI library (%s) is not CUDA-aware",
                    ts_comm_library());
  if (device < 0)
    cudaGetDevice(&device);
  T.device = device;
  T.kind = kind;
  T.comm = c;
  cudaSetDevice(device);
  cudaError_t e = cudaStreamCreateWithFlags(&T.stream, cudaStreamNonBlocking);
  if (e != cudaSuccess)
    return cuda_fail(e, "stream creation");
#if TESSERA_HAVE_NCCL
  if (kind == TS_TRANSPORT_NCCL) {
    ncclUniqueId id, *ids = malloc(sizeof id * (size_t)ts_comm_size(c));
    memset(&id, 0, sizeof id);
    if (!ids)
      return ts_error(TS_ERR_NOMEM, "out of memory");
    if (ts_comm_rank(c) == 0)
      ncclGetUniqueId(&id);
    ts_status st = ts_comm_allgather(c, &id, sizeof id, ids);
    ncclResult_t r = ncclSuccess;
    if (st == TS_OK)
      r = ncclCommInitRank(&T.nccl, ts_comm_size(c), ids[0], ts_comm_rank(c));
    free(ids);
    TS_CALL(st);
    if (r != ncclSuccess)
      return ts_error(TS_ERR_INTERNAL, "transport nccl: initialisation failed: %s",
                      ncclGetErrorString(r));
  }
#endif
  T.vtable =
      (ts_halo_transport){kind_names[kind], t_alloc, t_release, t_move, t_post, t_wait, t_done};
  T.open = 1;
  *out = &T.vtable;
  *chosen = kind;
  return TS_OK;
}

ts_status ts_transport_max(void *device_buf, int count, int bytes, void *stream) {
#if TESSERA_HAVE_NCCL
  if (T.open && T.kind == TS_TRANSPORT_NCCL) {
    ncclResult_t r =
        ncclAllReduce(device_buf, device_buf, (size_t)count, bytes == 8 ? ncclUint64 : ncclUint32,
                      ncclMax, T.nccl, (cudaStream_t)stream);
    return r == ncclSuccess ? TS_OK
                            : ts_error(TS_ERR_INTERNAL, "transport nccl: all-reduce failed: %s",
                                       ncclGetErrorString(r));
  }
#endif
  (void)device_buf, (void)count, (void)bytes, (void)stream;
  return ts_error(TS_ERR_INTERNAL, "transport: a device all-reduce needs the nccl transport");
}

void *ts_transport_stream(void) { return T.open ? (void *)T.stream : NULL; }

void ts_transport_close(void) {
  if (!T.open)
    return;
  cudaSetDevice(T.device);
  cudaStreamSynchronize(T.stream);
#if TESSERA_HAVE_NCCL
  if (T.kind == TS_TRANSPORT_NCCL)
    ncclCommDestroy(T.nccl);
#endif
  for (int k = 0; k < T.nbuffers; k++) {
    cudaFree(T.buffers[k].dev);
    cudaFreeHost(T.buffers[k].host);
  }
  free(T.buffers);
  free(T.requests);
  cudaStreamDestroy(T.stream);
  memset(&T, 0, sizeof T);
}

#else /* no CUDA or no MPI: there is no GPU memory to move between ranks */

ts_status ts_transport_open(const ts_comm *c, int device, ts_transport_kind want,
                            const ts_halo_transport **out, ts_transport_kind *chosen) {
  (void)c, (void)device, (void)want;
  *out = NULL;
  *chosen = TS_TRANSPORT_HOST;
  return ts_error(TS_ERR_INPUT, "GPU transports need a build with CUDA and MPI");
}

ts_status ts_transport_max(void *device_buf, int count, int bytes, void *stream) {
  (void)device_buf, (void)count, (void)bytes, (void)stream;
  return ts_error(TS_ERR_INTERNAL, "transport: a device all-reduce needs the nccl transport");
}

void *ts_transport_stream(void) { return NULL; }

void ts_transport_close(void) {}

#endif
