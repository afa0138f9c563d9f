// ops/random.cpp: sampling from tensors of probabilities, multinomial and bernoulli. Both draw from the
// one Philox stream (prim::random), so manual_seed gives the same samples on the CPU and on CUDA, and are
// the uniform draw with prim::sample_categories (with replacement) or topk (without).
// Not differentiable. The factories normal and randperm are in ops/creation.cpp.
#include <algorithm>
#include <cmath>

#include "tensorgrad/kernels/philox.h"
#include "tensorgrad/prim/prim.h"
#include "tensorgrad/ops/ops.h"

namespace tg {

namespace {

/// Uniform draws in [0, 1) of shape, float64 whatever the probabilities' dtype (53 bits of resolution
/// for the inverse-CDF search), on device.
RawTensor uniform64(const Shape& shape, Device device) {
  return prim::random(philox::Distribution::uniform(0.0, 1.0), shape, kFloat64, device);
}

}  // namespace

Tensor multinomial(const Tensor& input, int64_t num_samples, bool replacement) {
  const RawTensor& p = input.data();
  TG_CHECK(p.dim() == 1 || p.dim() == 2, ShapeError, "multinomial: prob_dist must be 1 or 2 dim, got shape ",
           shape_str(p.shape()));
  TG_CHECK(is_floating(p.dtype()), DTypeError, "multinomial: only supports floating-point dtypes for input, got: ",
           dtype_name(p.dtype()));
  TG_CHECK(num_samples > 0, Error, "multinomial: cannot sample n_sample <= 0 samples (got ", num_samples, ")");
  const int64_t categories = p.shape()[p.dim() - 1];
  TG_CHECK(replacement || num_samples <= categories, Error, "multinomial: cannot sample n_sample (", num_samples,
           ") > prob_dist.size(-1) (", categories, ") samples without replacement (input of shape ",
           shape_str(p.shape()), ")");
  TG_CHECK(categories > 0, ShapeError, "multinomial: the number of categories cannot be 0 (input of shape ",
           shape_str(p.shape()), ")");
  const bool one_row = p.dim() == 1;
  const RawTensor rows = one_row ? p.unsqueeze(0) : p;   // (R, C)
  const int64_t R = rows.shape()[0];
  if (R == 0) return Tensor(RawTensor::empty(one_row ? Shape{num_samples} : Shape{0, num_samples}, kInt64, p.device()));
  RawTensor out;
  if (!replacement) {
    prim::check_distribution(p, "multinomial");
    const RawTensor p64 = rows.to(kFloat64);
    // Without replacement: the num_samples largest p_i / q_i with q_i ~ Exponential(1) (PyTorch's
    // algorithm, an exponential race: the same law as drawing one category at a time, proportionally to
    // p, and removing it). q = -log(1 - u), u in [0, 1).
    const RawTensor u = uniform64(rows.shape(), p.device());
    // q = 0 (u = 0, probability 2^-53) is raised to the smallest normal double: 0 / 0 would be a NaN,
    // which topk ranks above every number
    const RawTensor q = prim::unary(UnaryOp::Clamp,
                                    prim::unary(UnaryOp::Neg, prim::unary(UnaryOp::Log1p, prim::unary(UnaryOp::Neg, u))),
                                    UnaryArgs{2.2250738585072014e-308, INFINITY});
    out = prim::topk(prim::div(p64, q), num_samples, 1, true).indices;
  } else {   // with replacement, by inverting each row's CDF (one pass over it on the CPU)
    out = prim::sample_categories(p, uniform64({R, num_samples}, p.device()));
  }
  return Tensor(one_row ? out.reshape({num_samples}) : out);
}

Tensor bernoulli(const Tensor& p) {
  prim::check_floating("bernoulli", p.data());
  const RawTensor& pt = p.data();
  if (pt.numel() > 0) {
    const RawTensor outside = prim::add(prim::sum(prim::binary(BinaryOp::Lt, pt, prim::scalar_like(0.0, pt), "bernoulli")),
                                        prim::sum(prim::binary(BinaryOp::Gt, pt, prim::scalar_like(1.0, pt), "bernoulli")));
    const RawTensor nan = prim::sum(prim::binary(BinaryOp::Ne, pt, pt, "bernoulli"));
    // a read back, as multinomial's check (a synchronization on CUDA)
    TG_CHECK(Tensor(prim::add(outside, nan)).item<int64_t>() == 0, Error,
             "bernoulli: expects all probabilities p to be in [0, 1] (input of shape ", shape_str(pt.shape()), ")");
  }
  // 1 where u < p, u uniform in [0, 1) in float64: probability exactly p (up to 2^-53), 0 for p = 0, 1 for p = 1
  const RawTensor u = uniform64(pt.shape(), pt.device());
  return Tensor(prim::binary(BinaryOp::Lt, u, pt.to(kFloat64), "bernoulli").to(pt.dtype()));
}

Tensor bernoulli(const Tensor& x, double p) {
  TG_CHECK(p >= 0 && p <= 1, Error, "bernoulli: expects p to be in [0, 1], but got p=", p);
  prim::check_floating("bernoulli", x.data());
  const RawTensor u = uniform64(x.shape(), x.device());
  return Tensor(prim::binary(BinaryOp::Lt, u, prim::scalar_like(p, u), "bernoulli").to(x.dtype()));
}

}  // namespace tg
