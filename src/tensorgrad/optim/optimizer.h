// optim/optimizer.h: Optimizer base (parameter groups, each with its own options: OptimizerOptions,
// ParamGroup; zero_grad, step, checkpoint state) and SGD with PyTorch's update formulas. Each update
// is one fused Backend::sgd_step per group (backend/cpu/optim.cpp, backend/cuda/optim.cu).
// Adam/AdamW: optim/adam.h; RMSprop and the others: optim/optimizers.h; LBFGS: optim/lbfgs.h.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <typeinfo>
#include <string>
#include <utility>
#include <vector>

#include "tensorgrad/autograd/tensor.h"
#include "tensorgrad/core/error.h"

namespace tg {
namespace optim {

class OptionFields;

/// The hyperparameters of one parameter group (libtorch's torch::optim::OptimizerOptions): each
/// optimizer's options struct (SGDOptions, AdamOptions, RMSpropOptions, ...) derives from it, and every
/// group of an optimizer holds its own copy, readable and writable through Optimizer::param_groups():
/// static_cast<tg::optim::AdamOptions&>(opt.param_groups()[1].options()).weight_decay(0.0).
class OptimizerOptions {
 public:
  virtual ~OptimizerOptions() = default;
  /// A copy of the same dynamic type.
  virtual std::unique_ptr<OptimizerOptions> clone() const = 0;
  /// The learning rate (libtorch's get_lr).
  virtual double get_lr() const = 0;
  /// Sets the learning rate (libtorch's set_lr); the optimizer checks it at its next step.
  virtual void set_lr(double lr) = 0;
  /// Whether `other` may serve as the options of a group of the optimizer these are the defaults of:
  /// by default, options of the same type (AdamOptions also takes AdamWOptions and the reverse).
  virtual bool accepts(const OptimizerOptions& other) const { return typeid(*this) == typeid(other); }
  /// Throws Error naming `who` (the optimizer, with the group) for a value the optimizer refuses, as
  /// PyTorch's constructors refuse it ("Adam: invalid betas (1, 0.9) ..."). The default checks nothing.
  virtual void check(const std::string& who) const { (void)who; }
  /// The type's name in messages ("AdamOptions").
  virtual const char* type_name() const = 0;
  /// Passes every option but the learning rate to f by its PyTorch param_groups name (betas as
  /// "beta1" and "beta2"), so that values() and set_value() can read and write them. The default
  /// has none; an options type outside the library overrides it to have its options checkpointed.
  virtual void fields(OptionFields& f) { (void)f; }
  /// The options as numbers by name, "lr" first (flags as 0 or 1): what a checkpoint of the
  /// optimizer stores for each group (io/checkpoint.h).
  std::vector<std::pair<std::string, double>> values() const;
  /// Sets the option named as values() names it to v; false (nothing set) for a name these options
  /// do not have.
  bool set_value(const std::string& name, double v);

