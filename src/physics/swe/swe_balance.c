/* Load balance of the shallow-water solver at run time. Each subdomain's measured compute time
 * (wall clock on the CPU, CUDA events on a GPU) and where its work lies (the owned cells of the
 * early-exit tiles it computes, per row or column of the grid) give it a cost per unit of work;
 * the boundaries of a split into bands (rows or columns) then move so that every subdomain's
 * predicted time is the same. Static: once, after a few steps timed with every cell computed
 * (each device's speed), over the whole grid. Dynamic: every rebalance_interval steps, over
 * where the work is, when the predicted gain over the next interval beats what the last move
 * cost; where the GPU parts take their steps on the devices (untimed), the interval's last
 * SWE_TIMED_STEPS steps are driven by the host and timed. Moves go through swe_rebuild: only the
 * cells that change owner travel, and the results stay the same bit for bit. The decisions are
 * collective: every rank takes them from the same reduced numbers. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "physics/swe/swe_internal.h"

/* The axis along which the subdomains are bands (0: columns side by side, 1: rows stacked), or
 * -1 for a split into tiles, which is not balanced. */
static int band_axis(const ts_decomp *d) {
  if (d->count > 1 && d->parts[1] == 1 && d->parts[0] == d->count)
    return 0;
  if (d->count > 1 && d->parts[0] == 1 && d->parts[1] == d->count)
    return 1;
  return -1;
}

ts_status swe_balance_init(ts_swe *s) {
  const ts_swe_parallel *par = &s->p.parallel;
  swe_balance_state *b = &s->balance;
  int bands = b->cpu_trial || band_axis(&s->decomp) >= 0;
  int count = b->cpu_trial ? b->trial_count : s->decomp.count;
  b->mode = par->balance;
  if (b->mode == TS_BALANCE_AUTO) {
    b->mode = count > 1 && bands ? TS_BALANCE_DYNAMIC : TS_BALANCE_OFF;
    swe_tune_rule(s, "balance", b->mode == TS_BALANCE_DYNAMIC ? "dynamic" : "off",
                  count == 1 ? "one subdomain"
                  : !bands   ? "the subdomains are tiles: only bands are balanced"
                             : "dynamic: it measures every interval and moves only for a "
                               "gain larger than the last move cost, so it is off in effect "
                               "where the split is balanced");
  }
  int on_devices = swe_parts_on_devices(s);
  b->interval = par->rebalance_interval > 0 ? par->rebalance_interval
                : on_devices                ? SWE_DEVICE_REBALANCE_INTERVAL
                                            : 100;
  b->probe_steps = par->rebalance_interval > 0 ? par->rebalance_interval : SWE_STATIC_PROBE_STEPS;
  if (b->mode == TS_BALANCE_DYNAMIC && par->rebalance_interval == 0 && !on_devices)
    swe_tune_rule(s, "rebalance_interval", "100",
                  "a measurement (one reduction over the ranks) every 100 steps costs well under "
                  "1 % of a step's time; moves are further gated by their measured cost");
  if (b->mode == TS_BALANCE_DYNAMIC && par->rebalance_interval == 0 && on_devices)
    swe_tune_rule(s, "rebalance_interval", "500",
                  "the GPU parts take their steps on the devices, and the last 2 steps of each "
                  "interval are driven by the host to time them (each several times a device "
                  "step): every 500 steps that costs a few percent");
  int moves = b->mode == TS_BALANCE_STATIC || b->mode == TS_BALANCE_DYNAMIC;
  if (moves && s->decomp.count > 1 && !bands)
    return ts_error(TS_ERR_INPUT,
                    "swe: balance moves the boundaries of bands: use decomposition rows or "
                    "columns (not %d x %d tiles)",
                    s->decomp.parts[0], s->decomp.parts[1]);
  if (count == 1)
    b->mode = TS_BALANCE_OFF;
  const char *fail = getenv("TESSERA_TEST_FAIL_MOVE");
  b->fail_move_rank = fail ? atoi(fail) : -1;
  b->keep_cpu = getenv("TESSERA_TEST_KEEP_CPU") != NULL;
  const char *slow = getenv("TESSERA_TEST_SLOWDOWN");
  b->slow_sub = -1;
  if (slow && sscanf(slow, "%d:%lf", &b->slow_sub, &b->slow_factor) != 2)
    b->slow_sub = -1;
  return TS_OK;
}

