/* The decomposed shallow-water step. Every part computes on its window; after an exchange the
 * whole window is valid, and each stage leaves valid only the cells at least SWE_STAGE_REACH
 * further from the sides facing other subdomains, so with a halo of
 * SWE_STAGE_REACH x stages x k cells the parts exchange every k steps (ghost cell expansion)
 * and recompute the overlap. The time step is the maximum wave speed over the faces of owned
 * cells, reduced over parts and ranks (a maximum: exact in any order). With overlap, the
 * exchange started after a step is finished in the next one, after the fluxes of the cells that
 * need no halo cell. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "physics/swe/swe_internal.h"
#include "tessera/gpu.h"

/* Runs f(part) for every part of this rank, in parallel when there are several (in order while
 * a graph of them is recorded). */
static void swe_for_parts(ts_swe *s, void (*f)(swe_part *part, void *arg), void *arg) {
  if (s->nparts == 1 || s->recording) {
    for (int k = 0; k < s->nparts; k++)
      f(s->parts[k], arg);
    return;
  }
#pragma omp parallel for schedule(dynamic, 1) num_threads(s->outer_threads)
  for (int k = 0; k < s->nparts; k++)
    f(s->parts[k], arg);
}

/* The window less `by` cells on each side that faces another subdomain. */
static swe_region shrink(const swe_part *p, int by) {
  swe_region r = {0, p->nx, 0, p->ny};
  r.i0 += p->internal[TS_WEST] ? by : 0;
  r.i1 -= p->internal[TS_EAST] ? by : 0;
  r.j0 += p->internal[TS_SOUTH] ? by : 0;
  r.j1 -= p->internal[TS_NORTH] ? by : 0;
  return r;
}

static int region_empty(swe_region r) { return r.i0 >= r.i1 || r.j0 >= r.j1; }

/* ------------------------------------------------------------------ exchange */

static void halo_window(const ts_swe *s, int sub, ts_box *w) {
  const ts_box *own = &s->decomp.boxes[sub];
  int n[2] = {s->nx, s->ny};
  *w = *own;
  for (int a = 0; a < 2; a++) {
    w->lo[a] = own->lo[a] - s->halo_width > 0 ? own->lo[a] - s->halo_width : 0;
    w->hi[a] = own->hi[a] + s->halo_width < n[a] ? own->hi[a] + s->halo_width : n[a];
  }
}

/* Adds the times of the current halo plan to the subdomains' sums and drops the plan. */
static void drop_halo_plan(ts_swe *s) {
  swe_drop_run_graphs(s);
  for (int k = 0; s->halo && k < s->nparts; k++) {
    ts_halo_times t = ts_halo_times_of(s->halo, s->parts[k]->sub), *sum;
    sum = &s->halo_times[s->parts[k]->sub];
    sum->pack += t.pack, sum->wait += t.wait, sum->unpack += t.unpack;
  }
  ts_halo_plan_destroy(s->halo);
  s->halo = NULL;
}

/* The fields of part p where they live: device memory for a GPU part, host memory otherwise
 * (swe_part_fields). */
static int native_fields(const swe_part *p, int with_maxima, ts_halo_field *out) {
#if TESSERA_HAVE_CUDA
  if (p->gpu)
    return p->p->precision == TS_DOUBLE ? swe_cuda_fields_double(p, with_maxima, out)
                                        : swe_cuda_fields_float(p, with_maxima, out);
#endif
  return swe_part_fields(p, with_maxima, out);
}

