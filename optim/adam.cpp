// optim/adam.cpp: Adam/AdamW steps. Every parameter is validated before any is updated, so a step
// completes for all parameters or changes none. Kernel: Backend::adam_step.
#include "optim/adam.h"

#include "engine/error.h"
#include "engine/prim.h"

namespace tg {
namespace optim {

Adam::Adam(std::vector<Variable> params, AdamOptions options) : Adam(std::move(params), options, false) {}

Adam::Adam(std::vector<Variable> params, AdamOptions options, bool decoupled)
    : Optimizer(std::move(params)), options_(options), decoupled_(decoupled) {
  const AdamOptions& o = options_;
  TG_CHECK(o.lr_ >= 0, Error, "Adam: invalid learning rate ", o.lr_);
  TG_CHECK(o.eps_ >= 0, Error, "Adam: invalid epsilon ", o.eps_);
  TG_CHECK(o.beta1_ >= 0 && o.beta1_ < 1 && o.beta2_ >= 0 && o.beta2_ < 1, Error, "Adam: invalid betas (", o.beta1_,
           ", ", o.beta2_, "): each must be in [0, 1)");
  TG_CHECK(o.weight_decay_ >= 0, Error, "Adam: invalid weight_decay ", o.weight_decay_);
  state_.resize(params_.size());
}

void Adam::step() {
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const Variable& p = params_[i];
    const Variable g = p.grad();
    if (!g.defined()) continue;
    TG_CHECK(g.shape() == p.shape() && g.dtype() == p.dtype() && g.device() == p.device(), Error, "Adam: parameter ", i,
             " ", tensor_meta_str(p.data()), " has a gradient ", tensor_meta_str(g.data()), " that does not match it");
    TG_CHECK(p.data().is_contiguous(), Error, "Adam: parameter ", i, " must be contiguous");
  }
  NoGradGuard no_grad;
  const AdamOptions& o = options_;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    Variable& p = params_[i];
    const Variable g = p.grad();
    if (!g.defined()) continue;   // not reached by this backward
    State& s = state_[i];
    if (!s.exp_avg.defined()) {
      s.exp_avg = prim::full(p.shape(), 0.0, p.dtype(), p.device());
      s.exp_avg_sq = prim::full(p.shape(), 0.0, p.dtype(), p.device());
      if (o.amsgrad_) s.max_exp_avg_sq = prim::full(p.shape(), 0.0, p.dtype(), p.device());
    } else if (s.exp_avg.device() != p.device() || s.exp_avg.dtype() != p.dtype()) {   // the module moved
      s.exp_avg = s.exp_avg.to(p.device()).to(p.dtype());
      s.exp_avg_sq = s.exp_avg_sq.to(p.device()).to(p.dtype());
      if (s.max_exp_avg_sq.defined()) s.max_exp_avg_sq = s.max_exp_avg_sq.to(p.device()).to(p.dtype());
    }
    ++s.step;
    backend_for(p.device())
        .adam_step(p.data(), g.data().contiguous(), s.exp_avg, s.exp_avg_sq, s.max_exp_avg_sq, o.lr_, o.beta1_,
                   o.beta2_, o.eps_, o.weight_decay_, decoupled_, s.step);
    p.data().storage()->bump_version();   // an in-place write: Note [Version counter]
  }
}

}  // namespace optim
}  // namespace tg
