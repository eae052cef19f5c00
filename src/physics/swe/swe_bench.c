/* `tessera bench swe` and the shallow-water lines of `tessera info`: the solver timed on a
 * synthetic, fully wet N x N basin (Mcells/s, the time per phase, the hidden fraction of the halo
 * exchange; weak and strong scaling over GPUs), and each device's speed on that basin. */
#define _POSIX_C_SOURCE 200809L
#include "physics/swe/swe_bench.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "physics/case.h"
#include "physics/cli.h"
#include "tessera/comm.h"
#include "tessera/gpu.h"
#include "tessera/io.h"
#include "tessera/swe.h"
#include "tessera/transport.h"

/* The grid of the bench's runs (--grid, --levels, --block): uniform by default; a quadtree
 * with more than one level is refined to the finest cells where the bump is steeper than 0.02
 * and coarser elsewhere. */
static ts_swe_grid_params bench_grid = {
    .type = TS_GRID_UNIFORM, .block = 16, .levels = 1, .refine_water = -1};

/* A fully wet N x N basin of 1 m cells with walls: a flat bed with a gentle 0.2 m bump, water
 * up to 1 m and a column up to 2 m in the centre (Manning 0.03, RK2). */
static ts_status bench_case(int n, ts_precision precision, const ts_swe_parallel *par,
                            ts_swe **out) {
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
  p.parallel = *par;
  p.early_exit = 0; /* every tile is wet */
  p.grid = bench_grid;
  if (p.grid.levels > 1)
    p.grid.refine_slope = 0.02;
  st = ts_swe_create(out, &p, &bed, &h0, NULL, NULL, NULL);
  ts_raster_free(&bed);
  ts_raster_free(&h0);
  return st;
}

/* One timed bench run: Mcells/s and the subdomains' phase times summed over subdomains. */
typedef struct bench_result {
  long steps;
  double wall, mcells, compute, pack, wait, unpack;
  /* GPU memory the run took (in use at its end less before it) per cell, and the cells the GPUs'
   * memory free before it would hold at that rate (CUDA backend, one rank) */
  double device_bytes_per_cell, device_cells_max;
  /* the subdomains the run had and the GPUs they were on, one entry per rank and device (without
   * --devices a CUDA run takes every GPU of the node, so the report names them) */
  int subdomains, ngpus;
  int gpus[TS_MAX_DEVICES];
} bench_result;

