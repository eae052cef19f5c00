/* Unit tests of rasters through GDAL and of the coordinate reference system (CRS) carried to every
 * output: ts_raster_read of GeoTIFF (north-up, south-up, Cloud Optimized), NetCDF and ESRI ASCII
 * with a .prj; time stacks; rotated, non-square and corrupt grids refused with one quiet line;
 * ts_geotiff_write, the .prj of ts_asc_write and the NetCDF grid mapping read back; the CRS
 * helpers; and `tessera run` ($TESSERA_BINARY) on a GeoTIFF case: outputs in the bed's CRS and
 * geotransform, a surface in another CRS refused. Fixtures are made and outputs read with GDAL's
 * and NetCDF's C APIs. A build without GDAL checks what it does instead. */
#define _POSIX_C_SOURCE 200809L
#include "tessera/io.h"
#include "tessera/raster.h"

#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <netcdf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#if TESSERA_HAVE_GDAL
#include <cpl_conv.h>
#include <gdal.h>
#include <ogr_srs_api.h>
#endif

#include "unit/check.h"
#include "unit/test_files.h"

static char dir[64];

/* DIR/name. */
static const char *at(const char *name) { return path_in(dir, name); }

/* A failure reported as one line naming path with the expected status. */
static int one_line_error(ts_status st, ts_status expected, const char *path) {
  const char *m = ts_error_message();
  return st == expected && strstr(m, path) && !strchr(m, '\n');
}

static int run_tessera(const char *args) {
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "cd %s && \"%s\" run %s --quiet 2> stderr.txt > /dev/null", dir,
           getenv("TESSERA_BINARY"), args);
  int status = system(cmd);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* The first line of DIR/stderr.txt and the number of lines. */
static int stderr_lines(char *line, size_t size) {
  return file_lines(at("stderr.txt"), line, size);
}

/* The fixture grids: NX x NY cells of CELL m at (X0, Y0). */
enum { NX = 5, NY = 4 };
static const double X0 = 700000, Y0 = 6600000, CELL = 10;

static void test_prj_path(void) {
  char out[256];
  ts_prj_path("a/b.asc.gz", out, sizeof out);
  CHECK(strcmp(out, "a/b.prj") == 0, ".prj of a/b.asc.gz: %s", out);
  ts_prj_path("x.y/grid", out, sizeof out);
  CHECK(strcmp(out, "x.y/grid.prj") == 0, ".prj of x.y/grid: %s", out);
  ts_prj_path("dem.ASC", out, sizeof out);
  CHECK(strcmp(out, "dem.prj") == 0, ".prj of dem.ASC: %s", out);
}

/* ts_netcdf_write with and without a CRS, read back with the NetCDF API. */
static void test_netcdf_crs(const char *wkt) {
  ts_raster geom = {.ncols = NX, .nrows = NY, .xll = X0, .yll = Y0, .cellsize = CELL};
  double h[NX * NY], eta[NX * NY];
  for (int c = 0; c < NX * NY; c++)
    h[c] = 0.5 * c, eta[c] = 100 + c;
  ts_out_var vars[2] = {{"h", "water depth", "m", h}, {"eta", "water surface", "m", eta}};
  geom.crs = (char *)wkt;
  ts_error_clear();
  CHECK(ts_netcdf_write(at("crs.nc"), &geom, 5.0, 2, vars) == TS_OK, "NetCDF with a CRS: %s",
        ts_error_message());
  int ncid, var;
  char text[64] = "";
  size_t length = 0;
  int ok = nc_open(at("crs.nc"), NC_NOWRITE, &ncid) == NC_NOERR;
  CHECK(ok && nc_inq_varid(ncid, "crs", &var) == NC_NOERR &&
            nc_inq_attlen(ncid, var, "crs_wkt", &length) == NC_NOERR && length == strlen(wkt),
        "variable crs with crs_wkt (%zu characters)", length);
  char *back = calloc(length + 1, 1);
  if (ok && nc_get_att_text(ncid, var, "crs_wkt", back) == NC_NOERR)
    CHECK(strcmp(back, wkt) == 0, "crs_wkt is the WKT");
  CHECK(ok && nc_inq_attlen(ncid, var, "spatial_ref", &length) == NC_NOERR && length == strlen(wkt),
        "crs has spatial_ref");
  free(back);
  const char *names[2] = {"h", "eta"};
  for (int k = 0; k < 2; k++) {
    memset(text, 0, sizeof text);
    int found = ok && nc_inq_varid(ncid, names[k], &var) == NC_NOERR &&
                nc_get_att_text(ncid, var, "grid_mapping", text) == NC_NOERR;
    CHECK(found && strcmp(text, "crs") == 0, "%s: grid_mapping = \"%s\"", names[k], text);
  }
  if (ok)
    nc_close(ncid);
  geom.crs = NULL;
  CHECK(ts_netcdf_write(at("nocrs.nc"), &geom, 5.0, 2, vars) == TS_OK, "NetCDF without a CRS");
  ok = nc_open(at("nocrs.nc"), NC_NOWRITE, &ncid) == NC_NOERR;
  CHECK(ok && nc_inq_varid(ncid, "crs", &var) != NC_NOERR && nc_inq_varid(ncid, "h", &var) == 0 &&
            nc_inq_attlen(ncid, var, "grid_mapping", &length) != NC_NOERR,
        "without a CRS: no crs variable, no grid_mapping");
  if (ok)
    nc_close(ncid);
}

