// optim/scheduler.cpp: chainable learning-rate schedules (PyTorch's get_lr(), Note [Chainable
// schedulers]) and gradient-norm clipping (torch.nn.utils.clip_grad_norm_, Note [Clipping dtypes]).
#include "tensorgrad/optim/scheduler.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <string>

#include "tensorgrad/core/accelerator.h"
#include "tensorgrad/core/error.h"
#include "tensorgrad/prim/prim.h"

namespace tg {
namespace optim {

namespace {
constexpr double kPi = 3.14159265358979323846;

// The constructors' argument checks run before the base constructor records initial_lr, so that a
// refused scheduler leaves the optimizer as it was (PyTorch checks before calling LRScheduler's).
Optimizer& check_step_size(Optimizer& optimizer, int64_t step_size) {
  TG_CHECK(step_size != 0, Error, "StepLR: step_size must not be 0 (integer modulo by zero)");
  return optimizer;
}

Optimizer& check_t_max(Optimizer& optimizer, int64_t t_max) {
  TG_CHECK(t_max != 0, Error, "CosineAnnealingLR: T_max must not be 0 (integer modulo by zero)");
  return optimizer;
}

Optimizer& check_factors(Optimizer& optimizer, double start_factor, double end_factor) {
  TG_CHECK(start_factor > 0 && start_factor <= 1, Error, "LinearLR: Starting multiplicative factor expected to be "
           "greater than 0 and less or equal to 1, got ", start_factor);
  TG_CHECK(end_factor >= 0 && end_factor <= 1, Error, "LinearLR: Ending multiplicative factor expected to be "
           "between 0 and 1, got ", end_factor);
  return optimizer;
}

}  // namespace

LRScheduler::LRScheduler(Optimizer& optimizer) : optimizer_(optimizer) {
  for (std::size_t g = 0; g < optimizer.num_param_groups(); ++g) {
    if (!optimizer.initial_lr(g)) optimizer.set_initial_lr(g, optimizer.lr(g));   // PyTorch's setdefault
    base_lrs_.push_back(*optimizer.initial_lr(g));
  }
}

double LRScheduler::base_lr(std::size_t group) const {
  TG_CHECK(group < base_lrs_.size(), IndexError, "base_lr: list index out of range: parameter group ", group,
           " (the scheduler was built on ", base_lrs_.size(), " groups)");
  return base_lrs_[group];
}

double LRScheduler::get_last_lr(std::size_t group) const {
  TG_CHECK(group < last_lrs_.size(), IndexError, "get_last_lr: list index out of range: parameter group ", group,
           " (the scheduler's last step set ", last_lrs_.size(), " groups)");
  return last_lrs_[group];
}

void LRScheduler::step() { set_epoch_and_apply(epoch_ + 1, false); }

std::map<std::string, double> checked_scheduler_state(const std::vector<std::pair<std::string, double>>& state,
                                                      const std::vector<std::pair<std::string, double>>& expected,
                                                      const char* who) {
  std::map<std::string, double> got;
  for (const auto& e : state) {
    TG_CHECK(got.emplace(e.first, e.second).second, Error, who, ".set_state: duplicate entry \"", e.first, "\"");
  }
  for (const auto& e : expected)
    TG_CHECK(got.count(e.first), Error, who, ".set_state: missing entry \"", e.first, "\" (saved from a scheduler "
             "on another number of parameter groups, or of another kind?)");
  TG_CHECK(got.size() == expected.size(), Error, who, ".set_state: ", got.size() - expected.size(),
           " unexpected entries (the state of another kind of scheduler?)");
  for (const auto& e : expected) {
    const double v = got.at(e.first);
    const bool count =
        e.first == "last_epoch" || (e.first.size() > 11 && e.first.compare(e.first.size() - 11, 11, ".last_epoch") == 0);
    TG_CHECK(!count || (v == std::trunc(v) && std::fabs(v) < 9e15), Error, who, ".set_state: \"", e.first,
             "\" must be a whole number, got ", v);
  }
  return got;
}

std::vector<std::pair<std::string, double>> LRScheduler::state() const {
  std::vector<std::pair<std::string, double>> out{{"last_epoch", static_cast<double>(epoch_)}};
  for (std::size_t g = 0; g < base_lrs_.size(); ++g) out.emplace_back(tg::detail::cat("base_lr.", g), base_lrs_[g]);
  for (std::size_t g = 0; g < last_lrs_.size(); ++g) out.emplace_back(tg::detail::cat("last_lr.", g), last_lrs_[g]);
  return out;
}

void LRScheduler::set_state(const std::vector<std::pair<std::string, double>>& state) {
  const auto got = checked_scheduler_state(state, LRScheduler::state(), "LRScheduler");
  epoch_ = static_cast<int64_t>(got.at("last_epoch"));
  for (std::size_t g = 0; g < base_lrs_.size(); ++g) base_lrs_[g] = got.at(tg::detail::cat("base_lr.", g));
  for (std::size_t g = 0; g < last_lrs_.size(); ++g) last_lrs_[g] = got.at(tg::detail::cat("last_lr.", g));
}

double LRScheduler::restart_lr(std::size_t group, double) const {
  TG_CHECK(group < base_lrs_.size(), Error, "scheduler: parameter group ", group, " was added after the scheduler "
           "was built and has no base_lr (PyTorch: zip() argument 2 is longer than argument 1)");
  return get_lr(group, base_lrs_[group]);
}

void LRScheduler::set_epoch_and_apply(int64_t epoch, bool restart) {
  const int64_t old = epoch_;
  epoch_ = epoch;
  try {
    apply(restart);
  } catch (...) {
    epoch_ = old;   // a step that raises changes nothing
    throw;
  }
}

void LRScheduler::apply(bool restart) {
  // Every rate is computed before any is set, and the old ones come back when the optimizer refuses
  // one (a negative rate): a step that raises leaves every learning rate as it was.
  const std::size_t n = optimizer_.num_param_groups();
  std::vector<double> old(n), next(n);
  for (std::size_t g = 0; g < n; ++g) {
    old[g] = optimizer_.lr(g);
    next[g] = restart ? restart_lr(g, old[g]) : get_lr(g, old[g]);
  }
  try {
    for (std::size_t g = 0; g < n; ++g) optimizer_.set_lr(g, next[g]);
  } catch (...) {
    for (std::size_t g = 0; g < n; ++g) optimizer_.set_lr(g, old[g]);
    throw;
  }
  last_lrs_ = std::move(next);
}

StepLR::StepLR(Optimizer& optimizer, int64_t step_size, double gamma)
    : LRScheduler(check_step_size(optimizer, step_size)), step_size_(step_size), gamma_(gamma) {
  init();
}

double StepLR::get_lr(std::size_t, double lr) const {
  const int64_t e = last_epoch();
  return e == 0 || e % step_size_ != 0 ? lr : lr * gamma_;   // divisibility does not depend on the sign
}

CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min)
    : LRScheduler(check_t_max(optimizer, T_max)), t_max_(T_max), eta_min_(eta_min) {
  init();
}

double CosineAnnealingLR::get_lr(std::size_t group, double lr) const {
  const int64_t e = last_epoch();
  if (e == 0) return lr;
  const double t = static_cast<double>(t_max_);
  // PyTorch's (e - 1 - T) % (2 T) == 0, i.e. e - 1 = |T| mod 2|T|, in unsigned arithmetic so that no
  // T overflows (|T| = 2^63 never passes the first test, as e - 1 < 2^63).
  const uint64_t a = t_max_ < 0 ? uint64_t(0) - static_cast<uint64_t>(t_max_) : static_cast<uint64_t>(t_max_);
  const uint64_t k = static_cast<uint64_t>(e - 1);
  if (k >= a && (k - a) % (2 * a) == 0) {
    // The step after a trough (e - 1 = T_max, 3 T_max, ...), where the ratio below would divide by
    // 1 + cos(pi) = 0: PyTorch adds the cosine's first step back, measured from the base learning rate.
    TG_CHECK(group < num_base_lrs(), Error, "CosineAnnealingLR: parameter group ", group, " was added after the "
             "scheduler was built and has no base_lr (PyTorch: zip() argument 2 is longer than argument 1)");
    return lr + (base_lr(group) - eta_min_) * (1 - std::cos(kPi / t)) / 2;
  }
  return (1 + std::cos(kPi * static_cast<double>(e) / t)) / (1 + std::cos(kPi * static_cast<double>(e - 1) / t)) *
             (lr - eta_min_) +
         eta_min_;
}

LinearLR::LinearLR(Optimizer& optimizer, double start_factor, double end_factor, int64_t total_iters)
    : LRScheduler(check_factors(optimizer, start_factor, end_factor)),
      start_(start_factor),
      end_(end_factor),
      total_(total_iters) {
  init();
}

double LinearLR::get_lr(std::size_t, double lr) const {
  const int64_t e = last_epoch();
  if (e == 0) return lr * start_;
  if (e > total_) return lr;
  const double d = end_ - start_;
  return lr * (1 + d / (static_cast<double>(total_) * start_ + static_cast<double>(e - 1) * d));
}

// Note [Clipping dtypes]
// ~~~~~~~~~~~~~~~~~~~~~~
// clip_grad_norm follows torch.nn.utils.clip_grad_norm_ (torch 2.x) operation by operation, so that
// it returns PyTorch's value in every dtype. Each gradient's norm is computed in its opmath dtype
// (float32 for float16 and bfloat16: no square of a float16 above 256 overflows) and rounded to the
// gradient's dtype (_foreach_norm's result); the total is the norm of those norms in their promoted
// dtype T (float32 for float16 with bfloat16), on the first gradient's device. The coefficient
// min(max_norm / (total + 1e-6), 1) is computed as PyTorch's Python computes it, rounding to T after
// each operation: total + 1e-6, its reciprocal, times max_norm, clamped. It is not compared with 1
// on the host: a NaN total makes every gradient NaN and an infinite one makes them 0. Each gradient
// is multiplied in place by the coefficient read in its opmath dtype (so a float16 gradient next to
// a float32 total sees the float32 coefficient, not one rounded to float16).
namespace {

DType opmath(DType d) { return is_low_precision(d) ? kFloat32 : d; }

/// x (of opmath(d)) rounded to d's precision; x itself when d is its own opmath dtype.
RawTensor round_to(const RawTensor& x, DType d) { return is_low_precision(d) ? prim::round_to_precision(x, d) : x; }


/// torch.linalg.vector_norm(x, p) as clip_grad_norm_ takes it of each tensor: 0-d, in x's dtype,
/// computed in opmath(x's dtype). `index` names the tensor in messages.
RawTensor vector_norm(const RawTensor& x, double p, const char* who, std::size_t index) {
  const RawTensor v = x.to(opmath(x.dtype()));
  if (std::isinf(p)) {
    TG_CHECK(x.numel() > 0, Error, who, ": tensor ", index, " ", tensor_meta_str(x), " is empty: ",
             p > 0 ? "_foreach_norm cannot compute the infinity norm"
                   : "linalg.vector_norm cannot compute the -inf norm",
             " on an empty tensor because the operation does not have an identity");
    const RawTensor a = prim::unary(UnaryOp::Abs, v);
    return prim::reduce(p > 0 ? ReduceOp::Max : ReduceOp::Min, a, {}, false, who).to(x.dtype());
  }
  TG_CHECK(!(p < 0) || x.numel() > 0, Error, who, ": tensor ", index, " ", tensor_meta_str(x), " is empty: ",
           "linalg.vector_norm cannot compute the ", p, " norm on an empty tensor because the operation does not "
           "have an identity");
  RawTensor r;
  if (p == 0) {   // the number of nonzero elements (NaN counts)
    r = prim::sum(prim::binary(BinaryOp::Ne, v, prim::scalar_like(0.0, v), who).to(v.dtype()));
  } else if (p == 1) {
    r = prim::sum(prim::unary(UnaryOp::Abs, v));
  } else if (p == 2) {
    r = prim::unary(UnaryOp::Sqrt, prim::sum(prim::mul(v, v)));
  } else {
    UnaryArgs pow_p, pow_inv;
    pow_p.a = p;
    pow_inv.a = 1 / p;
    r = prim::unary(UnaryOp::PowScalar, prim::sum(prim::unary(UnaryOp::PowScalar, prim::unary(UnaryOp::Abs, v), pow_p)),
                    pow_inv);
  }
  return r.to(x.dtype());
}

/// get_total_norm of tensors, each defined.
RawTensor total_norm(const std::vector<RawTensor>& tensors, double p, bool error_if_nonfinite, const char* who) {
  if (tensors.empty()) return prim::full({}, 0.0, kFloat32, Device::cpu());
  // Checking the total needs its value on the host, a synchronization a CUDA graph cannot hold
  // (PyTorch cannot check it inside a graph either): refused before any work is queued, so the
  // capture stays usable.
  TG_CHECK(!(error_if_nonfinite && tensors[0].device().is_cuda() && cuda::is_current_stream_capturing()), Error, who,
           ": error_if_nonfinite=true inside a CUDA graph capture: checking the total norm reads it back to the "
           "host, which a capture cannot do; pass error_if_nonfinite=false (a non-finite total then makes the "
           "clipped gradients NaN or 0, as PyTorch's), and check the returned norm after replay()");
  for (std::size_t i = 0; i < tensors.size(); ++i)
    TG_CHECK(is_floating(tensors[i].dtype()), DTypeError, who, ": tensor ", i, " is ", dtype_name(tensors[i].dtype()),
             ": linalg.vector_norm: Expected a floating point or complex tensor as input. Got ",
             dtype_name(tensors[i].dtype()));
  const Device first = tensors[0].device();
  DType t = tensors[0].dtype();
  for (const RawTensor& x : tensors) t = promote_types(t, x.dtype());
  std::vector<RawTensor> norms;
  norms.reserve(tensors.size());
  for (std::size_t i = 0; i < tensors.size(); ++i)
    norms.push_back(vector_norm(tensors[i], p, who, i).to(first).to(t).reshape({1}));
  const RawTensor total = vector_norm(prim::cat(norms, 0), p, who, 0);
  if (error_if_nonfinite) {
    const double v = total.item();
    TG_CHECK(std::isfinite(v), Error, who, ": The total norm of order ", detail::python_float(p), " for gradients from "
             "`parameters` is non-finite, so it cannot be clipped. To disable this error and scale the gradients by "
             "the non-finite norm anyway, set `error_if_nonfinite=false` (the total norm is ", v, ")");
  }
  return total;
}

/// clip_grads_with_norm_ of grads, each defined and floating.
void clip_with_norm(const std::vector<RawTensor>& grads, double max_norm, const RawTensor& total_norm) {
  if (grads.empty()) return;
  for (const RawTensor& g : grads) prim::check_no_internal_overlap("clip_grad_norm", g);   // before any is written
  const DType t = is_floating(total_norm.dtype()) ? total_norm.dtype() : kFloat32;   // int + 1e-6 is float32
  const RawTensor x = total_norm.reshape({}).to(opmath(t));
  const RawTensor shifted = round_to(prim::add(x, prim::scalar_like(1e-6, x)), t);
  const RawTensor inverse = round_to(prim::div(prim::scalar_like(1.0, shifted), shifted), t);
  UnaryArgs at_most_one;
  at_most_one.a = -std::numeric_limits<double>::infinity();
  at_most_one.b = 1.0;
  const RawTensor coef = prim::unary(UnaryOp::Clamp, round_to(prim::mul(inverse, max_norm), t), at_most_one);
  for (const RawTensor& g : grads) {
    const RawTensor c = coef.to(g.device());
    if (is_low_precision(g.dtype()) && g.dtype() != t) {
      prim::copy_(g, prim::mul(g.to(kFloat32), c));   // the float32 coefficient, not one rounded to g's dtype
    } else {
      prim::binary_(BinaryOp::Mul, g, c, "clip_grad_norm");   // c holds a value of t, exact in g's opmath
    }
  }
}

std::vector<RawTensor> defined_grads(const std::vector<Tensor>& params, const char* who) {
  std::vector<RawTensor> grads;
  for (std::size_t i = 0; i < params.size(); ++i) {
    TG_CHECK(params[i].defined(), Error, who, ": parameter ", i, " is undefined");
    const Tensor g = params[i].grad();
    if (g.defined()) grads.push_back(g.data());
  }
  return grads;
}

}  // namespace

Tensor get_total_norm(const std::vector<Tensor>& tensors, double norm_type, bool error_if_nonfinite) {
  std::vector<RawTensor> raw;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    TG_CHECK(tensors[i].defined(), Error, "get_total_norm: tensor ", i, " is undefined");
    raw.push_back(tensors[i].data());
  }
  NoGradGuard no_grad;
  return Tensor(total_norm(raw, norm_type, error_if_nonfinite, "get_total_norm"));
}

