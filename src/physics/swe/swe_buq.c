/* CPU (OpenMP) block engine of the shallow-water solver on a block-uniform quadtree grid
 * (swe_buq.h), compiled once per precision: TS_REAL_DOUBLE=0 defines swe_buq_ops_float,
 * TS_REAL_DOUBLE=1 swe_buq_ops_double.
 *
 * Every leaf holds its cells in a window laid out as a part's (swe_buq_leaf.h), so the stage
 * functions of swe_stage.h run on a leaf as on a part. A leaf's beds come from the DEM averaged
 * over each of its level's cells (corners: the mean of the active cells around them, cells: the
 * mean of their corners, as on the uniform grid), so one level is the uniform grid bit for bit.
 *
 * A step (engine_step, one driver for both backends): the leaves holding water and their
 * neighbours (early exit), then per stage the ghost cells from the neighbours (same level:
 * copies; finer: restriction; coarser: prolongation, coarsest levels first so that a coarse
 * leaf's ghosts are in place when a finer one reads them), fluxes, the time step from the wave
 * speeds of every level, outflow limiters, the update; then the maps, and the step's rain and
 * losses on every leaf (swe_source_cell, as the uniform grid's). The passes run as OpenMP
 * loops here (cpu_passes) or as CUDA kernels (swe_buq.cu) on a mirror of the arrays in device
 * memory, whose host copy is brought up to date before it is read. A face between levels is
 * computed from the reconstructions of the coarse cell (in its leaf) and the fine cell (in its
 * leaf), by both leaves alike, so both see the same bits: the fine cell takes it as is, the
 * coarse cell the mean of its two fine faces, each limited by the limiter of the cell its water
 * leaves, so volume is kept to rounding; each side keeps its own face bed and pressure
 * correction, so a lake at rest stays at rest. */
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
#define SWE_BUQ_GPU swe_buq_gpu_double
#else
typedef float ts_real;
#define SWE_SQRT sqrtf
#define SWE_CBRT cbrtf
#define SWE_BUQ_OPS swe_buq_ops_float
#define SWE_BUQ_GPU swe_buq_gpu_float
#endif

typedef int64_t swe_idx;
#include "physics/swe/swe_buq_leaf.h"

enum { G = SWE_GHOST };

typedef struct engine {
  ts_buq q;
  ts_swe_params p;
  swe_buq_view v; /* the arrays in host memory */
  int M, W;       /* cells along a leaf, points along its window */
  int64_t P;      /* elements of one leaf's window */
  int threads;
  unsigned char *computed; /* per leaf: computed in this step (early exit) */
  int *list, nlist;        /* the leaves computed, by level from the coarsest */
  int *dropped, ndropped;  /* the leaves no longer computed: their fluxes are zeroed */
  unsigned char *wet;      /* per leaf: holds water (choose_leaves) */
  int bad;                 /* the CPU's updates of this step met a non-finite value */
  double t;                /* time of the state (for the maps) */
  /* the passes: cpu_passes on the engine, or the CUDA backend's on its device mirror */
  const swe_buq_passes *ops;
  void *x;
  int host_stale; /* the device holds a newer state than the host arrays */
  int sources;    /* rain or losses (swe_has_sources) */
} engine;

static inline int64_t cell_at(const engine *e, int k, int i, int j) {
  return buq_cell(&e->v, k, i, j);
}

static inline swe_idx local(const engine *e, int i, int j) { return buq_local(&e->v, i, j); }

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
  swe_arrays a = buq_leaf_arrays(&e->v, k);
  ts_real *corner = (ts_real *)a.corner, *bed = (ts_real *)a.bed;
  /* the level's DEM means of cells -G-1 .. M+G along each axis, each computed once */
  enum { Z = SWE_BUQ_MAX_BLOCK + 2 * G + 2 };
  double level[Z * Z];
  int span = M + 2 * G + 2;
  for (int j = 0; j < span; j++)
    for (int i = 0; i < span; i++)
      level[i + Z * j] = level_bed(dem, b->level, I0 + i - G - 1, J0 + j - G - 1);
