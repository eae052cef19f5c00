/* The shallow-water solver's block engine on a block-uniform quadtree grid (tessera/buq.h):
 * the state of each leaf block in a window of its M x M cells with a ghost frame of SWE_GHOST
 * cells, the stages of swe_stage.h on every leaf, ghost cells filled from the neighbours (a
 * copy on the same level, restriction from finer ones, prolongation from coarser ones), fluxes
 * at level interfaces computed once from both sides' reconstructions (a coarse face takes the
 * mean of its two fine faces: volume kept to rounding; each side keeps its own hydrostatic
 * reconstruction: a lake at rest stays at rest). One global time step, the finest level's.
 * Compiled once per precision (swe_buq_ops_float, swe_buq_ops_double); ts_swe (swe.c) holds
 * one engine in place of its parts when [grid] type = buq. */
#ifndef TESSERA_SWE_BUQ_H
#define TESSERA_SWE_BUQ_H

#include "physics/swe/swe_internal.h"

/* The operations of an engine (void *: the engine of its precision). */
typedef struct swe_buq_ops {
  /* Builds the grid from the bed and the rules of p->grid, and the state from `in` (h0, hu0,
   * hv0; friction must be NULL). surface: the water surface the rule refine_water looks at
   * (NULL: h0's depths). */
  ts_status (*create)(void **out, const ts_swe_params *p, const swe_inputs *in,
                      const ts_raster *surface, int threads);
  void (*destroy)(void *e);
  void (*set_surface)(void *e, const ts_raster *eta);
  /* One step from t towards target (shortened to land on it): *dt the step, *t_after the time
   * after it. Returns TS_ERR_NUMERIC on a non-finite value or a collapsed step. */
  ts_status (*step)(void *e, double t, double target, double *dt, double *t_after);
  /* The value of var at finest cell (i, j) inside the grid: that of the leaf cell covering it
   * (NaN where inactive). */
  double (*value)(const void *e, ts_swe_var var, int i, int j);
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
} swe_buq_ops;

extern const swe_buq_ops swe_buq_ops_float;
extern const swe_buq_ops swe_buq_ops_double;

#endif
