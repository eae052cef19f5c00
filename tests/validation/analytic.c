/* Exact shallow-water solutions and helpers shared by the validation tests (see analytic.h).
 * The formulas are derived here from the characteristic and Rankine-Hugoniot relations. */
#define _POSIX_C_SOURCE 200809L
#include "analytic.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int val_failures = 0;

void val_check_(int ok, const char *file, int line, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  printf("%s ", ok ? "  ok  " : "  FAIL");
  vprintf(fmt, ap);
  va_end(ap);
  if (!ok) {
    printf("   [%s:%d]", file, line);
    val_failures++;
  }
  printf("\n");
  fflush(stdout);
}

void val_try_(ts_status st, const char *expr, const char *file, int line) {
  if (st == TS_OK)
    return;
  printf("SOLVER ERROR %s:%d: %s returned %d: %s\n", file, line, expr, (int)st, ts_error_message());
  printf("RESULT: FAIL (library call failed)\n");
  fflush(stdout);
  exit(1);
}

int val_finish(void) {
  if (val_failures)
    printf("RESULT: FAIL (%d check%s failed)\n", val_failures, val_failures == 1 ? "" : "s");
  else
    printf("RESULT: PASS\n");
  fflush(stdout);
  return val_failures ? 1 : 0;
}

/* ---- Ritter ---- */

void val_ritter(double hl, double x0, double g, double x, double t, double *h, double *u) {
  double c = sqrt(g * hl);
  if (t <= 0) {
    *h = x < x0 ? hl : 0;
    *u = 0;
    return;
  }
  double xi = (x - x0) / t;
  if (xi <= -c) {
    *h = hl;
    *u = 0;
  } else if (xi < 2 * c) {
    double s = 2 * c - xi; /* = 3 sqrt(g h) on the rarefaction fan */
    *h = s * s / (9 * g);
    *u = 2.0 / 3.0 * (xi + c);
  } else {
    *h = 0;
    *u = 0;
  }
}

/* ---- Stoker ---- */

/* Rarefaction minus shock velocity of the middle state as a function of its depth: decreasing. */
static double stoker_f(double hm, double hl, double hr, double g) {
  double u_rare = 2 * (sqrt(g * hl) - sqrt(g * hm));
  double u_shock = (hm - hr) * sqrt(0.5 * g * (1 / hm + 1 / hr));
  return u_rare - u_shock;
}

void val_stoker_state(double hl, double hr, double g, double *hm, double *um, double *shock_speed) {
  double lo = hr, hi = hl;
  for (int it = 0; it < 200; it++) {
    double mid = 0.5 * (lo + hi);
    if (stoker_f(mid, hl, hr, g) > 0)
      lo = mid;
    else
      hi = mid;
  }
  *hm = 0.5 * (lo + hi);
  *um = 2 * (sqrt(g * hl) - sqrt(g * *hm));
  *shock_speed = *hm * *um / (*hm - hr);
}

void val_stoker(double hl, double hr, double x0, double g, double x, double t, double *h,
                double *u) {
  if (t <= 0) {
    *h = x < x0 ? hl : hr;
    *u = 0;
    return;
  }
  double hm, um, s;
  val_stoker_state(hl, hr, g, &hm, &um, &s);
  double cl = sqrt(g * hl), cm = sqrt(g * hm);
  double xi = (x - x0) / t;
  if (xi <= -cl) {
    *h = hl;
    *u = 0;
  } else if (xi <= um - cm) {
    double q = 2 * cl - xi;
    *h = q * q / (9 * g);
    *u = 2.0 / 3.0 * (xi + cl);
  } else if (xi < s) {
    *h = hm;
    *u = um;
  } else {
    *h = hr;
    *u = 0;
  }
}

/* ---- Thacker planar surface ---- */

double val_thacker_omega(const val_thacker *p) { return sqrt(2 * p->g * p->h0) / p->a; }
double val_thacker_period(const val_thacker *p) { return 2 * VAL_PI / val_thacker_omega(p); }

double val_thacker_bed(const val_thacker *p, double x, double y) {
  double dx = x - p->xc, dy = y - p->yc;
  return -p->h0 * (1 - (dx * dx + dy * dy) / (p->a * p->a));
}

