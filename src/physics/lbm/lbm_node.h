/* Node-level updates of the AA pattern (lbm_internal.h), written once as TS_HD functions for the
 * CPU loops (lbm_kernels.c) and the CUDA kernels (lbm_kernels.cu): the incoming populations of a
 * node (pulled from its neighbours or reflected by walls), the relaxation of fluid, inlet and
 * outlet nodes, and the even and odd updates of a node next to a boundary or of a bulk node. The
 * includer defines LBM_Q, lbm_store (the storage type) and LBM_LOAD(x) / LBM_STORE(x), which
 * convert between it and float. */
#ifndef TESSERA_LBM_NODE_H
#define TESSERA_LBM_NODE_H

#include "physics/lbm/lbm_cell.h"
#include "physics/lbm/lbm_internal.h"

/* A part's arrays as the updates see them: populations (LBM_Q planes), node kinds, the element
 * offset of the neighbour along each direction and, per axis the part wraps across (see
 * lbm_part.wrap), the element distance from the first interior node to the last (0: none). */
typedef struct lbm_view {
  lbm_store *f;
  const unsigned char *type;
  int64_t plane;
  int64_t off[LBM_Q];
  int64_t wrap[3];
} lbm_view;

/* A node's place on the axes its part wraps across: bit 2a set where it is the first interior
 * node along axis a, bit 2a + 1 where it is the last (c: its global node coordinates, wrap:
 * lbm_part.wrap; interior nodes are 1 .. n along an axis of n cells). */
TS_HD static inline unsigned lbm_wrap_code(const int c[3], const int wrap[3]) {
  unsigned code = 0;
  for (int a = 0; a < 3; a++)
    if (wrap[a] > 0)
      code |= (unsigned)(c[a] == 1) << (2 * a) | (unsigned)(c[a] == wrap[a]) << (2 * a + 1);
  return code;
}

/* What a node of wrap code `code` adds to n - off[q], the neighbour it pulls from along q, to
 * reach it across the wrapped axes (step: lbm_view.wrap); it pushes along q to n + off[q] plus
 * lbm_wrap_pull(step, code, opposite(q)). */
TS_HD static inline int64_t lbm_wrap_pull(const int64_t step[3], unsigned code, int q) {
  int64_t d = 0;
  for (int a = 0; a < 3; a++) {
    int c = lbm_c(q, a);
    if (c > 0 && (code >> (2 * a) & 1u))
      d += step[a];
    else if (c < 0 && (code >> (2 * a + 1) & 1u))
      d -= step[a];
  }
  return d;
}

#define LBM_SLOT(v, q, n) ((v)->f[(int64_t)(q) * (v)->plane + (n)])

TS_HD static inline lbm_model lbm_model_of(const lbm_consts *k) {
  lbm_model m = {k->omega,
                 k->omega_minus,
                 k->tau,
                 k->smag18,
                 {k->force[0], k->force[1], k->force[2]},
                 k->trt,
                 k->smag18 > 0,
                 k->force[0] != 0 || k->force[1] != 0 || k->force[2] != 0};
  return m;
}

/* Momentum a moving wall gives a population reflected into direction q: 6 w_q (c_q . u_w). */
TS_HD static LBM_INLINE float lbm_wall_term(const lbm_consts *k, unsigned char type, int q) {
  return 6.0f * lbm_w(q) * lbm_cdot(q, k->wall_u[lbm_face_of(type)]);
}

/* The post-collision populations of a computed node from its incoming ones f (in place). */
TS_HD static LBM_INLINE void lbm_relax(const lbm_model *m, const lbm_consts *k, unsigned char type,
                                       float f[LBM_Q]) {
  int kind = lbm_kind(type);
  float u[3];
  if (kind == LBM_FLUID) {
    lbm_collide(m, f, u);
    return;
  }
  float rho1 = lbm_moments(f, m->force, u);
  int face = lbm_face_of(type);
  if (kind == LBM_INLET)
    for (int a = 0; a < 3; a++)
      u[a] = k->wall_u[face][a];
  else
    rho1 = k->face_rho[face] - 1.0f;
  for (int q = 0; q < LBM_Q; q++)
    f[q] = lbm_feq(q, rho1, u);
}