 protected:
  OptimizerOptions() = default;
  /// Copyable by the derived types only (clone() is the public copy).
  OptimizerOptions(const OptimizerOptions&) = default;
  /// Assignable by the derived types only.
  OptimizerOptions& operator=(const OptimizerOptions&) = default;
};

/// A visitor of an options type's members by name (OptimizerOptions::fields).
class OptionFields {
 public:
  virtual ~OptionFields() = default;
  /// A real-valued option.
  virtual void operator()(const char* name, double& value) = 0;
  /// A flag.
  virtual void operator()(const char* name, bool& value) = 0;
  /// A count.
  virtual void operator()(const char* name, int64_t& value) = 0;
};

/// The parts of an options type that follow from its lr_ member (clone, get_lr, set_lr): an options
/// struct Opt derives from OptionsBase<Opt> and declares `double lr_`.
template <class Derived, class Base = OptimizerOptions>
class OptionsBase : public Base {
 public:
  using Base::Base;
  /// A copy of the same dynamic type.
  std::unique_ptr<OptimizerOptions> clone() const override {
    return std::make_unique<Derived>(static_cast<const Derived&>(*this));
  }
  /// The learning rate.
  double get_lr() const override { return static_cast<const Derived&>(*this).lr_; }
  /// Sets the learning rate.
  void set_lr(double lr) override { static_cast<Derived&>(*this).lr_ = lr; }
};

/// Parameters that share their options (PyTorch's param_groups entries, libtorch's
/// OptimizerParamGroup). A group is built with its parameters and either nothing (the optimizer's
/// defaults), a learning rate (the defaults with that rate), or options of the optimizer's type:
/// tg::optim::AdamW opt({{decay, AdamWOptions(6e-4).weight_decay(0.1)}, {no_decay, AdamWOptions(6e-4).weight_decay(0)}}).
/// Inside an optimizer every group has options: the ones given, or a copy of the defaults.
class ParamGroup {
 public:
  /// A group at the optimizer's default options, or at those options with learning rate lr.
  ParamGroup(std::vector<Tensor> params, std::optional<double> lr = std::nullopt)   // NOLINT: {{a, b}, 0.1}
      : params_(std::move(params)), lr_(lr) {}
  /// A group with its own options (copied), of the optimizer's options type.
  ParamGroup(std::vector<Tensor> params, const OptimizerOptions& options)
      : params_(std::move(params)), options_(options.clone()) {}
  /// libtorch's spelling: OptimizerParamGroup(params, std::make_unique<AdamWOptions>(1e-3)); a null
  /// pointer means the optimizer's defaults.
  ParamGroup(std::vector<Tensor> params, std::unique_ptr<OptimizerOptions> options)
      : params_(std::move(params)), options_(std::move(options)) {}
  /// A copy with a copy of the options.
  ParamGroup(const ParamGroup& other)
      : params_(other.params_), options_(other.options_ ? other.options_->clone() : nullptr), lr_(other.lr_) {}
  /// Moves.
  ParamGroup(ParamGroup&&) noexcept = default;
  /// Copies, with a copy of the options.
  ParamGroup& operator=(const ParamGroup& other) {
    if (this != &other) *this = ParamGroup(other);
    return *this;
  }
  /// Moves.
  ParamGroup& operator=(ParamGroup&&) noexcept = default;
  /// The group's parameters: defined leaves, each in one group only. Fixed once the group is in an
  /// optimizer (add_param_group adds parameters).
  const std::vector<Tensor>& params() const { return params_; }
  /// Whether the group holds options (always true inside an optimizer).
  bool has_options() const { return options_ != nullptr; }
  /// The group's options; cast to the optimizer's type to read or set them. Error when it has none.
  OptimizerOptions& options();
  /// The group's options (read only); Error when it has none.
  const OptimizerOptions& options() const;
  /// Replaces the options; the optimizer checks their type and values at its next step.
  void set_options(std::unique_ptr<OptimizerOptions> options) { options_ = std::move(options); lr_.reset(); }
  /// The learning rate given at construction (options' learning rate when it has options); unset:
  /// the optimizer's default.
  std::optional<double> lr() const { return options_ ? std::optional<double>(options_->get_lr()) : lr_; }

