/* Catching the signals that stop a run (stop.h). */
#define _POSIX_C_SOURCE 200809L /* sigaction */
#include "physics/stop.h"

#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile sig_atomic_t caught = 0;     /* the first signal's number */
static atomic_flag first = ATOMIC_FLAG_INIT; /* set by the first signal (lock-free) */
static const int stop_signals[3] = {SIGTERM, SIGINT, SIGUSR1};

/* Only async-signal-safe calls: the flags, sigaction, raise. The first signal gives the three
 * their default action back; one that reaches another thread before that finds the flag set and
 * ends the process itself. */
static void on_signal(int sig) {
  struct sigaction dfl;
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  int again = atomic_flag_test_and_set(&first);
  for (int k = 0; k < 3; k++)
    sigaction(stop_signals[k], &dfl, NULL);
  if (again)
    raise(sig);
  else
    caught = sig;
}

ts_status ts_stop_install(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  for (int k = 0; k < 3; k++)
    sigaddset(&sa.sa_mask, stop_signals[k]);
  sa.sa_flags = SA_RESTART;
  for (int k = 0; k < 3; k++)
    if (sigaction(stop_signals[k], &sa, NULL) != 0)
      return ts_error(TS_ERR_INTERNAL, "cannot catch signal %d", stop_signals[k]);
  return TS_OK;
}

int ts_stop_signal(void) { return caught; }

ts_status ts_stop_agree(const ts_comm *comm, int *stop) {
  double any = caught != 0;
  ts_status st = ts_comm_size(comm) > 1 ? ts_comm_max(comm, &any, 1) : TS_OK;
  *stop = any > 0;
  return st;
}

ts_status ts_stop_error_line(const ts_comm *comm, ts_status st, char *line, size_t size) {
  enum { WIDTH = 512 };
  int n = ts_comm_size(comm);
  char mine[WIDTH] = "", *all = malloc((size_t)n * WIDTH);
  if (!all)
    return ts_error(TS_ERR_NOMEM, "out of memory");
  if (st != TS_OK && st != TS_ERR_PEER)
    snprintf(mine, sizeof mine, "%s", ts_error_message());
  ts_status got = ts_comm_allgather(comm, mine, WIDTH, all);
  snprintf(line, size, "%s", st == TS_ERR_PEER ? ts_error_message() : mine);
  for (int r = 0; got == TS_OK && r < n; r++)
    if (all[(size_t)r * WIDTH]) {
      if (n > 1)
        snprintf(line, size, "rank %d: %.*s", r, WIDTH - 1, all + (size_t)r * WIDTH);
      else
        snprintf(line, size, "%.*s", WIDTH - 1, all + (size_t)r * WIDTH);
      break;
    }
  free(all);
  return got;
}

void ts_stop_summary(ts_json *j, ts_status st, const char *error, const char *checkpoint) {
  ts_json_key(j, "status");
  ts_json_string(j, st == TS_OK ? "completed" : st == TS_STOPPED ? "stopped" : "failed");
  ts_json_key(j, "error");
  if (st != TS_OK && st != TS_STOPPED && error)
    ts_json_string(j, error);
  else
    ts_json_null(j);
  ts_json_key(j, "checkpoint_latest");
  if (checkpoint && checkpoint[0])
    ts_json_string(j, checkpoint);
  else
    ts_json_null(j);
}
