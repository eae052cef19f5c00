/* The block engine's work on one cell, ghost or face of a leaf of a quadtree grid, written once
 * as TS_HD functions for the CPU loops (swe_buq.c) and the CUDA kernels (swe_buq.cu): the view of
 * the leaves' arrays (host or device memory), ghost cells from the neighbours (copy, restriction,
 * prolongation), the sweep of a line of faces with its level interfaces, outflow limiters and the
 * update with the limited fluxes of finer faces, and the flood maps. A leaf's window is laid out
 * as a part's (swe_internal.h): M x M cells, a frame of SWE_GHOST cells and corner points one
 * further, so the stage functions of swe_stage.h run on it unchanged.
 *
 * The includer defines ts_real, TS_REAL_DOUBLE, SWE_SQRT and swe_idx (as for swe_stage.h). */
#ifndef TESSERA_SWE_BUQ_LEAF_H
#define TESSERA_SWE_BUQ_LEAF_H

#include "physics/swe/swe_levels.h"
#include "physics/swe/swe_stage.h"
#include "tessera/buq.h"

/* The leaves' arrays (each P elements per leaf) and maps (M^2 per leaf), the blocks, and the
 * constants of the scheme. */
typedef struct swe_buq_view {
  ts_real *w, *hu, *hv, *w_carry, *w0, *hu0, *hv0, *u, *v, *char_speed, *speed_cap, *drain;
  ts_real *corner, *bed, *fx[3], *fy[3], *src_x, *src_y;
  unsigned char *active;
  ts_real *friction; /* per cell (P per leaf, the mean over its bed cells), NULL: uniform */
  double *max_h, *max_speed, *arrival, *max_eta, *duration, *max_hazard;
  /* rain and losses (with sources): per leaf cell (M^2 per leaf) the rain rate (m/s), initial
   * loss (m) and loss rate (m/s), the mean over its bed cells (NULL: the uniform value below),
   * and the water the losses took so far (m) */
  ts_real *rain, *loss_initial, *loss_rate;
  double *lost;
  double rain_rate, loss_initial_value, loss_rate_value;
  const ts_buq_block *blocks; /* neighbours as indices of this view's leaves (-1: none here) */
  int owned;     /* leaves 0 .. owned - 1 are this part's; the rest copies of other parts' leaves,
                    whose cells are exchanged before each stage (their velocities then recomputed) */
  int M, W;      /* cells along a leaf, points along its window (SWE_BUQ_PITCH) */
  int P, origin; /* elements of a window (W x (M + 2 SWE_GHOST + 1)), element of its cell
                    (0, 0): int, so that the layout is the same on the CPU (64-bit swe_idx) and
                    the GPU (32-bit) */
  double dx0;    /* the finest cell size (m) */
  double gravity, theta, dry_depth, friction_value, arrival_depth;
  int friction_kind, rk_order;
} swe_buq_view;

/* The arrays of a view, in order, for loops over all of them (NARRAYS of them). */
#define SWE_BUQ_ARRAYS(vw)                                                                         \
  {                                                                                                \
    &(vw)->w, &(vw)->hu, &(vw)->hv, &(vw)->w_carry, &(vw)->w0, &(vw)->hu0, &(vw)->hv0, &(vw)->u,   \
        &(vw)->v, &(vw)->char_speed, &(vw)->speed_cap, &(vw)->drain, &(vw)->corner, &(vw)->bed,    \
        &(vw)->fx[0], &(vw)->fx[1], &(vw)->fx[2], &(vw)->fy[0], &(vw)->fy[1], &(vw)->fy[2],        \
        &(vw)->src_x, &(vw)->src_y                                                                 \
  }
#define SWE_BUQ_NARRAYS 22
#define SWE_BUQ_MAPS(vw)                                                                           \
  {                                                                                                \
    &(vw)->max_h, &(vw)->max_speed, &(vw)->arrival, &(vw)->max_eta, &(vw)->duration,               \
        &(vw)->max_hazard                                                                          \
  }
