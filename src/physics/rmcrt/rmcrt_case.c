/* RMCRT case driver ([model] type = rmcrt): reads [rmcrt], [boundary] and [parallel], builds the
 * medium (uniform, or the Burns & Christon absorption), traces every cell once (or couples
 * radiation to the energy equation) and writes divQ, temperature and absorption as VTK image
 * data (divq.vti) and/or NetCDF (divq.nc) by [output] formats, divQ along the centreline in x
 * (divq_centreline.csv) and along each of [output] lines (line_K.csv), both x,y,z,divq in metres,
 * and summary.json (cells, rays, rays_per_s, cell crossings per second, wall time, files). */
#define _POSIX_C_SOURCE 200809L
#include "physics/rmcrt/rmcrt_case.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "physics/rmcrt/rmcrt_couple.h"
#include "physics/stop.h"
#include "runtime/runtime.h"
#include "tessera/comm.h"
#include "tessera/gpu.h"
#include "tessera/io.h"
#include "tessera/rmcrt.h"

typedef struct rmcrt_case {
  ts_config *cfg;
  const ts_comm *comm;
  int root;
  ts_rmcrt_params p;
  int burns_christon;                           /* absorption = burns_christon */
  double absorption, temperature;               /* uniform values otherwise */
  double *absorption_field, *temperature_field; /* or per cell, from files (NULL: none) */
  int coupled;                                  /* couple = energy */
  rmcrt_coupling coupling;
  int vtk, netcdf; /* [output] formats */
  double *lines;   /* [output] lines: x0,y0,z0,x1,y1,z1,n each (m) */
  int nlines;
  char *out_dir;
} rmcrt_case;

/* A key of one number or three (per axis, or for all six faces: one or six). */
static ts_status read_numbers(rmcrt_case *k, const char *section, const char *key, int want,
                              double *out) {
  if (!ts_config_has(k->cfg, section, key))
    return TS_OK;
  int n;
  double *v;
  TS_CALL(ts_config_double_list(k->cfg, section, key, &n, &v));
  if (n != 1 && n != want) {
    free(v);
    return ts_config_error(k->cfg, section, key, "give 1 or %d numbers (got %d)", want, n);
  }
  for (int a = 0; a < want; a++)
    out[a] = v[n == 1 ? 0 : a];
  free(v);
  return TS_OK;
}

/* couple = energy: its steps, and the split into bands of z-layers it runs on. */
static ts_status read_coupling(rmcrt_case *k, const ts_case_options *opt) {
  static const char *const couples[] = {"none", "energy", NULL};
  TS_CALL(ts_config_choice(k->cfg, "rmcrt", "couple", 0, couples, &k->coupled));
  if (!k->coupled) {
    if (opt->trace)
      return ts_config_error(k->cfg, "rmcrt", "couple",
                             "--trace: one radiation solve does not run on the task runtime; set "
                             "couple = energy");
    return TS_OK;
  }
  rmcrt_coupling *c = &k->coupling;
  long steps, interval;
  TS_CALL(ts_config_int(k->cfg, "rmcrt", "steps", 10, &steps));
  if (steps < 1 || steps > 1000000)
    return ts_config_error(k->cfg, "rmcrt", "steps", "must be in [1, 1e6]");
  c->steps = (int)steps;
  TS_CALL(ts_config_double(k->cfg, "rmcrt", "dt", 1, &c->dt));
  if (!(c->dt > 0))
    return ts_config_error(k->cfg, "rmcrt", "dt", "must be positive (s)");
  TS_CALL(ts_config_double(k->cfg, "rmcrt", "rho_cp", 1000, &c->rho_cp));
  if (!(c->rho_cp > 0))
    return ts_config_error(k->cfg, "rmcrt", "rho_cp", "must be positive (J/m3/K)");
  TS_CALL(ts_config_int(k->cfg, "rmcrt", "radiation_interval", 1, &interval));
  if (interval < 1 || interval > 1000000)
    return ts_config_error(k->cfg, "rmcrt", "radiation_interval", "must be in [1, 1e6]");
  c->interval = (int)interval;
  ts_rmcrt_params *p = &k->p;
  if (p->decomposition != TS_DECOMP_AUTO && p->decomposition != TS_DECOMP_ROWS)
    return ts_config_error(k->cfg, "parallel", "decomposition",
                           "couple = energy runs on bands of z-layers: rows (or auto)");
  p->decomposition = TS_DECOMP_ROWS;
  if (p->patches == 0) { /* a few patches per device, so that tracing and updates overlap, */
    int devices = p->cuda ? (p->ndevices > 0 ? p->ndevices : ts_gpu_count()) : 1;
    int want = 4 * devices * ts_comm_size(k->comm); /* as many as a tracing task can read */
    p->patches = want < TS_TASK_MAX_ACCESS - 1 ? want : TS_TASK_MAX_ACCESS - 1;
  }
  if (p->patches > p->n[2])
    p->patches = p->n[2];
  if (p->patches > TS_TASK_MAX_ACCESS)
    return ts_config_error(k->cfg, "parallel", "subdomains",
                           "couple = energy takes at most %d patches", TS_TASK_MAX_ACCESS);
  return TS_OK;
}

