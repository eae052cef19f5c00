/* The quadtree's own cells in NetCDF, one grid per level (ts_netcdf_write_levels, and the
 * swe_blocks_tNNNNNN.nc snapshots of a quadtree case with formats including netcdf and
 * [output] netcdf_per_snapshot = on):
 * 1. a dam break over a slope with a NODATA hole on three levels of blocks of 8 (97 x 61 cells,
 *    so blocks pass the grid's edges), written after 20 steps and read back: the global
 *    attributes, each level's dimensions and cell centres, every leaf cell's h, hu, hv and eta
 *    at its place (one leaf per place, the padding's leaves inactive), as many values per level
 *    as active leaves of that level and NaN elsewhere; and each active bed cell's value
 *    (ts_swe_get) in exactly one level;
 * 2. failures leave no file: a directory that does not exist, a leaf of a level the file lacks;
 * 3. `tessera run` ($TESSERA_BINARY) on tests/buq/grid_keys/buq.ini with formats asc, netcdf and
 *    netcdf_per_snapshot = on writes swe_blocks_t000002.nc, summary.json names it netcdf_blocks,
 *    and each bed cell's value in h, hu, hv and eta_t000002.asc is in exactly one level; with
 *    formats = asc neither; with asc, netcdf alone swe.nc but neither. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <netcdf.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tessera/io.h"
#include "tessera/swe.h"
#include "unit/check.h"
#include "unit/test_files.h"

enum { NX = 97, NY = 61, LEVELS = 3, BLOCK = 8, NVARS = 4 };

static char dir[64];
static const char *const var_names[NVARS] = {"h", "hu", "hv", "eta"};

static int same(double a, double b) { return a == b || (isnan(a) && isnan(b)); }

/* Level l's cells along a side of n bed cells: ceil(n / 2^l). */
static size_t level_cells(int n, int l) { return ((size_t)n + ((size_t)1 << l) - 1) >> l; }

/* A file's level grids: for each variable and level, the values (y_l, x_l), NaN where missing. */
typedef struct level_grids {
  size_t nx[LEVELS], ny[LEVELS];
  double *v[NVARS][LEVELS];
} level_grids;

static void free_grids(level_grids *g) {
  for (int k = 0; k < NVARS; k++)
    for (int l = 0; l < LEVELS; l++)
      free(g->v[k][l]);
}

/* The length of dimension `name`, or 0 when the file has none. */
static size_t dim_length(int ncid, const char *name) {
  int dim;
  size_t n = 0;
  if (nc_inq_dimid(ncid, name, &dim) != NC_NOERR || nc_inq_dimlen(ncid, dim, &n) != NC_NOERR)
    return 0;
  return n;
}

/* 1 when the variable's _FillValue is NaN and its dimensions are (y_l, x_l). */
static int level_variable_ok(int ncid, int var, int l) {
  int ndims, dims[2], want[2];
  double fill = 0;
  char y[16], x[16];
  snprintf(y, sizeof y, "y_%d", l);
  snprintf(x, sizeof x, "x_%d", l);
  return nc_inq_varndims(ncid, var, &ndims) == NC_NOERR && ndims == 2 &&
         nc_inq_vardimid(ncid, var, dims) == NC_NOERR &&
         nc_inq_dimid(ncid, y, &want[0]) == NC_NOERR &&
         nc_inq_dimid(ncid, x, &want[1]) == NC_NOERR && dims[0] == want[0] && dims[1] == want[1] &&
         nc_get_att_double(ncid, var, "_FillValue", &fill) == NC_NOERR && isnan(fill);
}

/* Reads the file at path written for the grid `geom` at time t: checks its global attributes,
 * each level's dimensions, cell centres and variables, and fills g. 0 on any difference. */
