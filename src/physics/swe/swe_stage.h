/* Stage-level numerics of the shallow-water scheme on the arrays of one part: a cell's
 * velocities, its reconstruction along an axis (inactive neighbours mirror it), a face between
 * two cells, a boundary ghost cell, a cell's outflow limiter and speed cap, and a cell's update
 * with friction and compensated summation. Written once, as TS_HD functions, for the CPU loops
 * (swe_kernels.c) and the CUDA kernels (swe_kernels.cu). The includer defines ts_real,
 * TS_REAL_DOUBLE, SWE_SQRT and swe_idx, the type of array indices: int64_t on the CPU, int on the
 * GPU (whose parts are limited to 2^31 elements per array; 32-bit index arithmetic is much cheaper
 * there). */
#ifndef TESSERA_SWE_STAGE_H
#define TESSERA_SWE_STAGE_H

#include <stdint.h>

#include "physics/swe/swe_cell.h"
#include "physics/swe/swe_internal.h"

/* The per-cell arrays of a part (host or device memory), in its padded layout. */
typedef struct swe_arrays {
  ts_real *w, *hu, *hv, *w_carry, *w0, *hu0, *hv0, *u, *v, *char_speed, *speed_cap, *drain;
  const ts_real *corner, *bed, *friction; /* friction: NULL when uniform */
  ts_real *fx[3], *fy[3], *src_x, *src_y;
  const unsigned char *active;
  swe_idx row;
  int start_kept; /* the state at the step's start stays in w0, hu0, hv0 without a copy */
} swe_arrays;

/* Constants of a stage in the working precision. */
typedef struct swe_consts {
  ts_real g, theta, kappa, rdx, rdy, friction_value;
  int friction_kind, rk_order;
} swe_consts;

/* The arrays and constants of a part (host code). */
static inline swe_arrays swe_part_arrays(const swe_part *s) {
  swe_arrays a = {(ts_real *)s->w,
                  (ts_real *)s->hu,
                  (ts_real *)s->hv,
                  (ts_real *)s->w_carry,
                  (ts_real *)s->w0,
                  (ts_real *)s->hu0,
                  (ts_real *)s->hv0,
                  (ts_real *)s->u,
                  (ts_real *)s->v,
                  (ts_real *)s->char_speed,
                  (ts_real *)s->speed_cap,
                  (ts_real *)s->drain,
                  (const ts_real *)s->corner,
                  (const ts_real *)s->bed,
                  (const ts_real *)s->friction,
                  {(ts_real *)s->fx[0], (ts_real *)s->fx[1], (ts_real *)s->fx[2]},
                  {(ts_real *)s->fy[0], (ts_real *)s->fy[1], (ts_real *)s->fy[2]},
                  (ts_real *)s->src_x,
                  (ts_real *)s->src_y,
                  s->active,
                  (swe_idx)s->row,
                  0};
  return a;
}

static inline swe_consts swe_part_consts(const swe_part *s) {
  swe_consts k = {(ts_real)s->p->gravity,
                  (ts_real)s->p->theta,
                  (ts_real)(0.01 * s->p->dry_depth),
                  (ts_real)(1.0 / s->grid.dx[0]),
                  (ts_real)(1.0 / s->grid.dx[1]),
                  (ts_real)s->p->friction_value,
                  (int)s->p->friction,
                  s->p->rk_order};
  return k;
}

/* Velocities and characteristic speed |u| + 2 sqrt(g h) of cell c from its state (zero when
 * dry). */
TS_HD_INLINE static inline void swe_cell_velocity(const swe_arrays *a, const swe_consts *k,
                                                  swe_idx c) {
  ts_real h = a->w[c] - a->bed[c];
  ts_real u = h > 0 ? swe_velocity(a->hu[c], h, k->kappa) : SWE_R(0);
  ts_real v = h > 0 ? swe_velocity(a->hv[c], h, k->kappa) : SWE_R(0);
  a->u[c] = u;
  a->v[c] = v;
  a->char_speed[c] = h > 0 ? SWE_SQRT(u * u + v * v) + SWE_R(2) * SWE_SQRT(k->g * h) : SWE_R(0);
}

/* Reconstructs a cell (index 1 of the arrays) from its values and those of its two neighbours
 * along an axis: activity, surface, bed, normal and tangential discharges and velocities. An
 * inactive neighbour acts as a mirror of the cell (a wall): the cell's values with the normal
 * components reversed. */
