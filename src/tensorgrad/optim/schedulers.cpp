// optim/schedulers.cpp: ExponentialLR, MultiStepLR, ConstantLR, LambdaLR, MultiplicativeLR,
// SequentialLR, OneCycleLR and ReduceLROnPlateau, each PyTorch 2.x's get_lr() or step() in the same
// double operations (Note [Chainable schedulers] in optim/scheduler.h). Declarations: optim/schedulers.h.
#include "tensorgrad/optim/schedulers.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "tensorgrad/core/error.h"
#include "tensorgrad/optim/adam.h"
#include "tensorgrad/optim/optimizers.h"

namespace tg {
namespace optim {

namespace {
constexpr double kPi = 3.14159265358979323846;

// Argument checks run before the base constructor records initial_lr, so that a refused scheduler
// leaves the optimizer as it was.
Optimizer& check_constant(Optimizer& optimizer, double factor) {
  TG_CHECK(factor >= 0 && factor <= 1, Error, "ConstantLR: Constant multiplicative factor expected to be between 0 "
           "and 1, got ", factor);
  return optimizer;
}

std::vector<std::function<double(int64_t)>> lambdas_for(const Optimizer& optimizer,
                                                        std::vector<std::function<double(int64_t)>> fns,
                                                        bool one_for_all, const char* who) {
  if (one_for_all) fns.assign(optimizer.num_param_groups(), fns.front());
  TG_CHECK(fns.size() == optimizer.num_param_groups(), Error, who, ": Expected ", optimizer.num_param_groups(),
           " lr_lambdas, but got ", fns.size());
  for (const auto& f : fns) TG_CHECK(static_cast<bool>(f), Error, who, ": lr_lambda should be a function, but got an "
                                     "empty std::function");
  return fns;
}

Optimizer& check_lambdas(Optimizer& optimizer, const std::vector<std::function<double(int64_t)>>& fns, bool one,
                         const char* who) {
  lambdas_for(optimizer, fns, one, who);
  return optimizer;
}

}  // namespace

// ---- ExponentialLR, MultiStepLR, ConstantLR

ExponentialLR::ExponentialLR(Optimizer& optimizer, double gamma) : LRScheduler(optimizer), gamma_(gamma) { init(); }

double ExponentialLR::get_lr(std::size_t, double lr) const { return last_epoch() == 0 ? lr : lr * gamma_; }

MultiStepLR::MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma)
    : LRScheduler(optimizer), milestones_(std::move(milestones)), gamma_(gamma) {
  std::sort(milestones_.begin(), milestones_.end());
  init();
}

double MultiStepLR::get_lr(std::size_t, double lr) const {
  const auto range = std::equal_range(milestones_.begin(), milestones_.end(), last_epoch());
  const auto n = range.second - range.first;
  return n == 0 ? lr : lr * std::pow(gamma_, static_cast<double>(n));   // Python's gamma ** n
}

ConstantLR::ConstantLR(Optimizer& optimizer, double factor, int64_t total_iters)
    : LRScheduler(check_constant(optimizer, factor)), factor_(factor), total_(total_iters) {
  init();
}

double ConstantLR::get_lr(std::size_t, double lr) const {
  const int64_t e = last_epoch();
  if (e == 0) return lr * factor_;
  if (e != total_) return lr;
  return lr * (1.0 / factor_);   // factor 0: an infinite or NaN rate, which the optimizer refuses
}

// ---- LambdaLR, MultiplicativeLR

LambdaLR::LambdaLR(Optimizer& optimizer, std::function<double(int64_t)> lr_lambda)
    : LRScheduler(check_lambdas(optimizer, {lr_lambda}, true, "LambdaLR")),
      lambdas_(lambdas_for(optimizer, {std::move(lr_lambda)}, true, "LambdaLR")) {
  init();
}

LambdaLR::LambdaLR(Optimizer& optimizer, std::vector<std::function<double(int64_t)>> lr_lambdas)
    : LRScheduler(check_lambdas(optimizer, lr_lambdas, false, "LambdaLR")),
      lambdas_(lambdas_for(optimizer, std::move(lr_lambdas), false, "LambdaLR")) {
  init();
}

double LambdaLR::get_lr(std::size_t group, double) const {
  TG_CHECK(group < lambdas_.size() && group < num_base_lrs(), Error, "LambdaLR: parameter group ", group,
           " was added after the scheduler was built and has no base_lr or lr_lambda");
  return base_lr(group) * lambdas_[group](last_epoch());
}

MultiplicativeLR::MultiplicativeLR(Optimizer& optimizer, std::function<double(int64_t)> lr_lambda)
    : LRScheduler(check_lambdas(optimizer, {lr_lambda}, true, "MultiplicativeLR")),
      lambdas_(lambdas_for(optimizer, {std::move(lr_lambda)}, true, "MultiplicativeLR")) {
  init();
}

MultiplicativeLR::MultiplicativeLR(Optimizer& optimizer, std::vector<std::function<double(int64_t)>> lr_lambdas)
    : LRScheduler(check_lambdas(optimizer, lr_lambdas, false, "MultiplicativeLR")),
      lambdas_(lambdas_for(optimizer, std::move(lr_lambdas), false, "MultiplicativeLR")) {
  init();
}

double MultiplicativeLR::get_lr(std::size_t group, double lr) const {
  if (last_epoch() == 0) return lr;
  TG_CHECK(group < lambdas_.size(), Error, "MultiplicativeLR: parameter group ", group,
           " was added after the scheduler was built and has no lr_lambda");
  return lr * lambdas_[group](last_epoch());
}

double MultiplicativeLR::restart_lr(std::size_t group, double lr) const {
  TG_CHECK(group < lambdas_.size(), Error, "MultiplicativeLR: parameter group ", group,
           " was added after the scheduler was built and has no lr_lambda");
  return lr * lambdas_[group](0);
}

// ---- SequentialLR

Optimizer& SequentialLR::checked(Optimizer& optimizer, const std::vector<LRScheduler*>& schedulers,
                                 const std::vector<int64_t>& milestones) {
  TG_CHECK(!schedulers.empty(), Error, "SequentialLR expects at least one scheduler, but got no scheduler.");
  for (std::size_t i = 0; i < schedulers.size(); ++i) {
    TG_CHECK(schedulers[i] != nullptr, Error, "SequentialLR: scheduler ", i, " is null");
    TG_CHECK(&schedulers[i]->optimizer_ == &optimizer, Error, "SequentialLR expects all schedulers to belong to "
             "the same optimizer, but got scheduler ", i, " on another optimizer");
  }
  TG_CHECK(milestones.size() + 1 == schedulers.size(), Error, "SequentialLR: Sequential Schedulers expects number of "
           "schedulers provided to be one more than the number of milestone points, but got number of schedulers ",
           schedulers.size(), " and the number of milestones to be equal to ", milestones.size());
  for (std::size_t g = 0; g < optimizer.num_param_groups(); ++g)
    TG_CHECK(optimizer.initial_lr(g).has_value(), Error, "SequentialLR: parameter group ", g, " has no initial_lr "
             "(it was added after the schedulers were built)");
  return optimizer;
}

SequentialLR::SequentialLR(Optimizer& optimizer, std::vector<LRScheduler*> schedulers, std::vector<int64_t> milestones)
    : LRScheduler(checked(optimizer, schedulers, milestones)),
      schedulers_(std::move(schedulers)),
      milestones_(std::move(milestones)) {
  // PyTorch's constructor: back to the initial rates, undo every scheduler's initial step, and redo
  // that of the scheduler of epoch 0.
  Optimizer& opt = mutable_optimizer();
  for (std::size_t g = 0; g < opt.num_param_groups(); ++g) opt.set_lr(g, *opt.initial_lr(g));
  for (LRScheduler* s : schedulers_) s->undo_initial_step();
  const auto idx = static_cast<std::size_t>(std::upper_bound(milestones_.begin(), milestones_.end(), 0) -
                                            milestones_.begin());
  schedulers_[idx]->set_epoch_and_apply(0, false);
  last_lrs_ = schedulers_[idx]->last_lrs_;
}

double SequentialLR::get_lr(std::size_t, double lr) const { return lr; }

void SequentialLR::undo_initial_step() {
  for (LRScheduler* s : schedulers_) s->undo_initial_step();
}

void SequentialLR::step() {
  const int64_t e = epoch_ + 1;
  const auto idx =
      static_cast<std::size_t>(std::upper_bound(milestones_.begin(), milestones_.end(), e) - milestones_.begin());
  LRScheduler* s = schedulers_[idx];
  if (idx > 0 && milestones_[idx - 1] == e) s->set_epoch_and_apply(0, /*restart=*/true);   // PyTorch's step(0)
  else s->step();
  epoch_ = e;   // only once the scheduler's step succeeded
  last_lrs_ = s->last_lrs_;
}

std::vector<std::pair<std::string, double>> SequentialLR::state() const {
  std::vector<std::pair<std::string, double>> out = LRScheduler::state();
  for (std::size_t k = 0; k < schedulers_.size(); ++k)
    for (const auto& e : schedulers_[k]->state()) out.emplace_back(tg::detail::cat("schedulers.", k, ".", e.first), e.second);
  return out;
}

void SequentialLR::set_state(const std::vector<std::pair<std::string, double>>& state) {
  checked_scheduler_state(state, SequentialLR::state(), "SequentialLR");   // everything, before any change
  std::vector<std::pair<std::string, double>> own;
  std::vector<std::vector<std::pair<std::string, double>>> theirs(schedulers_.size());
  for (const auto& e : state) {
    if (e.first.rfind("schedulers.", 0) != 0) {
      own.push_back(e);
      continue;
    }
    const std::string rest = e.first.substr(11);
    const std::size_t dot = rest.find('.');
    theirs[static_cast<std::size_t>(std::stoul(rest.substr(0, dot)))].emplace_back(rest.substr(dot + 1), e.second);
  }
  LRScheduler::set_state(own);
  for (std::size_t k = 0; k < schedulers_.size(); ++k) schedulers_[k]->set_state(theirs[k]);
}

// ---- OneCycleLR

namespace {

/// The momentum slot of a group's options: SGD's and RMSprop's momentum, or beta1 of the Adam family.
double* momentum_slot(OptimizerOptions& o) {
  if (auto* p = dynamic_cast<SGDOptions*>(&o)) return &p->momentum_;
  if (auto* p = dynamic_cast<RMSpropOptions*>(&o)) return &p->momentum_;
  if (auto* p = dynamic_cast<AdamOptions*>(&o)) return &p->beta1_;
  if (auto* p = dynamic_cast<AdamaxOptions*>(&o)) return &p->beta1_;
  if (auto* p = dynamic_cast<NAdamOptions*>(&o)) return &p->beta1_;
  if (auto* p = dynamic_cast<RAdamOptions*>(&o)) return &p->beta1_;
  return nullptr;
}

int64_t one_cycle_total(const OneCycleLROptions& o) {
  if (o.total_steps_ != 0) {
    TG_CHECK(o.total_steps_ > 0, Error, "OneCycleLR: Expected positive integer total_steps, but got ", o.total_steps_);
    return o.total_steps_;
  }
  TG_CHECK(o.epochs_ != 0 && o.steps_per_epoch_ != 0, Error, "OneCycleLR: You must define either total_steps OR "
           "(epochs AND steps_per_epoch)");
  TG_CHECK(o.epochs_ > 0, Error, "OneCycleLR: Expected positive integer epochs, but got ", o.epochs_);
  TG_CHECK(o.steps_per_epoch_ > 0, Error, "OneCycleLR: Expected positive integer steps_per_epoch, but got ",
           o.steps_per_epoch_);
  TG_CHECK(o.epochs_ <= std::numeric_limits<int64_t>::max() / o.steps_per_epoch_, Error,
           "OneCycleLR: epochs * steps_per_epoch overflows int64");
  return o.epochs_ * o.steps_per_epoch_;
}

/// Validates everything, then (as PyTorch's constructor) sets each group's initial_lr to
/// max_lr / div_factor and, with cycle_momentum, its momentum to max_momentum.
Optimizer& prepare_one_cycle(Optimizer& optimizer, std::vector<double>& max_lrs, const OneCycleLROptions& o) {
  one_cycle_total(o);
  TG_CHECK(o.pct_start_ >= 0 && o.pct_start_ <= 1, Error, "OneCycleLR: Expected float between 0 and 1 pct_start, "
           "but got ", o.pct_start_);
  TG_CHECK(o.anneal_strategy_ == "cos" || o.anneal_strategy_ == "linear", Error, "OneCycleLR: anneal_strategy must "
           "be one of 'cos' or 'linear', instead got ", o.anneal_strategy_);
  const std::size_t n = optimizer.num_param_groups();
  if (max_lrs.size() == 1 && n != 1) max_lrs.assign(n, max_lrs[0]);
  TG_CHECK(max_lrs.size() == n, Error, "OneCycleLR: max_lr must have the same length as optimizer.param_groups. max_lr "
           "has ", max_lrs.size(), " values, param_groups has ", n, ".");
  if (o.cycle_momentum_) {
    TG_CHECK(momentum_slot(optimizer.defaults()) != nullptr, Error, "OneCycleLR: optimizer must support momentum or "
             "beta1 with `cycle_momentum` option enabled (its options are ", optimizer.defaults().type_name(), ")");
    for (std::size_t g = 0; g < n; ++g)
      TG_CHECK(momentum_slot(optimizer.param_groups()[g].options()) != nullptr, Error, "OneCycleLR: the options of "
               "parameter group ", g, " have no momentum or beta1");
  }
  for (std::size_t g = 0; g < n; ++g) {
    optimizer.set_initial_lr(g, max_lrs[g] / o.div_factor_);
    if (o.cycle_momentum_) *momentum_slot(optimizer.param_groups()[g].options()) = o.max_momentum_;
  }
  return optimizer;
}

}  // namespace

OneCycleLR::OneCycleLR(Optimizer& optimizer, double max_lr, const OneCycleLROptions& options)
    : OneCycleLR(optimizer, std::vector<double>{max_lr}, options) {}

OneCycleLR::OneCycleLR(Optimizer& optimizer, std::vector<double> max_lrs, const OneCycleLROptions& o)
    : LRScheduler(prepare_one_cycle(optimizer, max_lrs, o)),
      total_steps_(one_cycle_total(o)),
      cos_(o.anneal_strategy_ == "cos"),
      cycle_momentum_(o.cycle_momentum_),
      base_momentum_(o.base_momentum_),
      max_momentum_(o.max_momentum_),
      max_lrs_(max_lrs) {
  const double total = static_cast<double>(total_steps_);
  // values: 0 initial_lr / base_momentum, 1 max_lr / max_momentum, 2 min_lr
  if (o.three_phase_) {
    phases_ = {{o.pct_start_ * total - 1, 0, 1, 1, 0}, {2 * o.pct_start_ * total - 2, 1, 0, 0, 1},
               {total - 1, 0, 2, 1, 1}};
  } else {
    phases_ = {{o.pct_start_ * total - 1, 0, 1, 1, 0}, {total - 1, 1, 2, 0, 1}};
  }
  for (std::size_t g = 0; g < max_lrs_.size(); ++g) min_lrs_.push_back(base_lr(g) / o.final_div_factor_);
  init();
  set_momenta();
}

double OneCycleLR::at(std::size_t group, int64_t step, bool momentum) const {
  TG_CHECK(step <= total_steps_, Error, "OneCycleLR: Tried to step ", step, " times. The specified number of total "
           "steps is ", total_steps_);
  TG_CHECK(group < max_lrs_.size(), Error, "OneCycleLR: parameter group ", group, " was added after the scheduler was "
           "built and has no max_lr");
  auto value = [&](int which) {
    if (momentum) return which == 1 ? max_momentum_ : base_momentum_;
    return which == 0 ? base_lr(group) : which == 1 ? max_lrs_[group] : min_lrs_[group];
  };
  const double s = static_cast<double>(step);
  double start_step = 0;
  for (std::size_t i = 0; i < phases_.size(); ++i) {
    const Phase& ph = phases_[i];
    if (s <= ph.end_step || i + 1 == phases_.size()) {
      TG_CHECK(ph.end_step != start_step, Error, "OneCycleLR: float division by zero: phase ", i, " has no steps "
               "(total_steps ", total_steps_, " is too small for pct_start)");
      const double pct = (s - start_step) / (ph.end_step - start_step);
      const double a = value(momentum ? ph.start_momentum : ph.start_lr);
      const double b = value(momentum ? ph.end_momentum : ph.end_lr);
      if (cos_) return b + (a - b) / 2.0 * (std::cos(kPi * pct) + 1);
      return (b - a) * pct + a;
    }
    start_step = ph.end_step;
  }
  return 0;   // not reached: the last phase always answers
}

double OneCycleLR::get_lr(std::size_t group, double) const { return at(group, last_epoch(), false); }

void OneCycleLR::set_momenta() {
  if (!cycle_momentum_) return;
  Optimizer& opt = mutable_optimizer();
  for (std::size_t g = 0; g < opt.num_param_groups() && g < max_lrs_.size(); ++g)
    if (double* m = momentum_slot(opt.param_groups()[g].options())) *m = at(g, last_epoch(), true);
}

void OneCycleLR::step() {
  LRScheduler::step();   // raises past total_steps, changing nothing
  set_momenta();
}

// ---- ReduceLROnPlateau

ReduceLROnPlateau::ReduceLROnPlateau(Optimizer& optimizer, const std::string& mode, double factor, int64_t patience,
                                     double threshold, const std::string& threshold_mode, int64_t cooldown,
                                     std::vector<double> min_lr, double eps)
    : optimizer_(optimizer),
      max_mode_(mode == "max"),
      abs_threshold_(threshold_mode == "abs"),
      factor_(factor),
      threshold_(threshold),
      eps_(eps),
      patience_(patience),
      cooldown_(cooldown),
      min_lrs_(std::move(min_lr)),
      default_min_lr_(min_lrs_.size() == 1) {
  TG_CHECK(factor < 1.0, Error, "ReduceLROnPlateau: Factor should be < 1.0 (got ", factor, ")");
  TG_CHECK(mode == "min" || mode == "max", Error, "ReduceLROnPlateau: mode ", mode, " is unknown! (\"min\" or \"max\")");
  TG_CHECK(threshold_mode == "rel" || threshold_mode == "abs", Error, "ReduceLROnPlateau: threshold mode ",
           threshold_mode, " is unknown! (\"rel\" or \"abs\")");
  const std::size_t n = optimizer.num_param_groups();
  TG_CHECK(default_min_lr_ || min_lrs_.size() == n, Error, "ReduceLROnPlateau: expected ", n, " min_lrs, got ",
           min_lrs_.size());
  if (default_min_lr_) min_lrs_.assign(n, min_lrs_[0]);
  best_ = max_mode_ ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
  for (std::size_t g = 0; g < n; ++g) last_lrs_.push_back(optimizer.lr(g));
}

bool ReduceLROnPlateau::is_better(double a, double best) const {
  if (!max_mode_ && !abs_threshold_) return a < best * (1.0 - threshold_);
  if (!max_mode_) return a < best - threshold_;
  if (!abs_threshold_) return a > best * (threshold_ + 1.0);
  return a > best + threshold_;
}

void ReduceLROnPlateau::step(double metric) {
  const std::size_t n = optimizer_.num_param_groups();
  // A group added since construction takes the single min_lr; with one per group there is none for it.
  TG_CHECK(n == min_lrs_.size() || default_min_lr_, Error, "ReduceLROnPlateau: The number of param groups in the "
           "`optimizer` (", n, ") differs from when `ReduceLROnPlateau` was initialized (", min_lrs_.size(), "), usually "
           "due to a new param group being added to the optimizer. Please modify the `min_lrs` field to match the "
           "length of the `optimizer` param groups.");
  ++last_epoch_;
  if (is_better(metric, best_)) {
    best_ = metric;
    num_bad_epochs_ = 0;
  } else {
    ++num_bad_epochs_;
  }
  if (in_cooldown()) {
    --cooldown_counter_;
    num_bad_epochs_ = 0;   // bad epochs in cooldown do not count
  }
  if (num_bad_epochs_ > patience_) {
    if (min_lrs_.size() != n) min_lrs_.assign(n, min_lrs_[0]);
    for (std::size_t g = 0; g < n; ++g) {
      const double old_lr = optimizer_.lr(g);
      const double new_lr = std::max(old_lr * factor_, min_lrs_[g]);
      if (old_lr - new_lr > eps_) optimizer_.set_lr(g, new_lr);
    }
    cooldown_counter_ = cooldown_;
    num_bad_epochs_ = 0;
  }
  last_lrs_.clear();
  for (std::size_t g = 0; g < n; ++g) last_lrs_.push_back(optimizer_.lr(g));
}

std::vector<std::pair<std::string, double>> ReduceLROnPlateau::state() const {
  std::vector<std::pair<std::string, double>> out{{"last_epoch", static_cast<double>(last_epoch_)},
                                                   {"best", best_},
                                                   {"num_bad_epochs", static_cast<double>(num_bad_epochs_)},
                                                   {"cooldown_counter", static_cast<double>(cooldown_counter_)}};
  for (std::size_t g = 0; g < last_lrs_.size(); ++g) out.emplace_back(tg::detail::cat("last_lr.", g), last_lrs_[g]);
  return out;
}

void ReduceLROnPlateau::set_state(const std::vector<std::pair<std::string, double>>& state) {
  const auto got = checked_scheduler_state(state, ReduceLROnPlateau::state(), "ReduceLROnPlateau");
  for (const char* count : {"num_bad_epochs", "cooldown_counter"}) {
    const double v = got.at(count);
    TG_CHECK(v == std::trunc(v) && v >= 0 && v < 9e15, Error, "ReduceLROnPlateau.set_state: \"", count,
             "\" must be a whole number, got ", v);
  }
  last_epoch_ = static_cast<int64_t>(got.at("last_epoch"));
  best_ = got.at("best");
  num_bad_epochs_ = static_cast<int64_t>(got.at("num_bad_epochs"));
  cooldown_counter_ = static_cast<int64_t>(got.at("cooldown_counter"));
  for (std::size_t g = 0; g < last_lrs_.size(); ++g) last_lrs_[g] = got.at(tg::detail::cat("last_lr.", g));
}

double ReduceLROnPlateau::get_last_lr(std::size_t group) const {
  TG_CHECK(group < last_lrs_.size(), IndexError, "ReduceLROnPlateau::get_last_lr: list index out of range: parameter "
           "group ", group, " (", last_lrs_.size(), " groups)");
  return last_lrs_[group];
}

}  // namespace optim
}  // namespace tg
