/* Georeferenced 2D rasters and the grid file formats: reading any raster (ESRI ASCII through our
 * own reader, everything else through GDAL), time stacks of rasters, writing ESRI ASCII and
 * GeoTIFF, and the coordinate reference system (CRS) helpers. Row 0 is the southernmost row, so
 * raster cell (i,j) is grid cell (i,j); north-up files store the north row first. */
#ifndef TESSERA_RASTER_H
#define TESSERA_RASTER_H

#include <stddef.h>
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
  char *crs;     /* WKT of the coordinate reference system, malloc'ed; NULL: unknown */
} ts_raster;

/* Allocates v (crs NULL). ts_raster_free frees v and crs: a shallow copy of a raster must never
 * be freed as well as its original. */
ts_status ts_raster_alloc(ts_raster *r, int ncols, int nrows, double xll, double yll,
                          double cellsize, double nodata);
void ts_raster_free(ts_raster *r);
int ts_raster_is_nodata(const ts_raster *r, double value);

/* Same ncols, nrows, corner and cellsize (corner and cellsize to 1e-6 of a cell). */
int ts_raster_same_geometry(const ts_raster *a, const ts_raster *b);

/* Reads an input grid: the one entry point for grids. An ESRI ASCII grid (detected by content,
 * ts_asc_detect) goes to ts_asc_read, with the CRS of its .prj sidecar (ts_prj_path) when there
 * is one; any other file goes through GDAL (GeoTIFF, Cloud Optimized GeoTIFF, NetCDF with one 2D
 * variable or as NETCDF:"file.nc":var, ...): band 1 as double, NaN cells set to NODATA (a value
 * that never occurs when the file declares none), a north-up grid flipped so row 0 is south.
 * Rotated grids, non-square or east-to-west pixels and grids of more than 2^31 cells are
 * refused. Errors are one line naming the file; bad or unreadable content is TS_ERR_INPUT, a
 * file that cannot be opened TS_ERR_IO. Without GDAL (TESSERA_HAVE_GDAL 0) only ESRI ASCII is
 * read and the .prj text is kept as it is. */
ts_status ts_raster_read(const char *path, ts_raster *out);

/* Every band of a raster as frames of one geometry (GeoTIFF bands, the time steps of a NetCDF
 * variable; an ESRI ASCII grid gives one frame), read as ts_raster_read reads band 1. times[k]
 * is the time of frame k in seconds relative to the first frame (so times[0] = 0), from NetCDF's
 * band metadata NETCDF_DIM_time and the units of the time variable ("seconds", "minutes",
 * "hours" or "days since ..."); NAN for every frame when the file gives no such time. */
typedef struct ts_raster_stack {
  int n;
  ts_raster *frames;
  double *times; /* s, NAN when the file gives none */
} ts_raster_stack;
ts_status ts_raster_stack_read(const char *path, ts_raster_stack *out);
void ts_raster_stack_free(ts_raster_stack *stack);

/* 1 when path is an ESRI ASCII grid: plain or gzip text whose first token is a header key such
 * as ncols; 0 otherwise (also when it cannot be read). */
int ts_asc_detect(const char *path);

/* Reads an ESRI ASCII grid (.asc, or gzip-compressed .asc.gz, detected by content), without
 * its CRS (crs NULL: ts_raster_read adds it). Accepts the six standard header keys in any order,
 * xllcenter/yllcenter, and an optional NODATA_value (default -9999). Errors name the file and
 * line: "path:LINE: message". */
ts_status ts_asc_read(const char *path, ts_raster *out);

/* Writes an ESRI ASCII grid; values equal to nodata are written as the nodata value. Values are
 * written with enough digits to round-trip the float (digits = 9) or double (17) they came
 * from. With r->crs set, the CRS is written to the .prj sidecar (ESRI WKT; the WKT as it is
 * without GDAL). Files are written to a temporary name and renamed, so no partial file remains. */
ts_status ts_asc_write(const char *path, const ts_raster *r, int digits);

/* The text "%.*g" gives for value, the number format of the ASCII writers (grids and gauge
 * files), with zeros (most values of flood maps and dry gauges) copied rather than formatted;
 * returns its length. out needs room for 25 characters (digits <= 17). */
int ts_format_g(char *out, int digits, double value);

/* The .prj sidecar of an ESRI ASCII grid: path with its .asc or .asc.gz suffix (or its last
 * extension) replaced by .prj. Returns TS_ERR_IO when it does not fit in size. */
ts_status ts_prj_path(const char *path, char *out, size_t size);

/* Writes a GeoTIFF: Float32, NoData r->nodata (cells equal to it or NaN), DEFLATE, 256 x 256
 * tiles, north-up with the corner and cell size of r, the CRS of r->crs. Written to a unique
 * temporary name in the same directory and renamed, so a failure leaves nothing under path.
 * Errors are TS_ERR_IO naming the path (TS_ERR_INTERNAL in a build without GDAL). */
ts_status ts_geotiff_write(const char *path, const ts_raster *r);

/* Coordinate reference systems as WKT strings (malloc'ed). ts_crs_from_user parses "EPSG:2154",
 * WKT or a PROJ string (TS_ERR_INPUT naming the text when it cannot). ts_crs_same: 1 when a and
 * b are the same CRS (both NULL: same; one NULL: different). ts_crs_label: "EPSG:2154" when an
 * authority code is known, else the WKT; "" for NULL. ts_crs_to_esri: the ESRI flavour of WKT
 * that .prj files hold. Without GDAL, texts are kept as given and compared as strings. */
ts_status ts_crs_from_user(const char *text, char **wkt);
int ts_crs_same(const char *a, const char *b);
void ts_crs_label(const char *wkt, char *buf, size_t size);
ts_status ts_crs_to_esri(const char *wkt, char **esri);
/* 1 when wkt is a geographic CRS (coordinates in degrees, e.g. EPSG:4326), 0 otherwise or when
 * unknown (always 0 without GDAL). */
int ts_crs_is_geographic(const char *wkt);

/* The GDAL release this build reads and writes with ("3.6.2"; GDAL's buffer, valid until the
 * next call), NULL in a build without GDAL. */
const char *ts_gdal_version(void);

#ifdef __cplusplus
}
#endif
#endif
