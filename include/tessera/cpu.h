/* Which build of the CPU loops a process runs. The cell loops (shallow water, lattice
 * Boltzmann) are compiled twice on x86-64: for the baseline instruction set and for x86-64-v3
 * (AVX2), whose 256-bit vectors the loops' SIMD form uses. The same arithmetic in the same
 * order (no fused multiply-add, no reassociation), so both builds give the same bits; the
 * process takes x86-64-v3 where its CPU has it, unless TESSERA_CPU_KERNELS=baseline says
 * otherwise (x86-64-v3 forces it; auto, the default, chooses). */
#ifndef TESSERA_CPU_H
#define TESSERA_CPU_H

#ifdef __cplusplus
extern "C" {
#endif

/* 1 when this process runs the x86-64-v3 build of the CPU loops. An unknown value of
 * TESSERA_CPU_KERNELS, or x86-64-v3 on a CPU without it, stops the program with one line. */
int ts_cpu_kernels_v3(void);
/* "x86-64-v3 (AVX2)" or "baseline", for `tessera info` and the benchmarks. */
const char *ts_cpu_kernels_name(void);

/* The name of a kernel table in the build being compiled: NAME, or NAME_v3 in the x86-64-v3
 * build (TS_CPU_V3 defined by the build). */
#if defined(TS_CPU_V3) && TS_CPU_V3
#define TS_CPU_KERNEL_NAME(name) name##_v3
#else
#define TS_CPU_KERNEL_NAME(name) name
#endif
/* The table of the build this process runs (both defined where TESSERA_CPU_DISPATCH is set). */
#if defined(TESSERA_CPU_DISPATCH) && TESSERA_CPU_DISPATCH
#define TS_CPU_KERNELS(name) (ts_cpu_kernels_v3() ? &name##_v3 : &name)
#else
#define TS_CPU_KERNELS(name) (&name)
#endif

#ifdef __cplusplus
}
#endif

#endif
