/* `tessera bench balance` (bench_balance.h): runs one case once per [parallel] balance mode, in
 * this process (every MPI rank runs the same sequence: ts_case_run is collective), each with
 * `--set parallel.balance=MODE` after the user's overrides and its output in DIR/MODE; then reads
 * each run's summary.json and prints one table (and --json FILE): the seconds of the whole run
 * (measured here, the slowest rank's), of the time loop (summary wall_s), the speed-up of the
 * time loop over `off`, and the summary's balance object. Outputs are kept small (formats = vtk,
 * maxima = off, unless the --set options say otherwise); without --out they go to a temporary
 * directory that is removed at the end. */
#define _XOPEN_SOURCE 700 /* mkdtemp, strtok_r, nftw */
#include "bench_balance.h"

#include <errno.h>
#include <ftw.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "physics/case.h"
#include "physics/cli.h"
#include "tessera/comm.h"
#include "tessera/io.h"

static const char *const mode_names[] = {"off", "static", "dynamic", "auto"};
#define NMODES 4

/* One run of the case: the mode it was given, and what it measured. */
typedef struct balance_row {
  const char *mode;    /* [parallel] balance given to the run */
  char balancer[16];   /* summary balance.mode: what ran (for auto, what it chose) */
  double seconds;      /* the whole run, measured around ts_case_run */
  double loop_seconds; /* summary wall_s: the time loop */
  double rebalances, moved_cells, move_seconds, imbalance_before, imbalance_after;
} balance_row;

static int usage(const char *msg, const char *arg) {
  fprintf(stderr, "tessera: bench balance: %s%s%s (see tessera --help)\n", msg, arg ? ": " : "",
          arg ? arg : "");
  return 2;
}

/* "off,dynamic" into indices of mode_names, in the order given; 0 when an item is not a mode
 * or repeats one. */
