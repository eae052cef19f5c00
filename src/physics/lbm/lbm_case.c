/* Lattice Boltzmann case driver (lbm_case.h). Lengths in the case file (geometry, lines) are in
 * units of the box's x extent L = nx cells; velocities in lattice units, and in the outputs in
 * units of the velocity scale U ([lbm] lid_velocity). The viscosity comes from exactly one of
 * reynolds (Re = U nx / nu), viscosity, tau, or the physical length, velocity and viscosity.
 * A signal (stop.h) stops the run within 16 steps, with its fields and checkpoint_stop.tsc
 * written; --restart continues from such a checkpoint. */
#include "physics/lbm/lbm_case.h"

#include <errno.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "physics/stop.h"
#include "tessera/gpu.h"
#include "tessera/io.h"
#include "tessera/lbm.h"

typedef struct lbm_case {
  ts_config *cfg;
  const ts_comm *comm;
  int root, dim;
  ts_lbm_params p;
  double velocity; /* U, lattice units */
  double viscosity, reynolds, mach;
  double si[3]; /* physical length (m), velocity (m/s), viscosity (m2/s); 0: not given */
  long max_steps, check_interval;
  double steady_tolerance;
  unsigned char *solid;
  double *lines;
  int nlines;
  int vtk, png, netcdf;
  char *out_dir;
} lbm_case;

static const char *const face_keys[6] = {"west", "east", "south", "north", "bottom", "top"};

/* ------------------------------------------------------------------ reading the case */

static ts_status read_size(lbm_case *k) {
  static const char *const lattices[] = {"D2Q9", "D3Q19", NULL};
  static const char *const collisions[] = {"srt", "trt", NULL};
  static const char *const storages[] = {"fp32", "fp16", NULL};
  int v;
  TS_CALL(ts_config_choice(k->cfg, "lbm", "lattice", 0, lattices, &v));
  k->p.lattice = (ts_lbm_lattice)v;
  k->dim = v == TS_LBM_D3Q19 ? 3 : 2;
  TS_CALL(ts_config_choice(k->cfg, "lbm", "collision", 0, collisions, &v));
  k->p.collision = (ts_lbm_collision)v;
  TS_CALL(ts_config_choice(k->cfg, "lbm", "storage", 0, storages, &v));
  k->p.storage = (ts_lbm_storage)v;
  static const char *const axes[3] = {"nx", "ny", "nz"};
  long n[3];
  TS_CALL(ts_config_int(k->cfg, "lbm", "nx", 64, &n[0]));
  for (int a = 1; a < 3; a++)
    TS_CALL(ts_config_int(k->cfg, "lbm", axes[a], a < k->dim ? n[0] : 1, &n[a]));
  if (k->dim == 2 && n[2] != 1)
    return ts_config_error(k->cfg, "lbm", "nz", "a D2Q9 box has one cell along z");
  for (int a = 0; a < k->dim; a++)
    if (n[a] < 2 || n[a] > 100000)
      return ts_config_error(k->cfg, "lbm", axes[a], "must be in [2, 100000] (got %ld)", n[a]);
  for (int a = 0; a < 3; a++)
    k->p.n[a] = (int)n[a];
  return TS_OK;
}

/* The viscosity from exactly one of its four definitions, and the relaxation time. */
static ts_status read_viscosity(lbm_case *k) {
  TS_CALL(ts_config_double(k->cfg, "lbm", "lid_velocity", 0.1, &k->velocity));
  double ma = k->velocity * sqrt(3.0);
  if (!(k->velocity > 0) || ma > 0.5)
    return ts_config_error(k->cfg, "lbm", "lid_velocity",
                           "must be in (0, 0.29] lattice units: Mach %g is too high for the "
                           "incompressible limit",
                           ma);
  k->mach = ma;
  static const char *const si_keys[3] = {"physical_length", "physical_velocity",
                                         "physical_viscosity"};
  int si_given = 0;
  for (int i = 0; i < 3; i++) {
    TS_CALL(ts_config_double(k->cfg, "lbm", si_keys[i], 0, &k->si[i]));
    if (ts_config_has(k->cfg, "lbm", si_keys[i])) {
      if (!(k->si[i] > 0))
        return ts_config_error(k->cfg, "lbm", si_keys[i], "must be positive");
      si_given++;
    }
  }
  if (si_given != 0 && si_given != 3)
    return ts_error(TS_ERR_INPUT,
                    "%s: [lbm] physical_length, physical_velocity and "
                    "physical_viscosity go together",
                    ts_config_file(k->cfg));
  const char *ways[3] = {"reynolds", "viscosity", "tau"};
  int given = si_given ? 1 : 0;
  const char *used = si_given ? "physical_viscosity" : NULL;
  for (int i = 0; i < 3; i++)
    if (ts_config_has(k->cfg, "lbm", ways[i]))
      given++, used = ways[i];
  if (given != 1)
    return ts_error(TS_ERR_INPUT,
                    "%s: [lbm] needs exactly one of reynolds, viscosity, tau or the physical "
                    "length, velocity and viscosity (%d given)",
                    ts_config_file(k->cfg), given);
  double nx = k->p.n[0], x;
  if (si_given) {
    k->reynolds = k->si[1] * k->si[0] / k->si[2];
    k->viscosity = k->velocity * nx / k->reynolds;
  } else if (strcmp(used, "reynolds") == 0) {
    TS_CALL(ts_config_double(k->cfg, "lbm", "reynolds", 0, &x));
    if (!(x > 0))
      return ts_config_error(k->cfg, "lbm", "reynolds", "must be positive");
    k->viscosity = k->velocity * nx / x;
  } else if (strcmp(used, "viscosity") == 0) {
    TS_CALL(ts_config_double(k->cfg, "lbm", "viscosity", 0, &k->viscosity));
  } else {
    TS_CALL(ts_config_double(k->cfg, "lbm", "tau", 0, &x));
    k->viscosity = (x - 0.5) / 3.0;
  }
  k->p.tau = 3.0 * k->viscosity + 0.5;
  if (!(k->p.tau > 0.5))
    return ts_config_error(k->cfg, "lbm", used,
                           "gives tau = %g: the relaxation time must exceed 1/2 (a positive "
                           "viscosity)",
                           k->p.tau);
  if (!(k->p.tau > 0.5 + 1e-6))
    return ts_config_error(k->cfg, "lbm", used,
                           "gives tau = %.9g, too close to 1/2 to be stable: refine the grid "
                           "(nx) or lower the Reynolds number",
                           k->p.tau);
  k->reynolds = k->velocity * nx / k->viscosity;
  return TS_OK;
}

