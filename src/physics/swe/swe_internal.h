/* Private state of the shallow-water solver. The grid is split into subdomains; each one this
 * rank runs is a `swe_part`: the kernels of swe_kernels.c (compiled once per precision) work on a
 * part's window, its owned box grown by the halo on the sides that face other subdomains.
 *
 * All per-cell arrays of a part share one padded layout: a field on (nx+1) x (ny+1) points with a
 * ghost frame of 2, so cells, faces and corners are addressed as origin + i + j * row for i in
 * [-2, nx+2], j in [-2, ny+2] (local coordinates: window cell (0,0) is global (gi0, gj0)). */
#ifndef TESSERA_SWE_INTERNAL_H
#define TESSERA_SWE_INTERNAL_H

#include <math.h>

#include "core/hd.h"
#include "tessera/comm.h"
#include "tessera/halo.h"
#include "tessera/swe.h"

#define SWE_GHOST 2
/* Cells of the state one stage reads around a cell it updates: two for the reconstruction of
 * the face fluxes, one more for the outflow limiter of the neighbours. */
#define SWE_STAGE_REACH 3
/* Device runs over the GPU parts of one process: at most this many parts, and one recorded
 * graph per step of the exchange cycle (ghost_expansion steps, at most 8). */
#define SWE_DEVICE_RUN_PARTS 16
#define SWE_MAX_GHOST_EXPANSION 8

typedef struct swe_kernels swe_kernels;
/* What a run of steps on the device did (swe_kernels.finish_steps). */
typedef struct swe_steps_report {
  ts_swe_run steps; /* taken, with their times and lengths */
  int bad;          /* the last step taken produced a non-finite value */
  int collapsed;    /* the step after the last one collapsed to collapsed_dt */
  double collapsed_dt;
} swe_steps_report;

/* A box of local cells [i0, i1) x [j0, j1). */
typedef struct swe_region {
  int i0, i1, j0, j1;
} swe_region;

typedef struct swe_part {
  const ts_swe_params *p; /* the solver's parameters */
  int sub;                /* subdomain index */
  ts_grid grid;           /* the window as a grid */
  int nx, ny;             /* window cells */
  int gi0, gj0;           /* global coordinates of window cell (0,0) */
  swe_region own;         /* owned cells, local coordinates */
  int internal[4];        /* window sides inside the global grid (no boundary condition there) */
  int threads;            /* OpenMP threads of its loops */
  int early_exit;         /* skip inactive tiles */
  int64_t row;            /* elements between (i,j) and (i,j+1) */
  int64_t origin;         /* element index of cell (0,0) */
  int64_t plane;          /* elements in one array of the layout */
  size_t real_size;       /* 4 or 8 */
  const swe_kernels *k;
  const int *bc_cells; /* active cells along each global side (the solver's) */
  double t;            /* time of the state */

  /* Arrays of the working precision (ts_real), each `plane` elements. */
  void *w, *hu, *hv;     /* state: surface elevation and unit discharges */
  void *w_carry;         /* low-order part of w lost to rounding (compensated summation) */
  void *w0, *hu0, *hv0;  /* state at the start of the step (RK2) */
  void *u, *v;           /* velocities of the state (desingularised hu/h, hv/h; 0 when dry) */
  void *char_speed;      /* |u| + 2 sqrt(g h) of the state */
  void *speed_cap;       /* largest char_speed around each cell at the start of a stage */
  void *corner;          /* bed at cell corners: corner(i,j) is the SW corner of cell (i,j) */
  void *bed;             /* cell-centre bed, mean of the four corners */
  void *friction;        /* per-cell friction coefficient, NULL when uniform */
  void *fx[3], *fy[3];   /* face fluxes: fx at the west face of (i,j), fy at its south face */
  void *src_x, *src_y;   /* bed-slope source of hu and hv per cell (per unit area) */
  void *drain;           /* per-cell outflow limiter in [0,1] */
  unsigned char *active; /* 1 where the cell takes part (not NODATA, not a wall ghost) */

  /* Maxima since t = 0 (double, `plane` elements). */
  double *max_h, *max_speed, *arrival, *max_eta;
  /* Also since t = 0 (double, `plane` elements): time deeper than arrival_depth, maximum hazard
   * rating, water taken by the losses (m), and volumes (m3) in and out through the faces of the
   * cell on global sides. */
  double *duration, *max_hazard, *loss, *inflow, *outflow;

  /* Sources: the rain rate (m/s) of the current frame, per cell in rain (NULL: rain_rate for
   * every cell), 0 outside the frames; the losses' per-cell initial loss (m) and rate (m/s) in
   * loss_initial and loss_rate (working precision; NULL: the parameters' numbers). */
  double rain_rate;
  double rain_step_max; /* the longest step the frame allows (swe_rain_step_max), INFINITY */
  void *rain, *loss_initial, *loss_rate;

  /* Activity mask per tile of the window. */
  int tiles_x, tiles_y;
  unsigned char *tile_wet;
  int *tile_list; /* indices of the active tiles, the work list of every pass */
  int ntile_list;
  int *tile_runs; /* CPU passes: runs of tile_list along x (first entry, tiles), by tile_mask */
  int ntile_runs;
  int tiles_stale; /* cells changed outside the passes: the next CPU mask reads every tile */

  double compute_s;    /* seconds in the kernels (GPU parts: see swe_part_compute_seconds) */
  double balance_mark; /* compute_s at the load balancer's last measurement */
  int device;          /* CUDA device of a GPU part, -1 on the CPU */
  int reduce_ranks;    /* take_speeds reduces over the ranks (NCCL; every rank has one part) */
  void *gpu;           /* the GPU backend's state (device arrays, stream), NULL on the CPU */
} swe_part;

