// optim/scheduler.h: learning-rate schedulers in PyTorch's chainable form, stepped once per epoch (or
// per iteration) after optimizer.step(): StepLR, CosineAnnealingLR, LinearLR (warm-up). Several on one
// optimizer compose (Note [Chainable schedulers]). Also gradient-norm clipping: clip_grad_norm,
// clip_grad_norm_tensor, get_total_norm, clip_grads_with_norm_, and libtorch's tg::nn::utils::clip_grad_norm_.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tensorgrad/optim/optimizer.h"

namespace tg {
namespace optim {

// Note [Chainable schedulers]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A scheduler's step computes each group's next learning rate from the group's current one, as
// PyTorch 2.x's get_lr() does (its recursive form, not the closed form of step(epoch)): StepLR
// multiplies the current rate by gamma at every multiple of step_size, LinearLR by the ratio of two
// consecutive factors, CosineAnnealingLR moves it along the cosine towards eta_min. So two schedulers
// stepped on one optimizer compose (StepLR and a LinearLR warm-up multiply), instead of the last one
// to step overwriting the other. A scheduler's base_lr is the group's Optimizer::initial_lr, which the
// first scheduler built on the group sets from its learning rate at that moment (PyTorch's
// setdefault("initial_lr")): a second scheduler sees the rate from before the first one's warm-up.
// A group added after a scheduler was built is stepped like the others but has no base_lr.

/// Internal to the schedulers' set_state: state's values by name, after checking that it names
/// exactly the entries of `expected` (Error naming the first missing or unexpected one).
std::map<std::string, double> checked_scheduler_state(const std::vector<std::pair<std::string, double>>& state,
                                                      const std::vector<std::pair<std::string, double>>& expected,
                                                      const char* who);

/// The base of the learning-rate schedulers (PyTorch's torch.optim.lr_scheduler.LRScheduler). The
/// constructor sets every group's initial_lr that is unset to the group's learning rate and reads
/// them as base_lr; step() sets each group's learning rate to get_lr(group, current rate). The
/// optimizer must outlive it.
class LRScheduler {
 public:
  /// Records the base learning rates; subclass constructors then call init().
  explicit LRScheduler(Optimizer& optimizer);
  virtual ~LRScheduler() = default;
  /// Advances one epoch and sets every group's learning rate from its current one. A step that
  /// raises changes no learning rate and no epoch.
  virtual void step();
  /// The number of step() calls so far (0 after construction).
  int64_t last_epoch() const { return epoch_; }
  /// A group's initial_lr when the scheduler was built; IndexError for a group it was not built with.
  double base_lr(std::size_t group = 0) const;
  /// The number of groups the scheduler has a base_lr for.
  std::size_t num_base_lrs() const { return base_lrs_.size(); }
  /// A group's learning rate as this scheduler's last step (or its construction) left it; a
  /// scheduler stepped after it may have changed the optimizer's since. IndexError for a bad group.
  double get_last_lr(std::size_t group = 0) const;
  /// Checkpoint state as named numbers (tg::save and tg::load in io/checkpoint.h; PyTorch's
  /// scheduler.state_dict()): "last_epoch", "base_lr.<group>" and "last_lr.<group>"; SequentialLR
  /// adds its schedulers' under "schedulers.<k>.". The hyperparameters are the constructor's and
  /// are not stored: build the same scheduler, then load. Restoring the learning rates themselves is
  /// the optimizer checkpoint's part.
  virtual std::vector<std::pair<std::string, double>> state() const;
  /// Restores what state() gave, after checking it names exactly the entries state() names (Error
  /// naming a missing or unexpected one; nothing changes then).
  virtual void set_state(const std::vector<std::pair<std::string, double>>& state);

 protected:
  /// PyTorch's chainable get_lr(): the learning rate of `group` at last_epoch() (0 at construction)
  /// from `lr`, the group's current learning rate.
  virtual double get_lr(std::size_t group, double lr) const = 0;
  /// Called by subclass constructors once they are set up: applies epoch 0.
  void init() { apply(); }
  /// The optimizer whose learning rates it sets.
  const Optimizer& optimizer() const { return optimizer_; }
  /// The optimizer, writable (OneCycleLR cycles the momentum in its groups' options).
  Optimizer& mutable_optimizer() { return optimizer_; }
  /// PyTorch's closed form at epoch 0 (what SequentialLR's step(0) at a milestone sets), called with
  /// last_epoch() == 0: by default get_lr(group, base_lr(group)), which is the closed form for every
  /// scheduler whose epoch-0 rate is a function of the base rate.
  virtual double restart_lr(std::size_t group, double lr) const;
  /// Steps like step() but from `epoch` (without advancing past it) through get_lr or restart_lr.
  void set_epoch_and_apply(int64_t epoch, bool restart);

