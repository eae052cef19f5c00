/* Cell-level lattice Boltzmann numerics, written once as TS_HD functions for the CPU loops
 * (lbm_kernels.c) and GPU kernels: the velocity set (D2Q9 with LBM_Q 9, D3Q19 with LBM_Q 19,
 * chosen by the includer), the equilibrium, and the collision of one cell (SRT or TRT, Guo
 * forcing, Smagorinsky). Populations are handled as their deviation from the rest weights
 * (f_q - w_q), which keeps their rounding error small in FP32 and FP16 storage; arithmetic is
 * in float. Directions come in opposite pairs: q and q + 1 for odd q. */
#ifndef TESSERA_LBM_CELL_H
#define TESSERA_LBM_CELL_H

#include <math.h>

#include "core/hd.h"

#if LBM_Q == 19
#define LBM_DIM 3
#elif LBM_Q == 9
#define LBM_DIM 2
#else
#error "LBM_Q must be 9 or 19"
#endif

/* Loops over the directions are unrolled and the small functions below inlined, so that the
 * velocities and weights become constants in the compiled code (no tables). */
#if defined(__CUDA_ARCH__) /* the device pass of nvcc */
#define LBM_UNROLL _Pragma("unroll")
#elif defined(__CUDACC__) /* its host pass: the host code of .cu files does not step nodes */
#define LBM_UNROLL
#else
#define LBM_UNROLL _Pragma("GCC unroll 32")
#endif
#if defined(__CUDACC__)
#define LBM_INLINE __forceinline__
#else
#define LBM_INLINE __attribute__((always_inline)) inline
#endif

/* Component a of the velocity of direction q, packed 2 bits per direction (01: +1, 11: -1):
 * D3Q19 orders the directions 0, +-x, +-y, +-z, +-(1,1,0), +-(1,0,1), +-(0,1,1), +-(1,-1,0),
 * +-(1,0,-1), +-(0,1,-1); D2Q9 0, +-x, +-y, +-(1,1), +-(1,-1). */
TS_HD static LBM_INLINE int lbm_c(int q, int a) {
#if LBM_Q == 19
  unsigned long long bits = a == 0 ? 0x374374034ull : (a == 1 ? 0x341f434340ull : 0x1dc3743400ull);
#else
  unsigned long long bits = a == 0 ? 0x37434ull : (a == 1 ? 0x1f740ull : 0ull);
#endif
  int v = (int)(bits >> (2 * q) & 3u);
  return v == 3 ? -1 : v;
}

TS_HD static LBM_INLINE int lbm_opposite(int q) { return q == 0 ? 0 : (q & 1 ? q + 1 : q - 1); }

/* Weight of direction q. */
TS_HD static LBM_INLINE float lbm_w(int q) {
#if LBM_Q == 19
  return q == 0 ? 1.0f / 3 : (q <= 6 ? 1.0f / 18 : 1.0f / 36);
#else
  return q == 0 ? 4.0f / 9 : (q <= 4 ? 1.0f / 9 : 1.0f / 36);
#endif
}

/* c_q . v, as a sum of the components whose velocity is +-1 (after unrolling the zero terms
 * vanish: 0 * v cannot be dropped from IEEE arithmetic, but it is not written here). */
TS_HD static LBM_INLINE float lbm_cdot(int q, const float v[3]) {
  float s = 0;
  for (int a = 0; a < LBM_DIM; a++) {
    int c = lbm_c(q, a);
    if (c > 0)
      s += v[a];
    else if (c < 0)
      s -= v[a];
  }
  return s;
}

/* The collision model of a run (lattice units). */
typedef struct lbm_model {
  float omega;       /* 1 / tau */
  float omega_minus; /* TRT: the antisymmetric rate from the magic parameter; SRT: omega */
  float tau;
  float smag18; /* 18 sqrt(2) C_s^2 (Smagorinsky) */
  float force[3];
  int trt, smag, forced; /* TRT collision; the Smagorinsky model on; a body force */
} lbm_model;

/* Equilibrium deviation f_q^eq - w_q for density 1 + rho1 and velocity u. */
TS_HD static LBM_INLINE float lbm_feq(int q, float rho1, const float u[3]) {
  float cu = lbm_cdot(q, u), uu = 0;
  for (int a = 0; a < LBM_DIM; a++)
    uu += u[a] * u[a];
  float rho = 1.0f + rho1;
  return lbm_w(q) * (rho1 + rho * (3.0f * cu + 4.5f * cu * cu - 1.5f * uu));
}

