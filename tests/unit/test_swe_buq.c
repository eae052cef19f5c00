/* The shallow-water solver on quadtree (BUQ) grids ([grid] type = buq):
 * - one level equals the uniform grid bit for bit (a dam break over uneven terrain with a NODATA
 *   hole and Manning friction, float and double, blocks of 16 and 8, early exit on and off; and
 *   with a grid of Manning coefficients);
 * - a lake at rest over bumps and an island, its shorelines crossing level interfaces (three
 *   levels), stays at rest: surface and discharges within rounding after 300 steps;
 * - a dam break whose front crosses the interfaces keeps its volume to rounding (double:
 *   1e-13 relative; float: the compensated sums keep it to 1e-6);
 * - a checkpoint taken mid-run and loaded into a new solver continues bit for bit;
 * - rain (a grid of rates, then a uniform frame) and losses (a grid of initial losses and a
 *   continuing rate) on one level equal the uniform grid's bit for bit (state, maps, the
 *   budget's rain and losses); on three levels the volume equals the initial volume plus the
 *   rain less the losses to rounding, and a restart continues bit for bit;
 * - the leaves cut into partitions ([parallel] subdomains: 2, 3, 5, 11 and 23; and 3, 5 and 4
 *   moving leaves between them every 3, 7 and 4 steps as the water spreads) give the bits
 *   of one partition (state, maps, volume, budget, steps) on three levels with rain, losses and
 *   early exit, float and double, on the small grid and on one 2.7 times wider and taller (parts
 *   many rings deep); a checkpoint of 23 partitions, and one of 4 after moves, continues in one
 *   bit for bit. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tessera/swe.h"
#include "unit/check.h"
#include "unit/swe_terrain.h"

enum { NX = TERRAIN_NX, NY = TERRAIN_NY };

/* Runs `steps` steps and reads h, hu, hv and the maximum speed (4 x NX x NY values). */
static const ts_raster *friction_grid; /* run's per-cell Manning n (NULL: the parameters') */
static int mound_after = -1; /* the step after which the host adds water in a dry corner */

static int run(const ts_swe_params *p, const ts_raster *bed, const ts_raster *h0, int steps,
               double *out, double *volume) {
  ts_swe *s;
  if (ts_swe_create(&s, p, bed, h0, NULL, NULL, friction_grid) != TS_OK) {
    printf("create failed: %s\n", ts_error_message());
    return 1;
  }
  double dt;
  for (int n = 0; n < steps; n++)
    if (ts_swe_step(s, 1e9, &dt) != TS_OK || (n == mound_after && add_mound(s, bed))) {
      printf("step failed: %s\n", ts_error_message());
      ts_swe_destroy(s);
      return 1;
    }
  ts_swe_var vars[4] = {TS_SWE_H, TS_SWE_HU, TS_SWE_HV, TS_SWE_MAX_SPEED};
  for (int v = 0; v < 4; v++)
    ts_swe_get(s, vars[v], out + (size_t)v * NX * NY);
  if (volume)
    *volume = ts_swe_volume(s);
  ts_swe_destroy(s);
  return 0;
}

/* The parameters of most runs here: defaults in the given precision (1: double) with Manning
 * friction 0.03. */
static ts_swe_params manning_params(int prec) {
  ts_swe_params p;
  ts_swe_params_default(&p);
  p.precision = prec ? TS_DOUBLE : TS_FLOAT;
  p.friction = TS_FRICTION_MANNING;
  p.friction_value = 0.03;
  return p;
}

static int same_bits(const double *a, const double *b, size_t n) {
  for (size_t k = 0; k < n; k++)
    if (memcmp(&a[k], &b[k], sizeof(double)) != 0)
      return 0;
  return 1;
}