ts_status swe_build_halo_plan(ts_swe *s) {
  drop_halo_plan(s);
  int nsub = s->decomp.count;
  s->transport = s->nranks > 1 ? "mpi" : "memory";
#if TESSERA_HAVE_CUDA
  const ts_halo_transport *transport = NULL;
  /* GPU parts keep their halos in device memory: copies between the parts of a process (to and
   * from host memory for parts on the CPU beside them), and a transport (NCCL, CUDA-aware MPI or
   * host staging) between ranks. */
  s->device_halo = s->backend == TS_BACKEND_CUDA;
  if (s->device_halo && s->nranks > 1) {
    int device = s->parts[0]->device;
    for (int k = 1; k < s->nparts; k++)
      if (s->parts[k]->device != device)
        device = -1;
    ts_transport_kind chosen;
    ts_status opened =
        ts_transport_open(s->comm, device, s->p.parallel.transport, &transport, &chosen);
    TS_CALL(ts_comm_agree(s->comm, opened));
    s->transport = ts_transport_name(chosen);
    /* With NCCL and one part per rank, the time step's maximum is an all-reduce on the GPUs. */
    double several = s->nparts != 1;
    TS_CALL(ts_comm_max(s->comm, &several, 1));
    s->speeds_on_device = chosen == TS_TRANSPORT_NCCL && several == 0;
    s->rank_stream = s->speeds_on_device ? ts_transport_stream() : NULL;
    for (int k = 0; k < s->nparts; k++)
      s->parts[k]->reduce_ranks = s->speeds_on_device;
  }
#endif
  ts_box *windows = malloc(sizeof *windows * (size_t)nsub);
  if (!windows)
    return ts_error(TS_ERR_NOMEM, "out of memory");
  for (int sub = 0; sub < nsub; sub++)
    halo_window(s, sub, &windows[sub]);
  for (int k = 0; k < s->nparts; k++)
    native_fields(s->parts[k], 0, &s->fields[s->parts[k]->sub]);
  ts_halo_field layout = s->fields[s->parts[0]->sub];
  ts_halo_spec spec = {.nsub = nsub,
                       .sub_rank = s->sub_rank,
                       .src = s->decomp.boxes,
                       .dst = windows,
                       .dst_owned = s->decomp.boxes,
                       .nfields = 1,
                       .layout = &layout};
  ts_status st = ts_halo_plan_create(&s->halo, s->comm, &spec);
#if TESSERA_HAVE_CUDA
  if (st == TS_OK && s->device_halo)
    ts_halo_set_copier(s->halo, ts_gpu_copy_box);
  if (st == TS_OK && transport)
    st = ts_halo_set_transport(s->halo, transport);
#endif
  free(windows);
  return st;
}

static void refresh_halo(swe_part *p, void *arg) {
  (void)arg;
  swe_region o = p->own;
  swe_region bands[4] = {{0, p->nx, 0, o.j0},
                         {0, p->nx, o.j1, p->ny},
                         {0, o.i0, o.j0, o.j1},
                         {o.i1, p->nx, o.j0, o.j1}};
  for (int b = 0; b < 4; b++)
    if (!region_empty(bands[b]))
      p->k->refresh_velocities(p, bands[b]);
}

static ts_status start_exchange(ts_swe *s) {
#if TESSERA_HAVE_CUDA
  for (int k = 0; k < s->nparts; k++)
    if (s->parts[k]->gpu)
      swe_cuda_sync(s->parts[k]); /* the halos are read outside the parts' streams */
#endif
  TS_CALL(ts_halo_start(s->halo, s->fields, s->fields));
  s->in_flight = 1;
  s->cycle = 0;
  return TS_OK;
}

ts_status swe_finish_exchange(ts_swe *s) {
  if (!s->in_flight)
    return TS_OK;
  s->in_flight = 0;
  TS_CALL(ts_halo_finish(s->halo, s->fields));
#if TESSERA_HAVE_CUDA
  if (s->device_halo) {
    double t0 = omp_get_wtime();
    ts_gpu_halo_wait(); /* the copies between devices, queued by the start */
    double waited = omp_get_wtime() - t0;
    for (int k = 0; k < s->nparts; k++)
      s->halo_times[s->parts[k]->sub].wait += waited;
  }
#endif
  swe_for_parts(s, refresh_halo, NULL);
  return TS_OK;
}

/* A full, blocking halo exchange. */
static ts_status swe_exchange(ts_swe *s) {
  TS_CALL(swe_finish_exchange(s));
  TS_CALL(start_exchange(s));
  return swe_finish_exchange(s);
}

/* ------------------------------------------------------------------ the step */

typedef struct stage_work {
  int m;          /* stages since the last exchange */
  int stage;      /* 0 or 1 */
  int interior;   /* first stage with the exchange in flight: only cells that need no halo */
  int border;     /* ... and then the rest */
  int on_device;  /* the GPUs choose the step: dt and t_after are not known here */
  double t_stage; /* time of the stage */
  double t_after; /* time at the end of the step */
  int last;       /* the last stage of the step */
  double dt;
  double (*amax)[2]; /* per part */
  int *bad;          /* per part: an update produced a non-finite value */
  ts_swe *s;
} stage_work;

static int part_index(const ts_swe *s, const swe_part *p) {
  for (int k = 0; k < s->nparts; k++)
    if (s->parts[k] == p)
      return k;
  return 0;
}

/* Cells of the flux region that read no halo cell: the owned box less 2 cells on the sides
 * where halo cells lie. */
static swe_region interior_of(const swe_part *p, swe_region f) {
  swe_region r = p->own;
  r.i0 += r.i0 > 0 ? 2 : 0;
  r.i1 -= r.i1 < p->nx ? 2 : 0;
  r.j0 += r.j0 > 0 ? 2 : 0;
  r.j1 -= r.j1 < p->ny ? 2 : 0;
  r.i0 = r.i0 > f.i0 ? r.i0 : f.i0;
  r.i1 = r.i1 < f.i1 ? r.i1 : f.i1;
  r.j0 = r.j0 > f.j0 ? r.j0 : f.j0;
  r.j1 = r.j1 < f.j1 ? r.j1 : f.j1;
  return r;
}