void clip_grads_with_norm_(const std::vector<Tensor>& params, double max_norm, const Tensor& total_norm) {
  TG_CHECK(total_norm.defined() && total_norm.numel() == 1, Error, "clip_grads_with_norm_: total_norm must hold one "
           "number, got ",
           total_norm.defined() ? tensor_meta_str(total_norm.data()) : std::string("an undefined tensor"));
  const std::vector<RawTensor> grads = defined_grads(params, "clip_grads_with_norm_");
  NoGradGuard no_grad;
  clip_with_norm(grads, max_norm, total_norm.data());
}

namespace {
/// clip_grad_norm_tensor's work, `who` naming the caller in messages.
RawTensor clip_grad_norm_impl(const std::vector<Tensor>& params, double max_norm, double norm_type,
                              bool error_if_nonfinite, const char* who) {
  const std::vector<RawTensor> grads = defined_grads(params, who);
  NoGradGuard no_grad;
  const RawTensor total = total_norm(grads, norm_type, error_if_nonfinite, who);
  clip_with_norm(grads, max_norm, total);
  return total;
}
}  // namespace

Tensor clip_grad_norm_tensor(const std::vector<Tensor>& params, double max_norm, double norm_type,
                             bool error_if_nonfinite) {
  return Tensor(clip_grad_norm_impl(params, max_norm, norm_type, error_if_nonfinite, "clip_grad_norm_tensor"));
}

double clip_grad_norm(const std::vector<Tensor>& params, double max_norm, double norm_type, bool error_if_nonfinite) {
  // The double needs the total on the host, which a CUDA graph cannot read back: refused before any
  // work is queued, so the capture stays usable.
  for (const Tensor& p : params)
    TG_CHECK(!(p.defined() && p.grad().defined() && p.grad().device().is_cuda() && cuda::is_current_stream_capturing()),
             Error, "clip_grad_norm (nn::utils::clip_grad_norm_): inside a CUDA graph capture; it returns the total "
             "norm as a double, which needs a host synchronization that a capture cannot hold; use "
             "tg::optim::clip_grad_norm_tensor(params, max_norm, norm_type), which clips on the device and returns "
             "the norm as a tensor (read it after replay())");
  return clip_grad_norm_impl(params, max_norm, norm_type, error_if_nonfinite, "clip_grad_norm").item();   // the sync
}

}  // namespace optim
}  // namespace tg
