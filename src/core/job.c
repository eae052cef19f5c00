/* Jobs on threads of their own (tessera/job.h). */
#include "tessera/job.h"

#include <string.h>

static void *job_main(void *x) {
  ts_job *job = x;
  job->status = job->run(job->arg);
  if (job->status != TS_OK)
    strncpy(job->message, ts_error_message(), sizeof job->message - 1);
  return NULL;
}

void ts_job_start(ts_job *job, ts_status (*run)(void *arg), void *arg) {
  memset(job, 0, sizeof *job);
  job->run = run;
  job->arg = arg;
  job->threaded = pthread_create(&job->thread, NULL, job_main, job) == 0;
  if (!job->threaded)
    job_main(job);
}

ts_status ts_job_finish(ts_job *job, ts_status before) {
  if (job->threaded)
    pthread_join(job->thread, NULL);
  job->threaded = 0;
  if (before != TS_OK)
    return before;
  if (job->status != TS_OK)
    return ts_error(job->status, "%s", job->message);
  return TS_OK;
}
