/// \file
/// nn/module.h: Module, the base of every layer and model: registration by reference, parameter
/// traversal with dotted names, device/dtype moves in place, train/eval, forward hooks, clone(),
/// printing, libtorch's traversals (modules(), named_modules(), apply()). Layers are in nn/layers.h;
/// ModuleHolder, TG_MODULE and the handles of the layers in nn/pimpl.h; the containers in
/// nn/container.h; the ops they call in ops/ops.h; tensor hooks in autograd/tensor.h.
#pragma once
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#include "tensorgrad/core/error.h"
#include "tensorgrad/autograd/hooks.h"
#include "tensorgrad/autograd/tensor.h"

namespace tg {
namespace nn {

class Module;
template <class Contained>
class ModuleHolder;

/// A forward pre-hook (Module::register_forward_pre_hook) in its stored form: returns the input that
/// forward gets instead, or an undefined Tensor to keep it.
using ForwardPreHook = std::function<Tensor(Module& module, const Tensor& input)>;
/// A forward hook (Module::register_forward_hook) in its stored form: returns the output that module(x)
/// returns instead, or an undefined Tensor to keep it.
using ForwardHook = std::function<Tensor(Module& module, const Tensor& input, const Tensor& output)>;

}  // namespace nn

namespace detail {
/// A forward pre-hook with the key of the library extension that registered it (empty for the user's).
struct ModulePreHook {
  nn::ForwardPreHook fn;   ///< the hook
  std::string key;         ///< Module::register_extension_pre_hook's key, or empty
};
/// The forward hooks of one module, in registration order.
struct ModuleHooks {
  HookList<ModulePreHook> pre;         ///< register_forward_pre_hook, register_extension_pre_hook
  HookList<nn::ForwardHook> post;      ///< register_forward_hook
};
/// What nn/pimpl.h and nn/container.h need of a Module's insides (handles, the forward of a libtorch-style
/// module, moving a temporary into shared ownership); not for users.
struct ModuleAccess;
/// True for a built-in layer that is also its own handle (TG_LAYER_HANDLE in nn/pimpl.h), false for a
/// type derived from one (a user's `struct MyLinear : Linear`) and every other module.
template <class M, class = void>
struct is_layer_handle : std::false_type {};
/// See the primary template.
template <class M>
struct is_layer_handle<M, std::void_t<typename M::tg_layer_handle>> : std::is_same<typename M::tg_layer_handle, M> {};
/// True for ModuleHolder<I> and the classes derived from one (TG_MODULE's).
template <class T>
struct is_module_holder {
 private:
  template <class I>
  static std::true_type test(const nn::ModuleHolder<I>*);
  static std::false_type test(...);
 public:
  static constexpr bool value = decltype(test(std::declval<std::decay_t<T>*>()))::value;   ///< the answer
};
/// T itself, or T::ContainedType for a holder (as<Net>() with Net = TG_MODULE's holder gives NetImpl*).
template <class T, class = void>
struct contained {
  using type = T;   ///< a module type
};
/// See the primary template.
template <class T>
struct contained<T, std::enable_if_t<is_module_holder<T>::value>> {
  using type = typename T::ContainedType;   ///< the holder's module type
};
}  // namespace detail

namespace nn {

/// The base of every layer and model (PyTorch's torch::nn::Module). Subclasses hold their parameters
/// and child modules as members and register them by reference in the constructor:
/// \code
/// struct Net : tg::nn::Module {
///   tg::nn::Linear fc1{784, 128}, fc2{128, 10};
///   Net() { register_module("fc1", fc1); register_module("fc2", fc2); }
///   tg::Tensor forward(const tg::Tensor& x) override { return fc2(tg::relu(fc1(x))); }
/// };
/// \endcode
/// Modules are neither copied nor moved: the registered addresses must stay valid; clone() makes an
/// independent deep copy (see Cloneable). libtorch's style (holders, TG_MODULE, a built-in layer as a
/// handle, modules shared through std::shared_ptr) is in nn/pimpl.h.
class Module : public std::enable_shared_from_this<Module> {
 public:
  /// No parameters, buffers or children; training mode.
  Module() = default;
  /// The same, printed and named in errors as `name` instead of the class name (libtorch's
  /// Module(std::string name)).
  explicit Module(std::string name) : name_(std::move(name)) {}
  virtual ~Module() = default;
  Module(const Module&) = delete;              // children are registered by reference: no copies,
  Module& operator=(const Module&) = delete;   // no moves
  Module(Module&&) = delete;
  Module& operator=(Module&&) = delete;