/* The time of a phase of part p: the passes a GPU part queues are timed on its stream (not
 * while they are recorded into the graph of a device run); a CPU part's by the wall clock,
 * stretched for the test slowdown. */
static double phase_begin(const stage_work *w, swe_part *p) {
  if (p->k->phase_clock && !w->on_device)
    p->k->phase_clock(p, 1);
  return omp_get_wtime();
}

static void phase_done(const stage_work *w, swe_part *p, double t0) {
  if (p->k->phase_clock) {
    if (!w->on_device)
      p->k->phase_clock(p, 0);
    return;
  }
  p->compute_s += swe_balance_slow_down(w->s, p, t0);
}

/* Fluxes of the stage: masks and boundary ghosts first (stage 0), then the flux region, or its
 * interior or border part. */
static void phase_fluxes(swe_part *p, void *arg) {
  stage_work *w = arg;
  double t0 = phase_begin(w, p);
  int k = part_index(w->s, p);
  swe_region f = shrink(p, SWE_STAGE_REACH * w->m + 2);
  if (w->stage == 0 && !w->border)
    p->k->tile_mask(p, w->interior ? p->own : shrink(p, SWE_STAGE_REACH * w->m));
  p->k->fill_boundaries(p, w->t_stage);
  double *amax = w->stage == 0 ? w->amax[k] : NULL; /* only the first stage sets dt */
  if (!w->interior && !w->border) {
    p->k->fluxes(p, f, amax);
  } else {
    swe_region in = interior_of(p, f);
    if (region_empty(in))
      in = (swe_region){f.i0, f.i0, f.j0, f.j0};
    if (w->interior) {
      if (!region_empty(in))
        p->k->fluxes(p, in, amax);
    } else {
      swe_region border[4] = {{f.i0, f.i1, f.j0, in.j0},
                              {f.i0, f.i1, in.j1, f.j1},
                              {f.i0, in.i0, in.j0, in.j1},
                              {in.i1, f.i1, in.j0, in.j1}};
      if (region_empty(in))
        border[0] = f, border[1] = border[2] = border[3] = in;
      for (int b = 0; b < 4; b++)
        if (!region_empty(border[b]))
          p->k->fluxes(p, border[b], amax);
    }
  }
  phase_done(w, p, t0);
}

static void phase_update(swe_part *p, void *arg) {
  stage_work *w = arg;
  double t0 = phase_begin(w, p);
  p->k->impose_inflow(p, w->t_stage);
  p->k->drain(p, shrink(p, SWE_STAGE_REACH * w->m + 2), w->dt);
  if (swe_has_open_sides(p->p))
    p->k->boundary_flux(p, w->t_stage, w->dt, w->stage);
  int bad = p->k->update(p, shrink(p, SWE_STAGE_REACH * w->m + SWE_STAGE_REACH), w->dt, w->stage);
  if (w->bad)
    w->bad[part_index(w->s, p)] |= bad;
  phase_done(w, p, t0);
}

/* The end of the step: the flood maps at its end time, then its rain and losses on the cells
 * the last stage updated, and the device's clock moved on. */
static void phase_end(swe_part *p, void *arg) {
  stage_work *w = arg;
  double t0 = phase_begin(w, p);
  if (!w->on_device)
    p->t = w->t_after;
  p->k->maxima(p, w->dt);
  if (swe_has_sources(p->p))
    p->k->sources(p, shrink(p, SWE_STAGE_REACH * w->m + SWE_STAGE_REACH), w->dt);
  if (p->k->end_step)
    p->k->end_step(p);
  phase_done(w, p, t0);
}

/* The time step towards `target` from the first stage's wave speeds: the maximum over the
 * parts and ranks, on the host (the GPUs get it back and compute the same step), or on the
 * devices alone (several parts of a process: each reads the speeds the others published). */