double swe_balance_slow_down(const ts_swe *s, const swe_part *p, double t0) {
  if (p->sub != s->balance.slow_sub || !(s->balance.slow_factor > 1))
    return omp_get_wtime() - t0;
  /* asleep for the rest, as the study emulated slow devices: the core is left to the others,
   * so the stretch holds on a loaded machine too */
  double extra = (omp_get_wtime() - t0) * (s->balance.slow_factor - 1);
  struct timespec nap = {(time_t)extra, (long)((extra - (double)(time_t)extra) * 1e9)};
  nanosleep(&nap, NULL);
  return omp_get_wtime() - t0;
}

/* Owned cells of the part's computed tiles, added per row (axis 1) or column (axis 0) of the
 * grid into work. */
static void add_work(const swe_part *p, int axis, double *work) {
  int ts = p->p->tile_size;
  for (int t = 0; t < p->ntile_list; t++) {
    int k = p->tile_list[t], tx = k % p->tiles_x, ty = k / p->tiles_x;
    int i0 = tx * ts > p->own.i0 ? tx * ts : p->own.i0;
    int i1 = (tx + 1) * ts < p->own.i1 ? (tx + 1) * ts : p->own.i1;
    int j0 = ty * ts > p->own.j0 ? ty * ts : p->own.j0;
    int j1 = (ty + 1) * ts < p->own.j1 ? (ty + 1) * ts : p->own.j1;
    if (i0 >= i1 || j0 >= j1)
      continue;
    if (axis == 1)
      for (int j = j0; j < j1; j++)
        work[p->gj0 + j] += i1 - i0;
    else
      for (int i = i0; i < i1; i++)
        work[p->gi0 + i] += j1 - j0;
  }
}

/* The cuts (count + 1 positions along the axis) that make the largest of cost[k] x the work of
 * band k smallest, each band at least `least` cells: the smallest time T for which filling the
 * bands in order, each up to T, covers the axis (bisection). Returns that time. */
static double best_cuts(const double *work, int len, int count, const double *cost, int least,
                        int *cut) {
  double lo = 0, hi = 0;
  for (int k = 0; k < count; k++) {
    double band = 0;
    for (int r = 0; r < len; r++)
      band += work[r];
    hi = fmax(hi, cost[k] * band);
  }
  for (int iter = 0; iter < 60; iter++) {
    double T = 0.5 * (lo + hi);
    int r = 0, fits = 1;
    for (int k = 0; k < count && fits; k++) {
      int left = count - 1 - k, end = len - left * least;
      double t = 0;
      int start = r;
      while (r < end && (r - start < least || t + cost[k] * work[r] <= T))
        t += cost[k] * work[r++];
      if (k == count - 1)
        fits = r == len && t <= T;
    }
    if (fits)
      hi = T;
    else
      lo = T;
  }
  int r = 0;
  cut[0] = 0;
  for (int k = 0; k < count; k++) {
    int left = count - 1 - k, end = k == count - 1 ? len : len - left * least;
    double t = 0;
    int start = r;
    while (r < end && (r - start < least || k == count - 1 || t + cost[k] * work[r] <= hi))
      t += cost[k] * work[r++];
    cut[k + 1] = r;
  }
  return hi;
}

/* Active (not NODATA) cells per row (axis 1) or column (axis 0) of the grid into work. */
static void add_active_cells(const ts_swe *s, int axis, double *work) {
  for (int j = 0; j < s->ny; j++)
    for (int i = 0; i < s->nx; i++)
      if (!ts_raster_is_nodata(&s->bed, s->bed.v[i + (int64_t)j * s->nx]))
        work[axis == 1 ? j : i] += 1;
}

