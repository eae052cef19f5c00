/* Validation: [rain] through the CLI (`tessera run`, $TESSERA_BINARY): rain given as a number, a
 * CSV hyetograph or a raster stack, losses, the volume budget of summary.json, the duration and
 * hazard maps, gauges.png, and the one-line errors of bad rain input. Grids are 40 x 20 cells of
 * 10 m; every run takes well under a second.
 *
 *  1. Closed flat basin (walls, bed 0, 4 NODATA cells), CSV rain 36 mm/h from 0 s, 72 mm/h from
 *     600 s, 0 from 1200 s, run to 1800 s: every active cell holds (36 + 72) x 600 s of rain, to
 *     1e-12 relative in double (1e-6 in float); budget rain = that depth x active area to 1e-12
 *     (double); |rel_error| < 1e-12 (double), < 1e-6 (float). The depth passes arrival_depth
 *     (0.01 m) at 800 s, so duration = 1000 s to one step (30 s). With start 100 s and end
 *     1000 s, the CSV's rows shift by 100 s and the 72 mm/h row is cut: depth (36 x 600 + 72 x
 *     300) / 3.6e6 m to 1e-12.
 *  2. Tilted plane (1 % down to the east, east side outflow, Manning 0.03, double), CSV rain with
 *     loss_initial 2 mm and loss_rate 5 mm/h: |rel_error| < 1e-12, losses and outflow > 0, rain =
 *     sum of rate x duration x area to 1e-12; 4 subdomains and 3 row bands give byte-identical
 *     max_h, duration, max_hazard and h maps and the same volume_budget text; duration in [0,
 *     t_end]; max_hazard >= 0.5 max_h cell by cell (the hazard h (v + 0.5) at the time of the
 *     largest depth is at least 0.5 max_h; exact in double, both written with 17 digits).
 *     Rain on the dry plane with no output times: more than 100 steps, none over 60 s (the rain's
 *     step limit), and the outflow of the last 600 s of an hour of 50 mm/h is the rain on the
 *     plane in that time to 1 % (steady state).
 *  3. Losses above the rain (10 mm/h, loss_rate 20 mm/h) on the flat basin: no water anywhere at
 *     the end (exactly 0), losses = rain to 1e-12 relative.
 *  4. (GDAL builds) a 3-band GeoTIFF stack (10, 0, 30 mm/h, interval 300 s) and a NetCDF stack
 *     with a time axis in minutes on a GeoTIFF bed in EPSG:2154: depth = (10 + 0 + 30) x 300 s of
 *     rain to 1e-12 (double); both stacks give the same h map byte for byte; end = 750 s cuts
 *     the last frame to 150 s.
 *  5. gauges.png is a PNG and summary.json's gauges_png names it with gauges + png; without png
 *     it is absent and gauges_png is null.
 *  6. Bad rain input: exit code 2, one line on stderr naming the file (and line), no output
 *     directory.
 * Every summary: "devices" is [] and every subdomain's device -1 when the backend is cpu;
 * devices is not empty when it is cuda (TESSERA_BACKEND=cuda runs this same test on GPUs).
 * Skipped (exit 77) when the CLI is missing. */
#define _POSIX_C_SOURCE 200809L
#include "tessera/raster.h"

#include <math.h>
#include <netcdf.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#if TESSERA_HAVE_GDAL
#include <gdal.h>
#include <ogr_srs_api.h>
#endif

#include "unit/check.h"
#include "unit/test_files.h"

static char dir[64];
static const char *cli;

enum { NX = 40, NY = 20 };
static const double CELL = 10;
static const double MM_PER_H = 1e-3 / 3600; /* m/s */

/* DIR/name. */
static const char *at(const char *name) { return path_in(dir, name); }

/* Writes DIR/name from a printf format. */
static void write_text(const char *name, const char *fmt, ...) {
  char text[4096];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  write_file(at(name), text);
}

/* `tessera run CASE ARGS --quiet` in DIR, stderr to DIR/stderr.txt; the exit code. */
static int run_tessera(const char *case_file, const char *args) {
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "cd %s && \"%s\" run %s %s --quiet 2> stderr.txt > /dev/null", dir, cli,
           case_file, args);
  int status = system(cmd);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* The first line of DIR/stderr.txt and the number of lines. */
