/* NetCDF-4 (classic model) output following CF-1.8: one time step of cell-centred fields on the
 * regular grid, with x/y/time coordinate variables and, when the CRS is known, the grid mapping
 * variable `crs` that holds its WKT; readable by QGIS, xarray and ncview. */
#include "tessera/io.h"

#include <errno.h>
#include <math.h>
#include <netcdf.h>
#include <stdlib.h>
#include <string.h>

/* Runs a NetCDF call; on failure records the error and jumps to the function's cleanup. */
#define NC_CHECK(call)                                                                             \
  do {                                                                                             \
    int nc_result_ = (call);                                                                       \
    if (nc_result_ != NC_NOERR) {                                                                  \
      status = ts_error(TS_ERR_IO, "%s: cannot write NetCDF: %s", path, nc_strerror(nc_result_));  \
      goto cleanup;                                                                                \
    }                                                                                              \
  } while (0)

static int put_text(int ncid, int varid, const char *name, const char *text) {
  return nc_put_att_text(ncid, varid, name, strlen(text), text);
}

ts_status ts_netcdf_write(const char *path, const ts_raster *geom, double time, int nvars,
                          const ts_out_var *vars) {
  ts_status status = TS_OK;
  char tmp_path[4096];
  int ncid = -1, dim_time, dim_y, dim_x, var_time, var_x, var_y, var_crs;
  size_t nx = (size_t)geom->ncols, ny = (size_t)geom->nrows;
  double *coordinate = NULL;
  float *values = NULL;
  int *var_ids = NULL;
  if (snprintf(tmp_path, sizeof tmp_path, "%s.tmp", path) >= (int)sizeof tmp_path)
    return ts_error(TS_ERR_IO, "%s: path too long", path);
  coordinate = malloc((nx > ny ? nx : ny) * sizeof *coordinate);
  values = malloc(nx * ny * sizeof *values);
  var_ids = malloc((size_t)(nvars > 0 ? nvars : 1) * sizeof *var_ids);
  if (!coordinate || !values || !var_ids) {
    status = ts_error(TS_ERR_NOMEM, "%s: out of memory", path);
    goto cleanup;
  }
  NC_CHECK(nc_create(tmp_path, NC_CLOBBER | NC_NETCDF4 | NC_CLASSIC_MODEL, &ncid));
  NC_CHECK(put_text(ncid, NC_GLOBAL, "Conventions", "CF-1.8"));
  NC_CHECK(put_text(ncid, NC_GLOBAL, "title", "Tessera shallow-water output"));
  NC_CHECK(put_text(ncid, NC_GLOBAL, "source", "tessera"));
  NC_CHECK(nc_def_dim(ncid, "time", 1, &dim_time));
  NC_CHECK(nc_def_dim(ncid, "y", ny, &dim_y));
  NC_CHECK(nc_def_dim(ncid, "x", nx, &dim_x));

  NC_CHECK(nc_def_var(ncid, "time", NC_DOUBLE, 1, &dim_time, &var_time));
  NC_CHECK(put_text(ncid, var_time, "units", "s"));
  NC_CHECK(put_text(ncid, var_time, "long_name", "time since the start of the simulation"));
  NC_CHECK(put_text(ncid, var_time, "axis", "T"));
  NC_CHECK(nc_def_var(ncid, "y", NC_DOUBLE, 1, &dim_y, &var_y));
  NC_CHECK(put_text(ncid, var_y, "units", "m"));
  NC_CHECK(put_text(ncid, var_y, "standard_name", "projection_y_coordinate"));
  NC_CHECK(put_text(ncid, var_y, "long_name", "y coordinate of cell centre"));
  NC_CHECK(put_text(ncid, var_y, "axis", "Y"));
  NC_CHECK(nc_def_var(ncid, "x", NC_DOUBLE, 1, &dim_x, &var_x));
  NC_CHECK(put_text(ncid, var_x, "units", "m"));
  NC_CHECK(put_text(ncid, var_x, "standard_name", "projection_x_coordinate"));
  NC_CHECK(put_text(ncid, var_x, "long_name", "x coordinate of cell centre"));
  NC_CHECK(put_text(ncid, var_x, "axis", "X"));
  if (geom->crs) { /* CF-1.8 grid mapping with the WKT, as GDAL and QGIS read it */
    NC_CHECK(nc_def_var(ncid, "crs", NC_INT, 0, NULL, &var_crs));
    NC_CHECK(put_text(ncid, var_crs, "crs_wkt", geom->crs));
    NC_CHECK(put_text(ncid, var_crs, "spatial_ref", geom->crs));
  }

  int field_dims[3] = {dim_time, dim_y, dim_x};
  float fill = NC_FILL_FLOAT;
  for (int k = 0; k < nvars; k++) {
    NC_CHECK(nc_def_var(ncid, vars[k].name, NC_FLOAT, 3, field_dims, &var_ids[k]));
    NC_CHECK(nc_def_var_deflate(ncid, var_ids[k], 1, 1, 1));
    NC_CHECK(put_text(ncid, var_ids[k], "units", vars[k].units));
    NC_CHECK(put_text(ncid, var_ids[k], "long_name", vars[k].long_name));
    NC_CHECK(nc_put_att_float(ncid, var_ids[k], "_FillValue", NC_FLOAT, 1, &fill));
    if (geom->crs)
      NC_CHECK(put_text(ncid, var_ids[k], "grid_mapping", "crs"));
  }
  NC_CHECK(nc_enddef(ncid));

  NC_CHECK(nc_put_var_double(ncid, var_time, &time));
  for (size_t i = 0; i < nx; i++)
    coordinate[i] = geom->xll + ((double)i + 0.5) * geom->cellsize;
  NC_CHECK(nc_put_var_double(ncid, var_x, coordinate));
  for (size_t j = 0; j < ny; j++)
    coordinate[j] = geom->yll + ((double)j + 0.5) * geom->cellsize;
  NC_CHECK(nc_put_var_double(ncid, var_y, coordinate));
  for (int k = 0; k < nvars; k++) {
    for (size_t c = 0; c < nx * ny; c++)
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