static void one_level_is_uniform(void) {
  ts_raster bed, h0;
  terrain(&bed, &h0);
  size_t n4 = 4 * (size_t)NX * NY;
  double *uni = malloc(sizeof(double) * n4), *buq = malloc(sizeof(double) * n4);
  mound_after = 150;
  for (int prec = 0; prec < 2; prec++)
    for (int block = 8; block <= 16; block += 8)
      for (int early = 0; early < 2; early++) {
        ts_swe_params p = manning_params(prec);
        p.early_exit = early;
        double vu = 0, vb = 1;
        int fail = run(&p, &bed, &h0, 300, uni, &vu);
        p.grid.type = TS_GRID_BUQ;
        p.grid.block = block;
        p.grid.levels = 1;
        fail |= run(&p, &bed, &h0, 300, buq, &vb);
        CHECK(!fail && same_bits(uni, buq, n4) && vu == vb,
              "one level (%s, block %d, early exit %s, water added by the host halfway) equals "
              "the uniform grid bit for bit",
              prec ? "double" : "float", block, early ? "on" : "off");
      }
  mound_after = -1;
  /* a Manning n per cell, rougher on the east half */
  ts_raster n;
  ts_raster_alloc(&n, NX, NY, 0, 0, 2.0, -9999);
  for (int c = 0; c < NX * NY; c++)
    n.v[c] = c % NX < NX / 2 ? 0.02 : 0.06;
  friction_grid = &n;
  for (int prec = 0; prec < 2; prec++) {
    ts_swe_params p;
    ts_swe_params_default(&p);
    p.precision = prec ? TS_DOUBLE : TS_FLOAT;
    p.friction = TS_FRICTION_MANNING;
    double vu = 0, vb = 1;
    int fail = run(&p, &bed, &h0, 300, uni, &vu);
    p.grid.type = TS_GRID_BUQ;
    fail |= run(&p, &bed, &h0, 300, buq, &vb);
    CHECK(!fail && same_bits(uni, buq, n4) && vu == vb,
          "one level with a friction grid (%s) equals the uniform grid bit for bit",
          prec ? "double" : "float");
  }
  friction_grid = NULL;
  ts_raster_free(&n);
  free(uni);
  free(buq);
  ts_raster_free(&bed);
  ts_raster_free(&h0);
}

/* A refine raster asking for the finest cells in a band across the middle, 4x coarser
 * elsewhere: three levels whose interfaces cross the terrain. */
static void band_refine(ts_raster *r) {
  ts_raster_alloc(r, NX, NY, 0, 0, 2.0, -9999);
  for (int j = 0; j < NY; j++)
    for (int i = 0; i < NX; i++)
      r->v[i + j * NX] = (i > 30 && i < 55) ? 2.0 : 8.0;
}

static void lake_at_rest(void) {
  ts_raster bed, h0, refine, eta;
  terrain(&bed, &h0);
  band_refine(&refine);
  ts_raster_alloc(&eta, NX, NY, 0, 0, 2.0, -9999);
  /* bumps and an island in the middle, the lake at 1.1 m: shorelines everywhere */
  for (int j = 0; j < NY; j++)
    for (int i = 0; i < NX; i++) {
      double x = i * 2.0 - 84, y = j * 2.0 - 60;
      double *z = &bed.v[i + j * NX];
      if (*z != -9999)
        *z += 1.6 * exp(-(x * x + y * y) / 200.0);
      eta.v[i + j * NX] = 1.1;
    }
  for (int prec = 0; prec < 2; prec++) {
    ts_swe_params p;
    ts_swe_params_default(&p);
    p.precision = prec ? TS_DOUBLE : TS_FLOAT;
    p.grid.type = TS_GRID_BUQ;
    p.grid.block = 8;
    p.grid.levels = 3;
    p.grid.refine = &refine;
    ts_swe *s;
    if (ts_swe_create(&s, &p, &bed, NULL, NULL, NULL, NULL) != TS_OK) {
      CHECK(0, "lake at rest: create failed: %s", ts_error_message());
      continue;
    }
    ts_swe_grid_stats g;
    ts_swe_grid_info(s, &g);
    ts_swe_set_surface(s, &eta);
    double v0 = ts_swe_volume(s), dt;
    int ok = 1;
    for (int k = 0; k < 300 && ok; k++)
      ok = ts_swe_step(s, 1.0, &dt) == TS_OK;
    double *w = malloc(sizeof(double) * NX * NY), *hu = malloc(sizeof(double) * NX * NY);
    double *h = malloc(sizeof(double) * NX * NY);
    ts_swe_get(s, TS_SWE_ETA, w);
    ts_swe_get(s, TS_SWE_HU, hu);
    ts_swe_get(s, TS_SWE_H, h);
    double dw = 0, dq = 0;
    int wet = 0;
    for (int c = 0; c < NX * NY; c++) {
      if (!(h[c] > 0))
        continue;
      wet++;
      dw = fmax(dw, fabs(w[c] - 1.1));
      dq = fmax(dq, fabs(hu[c]));
    }
    double tol = prec ? 1e-12 : 2e-6, v1 = ts_swe_volume(s);
    CHECK(ok && g.levels == 3 && g.blocks_per_level[0] > 0 && g.blocks_per_level[1] > 0 &&
              g.blocks_per_level[2] > 0 && wet > 0 && dw <= tol && dq <= tol &&
              fabs(v1 - v0) <= tol * v0,
          "lake at rest on 3 levels (%d/%d/%d blocks of 8, %s): |eta - 1.1| %.2e, |hu| %.2e, "
          "volume change %.2e (tolerance %.0e)",
          g.blocks_per_level[0], g.blocks_per_level[1], g.blocks_per_level[2],
          prec ? "double" : "float", dw, dq, fabs(v1 - v0) / v0, tol);
    free(w);
    free(hu);
    free(h);
    ts_swe_destroy(s);
  }
  ts_raster_free(&bed);
  ts_raster_free(&h0);
  ts_raster_free(&refine);
  ts_raster_free(&eta);
}