static void set_early_exit(ts_swe *s, int on) {
  for (int k = 0; k < s->nparts; k++)
    s->parts[k]->early_exit = on;
}

static void mark_parts(ts_swe *s) {
  for (int k = 0; k < s->nparts; k++)
    s->parts[k]->balance_mark = swe_part_compute_seconds(s->parts[k]);
}

/* A split of the grid into `count` bands along `axis` with the cuts cut[0..count]. */
static ts_status bands_at(ts_decomp *d, const ts_decomp *like, int axis, int count,
                          const int *cut) {
  int n[3] = {like->n[0], like->n[1], 1};
  TS_CALL(ts_decomp_create(d, 2, n, count, axis == 0 ? TS_DECOMP_COLUMNS : TS_DECOMP_ROWS, NULL));
  for (int k = 0; k < count; k++) {
    d->boxes[k].lo[axis] = cut[k];
    d->boxes[k].hi[axis] = cut[k + 1];
  }
  return TS_OK;
}

/* "0,cpu" for devices {0, -1}; with gpus_only the GPUs alone. */
static void device_list(const int *devices, int count, int gpus_only, char *out, size_t size) {
  out[0] = 0;
  for (int k = 0, n = 0; k < count; k++) {
    if (gpus_only && devices[k] < 0)
      continue;
    size_t at = strlen(out);
    if (devices[k] < 0)
      snprintf(out + at, size - at, "%scpu", n++ ? "," : "");
    else
      snprintf(out + at, size - at, "%s%d", n++ ? "," : "", devices[k]);
  }
}

/* The tuner's `devices` decision: the split with the CPU (with_s) against the GPUs alone
 * (alone_s), both predicted seconds. */
static void log_devices(ts_swe *s, const int *devices, int count, int keep, double with_s,
                        double alone_s, const char *reason) {
  char all[sizeof((ts_swe_decision *)0)->candidates[0]]; /* as long as a candidate */
  char gpus[sizeof all];
  device_list(devices, count, 0, all, sizeof all);
  device_list(devices, count, 1, gpus, sizeof gpus);
  ts_swe_decision *d = swe_tune_rule(s, "devices", keep ? all : gpus, reason);
  if (d) {
    d->ncandidates = 2;
    snprintf(d->candidates[0], sizeof d->candidates[0], "%s", all);
    snprintf(d->candidates[1], sizeof d->candidates[1], "%s", gpus);
    d->seconds[0] = with_s;
    d->seconds[1] = alone_s;
  }
}

/* With GPUs and the CPU in one run (one process): whether the CPU's subdomains pay for what
 * they cost. Over the speed probe, the GPUs alone would take the fastest GPU's seconds per cell
 * x the work (their steps on the device, without the host); the split takes its predicted
 * balanced time plus what the run spent beyond computing (exchanges between host and GPU
 * memory, host-driven steps). When the split is not faster, the GPUs' subdomains take the grid
 * (cut by their speeds) and the CPU's go. Logged as the tuner's `devices` decision. */
