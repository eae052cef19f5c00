/* Validation: boundary conditions (outflow, fixed level, inflow hydrograph).
 *
 * 1. Outflow. A 200 m x 4-cell strip (dx = 1 m, h = 1 m still water, outflow at both ends, walls
 *    N/S) starts with a Gaussian hump of 0.1 m in the middle; it splits into two waves that leave
 *    through the ends by t = 60 s (they travel 188 m). Reference: the same hump in a 600 m strip
 *    (walls; the waves are still inside at t = 60). Checks: max |h_short - h_long| over the short
 *    strip < 2e-3 m (2 % of the hump: zero-gradient outflow transmits a simple wave almost
 *    without reflection; a wall reflects it fully, 100 %), and the volume fell by the hump volume
 *    within 5 % (zero-gradient extrapolation lets the passing wave draw the level down slightly:
 *    measured 1.4e-4 m over the strip, 2.2 % of the hump volume; a wall keeps all of it).
 * 2. Fixed level. A 60 x 10 basin (dx = 1 m, bed rising from -1 m at the west to +1 m at the
 *    east, Manning n = 0.03, initially dry) with a level boundary of 0.5 m on the west side and
 *    walls elsewhere. After 300 s the water surface must be flat at the level: max |eta - 0.5| over
 *    wet cells < 5e-3 m; the shoreline reached the cells where the bed is below 0.5 m minus one
 *    cell. A level boundary that does not let water in, or fills to the wrong level, misses this.
 * 3. Inflow. A closed 50 x 20 basin (dx = 1 m, flat bed), inflow q = 1 m3/s spread over the west
 *    side (W = 20 m), walls elsewhere: after 100 s the volume rose by q t = 100 m3 within 1 %.
 *    Wet variant (0.5 m initial water) and dry variant (empty basin). Double. */
#include <math.h>
#include <stdlib.h>

#include "analytic.h"

static void outflow_test(void) {
  const double dx = 1, T = 60, amp = 0.1;
  const int ny = 4, ns = 200, nl = 600;
  double vol_hump = 0;
  ts_swe *s[2];
  for (int k = 0; k < 2; k++) {
    int nx = k ? nl : ns;
    double x0 = k ? -200 : 0;
    ts_raster bed = val_raster(nx, ny, dx, x0, 0), h0 = val_raster(nx, ny, dx, x0, 0);
    for (int j = 0; j < ny; j++)
      for (int i = 0; i < nx; i++) {
        double x = val_xc(&bed, i);
        double bump = amp * exp(-(x - 100) * (x - 100) / 50.0);
        h0.v[i + j * nx] = 1 + bump;
        if (k == 0)
          vol_hump += bump * dx * dx;
      }
    ts_swe_params p;
    ts_swe_params_default(&p);
    p.precision = TS_DOUBLE;
    if (k == 0)
      p.bc[TS_WEST].type = p.bc[TS_EAST].type = TS_BC_OUTFLOW;
    TRY(ts_swe_create(&s[k], &p, &bed, &h0, NULL, NULL, NULL));
    val_raster_free(&bed), val_raster_free(&h0);
  }
  double v0 = ts_swe_volume(s[0]);
  val_run_to(s[0], T, 100000);
  val_run_to(s[1], T, 100000);
  double *hs = malloc(ns * ny * sizeof(double)), *hl = malloc(nl * ny * sizeof(double));
  TRY(ts_swe_get(s[0], TS_SWE_H, hs));
  TRY(ts_swe_get(s[1], TS_SWE_H, hl));
  double md = 0, mdev = 0;
  for (int j = 0; j < ny; j++)
    for (int i = 0; i < ns; i++) {
      md = fmax(md, fabs(hs[i + j * ns] - hl[i + 200 + j * nl]));
      mdev = fmax(mdev, fabs(hs[i + j * ns] - 1));
    }
  double dv = v0 - ts_swe_volume(s[0]);
  printf("outflow: max |h_short - h_long| = %.3e m (max |h - 1| in the short strip %.3e m), volume "
         "lost %.4f m3 of the hump's %.4f m3\n",
         md, mdev, dv, vol_hump);
  CHECK(md < 2e-3, "outflow: no reflection: max |h_short - h_long| = %.3e m < 2e-3 m", md);
  CHECK(fabs(dv - vol_hump) < 0.05 * vol_hump,
        "outflow: volume fell by the hump volume: %.4f vs %.4f m3 (within 5%%)", dv, vol_hump);
  free(hs), free(hl);
  ts_swe_destroy(s[0]), ts_swe_destroy(s[1]);
}