static ts_status read_vector(lbm_case *k, const char *key, double v[3]) {
  int n;
  double *list;
  TS_CALL(ts_config_double_list(k->cfg, "lbm", key, &n, &list));
  if (!list)
    return TS_OK;
  ts_status st =
      n == k->dim ? TS_OK
                  : ts_config_error(k->cfg, "lbm", key, "needs %d components (got %d)", k->dim, n);
  for (int a = 0; a < n && st == TS_OK; a++)
    v[a] = list[a];
  free(list);
  return st;
}

static ts_status read_faces(lbm_case *k) {
  static const char *const types[] = {"wall", "lid", "periodic", "inlet", "outlet", NULL};
  for (int f = 0; f < 6; f++) {
    ts_lbm_face *face = &k->p.face[f];
    char key[64];
    if (f >= 2 * k->dim) {
      if (ts_config_has(k->cfg, "lbm", face_keys[f]))
        return ts_config_error(k->cfg, "lbm", face_keys[f], "a D2Q9 box has no %s face",
                               face_keys[f]);
      continue;
    }
    int t;
    TS_CALL(ts_config_choice(k->cfg, "lbm", face_keys[f], 0, types, &t));
    face->type = (ts_lbm_face_type)t;
    int axis = f / 2;
    memset(face->u, 0, sizeof face->u);
    if (face->type == TS_LBM_MOVING) /* tangential: along y on the x faces, else along x */
      face->u[axis == 0 ? 1 : 0] = k->velocity;
    if (face->type == TS_LBM_VELOCITY) /* into the box */
      face->u[axis] = f % 2 ? -k->velocity : k->velocity;
    snprintf(key, sizeof key, "%s_velocity", face_keys[f]);
    TS_CALL(read_vector(k, key, face->u));
    snprintf(key, sizeof key, "%s_density", face_keys[f]);
    TS_CALL(ts_config_double(k->cfg, "lbm", key, 1.0, &face->rho));
    if (!(face->rho > 0))
      return ts_config_error(k->cfg, "lbm", key, "must be positive");
  }
  for (int a = 0; a < k->dim; a++)
    if ((k->p.face[2 * a].type == TS_LBM_PERIODIC) !=
        (k->p.face[2 * a + 1].type == TS_LBM_PERIODIC))
      return ts_config_error(k->cfg, "lbm", face_keys[2 * a],
                             "periodic faces come in pairs: %s and %s", face_keys[2 * a],
                             face_keys[2 * a + 1]);
  return TS_OK;
}

/* Solid cells: boxes and spheres (units of L) whose cell centres they contain, and a mask file
 * of nx * ny * nz bytes (nonzero: solid; x fastest). */
static ts_status read_geometry(lbm_case *k) {
  int64_t cells = (int64_t)k->p.n[0] * k->p.n[1] * k->p.n[2];
  double *boxes = NULL, *spheres = NULL;
  int nboxes = 0, nspheres = 0, dim = k->dim;
  TS_CALL(ts_case_tuples(k->cfg, "lbm", "boxes", 2 * dim, &boxes, &nboxes));
  ts_status st = ts_case_tuples(k->cfg, "lbm", "spheres", dim + 1, &spheres, &nspheres);
  char *mask = NULL;
  if (st == TS_OK)
    st = ts_config_path(k->cfg, "lbm", "mask", &mask);
  if (st == TS_OK && (nboxes || nspheres || mask)) {
    k->solid = calloc((size_t)cells, 1);
    if (!k->solid)
      st = ts_error(TS_ERR_NOMEM, "out of memory");
  }
  if (st == TS_OK && mask) {
    FILE *f = fopen(mask, "rb");
    if (!f) {
      st = ts_config_error(k->cfg, "lbm", "mask", "%s: cannot open", mask);
    } else {
      size_t got = fread(k->solid, 1, (size_t)cells, f);
      int extra = fgetc(f) != EOF;
      fclose(f);
      if (got != (size_t)cells || extra)
        st = ts_config_error(k->cfg, "lbm", "mask",
                             "%s: expected %lld bytes (nx * ny * nz), the file has %s", mask,
                             (long long)cells, extra ? "more" : "fewer");
    }
  }
  double nx = k->p.n[0];
  for (int64_t c = 0; c < cells && st == TS_OK && k->solid; c++) {
    int64_t idx[3] = {c % k->p.n[0], (c / k->p.n[0]) % k->p.n[1],
                      c / ((int64_t)k->p.n[0] * k->p.n[1])};
    double x[3];
    for (int a = 0; a < 3; a++)
      x[a] = (idx[a] + 0.5) / nx;
    for (int b = 0; b < nboxes; b++) {
      const double *box = boxes + (size_t)b * 2 * dim;
      int in = 1;
      for (int a = 0; a < dim; a++)
        in &= x[a] >= fmin(box[a], box[dim + a]) && x[a] <= fmax(box[a], box[dim + a]);
      k->solid[c] |= (unsigned char)in;
    }
    for (int b = 0; b < nspheres; b++) {
      const double *sp = spheres + (size_t)b * (dim + 1);
      double r2 = 0;
      for (int a = 0; a < dim; a++)
        r2 += (x[a] - sp[a]) * (x[a] - sp[a]);
      k->solid[c] |= (unsigned char)(r2 <= sp[dim] * sp[dim]);
    }
  }
  free(boxes);
  free(spheres);
  free(mask);
  k->p.solid = k->solid;
  return st;
}

