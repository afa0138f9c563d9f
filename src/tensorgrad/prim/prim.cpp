// prim/prim.cpp: validation, output allocation and backend dispatch for the graph-free tensor math.
// Every check happens here, before allocation and before any kernel runs (docs/guarantees.md, "Errors").
#include "tensorgrad/prim/prim.h"

#include <algorithm>
#include <cmath>
#include <atomic>
#include <cstring>
#include <limits>
#include <mutex>

#include "tensorgrad/core/error.h"
#include "tensorgrad/kernels/index.h"
#include "tensorgrad/kernels/softmax_loss.h"

namespace tg {
namespace prim {

// ------------------------------------------------------------------------------------------------
// checks

void check_same_device(const char* op, const Tensor& a, const Tensor& b) {
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
bool is_non_overlapping_and_dense(const Tensor& t) {
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

bool has_internal_overlap(const Tensor& t) {
  if (t.numel() <= 1) return false;
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.shape()[d] != 1 && t.strides()[d] == 0) return true;
  return false;
}

void check_no_internal_overlap(const char* op, const Tensor& t) {
  TG_CHECK(!has_internal_overlap(t), Error, op,
           ": unsupported operation: more than one element of the written-to tensor refers to a single memory "
           "location (an expanded view of shape ", shape_str(t.shape()), " with strides ", shape_str(t.strides()),
           "). Please clone() the tensor before performing the operation.");
}

void check_no_partial_overlap(const char* op, const Tensor& out, const Tensor& in, bool same_view_ok) {
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

void check_same_dtype(const char* op, const Tensor& a, const Tensor& b) {
  TG_CHECK(a.dtype() == b.dtype(), DTypeError, op, ": expected both tensors to have the same dtype, but got ",
           dtype_name(a.dtype()), " and ", dtype_name(b.dtype()));
}

void check_floating(const char* op, const Tensor& t) {
  TG_CHECK(is_floating(t.dtype()), DTypeError, op, ": expected a floating point tensor, got ", dtype_name(t.dtype()));
}

namespace {
void check_defined(const char* op, const Tensor& t) {
  TG_CHECK(t.defined(), Error, op, ": got an undefined tensor");
}
void check_int64_index(const char* op, const Tensor& index) {
  TG_CHECK(index.dtype() == kInt64, DTypeError, op, ": expected index to have dtype int64, got ",
           dtype_name(index.dtype()));
}
/// Host-side range check of a CPU index tensor. A CUDA index is checked by the kernel instead (copying
/// it here would synchronize inside ops and backward closures): it records the first bad value in the
/// device error flag, raised as this same IndexError at the next sync (backend/cuda/softmax_loss.cu).
void check_index_range(const char* op, const Tensor& index, int64_t size, int64_t dim) {
  if (index.numel() == 0 || !index.device().is_cpu()) return;
  const Tensor host = index.contiguous();
  const int64_t* p = host.data<int64_t>();
  for (int64_t i = 0; i < host.numel(); ++i)
    if (!index_math::in_range(p[i], size)) throw index_out_of_range_error(op, p[i], dim, size);
}
}  // namespace

// ------------------------------------------------------------------------------------------------
// creation

Tensor empty(const Shape& shape, DType dtype, Device device) { return Tensor::empty(shape, dtype, device); }

namespace {
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
}  // namespace

Tensor full(const Shape& shape, double value, DType dtype, Device device) {
  check_representable("full", value, dtype);
  Tensor t = Tensor::empty(shape, dtype, device);
  backend_for(device).fill(t, value);
  return t;
}

Tensor zeros_like(const Tensor& t) { return full(t.shape(), 0.0, t.dtype(), t.device()); }

Tensor scalar_like(double value, const Tensor& like) {
  return full({}, value, scalar_dtype(value, like.dtype()), like.device());
}

DType scalar_dtype(double value, DType like) {
  if (is_floating(like)) return like;
  const bool integral = std::isfinite(value) && value == std::trunc(value);
  if (!integral) return kFloat32;   // PyTorch's default dtype
  if (like == kBool && value != 0 && value != 1) return kInt64;
  return like;
}

Tensor arange(int64_t n, DType dtype, Device device) {
  TG_CHECK(n >= 0, ShapeError, "arange: upper bound must be non-negative, got ", n);
  Tensor host = Tensor::empty({n}, dtype, Device::cpu());
  dispatch_dtype(dtype, [&](auto z) {
    using T = decltype(z);
    for (int64_t i = 0; i < n; ++i) host.data<T>()[i] = static_cast<T>(i);
  });
  return to_device(host, device);
}

Tensor eye(int64_t n, DType dtype, Device device) {
  TG_CHECK(n >= 0, ShapeError, "eye: n must be non-negative, got ", n);
  Tensor t = full({n, n}, 0.0, dtype, device);
  fill_(t.as_strided({n}, {n + 1}, 0), 1.0);   // the diagonal as a strided view
  return t;
}

Tensor from_host(const void* data, const Shape& shape, DType dtype, Device device) {
  Tensor host = Tensor::empty(shape, dtype, Device::cpu());
  if (host.numel() > 0) std::memcpy(host.raw_data(), data, static_cast<std::size_t>(host.numel()) * dtype_size(dtype));
  return to_device(host, device);
}

// ------------------------------------------------------------------------------------------------
// random: one process-wide Philox stream. Each draw reserves numel counters, so results do not depend
// on the device or the thread count. See kernels/philox.h.

namespace {
std::mutex g_rng_mutex;
uint64_t g_seed = 0x5eed;
uint64_t g_offset = 0;
}  // namespace

void manual_seed(uint64_t seed) {
  std::lock_guard<std::mutex> lock(g_rng_mutex);
  g_seed = seed;
  g_offset = 0;
}

Tensor random(const philox::Distribution& dist, const Shape& shape, DType dtype, Device device, RngState* drawn_at) {
  Tensor t = Tensor::empty(shape, dtype, device);
  uint64_t seed, offset;
  {
    std::lock_guard<std::mutex> lock(g_rng_mutex);
    seed = g_seed;
    offset = g_offset;
    g_offset += static_cast<uint64_t>(t.numel());
  }
  if (drawn_at != nullptr) *drawn_at = RngState{seed, offset};
  backend_for(device).random(dist, seed, offset, t);
  return t;
}

Tensor random_at(const philox::Distribution& dist, const Shape& shape, DType dtype, Device device, RngState at) {
  Tensor t = Tensor::empty(shape, dtype, device);
  backend_for(device).random(dist, at.seed, at.offset, t);
  return t;
}

RngState get_rng_state() {
  std::lock_guard<std::mutex> lock(g_rng_mutex);
  return RngState{g_seed, g_offset};
}

void set_rng_state(RngState state) {
  std::lock_guard<std::mutex> lock(g_rng_mutex);
  g_seed = state.seed;
  g_offset = state.offset;
}

// ------------------------------------------------------------------------------------------------
// copies

void fill_(const Tensor& dst, double value) {
  check_defined("fill_", dst);
  check_representable("fill_", value, dst.dtype());
  check_no_internal_overlap("fill_", dst);
  backend_for(dst.device()).fill(dst, value);
  dst.storage()->bump_version();
}

void copy_(const Tensor& dst, const Tensor& src) {
  check_defined("copy_", dst);
  check_defined("copy_", src);
  TG_CHECK(broadcast_shapes(dst.shape(), src.shape(), "copy_") == dst.shape(), ShapeError, "copy_: source of shape ",
           shape_str(src.shape()), " cannot be broadcast to the destination's shape ", shape_str(dst.shape()));
  check_no_internal_overlap("copy_", dst);
  check_no_partial_overlap("copy_", dst, src);
  const Tensor s = src.expand(dst.shape());
  if (src.device() == dst.device()) {
    backend_for(dst.device()).copy(s, dst);
  } else {
    backend_for(dst.device()).copy(to_device(s.contiguous(), dst.device()), dst);
  }
  dst.storage()->bump_version();
}

Tensor to_device(const Tensor& t, Device device) { return t.to(device); }

// ------------------------------------------------------------------------------------------------
// elementwise

Tensor unary(UnaryOp op, const Tensor& x, UnaryArgs args) {
  check_defined("unary", x);
  check_floating("unary", x);
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  backend_for(x.device()).unary(op, args, x, out);
  return out;
}

namespace {
UnaryOp rounding_op(DType lowp) {
  TG_CHECK(is_low_precision(lowp), DTypeError, "round_to_precision: expected float16 or bfloat16, got ",
           dtype_name(lowp));
  return lowp == kBFloat16 ? UnaryOp::RoundToBFloat16 : UnaryOp::RoundToFloat16;
}
}  // namespace

Tensor round_to_precision(const Tensor& x, DType lowp) { return unary(rounding_op(lowp), x); }

void round_to_precision_(const Tensor& x, DType lowp) {
  check_defined("round_to_precision_", x);
  check_floating("round_to_precision_", x);
  check_no_internal_overlap("round_to_precision_", x);
  backend_for(x.device()).unary(rounding_op(lowp), {}, x, x);   // elementwise: in place is safe
  x.storage()->bump_version();
}

Tensor unary_backward(UnaryOp op, const Tensor& x, const Tensor& y, const Tensor& dy, UnaryArgs args) {
  Tensor dx = Tensor::empty(dy.shape(), dy.dtype(), dy.device());
  backend_for(dy.device()).unary_backward(op, args, x, y, dy, dx);
  return dx;
}

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
DType result_type(const Tensor& a, const Tensor& b) {
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

namespace {
/// The dtype op computes in for operands of common dtype t: true division of integers in float32.
DType compute_dtype(BinaryOp op, DType t) { return op == BinaryOp::Div && !is_floating(t) ? kFloat32 : t; }

void check_binary(BinaryOp op, const Tensor& a, const Tensor& b, const char* name) {
  check_defined(name, a);
  check_defined(name, b);
  check_same_device(name, a, b);
  // Integer powers would need exact integer exponentiation (and an error for negative exponents):
  // refused rather than computed through double, whose inf does not fit an integer.
  TG_CHECK(op != BinaryOp::Pow || is_floating(a.dtype()) || is_floating(b.dtype()), DTypeError, name,
           ": not supported for integer tensors (convert with .to(tg::kFloat32) first)");
  TG_CHECK(!(op == BinaryOp::Sub && a.dtype() == kBool && b.dtype() == kBool), DTypeError, name,
           ": subtraction, the `-` operator, with two bool tensors is not supported; use the `^` (logical_xor) "
           "or `!=` (ne) operator instead");
}

/// t converted to dtype (t itself when it has it). An expanded view (dims of stride 0) is converted at
/// its stored size and expanded again, so a broadcast operand is never materialized; a permuted
/// contiguous one keeps its layout.
Tensor as_dtype(const Tensor& t, DType dtype) {
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
    const Tensor in_order = t.permute(order);
    if (in_order.is_contiguous()) {
      std::vector<int64_t> back(order.size());
      for (std::size_t d = 0; d < order.size(); ++d) back[static_cast<std::size_t>(order[d])] = static_cast<int64_t>(d);
      return in_order.to(dtype).permute(back);
    }
  }
  return t.to(dtype);
}
}  // namespace

Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b, const char* name) {
  check_binary(op, a, b, name);
  const bool same_shape = a.shape() == b.shape();
  const Shape shape = same_shape ? a.shape() : broadcast_shapes(a.shape(), b.shape(), name);   // before any copy
  const DType common = compute_dtype(op, result_type(a, b));
  const Tensor ac = as_dtype(a, common), bc = as_dtype(b, common);
  const bool comparison = op == BinaryOp::Eq || op == BinaryOp::Ne || op == BinaryOp::Gt || op == BinaryOp::Lt ||
                          op == BinaryOp::Ge || op == BinaryOp::Le;
  const DType out_dtype = comparison ? kBool : common;
  if (same_shape) {   // the common case: no broadcast views to build
    Tensor out = Tensor::empty(shape, out_dtype, a.device());
    backend_for(a.device()).binary(op, ac, bc, out);
    return out;
  }
  Tensor out = Tensor::empty(shape, out_dtype, a.device());
  backend_for(a.device()).binary(op, ac.expand(shape), bc.expand(shape), out);
  return out;
}

void binary_(BinaryOp op, const Tensor& self, const Tensor& other, const char* name) {
  check_binary(op, self, other, name);
  check_no_internal_overlap(name, self);
  check_no_partial_overlap(name, self, other);
  const DType common = compute_dtype(op, result_type(self, other));
  TG_CHECK(can_cast(common, self.dtype()), DTypeError, name, ": result type ", dtype_name(common),
           " can't be cast to the desired output type ", dtype_name(self.dtype()));
  const Shape shape = broadcast_shapes(self.shape(), other.shape(), name);
  TG_CHECK(shape == self.shape(), ShapeError, name, ": output with shape ", shape_str(self.shape()),
           " doesn't match the broadcast shape ", shape_str(shape));
  const Tensor o = other.shape() == shape ? other : other.expand(shape);
  if (common == self.dtype() && other.dtype() == self.dtype()) {   // the common case (gradient accumulation)
    backend_for(self.device()).binary(op, self, o, self);
  } else {   // computed in the result type, then rounded into self
    const Tensor r = binary(op, self, o, name);
    backend_for(self.device()).copy(r, self);
  }
  self.storage()->bump_version();
}

Tensor mul(const Tensor& a, double s) { return binary(BinaryOp::Mul, a, scalar_like(s, a), "mul"); }

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  check_defined("where", cond);
  check_defined("where", a);
  check_defined("where", b);
  check_same_device("where", cond, a);
  check_same_device("where", a, b);
  TG_CHECK(cond.dtype() == kBool, DTypeError, "where: expected condition to be a bool tensor, got ",
           dtype_name(cond.dtype()), " (compare it first, e.g. cond != 0)");
  const DType common = result_type(a, b);
  const Shape shape = broadcast_shapes(broadcast_shapes(cond.shape(), a.shape(), "where"), b.shape(), "where");
  Tensor out = Tensor::empty(shape, common, a.device());
  backend_for(a.device())
      .where(cond.expand(shape), as_dtype(a, common).expand(shape), as_dtype(b, common).expand(shape), out);
  return out;
}

// ------------------------------------------------------------------------------------------------
// reductions

Tensor reduce(ReduceOp op, const Tensor& x, const std::vector<int64_t>& dims, bool keepdim, const char* name) {
  check_defined(name, x);
  // PyTorch sums bool and every integer type in int64 (torch.sum(uint8) is int64).
  if (op == ReduceOp::Sum && !is_floating(x.dtype()) && x.dtype() != kInt64)
    return reduce(op, as_dtype(x, kInt64), dims, keepdim, name);
  const bool arg = op == ReduceOp::ArgMax || op == ReduceOp::ArgMin;
  if (arg && dims.empty()) {   // over all elements: the flattened index, as in PyTorch
    TG_CHECK(x.numel() > 0, IndexError, name, ": expected a non-empty tensor (cannot take ", name,
             " of an empty tensor)");
    Tensor flat = x.reshape({x.numel()});
    Tensor out = Tensor::empty({1}, kInt64, x.device());
    backend_for(x.device()).reduce(op, flat, out);
    return keepdim ? out.view(Shape(x.dim(), 1)) : out.view({});
  }
  TG_CHECK(!arg || dims.size() == 1, ShapeError, name, ": expects exactly one dim");
  TG_CHECK(op == ReduceOp::Sum || x.numel() > 0 || !dims.empty(), IndexError, name,
           ": cannot compute ", name, " of an empty tensor (shape ", shape_str(x.shape()), ")");
  std::vector<bool> reduced(static_cast<std::size_t>(std::max<int64_t>(x.dim(), 1)), dims.empty());
  for (int64_t d : dims) {
    const int64_t w = wrap_dim(d, x.dim(), name);
    TG_CHECK(!reduced[w] || dims.empty(), ShapeError, name, ": dim ", w, " appears multiple times in the list of dims");
    reduced[w] = true;
  }
  Shape keep_shape = x.shape(), final_shape;
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (reduced[d]) {
      TG_CHECK(op == ReduceOp::Sum || x.shape()[d] > 0, IndexError, name, ": cannot compute ", name,
               " over dimension ", d, " of size 0 (shape ", shape_str(x.shape()), ")");
      keep_shape[d] = 1;
      if (keepdim) final_shape.push_back(1);
    } else {
      final_shape.push_back(x.shape()[d]);
    }
  }
  Tensor out = Tensor::empty(keep_shape, arg ? kInt64 : x.dtype(), x.device());
  if (out.numel() > 0) backend_for(x.device()).reduce(op, x, out);
  return out.view(final_shape);
}

Tensor sum_to(const Tensor& x, const Shape& shape) {
  if (x.shape() == shape) return x;
  TG_CHECK(broadcast_shapes(x.shape(), shape, "sum_to") == x.shape(), ShapeError, "sum_to: cannot sum shape ",
           shape_str(x.shape()), " down to ", shape_str(shape));
  const int64_t lead = x.dim() - static_cast<int64_t>(shape.size());
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < x.dim(); ++d)
    if (d < lead || (shape[d - lead] == 1 && x.shape()[d] != 1)) dims.push_back(d);
  if (dims.empty()) return x.reshape(shape);
  Tensor out = Tensor::empty(shape, x.dtype(), x.device());
  // reduce into x's rank with ones on the summed dims, then view as the target shape
  Shape keep = x.shape();
  for (int64_t d : dims) keep[d] = 1;
  Tensor keep_view = out.view(keep);
  backend_for(x.device()).reduce(ReduceOp::Sum, x, keep_view);
  return out;
}

