/* CPU loops of the lattice Boltzmann step on one part, compiled once per lattice and storage:
 * LBM_Q (9 or 19), LBM_FP16 (0: float populations, 1: binary16) and LBM_KERNELS (the table's
 * name). Even and odd steps of the AA pattern (lbm_internal.h) over the part's owned nodes, in
 * parallel over rows: each population slot is read and written by one node only, so the update
 * in place has no race. The cell numerics are lbm_cell.h's. */
#include <stdint.h>
#include <stdlib.h>

#include "core/half.h"

#if LBM_FP16
typedef uint16_t lbm_store; /* IEEE binary16 bits, converted by core/half.h (vectorised) */
#define LBM_LOAD(x) ts_half_to_float(x)
#define LBM_STORE(x) ts_float_to_half(x)
#else
typedef float lbm_store;
#define LBM_LOAD(x) (x)
#define LBM_STORE(x) (x)
#endif

#include "physics/lbm/lbm_node.h"

/* The part's arrays as the node updates see them. */
static lbm_view view_of(const lbm_part *p) {
  lbm_view v = {(lbm_store *)p->f, p->type, p->plane, {0}, {0, 0, 0}};
  for (int q = 0; q < LBM_Q; q++)
    v.off[q] = lbm_c(q, 0) + (int64_t)p->len[0] * (lbm_c(q, 1) + (int64_t)p->len[1] * lbm_c(q, 2));
  return v;
}

/* Bulk nodes [n0, n1) of a row, vectorised across the row where the compiler can (each slot
 * belongs to one node, so the nodes are independent); trt, smag and forced are constants at each
 * call, so the collision has no branch left. */
static LBM_INLINE void bulk_run(const lbm_view *v, const lbm_model *model, int64_t n0, int64_t n1,
                                int odd, const int trt, const int smag, const int forced) {
  lbm_model mm = *model;
  mm.trt = trt;
  mm.smag = smag;
  mm.forced = forced;
  int64_t from[LBM_Q], to[LBM_Q]; /* local, so that no store can change them */
  lbm_bulk_offsets(v, odd, from, to);
  lbm_store *restrict f0 = v->f;
#pragma omp simd
  for (int64_t n = n0; n < n1; n++)
    lbm_bulk_node(f0, from, to, &mm, n);
}

/* The bulk nodes [n, end) of a row with the step's parity and the model's variant as
 * constants (bit 3: odd, 2: forced, 1: smag, 0: trt). */
#define BULK_CASE(k)                                                                               \
  case k: bulk_run(v, m, n, end, k >> 3 & 1, k & 1, k >> 1 & 1, k >> 2 & 1); break
static void bulk_variant(const lbm_view *v, const lbm_model *m, int odd, int64_t n, int64_t end) {
  switch ((odd ? 8 : 0) | (m->forced ? 4 : 0) | (m->smag ? 2 : 0) | (m->trt ? 1 : 0)) {
    BULK_CASE(0);
    BULK_CASE(1);
    BULK_CASE(2);
    BULK_CASE(3);
    BULK_CASE(4);
    BULK_CASE(5);
    BULK_CASE(6);
    BULK_CASE(7);
    BULK_CASE(8);
    BULK_CASE(9);
    BULK_CASE(10);
    BULK_CASE(11);
    BULK_CASE(12);
    BULK_CASE(13);
    BULK_CASE(14);
    BULK_CASE(15);
  }
}
#undef BULK_CASE

/* The nodes [n, end) of a row: runs of bulk nodes vectorised, the others one by one. */
static void step_segment(const lbm_view *v, const lbm_consts *k, const lbm_model *m, int odd,
                         int64_t n, int64_t end) {
  while (n < end) {
    unsigned char t = v->type[n];
    if (!(t & LBM_BULK)) {
      if (lbm_computed(t) && odd)
        lbm_odd_node(v, k, m, n, 0);
      else if (lbm_computed(t))
        lbm_even_node(v, k, m, n);
      n++;
      continue;
    }
    int64_t run = n;
    while (run < end && (v->type[run] & LBM_BULK))
      run++;
    bulk_variant(v, m, odd, n, run);
    n = run;
  }
}

/* One step over the part's nodes (which: LBM_ALL the owned box, LBM_INNER the box `inner`,
 * LBM_BORDER the owned box less `inner`), row by row, in parallel where a step has enough work
 * to pay for starting threads. */
static void step(lbm_part *p, const lbm_consts *k, int odd, const ts_box *inner, int which) {
  lbm_model m = lbm_model_of(k);
  lbm_view v = view_of(p);
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
      step_segment(&v, k, &m, odd, row + x0, row + x1);
      continue;
    }
    step_segment(&v, k, &m, odd, row + x0, row + inner->lo[0]);
    step_segment(&v, k, &m, odd, row + inner->hi[0], row + x1);
  }
}

static void kernels_even(lbm_part *p, const lbm_consts *k) { step(p, k, 0, NULL, LBM_ALL); }
static void kernels_odd(lbm_part *p, const lbm_consts *k, const ts_box *inner, int which) {
  step(p, k, 1, inner, which);
}

static void kernels_moments(const lbm_part *p, const lbm_consts *k, int odd, int64_t n, float *rho,
                            float u[3]) {
  lbm_view v = view_of(p);
  float f[LBM_Q];
  if (odd) {
    lbm_gather_incoming(&v, k, n, 0, f);
  } else {
    LBM_UNROLL
    for (int q = 0; q < LBM_Q; q++)
      f[q] = LBM_LOAD(LBM_SLOT(&v, q, n));
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
          ((lbm_store *)p->f)[(int64_t)q * p->plane + n] =
              LBM_STORE(lbm_feq(q, (float)(rho - 1.0), uf));
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