  /// The computation; the base throws tg::Error naming the module: override it.
  virtual Tensor forward(const Tensor& x);   // throws unless overridden
  /// forward(x) with the forward hooks around it, as PyTorch's module(x): the pre-hooks in registration
  /// order (each may replace the input), forward, then the forward hooks in registration order (each
  /// sees the input forward got and may replace the output). Call children as child(x), not
  /// child.forward(x), so that their hooks run too.
  /// A handle (nn/pimpl.h) calls the module it stands for.
  Tensor operator()(const Tensor& x) {
    if (handle_) return handle_call(x);
    if (hooks_.get() == nullptr) return forward(x);   // never had a hook: no lock, no copy
    return call_with_hooks(x);
  }
  /// One-line description used when printing: "Linear(in_features=784, out_features=128, bias=true)".
  /// The base gives the name passed to the constructor, else the class name without its namespaces
  /// ("Net" for `struct Net : tg::nn::Module`), as PyTorch prints modules; override it to add the
  /// options, as the layers do.
  virtual std::string name() const;
  /// Writes the one-line description of this module, name() by default (libtorch's pretty_print):
  /// override it to print a module otherwise; operator<< prints each module of the tree with it.
  virtual void pretty_print(std::ostream& os) const;

  /// Registers a child; it must outlive this module (usually a member). Returns it. A module may be
  /// registered in several parents (it is then visited once), never inside itself. A handle (a
  /// layer in libtorch's holder state, nn/pimpl.h) registers the module it stands for, sharing it.
  /// Error for an empty name, a name with '.', one already registered here as a child, parameter
  /// or buffer, or a child that contains this module.
  template <class M, std::enable_if_t<std::is_base_of<Module, M>::value, int> = 0>
  M& register_module(const std::string& name, M& child) {
    Module& m = child;
    if (m.is_handle()) {
      add_shared_child(name, handle_target(m, name));
    } else {
      install_forward<M>(child);
      add_child(name, &child);
    }
    return child;
  }
  /// Registers a child this module shares ownership of (libtorch's register_module of a
  /// std::shared_ptr<M>): `fc = register_module("fc", std::make_shared<tg::nn::Linear>(4, 2));`.
  /// Returns it; it lives at least as long as this module. Error as above, or for a null pointer.
  template <class M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> child) {
    static_assert(std::is_base_of<Module, M>::value, "register_module: the child must derive from tg::nn::Module");
    TG_CHECK(child != nullptr, Error, "register_module: \"", name, "\" is a null module");
    install_forward<M>(*child);
    add_shared_child(name, child);
    return child;
  }
  /// Registers the module a holder shares (libtorch's register_module of a ModuleHolder, TG_MODULE's
  /// `net = register_module("net", Net(4))`); returns it as a std::shared_ptr, which a holder or a
  /// layer handle takes. Error for an empty holder, or as above.
  template <class I>
  std::shared_ptr<I> register_module(const std::string& name, const ModuleHolder<I>& holder) {
    TG_CHECK(!holder.is_empty(), Error, "register_module: \"", name, "\" is an empty ", class_name_of(typeid(I)),
             " holder (constructed from nullptr)");
    return register_module(name, holder.ptr());
  }
  /// Registers a temporary built-in layer (libtorch's `fc = register_module("fc", tg::nn::Linear(784, 64))`):
  /// the layer moves into a module this one shares ownership of (its parameters, buffers, training mode
  /// and hooks: no value is copied), which is returned; assigned to a layer member, the member becomes
  /// its handle (Note [Value modules and handles] in nn/pimpl.h). A temporary handle registers its module.
  template <class M,
            std::enable_if_t<!std::is_lvalue_reference<M>::value && tg::detail::is_layer_handle<M>::value, int> = 0>
  std::shared_ptr<M> register_module(const std::string& name, M&& child) {
    std::shared_ptr<Module> owned = adopt(child, name);
    add_shared_child(name, owned);
    return std::static_pointer_cast<M>(owned);
  }
  // Note [Temporaries in register_module]
  // Children are registered by reference, so a temporary of a module type of the user's
  // (register_module("net", Net())) would be destroyed at the end of the statement and leave a
  // dangling child. Such a call selects the overload below, which stops the compilation with a
  // readable message; the lvalue overload above is the better match for members. The built-in layers
  // are their own handles (nn/pimpl.h), so their temporaries move into shared ownership instead.
  /// Rejected at compile time: a temporary module of a user type cannot be registered by reference.
  template <class M, std::enable_if_t<!std::is_lvalue_reference<M>::value && std::is_base_of<Module, M>::value &&
                                          !tg::detail::is_layer_handle<M>::value, int> = 0>
  M& register_module(const std::string& name, M&& child) {
    static_assert(!std::is_same<M, M>::value,
                  "register_module: cannot register a temporary module, it would be destroyed at the end of the "
                  "statement. Make it a member and register the member (register_module(\"fc\", fc)), pass "
                  "a std::shared_ptr (register_module(\"fc\", std::make_shared<Net>())) to share ownership, or "
                  "give the module a holder with TG_MODULE(Net) and register the holder "
                  "(register_module(\"net\", Net())).");
    (void)name;
    return child;
  }
  /// Registers a parameter (set to require grad) under name; returns the stored handle.
  /// v is kept by reference (usually a member) and may still be undefined (an optional bias);
  /// undefined parameters are skipped by the traversals. Error for a bad or repeated name.
  Tensor& register_parameter(const std::string& name, Tensor& v, bool requires_grad = true);
  /// Registers a tensor that is no member (libtorch's `W = register_parameter("W", tg::randn({3, 4}))`):
  /// the module keeps it (hold()) and returns its slot, which a member may copy: both are handles to
  /// one tensor, which to(), load() and the optimizers update in place.
  Tensor& register_parameter(const std::string& name, Tensor&& v, bool requires_grad = true) {
    return register_parameter(name, hold(std::move(v)), requires_grad);
  }
  /// Registers a non-parameter state tensor (kept by reference, moved by to(Device), saved in
  /// checkpoints, never given to optimizers); returns v. Error for a bad or repeated name.
  Tensor& register_buffer(const std::string& name, Tensor& v);
  /// Registers a state tensor that is no member, kept by the module, as register_parameter(name, Tensor&&).
  Tensor& register_buffer(const std::string& name, Tensor&& v) { return register_buffer(name, hold(std::move(v))); }
  /// Keeps v in the module itself and returns its slot, whose address stays valid while the module
  /// lives: for state that is no member, as register_parameter(name, hold(v)) (nn::utils::prune's
  /// weight_orig and weight_mask).
  Tensor& hold(Tensor v);
  /// Takes this module's own parameter or buffer `name` out of the traversals and checkpoints
  /// (PyTorch's del module._parameters[name]) and returns its slot, which keeps its value; nullptr
  /// when this module has none of that name.
  Tensor* unregister(const std::string& name);
  /// Per-module storage for library extensions, by key (nn::utils::prune keeps its per-tensor state
  /// under "prune.<name>"): empty until set, destroyed with the module, not copied by clone() (an
  /// extension whose state a copy needs sets a clone step).
  std::shared_ptr<void>& extension(const std::string& key);
  /// What a library extension that changes a module's layout (nn::utils::prune) gives clone(), so that
  /// the copy gets the same layout: `layout(original, copy)` runs on the fresh instance before any
  /// value is copied (it unregisters, registers and holds on the copy what the extension did on the
  /// original, and sets the copy's extension state), `finish(copy)`, when set, once the values are in.
  struct CloneStep {
    std::function<void(const Module& original, Module& copy)> layout;   ///< before the values are copied
    std::function<void(Module& copy)> finish;                           ///< after; may be empty
  };
  /// Sets the clone step of an extension under key, replacing the one set before; an empty layout
  /// removes it. clone() runs this module's steps in the order their keys were first set, and gives
  /// the copy the same steps (a copy of a copy is made the same way).
  void set_clone_step(const std::string& key, CloneStep step);
  /// Registers a forward pre-hook on behalf of a library extension under key (nn::utils::prune:
  /// "prune.<name>"): it runs as register_forward_pre_hook's hooks do, in registration order among
  /// them, and clone() copies it with its key; so it must act on the module it is called with, as
  /// PyTorch's pruning hooks do. Error when key is empty or already has a hook here.
  RemovableHandle register_extension_pre_hook(const std::string& key, ForwardPreHook hook);
  /// Takes out the pre-hook registered under key (PyTorch's prune.remove deleting its hook from
  /// module._forward_pre_hooks); nothing when there is none.
  void remove_extension_pre_hook(const std::string& key);