TS_HD_INLINE static inline void swe_reconstruct_mirrored(const int act[3], const ts_real w[3],
                                                         const ts_real bed[3], const ts_real qn[3],
                                                         const ts_real qt[3], const ts_real un[3],
                                                         const ts_real ut[3], const swe_consts *k,
                                                         ts_real face_lo, ts_real face_hi,
                                                         swe_side *lo, swe_side *hi) {
  ts_real wv[3], h[3], qnv[3], qtv[3], u[3], v[3];
  for (int n3 = 0; n3 < 3; n3++) {
    int own = n3 == 1 || act[n3];
    ts_real sign = own ? SWE_R(1) : SWE_R(-1);
    wv[n3] = own ? w[n3] : w[1];
    h[n3] = swe_max(SWE_R(0), wv[n3] - (own ? bed[n3] : bed[1]));
    qnv[n3] = sign * (own ? qn[n3] : qn[1]);
    qtv[n3] = own ? qt[n3] : qt[1];
    u[n3] = sign * (own ? un[n3] : un[1]);
    v[n3] = own ? ut[n3] : ut[1];
  }
  swe_reconstruct(wv, h, qnv, qtv, u, v, face_lo, face_hi, k->theta, k->kappa, lo, hi);
}

/* Reconstructs cell c from its stencil along an axis (neighbours `step` apart) in the arrays of
 * the surface, bed, discharges and velocities along (n) and across (t) the axis, with the
 * activity of the cell's neighbours and its own given (act: below, the cell, above; the CPU
 * loops read it as ints ahead, which keeps their vectors narrow); its faces have the beds
 * face_lo and face_hi. Inactive neighbours act as mirrors of the cell (walls). */
TS_HD_INLINE static inline void
swe_reconstruct_stencil(const int act[3], const ts_real *w, const ts_real *bed, const ts_real *qn,
                        const ts_real *qt, const ts_real *un, const ts_real *ut,
                        const swe_consts *k, swe_idx c, swe_idx step, ts_real face_lo,
                        ts_real face_hi, swe_side *lo, swe_side *hi) {
  ts_real wv[3], bv[3], qnv[3], qtv[3], unv[3], utv[3];
  for (int n3 = 0; n3 < 3; n3++) {
    swe_idx cell = c + (n3 - 1) * step;
    wv[n3] = w[cell];
    bv[n3] = bed[cell];
    qnv[n3] = qn[cell];
    qtv[n3] = qt[cell];
    unv[n3] = un[cell];
    utv[n3] = ut[cell];
  }
  swe_reconstruct_mirrored(act, wv, bv, qnv, qtv, unv, utv, k, face_lo, face_hi, lo, hi);
}

/* Reconstructs cell c of `a` along the axis with neighbour offset `step` (1: x, row: y), whose
 * faces have the beds face_lo and face_hi (swe_reconstruct_stencil). */
TS_HD_INLINE static inline void swe_reconstruct_cell(const swe_arrays *a, const swe_consts *k,
                                                     swe_idx c, swe_idx step, int x_axis,
                                                     ts_real face_lo, ts_real face_hi, swe_side *lo,
                                                     swe_side *hi) {
  int act[3] = {a->active[c - step], a->active[c], a->active[c + step]};
  swe_reconstruct_stencil(act, a->w, a->bed, x_axis ? a->hu : a->hv, x_axis ? a->hv : a->hu,
                          x_axis ? a->u : a->v, x_axis ? a->v : a->u, k, c, step, face_lo, face_hi,
                          lo, hi);
}

/* Bed of a face from the beds of its two corners: their mean. */
TS_HD static inline ts_real swe_corner_mean(ts_real a, ts_real b) { return SWE_R(0.5) * (a + b); }

/* Bed of the face between cell c and c + step. */
TS_HD static inline ts_real swe_face_bed(const swe_arrays *a, swe_idx c, swe_idx step,
                                         swe_idx corner_step) {
  return swe_corner_mean(a->corner[c + step], a->corner[c + step + corner_step]);
}

/* Face between cell a (low side) and b (high side); `hi_a` and `lo_b` are their sides. Writes
 * the flux and the pressure corrections; returns the wave speed. */