#define SWE_BUQ_NMAPS 6
#define SWE_BUQ_MAX_BLOCK 16

/* Points along a leaf's window: its M cells, SWE_GHOST ghosts on each side and one more corner,
 * padded to whole 32-byte sectors of floats (8), so that with a window's first element at
 * SWE_BUQ_LEAD elements past a sector every row of the leaf's cells starts a sector. */
#define SWE_BUQ_SECTOR 8
#define SWE_BUQ_PITCH(M)                                                                           \
  (((M) + 2 * SWE_GHOST + 1 + SWE_BUQ_SECTOR - 1) / SWE_BUQ_SECTOR * SWE_BUQ_SECTOR)
#define SWE_BUQ_LEAD ((SWE_BUQ_SECTOR - SWE_GHOST % SWE_BUQ_SECTOR) % SWE_BUQ_SECTOR)

TS_HD static inline swe_idx buq_cell(const swe_buq_view *e, int k, int i, int j) {
  return (swe_idx)k * e->P + e->origin + i + (swe_idx)j * e->W;
}

/* Index within a leaf's window of its cell (i, j). */
TS_HD static inline swe_idx buq_local(const swe_buq_view *e, int i, int j) {
  return e->origin + i + (swe_idx)j * e->W;
}

/* The arrays of leaf k as a part's (indices relative to the leaf's window). */
TS_HD static inline swe_arrays buq_leaf_arrays(const swe_buq_view *e, int k) {
  swe_idx o = (swe_idx)k * e->P;
  swe_arrays a;
  a.w = e->w + o, a.hu = e->hu + o, a.hv = e->hv + o, a.w_carry = e->w_carry + o;
  a.w0 = e->w0 + o, a.hu0 = e->hu0 + o, a.hv0 = e->hv0 + o, a.u = e->u + o, a.v = e->v + o;
  a.char_speed = e->char_speed + o, a.speed_cap = e->speed_cap + o, a.drain = e->drain + o;
  a.corner = e->corner + o, a.bed = e->bed + o, a.friction = e->friction ? e->friction + o : 0;
  for (int c = 0; c < 3; c++)
    a.fx[c] = e->fx[c] + o, a.fy[c] = e->fy[c] + o;
  a.src_x = e->src_x + o, a.src_y = e->src_y + o, a.active = e->active + o;
  a.row = (swe_idx)e->W;
  a.start_kept = 0;
  return a;
}

TS_HD static inline swe_consts buq_consts(const swe_buq_view *e, int level) {
  double dx = ldexp(e->dx0, level);
  swe_consts k = {(ts_real)e->gravity, (ts_real)e->theta,   (ts_real)(0.01 * e->dry_depth),
                  (ts_real)(1.0 / dx), (ts_real)(1.0 / dx), (ts_real)e->friction_value,
                  e->friction_kind,    e->rk_order};
  return k;
}

/* ---------------------------------------------------------------- ghost cells */

/* Ghost (gi, gj) of leaf k, in layer `layer` (0 touches the leaf) at position `at` along
 * `side`. */
TS_HD static inline void buq_ghost_at(int M, int side, int layer, int at, int *gi, int *gj) {
  *gi = side == TS_BUQ_WEST ? -1 - layer : (side == TS_BUQ_EAST ? M + layer : at);
  *gj = side == TS_BUQ_SOUTH ? -1 - layer : (side == TS_BUQ_NORTH ? M + layer : at);
}

/* One ghost of leaf k along `side` from its neighbour there: a copy (same level), the
 * restriction of the four finer cells under it (finer), a dry cell (none). Coarser sides are
 * buq_fill_coarser's. */