/* The incoming populations of node n (wrap code `wrap`, lbm_wrap_code) before an odd step:
 * pulled from the neighbours, or reflected by walls from the node's own slots. */
TS_HD static LBM_INLINE void lbm_gather_incoming(const lbm_view *v, const lbm_consts *k, int64_t n,
                                                 unsigned wrap, float f[LBM_Q]) {
  LBM_UNROLL
  for (int q = 0; q < LBM_Q; q++) {
    int64_t from = n - v->off[q] + (wrap ? lbm_wrap_pull(v->wrap, wrap, q) : 0);
    unsigned char t = v->type[from];
    if (lbm_streams(t))
      f[q] = LBM_LOAD(LBM_SLOT(v, lbm_opposite(q), from));
    else if (lbm_kind(t) == LBM_SOLID)
      f[q] = LBM_LOAD(LBM_SLOT(v, q, n));
    else
      f[q] = LBM_LOAD(LBM_SLOT(v, q, n)) + lbm_wall_term(k, t, q);
  }
}

/* Even step of a node next to a boundary, or of an inlet or outlet node: its own slots, back to
 * the opposite ones. */
TS_HD static inline void lbm_even_node(const lbm_view *v, const lbm_consts *k, const lbm_model *m,
                                       int64_t n) {
  float f[LBM_Q];
  LBM_UNROLL
  for (int q = 0; q < LBM_Q; q++)
    f[q] = LBM_LOAD(LBM_SLOT(v, q, n));
  lbm_relax(m, k, v->type[n], f);
  LBM_UNROLL
  for (int q = 0; q < LBM_Q; q++)
    LBM_SLOT(v, lbm_opposite(q), n) = LBM_STORE(f[q]);
}

/* Odd step of such a node (wrap code `wrap`): pulled in, relaxed, pushed out (walls reflect
 * into its own slots). */
TS_HD static inline void lbm_odd_node(const lbm_view *v, const lbm_consts *k, const lbm_model *m,
                                      int64_t n, unsigned wrap) {
  float f[LBM_Q];
  lbm_gather_incoming(v, k, n, wrap, f);
  lbm_relax(m, k, v->type[n], f);
  LBM_UNROLL
  for (int q = 0; q < LBM_Q; q++) {
    int64_t to = n + v->off[q] + (wrap ? lbm_wrap_pull(v->wrap, wrap, lbm_opposite(q)) : 0);
    unsigned char tt = v->type[to];
    if (lbm_streams(tt))
      LBM_SLOT(v, q, to) = LBM_STORE(f[q]);
    else if (lbm_kind(tt) == LBM_SOLID)
      LBM_SLOT(v, lbm_opposite(q), n) = LBM_STORE(f[q]);
    else
      LBM_SLOT(v, lbm_opposite(q), n) = LBM_STORE(f[q] - lbm_wall_term(k, tt, q));
  }
}

/* A bulk node (fluid, every neighbour streaming): populations from slots from[q] + n, collided,
 * to slots to[q] + n (even step: q * plane and opposite(q) * plane; odd step: pulled from and
 * pushed to the neighbours). */
TS_HD static LBM_INLINE void lbm_bulk_node(lbm_store *f0, const int64_t from[LBM_Q],
                                           const int64_t to[LBM_Q], const lbm_model *m, int64_t n) {
  float f[LBM_Q], u[3];
  LBM_UNROLL
  for (int q = 0; q < LBM_Q; q++)
    f[q] = LBM_LOAD(f0[from[q] + n]);
  lbm_collide(m, f, u);
  LBM_UNROLL
  for (int q = 0; q < LBM_Q; q++)
    f0[to[q] + n] = LBM_STORE(f[q]);
}

/* The bulk slot offsets of a step (odd: pull and push through the neighbours). */
TS_HD static inline void lbm_bulk_offsets(const lbm_view *v, int odd, int64_t from[LBM_Q],
                                          int64_t to[LBM_Q]) {
  LBM_UNROLL
  for (int q = 0; q < LBM_Q; q++) {
    from[q] = odd ? lbm_opposite(q) * v->plane - v->off[q] : q * v->plane;
    to[q] = odd ? q * v->plane + v->off[q] : lbm_opposite(q) * v->plane;
  }
}

#endif