/* A property of the medium per cell from a file: FILE.nc or FILE.nc:VARIABLE (NetCDF, dimensions
 * z, y, x, as divq.nc is written), or a raw file of nx*ny*nz little-endian doubles, x fastest. */
static ts_status read_field(rmcrt_case *k, const char *key, double **out) {
  const ts_rmcrt_params *p = &k->p;
  size_t cells = (size_t)p->n[0] * p->n[1] * p->n[2];
  char *path = NULL;
  TS_CALL(ts_config_path(k->cfg, "rmcrt", key, &path));
  *out = malloc(sizeof(double) * cells);
  ts_status st = *out ? TS_OK : ts_error(TS_ERR_NOMEM, "rmcrt: out of memory");
  char *colon = strrchr(path, ':'), *name = NULL;
  if (colon && !strchr(colon, '/') && colon - path > 3 && strncmp(colon - 3, ".nc", 3) == 0) {
    *colon = 0;
    name = colon + 1;
  }
  size_t len = strlen(path);
  if (st == TS_OK && len > 3 && strcmp(path + len - 3, ".nc") == 0) {
    st = ts_netcdf_read_grid(path, name, p->n, *out);
    if (st != TS_OK)
      st = ts_config_error(k->cfg, "rmcrt", key, "%s", ts_error_message());
  } else if (st == TS_OK) {
    FILE *f = fopen(path, "rb");
    if (!f)
      st = ts_config_error(k->cfg, "rmcrt", key, "%s: cannot open", path);
    long size = -1;
    if (f && fseek(f, 0, SEEK_END) == 0)
      size = ftell(f);
    if (f && size != (long)(cells * sizeof(double)))
      st = ts_config_error(k->cfg, "rmcrt", key,
                           "%s: expected a number, a NetCDF file (.nc) or %zu bytes of doubles "
                           "(nx * ny * nz * 8), the file has %ld",
                           path, cells * sizeof(double), size);
    if (st == TS_OK &&
        (fseek(f, 0, SEEK_SET) != 0 || fread(*out, sizeof(double), cells, f) != cells))
      st = ts_config_error(k->cfg, "rmcrt", key, "%s: cannot read", path);
    if (f)
      fclose(f);
  }
  for (size_t c = 0; c < cells && st == TS_OK; c++)
    if (!((*out)[c] >= 0) || !isfinite((*out)[c]))
      st =
          ts_config_error(k->cfg, "rmcrt", key,
                          "%s: cell %zu is %g: values must be finite and >= 0", path, c, (*out)[c]);
  free(path);
  if (st != TS_OK) {
    free(*out);
    *out = NULL;
  }
  return st;
}

