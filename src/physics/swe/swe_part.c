/* Parts of the shallow-water solver: the window of one subdomain (its owned box grown by the
 * halo towards other subdomains), built from the global input rasters so that its bed, masks and
 * state equal those of the whole grid, and its fields as the halo engine sees them. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "physics/swe/swe_internal.h"
#include "tessera/cpu.h"

/* Does global cell (gi, gj) take part? DEM cells with data; ghost cells of an open side next to
 * such a cell (within the ghost frame); nothing beyond two sides at once. */
static unsigned char global_active(const ts_swe *s, const ts_raster *dem, int gi, int gj) {
  int out_x = gi < 0 || gi >= s->nx, out_y = gj < 0 || gj >= s->ny;
  if (out_x && out_y)
    return 0;
  int ci = gi < 0 ? 0 : (gi >= s->nx ? s->nx - 1 : gi);
  int cj = gj < 0 ? 0 : (gj >= s->ny ? s->ny - 1 : gj);
  unsigned char in = !ts_raster_is_nodata(dem, dem->v[ci + (int64_t)cj * s->nx]);
  if (!out_x && !out_y)
    return in;
  int side = out_x ? (gi < 0 ? TS_WEST : TS_EAST) : (gj < 0 ? TS_SOUTH : TS_NORTH);
  return s->p.bc[side].type != TS_BC_WALL && in;
}

/* The values of a global raster on the window's cells into a working-precision array (NODATA:
 * 0); nothing when the raster or the array is missing. */
static void fill_window(const swe_part *part, const ts_raster *r, void *dst) {
  if (!r || !r->v || !dst)
    return;
#pragma omp parallel for schedule(static) num_threads(part->threads)
  for (int j = 0; j < part->ny; j++)
    for (int i = 0; i < part->nx; i++) {
      double v = r->v[(part->gi0 + i) + (int64_t)(part->gj0 + j) * r->ncols];
      v = ts_raster_is_nodata(r, v) ? 0 : v;
      int64_t c = swe_index(part, i, j);
      if (part->real_size == sizeof(double))
        ((double *)dst)[c] = v;
      else
        ((float *)dst)[c] = (float)v;
    }
}

void swe_part_set_rain(swe_part *part, const ts_swe *s, int frame) {
  part->rain_rate = 0;
  part->rain_step_max = frame >= 0 ? s->rain_step_max[frame] : INFINITY;
  if (frame >= 0 && s->rain_rate)
    part->rain_rate = s->rain_rate[frame];
  if (part->rain) {
    memset(part->rain, 0, part->real_size * (size_t)part->plane);
    if (frame >= 0)
      fill_window(part, &s->rain_grids[frame], part->rain);
  }
  if (part->k->rain_changed)
    part->k->rain_changed(part);
}

static void *alloc_array(const swe_part *part, size_t elem, int *failed) {
  void *p = calloc((size_t)part->plane, elem);
  if (!p)
    *failed = 1;
  return p;
}