static void mass_and_restart(void) {
  ts_raster bed, h0, refine;
  terrain(&bed, &h0);
  band_refine(&refine);
  for (int prec = 0; prec < 2; prec++) {
    ts_swe_params p = manning_params(prec);
    p.grid.type = TS_GRID_BUQ;
    p.grid.block = 8;
    p.grid.levels = 3;
    p.grid.refine = &refine;
    ts_swe *s, *r;
    if (ts_swe_create(&s, &p, &bed, &h0, NULL, NULL, NULL) != TS_OK ||
        ts_swe_create(&r, &p, &bed, &h0, NULL, NULL, NULL) != TS_OK) {
      CHECK(0, "mass: create failed: %s", ts_error_message());
      continue;
    }
    double v0 = ts_swe_volume(s), dt;
    int ok = 1;
    for (int k = 0; k < 200 && ok; k++)
      ok = ts_swe_step(s, 1e9, &dt) == TS_OK;
    size_t bytes;
    ts_swe_checkpoint_size(s, &bytes);
    void *blob = malloc(bytes);
    ok = ok && ts_swe_checkpoint_save(s, blob, bytes) == TS_OK &&
         ts_swe_checkpoint_load(r, blob, bytes) == TS_OK;
    for (int k = 0; k < 300 && ok; k++)
      ok = ts_swe_step(s, 1e9, &dt) == TS_OK && ts_swe_step(r, 1e9, &dt) == TS_OK;
    double v1 = ts_swe_volume(s), tol = prec ? 1e-13 : 1e-6;
    double *a = malloc(sizeof(double) * NX * NY), *b = malloc(sizeof(double) * NX * NY);
    ts_swe_get(s, TS_SWE_H, a);
    ts_swe_get(r, TS_SWE_H, b);
    double reach = 0; /* how far east the water went: across the band's interfaces */
    for (int c = 0; c < NX * NY; c++)
      if (a[c] > 1e-3)
        reach = fmax(reach, c % NX);
    CHECK(ok && fabs(v1 - v0) <= tol * v0 && reach > 40,
          "dam break across levels (%s): volume change %.2e (tolerance %.0e), front at cell %g",
          prec ? "double" : "float", fabs(v1 - v0) / v0, tol, reach);
    ts_swe_get(s, TS_SWE_MAX_H, a);
    int same = 1;
    ts_swe_get(r, TS_SWE_MAX_H, b);
    same &= same_bits(a, b, (size_t)NX * NY);
    ts_swe_get(s, TS_SWE_HV, a);
    ts_swe_get(r, TS_SWE_HV, b);
    same &= same_bits(a, b, (size_t)NX * NY);
    CHECK(ok && same && ts_swe_time(s) == ts_swe_time(r),
          "restart from a checkpoint continues bit for bit (%s)", prec ? "double" : "float");
    free(a);
    free(b);
    free(blob);
    ts_swe_destroy(s);
    ts_swe_destroy(r);
  }
  ts_raster_free(&bed);
  ts_raster_free(&h0);
  ts_raster_free(&refine);
}

/* Rain frames (a grid: 40 mm/h on the west half, 10 on the east, from 0 s; a grid of 20 mm/h
 * everywhere from 12 s until 30 s) and losses (5 mm initial on the north half, none south; 2 mm/h
 * continuing). */
