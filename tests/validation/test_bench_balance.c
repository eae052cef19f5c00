/* The CLI's measuring commands ($TESSERA_BINARY):
 *  1. `tessera bench balance` on examples/dambreak (200 x 20 cells, shortened to 10 s, 2 row
 *     subdomains, a measurement every 20 steps) with --modes off,dynamic --json: exit 0, the JSON
 *     holds two rows, off then dynamic, each with positive seconds of the run and of its time
 *     loop, and the temporary output directory it names is gone.
 *  2. `tessera bench balance x.ini --modes bogus`: exit 2 and one line on stderr.
 *  3. `tessera info` prints the CPU's speed line; `tessera info --no-speeds` leaves it out.
 * Skipped (exit 77) when the CLI is missing. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "analytic.h"

static char dir[] = "/tmp/tessera_bench_balance_test_XXXXXX";
static const char *cli;

/* `tessera ARGS > DIR/stdout.txt 2> DIR/stderr.txt`, run in DIR; the exit code. */
static int tessera(const char *args) {
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "cd %s && \"%s\" %s > stdout.txt 2> stderr.txt", dir, cli, args);
  int rc = system(cmd);
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/* DIR/name as a string (malloc'ed; "" when it cannot be read). */
static char *read_output(const char *name) {
  char path[256];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  char *text = val_read_file(path, NULL);
  return text ? text : calloc(1, 1);
}

/* The number after `"key": ` at or after from (NaN when absent). */
static double number_after(const char *from, const char *key) {
  char pattern[64];
  snprintf(pattern, sizeof pattern, "\"%s\": ", key);
  const char *at = strstr(from, pattern);
  return at ? strtod(at + strlen(pattern), NULL) : NAN;
}

static void bench_rows(void) {
  const char *src = getenv("TESSERA_SOURCE_DIR");
  char args[1024];
  snprintf(args, sizeof args,
           "bench balance %s/examples/dambreak/dambreak.ini --set time.end=10 "
           "--set parallel.subdomains=2 --set parallel.decomposition=rows "
           "--set parallel.rebalance_interval=20 --modes off,dynamic --json bench.json",
           src ? src : ".");
  int rc = tessera(args);
  char *json = read_output("bench.json"), *out = read_output("stdout.txt");
  const char *off = strstr(json, "\"mode\": \"off\"");
  const char *dynamic = off ? strstr(off, "\"mode\": \"dynamic\"") : NULL;
  int rows = 0;
  for (const char *p = strstr(json, "\"mode\": "); p; p = strstr(p + 1, "\"mode\": "))
    rows++;
  CHECK(rc == 0 && rows == 2 && off && dynamic,
        "bench balance --modes off,dynamic: exit %d, %d rows in the JSON (2: off, then dynamic)",
        rc, rows);
  const char *row[2] = {off, dynamic};
  for (int k = 0; k < 2 && row[k]; k++) {
    double seconds = number_after(row[k], "seconds");
    double loop = number_after(row[k], "loop_seconds");
    CHECK(seconds > 0 && loop > 0 && loop <= seconds,
          "%s: %g s in all, %g s in the time loop (both > 0, the loop within the run)",
          k ? "dynamic" : "off", seconds, loop);
  }
  const char *outputs = strstr(out, "outputs: ");
  char removed[256] = "";
  if (outputs)
    sscanf(outputs, "outputs: %255[^ ]", removed);
  char *mode = strstr(removed, "/MODE");
  if (mode)
    *mode = '\0';
  struct stat sb;
  CHECK(mode && stat(removed, &sb) != 0, "the temporary outputs %s are removed", removed);
  free(json);
  free(out);
}

static void bogus_mode(void) {
  int rc = tessera("bench balance x.ini --modes bogus");
  char *err = read_output("stderr.txt");
  CHECK(rc == 2 && strstr(err, "bogus") && strchr(err, '\n') == strrchr(err, '\n') &&
            strchr(err, '\n'),
        "--modes bogus: exit %d (2), stderr: %s", rc, err);
  free(err);
}

static void info_speeds(void) {
  int rc = tessera("info");
  char *out = read_output("stdout.txt");
  const char *cpu = strstr(out, "\n  cpu:");
  CHECK(rc == 0 && strstr(out, "speeds:") && cpu && strstr(cpu, "Mcells/s"),
        "tessera info: exit %d, a speeds block with a cpu line in Mcells/s", rc);
  free(out);
  rc = tessera("info --no-speeds");
  out = read_output("stdout.txt");
  CHECK(rc == 0 && !strstr(out, "speeds:"), "tessera info --no-speeds: exit %d, no speeds", rc);
  free(out);
}

int main(void) {
  cli = val_cli();
  if (!cli)
    return VAL_SKIP;
  if (!mkdtemp(dir)) {
    printf("cannot create a temporary directory\n");
    return 1;
  }
  bench_rows();
  bogus_mode();
  info_speeds();
  if (val_failures == 0) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
      printf("could not remove %s\n", dir);
  }
  return val_finish();
}