ts_status swe_part_create(swe_part **out, const ts_swe *s, int sub, int device,
                          const swe_inputs *in) {
  *out = NULL;
  swe_part *part = calloc(1, sizeof *part);
  if (!part)
    return ts_error(TS_ERR_NOMEM, "swe: out of memory");
  const ts_box *own = &s->decomp.boxes[sub];
  int n[2] = {s->nx, s->ny}, lo[2], hi[2];
  for (int a = 0; a < 2; a++) {
    lo[a] = own->lo[a] - s->halo_width > 0 ? own->lo[a] - s->halo_width : 0;
    hi[a] = own->hi[a] + s->halo_width < n[a] ? own->hi[a] + s->halo_width : n[a];
  }
  part->p = &s->p;
  part->sub = sub;
  part->gi0 = lo[0];
  part->gj0 = lo[1];
  part->nx = hi[0] - lo[0];
  part->ny = hi[1] - lo[1];
  part->own =
      (swe_region){own->lo[0] - lo[0], own->hi[0] - lo[0], own->lo[1] - lo[1], own->hi[1] - lo[1]};
  part->internal[TS_WEST] = lo[0] > 0;
  part->internal[TS_EAST] = hi[0] < s->nx;
  part->internal[TS_SOUTH] = lo[1] > 0;
  part->internal[TS_NORTH] = hi[1] < s->ny;
  double dx = s->grid.dx[0];
  part->grid = ts_grid_2d(part->nx, part->ny, dx, s->grid.origin[0] + lo[0] * dx,
                          s->grid.origin[1] + lo[1] * dx);
  part->threads = omp_get_max_threads(); /* while it is built; then swe_assign_threads */
  part->early_exit = s->early_exit;
  part->bc_cells = s->bc_cells;
  part->t = s->t;
  part->real_size = (size_t)s->p.precision;
  part->k = s->p.precision == TS_DOUBLE ? TS_CPU_KERNELS(swe_kernels_double)
                                        : TS_CPU_KERNELS(swe_kernels_float);

  ts_grid points = ts_grid_2d(part->nx + 1, part->ny + 1, dx, 0, 0);
  ts_field layout;
  ts_status st = ts_field_create(&layout, &points, 1, SWE_GHOST, TS_FLOAT);
  if (st != TS_OK) {
    free(part);
    return st;
  }
  part->row = layout.stride[1];
  part->origin = layout.origin;
  part->plane = layout.comp_stride;
  ts_field_destroy(&layout);

  int failed = 0;
  size_t rs = part->real_size;
  void **reals[] = {
      &part->w,     &part->hu,    &part->hv,    &part->w_carry,    &part->w0,        &part->hu0,
      &part->hv0,   &part->u,     &part->v,     &part->char_speed, &part->speed_cap, &part->corner,
      &part->bed,   &part->fx[0], &part->fx[1], &part->fx[2],      &part->fy[0],     &part->fy[1],
      &part->fy[2], &part->src_x, &part->src_y, &part->drain};
  for (size_t k = 0; k < sizeof reals / sizeof reals[0]; k++)
    *reals[k] = alloc_array(part, rs, &failed);
  if (in->friction)
    part->friction = alloc_array(part, rs, &failed);
  if (s->rain_grids)
    part->rain = alloc_array(part, rs, &failed);
  if (s->loss_initial.v)
    part->loss_initial = alloc_array(part, rs, &failed);
  if (s->loss_rate.v)
    part->loss_rate = alloc_array(part, rs, &failed);
  double **records[] = {&part->duration, &part->max_hazard, &part->loss, &part->inflow,
                        &part->outflow};
  for (size_t k = 0; k < sizeof records / sizeof records[0]; k++)
    *records[k] = alloc_array(part, sizeof(double), &failed);
  part->active = alloc_array(part, 1, &failed);
  part->max_h = alloc_array(part, sizeof(double), &failed);
  part->max_speed = alloc_array(part, sizeof(double), &failed);
  part->arrival = alloc_array(part, sizeof(double), &failed);
  part->max_eta = alloc_array(part, sizeof(double), &failed);
  part->tiles_x = (part->nx + s->p.tile_size - 1) / s->p.tile_size;
  part->tiles_y = (part->ny + s->p.tile_size - 1) / s->p.tile_size;
  part->tile_wet = calloc((size_t)part->tiles_x * part->tiles_y, 1);
  part->tile_list = malloc(sizeof(int) * (size_t)part->tiles_x * part->tiles_y);
  part->tile_runs = malloc(2 * sizeof(int) * (size_t)part->tiles_x * part->tiles_y);
  failed |= !part->tile_wet || !part->tile_list || !part->tile_runs;
  part->tiles_stale = 1;
  if (failed) {
    swe_part_destroy(part);
    return ts_error(TS_ERR_NOMEM, "swe: out of memory for a %d x %d subdomain", part->nx, part->ny);
  }
#pragma omp parallel for schedule(static) num_threads(part->threads)
  for (int64_t c = 0; c < part->plane; c++) {
    part->arrival[c] = NAN;
    part->max_eta[c] = NAN;
  }
#pragma omp parallel for schedule(static) num_threads(part->threads)
  for (int j = -SWE_GHOST; j < part->ny + SWE_GHOST; j++)
    for (int i = -SWE_GHOST; i < part->nx + SWE_GHOST; i++)
      part->active[swe_index(part, i, j)] = global_active(s, in->bed, lo[0] + i, lo[1] + j);
  part->k->init(part, in);
  fill_window(part, &s->loss_initial, part->loss_initial);
  fill_window(part, &s->loss_rate, part->loss_rate);
  swe_part_set_rain(part, s, s->rain_frame);
  part->k->refresh_velocities(
      part, (swe_region){-SWE_GHOST, part->nx + SWE_GHOST, -SWE_GHOST, part->ny + SWE_GHOST});
  part->k->tile_mask(part, (swe_region){0, part->nx, 0, part->ny});
  part->k->maxima(part, 0);
  part->device = -1;
#if TESSERA_HAVE_CUDA
  if (s->backend == TS_BACKEND_CUDA && device >= 0) {
    int double_prec = s->p.precision == TS_DOUBLE;
    ts_status st_gpu =
        double_prec ? swe_cuda_attach_double(part, device) : swe_cuda_attach_float(part, device);
    if (st_gpu != TS_OK) {
      swe_part_destroy(part);
      return st_gpu;
    }
    part->k = double_prec ? &swe_kernels_cuda_double : &swe_kernels_cuda_float;
    part->k->tile_mask(part, (swe_region){0, part->nx, 0, part->ny});
    st_gpu = swe_watch_new_part(s, part);
    if (st_gpu != TS_OK) {
      swe_part_destroy(part);
      return st_gpu;
    }
  }
#else
  (void)device;
#endif
  *out = part;
  return TS_OK;
}