static int stderr_lines(char *line, size_t size) {
  return file_lines(at("stderr.txt"), line, size);
}

/* The text of the JSON object "key": {...} (no nested objects) in json, malloc'ed; NULL when
 * absent. */
static char *json_object(const char *json, const char *key) {
  char pattern[128];
  snprintf(pattern, sizeof pattern, "\"%s\": {", key);
  const char *s = json ? strstr(json, pattern) : NULL;
  const char *e = s ? strchr(s, '}') : NULL;
  if (!e)
    return NULL;
  char *out = malloc((size_t)(e - s) + 2);
  memcpy(out, s, (size_t)(e - s) + 1);
  out[e - s + 1] = '\0';
  return out;
}

/* The number after the first "key": in json (NaN when absent). */
static double json_number(const char *json, const char *key) {
  char pattern[128];
  snprintf(pattern, sizeof pattern, "\"%s\": ", key);
  const char *s = json ? strstr(json, pattern) : NULL;
  if (!s)
    return NAN;
  char *end;
  double v = strtod(s + strlen(pattern), &end);
  return end == s + strlen(pattern) ? NAN : v;
}

static int count_occurrences(const char *text, const char *what) {
  int n = 0;
  for (const char *p = text; p && (p = strstr(p, what)); p += strlen(what))
    n++;
  return n;
}

typedef struct budget {
  double initial, rain, inflow, outflow, losses, final, rel_error;
} budget;

/* DIR/out/summary.json (malloc'ed) and its volume_budget; checks "devices" against "backend". */
static char *read_summary(const char *out, budget *b, const char *what) {
  char name[256];
  snprintf(name, sizeof name, "%s/summary.json", out);
  char *summary = read_file(at(name));
  char *vb = json_object(summary, "volume_budget");
  CHECK(vb != NULL, "%s: summary.json has volume_budget", what);
  *b = (budget){json_number(vb, "initial"),  json_number(vb, "rain"),   json_number(vb, "inflow"),
                json_number(vb, "outflow"),  json_number(vb, "losses"), json_number(vb, "final"),
                json_number(vb, "rel_error")};
  free(vb);
  double count = json_number(summary, "subdomains");
  int subdomains = isnan(count) ? -1 : (int)count;
  const char *devices = summary ? strstr(summary, "\"devices\": [") : NULL;
  char next = '\0';
  if (devices)
    sscanf(devices + strlen("\"devices\": ["), " %c", &next);
  if (summary && strstr(summary, "\"backend\": \"cpu\""))
    CHECK(next == ']' && count_occurrences(summary, "\"device\": -1") == subdomains,
          "%s: cpu backend: \"devices\": [] and device -1 for each of the %d subdomains", what,
          subdomains);
  else if (summary && strstr(summary, "\"backend\": \"cuda\""))
    CHECK(next == '{' && count_occurrences(summary, "\"device\": -1") == 0,
          "%s: cuda backend: \"devices\" lists the GPUs, no subdomain on device -1", what);
  else
    CHECK(0, "%s: summary.json names the backend cpu or cuda", what);
  return summary;
}

/* A flat bed at 0 m, 40 x 20 cells of 10 m at (0, 0), with 4 NODATA cells (walls) in the
 * south-west corner; tilt: 1 % down to the east instead, without NODATA. */
static void write_bed(const char *name, int tilt) {
  ts_raster r;
  ts_raster_alloc(&r, NX, NY, 0, 0, CELL, -9999);
  for (int j = 0; j < NY; j++)
    for (int i = 0; i < NX; i++)
      r.v[i + j * NX] = tilt ? 0.01 * (NX * CELL - (i + 0.5) * CELL) : (i < 2 && j < 2 ? -9999 : 0);
  CHECK(ts_asc_write(at(name), &r, 17) == TS_OK, "wrote %s", name);
  ts_raster_free(&r);
}

static const int FLAT_ACTIVE = NX * NY - 4;

/* Reads DIR/name (a grid); 0 when it cannot. */
static int read_grid(const char *name, ts_raster *r) {
  memset(r, 0, sizeof *r);
  int ok = ts_raster_read(at(name), r) == TS_OK && r->ncols == NX && r->nrows == NY;
  if (!ok)
    printf("cannot read %s\n", at(name));
  return ok;
}

