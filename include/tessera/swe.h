/* Shallow-water solver (Kurganov-Petrova central-upwind scheme with a well-balanced wet/dry
 * treatment) on one structured 2D grid, split into subdomains over threads and MPI ranks:
 * creation from rasters, time stepping, access to the state, maxima tracking, checkpoint state
 * and moving subdomain boundaries. Every result is the same, bit for bit, whatever the split.
 * Calls marked "collective" must be made by every rank. See docs/ARCHITECTURE.md, docs/swe.md. */
#ifndef TESSERA_SWE_H
#define TESSERA_SWE_H

#include <stdint.h>

#include "tessera/decomp.h"
#include "tessera/error.h"
#include "tessera/grid.h"
#include "tessera/raster.h"
#include "tessera/transport.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ts_swe ts_swe;

enum { TS_WEST = 0, TS_EAST = 1, TS_SOUTH = 2, TS_NORTH = 3 };

typedef enum ts_bc_type {
  TS_BC_WALL = 0, /* reflective wall */
  TS_BC_OUTFLOW,  /* free outflow: zero-gradient extrapolation */
  TS_BC_LEVEL,    /* fixed water-surface elevation `level` (m), momentum extrapolated */
  TS_BC_INFLOW    /* discharge hydrograph: total discharge q(t) (m3/s) into the domain */
} ts_bc_type;

typedef struct ts_swe_bc {
  ts_bc_type type;
  double level;        /* TS_BC_LEVEL */
  int npoints;         /* TS_BC_INFLOW: hydrograph points (t[s], q[m3/s]), linear in between */
  const double *t, *q; /* owned by the caller; copied by ts_swe_create */
} ts_swe_bc;

typedef enum ts_friction {
  TS_FRICTION_NONE = 0,
  TS_FRICTION_MANNING,
  TS_FRICTION_CHEZY
} ts_friction;

typedef enum ts_backend { TS_BACKEND_CPU = 0, TS_BACKEND_CUDA, TS_BACKEND_AUTO } ts_backend;

#define TS_MAX_DEVICES 64

/* The CUDA backend's stage kernels. Tiles: a block per tile of cells in shared memory, the
 * faster one on small or partly dry parts. Rows: a warp marches up a strip of columns with the
 * cells in registers, the faster one on large wet parts. Auto takes rows for regions of at least
 * TS_SWE_ROWS_MIN_CELLS cells of a part that does not skip dry tiles (early exit off, or auto
 * on a grid that is wet almost everywhere). */
typedef enum { TS_SWE_GPU_AUTO = 0, TS_SWE_GPU_TILES, TS_SWE_GPU_ROWS } ts_swe_gpu_kernels;
#define TS_SWE_ROWS_MIN_CELLS (1 << 22)

/* Load balance at run time (splits into bands of rows or columns on the CPU backend): off;
 * static: once, after the first rebalance_interval steps, from the measured cost of each
 * subdomain; dynamic: every rebalance_interval steps, when the gain beats the cost of moving.
 * Auto is off for now. The results do not change. */
typedef enum {
  TS_BALANCE_AUTO = 0,
  TS_BALANCE_OFF,
  TS_BALANCE_STATIC,
  TS_BALANCE_DYNAMIC
} ts_balance_mode;

/* How the grid is split and the halo exchanged, and where it runs. */
typedef struct ts_swe_parallel {
  ts_backend backend;           /* cpu (default), cuda, or auto (cuda when a GPU is there) */
  int ndevices;                 /* GPUs to use (0: all of this process's node) */
  int devices[TS_MAX_DEVICES];  /* their indices; subdomains of a rank go round-robin */
  int subdomains;               /* over all ranks; 0: one per rank */
  ts_decomp_kind decomposition; /* default auto: the fewest cut faces */
  int parts[2];                 /* px, py for tiles (0: chosen) */
  int ghost_expansion;          /* steps between halo exchanges, 1..8; 0: auto; default 1 */
  int overlap;                  /* exchange behind interior computation, default 1 */
  ts_transport_kind transport;  /* halos between GPU ranks: auto (default), host, cuda-mpi, nccl */
  ts_swe_gpu_kernels kernels;   /* CUDA stage kernels (same results), default auto */
  int nweights;                 /* 0, or the number of subdomains: their relative sizes */
  const double *weights;        /* (ts_decomp_weigh; copied by ts_swe_create) */
  ts_balance_mode balance;      /* default auto */
  int rebalance_interval;       /* steps between measurements (0: auto, 100) */
} ts_swe_parallel;