/* ts_asc_write writes the .prj; ts_raster_read reads the CRS back from it. */
static void test_asc_prj(const char *crs) {
  ts_raster r, back;
  ts_raster_alloc(&r, NX, NY, X0, Y0, CELL, -9999);
  for (int c = 0; c < NX * NY; c++)
    r.v[c] = c;
  r.crs = malloc(strlen(crs) + 1);
  strcpy(r.crs, crs);
  CHECK(ts_asc_write(at("grid.asc"), &r, 9) == TS_OK, "asc with a CRS written");
  CHECK(file_exists(at("grid.prj")) && temp_files(dir, "grid.prj") == 0, "grid.prj beside it");
  ts_error_clear();
  CHECK(ts_raster_read(at("grid.asc"), &back) == TS_OK, "asc + .prj read: %s", ts_error_message());
  CHECK(back.crs && ts_crs_same(back.crs, crs), "the .prj gives the same CRS");
#if TESSERA_HAVE_GDAL
  char label[64];
  ts_crs_label(back.crs, label, sizeof label);
  CHECK(strcmp(label, "EPSG:2154") == 0, "the .prj's ESRI WKT identified as %s", label);
#endif
  CHECK(ts_raster_same_geometry(&r, &back) && back.v[7] == 7, "asc values and geometry");
  ts_raster_free(&back);
  free(r.crs);
  r.crs = NULL;
  CHECK(ts_asc_write(at("plain.asc"), &r, 9) == TS_OK && !file_exists(at("plain.prj")),
        "no .prj without a CRS");
  CHECK(ts_raster_read(at("plain.asc"), &back) == TS_OK && back.crs == NULL,
        "asc without .prj: CRS unknown");
  ts_raster_free(&back);

  ts_raster_stack stack;
  CHECK(ts_raster_stack_read(at("grid.asc"), &stack) == TS_OK && stack.n == 1 &&
            isnan(stack.times[0]) && ts_crs_same(stack.frames[0].crs, crs),
        "an asc is a stack of one frame without time");
  ts_raster_stack_free(&stack);
  ts_raster_free(&r);
}

#if TESSERA_HAVE_GDAL

/* Files in DIR whose name starts with prefix. */
static int count_files(const char *prefix) {
  DIR *d = opendir(dir);
  int n = 0;
  for (struct dirent *e; d && (e = readdir(d));)
    n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
  if (d)
    closedir(d);
  return n;
}

static const double NODATA = -32768;

/* Value of fixture cell (i, j), j = 0 south: one NODATA cell, one NaN cell and one cell of -9999
 * (an ordinary value where the file declares NODATA). */
static double cell_value(int i, int j) {
  if (i == 1 && j == 2)
    return NODATA;
  if (i == 3 && j == 1)
    return NAN;
  if (i == 0 && j == 0)
    return -9999;
  return 100.0 * j + i + 0.25;
}

/* The fixture as read (band value + offset; NaN and NODATA cells as r->nodata). */
static int is_fixture(const ts_raster *r, double offset) {
  if (r->ncols != NX || r->nrows != NY || r->xll != X0 || r->yll != Y0 || r->cellsize != CELL)
    return 0;
  for (int j = 0; j < NY; j++)
    for (int i = 0; i < NX; i++) {
      double want = cell_value(i, j), got = r->v[i + j * NX];
      if (isnan(want) || want == NODATA ? got != r->nodata : got != want + offset)
        return 0;
    }
  return 1;
}

static char *epsg_wkt(int code) {
  OGRSpatialReferenceH srs = OSRNewSpatialReference(NULL);
  OSRImportFromEPSG(srs, code);
  char *wkt = NULL, *copy;
  OSRExportToWkt(srs, &wkt);
  copy = malloc(strlen(wkt) + 1);
  strcpy(copy, wkt);
  CPLFree(wkt);
  OSRDestroySpatialReference(srs);
  return copy;
}

/* Writes a Float64 GeoTIFF of nx x ny values v (south row first; band b adds 1000 * b except on
 * NODATA) with geotransform gt (north-up when gt[5] < 0), the CRS EPSG:epsg (0: none) and
 * NODATA declared or not. */
