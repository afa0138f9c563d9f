// optim/optimizers.h: RMSprop, Adagrad, Adadelta, Adamax, NAdam and RAdam with PyTorch 2.x's formulas,
// defaults, per-group options and state names. Their updates are compositions of prim's elementwise
// ops (optim/optimizers.cpp), not fused kernels; SGD and Adam/AdamW (optim/optimizer.h, optim/adam.h)
// keep their fused Backend kernels.
#pragma once
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "tensorgrad/optim/optimizer.h"

namespace tg {
namespace optim {

/// The base of the optimizers whose per-parameter state is a step count and named buffers of the
/// parameter's shape (and, for NAdam, the scalar mu_product): it creates the state at a parameter's
/// first step, checks every group and gradient before any update (all or nothing), goes through the
/// float32 master copy of a 16-bit parameter (Note [Master weights]), and writes the state as
/// "<buffer>.<i>", "step.<i>" (0-d int64) and "mu_product.<i>" (0-d float64) for tg::save/tg::load.
class BufferedOptimizer : public Optimizer {
 public:
  /// One update of every parameter with a gradient (see Optimizer::step).
  void step() override;
  /// The state of every parameter that has stepped, named as PyTorch's state keys with the
  /// parameter's index, plus the master weights of 16-bit parameters.
  std::vector<std::pair<std::string, RawTensor>> state() const override;
  /// Loads entries named as state() names them: every buffer its group's options need and the step
  /// count for each parameter that has any entry; Error, ShapeError or DTypeError before anything
  /// changes when an entry does not fit.
  void set_state(const std::vector<std::pair<std::string, RawTensor>>& state) override;

 protected:
  /// One parameter's state.
  struct State {
    int64_t step = 0;                 ///< steps taken (incremented before the update)
    std::vector<RawTensor> buffers;   ///< one per buffer name; undefined where the options need none
    double mu_product = 1;            ///< NAdam's product of the momentum coefficients
  };
  /// groups and defaults as Optimizer's; `buffers` are the state names of the buffers (PyTorch's
  /// keys, "square_avg", ...); with_mu_product adds NAdam's scalar.
  BufferedOptimizer(std::vector<ParamGroup> groups, const OptimizerOptions& defaults, std::string name,
                    std::vector<std::string> buffers, bool with_mu_product = false);
  /// Whether buffer b exists under a group's options (RMSprop's momentum_buffer only with momentum).
  virtual bool has_buffer(std::size_t b, const OptimizerOptions& options) const;
  /// The value buffer b starts at (Adagrad's initial_accumulator_value; else 0).
  virtual double initial_value(std::size_t b, const OptimizerOptions& options) const;
  /// The update of w (the parameter or its float32 master copy) in place from g (its gradient, in
  /// w's dtype), s (step already incremented, buffers created) and the group's options.
  virtual void update(const RawTensor& w, const RawTensor& g, State& s, const OptimizerOptions& options) = 0;

