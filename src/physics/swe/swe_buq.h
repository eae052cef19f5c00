/* The shallow-water solver's block engine on a block-uniform quadtree grid (tessera/buq.h):
 * the state of each leaf block in a window of its M x M cells with a ghost frame of SWE_GHOST
 * cells, the stages of swe_stage.h on every leaf, ghost cells filled from the neighbours (a
 * copy on the same level, restriction from finer ones, prolongation from coarser ones), fluxes
 * at level interfaces computed once from both sides' reconstructions (a coarse face takes the
 * mean of its two fine faces: volume kept to rounding; each side keeps its own hydrostatic
 * reconstruction: a lake at rest stays at rest). One global time step, the finest level's. The
 * leaves may be cut into partitions (on the CPU, on several GPUs, over MPI ranks), exchanging
 * through the halo engine: the same bits under any partition.
 * Compiled once per precision (swe_buq_ops_float, swe_buq_ops_double); ts_swe (swe.c) holds
 * one engine in place of its parts when [grid] type = buq. */
#ifndef TESSERA_SWE_BUQ_H
#define TESSERA_SWE_BUQ_H

#include "physics/swe/swe_internal.h"

/* The operations of an engine (void *: the engine of its precision). */
typedef struct swe_buq_ops {
  /* Builds the grid from the bed and the rules of p->grid, and the state from `in` (h0, hu0,
   * hv0, friction). surface: the water surface the rule refine_water looks at (NULL: h0's
   * depths). The leaves are cut into `parts` partitions; part i runs on rank part_rank[i] of
   * comm (each rank's parts consecutive), on CUDA device part_device[i] (-1: the CPU; read for
   * this rank's parts). Collective, as are step, set_rain, probe, value, get, leaf_values,
   * active_blocks, save and load: the maps, leaf values and checkpoints come whole to rank 0,
   * probes to every rank; volume, losses and wet_cells count this rank's cells. */
  ts_status (*create)(void **out, const ts_swe_params *p, const swe_inputs *in,
                      const ts_raster *surface, int threads, const ts_comm *comm, int parts,
                      const int *part_rank, const int *part_device);
  void (*destroy)(void *e);
  void (*set_surface)(void *e, const ts_raster *eta);
  /* Steps from t towards target (the last shortened to land on it), each at most step_max long
   * (the rain's limit, INFINITY), with its rain and losses, as ts_swe_advance takes them: a
   * grid in one part on a GPU takes up to max_steps (at most TS_SWE_ADVANCE_MAX), ending after
   * the first that reaches stop, on the device; otherwise one step. Returns TS_ERR_NUMERIC on
   * a non-finite value or a collapsed step. */
  ts_status (*advance)(void *e, double t, double target, double stop, double step_max,
                       int max_steps, ts_swe_run *out);
  /* The finest cells (i[q], j[q]) whose values every step of advance keeps (gauges);
   * probe_step gives probe's values after step k of the last advance, of watched cells. */
  ts_status (*watch)(void *e, int n, const int *i, const int *j);
  void (*probe_step)(const void *e, int k, int n, const int *i, const int *j, const ts_swe_var *var,
                     double *out);
  /* The rain of a frame from now on: a grid of rates (m/s, the bed's geometry, NODATA: none;
   * each cell takes the mean over its bed cells) or, grid NULL, the uniform rate. Returns the
   * rate summed over the active cells, each times its area in finest cells (the budget's rain
   * per second over the finest cell's area). */
  double (*set_rain)(void *e, const ts_raster *grid, double rate);
  /* The water the losses took so far, in finest-cell units, summed exactly. */
  void (*losses)(const void *e, ts_exact_sum *sum);
  /* The value of var at finest cell (i, j) inside the grid: that of the leaf cell covering it
   * (NaN where inactive). */
  double (*value)(const void *e, ts_swe_var var, int i, int j);
  /* Values of var[q] at finest cells (i[q], j[q]) (NaN outside or inactive). */
  void (*probe)(const void *e, int n, const int *i, const int *j, const ts_swe_var *var,
                double *out);
  /* The leaf cells, leaf by leaf (cell i + M j of each): their number, and with non-NULL
   * arrays each one's lower-left finest cell, width in finest cells and level; leaf_values the
   * values of var on them in that order (NaN: inactive). */
  int64_t (*leaf_cells)(const void *e, int *i0, int *j0, int *width, int *level);
  void (*leaf_values)(const void *e, ts_swe_var var, double *out);
  /* The whole finest grid, out[i + nx j]. */
  void (*get)(const void *e, ts_swe_var var, double *out);
  /* Water volume in finest-cell units (m3 over the finest cell's area), summed exactly. */
  void (*volume)(const void *e, ts_exact_sum *sum);
  int64_t (*wet_cells)(const void *e); /* leaf cells deeper than dry_depth */
  int64_t (*active_blocks)(const void *e, int64_t *blocks);
  void (*stats)(const void *e, ts_swe_grid_stats *out);
  /* Checkpoint state: the leaves' state and maxima, in leaf order (bytes: its size). */
  size_t (*state_bytes)(const void *e);
  void (*save)(const void *e, void *blob);
  void (*load)(void *e, const void *blob);
  /* What the balance did ([parallel] balance: in one process the leaves move between the
   * partitions as the water moves; the imbalance is that of the leaves' costs). */
  void (*balance)(const void *e, ts_swe_balance *out);
} swe_buq_ops;

