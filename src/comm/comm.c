/* The process communicator: MPI when launched by an MPI launcher and built with MPI, a single
 * rank otherwise; reductions, gathers, error agreement and the exact sum. */
#include "tessera/comm.h"

#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#if TESSERA_HAVE_MPI
#include <mpi.h>
#endif

struct ts_comm {
  int rank, size, mpi; /* mpi: MPI was started and this communicator uses it */
  int threads;         /* the thread support MPI provides (MPI_THREAD_*) */
};

static ts_comm world = {0, 1, 0, 0};
static const ts_comm self = {0, 1, 0, 0}; /* collectives over one process are local */

static int launched_by_mpi(void) {
  const char *vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS",
                        "SLURM_STEP_NUM_TASKS"};
  for (size_t k = 0; k < sizeof vars / sizeof vars[0]; k++)
    if (getenv(vars[k]))
      return 1;
  return 0;
}

ts_status ts_comm_init(int *argc, char ***argv) {
#if TESSERA_HAVE_MPI
  if (!launched_by_mpi())
    return TS_OK;
  int provided = 0;
  /* serialised: the task runtime's messages are posted and tested from any of its threads, one
   * call at a time (ts_comm_isend) */
  if (MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS)
    return ts_error(TS_ERR_INTERNAL, "MPI could not be started");
  world.threads = provided;
  MPI_Comm_rank(MPI_COMM_WORLD, &world.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world.size);
  world.mpi = 1;
#else
  (void)argc;
  (void)argv;
  if (launched_by_mpi() && getenv("OMPI_COMM_WORLD_SIZE") &&
      atoi(getenv("OMPI_COMM_WORLD_SIZE")) > 1)
    return ts_error(TS_ERR_INPUT,
                    "this tessera was built without MPI; rebuild with MPI to use mpirun");
#endif
  return TS_OK;
}

void ts_comm_finalize(void) {
#if TESSERA_HAVE_MPI
  if (world.mpi)
    MPI_Finalize();
#endif
}

const ts_comm *ts_comm_world(void) { return &world; }
const ts_comm *ts_comm_self(void) { return &self; }
int ts_comm_rank(const ts_comm *c) { return c->rank; }
int ts_comm_size(const ts_comm *c) { return c->size; }

int ts_comm_built_with_mpi(void) { return TESSERA_HAVE_MPI; }

const char *ts_comm_library(void) {
#if TESSERA_HAVE_MPI
  static char version[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(version, &len);
  char *nl = strchr(version, '\n');
  if (nl)
    *nl = 0;
  char *comma = strchr(version, ',');
  if (comma)
    *comma = 0;
  return version;
#else
  return "none";
#endif
}

#if TESSERA_HAVE_MPI
static ts_status mpi_check(int rc, const char *what) {
  if (rc == MPI_SUCCESS)
    return TS_OK;
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  return ts_error(TS_ERR_INTERNAL, "MPI %s failed: %s", what, msg);
}
#endif

ts_status ts_comm_max(const ts_comm *c, double *v, int n) {
#if TESSERA_HAVE_MPI
  if (c->mpi && c->size > 1)
    return mpi_check(MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD),
                     "allreduce");
#endif
  (void)c, (void)v, (void)n;
  return TS_OK;
}

ts_status ts_comm_sum_i64(const ts_comm *c, int64_t *v, int n) {
#if TESSERA_HAVE_MPI
  if (c->mpi && c->size > 1)
    return mpi_check(MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD),
                     "allreduce");
#endif
  (void)c, (void)v, (void)n;
  return TS_OK;
}

ts_status ts_comm_allgather(const ts_comm *c, const void *send, size_t bytes, void *recv) {
#if TESSERA_HAVE_MPI
  if (c->mpi && c->size > 1)
    return mpi_check(
        MPI_Allgather(send, (int)bytes, MPI_BYTE, recv, (int)bytes, MPI_BYTE, MPI_COMM_WORLD),
        "allgather");
#endif
  (void)c;
  memcpy(recv, send, bytes);
  return TS_OK;
}