/* The largest |h - expect| / expect over the active cells of DIR/name (inf if unreadable). */
static double depth_error(const char *name, double expect) {
  ts_raster r;
  double worst = INFINITY;
  if (read_grid(name, &r)) {
    worst = 0;
    for (int c = 0; c < NX * NY; c++)
      if (!ts_raster_is_nodata(&r, r.v[c]))
        worst = fmax(worst, fabs(r.v[c] - expect) / expect);
  }
  ts_raster_free(&r);
  return worst;
}

static int same_file(const char *a, const char *b) {
  char *x = read_file(at(a)), *y = read_file(at(b));
  int same = x && y && strcmp(x, y) == 0;
  free(x);
  free(y);
  return same;
}

static double rel(double got, double want) { return fabs(got - want) / fabs(want); }

/* ---------------------------------------------------------------- 1. flat basin */

static void flat_basin(const char *precision) {
  int dbl = strcmp(precision, "double") == 0;
  double tol = dbl ? 1e-12 : 1e-6;
  write_text("flat.ini",
             "[model]\ntype = swe\n[time]\nend = 1800\n[swe]\nbed = flat.asc\nprecision = %s\n"
             "[rain]\nrate = storm.csv\n[output]\ndir = flat_%s\nformats = asc\n",
             precision, precision);
  int rc = run_tessera("flat.ini", "");
  CHECK(rc == 0, "flat basin %s: run (exit %d)", precision, rc);
  double depth = (36.0 * 600 + 72.0 * 600) / 3.6e6; /* 0.018 m */
  char name[128];
  snprintf(name, sizeof name, "flat_%s/h_t001800.asc", precision);
  double e = depth_error(name, depth);
  CHECK(e < tol,
        "flat basin %s: depth = (36 + 72) mm/h x 600 s = %g m everywhere, to %.2e "
        "(tolerance %.0e)",
        precision, depth, e, tol);
  budget b;
  snprintf(name, sizeof name, "flat_%s", precision);
  char *summary = read_summary(name, &b, "flat basin");
  double area = FLAT_ACTIVE * CELL * CELL;
  if (dbl)
    CHECK(rel(b.rain, depth * area) < 1e-12,
          "flat basin double: budget rain %.17g m3 = depth x active area %.17g m3 (1e-12)", b.rain,
          depth * area);
  CHECK(fabs(b.rel_error) < tol, "flat basin %s: |rel_error| %.2e < %.0e", precision, b.rel_error,
        tol);
  CHECK(b.losses == 0 && b.outflow == 0 && b.inflow == 0 && b.initial == 0,
        "flat basin %s: no losses, no flow through the walls, dry start", precision);
  free(summary);
  /* The depth rises at 1e-5 m/s to 0.006 m at 600 s, then at 2e-5 m/s: it passes 0.01 m at
   * 800 s and stays above until 1800 s. Tolerance: one step (steps of a few seconds here). */
  ts_raster r;
  snprintf(name, sizeof name, "flat_%s/duration.asc", precision);
  double worst = INFINITY;
  if (read_grid(name, &r)) {
    worst = 0;
    for (int c = 0; c < NX * NY; c++)
      if (!ts_raster_is_nodata(&r, r.v[c]))
        worst = fmax(worst, fabs(r.v[c] - 1000));
  }
  ts_raster_free(&r);
  CHECK(worst <= 30, "flat basin %s: duration above 0.01 m = 1000 s to %g s (tolerance 30 s)",
        precision, worst);
}

/* [rain] start and end through --set: the CSV's times count from start, end cuts the 72 mm/h
 * row: 36 mm/h over 100..700 s, 72 mm/h over 700..1000 s. Tolerance as in 1 (double). */
