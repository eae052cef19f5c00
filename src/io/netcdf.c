/* NetCDF-4 (classic model) output following CF-1.8: one time step of cell-centred fields on a
 * regular 2D or 3D grid, with x/y[/z]/time coordinate variables and, when the CRS is known, the
 * grid mapping variable `crs` that holds its WKT; readable by QGIS, xarray, ParaView and ncview.
 * Also a quadtree grid's leaf cells as one such 2D grid per level. */
#include "tessera/buq.h"
#include "tessera/io.h"

#include <math.h>
#include <netcdf.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Runs a NetCDF call; on failure records the error ("cannot read" or "cannot write") and jumps
 * to the function's cleanup. */
#define NC_DO(call, verb)                                                                          \
  do {                                                                                             \
    int nc_result_ = (call);                                                                       \
    if (nc_result_ != NC_NOERR) {                                                                  \
      status =                                                                                     \
          ts_error(TS_ERR_IO, "%s: cannot " verb " NetCDF: %s", path, nc_strerror(nc_result_));    \
      goto cleanup;                                                                                \
    }                                                                                              \
  } while (0)
#define NC_CHECK(call) NC_DO(call, "write")
#define NC_READ(call) NC_DO(call, "read")

static int put_text(int ncid, int varid, const char *name, const char *text) {
  return nc_put_att_text(ncid, varid, name, strlen(text), text);
}

/* Closes the file being written at tmp_path (ncid; -1: not open; tmp_path empty: none made) and
 * commits it to path when all went well (status), else removes it. Returns the status. */
static ts_status finish_file(int ncid, const char *tmp_path, const char *path, ts_status status) {
  int closed = ncid >= 0 ? nc_close(ncid) : NC_NOERR;
  if (status == TS_OK && closed != NC_NOERR)
    status = ts_error(TS_ERR_IO, "%s: cannot write NetCDF: %s", path, nc_strerror(closed));
  if (status == TS_OK)
    return ts_commit_temp_file(tmp_path, path);
  if (tmp_path[0])
    remove(tmp_path);
  return status;
}

