/* Private state of the shallow-water solver shared by swe.c (precision-independent API) and
 * swe_kernels.c (compiled once per precision). All per-cell arrays share one padded layout: a
 * field on (nx+1) x (ny+1) points with a ghost frame of 2, so cells, faces and corners are all
 * addressed as origin + i + j * row for i in [-2, nx+2], j in [-2, ny+2]. */
#ifndef TESSERA_SWE_INTERNAL_H
#define TESSERA_SWE_INTERNAL_H

#include "tessera/swe.h"

#define SWE_GHOST 2

typedef struct swe_kernels swe_kernels;

struct ts_swe {
  ts_swe_params p;
  ts_grid grid;
  int nx, ny;
  int64_t row;      /* elements between (i,j) and (i,j+1) */
  int64_t origin;   /* element index of cell (0,0) */
  int64_t plane;    /* elements in one array of the layout */
  size_t real_size; /* 4 or 8 */
  const swe_kernels *k;

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

  /* Activity mask per tile. */
  int tiles_x, tiles_y;
  unsigned char *tile_wet, *tile_active;
  int *tile_list; /* indices of the active tiles, the work list of every pass */
  int ntile_list;
  int64_t active_tiles;

  /* Boundary hydrographs (owned copies) and active cell counts along each side. */
  double *bc_t[4], *bc_q[4];
  int bc_cells[4];

  int64_t active_cells;
  double t;
  int64_t steps;
};

struct swe_kernels {
  /* Fills bed, state, friction and masks from rasters already checked for geometry. */
  ts_status (*init)(ts_swe *s, const ts_raster *bed, const ts_raster *h0, const ts_raster *hu0,
                    const ts_raster *hv0, const ts_raster *friction);
  ts_status (*set_surface)(ts_swe *s, const ts_raster *eta);
  ts_status (*step)(ts_swe *s, double dt_max, double *dt_taken);
  double (*get_cell)(const ts_swe *s, ts_swe_var var, int i, int j);
  double (*volume)(const ts_swe *s);
  int64_t (*wet_cells)(const ts_swe *s);
  void (*update_diagnostics)(ts_swe *s); /* maxima and tile mask after a step or at t = 0 */
  void (*refresh_velocities)(ts_swe *s); /* u, v of every cell from the state */
};

extern const swe_kernels swe_kernels_float;
extern const swe_kernels swe_kernels_double;

static inline int64_t swe_index(const ts_swe *s, int i, int j) {
  return s->origin + i + j * s->row;
}

/* Discharge q (m3/s) of side `side` at time t from its hydrograph (linear, held at the ends). */
double swe_inflow_discharge(const ts_swe *s, int side, double t);

#endif
