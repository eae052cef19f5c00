/* The RMCRT solver (tessera/rmcrt.h): the medium replicated on every rank (and GPU), the box split
 * into patches given to the ranks in blocks, each patch traced cell by cell with rmcrt_ray.h on
 * the CPU's threads or on a GPU, and divQ gathered by a maximum over the ranks (each cell holds
 * its owner's value, -infinity elsewhere). */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "physics/rmcrt/rmcrt_couple.h"
#include "physics/rmcrt/rmcrt_ray.h"
#include "tessera/comm.h"
#include "tessera/gpu.h"
#include "tessera/rmcrt.h"
#if TESSERA_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "physics/rmcrt/rmcrt_cuda.h"
#endif

struct ts_rmcrt {
  ts_rmcrt_params p;
  rmcrt_medium m;
  float *cells;  /* the medium: kappa and S per cell (rmcrt_medium) */
  float *coarse; /* its coarse level (coarsen > 1), NULL otherwise */
  double *divq;  /* whole grid */
  const ts_comm *comm;
  ts_decomp decomp;
  int *patch_device; /* GPU of each patch of this rank, -1 on the CPU or another rank's */
  void **gpus;       /* rmcrt_gpu per device used (indexed by device number) */
  int64_t rays, crossings;
  double seconds;
};

void ts_rmcrt_params_default(ts_rmcrt_params *p) {
  memset(p, 0, sizeof *p);
  p->n[0] = p->n[1] = p->n[2] = 41;
  p->length[0] = p->length[1] = p->length[2] = 1.0;
  p->rays = 100;
  p->threshold = 0.05;
  p->seed = 1;
  p->sigma = 5.67051e-8;
  p->coarsen = 1;
  p->roi_halo = 4;
  for (int f = 0; f < 6; f++)
    p->wall_emissivity[f] = 1.0;
}

/* The coarse level's cells from the fine ones: the mean kappa and S of each coarse cell's
 * coarsen^3 fine cells (in double, stored single). */
static void coarsen_medium(ts_rmcrt *r) {
  const rmcrt_medium *m = &r->m;
  int q = m->ratio;
  size_t coarse = (size_t)m->nc[0] * m->nc[1] * m->nc[2];
  double weight = 1.0 / ((double)q * q * q);
#pragma omp parallel for schedule(static)
  for (size_t cc = 0; cc < coarse; cc++) {
    int ci = (int)(cc % m->nc[0]), cj = (int)(cc / m->nc[0] % m->nc[1]);
    int ck = (int)(cc / ((size_t)m->nc[0] * m->nc[1]));
    double kappa = 0, source = 0;
    for (int k = ck * q; k < ck * q + q; k++)
      for (int j = cj * q; j < cj * q + q; j++)
        for (int i = ci * q; i < ci * q + q; i++) {
          size_t c = i + (size_t)m->n[0] * (j + (size_t)m->n[1] * k);
          kappa += r->cells[2 * c];
          source += r->cells[2 * c + 1];
        }
    r->coarse[2 * cc] = (float)(kappa * weight);
    r->coarse[2 * cc + 1] = (float)(source * weight);
  }
}

double ts_rmcrt_burns_christon(const int n[3], int i, int j, int k) {
  double x = (i + 0.5) / n[0], y = (j + 0.5) / n[1], z = (k + 0.5) / n[2];
  return 0.9 * (1 - 2 * fabs(x - 0.5)) * (1 - 2 * fabs(y - 0.5)) * (1 - 2 * fabs(z - 0.5)) + 0.1;
}

static ts_status check_params(const ts_rmcrt_params *p) {
  for (int a = 0; a < 3; a++) {
    if (p->n[a] < 1 || p->n[a] > 100000)
      return ts_error(TS_ERR_INPUT, "rmcrt: %d cells along axis %d: must be in [1, 100000]",
                      p->n[a], a);
    if (!(p->length[a] > 0))
      return ts_error(TS_ERR_INPUT, "rmcrt: the length along axis %d must be positive", a);
  }
  if (p->rays < 1)
    return ts_error(TS_ERR_INPUT, "rmcrt: rays must be at least 1 (got %d)", p->rays);
  if (p->coarsen < 1 || p->roi_halo < 0)
    return ts_error(TS_ERR_INPUT, "rmcrt: coarsen must be at least 1 and roi_halo at least 0");
  for (int a = 0; a < 3; a++)
    if (p->n[a] % p->coarsen != 0)
      return ts_error(TS_ERR_INPUT,
                      "rmcrt: coarsen %d must divide the cells of every axis (%d along axis %d)",
                      p->coarsen, p->n[a], a);
  if (!(p->threshold >= 0 && p->threshold < 1))
    return ts_error(TS_ERR_INPUT, "rmcrt: threshold must be in [0, 1) (got %g)", p->threshold);
  if (!(p->sigma > 0))
    return ts_error(TS_ERR_INPUT, "rmcrt: sigma must be positive");
  return TS_OK;
}