TS_HD_INLINE static inline ts_real swe_face_between(const swe_consts *k, int act_a, int act_b,
                                                    swe_side hi_a, swe_side lo_b, ts_real flux[3],
                                                    ts_real *corr_a, ts_real *corr_b) {
  /* an inactive side is the mirror of the active one (a wall); selects, not branches, so that
   * the CPU computes a SIMD row of faces at once */
  swe_side left = {act_a ? hi_a.w : lo_b.w, act_a ? hi_a.b : lo_b.b, act_a ? hi_a.h : lo_b.h,
                   act_a ? hi_a.u : -lo_b.u, act_a ? hi_a.v : lo_b.v};
  swe_side right = {act_b ? lo_b.w : hi_a.w, act_b ? lo_b.b : hi_a.b, act_b ? lo_b.h : hi_a.h,
                    act_b ? lo_b.u : -hi_a.u, act_b ? lo_b.v : hi_a.v};
  ts_real speed;
  swe_face_flux(left, right, k->g, flux, corr_a, corr_b, &speed);
  int any = act_a || act_b;
  for (int c = 0; c < 3; c++)
    flux[c] = any ? flux[c] : SWE_R(0);
  *corr_a = any ? *corr_a : SWE_R(0);
  *corr_b = any ? *corr_b : SWE_R(0);
  return any ? speed : SWE_R(0);
}

/* Ghost cell g of an open side copies interior cell `in`: depth, discharges, surface over its
 * own bed. A level side fixes the surface; an inflow side sets the normal discharge q_unit and at
 * least critical depth, so the inflow's speed enters the time step even on a dry bed. */
TS_HD static inline void swe_fill_ghost(const swe_arrays *a, const swe_consts *k, int type,
                                        ts_real level, swe_idx g, swe_idx in, int normal_is_x,
                                        ts_real q_unit) {
  ts_real h = swe_max(SWE_R(0), a->w[in] - a->bed[in]);
  a->hu[g] = a->hu[in];
  a->hv[g] = a->hv[in];
  a->w[g] = a->bed[g] + h;
  if (type == 2 /* TS_BC_LEVEL */) {
    a->w[g] = swe_max(level, a->bed[g]);
  } else if (type == 3 /* TS_BC_INFLOW */) {
    ts_real h_crit = swe_cbrt(q_unit * q_unit / k->g);
    a->w[g] = a->bed[g] + swe_max(h, h_crit);
    (normal_is_x ? a->hu : a->hv)[g] = q_unit;
  }
  swe_cell_velocity(a, k, g);
}

/* Ghost cell `layer` (1..SWE_GHOST) beyond global side `side` of a window of nx x ny cells whose
 * cell (0,0) is element `origin`, at position `at` along the side: filled from the edge cell it
 * faces (swe_fill_ghost) when it takes part. */
TS_HD static inline void swe_fill_side_ghost(const swe_arrays *a, const swe_consts *k,
                                             swe_idx origin, int nx, int ny, int side, int at,
                                             int layer, int type, ts_real level, ts_real q_unit) {
  int gi, gj, ii, ij;
  switch (side) {
  case 0 /* west */: gi = -layer, gj = at, ii = 0, ij = at; break;
  case 1 /* east */: gi = nx - 1 + layer, gj = at, ii = nx - 1, ij = at; break;
  case 2 /* south */: gi = at, gj = -layer, ii = at, ij = 0; break;
  default /* north */: gi = at, gj = ny - 1 + layer, ii = at, ij = ny - 1; break;
  }
  swe_idx g = origin + gi + gj * a->row, in = origin + ii + ij * a->row;
  if (a->active[g])
    swe_fill_ghost(a, k, type, level, g, in, side < 2, q_unit);
}

/* The mass flux through the boundary face of side `side` at position `at` becomes the inflow's
 * unit discharge q (m2/s into the domain) where the cell inside is active. */
TS_HD static inline void swe_impose_side_flux(const swe_arrays *a, swe_idx origin, int nx, int ny,
                                              int side, int at, ts_real q) {
  int i = side == 0 ? 0 : (side == 1 ? nx : at);
  int j = side == 2 ? 0 : (side == 3 ? ny : at);
  swe_idx f = origin + i + j * a->row;
  swe_idx inner = side == 1 ? f - 1 : (side == 3 ? f - a->row : f);
  if (a->active[inner])
    (side < 2 ? a->fx[0] : a->fy[0])[f] = (side == 1 || side == 3) ? -q : q;
}

/* The outflow limiter of a cell of surface-over-bed `wb` whose west, east, south and north faces
 * carry the mass fluxes fw, fe, fs, fn: the fraction of its outgoing water it can deliver in dt
 * without its depth going negative. */
TS_HD static inline ts_real swe_drain_of(const swe_consts *k, ts_real dt, ts_real fw, ts_real fe,
                                         ts_real fs, ts_real fn, ts_real wb) {
  ts_real out_x = swe_max(SWE_R(0), fe) + swe_max(SWE_R(0), -fw);
  ts_real out_y = swe_max(SWE_R(0), fn) + swe_max(SWE_R(0), -fs);
  ts_real out = dt * (out_x * k->rdx + out_y * k->rdy);
  ts_real h = swe_max(SWE_R(0), wb);
  return out > h ? h / out : SWE_R(1);
}

