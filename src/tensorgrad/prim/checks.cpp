// prim/checks.cpp: the validation every prim function runs at its entry, before allocation and
// before any kernel: defined operands, one device, dtypes, index ranges (CPU; CUDA indices are
// checked by the kernels), values a dtype can hold, and the overlap rules of in-place writes.
#include "tensorgrad/prim/prim.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "tensorgrad/core/error.h"
#include "tensorgrad/kernels/index.h"
#include "tensorgrad/prim/internal.h"

namespace tg {
namespace prim {

void check_same_device(const char* op, const RawTensor& a, const RawTensor& b) {
  TG_CHECK(a.device() == b.device(), DeviceError, op,
           ": expected all tensors to be on the same device, but found at least two devices, ", a.device(), " and ",
           b.device());
}

// Note [Overlapping writes]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// A kernel writes its output element by element while it reads its inputs, so a write is refused, as
// PyTorch refuses it, when (1) the written tensor reaches one memory location through several
// elements (x.expand(3, 3).add_(1) would add three times to one float, or race between threads), or
// (2) an input shares memory with the output without being exactly the same view (a.add_(a.t())
// reads elements already overwritten). Identical views (a.add_(a), a.copy_(a)) are fine: element i
// reads only what element i writes. When either tensor is not a permutation of a dense block, the
// memory ranges cannot be compared cheaply; like PyTorch, such pairs ("too hard") are let through.
namespace {
/// True when t's elements cover a dense block exactly once (its dims, sorted by stride, are
/// contiguous): then its memory is the element range [offset, offset + numel).
bool is_non_overlapping_and_dense(const RawTensor& t) {
  SmallVector<std::pair<int64_t, int64_t>, 6> dims;   // (stride, size) of the dims of size > 1
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.shape()[d] != 1) dims.push_back({t.strides()[d], t.shape()[d]});
  std::sort(dims.begin(), dims.end());
  int64_t expect = 1;
  for (const auto& [stride, size] : dims) {
    if (stride != expect) return false;
    expect *= size;
  }
  return true;
}
}  // namespace

bool has_internal_overlap(const RawTensor& t) {
  if (t.numel() <= 1) return false;
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.shape()[d] != 1 && t.strides()[d] == 0) return true;
  return false;
}

void check_no_internal_overlap(const char* op, const RawTensor& t) {
  TG_CHECK(!has_internal_overlap(t), Error, op,
           ": unsupported operation: more than one element of the written-to tensor refers to a single memory "
           "location (an expanded view of shape ", shape_str(t.shape()), " with strides ", shape_str(t.strides()),
           "). Please clone() the tensor before performing the operation.");
}

void check_no_partial_overlap(const char* op, const RawTensor& out, const RawTensor& in, bool same_view_ok) {
  if (out.numel() == 0 || in.numel() == 0 || out.storage() != in.storage()) return;
  if (!is_non_overlapping_and_dense(out) || !is_non_overlapping_and_dense(in)) return;   // too hard to tell
  const int64_t out_begin = out.offset() * static_cast<int64_t>(dtype_size(out.dtype()));
  const int64_t in_begin = in.offset() * static_cast<int64_t>(dtype_size(in.dtype()));
  const int64_t out_end = out_begin + out.numel() * static_cast<int64_t>(dtype_size(out.dtype()));
  const int64_t in_end = in_begin + in.numel() * static_cast<int64_t>(dtype_size(in.dtype()));
  if (out_end <= in_begin || in_end <= out_begin) return;   // disjoint
  const bool same_view = out_begin == in_begin && out.dtype() == in.dtype() && out.shape() == in.shape() &&
                         out.strides() == in.strides();
  TG_CHECK(same_view && same_view_ok, Error, op,
           ": unsupported operation: some elements of the input tensor and the written-to tensor refer to a single "
           "memory location (input ", shape_str(in.shape()), " with strides ", shape_str(in.strides()), ", output ",
           shape_str(out.shape()), " with strides ", shape_str(out.strides()),
           "). Please clone() the tensor before performing the operation.");
}

void check_same_dtype(const char* op, const RawTensor& a, const RawTensor& b) {
  TG_CHECK(a.dtype() == b.dtype(), DTypeError, op, ": expected both tensors to have the same dtype, but got ",
           dtype_name(a.dtype()), " and ", dtype_name(b.dtype()));
}

void check_floating(const char* op, const RawTensor& t) {
  TG_CHECK(is_floating(t.dtype()), DTypeError, op, ": expected a floating point tensor, got ", dtype_name(t.dtype()));
}

void check_defined(const char* op, const RawTensor& t) {
  TG_CHECK(t.defined(), Error, op, ": got an undefined tensor");
}
void check_int64_index(const char* op, const RawTensor& index) {
  TG_CHECK(index.dtype() == kInt64, DTypeError, op, ": expected index to have dtype int64, got ",
           dtype_name(index.dtype()));
}
/// Host-side range check of a CPU index tensor. A CUDA index is checked by the kernel instead (copying
/// it here would synchronize inside ops and backward closures): it records the first bad value in the
/// device error flag, raised as this same IndexError at the next sync (backend/cuda/softmax_loss.cu).
void check_index_range(const char* op, const RawTensor& index, int64_t size, int64_t dim) {
  if (index.numel() == 0 || !index.device().is_cpu()) return;
  const RawTensor host = index.contiguous();
  const int64_t* p = host.data<int64_t>();
  for (int64_t i = 0; i < host.numel(); ++i)
    if (!index_math::in_range(p[i], size)) throw index_out_of_range_error(op, p[i], dim, size);
}


/// An integer dtype holds value after truncation (PyTorch's full and fill_ truncate 2.5 to 2), but not
/// NaN, infinities or values beyond its range: those raise instead of storing a wrapped value. A
/// bool holds any value (nonzero is true, as in PyTorch).
void check_representable(const char* op, double value, DType dtype) {
  if (is_floating(dtype) || dtype == kBool) return;
  dispatch_dtype(dtype, [&](auto z) {
    using T = decltype(z);
    if constexpr (std::is_integral<T>::value) {
      // The range as doubles: -2^63 and 2^63 are exact, INT64_MAX as a double would round up.
      const double lo = static_cast<double>(std::numeric_limits<T>::min());
      const double hi = static_cast<double>(std::numeric_limits<T>::max()) + 1.0;
      TG_CHECK(std::isfinite(value) && std::trunc(value) >= lo && std::trunc(value) < hi, Error, op, ": value ", value,
               " cannot be converted to type ", dtype_name(dtype), " without overflow");
    }
  });
}

}  // namespace prim
}  // namespace tg