/* The GPUs of this rank's patches, in turn over the listed (or all) devices. */
static ts_status place_patches(ts_rmcrt *r, int rank, int nranks) {
  int count = r->decomp.count, gpus = ts_gpu_count(), mine = 0;
  r->patch_device = malloc(sizeof(int) * (size_t)count);
  if (!r->patch_device)
    return ts_error(TS_ERR_NOMEM, "rmcrt: out of memory");
  for (int k = 0; k < count; k++) {
    r->patch_device[k] = -1;
    if (!r->p.cuda || ts_decomp_rank(k, count, nranks) != rank)
      continue;
    int n = r->p.ndevices > 0 ? r->p.ndevices : gpus;
    int slot = mine++ % n;
    r->patch_device[k] = r->p.ndevices > 0 ? r->p.devices[slot] : slot;
    if (r->patch_device[k] < 0 || r->patch_device[k] >= gpus)
      return ts_error(TS_ERR_INPUT, "rmcrt: CUDA device %d does not exist (%d found)",
                      r->patch_device[k], gpus);
  }
  return TS_OK;
}

static ts_status attach_gpus(ts_rmcrt *r) {
#if TESSERA_HAVE_CUDA
  r->gpus = calloc(TS_RMCRT_MAX_DEVICES, sizeof *r->gpus);
  if (!r->gpus)
    return ts_error(TS_ERR_NOMEM, "rmcrt: out of memory");
  for (int k = 0; k < r->decomp.count; k++) {
    int d = r->patch_device[k];
    if (d >= 0 && d < TS_RMCRT_MAX_DEVICES && !r->gpus[d])
      TS_CALL(rmcrt_gpu_create((rmcrt_gpu **)&r->gpus[d], d, &r->m));
  }
  return TS_OK;
#else
  return r->p.cuda ? ts_error(TS_ERR_INPUT, "rmcrt: backend cuda: built without CUDA") : TS_OK;
#endif
}

static ts_status create(ts_rmcrt *r, const ts_rmcrt_params *p, const double *absorption,
                        const double *temperature) {
  TS_CALL(check_params(p));
  r->p = *p;
  r->comm = ts_comm_world();
  int rank = ts_comm_rank(r->comm), nranks = ts_comm_size(r->comm);
  if (p->cuda && ts_gpu_count() == 0)
    return ts_error(TS_ERR_INPUT, "rmcrt: backend cuda: no CUDA device found");
  size_t cells = (size_t)p->n[0] * p->n[1] * p->n[2];
  r->cells = malloc(2 * sizeof(float) * cells);
  r->divq = malloc(sizeof(double) * cells);
  if (!r->cells || !r->divq)
    return ts_error(TS_ERR_NOMEM, "rmcrt: out of memory for %zu cells", cells);
  const double pi = 3.14159265358979323846;
  for (size_t c = 0; c < cells; c++) {
    if (!(absorption[c] >= 0) || !(temperature[c] >= 0))
      return ts_error(TS_ERR_INPUT, "rmcrt: cell %zu: absorption and temperature must be >= 0", c);
    double t2 = temperature[c] * temperature[c];
    r->cells[2 * c] = (float)absorption[c];
    r->cells[2 * c + 1] = (float)(p->sigma * t2 * t2 / pi);
    r->divq[c] = 0;
  }
  r->m = (rmcrt_medium){.cells = r->cells,
                        .threshold = p->threshold,
                        .seed = p->seed,
                        .jitter = p->jitter,
                        .lhs = p->lhs,
                        .rays = p->rays,
                        .ratio = p->coarsen,
                        .roi = p->roi_halo};
  for (int a = 0; a < 3; a++) {
    r->m.n[a] = p->n[a];
    r->m.dx[a] = p->length[a] / p->n[a];
    r->m.nc[a] = p->n[a] / p->coarsen;
    r->m.dxc[a] = p->length[a] / r->m.nc[a];
  }
  if (p->coarsen > 1) {
    r->coarse =
        malloc(2 * sizeof(float) * (cells / ((size_t)p->coarsen * p->coarsen * p->coarsen)));
    if (!r->coarse)
      return ts_error(TS_ERR_NOMEM, "rmcrt: out of memory for the coarse level");
    r->m.coarse = r->coarse;
    coarsen_medium(r);
  }
  for (int f = 0; f < 6; f++) {
    double t2 = p->wall_temperature[f] * p->wall_temperature[f];
    r->m.wall[f] = p->wall_emissivity[f] * p->sigma * t2 * t2 / pi;
  }
  int per_rank = p->cuda ? (p->ndevices > 0 ? p->ndevices : ts_gpu_count()) : 1;
  int count = p->patches > 0 ? p->patches : nranks * per_rank;
  if (count < nranks)
    return ts_error(TS_ERR_INPUT, "rmcrt: %d patches for %d ranks: every rank needs one", count,
                    nranks);
  int n[3] = {p->n[0], p->n[1], p->n[2]};
  TS_CALL(ts_decomp_create(&r->decomp, 3, n, count, p->decomposition, NULL));
  TS_CALL(place_patches(r, rank, nranks));
  return attach_gpus(r);
}

