/* The task runtime (runtime.h): OpenMP tasks with `depend` clauses on the data items, GPU tasks
 * waiting on an event after their stream's work, a stream pool per device, MPI messages posted
 * by tasks and waited for by the tasks that need them, and the trace. (With OpenMP `detach`,
 * fulfilled by a CUDA host callback, no thread would wait; GCC 12's libgomp hung in such runs on
 * an H100, so a GPU task's thread waits for its event.) */
#define _POSIX_C_SOURCE 200809L
#include "runtime/runtime.h"

#include <omp.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tessera/comm.h"
#include "tessera/io.h"
#if TESSERA_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

enum { MAX_DEVICES = 64, NAME_CHARS = 24, HOST_CHARS = 64 };

/* Seconds on the host's monotonic clock, which every process of a host shares. */
static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* One task as it ran: where (a host thread, a device's stream, or a message lane) and when
 * (seconds since the runtime's start, the same instant on every rank). */
typedef struct run_record {
  char name[NAME_CHARS];
  int rank, patch, step, kind, lane, peer; /* lane: host thread, or device * STREAMS + stream */
  double start, end;
} run_record;

struct ts_runtime {
  char *trace_path;
  double t0;
  pthread_mutex_t lock;
  run_record *records;
  int nrecords, cap;
  double span;
#if TESSERA_HAVE_CUDA
  cudaStream_t streams[MAX_DEVICES][TS_RUNTIME_STREAMS];
  int next_stream[MAX_DEVICES];
#endif
};

static void add_record(ts_runtime *rt, const ts_task *t, int lane, double start, double end) {
  run_record r = {.rank = ts_comm_rank(ts_comm_world()),
                  .patch = t->patch,
                  .step = t->step,
                  .kind = t->kind,
                  .lane = lane,
                  .peer = t->peer,
                  .start = start - rt->t0,
                  .end = end - rt->t0};
  snprintf(r.name, sizeof r.name, "%s", t->name ? t->name : "task");
  pthread_mutex_lock(&rt->lock);
  if (rt->nrecords == rt->cap) {
    int cap = rt->cap ? 2 * rt->cap : 1024;
    run_record *grown = realloc(rt->records, sizeof *grown * (size_t)cap);
    if (grown)
      rt->records = grown, rt->cap = cap;
  }
  if (rt->nrecords < rt->cap)
    rt->records[rt->nrecords++] = r;
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
  /* The trace's time origin: rank 0's clock, taken after a barrier. Ranks on rank 0's host share
   * its clock and take its origin as it is; the others take theirs as they leave the barrier. */
  const ts_comm *world = ts_comm_world();
  int ranks = ts_comm_size(world);
  ts_comm_agree(world, TS_OK);
  struct origin {
    double t0;
    char host[HOST_CHARS];
  } mine = {now(), {0}}, *all = calloc((size_t)ranks, sizeof *all);
  gethostname(mine.host, sizeof mine.host - 1);
  rt->t0 = mine.t0;
  if (all && ts_comm_allgather(world, &mine, sizeof mine, all) == TS_OK &&
      strcmp(all[0].host, mine.host) == 0)
    rt->t0 = all[0].t0;
  free(all);
  *out = rt;
  return TS_OK;
}

/* ------------------------------------------------------------------ the graph of one run */

/* What the runtime adds to the tasks it is given: each task's dependency lists (its items, plus
 * the "posted" marker of the last send before it when it waits for a message, and a send's own
 * marker), the messages it waits for before it runs, and the messages' state. */
typedef struct plan {
  const ts_task *tasks;
  int n;
  const void **items; /* every task's in list then out list, at in0[k] and out0[k] */
  int *in0, *nin, *out0, *nout;
  int *waits, *wait0, *nwait; /* the message tasks task k waits for: waits[wait0[k] ...] */
  char *posted;               /* a send's marker item */
  void **requests;            /* in flight (NULL when complete) */
  int *done;                  /* the message was seen complete */
  double *post_time;
  int *flying, nflying; /* the messages posted and not yet seen complete */
  pthread_mutex_t lock; /* over requests, done and flying */
  ts_status failed;     /* the first message that failed */
  char why[1024];       /* its message (messages are per thread) */
} plan;

/* An open-addressing table from a data item to the messages pending on it: the receive that last
 * wrote it (-1: none) and the sends that read it since its last writer (a list in `sends`). */
typedef struct pending {
  const void *item;
  int recv, sends;
} pending;

typedef struct send_node {
  int task, next;
} send_node;

static pending *find_item(pending *table, size_t mask, const void *item) {
  size_t h = ((uintptr_t)item >> 3) * 0x9e3779b97f4a7c15ull & mask;
  while (table[h].item && table[h].item != item)
    h = (h + 1) & mask;
  if (!table[h].item)
    table[h] = (pending){item, -1, -1};
  return &table[h];
}

static int is_message(const ts_task *t) {
  return t->kind == TS_TASK_SEND || t->kind == TS_TASK_RECV;
}

static void plan_free(plan *p) {
  free(p->items), free(p->in0), free(p->nin), free(p->out0), free(p->nout);
  free(p->waits), free(p->wait0), free(p->nwait), free(p->posted), free(p->requests);
  free(p->done), free(p->post_time), free(p->flying);
  pthread_mutex_destroy(&p->lock);
}

/* Adds x to a growing int array. */
static int push(int **a, int *n, int *cap, int x) {
  if (*n == *cap) {
    int c = *cap ? 2 * *cap : 256;
    int *g = realloc(*a, sizeof *g * (size_t)c);
    if (!g)
      return 0;
    *a = g, *cap = c;
  }
  (*a)[(*n)++] = x;
  return 1;
}

static ts_status plan_build(plan *p, const ts_task *tasks, int n) {
  memset(p, 0, sizeof *p);
  pthread_mutex_init(&p->lock, NULL);
  p->tasks = tasks, p->n = n;
  size_t accesses = 0;
  for (int k = 0; k < n; k++)
    accesses += (size_t)tasks[k].nin + tasks[k].nout + 2;
  size_t cap = 16;
  while (cap < 2 * accesses)
    cap *= 2;
  pending *table = calloc(cap, sizeof *table);
  send_node *nodes = malloc(sizeof *nodes * (accesses ? accesses : 1));
  p->items = malloc(sizeof *p->items * (accesses ? accesses : 1));
  p->in0 = malloc(sizeof(int) * (size_t)(n + 1)), p->nin = malloc(sizeof(int) * (size_t)(n + 1));
  p->out0 = malloc(sizeof(int) * (size_t)(n + 1)), p->nout = malloc(sizeof(int) * (size_t)(n + 1));
  p->wait0 = malloc(sizeof(int) * (size_t)(n + 1));
  p->nwait = malloc(sizeof(int) * (size_t)(n + 1));
  p->posted = calloc((size_t)n + 1, 1);
  p->requests = calloc((size_t)n + 1, sizeof *p->requests);
  p->done = calloc((size_t)n + 1, sizeof *p->done);
  p->post_time = calloc((size_t)n + 1, sizeof *p->post_time);
  p->flying = calloc((size_t)n + 1, sizeof *p->flying);
  int ok = table && nodes && p->items && p->in0 && p->nin && p->out0 && p->nout && p->wait0 &&
           p->nwait && p->posted && p->requests && p->done && p->post_time && p->flying;
  int nwaits = 0, wcap = 0, nnodes = 0, last_send = -1;
  size_t used = 0;
  for (int k = 0; ok && k < n; k++) {
    const ts_task *t = &tasks[k];
    p->wait0[k] = nwaits;
    for (int a = 0; ok && a < t->nin + t->nout; a++) { /* a received item: wait for it */
      pending *e = find_item(table, cap - 1, a < t->nin ? t->in[a] : t->out[a - t->nin]);
      if (e->recv >= 0)
        ok = push(&p->waits, &nwaits, &wcap, e->recv);
    }
    for (int o = 0; ok && o < t->nout; o++) { /* a writer: after the sends of the old value */
      pending *e = find_item(table, cap - 1, t->out[o]);
      for (int s = e->sends; ok && s >= 0; s = nodes[s].next)
        ok = push(&p->waits, &nwaits, &wcap, nodes[s].task);
      e->sends = -1;
      e->recv = t->kind == TS_TASK_RECV ? k : -1;
    }
    for (int i = 0; ok && t->kind == TS_TASK_SEND && i < t->nin; i++) {
      pending *e = find_item(table, cap - 1, t->in[i]);
      nodes[nnodes] = (send_node){k, e->sends};
      e->sends = nnodes++;
    }
    p->nwait[k] = nwaits - p->wait0[k];
    /* dependencies: the task's items, and the sends' markers */
    int after_sends = last_send >= 0 && (p->nwait[k] > 0 || t->kind == TS_TASK_SEND);
    p->in0[k] = (int)used;
    for (int i = 0; i < t->nin; i++)
      p->items[used++] = t->in[i];
    if (after_sends)
      p->items[used++] = &p->posted[last_send];
    p->nin[k] = (int)used - p->in0[k];
    p->out0[k] = (int)used;
    for (int o = 0; o < t->nout; o++)
      p->items[used++] = t->out[o];
    if (t->kind == TS_TASK_SEND) {
      p->items[used++] = &p->posted[k];
      last_send = k;
    }
    p->nout[k] = (int)used - p->out0[k];
  }
  free(table);
  free(nodes);
  if (!ok) {
    plan_free(p);
    return ts_error(TS_ERR_NOMEM, "runtime: out of memory for %d tasks", n);
  }
  return TS_OK;
}

/* Records a complete message in the trace (once). Called with p->lock held. */
static void message_done(ts_runtime *rt, plan *p, int k, int result) {
  p->done[k] = 1;
  for (int f = 0; f < p->nflying; f++)
    if (p->flying[f] == k)
      p->flying[f] = p->flying[--p->nflying];
  if (result < 0 && p->failed == TS_OK) {
    p->failed = TS_ERR_INTERNAL;
    snprintf(p->why, sizeof p->why, "%s", ts_error_message());
  }
  const ts_task *t = &p->tasks[k];
  int lane =
      2 * (t->peer * 4096 + (t->patch >= 0 ? t->patch % 4096 : 0)) + (t->kind == TS_TASK_RECV);
  add_record(rt, t, lane, p->post_time[k], now());
}

/* Tests every message in flight: MPI moves large messages only inside its calls, so the threads
 * that wait (for a message or a GPU) call this while they do, and each message's end is seen
 * when it comes. */
static void progress(ts_runtime *rt, plan *p) {
  pthread_mutex_lock(&p->lock);
  for (int f = p->nflying - 1; f >= 0; f--) {
    int k = p->flying[f], result = ts_comm_test(&p->requests[k]);
    if (result != 0)
      message_done(rt, p, k, result);
  }
  pthread_mutex_unlock(&p->lock);
}

/* A short pause between polls of a waiting thread. */
static void pause_briefly(void) {
  struct timespec pause = {0, 20000};
  nanosleep(&pause, NULL);
}

/* Waits (this thread only) until message k is complete. */
static void wait_message(ts_runtime *rt, plan *p, int k) {
  for (;;) {
    progress(rt, p);
    pthread_mutex_lock(&p->lock);
    int done = p->done[k];
    pthread_mutex_unlock(&p->lock);
    if (done)
      return;
    pause_briefly();
  }
}

static void post_message(ts_runtime *rt, plan *p, int k) {
  const ts_task *t = &p->tasks[k];
  const ts_comm *world = ts_comm_world();
  void *request = NULL;
  p->post_time[k] = now();
  ts_status st = t->kind == TS_TASK_SEND
                     ? ts_comm_isend(world, t->buffer, t->bytes, t->peer, t->tag, &request)
                     : ts_comm_irecv(world, t->buffer, t->bytes, t->peer, t->tag, &request);
  pthread_mutex_lock(&p->lock);
  p->requests[k] = request;
  p->flying[p->nflying++] = k;
  if (st != TS_OK) {
    if (p->failed == TS_OK) {
      p->failed = st;
      snprintf(p->why, sizeof p->why, "%s", ts_error_message());
    }
    message_done(rt, p, k, 1); /* nothing to wait for */
  }
  pthread_mutex_unlock(&p->lock);
}

/* ------------------------------------------------------------------ running tasks */

#if TESSERA_HAVE_CUDA
/* What the host callbacks timing a GPU task need. */
typedef struct gpu_run {
  ts_runtime *rt;
  const ts_task *task;
  int lane;
  double start;
} gpu_run;

static void CUDART_CB gpu_started(void *arg) { ((gpu_run *)arg)->start = now(); }

static void CUDART_CB gpu_finished(void *arg) {
  gpu_run *g = arg;
  add_record(g->rt, g->task, g->lane, g->start, now());
}

/* Queues a GPU or copy task on the next stream of its device's pool, between two host callbacks
 * that time it, and waits for the event recorded after it: the OpenMP task completes when its
 * stream has done its work (its successors start then), and only its own thread waits. */
static void run_on_gpu(ts_runtime *rt, plan *p, const ts_task *t) {
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
  if (ts_comm_size(ts_comm_world()) == 1)
    cudaEventSynchronize(done);
  else /* with messages between ranks, moves them along while it waits */
    while (cudaEventQuery(done) == cudaErrorNotReady) {
      progress(rt, p);
      pause_briefly();
    }
  cudaEventDestroy(done);
}
#endif

/* Task k: waits for the messages it needs, then runs, queues or posts. */
static void run_task(ts_runtime *rt, plan *p, int k) {
  const ts_task *t = &p->tasks[k];
  for (int w = 0; w < p->nwait[k]; w++)
    wait_message(rt, p, p->waits[p->wait0[k] + w]);
  if (is_message(t)) {
    post_message(rt, p, k);
    return;
  }
#if TESSERA_HAVE_CUDA
  if (t->kind != TS_TASK_CPU) {
    run_on_gpu(rt, p, t);
    return;
  }
#endif
  double start = now();
  t->run(t->arg, NULL);
  add_record(rt, t, omp_get_thread_num(), start, now());
}

ts_status ts_runtime_run(ts_runtime *rt, const ts_task *tasks, int n) {
  for (int k = 0; k < n; k++) {
    const ts_task *t = &tasks[k];
    if ((t->kind == TS_TASK_GPU || t->kind == TS_TASK_COPY) &&
        (!TESSERA_HAVE_CUDA || t->device < 0 || t->device >= MAX_DEVICES))
      return ts_error(TS_ERR_INTERNAL, "runtime: task %s needs a GPU (device %d)", t->name,
                      t->device);
    if (is_message(t) && (t->peer < 0 || t->peer >= ts_comm_size(ts_comm_world()) ||
                          t->peer == ts_comm_rank(ts_comm_world())))
      return ts_error(TS_ERR_INTERNAL, "runtime: message %s to or from rank %d", t->name, t->peer);
    if (t->nin > TS_TASK_MAX_ACCESS || t->nout > TS_TASK_MAX_ACCESS)
      return ts_error(TS_ERR_INTERNAL, "runtime: task %s accesses more than %d items", t->name,
                      TS_TASK_MAX_ACCESS);
  }
  plan p;
  TS_CALL(plan_build(&p, tasks, n));
  double start = now();
  /* (the task pragmas are kept as written: clang-format would break their clauses apart) */
  // clang-format off
#pragma omp parallel
#pragma omp single
  for (int k = 0; k < n; k++) {
    char *const *in = (char *const *)(p.items + p.in0[k]);
    char *const *out = (char *const *)(p.items + p.out0[k]);
    int nin = p.nin[k], nout = p.nout[k];
    (void)in, (void)out, (void)nin, (void)nout; /* used by the iterators only */
#pragma omp task depend(iterator(i = 0 : nin), in : in[i][0]) \
                 depend(iterator(o = 0 : nout), inout : out[o][0]) firstprivate(k) shared(p)
    run_task(rt, &p, k);
  }
  // clang-format on
  for (int k = 0; k < n; k++) /* messages nobody waited for */
    if (is_message(&tasks[k]))
      wait_message(rt, &p, k);
  rt->span += now() - start;
  ts_status st = p.failed;
  char why[sizeof p.why];
  memcpy(why, p.why, sizeof why);
  plan_free(&p);
  return st == TS_OK ? TS_OK : ts_error(st, "runtime: a message failed: %s", why);
}

typedef struct interval {
  double start, end;
} interval;

static int by_start(const void *a, const void *b) {
  double x = ((const interval *)a)->start, y = ((const interval *)b)->start;
  return (x > y) - (x < y);
}

void ts_runtime_gpu_busy(const ts_runtime *rt, int device, double *busy, double *span) {
  *busy = 0, *span = rt->span;
  interval *on = malloc(sizeof *on * (size_t)(rt->nrecords + 1));
  int n = 0;
  for (int k = 0; on && k < rt->nrecords; k++) {
    const run_record *r = &rt->records[k];
    if ((r->kind == TS_TASK_GPU || r->kind == TS_TASK_COPY) &&
        r->lane / TS_RUNTIME_STREAMS == device)
      on[n++] = (interval){r->start, r->end};
  }
  if (n > 0) { /* the union of the streams' busy intervals */
    qsort(on, (size_t)n, sizeof *on, by_start);
    double start = on[0].start, end = on[0].end;
    for (int k = 1; k < n; k++) {
      if (on[k].start > end) {
        *busy += end - start;
        start = on[k].start;
      }
      end = on[k].end > end ? on[k].end : end;
    }
    *busy += end - start;
  }
  free(on);
}

/* ------------------------------------------------------------------ the trace */

/* The thread id of a record's lane in the trace, and the lane's name. */
static int lane_id(const run_record *r, char *name, size_t size) {
  static const char *const dirs[] = {"send to", "receive from"};
  switch (r->kind) {
  case TS_TASK_CPU: snprintf(name, size, "CPU thread %d", r->lane); return r->lane;
  case TS_TASK_GPU:
  case TS_TASK_COPY:
    snprintf(name, size, "GPU %d stream %d", r->lane / TS_RUNTIME_STREAMS,
             r->lane % TS_RUNTIME_STREAMS);
    return 1000 + r->lane;
  default:
    snprintf(name, size, "MPI %s rank %d, patch %d", dirs[r->kind == TS_TASK_RECV], r->peer,
             r->patch);
    return 2000 + r->lane;
  }
}

/* The trace: Chrome trace event format, one complete ("X") event per task, times in
 * microseconds, the rank as the process and a lane (host thread, device stream or message lane)
 * as the thread, with metadata events naming both; one event per line. */
static ts_status write_trace(const char *path, const run_record *records, int n, int ranks) {
  char tmp[4200];
  FILE *f = ts_open_temp(path, tmp, sizeof tmp);
  if (!f)
    return ts_error(TS_ERR_IO, "%s: cannot write the trace", path);
  fprintf(f, "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n");
  for (int r = 0; r < ranks; r++)
    fprintf(f,
            "%s{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": %d, \"args\": {\"name\": "
            "\"rank %d\"}}",
            r ? ",\n" : "", r, r);
  int *named = calloc((size_t)n + 1, sizeof *named), nnamed = 0; /* (rank, tid) pairs named */
  int *named_rank = calloc((size_t)n + 1, sizeof *named_rank);
  for (int k = 0; k < n; k++) {
    const run_record *r = &records[k];
    char lane[96];
    int tid = lane_id(r, lane, sizeof lane), seen = 0;
    for (int q = 0; named && named_rank && q < nnamed && !seen; q++)
      seen = named[q] == tid && named_rank[q] == r->rank;
    if (!seen && named && named_rank) {
      named[nnamed] = tid, named_rank[nnamed++] = r->rank;
      fprintf(f,
              ",\n{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": %d, \"tid\": %d, "
              "\"args\": {\"name\": \"%s\"}}",
              r->rank, tid, lane);
    }
    static const char *const cats[] = {"cpu", "gpu", "copy", "mpi", "mpi"};
    fprintf(f,
            ",\n{\"name\": \"%s\", \"cat\": \"%s\", \"ph\": \"X\", \"ts\": %.3f, \"dur\": %.3f, "
            "\"pid\": %d, \"tid\": %d, \"args\": {\"patch\": %d, \"step\": %d",
            r->name, cats[r->kind], 1e6 * r->start, 1e6 * (r->end - r->start), r->rank, tid,
            r->patch, r->step);
    if (r->kind == TS_TASK_SEND || r->kind == TS_TASK_RECV)
      fprintf(f, ", \"peer\": %d", r->peer);
    fprintf(f, "}}");
  }
  free(named), free(named_rank);
  fprintf(f, "\n]}\n");
  return ts_commit_temp(f, tmp, path);
}

/* Every rank's records on rank 0 (collective), then the file. */
static ts_status gather_and_write(const ts_runtime *rt) {
  const ts_comm *world = ts_comm_world();
  int ranks = ts_comm_size(world), rank = ts_comm_rank(world);
  int64_t mine = rt->nrecords, *counts = calloc((size_t)ranks, sizeof *counts);
  size_t *bytes = calloc((size_t)ranks, sizeof *bytes);
  ts_status st = counts && bytes ? TS_OK : ts_error(TS_ERR_NOMEM, "runtime: out of memory");
  if (st == TS_OK)
    st = ts_comm_allgather(world, &mine, sizeof mine, counts);
  int64_t total = 0;
  for (int r = 0; st == TS_OK && r < ranks; r++)
    total += counts[r], bytes[r] = sizeof(run_record) * (size_t)counts[r];
  run_record *all = rank == 0 && st == TS_OK ? malloc(sizeof *all * (size_t)(total + 1)) : NULL;
  if (rank == 0 && st == TS_OK && !all)
    st = ts_error(TS_ERR_NOMEM, "runtime: out of memory for the trace");
  st = ts_comm_agree(world, st);
  if (st == TS_OK)
    st = ts_comm_gather(world, rt->records ? (const void *)rt->records : &mine, bytes, all, 0);
  if (st == TS_OK && rank == 0)
    st = write_trace(rt->trace_path, all, (int)total, ranks);
  free(all), free(counts), free(bytes);
  return ts_comm_agree(world, st);
}

ts_status ts_runtime_destroy(ts_runtime *rt) {
  if (!rt)
    return TS_OK;
  ts_status st = rt->trace_path ? gather_and_write(rt) : TS_OK;
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
