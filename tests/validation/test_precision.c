/* Validation: float and double runs of the same dam break agree to float round-off.
 *
 * Circular dam break (radius 10 m, 2 m deep, in 0.5 m of water; variant: over a dry bed) on an
 * 80 x 60 grid (dx = 1 m) over a gently varying bed, walls, run to t = 10 s with steps
 * dt = min(0.02 s, CFL step): on the wet bed 0.02 s is below the CFL limit, so both precisions
 * take exactly the same 500 steps; over the dry bed some steps are CFL-limited (reported).
 *
 * Measure: max |h_float - h_double| / max h_double over all cells.
 * Tolerances and why: float carries ~6e-8 relative round-off per operation; the scheme is
 * nonlinear (limiters switch branches, shocks sharpen differences), so over 500 steps those
 * differences grow by a few orders of magnitude but must stay well below the discretisation
 * error. Bound 1e-4 on a wet bed. Over a dry bed the wet/dry front amplifies them more (a cell
 * becomes wet a step earlier in one precision), so the bound there is 1e-3. A float kernel that
 * computes something different from the double one (a wrong cast, float constants truncated
 * like g = 9.8f, a precision-dependent branch) differs by 1e-3 .. 1e-1. */
#include <math.h>
#include <stdlib.h>

#include "analytic.h"

static ts_swe *run(ts_precision prec, int dry, int *fixed_steps) {
  const int nx = 80, ny = 60;
  ts_raster bed = val_raster(nx, ny, 1.0, 0, 0), h0 = val_raster(nx, ny, 1.0, 0, 0);
  for (int j = 0; j < ny; j++)
    for (int i = 0; i < nx; i++) {
      double x = val_xc(&bed, i), y = val_yc(&bed, j);
      double r2 = (x - 30) * (x - 30) + (y - 28) * (y - 28);
      bed.v[i + j * nx] = 0.1 * sin(x / 9.0) + 0.05 * cos(y / 6.0);
      h0.v[i + j * nx] = r2 < 100 ? 2 : (dry ? 0 : 0.5);
    }
  ts_swe_params p;
  ts_swe_params_default(&p);
  p.precision = prec;
  ts_swe *s = NULL;
  TRY(ts_swe_create(&s, &p, &bed, &h0, NULL, NULL, NULL));
  *fixed_steps = 0;
  while (ts_swe_time(s) < 10 - 1e-9) {
    double dt, left = 10 - ts_swe_time(s);
    TRY(ts_swe_step(s, left < 0.02 ? left : 0.02, &dt));
    *fixed_steps += fabs(dt - 0.02) < 1e-7;
    if (ts_swe_steps(s) > 20000)
      break;
  }
  val_raster_free(&bed), val_raster_free(&h0);
  return s;
}

int main(void) {
  for (int dry = 0; dry < 2; dry++) {
    int nf, nd;
    ts_swe *f = run(TS_FLOAT, dry, &nf), *d = run(TS_DOUBLE, dry, &nd);
    int64_t n = ts_grid_cells(ts_swe_grid(d));
    double *hf = malloc(n * sizeof(double)), *hd = malloc(n * sizeof(double));
    TRY(ts_swe_get(f, TS_SWE_H, hf));
    TRY(ts_swe_get(d, TS_SWE_H, hd));
    double md = val_max_abs_diff(hf, hd, n), hmax = 0;
    for (int64_t c = 0; c < n; c++)
      hmax = fmax(hmax, hd[c]);
    double vf = ts_swe_volume(f), vd = ts_swe_volume(d);
    double tol = dry ? 1e-3 : 1e-4;
    printf("precision %s bed: t = %.3f / %.3f s, 0.02 s steps %d / %d of %lld / %lld, max h %.4f "
           "m, max |h_f - "
           "h_d| = %.3e m, volumes %.9g / %.9g m3\n",
           dry ? "dry" : "wet", ts_swe_time(f), ts_swe_time(d), nf, nd, (long long)ts_swe_steps(f),
           (long long)ts_swe_steps(d), hmax, md, vf, vd);
    if (!dry)
      CHECK(nf == 500 && nd == 500, "%s: both runs took the fixed step 500 times (%d, %d)",
            dry ? "dry" : "wet", nf, nd);
    CHECK(fabs(ts_swe_time(f) - 10) < 1e-9 && fabs(ts_swe_time(d) - 10) < 1e-9,
          "%s: both runs reached t = 10 s", dry ? "dry" : "wet");
    CHECK(md / hmax < tol, "%s: max |h_f - h_d| / max h = %.3e < %.0e", dry ? "dry" : "wet",
          md / hmax, tol);
    free(hf), free(hd);
    ts_swe_destroy(f), ts_swe_destroy(d);
  }
  return val_finish();
}
