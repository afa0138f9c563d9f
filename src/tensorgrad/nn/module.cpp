// nn/module.cpp: Module registration, traversal (iterative), in-place moves and printing.
#include "tensorgrad/nn/module.h"

#include <algorithm>
#include <functional>
#include <unordered_set>

#include "tensorgrad/engine/error.h"

namespace tg {
namespace nn {

Variable Module::forward(const Variable&) {
  throw Error(name() + ": forward(const Variable&) is not implemented; override it in your Module");
}

// Note [Module tree]
// ~~~~~~~~~~~~~~~~~~
// Registration builds a directed acyclic graph of modules: a module may be registered under several
// parents (shared or tied layers) but never inside itself, directly or through its descendants, which
// add_child refuses (a cycle would make every traversal endless). Traversals visit each module once,
// under the first name that reaches it, and named_parameters() returns each parameter once (by
// identity: tied weights are one parameter), as PyTorch's named_modules / named_parameters do with
// remove_duplicate=True. Names within one module are unique across its children, parameters and
// buffers, non-empty and free of '.', so that dotted state_dict keys stay unambiguous.
void Module::check_new_name(const char* who, const std::string& name) const {
  TG_CHECK(!name.empty() && name.find('.') == std::string::npos, Error, who, ": invalid name \"", name,
           "\" (must be non-empty and contain no '.')");
  auto taken = [&name](const auto& list) {
    return std::any_of(list.begin(), list.end(), [&name](const auto& e) { return e.first == name; });
  };
  TG_CHECK(!taken(children_) && !taken(params_) && !taken(buffers_), Error, who, ": \"", name,
           "\" is already registered in this ", this->name());
}

void Module::add_child(const std::string& name, Module* child) {
  check_new_name("register_module", name);
  TG_CHECK(child != nullptr, Error, "register_module: \"", name, "\" is a null module");
  bool cycle = false;   // would this module become its own descendant?
  child->walk([this, &cycle](const std::string&, const Module& m) { cycle = cycle || &m == this; });
  TG_CHECK(!cycle, Error, "register_module: cannot register \"", name, "\" (", child->name(),
           "): this module would contain itself");
  children_.emplace_back(name, child);
}

Variable& Module::register_parameter(const std::string& name, Variable& v, bool requires_grad) {
  check_new_name("register_parameter", name);
  if (v.defined()) v.set_requires_grad(requires_grad);
  params_.emplace_back(name, &v);
  return v;
}

Variable& Module::register_buffer(const std::string& name, Variable& v) {
  check_new_name("register_buffer", name);
  buffers_.emplace_back(name, &v);
  return v;
}

template <class F>
void Module::walk(F&& f) const {   // See Note [Module tree]: each module once, pre-order
  std::vector<std::pair<std::string, const Module*>> stack{{"", this}};
  std::unordered_set<const Module*> seen;
  while (!stack.empty()) {
    auto [prefix, m] = stack.back();
    stack.pop_back();
    if (!seen.insert(m).second) continue;
    f(prefix, *m);
    for (auto it = m->children_.rbegin(); it != m->children_.rend(); ++it)   // keep registration order
      stack.emplace_back(prefix + it->first + ".", it->second);
  }
}

std::vector<std::pair<std::string, Variable>> Module::named_parameters() const {
  std::vector<std::pair<std::string, Variable>> out;
  std::unordered_set<const VariableImpl*> seen;   // tied parameters once (Note [Module tree])
  walk([&out, &seen](const std::string& prefix, const Module& m) {
    for (const auto& p : m.params_)
      if (p.second->defined() && seen.insert(p.second->impl().get()).second) out.emplace_back(prefix + p.first, *p.second);
  });
  return out;
}

std::vector<std::pair<std::string, Variable>> Module::named_buffers() const {
  std::vector<std::pair<std::string, Variable>> out;
  std::unordered_set<const VariableImpl*> seen;
  walk([&out, &seen](const std::string& prefix, const Module& m) {
    for (const auto& b : m.buffers_)
      if (b.second->defined() && seen.insert(b.second->impl().get()).second) out.emplace_back(prefix + b.first, *b.second);
  });
  return out;
}

std::vector<Variable> Module::parameters() const {
  std::vector<Variable> out;
  for (auto& p : named_parameters()) out.push_back(p.second);
  return out;
}

namespace {
void move_value(Variable& v, const std::function<Tensor(const Tensor&)>& f) {
  NoGradGuard no_grad;
  v.set_data(f(v.data()));
  Variable g = v.grad();
  if (g.defined()) g.set_data(f(g.data()));
}
}  // namespace

Module& Module::to(Device device) {
  // Every value moves first, then all are swapped in: a failure (say an unusable device) leaves
  // the module as it was.
  std::vector<Variable> values;
  for (auto& p : named_parameters()) values.push_back(p.second);
  for (auto& b : named_buffers()) values.push_back(b.second);
  std::vector<Tensor> moved, moved_grads;
  for (auto& v : values) {
    moved.push_back(v.data().to(device));
    moved_grads.push_back(v.grad().defined() ? v.grad().data().to(device) : Tensor());
  }
  for (std::size_t i = 0; i < values.size(); ++i) {
    values[i].set_data(moved[i]);
    if (moved_grads[i].defined()) values[i].grad().set_data(moved_grads[i]);
  }
  return *this;
}

Module& Module::to(DType dtype) {
  TG_CHECK(is_floating(dtype), DTypeError, "Module::to: parameters must be floating point, got ", dtype_name(dtype));
  for (auto& p : named_parameters()) move_value(p.second, [dtype](const Tensor& t) { return t.to(dtype); });
  return *this;
}

Module& Module::train(bool on) {
  walk([on](const std::string&, const Module& m) { const_cast<Module&>(m).training_ = on; });
  return *this;
}

void Module::zero_grad() {
  for (auto& p : named_parameters()) p.second.zero_grad();
}

std::ostream& operator<<(std::ostream& os, const Module& root) {
  // Iterative pre-order print with PyTorch's layout; closing parens are emitted as frames pop.
  struct Frame {
    const Module* m;
    std::string label;
    int depth;
    bool close;
  };
  std::vector<Frame> stack{{&root, "", 0, false}};
  while (!stack.empty()) {
    Frame f = stack.back();
    stack.pop_back();
    const std::string indent(static_cast<std::size_t>(2 * f.depth), ' ');
    if (f.close) {
      os << indent << ")" << (f.depth == 0 ? "" : "\n");
      continue;
    }
    os << indent << f.label << f.m->name();
    const auto kids = f.m->children();
    if (kids.empty()) {
      os << (f.depth == 0 ? "" : "\n");
      continue;
    }
    os << "(\n";
    stack.push_back({f.m, "", f.depth, true});
    for (auto it = kids.rbegin(); it != kids.rend(); ++it)
      stack.push_back({it->second, "(" + it->first + "): ", f.depth + 1, false});
  }
  return os;
}

}  // namespace nn
}  // namespace tg