  /// Every defined parameter of this module and its descendants, in registration order (depth first),
  /// each once: a module registered twice and a tied weight appear under their first name only. With
  /// recurse false, this module's own only (libtorch's parameters(bool recurse = true)).
  std::vector<Tensor> parameters(bool recurse = true) const;
  /// The same, with dotted names: "fc1.weight", "fc1.bias", ... (libtorch returns an OrderedDict:
  /// item.key() and item.value() there are .first and .second here).
  std::vector<std::pair<std::string, Tensor>> named_parameters(bool recurse = true) const;
  /// Every defined buffer of this module and its descendants, with dotted names.
  std::vector<std::pair<std::string, Tensor>> named_buffers(bool recurse = true) const;
  /// Every defined buffer, as parameters() (libtorch's buffers(bool recurse = true)).
  std::vector<Tensor> buffers(bool recurse = true) const;
  /// The direct children with their names, in registration order. libtorch's children() gives the
  /// modules without names: write c.second where libtorch writes c (named_children() has both).
  std::vector<std::pair<std::string, Module*>> children() const { return children_; }
  /// The direct children with their names, each as a std::shared_ptr (libtorch's named_children();
  /// see shared() for the ones this module holds by reference).
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> named_children() const;
  /// This module (unless include_self is false) and every descendant, pre-order, each once (libtorch's
  /// modules()); see shared() for the pointers.
  std::vector<std::shared_ptr<Module>> modules(bool include_self = true) const;
  /// The same with dotted names, this module under name_prefix ("" by default; libtorch's named_modules).
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> named_modules(const std::string& name_prefix = "",
                                                                             bool include_self = true) const;
  /// Calls fn on this module and every descendant, pre-order (libtorch's apply; PyTorch's Python
  /// apply visits the children first).
  void apply(const std::function<void(Module&)>& fn);
  /// The same with each module's dotted name, this one named name_prefix.
  void apply(const std::function<void(const std::string&, Module&)>& fn, const std::string& name_prefix = "");
  /// This module as a T (a layer, a module type of the user's, or a TG_MODULE holder's Impl), or
  /// nullptr when it is none (libtorch's as<T>()); a handle gives the module it stands for.
  template <class T>
  typename tg::detail::contained<T>::type* as() noexcept {
    Module* m = handle_ ? handle_target_.get() : this;
    return dynamic_cast<typename tg::detail::contained<T>::type*>(m);
  }
  /// See as().
  template <class T>
  const typename tg::detail::contained<T>::type* as() const noexcept {
    return const_cast<Module*>(this)->as<T>();
  }