ts_status ts_comm_gather(const ts_comm *c, const void *send, const size_t *counts, void *recv,
                         int root) {
#if TESSERA_HAVE_MPI
  if (c->mpi && c->size > 1) {
    /* Point to point, so counts above 2^31 bytes in total are fine. */
    if (c->rank != root)
      return counts[c->rank] ? mpi_check(MPI_Send(send, (int)counts[c->rank], MPI_BYTE, root, 7,
                                                  MPI_COMM_WORLD),
                                         "send")
                             : TS_OK;
    char *p = recv;
    for (int r = 0; r < c->size; r++) {
      if (r == root)
        memcpy(p, send, counts[r]);
      else if (counts[r])
        TS_CALL(mpi_check(
            MPI_Recv(p, (int)counts[r], MPI_BYTE, r, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
            "receive"));
      p += counts[r];
    }
    return TS_OK;
  }
#endif
  (void)root;
  memcpy(recv, send, counts[c->rank]);
  return TS_OK;
}

ts_status ts_comm_agree(const ts_comm *c, ts_status local) {
  if (c->size == 1)
    return local;
  /* Lowest failing rank and its code, found with one reduction. */
  double v[1] = {local != TS_OK ? (double)(c->size - c->rank) : 0};
  if (ts_comm_max(c, v, 1) != TS_OK)
    return TS_ERR_INTERNAL;
  if (v[0] == 0)
    return TS_OK;
  int failed = c->size - (int)v[0];
  if (failed == c->rank)
    return local; /* the lowest failing rank reports; the others stay quiet */
  ts_error(TS_ERR_PEER, "rank %d failed and reported why", failed);
  return TS_ERR_PEER;
}

/* ------------------------------------------------------------------ messages */

#if TESSERA_HAVE_MPI
/* The messages' MPI calls come from any thread, one at a time under this lock. */
static pthread_mutex_t message_lock = PTHREAD_MUTEX_INITIALIZER;

static ts_status post(const ts_comm *c, void *buf, size_t bytes, int peer, int tag, int send,
                      void **request) {
  *request = NULL;
  if (!c->mpi || peer < 0 || peer >= c->size || peer == c->rank)
    return ts_error(TS_ERR_INTERNAL, "message to rank %d of %d from rank %d", peer, c->size,
                    c->rank);
  if (c->threads < MPI_THREAD_SERIALIZED)
    return ts_error(TS_ERR_INTERNAL, "the MPI library does not allow calls from several threads");
  if (bytes > INT_MAX)
    return ts_error(TS_ERR_INTERNAL, "message of %zu bytes: at most %d", bytes, INT_MAX);
  MPI_Request *r = malloc(sizeof *r);
  if (!r)
    return ts_error(TS_ERR_NOMEM, "out of memory");
  pthread_mutex_lock(&message_lock);
  int rc = send ? MPI_Isend(buf, (int)bytes, MPI_BYTE, peer, tag, MPI_COMM_WORLD, r)
                : MPI_Irecv(buf, (int)bytes, MPI_BYTE, peer, tag, MPI_COMM_WORLD, r);
  pthread_mutex_unlock(&message_lock);
  if (rc != MPI_SUCCESS) {
    free(r);
    return mpi_check(rc, send ? "isend" : "irecv");
  }
  *request = r;
  return TS_OK;
}
#endif

ts_status ts_comm_isend(const ts_comm *c, const void *buf, size_t bytes, int peer, int tag,
                        void **request) {
#if TESSERA_HAVE_MPI
  return post(c, (void *)buf, bytes, peer, tag, 1, request);
#else
  (void)c, (void)buf, (void)bytes, (void)tag, *request = NULL;
  return ts_error(TS_ERR_INTERNAL, "message to rank %d: built without MPI", peer);
#endif
}

ts_status ts_comm_irecv(const ts_comm *c, void *buf, size_t bytes, int peer, int tag,
                        void **request) {
#if TESSERA_HAVE_MPI
  return post(c, buf, bytes, peer, tag, 0, request);
#else
  (void)c, (void)buf, (void)bytes, (void)tag, *request = NULL;
  return ts_error(TS_ERR_INTERNAL, "message from rank %d: built without MPI", peer);
#endif
}

int ts_comm_test(void **request) {
#if TESSERA_HAVE_MPI
  if (!*request)
    return 1;
  int done = 0;
  pthread_mutex_lock(&message_lock);
  int rc = MPI_Test((MPI_Request *)*request, &done, MPI_STATUS_IGNORE);
  pthread_mutex_unlock(&message_lock);
  if (rc != MPI_SUCCESS) {
    mpi_check(rc, "test");
    return -1;
  }
  if (done) {
    free(*request);
    *request = NULL;
  }
  return done;
#else
  (void)request;
  return 1;
#endif
}

/* ------------------------------------------------------------------ exact sums */

void ts_exact_sum_add(ts_exact_sum *s, double v) {
  if (v == 0 || !isfinite(v))
    return;
  /* |v| = whole + frac with frac in [0, 1) (exact for a non-negative double), as 64.64 fixed
   * point; a negative v is added as the two's complement. */
  double a = fabs(v), whole = floor(a);
  ts_exact_sum term = {(uint64_t)ldexp(a - whole, 64), (int64_t)whole};
  if (v < 0) {
    term.lo = ~term.lo + 1;
    term.hi = (int64_t)(~(uint64_t)term.hi + (term.lo == 0));
  }
  ts_exact_sum_merge(s, term);
}

void ts_exact_sum_merge(ts_exact_sum *s, ts_exact_sum other) {
  uint64_t sum = s->lo + other.lo;
  s->hi += other.hi + (sum < other.lo);
  s->lo = sum;
}

double ts_exact_sum_value(ts_exact_sum s) { return (double)s.hi + ldexp((double)s.lo, -64); }

ts_status ts_comm_exact_sum(const ts_comm *c, ts_exact_sum *s) {
  if (c->size == 1)
    return TS_OK;
  ts_exact_sum *all = malloc(sizeof *all * (size_t)c->size);
  if (!all)
    return ts_error(TS_ERR_NOMEM, "out of memory");
  ts_status st = ts_comm_allgather(c, s, sizeof *s, all);
  if (st == TS_OK) {
    ts_exact_sum total = {0, 0};
    for (int r = 0; r < c->size; r++)
      ts_exact_sum_merge(&total, all[r]);
    *s = total;
  }
  free(all);
  return st;
}