 private:
  std::vector<Tensor> params_;
  std::unique_ptr<OptimizerOptions> options_;
  std::optional<double> lr_;
};

/// libtorch's name of a parameter group.
using OptimizerParamGroup = ParamGroup;

/// The options of an optimizer that has nothing but a learning rate: what the base's constructors
/// taking a learning rate give each group (an optimizer written outside the library may use them).
struct LROptions : OptionsBase<LROptions> {
  /// The learning rate.
  LROptions(double lr) : lr_(lr) {}   // NOLINT: as the other options
  /// "LROptions".
  const char* type_name() const override { return "LROptions"; }
  double lr_;   ///< The learning rate.
};

/// A group's parameters and options as Optimizer::param_groups() shows them: indexable and iterable
/// (for (auto& g : opt.param_groups()) ...), each group's options readable and writable, the list
/// itself fixed (add_param_group adds a group).
template <class Group>
class ParamGroupList {
 public:
  /// Over groups (not owned).
  explicit ParamGroupList(std::vector<ParamGroup>& groups) : groups_(groups) {}
  /// The number of groups.
  std::size_t size() const { return groups_.size(); }
  /// Group i; IndexError when it does not exist.
  Group& operator[](std::size_t i) const {
    TG_CHECK(i < groups_.size(), IndexError, "param_groups: parameter group ", i, " does not exist (", groups_.size(),
             " groups)");
    return groups_[i];
  }
  /// The first group.
  Group* begin() const { return groups_.data(); }
  /// Past the last group.
  Group* end() const { return groups_.data() + groups_.size(); }

