/* CPU (OpenMP) block engine of the shallow-water solver on a block-uniform quadtree grid
 * (swe_buq.h), compiled once per precision: TS_REAL_DOUBLE=0 defines swe_buq_ops_float,
 * TS_REAL_DOUBLE=1 swe_buq_ops_double.
 *
 * Every leaf holds its cells in a window laid out as a part's (swe_internal.h): M x M cells, a
 * ghost frame of SWE_GHOST cells and corner points one further, so the stage functions of
 * swe_stage.h run on a leaf as on a part. A leaf's beds come from the DEM averaged over each
 * of its level's cells (corners: the mean of the active cells around them, cells: the mean of
 * their corners, as on the uniform grid), so one level is the uniform grid bit for bit.
 *
 * A stage: ghost cells from the neighbours (same level: copies; finer: restriction; coarser:
 * prolongation, coarsest levels first so that a coarse leaf's ghosts are in place when a finer
 * one reads them), fluxes per leaf, the time step from the wave speeds of every level, outflow
 * limiters, then the update. A face between levels is computed from the reconstructions of the
 * coarse cell (in its leaf) and the fine cell (in its leaf), by both leaves alike, so both see
 * the same bits: the fine cell takes it as is, the coarse cell the mean of its two fine faces,
 * each limited by the limiter of the cell its water leaves, so volume is kept to rounding; each
 * side keeps its own face bed and pressure correction, so a lake at rest stays at rest. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "physics/swe/swe_buq.h"
#include "tessera/buq.h"

#if TS_REAL_DOUBLE
typedef double ts_real;
#define SWE_SQRT sqrt
#define SWE_CBRT cbrt
#define SWE_BUQ_OPS swe_buq_ops_double
#else
typedef float ts_real;
#define SWE_SQRT sqrtf
#define SWE_CBRT cbrtf
#define SWE_BUQ_OPS swe_buq_ops_float
#endif

typedef int64_t swe_idx;
#include "physics/swe/swe_levels.h"
#include "physics/swe/swe_stage.h"

enum { G = SWE_GHOST, NARRAYS = 22 };

typedef struct engine {
  ts_buq q;
  ts_swe_params p;
  int M, W;       /* cells along a leaf, points along its window (M + 2 G + 1) */
  int64_t P;      /* elements of one leaf's window */
  int64_t origin; /* element of cell (0, 0) in a window */
  double dx0;     /* the finest cell size (m) */
  int threads;
  /* per leaf, P elements each: the arrays of swe_arrays */
  ts_real *w, *hu, *hv, *w_carry, *w0, *hu0, *hv0, *u, *v, *char_speed, *speed_cap, *drain;
  ts_real *corner, *bed, *fx[3], *fy[3], *src_x, *src_y;
  unsigned char *active;
  /* per leaf, M^2 each: the flood maps */
  double *max_h, *max_speed, *arrival, *max_eta, *duration, *max_hazard;
  unsigned char *computed; /* per leaf: computed in this step (early exit) */
  int *list, nlist;        /* the leaves computed, by level from the coarsest */
  double t;                /* time of the state (for the maps) */
} engine;

static inline int64_t cell_at(const engine *e, int k, int i, int j) {
  return (int64_t)k * e->P + e->origin + i + (int64_t)j * e->W;
}

/* The arrays of leaf k as a part's (indices relative to the leaf's window). */
static swe_arrays leaf_arrays(const engine *e, int k) {
  int64_t o = (int64_t)k * e->P;
  swe_arrays a = {e->w + o,
                  e->hu + o,
                  e->hv + o,
                  e->w_carry + o,
                  e->w0 + o,
                  e->hu0 + o,
                  e->hv0 + o,
                  e->u + o,
                  e->v + o,
                  e->char_speed + o,
                  e->speed_cap + o,
                  e->drain + o,
                  e->corner + o,
                  e->bed + o,
                  NULL,
                  {e->fx[0] + o, e->fx[1] + o, e->fx[2] + o},
                  {e->fy[0] + o, e->fy[1] + o, e->fy[2] + o},
                  e->src_x + o,
                  e->src_y + o,
                  e->active + o,
                  (swe_idx)e->W,
                  0};
  return a;
}

static swe_consts level_consts(const engine *e, int level) {
  double dx = ldexp(e->dx0, level);
  swe_consts k = {(ts_real)e->p.gravity, (ts_real)e->p.theta, (ts_real)(0.01 * e->p.dry_depth),
                  (ts_real)(1.0 / dx),   (ts_real)(1.0 / dx), (ts_real)e->p.friction_value,
                  (int)e->p.friction,    e->p.rk_order};
  return k;
}

/* Index within a leaf's window of cell (i, j). */
static inline swe_idx local(const engine *e, int i, int j) {
  return (swe_idx)(e->origin + i + (int64_t)j * e->W);
}

/* ---------------------------------------------------------------- building */

/* The mean of raster r (NODATA and cells outside: none; `zero_nodata`: NODATA counts as 0)
 * over the finest cells of level-`level` cell (I, J); *n gets how many counted. */
static double level_mean(const ts_raster *r, int level, int I, int J, int zero_nodata, int *n) {
  int width = 1 << level;
  int64_t i0 = (int64_t)I * width, j0 = (int64_t)J * width;
  double sum = 0;
  *n = 0;
  if (I < 0 || J < 0 || i0 >= r->ncols || j0 >= r->nrows)
    return NAN;
  for (int64_t j = j0; j < j0 + width && j < r->nrows; j++)
    for (int64_t i = i0; i < i0 + width && i < r->ncols; i++) {
      double v = r->v[i + j * r->ncols];
      if (ts_raster_is_nodata(r, v)) {
        if (!zero_nodata)
          continue;
        v = 0;
      }
      sum += v;
      (*n)++;
    }
  return *n ? sum / *n : NAN;
}

/* The DEM's mean over level cell (I, J), NaN where it holds no data. */
static double level_bed(const ts_raster *bed, int level, int I, int J) {
  int n;
  return level_mean(bed, level, I, J, 0, &n);
}

/* Beds and activity of leaf k's window: cells active where their level's DEM mean exists
 * (outside the domain: walls), corners the mean of the active cells around them, cells the
 * mean of their corners (build_bed of swe_kernels.c on each level). */