static ts_status read_case(rmcrt_case *k, const ts_case_options *opt) {
  TS_CALL(ts_case_load(&k->cfg, opt));
  ts_rmcrt_params *p = &k->p;
  ts_rmcrt_params_default(p);
  const char *axes[3] = {"nx", "ny", "nz"};
  for (int a = 0; a < 3; a++) {
    long n;
    TS_CALL(ts_config_int(k->cfg, "rmcrt", axes[a], a == 0 ? 41 : p->n[0], &n));
    if (n < 1 || n > 100000)
      return ts_config_error(k->cfg, "rmcrt", axes[a], "must be in [1, 100000]");
    p->n[a] = (int)n;
  }
  TS_CALL(read_numbers(k, "rmcrt", "length", 3, p->length));
  for (int a = 0; a < 3; a++)
    if (!(p->length[a] > 0))
      return ts_config_error(k->cfg, "rmcrt", "length", "must be positive");
  long rays, seed;
  TS_CALL(ts_config_int(k->cfg, "rmcrt", "rays", 100, &rays));
  if (rays < 1 || rays > 1000000000)
    return ts_config_error(k->cfg, "rmcrt", "rays", "must be in [1, 1e9]");
  p->rays = (int)rays;
  TS_CALL(ts_config_double(k->cfg, "rmcrt", "threshold", 0.05, &p->threshold));
  if (!(p->threshold >= 0 && p->threshold < 1))
    return ts_config_error(k->cfg, "rmcrt", "threshold", "must be in [0, 1)");
  TS_CALL(ts_config_int(k->cfg, "rmcrt", "seed", 1, &seed));
  if (seed < 0 || seed > 4294967295L)
    return ts_config_error(k->cfg, "rmcrt", "seed", "must be in [0, 2^32)");
  p->seed = (uint32_t)seed;
  TS_CALL(ts_config_double(k->cfg, "rmcrt", "sigma", 5.67051e-8, &p->sigma));
  if (!(p->sigma > 0))
    return ts_config_error(k->cfg, "rmcrt", "sigma", "must be positive");
  static const char *const origins[] = {"centre", "jitter", NULL};
  int origin;
  TS_CALL(ts_config_choice(k->cfg, "rmcrt", "origin", 0, origins, &origin));
  p->jitter = origin == 1;
  long coarsen, roi;
  TS_CALL(ts_config_int(k->cfg, "rmcrt", "coarsen", 1, &coarsen));
  for (int a = 0; a < 3; a++)
    if (coarsen < 1 || coarsen > 64 || p->n[a] % coarsen != 0)
      return ts_config_error(k->cfg, "rmcrt", "coarsen",
                             "must be in [1, 64] and divide nx, ny and nz (%d, %d, %d)", p->n[0],
                             p->n[1], p->n[2]);
  TS_CALL(ts_config_int(k->cfg, "rmcrt", "roi_halo", 4, &roi));
  if (roi < 0 || roi > 100000)
    return ts_config_error(k->cfg, "rmcrt", "roi_halo", "must be in [0, 100000] cells");
  p->coarsen = (int)coarsen, p->roi_halo = (int)roi;
  static const char *const samplings[] = {"random", "lhs", NULL};
  int sampling;
  TS_CALL(ts_config_choice(k->cfg, "rmcrt", "sampling", 0, samplings, &sampling));
  p->lhs = sampling == 1;
  const char *v;
  TS_CALL(ts_config_string(k->cfg, "rmcrt", "absorption", "burns_christon", &v));
  k->burns_christon = strcmp(v, "burns_christon") == 0;
  if (!k->burns_christon && !ts_config_is_number(k->cfg, "rmcrt", "absorption"))
    TS_CALL(read_field(k, "absorption", &k->absorption_field));
  else if (!k->burns_christon) {
    TS_CALL(ts_config_double(k->cfg, "rmcrt", "absorption", 0, &k->absorption));
    if (!(k->absorption >= 0))
      return ts_config_error(k->cfg, "rmcrt", "absorption",
                             "must be burns_christon, a number >= 0 (1/m) or a file");
  }
  /* default: sigma T^4 = 1 W/m2 exactly as in Burns & Christon */
  double unit_t = pow(1.0 / p->sigma, 0.25);
  if (ts_config_has(k->cfg, "rmcrt", "temperature") &&
      !ts_config_is_number(k->cfg, "rmcrt", "temperature"))
    TS_CALL(read_field(k, "temperature", &k->temperature_field));
  else {
    TS_CALL(ts_config_double(k->cfg, "rmcrt", "temperature", unit_t, &k->temperature));
    if (!(k->temperature >= 0))
      return ts_config_error(k->cfg, "rmcrt", "temperature", "must be >= 0 (K) or a file");
  }
  TS_CALL(read_numbers(k, "boundary", "wall_temperature", 6, p->wall_temperature));
  TS_CALL(read_numbers(k, "boundary", "wall_emissivity", 6, p->wall_emissivity));
  for (int f = 0; f < 6; f++)
    if (!(p->wall_temperature[f] >= 0) || !(p->wall_emissivity[f] >= 0) ||
        !(p->wall_emissivity[f] <= 1))
      return ts_config_error(k->cfg, "boundary", "wall_emissivity",
                             "wall temperatures must be >= 0 K and emissivities in [0, 1]");
  TS_CALL(ts_case_read_cuda(k->cfg, &p->cuda));
  TS_CALL(ts_case_read_devices(k->cfg, TS_RMCRT_MAX_DEVICES, 0, &p->ndevices, p->devices));
  int parts[3];
  TS_CALL(ts_case_read_split(k->cfg, &p->patches, &p->decomposition, parts));
  TS_CALL(read_coupling(k, opt));
  static const char *const formats[] = {"vtk", "netcdf", NULL};
  int chosen[2];
  TS_CALL(ts_case_formats(k->cfg, "rmcrt", formats, "vtk", chosen));
  k->vtk = chosen[0], k->netcdf = chosen[1];
  TS_CALL(ts_case_tuples(k->cfg, "output", "lines", 7, &k->lines, &k->nlines));
  for (int l = 0; l < k->nlines; l++) {
    const double *line = k->lines + (size_t)l * 7;
    if (line[6] < 2 || line[6] > 1e6 || line[6] != floor(line[6]))
      return ts_config_error(k->cfg, "output", "lines",
                             "line %d: the number of points must be an integer in [2, 1e6]", l + 1);
    for (int e = 0; e < 6; e++)
      if (!(line[e] >= 0 && line[e] <= p->length[e % 3]))
        return ts_config_error(k->cfg, "output", "lines",
                               "line %d: its ends must lie in the box (0 to length, m)", l + 1);
  }
  return ts_case_out_dir(k->cfg, opt, &k->out_dir);
}