// ------------------------------------------------------------------------------------------------
// matmul

namespace {
struct Operand : GemmOperand {
  Tensor keep;   // holds a contiguous copy alive when one was needed
};

/// How the BLAS can read the (R, C) matrices of t (batch dim first when 3-D) without copying.
Operand as_blas_operand(const Tensor& t) {
  const int64_t nd = t.dim();
  const int64_t R = t.shape()[nd - 2], C = t.shape()[nd - 1];
  const int64_t sr = t.strides()[nd - 2], sc = t.strides()[nd - 1];
  const int64_t bs = nd == 3 && t.shape()[0] > 1 ? t.strides()[0] : 0;
  constexpr int64_t kLdMax = std::numeric_limits<int>::max();   // the BLAS takes leading dims as int
  if ((C <= 1 || sc == 1) && (R <= 1 || (sr >= std::max<int64_t>(C, 1) && sr <= kLdMax)))
    return {{t.raw_data(), false, R <= 1 ? std::max<int64_t>(C, 1) : sr, bs}, Tensor()};
  if ((R <= 1 || sr == 1) && (C <= 1 || (sc >= std::max<int64_t>(R, 1) && sc <= kLdMax)))
    return {{t.raw_data(), true, C <= 1 ? std::max<int64_t>(R, 1) : sc, bs}, Tensor()};
  // A zero-size view counts as contiguous whatever its strides: clone it, or this would recurse forever.
  Tensor c = t.numel() == 0 ? t.clone() : t.contiguous();
  Operand o = as_blas_operand(c);
  o.keep = c;
  return o;
}
}  // namespace