static ts_status keep_or_drop_cpu(ts_swe *s, int axis, const double *work, int len,
                                  const double *cost, const double *time, double split_s,
                                  double wall_s, int *dropped) {
  *dropped = 0;
  int count = s->decomp.count, ngpu = 0, ncpu = 0;
  for (int k = 0; k < count; k++)
    s->sub_device[k] >= 0 ? ngpu++ : ncpu++;
  if (s->nranks > 1 || ngpu == 0 || ncpu == 0)
    return TS_OK;
  double total = 0, busiest = 0, gpu_rate = 0; /* cells per second of the GPUs together */
  for (int r = 0; r < len; r++)
    total += work[r];
  for (int k = 0; k < count; k++) {
    busiest = fmax(busiest, time[k]);
    if (s->sub_device[k] >= 0)
      gpu_rate += 1 / fmax(cost[k], 1e-300);
  }
  double alone_s = total / gpu_rate, with_cpu_s = split_s + fmax(wall_s - busiest, 0.0);
  char reason[200];
  int *devices = malloc(sizeof(int) * (size_t)count);
  double *gpu_costs = malloc(sizeof(double) * (size_t)count);
  int *cut = malloc(sizeof(int) * (size_t)(count + 1));
  if (!devices || !gpu_costs || !cut) {
    free(devices), free(gpu_costs), free(cut);
    return ts_error(TS_ERR_NOMEM, "swe: out of memory");
  }
  int g = 0;
  for (int k = 0; k < count; k++)
    if (s->sub_device[k] >= 0) {
      devices[g] = s->sub_device[k];
      gpu_costs[g++] = cost[k];
    }
  int drop = alone_s <= with_cpu_s;
  snprintf(reason, sizeof reason,
           "predicted over the %d-step speed probe: GPUs alone %.4g s, with the CPU %.4g s (%.4g "
           "s balanced compute + %.4g s of exchanges and host-driven steps)",
           s->balance.probe_steps, alone_s, with_cpu_s, split_s, with_cpu_s - split_s);
  log_devices(s, s->sub_device, count, !drop, with_cpu_s, alone_s, reason);
  ts_status st = TS_OK;
  if (drop) {
    int least = s->halo_width > 1 ? s->halo_width : 1;
    cut[0] = 0, cut[1] = len;
    if (g > 1)
      best_cuts(work, len, g, gpu_costs, least, cut);
    ts_decomp next;
    st = bands_at(&next, &s->decomp, axis, g, cut);
    if (st == TS_OK) {
      st = swe_rebuild(s, &next, devices, s->ghost_expansion);
      ts_decomp_destroy(&next);
    }
    *dropped = 1;
  }
  free(devices), free(gpu_costs), free(cut);
  return st;
}

ts_status swe_balance_thin_cpu(ts_decomp *d, const int *devices, int ndevices) {
  double *prior = malloc(sizeof(double) * (size_t)d->count);
  if (!prior)
    return ts_error(TS_ERR_NOMEM, "swe: out of memory");
  for (int sub = 0; sub < d->count; sub++)
    prior[sub] = devices[sub % ndevices] < 0 ? 1.0 / 64 : 1.0;
  ts_status st = ts_decomp_weigh(d, prior);
  free(prior);
  return st;
}

int swe_balance_plan_cpu_trial(ts_swe *s, int count, ts_decomp_kind kind) {
  const ts_swe_parallel *par = &s->p.parallel;
  swe_balance_state *b = &s->balance;
  int gpus = 0;
  for (int sub = 0; sub < count; sub++)
    gpus += par->devices[sub % par->ndevices] >= 0;
  if (par->balance == TS_BALANCE_OFF || par->nweights > 0 || gpus == 0 || gpus == count ||
      (kind != TS_DECOMP_ROWS && kind != TS_DECOMP_COLUMNS))
    return count;
  b->trial_devices = malloc(sizeof(int) * (size_t)count);
  if (!b->trial_devices)
    return count; /* no trial: the split with the CPU is built at once */
  for (int sub = 0; sub < count; sub++)
    b->trial_devices[sub] = par->devices[sub % par->ndevices];
  b->cpu_trial = 1;
  b->trial_count = count;
  b->trial_axis = kind == TS_DECOMP_COLUMNS ? 0 : 1;
  return gpus;
}

int swe_balance_trial_gpu(const ts_swe *s, int sub) {
  const swe_balance_state *b = &s->balance;
  for (int k = 0, g = 0; k < b->trial_count; k++)
    if (b->trial_devices[k] >= 0 && g++ == sub)
      return b->trial_devices[k];
  return 0;
}

/* The CPU's seconds per cell and step on a copy of `band` of the current state: a solver of its
 * own on `threads` host cores, every cell computed, walls around the band; one step to warm up,
 * then `steps` timed. The run's state is read, never changed. */
