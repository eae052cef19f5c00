/* NetCDF-4 (classic model) output following CF-1.8: one time step of cell-centred fields on a
 * regular 2D or 3D grid, with x/y[/z]/time coordinate variables and, when the CRS is known, the
 * grid mapping variable `crs` that holds its WKT; readable by QGIS, xarray, ParaView and ncview. */
#include "tessera/io.h"

#include <errno.h>
#include <math.h>
#include <netcdf.h>
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

ts_status ts_netcdf_write_grid(const char *path, const ts_grid *grid, const char *crs,
                               const char *title, double time, int nvars, const ts_out_var *vars) {
  ts_status status = TS_OK;
  char tmp_path[4096];
  int ncid = -1, dims[4], var_time, var_axis[3], var_crs, three = grid->dim == 3;
  size_t n[3] = {(size_t)grid->n[0], (size_t)grid->n[1], three ? (size_t)grid->n[2] : 1};
  size_t cells = n[0] * n[1] * n[2], longest = n[0] > n[1] ? n[0] : n[1];
  double *coordinate = NULL;
  float *values = NULL;
  int *var_ids = NULL;
  if (snprintf(tmp_path, sizeof tmp_path, "%s.tmp", path) >= (int)sizeof tmp_path)
    return ts_error(TS_ERR_IO, "%s: path too long", path);
  coordinate = malloc((longest > n[2] ? longest : n[2]) * sizeof *coordinate);
  values = malloc(cells * sizeof *values);
  var_ids = malloc((size_t)(nvars > 0 ? nvars : 1) * sizeof *var_ids);
  if (!coordinate || !values || !var_ids) {
    status = ts_error(TS_ERR_NOMEM, "%s: out of memory", path);
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
  int closing = ncid;
  ncid = -1;
  NC_CHECK(nc_close(closing));
  if (rename(tmp_path, path) != 0)
    status = ts_error(TS_ERR_IO, "%s: cannot write: %s", path, strerror(errno));

cleanup:
  if (ncid >= 0)
    nc_close(ncid);
  if (status != TS_OK)
    remove(tmp_path);
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