/* The speed cap of cell c: the largest characteristic speed cs of the cell and its four
 * neighbours (row: the offset of the next row). */
TS_HD static inline ts_real swe_speed_cap(const ts_real *cs, swe_idx c, swe_idx row) {
  ts_real around = swe_max(swe_max(cs[c - 1], cs[c + 1]), swe_max(cs[c - row], cs[c + row]));
  return swe_max(cs[c], around);
}

/* Outflow limiter of cell c: the fraction of its outgoing fluxes it can deliver in dt without
 * its depth going negative (the "draining time step" of Bollermann et al.). Also its speed cap:
 * the largest characteristic speed of the cell and its four neighbours. No flow accelerates water
 * beyond it (the Riemann invariants of a dry-bed dam break reach exactly that speed at the
 * front), but a thin cell that receives momentum from a deep neighbour would, and its spurious
 * speed would shrink the time step. */
TS_HD static inline void swe_drain_cell(const swe_arrays *a, const swe_consts *k, swe_idx c,
                                        ts_real dt) {
  const ts_real *fx = a->fx[0], *fy = a->fy[0];
  a->drain[c] = swe_drain_of(k, dt, fx[c], fx[c + 1], fy[c], fy[c + a->row], a->w[c] - a->bed[c]);
  a->speed_cap[c] = swe_speed_cap(a->char_speed, c, a->row);
}

/* Limiter that applies to a face: that of the cell the water leaves. */
TS_HD_INLINE static inline ts_real swe_face_limit(const ts_real *drain, ts_real mass_flux,
                                                  swe_idx lo, swe_idx hi) {
  ts_real from_lo = drain[lo], from_hi = drain[hi]; /* both read: a select, not masked loads */
  return mass_flux > 0 ? from_lo : (mass_flux < 0 ? from_hi : SWE_R(1));
}

TS_HD_INLINE static inline int swe_finite(ts_real x) { return x - x == 0; }

/* Euler update of active cell c with the fluxes, limiters, speed caps and sources of `f` at
 * index cf (f may be a tile copy with its own layout; on the CPU f is `a` and cf is c). The
 * cell's current state is read from f; the result goes to the state of `a` at c, and its
 * velocities too unless a->u is NULL. Stage 0 of RK2 saves the state at the start of the step
 * (unless a->start_kept); stage 1 averages with it (SSP-RK2). The x and y parts are formed
 * separately and added last (transposing the input transposes the output bit for bit). Returns
 * nonzero if a non-finite value appeared. limits: the limiters of the west, east, south and
 * north faces, for faces whose fluxes are limited already (a coarse face at a level interface
 * holds the mean of its fine faces' limited fluxes and limiter 1); NULL: from the drains. */