 private:
  std::vector<ParamGroup>& groups_;
};

/// The base of every optimizer (PyTorch's torch::optim::Optimizer): parameter groups, each with its
/// own options (learning rate and the optimizer's hyperparameters), zero_grad(), step() and checkpoint
/// state. Constructors throw Error for a bad option (negative learning rate, ...), options of another
/// optimizer's type, an undefined or non-leaf parameter, or a parameter in two groups.
class Optimizer {
 public:
  /// One group holding every parameter, at learning rate lr (LROptions).
  Optimizer(std::vector<Tensor> params, double lr);
  /// Groups in order; a group without lr uses default_lr (LROptions).
  Optimizer(std::vector<ParamGroup> groups, double default_lr);
  /// Groups in order, each with its options, or a copy of `defaults` (with the group's lr when it gives
  /// one). `name` is the optimizer in messages ("Adam").
  Optimizer(std::vector<ParamGroup> groups, const OptimizerOptions& defaults, std::string name);
  virtual ~Optimizer() = default;
  /// set_to_none (default, as PyTorch 2): grads become undefined; else they are filled with zeros.
  void zero_grad(bool set_to_none = true);
  /// Updates every parameter that has a gradient from it, without recording a graph. Every gradient
  /// and every group's options are checked first (Error), so a step updates all parameters or none.
  virtual void step() = 0;
  /// Inside a CUDA graph capture (what amp::GradScaler::step calls there): captures one step that
  /// each replay skips on the device wherever found_inf (a 0-d float32 on the capture's device:
  /// nonzero or NaN when an inf/NaN gradient was found) is set, leaving the parameters and the whole
  /// state, step counts included, bit for bit as they were (PyTorch's fused steps take found_inf the
  /// same way). Nothing is read back. SGD and Adam/AdamW (with capturable(true)) override it; the
  /// base raises Error naming the optimizer, whose step computes its scalars on the host.
  virtual void capture_step_unless_found(const RawTensor& found_inf);
  /// Adds a group (PyTorch's add_param_group) with its options or the defaults; its state starts empty.
  void add_param_group(ParamGroup group);
  /// The number of parameter groups.
  std::size_t num_param_groups() const { return groups_.size(); }
  /// The groups (libtorch's param_groups()): opt.param_groups()[g].options() cast to the optimizer's
  /// options type reads and sets the group's hyperparameters (checked at the next step).
  ParamGroupList<ParamGroup> param_groups() { return ParamGroupList<ParamGroup>(groups_); }
  /// The groups, read only.
  ParamGroupList<const ParamGroup> param_groups() const {
    return ParamGroupList<const ParamGroup>(const_cast<std::vector<ParamGroup>&>(groups_));
  }
  /// The options groups added without their own start from (libtorch's defaults()).
  OptimizerOptions& defaults() { return *defaults_; }
  /// The default options, read only.
  const OptimizerOptions& defaults() const { return *defaults_; }
  /// Learning rate of a group (what schedulers read and set); set_lr(lr) sets every group.
  /// IndexError for a group that does not exist.
  double lr(std::size_t group = 0) const;
  /// Sets every group's learning rate (Error when negative).
  void set_lr(double lr);
  /// Sets one group's learning rate (IndexError for a bad group, Error when negative).
  void set_lr(std::size_t group, double lr);
  /// PyTorch's param_group["initial_lr"]: a group's learning rate when the first scheduler was built
  /// on it, which every scheduler of the group reads as its base_lr (Note [Chainable schedulers] in
  /// optim/scheduler.h); unset until then, and for groups added later. IndexError for a bad group.
  std::optional<double> initial_lr(std::size_t group) const;
  /// Sets a group's initial_lr (what a scheduler does when the group has none). IndexError for a bad
  /// group.
  void set_initial_lr(std::size_t group, double lr);
  /// Checkpoint state as named tensors (tg::save() and tg::load() in io/checkpoint.h). state() may alias the
  /// live buffers. set_state validates every entry (names, shapes, dtypes) before changing anything;
  /// buffers it does not receive are reset. The base throws: an optimizer must say what its state is.
  virtual std::vector<std::pair<std::string, RawTensor>> state() const;
  /// Replaces the state with entries named as state() names them; see state() for the checks.
  virtual void set_state(const std::vector<std::pair<std::string, RawTensor>>& state);
  /// Every parameter, group after group: the indices used by state() names.
  const std::vector<Tensor>& params() const { return params_; }
 protected:
  /// The learning rate of params()[i].
  double lr_of(std::size_t i) const { return groups_[group_of_[i]].options().get_lr(); }
  /// The group of params()[i].
  std::size_t group_of(std::size_t i) const { return group_of_[i]; }
  /// The options of params()[i]'s group, as the optimizer's options type (checked by check_grads).
  template <class Options>
  const Options& options_of(std::size_t i) const {
    return static_cast<const Options&>(groups_[group_of_[i]].options());
  }
  /// Called after add_param_group appended parameters: grow per-parameter state to params().size().
  virtual void on_params_added() {}
  /// Before a step: every group's options are of the optimizer's type and valid, the groups still hold
  /// the parameters they were built with, and every gradient matches its parameter (shape, dtype,
  /// device); else Error naming who.
  void check_grads(const char* who) const;
  /// Error naming who when a parameter lives on a CUDA device whose stream is being captured into a
  /// CUDA graph: the step's scalars (step counts, bias corrections) are computed on the host and
  /// would be frozen into the graph, so replays would repeat one step's update (PyTorch raises for
  /// capturable=False). SGD, whose only per-step scalar is its lr, does not call it (Note [Captured
  /// SGD] in optim/optimizer.cpp); Adam with capturable(true) captures its step instead (Note
  /// [Captured Adam] in optim/adam.cpp).
  void refuse_capture(const char* who) const;
  /// For capture_step_unless_found: runs `update` (the captured step) between a save of what it
  /// writes (the parameters with a gradient and the CUDA tensors of state(), which alias the live
  /// buffers) and a restore of those wherever found_inf is set (Note [Skipped captured steps]).
  void restore_where_found(const RawTensor& found_inf, const std::function<void()>& update);
  /// found_inf != 0 as a 0-d bool on its device (NaN counts as found): where a skipped step keeps
  /// the old values.
  static RawTensor found_mask(const RawTensor& found_inf);
  /// Before a step: the state tensor `name` of parameter i (undefined: not created yet) still has the
  /// parameter's shape; ShapeError naming who otherwise (the parameter's value was replaced by
  /// set_data with another shape), so that no fused update runs over a buffer of another size.
  void check_state_matches(const char* who, std::size_t i, const char* name, const RawTensor& state) const;
  /// For set_state: i of "<prefix>.<i>" with 0 <= i < params().size(), else Error naming `who`.
  std::size_t state_index(const std::string& name, const std::string& prefix, const char* who) const;
  /// For set_state: t is defined and has parameter i's shape (ShapeError) and dtype (DTypeError).
  void check_state_entry(const std::string& name, const RawTensor& t, std::size_t i, const char* who) const;
  /// A copy of t on device that shares nothing with the caller's tensor.
  static RawTensor private_copy(const RawTensor& t, Device device);