static ts_status bench_run(int n, ts_precision precision, const ts_swe_parallel *par, long steps,
                           bench_result *r, double *bytes) {
  ts_swe *s;
  double used0 = 0, free0 = 0, used1 = 0, free1 = 0;
  if (par->backend == TS_BACKEND_CUDA)
    ts_gpu_memory(par->devices, par->ndevices, &used0, &free0);
  TS_CALL(bench_case(n, precision, par, &s));
  double dt;
  ts_status st = TS_OK;
  /* warm-up: two steps, or until static balance has timed the devices and moved (a few more) */
  ts_swe_balance b = {.mode = TS_BALANCE_STATIC};
  for (int w = 0;
       st == TS_OK && (w < 2 || (b.mode == TS_BALANCE_STATIC && !b.rebalances)) && w < 20; w++) {
    st = ts_swe_step(s, 1e9, &dt);
    ts_swe_balance_get(s, &b);
  }
  int nsub = ts_swe_decomp(s)->count;
  ts_swe_sub_stats *before = calloc((size_t)nsub, sizeof *before);
  ts_swe_sub_stats *after = calloc((size_t)nsub, sizeof *after);
  if (!before || !after)
    st = ts_error(TS_ERR_NOMEM, "out of memory");
  if (st == TS_OK)
    st = ts_swe_stats(s, before);
  double t0 = omp_get_wtime(), elapsed = 0;
  long done = 0;
  while (st == TS_OK && (steps ? done < steps : (elapsed < 3.0 || done < 10))) {
    /* runs of steps, as a case takes them (on the device alone where it can) */
    ts_swe_run run;
    long most = steps ? steps - done : 10;
    double target = ts_swe_time(s) + 1e9;
    st = ts_swe_advance(s, target, target,
                        most < TS_SWE_ADVANCE_MAX ? (int)most : TS_SWE_ADVANCE_MAX, &run);
    done += run.taken;
    double e = omp_get_wtime() - t0;
    ts_comm_max(ts_comm_world(), &e, 1); /* every rank stops after the same step */
    elapsed = e;
  }
  if (st == TS_OK)
    st = ts_swe_stats(s, after);
  if (st == TS_OK) {
    ts_swe_grid_stats g; /* the cells updated: the grid's (a quadtree has fewer) */
    ts_swe_grid_info(s, &g);
    *r = (bench_result){
        .steps = done, .wall = elapsed, .mcells = (double)g.cells * done / elapsed / 1e6};
    r->subdomains = nsub;
    for (int k = 0; k < nsub; k++) {
      int d = after[k].device, seen = d < 0;
      for (int g = 0; g < k && !seen; g++)
        seen = after[g].device == d && after[g].rank == after[k].rank;
      if (!seen && r->ngpus < TS_MAX_DEVICES)
        r->gpus[r->ngpus++] = d;
      r->compute += (after[k].compute - before[k].compute) / nsub;
      r->pack += (after[k].pack - before[k].pack) / nsub;
      r->wait += (after[k].wait - before[k].wait) / nsub;
      r->unpack += (after[k].unpack - before[k].unpack) / nsub;
    }
    *bytes = ts_swe_bytes_per_cell_step(s);
    if (par->backend == TS_BACKEND_CUDA)
      ts_gpu_memory(par->devices, par->ndevices, &used1, &free1);
    if (ts_comm_size(ts_comm_world()) == 1 && used1 > used0) {
      r->device_bytes_per_cell = (used1 - used0) / g.cells;
      r->device_cells_max = free0 / r->device_bytes_per_cell;
    }
  }
  free(before);
  free(after);
  ts_swe_destroy(s);
  return st;
}

/* --weak / --strong: one GPU against all of --devices. */
typedef enum { SCALING_NONE, SCALING_WEAK, SCALING_STRONG } scaling_kind;
typedef struct scaling {
  scaling_kind kind;
  int mpi;         /* one rank per GPU (else one process) */
  double baseline; /* one GPU's Mcells/s, measured by the process that started mpirun */
} scaling;

/* One GPU, then every GPU of --devices (weak: N x N cells per GPU, i.e. a square of
 * N sqrt(G) cells on a side; strong: N x N in all), in one process or one rank per GPU. With
 * --mode mpi the launching process measures the one-GPU run, then starts mpirun with one rank
 * per GPU and hands it that rate. Prints a table; --json writes the multi-GPU run and the
 * efficiency. */