TS_HD_INLINE static inline int swe_update_cell_limited(const swe_arrays *a, const swe_arrays *f,
                                                       const swe_consts *k, swe_idx c, swe_idx cf,
                                                       ts_real dt, int stage,
                                                       const ts_real *limits) {
  const ts_real *drain = f->drain, *cap = f->speed_cap;
  const ts_real *fx0 = f->fx[0], *fx1 = f->fx[1], *fx2 = f->fx[2];
  const ts_real *fy0 = f->fy[0], *fy1 = f->fy[1], *fy2 = f->fy[2];
  swe_idx row = f->row;
  int save = stage == 0 && k->rk_order == 2 && !a->start_kept, average = stage == 1;
  int last = stage + 1 == k->rk_order, bad = 0;
  ts_real w_now = f->w[cf], hu_now = f->hu[cf], hv_now = f->hv[cf];
  if (save) {
    a->w0[c] = w_now;
    a->hu0[c] = hu_now;
    a->hv0[c] = hv_now;
  }
  ts_real le = limits ? limits[1] : swe_face_limit(drain, fx0[cf + 1], cf, cf + 1);
  ts_real lw = limits ? limits[0] : swe_face_limit(drain, fx0[cf], cf - 1, cf);
  ts_real ln = limits ? limits[3] : swe_face_limit(drain, fy0[cf + row], cf, cf + row);
  ts_real ls = limits ? limits[2] : swe_face_limit(drain, fy0[cf], cf - row, cf);
  ts_real rx_w = -(le * fx0[cf + 1] - lw * fx0[cf]) * k->rdx;
  ts_real ry_w = -(ln * fy0[cf + row] - ls * fy0[cf]) * k->rdy;
  ts_real rx_hu = (f->src_x[cf] - (le * fx1[cf + 1] - lw * fx1[cf])) * k->rdx;
  ts_real ry_hu = -(ln * fy2[cf + row] - ls * fy2[cf]) * k->rdy;
  ts_real rx_hv = -(le * fx2[cf + 1] - lw * fx2[cf]) * k->rdx;
  ts_real ry_hv = (f->src_y[cf] - (ln * fy1[cf + row] - ls * fy1[cf])) * k->rdy;
  ts_real dw = dt * (rx_w + ry_w);
  ts_real wn = w_now + dw;
  ts_real qx = hu_now + dt * (rx_hu + ry_hu);
  ts_real qy = hv_now + dt * (rx_hv + ry_hv);
  bad |= !swe_finite(wn) || !swe_finite(qx) || !swe_finite(qy);
  ts_real bed = f->bed[cf], h = wn - bed;
  if (!(h > 0)) {
    h = 0;
    qx = qy = 0;
  } else {
    ts_real u = swe_velocity(qx, h, k->kappa), v = swe_velocity(qy, h, k->kappa);
    ts_real speed = SWE_SQRT(u * u + v * v);
    if (speed > cap[cf]) {
      ts_real scale = cap[cf] / speed;
      u *= scale;
      v *= scale;
      speed = cap[cf];
    }
    ts_real fr = swe_friction_factor(
        k->friction_kind, a->friction ? a->friction[c] : k->friction_value, h, speed, k->g, dt);
    qx = h * u * fr;
    qy = h * v * fr;
  }
  if (average) {
    qx = SWE_R(0.5) * (a->hu0[c] + qx);
    qy = SWE_R(0.5) * (a->hv0[c] + qy);
  }
  /* The surface change is added with compensated (Kahan) summation: in float the change of a
   * slowly draining reservoir or of a thin sheet on high ground is a fraction of an ulp of its
   * surface, and plain rounding would drop or invent it in every cell alike. The carry keeps
   * the remainder, also what a cell that dries leaves below its bed (a debt that later water
   * pays first), so the volume w - bed + carry changes by the fluxes exactly. RK2's first stage
   * leaves half its remainder and half the carry it started with, which is what the average of
   * the second stage owes to the cell. */
  ts_real base = average ? a->w0[c] : w_now;
  ts_real change = average ? SWE_R(0.5) * ((w_now - a->w0[c]) + dw) : dw;
  ts_real y = change + a->w_carry[c];
  wn = base + y;
  ts_real carry = y - (wn - base);
  if (!(wn > bed)) {
    carry = (wn - bed) + carry;
    wn = bed;
    qx = qy = 0;
  }
  a->w_carry[c] = last ? carry : SWE_R(0.5) * (carry + a->w_carry[c]);
  bad |= !swe_finite(qx) || !swe_finite(qy);
  a->w[c] = wn;
  a->hu[c] = qx;
  a->hv[c] = qy;
  if (a->u)
    swe_cell_velocity(a, k, c);
  return bad;
}

/* The update of a cell whose faces are limited by the outflow limiters (swe_update_cell_limited
 * without limits). */
TS_HD_INLINE static inline int swe_update_cell(const swe_arrays *a, const swe_arrays *f,
                                               const swe_consts *k, swe_idx c, swe_idx cf,
                                               ts_real dt, int stage) {
  return swe_update_cell_limited(a, f, k, c, cf, dt, stage, (const ts_real *)0);
}

#ifndef __CUDACC__
/* Cells a chunk of a row with inactive cells (swe_update_row_as): a vector of floats. */
#define SWE_UPDATE_CHUNK 16

/* The update of the cells c0 .. c0 + n - 1 (n <= SWE_UPDATE_CHUNK) of a row with inactive cells
 * among them: every cell's in vectors into row buffers (an inactive cell's is computed from the
 * values its slots hold, and dropped), then the active cells' results stored. The same function
 * on the same values as a cell at a time: the same bits. */
