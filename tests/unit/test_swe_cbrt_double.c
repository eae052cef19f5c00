/* test_swe_cbrt.c in double precision. */
#define TS_REAL_DOUBLE 1
typedef double ts_real;
#include "unit/test_swe_cbrt.c"
