/* CPU (OpenMP) implementation of the shallow-water passes on one part (subdomain window),
 * compiled once per precision: with TS_REAL_DOUBLE=0 it defines swe_kernels_float, with
 * TS_REAL_DOUBLE=1 swe_kernels_double.
 *
 * One stage, each pass on a region of the window given by swe_step.c: fill the ghost frame of
 * the global sides (boundary conditions), sweep rows for the x-face fluxes and column strips for
 * the y-face fluxes (each cell is reconstructed once per axis), compute each cell's outflow
 * limiter, then update the cells with friction. The x and y parts of every update are formed
 * separately and added last, so transposing the input transposes the output bit for bit. Every
 * pass visits only the active tiles (early exit). */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "physics/swe/swe_internal.h"
#include "tessera/cpu.h"

#if TS_REAL_DOUBLE
typedef double ts_real;
#define SWE_SQRT sqrt
#define SWE_KERNELS TS_CPU_KERNEL_NAME(swe_kernels_double)
#else
typedef float ts_real;
#define SWE_SQRT sqrtf
#define SWE_KERNELS TS_CPU_KERNEL_NAME(swe_kernels_float)
#endif

typedef int64_t swe_idx;
#include "physics/swe/swe_stage.h"

#define A(ptr) ((ts_real *)(ptr))

static void kernels_refresh_velocities(swe_part *s, swe_region r) {
  swe_arrays a = swe_part_arrays(s);
  swe_consts k = swe_part_consts(s);
#pragma omp parallel for schedule(static) num_threads(s->threads)
  for (int j = r.j0; j < r.j1; j++)
    for (int i = r.i0; i < r.i1; i++)
      swe_cell_velocity(&a, &k, swe_index(s, i, j));
}

/* ---------------------------------------------------------------- initialisation */

/* Bed at corners: mean of the active cells around each corner, so the bed of a wet cell next to a
 * NODATA or wall cell is never raised by it; faces take the mean of their two corners and cells
 * the mean of their four (KP07), so the depth of a cell is the mean of its face depths. Ghost
 * cells of open boundaries replicate the edge cell of the DEM. The window reads the global DEM,
 * so its corners and cells equal those of the whole grid. */
static void build_bed(swe_part *s, const ts_raster *dem) {
  ts_real *corner = A(s->corner), *bed = A(s->bed);
  int nx = dem->ncols, ny = dem->nrows;
#pragma omp parallel for schedule(static) num_threads(s->threads)
  for (int j = -SWE_GHOST + 1; j < s->ny + SWE_GHOST; j++) {
    for (int i = -SWE_GHOST + 1; i < s->nx + SWE_GHOST; i++) {
      /* cells around corner (i, j), summed as (sw + ne) + (se + nw): symmetric under transposition
       */
      int ci[4] = {i - 1, i, i, i - 1}, cj[4] = {j - 1, j, j - 1, j};
      double z[4] = {0, 0, 0, 0};
      int n = 0;
      for (int k = 0; k < 4; k++) {
        if (!s->active[swe_index(s, ci[k], cj[k])])
          continue;
        int gi = s->gi0 + ci[k], gj = s->gj0 + cj[k];
        int ri = gi < 0 ? 0 : (gi >= nx ? nx - 1 : gi);
        int rj = gj < 0 ? 0 : (gj >= ny ? ny - 1 : gj);
        z[k] = dem->v[ri + (int64_t)rj * nx];
        n++;
      }
      corner[swe_index(s, i, j)] = n ? (ts_real)(((z[0] + z[1]) + (z[2] + z[3])) / n) : SWE_R(0);
    }
  }
#pragma omp parallel for schedule(static) num_threads(s->threads)
  for (int j = -SWE_GHOST + 1; j < s->ny + SWE_GHOST - 1; j++) {
    for (int i = -SWE_GHOST + 1; i < s->nx + SWE_GHOST - 1; i++) {
      int64_t c = swe_index(s, i, j);
      ts_real sw = corner[c], se = corner[c + 1], nw = corner[c + s->row],
              ne = corner[c + s->row + 1];
      bed[c] = SWE_R(0.25) * ((sw + ne) + (se + nw));
    }
  }
  ts_real *drain = A(s->drain);
  for (int64_t c = 0; c < s->plane; c++)
    drain[c] = SWE_R(1);
}

/* The start-of-step copy (w0, hu0, hv0) of every cell of the window equal to its state. RK2's
 * first stage overwrites it for the cells it updates; the others (NODATA cells, wall ghosts)
 * keep it, and the GPU's second stage reads them there: with zeros instead, a NODATA cell of
 * the sea (bed below 0) had a speed of its own in that stage, which raised the speed cap of its
 * neighbours there and not on the CPU. */
