/* Shallow-water case driver: configuration and input grids (all checked before anything is
 * written), the output schedule, snapshots in each format, maxima, gauges, checkpoints with
 * restart, the stop on a signal (a checkpoint to restart from), the progress line and
 * summary.json. */
#define _POSIX_C_SOURCE 200809L
#include "physics/swe/swe_case.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "physics/stop.h"
#include "tessera/buq.h"
#include "tessera/comm.h"
#include "tessera/config.h"
#include "tessera/gpu.h"
#include "tessera/io.h"
#include "tessera/job.h"
#include "tessera/swe.h"

#define TS_NFORMATS 5
enum { FMT_ASC, FMT_NETCDF, FMT_VTK, FMT_PNG, FMT_GEOTIFF };
static const char *const format_names[] = {"asc", "netcdf", "vtk", "png", "geotiff", NULL};
static const char *const side_names[4] = {"west", "east", "south", "north"};
static const double OUTPUT_NODATA = -9999; /* NODATA of every grid written */

/* Everything a run needs, read and checked before the first output. */
#define SWE_MAX_LINES 16

typedef struct swe_case {
  ts_config *cfg;
  double *lines;   /* [output] lines: x0, y0, x1, y1, n per line (map coordinates) */
  double *weights; /* [parallel] weights */
  int nlines;
  ts_swe_params params;
  double t_end;
  char time_units[96]; /* of the NetCDF time axes: "seconds [since [time] start]" */
  long max_steps;
  char *bed_path;
  ts_raster bed, h0, hu0, hv0, friction; /* bed.crs: the case's CRS, carried to every output */
  int crs_from_config;                   /* the bed has none: [swe] crs gave it */
  int has_h0, has_hu0, has_hv0, has_friction, has_surface;
  ts_raster refine; /* [grid] refine: wanted cell sizes (m), freed once the solver is created */
  int has_refine;
  ts_raster surface;
  double read_s, setup_s; /* seconds reading the case and its grids, then making the solver */
  double *bc_t[4], *bc_q[4];
  double *rain_t, *rain_rate;        /* [rain] frames: start times (s), uniform rates (m/s) */
  ts_raster_stack rain_grids;        /* or gridded rates (m/s per cell) */
  ts_raster loss_initial, loss_rate; /* loss grids (m, m/s), when given as grids */
  double *out_times;                 /* sorted output times up to t_end */
  int nout;
  int formats[TS_NFORMATS];
  int netcdf_per_snapshot; /* [output] netcdf_per_snapshot: swe_T.nc besides swe.nc */
  ts_gauges gauges;
  int has_gauges;
  double gauge_interval, checkpoint_interval, png_depth_max;
  int maxima;
  char *out_dir;
  const ts_comm *comm;
  int root; /* rank 0 writes every file */
} swe_case;

/* Gauge records: time, then h, surface, u, v per gauge. */
typedef struct gauge_log {
  double *rows;
  size_t n, cap, width;
} gauge_log;

/* State of the time loop that a checkpoint must carry besides the solver (the next output is
 * found again from the time). */
typedef struct run_state {
  int next_output;
  double next_gauge, next_checkpoint;
  double volume_initial;
} run_state;

/* ------------------------------------------------------------------ reading the case */

/* The grid file of [section] key (NULL when not given), relative to the case file as
 * ts_config_path makes it, also inside GDAL's DRIVER:"file":name syntax (NETCDF:"rain.nc":rain). */
static ts_status grid_path(const swe_case *k, const char *section, const char *key, char **path) {
  const char *value;
  TS_CALL(ts_config_path(k->cfg, section, key, path));
  if (!*path)
    return TS_OK;
  TS_CALL(ts_config_string(k->cfg, section, key, "", &value));
  size_t dir = strlen(*path) - strlen(value), driver = strcspn(value, ":");
  static const char *const name_chars =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_";
  if (dir == 0 || driver == 0 || strspn(value, name_chars) != driver ||
      strncmp(value + driver, ":\"", 2) != 0 || value[driver + 2] == '/')
    return TS_OK;
  size_t size = strlen(*path) + 1;
  char *resolved = malloc(size);
  if (!resolved)
    return ts_error(TS_ERR_NOMEM, "out of memory");
  snprintf(resolved, size, "%.*s%.*s%s", (int)driver + 2, value, (int)dir, *path,
           value + driver + 2);
  free(*path);
  *path = resolved;
  return TS_OK;
}

/* A grid whose CRS is known must be in the case's CRS (never silently mixed). */
static ts_status check_grid_crs(const swe_case *k, const char *path, const ts_raster *r) {
  if (!r->crs || ts_crs_same(r->crs, k->bed.crs))
    return TS_OK;
  char grid_crs[160], case_crs[160];
  ts_crs_label(r->crs, grid_crs, sizeof grid_crs);
  ts_crs_label(k->bed.crs, case_crs, sizeof case_crs);
  if (!k->bed.crs)
    return ts_error(TS_ERR_INPUT,
                    "%s: coordinate reference system %s, but the bed %s has none; give the "
                    "case's in [swe] crs",
                    path, grid_crs, k->bed_path);
  return ts_error(TS_ERR_INPUT,
                  "%s: coordinate reference system %s differs from the case's %s (%s %s); "
                  "reproject it (e.g. gdalwarp -t_srs)",
                  path, grid_crs, case_crs, k->crs_from_config ? "[swe] crs, bed" : "bed",
                  k->bed_path);
}

/* A grid read for the case must have the bed's geometry and, when it has one, its CRS. */
static ts_status check_grid(const swe_case *k, const char *path, const ts_raster *r) {
  if (!ts_raster_same_geometry(&k->bed, r))
    return ts_error(TS_ERR_INPUT,
                    "%s: grid %d x %d at (%g, %g), cell %g, differs from the bed %s: %d x %d at "
                    "(%g, %g), cell %g",
                    path, r->ncols, r->nrows, r->xll, r->yll, r->cellsize, k->bed_path,
                    k->bed.ncols, k->bed.nrows, k->bed.xll, k->bed.yll, k->bed.cellsize);
  return check_grid_crs(k, path, r);
}

static ts_status read_grid(const swe_case *k, const char *section, const char *key, ts_raster *r,
                           int *present) {
  char *path = NULL;
  *present = 0;
  TS_CALL(grid_path(k, section, key, &path));
  if (!path)
    return TS_OK;
  ts_status st = ts_raster_read(path, r);
  if (st == TS_ERR_IO)
    st = TS_ERR_INPUT; /* an input grid that cannot be read is bad input (exit code 2) */
  if (st == TS_OK && k->bed.v)
    st = check_grid(k, path, r);
  if (st != TS_OK)
    ts_raster_free(r);
  free(path);
  if (st == TS_OK)
    *present = 1;
  return st;
}

/* Line of the value with file order `index` (north row first) in an ESRI ASCII grid, plain or
 * gzipped: header lines start with a letter, values follow. 0 if it cannot be told. */
static long asc_value_line(const char *path, int64_t index) {
  gzFile f = gzopen(path, "rb");
  if (!f)
    return 0;
  long line = 1, found = 0;
  int64_t values = 0;
  int c, in_token = 0, line_start = 1, header_line = 0;
  while (!found && (c = gzgetc(f)) != -1) {
    int space = c == ' ' || c == '\t' || c == '\r' || c == '\n';
    if (!space && !in_token) {
      if (line_start)
        header_line = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
      if (!header_line && values++ == index)
        found = line;
      line_start = 0;
    }
    in_token = !space;
    if (c == '\n') {
      line++;
      line_start = 1;
      header_line = 0;
    }
  }
  gzclose(f);
  return found;
}

/* An error about the value of grid cell (i, j) of the grid file of [section] key: "FILE:LINE:
 * what at row R, column C" with R counted from the north as in the file. */
static ts_status grid_value_error(const swe_case *k, const char *section, const char *key,
                                  const ts_raster *r, int i, int j, const char *what) {
  char *path = NULL;
  TS_CALL(grid_path(k, section, key, &path));
  int row = r->nrows - j;
  long line = ts_asc_detect(path) ? asc_value_line(path, (int64_t)(row - 1) * r->ncols + i) : 0;
  ts_status st =
      line > 0
          ? ts_error(TS_ERR_INPUT, "%s:%ld: %s at row %d, column %d", path, line, what, row, i + 1)
          : ts_error(TS_ERR_INPUT, "%s: %s at row %d, column %d", path, what, row, i + 1);
  free(path);
  return st;
}

/* Checks that a grid holds values >= 0 on the active cells; NODATA there is an error unless
 * nodata_ok. `frame` (may be NULL) names the frame of a stack in the message. */
static ts_status check_nonnegative(const swe_case *k, const char *section, const char *key,
                                   const ts_raster *r, const char *quantity, int nodata_ok,
                                   const char *frame) {
  for (int j = r->nrows - 1; j >= 0; j--)
    for (int i = 0; i < r->ncols; i++) {
      double v = r->v[i + (size_t)j * r->ncols];
      if (ts_raster_is_nodata(&k->bed, k->bed.v[i + (size_t)j * r->ncols]))
        continue;
      int missing = ts_raster_is_nodata(r, v);
      if ((missing && nodata_ok) || (!missing && v >= 0 && isfinite(v)))
        continue;
      char what[160];
      if (missing)
        snprintf(what, sizeof what, "%smissing %s (NODATA)", frame ? frame : "", quantity);
      else
        snprintf(what, sizeof what, "%snegative %s %g", frame ? frame : "", quantity, v);
      return grid_value_error(k, section, key, r, i, j, what);
    }
  return TS_OK;
}

static ts_status read_friction(swe_case *k) {
  int manning = ts_config_has(k->cfg, "swe", "manning");
  int chezy = ts_config_has(k->cfg, "swe", "chezy");
  if (manning && chezy)
    return ts_config_error(k->cfg, "swe", "chezy", "give either manning or chezy, not both");
  if (!manning && !chezy)
    return TS_OK;
  const char *key = manning ? "manning" : "chezy";
  k->params.friction = manning ? TS_FRICTION_MANNING : TS_FRICTION_CHEZY;
  if (ts_config_is_number(k->cfg, "swe", key)) {
    TS_CALL(ts_config_double(k->cfg, "swe", key, 0, &k->params.friction_value));
    if (k->params.friction_value < 0)
      return ts_config_error(k->cfg, "swe", key, "must be >= 0");
    return TS_OK;
  }
  TS_CALL(read_grid(k, "swe", key, &k->friction, &k->has_friction));
  return check_nonnegative(k, "swe", key, &k->friction, "friction coefficient", 0, NULL);
}

/* The case's CRS: the bed's, or [swe] crs when the bed has none (both given: they must agree). */
static ts_status read_case_crs(swe_case *k) {
  if (!ts_config_has(k->cfg, "swe", "crs"))
    return TS_OK;
  const char *text;
  char *crs = NULL;
  TS_CALL(ts_config_string(k->cfg, "swe", "crs", "", &text));
  if (ts_crs_from_user(text, &crs) != TS_OK)
    return ts_config_error(k->cfg, "swe", "crs", "%s", ts_error_message());
  if (!k->bed.crs) {
    k->bed.crs = crs;
    k->crs_from_config = 1;
    return TS_OK;
  }
  ts_status st = TS_OK;
  if (!ts_crs_same(crs, k->bed.crs)) {
    char given[160], bed[160];
    ts_crs_label(crs, given, sizeof given);
    ts_crs_label(k->bed.crs, bed, sizeof bed);
    st = ts_config_error(k->cfg, "swe", "crs", "%s differs from the CRS %s of the bed %s", given,
                         bed, k->bed_path);
  }
  free(crs);
  return st;
}

static ts_status read_boundaries(swe_case *k) {
  static const char *const types[] = {"wall", "outflow", "level", "inflow", NULL};
  for (int side = 0; side < 4; side++) {
    int type;
    char key[32];
    TS_CALL(ts_config_choice(k->cfg, "boundary", side_names[side], 0, types, &type));
    ts_swe_bc *bc = &k->params.bc[side];
    bc->type = (ts_bc_type)type;
    snprintf(key, sizeof key, "%s_level", side_names[side]);
    if (bc->type == TS_BC_LEVEL) {
      if (!ts_config_has(k->cfg, "boundary", key))
        return ts_config_error(k->cfg, "boundary", side_names[side],
                               "a level boundary needs [boundary] %s", key);
      TS_CALL(ts_config_double(k->cfg, "boundary", key, 0, &bc->level));
    } else if (ts_config_has(k->cfg, "boundary", key)) {
      return ts_config_error(k->cfg, "boundary", key, "%s is not a level boundary",
                             side_names[side]);
    }
    snprintf(key, sizeof key, "%s_hydrograph", side_names[side]);
    if (bc->type == TS_BC_INFLOW) {
      char *path = NULL;
      TS_CALL(ts_config_path(k->cfg, "boundary", key, &path));
      if (!path)
        return ts_config_error(k->cfg, "boundary", side_names[side],
                               "an inflow boundary needs [boundary] %s", key);
      ts_status st = ts_series_read(path, -INFINITY, &bc->npoints, &k->bc_t[side], &k->bc_q[side]);
      free(path);
      TS_CALL(st);
      bc->t = k->bc_t[side];
      bc->q = k->bc_q[side];
    } else if (ts_config_has(k->cfg, "boundary", key)) {
      return ts_config_error(k->cfg, "boundary", key, "%s is not an inflow boundary",
                             side_names[side]);
    }
  }
  return TS_OK;
}

/* [grid]: the uniform grid of the bed (type = uniform, the default, which takes no other key) or
 * a block-uniform quadtree (type = buq) with its block size, levels and refinement rules. */