  /// The dtype an optimizer keeps a parameter's state in: float32 for a float16 or bfloat16
  /// parameter (Note [Master weights]), else the parameter's own dtype.
  static DType state_dtype(DType param);
  /// The tensor the update of parameter i writes: the parameter's data, or for a 16-bit parameter
  /// its float32 master copy (made from the parameter on first use, and again whenever the parameter
  /// was written since the last step, e.g. by loading a checkpoint).
  RawTensor update_target(std::size_t i);
  /// Parameter i's gradient in state_dtype, contiguous: what the update reads.
  RawTensor update_grad(std::size_t i) const;
  /// After the update of parameter i: rounds a master copy into the parameter, and bumps the
  /// parameter's version (an in-place write: Note [Version counter]).
  void finish_update(std::size_t i);
  /// state() entries "master_weight.<i>" of the master copies that exist.
  void append_master_state(std::vector<std::pair<std::string, RawTensor>>& out) const;
  /// For set_state: an entry named "master_weight.<i>" is validated (float32, the parameter's shape)
  /// and put into next[i]; returns false for other names. next has params().size() entries.
  bool read_master_entry(const std::string& name, const RawTensor& t, std::vector<RawTensor>& next, const char* who) const;
  /// For set_state, once every entry was validated: the master copies read by read_master_entry
  /// replace the current ones (parameters without an entry rebuild theirs from the parameter).
  void install_master_state(std::vector<RawTensor> next);

  /// Every parameter, group after group (what params() returns).
  std::vector<Tensor> params_;