static int read_levels(const char *path, const ts_raster *geom, double t, level_grids *g) {
  int ncid, ok = nc_open(path, NC_NOWRITE, &ncid) == NC_NOERR;
  CHECK(ok, "%s opens", path);
  if (!ok)
    return 0;
  char text[64] = "", title[64] = "";
  size_t len = 0;
  int levels = 0, block = 0;
  double time = -1;
  ok = nc_inq_attlen(ncid, NC_GLOBAL, "Conventions", &len) == NC_NOERR && len < sizeof text &&
       nc_get_att_text(ncid, NC_GLOBAL, "Conventions", text) == NC_NOERR &&
       nc_inq_attlen(ncid, NC_GLOBAL, "title", &len) == NC_NOERR && len < sizeof title &&
       nc_get_att_text(ncid, NC_GLOBAL, "title", title) == NC_NOERR &&
       nc_get_att_double(ncid, NC_GLOBAL, "time", &time) == NC_NOERR &&
       nc_get_att_int(ncid, NC_GLOBAL, "levels", &levels) == NC_NOERR &&
       nc_get_att_int(ncid, NC_GLOBAL, "block", &block) == NC_NOERR;
  CHECK(ok && strcmp(text, "CF-1.8") == 0 && strcmp(title, "Tessera quadtree cells") == 0 &&
            time == t && levels == LEVELS && block == BLOCK,
        "global attributes: Conventions '%s', title '%s', time %g s, %d levels, blocks of %d", text,
        title, time, levels, block);
  int all_ok = ok;
  for (int l = 0; l < LEVELS; l++) {
    char name[16];
    snprintf(name, sizeof name, "x_%d", l);
    g->nx[l] = dim_length(ncid, name);
    snprintf(name, sizeof name, "y_%d", l);
    g->ny[l] = dim_length(ncid, name);
    ok = g->nx[l] == level_cells(geom->ncols, l) && g->ny[l] == level_cells(geom->nrows, l);
    /* the cell centres, 2^l bed cells wide, y northwards */
    double *x = malloc(g->nx[l] * sizeof *x), *y = malloc(g->ny[l] * sizeof *y);
    int var, centres = 0;
    if (ok && nc_inq_varid(ncid, name, &var) == NC_NOERR &&
        nc_get_var_double(ncid, var, y) == NC_NOERR) {
      snprintf(name, sizeof name, "x_%d", l);
      centres =
          nc_inq_varid(ncid, name, &var) == NC_NOERR && nc_get_var_double(ncid, var, x) == NC_NOERR;
      double step = geom->cellsize * (1 << l);
      for (size_t i = 0; centres && i < g->nx[l]; i++)
        centres = fabs(x[i] - (geom->xll + (i + 0.5) * step)) <= 1e-9 * step;
      for (size_t j = 0; centres && j < g->ny[l]; j++)
        centres = fabs(y[j] - (geom->yll + (j + 0.5) * step)) <= 1e-9 * step;
    }
    free(x);
    free(y);
    int variables = ok;
    for (int k = 0; k < NVARS && variables; k++) {
      snprintf(name, sizeof name, "%s_%d", var_names[k], l);
      g->v[k][l] = malloc(g->nx[l] * g->ny[l] * sizeof(double));
      variables = nc_inq_varid(ncid, name, &var) == NC_NOERR && level_variable_ok(ncid, var, l) &&
                  nc_get_var_double(ncid, var, g->v[k][l]) == NC_NOERR;
    }
    CHECK(ok && centres && variables,
          "level %d: %zu x %zu cells (want %zu x %zu), cell centres %s, h/hu/hv/eta_%d (y_%d, "
          "x_%d) with _FillValue NaN %s",
          l, g->nx[l], g->ny[l], level_cells(geom->ncols, l), level_cells(geom->nrows, l),
          centres ? "right" : "WRONG", l, l, l, variables ? "read" : "NOT READ");
    all_ok &= ok && centres && variables;
  }
  nc_close(ncid);
  return all_ok;
}

/* Each bed cell against the levels: where grid[k] (NaN: inactive) has a value, exactly one level
 * holds one at the cell's place, the same for all four variables; elsewhere at most one. */
