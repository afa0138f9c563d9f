// optim/optimizers.cpp: BufferedOptimizer (state, checks, checkpoint entries) and the updates of
// RMSprop, Adagrad, Adadelta, Adamax, NAdam and RAdam, each PyTorch 2.x's single-tensor algorithm
// operation by operation. The declarations and formulas are in optim/optimizers.h.
//
// The updates are compositions of prim's elementwise ops rather than fused Backend kernels like
// sgd_step and adam_step: they then run on the CPU and on CUDA with no new kernel to write, check and
// keep in parity, at the cost of a few temporaries and launches per parameter. These optimizers are
// rarely what a training step's time goes into; a fused kernel can replace one when a benchmark says so.
#include "tensorgrad/optim/optimizers.h"

#include <cmath>
#include <limits>
#include <utility>

#include "tensorgrad/core/error.h"
#include "tensorgrad/prim/prim.h"

namespace tg {
namespace optim {

namespace {

// In-place and fresh elementwise helpers over prim, named as the torch.Tensor methods PyTorch's
// algorithms call; a scalar becomes a 0-d tensor of x's dtype (prim::scalar_like), as PyTorch casts a
// Python float to the tensor's type.
RawTensor scalar(double v, const RawTensor& like) { return prim::scalar_like(v, like); }
void mul_(const RawTensor& x, double v) { prim::binary_(BinaryOp::Mul, x, scalar(v, x), "mul_"); }
void add_(const RawTensor& x, const RawTensor& y) { prim::binary_(BinaryOp::Add, x, y, "add_"); }
/// x += value * a * b (torch's addcmul_).
void addcmul_(const RawTensor& x, const RawTensor& a, const RawTensor& b, double value) {
  add_(x, prim::mul(prim::mul(a, value), b));
}
/// x += value * a / b (torch's addcdiv_).
void addcdiv_(const RawTensor& x, const RawTensor& a, const RawTensor& b, double value) {
  add_(x, prim::mul(prim::div(a, b), value));
}
/// x = lerp(x, y, weight), with torch's two formulas (exact at weight 0 and 1).
void lerp_(const RawTensor& x, const RawTensor& y, double weight) {
  const RawTensor diff = prim::sub(y, x);
  if (weight < 0.5) add_(x, prim::mul(diff, weight));
  else prim::copy_(x, prim::sub(y, prim::mul(diff, 1 - weight)));
}
RawTensor sqrt(const RawTensor& x) { return prim::unary(UnaryOp::Sqrt, x); }
RawTensor add_scalar(const RawTensor& x, double v) { return prim::add(x, scalar(v, x)); }
/// g + wd w, or g itself when wd is 0 (torch: grad = grad.add(param, alpha=weight_decay)).
RawTensor with_l2(const RawTensor& g, const RawTensor& w, double wd) {
  return wd != 0 ? prim::add(g, prim::mul(w, wd)) : g;
}

}  // namespace

// ---- BufferedOptimizer

BufferedOptimizer::BufferedOptimizer(std::vector<ParamGroup> groups, const OptimizerOptions& defaults, std::string name,
                                     std::vector<std::string> buffers, bool with_mu_product)
    : Optimizer(std::move(groups), defaults, name),
      name_(std::move(name)),
      buffer_names_(std::move(buffers)),
      with_mu_product_(with_mu_product) {
  state_.resize(params_.size());
}

bool BufferedOptimizer::has_buffer(std::size_t, const OptimizerOptions&) const { return true; }

double BufferedOptimizer::initial_value(std::size_t, const OptimizerOptions&) const { return 0; }

void BufferedOptimizer::step() {
  check_grads(name_.c_str());   // options and gradients: a step updates all parameters or none
  refuse_capture(name_.c_str());
  for (std::size_t i = 0; i < params_.size(); ++i) {
    if (!params_[i].grad().defined()) continue;
    for (std::size_t b = 0; b < buffer_names_.size(); ++b)
      if (!state_[i].buffers.empty())
        check_state_matches(name_.c_str(), i, buffer_names_[b].c_str(), state_[i].buffers[b]);
  }
  NoGradGuard no_grad;
  std::vector<std::size_t> updated;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const Tensor& p = params_[i];
    if (!p.grad().defined()) continue;   // not reached by this backward
    const OptimizerOptions& o = param_groups()[group_of(i)].options();
    State& s = state_[i];
    const DType sd = state_dtype(p.dtype());   // Note [Master weights]
    s.buffers.resize(buffer_names_.size());
    for (std::size_t b = 0; b < buffer_names_.size(); ++b) {
      RawTensor& buf = s.buffers[b];
      if (!buf.defined()) {
        // created at the first step, or when the group's options came to need it (RMSprop's momentum
        // turned on later, where PyTorch raises a KeyError): from its initial value
        if (has_buffer(b, o)) buf = prim::full(p.shape(), initial_value(b, o), sd, p.device());
      } else if (buf.device() != p.device() || buf.dtype() != sd) {
        buf = buf.to(p.device()).to(sd);   // the module moved: keep the state
      }
    }
    if (s.step < std::numeric_limits<int64_t>::max()) ++s.step;
    update(update_target(i), update_grad(i), s, o);
    updated.push_back(i);
  }
  for (std::size_t i : updated) finish_update(i);
}

std::vector<std::pair<std::string, RawTensor>> BufferedOptimizer::state() const {
  std::vector<std::pair<std::string, RawTensor>> out;
  for (std::size_t i = 0; i < state_.size(); ++i) {
    const State& s = state_[i];
    if (s.step == 0) continue;
    const std::string k = std::to_string(i);
    for (std::size_t b = 0; b < s.buffers.size(); ++b)
      if (s.buffers[b].defined()) out.emplace_back(buffer_names_[b] + "." + k, s.buffers[b]);
    out.emplace_back("step." + k, prim::from_host(&s.step, {}, kInt64, Device::cpu()));   // exact, not via double
    if (with_mu_product_) out.emplace_back("mu_product." + k, prim::from_host(&s.mu_product, {}, kFloat64, Device::cpu()));
  }
  append_master_state(out);
  return out;
}

void BufferedOptimizer::set_state(const std::vector<std::pair<std::string, RawTensor>>& entries) {
  // Validate every entry and that each parameter's entries are complete, then copy, then swap: a
  // failure leaves the old state in place.
  const std::string where = name_ + "::set_state";
  const char* who = where.c_str();
  std::vector<State> next(params_.size());
  for (State& s : next) s.buffers.resize(buffer_names_.size());
  std::vector<RawTensor> masters(params_.size());
  std::vector<bool> has_step(params_.size(), false), has_mu(params_.size(), false);
  for (const auto& [name, t] : entries) {
    if (read_master_entry(name, t, masters, who)) continue;
    const std::string prefix = name.substr(0, name.find('.'));
    const std::size_t i = state_index(name, prefix, who);
    State& s = next[i];
    if (prefix == "step" || (with_mu_product_ && prefix == "mu_product")) {
      const bool step = prefix == "step";
      TG_CHECK(t.defined() && t.dtype() == (step ? kInt64 : kFloat64) && t.numel() == 1, Error, who, ": \"", name,
               "\" must be a one-element ", step ? "int64" : "float64", " tensor");
      std::vector<bool>& seen = step ? has_step : has_mu;
      TG_CHECK(!seen[i], Error, who, ": duplicate entry \"", name, "\"");
      seen[i] = true;
      const RawTensor host = t.to(Device::cpu()).contiguous();
      if (step) {
        s.step = host.data<int64_t>()[0];   // exact: a double cannot hold every int64
        TG_CHECK(s.step >= 1, Error, who, ": \"", name, "\" must be at least 1, got ", s.step);
      } else {
        s.mu_product = host.data<double>()[0];
      }
      continue;
    }
    std::size_t b = 0;
    while (b < buffer_names_.size() && buffer_names_[b] != prefix) ++b;
    TG_CHECK(b < buffer_names_.size(), Error, who, ": unexpected entry \"", name, "\"");
    TG_CHECK(!s.buffers[b].defined(), Error, who, ": duplicate entry \"", name, "\"");
    check_state_entry(name, t, i, who);
    s.buffers[b] = t;
  }
  for (std::size_t i = 0; i < next.size(); ++i) {
    const State& s = next[i];
    bool any = has_step[i] || has_mu[i];
    for (const RawTensor& buf : s.buffers) any = any || buf.defined();
    if (!any) continue;
    const OptimizerOptions& o = param_groups()[group_of(i)].options();
    std::string needed;
    bool complete = has_step[i] && (!with_mu_product_ || has_mu[i]);
    for (std::size_t b = 0; b < buffer_names_.size(); ++b) {
      if (!has_buffer(b, o)) continue;
      needed += buffer_names_[b] + ", ";
      complete = complete && s.buffers[b].defined();
    }
    TG_CHECK(complete, Error, who, ": the state of parameter ", i, " is incomplete (its group's options need ",
             needed, with_mu_product_ ? "mu_product, " : "", "step)");
  }
  for (std::size_t i = 0; i < next.size(); ++i)
    for (RawTensor& buf : next[i].buffers)
      if (buf.defined()) buf = private_copy(buf, params_[i].device());
  state_ = std::move(next);
  install_master_state(std::move(masters));
}

// ---- RMSprop

void RMSpropOptions::check(const std::string& who) const {
  TG_CHECK(eps_ >= 0, Error, who, ": invalid epsilon value ", eps_);
  TG_CHECK(momentum_ >= 0, Error, who, ": invalid momentum value ", momentum_);
  TG_CHECK(weight_decay_ >= 0, Error, who, ": invalid weight_decay value ", weight_decay_);
  TG_CHECK(alpha_ >= 0, Error, who, ": invalid alpha value ", alpha_);
}

RMSprop::RMSprop(std::vector<Tensor> params, RMSpropOptions options)
    : RMSprop(std::vector<ParamGroup>{ParamGroup{std::move(params)}}, options) {}

RMSprop::RMSprop(std::vector<ParamGroup> groups, RMSpropOptions options)
    : BufferedOptimizer(std::move(groups), options, "RMSprop", {"square_avg", "momentum_buffer", "grad_avg"}) {}

bool RMSprop::has_buffer(std::size_t b, const OptimizerOptions& options) const {
  const auto& o = static_cast<const RMSpropOptions&>(options);
  return b == 0 || (b == 1 && o.momentum_ > 0) || (b == 2 && o.centered_);
}

void RMSprop::update(const RawTensor& w, const RawTensor& g0, State& s, const OptimizerOptions& options) {
  const auto& o = static_cast<const RMSpropOptions&>(options);
  const RawTensor g = with_l2(g0, w, o.weight_decay_);
  const RawTensor& square_avg = s.buffers[0];
  mul_(square_avg, o.alpha_);
  addcmul_(square_avg, g, g, 1 - o.alpha_);
  RawTensor avg;
  if (o.centered_) {
    const RawTensor& grad_avg = s.buffers[2];
    lerp_(grad_avg, g, 1 - o.alpha_);
    avg = sqrt(prim::sub(square_avg, prim::mul(grad_avg, grad_avg)));
  } else {
    avg = sqrt(square_avg);
  }
  avg = add_scalar(avg, o.eps_);
  if (o.momentum_ > 0) {
    const RawTensor& buf = s.buffers[1];
    mul_(buf, o.momentum_);
    add_(buf, prim::div(g, avg));
    add_(w, prim::mul(buf, -o.lr_));
  } else {
    addcdiv_(w, g, avg, -o.lr_);
  }
}

// ---- Adagrad

void AdagradOptions::check(const std::string& who) const {
  TG_CHECK(lr_decay_ >= 0, Error, who, ": invalid lr_decay value ", lr_decay_);
  TG_CHECK(weight_decay_ >= 0, Error, who, ": invalid weight_decay value ", weight_decay_);
  TG_CHECK(initial_accumulator_value_ >= 0, Error, who, ": invalid initial_accumulator_value value ",
           initial_accumulator_value_);
  TG_CHECK(eps_ >= 0, Error, who, ": invalid epsilon value ", eps_);
}

Adagrad::Adagrad(std::vector<Tensor> params, AdagradOptions options)
    : Adagrad(std::vector<ParamGroup>{ParamGroup{std::move(params)}}, options) {}

Adagrad::Adagrad(std::vector<ParamGroup> groups, AdagradOptions options)
    : BufferedOptimizer(std::move(groups), options, "Adagrad", {"sum"}) {}

double Adagrad::initial_value(std::size_t, const OptimizerOptions&) const {
  // PyTorch fills every sum in its constructor from the constructor's initial_accumulator_value: a
  // group's own value is never read. The same here, so that ported code gives PyTorch's numbers.
  return options().initial_accumulator_value_;
}

void Adagrad::update(const RawTensor& w, const RawTensor& g0, State& s, const OptimizerOptions& options) {
  const auto& o = static_cast<const AdagradOptions&>(options);
  const RawTensor g = with_l2(g0, w, o.weight_decay_);
  const double clr = o.lr_ / (1 + static_cast<double>(s.step - 1) * o.lr_decay_);
  const RawTensor& sum = s.buffers[0];
  addcmul_(sum, g, g, 1);
  addcdiv_(w, g, add_scalar(sqrt(sum), o.eps_), -clr);
}

// ---- Adadelta

void AdadeltaOptions::check(const std::string& who) const {
  TG_CHECK(rho_ >= 0 && rho_ <= 1, Error, who, ": invalid rho value ", rho_, " (must be in [0, 1])");
  TG_CHECK(eps_ >= 0, Error, who, ": invalid epsilon value ", eps_);
  TG_CHECK(weight_decay_ >= 0, Error, who, ": invalid weight_decay value ", weight_decay_);
}

Adadelta::Adadelta(std::vector<Tensor> params, AdadeltaOptions options)
    : Adadelta(std::vector<ParamGroup>{ParamGroup{std::move(params)}}, options) {}

Adadelta::Adadelta(std::vector<ParamGroup> groups, AdadeltaOptions options)
    : BufferedOptimizer(std::move(groups), options, "Adadelta", {"square_avg", "acc_delta"}) {}

void Adadelta::update(const RawTensor& w, const RawTensor& g0, State& s, const OptimizerOptions& options) {
  const auto& o = static_cast<const AdadeltaOptions&>(options);
  const RawTensor g = with_l2(g0, w, o.weight_decay_);
  const RawTensor &square_avg = s.buffers[0], &acc_delta = s.buffers[1];
  mul_(square_avg, o.rho_);
  addcmul_(square_avg, g, g, 1 - o.rho_);
  const RawTensor std_ = sqrt(add_scalar(square_avg, o.eps_));
  const RawTensor delta = prim::mul(prim::div(sqrt(add_scalar(acc_delta, o.eps_)), std_), g);
  mul_(acc_delta, o.rho_);
  addcmul_(acc_delta, delta, delta, 1 - o.rho_);
  add_(w, prim::mul(delta, -o.lr_));
}

// ---- Adamax, NAdam, RAdam

template <class Derived>
void AdamLikeOptions<Derived>::check(const std::string& who) const {
  TG_CHECK(eps_ >= 0, Error, who, ": invalid epsilon value ", eps_);
  TG_CHECK(beta1_ >= 0 && beta1_ < 1, Error, who, ": invalid beta parameter at index 0: ", beta1_, " (must be in [0, 1))");
  TG_CHECK(beta2_ >= 0 && beta2_ < 1, Error, who, ": invalid beta parameter at index 1: ", beta2_, " (must be in [0, 1))");
  TG_CHECK(weight_decay_ >= 0, Error, who, ": invalid weight_decay value ", weight_decay_);
}
template struct AdamLikeOptions<AdamaxOptions>;
template struct AdamLikeOptions<NAdamOptions>;
template struct AdamLikeOptions<RAdamOptions>;

Adamax::Adamax(std::vector<Tensor> params, AdamaxOptions options)
    : Adamax(std::vector<ParamGroup>{ParamGroup{std::move(params)}}, options) {}

Adamax::Adamax(std::vector<ParamGroup> groups, AdamaxOptions options)
    : BufferedOptimizer(std::move(groups), options, "Adamax", {"exp_avg", "exp_inf"}) {}

void Adamax::update(const RawTensor& w, const RawTensor& g0, State& s, const OptimizerOptions& options) {
  const auto& o = static_cast<const AdamaxOptions&>(options);
  const RawTensor g = with_l2(g0, w, o.weight_decay_);
  const RawTensor &exp_avg = s.buffers[0], &exp_inf = s.buffers[1];
  lerp_(exp_avg, g, 1 - o.beta1_);
  mul_(exp_inf, o.beta2_);
  const RawTensor bound = add_scalar(prim::unary(UnaryOp::Abs, g), o.eps_);
  // torch.maximum(exp_inf * b2, |g| + eps); a NaN gradient makes the parameter NaN either way
  prim::copy_(exp_inf, prim::where(prim::binary(BinaryOp::Gt, bound, exp_inf, "maximum"), bound, exp_inf));
  const double clr = o.lr_ / (1 - std::pow(o.beta1_, static_cast<double>(s.step)));
  addcdiv_(w, exp_avg, exp_inf, -clr);
}

void NAdamOptions::check(const std::string& who) const {
  AdamLikeOptions<NAdamOptions>::check(who);
  TG_CHECK(momentum_decay_ >= 0, Error, who, ": invalid momentum_decay value ", momentum_decay_);
}

NAdam::NAdam(std::vector<Tensor> params, NAdamOptions options)
    : NAdam(std::vector<ParamGroup>{ParamGroup{std::move(params)}}, options) {}

NAdam::NAdam(std::vector<ParamGroup> groups, NAdamOptions options)
    : BufferedOptimizer(std::move(groups), options, "NAdam", {"exp_avg", "exp_avg_sq"}, /*with_mu_product=*/true) {}

void NAdam::update(const RawTensor& w, const RawTensor& g0, State& s, const OptimizerOptions& options) {
  const auto& o = static_cast<const NAdamOptions&>(options);
  const double t = static_cast<double>(s.step);
  const double bias_correction2 = 1 - std::pow(o.beta2_, t);
  RawTensor g = g0;
  if (o.weight_decay_ != 0) {
    if (o.decoupled_weight_decay_) mul_(w, 1 - o.lr_ * o.weight_decay_);
    else g = with_l2(g0, w, o.weight_decay_);
  }
  const double mu = o.beta1_ * (1.0 - 0.5 * std::pow(0.96, t * o.momentum_decay_));
  const double mu_next = o.beta1_ * (1.0 - 0.5 * std::pow(0.96, (t + 1) * o.momentum_decay_));
  s.mu_product *= mu;
  const RawTensor &exp_avg = s.buffers[0], &exp_avg_sq = s.buffers[1];
  lerp_(exp_avg, g, 1 - o.beta1_);
  mul_(exp_avg_sq, o.beta2_);
  addcmul_(exp_avg_sq, g, g, 1 - o.beta2_);
  const RawTensor denom = add_scalar(sqrt(prim::div(exp_avg_sq, scalar(bias_correction2, exp_avg_sq))), o.eps_);
  const double mu_product_next = s.mu_product * mu_next;
  addcdiv_(w, g, denom, -o.lr_ * (1.0 - mu) / (1.0 - s.mu_product));
  addcdiv_(w, exp_avg, denom, -o.lr_ * mu_next / (1.0 - mu_product_next));
}

RAdam::RAdam(std::vector<Tensor> params, RAdamOptions options)
    : RAdam(std::vector<ParamGroup>{ParamGroup{std::move(params)}}, options) {}

RAdam::RAdam(std::vector<ParamGroup> groups, RAdamOptions options)
    : BufferedOptimizer(std::move(groups), options, "RAdam", {"exp_avg", "exp_avg_sq"}) {}

void RAdam::update(const RawTensor& w, const RawTensor& g0, State& s, const OptimizerOptions& options) {
  const auto& o = static_cast<const RAdamOptions&>(options);
  const double t = static_cast<double>(s.step);
  RawTensor g = g0;
  if (o.weight_decay_ != 0) {
    if (o.decoupled_weight_decay_) mul_(w, 1 - o.lr_ * o.weight_decay_);
    else g = with_l2(g0, w, o.weight_decay_);
  }
  const RawTensor &exp_avg = s.buffers[0], &exp_avg_sq = s.buffers[1];
  lerp_(exp_avg, g, 1 - o.beta1_);
  mul_(exp_avg_sq, o.beta2_);
  addcmul_(exp_avg_sq, g, g, 1 - o.beta2_);
  const double bias_correction1 = 1 - std::pow(o.beta1_, t), bias_correction2 = 1 - std::pow(o.beta2_, t);
  const RawTensor corrected = prim::div(exp_avg, scalar(bias_correction1, exp_avg));
  const double rho_inf = 2 / (1 - o.beta2_) - 1;
  const double rho_t = rho_inf - 2 * t * std::pow(o.beta2_, t) / bias_correction2;
  if (rho_t > 5.0) {
    const double rect = std::sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t));
    const RawTensor adaptive =
        prim::div(scalar(std::sqrt(bias_correction2), exp_avg_sq), add_scalar(sqrt(exp_avg_sq), o.eps_));
    add_(w, prim::mul(prim::mul(prim::mul(prim::mul(corrected, o.lr_), adaptive), rect), -1.0));
  } else {
    add_(w, prim::mul(prim::mul(corrected, o.lr_), -1.0));
  }
}

}  // namespace optim
}  // namespace tg
