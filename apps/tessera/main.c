/* The `tessera` command: run a case, benchmark a solver, describe the build. Prints errors as one
 * line "tessera: message" and exits with 2 for bad input, 1 for other failures. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <netcdf.h>
#include <omp.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "physics/swe/swe_case.h"
#include "tessera/io.h"
#include "tessera/swe.h"

static const char usage[] =
    "usage: tessera run CASE.ini [--set section.key=value ...] [--out DIR] [--restart FILE] "
    "[--quiet]\n"
    "       tessera bench swe [--size N] [--precision float|double] [--steps S] [--json FILE]\n"
    "       tessera info\n"
    "       tessera --help | --version\n"
    "\n"
    "  run     run a simulation case (INI file; keys in docs/config.md)\n"
    "            --set section.key=value  override a key of the case file (repeatable)\n"
    "            --out DIR                output directory (instead of [output] dir)\n"
    "            --restart FILE           continue from a checkpoint written by the same case\n"
    "            --quiet                  no progress line\n"
    "  bench   time the shallow-water solver on a synthetic, fully wet N x N domain\n"
    "  info    version, build features and devices\n"
    "\n"
    "Threads: OMP_NUM_THREADS (default: all cores).\n";

static int fail(ts_status st) {
  fprintf(stderr, "tessera: %s\n", ts_error_message());
  return st == TS_ERR_INPUT ? 2 : 1;
}

static int usage_error(const char *msg, const char *arg) {
  fprintf(stderr, "tessera: %s%s%s (see tessera --help)\n", msg, arg ? ": " : "", arg ? arg : "");
  return 2;
}

static int cmd_run(int argc, char **argv) {
  ts_swe_case_options opt = {.progress = stderr};
  const char **overrides = calloc((size_t)argc, sizeof *overrides);
  if (!overrides)
    return usage_error("out of memory", NULL);
  int rc = 0;
  for (int i = 0; i < argc && rc == 0; i++) {
    const char *a = argv[i];
    int has_value = i + 1 < argc;
    if (strcmp(a, "--set") == 0 && has_value)
      overrides[opt.noverrides++] = argv[++i];
    else if (strcmp(a, "--out") == 0 && has_value)
      opt.out_dir = argv[++i];
    else if (strcmp(a, "--restart") == 0 && has_value)
      opt.restart = argv[++i];
    else if (strcmp(a, "--quiet") == 0)
      opt.quiet = 1;
    else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)
      rc = -1;
    else if (strcmp(a, "--set") == 0 || strcmp(a, "--out") == 0 || strcmp(a, "--restart") == 0)
      rc = usage_error("missing value for option", a);
    else if (a[0] == '-')
      rc = usage_error("unknown option", a);
    else if (!opt.case_path)
      opt.case_path = a;
    else
      rc = usage_error("more than one case file", a);
  }
  if (rc == -1) {
    fputs(usage, stdout);
    rc = 0;
  } else if (rc == 0 && !opt.case_path) {
    rc = usage_error("run needs a case file", NULL);
  } else if (rc == 0) {
    opt.overrides = overrides;
    ts_status st = ts_swe_case_run(&opt);
    if (st != TS_OK)
      rc = fail(st);
  }
  free(overrides);
  return rc;
}

/* A fully wet N x N basin of 1 m cells with walls: a flat bed with a gentle 0.2 m bump, water
 * up to 1 m and a column up to 2 m in the centre (Manning 0.03, RK2). */
static ts_status bench_case(int n, ts_precision precision, ts_swe **out) {
  ts_raster bed, h0;
  TS_CALL(ts_raster_alloc(&bed, n, n, 0, 0, 1.0, -9999));
  ts_status st = ts_raster_alloc(&h0, n, n, 0, 0, 1.0, -9999);
  if (st != TS_OK) {
    ts_raster_free(&bed);
    return st;
  }
  for (int j = 0; j < n; j++)
    for (int i = 0; i < n; i++) {
      double x = (i + 0.5) / n - 0.5, y = (j + 0.5) / n - 0.5;
      double bump_x = x + 0.25, r2 = x * x + y * y;
      bed.v[i + (size_t)j * n] = 0.2 * exp(-(bump_x * bump_x + y * y) / 0.01);
      h0.v[i + (size_t)j * n] = (r2 < 0.01 ? 2.0 : 1.0) - bed.v[i + (size_t)j * n];
    }
  ts_swe_params p;
  ts_swe_params_default(&p);
  p.precision = precision;
  p.friction = TS_FRICTION_MANNING;
  p.friction_value = 0.03;
  st = ts_swe_create(out, &p, &bed, &h0, NULL, NULL, NULL);
  ts_raster_free(&bed);
  ts_raster_free(&h0);
  return st;
}

