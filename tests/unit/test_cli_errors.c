/* Bad input to `tessera run` must give exactly one line "tessera: FILE:LINE: message" (or the
 * grid file and its line) on stderr, exit code 2, and no output directory. Each case writes a
 * small valid case, breaks one thing, runs the binary ($TESSERA_BINARY) and checks all three. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[64];
static int failures, checks;

static void write_file(const char *name, const char *text) {
  char path[256];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  fputs(text, f);
  fclose(f);
}

/* An 8 x 6 grid of value v (NODATA -9999), optionally with one replaced token. */
static void write_grid(const char *name, int ncols, int nrows, const char *value,
                       const char *odd_value) {
  char path[256];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  fprintf(f, "ncols %d\nnrows %d\nxllcorner 0\nyllcorner 0\ncellsize 10\nNODATA_value -9999\n",
          ncols, nrows);
  for (int j = 0; j < nrows; j++) {
    for (int i = 0; i < ncols; i++)
      fprintf(f, "%s%s", i ? " " : "", odd_value && i == 3 && j == 2 ? odd_value : value);
    fputc('\n', f);
  }
  fclose(f);
}

static const char *good_case = "[model]\ntype = swe\n[time]\nend = 5\n[swe]\nbed = bed.asc\n"
                               "initial_depth = depth.asc\nmanning = 0.03\n[output]\n"
                               "dir = out\ntimes = 2\nformats = asc, png\ngauges = gauges.csv\n";

static void reset(void) {
  char cmd[256];
  snprintf(cmd, sizeof cmd, "rm -rf %s/out %s/out2", dir, dir);
  if (system(cmd) != 0)
    printf("could not clean %s\n", dir);
  write_grid("bed.asc", 8, 6, "1", NULL);
  write_grid("depth.asc", 8, 6, "0.5", NULL);
  write_file("gauges.csv", "id,x,y\ng1,35,25\n");
  write_file("case.ini", good_case);
}

/* Runs tessera with args; checks exit code, one stderr line with the expected parts, no output. */
static void expect(const char *what, const char *args, int code, const char *part1,
                   const char *part2) {
  char cmd[1024], errpath[256], line[1024] = "";
  snprintf(errpath, sizeof errpath, "%s/stderr.txt", dir);
  snprintf(cmd, sizeof cmd, "cd %s && \"%s\" run %s --quiet 2> stderr.txt > /dev/null", dir,
           getenv("TESSERA_BINARY"), args);
  int status = system(cmd);
  int rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  FILE *f = fopen(errpath, "r");
  int lines = 0;
  char buf[1024];
  while (f && fgets(buf, sizeof buf, f)) {
    if (lines == 0)
      snprintf(line, sizeof line, "%s", buf);
    lines++;
  }
  if (f)
    fclose(f);
  line[strcspn(line, "\n")] = '\0';
  char out[256];
  snprintf(out, sizeof out, "%s/out", dir);
  struct stat sb;
  int has_output = stat(out, &sb) == 0;
  int ok = rc == code && lines == 1 && strncmp(line, "tessera: ", 9) == 0 && strstr(line, part1) &&
           (!part2 || strstr(line, part2)) && !has_output;
  checks++;
  failures += !ok;
  printf("%s %-28s exit %d, %d line(s)%s: %s\n", ok ? "ok  " : "FAIL", what, rc, lines,
         has_output ? ", OUTPUT WRITTEN" : "", line);
  if (!ok)
    printf("     expected exit %d and a line with '%s'%s%s\n", code, part1, part2 ? " and '" : "",
           part2 ? part2 : "");
  reset();
}