static ts_status choose_step(ts_swe *s, double target, stage_work *w) {
  if (w->on_device && s->nparts == 1) {
    s->parts[0]->k->time_step(s->parts[0], NULL);
    return TS_OK;
  }
  if (w->on_device) { /* each part waits for the speeds of the others */
    for (int k = 0; k < s->nparts; k++)
      s->parts[k]->k->share_speeds(s->parts[k]);
    for (int k = 0; k < s->nparts; k++)
      for (int q = 0; q < s->nparts; q++)
        if (q != k)
          s->parts[k]->k->order(s->parts[k], s->parts[q]);
    for (int k = 0; k < s->nparts; k++)
      s->parts[k]->k->time_step_over(s->parts[k], s->parts, s->nparts);
    return TS_OK;
  }
  double a[2] = {0, 0};
  for (int k = 0; k < s->nparts; k++) {
    if (s->parts[k]->k->take_speeds)
      s->parts[k]->k->take_speeds(s->parts[k], w->amax[k]);
    a[0] = fmax(a[0], w->amax[k][0]), a[1] = fmax(a[1], w->amax[k][1]);
  }
  if (!s->speeds_on_device)
    TS_CALL(ts_comm_max(s->comm, a, 2));
  double step_max = s->rain_frame >= 0 ? s->rain_step_max[s->rain_frame] : INFINITY;
  w->dt = swe_time_step(a[0], a[1], s->p.cfl, s->grid.dx[0], s->grid.dx[1], step_max, s->t, target,
                        s->p.precision == TS_DOUBLE, &w->t_after);
  if (!(w->dt > 0))
    return ts_error(TS_ERR_NUMERIC, "time step collapsed to %g s at t = %g s", w->dt, s->t);
  for (int k = 0; k < s->nparts; k++)
    if (s->parts[k]->k->time_step)
      s->parts[k]->k->time_step(s->parts[k], a);
  return TS_OK;
}

/* The stages of one step towards `target`: taken here, or only queued on the GPUs when they
 * choose the step themselves (w->on_device). */
static ts_status run_stages(ts_swe *s, double target, stage_work *w) {
  int stages = s->p.rk_order == 1 ? 1 : 2;
  ts_status st = TS_OK;
  for (int stage = 0; stage < stages && st == TS_OK; stage++) {
    w->m = s->cycle;
    w->stage = stage;
    w->last = stage + 1 == stages;
    w->t_stage = s->t + (stage ? w->dt : 0.0);
    if (stage == 0 && s->in_flight) {
      w->interior = 1;
      swe_for_parts(s, phase_fluxes, w);
      w->interior = 0;
      st = swe_finish_exchange(s);
      w->border = 1;
      if (st == TS_OK)
        swe_for_parts(s, phase_fluxes, w);
      w->border = 0;
    } else {
      swe_for_parts(s, phase_fluxes, w);
    }
    if (stage == 0 && st == TS_OK)
      st = choose_step(s, target, w);
    if (st == TS_OK)
      swe_for_parts(s, phase_update, w);
    s->cycle++;
  }
  if (st == TS_OK)
    swe_for_parts(s, phase_end, w);
  return st;
}

/* Starts the exchange due after a step (every ghost_expansion steps). */
static ts_status after_step(ts_swe *s) {
  int stages = s->p.rk_order == 1 ? 1 : 2;
  if (s->decomp.count == 1) {
    s->cycle = 0; /* one subdomain: nothing to exchange */
    return TS_OK;
  }
  if (s->cycle < s->ghost_expansion * stages)
    return TS_OK;
  TS_CALL(start_exchange(s));
  return s->p.parallel.overlap ? TS_OK : swe_finish_exchange(s);
}

ts_status swe_step(ts_swe *s, double target, double *dt_taken) {
  double(*amax)[2] = calloc((size_t)s->nparts, sizeof *amax);
  int *bad = calloc((size_t)s->nparts, sizeof *bad);
  if (!amax || !bad) {
    free(amax);
    free(bad);
    return ts_error(TS_ERR_NOMEM, "out of memory");
  }
  for (int k = 0; k < s->nparts; k++)
    if (s->parts[k]->k->begin_steps)
      s->parts[k]->k->begin_steps(s->parts[k], target, target);
  stage_work w = {.amax = amax, .bad = bad, .s = s};
  double t0 = s->t;
  ts_status st = run_stages(s, target, &w);
  double any_bad = 0;
  for (int k = 0; k < s->nparts && st == TS_OK; k++) {
    if (s->parts[k]->k->take_bad) /* the device's flag covers every stage of the step */
      bad[k] |= s->parts[k]->k->take_bad(s->parts[k]);
    any_bad = fmax(any_bad, bad[k]);
  }
  free(amax);
  free(bad);
  if (st != TS_OK)
    return st;
  s->t = w.t_after;
  s->steps++;
  *dt_taken = w.dt;
  TS_CALL(ts_comm_max(s->comm, &any_bad, 1));
  if (any_bad > 0)
    return ts_error(TS_ERR_NUMERIC, "non-finite water state at t = %g s (step %lld)", t0,
                    (long long)s->steps);
  return after_step(s);
}