static void with_sources(ts_swe_params *p, ts_raster *rain_grid, ts_raster *initial) {
  static double t[2] = {0, 12};
  ts_raster_alloc(rain_grid, NX, NY, 0, 0, 2.0, -9999);
  ts_raster_alloc(initial, NX, NY, 0, 0, 2.0, -9999);
  for (int c = 0; c < NX * NY; c++) {
    rain_grid->v[c] = (c % NX < NX / 2 ? 40.0 : 10.0) / 3.6e6;
    initial->v[c] = c / NX > NY / 2 ? 0.005 : 0.0;
  }
  rain_grid->v[5 + 7 * NX] = -9999; /* NODATA: no rain there */
  static ts_raster frames[2];
  frames[0] = *rain_grid;
  ts_raster_alloc(&frames[1], NX, NY, 0, 0, 2.0, -9999);
  for (int c = 0; c < NX * NY; c++)
    frames[1].v[c] = 20.0 / 3.6e6;
  p->rain.nframes = 2;
  p->rain.t = t;
  p->rain.end = 30;
  p->rain.grids = frames;
  p->losses.initial_grid = initial;
  p->losses.rate = 2.0 / 3.6e6;
}

static void sources(void) {
  ts_raster bed, h0, refine, rain, initial;
  terrain(&bed, &h0);
  band_refine(&refine);
  size_t n4 = 4 * (size_t)NX * NY;
  double *uni = malloc(sizeof(double) * n4), *buq = malloc(sizeof(double) * n4);
  for (int prec = 0; prec < 2; prec++) {
    ts_swe_params p = manning_params(prec);
    with_sources(&p, &rain, &initial);
    /* one level against the uniform grid, to 40 s (both rain frames and the dry spell after) */
    ts_swe *s[2] = {NULL, NULL};
    ts_swe_budget budget[2];
    double vol[2];
    int ok = 1;
    for (int g = 0; g < 2; g++) {
      p.grid.type = g ? TS_GRID_BUQ : TS_GRID_UNIFORM;
      ok &= ts_swe_create(&s[g], &p, &bed, &h0, NULL, NULL, NULL) == TS_OK;
      if (!ok)
        break;
      double dt;
      while (ok && ts_swe_time(s[g]) < 40)
        ok &= ts_swe_step(s[g], 40 - ts_swe_time(s[g]), &dt) == TS_OK;
      ts_swe_var vars[4] = {TS_SWE_H, TS_SWE_HU, TS_SWE_LOSS, TS_SWE_MAX_H};
      for (int v = 0; v < 4; v++)
        ts_swe_get(s[g], vars[v], (g ? buq : uni) + (size_t)v * NX * NY);
      ok &= ts_swe_budget_get(s[g], &budget[g]) == TS_OK;
      vol[g] = ts_swe_volume(s[g]);
    }
    CHECK(ok && same_bits(uni, buq, n4) && vol[0] == vol[1] && budget[0].rain == budget[1].rain &&
              budget[0].losses == budget[1].losses && ts_swe_steps(s[0]) == ts_swe_steps(s[1]),
          "rain and losses on one level equal the uniform grid bit for bit (%s): rain %.6g m3, "
          "losses %.6g m3",
          prec ? "double" : "float", ok ? budget[1].rain : 0, ok ? budget[1].losses : 0);
    ts_swe_destroy(s[0]);
    ts_swe_destroy(s[1]);
    /* three levels: volume against rain less losses; a restart mid-rain */
    p.grid.type = TS_GRID_BUQ;
    p.grid.block = 8;
    p.grid.levels = 3;
    p.grid.refine = &refine;
    ts_swe *a = NULL, *r = NULL;
    ok = ts_swe_create(&a, &p, &bed, &h0, NULL, NULL, NULL) == TS_OK &&
         ts_swe_create(&r, &p, &bed, &h0, NULL, NULL, NULL) == TS_OK;
    double v0 = ok ? ts_swe_volume(a) : 0, dt;
    while (ok && ts_swe_time(a) < 10)
      ok = ts_swe_step(a, 10 - ts_swe_time(a), &dt) == TS_OK;
    size_t bytes = 0;
    void *blob = NULL;
    ok = ok && ts_swe_checkpoint_size(a, &bytes) == TS_OK && (blob = malloc(bytes)) &&
         ts_swe_checkpoint_save(a, blob, bytes) == TS_OK &&
         ts_swe_checkpoint_load(r, blob, bytes) == TS_OK;
    while (ok && ts_swe_time(a) < 40)
      ok = ts_swe_step(a, 40 - ts_swe_time(a), &dt) == TS_OK &&
           ts_swe_step(r, 40 - ts_swe_time(r), &dt) == TS_OK;
    ts_swe_budget b = {0};
    ok = ok && ts_swe_budget_get(a, &b) == TS_OK;
    double v1 = ok ? ts_swe_volume(a) : 0, expect = v0 + b.rain - b.losses;
    double tol = prec ? 1e-12 : 2e-6;
    CHECK(ok && fabs(v1 - expect) <= tol * expect && b.rain > 1 && b.losses > 1,
          "three levels with rain and losses (%s): volume %.9g against %.9g (initial + rain %.4g - "
          "losses %.4g), relative %.1e (tolerance %.0e)",
          prec ? "double" : "float", v1, expect, b.rain, b.losses, fabs(v1 - expect) / expect, tol);
    int same = ok;
    ts_swe_var vars[3] = {TS_SWE_H, TS_SWE_HU, TS_SWE_LOSS};
    for (int v = 0; v < 3 && ok; v++) {
      ts_swe_get(a, vars[v], uni);
      ts_swe_get(r, vars[v], buq);
      same &= same_bits(uni, buq, (size_t)NX * NY);
    }
    CHECK(same, "restart with rain and losses on three levels continues bit for bit (%s)",
          prec ? "double" : "float");
    free(blob);
    ts_swe_destroy(a);
    ts_swe_destroy(r);
    ts_raster_free(&rain);
    ts_raster_free(&initial);
    ts_raster_free((ts_raster *)&p.rain.grids[1]);
  }
  free(uni);
  free(buq);
  ts_raster_free(&bed);
  ts_raster_free(&h0);
  ts_raster_free(&refine);
}