static void build_leaf(engine *e, int k, const ts_raster *dem) {
  const ts_buq_block *b = &e->q.blocks[k];
  int M = e->M, I0 = b->bi * M, J0 = b->bj * M;
  swe_arrays a = leaf_arrays(e, k);
  ts_real *corner = (ts_real *)a.corner, *bed = (ts_real *)a.bed;
  for (int j = -G; j < M + G; j++)
    for (int i = -G; i < M + G; i++)
      e->active[cell_at(e, k, i, j)] = !isnan(level_bed(dem, b->level, I0 + i, J0 + j));
  for (int j = -G; j <= M + G; j++)
    for (int i = -G; i <= M + G; i++) {
      /* the cells around corner (i, j), summed as (sw + ne) + (se + nw) */
      int ci[4] = {i - 1, i, i, i - 1}, cj[4] = {j - 1, j, j - 1, j};
      double z[4] = {0, 0, 0, 0};
      int n = 0;
      for (int c = 0; c < 4; c++) {
        double v = level_bed(dem, b->level, I0 + ci[c], J0 + cj[c]);
        if (isnan(v))
          continue;
        z[c] = v;
        n++;
      }
      corner[local(e, i, j)] = n ? (ts_real)(((z[0] + z[1]) + (z[2] + z[3])) / n) : SWE_R(0);
    }
  for (int j = -G; j < M + G; j++)
    for (int i = -G; i < M + G; i++) {
      swe_idx c = local(e, i, j);
      ts_real sw = corner[c], se = corner[c + 1], nw = corner[c + e->W], ne = corner[c + e->W + 1];
      bed[c] = SWE_R(0.25) * ((sw + ne) + (se + nw));
    }
  for (int64_t c = 0; c < e->P; c++) {
    a.drain[c] = SWE_R(1);
    a.w[c] = bed[c];
  }
}

/* The state of leaf k's cells from the initial depth and discharges (kernels_init of
 * swe_kernels.c, each cell's values the means over its finest cells). */
static void init_leaf(engine *e, int k, const swe_inputs *in) {
  const ts_buq_block *b = &e->q.blocks[k];
  int M = e->M;
  swe_arrays a = leaf_arrays(e, k);
  for (int j = 0; j < M; j++)
    for (int i = 0; i < M; i++) {
      swe_idx c = local(e, i, j);
      int I = b->bi * M + i, J = b->bj * M + j, n;
      if (!a.active[c])
        continue;
      double h = in->h0 ? level_mean(in->h0, b->level, I, J, 1, &n) : 0;
      a.w[c] = h > 0 ? a.bed[c] + (ts_real)h : a.bed[c];
      double qx = 0, qy = 0;
      if (h > 0 && in->hu0)
        qx = level_mean(in->hu0, b->level, I, J, 1, &n);
      if (h > 0 && in->hv0)
        qy = level_mean(in->hv0, b->level, I, J, 1, &n);
      a.hu[c] = (ts_real)qx;
      a.hv[c] = (ts_real)qy;
    }
}

/* ---------------------------------------------------------------- ghost cells */

/* Leaf k's 2 ghost layers along `side` from its neighbour there: copies (same level) or
 * restriction (finer); coarser sides are prolongated by fill_coarser. */