ts_status ts_rmcrt_create(ts_rmcrt **out, const ts_rmcrt_params *p, const double *absorption,
                          const double *temperature) {
  *out = NULL;
  ts_rmcrt *r = calloc(1, sizeof *r);
  if (!r)
    return ts_error(TS_ERR_NOMEM, "rmcrt: out of memory");
  ts_status st = ts_comm_agree(ts_comm_world(), create(r, p, absorption, temperature));
  if (st != TS_OK) {
    ts_rmcrt_destroy(r);
    return st;
  }
  *out = r;
  return TS_OK;
}

void ts_rmcrt_destroy(ts_rmcrt *r) {
  if (!r)
    return;
#if TESSERA_HAVE_CUDA
  for (int d = 0; r->gpus && d < TS_RMCRT_MAX_DEVICES; d++)
    rmcrt_gpu_destroy((rmcrt_gpu *)r->gpus[d]);
#endif
  free(r->gpus);
  free(r->patch_device);
  ts_decomp_destroy(&r->decomp);
  free(r->cells);
  free(r->coarse);
  free(r->divq);
  free(r);
}

/* The cells of box b on the CPU's threads. */
static void trace_on_cpu(ts_rmcrt *r, const ts_box *b) {
  int64_t crossed = 0;
  int sx = b->hi[0] - b->lo[0], sy = b->hi[1] - b->lo[1], sz = b->hi[2] - b->lo[2];
  int64_t cells = (int64_t)sx * sy * sz;
#pragma omp parallel for schedule(dynamic, 16) reduction(+ : crossed)
  for (int64_t q = 0; q < cells; q++) {
    int c[3] = {b->lo[0] + (int)(q % sx), b->lo[1] + (int)((q / sx) % sy),
                b->lo[2] + (int)(q / ((int64_t)sx * sy))};
    int64_t cell = c[0] + (int64_t)r->m.n[0] * (c[1] + (int64_t)r->m.n[1] * c[2]);
    r->divq[cell] = rmcrt_cell_divq(&r->m, c, r->p.rays, &crossed);
  }
  r->crossings += crossed;
}

/* The devices holding a copy of the medium (their number is returned). */
static int used_devices(const ts_rmcrt *r, int *devices) {
  int n = 0;
  for (int d = 0; r->gpus && d < TS_RMCRT_MAX_DEVICES; d++)
    if (r->gpus[d])
      devices[n++] = d;
  return n;
}

/* The first failure of work done on several threads, with its message (messages are per
 * thread, so the caller's thread would not see it). */
typedef struct first_failure {
  ts_status st;
  char why[1024];
} first_failure;