static ts_status read_grid_section(swe_case *k) {
  static const char *const types[] = {"uniform", "buq", NULL};
  int type;
  TS_CALL(ts_config_choice(k->cfg, "grid", "type", 0, types, &type));
  k->params.grid.type = type ? TS_GRID_BUQ : TS_GRID_UNIFORM;
  static const char *const buq_keys[] = {"block", "levels", "refine", "refine_slope",
                                         "refine_water"};
  if (k->params.grid.type == TS_GRID_UNIFORM) {
    for (size_t q = 0; q < sizeof buq_keys / sizeof buq_keys[0]; q++)
      if (ts_config_has(k->cfg, "grid", buq_keys[q]))
        return ts_config_error(k->cfg, "grid", buq_keys[q], "needs type = buq");
    return TS_OK;
  }
  /* the quadtree cuts its blocks along the Morton curve by their cost: the uniform grid's ways
   * of splitting do not apply */
  static const char *const uniform_keys[] = {"decomposition", "weights", "ghost_expansion",
                                             "overlap", "gpu_kernels"};
  for (size_t q = 0; q < sizeof uniform_keys / sizeof uniform_keys[0]; q++)
    if (ts_config_has(k->cfg, "parallel", uniform_keys[q]))
      return ts_config_error(k->cfg, "parallel", uniform_keys[q], "needs [grid] type = uniform");
  long n;
  TS_CALL(ts_config_int(k->cfg, "grid", "block", k->params.grid.block, &n));
  if (n != 16 && n != 8)
    return ts_config_error(k->cfg, "grid", "block", "must be 16 or 8 (cells along a block's side)");
  k->params.grid.block = (int)n;
  TS_CALL(ts_config_int(k->cfg, "grid", "levels", k->params.grid.levels, &n));
  if (n < 1 || n > TS_BUQ_MAX_LEVELS)
    return ts_config_error(k->cfg, "grid", "levels", "must be in [1, %d]", TS_BUQ_MAX_LEVELS);
  k->params.grid.levels = (int)n;
  TS_CALL(ts_config_double(k->cfg, "grid", "refine_slope", 0, &k->params.grid.refine_slope));
  if (!(k->params.grid.refine_slope >= 0))
    return ts_config_error(k->cfg, "grid", "refine_slope", "must be >= 0 (m/m; 0: no rule)");
  if (ts_config_has(k->cfg, "grid", "refine_water")) {
    TS_CALL(ts_config_int(k->cfg, "grid", "refine_water", 0, &n));
    if (n < 0 || n > 1000000000)
      return ts_config_error(k->cfg, "grid", "refine_water", "must be a number of cells >= 0");
    k->params.grid.refine_water = (int)n;
  }
  TS_CALL(read_grid(k, "grid", "refine", &k->refine, &k->has_refine));
  if (k->has_refine) {
    TS_CALL(check_nonnegative(k, "grid", "refine", &k->refine, "cell size", 1, NULL));
    k->params.grid.refine = &k->refine;
  }
  if (k->has_surface) /* refine_water's water: where the initial surface lies above the bed */
    k->params.grid.water_surface = &k->surface;
  return TS_OK;
}

/* ------------------------------------------------------------------ rain and losses */

static const double MM_PER_H = 1e-3 / 3600; /* m/s */
static const double MM = 1e-3;              /* m */

/* 1 when [section] key names a CSV file (.csv or .txt), read as a time series. */
static int is_series_file(const char *path) {
  const char *dot = strrchr(path, '.');
  return dot && (strcasecmp(dot, ".csv") == 0 || strcasecmp(dot, ".txt") == 0);
}

/* Start times of the frames of a stack: the file's own times, else `interval` apart, from
 * `start`. The last frame lasts as long as the one before it (or `interval`) unless `end` cuts
 * it; a single frame without times lasts to `end`. Returns the end of the last frame in *last. */
static ts_status stack_times(swe_case *k, const char *path, double start, double *last) {
  const ts_raster_stack *st = &k->rain_grids;
  int n = st->n, has_interval = ts_config_has(k->cfg, "rain", "interval");
  double interval = 0;
  if (has_interval) {
    TS_CALL(ts_config_double(k->cfg, "rain", "interval", 0, &interval));
    if (!(interval > 0))
      return ts_config_error(k->cfg, "rain", "interval", "must be positive");
  }
  int file_times = !isnan(st->times[0]);
  if (file_times && has_interval)
    return ts_config_error(k->cfg, "rain", "interval",
                           "%s gives its frame times; interval is only for a stack without them",
                           path);
  if (!file_times && n > 1 && !has_interval)
    return ts_config_error(k->cfg, "rain", "rate",
                           "%s has %d frames but no frame times: give [rain] interval (s)", path,
                           n);
  for (int f = 0; f < n; f++) {
    k->rain_t[f] = start + (file_times ? st->times[f] : f * interval);
    if (f > 0 && !(k->rain_t[f] > k->rain_t[f - 1]))
      return ts_error(TS_ERR_INPUT, "%s: frame %d at %g s does not come after frame %d", path,
                      f + 1, k->rain_t[f] - start, f);
  }
  if (has_interval)
    *last = k->rain_t[n - 1] + interval;
  else if (n > 1)
    *last = k->rain_t[n - 1] + (k->rain_t[n - 1] - k->rain_t[n - 2]);
  else
    *last = INFINITY;
  return TS_OK;
}

/* [rain] rate as a raster stack: every frame on the bed's grid and CRS, mm/h >= 0 (NODATA: no
 * rain there), converted to m/s. */
static ts_status read_rain_grids(swe_case *k, double start, double *last) {
  char *path = NULL;
  TS_CALL(grid_path(k, "rain", "rate", &path));
  ts_status st = ts_raster_stack_read(path, &k->rain_grids);
  if (st == TS_ERR_IO)
    st = TS_ERR_INPUT;
  if (st == TS_OK)
    k->rain_t = malloc(sizeof(double) * (size_t)k->rain_grids.n);
  if (st == TS_OK && !k->rain_t)
    st = ts_error(TS_ERR_NOMEM, "out of memory");
  for (int f = 0; st == TS_OK && f < k->rain_grids.n; f++) {
    ts_raster *r = &k->rain_grids.frames[f];
    char frame[32];
    snprintf(frame, sizeof frame, "frame %d: ", f + 1);
    st = check_grid(k, path, r);
    if (st == TS_OK)
      st =
          check_nonnegative(k, "rain", "rate", r, "rain rate", 1, k->rain_grids.n > 1 ? frame : "");
    for (size_t c = 0; st == TS_OK && c < (size_t)r->ncols * r->nrows; c++)
      if (!ts_raster_is_nodata(r, r->v[c]))
        r->v[c] *= MM_PER_H;
  }
  if (st == TS_OK)
    st = stack_times(k, path, start, last);
  free(path);
  return st;
}

/* [rain] rate as a CSV series t,mm_per_h: each row's rate holds until the next row (piecewise
 * constant), the last one until [rain] end. */
static ts_status read_rain_series(swe_case *k, double start, double *last) {
  char *path = NULL;
  int n;
  double *rate;
  TS_CALL(ts_config_path(k->cfg, "rain", "rate", &path));
  ts_status st = ts_series_read(path, 0, &n, &k->rain_t, &rate);
  free(path);
  TS_CALL(st);
  k->rain_rate = rate;
  k->params.rain.nframes = n;
  for (int f = 0; f < n; f++) {
    k->rain_t[f] += start;
    rate[f] *= MM_PER_H;
  }
  *last = INFINITY;
  return TS_OK;
}

/* A loss: [rain] key as a number (times unit) or a grid (values times unit, NODATA: none). */
static ts_status read_loss(swe_case *k, const char *key, double unit, double *value,
                           ts_raster *grid, const ts_raster **param) {
  if (!ts_config_has(k->cfg, "rain", key))
    return TS_OK;
  if (ts_config_is_number(k->cfg, "rain", key)) {
    TS_CALL(ts_config_double(k->cfg, "rain", key, 0, value));
    if (!(*value >= 0))
      return ts_config_error(k->cfg, "rain", key, "must be >= 0");
    *value *= unit;
    return TS_OK;
  }
  int present;
  TS_CALL(read_grid(k, "rain", key, grid, &present));
  TS_CALL(check_nonnegative(k, "rain", key, grid, key, 1, NULL));
  for (size_t c = 0; c < (size_t)grid->ncols * grid->nrows; c++)
    if (!ts_raster_is_nodata(grid, grid->v[c]))
      grid->v[c] *= unit;
  *param = grid;
  return TS_OK;
}

/* [rain]: rate (mm/h) as a number, a CSV series or a raster stack, between start and end (s);
 * loss_initial (mm) and loss_rate (mm/h), numbers or grids. */
static ts_status read_rain(swe_case *k) {
  ts_swe_rain *rain = &k->params.rain;
  double start = 0, end = INFINITY, last = INFINITY;
  TS_CALL(ts_config_double(k->cfg, "rain", "start", 0, &start));
  if (!(start >= 0))
    return ts_config_error(k->cfg, "rain", "start", "must be >= 0");
  if (ts_config_has(k->cfg, "rain", "end")) {
    TS_CALL(ts_config_double(k->cfg, "rain", "end", 0, &end));
    if (!(end > start))
      return ts_config_error(k->cfg, "rain", "end", "must be after start (%g s)", start);
  }
  TS_CALL(read_loss(k, "loss_initial", MM, &k->params.losses.initial, &k->loss_initial,
                    &k->params.losses.initial_grid));
  TS_CALL(read_loss(k, "loss_rate", MM_PER_H, &k->params.losses.rate, &k->loss_rate,
                    &k->params.losses.rate_grid));
  const char *rain_keys[] = {"start", "end", "interval"};
  if (!ts_config_has(k->cfg, "rain", "rate")) {
    for (int q = 0; q < 3; q++)
      if (ts_config_has(k->cfg, "rain", rain_keys[q]))
        return ts_config_error(k->cfg, "rain", rain_keys[q], "needs [rain] rate");
    return TS_OK;
  }
  if (ts_config_is_number(k->cfg, "rain", "rate")) {
    double mm_per_h;
    TS_CALL(ts_config_double(k->cfg, "rain", "rate", 0, &mm_per_h));
    if (!(mm_per_h >= 0))
      return ts_config_error(k->cfg, "rain", "rate", "must be >= 0 (mm/h)");
    k->rain_t = malloc(sizeof(double));
    k->rain_rate = malloc(sizeof(double));
    if (!k->rain_t || !k->rain_rate)
      return ts_error(TS_ERR_NOMEM, "out of memory");
    k->rain_t[0] = start;
    k->rain_rate[0] = mm_per_h * MM_PER_H;
    rain->nframes = 1;
  } else {
    char *path = NULL;
    TS_CALL(ts_config_path(k->cfg, "rain", "rate", &path));
    int series = is_series_file(path);
    free(path);
    if (ts_config_has(k->cfg, "rain", "interval") && series)
      return ts_config_error(k->cfg, "rain", "interval", "is only for a raster stack");
    TS_CALL(series ? read_rain_series(k, start, &last) : read_rain_grids(k, start, &last));
    rain->nframes = series ? rain->nframes : k->rain_grids.n;
  }
  /* Frames that start at or after the end fall away. */
  rain->end = end < last ? end : last;
  while (rain->nframes > 0 && k->rain_t[rain->nframes - 1] >= rain->end)
    rain->nframes--;
  if (rain->nframes == 0)
    return ts_config_error(k->cfg, "rain", "end", "no rain falls before the end (%g s)", rain->end);
  rain->t = k->rain_t;
  rain->rate = k->rain_rate;
  rain->grids = k->rain_rate ? NULL : k->rain_grids.frames;
  return TS_OK;
}

