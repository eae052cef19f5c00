/* Streaming JSON writer for summary.json: pretty-printed with 2-space indentation, strings
 * escaped, numbers in the shortest form that reads back as the same double, NaN/inf as null.
 * And a minimal reader that finds the strings under some top-level keys (the files an earlier
 * run's summary.json lists). */
#include "tessera/io.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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

/* ------------------------------------------------------------------ the reader */

enum { SCAN_MAX_DEPTH = 64 };

typedef struct json_scan {
  const char *p;
  const char *const *keys;
  void (*found)(void *ctx, const char *value);
  void *ctx;
  char text[4096]; /* the last string read */
} json_scan;

static void scan_space(json_scan *s) {
  while (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r')
    s->p++;
}

static int hex_digit(char c) {
  return c >= '0' && c <= '9'   ? c - '0'
         : c >= 'a' && c <= 'f' ? c - 'a' + 10
         : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                : -1;
}

/* Reads the string at s->p into s->text with its escapes decoded; *kept is 0 when it holds a
 * NUL or does not fit. Returns 0 on a syntax error. */
static int scan_string(json_scan *s, int *kept) {
  static const char escapes[] = "\"\\/bfnrt", decoded[] = "\"\\/\b\f\n\r\t";
  size_t n = 0;
  *kept = 1;
  if (*s->p != '"')
    return 0;
  for (s->p++; *s->p != '"'; s->p++) {
    unsigned char c = (unsigned char)*s->p, bytes[3];
    int len = 1;
    bytes[0] = c;
    if (c < 0x20)
      return 0; /* a control character, or the end of the text */
    if (c == '\\') {
      const char *e = s->p[1] ? strchr(escapes, s->p[1]) : NULL;
      s->p++;
      if (e) {
        bytes[0] = (unsigned char)decoded[e - escapes];
      } else if (*s->p == 'u') {
        unsigned code = 0;
        for (int i = 1; i <= 4; i++) {
          int h = hex_digit(s->p[i]);
          if (h < 0)
            return 0;
          code = code * 16 + (unsigned)h;
        }
        s->p += 4;
        *kept &= code != 0;
        len = code < 0x80 ? 1 : code < 0x800 ? 2 : 3;
        bytes[0] = (unsigned char)(len == 1   ? code
                                   : len == 2 ? 0xC0 | code >> 6
                                              : 0xE0 | code >> 12);
        bytes[1] = (unsigned char)(0x80 | ((len == 2 ? code : code >> 6) & 0x3F));
        bytes[2] = (unsigned char)(0x80 | (code & 0x3F));
      } else {
        return 0;
      }
    }
    if (n + (size_t)len < sizeof s->text)
      memcpy(s->text + n, bytes, (size_t)len);
    else
      *kept = 0;
    n += (size_t)len;
  }
  s->p++;
  s->text[n < sizeof s->text ? n : 0] = '\0';
  return 1;
}

/* Reads one value; its strings (at any depth) go to found when collect is set. A key of the
 * top-level object (depth 0) turns collecting on for its value when it is one of s->keys. */
static int scan_value(json_scan *s, int depth, int collect) {
  scan_space(s);
  char open = *s->p;
  if (open == '"') {
    int kept;
    if (!scan_string(s, &kept))
      return 0;
    if (collect && kept)
      s->found(s->ctx, s->text);
    return 1;
  }
  if (open == '{' || open == '[') {
    char close = open == '{' ? '}' : ']';
    if (depth >= SCAN_MAX_DEPTH)
      return 0;
    s->p++;
    scan_space(s);
    if (*s->p == close) {
      s->p++;
      return 1;
    }
    for (;;) {
      int inner = collect, kept;
      if (open == '{') {
        scan_space(s);
        if (!scan_string(s, &kept))
          return 0;
        for (int k = 0; depth == 0 && s->keys[k]; k++)
          inner |= kept && strcmp(s->text, s->keys[k]) == 0;
        scan_space(s);
        if (*s->p != ':')
          return 0;
        s->p++;
      }
      if (!scan_value(s, depth + 1, inner))
        return 0;
      scan_space(s);
      if (*s->p == close) {
        s->p++;
        return 1;
      }
      if (*s->p != ',')
        return 0;
      s->p++;
    }
  }
  static const char *const words[] = {"true", "false", "null"};
  for (int w = 0; w < 3; w++)
    if (strncmp(s->p, words[w], strlen(words[w])) == 0) {
      s->p += strlen(words[w]);
      return 1;
    }
  char *end;
  if (open != '-' && (open < '0' || open > '9'))
    return 0;
  strtod(s->p, &end);
  if (end == s->p)
    return 0;
  s->p = end;
  return 1;
}

long ts_json_scan(const char *text, const char *const *keys,
                  void (*found)(void *ctx, const char *value), void *ctx) {
  json_scan s = {.p = text, .keys = keys, .found = found, .ctx = ctx};
  scan_space(&s);
  int ok = *s.p == '{' && scan_value(&s, 0, 0);
  if (ok)
    scan_space(&s);
  return ok && !*s.p ? 0 : (long)(s.p - text) + 1;
}
