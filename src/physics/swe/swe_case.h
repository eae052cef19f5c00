/* Shallow-water case driver: reads a case file, builds the solver, runs to the end time and
 * writes snapshots, maxima, gauges, checkpoints and summary.json. */
#ifndef TESSERA_SWE_CASE_H
#define TESSERA_SWE_CASE_H

#include <stdio.h>

#include "tessera/error.h"

typedef struct ts_swe_case_options {
  const char *case_path;
  const char *const *overrides; /* "section.key=value" from --set */
  int noverrides;
  const char *out_dir; /* --out, or NULL for [output] dir */
  const char *restart; /* checkpoint to continue from, or NULL */
  int quiet;           /* no progress line */
  FILE *progress;      /* where the progress line goes (stderr) */
} ts_swe_case_options;

/* Runs a case. Input errors are found before any output is written. */
ts_status ts_swe_case_run(const ts_swe_case_options *opt);

#endif