/* divQ along [output] line l into line_<l+1>.csv: x,y,z,divq (m, W/m3) at its n points, each
 * the value of the cell holding it. */
static ts_status write_line(const rmcrt_case *k, int l, const double *divq) {
  const ts_rmcrt_params *p = &k->p;
  const double *line = k->lines + (size_t)l * 7;
  char path[4096], tmp[4200];
  snprintf(path, sizeof path, "%s/line_%d.csv", k->out_dir, l + 1);
  FILE *f = ts_open_temp(path, tmp, sizeof tmp);
  if (!f)
    return ts_error(TS_ERR_IO, "%s: cannot write", path);
  fprintf(f, "x,y,z,divq\n");
  int npts = (int)line[6];
  for (int q = 0; q < npts; q++) {
    double s = (double)q / (npts - 1), x[3];
    size_t c = 0, stride = 1;
    for (int a = 0; a < 3; a++) {
      x[a] = line[a] + s * (line[3 + a] - line[a]);
      int i = (int)floor(x[a] / (p->length[a] / p->n[a]));
      i = i < 0 ? 0 : (i >= p->n[a] ? p->n[a] - 1 : i);
      c += (size_t)i * stride;
      stride *= (size_t)p->n[a];
    }
    fprintf(f, "%.9g,%.9g,%.9g,%.17g\n", x[0], x[1], x[2], divq[c]);
  }
  return ts_commit_temp(f, tmp, path);
}

