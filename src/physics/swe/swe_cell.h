/* Cell-level numerics of the shallow-water scheme, written once for CPU loops and CUDA kernels.
 *
 * Central-upwind fluxes of Kurganov & Petrova (2007) on a bed given at cell corners, generalised
 * minmod reconstruction of the surface w and the discharges, desingularised velocities, and a
 * hydrostatic reconstruction at every face (Audusse et al. 2004) adapted to the continuous corner
 * bed: each side of a face reports its surface w and its implied bed b = w - h (the face bed where
 * the side is wet, its own surface where it is dry), the face uses B* = max(b_L, b_R) and depths
 * h* = max(0, w - B*), and each cell receives the pressure correction g/2 (h^2 - h*^2). This keeps
 * a lake at rest exactly at rest also where the shoreline cuts through cells, which plain KP07
 * does not. Positivity is kept by the caller's outflow limiter ("draining time step").
 *
 * The includer defines ts_real (float or double), TS_REAL_DOUBLE (1 for double) and SWE_SQRT
 * before including this file. */
#ifndef TESSERA_SWE_CELL_H
#define TESSERA_SWE_CELL_H

#include <stdint.h>
#include <string.h>

#include "core/hd.h"

#define SWE_R(x) ((ts_real)(x))

/* One side of a face: surface, implied bed, depth (>= 0), normal and tangential velocity. */
typedef struct swe_side {
  ts_real w, b, h, u, v;
} swe_side;

TS_HD static inline ts_real swe_max(ts_real a, ts_real b) { return a > b ? a : b; }
TS_HD static inline ts_real swe_min(ts_real a, ts_real b) { return a < b ? a : b; }

/* Generalised minmod slope (per cell width) of q from its neighbours, theta in [1,2]. */
TS_HD static inline ts_real swe_slope(ts_real qm, ts_real q0, ts_real qp, ts_real theta) {
  ts_real a = theta * (q0 - qm), b = SWE_R(0.5) * (qp - qm), c = theta * (qp - q0);
  ts_real up = swe_min(a, swe_min(b, c)), down = swe_max(a, swe_max(b, c));
  ts_real slope = SWE_R(0);
  if (a > 0 && b > 0 && c > 0)
    slope = up;
  if (a < 0 && b < 0 && c < 0)
    slope = down;
  return slope;
}

/* Velocity q/h, desingularised below depth kappa (KP07: sqrt(2) h q / sqrt(h^4 + max(h^4,
 * kappa^4))), which equals q/h exactly wherever h >= kappa, so thin flows keep their speed. */
TS_HD_INLINE static inline ts_real swe_velocity(ts_real q, ts_real h, ts_real kappa) {
  /* conditional assignments, no early return: the CPU's compiler turns them into selects across
   * a SIMD row, the GPU's into branches (a zero dividend skips the division's slow path there) */
  ts_real u = q;
  if (q != 0) {
    /* one division for both forms (the same bits as q / h, or as sqrt(2) h q / sqrt(..)):
     * across a SIMD row both forms are computed, and the second division cost every lane */
    ts_real h2 = h * h, k2 = kappa * kappa;
    int deep = h >= kappa;
    ts_real num = deep ? q : SWE_R(1.4142135623730951) * h * q;
    ts_real den = deep ? h : SWE_SQRT(h2 * h2 + k2 * k2);
    u = num / den;
  }
  return u;
}

/* Face velocity q/h (desingularised), kept within [lo, hi]: the range of the velocities of the
 * three cells of the stencil and zero. A thin face next to a shoreline cannot produce a speed the
 * cells do not have, which would shrink the time step for nothing. */
TS_HD static inline ts_real swe_face_velocity(ts_real q, ts_real h, ts_real kappa, ts_real lo,
                                              ts_real hi) {
  return swe_min(hi, swe_max(lo, swe_velocity(q, h, kappa)));
}

