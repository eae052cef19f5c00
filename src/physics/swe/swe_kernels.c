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

/* Sweeps one line of cells (a row for x, a column for y) from index -1 to n: every face from 0
 * to n gets its flux; every interior cell gets its bed source including the pressure
 * corrections of its two faces. Returns the largest wave speed of faces count_lo..count_hi. */
static ts_real sweep_line(swe_part *s, int64_t first, int64_t step, int64_t corner_step, int n,
                          int x_axis, ts_real *f0, ts_real *f1, ts_real *f2, ts_real *src,
                          int count_lo, int count_hi) {
  swe_arrays a = swe_part_arrays(s);
  swe_consts k = swe_part_consts(s);
  ts_real amax = 0;
  swe_side lo_prev, hi_prev, lo, hi;
  int64_t c = first - step;
  ts_real face_lo = swe_face_bed(&a, c - step, step, corner_step);
  ts_real face_hi = swe_face_bed(&a, c, step, corner_step);
  swe_reconstruct_cell(&a, &k, c, step, x_axis, face_lo, face_hi, &lo_prev, &hi_prev);
  int act_prev = s->active[c];
  ts_real src_prev = 0;
  lo = lo_prev;
  hi = hi_prev;
  for (int i = 0; i <= n; i++) {
    c = first + i * step;
    face_lo = face_hi;
    face_hi = swe_face_bed(&a, c, step, corner_step);
    int act = s->active[c];
    if (act)
      swe_reconstruct_cell(&a, &k, c, step, x_axis, face_lo, face_hi, &lo, &hi);
    ts_real flux[3], corr_lo_side, corr_hi_side;
    ts_real speed =
        swe_face_between(&k, act_prev, act, hi_prev, lo, flux, &corr_lo_side, &corr_hi_side);
    if (i >= count_lo && i <= count_hi)
      amax = swe_max(amax, speed);
    f0[c] = flux[0];
    f1[c] = flux[1];
    f2[c] = flux[2];
    if (i > 0)
      src[c - step] = src_prev - corr_lo_side;
    if (act)
      src_prev = corr_hi_side + swe_bed_source(lo, hi, k.g);
    else
      src_prev = 0;
    lo_prev = lo;
    hi_prev = hi;
    act_prev = act;
  }
  return amax;
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

/* Fluxes on every face of the cells of r in active tiles and bed sources of those cells; adds
 * the largest wave speeds along x and y over the faces of owned cells to amax. Skipped tiles
 * are dry with dry surroundings: their fluxes are zero. */
static void kernels_fluxes(swe_part *s, swe_region r, double amax[2]) {
  ts_real ax = 0, ay = 0;
  swe_region own = s->own;
#pragma omp parallel for schedule(dynamic, 4) reduction(max : ax, ay) num_threads(s->threads)
  for (int t = 0; t < s->ntile_list; t++) {
    int i0, i1, j0, j1;
    if (!tile_cells(s, s->tile_list[t], r, &i0, &i1, &j0, &j1))
      continue;
    for (int j = j0; j < j1; j++) {
      int owned = j >= own.j0 && j < own.j1;
      ts_real a =
          sweep_line(s, swe_index(s, i0, j), 1, s->row, i1 - i0, 1, A(s->fx[0]), A(s->fx[1]),
                     A(s->fx[2]), A(s->src_x), own.i0 - i0, owned ? own.i1 - i0 : -1);
      ax = swe_max(ax, a);
    }
    for (int i = i0; i < i1; i++) {
      int owned = i >= own.i0 && i < own.i1;
      ts_real a =
          sweep_line(s, swe_index(s, i, j0), s->row, 1, j1 - j0, 0, A(s->fy[0]), A(s->fy[1]),
                     A(s->fy[2]), A(s->src_y), own.j0 - j0, owned ? own.j1 - j0 : -1);
      ay = swe_max(ay, a);
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
#pragma omp parallel for schedule(dynamic, 4) num_threads(s->threads)
  for (int t = 0; t < s->ntile_list; t++) {
    int i0, i1, j0, j1;
    if (!tile_cells(s, s->tile_list[t], r, &i0, &i1, &j0, &j1))
      continue;
    for (int j = j0; j < j1; j++)
      for (int i = i0; i < i1; i++)
        swe_drain_cell(&a, &k, swe_index(s, i, j), (ts_real)dt);
  }
}

/* Euler stage on the active cells of r in active tiles (swe_update_cell). Returns nonzero if a
 * non-finite value appeared. */
static int kernels_update(swe_part *s, swe_region r, double dt, int stage) {
  swe_arrays a = swe_part_arrays(s);
  swe_consts k = swe_part_consts(s);
  int bad = 0;
#pragma omp parallel for schedule(dynamic, 4) reduction(| : bad) num_threads(s->threads)
  for (int t = 0; t < s->ntile_list; t++) {
    int i0, i1, j0, j1;
    if (!tile_cells(s, s->tile_list[t], r, &i0, &i1, &j0, &j1))
      continue;
    for (int j = j0; j < j1; j++)
      for (int i = i0; i < i1; i++) {
        int64_t c = swe_index(s, i, j);
        if (s->active[c])
          bad |= swe_update_cell(&a, &a, &k, c, c, (ts_real)dt, stage);
      }
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
 * received) count as wet, so a neighbour's water is never missed. */
static void kernels_tile_mask(swe_part *s, swe_region valid) {
  const ts_real *w = A(s->w), *bed = A(s->bed);
  int ntiles = s->tiles_x * s->tiles_y;
  if (!s->early_exit) {
    s->ntile_list = ntiles;
    for (int k = 0; k < ntiles; k++)
      s->tile_list[k] = k;
    return;
  }
  swe_region all = {0, s->nx, 0, s->ny};
#pragma omp parallel for schedule(dynamic, 4) num_threads(s->threads)
  for (int k = 0; k < ntiles; k++) {
    int i0, i1, j0, j1, any = 0;
    tile_cells(s, k, all, &i0, &i1, &j0, &j1);
    if (i0 < valid.i0 || i1 > valid.i1 || j0 < valid.j0 || j1 > valid.j1)
      any = 1;
    for (int j = j0; j < j1 && !any; j++)
      for (int i = i0; i < i1; i++) {
        int64_t c = swe_index(s, i, j);
        if (s->active[c] && w[c] > bed[c]) {
          any = 1;
          break;
        }
      }
    s->tile_wet[k] = (unsigned char)any;
  }
  unsigned feeds = swe_feeding_sides(s->p, s->internal);
  s->ntile_list = 0;
  for (int k = 0; k < ntiles; k++)
    if (swe_tile_on(s->tile_wet, s->tiles_x, s->tiles_y, k % s->tiles_x, k / s->tiles_x, feeds))
      s->tile_list[s->ntile_list++] = k;
}

/* The flood maps (swe_record_cell) of the owned cells of active tiles after a step of dt (cells
 * of skipped tiles are dry). */
static void kernels_maxima(swe_part *s, double dt) {
  const ts_real *w = A(s->w), *bed = A(s->bed), *hu = A(s->hu), *hv = A(s->hv);
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
#pragma omp parallel for schedule(dynamic, 4) num_threads(s->threads)
  for (int t = 0; t < s->ntile_list; t++) {
    int i0, i1, j0, j1;
    if (!tile_cells(s, s->tile_list[t], s->own, &i0, &i1, &j0, &j1))
      continue;
    for (int j = j0; j < j1; j++)
      for (int i = i0; i < i1; i++) {
        int64_t c = swe_index(s, i, j);
        if (s->active[c])
          swe_record_cell(&m, c, w[c], bed[c], hu[c], hv[c]);
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
