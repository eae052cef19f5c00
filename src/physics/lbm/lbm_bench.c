/* `tessera bench lbm` (lbm_bench.h): a box of N^3 (D3Q19) or N^2 (D2Q9) fluid cells, periodic
 * along x and y (walls at the z faces), split into bands along its last axis or, with
 * --decomposition PXxPYxPZ, into tiles (across the periodic boundaries too: the box is the same
 * for every split), holding a decaying shear flow, SRT or TRT, timed over S steps after two
 * warm-up steps.
 * The roofline: 2 x Q x population bytes + 1 per cell update (each population read and written
 * once, in place, and the node's kind byte) against the copy bandwidth measured in the same run:
 * the GPU's (--backend cuda), or the host's (parallel memcpy of 512 MiB, bytes read + written). */
#include "physics/lbm/lbm_bench.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tessera/gpu.h"
#include "tessera/io.h"
#include "tessera/lbm.h"

static void shear(void *arg, int i, int j, int k, double *rho, double u[3]) {
  const int *n = arg;
  *rho = 1;
  u[0] = 0.05 * sin(2 * 3.14159265358979 * (j + 0.5) / n[1]);
  u[1] = 0.05 * sin(2 * 3.14159265358979 * (k + i + 0.5) / n[0]);
  u[2] = 0;
}

/* GB/s of a parallel memcpy (bytes read + written), best of three. */
static double host_copy_bandwidth(void) {
  size_t bytes = (size_t)512 << 20;
  char *a = malloc(bytes), *b = malloc(bytes);
  if (!a || !b) {
    free(a);
    free(b);
    return 0;
  }
  memset(a, 1, bytes);
  memset(b, 2, bytes);
  double best = 0;
  for (int rep = 0; rep < 3; rep++) {
    double t0 = omp_get_wtime();
#pragma omp parallel
    {
      int nt = omp_get_num_threads(), me = omp_get_thread_num();
      size_t chunk = bytes / (size_t)nt, lo = chunk * (size_t)me;
      memcpy(b + lo, a + lo, me == nt - 1 ? bytes - lo : chunk);
    }
    double t = omp_get_wtime() - t0;
    best = fmax(best, 2.0 * (double)bytes / t / 1e9);
  }
  free(a);
  free(b);
  return best;
}

/* "PXxPYxPZ" (each at least 1) into parts; 0 if it is not that. */
static int parse_tiles(const char *v, int parts[3]) {
  char tail;
  if (sscanf(v, "%dx%dx%d%c", &parts[0], &parts[1], &parts[2], &tail) != 3)
    return 0;
  for (int a = 0; a < 3; a++)
    if (parts[a] < 1 || parts[a] > 32767)
      return 0;
  return (int64_t)parts[0] * parts[1] * parts[2] <= 32767;
}

static int usage(const char *msg, const char *arg) {
  fprintf(stderr, "tessera: bench lbm: %s%s%s (see tessera --help)\n", msg, arg ? ": " : "",
          arg ? arg : "");
  return 2;
}

/* Creates the box, takes two warm-up steps and times `steps` more: MLUPs, wall time, the bytes
 * per cell update and (GPUs, one rank) the GPU memory the run took per cell and the cells the
 * memory free before it would hold; 1 (message printed) on failure. */
static int timed_run(const ts_comm *comm, const ts_lbm_params *p, long steps, double *mlups,
                     double *wall, double *bytes, int *subdomains, double device[2]) {
  ts_lbm *s;
  double used0 = 0, free0 = 0, used1 = 0, free1 = 0;
  device[0] = device[1] = 0; /* GPU bytes per cell taken by the run, cells the free memory holds */
  if (p->cuda)
    ts_gpu_memory(p->devices, p->ndevices, &used0, &free0);
  ts_status st = ts_lbm_create(&s, p, comm);
  if (st == TS_OK) {
    st = ts_lbm_step(s, 2);
    double t0 = omp_get_wtime();
    if (st == TS_OK)
      st = ts_lbm_step(s, (int)steps);
    *wall = omp_get_wtime() - t0;
    ts_comm_max(comm, wall, 1);
    *mlups = (double)ts_lbm_fluid_cells(s) * (double)steps / *wall / 1e6;
    *bytes = ts_lbm_bytes_per_cell(s);
    *subdomains = ts_lbm_decomp(s)->count;
    if (p->cuda)
      ts_gpu_memory(p->devices, p->ndevices, &used1, &free1);
    if (ts_comm_size(comm) == 1 && used1 > used0) {
      device[0] = (used1 - used0) / ((double)p->n[0] * p->n[1] * p->n[2]);
      device[1] = free0 / device[0];
    }
    ts_lbm_destroy(s);
  }
  if (st != TS_OK)
    fprintf(stderr, "tessera: %s\n", ts_error_message());
  return st == TS_OK ? 0 : 1;
}

