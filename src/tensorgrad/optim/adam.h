// optim/adam.h: Adam and AdamW with PyTorch's formulas (bias correction, optional amsgrad). Each
// update is one fused Backend::adam_step per group and (device, dtype). The base class is in
// optim/optimizer.h.
#pragma once
#include <memory>
#include <tuple>
#include <vector>

#include "tensorgrad/optim/optimizer.h"

namespace tg {
struct AdamParam;   // kernels/optim.h

namespace optim {

/// Options of Adam and AdamW, PyTorch style: AdamOptions(1e-3).betas(0.9, 0.98).weight_decay(0.01).
/// The constructors throw Error for betas outside [0, 1) or a negative eps or weight_decay. Each
/// setter but amsgrad has a getter of the same name (libtorch's TORCH_ARG).
struct AdamOptions : OptionsBase<AdamOptions> {
  /// The learning rate (default 1e-3); implicit, so that Adam(params, 1e-3) works.
  AdamOptions(double lr = 1e-3) : lr_(lr) {}   // NOLINT: Adam(params, 1e-3) reads naturally
  /// The decay rates of the first and second moment averages (default 0.9, 0.999).
  AdamOptions& betas(double b1, double b2) { beta1_ = b1; beta2_ = b2; return *this; }
  /// The same as a tuple, libtorch's spelling: AdamOptions(2e-4).betas(std::make_tuple(0.5, 0.999)).
  AdamOptions& betas(const std::tuple<double, double>& b) { return betas(std::get<0>(b), std::get<1>(b)); }
  /// The decay rates (beta1, beta2), as libtorch's getter.
  std::tuple<double, double> betas() const { return {beta1_, beta2_}; }
  /// Sets the learning rate (libtorch's setter).
  AdamOptions& lr(double lr) { lr_ = lr; return *this; }
  /// The learning rate (libtorch's getter).
  double lr() const { return lr_; }
  /// Added to the denominator for stability (default 1e-8).
  AdamOptions& eps(double e) { eps_ = e; return *this; }
  /// The denominator's epsilon.
  double eps() const { return eps_; }
  /// Weight decay: an L2 term in the gradient for Adam, decoupled for AdamW (default 0).
  AdamOptions& weight_decay(double w) { weight_decay_ = w; return *this; }
  /// The weight decay.
  double weight_decay() const { return weight_decay_; }
  /// Uses the maximum of the second moment average over all steps (default off). amsgrad() turns it
  /// on (so there is no getter of that name: read amsgrad_).
  AdamOptions& amsgrad(bool a = true) { amsgrad_ = a; return *this; }
  /// Whether step() may be captured into a CUDA graph (default false, as PyTorch): a captured step
  /// reads its bias corrections and learning rate from device memory, which each replay rewrites
  /// from the host's step counts and the group's current lr, so a scheduler's change between
  /// replays takes effect (Note [Captured Adam] in optim/adam.cpp). Eager steps are unchanged.
  AdamOptions& capturable(bool c) { capturable_ = c; return *this; }
  /// See capturable(bool).
  bool capturable() const { return capturable_; }
  /// AdamOptions and AdamWOptions serve Adam and AdamW alike.
  bool accepts(const OptimizerOptions& other) const override {
    return dynamic_cast<const AdamOptions*>(&other) != nullptr;
  }
  /// "AdamOptions".
  const char* type_name() const override { return "AdamOptions"; }
  /// PyTorch's checks: eps and weight_decay >= 0, each beta in [0, 1).
  void check(const std::string& who) const override;
  /// beta1, beta2, eps, weight_decay, amsgrad, capturable.
  void fields(OptionFields& f) override {
    f("beta1", beta1_);
    f("beta2", beta2_);
    f("eps", eps_);
    f("weight_decay", weight_decay_);
    f("amsgrad", amsgrad_);
    f("capturable", capturable_);
  }
  double lr_;   ///< The learning rate, the default for groups without one.
  double beta1_ = 0.9;   ///< See betas().
  double beta2_ = 0.999;   ///< See betas().
  double eps_ = 1e-8;   ///< See eps().
  double weight_decay_ = 0;   ///< See weight_decay().
  /// See amsgrad().
  bool amsgrad_ = false;
  bool capturable_ = false;   ///< See capturable(bool).
};

/// torch.optim.Adam: g += wd w; m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
/// w -= lr / (1 - b1^t) * m / (sqrt(v / (1 - b2^t)) + eps)   (v -> max(v) over steps with amsgrad).
class Adam : public Optimizer {
 public:
  /// One group with every parameter at options.
  Adam(std::vector<Tensor> params, AdamOptions options = {});
  /// Several groups; a group without options uses `options` (with its own lr when it gives one).
  Adam(std::vector<ParamGroup> groups, AdamOptions options = {});
  ~Adam() override;
  /// One update of every parameter with a gradient (see Optimizer::step). Inside a CUDA graph
  /// capture every group must be capturable and every parameter's state must exist (a warm-up step).
  void step() override;
  /// step() inside a CUDA graph capture, skipped on the device where found_inf is set (see
  /// Optimizer::capture_step_unless_found): the captured parameters' step counts then live on the
  /// device, where a skipped replay leaves them (Note [Captured Adam] in optim/adam.cpp).
  void capture_step_unless_found(const RawTensor& found_inf) override;
  /// The default options (those it was built with; each group's are in param_groups()).
  const AdamOptions& options() const { return static_cast<const AdamOptions&>(defaults()); }
  /// `exp_avg.<i>`, `exp_avg_sq.<i>`, `max_exp_avg_sq.<i>` (amsgrad) and `step.<i>` (0-d int64) per parameter.
  std::vector<std::pair<std::string, RawTensor>> state() const override;
  /// Loads entries named as state() names them; nothing changes when one does not fit.
  void set_state(const std::vector<std::pair<std::string, RawTensor>>& state) override;

