/* Unit tests of the output and auxiliary input formats: NetCDF, VTI (2D rasters, 2D and 3D grids
 * with vector arrays, decoded back from base64), PNG (depth and scalar field maps, read back with
 * libpng), gauge and time-series CSV files, the JSON writer and reader and the temporary-file
 * helpers (unique hidden names, commit, a failed commit leaving nothing). */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include "tessera/io.h"

#include <math.h>
#include <netcdf.h>
#include <png.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit/check.h"
#include "unit/test_files.h"

static void test_netcdf(void) {
  ts_raster geom = {4, 3, 100.0, -50.0, 10.0, -9999.0, NULL, NULL};
  double h[12], u[12];
  for (int c = 0; c < 12; c++) {
    h[c] = 0.25 * c;
    u[c] = -c;
  }
  h[5] = NAN;
  ts_out_var vars[2] = {{"h", "water depth", "m", h}, {"u", "velocity x", "m s-1", u}};
  CHECK(ts_netcdf_write("io_out.nc", &geom, 600.0, 2, vars) == TS_OK, "NetCDF written: %s",
        ts_error_message());
  CHECK(temp_files(".", "io_out.nc") == 0, "no NetCDF temporary file left");
  int ncid, dim, var, format;
  size_t length;
  CHECK(nc_open("io_out.nc", NC_NOWRITE, &ncid) == NC_NOERR, "NetCDF re-opened with nc_open");
  nc_inq_format(ncid, &format);
  CHECK(format == NC_FORMAT_NETCDF4_CLASSIC, "format is NetCDF-4 classic model");
  nc_inq_dimid(ncid, "x", &dim);
  nc_inq_dimlen(ncid, dim, &length);
  CHECK(length == 4, "dimension x = 4");
  nc_inq_dimid(ncid, "y", &dim);
  nc_inq_dimlen(ncid, dim, &length);
  CHECK(length == 3, "dimension y = 3");
  nc_inq_dimid(ncid, "time", &dim);
  nc_inq_dimlen(ncid, dim, &length);
  CHECK(length == 1, "dimension time = 1");
  char text[64] = "";
  nc_get_att_text(ncid, NC_GLOBAL, "Conventions", text);
  CHECK(strcmp(text, "CF-1.8") == 0, "Conventions = CF-1.8");
  double coordinate[4], time;
  nc_inq_varid(ncid, "x", &var);
  nc_get_var_double(ncid, var, coordinate);
  CHECK(coordinate[0] == 105.0 && coordinate[3] == 135.0, "x holds cell centres 105 .. 135");
  nc_inq_varid(ncid, "y", &var);
  nc_get_var_double(ncid, var, coordinate);
  CHECK(coordinate[0] == -45.0 && coordinate[2] == -25.0, "y holds cell centres, south first");
  nc_inq_varid(ncid, "time", &var);
  nc_get_var_double(ncid, var, &time);
  CHECK(time == 600.0, "time = 600 s");
  float h_read[12], fill = 0;
  nc_inq_varid(ncid, "h", &var);
  nc_get_var_float(ncid, var, h_read);
  nc_get_att_float(ncid, var, "_FillValue", &fill);
  memset(text, 0, sizeof text);
  nc_get_att_text(ncid, var, "units", text);
  CHECK(strcmp(text, "m") == 0, "h units m");
  CHECK(h_read[2 + 2 * 4] == 2.5f, "h at (i=2, j=2) = 2.5");
  CHECK(fill == NC_FILL_FLOAT && h_read[5] == fill, "NaN stored as _FillValue %g", fill);
  nc_close(ncid);
}