/* The global rasters a part is built from (read only). */
typedef struct swe_inputs {
  const ts_raster *bed, *h0, *hu0, *hv0, *friction;
} swe_inputs;

/* Whether a run has sources (rain or losses) and open sides (water through the boundaries). */
static inline int swe_has_sources(const ts_swe_params *p) {
  return p->rain.nframes > 0 || p->losses.initial > 0 || p->losses.rate > 0 ||
         p->losses.initial_grid || p->losses.rate_grid;
}
static inline int swe_has_open_sides(const ts_swe_params *p) {
  for (int side = 0; side < 4; side++)
    if (p->bc[side].type != TS_BC_WALL)
      return 1;
  return 0;
}

struct swe_kernels {
  /* Fills bed, state and friction of the window from the global rasters. */
  void (*init)(swe_part *s, const swe_inputs *in);
  void (*set_surface)(swe_part *s, const ts_raster *eta);
  /* Ghost cells of the global sides along the window, for stage time t. */
  void (*fill_boundaries)(swe_part *s, double t);
  /* Face fluxes and bed sources of the cells of r; adds the largest wave speeds of the faces
   * of owned cells to amax (x, y), unless amax is NULL (stages after the first). GPU backends
   * keep them on the device until take_speeds. */
  void (*fluxes)(swe_part *s, swe_region r, double amax[2]);
  /* GPU backends (NULL on the CPU): the wave speeds the first stage's fluxes accumulated, reduced
   * over the ranks on the device first when the part's reduce_ranks is set; then reset. */
  void (*take_speeds)(swe_part *s, double amax[2]);
  /* GPU backends (NULL on the CPU) keep the clock of their steps on the device (time, step,
   * the stages' inflow discharges), so that steps can run without the host. time_step: the
   * step from the first stage's wave speeds, the maxima over parts and ranks given by the host,
   * or with amax NULL the device's own (reduced over the ranks by NCCL with reduce_ranks);
   * the passes after it take their step and stage times from the device, not from their
   * arguments. end_step: the clock moves to the end of the step, which records the watched
   * cells and ends the run of steps after a non-finite value, the stop time or the target. */
  void (*time_step)(swe_part *s, const double amax[2]);
  void (*end_step)(swe_part *s);
  /* Device runs over the GPU parts of a process (NULL on the CPU), recorded as one graph:
   * stream is the part's (a cudaStream_t); order makes the part's stream wait for what is
   * queued so far on the stream of part `after`; stream_after makes the work queued from now on
   * on `stream` (of any device: the halo copies to a device, the transport between ranks) wait
   * for the part's passes so far, after_stream the part's for what is queued so far on `stream`
   * (of the part's device). share_speeds publishes the first stage's wave speeds for the other
   * parts; time_step_over is time_step from the largest speeds the n parts published, once the part
   * waited for them. */
  void *(*stream)(swe_part *s);
  void (*order)(swe_part *s, const swe_part *after);
  void (*stream_after)(swe_part *s, void *stream);
  void (*after_stream)(swe_part *s, void *stream);
  void (*share_speeds)(swe_part *s);
  void (*time_step_over)(swe_part *s, swe_part *const *parts, int n);
  /* A run of steps: begin_steps sets its target (steps are shortened to land on it) and stop
   * (the run ends after the first step reaching it); capture_step(s, 1) starts recording the
   * passes of one step into a CUDA graph, returning 0 when the part has one already, and
   * capture_step(s, 0) ends the recording; run_steps launches the graph n times (steps after
   * the run ended do nothing); finish_steps waits and reports. watch: cells whose state and
   * maxima are recorded after every step; watched_to_host puts those of step k of the last run
   * into the host arrays. */
  void (*begin_steps)(swe_part *s, double target, double stop);
  int (*capture_step)(swe_part *s, int begin);
  void (*run_steps)(swe_part *s, int n);
  void (*finish_steps)(swe_part *s, swe_steps_report *report);
  ts_status (*watch)(swe_part *s, const int64_t *cells, int n);
  void (*watched_to_host)(swe_part *s, int k);
  void (*impose_inflow)(swe_part *s, double t);
  void (*drain)(swe_part *s, swe_region r, double dt);
  /* Before the update of stage `stage` (at time t, of length dt): the water through the open
   * global sides of the owned edge cells, times the stage's RK weight, added to inflow and
   * outflow (swe_boundary_flux). */
  void (*boundary_flux)(swe_part *s, double t, double dt, int stage);
  /* After the step of length dt: rain and losses on the cells of r (swe_source_cell). */
  void (*sources)(swe_part *s, swe_region r, double dt);
  /* GPU backends (NULL on the CPU): the rain of the current frame changed on the host. */
  void (*rain_changed)(swe_part *s);
  /* Euler stage on the cells of r; returns nonzero on a non-finite value. */
  int (*update)(swe_part *s, swe_region r, double dt, int stage);
  /* Tile mask from the cells of `valid`; tiles reaching outside it count as wet. */
  void (*tile_mask)(swe_part *s, swe_region valid);
  /* The flood maps of the owned cells at time s->t after a step of dt (swe_record_cell). */
  void (*maxima)(swe_part *s, double dt);
  void (*refresh_velocities)(swe_part *s, swe_region r);
  double (*get_cell)(const swe_part *s, ts_swe_var var, int i, int j); /* local, active cell */
  void (*volume)(const swe_part *s, ts_exact_sum *sum);                /* owned cells */
  int64_t (*wet_cells)(const swe_part *s);                             /* owned cells */
  /* Marks global tiles of `tile` cells holding water in owned cells: wet[tx + ty * ntx]. */
  void (*tiles_wet)(const swe_part *s, int tile, int ntx, int64_t *wet);
  /* GPU backends (NULL on the CPU): the host arrays of a part mirror the device's; to_host
   * copies the state, velocities and maxima down before host code reads them, to_device copies
   * state and maxima up after host code wrote them; take_bad returns and clears the non-finite
   * flag of the updates; release frees the device side. */
  void (*to_host)(swe_part *s);
  /* ... of n cells only (state, velocities, maxima), for probes such as gauges. */
  void (*to_host_cells)(swe_part *s, const int64_t *cells, int n);
  void (*to_device)(swe_part *s);
  int (*take_bad)(swe_part *s);
  /* GPU backends (NULL on the CPU): phase_clock(s, 1) and (s, 0) around the passes of a phase
   * of a host-driven step time it on the part's stream (events); busy_seconds waits for the
   * timed phases and returns their seconds since the last call. */
  void (*phase_clock)(swe_part *s, int begin);
  double (*busy_seconds)(swe_part *s);
  void (*release)(swe_part *s);
};

