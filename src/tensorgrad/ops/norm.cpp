// ops/norm.cpp: batch_norm, layer_norm and group_norm. Each normalizes x over a set of dims
// (batch_norm: every dim but the channels; layer_norm: the trailing normalized_shape; group_norm: the
// channels of a group and the trailing dims) with the biased variance, scales by weight and shifts by
// bias; one recorded node each, forward and backward through prims, so both
// backends run them. Modules wrapping these: nn/norm.h.
#include <algorithm>
#include <cmath>
#include <sstream>
#include <vector>

#include "tensorgrad/backend/cpu/norm.h"
#include "tensorgrad/autograd/grad_mode.h"
#include "tensorgrad/core/parallel.h"
#include "tensorgrad/prim/prim.h"
#include "tensorgrad/ops/ops.h"

namespace tg {

namespace {

/// The mean of x over dims, kept as size-1 dims (ReduceOp::Sum divided by the count).
Tensor mean_keep(const Tensor& x, const std::vector<int64_t>& dims, int64_t count) {
  return prim::mul(prim::reduce(ReduceOp::Sum, x, dims, true, "norm"), 1.0 / static_cast<double>(count));
}

/// What a normalization saves for its backward: xhat = (x - mean) rstd, rstd (size 1 on the
/// reduced dims) and the weight viewed to broadcast against x (undefined without one).
struct Normalized {
  Tensor y;      ///< the output
  Tensor xhat;   ///< (x - mean) rstd, x's (viewed) shape
  Tensor rstd;   ///< 1 / sqrt(var + eps), size 1 on the reduced dims
};

/// y = (x - mean) rstd weight + bias, where mean and rstd are given (eval batch_norm) or computed
/// over dims with the biased variance (var_out receives it then). weight and bias broadcast.
Normalized normalize(const Tensor& x, const std::vector<int64_t>& dims, int64_t count, double eps,
                     const Tensor& mean_in, const Tensor& var_in, const Tensor& weight, const Tensor& bias,
                     Tensor* mean_out, Tensor* var_out) {
  Normalized r;
  Tensor mean = mean_in, var = var_in;
  if (!mean.defined()) {
    mean = mean_keep(x, dims, count);
    const Tensor d = prim::sub(x, mean);
    var = mean_keep(prim::mul(d, d), dims, count);   // biased: divided by the count
  }
  if (mean_out != nullptr) *mean_out = mean;
  if (var_out != nullptr) *var_out = var;
  r.rstd = prim::div(prim::scalar_like(1.0, var),
                     prim::unary(UnaryOp::Sqrt, prim::add(var, prim::scalar_like(eps, var))));
  r.xhat = prim::mul(prim::sub(x, mean), r.rstd);
  r.y = r.xhat;
  if (weight.defined()) r.y = prim::mul(r.y, weight);
  if (bias.defined()) r.y = prim::add(r.y, bias);
  return r;
}

/// dx of y = xhat weight + bias, xhat normalized over dims with batch statistics:
/// dx = rstd (g - mean(g) - xhat mean(g xhat)) with g = dy weight, means over dims.
Tensor normalize_backward_input(const Tensor& dy, const Tensor& xhat, const Tensor& rstd, const Tensor& weight,
                                const std::vector<int64_t>& dims, int64_t count) {
  const Tensor g = weight.defined() ? prim::mul(dy, weight) : dy;
  const Tensor m1 = mean_keep(g, dims, count);
  const Tensor m2 = mean_keep(prim::mul(g, xhat), dims, count);
  return prim::mul(prim::sub(prim::sub(g, m1), prim::mul(xhat, m2)), rstd);
}

std::string shape_list(const std::vector<int64_t>& v) { return shape_str(Shape(v.begin(), v.end())); }

/// The inputs of a normalization's graph node: the input, then the weight and the bias when defined,
/// with their positions in the list (-1 when absent).
struct AffineInputs {
  std::vector<Variable> list;
  int wi = -1;   ///< the weight's position
  int bi = -1;   ///< the bias's position
  AffineInputs(const Variable& input, const Variable& weight, const Variable& bias) : list{input} {
    if (weight.defined()) { wi = static_cast<int>(list.size()); list.push_back(weight); }
    if (bias.defined()) { bi = static_cast<int>(list.size()); list.push_back(bias); }
  }
};

/// layer_norm and group_norm composed of prims: x is the input viewed so that each group's statistics
/// run over dims (count elements each), the weight and bias are viewed as affine_view to broadcast
/// against it; their gradients sum over param_dims and take param_shape.
Variable composed_norm(const char* name, const Variable& input, const Variable& weight, const Variable& bias,
                       const Tensor& x, const std::vector<int64_t>& dims, int64_t count, double eps,
                       const Shape& affine_view, const std::vector<int64_t>& param_dims, const Shape& param_shape) {
  const Tensor w = weight.defined() ? weight.data().reshape(affine_view) : Tensor();
  const Tensor b = bias.defined() ? bias.data().reshape(affine_view) : Tensor();
  Normalized r = normalize(x, dims, count, eps, Tensor(), Tensor(), w, b, nullptr, nullptr);
  const bool need = any_requires_grad({input, weight, bias});
  const Tensor xhat = need ? r.xhat : Tensor(), rstd = need ? r.rstd : Tensor();
  const AffineInputs in(input, weight, bias);
  SavedTensor w_saved = need && weight.defined() ? SavedTensor(weight) : SavedTensor();
  const Shape in_shape = input.shape();
  const int wi = in.wi, bi = in.bi;
  return record(name, r.y.view(in_shape), in.list,
                [name, xhat, rstd, w_saved, wi, bi, dims, count, in_shape, affine_view, param_dims,
                 param_shape](const Tensor& grad, Grads& g) {
    const Tensor dy = grad.reshape(xhat.shape());
    const Tensor wv = w_saved.defined() ? w_saved.get().reshape(affine_view) : Tensor();
    // dx = rstd (g - mean(g) - xhat mean(g xhat)) over each group, g = dy w
    if (g.need(0)) g.set(0, normalize_backward_input(dy, xhat, rstd, wv, dims, count).reshape(in_shape));
    // dw = sum of dy xhat over everything but the parameter's own dims; db = the same sum of dy
    if (wi >= 0 && g.need(wi))
      g.set(wi, prim::reduce(ReduceOp::Sum, prim::mul(dy, xhat), param_dims, false, name).reshape(param_shape));
    if (bi >= 0 && g.need(bi)) g.set(bi, prim::reduce(ReduceOp::Sum, dy, param_dims, false, name).reshape(param_shape));
  });
}

/// Whether layer_norm runs on the fused CPU rows: CPU float32/float64, weight and bias of the same
/// dtype and device when given. See Note [Fused layer_norm rows on the CPU] in backend/cpu/norm.cpp.
bool fused_layer_norm(const Variable& input, const Variable& weight, const Variable& bias) {
  const DType dt = input.dtype();
  if (!input.device().is_cpu() || (dt != kFloat32 && dt != kFloat64)) return false;
  for (const Variable* p : {&weight, &bias})
    if (p->defined() && (p->dtype() != dt || !p->device().is_cpu())) return false;
  return true;
}

/// layer_norm through layer_norm_rows, recorded with layer_norm_rows_backward. x viewed as (M, D).
Variable layer_norm_fused(const Variable& input, const Variable& weight, const Variable& bias, int64_t M, int64_t D,
                          const Shape& ns, double eps) {
  const DType dt = input.dtype();
  const Tensor x = input.data().contiguous();
  const Tensor w = weight.defined() ? weight.data().contiguous() : Tensor();
  const Tensor b = bias.defined() ? bias.data().contiguous() : Tensor();
  Tensor y = Tensor::empty(input.shape(), dt, input.device());
  Tensor mean = Tensor::empty({M}, dt, input.device()), rstd = Tensor::empty({M}, dt, input.device());
  if (M * D > 0) detail::cpu_layer_norm_rows(x, w, b, y, mean, rstd, M, D, eps);
  const bool need = any_requires_grad({input, weight, bias});
  const AffineInputs in(input, weight, bias);
  const std::vector<Variable>& inputs = in.list;
  const int wi = in.wi, bi = in.bi;
  SavedTensor x_saved = need ? SavedTensor(input) : SavedTensor();
  SavedTensor w_saved = need && weight.defined() ? SavedTensor(weight) : SavedTensor();
  const Shape in_shape = input.shape();
  return record("layer_norm", y, inputs,
                [x_saved, w_saved, mean, rstd, wi, bi, M, D, in_shape, ns](const Tensor& grad, Grads& g) {
    const Tensor xs = x_saved.get().contiguous(), dy = grad.contiguous();
    const Tensor ws = w_saved.defined() ? w_saved.get().contiguous() : Tensor();
    const DType t = dy.dtype();
    const bool want_x = g.need(0), want_w = wi >= 0 && g.need(wi), want_b = bi >= 0 && g.need(bi);
    Tensor dx = want_x ? Tensor::empty(in_shape, t, dy.device()) : Tensor();
    Tensor dw = want_w ? Tensor::empty(ns, t, dy.device()) : Tensor();
    Tensor db = want_b ? Tensor::empty(ns, t, dy.device()) : Tensor();
    if (M * D > 0) {
      detail::cpu_layer_norm_rows_backward(dy, xs, mean, rstd, ws, dx, dw, db, M, D);
    } else {
      if (want_w) prim::fill_(dw, 0.0);
      if (want_b) prim::fill_(db, 0.0);
    }
    if (want_x) g.set(0, dx);   // dx = rstd (g - mean(g) - xhat mean(g xhat)), g = dy w
    if (want_w) g.set(wi, dw);  // dw = sum over rows of dy xhat
    if (want_b) g.set(bi, db);  // db = sum over rows of dy
  });
}

}  // namespace

Variable batch_norm(const Variable& input, const Variable& running_mean, const Variable& running_var,
                    const Variable& weight, const Variable& bias, bool training, double momentum, double eps) {
  TG_CHECK(input.dim() >= 2, ShapeError, "batch_norm: expected input of at least 2 dims (N, C, ...), got ",
           shape_str(input.shape()));
  prim::check_floating("batch_norm", input.data());
  const int64_t C = input.shape()[1];
  const int64_t count = C == 0 ? 0 : input.numel() / C;   // elements per channel
  for (const Variable* p : {&running_mean, &running_var, &weight, &bias})
    if (p->defined())
      TG_CHECK(p->shape() == Shape{C}, ShapeError, "batch_norm: expected weight, bias, running_mean and running_var of ",
               "shape [", C, "] for input of size ", shape_str(input.shape()), ", got ", shape_str(p->shape()));
  TG_CHECK(training || (running_mean.defined() && running_var.defined()), Error,
           "batch_norm: running_mean and running_var must be defined in evaluation mode");
  TG_CHECK(!training || count > 1, ShapeError, "batch_norm: Expected more than 1 value per channel when training, got ",
           "input size ", shape_str(input.shape()));
  TG_CHECK(!running_mean.requires_grad() && !running_var.requires_grad(), AutogradError,
           "batch_norm: running_mean and running_var are buffers and must not require grad");
  // x viewed as (N, C, S); statistics over dims 0 and 2, per-channel tensors as (1, C, 1).
  const Tensor x = input.data().reshape({input.shape()[0], C, -1});
  const Shape cshape{1, C, 1};
  const DType dt = x.dtype();
  auto per_channel = [&](const Variable& v) { return v.defined() ? v.data().to(dt).reshape(cshape) : Tensor(); };
  const Tensor w = per_channel(weight), b = per_channel(bias);
  const std::vector<int64_t> dims{0, 2};
  Tensor batch_mean, batch_var;
  Normalized r = training ? normalize(x, dims, count, eps, Tensor(), Tensor(), w, b, &batch_mean, &batch_var)
                          : normalize(x, dims, count, eps, per_channel(running_mean), per_channel(running_var), w, b,
                                      nullptr, nullptr);
  if (training && running_mean.defined()) {
    // running = (1 - momentum) running + momentum batch; the variance enters unbiased (n / (n - 1)).
    NoGradGuard no_grad;
    const Tensor rm = running_mean.data(), rv = running_var.data();
    const Tensor new_mean = prim::add(prim::mul(rm.to(dt), 1.0 - momentum), prim::mul(batch_mean.reshape({C}), momentum));
    const Tensor unbiased = prim::mul(batch_var.reshape({C}), static_cast<double>(count) / static_cast<double>(count - 1));
    const Tensor new_var = prim::add(prim::mul(rv.to(dt), 1.0 - momentum), prim::mul(unbiased, momentum));
    prim::copy_(rm, new_mean);
    if (running_var.defined()) prim::copy_(rv, new_var);
  }
  const bool need = any_requires_grad({input, weight, bias});
  const Tensor xhat = need ? r.xhat : Tensor(), rstd = need ? r.rstd : Tensor();
  const AffineInputs in(input, weight, bias);
  const std::vector<Variable>& inputs = in.list;
  const int wi = in.wi, bi = in.bi;
  const Shape in_shape = input.shape();
  SavedTensor w_saved = need && weight.defined() ? SavedTensor(weight) : SavedTensor();
  return record("batch_norm", r.y.view(in_shape), inputs,
                [xhat, rstd, w_saved, wi, bi, training, dims, count, in_shape, cshape](const Tensor& grad, Grads& g) {
    const Tensor dy = grad.reshape(xhat.shape());
    const Tensor w = w_saved.defined() ? w_saved.get().to(dy.dtype()).reshape(cshape) : Tensor();
    if (g.need(0)) {
      // training: dx = rstd (g - mean(g) - xhat mean(g xhat)), g = dy w;  eval: dx = dy w rstd
      const Tensor dx = training ? normalize_backward_input(dy, xhat, rstd, w, dims, count)
                                 : prim::mul(w.defined() ? prim::mul(dy, w) : dy, rstd);
      g.set(0, dx.reshape(in_shape));
    }
    if (wi >= 0 && g.need(wi)) g.set(wi, prim::reduce(ReduceOp::Sum, prim::mul(dy, xhat), dims, false, "batch_norm"));   // dw = sum dy xhat
    if (bi >= 0 && g.need(bi)) g.set(bi, prim::reduce(ReduceOp::Sum, dy, dims, false, "batch_norm"));   // db = sum dy
  });
}

Variable layer_norm(const Variable& input, const std::vector<int64_t>& normalized_shape, const Variable& weight,
                    const Variable& bias, double eps) {
  const int64_t k = static_cast<int64_t>(normalized_shape.size());
  bool ok = k >= 1 && input.dim() >= k;
  for (int64_t i = 0; ok && i < k; ++i) ok = input.shape()[input.dim() - k + i] == normalized_shape[i];
  TG_CHECK(ok, ShapeError, "layer_norm: Given normalized_shape=", shape_list(normalized_shape),
           ", expected input with shape [*, ", shape_list(normalized_shape).substr(1), ", but got input of size",
           shape_str(input.shape()));
  const Shape ns(normalized_shape.begin(), normalized_shape.end());
  for (const Variable* p : {&weight, &bias})
    if (p->defined())
      TG_CHECK(p->shape() == ns, ShapeError, "layer_norm: expected weight and bias of shape ", shape_str(ns), ", got ",
               shape_str(p->shape()));
  prim::check_floating("layer_norm", input.data());
  int64_t D = 1;
  for (int64_t s : normalized_shape) D *= s;
  const int64_t M = D == 0 ? 0 : input.numel() / D;
  if (fused_layer_norm(input, weight, bias)) return layer_norm_fused(input, weight, bias, M, D, ns, eps);
  // x viewed as (M, D); statistics over dim 1; weight and bias as (1, D); their gradients sum over rows.
  return composed_norm("layer_norm", input, weight, bias, input.data().reshape({M, D}), {1}, D, eps, Shape{1, D}, {0}, ns);
}

Variable group_norm(const Variable& input, int64_t num_groups, const Variable& weight, const Variable& bias,
                    double eps) {
  TG_CHECK(input.dim() >= 2, ShapeError, "group_norm: Expected at least 2 dimensions for input tensor but received ",
           input.dim());
  const int64_t N = input.shape()[0], C = input.shape()[1];
  TG_CHECK(num_groups > 0 && C % num_groups == 0, ShapeError,
           "group_norm: Expected number of channels in input to be divisible by num_groups, but got input of shape ",
           shape_str(input.shape()), " and num_groups=", num_groups);
  for (const Variable* p : {&weight, &bias})
    if (p->defined())
      TG_CHECK(p->shape() == Shape{C}, ShapeError, "group_norm: Expected ", p == &weight ? "weight" : "bias",
               " to be a vector of size equal to the number of channels in input, but got ",
               p == &weight ? "weight" : "bias", " of shape ", shape_str(p->shape()), " and input of shape ",
               shape_str(input.shape()));
  prim::check_floating("group_norm", input.data());
  const int64_t G = num_groups, Cg = C / G;
  int64_t S = 1;   // positions per channel
  for (int64_t d = 2; d < input.dim(); ++d) S *= input.shape()[d];
  const int64_t count = Cg * S;   // elements per (sample, group)
  // x viewed as (N, G, C / G, S); statistics over dims 2 and 3, weight and bias as (1, G, C / G, 1);
  // their gradients sum over samples and positions.
  return composed_norm("group_norm", input, weight, bias, input.data().reshape({N, G, Cg, S}), {2, 3}, count, eps,
                       Shape{1, G, Cg, 1}, {0, 3}, Shape{C});
}

}  // namespace tg
