/* CPU loops of the lattice Boltzmann step on one part, compiled once per lattice and storage:
 * LBM_Q (9 or 19), LBM_FP16 (0: float populations, 1: _Float16) and LBM_KERNELS (the table's
 * name). Even and odd steps of the AA pattern (lbm_internal.h) over the part's owned nodes, in
 * parallel over rows: each population slot is read and written by one node only, so the update
 * in place has no race. The cell numerics are lbm_cell.h's. */
#include <stdlib.h>

#include "physics/lbm/lbm_cell.h"
#include "physics/lbm/lbm_internal.h"

#if LBM_FP16
typedef _Float16 lbm_store;
#else
typedef float lbm_store;
#endif

#define SLOT(p, q, n) (((lbm_store *)(p)->f)[(int64_t)(q) * (p)->plane + (n)])

/* Element offsets of the neighbours along each direction. */
static void neighbour_offsets(const lbm_part *p, int64_t off[LBM_Q]) {
  for (int q = 0; q < LBM_Q; q++)
    off[q] = lbm_c(q, 0) + (int64_t)p->len[0] * (lbm_c(q, 1) + (int64_t)p->len[1] * lbm_c(q, 2));
}

static lbm_model model_of(const lbm_consts *k) {
  lbm_model m = {
      k->omega, k->omega_minus, k->tau, k->smag18, {k->force[0], k->force[1], k->force[2]},
      k->trt,   k->smag18 > 0};
  return m;
}

/* Momentum a moving wall gives a population reflected into direction q: 6 w_q (c_q . u_w). */
static LBM_INLINE float wall_term(const lbm_consts *k, unsigned char type, int q) {
  const float *uw = k->wall_u[lbm_face_of(type)];
  float cu = 0;
  for (int a = 0; a < LBM_DIM; a++)
    cu += (float)lbm_c(q, a) * uw[a];
  return 6.0f * lbm_w(q) * cu;
}