extern const swe_kernels swe_kernels_float;
extern const swe_kernels swe_kernels_double;
#if TESSERA_CPU_DISPATCH /* the x86-64-v3 and v4 builds of the same loops (tessera/cpu.h) */
extern const swe_kernels swe_kernels_float_v3;
extern const swe_kernels swe_kernels_float_v4;
extern const swe_kernels swe_kernels_double_v3;
extern const swe_kernels swe_kernels_double_v4;
#endif
#if TESSERA_HAVE_CUDA
extern const swe_kernels swe_kernels_cuda_float;
extern const swe_kernels swe_kernels_cuda_double;
/* Creates the device side of a part on `device` from its host arrays (static data and state). */
ts_status swe_cuda_attach_float(swe_part *s, int device);
ts_status swe_cuda_attach_double(swe_part *s, int device);
/* The fields of a GPU part in device memory, as swe_part_fields gives the host's: the state (w,
 * hu, hv, w_carry), with maxima also the four maxima and the five records. */
int swe_cuda_fields_float(const swe_part *s, int with_maxima, ts_halo_field *out);
int swe_cuda_fields_double(const swe_part *s, int with_maxima, ts_halo_field *out);
/* Waits for a part's queued work. */
void swe_cuda_sync(const swe_part *s);
#endif