static int bench_scaling(const scaling *sc, int n, ts_precision precision,
                         const ts_swe_parallel *par, long steps, const char *json, int full_argc,
                         char **full_argv) {
  if (par->backend != TS_BACKEND_CUDA || par->ndevices < 2)
    return ts_cli_usage_error(
        "--weak and --strong need --backend cuda and --devices with 2 or more GPUs", NULL);
  const ts_comm *world = ts_comm_world();
  int nranks = ts_comm_size(world), gpus = par->ndevices;
  if (sc->mpi && nranks > 1 && nranks != gpus)
    return ts_cli_usage_error("--mode mpi runs one rank per GPU of --devices", NULL);
  int n_all = sc->kind == SCALING_WEAK ? (int)lround(n * sqrt((double)gpus)) : n;
  double bytes = 0, base = sc->baseline;
  ts_status st = TS_OK;
  if (!(base > 0)) {
    if (nranks > 1)
      return ts_cli_usage_error("--mode mpi is started from a plain shell (it runs mpirun itself)",
                                NULL);
    ts_swe_parallel one = *par;
    one.ndevices = 1;
    one.subdomains = 1;
    bench_result r1;
    st = bench_run(n, precision, &one, steps, &r1, &bytes);
    if (st != TS_OK)
      return ts_cli_fail(st);
    base = r1.mcells;
    if (sc->mpi) {
      char rate[64];
      snprintf(rate, sizeof rate, "%.6f", base);
      printf("one GPU (device %d): %.2f Gcells/s; starting %d ranks\n", par->devices[0], base / 1e3,
             gpus);
      return ts_cli_relaunch_under_mpirun(gpus, full_argc, full_argv, "--baseline-mcells", rate);
    }
  }
  ts_swe_parallel all = *par;
  all.subdomains = gpus;
  bench_result on, off;
  st = bench_run(n_all, precision, &all, steps, &on, &bytes);
  if (st == TS_OK) {
    ts_swe_parallel blocking = all;
    blocking.overlap = 0;
    st = bench_run(n_all, precision, &blocking, steps, &off, &bytes);
  }
  if (st != TS_OK)
    return ts_cli_fail(st);
  double exchange = on.pack + off.wait + on.unpack;
  double hidden = exchange > 0 ? fmax(0, 1 - on.wait / exchange) : 0;
  /* weak: throughput per GPU against one GPU's; strong: speed-up over the GPU count */
  double efficiency = on.mcells / (gpus * base);
  if (ts_comm_rank(world) != 0)
    return 0;
  printf("tessera bench swe --%s (%s): %s, decomposition %s, ghost expansion %d\n",
         sc->kind == SCALING_WEAK ? "weak" : "strong", sc->mpi ? "one rank per GPU" : "one process",
         ts_precision_name(precision), ts_decomp_kind_name(par->decomposition),
         par->ghost_expansion);
  printf("%5s %14s %10s %10s %11s %8s %10s\n", "GPUs", "cells", "Gcells/s", "per GPU", "efficiency",
         "hidden", "no overlap");
  printf("%5d %14.0f %10.2f %10.2f %10.1f%% %8s %10s\n", 1, (double)n * n, base / 1e3, base / 1e3,
         100.0, "-", "-");
  printf("%5d %14.0f %10.2f %10.2f %10.1f%% %8.2f %10.2f\n", gpus, (double)n_all * n_all,
         on.mcells / 1e3, on.mcells / 1e3 / gpus, 100 * efficiency, hidden, off.mcells / 1e3);
  if (json) {
    char tmp[4200];
    ts_json j;
    FILE *f = ts_cli_json_open(json, tmp, sizeof tmp, &j, "swe");
    if (!f)
      return 1;
    ts_json_key(&j, "scaling"), ts_json_string(&j, sc->kind == SCALING_WEAK ? "weak" : "strong");
    ts_json_key(&j, "mode"), ts_json_string(&j, sc->mpi ? "mpi" : "threads");
    ts_json_key(&j, "gpus"), ts_json_int(&j, gpus);
    ts_json_key(&j, "size_one_gpu"), ts_json_int(&j, n);
    ts_json_key(&j, "size_all_gpus"), ts_json_int(&j, n_all);
    ts_json_key(&j, "precision"), ts_json_string(&j, ts_precision_name(precision));
    ts_json_key(&j, "one_gpu_mcells_per_s"), ts_json_number(&j, base);
    ts_json_key(&j, "mcells_per_s"), ts_json_number(&j, on.mcells);
    ts_json_key(&j, "efficiency"), ts_json_number(&j, efficiency);
    ts_json_key(&j, "hidden_fraction"), ts_json_number(&j, hidden);
    ts_json_key(&j, "no_overlap_mcells_per_s"), ts_json_number(&j, off.mcells);
    ts_json_end(&j);
    ts_status st_json = ts_commit_temp(f, tmp, json);
    if (st_json != TS_OK)
      return ts_cli_fail(st_json);
  }
  return 0;
}

