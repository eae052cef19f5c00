/* The task runtime (runtime.h): OpenMP tasks with `depend` clauses on the data items, GPU tasks
 * waiting on an event after their stream's work, a stream pool per device, and the trace. (With
 * OpenMP `detach`, fulfilled by a CUDA host callback, no thread would wait; GCC 12's libgomp hung
 * in such runs on an H100, so a GPU task's thread waits for its event.) */
#define _POSIX_C_SOURCE 200809L
#include "runtime/runtime.h"

#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tessera/comm.h"
#include "tessera/io.h"
#if TESSERA_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

enum { MAX_DEVICES = 64 };

/* One task as it ran: where (a host thread, or a device's stream) and when (seconds). */
typedef struct run_record {
  const char *name;
  int patch, step, kind, lane; /* lane: host thread, or device * TS_RUNTIME_STREAMS + stream */
  double start, end;
} run_record;

struct ts_runtime {
  char *trace_path;
  double t0;
  pthread_mutex_t lock;
  run_record *records;
  int nrecords, cap;
  double busy[MAX_DEVICES], span;
#if TESSERA_HAVE_CUDA
  cudaStream_t streams[MAX_DEVICES][TS_RUNTIME_STREAMS];
  int next_stream[MAX_DEVICES];
#endif
};

static void add_record(ts_runtime *rt, run_record r) {
  pthread_mutex_lock(&rt->lock);
  if (rt->nrecords == rt->cap) {
    int cap = rt->cap ? 2 * rt->cap : 1024;
    run_record *grown = realloc(rt->records, sizeof *grown * (size_t)cap);
    if (grown)
      rt->records = grown, rt->cap = cap;
  }
  if (rt->nrecords < rt->cap)
    rt->records[rt->nrecords++] = r;
  if (r.kind != TS_TASK_CPU)
    rt->busy[r.lane / TS_RUNTIME_STREAMS] += r.end - r.start;
  pthread_mutex_unlock(&rt->lock);
}

ts_status ts_runtime_create(ts_runtime **out, const char *trace_path) {
  *out = NULL;
  ts_runtime *rt = calloc(1, sizeof *rt);
  if (!rt)
    return ts_error(TS_ERR_NOMEM, "runtime: out of memory");
  if (trace_path && !(rt->trace_path = strdup(trace_path))) {
    free(rt);
    return ts_error(TS_ERR_NOMEM, "runtime: out of memory");
  }
  pthread_mutex_init(&rt->lock, NULL);
  rt->t0 = omp_get_wtime();
  *out = rt;
  return TS_OK;
}

#if TESSERA_HAVE_CUDA
/* What the host callbacks timing a GPU task need. */
typedef struct gpu_run {
  ts_runtime *rt;
  const ts_task *task;
  int lane;
  double start;
} gpu_run;

static void CUDART_CB gpu_started(void *arg) { ((gpu_run *)arg)->start = omp_get_wtime(); }

static void CUDART_CB gpu_finished(void *arg) {
  gpu_run *g = arg;
  add_record(g->rt, (run_record){g->task->name, g->task->patch, g->task->step, g->task->kind,
                                 g->lane, g->start - g->rt->t0, omp_get_wtime() - g->rt->t0});
}

/* Queues a GPU or copy task on the next stream of its device's pool, between two host callbacks
 * that time it, and waits for the event recorded after it: the OpenMP task completes when its
 * stream has done its work (its successors start then), and only its own thread waits. */
static void run_on_gpu(ts_runtime *rt, const ts_task *t) {
  int d = t->device, s;
  pthread_mutex_lock(&rt->lock);
  s = rt->next_stream[d]++ % TS_RUNTIME_STREAMS;
  if (!rt->streams[d][s]) {
    cudaSetDevice(d);
    cudaStreamCreateWithFlags(&rt->streams[d][s], cudaStreamNonBlocking);
  }
  pthread_mutex_unlock(&rt->lock);
  cudaSetDevice(d);
  cudaStream_t stream = rt->streams[d][s];
  gpu_run g = {rt, t, d * TS_RUNTIME_STREAMS + s, 0};
  cudaEvent_t done;
  cudaEventCreateWithFlags(&done, cudaEventDisableTiming | cudaEventBlockingSync);
  cudaLaunchHostFunc(stream, gpu_started, &g);
  t->run(t->arg, stream);
  cudaLaunchHostFunc(stream, gpu_finished, &g);
  cudaEventRecord(done, stream);
  cudaEventSynchronize(done);
  cudaEventDestroy(done);
}
#endif

static void run_on_cpu(ts_runtime *rt, const ts_task *t) {
  double start = omp_get_wtime();
  t->run(t->arg, NULL);
  add_record(rt, (run_record){t->name, t->patch, t->step, t->kind, omp_get_thread_num(),
                              start - rt->t0, omp_get_wtime() - rt->t0});
}

