// ops/shape.cpp: views (reshape, view, transpose, permute, squeeze, unsqueeze, expand), contiguous,
// flatten, cat and stack. Views share storage with their input (RawTensor view methods in
// core/raw_tensor.cpp); their backward maps the gradient back to the input's layout.
#include "tensorgrad/prim/prim.h"
#include "tensorgrad/ops/ops.h"

namespace tg {

namespace {
/// A view op whose gradient is the output gradient reshaped to the input's shape.
Tensor reshaping_view(const char* name, const Tensor& x, RawTensor out) {
  const Shape in_shape = x.shape();
  return mark_view(record(name, std::move(out), {x}, [in_shape](const RawTensor& grad, Grads& g) {
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
  return mark_view(record("transpose", x.data().transpose(d0, d1), {x}, [d0, d1](const RawTensor& grad, Grads& g) {
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
  return mark_view(record("permute", out, {x}, [inverse](const RawTensor& grad, Grads& g) {
                     g.set(0, grad.permute(inverse));                    // the inverse permutation
                   }),
                   x);
}

Tensor expand(const Tensor& x, const Shape& shape) {
  // The gradient keeps the expanded shape: the engine sums it back to the input's shape.
  return mark_view(record("expand", x.data().expand(shape), {x}, [](const RawTensor& grad, Grads& g) {
                     g.set(0, grad);                                     // summed over broadcast dims by the engine
                   }),
                   x);
}

Tensor contiguous(const Tensor& x) {
  if (x.is_contiguous()) return x;
  return record("contiguous", x.data().contiguous(), {x}, [](const RawTensor& grad, Grads& g) {
    g.set(0, grad);                                                       // identity
  });
}

Tensor clone(const Tensor& x) {
  return record("clone", x.data().clone(), {x}, [](const RawTensor& grad, Grads& g) {
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
  return record("cat", out, xs, [sizes, dim](const RawTensor& grad, Grads& g) {
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

}  // namespace tg
