/* Lattice Boltzmann Poiseuille flow: a channel periodic along x between two walls (half-way
 * bounce-back at y = 0 and y = H), driven by a body force F (Guo). The steady profile is
 * u(y) = F y (H - y) / (2 nu). Checked at H = 8, 16, 32 with the same relaxation time and peak
 * velocity 0.02: the L2 error must fall at second order (order >= 1.8) for SRT and for TRT with
 * Lambda = 1/4, and TRT with Lambda = 3/16 puts the walls exactly half-way, so its profile is
 * exact to float round-off (relative L2 error below 1e-4) at every resolution. */
#include <math.h>
#include <stdlib.h>

#include "tessera/lbm.h"
#include "validation/analytic.h"

static double profile_error(ts_lbm_collision collision, double magic, int h) {
  ts_lbm_params p;
  ts_lbm_params_default(&p);
  p.collision = collision;
  p.magic = magic;
  p.n[0] = 4, p.n[1] = h;
  p.tau = 0.8;
  double nu = (p.tau - 0.5) / 3, umax = 0.02;
  p.force[0] = 8 * nu * umax / ((double)h * h);
  p.face[TS_LBM_WEST].type = p.face[TS_LBM_EAST].type = TS_LBM_PERIODIC;
  ts_lbm *s;
  TRY(ts_lbm_create(&s, &p, ts_comm_world()));
  /* about 8 viscous times H^2 / nu: the slowest mode has decayed by e^-80 */
  TRY(ts_lbm_step(s, (int)(8.0 * h * h / nu) + 1));
  double *u = malloc(sizeof(double) * 4 * (size_t)h);
  TRY(ts_lbm_get(s, TS_LBM_UX, u));
  double err = 0, norm = 0;
  for (int j = 0; j < h; j++) {
    double y = j + 0.5, exact = p.force[0] * y * (h - y) / (2 * nu);
    err += (u[j * 4] - exact) * (u[j * 4] - exact);
    norm += exact * exact;
  }
  free(u);
  ts_lbm_destroy(s);
  return sqrt(err / norm);
}

int main(void) {
  const int sizes[3] = {8, 16, 32};
  struct {
    const char *name;
    ts_lbm_collision collision;
    double magic;
  } models[2] = {{"SRT tau 0.8", TS_LBM_SRT, 0}, {"TRT Lambda 1/4", TS_LBM_TRT, 0.25}};
  for (int m = 0; m < 2; m++) {
    double e[3];
    for (int k = 0; k < 3; k++) {
      e[k] = profile_error(models[m].collision, models[m].magic, sizes[k]);
      printf("%s, H = %d: relative L2 error %.3e\n", models[m].name, sizes[k], e[k]);
    }
    for (int k = 0; k < 2; k++) {
      double order = log(e[k] / e[k + 1]) / log(2.0);
      CHECK(order >= 1.8, "%s: order %.2f from H = %d to %d (>= 1.8)", models[m].name, order,
            sizes[k], sizes[k + 1]);
    }
  }
  for (int k = 0; k < 3; k++) {
    double e = profile_error(TS_LBM_TRT, 3.0 / 16.0, sizes[k]);
    CHECK(e < 1e-4, "TRT Lambda 3/16, H = %d: relative L2 error %.2e (< 1e-4, exact profile)",
          sizes[k], e);
  }
  return val_finish();
}
