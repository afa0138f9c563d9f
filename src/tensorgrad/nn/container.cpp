// nn/container.cpp: Sequential, ModuleList and ModuleDict (nn/container.h).
#include "tensorgrad/nn/container.h"

#include <algorithm>

namespace tg {
namespace nn {

// Destroying nested containers recursively (~Sequential -> ~shared_ptr -> ~Sequential ...) uses one
// stack frame per level; instead the children of every container met that nobody else holds are moved
// into one heap-allocated list, so each module dies with nothing left to destroy below it.
ModuleSequence::~ModuleSequence() {
  std::vector<std::shared_ptr<Module>> pending = std::move(items_);
  while (!pending.empty()) {
    std::shared_ptr<Module> m = std::move(pending.back());
    pending.pop_back();
    if (m.use_count() != 1) continue;   // shared elsewhere, or held by reference (no owner)
    if (auto* s = dynamic_cast<ModuleSequence*>(m.get())) {
      for (auto& c : s->items_) pending.push_back(std::move(c));
      s->items_.clear();
    }
  }
}

std::shared_ptr<Module> ModuleSequence::ptr(std::size_t i) const {
  const auto& items = elements();
  TG_CHECK(i < items.size(), IndexError, name(), "[", i, "]: index out of range for ", items.size(), " modules");
  return items[i];
}

Module& ModuleSequence::append(const std::string& name, std::shared_ptr<Module> child) {
  ModuleSequence& self = static_cast<ModuleSequence&>(resolved());
  TG_CHECK(child != nullptr, Error, self.name(), "::push_back: the module is null");
  Module& ref = *child;
  self.register_module(name, ref);   // refuses an empty or dotted name and one already taken
  self.names_.push_back(name);
  self.items_.push_back(std::move(child));
  return ref;
}

void ModuleSequence::extend(const ModuleSequence& other) {
  const std::vector<std::shared_ptr<Module>> items = other.elements();   // other may be this one
  for (const auto& m : items) append(std::to_string(size()), m);
}

void ModuleSequence::new_children_into(ModuleSequence& copy) const {
  for (std::size_t i = 0; i < items_.size(); ++i) {
    std::unique_ptr<Module> child = items_[i]->new_instance();
    TG_CHECK(child != nullptr, Error, "clone: ", items_[i]->name(), ": new_instance() returned null");
    copy.append(names_[i], std::shared_ptr<Module>(std::move(child)));
  }
}

void ModuleSequence::move_children_into(ModuleSequence& fresh) {
  for (std::size_t i = 0; i < items_.size(); ++i) fresh.append(names_[i], items_[i]);
  fresh.train(is_training());
}

Tensor Sequential::forward(const Tensor& x) {
  Tensor y = x;
  for (const auto& m : elements()) y = (*m)(y);
  return y;
}

std::unique_ptr<Module> Sequential::new_instance() const {
  auto copy = std::make_unique<Sequential>();
  new_children_into(*copy);
  return copy;
}

std::unique_ptr<Module> Sequential::move_out() {
  auto fresh = std::make_unique<Sequential>();
  move_children_into(*fresh);
  return fresh;
}

std::unique_ptr<Module> ModuleList::new_instance() const {
  auto copy = std::make_unique<ModuleList>();
  new_children_into(*copy);
  return copy;
}

std::unique_ptr<Module> ModuleList::move_out() {
  auto fresh = std::make_unique<ModuleList>();
  move_children_into(*fresh);
  return fresh;
}

void ModuleDict::update(const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& modules) {
  for (const auto& [key, m] : modules) append(key, m);
}

Module& ModuleDict::append(const std::string& name, std::shared_ptr<Module> child) {
  ModuleDict& self = static_cast<ModuleDict&>(resolved());
  TG_CHECK(child != nullptr, Error, "ModuleDict: \"", name, "\" is a null module");
  Module& ref = *child;
  self.register_module(name, ref);   // refuses an empty, dotted or repeated name
  self.items_.emplace_back(name, std::move(child));
  return ref;
}

std::shared_ptr<Module> ModuleDict::operator[](const std::string& key) const {
  for (const auto& item : dict().items_)
    if (item.first == key) return item.second;
  throw IndexError("ModuleDict[\"" + key + "\"]: no module of that name");
}

bool ModuleDict::contains(const std::string& key) const {
  const auto& items = dict().items_;
  return std::any_of(items.begin(), items.end(), [&key](const auto& item) { return item.first == key; });
}

std::vector<std::string> ModuleDict::keys() const {
  std::vector<std::string> out;
  for (const auto& item : dict().items_) out.push_back(item.first);
  return out;
}

std::vector<std::shared_ptr<Module>> ModuleDict::values() const {
  std::vector<std::shared_ptr<Module>> out;
  for (const auto& item : dict().items_) out.push_back(item.second);
  return out;
}

std::unique_ptr<Module> ModuleDict::new_instance() const {
  auto copy = std::make_unique<ModuleDict>();
  for (const auto& [key, m] : items_) {
    std::unique_ptr<Module> child = m->new_instance();
    TG_CHECK(child != nullptr, Error, "clone: ", m->name(), ": new_instance() returned null");
    copy->append(key, std::shared_ptr<Module>(std::move(child)));
  }
  return copy;
}

std::unique_ptr<Module> ModuleDict::move_out() {
  auto fresh = std::make_unique<ModuleDict>();
  for (const auto& [key, m] : items_) fresh->append(key, m);
  fresh->train(is_training());
  return fresh;
}

}  // namespace nn
}  // namespace tg
