/* IEEE binary16 conversions written in integer and float arithmetic, for CPU loops that store
 * half-precision values as uint16_t: compilers vectorise these, which they do not do for
 * _Float16 conversions on x86 without AVX-512 FP16. Both give the bits of the hardware
 * conversions (x86 F16C, CUDA __half2float and __float2half_rn: round to nearest, ties to even)
 * for every value; a NaN keeps the top of its payload and becomes quiet, as F16C does.
 * unit.half compares them with the compiler's _Float16 conversions. */
#ifndef TESSERA_CORE_HALF_H
#define TESSERA_CORE_HALF_H

#include <stdint.h>
#include <string.h>

static inline float ts_float_of_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static inline uint32_t ts_bits_of_float(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static inline float ts_half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = h & 0x7c00u, man = h & 0x3ffu;
  /* normal: the exponent rebased from 15 to 127; subnormal: man x 2^-24, exact in float */
  uint32_t normal = ((uint32_t)(h & 0x7fffu) << 13) + ((uint32_t)(127 - 15) << 23);
  uint32_t sub = ts_bits_of_float((float)man * 0x1p-24f);
  uint32_t special = 0x7f800000u | man << 13 | (man ? 0x400000u : 0u); /* inf, quiet NaN */
  uint32_t u = exp == 0 ? sub : (exp == 0x7c00u ? special : normal);
  return ts_float_of_bits(u | sign);
}

/* All three cases are formed and one is selected, so that loops stay free of branches. */
static inline uint16_t ts_float_to_half(float f) {
  uint32_t x = ts_bits_of_float(f), sign = (x >> 16) & 0x8000u;
  x &= 0x7fffffffu;
  /* 65536 and above: inf; NaN stays NaN (quiet, the top of its payload kept) */
  uint32_t big = x > 0x7f800000u ? 0x7e00u | ((x >> 13) & 0x3ffu) : 0x7c00u;
  /* below 2^-14: subnormal or zero, rounded by adding 0.5 (which places the half's last
   * mantissa bit at the float's last one) */
  uint32_t small = ts_bits_of_float(ts_float_of_bits(x) + 0.5f) - 0x3f000000u;
  /* normal: the exponent rebased from 127 to 15, rounded to nearest even (a carry may give inf) */
  uint32_t normal = (x - ((uint32_t)(127 - 15) << 23) + 0xfffu + ((x >> 13) & 1u)) >> 13;
  uint32_t o = x >= 0x47800000u ? big : (x < 0x38800000u ? small : normal);
  return (uint16_t)(o | sign);
}

#endif
