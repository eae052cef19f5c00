/* Validation: the load balancer through the CLI (`tessera run`, $TESSERA_BINARY).
 *
 *  1. A lake with a wave (192 x 48 cells, wet everywhere, so the work of a column is its cells)
 *     split into 2 column bands, the second made 4 times slower (TESSERA_TEST_SLOWDOWN=1:4, its
 *     compute stretched to 4 times what it took): static balance, which times rebalance_interval
 *     = 20 steps after a warm-up step with every cell computed, gives the slow subdomain
 *     1/(4 + 1) = 20 % of the columns; accepted 10 to 35 % (the measurement is a wall clock on a
 *     shared machine: over 5 steps, with 4 tests on 2 cores, it once gave 4.4 %).
 *  2. A dam break running east along a dry channel (1200 x 48 cells, 200 s), 3 column bands, the
 *     first (where the water starts) made 4 times slower, dynamic balance every 20 steps: the
 *     boundaries move (at least once; how often depends on the wall clock of a shared machine,
 *     which on grids this small is dominated by fixed costs per step).
 *  3. Every output of every balanced run equals the run on one subdomain byte for byte (the
 *     moves only change who computes which cell).
 *  4. Balance on tiles is refused in one line naming the key.
 *  5. Every knob on auto (balance, early exit, tile size, ghost expansion, rebalance interval) on 2
 *     subdomains of the channel: the same outputs byte for byte, and summary.json "tuning" logs
 *     the measured knobs with their candidates' seconds and the rules with their reasons.
 * Skipped (exit 77) when the CLI is missing. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "analytic.h"

static char dir[] = "/tmp/tessera_balance_XXXXXX";
static const char *cli;

/* `ENV tessera run DIR/CASE ARGS --out DIR/OUT --quiet`; the exit code. */
static int run(const char *env, const char *case_name, const char *args, const char *out) {
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "%s \"%s\" run %s/%s %s --out %s/%s --quiet 2> %s/stderr.txt", env, cli,
           dir, case_name, args, dir, out, dir);
  int rc = system(cmd);
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/* The number after "key": in the summary.json of DIR/out (NaN when absent). */
static double summary_number(const char *out, const char *key) {
  char path[512], pattern[64];
  snprintf(path, sizeof path, "%s/%s/summary.json", dir, out);
  snprintf(pattern, sizeof pattern, "\"%s\": ", key);
  char *s = val_read_file(path, NULL);
  const char *at = s ? strstr(s, pattern) : NULL;
  double v = at ? strtod(at + strlen(pattern), NULL) : NAN;
  free(s);
  return v;
}

/* The column where the second subdomain starts ("cells": [i0, i1, j0, j1] of subdomain 1). */
static int second_band_start(const char *out) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s/summary.json", dir, out);
  char *s = val_read_file(path, NULL);
  const char *at = s ? strstr(s, "\"subdomain\": 1") : NULL;
  at = at ? strstr(at, "\"cells\": [") : NULL;
  int i0 = at ? atoi(at + strlen("\"cells\": [")) : -1;
  free(s);
  return i0;
}

static void same_outputs(const char *ref, const char *out, const char *what) {
  const char *files[] = {"max_h.asc", "max_speed.asc", "arrival.asc", "h_t000040.asc"};
  int same = 1;
  for (int f = 0; f < 4; f++) {
    char a[512], b[512];
    snprintf(a, sizeof a, "%s/%s/%s", dir, ref, files[f]);
    snprintf(b, sizeof b, "%s/%s/%s", dir, out, files[f]);
    same &= val_same_file(a, b);
  }
  CHECK(same, "%s: max_h, max_speed, arrival and h at 40 s equal one subdomain's byte for byte",
        what);
}

static void write_case(const char *name, int nx, int ny, int lake, double end) {
  ts_raster bed = val_raster(nx, ny, 5, 0, 0), eta = val_raster(nx, ny, 5, 0, 0);
  for (int j = 0; j < ny; j++)
    for (int i = 0; i < nx; i++) {
      double x = val_xc(&bed, i), y = val_yc(&bed, j);
      bed.v[i + j * nx] = lake ? -2 - 0.5 * cos(x / 40) : 0.001 * (nx * 5 - x);
      eta.v[i + j * nx] =
          lake ? (hypot(x - 200, y - 120) < 40 ? 0.5 : 0) : bed.v[i + j * nx] + (x < 100 ? 2 : 0);
    }
  char path[512];
  snprintf(path, sizeof path, "%s/%s_bed.asc", dir, name);
  val_write_asc(path, &bed);
  snprintf(path, sizeof path, "%s/%s_eta.asc", dir, name);
  val_write_asc(path, &eta);
  snprintf(path, sizeof path, "%s/%s.ini", dir, name);
  FILE *f = fopen(path, "w");
  fprintf(f,
          "[model]\ntype = swe\n[time]\nend = %g\n[swe]\nbed = %s_bed.asc\n"
          "initial_surface = %s_eta.asc\nmanning = 0.02\n[output]\ntimes = 40\nformats = asc\n",
          end, name, name);
  fclose(f);
  val_raster_free(&bed);
  val_raster_free(&eta);
}