void val_thacker_sol(const val_thacker *p, double x, double y, double t, double *h, double *u,
                     double *v) {
  double w = val_thacker_omega(p), c = cos(w * t), s = sin(w * t);
  double eta =
      p->eta_amp * p->h0 / (p->a * p->a) * (2 * (x - p->xc) * c + 2 * (y - p->yc) * s - p->eta_amp);
  double d = eta - val_thacker_bed(p, x, y);
  if (d > 0) {
    *h = d;
    *u = -p->eta_amp * w * s;
    *v = p->eta_amp * w * c;
  } else {
    *h = 0;
    *u = 0;
    *v = 0;
  }
}

/* ---- norms ---- */

double val_l1(const double *a, const double *b, const unsigned char *mask, int64_t n, double area) {
  double sum = 0;
  for (int64_t c = 0; c < n; c++) {
    if (mask && !mask[c])
      continue;
    if (!isfinite(a[c]) || !isfinite(b[c]))
      continue;
    sum += fabs(a[c] - b[c]) * area;
  }
  return sum;
}

double val_max_abs_diff(const double *a, const double *b, int64_t n) {
  double m = 0;
  for (int64_t c = 0; c < n; c++) {
    double d = fabs(a[c] - b[c]);
    if (isnan(a[c]) != isnan(b[c]))
      d = INFINITY;
    if (d > m)
      m = d;
  }
  return m;
}

/* ---- rasters and solvers ---- */

ts_raster val_raster(int nx, int ny, double dx, double xll, double yll) {
  ts_raster r;
  memset(&r, 0, sizeof r);
  r.ncols = nx;
  r.nrows = ny;
  r.xll = xll;
  r.yll = yll;
  r.cellsize = dx;
  r.nodata = -9999;
  r.v = calloc((size_t)nx * (size_t)ny, sizeof(double));
  if (!r.v) {
    printf("out of memory\n");
    exit(1);
  }
  return r;
}

void val_raster_free(ts_raster *r) {
  free(r->v);
  r->v = NULL;
}

ts_raster val_raster_transpose(const ts_raster *a) {
  ts_raster b = val_raster(a->nrows, a->ncols, a->cellsize, a->yll, a->xll);
  b.nodata = a->nodata;
  for (int j = 0; j < a->nrows; j++)
    for (int i = 0; i < a->ncols; i++)
      b.v[j + (size_t)i * a->nrows] = a->v[i + (size_t)j * a->ncols];
  return b;
}

double val_xc(const ts_raster *r, int i) { return r->xll + (i + 0.5) * r->cellsize; }
double val_yc(const ts_raster *r, int j) { return r->yll + (j + 0.5) * r->cellsize; }

void val_scheme_bed(const ts_swe_params *p, const ts_raster *bed, double *out) {
  ts_swe *s = NULL;
  TRY(ts_swe_create(&s, p, bed, NULL, NULL, NULL, NULL));
  TRY(ts_swe_get(s, TS_SWE_BED, out));
  ts_swe_destroy(s);
}

ts_swe *val_create_eta(const ts_swe_params *p, const ts_raster *bed, const double *eta,
                       const ts_raster *hu, const ts_raster *hv, const ts_raster *friction) {
  size_t n = (size_t)bed->ncols * (size_t)bed->nrows;
  ts_raster h0 = val_raster(bed->ncols, bed->nrows, bed->cellsize, bed->xll, bed->yll);
  double *zb = malloc(n * sizeof(double));
  val_scheme_bed(p, bed, zb);
  for (size_t c = 0; c < n; c++) {
    double d = eta[c] - zb[c];
    h0.v[c] = (isfinite(d) && d > 0) ? d : 0;
  }
  ts_swe *s = NULL;
  TRY(ts_swe_create(&s, p, bed, &h0, hu, hv, friction));
  free(zb);
  val_raster_free(&h0);
  return s;
}

int64_t val_run_to(ts_swe *s, double t_end, int64_t max_steps) {
  int64_t n = 0;
  while (ts_swe_time(s) < t_end * (1 - 1e-14)) {
    double dt;
    TRY(ts_swe_step(s, t_end - ts_swe_time(s), &dt));
    if (++n > max_steps) {
      printf("SOLVER ERROR: more than %lld steps to reach t = %g (t = %g, last dt = %g)\n",
             (long long)max_steps, t_end, ts_swe_time(s), dt);
      printf("RESULT: FAIL\n");
      exit(1);
    }
  }
  return n;
}