int swe_parts_on_devices(const ts_swe *s) {
  if (s->backend != TS_BACKEND_CUDA || (s->decomp.count != s->nparts && !s->rank_stream) ||
      s->nparts > SWE_DEVICE_RUN_PARTS || s->ghost_expansion > SWE_MAX_GHOST_EXPANSION)
    return 0;
  for (int k = 0; k < s->nparts; k++)
    if (!s->parts[k]->gpu || !s->parts[k]->k->capture_step)
      return 0;
  return 1;
}

int swe_steps_on_device(const ts_swe *s) {
  return swe_parts_on_devices(s) && !swe_tuning(s) && !s->balance.probing && !s->balance.timing;
}

void swe_drop_run_graphs(ts_swe *s) {
  for (int m = 0; m < SWE_MAX_GHOST_EXPANSION; m++) {
#if TESSERA_HAVE_CUDA
    ts_gpu_graph_destroy(s->run_graphs[m]);
#endif
    s->run_graphs[m] = NULL;
  }
}

#if TESSERA_HAVE_CUDA
/* The exchange queued on the devices: the halo copies (and the transport's packs, messages and
 * unpacks between ranks) wait for every part's passes, and every part waits for the copies to
 * every device (those to its own write its halos, those to the others read its cells, which its
 * next passes overwrite) and for the transport. */
static ts_status exchange_on_device(ts_swe *s) {
  for (int k = 0; k < s->nparts; k++) {
    for (int q = 0; q < s->nparts; q++)
      s->parts[q]->k->stream_after(s->parts[q], ts_gpu_halo_stream(s->parts[k]->device));
    if (s->rank_stream)
      s->parts[k]->k->stream_after(s->parts[k], s->rank_stream);
  }
  TS_CALL(ts_halo_start(s->halo, s->fields, s->fields));
  TS_CALL(ts_halo_finish(s->halo, s->fields));
  int devices[64], ndevices = 0; /* the parts' devices, each once (CUDA numbers them < 64) */
  for (int k = 0; k < s->nparts; k++) {
    int d = s->parts[k]->device, seen = 0;
    for (int q = 0; q < ndevices; q++)
      seen |= devices[q] == d;
    if (!seen && ndevices < 64)
      devices[ndevices++] = d;
  }
  for (int k = 0; k < s->nparts; k++) {
    ts_gpu_after_halos(s->parts[k]->k->stream(s->parts[k]), devices, ndevices);
    if (s->rank_stream)
      s->parts[k]->k->after_stream(s->parts[k], s->rank_stream);
  }
  return TS_OK;
}

/* Records the graph of one step of every part at position m of the exchange cycle (its regions
 * shrink with the stages since the exchange), the exchange after it at the cycle's end. */
static ts_status record_run_graph(ts_swe *s, int m, double target) {
  int stages = s->p.rk_order == 1 ? 1 : 2;
  swe_part *lead = s->parts[0];
  void *stream = lead->k->stream(lead);
  double(*amax)[2] = calloc((size_t)s->nparts, sizeof *amax); /* unused: the devices keep them */
  if (!amax)
    return ts_error(TS_ERR_NOMEM, "out of memory");
  ts_gpu_capture_begin(stream);
  s->recording = 1;
  for (int k = 1; k < s->nparts; k++)
    s->parts[k]->k->order(s->parts[k], lead);
  int cycle = s->cycle;
  s->cycle = m * stages;
  stage_work w = {.on_device = 1, .amax = amax, .s = s};
  ts_status st = run_stages(s, target, &w);
  if (st == TS_OK && m + 1 == s->ghost_expansion)
    st = exchange_on_device(s);
  s->cycle = cycle;
  for (int k = 1; k < s->nparts; k++)
    lead->k->order(lead, s->parts[k]);
  s->recording = 0;
  s->run_graphs[m] = ts_gpu_capture_end(stream);
  free(amax);
  return st;
}

/* A run of steps over several GPU parts of this process, or over the one GPU part of each rank
 * (messages through NCCL, the time step's maximum an all-reduce on the stream): the graphs of the
 * exchange cycle's positions launched in turn from the current one; the parts' clocks take the same
 * steps. The position after the last step launched is kept: when the devices stopped earlier, the
 * halos are fresher than it says, which only shrinks the regions computed. */