static void keep_start_state(swe_part *s) {
  size_t bytes = (size_t)s->plane * s->real_size;
  memcpy(s->w0, s->w, bytes);
  memcpy(s->hu0, s->hu, bytes);
  memcpy(s->hv0, s->hv, bytes);
}

static void kernels_init(swe_part *s, const swe_inputs *in) {
  build_bed(s, in->bed);
  ts_real *w = A(s->w), *hu = A(s->hu), *hv = A(s->hv), *bed = A(s->bed);
  const ts_raster *h0 = in->h0, *hu0 = in->hu0, *hv0 = in->hv0;
  /* every cell of the window dry first: wall ghosts stay so, with no speed of their own (a
   * surface of 0 over a bed below 0 gave them one, which raised the speed cap of the cells
   * along the wall) */
  for (int64_t c = 0; c < s->plane; c++)
    w[c] = bed[c];
#pragma omp parallel for schedule(static) num_threads(s->threads)
  for (int j = 0; j < s->ny; j++) {
    for (int i = 0; i < s->nx; i++) {
      int64_t c = swe_index(s, i, j);
      int64_t r = (s->gi0 + i) + (int64_t)(s->gj0 + j) * in->bed->ncols;
      if (!s->active[c]) {
        w[c] = bed[c];
        continue;
      }
      double h = h0 ? h0->v[r] : 0;
      if (h0 && ts_raster_is_nodata(h0, h))
        h = 0;
      w[c] = h > 0 ? bed[c] + (ts_real)h : bed[c];
      hu[c] = (ts_real)(hu0 && !ts_raster_is_nodata(hu0, hu0->v[r]) && h > 0 ? hu0->v[r] : 0);
      hv[c] = (ts_real)(hv0 && !ts_raster_is_nodata(hv0, hv0->v[r]) && h > 0 ? hv0->v[r] : 0);
      if (in->friction)
        A(s->friction)[c] = (ts_real)in->friction->v[r];
    }
  }
  keep_start_state(s);
}

static void kernels_set_surface(swe_part *s, const ts_raster *eta) {
  ts_real *w = A(s->w), *hu = A(s->hu), *hv = A(s->hv), *bed = A(s->bed);
#pragma omp parallel for schedule(static) num_threads(s->threads)
  for (int j = 0; j < s->ny; j++) {
    for (int i = 0; i < s->nx; i++) {
      int64_t c = swe_index(s, i, j);
      double e = eta->v[(s->gi0 + i) + (int64_t)(s->gj0 + j) * eta->ncols];
      w[c] = bed[c];
      if (s->active[c] && !ts_raster_is_nodata(eta, e) && (ts_real)e > bed[c])
        w[c] = (ts_real)e;
      if (!(w[c] > bed[c]))
        hu[c] = hv[c] = 0;
    }
  }
  keep_start_state(s);
}

/* ---------------------------------------------------------------- boundary conditions */

/* Ghost cells of the global sides of the window (sides facing other subdomains have none). */
static void kernels_fill_boundaries(swe_part *s, double t) {
  int nx = s->nx, ny = s->ny;
  swe_arrays a = swe_part_arrays(s);
  swe_consts k = swe_part_consts(s);
  for (int side = 0; side < 4; side++) {
    const ts_swe_bc *bc = &s->p->bc[side];
    if (bc->type == TS_BC_WALL || s->internal[side])
      continue;
    double q_unit = swe_inflow_unit(s, side, t, 1);
    int along = side < 2 ? ny : nx;
    for (int at = 0; at < along; at++)
      for (int layer = 1; layer <= SWE_GHOST; layer++)
        swe_fill_side_ghost(&a, &k, s->origin, nx, ny, side, at, layer, (int)bc->type,
                            (ts_real)bc->level, (ts_real)q_unit);
  }
}

/* ---------------------------------------------------------------- fluxes */

/* The fluxes are computed in runs of at most RUN cells along x, so that each pass is a loop over
 * a run that the compiler vectorises (every branch of the cell functions is a select): the
 * reconstruction of a run of cells along an axis, the faces between two runs of sides, the bed
 * sources of a run of cells. Each cell is reconstructed once per axis and each face computed
 * once per tile, as a sweep along lines would, with the same functions in the same order: the
 * same bits. Runs of up to 256 cells (16 tiles of 16) take 18 % less time than runs of 64 on 2
 * cores (`bench swe --size 2048`, Malpasset 20 m; 512: no better, 1024: slower on Malpasset). */
#define RUN 256