static int parse_modes(const char *list, int modes[NMODES], int *nmodes) {
  char items[64];
  if (strlen(list) >= sizeof items)
    return 0;
  strcpy(items, list);
  *nmodes = 0;
  char *save = NULL;
  for (char *item = strtok_r(items, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
    int found = -1;
    for (int m = 0; m < NMODES; m++)
      if (strcmp(item, mode_names[m]) == 0)
        found = m;
    if (found < 0)
      return 0;
    for (int k = 0; k < *nmodes; k++)
      if (modes[k] == found)
        return 0;
    modes[(*nmodes)++] = found;
  }
  return *nmodes > 0;
}

/* A new directory /tmp/tessera_bench_balance_XXXXXX, created by rank 0 and named for all. */
static ts_status make_temp_dir(char name[64]) {
  const ts_comm *world = ts_comm_world();
  char mine[64] = "/tmp/tessera_bench_balance_XXXXXX";
  ts_status st = TS_OK;
  if (ts_comm_rank(world) == 0 && !mkdtemp(mine))
    st = ts_error(TS_ERR_IO, "%s: cannot create a temporary directory: %s", mine, strerror(errno));
  TS_CALL(ts_comm_agree(world, st));
  char *all = malloc((size_t)64 * ts_comm_size(world));
  if (!all)
    return ts_error(TS_ERR_NOMEM, "out of memory");
  st = ts_comm_allgather(world, mine, 64, all);
  memcpy(name, all, 64); /* rank 0's */
  free(all);
  return st;
}

static int remove_entry(const char *path, const struct stat *sb, int kind, struct FTW *walk) {
  (void)sb, (void)kind, (void)walk;
  return remove(path);
}

/* The text after `"key": ` at or after from (ts_json writes one space after a colon), or NULL. */
static const char *json_value(const char *from, const char *key) {
  char pattern[64];
  snprintf(pattern, sizeof pattern, "\"%s\": ", key);
  const char *at = strstr(from, pattern);
  return at ? at + strlen(pattern) : NULL;
}

/* The whole file as a string (malloc'ed), or NULL. */
static char *read_text(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  char *text = NULL;
  long size = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
  if (size >= 0 && fseek(f, 0, SEEK_SET) == 0 && (text = malloc((size_t)size + 1))) {
    if (fread(text, 1, (size_t)size, f) == (size_t)size)
      text[size] = '\0';
    else
      free(text), text = NULL;
  }
  fclose(f);
  return text;
}

/* The time loop's seconds and the balance object of DIR/summary.json. */
static ts_status read_summary(const char *dir, balance_row *row) {
  char path[4200];
  snprintf(path, sizeof path, "%s/summary.json", dir);
  char *text = read_text(path);
  if (!text)
    return ts_error(TS_ERR_IO, "%s: cannot read: %s", path, strerror(errno));
  const char *balance = json_value(text, "balance");
  const char *mode = balance ? json_value(balance, "mode") : NULL;
  struct {
    const char *from, *key;
    double *value;
  } numbers[] = {{text, "wall_s", &row->loop_seconds},
                 {balance, "rebalances", &row->rebalances},
                 {balance, "moved_cells", &row->moved_cells},
                 {balance, "move_seconds", &row->move_seconds},
                 {balance, "imbalance_before", &row->imbalance_before},
                 {balance, "imbalance_after", &row->imbalance_after}};
  ts_status st = TS_OK;
  if (!mode || *mode != '"')
    st = ts_error(TS_ERR_IO, "%s: no balance mode", path);
  else
    snprintf(row->balancer, sizeof row->balancer, "%.*s", (int)strcspn(mode + 1, "\""), mode + 1);
  for (size_t k = 0; k < sizeof numbers / sizeof numbers[0] && st == TS_OK; k++) {
    const char *value = numbers[k].from ? json_value(numbers[k].from, numbers[k].key) : NULL;
    char *end = NULL;
    if (value)
      *numbers[k].value = strtod(value, &end);
    if (!value || end == value)
      st = ts_error(TS_ERR_IO, "%s: no number for \"%s\"", path, numbers[k].key);
  }
  free(text);
  return st;
}

/* Runs the case into DIR/MODE with `parallel.balance=MODE` as its last override (collective);
 * rank 0 reads the summary. */
static ts_status run_mode(const char *case_path, const char **overrides, int noverrides,
                          const char *out_root, balance_row *row) {
  const ts_comm *world = ts_comm_world();
  char balance[64], dir[4096];
  snprintf(balance, sizeof balance, "parallel.balance=%s", row->mode);
  snprintf(dir, sizeof dir, "%s/%s", out_root, row->mode);
  overrides[noverrides - 1] = balance;
  ts_case_options opt = {.case_path = case_path,
                         .overrides = overrides,
                         .noverrides = noverrides,
                         .out_dir = dir,
                         .progress = stderr};
  if (ts_comm_rank(world) == 0) {
    fprintf(stderr, "balance = %s: %s\n", row->mode, dir);
    fflush(stderr);
  }
  double start = omp_get_wtime();
  TS_CALL(ts_case_run(&opt));
  row->seconds = omp_get_wtime() - start;
  TS_CALL(ts_comm_max(world, &row->seconds, 1));
  return ts_comm_agree(world, ts_comm_rank(world) == 0 ? read_summary(dir, row) : TS_OK);
}

/* The time loop of `off` over this row's, or 0 without an `off` row. */
static double speedup(const balance_row *rows, int nrows, const balance_row *row) {
  for (int k = 0; k < nrows; k++)
    if (strcmp(rows[k].mode, "off") == 0 && row->loop_seconds > 0)
      return rows[k].loop_seconds / row->loop_seconds;
  return 0;
}

static void print_table(const char *case_path, const balance_row *rows, int nrows) {
  printf("tessera bench balance: %s, %d ranks x %d threads\n", case_path,
         ts_comm_size(ts_comm_world()), omp_get_max_threads());
  printf("%-8s %-8s %9s %9s %8s %10s %12s %9s %10s %10s\n", "mode", "balancer", "all_s", "loop_s",
         "speedup", "rebalances", "moved_cells", "move_s", "imb_before", "imb_after");
  for (int k = 0; k < nrows; k++) {
    const balance_row *r = &rows[k];
    char gain[16] = "-";
    if (speedup(rows, nrows, r) > 0)
      snprintf(gain, sizeof gain, "%.3f", speedup(rows, nrows, r));
    printf("%-8s %-8s %9.3f %9.3f %8s %10.0f %12.0f %9.4f %10.3f %10.3f\n", r->mode, r->balancer,
           r->seconds, r->loop_seconds, gain, r->rebalances, r->moved_cells, r->move_seconds,
           r->imbalance_before, r->imbalance_after);
  }
}

static ts_status write_json(const char *path, const char *case_path, const balance_row *rows,
                            int nrows) {
  char tmp[4200];
  FILE *f = ts_open_temp(path, tmp, sizeof tmp);
  if (!f)
    return ts_error(TS_ERR_IO, "%s: cannot write", path);
  ts_json j;
  ts_json_begin(&j, f);
  ts_json_key(&j, "model"), ts_json_string(&j, "swe");
  ts_json_key(&j, "benchmark"), ts_json_string(&j, "balance");
  ts_json_key(&j, "version"), ts_json_string(&j, TESSERA_VERSION);
  ts_json_key(&j, "case"), ts_json_string(&j, case_path);
  ts_json_key(&j, "ranks"), ts_json_int(&j, ts_comm_size(ts_comm_world()));
  ts_json_key(&j, "threads"), ts_json_int(&j, omp_get_max_threads());
  ts_json_key(&j, "rows");
  ts_json_array_begin(&j);
  for (int k = 0; k < nrows; k++) {
    const balance_row *r = &rows[k];
    ts_json_object_begin(&j);
    ts_json_key(&j, "mode"), ts_json_string(&j, r->mode);
    ts_json_key(&j, "balancer"), ts_json_string(&j, r->balancer);
    ts_json_key(&j, "seconds"), ts_json_number(&j, r->seconds);
    ts_json_key(&j, "loop_seconds"), ts_json_number(&j, r->loop_seconds);
    ts_json_key(&j, "speedup");
    if (speedup(rows, nrows, r) > 0)
      ts_json_number(&j, speedup(rows, nrows, r));
    else
      ts_json_null(&j);
    ts_json_key(&j, "rebalances"), ts_json_int(&j, (long long)r->rebalances);
    ts_json_key(&j, "moved_cells"), ts_json_int(&j, (long long)r->moved_cells);
    ts_json_key(&j, "move_seconds"), ts_json_number(&j, r->move_seconds);
    ts_json_key(&j, "imbalance_before"), ts_json_number(&j, r->imbalance_before);
    ts_json_key(&j, "imbalance_after"), ts_json_number(&j, r->imbalance_after);
    ts_json_object_end(&j);
  }
  ts_json_array_end(&j);
  ts_json_end(&j);
  return ts_commit_temp(f, tmp, path);
}

int bench_balance(int argc, char **argv) {
  const char *case_path = NULL, *out = NULL, *json = NULL;
  int modes[NMODES] = {0, 1, 2, 3}, nmodes = NMODES;
  /* small outputs first (the user's --set may change them), the balance mode last */
  const char **overrides = calloc((size_t)argc + 3, sizeof *overrides);
  if (!overrides)
    return usage("out of memory", NULL);
  int noverrides = 0;
  overrides[noverrides++] = "output.formats=vtk";
  overrides[noverrides++] = "output.maxima=off";
  int rc = 0;
  for (int i = 0; i < argc && rc == 0; i++) {
    const char *a = argv[i];
    int has_value = i + 1 < argc;
    if (strcmp(a, "--set") == 0 && has_value)
      overrides[noverrides++] = argv[++i];
    else if (strcmp(a, "--modes") == 0 && has_value) {
      if (!parse_modes(argv[++i], modes, &nmodes))
        rc = usage("--modes must be a list of off, static, dynamic, auto (each at most once)",
                   argv[i]);
    } else if (strcmp(a, "--out") == 0 && has_value)
      out = argv[++i];
    else if (strcmp(a, "--json") == 0 && has_value)
      json = argv[++i];
    else if (strcmp(a, "--set") == 0 || strcmp(a, "--modes") == 0 || strcmp(a, "--out") == 0 ||
             strcmp(a, "--json") == 0)
      rc = usage("missing value for option", a);
    else if (a[0] == '-')
      rc = usage("unknown option", a);
    else if (!case_path)
      case_path = a;
    else
      rc = usage("more than one case file", a);
  }
  if (rc == 0 && !case_path)
    rc = usage("needs a case file", NULL);
  if (rc != 0) {
    free(overrides);
    return rc;
  }
  noverrides++; /* parallel.balance=MODE, set by run_mode */
  const ts_comm *world = ts_comm_world();
  int root = ts_comm_rank(world) == 0;
  char temp[64] = "";
  ts_status st = out ? TS_OK : make_temp_dir(temp);
  balance_row rows[NMODES] = {{0}};
  for (int k = 0; k < nmodes && st == TS_OK; k++) {
    rows[k].mode = mode_names[modes[k]];
    st = run_mode(case_path, overrides, noverrides, out ? out : temp, &rows[k]);
  }
  if (st == TS_OK && root) {
    print_table(case_path, rows, nmodes);
    printf("outputs: %s/MODE%s\n", out ? out : temp, out ? "" : " (removed)");
    if (json)
      st = write_json(json, case_path, rows, nmodes);
  }
  if (temp[0] && root && nftw(temp, remove_entry, 16, FTW_DEPTH | FTW_PHYS) != 0)
    fprintf(stderr, "tessera: %s: could not remove it\n", temp);
  free(overrides);
  return st == TS_OK ? 0 : ts_cli_fail(st);
}
