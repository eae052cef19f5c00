/* Output and auxiliary input formats: NetCDF (CF), VTK ImageData of 2D rasters and of 2D or 3D
 * grids, PNG maps (water depth, or any scalar field) and time series plots, CSV gauge and
 * hydrograph files, and a small JSON writer for summary.json (and a reader of the files it
 * lists). Every writer writes to a temporary file, syncs it and renames it, so a failed run
 * leaves no partial file. */
#ifndef TESSERA_IO_H
#define TESSERA_IO_H

#include <stdint.h>
#include <stdio.h>

#include "tessera/error.h"
#include "tessera/grid.h"
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
 * `geom` gives the geometry (its values are not written) and the CRS: when geom->crs is set, a
 * scalar int variable `crs` carries it as attributes crs_wkt and spatial_ref (the WKT), and
 * every data variable names it in grid_mapping = "crs". */
ts_status ts_netcdf_write(const char *path, const ts_raster *geom, double time, int nvars,
                          const ts_out_var *vars);
/* The same on a 2D or 3D grid (dimensions time, [z,] y, x; values indexed i + n0 (j + n1 k)),
 * with the CRS's WKT (NULL: none) and the file's title. ts_netcdf_write writes a raster through
 * it. */
ts_status ts_netcdf_write_grid(const char *path, const ts_grid *grid, const char *crs,
                               const char *title, double time, int nvars, const ts_out_var *vars);
/* Reads a 3D field of n[0] x n[1] x n[2] cells into out (i + n0 (j + n1 k)): the variable `name`
 * (NULL: the file's one variable with dimensions z, y, x, or time (of length 1), z, y, x), as
 * ts_netcdf_write_grid writes it. Missing values (NaN, _FillValue) are an error. */
ts_status ts_netcdf_read_grid(const char *path, const char *name, const int n[3], double *out);

/* VTK XML ImageData (.vti) with one CellData array per variable (Float32, NaN kept), the time
 * stored as TimeValue field data; readable by ParaView. */
ts_status ts_vti_write(const char *path, const ts_raster *geom, double time, int nvars,
                       const ts_out_var *vars);

/* A vector variable for ts_vti_write_grid: components v[0], v[1], v[2] (v[2] may be NULL in 2D:
 * written as 0), each indexed like ts_out_var values. */
typedef struct ts_out_vector {
  const char *name, *long_name, *units;
  const double *v[3];
} ts_out_vector;

/* VTK XML ImageData (.vti) of a 2D or 3D grid (n[0] x n[1] x n[2] cells of size dx[], lower
 * corner origin[]; n[2] = 1 in 2D, written as a flat image with z spacing 1): scalar CellData
 * arrays (Float32, NaN kept) and 3-component vector CellData arrays, values indexed
 * i + n0 * (j + n1 * k); the time as TimeValue field data. ts_vti_write writes a raster as a 2D
 * grid through this function. */
ts_status ts_vti_write_grid(const char *path, const ts_grid *grid, double time, int nvars,
                            const ts_out_var *vars, int nvectors, const ts_out_vector *vectors);

/* Square cells of several sizes on a grid of step dx whose lower-left corner is (x0, y0): cell c
 * covers grid cells [i0[c], i0[c] + width[c]) x [j0[c], j0[c] + width[c]); level[c] (NULL:
 * none) is written as an Int32 array "level". */
typedef struct ts_out_squares {
  int64_t n;
  double x0, y0, dx;
  const int *i0, *j0, *width, *level;
} ts_out_squares;

/* VTK XML UnstructuredGrid (.vtu) of square cells (VTK_PIXEL, 4 points each), one Float32
 * CellData array per variable (values indexed by cell, NaN kept), the time as TimeValue field
 * data: the leaf cells of a quadtree grid as ParaView shows them. */
ts_status ts_vtu_write_squares(const char *path, const ts_out_squares *sq, double time, int nvars,
                               const ts_out_var *vars);

/* NetCDF-4 classic file following CF-1.8 of a quadtree grid's leaf cells, level by level, on
 * geom's grid of ncols x nrows finest cells (its CRS as in ts_netcdf_write; sq->x0, y0 and dx
 * are not read, sq->level is needed): global attributes time (s), levels and block (cells along a
 * block's side); for each level l (0 the finest, cells 2^l finest cells wide) dimensions and
 * coordinate variables y_l and x_l (ceil(nrows / 2^l) and ceil(ncols / 2^l) cell centres, m, y
 * northwards) and one double variable NAME_l (y_l, x_l) per ts_out_var, holding each leaf cell of
 * level l at its place (values indexed like sq's cells); _FillValue NaN where no leaf of that level
 * lies (and for NaN values: inactive cells). Leaves past the grid's edge (a block's padding) are
 * left out; a leaf whose width is not 2^level, or not aligned to it, or whose level is not below
 * `levels` is an error (TS_ERR_INPUT). */
