/* Jobs on threads of their own (tessera/job.h): a job runs beside the caller (the two meet
 * through a flag each waits for, so a job run inline would hang: a timed wait fails the check
 * instead), its result comes back, a failed job's message becomes the caller's, and a failure of
 * the caller's own stays the one reported, with its message. */
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "tessera/job.h"
#include "unit/check.h"

static atomic_int job_started, caller_seen;

/* Waits (at most about 5 s) until *flag is set; returns whether it was. */
static int wait_for(atomic_int *flag) {
  struct timespec nap = {0, 1000000};
  for (int n = 0; n < 5000 && !atomic_load(flag); n++)
    nanosleep(&nap, NULL);
  return atomic_load(flag);
}

/* Tells the caller it runs, then waits for the caller's answer: only a job beside the caller
 * sees it. */
static ts_status meet(void *arg) {
  atomic_store(&job_started, 1);
  *(int *)arg = wait_for(&caller_seen);
  return TS_OK;
}

static ts_status fail(void *arg) {
  return ts_error(TS_ERR_IO, "%s: cannot write: No space left on device", (const char *)arg);
}

int main(void) {
  ts_job job;
  int met = 0;
  ts_job_start(&job, meet, &met);
  int started = wait_for(&job_started);
  atomic_store(&caller_seen, 1);
  ts_status st = ts_job_finish(&job, TS_OK);
  CHECK(started && met && st == TS_OK,
        "a job runs beside its caller (it started while the caller waited: %d; it saw the "
        "caller's answer: %d) and its result comes back (status %d)",
        started, met, (int)st);

  ts_error_clear();
  ts_job_start(&job, fail, "out/h_t000030.asc");
  st = ts_job_finish(&job, TS_OK);
  CHECK(st == TS_ERR_IO &&
            strcmp(ts_error_message(), "out/h_t000030.asc: cannot write: No space left on "
                                       "device") == 0,
        "a failed job's status and message become the caller's: %d, '%s'", (int)st,
        ts_error_message());

  ts_status mine = ts_error(TS_ERR_NUMERIC, "the caller's own failure");
  ts_job_start(&job, fail, "out/depth_t000030.png");
  st = ts_job_finish(&job, mine);
  CHECK(st == TS_ERR_NUMERIC && strcmp(ts_error_message(), "the caller's own failure") == 0,
        "a failure of the caller's own before the job's stays the one reported: %d, '%s'", (int)st,
        ts_error_message());
  return failures != 0;
}
