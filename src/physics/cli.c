/* Helpers of the command-line entry points (cli.h). */
#define _POSIX_C_SOURCE 200809L
#include "physics/cli.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tessera/comm.h"

int ts_cli_fail(ts_status st) {
  const ts_comm *world = ts_comm_world();
  if (st != TS_ERR_PEER && ts_comm_size(world) > 1)
    fprintf(stderr, "tessera: rank %d: %s\n", ts_comm_rank(world), ts_error_message());
  else if (st != TS_ERR_PEER)
    fprintf(stderr, "tessera: %s\n", ts_error_message());
  return st == TS_ERR_INPUT ? 2 : 1;
}

int ts_cli_usage_error(const char *msg, const char *arg) {
  fprintf(stderr, "tessera: %s%s%s (see tessera --help)\n", msg, arg ? ": " : "", arg ? arg : "");
  return 2;
}

int ts_cli_name_index(const char *v, const char *const *names, int n) {
  for (int k = 0; k < n; k++)
    if (strcmp(v, names[k]) == 0)
      return k;
  return -1;
}

int ts_cli_relaunch_under_mpirun(int ranks, int argc, char **argv, const char *extra_flag,
                                 const char *extra_value) {
  char **args = calloc((size_t)argc + 12, sizeof *args);
  char np[16], self[4096];
  ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  if (!args || len <= 0) {
    free(args);
    fprintf(stderr, "tessera: cannot find its own executable to start mpirun\n");
    return 1;
  }
  self[len] = 0;
  snprintf(np, sizeof np, "%d", ranks);
  int k = 0;
  args[k++] = "mpirun";
  args[k++] = "--oversubscribe";
  args[k++] = "-np";
  args[k++] = np;
  args[k++] = self;
  for (int i = 1; i < argc; i++)
    args[k++] = argv[i];
  if (extra_flag) {
    args[k++] = (char *)extra_flag;
    args[k++] = (char *)extra_value;
  }
  fflush(stdout);
  execvp("mpirun", args);
  fprintf(stderr, "tessera: --ranks %d needs mpirun on the PATH\n", ranks);
  free(args);
  return 1;
}

FILE *ts_cli_json_open(const char *path, char *tmp, size_t tmp_size, ts_json *j,
                       const char *model) {
  FILE *f = ts_open_temp(path, tmp, tmp_size);
  if (!f) {
    fprintf(stderr, "tessera: %s: cannot write\n", path);
    return NULL;
  }
  ts_json_begin(j, f);
  ts_json_key(j, "model"), ts_json_string(j, model);
  return f;
}
