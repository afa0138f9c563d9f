// backend/cuda/mma.cuh: warp-level tensor-core products (PTX mma.sync) for the kernels of
// backend/cuda/*.cu: the fragment layouts of the shapes we issue, the operand conversions (TF32
// rounding and splitting, packed float16/bfloat16 pairs), and the instructions themselves. Under nvcc
// an mma is one PTX instruction (sm_80 and newer); on the CUDA emulator it is a warp-collective call
// that gathers the 32 lanes' fragments and computes each lane's share of the product from the same
// layout functions, so a layout mistake breaks the emulator's parity tests the way it would break the
// GPU's. Internal to backend/cuda/.
//
// Note [Tensor-core fragments]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// An mma.sync.m16n8kK computes D (16 x 8) = A (16 x K) B (K x 8) + C with every operand spread over
// the 32 lanes of a warp in registers, each lane holding the elements the PTX ISA assigns to it
// ("Matrix Fragments for mma.m16n8k8" and "for mma.m16n8k16"). With g = lane / 4 and t = lane % 4:
//   accumulator C/D, 4 floats:  c[i] at row g + 8 (i / 2), column 2t + i % 2;
//   .tf32, K = 8:   a[i] (4) at row g + 8 (i % 2), column t + 4 (i / 2); b[i] (2) at k = t + 4 i, n = g;
//   .f16/.bf16, K = 16: element e of A (8, two per 32-bit register, the lower half first) at row
//       g + 8 ((e / 2) % 2), column 2t + e % 2 + 8 (e / 4); element e of B (4) at k = 2t + e % 2 + 8 (e / 2),
//       n = g.
// The functions below are that table, used by the kernels to place operands, by the emulator to
// compute, and by the GPU check's layout-conformance case (tests/test_cuda.cpp, "cuda: mma fragment
// layouts") that compares the hardware's products with them.
//
// Note [3xTF32]
// ~~~~~~~~~~~~~
// A TF32 operand keeps 10 of float32's 23 mantissa bits, so one TF32 product has a relative error near
// 2^-11: too coarse for float32 attention, whose reference is float32 arithmetic. Each float32 operand
// x is split into big = tf32(x) and small = tf32(x - big), and a b = big_a big_b + big_a small_b +
// small_a big_b (+ small_a small_b, below 2^-22 relative, dropped): three TF32 mmas with float32
// accumulation give about float32's accuracy at a third of TF32's rate, still several times the CUDA
// cores' float32 rate on sm_80/sm_90 (CUTLASS calls it OpMultiplyAddFastF32). tf32() rounds to nearest
// with ties away from zero, as cvt.rna.tf32.f32.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>

#include "tensorgrad/core/half.h"
#include "tensorgrad/core/macros.h"

