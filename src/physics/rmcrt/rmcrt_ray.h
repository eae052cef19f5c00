/* One ray of reverse Monte Carlo ray tracing (RMCRT), written once for CPU loops and CUDA
 * kernels. A ray leaves a cell (its centre, or a point jittered in it) in a direction uniform on
 * the sphere, drawn from Random123's Philox counter-based generator keyed by (seed, time step)
 * with the counter (cell's global index, ray, draw): the same numbers on every device and under
 * every split. It marches the grid by a 3D DDA (exact cell crossings), gathering the intensity
 * each crossed cell emits, S = sigma T^4 / pi, attenuated by the optical depth between it and the
 * origin, until it leaves the domain (the wall adds its emissive power x the transmissivity left)
 * or its transmissivity falls below the threshold. Non-scattering grey medium.
 *
 * Only +, -, *, / and sqrt reach the result (the exponential is ours, rmcrt_exp), each correctly
 * rounded on both devices when fused multiply-add is off, so the GPU computes the CPU's bits. */
#ifndef TESSERA_RMCRT_RAY_H
#define TESSERA_RMCRT_RAY_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include <Random123/philox.h>
#include <Random123/u01fixedpt.h>

#include "core/hd.h"

/* What a ray reads: the grid; per cell, its absorption coefficient (1/m) and emitted intensity
 * S = sigma T^4 / pi (W/m2/sr) side by side in single precision (one memory sector per crossing),
 * cells indexed i + n0 (j + n1 k); the walls' emitted intensity eps sigma T^4 / pi per face
 * (west, east, south, north, bottom, top: -x, +x, -y, +y, -z, +z). The march itself is in double
 * precision. */
typedef struct rmcrt_medium {
  int n[3];
  double dx[3];
  const float *cells; /* kappa, S of cell c at 2c, 2c + 1 */
  double wall[6];
  double threshold; /* a ray stops when its transmissivity falls below it */
  uint32_t seed, step;
  int jitter; /* origins jittered in the cell (else its centre) */
  int lhs;    /* directions Latin-hypercube stratified over the cell's rays (else independent) */
  int rays;   /* rays per cell (the strata of lhs) */
  /* The coarse level of the data onion (ratio > 1): nc = n / ratio cells of dxc = ratio x dx,
   * each the mean kappa and S of its fine cells, in the same layout as cells. A ray marches the
   * fine cells within roi cells of its own cell (per axis), then the coarse level. */
  int ratio, roi;
  int nc[3];
  double dxc[3];
  const float *coarse;
} rmcrt_medium;

/* e^x for x <= 0 (0 from -708 down, where it would leave the normal range): x = k ln 2 + r,
 * |r| <= ln2 / 2, e^r by its Taylor series to r^13 (truncated below 2e-16 on that range; within
 * 5e-16 of the C library's with rounding, validation.rmcrt), summed by Estrin's scheme (pairs of
 * terms combined with r^2, r^4, r^8: a chain of 8 dependent operations where Horner's has 26; 4 %
 * more rays per second on an H100), times 2^k built from its exponent bits (exact). */
TS_HD static inline double rmcrt_exp(double x) {
  if (!(x > -708.0))
    return 0.0;
  double k = floor(x * 1.4426950408889634 + 0.5);
  double r = (x - k * 6.93147180369123816490e-01) - k * 1.90821492927058770002e-10;
  double r2 = r * r, r4 = r2 * r2, r8 = r4 * r4;
  double p = (1.0 + r) + r2 * (0.5 + r * (1.0 / 6.0)) +
             r4 * ((1.0 / 24.0 + r * (1.0 / 120.0)) + r2 * (1.0 / 720.0 + r * (1.0 / 5040.0))) +
             r8 * ((1.0 / 40320.0 + r * (1.0 / 362880.0)) +
                   r2 * (1.0 / 3628800.0 + r * (1.0 / 39916800.0)) +
                   r4 * (1.0 / 479001600.0 + r * (1.0 / 6227020800.0)));
  uint64_t bits = (uint64_t)((int64_t)k + 1023) << 52;
  double scale;
  memcpy(&scale, &bits, sizeof scale);
  return p * scale;
}

/* Four uniform numbers in (0, 1) for draw `draw` of ray `ray` of cell `cell`. */
TS_HD static inline void rmcrt_uniform4(const rmcrt_medium *m, int64_t cell, int ray, int draw,
                                        double u[4]) {
  philox4x32_ctr_t ctr = {
      {(uint32_t)cell, (uint32_t)((uint64_t)cell >> 32), (uint32_t)ray, (uint32_t)draw}};
  philox4x32_key_t key = {{m->seed, m->step}};
  philox4x32_ctr_t x = philox4x32(ctr, key);
  for (int k = 0; k < 4; k++)
    u[k] = u01fixedpt_open_open_32_double(x.v[k]);
}

