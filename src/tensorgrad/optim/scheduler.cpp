// optim/scheduler.cpp: closed-form learning-rate schedules (PyTorch's _get_closed_form_lr) and
// gradient-norm clipping.
#include "tensorgrad/optim/scheduler.h"

#include <cmath>

#include "tensorgrad/core/error.h"
#include "tensorgrad/prim/prim.h"

namespace tg {
namespace optim {

LRScheduler::LRScheduler(Optimizer& optimizer) : optimizer_(optimizer) {
  for (std::size_t g = 0; g < optimizer.num_param_groups(); ++g) base_lrs_.push_back(optimizer.lr(g));
}

double LRScheduler::base_lr(std::size_t group) const {
  TG_CHECK(group < base_lrs_.size(), IndexError, "LRScheduler: parameter group ", group, " does not exist (",
           base_lrs_.size(), " groups)");
  return base_lrs_[group];
}

void LRScheduler::step() {
  ++epoch_;
  apply();
}

void LRScheduler::apply() {
  for (std::size_t g = 0; g < base_lrs_.size() && g < optimizer_.num_param_groups(); ++g)
    optimizer_.set_lr(g, lr_at(epoch_, base_lrs_[g]));
}

StepLR::StepLR(Optimizer& optimizer, int64_t step_size, double gamma)
    : LRScheduler(optimizer), step_size_(step_size), gamma_(gamma) {
  TG_CHECK(step_size > 0, Error, "StepLR: step_size must be positive, got ", step_size);
  init();
}
double StepLR::lr_at(int64_t epoch, double base_lr) const {
  return base_lr * std::pow(gamma_, static_cast<double>(epoch / step_size_));
}

CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min)
    : LRScheduler(optimizer), t_max_(T_max), eta_min_(eta_min) {
  TG_CHECK(T_max > 0, Error, "CosineAnnealingLR: T_max must be positive, got ", T_max);
  init();
}
double CosineAnnealingLR::lr_at(int64_t epoch, double base_lr) const {
  const double pi = 3.14159265358979323846;
  return eta_min_ + (base_lr - eta_min_) * (1 + std::cos(pi * static_cast<double>(epoch) / static_cast<double>(t_max_))) / 2;
}

LinearLR::LinearLR(Optimizer& optimizer, double start_factor, double end_factor, int64_t total_iters)
    : LRScheduler(optimizer), start_(start_factor), end_(end_factor), total_(total_iters) {
  TG_CHECK(start_factor > 0 && start_factor <= 1 && end_factor >= 0 && end_factor <= 1, Error,
           "LinearLR: factors must be in (0, 1] and [0, 1], got ", start_factor, " and ", end_factor);
  TG_CHECK(total_iters > 0, Error, "LinearLR: total_iters must be positive, got ", total_iters);
  init();
}
double LinearLR::lr_at(int64_t epoch, double base_lr) const {
  const double t = static_cast<double>(std::min(epoch, total_)) / static_cast<double>(total_);
  return base_lr * (start_ + (end_ - start_) * t);
}

double clip_grad_norm(const std::vector<Tensor>& params, double max_norm) {
  TG_CHECK(max_norm >= 0, Error, "clip_grad_norm: max_norm must be non-negative, got ", max_norm);
  NoGradGuard no_grad;
  double sq = 0;
  for (const Tensor& p : params) {
    const Tensor g = p.grad();
    if (!g.defined()) continue;
    sq += prim::sum(prim::mul(g.data(), g.data()).to(kFloat64)).item();   // one sync per parameter
  }
  const double norm = std::sqrt(sq);
  const double scale = max_norm / (norm + 1e-6);
  if (scale < 1) {
    for (const Tensor& p : params) {
      const Tensor g = p.grad();
      if (g.defined()) prim::binary_(BinaryOp::Mul, g.data(), prim::scalar_like(scale, g.data()), "clip_grad_norm");
    }
  }
  return norm;
}

}  // namespace optim
}  // namespace tg