/* The low and high sides of a run of cells along one axis, and their activity. */
typedef struct side_run {
  ts_real lo_w[RUN + 2], lo_b[RUN + 2], lo_h[RUN + 2], lo_u[RUN + 2], lo_v[RUN + 2];
  ts_real hi_w[RUN + 2], hi_b[RUN + 2], hi_h[RUN + 2], hi_u[RUN + 2], hi_v[RUN + 2];
  int act[RUN + 2];
} side_run;

/* Each pass loops over a span of a run: the items [at, at + n). A run of n >= SPAN items is cut
 * into its first n - n % SPAN and its last SPAN (computed twice where they overlap: the same
 * values), so that no item is left to a scalar remainder loop. */
#if defined(TS_CPU_V4) && TS_CPU_V4
#define SPAN 16 /* a vector of 16 floats */
#else
#define SPAN 8
#endif
#define IN_SPANS(n, pass)                                                                          \
  do {                                                                                             \
    int whole_ = (n) < SPAN ? (n) : (n) - (n) % SPAN;                                              \
    pass(0, whole_);                                                                               \
    if (whole_ < (n))                                                                              \
      pass((n)-SPAN, SPAN);                                                                        \
  } while (0)

/* Cells c0 + at .. c0 + at + n - 1 of a row reconstructed along the axis whose neighbour offset
 * is `step` (x: 1, y: the row; the faces' corners are `cstep` apart across it) into r (index at
 * ..). */
static void reconstruct_span(const swe_part *s, const swe_consts *k, swe_idx c0, int at, int n,
                             swe_idx step, swe_idx cstep, int x_axis, side_run *restrict r) {
  const ts_real *restrict w = A(s->w), *restrict bed = A(s->bed), *restrict corner = A(s->corner);
  const ts_real *restrict qn = A(x_axis ? s->hu : s->hv), *restrict qt = A(x_axis ? s->hv : s->hu);
  const ts_real *restrict un = A(x_axis ? s->u : s->v), *restrict ut = A(x_axis ? s->v : s->u);
  const unsigned char *restrict active = s->active;
  const swe_consts kk = *k;
  /* the cells' activity as ints first: with bytes in the loop below, the compiler would take 32
   * cells a vector iteration (too many registers) */
  int act_m[RUN + 2], act_c[RUN + 2], act_p[RUN + 2];
  for (int q = at; q < at + n; q++) {
    act_m[q] = active[c0 + q - step];
    act_c[q] = active[c0 + q];
    act_p[q] = active[c0 + q + step];
  }
  for (int q = at; q < at + n; q++) {
    swe_idx c = c0 + q, p = c + step;
    int act[3] = {act_m[q], act_c[q], act_p[q]};
    ts_real face_lo = swe_corner_mean(corner[c], corner[c + cstep]);
    ts_real face_hi = swe_corner_mean(corner[p], corner[p + cstep]);
    swe_side lo, hi;
    swe_reconstruct_stencil(act, w, bed, qn, qt, un, ut, &kk, c, step, face_lo, face_hi, &lo, &hi);
    r->lo_w[q] = lo.w, r->lo_b[q] = lo.b, r->lo_h[q] = lo.h, r->lo_u[q] = lo.u, r->lo_v[q] = lo.v;
    r->hi_w[q] = hi.w, r->hi_b[q] = hi.b, r->hi_h[q] = hi.h, r->hi_u[q] = hi.u, r->hi_v[q] = hi.v;
    r->act[q] = act[1];
  }
}

static void reconstruct_run(const swe_part *s, const swe_consts *k, swe_idx c0, int n, swe_idx step,
                            swe_idx cstep, int x_axis, side_run *r) {
#define RECONSTRUCT(at, count) reconstruct_span(s, k, c0, at, count, step, cstep, x_axis, r)
  IN_SPANS(n, RECONSTRUCT);
#undef RECONSTRUCT
}

/* The faces q = at .. at + n - 1 between the high sides of `low` (index a0 + q) and the low
 * sides of `high` (b0 + q): fluxes into f0, f1, f2 at c0 + q, the pressure corrections of their
 * low and high cells into corr_lo[q], corr_hi[q], wave speeds into speed[q]. */
