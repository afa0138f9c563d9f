// ops/reduce.cpp: differentiable reductions (sum, mean, max, min) and argmax. Forward through
// prim::reduce, backward right below. The kernels are Backend::reduce (backend/cpu/reduce.cpp).
#include "tensorgrad/ops/autocast.h"
#include "tensorgrad/prim/prim.h"
#include "tensorgrad/ops/ops.h"

namespace tg {

namespace {

/// grad of a reduction output, reshaped so that it broadcasts against the input (size 1 on dim).
RawTensor unreduce(const RawTensor& grad, const Shape& in_shape, int64_t dim, bool keepdim, bool all) {
  if (all || in_shape.empty()) return grad.reshape(Shape(in_shape.size(), 1));
  return keepdim ? grad : grad.unsqueeze(dim);
}

Tensor sum_impl(const Tensor& x_in, int64_t dim, bool keepdim, bool all) {
  const Tensor x = amp::detail::cast(amp::detail::AutocastOp::Sum, x_in);   // Note [Autocast op lists]
  const Shape in_shape = x.shape();
  if (!all) dim = wrap_dim(dim, x.dim(), "sum");
  RawTensor out = prim::reduce(ReduceOp::Sum, x.data(), all ? std::vector<int64_t>{} : std::vector<int64_t>{dim},
                            keepdim && !all, "sum");
  return record("sum", out, {x}, [in_shape, dim, keepdim, all](const RawTensor& grad, Grads& g) {
    g.set(0, unreduce(grad, in_shape, dim, keepdim, all).expand(in_shape));   // d(sum x)/dx = 1
  });
}

// mean is on no autocast list: it runs in its input's dtype (Note [Autocast op lists])
Tensor mean_impl(const Tensor& x, int64_t dim, bool keepdim, bool all) {
  prim::check_floating("mean", x.data());
  const Shape in_shape = x.shape();
  if (!all) dim = wrap_dim(dim, x.dim(), "mean");
  const int64_t n = all ? x.numel() : (x.dim() ? x.shape()[dim] : 1);
  const double scale = 1.0 / static_cast<double>(n);   // n == 0 gives NaN, as in PyTorch
  // float16 / bfloat16: summed and scaled in float32, rounded once (Note [Low precision through float32])
  const DType dt = x.dtype();
  const bool low = is_low_precision(dt);
  RawTensor s = prim::reduce(ReduceOp::Sum, low ? x.data().to(kFloat32) : x.data(),
                          all ? std::vector<int64_t>{} : std::vector<int64_t>{dim}, keepdim && !all, "mean");
  RawTensor out = low ? prim::mul(s, scale).to(dt) : prim::mul(s, scale);
  return record("mean", out, {x}, [in_shape, dim, keepdim, all, scale](const RawTensor& grad, Grads& g) {
    g.set(0, prim::mul(unreduce(grad, in_shape, dim, keepdim, all), scale).expand(in_shape));   // 1/n
  });
}

/// max/min: the gradient goes to the elements equal to the result, split evenly among ties.
Tensor extreme_impl(ReduceOp op, const char* name, const Tensor& x, int64_t dim, bool keepdim, bool all) {
  if (!all) dim = wrap_dim(dim, x.dim(), name);
  const std::vector<int64_t> dims = all ? std::vector<int64_t>{} : std::vector<int64_t>{dim};
  RawTensor out = prim::reduce(op, x.data(), dims, keepdim && !all, name);
  const bool need = any_requires_grad({x});
  SavedTensor x_saved = need ? SavedTensor(x) : SavedTensor();
  SavedTensor out_saved = need ? SavedTensor(out, name) : SavedTensor();
  return record(name, out, {x}, [x_saved, out_saved, dims, dim, keepdim, all](const RawTensor& grad, Grads& g) {
    const RawTensor& xt = x_saved.get();
    const RawTensor y = unreduce(out_saved.get(), xt.shape(), dim, keepdim, all);
    const RawTensor mask = prim::binary(BinaryOp::Eq, xt, y, "max");             // [x == max]
    const RawTensor count = prim::reduce(ReduceOp::Sum, mask, dims, true, "max");  // ties share the gradient
    g.set(0, prim::mul(mask, prim::div(unreduce(grad, xt.shape(), dim, keepdim, all), count)));
  });
}

}  // namespace

Tensor sum(const Tensor& x) { return sum_impl(x, 0, false, true); }
Tensor sum(const Tensor& x, int64_t dim, bool keepdim) { return sum_impl(x, dim, keepdim, false); }
Tensor mean(const Tensor& x) { return mean_impl(x, 0, false, true); }
Tensor mean(const Tensor& x, int64_t dim, bool keepdim) { return mean_impl(x, dim, keepdim, false); }
Tensor max(const Tensor& x) { return extreme_impl(ReduceOp::Max, "max", x, 0, false, true); }
ValuesWithIndices max(const Tensor& x, int64_t dim, bool keepdim) {
  Tensor values = extreme_impl(ReduceOp::Max, "max", x, dim, keepdim, false);
  return ValuesWithIndices(std::move(values), Tensor(prim::reduce(ReduceOp::ArgMax, x.data(), {dim}, keepdim, "max")));
}
Tensor min(const Tensor& x) { return extreme_impl(ReduceOp::Min, "min", x, 0, false, true); }
ValuesWithIndices min(const Tensor& x, int64_t dim, bool keepdim) {
  Tensor values = extreme_impl(ReduceOp::Min, "min", x, dim, keepdim, false);
  return ValuesWithIndices(std::move(values), Tensor(prim::reduce(ReduceOp::ArgMin, x.data(), {dim}, keepdim, "min")));
}

Tensor argmax(const Tensor& x) { return Tensor(prim::reduce(ReduceOp::ArgMax, x.data(), {}, false, "argmax")); }
Tensor argmax(const Tensor& x, int64_t dim, bool keepdim) {
  return Tensor(prim::reduce(ReduceOp::ArgMax, x.data(), {dim}, keepdim, "argmax"));
}

}  // namespace tg