// Note [Low precision through float32]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The kernel families that accumulate across elements (matrix products, softmax, cross-entropy) and
// the optimizer updates exist for float32 and float64 only (dispatch_only in the backends). A float16
// or bfloat16 operand is converted to float32 here, the float32 kernel runs, and the result is
// rounded back once: float32 accumulation, as PyTorch's half kernels do internally, written once for
// both devices. The exception is the matrix product on CUDA, where cuBLAS multiplies 16-bit operands
// itself with float32 accumulation and one rounding, on tensor cores (Note [16-bit GEMMs on CUDA] in
// backend/cuda/blas.cpp), and bfloat16 on a CPU with AVX512_BF16, where oneDNN's bfloat16 matmul multiplies
// them (Note [bfloat16 GEMMs through oneDNN] in backend/cpu/blas.cpp): matmul, addmm and
// matmul_row_sums convert only where Backend::gemm_takes says no (gemm_through_float32): on the CPU,
// float16 always and bfloat16 without AVX512_BF16, as Debian's OpenBLAS has no 16-bit GEMM and
// oneDNN's bfloat16 kernels start at AVX-512 (under autocast, matmul and linear skip the round trip
// through 16-bit copies there: Note [Autocast products through float32] in ops/linalg.cpp).
// Elementwise ops, reductions and indexing run natively in every dtype (computing in float: Note
// [Half precision arithmetic] in core/half.h). The optimizers keep float32 master weights for 16-bit
// parameters (optim/optimizer.h).

