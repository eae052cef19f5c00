/* CSV inputs: gauge positions ("id,x,y") located on the grid, and two-column time series such as
 * inflow hydrographs. Every error names the file and the 1-based line. */
#include "tessera/io.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { CSV_MAX_FIELDS = 8 };

/* A line reader that accepts lines of any length. */
typedef struct csv_file {
  FILE *f;
  const char *path;
  char *line;
  size_t capacity;
  long number; /* 1-based number of the line in `line` */
} csv_file;

/* Reads the next line without its end-of-line characters. Returns 1, 0 at end, or an error
 * status through *status. */
static int csv_next_line(csv_file *c, ts_status *status) {
  size_t length = 0;
  *status = TS_OK;
  for (;;) {
    if (c->capacity - length < 2) {
      size_t grown = c->capacity ? c->capacity * 2 : 256;
      char *bigger = realloc(c->line, grown);
      if (!bigger) {
        *status = ts_error(TS_ERR_NOMEM, "%s: out of memory", c->path);
        return 0;
      }
      c->line = bigger;
      c->capacity = grown;
    }
    if (!fgets(c->line + length, (int)(c->capacity - length), c->f))
      break;
    length += strlen(c->line + length);
    if (length > 0 && c->line[length - 1] == '\n')
      break;
  }
  if (ferror(c->f)) {
    *status =
        ts_error(TS_ERR_IO, "%s:%ld: read error: %s", c->path, c->number + 1, strerror(errno));
    return 0;
  }
  if (length == 0 && feof(c->f))
    return 0;
  while (length > 0 && (c->line[length - 1] == '\n' || c->line[length - 1] == '\r'))
    c->line[--length] = '\0';
  c->number++;
  if (c->number == 1 && !strncmp(c->line, "\xEF\xBB\xBF", 3)) /* UTF-8 byte order mark */
    memmove(c->line, c->line + 3, length - 2);
  return 1;
}

static char *csv_trim(char *s) {
  while (isspace((unsigned char)*s))
    s++;
  size_t n = strlen(s);
  while (n > 0 && isspace((unsigned char)s[n - 1]))
    s[--n] = '\0';
  return s;
}

static int csv_is_blank(const char *s) {
  for (; *s; s++)
    if (!isspace((unsigned char)*s))
      return 0;
  return 1;
}

/* Splits a line in place at commas into trimmed fields; returns the field count (which may
 * exceed `max`, in which case only the first `max` are stored). */
static int csv_split(char *line, char **fields, int max) {
  int n = 0;
  for (char *start = line;; n++) {
    char *comma = strchr(start, ',');
    if (comma)
      *comma = '\0';
    if (n < max)
      fields[n] = csv_trim(start);
    if (!comma)
      return n + 1;
    start = comma + 1;
  }
}

static int csv_parse_number(const char *field, double *value) {
  char *end;
  *value = strtod(field, &end);
  return end != field && *end == '\0' && isfinite(*value);
}

