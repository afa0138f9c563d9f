/// \file
/// engine/macros.h: TG_HD marks scalar code shared by the CPU loops and the CUDA kernels.
#pragma once
#if defined(__CUDACC__)
#define TG_HD __host__ __device__ __forceinline__
#else
/// Marks a function compiled for both sides: `__host__ __device__ __forceinline__` under nvcc,
/// `inline` in plain C++.
#define TG_HD inline
#endif