/* The passes of a step on a part's leaves, on the CPU (swe_buq.c, x: the part) or a CUDA device
 * (swe_buq.cu, x: its mirror of the arrays); view: the part's swe_buq_view (swe_buq_leaf.h) of
 * the precision. attach makes the device's mirror, upload and download copy the state,
 * velocities and maps, read_cells those of a few cells, mirror gives the device's view (the
 * CPU has none of them); choose marks the leaves of the step (buq_leaf_on of those holding
 * water; without early exit all) and returns whether they differ from the last step's (on a
 * device, `on` is filled only then); set_list gives the leaves of the
 * step and those dropped from it (their fluxes zeroed): update and record take list[0 ..
 * counts[0]), limit (limiters of the cells and their first ghost ring) counts[1], fluxes counts[2]
 * (with `speeds`, keeping the largest wave speeds per level, x and y, which speeds then gives:
 * the devices of several parts work at once), ghosts counts[3]; update gets the time the step
 * ends at (a device may record the maps of some leaves with their last stage); sources (rain
 * and losses) run on the part's own leaves; take_bad returns and clears the non-finite flag of
 * the updates; set_rain takes the view's rain (array and rate); finish waits for the work
 * queued on the device (NULL: none is queued). */
/* A run of steps on a device: its steps, and whether it ended on a non-finite value or a
 * collapsed step (of length collapsed_dt). */
typedef struct swe_buq_steps {
  ts_swe_run run;
  int bad, collapsed;
  double collapsed_dt;
} swe_buq_steps;

