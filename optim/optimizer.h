// optim/optimizer.h: Optimizer base (parameter list, zero_grad, step) and SGD with PyTorch's
// update formulas. Each update is one fused Backend::sgd_step per parameter (engine/cpu_backend.cpp).
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "engine/variable.h"

namespace tg {
namespace optim {

class Optimizer {
 public:
  explicit Optimizer(std::vector<Variable> params);
  virtual ~Optimizer() = default;
  /// set_to_none (default, as PyTorch 2): grads become undefined; else they are filled with zeros.
  void zero_grad(bool set_to_none = true);
  virtual void step() = 0;
  /// The learning rate (what schedulers read and set).
  virtual double lr() const = 0;
  virtual void set_lr(double lr) = 0;
  /// Checkpoint state as named tensors (tg::save/tg::load in nn/serialize.h). state() may alias the
  /// live buffers. set_state validates every entry (names, shapes, dtypes) before changing anything;
  /// buffers it does not receive are reset. The base throws: an optimizer must say what its state is.
  virtual std::vector<std::pair<std::string, Tensor>> state() const;
  virtual void set_state(const std::vector<std::pair<std::string, Tensor>>& state);
  const std::vector<Variable>& params() const { return params_; }
 protected:
  /// Before a step: every gradient matches its parameter (shape, dtype, device); else Error naming who.
  void check_grads(const char* who) const;
  /// For set_state: i of "<prefix>.<i>" with 0 <= i < params().size(), else Error naming `who`.
  std::size_t state_index(const std::string& name, const std::string& prefix, const char* who) const;
  /// For set_state: t is defined and has parameter i's shape (ShapeError) and dtype (DTypeError).
  void check_state_entry(const std::string& name, const Tensor& t, std::size_t i, const char* who) const;
  /// A copy of t on device that shares nothing with the caller's tensor.
  static Tensor private_copy(const Tensor& t, Device device);

  std::vector<Variable> params_;
};

struct SGDOptions {
  SGDOptions(double lr) : lr_(lr) {}   // NOLINT: SGD(params, 0.01) reads naturally
  SGDOptions& momentum(double m) { momentum_ = m; return *this; }
  SGDOptions& dampening(double d) { dampening_ = d; return *this; }
  SGDOptions& weight_decay(double w) { weight_decay_ = w; return *this; }
  SGDOptions& nesterov(bool n = true) { nesterov_ = n; return *this; }
  double lr_, momentum_ = 0, dampening_ = 0, weight_decay_ = 0;
  bool nesterov_ = false;
};

/// torch.optim.SGD: d = g + wd w; v = momentum v + (1 - dampening) d (v = d at the first step);
/// d = nesterov ? d + momentum v : v; w -= lr d.
class SGD : public Optimizer {
 public:
  SGD(std::vector<Variable> params, SGDOptions options);
  void step() override;
  /// "velocity.<parameter index>" for each momentum buffer that exists (none before the first step).
  std::vector<std::pair<std::string, Tensor>> state() const override;
  void set_state(const std::vector<std::pair<std::string, Tensor>>& state) override;
  double lr() const override { return options_.lr_; }
  void set_lr(double lr) override { options_.lr_ = lr; }
  SGDOptions& options() { return options_; }
 private:
  SGDOptions options_;
  std::vector<Tensor> velocity_;   // one per parameter once momentum != 0
};

}  // namespace optim
}  // namespace tg