/* cos and sin of 2 pi t for t in [0, 1): the quadrant from t (exact), then the Taylor series of
 * the angle left (below pi/2) to degree 23 (error below 1e-17): only +, - and *, so both
 * devices compute the same bits. */
TS_HD static inline void rmcrt_cos_sin_turn(double t, double *c, double *s) {
  double q = floor(4.0 * t), a = (4.0 * t - q) * 1.57079632679489661923, a2 = a * a;
  double sn = 1.0, cs = 1.0;
  for (int k = 22; k >= 2; k -= 2) { /* a - a^3/3! + ... and 1 - a^2/2! + ... by Horner */
    sn = 1.0 - a2 / ((double)k * (k + 1)) * sn;
    cs = 1.0 - a2 / ((double)(k - 1) * k) * cs;
  }
  sn *= a;
  int quadrant = (int)q;
  *c = quadrant == 0 ? cs : quadrant == 1 ? -sn : quadrant == 2 ? -cs : sn;
  *s = quadrant == 0 ? sn : quadrant == 1 ? cs : quadrant == 2 ? -sn : -cs;
}

/* A random permutation of [0, n) at x, keyed by key: a 4-round Feistel network on the smallest
 * even number of bits that holds n, walked until it lands below n (integer operations only). */
TS_HD static inline uint32_t rmcrt_permute(uint32_t x, uint32_t n, uint32_t key) {
  int bits = 2;
  while ((1u << bits) < n)
    bits += 2;
  uint32_t half = (uint32_t)bits / 2, mask = (1u << half) - 1;
  do {
    uint32_t l = x >> half, r = x & mask;
    for (uint32_t round = 0; round < 4; round++) {
      uint32_t f = (r ^ key ^ (round * 0x9e3779b9u)) * 0x85ebca6bu;
      f ^= f >> 13;
      f *= 0xc2b2ae35u;
      f ^= f >> 16;
      uint32_t next = l ^ (f & mask);
      l = r;
      r = next;
    }
    x = l << half | r;
  } while (x >= n);
  return x;
}

/* The direction (unit vector, uniform on the sphere) and origin (in the cell) of a ray. Random
 * sampling: Marsaglia's method (a point drawn in the unit disc until one falls inside). Latin
 * hypercube (lhs): z = 1 - 2 u and azimuth 2 pi v (an equal-area map of the unit square), with
 * u in stratum `ray` and v in stratum perm(ray) of the cell's `rays` strata, perm a random
 * permutation per cell, and a uniform point inside each stratum. */
TS_HD static inline void rmcrt_ray_start(const rmcrt_medium *m, int64_t cell, int ray,
                                         const int c[3], double dir[3], double origin[3]) {
  double u[4];
  if (m->lhs) {
    rmcrt_uniform4(m, cell, 1 << 30 | 1, 0, u); /* the cell's permutation */
    uint32_t key = (uint32_t)(u[0] * 4294967296.0);
    uint32_t strata = (uint32_t)m->rays, other = rmcrt_permute((uint32_t)ray, strata, key);
    rmcrt_uniform4(m, cell, ray, 0, u);
    double a = ((double)ray + u[0]) / strata, b = ((double)other + u[1]) / strata;
    double z = 1.0 - 2.0 * a, rho = 2.0 * sqrt(a * (1.0 - a)), cs, sn;
    rmcrt_cos_sin_turn(b, &cs, &sn);
    dir[0] = rho * cs;
    dir[1] = rho * sn;
    dir[2] = z;
  } else {
    double s = 2.0;
    for (int draw = 0; !(s < 1.0); draw++) {
      rmcrt_uniform4(m, cell, ray, draw, u);
      double a = 2.0 * u[0] - 1.0, b = 2.0 * u[1] - 1.0;
      s = a * a + b * b;
      if (s < 1.0) {
        double root = 2.0 * sqrt(1.0 - s);
        dir[0] = a * root;
        dir[1] = b * root;
        dir[2] = 1.0 - 2.0 * s;
      }
    }
  }
  double off[3] = {0.5, 0.5, 0.5};
  if (m->jitter) {
    rmcrt_uniform4(m, cell, ray, 1 << 30, u);
    off[0] = u[0], off[1] = u[1], off[2] = u[2];
  }
  for (int a = 0; a < 3; a++)
    origin[a] = (c[a] + off[a]) * m->dx[a];
}

/* The medium of one cell: its absorption and emitted intensity (on a GPU one 8-byte load; the
 * medium is 8-byte aligned. Through __ldg the tracing kernel took 128 registers instead of 78 and
 * ran slower). */
TS_HD static inline void rmcrt_load_cell(const float *cells, int64_t cell, float *kappa,
                                         float *source) {
#if defined(__CUDA_ARCH__)
  float2 v = ((const float2 *)cells)[cell];
  *kappa = v.x;
  *source = v.y;
#else
  *kappa = cells[2 * cell];
  *source = cells[2 * cell + 1];
#endif
}

