/* RMCRT case driver ([model] type = rmcrt): divQ of a box by reverse Monte Carlo ray tracing,
 * written as VTK image data, a centreline CSV and summary.json. */
#ifndef TESSERA_RMCRT_CASE_H
#define TESSERA_RMCRT_CASE_H

#include "physics/case.h"

ts_status ts_rmcrt_case_run(const ts_case_options *opt);

#endif
