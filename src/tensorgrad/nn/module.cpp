// nn/module.cpp: Module registration, traversal (iterative), in-place moves and printing.
#include "tensorgrad/nn/module.h"

#include <algorithm>
#include <functional>

#include "tensorgrad/engine/error.h"

namespace tg {
namespace nn {

Variable Module::forward(const Variable&) {
  throw Error(name() + ": forward(const Variable&) is not implemented; override it in your Module");
}

void Module::add_child(const std::string& name, Module* child) {
  TG_CHECK(!name.empty() && name.find('.') == std::string::npos, Error, "register_module: invalid name \"", name,
           "\" (must be non-empty and contain no '.')");
  for (const auto& c : children_) TG_CHECK(c.first != name, Error, "register_module: \"", name, "\" is already registered");
  children_.emplace_back(name, child);
}

Variable& Module::register_parameter(const std::string& name, Variable& v, bool requires_grad) {
  TG_CHECK(!name.empty() && name.find('.') == std::string::npos, Error, "register_parameter: invalid name \"", name, "\"");
  for (const auto& p : params_) TG_CHECK(p.first != name, Error, "register_parameter: \"", name, "\" is already registered");
  if (v.defined()) v.set_requires_grad(requires_grad);
  params_.emplace_back(name, &v);
  return v;
}

Variable& Module::register_buffer(const std::string& name, Variable& v) {
  buffers_.emplace_back(name, &v);
  return v;
}

template <class F>
void Module::walk(F&& f) const {
  std::vector<std::pair<std::string, const Module*>> stack{{"", this}};
  while (!stack.empty()) {
    auto [prefix, m] = stack.back();
    stack.pop_back();
    f(prefix, *m);
    for (auto it = m->children_.rbegin(); it != m->children_.rend(); ++it)   // keep registration order
      stack.emplace_back(prefix + it->first + ".", it->second);
  }
}

std::vector<std::pair<std::string, Variable>> Module::named_parameters() const {
  std::vector<std::pair<std::string, Variable>> out;
  walk([&out](const std::string& prefix, const Module& m) {
    for (const auto& p : m.params_)
      if (p.second->defined()) out.emplace_back(prefix + p.first, *p.second);
  });
  return out;
}

std::vector<std::pair<std::string, Variable>> Module::named_buffers() const {
  std::vector<std::pair<std::string, Variable>> out;
  walk([&out](const std::string& prefix, const Module& m) {
    for (const auto& b : m.buffers_)
      if (b.second->defined()) out.emplace_back(prefix + b.first, *b.second);
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