  // ---- handles. See Note [Value modules and handles] in nn/pimpl.h.
  /// True when this object is a handle, a layer in libtorch's holder state (`tg::nn::Linear fc{nullptr}`,
  /// or one a std::shared_ptr was assigned to), standing for another module, or for none when empty.
  bool is_handle() const noexcept { return handle_; }
  /// The module this object stands for: a handle's, else itself. tg::Error for an empty handle.
  Module& resolved();
  /// See resolved().
  const Module& resolved() const;
  /// resolved() as a std::shared_ptr: a handle's shared module; this module when a std::shared_ptr
  /// owns it (make_shared, a holder, a container); else a pointer that does not own it, valid as
  /// long as the module (a member registered by reference) lives.
  std::shared_ptr<Module> shared();

  /// Moves every parameter, gradient and buffer in place (their handles keep working). Returns *this.
  /// All copies are made before any is swapped in, so a failure (DeviceError) leaves the module as it was.
  Module& to(Device device);
  /// Converts every floating parameter, its gradient and every floating buffer (BatchNorm's running
  /// statistics, a pruning mask) to a floating dtype in place, as PyTorch's module.to(dtype); integer
  /// and bool ones (num_batches_tracked) keep theirs. DTypeError for a dtype that is not floating.
  /// All conversions are made before any is swapped in. Returns *this.
  Module& to(DType dtype);
  /// to(device), then to(dtype) (libtorch's Module::to(device, dtype)).
  Module& to(Device device, DType dtype);
  /// to(Device::cuda()): to the current CUDA device, as PyTorch's module.cuda(). DeviceError naming
  /// the module and the reason when CUDA cannot be used, even for a module with nothing to move.
  Module& cuda();
  /// to(Device::cpu()).
  Module& cpu();
  /// to(kFloat64), PyTorch's module.double() (`double` is a C++ keyword).
  Module& double_();
  /// to(kFloat32), PyTorch's module.float() (`float` is a C++ keyword).
  Module& float_();
  /// to(kFloat16), PyTorch's module.half().
  Module& half();
  /// to(kBFloat16), PyTorch's module.bfloat16().
  Module& bfloat16();
  /// Sets training mode (on) or evaluation mode (off) on this module and every descendant; Dropout
  /// reads it. Returns *this.
  Module& train(bool on = true);
  /// train(false).
  Module& eval() { return train(false); }
  /// True in training mode (the default).
  bool is_training() const { return training_; }
  /// Sets every parameter's gradient to undefined (PyTorch's zero_grad(set_to_none=True)).
  void zero_grad();