TS_HD static inline void buq_fill_ghost(const swe_buq_view *e, int k, int side, int layer, int at) {
  const ts_buq_block *b = &e->blocks[k];
  ts_buq_relation rel = b->side_relation[side];
  int M = e->M, half = M / 2, gi, gj;
  ts_real *w = e->w, *hu = e->hu, *hv = e->hv, *bed = e->bed;
  buq_ghost_at(M, side, layer, at, &gi, &gj);
  swe_idx g = buq_cell(e, k, gi, gj);
  if (rel == TS_BUQ_SAME) {
    int si = side == TS_BUQ_WEST ? gi + M : (side == TS_BUQ_EAST ? gi - M : gi);
    int sj = side == TS_BUQ_SOUTH ? gj + M : (side == TS_BUQ_NORTH ? gj - M : gj);
    swe_idx s = buq_cell(e, b->side[side][0], si, sj);
    w[g] = w[s], hu[g] = hu[s], hv[g] = hv[s];
  } else if (rel == TS_BUQ_FINER) {
    int along = side < 2 ? gj : gi, n = b->side[side][along / half];
    int a0 = 2 * (along % half);
    int x0 = side == TS_BUQ_WEST ? M + 2 * gi : (side == TS_BUQ_EAST ? 2 * (gi - M) : a0);
    int y0 = side == TS_BUQ_SOUTH ? M + 2 * gj : (side == TS_BUQ_NORTH ? 2 * (gj - M) : a0);
    ts_real h4[4] = {0, 0, 0, 0}, hu4[4] = {0, 0, 0, 0}, hv4[4] = {0, 0, 0, 0};
    ts_real b4[4] = {0, 0, 0, 0}, hc = 0, huc = 0, hvc = 0, bc;
    if (n >= 0) {
      for (int c = 0; c < 4; c++) {
        swe_idx f = buq_cell(e, n, x0 + (c & 1), y0 + (c >> 1));
        b4[c] = bed[f];
        if (e->active[f]) {
          h4[c] = swe_max(SWE_R(0), w[f] - bed[f]);
          hu4[c] = hu[f], hv4[c] = hv[f];
        }
      }
      swe_restrict(h4, hu4, hv4, b4, &hc, &huc, &hvc, &bc);
    }
    w[g] = hc > 0 ? bed[g] + hc : bed[g];
    hu[g] = hc > 0 ? huc : SWE_R(0);
    hv[g] = hc > 0 ? hvc : SWE_R(0);
  } else if (rel == TS_BUQ_NONE) {
    w[g] = bed[g], hu[g] = hv[g] = 0;
  }
}

/* A coarse cell's value for a slope: its neighbour's where active, else its own. */
TS_HD static inline ts_real buq_around(const ts_real *f, const unsigned char *act, swe_idx c,
                                       swe_idx n) {
  return act[n] ? f[n] : f[c];
}

/* The 2 x 2 ghosts of leaf k under coarse cell `pair` along `side`, whose neighbour is one
 * level coarser: that cell prolongated (swe_prolong). */