static ts_status write_outputs(const rmcrt_case *k, const double *divq, const double *kappa,
                               const double *temperature) {
  const ts_rmcrt_params *p = &k->p;
  char path[4096], tmp[4200];
  ts_grid grid = {.dim = 3};
  for (int a = 0; a < 3; a++) {
    grid.n[a] = p->n[a];
    grid.dx[a] = p->length[a] / p->n[a];
  }
  ts_out_var vars[3] = {{"divq", "divergence of the radiative flux", "W/m3", divq},
                        {"temperature", "temperature", "K", temperature},
                        {"absorption", "absorption coefficient", "1/m", kappa}};
  double time = k->coupled ? k->coupling.steps * k->coupling.dt : 0;
  snprintf(path, sizeof path, "%s/divq.vti", k->out_dir);
  if (k->vtk)
    TS_CALL(ts_vti_write_grid(path, &grid, time, 3, vars, 0, NULL));
  snprintf(path, sizeof path, "%s/divq.nc", k->out_dir);
  if (k->netcdf)
    TS_CALL(ts_netcdf_write_grid(path, &grid, NULL, "Tessera radiation output", time, 3, vars));
  for (int l = 0; l < k->nlines; l++)
    TS_CALL(write_line(k, l, divq));
  snprintf(path, sizeof path, "%s/divq_centreline.csv", k->out_dir);
  FILE *f = ts_open_temp(path, tmp, sizeof tmp);
  if (!f)
    return ts_error(TS_ERR_IO, "%s: cannot write", path);
  fprintf(f, "x,y,z,divq\n");
  int j = p->n[1] / 2, kz = p->n[2] / 2;
  for (int i = 0; i < p->n[0]; i++)
    fprintf(f, "%.9g,%.9g,%.9g,%.17g\n", (i + 0.5) * grid.dx[0], (j + 0.5) * grid.dx[1],
            (kz + 0.5) * grid.dx[2], divq[i + (size_t)p->n[0] * (j + (size_t)p->n[1] * kz)]);
  return ts_commit_temp(f, tmp, path);
}

/* work: rays and cell crossings over all ranks; seconds: the slowest rank's tracing; end: how
 * the run ended (TS_OK or the failure, whose line is error). The fields after "ranks" are the
 * run's layout and timings (they differ between splits). */
