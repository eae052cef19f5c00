/* Shallow-water solver API: creation from rasters, parameter checks, memory, time stepping via
 * the precision-specific kernels, state access, volume and checkpoint blobs. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "physics/swe/swe_internal.h"

void ts_swe_params_default(ts_swe_params *p) {
  memset(p, 0, sizeof *p);
  p->precision = TS_FLOAT;
  p->gravity = 9.81;
  p->cfl = 0.25;
  p->theta = 1.3;
  p->rk_order = 2;
  p->dry_depth = 1e-4;
  p->friction = TS_FRICTION_NONE;
  p->tile_size = 32;
  p->arrival_depth = 0.01;
  p->early_exit = 1;
  for (int side = 0; side < 4; side++)
    p->bc[side].type = TS_BC_WALL;
}

static ts_status check_params(const ts_swe_params *p) {
  if (p->precision != TS_FLOAT && p->precision != TS_DOUBLE)
    return ts_error(TS_ERR_INPUT, "swe: precision must be float or double");
  if (!(p->gravity > 0) || !isfinite(p->gravity))
    return ts_error(TS_ERR_INPUT, "swe: gravity must be positive (got %g)", p->gravity);
  if (!(p->cfl > 0 && p->cfl <= 0.5))
    return ts_error(TS_ERR_INPUT, "swe: cfl must be in (0, 0.5] (got %g)", p->cfl);
  if (!(p->theta >= 1 && p->theta <= 2))
    return ts_error(TS_ERR_INPUT, "swe: theta must be in [1, 2] (got %g)", p->theta);
  if (p->rk_order != 1 && p->rk_order != 2)
    return ts_error(TS_ERR_INPUT, "swe: rk_order must be 1 or 2 (got %d)", p->rk_order);
  if (!(p->dry_depth > 0))
    return ts_error(TS_ERR_INPUT, "swe: dry_depth must be positive (got %g)", p->dry_depth);
  if (p->tile_size < 2)
    return ts_error(TS_ERR_INPUT, "swe: tile_size must be at least 2 (got %d)", p->tile_size);
  if (p->friction != TS_FRICTION_NONE && !(p->friction_value >= 0))
    return ts_error(TS_ERR_INPUT, "swe: friction coefficient must be >= 0 (got %g)",
                    p->friction_value);
  for (int side = 0; side < 4; side++) {
    const ts_swe_bc *bc = &p->bc[side];
    if (bc->type == TS_BC_LEVEL && !isfinite(bc->level))
      return ts_error(TS_ERR_INPUT, "swe: boundary level must be finite");
    if (bc->type == TS_BC_INFLOW && (bc->npoints < 1 || !bc->t || !bc->q))
      return ts_error(TS_ERR_INPUT, "swe: an inflow boundary needs a hydrograph");
  }
  return TS_OK;
}

static ts_status check_raster(const ts_raster *bed, const ts_raster *r, const char *what) {
  if (r && !ts_raster_same_geometry(bed, r))
    return ts_error(TS_ERR_INPUT, "swe: %s grid (%d x %d) does not match the bed grid (%d x %d)",
                    what, r->ncols, r->nrows, bed->ncols, bed->nrows);
  return TS_OK;
}

static void *alloc_array(ts_swe *s, size_t elem, int *failed) {
  void *p = calloc((size_t)s->plane, elem);
  if (!p)
    *failed = 1;
  return p;
}

/* Marks active cells: DEM cells with data, and ghost cells of open boundaries next to them. */
static void build_mask(ts_swe *s, const ts_raster *bed) {
  for (int j = 0; j < s->ny; j++)
    for (int i = 0; i < s->nx; i++)
      s->active[swe_index(s, i, j)] = !ts_raster_is_nodata(bed, bed->v[i + (int64_t)j * s->nx]);
  for (int side = 0; side < 4; side++) {
    s->bc_cells[side] = 0;
    int along = side < 2 ? s->ny : s->nx;
    for (int a = 0; a < along; a++) {
      int ii = side == TS_WEST ? 0 : (side == TS_EAST ? s->nx - 1 : a);
      int ij = side == TS_SOUTH ? 0 : (side == TS_NORTH ? s->ny - 1 : a);
      unsigned char in = s->active[swe_index(s, ii, ij)];
      s->bc_cells[side] += in;
      for (int layer = 1; layer <= SWE_GHOST; layer++) {
        int gi = side == TS_WEST ? -layer : (side == TS_EAST ? s->nx - 1 + layer : a);
        int gj = side == TS_SOUTH ? -layer : (side == TS_NORTH ? s->ny - 1 + layer : a);
        s->active[swe_index(s, gi, gj)] = s->p.bc[side].type != TS_BC_WALL && in;
      }
    }
  }
}