TS_HD static inline void buq_fill_coarser(const swe_buq_view *e, int k, int side, int pair) {
  const ts_buq_block *b = &e->blocks[k];
  int M = e->M, n = b->side[side][0];
  const ts_buq_block *cb = &e->blocks[n];
  ts_real *w = e->w, *hu = e->hu, *hv = e->hv, *bed = e->bed;
  const unsigned char *act = e->active;
  /* the lower-left ghost cell of the 2 x 2 under one coarse cell */
  int gi = side == TS_BUQ_WEST ? -2 : (side == TS_BUQ_EAST ? M : 2 * pair);
  int gj = side == TS_BUQ_SOUTH ? -2 : (side == TS_BUQ_NORTH ? M : 2 * pair);
  int ci = ((b->bi * M + gi) >> 1) - cb->bi * M, cj = ((b->bj * M + gj) >> 1) - cb->bj * M;
  swe_idx c = buq_cell(e, n, ci, cj), W = e->W;
  swe_idx kids[4];
  ts_real b4[4], h4[4], hu4[4], hv4[4], w4[4];
  for (int q = 0; q < 4; q++) {
    kids[q] = buq_cell(e, k, gi + (q & 1), gj + (q >> 1));
    b4[q] = bed[kids[q]];
  }
  ts_real hc = act[c] ? swe_max(SWE_R(0), w[c] - bed[c]) : SWE_R(0);
  ts_real wx[3] = {buq_around(w, act, c, c - 1), w[c], buq_around(w, act, c, c + 1)};
  ts_real wy[3] = {buq_around(w, act, c, c - W), w[c], buq_around(w, act, c, c + W)};
  ts_real hux[3] = {buq_around(hu, act, c, c - 1), hu[c], buq_around(hu, act, c, c + 1)};
  ts_real huy[3] = {buq_around(hu, act, c, c - W), hu[c], buq_around(hu, act, c, c + W)};
  ts_real hvx[3] = {buq_around(hv, act, c, c - 1), hv[c], buq_around(hv, act, c, c + 1)};
  ts_real hvy[3] = {buq_around(hv, act, c, c - W), hv[c], buq_around(hv, act, c, c + W)};
  swe_prolong(hc, wx, wy, hux, huy, hvx, hvy, b4, (ts_real)e->theta, h4, hu4, hv4, w4);
  for (int q = 0; q < 4; q++) {
    swe_idx g = kids[q];
    int wet = h4[q] > 0;
    w[g] = wet ? w4[q] : bed[g];
    hu[g] = wet ? hu4[q] : SWE_R(0);
    hv[g] = wet ? hv4[q] : SWE_R(0);
  }
}

/* ---------------------------------------------------------------- fluxes */

/* The reconstruction along an axis of cell (i, j) of leaf k (in its own window); 0 when the
 * cell is inactive. */
TS_HD static inline int buq_reconstruct(const swe_buq_view *e, int k, int i, int j, int x_axis,
                                        swe_side *lo, swe_side *hi) {
  swe_arrays a = buq_leaf_arrays(e, k);
  swe_consts kc = buq_consts(e, e->blocks[k].level);
  swe_idx c = buq_local(e, i, j), step = x_axis ? 1 : e->W, cstep = x_axis ? e->W : 1;
  if (!a.active[c])
    return 0;
  swe_reconstruct_cell(&a, &kc, c, step, x_axis, swe_face_bed(&a, c - step, step, cstep),
                       swe_face_bed(&a, c, step, cstep), lo, hi);
  return 1;
}

/* The cell of leaf k's neighbour across `side` (one level coarser) next to k's cell `at` along
 * that side: its leaf and cell. */
TS_HD static inline void buq_coarse_cell(const swe_buq_view *e, int k, int side, int at, int *n,
                                         int *ci, int *cj) {
  const ts_buq_block *b = &e->blocks[k];
  int M = e->M;
  *n = b->side[side][0];
  const ts_buq_block *cb = &e->blocks[*n];
  int i = side == TS_BUQ_WEST ? -1 : (side == TS_BUQ_EAST ? M : at);
  int j = side == TS_BUQ_SOUTH ? -1 : (side == TS_BUQ_NORTH ? M : at);
  *ci = ((b->bi * M + i) >> 1) - cb->bi * M;
  *cj = ((b->bj * M + j) >> 1) - cb->bj * M;
}

/* The finer cell q (0, 1 along the side) next to leaf k's cell `at` along `side` (whose
 * neighbours there are one level finer): its leaf (-1: none) and cell. */
TS_HD static inline void buq_fine_cell(const swe_buq_view *e, int k, int side, int at, int q,
                                       int *n, int *fi, int *fj) {
  const ts_buq_block *b = &e->blocks[k];
  int M = e->M, half = M / 2;
  *n = b->side[side][at / half];
  int a0 = 2 * (at % half) + q;
  *fi = side == TS_BUQ_WEST ? M - 1 : (side == TS_BUQ_EAST ? 0 : a0);
  *fj = side == TS_BUQ_SOUTH ? M - 1 : (side == TS_BUQ_NORTH ? 0 : a0);
}

