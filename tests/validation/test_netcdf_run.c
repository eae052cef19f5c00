/* Validation: the run's one NetCDF file (swe.nc), the gauges' timeSeries file (gauges.nc) and the
 * lattice Boltzmann flow.nc, read back through the NetCDF C API (through the CLI).
 *
 * A small dam break (40 x 20 cells of 5 m, a block of NODATA cells, 2 gauges) runs with formats
 * asc and netcdf, [output] netcdf_per_snapshot = on and output times 2, 4, 6 and 8 s, in float
 * and in double precision. Checks:
 *  - swe.nc: CF-1.8, an unlimited time of 4 steps holding 2, 4, 6, 8; x and y with units and
 *    standard names; h, hu, hv, eta of the run's precision, chunked one time slice per chunk,
 *    DEFLATE level 1 with shuffle; at each time equal to the per-snapshot swe_T.nc bit for bit
 *    (as float, which that file stores) and to the .asc files of the same run exactly (their 9 or
 *    17 digits give the value back), NODATA as _FillValue; bed and the maps (max_h, ...,
 *    max_hazard) equal to their .asc files; summary.json names swe.nc and gauges.nc;
 *  - gauges.nc: featureType timeSeries, station (2) with station_name (cf_role timeseries_id),
 *    x, y, time and h, eta, u, v (station, time) equal to gauges.csv within its 9 digits;
 *  - the same on a quadtree grid (2 levels, blocks of 8): swe.nc on the bed's grid;
 *  - without netcdf_per_snapshot no swe_T.nc is written, swe.nc is;
 *  - a run killed (SIGKILL) after its second output time leaves a swe.nc that opens and holds the
 *    times reached, equal to their .asc files;
 *  - an lbm cavity with formats = netcdf writes flow.nc with one time step (the steps run).
 * Skipped (exit 77) when the CLI is missing. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <netcdf.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "analytic.h"

#define NX 40
#define NY 20
#define NT 4
static const double times[NT] = {2, 4, 6, 8};

/* CHECK with the condition evaluated before the message's arguments (values it reads). */
#define EXPECT(cond, ...)                                                                          \
  do {                                                                                             \
    int expect_ok_ = (cond);                                                                       \
    CHECK(expect_ok_, __VA_ARGS__);                                                                \
  } while (0)

static int exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

/* The text attribute `name` of variable var (NC_GLOBAL too) into out ("" when missing). */
static void text_att(int ncid, int var, const char *name, char *out, size_t size) {
  size_t len = 0;
  out[0] = 0;
  if (nc_inq_attlen(ncid, var, name, &len) == NC_NOERR && len < size &&
      nc_get_att_text(ncid, var, name, out) == NC_NOERR)
    out[len] = 0;
}

/* 1 when the values (as doubles, fill = NODATA cell) equal the .asc file's exactly (single 1: as
 * floats, since 9 digits give a float back, not its double; 2: within a float's precision, for
 * the maps of a float run: doubles that the .asc file has to 9 digits, swe.nc as floats). */
static int equals_asc(const double *v, double fill, int single, const char *asc) {
  ts_raster r = {0};
  if (val_read_asc(asc, &r) != 0 || r.ncols != NX || r.nrows != NY)
    return 0;
  int same = 1;
  for (int c = 0; c < NX * NY; c++)
    same &= v[c] == fill  ? r.v[c] == r.nodata
            : single == 1 ? (float)v[c] == (float)r.v[c]
            : single == 2 ? fabs(v[c] - r.v[c]) <= 1.2e-7 * fabs(r.v[c])
                          : v[c] == r.v[c];
  val_raster_free(&r);
  return same;
}

