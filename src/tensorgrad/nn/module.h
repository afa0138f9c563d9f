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

/// The base of every layer and model (PyTorch's torch::nn::Module). Subclasses hold their parameters
/// and child modules as members and register them by reference in the constructor:
/// \code
/// struct Net : tg::nn::Module {
///   tg::nn::Linear fc1{784, 128}, fc2{128, 10};
///   Net() { register_module("fc1", fc1); register_module("fc2", fc2); }
///   tg::Variable forward(const tg::Variable& x) override { return fc2(tg::relu(fc1(x))); }
/// };
/// \endcode
/// Modules are neither copied nor moved: the registered addresses must stay valid.
class Module {
 public:
  /// No parameters, buffers or children; training mode.
  Module() = default;
  virtual ~Module() = default;
  Module(const Module&) = delete;              // children are registered by reference: no copies,
  Module& operator=(const Module&) = delete;   // no moves
  Module(Module&&) = delete;
  Module& operator=(Module&&) = delete;

  /// The computation; the base throws tg::Error naming the module: override it.
  virtual Variable forward(const Variable& x);   // throws unless overridden
  /// forward(x), as PyTorch's module(x).
  Variable operator()(const Variable& x) { return forward(x); }
  /// One-line description used when printing: "Linear(in_features=784, out_features=128, bias=true)".
  virtual std::string name() const { return "Module"; }

  /// Registers a child; it must outlive this module (usually a member). Returns it. A module may be
  /// registered in several parents (it is then visited once), never inside itself.
  /// Error for an empty name, a name with '.', one already registered here as a child, parameter
  /// or buffer, or a child that contains this module.
  template <class M>
  M& register_module(const std::string& name, M& child) {
    add_child(name, &child);
    return child;
  }
  /// Registers a parameter (set to require grad) under name; returns the stored handle.
  /// v is kept by reference (usually a member) and may still be undefined (an optional bias);
  /// undefined parameters are skipped by the traversals. Error for a bad or repeated name.
  Variable& register_parameter(const std::string& name, Variable& v, bool requires_grad = true);
  /// Registers a non-parameter state tensor (kept by reference, moved by to(Device), saved in
  /// checkpoints, never given to optimizers); returns v. Error for a bad or repeated name.
  Variable& register_buffer(const std::string& name, Variable& v);

  /// Every defined parameter of this module and its descendants, in registration order (depth first),
  /// each once: a module registered twice and a tied weight appear under their first name only.
  std::vector<Variable> parameters() const;
  /// The same, with dotted names: "fc1.weight", "fc1.bias", ...
  std::vector<std::pair<std::string, Variable>> named_parameters() const;
  /// Every defined buffer of this module and its descendants, with dotted names.
  std::vector<std::pair<std::string, Variable>> named_buffers() const;
  /// The direct children with their names, in registration order.
  std::vector<std::pair<std::string, Module*>> children() const { return children_; }

  /// Moves every parameter, gradient and buffer in place (their handles keep working). Returns *this.
  /// All copies are made before any is swapped in, so a failure (DeviceError) leaves the module as it was.
  Module& to(Device device);
  /// Converts every parameter and its gradient to a floating dtype in place (buffers keep theirs);
  /// DTypeError for int64. Returns *this.
  Module& to(DType dtype);
  /// Sets training mode (on) or evaluation mode (off) on this module and every descendant; Dropout
  /// reads it. Returns *this.
  Module& train(bool on = true);
  /// train(false).
  Module& eval() { return train(false); }
  /// True in training mode (the default).
  bool is_training() const { return training_; }
  /// Sets every parameter's gradient to undefined (PyTorch's zero_grad(set_to_none=True)).
  void zero_grad();

 private:
  void add_child(const std::string& name, Module* child);
  void check_new_name(const char* who, const std::string& name) const;   // Note [Module tree], module.cpp
  template <class F>
  void walk(F&& f) const;   // f(prefix, module) over this module and every descendant, iteratively

  std::vector<std::pair<std::string, Module*>> children_;
  std::vector<std::pair<std::string, Variable*>> params_;
  std::vector<std::pair<std::string, Variable*>> buffers_;
  bool training_ = true;
};

/// Prints the module tree like PyTorch: each module's name(), children indented under it.
std::ostream& operator<<(std::ostream& os, const Module& m);

}  // namespace nn
}  // namespace tg
