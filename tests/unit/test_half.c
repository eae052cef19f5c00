/* The integer-arithmetic half-precision conversions (src/core/half.h) against the compiler's
 * _Float16 conversions (F16C instructions or libgcc, both round to nearest even): every one of the
 * 65536 halves to float, and to half every positive float from 2^-26 to 2^17 (the whole range
 * where the rounding, the subnormals and the overflow to infinity happen), every 61st float
 * pattern of either sign, and the specials. A NaN must stay a NaN (payloads are not compared). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "core/half.h"
#include "unit/check.h"

static uint16_t bits_of_half(_Float16 h) {
  uint16_t u;
  memcpy(&u, &h, sizeof u);
  return u;
}

static _Float16 half_of_bits(uint16_t u) {
  _Float16 h;
  memcpy(&h, &u, sizeof h);
  return h;
}

/* Floats x with bit patterns lo, lo + step, ... below hi (and their negatives if signs is 2)
 * whose conversion differs. */
static long to_half_errors(uint32_t lo, uint32_t hi, uint32_t step, int signs, uint32_t *first) {
  long bad = 0;
  for (uint64_t u = lo; u < hi; u += step) {
    for (int s = 0; s < signs; s++) {
      float x = ts_float_of_bits((uint32_t)u | (s ? 0x80000000u : 0u));
      uint16_t mine = ts_float_to_half(x), ref = bits_of_half((_Float16)x);
      int ok = isnan(x) ? (mine & 0x7c00u) == 0x7c00u && (mine & 0x3ffu) != 0 : mine == ref;
      if (!ok && bad++ == 0)
        *first = ts_bits_of_float(x);
    }
  }
  return bad;
}

int main(void) {
  long bad = 0;
  int first = 0;
  for (uint32_t h = 0; h < 65536; h++) {
    float mine = ts_half_to_float((uint16_t)h), ref = (float)half_of_bits((uint16_t)h);
    int ok = isnan(ref) ? isnan(mine) : ts_bits_of_float(mine) == ts_bits_of_float(ref);
    if (!ok && bad++ == 0)
      first = (int)h;
  }
  CHECK(bad == 0, "half to float, all 65536 halves: %ld differ (first 0x%04x)", bad, first);

  uint32_t where = 0;
  long dense = to_half_errors(0x32800000u, 0x48000000u, 1, 1, &where);
  CHECK(dense == 0, "float to half, every float of magnitude 2^-26 to 2^17: %ld differ (first %a)",
        dense, (double)ts_float_of_bits(where));
  long sparse = to_half_errors(0, 0x80000000u, 61, 2, &where);
  CHECK(sparse == 0, "float to half, every 61st float pattern: %ld differ (first %a)", sparse,
        (double)ts_float_of_bits(where));
  float specials[] = {
      0.0f,     -0.0f,    INFINITY, -INFINITY,       NAN,      65504.0f,     65519.99f,
      65520.0f, 0x1p-24f, 0x1p-25f, 0x1.000002p-25f, 0x1p-14f, 0x1.ffcp-15f, 1e-40f};
  long special = 0;
  for (size_t k = 0; k < sizeof specials / sizeof specials[0]; k++) {
    float x = specials[k];
    uint16_t mine = ts_float_to_half(x), ref = bits_of_half((_Float16)x);
    special += isnan(x) ? !isnan(ts_half_to_float(mine)) : mine != ref;
  }
  CHECK(special == 0,
        "float to half, zeros, infinities, NaN, the largest half, the rounding to "
        "infinity and the subnormal edges: %ld differ",
        special);
  return failures != 0;
}