/* Checks swe.nc of run `out` (precision: NC_FLOAT or NC_DOUBLE; per: per-snapshot files). */
static void check_run_file(const char *out, nc_type precision, int per) {
  char path[2048], text[256], tag[32];
  snprintf(path, sizeof path, "%s/swe.nc", out);
  int ncid, dim, var, unlimited;
  size_t len = 0;
  if (nc_open(path, NC_NOWRITE, &ncid) != NC_NOERR) {
    EXPECT(0, "%s opens", path);
    return;
  }
  text_att(ncid, NC_GLOBAL, "Conventions", text, sizeof text);
  EXPECT(strcmp(text, "CF-1.8") == 0, "Conventions = \"%s\"", text);
  EXPECT(nc_inq_dimid(ncid, "time", &dim) == NC_NOERR &&
             nc_inq_dimlen(ncid, dim, &len) == NC_NOERR &&
             nc_inq_unlimdim(ncid, &unlimited) == NC_NOERR && unlimited == dim && len == NT,
         "time: unlimited, %zu steps (%d expected)", len, NT);
  double t[NT] = {0};
  EXPECT(nc_inq_varid(ncid, "time", &var) == NC_NOERR &&
             nc_get_var_double(ncid, var, t) == NC_NOERR && memcmp(t, times, sizeof t) == 0,
         "time = %g, %g, %g, %g", t[0], t[1], t[2], t[3]);
  text_att(ncid, var, "standard_name", text, sizeof text);
  EXPECT(strcmp(text, "time") == 0, "time standard_name \"%s\"", text);
  text_att(ncid, var, "units", text, sizeof text);
  EXPECT(strcmp(text, "seconds") == 0, "time units \"%s\"", text);
  const char *axes[2][2] = {{"x", "projection_x_coordinate"}, {"y", "projection_y_coordinate"}};
  for (int a = 0; a < 2; a++) {
    char units[32];
    int ok = nc_inq_varid(ncid, axes[a][0], &var) == NC_NOERR;
    text_att(ncid, var, "standard_name", text, sizeof text);
    text_att(ncid, var, "units", units, sizeof units);
    EXPECT(ok && strcmp(text, axes[a][1]) == 0 && strcmp(units, "m") == 0, "%s: %s in \"%s\"",
           axes[a][0], text, units);
  }
  double *v = malloc(sizeof(double) * NX * NY);
  float *a = malloc(sizeof(float) * NX * NY), *b = malloc(sizeof(float) * NX * NY);
  const char *names[4] = {"h", "hu", "hv", "eta"};
  double fill = precision == NC_DOUBLE ? NC_FILL_DOUBLE : NC_FILL_FLOAT;
  for (int k = 0; k < 4; k++) {
    nc_type type = 0;
    int storage = -1, shuffle = 0, deflate = 0, level = 0;
    size_t chunks[3] = {0};
    int ok = nc_inq_varid(ncid, names[k], &var) == NC_NOERR &&
             nc_inq_vartype(ncid, var, &type) == NC_NOERR &&
             nc_inq_var_chunking(ncid, var, &storage, chunks) == NC_NOERR &&
             nc_inq_var_deflate(ncid, var, &shuffle, &deflate, &level) == NC_NOERR;
    EXPECT(ok && type == precision && storage == NC_CHUNKED && chunks[0] == 1 && chunks[1] == NY &&
               chunks[2] == NX && shuffle && deflate && level == 1,
           "%s: type %d, chunks %zu x %zu x %zu, shuffle %d, deflate %d level %d", names[k], type,
           chunks[0], chunks[1], chunks[2], shuffle, deflate, level);
    for (int n = 0; n < NT && ok; n++) {
      size_t start[3] = {(size_t)n, 0, 0}, count[3] = {1, NY, NX};
      snprintf(tag, sizeof tag, "t%06.0f", times[n]);
      ok = nc_get_vara_double(ncid, var, start, count, v) == NC_NOERR &&
           nc_get_vara_float(ncid, var, start, count, a) == NC_NOERR;
      snprintf(path, sizeof path, "%s/%s_%s.asc", out, names[k], tag);
      EXPECT(ok && equals_asc(v, fill, precision == NC_FLOAT, path),
             "%s at t = %g equals %s exactly", names[k], times[n], path);
      if (!per)
        continue;
      int snap, svar;
      snprintf(path, sizeof path, "%s/swe_%s.nc", out, tag);
      int same = nc_open(path, NC_NOWRITE, &snap) == NC_NOERR;
      if (same) {
        same = nc_inq_varid(snap, names[k], &svar) == NC_NOERR &&
               nc_get_var_float(snap, svar, b) == NC_NOERR &&
               memcmp(a, b, sizeof(float) * NX * NY) == 0;
        nc_close(snap);
      }
      EXPECT(same, "%s at t = %g equals %s bit for bit (as float)", names[k], times[n], path);
    }
  }
  const char *maps[7] = {"bed",     "max_h",    "max_speed", "arrival",
                         "max_eta", "duration", "max_hazard"};
  for (int m = 0; m < 7; m++) {
    int ndims = 0;
    int ok = nc_inq_varid(ncid, maps[m], &var) == NC_NOERR &&
             nc_inq_varndims(ncid, var, &ndims) == NC_NOERR && ndims == 2 &&
             nc_get_var_double(ncid, var, v) == NC_NOERR;
    snprintf(path, sizeof path, "%s/%s.asc", out, maps[m]);
    EXPECT(ok && (m == 0 || equals_asc(v, fill, precision == NC_FLOAT ? 2 : 0, path)),
           "map %s (y, x)%s", maps[m], m ? " equals its .asc file" : "");
  }
  free(v);
  free(a);
  free(b);
  nc_close(ncid);
}