#define LEVEL(i, j) level[(i) + G + 1 + Z * ((j) + G + 1)]
  for (int j = -G; j < M + G; j++)
    for (int i = -G; i < M + G; i++)
      e->v.active[cell_at(e, k, i, j)] = !isnan(LEVEL(i, j));
  for (int j = -G; j <= M + G; j++)
    for (int i = -G; i <= M + G; i++) {
      /* the cells around corner (i, j), summed as (sw + ne) + (se + nw) */
      int ci[4] = {i - 1, i, i, i - 1}, cj[4] = {j - 1, j, j - 1, j};
      double z[4] = {0, 0, 0, 0};
      int n = 0;
      for (int c = 0; c < 4; c++) {
        double v = LEVEL(ci[c], cj[c]);
        if (isnan(v))
          continue;
        z[c] = v;
        n++;
      }
      corner[local(e, i, j)] = n ? (ts_real)(((z[0] + z[1]) + (z[2] + z[3])) / n) : SWE_R(0);
    }
#undef LEVEL
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
  swe_arrays a = buq_leaf_arrays(&e->v, k);
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
      if (e->v.friction)
        e->v.friction[cell_at(e, k, i, j)] =
            (ts_real)level_mean(in->friction, b->level, I, J, 0, &n);
    }
}

/* The mean of raster r (NODATA: 0) over each cell of leaf k, into its M^2 elements of dst. */
static void leaf_means(engine *e, int k, const ts_raster *r, ts_real *dst) {
  const ts_buq_block *b = &e->q.blocks[k];
  int M = e->M, n;
  for (int j = 0; j < M; j++)
    for (int i = 0; i < M; i++)
      dst[(int64_t)k * M * M + i + (int64_t)M * j] =
          (ts_real)level_mean(r, b->level, b->bi * M + i, b->bj * M + j, 1, &n);
}

/* ---------------------------------------------------------------- CPU passes */

static void cpu_wet(void *x, unsigned char *wet) {
  engine *e = x;
#pragma omp parallel for schedule(dynamic, 16) num_threads(e->threads)
  for (int k = 0; k < e->q.nblocks; k++) {
    int any = 0;
    for (int j = 0; j < e->M && !any; j++)
      for (int i = 0; i < e->M && !any; i++)
        any = buq_wet_cell(&e->v, k, i, j);
    wet[k] = (unsigned char)any;
  }
}

static void cpu_set_list(void *x, const int *list, int n, const int *dropped, int ndropped) {
  engine *e = x;
  (void)list, (void)n;
  for (int d = 0; d < ndropped; d++) {
    int64_t o = (int64_t)dropped[d] * e->P;
    for (int c3 = 0; c3 < 3; c3++) {
      memset(e->v.fx[c3] + o, 0, sizeof(ts_real) * (size_t)e->P);
      memset(e->v.fy[c3] + o, 0, sizeof(ts_real) * (size_t)e->P);
    }
    for (int64_t c = 0; c < e->P; c++)
      e->v.drain[o + c] = SWE_R(1);
  }
}

/* The ghost cells of the listed leaves: copies and restrictions (which read leaves' own cells),
 * then prolongations, coarsest leaves first (they read the coarse leaf's ghosts), then their
 * velocities. */
static void cpu_ghosts(void *x) {
  engine *e = x;
  const swe_buq_view *v = &e->v;
  int M = e->M;
#pragma omp parallel for schedule(dynamic, 8) num_threads(e->threads)
  for (int n = 0; n < e->nlist; n++)
    for (int side = 0; side < 4; side++)
      if (v->blocks[e->list[n]].side_relation[side] != TS_BUQ_COARSER)
        for (int layer = 0; layer < G; layer++)
          for (int at = 0; at < M; at++)
            buq_fill_ghost(v, e->list[n], side, layer, at);
  for (int level = e->q.levels - 2; level >= 0; level--) {
#pragma omp parallel for schedule(dynamic, 8) num_threads(e->threads)
    for (int n = 0; n < e->nlist; n++) {
      const ts_buq_block *b = &v->blocks[e->list[n]];
      for (int side = 0; side < 4 && b->level == level; side++)
        if (b->side_relation[side] == TS_BUQ_COARSER)
          for (int pair = 0; pair < M / 2; pair++)
            buq_fill_coarser(v, e->list[n], side, pair);
    }
  }
#pragma omp parallel for schedule(dynamic, 8) num_threads(e->threads)
  for (int n = 0; n < e->nlist; n++) {
    int k = e->list[n];
    swe_arrays a = buq_leaf_arrays(v, k);
    swe_consts kc = buq_consts(v, v->blocks[k].level);
    for (int j = -G; j < M + G; j++)
      for (int i = -G; i < M + G; i++)
        if (i < 0 || j < 0 || i >= M || j >= M)
          swe_cell_velocity(&a, &kc, local(e, i, j));
  }
}