  // ---- hooks (PyTorch's register_forward_pre_hook / register_forward_hook)
  /// Registers hook(module, input), called by module(x) before forward. It returns void, or a Tensor
  /// that replaces the input when defined (PyTorch: returning None keeps it). Pre-hooks run in
  /// registration order, each seeing the previous one's input, on every call, under the grad mode of
  /// the caller. Returns the handle whose remove() takes the hook out.
  /// \code
  /// auto h = model.register_forward_pre_hook([](tg::nn::Module& m, const tg::Tensor& in) { ... });
  /// \endcode
  template <class F>
  RemovableHandle register_forward_pre_hook(F&& hook) {
    using Hook = std::decay_t<F>;
    static_assert(std::is_invocable<Hook&, Module&, const Tensor&>::value,
                  "register_forward_pre_hook: the hook must be callable as hook(tg::nn::Module&, const tg::Tensor& input)");
    using R = std::invoke_result_t<Hook&, Module&, const Tensor&>;
    if constexpr (std::is_void<R>::value) {
      return add_forward_pre_hook([h = Hook(std::forward<F>(hook))](Module& m, const Tensor& in) mutable {
        h(m, in);
        return Tensor();
      });
    } else {
      static_assert(std::is_convertible<R, Tensor>::value,
                    "register_forward_pre_hook: the hook must return void or a Tensor (the replacement input)");
      return add_forward_pre_hook(ForwardPreHook(std::forward<F>(hook)));
    }
  }
  /// Registers hook(module, input, output), called by module(x) after forward with the input forward got
  /// (after the pre-hooks) and its output. It returns void, or a Tensor that replaces the output when
  /// defined. Forward hooks run in registration order, each seeing the previous one's output.
  template <class F>
  RemovableHandle register_forward_hook(F&& hook) {
    using Hook = std::decay_t<F>;
    static_assert(std::is_invocable<Hook&, Module&, const Tensor&, const Tensor&>::value,
                  "register_forward_hook: the hook must be callable as hook(tg::nn::Module&, const tg::Tensor& input, "
                  "const tg::Tensor& output)");
    using R = std::invoke_result_t<Hook&, Module&, const Tensor&, const Tensor&>;
    if constexpr (std::is_void<R>::value) {
      return add_forward_hook(
          [h = Hook(std::forward<F>(hook))](Module& m, const Tensor& in, const Tensor& out) mutable {
            h(m, in, out);
            return Tensor();
          });
    } else {
      static_assert(std::is_convertible<R, Tensor>::value,
                    "register_forward_hook: the hook must return void or a Tensor (the replacement output)");
      return add_forward_hook(ForwardHook(std::forward<F>(hook)));
    }
  }