namespace tg {
namespace cuda {
namespace detail {
namespace mma {

/// A position in an operand: row and column (for B: k and n).
struct Pos {
  int row, col;
};
/// Accumulator element i (0-3) of `lane` in the 16 x 8 C/D.
TG_HD Pos acc_pos(int lane, int i) { return {lane / 4 + 8 * (i / 2), 2 * (lane % 4) + i % 2}; }
/// A element i (0-3) of `lane` for .tf32 m16n8k8 (A is 16 x 8).
TG_HD Pos tf32_a_pos(int lane, int i) { return {lane / 4 + 8 * (i % 2), lane % 4 + 4 * (i / 2)}; }
/// B element i (0-1) of `lane` for .tf32 m16n8k8: {k, n} (B is 8 x 8).
TG_HD Pos tf32_b_pos(int lane, int i) { return {lane % 4 + 4 * i, lane / 4}; }
/// A element e (0-7) of `lane` for .f16/.bf16 m16n8k16 (A is 16 x 16).
TG_HD Pos h16_a_pos(int lane, int e) { return {lane / 4 + 8 * ((e / 2) % 2), 2 * (lane % 4) + e % 2 + 8 * (e / 4)}; }
/// B element e (0-3) of `lane` for .f16/.bf16 m16n8k16: {k, n} (B is 16 x 8).
TG_HD Pos h16_b_pos(int lane, int e) { return {2 * (lane % 4) + e % 2 + 8 * (e / 2), lane / 4}; }

/// x rounded to TF32 (10 mantissa bits; to nearest, ties away from zero), as float32 bits.
TG_HD uint32_t tf32_bits(float x) {
  uint32_t u = tg::detail::float_bits(x);
  if ((u & 0x7f800000u) != 0x7f800000u) u = (u + 0x1000u) & 0xffffe000u;   // inf and NaN pass
  return u;
}

/// The pair (lo, hi) as one 32-bit register of two float16s / bfloat16s, lo in the lower half, each
/// rounded to nearest even. On sm_80 and newer this is one cvt instruction, which gives the software
/// conversion's bits for every value but NaN (a NaN stays a NaN, its payload may differ); the software
/// form costs a dozen integer instructions per element inside the products' inner loop.
TG_HD uint32_t pack_half2(float lo, float hi) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  uint32_t r;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
#else
  return uint32_t(tg::detail::float_to_half_bits(lo)) | uint32_t(tg::detail::float_to_half_bits(hi)) << 16;
#endif
}
TG_HD uint32_t pack_bf16x2(float lo, float hi) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  uint32_t r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
#else
  return uint32_t(tg::detail::float_to_bfloat16_bits(lo)) | uint32_t(tg::detail::float_to_bfloat16_bits(hi)) << 16;
#endif
}
/// The two float16s of a packed register as floats (exact): half 0 is the lower half.
TG_HD float unpack_half(uint32_t reg, int half) {
  const uint16_t h = static_cast<uint16_t>(half == 0 ? reg & 0xffffu : reg >> 16);
#if defined(__CUDA_ARCH__)
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
#else
  return tg::detail::half_bits_to_float(h);
#endif
}
/// The two bfloat16s of a packed register as floats (exact): a shift or a mask.
TG_HD float unpack_bf16(uint32_t reg, int half) { return tg::detail::bits_float(half == 0 ? reg << 16 : reg & 0xffff0000u); }

enum class Kind { Tf32, F16, Bf16 };

#if defined(TENSORGRAD_CUDA_EMULATE)
namespace emulated {
inline float element(Kind kind, uint32_t reg, int half) {
  if (kind == Kind::Tf32) return tg::detail::bits_float(reg & 0xffffe000u);   // the hardware reads 19 bits
  return kind == Kind::F16 ? unpack_half(reg, half) : unpack_bf16(reg, half);
}
/// d = a b + c for the warp: each lane passes its fragments and gets its own d.
inline void mma(Kind kind, float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2], const float (&c)[4],
                const char* file, int line) {
  struct Frag {
    uint32_t a[4], b[2];
  } mine{{a[0], a[1], a[2], a[3]}, {b[0], b[1]}}, all[32];
  ::tg_emu::warp_gather(&mine, sizeof mine, all, file, line);
  const int K = kind == Kind::Tf32 ? 8 : 16;
  float A[16][16], B[16][8];
  for (int l = 0; l < 32; ++l) {
    if (kind == Kind::Tf32) {
      for (int i = 0; i < 4; ++i) {
        const Pos p = tf32_a_pos(l, i);
        A[p.row][p.col] = element(kind, all[l].a[i], 0);
      }
      for (int i = 0; i < 2; ++i) {
        const Pos p = tf32_b_pos(l, i);
        B[p.row][p.col] = element(kind, all[l].b[i], 0);
      }
    } else {
      for (int e = 0; e < 8; ++e) {
        const Pos p = h16_a_pos(l, e);
        A[p.row][p.col] = element(kind, all[l].a[e / 2], e % 2);
      }
      for (int e = 0; e < 4; ++e) {
        const Pos p = h16_b_pos(l, e);
        B[p.row][p.col] = element(kind, all[l].b[e / 2], e % 2);
      }
    }
  }
  const int lane = static_cast<int>(threadIdx.x % 32);
  float out[4];
  for (int i = 0; i < 4; ++i) {
    const Pos p = acc_pos(lane, i);
    float s = c[i];
    for (int k = 0; k < K; ++k) s += A[p.row][k] * B[k][p.col];   // products exact in float32
    out[i] = s;
  }
  for (int i = 0; i < 4; ++i) d[i] = out[i];
}
}  // namespace emulated
#endif

/// d = a b + c over the warp (Note [Tensor-core fragments]); every lane of the warp must call it.
/// Needs sm_80 or newer on a GPU (the host code chooses these kernels only there).
template <Kind kind>
__device__ __forceinline__ void mma_sync(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2],
                                         const float (&c)[4], const char* file = __builtin_FILE(),
                                         int line = __builtin_LINE()) {
#if defined(TENSORGRAD_CUDA_EMULATE)
  emulated::mma(kind, d, a, b, c, file, line);
#else
  (void)file;
  (void)line;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if (kind == Kind::Tf32) {
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%10,%11,%12,%13};\n"
        : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]), "f"(c[2]),
          "f"(c[3]));
  } else if (kind == Kind::F16) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%10,%11,%12,%13};\n"
        : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]), "f"(c[2]),
          "f"(c[3]));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%10,%11,%12,%13};\n"
        : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]), "f"(c[2]),
          "f"(c[3]));
  }
#elif defined(__CUDA_ARCH__)
  (void)a;
  (void)b;
  for (int i = 0; i < 4; ++i) d[i] = c[i];
  __trap();   // compiled for an architecture without these instructions; never chosen there
