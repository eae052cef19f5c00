/* Georeferenced raster storage: allocation (with its CRS), nodata test and geometry comparison. */
#include "tessera/raster.h"

#include <math.h>
#include <stdlib.h>

ts_status ts_raster_alloc(ts_raster *r, int ncols, int nrows, double xll, double yll,
                          double cellsize, double nodata) {
  r->v = NULL;
  r->crs = NULL;
  if (ncols <= 0 || nrows <= 0)
    return ts_error(TS_ERR_INPUT, "raster size %d x %d is not positive", ncols, nrows);
  if (!(cellsize > 0.0) || !isfinite(cellsize))
    return ts_error(TS_ERR_INPUT, "raster cellsize %g is not positive", cellsize);
  size_t count = (size_t)ncols * (size_t)nrows;
  if (count > SIZE_MAX / sizeof(double))
    return ts_error(TS_ERR_NOMEM, "raster of %d x %d cells is too large", ncols, nrows);
  r->v = malloc(count * sizeof(double));
  if (!r->v)
    return ts_error(TS_ERR_NOMEM, "out of memory for a raster of %d x %d cells", ncols, nrows);
  r->ncols = ncols;
  r->nrows = nrows;
  r->xll = xll;
  r->yll = yll;
  r->cellsize = cellsize;
  r->nodata = nodata;
  return TS_OK;
}

void ts_raster_free(ts_raster *r) {
  if (!r)
    return;
  free(r->v);
  free(r->crs);
  r->v = NULL;
  r->crs = NULL;
}

int ts_raster_is_nodata(const ts_raster *r, double value) {
  return isnan(value) || value == r->nodata;
}

int ts_raster_same_geometry(const ts_raster *a, const ts_raster *b) {
  if (a->ncols != b->ncols || a->nrows != b->nrows)
    return 0;
  double tolerance = 1e-6 * fmin(a->cellsize, b->cellsize);
  return fabs(a->cellsize - b->cellsize) <= tolerance && fabs(a->xll - b->xll) <= tolerance &&
         fabs(a->yll - b->yll) <= tolerance;
}
