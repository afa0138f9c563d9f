// core/raw_tensor.cpp: Storage lifetime, RawTensor views (metadata only) and printing. The methods that need a
// device's allocator or a copy kernel (empty, clone, to) are defined on the backend floor, in
// backend/backend.cpp, which knows the devices.
#include "tensorgrad/core/raw_tensor.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
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

// PyTorch's default print options (torch._tensor_str.PRINT_OPTS): tensors of more than
// kSummarizeAbove elements show the first and last kEdgeItems entries of each longer dim, with "..."
// between; floats get kPrecision digits; rows wrap at kLineWidth characters.
constexpr int64_t kSummarizeAbove = 1000;
constexpr int64_t kEdgeItems = 3;
constexpr int kPrecision = 4;
constexpr int64_t kLineWidth = 80;
constexpr int64_t kIndent = 7;   // "tensor("

/// Note [Printing numbers]
/// How elements print is torch/_tensor_str.py's _Formatter, rule for rule, over the elements shown
/// (all of them, or the summarized edges):
/// - Integer and bool tensors print each value exactly ("True"/"False" for bool), right-aligned to
///   the longest.
/// - A floating tensor looks at its finite nonzero values only. With none (all zeros, NaN or
///   infinities) it prints as integers ("0.", "-0.", "nan", "inf") and pads to width 1, i.e. not at all.
///   Otherwise int_mode holds when every such value is integral, and sci_mode when, of their absolute
///   values, max / min > 1000, max > 1e8 or min < 1e-4 (all strict, computed in double). sci_mode
///   wins over int_mode: "%.4e"; else int_mode: "%.0f" and a "." after finite values; else "%.4f".
///   NaN and infinities print "nan", "inf", "-inf" in every mode.
/// - The width every element is right-aligned to is the longest formatted finite nonzero value (at
///   least 1): a zero, NaN or infinity longer than that ("-0.0000" among "1.5000") is not padded, and
///   does not widen the others.
/// float16 and bfloat16 values are formatted as the doubles they equal, as PyTorch's item() does.
class Formatter {
 public:
  Formatter(const std::vector<double>& vals, const std::vector<int64_t>& ivals, DType dtype)
      : dtype_(dtype), floating_(is_floating(dtype)) {
    if (!floating_) {
      for (std::size_t i = 0; i < vals.size(); ++i) width_ = std::max(width_, text(vals[i], ivals[i]).size());
      return;
    }
    double lo = 0, hi = 0;
    bool any = false;
    for (double v : vals) {
      if (!std::isfinite(v) || v == 0) continue;
      const double a = std::fabs(v);
      lo = any ? std::min(lo, a) : a;
      hi = any ? std::max(hi, a) : a;
      any = true;
      if (v != std::ceil(v)) int_mode_ = false;
    }
    if (!any) return;   // int_mode, not sci_mode, width 1
    sci_ = hi / lo > 1000.0 || hi > 1.0e8 || lo < 1.0e-4;
    for (double v : vals)
      if (std::isfinite(v) && v != 0) width_ = std::max(width_, text(v, 0).size());
  }

  /// One element, right-aligned to width().
  std::string format(double v, int64_t iv) const {
    std::string s = text(v, iv);
    if (s.size() < width_) s.insert(0, width_ - s.size(), ' ');
    return s;
  }
  std::size_t width() const { return width_; }

 private:
  std::string text(double v, int64_t iv) const {
    if (dtype_ == kBool) return iv != 0 ? "True" : "False";
    char buf[64];
    if (!floating_) std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(iv));   // exact, also int64
    else if (std::isnan(v)) return "nan";   // printf would give "-nan" for a NaN with its sign bit set
    else if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    else if (sci_) std::snprintf(buf, sizeof buf, "%.*e", kPrecision, v);
    else if (int_mode_) std::snprintf(buf, sizeof buf, "%.0f.", v);
    else std::snprintf(buf, sizeof buf, "%.*f", kPrecision, v);
    return buf;
  }

  DType dtype_;
  bool floating_;
  bool int_mode_ = true, sci_ = false;
  std::size_t width_ = 1;
};