/* Smallest and largest of three velocities and zero. */
TS_HD static inline void swe_velocity_range(const ts_real u[3], ts_real *lo, ts_real *hi) {
  *lo = swe_min(SWE_R(0), swe_min(u[0], swe_min(u[1], u[2])));
  *hi = swe_max(SWE_R(0), swe_max(u[0], swe_max(u[1], u[2])));
}

/* Reconstructs the two sides of cell i along one axis from cells (m, i, p): surface w, normal
 * and tangential discharges qn, qt and the cells' velocities u, v; bed_lo and bed_hi are the
 * cell's bed at its two faces. A dry cell (h <= 0) reports zero depth with its own surface as the
 * bed. */
TS_HD_INLINE static inline void swe_reconstruct(const ts_real w[3], const ts_real h[3],
                                                const ts_real qn[3], const ts_real qt[3],
                                                const ts_real u[3], const ts_real v[3],
                                                ts_real bed_lo, ts_real bed_hi, ts_real theta,
                                                ts_real kappa, swe_side *lo, swe_side *hi) {
  ts_real half = SWE_R(0.5);
  ts_real sw = half * swe_slope(w[0], w[1], w[2], theta);
  ts_real sn = half * swe_slope(qn[0], qn[1], qn[2], theta);
  ts_real st = half * swe_slope(qt[0], qt[1], qt[2], theta);
  ts_real w_lo = w[1] - sw, w_hi = w[1] + sw;
  ts_real h_lo = swe_max(SWE_R(0), w_lo - bed_lo), h_hi = swe_max(SWE_R(0), w_hi - bed_hi);
  ts_real ulo, uhi, vlo, vhi;
  swe_velocity_range(u, &ulo, &uhi);
  swe_velocity_range(v, &vlo, &vhi);
  ts_real u_lo = swe_face_velocity(qn[1] - sn, h_lo, kappa, ulo, uhi);
  ts_real u_hi = swe_face_velocity(qn[1] + sn, h_hi, kappa, ulo, uhi);
  ts_real v_lo = swe_face_velocity(qt[1] - st, h_lo, kappa, vlo, vhi);
  ts_real v_hi = swe_face_velocity(qt[1] + st, h_hi, kappa, vlo, vhi);
  /* a dry cell: zero depth and velocities, its own surface as the bed (selects, not a branch:
   * the CPU computes a SIMD row of cells at once) */
  int wet = h[1] > 0;
  lo->w = wet ? w_lo : w[1];
  hi->w = wet ? w_hi : w[1];
  lo->b = wet ? w_lo - h_lo : w[1];
  hi->b = wet ? w_hi - h_hi : w[1];
  lo->h = wet ? h_lo : SWE_R(0);
  hi->h = wet ? h_hi : SWE_R(0);
  lo->u = wet ? u_lo : SWE_R(0);
  hi->u = wet ? u_hi : SWE_R(0);
  lo->v = wet ? v_lo : SWE_R(0);
  hi->v = wet ? v_hi : SWE_R(0);
}

/* Central-upwind flux through a face between sides L and R (normal axis first). Writes the flux
 * of (w, normal discharge, tangential discharge), the pressure corrections of the left and right
 * cells (to be added to their momentum flux at this face) and the largest wave speed. */