/* A 3D grid: dimensions time, z, y, x with cell-centre coordinates, x fastest in the values. */
static void test_netcdf_3d(void) {
  ts_grid grid = {.dim = 3, .n = {4, 3, 2}, .dx = {0.5, 1, 2}, .origin = {0, 10, -4}};
  double q[24];
  for (int c = 0; c < 24; c++)
    q[c] = c;
  ts_out_var var = {"divq", "divergence of the radiative flux", "W/m3", q};
  CHECK(ts_netcdf_write_grid("io_out3d.nc", &grid, NULL, "test", 0, 1, &var) == TS_OK,
        "3D NetCDF written: %s", ts_error_message());
  int ncid, dims[4], ndims = 0, var_id;
  CHECK(nc_open("io_out3d.nc", NC_NOWRITE, &ncid) == NC_NOERR, "3D NetCDF re-opened");
  nc_inq_varid(ncid, "divq", &var_id);
  nc_inq_varndims(ncid, var_id, &ndims);
  nc_inq_vardimid(ncid, var_id, dims);
  char names[4][NC_MAX_NAME + 1] = {"", "", "", ""};
  for (int d = 0; d < ndims && d < 4; d++)
    nc_inq_dimname(ncid, dims[d], names[d]);
  CHECK(ndims == 4 && !strcmp(names[0], "time") && !strcmp(names[1], "z") &&
            !strcmp(names[2], "y") && !strcmp(names[3], "x"),
        "divq has dimensions time, z, y, x");
  double z[2];
  int z_id;
  nc_inq_varid(ncid, "z", &z_id);
  nc_get_var_double(ncid, z_id, z);
  CHECK(z[0] == -3 && z[1] == -1, "z holds cell centres -3, -1");
  float back[24];
  nc_get_var_float(ncid, var_id, back);
  CHECK(back[1 + 4 * (2 + 3 * 1)] == 21.0f, "divq at (i=1, j=2, k=1) = 21");
  nc_close(ncid);
}

static void test_vti(void) {
  ts_raster geom = {4, 3, 100.0, -50.0, 10.0, -9999.0, NULL, NULL};
  double h[12] = {0};
  ts_out_var vars[1] = {{"h", "water depth", "m", h}};
  CHECK(ts_vti_write("io_out.vti", &geom, 60.0, 1, vars) == TS_OK, "VTI written");
  char *text = read_file("io_out.vti");
  CHECK(text && strstr(text, "<VTKFile type=\"ImageData\""), "VTKFile ImageData element");
  CHECK(text && strstr(text, "WholeExtent=\"0 4 0 3 0 0\""), "WholeExtent counts points");
  CHECK(text && strstr(text, "Origin=\"100 -50 0\" Spacing=\"10 10 1\""), "Origin and Spacing");
  CHECK(text && strstr(text, "Name=\"TimeValue\"") && strstr(text, ">60</DataArray>"),
        "TimeValue field data");
  CHECK(text && strstr(text, "<DataArray type=\"Float32\" Name=\"h\" format=\"binary\">"),
        "Float32 binary cell array h");
  /* 12 floats = 48 bytes: the UInt32 header 48 encodes as "MAAAAA==", 48 zero bytes as 64 'A'. */
  char encoded[8 + 64 + 2] = "MAAAAA==";
  memset(encoded + 8, 'A', 64);
  strcpy(encoded + 72, "\n");
  CHECK(text && strstr(text, encoded), "base64 byte-count header and data");
  free(text);
}

/* Decodes base64 text of `length` characters (stopping at '=' padding) into out; returns the
 * number of bytes, or -1 on a character outside the base64 alphabet. */
static long decode_base64(const char *text, size_t length, unsigned char *out) {
  static const char digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  long n = 0;
  unsigned bits = 0, count = 0;
  for (size_t k = 0; k < length && text[k] != '='; k++) {
    const char *digit = text[k] ? strchr(digits, text[k]) : NULL;
    if (!digit)
      return -1;
    bits = (bits << 6 | (unsigned)(digit - digits)) & 0xffffu;
    count += 6;
    if (count >= 8) {
      count -= 8;
      out[n++] = (unsigned char)(bits >> count);
    }
  }
  return n;
}

/* Reads the binary DataArray `name` of a .vti file's text: its NumberOfComponents (1 when
 * absent) and its Float32 values, base64 encoded as a UInt32 byte count on its own and then the
 * data. Returns the number of values, or -1 if the array is missing or malformed. */
static int read_vti_array(const char *text, const char *name, int *ncomp, float *values, int max) {
  char key[64];
  snprintf(key, sizeof key, "Name=\"%s\"", name);
  const char *tag = text ? strstr(text, key) : NULL;
  const char *end = tag ? strchr(tag, '>') : NULL;
  if (!end)
    return -1;
  const char *components = strstr(tag, "NumberOfComponents=\"");
  *ncomp = components && components < end ? atoi(components + strlen("NumberOfComponents=\"")) : 1;
  const char *data = end + 1 + strspn(end + 1, " \n");
  unsigned char header[6];
  uint32_t bytes;
  if (decode_base64(data, 8, header) != 4)
    return -1;
  memcpy(&bytes, header, sizeof bytes);
  data += 8;
  if (bytes > max * sizeof(float) ||
      decode_base64(data, strcspn(data, "\n<"), (unsigned char *)values) != (long)bytes)
    return -1;
  return (int)(bytes / sizeof(float));
}

