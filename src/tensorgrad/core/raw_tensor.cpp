// core/raw_tensor.cpp: Storage lifetime, RawTensor views (metadata only) and printing. The methods that need a
// device's allocator or a copy kernel (empty, clone, to) are defined on the backend floor, in
// backend/backend.cpp, which knows the devices.
#include "tensorgrad/core/raw_tensor.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <limits>
#include <sstream>
#include <type_traits>
#include <utility>
#include <vector>

#include "tensorgrad/core/error.h"
#include "tensorgrad/core/memory.h"

namespace tg {

Storage::Storage(std::size_t nbytes, Device device, Allocator* allocator)
    : data_(allocator->allocate(nbytes)), nbytes_(nbytes), device_(with_index(device)), allocator_(allocator) {}

Storage::~Storage() {
  if (tracked_) memory::detail::untrack(this);
  allocator_->deallocate(data_, nbytes_);
}

void Storage::describe(const Shape& shape, DType dtype) {
  if (nbytes_ < kReportedBytes || tracked_) return;
  shape_ = shape;
  dtype_ = dtype;
  const memory::detail::CurrentOp now = memory::detail::current_op();
  op_.store(now.name, std::memory_order_relaxed);
  op_backward_ = now.backward;
  memory::detail::track(this);
  tracked_ = true;
}

bool Storage::swap_bytes(Storage& other) noexcept {
  if (nbytes_ != other.nbytes_ || device_ != other.device_ || allocator_ != other.allocator_) return false;
  std::swap(data_, other.data_);
  ++version_;
  ++other.version_;
  return true;
}

RawTensor::RawTensor(std::shared_ptr<Storage> storage, Shape shape, Shape strides, int64_t offset, DType dtype)
    : storage_(std::move(storage)), shape_(std::move(shape)), strides_(std::move(strides)), offset_(offset),
      numel_(numel_of(shape_)), dtype_(dtype) {}

int64_t RawTensor::size(int64_t d) const { return shape_[wrap_dim(d, dim(), "size")]; }

bool RawTensor::is_contiguous() const {
  if (numel_ == 0) return true;
  int64_t expect = 1;
  for (int64_t d = dim() - 1; d >= 0; --d) {
    if (shape_[d] == 1) continue;
    if (strides_[d] != expect) return false;
    expect *= shape_[d];
  }
  return true;
}

Shape infer_shape(const Shape& requested, int64_t numel, const char* op) {
  Shape out = requested;
  int64_t known = 1, infer = -1;
  bool known_overflows = false;   // the product of the given sizes exceeds int64 (and none is 0)
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      TG_CHECK(infer < 0, ShapeError, op, ": only one dimension can be inferred");
      infer = static_cast<int64_t>(i);
    } else {
      TG_CHECK(out[i] >= 0, ShapeError, op, ": invalid shape dimension ", out[i], " in ", shape_str(requested));
      if (known != 0 && out[i] != 0) known_overflows |= __builtin_mul_overflow(known, out[i], &known);
      if (out[i] == 0) known = 0;
    }
  }
  if (known == 0) known_overflows = false;
  if (infer >= 0) {
    TG_CHECK(!known_overflows && known != 0 && numel % known == 0, ShapeError, op, ": shape '", shape_str(requested),
             "' is invalid for input of size ", numel);
    out[infer] = numel / known;
  }
  TG_CHECK(checked_numel(out, op) == numel, ShapeError, op, ": shape '", shape_str(requested),
           "' is invalid for input of size ", numel);
  return out;
}

RawTensor RawTensor::as_strided(const Shape& shape, const Shape& strides, int64_t offset) const {
  return RawTensor(storage_, shape, strides, offset, dtype_);
}