/* Rebuilds velocities, maxima and the tile mask from the state, looking at every tile. */
static void refresh_diagnostics(ts_swe *s) {
  s->k->refresh_velocities(s);
  s->ntile_list = s->tiles_x * s->tiles_y;
  for (int k = 0; k < s->ntile_list; k++)
    s->tile_list[k] = k;
  s->k->update_diagnostics(s);
}

ts_status ts_swe_create(ts_swe **out, const ts_swe_params *params, const ts_raster *bed,
                        const ts_raster *h0, const ts_raster *hu0, const ts_raster *hv0,
                        const ts_raster *friction_grid) {
  *out = NULL;
  TS_CALL(check_params(params));
  if (!bed || bed->ncols < 1 || bed->nrows < 1 || !(bed->cellsize > 0))
    return ts_error(TS_ERR_INPUT, "swe: the bed grid is empty");
  TS_CALL(check_raster(bed, h0, "initial depth"));
  TS_CALL(check_raster(bed, hu0, "initial hu"));
  TS_CALL(check_raster(bed, hv0, "initial hv"));
  TS_CALL(check_raster(bed, friction_grid, "friction"));

  ts_swe *s = calloc(1, sizeof *s);
  if (!s)
    return ts_error(TS_ERR_NOMEM, "swe: out of memory");
  s->p = *params;
  s->grid = ts_grid_2d(bed->ncols, bed->nrows, bed->cellsize, bed->xll, bed->yll);
  s->nx = bed->ncols;
  s->ny = bed->nrows;
  ts_grid points = ts_grid_2d(s->nx + 1, s->ny + 1, bed->cellsize, 0, 0);
  ts_field layout;
  TS_CALL(ts_field_create(&layout, &points, 1, SWE_GHOST, TS_FLOAT));
  s->row = layout.stride[1];
  s->origin = layout.origin;
  s->plane = layout.comp_stride;
  ts_field_destroy(&layout);
  s->real_size = (size_t)params->precision;
  s->k = params->precision == TS_DOUBLE ? &swe_kernels_double : &swe_kernels_float;

  int failed = 0;
  size_t rs = s->real_size;
  void **reals[] = {&s->w,     &s->hu,    &s->hv,    &s->w_carry,    &s->w0,        &s->hu0,
                    &s->hv0,   &s->u,     &s->v,     &s->char_speed, &s->speed_cap, &s->corner,
                    &s->bed,   &s->fx[0], &s->fx[1], &s->fx[2],      &s->fy[0],     &s->fy[1],
                    &s->fy[2], &s->src_x, &s->src_y, &s->drain};
  for (size_t k = 0; k < sizeof reals / sizeof reals[0]; k++)
    *reals[k] = alloc_array(s, rs, &failed);
  if (friction_grid)
    s->friction = alloc_array(s, rs, &failed);
  s->active = alloc_array(s, 1, &failed);
  s->max_h = alloc_array(s, sizeof(double), &failed);
  s->max_speed = alloc_array(s, sizeof(double), &failed);
  s->arrival = alloc_array(s, sizeof(double), &failed);
  s->max_eta = alloc_array(s, sizeof(double), &failed);
  s->tiles_x = (s->nx + params->tile_size - 1) / params->tile_size;
  s->tiles_y = (s->ny + params->tile_size - 1) / params->tile_size;
  s->tile_wet = calloc((size_t)s->tiles_x * s->tiles_y, 1);
  s->tile_active = calloc((size_t)s->tiles_x * s->tiles_y, 1);
  s->tile_list = malloc(sizeof(int) * (size_t)s->tiles_x * s->tiles_y);
  failed |= !s->tile_wet || !s->tile_active || !s->tile_list;
  for (int side = 0; side < 4 && !failed; side++) {
    const ts_swe_bc *bc = &params->bc[side];
    if (bc->type != TS_BC_INFLOW)
      continue;
    s->bc_t[side] = malloc(sizeof(double) * (size_t)bc->npoints);
    s->bc_q[side] = malloc(sizeof(double) * (size_t)bc->npoints);
    failed |= !s->bc_t[side] || !s->bc_q[side];
    if (!failed) {
      memcpy(s->bc_t[side], bc->t, sizeof(double) * (size_t)bc->npoints);
      memcpy(s->bc_q[side], bc->q, sizeof(double) * (size_t)bc->npoints);
      s->p.bc[side].t = s->bc_t[side];
      s->p.bc[side].q = s->bc_q[side];
    }
  }
  if (failed) {
    ts_swe_destroy(s);
    return ts_error(TS_ERR_NOMEM, "swe: out of memory for a %d x %d grid", bed->ncols, bed->nrows);
  }
  for (int64_t c = 0; c < s->plane; c++) {
    s->arrival[c] = NAN;
    s->max_eta[c] = NAN;
  }
  build_mask(s, bed);
  for (int j = 0; j < s->ny; j++)
    for (int i = 0; i < s->nx; i++)
      s->active_cells += s->active[swe_index(s, i, j)];
  ts_status st = s->k->init(s, bed, h0, hu0, hv0, friction_grid);
  if (st != TS_OK) {
    ts_swe_destroy(s);
    return st;
  }
  refresh_diagnostics(s);
  *out = s;
  return TS_OK;
}