void val_run_steps(ts_swe *s, int64_t nsteps) {
  for (int64_t k = 0; k < nsteps; k++) {
    double dt;
    TRY(ts_swe_step(s, 1e30, &dt));
  }
}

double val_min_var(const ts_swe *s, ts_swe_var var) {
  const ts_grid *g = ts_swe_grid(s);
  int64_t n = ts_grid_cells(g);
  double *v = malloc((size_t)n * sizeof(double));
  TRY(ts_swe_get(s, var, v));
  double m = INFINITY;
  for (int64_t c = 0; c < n; c++)
    if (!isnan(v[c]) && v[c] < m)
      m = v[c];
  free(v);
  return m;
}

double val_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

/* ---- CLI helpers ---- */

const char *val_cli(void) {
  const char *b = getenv("TESSERA_BINARY");
  if (!b || !*b || access(b, X_OK) != 0) {
    printf("SKIP: the tessera CLI is not available (TESSERA_BINARY=%s)\n", b ? b : "(unset)");
    return NULL;
  }
  return b;
}

char *val_read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap + 1);
  size_t got;
  while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
    n += got;
    if (n == cap) {
      cap *= 2;
      char *nb = realloc(buf, cap + 1);
      if (!nb) {
        free(buf);
        buf = NULL;
      }
      buf = nb;
    }
  }
  fclose(f);
  if (!buf)
    return NULL;
  buf[n] = 0;
  if (len)
    *len = n;
  return buf;
}

int val_read_asc(const char *path, ts_raster *r) {
  FILE *f = fopen(path, "r");
  if (!f)
    return -1;
  int nc = -1, nr = -1, centre = 0;
  double xll = 0, yll = 0, cs = 0, nodata = -9999;
  char key[64];
  long pos = ftell(f);
  while (fscanf(f, "%63s", key) == 1) {
    double v;
    if ((key[0] >= '0' && key[0] <= '9') || key[0] == '-' || key[0] == '.' || key[0] == '+') {
      fseek(f, pos, SEEK_SET);
      break;
    }
    if (fscanf(f, "%lf", &v) != 1)
      break;
    for (char *p = key; *p; p++)
      *p = (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
    if (!strcmp(key, "ncols"))
      nc = (int)v;
    else if (!strcmp(key, "nrows"))
      nr = (int)v;
    else if (!strcmp(key, "xllcorner"))
      xll = v;
    else if (!strcmp(key, "yllcorner"))
      yll = v;
    else if (!strcmp(key, "xllcenter"))
      xll = v, centre = 1;
    else if (!strcmp(key, "yllcenter"))
      yll = v, centre = 1;
    else if (!strcmp(key, "cellsize"))
      cs = v;
    else if (!strcmp(key, "nodata_value"))
      nodata = v;
    pos = ftell(f);
  }
  if (nc <= 0 || nr <= 0 || !(cs > 0)) {
    fclose(f);
    return -1;
  }
  if (centre)
    xll -= cs / 2, yll -= cs / 2;
  *r = val_raster(nc, nr, cs, xll, yll);
  r->nodata = nodata;
  for (int j = nr - 1; j >= 0; j--)
    for (int i = 0; i < nc; i++) {
      char tok[64];
      if (fscanf(f, "%63s", tok) != 1) {
        fclose(f);
        val_raster_free(r);
        return -1;
      }
      r->v[i + (size_t)j * nc] = strtod(tok, NULL); /* strtod also reads nan */
    }
  fclose(f);
  return 0;
}

int val_write_asc(const char *path, const ts_raster *r) {
  FILE *f = fopen(path, "w");
  if (!f)
    return -1;
  fprintf(
      f,
      "ncols %d\nnrows %d\nxllcorner %.17g\nyllcorner %.17g\ncellsize %.17g\nNODATA_value %.17g\n",
      r->ncols, r->nrows, r->xll, r->yll, r->cellsize, r->nodata);
  for (int j = r->nrows - 1; j >= 0; j--)
    for (int i = 0; i < r->ncols; i++)
      fprintf(f, "%.17g%c", r->v[i + (size_t)j * r->ncols], i + 1 == r->ncols ? '\n' : ' ');
  return fclose(f) == 0 ? 0 : -1;
}

int val_same_file(const char *a, const char *b) {
  size_t na, nb;
  char *x = val_read_file(a, &na), *y = val_read_file(b, &nb);
  int same = x && y && na == nb && memcmp(x, y, na) == 0;
  free(x);
  free(y);
  return same;
}
