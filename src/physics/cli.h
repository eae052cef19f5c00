/* What the command-line entry points share (the `tessera` program and the modules' benchmarks,
 * model.h): the exit code of a failure, usage errors, names among choices, starting the command
 * again under mpirun, and a benchmark's JSON file. */
#ifndef TESSERA_CLI_H
#define TESSERA_CLI_H

#include <stdio.h>

#include "tessera/error.h"
#include "tessera/io.h"

/* Prints the error (unless another rank failed and printed it) as one line "tessera: ..." and
 * gives the exit code: 2 for bad input, 1 for other failures. */
int ts_cli_fail(ts_status st);
/* Prints "tessera: msg: arg (see tessera --help)" and gives 2. */
int ts_cli_usage_error(const char *msg, const char *arg);
/* The position of v among n names, or -1. */
int ts_cli_name_index(const char *v, const char *const *names, int n);
/* Runs this command (argv) again under mpirun with `ranks` processes, adding one option (flag
 * and value) when flag is not NULL; returns only on failure (1). */
int ts_cli_relaunch_under_mpirun(int ranks, int argc, char **argv, const char *extra_flag,
                                 const char *extra_value);
/* Opens a benchmark's JSON file (written to a temporary name, renamed when complete by
 * ts_commit_temp) and starts its object with the model; NULL, with the error printed, when it
 * cannot be written. */
FILE *ts_cli_json_open(const char *path, char *tmp, size_t tmp_size, ts_json *j, const char *model);

#endif