static int compare_doubles(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Output times: the listed times and the multiples of the interval up to t_end (times after
 * t_end are dropped, so --set time.end shortens a run), and t_end itself. */
static ts_status read_output_times(swe_case *k) {
  int n = 0;
  double *times = NULL, interval = 0;
  TS_CALL(ts_config_double_list(k->cfg, "output", "times", &n, &times));
  TS_CALL(ts_config_double(k->cfg, "output", "interval", 0, &interval));
  for (int i = 0; i < n; i++)
    if (!(times[i] >= 0)) {
      free(times);
      return ts_config_error(k->cfg, "output", "times", "output times must be >= 0");
    }
  if (ts_config_has(k->cfg, "output", "interval") && !(interval > 0)) {
    free(times);
    return ts_config_error(k->cfg, "output", "interval", "must be positive");
  }
  long nint = interval > 0 ? (long)floor(k->t_end / interval + 1e-9) : 0;
  if (nint > 100000) {
    free(times);
    return ts_config_error(k->cfg, "output", "interval", "gives %ld outputs (at most 100000)",
                           nint);
  }
  k->out_times = malloc(sizeof(double) * (size_t)(n + nint + 1));
  if (!k->out_times) {
    free(times);
    return ts_error(TS_ERR_NOMEM, "out of memory");
  }
  int m = 0;
  for (int i = 0; i < n; i++)
    if (times[i] <= k->t_end)
      k->out_times[m++] = times[i];
  for (long i = 1; i <= nint; i++)
    k->out_times[m++] = fmin(i * interval, k->t_end);
  k->out_times[m++] = k->t_end;
  free(times);
  qsort(k->out_times, (size_t)m, sizeof(double), compare_doubles);
  int u = 0;
  for (int i = 0; i < m; i++)
    if (u == 0 || k->out_times[i] != k->out_times[u - 1])
      k->out_times[u++] = k->out_times[i];
  k->nout = u;
  return TS_OK;
}

static ts_status read_formats(swe_case *k) {
  const char *value;
  TS_CALL(ts_config_string(k->cfg, "output", "formats", "asc, png", &value));
  char buf[256];
  if (strlen(value) >= sizeof buf)
    return ts_config_error(k->cfg, "output", "formats", "too long");
  snprintf(buf, sizeof buf, "%s", value);
  memset(k->formats, 0, sizeof k->formats);
  int count = 0;
  char *save = NULL;
  for (char *tok = strtok_r(buf, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save)) {
    int found = -1;
    for (int f = 0; format_names[f]; f++)
      if (strcmp(tok, format_names[f]) == 0)
        found = f;
    if (found < 0)
      return ts_config_error(k->cfg, "output", "formats",
                             "unknown format '%s' (choose from asc, netcdf, vtk, png, geotiff)",
                             tok);
    if (found == FMT_GEOTIFF && !ts_gdal_version())
      return ts_config_error(k->cfg, "output", "formats",
                             "geotiff needs GDAL, which this build has not (configure with "
                             "-DTESSERA_GDAL=ON)");
    k->formats[found] = 1;
    count++;
  }
  if (count == 0)
    return ts_config_error(k->cfg, "output", "formats", "no format given");
  static const char *const onoff[] = {"off", "on", NULL};
  TS_CALL(
      ts_config_choice(k->cfg, "output", "netcdf_per_snapshot", 0, onoff, &k->netcdf_per_snapshot));
  if (k->netcdf_per_snapshot && !k->formats[FMT_NETCDF])
    return ts_config_error(k->cfg, "output", "netcdf_per_snapshot",
                           "on needs netcdf among the formats");
  return TS_OK;
}

/* [parallel]: backend, devices, subdomains, decomposition, ghost_expansion, early_exit, overlap,
 * transport. */
static ts_status read_parallel(swe_case *k) {
  ts_swe_parallel *par = &k->params.parallel;
  const char *v;
  static const char *const backends[] = {"cpu", "cuda", "auto", NULL};
  int backend;
  TS_CALL(ts_config_choice(k->cfg, "parallel", "backend", (int)par->backend, backends, &backend));
  par->backend = (ts_backend)backend;
  TS_CALL(ts_case_read_devices(k->cfg, TS_MAX_DEVICES, 1, &par->ndevices, par->devices));
  int parts[3];
  TS_CALL(ts_case_read_split(k->cfg, &par->subdomains, &par->decomposition, parts));
  if (parts[2] > 1)
    return ts_config_error(k->cfg, "parallel", "decomposition", "a 2D grid has no z tiles");
  par->parts[0] = parts[0], par->parts[1] = parts[1];
  TS_CALL(ts_config_string(k->cfg, "parallel", "ghost_expansion", "1", &v));
  if (strcmp(v, "auto") == 0) {
    par->ghost_expansion = 0;
  } else {
    long n;
    TS_CALL(ts_config_int(k->cfg, "parallel", "ghost_expansion", 1, &n));
    if (n < 1 || n > 8)
      return ts_config_error(k->cfg, "parallel", "ghost_expansion", "must be auto or in [1, 8]");
    par->ghost_expansion = (int)n;
  }
  static const char *const onoffauto[] = {"off", "on", "auto", NULL};
  int early;
  TS_CALL(ts_config_choice(k->cfg, "parallel", "early_exit", 1, onoffauto, &early));
  k->params.early_exit = early == 2 ? -1 : early;
  static const char *const onoff[] = {"off", "on", NULL};
  TS_CALL(ts_config_choice(k->cfg, "parallel", "overlap", 1, onoff, &par->overlap));
  static const char *const transports[] = {"auto", "host", "cuda-mpi", "nccl", NULL};
  int transport;
  TS_CALL(ts_config_choice(k->cfg, "parallel", "transport", 0, transports, &transport));
  par->transport = (ts_transport_kind)transport;
  static const char *const kernels[] = {"auto", "tiles", "rows", NULL};
  int gpu_kernels;
  TS_CALL(ts_config_choice(k->cfg, "parallel", "gpu_kernels", 0, kernels, &gpu_kernels));
  par->kernels = (ts_swe_gpu_kernels)gpu_kernels;
  if (ts_config_has(k->cfg, "parallel", "weights")) {
    TS_CALL(ts_config_double_list(k->cfg, "parallel", "weights", &par->nweights, &k->weights));
    par->weights = k->weights;
    for (int w = 0; w < par->nweights; w++)
      if (!(k->weights[w] > 0))
        return ts_config_error(k->cfg, "parallel", "weights", "weight %d is %g: must be positive",
                               w + 1, k->weights[w]);
  }
  static const char *const balances[] = {"auto", "off", "static", "dynamic", NULL};
  int balance;
  TS_CALL(ts_config_choice(k->cfg, "parallel", "balance", 0, balances, &balance));
  par->balance = (ts_balance_mode)balance;
  TS_CALL(ts_config_string(k->cfg, "parallel", "rebalance_interval", "auto", &v));
  if (strcmp(v, "auto") != 0) {
    long n;
    TS_CALL(ts_config_int(k->cfg, "parallel", "rebalance_interval", 0, &n));
    if (n < 1 || n > 1000000000)
      return ts_config_error(k->cfg, "parallel", "rebalance_interval",
                             "must be auto or a number of steps >= 1");
    par->rebalance_interval = (int)n;
  }
  int moves = par->balance == TS_BALANCE_STATIC || par->balance == TS_BALANCE_DYNAMIC;
  if (moves && k->params.grid.type == TS_GRID_BUQ && ts_comm_size(k->comm) > 1)
    return ts_config_error(k->cfg, "parallel", "balance",
                           "%s balance on a quadtree grid moves leaves between the partitions of "
                           "one process: run one process (it drives several GPUs) or set off",
                           balances[balance]);
  if (moves && par->decomposition == TS_DECOMP_TILES)
    return ts_config_error(k->cfg, "parallel", "balance",
                           "%s balance moves the boundaries of bands: use decomposition rows or "
                           "columns",
                           balances[balance]);
  /* The split must be possible on this grid and give every rank a subdomain. */
  int ranks = ts_comm_size(k->comm), count = par->subdomains ? par->subdomains : ranks;
  int count_known = par->subdomains > 0 || par->backend == TS_BACKEND_CPU;
  if (par->nweights > 0 && count_known && par->nweights != count)
    return ts_config_error(k->cfg, "parallel", "weights",
                           "%d weights for %d subdomains: give one per subdomain", par->nweights,
                           count);
  const char *key =
      ts_config_has(k->cfg, "parallel", "subdomains") ? "subdomains" : "decomposition";
  if (count < ranks)
    return ts_config_error(k->cfg, "parallel", key,
                           "%d subdomains for %d MPI ranks: every rank needs at least one", count,
                           ranks);
  ts_decomp d;
  int n[3] = {k->bed.ncols, k->bed.nrows, 1};
  parts[2] = 1;
  if (ts_decomp_create(&d, 2, n, count, par->decomposition, parts) != TS_OK)
    return ts_config_error(k->cfg, "parallel", key, "%s", ts_error_message());
  ts_decomp_destroy(&d);
  return TS_OK;
}

/* [time] start: the calendar time of t = 0 (UTC), for the CF time units of the NetCDF files. */
static ts_status read_start(swe_case *k) {
  const char *text;
  snprintf(k->time_units, sizeof k->time_units, "seconds");
  TS_CALL(ts_config_string(k->cfg, "time", "start", "", &text));
  if (!text[0])
    return TS_OK;
  int y, mo, d, h = 0, mi = 0, s = 0, end = 0, n = (int)strlen(text);
  int date = sscanf(text, "%4d-%2d-%2d%n", &y, &mo, &d, &end) == 3 && end == 10;
  if (date && n > 10)
    date = (text[10] == 'T' || text[10] == ' ') &&
           sscanf(text + 11, "%2d:%2d:%2d%n", &h, &mi, &s, &end) == 3 && end == 8 &&
           (n == 19 || (n == 20 && text[19] == 'Z'));
  static const int days[12] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (!date || y < 1 || mo < 1 || mo > 12 || d < 1 || d > days[mo - 1] || h > 23 || mi > 59 ||
      s > 59 || h < 0 || mi < 0 || s < 0)
    return ts_config_error(k->cfg, "time", "start",
                           "'%s' is not a date and time as 2026-01-15T06:00:00 (UTC) or 2026-01-15",
                           text);
  snprintf(k->time_units, sizeof k->time_units, "seconds since %04d-%02d-%02d %02d:%02d:%02d", y,
           mo, d, h, mi, s);
  return TS_OK;
}

static ts_status read_case(swe_case *k, const ts_case_options *opt) {
  TS_CALL(ts_case_load(&k->cfg, opt));
  ts_case_warm_gpus(k->cfg, ts_comm_size(k->comm)); /* while the grids are read */

  if (!ts_config_has(k->cfg, "time", "end"))
    return ts_error(TS_ERR_INPUT, "%s: [time] end is required", opt->case_path);
  TS_CALL(ts_config_double(k->cfg, "time", "end", 0, &k->t_end));
  TS_CALL(read_start(k));
  if (!(k->t_end > 0))
    return ts_config_error(k->cfg, "time", "end", "must be positive");
  ts_swe_params_default(&k->params);
  TS_CALL(ts_config_double(k->cfg, "time", "cfl", 0.25, &k->params.cfl));
  if (!(k->params.cfl > 0 && k->params.cfl <= 0.5))
    return ts_config_error(k->cfg, "time", "cfl", "must be in (0, 0.5]");
  static const char *const integrators[] = {"euler", "rk2", NULL};
  int integrator;
  TS_CALL(ts_config_choice(k->cfg, "time", "integrator", 1, integrators, &integrator));
  k->params.rk_order = integrator + 1;
  TS_CALL(ts_config_int(k->cfg, "time", "max_steps", 0, &k->max_steps));
  if (k->max_steps < 0)
    return ts_config_error(k->cfg, "time", "max_steps", "must be >= 0");

  static const char *const precisions[] = {"float", "double", NULL};
  int precision;
  TS_CALL(ts_config_choice(k->cfg, "swe", "precision", 0, precisions, &precision));
  k->params.precision = precision ? TS_DOUBLE : TS_FLOAT;
  TS_CALL(ts_config_double(k->cfg, "swe", "gravity", 9.81, &k->params.gravity));
  if (!(k->params.gravity > 0))
    return ts_config_error(k->cfg, "swe", "gravity", "must be positive");
  TS_CALL(ts_config_double(k->cfg, "swe", "theta", 1.3, &k->params.theta));
  if (!(k->params.theta >= 1 && k->params.theta <= 2))
    return ts_config_error(k->cfg, "swe", "theta", "must be in [1, 2]");
  TS_CALL(ts_config_double(k->cfg, "swe", "dry_depth", 1e-4, &k->params.dry_depth));
  if (!(k->params.dry_depth > 0))
    return ts_config_error(k->cfg, "swe", "dry_depth", "must be positive");
  TS_CALL(ts_config_double(k->cfg, "swe", "arrival_depth", 0.01, &k->params.arrival_depth));
  if (!(k->params.arrival_depth > 0))
    return ts_config_error(k->cfg, "swe", "arrival_depth", "must be positive");
  long tile = 0; /* auto */
  const char *tile_text;
  TS_CALL(ts_config_string(k->cfg, "swe", "tile_size", TS_SWE_TILE_SIZE_TEXT, &tile_text));
  if (strcmp(tile_text, "auto") != 0) {
    TS_CALL(ts_config_int(k->cfg, "swe", "tile_size", TS_SWE_TILE_SIZE, &tile));
    if (tile < 2 || tile > 4096)
      return ts_config_error(k->cfg, "swe", "tile_size", "must be auto or in [2, 4096]");
  }
  k->params.tile_size = (int)tile;

  int has_bed;
  if (!ts_config_has(k->cfg, "swe", "bed"))
    return ts_error(TS_ERR_INPUT, "%s: [swe] bed is required", opt->case_path);
  TS_CALL(grid_path(k, "swe", "bed", &k->bed_path));
  TS_CALL(read_grid(k, "swe", "bed", &k->bed, &has_bed));
  TS_CALL(read_case_crs(k));
  if (ts_crs_is_geographic(k->bed.crs)) {
    char label[160];
    ts_crs_label(k->bed.crs, label, sizeof label);
    return ts_error(TS_ERR_INPUT,
                    "%s: coordinate reference system %s is geographic (degrees); the solver needs "
                    "cells in metres: reproject it to a projected CRS (e.g. gdalwarp -t_srs "
                    "EPSG:<UTM zone>)",
                    k->bed_path, label);
  }
  if (ts_config_has(k->cfg, "swe", "initial_surface") &&
      ts_config_has(k->cfg, "swe", "initial_depth"))
    return ts_config_error(k->cfg, "swe", "initial_depth",
                           "give either initial_surface or initial_depth, not both");
  TS_CALL(read_grid(k, "swe", "initial_surface", &k->surface, &k->has_surface));
  TS_CALL(read_grid(k, "swe", "initial_depth", &k->h0, &k->has_h0));
  if (k->has_h0)
    TS_CALL(check_nonnegative(k, "swe", "initial_depth", &k->h0, "depth", 0, NULL));
  TS_CALL(read_grid(k, "swe", "initial_hu", &k->hu0, &k->has_hu0));
  TS_CALL(read_grid(k, "swe", "initial_hv", &k->hv0, &k->has_hv0));
  TS_CALL(read_friction(k));
  TS_CALL(read_boundaries(k));
  TS_CALL(read_rain(k));
  TS_CALL(read_grid_section(k));

  TS_CALL(read_output_times(k));
  TS_CALL(read_formats(k));
  char *gauges = NULL;
  TS_CALL(ts_config_path(k->cfg, "output", "gauges", &gauges));
  if (gauges) {
    ts_status st = ts_gauges_read(gauges, &k->bed, &k->gauges);
    free(gauges);
    TS_CALL(st);
    k->has_gauges = 1;
    for (int g = 0; g < k->gauges.n; g++)
      if (ts_raster_is_nodata(&k->bed,
                              k->bed.v[k->gauges.i[g] + (size_t)k->gauges.j[g] * k->bed.ncols]))
        return ts_config_error(k->cfg, "output", "gauges", "gauge %s lies on a NODATA cell",
                               k->gauges.id[g]);
  }
  TS_CALL(ts_case_tuples(k->cfg, "output", "lines", 5, &k->lines, &k->nlines));
  if (k->nlines > SWE_MAX_LINES)
    return ts_config_error(k->cfg, "output", "lines", "at most %d lines", SWE_MAX_LINES);
  for (int l = 0; l < k->nlines; l++) {
    double n = k->lines[5 * l + 4];
    if (n < 2 || n > 1e6 || n != floor(n))
      return ts_config_error(k->cfg, "output", "lines",
                             "line %d: the number of points must be an integer in [2, 1e6]", l + 1);
  }
  TS_CALL(ts_config_double(k->cfg, "output", "gauge_interval", 0, &k->gauge_interval));
  if (k->gauge_interval < 0)
    return ts_config_error(k->cfg, "output", "gauge_interval", "must be >= 0");
  TS_CALL(ts_config_double(k->cfg, "output", "checkpoint_interval", 0, &k->checkpoint_interval));
  if (k->checkpoint_interval < 0)
    return ts_config_error(k->cfg, "output", "checkpoint_interval", "must be >= 0");
  if (k->checkpoint_interval > 0 && k->t_end / k->checkpoint_interval > 100000)
    return ts_config_error(k->cfg, "output", "checkpoint_interval",
                           "gives more than 100000 checkpoints");
  TS_CALL(ts_config_double(k->cfg, "output", "png_depth_max", 0, &k->png_depth_max));
  if (k->png_depth_max < 0)
    return ts_config_error(k->cfg, "output", "png_depth_max", "must be >= 0");
  static const char *const onoff[] = {"off", "on", NULL};
  TS_CALL(ts_config_choice(k->cfg, "output", "maxima", 1, onoff, &k->maxima));

  TS_CALL(ts_case_out_dir(k->cfg, opt, &k->out_dir));
  return read_parallel(k);
}

static void free_case(swe_case *k) {
  ts_config_free(k->cfg);
  free(k->lines);
  free(k->weights);
  ts_raster *grids[] = {&k->bed, &k->h0, &k->hu0, &k->hv0, &k->friction, &k->surface, &k->refine};
  for (size_t g = 0; g < sizeof grids / sizeof grids[0]; g++)
    ts_raster_free(grids[g]);
  for (int side = 0; side < 4; side++) {
    free(k->bc_t[side]);
    free(k->bc_q[side]);
  }
  free(k->rain_t);
  free(k->rain_rate);
  ts_raster_stack_free(&k->rain_grids);
  ts_raster_free(&k->loss_initial);
  ts_raster_free(&k->loss_rate);
  free(k->out_times);
  free(k->bed_path);
  if (k->has_gauges)
    ts_gauges_free(&k->gauges);
  free(k->out_dir);
}

/* ------------------------------------------------------------------ outputs */

/* "t000600" for whole seconds, "t000600.250" otherwise. */
static void time_tag(double t, char *out, size_t size) {
  if (t == floor(t) && t < 1e9)
    snprintf(out, size, "t%06.0f", t);
  else
    snprintf(out, size, "t%010.3f", t);
}

/* Writes a grid of values (NaN already replaced by OUTPUT_NODATA) on the bed's geometry and the
 * case's CRS: NAME.asc when asc is not NULL, NAME.tif when tif is not NULL; the file names
 * written go to asc and tif. */
static ts_status write_grid(const swe_case *k, const char *name, const double *values, char asc[64],
                            char tif[64]) {
  ts_raster r = k->bed; /* a shallow copy, never freed */
  r.nodata = OUTPUT_NODATA;
  r.v = (double *)values;
  char path[4096];
  if (asc) {
    snprintf(asc, 64, "%.59s.asc", name);
    snprintf(path, sizeof path, "%s/%s", k->out_dir, asc);
    TS_CALL(ts_asc_write(path, &r, k->params.precision == TS_DOUBLE ? 17 : 9));
  }
  if (tif) {
    snprintf(tif, 64, "%.59s.tif", name);
    snprintf(path, sizeof path, "%s/%s", k->out_dir, tif);
    TS_CALL(ts_geotiff_write(path, &r));
  }
  return TS_OK;
}

/* The maps written at the end (with [output] maxima = on), one row each: the solver variable,
 * the file name (NAME.asc always, NAME.tif with the geotiff format; the variable's name in
 * swe.nc), the summary.json keys of the two files under "maxima", and the long name and units
 * of the variable in swe.nc. */
typedef struct map_output {
  ts_swe_var var;
  const char *name, *key, *tif_key, *long_name, *units;
} map_output;
static const map_output map_outputs[] = {
    {TS_SWE_MAX_H, "max_h", "h", "h_tif", "largest water depth", "m"},
    {TS_SWE_MAX_SPEED, "max_speed", "speed", "speed_tif", "largest speed", "m s-1"},
    {TS_SWE_ARRIVAL, "arrival", "arrival", "arrival_tif",
     "first time the depth exceeded arrival_depth", "s"},
    {TS_SWE_MAX_ETA, "max_eta", "eta", "eta_tif", "largest water surface elevation", "m"},
    {TS_SWE_DURATION, "duration", "duration", "duration_tif",
     "time the depth exceeded arrival_depth", "s"},
    {TS_SWE_MAX_HAZARD, "max_hazard", "hazard", "hazard_tif",
     "largest flood hazard rating h (v + 0.5)", "m2 s-1"},
};
enum { NMAPS = sizeof map_outputs / sizeof map_outputs[0] };

/* An ASCII grid written by a job of its own, beside the other grids of an output time or of the
 * end (GDAL's GeoTIFF writer stays on the calling thread). */
typedef struct asc_job {
  const swe_case *k;
  char name[48];
  const double *values;
  char *file; /* [64]: its name once written */
  ts_job job;
} asc_job;

static ts_status write_asc_job(void *x) {
  asc_job *j = x;
  return write_grid(j->k, j->name, j->values, j->file, NULL);
}

/* Starts the ASCII grids of n named fields (none without the asc format). */
static void start_asc_jobs(const swe_case *k, int n, asc_job *jobs, const char *const *names,
                           const double *const *values, char *const *files) {
  for (int q = 0; q < n && k->formats[FMT_ASC]; q++) {
    jobs[q] = (asc_job){.k = k, .values = values[q], .file = files[q]};
    snprintf(jobs[q].name, sizeof jobs[q].name, "%s", names[q]);
    ts_job_start(&jobs[q].job, write_asc_job, &jobs[q]);
  }
}

/* Waits for the jobs of start_asc_jobs; the first failure (st's first). */
static ts_status finish_asc_jobs(const swe_case *k, int n, asc_job *jobs, ts_status st) {
  for (int q = 0; q < n && k->formats[FMT_ASC]; q++)
    st = ts_job_finish(&jobs[q].job, st);
  return st;
}

typedef struct snapshot_files {
  double time;
  char h[64], hu[64], hv[64], eta[64], netcdf[64], vtk[64], vtu[64], netcdf_blocks[64], png[64];
  char h_tif[64], hu_tif[64], hv_tif[64], eta_tif[64];
  char lines[SWE_MAX_LINES][64];
} snapshot_files;

/* The quadtree's own cells at time t (the leaf cells at their sizes, with their level): in VTK
 * UnstructuredGrid (files->vtu) with h, hu, hv, eta and bed as the scheme holds them, and in
 * NetCDF per level (files->netcdf_blocks) with h, hu, hv and eta; an empty name writes no file.
 * Every rank calls it (the leaves' values come whole to rank 0), rank 0 writes. */
static ts_status write_leaf_cells(const swe_case *k, const ts_swe *s, const snapshot_files *files,
                                  double t) {
  int64_t n = ts_swe_leaf_cells(s, NULL, NULL, NULL, NULL);
  int *geometry = malloc(sizeof(int) * 4 * (size_t)n);
  double *values = malloc(sizeof(double) * 5 * (size_t)n);
  ts_status st = geometry && values ? TS_OK : ts_error(TS_ERR_NOMEM, "leaf cells: out of memory");
  ts_swe_var vars[5] = {TS_SWE_H, TS_SWE_HU, TS_SWE_HV, TS_SWE_ETA, TS_SWE_BED};
  const char *names[5][3] = {{"h", "water depth", "m"},
                             {"hu", "unit discharge along x", "m2 s-1"},
                             {"hv", "unit discharge along y", "m2 s-1"},
                             {"eta", "water surface elevation", "m"},
                             {"bed", "bed elevation", "m"}};
  ts_out_var out[5];
  for (int v = 0; v < 5 && st == TS_OK; v++) {
    st = ts_swe_leaf_values(s, vars[v], values + (size_t)v * n);
    out[v] = (ts_out_var){names[v][0], names[v][1], names[v][2], values + (size_t)v * n};
  }
  if (st == TS_OK && k->root) {
    ts_swe_leaf_cells(s, geometry, geometry + n, geometry + 2 * n, geometry + 3 * n);
    ts_out_squares sq = {n,        k->bed.xll,   k->bed.yll,       k->bed.cellsize,
                         geometry, geometry + n, geometry + 2 * n, geometry + 3 * n};
    ts_swe_grid_stats grid;
    ts_swe_grid_info(s, &grid);
    char path[4096];
    if (files->vtu[0]) {
      snprintf(path, sizeof path, "%s/%s", k->out_dir, files->vtu);
      st = ts_vtu_write_squares(path, &sq, t, 5, out);
    }
    if (st == TS_OK && files->netcdf_blocks[0]) {
      snprintf(path, sizeof path, "%s/%s", k->out_dir, files->netcdf_blocks);
      st = ts_netcdf_write_levels(path, &k->bed, grid.levels, grid.block, t, &sq, 4, out);
    }
  }
  free(geometry);
  free(values);
  return st;
}

/* Profiles along the [output] lines at one output time: every field of the cell holding each
 * point (NaN outside the grid or on NODATA cells); work holds h, hu, hv, eta and bed. */
static ts_status write_lines(const swe_case *k, const char *tag, double **work,
                             snapshot_files *files) {
  const ts_raster *g = &k->bed;
  for (int l = 0; l < k->nlines; l++) {
    const double *line = k->lines + 5 * l;
    int npts = (int)line[4];
    snprintf(files->lines[l], sizeof files->lines[l], "line_%d_%s.csv", l + 1, tag);
    char path[4096], tmp[4200];
    snprintf(path, sizeof path, "%s/%s", k->out_dir, files->lines[l]);
    FILE *f = ts_open_temp(path, tmp, sizeof tmp);
    if (!f)
      return ts_error(TS_ERR_IO, "%s: cannot write", path);
    fprintf(f, "s,x,y,h,hu,hv,eta,bed,u,v,speed\n");
    double len = hypot(line[2] - line[0], line[3] - line[1]);
    for (int p = 0; p < npts; p++) {
      double a = (double)p / (npts - 1), x = line[0] + a * (line[2] - line[0]);
      double y = line[1] + a * (line[3] - line[1]), v[5], u = NAN, w = NAN;
      int i = (int)floor((x - g->xll) / g->cellsize), j = (int)floor((y - g->yll) / g->cellsize);
      int inside = i >= 0 && j >= 0 && i < g->ncols && j < g->nrows;
      for (int q = 0; q < 5; q++)
        v[q] = inside ? work[q][i + (size_t)j * g->ncols] : NAN;
      if (v[0] > k->params.dry_depth)
        u = v[1] / v[0], w = v[2] / v[0];
      else if (v[0] >= 0)
        u = w = 0;
      fprintf(f, "%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g\n", a * len, x, y, v[0],
              v[1], v[2], v[3], v[4], u, w, hypot(u, w));
    }
    TS_CALL(ts_commit_temp(f, tmp, path));
  }
  return TS_OK;
}

/* What the writers of one output time share: the case, the time and its tag, the fields (h, hu,
 * hv, eta, bed; NaN on inactive cells), the maps so far for swe.nc (NULL: none) and the names of
 * the files written. */
typedef struct snapshot_job {
  const swe_case *k;
  double t;
  const char *tag;
  double **work, **maps;
  snapshot_files *files;
  ts_netcdf_series *run_nc;
} snapshot_job;

static void snapshot_vars(double **work, ts_out_var out[5]) {
  ts_out_var vars[5] = {{"h", "water depth", "m", work[0]},
                        {"hu", "unit discharge along x", "m2 s-1", work[1]},
                        {"hv", "unit discharge along y", "m2 s-1", work[2]},
                        {"eta", "water surface elevation", "m", work[3]},
                        {"bed", "bed elevation", "m", work[4]}};
  memcpy(out, vars, sizeof vars);
}

/* The depth map in PNG. */
static ts_status write_snapshot_png(void *x) {
  snapshot_job *j = x;
  const swe_case *k = j->k;
  char title[64], path[4096];
  snprintf(title, sizeof title, "t = %g s", j->t);
  snprintf(j->files->png, sizeof j->files->png, "depth_%s.png", j->tag);
  snprintf(path, sizeof path, "%s/%s", k->out_dir, j->files->png);
  return ts_png_write_depth(path, &k->bed, j->work[4], j->work[0], k->params.dry_depth,
                            k->png_depth_max, title);
}

/* The run's NetCDF file gets the time appended (and the maps so far), and the time's own NetCDF
 * file is written (the only job that calls the NetCDF library). */
static ts_status write_snapshot_netcdf(void *x) {
  snapshot_job *j = x;
  ts_out_var out[5];
  snapshot_vars(j->work, out);
  if (j->run_nc)
    TS_CALL(ts_netcdf_series_append(j->run_nc, j->t, out));
  if (j->run_nc && j->maps) {
    for (int m = 0; m < NMAPS; m++)
      TS_CALL(ts_netcdf_series_put_map(j->run_nc, 1 + m, j->maps[m]));
    TS_CALL(ts_netcdf_series_sync(j->run_nc));
  }
  if (j->k->netcdf_per_snapshot) {
    char path[4096];
    snprintf(j->files->netcdf, sizeof j->files->netcdf, "swe_%s.nc", j->tag);
    snprintf(path, sizeof path, "%s/%s", j->k->out_dir, j->files->netcdf);
    TS_CALL(ts_netcdf_write(path, &j->k->bed, j->t, 5, out));
  }
  return TS_OK;
}

/* The VTK image. */
static ts_status write_snapshot_vtk(void *x) {
  snapshot_job *j = x;
  ts_out_var out[5];
  snapshot_vars(j->work, out);
  char path[4096];
  snprintf(j->files->vtk, sizeof j->files->vtk, "swe_%s.vti", j->tag);
  snprintf(path, sizeof path, "%s/%s", j->k->out_dir, j->files->vtk);
  return ts_vti_write(path, &j->k->bed, j->t, 5, out);
}

/* The files of an output time that failed (those written before the failure, or beside it): an
 * output time is written whole or not at all, whichever of its writers failed first. */
static void remove_snapshot_files(const swe_case *k, const snapshot_files *f) {
  const char *names[] = {f->h,      f->hu,      f->hv,           f->eta,   f->netcdf,
                         f->vtk,    f->vtu,     f->png,          f->h_tif, f->hu_tif,
                         f->hv_tif, f->eta_tif, f->netcdf_blocks};
  char path[4096];
  for (size_t q = 0; q < sizeof names / sizeof names[0]; q++)
    if (names[q][0]) {
      snprintf(path, sizeof path, "%s/%s", k->out_dir, names[q]);
      remove(path);
    }
  for (int l = 0; l < k->nlines; l++)
    if (f->lines[l][0]) {
      snprintf(path, sizeof path, "%s/%s", k->out_dir, f->lines[l]);
      remove(path);
    }
}

/* The fields of the snapshot at time t into work (h, hu, hv, eta, bed; NaN on inactive cells),
 * with maps (not NULL) the maps so far into maps[m], and its file names into files; on a
 * quadtree, the leaf cells' files are written here (their values come whole to rank 0).
 * Collective. */
static ts_status gather_snapshot(const swe_case *k, const ts_swe *s, double t, double **work,
                                 double **maps, snapshot_files *files) {
  memset(files, 0, sizeof *files);
  files->time = t;
  ts_swe_var vars[5 + NMAPS] = {TS_SWE_H, TS_SWE_HU, TS_SWE_HV, TS_SWE_ETA, TS_SWE_BED};
  double *out[5 + NMAPS];
  for (int v = 0; v < 5; v++)
    out[v] = work[v];
  for (int m = 0; m < NMAPS && maps; m++)
    vars[5 + m] = map_outputs[m].var, out[5 + m] = maps[m];
  TS_CALL(ts_comm_agree(k->comm, ts_swe_get_many(s, maps ? 5 + NMAPS : 5, vars, out)));
  if ((k->formats[FMT_VTK] || k->netcdf_per_snapshot) &&
      ts_swe_leaf_cells(s, NULL, NULL, NULL, NULL) > 0) {
    char tag[32];
    time_tag(t, tag, sizeof tag);
    if (k->formats[FMT_VTK])
      snprintf(files->vtu, sizeof files->vtu, "swe_blocks_%s.vtu", tag);
    if (k->netcdf_per_snapshot)
      snprintf(files->netcdf_blocks, sizeof files->netcdf_blocks, "swe_blocks_%s.nc", tag);
    TS_CALL(ts_comm_agree(k->comm, write_leaf_cells(k, s, files, t)));
  }
  return TS_OK;
}

/* Rank 0's files of the snapshot gathered at time t in every format; run_nc (NULL without the
 * netcdf format) gets h, hu, hv and eta appended as its next time step, and the maps so far
 * (maps; NULL: none). The PNG, NetCDF and VTK writers and each ASCII grid run on threads of
 * their own while this thread writes the lines and the GeoTIFF grids (the grids take NaN as
 * NODATA): each reads the fields and writes its own files. */
static ts_status write_snapshot(const swe_case *k, double t, double **work, double **maps,
                                snapshot_files *files, ts_netcdf_series *run_nc) {
  char tag[32];
  time_tag(t, tag, sizeof tag);
  snapshot_job job = {k, t, tag, work, maps, files, run_nc};
  ts_job jobs[3];
  int started[3] = {k->formats[FMT_PNG], run_nc || k->netcdf_per_snapshot, k->formats[FMT_VTK]};
  ts_status (*writers[3])(void *) = {write_snapshot_png, write_snapshot_netcdf, write_snapshot_vtk};
  for (int q = 0; q < 3; q++)
    if (started[q])
      ts_job_start(&jobs[q], writers[q], &job);
  char names[4][40], *asc[4] = {files->h, files->hu, files->hv, files->eta};
  char *tif[4] = {files->h_tif, files->hu_tif, files->hv_tif, files->eta_tif};
  const char *fields[4] = {"h", "hu", "hv", "eta"}, *grid_names[4];
  for (int v = 0; v < 4; v++) {
    snprintf(names[v], sizeof names[v], "%s_%s", fields[v], tag);
    grid_names[v] = names[v];
  }
  asc_job grids[4];
  start_asc_jobs(k, 4, grids, grid_names, (const double *const *)work, asc);
  ts_status st = write_lines(k, tag, work, files);
  for (int v = 0; v < 4 && st == TS_OK && k->formats[FMT_GEOTIFF]; v++)
    st = write_grid(k, names[v], work[v], NULL, tif[v]);
  st = finish_asc_jobs(k, 4, grids, st);
  for (int q = 0; q < 3; q++) /* every job finished; the first failure is the one reported */
    if (started[q])
      st = ts_job_finish(&jobs[q], st);
  return st;
}

/* A gauge record at time t: the current state (step < 0) or after step `step` of the last
 * ts_swe_advance. */
static ts_status record_gauges(const swe_case *k, const ts_swe *s, gauge_log *log, int step,
                               double t) {
  if (log->n == log->cap) {
    size_t cap = log->cap ? 2 * log->cap : 1024;
    double *rows = realloc(log->rows, sizeof(double) * cap * log->width);
    if (!rows)
      return ts_error(TS_ERR_NOMEM, "out of memory for gauge records");
    log->rows = rows;
    log->cap = cap;
  }
  double *row = log->rows + log->n * log->width;
  row[0] = t;
  int n = 4 * k->gauges.n;
  int *pi = malloc(sizeof(int) * (size_t)(n + 1)), *pj = malloc(sizeof(int) * (size_t)(n + 1));
  ts_swe_var *var = malloc(sizeof *var * (size_t)(n + 1));
  ts_status st = pi && pj && var ? TS_OK : ts_error(TS_ERR_NOMEM, "out of memory");
  const ts_swe_var kinds[4] = {TS_SWE_H, TS_SWE_ETA, TS_SWE_U, TS_SWE_V};
  for (int q = 0; q < n && st == TS_OK; q++) {
    pi[q] = k->gauges.i[q / 4];
    pj[q] = k->gauges.j[q / 4];
    var[q] = kinds[q % 4];
  }
  if (st == TS_OK)
    st = step < 0 ? ts_swe_probe(s, n, pi, pj, var, row + 1)
                  : ts_swe_probe_step(s, step, n, pi, pj, var, row + 1);
  free(pi);
  free(pj);
  free(var);
  if (st == TS_OK)
    log->n++;
  return st;
}

/* The lines of gauges.csv for one logged step (a line per gauge, "%.9g,%s,%.9g,%.9g,%.9g,%.9g");
 * returns their length. */
static size_t gauge_step_text(char *out, const swe_case *k, const double *row) {
  char time[32], *p = out;
  int time_length = ts_format_g(time, 9, row[0]);
  for (int g = 0; g < k->gauges.n; g++) {
    size_t id_length = strlen(k->gauges.id[g]);
    memcpy(p, time, (size_t)time_length);
    p += time_length;
    *p++ = ',';
    memcpy(p, k->gauges.id[g], id_length);
    p += id_length;
    for (int q = 1; q <= 4; q++) {
      *p++ = ',';
      p += ts_format_g(p, 9, row[q + 4 * g]);
    }
    *p++ = '\n';
  }
  return (size_t)(p - out);
}

/* gauges.csv: blocks of steps formatted on every thread, written in order. */
static ts_status write_gauges(const swe_case *k, const gauge_log *log) {
  char path[4096], tmp[4200];
  snprintf(path, sizeof path, "%s/gauges.csv", k->out_dir);
  size_t step_room = 1;
  for (int g = 0; g < k->gauges.n; g++)
    step_room += strlen(k->gauges.id[g]) + 5 * 26 + 1;
  size_t block = 256 * (size_t)omp_get_max_threads();
  char *text = malloc(step_room * block);
  size_t *length = malloc(sizeof *length * block);
  FILE *f = text && length ? ts_open_temp(path, tmp, sizeof tmp) : NULL;
  if (!f) {
    free(text);
    free(length);
    return text && length ? ts_error(TS_ERR_IO, "%s: cannot write: %s", path, strerror(errno))
                          : ts_error(TS_ERR_NOMEM, "%s: out of memory", path);
  }
  fprintf(f, "time,id,h,surface,u,v\n");
  for (size_t first = 0; first < log->n; first += block) {
    long n = (long)(log->n - first < block ? log->n - first : block);
#pragma omp parallel for schedule(static)
    for (long r = 0; r < n; r++)
      length[r] = gauge_step_text(text + (size_t)r * step_room, k,
                                  log->rows + (first + (size_t)r) * log->width);
    for (long r = 0; r < n; r++)
      fwrite(text + (size_t)r * step_room, 1, length[r], f);
  }
  free(text);
  free(length);
  return ts_commit_temp(f, tmp, path);
}

/* The gauges' records, for the jobs that write gauges.nc and gauges.png. */
typedef struct gauge_job {
  const swe_case *k;
  const gauge_log *log;
} gauge_job;

static ts_status write_gauges_netcdf(const swe_case *k, const gauge_log *log);
static ts_status plot_gauges(const swe_case *k, const gauge_log *log);

static ts_status gauges_netcdf_job(void *x) {
  const gauge_job *j = x;
  return write_gauges_netcdf(j->k, j->log);
}

static ts_status gauges_png_job(void *x) {
  const gauge_job *j = x;
  return plot_gauges(j->k, j->log);
}

/* gauges.png: depth and water surface against time, one panel each, a line per gauge. */
static ts_status plot_gauges(const swe_case *k, const gauge_log *log) {
  if (log->n == 0)
    return TS_OK;
  int ng = k->gauges.n;
  size_t n = log->n;
  double *values = malloc(sizeof(double) * n * (size_t)(1 + 2 * ng));
  ts_plot_series *series = malloc(sizeof *series * (size_t)(2 * ng));
  if (!values || !series) {
    free(values);
    free(series);
    return ts_error(TS_ERR_NOMEM, "out of memory for gauges.png");
  }
  double *t = values;
  for (size_t r = 0; r < n; r++) {
    const double *row = log->rows + r * log->width;
    t[r] = row[0];
    for (int g = 0; g < ng; g++) {
      values[(1 + g) * n + r] = row[1 + 4 * g];      /* h */
      values[(1 + ng + g) * n + r] = row[2 + 4 * g]; /* surface */
    }
  }
  for (int q = 0; q < 2 * ng; q++)
    series[q] = (ts_plot_series){k->gauges.id[q % ng], values + (size_t)(1 + q) * n};
  ts_plot_panel panels[2] = {{"water depth at the gauges", "depth h (m)", ng, series},
                             {"water surface at the gauges", "surface eta (m)", ng, series + ng}};
  char path[4096];
  snprintf(path, sizeof path, "%s/gauges.png", k->out_dir);
  ts_status st = ts_png_write_plot(path, (int)n, t, "time t (s)", 2, panels, "Gauges");
  free(values);
  free(series);
  return st;
}

/* gauges.nc (with the netcdf format): the gauge records as a CF timeSeries file. */
static ts_status write_gauges_netcdf(const swe_case *k, const gauge_log *log) {
  size_t n = log->n, ng = (size_t)k->gauges.n;
  double *t = malloc(sizeof(double) * (n + 1));
  double *values = malloc(sizeof(double) * (4 * ng * n + 1));
  if (!t || !values) {
    free(t);
    free(values);
    return ts_error(TS_ERR_NOMEM, "out of memory for gauges.nc");
  }
  for (size_t r = 0; r < n; r++) {
    const double *row = log->rows + r * log->width;
    t[r] = row[0];
    for (size_t g = 0; g < ng; g++)
      for (size_t q = 0; q < 4; q++) /* h, surface, u, v */
        values[(q * ng + g) * n + r] = row[1 + 4 * g + q];
  }
  ts_out_var vars[4] = {{"h", "water depth", "m", values},
                        {"eta", "water surface elevation", "m", values + ng * n},
                        {"u", "velocity along x", "m s-1", values + 2 * ng * n},
                        {"v", "velocity along y", "m s-1", values + 3 * ng * n}};
  char path[4096];
  snprintf(path, sizeof path, "%s/gauges.nc", k->out_dir);
  ts_status st = ts_netcdf_write_stations(path, k->bed.crs, k->time_units, k->gauges.n,
                                          k->gauges.id, k->gauges.x, k->gauges.y, n, t, 4, vars);
  free(t);
  free(values);
  return st;
}

/* The run's NetCDF file (with the netcdf format), one per run: h, hu, hv and eta at each output
 * time, the bed and (with maxima = on) the maps as time-less variables. */
static const char run_netcdf_name[] = "swe.nc";

/* Creates swe.nc on rank 0 (*run_nc; NULL elsewhere) and writes the bed into it; a restarted
 * run continues the swe.nc of its directory from its first output time (`restart_from`; NaN: not
 * restarted). Collective: every rank takes part in getting the bed (into work). */
static ts_status create_run_netcdf(const swe_case *k, const ts_swe *s, double *work,
                                   double restart_from, ts_netcdf_series **run_nc) {
  ts_out_var vars[4] = {{"h", "water depth", "m", NULL},
                        {"hu", "unit discharge along x", "m2 s-1", NULL},
                        {"hv", "unit discharge along y", "m2 s-1", NULL},
                        {"eta", "water surface elevation", "m", NULL}};
  ts_out_var maps[1 + NMAPS] = {{"bed", "bed elevation", "m", NULL}};
  for (int m = 0; m < NMAPS; m++)
    maps[1 + m] =
        (ts_out_var){map_outputs[m].name, map_outputs[m].long_name, map_outputs[m].units, NULL};
  ts_grid grid = ts_grid_2d(k->bed.ncols, k->bed.nrows, k->bed.cellsize, k->bed.xll, k->bed.yll);
  ts_netcdf_layout layout = {.grid = &grid,
                             .crs = k->bed.crs,
                             .title = "Tessera shallow-water run",
                             .length_units = "m",
                             .time_units = k->time_units,
                             .time_long_name = "time since the start of the simulation",
                             .time_standard = 1,
                             .use_double = k->params.precision == TS_DOUBLE,
                             .nvars = 4,
                             .nmaps = k->maxima ? 1 + NMAPS : 1,
                             .vars = vars,
                             .maps = maps};
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", k->out_dir, run_netcdf_name);
  ts_status st = TS_OK;
  if (k->root)
    st = isnan(restart_from) ? ts_netcdf_series_create(run_nc, path, &layout)
                             : ts_netcdf_series_continue(run_nc, path, &layout, restart_from);
  TS_CALL(ts_comm_agree(k->comm, st));
  st = ts_swe_get(s, TS_SWE_BED, work);
  if (st == TS_OK && *run_nc)
    st = ts_netcdf_series_put_map(*run_nc, 0, work);
  if (st == TS_OK && *run_nc)
    st = ts_netcdf_series_sync(*run_nc);
  return ts_comm_agree(k->comm, st);
}

/* An output time or a checkpoint is written on a thread of its own (rank 0's output job) while
 * the steps go on: the main thread gathers the fields (and, with the netcdf format and maxima =
 * on, the maps so far, into swe.nc so that a run stopped later leaves them too) or the
 * checkpoint, then the job writes every file of it. An output time is written whole or not at
 * all: a failed job removes the time's files, and its failure ends the run where the main thread
 * next waits for it (the next output time or checkpoint, the end), before any other file is
 * written. One job is in the writing at once, so the NetCDF library is called by one thread at a
 * time and a checkpoint follows the output times before it. */
typedef struct output_writer {
  const swe_case *k;
  ts_netcdf_series *run_nc; /* rank 0's swe.nc, NULL elsewhere or without the netcdf format */
  double *work[5];          /* h, hu, hv, eta, bed of the time in the writing */
  double *maps[NMAPS];      /* the maps (maxima = on), into swe.nc at each time with netcdf */
  int with_maps;
  snapshot_files *files; /* the time's file names */
  double t;
  char checkpoint_path[4096]; /* a checkpoint's file and contents (header, gauge rows, solver) */
  char *checkpoint;
  size_t checkpoint_bytes;
  ts_job job;
  int pending;       /* a job was started and not yet waited for */
  int *written;      /* its counter, incremented once it is written */
  double background; /* seconds rank 0's jobs ran */
} output_writer;

static ts_status output_job(void *x) {
  output_writer *w = x;
  double started = omp_get_wtime();
  ts_status st =
      write_snapshot(w->k, w->t, w->work, w->with_maps ? w->maps : NULL, w->files, w->run_nc);
  if (st != TS_OK)
    remove_snapshot_files(w->k, w->files);
  w->background += omp_get_wtime() - started;
  return st;
}

static ts_status output_writer_init(output_writer *w, const swe_case *k) {
  memset(w, 0, sizeof *w);
  w->k = k;
  w->with_maps = k->formats[FMT_NETCDF] && k->maxima;
  size_t ncells = (size_t)k->bed.ncols * k->bed.nrows;
  for (int v = 0; v < 5; v++)
    if (!(w->work[v] = malloc(sizeof(double) * ncells)))
      return ts_error(TS_ERR_NOMEM, "out of memory for the output fields");
  for (int m = 0; m < NMAPS && k->maxima; m++)
    if (!(w->maps[m] = malloc(sizeof(double) * ncells)))
      return ts_error(TS_ERR_NOMEM, "out of memory for the output maps");
  return TS_OK;
}

/* Waits for the output time or checkpoint in the writing, if any; its result, agreed by every
 * rank. Its counter is incremented when it was written whole. */
static ts_status output_wait(output_writer *w) {
  if (!w->pending)
    return TS_OK;
  w->pending = 0;
  ts_status st = w->k->root ? ts_job_finish(&w->job, TS_OK) : TS_OK;
  free(w->checkpoint);
  w->checkpoint = NULL;
  TS_CALL(ts_comm_agree(w->k->comm, st));
  (*w->written)++;
  return TS_OK;
}

/* Rank 0's job `run` begins writing what was gathered; *written counts it once written. */
static void output_begin(output_writer *w, ts_status (*run)(void *), int *written) {
  w->pending = 1;
  w->written = written;
  if (w->k->root)
    ts_job_start(&w->job, run, w);
}

/* The output time t: waits for the one before, gathers this one's fields (collective) and starts
 * its writing on rank 0. snaps[*written] gets its file names, filled in as they are written. */
static ts_status output_start(output_writer *w, const ts_swe *s, double t, snapshot_files *snaps,
                              int *written) {
  const swe_case *k = w->k;
  TS_CALL(output_wait(w));
  snapshot_files *files = &snaps[*written];
  TS_CALL(gather_snapshot(k, s, t, w->work, w->with_maps ? w->maps : NULL, files));
  w->files = files;
  w->t = t;
  output_begin(w, output_job, written);
  return TS_OK;
}

static void output_writer_free(output_writer *w) {
  for (int v = 0; v < 5; v++)
    free(w->work[v]);
  for (int m = 0; m < NMAPS; m++)
    free(w->maps[m]);
  free(w->checkpoint);
}

typedef struct map_files {
  char asc[64], tif[64]; /* "" when not written */
} map_files;

/* The maps into the run's NetCDF file (a job beside the maps' grids). */
typedef struct maps_job {
  ts_netcdf_series *run_nc;
  double **maps;
} maps_job;

static ts_status put_maps(void *x) {
  const maps_job *j = x;
  for (int m = 0; m < NMAPS; m++)
    TS_CALL(ts_netcdf_series_put_map(j->run_nc, 1 + m, j->maps[m]));
  return TS_OK;
}

/* The maps at the end (gathered into maps[m]), also into swe.nc (rank 0's run_nc, when not
 * NULL): the ASCII grids and the NetCDF variables by jobs of their own, the GeoTIFF files on
 * this thread. */
static ts_status write_maxima(const swe_case *k, const ts_swe *s, double **maps, map_files *files,
                              ts_netcdf_series *run_nc) {
  ts_swe_var vars[NMAPS];
  for (int m = 0; m < NMAPS; m++)
    vars[m] = map_outputs[m].var;
  TS_CALL(ts_comm_agree(k->comm, ts_swe_get_many(s, NMAPS, vars, maps)));
  ts_status st = TS_OK;
  if (k->root) {
    const char *names[NMAPS];
    char *asc[NMAPS];
    for (int m = 0; m < NMAPS; m++)
      names[m] = map_outputs[m].name, asc[m] = files[m].asc;
    maps_job put = {run_nc, maps};
    ts_job job;
    if (run_nc)
      ts_job_start(&job, put_maps, &put);
    asc_job grids[NMAPS]; /* (NaN as NODATA) */
    start_asc_jobs(k, NMAPS, grids, names, (const double *const *)maps, asc);
    for (int m = 0; m < NMAPS && st == TS_OK && k->formats[FMT_GEOTIFF]; m++)
      st = write_grid(k, names[m], maps[m], NULL, files[m].tif);
    st = finish_asc_jobs(k, NMAPS, grids, st);
    if (run_nc)
      st = ts_job_finish(&job, st);
  }
  return ts_comm_agree(k->comm, st);
}

/* ------------------------------------------------------------------ checkpoints */

/* A checkpoint file holds, in the byte order of the machine that wrote it: the magic
 * "TESSERA-CKPT", a format version, the grid size and precision (checked on restart), the loop
 * state (next gauge and checkpoint times, initial volume), the gauge records so far, and the
 * solver's own checkpoint blob. */
static const char checkpoint_magic[12] = {'T', 'E', 'S', 'S', 'E', 'R',
                                          'A', '-', 'C', 'K', 'P', 'T'};
enum { CHECKPOINT_VERSION = 1 };

typedef struct checkpoint_header {
  char magic[12];
  int32_t version, ncols, nrows, precision;
  double next_gauge, next_checkpoint, volume_initial;
  uint64_t gauge_rows, gauge_width, solver_bytes;
} checkpoint_header;

/* Rank 0's checkpoint file from the contents gathered. */
static ts_status checkpoint_job(void *x) {
  output_writer *w = x;
  double started = omp_get_wtime();
  char tmp[4200];
  FILE *f = ts_open_temp(w->checkpoint_path, tmp, sizeof tmp);
  ts_status st =
      f ? TS_OK : ts_error(TS_ERR_IO, "%s: cannot write: %s", w->checkpoint_path, strerror(errno));
  if (f) {
    fwrite(w->checkpoint, 1, w->checkpoint_bytes, f);
    st = ts_commit_temp(f, tmp, w->checkpoint_path); /* reports a failed write */
  }
  w->background += omp_get_wtime() - started;
  return st;
}

/* The checkpoint `name` in the output directory: waits for the writing before, gathers the
 * checkpoint (collective) and starts its writing on rank 0; names[*written] gets its name, and
 * *written counts it once it is written. */
static ts_status checkpoint_start(output_writer *w, const ts_swe *s, const run_state *rs,
                                  const gauge_log *log, const char *name, char (*names)[64],
                                  int *written) {
  const swe_case *k = w->k;
  TS_CALL(output_wait(w));
  size_t bytes;
  TS_CALL(ts_swe_checkpoint_size(s, &bytes));
  size_t rows = sizeof(double) * log->n * log->width;
  size_t total = sizeof(checkpoint_header) + rows + bytes;
  char *file = k->root ? malloc(total) : NULL;
  TS_CALL(ts_comm_agree(k->comm, k->root && !file
                                     ? ts_error(TS_ERR_NOMEM, "out of memory for a checkpoint")
                                     : TS_OK));
  ts_status st =
      ts_swe_checkpoint_save(s, file ? file + sizeof(checkpoint_header) + rows : NULL, bytes);
  if (st == TS_OK && k->root) {
    checkpoint_header h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, checkpoint_magic, sizeof h.magic);
    h.version = CHECKPOINT_VERSION;
    h.ncols = k->bed.ncols;
    h.nrows = k->bed.nrows;
    h.precision = (int32_t)k->params.precision;
    h.next_gauge = rs->next_gauge;
    h.next_checkpoint = rs->next_checkpoint;
    h.volume_initial = rs->volume_initial;
    h.gauge_rows = log->n;
    h.gauge_width = log->width;
    h.solver_bytes = bytes;
    memcpy(file, &h, sizeof h);
    if (rows)
      memcpy(file + sizeof h, log->rows, rows);
  }
  st = ts_comm_agree(k->comm, st);
  if (st != TS_OK) {
    free(file);
    return st;
  }
  snprintf(names[*written], 64, "%s", name);
  snprintf(w->checkpoint_path, sizeof w->checkpoint_path, "%s/%s", k->out_dir, name);
  w->checkpoint = file;
  w->checkpoint_bytes = total;
  output_begin(w, checkpoint_job, written);
  return TS_OK;
}