static void faces_span(const swe_consts *k, const side_run *low, int a0, const side_run *high,
                       int b0, int at, int n, ts_real *restrict f0, ts_real *restrict f1,
                       ts_real *restrict f2, swe_idx c0, ts_real *restrict corr_lo,
                       ts_real *restrict corr_hi, ts_real *restrict speed) {
  const swe_consts kk = *k;
  const ts_real *restrict aw = low->hi_w + a0, *restrict ab = low->hi_b + a0;
  const ts_real *restrict ah = low->hi_h + a0, *restrict au = low->hi_u + a0;
  const ts_real *restrict av = low->hi_v + a0, *restrict bw = high->lo_w + b0;
  const ts_real *restrict bb = high->lo_b + b0, *restrict bh = high->lo_h + b0;
  const ts_real *restrict bu = high->lo_u + b0, *restrict bv = high->lo_v + b0;
  const int *restrict act_a = low->act + a0, *restrict act_b = high->act + b0;
  for (int q = at; q < at + n; q++) {
    swe_side hi_a = {aw[q], ab[q], ah[q], au[q], av[q]};
    swe_side lo_b = {bw[q], bb[q], bh[q], bu[q], bv[q]};
    ts_real flux[3], cl, ch;
    speed[q] = swe_face_between(&kk, act_a[q], act_b[q], hi_a, lo_b, flux, &cl, &ch);
    f0[c0 + q] = flux[0], f1[c0 + q] = flux[1], f2[c0 + q] = flux[2];
    corr_lo[q] = cl, corr_hi[q] = ch;
  }
}

static void faces_run(const swe_consts *k, const side_run *low, int a0, const side_run *high,
                      int b0, int n, ts_real *f0, ts_real *f1, ts_real *f2, swe_idx c0,
                      ts_real *corr_lo, ts_real *corr_hi, ts_real *speed) {
#define FACES(at, count)                                                                           \
  faces_span(k, low, a0, high, b0, at, count, f0, f1, f2, c0, corr_lo, corr_hi, speed)
  IN_SPANS(n, FACES);
#undef FACES
}

/* The bed sources of cells q = at .. at + n - 1 of r (index r0 + q): the pressure correction of
 * the low face (below[q]) and the slope source between the cell's sides where the cell is
 * active, less the correction of the high face (above[q]); into src[c0 + q]. */
static void sources_span(const swe_consts *k, const side_run *r, int r0, int at, int n,
                         const ts_real *restrict below, const ts_real *restrict above,
                         ts_real *restrict src, swe_idx c0) {
  ts_real g = k->g;
  const ts_real *restrict lh = r->lo_h + r0, *restrict lb = r->lo_b + r0;
  const ts_real *restrict hh = r->hi_h + r0, *restrict hb = r->hi_b + r0;
  const int *restrict act = r->act + r0;
  for (int q = at; q < at + n; q++) {
    swe_side lo = {0, lb[q], lh[q], 0, 0}, hi = {0, hb[q], hh[q], 0, 0};
    ts_real low = act[q] ? below[q] + swe_bed_source(lo, hi, g) : SWE_R(0);
    src[c0 + q] = low - above[q];
  }
}

static void sources_run(const swe_consts *k, const side_run *r, int r0, int n, const ts_real *below,
                        const ts_real *above, ts_real *src, swe_idx c0) {
#define SOURCES(at, count) sources_span(k, r, r0, at, count, below, above, src, c0)
  IN_SPANS(n, SOURCES);
#undef SOURCES
}

/* The largest of speed[lo .. hi] within [0, n) (none: 0), in vectors (a chain of scalar
 * maxima waited on each one's latency: 4 % of a step). The speeds are >= 0 or NaN; a NaN speed
 * goes with a NaN flux, which the update reports. */
static ts_real speed_max(const ts_real *speed, int n, int lo, int hi) {
  int from = lo < 0 ? 0 : lo, to = hi + 1 < n ? hi + 1 : n;
  ts_real m = 0;
#pragma omp simd reduction(max : m)
  for (int q = from; q < to; q++)
    m = swe_max(m, speed[q]);
  return m;
}

/* What a thread keeps for the runs of a tile. */
typedef struct flux_scratch {
  side_run rows[2];
  ts_real corr_lo[RUN + 1], corr_hi[RUN + 1], speed[RUN + 1], pending[RUN], zero[RUN];
} flux_scratch;

/* Fluxes on the faces of the cells [i0, i1) x [j0, j1) (i1 - i0 <= RUN) and the bed sources of
 * those cells: x faces i0 .. i1 of each row, y faces j0 .. j1 of each column. The wave speeds
 * of the faces of owned cells go into ax, ay. */
