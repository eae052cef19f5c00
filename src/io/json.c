/* Streaming JSON writer for summary.json: pretty-printed with 2-space indentation, strings
 * escaped, numbers in the shortest form that reads back as the same double, NaN/inf as null. */
#include "tessera/io.h"

#include <math.h>
#include <stdlib.h>

enum { JSON_MAX_DEPTH = (int)(sizeof(((ts_json *)0)->first) / sizeof(int)) - 1 };

static void json_newline_indent(ts_json *j, int depth) {
  fputc('\n', j->f);
  for (int k = 0; k < depth; k++)
    fputs("  ", j->f);
}

/* Writes what goes before a key or a value: nothing after a key, else a comma if needed and
 * a new indented line. */
static void json_prefix(ts_json *j) {
  if (j->after_key) {
    j->after_key = 0;
    return;
  }
  if (!j->first[j->depth])
    fputc(',', j->f);
  j->first[j->depth] = 0;
  json_newline_indent(j, j->depth);
}

static void json_open(ts_json *j, char bracket) {
  json_prefix(j);
  fputc(bracket, j->f);
  if (j->depth < JSON_MAX_DEPTH)
    j->depth++;
  j->first[j->depth] = 1;
}

static void json_close(ts_json *j, char bracket) {
  int was_empty = j->first[j->depth];
  if (j->depth > 0)
    j->depth--;
  if (!was_empty)
    json_newline_indent(j, j->depth);
  fputc(bracket, j->f);
}

static void json_write_string(FILE *f, const char *s) {
  fputc('"', f);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\')
      fprintf(f, "\\%c", *p);
    else if (*p < 0x20)
      fprintf(f, "\\u%04x", *p);
    else
      fputc(*p, f);
  }
  fputc('"', f);
}

void ts_json_begin(ts_json *j, FILE *f) {
  j->f = f;
  j->depth = 0;
  j->after_key = 0;
  fputc('{', f);
  j->depth = 1;
  j->first[1] = 1;
}

void ts_json_key(ts_json *j, const char *key) {
  json_prefix(j);
  json_write_string(j->f, key);
  fputs(": ", j->f);
  j->after_key = 1;
}

void ts_json_string(ts_json *j, const char *s) {
  json_prefix(j);
  if (s)
    json_write_string(j->f, s);
  else
    fputs("null", j->f);
}

void ts_json_number(ts_json *j, double v) {
  json_prefix(j);
  if (!isfinite(v)) {
    fputs("null", j->f);
    return;
  }
  char text[40];
  for (int digits = 15; digits <= 17; digits++) {
    snprintf(text, sizeof text, "%.*g", digits, v);
    if (strtod(text, NULL) == v)
      break;
  }
  fputs(text, j->f);
}

void ts_json_int(ts_json *j, long long v) {
  json_prefix(j);
  fprintf(j->f, "%lld", v);
}

void ts_json_bool(ts_json *j, int v) {
  json_prefix(j);
  fputs(v ? "true" : "false", j->f);
}

void ts_json_null(ts_json *j) {
  json_prefix(j);
  fputs("null", j->f);
}

void ts_json_object_begin(ts_json *j) { json_open(j, '{'); }

void ts_json_object_end(ts_json *j) { json_close(j, '}'); }

void ts_json_array_begin(ts_json *j) { json_open(j, '['); }

void ts_json_array_end(ts_json *j) { json_close(j, ']'); }

void ts_json_end(ts_json *j) {
  json_close(j, '}');
  fputc('\n', j->f);
}
