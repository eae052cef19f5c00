/* Moving subdomain boundaries across MPI ranks: a dam break in a tilted basin with a level
 * boundary south and outflow east runs 160 steps while boundaries move between neighbours on
 * different ranks (cells migrate by message); rank 0 writes the state, maxima, time and volume
 * to a file that must equal, byte for byte, the file of a run on one subdomain without moves.
 * usage: mpi_move_boundary OUT rows|tiles|none */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tessera/comm.h"
#include "tessera/swe.h"

enum { NX = 61, NY = 47, STEPS = 160, NVARS = 6 };

int main(int argc, char **argv) {
  if (argc != 3 || ts_comm_init(&argc, &argv) != TS_OK)
    return 2;
  const char *mode = argv[2];
  ts_raster bed, h0;
  ts_raster_alloc(&bed, NX, NY, 0, 0, 1.5, -9999);
  ts_raster_alloc(&h0, NX, NY, 0, 0, 1.5, -9999);
  for (int j = 0; j < NY; j++)
    for (int i = 0; i < NX; i++) {
      bed.v[i + j * NX] = 0.02 * j + 0.3 * sin(i / 5.0) * cos(j / 7.0);
      h0.v[i + j * NX] = j > 30 && i > 15 && i < 45 ? 1.5 : 0.0;
    }
  ts_swe_params p;
  ts_swe_params_default(&p);
  p.precision = TS_DOUBLE;
  p.tile_size = 3;
  p.bc[TS_SOUTH] = (ts_swe_bc){.type = TS_BC_LEVEL, .level = 0.2};
  p.bc[TS_EAST].type = TS_BC_OUTFLOW;
  int tiles = strcmp(mode, "tiles") == 0, none = strcmp(mode, "none") == 0;
  p.parallel.subdomains = none ? 1 : (tiles ? 4 : 3);
  p.parallel.decomposition = tiles ? TS_DECOMP_TILES : TS_DECOMP_ROWS;
  p.parallel.parts[0] = p.parallel.parts[1] = tiles ? 2 : 0;
  p.parallel.ghost_expansion = 2;
  ts_swe *s;
  ts_status st = ts_swe_create(&s, &p, &bed, &h0, NULL, NULL, NULL);
  /* (a, b, delta) at steps 40, 80, 120: rows 0|1, 1|2, 0|1; tiles: the x-faces 0|1 (south
   * row of tiles), 2|3 (north row), 0|1 again. */
  int moves[3][3] = {{0, 1, 5}, {1, 2, -4}, {0, 1, -9}};
  if (tiles)
    moves[1][0] = 2, moves[1][1] = 3;
  double dt;
  for (int n = 0; n < STEPS && st == TS_OK; n++) {
    if (!none && n % 40 == 0 && n > 0)
      st =
          ts_swe_move_boundary(s, moves[n / 40 - 1][0], moves[n / 40 - 1][1], moves[n / 40 - 1][2]);
    if (st == TS_OK)
      st = ts_swe_step(s, 1e9, &dt);
  }
  static double out[NVARS][NX * NY];
  ts_swe_var vars[NVARS] = {TS_SWE_H,     TS_SWE_HU,        TS_SWE_HV,
                            TS_SWE_MAX_H, TS_SWE_MAX_SPEED, TS_SWE_ARRIVAL};
  for (int v = 0; v < NVARS && st == TS_OK; v++)
    st = ts_swe_get(s, vars[v], out[v]);
  double tail[2] = {st == TS_OK ? ts_swe_time(s) : 0, st == TS_OK ? ts_swe_volume(s) : 0};
  if (st == TS_OK && ts_comm_rank(ts_comm_world()) == 0) {
    FILE *f = fopen(argv[1], "wb");
    if (!f || fwrite(out, sizeof out, 1, f) != 1 || fwrite(tail, sizeof tail, 1, f) != 1)
      st = TS_ERR_IO;
    if (f)
      fclose(f);
    printf("%s: t = %.6f s, volume %.9g m3\n", mode, tail[0], tail[1]);
  }
  if (st != TS_OK)
    fprintf(stderr, "mpi_move_boundary: %s\n", ts_error_message());
  ts_swe_destroy(s);
  ts_raster_free(&bed);
  ts_raster_free(&h0);
  ts_comm_finalize();
  return st != TS_OK;
}