static ts_status time_cpu_on_band(ts_swe *s, const ts_box *band, int steps, int threads,
                                  double *cost) {
  int nx = band->hi[0] - band->lo[0], ny = band->hi[1] - band->lo[1];
  int64_t n = (int64_t)nx * ny;
  double cs = s->bed.cellsize, xll = s->bed.xll + band->lo[0] * cs;
  double yll = s->bed.yll + band->lo[1] * cs;
  ts_raster in[5] = {{0}}; /* bed, depth, hu, hv, friction */
  int *ci = malloc(sizeof(int) * (size_t)n), *cj = malloc(sizeof(int) * (size_t)n);
  ts_swe_var *var = malloc(sizeof *var * (size_t)n);
  ts_status st = ci && cj && var ? TS_OK : ts_error(TS_ERR_NOMEM, "swe: out of memory");
  for (int r = 0; r < 5 && st == TS_OK; r++)
    if (r < 4 || s->has_friction)
      st = ts_raster_alloc(&in[r], nx, ny, xll, yll, cs, s->bed.nodata);
  for (int64_t c = 0; c < n && st == TS_OK; c++) {
    ci[c] = band->lo[0] + (int)(c % nx);
    cj[c] = band->lo[1] + (int)(c / nx);
    int64_t g = ci[c] + (int64_t)cj[c] * s->nx;
    in[0].v[c] = s->bed.v[g];
    if (s->has_friction)
      in[4].v[c] = s->friction.v[g];
  }
  const ts_swe_var vars[3] = {TS_SWE_H, TS_SWE_HU, TS_SWE_HV};
  for (int q = 0; q < 3 && st == TS_OK; q++) {
    for (int64_t c = 0; c < n; c++)
      var[c] = vars[q];
    st = ts_swe_probe(s, (int)n, ci, cj, var, in[1 + q].v);
    for (int64_t c = 0; c < n && st == TS_OK; c++)
      if (!isfinite(in[1 + q].v[c]))
        in[1 + q].v[c] = 0; /* inactive cells */
  }
  ts_swe *trial = NULL;
  if (st == TS_OK) {
    ts_swe_params p;
    ts_swe_params_default(&p);
    p.precision = s->p.precision, p.gravity = s->p.gravity, p.cfl = s->p.cfl;
    p.theta = s->p.theta, p.rk_order = s->p.rk_order, p.dry_depth = s->p.dry_depth;
    p.friction = s->p.friction, p.friction_value = s->p.friction_value;
    p.tile_size = s->p.tile_size, p.arrival_depth = s->p.arrival_depth;
    p.early_exit = 0;
    p.parallel.backend = TS_BACKEND_CPU;
    p.parallel.subdomains = 1;
    p.parallel.balance = TS_BALANCE_OFF;
    st = ts_swe_create(&trial, &p, &in[0], &in[1], &in[2], &in[3], s->has_friction ? &in[4] : NULL);
  }
  if (st == TS_OK)
    trial->parts[0]->threads = threads;
  double dt, mark = 0;
  for (int k = 0; k <= steps && st == TS_OK; k++) {
    st = ts_swe_step(trial, 1e9, &dt);
    if (k == 0)
      mark = trial->parts[0]->compute_s;
  }
  if (st == TS_OK)
    *cost = (trial->parts[0]->compute_s - mark) / ((double)steps * (double)n);
  ts_swe_destroy(trial);
  for (int r = 0; r < 5; r++)
    ts_raster_free(&in[r]);
  free(ci), free(cj), free(var);
  return st;
}

/* GPUs with the CPU (one process): after the speed probe of the GPUs alone (host-driven steps,
 * every cell computed), the CPU is timed on a copy of the band it would start with, and the
 * split with it is predicted: its balanced compute plus what a host-driven step costs beyond
 * computing (measured over the probe), against the GPUs alone (one GPU: its busy time, as its
 * steps run from a CUDA graph). Only when the CPU could pay is the split with it built, and
 * measured again by the probe (keep_or_drop_cpu); otherwise the run goes on as it is, having
 * built nothing for the CPU. */