static inline int64_t swe_index(const swe_part *s, int i, int j) {
  return s->origin + i + j * s->row;
}

/* Sides (bit `side`) whose level or inflow boundary feeds the edge tiles: always computed, as
 * water may enter them from outside. internal: sides facing other subdomains (none: NULL). */
static inline unsigned swe_feeding_sides(const ts_swe_params *p, const int *internal) {
  unsigned feeds = 0;
  for (int side = 0; side < 4; side++) {
    ts_bc_type type = p->bc[side].type;
    if ((!internal || !internal[side]) && (type == TS_BC_LEVEL || type == TS_BC_INFLOW))
      feeds |= 1u << side;
  }
  return feeds;
}

/* The early-exit rule, for CPU, GPU and the whole-grid report alike: tile (tx, ty) of nx x ny
 * is computed when a feeding side touches it or it or one of its 8 neighbours holds water. Water
 * moves at most one cell per stage, so with tiles of at least 2 x 2 cells no water reaches a
 * skipped tile in a step. */
TS_HD static inline int swe_tile_on(const unsigned char *wet, int nx, int ny, int tx, int ty,
                                    unsigned feeds) {
  int hit = ((feeds & 1u) && tx == 0) || ((feeds & 2u) && tx == nx - 1) ||
            ((feeds & 4u) && ty == 0) || ((feeds & 8u) && ty == ny - 1);
  for (int dy = -1; dy <= 1 && !hit; dy++)
    for (int dx = -1; dx <= 1 && !hit; dx++) {
      int x = tx + dx, y = ty + dy;
      hit = x >= 0 && y >= 0 && x < nx && y < ny && wet[x + (int64_t)y * nx];
    }
  return hit;
}

/* Discharge (m3/s) at time t of a hydrograph of n points (ts[k], q[k]): linear in between, held
 * at the ends. Host and device (the GPU evaluates it for the stage times it computes). */
TS_HD static inline double swe_hydrograph(const double *ts, const double *q, int n, double t) {
  if (t <= ts[0])
    return q[0];
  if (t >= ts[n - 1])
    return q[n - 1];
  int k = 0;
  while (k + 1 < n && ts[k + 1] < t)
    k++;
  double a = (t - ts[k]) / (ts[k + 1] - ts[k]);
  return q[k] + a * (q[k + 1] - q[k]);
}
/* Discharge q (m3/s) of side `side` at time t from its hydrograph. */
double swe_inflow_discharge(const ts_swe_params *p, int side, double t);
/* Unit discharge (m2/s) through an inflow side at time t: q over the width of its active cells
 * (0 when it has none); signed along the axis (negative on the east and north sides) when
 * `signed_axis`, as the ghost cells store it. */
double swe_inflow_unit(const swe_part *s, int side, double t, int signed_axis);
/* The longest step with rain of rate r (m/s) falling: water the rain leaves in a dry cell in a
 * step of dt, h = r dt, moves at sqrt(g h), and cfl x cell / sqrt(g r dt) >= dt gives
 * dt <= (cfl cell)^(2/3) (g r)^(-1/3) (36 s for 50 mm/h on 10 m cells at cfl 0.25). Without it
 * a dry domain, having no wave speed, would take one step to the next event and its rain would
 * not run off. INFINITY without rain. */