int swe_bench(int argc, char **argv, int full_argc, char **full_argv) {
  long n = 1024, steps = 0, ranks = 0;
  ts_precision precision = TS_FLOAT;
  const char *json = NULL;
  ts_swe_parallel par = {.ghost_expansion = 1, .overlap = 1, .balance = TS_BALANCE_OFF};
  scaling sc = {0};
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--weak") == 0 || strcmp(a, "--strong") == 0) {
      sc.kind = a[2] == 'w' ? SCALING_WEAK : SCALING_STRONG;
      continue;
    }
    if (i + 1 >= argc)
      return ts_cli_usage_error("missing value for option", a);
    const char *v = argv[++i];
    char *end;
    long x = strtol(v, &end, 10);
    if (strcmp(a, "--size") == 0) {
      n = x;
      if (*end || n < 8 || n > 65536)
        return ts_cli_usage_error("--size must be an integer in [8, 65536]", v);
    } else if (strcmp(a, "--steps") == 0) {
      steps = x;
      if (*end || steps < 1)
        return ts_cli_usage_error("--steps must be a positive integer", v);
    } else if (strcmp(a, "--subdomains") == 0) {
      if (*end || x < 1 || x > 32767)
        return ts_cli_usage_error("--subdomains must be an integer in [1, 32767]", v);
      par.subdomains = (int)x;
    } else if (strcmp(a, "--ranks") == 0) {
      if (*end || x < 1 || x > 4096)
        return ts_cli_usage_error("--ranks must be an integer in [1, 4096]", v);
      ranks = x;
    } else if (strcmp(a, "--ghost-expansion") == 0) {
      if (*end || x < 1 || x > 8)
        return ts_cli_usage_error("--ghost-expansion must be an integer in [1, 8]", v);
      par.ghost_expansion = (int)x;
    } else if (strcmp(a, "--decomposition") == 0) {
      const char *kinds[] = {"auto", "rows", "columns", "tiles"};
      int found = ts_cli_name_index(v, kinds, 4);
      if (found < 0)
        return ts_cli_usage_error("--decomposition must be auto, rows, columns or tiles", v);
      par.decomposition = (ts_decomp_kind)found;
    } else if (strcmp(a, "--devices") == 0) {
      ts_device_list_fault fault =
          ts_parse_devices(v, TS_MAX_DEVICES, 1, &par.ndevices, par.devices);
      if (fault == TS_DEVICES_TOO_MANY)
        return ts_cli_usage_error("--devices lists more devices than a run takes", v);
      if (fault != TS_DEVICES_OK)
        return ts_cli_usage_error("--devices must be a list of GPU numbers and cpu such as 0,1,cpu",
                                  v);
    } else if (strcmp(a, "--backend") == 0) {
      if (strcmp(v, "cpu") && strcmp(v, "cuda"))
        return ts_cli_usage_error("--backend must be cpu or cuda", v);
      par.backend = strcmp(v, "cuda") == 0 ? TS_BACKEND_CUDA : TS_BACKEND_CPU;
    } else if (strcmp(a, "--precision") == 0) {
      if (strcmp(v, "float") && strcmp(v, "double"))
        return ts_cli_usage_error("--precision must be float or double", v);
      precision = strcmp(v, "double") == 0 ? TS_DOUBLE : TS_FLOAT;
    } else if (strcmp(a, "--json") == 0) {
      json = v;
    } else if (strcmp(a, "--transport") == 0) {
      if (!ts_transport_parse(v, &par.transport))
        return ts_cli_usage_error("--transport must be auto, host, cuda-mpi or nccl", v);
    } else if (strcmp(a, "--balance") == 0) {
      const char *modes[] = {"auto", "off", "static", "dynamic"};
      int found = ts_cli_name_index(v, modes, 4);
      if (found < 0)
        return ts_cli_usage_error("--balance must be off, static, dynamic or auto", v);
      par.balance = (ts_balance_mode)found;
    } else if (strcmp(a, "--gpu-kernels") == 0) {
      const char *kinds[] = {"auto", "tiles", "rows"};
      int found = ts_cli_name_index(v, kinds, 3);
      if (found < 0)
        return ts_cli_usage_error("--gpu-kernels must be auto, tiles or rows", v);
      par.kernels = (ts_swe_gpu_kernels)found;
    } else if (strcmp(a, "--grid") == 0) {
      if (strcmp(v, "uniform") && strcmp(v, "buq"))
        return ts_cli_usage_error("--grid must be uniform or buq", v);
      bench_grid.type = strcmp(v, "buq") == 0 ? TS_GRID_BUQ : TS_GRID_UNIFORM;
    } else if (strcmp(a, "--levels") == 0) {
      if (*end || x < 1 || x > 8)
        return ts_cli_usage_error("--levels must be an integer in [1, 8]", v);
      bench_grid.levels = (int)x;
    } else if (strcmp(a, "--block") == 0) {
      if (*end || (x != 8 && x != 16))
        return ts_cli_usage_error("--block must be 8 or 16", v);
      bench_grid.block = (int)x;
    } else if (strcmp(a, "--mode") == 0) {
      if (strcmp(v, "threads") && strcmp(v, "mpi"))
        return ts_cli_usage_error("--mode must be threads or mpi", v);
      sc.mpi = strcmp(v, "mpi") == 0;
    } else if (strcmp(a, "--baseline-mcells") == 0) { /* given by the launching process */
      sc.baseline = strtod(v, &end);
      if (*end || !(sc.baseline > 0))
        return ts_cli_usage_error("--baseline-mcells must be a positive number", v);
    } else {
      return ts_cli_usage_error("unknown option", a);
    }
  }
  const ts_comm *world = ts_comm_world();
  int nranks = ts_comm_size(world), root = ts_comm_rank(world) == 0;
  if (sc.kind)
    return bench_scaling(&sc, (int)n, precision, &par, steps, json, full_argc, full_argv);
  if (ranks > 1 && nranks == 1)
    return ts_cli_relaunch_under_mpirun((int)ranks, full_argc, full_argv, NULL, NULL);
  if (ranks && ranks != nranks)
    return ts_cli_usage_error("--ranks differs from the number of MPI processes", NULL);
  /* With several ranks: once with the exchange overlapped (the result) and once without, whose
   * wait is the whole transfer, for the hidden fraction (in-process copies hide nothing). */
  int several = nranks > 1;
  bench_result on = {0}, off = {0};
  double bytes = 0;
  ts_status st = bench_run((int)n, precision, &par, steps, &on, &bytes);
  if (st == TS_OK && several) {
    ts_swe_parallel blocking = par;
    blocking.overlap = 0;
    st = bench_run((int)n, precision, &blocking, steps, &off, &bytes);
  }
  if (st != TS_OK)
    return ts_cli_fail(st);
  int nsub = on.subdomains;
  /* Hidden fraction: 1 - wait / (pack + transfer + unpack), the transfer being the wait of the
   * run without overlap. */
  double exchange = on.pack + off.wait + on.unpack;
  double hidden = several && exchange > 0 ? 1 - on.wait / exchange : 0;
  if (hidden < 0)
    hidden = 0;
  if (!root)
    return 0;
  /* The roofline: the measured copy bandwidth (1 GiB copied; bytes read + written) summed over
   * the GPUs the run used (measured here, one after the other, on this rank's node's GPUs of
   * those indices). */
  double copy_gbs = 0;
  for (int g = 0; par.backend == TS_BACKEND_CUDA && g < on.ngpus; g++)
    copy_gbs += ts_gpu_copy_bandwidth(on.gpus[g], 1073741824.0);
  char gpu_list[8 * TS_MAX_DEVICES] = "";
  for (int g = 0; g < on.ngpus; g++)
    snprintf(gpu_list + strlen(gpu_list), sizeof gpu_list - strlen(gpu_list), "%s%d", g ? "," : "",
             on.gpus[g]);
  double cells = (double)n * n;
  printf("tessera bench swe: %ld x %ld cells, %s, RK2, %d subdomains (%s), %d ranks x %d "
         "threads, ghost expansion %d, backend %s%s%s%s%s\n",
         n, n, ts_precision_name(precision), nsub, ts_decomp_kind_name(par.decomposition), nranks,
         omp_get_max_threads(), par.ghost_expansion,
         par.backend == TS_BACKEND_CUDA ? "cuda" : "cpu", on.ngpus ? " (GPU" : "",
         on.ngpus > 1 ? "s " : (on.ngpus ? " " : ""), on.ngpus ? gpu_list : "",
         on.ngpus ? ")" : "");
  if (bench_grid.type == TS_GRID_BUQ)
    printf("grid: quadtree, blocks of %d, %d level%s (Mcells/s over its cells)\n", bench_grid.block,
           bench_grid.levels, bench_grid.levels > 1 ? "s" : "");
  printf("%8s %10s %10s %10s %10s %10s %10s %8s %8s\n", "steps", "wall_s", "Mcells/s", "GB/s",
         "compute_s", "pack_s", "wait_s", "unpack_s", "hidden");
  char hidden_text[16] = "-";
  if (several)
    snprintf(hidden_text, sizeof hidden_text, "%.2f", hidden);
  printf("%8ld %10.3f %10.2f %10.2f %10.3f %10.4f %10.4f %8.4f %8s\n", on.steps, on.wall, on.mcells,
         on.mcells * 1e6 * bytes / 1e9, on.compute, on.pack, on.wait, on.unpack, hidden_text);
  if (several)
    printf("without overlap: %.2f Mcells/s, wait %.4f s per subdomain\n", off.mcells, off.wait);
  if (on.device_bytes_per_cell > 0)
    printf("GPU memory: %.1f B per cell (taken by the run); the memory free before it holds %.0f "
           "cells (%.0f^2)\n",
           on.device_bytes_per_cell, on.device_cells_max, sqrt(on.device_cells_max));
  if (copy_gbs > 0) {
    ts_gpu_info g;
    ts_gpu_info_of(on.gpus[0], &g);
    printf("GPU%s %s: %s; copy bandwidth %.0f GB/s%s; %.2f Gcells/s x %.0f B = %.0f GB/s = %.1f "
           "%% of it\n",
           on.ngpus > 1 ? "s" : "", gpu_list, g.name, copy_gbs, on.ngpus > 1 ? " (their sum)" : "",
           on.mcells / 1e3, bytes, on.mcells * 1e6 * bytes / 1e9,
           100 * on.mcells * 1e6 * bytes / 1e9 / copy_gbs);
  }
  if (json) {
    char tmp[4200];
    ts_json j;
    FILE *f = ts_cli_json_open(json, tmp, sizeof tmp, &j, "swe");
    if (!f)
      return 1;
    ts_json_key(&j, "backend");
    ts_json_string(&j, par.backend == TS_BACKEND_CUDA ? "cuda" : "cpu");
    ts_json_key(&j, "copy_gb_per_s"), ts_json_number(&j, copy_gbs);
    ts_json_key(&j, "version"), ts_json_string(&j, TESSERA_VERSION);
    ts_json_key(&j, "size"), ts_json_int(&j, n);
    ts_json_key(&j, "cells"), ts_json_number(&j, cells);
    ts_json_key(&j, "precision"), ts_json_string(&j, ts_precision_name(precision));
    ts_json_key(&j, "threads"), ts_json_int(&j, omp_get_max_threads());
    ts_json_key(&j, "ranks"), ts_json_int(&j, nranks);
    ts_json_key(&j, "subdomains"), ts_json_int(&j, nsub);
    ts_json_key(&j, "gpus");
    ts_json_array_begin(&j);
    for (int g = 0; g < on.ngpus; g++)
      ts_json_int(&j, on.gpus[g]);
    ts_json_array_end(&j);
    ts_json_key(&j, "decomposition"), ts_json_string(&j, ts_decomp_kind_name(par.decomposition));
    ts_json_key(&j, "ghost_expansion"), ts_json_int(&j, par.ghost_expansion);
    ts_json_key(&j, "steps"), ts_json_int(&j, on.steps);
    ts_json_key(&j, "wall_s"), ts_json_number(&j, on.wall);
    ts_json_key(&j, "mcells_per_s"), ts_json_number(&j, on.mcells);
    ts_json_key(&j, "bytes_per_cell_step"), ts_json_number(&j, bytes);
    ts_json_key(&j, "gb_per_s"), ts_json_number(&j, on.mcells * 1e6 * bytes / 1e9);
    ts_json_key(&j, "compute_s"), ts_json_number(&j, on.compute);
    ts_json_key(&j, "pack_s"), ts_json_number(&j, on.pack);
    ts_json_key(&j, "wait_s"), ts_json_number(&j, on.wait);
    ts_json_key(&j, "unpack_s"), ts_json_number(&j, on.unpack);
    ts_json_key(&j, "device_bytes_per_cell"), ts_json_number(&j, on.device_bytes_per_cell);
    ts_json_key(&j, "device_cells_max"), ts_json_number(&j, on.device_cells_max);
    ts_json_key(&j, "hidden_fraction");
    if (several)
      ts_json_number(&j, hidden);
    else
      ts_json_null(&j);
    ts_json_end(&j);
    ts_status st_json = ts_commit_temp(f, tmp, json);
    if (st_json != TS_OK)
      return ts_cli_fail(st_json);
  }
  return 0;
}

