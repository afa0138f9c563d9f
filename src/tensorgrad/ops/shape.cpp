// ops/shape.cpp: views (reshape, view, transpose, permute, squeeze, unsqueeze, expand), contiguous,
// flatten, cat and stack; flip, roll, repeat, repeat_interleave and pad, which copy and are compositions of
// index_select, narrow, cat, expand and reshape (no kernel of their own: they run on every backend). Views share storage with their input (RawTensor view methods in
// core/raw_tensor.cpp); their backward maps the gradient back to the input's layout.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "tensorgrad/prim/prim.h"
#include "tensorgrad/ops/ops.h"
#include "tensorgrad/ops/rules.h"

namespace tg {

namespace {
/// A view op whose gradient is the output gradient reshaped to the input's shape.
Tensor reshaping_view(const char* name, const Tensor& x, RawTensor out) {
  const Shape in_shape = x.shape();
  return mark_view(record(name, std::move(out), {x}, [in_shape](const auto& grad, auto& g) {
                     g.set(0, grad.reshape(in_shape));                   // same elements, input's shape
                   }),
                   x);
}
}  // namespace

Tensor reshape(const Tensor& x, const Shape& shape) { return reshaping_view("reshape", x, x.data().reshape(shape)); }
Tensor view(const Tensor& x, const Shape& shape) { return reshaping_view("view", x, x.data().view(shape)); }
Tensor squeeze(const Tensor& x) { return reshaping_view("squeeze", x, x.data().squeeze()); }
Tensor squeeze(const Tensor& x, int64_t dim) { return reshaping_view("squeeze", x, x.data().squeeze(dim)); }
Tensor unsqueeze(const Tensor& x, int64_t dim) { return reshaping_view("unsqueeze", x, x.data().unsqueeze(dim)); }

Tensor flatten(const Tensor& x, int64_t start_dim, int64_t end_dim) {
  if (x.dim() == 0) return reshape(x, {1});
  start_dim = wrap_dim(start_dim, x.dim(), "flatten");
  end_dim = wrap_dim(end_dim, x.dim(), "flatten");
  TG_CHECK(start_dim <= end_dim, IndexError, "flatten: start_dim (", start_dim, ") cannot come after end_dim (",
           end_dim, ")");
  Shape s(x.shape().begin(), x.shape().begin() + start_dim);
  // the merged size, checked: a zero-size tensor's other sizes can multiply past int64
  s.push_back(checked_numel(Shape(x.shape().begin() + start_dim, x.shape().begin() + end_dim + 1), "flatten"));
  s.insert(s.end(), x.shape().begin() + end_dim + 1, x.shape().end());
  return reshape(x, s);
}

Tensor transpose(const Tensor& x, int64_t d0, int64_t d1) {
  return mark_view(record("transpose", x.data().transpose(d0, d1), {x}, [d0, d1](const auto& grad, auto& g) {
                     g.set(0, grad.transpose(d0, d1));                   // swap the dims back
                   }),
                   x);
}

Tensor t(const Tensor& x) {
  TG_CHECK(x.dim() <= 2, ShapeError, "t: expects a tensor with <= 2 dimensions, but got shape ", shape_str(x.shape()));
  return x.dim() < 2 ? reshaping_view("t", x, x.data()) : transpose(x, 0, 1);
}

Tensor permute(const Tensor& x, const std::vector<int64_t>& dims) {
  RawTensor out = x.data().permute(dims);
  std::vector<int64_t> inverse(dims.size());
  for (std::size_t i = 0; i < dims.size(); ++i) inverse[wrap_dim(dims[i], x.dim(), "permute")] = static_cast<int64_t>(i);
  return mark_view(record("permute", out, {x}, [inverse](const auto& grad, auto& g) {
                     g.set(0, grad.permute(inverse));                    // the inverse permutation
                   }),
                   x);
}

Tensor expand(const Tensor& x, const Shape& shape) {
  // The gradient keeps the expanded shape: the engine sums it back to the input's shape.
  return mark_view(record("expand", x.data().expand(shape), {x}, [](const auto& grad, auto& g) {
                     g.set(0, grad);                                     // summed over broadcast dims by the engine
                   }),
                   x);
}

Tensor contiguous(const Tensor& x) {
  if (x.is_contiguous()) return x;
  return record("contiguous", x.data().contiguous(), {x}, [](const auto& grad, auto& g) {
    g.set(0, grad);                                                       // identity
  });
}

Tensor clone(const Tensor& x) {
  return record("clone", x.data().clone(), {x}, [](const auto& grad, auto& g) {
    g.set(0, grad);                                                       // identity
  });
}

Tensor cat(const std::vector<Tensor>& xs, int64_t dim) {
  std::vector<RawTensor> ts;
  ts.reserve(xs.size());
  for (const Tensor& v : xs) ts.push_back(v.data());
  RawTensor out = prim::cat(ts, dim);
  dim = wrap_dim(dim, out.dim(), "cat");
  std::vector<int64_t> sizes;
  for (const RawTensor& t : ts) sizes.push_back(t.shape()[dim]);
  return record("cat", out, xs, [sizes, dim](const auto& grad, auto& g) {
    int64_t at = 0;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      if (g.need(i)) g.set(i, grad.narrow(dim, at, sizes[i]));          // each input's slice of the output
      at += sizes[i];
    }
  });
}