static void start_end(void) {
  int rc = run_tessera("flat.ini", "--set swe.precision=double --set rain.start=100 "
                                   "--set rain.end=1000 --out flat_start_end");
  CHECK(rc == 0, "flat basin, start 100 s, end 1000 s: run (exit %d)", rc);
  double depth = (36.0 * 600 + 72.0 * 300) / 3.6e6; /* 0.012 m */
  double e = depth_error("flat_start_end/h_t001800.asc", depth);
  CHECK(e < 1e-12, "flat basin, start 100 s, end 1000 s: depth %g m to %.2e (1e-12)", depth, e);
  budget b;
  free(read_summary("flat_start_end", &b, "start and end"));
  CHECK(rel(b.rain, depth * FLAT_ACTIVE * CELL * CELL) < 1e-12 && fabs(b.rel_error) < 1e-12,
        "flat basin, start 100 s, end 1000 s: budget rain %.17g m3 (1e-12), |rel_error| %.2e",
        b.rain, b.rel_error);
}

/* ---------------------------------------------------------------- 2. tilted plane */

/* Cell by cell: duration in [0, t_end], max_hazard >= 0.5 max_h; counts wet cells. */
static void check_maps(const char *out, double t_end) {
  char n1[128], n2[128], n3[128];
  snprintf(n1, sizeof n1, "%s/duration.asc", out);
  snprintf(n2, sizeof n2, "%s/max_hazard.asc", out);
  snprintf(n3, sizeof n3, "%s/max_h.asc", out);
  ts_raster duration, hazard, hmax;
  int ok = read_grid(n1, &duration) & read_grid(n2, &hazard) & read_grid(n3, &hmax);
  int in_range = ok, hazard_ok = ok, wet = 0, lasting = 0;
  for (int c = 0; ok && c < NX * NY; c++) {
    in_range = in_range && duration.v[c] >= 0 && duration.v[c] <= t_end;
    hazard_ok = hazard_ok && hazard.v[c] >= 0.5 * hmax.v[c];
    wet += hmax.v[c] > 0;
    lasting += duration.v[c] > 0;
  }
  CHECK(in_range && lasting > 0, "tilted plane: duration in [0, %g] s (%d cells > 0)", t_end,
        lasting);
  CHECK(hazard_ok && wet > 0, "tilted plane: max_hazard >= 0.5 max_h on every cell (%d wet)", wet);
  ts_raster_free(&duration);
  ts_raster_free(&hazard);
  ts_raster_free(&hmax);
}

static void tilted_plane(void) {
  write_bed("tilt.asc", 1);
  write_text("hyeto.csv", "t,mm_per_h\n0,50\n300,100\n900,20\n1200,0\n");
  write_text("tilt.ini",
             "[model]\ntype = swe\n[time]\nend = 1500\n[swe]\nbed = tilt.asc\nprecision = double\n"
             "manning = 0.03\n[boundary]\neast = outflow\n[rain]\nrate = hyeto.csv\n"
             "loss_initial = 2\nloss_rate = 5\n[output]\ndir = tilt\nformats = asc\n");
  int rc = run_tessera("tilt.ini", "");
  CHECK(rc == 0, "tilted plane: run (exit %d)", rc);
  budget b;
  char *summary = read_summary("tilt", &b, "tilted plane");
  double rain = (50.0 * 300 + 100.0 * 600 + 20.0 * 300) * MM_PER_H * NX * NY * CELL * CELL;
  CHECK(fabs(b.rel_error) < 1e-12, "tilted plane: |rel_error| %.2e < 1e-12", b.rel_error);
  CHECK(b.losses > 0 && b.outflow > 0, "tilted plane: losses %.6g m3 > 0, outflow %.6g m3 > 0",
        b.losses, b.outflow);
  CHECK(rel(b.rain, rain) < 1e-12,
        "tilted plane: rain %.17g m3 = sum of rate x time x area %.17g"
        " m3 (1e-12)",
        b.rain, rain);
  check_maps("tilt", 1500);
  char *vb = json_object(summary, "volume_budget");
  static const struct {
    const char *args, *out, *what;
  } splits[] = {
      {"--set parallel.subdomains=4", "tilt4", "4 subdomains"},
      {"--set parallel.decomposition=rows --set parallel.subdomains=3", "tilt3", "3 row bands"}};
  for (int s = 0; s < 2; s++) {
    char args[256];
    snprintf(args, sizeof args, "%s --out %s", splits[s].args, splits[s].out);
    rc = run_tessera("tilt.ini", args);
    CHECK(rc == 0, "tilted plane, %s: run (exit %d)", splits[s].what, rc);
    budget bs;
    char *ss = read_summary(splits[s].out, &bs, splits[s].what);
    CHECK(json_number(ss, "subdomains") == (s ? 3 : 4), "tilted plane, %s: %g subdomains",
          splits[s].what, json_number(ss, "subdomains"));
    char *vbs = json_object(ss, "volume_budget");
    CHECK(vb && vbs && strcmp(vb, vbs) == 0, "tilted plane, %s: the same volume_budget",
          splits[s].what);
    const char *maps[] = {"max_h.asc", "duration.asc", "max_hazard.asc", "h_t001500.asc"};
    for (int m = 0; m < 4; m++) {
      char a[128], c[128];
      snprintf(a, sizeof a, "tilt/%s", maps[m]);
      snprintf(c, sizeof c, "%s/%s", splits[s].out, maps[m]);
      CHECK(same_file(a, c), "tilted plane, %s: %s byte for byte", splits[s].what, maps[m]);
    }
    free(vbs);
    free(ss);
  }
  free(vb);
  free(summary);
}

