/* Decomposition invariance in one process: a dam break over dry, uneven terrain with a NODATA
 * hole, Manning friction and all four boundary types (inflow hydrograph, outflow, fixed level,
 * wall) on a 53 x 41 grid (no split divides it evenly) runs on one subdomain and then on rows,
 * columns and tiles of 2, 3, 4 and 6 subdomains, with ghost cell expansion 1 to 4, early exit on
 * and off, overlap on and off, and a boundary moved mid-run. Every cell of every variable, the
 * time, the volume and the checkpoint blob must equal the single-domain run bit for bit. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tessera/decomp.h"
#include "tessera/swe.h"
#include "unit/check.h"

enum { NX = 53, NY = 41, STEPS = 160, NVARS = 8 };

typedef struct result {
  double vars[NVARS][NX * NY];
  double t, volume;
  int64_t steps;
  void *blob;
  size_t blob_bytes;
} result;

static const double hydro_t[2] = {0, 100}, hydro_q[2] = {4, 8};

static void build_case(ts_raster *bed, ts_raster *h0) {
  ts_raster_alloc(bed, NX, NY, 0, 0, 2.0, -9999);
  ts_raster_alloc(h0, NX, NY, 0, 0, 2.0, -9999);
  for (int j = 0; j < NY; j++)
    for (int i = 0; i < NX; i++) {
      double x = i * 2.0, y = j * 2.0;
      bed->v[i + j * NX] = 0.01 * x + 0.4 * sin(y / 9.0) + 0.3 * cos(x / 7.0);
      if ((i - 33) * (i - 33) + (j - 20) * (j - 20) < 10)
        bed->v[i + j * NX] = -9999;
      h0->v[i + j * NX] = (i < 10 && j > 12 && j < 30) ? 2.0 : (j < 4 ? 0.6 : 0.0);
    }
}

static int run(ts_precision prec, const ts_swe_parallel *par, int early_exit, int move,
               result *out) {
  ts_raster bed, h0;
  build_case(&bed, &h0);
  ts_swe_params p;
  ts_swe_params_default(&p);
  p.precision = prec;
  p.tile_size = 4;
  p.early_exit = early_exit;
  p.friction = TS_FRICTION_MANNING;
  p.friction_value = 0.03;
  p.bc[TS_WEST] = (ts_swe_bc){.type = TS_BC_INFLOW, .npoints = 2, .t = hydro_t, .q = hydro_q};
  p.bc[TS_EAST].type = TS_BC_OUTFLOW;
  p.bc[TS_SOUTH] = (ts_swe_bc){.type = TS_BC_LEVEL, .level = 0.9};
  p.bc[TS_NORTH].type = TS_BC_WALL;
  p.parallel = *par;
  ts_swe *s;
  if (ts_swe_create(&s, &p, &bed, &h0, NULL, NULL, NULL) != TS_OK) {
    printf("create failed: %s\n", ts_error_message());
    return 1;
  }
  double dt;
  for (int n = 0; n < STEPS; n++) {
    if (move && n == STEPS / 2 && ts_swe_move_boundary(s, 0, 1, move) != TS_OK) {
      printf("move failed: %s\n", ts_error_message());
      return 1;
    }
    if (ts_swe_step(s, 5.0, &dt) != TS_OK) {
      printf("step failed: %s\n", ts_error_message());
      return 1;
    }
  }
  ts_swe_var vars[NVARS] = {TS_SWE_H,     TS_SWE_HU,        TS_SWE_HV,      TS_SWE_ETA,
                            TS_SWE_MAX_H, TS_SWE_MAX_SPEED, TS_SWE_ARRIVAL, TS_SWE_MAX_ETA};
  for (int v = 0; v < NVARS; v++)
    ts_swe_get(s, vars[v], out->vars[v]);
  out->t = ts_swe_time(s);
  out->steps = ts_swe_steps(s);
  out->volume = ts_swe_volume(s);
  ts_swe_checkpoint_size(s, &out->blob_bytes);
  out->blob = malloc(out->blob_bytes);
  ts_swe_checkpoint_save(s, out->blob, out->blob_bytes);
  ts_swe_destroy(s);
  ts_raster_free(&bed);
  ts_raster_free(&h0);
  return 0;
}

/* Number of cells that differ in any bit, over all variables; -1 when time, volume or the
 * checkpoint differ. */
