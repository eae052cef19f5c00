/* The terrain shared by the early-exit tests (unit.swe_early_exit, unit.swe_buq): a 97 x 61
 * slope with waves and a NODATA hole, a dam of water at its west end, and a mound of water the
 * host adds in its dry south-east corner during a run. */
#ifndef TESSERA_TESTS_SWE_TERRAIN_H
#define TESSERA_TESTS_SWE_TERRAIN_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "tessera/swe.h"

enum { TERRAIN_NX = 97, TERRAIN_NY = 61 };

static inline void terrain(ts_raster *bed, ts_raster *h0) {
  ts_raster_alloc(bed, TERRAIN_NX, TERRAIN_NY, 0, 0, 2.0, -9999);
  ts_raster_alloc(h0, TERRAIN_NX, TERRAIN_NY, 0, 0, 2.0, -9999);
  for (int j = 0; j < TERRAIN_NY; j++)
    for (int i = 0; i < TERRAIN_NX; i++) {
      int c = i + j * TERRAIN_NX;
      double x = i * 2.0, y = j * 2.0;
      bed->v[c] = 0.02 * x + 0.5 * sin(y / 9.0) + 0.3 * cos(x / 7.0);
      if ((i - 60) * (i - 60) + (j - 30) * (j - 30) < 16)
        bed->v[c] = -9999;
      h0->v[c] = (i < 12 && j > 20 && j < 40) ? 3.0 : 0.0;
    }
}

/* The surface from the host (ts_swe_set_surface): the flood so far plus a mound of water in the
 * south-east corner, dry and out of the steps until then. Returns nonzero on failure. */
static inline int add_mound(ts_swe *s, const ts_raster *bed) {
  ts_raster eta;
  ts_raster_alloc(&eta, TERRAIN_NX, TERRAIN_NY, 0, 0, 2.0, -9999);
  double *depth = malloc(sizeof(double) * TERRAIN_NX * TERRAIN_NY);
  if (!depth) {
    ts_raster_free(&eta);
    return 1;
  }
  ts_swe_get(s, TS_SWE_H, depth);
  for (int c = 0; c < TERRAIN_NX * TERRAIN_NY; c++) {
    double mound = c % TERRAIN_NX > 84 && c / TERRAIN_NX < 10 ? 1.5 : 0.0;
    eta.v[c] = bed->v[c] == -9999 ? -9999 : bed->v[c] + depth[c] + mound;
  }
  ts_status st = ts_swe_set_surface(s, &eta);
  free(depth);
  ts_raster_free(&eta);
  if (st != TS_OK)
    printf("set_surface failed: %s\n", ts_error_message());
  return st != TS_OK;
}

#endif
