/// \file
/// nn/module.h: Module, the base of every layer and model: registration by reference, parameter
/// traversal with dotted names, device/dtype moves in place, train/eval, printing. Layers are in
/// nn/layers.h; the ops they call in ops/ops.h.
#pragma once
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "tensorgrad/engine/variable.h"

namespace tg {
namespace nn {

class Module {
 public:
  Module() = default;
  virtual ~Module() = default;
  Module(const Module&) = delete;              // children are registered by reference: no copies,
  Module& operator=(const Module&) = delete;   // no moves
  Module(Module&&) = delete;
  Module& operator=(Module&&) = delete;

  virtual Variable forward(const Variable& x);   // throws unless overridden
  Variable operator()(const Variable& x) { return forward(x); }
  /// One-line description used when printing: "Linear(in_features=784, out_features=128, bias=true)".
  virtual std::string name() const { return "Module"; }

  /// Registers a child; it must outlive this module (usually a member). Returns it.
  template <class M>
  M& register_module(const std::string& name, M& child) {
    add_child(name, &child);
    return child;
  }
  /// Registers a parameter (set to require grad) under name; returns the stored handle.
  Variable& register_parameter(const std::string& name, Variable& v, bool requires_grad = true);
  Variable& register_buffer(const std::string& name, Variable& v);

  std::vector<Variable> parameters() const;                                   // registration order
  std::vector<std::pair<std::string, Variable>> named_parameters() const;     // "fc1.weight", ...
  std::vector<std::pair<std::string, Variable>> named_buffers() const;
  std::vector<std::pair<std::string, Module*>> children() const { return children_; }

  /// Moves every parameter, gradient and buffer in place (their handles keep working). Returns *this.
  Module& to(Device device);
  Module& to(DType dtype);
  Module& train(bool on = true);
  Module& eval() { return train(false); }
  bool is_training() const { return training_; }
  void zero_grad();

 private:
  void add_child(const std::string& name, Module* child);
  template <class F>
  void walk(F&& f) const;   // f(prefix, module) over this module and every descendant, iteratively

  std::vector<std::pair<std::string, Module*>> children_;
  std::vector<std::pair<std::string, Variable*>> params_;
  std::vector<std::pair<std::string, Variable*>> buffers_;
  bool training_ = true;
};

/// Prints the module tree like PyTorch.
std::ostream& operator<<(std::ostream& os, const Module& m);

}  // namespace nn
}  // namespace tg