ts_status ts_netcdf_write_grid(const char *path, const ts_grid *grid, const char *crs,
                               const char *title, double time, int nvars, const ts_out_var *vars) {
  ts_status status = TS_OK;
  char tmp_path[4200] = "";
  int ncid = -1, dims[4], var_time, var_axis[3], var_crs, three = grid->dim == 3;
  size_t n[3] = {(size_t)grid->n[0], (size_t)grid->n[1], three ? (size_t)grid->n[2] : 1};
  size_t cells = n[0] * n[1] * n[2], longest = n[0] > n[1] ? n[0] : n[1];
  double *coordinate = NULL;
  float *values = NULL;
  int *var_ids = NULL;
  coordinate = malloc((longest > n[2] ? longest : n[2]) * sizeof *coordinate);
  values = malloc(cells * sizeof *values);
  var_ids = malloc((size_t)(nvars > 0 ? nvars : 1) * sizeof *var_ids);
  if (!coordinate || !values || !var_ids) {
    status = ts_error(TS_ERR_NOMEM, "%s: out of memory", path);
    goto cleanup;
  }
  if (ts_make_temp(path, tmp_path, sizeof tmp_path) != TS_OK) {
    status = TS_ERR_IO;
    goto cleanup;
  }
  NC_CHECK(nc_create(tmp_path, NC_CLOBBER | NC_NETCDF4 | NC_CLASSIC_MODEL, &ncid));
  NC_CHECK(put_text(ncid, NC_GLOBAL, "Conventions", "CF-1.8"));
  NC_CHECK(put_text(ncid, NC_GLOBAL, "title", title));
  NC_CHECK(put_text(ncid, NC_GLOBAL, "source", "tessera"));
  /* dimensions time, [z,] y, x: x varies fastest, as the values are stored */
  static const char *const names[3] = {"x", "y", "z"};
  static const char *const standard[3] = {"projection_x_coordinate", "projection_y_coordinate",
                                          NULL};
  static const char *const long_names[3] = {
      "x coordinate of cell centre", "y coordinate of cell centre", "z coordinate of cell centre"};
  static const char *const axes[3] = {"X", "Y", "Z"};
  int ndims = 1 + (three ? 3 : 2);
  NC_CHECK(nc_def_dim(ncid, "time", 1, &dims[0]));
  for (int d = 1; d < ndims; d++) {
    int a = ndims - 1 - d; /* z (3D), y, x */
    NC_CHECK(nc_def_dim(ncid, names[a], n[a], &dims[d]));
  }
  NC_CHECK(nc_def_var(ncid, "time", NC_DOUBLE, 1, &dims[0], &var_time));
  NC_CHECK(put_text(ncid, var_time, "units", "s"));
  NC_CHECK(put_text(ncid, var_time, "long_name", "time since the start of the simulation"));
  NC_CHECK(put_text(ncid, var_time, "axis", "T"));
  for (int d = 1; d < ndims; d++) {
    int a = ndims - 1 - d;
    NC_CHECK(nc_def_var(ncid, names[a], NC_DOUBLE, 1, &dims[d], &var_axis[a]));
    NC_CHECK(put_text(ncid, var_axis[a], "units", "m"));
    if (standard[a])
      NC_CHECK(put_text(ncid, var_axis[a], "standard_name", standard[a]));
    NC_CHECK(put_text(ncid, var_axis[a], "long_name", long_names[a]));
    NC_CHECK(put_text(ncid, var_axis[a], "axis", axes[a]));
  }
  if (crs) { /* CF-1.8 grid mapping with the WKT, as GDAL and QGIS read it */
    NC_CHECK(nc_def_var(ncid, "crs", NC_INT, 0, NULL, &var_crs));
    NC_CHECK(put_text(ncid, var_crs, "crs_wkt", crs));
    NC_CHECK(put_text(ncid, var_crs, "spatial_ref", crs));
  }

  float fill = NC_FILL_FLOAT;
  for (int k = 0; k < nvars; k++) {
    NC_CHECK(nc_def_var(ncid, vars[k].name, NC_FLOAT, ndims, dims, &var_ids[k]));
    NC_CHECK(nc_def_var_deflate(ncid, var_ids[k], 1, 1, 1));
    NC_CHECK(put_text(ncid, var_ids[k], "units", vars[k].units));
    NC_CHECK(put_text(ncid, var_ids[k], "long_name", vars[k].long_name));
    NC_CHECK(nc_put_att_float(ncid, var_ids[k], "_FillValue", NC_FLOAT, 1, &fill));
    if (crs)
      NC_CHECK(put_text(ncid, var_ids[k], "grid_mapping", "crs"));
  }
  NC_CHECK(nc_enddef(ncid));

  NC_CHECK(nc_put_var_double(ncid, var_time, &time));
  for (int a = 0; a < ndims - 1; a++) {
    for (size_t i = 0; i < n[a]; i++)
      coordinate[i] = grid->origin[a] + ((double)i + 0.5) * grid->dx[a];
    NC_CHECK(nc_put_var_double(ncid, var_axis[a], coordinate));
  }
  for (int k = 0; k < nvars; k++) {
    for (size_t c = 0; c < cells; c++)
      values[c] = isfinite(vars[k].v[c]) ? (float)vars[k].v[c] : fill;
    NC_CHECK(nc_put_var_float(ncid, var_ids[k], values));
  }

cleanup:
  status = finish_file(ncid, tmp_path, path, status);
  free(coordinate);
  free(values);
  free(var_ids);
  return status;
}

ts_status ts_netcdf_write(const char *path, const ts_raster *geom, double time, int nvars,
                          const ts_out_var *vars) {
  ts_grid grid = ts_grid_2d(geom->ncols, geom->nrows, geom->cellsize, geom->xll, geom->yll);
  return ts_netcdf_write_grid(path, &grid, geom->crs, "Tessera shallow-water output", time, nvars,
                              vars);
}

/* The coordinate variable `name` on dimension `dim`: cell centres (m) along x (x = 1) or y. */
static int def_axis(int ncid, const char *name, int dim, int x, int *var) {
  const char *attributes[4][2] = {
      {"units", "m"},
      {"standard_name", x ? "projection_x_coordinate" : "projection_y_coordinate"},
      {"long_name", x ? "x coordinate of cell centre" : "y coordinate of cell centre"},
      {"axis", x ? "X" : "Y"}};
  int result = nc_def_var(ncid, name, NC_DOUBLE, 1, &dim, var);
  for (int a = 0; a < 4 && result == NC_NOERR; a++)
    result = put_text(ncid, *var, attributes[a][0], attributes[a][1]);
  return result;
}