static void write_tif(const char *path, int nx, int ny, const double *v, const double gt[6],
                      int epsg, int bands, int declare_nodata) {
  GDALDatasetH ds =
      GDALCreate(GDALGetDriverByName("GTiff"), path, nx, ny, bands, GDT_Float64, NULL);
  GDALSetGeoTransform(ds, (double *)gt);
  if (epsg) {
    OGRSpatialReferenceH srs = OSRNewSpatialReference(NULL);
    OSRImportFromEPSG(srs, epsg);
    GDALSetSpatialRef(ds, srs);
    OSRDestroySpatialReference(srs);
  }
  double *row = malloc(sizeof(double) * (size_t)nx);
  for (int b = 0; b < bands; b++) {
    GDALRasterBandH band = GDALGetRasterBand(ds, b + 1);
    if (declare_nodata)
      GDALSetRasterNoDataValue(band, NODATA);
    for (int r = 0; r < ny; r++) {
      int j = gt[5] < 0 ? ny - 1 - r : r;
      for (int i = 0; i < nx; i++) {
        double value = v[i + (size_t)j * nx];
        row[i] = value == NODATA ? value : value + 1000.0 * b;
      }
      if (GDALRasterIO(band, GF_Write, 0, r, nx, 1, row, nx, 1, GDT_Float64, 0, 0) != CE_None)
        printf("could not write %s\n", path);
    }
  }
  free(row);
  GDALClose(ds);
}

static void fixture_values(double *v) {
  for (int j = 0; j < NY; j++)
    for (int i = 0; i < NX; i++)
      v[i + j * NX] = cell_value(i, j);
}

static const double north_up[6] = {700000, 10, 0, 6600000 + NY * 10, 0, -10};

static void test_read_geotiff(const char *wkt2154) {
  double v[NX * NY];
  fixture_values(v);
  write_tif(at("north.tif"), NX, NY, v, north_up, 2154, 1, 1);
  ts_raster r;
  ts_status st = ts_raster_read(at("north.tif"), &r);
  CHECK(st == TS_OK, "north-up GeoTIFF read %s", st ? ts_error_message() : "");
  CHECK(is_fixture(&r, 0), "north-up: row 0 south, values, corner (%.17g, %.17g), cell %g", r.xll,
        r.yll, r.cellsize);
  CHECK(r.nodata == NODATA, "declared NODATA %g", r.nodata);
  CHECK(isnan(cell_value(3, 1)) && r.v[3 + 1 * NX] == r.nodata, "NaN cell read as NODATA");
  CHECK(r.v[0] == -9999, "-9999 stays a value where NODATA is -32768");
  char label[64];
  ts_crs_label(r.crs, label, sizeof label);
  CHECK(strcmp(label, "EPSG:2154") == 0 && ts_crs_same(r.crs, wkt2154), "CRS %s", label);
  ts_raster_free(&r);

  const double south_up[6] = {X0, CELL, 0, Y0, 0, CELL};
  write_tif(at("south.tif"), NX, NY, v, south_up, 2154, 1, 1);
  CHECK(ts_raster_read(at("south.tif"), &r) == TS_OK && is_fixture(&r, 0) && r.nodata == NODATA &&
            ts_crs_same(r.crs, wkt2154),
        "south-up GeoTIFF reads identically, without flip");
  ts_raster_free(&r);

  GDALDatasetH src = GDALOpen(at("north.tif"), GA_ReadOnly);
  GDALDatasetH cog =
      GDALCreateCopy(GDALGetDriverByName("COG"), at("cog.tif"), src, FALSE, NULL, NULL, NULL);
  GDALClose(cog);
  GDALDatasetH nc =
      GDALCreateCopy(GDALGetDriverByName("netCDF"), at("gdal.nc"), src, FALSE, NULL, NULL, NULL);
  GDALClose(nc);
  GDALClose(src);
  ts_error_clear();
  CHECK(ts_raster_read(at("cog.tif"), &r) == TS_OK && is_fixture(&r, 0) && r.nodata == NODATA &&
            ts_crs_same(r.crs, wkt2154),
        "Cloud Optimized GeoTIFF reads identically: %s", ts_error_message());
  ts_raster_free(&r);
  ts_error_clear();
  CHECK(ts_raster_read(at("gdal.nc"), &r) == TS_OK && is_fixture(&r, 0) && r.nodata == NODATA &&
            ts_crs_same(r.crs, wkt2154),
        "NetCDF raster reads identically: %s", ts_error_message());
  ts_raster_free(&r);
  char name[600];
  snprintf(name, sizeof name, "NETCDF:\"%s\":Band1", at("gdal.nc"));
  ts_error_clear();
  CHECK(ts_raster_read(name, &r) == TS_OK && is_fixture(&r, 0), "%s reads: %s", name,
        ts_error_message());
  ts_raster_free(&r);

  /* no declared NODATA: NaN becomes a value that never occurs */
  write_tif(at("undeclared.tif"), NX, NY, v, north_up, 0, 1, 0);
  CHECK(ts_raster_read(at("undeclared.tif"), &r) == TS_OK && r.crs == NULL,
        "GeoTIFF without NODATA and CRS read");
  int distinct = 1;
  for (int c = 0; c < NX * NY; c++)
    if (c != 3 + 1 * NX)
      distinct = distinct && r.v[c] != r.nodata;
  CHECK(distinct && r.v[3 + 1 * NX] == r.nodata && r.v[1 + 2 * NX] == NODATA && r.v[0] == -9999,
        "NODATA %g is no value of the grid; NaN cell is NODATA", r.nodata);
  ts_raster_free(&r);
}