static ts_status read_run(lbm_case *k, const ts_case_options *opt) {
  if (!ts_config_has(k->cfg, "time", "steps"))
    return ts_error(TS_ERR_INPUT, "%s: [time] steps is required for lbm (the step limit)",
                    ts_config_file(k->cfg));
  TS_CALL(ts_config_int(k->cfg, "time", "steps", 0, &k->max_steps));
  if (k->max_steps < 1)
    return ts_config_error(k->cfg, "time", "steps", "must be at least 1");
  /* FP16 storage rounds the populations to 11 bits each step: velocities keep changing by
   * about 1e-3 U from one check to the next however long the run (measured on the cavity). */
  double tolerance = k->p.storage == TS_LBM_FP16 ? 1e-3 : 1e-5;
  TS_CALL(ts_config_double(k->cfg, "time", "steady_tolerance", tolerance, &k->steady_tolerance));
  if (!(k->steady_tolerance >= 0))
    return ts_config_error(k->cfg, "time", "steady_tolerance", "must be >= 0 (0: off)");
  TS_CALL(ts_config_int(k->cfg, "time", "check_interval", 1000, &k->check_interval));
  if (k->check_interval < 1)
    return ts_config_error(k->cfg, "time", "check_interval", "must be at least 1");
  TS_CALL(ts_case_read_cuda(k->cfg, &k->p.cuda));
  TS_CALL(ts_case_read_devices(k->cfg, 16, 0, &k->p.ndevices, k->p.devices));
  static const char *const transports[] = {"auto", "host", "cuda-mpi", "nccl", NULL};
  int transport;
  TS_CALL(ts_config_choice(k->cfg, "parallel", "transport", 0, transports, &transport));
  k->p.transport = (ts_transport_kind)transport;
  TS_CALL(ts_case_read_split(k->cfg, &k->p.subdomains, &k->p.decomposition, k->p.parts));
  if (ts_config_has(k->cfg, "parallel", "weights"))
    return ts_config_error(k->cfg, "parallel", "weights",
                           "weighted splits are for shallow water (swe) cases only");
  static const char *const formats[] = {"vtk", "png", "netcdf", NULL};
  int chosen[3];
  TS_CALL(ts_case_formats(k->cfg, "lbm", formats, "vtk, png", chosen));
  k->vtk = chosen[0], k->png = chosen[1], k->netcdf = chosen[2];
  TS_CALL(ts_case_tuples(k->cfg, "output", "lines", 2 * k->dim + 1, &k->lines, &k->nlines));
  for (int l = 0; l < k->nlines; l++) {
    double n = k->lines[(size_t)l * (2 * k->dim + 1) + 2 * k->dim];
    if (n < 2 || n > 1e6 || n != floor(n))
      return ts_config_error(k->cfg, "output", "lines",
                             "line %d: the number of points must be an integer in [2, 1e6]", l + 1);
  }
  return ts_case_out_dir(k->cfg, opt, &k->out_dir);
}

static ts_status read_case(lbm_case *k, const ts_case_options *opt) {
  TS_CALL(ts_case_load(&k->cfg, opt));
  ts_lbm_params_default(&k->p);
  TS_CALL(read_size(k));
  TS_CALL(read_viscosity(k));
  TS_CALL(read_faces(k));
  double force[3] = {0, 0, 0};
  TS_CALL(read_vector(k, "force", force));
  memcpy(k->p.force, force, sizeof force);
  TS_CALL(ts_config_double(k->cfg, "lbm", "smagorinsky", 0, &k->p.smagorinsky));
  if (!(k->p.smagorinsky >= 0))
    return ts_config_error(k->cfg, "lbm", "smagorinsky", "must be >= 0 (0: off)");
  TS_CALL(ts_config_double(k->cfg, "lbm", "magic", 3.0 / 16.0, &k->p.magic));
  if (!(k->p.magic > 0))
    return ts_config_error(k->cfg, "lbm", "magic", "must be positive");
  TS_CALL(read_geometry(k));
  return read_run(k, opt);
}

/* ------------------------------------------------------------------ outputs */

