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
 * correction, so a lake at rest stays at rest.
 *
 * A grid in one part on a GPU takes runs of steps without the host (engine_advance): the time
 * step, the leaves of each step and the watched cells (gauges) stay on the device, and the passes
 * of a step replay from a CUDA graph.
 *
 * Partitions ([parallel] subdomains, or one per GPU listed): the leaves in Morton order are cut
 * into ranges of equal count (ts_buq_partition), each a part with its own arrays (on the CPU or
 * its GPU) holding its own leaves and copies of the leaves around them, four rings deep (plus the
 * coarser leaves whose ghosts a copy's prolongation reads): before each stage the halo engine
 * (halo.h, links between leaf slots) brings the copies' cells from their owners, and each part
 * computes ghosts three rings out, fluxes two, limiters one and updates its own leaves, every
 * value with the same inputs as in one part: the result is the same bits under any partition. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "physics/swe/swe_buq.h"
#include "tessera/buq.h"
#include "tessera/cpu.h"
#include "tessera/gpu.h"
#include "tessera/halo.h"

#if TS_REAL_DOUBLE
typedef double ts_real;
#define SWE_SQRT sqrt
#define SWE_BUQ_OPS TS_CPU_KERNEL_NAME(swe_buq_ops_double)
#define SWE_BUQ_GPU swe_buq_gpu_double
#else
typedef float ts_real;
#define SWE_SQRT sqrtf
#define SWE_BUQ_OPS TS_CPU_KERNEL_NAME(swe_buq_ops_float)
#define SWE_BUQ_GPU swe_buq_gpu_float
#endif

typedef int64_t swe_idx;
#include "physics/swe/swe_buq_leaf.h"

enum { G = SWE_GHOST };

/* A part: its leaves (its own first, in Morton order, then the copies, in Morton order) with
 * their arrays in host memory, and the passes that run on them (the CPU's, or a GPU's mirror). */
typedef struct part {
  swe_buq_view v;       /* the arrays in host memory */
  ts_buq_block *blocks; /* its leaves, neighbours renumbered to its own (-1: not held) */
  int nblocks, owned;
  int *global;         /* per leaf: its index in the grid */
  unsigned char *ring; /* per leaf: 0 its own, 1 .. RINGS the ring of copies around them */
  int M, W, levels, threads;
  int64_t P;               /* elements of one leaf's window */
  unsigned char *computed; /* per leaf: computed in this step (early exit) */
  unsigned char *on, *wet; /* per leaf: in the step (choose_leaves), holds water (CPU) */
  int wet_unknown;        /* cells changed outside the passes (a new part, rain): read every leaf */
  int *list;              /* the leaves of the step by ring, each ring by level from the coarsest */
  int counts[4];          /* update and maps, limiters, fluxes, ghosts: list[0 .. counts[i]) */
  int *dropped, ndropped; /* the leaves no longer computed: their fluxes are zeroed */
  int listed;             /* the list is choose_leaves' (it changes with `computed` alone) */
  int bad;                /* the CPU's updates of this step met a non-finite value */
  double amax[TS_BUQ_MAX_LEVELS][2]; /* the CPU's largest wave speeds of the step */
  /* the passes: cpu_passes on the part, or the CUDA backend's on its device mirror */
  const swe_buq_passes *ops;
  void *x;
  int host_stale; /* the device holds a newer state than the host arrays */
  /* runs of steps on the device: the watched cells it holds (pairs: window element, maps'
   * element) */
  int64_t *watch_cells;
  int nwatch;
  int ran; /* runs on the device since the state was set: they know the last step's leaves */
} part;

/* Rings of copies a part holds around its own leaves: updates read limiters one ring out,
 * limiters fluxes two out, fluxes ghosts three out, ghosts cells four out. */
enum { RINGS = 4, RING_LIMIT = 1, RING_FLUX = 2, RING_GHOST = 3 };

typedef struct engine {
  ts_buq q;
  ts_swe_params p;
  int M, W;  /* cells along a leaf, points along its window */
  int64_t P; /* elements of one leaf's window */
  int threads;
  int nparts;
  part *parts;
  int *first;     /* nparts + 1: part i owns the grid's leaves first[i] .. first[i+1]-1 */
  int *slot;      /* per leaf of the grid: its place among its owner's leaves */
  int *part_rank; /* per part: the rank running it (this rank's consecutive) */
  const ts_comm *comm;
  int rank, mine[2];         /* this rank, and its parts mine[0] .. mine[1] - 1 */
  int *devices;              /* per part of this rank: its CUDA device, -1: the CPU */
  ts_halo_plan *plan;        /* the copies' cells from their owners (NULL: nothing to move) */
  ts_halo_field *fields;     /* per part: w, hu, hv where its passes run (host or device) */
  ts_halo_field *fields_mid; /* ... the arrays of the first stage's state (stage_apart) */
  double t;                  /* time of the state (for the maps) */
  double dx0;                /* the finest cell size (m) */
  int sources;               /* rain or losses (swe_has_sources) */
  int friction;              /* a friction coefficient per cell */
  /* the balance (one process): off, static (one look) or dynamic; steps between looks, steps
   * and seconds since the last, what the moves did, the imbalance at the first and last look */
  ts_balance_mode balance;
  int looking; /* the balance is looked at (static: until the first look) */
  int interval, since, rebalances;
  int64_t moved_cells;
  double span_s, move_s, imbalance_first, imbalance_last;
  /* runs of steps on the device: whether the last advance took one; the finest cells watched
   * (gauges: watched again by new parts); the graph of one step of several parts */
  int ran_on_device;
  int *watch_ij, nwatch;
  void *graph;
} engine;

static inline int64_t cell_at(const part *e, int k, int i, int j) {
  return buq_cell(&e->v, k, i, j);
}

static inline swe_idx local(const part *e, int i, int j) { return buq_local(&e->v, i, j); }

/* The part holding leaf k of the grid under the cuts `first` of nparts parts. */
static int part_of(const int *first, int nparts, int k) {
  int lo = 0, hi = nparts - 1;
  while (lo < hi) {
    int mid = (lo + hi + 1) / 2;
    if (first[mid] <= k)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

/* The part owning leaf k of the grid, and k's place among its leaves. */
static part *owner_of(const engine *e, int k, int *slot) {
  *slot = e->slot[k];
  return &e->parts[part_of(e->first, e->nparts, k)];
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
static void build_leaf(part *e, int k, const ts_raster *dem) {
  const ts_buq_block *b = &e->blocks[k];
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
static void init_leaf(part *e, int k, const swe_inputs *in) {
  const ts_buq_block *b = &e->blocks[k];
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
static void leaf_means(part *e, int k, const ts_raster *r, ts_real *dst) {
  const ts_buq_block *b = &e->blocks[k];
  int M = e->M, n;
  for (int j = 0; j < M; j++)
    for (int i = 0; i < M; i++)
      dst[(int64_t)k * M * M + i + (int64_t)M * j] =
          (ts_real)level_mean(r, b->level, b->bi * M + i, b->bj * M + j, 1, &n);
}

/* ---------------------------------------------------------------- CPU passes */

static int cpu_choose(void *x, int early_exit, unsigned char *on) {
  part *e = x;
  int changed = 0, read_all = e->wet_unknown;
#pragma omp parallel for schedule(dynamic, 16) num_threads(e->threads)
  for (int k = 0; k < e->nblocks; k++) {
    /* an own leaf out of the last step kept its cells (no pass wrote them): still dry */
    if (k < e->owned && !e->computed[k] && !read_all)
      continue;
    int any = !early_exit;
    for (int j = 0; j < e->M && !any; j++)
      for (int i = 0; i < e->M && !any; i++)
        any = buq_wet_cell(&e->v, k, i, j);
    e->wet[k] = (unsigned char)any;
  }
  e->wet_unknown = 0;
#pragma omp parallel for reduction(| : changed) num_threads(e->threads)
  for (int k = 0; k < e->nblocks; k++) {
    on[k] = (unsigned char)buq_leaf_on(e->blocks, e->wet, k);
    changed |= on[k] != e->computed[k];
  }
  return changed;
}

static void cpu_set_list(void *x, const int *list, const int counts[4], const int *dropped,
                         int ndropped) {
  part *e = x;
  (void)list, (void)counts;
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

/* The ghost cells of the leaves up to the ghost ring: copies and restrictions (which read
 * leaves' own cells), then prolongations, coarsest leaves first (they read the coarse leaf's
 * ghosts), then their velocities (a copy's cells too: they came without them). */
static void cpu_ghosts(void *x) {
  part *e = x;
  const swe_buq_view *v = &e->v;
  int M = e->M, n_ghosts = e->counts[3];
#pragma omp parallel for schedule(dynamic, 8) num_threads(e->threads)
  for (int n = 0; n < n_ghosts; n++)
    for (int side = 0; side < 4; side++)
      if (v->blocks[e->list[n]].side_relation[side] != TS_BUQ_COARSER)
        for (int layer = 0; layer < G; layer++)
          for (int at = 0; at < M; at++)
            buq_fill_ghost(v, e->list[n], side, layer, at);
  for (int level = e->levels - 2; level >= 0; level--) {
#pragma omp parallel for schedule(dynamic, 8) num_threads(e->threads)
    for (int n = 0; n < n_ghosts; n++) {
      const ts_buq_block *b = &v->blocks[e->list[n]];
      for (int side = 0; side < 4 && b->level == level; side++)
        if (b->side_relation[side] == TS_BUQ_COARSER)
          for (int pair = 0; pair < M / 2; pair++)
            buq_fill_coarser(v, e->list[n], side, pair);
    }
  }
#pragma omp parallel for schedule(dynamic, 8) num_threads(e->threads)
  for (int n = 0; n < n_ghosts; n++) {
    int k = e->list[n], copy = k >= v->owned;
    swe_arrays a = buq_leaf_arrays(v, k);
    swe_consts kc = buq_consts(v, v->blocks[k].level);
    for (int j = -G; j < M + G; j++) {
      /* whole rows of the frame (of every row of a copy) in vectors, else its two ends */
      int whole = copy || j < 0 || j >= M;
      swe_idx row = local(e, 0, j);
#pragma omp simd
      for (int i = -G; i < (whole ? M + G : 0); i++)
        swe_cell_velocity(&a, &kc, row + i);
      for (int i = M; i < M + G && !whole; i++)
        swe_cell_velocity(&a, &kc, row + i);
    }
  }
}

/* The sides of a row of cells reconstructed along one axis, field by field (vector loops). */
typedef struct side_row {
  ts_real w[SWE_BUQ_MAX_BLOCK + 2], b[SWE_BUQ_MAX_BLOCK + 2], h[SWE_BUQ_MAX_BLOCK + 2],
      u[SWE_BUQ_MAX_BLOCK + 2], v[SWE_BUQ_MAX_BLOCK + 2];
} side_row;

static inline void side_put(side_row *r, int n, swe_side s) {
  r->w[n] = s.w, r->b[n] = s.b, r->h[n] = s.h, r->u[n] = s.u, r->v[n] = s.v;
}

static inline swe_side side_get(const side_row *r, int n) {
  swe_side s = {r->w[n], r->b[n], r->h[n], r->u[n], r->v[n]};
  return s;
}

/* Cell c of a leaf (arrays a) reconstructed along an axis (buq_line_cell's work), given the
 * activity of it and its two neighbours (ints: read as bytes in the loop, they kept GCC from
 * vectorising the x sweep): its sides into lo, hi at n (zero where inactive); returns its
 * activity. */
static inline int reconstruct_into(const swe_arrays *a, const swe_consts *kc, swe_idx c,
                                   swe_idx step, swe_idx cstep, const int x_axis, int act_m,
                                   int act_c, int act_p, side_row *lo, side_row *hi, int n) {
  swe_side l, h, zero = {0, 0, 0, 0, 0};
  const ts_real *restrict w = a->w, *restrict bed = a->bed, *restrict corner = a->corner;
  const ts_real *restrict qn = x_axis ? a->hu : a->hv, *restrict qt = x_axis ? a->hv : a->hu;
  const ts_real *restrict un = x_axis ? a->u : a->v, *restrict ut = x_axis ? a->v : a->u;
  swe_idx p = c + step;
  int act[3] = {act_m, act_c, act_p};
  /* every cell reconstructed (inactive neighbours as mirrors) and the inactive ones' sides
   * dropped: selects, which GCC vectorises where it left a condition */
  swe_reconstruct_stencil(act, w, bed, qn, qt, un, ut, kc, c, step,
                          swe_corner_mean(corner[c], corner[c + cstep]),
                          swe_corner_mean(corner[p], corner[p + cstep]), &l, &h);
  side_put(lo, n, act_c ? l : zero), side_put(hi, n, act_c ? h : zero);
  return act_c;
}

/* Face c between a low and a high cell from their sides (buq_line_face's work where both
 * are of one level): its fluxes stored, the cells' pressure corrections; returns its speed. */
static inline ts_real face_into(const swe_consts *kc, int act_lo, int act_hi, swe_side hi_of_lo,
                                swe_side lo_of_hi, ts_real *const flux[3], swe_idx c,
                                ts_real *corr_lo, ts_real *corr_hi) {
  ts_real f[3],
      speed = swe_face_between(kc, act_lo, act_hi, hi_of_lo, lo_of_hi, f, corr_lo, corr_hi);
  flux[0][c] = f[0], flux[1][c] = f[1], flux[2][c] = f[2];
  return speed;
}

/* A cell's bed source less the pressure corrections of its faces (buq_line_source's value):
 * low_face_corr is its low face's correction of it, high_face_corr its high face's. */
static inline ts_real cell_source(int act, ts_real low_face_corr, swe_side lo, swe_side hi,
                                  ts_real high_face_corr, ts_real g) {
  ts_real low = act ? low_face_corr + swe_bed_source(lo, hi, g) : SWE_R(0);
  return low - high_face_corr;
}

/* The faces of a line of leaf k at the ends whose side touches another level (f == 0 at lo_side,
 * f == M at hi_side): buq_line_face's fluxes and pressure corrections from the line's cells' sides
 * (cell n - 1 at n of lo, hi and act). Returns their largest wave speed. */
static ts_real jump_faces(const swe_buq_view *v, int k, int line, int x_axis, const side_row *lo,
                          const side_row *hi, const int *act, ts_real *corr_lo, ts_real *corr_hi) {
  const ts_buq_block *b = &v->blocks[k];
  int M = v->M, ends[2] = {0, M};
  buq_line l = buq_line_of(v, line, x_axis);
  swe_side los[SWE_BUQ_MAX_BLOCK + 2], his[SWE_BUQ_MAX_BLOCK + 2];
  ts_real amax = 0;
  for (int e = 0; e < 2; e++) {
    int f = ends[e];
    if (b->side_relation[e ? l.side_hi : l.side_lo] == TS_BUQ_SAME)
      continue;
    for (int n = f; n <= f + 1; n++)
      los[n] = side_get(lo, n), his[n] = side_get(hi, n);
    if (f == M)
      los[0] = side_get(lo, 0), his[0] = side_get(hi, 0);
    amax = swe_max(
        amax, buq_line_face(v, k, line, x_axis, l, f, los, his, act, &corr_lo[f], &corr_hi[f]));
  }
  return amax;
}

/* The x sweep of leaf k: the faces of each row (cells -1 .. M; every face its flux, every cell
 * its bed source with the pressure corrections of its faces) in loops the compiler vectorises
 * along the row, the same functions on the same values as the GPU's k_sweep; the end faces on a
 * side to another level by jump_faces. Returns the largest wave speed. */
static ts_real sweep_rows(const swe_buq_view *v, int k) {
  swe_arrays a = buq_leaf_arrays(v, k);
  const ts_buq_block *b = &v->blocks[k];
  swe_consts kc = buq_consts(v, b->level);
  int M = v->M, west = b->side_relation[TS_BUQ_WEST] != TS_BUQ_SAME;
  int east = b->side_relation[TS_BUQ_EAST] != TS_BUQ_SAME;
  ts_real g = (ts_real)v->gravity, amax = 0;
  for (int j = 0; j < M; j++) {
    swe_idx c0 = buq_local(v, -1, j); /* cell n - 1 at c0 + n */
    side_row lo, hi;
    int act[SWE_BUQ_MAX_BLOCK + 2];
    ts_real corr_lo[SWE_BUQ_MAX_BLOCK + 1], corr_hi[SWE_BUQ_MAX_BLOCK + 1];
    int cell_act[SWE_BUQ_MAX_BLOCK + 4]; /* cells -2 .. M + 1 */
    for (int n = 0; n < M + 4; n++)
      cell_act[n] = a.active[c0 - 1 + n];
#pragma omp simd
    for (int n = 0; n < M + 2; n++)
      act[n] = reconstruct_into(&a, &kc, c0 + n, 1, v->W, 1, cell_act[n], cell_act[n + 1],
                                cell_act[n + 2], &lo, &hi, n);
#pragma omp simd reduction(max : amax)
    for (int f = west; f <= M - east; f++) { /* face f: between cells f - 1 and f */
      ts_real speed = face_into(&kc, act[f], act[f + 1], side_get(&hi, f), side_get(&lo, f + 1),
                                a.fx, c0 + 1 + f, &corr_lo[f], &corr_hi[f]);
      amax = amax > speed ? amax : speed;
    }
    if (west || east)
      amax = swe_max(amax, jump_faces(v, k, j, 1, &lo, &hi, act, corr_lo, corr_hi));
#pragma omp simd
    for (int n = 0; n < M; n++)
      a.src_x[c0 + 1 + n] = cell_source(act[n + 1], corr_hi[n], side_get(&lo, n + 1),
                                        side_get(&hi, n + 1), corr_lo[n + 1], g);
  }
  return amax;
}

/* The y sweep of leaf k, a row of cells at a time: loops the compiler vectorises across the
 * columns; the end faces on a side to another level by jump_faces. Returns the largest wave
 * speed. */
static ts_real sweep_columns(const swe_buq_view *v, int k) {
  swe_arrays a = buq_leaf_arrays(v, k);
  const ts_buq_block *b = &v->blocks[k];
  swe_consts kc = buq_consts(v, b->level);
  int M = v->M, south = b->side_relation[TS_BUQ_SOUTH] != TS_BUQ_SAME;
  int north = b->side_relation[TS_BUQ_NORTH] != TS_BUQ_SAME;
  ts_real g = (ts_real)v->gravity, amax = 0;
  side_row lo[SWE_BUQ_MAX_BLOCK + 2], hi[SWE_BUQ_MAX_BLOCK + 2]; /* [n + 1]: cells of row n */
  int act[SWE_BUQ_MAX_BLOCK + 2][SWE_BUQ_MAX_BLOCK];
  ts_real corr_lo[SWE_BUQ_MAX_BLOCK + 1][SWE_BUQ_MAX_BLOCK];
  ts_real corr_hi[SWE_BUQ_MAX_BLOCK + 1][SWE_BUQ_MAX_BLOCK];
  int cell_act[SWE_BUQ_MAX_BLOCK + 4][SWE_BUQ_MAX_BLOCK]; /* rows -2 .. M + 1 */
  for (int n = 0; n < M + 4; n++)
    for (int i = 0; i < M; i++)
      cell_act[n][i] = a.active[buq_local(v, i, n - 2)];
  for (int n = -1; n <= M; n++) {
    swe_idx r0 = buq_local(v, 0, n);
#pragma omp simd
    for (int i = 0; i < M; i++)
      act[n + 1][i] =
          reconstruct_into(&a, &kc, r0 + i, v->W, 1, 0, cell_act[n + 1][i], cell_act[n + 2][i],
                           cell_act[n + 3][i], &lo[n + 1], &hi[n + 1], i);
  }
  for (int f = south; f <= M - north; f++) { /* faces f: between rows f - 1 and f */
    swe_idx r0 = buq_local(v, 0, f);
#pragma omp simd reduction(max : amax)
    for (int i = 0; i < M; i++) {
      ts_real speed =
          face_into(&kc, act[f][i], act[f + 1][i], side_get(&hi[f], i), side_get(&lo[f + 1], i),
                    a.fy, r0 + i, &corr_lo[f][i], &corr_hi[f][i]);
      amax = amax > speed ? amax : speed;
    }
  }
  for (int i = 0; i < M && (south || north); i++) { /* column i's cells as a line */
    side_row clo, chi;
    int cact[SWE_BUQ_MAX_BLOCK + 2];
    ts_real clo_corr[SWE_BUQ_MAX_BLOCK + 1], chi_corr[SWE_BUQ_MAX_BLOCK + 1];
    for (int n = 0; n < M + 2; n++)
      side_put(&clo, n, side_get(&lo[n], i)), side_put(&chi, n, side_get(&hi[n], i)),
          cact[n] = act[n][i];
    amax = swe_max(amax, jump_faces(v, k, i, 0, &clo, &chi, cact, clo_corr, chi_corr));
    if (south)
      corr_lo[0][i] = clo_corr[0], corr_hi[0][i] = chi_corr[0];
    if (north)
      corr_lo[M][i] = clo_corr[M], corr_hi[M][i] = chi_corr[M];
  }
  for (int n = 0; n < M; n++) {
    swe_idx r0 = buq_local(v, 0, n);
#pragma omp simd
    for (int i = 0; i < M; i++)
      a.src_y[r0 + i] = cell_source(act[n + 1][i], corr_hi[n][i], side_get(&lo[n + 1], i),
                                    side_get(&hi[n + 1], i), corr_lo[n + 1][i], g);
  }
  return amax;
}

/* Whether a side of leaf b touches leaves of the relation `rel` (finer, coarser). */
static int touches(const ts_buq_block *b, ts_buq_relation rel) {
  int any = 0;
  for (int s = 0; s < 4; s++)
    any |= b->side_relation[s] == rel;
  return any;
}

/* Fluxes of the leaves up to the flux ring (sweep_rows, sweep_columns); with `speeds`, the
 * largest wave speeds per level (x, y) kept for cpu_speeds. */
static void cpu_fluxes(void *x, int speeds) {
  part *e = x;
  int L = e->levels, n_fluxes = e->counts[2];
  double ax[TS_BUQ_MAX_LEVELS] = {0}, ay[TS_BUQ_MAX_LEVELS] = {0};
#pragma omp parallel num_threads(e->threads)
  {
    ts_real lx[TS_BUQ_MAX_LEVELS] = {0}, ly[TS_BUQ_MAX_LEVELS] = {0};
#pragma omp for schedule(dynamic, 4)
    for (int n = 0; n < n_fluxes; n++) {
      int k = e->list[n], level = e->v.blocks[k].level;
      lx[level] = swe_max(lx[level], sweep_rows(&e->v, k));
      ly[level] = swe_max(ly[level], sweep_columns(&e->v, k));
    }
#pragma omp critical
    for (int l = 0; l < L; l++) {
      ax[l] = fmax(ax[l], (double)lx[l]);
      ay[l] = fmax(ay[l], (double)ly[l]);
    }
  }
  for (int l = 0; l < L && speeds; l++)
    e->amax[l][0] = ax[l], e->amax[l][1] = ay[l];
}

static void cpu_speeds(void *x, double amax[][2]) {
  const part *e = x;
  memcpy(amax, e->amax, sizeof(double) * 2 * (size_t)e->levels);
}

/* Limiters and speed caps of the cells of the leaves up to the limiter ring (those next to
 * finer leaves, whose faces their border cells sum, a cell at a time), then of their first ghost
 * ring. */
static void cpu_limit(void *x, double dt) {
  part *e = x;
  int M = e->M, n_limit = e->counts[1];
#pragma omp parallel for schedule(dynamic, 4) num_threads(e->threads)
  for (int n = 0; n < n_limit; n++) {
    int k = e->list[n];
    if (touches(&e->v.blocks[k], TS_BUQ_FINER)) {
      for (int j = 0; j < M; j++)
        for (int i = 0; i < M; i++)
          buq_drain_cell(&e->v, k, i, j, (ts_real)dt);
      continue;
    }
    /* every cell is swe_drain_cell's: a row at a time, one loop the compiler vectorises */
    swe_arrays a = buq_leaf_arrays(&e->v, k);
    swe_consts kc = buq_consts(&e->v, e->v.blocks[k].level);
    for (int j = 0; j < M; j++) {
      swe_idx c0 = buq_local(&e->v, 0, j);
#pragma omp simd
      for (int i = 0; i < M; i++)
        swe_drain_cell(&a, &kc, c0 + i, (ts_real)dt);
    }
  }
#pragma omp parallel for schedule(dynamic, 8) num_threads(e->threads)
  for (int n = 0; n < n_limit; n++)
    for (int side = 0; side < 4; side++)
      for (int at = 0; at < M; at++)
        buq_drain_ghost(&e->v, e->list[n], side, at);
}

/* The update of leaf k, none of whose neighbours is finer (so that every cell is
 * swe_update_cell's), a row at a time (swe_update_row: the loop the compiler vectorises). */
static int update_leaf_rows(const swe_buq_view *v, int k, ts_real dt, int stage) {
  swe_arrays a = buq_leaf_arrays(v, k);
  swe_consts kc = buq_consts(v, v->blocks[k].level);
  int bad = 0;
  for (int j = 0; j < v->M; j++)
    bad |= swe_update_row(&a, &kc, buq_local(v, 0, j), v->M, dt, stage);
  return bad;
}

/* The update of the part's own leaves: those with finer neighbours a cell at a time
 * (buq_update_cell: the faces to the finer leaves), the others a row at a time. */
static void cpu_update(void *x, double dt, int stage, double t_after) {
  (void)t_after;
  part *e = x;
  int M = e->M, bad = 0, n_update = e->counts[0];
#pragma omp parallel for schedule(dynamic, 4) reduction(| : bad) num_threads(e->threads)
  for (int n = 0; n < n_update; n++) {
    int k = e->list[n];
    if (!touches(&e->v.blocks[k], TS_BUQ_FINER)) {
      bad |= update_leaf_rows(&e->v, k, (ts_real)dt, stage);
      continue;
    }
    for (int j = 0; j < M; j++)
      for (int i = 0; i < M; i++)
        if (e->v.active[cell_at(e, k, i, j)])
          bad |= buq_update_cell(&e->v, &e->v, k, i, j, (ts_real)dt, stage);
  }
  e->bad |= bad;
}

static int cpu_take_bad(void *x) {
  part *e = x;
  int bad = e->bad;
  e->bad = 0;
  return bad;
}

/* The flood maps of the part's own computed leaves at time t after a step of dt. */
static void cpu_record(void *x, double t, double dt) {
  part *e = x;
  int n_update = e->counts[0], M = e->M;
  swe_maps m = buq_maps(&e->v, t, dt);
#pragma omp parallel for schedule(dynamic, 8) num_threads(e->threads)
  for (int n = 0; n < n_update; n++)
    for (int j = 0; j < M; j++) {
      int k = e->list[n];
      swe_idx c = buq_cell(&e->v, k, 0, j);
      swe_record_row(&m, (swe_idx)k * M * M + (swe_idx)M * j, e->v.w + c, e->v.bed + c, e->v.hu + c,
                     e->v.hv + c, e->v.active + c, M);
    }
}

/* Rain and losses on every leaf of the part's own (dry leaves too: rain wets them). */
static void cpu_sources(void *x, double dt) {
  part *e = x;
  e->wet_unknown = 1; /* rain wets dry leaves */
#pragma omp parallel for schedule(dynamic, 8) num_threads(e->threads)
  for (int k = 0; k < e->owned; k++)
    for (int j = 0; j < e->M; j++)
      for (int i = 0; i < e->M; i++)
        buq_source_cell(&e->v, k, i, j, dt);
}

static const swe_buq_passes cpu_passes = {
    .choose = cpu_choose,
    .set_list = cpu_set_list,
    .ghosts = cpu_ghosts,
    .fluxes = cpu_fluxes,
    .speeds = cpu_speeds,
    .limit = cpu_limit,
    .update = cpu_update,
    .take_bad = cpu_take_bad,
    .record = cpu_record,
    .sources = cpu_sources,
};

/* ---------------------------------------------------------------- steps */

/* The host arrays of part e brought up to date with its device's (GPU backend). */
static void part_to_host(const part *ec) {
  part *e = (part *)ec;
  if (e->host_stale && e->ops->download)
    e->ops->download(e->x, &e->v);
  e->host_stale = 0;
}

/* The leaves of the last step into `computed`, from the device after runs there. */
static void last_leaves(const part *ec) {
  part *e = (part *)ec;
  if (e->ran && e->ops->leaves_on)
    e->ops->leaves_on(e->x, e->computed);
}

static void to_host(const engine *e) {
  for (int i = e->mine[0]; i < e->mine[1]; i++)
    part_to_host(&e->parts[i]);
}

/* The copies' cells from their owners before stage `stage` (collective): on the devices, the
 * parts' queued work finished first. */
static ts_status exchange(engine *e, int stage) {
  if (!e->plan)
    return TS_OK;
  int device = 0;
  for (int i = e->mine[0]; i < e->mine[1]; i++)
    if (e->parts[i].ops->finish) {
      e->parts[i].ops->finish(e->parts[i].x);
      device = 1;
    }
  ts_halo_field *fields = stage == 1 ? e->fields_mid : e->fields;
  TS_CALL(ts_halo_start(e->plan, fields, fields));
  TS_CALL(ts_halo_finish(e->plan, fields));
#if TESSERA_HAVE_CUDA
  if (device)
    ts_gpu_halo_wait();
#else
  (void)device;
#endif
  return TS_OK;
}

/* The leaves of this step (early exit: those holding water or touching a leaf that does, as
 * water moves less than a cell per stage) among those up to the ghost ring, by ring and each
 * ring by level from the coarsest (a counting sort); the leaves dropped from the list get zero
 * fluxes, as their neighbours read them. The passes tell whether the leaves changed: the list of
 * the last step stays otherwise. */
static void choose_leaves(part *e, int early_exit) {
  int nb = e->nblocks, keys = (RING_GHOST + 1) * e->levels;
  unsigned char *on = e->on;
  if (!e->ops->choose(e->x, early_exit, on) && e->listed)
    return;
  e->listed = 1;
  e->ndropped = 0;
  int first[(RING_GHOST + 1) * TS_BUQ_MAX_LEVELS + 1] = {0};
  for (int k = 0; k < nb; k++) {
    if (!on[k] && e->computed[k])
      e->dropped[e->ndropped++] = k;
    e->computed[k] = on[k];
    if (on[k] && e->ring[k] <= RING_GHOST)
      first[e->ring[k] * e->levels + (e->levels - 1 - e->blocks[k].level) + 1]++;
  }
  for (int key = 0; key < keys; key++)
    first[key + 1] += first[key];
  for (int ring = 0; ring <= RING_GHOST; ring++)
    e->counts[ring] = first[(ring + 1) * e->levels];
  for (int k = 0; k < nb; k++)
    if (on[k] && e->ring[k] <= RING_GHOST)
      e->list[first[e->ring[k] * e->levels + (e->levels - 1 - e->blocks[k].level)]++] = k;
  e->ops->set_list(e->x, e->list, e->counts, e->dropped, e->ndropped);
}

static ts_status look_at_balance(engine *e, int steps, double seconds);

static ts_status engine_step(void *ev, double t, double target, double step_max, double *dt_out,
                             double *t_after) {
  engine *e = ev;
  double started = omp_get_wtime();
  int stages = e->p.rk_order == 1 ? 1 : 2;
  double dt = 0;
  for (int stage = 0; stage < stages; stage++) {
    TS_CALL(exchange(e, stage));
    double amax[TS_BUQ_MAX_LEVELS][2] = {{0}};
    for (int i = e->mine[0]; i < e->mine[1]; i++) {
      part *pt = &e->parts[i];
      if (stage == 0)
        choose_leaves(pt, e->p.early_exit);
      pt->ops->ghosts(pt->x);
      pt->ops->fluxes(pt->x, stage == 0);
    }
    for (int i = e->mine[0]; i < e->mine[1] && stage == 0; i++) {
      double part_amax[TS_BUQ_MAX_LEVELS][2];
      e->parts[i].ops->speeds(e->parts[i].x, part_amax);
      for (int l = 0; l < e->q.levels; l++)
        for (int a = 0; a < 2; a++)
          amax[l][a] = fmax(amax[l][a], part_amax[l][a]);
    }
    if (stage == 0)
      TS_CALL(ts_comm_max(e->comm, &amax[0][0], 2 * e->q.levels));
    if (stage == 0) {
      /* the step of the finest cells: wave speeds in finest cells per second */
      double ax = 0, ay = 0;
      for (int l = 0; l < e->q.levels; l++) {
        ax = fmax(ax, ldexp(amax[l][0], -l));
        ay = fmax(ay, ldexp(amax[l][1], -l));
      }
      dt = swe_time_step(ax, ay, e->p.cfl, e->dx0, e->dx0, step_max, t, target,
                         e->p.precision == TS_DOUBLE, t_after);
      if (!(dt > 0))
        return ts_error(TS_ERR_NUMERIC, "time step collapsed to %g s at t = %g s", dt, t);
      for (int i = e->mine[0]; i < e->mine[1]; i++)
        if (e->parts[i].ops->set_step)
          e->parts[i].ops->set_step(e->parts[i].x, dt, *t_after);
    }
    for (int i = e->mine[0]; i < e->mine[1]; i++) {
      part *pt = &e->parts[i];
      pt->ops->limit(pt->x, dt);
      pt->ops->update(pt->x, dt, stage, *t_after);
    }
  }
  e->t = *t_after;
  int bad = 0;
  for (int i = e->mine[0]; i < e->mine[1]; i++) {
    part *pt = &e->parts[i];
    pt->ops->record(pt->x, e->t, dt);
    if (e->sources)
      pt->ops->sources(pt->x, dt);
    pt->host_stale = pt->ops != &cpu_passes;
    bad |= pt->ops->take_bad(pt->x);
  }
  *dt_out = dt;
  double any_bad = bad;
  TS_CALL(ts_comm_max(e->comm, &any_bad, 1));
  if (any_bad > 0)
    return ts_error(TS_ERR_NUMERIC, "non-finite water state at t = %g s", t);
  return look_at_balance(e, 1, omp_get_wtime() - started);
}

/* Whether the steps run on the devices without the host: every part in this process, on GPUs
 * (at most SWE_DEVICE_RUN_PARTS, each reading the memory of the others' devices). */
static int runs_on_device(const engine *e) {
  int n = e->mine[1] - e->mine[0];
  if (n != e->nparts || n > SWE_DEVICE_RUN_PARTS)
    return 0;
  for (int i = 0; i < n; i++)
    if (!e->parts[i].ops->begin_steps || (n > 1 && !e->parts[i].ops->joined))
      return 0;
#if TESSERA_HAVE_CUDA
  for (int i = 0; i < n; i++)
    for (int q = 0; q < n; q++)
      if (e->devices[i] != e->devices[q] && !ts_gpu_peer_access(e->devices[i], e->devices[q]))
        return 0;
#endif
  return 1;
}

#if TESSERA_HAVE_CUDA
/* The exchange before stage `stage` queued on the devices (recording a graph): the copies wait
 * for every part's passes, and every part for the copies to every device: those to its own
 * write its copies, those to the others read its cells, which its next passes overwrite. */
static ts_status queue_exchange(engine *e, int stage) {
  int n = e->nparts;
  for (int i = 0; i < n; i++)
    for (int q = 0; q < n; q++)
      e->parts[q].ops->stream_after(e->parts[q].x, ts_gpu_halo_stream(e->devices[i]));
  ts_halo_field *fields = stage == 1 ? e->fields_mid : e->fields;
  TS_CALL(ts_halo_start(e->plan, fields, fields));
  TS_CALL(ts_halo_finish(e->plan, fields));
  for (int i = 0; i < n; i++)
    ts_gpu_after_halos(e->parts[i].ops->stream(e->parts[i].x), e->devices, n);
  return TS_OK;
}

/* Records the graph of one step of several parts, launched on part 0's stream: the passes of
 * engine_step, each part taking the step from the wave speeds all published, the exchange
 * queued between the stages and after the sources, then the leaves of the next step marked. */
static ts_status record_parts(engine *e) {
  int n = e->nparts, stages = e->p.rk_order == 1 ? 1 : 2;
  const swe_buq_passes *ops = e->parts[0].ops;
  void *x[SWE_DEVICE_RUN_PARTS];
  for (int i = 0; i < n; i++)
    x[i] = e->parts[i].x, ops->joined(x[i], 1);
  ts_gpu_graph_destroy(e->graph);
  e->graph = NULL;
  void *lead = ops->stream(x[0]);
  ts_gpu_capture_begin(lead);
  for (int i = 1; i < n; i++)
    ops->stream_after(x[0], ops->stream(x[i]));
  ts_status st = TS_OK;
  for (int stage = 0; stage < stages && st == TS_OK; stage++) {
    for (int i = 0; i < n; i++) {
      ops->ghosts(x[i]);
      ops->fluxes(x[i], stage == 0);
    }
    if (stage == 0) {
      for (int i = 0; i < n; i++)
        ops->share_speeds(x[i]);
      for (int i = 0; i < n; i++)
        for (int q = 0; q < n; q++)
          if (q != i)
            ops->stream_after(x[q], ops->stream(x[i]));
      for (int i = 0; i < n; i++)
        ops->time_step_over(x[i], x, n, e->p.cfl, e->dx0);
    }
    for (int i = 0; i < n; i++) {
      ops->limit(x[i], 0);
      ops->update(x[i], 0, stage, 0);
    }
    if (stage + 1 < stages)
      st = queue_exchange(e, stage + 1);
  }
  for (int i = 0; i < n; i++) {
    ops->record(x[i], 0, 0);
    if (e->sources)
      ops->sources(x[i], 0);
  }
  if (st == TS_OK)
    st = queue_exchange(e, 0);
  for (int i = 0; i < n; i++)
    ops->end_step(x[i]);
  for (int i = 1; i < n; i++)
    ops->stream_after(x[i], lead);
  e->graph = ts_gpu_capture_end(lead);
  return st;
}
#endif

/* Steps n times the graph of several parts (recorded anew when a part's passes changed), from
 * copies exchanged by the host (the leaves of the first step are marked from them). */
static ts_status run_parts(engine *e, int steps) {
#if TESSERA_HAVE_CUDA
  int n = e->nparts, recorded = e->graph != NULL;
  const swe_buq_passes *ops = e->parts[0].ops;
  for (int i = 0; i < n; i++)
    recorded &= ops->joined(e->parts[i].x, 0);
  if (!recorded)
    TS_CALL(record_parts(e));
  void *lead = ops->stream(e->parts[0].x);
  for (int i = 1; i < n; i++) /* the graph's passes after each part's first marking */
    ops->stream_after(e->parts[i].x, lead);
  for (int q = 0; q < steps; q++)
    ts_gpu_graph_launch(e->graph, lead);
  for (int i = 1; i < n; i++)
    ops->stream_after(e->parts[0].x, ops->stream(e->parts[i].x));
#else
  (void)e, (void)steps;
#endif
  return TS_OK;
}

/* A run of steps on the devices: the passes of engine_step, the step computed there, every leaf
 * listed (the list state_changed gave) and the leaves of each step marked there; the passes of
 * one step recorded once into a graph (of every part). */
static ts_status device_steps(engine *e, double t, double target, double stop, double step_max,
                              int max_steps, ts_swe_run *out) {
  double started = omp_get_wtime();
  int n = e->nparts, steps = max_steps < TS_SWE_ADVANCE_MAX ? max_steps : TS_SWE_ADVANCE_MAX;
  part *pt = &e->parts[0];
  const swe_buq_passes *ops = pt->ops;
  int stages = e->p.rk_order == 1 ? 1 : 2;
  if (n > 1)
    TS_CALL(exchange(e, 0));
  for (int i = 0; i < n; i++)
    ops->begin_steps(e->parts[i].x, t, target, stop, step_max, e->p.early_exit);
  if (n > 1) {
    TS_CALL(run_parts(e, steps));
  } else {
    if (ops->capture_step(pt->x, 1)) {
      for (int stage = 0; stage < stages; stage++) {
        ops->ghosts(pt->x);
        ops->fluxes(pt->x, stage == 0);
        if (stage == 0)
          ops->time_step(pt->x, e->p.cfl, e->dx0);
        ops->limit(pt->x, 0);
        ops->update(pt->x, 0, stage, 0);
      }
      ops->record(pt->x, 0, 0);
      if (e->sources)
        ops->sources(pt->x, 0);
      ops->end_step(pt->x);
      ops->capture_step(pt->x, 0);
    }
    ops->run_steps(pt->x, steps);
  }
  swe_buq_steps report, other;
  for (int i = 0; i < n; i++) {
    swe_buq_steps *got = i == 0 ? &report : &other;
    ops->finish_steps(e->parts[i].x, got);
    e->parts[i].host_stale = e->parts[i].ran = 1;
    const ts_swe_run *a = &report.run, *b = &got->run;
    if (!report.bad && !got->bad &&
        (a->taken != b->taken || memcmp(a->t, b->t, sizeof(double) * (size_t)a->taken)))
      return ts_error(TS_ERR_INTERNAL, "swe: quadtree parts 0 and %d parted: %d and %d steps", i,
                      a->taken, b->taken);
    report.bad |= got->bad;
  }
  *out = report.run;
  if (out->taken > 0)
    e->t = out->t[out->taken - 1];
  if (report.bad)
    return ts_error(TS_ERR_NUMERIC, "non-finite water state at t = %g s",
                    out->taken > 1 ? out->t[out->taken - 2] : t);
  if (report.collapsed)
    return ts_error(TS_ERR_NUMERIC, "time step collapsed to %g s at t = %g s", report.collapsed_dt,
                    e->t);
  return look_at_balance(e, out->taken, omp_get_wtime() - started);
}

static ts_status engine_advance(void *ev, double t, double target, double stop, double step_max,
                                int max_steps, ts_swe_run *out) {
  engine *e = ev;
  out->taken = 0;
  e->ran_on_device = runs_on_device(e);
  if (e->ran_on_device)
    return device_steps(e, t, target, stop, step_max, max_steps, out);
  double dt, t_after;
  TS_CALL(engine_step(e, t, target, step_max, &dt, &t_after));
  out->taken = 1, out->t[0] = t_after, out->dt[0] = dt;
  return TS_OK;
}

/* ---------------------------------------------------------------- creation */

static void part_destroy(part *e) {
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
  free(e->blocks);
  free(e->global);
  free(e->ring);
  free(e->computed);
  free(e->list);
  free(e->dropped);
  free(e->on);
  free(e->wet);
  free(e->watch_cells);
}

static void engine_destroy(void *ev) {
  engine *e = ev;
  if (!e)
    return;
  ts_halo_plan_destroy(e->plan);
#if TESSERA_HAVE_CUDA
  ts_gpu_graph_destroy(e->graph);
#endif
  for (int i = 0; i < e->nparts && e->parts; i++)
    part_destroy(&e->parts[i]);
  free(e->parts);
  free(e->first);
  free(e->watch_ij);
  free(e->part_rank);
  free(e->slot);
  free(e->fields);
  free(e->fields_mid);
  free(e->devices);
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

/* Every leaf of the part up to the ghost ring in the list, ring by ring (its own first), as
 * computed (after the state was set from outside the steps). Runs of steps on the devices keep
 * this list, the passes skipping the leaves out of a step. */
static void list_all_leaves(part *e) {
  e->listed = 0;
  memset(e->computed, 1, (size_t)e->nblocks);
  int n = 0;
  for (int ring = 0; ring <= RING_GHOST; ring++) {
    for (int k = 0; k < e->nblocks; k++)
      if (e->ring[k] == ring)
        e->list[n++] = k;
    e->counts[ring] = n;
  }
}

/* ... and their velocities from the host's state. */
static void all_leaves(part *e) {
  list_all_leaves(e);
#pragma omp parallel for schedule(dynamic, 8) num_threads(e->threads)
  for (int k = 0; k < e->nblocks; k++) {
    swe_arrays a = buq_leaf_arrays(&e->v, k);
    swe_consts kc = buq_consts(&e->v, e->blocks[k].level);
    for (int j = 0; j < e->M; j++)
      for (int i = 0; i < e->M; i++)
        swe_cell_velocity(&a, &kc, local(e, i, j));
  }
}

/* The state set on the host (creation, surface, checkpoint) taken by the passes: the CPU's
 * velocities, or a copy to the device. The copies' cells come from their owners at the next
 * step's first exchange. */
static void state_changed(engine *e) {
  for (int i = e->mine[0]; i < e->mine[1]; i++) {
    part *pt = &e->parts[i];
    all_leaves(pt);
    if (pt->ops->upload) {
      pt->ops->set_list(pt->x, pt->list, pt->counts, NULL, 0);
      pt->ops->upload(pt->x, &pt->v);
    }
    pt->host_stale = 0;
    pt->ran = 0;
  }
}

/* The rings around the leaves first .. last - 1 of grid q (ring[k]: 0 for those, RING_LIMIT ..
 * RINGS for the copies a part holding them needs, 255 for the others): side and corner
 * neighbours ring by ring up to the ghost ring, then the coarser neighbours whose ghosts the
 * prolongations of those read (in the ghost ring), then the neighbours of all these. */
static ts_status rings_around(const ts_buq *q, int first, int last, unsigned char *ring) {
  int nb = q->nblocks, *stack = malloc(sizeof(int) * (size_t)nb), top = 0;
  if (!stack)
    return ts_error(TS_ERR_NOMEM, "swe: out of memory for quadtree partitions");
  memset(ring, 255, (size_t)nb);
  memset(ring + first, 0, (size_t)(last - first));
  for (int r = 1; r <= RINGS; r++) {
    if (r == RINGS) { /* the coarser leaves the ghost ring's prolongations read */
      for (int k = 0; k < nb; k++)
        if (ring[k] <= RING_GHOST)
          stack[top++] = k;
      while (top > 0) {
        const ts_buq_block *b = &q->blocks[stack[--top]];
        for (int s = 0; s < 4; s++)
          if (b->side_relation[s] == TS_BUQ_COARSER && ring[b->side[s][0]] > RING_GHOST) {
            ring[b->side[s][0]] = RING_GHOST;
            stack[top++] = b->side[s][0];
          }
      }
    }
    for (int k = 0; k < nb; k++) {
      if (ring[k] != r - 1 && !(r == RINGS && ring[k] <= RING_GHOST))
        continue;
      const ts_buq_block *b = &q->blocks[k];
      int around[12];
      for (int s = 0; s < 4; s++)
        around[2 * s] = b->side[s][0], around[2 * s + 1] = b->side[s][1];
      for (int c = 0; c < 4; c++)
        around[8 + c] = b->corner[c];
      for (int n = 0; n < 12; n++)
        if (around[n] >= 0 && ring[around[n]] == 255)
          ring[around[n]] = (unsigned char)r;
    }
  }
  free(stack);
  return TS_OK;
}

/* The leaves part i holds: its own (in Morton order for now) and the copies around them, with
 * their rings. */
static ts_status part_holds(engine *e, part *pt, int i) {
  const ts_buq *q = &e->q;
  int nb = q->nblocks, first = e->first[i], last = e->first[i + 1];
  unsigned char *ring = malloc((size_t)nb);
  ts_status st = ring ? rings_around(q, first, last, ring)
                      : ts_error(TS_ERR_NOMEM, "swe: out of memory for partitions");
  int n = 0;
  for (int k = 0; k < nb && st == TS_OK; k++)
    n += ring[k] <= RINGS;
  pt->nblocks = n, pt->owned = last - first;
  if (st == TS_OK &&
      (!(pt->global = malloc(sizeof(int) * (size_t)n)) || !(pt->ring = malloc((size_t)n))))
    st = ts_error(TS_ERR_NOMEM, "swe: out of memory for partitions");
  if (st == TS_OK) {
    n = 0;
    for (int k = first; k < last; k++)
      pt->ring[n] = 0, pt->global[n++] = k;
    for (int k = 0; k < nb; k++)
      if (ring[k] <= RINGS && (k < first || k >= last))
        pt->ring[n] = ring[k], pt->global[n++] = k;
  }
  free(ring);
  return st;
}

/* A leaf and its sort key (leaf_order). */
typedef struct leaf_key {
  int key[3], leaf;
  unsigned char ring;
} leaf_key;

static int compare_keys(const void *a, const void *b) {
  const leaf_key *x = a, *y = b;
  for (int i = 0; i < 3; i++)
    if (x->key[i] != y->key[i])
      return x->key[i] < y->key[i] ? -1 : 1;
  return (x->leaf > y->leaf) - (x->leaf < y->leaf);
}

/* The order of each part's leaves, so that the copies one part takes from another are few runs
 * of consecutive leaves at both ends (few transfers): its own leaves that no other part copies
 * first, then the others by the lowest and the highest part copying them; the copies by owner
 * and by their place there. Sets e->slot. */
static ts_status leaf_order(engine *e) {
  int nb = e->q.nblocks, most = 1;
  int *lo = malloc(sizeof(int) * (size_t)nb), *hi = malloc(sizeof(int) * (size_t)nb);
  for (int i = 0; i < e->nparts; i++)
    most = e->parts[i].nblocks > most ? e->parts[i].nblocks : most;
  leaf_key *keys = malloc(sizeof *keys * (size_t)most);
  e->slot = malloc(sizeof(int) * (size_t)nb);
  if (!lo || !hi || !keys || !e->slot) {
    free(lo), free(hi), free(keys);
    return ts_error(TS_ERR_NOMEM, "swe: out of memory for partitions");
  }
  for (int k = 0; k < nb; k++)
    lo[k] = e->nparts, hi[k] = -1;
  for (int i = 0; i < e->nparts; i++)
    for (int l = e->parts[i].owned; l < e->parts[i].nblocks; l++) {
      int k = e->parts[i].global[l];
      lo[k] = i < lo[k] ? i : lo[k];
      hi[k] = i > hi[k] ? i : hi[k];
    }
  for (int pass = 0; pass < 2; pass++) /* own leaves (their slots), then the copies */
    for (int i = 0; i < e->nparts; i++) {
      part *pt = &e->parts[i];
      int from = pass ? pt->owned : 0, to = pass ? pt->nblocks : pt->owned;
      for (int l = from; l < to; l++) {
        int k = pt->global[l], slot, owner = pass ? (int)(owner_of(e, k, &slot) - e->parts) : i;
        leaf_key *c = &keys[l - from];
        c->leaf = k, c->ring = pt->ring[l];
        c->key[0] = pass ? owner : hi[k] >= 0;
        c->key[1] = pass ? e->slot[k] : lo[k];
        c->key[2] = pass ? 0 : hi[k];
      }
      qsort(keys, (size_t)(to - from), sizeof *keys, compare_keys);
      for (int l = from; l < to; l++) {
        pt->global[l] = keys[l - from].leaf, pt->ring[l] = keys[l - from].ring;
        if (!pass)
          e->slot[pt->global[l]] = l;
      }
    }
  free(lo), free(hi), free(keys);
  return TS_OK;
}

/* Part pt's leaves as blocks with their neighbours renumbered to its own: -1 where not held (a
 * same-level or coarser side then a wall: only the outermost ring has such sides, and no pass
 * reads its ghosts). */
static ts_status part_blocks(engine *e, part *pt) {
  const ts_buq *q = &e->q;
  int n = pt->nblocks, *local = malloc(sizeof(int) * (size_t)q->nblocks);
  pt->blocks = malloc(sizeof *pt->blocks * (size_t)n);
  if (!local || !pt->blocks) {
    free(local);
    return ts_error(TS_ERR_NOMEM, "swe: out of memory for partitions");
  }
  for (int k = 0; k < q->nblocks; k++)
    local[k] = -1;
  for (int l = 0; l < n; l++)
    local[pt->global[l]] = l;
  for (int l = 0; l < n; l++) {
    ts_buq_block *b = &pt->blocks[l];
    *b = q->blocks[pt->global[l]];
    for (int s = 0; s < 4; s++) {
      for (int m = 0; m < 2; m++)
        b->side[s][m] = b->side[s][m] >= 0 ? local[b->side[s][m]] : -1;
      if (b->side_relation[s] != TS_BUQ_FINER && b->side[s][0] < 0)
        b->side_relation[s] = TS_BUQ_NONE;
    }
    for (int c = 0; c < 4; c++) {
      b->corner[c] = b->corner[c] >= 0 ? local[b->corner[c]] : -1;
      if (b->corner[c] < 0)
        b->corner_relation[c] = TS_BUQ_NONE;
    }
  }
  free(local);
  return TS_OK;
}

/* Part i of the engine: its leaves and their arrays (zero) on the CPU. */
static ts_status part_alloc(engine *e, int i) {
  const ts_swe_params *p = &e->p;
  part *pt = &e->parts[i];
  pt->M = e->M, pt->W = e->W, pt->P = e->P, pt->levels = e->q.levels, pt->threads = e->threads;
  pt->ops = &cpu_passes;
  pt->x = pt;
  TS_CALL(part_blocks(e, pt));
  pt->v = (swe_buq_view){.blocks = pt->blocks,
                         .owned = pt->owned,
                         .M = e->M,
                         .W = e->W,
                         .P = (int)e->P,
                         .origin = G + G * e->W,
                         .dx0 = e->dx0,
                         .gravity = p->gravity,
                         .theta = p->theta,
                         .dry_depth = p->dry_depth,
                         .friction_value = p->friction_value,
                         .arrival_depth = p->arrival_depth,
                         .friction_kind = (int)p->friction,
                         .rk_order = p->rk_order,
                         .loss_initial_value = p->losses.initial,
                         .loss_rate_value = p->losses.rate};
  size_t nb = (size_t)pt->nblocks, cells = nb * (size_t)e->P, leaf_cells = nb * e->M * e->M;
  ts_real **arrays[SWE_BUQ_NARRAYS] = SWE_BUQ_ARRAYS(&pt->v);
  double **maps[SWE_BUQ_NMAPS] = SWE_BUQ_MAPS(&pt->v);
  int failed = 0;
  for (int k = 0; k < SWE_BUQ_NARRAYS; k++)
    failed |= !(*arrays[k] = calloc(cells, sizeof(ts_real)));
  for (int k = 0; k < SWE_BUQ_NMAPS; k++)
    failed |= !(*maps[k] = calloc(leaf_cells, sizeof(double)));
  failed |= !(pt->v.active = calloc(cells, 1));
  if (e->friction) /* a coefficient per cell: the mean over its bed cells */
    failed |= !(pt->v.friction = calloc(cells, sizeof(ts_real)));
  if (e->sources)
    failed |= !(pt->v.lost = calloc(leaf_cells, sizeof(double)));
  if (p->rain.nframes > 0 && p->rain.grids)
    failed |= !(pt->v.rain = calloc(leaf_cells, sizeof(ts_real)));
  if (p->losses.initial_grid)
    failed |= !(pt->v.loss_initial = calloc(leaf_cells, sizeof(ts_real)));
  if (p->losses.rate_grid)
    failed |= !(pt->v.loss_rate = calloc(leaf_cells, sizeof(ts_real)));
  failed |= !(pt->computed = calloc(nb, 1)) || !(pt->list = malloc(sizeof(int) * nb)) ||
            !(pt->dropped = malloc(sizeof(int) * nb)) || !(pt->on = malloc(nb)) ||
            !(pt->wet = malloc(nb));
  pt->wet_unknown = 1;
  if (failed)
    return ts_error(TS_ERR_NOMEM, "swe: out of memory for %zu quadtree blocks", nb);
  return TS_OK;
}

/* Part i of the engine: its leaves, their arrays, beds and state, on the CPU. */
static ts_status part_create(engine *e, int i, const swe_inputs *in) {
  const ts_swe_params *p = &e->p;
  part *pt = &e->parts[i];
  TS_CALL(part_alloc(e, i));
  size_t leaf_cells = (size_t)pt->nblocks * e->M * e->M;
  for (size_t c = 0; c < leaf_cells; c++)
    pt->v.arrival[c] = pt->v.max_eta[c] = NAN;
#pragma omp parallel for schedule(dynamic, 8) num_threads(e->threads)
  for (int k = 0; k < pt->nblocks; k++) {
    build_leaf(pt, k, in->bed);
    init_leaf(pt, k, in);
    if (pt->v.loss_initial)
      leaf_means(pt, k, p->losses.initial_grid, pt->v.loss_initial);
    if (pt->v.loss_rate)
      leaf_means(pt, k, p->losses.rate_grid, pt->v.loss_rate);
  }
  all_leaves(pt);
  cpu_ghosts(pt);
  cpu_record(pt, 0, 0);
  return TS_OK;
}

/* The halo plan that brings each part's copies their owners' cells (w, hu, hv of the M x M
 * cells of each leaf, or of its whole window, runs of consecutive leaves of one owner in one link;
 * a field's coordinates: x, y within a window, z the leaf's place in the part), and the fields of
 * this rank's parts: in device memory for GPU parts (copies between them by the GPU copier, a
 * transport between ranks: NCCL, CUDA-aware MPI or host staging), else in host memory.
 * Collective. */
static ts_status build_exchange(engine *e, int on_device) {
  int np = e->nparts, nlinks = 0, M = e->M;
  /* between the GPUs of one process, whole windows: one run of memory for their copy engines
   * (the frames the copies get are filled anew by the ghost pass before any pass reads them) */
  int whole = on_device && ts_comm_size(e->comm) == 1, lo = whole ? 0 : G,
      hi_x = whole ? e->W : G + M, hi_y = whole ? M + 2 * G + 1 : G + M;
  for (int i = 0; i < np; i++)
    nlinks += e->parts[i].nblocks - e->parts[i].owned;
  ts_halo_link *links = malloc(sizeof *links * (size_t)(nlinks > 0 ? nlinks : 1));
  e->fields = calloc((size_t)np, sizeof *e->fields);
  e->fields_mid = calloc((size_t)np, sizeof *e->fields_mid);
  if (!links || !e->fields || !e->fields_mid) {
    free(links);
    return ts_error(TS_ERR_NOMEM, "swe: out of memory for the partitions' exchange");
  }
  nlinks = 0;
  for (int d = 0; d < np; d++) {
    const part *pt = &e->parts[d];
    for (int l = pt->owned; l < pt->nblocks;) {
      int k = pt->global[l], slot, run = 1, next_slot;
      const part *from = owner_of(e, k, &slot);
      while (l + run < pt->nblocks && owner_of(e, pt->global[l + run], &next_slot) == from &&
             next_slot == slot + run)
        run++;
      links[nlinks++] = (ts_halo_link){.src = (int)(from - e->parts),
                                       .dst = d,
                                       .box = {{lo, lo, l}, {hi_x, hi_y, l + run}},
                                       .shift = {0, 0, l - slot}};
      l += run;
    }
    ts_halo_field *f = &e->fields[d], *f_mid = &e->fields_mid[d];
    *f = (ts_halo_field){.ncomp = 3, .elem = sizeof(ts_real), .stride = {1, e->W, e->P}};
    *f_mid = *f;
    if (d >= e->mine[0] && d < e->mine[1]) {
      const swe_buq_view *v = on_device ? pt->ops->mirror(pt->x) : &pt->v;
      int apart = pt->ops->stage_apart && e->p.rk_order == 2;
      f->comp[0] = v->w, f->comp[1] = v->hu, f->comp[2] = v->hv;
      f_mid->comp[0] = apart ? v->w0 : v->w, f_mid->comp[1] = apart ? v->hu0 : v->hu;
      f_mid->comp[2] = apart ? v->hv0 : v->hv;
    }
  }
  ts_halo_spec spec = {.nsub = np,
                       .sub_rank = e->part_rank,
                       .nfields = 1,
                       .layout = e->fields,
                       .nlinks = nlinks,
                       .links = links};
  ts_status st = ts_halo_plan_create(&e->plan, e->comm, &spec);
  free(links);
#if TESSERA_HAVE_CUDA
  if (st == TS_OK && on_device)
    ts_halo_set_copier(e->plan, ts_gpu_copy_box);
  if (st == TS_OK && on_device && ts_comm_size(e->comm) > 1) {
    const ts_halo_transport *transport = NULL;
    ts_transport_kind chosen;
    int device = e->devices[0];
    for (int i = 1; i < e->mine[1] - e->mine[0]; i++)
      device = e->devices[i] == device ? device : -1;
    st = ts_comm_agree(
        e->comm, ts_transport_open(e->comm, device, e->p.parallel.transport, &transport, &chosen));
    if (st == TS_OK)
      st = ts_halo_set_transport(e->plan, transport);
  }
#endif
  return st;
}

/* This rank's parts onto their CUDA devices (*on_device: they run there), if they have some. */
static ts_status parts_to_devices(engine *e, int *on_device) {
  *on_device = e->mine[1] > e->mine[0] && e->devices[0] >= 0;
#if TESSERA_HAVE_CUDA
  for (int i = e->mine[0]; i < e->mine[1] && *on_device; i++) {
    part *pt = &e->parts[i];
    TS_CALL(
        SWE_BUQ_GPU.attach(&pt->x, &pt->v, pt->nblocks, e->q.levels, e->devices[i - e->mine[0]]));
    pt->ops = &SWE_BUQ_GPU;
  }
#endif
  return TS_OK;
}

/* ---------------------------------------------------------------- balance
 *
 * In one process the leaves move between the parts as the water moves: every `interval` steps
 * the cost of each leaf (1 in the step, DRY_COST out of it: its early-exit test) cuts the
 * Morton order anew, and where the largest part's cost exceeds the mean by more than
 * IMBALANCE_TO_MOVE, and the seconds the next interval saves (a step takes as long as its
 * largest part) beat those the last move took, the parts are rebuilt on the new cuts, each
 * leaf's arrays taken from its old owner. The state does not change, nor do the steps after. */
#define DRY_COST (1.0 / 32)
#define IMBALANCE_TO_MOVE 1.1
enum { BALANCE_INTERVAL = 200 }; /* steps between looks when rebalance_interval is auto */

static void leaf_costs(const engine *e, double *cost) {
  for (int i = 0; i < e->nparts; i++) {
    const part *pt = &e->parts[i];
    for (int l = 0; l < pt->owned; l++)
      cost[pt->global[l]] = pt->computed[l] ? 1.0 : DRY_COST;
  }
}

/* The largest part's cost over the mean under the cuts `first`. */
static double imbalance_of(const engine *e, const double *cost, const int *first) {
  double most = 0, total = 0;
  for (int i = 0; i < e->nparts; i++) {
    double c = 0;
    for (int k = first[i]; k < first[i + 1]; k++)
      c += cost[k];
    most = fmax(most, c), total += c;
  }
  return total > 0 ? most / (total / e->nparts) : 1;
}

/* Leaf l of part `to` takes every array of leaf s of part `from`: its window and its maps; with
 * `fixed` only those the steps do not change, which the host reads (beds, activity, friction,
 * rain and losses' parameters). */
static void copy_leaf(part *to, int l, part *from, int s, int fixed) {
  size_t P = (size_t)to->P, MM = (size_t)to->M * to->M;
  ts_real **dst[SWE_BUQ_NARRAYS] = SWE_BUQ_ARRAYS(&to->v);
  ts_real **src[SWE_BUQ_NARRAYS] = SWE_BUQ_ARRAYS(&from->v);
  for (int a = 0; a < SWE_BUQ_NARRAYS; a++)
    if (!fixed || *dst[a] == to->v.bed || *dst[a] == to->v.corner)
      memcpy(*dst[a] + l * P, *src[a] + s * P, sizeof(ts_real) * P);
  memcpy(to->v.active + l * P, from->v.active + s * P, P);
  if (to->v.friction)
    memcpy(to->v.friction + l * P, from->v.friction + s * P, sizeof(ts_real) * P);
  ts_real *per_cell[3][2] = {{to->v.rain, from->v.rain},
                             {to->v.loss_initial, from->v.loss_initial},
                             {to->v.loss_rate, from->v.loss_rate}};
  for (int a = 0; a < 3; a++)
    if (per_cell[a][0])
      memcpy(per_cell[a][0] + l * MM, per_cell[a][1] + s * MM, sizeof(ts_real) * MM);
  if (fixed)
    return;
  double **dmaps[SWE_BUQ_NMAPS] = SWE_BUQ_MAPS(&to->v);
  double **smaps[SWE_BUQ_NMAPS] = SWE_BUQ_MAPS(&from->v);
  for (int m = 0; m < SWE_BUQ_NMAPS; m++)
    memcpy(*dmaps[m] + l * MM, *smaps[m] + s * MM, sizeof(double) * MM);
  if (to->v.lost)
    memcpy(to->v.lost + l * MM, from->v.lost + s * MM, sizeof(double) * MM);
}

/* The new parts' leaves from the old parts (cuts old_first, places old_slot) on the host: every
 * array (`fixed`: those copy_leaf names). */
static void copy_leaves(engine *e, part *old, const int *old_first, const int *old_slot,
                        int fixed) {
  for (int i = 0; i < e->nparts; i++) {
    part *pt = &e->parts[i];
#pragma omp parallel for schedule(dynamic, 64) num_threads(e->threads)
    for (int l = 0; l < pt->nblocks; l++) {
      int k = pt->global[l];
      copy_leaf(pt, l, &old[part_of(old_first, e->nparts, k)], old_slot[k], fixed);
    }
  }
}

/* Whether the leaves can move device to device: every part of this one process on a GPU
 * (the new ones attached), each device reading the others' memory. */
static int moves_on_devices(const engine *e, const part *old) {
  if (e->mine[1] - e->mine[0] != e->nparts || ts_comm_size(e->comm) > 1)
    return 0;
  for (int i = 0; i < e->nparts; i++)
    if (!old[i].ops->take_leaves || !e->parts[i].ops->take_leaves)
      return 0;
#if TESSERA_HAVE_CUDA
  for (int i = 0; i < e->nparts; i++)
    for (int q = 0; q < e->nparts; q++)
      if (e->devices[i] != e->devices[q] && !ts_gpu_peer_access(e->devices[i], e->devices[q]))
        return 0;
#endif
  return 1;
}

/* The new parts' leaves from the old ones' device arrays (moves_on_devices), every leaf
 * listed; the host's arrays take the fixed ones, the rest stays stale there. */
static ts_status take_on_devices(engine *e, part *old, const int *old_first, const int *old_slot) {
  int np = e->nparts;
  void **old_x = malloc(sizeof(void *) * (size_t)np);
  if (!old_x)
    return ts_error(TS_ERR_NOMEM, "swe: out of memory for moving quadtree leaves");
  for (int q = 0; q < np; q++) {
    old[q].ops->finish(old[q].x);
    old_x[q] = old[q].x;
  }
  copy_leaves(e, old, old_first, old_slot, 1);
  ts_status st = TS_OK;
  for (int i = 0; i < np && st == TS_OK; i++) {
    part *pt = &e->parts[i];
    int *from = malloc(sizeof(int) * 2 * (size_t)pt->nblocks);
    if (!from) {
      st = ts_error(TS_ERR_NOMEM, "swe: out of memory for moving quadtree leaves");
      break;
    }
    for (int l = 0; l < pt->nblocks; l++) {
      int k = pt->global[l];
      from[l] = part_of(old_first, np, k), from[pt->nblocks + l] = old_slot[k];
    }
    list_all_leaves(pt);
    pt->ops->set_list(pt->x, pt->list, pt->counts, NULL, 0);
    st = pt->ops->take_leaves(pt->x, old_x, np, from, from + pt->nblocks);
    free(from);
    pt->host_stale = 1;
    pt->ran = 0;
  }
  free(old_x);
  return st;
}

/* The device mirrors of the new parts released (back to their host arrays). */
static void leave_devices(engine *e) {
  for (int i = 0; i < e->nparts; i++) {
    part *pt = &e->parts[i];
    if (pt->ops->release)
      pt->ops->release(pt->x);
    pt->ops = &cpu_passes, pt->x = pt;
  }
}

static ts_status watch_parts(engine *e);

/* The parts rebuilt on the cuts `first` (one process), their leaves' arrays from the old parts
 * (device to device where every part is on a GPU and the new ones fit beside the old, else
 * through the host), with the exchange between them. Parts whose steps run on the devices keep
 * the leaves of the last step (the next run marks its own from the state). */
static ts_status repartition(engine *e, const int *first) {
  double started = omp_get_wtime();
  int np = e->nparts, M = e->M;
  part *old = e->parts;
  unsigned char *last_step = malloc((size_t)e->q.nblocks);
  for (int i = 0; i < np && last_step; i++) {
    last_leaves(&old[i]);
    for (int l = 0; l < old[i].owned; l++)
      last_step[old[i].global[l]] = old[i].computed[l];
  }
  int *old_first = e->first, *old_slot = e->slot;
  e->parts = calloc((size_t)np, sizeof *e->parts);
  e->first = malloc(sizeof(int) * (size_t)(np + 1));
  e->slot = NULL;
  ts_halo_plan_destroy(e->plan);
  e->plan = NULL;
  free(e->fields);
  free(e->fields_mid);
  e->fields = e->fields_mid = NULL;
  ts_status st = e->parts && e->first ? TS_OK : ts_error(TS_ERR_NOMEM, "swe: out of memory");
  if (st == TS_OK)
    memcpy(e->first, first, sizeof(int) * (size_t)(np + 1));
  for (int i = 0; i < np && st == TS_OK; i++)
    st = part_holds(e, &e->parts[i], i);
  if (st == TS_OK)
    st = leaf_order(e);
  for (int i = 0; i < np && st == TS_OK; i++) {
    st = part_alloc(e, i);
    e->parts[i].v.rain_rate = old[0].v.rain_rate;
  }
  for (int i = 0; i < np && st == TS_OK; i++)
    for (int l = 0; l < e->parts[i].owned; l++)
      e->moved_cells += part_of(old_first, np, e->parts[i].global[l]) != i ? (int64_t)M * M : 0;
  int on_device = 0, moved = 0;
  if (st == TS_OK && old[0].ops->take_leaves) { /* the new parts beside the old on the GPUs */
    ts_status tried = parts_to_devices(e, &on_device);
    if (tried == TS_OK && on_device && moves_on_devices(e, old))
      moved = take_on_devices(e, old, old_first, old_slot) == TS_OK;
    if (!moved) /* (short of device memory or peer access: through the host) */
      leave_devices(e);
  }
  if (st == TS_OK && !moved) {
    for (int i = 0; i < np; i++)
      part_to_host(&old[i]);
    copy_leaves(e, old, old_first, old_slot, 0);
  }
  for (int i = 0; i < np; i++)
    part_destroy(&old[i]);
  free(old), free(old_first), free(old_slot);
  if (st == TS_OK && !moved)
    st = parts_to_devices(e, &on_device);
  if (st == TS_OK) {
    if (!moved)
      state_changed(e);
    st = build_exchange(e, on_device);
  }
  for (int i = 0; i < np && st == TS_OK && last_step && runs_on_device(e); i++)
    for (int l = 0; l < e->parts[i].owned; l++)
      e->parts[i].computed[l] = last_step[e->parts[i].global[l]];
  free(last_step);
#if TESSERA_HAVE_CUDA
  ts_gpu_graph_destroy(e->graph); /* of the old parts */
  e->graph = NULL;
#endif
  if (st == TS_OK)
    st = watch_parts(e);
  e->rebalances++;
  e->move_s += omp_get_wtime() - started;
  return st;
}

/* After steps that took `seconds`: every `interval` steps a look at the balance, and a move of
 * the leaves when it pays (runs of steps on the devices: their last step's leaves cost). */
static ts_status look_at_balance(engine *e, int steps, double seconds) {
  if (!e->looking)
    return TS_OK;
  e->span_s += seconds;
  e->since += steps;
  if (e->since < e->interval)
    return TS_OK;
  for (int i = e->mine[0]; i < e->mine[1]; i++)
    last_leaves(&e->parts[i]);
  int np = e->nparts;
  double *cost = malloc(sizeof(double) * (size_t)e->q.nblocks);
  int *first = malloc(sizeof(int) * (size_t)(np + 1));
  ts_status st = cost && first ? TS_OK : ts_error(TS_ERR_NOMEM, "swe: out of memory");
  if (st == TS_OK) {
    leaf_costs(e, cost);
    st = ts_buq_partition(&e->q, cost, np, first);
  }
  if (st == TS_OK) {
    double before = imbalance_of(e, cost, e->first), after = imbalance_of(e, cost, first);
    if (e->imbalance_first == 0)
      e->imbalance_first = before;
    e->imbalance_last = before;
    double gain = e->span_s * (1 - after / before);
    double last_move = e->rebalances > 0 ? e->move_s / e->rebalances : 0;
    if (before > IMBALANCE_TO_MOVE && gain > last_move) {
      st = repartition(e, first);
      e->imbalance_last = after;
    }
  }
  free(cost);
  free(first);
  e->since = 0, e->span_s = 0;
  e->looking = e->balance == TS_BALANCE_DYNAMIC;
  return st;
}

static void engine_balance(const void *ev, ts_swe_balance *out) {
  const engine *e = ev;
  *out = (ts_swe_balance){e->balance, e->rebalances,      e->moved_cells,
                          e->move_s,  e->imbalance_first, e->imbalance_last};
}

static ts_status engine_create(void **out, const ts_swe_params *p, const swe_inputs *in,
                               const ts_raster *surface, int threads, const ts_comm *comm,
                               int parts, const int *part_rank, const int *part_device) {
  const ts_raster *bed = in->bed;
  int nx = bed->ncols, ny = bed->nrows;
  engine *e = calloc(1, sizeof *e);
  unsigned char *valid = malloc((size_t)nx * ny);
  double *target = NULL;
  if (!e || !valid) {
    free(e);
    free(valid);
    return ts_error(TS_ERR_NOMEM, "swe: out of memory");
  }
  e->p = *p;
  e->threads = threads;
  e->sources = swe_has_sources(p);
  e->friction = in->friction != NULL;
  e->comm = comm;
  e->rank = ts_comm_rank(comm);
  e->dx0 = bed->cellsize;
  for (int64_t c = 0; c < (int64_t)nx * ny; c++)
    valid[c] = !ts_raster_is_nodata(bed, bed->v[c]);
  ts_status st = wanted_widths(p, in, surface, &target);
  if (st == TS_OK)
    st = ts_buq_build(&e->q, nx, ny, p->grid.block, p->grid.levels, valid, target);
  free(valid);
  free(target);
  e->nparts = parts;
  int one_process = ts_comm_size(comm) == 1;
  e->balance = p->parallel.balance == TS_BALANCE_AUTO
                   ? (one_process ? TS_BALANCE_DYNAMIC : TS_BALANCE_OFF)
                   : p->parallel.balance;
  if (parts == 1)
    e->balance = TS_BALANCE_OFF;
  if (st == TS_OK && e->balance != TS_BALANCE_OFF && !one_process)
    st = ts_error(TS_ERR_INPUT, "swe: balance on a quadtree grid moves leaves between the "
                                "partitions of one process: run one (it drives several GPUs) "
                                "or set balance = off");
  e->looking = e->balance != TS_BALANCE_OFF;
  e->interval =
      p->parallel.rebalance_interval > 0 ? p->parallel.rebalance_interval : BALANCE_INTERVAL;
  if (st == TS_OK && e->nparts > e->q.nblocks)
    st = ts_error(TS_ERR_INPUT, "swe: %d partitions of a quadtree grid of %d blocks", e->nparts,
                  e->q.nblocks);
  if (st == TS_OK) {
    e->M = e->q.block;
    e->W = SWE_BUQ_PITCH(e->M);
    e->P = (int64_t)e->W * (e->M + 2 * G + 1);
    e->parts = calloc((size_t)e->nparts, sizeof *e->parts);
    e->first = malloc(sizeof(int) * (size_t)(e->nparts + 1));
    e->part_rank = malloc(sizeof(int) * (size_t)e->nparts);
    e->devices = malloc(sizeof(int) * (size_t)e->nparts);
    st = e->parts && e->first && e->part_rank && e->devices
             ? ts_buq_partition(&e->q, NULL, e->nparts, e->first)
             : ts_error(TS_ERR_NOMEM, "swe: out of memory");
  }
  if (st == TS_OK) {
    e->mine[0] = e->nparts, e->mine[1] = 0;
    for (int i = 0; i < e->nparts; i++) {
      e->part_rank[i] = part_rank[i];
      if (part_rank[i] == e->rank) {
        e->mine[0] = i < e->mine[0] ? i : e->mine[0];
        e->mine[1] = i + 1;
        e->devices[i - e->mine[0]] = part_device[i];
      }
    }
    if (e->mine[1] < e->mine[0])
      e->mine[0] = e->mine[1] = 0;
  }
  for (int i = 0; i < e->nparts && st == TS_OK; i++)
    st = part_holds(e, &e->parts[i], i);
  if (st == TS_OK)
    st = leaf_order(e);
  for (int i = e->mine[0]; i < e->mine[1] && st == TS_OK; i++)
    st = part_create(e, i, in);
  int on_device = 0;
  if (st == TS_OK)
    st = parts_to_devices(e, &on_device);
  st = ts_comm_agree(comm, st);
  if (st == TS_OK && e->nparts > 1)
    st = build_exchange(e, on_device);
  if (st != TS_OK) {
    engine_destroy(e);
    return st;
  }
  state_changed(e);
  *out = e;
  return TS_OK;
}

/* Sets the surface to eta (each cell: the mean of eta over its finest cells holding one) where
 * it lies above the bed, dry elsewhere, and restarts the maps. */
static void engine_set_surface(void *ev, const ts_raster *eta) {
  engine *e = ev;
  int M = e->M;
  to_host(e);
  for (int n = e->mine[0]; n < e->mine[1]; n++) {
    part *pt = &e->parts[n];
#pragma omp parallel for schedule(dynamic, 8) num_threads(e->threads)
    for (int k = 0; k < pt->nblocks; k++) {
      const ts_buq_block *b = &pt->blocks[k];
      swe_arrays a = buq_leaf_arrays(&pt->v, k);
      for (int j = 0; j < M; j++)
        for (int i = 0; i < M; i++) {
          swe_idx c = local(pt, i, j);
          int nc;
          double v = level_mean(eta, b->level, b->bi * M + i, b->bj * M + j, 0, &nc);
          a.w[c] = a.bed[c];
          if (a.active[c] && nc > 0 && (ts_real)v > a.bed[c])
            a.w[c] = (ts_real)v;
          if (!(a.w[c] > a.bed[c]))
            a.hu[c] = a.hv[c] = 0;
        }
    }
    size_t leaf_cells = (size_t)pt->nblocks * M * M;
    for (size_t c = 0; c < leaf_cells; c++) {
      pt->v.max_h[c] = pt->v.max_speed[c] = pt->v.duration[c] = pt->v.max_hazard[c] = 0;
      pt->v.arrival[c] = pt->v.max_eta[c] = NAN;
    }
    all_leaves(pt);
    cpu_record(pt, e->t, 0);
  }
  state_changed(e);
}

/* Element of leaf k's cell (i, j) in the per-cell arrays (maps, rain, losses). */
static inline int64_t leaf_cell_index(int M, int k, int i, int j) {
  return (int64_t)k * M * M + i + (int64_t)M * j;
}

/* The rain rate or the losses so far (rain = 0) summed over the active cells of the parts' own
 * leaves, each times its area in finest cells. */
static void sum_by_area(const engine *e, int rain, ts_exact_sum *sum) {
  int M = e->M;
  for (int n = e->mine[0]; n < e->mine[1]; n++) {
    const part *pt = &e->parts[n];
    for (int k = 0; k < pt->owned; k++) {
      double area = ldexp(1.0, 2 * pt->blocks[k].level);
      for (int j = 0; j < M; j++)
        for (int i = 0; i < M; i++) {
          if (!pt->v.active[cell_at(pt, k, i, j)])
            continue;
          int64_t m = leaf_cell_index(M, k, i, j);
          double v = !rain        ? pt->v.lost[m]
                     : pt->v.rain ? (double)pt->v.rain[m]
                                  : (double)(ts_real)pt->v.rain_rate;
          ts_exact_sum_add(sum, area * v);
        }
    }
  }
}

static double engine_set_rain(void *ev, const ts_raster *grid, double rate) {
  engine *e = ev;
  int M = e->M;
  for (int n = e->mine[0]; n < e->mine[1]; n++) {
    part *pt = &e->parts[n];
    pt->v.rain_rate = grid ? 0 : rate;
    if (pt->v.rain) {
#pragma omp parallel for schedule(dynamic, 8) num_threads(e->threads)
      for (int k = 0; k < pt->nblocks; k++)
        if (grid)
          leaf_means(pt, k, grid, pt->v.rain);
        else
          memset(pt->v.rain + (int64_t)k * M * M, 0, sizeof(ts_real) * (size_t)M * M);
    }
    if (pt->ops->set_rain)
      pt->ops->set_rain(pt->x, &pt->v);
  }
  ts_exact_sum sum = {0, 0};
  sum_by_area(e, 1, &sum);
  if (ts_comm_exact_sum(e->comm, &sum) != TS_OK)
    return NAN;
  return ts_exact_sum_value(sum);
}

static void engine_losses(const void *ev, ts_exact_sum *sum) {
  const engine *e = ev;
  if (!e->sources)
    return;
  to_host(e);
  sum_by_area(e, 0, sum);
}

/* ---------------------------------------------------------------- access */

static double cell_value(const part *e, const ts_swe_params *p, ts_swe_var var, int k, int i,
                         int j) {
  int64_t c = cell_at(e, k, i, j), m = leaf_cell_index(e->M, k, i, j);
  if (!e->v.active[c])
    return NAN;
  double h = (double)swe_max(SWE_R(0), e->v.w[c] - e->v.bed[c]), u = 0, v = 0;
  if (h > p->dry_depth)
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

/* The part, its leaf and the cell covering finest cell (i, j): NULL outside. */
static part *leaf_cell(const engine *e, int i, int j, int *k, int *li, int *lj) {
  int g = ts_buq_find(&e->q, i, j);
  if (g < 0)
    return NULL;
  const ts_buq_block *b = &e->q.blocks[g];
  *li = (i >> b->level) - b->bi * e->M, *lj = (j >> b->level) - b->bj * e->M;
  return owner_of(e, g, k);
}

/* Values at finest cells (i[q], j[q]) (NaN outside or inactive) from the host arrays, each
 * from the rank owning its cell. */
static void probe_values(const engine *e, int n, const int *i, const int *j, const ts_swe_var *var,
                         double *out);

/* The same with the state on the devices: only those cells come back (gauges read a few cells
 * after every step). */
static void engine_probe(const void *ev, int n, const int *i, const int *j, const ts_swe_var *var,
                         double *out) {
  const engine *e = ev;
  int64_t *cells = malloc(sizeof(int64_t) * 2 * (size_t)(n > 0 ? n : 1));
  for (int pn = e->mine[0]; pn < e->mine[1]; pn++) {
    part *pt = &e->parts[pn];
    if (!cells || !pt->host_stale || !pt->ops->read_cells) {
      part_to_host(pt);
      continue;
    }
    int m = 0;
    for (int q = 0; q < n; q++) {
      int k, li, lj;
      if (leaf_cell(e, i[q], j[q], &k, &li, &lj) != pt)
        continue;
      cells[2 * m] = cell_at(pt, k, li, lj);
      cells[2 * m + 1] = leaf_cell_index(e->M, k, li, lj);
      m++;
    }
    pt->ops->read_cells(pt->x, &pt->v, m, cells);
  }
  free(cells);
  probe_values(e, n, i, j, var, out);
}

static void probe_values(const engine *e, int n, const int *i, const int *j, const ts_swe_var *var,
                         double *out) {
  /* each value from the rank owning its cell (NaN outside): the largest of (owned, value) */
  int ranks = ts_comm_size(e->comm);
  double *mine = malloc(sizeof(double) * 2 * (size_t)(n > 0 ? n : 1));
  double *all = ranks > 1 ? malloc(sizeof(double) * 2 * (size_t)(n > 0 ? n : 1) * ranks) : mine;
  for (int q = 0; q < n && mine; q++) {
    int k, li, lj;
    const part *pt = leaf_cell(e, i[q], j[q], &k, &li, &lj);
    int here = pt && pt - e->parts >= e->mine[0] && pt - e->parts < e->mine[1];
    mine[2 * q] = here, mine[2 * q + 1] = here ? cell_value(pt, &e->p, var[q], k, li, lj) : NAN;
  }
  if (mine && all && ranks > 1 &&
      ts_comm_allgather(e->comm, mine, sizeof(double) * 2 * (size_t)n, all) != TS_OK) {
    free(all);
    all = NULL;
  }
  for (int q = 0; q < n; q++) {
    out[q] = NAN;
    for (int r = 0; r < ranks && all; r++)
      if (all[(size_t)r * 2 * n + 2 * q] != 0)
        out[q] = all[(size_t)r * 2 * n + 2 * q + 1];
  }
  if (all != mine)
    free(all);
  free(mine);
}

/* The watched cells of runs of steps on the devices, each in the part holding it (host-driven
 * steps read the current state). */
static ts_status watch_parts(engine *e) {
  for (int pn = e->mine[0]; pn < e->mine[1]; pn++) {
    part *pt = &e->parts[pn];
    free(pt->watch_cells);
    pt->watch_cells = NULL, pt->nwatch = 0;
    if (!runs_on_device(e))
      continue;
    if (!(pt->watch_cells = malloc(sizeof(int64_t) * 2 * (size_t)(e->nwatch > 0 ? e->nwatch : 1))))
      return ts_error(TS_ERR_NOMEM, "swe: out of memory");
    for (int q = 0; q < e->nwatch; q++) {
      int k, li, lj, i = e->watch_ij[2 * q], j = e->watch_ij[2 * q + 1];
      if (i < 0 || j < 0 || i >= e->q.nx || j >= e->q.ny || leaf_cell(e, i, j, &k, &li, &lj) != pt)
        continue;
      pt->watch_cells[2 * pt->nwatch] = cell_at(pt, k, li, lj);
      pt->watch_cells[2 * pt->nwatch + 1] = leaf_cell_index(e->M, k, li, lj);
      pt->nwatch++;
    }
    TS_CALL(pt->ops->watch(pt->x, pt->nwatch, pt->watch_cells));
  }
  return TS_OK;
}

static ts_status engine_watch(void *ev, int n, const int *i, const int *j) {
  engine *e = ev;
  free(e->watch_ij);
  e->nwatch = 0;
  if (!(e->watch_ij = malloc(sizeof(int) * 2 * (size_t)(n > 0 ? n : 1))))
    return ts_error(TS_ERR_NOMEM, "swe: out of memory");
  for (int q = 0; q < n; q++)
    e->watch_ij[2 * q] = i[q], e->watch_ij[2 * q + 1] = j[q];
  e->nwatch = n;
  return watch_parts(e);
}

static void engine_probe_step(const void *ev, int k, int n, const int *i, const int *j,
                              const ts_swe_var *var, double *out) {
  const engine *e = ev;
  if (!e->ran_on_device) {
    engine_probe(ev, n, i, j, var, out);
    return;
  }
  for (int pn = e->mine[0]; pn < e->mine[1]; pn++) {
    part *pt = &e->parts[pn];
    pt->ops->watched_to_host(pt->x, &pt->v, k, pt->watch_cells);
  }
  probe_values(e, n, i, j, var, out);
}

static double engine_value(const void *ev, ts_swe_var var, int i, int j) {
  double v;
  engine_probe(ev, 1, &i, &j, &var, &v);
  return v;
}

/* The values of var on every leaf cell in the grid's leaf order (leaf k's cell (i, j) at
 * leaf_cell_index), gathered whole into out on rank 0 (the ranks' leaves are consecutive). */
static void gather_leaf_values(const engine *e, ts_swe_var var, double *out) {
  to_host(e);
  int M = e->M, ranks = ts_comm_size(e->comm);
  int64_t first = e->mine[1] > e->mine[0] ? e->first[e->mine[0]] : 0;
  int64_t mine = e->mine[1] > e->mine[0] ? e->first[e->mine[1]] - first : 0;
  double *own = ranks > 1 ? malloc(sizeof(double) * (size_t)(mine > 0 ? mine : 1) * M * M)
                          : out + first * M * M;
  size_t *counts = malloc(sizeof(size_t) * (size_t)ranks);
  if (!own || !counts) {
    if (own != out + first * M * M)
      free(own);
    free(counts);
    return;
  }
  for (int n = e->mine[0]; n < e->mine[1]; n++) {
    const part *pt = &e->parts[n];
#pragma omp parallel for schedule(static) num_threads(e->threads)
    for (int k = 0; k < pt->owned; k++)
      for (int j = 0; j < M; j++)
        for (int i = 0; i < M; i++)
          own[leaf_cell_index(M, pt->global[k] - (int)first, i, j)] =
              cell_value(pt, &e->p, var, k, i, j);
  }
  if (ranks > 1) {
    for (int r = 0; r < ranks; r++)
      counts[r] = 0;
    for (int n = 0; n < e->nparts; n++)
      counts[e->part_rank[n]] += sizeof(double) * (size_t)(e->first[n + 1] - e->first[n]) * M * M;
    ts_comm_gather(e->comm, own, counts, out, 0);
    free(own);
  }
  free(counts);
}

static void engine_get(const void *ev, ts_swe_var var, double *out) {
  const engine *e = ev;
  int nx = e->q.nx, ny = e->q.ny, M = e->M;
  double *leaves = malloc(sizeof(double) * (size_t)ts_buq_cells(&e->q));
  if (leaves)
    gather_leaf_values(e, var, leaves);
  if (e->rank != 0)
    return free(leaves);
  for (int64_t c = 0; c < (int64_t)nx * ny; c++)
    out[c] = NAN;
#pragma omp parallel for schedule(dynamic, 8) num_threads(e->threads)
  for (int k = 0; k < e->q.nblocks; k++) {
    const ts_buq_block *b = &e->q.blocks[k];
    int width = 1 << b->level;
    for (int j = 0; j < M && leaves; j++)
      for (int i = 0; i < M; i++) {
        double v = leaves[leaf_cell_index(M, k, i, j)];
        int64_t x0 = ((int64_t)b->bi * M + i) * width, y0 = ((int64_t)b->bj * M + j) * width;
        for (int64_t y = y0; y < y0 + width && y < ny; y++)
          for (int64_t x = x0; x < x0 + width && x < nx; x++)
            out[x + y * nx] = v;
      }
  }
  free(leaves);
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

/* Values in the grid's leaf order (rank 0). */
static void engine_leaf_values(const void *ev, ts_swe_var var, double *out) {
  gather_leaf_values(ev, var, out);
}

static void engine_volume(const void *ev, ts_exact_sum *sum) {
  const engine *e = ev;
  to_host(e);
  for (int n = e->mine[0]; n < e->mine[1]; n++) {
    const part *pt = &e->parts[n];
    for (int k = 0; k < pt->owned; k++) {
      double area = ldexp(1.0, 2 * pt->blocks[k].level);
      for (int j = 0; j < e->M; j++)
        for (int i = 0; i < e->M; i++) {
          int64_t c = cell_at(pt, k, i, j);
          if (!pt->v.active[c])
            continue;
          ts_exact_sum_add(sum, ((double)pt->v.w[c] - (double)pt->v.bed[c]) * area);
          ts_exact_sum_add(sum, (double)pt->v.w_carry[c] * area);
        }
    }
  }
}

static int64_t engine_wet_cells(const void *ev) {
  const engine *e = ev;
  to_host(e);
  int64_t n = 0;
  ts_real dry = (ts_real)e->p.dry_depth;
  for (int pn = e->mine[0]; pn < e->mine[1]; pn++) {
    const part *pt = &e->parts[pn];
    for (int k = 0; k < pt->owned; k++)
      for (int j = 0; j < e->M; j++)
        for (int i = 0; i < e->M; i++) {
          int64_t c = cell_at(pt, k, i, j);
          n += pt->v.active[c] && pt->v.w[c] - pt->v.bed[c] > dry;
        }
  }
  return n;
}

static int64_t engine_active_blocks(const void *ev, int64_t *blocks) {
  const engine *e = ev;
  int64_t n = 0;
  for (int pn = e->mine[0]; pn < e->mine[1]; pn++)
    last_leaves(&e->parts[pn]);
  for (int pn = e->mine[0]; pn < e->mine[1]; pn++)
    for (int k = 0; k < e->parts[pn].owned; k++)
      n += e->parts[pn].computed[k];
  *blocks = e->q.nblocks;
  ts_comm_sum_i64(e->comm, &n, 1);
  return n;
}

static void engine_stats(const void *ev, ts_swe_grid_stats *out) {
  const engine *e = ev;
  memset(out, 0, sizeof *out);
  out->levels = e->q.levels;
  out->block = e->M;
  out->partitions = e->nparts;
  for (int l = 0; l < e->q.levels; l++) {
    out->blocks_per_level[l] = e->q.blocks_per_level[l];
    out->cells_per_level[l] = e->q.cells_per_level[l];
  }
  out->cells = ts_buq_cells(&e->q);
  out->cells_uniform_finest = (int64_t)e->q.nx * e->q.ny;
  /* the windows' arrays and maps (the copies of the partitions too) against a part's (each of
   * its arrays: its cells plus its frame, here taken as the cells alone) */
  int64_t windows = 0;
  for (int n = 0; n < e->nparts; n++)
    windows += e->parts[n].nblocks;
  double per_window = (double)e->P * (SWE_BUQ_NARRAYS * sizeof(ts_real) + 1);
  double per_leaf_cell = 6 * sizeof(double);
  out->bytes = (double)windows * per_window + (double)windows * e->M * e->M * per_leaf_cell;
  out->bytes_uniform_finest = (double)out->cells_uniform_finest *
                              (SWE_BUQ_NARRAYS * sizeof(ts_real) + 1 + 11 * sizeof(double));
}

/* Checkpoint: the state (w, hu, hv, w_carry) of every leaf cell, then the six maps, then (with
 * sources) what the losses took, in leaf order. */
static size_t engine_state_bytes(const void *ev) {
  const engine *e = ev;
  size_t cells = (size_t)e->q.nblocks * e->M * e->M;
  return cells * (4 * sizeof(ts_real) + (6 + (e->sources != 0)) * sizeof(double));
}

/* Copies section `a` of a checkpoint (0 .. 3: w, hu, hv, w_carry; 4 .. 9: the maps; 10: the
 * losses) between the leaves of this rank and buf, which holds the section from leaf `from` on
 * (save: to buf). Returns the bytes of the section per leaf. */
static size_t section_copy(const engine *e, int a, char *buf, int64_t from, int save) {
  int M = e->M;
  size_t real_leaf = sizeof(ts_real) * (size_t)M * M, map_leaf = sizeof(double) * (size_t)M * M;
  size_t per_leaf = a < 4 ? real_leaf : map_leaf;
  for (int n = e->mine[0]; n < e->mine[1]; n++) {
    const part *pt = &e->parts[n];
    ts_real *state[4] = {pt->v.w, pt->v.hu, pt->v.hv, pt->v.w_carry};
    double *maps[7] = {pt->v.max_h,    pt->v.max_speed,  pt->v.arrival, pt->v.max_eta,
                       pt->v.duration, pt->v.max_hazard, pt->v.lost};
    for (int k = 0; k < pt->owned; k++) {
      char *at = buf + (size_t)(pt->global[k] - from) * per_leaf;
      for (int j = 0; j < M && a < 4; j++) {
        ts_real *row = state[a] + cell_at(pt, k, 0, j);
        char *in_buf = at + sizeof(ts_real) * (size_t)M * j;
        memcpy(save ? (void *)in_buf : (void *)row, save ? (void *)row : (void *)in_buf,
               sizeof(ts_real) * (size_t)M);
      }
      if (a >= 4) {
        double *leaf = maps[a - 4] + leaf_cell_index(M, k, 0, 0);
        memcpy(save ? (void *)at : (void *)leaf, save ? (void *)leaf : (void *)at, per_leaf);
      }
    }
  }
  return per_leaf;
}

/* Saved whole on rank 0; each rank loads its own leaves from the whole blob. */
static void engine_save(const void *ev, void *blob) {
  const engine *e = ev;
  to_host(e);
  int ranks = ts_comm_size(e->comm), M = e->M;
  int64_t first = e->mine[1] > e->mine[0] ? e->first[e->mine[0]] : 0;
  int64_t mine = e->mine[1] > e->mine[0] ? e->first[e->mine[1]] - first : 0;
  size_t *counts = malloc(sizeof(size_t) * (size_t)ranks);
  char *own = ranks > 1 ? malloc(sizeof(double) * (size_t)(mine > 0 ? mine : 1) * M * M) : NULL;
  char *at = blob;
  for (int a = 0; a < 10 + (e->sources != 0) && counts && (own || ranks == 1); a++) {
    size_t per_leaf = section_copy(e, a, ranks > 1 ? own : at, ranks > 1 ? first : 0, 1);
    if (ranks > 1) {
      for (int r = 0; r < ranks; r++)
        counts[r] = 0;
      for (int n = 0; n < e->nparts; n++)
        counts[e->part_rank[n]] += per_leaf * (size_t)(e->first[n + 1] - e->first[n]);
      ts_comm_gather(e->comm, own, counts, at, 0);
    }
    if (at)
      at += per_leaf * (size_t)e->q.nblocks;
  }
  free(own);
  free(counts);
}

static void engine_load(void *ev, const void *blob) {
  engine *e = ev;
  to_host(e); /* the ghosts and the rest the blob does not hold */
  char *at = (char *)blob;
  for (int a = 0; a < 10 + (e->sources != 0); a++)
    at += section_copy(e, a, at, 0, 0) * (size_t)e->q.nblocks;
  state_changed(e);
}

const swe_buq_ops SWE_BUQ_OPS = {
    engine_create,        engine_destroy,     engine_set_surface, engine_advance, engine_watch,
    engine_probe_step,    engine_set_rain,    engine_losses,      engine_value,   engine_probe,
    engine_leaf_cells,    engine_leaf_values, engine_get,         engine_volume,  engine_wet_cells,
    engine_active_blocks, engine_stats,       engine_state_bytes, engine_save,    engine_load,
    engine_balance};
