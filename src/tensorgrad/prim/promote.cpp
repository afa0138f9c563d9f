// prim/promote.cpp: type promotion (Note [Type promotion]): the dtype a binary op, where or cat
// computes in, the dtype of a C++ scalar next to a tensor, and the conversion of an operand to it.
#include "tensorgrad/prim/prim.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "tensorgrad/core/error.h"
#include "tensorgrad/prim/internal.h"

namespace tg {
namespace prim {

// Note [Type promotion]
// ~~~~~~~~~~~~~~~~~~~~~
// Binary ops, where and cat compute in one dtype, PyTorch's result type of their operands: tensors
// with dimensions decide first, 0-d tensors (the scalars of x * 2.5, which scalar_like makes) count
// only when they are of a higher category (bool < integer < floating): float16 * float32 scalar is
// float16, int64 * 2.5 is float32, int64 tensor * float64 0-d tensor is float64. The operands are
// converted to the result type before the kernel runs, so every backend kernel sees one dtype (a
// scalar is thus rounded to float16 before it multiplies a float16 tensor; PyTorch keeps it in
// float32 there, a difference within float16's rounding). Comparisons return bool; true division
// of integers returns float32. In-place ops keep self's dtype and refuse a result type that cannot be
// cast to it (an int64 tensor += float), as PyTorch does. The engine casts each gradient back to its
// input's dtype (autograd.cpp). Scalars are doubles in C++: an integral value (x * 2) keeps an
// integer tensor's dtype, a fractional one (x * 0.5) promotes it to float32 (scalar_dtype).
DType result_type(const RawTensor& a, const RawTensor& b) {
  const bool a0 = a.dim() == 0, b0 = b.dim() == 0;
  if (a0 == b0) return promote_types(a.dtype(), b.dtype());
  const DType dim = a0 ? b.dtype() : a.dtype(), zero = a0 ? a.dtype() : b.dtype();
  if (is_floating(dim)) return dim;
  if (dim == kBool || is_floating(zero)) return promote_types(dim, zero);
  return dim;
}

bool can_cast(DType from, DType to) {
  if (is_floating(from) && !is_floating(to)) return false;
  if (from != kBool && to == kBool) return false;
  return true;
}

DType scalar_dtype(double value, DType like) {
  if (is_floating(like)) return like;
  const bool integral = std::isfinite(value) && value == std::trunc(value);
  if (!integral) return kFloat32;   // PyTorch's default dtype
  if (like == kBool && value != 0 && value != 1) return kInt64;
  return like;
}

/// t converted to dtype (t itself when it has it). An expanded view (dims of stride 0) is converted at
/// its stored size and expanded again, so a broadcast operand is never materialized; a permuted
/// contiguous one keeps its layout.
RawTensor through_float32(const RawTensor& t) {
  return t.defined() && is_low_precision(t.dtype()) ? t.to(kFloat32) : t;
}

RawTensor as_dtype(const RawTensor& t, DType dtype) {
  if (t.dtype() == dtype) return t;
  Shape stored = t.shape();
  bool expanded = false;
  for (std::size_t d = 0; d < stored.size(); ++d)
    if (t.strides()[d] == 0 && stored[d] > 1) {
      stored[d] = 1;
      expanded = true;
    }
  if (expanded) return t.as_strided(stored, t.strides(), t.offset()).to(dtype).expand(t.shape());
  if (!t.is_contiguous() && t.dim() > 1) {
    // A permuted contiguous tensor (a transposed weight, say) is converted in its storage order, one
    // contiguous run, and permuted back: the result keeps t's layout, as PyTorch's `to` does.
    std::vector<int64_t> order(static_cast<std::size_t>(t.dim()));
    for (std::size_t d = 0; d < order.size(); ++d) order[d] = static_cast<int64_t>(d);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return t.strides()[a] > t.strides()[b]; });
    const RawTensor in_order = t.permute(order);
    if (in_order.is_contiguous()) {
      std::vector<int64_t> back(order.size());
      for (std::size_t d = 0; d < order.size(); ++d) back[static_cast<std::size_t>(order[d])] = static_cast<int64_t>(d);
      return in_order.to(dtype).permute(back);
    }
  }
  return t.to(dtype);
}

}  // namespace prim
}  // namespace tg