static ts_status csv_open(csv_file *c, const char *path) {
  memset(c, 0, sizeof *c);
  c->path = path;
  c->f = fopen(path, "r");
  if (!c->f)
    return ts_error(TS_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  return TS_OK;
}

static void csv_close(csv_file *c) {
  fclose(c->f);
  free(c->line);
}

/* Reads the next non-blank line; *found is 0 at end of file. */
static ts_status csv_next_content_line(csv_file *c, int *found) {
  ts_status status;
  while ((*found = csv_next_line(c, &status)))
    if (!csv_is_blank(c->line))
      return TS_OK;
  return status;
}

static int csv_names_equal(const char *a, const char *b) {
  for (; *a && *b; a++, b++)
    if (tolower((unsigned char)*a) != tolower((unsigned char)*b))
      return 0;
  return *a == *b;
}

static ts_status gauges_append(ts_gauges *g, int *capacity, const char *id, double x, double y,
                               int i, int j) {
  if (g->n == *capacity) {
    int grown = *capacity ? *capacity * 2 : 16;
    char **ids = realloc(g->id, (size_t)grown * sizeof *ids);
    if (ids)
      g->id = ids;
    double *xs = realloc(g->x, (size_t)grown * sizeof *xs);
    if (xs)
      g->x = xs;
    double *ys = realloc(g->y, (size_t)grown * sizeof *ys);
    if (ys)
      g->y = ys;
    int *is = realloc(g->i, (size_t)grown * sizeof *is);
    if (is)
      g->i = is;
    int *js = realloc(g->j, (size_t)grown * sizeof *js);
    if (js)
      g->j = js;
    if (!ids || !xs || !ys || !is || !js)
      return ts_error(TS_ERR_NOMEM, "out of memory reading gauges");
    *capacity = grown;
  }
  size_t length = strlen(id);
  char *copy = malloc(length + 1);
  if (!copy)
    return ts_error(TS_ERR_NOMEM, "out of memory reading gauges");
  memcpy(copy, id, length + 1);
  g->id[g->n] = copy;
  g->x[g->n] = x;
  g->y[g->n] = y;
  g->i[g->n] = i;
  g->j[g->n] = j;
  g->n++;
  return TS_OK;
}

static ts_status gauges_parse_row(csv_file *c, const ts_raster *geom, ts_gauges *g, int *capacity) {
  char *fields[3];
  int count = csv_split(c->line, fields, 3);
  if (count != 3)
    return ts_error(TS_ERR_INPUT, "%s:%ld: expected 3 columns (id,x,y), found %d", c->path,
                    c->number, count);
  const char *id = fields[0];
  double x, y;
  if (id[0] == '\0')
    return ts_error(TS_ERR_INPUT, "%s:%ld: empty gauge id", c->path, c->number);
  if (!csv_parse_number(fields[1], &x))
    return ts_error(TS_ERR_INPUT, "%s:%ld: gauge '%s': x '%s' is not a finite number", c->path,
                    c->number, id, fields[1]);
  if (!csv_parse_number(fields[2], &y))
    return ts_error(TS_ERR_INPUT, "%s:%ld: gauge '%s': y '%s' is not a finite number", c->path,
                    c->number, id, fields[2]);
  for (int k = 0; k < g->n; k++)
    if (!strcmp(g->id[k], id))
      return ts_error(TS_ERR_INPUT, "%s:%ld: duplicate gauge id '%s'", c->path, c->number, id);
  double x_max = geom->xll + geom->ncols * geom->cellsize;
  double y_max = geom->yll + geom->nrows * geom->cellsize;
  if (!(x >= geom->xll && x < x_max && y >= geom->yll && y < y_max))
    return ts_error(TS_ERR_INPUT,
                    "%s:%ld: gauge '%s' at (%g, %g) is outside the grid (x %g .. %g, y %g .. %g)",
                    c->path, c->number, id, x, y, geom->xll, x_max, geom->yll, y_max);
  int i = (int)floor((x - geom->xll) / geom->cellsize);
  int j = (int)floor((y - geom->yll) / geom->cellsize);
  i = i < geom->ncols ? i : geom->ncols - 1; /* guards against rounding at the far edge */
  j = j < geom->nrows ? j : geom->nrows - 1;
  return gauges_append(g, capacity, id, x, y, i, j);
}

ts_status ts_gauges_read(const char *path, const ts_raster *geom, ts_gauges *out) {
  csv_file c;
  int found = 0, capacity = 0;
  memset(out, 0, sizeof *out);
  TS_CALL(csv_open(&c, path));
  ts_status status = csv_next_content_line(&c, &found);
  if (status == TS_OK && !found)
    status = ts_error(TS_ERR_INPUT, "%s:1: empty file, expected header 'id,x,y'", path);
  if (status == TS_OK) {
    char *fields[3];
    if (csv_split(c.line, fields, 3) != 3 || !csv_names_equal(fields[0], "id") ||
        !csv_names_equal(fields[1], "x") || !csv_names_equal(fields[2], "y"))
      status = ts_error(TS_ERR_INPUT, "%s:%ld: expected header 'id,x,y'", path, c.number);
  }
  long header_line = c.number;
  while (status == TS_OK && (status = csv_next_content_line(&c, &found)) == TS_OK && found)
    status = gauges_parse_row(&c, geom, out, &capacity);
  if (status == TS_OK && out->n == 0)
    status = ts_error(TS_ERR_INPUT, "%s:%ld: no gauges after the header", path, header_line);
  csv_close(&c);
  if (status != TS_OK)
    ts_gauges_free(out);
  return status;
}

void ts_gauges_free(ts_gauges *g) {
  if (!g)
    return;
  for (int k = 0; k < g->n; k++)
    free(g->id[k]);
  free(g->id);
  free(g->x);
  free(g->y);
  free(g->i);
  free(g->j);
  memset(g, 0, sizeof *g);
}

static ts_status series_parse_row(csv_file *c, int is_first, double min_value, int *n,
                                  int *capacity, double **t, double **v) {
  char *fields[2];
  double time, value;
  int count = csv_split(c->line, fields, 2);
  if (is_first && !csv_parse_number(fields[0], &time))
    return TS_OK; /* optional header line such as "t,q" */
  if (count != 2)
    return ts_error(TS_ERR_INPUT, "%s:%ld: expected 2 columns, found %d", c->path, c->number,
                    count);
  if (!csv_parse_number(fields[0], &time))
    return ts_error(TS_ERR_INPUT, "%s:%ld: time '%s' is not a finite number", c->path, c->number,
                    fields[0]);
  if (!csv_parse_number(fields[1], &value))
    return ts_error(TS_ERR_INPUT, "%s:%ld: value '%s' is not a finite number", c->path, c->number,
                    fields[1]);
  if (value < min_value)
    return ts_error(TS_ERR_INPUT, "%s:%ld: value %g is below the smallest allowed, %g", c->path,
                    c->number, value, min_value);
  if (*n > 0 && !(time > (*t)[*n - 1]))
    return ts_error(TS_ERR_INPUT, "%s:%ld: time %g is not greater than the previous time %g",
                    c->path, c->number, time, (*t)[*n - 1]);
  if (*n == *capacity) {
    int grown = *capacity ? *capacity * 2 : 64;
    double *ts = realloc(*t, (size_t)grown * sizeof *ts);
    if (ts)
      *t = ts;
    double *vs = realloc(*v, (size_t)grown * sizeof *vs);
    if (vs)
      *v = vs;
    if (!ts || !vs)
      return ts_error(TS_ERR_NOMEM, "%s: out of memory", c->path);
    *capacity = grown;
  }
  (*t)[*n] = time;
  (*v)[*n] = value;
  (*n)++;
  return TS_OK;
}

ts_status ts_series_read(const char *path, double min_value, int *n, double **t, double **v) {
  csv_file c;
  int found = 0, capacity = 0, is_first = 1;
  *n = 0;
  *t = NULL;
  *v = NULL;
  TS_CALL(csv_open(&c, path));
  ts_status status;
  while ((status = csv_next_content_line(&c, &found)) == TS_OK && found) {
    status = series_parse_row(&c, is_first, min_value, n, &capacity, t, v);
    is_first = 0;
    if (status != TS_OK)
      break;
  }
  if (status == TS_OK && *n == 0)
    status = ts_error(TS_ERR_INPUT, "%s:%ld: no data rows", path, c.number > 0 ? c.number : 1);
  csv_close(&c);
  if (status != TS_OK) {
    free(*t);
    free(*v);
    *t = NULL;
    *v = NULL;
    *n = 0;
  }
  return status;
}