static void check_against_bed(const level_grids *g, int ncols, int nrows, double *const grid[NVARS],
                              const char *what) {
  int64_t wrong = 0, active = 0;
  for (int j = 0; j < nrows; j++)
    for (int i = 0; i < ncols; i++) {
      size_t c = (size_t)i + (size_t)j * ncols;
      int found = 0, equal = 1;
      for (int l = 0; l < LEVELS; l++) {
        size_t at = ((size_t)i >> l) + ((size_t)j >> l) * g->nx[l];
        if (isnan(g->v[0][l][at]))
          continue;
        found++;
        for (int k = 0; k < NVARS; k++)
          equal &= g->v[k][l][at] == grid[k][c];
      }
      active += !isnan(grid[0][c]);
      wrong += isnan(grid[0][c]) ? found > 1 : found != 1 || !equal;
    }
  CHECK(active > 0 && wrong == 0,
        "%s: each of %lld active bed cells in exactly one level with its h, hu, hv and eta "
        "(%lld cells differ)",
        what, (long long)active, (long long)wrong);
}

/* The terrain of test_swe_buq.c: a slope with waves and a NODATA hole, a column of water on the
 * west side; cells of 2 m wanted in a band across the middle, 8 m elsewhere. */
static void terrain(ts_raster *bed, ts_raster *h0, ts_raster *refine) {
  ts_raster_alloc(bed, NX, NY, 100, 200, 2.0, -9999);
  ts_raster_alloc(h0, NX, NY, 100, 200, 2.0, -9999);
  ts_raster_alloc(refine, NX, NY, 100, 200, 2.0, -9999);
  for (int j = 0; j < NY; j++)
    for (int i = 0; i < NX; i++) {
      double x = i * 2.0, y = j * 2.0;
      int c = i + j * NX;
      bed->v[c] = 0.02 * x + 0.5 * sin(y / 9.0) + 0.3 * cos(x / 7.0);
      if ((i - 60) * (i - 60) + (j - 30) * (j - 30) < 16)
        bed->v[c] = -9999;
      h0->v[c] = (i < 12 && j > 20 && j < 40) ? 3.0 : 0.0;
      refine->v[c] = (i > 30 && i < 55) ? 2.0 : 8.0;
    }
}