/* Rain on the dry tilted plane with no output time to shorten the steps: the first step has no
 * wave speed, and the rain's own step limit must keep it short enough for the water to run off.
 * 50 mm/h for an hour: the outflow of the last 600 s (the difference of the runs to 3000 s and
 * to 3600 s) equals the rain on the plane in that time to 1 % (steady state). */
static void runoff_from_dry(void) {
  write_text("dry.ini", "[model]\ntype = swe\n[time]\nend = 3600\n[swe]\nbed = tilt.asc\n"
                        "precision = double\nmanning = 0.03\n[boundary]\neast = outflow\n"
                        "[rain]\nrate = 50\n[output]\ndir = dry\nformats = asc\nmaxima = off\n");
  int rc = run_tessera("dry.ini", "");
  int rc_early = run_tessera("dry.ini", "--set time.end=3000 --out dry3000");
  CHECK(rc == 0 && rc_early == 0, "runoff from a dry plane: runs (exit %d, %d)", rc, rc_early);
  budget b, early;
  char *summary = read_summary("dry", &b, "runoff from a dry plane");
  free(read_summary("dry3000", &early, "runoff from a dry plane, to 3000 s"));
  double steps = json_number(summary, "steps"), dt_max = json_number(summary, "dt_max");
  double want = 50 * MM_PER_H * NX * NY * CELL * CELL * 600;
  double got = (b.outflow - b.inflow) - (early.outflow - early.inflow);
  CHECK(steps > 100 && dt_max < 60, "runoff from a dry plane: %g steps, the longest %g s", steps,
        dt_max);
  CHECK(rel(got, want) < 0.01,
        "runoff from a dry plane: outflow of the last 600 s %.6g m3 = rain %.6g m3 (1 %%)", got,
        want);
  free(summary);
}

/* ---------------------------------------------------------------- 3. losses over the rain */

static void losses_over_rain(void) {
  write_text("loss.ini", "[model]\ntype = swe\n[time]\nend = 900\n[swe]\nbed = flat.asc\n"
                         "precision = double\n[rain]\nrate = 10\nloss_rate = 20\n[output]\n"
                         "dir = loss\nformats = asc\n");
  int rc = run_tessera("loss.ini", "");
  CHECK(rc == 0, "losses over the rain: run (exit %d)", rc);
  ts_raster r;
  double hmax = INFINITY;
  if (read_grid("loss/h_t000900.asc", &r)) {
    hmax = 0;
    for (int c = 0; c < NX * NY; c++)
      if (!ts_raster_is_nodata(&r, r.v[c]))
        hmax = fmax(hmax, fabs(r.v[c]));
  }
  ts_raster_free(&r);
  CHECK(hmax == 0, "losses over the rain: no water at the end (largest depth %g m)", hmax);
  budget b;
  free(read_summary("loss", &b, "losses over the rain"));
  double rain = 10 * MM_PER_H * 900 * FLAT_ACTIVE * CELL * CELL;
  CHECK(rel(b.rain, rain) < 1e-12, "losses over the rain: rain %.17g m3 = %.17g m3", b.rain, rain);
  CHECK(rel(b.losses, b.rain) < 1e-12, "losses over the rain: losses %.17g m3 = rain (1e-12)",
        b.losses);
  CHECK(fabs(b.rel_error) < 1e-12, "losses over the rain: |rel_error| %.2e < 1e-12", b.rel_error);
}