bool products_through_float32(DType dtype, Device device) {
  return is_low_precision(dtype) && !backend_for(device).gemm_takes(dtype);
}

namespace {
/// Whether a product of a and b runs in float32 on converted operands (Note [Low precision through
/// float32]): 16-bit operands of one dtype that the device's gemm does not take.
bool gemm_through_float32(const Tensor& a, const Tensor& b) {
  return products_through_float32(a.dtype(), a.device()) && a.dtype() == b.dtype();
}

/// Checks a (M, K) or (B, M, K) and b (K, N) or (B, K, N) for matmul and the ops built on it (`name` in
/// messages): defined, one floating dtype and device, matching K, batches that broadcast, sizes the
/// BLAS takes. Tensors of 16-bit dtypes pass: the callers convert them first.
void check_matmul(const char* name, const Tensor& a, const Tensor& b) {
  check_defined(name, a);
  check_defined(name, b);
  check_same_device(name, a, b);
  TG_CHECK((a.dim() == 2 || a.dim() == 3) && (b.dim() == 2 || b.dim() == 3), ShapeError,
           name, ": expected 2-D or 3-D tensors, got ", a.dim(), "-D and ", b.dim(), "-D (shapes ",
           shape_str(a.shape()), " and ", shape_str(b.shape()), ")");
  check_same_dtype(name, a, b);
  check_floating(name, a);
  const int64_t M = a.shape()[a.dim() - 2], K = a.shape()[a.dim() - 1];
  const int64_t K2 = b.shape()[b.dim() - 2], N = b.shape()[b.dim() - 1];
  TG_CHECK(K == K2, ShapeError, name, ": mat1 and mat2 shapes cannot be multiplied (", shape_x(a.shape()), " and ",
           shape_x(b.shape()), ")");
  const int64_t Ba = a.dim() == 3 ? a.shape()[0] : 1, Bb = b.dim() == 3 ? b.shape()[0] : 1;
  TG_CHECK(Ba == Bb || Ba == 1 || Bb == 1, ShapeError, name, ": batch sizes ", Ba, " and ", Bb,
           " cannot be broadcast (shapes ", shape_str(a.shape()), " and ", shape_str(b.shape()), ")");
  constexpr int64_t kIntMax = std::numeric_limits<int>::max();
  TG_CHECK(M <= kIntMax && N <= kIntMax && K <= kIntMax, ShapeError,
           name, ": matrix dimensions above 2^31-1 are not supported (", shape_x(a.shape()), " and ",
           shape_x(b.shape()), ")");
}

/// The GEMM out (B, M, N) = a . b for checked a and b with K > 0; oa and ob (from as_blas_operand)
/// must outlive the call.
GemmArgs gemm_args(const Operand& oa, const Operand& ob, int64_t batch, int64_t M, int64_t N, int64_t K,
                   const Tensor& out) {
  return make_gemm(out.dtype(), batch, M, N, K, oa, ob, out.raw_data(), N, M * N);
}
}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b) {
  check_defined("matmul", a);
  check_defined("matmul", b);
  if (gemm_through_float32(a, b)) return matmul(as_dtype(a, kFloat32), as_dtype(b, kFloat32)).to(a.dtype());
  check_matmul("matmul", a, b);
  const int64_t M = a.shape()[a.dim() - 2], K = a.shape()[a.dim() - 1], N = b.shape()[b.dim() - 1];
  const int64_t Ba = a.dim() == 3 ? a.shape()[0] : 1, Bb = b.dim() == 3 ? b.shape()[0] : 1;
  const int64_t B = Ba == 1 ? Bb : Ba;   // broadcasting: 1 stretches, 0 does not (max would make 0 and 1 give 1)
  Tensor out = (a.dim() == 3 || b.dim() == 3) ? Tensor::empty({B, M, N}, a.dtype(), a.device())
                                              : Tensor::empty({M, N}, a.dtype(), a.device());
  if (out.numel() == 0) return out;
  if (K == 0) {   // empty sums: zeros, without handing the BLAS pointers into empty storages
    backend_for(a.device()).fill(out, 0.0);
    return out;
  }
  const Operand oa = as_blas_operand(a), ob = as_blas_operand(b);
  backend_for(a.device()).gemm(gemm_args(oa, ob, B, M, N, K, out));
  return out;
}

