// nn/layers.cpp: layer constructors (PyTorch's default init) and Sequential::forward.
#include "tensorgrad/nn/layers.h"

#include <cmath>
#include <sstream>

#include "tensorgrad/engine/prim.h"
#include "tensorgrad/nn/init.h"

namespace tg {
namespace nn {

Linear::Linear(int64_t in_features, int64_t out_features, bool with_bias)
    : in_features_(in_features), out_features_(out_features) {
  TG_CHECK(in_features > 0 && out_features > 0, ShapeError, "Linear: in_features and out_features must be positive, got ",
           in_features, " and ", out_features);
  // PyTorch's reset_parameters: kaiming_uniform_(a = sqrt(5)) gives U(+-1/sqrt(in)) for the weight.
  weight = Variable(prim::empty({out_features, in_features}));
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  register_parameter("weight", weight);
  if (with_bias) {
    const double bound = 1.0 / std::sqrt(static_cast<double>(in_features));
    bias = Variable(prim::empty({out_features}));
    init::uniform_(bias, -bound, bound);
    register_parameter("bias", bias);
  }
}

std::unique_ptr<Module> Linear::new_instance() const {
  return std::make_unique<Linear>(in_features_, out_features_, bias.defined());
}

std::string Linear::name() const {
  std::ostringstream os;
  os << "Linear(in_features=" << in_features_ << ", out_features=" << out_features_
     << ", bias=" << (bias.defined() ? "true" : "false") << ")";
  return os.str();
}

Dropout::Dropout(double p) : p_(p) {
  TG_CHECK(p >= 0 && p <= 1, Error, "Dropout: probability has to be between 0 and 1, but got ", p);
}

std::string Dropout::name() const {
  std::ostringstream os;
  os << "Dropout(p=" << p_ << ")";
  return os.str();
}

// Destroying nested Sequentials recursively (~Sequential -> ~unique_ptr -> ~Sequential ...) uses one
// stack frame per level; instead the owned children of every Sequential met are moved into one
// heap-allocated list, so each module dies with nothing left to destroy below it.
Sequential::~Sequential() {
  std::vector<std::unique_ptr<Module>> pending = std::move(owned_);
  while (!pending.empty()) {
    std::unique_ptr<Module> m = std::move(pending.back());
    pending.pop_back();
    if (auto* s = dynamic_cast<Sequential*>(m.get())) {
      for (auto& c : s->owned_) pending.push_back(std::move(c));
      s->owned_.clear();
    }
  }
}

Variable Sequential::forward(const Variable& x) {
  Variable y = x;
  for (auto& m : owned_) y = (*m)(y);
  return y;
}

Module& Sequential::push_back(std::unique_ptr<Module> module) {
  return push_back(std::to_string(owned_.size()), std::move(module));
}

Module& Sequential::push_back(const std::string& name, std::unique_ptr<Module> module) {
  TG_CHECK(module != nullptr, Error, "Sequential::push_back: the module is null");
  Module& ref = *module;
  register_module(name, ref);   // refuses an empty or dotted name and one already taken
  names_.push_back(name);
  owned_.push_back(std::move(module));
  return ref;
}

std::unique_ptr<Module> Sequential::new_instance() const {
  auto copy = std::make_unique<Sequential>();
  for (const auto& m : owned_) {
    std::unique_ptr<Module> child = m->new_instance();
    TG_CHECK(child != nullptr, Error, "clone: ", m->name(), ": new_instance() returned null");
    copy->push_back(names_[copy->owned_.size()], std::move(child));
  }
  return copy;
}

}  // namespace nn
}  // namespace tg
