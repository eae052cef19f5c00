/* Radiation coupled to the energy equation on the task runtime (rmcrt.c):
 * rho c_p dT/dt = -divQ, radiation traced every `interval` steps, the rest of the steps reusing
 * the last divQ. Each step is tasks over the patches (bands of z-layers): `trace` (on a GPU, or
 * the CPU) reads the medium of every patch and writes the patch's divQ; `energy` (CPU) reads it
 * and writes the patch's temperature and medium; `upload` copies that medium to each GPU. So a
 * patch's energy update and upload run while the GPU traces the others. Over MPI ranks each rank
 * traces and updates its own patches, and `send`/`receive` tasks give every rank the others' new
 * media (each rank holds the whole medium: rays cross every patch). */
#ifndef TESSERA_RMCRT_COUPLE_H
#define TESSERA_RMCRT_COUPLE_H

#include "runtime/runtime.h"
#include "tessera/rmcrt.h"

typedef struct rmcrt_coupling {
  int steps;     /* time steps */
  double dt;     /* s */
  double rho_cp; /* volumetric heat capacity, J/m3/K */
  int interval;  /* steps between radiation solves */
} rmcrt_coupling;

/* Runs the coupled steps from temperature (K per cell, updated in place); divQ of the last
 * solve stays in the solver (ts_rmcrt_divq). Collective over the ranks; the temperature of
 * every cell is on every rank at the end. */
ts_status rmcrt_run_coupled(ts_rmcrt *r, ts_runtime *rt, const rmcrt_coupling *c,
                            double *temperature);

#endif
