/* What every model's case driver shares: the options of `tessera run`, loading the case file
 * with its overrides, the output directory, the check that all ranks run the same case, and the
 * dispatch on [model] type to the model's driver (swe_case.c, lbm_case.c). */
#ifndef TESSERA_CASE_H
#define TESSERA_CASE_H

#include <stdio.h>

#include "tessera/comm.h"
#include "tessera/config.h"
#include "tessera/decomp.h"
#include "tessera/error.h"

typedef struct ts_case_options {
  const char *case_path;
  const char *const *overrides; /* "section.key=value" from --set */
  int noverrides;
  const char *out_dir; /* --out, or NULL for [output] dir */
  const char *restart; /* checkpoint to continue from, or NULL */
  int quiet;           /* no progress line */
  const char *trace;   /* --trace: Chrome trace of the task runtime's tasks, or NULL */
  FILE *progress;      /* where the progress line goes (stderr) */
} ts_case_options;

/* Runs the case with the driver of its [model] type. Input errors are found before any output
 * is written. */
ts_status ts_case_run(const ts_case_options *opt);

/* The case file with the overrides applied; [model] type must be present. */
ts_status ts_case_load(ts_config **cfg, const ts_case_options *opt);
/* [parallel] subdomains (0: auto) and decomposition (auto, rows, columns, tiles, PXxPY[xPZ],
 * whose counts go to parts). */
ts_status ts_case_read_split(const ts_config *cfg, int *subdomains, ts_decomp_kind *kind,
                             int parts[3]);
/* [parallel] devices: "all" (n = 0) or up to max device numbers, and `cpu` (the host's cores
 * not driving GPUs, as TS_CASE_DEVICE_CPU) where the model allows it. */
#define TS_CASE_DEVICE_CPU (-1)
ts_status ts_case_read_devices(const ts_config *cfg, int max, int allow_cpu, int *n, int *devices);
/* Starts creating the CUDA contexts of the GPUs that [parallel] backend and devices give a run
 * of one process (ranks: the processes of the run; ts_gpu_warm_start), while it reads its
 * grids; those keys are checked later, where the model reads them. */
void ts_case_warm_gpus(const ts_config *cfg, int ranks);
/* A comma-separated list of device numbers (below 4096) and, where allowed, `cpu`, as
 * [parallel] devices and the benchmarks' --devices take it: 0, or what is wrong with it. */
typedef enum ts_device_list_fault {
  TS_DEVICES_OK = 0,
  TS_DEVICES_MALFORMED, /* not a number or cpu */
  TS_DEVICES_NO_CPU,    /* cpu where it is not allowed */
  TS_DEVICES_TOO_MANY   /* more than max */
} ts_device_list_fault;
ts_device_list_fault ts_parse_devices(const char *text, int max, int allow_cpu, int *n,
                                      int *devices);
/* [parallel] backend (cpu, cuda, auto; default from TESSERA_BACKEND, else cpu) for modules that
 * run on the CPU or on GPUs: *cuda set for GPUs; cuda in a build without CUDA is an error. */
ts_status ts_case_read_cuda(const ts_config *cfg, int *cuda);
/* [output] formats (fallback when absent): a list of the names in allowed (NULL-terminated);
 * chosen[f] is 1 for each name given. Any other name is an error naming the key. */
ts_status ts_case_formats(const ts_config *cfg, const char *model, const char *const *allowed,
                          const char *fallback, int *chosen);
/* A list of items separated by ';', each `arity` comma-separated numbers (such as boxes,
 * spheres or lines): *out holds count x arity values (malloc'ed; NULL and 0 when absent). */
ts_status ts_case_tuples(const ts_config *cfg, const char *section, const char *key, int arity,
                         double **out, int *count);
/* --out, else [output] dir, else "out" beside the case file (malloc'ed). */
ts_status ts_case_out_dir(const ts_config *cfg, const ts_case_options *opt, char **out);
/* Claims the output directory for this run (root rank only): creates it and its parents, takes
 * the lock DIR/.tessera.lock (flock, holding this process's id; the file stays) and, unless the
 * run is restarting (it continues the earlier run, whose files it keeps and rewrites from the
 * checkpoint on), removes the files that an earlier run's summary.json lists (plain names of
 * regular files in dir, a .asc's .prj with it), then that summary.json.
 * A directory locked by another run is TS_ERR_INPUT naming the directory and that run's process
 * id. *lock (-1 on failure) stays open until ts_case_release_out_dir at the end of the run. */
ts_status ts_case_prepare_out_dir(const char *dir, int restarting, int *lock);
void ts_case_release_out_dir(int lock);
/* Collective: every rank must run the same case file, overrides and build. */
ts_status ts_case_check_same(const ts_comm *comm, const ts_case_options *opt);

#endif