/* The DDA's state for cell c of size dx on the ray origin + t dir: the step per axis, the t at
 * which the ray leaves the cell along each axis, and the t it takes to cross a cell. */
TS_HD static inline void rmcrt_dda_start(const int c[3], const double dx[3], const double dir[3],
                                         const double origin[3], int step[3], double t_max[3],
                                         double t_delta[3]) {
  for (int a = 0; a < 3; a++) {
    if (dir[a] > 0) {
      step[a] = 1;
      t_max[a] = ((c[a] + 1) * dx[a] - origin[a]) / dir[a];
      t_delta[a] = dx[a] / dir[a];
    } else if (dir[a] < 0) {
      step[a] = -1;
      t_max[a] = (c[a] * dx[a] - origin[a]) / dir[a];
      t_delta[a] = -dx[a] / dir[a];
    } else {
      step[a] = 0;
      t_max[a] = INFINITY;
      t_delta[a] = INFINITY;
    }
  }
}

/* The intensity gathered by one ray from cell c (and the cells it crossed, added to *crossed).
 * With a coarse level the ray leaves the fine cells where it leaves the region of interest (the
 * fine cells within roi of c0 per axis) and goes on through the coarse cells holding it. */
TS_HD static inline double rmcrt_trace(const rmcrt_medium *m, const int c0[3], const double dir[3],
                                       const double origin[3], int64_t *crossed) {
  int c[3] = {c0[0], c0[1], c0[2]}, step[3], n[3] = {m->n[0], m->n[1], m->n[2]}, lo[3], hi[3];
  double t_max[3], t_delta[3];
  const float *cells = m->cells;
  for (int a = 0; a < 3; a++) { /* the whole grid on one level */
    lo[a] = m->ratio > 1 && c0[a] - m->roi > 0 ? c0[a] - m->roi : 0;
    hi[a] = m->ratio > 1 && c0[a] + m->roi < n[a] - 1 ? c0[a] + m->roi : n[a] - 1;
  }
  rmcrt_dda_start(c, m->dx, dir, origin, step, t_max, t_delta);
  double t = 0, transmissivity = 1, intensity = 0;
  int64_t n0 = n[0], n01 = (int64_t)n[0] * n[1], crossings = 0;
  int fine = m->ratio > 1; /* on the fine level of two: may leave the region of interest */
  for (;;) {
    int a = t_max[0] <= t_max[1] ? (t_max[0] <= t_max[2] ? 0 : 2) : (t_max[1] <= t_max[2] ? 1 : 2);
    int64_t cell = c[0] + n0 * c[1] + n01 * c[2];
    double length = t_max[a] - t; /* >= 0; a coarse cell entered mid-way may round below */
    length = length > 0 ? length : 0;
    float kappa, source;
    rmcrt_load_cell(cells, cell, &kappa, &source);
    double after = transmissivity * rmcrt_exp(-(double)kappa * length);
    intensity += (double)source * (transmissivity - after);
    transmissivity = after;
    crossings++;
    t = t_max[a];
    t_max[a] += t_delta[a];
    c[a] += step[a];
    if (c[a] < 0 || c[a] >= n[a]) {
      intensity += m->wall[2 * a + (step[a] > 0)] * transmissivity;
      break;
    }
    if (transmissivity < m->threshold)
      break;
    if (fine && (c[a] < lo[a] || c[a] > hi[a])) { /* leaves the region of interest */
      fine = 0;
      cells = m->coarse;
      for (int b = 0; b < 3; b++) {
        c[b] /= m->ratio;
        n[b] = m->nc[b];
      }
      n0 = n[0], n01 = (int64_t)n[0] * n[1];
      rmcrt_dda_start(c, m->dxc, dir, origin, step, t_max, t_delta);
    }
  }
  *crossed += crossings;
  return intensity;
}

/* divQ of cell c (W/m3, positive: net emission) from `rays` rays: 4 pi kappa (S - mean I). */
TS_HD static inline double rmcrt_cell_divq(const rmcrt_medium *m, const int c[3], int rays,
                                           int64_t *crossed) {
  int64_t cell = c[0] + (int64_t)m->n[0] * (c[1] + (int64_t)m->n[1] * c[2]);
  double sum = 0;
  for (int ray = 0; ray < rays; ray++) {
    double dir[3], origin[3];
    rmcrt_ray_start(m, cell, ray, c, dir, origin);
    sum += rmcrt_trace(m, c, dir, origin, crossed);
  }
  double kappa = m->cells[2 * cell], source = m->cells[2 * cell + 1];
  return 4.0 * 3.14159265358979323846 * kappa * (source - sum / rays);
}

#endif