int main(void) {
  if (!getenv("TESSERA_BINARY")) {
    printf("FAIL: TESSERA_BINARY is not set\n");
    return 1;
  }
  snprintf(dir, sizeof dir, "/tmp/tessera_cli_XXXXXX");
  if (!mkdtemp(dir))
    return 1;
  reset();

  /* the valid case runs and writes its outputs */
  char cmd[512];
  snprintf(cmd, sizeof cmd, "cd %s && \"%s\" run case.ini --quiet", dir, getenv("TESSERA_BINARY"));
  int ok = system(cmd) == 0;
  snprintf(cmd, sizeof cmd, "%s/out/summary.json", dir);
  struct stat sb;
  ok = ok && stat(cmd, &sb) == 0;
  printf("%s valid case runs and writes summary.json\n", ok ? "ok  " : "FAIL");
  checks++;
  failures += !ok;
  reset();

  write_file("case.ini", "[model]\ntype = swe\n[time]\nend = 5\nendd = 6\n");
  expect("unknown key", "case.ini", 2, "case.ini:5:", "did you mean 'end'");
  write_file("case.ini", "[model]\ntype = swe\n[tme]\nend = 5\n");
  expect("unknown section", "case.ini", 2, "case.ini:3:", "unknown section");
  write_file("case.ini", "[model]\ntype = swe\n[time]\nend = soon\n");
  expect("bad number", "case.ini", 2, "case.ini:4:", "not a number");
  write_file("case.ini", "[model]\ntype = swe\n[time]\nend = 5\nend = 6\n");
  expect("duplicate key", "case.ini", 2, "case.ini:5:", "twice");
  write_file("case.ini", "[model]\ntype = swe\n[time\nend = 5\n");
  expect("syntax error", "case.ini", 2, "case.ini:3:", "syntax");
  write_file("case.ini", "[model]\ntype = lbm3\n[time]\nend = 5\n");
  expect("unknown model", "case.ini", 2, "case.ini:2:", "swe");
  expect("bad --set value", "case.ini --set time.end=abc", 2, "--set time.end=abc", "number");
  expect("unknown --set key", "case.ini --set swe.maning=0.1", 2, "--set swe.maning", "manning");
  expect("missing case file", "nope.ini", 2, "nope.ini", "cannot open");

  write_file("case.ini", "[model]\ntype = swe\n[time]\nend = 5\n[swe]\nbed = missing.asc\n");
  expect("missing grid", "case.ini", 2, "missing.asc", "cannot open");
  write_grid("bed.asc", 8, 6, "1", "x1");
  expect("malformed grid", "case.ini", 2, "bed.asc:9:", NULL);
  write_grid("depth.asc", 7, 6, "0.5", NULL);
  expect("grids of different shape", "case.ini", 2, "depth.asc", "differs from the bed");
  write_grid("depth.asc", 8, 6, "0.5", "-2");
  expect("negative depth", "case.ini", 2, "depth.asc:9:", "negative depth -2 at row 3, column 4");
  write_grid("depth.asc", 8, 6, "0.5", "-9999");
  expect("NODATA depth", "case.ini", 2, "depth.asc:9:", "missing depth");
  expect("weights for another number of subdomains",
         "case.ini --set parallel.subdomains=3 --set parallel.weights=3,1", 2,
         "--set parallel.weights", "2 weights for 3 subdomains");
  expect("a zero weight", "case.ini --set parallel.subdomains=2 --set parallel.weights=1,0", 2,
         "--set parallel.weights", "weight 2 is 0");
  expect("bad decomposition", "case.ini --set parallel.decomposition=3y2", 2,
         "--set parallel.decomposition", "PXxPY");
  expect("impossible split",
         "case.ini --set parallel.subdomains=9 --set parallel.decomposition=rows", 2,
         "--set parallel.subdomains=9", "cannot be split as rows");
  expect("tiles and count differ",
         "case.ini --set parallel.subdomains=3 --set parallel.decomposition=2x2", 2,
         "--set parallel.decomposition=2x2", "2 x 2 tiles");
  expect("ghost expansion range", "case.ini --set parallel.ghost_expansion=9", 2,
         "--set parallel.ghost_expansion", "[1, 8]");
  expect("early exit choice", "case.ini --set parallel.early_exit=sometimes", 2,
         "--set parallel.early_exit", "auto");
  expect("gpu kernels choice", "case.ini --set parallel.gpu_kernels=row", 2,
         "--set parallel.gpu_kernels", "tiles");
  write_grid("n.asc", 8, 6, "0.03", "-1");
  expect("negative friction grid", "case.ini --set swe.manning=n.asc", 2,
         "n.asc:9:", "negative friction");
  write_grid("depth.asc", 8, 6, "0.5", "nan");
  expect("NaN depth", "case.ini", 2, "depth.asc:9:", NULL);
  write_file("gauges.csv", "id,x,y\ng1,35,25\ng2,500,25\n");
  expect("gauge outside the domain", "case.ini", 2, "gauges.csv:3:", "g2");
  write_file("blocker", "a file, not a directory\n");
  expect("unwritable output dir", "case.ini --out blocker/out2", 2, "blocker", NULL);
  write_file("case.ini", "[model]\ntype = swe\n[time]\nend = 5\n[swe]\nbed = bed.asc\n"
                         "[boundary]\nwest = level\n");
  expect("level without its level", "case.ini", 2, "case.ini:8:", "west_level");
  write_file("case.ini", "[model]\ntype = swe\n[time]\nend = 5\n[swe]\nbed = bed.asc\n"
                         "[output]\nformats = asc, jpeg\n");
  expect("unknown format", "case.ini", 2, "case.ini:8:", "jpeg");
  write_file("case.ini", "[model]\ntype = swe\n[time]\nend = 5\n[swe]\nbed = bed.asc\n"
                         "initial_depth = depth.asc\ninitial_surface = bed.asc\n");
  expect("surface and depth", "case.ini", 2, "case.ini:7:", "not both");
  write_file("case.ini", "[model]\ntype = swe\n[time]\nend = 5\ncfl = 0.7\n");
  expect("cfl out of range", "case.ini", 2, "case.ini:5:", "cfl");
  write_file("case.ini", "[model]\ntype = swe\n[swe]\nbed = bed.asc\n");
  expect("no end time", "case.ini", 2, "case.ini", "[time] end is required");
  /* lattice Boltzmann cases */
  write_file("lbm.ini", "[model]\ntype = lbm\n[lbm]\nnx = 16\ntau = 0.5\n[time]\nsteps = 10\n");
  expect("lbm: tau at 1/2", "lbm.ini", 2, "lbm.ini:5:", "exceed 1/2");
  expect("lbm: two viscosities", "lbm.ini --set lbm.reynolds=100", 2, "lbm.ini",
         "exactly one of reynolds");
  expect("lbm: Mach too high", "lbm.ini --set lbm.tau=0.6 --set lbm.lid_velocity=0.4", 2,
         "--set lbm.lid_velocity", "Mach");
  expect("lbm: misspelt key", "lbm.ini --set lbm.reynold=100", 2, "lbm.reynold", "reynolds");
  expect("lbm: one periodic face", "lbm.ini --set lbm.tau=0.6 --set lbm.west=periodic", 2,
         "--set lbm.west", "pairs");
  expect("lbm: D2Q9 has no top", "lbm.ini --set lbm.tau=0.6 --set lbm.top=lid", 2, "--set lbm.top",
         "no top face");
  expect("lbm: steps required", "lbm.ini --set lbm.tau=0.6 --set time.steps=0", 2,
         "--set time.steps", "at least 1");
  write_file("not_a_checkpoint.tsc", "TESSERA-CKPT but not really\n");
  expect("bad checkpoint", "case.ini --restart not_a_checkpoint.tsc", 2, "not_a_checkpoint.tsc",
         "checkpoint");

  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0)
    printf("could not remove %s\n", dir);
  printf("%d passed, %d failed\n", checks - failures, failures);
  return failures != 0;
}