#endif
#endif
}

/// The operand policy of a warp product in shared memory: how many k one mma consumes and how a
/// lane's float elements become its registers.
///   Tf32x3: float32 operands, three TF32 mmas per step (Note [3xTF32]);
///   F16 / Bf16: one mma per step, each operand rounded to the 16-bit type (exact for values that
///   came from that type).
enum class Precision { Tf32x3, F16, Bf16 };

template <Precision P>
struct Policy;
template <>
struct Policy<Precision::Tf32x3> {
  static constexpr int kK = 8;
};
template <>
struct Policy<Precision::F16> {
  static constexpr int kK = 16;
};
template <>
struct Policy<Precision::Bf16> {
  static constexpr int kK = 16;
};

/// acc (16 x 8 NT, NT accumulator fragments side by side) += A (16 x K) B (K x 8 NT) for one warp, with
/// A(r, k) = a[r a_r + k a_k] and B(k, n) = b[k b_k + n b_n] read from shared (or any) memory as float.
/// K is a multiple of Policy<P>::kK. With SplitA (F16/Bf16 only: Tf32x3 always splits), A is a computed
/// float (a probability, a score's gradient) rather than a value of the 16-bit type: it is split into
/// two 16-bit parts, big and the rounding of the rest, and takes two mmas, so that A carries about 16
/// (bfloat16) or 22 (float16) bits instead of 8 or 11. Every lane of the warp must call it.
template <Precision P, int NT, bool SplitA = false>
__device__ __forceinline__ void warp_gemm(float (&acc)[NT][4], const float* a, int a_r, int a_k, const float* b,
                                          int b_k, int b_n, int K) {
  // Every loop over fragments is unrolled: an accumulator indexed by a loop counter that nvcc left
  // rolled lives in local memory (a stack frame in `ptxas -v`) instead of registers.
  const int lane = static_cast<int>(threadIdx.x % 32);
  constexpr int kK = Policy<P>::kK;
  for (int k0 = 0; k0 < K; k0 += kK) {
    if constexpr (P == Precision::Tf32x3) {
      uint32_t a_big[4], a_small[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const Pos p = tf32_a_pos(lane, i);
        const float x = a[p.row * a_r + (k0 + p.col) * a_k];
        a_big[i] = tf32_bits(x);
        a_small[i] = tf32_bits(x - tg::detail::bits_float(a_big[i]));
      }
#pragma unroll
      for (int n = 0; n < NT; ++n) {
        uint32_t b_big[2], b_small[2];
#pragma unroll
        for (int i = 0; i < 2; ++i) {
          const Pos p = tf32_b_pos(lane, i);
          const float x = b[(k0 + p.row) * b_k + (8 * n + p.col) * b_n];
          b_big[i] = tf32_bits(x);
          b_small[i] = tf32_bits(x - tg::detail::bits_float(b_big[i]));
        }
        mma_sync<Kind::Tf32>(acc[n], a_small, b_big, acc[n]);
        mma_sync<Kind::Tf32>(acc[n], a_big, b_small, acc[n]);
        mma_sync<Kind::Tf32>(acc[n], a_big, b_big, acc[n]);
      }
    } else {
      constexpr bool f16 = P == Precision::F16;
      constexpr Kind kind = f16 ? Kind::F16 : Kind::Bf16;
      auto pack = [](float lo, float hi) { return f16 ? pack_half2(lo, hi) : pack_bf16x2(lo, hi); };
      uint32_t ar[4], ar_small[4];
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        float x[2];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const Pos p = h16_a_pos(lane, 2 * r + h);
          x[h] = a[p.row * a_r + (k0 + p.col) * a_k];
        }
        ar[r] = pack(x[0], x[1]);
        if constexpr (SplitA) {   // the rest after rounding to the 16-bit type, itself rounded
          const float big0 = f16 ? unpack_half(ar[r], 0) : unpack_bf16(ar[r], 0);
          const float big1 = f16 ? unpack_half(ar[r], 1) : unpack_bf16(ar[r], 1);
          ar_small[r] = pack(x[0] - big0, x[1] - big1);
        }
      }
#pragma unroll
      for (int n = 0; n < NT; ++n) {
        uint32_t br[2];
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          float x[2];
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const Pos p = h16_b_pos(lane, 2 * r + h);
            x[h] = b[(k0 + p.row) * b_k + (8 * n + p.col) * b_n];
          }
          br[r] = pack(x[0], x[1]);
        }
        if constexpr (SplitA) mma_sync<kind>(acc[n], ar_small, br, acc[n]);
        mma_sync<kind>(acc[n], ar, br, acc[n]);
      }
    }
  }
}

}  // namespace mma
}  // namespace detail
}  // namespace cuda
}  // namespace tg