/* A dam break over the terrain of `terrain` on an nx x ny grid, refined in a band across the
 * middle (three levels), with the rain and losses of with_sources (rasters of NX x NY only:
 * those on the small grid). */
static void partitioned_case(int nx, int ny, ts_raster *bed, ts_raster *h0, ts_raster *refine) {
  ts_raster_alloc(bed, nx, ny, 0, 0, 2.0, -9999);
  ts_raster_alloc(h0, nx, ny, 0, 0, 2.0, -9999);
  ts_raster_alloc(refine, nx, ny, 0, 0, 2.0, -9999);
  for (int j = 0; j < ny; j++)
    for (int i = 0; i < nx; i++) {
      double x = i * 2.0, y = j * 2.0;
      size_t c = (size_t)i + (size_t)j * nx;
      bed->v[c] = 0.02 * x + 0.5 * sin(y / 9.0) + 0.3 * cos(x / 7.0);
      if ((i - 60) * (i - 60) + (j - 30) * (j - 30) < 16)
        bed->v[c] = -9999;
      h0->v[c] = (i < 12 && j > 20 && j < ny - 20) ? 3.0 : 0.0;
      refine->v[c] = (i > 30 && i < 55 + nx / 4) ? 2.0 : 8.0;
    }
}

/* Runs p to time `end` / 3, then to `end`, on `parts` partitions (checkpoint: taken at `end` / 3
 * and continued in a solver of one partition); out: h, hu, hv, maximum speed, losses and arrival;
 * returns 0 on failure. */
static int run_parts(ts_swe_params p, int parts, int with_checkpoint, const ts_raster *bed,
                     const ts_raster *h0, double end, double *out, double *volume,
                     ts_swe_budget *budget, int64_t *steps, ts_swe_balance *balance) {
  ts_swe *s = NULL, *r = NULL;
  p.parallel.subdomains = parts;
  int ok = ts_swe_create(&s, &p, bed, h0, NULL, NULL, NULL) == TS_OK;
  double dt;
  while (ok && ts_swe_time(s) < end / 3)
    ok = ts_swe_step(s, end / 3 - ts_swe_time(s), &dt) == TS_OK;
  if (ok && with_checkpoint) {
    size_t bytes = 0;
    void *blob = NULL;
    p.parallel.subdomains = 1;
    ok = ts_swe_checkpoint_size(s, &bytes) == TS_OK && (blob = malloc(bytes)) &&
         ts_swe_checkpoint_save(s, blob, bytes) == TS_OK &&
         ts_swe_create(&r, &p, bed, h0, NULL, NULL, NULL) == TS_OK &&
         ts_swe_checkpoint_load(r, blob, bytes) == TS_OK;
    free(blob);
    if (ok)
      ts_swe_balance_get(s, balance);
    ts_swe_destroy(s);
    s = r;
  }
  while (ok && ts_swe_time(s) < end)
    ok = ts_swe_step(s, end - ts_swe_time(s), &dt) == TS_OK;
  if (!ok)
    printf("partitions %d: %s\n", parts, ts_error_message());
  size_t n = (size_t)bed->ncols * bed->nrows;
  ts_swe_var vars[6] = {TS_SWE_H,         TS_SWE_HU,   TS_SWE_HV,
                        TS_SWE_MAX_SPEED, TS_SWE_LOSS, TS_SWE_ARRIVAL};
  for (int v = 0; v < 6 && ok; v++)
    ts_swe_get(s, vars[v], out + (size_t)v * n);
  ok = ok && ts_swe_budget_get(s, budget) == TS_OK;
  *volume = ok ? ts_swe_volume(s) : 0;
  *steps = ok ? ts_swe_steps(s) : 0;
  if (ok && !with_checkpoint)
    ts_swe_balance_get(s, balance);
  ts_swe_destroy(s);
  return ok;
}