Tensor stack(const std::vector<Tensor>& xs, int64_t dim) {
  TG_CHECK(!xs.empty(), ShapeError, "stack: expects a non-empty list of tensors");
  dim = wrap_dim(dim, xs[0].dim() + 1, "stack");
  for (std::size_t i = 1; i < xs.size(); ++i)
    TG_CHECK(xs[i].shape() == xs[0].shape(), ShapeError, "stack: expects each tensor to be equal size, but got ",
             shape_str(xs[0].shape()), " at entry 0 and ", shape_str(xs[i].shape()), " at entry ", i);
  std::vector<Tensor> parts;
  parts.reserve(xs.size());
  for (const Tensor& v : xs) parts.push_back(unsqueeze(v, dim));   // composite: no backward of its own
  return cat(parts, dim);
}

namespace {
/// Each of dims wrapped against rank, once each (ShapeError naming op for a repeat).
std::vector<int64_t> distinct_dims(const Shape& dims, const Shape& shape, const char* op) {
  std::vector<int64_t> out;
  for (int64_t d : dims) {
    const int64_t w = wrap_dim(d, static_cast<int64_t>(shape.size()), op);
    for (int64_t seen : out)
      TG_CHECK(seen != w, ShapeError, op, ": dim ", w, " appears multiple times in the list of dims ", shape_str(dims),
               " (input of shape ", shape_str(shape), ")");
    out.push_back(w);
  }
  return out;
}
}  // namespace

Tensor flip(const Tensor& x, IntArrayRef dims) {
  const std::vector<int64_t> ds = distinct_dims(dims, x.shape(), "flip");
  if (x.dim() == 0) return clone(x);
  Tensor y = x;
  for (int64_t d : ds) {
    // the positions n-1, ..., 0 along d through index_select (its gradient adds back to the same positions)
    const int64_t n = x.shape()[d];
    const RawTensor up = prim::arange(n, kInt64, x.device());
    y = index_select(y, d, Tensor(prim::sub(prim::full({}, static_cast<double>(n - 1), kInt64, x.device()), up)));
  }
  return ds.empty() ? clone(x) : y;
}

Tensor roll(const Tensor& x, IntArrayRef shifts, IntArrayRef dims) {
  if (dims.empty()) {   // over the flattened x, then back to its shape
    TG_CHECK(shifts.size() == 1, ShapeError, "roll: shifts ", shape_str(shifts),
             " must have one entry when no dims are given (input of shape ", shape_str(x.shape()), ")");
    return reshape(roll(flatten(x), shifts, {0}), x.shape());
  }
  TG_CHECK(shifts.size() == dims.size(), ShapeError, "roll: shifts and dimensions must align. shifts: ", shifts.size(),
           ", dims: ", dims.size());
  TG_CHECK(x.dim() > 0, IndexError, "roll: cannot roll a 0-dim tensor along dims ", shape_str(dims));
  Tensor y = x;
  bool copied = false;
  for (std::size_t i = 0; i < dims.size(); ++i) {
    const int64_t d = wrap_dim(dims[i], x.dim(), "roll"), n = x.shape()[d];
    if (n == 0) continue;
    const int64_t s = ((shifts[i] % n) + n) % n;   // element j moves to (j + s) mod n
    if (s == 0) continue;
    y = cat({narrow(y, d, n - s, s), narrow(y, d, 0, n - s)}, d);
    copied = true;
  }
  return copied ? y : clone(x);
}

