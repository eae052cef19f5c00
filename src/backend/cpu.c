/* The choice between the baseline and the x86-64-v3 build of the CPU loops (tessera/cpu.h):
 * made once per process, from TESSERA_CPU_KERNELS and what the CPU supports. */
#include "tessera/cpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cpu_has_v3(void) {
#if defined(TESSERA_CPU_DISPATCH) && TESSERA_CPU_DISPATCH &&                                       \
    (defined(__x86_64__) || defined(__i386__))
  __builtin_cpu_init();
  return __builtin_cpu_supports("x86-64-v3") != 0;
#else
  return 0;
#endif
}

static int choose(void) {
  const char *want = getenv("TESSERA_CPU_KERNELS");
  int has = cpu_has_v3();
  if (!want || !*want || strcmp(want, "auto") == 0)
    return has;
  if (strcmp(want, "baseline") == 0)
    return 0;
  if (strcmp(want, "x86-64-v3") == 0) {
    if (has)
      return 1;
    fprintf(stderr, "tessera: TESSERA_CPU_KERNELS=x86-64-v3, but %s\n",
            TESSERA_CPU_DISPATCH ? "this CPU lacks AVX2" : "this build has no x86-64-v3 loops");
    exit(1);
  }
  fprintf(stderr, "tessera: TESSERA_CPU_KERNELS=%s: expected auto, baseline or x86-64-v3\n", want);
  exit(1);
}

int ts_cpu_kernels_v3(void) {
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
  return ts_cpu_kernels_v3() ? "x86-64-v3 (AVX2)" : "baseline";
}