__attribute__((always_inline)) static inline int
swe_update_mixed(const swe_arrays *a, const swe_consts *k, swe_idx c0, int n, ts_real dt,
                 const int stage, const int cell_friction) {
  enum { C = SWE_UPDATE_CHUNK };
  ts_real w[C], hu[C], hv[C], bed[C], w0[C], hu0[C], hv0[C], carry[C], fric[C], u[C], v[C], cs[C];
  int act[C], bad = 0;
  int save = stage == 0 && k->rk_order == 2;
  /* (the whole chunk, loads masked: plain copies of n elements become copies of n * 4 bytes by
   * `rep movs`, slow at 16 elements) */
#pragma omp simd
  for (int i = 0; i < C; i++) {
    int in = i < n;
    act[i] = in ? a->active[c0 + i] : 0;
    bed[i] = in ? a->bed[c0 + i] : SWE_R(0), carry[i] = in ? a->w_carry[c0 + i] : SWE_R(0);
    w0[i] = in ? a->w0[c0 + i] : SWE_R(0), hu0[i] = in ? a->hu0[c0 + i] : SWE_R(0);
    hv0[i] = in ? a->hv0[c0 + i] : SWE_R(0);
    fric[i] = in && cell_friction ? a->friction[c0 + i] : SWE_R(0);
  }
  swe_arrays out = *a;
  out.w = w, out.hu = hu, out.hv = hv, out.bed = bed, out.w_carry = carry;
  out.w0 = w0, out.hu0 = hu0, out.hv0 = hv0, out.friction = cell_friction ? fric : NULL;
  out.u = u, out.v = v, out.char_speed = cs;
#pragma omp simd reduction(| : bad)
  for (int i = 0; i < n; i++)
    bad |= act[i] & swe_update_cell(&out, a, k, i, c0 + i, dt, stage);
#pragma omp simd
  for (int i = 0; i < n; i++)
    if (act[i]) {
      swe_idx c = c0 + i;
      a->w[c] = w[i], a->hu[c] = hu[i], a->hv[c] = hv[i], a->w_carry[c] = carry[i];
      a->u[c] = u[i], a->v[c] = v[i], a->char_speed[c] = cs[i];
      if (save)
        a->w0[c] = w0[i], a->hu0[c] = hu0[i], a->hv0[c] = hv0[i];
    }
  return bad;
}

/* The update of the active cells c0 .. c0 + n - 1 of a row on the CPU (the uniform grid's rows,
 * a quadtree leaf's). A row of active cells is one loop the compiler vectorises, with the
 * stage, the order and friction per cell as constants (swe_update_row gives them as literals),
 * so that no select is left on a flag; a row with inactive cells is updated in chunks
 * (swe_update_mixed), each whole where all its cells are active. */
__attribute__((always_inline)) static inline int
swe_update_row_as(const swe_arrays *arrays, const swe_consts *consts, swe_idx c0, int n, ts_real dt,
                  const int stage, const int order, const int cell_friction) {
  swe_arrays a = *arrays;
  swe_consts k = *consts;
  const unsigned char *active = a.active;
  int all = 1, bad = 0;
  k.rk_order = order;
  /* what the compiler may take as known: the velocities are kept, and friction per cell or
   * uniform (otherwise it makes masked loads and stores of them, slow on some CPUs) */
  if (!a.u || (cell_friction && !a.friction))
    __builtin_unreachable();
  if (!cell_friction)
    a.friction = NULL;
  a.start_kept = 0;
  for (int i = 0; i < n; i++)
    all &= active[c0 + i];
  if (all) {
#pragma omp simd reduction(| : bad)
    for (int i = 0; i < n; i++)
      bad |= swe_update_cell(&a, &a, &k, c0 + i, c0 + i, dt, stage);
    return bad;
  }
  for (int at = 0; at < n; at += SWE_UPDATE_CHUNK) {
    int m = n - at < SWE_UPDATE_CHUNK ? n - at : SWE_UPDATE_CHUNK, some = 0, every = 1;
    for (int i = at; i < at + m; i++)
      some |= active[c0 + i], every &= active[c0 + i];
    if (every) {
#pragma omp simd reduction(| : bad)
      for (int i = at; i < at + m; i++)
        bad |= swe_update_cell(&a, &a, &k, c0 + i, c0 + i, dt, stage);
    } else if (some) {
      bad |= swe_update_mixed(&a, &k, c0 + at, m, dt, stage, cell_friction);
    }
  }
  return bad;
}

/* swe_update_row_as with the stage, order and friction of the arrays as literals. Returns
 * nonzero if a non-finite value appeared. */
static inline int swe_update_row(const swe_arrays *a, const swe_consts *k, swe_idx c0, int n,
                                 ts_real dt, int stage) {
  if (a->friction)
    return k->rk_order == 1 ? swe_update_row_as(a, k, c0, n, dt, 0, 1, 1)
           : stage == 0     ? swe_update_row_as(a, k, c0, n, dt, 0, 2, 1)
                            : swe_update_row_as(a, k, c0, n, dt, 1, 2, 1);
  return k->rk_order == 1 ? swe_update_row_as(a, k, c0, n, dt, 0, 1, 0)
         : stage == 0     ? swe_update_row_as(a, k, c0, n, dt, 0, 2, 0)
                          : swe_update_row_as(a, k, c0, n, dt, 1, 2, 0);
}
#endif

