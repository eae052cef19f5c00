/* TS_HD marks inline functions that compile for both the host and a CUDA device, so cell-level
 * numerics are written once and called from CPU loops and GPU kernels alike. */
#ifndef TESSERA_CORE_HD_H
#define TESSERA_CORE_HD_H

#if defined(__CUDACC__)
#define TS_HD __host__ __device__
#else
#define TS_HD
#endif

#endif