/* --weak / --strong: one GPU (one subdomain on the CPU) against all of --devices (the
 * --subdomains on the CPU; under mpirun, one subdomain per rank), N^3 cells per unit (a box PX, PY,
 * PZ times longer along each axis: G times along z for bands) or in all. */
static int scaling(ts_lbm_params p, long n, long steps, int weak) {
  int ranks = ts_comm_size(ts_comm_world());
  int units =
      ranks > 1 ? ranks : (p.cuda ? (p.ndevices ? p.ndevices : ts_gpu_count()) : p.subdomains);
  if (units < 2)
    return usage("--weak and --strong need two or more GPUs (--devices) or, on the CPU, "
                 "--subdomains",
                 NULL);
  if (p.lattice != TS_LBM_D3Q19)
    return usage("--weak and --strong split the box along z: use --lattice D3Q19", NULL);
  int tiles = p.decomposition == TS_DECOMP_TILES;
  if (tiles && p.parts[0] * p.parts[1] * p.parts[2] != units)
    return usage("--decomposition must have as many tiles as GPUs (or --subdomains)", NULL);
  double mlups[2], wall[2], bytes;
  int count[2];
  ts_lbm_params one = p;
  one.subdomains = 1;
  one.decomposition = TS_DECOMP_AUTO;
  one.ndevices = p.cuda ? 1 : 0;
  one.devices[0] = p.ndevices ? p.devices[0] : 0;
  /* under mpirun rank 0 runs the one-unit box by itself, and tells the others */
  const ts_comm *world = ts_comm_world();
  double first[2] = {0, 0}, device_memory[2]; /* (not reported by the tables) */
  if (ts_comm_rank(world) == 0) {
    const ts_comm *alone = ranks > 1 ? ts_comm_self() : world;
    int failed =
        timed_run(alone, &one, steps, &mlups[0], &wall[0], &bytes, &count[0], device_memory);
    first[0] = failed;
    first[1] = failed ? 0 : mlups[0];
  }
  if (ts_comm_max(world, first, 2) != TS_OK || first[0] > 0)
    return 1;
  mlups[0] = first[1];
  p.subdomains = units;
  for (int a = 0; a < 3; a++)
    p.n[a] = (int)n * (weak ? (tiles ? p.parts[a] : (a == 2 ? units : 1)) : 1);
  if (timed_run(world, &p, steps, &mlups[1], &wall[1], &bytes, &count[1], device_memory))
    return 1;
  if (ts_comm_rank(ts_comm_world()) == 0) {
    const char *unit = p.cuda ? "GPUs" : "subdomains";
    printf("tessera bench lbm --%s: D3Q19 %s %s, %ld^3 cells %s, %dx%dx%d, %s\n",
           weak ? "weak" : "strong", p.collision == TS_LBM_TRT ? "TRT" : "SRT",
           p.storage == TS_LBM_FP16 ? "fp16" : "fp32", n, weak ? "per unit" : "in all",
           tiles ? p.parts[0] : 1, tiles ? p.parts[1] : 1, tiles ? p.parts[2] : units,
           p.cuda ? "cuda" : "cpu");
    printf("%10s %14s %10s %12s\n", unit, "cells", "MLUPs", "efficiency");
    printf("%10d %14lld %10.1f %12s\n", 1, (long long)n * n * n, mlups[0], "-");
    printf("%10d %14lld %10.1f %11.1f%%\n", units, (long long)p.n[0] * p.n[1] * p.n[2], mlups[1],
           100 * mlups[1] / (mlups[0] * units));
  }
  return 0;
}