/* ---------------------------------------------------------------- 4. raster stacks */

#if TESSERA_HAVE_GDAL

static const double X0 = 700000, Y0 = 6600000;

/* A north-up Float64 GeoTIFF in EPSG:2154, NX x NY cells at (X0, Y0), band b all value[b]. */
static void write_tif(const char *name, int bands, const double *value) {
  const double gt[6] = {X0, CELL, 0, Y0 + NY * CELL, 0, -CELL};
  GDALDatasetH ds =
      GDALCreate(GDALGetDriverByName("GTiff"), at(name), NX, NY, bands, GDT_Float64, NULL);
  GDALSetGeoTransform(ds, (double *)gt);
  OGRSpatialReferenceH srs = OSRNewSpatialReference(NULL);
  OSRImportFromEPSG(srs, 2154);
  GDALSetSpatialRef(ds, srs);
  OSRDestroySpatialReference(srs);
  double v[NX * NY];
  for (int b = 0; b < bands; b++) {
    GDALRasterBandH band = GDALGetRasterBand(ds, b + 1);
    GDALSetRasterNoDataValue(band, -32768);
    for (int c = 0; c < NX * NY; c++)
      v[c] = value[b];
    if (GDALRasterIO(band, GF_Write, 0, 0, NX, NY, v, NX, NY, GDT_Float64, 0, 0) != CE_None)
      printf("could not write %s\n", name);
  }
  GDALClose(ds);
}

/* rain(time, y, x) in mm/h, 3 frames at 0, 5 and 10 minutes, y ascending, no CRS. */
static void write_netcdf(const char *name, const double *value) {
  int ncid, dims[3], t_var, x_var, y_var, rain;
  nc_create(at(name), NC_CLOBBER | NC_NETCDF4, &ncid);
  nc_def_dim(ncid, "time", 3, &dims[0]);
  nc_def_dim(ncid, "y", NY, &dims[1]);
  nc_def_dim(ncid, "x", NX, &dims[2]);
  nc_def_var(ncid, "time", NC_DOUBLE, 1, &dims[0], &t_var);
  const char *units = "minutes since 2024-06-01 00:00:00";
  nc_put_att_text(ncid, t_var, "units", strlen(units), units);
  nc_def_var(ncid, "y", NC_DOUBLE, 1, &dims[1], &y_var);
  nc_put_att_text(ncid, y_var, "standard_name", 23, "projection_y_coordinate");
  nc_put_att_text(ncid, y_var, "units", 1, "m");
  nc_def_var(ncid, "x", NC_DOUBLE, 1, &dims[2], &x_var);
  nc_put_att_text(ncid, x_var, "standard_name", 23, "projection_x_coordinate");
  nc_put_att_text(ncid, x_var, "units", 1, "m");
  nc_def_var(ncid, "rain", NC_DOUBLE, 3, dims, &rain);
  nc_put_att_text(ncid, rain, "units", 4, "mm/h");
  nc_enddef(ncid);
  double times[3] = {0, 5, 10}, xs[NX], ys[NY], *values = malloc(sizeof(double) * 3 * NX * NY);
  for (int i = 0; i < NX; i++)
    xs[i] = X0 + (i + 0.5) * CELL;
  for (int j = 0; j < NY; j++)
    ys[j] = Y0 + (j + 0.5) * CELL;
  for (int c = 0; c < 3 * NX * NY; c++)
    values[c] = value[c / (NX * NY)];
  nc_put_var_double(ncid, t_var, times);
  nc_put_var_double(ncid, x_var, xs);
  nc_put_var_double(ncid, y_var, ys);
  nc_put_var_double(ncid, rain, values);
  nc_close(ncid);
  free(values);
}