 private:
  void on_params_added() override { state_.resize(params_.size()); }
  std::string name_;
  std::vector<std::string> buffer_names_;
  bool with_mu_product_;
  std::vector<State> state_;
};

/// Options of RMSprop (torch.optim.RMSprop's defaults): RMSpropOptions(0.01).alpha(0.99).eps(1e-8)
/// .weight_decay(0).momentum(0).centered(false). Each setter has a getter of the same name.
struct RMSpropOptions : OptionsBase<RMSpropOptions> {
  /// The learning rate (default 1e-2).
  RMSpropOptions(double lr = 1e-2) : lr_(lr) {}   // NOLINT: RMSprop(params, 0.01)
  /// Sets the learning rate.
  RMSpropOptions& lr(double v) { lr_ = v; return *this; }
  /// The learning rate.
  double lr() const { return lr_; }
  /// Smoothing constant of the squared-gradient average (default 0.99; Error when negative).
  RMSpropOptions& alpha(double v) { alpha_ = v; return *this; }
  /// The smoothing constant.
  double alpha() const { return alpha_; }
  /// Added to the denominator (default 1e-8; Error when negative).
  RMSpropOptions& eps(double v) { eps_ = v; return *this; }
  /// The denominator's epsilon.
  double eps() const { return eps_; }
  /// L2 penalty added to the gradient (default 0; Error when negative).
  RMSpropOptions& weight_decay(double v) { weight_decay_ = v; return *this; }
  /// The L2 penalty.
  double weight_decay() const { return weight_decay_; }
  /// Momentum factor (default 0; Error when negative).
  RMSpropOptions& momentum(double v) { momentum_ = v; return *this; }
  /// The momentum factor.
  double momentum() const { return momentum_; }
  /// Normalizes by the variance estimate (the squared average minus the squared mean gradient).
  RMSpropOptions& centered(bool v) { centered_ = v; return *this; }
  /// Whether it is centered.
  bool centered() const { return centered_; }
  /// "RMSpropOptions".
  const char* type_name() const override { return "RMSpropOptions"; }
  /// PyTorch's checks: eps, momentum, weight_decay and alpha >= 0.
  void check(const std::string& who) const override;
  /// alpha, eps, weight_decay, momentum, centered.
  void fields(OptionFields& f) override {
    f("alpha", alpha_);
    f("eps", eps_);
    f("weight_decay", weight_decay_);
    f("momentum", momentum_);
    f("centered", centered_);
  }
  double lr_;                 ///< See lr().
  double alpha_ = 0.99;       ///< See alpha().
  double eps_ = 1e-8;         ///< See eps().
  double weight_decay_ = 0;   ///< See weight_decay().
  double momentum_ = 0;       ///< See momentum().
  bool centered_ = false;     ///< See centered().
};

/// torch.optim.RMSprop: g += wd w; v = alpha v + (1 - alpha) g^2; centered: m = lerp(m, g, 1 - alpha),
/// d = sqrt(v - m^2) + eps, else d = sqrt(v) + eps; momentum: b = momentum b + g / d, w -= lr b; else
/// w -= lr g / d. State: "square_avg", "momentum_buffer" (momentum > 0), "grad_avg" (centered), "step".
class RMSprop : public BufferedOptimizer {
 public:
  /// One group with every parameter at options.
  RMSprop(std::vector<Tensor> params, RMSpropOptions options = {});
  /// Several groups; a group without options uses `options` (with its own lr when it gives one).
  RMSprop(std::vector<ParamGroup> groups, RMSpropOptions options = {});
  /// The default options.
  const RMSpropOptions& options() const { return static_cast<const RMSpropOptions&>(defaults()); }
 protected:
  /// square_avg always, momentum_buffer with momentum > 0, grad_avg when centered.
  bool has_buffer(std::size_t b, const OptimizerOptions& options) const override;
  /// RMSprop's update.
  void update(const RawTensor& w, const RawTensor& g, State& s, const OptimizerOptions& options) override;
};

/// Options of Adagrad (torch.optim.Adagrad's defaults): AdagradOptions(0.01).lr_decay(0)
/// .weight_decay(0).initial_accumulator_value(0).eps(1e-10).
struct AdagradOptions : OptionsBase<AdagradOptions> {
  /// The learning rate (default 1e-2).
  AdagradOptions(double lr = 1e-2) : lr_(lr) {}   // NOLINT: Adagrad(params, 0.01)
  /// Sets the learning rate.
  AdagradOptions& lr(double v) { lr_ = v; return *this; }
  /// The learning rate.
  double lr() const { return lr_; }
  /// The learning rate at step t is lr / (1 + (t - 1) lr_decay) (default 0; Error when negative).
  AdagradOptions& lr_decay(double v) { lr_decay_ = v; return *this; }
  /// The learning-rate decay.
  double lr_decay() const { return lr_decay_; }
  /// L2 penalty added to the gradient (default 0; Error when negative).
  AdagradOptions& weight_decay(double v) { weight_decay_ = v; return *this; }
  /// The L2 penalty.
  double weight_decay() const { return weight_decay_; }
  /// The value the sum of squared gradients starts at (default 0; Error when negative). As in
  /// PyTorch, only the optimizer's default options' value is used, for every group.
  AdagradOptions& initial_accumulator_value(double v) { initial_accumulator_value_ = v; return *this; }
  /// The starting value of the sum.
  double initial_accumulator_value() const { return initial_accumulator_value_; }
  /// Added to the denominator (default 1e-10; Error when negative).
  AdagradOptions& eps(double v) { eps_ = v; return *this; }
  /// The denominator's epsilon.
  double eps() const { return eps_; }
  /// "AdagradOptions".
  const char* type_name() const override { return "AdagradOptions"; }
  /// PyTorch's checks: lr_decay, weight_decay, initial_accumulator_value and eps >= 0.
  void check(const std::string& who) const override;
  /// lr_decay, weight_decay, initial_accumulator_value, eps.
  void fields(OptionFields& f) override {
    f("lr_decay", lr_decay_);
    f("weight_decay", weight_decay_);
    f("initial_accumulator_value", initial_accumulator_value_);
    f("eps", eps_);
  }
  double lr_;                              ///< See lr().
  double lr_decay_ = 0;                    ///< See lr_decay().
  double weight_decay_ = 0;                ///< See weight_decay().
  double initial_accumulator_value_ = 0;   ///< See initial_accumulator_value().
  double eps_ = 1e-10;                     ///< See eps().
};

/// torch.optim.Adagrad (dense gradients): g += wd w; sum += g^2; w -= lr / (1 + (t - 1) lr_decay)
/// g / (sqrt(sum) + eps). State: "sum", "step".
class Adagrad : public BufferedOptimizer {
 public:
  /// One group with every parameter at options.
  Adagrad(std::vector<Tensor> params, AdagradOptions options = {});
  /// Several groups; a group without options uses `options` (with its own lr when it gives one).
  Adagrad(std::vector<ParamGroup> groups, AdagradOptions options = {});
  /// The default options.
  const AdagradOptions& options() const { return static_cast<const AdagradOptions&>(defaults()); }
 protected:
  /// The default options' initial_accumulator_value for the sum, whatever the group's.
  double initial_value(std::size_t b, const OptimizerOptions& options) const override;
  /// Adagrad's update.
  void update(const RawTensor& w, const RawTensor& g, State& s, const OptimizerOptions& options) override;
};

/// Options of Adadelta (torch.optim.Adadelta's defaults): AdadeltaOptions(1.0).rho(0.9).eps(1e-6)
/// .weight_decay(0).
struct AdadeltaOptions : OptionsBase<AdadeltaOptions> {
  /// The learning rate, a factor on the delta (default 1.0).
  AdadeltaOptions(double lr = 1.0) : lr_(lr) {}   // NOLINT: Adadelta(params, 1.0)
  /// Sets the learning rate.
  AdadeltaOptions& lr(double v) { lr_ = v; return *this; }
  /// The learning rate.
  double lr() const { return lr_; }
  /// Decay of the running averages (default 0.9; Error outside [0, 1]).
  AdadeltaOptions& rho(double v) { rho_ = v; return *this; }
  /// The decay.
  double rho() const { return rho_; }
  /// Added inside both square roots (default 1e-6; Error when negative).
  AdadeltaOptions& eps(double v) { eps_ = v; return *this; }
  /// The epsilon.
  double eps() const { return eps_; }
  /// L2 penalty added to the gradient (default 0; Error when negative).
  AdadeltaOptions& weight_decay(double v) { weight_decay_ = v; return *this; }
  /// The L2 penalty.
  double weight_decay() const { return weight_decay_; }
  /// "AdadeltaOptions".
  const char* type_name() const override { return "AdadeltaOptions"; }
  /// PyTorch's checks: rho in [0, 1], eps and weight_decay >= 0.
  void check(const std::string& who) const override;
  /// rho, eps, weight_decay.
  void fields(OptionFields& f) override {
    f("rho", rho_);
    f("eps", eps_);
    f("weight_decay", weight_decay_);
  }
  double lr_;                 ///< See lr().
  double rho_ = 0.9;          ///< See rho().
  double eps_ = 1e-6;         ///< See eps().
  double weight_decay_ = 0;   ///< See weight_decay().
};

/// torch.optim.Adadelta: g += wd w; v = rho v + (1 - rho) g^2; d = sqrt(u + eps) / sqrt(v + eps) g;
/// u = rho u + (1 - rho) d^2; w -= lr d. State: "square_avg", "acc_delta", "step".
class Adadelta : public BufferedOptimizer {
 public:
  /// One group with every parameter at options.
  Adadelta(std::vector<Tensor> params, AdadeltaOptions options = {});
  /// Several groups; a group without options uses `options` (with its own lr when it gives one).
  Adadelta(std::vector<ParamGroup> groups, AdadeltaOptions options = {});
  /// The default options.
  const AdadeltaOptions& options() const { return static_cast<const AdadeltaOptions&>(defaults()); }
 protected:
  /// Adadelta's update.
  void update(const RawTensor& w, const RawTensor& g, State& s, const OptimizerOptions& options) override;
};

/// Options shared by Adamax, NAdam and RAdam: learning rate, betas, eps, weight_decay (PyTorch's
/// checks: each beta in [0, 1), eps and weight_decay >= 0).
template <class Derived>
struct AdamLikeOptions : OptionsBase<Derived> {
  /// The learning rate.
  explicit AdamLikeOptions(double lr) : lr_(lr) {}
  /// Sets the learning rate.
  Derived& lr(double v) { lr_ = v; return self(); }
  /// The learning rate.
  double lr() const { return lr_; }
  /// The decay rates of the averages (default 0.9, 0.999).
  Derived& betas(double b1, double b2) { beta1_ = b1; beta2_ = b2; return self(); }
  /// The same as a tuple (libtorch's spelling).
  Derived& betas(const std::tuple<double, double>& b) { return betas(std::get<0>(b), std::get<1>(b)); }
  /// The decay rates.
  std::tuple<double, double> betas() const { return {beta1_, beta2_}; }
  /// Added to the denominator (default 1e-8).
  Derived& eps(double v) { eps_ = v; return self(); }
  /// The denominator's epsilon.
  double eps() const { return eps_; }
  /// Weight decay (default 0): an L2 term in the gradient.
  Derived& weight_decay(double v) { weight_decay_ = v; return self(); }
  /// The weight decay.
  double weight_decay() const { return weight_decay_; }
  /// PyTorch's checks of eps, betas and weight_decay.
  void check(const std::string& who) const override;
  /// beta1, beta2, eps, weight_decay.
  void fields(OptionFields& f) override {
    f("beta1", beta1_);
    f("beta2", beta2_);
    f("eps", eps_);
    f("weight_decay", weight_decay_);
  }
  double lr_;                 ///< See lr().
  double beta1_ = 0.9;        ///< See betas().
  double beta2_ = 0.999;      ///< See betas().
  double eps_ = 1e-8;         ///< See eps().
  double weight_decay_ = 0;   ///< See weight_decay().

