/* Case files: parsing with libinih (line numbers through a counting reader), command-line
 * overrides, typed getters with "FILE:LINE: message" errors, and the check against the schema. */
#define _POSIX_C_SOURCE 200809L
#include "tessera/config.h"

#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct config_entry {
  char *section, *key, *value;
  int line; /* 0 for --set overrides */
} config_entry;

struct ts_config {
  char *file;
  char *dir; /* directory of the case file, for relative paths */
  config_entry *entries;
  int n, cap;
  int reader_line;   /* lines read so far by the counting reader */
  int line_indented; /* the line just read starts with white space */
  ts_status status;  /* first error met while parsing */
  int status_line;   /* its line */
};

static char *dup_string(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d)
    memcpy(d, s, n);
  return d;
}

static const config_entry *find(const ts_config *c, const char *section, const char *key) {
  for (int k = c->n - 1; k >= 0; k--)
    if (strcmp(c->entries[k].section, section) == 0 && strcmp(c->entries[k].key, key) == 0)
      return &c->entries[k];
  return NULL;
}

static const ts_config_key *schema_key(const char *section, const char *key) {
  int n;
  const ts_config_key *schema = ts_config_schema(&n);
  for (int k = 0; k < n; k++)
    if (strcmp(schema[k].section, section) == 0 && (!key || strcmp(schema[k].key, key) == 0))
      return &schema[k];
  return NULL;
}

