/// \file
/// nn/pimpl.h: libtorch's module conventions beside tensorgrad's value modules: ModuleHolder (a
/// shared handle to a module, with ->), TG_MODULE / TORCH_MODULE (a holder named after a NameImpl),
/// and TG_LAYER_HANDLE, which makes a built-in layer its own holder (Note [Value modules and handles]).
/// Included by nn/module.h.
#pragma once
#include <cstddef>
#include <memory>
#include <ostream>
#include <string>
#include <type_traits>
#include <utility>

#include "tensorgrad/core/error.h"
#include "tensorgrad/nn/module.h"

// Note [Value modules and handles]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// libtorch's torch::nn::Linear is a holder: a std::shared_ptr to a LinearImpl, reached through ->.
// tensorgrad's tg::nn::Linear is the module itself, a value whose members are registered by reference
// (fc.weight, seq.add<Linear>(...), dynamic_cast<Linear*>, classes derived from Linear). After
// s/torch::/tg::/ a program names the same tg::nn::Linear in both styles:
//
//   tg::nn::Linear fc{784, 128};  register_module("fc", fc);  fc(x);  fc.weight      // ours
//   tg::nn::Linear fc{nullptr};   fc = register_module("fc", tg::nn::Linear(784, 64));
//   fc->forward(x);  fc(x);  fc->weight;  fc.ptr()                                  // libtorch's
//
// So a built-in layer is one class that plays both parts, and LinearImpl names the same class. Its
// objects are in one of two states:
//   - a module (constructed from the layer's arguments): what it always was; -> and * give the object
//     itself, so fc->weight and fc.weight are one tensor and libtorch's spelling works on a value too.
//   - a handle (constructed from nullptr, from a std::shared_ptr<Linear>, or given one by assignment):
//     the object stands for a module owned elsewhere, as libtorch's holder does. ->, *, get(), ptr(),
//     operator() and register_module reach that module; an empty handle raises tg::Error naming the
//     layer. The handle's own members stay empty: fc.weight on a handle is an undefined tensor, so a
//     handle is used through ->, as libtorch's is.
// register_module of a temporary layer moves it into a module the parent shares (new_instance() given
// the temporary's tensor handles: nothing is copied or drawn again) and returns a std::shared_ptr,
// which the handle takes. Moving a layer (a factory's `return layer;`) makes a handle to its module
// moved out the same way. Copies stay refused at compile time: a value layer has one owner, and a
// handle is shared through ptr().
// The alternatives were worse. Making tg::nn::Linear a holder (as libtorch) breaks every fc.weight,
// add<Linear>, dynamic_cast<Linear*> and class derived from Linear in existing code. A holder type
// under another name leaves the libtorch spelling (Linear fc{nullptr}; fc = ...) uncompilable. Making
// modules movable is unsafe: a move would have to re-point every registration made by reference.
// A module type of the user's gets libtorch's holder with TG_MODULE(Name) (Name wraps NameImpl).