/* Checks gauges.nc of run `out` against gauges.csv (time,id,h,surface,u,v; 2 gauges). */
static void check_gauges_file(const char *out) {
  char path[2048], text[256];
  snprintf(path, sizeof path, "%s/gauges.nc", out);
  int ncid, dim, var;
  size_t nst = 0, nt = 0;
  if (nc_open(path, NC_NOWRITE, &ncid) != NC_NOERR) {
    EXPECT(0, "%s opens", path);
    return;
  }
  text_att(ncid, NC_GLOBAL, "featureType", text, sizeof text);
  EXPECT(strcmp(text, "timeSeries") == 0, "gauges.nc featureType \"%s\"", text);
  EXPECT(nc_inq_dimid(ncid, "station", &dim) == NC_NOERR &&
             nc_inq_dimlen(ncid, dim, &nst) == NC_NOERR && nst == 2,
         "gauges.nc: %zu stations", nst);
  EXPECT(nc_inq_dimid(ncid, "time", &dim) == NC_NOERR &&
             nc_inq_dimlen(ncid, dim, &nt) == NC_NOERR && nt > 2,
         "gauges.nc: %zu times", nt);
  char names[4] = "";
  int ok = nc_inq_varid(ncid, "station_name", &var) == NC_NOERR;
  text_att(ncid, var, "cf_role", text, sizeof text);
  size_t start[2] = {0, 0}, count[2] = {2, 2};
  ok = ok && nc_get_vara_text(ncid, var, start, count, names) == NC_NOERR;
  EXPECT(ok && strcmp(text, "timeseries_id") == 0, "station_name cf_role \"%s\"", text);
  char id0[3] = {names[0], names[1], 0}, id1[3] = {names[2], names[3], 0};
  EXPECT(strcmp(id0, "G1") == 0 && strcmp(id1, "G2") == 0, "station names %s, %s", id0, id1);
  double xy[2] = {0};
  EXPECT(nc_inq_varid(ncid, "x", &var) == NC_NOERR &&
             nc_get_var_double(ncid, var, xy) == NC_NOERR && xy[0] == 52.5 && xy[1] == 152.5,
         "station x = %g, %g", xy[0], xy[1]);
  double *t = calloc(nt, sizeof(double)), *h = calloc(2 * nt, sizeof(double));
  double *u = calloc(2 * nt, sizeof(double));
  ok = nc_inq_varid(ncid, "time", &var) == NC_NOERR &&
       nc_get_var_double(ncid, var, t) == NC_NOERR && nc_inq_varid(ncid, "h", &var) == NC_NOERR &&
       nc_get_var_double(ncid, var, h) == NC_NOERR && nc_inq_varid(ncid, "u", &var) == NC_NOERR &&
       nc_get_var_double(ncid, var, u) == NC_NOERR;
  snprintf(path, sizeof path, "%s/gauges.csv", out);
  FILE *f = fopen(path, "r");
  char line[512];
  size_t rows = 0, bad = 0;
  if (f && fgets(line, sizeof line, f))
    while (fgets(line, sizeof line, f)) {
      double tc, hc, sc, uc, vc;
      char id[16];
      if (sscanf(line, "%lf,%15[^,],%lf,%lf,%lf,%lf", &tc, id, &hc, &sc, &uc, &vc) != 6)
        continue;
      size_t r = rows / 2, g = rows % 2;
      rows++;
      if (r >= nt || fabs(t[r] - tc) > 1e-8 * fabs(tc) ||
          fabs(h[g * nt + r] - hc) > 1e-8 * fabs(hc) ||
          fabs(u[g * nt + r] - uc) > 1e-8 * fabs(uc) + 1e-300)
        bad++;
    }
  if (f)
    fclose(f);
  EXPECT(ok && rows == 2 * nt && bad == 0, "gauges.nc equals gauges.csv (%zu rows, %zu differ)",
         rows, bad);
  free(t);
  free(h);
  free(u);
  nc_close(ncid);
}

/* Writes the case (end time, output times) into dir/NAME. */
static void write_case(const char *dir, const char *name, double end, const char *times_line,
                       const char *extra) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  fprintf(f,
          "[model]\ntype = swe\n\n[time]\nend = %g\n\n[swe]\nbed = bed.asc\n"
          "initial_surface = eta0.asc\nmanning = 0.03\n%s\n[boundary]\nnorth = wall\nsouth = wall\n"
          "east = wall\nwest = wall\n\n[output]\ndir = out\n%s\nformats = asc, netcdf\n"
          "gauges = gauges.csv\ngauge_interval = 0.5\n",
          end, extra, times_line);
  fclose(f);
}