ts_status ts_netcdf_write_levels(const char *path, const ts_raster *geom, int levels, int block,
                                 double time, const ts_out_squares *sq, int nvars,
                                 const ts_out_var *vars) {
  ts_status status = TS_OK;
  char tmp_path[4200] = "", name[NC_MAX_NAME + 1];
  int ncid = -1, dims[TS_BUQ_MAX_LEVELS][2], var_x[TS_BUQ_MAX_LEVELS], var_y[TS_BUQ_MAX_LEVELS];
  int var_crs, *var_ids = NULL;
  size_t nx[TS_BUQ_MAX_LEVELS], ny[TS_BUQ_MAX_LEVELS], first[TS_BUQ_MAX_LEVELS + 1] = {0};
  size_t *place = NULL; /* each leaf's index in `values` (SIZE_MAX: outside the grid) */
  double *values = NULL, *coordinate = NULL;
  if (levels < 1 || levels > TS_BUQ_MAX_LEVELS)
    return ts_error(TS_ERR_INPUT, "%s: %d levels: must be 1 to %d", path, levels,
                    TS_BUQ_MAX_LEVELS);
  /* level l's cells, 2^l bed cells wide, one after another in `values` */
  for (int l = 0; l < levels; l++) {
    nx[l] = ((size_t)geom->ncols + ((size_t)1 << l) - 1) >> l;
    ny[l] = ((size_t)geom->nrows + ((size_t)1 << l) - 1) >> l;
    first[l + 1] = first[l] + nx[l] * ny[l];
  }
  place = malloc(((size_t)sq->n + 1) * sizeof *place);
  values = malloc(first[levels] * sizeof *values);
  coordinate = malloc((nx[0] > ny[0] ? nx[0] : ny[0]) * sizeof *coordinate);
  var_ids = malloc((size_t)(nvars > 0 ? nvars : 1) * levels * sizeof *var_ids);
  if (!place || !values || !coordinate || !var_ids) {
    status = ts_error(TS_ERR_NOMEM, "%s: out of memory", path);
    goto cleanup;
  }
  for (int64_t c = 0; c < sq->n; c++) {
    int l = sq->level[c], i0 = sq->i0[c], j0 = sq->j0[c];
    if (l < 0 || l >= levels || sq->width[c] != 1 << l || i0 < 0 || j0 < 0 ||
        i0 % sq->width[c] != 0 || j0 % sq->width[c] != 0) {
      status = ts_error(TS_ERR_INPUT,
                        "%s: leaf cell %lld (at %d, %d, %d wide, level %d) is not a cell of "
                        "level 0 to %d",
                        path, (long long)c, i0, j0, sq->width[c], l, levels - 1);
      goto cleanup;
    }
    size_t i = (size_t)i0 >> l, j = (size_t)j0 >> l;
    place[c] = i < nx[l] && j < ny[l] ? first[l] + i + j * nx[l] : SIZE_MAX; /* a block's padding */
  }

  if (ts_make_temp(path, tmp_path, sizeof tmp_path) != TS_OK) {
    status = TS_ERR_IO;
    goto cleanup;
  }
  NC_CHECK(nc_create(tmp_path, NC_CLOBBER | NC_NETCDF4 | NC_CLASSIC_MODEL, &ncid));
  NC_CHECK(put_text(ncid, NC_GLOBAL, "Conventions", "CF-1.8"));
  NC_CHECK(put_text(ncid, NC_GLOBAL, "title", "Tessera quadtree cells"));
  NC_CHECK(put_text(ncid, NC_GLOBAL, "source", "tessera"));
  NC_CHECK(nc_put_att_double(ncid, NC_GLOBAL, "time", NC_DOUBLE, 1, &time));
  NC_CHECK(nc_put_att_int(ncid, NC_GLOBAL, "levels", NC_INT, 1, &levels));
  NC_CHECK(nc_put_att_int(ncid, NC_GLOBAL, "block", NC_INT, 1, &block));
  if (geom->crs) { /* CF-1.8 grid mapping with the WKT, as in ts_netcdf_write_grid */
    NC_CHECK(nc_def_var(ncid, "crs", NC_INT, 0, NULL, &var_crs));
    NC_CHECK(put_text(ncid, var_crs, "crs_wkt", geom->crs));
    NC_CHECK(put_text(ncid, var_crs, "spatial_ref", geom->crs));
  }
  double fill = NAN;
  for (int l = 0; l < levels; l++) {
    snprintf(name, sizeof name, "y_%d", l);
    NC_CHECK(nc_def_dim(ncid, name, ny[l], &dims[l][0]));
    NC_CHECK(def_axis(ncid, name, dims[l][0], 0, &var_y[l]));
    snprintf(name, sizeof name, "x_%d", l);
    NC_CHECK(nc_def_dim(ncid, name, nx[l], &dims[l][1]));
    NC_CHECK(def_axis(ncid, name, dims[l][1], 1, &var_x[l]));
    for (int k = 0; k < nvars; k++) {
      int *var = &var_ids[k * levels + l];
      snprintf(name, sizeof name, "%s_%d", vars[k].name, l);
      NC_CHECK(nc_def_var(ncid, name, NC_DOUBLE, 2, dims[l], var));
      NC_CHECK(nc_def_var_deflate(ncid, *var, 1, 1, 1));
      NC_CHECK(put_text(ncid, *var, "units", vars[k].units));
      NC_CHECK(put_text(ncid, *var, "long_name", vars[k].long_name));
      NC_CHECK(nc_put_att_double(ncid, *var, "_FillValue", NC_DOUBLE, 1, &fill));
      if (geom->crs)
        NC_CHECK(put_text(ncid, *var, "grid_mapping", "crs"));
    }
  }
  NC_CHECK(nc_enddef(ncid));

  for (int l = 0; l < levels; l++) {
    double step = ldexp(geom->cellsize, l);
    for (size_t i = 0; i < nx[l]; i++)
      coordinate[i] = geom->xll + ((double)i + 0.5) * step;
    NC_CHECK(nc_put_var_double(ncid, var_x[l], coordinate));
    for (size_t j = 0; j < ny[l]; j++)
      coordinate[j] = geom->yll + ((double)j + 0.5) * step;
    NC_CHECK(nc_put_var_double(ncid, var_y[l], coordinate));
  }
  for (int k = 0; k < nvars; k++) {
    for (size_t c = 0; c < first[levels]; c++)
      values[c] = fill;
    for (int64_t c = 0; c < sq->n; c++)
      if (place[c] != SIZE_MAX)
        values[place[c]] = vars[k].v[c];
    for (int l = 0; l < levels; l++)
      NC_CHECK(nc_put_var_double(ncid, var_ids[k * levels + l], values + first[l]));
  }

cleanup:
  status = finish_file(ncid, tmp_path, path, status);
  free(place);
  free(values);
  free(coordinate);
  free(var_ids);
  return status;
}

