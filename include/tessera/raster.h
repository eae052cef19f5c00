/* Georeferenced 2D rasters as read from and written to ESRI ASCII grids, and the readers and
 * writers of the grid-based file formats (ESRI ASCII, optionally gzipped). Row 0 is the
 * southernmost row, so raster cell (i,j) is grid cell (i,j); files store the north row first. */
#ifndef TESSERA_RASTER_H
#define TESSERA_RASTER_H

#include <stdint.h>

#include "tessera/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ts_raster {
  int ncols, nrows;
  double xll, yll; /* lower-left corner of the lower-left cell */
  double cellsize;
  double nodata; /* value that marks missing cells in v */
  double *v;     /* ncols * nrows values, v[i + j * ncols], j = 0 is the south row */
} ts_raster;

ts_status ts_raster_alloc(ts_raster *r, int ncols, int nrows, double xll, double yll,
                          double cellsize, double nodata);
void ts_raster_free(ts_raster *r);
int ts_raster_is_nodata(const ts_raster *r, double value);

/* Same ncols, nrows, corner and cellsize (corner and cellsize to 1e-6 of a cell). */
int ts_raster_same_geometry(const ts_raster *a, const ts_raster *b);

/* Reads an ESRI ASCII grid (.asc, or gzip-compressed .asc.gz, detected by content). Accepts the
 * six standard header keys in any order, xllcenter/yllcenter, and an optional NODATA_value
 * (default -9999). Errors name the file and line: "path:LINE: message". */
ts_status ts_asc_read(const char *path, ts_raster *out);

/* Writes an ESRI ASCII grid; values equal to nodata are written as the nodata value. Values are
 * written with enough digits to round-trip the float (digits = 9) or double (17) they came
 * from. The file is written to a temporary name and renamed, so no partial file remains. */
ts_status ts_asc_write(const char *path, const ts_raster *r, int digits);

#ifdef __cplusplus
}
#endif
#endif