RawTensor RawTensor::view(const Shape& requested) const {
  const Shape shape = infer_shape(requested, numel_, "view");
  if (is_contiguous()) return as_strided(shape, contiguous_strides(shape), offset_);
  // Non-contiguous: each chunk of old dims that stays contiguous maps onto a run of new dims
  // (PyTorch's computeStride). Fails when a new dim spans a stride jump.
  Shape new_strides(shape.size());
  int64_t view_d = static_cast<int64_t>(shape.size()) - 1;
  int64_t chunk_base_stride = strides_.empty() ? 1 : strides_.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t d = dim() - 1; d >= 0; --d) {
    tensor_numel *= shape_[d];
    if (d == 0 || (shape_[d - 1] != 1 && strides_[d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || shape[view_d] == 1)) {
        new_strides[view_d] = view_numel * chunk_base_stride;
        view_numel *= shape[view_d];
        --view_d;
      }
      TG_CHECK(view_numel == tensor_numel, ShapeError, "view: view size is not compatible with input tensor's size ",
               "and stride (at least one dimension spans across two contiguous subspaces) for shape ",
               shape_str(shape_), " with strides ", shape_str(strides_), "; use .reshape(...) instead");
      if (d > 0) {
        chunk_base_stride = strides_[d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  for (; view_d >= 0; --view_d) new_strides[view_d] = 1;   // trailing size-1 dims
  return as_strided(shape, new_strides, offset_);
}

RawTensor RawTensor::reshape(const Shape& requested) const {
  const Shape shape = infer_shape(requested, numel_, "reshape");
  try {
    return view(shape);
  } catch (const ShapeError&) {
    return contiguous().view(shape);
  }
}

RawTensor RawTensor::transpose(int64_t d0, int64_t d1) const {
  d0 = wrap_dim(d0, dim(), "transpose");
  d1 = wrap_dim(d1, dim(), "transpose");
  if (dim() == 0) return *this;
  Shape s = shape_, st = strides_;
  std::swap(s[d0], s[d1]);
  std::swap(st[d0], st[d1]);
  return as_strided(s, st, offset_);
}

RawTensor RawTensor::permute(const std::vector<int64_t>& dims) const {
  TG_CHECK(static_cast<int64_t>(dims.size()) == dim(), ShapeError, "permute: number of dims don't match (got ",
           dims.size(), " dims for a tensor of shape ", shape_str(shape_), ")");
  std::vector<bool> seen(dims.size(), false);
  Shape s(dims.size()), st(dims.size());
  for (std::size_t i = 0; i < dims.size(); ++i) {
    const int64_t d = wrap_dim(dims[i], dim(), "permute");
    TG_CHECK(!seen[d], ShapeError, "permute: repeated dim ", dims[i]);
    seen[d] = true;
    s[i] = shape_[d];
    st[i] = strides_[d];
  }
  return as_strided(s, st, offset_);
}

RawTensor RawTensor::expand(const Shape& shape) const {
  TG_CHECK(shape.size() >= shape_.size(), ShapeError, "expand: the number of sizes provided (", shape.size(),
           ") must be greater or equal to the number of dimensions in the tensor (", shape_.size(), ")");
  const std::size_t lead = shape.size() - shape_.size();
  Shape s(shape.size()), st(shape.size());
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i < lead) {
      TG_CHECK(shape[i] >= 0, ShapeError, "expand: invalid size ", shape[i], " for a new leading dimension");
      s[i] = shape[i];
      st[i] = 0;
      continue;
    }
    const int64_t have = shape_[i - lead];
    const int64_t want = shape[i] == -1 ? have : shape[i];
    TG_CHECK(want == have || have == 1, ShapeError, "expand: the expanded size of the tensor (", want,
             ") must match the existing size (", have, ") at non-singleton dimension ", i, ".  Target sizes: ",
             shape_str(shape), ".  Tensor sizes: ", shape_str(shape_));
    s[i] = want;
    st[i] = want == have ? strides_[i - lead] : 0;
  }
  checked_numel(s, "expand");   // negative sizes, and views whose element count overflows int64
  return as_strided(s, st, offset_);
}

RawTensor RawTensor::squeeze(int64_t d) const {
  if (dim() == 0) {
    wrap_dim(d, 0, "squeeze");
    return *this;
  }
  d = wrap_dim(d, dim(), "squeeze");
  if (shape_[d] != 1) return *this;
  Shape s = shape_, st = strides_;
  s.erase(s.begin() + d);
  st.erase(st.begin() + d);
  return as_strided(s, st, offset_);
}

RawTensor RawTensor::squeeze() const {
  Shape s, st;
  for (int64_t d = 0; d < dim(); ++d)
    if (shape_[d] != 1) {
      s.push_back(shape_[d]);
      st.push_back(strides_[d]);
    }
  return as_strided(s, st, offset_);
}

RawTensor RawTensor::unsqueeze(int64_t d) const {
  d = wrap_dim(d, dim() + 1, "unsqueeze");
  Shape s = shape_, st = strides_;
  int64_t stride = 1;   // a size-1 dim's stride is never used to step; saturate for zero-size tensors' huge strides
  if (d < dim() && __builtin_mul_overflow(strides_[d], shape_[d], &stride)) stride = std::numeric_limits<int64_t>::max();
  s.insert(s.begin() + d, 1);
  st.insert(st.begin() + d, stride);
  return as_strided(s, st, offset_);
}

RawTensor RawTensor::narrow(int64_t d, int64_t start, int64_t length) const {
  TG_CHECK(dim() > 0, IndexError, "narrow: cannot be applied to a 0-dim tensor");
  d = wrap_dim(d, dim(), "narrow");
  TG_CHECK(start >= 0 && length >= 0 && start <= shape_[d] - length, IndexError, "narrow: start (", start,
           ") + length (", length, ") exceeds dimension size (", shape_[d], ")");
  Shape s = shape_;
  s[d] = length;
  return as_strided(s, strides_, offset_ + start * strides_[d]);
}

RawTensor RawTensor::select(int64_t d, int64_t index) const {
  TG_CHECK(dim() > 0, IndexError, "select: cannot be applied to a 0-dim tensor");
  d = wrap_dim(d, dim(), "select");
  const int64_t size = shape_[d];
  TG_CHECK(index >= -size && index < size, IndexError, "select: index ", index,
           " is out of bounds for dimension ", d, " with size ", size);
  if (index < 0) index += size;
  Shape s = shape_, st = strides_;
  s.erase(s.begin() + d);
  st.erase(st.begin() + d);
  return as_strided(s, st, offset_ + index * strides_[d]);
}

RawTensor RawTensor::contiguous() const { return is_contiguous() ? *this : clone(); }

double RawTensor::item() const {
  TG_CHECK(defined(), Error, "item: the tensor is undefined");
  TG_CHECK(numel_ == 1, ShapeError, "item: a Tensor with ", numel_, " elements cannot be converted to Scalar");
  const RawTensor host = to(Device::cpu());
  return dispatch_dtype(dtype_, [&](auto t) { return static_cast<double>(*host.data<decltype(t)>()); });
}

// ------------------------------------------------------------------------------------------------
// Printing, in PyTorch's layout: tensor([[ 1.0000, -2.0000],\n        [ 3.0000,  4.0000]])

std::string tensor_meta_str(const RawTensor& t) {
  return detail::cat("[", dtype_name(t.dtype()), " ", shape_str(t.shape()), "]");
}

namespace {

std::string format_value(double v, int64_t iv, DType dtype, bool int_like, int precision, bool sci) {
  char buf[64];
  if (dtype == kBool) std::snprintf(buf, sizeof buf, "%s", iv != 0 ? "True" : "False");   // as PyTorch
  else if (!is_floating(dtype)) std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(iv));   // exact
  else if (std::isnan(v)) std::snprintf(buf, sizeof buf, "nan");
  else if (std::isinf(v)) std::snprintf(buf, sizeof buf, v > 0 ? "inf" : "-inf");
  else if (sci) std::snprintf(buf, sizeof buf, "%.*e", precision, v);
  else if (int_like) std::snprintf(buf, sizeof buf, "%.0f.", v);
  else std::snprintf(buf, sizeof buf, "%.*f", precision, v);
  return buf;
}

// PyTorch's print options: tensors of more than kSummarizeAbove elements show the first and last
// kEdgeItems entries of each longer dim, with "..." between.
constexpr int64_t kSummarizeAbove = 1000;
constexpr int64_t kEdgeItems = 3;

}  // namespace

