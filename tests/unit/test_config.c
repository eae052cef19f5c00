/* Unit tests of case files (src/core/config.c): every getter, relative paths, --set overrides
 * and their errors, and each load error (syntax, duplicate, unknown section or key with its
 * suggestion, bad number, continuation line, long line) with the line number it must name. */
#define _POSIX_C_SOURCE 200809L
#include "tessera/config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "unit/check.h"
static char dir[64];

/* Writes text to DIR/name and returns the path (static buffer). */
static const char *write_case(const char *name, const char *text) {
  static char path[256];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  fputs(text, f);
  fclose(f);
  return path;
}

static int message_has(const char *part) { return strstr(ts_error_message(), part) != NULL; }

/* Loading `text` fails with TS_ERR_INPUT and a message holding "case.ini:LINE:" and `part`. */
static void expect_load_error(const char *what, const char *text, int line, const char *part) {
  ts_config *c = NULL;
  const char *path = write_case("case.ini", text);
  ts_status st = ts_config_load(&c, path);
  char location[300];
  snprintf(location, sizeof location, "%s:%d: ", path, line);
  CHECK(st == TS_ERR_INPUT && !c && strncmp(ts_error_message(), location, strlen(location)) == 0 &&
            message_has(part),
        "%s -> line %d, '%s': %s", what, line, part, ts_error_message());
  ts_config_free(c);
}

static const char *full_case = "; a complete case\n"
                               "[model]\n"
                               "type = swe\n"
                               "\n"
                               "[time]\n"
                               "end = 4000   ; seconds\n"
                               "cfl = 0.3\n"
                               "max_steps = 1e3\n"
                               "integrator = euler\n"
                               "[swe]\n"
                               "bed = grids/bed.asc\n"
                               "initial_surface = /abs/eta.asc\n"
                               "manning = 0.033\n"
                               "chezy = n.asc\n"
                               "[output]\n"
                               "times = 300, 1000 ,2000.5\n"
                               "formats = asc, png\n";

static void test_getters(void) {
  ts_config *c = NULL;
  const char *path = write_case("full.ini", full_case);
  CHECK(ts_config_load(&c, path) == TS_OK, "load a complete case: %s", ts_error_message());
  if (!c)
    return;
  CHECK(strcmp(ts_config_file(c), path) == 0, "ts_config_file gives the path");
  CHECK(ts_config_has(c, "time", "end") && !ts_config_has(c, "time", "interval") &&
            !ts_config_has(c, "Time", "end"),
        "ts_config_has (case-sensitive)");

  const char *s = NULL;
  CHECK(ts_config_string(c, "model", "type", NULL, &s) == TS_OK && strcmp(s, "swe") == 0,
        "string: [model] type = swe");
  CHECK(ts_config_string(c, "swe", "precision", "float", &s) == TS_OK && strcmp(s, "float") == 0,
        "string: absent key gives the default");

  double d = 0;
  CHECK(ts_config_double(c, "time", "end", 0, &d) == TS_OK && d == 4000,
        "double: inline comment stripped, end = %g", d);
  CHECK(ts_config_double(c, "time", "cfl", 0.25, &d) == TS_OK && d == 0.3, "double: cfl = %g", d);
  CHECK(ts_config_double(c, "swe", "gravity", 9.81, &d) == TS_OK && d == 9.81,
        "double: absent key gives the default");
  CHECK(ts_config_double(c, "swe", "bed", 0, &d) == TS_ERR_INPUT &&
            message_has("full.ini:11: [swe] bed: 'grids/bed.asc' is not a number"),
        "double: a path is not a number: %s", ts_error_message());

  long l = 0;
  CHECK(ts_config_int(c, "time", "max_steps", 0, &l) == TS_OK && l == 1000,
        "int: 1e3 is 1000 (%ld)", l);
  CHECK(ts_config_int(c, "swe", "tile_size", 32, &l) == TS_OK && l == 32, "int: default");
  CHECK(ts_config_int(c, "time", "cfl", 0, &l) == TS_ERR_INPUT && message_has(":7: [time] cfl:") &&
            message_has("whole number"),
        "int: 0.3 is not a whole number: %s", ts_error_message());

  static const char *const integrators[] = {"euler", "rk2", NULL};
  static const char *const precisions[] = {"float", "double", NULL};
  static const char *const models[] = {"lbm", "radiation", NULL};
  int k = -1;
  CHECK(ts_config_choice(c, "time", "integrator", 1, integrators, &k) == TS_OK && k == 0,
        "choice: euler is index 0");
  CHECK(ts_config_choice(c, "swe", "precision", 1, precisions, &k) == TS_OK && k == 1,
        "choice: absent key gives the default index");
  CHECK(ts_config_choice(c, "model", "type", 0, models, &k) == TS_ERR_INPUT &&
            message_has(":3: [model] type: 'swe' is not one of: lbm, radiation"),
        "choice: bad value lists the choices: %s", ts_error_message());

  char *p = NULL;
  char expected[300];
  snprintf(expected, sizeof expected, "%s/grids/bed.asc", dir);
  CHECK(ts_config_path(c, "swe", "bed", &p) == TS_OK && p && strcmp(p, expected) == 0,
        "path: relative to the case file's directory (%s)", p ? p : "NULL");
  free(p);
  CHECK(ts_config_path(c, "swe", "initial_surface", &p) == TS_OK && p &&
            strcmp(p, "/abs/eta.asc") == 0,
        "path: absolute path kept");
  free(p);
  p = (char *)"x";
  CHECK(ts_config_path(c, "swe", "initial_depth", &p) == TS_OK && p == NULL,
        "path: absent key gives NULL");

  int n = -1;
  double *v = NULL;
  CHECK(ts_config_double_list(c, "output", "times", &n, &v) == TS_OK && n == 3 && v[0] == 300 &&
            v[1] == 1000 && v[2] == 2000.5,
        "list: 300, 1000 ,2000.5");
  free(v);
  CHECK(ts_config_double_list(c, "output", "interval", &n, &v) == TS_OK && n == 0 && !v,
        "list: absent key gives n = 0, NULL");

  CHECK(ts_config_is_number(c, "swe", "manning") && !ts_config_is_number(c, "swe", "chezy") &&
            !ts_config_is_number(c, "swe", "theta"),
        "is_number: 0.033 yes, n.asc no, absent no");

  CHECK(ts_config_error(c, "swe", "manning", "too %s", "rough") == TS_ERR_INPUT &&
            message_has("full.ini:13: [swe] manning: too rough"),
        "ts_config_error names file, line, section and key: %s", ts_error_message());
  CHECK(ts_config_error(c, "swe", "theta", "needed") == TS_ERR_INPUT &&
            message_has("full.ini: [swe] theta: needed"),
        "ts_config_error for an absent key names the file: %s", ts_error_message());
  ts_config_free(c);
}