/* Runs dir/slow.ini until dir/out/h_t000003.asc exists (the third output time has begun, so
 * the second is whole: an output time's writers all finish before the next time is written),
 * kills it with SIGKILL and checks that its swe.nc holds the second time. */
static void check_killed(const char *cli, const char *dir) {
  char out[512], path[1024], marker[1024], kase[1024];
  snprintf(out, sizeof out, "%s/killed", dir);
  snprintf(marker, sizeof marker, "%s/h_t000003.asc", out);
  snprintf(kase, sizeof kase, "%s/slow.ini", dir);
  pid_t pid = fork();
  if (pid == 0) {
    execl(cli, cli, "run", kase, "--out", out, "--quiet", (char *)NULL);
    _exit(127);
  }
  int waited = 0;
  struct timespec pause = {0, 2000000};
  while (!exists(marker) && waited < 60000) { /* 2 ms at a time, 2 min at most */
    nanosleep(&pause, NULL);
    waited++;
    if (waitpid(pid, NULL, WNOHANG) == pid) {
      pid = -1;
      break;
    }
  }
  if (pid > 0) {
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
  }
  snprintf(path, sizeof path, "%s/summary.json", out);
  EXPECT(pid > 0 && exists(marker) && !exists(path),
         "the slow run was killed in its third output time, before its end");
  snprintf(path, sizeof path, "%s/swe.nc", out);
  int ncid, dim, var;
  size_t len = 0;
  int ok = nc_open(path, NC_NOWRITE, &ncid) == NC_NOERR;
  EXPECT(ok && nc_inq_dimid(ncid, "time", &dim) == NC_NOERR &&
             nc_inq_dimlen(ncid, dim, &len) == NC_NOERR && len >= 2,
         "the killed run's swe.nc opens and holds %zu times (>= 2)", len);
  if (!ok)
    return;
  ts_raster r = {0};
  double *v = NULL;
  snprintf(path, sizeof path, "%s/h_t000002.asc", out);
  int same = len >= 2 && val_read_asc(path, &r) == 0 &&
             (v = malloc(sizeof(double) * (size_t)r.ncols * r.nrows)) != NULL;
  size_t start[3] = {1, 0, 0}, count[3] = {1, (size_t)r.nrows, (size_t)r.ncols};
  double t = 0;
  same = same && nc_inq_varid(ncid, "h", &var) == NC_NOERR &&
         nc_get_vara_double(ncid, var, start, count, v) == NC_NOERR &&
         nc_inq_varid(ncid, "time", &var) == NC_NOERR &&
         nc_get_vara_double(ncid, var, start, count, &t) == NC_NOERR && t == 2;
  for (int c = 0; same && c < r.ncols * r.nrows; c++)
    same = v[c] == NC_FILL_FLOAT ? r.v[c] == r.nodata : (float)v[c] == (float)r.v[c];
  EXPECT(same, "its second time step (t = %g) equals h_t000002.asc", t);
  free(v);
  val_raster_free(&r);
  nc_close(ncid);
}

