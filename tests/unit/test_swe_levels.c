/* The shallow-water state between two levels of a quadtree grid (src/physics/swe/swe_levels.h),
 * in double precision, over 100000 random coarse cells and their neighbours:
 *  1. Restriction then prolongation keeps each coarse cell's volume and momentum to rounding
 *     (relative 1e-13 of the depth and discharge scales), wet or with a shoreline inside, and
 *     never makes a negative depth.
 *  2. A lake at rest (surface eta0) over random beds, some children above eta0 (a shoreline in
 *     the cell) or all below, restricted and prolongated: the wet children come back with
 *     surface eta0 and the dry ones dry, at rest, to 1e-12 of eta0.
 *  3. A linear surface and linear discharges over fully wet cells come back exact at the
 *     children's centres (the limited slopes of a linear field are its slopes).
 *  4. The fill level against bisection: sum max(0, eta - b_k) = 4 h to 1e-12. */
#include <math.h>
#include <stdlib.h>

typedef double ts_real;
#define TS_REAL_DOUBLE 1
#define SWE_SQRT sqrt
#include "physics/swe/swe_levels.h"
#include "unit/check.h"

static double uniform(double lo, double hi) { return lo + (hi - lo) * (rand() / (double)RAND_MAX); }

/* The children of coarse cell (x, y) (centre at x, y, width 2) from fields of position. */
static void children_of(double x, double y, double (*bed)(double, double), double b[4]) {
  for (int k = 0; k < 4; k++)
    b[k] = bed(x + ((k & 1) ? 0.5 : -0.5), y + ((k >> 1) ? 0.5 : -0.5));
}

static double plane_a, plane_b, plane_c;
static double plane(double x, double y) { return plane_a + plane_b * x + plane_c * y; }