static inline double swe_rain_step_max(double r, double cfl, double cell, double g) {
  return r > 0 ? pow(cfl * cell, 2.0 / 3.0) / cbrt(g * r) : INFINITY;
}

/* The time step from the largest wave speeds ax, ay over the faces (cfl x cell size / speed),
 * at most step_max (the rain's), shortened to what is left to `target` when that is shorter, in the
 * working precision
 * (`is_double`, else float). *t_after: the time after the step; a step shortened to the target
 * lands on it exactly (target - t may not be representable in the working precision). Host and
 * device: the GPUs compute the step without the host. */
TS_HD static inline double swe_time_step(double ax, double ay, double cfl, double dx, double dy,
                                         double step_max, double t, double target, int is_double,
                                         double *t_after) {
  double dt_max = target - t, lim = step_max;
  if (ax > 0)
    lim = fmin(lim, cfl * dx / ax);
  if (ay > 0)
    lim = fmin(lim, cfl * dy / ay);
  int clamped = !(lim < dt_max);
  double dt = clamped ? dt_max : lim;
  dt = is_double ? dt : (double)(float)dt;
  *t_after = clamped ? t + dt_max : t + dt;
  return dt;
}

/* ---- the solver: this rank's parts, the split, the halo plan */

/* The run-time tuner's state (swe_tune.c): the measured knobs in the order they are probed,
 * the one under way (-1: done), its candidate and the steps timed; the decisions' log. */
typedef enum swe_knob {
  SWE_KNOB_EARLY_EXIT,
  SWE_KNOB_TILE_SIZE,
  SWE_KNOB_GHOST_EXPANSION
} swe_knob;
#define SWE_MAX_DECISIONS 12
typedef struct swe_tune_state {
  swe_knob plan[3];
  int tile_size_auto; /* [swe] tile_size = auto (params tile_size 0) */
  int nplan, current;
  int warmed, candidate, steps;
  double start, seconds[TS_SWE_MAX_CANDIDATES];
  ts_swe_decision decisions[SWE_MAX_DECISIONS];
  int ndecisions;
  double overhead_s; /* probe time beyond what the chosen candidates would have taken */
} swe_tune_state;

/* The load balancer's state (swe_balance.c). */
enum { SWE_STATIC_PROBE_STEPS = 5 }; /* steps that time the devices' speeds (by default) */
/* Dynamic balance of parts whose steps run on the devices: the steps timed (host-driven) at the
 * end of each interval, and the interval chosen by default. */
enum { SWE_TIMED_STEPS = 2, SWE_DEVICE_REBALANCE_INTERVAL = 500 };
typedef struct swe_balance_state {
  ts_balance_mode mode; /* auto resolved */
  int started;          /* the warm-up step after tuning is behind: measurements run */
  int probing;          /* the speed probe (every cell computed) is under way */
  int timing;           /* dynamic, steps on the devices: the steps before a measurement are
                           driven by the host, whose phases are timed (SWE_TIMED_STEPS) */
  int done;             /* static: the one move is made; or one subdomain left */
  double probe_start;   /* wall clock at the start of the speed probe */
  int interval, steps;  /* steps between measurements, steps since the last */
  int probe_steps;      /* of the speed probe: SWE_STATIC_PROBE_STEPS, or the interval given */
  int rebalances, measurements;
  int64_t moved_cells;
  double move_s, last_move_s, imbalance_before, imbalance_after;
  int slow_sub;       /* TESSERA_TEST_SLOWDOWN=SUB:FACTOR: a subdomain made slower, -1 */
  double slow_factor; /* (a test of the balancer: its compute takes FACTOR times as long) */
  int fail_move_rank; /* TESSERA_TEST_FAIL_MOVE=RANK: that rank fails to build a moved part */
  /* GPUs with the CPU in one process: the GPUs start alone, and after the speed probe the CPU
   * is tried on a copy of a band (swe_balance.c); only when it could pay is the split with it
   * built. The split asked for: its subdomains and their devices (-1: the CPU), band axis. */
  int cpu_trial;
  int trial_count, *trial_devices, trial_axis;
  int keep_cpu; /* TESSERA_TEST_KEEP_CPU set: the trial keeps the CPU (a test of that path) */
} swe_balance_state;

