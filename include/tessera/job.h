/* Work run on a thread of its own beside the caller, which goes on with its own work (and keeps
 * its OpenMP threads): the writers of an output time, each to its own files, for example. A job
 * shares no state with the caller but what its argument points at; its error message comes back
 * to the caller's thread when it is finished. */
#ifndef TESSERA_JOB_H
#define TESSERA_JOB_H

#include <pthread.h>

#include "tessera/error.h"

typedef struct ts_job {
  ts_status (*run)(void *arg);
  void *arg;
  ts_status status;
  char message[1024];
  pthread_t thread;
  int threaded; /* 0: no thread could be made, the job ran in ts_job_start */
} ts_job;

/* Starts run(arg) on a new thread (or runs it now when the system gives no thread). */
void ts_job_start(ts_job *job, ts_status (*run)(void *arg), void *arg);

/* Waits for the job. Returns `before` when that is a failure (the caller's own, whose message
 * stays), else the job's status, with its message as the calling thread's when it failed. */
ts_status ts_job_finish(ts_job *job, ts_status before);

#endif