namespace tg {
namespace detail {

/// True when m.forward(x) with one Tensor returns a Tensor, so that the module can run inside
/// Sequential and behind the hooks of operator() (Note [The forward of a libtorch-style module]).
template <class M, class = void>
struct has_tensor_forward : std::false_type {};
/// See the primary template.
template <class M>
struct has_tensor_forward<M, std::void_t<decltype(std::declval<M&>().forward(std::declval<const Tensor&>()))>>
    : std::is_same<decltype(std::declval<M&>().forward(std::declval<const Tensor&>())), Tensor> {};

/// See the declaration in nn/module.h.
struct ModuleAccess {
  /// Makes m a handle to target (an empty one when target is null).
  static void make_handle(nn::Module& m, std::shared_ptr<nn::Module> target) {
    m.handle_ = true;
    m.handle_target_ = std::move(target);
  }
  /// What a handle made from m stands for: m's module when m is a handle (null when empty), else m
  /// moved into shared ownership (Module::move_out).
  static std::shared_ptr<nn::Module> adopt(nn::Module& m) {
    if (m.is_handle()) return m.handle_target_;
    return nn::Module::adopt(m, "");
  }
  /// m.resolved() as an M.
  template <class M>
  static M& resolve(M& m) {
    return static_cast<M&>(static_cast<nn::Module&>(m).resolved());
  }
  /// See resolve().
  template <class M>
  static const M& resolve(const M& m) {
    return static_cast<const M&>(static_cast<const nn::Module&>(m).resolved());
  }
  /// m.shared() as an M.
  template <class M>
  static std::shared_ptr<M> ptr(M& m) {
    return std::static_pointer_cast<M>(static_cast<nn::Module&>(m).shared());
  }
  /// Whether m is an empty handle.
  static bool is_empty(const nn::Module& m) { return m.handle_ && m.handle_target_ == nullptr; }
  /// Module::has_forward_hooks().
  static bool has_forward_hooks(const nn::Module& m) { return m.has_forward_hooks(); }
  /// Module::install_forward<M>(m).
  template <class M>
  static void install_forward(M& m) {
    static_cast<nn::Module&>(m).install_forward<M>(m);
  }
};
}  // namespace detail

namespace nn {

// Note [The forward of a libtorch-style module]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Module declares `virtual Tensor forward(const Tensor&)`, which existing modules override. libtorch's
// tutorials write `Tensor forward(Tensor x)` (by value, no override): a function of its own that hides
// the virtual one, so module(x), the hooks and Sequential, which call the virtual one, would not
// reach it. Where the static type is known (register_module, a ModuleHolder, Sequential's push_back)
// and m.forward(x) returns a Tensor, install_forward stores a call to it, and the base forward calls
// that instead of raising "not implemented". A forward returning something else (a VAE's tuple) is
// called through the holder, ModuleHolder::operator(), with any arguments. Note: a forward taking
// `const Tensor&` and returning another type conflicts with the virtual (a compiler error, "conflicting
// return type"): take the Tensor by value as libtorch's tutorials do.
template <class M>
void Module::install_forward(M& m) {
  if constexpr (tg::detail::has_tensor_forward<M>::value && !std::is_same<M, Module>::value) {
    Module& base = m;
    if (!base.libtorch_forward_)
      base.libtorch_forward_ = [](Module& self, const Tensor& x) -> Tensor { return static_cast<M&>(self).forward(x); };
  } else {
    (void)m;
  }
}

/// libtorch's ModuleHolder: a shared handle to a Contained module, reached with -> and *; copies share
/// the module. A module type of the user's gets one with TG_MODULE(Name); the built-in layers are
/// their own holders (TG_LAYER_HANDLE).
/// \code
/// struct NetImpl : tg::nn::Module {
///   tg::nn::Linear fc{nullptr};
///   NetImpl(int64_t n) { fc = register_module("fc", tg::nn::Linear(n, 2)); }
///   tg::Tensor forward(tg::Tensor x) { return fc(x); }
/// };
/// TG_MODULE(Net);
/// Net net(4);  auto y = net(tg::randn({3, 4}));  tg::optim::SGD sgd(net->parameters(), 0.1);
/// \endcode
template <class Contained>
class ModuleHolder {
 public:
  /// The module type (libtorch's ContainedType).
  using ContainedType = Contained;
  /// A default-constructed Contained; a compile error naming `= nullptr` when it has no default constructor.
  ModuleHolder() {
    static_assert(std::is_default_constructible<Contained>::value,
                  "ModuleHolder: the module has no default constructor. Give the holder the empty state with "
                  "nullptr (`Net net{nullptr};` or `Net net = nullptr;`) and assign it later, or pass the "
                  "constructor's arguments (`Net net(784, 10);`).");
    if constexpr (std::is_default_constructible<Contained>::value) reset(std::make_shared<Contained>());
  }
  /// The empty holder (libtorch's `Net net{nullptr}`); -> and () raise tg::Error until one is assigned.
  ModuleHolder(std::nullptr_t) {}  // NOLINT: implicit, as libtorch's
  /// A new Contained(head, tail...).
  template <class Head, class... Tail,
            class = std::enable_if_t<!(sizeof...(Tail) == 0 &&
                                       (std::is_base_of<ModuleHolder, std::decay_t<Head>>::value ||
                                        std::is_convertible<Head&&, std::shared_ptr<Contained>>::value))>>
  explicit ModuleHolder(Head&& head, Tail&&... tail) {
    reset(std::make_shared<Contained>(std::forward<Head>(head), std::forward<Tail>(tail)...));
  }
  /// A holder of module (libtorch's implicit conversion from a std::shared_ptr).
  ModuleHolder(std::shared_ptr<Contained> module) { reset(std::move(module)); }  // NOLINT: implicit, as libtorch's

