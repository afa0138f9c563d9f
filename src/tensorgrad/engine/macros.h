/// \file
/// engine/macros.h: TG_HD marks scalar code shared by the CPU loops and the CUDA kernels.
#pragma once
#if defined(__CUDACC__)
#define TG_HD __host__ __device__ __forceinline__
#else
#define TG_HD inline
#endif