static ts_status run_parts_on_device(ts_swe *s, double target, double stop, int max_steps,
                                     swe_steps_report *report) {
  int stages = s->p.rk_order == 1 ? 1 : 2, cycle_steps = s->ghost_expansion;
  TS_CALL(swe_finish_exchange(s));
  if (s->cycle % stages != 0 || s->cycle >= cycle_steps * stages)
    TS_CALL(swe_exchange(s));
  if (s->run_graphs_early_exit != s->parts[0]->early_exit)
    swe_drop_run_graphs(s);
  s->run_graphs_early_exit = s->parts[0]->early_exit;
  for (int m = 0; m < cycle_steps; m++)
    if (!s->run_graphs[m])
      TS_CALL(record_run_graph(s, m, target));
  double t0 = omp_get_wtime();
  swe_part *lead = s->parts[0];
  for (int k = 0; k < s->nparts; k++)
    s->parts[k]->k->begin_steps(s->parts[k], target, stop);
  for (int k = 1; k < s->nparts; k++)
    lead->k->order(lead, s->parts[k]);
  int n = max_steps < TS_SWE_ADVANCE_MAX ? max_steps : TS_SWE_ADVANCE_MAX;
  int position = s->cycle / stages;
  void *stream = lead->k->stream(lead);
  for (int q = 0; q < n; q++)
    ts_gpu_graph_launch(s->run_graphs[(position + q) % cycle_steps], stream);
  s->cycle = (position + n) % cycle_steps * stages;
  int bad = 0;
  swe_steps_report other;
  for (int k = 0; k < s->nparts; k++) {
    if (k > 0)
      s->parts[k]->k->order(s->parts[k], lead);
    swe_steps_report *got = k == 0 ? report : &other;
    s->parts[k]->k->finish_steps(s->parts[k], got);
    bad |= got->bad;
    const ts_swe_run *a = &report->steps, *b = &got->steps;
    int same = a->taken == b->taken && !memcmp(a->t, b->t, sizeof(double) * (size_t)a->taken);
    if (!same && !bad) {
      int q = 0;
      while (q < a->taken && q < b->taken && a->t[q] == b->t[q])
        q++;
      return ts_error(TS_ERR_INTERNAL,
                      "swe: GPU parts 0 and %d parted: %d and %d steps, step %d ends at t = %.17g "
                      "and %.17g s (dt %.9g and %.9g)",
                      k, a->taken, b->taken, q, q < a->taken ? a->t[q] : NAN,
                      q < b->taken ? b->t[q] : NAN, q < a->taken ? a->dt[q] : NAN,
                      q < b->taken ? b->dt[q] : NAN);
    }
  }
  double wall = omp_get_wtime() - t0;
  for (int k = 0; k < s->nparts; k++)
    s->parts[k]->compute_s += wall;
  double any_bad = bad; /* the ranks took the same steps: they end them together */
  if (s->nranks > 1)
    TS_CALL(ts_comm_max(s->comm, &any_bad, 1));
  report->bad = any_bad > 0;
  return TS_OK;
}
#endif

ts_status swe_run_on_device(ts_swe *s, double target, double stop, int max_steps,
                            swe_steps_report *report) {
  swe_part *p = s->parts[0];
  if (s->nparts > 1 || s->nranks > 1) {
#if TESSERA_HAVE_CUDA
    TS_CALL(run_parts_on_device(s, target, stop, max_steps, report));
#endif
  } else {
    double t0 = omp_get_wtime();
    p->k->begin_steps(p, target, stop);
    if (p->k->capture_step(p, 1)) {
      double amax[1][2] = {{0, 0}}; /* unused: the device keeps the wave speeds */
      stage_work w = {.on_device = 1, .amax = amax, .s = s};
      ts_status st = run_stages(s, target, &w);
      p->k->capture_step(p, 0);
      s->cycle = 0; /* one subdomain: nothing to exchange */
      TS_CALL(st);
    }
    p->k->run_steps(p, max_steps < TS_SWE_ADVANCE_MAX ? max_steps : TS_SWE_ADVANCE_MAX);
    p->k->finish_steps(p, report);
    p->compute_s += omp_get_wtime() - t0;
  }
  const ts_swe_run *run = &report->steps;
  if (run->taken > 0) {
    double t_before = run->taken > 1 ? run->t[run->taken - 2] : s->t;
    s->t = run->t[run->taken - 1];
    for (int k = 0; k < s->nparts; k++)
      s->parts[k]->t = s->t;
    s->steps += run->taken;
    if (report->bad)
      return ts_error(TS_ERR_NUMERIC, "non-finite water state at t = %g s (step %lld)", t_before,
                      (long long)s->steps);
  }
  if (report->collapsed)
    return ts_error(TS_ERR_NUMERIC, "time step collapsed to %g s at t = %g s", report->collapsed_dt,
                    s->t);
  return TS_OK;
}

/* ------------------------------------------------------------------ rebuilding the parts */

static int same_box(const ts_box *a, const ts_box *b) { return memcmp(a, b, sizeof *a) == 0; }

/* The arrays of a solver that have one entry per subdomain. */
typedef struct per_sub {
  int *rank, *device;
  swe_part **by_sub;
  ts_halo_field *fields;
  ts_halo_times *halo_times;
} per_sub;