typedef struct fields {
  double *v[6]; /* rho, ux, uy, uz, speed, vorticity (rank 0) */
} fields;

/* A boundary value at an index one past the cells along axis a (side 0 low, 1 high): the
 * velocity component b of a wall, lid or inlet, or -1 when the nearest cell's value stands. */
static int boundary_velocity(const lbm_case *k, int a, int side, int b, double *u) {
  const ts_lbm_face *f = &k->p.face[2 * a + side];
  if (f->type == TS_LBM_WALL) {
    *u = 0;
    return 1;
  }
  if (f->type == TS_LBM_MOVING || f->type == TS_LBM_VELOCITY) {
    *u = f->u[b];
    return 1;
  }
  return 0;
}

/* Field var (0 rho, 1..3 velocity) at extended indices c (-1 and n[a] are the faces). */
static double value_at(const lbm_case *k, const fields *fl, int var, const int c[3]) {
  int idx[3];
  for (int a = 0; a < 3; a++) {
    idx[a] = c[a];
    if (c[a] >= 0 && c[a] < k->p.n[a])
      continue;
    int side = c[a] >= k->p.n[a];
    if (k->p.face[2 * a].type == TS_LBM_PERIODIC && a < k->dim) {
      idx[a] = side ? 0 : k->p.n[a] - 1;
      continue;
    }
    double u;
    if (var > 0 && boundary_velocity(k, a, side, var - 1, &u))
      return u;
    idx[a] = side ? k->p.n[a] - 1 : 0;
  }
  return fl->v[var][idx[0] + (int64_t)k->p.n[0] * (idx[1] + (int64_t)k->p.n[1] * idx[2])];
}

/* Multilinear interpolation at position x (units of L) between cell centres and the faces
 * (where walls, lids and inlets give their velocity). */
static double sample(const lbm_case *k, const fields *fl, int var, const double x[3]) {
  int lo[3] = {0, 0, 0};
  double t[3] = {0, 0, 0};
  for (int a = 0; a < k->dim; a++) {
    int n = k->p.n[a];
    double p = fmin(fmax(x[a] * k->p.n[0] - 0.5, -0.5), n - 0.5);
    if (p < 0) {
      lo[a] = -1, t[a] = 2 * p + 1;
    } else if (p > n - 1) {
      lo[a] = n - 1, t[a] = 2 * (p - (n - 1));
    } else {
      lo[a] = (int)floor(p);
      if (lo[a] == n - 1)
        lo[a] = n - 2;
      t[a] = p - lo[a];
    }
  }
  double sum = 0;
  for (int corner = 0; corner < 1 << k->dim; corner++) {
    int c[3] = {lo[0], lo[1], lo[2]};
    double w = 1;
    for (int a = 0; a < k->dim; a++) {
      int up = corner >> a & 1;
      c[a] += up;
      w *= up ? t[a] : 1 - t[a];
    }
    if (w != 0)
      sum += w * value_at(k, fl, var, c);
  }
  return sum;
}

static ts_status write_lines(const lbm_case *k, const fields *fl, char (*names)[64]) {
  int arity = 2 * k->dim + 1;
  for (int l = 0; l < k->nlines; l++) {
    const double *line = k->lines + (size_t)l * arity;
    int npts = (int)line[2 * k->dim];
    snprintf(names[l], 64, "line_%d.csv", l + 1);
    char path[4096], tmp[4200];
    snprintf(path, sizeof path, "%s/%s", k->out_dir, names[l]);
    FILE *f = ts_open_temp(path, tmp, sizeof tmp);
    if (!f)
      return ts_error(TS_ERR_IO, "%s: cannot write", path);
    fprintf(f, k->dim == 3 ? "s,x,y,z,rho,u,v,w,speed\n" : "s,x,y,rho,u,v,speed\n");
    double len = 0;
    for (int a = 0; a < k->dim; a++)
      len += (line[k->dim + a] - line[a]) * (line[k->dim + a] - line[a]);
    len = sqrt(len);
    for (int i = 0; i < npts; i++) {
      double s = (double)i / (npts - 1), x[3] = {0, 0, 0}, u[3] = {0, 0, 0}, speed = 0;
      for (int a = 0; a < k->dim; a++)
        x[a] = line[a] + s * (line[k->dim + a] - line[a]);
      fprintf(f, "%.9g", s * len);
      for (int a = 0; a < k->dim; a++)
        fprintf(f, ",%.9g", x[a]);
      fprintf(f, ",%.9g", sample(k, fl, 0, x));
      for (int a = 0; a < k->dim; a++) {
        u[a] = sample(k, fl, 1 + a, x) / k->velocity;
        speed += u[a] * u[a];
        fprintf(f, ",%.9g", u[a]);
      }
      fprintf(f, ",%.9g\n", sqrt(speed));
    }
    TS_CALL(ts_commit_temp(f, tmp, path));
  }
  return TS_OK;
}

/* PNG of a field on the xy plane through the middle of z, scaled by `unit`. */
static ts_status write_slice(const lbm_case *k, const double *v, double unit, double vmax,
                             const char *name, const char *label, const char *title) {
  int nx = k->p.n[0], ny = k->p.n[1], mid = k->p.n[2] / 2;
  double *plane = malloc(sizeof(double) * (size_t)nx * ny);
  if (!plane)
    return ts_error(TS_ERR_NOMEM, "out of memory");
  for (int64_t c = 0; c < (int64_t)nx * ny; c++)
    plane[c] = v[c + (int64_t)nx * ny * mid] / unit;
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", k->out_dir, name);
  int scale = nx >= 512 ? 1 : 512 / nx;
  ts_status st = ts_png_write_field(path, nx, ny, plane, 0, vmax, scale, label, title);
  free(plane);
  return st;
}