/* ---- what the budget and the flood maps record, and the sources */

/* The face between cells c - step and c along an axis (x: step 1, corner_step the row; y: the
 * reverse), reconstructed from the state around it exactly as the flux sweep does: its flux. */
TS_HD static inline void swe_face_at(const swe_arrays *a, const swe_consts *k, swe_idx c,
                                     swe_idx step, swe_idx corner_step, int x_axis,
                                     ts_real flux[3]) {
  swe_idx b = c - step;
  swe_side lo_a = {0, 0, 0, 0, 0}, hi_a = lo_a, lo_b = lo_a, hi_b = lo_a;
  int act_a = a->active[b], act_b = a->active[c];
  ts_real face_mid = swe_face_bed(a, b, step, corner_step);
  if (act_a)
    swe_reconstruct_cell(a, k, b, step, x_axis, swe_face_bed(a, b - step, step, corner_step),
                         face_mid, &lo_a, &hi_a);
  if (act_b)
    swe_reconstruct_cell(a, k, c, step, x_axis, face_mid, swe_face_bed(a, c, step, corner_step),
                         &lo_b, &hi_b);
  ts_real corr_a, corr_b;
  swe_face_between(k, act_a, act_b, hi_a, lo_b, flux, &corr_a, &corr_b);
}

/* Cells of the window around an edge cell that swe_boundary_flux reads (5 x 5). */
#define SWE_EDGE_WINDOW 5

/* The water (m2/s per metre of side, > 0 into the domain) that the update of a stage moves
 * through the face on global side `side` of active edge cell c: the face's mass flux between the
 * cell and its ghost (the inflow's unit discharge q_in on an inflow side), limited as the update
 * limits it (by the cell's outflow limiter where water leaves; water entering from a ghost is
 * never limited). It recomputes the cell's four faces from the stage's state in a window of
 * SWE_EDGE_WINDOW^2 cells around it (velocities included), so it needs no stored flux and gives
 * the update's values bit for bit whichever engine computed them. */
TS_HD static inline ts_real swe_boundary_flux(const swe_arrays *a, const swe_consts *k, swe_idx c,
                                              int side, ts_real dt, int inflow, ts_real q_in) {
  enum { N = SWE_EDGE_WINDOW, M = N * N, MID = M / 2 };
  ts_real w[M], hu[M], hv[M], bed[M], corner[M], u[M], v[M], cs[M];
  unsigned char act[M];
  for (int dj = 0; dj < N; dj++)
    for (int di = 0; di < N; di++) {
      swe_idx from = c + (di - N / 2) + (dj - N / 2) * a->row;
      int at = di + dj * N;
      w[at] = a->w[from], hu[at] = a->hu[from], hv[at] = a->hv[from];
      bed[at] = a->bed[from], corner[at] = a->corner[from], act[at] = a->active[from];
    }
  swe_arrays win = {};
  win.w = w, win.hu = hu, win.hv = hv, win.bed = bed, win.corner = corner, win.u = u, win.v = v;
  win.char_speed = cs, win.active = act, win.row = N;
  for (int e = 0; e < M; e++)
    swe_cell_velocity(&win, k, e);
  ts_real fw[3], fe[3], fs[3], fn[3];
  swe_face_at(&win, k, MID, 1, N, 1, fw);
  swe_face_at(&win, k, MID + 1, 1, N, 1, fe);
  swe_face_at(&win, k, MID, N, 1, 0, fs);
  swe_face_at(&win, k, MID + N, N, 1, 0, fn);
  ts_real *face = side == 0 ? fw : (side == 1 ? fe : (side == 2 ? fs : fn));
  if (inflow)
    face[0] = side == 1 || side == 3 ? -q_in : q_in;
  ts_real drain = swe_drain_of(k, dt, fw[0], fe[0], fs[0], fn[0], w[MID] - bed[MID]);
  ts_real into = side == 1 || side == 3 ? -face[0] : face[0];
  return into < 0 ? into * drain : into;
}

/* What a cell's flood maps record at time t after a step of dt: the maxima of depth, speed,
 * surface and the hazard rating depth x (speed + 0.5), the first arrival and the time spent
 * deeper than arrival_depth, from the cell's surface w over its bed and its discharges, where the
 * cell is wet (depth > dry). Arrays indexed by c, in double. */
