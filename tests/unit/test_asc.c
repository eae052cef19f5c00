/* Unit tests of the ESRI ASCII grid reader and writer: round trip, gzip, row order, header
 * variants, every error case with its line number, and the real Malpasset grids. */
#include "tessera/raster.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#include "unit/check.h"
#include "unit/test_files.h"

static double seconds_now(void) {
  struct timespec ts;
  timespec_get(&ts, TIME_UTC);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static void test_round_trip(void) {
  ts_raster r, back;
  CHECK(ts_raster_alloc(&r, 7, 5, 0.1, -2380.25, 1.0 / 3.0, -9999) == TS_OK, "alloc 7x5");
  for (int c = 0; c < 35; c++)
    r.v[c] = sin(c * 1.2345) * pow(10.0, c % 9 - 4);
  r.v[3] = -9999;
  r.v[20] = NAN; /* written as nodata */
  CHECK(ts_asc_write("asc_round.asc", &r, 17) == TS_OK, "write with 17 digits");
  CHECK(ts_asc_read("asc_round.asc", &back) == TS_OK, "read back: %s", ts_error_message());
  CHECK(ts_raster_same_geometry(&r, &back), "same geometry");
  CHECK(back.xll == r.xll && back.yll == r.yll && back.cellsize == r.cellsize,
        "header numbers bit for bit");
  r.v[20] = -9999;
  CHECK(memcmp(r.v, back.v, 35 * sizeof(double)) == 0, "values bit for bit");
  CHECK(ts_raster_is_nodata(&back, back.v[3]) && ts_raster_is_nodata(&back, back.v[20]),
        "nodata and NaN read back as nodata");
  CHECK(temp_files(".", "asc_round.asc") == 0, "no temporary file left");
  ts_raster_free(&back);
  ts_raster_free(&r);
}

/* The writer's text of each value is "%.*g"'s, zeros of both signs and NODATA included (the
 * writer copies those instead of formatting them), and so is ts_format_g's. */
static void test_value_text(void) {
  const double values[] = {0.0, -0.0, -9999, NAN, 1.5, -2.25e-7, 123456789.0, 1e300, 5e-324, -0.5};
  enum { N = sizeof values / sizeof values[0] };
  for (int digits = 1; digits <= 17; digits += 8) {
    ts_raster r;
    CHECK(ts_raster_alloc(&r, N, 1, 0, 0, 1, -9999) == TS_OK, "alloc %d x 1", N);
    memcpy(r.v, values, sizeof values);
    for (int i = 0; i < N; i++) { /* the formatter alone (gauges.csv's numbers) */
      char text[25], reference[32];
      int n = ts_format_g(text, digits, values[i]);
      snprintf(reference, sizeof reference, "%.*g", digits, values[i]);
      CHECK(strcmp(text, reference) == 0 && n == (int)strlen(reference),
            "ts_format_g(%d digits): \"%s\" (%d), expected \"%s\"", digits, text, n, reference);
    }
    CHECK(ts_asc_write("asc_text.asc", &r, digits) == TS_OK, "write with %d digits", digits);
    FILE *f = fopen("asc_text.asc", "r");
    char line[1024], expected[1024] = "", *e = expected;
    for (int k = 0; k < 7 && f; k++) /* the header's six lines, then the row */
      CHECK(fgets(line, sizeof line, f) != NULL, "line %d", k + 1);
    for (int i = 0; i < N; i++) {
      int nodata = ts_raster_is_nodata(&r, values[i]);
      e += sprintf(e, "%s", i ? " " : "");
      e += nodata ? sprintf(e, "-9999") : sprintf(e, "%.*g", digits, values[i]);
    }
    strcat(expected, "\n");
    CHECK(f && strcmp(line, expected) == 0, "%d digits: row \"%s\", expected \"%s\"", digits, line,
          expected);
    if (f)
      fclose(f);
    remove("asc_text.asc");
    ts_raster_free(&r);
  }
}

static void test_flip_and_header_variants(void) {
  ts_raster r;
  write_file("asc_flip.asc", "NCOLS 2\n  CellSize 10\nnrows 3\r\nxllcenter 5\nYLLCENTER 15\n"
                             "1 2\n3 4\n5 6\n");
  CHECK(ts_asc_read("asc_flip.asc", &r) == TS_OK, "mixed case, any order, CRLF: %s",
        ts_error_message());
  CHECK(r.ncols == 2 && r.nrows == 3, "size 2 x 3");
  CHECK(r.xll == 0.0 && r.yll == 10.0, "xllcenter/yllcenter converted to corner (%g, %g)", r.xll,
        r.yll);
  CHECK(r.nodata == -9999.0, "default NODATA_value -9999");
  CHECK(r.v[0] == 5 && r.v[1] == 6 && r.v[4] == 1 && r.v[5] == 2,
        "first file row is the north row j = nrows-1");
  ts_raster_free(&r);

  write_file("asc_oneline.asc",
             "ncols 3 nrows 2 xllcorner 0 yllcorner 0 cellsize 1 nodata_value -1 1 2 3 4 5 -1");
  CHECK(ts_asc_read("asc_oneline.asc", &r) == TS_OK, "everything on one line, no final newline");
  CHECK(r.nodata == -1 && r.v[0] == 4 && r.v[2] == -1 && r.v[3] == 1 && r.v[5] == 3,
        "values of one-line file");
  ts_raster_free(&r);
}

static void test_gzip(void) {
  gzFile gz = gzopen("asc_gzip.asc.gz", "wb");
  gzputs(gz, "ncols 2\nnrows 2\nxllcorner 1\nyllcorner 2\ncellsize 3\nNODATA_value -1\n"
             "1.5 -1\n2.5 3.5\n");
  gzclose(gz);
  ts_raster r;
  CHECK(ts_asc_read("asc_gzip.asc.gz", &r) == TS_OK, "gzip grid read: %s", ts_error_message());
  CHECK(r.v[0] == 2.5 && r.v[1] == 3.5 && r.v[2] == 1.5 && ts_raster_is_nodata(&r, r.v[3]),
        "gzip grid values");
  ts_raster_free(&r);
}

typedef struct error_case {
  const char *text;
  const char *expected; /* fragment that the message must contain, including ":LINE:" */
} error_case;

#define HEADER6 "ncols 3\nnrows 2\nxllcorner 0\nyllcorner 0\ncellsize 1\nNODATA_value -9999\n"

static const error_case error_cases[] = {
    {"", ":1: missing header key 'ncols'"},
    {"ncols 3\nnrows 2\nxllcorner 0\nyllcorner 0\n1 2 3\n4 5 6\n",
     ":5: missing header key 'cellsize'"},
    {"ncols 3\nnrows 2\nncols 3\n", ":3: duplicate header key 'ncols'"},
    {"ncols 3\nnrows 2\nxllcorner 0\nxllcenter 0\n", ":4: duplicate header key 'xllcenter'"},
    {"ncolz 3\n", ":1: unknown header key 'ncolz'"},
    {"ncols abc\n", ":1: ncols 'abc' is not an integer"},
    {"ncols 3.5\n", ":1: ncols '3.5' is not an integer"},
    {"ncols 0\n", ":1: ncols must be positive"},
    {"ncols 3\nnrows -2\n", ":2: nrows must be positive"},
    {"ncols 3\nnrows 2\nxllcorner 0\nyllcorner 0\ncellsize -20\n", ":5: cellsize must be positive"},
    {"ncols 3\nnrows 2\nxllcorner 0\nyllcorner 0\ncellsize 0\n", ":5: cellsize must be positive"},
    {"ncols 3\nnrows 2\nxllcorner nan\n", ":3: xllcorner 'nan' is not finite"},
    {"ncols 99999999999\n", ":1: ncols '99999999999' is too large"},
    {"ncols 100000\nnrows 100000\nxllcorner 0\nyllcorner 0\ncellsize 1\n\n1 2\n",
     ":7: grid of 100000 x 100000 cells is larger than 2^31"},
    {"ncols 3\nnrows 2\nxllcorner 0\nyllcorner 0\ncellsize 1\nNODATA_value\n",
     ":6: header key 'NODATA_value' has no value"},
    {HEADER6 "1 2 3\n4 x5 6\n", ":8: value 'x5' is not a number"},
    {HEADER6 "1 2 3\n4 5e 6\n", ":8: value '5e' is not a number"},
    {HEADER6 "1 2 3\n4 5 NaN\n", ":8: value 'NaN' is not finite"},
    {HEADER6 "1 2 3\n\n-inf 5 6\n", ":9: value '-inf' is not finite"},
    {HEADER6 "1 2 3\n4 1e999 6\n", ":8: value '1e999' is not finite"},
    {HEADER6 "1 2 3\n4 5\n\n", ":8: expected ncols * nrows = 6 values, found 5"},
    {HEADER6, ":6: expected ncols * nrows = 6 values, found 0"},
    {HEADER6 "1 2 3\n4 5 6\n\n7\n", ":10: more than ncols * nrows = 6 values"},
    {"\x1f\x8b\x08\x01\x01\x01\x01\x01\x01\x03garbage, not deflate data", ": read error"},
};

static void test_errors(void) {
  ts_raster r;
  ts_status status = ts_asc_read("no_such_dir/missing.asc", &r);
  CHECK(status == TS_ERR_IO && strstr(ts_error_message(), "no_such_dir/missing.asc: cannot open"),
        "missing file: %s", ts_error_message());
  for (size_t k = 0; k < sizeof error_cases / sizeof error_cases[0]; k++) {
    write_file("asc_error.asc", error_cases[k].text);
    ts_error_clear();
    status = ts_asc_read("asc_error.asc", &r);
    const char *message = ts_error_message();
    int is_corrupt_gzip = k + 1 == sizeof error_cases / sizeof error_cases[0];
    ts_status expected_status = is_corrupt_gzip ? TS_ERR_IO : TS_ERR_INPUT;
    CHECK(status == expected_status && strncmp(message, "asc_error.asc:", 14) == 0 &&
              strstr(message, error_cases[k].expected) != NULL && r.v == NULL,
          "error case %zu: expected '%s', got '%s'", k, error_cases[k].expected, message);
    if (status == TS_OK)
      ts_raster_free(&r);
  }
}

static long count_data_cells(const ts_raster *r) {
  long n = 0;
  for (long c = 0; c < (long)r->ncols * r->nrows; c++)
    n += !ts_raster_is_nodata(r, r->v[c]);
  return n;
}

/* The Malpasset grids shipped in examples/malpasset/data (gzipped); ctest sets
 * TESSERA_SOURCE_DIR to the checkout, so these checks always run there. */
static void test_malpasset(void) {
  const char *source = getenv("TESSERA_SOURCE_DIR");
  CHECK(source != NULL, "TESSERA_SOURCE_DIR is set (to the source tree, as ctest does)");
  if (!source)
    return;
  char path[4096];
  ts_raster r, back;
  snprintf(path, sizeof path, "%s/examples/malpasset/data/malpasset_dem_20m_nodata.asc.gz", source);
  ts_status status = ts_asc_read(path, &r);
  CHECK(status == TS_OK, "read gzipped 20 m DEM: %s", ts_error_message());
  if (status != TS_OK)
    return;
  CHECK(r.ncols == 865 && r.nrows == 462 && r.xll == 500 && r.yll == -2380 && r.cellsize == 20,
        "20 m geometry 865 x 462, corner (500, -2380), cellsize 20");
  CHECK(count_data_cells(&r) == 129640, "20 m: %ld cells inside the mesh (129640)",
        count_data_cells(&r));
  CHECK(ts_asc_write("asc_malpasset_20m.asc", &r, 17) == TS_OK, "rewrite 20 m DEM");
  CHECK(ts_asc_read("asc_malpasset_20m.asc", &back) == TS_OK &&
            memcmp(r.v, back.v, sizeof(double) * r.ncols * r.nrows) == 0,
        "rewritten 20 m DEM reads back identical");
  ts_raster_free(&back);
  ts_raster_free(&r);
  remove("asc_malpasset_20m.asc");

  snprintf(path, sizeof path, "%s/examples/malpasset/data/malpasset_dem_10m_nodata.asc.gz", source);
  double start = seconds_now();
  status = ts_asc_read(path, &r);
  double elapsed = seconds_now() - start;
  CHECK(status == TS_OK, "read gzipped 10 m DEM: %s", ts_error_message());
  if (status != TS_OK)
    return;
  printf("info 10 m DEM (1730 x 924, gzip) read in %.3f s\n", elapsed);
  CHECK(elapsed < 3.0, "10 m DEM read in under 3 s even in sanitizer builds");
  CHECK(r.ncols == 1730 && r.nrows == 924 && r.cellsize == 10, "10 m geometry 1730 x 924");
  CHECK(count_data_cells(&r) == 518546, "10 m: %ld cells inside the mesh (518546)",
        count_data_cells(&r));
  ts_raster_free(&r);
}

int main(void) {
  test_round_trip();
  test_value_text();
  test_flip_and_header_variants();
  test_gzip();
  test_errors();
  test_malpasset();
  printf("%s: %d failure(s)\n", failures ? "FAILED" : "PASSED", failures);
  return failures ? 1 : 0;
}