static void fluxes_block(swe_part *s, const swe_consts *k, int i0, int i1, int j0, int j1,
                         flux_scratch *x, ts_real *ax, ts_real *ay) {
  swe_region own = s->own;
  int n = i1 - i0;
  ts_real *fx0 = A(s->fx[0]), *fx1 = A(s->fx[1]), *fx2 = A(s->fx[2]), *sx = A(s->src_x);
  ts_real *fy0 = A(s->fy[0]), *fy1 = A(s->fy[1]), *fy2 = A(s->fy[2]), *sy = A(s->src_y);
  /* x: cells i0 - 1 .. i1 of each row, faces i0 .. i1 */
  for (int j = j0; j < j1; j++) {
    side_run *r = &x->rows[0];
    swe_idx c = swe_index(s, i0, j);
    reconstruct_run(s, k, c - 1, n + 2, 1, s->row, 1, r);
    faces_run(k, r, 0, r, 1, n + 1, fx0, fx1, fx2, c, x->corr_lo, x->corr_hi, x->speed);
    sources_run(k, r, 1, n, x->corr_hi, x->corr_lo + 1, sx, c);
    if (j >= own.j0 && j < own.j1)
      *ax = swe_max(*ax, speed_max(x->speed, n + 1, own.i0 - i0, own.i1 - i0));
  }
  /* y: rows j0 - 1 .. j1 of the cells i0 .. i1 - 1, faces j0 .. j1 between them */
  int lo = own.i0 - i0, hi = own.i1 - 1 - i0;
  reconstruct_run(s, k, swe_index(s, i0, j0 - 1), n, s->row, 1, 0, &x->rows[1]);
  for (int j = j0; j <= j1; j++) {
    side_run *below = &x->rows[(j - j0 + 1) & 1], *here = &x->rows[(j - j0) & 1];
    swe_idx c = swe_index(s, i0, j);
    reconstruct_run(s, k, c, n, s->row, 1, 0, here);
    faces_run(k, below, 0, here, 0, n, fy0, fy1, fy2, c, x->corr_lo, x->corr_hi, x->speed);
    if (j > j0)
      for (int q = 0; q < n; q++)
        sy[c - s->row + q] = x->pending[q] - x->corr_lo[q];
    /* the next row's bed sources start with this row's: the low face's correction and the
     * slope source (sources_run with a zero high face) */
    sources_run(k, here, 0, n, x->corr_hi, x->zero, x->pending, 0);
    if (j >= own.j0 && j <= own.j1)
      *ay = swe_max(*ay, speed_max(x->speed, n, lo, hi));
  }
}

/* Cells of tile k within region r: [i0, i1) x [j0, j1); 0 when there are none. */
static inline int tile_cells(const swe_part *s, int k, swe_region r, int *i0, int *i1, int *j0,
                             int *j1) {
  int ts = s->p->tile_size, tx = k % s->tiles_x, ty = k / s->tiles_x;
  *i0 = tx * ts > r.i0 ? tx * ts : r.i0;
  *j0 = ty * ts > r.j0 ? ty * ts : r.j0;
  *i1 = (tx + 1) * ts < r.i1 ? (tx + 1) * ts : r.i1;
  *j1 = (ty + 1) * ts < r.j1 ? (ty + 1) * ts : r.j1;
  return *i0 < *i1 && *j0 < *j1;
}

/* The active tiles in runs along x, the work items of the passes: consecutive tiles of a row of
 * tiles, up to RUN cells a run (a row's sweep along x then reconstructs RUN + 2 cells in vector
 * spans instead of tile + 2, most of them twice, per tile; the other passes loop over longer
 * rows), as (first entry of tile_list, tiles) into tile_runs (made with the list, by the tile
 * mask). A cell's or face's values depend on the cells around it only, so the runs change no
 * value. */
static void tile_runs(swe_part *s) {
  int most = RUN / s->p->tile_size > 1 ? RUN / s->p->tile_size : 1, n = 0;
  for (int t = 0; t < s->ntile_list; t++) {
    int k = s->tile_list[t];
    if (n > 0) {
      int *last = &s->tile_runs[2 * (n - 1)], first = s->tile_list[last[0]];
      if (k == first + last[1] && k / s->tiles_x == first / s->tiles_x && last[1] < most) {
        last[1]++;
        continue;
      }
    }
    s->tile_runs[2 * n] = t, s->tile_runs[2 * n + 1] = 1;
    n++;
  }
  s->ntile_runs = n;
}

/* Cells of run q of tile_runs within region r: [i0, i1) x [j0, j1); 0 when there are none. */
static int run_cells(const swe_part *s, int q, swe_region r, int *i0, int *i1, int *j0, int *j1) {
  int first = s->tile_runs[2 * q], any = 0, a0, a1, b0, b1;
  for (int t = first; t < first + s->tile_runs[2 * q + 1]; t++)
    if (tile_cells(s, s->tile_list[t], r, &a0, &a1, &b0, &b1)) { /* (one row of tiles) */
      *i0 = any ? *i0 : a0, *i1 = a1, *j0 = b0, *j1 = b1;
      any = 1;
    }
  return any;
}

/* Fluxes on every face of the cells of r in active tiles and bed sources of those cells; adds
 * the largest wave speeds along x and y over the faces of owned cells to amax. Skipped tiles
 * are dry with dry surroundings: their fluxes are zero. */
