/* The asynchronous task runtime. A module describes its work as tasks over patches: each task
 * names the data items it reads and writes (any address that stands for one, such as a field of
 * a patch), whether it runs on the CPU, queues work on a GPU or moves a message between ranks,
 * and its function. The runtime derives the dependencies from those accesses in the order the
 * tasks are given (a reader waits for the last writer; a writer for the last writer and the
 * readers since) and runs the graph out of order: CPU tasks as OpenMP tasks with `depend`
 * clauses, GPU tasks as OpenMP tasks that queue their work on one of a pool of streams per device
 * and wait for an event recorded after it (only that task's thread waits, never the device), so
 * CPU tasks run on the other threads while the GPUs work.
 *
 * Messages: a send task reads its items and posts an MPI send of its buffer as soon as their
 * writers are done; a receive task writes its items and posts the receive as soon as their
 * earlier readers are done. Neither waits: the tasks that next read a received item (and its
 * next writer) wait for the message to arrive, and the next writer of a sent item waits for the
 * send to complete, each on its own thread. A task that waits for a message first waits for
 * every send given before it to be posted, so ranks that give their messages in the same order
 * cannot deadlock, whatever the number of threads.
 *
 * Every task is timed; the times go to a Chrome trace event file (Perfetto, chrome://tracing)
 * when asked, one process per rank. */
#ifndef TESSERA_RUNTIME_H
#define TESSERA_RUNTIME_H

#include <stddef.h>

#include "tessera/error.h"

#define TS_TASK_MAX_ACCESS 64
#define TS_RUNTIME_STREAMS 4 /* streams per device in the pool */

typedef enum ts_task_kind {
  TS_TASK_CPU,  /* runs on a host thread */
  TS_TASK_GPU,  /* queues kernels on a stream of its device */
  TS_TASK_COPY, /* queues copies between host and device on a stream (traced apart) */
  TS_TASK_SEND, /* posts the send of `bytes` bytes at `buffer` to rank `peer` (reads in[]) */
  TS_TASK_RECV, /* posts their receive from rank `peer` (writes out[]) */
} ts_task_kind;

typedef struct ts_task {
  const char *name; /* for the trace, e.g. "trace" */
  int patch;        /* -1 for none */
  int step;         /* the time step it belongs to (trace) */
  ts_task_kind kind;
  int device; /* GPU and copy tasks */
  int nin, nout;
  const void *in[TS_TASK_MAX_ACCESS], *out[TS_TASK_MAX_ACCESS];
  /* CPU tasks: does the work (stream NULL); GPU and copy tasks: queues it on the stream (a
   * cudaStream_t) without waiting. */
  void (*run)(void *arg, void *stream);
  void *arg;
  /* send and receive tasks: the other rank, the message's tag and its bytes (no run) */
  int peer, tag;
  void *buffer;
  size_t bytes;
} ts_task;

typedef struct ts_runtime ts_runtime;

/* trace_path: the Chrome trace file written by ts_runtime_destroy, or NULL. Collective over the
 * ranks (they take one time origin, so their traces line up). */
ts_status ts_runtime_create(ts_runtime **out, const char *trace_path);
/* Runs n tasks (in the given order's dependencies) and returns when all are done. */
ts_status ts_runtime_run(ts_runtime *rt, const ts_task *tasks, int n);
/* Writes the trace (when asked: rank 0 writes every rank's tasks) and frees the runtime.
 * Collective over the ranks. */
ts_status ts_runtime_destroy(ts_runtime *rt);
/* Seconds a device had work on any of its streams (the union of its tasks' intervals) and the
 * whole span of the runs, over all runs: the GPU's idle fraction is 1 - busy / span. */
void ts_runtime_gpu_busy(const ts_runtime *rt, int device, double *busy, double *span);

#endif
