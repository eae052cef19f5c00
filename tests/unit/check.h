/* The CHECK macro of the unit tests: prints "ok" or "FAIL" with a message and counts failures;
 * a test ends with `return failures != 0;`. */
#ifndef TESSERA_TESTS_CHECK_H
#define TESSERA_TESTS_CHECK_H

#include <stdio.h>

static int failures = 0;

#define CHECK(cond, ...)                                                                           \
  do {                                                                                             \
    int check_ok_ = (cond);                                                                        \
    printf(check_ok_ ? "ok   " : "FAIL ");                                                         \
    printf(__VA_ARGS__);                                                                           \
    printf("\n");                                                                                  \
    failures += !check_ok_;                                                                        \
  } while (0)

#endif