/* Part 1 and 2: the writer on a solver's leaf cells. */
static void test_writer(void) {
  ts_raster bed, h0, refine;
  terrain(&bed, &h0, &refine);
  ts_swe_params p;
  ts_swe_params_default(&p);
  p.precision = TS_DOUBLE;
  p.grid.type = TS_GRID_BUQ;
  p.grid.block = BLOCK;
  p.grid.levels = LEVELS;
  p.grid.refine = &refine;
  ts_swe *s;
  int ok = ts_swe_create(&s, &p, &bed, &h0, NULL, NULL, NULL) == TS_OK;
  CHECK(ok, "quadtree solver created: %s", ok ? "" : ts_error_message());
  if (!ok)
    goto done;
  double dt;
  for (int n = 0; n < 20 && ok; n++)
    ok = ts_swe_step(s, 1e9, &dt) == TS_OK;
  int64_t n = ts_swe_leaf_cells(s, NULL, NULL, NULL, NULL);
  int *i0 = malloc(sizeof(int) * n), *j0 = malloc(sizeof(int) * n);
  int *width = malloc(sizeof(int) * n), *level = malloc(sizeof(int) * n);
  ts_swe_leaf_cells(s, i0, j0, width, level);
  ts_swe_var vars[NVARS] = {TS_SWE_H, TS_SWE_HU, TS_SWE_HV, TS_SWE_ETA};
  double *leaf[NVARS], *grid[NVARS];
  ts_out_var out[NVARS];
  for (int k = 0; k < NVARS; k++) {
    leaf[k] = malloc(sizeof(double) * n);
    grid[k] = malloc(sizeof(double) * NX * NY);
    ok &= ts_swe_leaf_values(s, vars[k], leaf[k]) == TS_OK &&
          ts_swe_get(s, vars[k], grid[k]) == TS_OK;
    out[k] = (ts_out_var){var_names[k], var_names[k], "m", leaf[k]};
  }
  double t = ts_swe_time(s);
  ts_out_squares sq = {n, bed.xll, bed.yll, bed.cellsize, i0, j0, width, level};
  const char *path = path_in(dir, "levels.nc");
  ts_status st = ts_netcdf_write_levels(path, &bed, LEVELS, BLOCK, t, &sq, NVARS, out);
  CHECK(ok && st == TS_OK && temp_files(dir, "levels.nc") == 0,
        "20 steps on %lld leaf cells written to levels.nc, no temporary left: %s", (long long)n,
        st == TS_OK ? "" : ts_error_message());

  level_grids g;
  memset(&g, 0, sizeof g);
  if (st == TS_OK && read_levels(path, &bed, t, &g)) {
    /* each leaf at its place, once; the leaves past the grid's edge inactive */
    int64_t leaves_per_level[LEVELS] = {0}, values_per_level[LEVELS] = {0}, misplaced = 0;
    int64_t outside = 0, outside_active = 0, twice = 0;
    unsigned char *taken[LEVELS];
    for (int l = 0; l < LEVELS; l++)
      taken[l] = calloc(g.nx[l] * g.ny[l], 1);
    for (int64_t c = 0; c < n; c++) {
      int l = level[c];
      if (l < 0 || l >= LEVELS || width[c] != 1 << l) {
        misplaced++;
        continue;
      }
      size_t i = (size_t)i0[c] >> l, j = (size_t)j0[c] >> l;
      if (i >= g.nx[l] || j >= g.ny[l]) {
        outside++;
        outside_active += !isnan(leaf[0][c]);
        continue;
      }
      size_t at = i + j * g.nx[l];
      twice += taken[l][at]++ > 0;
      leaves_per_level[l] += !isnan(leaf[0][c]);
      for (int k = 0; k < NVARS; k++)
        misplaced += !same(g.v[k][l][at], leaf[k][c]);
    }
    /* NaN wherever no leaf of the level lies, and the values counted */
    int64_t stray = 0;
    for (int l = 0; l < LEVELS; l++)
      for (size_t at = 0; at < g.nx[l] * g.ny[l]; at++) {
        values_per_level[l] += !isnan(g.v[0][l][at]);
        for (int k = 0; k < NVARS; k++)
          stray += !taken[l][at] && !isnan(g.v[k][l][at]);
      }
    CHECK(misplaced == 0 && twice == 0 && outside > 0 && outside_active == 0,
          "every leaf's h, hu, hv and eta at its place (%lld differ, %lld places taken twice); "
          "the %lld leaves past the grid's edge inactive (%lld active)",
          (long long)misplaced, (long long)twice, (long long)outside, (long long)outside_active);
    int counts = stray == 0;
    for (int l = 0; l < LEVELS; l++)
      counts &= values_per_level[l] == leaves_per_level[l] && leaves_per_level[l] > 0;
    CHECK(counts,
          "values per level = active leaves per level: %lld/%lld, %lld/%lld, %lld/%lld; %lld "
          "values where no leaf lies",
          (long long)values_per_level[0], (long long)leaves_per_level[0],
          (long long)values_per_level[1], (long long)leaves_per_level[1],
          (long long)values_per_level[2], (long long)leaves_per_level[2], (long long)stray);
    check_against_bed(&g, NX, NY, grid, "levels.nc against ts_swe_get");
    for (int l = 0; l < LEVELS; l++)
      free(taken[l]);
  }
  free_grids(&g);

  /* failures: nothing under the final name, no temporary file */
  path = path_in(dir, "missing/levels.nc");
  st = ts_netcdf_write_levels(path, &bed, LEVELS, BLOCK, t, &sq, NVARS, out);
  CHECK(st == TS_ERR_IO && !file_exists(path) &&
            temp_files(path_in(dir, "missing"), "levels.nc") == 0,
        "into a directory that does not exist: TS_ERR_IO (%d), no file: %s", st,
        ts_error_message());
  path = path_in(dir, "two_levels.nc");
  st = ts_netcdf_write_levels(path, &bed, LEVELS - 1, BLOCK, t, &sq, NVARS, out);
  CHECK(st == TS_ERR_INPUT && !file_exists(path) && temp_files(dir, "two_levels.nc") == 0,
        "leaves of level 2 in a file of 2 levels: TS_ERR_INPUT (%d), no file: %s", st,
        ts_error_message());

  for (int k = 0; k < NVARS; k++) {
    free(leaf[k]);
    free(grid[k]);
  }
  free(i0);
  free(j0);
  free(width);
  free(level);
  ts_swe_destroy(s);
done:
  ts_raster_free(&bed);
  ts_raster_free(&h0);
  ts_raster_free(&refine);
}