/* Rain: frames of a rate constant in time, frame k from t[k] to t[k + 1] (the last one to
 * `end`), each either one rate for every cell or a grid of rates. Steps are shortened to land
 * on the frame times, so a frame's rain enters exactly. No rain before t[0] or after `end`. */
typedef struct ts_swe_rain {
  int nframes;            /* 0: no rain */
  const double *t;        /* start of each frame (s), increasing */
  double end;             /* end of the last frame (s), INFINITY for none */
  const double *rate;     /* uniform frames: the rate (m/s) of each; NULL with grids */
  const ts_raster *grids; /* grid frames: rate (m/s) per cell (NODATA: none), bed's geometry */
} ts_swe_rain;

/* Losses (initial and continuing): a cell loses what is left of its initial loss, then the
 * continuing loss rate, never more water than it holds. */
typedef struct ts_swe_losses {
  double initial, rate;                      /* m and m/s, where no grid is given */
  const ts_raster *initial_grid, *rate_grid; /* per cell, bed's geometry (NULL: the numbers) */
} ts_swe_losses;

/* The grid the solver computes on: the bed's uniform grid (default), or a block-uniform
 * quadtree (tessera/buq.h) whose finest cells are the bed's, coarser where the rules below ask
 * no finer cells (the rules combine: each cell gets the finest size any of them asks). The bed
 * of a coarse cell is the mean of the DEM cells it covers; ts_swe_get, probes, maxima and
 * checkpoints keep reading and writing the bed's grid (a coarse cell's value in every finest
 * cell it covers). */
typedef enum ts_swe_grid_type { TS_GRID_UNIFORM = 0, TS_GRID_BUQ } ts_swe_grid_type;
typedef struct ts_swe_grid_params {
  ts_swe_grid_type type;
  int block;               /* cells along a block's side: 16 (default) or 8 */
  int levels;              /* 1 (default) to TS_BUQ_MAX_LEVELS: coarsest cells 2^(levels-1) wide */
  const ts_raster *refine; /* wanted cell size (m) per cell, bed's geometry (NODATA: no wish);
                              read by ts_swe_create only; NULL: none */
  double refine_slope;     /* the finest cells where the bed is steeper (m/m); 0: no rule */
  int refine_water;        /* the finest cells within this many cells of water at the start;
                              -1: no rule */
  const ts_raster *water_surface; /* refine_water's water: where this surface (the case's
                                     initial surface, set after creation) lies above the bed;
                                     NULL: h0's depths. Read by ts_swe_create only */
} ts_swe_grid_params;

/* What a quadtree grid holds (ts_swe_grid_info): blocks and cells per level (level 0 the
 * finest), cells of the uniform grid of the finest cells, and the bytes of the solver's arrays
 * against those the uniform grid's solver would hold. */
typedef struct ts_swe_grid_stats {
  int levels, block;
  int partitions; /* a quadtree's partitions over all ranks (0 on the uniform grid) */
  int blocks_per_level[8];
  int64_t cells_per_level[8];
  int64_t cells, cells_uniform_finest;
  double bytes, bytes_uniform_finest;
} ts_swe_grid_stats;

/* The default edge (cells) of the early-exit tiles, as a number and as the case file's text. */
#define TS_SWE_TILE_SIZE 16
#define TS_SWE_TILE_SIZE_TEXT "16"

