/* Run-time auto-tuning of the shallow-water solver's `auto` knobs, and the log of every such
 * decision (summary.json "tuning"). Knobs that change only the speed, never the values (early
 * exit, ghost expansion), are measured: after one warm-up step, each candidate runs the real
 * steps of the case for a few steps, timed on the slowest rank, and the fastest is kept. As every
 * candidate gives the same results bit for bit, the probe steps are steps of the run. Knobs whose
 * worth shows only over a long run (the load balancer, the GPU engine per region, the interval
 * between balancer measurements) are set by a stated rule, logged with its reason. */
#define _POSIX_C_SOURCE 200809L
#include <omp.h>
#include <stdio.h>
#include <string.h>

#include "physics/swe/swe_internal.h"

enum { PROBE_STEPS = 8 };

static const int early_exit_candidates[] = {1, 0};
static const int tile_candidates[] = {16, 32, 64};
static const int ghost_candidates[] = {1, 2, 4};
static const char *const knob_names[] = {"early_exit", "tile_size", "ghost_expansion"};

static ts_swe_decision *new_decision(ts_swe *s, const char *knob) {
  swe_tune_state *t = &s->tune;
  if (t->ndecisions == SWE_MAX_DECISIONS)
    return NULL;
  ts_swe_decision *d = &t->decisions[t->ndecisions++];
  memset(d, 0, sizeof *d);
  snprintf(d->knob, sizeof d->knob, "%s", knob);
  d->t = s->t;
  return d;
}

ts_swe_decision *swe_tune_rule(ts_swe *s, const char *knob, const char *choice,
                               const char *reason) {
  ts_swe_decision *d = new_decision(s, knob);
  if (d) {
    snprintf(d->choice, sizeof d->choice, "%s", choice);
    snprintf(d->reason, sizeof d->reason, "%s", reason);
  }
  return d;
}

/* Sets a measured knob to a candidate value (the same results whatever it is). */
static ts_status apply(ts_swe *s, swe_knob knob, int value) {
  if (knob == SWE_KNOB_GHOST_EXPANSION)
    return value == s->ghost_expansion ? TS_OK : swe_rebuild(s, &s->decomp, NULL, value);
  if (knob == SWE_KNOB_TILE_SIZE) { /* the parts' tile masks are rebuilt */
    if (value == s->p.tile_size)
      return TS_OK;
    s->p.tile_size = value;
    return swe_rebuild(s, &s->decomp, NULL, s->ghost_expansion);
  }
  s->early_exit = value;
  for (int k = 0; k < s->nparts; k++)
    s->parts[k]->early_exit = value;
  return TS_OK;
}

void swe_tune_init(ts_swe *s) {
  swe_tune_state *t = &s->tune;
  t->nplan = 0;
  if (s->early_exit < 0)
    t->plan[t->nplan++] = SWE_KNOB_EARLY_EXIT;
  if (t->tile_size_auto)
    t->plan[t->nplan++] = SWE_KNOB_TILE_SIZE;
  if (s->p.parallel.ghost_expansion == 0 && s->decomp.count > 1)
    t->plan[t->nplan++] = SWE_KNOB_GHOST_EXPANSION;
  t->current = t->nplan > 0 ? 0 : -1;
  t->warmed = 0;
  if (s->early_exit < 0) /* on until probed */
    apply(s, SWE_KNOB_EARLY_EXIT, 1);
  if (s->backend == TS_BACKEND_CUDA && s->p.parallel.kernels == TS_SWE_GPU_AUTO) {
    char reason[200];
    snprintf(reason, sizeof reason,
             "the row engine on regions of at least %d cells without early exit, the tile "
             "engine elsewhere (Malpasset 10 m on one H200: rows 11.4 s, tiles 7.4 s)",
             TS_SWE_ROWS_MIN_CELLS);
    swe_tune_rule(s, "gpu_kernels", "per region", reason);
  }
}

int swe_tuning(const ts_swe *s) { return s->tune.current >= 0; }

static int candidates_of(swe_knob knob, const int **values) {
  *values = knob == SWE_KNOB_EARLY_EXIT  ? early_exit_candidates
            : knob == SWE_KNOB_TILE_SIZE ? tile_candidates
                                         : ghost_candidates;
  return knob == SWE_KNOB_EARLY_EXIT ? 2 : 3;
}

static void log_measured(ts_swe *s, swe_knob knob, const int *values, int n, int best) {
  swe_tune_state *t = &s->tune;
  ts_swe_decision *d = new_decision(s, knob_names[knob]);
  double sum = 0;
  for (int c = 0; c < n; c++)
    sum += t->seconds[c];
  t->overhead_s += sum - n * t->seconds[best];
  if (!d)
    return;
  d->ncandidates = n;
  for (int c = 0; c < n; c++) {
    if (knob == SWE_KNOB_EARLY_EXIT)
      snprintf(d->candidates[c], sizeof d->candidates[c], "%s", values[c] ? "on" : "off");
    else
      snprintf(d->candidates[c], sizeof d->candidates[c], "%d", values[c]);
    d->seconds[c] = t->seconds[c];
  }
  snprintf(d->choice, sizeof d->choice, "%s", d->candidates[best]);
  snprintf(d->reason, sizeof d->reason, "fastest of %d steps per candidate (slowest rank)",
           PROBE_STEPS);
}

ts_status swe_tune_step(ts_swe *s, double target, double *dt_taken) {
  swe_tune_state *t = &s->tune;
  if (!t->warmed) { /* one-time costs (first touch, first launches) stay out of the probes */
    t->warmed = 1;
    t->candidate = 0;
    t->steps = 0;
    return swe_step(s, target, dt_taken);
  }
  swe_knob knob = t->plan[t->current];
  const int *values;
  int n = candidates_of(knob, &values);
  if (t->steps == 0) {
    TS_CALL(apply(s, knob, values[t->candidate]));
    t->start = omp_get_wtime();
  }
  TS_CALL(swe_step(s, target, dt_taken));
  if (++t->steps < PROBE_STEPS)
    return TS_OK;
  double seconds = omp_get_wtime() - t->start;
  TS_CALL(ts_comm_max(s->comm, &seconds, 1));
  t->seconds[t->candidate++] = seconds;
  t->steps = 0;
  if (t->candidate < n)
    return TS_OK;
  int best = 0;
  for (int c = 1; c < n; c++)
    if (t->seconds[c] < t->seconds[best])
      best = c;
  log_measured(s, knob, values, n, best);
  TS_CALL(apply(s, knob, values[best]));
  t->candidate = 0;
  t->current = t->current + 1 < t->nplan ? t->current + 1 : -1;
  if (t->current >= 0 && t->plan[t->current] == SWE_KNOB_TILE_SIZE && !s->early_exit) {
    swe_tune_rule(s, "tile_size", "32", "early exit is off: no tile is skipped");
    t->current = t->current + 1 < t->nplan ? t->current + 1 : -1;
  }
  return TS_OK;
}

int ts_swe_tuning_get(const ts_swe *s, const ts_swe_decision **decisions, double *tuning_seconds) {
  *decisions = s->tune.decisions;
  *tuning_seconds = s->tune.overhead_s;
  return s->tune.ndecisions;
}