ts_status ts_netcdf_read_grid(const char *path, const char *name, const int n[3], double *out) {
  ts_status status = TS_OK;
  int ncid = -1, var = -1, nvars = 0, ndims = 0, dims[NC_MAX_VAR_DIMS];
  NC_READ(nc_open(path, NC_NOWRITE, &ncid));
  if (name) {
    if (nc_inq_varid(ncid, name, &var) != NC_NOERR) {
      status = ts_error(TS_ERR_INPUT, "%s: no variable '%s'", path, name);
      goto cleanup;
    }
  } else { /* the one variable with 3 dimensions (or 4 with a time of length 1) */
    NC_READ(nc_inq_nvars(ncid, &nvars));
    for (int v = 0; v < nvars; v++) {
      NC_READ(nc_inq_varndims(ncid, v, &ndims));
      if (ndims < 3 || ndims > 4)
        continue;
      if (var >= 0) {
        status =
            ts_error(TS_ERR_INPUT, "%s: several 3D variables: name one as FILE:VARIABLE", path);
        goto cleanup;
      }
      var = v;
    }
    if (var < 0) {
      status = ts_error(TS_ERR_INPUT, "%s: no 3D variable (z, y, x)", path);
      goto cleanup;
    }
  }
  NC_READ(nc_inq_varndims(ncid, var, &ndims));
  NC_READ(nc_inq_vardimid(ncid, var, dims));
  size_t len[4] = {1, 1, 1, 1};
  for (int d = 0; d < ndims && d < 4; d++)
    NC_READ(nc_inq_dimlen(ncid, dims[d], &len[d]));
  int lead = ndims - 3; /* a time of length 1 before z, y, x */
  if (ndims < 3 || ndims > 4 || (lead == 1 && len[0] != 1) || len[lead] != (size_t)n[2] ||
      len[lead + 1] != (size_t)n[1] || len[lead + 2] != (size_t)n[0]) {
    status =
        ts_error(TS_ERR_INPUT, "%s: the variable must be %d (z) x %d (y) x %d (x) cells, x fastest",
                 path, n[2], n[1], n[0]);
    goto cleanup;
  }
  NC_READ(nc_get_var_double(ncid, var, out));
  double fill;
  int has_fill = nc_get_att_double(ncid, var, "_FillValue", &fill) == NC_NOERR;
  for (size_t c = 0; c < (size_t)n[0] * n[1] * n[2]; c++)
    if (!isfinite(out[c]) || (has_fill && out[c] == fill)) {
      status = ts_error(TS_ERR_INPUT, "%s: missing value at cell %zu", path, c);
      goto cleanup;
    }
cleanup:
  if (ncid >= 0)
    nc_close(ncid);
  return status;
}