typedef struct swe_buq_passes {
  ts_status (*attach)(void **x, const void *view, int nblocks, int levels, int device);
  void (*release)(void *x);
  void (*upload)(void *x, const void *view);
  void (*download)(void *x, void *view);
  /* n cells only: cells[2q] the window element, cells[2q + 1] the maps' element (state,
   * velocities and maps into the host's view) */
  void (*read_cells)(void *x, void *view, int n, const int64_t *cells);
  const void *(*mirror)(const void *x);
  int (*choose)(void *x, int early_exit, unsigned char *on);
  void (*set_list)(void *x, const int *list, const int counts[4], const int *dropped, int ndropped);
  void (*ghosts)(void *x);
  void (*fluxes)(void *x, int speeds);
  void (*speeds)(void *x, double amax[][2]);
  void (*limit)(void *x, double dt);
  void (*update)(void *x, double dt, int stage, double t_after);
  int (*take_bad)(void *x);
  void (*record)(void *x, double t, double dt);
  void (*sources)(void *x, double dt);
  void (*set_rain)(void *x, const void *view);
  void (*finish)(void *x);
  /* The device's passes (NULL on the CPU) take the step's length and end time from a clock in
   * device memory, not from their arguments: set_step gives them (steps the host drives), or a
   * run of steps keeps them there (a part alone in its process): begin_steps starts it from t
   * towards target (steps shortened to land on it, none longer than step_max), ending after the
   * first step that reaches stop, the leaves of its first step marked on the device, where
   * every leaf is then listed (set_list once with all of them) and the passes skip those out of
   * the step; in each step time_step computes its length from the wave speeds after the first
   * stage's fluxes, and end_step (after the maps and sources) records the watched cells, marks
   * the next step's leaves and ends the run after a non-finite value, at stop or target, or
   * after TS_SWE_ADVANCE_MAX steps (the passes of later steps do nothing). capture_step(x, 1)
   * starts recording the passes of one step into a CUDA graph, returning 0 when the part has
   * one already, capture_step(x, 0) ends it; run_steps launches the graph n times;
   * finish_steps waits and reports. watch: the cells (pairs as read_cells') whose values each
   * step of a run keeps; watched_to_host puts those after step k of the last run into the
   * host's view; leaves_on gives the leaves of the last step of the last run. */
  void (*set_step)(void *x, double dt, double t_after);
  void (*begin_steps)(void *x, double t, double target, double stop, double step_max,
                      int early_exit);
  void (*time_step)(void *x, double cfl, double dx);
  void (*end_step)(void *x);
  int (*capture_step)(void *x, int begin);
  void (*run_steps)(void *x, int n);
  void (*finish_steps)(void *x, swe_buq_steps *out);
  ts_status (*watch)(void *x, int n, const int64_t *cells);
  void (*watched_to_host)(void *x, void *view, int k, const int64_t *cells);
  void (*leaves_on)(void *x, unsigned char *on);
  /* Runs of steps over several GPU parts of one process, recorded as one graph (swe_buq.c:
   * the exchange between the stages and after a step queued on the devices): stream gives the
   * part's stream (a cudaStream_t); stream_after makes what is queued on `stream` from now on
   * wait for the part's work queued so far, after_stream the part's later work wait for
   * `stream`'s (a stream of the part's device); share_speeds publishes the first stage's wave
   * speeds of each level, and once the parts waited for each other, time_step_over computes the
   * step from the largest of those the n parts (their x) published; joined(x, 1) notes that
   * the part's passes, as they stand, are being recorded into the graph of several parts, and
   * joined(x, 0) whether they still stand so (no list, cells or rain changed since, the same
   * early exit). */
  void *(*stream)(void *x);
  void (*stream_after)(void *x, void *stream);
  void (*after_stream)(void *x, void *stream);
  void (*share_speeds)(void *x);
  void (*time_step_over)(void *x, void *const *parts, int n, double cfl, double dx);
  int (*joined)(void *x, int record);
  /* Leaves moved between the GPU parts of one process, device to device (NULL on the CPU): leaf
   * l of this part (just attached) takes every array of leaf slot[l] of old part part_of[l] (old:
   * the nold old parts' x, idle), as upload would put it; the host's view stays stale */
  ts_status (*take_leaves)(void *x, void *const *old, int nold, const int *part_of,
                           const int *slot);
  /* RK2's first stage writes its state into (w0, hu0, hv0) and keeps the start of the step in
   * (w, hu, hv), where the second stage writes the step's end: the exchange between the stages
   * moves (w0, hu0, hv0) (the device's); 0: the stages update (w, hu, hv) in place */
  int stage_apart;
} swe_buq_passes;

#if TESSERA_HAVE_CUDA
extern const swe_buq_passes swe_buq_gpu_float;
extern const swe_buq_passes swe_buq_gpu_double;
#endif

extern const swe_buq_ops swe_buq_ops_float;
extern const swe_buq_ops swe_buq_ops_double;
#if TESSERA_CPU_DISPATCH /* the x86-64-v3 and v4 builds of the same engine (tessera/cpu.h) */
extern const swe_buq_ops swe_buq_ops_float_v3;
extern const swe_buq_ops swe_buq_ops_float_v4;
extern const swe_buq_ops swe_buq_ops_double_v3;
extern const swe_buq_ops swe_buq_ops_double_v4;
#endif

#endif