/* A line of leaf k: a row (x_axis) or a column of its window, cells -1 .. M. */
typedef struct buq_line {
  swe_idx first, step,
      cstep;            /* the line's cell 0 in the leaf's window, the steps along and across */
  int side_lo, side_hi; /* the leaf's sides at its ends */
} buq_line;

TS_HD static inline buq_line buq_line_of(const swe_buq_view *e, int line, int x_axis) {
  buq_line l;
  l.first = x_axis ? buq_local(e, 0, line) : buq_local(e, line, 0);
  l.step = x_axis ? 1 : e->W, l.cstep = x_axis ? e->W : 1;
  l.side_lo = x_axis ? TS_BUQ_WEST : TS_BUQ_SOUTH;
  l.side_hi = x_axis ? TS_BUQ_EAST : TS_BUQ_NORTH;
  return l;
}

/* The reconstruction along the line of its cell n (-1 .. M) in leaf k: its activity, and its
 * low and high sides (zero where inactive). */
TS_HD static inline int buq_line_cell(const swe_buq_view *e, int k, int x_axis, buq_line l, int n,
                                      swe_side *lo, swe_side *hi) {
  swe_arrays a = buq_leaf_arrays(e, k);
  swe_consts kc = buq_consts(e, e->blocks[k].level);
  swe_idx c = l.first + n * l.step;
  int act = a.active[c];
  lo->w = lo->b = lo->h = lo->u = lo->v = 0;
  *hi = *lo;
  if (act)
    swe_reconstruct_cell(&a, &kc, c, l.step, x_axis, swe_face_bed(&a, c - l.step, l.step, l.cstep),
                         swe_face_bed(&a, c, l.step, l.cstep), lo, hi);
  return act;
}

/* Face f (0 .. M) of the line `line` of leaf k, from its cells' reconstructions (lo, hi, act of
 * cell n at n + 1, as buq_line_cell gave them): its flux stored, the pressure corrections of its
 * low and high cell, and its wave speed returned. A face to a coarser leaf pairs this cell's
 * reconstruction with the coarse cell's; a face to finer leaves is the mean of the two finer
 * faces (this cell's correction too), each pairing this cell with a fine cell, so both leaves
 * compute the same faces. */
TS_HD static inline ts_real buq_line_face(const swe_buq_view *e, int k, int line, int x_axis,
                                          buq_line l, int f, const swe_side *lo, const swe_side *hi,
                                          const int *act, ts_real *corr_lo, ts_real *corr_hi) {
  const ts_buq_block *b = &e->blocks[k];
  swe_consts kc = buq_consts(e, b->level);
  int M = e->M, side = f == 0 ? l.side_lo : (f == M ? l.side_hi : -1);
  ts_buq_relation rel = side >= 0 ? b->side_relation[side] : TS_BUQ_SAME;
  ts_real flux[3], speed;
  if (rel == TS_BUQ_FINER) {
    ts_real sum[3] = {0, 0, 0}, corr = 0;
    speed = 0;
    for (int q = 0; q < 2; q++) {
      int n, fi, fj;
      swe_side flo = lo[0], fhi = hi[0];
      buq_fine_cell(e, k, side, line, q, &n, &fi, &fj);
      int fact = n >= 0 && buq_reconstruct(e, n, fi, fj, x_axis, &flo, &fhi);
      ts_real fq[3], cl, cr, sq;
      if (f == 0)
        sq = swe_face_between(&kc, fact, act[1], fhi, lo[1], fq, &cl, &cr);
      else
        sq = swe_face_between(&kc, act[M], fact, hi[M], flo, fq, &cl, &cr);
      for (int c3 = 0; c3 < 3; c3++)
        sum[c3] += fq[c3];
      corr += f == 0 ? cr : cl;
      speed = swe_max(speed, sq);
    }
    for (int c3 = 0; c3 < 3; c3++)
      flux[c3] = SWE_R(0.5) * sum[c3];
    *corr_lo = *corr_hi = SWE_R(0.5) * corr;
  } else if (rel == TS_BUQ_COARSER) {
    int n, ci, cj;
    swe_side clo = lo[0], chi = hi[0];
    buq_coarse_cell(e, k, side, line, &n, &ci, &cj);
    int cact = buq_reconstruct(e, n, ci, cj, x_axis, &clo, &chi);
    if (f == 0)
      speed = swe_face_between(&kc, cact, act[1], chi, lo[1], flux, corr_lo, corr_hi);
    else
      speed = swe_face_between(&kc, act[M], cact, hi[M], clo, flux, corr_lo, corr_hi);
  } else {
    speed = swe_face_between(&kc, act[f], act[f + 1], hi[f], lo[f + 1], flux, corr_lo, corr_hi);
  }
  swe_idx o = (swe_idx)k * e->P, c = o + l.first + f * l.step;
  ts_real *const *fl = x_axis ? e->fx : e->fy;
  fl[0][c] = flux[0];
  fl[1][c] = flux[1];
  fl[2][c] = flux[2];
  return speed;
}

