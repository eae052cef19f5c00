/* Error reporting for the Tessera library: status codes, a per-thread message, and TS_CALL to
 * propagate failures with context. Library code never exits; the CLI prints the message. */
#ifndef TESSERA_ERROR_H
#define TESSERA_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ts_status {
  TS_OK = 0,
  TS_ERR_INPUT = 2,    /* bad case file, grid, option: the user's input is wrong */
  TS_ERR_IO = 3,       /* a file could not be read or written */
  TS_ERR_NOMEM = 4,    /* allocation failed */
  TS_ERR_NUMERIC = 5,  /* the simulation produced NaN or negative depth */
  TS_ERR_INTERNAL = 6, /* a bug or an unsupported request */
  TS_ERR_PEER = 7,     /* another rank failed and reported it; this rank stops quietly */
  TS_STOPPED = 8       /* not a failure: a signal stopped the run, which saved its state */
} ts_status;

/* Sets the calling thread's error message (printf format) and returns code. The message should
 * be one line, starting with the location when there is one: "FILE:LINE: what is wrong". */
ts_status ts_error(ts_status code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* The last message set on this thread ("" if none). */
const char *ts_error_message(void);

void ts_error_clear(void);

/* Evaluates a call returning ts_status and returns its status from the enclosing function when it
 * is not TS_OK (the message set by the callee is kept). */
#define TS_CALL(expr)                                                                              \
  do {                                                                                             \
    ts_status ts_call_status_ = (expr);                                                            \
    if (ts_call_status_ != TS_OK)                                                                  \
      return ts_call_status_;                                                                      \
  } while (0)

#ifdef __cplusplus
}
#endif
#endif
