/* The case drivers' shared parts (case.h). */
#define _DEFAULT_SOURCE /* strdup, flock, nanosleep, kill */
#include "physics/case.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "physics/model.h"
#include "tessera/gpu.h"
#include "tessera/io.h"

ts_status ts_case_load(ts_config **cfg, const ts_case_options *opt) {
  TS_CALL(ts_config_load(cfg, opt->case_path));
  for (int i = 0; i < opt->noverrides; i++)
    TS_CALL(ts_config_set(*cfg, opt->overrides[i]));
  if (!ts_config_has(*cfg, "model", "type")) {
    int n;
    const ts_model *const *models = ts_models(&n);
    char names[256] = "";
    for (int k = 0; k < n; k++) {
      size_t at = strlen(names);
      snprintf(names + at, sizeof names - at, "%s%s", k ? " or " : "", models[k]->name);
    }
    return ts_error(TS_ERR_INPUT, "%s: [model] type is required (type = %s)", opt->case_path,
                    names);
  }
  return TS_OK;
}

ts_status ts_case_run(const ts_case_options *opt) {
  ts_config *cfg = NULL;
  int n, model = 0;
  const ts_model *const *models = ts_models(&n);
  const char *names[16 + 1] = {NULL};
  for (int k = 0; k < n && k < 16; k++)
    names[k] = models[k]->name;
  ts_status st = ts_case_load(&cfg, opt);
  if (st == TS_OK)
    st = ts_config_choice(cfg, "model", "type", 0, names, &model);
  ts_config_free(cfg);
  if (st == TS_OK && opt->trace && !models[model]->traces)
    st = ts_error(TS_ERR_INPUT, "--trace: the %s model does not run on the task runtime (yet)",
                  models[model]->name);
  st = ts_comm_agree(ts_comm_world(), st);
  if (st != TS_OK)
    return st;
  return models[model]->run(opt);
}

ts_status ts_case_read_split(const ts_config *cfg, int *subdomains, ts_decomp_kind *kind,
                             int parts[3]) {
  const char *v;
  *subdomains = 0;
  *kind = TS_DECOMP_AUTO;
  parts[0] = parts[1] = parts[2] = 0;
  TS_CALL(ts_config_string(cfg, "parallel", "subdomains", "auto", &v));
  if (strcmp(v, "auto") != 0) {
    long n;
    TS_CALL(ts_config_int(cfg, "parallel", "subdomains", 0, &n));
    if (n < 1 || n > 32767)
      return ts_config_error(cfg, "parallel", "subdomains", "must be auto or in [1, 32767]");
    *subdomains = (int)n;
  }
  TS_CALL(ts_config_string(cfg, "parallel", "decomposition", "auto", &v));
  static const char *const kinds[] = {"auto", "rows", "columns", "tiles"};
  for (int i = 0; i < 4; i++)
    if (strcmp(v, kinds[i]) == 0) {
      *kind = (ts_decomp_kind)i;
      return TS_OK;
    }
  int p[3] = {0, 0, 1}, got;
  char tail;
  got = sscanf(v, "%dx%dx%d%c", &p[0], &p[1], &p[2], &tail);
  if (got != 3)
    got = sscanf(v, "%dx%d%c", &p[0], &p[1], &tail) == 2 ? 2 : 0;
  if (got < 2 || p[0] < 1 || p[1] < 1 || p[2] < 1)
    return ts_config_error(cfg, "parallel", "decomposition",
                           "must be auto, rows, columns, tiles or PXxPY[xPZ] such as 2x3 (got "
                           "'%s')",
                           v);
  *kind = TS_DECOMP_TILES;
  for (int a = 0; a < 3; a++)
    parts[a] = p[a];
  int tiles = p[0] * p[1] * p[2];
  if (*subdomains == 0)
    *subdomains = tiles;
  if (*subdomains != tiles && got == 3)
    return ts_config_error(cfg, "parallel", "decomposition",
                           "%d x %d x %d tiles but [parallel] subdomains = %d", p[0], p[1], p[2],
                           *subdomains);
  if (*subdomains != tiles)
    return ts_config_error(cfg, "parallel", "decomposition",
                           "%d x %d tiles but [parallel] subdomains = %d", p[0], p[1], *subdomains);
  return TS_OK;
}

ts_device_list_fault ts_parse_devices(const char *text, int max, int allow_cpu, int *n,
                                      int *devices) {
  *n = 0;
  for (const char *p = text; *p;) {
    char *end;
    long d = strtol(p, &end, 10);
    if (strncmp(p, "cpu", 3) == 0 && (p[3] == ',' || p[3] == ' ' || !p[3])) {
      if (!allow_cpu)
        return TS_DEVICES_NO_CPU;
      d = TS_CASE_DEVICE_CPU;
      end = (char *)p + 3;
    } else if (end == p || d < 0 || d >= 4096 || (*end && *end != ',' && *end != ' ')) {
      return TS_DEVICES_MALFORMED;
    }
    if (*n == max)
      return TS_DEVICES_TOO_MANY;
    devices[(*n)++] = (int)d;
    p = end;
    while (*p == ' ' || *p == ',')
      p++;
  }
  return TS_DEVICES_OK;
}

