/* Validation: a run restarted from a checkpoint continues bit for bit (through the CLI).
 *
 * A small dam break (60 x 30 cells of 10 m, sloping valley, reservoir at 10 m behind x = 150 m,
 * Manning 0.03, walls, float) runs with `tessera run` to t = 200 s with [output]
 * checkpoint_interval = 50 s, snapshots at 100 s and 200 s, and 3 gauges. Then it runs again in
 * another output directory with --restart from the middle checkpoint (the one closest to 100 s).
 * Checks (tolerance: none, byte for byte, since a checkpoint holds the whole state):
 *  - max_h.asc and every other .asc file both runs wrote (the snapshot at 200 s, maxima) are
 *    identical;
 *  - the rows of gauges.csv with t greater than the checkpoint time are identical.
 * A checkpoint that misses part of the state (the maxima, the RK stage, the step count, the time
 * in reduced precision) shows up as a difference. Skipped (exit 77) when the CLI is missing. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analytic.h"

/* Lines of gauges.csv whose first numeric field (time) is > t0, concatenated. */
static char *gauge_rows_after(const char *path, double t0, int *nrows) {
  size_t n;
  char *s = val_read_file(path, &n);
  *nrows = 0;
  if (!s)
    return NULL;
  char *out = calloc(n + 1, 1);
  size_t o = 0;
  for (char *line = s; *line;) {
    char *end = strchr(line, '\n');
    size_t len = end ? (size_t)(end - line + 1) : strlen(line);
    char *e;
    double t = strtod(line, &e);
    if (e != line && t > t0 + 1e-9) {
      memcpy(out + o, line, len);
      o += len;
      (*nrows)++;
    }
    line += len;
  }
  free(s);
  return out;
}

int main(void) {
  const char *cli = val_cli();
  if (!cli)
    return VAL_SKIP;
  char dir[] = "/tmp/tessera_restart_XXXXXX";
  if (!mkdtemp(dir)) {
    printf("cannot create a temporary directory\n");
    return 1;
  }
  char path[1024], cmd[4096];
  const int nx = 60, ny = 30;
  ts_raster bed = val_raster(nx, ny, 10, 0, 0), eta = val_raster(nx, ny, 10, 0, 0);
  for (int j = 0; j < ny; j++)
    for (int i = 0; i < nx; i++) {
      double x = val_xc(&bed, i), y = val_yc(&bed, j);
      bed.v[i + j * nx] = 8 - 0.02 * x + 0.004 * (y - 150) * (y - 150) / 10;
      eta.v[i + j * nx] = x < 150 ? 10 : -9999;
    }
  snprintf(path, sizeof path, "%s/bed.asc", dir);
  CHECK(val_write_asc(path, &bed) == 0, "wrote %s", path);
  /* initial surface: the reservoir level where x < 150 m, the bed (dry) elsewhere */
  for (int c = 0; c < nx * ny; c++)
    if (eta.v[c] == -9999)
      eta.v[c] = bed.v[c];
  snprintf(path, sizeof path, "%s/eta0.asc", dir);
  CHECK(val_write_asc(path, &eta) == 0, "wrote %s", path);
  snprintf(path, sizeof path, "%s/gauges.csv", dir);
  FILE *f = fopen(path, "w");
  fprintf(f, "id,x,y\nG1,205,150\nG2,355,145\nG3,505,160\n");
  fclose(f);
  snprintf(path, sizeof path, "%s/case.ini", dir);
  f = fopen(path, "w");
  fprintf(f, "[model]\ntype = swe\n\n[time]\nend = 200\n\n[swe]\nbed = bed.asc\n"
             "initial_surface = eta0.asc\nmanning = 0.03\nprecision = float\n\n[boundary]\n"
             "north = wall\nsouth = wall\neast = wall\nwest = wall\n\n[output]\ndir = out\n"
             "times = 100, 200\nformats = asc\ngauges = gauges.csv\ncheckpoint_interval = 50\n");
  fclose(f);
  double t0 = val_now();
  snprintf(cmd, sizeof cmd, "\"%s\" run %s/case.ini --out %s/a --quiet", cli, dir, dir);
  int rc = system(cmd);
  printf("uninterrupted run: exit %d, %.2f s\n", rc, val_now() - t0);
  CHECK(rc == 0, "uninterrupted run succeeded (%s)", cmd);
  /* find the checkpoints */
  snprintf(path, sizeof path, "%s/a", dir);
  DIR *d = opendir(path);
  double best_t = -1;
  char best[512] = "";
  int nck = 0;
  struct dirent *e;
  while (d && (e = readdir(d))) {
    if (strncmp(e->d_name, "checkpoint_", 11) != 0 || !strstr(e->d_name, ".tsc"))
      continue;
    nck++;
    double t = strtod(e->d_name + 11, NULL);
    if (best_t < 0 || fabs(t - 100) < fabs(best_t - 100)) {
      best_t = t;
      snprintf(best, sizeof best, "%s", e->d_name);
    }
  }
  if (d)
    closedir(d);
  printf("%d checkpoints; restarting from %s (t = %g s)\n", nck, best, best_t);
  CHECK(nck >= 3, "checkpoints written every 50 s: %d found (>= 3 expected)", nck);
  if (!best[0])
    return val_finish();
  snprintf(path, sizeof path, "%s/a/summary.json", dir);
  char *summary = val_read_file(path, NULL);
  CHECK(summary && strstr(summary, "\"checkpoints\"") && strstr(summary, best),
        "summary.json lists the checkpoints (and %s)", best);
  free(summary);
  snprintf(cmd, sizeof cmd, "\"%s\" run %s/case.ini --out %s/b --quiet --restart %s/a/%s", cli, dir,
           dir, dir, best);
  rc = system(cmd);
  CHECK(rc == 0, "restarted run succeeded (%s)", cmd);
  /* compare every .asc file of the restarted run with the uninterrupted one */
  snprintf(path, sizeof path, "%s/b", dir);
  d = opendir(path);
  int compared = 0, differ = 0, have_max = 0;
  while (d && (e = readdir(d))) {
    const char *nm = e->d_name;
    size_t l = strlen(nm);
    if (l < 5 || strcmp(nm + l - 4, ".asc") != 0)
      continue;
    char pa[1024], pb[1024];
    snprintf(pa, sizeof pa, "%s/a/%s", dir, nm);
    snprintf(pb, sizeof pb, "%s/b/%s", dir, nm);
    int same = val_same_file(pa, pb);
    compared++;
    differ += !same;
    have_max |= !strcmp(nm, "max_h.asc");
    printf("  %-28s %s\n", nm, same ? "identical" : "DIFFERENT");
  }
  if (d)
    closedir(d);
  CHECK(have_max, "the restarted run wrote max_h.asc");
  CHECK(compared >= 2 && differ == 0, "%d .asc files compared byte for byte, %d differ", compared,
        differ);
  int ra, rb;
  snprintf(path, sizeof path, "%s/a/gauges.csv", dir);
  char *ga = gauge_rows_after(path, best_t, &ra);
  snprintf(path, sizeof path, "%s/b/gauges.csv", dir);
  char *gb = gauge_rows_after(path, best_t, &rb);
  CHECK(ga && gb && ra > 0 && ra == rb && strcmp(ga, gb) == 0,
        "gauges.csv rows after t = %g s identical (%d rows vs %d rows)", best_t, ra, rb);
  free(ga), free(gb);
  val_raster_free(&bed), val_raster_free(&eta);
  if (val_failures == 0) {
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
      printf("could not remove %s\n", dir);
  } else {
    printf("outputs kept in %s\n", dir);
  }
  return val_finish();
}
