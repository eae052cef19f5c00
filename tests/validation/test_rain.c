/* Validation: rain, losses and the volume budget.
 *
 *  1. Rain on a closed flat basin (walls, 20 x 16 cells of 2 m): every cell holds rate x time.
 *     Tolerance: 1e-12 relative (double), 1e-6 (float); the surface is summed with compensation.
 *  2. Rain on a plane tilted towards an outflow side (east): once steady, the outflow equals the
 *     rain falling on the plane (rain x area) to 1 %; the budget closes.
 *  3. Losses larger than the rain (continuing loss 2 x the rate): no water ponds anywhere and the
 *     losses take all the rain.
 *  4. A radar-like stack: three frames of gridded rain (a moving band, with a dry frame between)
 *     on the closed flat basin: each cell holds the sum of its rates x frame lengths.
 *  5. An inflow hydrograph into a basin with an outflow side: inflow = the hydrograph's integral
 *     to 1e-3 (RK2 integrates its linear pieces exactly, but steps do not land on its kinks).
 *  6. Every budget closes: |initial + rain + inflow - outflow - losses - final| / (initial + rain +
 *     inflow) < 1e-12 (double) and 1e-6 (float).
 *  7. The same runs split into 2 x 2 tiles give the same state and budget, bit for bit. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analytic.h"

static const double MM_PER_H = 1e-3 / 3600;

typedef struct run_result {
  double *h;
  ts_swe_budget b;
  double v0, v1;
} run_result;

/* A solver with the surface eta (NULL: dry everywhere). */
static ts_swe *dry_solver(const ts_swe_params *p, const ts_raster *bed, const double *eta) {
  size_t n = (size_t)bed->ncols * bed->nrows;
  double *dry = malloc(sizeof(double) * n);
  for (size_t c = 0; c < n; c++)
    dry[c] = eta ? eta[c] : -1e3;
  ts_swe *s = val_create_eta(p, bed, dry, NULL, NULL, NULL);
  free(dry);
  return s;
}

/* Advances to t_end with steps of at most 10 s: a dry domain has no wave speed, and a CFL step
 * would cross the whole run at once. */
static void run_to(ts_swe *s, double t_end) {
  while (ts_swe_time(s) < t_end)
    val_run_to(s, fmin(t_end, ts_swe_time(s) + 10), 10000000);
}

/* Runs to t_end and returns the depths and the budget. */
static run_result run(ts_swe_params *p, const ts_raster *bed, const double *eta, double t_end,
                      int subdomains) {
  p->parallel.subdomains = subdomains;
  ts_swe *s = dry_solver(p, bed, eta);
  run_result r = {0};
  r.v0 = ts_swe_volume(s);
  run_to(s, t_end);
  r.v1 = ts_swe_volume(s);
  TRY(ts_swe_budget_get(s, &r.b));
  r.h = malloc(sizeof(double) * (size_t)bed->ncols * bed->nrows);
  TRY(ts_swe_get(s, TS_SWE_H, r.h));
  ts_swe_destroy(s);
  return r;
}

static double closure(const run_result *r) {
  double in = r->v0 + r->b.rain + r->b.inflow;
  return (in - r->b.outflow - r->b.losses - r->v1) / fmax(in, 1e-300);
}

/* The budget closes and a 2 x 2 split gives the same bits. */
static void check_budget_and_split(const char *name, ts_swe_params *p, const ts_raster *bed,
                                   const double *eta, double t_end, run_result *whole) {
  double tol = p->precision == TS_DOUBLE ? 1e-12 : 1e-6;
  double e = closure(whole);
  CHECK(fabs(e) < tol,
        "%s %s: budget closes: rel_error %.2e (tolerance %.0e; initial %.9g, rain %.9g, inflow "
        "%.9g, outflow %.9g, losses %.9g, final %.9g m3)",
        name, ts_precision_name(p->precision), e, tol, whole->v0, whole->b.rain, whole->b.inflow,
        whole->b.outflow, whole->b.losses, whole->v1);
  run_result split = run(p, bed, eta, t_end, 4);
  size_t n = (size_t)bed->ncols * bed->nrows;
  CHECK(memcmp(split.h, whole->h, n * sizeof(double)) == 0 &&
            memcmp(&split.b, &whole->b, sizeof split.b) == 0,
        "%s %s: 4 subdomains give the same depths and budget bit for bit", name,
        ts_precision_name(p->precision));
  p->parallel.subdomains = 0;
  free(split.h);
}