static void test_vti_grid_3d(void) {
  enum { NX = 3, NY = 2, NZ = 2, CELLS = NX * NY * NZ, NAN_CELL = 1 + NX * (1 + NY * 1) };
  ts_grid grid = {3, {NX, NY, NZ}, {0.5, 0.25, 2.0}, {-1.0, 2.0, 0.5}};
  double rho[CELLS], ux[CELLS], uy[CELLS], uz[CELLS];
  for (int k = 0; k < NZ; k++)
    for (int j = 0; j < NY; j++)
      for (int i = 0; i < NX; i++) {
        int c = i + NX * (j + NY * k);
        rho[c] = 100 * k + 10 * j + i + 0.5;
        ux[c] = i;
        uy[c] = -0.25 * j;
        uz[c] = 0.125 * k + 1e-3;
      }
  rho[NAN_CELL] = NAN; /* cell (1, 1, 1) */
  ts_out_var vars[1] = {{"rho", "density", "1", rho}};
  ts_out_vector vectors[1] = {{"u", "velocity", "m s-1", {ux, uy, uz}}};
  CHECK(ts_vti_write_grid("io_grid3d.vti", &grid, 2.5, 1, vars, 1, vectors) == TS_OK,
        "3D VTI written: %s", ts_error_message());
  CHECK(temp_files(".", "io_grid3d.vti") == 0, "no 3D VTI temporary file left");
  char *text = read_file("io_grid3d.vti");
  CHECK(text && strstr(text, "WholeExtent=\"0 3 0 2 0 2\"") &&
            strstr(text, "<Piece Extent=\"0 3 0 2 0 2\">"),
        "3D WholeExtent and Piece Extent count points");
  CHECK(text && strstr(text, "Origin=\"-1 2 0.5\" Spacing=\"0.5 0.25 2\""), "3D Origin, Spacing");
  CHECK(text && strstr(text, "Name=\"TimeValue\"") && strstr(text, ">2.5</DataArray>"),
        "3D TimeValue field data");
  CHECK(text && strstr(text, "<DataArray type=\"Float32\" Name=\"rho\" format=\"binary\">") &&
            strstr(text, "<DataArray type=\"Float32\" Name=\"u\" NumberOfComponents=\"3\" "
                         "format=\"binary\">"),
        "scalar array rho and 3-component array u");
  float values[3 * CELLS + 1];
  int ncomp = 0;
  int count = read_vti_array(text, "rho", &ncomp, values, 3 * CELLS + 1);
  int same = count == CELLS && ncomp == 1;
  for (int c = 0; same && c < CELLS; c++)
    same = c == NAN_CELL ? isnan(values[c]) : values[c] == (float)rho[c];
  CHECK(same, "rho decodes to 12 values, i + n0 * (j + n1 * k) order, NaN kept (%d values)", count);
  count = read_vti_array(text, "u", &ncomp, values, 3 * CELLS + 1);
  same = count == 3 * CELLS && ncomp == 3;
  for (int c = 0; same && c < CELLS; c++)
    same = values[3 * c] == (float)ux[c] && values[3 * c + 1] == (float)uy[c] &&
           values[3 * c + 2] == (float)uz[c];
  CHECK(same, "u decodes to 12 interleaved (x, y, z) tuples (%d values)", count);
  free(text);

  ts_grid flat = {2, {NX, NY, 2}, {1, 1, 1}, {0, 0, 0}};
  CHECK(ts_vti_write_grid("io_bad.vti", &flat, 0, 1, vars, 0, NULL) == TS_ERR_INPUT &&
            strstr(ts_error_message(), "io_bad.vti: cannot write a 2D grid of 3 x 2 x 2 cells"),
        "2D grid with n[2] = 2 rejected: %s", ts_error_message());
  vectors[0].v[2] = NULL;
  CHECK(ts_vti_write_grid("io_bad.vti", &grid, 0, 0, NULL, 1, vectors) == TS_ERR_INPUT &&
            strstr(ts_error_message(), "io_bad.vti: vector 'u' lacks a component of the 3D grid"),
        "3D vector without z component rejected: %s", ts_error_message());
  CHECK(!file_exists("io_bad.vti"), "no file written for a rejected grid");
}

