/* Validation: lake at rest over an irregular bed (C-property / well-balancing with wet/dry).
 *
 * Bed: sum of Gaussian hills and sines on a 72 x 48 grid (dx = 1 m) with three islands that
 * emerge above the still-water level eta0 = 1 m, so shorelines cut through cells, plus (one
 * variant) a block of NODATA cells inside the lake. h0 = max(0, eta0 - bed as the scheme sees it).
 * 1000 CFL steps with walls; float and double without friction, float with Manning friction
 * (n = 0.03), and double with Manning friction and the NODATA block.
 *
 * Tolerances and why:
 *  - max |hu|, |hv| < 1e-4 m2/s (float), 1e-10 m2/s (double). Round-off bound: the momentum
 *    update adds dt/dx * (difference of fluxes ~ g h^2/2 <= 10 m3/s2) ~ 0.07 * 10 * eps per step;
 *    even if all 1000 steps added up coherently that is ~4e-5 (float) and ~1e-13 (double).
 *    A scheme that is not well balanced (source term not discretised consistently with the
 *    pressure flux, or plain KP07 without the wet/dry reconstruction at shorelines) produces
 *    spurious discharges of order g h dz/dx * dt ~ 1e-3 .. 1e-1 m2/s in the first steps.
 *  - max |eta - eta0| over wet cells < 2e-5 m (float), 1e-11 m (double): eta is stored to float
 *    round-off (6e-8 m) and only moves through the round-off discharges above.
 *  - initially dry island cells must stay at depth <= dry_depth (no spurious flooding).
 *  - the volume must not change by more than round-off (relative 1e-5 float, 1e-12 double). */
#include <math.h>
#include <stdlib.h>

#include "analytic.h"

static double bed_fn(double x, double y) {
  double z = 0.25 * sin(x / 7.0) * cos(y / 5.0) + 0.1 * sin(0.3 * x + 0.2 * y);
  z += 1.6 * exp(-((x - 28) * (x - 28) + (y - 30) * (y - 30)) / 60.0);
  z += 1.3 * exp(-((x - 70) * (x - 70) + (y - 18) * (y - 18)) / 25.0);
  z += 1.15 * exp(-((x - 62) * (x - 62) + (y - 47) * (y - 47)) / 90.0);
  z -= 0.4 * exp(-((x - 45) * (x - 45) + (y - 12) * (y - 12)) / 40.0);
  return z;
}

static void run_case(ts_precision prec, int manning, int nodata_block) {
  const int nx = 72, ny = 48;
  const double eta0 = 1.0;
  const int64_t n = (int64_t)nx * ny;
  ts_raster bed = val_raster(nx, ny, 1.0, 0, 0);
  for (int j = 0; j < ny; j++)
    for (int i = 0; i < nx; i++) {
      bed.v[i + j * nx] = bed_fn(val_xc(&bed, i) * 4 / 3, val_yc(&bed, j) * 4 / 3);
      if (nodata_block && i >= 30 && i < 33 && j >= 22 && j < 26)
        bed.v[i + j * nx] = bed.nodata;
    }
  ts_swe_params p;
  ts_swe_params_default(&p);
  p.precision = prec;
  if (manning) {
    p.friction = TS_FRICTION_MANNING;
    p.friction_value = 0.03;
  }
  double *eta = malloc(n * sizeof(double));
  for (int64_t c = 0; c < n; c++)
    eta[c] = eta0;
  ts_swe *s = val_create_eta(&p, &bed, eta, NULL, NULL, NULL);

  double *h0 = malloc(n * sizeof(double)), *h = malloc(n * sizeof(double));
  double *hu = malloc(n * sizeof(double)), *hv = malloc(n * sizeof(double));
  double *et = malloc(n * sizeof(double));
  TRY(ts_swe_get(s, TS_SWE_H, h0));
  int64_t dry0 = 0, wet0 = ts_swe_wet_cells(s);
  for (int64_t c = 0; c < n; c++)
    if (!isnan(h0[c]) && h0[c] <= 0)
      dry0++;
  double vol0 = ts_swe_volume(s);
  double t0 = val_now();
  val_run_steps(s, 1000);
  double wall = val_now() - t0;
  TRY(ts_swe_get(s, TS_SWE_H, h));
  TRY(ts_swe_get(s, TS_SWE_HU, hu));
  TRY(ts_swe_get(s, TS_SWE_HV, hv));
  TRY(ts_swe_get(s, TS_SWE_ETA, et));
  double mq = 0, me = 0, mdry = 0;
  for (int64_t c = 0; c < n; c++) {
    if (isnan(h[c]))
      continue;
    mq = fmax(mq, fmax(fabs(hu[c]), fabs(hv[c])));
    if (h[c] > p.dry_depth && h0[c] > p.dry_depth)
      me = fmax(me, fabs(et[c] - eta0));
    if (h0[c] <= 0)
      mdry = fmax(mdry, h[c]);
    if (!isfinite(hu[c]) || !isfinite(hv[c]) || !isfinite(h[c]))
      mq = INFINITY;
  }
  double dvol = fabs(ts_swe_volume(s) - vol0) / vol0;
  int dbl = prec == TS_DOUBLE;
  double tol_q = dbl ? 1e-10 : 1e-4, tol_e = dbl ? 1e-11 : 2e-5, tol_v = dbl ? 1e-12 : 1e-5;
  printf("lake at rest %-6s manning=%d nodata_block=%d: %lld wet / %lld dry cells, t=%.2f s after "
         "1000 steps (%.2f s wall)\n",
         ts_precision_name(prec), manning, nodata_block, (long long)wet0, (long long)dry0,
         ts_swe_time(s), wall);
  CHECK(mq < tol_q, "max |hu|,|hv| = %.3e m2/s (tolerance %.0e)", mq, tol_q);
  CHECK(me < tol_e, "max |eta - eta0| over wet cells = %.3e m (tolerance %.0e)", me, tol_e);
  CHECK(mdry <= p.dry_depth, "max depth on initially dry cells = %.3e m (tolerance dry_depth %.0e)",
        mdry, p.dry_depth);
  CHECK(dvol < tol_v, "relative volume change = %.3e (tolerance %.0e)", dvol, tol_v);
  CHECK(dry0 > 30 && wet0 > 2500, "setup has islands: %lld dry cells, %lld wet cells",
        (long long)dry0, (long long)wet0);
  ts_swe_destroy(s);
  free(h0), free(h), free(hu), free(hv), free(et), free(eta);
  val_raster_free(&bed);
}

int main(void) {
  run_case(TS_DOUBLE, 0, 0);
  run_case(TS_FLOAT, 0, 0);
  run_case(TS_FLOAT, 1, 0);
  run_case(TS_DOUBLE, 1, 1);
  return val_finish();
}