// Note [Bias folded into the GEMM]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// linear's forward, y = x W^T + b, and its weight and bias gradients, dW = g^T x and db = the column
// sums of g, are each a GEMM plus a bias pass: a broadcast add, or a column sum (on CUDA two launches
// when g is tall). addmm and matmul_row_sums hand the pass to Backend::gemm_epilogue with the GEMM:
// - CUDA folds it into the GEMM's own launch with cuBLASLt's epilogues, CUBLASLT_EPILOGUE_BIAS and
//   BGRADB (Note [cuBLASLt epilogues], backend/cuda/blas.cpp). A tutorial MLP training step drops from 15
//   launches at batch 64 and 17 at batch 1024 to 11 at both (tests/test_cuda.cpp).
// - The CPU copies the bias into the result's rows and lets the BLAS accumulate onto it (beta = 1),
//   and sums the rows in the same call (backend/cpu/blas.cpp): one dispatch instead of two.
// A backend that cannot fold (cuBLASLt missing or refusing the dtype, layout or epilogue, or switched
// off with tg::cuda::detail::set_gemm_epilogues) returns false, and the pass runs here as its own op:
// the bias copied into the rows with the GEMM accumulating onto it, or a sum over the rows. float16
// and bfloat16 fold in float32 (Note [Low precision through float32]): the bias is added before the
// one rounding, on the CPU through float32 and on CUDA in cuBLASLt's float32 compute. linear folds only
// a bias of x's dtype and device (ops/linalg.cpp).
Tensor addmm(const Tensor& bias, const Tensor& a, const Tensor& b) {
  check_defined("addmm", bias);
  check_defined("addmm", a);
  check_defined("addmm", b);
  if (gemm_through_float32(a, b) && a.dtype() == bias.dtype())
    return addmm(as_dtype(bias, kFloat32), as_dtype(a, kFloat32), as_dtype(b, kFloat32)).to(a.dtype());
  check_matmul("addmm", a, b);
  TG_CHECK(a.dim() == 2 && b.dim() == 2, ShapeError, "addmm: expected 2-D matrices, got shapes ", shape_str(a.shape()),
           " and ", shape_str(b.shape()));
  check_same_device("addmm", a, bias);
  check_same_dtype("addmm", a, bias);
  const int64_t M = a.shape()[0], K = a.shape()[1], N = b.shape()[1];
  TG_CHECK(bias.shape() == Shape{N}, ShapeError, "addmm: expected bias of shape [", N, "] for the product ",
           shape_x(a.shape()), " and ", shape_x(b.shape()), ", got ", shape_str(bias.shape()));
  Tensor out = Tensor::empty({M, N}, a.dtype(), a.device());
  if (out.numel() == 0) return out;
  Backend& backend = backend_for(a.device());
  const Tensor bc = bias.contiguous();
  if (K > 0) {
    const Operand oa = as_blas_operand(a), ob = as_blas_operand(b);
    GemmArgs g = gemm_args(oa, ob, 1, M, N, K, out);
    GemmEpilogue e;
    e.bias = bc.raw_data();
    if (backend.gemm_epilogue(g, e)) return out;
    backend.copy(bc.expand({M, N}), out);   // the bias in every row, then out += a . b
    g.beta = 1;
    backend.gemm(g);
    return out;
  }
  backend.copy(bc.expand({M, N}), out);   // an empty product: the bias alone
  return out;
}