 private:
  Derived& self() { return static_cast<Derived&>(*this); }
};

/// Options of Adamax (torch.optim.Adamax's defaults: lr 2e-3, betas (0.9, 0.999), eps 1e-8).
struct AdamaxOptions : AdamLikeOptions<AdamaxOptions> {
  /// The learning rate (default 2e-3).
  AdamaxOptions(double lr = 2e-3) : AdamLikeOptions(lr) {}   // NOLINT: Adamax(params, 2e-3)
  /// "AdamaxOptions".
  const char* type_name() const override { return "AdamaxOptions"; }
};

/// torch.optim.Adamax: g += wd w; m = lerp(m, g, 1 - b1); u = max(b2 u, |g| + eps);
/// w -= lr / (1 - b1^t) m / u. State: "exp_avg", "exp_inf", "step".
class Adamax : public BufferedOptimizer {
 public:
  /// One group with every parameter at options.
  Adamax(std::vector<Tensor> params, AdamaxOptions options = {});
  /// Several groups; a group without options uses `options` (with its own lr when it gives one).
  Adamax(std::vector<ParamGroup> groups, AdamaxOptions options = {});
  /// The default options.
  const AdamaxOptions& options() const { return static_cast<const AdamaxOptions&>(defaults()); }
 protected:
  /// Adamax's update.
  void update(const RawTensor& w, const RawTensor& g, State& s, const OptimizerOptions& options) override;
};

/// Options of NAdam (torch.optim.NAdam's defaults: lr 2e-3, betas (0.9, 0.999), eps 1e-8,
/// momentum_decay 4e-3, decoupled_weight_decay false).
struct NAdamOptions : AdamLikeOptions<NAdamOptions> {
  /// The learning rate (default 2e-3).
  NAdamOptions(double lr = 2e-3) : AdamLikeOptions(lr) {}   // NOLINT: NAdam(params, 2e-3)
  /// The momentum schedule's decay psi: mu_t = b1 (1 - 0.96^(t psi) / 2) (default 4e-3; Error when negative).
  NAdamOptions& momentum_decay(double v) { momentum_decay_ = v; return *this; }
  /// The momentum decay.
  double momentum_decay() const { return momentum_decay_; }
  /// Decoupled weight decay (NAdamW: w *= 1 - lr wd) instead of the L2 term (default false).
  NAdamOptions& decoupled_weight_decay(bool v) { decoupled_weight_decay_ = v; return *this; }
  /// Whether the weight decay is decoupled.
  bool decoupled_weight_decay() const { return decoupled_weight_decay_; }
  /// "NAdamOptions".
  const char* type_name() const override { return "NAdamOptions"; }
  /// The checks of AdamLikeOptions and momentum_decay >= 0.
  void check(const std::string& who) const override;
  /// AdamLikeOptions' and momentum_decay, decoupled_weight_decay.
  void fields(OptionFields& f) override {
    AdamLikeOptions::fields(f);
    f("momentum_decay", momentum_decay_);
    f("decoupled_weight_decay", decoupled_weight_decay_);
  }
  double momentum_decay_ = 4e-3;          ///< See momentum_decay().
  bool decoupled_weight_decay_ = false;   ///< See decoupled_weight_decay().
};

/// torch.optim.NAdam (PyTorch 2.x): wd as L2 term or decoupled; mu_t = b1 (1 - 0.96^(t psi) / 2),
/// P = prod mu; m = lerp(m, g, 1 - b1); v = b2 v + (1 - b2) g^2; d = sqrt(v / (1 - b2^t)) + eps;
/// w -= lr (1 - mu_t) / (1 - P) g / d + lr mu_(t+1) / (1 - P mu_(t+1)) m / d.
/// State: "exp_avg", "exp_avg_sq", "mu_product", "step". mu_product is kept in double (PyTorch keeps
/// it in its default dtype: float32 unless torch.set_default_dtype(torch.float64)).
class NAdam : public BufferedOptimizer {
 public:
  /// One group with every parameter at options.
  NAdam(std::vector<Tensor> params, NAdamOptions options = {});
  /// Several groups; a group without options uses `options` (with its own lr when it gives one).
  NAdam(std::vector<ParamGroup> groups, NAdamOptions options = {});
  /// The default options.
  const NAdamOptions& options() const { return static_cast<const NAdamOptions&>(defaults()); }
 protected:
  /// NAdam's update.
  void update(const RawTensor& w, const RawTensor& g, State& s, const OptimizerOptions& options) override;
};

/// Options of RAdam (torch.optim.RAdam's defaults: lr 1e-3, betas (0.9, 0.999), eps 1e-8,
/// decoupled_weight_decay false).
struct RAdamOptions : AdamLikeOptions<RAdamOptions> {
  /// The learning rate (default 1e-3).
  RAdamOptions(double lr = 1e-3) : AdamLikeOptions(lr) {}   // NOLINT: RAdam(params, 1e-3)
  /// Decoupled weight decay (RAdamW: w *= 1 - lr wd) instead of the L2 term (default false).
  RAdamOptions& decoupled_weight_decay(bool v) { decoupled_weight_decay_ = v; return *this; }
  /// Whether the weight decay is decoupled.
  bool decoupled_weight_decay() const { return decoupled_weight_decay_; }
  /// "RAdamOptions".
  const char* type_name() const override { return "RAdamOptions"; }
  /// AdamLikeOptions' and decoupled_weight_decay.
  void fields(OptionFields& f) override {
    AdamLikeOptions::fields(f);
    f("decoupled_weight_decay", decoupled_weight_decay_);
  }
  bool decoupled_weight_decay_ = false;   ///< See decoupled_weight_decay().
};

/// torch.optim.RAdam: wd as L2 term or decoupled; m = lerp(m, g, 1 - b1); v = b2 v + (1 - b2) g^2;
/// rho_inf = 2 / (1 - b2) - 1, rho_t = rho_inf - 2 t b2^t / (1 - b2^t); when rho_t > 5,
/// w -= lr m / (1 - b1^t) sqrt(1 - b2^t) / (sqrt(v) + eps) r_t with the rectification
/// r_t = sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t)); else
/// w -= lr m / (1 - b1^t). State: "exp_avg", "exp_avg_sq", "step".
class RAdam : public BufferedOptimizer {
 public:
  /// One group with every parameter at options.
  RAdam(std::vector<Tensor> params, RAdamOptions options = {});
  /// Several groups; a group without options uses `options` (with its own lr when it gives one).
  RAdam(std::vector<ParamGroup> groups, RAdamOptions options = {});
  /// The default options.
  const RAdamOptions& options() const { return static_cast<const RAdamOptions&>(defaults()); }
 protected:
  /// RAdam's update.
  void update(const RawTensor& w, const RawTensor& g, State& s, const OptimizerOptions& options) override;
};

}  // namespace optim
}  // namespace tg
