/* Validation: exact transposition symmetry of the scheme on a non-square grid.
 *
 * Run A: circular dam break (column of radius 8 m, depth 10 m) on a 61 x 45 grid (dx = 1 m) over
 * an irregular bed, either in 1 m of water or over a dry bed; run B: the same problem with every
 * input raster transposed (B.v[j + i*ny] = A.v[i + j*nx], ncols/nrows swapped, hu0 <-> hv0).
 * After 120 CFL steps B's depth, surface and discharges, transposed, must equal A's bit for bit
 * (h_B^T == h_A, hu_B^T == hv_A, hv_B^T == hu_A), and the times must be identical. Float and
 * double, boundaries all outflow and all wall; each also with the bed rounded to multiples of
 * 1/256 m, where the corner means are exact whatever the summation order (so a failure there
 * points at the fluxes, and a failure only with the smooth bed points at the corner averaging).
 *
 * Tolerance and why: zero. The x and y sweeps of the scheme apply the same operations to mirrored
 * data, so transposing the inputs must give exactly transposed results if the update combines the
 * two directions symmetrically. Any asymmetry (an x-only limiter, a y-flux with the wrong face,
 * a sweep-order dependence, a bed-source misplaced in one direction) shows up as a nonzero
 * difference here long before it is visible in an accuracy test. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analytic.h"

static void get_all(ts_swe *s, double *h, double *hu, double *hv, double *eta) {
  TRY(ts_swe_get(s, TS_SWE_H, h));
  TRY(ts_swe_get(s, TS_SWE_HU, hu));
  TRY(ts_swe_get(s, TS_SWE_HV, hv));
  TRY(ts_swe_get(s, TS_SWE_ETA, eta));
}

/* Compares a[i + j*nx] with b[j + i*ny]: number of cells not bitwise equal, and max |diff|. */
static int64_t cmp_t(const double *a, const double *b, int nx, int ny, double *maxd) {
  int64_t bad = 0;
  *maxd = 0;
  for (int j = 0; j < ny; j++)
    for (int i = 0; i < nx; i++) {
      double x = a[i + (int64_t)j * nx], y = b[j + (int64_t)i * ny];
      if (memcmp(&x, &y, sizeof x) != 0) {
        bad++;
        *maxd = fmax(*maxd, fabs(x - y));
      }
    }
  return bad;
}