/* The largest finite value of v over n cells (1 when there is none). */
static double largest(const double *v, int64_t n) {
  double m = 0;
  for (int64_t c = 0; c < n; c++)
    if (isfinite(v[c]) && v[c] > m)
      m = v[c];
  return m > 0 ? m : 1;
}

typedef struct run_result {
  int64_t steps;
  double wall, change, mlups;
  int steady, stopped; /* stopped: on a signal (stop.h) */
  char checkpoint[64]; /* written by this run, or "" */
  char png[2][64], lines[64][64];
  int npng;
  char vti[64], netcdf[64];
} run_result;

/* flow.nc: the final fields on the lattice (cells of size 1) as a CF NetCDF file with a time
 * axis of one step (the steps run): rho, u, v[, w], speed and vorticity (fields fl). */
static ts_status write_netcdf(const lbm_case *k, const fields *fl, run_result *r) {
  ts_grid g = {.dim = k->dim, .n = {k->p.n[0], k->p.n[1], k->p.n[2]}, .dx = {1, 1, 1}};
  ts_out_var vars[6] = {{"rho", "density", "1", fl->v[0]},
                        {"u", "velocity along x", "lattice", fl->v[1]},
                        {"v", "velocity along y", "lattice", fl->v[2]},
                        {"speed", "velocity magnitude", "lattice", fl->v[4]},
                        {"vorticity", "vorticity magnitude", "1/step", fl->v[5]},
                        {"w", "velocity along z", "lattice", fl->v[3]}};
  ts_netcdf_layout layout = {.grid = &g,
                             .title = "Tessera lattice Boltzmann fields",
                             .length_units = "1",
                             .time_units = "1",
                             .time_long_name = "lattice time steps run",
                             .nvars = k->dim == 3 ? 6 : 5,
                             .vars = vars};
  snprintf(r->netcdf, sizeof r->netcdf, "flow.nc");
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", k->out_dir, r->netcdf);
  ts_netcdf_series *nc;
  TS_CALL(ts_netcdf_series_create(&nc, path, &layout));
  ts_status st = ts_netcdf_series_append(nc, (double)r->steps, vars);
  ts_status closed = ts_netcdf_series_close(nc);
  return st != TS_OK ? st : closed;
}

static ts_status write_fields(const lbm_case *k, ts_lbm *s, run_result *r) {
  int64_t cells = (int64_t)k->p.n[0] * k->p.n[1] * k->p.n[2];
  fields fl = {{0}};
  ts_status st = TS_OK;
  for (int v = 0; v < 6 && st == TS_OK; v++) {
    if (k->root && !(fl.v[v] = malloc(sizeof(double) * (size_t)cells)))
      st = ts_error(TS_ERR_NOMEM, "out of memory");
    st = ts_comm_agree(k->comm, st);
    if (st == TS_OK)
      st = ts_lbm_get(s, (ts_lbm_var)v, fl.v[v]);
  }
  if (st == TS_OK && k->root && k->vtk) {
    ts_grid g = {.dim = k->dim, .n = {k->p.n[0], k->p.n[1], k->p.n[2]}, .dx = {1, 1, 1}};
    ts_out_var vars[3] = {{"rho", "density", "1", fl.v[0]},
                          {"speed", "velocity magnitude", "lattice", fl.v[4]},
                          {"vorticity", "vorticity magnitude", "1/step", fl.v[5]}};
    ts_out_vector vel = {"velocity", "velocity", "lattice", {fl.v[1], fl.v[2], fl.v[3]}};
    snprintf(r->vti, sizeof r->vti, "flow.vti");
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", k->out_dir, r->vti);
    st = ts_vti_write_grid(path, &g, (double)r->steps, 3, vars, 1, &vel);
  }
  if (st == TS_OK && k->root && k->netcdf)
    st = write_netcdf(k, &fl, r);
  if (st == TS_OK && k->root && k->png) {
    char title[128];
    snprintf(title, sizeof title, "Re %.0f, step %lld", k->reynolds, (long long)r->steps);
    snprintf(r->png[0], 64, "speed.png");
    st = write_slice(k, fl.v[4], k->velocity, 1.0, r->png[0], "|u| / U", title);
    double wmax = largest(fl.v[5], cells) * k->p.n[0] / k->velocity;
    snprintf(r->png[1], 64, "vorticity.png");
    if (st == TS_OK)
      st = write_slice(k, fl.v[5], k->velocity / k->p.n[0], wmax, r->png[1], "|curl u| L / U",
                       title);
    r->npng = 2;
  }
  if (st == TS_OK && k->root)
    st = write_lines(k, &fl, r->lines);
  for (int v = 0; v < 6; v++)
    free(fl.v[v]);
  return ts_comm_agree(k->comm, st);
}