static ts_status write_summary(const rmcrt_case *k, const ts_rmcrt *r, const int64_t work[2],
                               double seconds, double wall, double gpu_idle,
                               const double *temperature, ts_status end, const char *error) {
  char path[4096], tmp[4200];
  snprintf(path, sizeof path, "%s/summary.json", k->out_dir);
  FILE *f = ts_open_temp(path, tmp, sizeof tmp);
  if (!f)
    return ts_error(TS_ERR_IO, "%s: cannot write", path);
  ts_json j;
  ts_json_begin(&j, f);
  ts_json_key(&j, "model"), ts_json_string(&j, "rmcrt");
  ts_stop_summary(&j, end, error, NULL); /* one solve: no checkpoints, no stop */
  ts_json_key(&j, "cells");
  ts_json_int(&j, (int64_t)k->p.n[0] * k->p.n[1] * k->p.n[2]);
  ts_json_key(&j, "grid");
  ts_json_array_begin(&j);
  for (int a = 0; a < 3; a++)
    ts_json_int(&j, k->p.n[a]);
  ts_json_array_end(&j);
  ts_json_key(&j, "rays_per_cell"), ts_json_int(&j, k->p.rays);
  ts_json_key(&j, "seed"), ts_json_int(&j, k->p.seed);
  ts_json_key(&j, "couple"), ts_json_string(&j, k->coupled ? "energy" : "none");
  if (k->coupled) {
    ts_json_key(&j, "steps"), ts_json_int(&j, k->coupling.steps);
    ts_json_key(&j, "dt"), ts_json_number(&j, k->coupling.dt);
    ts_json_key(&j, "radiation_interval"), ts_json_int(&j, k->coupling.interval);
    double lo = INFINITY, hi = -INFINITY;
    for (int64_t c = 0; c < (int64_t)k->p.n[0] * k->p.n[1] * k->p.n[2]; c++)
      lo = fmin(lo, temperature[c]), hi = fmax(hi, temperature[c]);
    ts_json_key(&j, "temperature_min"), ts_json_number(&j, lo);
    ts_json_key(&j, "temperature_max"), ts_json_number(&j, hi);
  }
  ts_json_key(&j, "rays"), ts_json_int(&j, work[0]);
  ts_json_key(&j, "crossings"), ts_json_int(&j, work[1]);
  ts_json_key(&j, "files");
  ts_json_array_begin(&j);
  if (k->vtk)
    ts_json_string(&j, "divq.vti");
  if (k->netcdf)
    ts_json_string(&j, "divq.nc");
  for (int l = 0; l < k->nlines; l++) {
    char name[32];
    snprintf(name, sizeof name, "line_%d.csv", l + 1);
    ts_json_string(&j, name);
  }
  ts_json_string(&j, "divq_centreline.csv");
  ts_json_array_end(&j);
  ts_json_key(&j, "ranks"), ts_json_int(&j, ts_comm_size(k->comm));
  ts_json_key(&j, "backend"), ts_json_string(&j, ts_rmcrt_on_gpu(r) ? "cuda" : "cpu");
  ts_json_key(&j, "patches"), ts_json_int(&j, ts_rmcrt_decomp(r)->count);
  ts_json_key(&j, "trace_s"), ts_json_number(&j, seconds);
  ts_json_key(&j, "rays_per_s"), ts_json_number(&j, seconds > 0 ? work[0] / seconds : 0);
  ts_json_key(&j, "crossings_per_s"), ts_json_number(&j, seconds > 0 ? work[1] / seconds : 0);
  ts_json_key(&j, "wall_s"), ts_json_number(&j, wall);
  ts_json_key(&j, "gpu_idle_fraction");
  if (gpu_idle >= 0)
    ts_json_number(&j, gpu_idle);
  else
    ts_json_null(&j);
  ts_json_end(&j);
  return ts_commit_temp(f, tmp, path);
}

/* The largest fraction of the coupled run's span that a GPU sat idle (-1 without GPUs). */
static double idle_fraction(const ts_runtime *rt, const ts_rmcrt *r) {
  double idle = -1;
  for (int d = 0; ts_rmcrt_on_gpu(r) && d < TS_RMCRT_MAX_DEVICES; d++) {
    double busy, span;
    ts_runtime_gpu_busy(rt, d, &busy, &span);
    if (busy > 0 && span > 0)
      idle = fmax(idle, 1 - busy / span);
  }
  return idle;
}

