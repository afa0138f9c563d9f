/// \file
/// kernels/sampling.h: multinomial's value-level rules with replacement (Note [Drawing categories in
/// one pass] in backend/cpu/random.cpp), written once for the CPU (backend/cpu/random.cpp; kernels.inc's
/// category_block_sums vectorizes whole blocks with block_sum's tree) and the CUDA kernel
/// (backend/cuda/random.cu), so that the same uniforms draw the same categories on both devices.
/// Compiled by g++ and by nvcc.
#pragma once
#include <cstdint>

#include "tensorgrad/core/macros.h"

namespace tg {
/// \cond INTERNAL
namespace sampling {

/// Weights per block: a block's sum is one of the running sums a draw's walk skips by.
constexpr int64_t kBlock = 64;

/// The sum of weights [k0, k1) in float64: a whole block in 8 lanes (lane j adds weights j, j + 8, ...
/// in order) combined as a fixed tree, a shorter one in order; *negative is set when a weight is < 0.
template <class T>
TG_HD double block_sum(const T* p, int64_t k0, int64_t k1, bool* negative) {
  if (k1 - k0 != kBlock) {
    double s = 0;
    for (int64_t k = k0; k < k1; ++k) {
      const double v = static_cast<double>(p[k]);
      s += v;
      if (v < 0) *negative = true;
    }
    return s;
  }
  double lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  for (int64_t i = k0; i < k1; i += 8)
    for (int j = 0; j < 8; ++j) {
      const double v = static_cast<double>(p[i + j]);
      lane[j] += v;
      if (v < 0) *negative = true;
    }
  return ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
}

/// A draw u lands after a block whose running sum (the blocks up to its end) is at most this bound.
TG_HD double skip_bound(double u, double total) { return u * total * (1 - 0x1p-40); }

/// The first category in [k0, k1) of positive weight whose running sum (`before`, the blocks before
/// k0, plus the weights from k0 in order) divided by total is above u; -1 when none is.
template <class T>
TG_HD int64_t walk_block(const T* p, int64_t k0, int64_t k1, double before, double total, double u) {
  double run = 0;
  for (int64_t k = k0; k < k1; ++k) {
    const double v = static_cast<double>(p[k]);
    run += v;
    if (v > 0 && (before + run) / total > u) return k;
  }
  return -1;
}

/// The last category of positive weight among C (0 when none is): a draw when rounding leaves no
/// running sum above u, which takes a u within about 1e-15 of 1.
template <class T>
TG_HD int64_t last_positive(const T* p, int64_t C) {
  int64_t k = C - 1;
  while (k > 0 && !(static_cast<double>(p[k]) > 0)) --k;
  return k;
}

}  // namespace sampling
/// \endcond
}  // namespace tg