/* Runs tests/buq/grid_keys/buq.ini into dir/OUT with the formats given; 1 when it succeeds. */
static int run_case(const char *out, const char *formats) {
  char cmd[2048];
  snprintf(cmd, sizeof cmd,
           "cd %s && \"%s\" run buq.ini --quiet --out %s --set output.formats=%s "
           "--set time.end=2 > %s.log 2>&1",
           dir, getenv("TESSERA_BINARY"), out, formats, out);
  return system(cmd) == 0;
}

/* Part 3: the snapshots of a quadtree case. */
static void test_case(void) {
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "cp %s/tests/buq/grid_keys/* %s/", getenv("TESSERA_SOURCE_DIR"), dir);
  int ok = system(cmd) == 0 && run_case("nc", "asc,netcdf --set output.netcdf_per_snapshot=on");
  char *summary = read_file(path_in(dir, "nc/summary.json"));
  CHECK(ok && summary && strstr(summary, "\"netcdf_blocks\": \"swe_blocks_t000002.nc\""),
        "buq.ini with formats asc, netcdf runs; summary.json names netcdf_blocks "
        "swe_blocks_t000002.nc");
  free(summary);
  ts_raster asc[NVARS];
  double *grid[NVARS];
  int read = 1;
  for (int k = 0; k < NVARS; k++) {
    char name[32];
    snprintf(name, sizeof name, "nc/%s_t000002.asc", var_names[k]);
    memset(&asc[k], 0, sizeof asc[k]);
    read &= ts_asc_read(path_in(dir, name), &asc[k]) == TS_OK;
    grid[k] = asc[k].v;
    for (int c = 0; read && c < asc[k].ncols * asc[k].nrows; c++)
      if (grid[k][c] == asc[k].nodata)
        grid[k][c] = NAN;
  }
  CHECK(read, "h, hu, hv and eta_t000002.asc read");
  level_grids g;
  memset(&g, 0, sizeof g);
  if (read && read_levels(path_in(dir, "nc/swe_blocks_t000002.nc"), &asc[0], 2, &g))
    check_against_bed(&g, asc[0].ncols, asc[0].nrows, grid,
                      "swe_blocks_t000002.nc against the maps");
  free_grids(&g);
  for (int k = 0; k < NVARS; k++)
    ts_raster_free(&asc[k]);

  ok = run_case("asc", "asc");
  summary = read_file(path_in(dir, "asc/summary.json"));
  CHECK(ok && summary && !strstr(summary, "netcdf_blocks") &&
            !file_exists(path_in(dir, "asc/swe_blocks_t000002.nc")),
        "with formats = asc: no swe_blocks_t000002.nc, no netcdf_blocks in summary.json");
  free(summary);
  ok = run_case("one", "asc,netcdf");
  summary = read_file(path_in(dir, "one/summary.json"));
  CHECK(ok && summary && !strstr(summary, "netcdf_blocks") &&
            !file_exists(path_in(dir, "one/swe_blocks_t000002.nc")) &&
            file_exists(path_in(dir, "one/swe.nc")),
        "with formats = asc, netcdf alone: swe.nc, no swe_blocks_t000002.nc, no netcdf_blocks");
  free(summary);
}

int main(void) {
  snprintf(dir, sizeof dir, "/tmp/tessera_netcdf_levels_XXXXXX");
  if (!mkdtemp(dir))
    return 1;
  test_writer();
  if (getenv("TESSERA_BINARY") && getenv("TESSERA_SOURCE_DIR"))
    test_case();
  else
    CHECK(0, "TESSERA_BINARY and TESSERA_SOURCE_DIR are set (as ctest sets them)");
  return finish_in_dir(dir, failures);
}
