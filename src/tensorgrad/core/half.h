/// \file
/// core/half.h: the two 16-bit floating types, tg::Half (IEEE binary16, torch.float16) and
/// tg::BFloat16 (torch.bfloat16), as storage types with round-to-nearest-even conversions.
/// Compiled by g++ and by nvcc (TG_HD), so: no dependencies.
#pragma once
#include <cstdint>
#include <cstring>
#include <limits>

#include "tensorgrad/core/macros.h"

// Note [Half precision arithmetic]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A Half or BFloat16 converts implicitly to float and is constructed from float, and has no
// arithmetic of its own: `a + b` on two of them adds two floats. So every kernel body written for T
// computes in float32 when T is a 16-bit type and rounds once when it stores its result in T, which
// is what PyTorch's kernels do (its "opmath" type). Sums, softmax, losses and matrix products
// accumulate in float32 (the dtype table's accumulator column, and prim/blas.cpp for the families
// that run through float32: Note [Low precision through float32]).

namespace tg {
namespace detail {

/// The bits of a float (memcpy: defined behaviour, compiled to a register move).
TG_HD uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
/// The float with these bits.
TG_HD float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

/// float -> binary16, rounding to nearest even. NaN stays NaN (quiet), overflow gives inf, values
/// below half's smallest subnormal round to signed zero.
TG_HD uint16_t float_to_half_bits(float f) {
  uint32_t u = float_bits(f);
  const uint32_t sign = (u >> 16) & 0x8000u;
  u &= 0x7FFFFFFFu;
  if (u >= 0x47800000u)                                   // |f| >= 2^16, inf or NaN
    return static_cast<uint16_t>(sign | (u > 0x7F800000u ? 0x7E00u : 0x7C00u));
  if (u < 0x38800000u) {                                  // |f| < 2^-14: half subnormal or zero
    // Adding 0.5 puts half's subnormal step (2^-24) at the float's last mantissa bit, so the float
    // addition itself rounds to nearest even; the low bits are then the half mantissa.
    const float shifted = bits_float(u) + 0.5f;
    return static_cast<uint16_t>(sign | (float_bits(shifted) - 0x3F000000u));
  }
  const uint32_t odd = (u >> 13) & 1u;                    // ties go to the even half mantissa
  u += 0xC8000FFFu + odd;                                 // exponent rebias (127 -> 15) and rounding
  return static_cast<uint16_t>(sign | (u >> 13));         // a carry into the exponent is exact (up to inf)
}

/// binary16 -> float (exact).
TG_HD float half_bits_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu, mant = h & 0x3FFu;
  if (exp == 0x1Fu) return bits_float(sign | 0x7F800000u | (mant << 13));            // inf, NaN
  if (exp == 0) {                                                                   // zero, subnormal
    const float m = static_cast<float>(mant) * 5.9604644775390625e-8f;             // mant * 2^-24, exact
    return bits_float(sign | float_bits(m));
  }
  return bits_float(sign | ((exp + 112u) << 23) | (mant << 13));
}

/// float -> bfloat16 (the float's top 16 bits), rounding to nearest even; NaN stays NaN (quiet).
TG_HD uint16_t float_to_bfloat16_bits(float f) {
  const uint32_t u = float_bits(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
  return static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

/// bfloat16 -> float (exact).
TG_HD float bfloat16_bits_to_float(uint16_t b) { return bits_float(static_cast<uint32_t>(b) << 16); }

}  // namespace detail

/// IEEE binary16 (torch.float16): 1 sign, 5 exponent and 10 mantissa bits, largest finite 65504.
/// A storage type: see Note [Half precision arithmetic].
struct Half {
  /// The raw bits.
  uint16_t bits;
  /// Uninitialized, like float (Half{} is +0).
  Half() = default;
  /// f rounded to nearest even.
  TG_HD Half(float f) : bits(detail::float_to_half_bits(f)) {}   // NOLINT(google-explicit-constructor)
  /// The exact float value.
  TG_HD operator float() const { return detail::half_bits_to_float(bits); }   // NOLINT
  /// The Half with these bits.
  TG_HD static Half from_bits(uint16_t b) {
    Half h;
    h.bits = b;
    return h;
  }
  /// *this = *this + v, in float, rounded once.
  TG_HD Half& operator+=(float v) { return *this = Half(float(*this) + v); }
  /// *this = *this - v, in float, rounded once.
  TG_HD Half& operator-=(float v) { return *this = Half(float(*this) - v); }
  /// *this = *this * v, in float, rounded once.
  TG_HD Half& operator*=(float v) { return *this = Half(float(*this) * v); }
  /// *this = *this / v, in float, rounded once.
  TG_HD Half& operator/=(float v) { return *this = Half(float(*this) / v); }
};

/// bfloat16 (torch.bfloat16): float's 8 exponent bits with 7 mantissa bits, float's range.
/// A storage type: see Note [Half precision arithmetic].
struct BFloat16 {
  /// The raw bits (the top half of the float).
  uint16_t bits;
  /// Uninitialized, like float (BFloat16{} is +0).
  BFloat16() = default;
  /// f rounded to nearest even.
  TG_HD BFloat16(float f) : bits(detail::float_to_bfloat16_bits(f)) {}   // NOLINT(google-explicit-constructor)
  /// The exact float value.
  TG_HD operator float() const { return detail::bfloat16_bits_to_float(bits); }   // NOLINT
  /// The BFloat16 with these bits.
  TG_HD static BFloat16 from_bits(uint16_t b) {
    BFloat16 h;
    h.bits = b;
    return h;
  }
  /// *this = *this + v, in float, rounded once.
  TG_HD BFloat16& operator+=(float v) { return *this = BFloat16(float(*this) + v); }
  /// *this = *this - v, in float, rounded once.
  TG_HD BFloat16& operator-=(float v) { return *this = BFloat16(float(*this) - v); }
  /// *this = *this * v, in float, rounded once.
  TG_HD BFloat16& operator*=(float v) { return *this = BFloat16(float(*this) * v); }
  /// *this = *this / v, in float, rounded once.
  TG_HD BFloat16& operator/=(float v) { return *this = BFloat16(float(*this) / v); }
};

/// The type kernels compute T in: float for the 16-bit floating types, T itself otherwise.
template <class T>
struct OpMath {
  /// The computation type.
  using type = T;
};
/// float for Half.
template <>
struct OpMath<Half> {
  /// The computation type.
  using type = float;
};
/// float for BFloat16.
template <>
struct OpMath<BFloat16> {
  /// The computation type.
  using type = float;
};
/// OpMath<T>::type.
template <class T>
using opmath_t = typename OpMath<T>::type;

}  // namespace tg

namespace std {
/// numeric_limits of tg::Half (binary16).
template <>
class numeric_limits<tg::Half> {
 public:
  static constexpr bool is_specialized = true;          ///< Yes.
  static constexpr bool is_signed = true;               ///< Yes.
  static constexpr bool is_integer = false;             ///< No.
  static constexpr bool has_infinity = true;            ///< Yes.
  static constexpr bool has_quiet_NaN = true;           ///< Yes.
  static constexpr int digits = 11;                     ///< Mantissa bits, with the implicit one.
  /// The smallest positive normal value, 2^-14.
  static TG_HD tg::Half min() { return tg::Half::from_bits(0x0400); }
  /// The largest finite value, 65504.
  static TG_HD tg::Half max() { return tg::Half::from_bits(0x7BFF); }
  /// -65504.
  static TG_HD tg::Half lowest() { return tg::Half::from_bits(0xFBFF); }
  /// 2^-10.
  static TG_HD tg::Half epsilon() { return tg::Half::from_bits(0x1400); }
  /// +inf.
  static TG_HD tg::Half infinity() { return tg::Half::from_bits(0x7C00); }
  /// A quiet NaN.
  static TG_HD tg::Half quiet_NaN() { return tg::Half::from_bits(0x7E00); }
};
/// numeric_limits of tg::BFloat16.
template <>
class numeric_limits<tg::BFloat16> {
 public:
  static constexpr bool is_specialized = true;          ///< Yes.
  static constexpr bool is_signed = true;               ///< Yes.
  static constexpr bool is_integer = false;             ///< No.
  static constexpr bool has_infinity = true;            ///< Yes.
  static constexpr bool has_quiet_NaN = true;           ///< Yes.
  static constexpr int digits = 8;                      ///< Mantissa bits, with the implicit one.
  /// The smallest positive normal value, 2^-126.
  static TG_HD tg::BFloat16 min() { return tg::BFloat16::from_bits(0x0080); }
  /// The largest finite value, about 3.39e38.
  static TG_HD tg::BFloat16 max() { return tg::BFloat16::from_bits(0x7F7F); }
  /// -max().
  static TG_HD tg::BFloat16 lowest() { return tg::BFloat16::from_bits(0xFF7F); }
  /// 2^-7.
  static TG_HD tg::BFloat16 epsilon() { return tg::BFloat16::from_bits(0x3C00); }
  /// +inf.
  static TG_HD tg::BFloat16 infinity() { return tg::BFloat16::from_bits(0x7F80); }
  /// A quiet NaN.
  static TG_HD tg::BFloat16 quiet_NaN() { return tg::BFloat16::from_bits(0x7FC0); }
};
}  // namespace std