/* The post-collision populations of a computed node from its incoming ones f (in place). */
static LBM_INLINE void relax(const lbm_model *m, const lbm_consts *k, unsigned char type,
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

/* The incoming populations of node n before an odd step: pulled from the neighbours, or
 * reflected by walls from the node's own slots. */
static LBM_INLINE void gather_incoming(const lbm_part *p, const lbm_consts *k,
                                       const int64_t off[LBM_Q], int64_t n, float f[LBM_Q]) {
  LBM_UNROLL
  for (int q = 0; q < LBM_Q; q++) {
    int64_t from = n - off[q];
    unsigned char t = p->type[from];
    if (lbm_streams(t))
      f[q] = (float)SLOT(p, lbm_opposite(q), from);
    else if (lbm_kind(t) == LBM_SOLID)
      f[q] = (float)SLOT(p, q, n);
    else
      f[q] = (float)SLOT(p, q, n) + wall_term(k, t, q);
  }
}

/* Bulk nodes [n0, n1) of a row, vectorised across the row (each slot belongs to one node, so
 * the nodes are independent): an even step reads and writes the node's own slots, an odd step
 * pulls from and pushes to the neighbours. odd, trt and smag are constants at each call, so the
 * loop has no branch left. */
static LBM_INLINE void bulk_run(lbm_part *p, const lbm_model *model, const int64_t off[LBM_Q],
                                int64_t n0, int64_t n1, const int odd, const int trt,
                                const int smag) {
  lbm_model mm = *model, *m = &mm;
  mm.trt = trt;
  mm.smag = smag;
  lbm_store *restrict f0 = (lbm_store *)p->f;
  const int64_t plane = p->plane;
  int64_t from[LBM_Q], to[LBM_Q]; /* slot offsets, local so that no store can change them */
  LBM_UNROLL
  for (int q = 0; q < LBM_Q; q++) {
    from[q] = odd ? lbm_opposite(q) * plane - off[q] : q * plane;
    to[q] = odd ? q * plane + off[q] : lbm_opposite(q) * plane;
  }
#pragma omp simd
  for (int64_t n = n0; n < n1; n++) {
    float f[LBM_Q], u[3];
    LBM_UNROLL
    for (int q = 0; q < LBM_Q; q++)
      f[q] = (float)f0[from[q] + n];
    lbm_collide(m, f, u);
    LBM_UNROLL
    for (int q = 0; q < LBM_Q; q++)
      f0[to[q] + n] = (lbm_store)f[q];
  }
}

/* A node next to a boundary, or an inlet or outlet node. */
static void even_node(lbm_part *p, const lbm_consts *k, const lbm_model *m, int64_t n) {
  float f[LBM_Q];
  LBM_UNROLL
  for (int q = 0; q < LBM_Q; q++)
    f[q] = (float)SLOT(p, q, n);
  relax(m, k, p->type[n], f);
  LBM_UNROLL
  for (int q = 0; q < LBM_Q; q++)
    SLOT(p, lbm_opposite(q), n) = (lbm_store)f[q];
}

static void odd_node(lbm_part *p, const lbm_consts *k, const lbm_model *m, const int64_t off[LBM_Q],
                     int64_t n) {
  float f[LBM_Q];
  gather_incoming(p, k, off, n, f);
  relax(m, k, p->type[n], f);
  LBM_UNROLL
  for (int q = 0; q < LBM_Q; q++) {
    int64_t to = n + off[q];
    unsigned char tt = p->type[to];
    if (lbm_streams(tt))
      SLOT(p, q, to) = (lbm_store)f[q];
    else if (lbm_kind(tt) == LBM_SOLID)
      SLOT(p, lbm_opposite(q), n) = (lbm_store)f[q];
    else
      SLOT(p, lbm_opposite(q), n) = (lbm_store)(f[q] - wall_term(k, tt, q));
  }
}

/* The nodes [n, end) of a row: runs of bulk nodes vectorised, the others one by one. */
static void step_segment(lbm_part *p, const lbm_consts *k, const lbm_model *m,
                         const int64_t off[LBM_Q], int odd, int64_t n, int64_t end) {
  int variant = (m->trt ? 1 : 0) + (m->smag ? 2 : 0);
  while (n < end) {
    unsigned char t = p->type[n];
    if (!(t & LBM_BULK)) {
      if (lbm_computed(t) && odd)
        odd_node(p, k, m, off, n);
      else if (lbm_computed(t))
        even_node(p, k, m, n);
      n++;
      continue;
    }
    int64_t run = n;
    while (run < end && (p->type[run] & LBM_BULK))
      run++;
    switch (variant) { /* each with its model flags as constants */
    case 0:
      odd ? bulk_run(p, m, off, n, run, 1, 0, 0) : bulk_run(p, m, off, n, run, 0, 0, 0);
      break;
    case 1:
      odd ? bulk_run(p, m, off, n, run, 1, 1, 0) : bulk_run(p, m, off, n, run, 0, 1, 0);
      break;
    case 2:
      odd ? bulk_run(p, m, off, n, run, 1, 0, 1) : bulk_run(p, m, off, n, run, 0, 0, 1);
      break;
    default:
      odd ? bulk_run(p, m, off, n, run, 1, 1, 1) : bulk_run(p, m, off, n, run, 0, 1, 1);
      break;
    }
    n = run;
  }
}

/* One step over the part's nodes (which: LBM_ALL the owned box, LBM_INNER the box `inner`,
 * LBM_BORDER the owned box less `inner`), row by row, in parallel where a step has enough work
 * to pay for starting threads. */
static void step(lbm_part *p, const lbm_consts *k, int odd, const ts_box *inner, int which) {
  lbm_model m = model_of(k);
  int64_t off[LBM_Q];
  neighbour_offsets(p, off);
  const ts_box *b = which == LBM_INNER ? inner : &p->own;
  int rows = b->hi[1] - b->lo[1], layers = b->hi[2] - b->lo[2];
  if (rows <= 0 || layers <= 0 || b->hi[0] <= b->lo[0])
    return;
#pragma omp parallel for schedule(static) if (p->plane > 50000)
  for (int r = 0; r < rows * layers; r++) {
    int y = b->lo[1] + r % rows, z = b->lo[2] + r / rows;
    int64_t row = lbm_local(p, 0, y, z); /* (node x of the row: row + x) */
    int x0 = b->lo[0], x1 = b->hi[0];
    int cut = which == LBM_BORDER && y >= inner->lo[1] && y < inner->hi[1] && z >= inner->lo[2] &&
              z < inner->hi[2] && inner->lo[0] < inner->hi[0];
    if (!cut) {
      step_segment(p, k, &m, off, odd, row + x0, row + x1);
      continue;
    }
    step_segment(p, k, &m, off, odd, row + x0, row + inner->lo[0]);
    step_segment(p, k, &m, off, odd, row + inner->hi[0], row + x1);
  }
}

static void kernels_even(lbm_part *p, const lbm_consts *k) { step(p, k, 0, NULL, LBM_ALL); }
static void kernels_odd(lbm_part *p, const lbm_consts *k, const ts_box *inner, int which) {
  step(p, k, 1, inner, which);
}

static void kernels_moments(const lbm_part *p, const lbm_consts *k, int odd, int64_t n, float *rho,
                            float u[3]) {
  float f[LBM_Q];
  if (odd) {
    int64_t off[LBM_Q];
    neighbour_offsets(p, off);
    gather_incoming(p, k, off, n, f);
  } else {
    LBM_UNROLL
    for (int q = 0; q < LBM_Q; q++)
      f[q] = (float)SLOT(p, q, n);
  }
  *rho = 1.0f + lbm_moments(f, k->force, u);
}

/* Equilibrium of the initial state at every computed node: the params' initial field on cells,
 * the face's velocity or density on inlet and outlet nodes. */
static ts_status kernels_init(lbm_part *p, const ts_lbm_params *params, const lbm_consts *k) {
  for (int z = p->own.lo[2]; z < p->own.hi[2]; z++)
    for (int y = p->own.lo[1]; y < p->own.hi[1]; y++)
      for (int x = p->own.lo[0]; x < p->own.hi[0]; x++) {
        int64_t n = lbm_local(p, x, y, z);
        unsigned char t = p->type[n];
        if (!lbm_computed(t))
          continue;
        double rho = 1, u[3] = {0, 0, 0};
        int kind = lbm_kind(t), face = lbm_face_of(t);
        if (kind == LBM_FLUID && params->initial)
          params->initial(params->initial_arg, x - 1, y - (LBM_DIM > 1), z - (LBM_DIM > 2), &rho,
                          u);
        if (kind == LBM_INLET)
          for (int a = 0; a < 3; a++)
            u[a] = k->wall_u[face][a];
        if (kind == LBM_OUTLET)
          rho = k->face_rho[face];
        float uf[3] = {(float)u[0], (float)u[1], (float)u[2]};
        for (int q = 0; q < LBM_Q; q++)
          SLOT(p, q, n) = (lbm_store)lbm_feq(q, (float)(rho - 1.0), uf);
      }
  return TS_OK;
}

static int kernels_velocity(int q, int a) { return lbm_c(q, a); }
static int kernels_opposite(int q) { return lbm_opposite(q); }

const lbm_kernels LBM_KERNELS = {
    .q = LBM_Q,
    .elem = sizeof(lbm_store),
    .velocity = kernels_velocity,
    .opposite = kernels_opposite,
    .init = kernels_init,
    .even = kernels_even,
    .odd = kernels_odd,
    .moments = kernels_moments,
};