/* The bed source of cell n (0 .. M - 1) of the line: the pressure corrections of its low face
 * (corr_hi of face n) and its high face (corr_lo of face n + 1) with the slope source between
 * its sides. */
TS_HD static inline void buq_line_source(const swe_buq_view *e, int k, int x_axis, buq_line l,
                                         int n, int act, swe_side lo, swe_side hi,
                                         ts_real low_face_corr, ts_real high_face_corr) {
  ts_real g = (ts_real)e->gravity;
  ts_real low = act ? low_face_corr + swe_bed_source(lo, hi, g) : SWE_R(0);
  (x_axis ? e->src_x : e->src_y)[(swe_idx)k * e->P + l.first + n * l.step] = low - high_face_corr;
}

/* ---------------------------------------------------------------- limiters and update */

/* The fluxes of the two finer faces next to leaf k's cell `at` along `side`, as the fine
 * leaves stored them (the bits this leaf computed too), and their cells' limiters. */
TS_HD static inline void buq_fine_faces(const swe_buq_view *e, int k, int side, int at,
                                        ts_real flux[2][3], ts_real drain[2]) {
  for (int q = 0; q < 2; q++) {
    int n, fi, fj;
    buq_fine_cell(e, k, side, at, q, &n, &fi, &fj);
    if (n < 0) {
      flux[q][0] = flux[q][1] = flux[q][2] = 0;
      drain[q] = SWE_R(1);
      continue;
    }
    /* the face between the fine cell and this leaf: east or north of it, or west or south */
    int x = side == TS_BUQ_WEST ? fi + 1 : fi, y = side == TS_BUQ_SOUTH ? fj + 1 : fj;
    swe_idx face = buq_cell(e, n, x, y);
    for (int c3 = 0; c3 < 3; c3++)
      flux[q][c3] = side < 2 ? e->fx[c3][face] : e->fy[c3][face];
    drain[q] = e->drain[buq_cell(e, n, fi, fj)];
  }
}

/* Which sides of cell (i, j) of leaf b face finer leaves (bit per side). */
TS_HD static inline int buq_finer_sides(const ts_buq_block *b, int M, int i, int j) {
  int at[4] = {i == 0, i == M - 1, j == 0, j == M - 1}, bits = 0;
  for (int s = 0; s < 4; s++)
    bits |= (at[s] && b->side_relation[s] == TS_BUQ_FINER) << s;
  return bits;
}

/* The limiter and speed cap of cell (i, j) of leaf k; a cell next to finer leaves counts the
 * water leaving through each of their faces. */