static void level_test(void) {
  const int nx = 60, ny = 10;
  const double level = 0.5, T = 1200; /* the basin seiches for several minutes */
  ts_raster bed = val_raster(nx, ny, 1.0, 0, 0);
  for (int j = 0; j < ny; j++)
    for (int i = 0; i < nx; i++)
      bed.v[i + j * nx] = -1 + 2 * val_xc(&bed, i) / nx;
  ts_swe_params p;
  ts_swe_params_default(&p);
  p.precision = TS_DOUBLE;
  p.friction = TS_FRICTION_MANNING;
  p.friction_value = 0.03;
  p.bc[TS_WEST].type = TS_BC_LEVEL;
  p.bc[TS_WEST].level = level;
  ts_swe *s = NULL;
  TRY(ts_swe_create(&s, &p, &bed, NULL, NULL, NULL, NULL));
  int64_t steps = val_run_to(s, T, 1000000);
  int64_t n = (int64_t)nx * ny;
  double *eta = malloc(n * sizeof(double)), *h = malloc(n * sizeof(double));
  double *zb = malloc(n * sizeof(double));
  TRY(ts_swe_get(s, TS_SWE_ETA, eta));
  TRY(ts_swe_get(s, TS_SWE_H, h));
  TRY(ts_swe_get(s, TS_SWE_BED, zb));
  double me = 0;
  int missing = 0, wet = 0;
  for (int64_t c = 0; c < n; c++) {
    if (h[c] > 1e-3) {
      me = fmax(me, fabs(eta[c] - level));
      wet++;
    }
    if (zb[c] < level - 2.0 / nx * 1.0 && !(h[c] > 1e-3))
      missing++;
  }
  double vexp = 0;
  for (int64_t c = 0; c < n; c++)
    vexp += fmax(0, level - zb[c]);
  printf("level: t = %.0f s (%lld steps): %d wet cells, max |eta - level| = %.3e m, volume %.3f m3 "
         "(flat surface over the bed: %.3f m3)\n",
         T, (long long)steps, wet, me, ts_swe_volume(s), vexp);
  CHECK(me < 5e-3, "level: max |eta - %.2f| over wet cells = %.3e m < 5e-3 m", level, me);
  CHECK(missing == 0,
        "level: all cells with bed below the level (less one cell) are wet: %d missing", missing);
  CHECK(fabs(ts_swe_volume(s) - vexp) < 0.01 * vexp, "level: volume %.3f within 1%% of %.3f m3",
        ts_swe_volume(s), vexp);
  free(eta), free(h), free(zb);
  val_raster_free(&bed);
  ts_swe_destroy(s);
}

static void inflow_test(int dry) {
  const int nx = 50, ny = 20;
  const double T = 100, q = 1;
  const double ht[2] = {0, 1e6}, hq[2] = {q, q};
  ts_raster bed = val_raster(nx, ny, 1.0, 0, 0), h0 = val_raster(nx, ny, 1.0, 0, 0);
  for (int64_t c = 0; c < (int64_t)nx * ny; c++)
    h0.v[c] = dry ? 0 : 0.5;
  ts_swe_params p;
  ts_swe_params_default(&p);
  p.precision = TS_DOUBLE;
  p.bc[TS_WEST].type = TS_BC_INFLOW;
  p.bc[TS_WEST].npoints = 2;
  p.bc[TS_WEST].t = ht;
  p.bc[TS_WEST].q = hq;
  ts_swe *s = NULL;
  TRY(ts_swe_create(&s, &p, &bed, &h0, NULL, NULL, NULL));
  double v0 = ts_swe_volume(s);
  int64_t steps = val_run_to(s, T, 1000000);
  double dv = ts_swe_volume(s) - v0;
  printf("inflow (%s basin): volume increase after %.0f s (%lld steps) = %.4f m3, expected q t = "
         "%.1f m3 (error %.3f %%), min depth %.2e\n",
         dry ? "dry" : "wet", T, (long long)steps, dv, q * T, 100 * (dv - q * T) / (q * T),
         val_min_var(s, TS_SWE_H));
  CHECK(fabs(dv - q * T) < 0.01 * q * T,
        "inflow %s: volume increase %.4f m3 = q t = %.1f m3 within 1%%", dry ? "dry" : "wet", dv,
        q * T);
  ts_swe_destroy(s);
  val_raster_free(&bed), val_raster_free(&h0);
}

int main(void) {
  outflow_test();
  level_test();
  inflow_test(0);
  inflow_test(1);
  return val_finish();
}