typedef struct ts_swe_params {
  ts_precision precision; /* storage and arithmetic precision of the state */
  double gravity;         /* m/s2, default 9.81 */
  double cfl;             /* Courant number, default 0.25 */
  double theta;           /* generalised minmod parameter in [1,2], default 1.3 */
  int rk_order;           /* 1: forward Euler, 2: SSP Runge-Kutta (default) */
  double dry_depth;       /* depth (m) at or below which a cell is dry, default 1e-4 */
  ts_friction friction;
  double friction_value; /* Manning n (s/m^(1/3)) or Chezy C (m^(1/2)/s) where no grid given */
  int tile_size;  /* edge of the square tiles of the activity mask (>= 2), TS_SWE_TILE_SIZE */
  int early_exit; /* skip tiles that are dry with dry neighbours (same result): 1 on (default),
                     0 off, -1 auto (on unless nearly every tile is active at the first step) */
  double arrival_depth; /* depth (m) that defines the first arrival time, default 0.01 */
  ts_swe_bc bc[4];      /* indexed by TS_WEST..TS_NORTH */
  ts_swe_rain rain;     /* copied by ts_swe_create */
  ts_swe_losses losses; /* copied by ts_swe_create */
  ts_swe_parallel parallel;
  ts_swe_grid_params grid;
} ts_swe_params;

/* Fills p with the defaults listed above (walls on all sides, no friction, float). */
void ts_swe_params_default(ts_swe_params *p);

/* Collective. Creates a solver on the grid of `bed` (cell-centred elevations; NODATA cells become
 * inactive wall cells). h0 is the initial depth (NULL: dry); hu0/hv0 the initial unit discharges
 * (NULL: 0); friction_grid a per-cell friction coefficient (NULL: params->friction_value). All
 * rasters must have the geometry of bed. Values of h0 on inactive cells are ignored. */
ts_status ts_swe_create(ts_swe **out, const ts_swe_params *params, const ts_raster *bed,
                        const ts_raster *h0, const ts_raster *hu0, const ts_raster *hv0,
                        const ts_raster *friction_grid);
void ts_swe_destroy(ts_swe *s);

/* Sets the water surface to eta (m) on active cells where eta is above the bed and not NODATA,
 * dry elsewhere, and restarts the maxima. A lake defined this way is exactly at rest. */
ts_status ts_swe_set_surface(ts_swe *s, const ts_raster *eta);

/* Collective. Advances one full time step with dt = min(CFL time step, dt_max): the step of
 * ts_swe_advance towards target = time + dt_max, so a step shortened to dt_max lands on that
 * target (its length is target - time, which may differ from dt_max in the last bit). *dt_taken
 * gets the step. Fails with TS_ERR_NUMERIC if the state becomes non-finite. */
ts_status ts_swe_step(ts_swe *s, double dt_max, double *dt_taken);

/* The steps of one ts_swe_advance: how many, and the time after and length of each. */
#define TS_SWE_ADVANCE_MAX 64
typedef struct ts_swe_run {
  int taken;
  double t[TS_SWE_ADVANCE_MAX], dt[TS_SWE_ADVANCE_MAX];
} ts_swe_run;

/* Collective. Takes up to max_steps (at most TS_SWE_ADVANCE_MAX) steps towards `target` > time:
 * a step that would pass it is shortened to land on it, and the steps end there or after the
 * first one that reaches `stop`. The same steps as ts_swe_step with dt_max = target - time,
 * taken one by one; GPU parts take them all on the devices (a CUDA graph per step, the time
 * step computed there; the parts of one process, or one part per rank exchanging through NCCL)
 * and the host looks only at the end. Fails
 * with TS_ERR_NUMERIC if the state becomes non-finite. */
ts_status ts_swe_advance(ts_swe *s, double target, double stop, int max_steps, ts_swe_run *out);

double ts_swe_time(const ts_swe *s);
int64_t ts_swe_steps(const ts_swe *s);
const ts_grid *ts_swe_grid(const ts_swe *s);
const ts_swe_params *ts_swe_get_params(const ts_swe *s);