TS_HD static inline void buq_drain_cell(const swe_buq_view *e, int k, int i, int j, ts_real dt) {
  const ts_buq_block *b = &e->blocks[k];
  swe_arrays a = buq_leaf_arrays(e, k);
  swe_consts kc = buq_consts(e, b->level);
  swe_idx c = buq_local(e, i, j), W = e->W;
  int finer = buq_finer_sides(b, e->M, i, j);
  if (!finer) {
    swe_drain_cell(&a, &kc, c, dt);
    return;
  }
  ts_real f[4] = {a.fx[0][c], a.fx[0][c + 1], a.fy[0][c], a.fy[0][c + W]};
  for (int s = 0; s < 4; s++) {
    if (!(finer >> s & 1))
      continue;
    ts_real ff[2][3], fd[2];
    buq_fine_faces(e, k, s, s < 2 ? j : i, ff, fd);
    int out_positive = s == TS_BUQ_EAST || s == TS_BUQ_NORTH;
    ts_real out = SWE_R(0.5) * (swe_max(SWE_R(0), out_positive ? ff[0][0] : -ff[0][0]) +
                                swe_max(SWE_R(0), out_positive ? ff[1][0] : -ff[1][0]));
    f[s] = out_positive ? out : -out;
  }
  a.drain[c] = swe_drain_of(&kc, dt, f[0], f[1], f[2], f[3], a.w[c] - a.bed[c]);
  a.speed_cap[c] = swe_speed_cap(a.char_speed, c, W);
}

/* The limiter of leaf k's first-ring ghost at `at` along `side`: the neighbour's (same level),
 * the coarse cell's (coarser); 1 elsewhere (faces to finer leaves are limited per fine face). */
TS_HD static inline void buq_drain_ghost(const swe_buq_view *e, int k, int side, int at) {
  const ts_buq_block *b = &e->blocks[k];
  int M = e->M, gi, gj;
  buq_ghost_at(M, side, 0, at, &gi, &gj);
  ts_real d = SWE_R(1);
  if (b->side_relation[side] == TS_BUQ_SAME) {
    int si = side == TS_BUQ_WEST ? M - 1 : (side == TS_BUQ_EAST ? 0 : gi);
    int sj = side == TS_BUQ_SOUTH ? M - 1 : (side == TS_BUQ_NORTH ? 0 : gj);
    d = e->drain[buq_cell(e, b->side[side][0], si, sj)];
  } else if (b->side_relation[side] == TS_BUQ_COARSER) {
    int n, ci, cj;
    buq_coarse_cell(e, k, side, at, &n, &ci, &cj);
    d = e->drain[buq_cell(e, n, ci, cj)];
  }
  e->drain[buq_cell(e, k, gi, gj)] = d;
}

/* Euler stage of cell (i, j) of leaf k (active) from the state of e into that of `to` (e
 * itself: in place; other state arrays keep the start of the step where it is, and `to`'s
 * (w0, hu0, hv0) give it); a face to finer leaves gets the mean of the fine faces' fluxes, each
 * limited by the limiter of the cell its water leaves. Returns nonzero on a non-finite value. */
TS_HD static inline int buq_update_cell(const swe_buq_view *e, const swe_buq_view *to, int k, int i,
                                        int j, ts_real dt, int stage) {
  const ts_buq_block *b = &e->blocks[k];
  swe_arrays f = buq_leaf_arrays(e, k), a = buq_leaf_arrays(to, k);
  a.start_kept = to->w != e->w;
  swe_consts kc = buq_consts(e, b->level);
  swe_idx c = buq_local(e, i, j), W = e->W;
  int finer = buq_finer_sides(b, e->M, i, j);
  if (!finer)
    return swe_update_cell(&a, &f, &kc, c, c, dt, stage);
  swe_idx faces[4] = {c, c + 1, c, c + W};
  ts_real limits[4] = {swe_face_limit(f.drain, f.fx[0][c], c - 1, c),
                       swe_face_limit(f.drain, f.fx[0][c + 1], c, c + 1),
                       swe_face_limit(f.drain, f.fy[0][c], c - W, c),
                       swe_face_limit(f.drain, f.fy[0][c + W], c, c + W)};
  for (int s = 0; s < 4; s++) {
    if (!(finer >> s & 1))
      continue;
    ts_real ff[2][3], fd[2];
    buq_fine_faces(e, k, s, s < 2 ? j : i, ff, fd);
    int fine_low = s == TS_BUQ_WEST || s == TS_BUQ_SOUTH; /* the fine cells below this one */
    ts_real sum[3] = {0, 0, 0};
    for (int q = 0; q < 2; q++) {
      ts_real m = ff[q][0]; /* > 0 moves water towards +axis: out of the low cell */
      ts_real lim = m > 0 ? (fine_low ? fd[q] : f.drain[c])
                          : (m < 0 ? (fine_low ? f.drain[c] : fd[q]) : SWE_R(1));
      for (int c3 = 0; c3 < 3; c3++)
        sum[c3] += lim * ff[q][c3];
    }
    for (int c3 = 0; c3 < 3; c3++)
      (s < 2 ? f.fx[c3] : f.fy[c3])[faces[s]] = SWE_R(0.5) * sum[c3];
    limits[s] = SWE_R(1);
  }
  return swe_update_cell_limited(&a, &f, &kc, c, c, dt, stage, limits);
}