/* Reads a checkpoint into the solver, the loop state and the gauge log (all bad input on error:
 * another case's checkpoint, a truncated file, not a checkpoint). */
static ts_status read_checkpoint_file(const swe_case *k, const char *path, FILE *f, ts_swe *s,
                                      run_state *rs, gauge_log *log) {
  checkpoint_header h;
  if (fread(&h, sizeof h, 1, f) != 1 || memcmp(h.magic, checkpoint_magic, sizeof h.magic) != 0)
    return ts_error(TS_ERR_INPUT, "%s: not a Tessera checkpoint", path);
  if (h.version != CHECKPOINT_VERSION)
    return ts_error(TS_ERR_INPUT, "%s: checkpoint format version %d, this build reads %d", path,
                    (int)h.version, CHECKPOINT_VERSION);
  if (h.ncols != k->bed.ncols || h.nrows != k->bed.nrows ||
      h.precision != (int32_t)k->params.precision)
    return ts_error(TS_ERR_INPUT,
                    "%s: checkpoint of a %d x %d grid in %s, this case is %d x %d in %s", path,
                    (int)h.ncols, (int)h.nrows, h.precision == TS_DOUBLE ? "double" : "float",
                    k->bed.ncols, k->bed.nrows, ts_precision_name(k->params.precision));
  if (h.gauge_width != log->width)
    return ts_error(TS_ERR_INPUT, "%s: checkpoint has %llu gauges, this case %zu", path,
                    (unsigned long long)(h.gauge_width - 1) / 4, (log->width - 1) / 4);
  size_t solver_bytes;
  TS_CALL(ts_swe_checkpoint_size(s, &solver_bytes));
  if (h.solver_bytes != solver_bytes || h.gauge_rows > ((uint64_t)1 << 32))
    return ts_error(TS_ERR_INPUT, "%s: checkpoint is corrupt (sizes do not match this case)", path);
  if (h.gauge_rows) {
    log->rows = malloc(sizeof(double) * h.gauge_rows * h.gauge_width);
    if (!log->rows)
      return ts_error(TS_ERR_NOMEM, "out of memory reading %s", path);
    log->n = log->cap = h.gauge_rows;
    if (fread(log->rows, sizeof(double), log->n * log->width, f) != log->n * log->width)
      return ts_error(TS_ERR_INPUT, "%s: checkpoint is truncated", path);
  }
  void *blob = malloc(solver_bytes);
  if (!blob)
    return ts_error(TS_ERR_NOMEM, "out of memory reading %s", path);
  ts_status st = TS_OK;
  if (fread(blob, 1, solver_bytes, f) != solver_bytes || fgetc(f) != EOF)
    st = ts_error(TS_ERR_INPUT, "%s: checkpoint is truncated or has trailing data", path);
  if (st == TS_OK && ts_swe_checkpoint_load(s, blob, solver_bytes) != TS_OK)
    st = ts_error(TS_ERR_INPUT, "%s: %s", path, ts_error_message());
  free(blob);
  rs->next_gauge = h.next_gauge;
  rs->next_checkpoint = h.next_checkpoint;
  rs->volume_initial = h.volume_initial;
  rs->next_output = 0;
  while (rs->next_output < k->nout && k->out_times[rs->next_output] <= ts_swe_time(s))
    rs->next_output++;
  return st;
}