typedef enum ts_swe_var {
  TS_SWE_H = 0, /* depth (m) */
  TS_SWE_HU,    /* unit discharge x (m2/s) */
  TS_SWE_HV,    /* unit discharge y (m2/s) */
  TS_SWE_ETA,   /* water-surface elevation (m) */
  TS_SWE_BED,   /* cell bed as the scheme sees it: the mean of its four corners */
  TS_SWE_U,     /* velocity x (m/s), 0 in dry cells */
  TS_SWE_V,     /* velocity y (m/s) */
  TS_SWE_SPEED, /* |velocity| (m/s) */
  TS_SWE_MAX_H, /* maximum depth since t = 0 */
  TS_SWE_MAX_SPEED,
  TS_SWE_ARRIVAL,    /* first time the depth exceeded arrival_depth, NaN where it never did */
  TS_SWE_MAX_ETA,    /* maximum water-surface elevation (NaN where never wet) */
  TS_SWE_DURATION,   /* time (s) spent deeper than arrival_depth */
  TS_SWE_MAX_HAZARD, /* maximum hazard rating depth x (speed + 0.5) (m2/s) */
  TS_SWE_LOSS        /* water taken by the losses so far (m) */
} ts_swe_var;

/* Collective. Copies a variable into out[i + j * nx] (j = 0 south) in double on rank 0 (out is
 * not touched elsewhere and may be NULL); inactive cells get NaN. */
ts_status ts_swe_get(const ts_swe *s, ts_swe_var var, double *out);

/* Collective. ts_swe_get of n variables, var[q] into out[q], with one copy of the state from the
 * devices for all of them. */
ts_status ts_swe_get_many(const ts_swe *s, int n, const ts_swe_var *var, double *const *out);

/* Collective. Values of var[k] at cells (i[k], j[k]) (NaN outside the grid or inactive), on
 * every rank. */
ts_status ts_swe_probe(const ts_swe *s, int n, const int *i, const int *j, const ts_swe_var *var,
                       double *out);

/* Cells (i[k], j[k]) whose state is recorded after every step of ts_swe_advance, so that
 * ts_swe_probe_step can read them at any of its steps (gauges). Replaces the previous list. */
ts_status ts_swe_watch(ts_swe *s, int n, const int *i, const int *j);

/* Collective. ts_swe_probe after step k (0 <= k < taken) of the last ts_swe_advance, for
 * watched cells (ts_swe_probe reads any cell after the last step). */
ts_status ts_swe_probe_step(const ts_swe *s, int k, int n, const int *i, const int *j,
                            const ts_swe_var *var, double *out);

/* Collective. Value of a variable at one cell (i, j), on every rank. */
double ts_swe_get_cell(const ts_swe *s, ts_swe_var var, int i, int j);

/* Collective. Water volume (m3) over active cells, summed exactly (the same bits for any split). */
double ts_swe_volume(const ts_swe *s);
int64_t ts_swe_active_cells(const ts_swe *s); /* cells that are not NODATA */

/* Volumes (m3) that entered and left since t = 0: rain, through the open sides (inflow and
 * outflow, whatever their kind), and to the losses. Each is summed exactly over the cells, so
 * it is the same for any split; the water volume then closes the budget to rounding. */
typedef struct ts_swe_budget {
  double rain, inflow, outflow, losses;
} ts_swe_budget;
/* Collective. */
ts_status ts_swe_budget_get(const ts_swe *s, ts_swe_budget *out);
int64_t ts_swe_wet_cells(const ts_swe *s); /* collective: active cells with depth > dry_depth */

/* Collective. Activity of the tiles of the whole grid: a tile is active when it or one of its 8
 * neighbours holds water. Subdomains skip their own tiles by the same rule (early exit). */
void ts_swe_tiles(const ts_swe *s, int *ntiles_x, int *ntiles_y, int64_t *active_tiles);

/* ---- decomposition */