/* Rain and losses of a step of dt on cell (i, j) of leaf k (swe_source_cell, as the uniform
 * grid's sources), then its velocities. */
TS_HD static inline void buq_source_cell(const swe_buq_view *e, int k, int i, int j, double dt) {
  swe_idx c = buq_local(e, i, j), m = (swe_idx)k * e->M * e->M + i + (swe_idx)e->M * j;
  swe_arrays a = buq_leaf_arrays(e, k);
  if (!a.active[c])
    return;
  swe_consts kc = buq_consts(e, e->blocks[k].level);
  ts_real dt_r = (ts_real)dt;
  ts_real rain = e->rain ? e->rain[m] * dt_r : (ts_real)e->rain_rate * dt_r;
  ts_real loss = e->loss_rate ? e->loss_rate[m] * dt_r : (ts_real)e->loss_rate_value * dt_r;
  swe_source_cell(&a, c, rain, e->loss_initial ? (double)e->loss_initial[m] : e->loss_initial_value,
                  loss, &e->lost[m]);
  swe_cell_velocity(&a, &kc, c);
}

/* Whether leaf k takes part in a step with early exit: it holds water (wet[k]) or touches a leaf
 * that does, as water moves less than a cell per stage. */
TS_HD static inline int buq_leaf_on(const ts_buq_block *blocks, const unsigned char *wet, int k) {
  const ts_buq_block *b = &blocks[k];
  int on = wet[k];
  for (int s = 0; s < 4; s++)
    for (int q = 0; q < 2; q++)
      on |= b->side[s][q] >= 0 && wet[b->side[s][q]];
  for (int c = 0; c < 4; c++)
    on |= b->corner[c] >= 0 && wet[b->corner[c]];
  return on;
}

/* Whether cell (i, j) of leaf k holds water. */
TS_HD static inline int buq_wet_cell(const swe_buq_view *e, int k, int i, int j) {
  swe_idx c = buq_cell(e, k, i, j);
  return e->active[c] && e->w[c] > e->bed[c];
}

/* What the flood maps of the view's cells record at time t after a step of dt. */
TS_HD static inline swe_maps buq_maps(const swe_buq_view *e, double t, double dt) {
  swe_maps m = {e->max_h,
                e->max_speed,
                e->arrival,
                e->max_eta,
                e->duration,
                e->max_hazard,
                e->arrival_depth,
                t,
                dt,
                (ts_real)e->dry_depth,
                (ts_real)(0.01 * e->dry_depth)};
  return m;
}

/* The flood maps of cell (i, j) of leaf k at time t after a step of dt (swe_record_cell). */
TS_HD static inline void buq_record_cell(const swe_buq_view *e, int k, int i, int j, double t,
                                         double dt) {
  swe_idx c = buq_cell(e, k, i, j);
  if (!e->active[c])
    return;
  swe_maps m = buq_maps(e, t, dt);
  swe_record_cell(&m, (swe_idx)k * e->M * e->M + i + e->M * j, e->w[c], e->bed[c], e->hu[c],
                  e->hv[c]);
}

#endif
