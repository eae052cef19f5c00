/* How a run ends. A stop that saves: `tessera run` catches SIGTERM, SIGINT and SIGUSR1; the case
 * drivers look at the flag between steps, agree over the ranks on the step to stop after, save
 * and return TS_STOPPED. A second such signal ends the process at once (the default action).
 * And what summary.json says of the end: status, error line, newest checkpoint. */
#ifndef TESSERA_STOP_H
#define TESSERA_STOP_H

#include "tessera/comm.h"
#include "tessera/error.h"
#include "tessera/io.h"

/* Catches SIGTERM, SIGINT and SIGUSR1: the first sets the flag and gives the three signals back
 * their default action, so that the next one ends the process. */
ts_status ts_stop_install(void);

/* The signal caught so far on this process, or 0. */
int ts_stop_signal(void);

/* Collective: *stop = 1 on every rank when any rank has caught a signal, else 0 (one reduction;
 * nothing to exchange with one rank). */
ts_status ts_stop_agree(const ts_comm *comm, int *stop);

/* Collective, after a failure that every rank knows of (st on this rank): the message of the
 * lowest rank that failed itself (not TS_ERR_PEER), prefixed "rank R: " with several ranks, as
 * the command line prints it. */
ts_status ts_stop_error_line(const ts_comm *comm, ts_status st, char *line, size_t size);

/* summary.json's "status" ("completed", "stopped" or "failed" from st: TS_OK, TS_STOPPED, any
 * other), "error" (the error line when failed, else null) and "checkpoint_latest" (the newest
 * complete checkpoint this run wrote, or null: checkpoint NULL or ""). */
void ts_stop_summary(ts_json *j, ts_status st, const char *error, const char *checkpoint);

#endif