  // ---- copies. See Note [Module clone] in nn/module.cpp.
  /// A deep copy (libtorch's Cloneable::clone, PyTorch's copy.deepcopy): a module of the same type
  /// built by new_instance(), given the layout changes of extensions (a pruned parameter becomes
  /// NAME_orig and NAME_mask there too, see set_clone_step), into which every parameter and buffer
  /// is copied by name (independent storage, same shape, dtype and device, requires_grad kept, tied
  /// ones still tied, no gradient, the original's order), with each module's training mode and
  /// forward hooks (the same callables, registered anew: the original's handles do not remove them).
  /// Tensor hooks are not copied. With device, the copies are made there instead. Error when
  /// new_instance() is not implemented or builds another type, other children or other names.
  std::unique_ptr<Module> clone(const std::optional<Device>& device = std::nullopt) const;
  /// A freshly constructed module of this one's type and layout, whose values clone() then overwrites.
  /// The layers of nn/layers.h implement it; a user module gets it from Cloneable<Net> (its default
  /// constructor) or overrides it, e.g. `return std::make_unique<Net>(hidden_);`. It runs under
  /// init::SkipInitGuard, so Linear and nn::init do not draw from the random stream (a constructor
  /// that calls tg::randn itself does). The base
  /// throws tg::Error naming the module.
  virtual std::unique_ptr<Module> new_instance() const;

 protected:
  /// Whether a forward pre-hook or forward hook is registered (Cloneable's calls with several inputs
  /// refuse them).
  bool has_forward_hooks() const;
  /// A module of this one's type that takes over its state, for the std::shared_ptr that a temporary
  /// moves into (register_module of a temporary layer, Sequential(Linear(4, 2), ...)): by default a
  /// new_instance() given this module's parameter and buffer handles (shared, not copied), training
  /// mode, forward hooks and extension state; the containers override it to pass their children on.
  virtual std::unique_ptr<Module> move_out();

 private:
  friend struct detail::ModuleAccess;
  template <class M>
  void install_forward(M& m);   // See Note [The forward of a libtorch-style module] in nn/pimpl.h
  void add_shared_child(const std::string& name, std::shared_ptr<Module> child);
  static std::shared_ptr<Module> handle_target(Module& handle, const std::string& name);
  static std::shared_ptr<Module> adopt(Module& temporary, const std::string& name);
  static std::string class_name_of(const std::type_info& type);
  Tensor handle_call(const Tensor& x);
  RemovableHandle add_forward_pre_hook(ForwardPreHook hook);
  RemovableHandle add_forward_hook(ForwardHook hook);
  Tensor call_with_hooks(const Tensor& x);
  static void copy_state(const Module& from, Module& to, const std::optional<Device>& device, bool share = false);
  void add_child(const std::string& name, Module* child);
  void check_new_name(const char* who, const std::string& name) const;   // Note [Module tree], module.cpp
  template <class F>
  void walk(F&& f) const;   // f(prefix, module) over this module and every descendant, iteratively