static long differences(const result *a, const result *b) {
  long n = 0;
  for (int v = 0; v < NVARS; v++)
    for (int c = 0; c < NX * NY; c++)
      n += memcmp(&a->vars[v][c], &b->vars[v][c], sizeof(double)) != 0;
  if (a->t != b->t || a->steps != b->steps || a->volume != b->volume ||
      a->blob_bytes != b->blob_bytes || memcmp(a->blob, b->blob, a->blob_bytes) != 0)
    return n ? n : -1;
  return n;
}

/* ts_decomp_weigh: extents in proportion to the weights, at least one cell each, bad weights
 * refused. */
static void test_weigh(void) {
  ts_decomp d;
  int n[3] = {NX, NY, 1};
  ts_decomp_create(&d, 2, n, 2, TS_DECOMP_ROWS, NULL);
  CHECK(ts_decomp_weigh(&d, (const double[]){3, 1}) == TS_OK && d.boxes[0].hi[1] == 31 &&
            d.boxes[1].lo[1] == 31 && d.boxes[1].hi[1] == NY && d.boxes[0].hi[0] == NX,
        "rows 3:1 of %d rows: %d and %d", NY, d.boxes[0].hi[1], NY - d.boxes[1].lo[1]);
  ts_decomp_destroy(&d);
  ts_decomp_create(&d, 2, n, 3, TS_DECOMP_COLUMNS, NULL);
  CHECK(ts_decomp_weigh(&d, (const double[]){1000, 1, 1}) == TS_OK && d.boxes[1].hi[0] == NX - 1 &&
            d.boxes[1].lo[0] == NX - 2 && d.boxes[2].lo[0] == NX - 1,
        "columns 1000:1:1 keep a column each: %d, %d, %d", d.boxes[0].hi[0],
        d.boxes[1].hi[0] - d.boxes[1].lo[0], d.boxes[2].hi[0] - d.boxes[2].lo[0]);
  CHECK(ts_decomp_weigh(&d, (const double[]){1, 0, 1}) == TS_ERR_INPUT &&
            strstr(ts_error_message(), "weight 2 is 0"),
        "a zero weight is refused: %s", ts_error_message());
  ts_decomp_destroy(&d);
  ts_decomp_create(&d, 2, n, 4, TS_DECOMP_TILES, (const int[]){2, 2});
  CHECK(ts_decomp_weigh(&d, (const double[]){4, 1, 1, 1}) == TS_OK && d.boxes[0].hi[0] == 38 &&
            d.boxes[0].hi[1] == 29 && d.boxes[3].lo[0] == 38 && d.boxes[3].lo[1] == 29,
        "tiles 4:1:1:1: column slabs 5:2 (%d of %d), row slabs 5:2 (%d of %d)", d.boxes[0].hi[0],
        NX, d.boxes[0].hi[1], NY);
  ts_decomp_destroy(&d);
}