static ts_status measure_and_move(ts_swe *s, int speeds, double scale);

static ts_status try_cpu(ts_swe *s, int steps) {
  swe_balance_state *b = &s->balance;
  int count = b->trial_count, axis = b->trial_axis, len = s->decomp.n[axis], ngpu = 0;
  double wall_s = (omp_get_wtime() - b->probe_start) / steps, busiest = 0, gpu_rate = 0;
  double *work = calloc((size_t)len, sizeof(double)), *cost = malloc(sizeof(double) * count);
  int *cut = malloc(sizeof(int) * (size_t)(count + 1));
  if (!work || !cost || !cut) {
    free(work), free(cost), free(cut);
    return ts_error(TS_ERR_NOMEM, "swe: out of memory");
  }
  for (int k = 0; k < s->nparts; k++) { /* parts in subdomain order: the GPUs' in the split */
    swe_part *p = s->parts[k];
    double busy = (swe_part_compute_seconds(p) - p->balance_mark) / steps, cells = 0;
    memset(work, 0, sizeof(double) * (size_t)len);
    add_work(p, axis, work);
    for (int r = 0; r < len; r++)
      cells += work[r];
    busiest = fmax(busiest, busy);
    cost[k] = busy / fmax(cells, 1.0);
    gpu_rate += 1 / fmax(cost[k], 1e-300);
  }
  memset(work, 0, sizeof(double) * (size_t)len);
  add_active_cells(s, axis, work);
  double total = 0;
  for (int r = 0; r < len; r++)
    total += work[r];
  /* the CPU's first band, as a split with it starts (swe_balance_thin_cpu), 16 cells or more */
  ts_decomp first = {0};
  int n[3] = {s->decomp.n[0], s->decomp.n[1], 1}, cpu_sub = -1;
  for (int k = 0; k < count; k++) {
    ngpu += b->trial_devices[k] >= 0;
    if (b->trial_devices[k] < 0 && cpu_sub < 0)
      cpu_sub = k;
  }
  ts_status st =
      ts_decomp_create(&first, 2, n, count, axis == 0 ? TS_DECOMP_COLUMNS : TS_DECOMP_ROWS, NULL);
  if (st == TS_OK)
    st = swe_balance_thin_cpu(&first, b->trial_devices, count);
  double cpu_cost = 0, t0 = omp_get_wtime();
  if (st == TS_OK) {
    ts_box band = first.boxes[cpu_sub];
    int thin = 16 - (band.hi[axis] - band.lo[axis]);
    if (thin > 0) {
      band.lo[axis] = band.lo[axis] - thin / 2 > 0 ? band.lo[axis] - thin / 2 : 0;
      band.hi[axis] = band.lo[axis] + 16 < len ? band.lo[axis] + 16 : len;
    }
    int threads = (omp_get_max_threads() - ngpu) / (count - ngpu);
    st = time_cpu_on_band(s, &band, b->probe_steps, threads > 1 ? threads : 1, &cpu_cost);
  }
  double trial_s = omp_get_wtime() - t0;
  ts_decomp_destroy(&first);
  /* per step: the GPUs alone, and the split with the CPU */
  double host_s = fmax(wall_s - busiest, 0.0), alone_s = total / gpu_rate + (ngpu > 1 ? host_s : 0);
  double *all_cost = malloc(sizeof(double) * (size_t)count), with_s = INFINITY;
  if (st == TS_OK && !all_cost)
    st = ts_error(TS_ERR_NOMEM, "swe: out of memory");
  int least = s->halo_width > 1 ? s->halo_width : 1;
  if (st == TS_OK && len >= least * count) {
    for (int k = 0, g = 0; k < count; k++)
      all_cost[k] = b->trial_devices[k] < 0 ? cpu_cost : cost[g++];
    with_s = best_cuts(work, len, count, all_cost, least, cut) + host_s;
  }
  int keep = st == TS_OK && (with_s < alone_s || b->keep_cpu);
  if (st == TS_OK) {
    char reason[200];
    snprintf(reason, sizeof reason,
             "CPU tried on a copy of a band: %.3g ns/cell (GPU %.3g), %.2g s; per step predicted: "
             "GPUs alone %.4g s, with the CPU %.4g s (%.3g s host-driven)%s",
             cpu_cost * 1e9, cost[0] * 1e9, trial_s, alone_s, with_s, host_s,
             keep && !(with_s < alone_s) ? "; kept for a test" : "");
    log_devices(s, b->trial_devices, count, keep, with_s * steps, alone_s * steps, reason);
  }
  b->cpu_trial = 0;
  b->move_s += trial_s;
  if (keep) { /* the split with the CPU, by the speeds; the probe measures it again */
    ts_decomp d;
    double m0 = omp_get_wtime();
    st = bands_at(&d, &s->decomp, axis, count, cut);
    if (st == TS_OK) {
      for (int k = 0; k < count; k++)
        if (b->trial_devices[k] < 0)
          b->moved_cells += (int64_t)(cut[k + 1] - cut[k]) * s->decomp.n[1 - axis];
      st = swe_rebuild(s, &d, b->trial_devices, s->ghost_expansion);
      ts_decomp_destroy(&d);
    }
    b->last_move_s = omp_get_wtime() - m0;
    b->move_s += b->last_move_s;
    b->rebalances++;
    b->started = b->done = 0;
  }
  free(work), free(cost), free(cut), free(all_cost);
  if (st != TS_OK || keep)
    return st;
  if (s->decomp.count > 1) /* several GPUs: sized by their speeds */
    return measure_and_move(s, 1, 1);
  set_early_exit(s, s->early_exit);
  b->done = 1;
  mark_parts(s);
  return TS_OK;
}

