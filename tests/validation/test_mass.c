/* Validation: mass conservation and positivity in a closed basin with a violent wet/dry flow.
 *
 * An 80 x 54 basin (dx = 1.5 m, 120 m x 81 m, walls all round, bowl-shaped bed with a hill) holds
 * a 1.5 m deep column of water behind a removed dam at x = 40 m; the rest of the basin is dry. The
 * flood runs up the bowl and the hill and reflects from the walls for 2000 CFL steps (double and
 * float).
 *
 * Tolerances and why:
 *  - relative volume change |V(t) - V(0)| / V(0) < 1e-12 (double), 1e-5 (float). The finite-
 *    volume update is conservative to round-off; a positivity fix that clips negative depths, or
 *    a wall that leaks, changes the volume by far more (typically 1e-4 .. 1e-2 over this run).
 *    Float: each of ~1e4 cells gains round-off ~6e-8 * h per step; 2000 steps of random-walk
 *    accumulation give ~1e-7 .. 1e-6 relative, so 1e-5 leaves margin but catches real leaks.
 *  - depth never negative (checked every 25 steps and at the end, exactly >= 0) and finite. */
#include <math.h>
#include <stdlib.h>

#include "analytic.h"

static void run_case(ts_precision prec) {
  const int nx = 80, ny = 54, nsteps = 2000;
  const int64_t n = (int64_t)nx * ny;
  ts_raster bed = val_raster(nx, ny, 1.5, 0, 0);
  double *eta = malloc(n * sizeof(double));
  for (int j = 0; j < ny; j++)
    for (int i = 0; i < nx; i++) {
      double x = val_xc(&bed, i), y = val_yc(&bed, j);
      double z =
          0.6 * ((x - 60) / 60) * ((x - 60) / 60) + 0.4 * ((y - 40.5) / 40.5) * ((y - 40.5) / 40.5);
      z += 1.2 * exp(-((x - 85) * (x - 85) + (y - 35) * (y - 35)) / 50.0);
      bed.v[i + j * nx] = z;
      eta[i + j * nx] = x < 40 ? 1.5 : -100; /* -100: dry */
    }
  ts_swe_params p;
  ts_swe_params_default(&p);
  p.precision = prec;
  ts_swe *s = val_create_eta(&p, &bed, eta, NULL, NULL, NULL);
  double v0 = ts_swe_volume(s), hmin = INFINITY, dmax = 0;
  int64_t wet_max = 0;
  double t0 = val_now();
  for (int k = 1; k <= nsteps; k++) {
    double dt;
    TRY(ts_swe_step(s, 1e30, &dt));
    double d = fabs(ts_swe_volume(s) - v0) / v0;
    if (d > dmax || isnan(d))
      dmax = isnan(d) ? INFINITY : d;
    if (k % 25 == 0 || k == nsteps) {
      double m = val_min_var(s, TS_SWE_H);
      if (m < hmin || isnan(m))
        hmin = isnan(m) ? -INFINITY : m;
      int64_t w = ts_swe_wet_cells(s);
      if (w > wet_max)
        wet_max = w;
    }
  }
  int dbl = prec == TS_DOUBLE;
  double tol = dbl ? 1e-12 : 1e-5;
  printf("mass %-6s: V0 = %.6f m3, t = %.2f s after %d steps (%.2f s wall), up to %lld wet cells "
         "of %lld\n",
         ts_precision_name(prec), v0, ts_swe_time(s), nsteps, val_now() - t0, (long long)wet_max,
         (long long)n);
  CHECK(dmax < tol, "max relative volume change over all steps = %.3e (tolerance %.0e)", dmax, tol);
  CHECK(hmin >= 0, "minimum depth seen = %.3e m (must be >= 0)", hmin);
  CHECK(wet_max > n / 2, "the flood spread: %lld wet cells at most (> %lld expected)",
        (long long)wet_max, (long long)(n / 2));
  ts_swe_destroy(s);
  free(eta);
  val_raster_free(&bed);
}

int main(void) {
  run_case(TS_DOUBLE);
  run_case(TS_FLOAT);
  return val_finish();
}