std::pair<Tensor, Tensor> matmul_row_sums(const Tensor& a, const Tensor& b) {
  check_defined("matmul", a);
  check_defined("matmul", b);
  if (gemm_through_float32(a, b)) {
    std::pair<Tensor, Tensor> r = matmul_row_sums(as_dtype(a, kFloat32), as_dtype(b, kFloat32));
    return {r.first.to(a.dtype()), r.second.to(a.dtype())};
  }
  check_matmul("matmul", a, b);
  TG_CHECK(a.dim() == 2 && b.dim() == 2, ShapeError, "matmul: expected 2-D matrices, got shapes ",
           shape_str(a.shape()), " and ", shape_str(b.shape()));
  const int64_t M = a.shape()[0], K = a.shape()[1], N = b.shape()[1];
  if (M > 0 && N > 0 && K > 0) {
    Tensor out = Tensor::empty({M, N}, a.dtype(), a.device());
    Tensor sums = Tensor::empty({M}, a.dtype(), a.device());
    const Operand oa = as_blas_operand(a), ob = as_blas_operand(b);
    GemmEpilogue e;
    e.row_sums = sums.raw_data();
    if (backend_for(a.device()).gemm_epilogue(gemm_args(oa, ob, 1, M, N, K, out), e)) return {out, sums};
  }
  // The sums as a column sum of a^T: for linear's a = g^T, the sum of the contiguous g over its rows.
  return {matmul(a, b), sum_to(a.transpose(0, 1), {M})};
}

// ------------------------------------------------------------------------------------------------
// softmax and cross-entropy

Tensor softmax(const Tensor& x, int64_t dim, bool log) {
  const char* name = log ? "log_softmax" : "softmax";
  check_defined(name, x);
  check_floating(name, x);
  if (is_low_precision(x.dtype())) return softmax(x.to(kFloat32), dim, log).to(x.dtype());
  dim = wrap_dim(dim, x.dim(), name);
  const Tensor xc = x.contiguous();
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  if (out.numel() > 0) backend_for(x.device()).softmax(xc, dim, log, out);
  return out;
}

Tensor softmax_backward(const Tensor& y, const Tensor& dy, int64_t dim, bool log) {
  if (is_low_precision(y.dtype()))
    return softmax_backward(y.to(kFloat32), as_dtype(dy, kFloat32), dim, log).to(y.dtype());
  Tensor dx = Tensor::empty(y.shape(), y.dtype(), y.device());
  if (dx.numel() > 0) backend_for(y.device()).softmax_backward(y.contiguous(), dy.contiguous(), dim, log, dx);
  return dx;
}

CrossEntropyResult cross_entropy(const Tensor& logits, const Tensor& target, const CrossEntropyArgs& args) {
  check_defined("cross_entropy", logits);
  check_defined("cross_entropy", target);
  check_floating("cross_entropy", logits);
  check_same_device("cross_entropy", logits, target);
  TG_CHECK(logits.dim() == 2, ShapeError, "cross_entropy: expected logits of shape (N, C), got ",
           shape_str(logits.shape()));
  TG_CHECK(target.dtype() == kInt64, DTypeError,
           "cross_entropy: expected target to hold int64 class indices, got ", dtype_name(target.dtype()));
  TG_CHECK(target.dim() == 1 && target.shape()[0] == logits.shape()[0], ShapeError,
           "cross_entropy: expected target of shape (", logits.shape()[0], "), got ", shape_str(target.shape()),
           " for logits of shape ", shape_str(logits.shape()));
  if (is_low_precision(logits.dtype())) {   // lse and count stay float32: only the backward reads them
    CrossEntropyResult r = cross_entropy(logits.to(kFloat32), target, args);
    r.loss = r.loss.to(logits.dtype());
    if (r.total.defined()) r.total = r.total.to(logits.dtype());
    return r;
  }
  const int64_t N = logits.shape()[0], C = logits.shape()[1];
  TG_CHECK(C > 0 || N == 0, ShapeError, "cross_entropy: logits have 0 classes");
  TG_CHECK(args.label_smoothing >= 0 && args.label_smoothing <= 1, Error,
           "cross_entropy: label_smoothing must be in [0, 1], got ", args.label_smoothing);
  if (target.device().is_cpu()) {   // CUDA targets: the kernel's device error flag, raised at the next sync
    const Tensor t = target.contiguous();
    for (int64_t i = 0; i < N; ++i) {
      const int64_t v = t.data<int64_t>()[i];
      if (!index_math::in_range(v, C) && softmax_math::ce_counts(v, args.ignore_index))
        throw cross_entropy_target_error(v, C);
    }
  }
  CrossEntropyResult r;
  r.loss = Tensor::empty({N}, logits.dtype(), logits.device());
  r.lse = Tensor::empty({N}, logits.dtype(), logits.device());
  if (args.total) r.total = Tensor::empty({}, logits.dtype(), logits.device());
  if (args.mean) r.count = Tensor::empty({}, logits.dtype(), logits.device());
  if (N > 0) {
    backend_for(logits.device()).cross_entropy(logits.contiguous(), target.contiguous(), args, r.loss, r.lse, r.total, r.count);
  } else {   // no rows: the sum is 0, the mean 0 / 0
    if (args.total) fill_(r.total, args.mean ? std::numeric_limits<double>::quiet_NaN() : 0.0);
    if (args.mean) fill_(r.count, 0.0);
  }
  return r;
}

