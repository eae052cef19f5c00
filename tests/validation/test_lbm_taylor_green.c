/* Lattice Boltzmann Taylor-Green vortex in a periodic box: u = -U cos(kx) sin(ky),
 * v = U sin(kx) cos(ky) with the matching pressure, decaying as exp(-2 nu k^2 t). After the
 * amplitude has fallen to about 0.45 U the velocity field must match the analytic one within 0.2 %
 * of U at N = 64 and the error must fall at second order from N = 32 (the time and viscosity scale
 * with N^2 and N, so the lattice error is O(1/N^2)). D2Q9 SRT and TRT, and D3Q19 on a box one
 * period deep along z (the same 2D flow). */
#include <math.h>
#include <stdlib.h>

#include "tessera/lbm.h"
#include "validation/analytic.h"

typedef struct vortex {
  int n;
  double u0;
} vortex;

static void initial(void *arg, int i, int j, int k, double *rho, double u[3]) {
  (void)k;
  const vortex *v = arg;
  double kk = 2 * VAL_PI / v->n, x = i + 0.5, y = j + 0.5;
  u[0] = -v->u0 * cos(kk * x) * sin(kk * y);
  u[1] = v->u0 * sin(kk * x) * cos(kk * y);
  u[2] = 0;
  *rho = 1 - 0.75 * v->u0 * v->u0 * (cos(2 * kk * x) + cos(2 * kk * y));
}

/* Largest velocity error after the decay, in units of U. */
static double vortex_error(ts_lbm_lattice lattice, ts_lbm_collision collision, int n) {
  vortex v = {n, 0.04 * 32 / n};
  ts_lbm_params p;
  ts_lbm_params_default(&p);
  p.lattice = lattice;
  p.collision = collision;
  p.n[0] = p.n[1] = n;
  p.n[2] = lattice == TS_LBM_D3Q19 ? 4 : 1;
  double nu = 0.02 * n / 32, kk = 2 * VAL_PI / n;
  p.tau = 3 * nu + 0.5;
  for (int f = 0; f < 6; f++)
    p.face[f].type = TS_LBM_PERIODIC;
  p.initial = initial;
  p.initial_arg = &v;
  int steps = (int)round(0.4 / (nu * kk * kk));
  ts_lbm *s;
  TRY(ts_lbm_create(&s, &p, ts_comm_world()));
  TRY(ts_lbm_step(s, steps));
  int64_t cells = (int64_t)n * n * p.n[2];
  double *ux = malloc(sizeof(double) * (size_t)cells), *uy = malloc(sizeof(double) * (size_t)cells);
  TRY(ts_lbm_get(s, TS_LBM_UX, ux));
  TRY(ts_lbm_get(s, TS_LBM_UY, uy));
  double decay = exp(-2 * nu * kk * kk * steps), worst = 0;
  for (int64_t c = 0; c < cells; c++) {
    double u[3], rho;
    initial(&v, (int)(c % n), (int)(c / n % n), 0, &rho, u);
    worst = fmax(worst, fmax(fabs(ux[c] - u[0] * decay), fabs(uy[c] - u[1] * decay)));
  }
  free(ux);
  free(uy);
  ts_lbm_destroy(s);
  printf("N = %d: amplitude %.3f U after %d steps, largest error %.3e U\n", n, decay, steps,
         worst / v.u0);
  return worst / v.u0;
}

int main(void) {
  struct {
    const char *name;
    ts_lbm_lattice lattice;
    ts_lbm_collision collision;
  } runs[3] = {{"D2Q9 SRT", TS_LBM_D2Q9, TS_LBM_SRT},
               {"D2Q9 TRT", TS_LBM_D2Q9, TS_LBM_TRT},
               {"D3Q19 SRT", TS_LBM_D3Q19, TS_LBM_SRT}};
  for (int r = 0; r < 3; r++) {
    double e32 = vortex_error(runs[r].lattice, runs[r].collision, 32);
    double e64 = vortex_error(runs[r].lattice, runs[r].collision, 64);
    CHECK(e64 < 2e-3, "%s: error %.2e U at N = 64 (< 2e-3)", runs[r].name, e64);
    double order = log(e32 / e64) / log(2.0);
    CHECK(order > 1.7, "%s: order %.2f from N = 32 to 64 (> 1.7)", runs[r].name, order);
  }
  return val_finish();
}