ts_status ts_netcdf_write_levels(const char *path, const ts_raster *geom, int levels, int block,
                                 double time, const ts_out_squares *sq, int nvars,
                                 const ts_out_var *vars);

/* One NetCDF-4 classic file (CF-1.8) per run, growing by one time step at a time: dimensions
 * time (unlimited), [z,] y, x; coordinate variables time, [z,] y, x (cell centres); the grid
 * mapping `crs` as in ts_netcdf_write when the CRS is known; the time-varying variables
 * (time, [z,] y, x) and the time-less maps ([z,] y, x), float or double, _FillValue for NaN,
 * chunked one time slice per chunk, DEFLATE level 4 with shuffle. */
typedef struct ts_netcdf_series ts_netcdf_series;
typedef struct ts_netcdf_layout {
  const ts_grid *grid;        /* 2D or 3D; origin, dx in length_units */
  const char *crs;            /* WKT, or NULL */
  const char *title;          /* global attribute title */
  const char *length_units;   /* units of x, y, z: "m" */
  const char *time_units;     /* e.g. "seconds" */
  const char *time_long_name; /* e.g. "time since the start of the simulation" */
  int time_standard;          /* 1: time gets standard_name = "time" */
  int use_double;             /* 1: NC_DOUBLE, 0: NC_FLOAT data variables */
  int nvars, nmaps;
  const ts_out_var *vars, *maps; /* names, long names and units (values not read) */
} ts_netcdf_layout;
/* Creates (replaces) path with no time step yet. A failure is one error naming path, and leaves
 * no file. */
ts_status ts_netcdf_series_create(ts_netcdf_series **out, const char *path,
                                  const ts_netcdf_layout *layout);
/* For a restarted run: reopens path when it holds a series of this layout (dimensions, variable
 * names and type), keeping its time steps before keep_before (the next append follows them, so
 * the file ends as the uninterrupted run's); else as ts_netcdf_series_create. */
ts_status ts_netcdf_series_continue(ts_netcdf_series **out, const char *path,
                                    const ts_netcdf_layout *layout, double keep_before);
/* Appends time step `time` with the values of every time-varying variable (vars[k].v, in the
 * layout's order, indexed as in ts_netcdf_write_grid), then flushes the file to disk (nc_sync):
 * a run stopped later leaves a readable file holding the time steps appended so far. */
ts_status ts_netcdf_series_append(ts_netcdf_series *s, double time, const ts_out_var *vars);
/* Writes (again) map number `map` of the layout; ts_netcdf_series_sync flushes it to disk. */
ts_status ts_netcdf_series_put_map(ts_netcdf_series *s, int map, const double *v);
ts_status ts_netcdf_series_sync(ts_netcdf_series *s);
/* Closes the file and frees s (NULL: nothing). */
ts_status ts_netcdf_series_close(ts_netcdf_series *s);

/* CF-1.8 discrete sampling geometry file of time series (featureType = "timeSeries", orthogonal
 * multidimensional representation): dimension station with station_name (cf_role =
 * "timeseries_id"), x and y (m, projection coordinates), dimension time (seconds since the start
 * of the simulation), and one double variable (station, time) per ts_out_var, values indexed
 * t + ntimes * station; the CRS (NULL: none) as in ts_netcdf_write; time in time_units ("seconds"
 * or "seconds since DATE"). Written to a temporary file and renamed. */
ts_status ts_netcdf_write_stations(const char *path, const char *crs, const char *time_units,
                                   int nstations, char *const *names, const double *x,
                                   const double *y, size_t ntimes, const double *times, int nvars,
                                   const ts_out_var *vars);

/* PNG map of water depth over hill-shaded terrain: bed and depth as for ts_out_var (NaN bed =
 * inactive, drawn grey), depths below `dry_depth` transparent over the terrain, a colour bar
 * from 0 to depth_max (m) with labels, and `title` (e.g. "t = 600 s") printed on the image. */
ts_status ts_png_write_depth(const char *path, const ts_raster *geom, const double *bed,
                             const double *depth, double dry_depth, double depth_max,
                             const char *title);

