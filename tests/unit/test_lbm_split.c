/* Lattice Boltzmann decomposition invariance: every split (rows, columns, tiles, several
 * subdomains per process) gives the density and velocity of one subdomain bit for bit, after an
 * even and an odd number of steps, for D2Q9 and D3Q19, SRT and TRT, fp32 and fp16, with walls,
 * lids, obstacles crossing subdomain borders, inlets and outlets, periodic faces (split or not)
 * and a force. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tessera/lbm.h"
#include "unit/check.h"

/* A smooth initial flow, so that every population differs from the start. */
static void swirl(void *arg, int i, int j, int k, double *rho, double u[3]) {
  (void)arg;
  *rho = 1 + 0.01 * sin(0.3 * i + 0.2 * j + 0.1 * k);
  u[0] = 0.02 * sin(0.25 * j + 0.1 * k);
  u[1] = 0.02 * cos(0.2 * i);
  u[2] = 0.01 * sin(0.15 * (i + j));
}

/* Runs `steps` steps and returns rho, ux, uy, uz of every cell (4 arrays one after the other). */
static double *run(const ts_lbm_params *p, int subdomains, ts_decomp_kind kind, const int *parts,
                   int steps) {
  ts_lbm_params q = *p;
  q.subdomains = subdomains;
  q.decomposition = kind;
  if (parts)
    memcpy(q.parts, parts, sizeof q.parts);
  ts_lbm *s;
  if (ts_lbm_create(&s, &q, ts_comm_world()) != TS_OK) {
    printf("create failed: %s\n", ts_error_message());
    return NULL;
  }
  int64_t cells = (int64_t)p->n[0] * p->n[1] * p->n[2];
  double *out = malloc(sizeof(double) * 4 * (size_t)cells);
  ts_status st = ts_lbm_step(s, steps);
  for (int v = 0; v < 4 && st == TS_OK; v++)
    st = ts_lbm_get(s, (ts_lbm_var)v, out + v * cells);
  ts_lbm_destroy(s);
  if (st != TS_OK) {
    free(out);
    return NULL;
  }
  return out;
}

/* A solid ball of radius r around the domain's corner, periodically wrapped (it reaches into
 * every corner of the box). */
static unsigned char *corner_ball(const int n[3], int r) {
  unsigned char *solid = calloc((size_t)n[0] * n[1] * n[2], 1);
  for (int k = 0; k < n[2]; k++)
    for (int j = 0; j < n[1]; j++)
      for (int i = 0; i < n[0]; i++) {
        int c[3] = {i, j, k}, d2 = 0;
        for (int a = 0; a < 3; a++) {
          int d = c[a] < n[a] - c[a] ? c[a] : n[a] - c[a];
          d2 += n[a] > 1 ? d * d : 0;
        }
        solid[i + n[0] * (j + n[1] * k)] = d2 <= r * r;
      }
  return solid;
}

static int64_t differing(const double *a, const double *b, int64_t n) {
  int64_t d = 0;
  for (int64_t c = 0; c < n; c++)
    d += memcmp(&a[c], &b[c], sizeof *a) != 0;
  return d;
}

typedef struct split {
  int subdomains;
  ts_decomp_kind kind;
  int parts[3];
} split;

static void compare(const char *name, const ts_lbm_params *p, const split *splits, int nsplits) {
  int64_t cells = (int64_t)p->n[0] * p->n[1] * p->n[2];
  for (int steps = 40; steps <= 41; steps++) {
    double *ref = run(p, 1, TS_DECOMP_AUTO, NULL, steps);
    CHECK(ref != NULL, "%s: one subdomain, %d steps", name, steps);
    int moving = 0;
    for (int64_t c = 0; ref && c < cells; c++)
      moving |= fabs(ref[cells + c]) > 1e-4;
    CHECK(moving, "%s: the flow moves", name);
    for (int k = 0; k < nsplits && ref; k++) {
      const split *sp = &splits[k];
      double *got = run(p, sp->subdomains, sp->kind, sp->parts, steps);
      int64_t d = got ? differing(ref, got, 4 * cells) : -1;
      CHECK(d == 0, "%s: %d subdomains (%s %dx%dx%d), %d steps: %lld values differ", name,
            sp->subdomains, ts_decomp_kind_name(sp->kind), sp->parts[0], sp->parts[1], sp->parts[2],
            steps, (long long)d);
      free(got);
    }
    free(ref);
  }
}