/* Fluxes of the listed leaves; with amax, the largest wave speeds per level (x, y). */
static void cpu_fluxes(void *x, double amax[][2]) {
  engine *e = x;
  int L = e->q.levels;
  double ax[TS_BUQ_MAX_LEVELS] = {0}, ay[TS_BUQ_MAX_LEVELS] = {0};
#pragma omp parallel num_threads(e->threads)
  {
    ts_real lx[TS_BUQ_MAX_LEVELS] = {0}, ly[TS_BUQ_MAX_LEVELS] = {0};
#pragma omp for schedule(dynamic, 4)
    for (int n = 0; n < e->nlist; n++) {
      int k = e->list[n], level = e->v.blocks[k].level;
      for (int line = 0; line < e->M; line++) {
        lx[level] = swe_max(lx[level], buq_sweep(&e->v, k, line, 1));
        ly[level] = swe_max(ly[level], buq_sweep(&e->v, k, line, 0));
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

/* Limiters and speed caps of the listed leaves' cells, then of their first ghost ring. */
static void cpu_limit(void *x, double dt) {
  engine *e = x;
  int M = e->M;
#pragma omp parallel for schedule(dynamic, 4) num_threads(e->threads)
  for (int n = 0; n < e->nlist; n++)
    for (int j = 0; j < M; j++)
      for (int i = 0; i < M; i++)
        buq_drain_cell(&e->v, e->list[n], i, j, (ts_real)dt);
#pragma omp parallel for schedule(dynamic, 8) num_threads(e->threads)
  for (int n = 0; n < e->nlist; n++)
    for (int side = 0; side < 4; side++)
      for (int at = 0; at < M; at++)
        buq_drain_ghost(&e->v, e->list[n], side, at);
}

static void cpu_update(void *x, double dt, int stage) {
  engine *e = x;
  int M = e->M, bad = 0;
#pragma omp parallel for schedule(dynamic, 4) reduction(| : bad) num_threads(e->threads)
  for (int n = 0; n < e->nlist; n++)
    for (int j = 0; j < M; j++)
      for (int i = 0; i < M; i++)
        if (e->v.active[cell_at(e, e->list[n], i, j)])
          bad |= buq_update_cell(&e->v, e->list[n], i, j, (ts_real)dt, stage);
  e->bad |= bad;
}

static int cpu_take_bad(void *x) {
  engine *e = x;
  int bad = e->bad;
  e->bad = 0;
  return bad;
}

/* The flood maps of the listed leaves at time t after a step of dt. */
static void cpu_record(void *x, double t, double dt) {
  engine *e = x;
#pragma omp parallel for schedule(dynamic, 8) num_threads(e->threads)
  for (int n = 0; n < e->nlist; n++)
    for (int j = 0; j < e->M; j++)
      for (int i = 0; i < e->M; i++)
        buq_record_cell(&e->v, e->list[n], i, j, t, dt);
}

/* Rain and losses on every leaf (dry leaves too: rain wets them). */
static void cpu_sources(void *x, double dt) {
  engine *e = x;
#pragma omp parallel for schedule(dynamic, 8) num_threads(e->threads)
  for (int k = 0; k < e->q.nblocks; k++)
    for (int j = 0; j < e->M; j++)
      for (int i = 0; i < e->M; i++)
        buq_source_cell(&e->v, k, i, j, dt);
}

static const swe_buq_passes cpu_passes = {NULL,       NULL,        NULL,         NULL,
                                          NULL,       cpu_wet,     cpu_set_list, cpu_ghosts,
                                          cpu_fluxes, cpu_limit,   cpu_update,   cpu_take_bad,
                                          cpu_record, cpu_sources, NULL};

/* ---------------------------------------------------------------- steps */

/* The host arrays brought up to date with the device's (GPU backend). */
static void to_host(const engine *ec) {
  engine *e = (engine *)ec;
  if (e->host_stale && e->ops->download)
    e->ops->download(e->x, &e->v);
  e->host_stale = 0;
}

/* The leaves of this step (early exit: those holding water or touching a leaf that does, as
 * water moves less than a cell per stage), by level from the coarsest; the leaves dropped from
 * the list get zero fluxes, as their neighbours read them. */
static void choose_leaves(engine *e) {
  int nb = e->q.nblocks;
  unsigned char *wet = e->wet;
  if (e->p.early_exit)
    e->ops->wet(e->x, wet);
  else
    memset(wet, 1, (size_t)nb);
  e->ndropped = 0;
  for (int k = 0; k < nb; k++) {
    const ts_buq_block *b = &e->q.blocks[k];
    int on = wet[k];
    for (int s = 0; s < 4 && !on; s++)
      for (int q = 0; q < 2 && !on; q++)
        on = b->side[s][q] >= 0 && wet[b->side[s][q]];
    for (int c = 0; c < 4 && !on; c++)
      on = b->corner[c] >= 0 && wet[b->corner[c]];
    if (!on && e->computed[k])
      e->dropped[e->ndropped++] = k;
    e->computed[k] = (unsigned char)on;
  }
  e->nlist = 0;
  for (int level = e->q.levels - 1; level >= 0; level--)
    for (int k = 0; k < nb; k++)
      if (e->computed[k] && e->q.blocks[k].level == level)
        e->list[e->nlist++] = k;
  e->ops->set_list(e->x, e->list, e->nlist, e->dropped, e->ndropped);
}

static ts_status engine_step(void *ev, double t, double target, double step_max, double *dt_out,
                             double *t_after) {
  engine *e = ev;
  int stages = e->p.rk_order == 1 ? 1 : 2;
  double dt = 0;
  choose_leaves(e);
  for (int stage = 0; stage < stages; stage++) {
    e->ops->ghosts(e->x);
    if (stage == 0) {
      double amax[TS_BUQ_MAX_LEVELS][2];
      e->ops->fluxes(e->x, amax);
      /* the step of the finest cells: wave speeds in finest cells per second */
      double ax = 0, ay = 0;
      for (int l = 0; l < e->q.levels; l++) {
        ax = fmax(ax, ldexp(amax[l][0], -l));
        ay = fmax(ay, ldexp(amax[l][1], -l));
      }
      dt = swe_time_step(ax, ay, e->p.cfl, e->v.dx0, e->v.dx0, step_max, t, target,
                         e->p.precision == TS_DOUBLE, t_after);
      if (!(dt > 0))
        return ts_error(TS_ERR_NUMERIC, "time step collapsed to %g s at t = %g s", dt, t);
    } else {
      e->ops->fluxes(e->x, NULL);
    }
    e->ops->limit(e->x, dt);
    e->ops->update(e->x, dt, stage);
  }
  e->t = *t_after;
  e->ops->record(e->x, e->t, dt);
  if (e->sources)
    e->ops->sources(e->x, dt);
  e->host_stale = e->ops != &cpu_passes;
  *dt_out = dt;
  if (e->ops->take_bad(e->x))
    return ts_error(TS_ERR_NUMERIC, "non-finite water state at t = %g s", t);
  return TS_OK;
}

/* ---------------------------------------------------------------- creation */

static void engine_destroy(void *ev) {
  engine *e = ev;
  if (!e)
    return;
  if (e->ops && e->ops->release)
    e->ops->release(e->x);
  ts_real **arrays[SWE_BUQ_NARRAYS] = SWE_BUQ_ARRAYS(&e->v);
  for (int k = 0; k < SWE_BUQ_NARRAYS; k++)
    free(*arrays[k]);
  double **maps[SWE_BUQ_NMAPS] = SWE_BUQ_MAPS(&e->v);
  for (int k = 0; k < SWE_BUQ_NMAPS; k++)
    free(*maps[k]);
  free(e->v.active);
  free(e->v.friction);
  free(e->v.rain);
  free(e->v.loss_initial);
  free(e->v.loss_rate);
  free(e->v.lost);
  free(e->computed);
  free(e->list);
  free(e->dropped);
  free(e->wet);
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
    swe_arrays a = buq_leaf_arrays(&e->v, k);
    swe_consts kc = buq_consts(&e->v, e->q.blocks[k].level);
    for (int j = 0; j < e->M; j++)
      for (int i = 0; i < e->M; i++)
        swe_cell_velocity(&a, &kc, local(e, i, j));
  }
}

/* The state set on the host (creation, surface, checkpoint) taken by the passes: the CPU's
 * ghosts and maps, or a copy to the device. */
static void state_changed(engine *e) {
  all_leaves(e);
  if (e->ops->upload) {
    e->ops->set_list(e->x, e->list, e->nlist, NULL, 0);
    e->ops->upload(e->x, &e->v);
  }
  e->host_stale = 0;
}

static ts_status engine_create(void **out, const ts_swe_params *p, const swe_inputs *in,
                               const ts_raster *surface, int threads, int device) {
  const ts_raster *bed = in->bed;
  int nx = bed->ncols, ny = bed->nrows;
  engine *e = calloc(1, sizeof *e);
  unsigned char *valid = malloc((size_t)nx * ny);
  double *target = NULL;
  ts_status st = e && valid ? TS_OK : ts_error(TS_ERR_NOMEM, "swe: out of memory");
  if (st == TS_OK) {
    e->p = *p;
    e->threads = threads;
    e->ops = &cpu_passes;
    e->x = e;
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
  e->v = (swe_buq_view){.blocks = e->q.blocks,
                        .M = e->M,
                        .W = e->W,
                        .P = (int)e->P,
                        .origin = G + G * e->W,
                        .dx0 = bed->cellsize,
                        .gravity = p->gravity,
                        .theta = p->theta,
                        .dry_depth = p->dry_depth,
                        .friction_value = p->friction_value,
                        .arrival_depth = p->arrival_depth,
                        .friction_kind = (int)p->friction,
                        .rk_order = p->rk_order};
  size_t nb = (size_t)e->q.nblocks, cells = nb * (size_t)e->P, leaf_cells = nb * e->M * e->M;
  ts_real **arrays[SWE_BUQ_NARRAYS] = SWE_BUQ_ARRAYS(&e->v);
  double **maps[SWE_BUQ_NMAPS] = SWE_BUQ_MAPS(&e->v);
  int failed = 0;
  for (int k = 0; k < SWE_BUQ_NARRAYS; k++)
    failed |= !(*arrays[k] = calloc(cells, sizeof(ts_real)));
  for (int k = 0; k < SWE_BUQ_NMAPS; k++)
    failed |= !(*maps[k] = calloc(leaf_cells, sizeof(double)));
  failed |= !(e->v.active = calloc(cells, 1));
  if (in->friction) /* a coefficient per cell: the mean over its bed cells */
    failed |= !(e->v.friction = calloc(cells, sizeof(ts_real)));
  e->sources = swe_has_sources(p);
  e->v.loss_initial_value = p->losses.initial;
  e->v.loss_rate_value = p->losses.rate;
  if (e->sources)
    failed |= !(e->v.lost = calloc(leaf_cells, sizeof(double)));
  if (p->rain.nframes > 0 && p->rain.grids)
    failed |= !(e->v.rain = calloc(leaf_cells, sizeof(ts_real)));
  if (p->losses.initial_grid)
    failed |= !(e->v.loss_initial = calloc(leaf_cells, sizeof(ts_real)));
  if (p->losses.rate_grid)
    failed |= !(e->v.loss_rate = calloc(leaf_cells, sizeof(ts_real)));
  failed |= !(e->computed = calloc(nb, 1)) || !(e->list = malloc(sizeof(int) * nb)) ||
            !(e->dropped = malloc(sizeof(int) * nb)) || !(e->wet = malloc(nb));
  if (failed) {
    engine_destroy(e);
    return ts_error(TS_ERR_NOMEM, "swe: out of memory for %zu quadtree blocks", nb);
  }
  for (size_t c = 0; c < leaf_cells; c++)
    e->v.arrival[c] = e->v.max_eta[c] = NAN;
#pragma omp parallel for schedule(dynamic, 8) num_threads(threads)
  for (int k = 0; k < e->q.nblocks; k++) {
    build_leaf(e, k, bed);
    init_leaf(e, k, in);
    if (e->v.loss_initial)
      leaf_means(e, k, p->losses.initial_grid, e->v.loss_initial);
    if (e->v.loss_rate)
      leaf_means(e, k, p->losses.rate_grid, e->v.loss_rate);
  }
  all_leaves(e);
  cpu_ghosts(e);
  cpu_record(e, 0, 0);
#if TESSERA_HAVE_CUDA
  if (device >= 0) {
    st = SWE_BUQ_GPU.attach(&e->x, &e->v, e->q.nblocks, e->q.levels, device);
    if (st != TS_OK) {
      engine_destroy(e);
      return st;
    }
    e->ops = &SWE_BUQ_GPU;
    state_changed(e);
  }
#else
  (void)device;
#endif
  *out = e;
  return TS_OK;
}

/* Sets the surface to eta (each cell: the mean of eta over its finest cells holding one) where
 * it lies above the bed, dry elsewhere, and restarts the maps. */
static void engine_set_surface(void *ev, const ts_raster *eta) {
  engine *e = ev;
  int M = e->M;
  to_host(e);
#pragma omp parallel for schedule(dynamic, 8) num_threads(e->threads)
  for (int k = 0; k < e->q.nblocks; k++) {
    const ts_buq_block *b = &e->q.blocks[k];
    swe_arrays a = buq_leaf_arrays(&e->v, k);
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
    e->v.max_h[c] = e->v.max_speed[c] = e->v.duration[c] = e->v.max_hazard[c] = 0;
    e->v.arrival[c] = e->v.max_eta[c] = NAN;
  }
  all_leaves(e);
  cpu_record(e, e->t, 0);
  state_changed(e);
}

static double engine_set_rain(void *ev, const ts_raster *grid, double rate) {
  engine *e = ev;
  int M = e->M;
  e->v.rain_rate = grid ? 0 : rate;
  if (e->v.rain) {
#pragma omp parallel for schedule(dynamic, 8) num_threads(e->threads)
    for (int k = 0; k < e->q.nblocks; k++)
      if (grid)
        leaf_means(e, k, grid, e->v.rain);
      else
        memset(e->v.rain + (int64_t)k * M * M, 0, sizeof(ts_real) * (size_t)M * M);
  }
  ts_exact_sum sum = {0, 0};
  for (int k = 0; k < e->q.nblocks; k++) {
    double area = ldexp(1.0, 2 * e->q.blocks[k].level);
    for (int j = 0; j < M; j++)
      for (int i = 0; i < M; i++)
        if (e->v.active[cell_at(e, k, i, j)])
          ts_exact_sum_add(
              &sum, area * (double)(e->v.rain ? e->v.rain[(int64_t)k * M * M + i + (int64_t)M * j]
                                              : (ts_real)e->v.rain_rate));
  }
  if (e->ops->set_rain)
    e->ops->set_rain(e->x, &e->v);
  return ts_exact_sum_value(sum);
}

static void engine_losses(const void *ev, ts_exact_sum *sum) {
  const engine *e = ev;
  if (!e->v.lost)
    return;
  to_host(e);
  int M = e->M;
  for (int k = 0; k < e->q.nblocks; k++) {
    double area = ldexp(1.0, 2 * e->q.blocks[k].level);
    for (int j = 0; j < M; j++)
      for (int i = 0; i < M; i++)
        if (e->v.active[cell_at(e, k, i, j)])
          ts_exact_sum_add(sum, area * e->v.lost[(int64_t)k * M * M + i + (int64_t)M * j]);
  }
}

/* ---------------------------------------------------------------- access */

static double cell_value(const engine *e, ts_swe_var var, int k, int i, int j) {
  int64_t c = cell_at(e, k, i, j), m = (int64_t)k * e->M * e->M + i + (int64_t)e->M * j;
  if (!e->v.active[c])
    return NAN;
  double h = (double)swe_max(SWE_R(0), e->v.w[c] - e->v.bed[c]), u = 0, v = 0;
  if (h > e->p.dry_depth)
    u = (double)e->v.u[c], v = (double)e->v.v[c];
  switch (var) {
  case TS_SWE_H: return h;
  case TS_SWE_HU: return (double)e->v.hu[c];
  case TS_SWE_HV: return (double)e->v.hv[c];
  case TS_SWE_ETA: return (double)e->v.w[c];
  case TS_SWE_BED: return (double)e->v.bed[c];
  case TS_SWE_U: return u;
  case TS_SWE_V: return v;
  case TS_SWE_SPEED: return sqrt(u * u + v * v);
  case TS_SWE_MAX_H: return e->v.max_h[m];
  case TS_SWE_MAX_SPEED: return e->v.max_speed[m];
  case TS_SWE_ARRIVAL: return e->v.arrival[m];
  case TS_SWE_MAX_ETA: return e->v.max_eta[m];
  case TS_SWE_DURATION: return e->v.duration[m];
  case TS_SWE_MAX_HAZARD: return e->v.max_hazard[m];
  case TS_SWE_LOSS: return e->v.lost ? e->v.lost[m] : 0;
  }
  return NAN;
}

/* The leaf and cell covering finest cell (i, j): -1 outside. */
static int leaf_cell(const engine *e, int i, int j, int *li, int *lj) {
  int k = ts_buq_find(&e->q, i, j);
  if (k >= 0) {
    const ts_buq_block *b = &e->q.blocks[k];
    *li = (i >> b->level) - b->bi * e->M, *lj = (j >> b->level) - b->bj * e->M;
  }
  return k;
}

/* Values at finest cells (i[q], j[q]) (NaN outside or inactive). With the state on the device,
 * only those cells come back (gauges read a few cells after every step). */
static void engine_probe(const void *ev, int n, const int *i, const int *j, const ts_swe_var *var,
                         double *out) {
  engine *e = (engine *)ev;
  int64_t *cells = malloc(sizeof(int64_t) * 2 * (size_t)(n > 0 ? n : 1));
  int m = 0;
  if (!cells || !e->host_stale || !e->ops->read_cells) {
    to_host(e);
  } else {
    for (int q = 0; q < n; q++) {
      int li, lj, k = leaf_cell(e, i[q], j[q], &li, &lj);
      if (k < 0)
        continue;
      cells[2 * m] = cell_at(e, k, li, lj);
      cells[2 * m + 1] = (int64_t)k * e->M * e->M + li + (int64_t)e->M * lj;
      m++;
    }
    e->ops->read_cells(e->x, &e->v, m, cells);
  }
  free(cells);
  for (int q = 0; q < n; q++) {
    int li, lj, k = leaf_cell(e, i[q], j[q], &li, &lj);
    out[q] = k < 0 ? NAN : cell_value(e, var[q], k, li, lj);
  }
}

static double engine_value(const void *ev, ts_swe_var var, int i, int j) {
  double v;
  engine_probe(ev, 1, &i, &j, &var, &v);
  return v;
}

static void engine_get(const void *ev, ts_swe_var var, double *out) {
  const engine *e = ev;
  to_host(e);
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

static int64_t engine_leaf_cells(const void *ev, int *i0, int *j0, int *width, int *level) {
  const engine *e = ev;
  int M = e->M;
  int64_t n = 0;
  for (int k = 0; k < e->q.nblocks; k++) {
    const ts_buq_block *b = &e->q.blocks[k];
    for (int j = 0; j < M; j++)
      for (int i = 0; i < M; i++, n++)
        if (i0) {
          width[n] = 1 << b->level;
          i0[n] = (b->bi * M + i) * width[n];
          j0[n] = (b->bj * M + j) * width[n];
          level[n] = b->level;
        }
  }
  return n;
}

static void engine_leaf_values(const void *ev, ts_swe_var var, double *out) {
  const engine *e = ev;
  to_host(e);
  int M = e->M;
#pragma omp parallel for schedule(static) num_threads(e->threads)
  for (int k = 0; k < e->q.nblocks; k++)
    for (int j = 0; j < M; j++)
      for (int i = 0; i < M; i++)
        out[(int64_t)k * M * M + i + (int64_t)M * j] = cell_value(e, var, k, i, j);
}

static void engine_volume(const void *ev, ts_exact_sum *sum) {
  const engine *e = ev;
  to_host(e);
  for (int k = 0; k < e->q.nblocks; k++) {
    double area = ldexp(1.0, 2 * e->q.blocks[k].level);
    for (int j = 0; j < e->M; j++)
      for (int i = 0; i < e->M; i++) {
        int64_t c = cell_at(e, k, i, j);
        if (!e->v.active[c])
          continue;
        ts_exact_sum_add(sum, ((double)e->v.w[c] - (double)e->v.bed[c]) * area);
        ts_exact_sum_add(sum, (double)e->v.w_carry[c] * area);
      }
  }
}

static int64_t engine_wet_cells(const void *ev) {
  const engine *e = ev;
  to_host(e);
  int64_t n = 0;
  ts_real dry = (ts_real)e->p.dry_depth;
  for (int k = 0; k < e->q.nblocks; k++)
    for (int j = 0; j < e->M; j++)
      for (int i = 0; i < e->M; i++) {
        int64_t c = cell_at(e, k, i, j);
        n += e->v.active[c] && e->v.w[c] - e->v.bed[c] > dry;
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
  double per_window = (double)e->P * (SWE_BUQ_NARRAYS * sizeof(ts_real) + 1);
  double per_leaf_cell = 6 * sizeof(double);
  out->bytes = e->q.nblocks * per_window + (double)out->cells * per_leaf_cell;
  out->bytes_uniform_finest = (double)out->cells_uniform_finest *
                              (SWE_BUQ_NARRAYS * sizeof(ts_real) + 1 + 11 * sizeof(double));
}

/* Checkpoint: the state (w, hu, hv, w_carry) of every leaf cell, then the six maps, then (with
 * sources) what the losses took. */
static size_t engine_state_bytes(const void *ev) {
  const engine *e = ev;
  size_t cells = (size_t)e->q.nblocks * e->M * e->M;
  return cells * (4 * sizeof(ts_real) + (6 + (e->v.lost != NULL)) * sizeof(double));
}

static void engine_save(const void *ev, void *blob) {
  const engine *e = ev;
  to_host(e);
  char *p = blob;
  const ts_real *state[4] = {e->v.w, e->v.hu, e->v.hv, e->v.w_carry};
  for (int a = 0; a < 4; a++)
    for (int k = 0; k < e->q.nblocks; k++)
      for (int j = 0; j < e->M; j++) {
        memcpy(p, state[a] + cell_at(e, k, 0, j), sizeof(ts_real) * (size_t)e->M);
        p += sizeof(ts_real) * (size_t)e->M;
      }
  size_t cells = (size_t)e->q.nblocks * e->M * e->M;
  const double *maps[6] = {e->v.max_h,   e->v.max_speed, e->v.arrival,
                           e->v.max_eta, e->v.duration,  e->v.max_hazard};
  for (int m = 0; m < 6; m++) {
    memcpy(p, maps[m], sizeof(double) * cells);
    p += sizeof(double) * cells;
  }
  if (e->v.lost)
    memcpy(p, e->v.lost, sizeof(double) * cells);
}

static void engine_load(void *ev, const void *blob) {
  engine *e = ev;
  const char *p = blob;
  to_host(e); /* the ghosts and the rest the blob does not hold */
  ts_real *state[4] = {e->v.w, e->v.hu, e->v.hv, e->v.w_carry};
  for (int a = 0; a < 4; a++)
    for (int k = 0; k < e->q.nblocks; k++)
      for (int j = 0; j < e->M; j++) {
        memcpy(state[a] + cell_at(e, k, 0, j), p, sizeof(ts_real) * (size_t)e->M);
        p += sizeof(ts_real) * (size_t)e->M;
      }
  size_t cells = (size_t)e->q.nblocks * e->M * e->M;
  double *maps[6] = {e->v.max_h,   e->v.max_speed, e->v.arrival,
                     e->v.max_eta, e->v.duration,  e->v.max_hazard};
  for (int m = 0; m < 6; m++) {
    memcpy(maps[m], p, sizeof(double) * cells);
    p += sizeof(double) * cells;
  }
  if (e->v.lost)
    memcpy(e->v.lost, p, sizeof(double) * cells);
  state_changed(e);
}

const swe_buq_ops SWE_BUQ_OPS = {engine_create,      engine_destroy,       engine_set_surface,
                                 engine_step,        engine_set_rain,      engine_losses,
                                 engine_value,       engine_probe,         engine_leaf_cells,
                                 engine_leaf_values, engine_get,           engine_volume,
                                 engine_wet_cells,   engine_active_blocks, engine_stats,
                                 engine_state_bytes, engine_save,          engine_load};