int main(void) {
  cli = val_cli();
  if (!cli)
    return VAL_SKIP;
  if (!mkdtemp(dir)) {
    printf("cannot create a temporary directory\n");
    return 1;
  }
  write_case("lake", 384, 96, 1, 40);
  int rc = run("", "lake.ini", "--set parallel.subdomains=1", "lake1");
  CHECK(rc == 0, "lake, one subdomain: exit %d", rc);
  rc = run("TESSERA_TEST_SLOWDOWN=1:4", "lake.ini",
           "--set parallel.subdomains=2 --set parallel.decomposition=columns "
           "--set parallel.balance=static --set parallel.rebalance_interval=20",
           "lake_static");
  int start = second_band_start("lake_static");
  double share = (384.0 - start) / 384.0;
  CHECK(rc == 0 && summary_number("lake_static", "rebalances") == 1,
        "lake, static balance, subdomain 1 four times slower: exit %d, %g rebalance", rc,
        summary_number("lake_static", "rebalances"));
  CHECK(share > 0.10 && share < 0.35,
        "lake: the slow subdomain keeps %.1f %% of the columns (1/(4 + 1) = 20 %%; 10 to 35)",
        100 * share);
  same_outputs("lake1", "lake_static", "lake, static");

  write_case("channel", 1200, 48, 0, 200);
  rc = run("", "channel.ini", "--set parallel.subdomains=1", "channel1");
  CHECK(rc == 0, "channel, one subdomain: exit %d", rc);
  rc = run("TESSERA_TEST_SLOWDOWN=0:4", "channel.ini",
           "--set parallel.subdomains=3 --set parallel.decomposition=columns "
           "--set parallel.balance=dynamic --set parallel.rebalance_interval=20",
           "channel_dynamic");
  double moves = summary_number("channel_dynamic", "rebalances");
  double moved = summary_number("channel_dynamic", "moved_cells");
  CHECK(rc == 0 && moves >= 1 && moved > 0,
        "channel, dynamic balance: exit %d, %g moves, %g cells moved (>= 1 move)", rc, moves,
        moved);
  printf("channel: imbalance %.3f at the first measurement, %.3f at the last\n",
         summary_number("channel_dynamic", "imbalance_before"),
         summary_number("channel_dynamic", "imbalance_after"));
  same_outputs("channel1", "channel_dynamic", "channel, dynamic");

  rc = run("", "channel.ini",
           "--set parallel.subdomains=4 --set parallel.decomposition=2x2 "
           "--set parallel.balance=dynamic",
           "refused");
  char path[512];
  snprintf(path, sizeof path, "%s/stderr.txt", dir);
  char *err = val_read_file(path, NULL);
  CHECK(rc == 2 && err && strstr(err, "parallel.balance") && strstr(err, "rows or columns") &&
            strchr(err, '\n') == strrchr(err, '\n'),
        "balance on tiles refused in one line: %s", err ? err : "(nothing)");
  free(err);
  rc = run("", "channel.ini",
           "--set parallel.subdomains=2 --set parallel.balance=auto --set parallel.early_exit=auto "
           "--set parallel.ghost_expansion=auto --set swe.tile_size=auto",
           "channel_auto");
  CHECK(rc == 0, "channel, every knob auto: exit %d", rc);
  same_outputs("channel1", "channel_auto", "channel, auto");
  snprintf(path, sizeof path, "%s/channel_auto/summary.json", dir);
  char *summary = val_read_file(path, NULL);
  const char *tuning = summary ? strstr(summary, "\"tuning\": {") : NULL;
  const char *exit_knob = tuning ? strstr(tuning, "\"knob\": \"early_exit\"") : NULL;
  const char *ghost_knob = tuning ? strstr(tuning, "\"knob\": \"ghost_expansion\"") : NULL;
  const char *balance_knob = tuning ? strstr(tuning, "\"knob\": \"balance\"") : NULL;
  const char *tile_knob = tuning ? strstr(tuning, "\"knob\": \"tile_size\"") : NULL;
  CHECK(
      exit_knob && strstr(exit_knob, "\"value\": \"on\"") &&
          strstr(exit_knob, "\"value\": \"off\"") && ghost_knob &&
          strstr(ghost_knob, "\"value\": \"4\"") && balance_knob &&
          strstr(balance_knob, "\"choice\": \"dynamic\"") && tile_knob &&
          strstr(tuning, "\"tuning_seconds\": ") && strstr(tuning, "\"moving_seconds\": "),
      "channel, auto: summary tuning logs early_exit (on, off), tile_size, ghost_expansion (1, 2, "
      "4) with seconds, balance = dynamic by rule, and the tuning and moving seconds");
  printf("channel, auto: tuning overhead %.4f s, moves %.4f s, balance %g moves\n",
         summary_number("channel_auto", "tuning_seconds"),
         summary_number("channel_auto", "moving_seconds"),
         summary_number("channel_auto", "rebalances"));
  free(summary);
  if (val_failures == 0) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
      printf("could not remove %s\n", dir);
  }
  return val_finish();
}