static ts_status read_checkpoint(const swe_case *k, const char *path, ts_swe *s, run_state *rs,
                                 gauge_log *log) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return ts_error(TS_ERR_INPUT, "%s: cannot open: %s", path, strerror(errno));
  ts_status st = read_checkpoint_file(k, path, f, s, rs, log);
  fclose(f);
  return st;
}

/* ------------------------------------------------------------------ the run */

static double wall_now(void) { return omp_get_wtime(); }

/* "t = 600.0/4000 s  steps 1234  dt 0.048 s  wall 12.3 s  48.1 Mcells/s  ETA 57 s"; the ETA
 * extrapolates the simulated time done since this run started (t_start, after a restart). */
static void progress_line(FILE *out, int tty, const ts_swe *s, double t_start, double t_end,
                          double dt, double wall, double cells_steps) {
  double t = ts_swe_time(s);
  double rate = wall > 0 ? cells_steps / wall / 1e6 : 0;
  double eta = t > t_start ? wall * (t_end - t) / (t - t_start) : 0;
  fprintf(out, "%st = %.1f/%g s  steps %lld  dt %.3g s  wall %.1f s  %.1f Mcells/s  ETA %.0f s%s",
          tty ? "\r" : "", t, t_end, (long long)ts_swe_steps(s), dt, wall, rate, eta,
          tty ? "   " : "\n");
  fflush(out);
}