  std::vector<std::pair<std::string, Module*>> children_;
  std::vector<std::pair<std::string, Tensor*>> params_;
  std::vector<std::pair<std::string, Tensor*>> buffers_;
  bool training_ = true;
  std::deque<Tensor> held_;                                  // hold(): stable addresses
  std::map<std::string, std::shared_ptr<void>> extensions_;   // extension()
  std::vector<std::pair<std::string, CloneStep>> clone_steps_;   // set_clone_step(), in order
  std::map<std::string, RemovableHandle> extension_hooks_;       // register_extension_pre_hook()
  tg::detail::LazyHooks<tg::detail::ModuleHooks> hooks_;   // See Note [Hook lists] in autograd/engine.cpp
  std::string name_;                                        // Module(name); empty: the class name
  std::vector<std::shared_ptr<Module>> owned_children_;     // registered as std::shared_ptr
  bool handle_ = false;                                      // See Note [Value modules and handles]
  std::shared_ptr<Module> handle_target_;                    // a handle's module; null: empty
  std::function<Tensor(Module&, const Tensor&)> libtorch_forward_;   // install_forward()
};

/// True for exactly one argument that is a Tensor (the one-input call with hooks).
template <class... Args>
struct is_one_variable : std::false_type {};
/// See is_one_variable.
template <class A>
struct is_one_variable<A> : std::is_same<std::decay_t<A>, Tensor> {};

/// The base for a user module that clone() rebuilds with its default constructor: derive from
/// Cloneable<Net> instead of Module, and clone() returns a std::unique_ptr<Net>.
/// \code
/// struct Net : tg::nn::Cloneable<Net> {
///   tg::nn::Linear fc1{784, 128}, fc2{128, 10};
///   Net() { register_module("fc1", fc1); register_module("fc2", fc2); }
///   tg::Tensor forward(const tg::Tensor& x) override { return fc2(tg::relu(fc1(x))); }
/// };
/// std::unique_ptr<Net> replica = net.clone();
/// \endcode
/// A module whose constructor takes arguments overrides new_instance() instead (it may still derive
/// from Cloneable for the typed clone()). See Note [Module clone] in nn/module.cpp.
///
/// Cloneable is also how a user module takes several inputs: it knows the derived type, so
/// `net(x, mask)` calls `Net::forward(x, mask)`, whatever forward's parameters and result are
/// (libtorch's ModuleHolder::operator() does the same). Calls with one Tensor keep going through
/// Module::operator(), with the hooks; hooks see one input, so a call with several inputs on a module
/// that has forward hooks throws tg::Error. Modules inside Sequential keep the one-input forward.
/// \code
/// struct Gate : tg::nn::Cloneable<Gate> {
///   tg::nn::Linear fc{4, 4};
///   Gate() { register_module("fc", fc); }
///   using Module::forward;   // keeps the one-input overload visible (and clang's -Woverloaded-virtual quiet)
///   tg::Tensor forward(const tg::Tensor& x, const tg::Tensor& g) { return fc(x) * tg::sigmoid(g); }
/// };
/// Gate gate;  auto y = gate(x, g);
/// \endcode
template <class Derived>
class Cloneable : public Module {
 public:
  using Module::Module;
  using Module::operator();
  /// Derived::forward(args...) for any other argument list than one Tensor (several inputs, none,
  /// other types); tg::Error when forward hooks are registered (they take one input).
  template <class... Args, class = std::enable_if_t<!is_one_variable<Args...>::value>>
  decltype(auto) operator()(Args&&... args) {
    if (has_forward_hooks())
      throw Error(name() + ": forward hooks take one input, but this call passes " + std::to_string(sizeof...(Args)) +
                  " arguments; call forward(...) directly, or remove the hooks");
    return static_cast<Derived&>(*this).forward(std::forward<Args>(args)...);
  }
  /// Module::clone(device), typed.
  std::unique_ptr<Derived> clone(const std::optional<Device>& device = std::nullopt) const {
    std::unique_ptr<Module> copy = Module::clone(device);
    return std::unique_ptr<Derived>(static_cast<Derived*>(copy.release()));   // clone() checked the type
  }
  /// A default-constructed Derived; tg::Error when Derived has no default constructor (override it).
  std::unique_ptr<Module> new_instance() const override {
    if constexpr (std::is_default_constructible<Derived>::value) {
      return std::make_unique<Derived>();
    } else {
      throw Error(name() + ": clone() needs new_instance(): the module has no default constructor, so override "
                           "new_instance() to construct one with its arguments");
    }
  }
};

/// Prints the module tree like PyTorch: each module's pretty_print(), children indented under it.
std::ostream& operator<<(std::ostream& os, const Module& m);

}  // namespace nn
}  // namespace tg

#include "tensorgrad/nn/pimpl.h"   // ModuleHolder and install_forward, which the templates above use