static void kernels_fluxes(swe_part *s, swe_region r, double amax[2]) {
  ts_real ax = 0, ay = 0;
  swe_consts k = swe_part_consts(s);
#pragma omp parallel reduction(max : ax, ay) num_threads(s->threads)
  {
    flux_scratch x; /* 54 kB in double */
    memset(x.zero, 0, sizeof x.zero);
#pragma omp for schedule(dynamic, 1)
    for (int q = 0; q < s->ntile_runs; q++) {
      int i0, i1, j0, j1;
      if (!run_cells(s, q, r, &i0, &i1, &j0, &j1))
        continue;
      for (int a = i0; a < i1; a += RUN)
        fluxes_block(s, &k, a, a + RUN < i1 ? a + RUN : i1, j0, j1, &x, &ax, &ay);
    }
  }
  if (amax) {
    amax[0] = fmax(amax[0], (double)ax);
    amax[1] = fmax(amax[1], (double)ay);
  }
}

/* Override the mass flux through inflow sides with the prescribed discharge, so the volume that
 * enters is exactly the hydrograph's. */
static void kernels_impose_inflow(swe_part *s, double t) {
  swe_arrays a = swe_part_arrays(s);
  for (int side = 0; side < 4; side++) {
    if (s->p->bc[side].type != TS_BC_INFLOW || s->bc_cells[side] == 0 || s->internal[side])
      continue;
    ts_real q = (ts_real)swe_inflow_unit(s, side, t, 0);
    int along = side < 2 ? s->ny : s->nx;
    for (int at = 0; at < along; at++)
      swe_impose_side_flux(&a, s->origin, s->nx, s->ny, side, at, q);
  }
}

/* Outflow limiter and speed cap of every cell of r in active tiles (swe_drain_cell). */
static void kernels_drain(swe_part *s, swe_region r, double dt) {
  swe_arrays a = swe_part_arrays(s);
  swe_consts k = swe_part_consts(s);
#pragma omp parallel for schedule(dynamic, 1) num_threads(s->threads)
  for (int q = 0; q < s->ntile_runs; q++) {
    int i0, i1, j0, j1;
    if (!run_cells(s, q, r, &i0, &i1, &j0, &j1))
      continue;
    for (int j = j0; j < j1; j++) {
      int64_t c0 = swe_index(s, i0, j);
#pragma omp simd
      for (int i = 0; i < i1 - i0; i++)
        swe_drain_cell(&a, &k, c0 + i, (ts_real)dt);
    }
  }
}

/* Euler stage on the active cells of r in active tiles (swe_update_row). Returns nonzero if a
 * non-finite value appeared. */
static int kernels_update(swe_part *s, swe_region r, double dt, int stage) {
  swe_arrays a = swe_part_arrays(s);
  swe_consts k = swe_part_consts(s);
  int bad = 0;
#pragma omp parallel for schedule(dynamic, 1) reduction(| : bad) num_threads(s->threads)
  for (int q = 0; q < s->ntile_runs; q++) {
    int i0, i1, j0, j1;
    if (!run_cells(s, q, r, &i0, &i1, &j0, &j1))
      continue;
    for (int j = j0; j < j1; j++)
      bad |= swe_update_row(&a, &k, swe_index(s, i0, j), i1 - i0, (ts_real)dt, stage);
  }
  return bad;
}

/* ---------------------------------------------------------------- diagnostics and access */

static double cell_value(const swe_part *s, ts_swe_var var, int64_t c) {
  const ts_real *w = A(s->w), *bed = A(s->bed);
  double h = (double)swe_max(SWE_R(0), w[c] - bed[c]);
  double u = 0, v = 0;
  if (h > s->p->dry_depth) {
    u = (double)A(s->u)[c];
    v = (double)A(s->v)[c];
  }
  switch (var) {
  case TS_SWE_H: return h;
  case TS_SWE_HU: return (double)A(s->hu)[c];
  case TS_SWE_HV: return (double)A(s->hv)[c];
  case TS_SWE_ETA: return (double)w[c];
  case TS_SWE_BED: return (double)bed[c];
  case TS_SWE_U: return u;
  case TS_SWE_V: return v;
  case TS_SWE_SPEED: return sqrt(u * u + v * v);
  case TS_SWE_MAX_H: return s->max_h[c];
  case TS_SWE_MAX_SPEED: return s->max_speed[c];
  case TS_SWE_ARRIVAL: return s->arrival[c];
  case TS_SWE_MAX_ETA: return s->max_eta[c];
  case TS_SWE_DURATION: return s->duration[c];
  case TS_SWE_MAX_HAZARD: return s->max_hazard[c];
  case TS_SWE_LOSS: return s->loss[c];
  }
  return NAN;
}