static int cmd_bench(int argc, char **argv) {
  if (argc < 1 || strcmp(argv[0], "swe") != 0)
    return usage_error("bench needs a model", argc ? argv[0] : "(none)");
  long n = 1024, steps = 0;
  ts_precision precision = TS_FLOAT;
  const char *json = NULL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (i + 1 >= argc)
      return usage_error("missing value for option", a);
    const char *v = argv[++i];
    char *end;
    if (strcmp(a, "--size") == 0) {
      n = strtol(v, &end, 10);
      if (*end || n < 8 || n > 65536)
        return usage_error("--size must be an integer in [8, 65536]", v);
    } else if (strcmp(a, "--steps") == 0) {
      steps = strtol(v, &end, 10);
      if (*end || steps < 1)
        return usage_error("--steps must be a positive integer", v);
    } else if (strcmp(a, "--precision") == 0) {
      if (strcmp(v, "float") && strcmp(v, "double"))
        return usage_error("--precision must be float or double", v);
      precision = strcmp(v, "double") == 0 ? TS_DOUBLE : TS_FLOAT;
    } else if (strcmp(a, "--json") == 0) {
      json = v;
    } else {
      return usage_error("unknown option", a);
    }
  }
  ts_swe *s;
  ts_status st = bench_case((int)n, precision, &s);
  if (st != TS_OK)
    return fail(st);
  double dt;
  for (int w = 0; w < 2 && st == TS_OK; w++)
    st = ts_swe_step(s, 1e9, &dt);
  double t0 = omp_get_wtime(), elapsed = 0;
  long done = 0;
  while (st == TS_OK && (steps ? done < steps : (elapsed < 3.0 || done < 10))) {
    st = ts_swe_step(s, 1e9, &dt);
    done++;
    elapsed = omp_get_wtime() - t0;
  }
  if (st != TS_OK) {
    ts_swe_destroy(s);
    return fail(st);
  }
  double cells = (double)n * n, mcells = cells * done / elapsed / 1e6;
  double bytes = ts_swe_bytes_per_cell_step(s);
  printf("tessera bench swe: %ld x %ld cells, %s, RK2, %d threads\n", n, n,
         ts_precision_name(precision), omp_get_max_threads());
  printf("%12s %8s %10s %12s %16s %10s\n", "cells", "steps", "wall_s", "Mcells/s",
         "bytes/cell-step", "GB/s");
  printf("%12.0f %8ld %10.3f %12.2f %16.0f %10.2f\n", cells, done, elapsed, mcells, bytes,
         mcells * 1e6 * bytes / 1e9);
  ts_swe_destroy(s);
  if (json) {
    char tmp[4200];
    FILE *f = ts_open_temp(json, tmp, sizeof tmp);
    if (!f) {
      fprintf(stderr, "tessera: %s: cannot write\n", json);
      return 1;
    }
    ts_json j;
    ts_json_begin(&j, f);
    ts_json_key(&j, "model"), ts_json_string(&j, "swe");
    ts_json_key(&j, "backend"), ts_json_string(&j, "cpu");
    ts_json_key(&j, "version"), ts_json_string(&j, TESSERA_VERSION);
    ts_json_key(&j, "size"), ts_json_int(&j, n);
    ts_json_key(&j, "cells"), ts_json_number(&j, cells);
    ts_json_key(&j, "precision"), ts_json_string(&j, ts_precision_name(precision));
    ts_json_key(&j, "threads"), ts_json_int(&j, omp_get_max_threads());
    ts_json_key(&j, "steps"), ts_json_int(&j, done);
    ts_json_key(&j, "wall_s"), ts_json_number(&j, elapsed);
    ts_json_key(&j, "mcells_per_s"), ts_json_number(&j, mcells);
    ts_json_key(&j, "bytes_per_cell_step"), ts_json_number(&j, bytes);
    ts_json_key(&j, "gb_per_s"), ts_json_number(&j, mcells * 1e6 * bytes / 1e9);
    ts_json_end(&j);
    ts_status st_json = ts_commit_temp(f, tmp, json);
    if (st_json != TS_OK)
      return fail(st_json);
  }
  return 0;
}

static int cmd_info(void) {
  printf("tessera %s\n", TESSERA_VERSION);
  printf("models:      swe (shallow water, Kurganov-Petrova)\n");
  printf("backends:    cpu (OpenMP, %d threads available)\n", omp_get_max_threads());
  printf("precisions:  float, double\n");
  printf("formats:     asc, asc.gz (in), netcdf (NetCDF-C %.20s), vtk, png (libpng %s)\n",
         nc_inq_libvers(), png_get_libpng_ver(NULL));
  printf("MPI:         not yet\n");
  printf("CUDA:        none (CPU build)\n");
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2)
    return usage_error("no command", NULL);
  const char *cmd = argv[1];
  if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
    fputs(usage, stdout);
    return 0;
  }
  if (strcmp(cmd, "--version") == 0) {
    printf("tessera %s\n", TESSERA_VERSION);
    return 0;
  }
  if (strcmp(cmd, "run") == 0)
    return cmd_run(argc - 2, argv + 2);
  if (strcmp(cmd, "bench") == 0)
    return cmd_bench(argc - 2, argv + 2);
  if (strcmp(cmd, "info") == 0)
    return cmd_info();
  return usage_error("unknown command", cmd);
}