int main(void) {
  static result ref, got;
  ts_precision precs[2] = {TS_FLOAT, TS_DOUBLE};
  for (int pi = 0; pi < 2; pi++) {
    ts_swe_parallel one = {.subdomains = 1, .ghost_expansion = 1, .overlap = 1};
    if (run(precs[pi], &one, 1, 0, &ref))
      return 1;
    int wet = 0;
    for (int c = 0; c < NX * NY; c++)
      wet += ref.vars[0][c] > 0.01;
    CHECK(wet > 200 && wet < NX * NY - 200, "%s reference: %d of %d cells wet at t = %.2f s",
          ts_precision_name(precs[pi]), wet, NX * NY, ref.t);
    /* Maxima start at t = 0: cells wet from the start arrived at t = 0 (vars[6]: arrival). */
    int late = 0;
    for (int j = 13; j < 30; j++)
      for (int i = 0; i < 10; i++)
        late += ref.vars[6][i + j * NX] != 0;
    CHECK(late == 0, "%s: initially wet cells have arrival time 0 (%d do not)",
          ts_precision_name(precs[pi]), late);
    struct {
      ts_decomp_kind kind;
      int count, px, py, k, early, overlap, move;
    } cfg[] = {
        {TS_DECOMP_ROWS, 2, 0, 0, 1, 1, 1, 0},    {TS_DECOMP_ROWS, 3, 0, 0, 1, 1, 0, 0},
        {TS_DECOMP_ROWS, 4, 0, 0, 2, 1, 1, 0},    {TS_DECOMP_COLUMNS, 2, 0, 0, 1, 0, 1, 0},
        {TS_DECOMP_COLUMNS, 3, 0, 0, 3, 1, 1, 0}, {TS_DECOMP_COLUMNS, 4, 0, 0, 1, 1, 0, 0},
        {TS_DECOMP_TILES, 4, 2, 2, 1, 1, 1, 0},   {TS_DECOMP_TILES, 6, 3, 2, 2, 1, 1, 0},
        {TS_DECOMP_TILES, 6, 2, 3, 4, 0, 0, 0},   {TS_DECOMP_AUTO, 4, 0, 0, 1, 1, 1, 0},
        {TS_DECOMP_TILES, 4, 2, 2, 3, 1, 0, 0},   {TS_DECOMP_ROWS, 2, 0, 0, 4, 1, 1, 0},
        {TS_DECOMP_ROWS, 3, 0, 0, 1, 1, 1, 5},    {TS_DECOMP_COLUMNS, 2, 0, 0, 2, 1, 1, -7},
        {TS_DECOMP_TILES, 4, 2, 2, 1, 1, 1, 3},   {TS_DECOMP_ROWS, 1, 0, 0, 1, 0, 1, 0},
    };
    for (size_t c = 0; c < sizeof cfg / sizeof cfg[0]; c++) {
      ts_swe_parallel par = {.subdomains = cfg[c].count,
                             .decomposition = cfg[c].kind,
                             .parts = {cfg[c].px, cfg[c].py},
                             .ghost_expansion = cfg[c].k,
                             .overlap = cfg[c].overlap};
      if (run(precs[pi], &par, cfg[c].early, cfg[c].move, &got))
        return 1;
      long d = differences(&ref, &got);
      CHECK(d == 0,
            "%s %-7s x%d (%dx%d) ghost expansion %d, early exit %s, overlap %s, move %+d: %ld "
            "differing cells%s",
            ts_precision_name(precs[pi]), ts_decomp_kind_name(cfg[c].kind), cfg[c].count, cfg[c].px,
            cfg[c].py, cfg[c].k, cfg[c].early ? "on" : "off", cfg[c].overlap ? "on" : "off",
            cfg[c].move, d > 0 ? d : 0, d < 0 ? " (time, volume or checkpoint differ)" : "");
      free(got.blob);
    }
    /* Static balance by hand: weighted splits give the same bits. */
    static const double w31[2] = {3, 1}, w121[3] = {1, 2, 1}, w4111[4] = {4, 1, 1, 1};
    struct {
      ts_decomp_kind kind;
      int count, px, py;
      const double *weights;
    } weighted[] = {{TS_DECOMP_ROWS, 2, 0, 0, w31},
                    {TS_DECOMP_COLUMNS, 3, 0, 0, w121},
                    {TS_DECOMP_TILES, 4, 2, 2, w4111}};
    for (size_t c = 0; c < sizeof weighted / sizeof weighted[0]; c++) {
      ts_swe_parallel par = {.subdomains = weighted[c].count,
                             .decomposition = weighted[c].kind,
                             .parts = {weighted[c].px, weighted[c].py},
                             .ghost_expansion = 1,
                             .overlap = 1,
                             .nweights = weighted[c].count,
                             .weights = weighted[c].weights};
      if (run(precs[pi], &par, 1, 0, &got))
        return 1;
      long d = differences(&ref, &got);
      CHECK(d == 0, "%s %s x%d weighted: %ld differing cells%s", ts_precision_name(precs[pi]),
            ts_decomp_kind_name(weighted[c].kind), weighted[c].count, d > 0 ? d : 0,
            d < 0 ? " (time, volume or checkpoint differ)" : "");
      free(got.blob);
    }
    free(ref.blob);
  }
  test_weigh();
  return failures != 0;
}
