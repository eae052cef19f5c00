/* Processes of one run: the communicator (MPI when the run was started by an MPI launcher, one
 * process otherwise), deterministic reductions, gathers, and the agreement on errors that lets
 * every rank stop together when one fails. Without MPI at build or run time every call works on
 * a single rank. */
#ifndef TESSERA_COMM_H
#define TESSERA_COMM_H

#include <stddef.h>
#include <stdint.h>

#include "tessera/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ts_comm ts_comm;

/* Starts MPI when this process was launched by mpirun/mpiexec (or srun), so a plain `tessera`
 * needs no MPI at run time. Call once, before anything else. */
ts_status ts_comm_init(int *argc, char ***argv);
/* Ends MPI (if started). Every rank calls it, also after an error all ranks agreed on. */
void ts_comm_finalize(void);

const ts_comm *ts_comm_world(void); /* every process of the run */
const ts_comm *ts_comm_self(void);  /* this process alone (work that one rank does by itself) */
int ts_comm_rank(const ts_comm *c);
int ts_comm_size(const ts_comm *c);
int ts_comm_built_with_mpi(void);
const char *ts_comm_library(void); /* "Open MPI v4.1.4 ..." or "none" */

/* Element-wise maximum of v[0..n) over all ranks, in place. Exact whatever the order. */
ts_status ts_comm_max(const ts_comm *c, double *v, int n);
/* Element-wise sum of integers over all ranks, in place. */
ts_status ts_comm_sum_i64(const ts_comm *c, int64_t *v, int n);
/* Rank r's `bytes` bytes land at recv + r * bytes on every rank. */
ts_status ts_comm_allgather(const ts_comm *c, const void *send, size_t bytes, void *recv);
/* Rank r sends counts[r] bytes; root receives them one after the other in rank order (counts
 * must be the same array on every rank). */
ts_status ts_comm_gather(const ts_comm *c, const void *send, const size_t *counts, void *recv,
                         int root);

/* Point-to-point messages of `bytes` bytes to or from rank `peer`, posted without waiting; any
 * thread may post and test them (the calls are serialised here). *request is NULL after a
 * failure. ts_comm_test returns 1 when the message is complete (the request is freed and set to
 * NULL; a NULL request is complete), 0 while it is in flight, -1 on failure. */
ts_status ts_comm_isend(const ts_comm *c, const void *buf, size_t bytes, int peer, int tag,
                        void **request);
ts_status ts_comm_irecv(const ts_comm *c, void *buf, size_t bytes, int peer, int tag,
                        void **request);
int ts_comm_test(void **request);

/* Collective: every rank passes its own status; all return together. The lowest failing rank
 * gets its status back (its message stands); the others get TS_ERR_PEER with a message naming
 * that rank, which callers do not print. */
ts_status ts_comm_agree(const ts_comm *c, ts_status local);

/* Exact, order-independent sum of reals: values are accumulated in 128-bit fixed point with a
 * resolution of 2^-64, so any split of the terms over subdomains and ranks gives the same bits. */
typedef struct ts_exact_sum {
  uint64_t lo;
  int64_t hi;
} ts_exact_sum;

void ts_exact_sum_add(ts_exact_sum *s, double v);
void ts_exact_sum_merge(ts_exact_sum *s, ts_exact_sum other);
double ts_exact_sum_value(ts_exact_sum s);
/* Sum of every rank's partial sum, on every rank. */
ts_status ts_comm_exact_sum(const ts_comm *c, ts_exact_sum *s);

#ifdef __cplusplus
}
#endif
#endif