static void test_stacks(void) {
  double v[NX * NY];
  fixture_values(v);
  write_tif(at("bands.tif"), NX, NY, v, north_up, 2154, 3, 1);
  ts_raster_stack stack;
  CHECK(ts_raster_stack_read(at("bands.tif"), &stack) == TS_OK && stack.n == 3,
        "3-band GeoTIFF: %d frames", stack.n);
  for (int b = 0; b < stack.n; b++)
    CHECK(is_fixture(&stack.frames[b], 1000.0 * b) && isnan(stack.times[b]) &&
              stack.frames[b].crs != NULL,
          "band %d: values, CRS, no time", b + 1);
  ts_raster_stack_free(&stack);
  ts_raster r;
  CHECK(ts_raster_read(at("bands.tif"), &r) == TS_OK && is_fixture(&r, 0),
        "ts_raster_read of a 3-band GeoTIFF gives band 1");
  ts_raster_free(&r);

  /* rain(time, y, x) with times in hours since a date, y ascending */
  int ncid, dims[3], t_var, x_var, y_var, rain;
  nc_create(at("rain.nc"), NC_CLOBBER | NC_NETCDF4, &ncid);
  nc_def_dim(ncid, "time", 3, &dims[0]);
  nc_def_dim(ncid, "y", NY, &dims[1]);
  nc_def_dim(ncid, "x", NX, &dims[2]);
  nc_def_var(ncid, "time", NC_DOUBLE, 1, &dims[0], &t_var);
  nc_put_att_text(ncid, t_var, "units", 30, "hours since 2000-01-01 00:00:00");
  nc_def_var(ncid, "y", NC_DOUBLE, 1, &dims[1], &y_var);
  nc_put_att_text(ncid, y_var, "standard_name", 23, "projection_y_coordinate");
  nc_def_var(ncid, "x", NC_DOUBLE, 1, &dims[2], &x_var);
  nc_put_att_text(ncid, x_var, "standard_name", 23, "projection_x_coordinate");
  nc_def_var(ncid, "rain", NC_DOUBLE, 3, dims, &rain);
  nc_enddef(ncid);
  double times[3] = {6, 7, 8.5}, xs[NX], ys[NY], values[3 * NY * NX];
  for (int i = 0; i < NX; i++)
    xs[i] = X0 + (i + 0.5) * CELL;
  for (int j = 0; j < NY; j++)
    ys[j] = Y0 + (j + 0.5) * CELL;
  for (int c = 0; c < 3 * NY * NX; c++)
    values[c] = 1000.0 * (c / (NX * NY)) + c % (NX * NY);
  nc_put_var_double(ncid, t_var, times);
  nc_put_var_double(ncid, x_var, xs);
  nc_put_var_double(ncid, y_var, ys);
  nc_put_var_double(ncid, rain, values);
  nc_close(ncid);
  ts_status st = ts_raster_stack_read(at("rain.nc"), &stack);
  CHECK(st == TS_OK && stack.n == 3, "NetCDF time stack: %d frames %s", stack.n,
        st ? ts_error_message() : "");
  if (st == TS_OK && stack.n == 3) {
    CHECK(stack.times[0] == 0 && stack.times[1] == 3600 && stack.times[2] == 9000,
          "times relative to the first, in s: %g %g %g", stack.times[0], stack.times[1],
          stack.times[2]);
    int same = 1;
    for (int b = 0; b < 3; b++) {
      const ts_raster *f = &stack.frames[b];
      same = same && f->ncols == NX && f->nrows == NY && fabs(f->xll - X0) < 1e-6 &&
             fabs(f->yll - Y0) < 1e-6 && fabs(f->cellsize - CELL) < 1e-9;
      for (int c = 0; c < NX * NY; c++)
        same = same && f->v[c] == values[b * NX * NY + c];
    }
    CHECK(same, "frames: geometry and values, row 0 south");
  }
  ts_raster_stack_free(&stack);
}