ts_status ts_runtime_run(ts_runtime *rt, const ts_task *tasks, int n) {
  for (int k = 0; k < n; k++)
    if (tasks[k].kind != TS_TASK_CPU &&
        (!TESSERA_HAVE_CUDA || tasks[k].device < 0 || tasks[k].device >= MAX_DEVICES))
      return ts_error(TS_ERR_INTERNAL, "runtime: task %s needs a GPU (device %d)", tasks[k].name,
                      tasks[k].device);
  double start = omp_get_wtime();
  /* (the task pragmas are kept as written: clang-format would break their clauses apart) */
  // clang-format off
#pragma omp parallel
#pragma omp single
  for (int k = 0; k < n; k++) {
    const ts_task *t = &tasks[k];
    char *const *in = (char *const *)t->in, *const *out = (char *const *)t->out;
    int nin = t->nin, nout = t->nout;
    (void)in, (void)out, (void)nin, (void)nout; /* used by the iterators only */
    if (t->kind == TS_TASK_CPU) {
#pragma omp task depend(iterator(i = 0 : nin), in : in[i][0]) \
                 depend(iterator(o = 0 : nout), inout : out[o][0]) firstprivate(t)
      run_on_cpu(rt, t);
    } else {
#if TESSERA_HAVE_CUDA
#pragma omp task depend(iterator(i = 0 : nin), in : in[i][0]) \
                 depend(iterator(o = 0 : nout), inout : out[o][0]) firstprivate(t)
      run_on_gpu(rt, t);
#endif
    }
  }
  // clang-format on
  rt->span += omp_get_wtime() - start;
  return TS_OK;
}

void ts_runtime_gpu_busy(const ts_runtime *rt, int device, double *busy, double *span) {
  *busy = device >= 0 && device < MAX_DEVICES ? rt->busy[device] : 0;
  *span = rt->span;
}

/* The trace: Chrome trace event format, one complete ("X") event per task, times in
 * microseconds, the rank as the process and a lane (host thread or device stream) as the thread,
 * with metadata events naming both; one event per line. */
static ts_status write_trace(const ts_runtime *rt) {
  char tmp[4200];
  FILE *f = ts_open_temp(rt->trace_path, tmp, sizeof tmp);
  if (!f)
    return ts_error(TS_ERR_IO, "%s: cannot write the trace", rt->trace_path);
  int rank = ts_comm_rank(ts_comm_world());
  fprintf(f, "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n");
  fprintf(f,
          "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": %d, \"args\": {\"name\": "
          "\"rank %d\"}}",
          rank, rank);
  int named[2 * MAX_DEVICES * TS_RUNTIME_STREAMS + 1024] = {0};
  for (int k = 0; k < rt->nrecords; k++) {
    const run_record *r = &rt->records[k];
    int gpu = r->kind != TS_TASK_CPU, tid = gpu ? 1000 + r->lane : r->lane;
    int slot = gpu ? 1024 + r->lane : r->lane;
    if (slot < (int)(sizeof named / sizeof named[0]) && !named[slot]) {
      named[slot] = 1;
      if (gpu)
        fprintf(f,
                ",\n{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": %d, \"tid\": %d, "
                "\"args\": {\"name\": \"GPU %d stream %d\"}}",
                rank, tid, r->lane / TS_RUNTIME_STREAMS, r->lane % TS_RUNTIME_STREAMS);
      else
        fprintf(f,
                ",\n{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": %d, \"tid\": %d, "
                "\"args\": {\"name\": \"CPU thread %d\"}}",
                rank, tid, r->lane);
    }
    static const char *const cats[] = {"cpu", "gpu", "copy"};
    fprintf(f,
            ",\n{\"name\": \"%s\", \"cat\": \"%s\", \"ph\": \"X\", \"ts\": %.3f, \"dur\": %.3f, "
            "\"pid\": %d, \"tid\": %d, \"args\": {\"patch\": %d, \"step\": %d}}",
            r->name, cats[r->kind], 1e6 * r->start, 1e6 * (r->end - r->start), rank, tid, r->patch,
            r->step);
  }
  fprintf(f, "\n]}\n");
  return ts_commit_temp(f, tmp, rt->trace_path);
}

ts_status ts_runtime_destroy(ts_runtime *rt) {
  if (!rt)
    return TS_OK;
  ts_status st = rt->trace_path ? write_trace(rt) : TS_OK;
#if TESSERA_HAVE_CUDA
  for (int d = 0; d < MAX_DEVICES; d++)
    for (int s = 0; s < TS_RUNTIME_STREAMS; s++)
      if (rt->streams[d][s]) {
        cudaSetDevice(d);
        cudaStreamDestroy(rt->streams[d][s]);
      }
#endif
  pthread_mutex_destroy(&rt->lock);
  free(rt->records);
  free(rt->trace_path);
  free(rt);
  return st;
}