int main(void) {
  srand(7);
  const double theta = 1.3;
  double worst_volume = 0, worst_momentum = 0, min_depth = 0;
  for (int n = 0; n < 100000; n++) {
    double b[4], h[4], hu[4], hv[4], hc, huc, hvc, bc;
    for (int k = 0; k < 4; k++) {
      b[k] = uniform(-1, 1);
      h[k] = n % 3 == 0 && k == n % 4 ? 0 : uniform(0, 2);
      hu[k] = uniform(-1, 1) * h[k], hv[k] = uniform(-1, 1) * h[k];
    }
    swe_restrict(h, hu, hv, b, &hc, &huc, &hvc, &bc);
    double w = bc + hc, wx[3] = {w + uniform(-0.5, 0.5), w, w + uniform(-0.5, 0.5)};
    double wy[3] = {w + uniform(-0.5, 0.5), w, w + uniform(-0.5, 0.5)};
    double hux[3] = {uniform(-1, 1), huc, uniform(-1, 1)}, huy[3] = {uniform(-1, 1), huc, 0};
    double hvx[3] = {0, hvc, uniform(-1, 1)}, hvy[3] = {uniform(-1, 1), hvc, uniform(-1, 1)};
    double ch[4], chu[4], chv[4], cw[4];
    swe_prolong(hc, wx, wy, hux, huy, hvx, hvy, b, theta, ch, chu, chv, cw);
    double sh = 0, su = 0, sv = 0;
    for (int k = 0; k < 4; k++) {
      sh += ch[k], su += chu[k], sv += chv[k];
      min_depth = fmin(min_depth, ch[k]);
    }
    worst_volume = fmax(worst_volume, fabs(sh / 4 - hc) / 2);
    worst_momentum = fmax(worst_momentum, fmax(fabs(su / 4 - huc), fabs(sv / 4 - hvc)) / 2);
  }
  CHECK(worst_volume < 1e-13 && worst_momentum < 1e-13 && min_depth >= 0,
        "restriction then prolongation: volume kept to %.1e, momentum to %.1e (< 1e-13), "
        "smallest depth %g (>= 0)",
        worst_volume, worst_momentum, min_depth);

  double worst_rest = 0;
  int shorelines = 0;
  for (int n = 0; n < 100000; n++) {
    double eta0 = uniform(-0.5, 0.5), b[4], h[4], hu[4] = {0}, hv[4] = {0};
    for (int k = 0; k < 4; k++) {
      b[k] = eta0 + (n % 2 ? uniform(-1, 0.6) : uniform(-1, -0.01));
      h[k] = fmax(0, eta0 - b[k]);
    }
    double hc, huc, hvc, bc;
    swe_restrict(h, hu, hv, b, &hc, &huc, &hvc, &bc);
    double w = bc + hc, same[3] = {w, w, w}, zero[3] = {0, 0, 0};
    double ch[4], chu[4], chv[4], cw[4];
    swe_prolong(hc, same, same, zero, zero, zero, zero, b, theta, ch, chu, chv, cw);
    int dry = 0;
    for (int k = 0; k < 4; k++) {
      dry |= b[k] >= eta0;
      double err = b[k] < eta0 ? fabs(cw[k] - eta0) : ch[k];
      worst_rest = fmax(worst_rest, fmax(err, fmax(fabs(chu[k]), fabs(chv[k]))));
    }
    shorelines += dry && hc > 0;
  }
  CHECK(worst_rest < 1e-12 && shorelines > 10000,
        "a lake at rest (%d cells with a shoreline inside): wet children at eta0 and dry ones dry, "
        "at rest, to %.1e (< 1e-12)",
        shorelines, worst_rest);

  double worst_linear = 0;
  for (int n = 0; n < 10000; n++) {
    double x = uniform(-10, 10), y = uniform(-10, 10), b[4];
    plane_a = uniform(-1, 1), plane_b = uniform(-0.1, 0.1), plane_c = uniform(-0.1, 0.1);
    double depth = uniform(2, 3), qa = uniform(-1, 1), qb = uniform(-0.1, 0.1),
           qc = uniform(-0.1, 0.1);
    children_of(x, y, plane, b); /* a bed parallel to the surface below it */
    double bc = 0.25 * (b[0] + b[1] + b[2] + b[3]);
    double w = plane(x, y) + depth, hc = w - bc;
    double wx[3] = {plane(x - 2, y) + depth, w, plane(x + 2, y) + depth};
    double wy[3] = {plane(x, y - 2) + depth, w, plane(x, y + 2) + depth};
    double q = qa + qb * x + qc * y;
    double hux[3] = {q - 2 * qb, q, q + 2 * qb}, huy[3] = {q - 2 * qc, q, q + 2 * qc};
    double ch[4], chu[4], chv[4], cw[4];
    swe_prolong(hc, wx, wy, hux, huy, hux, huy, b, theta, ch, chu, chv, cw);
    for (int k = 0; k < 4; k++) {
      double cx = x + ((k & 1) ? 0.5 : -0.5), cy = y + ((k >> 1) ? 0.5 : -0.5);
      double qk = qa + qb * cx + qc * cy;
      worst_linear = fmax(worst_linear, fmax(fabs(cw[k] - (plane(cx, cy) + depth)),
                                             fmax(fabs(chu[k] - qk), fabs(chv[k] - qk))));
    }
  }
  CHECK(worst_linear < 1e-12, "linear fields over wet cells come back exact: %.1e (< 1e-12)",
        worst_linear);

  double worst_fill = 0;
  for (int n = 0; n < 10000; n++) {
    double b[4] = {uniform(-1, 1), uniform(-1, 1), uniform(-1, 1), uniform(-1, 1)};
    double h = n % 10 == 0 ? 0 : uniform(0, 1), lo = -2, hi = 10;
    for (int it = 0; it < 200; it++) { /* bisection on the volume */
      double mid = 0.5 * (lo + hi), v = 0;
      for (int k = 0; k < 4; k++)
        v += fmax(0, mid - b[k]);
      if (v < 4 * h)
        lo = mid;
      else
        hi = mid;
    }
    double eta = swe_fill_level(b, h), v = 0;
    for (int k = 0; k < 4; k++)
      v += fmax(0, eta - b[k]);
    worst_fill = fmax(worst_fill, h > 0 ? fabs(eta - lo) : fabs(v));
  }
  CHECK(worst_fill < 1e-12, "the fill level against bisection: %.1e (< 1e-12)", worst_fill);
  return failures != 0;
}