  /// True unless empty.
  explicit operator bool() const noexcept { return !is_empty(); }
  /// True for the holder made from nullptr.
  bool is_empty() const noexcept { return impl_ == nullptr; }
  /// The module; tg::Error when empty.
  Contained* operator->() { return get(); }
  /// See operator->().
  const Contained* operator->() const { return get(); }
  /// The module; tg::Error when empty.
  Contained& operator*() { return *get(); }
  /// See operator*().
  const Contained& operator*() const { return *get(); }
  /// The shared pointer; tg::Error when empty.
  const std::shared_ptr<Contained>& ptr() const {
    if (impl_ == nullptr) throw_empty();
    return impl_;
  }
  /// The module; tg::Error when empty.
  Contained* get() {
    if (impl_ == nullptr) throw_empty();
    return impl_.get();
  }
  /// See get().
  const Contained* get() const {
    if (impl_ == nullptr) throw_empty();
    return impl_.get();
  }
  /// Contained::forward(args...), any arguments and result (libtorch's holder call): one Tensor whose
  /// forward returns a Tensor goes through Module::operator() and its hooks; other calls refuse
  /// forward hooks (tg::Error), which take one input.
  template <class... Args>
  decltype(auto) operator()(Args&&... args) {
    Contained& m = *get();
    if constexpr (is_one_variable<Args...>::value && tg::detail::has_tensor_forward<Contained>::value) {
      return static_cast<Module&>(m)(std::forward<Args>(args)...);
    } else {
      if (tg::detail::ModuleAccess::has_forward_hooks(m))
        throw Error(m.name() + ": forward hooks take one input, but this call passes " +
                    std::to_string(sizeof...(Args)) + " arguments; call forward(...) directly, or remove the hooks");
      return m.forward(std::forward<Args>(args)...);
    }
  }
  /// (*module)[arg] (a container's element).
  template <class Arg>
  decltype(auto) operator[](Arg&& arg) {
    return (*get())[std::forward<Arg>(arg)];
  }

 protected:
  std::shared_ptr<Contained> impl_;   ///< the module; null when empty

 private:
  void reset(std::shared_ptr<Contained> module) {
    impl_ = std::move(module);
    if (impl_) {
      static_assert(std::is_base_of<Module, Contained>::value,
                    "ModuleHolder: the module must derive from tg::nn::Module");
      tg::detail::ModuleAccess::install_forward<Contained>(*impl_);
    }
  }
  [[noreturn]] static void throw_empty() {
    throw Error("ModuleHolder: accessing an empty holder (constructed from nullptr); assign it a module first, "
                "e.g. net = register_module(\"net\", Net(...))");
  }
};

/// Prints the holder's module tree (an empty holder prints as "ModuleHolder(empty)").
template <class Contained>
std::ostream& operator<<(std::ostream& os, const ModuleHolder<Contained>& holder) {
  if (holder.is_empty()) return os << "ModuleHolder(empty)";
  return os << static_cast<const Module&>(*holder);
}

}  // namespace nn
}  // namespace tg

/// Defines Name as the holder of ImplType (libtorch's TORCH_MODULE_IMPL).
#define TG_MODULE_IMPL(Name, ImplType)                               \
  class Name : public ::tg::nn::ModuleHolder<ImplType> { /* NOLINT */ \
   public:                                                           \
    using ::tg::nn::ModuleHolder<ImplType>::ModuleHolder;            \
    using Impl = ImplType;                                           \
  }
/// Defines Name as the holder of NameImpl, libtorch's TORCH_MODULE: `struct NetImpl : tg::nn::Module
/// {...}; TG_MODULE(Net);` then `Net net(args...); net->parameters(); net(x);`.
#define TG_MODULE(Name) TG_MODULE_IMPL(Name, Name##Impl)
#ifndef TORCH_MODULE
/// TG_MODULE under libtorch's name, so that a ported program's TORCH_MODULE(Net) compiles unchanged
/// (a macro is not renamed by s/torch::/tg::/); not defined when libtorch's own is.
#define TORCH_MODULE(Name) TG_MODULE(Name)
#endif
#ifndef TORCH_MODULE_IMPL
/// TG_MODULE_IMPL under libtorch's name; not defined when libtorch's own is.
#define TORCH_MODULE_IMPL(Name, ImplType) TG_MODULE_IMPL(Name, ImplType)
#endif