/* `tessera info` speeds: the bench swe basin in float on each device, timed over a few steps
 * after two warm-up steps. The CPU (all OpenMP threads) takes 512 x 512 cells (about half a
 * second on 2 cores), a GPU 2048 x 2048 (a smaller grid leaves it mostly idle), so the share of
 * device i is W_i = (1/t_i) / sum_j (1/t_j) with t_i its seconds per cell and step: its Mcells/s
 * over their sum. */
typedef struct speed_probe {
  int size;   /* cells on a side */
  long steps; /* timed steps */
} speed_probe;
static const speed_probe cpu_probe = {512, 8}, gpu_probe = {2048, 20};

void swe_info_speeds(int measure) {
  if (!measure)
    return;
  int gpus = ts_gpu_count();
  if (ts_comm_size(ts_comm_world()) > 1) {
    printf("speeds:      not measured with several MPI ranks (run tessera info alone)\n");
    return;
  }
  printf("speeds:      the bench swe basin, float, 2 warm-up steps; share: 1/t over the sum of "
         "1/t, t = seconds per cell-step\n");
  fflush(stdout);
  /* device 0 is the CPU, device 1 + d GPU d */
  double *mcells = calloc((size_t)gpus + 1, sizeof *mcells);
  char(*errors)[200] = calloc((size_t)gpus + 1, sizeof *errors);
  if (!mcells || !errors) {
    printf("  not measured: out of memory\n");
    free(mcells);
    free(errors);
    return;
  }
  double sum = 0;
  for (int dev = 0; dev <= gpus; dev++) {
    ts_swe_parallel par = {.ghost_expansion = 1, .overlap = 1};
    if (dev > 0) {
      par.backend = TS_BACKEND_CUDA;
      par.ndevices = 1;
      par.devices[0] = dev - 1;
      par.subdomains = 1;
    }
    const speed_probe *probe = dev == 0 ? &cpu_probe : &gpu_probe;
    bench_result r;
    double bytes;
    ts_status st = bench_run(probe->size, TS_FLOAT, &par, probe->steps, &r, &bytes);
    if (st == TS_OK)
      sum += mcells[dev] = r.mcells;
    else
      snprintf(errors[dev], sizeof errors[dev], "%s", ts_error_message());
  }
  for (int dev = 0; dev <= gpus; dev++) {
    char label[24] = "cpu:";
    if (dev > 0)
      snprintf(label, sizeof label, "GPU %d:", dev - 1);
    const speed_probe *probe = dev == 0 ? &cpu_probe : &gpu_probe;
    char threads[32] = "";
    if (dev == 0)
      snprintf(threads, sizeof threads, " (%d threads)", omp_get_max_threads());
    if (mcells[dev] > 0)
      printf("  %-10s %d x %d, %ld steps, %.2f Mcells/s, share %.3f%s\n", label, probe->size,
             probe->size, probe->steps, mcells[dev], mcells[dev] / sum, threads);
    else
      printf("  %-10s not measured: %s\n", label, errors[dev]);
  }
  free(mcells);
  free(errors);
}