static void fill_side(const engine *e, int k, int side) {
  const ts_buq_block *b = &e->q.blocks[k];
  ts_buq_relation rel = b->side_relation[side];
  int M = e->M, half = M / 2;
  ts_real *w = e->w, *hu = e->hu, *hv = e->hv, *bed = e->bed;
  for (int layer = 0; layer < G; layer++)
    for (int at = 0; at < M; at++) {
      /* ghost (gi, gj): layer 0 touches the leaf */
      int gi, gj;
      switch (side) {
      case TS_BUQ_WEST: gi = -1 - layer, gj = at; break;
      case TS_BUQ_EAST: gi = M + layer, gj = at; break;
      case TS_BUQ_SOUTH: gi = at, gj = -1 - layer; break;
      default: gi = at, gj = M + layer; break;
      }
      int64_t g = cell_at(e, k, gi, gj);
      if (rel == TS_BUQ_SAME) {
        int n = b->side[side][0];
        int si = side == TS_BUQ_WEST ? gi + M : (side == TS_BUQ_EAST ? gi - M : gi);
        int sj = side == TS_BUQ_SOUTH ? gj + M : (side == TS_BUQ_NORTH ? gj - M : gj);
        int64_t s = cell_at(e, n, si, sj);
        w[g] = w[s], hu[g] = hu[s], hv[g] = hv[s];
      } else if (rel == TS_BUQ_FINER) {
        /* the four finer cells under ghost (gi, gj), in the fine leaf covering it */
        int along = side < 2 ? gj : gi, n = b->side[side][along / half];
        int a0 = 2 * (along % half), x0, y0;
        switch (side) {
        case TS_BUQ_WEST: x0 = M + 2 * gi, y0 = a0; break;
        case TS_BUQ_EAST: x0 = 2 * (gi - M), y0 = a0; break;
        case TS_BUQ_SOUTH: x0 = a0, y0 = M + 2 * gj; break;
        default: x0 = a0, y0 = 2 * (gj - M); break;
        }
        ts_real h4[4] = {0, 0, 0, 0}, hu4[4] = {0, 0, 0, 0}, hv4[4] = {0, 0, 0, 0};
        ts_real b4[4] = {0, 0, 0, 0}, hc = 0, huc = 0, hvc = 0, bc;
        if (n >= 0) {
          for (int c = 0; c < 4; c++) {
            int64_t f = cell_at(e, n, x0 + (c & 1), y0 + (c >> 1));
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
}

/* A coarse cell's value for a slope: its neighbour's where active, else its own. */
static inline ts_real around(const ts_real *f, const unsigned char *act, int64_t c, int64_t n) {
  return act[n] ? f[n] : f[c];
}

/* Leaf k's 2 ghost layers along `side`, whose neighbour is one level coarser: each coarse cell
 * along the side prolongated onto the 2 x 2 ghost cells it covers (swe_prolong). */
static void fill_coarser(const engine *e, int k, int side) {
  const ts_buq_block *b = &e->q.blocks[k];
  const ts_buq_block *cb = &e->q.blocks[b->side[side][0]];
  int M = e->M, n = b->side[side][0];
  ts_real *w = e->w, *hu = e->hu, *hv = e->hv, *bed = e->bed;
  const unsigned char *act = e->active;
  ts_real theta = (ts_real)e->p.theta;
  for (int pair = 0; pair < M / 2; pair++) {
    /* the lower-left ghost cell of the 2 x 2 under one coarse cell */
    int gi = side == TS_BUQ_WEST ? -2 : (side == TS_BUQ_EAST ? M : 2 * pair);
    int gj = side == TS_BUQ_SOUTH ? -2 : (side == TS_BUQ_NORTH ? M : 2 * pair);
    int ci = ((b->bi * M + gi) >> 1) - cb->bi * M, cj = ((b->bj * M + gj) >> 1) - cb->bj * M;
    int64_t c = cell_at(e, n, ci, cj), W = e->W;
    int64_t kids[4];
    ts_real b4[4], h4[4], hu4[4], hv4[4], w4[4];
    for (int q = 0; q < 4; q++) {
      kids[q] = cell_at(e, k, gi + (q & 1), gj + (q >> 1));
      b4[q] = bed[kids[q]];
    }
    ts_real hc = act[c] ? swe_max(SWE_R(0), w[c] - bed[c]) : SWE_R(0);
    ts_real wx[3] = {around(w, act, c, c - 1), w[c], around(w, act, c, c + 1)};
    ts_real wy[3] = {around(w, act, c, c - W), w[c], around(w, act, c, c + W)};
    ts_real hux[3] = {around(hu, act, c, c - 1), hu[c], around(hu, act, c, c + 1)};
    ts_real huy[3] = {around(hu, act, c, c - W), hu[c], around(hu, act, c, c + W)};
    ts_real hvx[3] = {around(hv, act, c, c - 1), hv[c], around(hv, act, c, c + 1)};
    ts_real hvy[3] = {around(hv, act, c, c - W), hv[c], around(hv, act, c, c + W)};
    swe_prolong(hc, wx, wy, hux, huy, hvx, hvy, b4, theta, h4, hu4, hv4, w4);
    for (int q = 0; q < 4; q++) {
      int64_t g = kids[q];
      int wet = h4[q] > 0;
      w[g] = wet ? w4[q] : bed[g];
      hu[g] = wet ? hu4[q] : SWE_R(0);
      hv[g] = wet ? hv4[q] : SWE_R(0);
    }
  }
}

/* Velocities of leaf k's ghost cells. */
static void ghost_velocities(const engine *e, int k) {
  swe_arrays a = leaf_arrays(e, k);
  swe_consts kc = level_consts(e, e->q.blocks[k].level);
  int M = e->M;
  for (int j = -G; j < M + G; j++)
    for (int i = -G; i < M + G; i++)
      if (i < 0 || j < 0 || i >= M || j >= M)
        swe_cell_velocity(&a, &kc, local(e, i, j));
}

/* The ghost cells of the computed leaves: copies and restrictions (which read leaves' own
 * cells), then prolongations, coarsest leaves first (they read the coarse leaf's ghosts). */
static void fill_ghosts(engine *e) {
#pragma omp parallel for schedule(dynamic, 8) num_threads(e->threads)
  for (int n = 0; n < e->nlist; n++)
    for (int side = 0; side < 4; side++)
      if (e->q.blocks[e->list[n]].side_relation[side] != TS_BUQ_COARSER)
        fill_side(e, e->list[n], side);
  for (int level = e->q.levels - 2; level >= 0; level--) {
#pragma omp parallel for schedule(dynamic, 8) num_threads(e->threads)
    for (int n = 0; n < e->nlist; n++) {
      const ts_buq_block *b = &e->q.blocks[e->list[n]];
      if (b->level != level)
        continue;
      for (int side = 0; side < 4; side++)
        if (b->side_relation[side] == TS_BUQ_COARSER)
          fill_coarser(e, e->list[n], side);
    }
  }
#pragma omp parallel for schedule(dynamic, 8) num_threads(e->threads)
  for (int n = 0; n < e->nlist; n++)
    ghost_velocities(e, e->list[n]);
}

/* ---------------------------------------------------------------- fluxes */

/* The reconstruction along an axis of cell (i, j) of leaf k (in its own window). */
static int reconstruct_in(const engine *e, int k, int i, int j, int x_axis, swe_side *lo,
                          swe_side *hi) {
  swe_arrays a = leaf_arrays(e, k);
  swe_consts kc = level_consts(e, e->q.blocks[k].level);
  swe_idx c = local(e, i, j), step = x_axis ? 1 : e->W, cstep = x_axis ? e->W : 1;
  if (!a.active[c])
    return 0;
  swe_reconstruct_cell(&a, &kc, c, step, x_axis, swe_face_bed(&a, c - step, step, cstep),
                       swe_face_bed(&a, c, step, cstep), lo, hi);
  return 1;
}

/* The coarse cell of leaf k's neighbour across `side` (one level coarser) next to k's cell
 * `at` along that side: its leaf and cell. */
static void coarse_cell(const engine *e, int k, int side, int at, int *n, int *ci, int *cj) {
  const ts_buq_block *b = &e->q.blocks[k];
  int M = e->M;
  *n = b->side[side][0];
  const ts_buq_block *cb = &e->q.blocks[*n];
  int i = side == TS_BUQ_WEST ? -1 : (side == TS_BUQ_EAST ? M : at);
  int j = side == TS_BUQ_SOUTH ? -1 : (side == TS_BUQ_NORTH ? M : at);
  *ci = ((b->bi * M + i) >> 1) - cb->bi * M;
  *cj = ((b->bj * M + j) >> 1) - cb->bj * M;
}

/* The finer cell q (0, 1 in order along the side) next to leaf k's cell `at` along `side`
 * (whose neighbours there are one level finer): its leaf (-1: none) and cell. */
static void fine_cell(const engine *e, int k, int side, int at, int q, int *n, int *fi, int *fj) {
  const ts_buq_block *b = &e->q.blocks[k];
  int M = e->M, half = M / 2;
  *n = b->side[side][at / half];
  int a0 = 2 * (at % half) + q;
  *fi = side == TS_BUQ_WEST ? M - 1 : (side == TS_BUQ_EAST ? 0 : a0);
  *fj = side == TS_BUQ_SOUTH ? M - 1 : (side == TS_BUQ_NORTH ? 0 : a0);
}

/* One line of leaf k (a row for x, a column for y) from cell -1 to M, as sweep_line of
 * swe_kernels.c: every face 0..M gets its flux, every cell its bed source with the pressure
 * corrections of its faces; faces on a level interface take the other leaf's cell. Returns the
 * largest wave speed of the faces. */
static ts_real sweep(const engine *e, int k, int line, int x_axis) {
  const ts_buq_block *b = &e->q.blocks[k];
  swe_arrays a = leaf_arrays(e, k);
  swe_consts kc = level_consts(e, b->level);
  int M = e->M, side_lo = x_axis ? TS_BUQ_WEST : TS_BUQ_SOUTH;
  int side_hi = x_axis ? TS_BUQ_EAST : TS_BUQ_NORTH;
  swe_idx step = x_axis ? 1 : e->W;
  swe_idx first = x_axis ? local(e, 0, line) : local(e, line, 0);
  ts_real *f0 = x_axis ? a.fx[0] : a.fy[0], *f1 = x_axis ? a.fx[1] : a.fy[1];
  ts_real *f2 = x_axis ? a.fx[2] : a.fy[2], *src = x_axis ? a.src_x : a.src_y;
  enum { MAXM = 16 };
  swe_side lo[MAXM + 2], hi[MAXM + 2];
  int act[MAXM + 2];
  swe_idx cstep = x_axis ? e->W : 1;
  memset(lo, 0, sizeof lo);
  memset(hi, 0, sizeof hi);
  for (int n = -1; n <= M; n++) {
    swe_idx c = first + n * step;
    act[n + 1] = a.active[c];
    if (act[n + 1])
      swe_reconstruct_cell(&a, &kc, c, step, x_axis, swe_face_bed(&a, c - step, step, cstep),
                           swe_face_bed(&a, c, step, cstep), &lo[n + 1], &hi[n + 1]);
  }
  ts_real amax = 0, src_prev = 0;
  for (int f = 0; f <= M; f++) {
    swe_idx c = first + f * step;
    int side = f == 0 ? side_lo : (f == M ? side_hi : -1);
    ts_buq_relation rel = side >= 0 ? b->side_relation[side] : TS_BUQ_SAME;
    ts_real flux[3], corr_lo, corr_hi, speed;
    if (rel == TS_BUQ_FINER) {
      /* two finer faces: their mean flux, and this cell's mean correction */
      ts_real sum[3] = {0, 0, 0}, corr = 0;
      speed = 0;
      for (int q = 0; q < 2; q++) {
        int n, fi, fj;
        swe_side flo = lo[0], fhi = hi[0];
        fine_cell(e, k, side, line, q, &n, &fi, &fj);
        int fact = n >= 0 && reconstruct_in(e, n, fi, fj, x_axis, &flo, &fhi);
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
      corr_lo = corr_hi = SWE_R(0.5) * corr;
    } else if (rel == TS_BUQ_COARSER) {
      int n, ci, cj;
      swe_side clo, chi;
      coarse_cell(e, k, side, line, &n, &ci, &cj);
      int cact = reconstruct_in(e, n, ci, cj, x_axis, &clo, &chi);
      if (f == 0)
        speed = swe_face_between(&kc, cact, act[1], chi, lo[1], flux, &corr_lo, &corr_hi);
      else
        speed = swe_face_between(&kc, act[M], cact, hi[M], clo, flux, &corr_lo, &corr_hi);
    } else {
      speed = swe_face_between(&kc, act[f], act[f + 1], hi[f], lo[f + 1], flux, &corr_lo, &corr_hi);
    }
    amax = swe_max(amax, speed);
    f0[c] = flux[0];
    f1[c] = flux[1];
    f2[c] = flux[2];
    if (f > 0)
      src[c - step] = src_prev - corr_lo;
    if (f < M && act[f + 1])
      src_prev = corr_hi + swe_bed_source(lo[f + 1], hi[f + 1], kc.g);
    else
      src_prev = 0;
  }
  return amax;
}

/* Fluxes of the computed leaves; with amax, the largest wave speeds per level (x, y). */
static void fluxes(engine *e, double amax[][2]) {
  int L = e->q.levels;
  double ax[TS_BUQ_MAX_LEVELS] = {0}, ay[TS_BUQ_MAX_LEVELS] = {0};
#pragma omp parallel num_threads(e->threads)
  {
    ts_real lx[TS_BUQ_MAX_LEVELS] = {0}, ly[TS_BUQ_MAX_LEVELS] = {0};
#pragma omp for schedule(dynamic, 4)
    for (int n = 0; n < e->nlist; n++) {
      int k = e->list[n], level = e->q.blocks[k].level;
      for (int line = 0; line < e->M; line++) {
        lx[level] = swe_max(lx[level], sweep(e, k, line, 1));
        ly[level] = swe_max(ly[level], sweep(e, k, line, 0));
      }
    }
#pragma omp critical
    for (int l = 0; l < L; l++) {
      ax[l] = fmax(ax[l], (double)lx[l]);
      ay[l] = fmax(ay[l], (double)ly[l]);
    }
  }
  if (amax)
    for (int l = 0; l < L; l++)
      amax[l][0] = ax[l], amax[l][1] = ay[l];
}

/* ---------------------------------------------------------------- limiters and update */

/* The mass fluxes of the two finer faces next to leaf k's cell `at` along `side`, as the fine
 * leaves stored them (the same bits as this leaf computed), and their cells' limiters. */
static void fine_faces(const engine *e, int k, int side, int at, ts_real flux[2][3],
                       ts_real drain[2]) {
  for (int q = 0; q < 2; q++) {
    int n, fi, fj;
    fine_cell(e, k, side, at, q, &n, &fi, &fj);
    if (n < 0) {
      flux[q][0] = flux[q][1] = flux[q][2] = 0;
      drain[q] = SWE_R(1);
      continue;
    }
    /* the face between the fine cell and this leaf: east or north of it, or west or south */
    int fx = side == TS_BUQ_WEST ? fi + 1 : fi, fy = side == TS_BUQ_SOUTH ? fj + 1 : fj;
    int64_t face = cell_at(e, n, fx, fy);
    ts_real *const *arr = side < 2 ? e->fx : e->fy;
    for (int c3 = 0; c3 < 3; c3++)
      flux[q][c3] = arr[c3][face];
    drain[q] = e->drain[cell_at(e, n, fi, fj)];
  }
}

/* Limiters and speed caps of leaf k's cells; a cell next to finer leaves counts the outflow of
 * each of their faces. */
static void drain_leaf(const engine *e, int k, ts_real dt) {
  const ts_buq_block *b = &e->q.blocks[k];
  swe_arrays a = leaf_arrays(e, k);
  swe_consts kc = level_consts(e, b->level);
  int M = e->M;
  for (int j = 0; j < M; j++)
    for (int i = 0; i < M; i++) {
      swe_idx c = local(e, i, j);
      int sides[4] = {i == 0, i == M - 1, j == 0, j == M - 1}, finer = 0;
      for (int s = 0; s < 4; s++)
        finer |= sides[s] && b->side_relation[s] == TS_BUQ_FINER;
      if (!finer) {
        swe_drain_cell(&a, &kc, c, dt);
        continue;
      }
      ts_real f[4] = {a.fx[0][c], a.fx[0][c + 1], a.fy[0][c], a.fy[0][c + e->W]};
      for (int s = 0; s < 4; s++) {
        if (!sides[s] || b->side_relation[s] != TS_BUQ_FINER)
          continue;
        ts_real ff[2][3], fd[2];
        fine_faces(e, k, s, s < 2 ? j : i, ff, fd);
        /* the water leaving this cell through each finer face */
        int out_positive = s == TS_BUQ_EAST || s == TS_BUQ_NORTH;
        ts_real out = SWE_R(0.5) * (swe_max(SWE_R(0), out_positive ? ff[0][0] : -ff[0][0]) +
                                    swe_max(SWE_R(0), out_positive ? ff[1][0] : -ff[1][0]));
        f[s] = out_positive ? out : -out;
      }
      const ts_real *cs = a.char_speed;
      a.drain[c] = swe_drain_of(&kc, dt, f[0], f[1], f[2], f[3], a.w[c] - a.bed[c]);
      ts_real ring = swe_max(swe_max(cs[c - 1], cs[c + 1]), swe_max(cs[c - e->W], cs[c + e->W]));
      a.speed_cap[c] = swe_max(cs[c], ring);
    }
}

/* The limiters of leaf k's first ghost ring: the neighbour's (same level), the coarse cell's
 * (coarser); 1 elsewhere (faces to finer leaves are limited by fine_faces). */
static void drain_ghosts(const engine *e, int k) {
  const ts_buq_block *b = &e->q.blocks[k];
  int M = e->M;
  for (int side = 0; side < 4; side++)
    for (int at = 0; at < M; at++) {
      int gi = side == TS_BUQ_WEST ? -1 : (side == TS_BUQ_EAST ? M : at);
      int gj = side == TS_BUQ_SOUTH ? -1 : (side == TS_BUQ_NORTH ? M : at);
      ts_real d = SWE_R(1);
      if (b->side_relation[side] == TS_BUQ_SAME) {
        int si = side == TS_BUQ_WEST ? M - 1 : (side == TS_BUQ_EAST ? 0 : gi);
        int sj = side == TS_BUQ_SOUTH ? M - 1 : (side == TS_BUQ_NORTH ? 0 : gj);
        d = e->drain[cell_at(e, b->side[side][0], si, sj)];
      } else if (b->side_relation[side] == TS_BUQ_COARSER) {
        int n, ci, cj;
        coarse_cell(e, k, side, at, &n, &ci, &cj);
        d = e->drain[cell_at(e, n, ci, cj)];
      }
      e->drain[cell_at(e, k, gi, gj)] = d;
    }
}

/* Euler stage of leaf k's active cells; faces to finer leaves get the mean of the fine faces'
 * fluxes, each limited by the limiter of the cell its water leaves. */
static int update_leaf(const engine *e, int k, ts_real dt, int stage) {
  const ts_buq_block *b = &e->q.blocks[k];
  swe_arrays a = leaf_arrays(e, k);
  swe_consts kc = level_consts(e, b->level);
  int M = e->M, bad = 0;
  for (int j = 0; j < M; j++)
    for (int i = 0; i < M; i++) {
      swe_idx c = local(e, i, j);
      if (!a.active[c])
        continue;
      int sides[4] = {i == 0, i == M - 1, j == 0, j == M - 1}, finer = 0;
      for (int s = 0; s < 4; s++)
        finer |= sides[s] && b->side_relation[s] == TS_BUQ_FINER;
      if (!finer) {
        bad |= swe_update_cell(&a, &a, &kc, c, c, dt, stage);
        continue;
      }
      swe_idx faces[4] = {c, c + 1, c, c + e->W};
      ts_real limits[4] = {swe_face_limit(a.drain, a.fx[0][c], c - 1, c),
                           swe_face_limit(a.drain, a.fx[0][c + 1], c, c + 1),
                           swe_face_limit(a.drain, a.fy[0][c], c - e->W, c),
                           swe_face_limit(a.drain, a.fy[0][c + e->W], c, c + e->W)};
      for (int s = 0; s < 4; s++) {
        if (!sides[s] || b->side_relation[s] != TS_BUQ_FINER)
          continue;
        ts_real ff[2][3], fd[2];
        fine_faces(e, k, s, s < 2 ? j : i, ff, fd);
        int fine_low = s == TS_BUQ_WEST || s == TS_BUQ_SOUTH; /* fine cells below this one */
        ts_real sum[3] = {0, 0, 0};
        for (int q = 0; q < 2; q++) {
          ts_real m = ff[q][0];
          /* m > 0 moves water towards +axis: out of the low cell */
          ts_real lim = m > 0 ? (fine_low ? fd[q] : a.drain[c])
                              : (m < 0 ? (fine_low ? a.drain[c] : fd[q]) : SWE_R(1));
          for (int c3 = 0; c3 < 3; c3++)
            sum[c3] += lim * ff[q][c3];
        }
        ts_real *const *arr = s < 2 ? a.fx : a.fy;
        for (int c3 = 0; c3 < 3; c3++)
          arr[c3][faces[s]] = SWE_R(0.5) * sum[c3];
        limits[s] = SWE_R(1);
      }
      bad |= swe_update_cell_limited(&a, &a, &kc, c, c, dt, stage, limits);
    }
  return bad;
}

/* ---------------------------------------------------------------- steps */

static int leaf_wet(const engine *e, int k) {
  for (int j = 0; j < e->M; j++)
    for (int i = 0; i < e->M; i++) {
      int64_t c = cell_at(e, k, i, j);
      if (e->active[c] && e->w[c] > e->bed[c])
        return 1;
    }
  return 0;
}

/* The leaves of this step (early exit: those holding water or touching a leaf that does, as
 * water moves less than a cell per stage), by level from the coarsest; leaves dropped from
 * the list get zero fluxes, as their neighbours read them. */
static void choose_leaves(engine *e) {
  int nb = e->q.nblocks;
  unsigned char *wet = malloc((size_t)nb);
  if (!wet)
    return;
#pragma omp parallel for schedule(dynamic, 16) num_threads(e->threads)
  for (int k = 0; k < nb; k++)
    wet[k] = !e->p.early_exit || leaf_wet(e, k);
  for (int k = 0; k < nb; k++) {
    const ts_buq_block *b = &e->q.blocks[k];
    int on = wet[k];
    for (int s = 0; s < 4 && !on; s++)
      for (int q = 0; q < 2 && !on; q++)
        on = b->side[s][q] >= 0 && wet[b->side[s][q]];
    for (int c = 0; c < 4 && !on; c++)
      on = b->corner[c] >= 0 && wet[b->corner[c]];
    if (!on && e->computed[k]) {
      int64_t o = (int64_t)k * e->P;
      for (int c3 = 0; c3 < 3; c3++) {
        memset(e->fx[c3] + o, 0, sizeof(ts_real) * (size_t)e->P);
        memset(e->fy[c3] + o, 0, sizeof(ts_real) * (size_t)e->P);
      }
      for (int64_t c = 0; c < e->P; c++)
        e->drain[o + c] = SWE_R(1);
    }
    e->computed[k] = (unsigned char)on;
  }
  free(wet);
  e->nlist = 0;
  for (int level = e->q.levels - 1; level >= 0; level--)
    for (int k = 0; k < nb; k++)
      if (e->computed[k] && e->q.blocks[k].level == level)
        e->list[e->nlist++] = k;
}

/* The flood maps of the computed leaves at time e->t after a step of dt. */
static void record_maps(engine *e, double dt) {
  int MM = e->M * e->M;
  swe_maps m = {e->max_h,
                e->max_speed,
                e->arrival,
                e->max_eta,
                e->duration,
                e->max_hazard,
                e->p.arrival_depth,
                e->t,
                dt,
                (ts_real)e->p.dry_depth,
                (ts_real)(0.01 * e->p.dry_depth)};
#pragma omp parallel for schedule(dynamic, 8) num_threads(e->threads)
  for (int n = 0; n < e->nlist; n++) {
    int k = e->list[n];
    for (int j = 0; j < e->M; j++)
      for (int i = 0; i < e->M; i++) {
        int64_t c = cell_at(e, k, i, j);
        if (e->active[c])
          swe_record_cell(&m, (swe_idx)k * MM + i + e->M * j, e->w[c], e->bed[c], e->hu[c],
                          e->hv[c]);
      }
  }
}

static ts_status engine_step(void *ev, double t, double target, double *dt_out, double *t_after) {
  engine *e = ev;
  int stages = e->p.rk_order == 1 ? 1 : 2, bad = 0;
  double dt = 0;
  choose_leaves(e);
  for (int stage = 0; stage < stages; stage++) {
    fill_ghosts(e);
    if (stage == 0) {
      double amax[TS_BUQ_MAX_LEVELS][2];
      fluxes(e, amax);
      /* the step of the finest cells: wave speeds in finest cells per second */
      double ax = 0, ay = 0;
      for (int l = 0; l < e->q.levels; l++) {
        ax = fmax(ax, ldexp(amax[l][0], -l));
        ay = fmax(ay, ldexp(amax[l][1], -l));
      }
      dt = swe_time_step(ax, ay, e->p.cfl, e->dx0, e->dx0, INFINITY, t, target,
                         e->p.precision == TS_DOUBLE, t_after);
      if (!(dt > 0))
        return ts_error(TS_ERR_NUMERIC, "time step collapsed to %g s at t = %g s", dt, t);
    } else {
      fluxes(e, NULL);
    }
#pragma omp parallel for schedule(dynamic, 4) num_threads(e->threads)
    for (int n = 0; n < e->nlist; n++)
      drain_leaf(e, e->list[n], (ts_real)dt);
#pragma omp parallel for schedule(dynamic, 8) num_threads(e->threads)
    for (int n = 0; n < e->nlist; n++)
      drain_ghosts(e, e->list[n]);
#pragma omp parallel for schedule(dynamic, 4) reduction(| : bad) num_threads(e->threads)
    for (int n = 0; n < e->nlist; n++)
      bad |= update_leaf(e, e->list[n], (ts_real)dt, stage);
  }
  e->t = *t_after;
  record_maps(e, dt);
  *dt_out = dt;
  if (bad)
    return ts_error(TS_ERR_NUMERIC, "non-finite water state at t = %g s", t);
  return TS_OK;
}

/* ---------------------------------------------------------------- creation */

static void engine_destroy(void *ev) {
  engine *e = ev;
  if (!e)
    return;
  ts_real **arrays[] = {&e->w,      &e->hu,    &e->hv,    &e->w_carry,    &e->w0,        &e->hu0,
                        &e->hv0,    &e->u,     &e->v,     &e->char_speed, &e->speed_cap, &e->drain,
                        &e->corner, &e->bed,   &e->fx[0], &e->fx[1],      &e->fx[2],     &e->fy[0],
                        &e->fy[1],  &e->fy[2], &e->src_x, &e->src_y};
  for (size_t k = 0; k < sizeof arrays / sizeof arrays[0]; k++)
    free(*arrays[k]);
  free(e->active);
  free(e->max_h);
  free(e->max_speed);
  free(e->arrival);
  free(e->max_eta);
  free(e->duration);
  free(e->max_hazard);
  free(e->computed);
  free(e->list);
  ts_buq_destroy(&e->q);
  free(e);
}

/* The widths (in finest cells) the grid's rules ask for, or NULL when there are none. */
static ts_status wanted_widths(const ts_swe_params *p, const swe_inputs *in,
                               const ts_raster *surface, double **out) {
  const ts_swe_grid_params *g = &p->grid;
  const ts_raster *bed = in->bed;
  int nx = bed->ncols, ny = bed->nrows;
  size_t n = (size_t)nx * ny;
  *out = NULL;
  if (!g->refine && !(g->refine_slope > 0) && g->refine_water < 0)
    return TS_OK;
  double *target = malloc(sizeof(double) * n), *tmp = malloc(sizeof(double) * n);
  if (!target || !tmp) {
    free(target);
    free(tmp);
    return ts_error(TS_ERR_NOMEM, "swe: out of memory for the grid's rules");
  }
  for (size_t c = 0; c < n; c++)
    target[c] = INFINITY;
  ts_status st = TS_OK;
  if (g->refine) {
    for (size_t c = 0; c < n; c++)
      tmp[c] = ts_raster_is_nodata(g->refine, g->refine->v[c]) ? NAN : g->refine->v[c];
    ts_buq_want_sizes(nx, ny, tmp, bed->cellsize, target);
  }
  if (g->refine_slope > 0) {
    for (size_t c = 0; c < n; c++)
      tmp[c] = ts_raster_is_nodata(bed, bed->v[c]) ? NAN : bed->v[c];
    ts_buq_want_slopes(nx, ny, tmp, bed->cellsize, g->refine_slope, target);
  }
  if (g->refine_water >= 0) {
    for (size_t c = 0; c < n; c++) {
      double depth = 0, z = bed->v[c];
      if (surface && !ts_raster_is_nodata(surface, surface->v[c]))
        depth = surface->v[c] - z;
      else if (!surface && in->h0 && !ts_raster_is_nodata(in->h0, in->h0->v[c]))
        depth = in->h0->v[c];
      tmp[c] = ts_raster_is_nodata(bed, z) ? 0 : depth;
    }
    st = ts_buq_want_water(nx, ny, tmp, g->refine_water, target);
  }
  free(tmp);
  if (st != TS_OK) {
    free(target);
    return st;
  }
  *out = target;
  return TS_OK;
}

/* Every leaf in the list, as computed, with the velocities of its cells (after the state was
 * set from outside the steps). */
static void all_leaves(engine *e) {
  memset(e->computed, 1, (size_t)e->q.nblocks);
  e->nlist = 0;
  for (int k = 0; k < e->q.nblocks; k++)
    e->list[e->nlist++] = k;
#pragma omp parallel for schedule(dynamic, 8) num_threads(e->threads)
  for (int k = 0; k < e->q.nblocks; k++) {
    swe_arrays a = leaf_arrays(e, k);
    swe_consts kc = level_consts(e, e->q.blocks[k].level);
    for (int j = 0; j < e->M; j++)
      for (int i = 0; i < e->M; i++)
        swe_cell_velocity(&a, &kc, local(e, i, j));
  }
}

static ts_status engine_create(void **out, const ts_swe_params *p, const swe_inputs *in,
                               const ts_raster *surface, int threads) {
  const ts_raster *bed = in->bed;
  int nx = bed->ncols, ny = bed->nrows;
  engine *e = calloc(1, sizeof *e);
  unsigned char *valid = malloc((size_t)nx * ny);
  double *target = NULL;
  ts_status st = e && valid ? TS_OK : ts_error(TS_ERR_NOMEM, "swe: out of memory");
  if (st == TS_OK) {
    e->p = *p;
    e->threads = threads;
    e->dx0 = bed->cellsize;
    for (int64_t c = 0; c < (int64_t)nx * ny; c++)
      valid[c] = !ts_raster_is_nodata(bed, bed->v[c]);
    st = wanted_widths(p, in, surface, &target);
  }
  if (st == TS_OK)
    st = ts_buq_build(&e->q, nx, ny, p->grid.block, p->grid.levels, valid, target);
  free(valid);
  free(target);
  if (st != TS_OK) {
    engine_destroy(e);
    return st;
  }
  e->M = e->q.block;
  e->W = e->M + 2 * G + 1;
  e->P = (int64_t)e->W * e->W;
  e->origin = G + (int64_t)G * e->W;
  size_t nb = (size_t)e->q.nblocks, cells = nb * (size_t)e->P, leaf_cells = nb * e->M * e->M;
  ts_real **arrays[NARRAYS] = {&e->w,         &e->hu,    &e->hv,     &e->w_carry, &e->w0,
                               &e->hu0,       &e->hv0,   &e->u,      &e->v,       &e->char_speed,
                               &e->speed_cap, &e->drain, &e->corner, &e->bed,     &e->fx[0],
                               &e->fx[1],     &e->fx[2], &e->fy[0],  &e->fy[1],   &e->fy[2],
                               &e->src_x,     &e->src_y};
  int failed = 0;
  for (int k = 0; k < NARRAYS; k++)
    failed |= !(*arrays[k] = calloc(cells, sizeof(ts_real)));
  failed |= !(e->active = calloc(cells, 1));
  double **maps[] = {&e->max_h,   &e->max_speed, &e->arrival,
                     &e->max_eta, &e->duration,  &e->max_hazard};
  for (size_t k = 0; k < sizeof maps / sizeof maps[0]; k++)
    failed |= !(*maps[k] = calloc(leaf_cells, sizeof(double)));
  failed |= !(e->computed = calloc(nb, 1)) || !(e->list = malloc(sizeof(int) * nb));
  if (failed) {
    engine_destroy(e);
    return ts_error(TS_ERR_NOMEM, "swe: out of memory for %zu quadtree blocks", nb);
  }
  for (size_t c = 0; c < leaf_cells; c++)
    e->arrival[c] = e->max_eta[c] = NAN;
#pragma omp parallel for schedule(dynamic, 8) num_threads(threads)
  for (int k = 0; k < e->q.nblocks; k++) {
    build_leaf(e, k, bed);
    init_leaf(e, k, in);
  }
  all_leaves(e);
  fill_ghosts(e);
  record_maps(e, 0);
  *out = e;
  return TS_OK;
}

/* Sets the surface to eta (each cell: the mean of eta over its finest cells holding one) where
 * it lies above the bed, dry elsewhere, and restarts the maps. */
static void engine_set_surface(void *ev, const ts_raster *eta) {
  engine *e = ev;
  int M = e->M;
#pragma omp parallel for schedule(dynamic, 8) num_threads(e->threads)
  for (int k = 0; k < e->q.nblocks; k++) {
    const ts_buq_block *b = &e->q.blocks[k];
    swe_arrays a = leaf_arrays(e, k);
    for (int j = 0; j < M; j++)
      for (int i = 0; i < M; i++) {
        swe_idx c = local(e, i, j);
        int n;
        double v = level_mean(eta, b->level, b->bi * M + i, b->bj * M + j, 0, &n);
        a.w[c] = a.bed[c];
        if (a.active[c] && n > 0 && (ts_real)v > a.bed[c])
          a.w[c] = (ts_real)v;
        if (!(a.w[c] > a.bed[c]))
          a.hu[c] = a.hv[c] = 0;
      }
  }
  size_t leaf_cells = (size_t)e->q.nblocks * M * M;
  for (size_t c = 0; c < leaf_cells; c++) {
    e->max_h[c] = e->max_speed[c] = e->duration[c] = e->max_hazard[c] = 0;
    e->arrival[c] = e->max_eta[c] = NAN;
  }
  all_leaves(e);
  record_maps(e, 0);
}

/* ---------------------------------------------------------------- access */

static double cell_value(const engine *e, ts_swe_var var, int k, int i, int j) {
  int64_t c = cell_at(e, k, i, j), m = (int64_t)k * e->M * e->M + i + (int64_t)e->M * j;
  if (!e->active[c])
    return NAN;
  double h = (double)swe_max(SWE_R(0), e->w[c] - e->bed[c]), u = 0, v = 0;
  if (h > e->p.dry_depth)
    u = (double)e->u[c], v = (double)e->v[c];
  switch (var) {
  case TS_SWE_H: return h;
  case TS_SWE_HU: return (double)e->hu[c];
  case TS_SWE_HV: return (double)e->hv[c];
  case TS_SWE_ETA: return (double)e->w[c];
  case TS_SWE_BED: return (double)e->bed[c];
  case TS_SWE_U: return u;
  case TS_SWE_V: return v;
  case TS_SWE_SPEED: return sqrt(u * u + v * v);
  case TS_SWE_MAX_H: return e->max_h[m];
  case TS_SWE_MAX_SPEED: return e->max_speed[m];
  case TS_SWE_ARRIVAL: return e->arrival[m];
  case TS_SWE_MAX_ETA: return e->max_eta[m];
  case TS_SWE_DURATION: return e->duration[m];
  case TS_SWE_MAX_HAZARD: return e->max_hazard[m];
  case TS_SWE_LOSS: return 0;
  }
  return NAN;
}

static double engine_value(const void *ev, ts_swe_var var, int i, int j) {
  const engine *e = ev;
  int k = ts_buq_find(&e->q, i, j);
  if (k < 0)
    return NAN;
  const ts_buq_block *b = &e->q.blocks[k];
  return cell_value(e, var, k, (i >> b->level) - b->bi * e->M, (j >> b->level) - b->bj * e->M);
}

static void engine_get(const void *ev, ts_swe_var var, double *out) {
  const engine *e = ev;
  int nx = e->q.nx, ny = e->q.ny, M = e->M;
  for (int64_t c = 0; c < (int64_t)nx * ny; c++)
    out[c] = NAN;
#pragma omp parallel for schedule(dynamic, 8) num_threads(e->threads)
  for (int k = 0; k < e->q.nblocks; k++) {
    const ts_buq_block *b = &e->q.blocks[k];
    int width = 1 << b->level;
    for (int j = 0; j < M; j++)
      for (int i = 0; i < M; i++) {
        double v = cell_value(e, var, k, i, j);
        int64_t x0 = ((int64_t)b->bi * M + i) * width, y0 = ((int64_t)b->bj * M + j) * width;
        for (int64_t y = y0; y < y0 + width && y < ny; y++)
          for (int64_t x = x0; x < x0 + width && x < nx; x++)
            out[x + y * nx] = v;
      }
  }
}

static void engine_volume(const void *ev, ts_exact_sum *sum) {
  const engine *e = ev;
  for (int k = 0; k < e->q.nblocks; k++) {
    double area = ldexp(1.0, 2 * e->q.blocks[k].level);
    for (int j = 0; j < e->M; j++)
      for (int i = 0; i < e->M; i++) {
        int64_t c = cell_at(e, k, i, j);
        if (!e->active[c])
          continue;
        ts_exact_sum_add(sum, ((double)e->w[c] - (double)e->bed[c]) * area);
        ts_exact_sum_add(sum, (double)e->w_carry[c] * area);
      }
  }
}

static int64_t engine_wet_cells(const void *ev) {
  const engine *e = ev;
  int64_t n = 0;
  ts_real dry = (ts_real)e->p.dry_depth;
  for (int k = 0; k < e->q.nblocks; k++)
    for (int j = 0; j < e->M; j++)
      for (int i = 0; i < e->M; i++) {
        int64_t c = cell_at(e, k, i, j);
        n += e->active[c] && e->w[c] - e->bed[c] > dry;
      }
  return n;
}

static int64_t engine_active_blocks(const void *ev, int64_t *blocks) {
  const engine *e = ev;
  int64_t n = 0;
  for (int k = 0; k < e->q.nblocks; k++)
    n += e->computed[k];
  *blocks = e->q.nblocks;
  return n;
}

static void engine_stats(const void *ev, ts_swe_grid_stats *out) {
  const engine *e = ev;
  memset(out, 0, sizeof *out);
  out->levels = e->q.levels;
  out->block = e->M;
  for (int l = 0; l < e->q.levels; l++) {
    out->blocks_per_level[l] = e->q.blocks_per_level[l];
    out->cells_per_level[l] = e->q.cells_per_level[l];
  }
  out->cells = ts_buq_cells(&e->q);
  out->cells_uniform_finest = (int64_t)e->q.nx * e->q.ny;
  /* the windows' arrays and maps against a part's (each of its arrays: its cells plus its
   * frame, here taken as the cells alone) */
  double per_window = (double)e->P * (NARRAYS * sizeof(ts_real) + 1);
  double per_leaf_cell = 6 * sizeof(double);
  out->bytes = e->q.nblocks * per_window + (double)out->cells * per_leaf_cell;
  out->bytes_uniform_finest =
      (double)out->cells_uniform_finest * (NARRAYS * sizeof(ts_real) + 1 + 11 * sizeof(double));
}

/* Checkpoint: the state (w, hu, hv, w_carry) of every leaf cell, then the six maps. */
static size_t engine_state_bytes(const void *ev) {
  const engine *e = ev;
  size_t cells = (size_t)e->q.nblocks * e->M * e->M;
  return cells * (4 * sizeof(ts_real) + 6 * sizeof(double));
}

static void engine_save(const void *ev, void *blob) {
  const engine *e = ev;
  char *p = blob;
  const ts_real *state[4] = {e->w, e->hu, e->hv, e->w_carry};
  for (int a = 0; a < 4; a++)
    for (int k = 0; k < e->q.nblocks; k++)
      for (int j = 0; j < e->M; j++) {
        memcpy(p, state[a] + cell_at(e, k, 0, j), sizeof(ts_real) * (size_t)e->M);
        p += sizeof(ts_real) * (size_t)e->M;
      }
  size_t cells = (size_t)e->q.nblocks * e->M * e->M;
  const double *maps[6] = {e->max_h,   e->max_speed, e->arrival,
                           e->max_eta, e->duration,  e->max_hazard};
  for (int m = 0; m < 6; m++) {
    memcpy(p, maps[m], sizeof(double) * cells);
    p += sizeof(double) * cells;
  }
}

static void engine_load(void *ev, const void *blob) {
  engine *e = ev;
  const char *p = blob;
  ts_real *state[4] = {e->w, e->hu, e->hv, e->w_carry};
  for (int a = 0; a < 4; a++)
    for (int k = 0; k < e->q.nblocks; k++)
      for (int j = 0; j < e->M; j++) {
        memcpy(state[a] + cell_at(e, k, 0, j), p, sizeof(ts_real) * (size_t)e->M);
        p += sizeof(ts_real) * (size_t)e->M;
      }
  size_t cells = (size_t)e->q.nblocks * e->M * e->M;
  double *maps[6] = {e->max_h, e->max_speed, e->arrival, e->max_eta, e->duration, e->max_hazard};
  for (int m = 0; m < 6; m++) {
    memcpy(maps[m], p, sizeof(double) * cells);
    p += sizeof(double) * cells;
  }
  all_leaves(e);
}

const swe_buq_ops SWE_BUQ_OPS = {
    engine_create,      engine_destroy, engine_set_surface, engine_step,          engine_value,
    engine_get,         engine_volume,  engine_wet_cells,   engine_active_blocks, engine_stats,
    engine_state_bytes, engine_save,    engine_load};