Tensor repeat(const Tensor& x, IntArrayRef repeats) {
  const int64_t m = static_cast<int64_t>(repeats.size());
  TG_CHECK(m >= x.dim(), ShapeError, "repeat: number of dimensions of repeat dims ", shape_str(repeats),
           " can not be smaller than number of dimensions of tensor ", shape_str(x.shape()));
  for (int64_t r : repeats)
    TG_CHECK(r >= 0, Error, "repeat: trying to create tensor with negative dimension ", r, ": repeats ", shape_str(repeats));
  // x padded with leading 1s to m dims (s_0, ..., s_m-1), viewed as (1, s_0, 1, s_1, ...), expanded to
  // (r_0, s_0, r_1, s_1, ...) and reshaped (a copy) to (r_0 s_0, r_1 s_1, ...): the tiles in order
  Shape padded(static_cast<std::size_t>(m - x.dim()), 1);
  padded.insert(padded.end(), x.shape().begin(), x.shape().end());
  Shape interleaved, expanded, out;
  for (int64_t i = 0; i < m; ++i) {
    interleaved.push_back(1);
    interleaved.push_back(padded[i]);
    expanded.push_back(repeats[i]);
    expanded.push_back(padded[i]);
    out.push_back(checked_numel({repeats[i], padded[i]}, "repeat"));
  }
  checked_numel(out, "repeat");
  // all ones: the reshape below would be a view of x, and repeat always copies
  if (std::all_of(repeats.begin(), repeats.end(), [](int64_t r) { return r == 1; })) return clone(reshape(x, out));
  return contiguous(reshape(expand(reshape(x, interleaved), expanded), out));
}

Tensor repeat_interleave(const Tensor& x, int64_t repeats, std::optional<int64_t> dim) {
  TG_CHECK(repeats >= 0, Error, "repeat_interleave: repeats can not be negative, got ", repeats);
  if (!dim) return repeat_interleave(flatten(x), repeats, 0);   // over the flattened x, as PyTorch
  const int64_t d = wrap_dim(*dim, x.dim(), "repeat_interleave");
  if (x.dim() == 0) return repeat_interleave(reshape(x, {1}), repeats, 0);
  if (repeats == 1) return clone(x);   // the reshape below would be a view of x; repeat_interleave copies
  // (..., n, ...) -> (..., n, 1, ...) -> expanded (..., n, repeats, ...) -> (..., n repeats, ...), a copy
  Shape expanded = x.shape(), out = x.shape();
  expanded.insert(expanded.begin() + d + 1, repeats);
  out[d] = checked_numel({x.shape()[d], repeats}, "repeat_interleave");
  checked_numel(out, "repeat_interleave");
  return contiguous(reshape(expand(unsqueeze(x, d + 1), expanded), out));
}

namespace {
/// The input position each output position of dim d reads under a non-constant pad of (left, right):
/// reflect mirrors about the edge element, replicate repeats it, circular wraps around.
RawTensor pad_positions(int64_t n, int64_t left, int64_t right, const std::string& mode, Device device) {
  RawTensor index = prim::empty({n + left + right}, kInt64, Device());
  int64_t* p = index.data<int64_t>();
  for (int64_t o = 0; o < n + left + right; ++o) {
    int64_t i = o - left;
    if (mode == "reflect") i = i < 0 ? -i : (i >= n ? 2 * (n - 1) - i : i);
    else if (mode == "replicate") i = i < 0 ? 0 : (i >= n ? n - 1 : i);
    else i = ((i % n) + n) % n;   // circular
    p[o] = i;
  }
  return index.to(device);
}
}  // namespace

