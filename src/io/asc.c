/* ESRI ASCII grid reader and writer. The reader streams the file (plain or gzip, through zlib)
 * token by token so lines of any length work, checks every header key and value, and reports
 * errors as "path:LINE: message". Files store the north row first; rasters store it last. The
 * writer formats blocks of rows on every thread and writes them in order, and puts the CRS into
 * the .prj sidecar. */
#include "tessera/io.h"
#include "tessera/raster.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

enum { ASC_CHUNK = 1 << 16, ASC_TOKEN_MAX = 256 };
/* Rows a thread formats at a time, and the room of one value ("%.17g" of a double: at most 24
 * characters) with its separator. */
enum { ASC_ROWS_PER_THREAD = 16, ASC_VALUE_ROOM = 32 };

static const long long ASC_MAX_CELLS = 1LL << 31;

/* Whitespace-separated token stream over a gzip or plain file, with line numbers. */
typedef struct asc_stream {
  gzFile gz;
  const char *path;
  unsigned char buf[ASC_CHUNK];
  int pos, len;
  int at_eof;
  long line; /* line of the next unread character */
  char token[ASC_TOKEN_MAX + 1];
  long token_line; /* line where the last token started */
} asc_stream;

static int asc_is_space(int c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* Makes at least one byte available; returns 1, 0 at end of file, or -1 on a read error. */
static int asc_fill(asc_stream *s) {
  if (s->pos < s->len)
    return 1;
  if (s->at_eof)
    return 0;
  int got = gzread(s->gz, s->buf, ASC_CHUNK);
  if (got < 0)
    return -1;
  if (got == 0) {
    s->at_eof = 1;
    return 0;
  }
  s->pos = 0;
  s->len = got;
  return 1;
}

static ts_status asc_read_error(asc_stream *s) {
  int zerr = Z_OK;
  const char *message = gzerror(s->gz, &zerr);
  if (zerr == Z_ERRNO)
    message = strerror(errno);
  return ts_error(TS_ERR_IO, "%s:%ld: read error: %s", s->path, s->line, message);
}

/* Reads the next token into s->token. Sets *found to 0 at end of file. */
static ts_status asc_next(asc_stream *s, int *found) {
  int status;
  *found = 0;
  for (;;) {
    status = asc_fill(s);
    if (status < 0)
      return asc_read_error(s);
    if (status == 0)
      return TS_OK;
    int c = s->buf[s->pos];
    if (!asc_is_space(c))
      break;
    if (c == '\n')
      s->line++;
    s->pos++;
  }
  s->token_line = s->line;
  int length = 0;
  while ((status = asc_fill(s)) > 0) {
    int c = s->buf[s->pos];
    if (asc_is_space(c))
      break;
    if (length == ASC_TOKEN_MAX)
      return ts_error(TS_ERR_INPUT, "%s:%ld: token longer than %d characters", s->path,
                      s->token_line, ASC_TOKEN_MAX);
    s->token[length++] = (char)c;
    s->pos++;
  }
  if (status < 0)
    return asc_read_error(s);
  s->token[length] = '\0';
  *found = 1;
  return TS_OK;
}

/* Copies at most 40 printable characters of the current token for error messages. */
static const char *asc_token_for_message(asc_stream *s, char *out, size_t size) {
  size_t n = 0;
  for (const char *p = s->token; *p && n + 1 < size && n < 40; p++)
    out[n++] = isprint((unsigned char)*p) ? *p : '?';
  out[n] = '\0';
  return out;
}

static ts_status asc_parse_double(asc_stream *s, const char *what, double *value) {
  char shown[48];
  char *end;
  errno = 0;
  *value = strtod(s->token, &end);
  if (end == s->token || *end != '\0')
    return ts_error(TS_ERR_INPUT, "%s:%ld: %s '%s' is not a number", s->path, s->token_line, what,
                    asc_token_for_message(s, shown, sizeof shown));
  if (!isfinite(*value))
    return ts_error(TS_ERR_INPUT, "%s:%ld: %s '%s' is not finite (NaN or infinite)", s->path,
                    s->token_line, what, asc_token_for_message(s, shown, sizeof shown));
  return TS_OK;
}

static ts_status asc_parse_size(asc_stream *s, const char *key, int *value) {
  char shown[48];
  char *end;
  errno = 0;
  long parsed = strtol(s->token, &end, 10);
  if (end == s->token || *end != '\0')
    return ts_error(TS_ERR_INPUT, "%s:%ld: %s '%s' is not an integer", s->path, s->token_line, key,
                    asc_token_for_message(s, shown, sizeof shown));
  if (parsed <= 0)
    return ts_error(TS_ERR_INPUT, "%s:%ld: %s must be positive, got %ld", s->path, s->token_line,
                    key, parsed);
  if (errno == ERANGE || parsed > INT_MAX)
    return ts_error(TS_ERR_INPUT, "%s:%ld: %s '%s' is too large", s->path, s->token_line, key,
                    asc_token_for_message(s, shown, sizeof shown));
  *value = (int)parsed;
  return TS_OK;
}

enum asc_key { KEY_NCOLS, KEY_NROWS, KEY_XLL, KEY_YLL, KEY_CELLSIZE, KEY_NODATA, KEY_COUNT };

typedef struct asc_header {
  int seen[KEY_COUNT];
  int ncols, nrows;
  double xll, yll, cellsize, nodata;
  int xll_is_center, yll_is_center;
} asc_header;

static const char *const asc_key_names[KEY_COUNT] = {"ncols",     "nrows",    "xllcorner",
                                                     "yllcorner", "cellsize", "NODATA_value"};

static int asc_key_equals(const char *token, const char *key) {
  for (; *token && *key; token++, key++)
    if (tolower((unsigned char)*token) != tolower((unsigned char)*key))
      return 0;
  return *token == *key;
}

/* Maps a header key to its slot; returns -1 for a token that is not a header key. */
static int asc_lookup_key(const char *token, int *is_center) {
  *is_center = 0;
  if (asc_key_equals(token, "ncols"))
    return KEY_NCOLS;
  if (asc_key_equals(token, "nrows"))
    return KEY_NROWS;
  if (asc_key_equals(token, "xllcorner"))
    return KEY_XLL;
  if (asc_key_equals(token, "yllcorner"))
    return KEY_YLL;
  if (asc_key_equals(token, "cellsize"))
    return KEY_CELLSIZE;
  if (asc_key_equals(token, "nodata_value"))
    return KEY_NODATA;
  *is_center = 1;
  if (asc_key_equals(token, "xllcenter"))
    return KEY_XLL;
  if (asc_key_equals(token, "yllcenter"))
    return KEY_YLL;
  return -1;
}

static ts_status asc_parse_key_value(asc_stream *s, asc_header *h, int key) {
  const char *name = asc_key_names[key];
  switch (key) {
  case KEY_NCOLS: return asc_parse_size(s, name, &h->ncols);
  case KEY_NROWS: return asc_parse_size(s, name, &h->nrows);
  case KEY_XLL: return asc_parse_double(s, name, &h->xll);
  case KEY_YLL: return asc_parse_double(s, name, &h->yll);
  case KEY_CELLSIZE:
    TS_CALL(asc_parse_double(s, name, &h->cellsize));
    if (h->cellsize <= 0.0)
      return ts_error(TS_ERR_INPUT, "%s:%ld: cellsize must be positive, got %g", s->path,
                      s->token_line, h->cellsize);
    return TS_OK;
  default: return asc_parse_double(s, name, &h->nodata);
  }
}

/* Reads header pairs; on return the current token (if *found) is the first data value. */
static ts_status asc_read_header(asc_stream *s, asc_header *h, int *found) {
  char shown[48];
  memset(h, 0, sizeof *h);
  h->nodata = -9999.0;
  for (;;) {
    TS_CALL(asc_next(s, found));
    int missing = -1;
    for (int k = KEY_NODATA - 1; k >= 0; k--)
      if (!h->seen[k])
        missing = k;
    int is_center = 0;
    int key = *found ? asc_lookup_key(s->token, &is_center) : -1;
    if (key < 0 && missing < 0)
      return TS_OK;
    if (key < 0 && *found && isalpha((unsigned char)s->token[0]))
      return ts_error(TS_ERR_INPUT, "%s:%ld: unknown header key '%s'", s->path, s->token_line,
                      asc_token_for_message(s, shown, sizeof shown));
    if (key < 0)
      return ts_error(TS_ERR_INPUT, "%s:%ld: missing header key '%s'", s->path, s->token_line,
                      asc_key_names[missing]);
    if (h->seen[key])
      return ts_error(TS_ERR_INPUT, "%s:%ld: duplicate header key '%s'", s->path, s->token_line,
                      asc_token_for_message(s, shown, sizeof shown));
    h->seen[key] = 1;
    if (key == KEY_XLL)
      h->xll_is_center = is_center;
    if (key == KEY_YLL)
      h->yll_is_center = is_center;
    long key_line = s->token_line;
    TS_CALL(asc_next(s, found));
    if (!*found)
      return ts_error(TS_ERR_INPUT, "%s:%ld: header key '%s' has no value", s->path, key_line,
                      asc_key_names[key]);
    TS_CALL(asc_parse_key_value(s, h, key));
  }
}

/* Reads the values (north row first) into a buffer grown as values arrive, so a header that
 * announces a huge grid costs memory only for the values that are really there. */
static ts_status asc_read_values(asc_stream *s, const asc_header *h, int found, double **values) {
  size_t count = (size_t)h->ncols * (size_t)h->nrows;
  size_t capacity = count < ASC_CHUNK ? count : ASC_CHUNK;
  size_t n = 0;
  double *v = malloc(capacity * sizeof *v);
  if (!v)
    return ts_error(TS_ERR_NOMEM, "%s: out of memory", s->path);
  long last_line = s->token_line;
  for (; found; n++) {
    if (n == count) {
      free(v);
      return ts_error(TS_ERR_INPUT, "%s:%ld: more than ncols * nrows = %zu values", s->path,
                      s->token_line, count);
    }
    if (n == capacity) {
      size_t grown = capacity * 2 < count ? capacity * 2 : count;
      double *bigger = realloc(v, grown * sizeof *v);
      if (!bigger) {
        free(v);
        return ts_error(TS_ERR_NOMEM, "%s: out of memory", s->path);
      }
      v = bigger;
      capacity = grown;
    }
    ts_status status = asc_parse_double(s, "value", &v[n]);
    if (status == TS_OK) {
      last_line = s->token_line;
      status = asc_next(s, &found);
    }
    if (status != TS_OK) {
      free(v);
      return status;
    }
  }
  if (n < count) {
    free(v);
    return ts_error(TS_ERR_INPUT, "%s:%ld: expected ncols * nrows = %zu values, found %zu", s->path,
                    last_line, count, n);
  }
  *values = v;
  return TS_OK;
}

/* Turns north-first row order into south-first order in place. */
static void asc_flip_rows(double *v, int ncols, int nrows) {
  for (int top = 0, bottom = nrows - 1; top < bottom; top++, bottom--) {
    double *a = v + (size_t)top * ncols, *b = v + (size_t)bottom * ncols;
    for (int i = 0; i < ncols; i++) {
      double t = a[i];
      a[i] = b[i];
      b[i] = t;
    }
  }
}

int ts_asc_detect(const char *path) {
  gzFile gz = gzopen(path, "rb");
  if (!gz)
    return 0;
  char text[ASC_TOKEN_MAX + 1];
  int n = gzread(gz, text, ASC_TOKEN_MAX);
  gzclose(gz);
  if (n <= 0)
    return 0;
  text[n] = '\0';
  char *token = text;
  while (*token && asc_is_space((unsigned char)*token))
    token++;
  char *end = token;
  while (*end && !asc_is_space((unsigned char)*end))
    end++;
  *end = '\0';
  int is_center;
  return asc_lookup_key(token, &is_center) >= 0;
}

ts_status ts_prj_path(const char *path, char *out, size_t size) {
  const char *name = strrchr(path, '/');
  name = name ? name + 1 : path;
  size_t stem = strlen(path);
  if (stem >= 3 && path + stem - 3 >= name && asc_key_equals(path + stem - 3, ".gz"))
    stem -= 3;
  for (size_t k = stem; k > (size_t)(name - path); k--)
    if (path[k - 1] == '.') {
      stem = k - 1;
      break;
    }
  if (stem + sizeof ".prj" > size)
    return ts_error(TS_ERR_IO, "%s: path too long", path);
  memcpy(out, path, stem);
  memcpy(out + stem, ".prj", sizeof ".prj");
  return TS_OK;
}

ts_status ts_asc_read(const char *path, ts_raster *out) {
  out->v = NULL;
  out->crs = NULL;
  errno = 0;
  gzFile gz = gzopen(path, "rb");
  if (!gz)
    return ts_error(TS_ERR_IO, "%s: cannot open: %s", path,
                    errno ? strerror(errno) : "out of memory");
  asc_stream *s = calloc(1, sizeof *s);
  if (!s) {
    gzclose(gz);
    return ts_error(TS_ERR_NOMEM, "%s: out of memory", path);
  }
  gzbuffer(gz, ASC_CHUNK * 2);
  s->gz = gz;
  s->path = path;
  s->line = 1;
  s->token_line = 1;
  asc_header h;
  int found = 0;
  double *values = NULL;
  ts_status status = asc_read_header(s, &h, &found);
  if (status == TS_OK && (long long)h.ncols * h.nrows > ASC_MAX_CELLS)
    status = ts_error(TS_ERR_INPUT, "%s:%ld: grid of %d x %d cells is larger than 2^31 cells", path,
                      s->token_line, h.ncols, h.nrows);
  if (status == TS_OK)
    status = asc_read_values(s, &h, found, &values);
  gzclose(gz);
  free(s);
  if (status != TS_OK)
    return status;
  asc_flip_rows(values, h.ncols, h.nrows);
  out->ncols = h.ncols;
  out->nrows = h.nrows;
  out->cellsize = h.cellsize;
  out->xll = h.xll_is_center ? h.xll - 0.5 * h.cellsize : h.xll;
  out->yll = h.yll_is_center ? h.yll - 0.5 * h.cellsize : h.yll;
  out->nodata = h.nodata;
  out->v = values;
  return TS_OK;
}

/* Shortest %g form (15 to 17 digits) that reads back as the same double. */
static void asc_format_exact(char *out, size_t size, double value) {
  for (int digits = 15; digits <= 17; digits++) {
    snprintf(out, size, "%.*g", digits, value);
    if (strtod(out, NULL) == value)
      return;
  }
}

/* Writes the .prj sidecar of the grid at path: the CRS as ESRI WKT. */
static ts_status asc_write_prj(const char *path, const char *crs) {
  char prj[4096], tmp_path[4200];
  TS_CALL(ts_prj_path(path, prj, sizeof prj));
  char *esri = NULL;
  TS_CALL(ts_crs_to_esri(crs, &esri));
  FILE *f = ts_open_temp(prj, tmp_path, sizeof tmp_path);
  if (!f) {
    free(esri);
    return TS_ERR_IO;
  }
  fprintf(f, "%s\n", esri);
  free(esri);
  return ts_commit_temp(f, tmp_path, prj);
}

int ts_format_g(char *out, int digits, double value) {
  if (value != 0)
    return snprintf(out, 25, "%.*g", digits, value);
  int n = 0;
  if (signbit(value))
    out[n++] = '-';
  out[n++] = '0';
  out[n] = 0;
  return n;
}

/* One row of values as the file's line (values separated by one space, NODATA as its text, the
 * newline); returns its length. `out` has room for ASC_VALUE_ROOM characters per value. NODATA
 * (most cells of a flood map lie outside the terrain) is copied. */
static size_t asc_format_row(char *out, const ts_raster *r, const double *row, int digits,
                             const char *nodata_text, size_t nodata_length) {
  char *p = out;
  for (int i = 0; i < r->ncols; i++) {
    if (i > 0)
      *p++ = ' ';
    if (ts_raster_is_nodata(r, row[i])) {
      memcpy(p, nodata_text, nodata_length);
      p += nodata_length;
    } else {
      p += ts_format_g(p, digits, row[i]);
    }
  }
  *p++ = '\n';
  return (size_t)(p - out);
}

ts_status ts_asc_write(const char *path, const ts_raster *r, int digits) {
  char tmp_path[4096];
  char nodata_text[40], number[40];
  if (digits < 1 || digits > 17)
    return ts_error(TS_ERR_INTERNAL, "%s: digits %d outside 1..17", path, digits);
  int block = ASC_ROWS_PER_THREAD * omp_get_max_threads();
  size_t row_room = (size_t)r->ncols * ASC_VALUE_ROOM + 1;
  char *text = malloc(row_room * (size_t)block);
  size_t *length = malloc(sizeof *length * (size_t)block);
  FILE *f = text && length ? ts_open_temp(path, tmp_path, sizeof tmp_path) : NULL;
  if (!f) {
    free(text);
    free(length);
    return text && length ? TS_ERR_IO : ts_error(TS_ERR_NOMEM, "%s: out of memory", path);
  }
  fprintf(f, "ncols        %d\nnrows        %d\n", r->ncols, r->nrows);
  asc_format_exact(number, sizeof number, r->xll);
  fprintf(f, "xllcorner    %s\n", number);
  asc_format_exact(number, sizeof number, r->yll);
  fprintf(f, "yllcorner    %s\n", number);
  asc_format_exact(number, sizeof number, r->cellsize);
  fprintf(f, "cellsize     %s\n", number);
  asc_format_exact(nodata_text, sizeof nodata_text, r->nodata);
  fprintf(f, "NODATA_value %s\n", nodata_text);
  size_t nodata_length = strlen(nodata_text);
  for (int top = r->nrows - 1; top >= 0; top -= block) { /* north row first */
    int n = top + 1 < block ? top + 1 : block;
#pragma omp parallel for schedule(static)
    for (int k = 0; k < n; k++)
      length[k] =
          asc_format_row(text + (size_t)k * row_room, r, r->v + (size_t)(top - k) * r->ncols,
                         digits, nodata_text, nodata_length);
    for (int k = 0; k < n; k++)
      fwrite(text + (size_t)k * row_room, 1, length[k], f);
  }
  free(text);
  free(length);
  ts_status status = r->crs ? asc_write_prj(path, r->crs) : TS_OK;
  if (status != TS_OK) {
    fclose(f);
    remove(tmp_path);
    return status;
  }
  status = ts_commit_temp(f, tmp_path, path);
  char prj[4096];
  if (status != TS_OK && r->crs && ts_prj_path(path, prj, sizeof prj) == TS_OK)
    remove(prj); /* no sidecar without its grid */
  return status;
}