 private:
  /// A 16-bit parameter's float32 copy, valid while the parameter's storage and version are the ones
  /// the last step wrote.
  struct Master {
    RawTensor weight;
    std::weak_ptr<Storage> storage;
    uint64_t version = 0;
  };
  /// Error naming who unless options are of the defaults' type and pass their check.
  void check_options(const OptimizerOptions& options, std::size_t group, const char* who) const;
  std::vector<Master> master_;           // one slot per parameter, used only for 16-bit ones
  std::vector<std::size_t> group_of_;   // parameter index -> group
  std::vector<ParamGroup> groups_;       // each with options
  std::vector<std::optional<double>> group_initial_lr_;   // set by the first scheduler of each group
  std::unique_ptr<OptimizerOptions> defaults_;
  std::string name_;
};

/// Options of SGD, PyTorch style: SGDOptions(0.1).momentum(0.9).nesterov(true).weight_decay(1e-4).
/// Each setter but nesterov has a getter of the same name (libtorch's TORCH_ARG).
struct SGDOptions : OptionsBase<SGDOptions> {
  /// The learning rate; implicit, so that SGD(params, 0.01) works.
  SGDOptions(double lr) : lr_(lr) {}   // NOLINT: SGD(params, 0.01) reads naturally
  /// Sets the learning rate (Error when negative).
  SGDOptions& lr(double lr) { lr_ = lr; return *this; }
  /// The learning rate.
  double lr() const { return lr_; }
  /// Momentum factor (default 0: plain SGD; Error when negative).
  SGDOptions& momentum(double m) { momentum_ = m; return *this; }
  /// The momentum factor.
  double momentum() const { return momentum_; }
  /// Dampening of the momentum (default 0).
  SGDOptions& dampening(double d) { dampening_ = d; return *this; }
  /// The dampening.
  double dampening() const { return dampening_; }
  /// L2 penalty added to the gradient (default 0).
  SGDOptions& weight_decay(double w) { weight_decay_ = w; return *this; }
  /// The L2 penalty.
  double weight_decay() const { return weight_decay_; }
  /// Nesterov momentum (needs momentum > 0 and dampening 0, else Error). nesterov() turns it on (so
  /// there is no getter of that name: read nesterov_).
  SGDOptions& nesterov(bool n = true) { nesterov_ = n; return *this; }
  /// Whether a step inside a CUDA graph capture reads the group's learning rate from device memory
  /// that each replay's hook writes first (default false), so that a scheduler changing the lr
  /// between replays takes effect, as Adam's capturable does (Note [Captured SGD] in
  /// optim/optimizer.cpp). Without it a captured step keeps the lr it was captured with, and a
  /// replay after the lr changed raises. Momentum buffers must exist before the capture either way
  /// (a warm-up step). Eager steps are the same with or without it.
  SGDOptions& capturable(bool c) { capturable_ = c; return *this; }
  /// See capturable(bool).
  bool capturable() const { return capturable_; }
  /// "SGDOptions".
  const char* type_name() const override { return "SGDOptions"; }
  /// PyTorch's checks: learning rate, momentum and weight_decay >= 0; nesterov needs momentum > 0 and
  /// dampening 0.
  void check(const std::string& who) const override;
  /// momentum, dampening, weight_decay, nesterov, capturable.
  void fields(OptionFields& f) override {
    f("momentum", momentum_);
    f("dampening", dampening_);
    f("weight_decay", weight_decay_);
    f("nesterov", nesterov_);
    f("capturable", capturable_);
  }
  double lr_;   ///< The learning rate, the default for groups without one.
  double momentum_ = 0;   ///< See momentum().
  double dampening_ = 0;   ///< See dampening().
  double weight_decay_ = 0;   ///< See weight_decay().
  /// See nesterov().
  bool nesterov_ = false;
  bool capturable_ = false;   ///< See capturable(bool).
};

/// torch.optim.SGD: d = g + wd w; v = momentum v + (1 - dampening) d (v = d at the first step);
/// d = nesterov ? d + momentum v : v; w -= lr d. Each group steps with its own SGDOptions.
class SGD : public Optimizer {
 public:
  /// One group with every parameter at options.
  SGD(std::vector<Tensor> params, SGDOptions options);
  /// Several groups; a group without options uses `options` (with its own lr when it gives one).
  SGD(std::vector<ParamGroup> groups, SGDOptions options);
  /// One update of every parameter with a gradient (see Optimizer::step).
  void step() override;
  /// step() inside a CUDA graph capture, undone on the device where found_inf is set (see
  /// Optimizer::capture_step_unless_found): SGD's whole state is on the device.
  void capture_step_unless_found(const RawTensor& found_inf) override;
  /// "momentum_buffer.<parameter index>" (PyTorch's name) for each momentum buffer that exists (none
  /// before the first step). set_state also reads "velocity.<i>", the name in tensorgrad-1 checkpoints.
  std::vector<std::pair<std::string, RawTensor>> state() const override;
  /// Loads momentum buffers named as state() names them; Error, ShapeError or DTypeError before
  /// anything changes when an entry does not fit.
  void set_state(const std::vector<std::pair<std::string, RawTensor>>& state) override;
  /// The default options (those it was built with; each group's are in param_groups()).
  const SGDOptions& options() const { return static_cast<const SGDOptions&>(defaults()); }
  ~SGD() override;

 private:
  struct CapturedStep;   // a step inside a CUDA graph capture: its lrs, checked or written at each replay
  void on_params_added() override { momentum_buffer_.resize(params_.size()); }
  std::vector<RawTensor> momentum_buffer_;   // one per parameter once its group has momentum != 0
  std::vector<std::weak_ptr<CapturedStep>> captured_;   // owned by the graphs' replay hooks
};

}  // namespace optim
}  // namespace tg