/* Measures what the subdomains cost since the last measurement and moves the boundaries when
 * that pays. After the speed probe (`speeds`: steps timed with every cell computed) the bands are
 * sized by each device's speed (its seconds per computed cell) over the active cells of the whole
 * grid, and devices that do not pay are dropped; later (dynamic) by where the work lies now (the
 * computed tiles), when the predicted gain over the next interval is above 5 % of the step and
 * above the last move's measured cost. The times measured are multiplied by `scale` (the steps
 * of the interval over the steps timed, where only its last steps were). */
static ts_status measure_and_move(ts_swe *s, int speeds, double scale) {
  swe_balance_state *b = &s->balance;
  int count = s->decomp.count, axis = band_axis(&s->decomp);
  int len = s->decomp.n[axis];
  double wall_s = omp_get_wtime() - b->probe_start;
  double *numbers = calloc((size_t)(count + len + 1), sizeof(double));
  int *cut = malloc(sizeof(int) * (size_t)(count + 1));
  double *cost = malloc(sizeof(double) * (size_t)count);
  if (!numbers || !cut || !cost) {
    free(numbers), free(cut), free(cost);
    return ts_error(TS_ERR_NOMEM, "swe: out of memory");
  }
  double *time = numbers, *work = numbers + count;
  for (int k = 0; k < s->nparts; k++) {
    swe_part *p = s->parts[k];
    time[p->sub] = (swe_part_compute_seconds(p) - p->balance_mark) * scale;
    add_work(p, axis, work);
  }
  work[len] = b->last_move_s;
  /* every subdomain and row lives on one rank: the maximum over the ranks is its value */
  ts_status st = ts_comm_max(s->comm, numbers, count + len + 1);
  double slowest = 0, sum = 0, predicted = 0, last_move_s = work[len];
  for (int k = 0; k < count && st == TS_OK; k++) {
    const ts_box *box = &s->decomp.boxes[k];
    double band = 0;
    for (int r = box->lo[axis]; r < box->hi[axis]; r++)
      band += work[r];
    cost[k] = time[k] / fmax(band, 1.0);
    slowest = fmax(slowest, time[k]);
    sum += time[k];
  }
  double imbalance = sum > 0 ? slowest / (sum / count) : 1;
  if (b->measurements++ == 0)
    b->imbalance_before = imbalance;
  b->imbalance_after = imbalance;
  if (speeds) { /* the speeds are known: the whole grid is shared by them */
    set_early_exit(s, s->early_exit);
    memset(work, 0, sizeof(double) * (size_t)len);
    add_active_cells(s, axis, work);
  }
  int least = s->halo_width > 1 ? s->halo_width : 1;
  if (st == TS_OK && sum > 0 && len >= least * count)
    predicted = best_cuts(work, len, count, cost, least, cut);
  int dropped = 0;
  double t0 = omp_get_wtime();
  if (st == TS_OK && speeds && predicted > 0)
    st = keep_or_drop_cpu(s, axis, work, len, cost, time, predicted, wall_s, &dropped);
  double gain = slowest - predicted;
  int pays = speeds || (gain > 0.05 * slowest && gain > last_move_s);
  int changes = 0;
  for (int k = 0; k < count && predicted > 0; k++)
    changes |= cut[k] != s->decomp.boxes[k].lo[axis];
  if (st == TS_OK && !dropped && predicted > 0 && pays && changes) {
    ts_decomp d;
    st = bands_at(&d, &s->decomp, axis, count, cut);
    if (st == TS_OK) {
      for (int k = 0; k < count; k++)
        b->moved_cells +=
            (int64_t)abs(s->decomp.boxes[k].lo[axis] - cut[k]) * s->decomp.n[1 - axis];
      st = swe_rebuild(s, &d, NULL, s->ghost_expansion);
      ts_decomp_destroy(&d);
    }
  }
  if (dropped || (st == TS_OK && predicted > 0 && pays && changes)) {
    b->last_move_s = omp_get_wtime() - t0;
    b->move_s += b->last_move_s;
    b->rebalances++;
  }
  if (s->decomp.count == 1)
    b->done = 1;
  mark_parts(s);
  free(numbers), free(cut), free(cost);
  return st;
}