/* PNG map of a scalar field on nx x ny cells (values[i + j * nx], j = 0 at the bottom of the
 * image) in the viridis colour map from vmin to vmax (values outside clamped), NaN drawn grey;
 * `scale` pixels per cell (>= 1); a colour bar with labels of vmin and vmax and `label` (e.g.
 * "|u| / U") above it, and `title` printed on the image (label and title may be NULL). */
ts_status ts_png_write_field(const char *path, int nx, int ny, const double *values, double vmin,
                             double vmax, int scale, const char *label, const char *title);

/* One line of a time series plot: y[k] at time t[k] (NaN or infinite values: gaps, not drawn). */
typedef struct ts_plot_series {
  const char *label; /* legend text, e.g. a gauge id (NULL: none) */
  const double *y;   /* n values */
} ts_plot_series;

/* One panel of a time series plot: its lines share the y axis. */
typedef struct ts_plot_panel {
  const char *title;   /* above the panel, e.g. "depth" (may be NULL) */
  const char *y_label; /* e.g. "h (m)" (may be NULL) */
  int nseries;         /* >= 0 */
  const ts_plot_series *series;
} ts_plot_panel;

/* PNG line plot of time series, 1200 x (68 + 400 npanels) px: `title` at the top, then one panel
 * per ts_plot_panel stacked vertically, all sharing the time axis t[0..n-1] (finite, never
 * decreasing; equal times allowed) labelled `t_label` (e.g. "t (s)") below the last panel. Each
 * panel has a frame, grid lines at 4 to 6 ticks of 1, 2 or 5 x 10^k on both axes, tick labels,
 * its title above, the rotated y_label on the left and on the right a legend (line sample and
 * label, cut at 16 characters; "+N more" for the series that do not fit). The time axis spans
 * t[0] .. t[n-1], the y axis the panel's finite values plus 5% on either side; either is extended
 * to the nearest ticks outside when fewer than 4 fall inside, and a single value v is widened to
 * v +- 10% (+-1 for 0). Series take the ten colours of matplotlib's tab10 palette in turn, drawn
 * 2 px wide: solid, then dashed, dotted and dash-dotted for series 11-20, 21-30 and 31-40, then
 * again. Points sharing a pixel column are drawn as one stroke, so a million points plot quickly;
 * a point without finite neighbours gets a small square marker. TS_ERR_INPUT for n < 1, npanels
 * outside 1..49, nseries < 0 or bad times; TS_ERR_IO naming `path` if it cannot be written. */
ts_status ts_png_write_plot(const char *path, int n, const double *t, const char *t_label,
                            int npanels, const ts_plot_panel *panels, const char *title);

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

/* A two-column time series CSV ("t,q" header or none; t strictly increasing, finite values, none
 * below min_value: -INFINITY allows any). */
ts_status ts_series_read(const char *path, double min_value, int *n, double **t, double **v);

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
/* Reads the JSON text (NUL-terminated) whose top level is an object, and calls found(ctx, value)
 * for every string value (not key) that lies, at any depth, under one of the top-level keys
 * listed in keys (NULL-terminated); escapes are decoded, and strings holding \u0000 or longer
 * than 4095 bytes are passed over. Returns 0, or the 1-based byte offset of a syntax error
 * (found may have been called for strings before it). */
long ts_json_scan(const char *text, const char *const *keys,
                  void (*found)(void *ctx, const char *value), void *ctx);

/* Helpers for writers. ts_open_temp creates a new temporary file beside path, named .NAME.XXXXXX
 * (NAME: path's last component; XXXXXX: letters and digits unique to this call; mode 0666 less
 * the umask), its name in tmp_path, and opens it for writing. ts_commit_temp flushes, fsyncs and
 * closes it, renames it to path and fsyncs the directory. On failure the temporary is removed and
 * nothing is left under path. For libraries that open files by name (NetCDF, GDAL):
 * ts_make_temp creates the empty temporary, the library writes and closes it, and
 * ts_commit_temp_file fsyncs, renames and syncs the same way (the caller removes the temporary
 * when the library failed). TESSERA_TEST_FAIL_WRITE=N, for tests only, makes the N-th commit of
 * the process fail as if the disk were full (ENOSPC). */
FILE *ts_open_temp(const char *path, char *tmp_path, size_t tmp_size);
ts_status ts_commit_temp(FILE *f, const char *tmp_path, const char *path);
ts_status ts_make_temp(const char *path, char *tmp_path, size_t tmp_size);
ts_status ts_commit_temp_file(const char *tmp_path, const char *path);

#ifdef __cplusplus
}
#endif
#endif
