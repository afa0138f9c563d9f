// nn/module.cpp: Module registration, traversal (iterative), in-place moves, forward hooks, clone()
// and printing. The hook lists are in autograd/hooks.h.
#include "tensorgrad/nn/module.h"

#include <algorithm>
#include <functional>
#if defined(__GNUG__)
#include <cxxabi.h>
#endif
#include <cstdlib>
#include <sstream>
#include <typeinfo>
#include <unordered_map>
#include <unordered_set>

#include "tensorgrad/backend/backend.h"
#include "tensorgrad/core/error.h"
#include "tensorgrad/nn/init.h"

namespace tg {
namespace nn {

namespace {
/// The class name of a type_info without its namespaces and enclosing scopes, as PyTorch prints a
/// module: "Net" for tg::nn::Net, (anonymous namespace)::Net or a class local to a function;
/// template arguments are kept ("Block<3>").
std::string class_name(const std::type_info& type) {
  std::string full = type.name();
#if defined(__GNUG__)
  int status = 0;
  char* demangled = abi::__cxa_demangle(type.name(), nullptr, nullptr, &status);
  if (status == 0 && demangled != nullptr) full = demangled;
  std::free(demangled);
#endif
  std::size_t start = 0;   // just past the last "::" outside brackets and parentheses
  int depth = 0;
  for (std::size_t i = 0; i < full.size(); ++i) {
    const char c = full[i];
    if (c == '<' || c == '(') ++depth;
    else if (c == '>' || c == ')') --depth;
    else if (depth == 0 && c == ':' && i + 1 < full.size() && full[i + 1] == ':') start = i + 2;
  }
  return full.substr(start);
}
}  // namespace

std::string Module::name() const { return name_.empty() ? class_name(typeid(*this)) : name_; }

bool Module::has_forward_hooks() const {
  const tg::detail::ModuleHooks* hooks = hooks_.get();
  return hooks != nullptr && (!hooks->pre.empty() || !hooks->post.empty());
}

std::string Module::class_name_of(const std::type_info& type) { return class_name(type); }

void Module::pretty_print(std::ostream& os) const { os << name(); }

Tensor Module::forward(const Tensor& x) {
  // A libtorch-style forward (Note [The forward of a libtorch-style module] in nn/pimpl.h), once per
  // module on this thread: a module whose static type has no forward of its own would call back here.
  thread_local const Module* active = nullptr;
  if (libtorch_forward_ && active != this) {
    struct Restore {
      const Module* saved;
      ~Restore() { active = saved; }
    } restore{active};
    active = this;
    return libtorch_forward_(*this, x);
  }
  throw Error(name() + ": forward(const Tensor&) is not implemented; override it in your Module");
}

// ------------------------------------------------------------------------------------------------
// handles: Note [Value modules and handles] in nn/pimpl.h

Module& Module::resolved() { return const_cast<Module&>(static_cast<const Module&>(*this).resolved()); }

const Module& Module::resolved() const {
  if (!handle_) return *this;
  TG_CHECK(handle_target_ != nullptr, Error, class_name(typeid(*this)),
           ": accessing an empty handle (constructed from nullptr); assign it a module first, e.g. fc = "
           "register_module(\"fc\", tg::nn::Linear(784, 64))");
  return *handle_target_;
}

std::shared_ptr<Module> Module::shared() {
  Module& m = resolved();
  if (&m != this) return handle_target_;
  if (std::shared_ptr<Module> owner = weak_from_this().lock()) return owner;
  return std::shared_ptr<Module>(std::shared_ptr<Module>(), this);   // does not own: see shared()
}

Tensor Module::handle_call(const Tensor& x) { return resolved()(x); }

std::shared_ptr<Module> Module::handle_target(Module& handle, const std::string& name) {
  TG_CHECK(handle.handle_target_ != nullptr, Error, "register_module: \"", name, "\" is an empty ",
           class_name(typeid(handle)), " handle (constructed from nullptr)");
  return handle.handle_target_;
}

std::shared_ptr<Module> Module::adopt(Module& temporary, const std::string& name) {
  if (temporary.handle_) return name.empty() ? temporary.handle_target_ : handle_target(temporary, name);
  std::unique_ptr<Module> moved = temporary.move_out();
  TG_CHECK(moved != nullptr, Error, temporary.name(), ": move_out() returned null");
  return std::shared_ptr<Module>(std::move(moved));
}

std::unique_ptr<Module> Module::move_out() {
  std::unique_ptr<Module> fresh;
  {
    init::SkipInitGuard skip_init;   // every value is taken from this module below; draw nothing
    fresh = new_instance();
  }
  TG_CHECK(fresh != nullptr, Error, name(), ": new_instance() returned null");
  const Module& made = *fresh;
  TG_CHECK(typeid(made) == typeid(*this), Error, "moving ", name(), " into shared ownership: new_instance() built a ",
           fresh->name(), "; override new_instance() in the derived class");
  copy_state(*this, *fresh, std::nullopt, /*share=*/true);
  return fresh;
}

void Module::add_shared_child(const std::string& name, std::shared_ptr<Module> child) {
  TG_CHECK(child != nullptr, Error, "register_module: \"", name, "\" is a null module");
  add_child(name, child.get());
  owned_children_.push_back(std::move(child));
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

Tensor& Module::register_parameter(const std::string& name, Tensor& v, bool requires_grad) {
  check_new_name("register_parameter", name);
  if (v.defined()) v.set_requires_grad(requires_grad);
  params_.emplace_back(name, &v);
  return v;
}

Tensor& Module::register_buffer(const std::string& name, Tensor& v) {
  check_new_name("register_buffer", name);
  buffers_.emplace_back(name, &v);
  return v;
}

Tensor& Module::hold(Tensor v) {
  held_.push_back(std::move(v));
  return held_.back();
}

Tensor* Module::unregister(const std::string& name) {
  for (auto* list : {&params_, &buffers_})
    for (auto it = list->begin(); it != list->end(); ++it)
      if (it->first == name) {
        Tensor* slot = it->second;
        list->erase(it);
        return slot;
      }
  return nullptr;
}

std::shared_ptr<void>& Module::extension(const std::string& key) { return extensions_[key]; }

void Module::set_clone_step(const std::string& key, CloneStep step) {
  auto it = std::find_if(clone_steps_.begin(), clone_steps_.end(), [&key](const auto& e) { return e.first == key; });
  if (!step.layout) {
    if (it != clone_steps_.end()) clone_steps_.erase(it);
  } else if (it != clone_steps_.end()) {
    it->second = std::move(step);
  } else {
    clone_steps_.emplace_back(key, std::move(step));
  }
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

std::vector<std::pair<std::string, Tensor>> Module::named_parameters(bool recurse) const {
  const Module& self = resolved();
  std::vector<std::pair<std::string, Tensor>> out;
  std::unordered_set<const TensorImpl*> seen;   // tied parameters once (Note [Module tree])
  self.walk([&](const std::string& prefix, const Module& m) {
    if (!recurse && &m != &self) return;
    for (const auto& p : m.params_)
      if (p.second->defined() && seen.insert(p.second->impl().get()).second)
        out.emplace_back(prefix + p.first, *p.second);
  });
  return out;
}

std::vector<std::pair<std::string, Tensor>> Module::named_buffers(bool recurse) const {
  const Module& self = resolved();
  std::vector<std::pair<std::string, Tensor>> out;
  std::unordered_set<const TensorImpl*> seen;
  self.walk([&](const std::string& prefix, const Module& m) {
    if (!recurse && &m != &self) return;
    for (const auto& b : m.buffers_)
      if (b.second->defined() && seen.insert(b.second->impl().get()).second)
        out.emplace_back(prefix + b.first, *b.second);
  });
  return out;
}

std::vector<Tensor> Module::parameters(bool recurse) const {
  std::vector<Tensor> out;
  for (auto& p : named_parameters(recurse)) out.push_back(p.second);
  return out;
}

std::vector<Tensor> Module::buffers(bool recurse) const {
  std::vector<Tensor> out;
  for (auto& b : named_buffers(recurse)) out.push_back(b.second);
  return out;
}

std::vector<std::pair<std::string, std::shared_ptr<Module>>> Module::named_children() const {
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> out;
  for (const auto& c : resolved().children_) out.emplace_back(c.first, c.second->shared());
  return out;
}

std::vector<std::pair<std::string, std::shared_ptr<Module>>> Module::named_modules(const std::string& name_prefix,
                                                                                  bool include_self) const {
  const Module& self = resolved();
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> out;
  self.walk([&](const std::string& prefix, const Module& m) {
    if (&m == &self && !include_self) return;
    std::string name = prefix.empty() ? name_prefix : prefix.substr(0, prefix.size() - 1);   // drop the last '.'
    if (!prefix.empty() && !name_prefix.empty()) name = name_prefix + "." + name;
    out.emplace_back(std::move(name), const_cast<Module&>(m).shared());
  });
  return out;
}

std::vector<std::shared_ptr<Module>> Module::modules(bool include_self) const {
  std::vector<std::shared_ptr<Module>> out;
  for (auto& m : named_modules("", include_self)) out.push_back(std::move(m.second));
  return out;
}

void Module::apply(const std::function<void(Module&)>& fn) {
  for (auto& m : named_modules()) fn(*m.second);
}

void Module::apply(const std::function<void(const std::string&, Module&)>& fn, const std::string& name_prefix) {
  for (auto& m : named_modules(name_prefix)) fn(m.first, *m.second);
}

Module& Module::to(Device device) {
  if (handle_) return resolved().to(device);
  try {
    (void)backend_for(device);   // an unusable device is an error even with nothing to move
  } catch (const DeviceError& e) {
    throw DeviceError(name() + ".to(" + device.str() + "): " + e.what());
  }
  // Every value moves first, then all are swapped in: a failure (say an unusable device) leaves
  // the module as it was.
  std::vector<Tensor> values;
  for (auto& p : named_parameters()) values.push_back(p.second);
  for (auto& b : named_buffers()) values.push_back(b.second);
  std::vector<RawTensor> moved, moved_grads;
  for (auto& v : values) {
    moved.push_back(v.data().to(device));
    moved_grads.push_back(v.grad().defined() ? v.grad().data().to(device) : RawTensor());
  }
  for (std::size_t i = 0; i < values.size(); ++i) {
    values[i].set_data(moved[i]);
    if (moved_grads[i].defined()) values[i].grad().set_data(moved_grads[i]);
  }
  return *this;
}

Module& Module::to(DType dtype) {
  if (handle_) return resolved().to(dtype);
  TG_CHECK(is_floating(dtype), DTypeError, "Module::to: parameters must be floating point, got ", dtype_name(dtype));
  // PyTorch's module._apply(lambda t: t.to(dtype) if t.is_floating_point() else t): floating
  // parameters, their gradients and floating buffers; num_batches_tracked and other integer state
  // keep their dtype. Every conversion is made before any is swapped in.
  std::vector<Tensor> values;
  for (auto& p : named_parameters())
    if (is_floating(p.second.dtype())) values.push_back(p.second);
  for (auto& b : named_buffers())
    if (is_floating(b.second.dtype())) values.push_back(b.second);
  std::vector<RawTensor> cast, cast_grads;
  for (auto& v : values) {
    cast.push_back(v.data().to(dtype));
    const Tensor g = v.grad();
    cast_grads.push_back(g.defined() && is_floating(g.dtype()) ? g.data().to(dtype) : RawTensor());
  }
  NoGradGuard no_grad;
  for (std::size_t i = 0; i < values.size(); ++i) {
    values[i].set_data(cast[i]);
    if (cast_grads[i].defined()) values[i].grad().set_data(cast_grads[i]);
  }
  return *this;
}

Module& Module::to(Device device, DType dtype) {
  TG_CHECK(is_floating(dtype), DTypeError, "Module::to: parameters must be floating point, got ", dtype_name(dtype));
  to(device);
  return to(dtype);
}

Module& Module::cuda() { return to(Device::cuda()); }
Module& Module::cpu() { return to(Device::cpu()); }
Module& Module::double_() { return to(kFloat64); }
Module& Module::float_() { return to(kFloat32); }
Module& Module::half() { return to(kFloat16); }
Module& Module::bfloat16() { return to(kBFloat16); }

Module& Module::train(bool on) {
  if (handle_) return resolved().train(on);
  walk([on](const std::string&, const Module& m) { const_cast<Module&>(m).training_ = on; });
  return *this;
}

void Module::zero_grad() {
  for (auto& p : named_parameters()) p.second.zero_grad();
}

// ------------------------------------------------------------------------------------------------
// hooks

RemovableHandle Module::add_forward_pre_hook(ForwardPreHook hook) {
  TG_CHECK(hook != nullptr, Error, "register_forward_pre_hook: the hook is empty");
  const auto& table = hooks_.get_or_create();
  const uint64_t id = table->pre.add(tg::detail::ModulePreHook{std::move(hook), std::string()});
  return RemovableHandle(std::shared_ptr<tg::detail::HookRegistry>(table, &table->pre), id);
}

RemovableHandle Module::register_extension_pre_hook(const std::string& key, ForwardPreHook hook) {
  TG_CHECK(hook != nullptr, Error, "register_extension_pre_hook: the hook is empty");
  TG_CHECK(!key.empty() && extension_hooks_.count(key) == 0, Error, "register_extension_pre_hook: ",
           key.empty() ? std::string("the key is empty") : "\"" + key + "\" already has a hook in " + name());
  const auto& table = hooks_.get_or_create();
  const uint64_t id = table->pre.add(tg::detail::ModulePreHook{std::move(hook), key});
  RemovableHandle handle(std::shared_ptr<tg::detail::HookRegistry>(table, &table->pre), id);
  extension_hooks_.emplace(key, handle);
  return handle;
}

void Module::remove_extension_pre_hook(const std::string& key) {
  auto it = extension_hooks_.find(key);
  if (it == extension_hooks_.end()) return;
  it->second.remove();
  extension_hooks_.erase(it);
}

RemovableHandle Module::add_forward_hook(ForwardHook hook) {
  TG_CHECK(hook != nullptr, Error, "register_forward_hook: the hook is empty");
  const auto& table = hooks_.get_or_create();
  const uint64_t id = table->post.add(std::move(hook));
  return RemovableHandle(std::shared_ptr<tg::detail::HookRegistry>(table, &table->post), id);
}

// PyTorch's Module._call_impl without backward hooks: the hooks as of this call (a snapshot, so a
// hook may add or remove hooks), each in registration order. See Note [Hook lists].
Tensor Module::call_with_hooks(const Tensor& x) {
  const tg::detail::ModuleHooks& table = *hooks_.get();
  Tensor input = x;
  for (const auto& hook : table.pre.snapshot()) {
    Tensor replaced = hook->fn(*this, input);
    if (replaced.defined()) input = std::move(replaced);
  }
  Tensor output = forward(input);
  for (const auto& hook : table.post.snapshot()) {
    Tensor replaced = (*hook)(*this, input, output);
    if (replaced.defined()) output = std::move(replaced);
  }
  return output;
}

// ------------------------------------------------------------------------------------------------
// clone

// Note [Module clone]
// ~~~~~~~~~~~~~~~~~~~
// Modules hold their parameters and children as members registered by address, so a copy cannot be
// made member by member: the copy's registrations must point at its own members. clone() therefore
// asks the module for a fresh instance of the same type and layout (new_instance(): the layers of
// nn/layers.h construct one from their arguments, Cloneable<Net> with Net's default constructor, a
// user module with arguments overrides it), whose own constructor registers its own members, and then
// walks the two trees side by side (iteratively, pre-order). At each module it first runs the
// original's clone steps on the copy: an extension that changed the original's layout (pruning moves
// "weight" to "weight_orig", adds the buffer "weight_mask" and keeps its state in extension()) does
// the same on the copy, as PyTorch's replicate does (it copies weight_orig and weight_mask and
// shares the pruning hook).
// It then checks that both have the same children (in order), parameters and buffers (by name; the
// copy takes the original's order), and replaces each parameter and buffer handle of the copy with a
// copy of the original's value. Forward hooks are copied as the same callables; an extension's
// pre-hook keeps its key, so that the extension can take it out of the copy too, and it reads the
// state of the module it is called with, so that in the copy it acts on the copy. Last, the steps'
// finish parts run on the copies (pruning computes the copy's weight = weight_orig * weight_mask).
// This is libtorch's Cloneable (reset(), then copy the values) without its reset() method. The
// fresh instance is built under init::SkipInitGuard: its random initialisation would be overwritten
// anyway, and must not move the random stream (a DataParallel replica per step would otherwise
// change every later draw); a constructor that draws with tg::randn itself still advances it, so
// layers use nn::init. Values shared by several registrations (tied weights, a module registered
// twice) stay shared in the copy, through a map from the original's TensorImpl to its copy.
// Gradients and tensor hooks are not copied; each module's training mode and forward hooks are (as
// PyTorch's deepcopy and replicate).
std::unique_ptr<Module> Module::new_instance() const {
  throw Error(name() + ": clone() needs new_instance(): derive the module from tg::nn::Cloneable<YourModule> (it "
                       "uses the default constructor) or override new_instance() to construct a fresh one");
}

std::unique_ptr<Module> Module::clone(const std::optional<Device>& device) const {
  if (handle_) return resolved().clone(device);   // a handle copies the module it stands for
  std::unique_ptr<Module> copy;
  {
    init::SkipInitGuard skip_init;   // every value is overwritten below; draw nothing
    copy = new_instance();
  }
  TG_CHECK(copy != nullptr, Error, "clone: ", name(), ": new_instance() returned null");
  const Module& made = *copy;   // typeid of a plain reference: *copy would be an expression with side effects
  TG_CHECK(typeid(made) == typeid(*this), Error, "clone: new_instance() of ", name(), " built a module of another type (",
           copy->name(), "); override new_instance() in the derived class");
  copy_state(*this, *copy, device);
  return copy;
}

void Module::copy_state(const Module& root, Module& copy_root, const std::optional<Device>& device, bool share) {
  NoGradGuard no_grad;
  std::unordered_map<const TensorImpl*, Tensor> copied;   // ties stay ties
  std::unordered_map<const Module*, const Module*> source_of;  // each copied module once, from one source
  struct Pair {
    const Module* from;
    Module* to;
    std::string path;
  };
  std::vector<Pair> stack{{&root, &copy_root, ""}};
  auto where = [](const std::string& path) { return path.empty() ? std::string("the root module") : "\"" + path + "\""; };
  auto same_names = [](const auto& a, const auto& b) {
    return a.size() == b.size() &&
           std::equal(a.begin(), a.end(), b.begin(), [](const auto& x, const auto& y) { return x.first == y.first; });
  };
  // Puts `to`'s entries in `from`'s order when both hold the same names (a module pruned and then
  // unpruned registers its weight again after its bias); false when the names differ.
  auto match_names = [](const std::vector<std::pair<std::string, Tensor*>>& from,
                        std::vector<std::pair<std::string, Tensor*>>& to) {
    if (from.size() != to.size()) return false;
    std::vector<std::pair<std::string, Tensor*>> ordered;
    ordered.reserve(to.size());
    for (const auto& f : from) {
      auto it = std::find_if(to.begin(), to.end(), [&f](const auto& t) { return t.first == f.first; });
      if (it == to.end()) return false;
      ordered.push_back(*it);
    }
    to = std::move(ordered);
    return true;
  };
  auto copy_value = [&](const Tensor& from, Tensor& to, const std::string& name) {
    if (!from.defined()) {
      to = Tensor();
      return;
    }
    TG_CHECK(!to.defined() || to.shape() == from.shape(), ShapeError, "clone: new_instance() of ", root.name(),
             " gave \"", name, "\" shape ", shape_str(to.shape()), " instead of ", shape_str(from.shape()));
    if (share) {   // move_out(): the same tensor, not a copy
      to = from;
      return;
    }
    auto it = copied.find(from.impl().get());
    if (it != copied.end()) {
      to = it->second;
      return;
    }
    Tensor v(device && *device != from.device() ? from.data().to(*device) : from.data().clone());
    if (from.requires_grad()) v.set_requires_grad(true);
    to = v;
    copied.emplace(from.impl().get(), std::move(v));
  };
  std::vector<Module*> to_finish;   // copies whose clone steps have a finish, in visiting order
  while (!stack.empty()) {
    Pair p = std::move(stack.back());
    stack.pop_back();
    auto [known, added] = source_of.emplace(p.to, p.from);
    if (!added) {
      TG_CHECK(known->second == p.from, Error, "clone: new_instance() of ", root.name(), " shares module ", where(p.path),
               " where the original has two modules");
      continue;
    }
    const Module& from = *p.from;
    Module& to = *p.to;
    for (const auto& step : from.clone_steps_) step.second.layout(from, to);   // the extensions' layout first
    to.clone_steps_ = from.clone_steps_;
    auto has_finish = [](const auto& e) { return static_cast<bool>(e.second.finish); };
    if (std::any_of(to.clone_steps_.begin(), to.clone_steps_.end(), has_finish)) to_finish.push_back(&to);
    TG_CHECK(same_names(from.children_, to.children_) && match_names(from.params_, to.params_) &&
                 match_names(from.buffers_, to.buffers_),
             Error, "clone: new_instance() of ", root.name(), " built ", where(p.path), " (", to.name(),
             ") with other children, parameters or buffers than the original (", from.name(),
             "); override new_instance() to construct it with the same arguments");
    const std::string prefix = p.path.empty() ? "" : p.path + ".";
    for (std::size_t i = 0; i < from.params_.size(); ++i)
      copy_value(*from.params_[i].second, *to.params_[i].second, prefix + from.params_[i].first);
    for (std::size_t i = 0; i < from.buffers_.size(); ++i)
      copy_value(*from.buffers_[i].second, *to.buffers_[i].second, prefix + from.buffers_[i].first);
    to.training_ = from.training_;
    if (!to.libtorch_forward_) to.libtorch_forward_ = from.libtorch_forward_;
    if (share) {   // move_out(): the module's own state goes with it
      to.extensions_ = from.extensions_;
      to.name_ = from.name_;
    }
    if (tg::detail::ModuleHooks* own = to.hooks_.get()) {   // any its constructor or a layout step registered
      own->pre.clear();
      own->post.clear();
    }
    to.extension_hooks_.clear();
    if (const tg::detail::ModuleHooks* hooks = from.hooks_.get()) {   // the same hooks, in the same order
      const auto& mine = to.hooks_.get_or_create();
      for (const auto& h : hooks->pre.snapshot()) {
        const uint64_t id = mine->pre.add(*h);
        if (!h->key.empty())   // an extension's hook: its key finds it in the copy too
          to.extension_hooks_[h->key] =
              RemovableHandle(std::shared_ptr<tg::detail::HookRegistry>(mine, &mine->pre), id);
      }
      for (const auto& h : hooks->post.snapshot()) mine->post.add(*h);
    }
    for (std::size_t i = from.children_.size(); i-- > 0;)   // pre-order, registration order
      stack.push_back({from.children_[i].second, to.children_[i].second, prefix + from.children_[i].first});
  }
  for (Module* m : to_finish)
    for (const auto& step : m->clone_steps_)
      if (step.second.finish) step.second.finish(*m);
}

// ------------------------------------------------------------------------------------------------

std::ostream& operator<<(std::ostream& os, const Module& root) {
  // Iterative pre-order print with PyTorch's layout; closing parens are emitted as frames pop.
  struct Frame {
    const Module* m;
    std::string label;
    int depth;
    bool close;
  };
  std::vector<Frame> stack{{&root.resolved(), "", 0, false}};
  while (!stack.empty()) {
    Frame f = stack.back();
    stack.pop_back();
    const std::string indent(static_cast<std::size_t>(2 * f.depth), ' ');
    if (f.close) {
      os << indent << ")" << (f.depth == 0 ? "" : "\n");
      continue;
    }
    std::ostringstream line;
    f.m->pretty_print(line);
    const std::string name = line.str();
    os << indent << f.label << name;
    const auto kids = f.m->children();
    if (kids.empty()) {
      if (name.find('(') == std::string::npos) os << "()";   // PyTorch prints a leaf as "Net()"
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