int main(void) {
  const char *cli = val_cli();
  if (!cli)
    return VAL_SKIP;
  char dir[] = "/tmp/tessera_netcdf_XXXXXX";
  if (!mkdtemp(dir)) {
    printf("cannot create a temporary directory\n");
    return 1;
  }
  char path[1024], cmd[4096], out[512];
  ts_raster bed = val_raster(NX, NY, 5, 0, 0), eta = val_raster(NX, NY, 5, 0, 0);
  for (int j = 0; j < NY; j++)
    for (int i = 0; i < NX; i++) {
      double x = val_xc(&bed, i);
      bed.v[i + j * NX] = (i >= 30 && i < 33 && j >= 5 && j < 9) ? -9999 : 0.01 * (200 - x);
      eta.v[i + j * NX] = x < 60 ? 4 : bed.v[i + j * NX];
    }
  snprintf(path, sizeof path, "%s/bed.asc", dir);
  EXPECT(val_write_asc(path, &bed) == 0, "wrote %s", path);
  snprintf(path, sizeof path, "%s/eta0.asc", dir);
  EXPECT(val_write_asc(path, &eta) == 0, "wrote %s", path);
  val_raster_free(&bed);
  val_raster_free(&eta);
  snprintf(path, sizeof path, "%s/gauges.csv", dir);
  FILE *f = fopen(path, "w");
  fprintf(f, "id,x,y\nG1,52.5,50\nG2,152.5,50\n");
  fclose(f);

  const char *precisions[2] = {"float", "double"};
  for (int p = 0; p < 2; p++) {
    char extra[64];
    snprintf(extra, sizeof extra, "precision = %s\n", precisions[p]);
    write_case(dir, "case.ini", 8, "times = 2, 4, 6\nnetcdf_per_snapshot = on", extra);
    snprintf(out, sizeof out, "%s/%s", dir, precisions[p]);
    snprintf(cmd, sizeof cmd, "\"%s\" run %s/case.ini --out %s --quiet", cli, dir, out);
    int rc = system(cmd);
    EXPECT(rc == 0, "%s run succeeded (%s)", precisions[p], cmd);
    check_run_file(out, p ? NC_DOUBLE : NC_FLOAT, 1);
    check_gauges_file(out);
    snprintf(path, sizeof path, "%s/summary.json", out);
    char *summary = val_read_file(path, NULL);
    EXPECT(summary && strstr(summary, "\"netcdf\": \"swe.nc\"") &&
               strstr(summary, "\"gauges_netcdf\": \"gauges.nc\"") &&
               strstr(summary, "\"netcdf\": \"swe_t000002.nc\""),
           "summary.json names swe.nc, gauges.nc and swe_t000002.nc");
    free(summary);
  }

  /* the quadtree grid: swe.nc holds the snapshots on the bed's grid, as the .asc files */
  write_case(dir, "case.ini", 8, "times = 2, 4, 6\nnetcdf_per_snapshot = on",
             "[grid]\ntype = buq\nlevels = 2\nblock = 8\n");
  snprintf(out, sizeof out, "%s/buq", dir);
  snprintf(cmd, sizeof cmd, "\"%s\" run %s/case.ini --out %s --quiet", cli, dir, out);
  EXPECT(system(cmd) == 0, "quadtree run succeeded (%s)", cmd);
  check_run_file(out, NC_FLOAT, 1);

  write_case(dir, "case.ini", 8, "times = 2, 4, 6", "");
  snprintf(out, sizeof out, "%s/single", dir);
  snprintf(cmd, sizeof cmd, "\"%s\" run %s/case.ini --out %s --quiet", cli, dir, out);
  EXPECT(system(cmd) == 0, "run without netcdf_per_snapshot succeeded");
  snprintf(path, sizeof path, "%s/swe_t000002.nc", out);
  EXPECT(!exists(path), "no per-snapshot file without netcdf_per_snapshot");
  check_run_file(out, NC_FLOAT, 0);

  /* the slow case: every second an output, 2000 s of flow */
  write_case(dir, "slow.ini", 2000, "interval = 1", "");
  check_killed(cli, dir);

  snprintf(out, sizeof out, "%s/lbm", dir);
  snprintf(cmd, sizeof cmd,
           "\"%s\" run %s/examples/cavity2d/cavity2d.ini --out %s --quiet --set lbm.nx=16 "
           "--set time.steps=50 --set output.formats=netcdf",
           cli, getenv("TESSERA_SOURCE_DIR") ? getenv("TESSERA_SOURCE_DIR") : ".", out);
  EXPECT(system(cmd) == 0, "lbm run with formats = netcdf (%s)", cmd);
  snprintf(path, sizeof path, "%s/flow.nc", out);
  int ncid, dim, var;
  size_t nt = 0, nx = 0;
  double steps = 0;
  float *speed = malloc(sizeof(float) * 16 * 16);
  int ok = nc_open(path, NC_NOWRITE, &ncid) == NC_NOERR;
  EXPECT(ok && nc_inq_dimid(ncid, "time", &dim) == NC_NOERR &&
             nc_inq_dimlen(ncid, dim, &nt) == NC_NOERR && nt == 1 &&
             nc_inq_dimid(ncid, "x", &dim) == NC_NOERR &&
             nc_inq_dimlen(ncid, dim, &nx) == NC_NOERR && nx == 16 &&
             nc_inq_varid(ncid, "time", &var) == NC_NOERR &&
             nc_get_var_double(ncid, var, &steps) == NC_NOERR && steps == 50 &&
             nc_inq_varid(ncid, "speed", &var) == NC_NOERR &&
             nc_get_var_float(ncid, var, speed) == NC_NOERR && speed[16 * 15 + 8] > 0,
         "flow.nc: %zu time step (%g steps), %zu cells along x, speed below the lid %g", nt, steps,
         nx, ok ? speed[16 * 15 + 8] : 0);
  if (ok)
    nc_close(ncid);
  free(speed);
  int status = val_finish();
  if (status == 0) {
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
      printf("could not remove %s\n", dir);
  }
  return status;
}
