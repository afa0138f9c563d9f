/// \file
/// kernels/philox.h: Philox4x32-10, the counter-based generator behind every random op.
/// Element i of a random op drawn at generator offset `off` uses counter (off + i) and key `seed`,
/// so the CPU loop and the CUDA kernel produce the same values for the same manual_seed.
/// The generator state (seed, offset) lives in prim/random.cpp.
#pragma once
#include <cmath>
#include <cstdint>

#include "tensorgrad/core/macros.h"

namespace tg {
namespace philox {

/// The four 32-bit words of one Philox draw.
struct U4 {
  uint32_t x;   ///< The first word; x and y feed Uniform and Integer draws and Normal's first uniform.
  uint32_t y;   ///< The second word.
  uint32_t z;   ///< The third word; z and w feed Normal's second uniform.
  uint32_t w;   ///< The fourth word.
};

/// The 64-bit product a * b: returns its low 32 bits and stores the high 32 bits in *hi.
TG_HD uint32_t mulhilo(uint32_t a, uint32_t b, uint32_t* hi) {
  const uint64_t p = static_cast<uint64_t>(a) * b;
  *hi = static_cast<uint32_t>(p >> 32);
  return static_cast<uint32_t>(p);
}

/// Four 32-bit random words for counter `ctr` under key `seed`.
TG_HD U4 draw(uint64_t seed, uint64_t ctr) {
  uint32_t c0 = static_cast<uint32_t>(ctr), c1 = static_cast<uint32_t>(ctr >> 32), c2 = 0, c3 = 0;
  uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  for (int r = 0; r < 10; ++r) {
    uint32_t hi0, hi1;
    const uint32_t lo0 = mulhilo(0xD2511F53u, c0, &hi0);
    const uint32_t lo1 = mulhilo(0xCD9E8D57u, c2, &hi1);
    const uint32_t n0 = hi1 ^ c1 ^ k0, n1 = lo1, n2 = hi0 ^ c3 ^ k1, n3 = lo0;
    c0 = n0; c1 = n1; c2 = n2; c3 = n3;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return {c0, c1, c2, c3};
}

/// Uniform in [0, 1) with 53 random bits from two words.
TG_HD double to_unit(uint32_t hi, uint32_t lo) {
  const uint64_t bits = (static_cast<uint64_t>(hi) << 21) ^ (static_cast<uint64_t>(lo) >> 11);
  return static_cast<double>(bits & ((uint64_t(1) << 53) - 1)) * (1.0 / 9007199254740992.0);
}

/// The distribution of a random op (see Distribution).
enum class Kind : int { Uniform, Normal, Integer };
/** \var Kind::Uniform
    Uniform real in [a, b) (rand). */
/** \var Kind::Normal
    Normal with mean a and standard deviation b (randn). */
/** \var Kind::Integer
    Uniform integer in [low, low + range) (randint), computed in 64-bit integers. */

/// What one random op draws; built by uniform(), normal() or integer().
struct Distribution {
  /// Which distribution.
  Kind kind;
  /// Uniform: the start of [a, b); Normal: the mean.
  double a;
  /// Uniform: the end of [a, b); Normal: the standard deviation.
  double b;
  /// Integer: the smallest value.
  int64_t low;
  /// Integer: the number of values, high - low, in [1, 2^64).
  uint64_t range;

  /// Uniform real in [a, b).
  static Distribution uniform(double a, double b) { return {Kind::Uniform, a, b, 0, 1}; }
  /// Normal with the given mean and standard deviation.
  static Distribution normal(double mean, double std) { return {Kind::Normal, mean, std, 0, 1}; }
  /// Uniform integer in [low, high); needs low < high. The difference is taken in uint64_t, so every
  /// int64 interval is exact (INT64_MIN to INT64_MAX included).
  static Distribution integer(int64_t low, int64_t high) {
    return {Kind::Integer, 0, 0, low, static_cast<uint64_t>(high) - static_cast<uint64_t>(low)};
  }
};

/// A uniform integer in [low, low + range): 64 random bits reduced modulo range, all in uint64_t so that
/// no value is rounded through a double. The modulo bias is below range / 2^64 (PyTorch's randint
/// draws the same way).
TG_HD int64_t sample_integer(const U4& u, int64_t low, uint64_t range) {
  const uint64_t bits = (static_cast<uint64_t>(u.x) << 32) | u.y;
  return static_cast<int64_t>(static_cast<uint64_t>(low) + bits % range);   // wraps like two's complement
}

/// Element i of a draw of distribution d, in T: Uniform in [a, b), Normal(a, b) by Box-Muller, Integer
/// exact in int64_t (then converted to T).
template <class T>
TG_HD T sample(const Distribution& d, uint64_t seed, uint64_t ctr) {
  const U4 u = draw(seed, ctr);
  if (d.kind == Kind::Integer) return static_cast<T>(sample_integer(u, d.low, d.range));
  if (d.kind == Kind::Uniform) return static_cast<T>(d.a + (d.b - d.a) * to_unit(u.x, u.y));
  const double u1 = 1.0 - to_unit(u.x, u.y);        // (0, 1]: log is finite
  const double u2 = to_unit(u.z, u.w);
  return static_cast<T>(d.a + d.b * std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
}

}  // namespace philox
}  // namespace tg