ts_status ts_case_read_devices(const ts_config *cfg, int max, int allow_cpu, int *n, int *devices) {
  const char *v;
  *n = 0;
  TS_CALL(ts_config_string(cfg, "parallel", "devices", "all", &v));
  if (strcmp(v, "all") == 0)
    return TS_OK;
  switch (ts_parse_devices(v, max, allow_cpu, n, devices)) {
  case TS_DEVICES_OK: return TS_OK;
  case TS_DEVICES_NO_CPU:
    return ts_config_error(cfg, "parallel", "devices",
                           "cpu: this model runs on GPUs or on the CPU, not both in one run");
  case TS_DEVICES_TOO_MANY:
    return ts_config_error(cfg, "parallel", "devices", "at most %d devices (got '%s')", max, v);
  default:
    return ts_config_error(cfg, "parallel", "devices",
                           "must be all or a comma-separated list of device numbers and cpu, "
                           "such as 0,1 or 0,cpu (got '%s')",
                           v);
  }
}

void ts_case_warm_gpus(const ts_config *cfg, int ranks) {
  int cuda = 0, n, devices[64], gpus = 0;
  if (ranks != 1 || ts_case_read_cuda(cfg, &cuda) != TS_OK || !cuda ||
      ts_case_read_devices(cfg, 64, 1, &n, devices) != TS_OK)
    return;
  for (int k = 0; k < n; k++)
    if (devices[k] >= 0)
      devices[gpus++] = devices[k];
  if (n == 0 || gpus > 0)
    ts_gpu_warm_start(devices, gpus);
}

ts_status ts_case_read_cuda(const ts_config *cfg, int *cuda) {
  static const char *const backends[] = {"cpu", "cuda", "auto", NULL};
  int backend, fallback = 0;
  const char *env = getenv("TESSERA_BACKEND"); /* the default, as for shallow water */
  for (int b = 0; env && backends[b]; b++)
    fallback = strcmp(env, backends[b]) == 0 ? b : fallback;
  TS_CALL(ts_config_choice(cfg, "parallel", "backend", fallback, backends, &backend));
  *cuda = backend == 1 || (backend == 2 && ts_gpu_count() > 0);
  if (*cuda && !TESSERA_HAVE_CUDA)
    return ts_config_error(cfg, "parallel", "backend", "this tessera was built without CUDA");
  return TS_OK;
}

ts_status ts_case_formats(const ts_config *cfg, const char *model, const char *const *allowed,
                          const char *fallback, int *chosen) {
  const char *formats;
  TS_CALL(ts_config_string(cfg, "output", "formats", fallback, &formats));
  int n = 0;
  char list[128] = "";
  for (; allowed[n]; n++) {
    chosen[n] = 0;
    size_t at = strlen(list);
    snprintf(list + at, sizeof list - at, "%s%s", n ? ", " : "", allowed[n]);
  }
  for (const char *p = formats; *p;) {
    while (*p == ' ' || *p == ',')
      p++;
    size_t len = strcspn(p, " ,");
    int found = -1;
    for (int f = 0; f < n && len; f++)
      if (strlen(allowed[f]) == len && strncmp(p, allowed[f], len) == 0)
        found = f;
    if (len && found < 0)
      return ts_config_error(cfg, "output", "formats", "'%.*s': %s writes %s (and [output] lines)",
                             (int)len, p, model, list);
    if (found >= 0)
      chosen[found] = 1;
    p += len;
  }
  return TS_OK;
}

ts_status ts_case_tuples(const ts_config *cfg, const char *section, const char *key, int arity,
                         double **out, int *count) {
  *out = NULL;
  *count = 0;
  const char *v;
  TS_CALL(ts_config_string(cfg, section, key, NULL, &v));
  if (!v)
    return TS_OK;
  size_t cap = 1;
  for (const char *p = v; *p; p++)
    cap += *p == ';';
  double *values = malloc(sizeof(double) * cap * (size_t)arity);
  if (!values)
    return ts_error(TS_ERR_NOMEM, "out of memory");
  int n = 0;
  const char *p = v;
  while (*p) {
    while (*p == ' ' || *p == ';')
      p++;
    if (!*p)
      break;
    for (int a = 0; a < arity; a++) {
      char *end;
      double x = strtod(p, &end);
      if (end == p || !isfinite(x)) {
        free(values);
        return ts_config_error(cfg, section, key,
                               "item %d: expected %d comma-separated numbers per item, items "
                               "separated by ';'",
                               n + 1, arity);
      }
      values[(size_t)n * arity + a] = x;
      p = end;
      while (*p == ' ')
        p++;
      if (a + 1 < arity && *p == ',')
        p++;
    }
    while (*p == ' ')
      p++;
    if (*p && *p != ';') {
      free(values);
      return ts_config_error(cfg, section, key, "item %d: more than %d numbers", n + 1, arity);
    }
    n++;
  }
  *out = values;
  *count = n;
  return TS_OK;
}

