/* swe_cbrt (src/physics/swe/swe_cell.h), the cube root that the CPU loops and the CUDA kernels
 * share so that both compute the same bits, against the C library's long double cbrtl: within
 * 4 ulp of the working precision for every 61st float from the smallest normal number to the
 * largest (float), or 2 million random doubles over the same exponent range (double, from
 * test_swe_cbrt_double.c); 0 for zero, negative and subnormal arguments and NaN; infinity kept. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#ifndef TS_REAL_DOUBLE
#define TS_REAL_DOUBLE 0
typedef float ts_real;
#endif
#define SWE_SQRT sqrt
#include "physics/swe/swe_cell.h"
#include "unit/check.h"

/* The distance of x from the exact root in units in the last place of the working precision. */
static double ulps(ts_real x, ts_real got) {
  long double exact = cbrtl((long double)x);
  ts_real near = (ts_real)exact;
  ts_real ulp = (TS_REAL_DOUBLE ? nextafter(near, INFINITY) : nextafterf(near, INFINITY)) - near;
  return (double)(fabsl((long double)got - exact) / (long double)ulp);
}

int main(void) {
  double worst = 0;
  long tried = 0;
#if TS_REAL_DOUBLE
  srand(7);
  for (long k = 0; k < 2000000; k++, tried++) {
    double m = 1 + rand() / (RAND_MAX + 1.0);
    int e = -1022 + rand() % 2046;
    double x = ldexp(m, e), u = ulps(x, swe_cbrt(x));
    worst = u > worst ? u : worst;
  }
  const char *name = "double";
#else
  for (uint32_t bits = 0x00800000u; bits < 0x7f800000u; bits += 61, tried++) {
    float x;
    memcpy(&x, &bits, sizeof x);
    double u = ulps(x, swe_cbrt(x));
    worst = u > worst ? u : worst;
  }
  const char *name = "float";
#endif
  CHECK(worst <= 4, "%s: %ld arguments, largest error %.2f ulp (<= 4)", name, tried, worst);
  ts_real max = TS_REAL_DOUBLE ? (ts_real)DBL_MAX : (ts_real)FLT_MAX;
  ts_real tiny = TS_REAL_DOUBLE ? (ts_real)DBL_MIN : (ts_real)FLT_MIN;
  CHECK(swe_cbrt(0) == 0 && swe_cbrt(-8) == 0 && swe_cbrt(tiny / 4) == 0 && swe_cbrt(NAN) == 0,
        "%s: 0 for zero, negative, subnormal and NaN arguments", name);
  CHECK(swe_cbrt(INFINITY) == INFINITY && isfinite(swe_cbrt(max)),
        "%s: infinity kept, the largest finite number's root finite", name);
  CHECK(swe_cbrt(8) == 2 && swe_cbrt(27) == 3 && swe_cbrt(1) == 1, "%s: exact cubes (1, 8, 27)",
        name);
  return failures != 0;
}
