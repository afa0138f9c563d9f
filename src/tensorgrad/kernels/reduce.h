/// \file
/// kernels/reduce.h: the reduction family's shared rules (Note [Kernel families] in backend/backend.h),
/// written once for the CPU loop (backend/cpu/reduce.cpp) and the CUDA reducers (backend/cuda/reduce.cu), as
/// kernels/elementwise.h does for the elementwise ops. The sums' accumulate type is the dtype table's
/// (sum_accumulator_t, core/device.h: double for float32/float64, float for the 16-bit floats,
/// int64 for the integers). Compiled by g++ and by nvcc, so: no dependencies.
#pragma once
#include <cstdint>

#include "tensorgrad/core/macros.h"

namespace tg {
/// \cond INTERNAL
namespace reduce_math {

/// Whether v is NaN; false for the integers and bool.
template <class T>
TG_HD bool is_nan(T v) {
  return v != v;
}

/// The max / min / argmax / argmin rule (kMax: max), PyTorch's: a NaN beats every number, an earlier
/// NaN beats a later one, and among equal values the earlier position wins. later_replaces(a, b):
/// whether b, which comes after a, replaces it (the CPU's scan in order); extremum_replaces: the same
/// rule for two partial results at positions ai and bi in either order (the CUDA reducers' tree). The
/// rule decides by position, so the scan and any tree give the same value and index.
template <bool kMax, class T>
TG_HD bool later_replaces(T a, T b) {
  return (kMax ? b > a : b < a) || (reduce_math::is_nan(b) && !reduce_math::is_nan(a));
}

/// See later_replaces: whether b at position bi replaces a at position ai (ai != bi).
template <bool kMax, class T>
TG_HD bool extremum_replaces(T a, int64_t ai, T b, int64_t bi) {
  return bi < ai ? !later_replaces<kMax>(b, a) : later_replaces<kMax>(a, b);
}

}  // namespace reduce_math
/// \endcond
}  // namespace tg