std::ostream& operator<<(std::ostream& os, const RawTensor& t) {
  if (!t.defined()) return os << "tensor(undefined)";
  const RawTensor host = t.to(Device::cpu());
  const int64_t nd = host.dim();
  const Shape& s = host.shape();
  // The indices shown along each dim; gap[d] is the position before which "..." goes (-1: none).
  const bool summarize = host.numel() > kSummarizeAbove;
  std::vector<std::vector<int64_t>> sel(static_cast<std::size_t>(nd));
  std::vector<int64_t> gap(static_cast<std::size_t>(nd), -1);
  int64_t count = 1;
  for (int64_t d = 0; d < nd; ++d) {
    auto& v = sel[static_cast<std::size_t>(d)];
    if (summarize && s[d] > 2 * kEdgeItems) {
      for (int64_t i = 0; i < kEdgeItems; ++i) v.push_back(i);
      for (int64_t i = s[d] - kEdgeItems; i < s[d]; ++i) v.push_back(i);
      gap[static_cast<std::size_t>(d)] = kEdgeItems;
    } else {
      for (int64_t i = 0; i < s[d]; ++i) v.push_back(i);
    }
    count *= static_cast<int64_t>(v.size());
  }
  // Read only the shown elements (an odometer over the selected positions), in storage precision.
  std::vector<double> vals;
  std::vector<int64_t> ivals;
  vals.reserve(static_cast<std::size_t>(count));
  ivals.reserve(static_cast<std::size_t>(count));
  {
    std::vector<int64_t> pos(static_cast<std::size_t>(nd), 0);
    dispatch_dtype(host.dtype(), [&](auto z) {
      using T = decltype(z);
      const T* base = static_cast<const T*>(host.storage()->data());
      for (int64_t i = 0; i < count; ++i) {
        int64_t off = host.offset();
        for (int64_t d = 0; d < nd; ++d) off += sel[static_cast<std::size_t>(d)][static_cast<std::size_t>(pos[d])] * host.strides()[d];
        vals.push_back(static_cast<double>(base[off]));
        ivals.push_back(std::is_integral<T>::value ? static_cast<int64_t>(base[off]) : 0);
        for (int64_t d = nd - 1; d >= 0; --d) {
          if (++pos[d] < static_cast<int64_t>(sel[static_cast<std::size_t>(d)].size())) break;
          pos[d] = 0;
        }
      }
    });
  }
  bool int_like = true;
  double max_abs = 0, min_abs = 0;
  bool first = true;
  for (double v : vals) {
    if (!std::isfinite(v)) continue;
    if (v != std::floor(v)) int_like = false;
    const double a = std::fabs(v);
    if (first || a > max_abs) max_abs = a;
    if (a != 0 && (first || min_abs == 0 || a < min_abs)) min_abs = a;
    first = false;
  }
  const bool sci = !int_like && (max_abs >= 1e8 || (min_abs != 0 && min_abs < 1e-4) ||
                                 (min_abs != 0 && max_abs / min_abs > 1e3 && max_abs > 1e3));
  std::vector<std::string> strs;
  std::size_t width = 0;
  for (std::size_t i = 0; i < vals.size(); ++i) {
    strs.push_back(format_value(vals[i], ivals[i], t.dtype(), int_like, 4, sci));
    width = std::max(width, strs.back().size());
  }
  os << "tensor(";
  if (nd == 0) {
    os << strs[0];
  } else if (count == 0) {
    os << "[]";
    if (nd > 1) os << ", size=(" << shape_str(s).substr(1, shape_str(s).size() - 2) << ")";
  } else {
    // Iterative nested printing: an odometer over the shown positions, brackets opened and closed
    // as it rolls; crossing a dim's gap prints "..." at that level.
    for (int64_t d = 0; d < nd; ++d) os << '[';
    std::vector<int64_t> pos(static_cast<std::size_t>(nd), 0);
    for (int64_t i = 0; i < count; ++i) {
      os << std::setw(static_cast<int>(width)) << strs[static_cast<std::size_t>(i)];
      int64_t closed = 0;
      for (int64_t d = nd - 1; d >= 0; --d) {
        if (++pos[d] < static_cast<int64_t>(sel[static_cast<std::size_t>(d)].size())) break;
        pos[d] = 0;
        ++closed;
      }
      for (int64_t c = 0; c < closed; ++c) os << ']';
      if (i + 1 == count) break;
      const int64_t moved = nd - 1 - closed;   // the dim whose position advanced
      const bool elide = pos[moved] == gap[static_cast<std::size_t>(moved)];
      os << ',';
      if (closed == 0) {
        os << (elide ? "  ..., " : " ");
        continue;
      }
      auto separator = [&] {
        for (int64_t c = 1; c < closed; ++c) os << '\n';
        os << '\n' << std::string(static_cast<std::size_t>(7 + nd - closed), ' ');
      };
      separator();
      if (elide) {
        os << "...,";
        separator();
      }
      for (int64_t c = 0; c < closed; ++c) os << '[';
    }
  }
  // PyTorch names the dtype unless it is one its printing implies (float32, int64, bool).
  if (t.dtype() != kFloat32 && t.dtype() != kInt64 && t.dtype() != kBool) os << ", dtype=" << dtype_name(t.dtype());
  if (t.device().is_cuda()) os << ", device='" << t.device() << "'";
  os << ')';
  return os;
}

}  // namespace tg
