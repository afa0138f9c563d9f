// ops/norm.cpp: batch_norm, layer_norm and group_norm. Each normalizes x over a set of dims
// (batch_norm: every dim but the channels; layer_norm: the trailing normalized_shape; group_norm: the
// channels of a group and the trailing dims) with the biased variance, scales by weight and shifts by
// bias; one recorded node each. layer_norm and group_norm normalize rows through Backend::layer_norm
// (prim/norm.cpp, kernels/norm.h); batch_norm, whose statistics run down the columns, is composed of
// prims. Modules wrapping these: nn/norm.h.
#include <algorithm>
#include <cmath>
#include <sstream>
#include <vector>

#include "tensorgrad/autograd/grad_mode.h"
#include "tensorgrad/ops/autocast.h"
#include "tensorgrad/prim/prim.h"
#include "tensorgrad/ops/ops.h"
#include "tensorgrad/ops/rules.h"

namespace tg {

namespace {

/// The mean of x over dims, kept as size-1 dims (ReduceOp::Sum divided by the count).
RawTensor mean_keep(const RawTensor& x, const std::vector<int64_t>& dims, int64_t count) {
  return prim::mul(prim::reduce(ReduceOp::Sum, x, dims, true, "norm"), 1.0 / static_cast<double>(count));
}

/// What normalize() computes: the output, xhat = (x - mean) rstd, rstd (size 1 on the
/// reduced dims) and the weight viewed to broadcast against x (undefined without one).
struct Normalized {
  RawTensor y;      ///< the output
  RawTensor xhat;   ///< (x - mean) rstd, x's (viewed) shape
  RawTensor rstd;   ///< 1 / sqrt(var + eps), size 1 on the reduced dims
};

/// y = (x - mean) rstd weight + bias, where mean and rstd are given (eval batch_norm) or computed
/// over dims with the biased variance (var_out receives it then). weight and bias broadcast.
Normalized normalize(const RawTensor& x, const std::vector<int64_t>& dims, int64_t count, double eps,
                     const RawTensor& mean_in, const RawTensor& var_in, const RawTensor& weight, const RawTensor& bias,
                     RawTensor* mean_out, RawTensor* var_out) {
  Normalized r;
  RawTensor mean = mean_in, var = var_in;
  if (!mean.defined()) {
    mean = mean_keep(x, dims, count);
    const RawTensor d = prim::sub(x, mean);
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
RawTensor normalize_backward_input(const RawTensor& dy, const RawTensor& xhat, const RawTensor& rstd, const RawTensor& weight,
                                const std::vector<int64_t>& dims, int64_t count) {
  const RawTensor g = weight.defined() ? prim::mul(dy, weight) : dy;
  const RawTensor m1 = mean_keep(g, dims, count);
  const RawTensor m2 = mean_keep(prim::mul(g, xhat), dims, count);
  return prim::mul(prim::sub(prim::sub(g, m1), prim::mul(xhat, m2)), rstd);
}

std::string shape_list(const std::vector<int64_t>& v) { return shape_str(Shape(v.begin(), v.end())); }

/// The inputs of a normalization's graph node: the input, then the weight and the bias when defined,
/// with their positions in the list (-1 when absent).
struct AffineInputs {
  std::vector<Tensor> list;
  int wi = -1;   ///< the weight's position
  int bi = -1;   ///< the bias's position
  AffineInputs(const Tensor& input, const Tensor& weight, const Tensor& bias) : list{input} {
    if (weight.defined()) { wi = static_cast<int>(list.size()); list.push_back(weight); }
    if (bias.defined()) { bi = static_cast<int>(list.size()); list.push_back(bias); }
  }
};

/// The dtype layer_norm and group_norm compute in, as PyTorch allows their operands' dtypes: the
/// input's when the weight and bias (those given) share it, float32 for a float16 or bfloat16 input
/// with float32 parameters (the result is then rounded to the input's dtype, PyTorch's "mixed dtype"
/// layer_norm); DTypeError otherwise, as PyTorch refuses.
DType norm_dtype(const char* op, const Tensor& input, const Tensor& weight, const Tensor& bias) {
  const DType x = input.dtype();
  bool same = true, float32 = true;
  for (const Tensor* p : {&weight, &bias})
    if (p->defined()) {
      same = same && p->dtype() == x;
      float32 = float32 && p->dtype() == kFloat32;
    }
  if (same) return x;
  TG_CHECK(is_low_precision(x) && float32, DTypeError, op, ": mixed dtype: expected weight and bias of the input's ",
           "dtype ", dtype_name(x), " (or float32 for a float16 or bfloat16 input), got ",
           dtype_name(weight.defined() ? weight.dtype() : bias.dtype()));
  return kFloat32;
}

/// What layer_norm and group_norm keep for their backward: the input and the weight (saved, so that an
/// in-place change is caught) and the rows' statistics; all undefined when nothing requires grad.
struct RowsSaved {
  SavedTensor x, w;
  RawTensor mean, rstd;
  RowsSaved(const prim::LayerNorm& r, const Tensor& input, const Tensor& weight, const Tensor& bias) {
    if (!any_requires_grad({input, weight, bias})) return;
    x = SavedTensor(input);
    if (weight.defined()) w = SavedTensor(weight);
    mean = r.mean;
    rstd = r.rstd;
  }
};

/// x as rows (M, D) of dtype dt.
RawTensor rows_of(const RawTensor& x, DType dt, int64_t M, int64_t D) { return x.to(dt).reshape({M, D}); }

}  // namespace

Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                    const Tensor& weight, const Tensor& bias, bool training, double momentum, double eps) {
  TG_CHECK(input.dim() >= 2, ShapeError, "batch_norm: expected input of at least 2 dims (N, C, ...), got ",
           shape_str(input.shape()));
  prim::check_floating("batch_norm", input.data());
  const int64_t C = input.shape()[1];
  const int64_t count = C == 0 ? 0 : input.numel() / C;   // elements per channel
  for (const Tensor* p : {&running_mean, &running_var, &weight, &bias})
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
  const RawTensor x = input.data().reshape({input.shape()[0], C, -1});
  const Shape cshape{1, C, 1};
  const DType dt = x.dtype();
  auto per_channel = [&](const Tensor& v) { return v.defined() ? v.data().to(dt).reshape(cshape) : RawTensor(); };
  const RawTensor w = per_channel(weight), b = per_channel(bias);
  const std::vector<int64_t> dims{0, 2};
  RawTensor batch_mean, batch_var;
  Normalized r = training ? normalize(x, dims, count, eps, RawTensor(), RawTensor(), w, b, &batch_mean, &batch_var)
                          : normalize(x, dims, count, eps, per_channel(running_mean), per_channel(running_var), w, b,
                                      nullptr, nullptr);
  if (training && running_mean.defined()) {
    // running = (1 - momentum) running + momentum batch; the variance enters unbiased (n / (n - 1)).
    NoGradGuard no_grad;
    const RawTensor rm = running_mean.data(), rv = running_var.data();
    const RawTensor new_mean = prim::add(prim::mul(rm.to(dt), 1.0 - momentum), prim::mul(batch_mean.reshape({C}), momentum));
    const RawTensor unbiased = prim::mul(batch_var.reshape({C}), static_cast<double>(count) / static_cast<double>(count - 1));
    const RawTensor new_var = prim::add(prim::mul(rv.to(dt), 1.0 - momentum), prim::mul(unbiased, momentum));
    prim::copy_(rm, new_mean);
    if (running_var.defined()) prim::copy_(rv, new_var);
  }
  // Saved: the input and the statistics it was normalized with (the running mean copied: a later
  // forward updates it in place); the rules recompute xhat from them, the recorded formulas also the
  // batch statistics, so that under create_graph they are functions of the input.
  const bool need = any_requires_grad({input, weight, bias});
  const SavedTensor x_saved = need ? SavedTensor(input) : SavedTensor();
  const RawTensor mean_used = need ? (training ? batch_mean : per_channel(running_mean).clone()) : RawTensor();
  const RawTensor rstd = need ? r.rstd : RawTensor();
  const AffineInputs in(input, weight, bias);
  const int wi = in.wi, bi = in.bi;
  const Shape in_shape = input.shape(), xshape = x.shape();
  SavedTensor w_saved = need && weight.defined() ? SavedTensor(weight) : SavedTensor();
  return record("batch_norm", r.y.view(in_shape), in.list,
                [x_saved, mean_used, rstd, w_saved, wi, bi, training, dims, count, in_shape, xshape, cshape,
                 eps](const auto& grad_t, auto& g) {
    if constexpr (first_order_v<decltype(g)>) {
      const RawTensor dy = grad_t.reshape(xshape);
      const bool want_w = wi >= 0 && g.need(wi);
      const RawTensor xhat = (training && g.need(0)) || want_w
                                 ? prim::mul(prim::sub(x_saved.get().reshape(xshape), mean_used), rstd) : RawTensor();
      const RawTensor w = w_saved.defined() ? w_saved.get().to(dy.dtype()).reshape(cshape) : RawTensor();
      if (g.need(0)) {
        // training: dx = rstd (g - mean(g) - xhat mean(g xhat)), g = dy w;  eval: dx = dy w rstd
        const RawTensor dx = training ? normalize_backward_input(dy, xhat, rstd, w, dims, count)
                                      : prim::mul(w.defined() ? prim::mul(dy, w) : dy, rstd);
        g.set(0, dx.reshape(in_shape));
      }
      if (want_w) g.set(wi, prim::reduce(ReduceOp::Sum, prim::mul(dy, xhat), dims, false, "batch_norm"));   // dw = sum dy xhat
      if (bi >= 0 && g.need(bi)) g.set(bi, prim::reduce(ReduceOp::Sum, dy, dims, false, "batch_norm"));   // db = sum dy
    } else {   // the same formulas as recorded ops; in training the statistics are recomputed from x
      auto channel_mean = [](const Tensor& v) { return mean(mean(v, 2, true), 0, true); };   // over N and S
      const Tensor xv = g.input(0, x_saved).reshape(xshape);
      Tensor xhat, rs;
      if (training) {
        const Tensor xc = xv - channel_mean(xv);
        rs = pow(channel_mean(xc * xc) + eps, -0.5);
        xhat = xc * rs;
      } else {
        rs = Tensor(rstd);
        xhat = (xv - Tensor(mean_used)) * rs;
      }
      const Tensor dy = grad_t.reshape(xshape);
      const Tensor gx = wi >= 0 ? dy * g.input(wi, w_saved).to(dy.dtype()).reshape(cshape) : dy;
      if (g.need(0))
        g.set(0, (training ? rs * (gx - channel_mean(gx) - xhat * channel_mean(gx * xhat)) : gx * rs).reshape(in_shape));
      if (wi >= 0 && g.need(wi)) g.set(wi, sum(sum(dy * xhat, 2), 0));
      if (bi >= 0 && g.need(bi)) g.set(bi, sum(sum(dy, 2), 0));
    }
  });
}

Tensor layer_norm(const Tensor& input_in, const std::vector<int64_t>& normalized_shape, const Tensor& weight_in,
                    const Tensor& bias_in, double eps) {
  // float32 under CUDA autocast (Note [Autocast op lists])
  using amp::detail::AutocastOp;
  const Tensor input = amp::detail::cast(AutocastOp::LayerNorm, input_in),
               weight = amp::detail::cast(AutocastOp::LayerNorm, weight_in),
               bias = amp::detail::cast(AutocastOp::LayerNorm, bias_in);
  const int64_t k = static_cast<int64_t>(normalized_shape.size());
  bool ok = k >= 1 && input.dim() >= k;
  for (int64_t i = 0; ok && i < k; ++i) ok = input.shape()[input.dim() - k + i] == normalized_shape[i];
  TG_CHECK(ok, ShapeError, "layer_norm: Given normalized_shape=", shape_list(normalized_shape),
           ", expected input with shape [*, ", shape_list(normalized_shape).substr(1), ", but got input of size",
           shape_str(input.shape()));
  const Shape ns(normalized_shape.begin(), normalized_shape.end());
  for (const Tensor* p : {&weight, &bias})
    if (p->defined())
      TG_CHECK(p->shape() == ns, ShapeError, "layer_norm: expected weight and bias of shape ", shape_str(ns), ", got ",
               shape_str(p->shape()));
  prim::check_floating("layer_norm", input.data());
  int64_t D = 1;
  for (int64_t s : normalized_shape) D *= s;
  const int64_t M = D == 0 ? 0 : input.numel() / D;
  // Rows (M, D) normalized by the backend (Note [Fused normalization rows]); weight and bias per column.
  const DType dt = norm_dtype("layer_norm", input, weight, bias);
  const RawTensor w = weight.defined() ? weight.data().reshape({D}) : RawTensor();
  const RawTensor b = bias.defined() ? bias.data().reshape({D}) : RawTensor();
  const prim::LayerNorm r = prim::layer_norm(rows_of(input.data(), dt, M, D), w, b, eps);
  const AffineInputs in(input, weight, bias);
  const int wi = in.wi, bi = in.bi;
  const RowsSaved saved(r, input, weight, bias);
  const Shape in_shape = input.shape();
  return record("layer_norm", r.y.to(input.dtype()).view(in_shape), in.list,
                [saved, wi, bi, M, D, dt, in_shape, ns, eps](const auto& grad_t, auto& g) {
    if constexpr (!first_order_v<decltype(g)>) {   // the same formulas as recorded ops, the statistics recomputed from x
      const Tensor x = g.input(0, saved.x).to(dt).reshape({M, D});
      const Tensor xc = x - mean(x, 1, true);
      const Tensor rstd = pow(mean(xc * xc, 1, true) + eps, -0.5);
      const Tensor xhat = xc * rstd;
      const Tensor gy = grad_t.to(dt).reshape({M, D});
      const Tensor gx = wi >= 0 ? gy * g.input(wi, saved.w).to(dt).reshape({D}) : gy;
      if (g.need(0)) g.set(0, (rstd * (gx - mean(gx, 1, true) - xhat * mean(gx * xhat, 1, true))).reshape(in_shape));
      if (wi >= 0 && g.need(wi)) g.set(wi, sum(gy * xhat, 0).reshape(ns));
      if (bi >= 0 && g.need(bi)) g.set(bi, sum(gy, 0).reshape(ns));
    } else {   // first order: one fused kernel
      const RawTensor& grad = grad_t;
      const RawTensor ws = saved.w.defined() ? saved.w.get().reshape({D}) : RawTensor();
      const prim::LayerNormGrads d =
          prim::layer_norm_backward(grad.reshape({M, D}), rows_of(saved.x.get(), dt, M, D), saved.mean, saved.rstd, ws,
                                    g.need(0), wi >= 0 && g.need(wi), bi >= 0 && g.need(bi));
      if (d.dx.defined()) g.set(0, d.dx.view(in_shape));   // dx = rstd (g - mean(g) - xhat mean(g xhat)), g = dy w
      if (d.dw.defined()) g.set(wi, d.dw.view(ns));        // dw = sum over rows of dy xhat
      if (d.db.defined()) g.set(bi, d.db.view(ns));        // db = sum over rows of dy
    }
  });
}

Tensor group_norm(const Tensor& input_in, int64_t num_groups, const Tensor& weight_in, const Tensor& bias_in,
                    double eps) {
  // float32 under CUDA autocast (Note [Autocast op lists])
  using amp::detail::AutocastOp;
  const Tensor input = amp::detail::cast(AutocastOp::GroupNorm, input_in),
               weight = amp::detail::cast(AutocastOp::GroupNorm, weight_in),
               bias = amp::detail::cast(AutocastOp::GroupNorm, bias_in);
  TG_CHECK(input.dim() >= 2, ShapeError, "group_norm: Expected at least 2 dimensions for input tensor but received ",
           input.dim());
  const int64_t N = input.shape()[0], C = input.shape()[1];
  TG_CHECK(num_groups > 0 && C % num_groups == 0, ShapeError,
           "group_norm: Expected number of channels in input to be divisible by num_groups, but got input of shape ",
           shape_str(input.shape()), " and num_groups=", num_groups);
  for (const Tensor* p : {&weight, &bias})
    if (p->defined())
      TG_CHECK(p->shape() == Shape{C}, ShapeError, "group_norm: Expected ", p == &weight ? "weight" : "bias",
               " to be a vector of size equal to the number of channels in input, but got ",
               p == &weight ? "weight" : "bias", " of shape ", shape_str(p->shape()), " and input of shape ",
               shape_str(input.shape()));
  prim::check_floating("group_norm", input.data());
  const int64_t G = num_groups, Cg = C / G;
  int64_t S = 1;   // positions per channel
  for (int64_t d = 2; d < input.dim(); ++d) S *= input.shape()[d];
  // Each (sample, group) is a row of Cg S elements normalized by the backend (Note [Fused
  // normalization rows]); weight and bias apply per channel afterwards, x viewed as (N, C, S).
  const int64_t M = N * G, D = Cg * S;
  const DType dt = norm_dtype("group_norm", input, weight, bias);
  const prim::LayerNorm r = prim::layer_norm(rows_of(input.data(), dt, M, D), RawTensor(), RawTensor(), eps);
  const Shape ncs{N, C, S}, cshape{1, C, 1};
  RawTensor y = r.y.view(ncs);
  if (weight.defined()) y = prim::mul(y, weight.data().reshape(cshape));
  if (bias.defined()) y = prim::add(y, bias.data().reshape(cshape));
  const AffineInputs in(input, weight, bias);
  const int wi = in.wi, bi = in.bi;
  const RowsSaved saved(r, input, weight, bias);
  const Shape in_shape = input.shape();
  return record("group_norm", y.to(input.dtype()).view(in_shape), in.list,
                [saved, wi, bi, M, D, dt, ncs, cshape, in_shape, eps](const auto& grad_t, auto& g) {
    if constexpr (!first_order_v<decltype(g)>) {   // the same formulas as recorded ops, the statistics recomputed from x
      const Tensor x = g.input(0, saved.x).to(dt).reshape({M, D});
      const Tensor xc = x - mean(x, 1, true);
      const Tensor rstd = pow(mean(xc * xc, 1, true) + eps, -0.5);
      const Tensor xhat = xc * rstd;                                              // rows (M, D)
      const Tensor dy = grad_t.to(dt).reshape(ncs);
      if (g.need(0)) {
        const Tensor gy = (wi >= 0 ? dy * g.input(wi, saved.w).to(dt).reshape(cshape) : dy).reshape({M, D});
        g.set(0, (rstd * (gy - mean(gy, 1, true) - xhat * mean(gy * xhat, 1, true))).reshape(in_shape));
      }
      if (wi >= 0 && g.need(wi)) g.set(wi, sum(sum(dy * xhat.reshape(ncs), 2), 0));
      if (bi >= 0 && g.need(bi)) g.set(bi, sum(sum(dy, 2), 0));
    } else {   // first order: the fused row kernel
      const RawTensor& grad = grad_t;
      const RawTensor dy = grad.reshape(ncs);
      const RawTensor x = rows_of(saved.x.get(), dt, M, D);
      if (g.need(0)) {   // dx = rstd (g - mean(g) - xhat mean(g xhat)) per row, g = dy w (w per channel)
        const RawTensor gy = saved.w.defined() ? prim::mul(dy, saved.w.get().reshape(cshape)) : dy;
        g.set(0, prim::layer_norm_backward(gy.reshape({M, D}), x, saved.mean, saved.rstd, RawTensor(), true, false, false)
                     .dx.view(in_shape));
      }
      if (wi >= 0 && g.need(wi)) {   // dw = sum over samples and positions of dy xhat
        const RawTensor xhat =
            prim::mul(prim::sub(x, saved.mean.view({M, 1})), saved.rstd.view({M, 1})).reshape(ncs);
        g.set(wi, prim::reduce(ReduceOp::Sum, prim::mul(dy, xhat), {0, 2}, false, "group_norm"));
      }
      if (bi >= 0 && g.need(bi)) g.set(bi, prim::reduce(ReduceOp::Sum, dy, {0, 2}, false, "group_norm"));   // db = sum dy
    }
  });
}

}  // namespace tg