#if TESSERA_HAVE_CUDA
static void keep_failure(first_failure *f, ts_status st) {
  if (st != TS_OK) {
#pragma omp critical(rmcrt_failure)
    if (f->st == TS_OK) {
      f->st = st;
      snprintf(f->why, sizeof f->why, "%s", ts_error_message());
    }
  }
}
#endif

/* The failure kept, raised again on this thread (TS_OK when there was none). */
static ts_status raise_failure(const first_failure *f) {
  return f->st == TS_OK ? TS_OK : ts_error(f->st, "%s", f->why);
}

#if TESSERA_HAVE_CUDA
/* This rank's patches on GPUs: one host thread per GPU traces that GPU's patches in turn (a
 * tracing waits for its stream), so that the GPUs trace at the same time. */
static ts_status trace_on_gpus(ts_rmcrt *r) {
  int devices[TS_RMCRT_MAX_DEVICES], ndev = used_devices(r, devices);
  first_failure failed = {TS_OK, ""};
  int64_t crossed = 0;
#pragma omp parallel for num_threads(ndev > 0 ? ndev : 1) schedule(static, 1) reduction(+ : crossed)
  for (int g = 0; g < ndev; g++) {
    ts_status mine = TS_OK;
    for (int k = 0; k < r->decomp.count && mine == TS_OK; k++) {
      const ts_box *b = &r->decomp.boxes[k];
      if (r->patch_device[k] == devices[g]) /* -1 on the CPU or another rank */
        mine = rmcrt_gpu_trace((rmcrt_gpu *)r->gpus[devices[g]], &r->m, b->lo, b->hi, r->p.rays,
                               r->divq, &crossed);
    }
    keep_failure(&failed, mine);
  }
  r->crossings += crossed;
  return raise_failure(&failed);
}
#endif

ts_status ts_rmcrt_solve(ts_rmcrt *r, uint32_t step) {
  int rank = ts_comm_rank(r->comm), nranks = ts_comm_size(r->comm);
  r->m.step = step;
  double t0 = omp_get_wtime();
  ts_status st = TS_OK;
#if TESSERA_HAVE_CUDA
  st = trace_on_gpus(r);
#endif
  for (int k = 0; k < r->decomp.count; k++) {
    if (ts_decomp_rank(k, r->decomp.count, nranks) != rank)
      continue;
    const ts_box *b = &r->decomp.boxes[k];
    r->rays +=
        (int64_t)r->p.rays * (b->hi[0] - b->lo[0]) * (b->hi[1] - b->lo[1]) * (b->hi[2] - b->lo[2]);
    if (r->patch_device[k] < 0 && st == TS_OK)
      trace_on_cpu(r, b);
  }
  r->seconds += omp_get_wtime() - t0;
  return ts_comm_agree(r->comm, st);
}

/* The values of every cell on every rank (collective): each rank's own patches from `mine`. */
static ts_status gather_owned(const ts_rmcrt *r, const double *mine, double *out) {
  int rank = ts_comm_rank(r->comm), nranks = ts_comm_size(r->comm);
  size_t cells = (size_t)r->p.n[0] * r->p.n[1] * r->p.n[2];
  if (nranks == 1) {
    if (out != mine)
      memcpy(out, mine, sizeof(double) * cells);
    return TS_OK;
  }
  double *all = malloc(sizeof(double) * cells);
  if (!all)
    return ts_comm_agree(r->comm, ts_error(TS_ERR_NOMEM, "rmcrt: out of memory"));
  for (size_t c = 0; c < cells; c++)
    all[c] = -INFINITY; /* each cell holds its owner's value, -infinity elsewhere */
  for (int k = 0; k < r->decomp.count; k++) {
    if (ts_decomp_rank(k, r->decomp.count, nranks) != rank)
      continue;
    const ts_box *b = &r->decomp.boxes[k];
    for (int z = b->lo[2]; z < b->hi[2]; z++)
      for (int y = b->lo[1]; y < b->hi[1]; y++)
        for (int x = b->lo[0]; x < b->hi[0]; x++) {
          size_t c = x + (size_t)r->p.n[0] * (y + (size_t)r->p.n[1] * z);
          all[c] = mine[c];
        }
  }
  ts_status st = ts_comm_max(r->comm, all, (int)cells);
  if (st == TS_OK)
    memcpy(out, all, sizeof(double) * cells);
  free(all);
  return st;
}

