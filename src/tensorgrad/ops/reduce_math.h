/// \file
/// ops/reduce_math.h: the reduction family's shared rules (Note [Kernel families] in engine/backend.h),
/// written once for the CPU loop (engine/cpu/reduce.cpp) and the CUDA reducers (cuda/reduce.cu), as
/// ops/functors.h does for the elementwise ops. The sums' accumulate type is the dtype table's
/// (sum_accumulator_t, engine/device.h: double for float32/float64, float for the 16-bit floats,
/// int64 for the integers). Compiled by g++ and by nvcc, so: no dependencies.
#pragma once
#include <cstdint>

#include "tensorgrad/engine/macros.h"

namespace tg {
namespace reduce_math {

/// Whether v is NaN; false for the integers and bool.
template <class T>
TG_HD bool is_nan(T v) {
  return v != v;
}

/// The max / min / argmax / argmin rule (kMax: max), PyTorch's: a NaN beats every number, an earlier
/// NaN beats a later one, and among equal values the earlier position wins. Returns whether the
/// candidate b at position bi replaces the current a at position ai. The rule is associative and
/// decides by position, so a sequential scan (the CPU) and a tree of partial results (the GPU) give the
/// same value and index.
template <bool kMax, class T>
TG_HD bool extremum_replaces(T a, int64_t ai, T b, int64_t bi) {
  const bool an = reduce_math::is_nan(a), bn = reduce_math::is_nan(b);
  if (an || bn) return an && bn ? bi < ai : bn;
  if (kMax ? b > a : b < a) return true;
  if (kMax ? a > b : a < b) return false;
  return bi < ai;
}

}  // namespace reduce_math
}  // namespace tg
