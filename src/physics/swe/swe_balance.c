/* Load balance of the shallow-water solver at run time. Each subdomain's measured compute time
 * (wall clock on the CPU, CUDA events on a GPU) and where its work lies (the owned cells of the
 * early-exit tiles it computes, per row or column of the grid) give it a cost per unit of work;
 * the boundaries of a split into bands (rows or columns) then move so that every subdomain's
 * predicted time is the same. Static: once, after a few steps timed with every cell computed
 * (each device's speed), over the whole grid. Dynamic: every rebalance_interval steps, over
 * where the work is, when the predicted gain over the next interval beats what the last move
 * cost. Moves go through swe_rebuild: only the cells that change owner travel, and the results
 * stay the same bit for bit. The decisions are collective: every rank takes them from the same
 * reduced numbers. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
  int bands = band_axis(&s->decomp) >= 0;
  b->mode = par->balance;
  if (b->mode == TS_BALANCE_AUTO) {
    b->mode = s->decomp.count > 1 && bands ? TS_BALANCE_DYNAMIC : TS_BALANCE_OFF;
    swe_tune_rule(s, "balance", b->mode == TS_BALANCE_DYNAMIC ? "dynamic" : "off",
                  s->decomp.count == 1 ? "one subdomain"
                  : !bands             ? "the subdomains are tiles: only bands are balanced"
                                       : "dynamic: it measures every interval and moves only for a "
                                         "gain larger than the last move cost, so it is off in effect "
                                         "where the split is balanced");
  }
  b->interval = par->rebalance_interval > 0 ? par->rebalance_interval : 100;
  if (b->mode == TS_BALANCE_DYNAMIC && par->rebalance_interval == 0)
    swe_tune_rule(s, "rebalance_interval", "100",
                  "a measurement (one reduction over the ranks) every 100 steps costs well under "
                  "1 % of a step's time; moves are further gated by their measured cost");
  int moves = b->mode == TS_BALANCE_STATIC || b->mode == TS_BALANCE_DYNAMIC;
  if (moves && s->decomp.count > 1 && !bands)
    return ts_error(TS_ERR_INPUT,
                    "swe: balance moves the boundaries of bands: use decomposition rows or "
                    "columns (not %d x %d tiles)",
                    s->decomp.parts[0], s->decomp.parts[1]);
  if (s->decomp.count == 1)
    b->mode = TS_BALANCE_OFF;
  const char *slow = getenv("TESSERA_TEST_SLOWDOWN");
  b->slow_sub = -1;
  if (slow && sscanf(slow, "%d:%lf", &b->slow_sub, &b->slow_factor) != 2)
    b->slow_sub = -1;
  return TS_OK;
}

double swe_balance_slow_down(const ts_swe *s, const swe_part *p, double t0) {
  if (p->sub != s->balance.slow_sub || !(s->balance.slow_factor > 1))
    return omp_get_wtime() - t0;
  double spent = omp_get_wtime() - t0, until = t0 + spent * s->balance.slow_factor;
  while (omp_get_wtime() < until)
    ;
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

/* Measures what the subdomains cost since the last measurement and moves the boundaries when
 * that pays: static sizes them once by each device's speed (its seconds per computed cell, timed
 * with every cell computed) over the active cells of the whole grid; dynamic by where the work
 * lies now (the computed tiles), when the predicted gain over the next interval is above 5 % of
 * the step and above the last move's measured cost. */
static ts_status measure_and_move(ts_swe *s) {
  swe_balance_state *b = &s->balance;
  int count = s->decomp.count, axis = band_axis(&s->decomp),
      is_static = b->mode == TS_BALANCE_STATIC;
  int len = s->decomp.n[axis];
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
    time[p->sub] = swe_part_compute_seconds(p) - p->balance_mark;
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
  if (is_static) { /* the speeds are known: the whole grid is shared by them */
    set_early_exit(s, s->early_exit);
    memset(work, 0, sizeof(double) * (size_t)len);
    add_active_cells(s, axis, work);
  }
  int least = s->halo_width > 1 ? s->halo_width : 1;
  if (st == TS_OK && sum > 0 && len >= least * count)
    predicted = best_cuts(work, len, count, cost, least, cut);
  double gain = slowest - predicted;
  int pays = is_static || (gain > 0.05 * slowest && gain > last_move_s);
  int changes = 0;
  for (int k = 0; k < count && predicted > 0; k++)
    changes |= cut[k] != s->decomp.boxes[k].lo[axis];
  if (st == TS_OK && predicted > 0 && pays && changes) {
    ts_decomp d;
    st = ts_decomp_copy(&d, &s->decomp);
    int64_t moved = 0, across = s->decomp.n[1 - axis];
    for (int k = 0; k < count && st == TS_OK; k++) {
      moved += (int64_t)abs(d.boxes[k].lo[axis] - cut[k]) * across;
      d.boxes[k].lo[axis] = cut[k];
      d.boxes[k].hi[axis] = cut[k + 1];
    }
    double t0 = omp_get_wtime();
    if (st == TS_OK)
      st = swe_rebuild(s, &d, s->ghost_expansion);
    ts_decomp_destroy(&d);
    b->last_move_s = omp_get_wtime() - t0;
    b->move_s += b->last_move_s;
    b->rebalances++;
    b->moved_cells += moved;
  }
  mark_parts(s);
  free(numbers), free(cut), free(cost);
  return st;
}

ts_status swe_balance_after_steps(ts_swe *s, int steps) {
  swe_balance_state *b = &s->balance;
  int is_static = b->mode == TS_BALANCE_STATIC;
  if (steps < 1 || (!is_static && b->mode != TS_BALANCE_DYNAMIC) || b->done || swe_tuning(s))
    return TS_OK;
  if (!b->started) { /* the step after tuning is a warm-up: measurements start after it */
    b->started = 1;
    b->steps = 0;
    mark_parts(s);
    if (is_static)
      set_early_exit(s, 0); /* a device's speed from every cell computed */
    return TS_OK;
  }
  b->steps += steps;
  if (b->steps < (is_static ? SWE_STATIC_PROBE_STEPS : b->interval))
    return TS_OK;
  b->steps = 0;
  b->done = is_static;
  return measure_and_move(s);
}