static void write_summary_snapshots(ts_json *j, const swe_case *k, const snapshot_files *snaps,
                                    int n) {
  ts_json_key(j, "snapshots");
  ts_json_array_begin(j);
  for (int i = 0; i < n; i++) {
    ts_json_object_begin(j);
    ts_json_key(j, "time");
    ts_json_number(j, snaps[i].time);
    ts_json_key(j, "files");
    ts_json_object_begin(j);
    const char *keys[13] = {"h",       "hu",         "hv",           "eta",    "netcdf",
                            "vtk",     "png",        "h_tif",        "hu_tif", "hv_tif",
                            "eta_tif", "vtk_blocks", "netcdf_blocks"};
    const char *vals[13] = {
        snaps[i].h,       snaps[i].hu,  snaps[i].hv,           snaps[i].eta,    snaps[i].netcdf,
        snaps[i].vtk,     snaps[i].png, snaps[i].h_tif,        snaps[i].hu_tif, snaps[i].hv_tif,
        snaps[i].eta_tif, snaps[i].vtu, snaps[i].netcdf_blocks};
    for (int f = 0; f < 13; f++) {
      if (!vals[f][0])
        continue;
      ts_json_key(j, keys[f]);
      ts_json_string(j, vals[f]);
    }
    if (k->nlines > 0) {
      ts_json_key(j, "lines");
      ts_json_array_begin(j);
      for (int l = 0; l < k->nlines; l++)
        ts_json_string(j, snaps[i].lines[l]);
      ts_json_array_end(j);
    }
    ts_json_object_end(j);
    ts_json_object_end(j);
  }
  ts_json_array_end(j);
}

/* "grid": the bed's geometry, then the grid the solver computed on (ts_swe_grid_info): the
 * bed's uniform grid (one level of every cell, no blocks) or the quadtree's blocks and cells per
 * level, against the uniform grid of its finest cells; the bytes of the solver's arrays where the
 * solver tells them. */