/* ------------------------------------------------------------------ one file per run */

struct ts_netcdf_series {
  char *path;
  int ncid, use_double, nvars, nmaps, ndims;
  int var_time, *var_ids, *map_ids; /* the time-varying variables, then the time-less maps */
  size_t count[4], cells;           /* one time slice: 1, [nz,] ny, nx */
  size_t times;                     /* time steps written */
  void *buffer;                     /* one slice in the file's type */
};

/* The grid mapping variable `crs` holding the WKT in crs_wkt and spatial_ref (CF-1.8, as GDAL
 * and QGIS read it). */
static int def_crs(int ncid, const char *crs) {
  int var, result = nc_def_var(ncid, "crs", NC_INT, 0, NULL, &var);
  if (result == NC_NOERR)
    result = put_text(ncid, var, "crs_wkt", crs);
  return result == NC_NOERR ? put_text(ncid, var, "spatial_ref", crs) : result;
}

/* Defines data variable `v` on dims (ndims of them), chunked as `chunks`, DEFLATE level 1 with
 * shuffle (level 4 made Malpasset's swe.nc 6 % smaller and its writing the slowest of an output
 * time's writers), with units, long_name, _FillValue and grid_mapping (when crs). */
static int def_data(int ncid, const ts_out_var *v, int use_double, int ndims, const int *dims,
                    const size_t *chunks, int crs, int *var) {
  float fill_float = NC_FILL_FLOAT;
  double fill_double = NC_FILL_DOUBLE;
  int result = nc_def_var(ncid, v->name, use_double ? NC_DOUBLE : NC_FLOAT, ndims, dims, var);
  if (result == NC_NOERR)
    result = nc_def_var_chunking(ncid, *var, NC_CHUNKED, chunks);
  if (result == NC_NOERR)
    result = nc_def_var_deflate(ncid, *var, 1, 1, 1);
  if (result == NC_NOERR)
    result = put_text(ncid, *var, "units", v->units);
  if (result == NC_NOERR)
    result = put_text(ncid, *var, "long_name", v->long_name);
  if (result == NC_NOERR)
    result = use_double ? nc_put_att_double(ncid, *var, "_FillValue", NC_DOUBLE, 1, &fill_double)
                        : nc_put_att_float(ncid, *var, "_FillValue", NC_FLOAT, 1, &fill_float);
  if (result == NC_NOERR && crs)
    result = put_text(ncid, *var, "grid_mapping", "crs");
  return result;
}

/* A series of the layout's shape with nothing open (NULL when out of memory). */
static ts_netcdf_series *series_new(const char *path, const ts_netcdf_layout *layout) {
  const ts_grid *grid = layout->grid;
  int three = grid->dim == 3;
  ts_netcdf_series *s = calloc(1, sizeof *s);
  if (!s)
    return NULL;
  s->ncid = -1;
  s->use_double = layout->use_double;
  s->nvars = layout->nvars;
  s->nmaps = layout->nmaps;
  s->ndims = 1 + (three ? 3 : 2);
  s->count[0] = 1;
  for (int d = 1; d < s->ndims; d++)
    s->count[d] = (size_t)grid->n[s->ndims - 1 - d]; /* z (3D), y, x */
  s->cells = (size_t)grid->n[0] * (size_t)grid->n[1] * (three ? (size_t)grid->n[2] : 1);
  s->path = malloc(strlen(path) + 1);
  s->var_ids = malloc((size_t)(s->nvars + s->nmaps + 1) * sizeof *s->var_ids);
  s->buffer = malloc(s->cells * (s->use_double ? sizeof(double) : sizeof(float)));
  if (!s->path || !s->var_ids || !s->buffer) {
    ts_netcdf_series_close(s);
    return NULL;
  }
  strcpy(s->path, path);
  s->map_ids = s->var_ids + s->nvars;
  return s;
}