static double kernels_get_cell(const swe_part *s, ts_swe_var var, int i, int j) {
  int64_t c = swe_index(s, i, j);
  return s->active[c] ? cell_value(s, var, c) : NAN;
}

static void kernels_volume(const swe_part *s, ts_exact_sum *sum) {
  const ts_real *w = A(s->w), *bed = A(s->bed), *carry = A(s->w_carry);
  ts_exact_sum total = {0, 0};
  for (int j = s->own.j0; j < s->own.j1; j++)
    for (int i = s->own.i0; i < s->own.i1; i++) {
      int64_t c = swe_index(s, i, j);
      if (s->active[c]) {
        ts_exact_sum_add(&total, (double)w[c] - (double)bed[c]);
        ts_exact_sum_add(&total, (double)carry[c]);
      }
    }
  ts_exact_sum_merge(sum, total);
}

static int64_t kernels_wet_cells(const swe_part *s) {
  const ts_real *w = A(s->w), *bed = A(s->bed);
  ts_real dry = (ts_real)s->p->dry_depth;
  int64_t n = 0;
  for (int j = s->own.j0; j < s->own.j1; j++)
    for (int i = s->own.i0; i < s->own.i1; i++) {
      int64_t c = swe_index(s, i, j);
      n += s->active[c] && w[c] - bed[c] > dry;
    }
  return n;
}

/* Tile activity: a tile is active when it or one of its 8 neighbours holds water (depth > 0).
 * Water moves at most one cell per stage, so with tiles of at least 2 x 2 cells no water
 * reaches a skipped tile in a step. Tiles with cells outside `valid` (halo cells not yet
 * received) count as wet, so a neighbour's water is never missed. A tile out of the last work
 * list kept its cells (no pass wrote them), so it stays dry and is not read again, unless it
 * holds cells outside the owned ones (halos and boundary ghosts are written outside the
 * passes) or the cells changed outside the passes (tiles_stale). */
static void kernels_tile_mask(swe_part *s, swe_region valid) {
  const ts_real *w = A(s->w), *bed = A(s->bed);
  int ntiles = s->tiles_x * s->tiles_y;
  if (!s->early_exit) {
    s->ntile_list = ntiles;
    for (int k = 0; k < ntiles; k++)
      s->tile_list[k] = k;
    tile_runs(s);
    return;
  }
  swe_region all = {0, s->nx, 0, s->ny}, own = s->own;
  int read_all = s->tiles_stale;
  for (int t = 0; t < s->ntile_list && !read_all; t++)
    s->tile_wet[s->tile_list[t]] = 1; /* (read below) */
#pragma omp parallel for schedule(dynamic, 16) num_threads(s->threads)
  for (int k = 0; k < ntiles; k++) {
    int i0, i1, j0, j1, any = 0;
    tile_cells(s, k, all, &i0, &i1, &j0, &j1);
    int inside = i0 >= own.i0 && i1 <= own.i1 && j0 >= own.j0 && j1 <= own.j1;
    if (!read_all && inside && !s->tile_wet[k])
      continue; /* out of the last list: still dry */
    if (i0 < valid.i0 || i1 > valid.i1 || j0 < valid.j0 || j1 > valid.j1)
      any = 1;
    for (int j = j0; j < j1 && !any; j++) { /* a row at a time */
      int64_t c0 = swe_index(s, i0, j);
      for (int i = 0; i < i1 - i0; i++)
        any |= s->active[c0 + i] & (w[c0 + i] > bed[c0 + i]);
    }
    s->tile_wet[k] = (unsigned char)any;
  }
  s->tiles_stale = 0;
  unsigned feeds = swe_feeding_sides(s->p, s->internal);
  s->ntile_list = 0;
  for (int k = 0; k < ntiles; k++)
    if (swe_tile_on(s->tile_wet, s->tiles_x, s->tiles_y, k % s->tiles_x, k / s->tiles_x, feeds))
      s->tile_list[s->ntile_list++] = k;
  tile_runs(s);
}

/* The flood maps (swe_record_cell) of the owned cells of active tiles after a step of dt (cells
 * of skipped tiles are dry). */
