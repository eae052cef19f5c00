/* Structured grids and fields: dimension-generic (2D and 3D) boxes of cells, and
 * structure-of-arrays fields with a ghost frame, padded rows and float or double storage.
 * Every physics module and the halo exchange address cells through these types. */
#ifndef TESSERA_GRID_H
#define TESSERA_GRID_H

#include <stddef.h>
#include <stdint.h>

#include "tessera/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A box of n[0] x n[1] x n[2] cells (n[2] = 1 in 2D). Cell (i,j,k) covers
 * [origin + (i,j,k) * dx, origin + (i+1,j+1,k+1) * dx); j grows northwards. */
typedef struct ts_grid {
  int dim;
  int n[3];
  double dx[3];
  double origin[3];
} ts_grid;

/* A 2D grid of nx x ny cells of size cellsize whose lower-left corner is (x0, y0). */
ts_grid ts_grid_2d(int nx, int ny, double cellsize, double x0, double y0);
int64_t ts_grid_cells(const ts_grid *g);

typedef enum ts_precision { TS_FLOAT = 4, TS_DOUBLE = 8 } ts_precision;

const char *ts_precision_name(ts_precision p);

/* ncomp components stored one after the other (SoA). Each component is a padded array of
 * (n + 2 ghost) cells per axis that has more than one cell; rows (axis 0) are padded to a
 * multiple of 32 elements so a GPU warp reads aligned rows. */
typedef struct ts_field {
  ts_grid grid;
  int ncomp;
  int ghost;
  ts_precision precision;
  int64_t stride[3];   /* elements between neighbours along each axis; stride[0] = 1 */
  int64_t comp_stride; /* elements between the same cell of two components */
  int64_t origin;      /* element index of interior cell (0,0,0) in component 0 */
  void *data;
} ts_field;

ts_status ts_field_create(ts_field *f, const ts_grid *g, int ncomp, int ghost, ts_precision p);
void ts_field_destroy(ts_field *f);

/* Element index of cell (i,j,k) of component c; i,j,k may lie in the ghost frame. */
static inline int64_t ts_field_index(const ts_field *f, int c, int i, int j, int k) {
  return f->origin + c * f->comp_stride + i + j * f->stride[1] + k * f->stride[2];
}

#ifdef __cplusplus
}
#endif
#endif
