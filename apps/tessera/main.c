/* The `tessera` command: run a case, benchmark a solver, describe the build. Prints errors as one
 * line "tessera: message" and exits with 2 for bad input, 1 for other failures, and 3 when
 * SIGTERM, SIGINT or SIGUSR1 stopped `tessera run`, which saved its state first (physics/stop.h;
 * a second signal ends it at once, by that signal). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <netcdf.h>
#include <omp.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include "bench_balance.h"
#include "physics/case.h"
#include "physics/cli.h"
#include "physics/model.h"
#include "physics/stop.h"
#include "tessera/comm.h"
#include "tessera/cpu.h"
#include "tessera/gpu.h"
#include "tessera/io.h"
#include "tessera/swe.h"
#include "tessera/transport.h"

/* The usage: the commands, each model's bench (model.h), then what each does. */
static void print_usage(void) {
  int n;
  const ts_model *const *models = ts_models(&n);
  printf("usage: tessera run CASE.ini [--set section.key=value ...] [--out DIR] [--restart FILE] "
         "[--trace FILE.json] [--quiet]\n");
  for (int k = 0; k < n; k++)
    if (models[k]->bench)
      printf("       tessera bench %-3s %s", models[k]->name, models[k]->bench_usage);
  fputs(
      "       tessera bench balance CASE.ini [--set section.key=value ...]\n"
      "                         [--modes off,static,dynamic,auto] [--out DIR] [--json FILE]\n"
      "       tessera info [--no-speeds]\n"
      "       tessera --help | --version\n"
      "\n"
      "  run     run a simulation case (INI file; keys in docs/config.md)\n"
      "            --set section.key=value  override a key of the case file (repeatable)\n"
      "            --out DIR                output directory (instead of [output] dir)\n"
      "            --restart FILE           continue from a checkpoint written by the same case\n"
      "            --trace FILE.json        every task, copy and kernel of the task runtime with\n"
      "                                     its start and end, in the Chrome trace format (open\n"
      "                                     in Perfetto or chrome://tracing); rmcrt, couple = "
      "energy\n"
      "            --quiet                  no progress line\n"
      "          SIGTERM, SIGINT or SIGUSR1: stop after the step, save DIR/checkpoint_stop.tsc\n"
      "          (swe; lbm writes its fields), exit code 3; a second signal ends it at once\n",
      stdout);
  for (int k = 0; k < n; k++)
    if (models[k]->bench)
      fputs(models[k]->bench_help, stdout);
  fputs(
      "  bench balance   runs the case once per [parallel] balance mode (default all four,\n"
      "          in this order), into DIR/MODE (default: a temporary directory, removed), with\n"
      "          formats = vtk and maxima = off unless --set says otherwise; prints the seconds "
      "of\n"
      "          the run and of its time loop, the loop's speed-up over off, and the balancer's\n"
      "          moves and imbalance (summary.json balance)\n"
      "  info    version, build features, devices and their speeds on the bench swe basin\n"
      "          (Mcells/s and share of the work, 1/t over the sum of 1/t; about a second)\n"
      "            --no-speeds              skip the speed measurement\n"
      "\n"
      "Threads: OMP_NUM_THREADS (default: all cores). Several processes: mpirun -np N tessera run\n"
      "CASE.ini ([parallel] keys in docs/config.md).\n",
      stdout);
}

/* `tessera bench NAME ...`: the module's benchmark, or bench balance. */
static int cmd_bench(int argc, char **argv, int full_argc, char **full_argv) {
  if (argc >= 1 && strcmp(argv[0], "balance") == 0)
    return bench_balance(argc - 1, argv + 1);
  const ts_model *model = argc >= 1 ? ts_model_find(argv[0]) : NULL;
  if (!model || !model->bench)
    return ts_cli_usage_error("bench needs a model with a benchmark, or balance",
                              argc ? argv[0] : "(none)");
  return model->bench(argc - 1, argv + 1, full_argc, full_argv);
}

