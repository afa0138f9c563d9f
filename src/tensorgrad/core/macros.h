/// \file
/// core/macros.h: TG_HD marks scalar code shared by the CPU loops and the CUDA kernels; TG_X86_SIMD
/// says whether the CPU backend has its AVX2 / AVX-512 loop sets.
#pragma once
#if defined(__CUDACC__)
#define TG_HD __host__ __device__ __forceinline__
#define TG_HD_INLINE __host__ __device__ __forceinline__
#else
/// Marks a function compiled for both sides: `__host__ __device__ __forceinline__` under nvcc,
/// `inline` in plain C++.
#define TG_HD inline
#if defined(__GNUC__) || defined(__clang__)
/// TG_HD, and always inlined by the host compiler too: for the scalar math (fn::exp, fn::erf) that a
/// CPU loop vectorizes only when it is inlined into the loop's body, whatever the body's size (gelu's
/// backward calls exp twice and erf once per element). See Note [Vectorizable exp].
#define TG_HD_INLINE __attribute__((always_inline)) inline
#else
/// TG_HD_INLINE where the compiler has no always-inline attribute: plain `inline`.
#define TG_HD_INLINE inline
#endif
#endif

/// 1 when the CPU backend compiles its AVX2 and AVX-512 loop sets next to the baseline one (x86-64
/// with GCC or clang), else 0: see Note [CPU capabilities] in backend/cpu/cpu_backend.h.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(__CUDACC__)
#define TG_X86_SIMD 1
#else
#define TG_X86_SIMD 0
#endif
