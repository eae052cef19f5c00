/* Transfers of the shallow-water state between two levels of a block-uniform quadtree grid
 * (tessera/buq.h), written once for CPU loops and CUDA kernels: a coarse cell covers four finer
 * children (child k at (k & 1, k >> 1) in x, y), and the coarse cell's bed is the mean of its
 * children's beds (the conservative average of the DEM).
 *
 * - Restriction (fine to coarse): the mean depth and discharges of the children; the surface is
 *   the coarse bed plus that depth. Volume and momentum are kept exactly (up to rounding).
 * - Prolongation (coarse to fine): where the coarse cell's surface, with its slopes (generalised
 *   minmod over its neighbours, as the scheme reconstructs), lies above every child's bed, each
 *   child gets that linear surface at its centre and the discharges' linear values (their offsets
 *   cancel: volume and momentum kept). Where it does not (a shoreline inside the cell), the
 *   children get the level eta that holds the coarse volume over their beds, sum max(0, eta -
 *   b_k) = 4 h, and the coarse velocity: positive depths, volume and momentum kept, and a lake
 *   at rest restricted and prolongated comes back at rest (its children wet to eta, the others
 *   dry) up to rounding.
 *
 * The includer defines ts_real (float or double) and TS_REAL_DOUBLE before including this file. */
#ifndef TESSERA_SWE_LEVELS_H
#define TESSERA_SWE_LEVELS_H

#include "core/hd.h"
#include "physics/swe/swe_cell.h"

/* A coarse cell from its four children: depths h, discharges hu, hv and beds b (out: the coarse
 * depth, discharges and bed). */
TS_HD static inline void swe_restrict(const ts_real h[4], const ts_real hu[4], const ts_real hv[4],
                                      const ts_real b[4], ts_real *hc, ts_real *huc, ts_real *hvc,
                                      ts_real *bc) {
  ts_real quarter = SWE_R(0.25);
  *hc = quarter * ((h[0] + h[1]) + (h[2] + h[3]));
  *huc = quarter * ((hu[0] + hu[1]) + (hu[2] + hu[3]));
  *hvc = quarter * ((hv[0] + hv[1]) + (hv[2] + hv[3]));
  *bc = quarter * ((b[0] + b[1]) + (b[2] + b[3]));
}

/* The level eta at which water of volume 4 h (h >= 0, per child area) fills four cells of beds
 * b: sum over k of max(0, eta - b_k) = 4 h. With the beds sorted, the water covers the m lowest
 * where eta = (4 h + their beds' sum) / m stays at or below the next bed. */
TS_HD static inline ts_real swe_fill_level(const ts_real b[4], ts_real h) {
  ts_real s[4] = {b[0], b[1], b[2], b[3]};
  for (int i = 1; i < 4; i++) /* insertion sort of four */
    for (int j = i; j > 0 && s[j - 1] > s[j]; j--) {
      ts_real t = s[j];
      s[j] = s[j - 1];
      s[j - 1] = t;
    }
  ts_real volume = SWE_R(4) * h, beds = SWE_R(0), eta = s[0];
  for (int m = 1; m <= 4; m++) {
    beds += s[m - 1];
    eta = (volume + beds) / (ts_real)m;
    if (m == 4 || eta <= s[m])
      break;
  }
  return eta;
}

/* The four children of a coarse cell from its state and its neighbours' surfaces and discharges
 * along x (index 0: west, 1: the cell, 2: east) and y (0: south, 1: the cell, 2: north): coarse
 * depth hc, the children's beds b (whose mean is the coarse bed), theta of the minmod limiter.
 * Writes the children's depths, discharges and surfaces. */
TS_HD static inline void swe_prolong(ts_real hc, const ts_real wx[3], const ts_real wy[3],
                                     const ts_real hux[3], const ts_real huy[3],
                                     const ts_real hvx[3], const ts_real hvy[3], const ts_real b[4],
                                     ts_real theta, ts_real h[4], ts_real hu[4], ts_real hv[4],
                                     ts_real w[4]) {
  ts_real quarter = SWE_R(0.25);
  ts_real swx = quarter * swe_slope(wx[0], wx[1], wx[2], theta);
  ts_real swy = quarter * swe_slope(wy[0], wy[1], wy[2], theta);
  int wet = hc > 0;
  for (int k = 0; k < 4 && wet; k++) {
    ts_real sx = (k & 1) ? SWE_R(1) : SWE_R(-1), sy = (k >> 1) ? SWE_R(1) : SWE_R(-1);
    w[k] = wx[1] + sx * swx + sy * swy;
    wet = w[k] > b[k];
  }
  if (wet) { /* the linear surface over every child's bed */
    ts_real sux = quarter * swe_slope(hux[0], hux[1], hux[2], theta);
    ts_real suy = quarter * swe_slope(huy[0], huy[1], huy[2], theta);
    ts_real svx = quarter * swe_slope(hvx[0], hvx[1], hvx[2], theta);
    ts_real svy = quarter * swe_slope(hvy[0], hvy[1], hvy[2], theta);
    for (int k = 0; k < 4; k++) {
      ts_real sx = (k & 1) ? SWE_R(1) : SWE_R(-1), sy = (k >> 1) ? SWE_R(1) : SWE_R(-1);
      h[k] = w[k] - b[k];
      hu[k] = hux[1] + sx * sux + sy * suy;
      hv[k] = hvx[1] + sx * svx + sy * svy;
    }
    return;
  }
  /* a shoreline inside the cell: the level that holds its volume, the coarse velocity */
  ts_real eta = swe_fill_level(b, hc);
  ts_real u = hc > 0 ? hux[1] / hc : SWE_R(0), v = hc > 0 ? hvx[1] / hc : SWE_R(0);
  for (int k = 0; k < 4; k++) {
    h[k] = swe_max(SWE_R(0), eta - b[k]);
    w[k] = b[k] + h[k];
    hu[k] = u * h[k];
    hv[k] = v * h[k];
  }
}

#endif
