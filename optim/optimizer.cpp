// optim/optimizer.cpp: Optimizer::zero_grad and SGD::step. Validation of every parameter happens
// before any is updated, so a step either completes for all parameters or changes none.
#include "optim/optimizer.h"

#include "engine/error.h"
#include "engine/prim.h"

namespace tg {
namespace optim {

Optimizer::Optimizer(std::vector<Variable> params) : params_(std::move(params)) {
  for (std::size_t i = 0; i < params_.size(); ++i)
    TG_CHECK(params_[i].defined() && params_[i].is_leaf(), Error, "optimizer: parameter ", i,
             " must be a defined leaf Variable");
}

void Optimizer::zero_grad(bool set_to_none) {
  for (Variable& p : params_) {
    if (set_to_none) {
      p.zero_grad();
    } else if (p.grad().defined()) {
      NoGradGuard no_grad;
      prim::fill_(p.grad().data(), 0.0);
    }
  }
}

SGD::SGD(std::vector<Variable> params, SGDOptions options) : Optimizer(std::move(params)), options_(options) {
  TG_CHECK(options.lr_ >= 0, Error, "SGD: invalid learning rate ", options.lr_);
  TG_CHECK(options.momentum_ >= 0, Error, "SGD: invalid momentum ", options.momentum_);
  TG_CHECK(!options.nesterov_ || (options.momentum_ > 0 && options.dampening_ == 0), Error,
           "SGD: Nesterov momentum requires a momentum and zero dampening");
  velocity_.resize(params_.size());
}

void SGD::step() {
  // Validate everything first: a step updates all parameters or none.
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const Variable& p = params_[i];
    const Variable g = p.grad();
    if (!g.defined()) continue;
    TG_CHECK(g.shape() == p.shape() && g.dtype() == p.dtype() && g.device() == p.device(), Error, "SGD: parameter ", i,
             " ", tensor_meta_str(p.data()), " has a gradient ", tensor_meta_str(g.data()), " on ", g.device(),
             " that does not match it");
    TG_CHECK(p.data().is_contiguous(), Error, "SGD: parameter ", i, " must be contiguous");
  }
  NoGradGuard no_grad;
  const SGDOptions& o = options_;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    Variable& p = params_[i];
    const Variable g = p.grad();
    if (!g.defined()) continue;   // not reached by this backward
    bool first = false;
    if (o.momentum_ != 0 && (!velocity_[i].defined() || velocity_[i].device() != p.device() ||
                             velocity_[i].dtype() != p.dtype())) {
      velocity_[i] = prim::empty(p.shape(), p.dtype(), p.device());
      first = true;
    }
    backend_for(p.device())
        .sgd_step(p.data(), g.data().contiguous(), o.momentum_ != 0 ? velocity_[i] : Tensor(), o.lr_, o.momentum_,
                  o.dampening_, o.weight_decay_, o.nesterov_, first);
    p.data().storage()->bump_version();   // an in-place write: Note [Version counter]
  }
}

void Optimizer::set_state(const std::vector<std::pair<std::string, Tensor>>& state) {
  TG_CHECK(state.empty(), Error, "set_state: this optimizer keeps no state, but the given state has ", state.size(),
           " entries (the first is \"", state.front().first, "\")");
}

std::vector<std::pair<std::string, Tensor>> SGD::state() const {
  std::vector<std::pair<std::string, Tensor>> out;
  for (std::size_t i = 0; i < velocity_.size(); ++i)
    if (velocity_[i].defined()) out.emplace_back("velocity." + std::to_string(i), velocity_[i]);
  return out;
}

void SGD::set_state(const std::vector<std::pair<std::string, Tensor>>& state) {
  // Validate every entry, then make private copies on each parameter's device, then swap: a
  // failure leaves the old state in place.
  const std::string prefix = "velocity.";
  std::vector<Tensor> next(params_.size());
  for (const auto& [name, t] : state) {
    const std::string digits = name.rfind(prefix, 0) == 0 ? name.substr(prefix.size()) : std::string();
    bool ok = !digits.empty() && digits.size() <= 9 && (digits == "0" || digits[0] != '0') &&
              digits.find_first_not_of("0123456789") == std::string::npos;
    const std::size_t i = ok ? std::size_t(std::stoul(digits)) : 0;
    ok = ok && i < params_.size();
    TG_CHECK(ok, Error, "SGD::set_state: unexpected entry \"", name, "\" (expected velocity.<i> for 0 <= i < ",
             params_.size(), ")");
    TG_CHECK(!next[i].defined(), Error, "SGD::set_state: duplicate entry \"", name, "\"");
    TG_CHECK(t.defined(), Error, "SGD::set_state: entry \"", name, "\" is undefined");
    const Variable& p = params_[i];
    TG_CHECK(t.shape() == p.shape(), ShapeError, "SGD::set_state: \"", name, "\" has shape ", shape_str(t.shape()),
             " but parameter ", i, " has shape ", shape_str(p.shape()));
    TG_CHECK(t.dtype() == p.dtype(), DTypeError, "SGD::set_state: \"", name, "\" is ", dtype_name(t.dtype()),
             " but parameter ", i, " is ", dtype_name(p.dtype()));
    next[i] = t;
  }
  for (std::size_t i = 0; i < next.size(); ++i) {
    if (!next[i].defined()) continue;
    const Tensor moved = next[i].to(params_[i].device());
    next[i] = moved.storage() == next[i].storage() ? moved.clone() : moved.contiguous();   // never alias the caller's
  }
  velocity_ = std::move(next);
}

}  // namespace optim
}  // namespace tg
