/* Validation: radiation coupled to the energy equation on the task runtime, through the CLI
 * (`tessera run examples/burns_christon/burns_christon.ini --set rmcrt.couple=energy`, 16^3
 * cells, 20 rays, 6 steps of 50 s, radiation every 2 steps):
 *  1. The same files byte for byte on 1, 4 and 7 patches: tasks run out of order, and the
 *     results do not depend on it.
 *  2. The medium cools: summary.json's final temperatures lie below the initial one (sigma T^4
 *     = 1, cold walls, divQ > 0 everywhere) by at most 6 x 50 s x 4 W/m3 / rho c_p = 1.2 K
 *     (divQ <= 4 kappa sigma T^4 <= 4).
 *  3. --trace writes a Chrome trace: one complete event ("ph": "X") per task with its patch and
 *     step (4 patches: 3 trace steps x 4 + 6 steps x 4 energy updates = 36), durations >= 0,
 *     and the dependencies held: each patch's energy update starts after its tracing of that
 *     step ended, and each tracing after every energy update of the step before.
 *  4. --trace on a shallow-water case is refused in one line.
 * With `--mpi` (ctest mpi.rmcrt_coupled_trace), instead: the run over 2 MPI ranks with 2 patches
 * each equals the one-process run on 4 patches byte for byte, and its trace holds both ranks (one
 * process each) with their message tasks: each rank sends its 2 patches' new media to the other
 * after every step (12 sends, 12 receives per rank), a receive ends after its send started, each
 * patch's next energy update starts after the send of its last one completed, and each tracing
 * starts after every receive of the step before ended.
 * Skipped (exit 77) when the CLI is missing. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "analytic.h"

static char dir[] = "/tmp/tessera_coupled_XXXXXX";

static int run_with(const char *launcher, const char *cli, const char *args, const char *out) {
  char cmd[4096];
  const char *src = getenv("TESSERA_SOURCE_DIR");
  snprintf(cmd, sizeof cmd,
           "%s \"%s\" run %s/examples/burns_christon/burns_christon.ini --set rmcrt.nx=16 --set "
           "rmcrt.rays=20 --set rmcrt.couple=energy --set rmcrt.steps=6 --set rmcrt.dt=50 --set "
           "rmcrt.radiation_interval=2 %s --out %s/%s --quiet 2> %s/stderr.txt",
           launcher, cli, src ? src : ".", args, dir, out, dir);
  int rc = system(cmd);
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static int run(const char *cli, const char *args, const char *out) {
  return run_with("", cli, args, out);
}

typedef struct event {
  char name[16];
  double ts, dur;
  int patch, step, pid;
} event;

/* The complete events of a trace file (one per line), or -1 when one is malformed. */
static int read_events(const char *path, event *ev, int max) {
  char *text = val_read_file(path, NULL);
  if (!text || !strstr(text, "\"traceEvents\": [")) {
    free(text);
    return -1;
  }
  int n = 0;
  for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
    if (!strstr(line, "\"ph\": \"X\""))
      continue;
    event e;
    char *name = strstr(line, "\"name\": \""), *ts = strstr(line, "\"ts\": "),
         *dur = strstr(line, "\"dur\": "), *patch = strstr(line, "\"patch\": "),
         *step = strstr(line, "\"step\": "), *pid = strstr(line, "\"pid\": ");
    if (!name || !ts || !dur || !patch || !step || !pid || n == max ||
        sscanf(name, "\"name\": \"%15[^\"]\"", e.name) != 1) {
      free(text);
      return -1;
    }
    e.ts = atof(ts + 6), e.dur = atof(dur + 7);
    e.patch = atoi(patch + 9), e.step = atoi(step + 8), e.pid = atoi(pid + 7);
    ev[n++] = e;
  }
  free(text);
  return n;
}

static int is(const event *e, const char *name) { return strcmp(e->name, name) == 0; }

/* Two ranks against one process, and the messages in the trace. */
static void check_ranks(const char *cli) {
  char trace[600];
  snprintf(trace, sizeof trace, "--set parallel.subdomains=4 --trace %s/ranks.json", dir);
  int rc1 = run(cli, "--set parallel.subdomains=4", "one");
  int rc2 = run_with("OMP_NUM_THREADS=2 mpirun --oversubscribe -np 2", cli, trace, "two");
  CHECK(rc1 == 0 && rc2 == 0, "coupled runs in one process and over 2 ranks: exit %d %d", rc1, rc2);
  char a[700], b[700];
  snprintf(a, sizeof a, "%s/one/divq.vti", dir);
  snprintf(b, sizeof b, "%s/two/divq.vti", dir);
  CHECK(val_same_file(a, b), "divq.vti (divQ and temperature) equal on 1 process and 2 ranks");

  snprintf(a, sizeof a, "%s/ranks.json", dir);
  char *text = val_read_file(a, NULL);
  CHECK(text && strstr(text, "\"pid\": 0, \"args\": {\"name\": \"rank 0\"") &&
            strstr(text, "\"pid\": 1, \"args\": {\"name\": \"rank 1\""),
        "ranks.json: one process per rank");
  free(text);
  static event ev[4096];
  int n = read_events(a, ev, 4096), count[2][4] = {{0}}, matched = n > 0, freed = n > 0,
      received = n > 0;
  static const char *const names[] = {"trace", "energy", "send", "receive"};
  for (int x = 0; x < n; x++) {
    for (int k = 0; k < 4; k++)
      if (ev[x].pid >= 0 && ev[x].pid < 2 && is(&ev[x], names[k]))
        count[ev[x].pid][k]++;
    for (int y = 0; y < n; y++) {
      const event *s = &ev[x], *t = &ev[y];
      double s_end = s->ts + s->dur, slack = 1.0; /* microseconds of rounding in the file */
      if (is(s, "send") && is(t, "receive") && s->patch == t->patch && s->step == t->step)
        matched &= t->ts + t->dur + slack >= s->ts && s->pid != t->pid;
      if (is(s, "send") && is(t, "energy") && s->patch == t->patch && t->step == s->step + 1)
        freed &= t->ts + slack >= s_end && s->pid == t->pid;
      if (is(s, "receive") && is(t, "trace") && t->step == s->step + 1 && s->pid == t->pid)
        received &= t->ts + slack >= s_end;
    }
  }
  for (int r = 0; r < 2; r++)
    CHECK(count[r][0] == 6 && count[r][1] == 12 && count[r][2] == 12 && count[r][3] == 12,
          "ranks.json, rank %d: %d trace, %d energy, %d send, %d receive (6, 12, 12, 12 "
          "expected)",
          r, count[r][0], count[r][1], count[r][2], count[r][3]);
  CHECK(matched, "ranks.json: every receive ends after its send (on the other rank) started");
  CHECK(freed, "ranks.json: a patch's energy update starts after the send of its last one ended");
  CHECK(received, "ranks.json: tracing starts after every receive of the step before ended");
}