struct ts_swe {
  ts_swe_params p;
  ts_grid grid;
  int nx, ny;
  const ts_comm *comm;
  int rank, nranks;
  ts_decomp decomp;
  int *sub_rank;             /* rank of each subdomain */
  int *sub_device;           /* CUDA device of each subdomain of this rank (cuda backend) */
  int nparts;                /* this rank's subdomains */
  swe_part **parts;          /* indexed 0 .. nparts */
  swe_part **by_sub;         /* indexed by subdomain, NULL for other ranks' */
  ts_halo_plan *halo;        /* exchange of the windows' halos */
  ts_halo_times *halo_times; /* per subdomain, of the plans replaced so far */
  ts_halo_field *fields;     /* per subdomain: state (w, hu, hv, w_carry) */
  int ghost_expansion;       /* steps between exchanges */
  swe_tune_state tune;       /* the auto knobs being probed, and the decisions taken */
  int halo_width;            /* cells: SWE_STAGE_REACH x stages x ghost_expansion */
  int cycle;                 /* stages done since the last exchange */
  int in_flight;             /* an exchange was started and not finished */
  int recording;             /* a graph of the parts' passes is being recorded: parts in order */
  int device_halo;           /* GPU parts: halos move in device memory (copies, transport) */
  const char *transport;     /* how halos move (ts_swe_transport) */
  int speeds_on_device;      /* the wave speeds are reduced over the ranks on the GPUs */
  void *rank_stream;         /* then the stream of the NCCL transport between ranks */
  int early_exit;            /* resolved at the first step */
  ts_backend backend;        /* resolved at creation */
  int gpus;                  /* CUDA devices this process sees */
  int nparts_hint;           /* this rank's subdomains, while they are created */
  int outer_threads;         /* threads over parts */
  int built_tile_size;       /* the tile size the parts were built with */
  ts_raster bed, friction;   /* copies of the global inputs, to build parts when boundaries move */
  int has_friction;
  double *bc_t[4], *bc_q[4];
  double *rain_t, *rain_rate;        /* copies of the rain frames' times and uniform rates */
  ts_raster *rain_grids;             /* copies of the rain frames' grids (NULL: uniform frames) */
  ts_raster loss_initial, loss_rate; /* copies of the loss grids (v NULL: none) */
  int rain_frame;                    /* the frame the parts hold (-1: no rain now) */
  double *rain_sums;                 /* per frame: the rates summed over the active cells (m/s) */
  double *rain_step_max;             /* per frame: swe_rain_step_max of its largest rate */
  double rain_volume;                /* m3 fallen since t = 0 */
  double *weights;                   /* copy of parallel.weights (NULL: equal split) */
  swe_balance_state balance;
  int bc_cells[4];
  int64_t active_cells;
  double t;
  int64_t steps;
  int nwatch; /* watched cells (ts_swe_watch), global coordinates */
  int *watch_i, *watch_j;
  int ran_on_device; /* the last ts_swe_advance ran on the device */
  /* Device runs over several GPU parts: a graph of one step at each position of the exchange
   * cycle (the last one with the exchange), recorded for the current halo plan, watched cells
   * and early exit (NULL: not recorded). */
  void *run_graphs[SWE_MAX_GHOST_EXPANSION];
  int run_graphs_early_exit;
  /* [grid] type = buq: the block engine (swe_buq.h) in place of the parts */
  const struct swe_buq_ops *buq_ops;
  void *buq;
};

/* Gives a new part the solver's watched cells (ts_swe_watch). */
ts_status swe_watch_new_part(const ts_swe *s, swe_part *p);
/* swe.c: the rain frame that holds at time t (-1: none), and the first frame time after t. */
int swe_rain_frame(const ts_swe *s, double t);
double swe_rain_next_time(const ts_swe *s, double t);
/* swe_part.c: the part's rain for a frame (-1: none), from the solver's frames. */
void swe_part_set_rain(swe_part *part, const ts_swe *s, int frame);
/* swe_part.c: building, destroying and describing parts. */
/* device: the CUDA device of the part when the solver's backend is cuda (ignored otherwise). */
ts_status swe_part_create(swe_part **out, const ts_swe *s, int sub, int device,
                          const swe_inputs *in);