int lbm_bench(int argc, char **argv, int full_argc, char **full_argv) {
  (void)full_argc, (void)full_argv; /* runs under mpirun only when started so */
  ts_lbm_params p;
  ts_lbm_params_default(&p);
  p.lattice = TS_LBM_D3Q19;
  long n = 64, steps = 100;
  const char *json = NULL;
  int scale = 0; /* 1: --strong, 2: --weak */
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--weak") == 0 || strcmp(a, "--strong") == 0) {
      scale = a[2] == 'w' ? 2 : 1;
      continue;
    }
    if (!v)
      return usage("missing value for option", a);
    i++;
    char *end;
    long x = strtol(v, &end, 10);
    if (strcmp(a, "--lattice") == 0 && (strcmp(v, "D2Q9") == 0 || strcmp(v, "D3Q19") == 0))
      p.lattice = strcmp(v, "D2Q9") == 0 ? TS_LBM_D2Q9 : TS_LBM_D3Q19;
    else if (strcmp(a, "--storage") == 0 && (strcmp(v, "fp32") == 0 || strcmp(v, "fp16") == 0))
      p.storage = strcmp(v, "fp16") == 0 ? TS_LBM_FP16 : TS_LBM_FP32;
    else if (strcmp(a, "--collision") == 0 && (strcmp(v, "srt") == 0 || strcmp(v, "trt") == 0))
      p.collision = strcmp(v, "trt") == 0 ? TS_LBM_TRT : TS_LBM_SRT;
    else if (strcmp(a, "--size") == 0 && !*end && x >= 4 && x <= 100000)
      n = x;
    else if (strcmp(a, "--steps") == 0 && !*end && x >= 1)
      steps = x;
    else if (strcmp(a, "--subdomains") == 0 && !*end && x >= 1 && x <= 32767)
      p.subdomains = (int)x;
    else if (strcmp(a, "--decomposition") == 0 && v && parse_tiles(v, p.parts))
      p.decomposition = TS_DECOMP_TILES;
    else if (strcmp(a, "--json") == 0)
      json = v;
    else if (strcmp(a, "--backend") == 0 && (strcmp(v, "cpu") == 0 || strcmp(v, "cuda") == 0))
      p.cuda = strcmp(v, "cuda") == 0;
    else if (strcmp(a, "--devices") == 0) { /* implies --backend cuda */
      for (const char *c = v; *c && p.ndevices < 16;) {
        char *e;
        long d = strtol(c, &e, 10);
        if (e == c || d < 0)
          return usage("--devices must be a list such as 0,1", v);
        p.devices[p.ndevices++] = (int)d;
        c = *e == ',' ? e + 1 : e;
      }
      p.cuda = 1;
    } else
      return usage("unknown option or bad value", a);
  }
  int dim = p.lattice == TS_LBM_D3Q19 ? 3 : 2;
  if ((dim == 3 && n > 1024) || (dim == 2 && n > 32768))
    return usage("--size too large for one host", NULL);
  for (int a = 0; a < 3; a++)
    p.n[a] = a < dim ? (int)n : 1;
  int split = p.decomposition == TS_DECOMP_TILES;
  for (int f = 0; f < 4; f++) /* periodic along x and y; walls at the z faces */
    p.face[f].type = TS_LBM_PERIODIC;
  p.tau = 0.6;
  p.initial = shear;
  p.initial_arg = p.n;
  if (!split)
    p.decomposition = TS_DECOMP_ROWS; /* bands along z (3D) or y (2D) */
  if (split && p.subdomains && p.subdomains != p.parts[0] * p.parts[1] * p.parts[2] && !scale)
    return usage("--decomposition must have --subdomains tiles", NULL);
  if (scale && json)
    return usage("--json is for single runs, not --weak or --strong tables", json);
  if (scale)
    return scaling(p, n, steps, scale == 2);
  const ts_comm *comm = ts_comm_world();
  /* The roofline: the host's copy bandwidth, or one GPU's (1 GiB; each rank measures one of the
   * GPUs it uses, rank 0's is reported) times the GPUs the run uses. */
  int gpus = p.cuda ? ts_gpu_count() : 0, rank = ts_comm_rank(comm);
  int subdomains = p.subdomains ? p.subdomains : ts_comm_size(comm);
  int used = p.ndevices ? p.ndevices : (subdomains < gpus ? subdomains : gpus);
  int device = p.ndevices ? p.devices[rank % p.ndevices] : (gpus ? rank % gpus : 0);
  double one = p.cuda ? ts_gpu_copy_bandwidth(device, 1073741824.0) : host_copy_bandwidth();
  double bandwidth = p.cuda ? one * (used > 0 ? used : 1) : one;
  double mlups, wall, bytes, device_memory[2];
  int count;
  if (timed_run(comm, &p, steps, &mlups, &wall, &bytes, &count, device_memory))
    return 1;
  double gbs = mlups * bytes / 1e3;
  int q = dim == 3 ? 19 : 9, rc = 0;
  if (ts_comm_rank(comm) == 0) {
    printf("tessera bench lbm: D%dQ%d %s %s, %ld^%d cells, %d subdomains, %d ranks x %d threads, "
           "%s\n",
           dim, q, p.collision == TS_LBM_TRT ? "TRT" : "SRT",
           p.storage == TS_LBM_FP16 ? "fp16" : "fp32", n, dim, count, ts_comm_size(comm),
           omp_get_max_threads(), p.cuda ? "cuda" : "cpu");
    printf("%8s %10s %10s %8s %12s %10s\n", "steps", "wall_s", "MLUPs", "B/cell", "GB/s",
           "roofline");
    printf("%8ld %10.3f %10.1f %8.0f %12.2f %9.1f%%\n", steps, wall, mlups, bytes, gbs,
           bandwidth > 0 ? 100 * gbs / bandwidth : 0);
    if (p.cuda)
      printf("GPU copy bandwidth %.1f GB/s (read + write) x %d GPUs\n", one, used);
    if (device_memory[0] > 0)
      printf("GPU memory: %.1f B per cell (taken by the run); the memory free before it holds %.0f "
             "cells (%.0f^%d)\n",
             device_memory[0], device_memory[1], pow(device_memory[1], 1.0 / dim), dim);
    else
      printf("host copy bandwidth %.1f GB/s (memcpy, read + write)\n", one);
  }
  if (json && ts_comm_rank(comm) == 0) {
    char tmp[4200];
    FILE *f = ts_open_temp(json, tmp, sizeof tmp);
    if (!f) {
      fprintf(stderr, "tessera: %s: cannot write\n", json);
      rc = 1;
    } else {
      ts_json j;
      ts_json_begin(&j, f);
      ts_json_key(&j, "model"), ts_json_string(&j, "lbm");
      ts_json_key(&j, "lattice"), ts_json_string(&j, dim == 3 ? "D3Q19" : "D2Q9");
      ts_json_key(&j, "storage"), ts_json_string(&j, p.storage == TS_LBM_FP16 ? "fp16" : "fp32");
      ts_json_key(&j, "size"), ts_json_int(&j, n);
      ts_json_key(&j, "steps"), ts_json_int(&j, steps);
      ts_json_key(&j, "wall_s"), ts_json_number(&j, wall);
      ts_json_key(&j, "mlups"), ts_json_number(&j, mlups);
      ts_json_key(&j, "bytes_per_cell"), ts_json_number(&j, bytes);
      ts_json_key(&j, "copy_gbs"), ts_json_number(&j, bandwidth);
      ts_json_key(&j, "roofline_fraction"), ts_json_number(&j, bandwidth > 0 ? gbs / bandwidth : 0);
      ts_json_key(&j, "device_bytes_per_cell"), ts_json_number(&j, device_memory[0]);
      ts_json_key(&j, "device_cells_max"), ts_json_number(&j, device_memory[1]);
      ts_json_end(&j);
      if (ts_commit_temp(f, tmp, json) != TS_OK)
        rc = 1;
    }
  }
  return rc;
}