static void test_vti_grid_2d(void) {
  enum { NX = 3, NY = 2, CELLS = NX * NY };
  ts_grid grid = ts_grid_2d(NX, NY, 0.5, 10.0, -4.0);
  double p[CELLS], ux[CELLS], uy[CELLS];
  for (int c = 0; c < CELLS; c++) {
    p[c] = 1.0 / (c + 1);
    ux[c] = 0.5 * c;
    uy[c] = -2.0 * c;
  }
  ts_out_var vars[1] = {{"p", "pressure", "Pa", p}};
  ts_out_vector vectors[1] = {{"u", "velocity", "m s-1", {ux, uy, NULL}}};
  CHECK(ts_vti_write_grid("io_grid2d.vti", &grid, 0.0, 1, vars, 1, vectors) == TS_OK,
        "2D VTI written: %s", ts_error_message());
  char *text = read_file("io_grid2d.vti");
  CHECK(text && strstr(text, "WholeExtent=\"0 3 0 2 0 0\""), "2D grid is a flat image");
  CHECK(text && strstr(text, "Origin=\"10 -4 0\" Spacing=\"0.5 0.5 1\""), "2D Origin, Spacing");
  float values[3 * CELLS + 1];
  int ncomp = 0;
  int count = read_vti_array(text, "p", &ncomp, values, 3 * CELLS + 1);
  int same = count == CELLS && ncomp == 1;
  for (int c = 0; same && c < CELLS; c++)
    same = values[c] == (float)p[c];
  CHECK(same, "2D p decodes to 6 values (%d values)", count);
  count = read_vti_array(text, "u", &ncomp, values, 3 * CELLS + 1);
  same = count == 3 * CELLS && ncomp == 3;
  for (int c = 0; same && c < CELLS; c++)
    same = values[3 * c] == (float)ux[c] && values[3 * c + 1] == (float)uy[c] &&
           values[3 * c + 2] == 0.0f;
  CHECK(same, "2D u decodes to (x, y, 0) tuples (%d values)", count);
  free(text);
}

/* Reads a PNG file as 8-bit RGB with libpng; returns the malloc'ed pixels (NULL on failure). */
static unsigned char *read_png_rgb(const char *path, unsigned *width, unsigned *height) {
  png_image image;
  memset(&image, 0, sizeof image);
  image.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_file(&image, path))
    return NULL;
  image.format = PNG_FORMAT_RGB;
  unsigned char *rgb = malloc(PNG_IMAGE_SIZE(image));
  if (!png_image_finish_read(&image, NULL, rgb, 0, NULL)) {
    free(rgb);
    return NULL;
  }
  *width = image.width;
  *height = image.height;
  return rgb;
}

static void test_png(void) {
  enum { NX = 50, NY = 30 };
  ts_raster geom = {NX, NY, 0.0, 0.0, 5.0, -9999.0, NULL, NULL};
  static double bed[NX * NY], depth[NX * NY];
  for (int j = 0; j < NY; j++)
    for (int i = 0; i < NX; i++) {
      bed[i + j * NX] = 0.1 * i + 0.05 * j;
      depth[i + j * NX] = i < 10 ? 3.0 : 0.0;
    }
  bed[(NX - 1) + (NY - 1) * NX] = NAN; /* north-east corner inactive */
  CHECK(ts_png_write_depth("io_map.png", &geom, bed, depth, 1e-3, 4.0, "t = 600 s") == TS_OK,
        "PNG written: %s", ts_error_message());
  unsigned width = 0, height = 0;
  unsigned char *rgb = read_png_rgb("io_map.png", &width, &height);
  CHECK(rgb != NULL, "PNG re-read with libpng");
  /* 50 cells scaled 12x to 600 px, plus the colour bar panel (158 px). */
  CHECK(width == 758 && height == 360, "PNG size %u x %u (758 x 360)", width, height);
  if (!rgb)
    return;
  const unsigned char *wet = rgb + 3 * (200 * width + 30);     /* cell (2, 13): wet */
  const unsigned char *dry = rgb + 3 * (200 * width + 300);    /* cell (25, 13): dry */
  const unsigned char *inactive = rgb + 3 * (5 * width + 595); /* north-east cell */
  CHECK(wet[2] > wet[0] + 60, "wet cell is blue (%d %d %d)", wet[0], wet[1], wet[2]);
  CHECK(dry[0] == dry[1] && dry[1] == dry[2] && dry[0] < 220, "dry cell is a grey shade (%d)",
        dry[0]);
  CHECK(inactive[0] == 232 && inactive[2] == 232, "inactive cell is light grey, north up");
  free(rgb);

  enum { WIDE = 500 };
  static double wide_bed[WIDE * 4], wide_depth[WIDE * 4];
  ts_raster wide = {WIDE, 4, 0.0, 0.0, 1.0, -9999.0, NULL, NULL};
  CHECK(ts_png_write_depth("io_wide.png", &wide, wide_bed, wide_depth, 1e-3, 1.0, "wide") == TS_OK,
        "PNG of a wide grid written");
  rgb = read_png_rgb("io_wide.png", &width, &height);
  CHECK(rgb && width == WIDE + 158, "wide grid drawn at one pixel per cell (%u px)", width);
  free(rgb);
}