ts_status ts_case_out_dir(const ts_config *cfg, const ts_case_options *opt, char **out) {
  *out = NULL;
  if (opt->out_dir) {
    *out = strdup(opt->out_dir);
  } else {
    TS_CALL(ts_config_path(cfg, "output", "dir", out));
    if (!*out) {
      const char *file = ts_config_file(cfg);
      const char *slash = strrchr(file, '/');
      size_t n = slash ? (size_t)(slash - file + 1) : 0;
      *out = malloc(n + 4);
      if (*out)
        snprintf(*out, n + 4, "%.*sout", (int)n, file);
    }
  }
  return *out ? TS_OK : ts_error(TS_ERR_NOMEM, "out of memory");
}

/* The process id written in the lock file of another run (0: unknown). That run may have taken
 * the lock and not written its id yet (the file is empty, or holds an earlier run's id): a few
 * tries, 20 ms apart, for the id of a live process; else the last id read (a process on another
 * host). */
static long lock_holder(int fd) {
  long last = 0;
  for (int attempt = 0; attempt < 50; attempt++) {
    char text[32];
    ssize_t n = pread(fd, text, sizeof text - 1, 0);
    if (n > 0) {
      text[n] = '\0';
      char *end;
      long pid = strtol(text, &end, 10);
      if (end != text && pid > 0 && (kill((pid_t)pid, 0) == 0 || errno == EPERM))
        return pid;
      last = end != text && pid > 0 ? pid : last;
    }
    nanosleep(&(struct timespec){0, 20000000}, NULL);
  }
  return last;
}

/* What an earlier run's summary.json lists: the files to remove. */
typedef struct stale_files {
  const char *dir;
  ts_status st; /* the first failure */
} stale_files;

/* Removes dir/name when name is a plain file name (no '/', not hidden) of a regular file (not a
 * link); a missing file is no error. */
static void remove_stale(stale_files *c, const char *name) {
  char path[4200];
  struct stat sb;
  if (!name[0] || name[0] == '.' || strchr(name, '/') || c->st != TS_OK)
    return;
  snprintf(path, sizeof path, "%s/%s", c->dir, name);
  if (lstat(path, &sb) != 0 || !S_ISREG(sb.st_mode))
    return;
  if (unlink(path) != 0 && errno != ENOENT)
    c->st = ts_error(TS_ERR_IO, "%s: cannot remove this output of an earlier run: %s", path,
                     strerror(errno));
}

/* A file listed in the summary; an ESRI ASCII grid's .prj beside it goes with it. */
static void remove_listed(void *ctx, const char *name) {
  stale_files *c = ctx;
  remove_stale(c, name);
  size_t n = strlen(name);
  if (n > 4 && n < 4096 && strcmp(name + n - 4, ".asc") == 0) {
    char prj[4096];
    snprintf(prj, sizeof prj, "%.*s.prj", (int)(n - 4), name);
    remove_stale(c, prj);
  }
}

/* Removes the files the summary.json in dir lists (the snapshots, maps, gauges, checkpoints and
 * other files of the run that wrote it), then the summary itself. */
static ts_status remove_earlier_outputs(const char *dir) {
  static const char *const keys[] = {"snapshots",     "maxima",      "gauges",
                                     "gauges_png",    "netcdf",      "files",
                                     "gauges_netcdf", "checkpoints", NULL};
  char path[4200];
  snprintf(path, sizeof path, "%s/summary.json", dir);
  FILE *f = fopen(path, "rb");
  if (!f)
    return errno == ENOENT ? TS_OK
                           : ts_error(TS_ERR_INPUT, "%s: cannot read: %s", path, strerror(errno));
  enum { MAX_SUMMARY = 64 << 20 };
  char *text = malloc(MAX_SUMMARY + 1);
  size_t n = text ? fread(text, 1, MAX_SUMMARY + 1, f) : 0;
  int failed = ferror(f);
  fclose(f);
  if (!text)
    return ts_error(TS_ERR_NOMEM, "out of memory");
  ts_status st = TS_OK;
  if (failed || n > MAX_SUMMARY) {
    st = ts_error(TS_ERR_INPUT,
                  "%s: cannot read it (over 64 MiB?): remove it or choose another "
                  "output directory",
                  path);
  } else {
    text[n] = '\0';
    stale_files c = {.dir = dir, .st = TS_OK};
    long bad = strlen(text) == n ? ts_json_scan(text, keys, remove_listed, &c) : (long)n + 1;
    st = c.st;
    if (st == TS_OK && bad)
      st = ts_error(TS_ERR_INPUT,
                    "%s: byte %ld: not the JSON summary of a run, so its files cannot be told "
                    "apart: remove it or choose another output directory",
                    path, bad);
    if (st == TS_OK && unlink(path) != 0 && errno != ENOENT)
      st = ts_error(TS_ERR_IO, "%s: cannot remove: %s", path, strerror(errno));
  }
  free(text);
  return st;
}