/* Redirects stderr into DIR/stderr.txt (on = 1) and back (on = 0); returns the bytes written. */
static long capture_stderr(int on) {
  static int saved = -1;
  fflush(stderr);
  if (on) {
    saved = dup(2);
    int fd = open(at("stderr.txt"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 2);
    close(fd);
    return 0;
  }
  dup2(saved, 2);
  close(saved);
  struct stat sb;
  return stat(at("stderr.txt"), &sb) == 0 ? (long)sb.st_size : -1;
}

static void test_refused(void) {
  double v[NX * NY];
  fixture_values(v);
  const double rotated[6] = {X0, CELL, 1.5, Y0 + NY * CELL, 0, -CELL};
  const double oblong[6] = {X0, 10, 0, Y0 + NY * 12.5, 0, -12.5};
  const double west[6] = {X0 + NX * CELL, -CELL, 0, Y0 + NY * CELL, 0, -CELL};
  write_tif(at("rotated.tif"), NX, NY, v, rotated, 2154, 1, 1);
  write_tif(at("oblong.tif"), NX, NY, v, oblong, 2154, 1, 1);
  write_tif(at("west.tif"), NX, NY, v, west, 2154, 1, 1);
  char *good = read_file(at("north.tif"));
  FILE *f = fopen(at("truncated.tif"), "wb");
  fwrite(good, 1, 300, f);
  fclose(f);
  free(good);
  write_file(at("junk.tif"), "II*\001 not really a tiff\n");

  /* Each bad file with the words its one-line error must hold besides the file name. */
  static const struct {
    const char *file, *words[2], *what;
  } bad[] = {
      {"rotated.tif", {"grid is rotated", NULL}, "rotated grid refused"},
      {"oblong.tif",
       {"pixels are not square (dx 10, dy 12.5)", "gdalwarp -tr 10 10"},
       "non-square pixels refused"},
      {"west.tif", {NULL, NULL}, "east-to-west columns refused"},
      {"truncated.tif", {NULL, NULL}, "truncated GeoTIFF refused"},
      {"junk.tif", {NULL, NULL}, "corrupt GeoTIFF refused"},
  };
  enum { NBAD = sizeof bad / sizeof bad[0] };
  ts_status bad_st[NBAD];
  char bad_msg[NBAD][1024];
  ts_raster r;
  capture_stderr(1);
  for (int b = 0; b < NBAD; b++) {
    bad_st[b] = ts_raster_read(at(bad[b].file), &r);
    snprintf(bad_msg[b], sizeof bad_msg[b], "%s", ts_error_message());
  }
  long printed = capture_stderr(0);
  for (int b = 0; b < NBAD; b++) {
    int ok = bad_st[b] == TS_ERR_INPUT && strstr(bad_msg[b], at(bad[b].file)) &&
             !strchr(bad_msg[b], '\n');
    for (int w = 0; w < 2; w++)
      ok = ok && (!bad[b].words[w] || strstr(bad_msg[b], bad[b].words[w]));
    CHECK(ok, "%s: %s", bad[b].what, bad_msg[b]);
  }
  CHECK(printed == 0, "GDAL printed nothing on stderr (%ld bytes)", printed);

  ts_status st = ts_raster_read(at("missing.tif"), &r);
  CHECK(one_line_error(st, TS_ERR_IO, at("missing.tif")) &&
            strstr(ts_error_message(), "cannot open"),
        "missing file: %s", ts_error_message());
  write_file(at("badprj.asc"), "ncols 1\nnrows 1\nxllcorner 0\nyllcorner 0\ncellsize 1\n5\n");
  write_file(at("badprj.prj"), "this is no coordinate system\n");
  st = ts_raster_read(at("badprj.asc"), &r);
  CHECK(one_line_error(st, TS_ERR_INPUT, at("badprj.prj")), "unparsable .prj refused: %s",
        ts_error_message());
}

static void test_geotiff_write(const char *wkt2154) {
  ts_raster r, back;
  ts_raster_alloc(&r, NX, NY, X0, Y0, CELL, -9999);
  for (int j = 0; j < NY; j++)
    for (int i = 0; i < NX; i++)
      r.v[i + j * NX] = cell_value(i, j);
  r.crs = malloc(strlen(wkt2154) + 1);
  strcpy(r.crs, wkt2154);
  ts_error_clear();
  CHECK(ts_geotiff_write(at("out.tif"), &r) == TS_OK, "GeoTIFF written: %s", ts_error_message());
  CHECK(count_files(".out.tif.") == 0, "no temporary file left");
  GDALDatasetH ds = GDALOpen(at("out.tif"), GA_ReadOnly);
  CHECK(ds != NULL, "GDAL opens it");
  if (ds) {
    double gt[6];
    GDALGetGeoTransform(ds, gt);
    CHECK(gt[0] == X0 && gt[1] == CELL && gt[2] == 0 && gt[3] == Y0 + NY * CELL && gt[4] == 0 &&
              gt[5] == -CELL,
          "north-up geotransform, exact");
    OGRSpatialReferenceH want = OSRNewSpatialReference(wkt2154);
    OGRSpatialReferenceH srs = GDALGetSpatialRef(ds);
    CHECK(srs && OSRIsSame(srs, want), "same CRS (OSRIsSame)");
    OSRDestroySpatialReference(want);
    GDALRasterBandH band = GDALGetRasterBand(ds, 1);
    int has = 0, bx = 0, by = 0;
    double nodata = GDALGetRasterNoDataValue(band, &has);
    GDALGetBlockSize(band, &bx, &by);
    const char *compression = GDALGetMetadataItem(ds, "COMPRESSION", "IMAGE_STRUCTURE");
    CHECK(GDALGetRasterDataType(band) == GDT_Float32, "Float32");
    CHECK(has && nodata == -9999, "NoData -9999");
    CHECK(compression && strcmp(compression, "DEFLATE") == 0, "COMPRESSION=%s",
          compression ? compression : "(none)");
    CHECK(bx == 256 && by == 256, "blocks %d x %d", bx, by);
    float rows[NX * NY];
    int same = GDALRasterIO(band, GF_Read, 0, 0, NX, NY, rows, NX, NY, GDT_Float32, 0, 0) == 0;
    for (int row = 0; row < NY; row++)
      for (int i = 0; i < NX; i++) {
        double want_value = cell_value(i, NY - 1 - row);
        same = same && rows[row * NX + i] == (float)(isnan(want_value) ? -9999 : want_value);
      }
    CHECK(same, "values, north row first in the file, NaN as NoData");
    GDALClose(ds);
  }
  CHECK(ts_raster_read(at("out.tif"), &back) == TS_OK && ts_raster_same_geometry(&r, &back) &&
            ts_crs_same(back.crs, wkt2154) && back.v[2 + 3 * NX] == r.v[2 + 3 * NX],
        "ts_raster_read reads it back");
  ts_raster_free(&back);

  ts_status st = ts_geotiff_write(at("no_such_dir/out.tif"), &r);
  CHECK(one_line_error(st, TS_ERR_IO, at("no_such_dir/out.tif")) &&
            !file_exists(at("no_such_dir/out.tif")),
        "unwritable path: %s", ts_error_message());
  mkdir(at("taken.tif"), 0755); /* the rename fails: the temporary must go */
  st = ts_geotiff_write(at("taken.tif"), &r);
  CHECK(one_line_error(st, TS_ERR_IO, at("taken.tif")) && count_files(".taken.tif.") == 0,
        "failed rename leaves no file: %s", ts_error_message());
  ts_raster_free(&r);
}

static void test_crs_helpers(const char *wkt2154) {
  char *wkt = NULL, label[64];
  CHECK(ts_crs_from_user("EPSG:2154", &wkt) == TS_OK && ts_crs_same(wkt, wkt2154),
        "EPSG:2154 parsed");
  ts_crs_label(wkt, label, sizeof label);
  CHECK(strcmp(label, "EPSG:2154") == 0, "label %s", label);
  free(wkt);
  CHECK(ts_crs_from_user("+proj=utm +zone=32 +datum=WGS84 +units=m +no_defs", &wkt) == TS_OK &&
            !ts_crs_same(wkt, wkt2154),
        "PROJ string parsed, differs from EPSG:2154");
  free(wkt);
  ts_status st = ts_crs_from_user("no such crs", &wkt);
  CHECK(st == TS_ERR_INPUT && wkt == NULL && strstr(ts_error_message(), "no such crs") &&
            !strchr(ts_error_message(), '\n'),
        "bad CRS text refused: %s", ts_error_message());
  ts_crs_label(NULL, label, sizeof label);
  CHECK(ts_crs_same(NULL, NULL) && !ts_crs_same(wkt2154, NULL) && label[0] == '\0',
        "unknown CRS: same as unknown only, label \"\"");
  char *esri = NULL;
  CHECK(ts_crs_to_esri(wkt2154, &esri) == TS_OK && strncmp(esri, "PROJCS[", 7) == 0 &&
            !strstr(esri, "AUTHORITY") && ts_crs_same(esri, wkt2154),
        "ESRI WKT of EPSG:2154 is the same CRS");
  free(esri);
}

/* ---------------------------------------------------------------- tessera run */

/* An output GeoTIFF with the bed's geotransform and CRS. */
static int like_bed(const char *path, const double gt_bed[6], const char *wkt) {
  GDALDatasetH ds = GDALOpen(path, GA_ReadOnly);
  if (!ds)
    return 0;
  double gt[6];
  int same = GDALGetGeoTransform(ds, gt) == CE_None && memcmp(gt, gt_bed, sizeof gt) == 0;
  OGRSpatialReferenceH want = OSRNewSpatialReference(wkt), srs = GDALGetSpatialRef(ds);
  same = same && srs && OSRIsSame(srs, want);
  OSRDestroySpatialReference(want);
  GDALClose(ds);
  return same;
}

static void test_cli(const char *wkt2154) {
  enum { BX = 12, BY = 8 };
  const double gt[6] = {X0, 5, 0, Y0 + BY * 5, 0, -5};
  double bed[BX * BY], eta[BX * BY];
  for (int j = 0; j < BY; j++)
    for (int i = 0; i < BX; i++) {
      bed[i + j * BX] = 0.01 * i;
      eta[i + j * BX] = i < 4 ? 1.0 : NODATA;
    }
  write_tif(at("bed.tif"), BX, BY, bed, gt, 2154, 1, 1);
  write_tif(at("eta.tif"), BX, BY, eta, gt, 2154, 1, 1);
  write_tif(at("eta32632.tif"), BX, BY, eta, gt, 32632, 1, 1);
  const char *body = "[model]\ntype = swe\n[time]\nend = 2\n[swe]\nbed = bed.tif\n"
                     "manning = 0.03\n[output]\ntimes = 1\nformats = asc, netcdf, geotiff\n";
  char text[1024];
  snprintf(text, sizeof text, "%sdir = out\n[swe]\ninitial_surface = eta.tif\n", body);
  write_file(at("case.ini"), text);
  int rc = run_tessera("case.ini");
  char line[1024];
  stderr_lines(line, sizeof line);
  CHECK(rc == 0, "GeoTIFF case runs (exit %d) %s", rc, line);

  const char *tifs[] = {"out/h_t000001.tif",   "out/hu_t000001.tif",  "out/hv_t000001.tif",
                        "out/eta_t000001.tif", "out/eta_t000002.tif", "out/max_h.tif",
                        "out/max_speed.tif",   "out/max_eta.tif",     "out/arrival.tif"};
  for (size_t k = 0; k < sizeof tifs / sizeof tifs[0]; k++)
    CHECK(like_bed(at(tifs[k]), gt, wkt2154), "%s: the bed's geotransform and CRS", tifs[k]);
  ts_raster r = {0};
  CHECK(file_exists(at("out/h_t000001.prj")) && file_exists(at("out/max_h.prj")) &&
            ts_raster_read(at("out/h_t000001.asc"), &r) == TS_OK && ts_crs_same(r.crs, wkt2154),
        ".prj beside h_t000001.asc and max_h.asc, in the bed's CRS");
  ts_raster_free(&r);
  int ncid, var;
  char mapping[16] = "", max_mapping[16] = "", wkt[4096] = "";
  size_t len = 0;
  if (nc_open(at("out/swe.nc"), NC_NOWRITE, &ncid) == NC_NOERR) {
    if (nc_inq_varid(ncid, "eta", &var) == NC_NOERR)
      nc_get_att_text(ncid, var, "grid_mapping", mapping);
    if (nc_inq_varid(ncid, "max_h", &var) == NC_NOERR)
      nc_get_att_text(ncid, var, "grid_mapping", max_mapping);
    if (nc_inq_varid(ncid, "crs", &var) == NC_NOERR &&
        nc_inq_attlen(ncid, var, "crs_wkt", &len) == NC_NOERR && len < sizeof wkt)
      nc_get_att_text(ncid, var, "crs_wkt", wkt);
    nc_close(ncid);
  }
  CHECK(strcmp(mapping, "crs") == 0 && strcmp(max_mapping, "crs") == 0,
        "swe.nc eta and max_h: grid_mapping \"%s\", \"%s\"", mapping, max_mapping);
  CHECK(ts_crs_same(wkt, wkt2154), "swe.nc crs: crs_wkt in the bed's CRS");
  char *summary = read_file(at("out/summary.json"));
  const char *keys[] = {"\"crs\": \"EPSG:2154\"",           "\"h\": \"h_t000001.asc\"",
                        "\"h_tif\": \"h_t000001.tif\"",     "\"hu_tif\": \"hu_t000001.tif\"",
                        "\"hv_tif\": \"hv_t000001.tif\"",   "\"eta_tif\": \"eta_t000002.tif\"",
                        "\"h_tif\": \"max_h.tif\"",         "\"speed_tif\": \"max_speed.tif\"",
                        "\"arrival_tif\": \"arrival.tif\"", "\"eta_tif\": \"max_eta.tif\"",
                        "\"speed\": \"max_speed.asc\""};
  for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
    CHECK(summary && strstr(summary, keys[k]), "summary.json has %s", keys[k]);
  free(summary);

  snprintf(text, sizeof text, "%sdir = out2\n[swe]\ninitial_surface = eta32632.tif\n", body);
  write_file(at("case2.ini"), text);
  rc = run_tessera("case2.ini");
  int lines = stderr_lines(line, sizeof line);
  CHECK(rc == 2 && lines == 1 && strstr(line, "eta32632.tif") && strstr(line, "bed.tif") &&
            strstr(line, "EPSG:32632") && strstr(line, "EPSG:2154") && !file_exists(at("out2")),
        "surface in another CRS refused (exit %d, %d line): %s", rc, lines, line);
  snprintf(text, sizeof text, "%sdir = out2\n[swe]\ncrs = EPSG:32632\n", body);
  write_file(at("case3.ini"), text);
  rc = run_tessera("case3.ini");
  lines = stderr_lines(line, sizeof line);
  CHECK(rc == 2 && lines == 1 && strstr(line, "case3.ini:13:") && strstr(line, "EPSG:32632") &&
            strstr(line, "EPSG:2154") && strstr(line, "bed.tif") && !file_exists(at("out2")),
        "[swe] crs against the bed's refused (exit %d): %s", rc, line);
  write_tif(at("bed4326.tif"), BX, BY, bed, gt, 4326, 1, 1);
  write_file(at("case4.ini"), "[model]\ntype = swe\n[time]\nend = 2\n[swe]\nbed = bed4326.tif\n"
                              "[output]\ndir = out4\n");
  rc = run_tessera("case4.ini");
  lines = stderr_lines(line, sizeof line);
  CHECK(rc == 2 && lines == 1 && strstr(line, "bed4326.tif") && strstr(line, "EPSG:4326") &&
            strstr(line, "geographic") && !file_exists(at("out4")),
        "a bed in degrees refused (exit %d): %s", rc, line);
}

#else /* a build without GDAL */

static void test_without_gdal(void) {
  ts_raster r;
  write_file(at("x.tif"), "II*\001 a tiff\n");
  ts_status st = ts_raster_read(at("x.tif"), &r);
  CHECK(one_line_error(st, TS_ERR_INPUT, at("x.tif")) &&
            strstr(ts_error_message(), "this build has no GDAL"),
        "non-ASCII grid refused: %s", ts_error_message());
  st = ts_raster_read(at("missing.asc"), &r);
  CHECK(one_line_error(st, TS_ERR_IO, at("missing.asc")) &&
            strstr(ts_error_message(), "cannot open"),
        "missing grid: %s", ts_error_message());
  ts_raster_alloc(&r, NX, NY, X0, Y0, CELL, -9999);
  for (int c = 0; c < NX * NY; c++)
    r.v[c] = c;
  CHECK(ts_geotiff_write(at("out.tif"), &r) != TS_OK && strstr(ts_error_message(), "no GDAL") &&
            !file_exists(at("out.tif")),
        "GeoTIFF refused: %s", ts_error_message());
  ts_raster_free(&r);
  write_file(at("prj.asc"), "ncols 1\nnrows 1\nxllcorner 0\nyllcorner 0\ncellsize 1\n5\n");
  write_file(at("prj.prj"), "  PROJCS[\"x\"]\n");
  CHECK(ts_raster_read(at("prj.asc"), &r) == TS_OK && r.crs && strcmp(r.crs, "PROJCS[\"x\"]") == 0,
        ".prj kept as text");
  ts_raster_free(&r);
  CHECK(ts_crs_same("A", "A") && !ts_crs_same("A", "B") && ts_crs_same(NULL, NULL),
        "CRS compared as strings");

  write_file(at("bed.asc"), "ncols 2\nnrows 2\nxllcorner 0\nyllcorner 0\ncellsize 1\n0 0\n0 0\n");
  write_file(at("case.ini"), "[model]\ntype = swe\n[time]\nend = 1\n[swe]\nbed = bed.asc\n"
                             "[output]\ndir = out\nformats = asc, geotiff\n");
  char line[1024];
  int rc = run_tessera("case.ini");
  int lines = stderr_lines(line, sizeof line);
  CHECK(rc == 2 && lines == 1 && strstr(line, "case.ini:9:") && strstr(line, "needs GDAL") &&
            !file_exists(at("out")),
        "formats = geotiff refused (exit %d): %s", rc, line);
}

#endif

int main(void) {
  snprintf(dir, sizeof dir, "/tmp/tessera_gdal_XXXXXX");
  if (!mkdtemp(dir))
    return 1;
  test_prj_path();
#if TESSERA_HAVE_GDAL
  GDALAllRegister();
  char *wkt2154 = epsg_wkt(2154);
  test_crs_helpers(wkt2154);
  test_read_geotiff(wkt2154);
  test_stacks();
  test_refused();
  test_geotiff_write(wkt2154);
  test_asc_prj(wkt2154);
  test_netcdf_crs(wkt2154);
  if (getenv("TESSERA_BINARY"))
    test_cli(wkt2154);
  else
    CHECK(0, "TESSERA_BINARY is not set");
  free(wkt2154);
#else
  if (getenv("TESSERA_BINARY"))
    test_without_gdal();
  else
    CHECK(0, "TESSERA_BINARY is not set");
  test_asc_prj("PROJCS[\"some CRS\"]");
  test_netcdf_crs("PROJCS[\"some CRS\"]");
#endif
  return finish_in_dir(dir, failures);
}
