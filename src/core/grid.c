/* Grid helpers and allocation of padded structure-of-arrays fields. */
#include "tessera/grid.h"

#include <stdlib.h>
#include <string.h>

ts_grid ts_grid_2d(int nx, int ny, double cellsize, double x0, double y0) {
  ts_grid g = {
      .dim = 2, .n = {nx, ny, 1}, .dx = {cellsize, cellsize, cellsize}, .origin = {x0, y0, 0}};
  return g;
}

int64_t ts_grid_cells(const ts_grid *g) { return (int64_t)g->n[0] * g->n[1] * g->n[2]; }

const char *ts_precision_name(ts_precision p) { return p == TS_DOUBLE ? "double" : "float"; }

ts_status ts_field_create(ts_field *f, const ts_grid *g, int ncomp, int ghost, ts_precision p) {
  memset(f, 0, sizeof *f);
  f->grid = *g;
  f->ncomp = ncomp;
  f->ghost = ghost;
  f->precision = p;
  int64_t ext[3];
  for (int a = 0; a < 3; a++)
    ext[a] = g->n[a] + (a < g->dim ? 2 * ghost : 0);
  int64_t row = (ext[0] + 31) / 32 * 32;
  f->stride[0] = 1;
  f->stride[1] = row;
  f->stride[2] = row * ext[1];
  f->comp_stride = f->stride[2] * ext[2];
  int64_t gk = g->dim > 2 ? ghost : 0;
  f->origin = ghost + ghost * f->stride[1] + gk * f->stride[2];
  size_t bytes = (size_t)(f->comp_stride * ncomp) * (size_t)p;
  f->data = aligned_alloc(128, (bytes + 127) / 128 * 128);
  if (!f->data)
    return ts_error(TS_ERR_NOMEM, "out of memory allocating a field of %zu bytes", bytes);
  memset(f->data, 0, bytes);
  return TS_OK;
}

void ts_field_destroy(ts_field *f) {
  free(f->data);
  f->data = NULL;
}
