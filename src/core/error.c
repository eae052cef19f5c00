/* Per-thread error message storage behind ts_error(). */
#include "tessera/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char ts_error_text[1024];

ts_status ts_error(ts_status code, const char *fmt, ...) {
  /* formatted aside first: callers may pass the current message as an argument, to prefix it */
  char text[sizeof ts_error_text];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  memcpy(ts_error_text, text, sizeof text);
  return code;
}

const char *ts_error_message(void) { return ts_error_text; }

void ts_error_clear(void) { ts_error_text[0] = '\0'; }
