/* Lattice Boltzmann case driver ([model] type = lbm): reads the [lbm] keys, converts units and
 * reports the Reynolds and Mach numbers, builds the geometry, runs to steady state or the step
 * limit, and writes the VTK image, PNG slices, line profiles and summary.json. */
#ifndef TESSERA_LBM_CASE_H
#define TESSERA_LBM_CASE_H

#include "physics/case.h"

ts_status ts_lbm_case_run(const ts_case_options *opt);

#endif