static void raster_stacks(void) {
  const double zero = 0, rates[3] = {10, 0, 30};
  write_tif("bed.tif", 1, &zero);
  write_tif("frames.tif", 3, rates);
  write_netcdf("radar.nc", rates);
  const char *body = "[model]\ntype = swe\n[time]\nend = 1000\n[swe]\nbed = bed.tif\n"
                     "precision = double\n[output]\nformats = asc\n";
  write_text("tif.ini", "%sdir = stack_tif\n[rain]\nrate = frames.tif\ninterval = 300\n", body);
  write_text("nc.ini", "%sdir = stack_nc\n[rain]\nrate = radar.nc\n", body);
  double depth = (10.0 + 0 + 30) * 300 * MM_PER_H;
  const char *cases[2] = {"tif.ini", "nc.ini"}, *outs[2] = {"stack_tif", "stack_nc"};
  const char *what[2] = {"3-band GeoTIFF stack, interval 300 s", "NetCDF stack, time in minutes"};
  for (int k = 0; k < 2; k++) {
    int rc = run_tessera(cases[k], "");
    char line[1024];
    stderr_lines(line, sizeof line);
    CHECK(rc == 0, "%s: run (exit %d) %s", what[k], rc, line);
    char name[128];
    snprintf(name, sizeof name, "%s/h_t001000.asc", outs[k]);
    double e = depth_error(name, depth);
    CHECK(e < 1e-12, "%s: depth (10 + 0 + 30) mm/h x 300 s = %g m to %.2e (1e-12)", what[k], depth,
          e);
    budget b;
    char *summary = read_summary(outs[k], &b, what[k]);
    CHECK(rel(b.rain, depth * NX * NY * CELL * CELL) < 1e-12 && fabs(b.rel_error) < 1e-12,
          "%s: budget rain %.17g m3 (1e-12), |rel_error| %.2e < 1e-12", what[k], b.rain,
          b.rel_error);
    CHECK(summary && strstr(summary, "\"crs\": \"EPSG:2154\""), "%s: the case is in EPSG:2154",
          what[k]);
    free(summary);
  }
  CHECK(same_file("stack_tif/h_t001000.asc", "stack_nc/h_t001000.asc"),
        "the NetCDF stack gives the GeoTIFF stack's depths byte for byte");
  /* end cuts the last frame: 10 mm/h x 300 s + 30 mm/h x 150 s */
  int rc = run_tessera("tif.ini", "--set rain.end=750 --out stack_end");
  CHECK(rc == 0, "GeoTIFF stack, end 750 s: run (exit %d)", rc);
  double cut = (10.0 * 300 + 30.0 * 150) * MM_PER_H;
  double e = depth_error("stack_end/h_t001000.asc", cut);
  CHECK(e < 1e-12, "GeoTIFF stack, end 750 s: depth %g m to %.2e (1e-12)", cut, e);
  budget b;
  free(read_summary("stack_end", &b, "GeoTIFF stack, end 750 s"));
}

#endif

/* ---------------------------------------------------------------- 5. gauges.png */

static void gauges_png(void) {
  write_text("gauges.csv", "id,x,y\nG1,105,55\nG2,305,145\n");
  for (int png = 1; png >= 0; png--) {
    write_text("g.ini",
               "[model]\ntype = swe\n[time]\nend = 600\n[swe]\nbed = flat.asc\n[rain]\nrate = 36\n"
               "[output]\ndir = gauges_%d\nformats = asc%s\ngauges = gauges.csv\n"
               "gauge_interval = 60\n",
               png, png ? ", png" : "");
    int rc = run_tessera("g.ini", "");
    CHECK(rc == 0, "gauges, png %s: run (exit %d)", png ? "on" : "off", rc);
    char name[64];
    snprintf(name, sizeof name, "gauges_%d", png);
    budget b;
    char *summary = read_summary(name, &b, png ? "gauges with png" : "gauges without png");
    snprintf(name, sizeof name, "gauges_%d/gauges.png", png);
    if (png) {
      unsigned char magic[8] = {0};
      FILE *f = fopen(at(name), "rb");
      size_t got = f ? fread(magic, 1, 8, f) : 0;
      if (f)
        fclose(f);
      CHECK(got == 8 && memcmp(magic, "\x89PNG\r\n\x1a\n", 8) == 0,
            "gauges + png: gauges.png is a PNG");
      CHECK(summary && strstr(summary, "\"gauges_png\": \"gauges.png\""),
            "gauges + png: summary \"gauges_png\": \"gauges.png\"");
    } else {
      CHECK(!file_exists(at(name)), "gauges without png: no gauges.png");
      CHECK(summary && strstr(summary, "\"gauges_png\": null"),
            "gauges without png: summary \"gauges_png\": null");
    }
    CHECK(summary && strstr(summary, "\"gauges\": \"gauges.csv\""), "summary names gauges.csv");
    free(summary);
  }
}