void ts_swe_destroy(ts_swe *s) {
  if (!s)
    return;
  void *arrays[] = {s->w,         s->hu,      s->hv,      s->w_carry,  s->w0,
                    s->hu0,       s->hv0,     s->u,       s->v,        s->char_speed,
                    s->speed_cap, s->corner,  s->bed,     s->friction, s->fx[0],
                    s->fx[1],     s->fx[2],   s->fy[0],   s->fy[1],    s->fy[2],
                    s->src_x,     s->src_y,   s->drain,   s->active,   s->max_h,
                    s->max_speed, s->arrival, s->max_eta, s->tile_wet, s->tile_active,
                    s->tile_list};
  for (size_t k = 0; k < sizeof arrays / sizeof arrays[0]; k++)
    free(arrays[k]);
  for (int side = 0; side < 4; side++) {
    free(s->bc_t[side]);
    free(s->bc_q[side]);
  }
  free(s);
}

ts_status ts_swe_set_surface(ts_swe *s, const ts_raster *eta) {
  TS_CALL(check_raster(&(ts_raster){.ncols = s->nx,
                                    .nrows = s->ny,
                                    .xll = s->grid.origin[0],
                                    .yll = s->grid.origin[1],
                                    .cellsize = s->grid.dx[0]},
                       eta, "initial surface"));
  TS_CALL(s->k->set_surface(s, eta));
  for (int64_t c = 0; c < s->plane; c++) {
    s->max_h[c] = s->max_speed[c] = 0;
    s->arrival[c] = s->max_eta[c] = NAN;
  }
  refresh_diagnostics(s);
  return TS_OK;
}

ts_status ts_swe_step(ts_swe *s, double dt_max, double *dt_taken) {
  if (!(dt_max > 0))
    return ts_error(TS_ERR_INTERNAL, "swe: dt_max must be positive (got %g)", dt_max);
  TS_CALL(s->k->step(s, dt_max, dt_taken));
  s->k->update_diagnostics(s);
  return TS_OK;
}

double swe_inflow_discharge(const ts_swe *s, int side, double t) {
  const ts_swe_bc *bc = &s->p.bc[side];
  const double *ts = bc->t, *q = bc->q;
  int n = bc->npoints;
  if (t <= ts[0])
    return q[0];
  if (t >= ts[n - 1])
    return q[n - 1];
  int k = 0;
  while (k + 1 < n && ts[k + 1] < t)
    k++;
  double a = (t - ts[k]) / (ts[k + 1] - ts[k]);
  return q[k] + a * (q[k + 1] - q[k]);
}

double ts_swe_time(const ts_swe *s) { return s->t; }
int64_t ts_swe_steps(const ts_swe *s) { return s->steps; }
const ts_grid *ts_swe_grid(const ts_swe *s) { return &s->grid; }
const ts_swe_params *ts_swe_get_params(const ts_swe *s) { return &s->p; }
double ts_swe_volume(const ts_swe *s) { return s->k->volume(s); }
int64_t ts_swe_active_cells(const ts_swe *s) { return s->active_cells; }
int64_t ts_swe_wet_cells(const ts_swe *s) { return s->k->wet_cells(s); }

double ts_swe_get_cell(const ts_swe *s, ts_swe_var var, int i, int j) {
  if (i < 0 || j < 0 || i >= s->nx || j >= s->ny)
    return NAN;
  return s->k->get_cell(s, var, i, j);
}