 protected:
  /// decoupled = true is AdamW's weight decay (the AdamW constructors use it).
  Adam(std::vector<ParamGroup> groups, AdamOptions options, bool decoupled);

 private:
  void on_params_added() override { state_.resize(params_.size()); }
  struct State {
    int64_t step = 0;
    RawTensor exp_avg, exp_avg_sq, max_exp_avg_sq;
  };
  /// Creates or moves parameter i's state and appends its update (its group's options o).
  void update_one(std::size_t i, const AdamOptions& o, std::vector<AdamParam>& update, std::vector<std::size_t>& updated);
  /// What every step checks first: the gradients and the state's shapes (Error naming who).
  void check_step(const char* who) const;
  struct CapturedStep;   // Note [Captured Adam]
  /// A step inside a CUDA graph capture: the updates read their step values from device memory.
  /// With found_inf defined, each replay skips it where found_inf is set and the step counts advance
  /// on the device.
  void capture_step(const RawTensor& found_inf);
  /// Before a replay of c: write the values its updates read (and advance the host's step counts,
  /// or give the device the host's counts when they are newer).
  void write_step_values(const std::shared_ptr<CapturedStep>& c);
  /// When replays of a skippable captured step left newer step counts on the device: reads them
  /// back (one synchronization) into state_. Nothing inside a capture.
  void pull_steps() const;
  bool decoupled_;
  std::vector<State> state_;
  std::vector<std::weak_ptr<CapturedStep>> captured_;   // owned by the graphs' replay hooks
  std::shared_ptr<CapturedStep> device_steps_;   // the captured step whose device counts are newer than state_'s
};

/// Options of AdamW, as libtorch's AdamWOptions: AdamOptions with libtorch's AdamW default
/// weight_decay 1e-2 (AdamWOptions(1e-3) decays; AdamOptions(1e-3) would not).
struct AdamWOptions : OptionsBase<AdamWOptions, AdamOptions> {
  /// The learning rate (default 1e-3), with weight_decay 1e-2.
  AdamWOptions(double lr = 1e-3) : OptionsBase<AdamWOptions, AdamOptions>(lr) { weight_decay_ = 1e-2; }   // NOLINT
  /// "AdamWOptions".
  const char* type_name() const override { return "AdamWOptions"; }
  // The setters again, returning AdamWOptions& (as libtorch's), so that a chain stays AdamWOptions:
  // std::make_unique<AdamWOptions>(AdamWOptions(1e-3).weight_decay(0.1)).
  using AdamOptions::betas;
  using AdamOptions::lr;
  using AdamOptions::eps;
  using AdamOptions::weight_decay;
  using AdamOptions::amsgrad;
  /// See AdamOptions::betas.
  AdamWOptions& betas(double b1, double b2) { AdamOptions::betas(b1, b2); return *this; }
  /// See AdamOptions::betas.
  AdamWOptions& betas(const std::tuple<double, double>& b) { AdamOptions::betas(b); return *this; }
  /// See AdamOptions::lr.
  AdamWOptions& lr(double lr) { AdamOptions::lr(lr); return *this; }
  /// See AdamOptions::eps.
  AdamWOptions& eps(double e) { AdamOptions::eps(e); return *this; }
  /// See AdamOptions::weight_decay.
  AdamWOptions& weight_decay(double w) { AdamOptions::weight_decay(w); return *this; }
  /// See AdamOptions::amsgrad.
  AdamWOptions& amsgrad(bool a = true) { AdamOptions::amsgrad(a); return *this; }
  using AdamOptions::capturable;
  /// See AdamOptions::capturable.
  AdamWOptions& capturable(bool c) { AdamOptions::capturable(c); return *this; }
};

/// torch.optim.AdamW: Adam with decoupled weight decay, w *= 1 - lr wd before the update.
/// Default weight_decay 1e-2 as in PyTorch.
class AdamW : public Adam {
 public:
  /// One group with every parameter at options.
  AdamW(std::vector<Tensor> params, AdamOptions options = AdamOptions().weight_decay(1e-2))
      : Adam(std::vector<ParamGroup>{ParamGroup{std::move(params), std::nullopt}}, options, /*decoupled=*/true) {}
  /// Several groups; a group without options uses `options` (with its own lr when it gives one).
  AdamW(std::vector<ParamGroup> groups, AdamOptions options = AdamOptions().weight_decay(1e-2))
      : Adam(std::move(groups), options, /*decoupled=*/true) {}
};

}  // namespace optim
}  // namespace tg
