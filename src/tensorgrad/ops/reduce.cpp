// ops/reduce.cpp: differentiable reductions (sum, mean, max, min, amax, amin, norm) and argmax, all
// and any. Forward through prim::reduce, backward right below. The kernels are Backend::reduce
// (backend/cpu/reduce.cpp, backend/cuda/reduce.cu). logsumexp, var and std are compositions of these and
// the elementwise ops (no kernel of their own, so they run on every backend); prod is in ops/scan.cpp.
#include <algorithm>
#include <cmath>

#include "tensorgrad/ops/autocast.h"
#include "tensorgrad/prim/prim.h"
#include "tensorgrad/ops/ops.h"
#include "tensorgrad/ops/rules.h"

namespace tg {

namespace {

/// grad of a reduction output (a RawTensor or a Tensor), reshaped so that it broadcasts against the
/// input (size 1 on dim).
template <class T>
T unreduce(const T& grad, const Shape& in_shape, int64_t dim, bool keepdim, bool all) {
  if (all || in_shape.empty()) return grad.reshape(Shape(in_shape.size(), 1));
  return keepdim ? grad : grad.unsqueeze(dim);
}

Tensor sum_impl(const Tensor& x_in, int64_t dim, bool keepdim, bool all) {
  const Tensor x = amp::detail::cast(amp::detail::AutocastOp::Sum, x_in);   // Note [Autocast op lists]
  const Shape in_shape = x.shape();
  if (!all) dim = wrap_dim(dim, x.dim(), "sum");
  RawTensor out = prim::reduce(ReduceOp::Sum, x.data(), all ? std::vector<int64_t>{} : std::vector<int64_t>{dim},
                            keepdim && !all, "sum");
  return record("sum", out, {x}, [in_shape, dim, keepdim, all](const auto& grad, auto& g) {
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
  return record("mean", out, {x}, [in_shape, dim, keepdim, all, scale](const auto& grad, auto& g) {
    g.set(0, rules::mul(unreduce(grad, in_shape, dim, keepdim, all), scale).expand(in_shape));   // 1/n
  });
}

/// The dims a reduction over `dims` covers, wrapped and increasing; an empty list means every dim
/// (PyTorch's dim=None), and a 0-d x reduces over all (the empty list). IndexError for a dim out of
/// range, ShapeError for a repeated one.
std::vector<int64_t> reduced_dims(const Shape& shape, const Shape& dims, const char* name) {
  const int64_t rank = static_cast<int64_t>(shape.size());
  std::vector<int64_t> out;
  std::vector<bool> seen(static_cast<std::size_t>(std::max<int64_t>(rank, 1)), dims.empty());
  for (int64_t d : dims) {
    const int64_t w = wrap_dim(d, rank, name);
    TG_CHECK(!seen[w], ShapeError, name, ": dim ", w, " appears multiple times in the list of dims ",
             shape_str(dims), " (input of shape ", shape_str(shape), ")");
    seen[w] = true;
  }
  for (int64_t d = 0; d < rank; ++d)
    if (seen[d]) out.push_back(d);
  return out;
}

/// The shape of a keepdim result: in_shape with 1 on each reduced dim (every dim when dims is empty).
Shape keep_shape(const Shape& in_shape, const std::vector<int64_t>& dims) {
  Shape keep = in_shape;
  for (std::size_t d = 0; d < keep.size(); ++d)
    if (dims.empty() || std::find(dims.begin(), dims.end(), static_cast<int64_t>(d)) != dims.end()) keep[d] = 1;
  return keep;
}

/// The sum over dims (empty: all), differentiable: the building block of logsumexp, var and norm.
Tensor sum_over(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim, const char* name) {
  const Shape in_shape = x.shape();
  RawTensor out = prim::reduce(ReduceOp::Sum, x.data(), dims, keepdim, name);
  return record(name, out, {x}, [in_shape, dims](const auto& grad, auto& g) {
    g.set(0, grad.reshape(keep_shape(in_shape, dims)).expand(in_shape));   // d(sum x)/dx = 1
  });
}

/// max/min/amax/amin over dims (empty: all): the gradient goes to the elements equal to the result,
/// split evenly among ties.
Tensor extreme_impl(ReduceOp op, const char* name, const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  RawTensor out = prim::reduce(op, x.data(), dims, keepdim, name);
  const bool need = any_requires_grad({x});
  SavedTensor x_saved = need ? SavedTensor(x) : SavedTensor();
  SavedTensor out_saved = need ? SavedTensor(out, name) : SavedTensor();
  return record(name, out, {x}, [x_saved, out_saved, dims, name](const auto& grad, auto& g) {
    using T = std::decay_t<decltype(grad)>;
    const RawTensor& xt = x_saved.get();
    const Shape keep = keep_shape(xt.shape(), dims);
    const RawTensor y = out_saved.get().reshape(keep);
    // constants of the gradient: which elements are the extreme, and how many share it (the second
    // derivative is 0 wherever the extreme is unique, as PyTorch's)
    const RawTensor mask = prim::binary(BinaryOp::Eq, xt, y, name);                // [x == max]
    const RawTensor count = prim::reduce(ReduceOp::Sum, mask, dims, true, name);     // ties share the gradient
    g.set(0, rules::mul(T(mask), rules::div(grad.reshape(keep), T(count))));
  });
}

/// dim of max(x, dim) and the like, wrapped, as the one-element list of reduced dims.
std::vector<int64_t> one_dim(const Tensor& x, int64_t dim, const char* name) { return {wrap_dim(dim, x.dim(), name)}; }

/// all (zero_test Eq: no element equal to 0) and any (Ne: some element not 0), as a count of the
/// elements that pass the test, compared with 0. NaN counts as true, as in PyTorch.
Tensor all_any(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim, bool is_all) {
  const char* name = is_all ? "all" : "any";
  const RawTensor test = prim::binary(is_all ? BinaryOp::Eq : BinaryOp::Ne, x.data(), prim::scalar_like(0.0, x.data()), name);
  const RawTensor count = prim::reduce(ReduceOp::Sum, test, dims, keepdim, name);   // int64
  return Tensor(prim::binary(is_all ? BinaryOp::Eq : BinaryOp::Gt, count, prim::scalar_like(0.0, count), name));
}

/// The shape of a reduction result without keepdim: in_shape less the reduced dims.
Shape dropped_shape(const Shape& in_shape, const std::vector<int64_t>& dims) {
  Shape out;
  for (std::size_t d = 0; d < in_shape.size(); ++d)
    if (!dims.empty() && std::find(dims.begin(), dims.end(), static_cast<int64_t>(d)) == dims.end()) out.push_back(in_shape[d]);
  return out;
}

/// var over dims with PyTorch's correction: sum((x - mean)^2) / max(0, N - correction), composed of
/// sum_over and the elementwise ops (two passes, the mean subtracted first, so no cancellation).
Tensor var_impl(const Tensor& x, const Shape& dims_in, double correction, bool keepdim, const char* name) {
  TG_CHECK(is_floating(x.dtype()), DTypeError, name, ": std and var only support floating point dtypes, got ",
           dtype_name(x.dtype()), " (input of shape ", shape_str(x.shape()), ")");
  const std::vector<int64_t> dims = reduced_dims(x.shape(), dims_in, name);
  int64_t n = dims.empty() ? x.numel() : 1;
  for (int64_t d : dims) n *= x.shape()[d];
  const Tensor mu = sum_over(x, dims, true, name) * (1.0 / static_cast<double>(n));   // no elements: NaN
  const Tensor d = x - mu;
  // N - correction <= 0 divides by 0, as PyTorch: NaN for a zero sum, inf otherwise
  return sum_over(d * d, dims, keepdim, name) * (1.0 / std::max(0.0, static_cast<double>(n) - correction));
}

}  // namespace

Tensor sum(const Tensor& x) { return sum_impl(x, 0, false, true); }
Tensor sum_to_size(const Tensor& x, const Shape& shape) {
  if (x.shape() == shape) return x;
  const Shape in_shape = x.shape();
  TG_CHECK(shape.size() <= in_shape.size(), ShapeError, "sum_to_size: size ", shape_str(shape),
           " is not expandable to size ", shape_str(in_shape));
  for (std::size_t d = 0; d < shape.size(); ++d) {
    const int64_t s = shape[d], t = in_shape[in_shape.size() - shape.size() + d];
    TG_CHECK(s == t || s == 1, ShapeError, "sum_to_size: size ", shape_str(shape), " is not expandable to size ",
             shape_str(in_shape));
  }
  return record("sum_to_size", prim::sum_to(x.data(), shape), {x}, [in_shape](const auto& grad, auto& g) {
    g.set(0, grad.expand(in_shape));                                      // every summed element gets it
  });
}
Tensor sum(const Tensor& x, int64_t dim, bool keepdim) { return sum_impl(x, dim, keepdim, false); }
Tensor mean(const Tensor& x) { return mean_impl(x, 0, false, true); }
Tensor mean(const Tensor& x, int64_t dim, bool keepdim) { return mean_impl(x, dim, keepdim, false); }
Tensor max(const Tensor& x) { return extreme_impl(ReduceOp::Max, "max", x, {}, false); }
ValuesWithIndices max(const Tensor& x, int64_t dim, bool keepdim) {
  Tensor values = extreme_impl(ReduceOp::Max, "max", x, one_dim(x, dim, "max"), keepdim);
  return ValuesWithIndices(std::move(values), Tensor(prim::reduce(ReduceOp::ArgMax, x.data(), {dim}, keepdim, "max")));
}
Tensor min(const Tensor& x) { return extreme_impl(ReduceOp::Min, "min", x, {}, false); }
ValuesWithIndices min(const Tensor& x, int64_t dim, bool keepdim) {
  Tensor values = extreme_impl(ReduceOp::Min, "min", x, one_dim(x, dim, "min"), keepdim);
  return ValuesWithIndices(std::move(values), Tensor(prim::reduce(ReduceOp::ArgMin, x.data(), {dim}, keepdim, "min")));
}

Tensor argmax(const Tensor& x) { return Tensor(prim::reduce(ReduceOp::ArgMax, x.data(), {}, false, "argmax")); }
Tensor argmax(const Tensor& x, int64_t dim, bool keepdim) {
  return Tensor(prim::reduce(ReduceOp::ArgMax, x.data(), {dim}, keepdim, "argmax"));
}

Tensor amax(const Tensor& x, IntArrayRef dims, bool keepdim) {
  return extreme_impl(ReduceOp::Max, "amax", x, reduced_dims(x.shape(), dims, "amax"), keepdim);
}
Tensor amin(const Tensor& x, IntArrayRef dims, bool keepdim) {
  return extreme_impl(ReduceOp::Min, "amin", x, reduced_dims(x.shape(), dims, "amin"), keepdim);
}

Tensor all(const Tensor& x) { return all_any(x, {}, false, true); }
Tensor all(const Tensor& x, int64_t dim, bool keepdim) { return all_any(x, one_dim(x, dim, "all"), keepdim, true); }
Tensor any(const Tensor& x) { return all_any(x, {}, false, false); }
Tensor any(const Tensor& x, int64_t dim, bool keepdim) { return all_any(x, one_dim(x, dim, "any"), keepdim, false); }

Tensor logsumexp(const Tensor& x_in, IntArrayRef dims_in, bool keepdim) {
  // integers and bool in float32, as PyTorch promotes them
  const Tensor x = is_floating(x_in.dtype()) ? x_in : Tensor(x_in.data().to(kFloat32));
  const std::vector<int64_t> dims = reduced_dims(x.shape(), dims_in, "logsumexp");
  const Shape keep = keep_shape(x.shape(), dims);
  // The shift m (the max over dims) keeps exp from overflowing; it carries no gradient (the result does
  // not depend on it). An infinite or NaN max, or none (an empty dim), shifts by 0 instead, so that a
  // row of -inf gives log(0) = -inf and a +inf gives +inf, as PyTorch, rather than inf - inf = NaN.
  RawTensor m = x.numel() > 0 ? prim::reduce(ReduceOp::Max, x.data(), dims, true, "logsumexp")
                              : prim::full(keep, 0.0, x.dtype(), x.device());
  const RawTensor finite = prim::binary(BinaryOp::Lt, prim::unary(UnaryOp::Abs, m), prim::scalar_like(INFINITY, m), "logsumexp");
  m = prim::where(finite, m, prim::scalar_like(0.0, m));
  const Tensor s = sum_over(exp(x - Tensor(m)), dims, keepdim, "logsumexp");
  return log(s) + Tensor(keepdim ? m : m.reshape(dropped_shape(x.shape(), dims)));
}

Tensor var(const Tensor& x) { return var_impl(x, {}, 1.0, false, "var"); }
Tensor var(const Tensor& x, IntArrayRef dims, bool unbiased, bool keepdim) {
  return var_impl(x, dims, unbiased ? 1.0 : 0.0, keepdim, "var");
}
Tensor var(const Tensor& x, IntArrayRef dims, std::optional<double> correction, bool keepdim) {
  return var_impl(x, dims, correction.value_or(1.0), keepdim, "var");
}

namespace {
/// sqrt(v) with PyTorch's std gradient: 1 / (2 std), and 0 where the std is 0 (not inf).
Tensor std_of(const Tensor& v) {
  RawTensor out = prim::unary(UnaryOp::Sqrt, v.data());
  SavedTensor out_saved = any_requires_grad({v}) ? SavedTensor(out, "std") : SavedTensor();
  return record("std", out, {v}, [out_saved](const auto& grad, auto& g) {
    const auto y = g.output(out_saved);
    const auto d = rules::div(grad, rules::mul(y, 2.0));                  // d sqrt(v)/dv = 1 / (2 sqrt(v))
    const RawTensor& yr = out_saved.get();
    g.set(0, rules::where(prim::binary(BinaryOp::Eq, yr, prim::scalar_like(0.0, yr), "std"), rules::scalar(0.0, d), d));
  });
}
}  // namespace

Tensor std(const Tensor& x) { return std_of(var_impl(x, {}, 1.0, false, "std")); }
Tensor std(const Tensor& x, IntArrayRef dims, bool unbiased, bool keepdim) {
  return std_of(var_impl(x, dims, unbiased ? 1.0 : 0.0, keepdim, "std"));
}
Tensor std(const Tensor& x, IntArrayRef dims, std::optional<double> correction, bool keepdim) {
  return std_of(var_impl(x, dims, correction.value_or(1.0), keepdim, "std"));
}

Tensor norm(const Tensor& x, double p) { return norm(x, p, {}, false); }
Tensor norm(const Tensor& x, double p, IntArrayRef dims_in, bool keepdim) {
  TG_CHECK(is_floating(x.dtype()), DTypeError, "norm: expected a floating point tensor as input, got ",
           dtype_name(x.dtype()), " (shape ", shape_str(x.shape()), ")");
  TG_CHECK(!std::isnan(p), Error, "norm: p must not be NaN");
  const std::vector<int64_t> dims = reduced_dims(x.shape(), dims_in, "norm");
  // inf, -inf and 1 are compositions: amax / amin of |x| (ties share the gradient), the sum of |x|
  // (the gradient of |x| at 0 is 0, PyTorch's sgn(0))
  if (std::isinf(p)) return extreme_impl(p > 0 ? ReduceOp::Max : ReduceOp::Min, "norm", abs(x), dims, keepdim);
  if (p == 1) return sum_over(abs(x), dims, keepdim, "norm");
  const RawTensor xt = x.data();
  if (p == 0) {   // the count of nonzero entries; its gradient is 0, as in PyTorch
    const RawTensor nonzero = prim::binary(BinaryOp::Ne, xt, prim::scalar_like(0.0, xt), "norm");
    const Shape in_shape = x.shape();
    return record("norm", prim::reduce(ReduceOp::Sum, nonzero, dims, keepdim, "norm").to(x.dtype()), {x},
                  [in_shape](const Tensor& grad, VarGrads& g) {
                    g.set(0, Tensor(prim::full(in_shape, 0.0, grad.dtype(), grad.device())));   // piecewise constant
                  });
  }
  // (sum |x|^p)^(1/p); p = 2 as sqrt(sum x^2)
  const RawTensor a = prim::unary(UnaryOp::Abs, xt);
  const RawTensor powered = p == 2 ? prim::mul(a, a) : prim::binary(BinaryOp::Pow, a, prim::scalar_like(p, a), "norm");
  const RawTensor s = prim::reduce(ReduceOp::Sum, powered, dims, true, "norm");
  const RawTensor y = p == 2 ? prim::unary(UnaryOp::Sqrt, s) : prim::binary(BinaryOp::Pow, s, prim::scalar_like(1.0 / p, s), "norm");
  const bool need = any_requires_grad({x});
  const RawTensor out = keepdim ? y : y.reshape(dropped_shape(x.shape(), dims));
  SavedTensor x_saved = need ? SavedTensor(x) : SavedTensor();
  SavedTensor y_saved = need ? SavedTensor(out, "norm") : SavedTensor();
  const Shape keep = keep_shape(x.shape(), dims);
  return record("norm", out, {x}, [x_saved, y_saved, keep, p](const Tensor& grad, VarGrads& g) {
    const Tensor xs = g.input(0, x_saved), ys = g.output(y_saved).reshape(keep);
    // d ||x||_p / dx = sgn(x) |x|^(p-1) / ||x||^(p-1): x / ||x|| for p = 2; sgn(x) |x|^(p-1) is 0 at
    // x = 0 (also for p < 1, where |x|^(p-1) is inf), and the gradient is 0 where the norm is 0 (PyTorch's
    // convention at the origin, not 0 / 0). The masks are constants.
    auto zero_where = [](const RawTensor& at, const Tensor& v) {
      return where(Tensor(prim::binary(BinaryOp::Eq, at, prim::scalar_like(0.0, at), "norm")), scalar_like(0.0, v), v);
    };
    const Tensor scaled = p == 2 ? xs : zero_where(xs.data(), sign(xs) * pow(abs(xs), p - 1));
    const Tensor denom = p == 2 ? ys : pow(ys, p - 1);
    g.set(0, zero_where(ys.data(), grad.reshape(keep) / denom * scaled));
  });
}

}  // namespace tg