Tensor pad(const Tensor& x, IntArrayRef pad, const std::string& mode, std::optional<double> value) {
  const int64_t m = static_cast<int64_t>(pad.size());
  TG_CHECK(m % 2 == 0, ShapeError, "pad: Padding length must be divisible by 2, got ", shape_str(pad));
  TG_CHECK(m / 2 <= x.dim(), ShapeError, "pad: Padding length should be less than or equal to two times the input dimension but got padding length ",
           m, " and input of dimension ", x.dim());
  TG_CHECK(mode == "constant" || mode == "reflect" || mode == "replicate" || mode == "circular", Error,
           "pad: mode must be 'constant', 'reflect', 'replicate' or 'circular', got '", mode, "'");
  if (mode == "constant") {
    // pad[2k], pad[2k + 1] widen (or, negative, narrow) dim x.dim() - 1 - k on the left and right
    Tensor y = x;
    const double fill = value.value_or(0.0);
    for (int64_t k = 0; k < m / 2; ++k) {
      const int64_t d = x.dim() - 1 - k, l = pad[2 * k], r = pad[2 * k + 1];
      const int64_t n = y.shape()[d];
      TG_CHECK(n + l + r >= 0, ShapeError, "pad: The input size ", n, ", plus negative padding ", l, " and ", r,
               " resulted in a negative output size, which is invalid. Check dimension ", d, " of your input.");
      const int64_t keep_from = l < 0 ? -l : 0, keep = n - keep_from - (r < 0 ? -r : 0);
      if (keep_from > 0 || keep < n) y = narrow(y, d, keep_from, std::max<int64_t>(keep, 0));
      std::vector<Tensor> parts;
      Shape side = y.shape();
      if (l > 0) {
        side[d] = l;
        parts.push_back(Tensor(prim::full(side, fill, x.dtype(), x.device())));
      }
      parts.push_back(y);
      if (r > 0) {
        side[d] = r;
        parts.push_back(Tensor(prim::full(side, fill, x.dtype(), x.device())));
      }
      if (parts.size() > 1) y = cat(parts, d);
    }
    return y.data().storage() == x.data().storage() ? clone(y) : y;   // pad copies, as PyTorch's
  }
  TG_CHECK(!value.has_value() || *value == 0, Error, "pad: Padding mode \"", mode,
           "\" doesn't take in value argument");
  const int64_t padded = m / 2, rank = x.dim();
  TG_CHECK((padded == 1 && (rank == 2 || rank == 3)) || (padded == 2 && (rank == 3 || rank == 4)) ||
               (padded == 3 && (rank == 4 || rank == 5)),
           ShapeError, "pad: Padding size ", m, " is not supported for ", rank,
           "D input tensor. Supported combinations for non-constant padding: 2D or 3D input: padding size = 2 (pads "
           "last dimension); 3D or 4D input: padding size = 4 (pads last 2 dimensions); 4D or 5D input: padding "
           "size = 6 (pads last 3 dimensions)");
  Tensor y = x;
  for (int64_t k = 0; k < padded; ++k) {
    const int64_t d = rank - 1 - k, l = pad[2 * k], r = pad[2 * k + 1], n = x.shape()[d];
    TG_CHECK(l >= 0 && r >= 0, ShapeError, "pad: negative padding (", l, ", ", r, ") is only for mode 'constant'");
    if (mode == "reflect")
      TG_CHECK(l < n && r < n, ShapeError, "pad: Padding size should be less than the corresponding input dimension, but got: padding (",
               l, ", ", r, ") at dimension ", d, " of input ", shape_str(x.shape()));
    if (mode == "replicate") TG_CHECK(n > 0, ShapeError, "pad: cannot replicate-pad the empty dimension ", d);
    if (mode == "circular")
      TG_CHECK(l <= n && r <= n, ShapeError, "pad: Padding value causes wrapping around more than once.");
    // index_select reads each output position's source (its gradient adds back into the same positions)
    y = index_select(y, d, Tensor(pad_positions(n, l, r, mode, x.device())));
  }
  return y;
}

}  // namespace tg