ts_status ts_case_prepare_out_dir(const char *dir, int restarting, int *lock) {
  char path[4096];
  *lock = -1;
  if (!dir[0])
    return ts_error(TS_ERR_INPUT, "the output directory name is empty");
  if (strlen(dir) >= sizeof path - 32)
    return ts_error(TS_ERR_INPUT, "%.64s...: output directory name too long", dir);
  snprintf(path, sizeof path, "%s", dir);
  for (char *p = path + 1; *p; p++) {
    if (*p != '/')
      continue;
    *p = '\0';
    if (mkdir(path, 0777) != 0 && errno != EEXIST)
      return ts_error(TS_ERR_INPUT, "%s: cannot create the output directory: %s", path,
                      strerror(errno));
    *p = '/';
  }
  if (mkdir(path, 0777) != 0 && errno != EEXIST)
    return ts_error(TS_ERR_INPUT, "%s: cannot create the output directory: %s", dir,
                    strerror(errno));
  struct stat sb;
  if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
    return ts_error(TS_ERR_INPUT, "%s: the output directory is not a directory", dir);
  snprintf(path, sizeof path, "%s/.tessera.lock", dir);
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0)
    return ts_error(TS_ERR_INPUT, "%s: the output directory is not writable: %s", dir,
                    strerror(errno));
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int busy = errno == EWOULDBLOCK, saved = errno;
    long pid = busy ? lock_holder(fd) : 0;
    close(fd);
    if (!busy)
      return ts_error(TS_ERR_IO, "%s: cannot lock it: %s", path, strerror(saved));
    if (pid == 0)
      return ts_error(TS_ERR_INPUT,
                      "%s: the output directory is in use by another run (process id unknown)",
                      dir);
    return ts_error(TS_ERR_INPUT, "%s: the output directory is in use by another run (process %ld)",
                    dir, pid);
  }
  char text[32];
  int len = snprintf(text, sizeof text, "%ld\n", (long)getpid());
  ts_status st = TS_OK;
  if (ftruncate(fd, 0) != 0 || pwrite(fd, text, (size_t)len, 0) != len)
    st = ts_error(TS_ERR_INPUT, "%s: the output directory is not writable: %s", dir,
                  strerror(errno));
  if (st == TS_OK && !restarting)
    st = remove_earlier_outputs(dir);
  if (st != TS_OK) {
    close(fd);
    return st;
  }
  *lock = fd;
  return TS_OK;
}

void ts_case_release_out_dir(int lock) {
  if (lock >= 0)
    close(lock);
}

/* 64-bit FNV-1a of the case file, the overrides and the build: ranks must agree on it. */
static uint64_t case_fingerprint(const ts_case_options *opt) {
  uint64_t h = 1469598103934665603ull;
  const char *build = "tessera " TESSERA_VERSION " " __VERSION__;
  for (const char *c = build; *c; c++)
    h = (h ^ (unsigned char)*c) * 1099511628211ull;
  FILE *f = fopen(opt->case_path, "rb");
  int c;
  while (f && (c = fgetc(f)) != EOF)
    h = (h ^ (unsigned char)c) * 1099511628211ull;
  if (f)
    fclose(f);
  for (int i = 0; i < opt->noverrides; i++)
    for (const char *p = opt->overrides[i]; *p; p++)
      h = (h ^ (unsigned char)*p) * 1099511628211ull;
  return h;
}

/* Every rank must run the same case with the same build. */
ts_status ts_case_check_same(const ts_comm *comm, const ts_case_options *opt) {
  int n = ts_comm_size(comm), me = ts_comm_rank(comm);
  if (n == 1)
    return TS_OK;
  uint64_t mine = case_fingerprint(opt), *all = malloc(sizeof *all * (size_t)n);
  if (!all)
    return ts_error(TS_ERR_NOMEM, "out of memory");
  ts_status st = ts_comm_allgather(comm, &mine, sizeof mine, all);
  if (st == TS_OK && all[me] != all[0])
    st = ts_error(TS_ERR_INPUT,
                  "%s: rank %d runs a different case file, overrides or tessera build than rank 0",
                  opt->case_path, me);
  free(all);
  return st;
}