/* ---------------------------------------------------------------- 6. errors */

/* Runs DIR/bad.ini (its [rain] section given): exit 2, one line holding every word, no
 * output directory. */
static void refused(const char *rain, const char *words[3], const char *what) {
  write_text("bad.ini",
             "[model]\ntype = swe\n[time]\nend = 100\n[swe]\nbed = flat.asc\n[output]\n"
             "dir = bad_out\n[rain]\n%s",
             rain);
  int rc = run_tessera("bad.ini", "");
  char line[1024];
  int lines = stderr_lines(line, sizeof line);
  int ok = rc == 2 && lines == 1 && !file_exists(at("bad_out"));
  for (int w = 0; w < 3; w++)
    ok = ok && (!words[w] || strstr(line, words[w]));
  CHECK(ok, "%s refused (exit %d, %d line): %s", what, rc, lines, line);
}

static void errors(void) {
  write_text("neg.csv", "t,mm_per_h\n0,10\n60,-5\n120,0\n");
  refused("rate = neg.csv\n", (const char *[3]){"neg.csv:3:", "-5"}, "a negative CSV rate");
  refused("rate = storm.csv\ninterval = 60\n", (const char *[3]){"bad.ini:11:", "interval"},
          "interval with a CSV rate");
  refused("rat = 5\n", (const char *[3]){"bad.ini:10:", "'rat'", "'rate'"}, "a misspelt key (rat)");
  refused("start = 10\n", (const char *[3]){"bad.ini:10:", "start", "rate"}, "start without rate");
  ts_raster small;
  ts_raster_alloc(&small, 10, 10, 0, 0, CELL, -9999);
  memset(small.v, 0, sizeof(double) * 100);
  ts_asc_write(at("small.asc"), &small, 17);
  ts_raster_free(&small);
  refused("rate = 5\nloss_rate = small.asc\n", (const char *[3]){"small.asc", "flat.asc"},
          "a loss grid of another size");
  refused("rate = 5\nstart = 50\nend = 50\n", (const char *[3]){"bad.ini:12:", "end"},
          "end = start");
  refused("rate = 5\nstart = 50\nend = 20\n", (const char *[3]){"bad.ini:12:", "end"},
          "end before start");
#if TESSERA_HAVE_GDAL
  write_text("bad_tif.ini", "[model]\ntype = swe\n[time]\nend = 100\n[swe]\nbed = bed.tif\n"
                            "[output]\ndir = bad_out\n[rain]\nrate = frames.tif\n");
  int rc = run_tessera("bad_tif.ini", "");
  char line[1024];
  int lines = stderr_lines(line, sizeof line);
  CHECK(rc == 2 && lines == 1 && strstr(line, "frames.tif") && strstr(line, "interval") &&
            !file_exists(at("bad_out")),
        "a 3-band GeoTIFF without interval refused (exit %d, %d line): %s", rc, lines, line);
#endif
}

int main(void) {
  cli = getenv("TESSERA_BINARY");
  if (!cli || !*cli || access(cli, X_OK) != 0) {
    printf("SKIP: the tessera CLI is not available (TESSERA_BINARY=%s)\n", cli ? cli : "(unset)");
    return 77;
  }
  snprintf(dir, sizeof dir, "/tmp/tessera_rain_case_XXXXXX");
  if (!mkdtemp(dir)) {
    printf("cannot create a temporary directory\n");
    return 1;
  }
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  write_bed("flat.asc", 0);
  write_text("storm.csv", "t,mm_per_h\n0,36\n600,72\n1200,0\n");
  flat_basin("double");
  flat_basin("float");
  start_end();
  tilted_plane();
  runoff_from_dry();
  losses_over_rain();
#if TESSERA_HAVE_GDAL
  GDALAllRegister();
  raster_stacks();
#else
  printf("skipped: raster stacks (a build without GDAL)\n");
#endif
  gauges_png();
  errors();
  clock_gettime(CLOCK_MONOTONIC, &t1);
  printf("%.1f s\n", (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec));
  return finish_in_dir(dir, failures);
}
