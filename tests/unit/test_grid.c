/* Grids and fields: cell counts, padded rows, ghost frames in 2D and 3D, component strides, and
 * that every index of the interior and the ghost frame lies inside the allocation and is unique. */
#include <stdlib.h>
#include <string.h>

#include "tessera/grid.h"
#include "unit/check.h"

static void check_field(int dim, int nx, int ny, int nz, int ncomp, int ghost, ts_precision p) {
  ts_grid g = {.dim = dim, .n = {nx, ny, nz}, .dx = {1, 1, 1}, .origin = {0, 0, 0}};
  ts_field f;
  CHECK(ts_field_create(&f, &g, ncomp, ghost, p) == TS_OK, "%dD %dx%dx%d: created", dim, nx, ny,
        nz);
  CHECK(f.stride[1] % 32 == 0 && f.stride[1] >= nx + 2 * ghost, "%dD: row of %lld elements", dim,
        (long long)f.stride[1]);
  int gz = dim > 2 ? ghost : 0;
  int64_t total = f.comp_stride * ncomp;
  unsigned char *seen = calloc((size_t)total, 1);
  int inside = 1, unique = 1;
  for (int c = 0; c < ncomp; c++)
    for (int k = -gz; k < nz + gz; k++)
      for (int j = -ghost; j < ny + ghost; j++)
        for (int i = -ghost; i < nx + ghost; i++) {
          int64_t e = ts_field_index(&f, c, i, j, k);
          if (e < 0 || e >= total) {
            inside = 0;
            continue;
          }
          unique &= !seen[e];
          seen[e] = 1;
        }
  CHECK(inside, "%dD: all interior and ghost indices inside the allocation", dim);
  CHECK(unique, "%dD: no two cells share an element", dim);
  CHECK(ts_field_index(&f, 1, 0, 0, 0) - ts_field_index(&f, 0, 0, 0, 0) == f.comp_stride,
        "%dD: components are one plane apart", dim);
  memset(f.data, 0xff, (size_t)total * (size_t)p); /* the whole allocation is writable */
  free(seen);
  ts_field_destroy(&f);
  CHECK(f.data == NULL, "%dD: destroyed", dim);
}

int main(void) {
  ts_grid g2 = ts_grid_2d(865, 462, 20, 500, -2380);
  CHECK(ts_grid_cells(&g2) == 399630, "865 x 462 grid has 399630 cells");
  CHECK(g2.dim == 2 && g2.n[2] == 1, "a 2D grid has one layer");
  check_field(2, 37, 11, 1, 3, 2, TS_FLOAT);
  check_field(2, 64, 5, 1, 1, 4, TS_DOUBLE);
  check_field(3, 9, 7, 5, 19, 1, TS_FLOAT);
  printf("%d failure(s)\n", failures);
  return failures != 0;
}