ts_status ts_rmcrt_divq(const ts_rmcrt *r, double *out) { return gather_owned(r, r->divq, out); }

void ts_rmcrt_work(const ts_rmcrt *r, int64_t *rays, int64_t *crossings, double *seconds) {
  *rays = r->rays;
  *crossings = r->crossings;
  *seconds = r->seconds;
}

const ts_decomp *ts_rmcrt_decomp(const ts_rmcrt *r) { return &r->decomp; }
int ts_rmcrt_on_gpu(const ts_rmcrt *r) { return r->p.cuda; }

/* ---------------------------------------------------------------- coupled to the energy */

/* One patch at one step, the argument of its tasks. */
typedef struct band_work {
  ts_rmcrt *r;
  const rmcrt_coupling *c;
  double *temperature;
  rmcrt_medium m; /* with this radiation solve's step */
  int patch, z0, z1, device;
  first_failure *failed; /* the first failure of any task */
} band_work;

static void trace_band(void *arg, void *stream) {
  band_work *w = arg;
#if TESSERA_HAVE_CUDA
  if (stream) {
    keep_failure(w->failed, rmcrt_gpu_trace_band((rmcrt_gpu *)w->r->gpus[w->device], &w->m, w->z0,
                                                 w->z1, w->r->p.rays, w->r->divq, stream));
    return;
  }
#else
  (void)stream;
#endif
  int64_t crossed = 0, layer = (int64_t)w->m.n[0] * w->m.n[1];
  for (int z = w->z0; z < w->z1; z++)
    for (int y = 0; y < w->m.n[1]; y++)
      for (int x = 0; x < w->m.n[0]; x++) {
        int c[3] = {x, y, z};
        w->r->divq[x + w->m.n[0] * y + layer * z] =
            rmcrt_cell_divq(&w->m, c, w->r->p.rays, &crossed);
      }
#pragma omp atomic
  w->r->crossings += crossed;
}

static void energy_band(void *arg, void *stream) {
  (void)stream;
  band_work *w = arg;
  int64_t layer = (int64_t)w->m.n[0] * w->m.n[1];
  double sigma_pi = w->r->p.sigma / 3.14159265358979323846, rate = w->c->dt / w->c->rho_cp;
  for (int64_t q = layer * w->z0; q < layer * w->z1; q++) {
    double t = w->temperature[q] - rate * w->r->divq[q];
    t = t > 0 ? t : 0;
    w->temperature[q] = t;
    w->r->cells[2 * q + 1] = (float)(sigma_pi * (t * t) * (t * t));
  }
}

static void coarsen_task(void *arg, void *stream) {
  (void)stream;
  coarsen_medium(((band_work *)arg)->r);
}

#if TESSERA_HAVE_CUDA
static void upload_coarse(void *arg, void *stream) {
  band_work *w = arg;
  keep_failure(w->failed,
               rmcrt_gpu_upload_coarse((rmcrt_gpu *)w->r->gpus[w->device], w->r->coarse, stream));
}

static void upload_band(void *arg, void *stream) {
  band_work *w = arg;
  keep_failure(w->failed, rmcrt_gpu_upload_band((rmcrt_gpu *)w->r->gpus[w->device], w->r->cells,
                                                w->m.n, w->z0, w->z1, stream));
}
#endif