static void flat_basin(ts_precision prec) {
  ts_raster bed = val_raster(20, 16, 2, 0, 0);
  for (int c = 0; c < 20 * 16; c++) /* at 0 m, so float resolves the depth itself */
    bed.v[c] = 0.0;
  ts_swe_params p;
  ts_swe_params_default(&p);
  p.precision = prec;
  double t0 = 0, rate = 36 * MM_PER_H; /* 36 mm/h = 1e-5 m/s */
  p.rain = (ts_swe_rain){1, &t0, 600, &rate, NULL};
  run_result r = run(&p, &bed, NULL, 900, 0);
  double expect = rate * 600, worst = 0;
  for (int c = 0; c < 20 * 16; c++)
    worst = fmax(worst, fabs(r.h[c] - expect) / expect);
  double tol = prec == TS_DOUBLE ? 1e-12 : 1e-6;
  CHECK(worst < tol, "flat basin %s: depth = rate x time (%.6g m) to %.2e (tolerance %.0e)",
        ts_precision_name(prec), expect, worst, tol);
  CHECK(fabs(r.b.rain - expect * 40 * 32) / (expect * 40 * 32) < (prec == TS_DOUBLE ? 1e-12 : 1e-7),
        "flat basin %s: budget rain %.9g m3 = rate x time x area (the rate as %s holds it)",
        ts_precision_name(prec), r.b.rain, ts_precision_name(prec));
  check_budget_and_split("flat basin", &p, &bed, NULL, 900, &r);
  free(r.h);

  /* 4. a moving band of rain, then a dry frame, then rain on the other half */
  ts_raster frames[3] = {val_raster(20, 16, 2, 0, 0), val_raster(20, 16, 2, 0, 0),
                         val_raster(20, 16, 2, 0, 0)};
  for (int j = 0; j < 16; j++)
    for (int i = 0; i < 20; i++) {
      frames[0].v[i + 20 * j] = i < 10 ? 50 * MM_PER_H : 0;
      frames[1].v[i + 20 * j] = 0;
      frames[2].v[i + 20 * j] = i >= 10 ? 20 * MM_PER_H : (i == 0 ? frames[2].nodata : 0);
    }
  double times[3] = {0, 100, 250};
  p.rain = (ts_swe_rain){3, times, 400, NULL, frames};
  r = run(&p, &bed, NULL, 500, 0);
  /* water spreads over the flat bed afterwards: compare the total and the budget */
  double total = 0;
  for (int c = 0; c < 20 * 16; c++)
    total += r.h[c] * 4;
  double expect_total = (10 * 16 * 50 * MM_PER_H * 100 + 10 * 16 * 20 * MM_PER_H * 150) * 4;
  CHECK(fabs(total - expect_total) / expect_total < (prec == TS_DOUBLE ? 1e-12 : 1e-5),
        "rain stack %s: water %.9g m3, expected the frames' sum %.9g m3", ts_precision_name(prec),
        total, expect_total);
  CHECK(fabs(r.b.rain - expect_total) / expect_total < 1e-6, "rain stack %s: budget rain %.9g m3",
        ts_precision_name(prec), r.b.rain);
  check_budget_and_split("rain stack", &p, &bed, NULL, 500, &r);
  free(r.h);
  for (int f = 0; f < 3; f++)
    val_raster_free(&frames[f]);

  /* 3. losses above the rain: nothing ponds */
  p.rain = (ts_swe_rain){1, &t0, 600, &rate, NULL};
  p.losses.rate = 2 * rate;
  p.losses.initial = 0.001;
  r = run(&p, &bed, NULL, 700, 0);
  double hmax = 0;
  for (int c = 0; c < 20 * 16; c++)
    hmax = fmax(hmax, r.h[c]);
  CHECK(hmax == 0, "losses over the rain %s: nothing ponds (largest depth %g m)",
        ts_precision_name(prec), hmax);
  CHECK(fabs(r.b.losses - r.b.rain) <= 1e-6 * r.b.rain,
        "losses over the rain %s: losses %.9g m3 take all the rain %.9g m3",
        ts_precision_name(prec), r.b.losses, r.b.rain);
  check_budget_and_split("losses", &p, &bed, NULL, 700, &r);
  free(r.h);
  val_raster_free(&bed);
}

