// ops/random.cpp: sampling from tensors of probabilities, multinomial and bernoulli. Both draw from the
// one Philox stream (prim::random), so manual_seed gives the same samples on the CPU and on CUDA, and are
// compositions of the uniform draw with cumsum, comparisons, sums and topk (no kernel of their own).
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

/// Whether any element of t (floating) is NaN, infinite or negative, and the smallest row sum is > 0.
/// Reads two numbers back from the device: on CUDA a synchronization, the price of PyTorch's argument
/// errors (the CPU checks them the same way).
void check_distribution(const RawTensor& probs, const char* op) {
  const RawTensor bad = prim::binary(BinaryOp::Ne, probs, probs, op);   // NaN
  const RawTensor a = prim::unary(UnaryOp::Abs, probs);
  const RawTensor inf = prim::binary(BinaryOp::Eq, a, prim::scalar_like(INFINITY, a), op);
  const RawTensor neg = prim::binary(BinaryOp::Lt, probs, prim::scalar_like(0.0, probs), op);
  const RawTensor count = prim::add(prim::add(prim::sum(bad), prim::sum(inf)), prim::sum(neg));
  TG_CHECK(Tensor(count).item<int64_t>() == 0, Error, op, ": probability tensor contains either `inf`, `nan` or element < 0",
           " (shape ", shape_str(probs.shape()), ")");
  if (probs.numel() == 0) return;
  const RawTensor row_sums = prim::reduce(ReduceOp::Sum, probs, {probs.dim() - 1}, false, op);
  TG_CHECK(Tensor(prim::reduce(ReduceOp::Min, row_sums, {}, false, op)).item() > 0, Error, op,
           ": invalid multinomial distribution (sum of probabilities <= 0) in input of shape ", shape_str(probs.shape()));
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
  check_distribution(p, "multinomial");
  const bool one_row = p.dim() == 1;
  const RawTensor rows = one_row ? p.unsqueeze(0) : p;   // (R, C)
  const int64_t R = rows.shape()[0];
  const RawTensor p64 = rows.to(kFloat64);
  if (R == 0) return Tensor(RawTensor::empty(one_row ? Shape{num_samples} : Shape{0, num_samples}, kInt64, p.device()));
  RawTensor out;
  if (!replacement) {
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
  } else {
    // With replacement, by inverting the CDF: the cumulative sums divided by the total (the last is then
    // exactly 1), and sample j of row r is the count of CDF entries <= u: the category k with
    // cdf[k-1] <= u < cdf[k], never one of probability 0. The (R, block, C) comparisons are done in
    // blocks of samples so that they hold about 2^22 elements.
    const RawTensor cdf_raw = cumsum(Tensor(p64), 1).data();
    const RawTensor cdf = prim::div(cdf_raw, cdf_raw.narrow(1, categories - 1, 1)).unsqueeze(1);   // (R, 1, C)
    const RawTensor u = uniform64({R, num_samples}, p.device());
    const int64_t block = std::max<int64_t>(1, (int64_t(1) << 22) / std::max<int64_t>(R * categories, 1));
    std::vector<RawTensor> parts;
    for (int64_t start = 0; start < num_samples; start += block) {
      const int64_t n = std::min(block, num_samples - start);
      const RawTensor below = prim::binary(BinaryOp::Le, cdf, u.narrow(1, start, n).unsqueeze(2), "multinomial");
      parts.push_back(prim::reduce(ReduceOp::Sum, below, {2}, false, "multinomial"));   // (R, n) int64
    }
    out = parts.size() == 1 ? parts[0] : prim::cat(parts, 1);
    // rounding cannot push a count past C - 1 (cdf's last entry is 1 > u), but stay in range regardless
    out = prim::where(prim::binary(BinaryOp::Lt, out, prim::scalar_like(double(categories), out), "multinomial"), out,
                      prim::scalar_like(double(categories - 1), out));
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
