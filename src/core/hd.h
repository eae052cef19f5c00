/* TS_HD marks inline functions that compile for both the host and a CUDA device, so cell-level
 * numerics are written once and called from CPU loops and GPU kernels alike. */
#ifndef TESSERA_CORE_HD_H
#define TESSERA_CORE_HD_H

#if defined(__CUDACC__)
#define TS_HD __host__ __device__
#else
#define TS_HD
#endif

/* TS_HD_INLINE marks a large one that the CPU's compiler must inline into its loops, which it
 * then vectorises (a call would stop that); CUDA's compiler decides for itself. */
#if defined(__CUDACC__) || !defined(__GNUC__)
#define TS_HD_INLINE TS_HD
#else
#define TS_HD_INLINE __attribute__((always_inline)) TS_HD
#endif

#endif
