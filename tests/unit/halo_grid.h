/* The grid shared by the halo engine's tests (unit.halo, mpi.halo_transport): an uneven
 * 11 x 7 x 6 grid in 8 subdomains, five components per cell with a value that names the cell,
 * windows around the owned boxes, and the check of every halo value after an exchange. */
#ifndef TESSERA_TESTS_HALO_GRID_H
#define TESSERA_TESTS_HALO_GRID_H

#include "tessera/halo.h"

enum { NX = 11, NY = 7, NZ = 6, NCOMP = 5, COUNT = 8 };

static inline double value(int c, int x, int y, int z) {
  return 1000.0 * c + x + 20.0 * y + 400.0 * z;
}

/* One subdomain's window and its components (x fastest). */
typedef struct sub_data {
  ts_box win;
  double *comp[NCOMP];
} sub_data;

static inline double *at(sub_data *d, int c, int x, int y, int z) {
  int sx = d->win.hi[0] - d->win.lo[0], sy = d->win.hi[1] - d->win.lo[1];
  return &d->comp[c][(x - d->win.lo[0]) + sx * ((y - d->win.lo[1]) + sy * (z - d->win.lo[2]))];
}

/* The halo values of the subdomains s with ranks[s] == me (every one where ranks is NULL) that
 * differ from the owner's value of a component crossing towards them (the cell wrapped round the
 * grid where the window reaches past it: periodic axes) or, for components that do not cross,
 * from -1; *received counts the values that cross. */
static inline long halo_values_wrong(const ts_decomp *dc, sub_data *subs, const uint32_t *mask,
                                     const int *ranks, int me, long *received) {
  int n[3] = {NX, NY, NZ};
  long wrong = 0;
  *received = 0;
  for (int s = 0; s < dc->count; s++) {
    if (ranks && ranks[s] != me)
      continue;
    const ts_box *w = &subs[s].win, *own = &dc->boxes[s];
    for (int z = w->lo[2]; z < w->hi[2]; z++)
      for (int y = w->lo[1]; y < w->hi[1]; y++)
        for (int x = w->lo[0]; x < w->hi[0]; x++) {
          int cell[3] = {x, y, z}, dir[3], home[3];
          if (ts_box_contains(own, cell))
            continue;
          for (int a = 0; a < 3; a++) {
            dir[a] = cell[a] < own->lo[a] ? -1 : (cell[a] >= own->hi[a] ? 1 : 0);
            home[a] = (cell[a] + n[a]) % n[a];
          }
          int d = ts_halo_dir(dir[0], dir[1], dir[2]);
          for (int c = 0; c < NCOMP; c++) {
            int crosses = mask[d] >> c & 1u;
            double want = crosses ? value(c, home[0], home[1], home[2]) : -1;
            wrong += *at(&subs[s], c, x, y, z) != want;
            *received += crosses;
          }
        }
  }
  return wrong;
}

#endif
