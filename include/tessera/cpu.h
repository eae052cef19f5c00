/* Which build of the CPU loops a process runs. The cell loops (shallow water, lattice
 * Boltzmann) are compiled three times on x86-64: for the baseline instruction set, for x86-64-v3
 * (AVX2, 256-bit vectors) and for x86-64-v4 (AVX-512, 512-bit vectors and 32 vector registers).
 * The same arithmetic in the same order (no fused multiply-add, no reassociation), so every build
 * gives the same bits; the process takes the widest its CPU has, unless TESSERA_CPU_KERNELS
 * (auto, the default; baseline, x86-64-v3 or x86-64-v4) says otherwise. */
#ifndef TESSERA_CPU_H
#define TESSERA_CPU_H

#ifdef __cplusplus
extern "C" {
#endif

/* The x86-64 level of the build of the CPU loops this process runs: 0 (baseline), 3 or 4. An
 * unknown value of TESSERA_CPU_KERNELS, or a level the CPU or the build lacks, stops the
 * program with one line. */
int ts_cpu_kernels_level(void);
/* "x86-64-v4 (AVX-512)", "x86-64-v3 (AVX2)" or "baseline", for `tessera info` and the
 * benchmarks. */
const char *ts_cpu_kernels_name(void);

/* The name of a kernel table in the build being compiled: NAME, or NAME_v3 / NAME_v4 in the
 * x86-64-v3 / v4 builds (TS_CPU_V3 or TS_CPU_V4 defined by the build). */
#if defined(TS_CPU_V4) && TS_CPU_V4
#define TS_CPU_KERNEL_NAME(name) name##_v4
#elif defined(TS_CPU_V3) && TS_CPU_V3
#define TS_CPU_KERNEL_NAME(name) name##_v3
#else
#define TS_CPU_KERNEL_NAME(name) name
#endif
/* The table of the build this process runs (all three defined where TESSERA_CPU_DISPATCH is
 * set). */
#if defined(TESSERA_CPU_DISPATCH) && TESSERA_CPU_DISPATCH
#define TS_CPU_KERNELS(name)                                                                       \
  (ts_cpu_kernels_level() == 4 ? &name##_v4 : ts_cpu_kernels_level() == 3 ? &name##_v3 : &name)
#else
#define TS_CPU_KERNELS(name) (&name)
#endif

#ifdef __cplusplus
}
#endif

#endif