static void test_png_field(void) {
  enum { NX = 4, NY = 3, SCALE = 20 };
  double values[NX * NY];
  for (int c = 0; c < NX * NY; c++)
    values[c] = 0.5;
  values[0 + 0 * NX] = -1.0; /* vmin, bottom left */
  values[1 + 0 * NX] = NAN;
  values[2 + 0 * NX] = -7.0; /* below vmin: clamped */
  values[3 + 2 * NX] = 2.0;  /* vmax, top right */
  values[2 + 2 * NX] = 9.0;  /* above vmax: clamped */
  CHECK(ts_png_write_field("io_field.png", NX, NY, values, -1.0, 2.0, SCALE, "|u| / U", "t=1") ==
            TS_OK,
        "field PNG written: %s", ts_error_message());
  CHECK(temp_files(".", "io_field.png") == 0, "no field PNG temporary file left");
  unsigned width = 0, height = 0;
  unsigned char *rgb = read_png_rgb("io_field.png", &width, &height);
  CHECK(rgb != NULL, "field PNG re-read with libpng");
  /* An 80 x 60 px map, then the colour bar panel (158 px); the height fits the bar and label. */
  CHECK(width == 238 && height == 224, "field PNG size %u x %u (238 x 224)", width, height);
  if (!rgb)
    return;
  static const struct {
    int i, j;
    unsigned char r, g, b;
    const char *what;
  } cells[] = {
      {0, 0, 68, 1, 84, "vmin cell is the low end of viridis"},
      {2, 0, 68, 1, 84, "cell below vmin is clamped to the low end"},
      {1, 0, 232, 232, 232, "NaN cell is grey"},
      {3, 2, 253, 231, 37, "vmax cell (top right) is the high end of viridis"},
      {2, 2, 253, 231, 37, "cell above vmax is clamped to the high end"},
  };
  for (size_t k = 0; k < sizeof cells / sizeof cells[0]; k++) {
    int x = cells[k].i * SCALE + SCALE / 2, y = (NY - 1 - cells[k].j) * SCALE + SCALE / 2;
    const unsigned char *p = rgb + 3 * ((size_t)y * width + x);
    CHECK(p[0] == cells[k].r && p[1] == cells[k].g && p[2] == cells[k].b, "%s (%d %d %d)",
          cells[k].what, p[0], p[1], p[2]);
  }
  free(rgb);

  CHECK(ts_png_write_field("io_bad.png", NX, NY, values, 1.0, 1.0, 1, NULL, NULL) == TS_ERR_INPUT &&
            strstr(ts_error_message(), "io_bad.png: colour range 1 .. 1 must be finite"),
        "empty colour range rejected: %s", ts_error_message());
  CHECK(ts_png_write_field("io_bad.png", NX, NY, values, 0.0, 1.0, 0, NULL, NULL) == TS_ERR_INPUT &&
            strstr(ts_error_message(), "io_bad.png: a map of 4 x 3 cells at 0 pixels per cell"),
        "scale 0 rejected: %s", ts_error_message());
  CHECK(ts_png_write_field("no_such_dir/field.png", NX, NY, values, 0.0, 1.0, 1, NULL, NULL) ==
                TS_ERR_IO &&
            strstr(ts_error_message(), "no_such_dir/field.png: cannot write"),
        "field PNG into a missing directory: %s", ts_error_message());
  CHECK(!file_exists("io_bad.png"), "no file written for rejected field maps");
}