int main(void) {
  ts_lbm_params p;

  /* D2Q9 cavity with a lid, a circle across the subdomain borders, SRT, fp32 */
  ts_lbm_params_default(&p);
  p.n[0] = 37, p.n[1] = 29;
  p.tau = 0.56;
  p.face[TS_LBM_NORTH].type = TS_LBM_MOVING;
  p.face[TS_LBM_NORTH].u[0] = 0.1;
  unsigned char *solid = calloc(37 * 29, 1);
  for (int j = 0; j < 29; j++)
    for (int i = 0; i < 37; i++)
      solid[i + 37 * j] = (i - 18) * (i - 18) + (j - 14) * (j - 14) <= 16;
  p.solid = solid;
  p.initial = swirl;
  split splits2d[] = {{2, TS_DECOMP_ROWS, {0}},
                      {3, TS_DECOMP_COLUMNS, {0}},
                      {4, TS_DECOMP_TILES, {2, 2}},
                      {6, TS_DECOMP_AUTO, {0}},
                      {9, TS_DECOMP_TILES, {3, 3}}};
  compare("D2Q9 cavity, obstacle", &p, splits2d, 5);

  /* the same with TRT, fp16 storage, an inlet west and an outlet east */
  p.collision = TS_LBM_TRT;
  p.storage = TS_LBM_FP16;
  p.face[TS_LBM_WEST].type = TS_LBM_VELOCITY;
  p.face[TS_LBM_WEST].u[0] = 0.05;
  p.face[TS_LBM_EAST].type = TS_LBM_PRESSURE;
  p.face[TS_LBM_EAST].rho = 1.0;
  compare("D2Q9 inlet/outlet, TRT, fp16", &p, splits2d, 5);

  /* a periodic channel driven by a force, with Smagorinsky: split along y only */
  ts_lbm_params_default(&p);
  p.n[0] = 24, p.n[1] = 31;
  p.tau = 0.52;
  p.smagorinsky = 0.17;
  p.force[0] = 1e-5;
  p.face[TS_LBM_WEST].type = p.face[TS_LBM_EAST].type = TS_LBM_PERIODIC;
  p.initial = swirl;
  split channel[] = {{2, TS_DECOMP_ROWS, {0}},
                     {5, TS_DECOMP_ROWS, {0}},
                     {2, TS_DECOMP_COLUMNS, {0}},
                     {3, TS_DECOMP_COLUMNS, {0}},
                     {4, TS_DECOMP_TILES, {2, 2}}};
  compare("D2Q9 periodic channel, force, Smagorinsky", &p, channel, 5);

  /* D2Q9 periodic along both axes, an obstacle across the periodic corner (it wraps round to
   * the four corners), TRT: splits that cut one or both periodic axes */
  ts_lbm_params_default(&p);
  p.n[0] = 26, p.n[1] = 21;
  p.tau = 0.55;
  p.collision = TS_LBM_TRT;
  p.force[0] = 2e-5, p.force[1] = -1e-5;
  p.face[TS_LBM_WEST].type = p.face[TS_LBM_EAST].type = TS_LBM_PERIODIC;
  p.face[TS_LBM_SOUTH].type = p.face[TS_LBM_NORTH].type = TS_LBM_PERIODIC;
  unsigned char *corner = corner_ball(p.n, 4);
  p.solid = corner;
  p.initial = swirl;
  split torus[] = {{2, TS_DECOMP_COLUMNS, {0}},
                   {3, TS_DECOMP_ROWS, {0}},
                   {4, TS_DECOMP_TILES, {2, 2}},
                   {9, TS_DECOMP_TILES, {3, 3}},
                   {6, TS_DECOMP_AUTO, {0}}};
  compare("D2Q9 periodic x and y, corner obstacle, TRT", &p, torus, 5);
  free(corner);

  /* D3Q19 lid-driven box with a sphere, TRT, fp32 and fp16 */
  ts_lbm_params_default(&p);
  p.lattice = TS_LBM_D3Q19;
  p.collision = TS_LBM_TRT;
  p.n[0] = 17, p.n[1] = 14, p.n[2] = 13;
  p.tau = 0.58;
  p.face[TS_LBM_TOP].type = TS_LBM_MOVING;
  p.face[TS_LBM_TOP].u[0] = 0.1;
  unsigned char *ball = calloc(17 * 14 * 13, 1);
  for (int k = 0; k < 13; k++)
    for (int j = 0; j < 14; j++)
      for (int i = 0; i < 17; i++)
        ball[i + 17 * (j + 14 * k)] =
            (i - 8) * (i - 8) + (j - 7) * (j - 7) + (k - 6) * (k - 6) <= 9;
  p.solid = ball;
  p.initial = swirl;
  split splits3d[] = {{2, TS_DECOMP_ROWS, {0}},        {3, TS_DECOMP_COLUMNS, {0}},
                      {4, TS_DECOMP_TILES, {2, 2, 1}}, {4, TS_DECOMP_TILES, {2, 1, 2}},
                      {8, TS_DECOMP_TILES, {2, 2, 2}}, {6, TS_DECOMP_AUTO, {0}}};
  compare("D3Q19 lid box, sphere, TRT", &p, splits3d, 6);
  p.storage = TS_LBM_FP16;
  p.collision = TS_LBM_SRT;
  compare("D3Q19 lid box, sphere, SRT, fp16", &p, splits3d, 6);

  /* D3Q19 periodic along z, inlet/outlet along x, walls along y: splits of x and y */
  p.storage = TS_LBM_FP32;
  p.face[TS_LBM_TOP].type = p.face[TS_LBM_BOTTOM].type = TS_LBM_PERIODIC;
  p.face[TS_LBM_WEST].type = TS_LBM_VELOCITY;
  p.face[TS_LBM_WEST].u[0] = 0.04;
  p.face[TS_LBM_EAST].type = TS_LBM_PRESSURE;
  split xy[] = {{2, TS_DECOMP_COLUMNS, {0}}, {4, TS_DECOMP_TILES, {2, 2, 1}}};
  compare("D3Q19 periodic z, inlet/outlet", &p, xy, 2);

  /* a split across the periodic axis is refused there: the inlet and outlet nodes on the
   * periodic frame are computed nodes of their own */
  ts_lbm *s = NULL;
  p.subdomains = 2;
  p.decomposition = TS_DECOMP_TILES;
  p.parts[0] = 1, p.parts[1] = 1, p.parts[2] = 2;
  ts_status st = ts_lbm_create(&s, &p, ts_comm_world());
  CHECK(st == TS_ERR_INPUT && strstr(ts_error_message(), "periodic z axis, whose frame meets the "
                                                         "west inlet"),
        "split across the periodic axis next to an inlet refused: %s", ts_error_message());
  ts_lbm_destroy(s);

  /* D3Q19 lid box with the sphere, periodic along x and y: splits that cut them */
  p.subdomains = 0;
  p.decomposition = TS_DECOMP_AUTO;
  p.face[TS_LBM_WEST].type = p.face[TS_LBM_EAST].type = TS_LBM_PERIODIC;
  p.face[TS_LBM_TOP].type = TS_LBM_MOVING;
  p.face[TS_LBM_BOTTOM].type = TS_LBM_WALL;
  p.face[TS_LBM_SOUTH].type = p.face[TS_LBM_NORTH].type = TS_LBM_PERIODIC;
  split cut[] = {{2, TS_DECOMP_COLUMNS, {0}},
                 {2, TS_DECOMP_TILES, {1, 2, 1}},
                 {4, TS_DECOMP_TILES, {2, 1, 2}},
                 {8, TS_DECOMP_TILES, {2, 2, 2}}};
  compare("D3Q19 lid box, sphere, periodic x and y", &p, cut, 4);

  /* D3Q19 periodic along every axis (the benchmark's box) with an obstacle across the periodic
   * corner, a force, TRT and fp16: splits that cut one, two and three periodic axes */
  ts_lbm_params_default(&p);
  p.lattice = TS_LBM_D3Q19;
  p.collision = TS_LBM_TRT;
  p.n[0] = 15, p.n[1] = 12, p.n[2] = 11;
  p.tau = 0.57;
  p.force[0] = 1e-5, p.force[2] = 2e-5;
  for (int f = 0; f < 6; f++)
    p.face[f].type = TS_LBM_PERIODIC;
  corner = corner_ball(p.n, 3);
  p.solid = corner;
  p.initial = swirl;
  split box[] = {{2, TS_DECOMP_ROWS, {0}},        {3, TS_DECOMP_COLUMNS, {0}},
                 {2, TS_DECOMP_TILES, {1, 2, 1}}, {4, TS_DECOMP_TILES, {2, 1, 2}},
                 {8, TS_DECOMP_TILES, {2, 2, 2}}, {6, TS_DECOMP_AUTO, {0}}};
  compare("D3Q19 periodic box, corner obstacle, TRT", &p, box, 6);
  p.storage = TS_LBM_FP16;
  p.collision = TS_LBM_SRT;
  compare("D3Q19 periodic box, corner obstacle, SRT, fp16", &p, box, 6);
  free(corner);
  free(solid);
  free(ball);
  return failures != 0;
}