/* Density deviation rho - 1 and velocity (with half the body force, Guo) of populations f. */
TS_HD static LBM_INLINE float lbm_moments(const float f[LBM_Q], const float force[3], float u[3]) {
  float rho1 = 0, j[3] = {0, 0, 0};
  LBM_UNROLL
  for (int q = 0; q < LBM_Q; q++) {
    rho1 += f[q];
    for (int a = 0; a < LBM_DIM; a++) {
      int c = lbm_c(q, a);
      if (c > 0)
        j[a] += f[q];
      else if (c < 0)
        j[a] -= f[q];
    }
  }
  float rho = 1.0f + rho1;
  for (int a = 0; a < 3; a++)
    u[a] = a < LBM_DIM ? (j[a] + 0.5f * force[a]) / rho : 0.0f;
  return rho1;
}

/* Relaxes populations f of one cell in place; returns rho - 1 and the velocity in u. */
/* Guo forcing term of direction q: S_q = w_q (3 (c_q - u) + 9 (c_q . u) c_q) . F (0 without a
 * force). */
TS_HD static LBM_INLINE float lbm_source(const lbm_model *m, int q, const float u[3]) {
  float s = 0;
  if (m->forced) {
    float cu = lbm_cdot(q, u);
    for (int a = 0; a < LBM_DIM; a++)
      s += (3.0f * ((float)lbm_c(q, a) - u[a]) + 9.0f * cu * (float)lbm_c(q, a)) * m->force[a];
  }
  return lbm_w(q) * s;
}

/* Relaxes populations f of one cell in place; returns rho - 1 and the velocity in u. The
 * equilibria and sources are formed where they are used (fewer values live at once, which
 * keeps GPU registers free). */
TS_HD static LBM_INLINE float lbm_collide(const lbm_model *m, float f[LBM_Q], float u[3]) {
  float rho1 = lbm_moments(f, m->force, u);
  float omega = m->omega, omega_minus = m->omega_minus;
  if (m->smag) {
    /* the non-equilibrium momentum flux gives the strain rate; tau grows by the eddy viscosity */
    float pi[3][3] = {{0, 0, 0}, {0, 0, 0}, {0, 0, 0}};
    LBM_UNROLL
    for (int q = 0; q < LBM_Q; q++) {
      float neq = f[q] - lbm_feq(q, rho1, u);
      for (int a = 0; a < LBM_DIM; a++)
        for (int b = 0; b < LBM_DIM; b++) {
          int cc = lbm_c(q, a) * lbm_c(q, b);
          if (cc > 0)
            pi[a][b] += neq;
          else if (cc < 0)
            pi[a][b] -= neq;
        }
    }
    float norm = 0;
    for (int a = 0; a < LBM_DIM; a++)
      for (int b = 0; b < LBM_DIM; b++)
        norm += pi[a][b] * pi[a][b];
    float tau = 0.5f * (m->tau + sqrtf(m->tau * m->tau + m->smag18 * sqrtf(norm) / (1.0f + rho1)));
    omega = 1.0f / tau;
    omega_minus = m->trt ? omega_minus : omega;
  }
  if (!m->trt) {
    LBM_UNROLL
    for (int q = 0; q < LBM_Q; q++)
      f[q] += omega * (lbm_feq(q, rho1, u) - f[q]) + (1.0f - 0.5f * omega) * lbm_source(m, q, u);
    return rho1;
  }
  /* TRT: symmetric and antisymmetric parts of each opposite pair relax at their own rates */
  f[0] += omega * (lbm_feq(0, rho1, u) - f[0]) + (1.0f - 0.5f * omega) * lbm_source(m, 0, u);
  LBM_UNROLL
  for (int q = 1; q < LBM_Q; q += 2) {
    float feq0 = lbm_feq(q, rho1, u), feq1 = lbm_feq(q + 1, rho1, u);
    float src0 = lbm_source(m, q, u), src1 = lbm_source(m, q + 1, u);
    float sym = 0.5f * (f[q] + f[q + 1]), anti = 0.5f * (f[q] - f[q + 1]);
    float eq_sym = 0.5f * (feq0 + feq1), eq_anti = 0.5f * (feq0 - feq1);
    float src_sym = 0.5f * (src0 + src1);
    float src_anti = 0.5f * (src0 - src1);
    float d_sym = omega * (eq_sym - sym) + (1.0f - 0.5f * omega) * src_sym;
    float d_anti = omega_minus * (eq_anti - anti) + (1.0f - 0.5f * omega_minus) * src_anti;
    f[q] += d_sym + d_anti;
    f[q + 1] += d_sym - d_anti;
  }
  return rho1;
}

#endif
