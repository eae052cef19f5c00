/* Shallow-water case driver: reads a case file, builds the solver, runs to the end time and
 * writes snapshots, maxima, gauges, checkpoints and summary.json. */
#ifndef TESSERA_SWE_CASE_H
#define TESSERA_SWE_CASE_H

#include "physics/case.h"

/* Runs a case. Input errors are found before any output is written. */
ts_status ts_swe_case_run(const ts_case_options *opt);

#endif
