/* `tessera bench rmcrt`: the Burns & Christon medium (sigma T^4 = 1, cold black walls) of N^3
 * cells traced with R rays per cell, on the CPU's threads or on GPUs: rays per second and cell
 * crossings per second, after one untimed solve (the GPUs' set-up and first launch). */
#define _POSIX_C_SOURCE 200809L
#include "physics/rmcrt/rmcrt_bench.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "physics/case.h"
#include "physics/cli.h"
#include "tessera/comm.h"
#include "tessera/rmcrt.h"

static ts_status timed(const ts_rmcrt_params *p, double *rays_per_s, double *crossings_per_s,
                       double *seconds) {
  size_t cells = (size_t)p->n[0] * p->n[1] * p->n[2];
  double *kappa = malloc(sizeof(double) * cells), *temp = malloc(sizeof(double) * cells);
  if (!kappa || !temp) {
    free(kappa), free(temp);
    return ts_error(TS_ERR_NOMEM, "rmcrt bench: out of memory");
  }
  for (int z = 0; z < p->n[2]; z++)
    for (int y = 0; y < p->n[1]; y++)
      for (int x = 0; x < p->n[0]; x++) {
        size_t c = x + (size_t)p->n[0] * (y + (size_t)p->n[1] * z);
        kappa[c] = ts_rmcrt_burns_christon(p->n, x, y, z);
        temp[c] = pow(1.0 / p->sigma, 0.25);
      }
  ts_rmcrt *r;
  ts_status st = ts_rmcrt_create(&r, p, kappa, temp);
  free(kappa), free(temp);
  TS_CALL(st);
  st = ts_rmcrt_solve(r, 0); /* warm-up */
  int64_t rays0 = 0, cross0 = 0, rays1 = 0, cross1 = 0;
  double s0 = 0, s1 = 0;
  ts_rmcrt_work(r, &rays0, &cross0, &s0);
  if (st == TS_OK)
    st = ts_rmcrt_solve(r, 1);
  ts_rmcrt_work(r, &rays1, &cross1, &s1);
  double sec = s1 - s0, v[1] = {sec};
  if (st == TS_OK)
    st = ts_comm_max(ts_comm_world(), v, 1); /* the slowest rank's time */
  int64_t work[2] = {rays1 - rays0, cross1 - cross0};
  if (st == TS_OK)
    st = ts_comm_sum_i64(ts_comm_world(), work, 2);
  *seconds = v[0];
  *rays_per_s = work[0] / v[0];
  *crossings_per_s = work[1] / v[0];
  ts_rmcrt_destroy(r);
  return st;
}

int rmcrt_bench(int argc, char **argv, int full_argc, char **full_argv) {
  (void)full_argc, (void)full_argv;
  ts_rmcrt_params p;
  ts_rmcrt_params_default(&p);
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    if (i + 1 >= argc)
      return ts_cli_usage_error("missing value for option", a);
    const char *v = argv[++i];
    char *end;
    long x = strtol(v, &end, 10);
    if (strcmp(a, "--size") == 0) {
      if (*end || x < 2 || x > 2048)
        return ts_cli_usage_error("--size must be an integer in [2, 2048]", v);
      p.n[0] = p.n[1] = p.n[2] = (int)x;
    } else if (strcmp(a, "--rays") == 0) {
      if (*end || x < 1 || x > 100000)
        return ts_cli_usage_error("--rays must be an integer in [1, 100000]", v);
      p.rays = (int)x;
    } else if (strcmp(a, "--patches") == 0) {
      if (*end || x < 1 || x > 4096)
        return ts_cli_usage_error("--patches must be an integer in [1, 4096]", v);
      p.patches = (int)x;
    } else if (strcmp(a, "--levels") == 0) {
      if (*end || x < 1 || x > 2)
        return ts_cli_usage_error("--levels must be 1 or 2", v);
      p.coarsen = x == 2 ? (p.coarsen > 1 ? p.coarsen : 4) : 1;
    } else if (strcmp(a, "--coarsen") == 0) {
      if (*end || x < 2 || x > 64)
        return ts_cli_usage_error("--coarsen must be an integer in [2, 64]", v);
      p.coarsen = (int)x;
    } else if (strcmp(a, "--roi-halo") == 0) {
      if (*end || x < 0 || x > 4096)
        return ts_cli_usage_error("--roi-halo must be an integer in [0, 4096]", v);
      p.roi_halo = (int)x;
    } else if (strcmp(a, "--lhs") == 0) {
      if (strcmp(v, "on") && strcmp(v, "off"))
        return ts_cli_usage_error("--lhs must be on or off", v);
      p.lhs = strcmp(v, "on") == 0;
    } else if (strcmp(a, "--backend") == 0) {
      if (strcmp(v, "cpu") && strcmp(v, "cuda"))
        return ts_cli_usage_error("--backend must be cpu or cuda", v);
      p.cuda = strcmp(v, "cuda") == 0;
    } else if (strcmp(a, "--devices") == 0) {
      ts_device_list_fault fault =
          ts_parse_devices(v, TS_RMCRT_MAX_DEVICES, 0, &p.ndevices, p.devices);
      if (fault == TS_DEVICES_TOO_MANY)
        return ts_cli_usage_error("--devices lists more devices than a run takes", v);
      if (fault != TS_DEVICES_OK)
        return ts_cli_usage_error("--devices must be a list of GPU numbers such as 0,1", v);
    } else {
      return ts_cli_usage_error("unknown option", a);
    }
  }
  double rays_per_s = 0, crossings_per_s = 0, seconds = 0;
  ts_status st = timed(&p, &rays_per_s, &crossings_per_s, &seconds);
  if (st != TS_OK)
    return ts_cli_fail(st);
  if (ts_comm_rank(ts_comm_world()) == 0)
    printf("tessera bench rmcrt: Burns & Christon, %d^3 cells x %d rays, %s, %d level%s "
           "(coarsen %d, roi halo %d), %s directions, %d ranks x %d threads\n  %.3f s: %.4g "
           "rays/s, %.4g cell crossings/s\n",
           p.n[0], p.rays, p.cuda ? "cuda" : "cpu", p.coarsen > 1 ? 2 : 1, p.coarsen > 1 ? "s" : "",
           p.coarsen, p.roi_halo, p.lhs ? "lhs" : "random", ts_comm_size(ts_comm_world()),
           omp_get_max_threads(), seconds, rays_per_s, crossings_per_s);
  return 0;
}