double swe_part_compute_seconds(swe_part *part) {
  if (part->k->busy_seconds)
    part->compute_s += part->k->busy_seconds(part);
  return part->compute_s;
}

void swe_part_destroy(swe_part *part) {
  if (!part)
    return;
  if (part->gpu && part->k->release)
    part->k->release(part);
  void *arrays[] = {part->w,          part->hu,           part->hv,        part->w_carry,
                    part->w0,         part->hu0,          part->hv0,       part->u,
                    part->v,          part->char_speed,   part->speed_cap, part->corner,
                    part->bed,        part->friction,     part->fx[0],     part->fx[1],
                    part->fx[2],      part->fy[0],        part->fy[1],     part->fy[2],
                    part->src_x,      part->src_y,        part->drain,     part->active,
                    part->max_h,      part->max_speed,    part->arrival,   part->max_eta,
                    part->tile_wet,   part->tile_list,    part->tile_runs, part->duration,
                    part->max_hazard, part->loss,         part->inflow,    part->outflow,
                    part->rain,       part->loss_initial, part->loss_rate};
  for (size_t k = 0; k < sizeof arrays / sizeof arrays[0]; k++)
    free(arrays[k]);
  free(part);
}

int swe_part_fields(const swe_part *part, int with_maxima, ts_halo_field *out) {
  ts_halo_field f = {.ncomp = 4,
                     .elem = part->real_size,
                     .comp = {part->w, part->hu, part->hv, part->w_carry},
                     .origin = part->origin,
                     .stride = {1, part->row, 0},
                     .lo = {part->gi0, part->gj0, 0}};
  out[0] = f;
  if (!with_maxima)
    return 1;
  f.elem = sizeof(double);
  f.comp[0] = part->max_h;
  f.comp[1] = part->max_speed;
  f.comp[2] = part->arrival;
  f.comp[3] = part->max_eta;
  out[1] = f;
  f.ncomp = 5;
  f.comp[0] = part->duration;
  f.comp[1] = part->max_hazard;
  f.comp[2] = part->loss;
  f.comp[3] = part->inflow;
  f.comp[4] = part->outflow;
  out[2] = f;
  return SWE_MIGRATED_FIELDS;
}

void swe_part_to_host(swe_part *part) {
  if (part->k->to_host)
    part->k->to_host(part);
}

void swe_part_changed_on_host(swe_part *part) {
  part->tiles_stale = 1;
  if (part->k->to_device)
    part->k->to_device(part);
  else
    part->k->refresh_velocities(
        part, (swe_region){-SWE_GHOST, part->nx + SWE_GHOST, -SWE_GHOST, part->ny + SWE_GHOST});
}
