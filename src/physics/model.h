/* The table of physics modules. Each module (src/physics/NAME/NAME_model.c) defines one
 * `const ts_model ts_model_NAME`: its [model] type name, its line in `tessera info`, the keys
 * of its case-file sections, its case driver, its benchmark (`tessera bench NAME`) and what
 * `tessera info` measures for it. The build generates the table from those files, so case.c and the
 * command-line program dispatch through it and a new module touches no shared file. */
#ifndef TESSERA_MODEL_H
#define TESSERA_MODEL_H

#include "physics/case.h"
#include "tessera/config.h"

typedef struct ts_model {
  const char *name;          /* [model] type, and `tessera bench NAME` */
  const char *description;   /* one line for `tessera info` */
  int traces;                /* its runs go through the task runtime (tessera run --trace) */
  const ts_config_key *keys; /* its case-file sections' keys (the loader checks every key) */
  int nkeys;
  /* Runs a case ([model] type = name): input errors are found before any output is written. */
  ts_status (*run)(const ts_case_options *opt);
  /* `tessera bench NAME ARGS`: argv holds the options after the name; full_argc/argv the whole
   * command line (to start it again under mpirun). Returns the exit status. NULL: no bench. */
  int (*bench)(int argc, char **argv, int full_argc, char **full_argv);
  const char *bench_usage; /* its options, one usage line or more (with "\n") */
  const char *bench_help;  /* what it measures, for `tessera --help` */
  /* Extra `tessera info` lines (such as measured device speeds; measure = 0: none that take
   * time); NULL: none. */
  void (*info)(int measure);
} ts_model;

/* The modules, in the order of their names; n gets their number. */
const ts_model *const *ts_models(int *n);
/* The module called name, or NULL. */
const ts_model *ts_model_find(const char *name);

#endif
