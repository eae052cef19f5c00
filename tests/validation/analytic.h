/* Shared helpers of the validation suite: exact solutions of the shallow-water equations (Ritter
 * and Stoker dam breaks, Thacker's planar surface in a paraboloid), L1 error norms, raster and
 * solver helpers, and a CHECK macro that counts failures instead of aborting so that every test
 * prints all its measured numbers before it exits. Every test ends with `return val_finish();`. */
#ifndef TESSERA_VALIDATION_ANALYTIC_H
#define TESSERA_VALIDATION_ANALYTIC_H

#include <stdint.h>
#include <stdio.h>

#include "tessera/swe.h"

#define VAL_G 9.81
#define VAL_PI 3.14159265358979323846

/* Number of failed CHECKs so far. */
extern int val_failures;

/* CHECK(condition, printf-style message): prints "ok" or "FAIL" with the message and the
 * location, counts failures. The message should carry the measured number and the tolerance. */
#define CHECK(cond, ...) val_check_((cond) ? 1 : 0, __FILE__, __LINE__, __VA_ARGS__)
void val_check_(int ok, const char *file, int line, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* TRY(call returning ts_status): on failure prints the library's message and exits with 1 (a
 * solver error such as TS_ERR_NUMERIC is a test failure, reported as "SOLVER ERROR"). */
#define TRY(expr) val_try_((expr), #expr, __FILE__, __LINE__)
void val_try_(ts_status st, const char *expr, const char *file, int line);

/* Prints a one-line summary and returns the exit status (0: all checks passed). */
int val_finish(void);

/* ---- exact solutions (g = gravity) ---- */

/* Ritter: dam at x0, depth hl to the left, dry bed to the right, flat frictionless bed. */
void val_ritter(double hl, double x0, double g, double x, double t, double *h, double *u);

/* Stoker: dam at x0, depths hl > hr > 0. The intermediate state (hm, um) is the root of the
 * rarefaction and shock (Rankine-Hugoniot) relations, found by bisection. */
void val_stoker_state(double hl, double hr, double g, double *hm, double *um, double *shock_speed);
void val_stoker(double hl, double hr, double x0, double g, double x, double t, double *h,
                double *u);

/* Thacker's planar surface in a paraboloid (SWASHES, Delestre et al. 2013, section 4.2.2):
 * bed z = -h0 (1 - r^2/a^2), r the distance from (xc, yc); surface
 *   eta = eta_amp h0 / a^2 (2 (x-xc) cos wt + 2 (y-yc) sin wt - eta_amp),  w = sqrt(2 g h0) / a,
 * depth h = max(0, eta - z), velocity u = -eta_amp w sin wt, v = eta_amp w cos wt where wet. */
typedef struct val_thacker {
  double a, h0, eta_amp, xc, yc, g;
} val_thacker;
double val_thacker_omega(const val_thacker *p);
double val_thacker_period(const val_thacker *p);
double val_thacker_bed(const val_thacker *p, double x, double y);
void val_thacker_sol(const val_thacker *p, double x, double y, double t, double *h, double *u,
                     double *v);

/* ---- norms ---- */

/* Sum over cells (where mask is NULL or mask[c] != 0, and both values finite) of |a - b| * area. */
double val_l1(const double *a, const double *b, const unsigned char *mask, int64_t n, double area);
double val_max_abs_diff(const double *a, const double *b, int64_t n);

/* ---- rasters and solvers ---- */

/* A raster whose values are owned by the caller-visible v (malloc'ed, zero-filled); free with
 * val_raster_free. NODATA is -9999. */
ts_raster val_raster(int nx, int ny, double dx, double xll, double yll);
void val_raster_free(ts_raster *r);
/* Transposed copy: B.v[j + i * ny] = A.v[i + j * nx], ncols and nrows swapped. */
ts_raster val_raster_transpose(const ts_raster *a);

/* Cell-centre coordinates of raster cell (i, j). */
double val_xc(const ts_raster *r, int i);
double val_yc(const ts_raster *r, int j);

/* The bed as the scheme sees it (TS_SWE_BED), obtained by creating a dry solver on `bed`. */
void val_scheme_bed(const ts_swe_params *p, const ts_raster *bed, double *out);

/* Creates a solver at rest-or-moving with water surface eta[c] (NULL: use h directly) over the
 * scheme's bed: h0 = max(0, eta - bed_scheme). hu, hv may be NULL. */
ts_swe *val_create_eta(const ts_swe_params *p, const ts_raster *bed, const double *eta,
                       const ts_raster *hu, const ts_raster *hv, const ts_raster *friction);

/* Advances to time t_end exactly (last step shortened); returns the number of steps taken. Exits
 * with a SOLVER ERROR if the solver fails or more than max_steps are needed. */
int64_t val_run_to(ts_swe *s, double t_end, int64_t max_steps);

/* Advances nsteps CFL steps. */
void val_run_steps(ts_swe *s, int64_t nsteps);

/* Minimum of a variable over active cells. */
double val_min_var(const ts_swe *s, ts_swe_var var);

/* Wall-clock seconds (monotonic). */
double val_now(void);

/* ---- CLI helpers (tests that run the `tessera` program) ---- */

/* Exit status with which a test reports "skipped" to CTest (SKIP_RETURN_CODE). */
#define VAL_SKIP 77

/* Path of the CLI from $TESSERA_BINARY, or NULL (with a SKIP line printed) if it is missing. */
const char *val_cli(void);

/* Reads an ESRI ASCII grid (north row first in the file) into r (south row first); 0 on success. */
int val_read_asc(const char *path, ts_raster *r);

/* Reads a whole file (malloc'ed, NUL-terminated; *len its size); NULL if it cannot be read. */
char *val_read_file(const char *path, size_t *len);
/* 1 when both files can be read and hold the same bytes. */
int val_same_file(const char *a, const char *b);

/* Writes an ESRI ASCII grid with 17 significant digits; 0 on success. */
int val_write_asc(const char *path, const ts_raster *r);

#endif