int main(int argc, char **argv) {
  const char *cli = val_cli();
  if (!cli)
    return VAL_SKIP;
  if (!mkdtemp(dir)) {
    printf("cannot create a temporary directory\n");
    return 1;
  }
  if (argc > 1 && strcmp(argv[1], "--mpi") == 0) {
    check_ranks(cli);
    return val_finish();
  }
  char trace[600];
  snprintf(trace, sizeof trace, "--set parallel.subdomains=4 --trace %s/trace.json", dir);
  int rc1 = run(cli, "--set parallel.subdomains=1", "one");
  int rc4 = run(cli, trace, "four");
  int rc7 = run(cli, "--set parallel.subdomains=7", "seven");
  CHECK(rc1 == 0 && rc4 == 0 && rc7 == 0, "coupled runs on 1, 4 and 7 patches: exit %d %d %d", rc1,
        rc4, rc7);
  int same = 1;
  const char *files[] = {"divq.vti", "divq_centreline.csv"};
  for (int f = 0; f < 2; f++) {
    char a[700], b[700], c[700];
    snprintf(a, sizeof a, "%s/one/%s", dir, files[f]);
    snprintf(b, sizeof b, "%s/four/%s", dir, files[f]);
    snprintf(c, sizeof c, "%s/seven/%s", dir, files[f]);
    same &= val_same_file(a, b) && val_same_file(a, c);
  }
  CHECK(same, "divq.vti and divq_centreline.csv equal byte for byte on 1, 4 and 7 patches");

  char path[700];
  snprintf(path, sizeof path, "%s/trace.json", dir);
  static event ev[4096];
  int n = read_events(path, ev, 4096), ntrace = 0, nenergy = 0, order = n > 0;
  for (int a = 0; a < n; a++) {
    ntrace += strcmp(ev[a].name, "trace") == 0;
    nenergy += strcmp(ev[a].name, "energy") == 0;
    order &= ev[a].dur >= 0;
    for (int b = 0; b < n; b++) {
      const event *x = &ev[a], *y = &ev[b];
      double x_end = x->ts + x->dur, slack = 1.0; /* microseconds of rounding in the file */
      if (!strcmp(x->name, "trace") && !strcmp(y->name, "energy") && x->patch == y->patch &&
          x->step == y->step)
        order &= y->ts + slack >= x_end;
      if (!strcmp(x->name, "energy") && !strcmp(y->name, "trace") && y->step == x->step + 1)
        order &= y->ts + slack >= x_end;
    }
  }
  CHECK(n == 36 && ntrace == 12 && nenergy == 24,
        "trace.json: %d complete events, %d trace and %d energy (12 and 24 expected)", n, ntrace,
        nenergy);
  CHECK(order, "trace.json: durations >= 0; energy after its patch's tracing, tracing after the "
               "step before's energy updates");

  snprintf(path, sizeof path, "%s/one/summary.json", dir);
  char *summary = val_read_file(path, NULL);
  const char *lo = summary ? strstr(summary, "\"temperature_min\": ") : NULL;
  const char *hi = summary ? strstr(summary, "\"temperature_max\": ") : NULL;
  double t0 = pow(1 / 5.67051e-8, 0.25), tmin = lo ? atof(lo + 19) : NAN,
         tmax = hi ? atof(hi + 19) : NAN;
  CHECK(summary && strstr(summary, "\"couple\": \"energy\"") && strstr(summary, "\"steps\": 6"),
        "summary.json: couple = energy, 6 steps");
  CHECK(tmax < t0 && tmin > t0 - 1.2,
        "the medium cools: final temperatures %.6f to %.6f K, initial %.6f K (drop <= 1.2 K)", tmin,
        tmax, t0);
  free(summary);

  char cmd[2048];
  const char *src = getenv("TESSERA_SOURCE_DIR");
  snprintf(cmd, sizeof cmd,
           "\"%s\" run %s/examples/dambreak/dambreak.ini --trace %s/t.json --out %s/swe "
           "2> %s/stderr.txt",
           cli, src ? src : ".", dir, dir, dir);
  int rc = system(cmd);
  rc = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  snprintf(path, sizeof path, "%s/stderr.txt", dir);
  char *err = val_read_file(path, NULL);
  CHECK(rc == 2 && err && strstr(err, "--trace") && strchr(err, '\n') == strrchr(err, '\n'),
        "--trace on a shallow-water case refused in one line: %s", err ? err : "(nothing)");
  free(err);
  if (val_failures == 0) {
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
      printf("could not remove %s\n", dir);
  }
  return val_finish();
}