 private:
  friend class SequentialLR;   // moves its schedulers' epochs (PyTorch's recursive_undo and step(0))
  /// PyTorch's recursive_undo: the epoch before the initial step (SequentialLR: of each scheduler).
  virtual void undo_initial_step() { --epoch_; }
  void apply(bool restart = false);
  Optimizer& optimizer_;
  std::vector<double> base_lrs_;
  std::vector<double> last_lrs_;
  int64_t epoch_ = 0;
};

/// Multiplies the learning rate by gamma every step_size epochs: with no other scheduler,
/// lr = base_lr * gamma^(epoch / step_size).
class StepLR : public LRScheduler {
 public:
  /// Error for step_size 0 (PyTorch fails at the first step: integer modulo by zero); a negative
  /// step_size decays every |step_size| epochs, as in PyTorch.
  StepLR(Optimizer& optimizer, int64_t step_size, double gamma = 0.1);
 protected:
  /// lr * gamma at a nonzero multiple of step_size, else lr.
  double get_lr(std::size_t group, double lr) const override;
 private:
  int64_t step_size_;
  double gamma_;
};

/// Cosine annealing without restarts, recursively: with no other scheduler,
/// lr = eta_min + (base_lr - eta_min) (1 + cos(pi epoch / T_max)) / 2, rising again after T_max.
class CosineAnnealingLR : public LRScheduler {
 public:
  /// Error for T_max 0 (PyTorch fails at the first step: integer modulo by zero); a negative T_max
  /// anneals over |T_max| epochs, as in PyTorch.
  CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min = 0);
 protected:
  /// eta_min + (lr - eta_min) (1 + cos(pi e / T)) / (1 + cos(pi (e - 1) / T)), and at the epochs where
  /// that denominator is 0 (e - 1 = T_max mod 2 T_max), lr + (base_lr - eta_min) (1 - cos(pi / T)) / 2.
  double get_lr(std::size_t group, double lr) const override;
 private:
  int64_t t_max_;
  double eta_min_;
};

/// A linear warm-up: with no other scheduler, lr = base_lr * (start + (end - start) min(epoch,
/// total_iters) / total_iters).
class LinearLR : public LRScheduler {
 public:
  /// Scales the learning rate from start_factor (in (0, 1]) to end_factor (in [0, 1]) over
  /// total_iters epochs, then leaves it; Error for factors outside those ranges, with PyTorch's words.
  /// total_iters <= 0 keeps start_factor for good, as in PyTorch.
  LinearLR(Optimizer& optimizer, double start_factor = 1.0 / 3, double end_factor = 1.0, int64_t total_iters = 5);
 protected:
  /// lr * start at epoch 0; lr * (1 + (end - start) / (total start + (e - 1) (end - start))) for
  /// 0 < e <= total_iters; lr after.
  double get_lr(std::size_t group, double lr) const override;
 private:
  double start_, end_;
  int64_t total_;
};

/// torch.nn.utils.get_total_norm: the norm_type-norm of the per-tensor norms of `tensors` (each
/// defined and floating, else Error / DTypeError), as if they were one vector. Each tensor's norm is computed in float32 for float16
/// and bfloat16 (float64 for float64) and rounded to its dtype; the total is in the promoted dtype of
/// all, on the first tensor's device (a float32 0 on the CPU when there are none). norm_type: p > 0
/// ((sum |x|^p)^(1/p)), inf (max |x|), -inf (min |x|), 0 (the count of nonzeros), p < 0 (the same
/// formula; Error for an empty tensor then, and for inf on an empty tensor). Error when
/// error_if_nonfinite and the total is NaN or infinite, with PyTorch's message. Nothing is read back
/// without error_if_nonfinite, so it can be captured into a CUDA graph; with it, Error inside a
/// capture (before any work is queued). Note [Clipping dtypes].
Tensor get_total_norm(const std::vector<Tensor>& tensors, double norm_type = 2.0, bool error_if_nonfinite = false);

/// torch.nn.utils.clip_grads_with_norm_: multiplies every gradient of params by
/// min(max_norm / (total_norm + 1e-6), 1), computed in total_norm's dtype, as PyTorch does: a NaN
/// total makes every gradient NaN, an infinite one makes them 0 (NaN where they are infinite). The
/// coefficient is computed and applied on the device (always multiplied, as PyTorch's foreach path),
/// so it can be captured into a CUDA graph.
void clip_grads_with_norm_(const std::vector<Tensor>& params, double max_norm, const Tensor& total_norm);

/// torch.nn.utils.clip_grad_norm_ as Python's returns: get_total_norm of the gradients of params
/// (parameters without one are skipped; Error for an undefined parameter), then
/// clip_grads_with_norm_. Returns the total norm before clipping as a 0-d tensor of its dtype on the
/// first gradient's device (a float32 0 on the CPU when no parameter has a gradient). A negative or
/// NaN max_norm is used as given, as PyTorch does. Nothing is read back (unless
/// error_if_nonfinite), so it can be captured into a CUDA graph with the step it clips for; with
/// error_if_nonfinite, Error inside a capture before any work is queued.
Tensor clip_grad_norm_tensor(const std::vector<Tensor>& params, double max_norm, double norm_type = 2.0,
                             bool error_if_nonfinite = false);

/// clip_grad_norm_tensor with the total norm returned as a double (as libtorch's clip_grad_norm_
/// returns it): one host synchronization. Error inside a CUDA graph capture of the gradients'
/// device, before any work is queued: a capture cannot read the value back; use
/// clip_grad_norm_tensor there.
double clip_grad_norm(const std::vector<Tensor>& params, double max_norm, double norm_type = 2.0,
                      bool error_if_nonfinite = false);

}  // namespace optim

namespace nn {
namespace utils {

/// libtorch's spelling of tg::optim::clip_grad_norm (torch::nn::utils::clip_grad_norm_), with Python's
/// rules: norm_type 0 counts the gradients with a nonzero element, where libtorch's C++ returns the
/// number of gradients. It returns a double, so inside a CUDA graph capture it raises Error: use
/// tg::optim::clip_grad_norm_tensor there (Python's return type, a tensor on the device).
inline double clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type = 2.0,
                              bool error_if_nonfinite = false) {
  return optim::clip_grad_norm(parameters, max_norm, norm_type, error_if_nonfinite);
}

}  // namespace utils
}  // namespace nn
}  // namespace tg