ts_status rmcrt_run_coupled(ts_rmcrt *r, ts_runtime *rt, const rmcrt_coupling *c,
                            double *temperature) {
  const ts_decomp *d = &r->decomp;
  int np = d->count, n0 = r->p.n[0], n1 = r->p.n[1];
  int rank = ts_comm_rank(r->comm), nranks = ts_comm_size(r->comm);
  for (int k = 0; k < np; k++)
    if (d->boxes[k].lo[0] != 0 || d->boxes[k].hi[0] != n0 || d->boxes[k].lo[1] != 0 ||
        d->boxes[k].hi[1] != n1)
      return ts_error(TS_ERR_INPUT, "rmcrt: couple = energy needs patches that are bands of "
                                    "z-layers (decomposition rows)");
  int onion = r->coarse != NULL;
  if (np + onion > TS_TASK_MAX_ACCESS) /* a tracing reads every patch's medium (and the coarse) */
    return ts_error(TS_ERR_INPUT, "rmcrt: couple = energy takes at most %d patches",
                    TS_TASK_MAX_ACCESS - onion);
  int devices[TS_RMCRT_MAX_DEVICES], ndev = used_devices(r, devices);
  size_t per_step = (size_t)np * (1 + ndev) + ndev;
  int64_t own_cells = 0;
  for (int p = 0; p < np; p++)
    if (ts_decomp_rank(p, np, nranks) == rank)
      own_cells += (int64_t)n0 * n1 * (d->boxes[p].hi[2] - d->boxes[p].lo[2]);
  /* data items: per patch its temperature and host medium, its divQ, its medium on each GPU;
   * the coarse level on the host and on each GPU */
  char *items = calloc((size_t)np * (3 + (size_t)ndev) + 1 + (size_t)ndev, 1);
  /* per step: each patch's trace and energy update (or its messages between ranks), then its
   * upload to each GPU; the coarse level's update and upload to each GPU */
  band_work *work = calloc((size_t)c->steps * per_step, sizeof *work);
  ts_task *tasks =
      calloc((size_t)c->steps * (per_step + (size_t)np * (1 + nranks) + 1), sizeof *tasks);
  if (!items || !work || !tasks) {
    free(items), free(work), free(tasks);
    return ts_error(TS_ERR_NOMEM, "rmcrt: out of memory");
  }
  char *item_t = items, *item_medium = items + np, *item_divq = items + 2 * np,
       *item_gpu = items + 3 * np, /* item_gpu[g * np + p] */
           *item_coarse = items + (size_t)np * (3 + ndev), *item_gpu_coarse = item_coarse + 1;
#if TESSERA_HAVE_CUDA
  if (ndev > 0) { /* pinned, so that the copies run on the streams without the host */
    size_t cells = (size_t)n0 * n1 * r->p.n[2];
    cudaHostRegister(r->cells, 2 * sizeof(float) * cells, cudaHostRegisterDefault);
    cudaHostRegister(r->divq, sizeof(double) * cells, cudaHostRegisterDefault);
    if (onion)
      cudaHostRegister(r->coarse,
                       2 * sizeof(float) *
                           (cells / ((size_t)r->p.coarsen * r->p.coarsen * r->p.coarsen)),
                       cudaHostRegisterDefault);
  }
#endif
  ts_status st = TS_OK;
  first_failure failed = {TS_OK, ""};
  int nt = 0;
  /* In program order, the tasks of a step: every patch's tracing (which reads the medium as the
   * step starts), then every patch's energy update, then the uploads. */
  for (int step = 0; step < c->steps; step++) {
    int radiation = step % c->interval == 0;
    for (int p = 0; p < np; p++) {
      band_work *w = &work[step * np + p];
      *w = (band_work){.r = r,
                       .c = c,
                       .temperature = temperature,
                       .m = r->m,
                       .patch = p,
                       .z0 = d->boxes[p].lo[2],
                       .z1 = d->boxes[p].hi[2],
                       .device = r->patch_device[p],
                       .failed = &failed};
      w->m.step = (uint32_t)(step / c->interval);
      if (!radiation || ts_decomp_rank(p, np, nranks) != rank)
        continue;
      ts_task *t = &tasks[nt++];
      *t = (ts_task){.name = "trace",
                     .patch = p,
                     .step = step,
                     .run = trace_band,
                     .arg = w,
                     .kind = w->device >= 0 ? TS_TASK_GPU : TS_TASK_CPU,
                     .device = w->device};
      t->out[t->nout++] = &item_divq[p];
      int gi = 0;
      while (gi < ndev && devices[gi] != w->device)
        gi++;
      for (int q = 0; q < np; q++) /* the rays cross every patch's medium */
        t->in[t->nin++] = w->device >= 0 ? &item_gpu[gi * np + q] : &item_medium[q];
      if (onion)
        t->in[t->nin++] = w->device >= 0 ? &item_gpu_coarse[gi] : item_coarse;
    }
    for (int p = 0; p < np; p++) {
      if (ts_decomp_rank(p, np, nranks) != rank)
        continue;
      ts_task *e = &tasks[nt++];
      *e = (ts_task){.name = "energy",
                     .patch = p,
                     .step = step,
                     .kind = TS_TASK_CPU,
                     .run = energy_band,
                     .arg = &work[step * np + p],
                     .device = -1};
      e->in[e->nin++] = &item_divq[p];
      e->out[e->nout++] = &item_t[p];
      e->out[e->nout++] = &item_medium[p];
    }
    /* the patches' new media between the ranks: each owner sends its own to every other rank,
     * which receives it in place (tagged by patch; the steps of a patch arrive in order) */
    for (int p = 0; p < np && nranks > 1; p++) {
      int owner = ts_decomp_rank(p, np, nranks);
      for (int q = 0; q < nranks; q++) {
        if (q == owner || (owner != rank && q != rank))
          continue;
        ts_task *t = &tasks[nt++];
        size_t layer = 2 * (size_t)n0 * n1, z0 = (size_t)d->boxes[p].lo[2];
        *t = (ts_task){.name = owner == rank ? "send" : "receive",
                       .patch = p,
                       .step = step,
                       .kind = owner == rank ? TS_TASK_SEND : TS_TASK_RECV,
                       .device = -1,
                       .peer = owner == rank ? q : owner,
                       .tag = p,
                       .buffer = r->cells + layer * z0,
                       .bytes = sizeof(float) * layer * (size_t)(d->boxes[p].hi[2] - (int)z0)};
        if (owner == rank)
          t->in[t->nin++] = &item_medium[p];
        else
          t->out[t->nout++] = &item_medium[p];
      }
    }
    if (onion) { /* the coarse level from the patches' new media */
      ts_task *t = &tasks[nt++];
      *t = (ts_task){.name = "coarsen",
                     .step = step,
                     .kind = TS_TASK_CPU,
                     .run = coarsen_task,
                     .arg = &work[step * np],
                     .device = -1};
      for (int p = 0; p < np; p++)
        t->in[t->nin++] = &item_medium[p];
      t->out[t->nout++] = item_coarse;
    }
#if TESSERA_HAVE_CUDA
    for (int g = 0; g < ndev && onion; g++) {
      band_work *u = &work[(size_t)c->steps * np * (1 + ndev) + (size_t)step * ndev + g];
      *u = work[step * np];
      u->device = devices[g];
      ts_task *t = &tasks[nt++];
      *t = (ts_task){.name = "upload coarse",
                     .step = step,
                     .kind = TS_TASK_COPY,
                     .device = devices[g],
                     .run = upload_coarse,
                     .arg = u};
      t->in[t->nin++] = item_coarse;
      t->out[t->nout++] = &item_gpu_coarse[g];
    }
    for (int p = 0; p < np; p++)
      for (int g = 0; g < ndev; g++) {
        band_work *u = &work[(size_t)c->steps * np * (1 + g) + step * np + p];
        *u = work[step * np + p];
        u->device = devices[g];
        ts_task *t = &tasks[nt++];
        *t = (ts_task){.name = "upload",
                       .patch = p,
                       .step = step,
                       .kind = TS_TASK_COPY,
                       .device = devices[g],
                       .run = upload_band,
                       .arg = u};
        t->in[t->nin++] = &item_medium[p];
        t->out[t->nout++] = &item_gpu[g * np + p];
      }
#endif
  }
  double t0 = omp_get_wtime();
  if (st == TS_OK)
    st = ts_runtime_run(rt, tasks, nt);
  if (st == TS_OK) /* a task's own failure (the run itself succeeded) */
    st = raise_failure(&failed);
  int radiation_steps = (c->steps + c->interval - 1) / c->interval;
  r->rays += (int64_t)radiation_steps * r->p.rays * own_cells;
#if TESSERA_HAVE_CUDA
  for (int g = 0; g < ndev; g++)
    r->crossings += rmcrt_gpu_take_crossings((rmcrt_gpu *)r->gpus[devices[g]]);
  if (ndev > 0) {
    cudaHostUnregister(r->cells);
    cudaHostUnregister(r->divq);
    if (onion)
      cudaHostUnregister(r->coarse);
  }
#endif
  r->seconds += omp_get_wtime() - t0;
  free(items), free(work), free(tasks);
  st = ts_comm_agree(r->comm, st);
  return st == TS_OK ? gather_owned(r, temperature, temperature) : st; /* the ranks' own bands */
}