/* end: how the run ended (TS_OK, TS_STOPPED or the failure, whose line is error). */
static ts_status write_summary(const lbm_case *k, const ts_case_options *opt, const ts_lbm *s,
                               const run_result *r, ts_status end, const char *error) {
  char path[4096], tmp[4200];
  snprintf(path, sizeof path, "%s/summary.json", k->out_dir);
  FILE *f = ts_open_temp(path, tmp, sizeof tmp);
  if (!f)
    return ts_error(TS_ERR_IO, "%s: cannot write", path);
  static const char *const lattices[] = {"D2Q9", "D3Q19"}, *const collisions[] = {"srt", "trt"},
                           *const storages[] = {"fp32", "fp16"};
  ts_json j;
  ts_json_begin(&j, f);
  ts_json_key(&j, "model"), ts_json_string(&j, "lbm");
  ts_stop_summary(&j, end, error, r->checkpoint);
  ts_json_key(&j, "lattice"), ts_json_string(&j, lattices[k->p.lattice]);
  ts_json_key(&j, "collision"), ts_json_string(&j, collisions[k->p.collision]);
  ts_json_key(&j, "storage"), ts_json_string(&j, storages[k->p.storage]);
  ts_json_key(&j, "cells");
  ts_json_array_begin(&j);
  for (int a = 0; a < 3; a++)
    ts_json_int(&j, k->p.n[a]);
  ts_json_array_end(&j);
  ts_json_key(&j, "tau"), ts_json_number(&j, k->p.tau);
  ts_json_key(&j, "viscosity"), ts_json_number(&j, k->viscosity);
  ts_json_key(&j, "lid_velocity"), ts_json_number(&j, k->velocity);
  ts_json_key(&j, "reynolds"), ts_json_number(&j, k->reynolds);
  ts_json_key(&j, "mach"), ts_json_number(&j, k->mach);
  if (k->si[0] > 0) {
    double dx = k->si[0] / k->p.n[0], dt = dx * k->velocity / k->si[1];
    ts_json_key(&j, "dx_m"), ts_json_number(&j, dx);
    ts_json_key(&j, "dt_s"), ts_json_number(&j, dt);
  }
  ts_json_key(&j, "restart_from");
  if (opt->restart)
    ts_json_string(&j, opt->restart);
  else
    ts_json_null(&j);
  ts_json_key(&j, "steps"), ts_json_int(&j, r->steps);
  ts_json_key(&j, "steady"), ts_json_bool(&j, r->steady);
  ts_json_key(&j, "max_change"), ts_json_number(&j, r->change);
  ts_json_key(&j, "fluid_cells"), ts_json_int(&j, ts_lbm_fluid_cells(s));
  ts_json_key(&j, "ranks"), ts_json_int(&j, ts_comm_size(k->comm));
  ts_json_key(&j, "subdomains"), ts_json_int(&j, ts_lbm_decomp(s)->count);
  ts_json_key(&j, "backend"), ts_json_string(&j, k->p.cuda ? "cuda" : "cpu");
  ts_json_key(&j, "wall_s"), ts_json_number(&j, r->wall);
  ts_json_key(&j, "mlups"), ts_json_number(&j, r->mlups);
  ts_json_key(&j, "files");
  ts_json_object_begin(&j);
  ts_json_key(&j, "vti");
  if (r->vti[0])
    ts_json_string(&j, r->vti);
  else
    ts_json_null(&j);
  ts_json_key(&j, "netcdf");
  if (r->netcdf[0])
    ts_json_string(&j, r->netcdf);
  else
    ts_json_null(&j);
  ts_json_key(&j, "png");
  ts_json_array_begin(&j);
  for (int i = 0; i < r->npng; i++)
    ts_json_string(&j, r->png[i]);
  ts_json_array_end(&j);
  ts_json_key(&j, "lines");
  ts_json_array_begin(&j);
  for (int l = 0; l < k->nlines; l++)
    ts_json_string(&j, r->lines[l]);
  ts_json_array_end(&j);
  ts_json_object_end(&j);
  ts_json_key(&j, "checkpoints");
  ts_json_array_begin(&j);
  if (r->checkpoint[0])
    ts_json_string(&j, r->checkpoint);
  ts_json_array_end(&j);
  ts_json_end(&j);
  return ts_commit_temp(f, tmp, path);
}

/* ------------------------------------------------------------------ checkpoints */

/* A checkpoint file holds, in the byte order of the machine that wrote it: the magic
 * "TESSERA-LBMC", a format version, the lattice, storage and cells (checked on restart), the
 * last change reported, and the solver's state (ts_lbm_save). */
static const char checkpoint_magic[12] = {'T', 'E', 'S', 'S', 'E', 'R',
                                          'A', '-', 'L', 'B', 'M', 'C'};
static const char swe_magic[12] = {'T', 'E', 'S', 'S', 'E', 'R', 'A', '-', 'C', 'K', 'P', 'T'};
enum { CHECKPOINT_VERSION = 1 };

typedef struct checkpoint_header {
  char magic[12];
  int32_t version, lattice, storage, n[3];
  double change;
  uint64_t state_bytes;
} checkpoint_header;