/// The elements shown and the body of the printout, "[[1., 2.],\n        [3., 4.]]", in PyTorch's
/// layout: rows wrap to lines of PyTorch's linewidth (as its _vector_str does, counting each element
/// as width() + 2 characters and a summarized row's "..." as one element).
std::string body_str(const RawTensor& host) {
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
        for (int64_t d = 0; d < nd; ++d)
          off += sel[static_cast<std::size_t>(d)][static_cast<std::size_t>(pos[d])] * host.strides()[d];
        vals.push_back(static_cast<double>(base[off]));
        ivals.push_back(std::is_integral<T>::value ? static_cast<int64_t>(base[off]) : 0);
        for (int64_t d = nd - 1; d >= 0; --d) {
          if (++pos[d] < static_cast<int64_t>(sel[static_cast<std::size_t>(d)].size())) break;
          pos[d] = 0;
        }
      }
    });
  }
  const Formatter fmt(vals, ivals, host.dtype());
  if (nd == 0) return fmt.format(vals[0], ivals[0]);
  std::ostringstream os;
  // A row (the last dim) is nested nd - 1 brackets deep: its continuation lines start one column
  // right of its bracket, and it fits max(1, floor((linewidth - indent) / (width + 2))) elements a line.
  const int64_t row_indent = kIndent + nd - 1;
  const int64_t per_line = std::max<int64_t>(1, (kLineWidth - row_indent) / (static_cast<int64_t>(fmt.width()) + 2));
  int64_t col = 0;   // the position in its row of the element just printed, the row's "..." counted
  const auto next_in_row = [&] {
    ++col;
    if (col % per_line == 0) os << ",\n" << std::string(static_cast<std::size_t>(row_indent + 1), ' ');
    else os << ", ";
  };
  // Iterative nested printing: an odometer over the shown positions, brackets opened and closed as
  // it rolls; crossing a dim's gap prints "..." at that level.
  for (int64_t d = 0; d < nd; ++d) os << '[';
  std::vector<int64_t> pos(static_cast<std::size_t>(nd), 0);
  for (int64_t i = 0; i < count; ++i) {
    os << fmt.format(vals[static_cast<std::size_t>(i)], ivals[static_cast<std::size_t>(i)]);
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
    if (closed == 0) {
      next_in_row();
      if (elide) {
        os << " ...";
        next_in_row();
      }
      continue;
    }
    col = 0;
    os << ',';
    auto separator = [&] {
      for (int64_t c = 1; c < closed; ++c) os << '\n';
      os << '\n' << std::string(static_cast<std::size_t>(kIndent + nd - closed), ' ');
    };
    separator();
    if (elide) {
      os << "...,";
      separator();
    }
    for (int64_t c = 0; c < closed; ++c) os << '[';
  }
  return os.str();
}

}  // namespace

namespace detail {

std::string tensor_repr(const RawTensor& t, const std::vector<std::string>& extra_suffixes) {
  if (!t.defined()) return "tensor(undefined)";
  const RawTensor host = t.to(Device::cpu());
  std::string out = "tensor(" + (host.numel() == 0 ? std::string("[]") : body_str(host));
  // PyTorch's suffixes, in its order (torch._tensor_str._str_intern): the device when not the CPU; for
  // an empty tensor its size unless 1-D, and its dtype unless float32 (nothing shows it is int64);
  // otherwise the dtype unless one its printing implies (float32, int64, bool). Then the caller's.
  std::vector<std::string> suffixes;
  if (t.device().is_cuda()) suffixes.push_back(detail::cat("device='", t.device(), "'"));
  if (host.numel() == 0) {
    if (host.dim() != 1) {
      const std::string dims = shape_str(host.shape());
      suffixes.push_back("size=(" + dims.substr(1, dims.size() - 2) + ")");
    }
    if (t.dtype() != kFloat32) suffixes.push_back(detail::cat("dtype=", dtype_name(t.dtype())));
  } else if (t.dtype() != kFloat32 && t.dtype() != kInt64 && t.dtype() != kBool) {
    suffixes.push_back(detail::cat("dtype=", dtype_name(t.dtype())));
  }
  suffixes.insert(suffixes.end(), extra_suffixes.begin(), extra_suffixes.end());
  // torch._tensor_str._add_suffixes: a suffix that would pass the line width starts a new line,
  // indented under the first bracket. last_line_len is PyTorch's count, 2 more than the characters
  // on the last line until a suffix has wrapped.
  const std::size_t newline = out.rfind('\n');
  int64_t last_line_len = static_cast<int64_t>(out.size()) - (newline == std::string::npos ? -1 : int64_t(newline)) + 1;
  for (const std::string& suffix : suffixes) {
    const int64_t len = static_cast<int64_t>(suffix.size());
    if (last_line_len + len + 2 > kLineWidth) {
      out += ",\n" + std::string(static_cast<std::size_t>(kIndent), ' ') + suffix;
      last_line_len = kIndent + len;
    } else {
      out += ", " + suffix;
      last_line_len += len + 2;
    }
  }
  return out + ")";
}

}  // namespace detail

std::ostream& operator<<(std::ostream& os, const RawTensor& t) { return os << detail::tensor_repr(t, {}); }

}  // namespace tg