ts_status ts_swe_get(const ts_swe *s, ts_swe_var var, double *out) {
  if (var < TS_SWE_H || var > TS_SWE_MAX_ETA)
    return ts_error(TS_ERR_INTERNAL, "swe: unknown variable %d", (int)var);
#pragma omp parallel for schedule(static)
  for (int j = 0; j < s->ny; j++)
    for (int i = 0; i < s->nx; i++)
      out[i + (int64_t)j * s->nx] = s->k->get_cell(s, var, i, j);
  return TS_OK;
}

void ts_swe_tiles(const ts_swe *s, int *ntiles_x, int *ntiles_y, int64_t *active_tiles) {
  *ntiles_x = s->tiles_x;
  *ntiles_y = s->tiles_y;
  *active_tiles = s->active_tiles;
}

const unsigned char *ts_swe_tile_mask(const ts_swe *s) { return s->tile_active; }

/* Checkpoint blob: a header, then the state arrays and maxima over the whole padded layout. */
typedef struct swe_checkpoint_header {
  char magic[8];
  int32_t nx, ny, real_size, reserved;
  double t;
  int64_t steps;
} swe_checkpoint_header;

static size_t checkpoint_bytes(const ts_swe *s) {
  return sizeof(swe_checkpoint_header) + (size_t)s->plane * (4 * s->real_size + 4 * sizeof(double));
}

ts_status ts_swe_checkpoint_size(const ts_swe *s, size_t *bytes) {
  *bytes = checkpoint_bytes(s);
  return TS_OK;
}

ts_status ts_swe_checkpoint_save(const ts_swe *s, void *blob, size_t bytes) {
  if (bytes != checkpoint_bytes(s))
    return ts_error(TS_ERR_INTERNAL, "swe: checkpoint buffer has the wrong size");
  swe_checkpoint_header h = {.magic = "TSSWE01",
                             .nx = s->nx,
                             .ny = s->ny,
                             .real_size = (int32_t)s->real_size,
                             .t = s->t,
                             .steps = s->steps};
  char *p = blob;
  memcpy(p, &h, sizeof h);
  p += sizeof h;
  size_t rb = (size_t)s->plane * s->real_size, db = (size_t)s->plane * sizeof(double);
  const void *reals[] = {s->w, s->hu, s->hv, s->w_carry};
  for (int k = 0; k < 4; k++, p += rb)
    memcpy(p, reals[k], rb);
  const double *maxima[] = {s->max_h, s->max_speed, s->arrival, s->max_eta};
  for (int k = 0; k < 4; k++, p += db)
    memcpy(p, maxima[k], db);
  return TS_OK;
}

ts_status ts_swe_checkpoint_load(ts_swe *s, const void *blob, size_t bytes) {
  swe_checkpoint_header h;
  if (bytes < sizeof h)
    return ts_error(TS_ERR_INPUT, "checkpoint is truncated");
  memcpy(&h, blob, sizeof h);
  if (memcmp(h.magic, "TSSWE01", 8) != 0)
    return ts_error(TS_ERR_INPUT, "checkpoint is not a Tessera shallow-water checkpoint");
  if (h.nx != s->nx || h.ny != s->ny || h.real_size != (int32_t)s->real_size)
    return ts_error(TS_ERR_INPUT,
                    "checkpoint is for a %d x %d grid in %s, this case is %d x %d in %s", h.nx,
                    h.ny, h.real_size == 8 ? "double" : "float", s->nx, s->ny,
                    ts_precision_name(s->p.precision));
  if (bytes != checkpoint_bytes(s))
    return ts_error(TS_ERR_INPUT, "checkpoint has the wrong size");
  const char *p = (const char *)blob + sizeof h;
  size_t rb = (size_t)s->plane * s->real_size, db = (size_t)s->plane * sizeof(double);
  void *reals[] = {s->w, s->hu, s->hv, s->w_carry};
  for (int k = 0; k < 4; k++, p += rb)
    memcpy(reals[k], p, rb);
  double *maxima[] = {s->max_h, s->max_speed, s->arrival, s->max_eta};
  for (int k = 0; k < 4; k++, p += db)
    memcpy(maxima[k], p, db);
  s->t = h.t;
  s->steps = h.steps;
  refresh_diagnostics(s);
  return TS_OK;
}

double ts_swe_bytes_per_cell_step(const ts_swe *s) {
  /* What a fused RK2 step must move per cell: stage 1 reads w, hu, hv and the bed and writes
   * w, hu, hv; stage 2 also reads the saved start state. Euler: one stage without the copy. */
  double values = s->p.rk_order == 1 ? 7 : 7 + 10;
  return values * (double)s->real_size;
}