Tensor cross_entropy_backward(const Tensor& logits, const Tensor& target, const CrossEntropyArgs& args,
                              const Tensor& lse, const Tensor& dloss, const Tensor& count) {
  TG_CHECK(!args.mean || count.defined(), Error, "cross_entropy_backward: the mean needs the forward's count");
  if (is_low_precision(logits.dtype()))   // lse and count are float32 (cross_entropy above)
    return cross_entropy_backward(logits.to(kFloat32), target, args, lse, as_dtype(dloss, kFloat32), count)
        .to(logits.dtype());
  Tensor dlogits = Tensor::empty(logits.shape(), logits.dtype(), logits.device());
  if (dlogits.numel() > 0)
    backend_for(logits.device())
        .cross_entropy_backward(logits.contiguous(), target.contiguous(), args, lse, dloss.expand({logits.shape()[0]}),
                                count, dlogits);
  return dlogits;
}

// ------------------------------------------------------------------------------------------------
// indexing

Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index) {
  check_defined("index_select", x);
  check_same_device("index_select", x, index);
  check_int64_index("index_select", index);
  TG_CHECK(index.dim() <= 1, ShapeError, "index_select: index must be 0-D or 1-D, got shape ",
           shape_str(index.shape()));
  dim = wrap_dim(dim, x.dim(), "index_select");
  TG_CHECK(x.dim() > 0 || index.numel() == 1, IndexError, "index_select: index to a 0-d tensor can have only 1 value, got ",
           index.numel(), " value(s)");   // the output keeps x's shape []: exactly one element
  const int64_t size = x.dim() ? x.shape()[dim] : 1;
  check_index_range("index_select", index, size, dim);
  Shape shape = x.shape();
  if (x.dim()) shape[dim] = index.numel();
  Tensor out = Tensor::empty(shape, x.dtype(), x.device());
  if (out.numel() > 0)
    backend_for(x.device()).index_select(x.contiguous(), dim, index.contiguous().reshape({index.numel()}), out);
  return out;
}

void index_add_(const Tensor& dst, int64_t dim, const Tensor& index, const Tensor& src) {
  check_same_device("index_add_", dst, src);
  check_same_device("index_add_", dst, index);
  check_same_dtype("index_add_", dst, src);
  check_int64_index("index_add_", index);
  dim = wrap_dim(dim, dst.dim(), "index_add_");
  check_index_range("index_add_", index, dst.dim() ? dst.shape()[dim] : 1, dim);
  TG_CHECK(dst.is_contiguous(), Error, "index_add_: destination must be contiguous");
  check_no_partial_overlap("index_add_", dst, src, /*same_view_ok=*/false);
  check_no_partial_overlap("index_add_", dst, index, false);
  if (src.numel() > 0)
    backend_for(dst.device()).index_add(dst, dim, index.contiguous().reshape({index.numel()}), src.contiguous());
  dst.storage()->bump_version();
}

namespace {
void check_gather_shapes(const char* op, const Tensor& x, int64_t dim, const Tensor& index) {
  TG_CHECK(index.dim() == x.dim(), ShapeError, op, ": index tensor must have the same number of dimensions as ",
           "input tensor (", shape_str(index.shape()), " vs ", shape_str(x.shape()), ")");
  for (int64_t d = 0; d < x.dim(); ++d)
    TG_CHECK(d == dim || index.shape()[d] <= x.shape()[d], ShapeError, op, ": size of index ",
             shape_str(index.shape()), " does not fit input ", shape_str(x.shape()), " at dimension ", d);
}
}  // namespace

Tensor gather(const Tensor& x, int64_t dim, const Tensor& index) {
  check_defined("gather", x);
  check_same_device("gather", x, index);
  check_int64_index("gather", index);
  dim = wrap_dim(dim, x.dim(), "gather");
  check_gather_shapes("gather", x, dim, index);
  check_index_range("gather", index, x.dim() ? x.shape()[dim] : 1, dim);
  Tensor out = Tensor::empty(index.shape(), x.dtype(), x.device());
  if (out.numel() > 0) backend_for(x.device()).gather(x, dim, index, out);
  return out;
}

void scatter_add_(const Tensor& dst, int64_t dim, const Tensor& index, const Tensor& src) {
  check_same_device("scatter_add_", dst, src);
  check_same_device("scatter_add_", dst, index);
  check_same_dtype("scatter_add_", dst, src);
  check_int64_index("scatter_add_", index);
  dim = wrap_dim(dim, dst.dim(), "scatter_add_");
  check_gather_shapes("scatter_add_", dst, dim, index);
  TG_CHECK(src.shape() == index.shape(), ShapeError, "scatter_add_: src shape ", shape_str(src.shape()),
           " must match index shape ", shape_str(index.shape()));
  check_index_range("scatter_add_", index, dst.dim() ? dst.shape()[dim] : 1, dim);
  check_no_internal_overlap("scatter_add_", dst);
  check_no_partial_overlap("scatter_add_", dst, src, /*same_view_ok=*/false);
  check_no_partial_overlap("scatter_add_", dst, index, false);
  if (src.numel() > 0) backend_for(dst.device()).scatter_add(dst, dim, index, src);
  dst.storage()->bump_version();
}