static void write_summary_grid(ts_json *j, const swe_case *k, const ts_swe *s) {
  ts_swe_grid_stats g;
  memset(&g, 0, sizeof g);
  int buq = ts_swe_grid_info(s, &g);
  int64_t cells = (int64_t)k->bed.ncols * k->bed.nrows;
  int levels = buq ? g.levels : 1;
  if (levels > TS_BUQ_MAX_LEVELS)
    levels = TS_BUQ_MAX_LEVELS;
  ts_json_key(j, "grid");
  ts_json_object_begin(j);
  ts_json_key(j, "ncols"), ts_json_int(j, k->bed.ncols);
  ts_json_key(j, "nrows"), ts_json_int(j, k->bed.nrows);
  ts_json_key(j, "xll"), ts_json_number(j, k->bed.xll);
  ts_json_key(j, "yll"), ts_json_number(j, k->bed.yll);
  ts_json_key(j, "cellsize"), ts_json_number(j, k->bed.cellsize);
  ts_json_key(j, "type"), ts_json_string(j, buq ? "buq" : "uniform");
  ts_json_key(j, "block"), ts_json_int(j, buq ? g.block : 0);
  ts_json_key(j, "levels"), ts_json_int(j, levels);
  ts_json_key(j, "blocks_per_level");
  ts_json_array_begin(j);
  for (int l = 0; buq && l < levels; l++)
    ts_json_int(j, g.blocks_per_level[l]);
  ts_json_array_end(j);
  ts_json_key(j, "cells_per_level");
  ts_json_array_begin(j);
  for (int l = 0; l < levels; l++)
    ts_json_int(j, buq ? g.cells_per_level[l] : cells);
  ts_json_array_end(j);
  ts_json_key(j, "cells_uniform_finest"), ts_json_int(j, buq ? g.cells_uniform_finest : cells);
  ts_json_key(j, "cells"), ts_json_int(j, buq ? g.cells : cells);
  if (g.bytes > 0)
    ts_json_key(j, "memory_bytes"), ts_json_number(j, g.bytes);
  if (g.bytes_uniform_finest > 0)
    ts_json_key(j, "memory_bytes_uniform_finest"), ts_json_number(j, g.bytes_uniform_finest);
  ts_json_object_end(j);
}

/* Ranks, subdomains and how they were split, and the seconds each subdomain spent computing,
 * packing (and copying in-process), waiting and unpacking. */
/* "balance": how the work was shared and what the balancer did. imbalance: the largest compute
 * time of a subdomain over their mean (1: even), over the first and the last interval the
 * balancer measured, or over the run when it measured none. */
static void write_summary_balance(ts_json *j, const ts_swe *s, const ts_decomp *d,
                                  const ts_swe_params *p, const ts_swe_sub_stats *stats) {
  ts_swe_balance b;
  ts_swe_balance_get(s, &b);
  double largest = 0, sum = 0;
  for (int sub = 0; sub < d->count; sub++) {
    largest = fmax(largest, stats[sub].compute);
    sum += stats[sub].compute;
  }
  double imbalance = sum > 0 ? largest / (sum / d->count) : 1;
  const char *mode = b.mode == TS_BALANCE_STATIC    ? "static"
                     : b.mode == TS_BALANCE_DYNAMIC ? "dynamic"
                     : p->parallel.weights          ? "static"
                                                    : "off";
  ts_json_key(j, "balance");
  ts_json_object_begin(j);
  ts_json_key(j, "mode"), ts_json_string(j, mode);
  ts_json_key(j, "weights");
  ts_json_array_begin(j);
  for (int sub = 0; sub < d->count; sub++)
    ts_json_number(j, p->parallel.weights ? p->parallel.weights[sub] : 1.0);
  ts_json_array_end(j);
  ts_json_key(j, "rebalances"), ts_json_int(j, b.rebalances);
  ts_json_key(j, "moved_cells"), ts_json_int(j, b.moved_cells);
  ts_json_key(j, "move_seconds"), ts_json_number(j, b.move_seconds);
  ts_json_key(j, "imbalance_before");
  ts_json_number(j, b.imbalance_before > 0 ? b.imbalance_before : imbalance);
  ts_json_key(j, "imbalance_after");
  ts_json_number(j, b.imbalance_after > 0 ? b.imbalance_after : imbalance);
  ts_json_object_end(j);
}

/* "tuning": every decision on an `auto` knob (the knob, the simulated time, the choice, the
 * candidates with their measured seconds, or the rule that chose), and the seconds the probes
 * cost beyond the chosen settings and the boundary moves took. */
static void write_summary_tuning(ts_json *j, const ts_swe *s) {
  const ts_swe_decision *dec;
  double tuning_s;
  int n = ts_swe_tuning_get(s, &dec, &tuning_s);
  ts_swe_balance b;
  ts_swe_balance_get(s, &b);
  ts_json_key(j, "tuning");
  ts_json_object_begin(j);
  ts_json_key(j, "decisions");
  ts_json_array_begin(j);
  for (int k = 0; k < n; k++) {
    ts_json_object_begin(j);
    ts_json_key(j, "knob"), ts_json_string(j, dec[k].knob);
    ts_json_key(j, "t"), ts_json_number(j, dec[k].t);
    ts_json_key(j, "choice"), ts_json_string(j, dec[k].choice);
    ts_json_key(j, "candidates");
    ts_json_array_begin(j);
    for (int c = 0; c < dec[k].ncandidates; c++) {
      ts_json_object_begin(j);
      ts_json_key(j, "value"), ts_json_string(j, dec[k].candidates[c]);
      ts_json_key(j, "seconds"), ts_json_number(j, dec[k].seconds[c]);
      ts_json_object_end(j);
    }
    ts_json_array_end(j);
    ts_json_key(j, "reason"), ts_json_string(j, dec[k].reason);
    ts_json_object_end(j);
  }
  ts_json_array_end(j);
  ts_json_key(j, "tuning_seconds"), ts_json_number(j, tuning_s);
  ts_json_key(j, "moving_seconds"), ts_json_number(j, b.move_seconds);
  ts_json_object_end(j);
}

static void write_summary_parallel(ts_json *j, const ts_swe *s, const ts_swe_sub_stats *stats) {
  const ts_decomp *d = ts_swe_decomp(s);
  const ts_swe_params *p = ts_swe_get_params(s);
  ts_decomp_kind kind = p->parallel.decomposition;
  if (kind == TS_DECOMP_AUTO || kind == TS_DECOMP_TILES)
    kind = d->parts[0] == 1 ? TS_DECOMP_ROWS
                            : (d->parts[1] == 1 ? TS_DECOMP_COLUMNS : TS_DECOMP_TILES);
  ts_swe_grid_stats grid; /* a quadtree: its partitions, ranges of the Morton order */
  ts_swe_grid_info(s, &grid);
  int count = grid.partitions > 0 ? grid.partitions : d->count;
  ts_json_key(j, "ranks"), ts_json_int(j, ts_swe_ranks(s));
  ts_json_key(j, "subdomains"), ts_json_int(j, count);
  ts_json_key(j, "decomposition"),
      ts_json_string(j, count == 1            ? "none"
                        : grid.partitions > 0 ? "morton"
                                              : ts_decomp_kind_name(kind));
  ts_json_key(j, "decomposition_parts");
  ts_json_array_begin(j);
  ts_json_int(j, grid.partitions > 0 ? count : d->parts[0]);
  ts_json_int(j, grid.partitions > 0 ? 1 : d->parts[1]);
  ts_json_array_end(j);
  ts_json_key(j, "ghost_expansion"), ts_json_int(j, ts_swe_ghost_expansion(s));
  ts_json_key(j, "early_exit"), ts_json_bool(j, ts_swe_early_exit(s));
  ts_json_key(j, "overlap"), ts_json_bool(j, p->parallel.overlap);
  ts_json_key(j, "transport"), ts_json_string(j, ts_swe_transport(s));
  /* The GPUs used, one entry per rank and device, with its number of subdomains. */
  ts_json_key(j, "devices");
  ts_json_array_begin(j);
  for (int sub = 0; sub < d->count; sub++) {
    int first = stats[sub].device >= 0, count = 0;
    for (int o = 0; o < d->count; o++) {
      int same = stats[o].device == stats[sub].device && stats[o].rank == stats[sub].rank;
      first = first && !(same && o < sub);
      count += same;
    }
    if (!first)
      continue;
    ts_json_object_begin(j);
    ts_json_key(j, "rank"), ts_json_int(j, stats[sub].rank);
    ts_json_key(j, "device"), ts_json_int(j, stats[sub].device);
    ts_json_key(j, "subdomains"), ts_json_int(j, count);
    ts_json_object_end(j);
  }
  ts_json_array_end(j);
  write_summary_balance(j, s, d, p, stats);
  write_summary_tuning(j, s);
  ts_json_key(j, "subdomain_timings");
  ts_json_array_begin(j);
  for (int sub = 0; sub < d->count; sub++) {
    const ts_swe_sub_stats *t = &stats[sub];
    ts_json_object_begin(j);
    ts_json_key(j, "subdomain"), ts_json_int(j, sub);
    ts_json_key(j, "rank"), ts_json_int(j, t->rank);
    ts_json_key(j, "device"), ts_json_int(j, t->device);
    ts_json_key(j, "cells");
    ts_json_array_begin(j);
    ts_json_int(j, t->box.lo[0]), ts_json_int(j, t->box.hi[0]);
    ts_json_int(j, t->box.lo[1]), ts_json_int(j, t->box.hi[1]);
    ts_json_array_end(j);
    ts_json_key(j, "compute"), ts_json_number(j, t->compute);
    ts_json_key(j, "pack"), ts_json_number(j, t->pack);
    ts_json_key(j, "wait"), ts_json_number(j, t->wait);
    ts_json_key(j, "unpack"), ts_json_number(j, t->unpack);
    ts_json_object_end(j);
  }
  ts_json_array_end(j);
}

/* "volume_budget": every volume (m3) in and out since t = 0, and how well they close. */
static void write_summary_budget(ts_json *j, double initial, double final, const ts_swe_budget *b) {
  double in = initial + b->rain + b->inflow;
  double gap = in - b->outflow - b->losses - final;
  ts_json_key(j, "volume_budget");
  ts_json_object_begin(j);
  ts_json_key(j, "initial"), ts_json_number(j, initial);
  ts_json_key(j, "rain"), ts_json_number(j, b->rain);
  ts_json_key(j, "inflow"), ts_json_number(j, b->inflow);
  ts_json_key(j, "outflow"), ts_json_number(j, b->outflow);
  ts_json_key(j, "losses"), ts_json_number(j, b->losses);
  ts_json_key(j, "final"), ts_json_number(j, final);
  ts_json_key(j, "rel_error"), ts_json_number(j, gap / fmax(in, DBL_MIN));
  ts_json_object_end(j);
}

typedef struct run_totals {
  double wall, output, dt_min, dt_max, cells_steps; /* output: of wall, writing outputs */
  double finish; /* after the loop: the maxima, the gauges' files (summary.json's own not in) */
  double output_background; /* rank 0's writing of output times and checkpoints beside the steps */
  int64_t steps_run;
} run_totals;

/* end: how the run ended (TS_OK, TS_STOPPED or the failure, whose line is error); gauge_files:
 * the gauge files written (1: gauges.csv, 2: gauges.png, 4: gauges.nc); maxima are listed once all
 * are written. */