static void test_gauges(void) {
  ts_raster geom = {10, 10, 0.0, 100.0, 10.0, -9999.0, NULL, NULL};
  ts_gauges g;
  write_file("io_gauges.csv", " id , x , y \r\nG1,5,105\n\nriver mouth, 99.5 ,199.9\n");
  CHECK(ts_gauges_read("io_gauges.csv", &geom, &g) == TS_OK, "gauges read: %s", ts_error_message());
  CHECK(g.n == 2 && strcmp(g.id[1], "river mouth") == 0, "two gauges, ids trimmed");
  CHECK(g.i[0] == 0 && g.j[0] == 0 && g.i[1] == 9 && g.j[1] == 9, "cell indices by floor");
  ts_gauges_free(&g);

  static const struct {
    const char *text, *expected;
  } cases[] = {
      {"", "io_bad.csv:1: empty file"},
      {"name,x,y\n", "io_bad.csv:1: expected header 'id,x,y'"},
      {"id,x,y\n", "io_bad.csv:1: no gauges"},
      {"id,x,y\nA,1,101\nB,2\n", "io_bad.csv:3: expected 3 columns (id,x,y), found 2"},
      {"id,x,y\nA,1,101,7\n", "io_bad.csv:2: expected 3 columns"},
      {"id,x,y\nA,1,abc\n", "io_bad.csv:2: gauge 'A': y 'abc' is not a finite number"},
      {"id,x,y\nA,nan,101\n", "io_bad.csv:2: gauge 'A': x 'nan' is not a finite number"},
      {"id,x,y\nA,1,101\n\nA,2,102\n", "io_bad.csv:4: duplicate gauge id 'A'"},
      {"id,x,y\nA,1,101\nB,2,102\nG3,100,150\n", "io_bad.csv:4: gauge 'G3' at (100, 150)"},
      {"id,x,y\nlow,5,99.9\n", "io_bad.csv:2: gauge 'low' at (5, 99.9) is outside"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    write_file("io_bad.csv", cases[k].text);
    ts_status status = ts_gauges_read("io_bad.csv", &geom, &g);
    CHECK(status == TS_ERR_INPUT && strstr(ts_error_message(), cases[k].expected) && g.n == 0,
          "gauge error %zu: expected '%s', got '%s'", k, cases[k].expected, ts_error_message());
  }
  CHECK(ts_gauges_read("io_missing.csv", &geom, &g) == TS_ERR_IO, "missing gauge file");
}

static void test_series(void) {
  int n;
  double *t, *v;
  write_file("io_series.csv", "t , q\n0, 10\n60,20.5\n\n120 ,0\n");
  CHECK(ts_series_read("io_series.csv", -INFINITY, &n, &t, &v) == TS_OK,
        "series with header read: %s", ts_error_message());
  CHECK(n == 3 && t[1] == 60 && v[1] == 20.5 && t[2] == 120 && v[2] == 0, "series values");
  free(t);
  free(v);
  write_file("io_series.csv", "0,1\n");
  CHECK(ts_series_read("io_series.csv", -INFINITY, &n, &t, &v) == TS_OK && n == 1 && v[0] == 1,
        "one row without header");
  free(t);
  free(v);
  static const struct {
    const char *text, *expected;
  } cases[] = {
      {"", "io_series.csv:1: no data rows"},
      {"t,q\n", "io_series.csv:1: no data rows"},
      {"t,q\n0,1\n0,2\n", "io_series.csv:3: time 0 is not greater than the previous time 0"},
      {"0,1\n5,x\n", "io_series.csv:2: value 'x' is not a finite number"},
      {"0,1\nt,2\n", "io_series.csv:2: time 't' is not a finite number"},
      {"0,1\n1,2,3\n", "io_series.csv:2: expected 2 columns, found 3"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    write_file("io_series.csv", cases[k].text);
    ts_status status = ts_series_read("io_series.csv", -INFINITY, &n, &t, &v);
    CHECK(status == TS_ERR_INPUT && strstr(ts_error_message(), cases[k].expected) && t == NULL,
          "series error %zu: expected '%s', got '%s'", k, cases[k].expected, ts_error_message());
  }
  write_file("io_series.csv", "0,1\n60,-0.5\n");
  CHECK(ts_series_read("io_series.csv", 0, &n, &t, &v) == TS_ERR_INPUT &&
            strstr(ts_error_message(),
                   "io_series.csv:2: value -0.5 is below the smallest allowed, 0") &&
            t == NULL,
        "value below the minimum: %s", ts_error_message());
}

static void test_json(void) {
  FILE *f = fopen("io_summary.json", "wb");
  ts_json j;
  ts_json_begin(&j, f);
  ts_json_key(&j, "name");
  ts_json_string(&j, "a \"b\"\\c\n\x01");
  ts_json_key(&j, "numbers");
  ts_json_array_begin(&j);
  ts_json_number(&j, 0.1);
  ts_json_number(&j, 1.0 / 3.0);
  ts_json_number(&j, NAN);
  ts_json_number(&j, -INFINITY);
  ts_json_int(&j, -42);
  ts_json_array_end(&j);
  ts_json_key(&j, "nested");
  ts_json_object_begin(&j);
  ts_json_key(&j, "ok");
  ts_json_bool(&j, 1);
  ts_json_key(&j, "none");
  ts_json_null(&j);
  ts_json_key(&j, "empty");
  ts_json_object_begin(&j);
  ts_json_object_end(&j);
  ts_json_object_end(&j);
  ts_json_end(&j);
  fclose(f);
  const char *expected = "{\n"
                         "  \"name\": \"a \\\"b\\\"\\\\c\\u000a\\u0001\",\n"
                         "  \"numbers\": [\n"
                         "    0.1,\n"
                         "    0.3333333333333333,\n"
                         "    null,\n"
                         "    null,\n"
                         "    -42\n"
                         "  ],\n"
                         "  \"nested\": {\n"
                         "    \"ok\": true,\n"
                         "    \"none\": null,\n"
                         "    \"empty\": {}\n"
                         "  }\n"
                         "}\n";
  char *text = read_file("io_summary.json");
  CHECK(text && strcmp(text, expected) == 0, "JSON output:\n%s", text ? text : "(none)");
  free(text);
}

/* Runs first: TESSERA_TEST_FAIL_WRITE counts the commits of the process. */
static void test_temp_files(void) {
  char tmp_path[256], other[256];
  setenv("TESSERA_TEST_FAIL_WRITE", "2", 1); /* the second commit fails */
  FILE *f = ts_open_temp("no_such_dir/out.txt", tmp_path, sizeof tmp_path);
  CHECK(f == NULL && strstr(ts_error_message(), "no_such_dir/out.txt: cannot write"),
        "temp file in a missing directory fails: %s", ts_error_message());
  remove("io_temp.txt");
  int before = temp_files(".", "io_temp.txt"); /* 0 unless an earlier run of this test failed */
  f = ts_open_temp("io_temp.txt", tmp_path, sizeof tmp_path);
  FILE *g = ts_open_temp("io_temp.txt", other, sizeof other);
  CHECK(f && g && strncmp(tmp_path, ".io_temp.txt.", 13) == 0 && strlen(tmp_path) == 19 &&
            strcmp(tmp_path, other) != 0 && temp_files(".", "io_temp.txt") == before + 2,
        "two temporaries of one path: %s and %s", tmp_path, other);
  fputs("data\n", f);
  CHECK(ts_commit_temp(f, tmp_path, "io_temp.txt") == TS_OK && file_exists("io_temp.txt") &&
            !file_exists(tmp_path) && temp_files(".", "io_temp.txt") == before + 1,
        "commit renames the temp file");
  fputs("partial", g);
  ts_status st = ts_commit_temp(g, other, "io_temp.txt");
  char *text = read_file("io_temp.txt");
  CHECK(st == TS_ERR_IO && strstr(ts_error_message(), "io_temp.txt: cannot write: No space left") &&
            text && strcmp(text, "data\n") == 0 && temp_files(".", "io_temp.txt") == before,
        "a failed commit (TESSERA_TEST_FAIL_WRITE) keeps the complete file, removes the temporary: "
        "%s",
        ts_error_message());
  free(text);
  unsetenv("TESSERA_TEST_FAIL_WRITE");
  CHECK(ts_open_temp("io_temp_dir/", tmp_path, sizeof tmp_path) == NULL && tmp_path[0] == '\0',
        "a path ending in / is no file: %s", ts_error_message());
  CHECK(ts_open_temp("io_temp.txt", tmp_path, 19) == NULL && tmp_path[0] == '\0',
        "a temporary name that does not fit: %s", ts_error_message());
  CHECK(ts_make_temp("io_made.txt", tmp_path, sizeof tmp_path) == TS_OK && file_exists(tmp_path),
        "an empty temporary for a library that writes by name");
  f = fopen(tmp_path, "ab");
  fputs("by name\n", f);
  fclose(f);
  CHECK(ts_commit_temp_file(tmp_path, "io_made.txt") == TS_OK && !file_exists(tmp_path) &&
            (text = read_file("io_made.txt")) && strcmp(text, "by name\n") == 0,
        "committed by name");
  free(text);
  ts_raster geom = {2, 2, 0, 0, 1, -9999, NULL, NULL};
  double h[4] = {0};
  ts_out_var vars[1] = {{"h", "water depth", "m", h}};
  CHECK(ts_netcdf_write("no_such_dir/out.nc", &geom, 0, 1, vars) == TS_ERR_IO,
        "NetCDF into a missing directory: %s", ts_error_message());
  CHECK(ts_vti_write("no_such_dir/out.vti", &geom, 0, 1, vars) == TS_ERR_IO,
        "VTI into a missing directory fails");
}

/* The strings the reader finds under the chosen top-level keys, joined by '|'. */
static void join(void *ctx, const char *value) {
  char *all = ctx;
  size_t n = strlen(all);
  snprintf(all + n, 512 - n, "%s%s", n ? "|" : "", value);
}

static void test_json_scan(void) {
  static const char *const keys[] = {"files", "maxima", NULL};
  char found[512] = "";
  const char *text =
      "{\"model\": \"swe\", \"case\": \"a.ini\", \"files\": {\"vti\": \"flow.vti\",\n"
      " \"png\": [\"s.png\", null, 1.5e3, true], \"deep\": [[{\"x\": \"d\\/e\\u00e9\"}]]},"
      " \"maxima\": null, \"other\": [\"no.asc\"], \"maxima2\": \"no\"}";
  CHECK(ts_json_scan(text, keys, join, found) == 0 &&
            strcmp(found, "flow.vti|s.png|d/e\xc3\xa9") == 0,
        "strings under the chosen keys: %s", found);
  found[0] = '\0';
  long bad = ts_json_scan("{\"files\": [\"a\", \"b\" \"c\"]}", keys, join, found);
  CHECK(bad == 21, "a missing comma is an error at its byte (%ld)", bad);
  CHECK(ts_json_scan("{\"files\": [\"a\"]} x", keys, join, found) != 0 &&
            ts_json_scan("[\"files\"]", keys, join, found) != 0 &&
            ts_json_scan("{\"files\": \"a", keys, join, found) != 0 &&
            ts_json_scan("{\"files\": \"\\u00\"}", keys, join, found) != 0 &&
            ts_json_scan("", keys, join, found) != 0,
        "trailing text, a top-level array, an open string, a short escape, nothing: errors");
  char deep[300] = "{\"files\": ";
  memset(deep + strlen(deep), '[', 200);
  deep[sizeof deep - 1] = '\0';
  CHECK(ts_json_scan(deep, keys, join, found) != 0, "nesting beyond 64 levels is refused");
}

/* Square cells of two sizes in a .vtu: counts, the corners of a wide cell, the level and a
 * variable read back. */
static void test_vtu_squares(void) {
  int i0[3] = {0, 1, 2}, j0[3] = {0, 0, 0}, width[3] = {1, 1, 2}, level[3] = {0, 0, 1};
  double h[3] = {0.5, 1.5, 2.5};
  ts_out_var vars[1] = {{"h", "water depth", "m", h}};
  ts_out_squares sq = {3, 100.0, -50.0, 10.0, i0, j0, width, level};
  CHECK(ts_vtu_write_squares("io_cells.vtu", &sq, 7.0, 1, vars) == TS_OK, "VTU written");
  char *text = read_file("io_cells.vtu");
  CHECK(text && strstr(text, "<VTKFile type=\"UnstructuredGrid\"") &&
            strstr(text, "NumberOfPoints=\"12\" NumberOfCells=\"3\""),
        "VTU of 3 cells of 4 points each");
  float values[8];
  int ncomp = 0;
  CHECK(read_vti_array(text, "h", &ncomp, values, 8) == 3 && values[2] == 2.5f, "h read back");
  /* Int32 levels and Float64 points decode as 4 and 8-byte values */
  CHECK(read_vti_array(text, "level", &ncomp, values, 8) == 3, "level array of 3 values");
  int32_t levels[3];
  memcpy(levels, values, sizeof levels);
  CHECK(levels[0] == 0 && levels[2] == 1, "levels 0, 0, 1");
  double points[36];
  CHECK(read_vti_array(text, "Points", &ncomp, (float *)points, 72) == 72 && ncomp == 3 &&
            points[24] == 120.0 && points[33] == 140.0 && points[34] == -30.0,
        "the wide cell spans x 120-140, y -50 to -30");
  CHECK(ts_vtu_write_squares("io_cells.vtu", &(ts_out_squares){0}, 0, 0, NULL) == TS_ERR_INPUT,
        "no cells: an error");
  free(text);
}

int main(void) {
  test_temp_files();
  test_netcdf();
  test_vtu_squares();
  test_netcdf_3d();
  test_vti();
  test_vti_grid_3d();
  test_vti_grid_2d();
  test_png();
  test_png_field();
  test_gauges();
  test_series();
  test_json();
  test_json_scan();
  printf("%s: %d failure(s)\n", failures ? "FAILED" : "PASSED", failures);
  return failures ? 1 : 0;
}