ts_status ts_netcdf_series_create(ts_netcdf_series **out, const char *path,
                                  const ts_netcdf_layout *layout) {
  ts_status status = TS_OK;
  const ts_grid *grid = layout->grid;
  int three = grid->dim == 3, dims[4];
  size_t n[3] = {(size_t)grid->n[0], (size_t)grid->n[1], three ? (size_t)grid->n[2] : 1};
  size_t longest = n[0] > n[1] ? n[0] : n[1];
  double *coordinate = NULL;
  ts_netcdf_series *s = series_new(path, layout);
  *out = NULL;
  if (!s)
    return ts_error(TS_ERR_NOMEM, "%s: out of memory", path);
  coordinate = malloc((longest > n[2] ? longest : n[2]) * sizeof *coordinate);
  if (!coordinate) {
    status = ts_error(TS_ERR_NOMEM, "%s: out of memory", path);
    goto cleanup;
  }
  NC_CHECK(nc_create(path, NC_CLOBBER | NC_NETCDF4 | NC_CLASSIC_MODEL, &s->ncid));
  int ncid = s->ncid;
  NC_CHECK(put_text(ncid, NC_GLOBAL, "Conventions", "CF-1.8"));
  NC_CHECK(put_text(ncid, NC_GLOBAL, "title", layout->title));
  NC_CHECK(put_text(ncid, NC_GLOBAL, "source", "tessera"));
  /* dimensions time (unlimited), [z,] y, x: x varies fastest, as the values are stored */
  static const char *const names[3] = {"x", "y", "z"};
  static const char *const long_names[3] = {
      "x coordinate of cell centre", "y coordinate of cell centre", "z coordinate of cell centre"};
  static const char *const standard[3] = {"projection_x_coordinate", "projection_y_coordinate",
                                          NULL};
  static const char *const axes[3] = {"X", "Y", "Z"};
  int var_axis[3];
  NC_CHECK(nc_def_dim(ncid, "time", NC_UNLIMITED, &dims[0]));
  for (int d = 1; d < s->ndims; d++) {
    int a = s->ndims - 1 - d; /* z (3D), y, x */
    NC_CHECK(nc_def_dim(ncid, names[a], n[a], &dims[d]));
  }
  NC_CHECK(nc_def_var(ncid, "time", NC_DOUBLE, 1, &dims[0], &s->var_time));
  NC_CHECK(put_text(ncid, s->var_time, "units", layout->time_units));
  NC_CHECK(put_text(ncid, s->var_time, "long_name", layout->time_long_name));
  if (layout->time_standard)
    NC_CHECK(put_text(ncid, s->var_time, "standard_name", "time"));
  NC_CHECK(put_text(ncid, s->var_time, "axis", "T"));
  for (int d = 1; d < s->ndims; d++) {
    int a = s->ndims - 1 - d;
    NC_CHECK(nc_def_var(ncid, names[a], NC_DOUBLE, 1, &dims[d], &var_axis[a]));
    NC_CHECK(put_text(ncid, var_axis[a], "units", layout->length_units));
    if (standard[a])
      NC_CHECK(put_text(ncid, var_axis[a], "standard_name", standard[a]));
    NC_CHECK(put_text(ncid, var_axis[a], "long_name", long_names[a]));
    NC_CHECK(put_text(ncid, var_axis[a], "axis", axes[a]));
  }
  if (layout->crs)
    NC_CHECK(def_crs(ncid, layout->crs));
  for (int k = 0; k < s->nvars; k++) /* one time slice per chunk */
    NC_CHECK(def_data(ncid, &layout->vars[k], s->use_double, s->ndims, dims, s->count,
                      layout->crs != NULL, &s->var_ids[k]));
  for (int k = 0; k < s->nmaps; k++)
    NC_CHECK(def_data(ncid, &layout->maps[k], s->use_double, s->ndims - 1, dims + 1, s->count + 1,
                      layout->crs != NULL, &s->map_ids[k]));
  NC_CHECK(nc_enddef(ncid));
  for (int a = 0; a < s->ndims - 1; a++) {
    for (size_t i = 0; i < n[a]; i++)
      coordinate[i] = grid->origin[a] + ((double)i + 0.5) * grid->dx[a];
    NC_CHECK(nc_put_var_double(ncid, var_axis[a], coordinate));
  }
  NC_CHECK(nc_sync(ncid));

cleanup:
  free(coordinate);
  if (status == TS_OK) {
    *out = s;
  } else {
    int created = s->ncid >= 0;
    ts_netcdf_series_close(s);
    if (created)
      remove(path);
  }
  return status;
}

/* Opens s->path for writing when it holds a series of s's shape and the layout's variables, with
 * its time steps before keep_before kept (s->times); 0 when it does not (nothing left open). */
