// optim/scheduler.h: learning-rate schedulers with PyTorch's closed forms, stepped once per epoch
// (or per iteration) after optimizer.step(): StepLR, CosineAnnealingLR, LinearLR (warm-up). Each
// parameter group follows the schedule from its own initial learning rate.
#pragma once
#include <cstdint>
#include <vector>

#include "tensorgrad/optim/optimizer.h"

namespace tg {
namespace optim {

/// The base of the learning-rate schedulers (PyTorch's torch.optim.lr_scheduler.LRScheduler). It
/// records every group's learning rate at construction as base_lr and, at each step(), sets
/// lr_at(epoch, base_lr) in closed form. The optimizer must outlive it.
class LRScheduler {
 public:
  /// Reads the base learning rates; subclass constructors then call init().
  explicit LRScheduler(Optimizer& optimizer);
  virtual ~LRScheduler() = default;
  /// Advances one epoch and sets every group's learning rate.
  void step();
  /// The number of step() calls so far (0 after construction).
  int64_t last_epoch() const { return epoch_; }
  /// A group's learning rate when the scheduler was built; IndexError for a bad group.
  double base_lr(std::size_t group = 0) const;
  /// A group's current learning rate (the optimizer's).
  double get_last_lr(std::size_t group = 0) const { return optimizer_.lr(group); }

 protected:
  /// The learning rate at `epoch` (0 = the start) of a group that started at base_lr.
  virtual double lr_at(int64_t epoch, double base_lr) const = 0;
  /// Called by subclass constructors once they are set up: applies epoch 0.
  void init() { apply(); }

 private:
  void apply();
  Optimizer& optimizer_;
  std::vector<double> base_lrs_;
  int64_t epoch_ = 0;
};

/// lr = base_lr * gamma^(epoch / step_size)
class StepLR : public LRScheduler {
 public:
  /// Multiplies the learning rate by gamma every step_size epochs (Error unless step_size > 0).
  StepLR(Optimizer& optimizer, int64_t step_size, double gamma = 0.1);
 protected:
  double lr_at(int64_t epoch, double base_lr) const override;
 private:
  int64_t step_size_;
  double gamma_;
};

/// lr = eta_min + (base_lr - eta_min) (1 + cos(pi epoch / T_max)) / 2
class CosineAnnealingLR : public LRScheduler {
 public:
  /// Anneals from base_lr to eta_min over T_max epochs (Error unless T_max > 0).
  CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min = 0);
 protected:
  double lr_at(int64_t epoch, double base_lr) const override;
 private:
  int64_t t_max_;
  double eta_min_;
};

/// lr = base_lr * (start + (end - start) min(epoch, total_iters) / total_iters): a linear warm-up.
class LinearLR : public LRScheduler {
 public:
  /// Scales base_lr from start_factor (in (0, 1]) to end_factor (in [0, 1]) over total_iters (> 0)
  /// epochs, then keeps end_factor; Error otherwise.
  LinearLR(Optimizer& optimizer, double start_factor = 1.0 / 3, double end_factor = 1.0, int64_t total_iters = 5);
 protected:
  double lr_at(int64_t epoch, double base_lr) const override;
 private:
  double start_, end_;
  int64_t total_;
};

/// Scales all gradients so that their global 2-norm is at most max_norm; returns the norm before
/// clipping (torch.nn.utils.clip_grad_norm_). Parameters without a gradient are skipped.
double clip_grad_norm(const std::vector<Tensor>& params, double max_norm);

}  // namespace optim
}  // namespace tg