static void partitions(void) {
  for (int size = 0; size < 2; size++) {
    int nx = size ? 257 : NX, ny = size ? 161 : NY;
    ts_raster bed, h0, refine, rain, initial;
    partitioned_case(nx, ny, &bed, &h0, &refine);
    size_t n6 = 6 * (size_t)nx * ny;
    double *one = malloc(sizeof(double) * n6), *cut = malloc(sizeof(double) * n6);
    for (int prec = 0; prec < 2; prec++) {
      ts_swe_params p = manning_params(prec);
      if (!size)
        with_sources(&p, &rain, &initial);
      else
        p.losses.rate = 2.0 / 3.6e6;
      p.grid.type = TS_GRID_BUQ;
      p.grid.block = 8;
      p.grid.levels = 3;
      p.grid.refine = &refine;
      double end = size ? 25 : 30, vol[2];
      ts_swe_budget budget[2];
      int64_t steps[2];
      ts_swe_balance moves;
      int ok = run_parts(p, 1, 0, &bed, &h0, end, one, &vol[0], &budget[0], &steps[0], &moves);
      /* the last three: the leaves moved between the partitions every few steps as the water
       * spreads (balance dynamic), a checkpoint taken after such moves */
      int cuts[8] = {2, 3, 5, 11, 23, 3, 5, 4}, every[8] = {0, 0, 0, 0, 0, 3, 7, 4};
      for (int c = 0; c < 8; c++) {
        int checkpoint = c == 4 || c == 7;
        ts_swe_params pc = p;
        pc.parallel.balance = every[c] ? TS_BALANCE_DYNAMIC : TS_BALANCE_OFF;
        pc.parallel.rebalance_interval = every[c];
        int ran = ok && run_parts(pc, cuts[c], checkpoint, &bed, &h0, end, cut, &vol[1], &budget[1],
                                  &steps[1], &moves);
        CHECK(ran && same_bits(one, cut, n6) && vol[0] == vol[1] &&
                  budget[0].rain == budget[1].rain && budget[0].losses == budget[1].losses &&
                  steps[0] == steps[1],
              "%s%d partitions%s give the bits of one (%dx%d, %s, %lld steps, volume %.9g m3)",
              checkpoint ? "a checkpoint of " : "", cuts[c],
              every[c] ? " balanced as the water spreads" : "", nx, ny, prec ? "double" : "float",
              (long long)steps[0], vol[0]);
        if (every[c])
          CHECK(ran && moves.mode == TS_BALANCE_DYNAMIC && moves.rebalances > 0 &&
                    moves.moved_cells > 0 && moves.imbalance_before > 1,
                "%d partitions moved leaves %d times (%lld cells; imbalance at the first look "
                "%.2f, at the last %.2f)",
                cuts[c], moves.rebalances, (long long)moves.moved_cells, moves.imbalance_before,
                moves.imbalance_after);
      }
      if (!size) {
        ts_raster_free(&rain);
        ts_raster_free(&initial);
        ts_raster_free((ts_raster *)&p.rain.grids[1]);
      }
    }
    free(one);
    free(cut);
    ts_raster_free(&bed);
    ts_raster_free(&h0);
    ts_raster_free(&refine);
  }
}

int main(void) {
  partitions();
  sources();
  one_level_is_uniform();
  lake_at_rest();
  mass_and_restart();
  return failures != 0;
}
