/* The CUDA backend against the CPU backend, and multi-subdomain GPU runs against one GPU
 * subdomain. A dam break over a bumpy, partly dry bed with Manning friction, a NODATA block, an
 * inflow hydrograph west, outflow east and a fixed level south on a 203 x 157 grid, in float and
 * double; beside the dam a basin with its bed below 0 round a NODATA island, which the flood
 * enters in thin sheets (the GPU once read the island's cells in RK2's second stage from a start
 * copy of zeros, which gave them a speed and raised their neighbours' speed caps there):
 * - GPU against CPU, bit for bit after 1, 2, 5, 20 and 200 steps: the kernels call the same
 *   stage functions with fused multiply-add turned off; square roots and divisions are correctly
 *   rounded on both, and the cube root (Manning friction, inflow depth) is swe_cbrt, from +, -
 *   and * alone. (With the libraries' cube roots, which differ in the last bit for some
 *   arguments, the discharges differed by up to 9e-10 m2/s after one step and single front cells
 *   by up to 2.6e-5 m after 200.)
 * - GPU subdomains (rows, columns, tiles; ghost expansion 1 and 2; overlap on and off; a
 *   boundary moved mid-run) and the GPU without early exit (skipping dry tiles) against one GPU
 *   subdomain: bit for bit.
 * - GPU subdomains under the load balancer (static: devices timed, then resized; dynamic every
 *   10 steps, boundaries following the water; CUDA-event timing): bit for bit against one GPU.
 * - The GPU and the CPU in one run (devices 0 and cpu, static balance): within the GPU-vs-CPU
 *   CPU's run bit for bit, at the same time.
 * All GPU checks run with each engine of stage kernels (tiles and rows), and the two engines
 * must agree bit for bit.
 * Exits 77 (skipped) when no GPU is there. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tessera/gpu.h"
#include "tessera/swe.h"
#include "unit/check.h"

enum { NX = 203, NY = 157, STEPS = 200, NVARS = 5 };

static const double hydro_t[2] = {0, 50}, hydro_q[2] = {20, 60};

typedef struct run_result {
  double v[NVARS][NX * NY];
  double t;
} run_result;

static int early_exit = 1; /* of the next run */
static int move_step = 0;  /* of the next run: after this step, subdomain 0 takes 9 cells of 1 */
static int rk_order = 2;   /* of the next run */
static ts_swe_gpu_kernels gpu_kernels; /* of the next run */

static int run(ts_precision prec, ts_backend backend, const ts_swe_parallel *split, int steps,
               run_result *out) {
  ts_raster bed, h0;
  ts_raster_alloc(&bed, NX, NY, 0, 0, 2.0, -9999);
  ts_raster_alloc(&h0, NX, NY, 0, 0, 2.0, -9999);
  for (int j = 0; j < NY; j++)
    for (int i = 0; i < NX; i++) {
      bed.v[i + j * NX] = 0.004 * i + 0.5 * sin(i / 11.0) * cos(j / 13.0);
      if (i > 57 && i < 76 && j > 79 && j < 101)
        bed.v[i + j * NX] -= 3; /* a basin below 0 beside the dam, round an island */
      if ((i > 120 && i < 131 && j > 60 && j < 81) || (i > 62 && i < 70 && j > 85 && j < 95))
        bed.v[i + j * NX] = -9999;
      h0.v[i + j * NX] = i < 60 && j > 40 && j < 120 ? 2.5 : (j < 8 ? 0.8 : 0.0);
    }
  ts_swe_params p;
  ts_swe_params_default(&p);
  p.precision = prec;
  p.friction = TS_FRICTION_MANNING;
  p.friction_value = 0.03;
  p.bc[TS_WEST] = (ts_swe_bc){.type = TS_BC_INFLOW, .npoints = 2, .t = hydro_t, .q = hydro_q};
  p.bc[TS_EAST].type = TS_BC_OUTFLOW;
  p.bc[TS_SOUTH] = (ts_swe_bc){.type = TS_BC_LEVEL, .level = 1.0};
  p.parallel = *split;
  p.parallel.backend = backend;
  p.parallel.kernels = gpu_kernels;
  p.early_exit = early_exit;
  p.rk_order = rk_order;
  p.tile_size = 16;
  ts_swe *s;
  ts_status st = ts_swe_create(&s, &p, &bed, &h0, NULL, NULL, NULL);
  double dt;
  for (int n = 0; n < steps && st == TS_OK; n++) {
    st = ts_swe_step(s, 1e9, &dt);
    if (st == TS_OK && n + 1 == move_step)
      st = ts_swe_move_boundary(s, 0, 1, 9);
  }
  ts_swe_var vars[NVARS] = {TS_SWE_H, TS_SWE_HU, TS_SWE_HV, TS_SWE_MAX_H, TS_SWE_ARRIVAL};
  for (int v = 0; v < NVARS && st == TS_OK; v++)
    st = ts_swe_get(s, vars[v], out->v[v]);
  if (st == TS_OK)
    out->t = ts_swe_time(s);
  else
    printf("run failed: %s\n", ts_error_message());
  ts_swe_destroy(s);
  ts_raster_free(&bed);
  ts_raster_free(&h0);
  return st != TS_OK;
}

