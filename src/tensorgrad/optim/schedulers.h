// optim/schedulers.h: the learning-rate schedulers beyond StepLR, CosineAnnealingLR and LinearLR
// (those and the LRScheduler base: optim/scheduler.h), with PyTorch 2.x's formulas: ExponentialLR,
// MultiStepLR, ConstantLR, LambdaLR, MultiplicativeLR, SequentialLR, OneCycleLR (with momentum
// cycling), and ReduceLROnPlateau, which is stepped with a metric. Implemented in optim/schedulers.cpp.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "tensorgrad/optim/scheduler.h"

namespace tg {
namespace optim {

/// Multiplies the learning rate by gamma every epoch: with no other scheduler, lr = base_lr gamma^epoch.
class ExponentialLR : public LRScheduler {
 public:
  /// Decays by gamma at every step.
  ExponentialLR(Optimizer& optimizer, double gamma);
 protected:
  /// lr at epoch 0, else lr * gamma.
  double get_lr(std::size_t group, double lr) const override;
 private:
  double gamma_;
};

/// Multiplies the learning rate by gamma at each milestone epoch (by gamma^n for a milestone listed n
/// times): with no other scheduler, lr = base_lr gamma^(number of milestones <= epoch).
class MultiStepLR : public LRScheduler {
 public:
  /// milestones: epoch indices, in any order (PyTorch counts them).
  MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma = 0.1);
 protected:
  /// lr * gamma^(times the epoch is listed).
  double get_lr(std::size_t group, double lr) const override;
 private:
  std::vector<int64_t> milestones_;
  double gamma_;
};

/// Multiplies the learning rate by factor until epoch total_iters, where it divides it back.
class ConstantLR : public LRScheduler {
 public:
  /// Error for a factor outside [0, 1], with PyTorch's words.
  ConstantLR(Optimizer& optimizer, double factor = 1.0 / 3, int64_t total_iters = 5);
 protected:
  /// lr * factor at epoch 0, lr / factor at total_iters, else lr.
  double get_lr(std::size_t group, double lr) const override;
 private:
  double factor_;
  int64_t total_;
};

/// The learning rate is base_lr * lr_lambda(epoch) (not chainable, as in PyTorch).
class LambdaLR : public LRScheduler {
 public:
  /// One function for every group.
  LambdaLR(Optimizer& optimizer, std::function<double(int64_t)> lr_lambda);
  /// One function per group (Error unless there are as many as groups, or one is empty).
  LambdaLR(Optimizer& optimizer, std::vector<std::function<double(int64_t)>> lr_lambdas);
 protected:
  /// base_lr(group) * lambda(epoch); Error for a group added after the scheduler was built.
  double get_lr(std::size_t group, double lr) const override;
 private:
  std::vector<std::function<double(int64_t)>> lambdas_;
};

/// Multiplies the learning rate by lr_lambda(epoch) at every step after the first.
class MultiplicativeLR : public LRScheduler {
 public:
  /// One function for every group.
  MultiplicativeLR(Optimizer& optimizer, std::function<double(int64_t)> lr_lambda);
  /// One function per group (Error unless there are as many as groups, or one is empty).
  MultiplicativeLR(Optimizer& optimizer, std::vector<std::function<double(int64_t)>> lr_lambdas);
 protected:
  /// lr at epoch 0, else lr * lambda(epoch).
  double get_lr(std::size_t group, double lr) const override;
  /// PyTorch has no closed form: at a SequentialLR milestone, lr * lambda(0).
  double restart_lr(std::size_t group, double lr) const override;
 private:
  std::vector<std::function<double(int64_t)>> lambdas_;
};

/// Runs schedulers one after another (torch.optim.lr_scheduler.SequentialLR): schedulers[i] from
/// milestone i - 1 (increasing epochs) on. Building it resets every group's learning rate to its
/// initial_lr, undoes the schedulers' initial steps and redoes the first one's; at a milestone the
/// next scheduler starts from its epoch-0 closed form. The schedulers are not owned and must outlive
/// it; step the SequentialLR, not them.
class SequentialLR : public LRScheduler {
 public:
  /// Error for no scheduler, a null one, one on another optimizer, or a milestone count other than
  /// schedulers.size() - 1.
  SequentialLR(Optimizer& optimizer, std::vector<LRScheduler*> schedulers, std::vector<int64_t> milestones);
  /// Advances one epoch: the scheduler of that epoch steps (or restarts at its milestone).
  void step() override;
  /// Its own state and each scheduler's under "schedulers.<k>.".
  std::vector<std::pair<std::string, double>> state() const override;
  /// Restores state(), its schedulers' included (all checked before any changes).
  void set_state(const std::vector<std::pair<std::string, double>>& state) override;
 protected:
  /// Unused: step() delegates to the schedulers.
  double get_lr(std::size_t group, double lr) const override;
 private:
  void undo_initial_step() override;
  /// The constructor's checks, before the base records anything.
  static Optimizer& checked(Optimizer& optimizer, const std::vector<LRScheduler*>& schedulers,
                            const std::vector<int64_t>& milestones);
  std::vector<LRScheduler*> schedulers_;
  std::vector<int64_t> milestones_;
};

/// Options of OneCycleLR (PyTorch's keyword arguments and defaults): the length, either total_steps or
/// epochs and steps_per_epoch; pct_start 0.3, anneal_strategy "cos", cycle_momentum true,
/// base_momentum 0.85, max_momentum 0.95, div_factor 25, final_div_factor 1e4, three_phase false.
struct OneCycleLROptions {
  /// The number of steps in the cycle.
  OneCycleLROptions& total_steps(int64_t v) { total_steps_ = v; return *this; }
  /// With steps_per_epoch, the length when total_steps is not given.
  OneCycleLROptions& epochs(int64_t v) { epochs_ = v; return *this; }
  /// With epochs, the length when total_steps is not given.
  OneCycleLROptions& steps_per_epoch(int64_t v) { steps_per_epoch_ = v; return *this; }
  /// The fraction of the cycle spent raising the learning rate, in [0, 1].
  OneCycleLROptions& pct_start(double v) { pct_start_ = v; return *this; }
  /// "cos" or "linear".
  OneCycleLROptions& anneal_strategy(std::string v) { anneal_strategy_ = std::move(v); return *this; }
  /// Cycles the momentum (SGD, RMSprop) or beta1 (Adam, AdamW, Adamax, NAdam, RAdam) inversely to the
  /// learning rate; Error for an optimizer with neither.
  OneCycleLROptions& cycle_momentum(bool v) { cycle_momentum_ = v; return *this; }
  /// The momentum at the peak learning rate.
  OneCycleLROptions& base_momentum(double v) { base_momentum_ = v; return *this; }
  /// The momentum at the start and end of the cycle.
  OneCycleLROptions& max_momentum(double v) { max_momentum_ = v; return *this; }
  /// initial_lr = max_lr / div_factor.
  OneCycleLROptions& div_factor(double v) { div_factor_ = v; return *this; }
  /// min_lr = initial_lr / final_div_factor.
  OneCycleLROptions& final_div_factor(double v) { final_div_factor_ = v; return *this; }
  /// Three phases (up, back down to initial_lr, annihilation to min_lr) instead of two.
  OneCycleLROptions& three_phase(bool v) { three_phase_ = v; return *this; }
  int64_t total_steps_ = 0;           ///< See total_steps(); 0: not given.
  int64_t epochs_ = 0;                ///< See epochs(); 0: not given.
  int64_t steps_per_epoch_ = 0;       ///< See steps_per_epoch(); 0: not given.
  double pct_start_ = 0.3;            ///< See pct_start().
  std::string anneal_strategy_ = "cos";   ///< See anneal_strategy().
  bool cycle_momentum_ = true;        ///< See cycle_momentum().
  double base_momentum_ = 0.85;       ///< See base_momentum().
  double max_momentum_ = 0.95;        ///< See max_momentum().
  double div_factor_ = 25.0;          ///< See div_factor().
  double final_div_factor_ = 1e4;     ///< See final_div_factor().
  bool three_phase_ = false;          ///< See three_phase().
};

/// The 1cycle policy (torch.optim.lr_scheduler.OneCycleLR), stepped after every batch: the learning
/// rate rises from max_lr / div_factor to max_lr over pct_start of the steps and anneals to
/// initial_lr / final_div_factor, the momentum the other way. Building it sets every group's
/// initial_lr to max_lr / div_factor (and with cycle_momentum the momentum or beta1 to max_momentum).
/// Not chainable: the rate at each step is a function of the step. Error at a step past total_steps.
class OneCycleLR : public LRScheduler {
 public:
  /// One peak learning rate for every group.
  OneCycleLR(Optimizer& optimizer, double max_lr, const OneCycleLROptions& options);
  /// One peak learning rate per group (Error for another count).
  OneCycleLR(Optimizer& optimizer, std::vector<double> max_lrs, const OneCycleLROptions& options);
  /// Advances one step: the learning rates, then (cycle_momentum) the momenta.
  void step() override;
  /// The number of steps in the cycle.
  int64_t total_steps() const { return total_steps_; }
 protected:
  /// The annealed rate of the phase that holds last_epoch(); Error past total_steps.
  double get_lr(std::size_t group, double lr) const override;
 private:
  struct Phase {
    double end_step;
    int start_lr, end_lr, start_momentum, end_momentum;   // 0 initial / base, 1 max, 2 min
  };
  /// The value at `step` of the lr (momentum = false) or momentum schedule of `group`.
  double at(std::size_t group, int64_t step, bool momentum) const;
  void set_momenta();
  int64_t total_steps_;
  std::vector<Phase> phases_;
  bool cos_;
  bool cycle_momentum_;
  double base_momentum_, max_momentum_;
  std::vector<double> max_lrs_, min_lrs_;
};

/// Divides the learning rate when a metric stops improving (torch.optim.lr_scheduler.ReduceLROnPlateau):
/// step(metric) after each validation. It reads and sets the optimizer's current learning rates, so it
/// composes with other schedulers; SequentialLR does not take it (its step needs the metric).
class ReduceLROnPlateau {
 public:
  /// mode "min" (the metric should fall) or "max"; lr = max(lr * factor, min_lr) after more than
  /// patience epochs without improvement (relative to threshold in threshold_mode "rel" or "abs"),
  /// then cooldown epochs of rest; a change below eps is skipped. min_lr: one value for every group,
  /// or one per group. Error for factor >= 1, an unknown mode or threshold_mode, or a min_lr count
  /// other than 1 or the number of groups. The optimizer must outlive it.
  ReduceLROnPlateau(Optimizer& optimizer, const std::string& mode = "min", double factor = 0.1, int64_t patience = 10,
                    double threshold = 1e-4, const std::string& threshold_mode = "rel", int64_t cooldown = 0,
                    std::vector<double> min_lr = {0.0}, double eps = 1e-8);
  /// Records one epoch's metric and reduces the learning rates when it has not improved for too long.
  void step(double metric);
  /// The number of step() calls.
  int64_t last_epoch() const { return last_epoch_; }
  /// The best metric so far (inf for "min" before any step, -inf for "max").
  double best() const { return best_; }
  /// Epochs since the last improvement (0 during cooldown).
  int64_t num_bad_epochs() const { return num_bad_epochs_; }
  /// Whether it is resting after a reduction.
  bool in_cooldown() const { return cooldown_counter_ > 0; }
  /// A group's learning rate after the last step (or at construction). IndexError for a bad group.
  double get_last_lr(std::size_t group = 0) const;
  /// Checkpoint state as named numbers (tg::save / tg::load): "last_epoch", "best",
  /// "num_bad_epochs", "cooldown_counter", "last_lr.<group>"; the hyperparameters are the
  /// constructor's.
  std::vector<std::pair<std::string, double>> state() const;
  /// Restores state() (Error naming a missing or unexpected entry; nothing changes then).
  void set_state(const std::vector<std::pair<std::string, double>>& state);

 private:
  bool is_better(double a, double best) const;
  Optimizer& optimizer_;
  bool max_mode_, abs_threshold_;
  double factor_, threshold_, eps_;
  int64_t patience_, cooldown_;
  std::vector<double> min_lrs_;
  bool default_min_lr_;
  double best_;
  int64_t num_bad_epochs_ = 0, cooldown_counter_ = 0, last_epoch_ = 0;
  std::vector<double> last_lrs_;
};

}  // namespace optim
}  // namespace tg