static void tilted_plane(ts_precision prec) {
  const int nx = 40, ny = 10;
  ts_raster bed = val_raster(nx, ny, 5, 0, 0);
  for (int j = 0; j < ny; j++)
    for (int i = 0; i < nx; i++)
      bed.v[i + nx * j] = 0.01 * (100 - val_xc(&bed, i)); /* around 0 m, for float's sake */
  ts_swe_params p;
  ts_swe_params_default(&p);
  p.precision = prec;
  p.friction = TS_FRICTION_MANNING;
  p.friction_value = 0.03;
  p.bc[TS_EAST].type = TS_BC_OUTFLOW;
  double t0 = 0, rate = 100 * MM_PER_H;
  p.rain = (ts_swe_rain){1, &t0, INFINITY, &rate, NULL};
  ts_swe *s = dry_solver(&p, &bed, NULL);
  run_to(s, 3000);
  ts_swe_budget b0, b1;
  TRY(ts_swe_budget_get(s, &b0));
  run_to(s, 3600);
  TRY(ts_swe_budget_get(s, &b1));
  double outflow_rate = (b1.outflow - b0.outflow) / 600, rain_rate = rate * nx * ny * 25;
  CHECK(fabs(outflow_rate - rain_rate) / rain_rate < 0.01,
        "tilted plane %s: steady outflow %.6g m3/s = rain x area %.6g m3/s (1 %%)",
        ts_precision_name(prec), outflow_rate, rain_rate);
  CHECK(b1.inflow < 0.005 * b1.outflow,
        "tilted plane %s: little flows back in through the outflow side (%g m3 of %g m3)",
        ts_precision_name(prec), b1.inflow, b1.outflow);
  ts_swe_destroy(s);
  run_result r = run(&p, &bed, NULL, 1200, 0);
  check_budget_and_split("tilted plane", &p, &bed, NULL, 1200, &r);
  free(r.h);
  val_raster_free(&bed);
}

static void inflow_basin(ts_precision prec) {
  const int nx = 30, ny = 12;
  ts_raster bed = val_raster(nx, ny, 4, 0, 0);
  for (int j = 0; j < ny; j++)
    for (int i = 0; i < nx; i++)
      bed.v[i + nx * j] = 1.0 - 0.002 * val_xc(&bed, i);
  ts_swe_params p;
  ts_swe_params_default(&p);
  p.precision = prec;
  p.friction = TS_FRICTION_MANNING;
  p.friction_value = 0.03;
  double t[3] = {0, 200, 400}, q[3] = {1, 5, 1};
  p.bc[TS_WEST] = (ts_swe_bc){TS_BC_INFLOW, 0, 3, t, q};
  p.bc[TS_EAST].type = TS_BC_OUTFLOW;
  run_result r = run(&p, &bed, NULL, 600, 0);
  double expect = 0.5 * (1 + 5) * 200 + 0.5 * (5 + 1) * 200 + 1 * 200; /* its integral */
  double tol = 1e-3; /* steps do not land on the hydrograph's kinks */
  CHECK(fabs(r.b.inflow - expect) / expect < tol,
        "inflow %s: %.9g m3 entered, the hydrograph gives %.9g m3 (tolerance %.0e)",
        ts_precision_name(prec), r.b.inflow, expect, tol);
  CHECK(r.b.outflow > 0, "inflow %s: water left through the outflow side (%.6g m3)",
        ts_precision_name(prec), r.b.outflow);
  check_budget_and_split("inflow", &p, &bed, NULL, 600, &r);
  free(r.h);
  val_raster_free(&bed);
}

int main(void) {
  for (int d = 0; d < 2; d++) {
    ts_precision prec = d ? TS_FLOAT : TS_DOUBLE;
    flat_basin(prec);
    tilted_plane(prec);
    inflow_basin(prec);
  }
  return val_finish();
}
