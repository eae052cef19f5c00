/* The choice between the baseline, x86-64-v3 and x86-64-v4 builds of the CPU loops
 * (tessera/cpu.h): made once per process, from TESSERA_CPU_KERNELS and what the CPU supports. */
#include "tessera/cpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The widest x86-64 level of the loops this CPU runs: 4, 3 or 0. */
static int cpu_level(void) {
#if defined(TESSERA_CPU_DISPATCH) && TESSERA_CPU_DISPATCH &&                                       \
    (defined(__x86_64__) || defined(__i386__))
  __builtin_cpu_init();
  if (__builtin_cpu_supports("x86-64-v4"))
    return 4;
  return __builtin_cpu_supports("x86-64-v3") ? 3 : 0;
#else
  return 0;
#endif
}

static int choose(void) {
  const char *want = getenv("TESSERA_CPU_KERNELS");
  int has = cpu_level();
  if (!want || !*want || strcmp(want, "auto") == 0)
    return has;
  if (strcmp(want, "baseline") == 0)
    return 0;
  int level = strcmp(want, "x86-64-v3") == 0 ? 3 : (strcmp(want, "x86-64-v4") == 0 ? 4 : -1);
  if (level < 0) {
    fprintf(stderr,
            "tessera: TESSERA_CPU_KERNELS=%s: expected auto, baseline, x86-64-v3 or x86-64-v4\n",
            want);
    exit(1);
  }
  if (has >= level)
    return level;
  fprintf(stderr, "tessera: TESSERA_CPU_KERNELS=%s, but %s\n", want,
          !TESSERA_CPU_DISPATCH ? "this build has no x86-64-v3 or v4 loops"
          : level == 4          ? "this CPU lacks AVX-512"
                                : "this CPU lacks AVX2");
  exit(1);
}

int ts_cpu_kernels_level(void) {
  static int chosen = -1;
  int c;
#pragma omp atomic read
  c = chosen;
  if (c < 0) {
    c = choose();
#pragma omp atomic write
    chosen = c;
  }
  return c;
}

const char *ts_cpu_kernels_name(void) {
  int level = ts_cpu_kernels_level();
  return level == 4 ? "x86-64-v4 (AVX-512)" : (level == 3 ? "x86-64-v3 (AVX2)" : "baseline");
}