TS_HD_INLINE static inline void swe_face_flux(swe_side L, swe_side R, ts_real g, ts_real flux[3],
                                              ts_real *corr_left, ts_real *corr_right,
                                              ts_real *speed) {
  ts_real half_g = SWE_R(0.5) * g;
  ts_real bstar = swe_max(L.b, R.b);
  ts_real hl = swe_max(SWE_R(0), L.w - bstar), hr = swe_max(SWE_R(0), R.w - bstar);
  *corr_left = half_g * (L.h * L.h - hl * hl);
  *corr_right = half_g * (R.h * R.h - hr * hr);
  ts_real cl = SWE_SQRT(g * hl), cr = SWE_SQRT(g * hr);
  ts_real ap = swe_max(swe_max(L.u + cl, R.u + cr), SWE_R(0));
  ts_real am = swe_min(swe_min(L.u - cl, R.u - cr), SWE_R(0));
  ts_real ql = hl * L.u, qr = hr * R.u;
  ts_real fl[3] = {ql, ql * L.u + half_g * hl * hl, ql * L.v};
  ts_real fr[3] = {qr, qr * R.u + half_g * hr * hr, qr * R.v};
  ts_real ul[3] = {hl, ql, hl * L.v}, ur[3] = {hr, qr, hr * R.v};
  ts_real inv = SWE_R(1) / (ap - am), apam = ap * am;
  /* no water crosses: zero flux whatever the (meaningless) velocities of the sides (a select:
   * the CPU computes a SIMD row of faces at once) */
  int crosses = (L.w - bstar > 0) | (R.w - bstar > 0); /* hl > 0 or hr > 0 (NaN too) */
  *speed = crosses ? swe_max(ap, -am) : SWE_R(0);
  for (int c = 0; c < 3; c++)
    flux[c] = crosses ? (ap * fl[c] - am * fr[c]) * inv + apam * inv * (ur[c] - ul[c]) : SWE_R(0);
}

/* Well-balanced bed-slope source of the normal discharge of a cell from its two sides along one
 * axis (KP07 centred term with the implied beds), per unit length of the axis times dx. */
TS_HD static inline ts_real swe_bed_source(swe_side lo, swe_side hi, ts_real g) {
  return -g * SWE_R(0.5) * (lo.h + hi.h) * (hi.b - lo.b);
}

/* Cube root of x >= 0 from integer and IEEE +, -, * operations alone, so that the CPU loops and
 * the CUDA kernels compute the same bits (the C library's cbrt and CUDA's differ in the last bit
 * for some arguments, and a run's chaos makes that a different flood): x^(-1/3) guessed from the
 * bits of x (SWE_CBRT_GUESS minus a third of them: within 4 %), three Newton steps in float or
 * four in double (no division), then x r^2. Within 4 ulp of the exact root; 0 below the smallest
 * normal number and for NaN. */
#if TS_REAL_DOUBLE
typedef uint64_t swe_real_bits;
#define SWE_CBRT_GUESS 0x553f09fc49d9b000ull
#define SWE_CBRT_STEPS 4
#define SWE_REAL_MIN 2.2250738585072014e-308
#define SWE_REAL_MAX 1.7976931348623157e308
#else
typedef uint32_t swe_real_bits;
#define SWE_CBRT_GUESS 0x54a2fa8cu
#define SWE_CBRT_STEPS 3
#define SWE_REAL_MIN 1.17549435e-38f
#define SWE_REAL_MAX 3.40282347e38f
#endif
TS_HD_INLINE static inline ts_real swe_cbrt(ts_real x) {
  if (!(x >= SWE_REAL_MIN) || x > SWE_REAL_MAX)
    return x >= SWE_REAL_MIN ? x : 0;
  swe_real_bits bits;
  memcpy(&bits, &x, sizeof bits);
  bits = SWE_CBRT_GUESS - bits / 3;
  ts_real r;
  memcpy(&r, &bits, sizeof r);
  for (int n = 0; n < SWE_CBRT_STEPS; n++)
    r = r + r * ((SWE_R(1) - x * r * r * r) * SWE_R(1.0 / 3.0));
  return x * r * r;
}

/* Semi-implicit friction factor 1 / (1 + dt * cf): Manning cf = g n^2 |u| / h^(4/3), Chezy
 * cf = g |u| / (C^2 h). kind: 0 none, 1 Manning, 2 Chezy. */
TS_HD_INLINE static inline ts_real swe_friction_factor(int kind, ts_real coeff, ts_real h,
                                                       ts_real speed, ts_real g, ts_real dt) {
  if (kind == 0 || !(h > 0) || coeff <= 0)
    return SWE_R(1);
  ts_real scale = kind == 1 ? h * swe_cbrt(h) / (coeff * coeff) : coeff * coeff * h;
  if (!(scale > 0))
    return SWE_R(0); /* a film so thin that h^(4/3) underflows holds no momentum */
  return SWE_R(1) / (SWE_R(1) + dt * (g * speed / scale));
}

#endif
