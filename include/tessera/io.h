/* Output and auxiliary input formats: NetCDF (CF), VTK ImageData, PNG maps, CSV gauge and
 * hydrograph files, and a small JSON writer for summary.json. Every writer writes to a temporary
 * file and renames it, so a failed run leaves no partial file. */
#ifndef TESSERA_IO_H
#define TESSERA_IO_H

#include <stdio.h>

#include "tessera/error.h"
#include "tessera/raster.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One cell-centred variable to write: values v[i + j * ncols] (j = 0 south), NaN = missing. */
typedef struct ts_out_var {
  const char *name;      /* short name, e.g. "h" */
  const char *long_name; /* e.g. "water depth" */
  const char *units;     /* e.g. "m" */
  const double *v;
} ts_out_var;

/* NetCDF-4 classic file following CF-1.8: dimensions time (1), y, x; coordinate variables x, y
 * (cell centres, m) and time (s); one float variable per ts_out_var with _FillValue for NaN.
 * `geom` gives the geometry (its values are not written). */
ts_status ts_netcdf_write(const char *path, const ts_raster *geom, double time, int nvars,
                          const ts_out_var *vars);

/* VTK XML ImageData (.vti) with one CellData array per variable (Float32, NaN kept), the time
 * stored as TimeValue field data; readable by ParaView. */
ts_status ts_vti_write(const char *path, const ts_raster *geom, double time, int nvars,
                       const ts_out_var *vars);

/* PNG map of water depth over hill-shaded terrain: bed and depth as for ts_out_var (NaN bed =
 * inactive, drawn grey), depths below `dry_depth` transparent over the terrain, a colour bar
 * from 0 to depth_max (m) with labels, and `title` (e.g. "t = 600 s") printed on the image. */
ts_status ts_png_write_depth(const char *path, const ts_raster *geom, const double *bed,
                             const double *depth, double dry_depth, double depth_max,
                             const char *title);

/* Gauges from a CSV file with header "id,x,y" (id is text). Errors name the file and line; a
 * gauge outside `geom` is an error. Arrays are malloc'ed; free with ts_gauges_free. */
typedef struct ts_gauges {
  int n;
  char **id;
  double *x, *y;
  int *i, *j; /* cell holding each gauge */
} ts_gauges;
ts_status ts_gauges_read(const char *path, const ts_raster *geom, ts_gauges *out);
void ts_gauges_free(ts_gauges *g);

/* A two-column time series CSV ("t,q" header or none; t strictly increasing, finite values). */
ts_status ts_series_read(const char *path, int *n, double **t, double **v);

/* Minimal streaming JSON writer with correct escaping and round-trip number formatting. */
typedef struct ts_json {
  FILE *f;
  int depth;
  int first[32]; /* no comma needed yet at this depth */
  int after_key;
} ts_json;
void ts_json_begin(ts_json *j, FILE *f); /* starts the top-level object */
void ts_json_key(ts_json *j, const char *key);
void ts_json_string(ts_json *j, const char *s);
void ts_json_number(ts_json *j, double v); /* NaN/inf written as null */
void ts_json_int(ts_json *j, long long v);
void ts_json_bool(ts_json *j, int v);
void ts_json_null(ts_json *j);
void ts_json_object_begin(ts_json *j);
void ts_json_object_end(ts_json *j);
void ts_json_array_begin(ts_json *j);
void ts_json_array_end(ts_json *j);
void ts_json_end(ts_json *j); /* closes the top-level object, newline */

/* Helpers for writers: open path.tmp for writing, and on success rename it to path. */
FILE *ts_open_temp(const char *path, char *tmp_path, size_t tmp_size);
ts_status ts_commit_temp(FILE *f, const char *tmp_path, const char *path);

#ifdef __cplusplus
}
#endif
#endif