static void kernels_maxima(swe_part *s, double dt) {
  swe_maps m = {s->max_h,
                s->max_speed,
                s->arrival,
                s->max_eta,
                s->duration,
                s->max_hazard,
                s->p->arrival_depth,
                s->t,
                dt,
                (ts_real)s->p->dry_depth,
                swe_part_consts(s).kappa};
#pragma omp parallel for schedule(dynamic, 1) num_threads(s->threads)
  for (int q = 0; q < s->ntile_runs; q++) {
    int i0, i1, j0, j1;
    if (!run_cells(s, q, s->own, &i0, &i1, &j0, &j1))
      continue;
    for (int j = j0; j < j1; j++) {
      int64_t c0 = swe_index(s, i0, j);
      swe_record_row(&m, c0, A(s->w) + c0, A(s->bed) + c0, A(s->hu) + c0, A(s->hv) + c0,
                     s->active + c0, i1 - i0);
    }
  }
}

/* The water through the open global sides of the owned edge cells in a stage at t of dt,
 * weighted by the stage's RK weight, into the cells' inflow and outflow volumes
 * (swe_boundary_flux). */
static void kernels_boundary_flux(swe_part *s, double t, double dt, int stage) {
  (void)stage;
  double weight = s->p->rk_order == 2 ? 0.5 : 1.0;
  swe_arrays a = swe_part_arrays(s);
  swe_consts k = swe_part_consts(s);
  double width = s->grid.dx[0];
  for (int side = 0; side < 4; side++) {
    const ts_swe_bc *bc = &s->p->bc[side];
    if (bc->type == TS_BC_WALL || s->internal[side])
      continue;
    int inflow = bc->type == TS_BC_INFLOW;
    ts_real q_in = inflow ? (ts_real)swe_inflow_unit(s, side, t, 0) : SWE_R(0);
    int x_side = side < 2, lo = x_side ? s->own.j0 : s->own.i0, hi = x_side ? s->own.j1 : s->own.i1;
    int edge =
        side == TS_WEST ? 0 : (side == TS_EAST ? s->nx - 1 : (side == TS_SOUTH ? 0 : s->ny - 1));
    for (int at = lo; at < hi; at++) {
      int64_t c = x_side ? swe_index(s, edge, at) : swe_index(s, at, edge);
      if (!s->active[c])
        continue;
      double into = weight * dt * width *
                    (double)swe_boundary_flux(&a, &k, c, side, (ts_real)dt, inflow, q_in);
      if (into > 0)
        s->inflow[c] += into;
      else
        s->outflow[c] -= into;
    }
  }
}

/* Rain and losses of a step of dt on the active cells of r (swe_source_cell). */
static void kernels_sources(swe_part *s, swe_region r, double dt) {
  s->tiles_stale = 1; /* rain wets dry tiles */
  swe_arrays a = swe_part_arrays(s);
  swe_consts k = swe_part_consts(s);
  const ts_real *rain = A(s->rain), *initial = A(s->loss_initial), *rate = A(s->loss_rate);
  ts_real dt_r = (ts_real)dt, rain_all = (ts_real)s->rain_rate * dt_r;
  ts_real loss_all = (ts_real)s->p->losses.rate * dt_r;
#pragma omp parallel for schedule(static) num_threads(s->threads)
  for (int j = r.j0; j < r.j1; j++)
    for (int i = r.i0; i < r.i1; i++) {
      int64_t c = swe_index(s, i, j);
      if (!s->active[c])
        continue;
      swe_source_cell(&a, c, rain ? rain[c] * dt_r : rain_all,
                      initial ? (double)initial[c] : s->p->losses.initial,
                      rate ? rate[c] * dt_r : loss_all, &s->loss[c]);
      swe_cell_velocity(&a, &k, c);
    }
}

static void kernels_tiles_wet(const swe_part *s, int tile, int ntx, int64_t *wet) {
  const ts_real *w = A(s->w), *bed = A(s->bed);
  for (int j = s->own.j0; j < s->own.j1; j++)
    for (int i = s->own.i0; i < s->own.i1; i++) {
      int64_t c = swe_index(s, i, j);
      if (s->active[c] && w[c] > bed[c])
        wet[(s->gi0 + i) / tile + (int64_t)((s->gj0 + j) / tile) * ntx] = 1;
    }
}

const swe_kernels SWE_KERNELS = {
    .init = kernels_init,
    .set_surface = kernels_set_surface,
    .fill_boundaries = kernels_fill_boundaries,
    .fluxes = kernels_fluxes,
    .impose_inflow = kernels_impose_inflow,
    .drain = kernels_drain,
    .boundary_flux = kernels_boundary_flux,
    .sources = kernels_sources,
    .update = kernels_update,
    .tile_mask = kernels_tile_mask,
    .maxima = kernels_maxima,
    .refresh_velocities = kernels_refresh_velocities,
    .get_cell = kernels_get_cell,
    .volume = kernels_volume,
    .wet_cells = kernels_wet_cells,
    .tiles_wet = kernels_tiles_wet,
};
