/* Radiative heat transfer by reverse Monte Carlo ray tracing (RMCRT): the divergence of the
 * radiative flux, divQ = 4 pi kappa (sigma T^4 / pi - mean incoming intensity), of every cell of
 * a box of a grey, non-scattering medium with walls, from `rays` rays traced backwards from each
 * cell (src/physics/rmcrt/rmcrt_ray.h). The box is split into patches (ts_decomp) traced on the
 * CPU's threads or on GPUs, over MPI ranks; the properties are replicated on every rank. The
 * random numbers are counter-based (Philox, keyed by seed, cell, ray and time step), so divQ is
 * the same bit for bit on the CPU, on GPUs and under any split. */
#ifndef TESSERA_RMCRT_H
#define TESSERA_RMCRT_H

#include <stdint.h>

#include "tessera/decomp.h"
#include "tessera/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TS_RMCRT_MAX_DEVICES 64

typedef struct ts_rmcrt_params {
  int n[3];         /* cells per axis */
  double length[3]; /* m per axis */
  int rays;         /* per cell, default 100 */
  double threshold; /* a ray stops below this transmissivity, default 0.05 (Uintah) */
  uint32_t seed;    /* default 1 */
  double sigma;     /* Stefan-Boltzmann constant, default 5.67051e-8 W/m2/K4 */
  int jitter;       /* ray origins jittered in the cell (default 0: the centre) */
  int lhs;      /* directions Latin-hypercube stratified over a cell's rays (default 0: random) */
  int coarsen;  /* the data onion: a coarse level of cells coarsen^3 fine ones (default 1: none) */
  int roi_halo; /* with it, rays march the fine cells within this many of their own (default 4) */
  double wall_temperature[6]; /* K, per face: -x, +x, -y, +y, -z, +z (default 0: cold) */
  double wall_emissivity[6];  /* default 1 (black) */
  int cuda;                   /* trace on GPUs (default 0: the CPU's threads) */
  int ndevices;               /* GPUs to use (0: all) */
  int devices[TS_RMCRT_MAX_DEVICES];
  int patches; /* over all ranks (0: one per rank, or per GPU of a rank) */
  ts_decomp_kind decomposition;
} ts_rmcrt_params;

typedef struct ts_rmcrt ts_rmcrt;

void ts_rmcrt_params_default(ts_rmcrt_params *p);
/* The absorption coefficient (1/m) of Burns & Christon (1997) at the centre of cell (i, j, k)
 * of n cells: 0.9 (1 - 2|x - 1/2|)(1 - 2|y - 1/2|)(1 - 2|z - 1/2|) + 0.1, x, y, z as fractions
 * of the box. */
double ts_rmcrt_burns_christon(const int n[3], int i, int j, int k);
/* absorption (1/m) and temperature (K) per cell, indexed i + n0 (j + n1 k), copied. */
ts_status ts_rmcrt_create(ts_rmcrt **out, const ts_rmcrt_params *p, const double *absorption,
                          const double *temperature);
void ts_rmcrt_destroy(ts_rmcrt *r);
/* Traces every cell of this rank's patches for time step `step` (the generator's key). */
ts_status ts_rmcrt_solve(ts_rmcrt *r, uint32_t step);
/* divQ (W/m3) of every cell, gathered on every rank (collective). */
ts_status ts_rmcrt_divq(const ts_rmcrt *r, double *out);
/* Rays and cell crossings traced by this rank, and the seconds spent tracing, since creation. */
void ts_rmcrt_work(const ts_rmcrt *r, int64_t *rays, int64_t *crossings, double *seconds);
const ts_decomp *ts_rmcrt_decomp(const ts_rmcrt *r);
int ts_rmcrt_on_gpu(const ts_rmcrt *r);

#ifdef __cplusplus
}
#endif
#endif