static void run_case(ts_precision prec, int dry, ts_bc_type bc, int dyadic) {
  const int nx = 61, ny = 45, nsteps = 120;
  const int64_t n = (int64_t)nx * ny;
  ts_raster bed = val_raster(nx, ny, 1.0, 0, 0), h0 = val_raster(nx, ny, 1.0, 0, 0);
  for (int j = 0; j < ny; j++)
    for (int i = 0; i < nx; i++) {
      double x = val_xc(&bed, i), y = val_yc(&bed, j);
      double r2 = (x - 27.5) * (x - 27.5) + (y - 21.5) * (y - 21.5);
      bed.v[i + j * nx] = 0.3 * sin(x / 5.0) * cos(y / 7.0) + 0.01 * x - 0.004 * y;
      if (dyadic) /* multiples of 1/256: corner and cell means are exact in any summation order */
        bed.v[i + j * nx] = floor(bed.v[i + j * nx] * 256) / 256;
      h0.v[i + j * nx] = r2 < 64 ? 10 : (dry ? 0 : 1);
    }
  ts_raster bedT = val_raster_transpose(&bed), h0T = val_raster_transpose(&h0);
  ts_swe_params p;
  ts_swe_params_default(&p);
  p.precision = prec;
  for (int k = 0; k < 4; k++)
    p.bc[k].type = bc;
  ts_swe *a = NULL, *b = NULL;
  TRY(ts_swe_create(&a, &p, &bed, &h0, NULL, NULL, NULL));
  TRY(ts_swe_create(&b, &p, &bedT, &h0T, NULL, NULL, NULL));
  {
    double *za = malloc(n * sizeof(double)), *zb = malloc(n * sizeof(double)), dz;
    TRY(ts_swe_get(a, TS_SWE_BED, za));
    TRY(ts_swe_get(b, TS_SWE_BED, zb));
    int64_t nz = cmp_t(za, zb, nx, ny, &dz);
    CHECK(nz == 0,
          "%s %s %s%s: scheme bed (corner means) at t=0 symmetric: %lld cells differ, max "
          "|diff| %.3e",
          ts_precision_name(prec), dry ? "dry" : "wet", bc == TS_BC_WALL ? "walls" : "outflow",
          dyadic ? " dyadic-bed" : "", (long long)nz, dz);
    free(za), free(zb);
  }
  val_run_steps(a, nsteps);
  val_run_steps(b, nsteps);
  double *A[4], *B[4];
  for (int k = 0; k < 4; k++)
    A[k] = malloc(n * sizeof(double)), B[k] = malloc(n * sizeof(double));
  get_all(a, A[0], A[1], A[2], A[3]);
  get_all(b, B[0], B[1], B[2], B[3]);
  double dh, dhu, dhv, deta;
  int64_t nh = cmp_t(A[0], B[0], nx, ny, &dh);
  int64_t nhu = cmp_t(A[1], B[2], nx, ny, &dhu); /* hu_A vs hv_B^T */
  int64_t nhv = cmp_t(A[2], B[1], nx, ny, &dhv);
  int64_t neta = cmp_t(A[3], B[3], nx, ny, &deta);
  const char *name = bc == TS_BC_WALL ? (dyadic ? "walls, dyadic bed" : "walls")
                                      : (dyadic ? "outflow, dyadic bed" : "outflow");
  printf("symmetry %-6s %-4s %-7s: t_A = %.17g, t_B = %.17g, wet %lld / %lld\n",
         ts_precision_name(prec), dry ? "dry" : "wet", name, ts_swe_time(a), ts_swe_time(b),
         (long long)ts_swe_wet_cells(a), (long long)ts_swe_wet_cells(b));
  CHECK(ts_swe_time(a) == ts_swe_time(b), "%s %s %s: identical time", ts_precision_name(prec),
        dry ? "dry" : "wet", name);
  CHECK(nh == 0, "%s %s %s: h_B^T == h_A bitwise: %lld cells differ, max |diff| %.3e",
        ts_precision_name(prec), dry ? "dry" : "wet", name, (long long)nh, dh);
  CHECK(nhu == 0, "%s %s %s: hv_B^T == hu_A bitwise: %lld cells differ, max |diff| %.3e",
        ts_precision_name(prec), dry ? "dry" : "wet", name, (long long)nhu, dhu);
  CHECK(nhv == 0, "%s %s %s: hu_B^T == hv_A bitwise: %lld cells differ, max |diff| %.3e",
        ts_precision_name(prec), dry ? "dry" : "wet", name, (long long)nhv, dhv);
  CHECK(neta == 0, "%s %s %s: eta_B^T == eta_A bitwise: %lld cells differ, max |diff| %.3e",
        ts_precision_name(prec), dry ? "dry" : "wet", name, (long long)neta, deta);
  /* the flow must actually be 2D and reach the boundary region for the test to mean anything */
  double qmax = 0;
  for (int64_t c = 0; c < n; c++)
    qmax = fmax(qmax, fmin(fabs(A[1][c]), fabs(A[2][c])));
  CHECK(qmax > 0.1, "%s %s %s: flow is two-dimensional (max min(|hu|,|hv|) = %.3f m2/s)",
        ts_precision_name(prec), dry ? "dry" : "wet", name, qmax);
  for (int k = 0; k < 4; k++)
    free(A[k]), free(B[k]);
  ts_swe_destroy(a), ts_swe_destroy(b);
  val_raster_free(&bed), val_raster_free(&h0), val_raster_free(&bedT), val_raster_free(&h0T);
}

int main(void) {
  for (int prec = 0; prec < 2; prec++)
    for (int dry = 0; dry < 2; dry++)
      for (int bc = 0; bc < 2; bc++)
        for (int dyadic = 0; dyadic < 2; dyadic++)
          run_case(prec ? TS_DOUBLE : TS_FLOAT, dry, bc ? TS_BC_WALL : TS_BC_OUTFLOW, dyadic);
  return val_finish();
}