static void test_overrides(void) {
  ts_config *c = NULL;
  CHECK(ts_config_load(&c, write_case("full.ini", full_case)) == TS_OK, "load for --set");
  if (!c)
    return;
  double d = 0;
  CHECK(ts_config_set(c, "time.end=600") == TS_OK &&
            ts_config_double(c, "time", "end", 0, &d) == TS_OK && d == 600,
        "--set time.end=600 replaces the value");
  CHECK(ts_config_set(c, " swe.gravity = 9.8 ") == TS_OK &&
            ts_config_double(c, "swe", "gravity", 0, &d) == TS_OK && d == 9.8,
        "--set adds an absent key (spaces trimmed)");
  CHECK(ts_config_set(c, "time.end=abc") == TS_OK &&
            ts_config_double(c, "time", "end", 0, &d) == TS_ERR_INPUT &&
            message_has("--set time.end=abc: 'abc' is not a number"),
        "a bad --set value is reported at --set: %s", ts_error_message());
  char *p = NULL;
  CHECK(ts_config_set(c, "swe.bed=here/bed.asc") == TS_OK &&
            ts_config_path(c, "swe", "bed", &p) == TS_OK && p && strcmp(p, "here/bed.asc") == 0,
        "a --set path stays relative to the current directory (%s)", p ? p : "NULL");
  free(p);

  struct {
    const char *arg, *part;
  } bad[] = {
      {"time.end", "--set time.end: expected section.key=value"},
      {"timeend=5", "--set timeend=5: expected section.key=value"},
      {"swe.maning=0.1", "--set swe.maning=0.1: unknown key 'maning' in [swe] (did you mean "
                         "'manning'?)"},
      {"tme.end=5", "--set tme.end=5: unknown section [tme] (did you mean 'time'?)"},
      {"time.end=", "--set time.end=: [time] end has no value"},
      {"output.dir=", "--set output.dir=: [output] dir has no value"},
  };
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++)
    CHECK(ts_config_set(c, bad[k].arg) == TS_ERR_INPUT && message_has(bad[k].part), "--set %s: %s",
          bad[k].arg, ts_error_message());
  ts_config_free(c);
}