/* checkpoint_stop.tsc in the output directory (r->checkpoint its name once written). */
static ts_status write_checkpoint(const lbm_case *k, ts_lbm *s, run_result *r) {
  char path[4096], tmp[4200];
  snprintf(path, sizeof path, "%s/checkpoint_stop.tsc", k->out_dir);
  FILE *f = NULL;
  ts_status st = TS_OK;
  if (k->root) {
    f = ts_open_temp(path, tmp, sizeof tmp);
    if (!f)
      st = ts_error(TS_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
  }
  if (f) {
    checkpoint_header h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, checkpoint_magic, sizeof h.magic);
    h.version = CHECKPOINT_VERSION;
    h.lattice = (int32_t)k->p.lattice;
    h.storage = (int32_t)k->p.storage;
    for (int a = 0; a < 3; a++)
      h.n[a] = k->p.n[a];
    h.change = r->change;
    h.state_bytes = (uint64_t)ts_lbm_state_bytes(s);
    if (fwrite(&h, sizeof h, 1, f) != 1)
      st = ts_error(TS_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
  }
  st = ts_comm_agree(k->comm, st);
  if (st == TS_OK)
    st = ts_lbm_save(s, f);
  if (f && st == TS_OK)
    st = ts_commit_temp(f, tmp, path); /* reports a failed write */
  else if (f) {
    fclose(f);
    remove(tmp);
  }
  st = ts_comm_agree(k->comm, st);
  if (st == TS_OK)
    snprintf(r->checkpoint, sizeof r->checkpoint, "checkpoint_stop.tsc");
  return st;
}

/* Checks the header of the checkpoint at path and takes the last change from it (bad input on
 * error: another model's or case's checkpoint, a truncated file, not a checkpoint); f is left
 * at the solver's state. */
static ts_status read_header(const lbm_case *k, const char *path, FILE *f, const ts_lbm *s,
                             run_result *r) {
  checkpoint_header h;
  if (fread(&h, sizeof h, 1, f) != 1)
    return ts_error(TS_ERR_INPUT, "%s: not a Tessera lattice Boltzmann checkpoint", path);
  if (memcmp(h.magic, swe_magic, sizeof h.magic) == 0)
    return ts_error(TS_ERR_INPUT,
                    "%s: a shallow water (swe) checkpoint: this case is lattice Boltzmann", path);
  if (memcmp(h.magic, checkpoint_magic, sizeof h.magic) != 0)
    return ts_error(TS_ERR_INPUT, "%s: not a Tessera lattice Boltzmann checkpoint", path);
  if (h.version != CHECKPOINT_VERSION)
    return ts_error(TS_ERR_INPUT, "%s: checkpoint format version %d, this build reads %d", path,
                    (int)h.version, CHECKPOINT_VERSION);
  if (h.lattice != (int32_t)k->p.lattice || h.storage != (int32_t)k->p.storage ||
      h.n[0] != k->p.n[0] || h.n[1] != k->p.n[1] || h.n[2] != k->p.n[2])
    return ts_error(TS_ERR_INPUT,
                    "%s: checkpoint of %s %s on %d x %d x %d cells, this case is %s %s on "
                    "%d x %d x %d cells",
                    path, h.lattice == TS_LBM_D3Q19 ? "D3Q19" : "D2Q9",
                    h.storage == TS_LBM_FP16 ? "fp16" : "fp32", (int)h.n[0], (int)h.n[1],
                    (int)h.n[2], k->p.lattice == TS_LBM_D3Q19 ? "D3Q19" : "D2Q9",
                    k->p.storage == TS_LBM_FP16 ? "fp16" : "fp32", k->p.n[0], k->p.n[1], k->p.n[2]);
  long start = ftell(f);
  if (h.state_bytes != (uint64_t)ts_lbm_state_bytes(s) || start < 0 || fseek(f, 0, SEEK_END) != 0 ||
      ftell(f) != start + (long)h.state_bytes || fseek(f, start, SEEK_SET) != 0)
    return ts_error(TS_ERR_INPUT, "%s: checkpoint is truncated or has trailing data", path);
  r->change = h.change;
  return TS_OK;
}

/* Collective: every rank reads its nodes of the checkpoint at path into the solver. */
static ts_status read_checkpoint(const lbm_case *k, const char *path, ts_lbm *s, run_result *r) {
  FILE *f = fopen(path, "rb");
  ts_status st = f ? read_header(k, path, f, s, r)
                   : ts_error(TS_ERR_INPUT, "%s: cannot open: %s", path, strerror(errno));
  st = ts_comm_agree(k->comm, st);
  if (st == TS_OK)
    st = ts_lbm_load(s, f, path);
  if (f)
    fclose(f);
  return st;
}

/* ------------------------------------------------------------------ the run */

static void report(const lbm_case *k, FILE *out) {
  static const char *const lattices[] = {"D2Q9", "D3Q19"}, *const collisions[] = {"SRT", "TRT"};
  fprintf(out,
          "lbm: %s %s %s on the %s, %d x %d x %d cells, tau %.6g, viscosity %.6g, U %.4g: "
          "Re %.6g, Ma %.3g",
          lattices[k->p.lattice], collisions[k->p.collision],
          k->p.storage == TS_LBM_FP16 ? "fp16" : "fp32", k->p.cuda ? "GPU" : "CPU", k->p.n[0],
          k->p.n[1], k->p.n[2], k->p.tau, k->viscosity, k->velocity, k->reynolds, k->mach);
  if (k->si[0] > 0) {
    double dx = k->si[0] / k->p.n[0], dt = dx * k->velocity / k->si[1];
    fprintf(out, "; dx %.6g m, dt %.6g s", dx, dt);
  }
  fputc('\n', out);
}

/* Steps between looks for a signal (stop.h); the steady-state checks stay every check_interval
 * steps. */
enum { STOP_STEPS = 16 };

/* The steps from the solver's current state (step 0, or a checkpoint's with its reference for
 * the next check): checks every check_interval steps counted from step 0, so that a restarted
 * run checks and ends where the uninterrupted one does. */
static ts_status run(const lbm_case *k, const ts_case_options *opt, ts_lbm *s, run_result *r) {
  double t0 = omp_get_wtime(), last = t0, change = 0;
  int64_t first = ts_lbm_steps(s);
  int tty = isatty(fileno(opt->progress));
  if (!opt->restart)
    TS_CALL(ts_lbm_change(s, &change)); /* the reference for the first check */
  while (ts_lbm_steps(s) < k->max_steps) {
    TS_CALL(ts_stop_agree(k->comm, &r->stopped));
    if (r->stopped)
      break;
    long done = (long)ts_lbm_steps(s);
    long check = (done / k->check_interval + 1) * k->check_interval;
    if (check > k->max_steps)
      check = k->max_steps;
    TS_CALL(ts_lbm_step(s, (int)(check - done < STOP_STEPS ? check - done : STOP_STEPS)));
    if (ts_lbm_steps(s) < check)
      continue;
    TS_CALL(ts_lbm_change(s, &change));
    r->change = change / k->velocity;
    double now = omp_get_wtime();
    if (!opt->quiet && k->root && now - last > (tty ? 0.5 : 10.0)) {
      fprintf(opt->progress, "%sstep %lld of %ld, change %.3g%s", tty ? "\r" : "",
              (long long)ts_lbm_steps(s), k->max_steps, r->change, tty ? "" : "\n");
      last = now;
    }
    if (k->steady_tolerance > 0 && r->change < k->steady_tolerance) {
      r->steady = 1;
      break;
    }
  }
  r->steps = ts_lbm_steps(s);
  r->wall = omp_get_wtime() - t0;
  r->mlups =
      r->wall > 0 ? (double)ts_lbm_fluid_cells(s) * (double)(r->steps - first) / r->wall / 1e6 : 0;
  if (!opt->quiet && k->root)
    fprintf(opt->progress, "%slbm: %lld steps%s, change %.3g, %.3g s, %.1f MLUPs\n",
            tty ? "\r" : "", (long long)r->steps,
            r->steady    ? " (steady)"
            : r->stopped ? " (stopped on a signal)"
                         : "",
            r->change, r->wall, r->mlups);
  return TS_OK;
}

static void free_case(lbm_case *k) {
  ts_config_free(k->cfg);
  free(k->solid);
  free(k->lines);
  free(k->out_dir);
}

ts_status ts_lbm_case_run(const ts_case_options *opt) {
  lbm_case k;
  memset(&k, 0, sizeof k);
  k.comm = ts_comm_world();
  k.root = ts_comm_rank(k.comm) == 0;
  ts_status st = ts_comm_agree(k.comm, read_case(&k, opt));
  if (st == TS_OK)
    st = ts_comm_agree(k.comm, ts_case_check_same(k.comm, opt));
  if (st == TS_OK && k.nlines > 64)
    st = ts_config_error(k.cfg, "output", "lines", "at most 64 lines");
  ts_lbm *s = NULL;
  if (st == TS_OK) {
    st = ts_lbm_create(&s, &k.p, k.comm);
    if (st != TS_OK && st != TS_ERR_NOMEM && st != TS_ERR_PEER)
      st = ts_error(st, "%s: %s", opt->case_path, ts_error_message());
  }
  run_result r;
  memset(&r, 0, sizeof r);
  if (st == TS_OK && opt->restart)
    st = ts_comm_agree(k.comm, read_checkpoint(&k, opt->restart, s, &r));
  if (st == TS_OK && k.root)
    report(&k, opt->progress);
  int lock = -1;
  if (st == TS_OK)
    st = ts_comm_agree(
        k.comm, k.root ? ts_case_prepare_out_dir(k.out_dir, opt->restart != NULL, &lock) : TS_OK);
  int prepared = st == TS_OK;
  if (st == TS_OK)
    st = run(&k, opt, s, &r);
  if (st == TS_OK && r.stopped)
    st = write_checkpoint(&k, s, &r);
  if (st == TS_OK)
    st = write_fields(&k, s, &r);
  ts_status end = st == TS_OK && r.stopped ? TS_STOPPED : st;
  if (st == TS_OK) {
    st = ts_comm_agree(k.comm, k.root ? write_summary(&k, opt, s, &r, end, NULL) : TS_OK);
  } else if (prepared) {
    /* The failure's line goes to summary.json too; the failure stays the result. */
    char line[1024], message[1024];
    snprintf(message, sizeof message, "%s", ts_error_message());
    if (ts_stop_error_line(k.comm, st, line, sizeof line) == TS_OK)
      ts_comm_agree(k.comm, k.root ? write_summary(&k, opt, s, &r, st, line) : TS_OK);
    ts_error(st, "%s", message);
  }
  if (st == TS_OK && end == TS_STOPPED && k.root)
    fprintf(opt->progress,
            "tessera: stopped on a signal after step %lld; continue with --restart "
            "%s/checkpoint_stop.tsc\n",
            (long long)r.steps, k.out_dir);
  if (st == TS_OK)
    st = end;
  ts_case_release_out_dir(lock);
  ts_lbm_destroy(s);
  free_case(&k);
  return st;
}