static ts_status write_summary(const swe_case *k, const ts_swe *s, const ts_case_options *opt,
                               const run_state *rs, const run_totals *tot,
                               const snapshot_files *snaps, int nsnaps, const map_files *maps,
                               int gauge_files, char (*checkpoints)[64], int nckpt, ts_status end,
                               const char *error) {
  /* Collective values first; then rank 0 writes. */
  double v_final = ts_swe_volume(s);
  int tx, ty;
  int64_t active_tiles;
  ts_swe_tiles(s, &tx, &ty, &active_tiles);
  int64_t wet_cells = ts_swe_wet_cells(s);
  const ts_decomp *d = ts_swe_decomp(s);
  ts_swe_sub_stats *stats = malloc(sizeof *stats * (size_t)d->count);
  if (!stats)
    return ts_error(TS_ERR_NOMEM, "out of memory");
  ts_swe_budget budget;
  ts_status st = ts_swe_stats(s, stats);
  if (st == TS_OK)
    st = ts_swe_budget_get(s, &budget);
  if (st != TS_OK || !k->root) {
    free(stats);
    return st;
  }
  char path[4096], tmp[4200];
  snprintf(path, sizeof path, "%s/summary.json", k->out_dir);
  FILE *f = ts_open_temp(path, tmp, sizeof tmp);
  if (!f) {
    free(stats);
    return ts_error(TS_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
  }
  ts_json j;
  ts_json_begin(&j, f);
  ts_json_key(&j, "model"), ts_json_string(&j, "swe");
  ts_json_key(&j, "version"), ts_json_string(&j, TESSERA_VERSION);
  ts_json_key(&j, "case"), ts_json_string(&j, opt->case_path);
  ts_stop_summary(&j, end, error, nckpt ? checkpoints[nckpt - 1] : NULL);
  ts_json_key(&j, "backend");
  ts_json_string(&j, ts_swe_backend(s) == TS_BACKEND_CUDA ? "cuda" : "cpu");
  ts_json_key(&j, "precision"), ts_json_string(&j, ts_precision_name(k->params.precision));
  ts_json_key(&j, "threads"), ts_json_int(&j, omp_get_max_threads());
  ts_json_key(&j, "cells"), ts_json_int(&j, (long long)k->bed.ncols * k->bed.nrows);
  ts_json_key(&j, "active_cells"), ts_json_int(&j, ts_swe_active_cells(s));
  write_summary_grid(&j, k, s);
  ts_json_key(&j, "crs");
  if (k->bed.crs) {
    char label[16384];
    ts_crs_label(k->bed.crs, label, sizeof label);
    ts_json_string(&j, label);
  } else {
    ts_json_null(&j);
  }
  ts_json_key(&j, "dx"), ts_json_number(&j, k->bed.cellsize);
  ts_json_key(&j, "steps"), ts_json_int(&j, ts_swe_steps(s));
  ts_json_key(&j, "t_end"), ts_json_number(&j, ts_swe_time(s));
  ts_json_key(&j, "wall_s"), ts_json_number(&j, tot->wall);
  ts_json_key(&j, "output_s"), ts_json_number(&j, tot->output);
  ts_json_key(&j, "output_background_s"), ts_json_number(&j, tot->output_background);
  ts_json_key(&j, "read_s"), ts_json_number(&j, k->read_s);
  ts_json_key(&j, "setup_s"), ts_json_number(&j, k->setup_s);
  ts_json_key(&j, "finish_s"), ts_json_number(&j, tot->finish);
  ts_json_key(&j, "mcells_per_s");
  ts_json_number(&j, tot->wall > 0 ? tot->cells_steps / tot->wall / 1e6 : 0);
  ts_json_key(&j, "dt_min"), ts_json_number(&j, tot->dt_min);
  ts_json_key(&j, "dt_max"), ts_json_number(&j, tot->dt_max);
  ts_json_key(&j, "mass_initial"), ts_json_number(&j, rs->volume_initial);
  ts_json_key(&j, "mass_final"), ts_json_number(&j, v_final);
  ts_json_key(&j, "mass_rel_error");
  ts_json_number(&j,
                 rs->volume_initial > 0 ? (v_final - rs->volume_initial) / rs->volume_initial : 0);
  write_summary_budget(&j, rs->volume_initial, v_final, &budget);
  ts_json_key(&j, "wet_cells"), ts_json_int(&j, wet_cells);
  ts_json_key(&j, "tiles"), ts_json_int(&j, (long long)tx * ty);
  ts_json_key(&j, "active_tiles"), ts_json_int(&j, active_tiles);
  ts_json_key(&j, "restart_from");
  if (opt->restart)
    ts_json_string(&j, opt->restart);
  else
    ts_json_null(&j);
  write_summary_snapshots(&j, k, snaps, nsnaps);
  ts_json_key(&j, "maxima");
  if (k->maxima && maps[0].asc[0]) {
    ts_json_object_begin(&j);
    for (int m = 0; m < NMAPS; m++) {
      ts_json_key(&j, map_outputs[m].key);
      ts_json_string(&j, maps[m].asc);
    }
    for (int m = 0; m < NMAPS; m++)
      if (maps[m].tif[0]) {
        ts_json_key(&j, map_outputs[m].tif_key);
        ts_json_string(&j, maps[m].tif);
      }
    ts_json_object_end(&j);
  } else {
    ts_json_null(&j);
  }
  ts_json_key(&j, "gauges");
  if (gauge_files & 1)
    ts_json_string(&j, "gauges.csv");
  else
    ts_json_null(&j);
  ts_json_key(&j, "gauges_png");
  if (gauge_files & 2)
    ts_json_string(&j, "gauges.png");
  else
    ts_json_null(&j);
  ts_json_key(&j, "netcdf");
  if (k->formats[FMT_NETCDF])
    ts_json_string(&j, run_netcdf_name);
  else
    ts_json_null(&j);
  ts_json_key(&j, "gauges_netcdf");
  if (gauge_files & 4)
    ts_json_string(&j, "gauges.nc");
  else
    ts_json_null(&j);
  ts_json_key(&j, "checkpoints");
  ts_json_array_begin(&j);
  for (int c = 0; c < nckpt; c++)
    ts_json_string(&j, checkpoints[c]);
  ts_json_array_end(&j);
  write_summary_parallel(&j, s, stats);
  free(stats);
  ts_json_end(&j);
  return ts_commit_temp(f, tmp, path);
}

/* The time loop from the solver's current state (t = 0 or a checkpoint), then the final
 * outputs. Steps are shortened only to land on output times and the end time, so a restarted
 * run takes the same steps as an uninterrupted one. A signal (stop.h) stops the loop after the
 * step or device batch in progress, at a step all ranks agree on; the state is saved in
 * checkpoint_stop.tsc, the outputs of the end are written at the time reached, and the result
 * is TS_STOPPED. A run that fails still writes summary.json if it can. */
static ts_status run_case(const swe_case *k, const ts_case_options *opt, ts_swe *s, run_state *rs,
                          gauge_log *log) {
  snapshot_files *snaps = calloc((size_t)k->nout, sizeof *snaps);
  int max_ckpt = k->checkpoint_interval > 0 ? (int)(k->t_end / k->checkpoint_interval) + 1 : 0;
  char(*checkpoints)[64] = calloc((size_t)max_ckpt + 1, 64);
  ts_status st = snaps && checkpoints ? TS_OK : ts_error(TS_ERR_NOMEM, "out of memory");
  output_writer out;
  ts_status made = output_writer_init(&out, k);
  if (st == TS_OK)
    st = made;
  if (st == TS_OK && k->has_gauges)
    st = ts_comm_agree(k->comm, ts_swe_watch(s, k->gauges.n, k->gauges.i, k->gauges.j));
  if (st == TS_OK && k->has_gauges && !opt->restart) {
    st = record_gauges(k, s, log, -1, ts_swe_time(s));
    rs->next_gauge = k->gauge_interval;
  }
  ts_netcdf_series *run_nc = NULL; /* swe.nc, on rank 0 */
  if (st == TS_OK && k->formats[FMT_NETCDF])
    st = create_run_netcdf(k, s, out.work[0],
                           !opt->restart               ? NAN
                           : rs->next_output < k->nout ? k->out_times[rs->next_output]
                                                       : INFINITY,
                           &run_nc);
  out.run_nc = run_nc;
  run_totals tot = {.dt_min = INFINITY, .dt_max = 0};
  ts_swe_run run;
  int nsnaps = 0, nckpt = 0, ckpt_started = 0;
  int tty = isatty(fileno(opt->progress));
  double start = wall_now(), last_print = start, t_start = ts_swe_time(s), dt = 0;
  int64_t active = ts_swe_active_cells(s);
  while (st == TS_OK && rs->next_output < k->nout && k->out_times[rs->next_output] <= t_start)
    st = output_start(&out, s, k->out_times[rs->next_output++], snaps, &nsnaps);
  int stopped = 0;
  while (st == TS_OK && ts_swe_time(s) < k->t_end &&
         (k->max_steps == 0 || ts_swe_steps(s) < k->max_steps)) {
    st = ts_stop_agree(k->comm, &stopped);
    if (st != TS_OK || stopped)
      break;
    /* Steps to the next output time, returning after a checkpoint time (several steps at once
     * where the GPU takes them without the host). */
    double target = rs->next_output < k->nout ? k->out_times[rs->next_output] : k->t_end;
    double stop = k->checkpoint_interval > 0 ? fmin(target, rs->next_checkpoint) : target;
    int most = TS_SWE_ADVANCE_MAX;
    if (k->max_steps > 0 && k->max_steps - ts_swe_steps(s) < most)
      most = (int)(k->max_steps - ts_swe_steps(s));
    st = ts_swe_advance(s, target, stop, most, &run);
    if (st != TS_OK)
      break;
    for (int q = 0; q < run.taken && st == TS_OK; q++) {
      double t_step = run.t[q];
      dt = run.dt[q];
      tot.steps_run++;
      tot.cells_steps += (double)active;
      tot.dt_min = fmin(tot.dt_min, dt);
      tot.dt_max = fmax(tot.dt_max, dt);
      if (k->has_gauges && t_step >= rs->next_gauge) {
        st = record_gauges(k, s, log, q, t_step);
        if (k->gauge_interval > 0) {
          double missed = floor((t_step - rs->next_gauge) / k->gauge_interval);
          rs->next_gauge += k->gauge_interval * (missed + 1);
          if (rs->next_gauge <= t_step)
            rs->next_gauge += k->gauge_interval;
        }
      }
    }
    double t = ts_swe_time(s), writing = wall_now();
    while (st == TS_OK && rs->next_output < k->nout && t >= k->out_times[rs->next_output])
      st = output_start(&out, s, k->out_times[rs->next_output++], snaps, &nsnaps);
    if (st == TS_OK && k->checkpoint_interval > 0 && t >= rs->next_checkpoint && t < k->t_end) {
      double tag = rs->next_checkpoint;
      while (rs->next_checkpoint <= t)
        rs->next_checkpoint += k->checkpoint_interval;
      if (ckpt_started < max_ckpt) {
        char text[32], name[64];
        time_tag(tag, text, sizeof text);
        snprintf(name, sizeof name, "checkpoint_%s.tsc", text);
        ckpt_started++;
        st = checkpoint_start(&out, s, rs, log, name, checkpoints, &nckpt);
      }
    }
    double now = wall_now();
    tot.output += now - writing;
    if (!opt->quiet && k->root && now - last_print > (tty ? 0.5 : 10.0)) {
      progress_line(opt->progress, tty, s, t_start, k->t_end, dt, now - start, tot.cells_steps);
      last_print = now;
    }
  }
  double waiting = wall_now();
  ts_status written = output_wait(&out);
  if (st == TS_OK)
    st = written;
  tot.output += wall_now() - waiting;
  tot.output_background = out.background;
  tot.wall = wall_now() - start;
  if (!opt->quiet && k->root && st == TS_OK) {
    progress_line(opt->progress, tty, s, t_start, k->t_end, dt, tot.wall, tot.cells_steps);
    if (tty)
      fputc('\n', opt->progress);
  }
  if (st == TS_OK && stopped) {
    st = checkpoint_start(&out, s, rs, log, "checkpoint_stop.tsc", checkpoints, &nckpt);
    if (st == TS_OK)
      st = output_wait(&out);
  }
  map_files maps[NMAPS];
  memset(maps, 0, sizeof maps);
  if (st == TS_OK && k->maxima) {
    st = write_maxima(k, s, out.maps, maps, run_nc);
    if (st != TS_OK)
      memset(maps, 0, sizeof maps); /* listed once all are written */
  }
  ts_status closed = ts_netcdf_series_close(run_nc);
  if (st == TS_OK)
    st = ts_comm_agree(k->comm, closed);
  int gauge_files = 0; /* written: 1 gauges.csv, 4 gauges.nc, 2 gauges.png */
  if (st == TS_OK && k->has_gauges) {
    /* rank 0 writes gauges.nc and gauges.png on threads of their own beside gauges.csv */
    gauge_job gj = {k, log};
    ts_job jobs[2];
    int flags[2] = {4, 2}, on[2] = {k->formats[FMT_NETCDF], k->formats[FMT_PNG]};
    ts_status (*writers[2])(void *) = {gauges_netcdf_job, gauges_png_job};
    for (int q = 0; q < 2; q++)
      if (on[q] && k->root)
        ts_job_start(&jobs[q], writers[q], &gj);
    ts_status g = k->root ? write_gauges(k, log) : TS_OK;
    gauge_files |= g == TS_OK;
    for (int q = 0; q < 2; q++)
      if (on[q] && k->root) {
        g = ts_job_finish(&jobs[q], g); /* the first failure (gauges.csv's, then in order) */
        gauge_files |= jobs[q].status == TS_OK ? flags[q] : 0;
      } else if (on[q]) {
        gauge_files |= flags[q];
      }
    st = ts_comm_agree(k->comm, g);
  }
  tot.finish = wall_now() - start - tot.wall;
  if (st == TS_OK) {
    st = ts_comm_agree(k->comm,
                       write_summary(k, s, opt, rs, &tot, snaps, nsnaps, maps, gauge_files,
                                     checkpoints, nckpt, stopped ? TS_STOPPED : TS_OK, NULL));
  } else if (snaps && checkpoints) {
    /* The failure's line goes to summary.json too; the failure stays the result. */
    char line[1024], message[1024];
    snprintf(message, sizeof message, "%s", ts_error_message());
    if (ts_stop_error_line(k->comm, st, line, sizeof line) == TS_OK)
      ts_comm_agree(k->comm, write_summary(k, s, opt, rs, &tot, snaps, nsnaps, maps, gauge_files,
                                           checkpoints, nckpt, st, line));
    ts_error(st, "%s", message);
  }
  if (st == TS_OK && stopped) {
    st = TS_STOPPED;
    if (k->root)
      fprintf(opt->progress,
              "tessera: stopped on a signal at t = %.17g s (step %lld); continue with --restart "
              "%s/checkpoint_stop.tsc\n",
              ts_swe_time(s), (long long)ts_swe_steps(s), k->out_dir);
  }
  output_writer_free(&out);
  free(snaps);
  free(checkpoints);
  return st;
}

/* Top of the PNG colour bar when [output] png_depth_max is 0: the largest depth at t = 0, or
 * 1 m when the domain starts dry. */
static ts_status automatic_png_depth_max(const ts_swe *s, double *depth_max) {
  const ts_grid *g = ts_swe_grid(s);
  size_t n = (size_t)g->n[0] * g->n[1];
  double *h = calloc(n, sizeof(double));
  if (!h)
    return ts_error(TS_ERR_NOMEM, "out of memory");
  ts_status st = ts_swe_get(s, TS_SWE_H, h); /* the whole grid on rank 0, which draws */
  double top = 0;
  for (size_t c = 0; c < n; c++)
    if (h[c] > top)
      top = h[c];
  free(h);
  *depth_max = top > 0 ? top : 1.0;
  return st;
}

ts_status ts_swe_case_run(const ts_case_options *opt) {
  swe_case k;
  memset(&k, 0, sizeof k);
  k.comm = ts_comm_world();
  k.root = ts_comm_rank(k.comm) == 0;
  ts_swe *s = NULL;
  double started = wall_now();
  ts_status st = ts_comm_agree(k.comm, read_case(&k, opt));
  if (st == TS_OK)
    st = ts_comm_agree(k.comm, ts_case_check_same(k.comm, opt));
  k.read_s = wall_now() - started;
  ts_gpu_warm_wait();
  if (st == TS_OK) {
    st = ts_swe_create(&s, &k.params, &k.bed, k.has_h0 ? &k.h0 : NULL, k.has_hu0 ? &k.hu0 : NULL,
                       k.has_hv0 ? &k.hv0 : NULL, k.has_friction ? &k.friction : NULL);
    if (st != TS_OK && st != TS_ERR_NOMEM && st != TS_ERR_PEER)
      st = ts_error(st, "%s: %s", opt->case_path, ts_error_message());
    /* The solver has read the wanted cell sizes: they are not kept. */
    ts_raster_free(&k.refine);
    k.params.grid.refine = NULL;
  }
  if (st == TS_OK && k.has_surface)
    st = ts_swe_set_surface(s, &k.surface);
  if (st == TS_OK && k.png_depth_max == 0)
    st = ts_comm_agree(k.comm, automatic_png_depth_max(s, &k.png_depth_max));
  run_state rs = {.next_checkpoint = k.checkpoint_interval};
  gauge_log log = {.width = 1 + 4 * (size_t)(k.has_gauges ? k.gauges.n : 0)};
  if (st == TS_OK)
    rs.volume_initial = ts_swe_volume(s);
  if (st == TS_OK && opt->restart)
    st = ts_comm_agree(k.comm, read_checkpoint(&k, opt->restart, s, &rs, &log));
  int lock = -1;
  if (st == TS_OK)
    st = ts_comm_agree(
        k.comm, k.root ? ts_case_prepare_out_dir(k.out_dir, opt->restart != NULL, &lock) : TS_OK);
  k.setup_s = wall_now() - started - k.read_s;
  if (st == TS_OK)
    st = run_case(&k, opt, s, &rs, &log);
  ts_case_release_out_dir(lock);
  free(log.rows);
  ts_swe_destroy(s);
  free_case(&k);
  return st;
}