static int reopen(ts_netcdf_series *s, const ts_netcdf_layout *layout, double keep_before) {
  static const char *const names[3] = {"x", "y", "z"};
  int ncid, dim, ok;
  size_t len, times = 0;
  nc_type type;
  if (nc_open(s->path, NC_WRITE, &ncid) != NC_NOERR)
    return 0;
  ok = nc_inq_dimid(ncid, "time", &dim) == NC_NOERR &&
       nc_inq_dimlen(ncid, dim, &times) == NC_NOERR &&
       nc_inq_varid(ncid, "time", &s->var_time) == NC_NOERR;
  for (int d = 1; d < s->ndims && ok; d++)
    ok = nc_inq_dimid(ncid, names[s->ndims - 1 - d], &dim) == NC_NOERR &&
         nc_inq_dimlen(ncid, dim, &len) == NC_NOERR && len == s->count[d];
  for (int k = 0; k < s->nvars + s->nmaps && ok; k++) {
    const ts_out_var *v = k < s->nvars ? &layout->vars[k] : &layout->maps[k - s->nvars];
    ok = nc_inq_varid(ncid, v->name, &s->var_ids[k]) == NC_NOERR &&
         nc_inq_vartype(ncid, s->var_ids[k], &type) == NC_NOERR &&
         type == (s->use_double ? NC_DOUBLE : NC_FLOAT);
  }
  for (s->times = 0; ok && s->times < times; s->times++) {
    double t = INFINITY;
    ok = nc_get_var1_double(ncid, s->var_time, &s->times, &t) == NC_NOERR;
    if (!ok || !(t < keep_before))
      break;
  }
  if (!ok)
    nc_close(ncid);
  else
    s->ncid = ncid;
  return ok;
}

ts_status ts_netcdf_series_continue(ts_netcdf_series **out, const char *path,
                                    const ts_netcdf_layout *layout, double keep_before) {
  ts_netcdf_series *s = series_new(path, layout);
  *out = NULL;
  if (!s)
    return ts_error(TS_ERR_NOMEM, "%s: out of memory", path);
  if (reopen(s, layout, keep_before)) {
    *out = s;
    return TS_OK;
  }
  ts_netcdf_series_close(s);
  return ts_netcdf_series_create(out, path, layout);
}

/* Writes v's values (NaN: the fill value) at start[] with count[] (the file's slice shape). */
static int put_slice(ts_netcdf_series *s, int var, const double *v, const size_t *start,
                     const size_t *count) {
  if (s->use_double) {
    double *b = s->buffer;
    for (size_t c = 0; c < s->cells; c++)
      b[c] = isfinite(v[c]) ? v[c] : NC_FILL_DOUBLE;
    return nc_put_vara_double(s->ncid, var, start, count, b);
  }
  float *b = s->buffer;
  for (size_t c = 0; c < s->cells; c++)
    b[c] = isfinite(v[c]) ? (float)v[c] : NC_FILL_FLOAT;
  return nc_put_vara_float(s->ncid, var, start, count, b);
}

ts_status ts_netcdf_series_append(ts_netcdf_series *s, double time, const ts_out_var *vars) {
  ts_status status = TS_OK;
  const char *path = s->path;
  size_t start[4] = {s->times, 0, 0, 0}, one = 1;
  for (int k = 0; k < s->nvars; k++)
    NC_CHECK(put_slice(s, s->var_ids[k], vars[k].v, start, s->count));
  NC_CHECK(nc_put_vara_double(s->ncid, s->var_time, start, &one, &time));
  NC_CHECK(nc_sync(s->ncid));
  s->times++;
cleanup:
  return status;
}

ts_status ts_netcdf_series_put_map(ts_netcdf_series *s, int map, const double *v) {
  ts_status status = TS_OK;
  const char *path = s->path;
  size_t start[3] = {0, 0, 0};
  NC_CHECK(put_slice(s, s->map_ids[map], v, start, s->count + 1));
cleanup:
  return status;
}

ts_status ts_netcdf_series_sync(ts_netcdf_series *s) {
  ts_status status = TS_OK;
  const char *path = s->path;
  NC_CHECK(nc_sync(s->ncid));
cleanup:
  return status;
}

ts_status ts_netcdf_series_close(ts_netcdf_series *s) {
  if (!s)
    return TS_OK;
  ts_status status = TS_OK;
  int closed = s->ncid >= 0 ? nc_close(s->ncid) : NC_NOERR;
  if (closed != NC_NOERR)
    status = ts_error(TS_ERR_IO, "%s: cannot write NetCDF: %s", s->path, nc_strerror(closed));
  free(s->path);
  free(s->var_ids);
  free(s->buffer);
  free(s);
  return status;
}