static void test_load_errors(void) {
  ts_config *c = NULL;
  char missing[128];
  snprintf(missing, sizeof missing, "%s/nope.ini", dir);
  CHECK(ts_config_load(&c, missing) == TS_ERR_INPUT && !c && message_has("nope.ini: cannot open:"),
        "missing file: %s", ts_error_message());

  expect_load_error("duplicate key", "[model]\ntype = swe\n[time]\nend = 5\ncfl = 0.2\nend = 6\n",
                    6, "[time] end is given twice (first on line 4)");
  expect_load_error("unknown key", "[model]\ntype = swe\n\n[swe]\nmanningg = 0.03\n", 5,
                    "unknown key 'manningg' in [swe] (did you mean 'manning'?)");
  expect_load_error("unknown key, nothing close", "[swe]\nbed = a.asc\nwhatever = 1\n", 3,
                    "unknown key 'whatever' in [swe]");
  expect_load_error("unknown section with keys", "[model]\ntype = swe\n[outptu]\ndir = x\n", 3,
                    "unknown section [outptu] (did you mean 'output'?)");
  expect_load_error("unknown section without keys", "[model]\ntype = swe\n\n[extra]\n", 4,
                    "unknown section [extra]");
  expect_load_error("key outside a section", "; header\nend = 5\n[time]\n", 2,
                    "outside any [section]");
  expect_load_error("syntax error", "[model]\ntype = swe\n[time\nend = 5\n", 3, "syntax error");
  expect_load_error("line without =", "[time]\nend = 5\ncfl\n", 3, "syntax error");
  expect_load_error("empty value", "[time]\nend =\n", 2, "[time] end has no value");
  expect_load_error("continuation line", "[swe]\nbed = a.asc\n  b.asc\n", 3,
                    "indented line continues [swe] bed");
  expect_load_error("first error wins", "[model]\ntype = swe\n[time\n[nope]\n", 3, "syntax");

  char long_case[600] = "[swe]\nbed = ";
  memset(long_case + strlen(long_case), 'a', 300);
  strcat(long_case, ".asc\n");
  expect_load_error("long line", long_case, 2, "line longer than");

  /* a bad number is found by the getter, at its own line */
  CHECK(ts_config_load(&c, write_case("case.ini", "[model]\ntype = swe\n[swe]\ngravity = abc\n"
                                                  "theta = 1.5x\ndry_depth = 1e999\n")) == TS_OK,
        "a case with bad numbers loads");
  double d;
  CHECK(ts_config_double(c, "swe", "gravity", 9.81, &d) == TS_ERR_INPUT &&
            message_has("case.ini:4: [swe] gravity: 'abc' is not a number"),
        "bad number: %s", ts_error_message());
  CHECK(ts_config_double(c, "swe", "theta", 1.3, &d) == TS_ERR_INPUT &&
            message_has("case.ini:5: [swe] theta: '1.5x' is not a number"),
        "trailing junk: %s", ts_error_message());
  CHECK(ts_config_double(c, "swe", "dry_depth", 1e-4, &d) == TS_ERR_INPUT &&
            message_has("case.ini:6:"),
        "overflowing number: %s", ts_error_message());
  ts_config_free(c);

  CHECK(ts_config_load(&c, write_case("case.ini", "[output]\ntimes = 1, ,3\n")) == TS_OK,
        "a case with a bad list loads");
  int n;
  double *v = NULL;
  CHECK(ts_config_double_list(c, "output", "times", &n, &v) == TS_ERR_INPUT && !v &&
            message_has("case.ini:2: [output] times: item 2 of the list is empty"),
        "empty list item: %s", ts_error_message());
  ts_config_free(c);
  CHECK(ts_config_load(&c, write_case("case.ini", "[output]\ntimes = 1,nan\n")) == TS_OK,
        "a case with NaN in a list loads");
  CHECK(ts_config_double_list(c, "output", "times", &n, &v) == TS_ERR_INPUT && !v &&
            message_has("case.ini:2: [output] times: 'nan' is not a number"),
        "NaN in a list: %s", ts_error_message());
  ts_config_free(c);
}

static void test_file_variants(void) {
  ts_config *c = NULL;
  double d = 0;
  CHECK(ts_config_load(&c, write_case("bom.ini", "\xEF\xBB\xBF[time]\r\nend = 12\r\n")) == TS_OK &&
            ts_config_double(c, "time", "end", 0, &d) == TS_OK && d == 12,
        "byte order mark and CRLF line ends: %s", ts_error_message());
  ts_config_free(c);
  c = NULL;
  CHECK(ts_config_load(&c, write_case("indent.ini", "[time]\n  end = 7\n# comment\n")) == TS_OK &&
            ts_config_double(c, "time", "end", 0, &d) == TS_OK && d == 7,
        "an indented first key of a section is a key, # comments");
  ts_config_free(c);
  c = NULL;
  CHECK(ts_config_load(&c, write_case("empty.ini", "")) == TS_OK && c &&
            !ts_config_has(c, "time", "end"),
        "an empty file loads (required keys are the driver's business)");
  ts_config_free(c);

  int n = 0;
  const ts_config_key *schema = ts_config_schema(&n);
  int documented = n > 30;
  for (int k = 0; k < n; k++)
    documented = documented && schema[k].section && schema[k].key && schema[k].unit &&
                 schema[k].def && schema[k].doc && schema[k].doc[0];
  CHECK(documented, "schema: %d keys, each with unit, default and meaning", n);
}

int main(void) {
  snprintf(dir, sizeof dir, "/tmp/tessera_config_XXXXXX");
  if (!mkdtemp(dir))
    return 1;
  test_getters();
  test_overrides();
  test_load_errors();
  test_file_variants();
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0)
    printf("could not remove %s\n", dir);
  printf("%s\n", failures ? "FAILED" : "all passed");
  return failures != 0;
}
