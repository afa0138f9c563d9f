// optim/optimizer.h: Optimizer base (parameter groups with their own learning rate, zero_grad, step,
// checkpoint state) and SGD with PyTorch's update formulas. Each update is one fused
// Backend::sgd_step per parameter (backend/cpu/optim.cpp, backend/cuda/optim.cu). Adam/AdamW: optim/adam.h.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tensorgrad/autograd/tensor.h"

namespace tg {
namespace optim {

/// Parameters that share a learning rate (PyTorch's param_groups); no lr: the optimizer's default.
struct ParamGroup {
  /// The group's parameters: defined leaves, each in one group only.
  std::vector<Tensor> params;
  /// The group's learning rate; unset: the optimizer's default.
  std::optional<double> lr;
};

/// The base of every optimizer (PyTorch's torch::optim::Optimizer): parameter groups, each with its
/// learning rate, zero_grad(), step() and checkpoint state. Constructors throw Error for a negative
/// learning rate, an undefined or non-leaf parameter, or a parameter in two groups.
class Optimizer {
 public:
  /// One group holding every parameter, at learning rate lr.
  Optimizer(std::vector<Tensor> params, double lr);
  /// Groups in order; a group without lr uses default_lr.
  Optimizer(std::vector<ParamGroup> groups, double default_lr);
  virtual ~Optimizer() = default;
  /// set_to_none (default, as PyTorch 2): grads become undefined; else they are filled with zeros.
  void zero_grad(bool set_to_none = true);
  /// Updates every parameter that has a gradient from it, without recording a graph. Every gradient
  /// is checked first (shape, dtype, device: Error), so a step updates all parameters or none.
  virtual void step() = 0;
  /// Adds a group (PyTorch's add_param_group); its state starts empty.
  void add_param_group(ParamGroup group);
  /// The number of parameter groups.
  std::size_t num_param_groups() const { return group_lr_.size(); }
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
  double lr_of(std::size_t i) const { return group_lr_[group_of_[i]]; }
  /// Called after add_param_group appended parameters: grow per-parameter state to params().size().
  virtual void on_params_added() {}
  /// Before a step: every gradient matches its parameter (shape, dtype, device); else Error naming who.
  void check_grads(const char* who) const;
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
  std::vector<Master> master_;           // one slot per parameter, used only for 16-bit ones
  std::vector<std::size_t> group_of_;   // parameter index -> group
  std::vector<double> group_lr_;
  std::vector<std::optional<double>> group_initial_lr_;   // set by the first scheduler of each group
  double default_lr_;
};

/// Options of SGD, PyTorch style: SGDOptions(0.1).momentum(0.9).nesterov(true).weight_decay(1e-4).
struct SGDOptions {
  /// The learning rate; implicit, so that SGD(params, 0.01) works.
  SGDOptions(double lr) : lr_(lr) {}   // NOLINT: SGD(params, 0.01) reads naturally
  /// Momentum factor (default 0: plain SGD; Error when negative).
  SGDOptions& momentum(double m) { momentum_ = m; return *this; }
  /// Dampening of the momentum (default 0).
  SGDOptions& dampening(double d) { dampening_ = d; return *this; }
  /// L2 penalty added to the gradient (default 0).
  SGDOptions& weight_decay(double w) { weight_decay_ = w; return *this; }
  /// Nesterov momentum (needs momentum > 0 and dampening 0, else Error).
  SGDOptions& nesterov(bool n = true) { nesterov_ = n; return *this; }
  double lr_;   ///< The learning rate, the default for groups without one.
  double momentum_ = 0;   ///< See momentum().
  double dampening_ = 0;   ///< See dampening().
  double weight_decay_ = 0;   ///< See weight_decay().
  /// See nesterov().
  bool nesterov_ = false;
};

/// torch.optim.SGD: d = g + wd w; v = momentum v + (1 - dampening) d (v = d at the first step);
/// d = nesterov ? d + momentum v : v; w -= lr d.
class SGD : public Optimizer {
 public:
  /// One group with every parameter at options' learning rate.
  SGD(std::vector<Tensor> params, SGDOptions options);
  /// Several groups; a group without lr uses options' learning rate.
  SGD(std::vector<ParamGroup> groups, SGDOptions options);
  /// One update of every parameter with a gradient (see Optimizer::step).
  void step() override;
  /// "momentum_buffer.<parameter index>" (PyTorch's name) for each momentum buffer that exists (none
  /// before the first step). set_state also reads "velocity.<i>", the name in tensorgrad-1 checkpoints.
  std::vector<std::pair<std::string, RawTensor>> state() const override;
  /// Loads momentum buffers named as state() names them; Error, ShapeError or DTypeError before
  /// anything changes when an entry does not fit.
  void set_state(const std::vector<std::pair<std::string, RawTensor>>& state) override;
  /// The options it was built with.
  const SGDOptions& options() const { return options_; }
 private:
  /// Validates the options (before the base class sees the parameters, as PyTorch orders its errors)
  /// and returns the learning rate.
  static double checked_lr(const SGDOptions& options);
  void on_params_added() override { momentum_buffer_.resize(params_.size()); }
  SGDOptions options_;
  std::vector<RawTensor> momentum_buffer_;   // one per parameter once momentum != 0
};

}  // namespace optim
}  // namespace tg