static int edit_distance(const char *a, const char *b) {
  int la = (int)strlen(a), lb = (int)strlen(b);
  if (la > 40 || lb > 40)
    return 99;
  int d[41][41];
  for (int i = 0; i <= la; i++)
    d[i][0] = i;
  for (int j = 0; j <= lb; j++)
    d[0][j] = j;
  for (int i = 1; i <= la; i++)
    for (int j = 1; j <= lb; j++) {
      int sub = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
      int del = d[i - 1][j] + 1, ins = d[i][j - 1] + 1;
      d[i][j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
    }
  return d[la][lb];
}

/* " (did you mean 'X'?)" for the closest known key of the section, or "". */
static void suggestion(const char *section, const char *key, char *out, size_t size) {
  int n, best = 3;
  const ts_config_key *schema = ts_config_schema(&n);
  out[0] = '\0';
  for (int k = 0; k < n; k++) {
    if (section && strcmp(schema[k].section, section) != 0)
      continue;
    int d = edit_distance(key, section ? schema[k].key : schema[k].section);
    if (d < best) {
      best = d;
      snprintf(out, size, " (did you mean '%s'?)", section ? schema[k].key : schema[k].section);
    }
  }
}

static ts_status location_error(const ts_config *c, int line, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static ts_status location_error(const ts_config *c, int line, const char *fmt, ...) {
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (line > 0)
    return ts_error(TS_ERR_INPUT, "%s:%d: %s", c->file, line, msg);
  return ts_error(TS_ERR_INPUT, "%s: %s", c->file, msg);
}

/* Checks a (section, key) against the schema and stores it; line 0 marks an override. */
static ts_status add_entry(ts_config *c, const char *section, const char *key, const char *value,
                           int line, const char *origin) {
  char hint[96];
  if (!schema_key(section, NULL)) {
    suggestion(NULL, section, hint, sizeof hint);
    return line ? location_error(c, line, "unknown section [%s]%s", section, hint)
                : ts_error(TS_ERR_INPUT, "%s: unknown section [%s]%s", origin, section, hint);
  }
  if (!schema_key(section, key)) {
    suggestion(section, key, hint, sizeof hint);
    return line ? location_error(c, line, "unknown key '%s' in [%s]%s", key, section, hint)
                : ts_error(TS_ERR_INPUT, "%s: unknown key '%s' in [%s]%s", origin, key, section,
                           hint);
  }
  if (line && find(c, section, key))
    return location_error(c, line, "[%s] %s is given twice (first on line %d)", section, key,
                          find(c, section, key)->line);
  if (*value == '\0')
    return line ? location_error(c, line, "[%s] %s has no value", section, key)
                : ts_error(TS_ERR_INPUT, "%s: [%s] %s has no value", origin, section, key);
  if (c->n == c->cap) {
    int cap = c->cap ? 2 * c->cap : 32;
    config_entry *e = realloc(c->entries, sizeof *e * (size_t)cap);
    if (!e)
      return ts_error(TS_ERR_NOMEM, "out of memory reading %s", c->file);
    c->entries = e;
    c->cap = cap;
  }
  config_entry *e = &c->entries[c->n];
  e->section = dup_string(section);
  e->key = dup_string(key);
  e->value = dup_string(value);
  e->line = line;
  if (!e->section || !e->key || !e->value)
    return ts_error(TS_ERR_NOMEM, "out of memory reading %s", c->file);
  c->n++;
  return TS_OK;
}

static int config_handler(void *user, const char *section, const char *name, const char *value) {
  ts_config *c = user;
  if (c->status != TS_OK)
    return 0;
  const config_entry *last = c->n ? &c->entries[c->n - 1] : NULL;
  if (c->line_indented && last && last->line > 0 && last->line < c->reader_line &&
      strcmp(last->section, section) == 0 && strcmp(last->key, name) == 0)
    c->status = location_error(c, c->reader_line,
                               "indented line continues [%s] %s (multi-line values are not "
                               "supported; remove the indentation)",
                               section, name);
  else if (!section[0])
    c->status = location_error(c, c->reader_line, "key '%s' outside any [section]", name);
  else
    c->status = add_entry(c, section, name, value ? value : "", c->reader_line, NULL);
  if (c->status != TS_OK)
    c->status_line = c->reader_line;
  return c->status == TS_OK;
}

typedef struct line_reader {
  FILE *f;
  ts_config *c;
} line_reader;

/* Records a parse error at the current line unless an earlier one was met. */
static void reader_error(ts_config *c, ts_status st) {
  if (c->status == TS_OK) {
    c->status = st;
    c->status_line = c->reader_line;
  }
}

/* Checks a "[name]" header line the way inih reads it: the name is everything between '[' and
 * the first ']'. A line without ']' is left to inih, which reports a syntax error. */
static void check_section_header(ts_config *c, const char *header) {
  const char *close = strchr(header + 1, ']');
  if (!close)
    return;
  char name[64];
  snprintf(name, sizeof name, "%.*s", (int)(close - header - 1), header + 1);
  if (schema_key(name, NULL))
    return;
  char hint[96];
  suggestion(NULL, name, hint, sizeof hint);
  reader_error(c, location_error(c, c->reader_line, "unknown section [%s]%s", name, hint));
}

/* fgets that counts lines, so the handler knows the line of each key; also rejects unknown
 * section headers (inih reports no event for a section without keys) and over-long lines. */
static char *counting_reader(char *str, int num, void *stream) {
  line_reader *r = stream;
  ts_config *c = r->c;
  if (c->status != TS_OK)
    return NULL;
  char *s = fgets(str, num, r->f);
  if (!s)
    return NULL;
  c->reader_line++;
  const char *first = s;
  if (c->reader_line == 1 && strncmp(first, "\xEF\xBB\xBF", 3) == 0)
    first += 3; /* UTF-8 byte order mark */
  c->line_indented = isspace((unsigned char)*first) != 0;
  while (isspace((unsigned char)*first))
    first++;
  size_t len = strlen(s);
  if (len + 1 == (size_t)num && s[len - 1] != '\n') {
    int next = fgetc(r->f);
    if (next != EOF && next != '\n') {
      reader_error(c, location_error(c, c->reader_line, "line longer than %d characters", num - 1));
      return NULL;
    }
  }
  if (*first == '[')
    check_section_header(c, first);
  return c->status == TS_OK ? s : NULL;
}

ts_status ts_config_load(ts_config **out, const char *path) {
  *out = NULL;
  ts_config *c = calloc(1, sizeof *c);
  if (!c)
    return ts_error(TS_ERR_NOMEM, "out of memory");
  c->file = dup_string(path);
  c->dir = dup_string(path);
  if (!c->file || !c->dir) {
    ts_config_free(c);
    return ts_error(TS_ERR_NOMEM, "out of memory");
  }
  char *slash = strrchr(c->dir, '/');
  if (slash)
    slash[1] = '\0';
  else
    c->dir[0] = '\0';
  FILE *f = fopen(path, "r");
  if (!f) {
    ts_status st = ts_error(TS_ERR_INPUT, "%s: cannot open: %s", path, strerror(errno));
    ts_config_free(c);
    return st;
  }
  line_reader reader = {f, c};
  int rc = ini_parse_stream(counting_reader, &reader, config_handler, c);
  fclose(f);
  /* inih goes on after a syntax error; report whichever error comes first in the file */
  if (rc > 0 && (c->status == TS_OK || rc < c->status_line))
    c->status = location_error(c, rc, "syntax error (expected [section] or key = value)");
  if (c->status == TS_OK && rc < 0)
    c->status = ts_error(TS_ERR_INPUT, "%s: cannot read", path);
  if (c->status != TS_OK) {
    ts_status st = c->status;
    ts_config_free(c);
    return st;
  }
  *out = c;
  return TS_OK;
}

void ts_config_free(ts_config *c) {
  if (!c)
    return;
  for (int k = 0; k < c->n; k++) {
    free(c->entries[k].section);
    free(c->entries[k].key);
    free(c->entries[k].value);
  }
  free(c->entries);
  free(c->file);
  free(c->dir);
  free(c);
}

static void trim(char *s) {
  size_t n = strlen(s);
  while (n && isspace((unsigned char)s[n - 1]))
    s[--n] = '\0';
  size_t k = 0;
  while (isspace((unsigned char)s[k]))
    k++;
  memmove(s, s + k, n - k + 1);
}

ts_status ts_config_set(ts_config *c, const char *assignment) {
  char buf[1024];
  if (strlen(assignment) >= sizeof buf)
    return ts_error(TS_ERR_INPUT, "--set %.40s...: too long", assignment);
  strcpy(buf, assignment);
  char *eq = strchr(buf, '='), *dot = strchr(buf, '.');
  if (!eq || !dot || dot > eq)
    return ts_error(TS_ERR_INPUT, "--set %s: expected section.key=value", assignment);
  *eq = '\0';
  *dot = '\0';
  char *section = buf, *key = dot + 1, *value = eq + 1;
  trim(section);
  trim(key);
  trim(value);
  char origin[1100];
  snprintf(origin, sizeof origin, "--set %s", assignment);
  for (int k = 0; k < c->n; k++) {
    if (strcmp(c->entries[k].section, section) == 0 && strcmp(c->entries[k].key, key) == 0) {
      if (!*value)
        return ts_error(TS_ERR_INPUT, "%s: [%s] %s has no value", origin, section, key);
      char *v = dup_string(value);
      if (!v)
        return ts_error(TS_ERR_NOMEM, "out of memory");
      free(c->entries[k].value);
      c->entries[k].value = v;
      c->entries[k].line = 0;
      return TS_OK;
    }
  }
  return add_entry(c, section, key, value, 0, origin);
}

const char *ts_config_file(const ts_config *c) { return c->file; }

int ts_config_has(const ts_config *c, const char *section, const char *key) {
  return find(c, section, key) != NULL;
}

static ts_status entry_error(const ts_config *c, const config_entry *e, const char *msg) {
  if (e->line > 0)
    return ts_error(TS_ERR_INPUT, "%s:%d: [%s] %s: %s", c->file, e->line, e->section, e->key, msg);
  return ts_error(TS_ERR_INPUT, "--set %s.%s=%s: %s", e->section, e->key, e->value, msg);
}

ts_status ts_config_error(const ts_config *c, const char *section, const char *key, const char *fmt,
                          ...) {
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  const config_entry *e = find(c, section, key);
  if (e)
    return entry_error(c, e, msg);
  return ts_error(TS_ERR_INPUT, "%s: [%s] %s: %s", c->file, section, key, msg);
}

ts_status ts_config_string(const ts_config *c, const char *section, const char *key,
                           const char *def, const char **out) {
  const config_entry *e = find(c, section, key);
  *out = e ? e->value : def;
  return TS_OK;
}

static int parse_number(const char *s, double *v) {
  char *end;
  errno = 0;
  double x = strtod(s, &end);
  while (isspace((unsigned char)*end))
    end++;
  if (end == s || *end != '\0' || errno == ERANGE || !isfinite(x))
    return 0;
  *v = x;
  return 1;
}

ts_status ts_config_double(const ts_config *c, const char *section, const char *key, double def,
                           double *out) {
  const config_entry *e = find(c, section, key);
  *out = def;
  if (!e)
    return TS_OK;
  char msg[300];
  if (!parse_number(e->value, out)) {
    snprintf(msg, sizeof msg, "'%.200s' is not a number", e->value);
    return entry_error(c, e, msg);
  }
  return TS_OK;
}

ts_status ts_config_int(const ts_config *c, const char *section, const char *key, long def,
                        long *out) {
  double v;
  TS_CALL(ts_config_double(c, section, key, (double)def, &v));
  if (v != floor(v) || fabs(v) > 1e15)
    return ts_config_error(c, section, key, "'%g' is not a whole number", v);
  *out = (long)v;
  return TS_OK;
}

ts_status ts_config_choice(const ts_config *c, const char *section, const char *key, int def,
                           const char *const *choices, int *out) {
  const config_entry *e = find(c, section, key);
  *out = def;
  if (!e)
    return TS_OK;
  char list[256] = "";
  for (int k = 0; choices[k]; k++) {
    if (strcmp(e->value, choices[k]) == 0) {
      *out = k;
      return TS_OK;
    }
    strncat(list, k ? ", " : "", sizeof list - strlen(list) - 1);
    strncat(list, choices[k], sizeof list - strlen(list) - 1);
  }
  char msg[512];
  snprintf(msg, sizeof msg, "'%.100s' is not one of: %s", e->value, list);
  return entry_error(c, e, msg);
}

ts_status ts_config_path(const ts_config *c, const char *section, const char *key, char **out) {
  const config_entry *e = find(c, section, key);
  *out = NULL;
  if (!e)
    return TS_OK;
  const char *dir = e->line > 0 && e->value[0] != '/' ? c->dir : "";
  size_t n = strlen(dir) + strlen(e->value) + 1;
  *out = malloc(n);
  if (!*out)
    return ts_error(TS_ERR_NOMEM, "out of memory");
  snprintf(*out, n, "%s%s", dir, e->value);
  return TS_OK;
}

ts_status ts_config_double_list(const ts_config *c, const char *section, const char *key, int *n,
                                double **out) {
  const config_entry *e = find(c, section, key);
  *n = 0;
  *out = NULL;
  if (!e)
    return TS_OK;
  size_t items = 1;
  for (const char *p = e->value; *p; p++)
    items += *p == ',';
  double *v = malloc(sizeof(double) * items);
  char *copy = dup_string(e->value);
  if (!v || !copy) {
    free(v);
    free(copy);
    return ts_error(TS_ERR_NOMEM, "out of memory");
  }
  ts_status st = TS_OK;
  char *item = copy;
  for (size_t k = 0; k < items && st == TS_OK; k++) {
    char *comma = strchr(item, ',');
    if (comma)
      *comma = '\0';
    trim(item);
    char msg[300];
    if (!*item) {
      snprintf(msg, sizeof msg, "item %zu of the list is empty", k + 1);
      st = entry_error(c, e, msg);
    } else if (!parse_number(item, &v[k])) {
      snprintf(msg, sizeof msg, "'%.200s' is not a number", item);
      st = entry_error(c, e, msg);
    }
    item = comma ? comma + 1 : item;
  }
  free(copy);
  if (st != TS_OK) {
    free(v);
    return st;
  }
  *n = (int)items;
  *out = v;
  return TS_OK;
}

int ts_config_is_number(const ts_config *c, const char *section, const char *key) {
  const config_entry *e = find(c, section, key);
  double v;
  return e && parse_number(e->value, &v);
}