static ts_status run(rmcrt_case *k, const ts_case_options *opt) {
  const ts_rmcrt_params *p = &k->p;
  size_t cells = (size_t)p->n[0] * p->n[1] * p->n[2];
  double *kappa = malloc(sizeof(double) * cells), *temp = malloc(sizeof(double) * cells);
  double *divq = malloc(sizeof(double) * cells);
  ts_status st = kappa && temp && divq ? TS_OK : ts_error(TS_ERR_NOMEM, "rmcrt: out of memory");
  for (int z = 0; z < p->n[2] && st == TS_OK; z++)
    for (int y = 0; y < p->n[1]; y++)
      for (int x = 0; x < p->n[0]; x++) {
        size_t c = x + (size_t)p->n[0] * (y + (size_t)p->n[1] * z);
        kappa[c] = k->absorption_field ? k->absorption_field[c]
                   : k->burns_christon ? ts_rmcrt_burns_christon(p->n, x, y, z)
                                       : k->absorption;
        temp[c] = k->temperature_field ? k->temperature_field[c] : k->temperature;
      }
  ts_rmcrt *r = NULL;
  double t0 = omp_get_wtime(), gpu_idle = -1;
  if (st == TS_OK) {
    st = ts_rmcrt_create(&r, p, kappa, temp);
    if (st != TS_OK && st != TS_ERR_NOMEM && st != TS_ERR_PEER)
      st = ts_error(st, "%s: %s", opt->case_path, ts_error_message());
  }
  int lock = -1;
  if (st == TS_OK)
    st = ts_comm_agree(k->comm, k->root ? ts_case_prepare_out_dir(k->out_dir, 0, &lock) : TS_OK);
  int prepared = st == TS_OK;
  ts_runtime *rt = NULL;
  if (st == TS_OK && k->coupled) {
    st = ts_runtime_create(&rt, opt->trace);
    if (st == TS_OK)
      st = rmcrt_run_coupled(r, rt, &k->coupling, temp);
    if (st == TS_OK) {
      gpu_idle = idle_fraction(rt, r);
      st = ts_comm_max(k->comm, &gpu_idle, 1); /* the idlest GPU of any rank */
    }
    ts_status written = ts_runtime_destroy(rt);
    st = st == TS_OK ? written : st;
  } else if (st == TS_OK) {
    st = ts_rmcrt_solve(r, 0);
  }
  if (st == TS_OK)
    st = ts_rmcrt_divq(r, divq);
  double wall = omp_get_wtime() - t0, seconds = 0;
  int64_t work[2] = {0, 0};
  if (st == TS_OK) {
    ts_rmcrt_work(r, &work[0], &work[1], &seconds);
    st = ts_comm_sum_i64(k->comm, work, 2);
  }
  if (st == TS_OK)
    st = ts_comm_max(k->comm, &seconds, 1);
  if (st == TS_OK)
    st = ts_comm_agree(k->comm, k->root ? write_outputs(k, divq, kappa, temp) : TS_OK);
  if (st == TS_OK) {
    st = ts_comm_agree(
        k->comm,
        k->root ? write_summary(k, r, work, seconds, wall, gpu_idle, temp, TS_OK, NULL) : TS_OK);
  } else if (prepared) {
    /* The failure's line goes to summary.json too; the failure stays the result. */
    char line[1024], message[1024];
    snprintf(message, sizeof message, "%s", ts_error_message());
    if (ts_stop_error_line(k->comm, st, line, sizeof line) == TS_OK)
      ts_comm_agree(k->comm,
                    k->root ? write_summary(k, r, work, seconds, wall, gpu_idle, temp, st, line)
                            : TS_OK);
    ts_error(st, "%s", message);
  }
  if (st == TS_OK && k->root && !opt->quiet)
    fprintf(opt->progress, "rmcrt: %zu cells x %d rays in %.3f s: %.3g rays/s, %.3g crossings/s\n",
            cells, p->rays, seconds, work[0] / seconds, work[1] / seconds);
  ts_case_release_out_dir(lock);
  ts_rmcrt_destroy(r);
  free(kappa), free(temp), free(divq);
  return st;
}

ts_status ts_rmcrt_case_run(const ts_case_options *opt) {
  rmcrt_case k;
  memset(&k, 0, sizeof k);
  k.comm = ts_comm_world();
  k.root = ts_comm_rank(k.comm) == 0;
  ts_status st = ts_comm_agree(k.comm, read_case(&k, opt));
  if (st == TS_OK)
    st = ts_comm_agree(k.comm, ts_case_check_same(k.comm, opt));
  if (st == TS_OK)
    st = run(&k, opt);
  ts_config_free(k.cfg);
  free(k.absorption_field);
  free(k.temperature_field);
  free(k.lines);
  free(k.out_dir);
  return st;
}