/* The current split (boxes of cells per subdomain) and the ranks. */
const ts_decomp *ts_swe_decomp(const ts_swe *s);
int ts_swe_ranks(const ts_swe *s);
int ts_swe_ghost_expansion(const ts_swe *s); /* steps between exchanges in use */
int ts_swe_early_exit(const ts_swe *s);      /* 1 when dry tiles are skipped */
ts_backend ts_swe_backend(const ts_swe *s);  /* the backend in use (auto resolved) */
/* How halos move: "memory" (one process), "mpi" (CPU ranks), or the GPU transport between
 * ranks: "host", "cuda-mpi", "nccl". */
const char *ts_swe_transport(const ts_swe *s);

/* Collective. Moves the boundary between neighbouring subdomains a and b by delta cells
 * (delta > 0: a grows); only the cells that change owner move. Results do not change. */
ts_status ts_swe_move_boundary(ts_swe *s, int a, int b, int delta);

/* What the load balancer did: the mode in use, boundary moves, cells that changed owner, the
 * seconds spent moving, and the imbalance (largest compute time of a subdomain over the mean)
 * of the first and of the last interval measured (0 when none was). */
typedef struct ts_swe_balance {
  ts_balance_mode mode;
  int rebalances;
  int64_t moved_cells;
  double move_seconds, imbalance_before, imbalance_after;
} ts_swe_balance;
void ts_swe_balance_get(const ts_swe *s, ts_swe_balance *out);

/* One decision of the run-time tuner (summary.json "tuning"): the knob, the simulated time it
 * was taken at, the value chosen, and the candidates with their measured seconds (slowest rank),
 * or none when a rule chose (reason says which, and why). */
#define TS_SWE_MAX_CANDIDATES 4
typedef struct ts_swe_decision {
  char knob[24];
  double t;
  char choice[24];
  int ncandidates;
  char candidates[TS_SWE_MAX_CANDIDATES][16];
  double seconds[TS_SWE_MAX_CANDIDATES];
  char reason[200];
} ts_swe_decision;
/* The decisions so far (their number) and the seconds the probes cost beyond what the chosen
 * settings would have taken. */
int ts_swe_tuning_get(const ts_swe *s, const ts_swe_decision **decisions, double *tuning_seconds);

/* Seconds spent by one subdomain since creation: computing, packing (and in-process copies),
 * waiting for messages, unpacking. */
typedef struct ts_swe_sub_stats {
  int rank;
  int device; /* CUDA device, -1 on the CPU */
  ts_box box;
  double compute, pack, wait, unpack;
} ts_swe_sub_stats;

/* Collective. Fills stats[0 .. subdomains) on every rank. */
ts_status ts_swe_stats(const ts_swe *s, ts_swe_sub_stats *stats);

/* Checkpoint state: everything the solver needs to continue bit for bit (time, step count,
 * conserved variables, maxima), in the order of the whole grid, so the blob does not depend on
 * the split. Save is collective and fills the blob on rank 0 (NULL elsewhere is fine); load
 * takes the whole blob on every rank. Portable between runs of one build. */
ts_status ts_swe_checkpoint_size(const ts_swe *s, size_t *bytes);
ts_status ts_swe_checkpoint_save(const ts_swe *s, void *blob, size_t bytes);
ts_status ts_swe_checkpoint_load(ts_swe *s, const void *blob, size_t bytes);

/* A quadtree grid's leaf cells (0 on a uniform grid): their number, and with non-NULL arrays
 * (that many entries) each one's lower-left finest cell (i0, j0), width in finest cells and
 * level; ts_swe_leaf_values: the values of var on them, in that order (NaN: inactive). */
int64_t ts_swe_leaf_cells(const ts_swe *s, int *i0, int *j0, int *width, int *level);
ts_status ts_swe_leaf_values(const ts_swe *s, ts_swe_var var, double *out);

/* The quadtree grid in use (zeros and levels 0 on a uniform grid); returns 1 on a quadtree. */
int ts_swe_grid_info(const ts_swe *s, ts_swe_grid_stats *out);

/* Bytes one cell update moves in a full time step (for the benchmark's roofline figure). */
double ts_swe_bytes_per_cell_step(const ts_swe *s);

#ifdef __cplusplus
}
#endif
#endif