ts_status ts_netcdf_write_stations(const char *path, const char *crs, const char *time_units,
                                   int nstations, char *const *names, const double *x,
                                   const double *y, size_t ntimes, const double *times, int nvars,
                                   const ts_out_var *vars) {
  ts_status status = TS_OK;
  char tmp_path[4200] = "";
  int ncid = -1, dim_station, dim_time, dim_name, dims[2], var_name, var_x, var_y, var_time;
  int *var_ids = NULL;
  size_t longest = 1;
  char *text = NULL;
  for (int g = 0; g < nstations; g++)
    if (strlen(names[g]) > longest)
      longest = strlen(names[g]);
  text = calloc((size_t)(nstations > 0 ? nstations : 1) * longest, 1);
  var_ids = malloc((size_t)(nvars > 0 ? nvars : 1) * sizeof *var_ids);
  if (!text || !var_ids) {
    status = ts_error(TS_ERR_NOMEM, "%s: out of memory", path);
    goto cleanup;
  }
  for (int g = 0; g < nstations; g++)
    memcpy(text + (size_t)g * longest, names[g], strlen(names[g]));
  if (ts_make_temp(path, tmp_path, sizeof tmp_path) != TS_OK) {
    status = TS_ERR_IO;
    goto cleanup;
  }
  NC_CHECK(nc_create(tmp_path, NC_CLOBBER | NC_NETCDF4 | NC_CLASSIC_MODEL, &ncid));
  NC_CHECK(put_text(ncid, NC_GLOBAL, "Conventions", "CF-1.8"));
  NC_CHECK(put_text(ncid, NC_GLOBAL, "featureType", "timeSeries"));
  NC_CHECK(put_text(ncid, NC_GLOBAL, "title", "Tessera gauges"));
  NC_CHECK(put_text(ncid, NC_GLOBAL, "source", "tessera"));
  NC_CHECK(nc_def_dim(ncid, "station", (size_t)nstations, &dim_station));
  NC_CHECK(nc_def_dim(ncid, "name_strlen", longest, &dim_name));
  NC_CHECK(nc_def_dim(ncid, "time", ntimes, &dim_time));
  dims[0] = dim_station;
  dims[1] = dim_name;
  NC_CHECK(nc_def_var(ncid, "station_name", NC_CHAR, 2, dims, &var_name));
  NC_CHECK(put_text(ncid, var_name, "cf_role", "timeseries_id"));
  NC_CHECK(put_text(ncid, var_name, "long_name", "gauge id"));
  NC_CHECK(def_axis(ncid, "x", dim_station, 1, &var_x));
  NC_CHECK(def_axis(ncid, "y", dim_station, 0, &var_y));
  NC_CHECK(put_text(ncid, var_x, "long_name", "x coordinate of the gauge"));
  NC_CHECK(put_text(ncid, var_y, "long_name", "y coordinate of the gauge"));
  NC_CHECK(nc_def_var(ncid, "time", NC_DOUBLE, 1, &dim_time, &var_time));
  NC_CHECK(put_text(ncid, var_time, "units", time_units));
  NC_CHECK(put_text(ncid, var_time, "standard_name", "time"));
  NC_CHECK(put_text(ncid, var_time, "long_name", "time since the start of the simulation"));
  NC_CHECK(put_text(ncid, var_time, "axis", "T"));
  if (crs)
    NC_CHECK(def_crs(ncid, crs));
  dims[1] = dim_time;
  double fill = NC_FILL_DOUBLE;
  for (int k = 0; k < nvars; k++) {
    NC_CHECK(nc_def_var(ncid, vars[k].name, NC_DOUBLE, 2, dims, &var_ids[k]));
    NC_CHECK(put_text(ncid, var_ids[k], "units", vars[k].units));
    NC_CHECK(put_text(ncid, var_ids[k], "long_name", vars[k].long_name));
    NC_CHECK(nc_put_att_double(ncid, var_ids[k], "_FillValue", NC_DOUBLE, 1, &fill));
    NC_CHECK(put_text(ncid, var_ids[k], "coordinates", "time x y station_name"));
    if (crs)
      NC_CHECK(put_text(ncid, var_ids[k], "grid_mapping", "crs"));
  }
  NC_CHECK(nc_enddef(ncid));
  NC_CHECK(nc_put_var_text(ncid, var_name, text));
  NC_CHECK(nc_put_var_double(ncid, var_x, x));
  NC_CHECK(nc_put_var_double(ncid, var_y, y));
  if (ntimes > 0)
    NC_CHECK(nc_put_var_double(ncid, var_time, times));
  for (int k = 0; k < nvars && ntimes > 0; k++)
    NC_CHECK(nc_put_var_double(ncid, var_ids[k], vars[k].v));

cleanup:
  status = finish_file(ncid, tmp_path, path, status);
  free(text);
  free(var_ids);
  return status;
}