static ts_status per_sub_alloc(per_sub *a, int count) {
  a->rank = malloc(sizeof(int) * (size_t)count);
  a->device = calloc((size_t)count, sizeof(int));
  a->by_sub = calloc((size_t)count, sizeof *a->by_sub);
  a->fields = calloc((size_t)count, sizeof *a->fields);
  a->halo_times = calloc((size_t)count, sizeof *a->halo_times);
  return a->rank && a->device && a->by_sub && a->fields && a->halo_times
             ? TS_OK
             : ts_error(TS_ERR_NOMEM, "swe: out of memory");
}

static void per_sub_free(per_sub *a) {
  free(a->rank), free(a->device), free(a->by_sub), free(a->fields), free(a->halo_times);
}

/* Swaps the solver's per-subdomain arrays with a's. */
static void per_sub_swap(ts_swe *s, per_sub *a) {
  per_sub mine = {s->sub_rank, s->sub_device, s->by_sub, s->fields, s->halo_times};
  s->sub_rank = a->rank, s->sub_device = a->device, s->by_sub = a->by_sub;
  s->fields = a->fields, s->halo_times = a->halo_times;
  *a = mine;
}

/* Whether a rebuild moves cells where they live (one process with GPU parts: device to device
 * on a GPU, between host and device for parts on the CPU, by the GPU halo copier), not through
 * the host mirrors (between ranks, and on the CPU). */
static int migrates_natively(const ts_swe *s) { return s->device_halo && s->nranks == 1; }

/* Moves the owned cells (state and maxima) of the old parts to the new ones, over the index
 * space of old subdomains (0 .. n-1, senders) and new ones (n .. n+m-1, receivers); parts kept
 * as they are send and receive nothing. */
static ts_status migrate(ts_swe *s, const ts_decomp *old, swe_part **old_by_sub, const ts_decomp *d,
                         const per_sub *next, const int *kept) {
  int native = migrates_natively(s);
  int n = old->count, m = d->count, nsub = n + m;
  ts_box *src = calloc((size_t)nsub, sizeof *src), *dst = calloc((size_t)nsub, sizeof *dst);
  int *rank = malloc(sizeof(int) * (size_t)nsub);
  ts_halo_field *from = calloc((size_t)nsub * SWE_MIGRATED_FIELDS, sizeof *from);
  ts_halo_field *to = calloc((size_t)nsub * SWE_MIGRATED_FIELDS, sizeof *to);
  ts_status st = src && dst && rank && from && to ? TS_OK : ts_error(TS_ERR_NOMEM, "oom");
  for (int k = 0; k < nsub && st == TS_OK; k++) {
    int is_old = k < n, sub = is_old ? k : k - n;
    rank[k] = is_old ? s->sub_rank[sub] : next->rank[sub];
    if (kept[is_old ? sub : sub + n])
      continue;
    if (is_old)
      src[k] = old->boxes[sub];
    else
      dst[k] = d->boxes[sub];
    swe_part *p = is_old ? old_by_sub[sub] : next->by_sub[sub];
    if (!p)
      continue;
#if TESSERA_HAVE_CUDA
    if (native && p->gpu)
      swe_cuda_sync(p); /* its steps, or its upload when it was built, are done */
#endif
    if (is_old && !native)
      swe_part_to_host(p);
    if (native)
      native_fields(p, 1, &(is_old ? from : to)[SWE_MIGRATED_FIELDS * k]);
    else
      swe_part_fields(p, 1, &(is_old ? from : to)[SWE_MIGRATED_FIELDS * k]);
  }
  ts_halo_plan *plan = NULL;
  if (st == TS_OK) {
    ts_halo_field layout[SWE_MIGRATED_FIELDS];
    swe_part_fields(s->parts[0], 1, layout);
    ts_halo_spec spec = {.nsub = nsub,
                         .sub_rank = rank,
                         .src = src,
                         .dst = dst,
                         .nfields = SWE_MIGRATED_FIELDS,
                         .layout = layout};
    st = ts_halo_plan_create(&plan, s->comm, &spec);
  }
#if TESSERA_HAVE_CUDA
  if (st == TS_OK && native)
    ts_halo_set_copier(plan, ts_gpu_copy_box);
#endif
  if (st == TS_OK)
    st = ts_halo_start(plan, from, to);
  if (st == TS_OK)
    st = ts_halo_finish(plan, to);
#if TESSERA_HAVE_CUDA
  if (native)
    ts_gpu_halo_wait();
#endif
  ts_halo_plan_destroy(plan);
  free(src), free(dst), free(rank), free(from), free(to);
  return ts_comm_agree(s->comm, st);
}