typedef struct swe_maps {
  double *h, *speed, *arrival, *eta, *duration, *hazard;
  double arrival_depth, t, dt; /* t, dt: the end and length of the step */
  ts_real dry, kappa;
} swe_maps;

TS_HD_INLINE static inline void swe_record_cell(const swe_maps *m, swe_idx c, ts_real w,
                                                ts_real bed, ts_real hu, ts_real hv) {
  ts_real depth = w - bed;
  if (depth > m->dry) { /* (no early return: the CPU's compiler masks a SIMD row's stores) */
    double h = (double)depth;
    double u = (double)swe_velocity(hu, depth, m->kappa);
    double v = (double)swe_velocity(hv, depth, m->kappa), sp = sqrt(u * u + v * v);
    double hazard = h * (sp + 0.5);
    if (h > m->h[c])
      m->h[c] = h;
    if (sp > m->speed[c])
      m->speed[c] = sp;
    if (hazard > m->hazard[c])
      m->hazard[c] = hazard;
    if (isnan(m->eta[c]) || (double)w > m->eta[c])
      m->eta[c] = (double)w;
    if (h > m->arrival_depth && isnan(m->arrival[c]))
      m->arrival[c] = m->t;
    if (h > m->arrival_depth)
      m->duration[c] += m->dt;
  }
}

#ifndef __CUDACC__
/* The maps of the n cells of a row (at most SWE_RECORD_ROW; their state at w, bed, hu, hv and
 * activity at `active`, their maps from m0), swe_record_cell's on the CPU: a row a quarter wet
 * or more in vectors (the dry lanes' work wasted), a less wet one cell by cell, a dry cell a
 * test (most of a flood's land is dry or nearly). */
enum { SWE_RECORD_ROW = 256 };
static inline void swe_record_row(const swe_maps *m, swe_idx m0, const ts_real *restrict w,
                                  const ts_real *restrict bed, const ts_real *restrict hu,
                                  const ts_real *restrict hv, const unsigned char *restrict active,
                                  int n) {
  const swe_maps mm = *m;
  int act[SWE_RECORD_ROW], nwet = 0; /* (ints: with the bytes, the loops below stay scalar) */
  for (int q = 0; q < n; q++)
    act[q] = active[q];
#pragma omp simd reduction(+ : nwet)
  for (int q = 0; q < n; q++)
    nwet += act[q] & (w[q] - bed[q] > mm.dry);
  if (4 * nwet < n) {
    for (int q = 0; q < n; q++)
      if (active[q])
        swe_record_cell(&mm, m0 + q, w[q], bed[q], hu[q], hv[q]);
    return;
  }
  /* an inactive cell as a dry one, which records nothing: a select, not a condition around the
   * loads (GCC left that loop scalar) */
#pragma omp simd
  for (int q = 0; q < n; q++)
    swe_record_cell(&mm, m0 + q, act[q] ? w[q] : bed[q], bed[q], hu[q], hv[q]);
}
#endif

/* Rain and losses of one step on active cell c: `rain` (m) falls on it, then the losses take
 * what is left of the initial loss (loss_initial less the cell's losses so far, *lost, in m)
 * plus loss_step (m, the continuing loss of the step), but never more water than the cell holds.
 * The surface changes by compensated summation like the update's; a cell the losses empty
 * becomes dry and still. *lost grows by what was taken. */
TS_HD static inline void swe_source_cell(const swe_arrays *a, swe_idx c, ts_real rain,
                                         double loss_initial, ts_real loss_step, double *lost) {
  ts_real w = a->w[c], bed = a->bed[c], carry = a->w_carry[c];
  ts_real held = ((w - bed) + carry) + rain;
  double initial_left = loss_initial - *lost;
  ts_real demand = (initial_left > 0 ? (ts_real)initial_left : SWE_R(0)) + loss_step;
  if (!(held > demand)) {
    /* emptied; a debt larger than the rain stays a debt */
    *lost += held > 0 ? (double)held : 0.0;
    a->w[c] = bed;
    a->w_carry[c] = held > 0 ? SWE_R(0) : held;
    a->hu[c] = a->hv[c] = 0;
    return;
  }
  *lost += (double)demand;
  ts_real y = (rain - demand) + carry;
  ts_real wn = w + y;
  carry = y - (wn - w);
  if (!(wn > bed)) {
    carry = (wn - bed) + carry;
    wn = bed;
    a->hu[c] = a->hv[c] = 0;
  }
  a->w_carry[c] = carry;
  a->w[c] = wn;
}

#endif