static int cmd_run(int argc, char **argv) {
  ts_case_options opt = {.progress = stderr};
  const char **overrides = calloc((size_t)argc, sizeof *overrides);
  if (!overrides)
    return ts_cli_usage_error("out of memory", NULL);
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
    else if (strcmp(a, "--trace") == 0 && has_value)
      opt.trace = argv[++i];
    else if (strcmp(a, "--quiet") == 0)
      opt.quiet = 1;
    else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)
      rc = -1;
    else if (strcmp(a, "--set") == 0 || strcmp(a, "--out") == 0 || strcmp(a, "--restart") == 0 ||
             strcmp(a, "--trace") == 0)
      rc = ts_cli_usage_error("missing value for option", a);
    else if (a[0] == '-')
      rc = ts_cli_usage_error("unknown option", a);
    else if (!opt.case_path)
      opt.case_path = a;
    else
      rc = ts_cli_usage_error("more than one case file", a);
  }
  if (rc == -1) {
    print_usage();
    rc = 0;
  } else if (rc == 0 && !opt.case_path) {
    rc = ts_cli_usage_error("run needs a case file", NULL);
  } else if (rc == 0) {
    opt.overrides = overrides;
    ts_status st = ts_stop_install();
    if (st == TS_OK)
      st = ts_case_run(&opt);
    if (st == TS_STOPPED)
      rc = 3;
    else if (st != TS_OK)
      rc = ts_cli_fail(st);
  }
  free(overrides);
  return rc;
}

static int cmd_info(int argc, char **argv) {
  int speeds = 1;
  for (int i = 0; i < argc; i++) {
    if (strcmp(argv[i], "--no-speeds") == 0)
      speeds = 0;
    else
      return ts_cli_usage_error("unknown option", argv[i]);
  }
  printf("tessera %s\n", TESSERA_VERSION);
  int nmodels;
  const ts_model *const *models = ts_models(&nmodels);
  printf("models:     ");
  for (int k = 0; k < nmodels; k++)
    printf(" %s (%s)%s", models[k]->name, models[k]->description, k + 1 < nmodels ? "," : "\n");
  printf("backends:    cpu (OpenMP, %d threads available; loops built for %s)%s\n",
         omp_get_max_threads(), ts_cpu_kernels_name(), TESSERA_HAVE_CUDA ? ", cuda" : "");
  printf("precisions:  float, double\n");
  printf("formats:     asc, asc.gz (in), netcdf (NetCDF-C %.20s), vtk, png (libpng %s)\n",
         nc_inq_libvers(), png_get_libpng_ver(NULL));
  const char *gdal = ts_gdal_version(); /* GDAL's buffer: the next call replaces it */
  printf("GDAL:        %s%s\n", gdal ? "gdal " : "not built in (grids: ESRI ASCII only)",
         gdal ? gdal : "");
  printf("MPI:         %s (%d ranks in this run)\n",
         ts_comm_built_with_mpi() ? ts_comm_library() : "not built in",
         ts_comm_size(ts_comm_world()));
  int gpus = ts_gpu_count();
  printf("CUDA:        %s, %d GPU%s\n", ts_gpu_runtime(), gpus, gpus == 1 ? "" : "s");
  for (int d = 0; d < gpus; d++) {
    ts_gpu_info g;
    if (ts_gpu_info_of(d, &g) != TS_OK)
      continue;
    printf("  GPU %d:     %s, %.1f GiB, compute capability %d.%d, %d multiprocessors; peer "
           "access to:",
           d, g.name, g.memory_gib, g.major, g.minor, g.multiprocessors);
    int any = 0;
    for (int e = 0; e < gpus; e++)
      if (e != d && ts_gpu_peer_access(d, e))
        printf(" %d", e), any = 1;
    printf("%s\n", any ? "" : " none");
  }
  printf("GPU halos:   between ranks: nccl %s, cuda-mpi %s, host staging %s (auto picks the "
         "first available)\n",
         ts_transport_available(TS_TRANSPORT_NCCL) ? "yes" : "no (not built in)",
         ts_transport_available(TS_TRANSPORT_CUDA_MPI) ? "yes" : "no (MPI is not CUDA-aware)",
         ts_transport_available(TS_TRANSPORT_HOST) ? "yes" : "no");
  for (int k = 0; k < nmodels; k++)
    if (models[k]->info)
      models[k]->info(speeds);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2)
    return ts_cli_usage_error("no command", NULL);
  const char *cmd = argv[1];
  if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
    print_usage();
    return 0;
  }
  if (strcmp(cmd, "--version") == 0) {
    printf("tessera %s\n", TESSERA_VERSION);
    return 0;
  }
  int rc;
  if (strcmp(cmd, "run") != 0 && strcmp(cmd, "bench") != 0 && strcmp(cmd, "info") != 0)
    return ts_cli_usage_error("unknown command", cmd);
  if (ts_comm_init(&argc, &argv) != TS_OK)
    return ts_cli_fail(TS_ERR_INPUT);
  if (strcmp(cmd, "run") == 0)
    rc = cmd_run(argc - 2, argv + 2);
  else if (strcmp(cmd, "bench") == 0)
    rc = cmd_bench(argc - 2, argv + 2, argc, argv);
  else
    rc = cmd_info(argc - 2, argv + 2);
  ts_comm_finalize();
  return rc;
}