void swe_part_destroy(swe_part *part);
/* The part's seconds of computation so far: wall clock of its phases on the CPU, the device's
 * busy time on its stream (events) for a GPU part. */
double swe_part_compute_seconds(swe_part *part);
/* A GPU part's host mirror: bring it up to date before host code reads it, and hand it back
 * (with velocities recomputed) after host code wrote the state or maxima. No-ops' equivalents on
 * the CPU (the second recomputes the velocities). */
void swe_part_to_host(swe_part *part);
void swe_part_changed_on_host(swe_part *part);
/* The state fields of a part for the halo engine: w, hu, hv, w_carry; with maxima also the
 * four maxima and the five records after them (for migration). Returns the number of fields. */
#define SWE_MIGRATED_FIELDS 3
int swe_part_fields(const swe_part *part, int with_maxima, ts_halo_field *out);

/* swe_step.c: the decomposed step, exchanges and rebuilding the parts. */
ts_status swe_step(ts_swe *s, double target, double *dt_taken);
/* Whether the steps can run on the devices alone (every part of the grid a GPU part of this
 * process, no tuning, speed probe or balancer timing under way), and such a run of up to max_steps
 * (ts_swe_advance): one part's graph, or for several parts graphs of all of them (the time
 * step from the speeds each published, the exchange of the cycle's last step). */
int swe_steps_on_device(const ts_swe *s);
/* ... whether every part of the grid is a GPU part of this process (runs on the devices can be
 * taken when no tuning or timing is under way). */
int swe_parts_on_devices(const ts_swe *s);
ts_status swe_run_on_device(ts_swe *s, double target, double stop, int max_steps,
                            swe_steps_report *report);
ts_status swe_finish_exchange(ts_swe *s);
/* Frees the recorded graphs of device runs over several parts (their plan or cells changed). */
void swe_drop_run_graphs(ts_swe *s);
ts_status swe_build_halo_plan(ts_swe *s);
/* Replaces the split (and halo width), with the devices of its subdomains (NULL: the same as
 * now, for a split of as many subdomains): parts whose window or device changes are rebuilt and
 * their owned cells migrated from the old owners (through MPI between ranks); then a full
 * exchange. The number of subdomains may change (a device dropped). */
ts_status swe_rebuild(ts_swe *s, const ts_decomp *d, const int *devices, int ghost_expansion);
/* swe.c: the OpenMP threads of the parts (a GPU part's one driving thread, the rest shared). */
void swe_assign_threads(ts_swe *s);

/* The tuner (swe_tune.c): set up once the parts exist (the rules it applies are logged);
 * whether probes are under way; a step of the run while they are (instead of swe_step); and a
 * decision taken by rule, for the log. */
void swe_tune_init(ts_swe *s);
int swe_tuning(const ts_swe *s);
ts_status swe_tune_step(ts_swe *s, double target, double *dt_taken);
ts_swe_decision *swe_tune_rule(ts_swe *s, const char *knob, const char *choice, const char *reason);

/* The load balancer (swe_balance.c): set up from the parameters once the parts exist; told the
 * steps taken after each advance (collective: it may move boundaries); and the seconds a phase
 * of part p took since t0, stretched for the subdomain TESSERA_TEST_SLOWDOWN names. */
ts_status swe_balance_init(ts_swe *s);
/* Before the split is made (kind resolved, count subdomains): with GPUs and the CPU listed, in
 * one process and with balance on, records the split asked for and returns the number of GPU
 * subdomains to start with (their devices in s->balance.trial_devices' GPU entries, in order);
 * otherwise returns count. */
int swe_balance_plan_cpu_trial(ts_swe *s, int count, ts_decomp_kind kind);
/* Weighs the split d for its devices (subdomain k on devices[k % ndevices], -1 the CPU): the
 * CPU's subdomains thin, a GPU assumed 64 times as fast until the balancer has measured both. */
ts_status swe_balance_thin_cpu(ts_decomp *d, const int *devices, int ndevices);
/* The device of subdomain `sub` of the starting split under a CPU trial. */
int swe_balance_trial_gpu(const ts_swe *s, int sub);
ts_status swe_balance_after_steps(ts_swe *s, int steps);
double swe_balance_slow_down(const ts_swe *s, const swe_part *p, double t0);

#endif