Tensor cat(const std::vector<Tensor>& xs, int64_t dim) {
  TG_CHECK(!xs.empty(), ShapeError, "cat: expected a non-empty list of tensors");
  const Tensor& first = xs[0];
  TG_CHECK(first.dim() > 0, ShapeError, "cat: zero-dimensional tensor cannot be concatenated");
  dim = wrap_dim(dim, first.dim(), "cat");
  Shape shape = first.shape();
  shape[dim] = 0;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const Tensor& x = xs[i];
    check_defined("cat", x);
    check_same_device("cat", first, x);
    TG_CHECK(x.dim() == first.dim(), ShapeError, "cat: tensors must have the same number of dimensions: got ",
             first.dim(), " and ", x.dim());
    for (int64_t d = 0; d < x.dim(); ++d)
      TG_CHECK(d == dim || x.shape()[d] == first.shape()[d], ShapeError, "cat: sizes of tensors must match except ",
               "in dimension ", dim, ". Expected size ", first.shape()[d], " but got size ", x.shape()[d],
               " for tensor number ", i, " in the list");
    TG_CHECK(!__builtin_add_overflow(shape[dim], x.shape()[dim], &shape[dim]), ShapeError, "cat: the sizes along ",
             "dimension ", dim, " add up to more than int64 can count");
  }
  DType dtype = first.dtype();   // Note [Type promotion]; the copies below convert
  for (const Tensor& x : xs) dtype = promote_types(dtype, x.dtype());
  Tensor out = Tensor::empty(shape, dtype, first.device());
  int64_t at = 0;
  for (const Tensor& x : xs) {
    if (x.numel() > 0) backend_for(out.device()).copy(x, out.narrow(dim, at, x.shape()[dim]));
    at += x.shape()[dim];
  }
  return out;
}

// Note [Sort order]
// ~~~~~~~~~~~~~~~~~
// sort, topk and kthvalue order rows as torch.sort(stable=True): a stable sort, so equal values keep
// their original order (ascending and descending alike, ties go to the lower index first); NaN is
// larger than every number (last ascending, first descending); -0 and +0 are equal. The backends only
// produce the index permutation (Backend::argsort); the values are x gathered at it, so they are x's
// elements bit for bit. The CPU runs std::stable_sort per row with that comparison; CUDA runs CUB's
// segmented radix sort (stable) on keys where every NaN has been made the positive quiet NaN
// (backend/cuda/sort.cu).
Sorted sort(const Tensor& x, int64_t dim, bool descending) {
  check_defined("sort", x);
  if (x.dim() == 0) {   // a 0-d x is its own sort
    wrap_dim(dim, 1, "sort");
    return {x.clone(), full({}, 0, kInt64, x.device())};
  }
  dim = wrap_dim(dim, x.dim(), "sort");
  const int64_t last = x.dim() - 1;
  TG_CHECK(x.device().is_cpu() || x.numel() <= std::numeric_limits<int32_t>::max(), ShapeError,
           "sort: a CUDA tensor of at most 2^31-1 elements, got ", x.numel());   // CUB's item count is an int
  const Tensor xt = x.transpose(dim, last).contiguous();   // rows along the sorted dim
  Tensor idx = Tensor::empty(xt.shape(), kInt64, x.device());
  Tensor vals = Tensor::empty(xt.shape(), x.dtype(), x.device());
  if (xt.numel() > 0) {
    Backend& be = backend_for(x.device());
    be.argsort(xt, descending, idx);
    be.gather(xt, last, idx, vals);   // the indices are in range by construction: no host check
  }
  return {vals.transpose(dim, last).contiguous(), idx.transpose(dim, last).contiguous()};
}

Sorted topk(const Tensor& x, int64_t k, int64_t dim, bool largest) {
  check_defined("topk", x);
  const int64_t d = wrap_dim(dim, std::max<int64_t>(x.dim(), 1), "topk");
  const int64_t size = x.dim() ? x.shape()[d] : 1;
  TG_CHECK(k >= 0 && k <= size, IndexError, "topk: k (", k, ") out of range for dimension ", d, " of size ", size,
           " (selected index k out of range)");
  Sorted s = sort(x, d, largest);
  if (x.dim() == 0) return s;
  return {s.values.narrow(d, 0, k).contiguous(), s.indices.narrow(d, 0, k).contiguous()};
}

Sorted kthvalue(const Tensor& x, int64_t k, int64_t dim, bool keepdim) {
  check_defined("kthvalue", x);
  const int64_t d = wrap_dim(dim, std::max<int64_t>(x.dim(), 1), "kthvalue");
  const int64_t size = x.dim() ? x.shape()[d] : 1;
  TG_CHECK(k >= 1 && k <= size, IndexError, "kthvalue: k (", k, ") out of range for dimension ", d, " of size ",
           size, " (selected number k out of range)");
  Sorted s = sort(x, d, false);
  if (x.dim() == 0) return s;
  Tensor v = s.values.narrow(d, k - 1, 1), i = s.indices.narrow(d, k - 1, 1);
  if (!keepdim) v = v.squeeze(d), i = i.squeeze(d);
  return {v.contiguous(), i.contiguous()};
}

}  // namespace prim
}  // namespace tg