ts_status swe_balance_after_steps(ts_swe *s, int steps) {
  swe_balance_state *b = &s->balance;
  int moves = b->mode == TS_BALANCE_STATIC || b->mode == TS_BALANCE_DYNAMIC;
  if (steps < 1 || !moves || b->done || swe_tuning(s))
    return TS_OK;
  if (!b->started) { /* the step after tuning is a warm-up: the speed probe starts after it */
    b->started = 1;
    b->probing = 1;
    b->steps = 0;
    mark_parts(s);
    set_early_exit(s, 0); /* a device's speed from every cell computed */
    b->probe_start = omp_get_wtime();
    return TS_OK;
  }
  b->steps += steps;
  int taken = b->steps;
  if (b->mode == TS_BALANCE_DYNAMIC && !b->probing && swe_parts_on_devices(s)) {
    /* steps on the devices are not timed per part: the interval ends with timed steps */
    if (!b->timing && taken >= b->interval - SWE_TIMED_STEPS) {
      b->timing = 1;
      b->steps = 0;
      mark_parts(s);
    }
    if (!b->timing || b->steps < SWE_TIMED_STEPS)
      return TS_OK;
    b->timing = 0;
    b->steps = 0;
    return measure_and_move(s, 0, (double)b->interval / SWE_TIMED_STEPS);
  }
  if (taken < (b->probing ? b->probe_steps : b->interval))
    return TS_OK;
  b->steps = 0;
  int speeds = b->probing;
  b->probing = 0;
  b->done = b->mode == TS_BALANCE_STATIC;
  if (speeds && b->cpu_trial)
    return try_cpu(s, taken);
  return measure_and_move(s, speeds, 1);
}
