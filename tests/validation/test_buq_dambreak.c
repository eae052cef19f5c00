/* Validation: 1D dam breaks (Ritter: dry bed; Stoker: wet bed) on a quadtree (BUQ) grid against
 * the same runs on the uniform grid of its finest cells, both measured against the exact
 * solutions (analytic.c).
 *
 * A channel of NX x NY = 2048 x 16 cells of 1 m (walls all round, flat frictionless bed, double
 * precision), dam at x0 = 1024 m, h_l = 1 m upstream; downstream dry (Ritter) or h_r = 0.1 m
 * (Stoker). Compared at t = 100 s: the rarefaction head is at x0 - 313 m, the Ritter front at
 * x0 + 626 m (Stoker shock at x0 + 311 m): no wave has reached a wall.
 *
 * Grids: the uniform grid of 1 m cells, and a BUQ grid of 3 levels in blocks of 8 whose refine
 * raster asks for 1 m cells in the band where the solution varies at t,
 * [x0 - sqrt(g h_l) t, x0 + S t] (S = 2 sqrt(g h_l) for Ritter, the shock speed for Stoker) widened
 * by a margin of 3 finest blocks (24 m) on each side, and 4 m cells (the coarsest level) elsewhere.
 * The grid is built once at the start: the waves never leave the finest band, so the coarse cells
 * and the level interfaces only ever carry the constant states on either side of the waves; what
 * is tested is that the interfaces and coarse cells leave those states, and the waves passing
 * next to them, as the uniform grid does.
 *
 * Measure: E = (1/NX) sum over the cells of the centre row (j = NY/2) of |h - h_exact| (m), h_exact
 * at cell centres; h read with ts_swe_get on the finest grid.
 *
 * Checks and tolerances, for each of Ritter and Stoker:
 *  - E_b <= 1.10 E_u: the BUQ grid's error within 10 % of the uniform finest grid's;
 *  - F = cells of the quadtree / cells of the uniform finest grid < 0.7 (the grid is coarser
 *    outside the band: not the uniform grid in disguise);
 *  - volume change |V(t) - V(0)| / V(0) <= 1e-12 on the BUQ grid (and on the uniform grid): walls
 *    all round, the level interfaces must keep the volume to rounding.
 * Measured (double, 2 threads): Ritter E_u = E_b = 1.8597e-4 m, F = 0.559; Stoker E_u = E_b =
 * 2.4331e-4 m, F = 0.422 (E_b / E_u - 1 below 1e-13: the waves stay on the finest cells); volume
 * change 0; 24-34 s for the four runs on 2 busy cores. The check does bite: with the band 2 blocks
 * narrower than the waves (margin -2) the Stoker shock reaches coarser cells and E_b / E_u = 1.51.
 * Optional arguments `block levels margin` (margin in finest blocks, may be negative) rerun with
 * other BUQ grids, for the record; the checks stay the same. */
#include <math.h>
#include <stdlib.h>

#include "analytic.h"

enum { RITTER = 0, STOKER = 1 };
enum { NX = 2048, NY = 16 };
static const double DX = 1.0, X0 = 1024, HL = 1.0, HR = 0.1, T = 100;

typedef struct result {
  double e, f, dvol, secs;
  int64_t steps, cells;
  ts_swe_grid_stats g;
} result;

/* Runs one dam break to T on the uniform grid (block == 0) or on a BUQ grid of `levels` levels in
 * blocks of `block` whose finest cells cover [lo, hi] (m). */