ts_status swe_rebuild(ts_swe *s, const ts_decomp *target, const int *devices, int ghost_expansion) {
  TS_CALL(swe_finish_exchange(s));
  int stages = s->p.rk_order == 1 ? 1 : 2;
  int width = SWE_STAGE_REACH * stages * ghost_expansion;
  ts_decomp old, d; /* target may be the solver's own decomposition */
  TS_CALL(ts_decomp_copy(&d, target));
  ts_status st = ts_decomp_copy(&old, &s->decomp);
  if (st != TS_OK) {
    ts_decomp_destroy(&d);
    return st;
  }
  int n = old.count, m = d.count, same_count = n == m;
  per_sub next = {0};
  int *kept = calloc((size_t)(n + m), sizeof *kept); /* old subdomains, then new ones */
  swe_part **parts = calloc((size_t)m, sizeof *parts), **old_by_sub = s->by_sub;
  if (st == TS_OK)
    st = per_sub_alloc(&next, m);
  if (st == TS_OK && (!kept || !parts))
    st = ts_error(TS_ERR_NOMEM, "swe: out of memory");
  int nparts = 0;
  for (int sub = 0; sub < m && st == TS_OK; sub++) {
    next.rank[sub] = ts_decomp_rank(sub, m, s->nranks);
    next.device[sub] = devices ? devices[sub] : s->sub_device[sub];
    if (same_count && width == s->halo_width && s->built_tile_size == s->p.tile_size &&
        next.device[sub] == s->sub_device[sub] && same_box(&d.boxes[sub], &old.boxes[sub]))
      kept[sub] = kept[n + sub] = 1;
  }
  /* New parts on the new boxes (the solver's split is switched while they are built). */
  ts_decomp current = s->decomp;
  s->decomp = d;
  int current_width = s->halo_width;
  s->halo_width = width;
  swe_inputs in = {.bed = &s->bed, .friction = s->has_friction ? &s->friction : NULL};
  for (int sub = 0; sub < m && st == TS_OK; sub++) {
    if (next.rank[sub] != s->rank)
      continue;
    if (kept[sub])
      parts[nparts] = old_by_sub[sub];
    else
      st = swe_part_create(&parts[nparts], s, sub, next.device[sub], &in);
    next.by_sub[sub] = parts[nparts++];
  }
  s->decomp = current;
  s->halo_width = current_width;
  if (st == TS_OK && s->balance.fail_move_rank == s->rank)
    st =
        ts_error(TS_ERR_NOMEM, "swe: out of memory for a moved subdomain (TESSERA_TEST_FAIL_MOVE)");
  st = ts_comm_agree(s->comm, st); /* every rank migrates, or none */
  if (st == TS_OK)
    st = migrate(s, &old, old_by_sub, &d, &next, kept);
  if (st == TS_OK) { /* the new parts replace the old ones */
    for (int k = 0; k < nparts; k++) {
      swe_part *p = parts[k], *before = same_count ? old_by_sub[p->sub] : NULL;
      if (kept[p->sub] && same_count)
        continue;
      if (!(migrates_natively(s) && p->gpu)) /* a GPU part's cells arrived on the device */
        swe_part_changed_on_host(p);
      p->compute_s = before ? swe_part_compute_seconds(before) : 0;
    }
    drop_halo_plan(s); /* its times, while its subdomains exist */
    for (int k = 0; k < s->nparts; k++)
      if (!(same_count && kept[s->parts[k]->sub]))
        swe_part_destroy(s->parts[k]);
    if (same_count)
      memcpy(next.halo_times, s->halo_times, sizeof *next.halo_times * (size_t)m);
    per_sub_swap(s, &next);
    free(s->parts);
    s->parts = parts;
    s->nparts = nparts;
    parts = NULL;
    ts_decomp_destroy(&s->decomp);
    s->decomp = d;
    d.boxes = NULL;
    s->halo_width = width;
    s->ghost_expansion = ghost_expansion;
    s->built_tile_size = s->p.tile_size;
    if (!same_count) { /* the weights were of the old subdomains */
      free(s->weights);
      s->weights = NULL;
      s->p.parallel.weights = NULL;
    }
    swe_assign_threads(s);
    st = swe_build_halo_plan(s);
  }
  if (st == TS_OK)
    st = swe_exchange(s);
  s->cycle = 0;
  for (int k = 0; parts && k < nparts; k++) /* a failure: the new parts go */
    if (parts[k] && !kept[parts[k]->sub])
      swe_part_destroy(parts[k]);
  free(parts);
  per_sub_free(&next);
  free(kept);
  ts_decomp_destroy(&old);
  ts_decomp_destroy(&d);
  return st;
}