/// Makes a built-in layer class its own libtorch holder (Note [Value modules and handles]): placed in
/// the class (through TG_LAYER_HANDLE, TG_LAYER_HANDLE_VIA or TG_LAYER_HANDLE_DEFAULT), with INIT the
/// mem-initializer of the handle's constructors, it adds the handle state (`Name x{nullptr}`,
/// `Name x = std::shared_ptr<Name>(...)` or a std::unique_ptr, assignment of a std::shared_ptr or of a moved layer), ->, *, get(), ptr(), is_empty() and an
/// explicit bool, and the marker register_module reads to take the class's temporaries.
#define TG_LAYER_HANDLE_INIT(Name, INIT)                                                                       \
 public:                                                                                                       \
  using tg_layer_handle = Name;                                                                                \
  template <class Null, std::enable_if_t<std::is_same<Null, std::nullptr_t>::value, int> = 0>                  \
  Name(Null) INIT { /* NOLINT: implicit, as libtorch's */                                                           \
    ::tg::detail::ModuleAccess::make_handle(*this, nullptr);                                                   \
  }                                                                                                            \
  Name(std::shared_ptr<Name> module) INIT { /* NOLINT: implicit, as libtorch's */                                   \
    ::tg::detail::ModuleAccess::make_handle(*this, std::move(module));                                         \
  }                                                                                                            \
  Name(std::unique_ptr<Name> module) INIT { /* NOLINT: implicit (Embedding::from_pretrained's result) */         \
    ::tg::detail::ModuleAccess::make_handle(*this, std::shared_ptr<Name>(std::move(module)));                 \
  }                                                                                                            \
  Name(Name&& other) INIT {                                                                                    \
    ::tg::detail::ModuleAccess::make_handle(*this, ::tg::detail::ModuleAccess::adopt(other));                 \
  }                                                                                                            \
  Name& operator=(std::shared_ptr<Name> module) {                                                              \
    ::tg::detail::ModuleAccess::make_handle(*this, std::move(module));                                         \
    return *this;                                                                                              \
  }                                                                                                            \
  Name& operator=(std::unique_ptr<Name> module) {                                                              \
    ::tg::detail::ModuleAccess::make_handle(*this, std::shared_ptr<Name>(std::move(module)));                 \
    return *this;                                                                                              \
  }                                                                                                            \
  Name& operator=(Name&& other) {                                                                              \
    if (&other != this) ::tg::detail::ModuleAccess::make_handle(*this, ::tg::detail::ModuleAccess::adopt(other)); \
    return *this;                                                                                              \
  }                                                                                                            \
  Name* operator->() { return &::tg::detail::ModuleAccess::resolve(*this); }                                   \
  const Name* operator->() const { return &::tg::detail::ModuleAccess::resolve(*this); }                       \
  Name& operator*() { return ::tg::detail::ModuleAccess::resolve(*this); }                                     \
  const Name& operator*() const { return ::tg::detail::ModuleAccess::resolve(*this); }                         \
  Name* get() { return &::tg::detail::ModuleAccess::resolve(*this); }                                          \
  const Name* get() const { return &::tg::detail::ModuleAccess::resolve(*this); }                              \
  std::shared_ptr<Name> ptr() { return ::tg::detail::ModuleAccess::ptr(*this); }                               \
  bool is_empty() const noexcept { return ::tg::detail::ModuleAccess::is_empty(*this); }                       \
  explicit operator bool() const noexcept { return !is_empty(); }
/// TG_LAYER_HANDLE_INIT without a constructor to go through: the handle's members are default-constructed.
#define TG_LAYER_HANDLE(Name) TG_LAYER_HANDLE_INIT(Name, )
/// TG_LAYER_HANDLE for a layer whose members have no default constructor: a handle is first built as
/// Name(args...), which must register no parameter (MaxPool2d(1)).
#define TG_LAYER_HANDLE_VIA(Name, ...) TG_LAYER_HANDLE_INIT(Name, : Name(__VA_ARGS__))
/// TG_LAYER_HANDLE for a layer without constructor arguments (ReLU, Tanh), which keeps its default
/// constructor: `tg::nn::ReLU relu;` is a module, as `torch::nn::ReLU relu;` is a holder of one.
#define TG_LAYER_HANDLE_DEFAULT(Name) \
  TG_LAYER_HANDLE(Name)               \
  Name() = default;