static double max_difference(const run_result *a, const run_result *b, int var, long *differ) {
  double m = 0;
  for (int c = 0; c < NX * NY; c++) {
    double x = a->v[var][c], y = b->v[var][c];
    if (isnan(x) && isnan(y))
      continue;
    *differ += memcmp(&x, &y, sizeof x) != 0;
    m = fmax(m, isnan(x) || isnan(y) ? INFINITY : fabs(x - y));
  }
  return m;
}

/* Values of any variable that differ in any bit between two runs. */
static long differing(const run_result *a, const run_result *b) {
  long n = 0;
  for (int v = 0; v < NVARS; v++)
    max_difference(a, b, v, &n);
  return n;
}

int main(void) {
  if (ts_gpu_count() == 0) {
    printf("no GPU: skipped\n");
    return 77;
  }
  static run_result cpu, gpu, split, tiles_gpu[2];
  ts_precision precs[2] = {TS_FLOAT, TS_DOUBLE};
  for (int run_no = 0; run_no < 4; run_no++) {
    int pi = run_no % 2, rows_engine = run_no / 2;
    gpu_kernels = rows_engine ? TS_SWE_GPU_ROWS : TS_SWE_GPU_TILES;
    char name[32];
    snprintf(name, sizeof name, "%s %s", ts_precision_name(precs[pi]),
             rows_engine ? "rows" : "tiles");
    ts_swe_parallel one = {.subdomains = 1, .ghost_expansion = 1, .overlap = 1};
    /* After 1, 2, 5 and 20 steps. */
    int early[4] = {1, 2, 5, 20};
    for (int e = 0; e < 4; e++) {
      if (run(precs[pi], TS_BACKEND_CPU, &one, early[e], &cpu) ||
          run(precs[pi], TS_BACKEND_CUDA, &one, early[e], &gpu))
        return 1;
      long n[NVARS] = {0};
      double d[NVARS];
      for (int v = 0; v < NVARS; v++)
        d[v] = max_difference(&cpu, &gpu, v, &n[v]);
      printf("     %s after %3d steps: h %.3g (%ld cells), hu %.3g (%ld), hv %.3g (%ld), t %s\n",
             name, early[e], d[0], n[0], d[1], n[1], d[2], n[2],
             cpu.t == gpu.t ? "same" : "DIFFERS");
      CHECK(n[0] + n[1] + n[2] == 0 && cpu.t == gpu.t, "%s GPU vs CPU after %d steps: bit for bit",
            name, early[e]);
    }
    if (run(precs[pi], TS_BACKEND_CPU, &one, STEPS, &cpu) ||
        run(precs[pi], TS_BACKEND_CUDA, &one, STEPS, &gpu))
      return 1;
    long differ = 0;
    double dh = max_difference(&cpu, &gpu, 0, &differ);
    double dq =
        fmax(max_difference(&cpu, &gpu, 1, &differ), max_difference(&cpu, &gpu, 2, &differ));
    int wet = 0;
    for (int c = 0; c < NX * NY; c++)
      wet += gpu.v[0][c] > 0.01;
    CHECK(cpu.t == gpu.t && differ == 0,
          "%s GPU vs CPU after %d steps (t = %.3f s, %d wet cells): max |dh| = %.3g m, max "
          "|dq| = %.3g m2/s, %ld values differ in any bit (none may)",
          name, STEPS, gpu.t, wet, dh, dq, differ);
    if (!rows_engine) {
      tiles_gpu[pi] = gpu;
    } else {
      long d_engines = differing(&tiles_gpu[pi], &gpu);
      CHECK(d_engines == 0 && tiles_gpu[pi].t == gpu.t,
            "%s GPU row engine after %d steps: %ld values differ from the tile engine", name, STEPS,
            d_engines);
    }
    early_exit = 0;
    if (run(precs[pi], TS_BACKEND_CUDA, &one, STEPS, &split))
      return 1;
    early_exit = 1;
    long d_exit = differing(&gpu, &split);
    CHECK(d_exit == 0, "%s GPU early exit off: %ld values differ from early exit on", name, d_exit);
    struct {
      ts_decomp_kind kind;
      int count, k, overlap;
    } cfg[] = {{TS_DECOMP_ROWS, 2, 1, 1},
               {TS_DECOMP_COLUMNS, 3, 2, 1},
               {TS_DECOMP_TILES, 4, 1, 0},
               {TS_DECOMP_AUTO, 6, 2, 1}};
    for (size_t c = 0; c < sizeof cfg / sizeof cfg[0]; c++) {
      ts_swe_parallel par = {.subdomains = cfg[c].count,
                             .decomposition = cfg[c].kind,
                             .ghost_expansion = cfg[c].k,
                             .overlap = cfg[c].overlap};
      if (run(precs[pi], TS_BACKEND_CUDA, &par, STEPS, &split))
        return 1;
      long d = differing(&gpu, &split);
      CHECK(d == 0 && split.t == gpu.t,
            "%s GPU %s x%d, ghost expansion %d, overlap %s: %ld values differ from one GPU "
            "subdomain",
            name, ts_decomp_kind_name(cfg[c].kind), cfg[c].count, cfg[c].k,
            cfg[c].overlap ? "on" : "off", d);
    }
    /* Euler steps: GPU against CPU and a split against one GPU, bit for bit. */
    rk_order = 1;
    static run_result euler_cpu, euler_gpu;
    ts_swe_parallel cols = {
        .subdomains = 3, .decomposition = TS_DECOMP_COLUMNS, .ghost_expansion = 2, .overlap = 1};
    for (int steps = 1; steps <= STEPS; steps += STEPS - 1) {
      if (run(precs[pi], TS_BACKEND_CPU, &one, steps, &euler_cpu) ||
          run(precs[pi], TS_BACKEND_CUDA, &one, steps, &euler_gpu) ||
          run(precs[pi], TS_BACKEND_CUDA, &cols, steps, &split))
        return 1;
      long n = 0;
      double dh = max_difference(&euler_cpu, &euler_gpu, 0, &n);
      long n_h = n;
      double dq = fmax(max_difference(&euler_cpu, &euler_gpu, 1, &n),
                       max_difference(&euler_cpu, &euler_gpu, 2, &n));
      CHECK(euler_cpu.t == euler_gpu.t && n == 0,
            "%s Euler GPU vs CPU after %d steps: max |dh| = %.3g m (%ld depths differ), max |dq| "
            "= %.3g m2/s (bit for bit)",
            name, steps, dh, n_h, dq);
      long d = differing(&euler_gpu, &split);
      CHECK(d == 0 && split.t == euler_gpu.t,
            "%s Euler GPU columns x3, ghost expansion 2: %ld values differ from one GPU subdomain",
            name, d);
    }
    rk_order = 2;
    /* A boundary between GPU subdomains moves mid-run: the cells change owner (and GPU). */
    ts_swe_parallel rows = {
        .subdomains = 2, .decomposition = TS_DECOMP_ROWS, .ghost_expansion = 1, .overlap = 1};
    move_step = STEPS / 2;
    if (run(precs[pi], TS_BACKEND_CUDA, &rows, STEPS, &split))
      return 1;
    move_step = 0;
    long d_move = differing(&gpu, &split);
    CHECK(d_move == 0 && split.t == gpu.t,
          "%s GPU rows x2, boundary moved by 9 cells after %d steps: %ld values differ from one "
          "GPU subdomain",
          name, STEPS / 2, d_move);
    /* The balancer moves boundaries between GPU subdomains (timed by CUDA events). */
    ts_balance_mode modes[2] = {TS_BALANCE_STATIC, TS_BALANCE_DYNAMIC};
    for (int m = 0; m < 2; m++) {
      ts_swe_parallel balanced = {.subdomains = 2,
                                  .decomposition = TS_DECOMP_ROWS,
                                  .ghost_expansion = 1,
                                  .overlap = 1,
                                  .balance = modes[m],
                                  .rebalance_interval = 10};
      if (run(precs[pi], TS_BACKEND_CUDA, &balanced, STEPS, &split))
        return 1;
      long d_bal = differing(&gpu, &split);
      CHECK(d_bal == 0 && split.t == gpu.t,
            "%s GPU rows x2, %s balance: %ld values differ from one GPU subdomain", name,
            m ? "dynamic" : "static", d_bal);
    }
    /* The GPU and the host's cores in one run: with balance off the CPU keeps its thin band for
     * the whole run; with static balance the CPU's trial keeps it (forced for the test), the
     * split with it is built, and its speed probe keeps or drops it. */
    const char *how[2] = {"balance off", "static balance, the CPU's trial kept"};
    for (int m = 0; m < 2; m++) {
      ts_swe_parallel mixed = {.subdomains = 2,
                               .decomposition = TS_DECOMP_ROWS,
                               .ghost_expansion = 1,
                               .overlap = 1,
                               .balance = m ? TS_BALANCE_STATIC : TS_BALANCE_OFF,
                               .ndevices = 2,
                               .devices = {0, -1}};
      if (m)
        setenv("TESSERA_TEST_KEEP_CPU", "1", 1);
      int failed = run(precs[pi], TS_BACKEND_CUDA, &mixed, STEPS, &split);
      unsetenv("TESSERA_TEST_KEEP_CPU");
      if (failed)
        return 1;
      differ = 0;
      dh = max_difference(&cpu, &split, 0, &differ);
      dq = fmax(max_difference(&cpu, &split, 1, &differ), max_difference(&cpu, &split, 2, &differ));
      CHECK(cpu.t == split.t && differ == 0,
            "%s GPU + CPU (devices 0,cpu, %s) vs CPU after %d steps: max |dh| = %.3g m, max "
            "|dq| = %.3g m2/s (bit for bit)",
            name, how[m], STEPS, dh, dq);
    }
  }
  return failures != 0;
}