static result run(int kind, int block, int levels, double lo, double hi) {
  result r = {0};
  ts_raster bed = val_raster(NX, NY, DX, 0, 0);
  ts_raster h0 = val_raster(NX, NY, DX, 0, 0);
  ts_raster refine = val_raster(NX, NY, DX, 0, 0);
  for (int j = 0; j < NY; j++)
    for (int i = 0; i < NX; i++) {
      double x = val_xc(&bed, i);
      h0.v[i + j * NX] = x < X0 ? HL : (kind == STOKER ? HR : 0);
      refine.v[i + j * NX] = (x >= lo && x <= hi) ? DX : DX * (1 << (levels - 1));
    }
  ts_swe_params p;
  ts_swe_params_default(&p);
  p.precision = TS_DOUBLE;
  if (block) {
    p.grid.type = TS_GRID_BUQ;
    p.grid.block = block;
    p.grid.levels = levels;
    p.grid.refine = &refine;
  }
  ts_swe *s = NULL;
  TRY(ts_swe_create(&s, &p, &bed, &h0, NULL, NULL, NULL));
  ts_swe_grid_info(s, &r.g);
  r.cells = block ? r.g.cells : (int64_t)NX * NY;
  r.f = block ? (double)r.g.cells / (double)r.g.cells_uniform_finest : 1.0;
  double v0 = ts_swe_volume(s), t0 = val_now();
  r.steps = val_run_to(s, T, 1000000);
  r.secs = val_now() - t0;
  r.dvol = fabs(ts_swe_volume(s) - v0) / v0;
  double *h = malloc((size_t)NX * NY * sizeof(double));
  TRY(ts_swe_get(s, TS_SWE_H, h));
  double sum = 0;
  for (int i = 0; i < NX; i++) {
    double he, u, x = val_xc(&bed, i);
    if (kind == RITTER)
      val_ritter(HL, X0, p.gravity, x, T, &he, &u);
    else
      val_stoker(HL, HR, X0, p.gravity, x, T, &he, &u);
    sum += fabs(h[i + (NY / 2) * NX] - he);
  }
  r.e = sum / NX;
  ts_swe_destroy(s);
  free(h);
  val_raster_free(&bed), val_raster_free(&h0), val_raster_free(&refine);
  return r;
}

int main(int argc, char **argv) {
  int block = argc > 1 ? atoi(argv[1]) : 8, levels = argc > 2 ? atoi(argv[2]) : 3;
  double margin = argc > 3 ? atof(argv[3]) : 3;
  double g = VAL_G, cl = sqrt(g * HL), hm, um, shock;
  val_stoker_state(HL, HR, g, &hm, &um, &shock);
  printf("channel %d x %d cells of %g m, dam at %g m, t = %g s; BUQ: %d levels, blocks of %d, "
         "margin %g blocks\n",
         NX, NY, DX, X0, T, levels, block, margin);
  double total = val_now();
  for (int kind = 0; kind < 2; kind++) {
    const char *name = kind == RITTER ? "Ritter" : "Stoker";
    double lo = X0 - cl * T - margin * block * DX;
    double hi = X0 + (kind == RITTER ? 2 * cl : shock) * T + margin * block * DX;
    result u = run(kind, 0, 1, 0, 0), b = run(kind, block, levels, lo, hi);
    printf("  %s uniform: E_u = %.6e m, %lld cells, %lld steps, %.2f s, volume change %.1e\n", name,
           u.e, (long long)u.cells, (long long)u.steps, u.secs, u.dvol);
    char per[80] = "";
    for (int l = 0, n = 0; l < b.g.levels && l < 8; l++)
      n += snprintf(per + n, sizeof per - n, "%s%d", l ? "/" : "", b.g.blocks_per_level[l]);
    printf("  %s BUQ finest in [%.0f, %.0f] m: E_b = %.6e m (E_b/E_u - 1 = %.2e), %lld cells "
           "(blocks per level %s), %lld steps, %.2f s, volume change %.1e\n",
           name, lo, hi, b.e, b.e / u.e - 1, (long long)b.cells, per, (long long)b.steps, b.secs,
           b.dvol);
    CHECK(b.e <= 1.10 * u.e,
          "%s: BUQ error E_b = %.4e m <= 1.10 x uniform E_u = %.4e m (ratio %.4f)", name, b.e, u.e,
          b.e / u.e);
    CHECK(b.f < 0.7, "%s: BUQ cells / uniform finest cells F = %.4f < 0.7", name, b.f);
    CHECK(b.dvol <= 1e-12 && u.dvol <= 1e-12,
          "%s: relative volume change BUQ %.2e, uniform %.2e <= 1e-12", name, b.dvol, u.dvol);
  }
  printf("  total %.2f s\n", val_now() - total);
  return val_finish();
}
