/// \file
/// nn/container.h: the module containers, with libtorch's names: Sequential (runs its children in
/// order), ModuleList (holds them) and ModuleDict (holds them by name). Each takes modules in every
/// form (Note [Container elements]), and each is its own holder (nn/pimpl.h).
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "tensorgrad/core/error.h"
#include "tensorgrad/nn/module.h"

// Note [Container elements]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// A container takes a module as libtorch's does, and as register_module does: a holder (TG_MODULE's,
// or a layer handle) or a std::shared_ptr is shared; a temporary built-in layer (Sequential(Linear(4,
// 2), ReLU())) moves into a std::shared_ptr; a std::unique_ptr is owned; a module lvalue of ours (a
// member) is held by reference and must outlive the container, as a child registered by reference
// does. Every element is kept as a std::shared_ptr (one that does not own for a reference), so
// seq[i] and ptr(i) give libtorch's std::shared_ptr<Module>. Temporaries of the user's own module
// types are refused at compile time, as by register_module.

namespace tg {
namespace detail {

/// True for what a container takes (Note [Container elements]).
template <class M>
struct is_container_element {
  using D = std::decay_t<M>;   ///< the element type
  /// True for a module shared by a std::shared_ptr.
  template <class T>
  static std::true_type shared(const std::shared_ptr<T>*,
                               std::enable_if_t<std::is_base_of<nn::Module, T>::value>* = nullptr);
  /// True for a module owned by a std::unique_ptr.
  template <class T>
  static std::true_type shared(const std::unique_ptr<T>*,
                               std::enable_if_t<std::is_base_of<nn::Module, T>::value>* = nullptr);
  /// False otherwise.
  static std::false_type shared(...);
  static constexpr bool value = std::is_base_of<nn::Module, D>::value || is_module_holder<D>::value ||
                                decltype(shared(std::declval<D*>()))::value;   ///< the answer
};

/// The element as a std::shared_ptr (Note [Container elements]); `who` names the container in errors.
template <class M>
std::shared_ptr<nn::Module> to_element(M&& m, const char* who) {
  using D = std::decay_t<M>;
  std::shared_ptr<nn::Module> out;
  if constexpr (is_module_holder<D>::value) {
    out = m.ptr();
  } else if constexpr (std::is_base_of<nn::Module, D>::value) {
    if constexpr (std::is_lvalue_reference<M>::value) {
      ModuleAccess::install_forward<D>(m);
      out = static_cast<nn::Module&>(m).is_handle() ? static_cast<nn::Module&>(m).shared()
                                                : std::shared_ptr<nn::Module>(std::shared_ptr<nn::Module>(), &m);
    } else {
      static_assert(is_layer_handle<D>::value,
                    "a container cannot take a temporary of a module type of your own: it would be destroyed at "
                    "the end of the statement. Pass a std::make_shared<Net>(...), a TG_MODULE holder, or a member.");
      out = ModuleAccess::adopt(m);
    }
  } else {
    using T = typename D::element_type;
    if (m != nullptr) ModuleAccess::install_forward<T>(*m);
    if constexpr (std::is_same<D, std::shared_ptr<T>>::value) {
      out = m;   // shared, the caller keeps its pointer
    } else {
      static_assert(!std::is_lvalue_reference<M>::value, "a container takes a std::unique_ptr by std::move(ptr)");
      out = std::shared_ptr<nn::Module>(std::move(m));
    }
  }
  TG_CHECK(out != nullptr, Error, who, ": the module is null (an empty holder or pointer)");
  return out;
}

}  // namespace detail

namespace nn {

/// What Sequential and ModuleList share: the elements in order, as std::shared_ptrs, named "0", "1",
/// ... unless given names. Not used on its own.
class ModuleSequence : public Module {
 public:
  /// Destroys the children iteratively: a chain of 10^6 nested containers must not overflow the stack.
  ~ModuleSequence() override;
  /// The number of children.
  std::size_t size() const { return elements().size(); }
  /// The i-th child (libtorch's operator[]); IndexError outside [0, size()).
  std::shared_ptr<Module> operator[](std::size_t i) const { return ptr(i); }
  /// The i-th child; IndexError outside [0, size()).
  std::shared_ptr<Module> ptr(std::size_t i) const;
  /// The i-th child as a T (std::dynamic_pointer_cast: null when it is no T); IndexError as above.
  template <class T>
  std::shared_ptr<typename tg::detail::contained<T>::type> ptr(std::size_t i) const {
    return std::dynamic_pointer_cast<typename tg::detail::contained<T>::type>(ptr(i));
  }
  /// The i-th child as a T&; tg::Error naming the child when it is no T, IndexError as above.
  template <class T>
  typename tg::detail::contained<T>::type& at(std::size_t i) const {
    auto* t = ptr(i)->template as<T>();
    TG_CHECK(t != nullptr, Error, name(), "::at(", i, "): the child is a ", ptr(i)->name(), ", not the type asked for");
    return *t;
  }
  /// The children, in order.
  std::vector<std::shared_ptr<Module>>::const_iterator begin() const { return elements().begin(); }
  /// See begin().
  std::vector<std::shared_ptr<Module>>::const_iterator end() const { return elements().end(); }
  /// Appends a module in any form (Note [Container elements]) as child "<size()>"; returns it.
  template <class M, std::enable_if_t<tg::detail::is_container_element<M>::value, int> = 0>
  Module& push_back(M&& module) {
    return append(std::to_string(items_.size()), tg::detail::to_element(std::forward<M>(module), "push_back"));
  }
  /// The same under a name of its own (PyTorch's Sequential(OrderedDict(...))): a state_dict then
  /// says "fc1.weight" instead of "0.weight". Error for a null module or a name already taken.
  template <class M, std::enable_if_t<tg::detail::is_container_element<M>::value, int> = 0>
  Module& push_back(const std::string& name, M&& module) {
    return append(name, tg::detail::to_element(std::forward<M>(module), "push_back"));
  }
  /// Appends every element of other (libtorch's extend), sharing them.
  void extend(const ModuleSequence& other);

 protected:
  /// Appends child under name; returns it.
  Module& append(const std::string& name, std::shared_ptr<Module> child);
  /// The resolved container's elements (a handle's, see nn/pimpl.h).
  const std::vector<std::shared_ptr<Module>>& elements() const {
    return static_cast<const ModuleSequence&>(resolved()).items_;
  }
  /// Fresh instances of the children under their names, into copy (for clone()).
  void new_children_into(ModuleSequence& copy) const;
  /// Passes the children on to fresh (for move_out()).
  void move_children_into(ModuleSequence& fresh);

 private:
  std::vector<std::shared_ptr<Module>> items_;
  std::vector<std::string> names_;   // the children's names, in the order of items_
};

/// Runs its children in order (torch::nn::Sequential). Built from modules in any form, or in place:
/// \code
/// tg::nn::Sequential seq(tg::nn::Linear(4, 8), tg::nn::ReLU(), tg::nn::Linear(8, 2));
/// seq.add<tg::nn::Dropout>(0.1);
/// auto y = seq(tg::randn({3, 4}));   // or seq->forward(x), libtorch's spelling
/// \endcode
class Sequential : public ModuleSequence {
 public:
  /// Empty.
  Sequential() = default;
  /// The modules in order (Note [Container elements]), named "0", "1", ...
  template <class... Ms,
            std::enable_if_t<(sizeof...(Ms) > 0) && (tg::detail::is_container_element<Ms>::value && ...) &&
                                 !(sizeof...(Ms) == 1 && (std::is_same<std::decay_t<Ms>, Sequential>::value && ...)),
                             int> = 0>
  explicit Sequential(Ms&&... modules) {
    (push_back(std::forward<Ms>(modules)), ...);
  }
  /// Builds an M from args, owned by the Sequential, registers it as the next child and returns it.
  template <class M, class... Args>
  M& add(Args&&... args) {
    auto owned = std::make_shared<M>(std::forward<Args>(args)...);
    M& ref = *owned;
    append(std::to_string(size()), std::move(owned));
    return ref;
  }
  using ModuleSequence::push_back;
  using ModuleSequence::ptr;
  /// Takes ownership of an already built module (a clone(), a quantized layer) and registers it as
  /// the next child; returns it. Error for a null module.
  Module& push_back(std::unique_ptr<Module> module) { return ModuleSequence::push_back(std::move(module)); }
  /// The same under a name of its own. Error for a null module or a name already taken.
  Module& push_back(const std::string& name, std::unique_ptr<Module> module) {
    return ModuleSequence::push_back(name, std::move(module));
  }
  /// Each child in order, called as child(x) so that its hooks run; x itself when empty.
  Tensor forward(const Tensor& x) override;
  /// "Sequential".
  std::string name() const override { return "Sequential"; }
  /// A Sequential of fresh instances of the same children (for clone()).
  std::unique_ptr<Module> new_instance() const override;

 protected:
  /// An empty Sequential given the children (for a temporary moved into shared ownership).
  std::unique_ptr<Module> move_out() override;

  TG_LAYER_HANDLE(Sequential)
};
/// libtorch's name of the module type (Sequential is its own holder: Note [Value modules and handles]).
using SequentialImpl = Sequential;

/// Holds modules in order without running them (torch::nn::ModuleList): forward is the user's, over
/// `for (const auto& m : list)` or list[i].
class ModuleList : public ModuleSequence {
 public:
  /// Empty.
  ModuleList() = default;
  /// The modules in order (Note [Container elements]), named "0", "1", ...
  template <class... Ms,
            std::enable_if_t<(sizeof...(Ms) > 0) && (tg::detail::is_container_element<Ms>::value && ...) &&
                                 !(sizeof...(Ms) == 1 && (std::is_same<std::decay_t<Ms>, ModuleList>::value && ...)),
                             int> = 0>
  explicit ModuleList(Ms&&... modules) {
    (push_back(std::forward<Ms>(modules)), ...);
  }
  using ModuleSequence::ptr;
  /// "ModuleList".
  std::string name() const override { return "ModuleList"; }
  /// A ModuleList of fresh instances of the same children (for clone()).
  std::unique_ptr<Module> new_instance() const override;

 protected:
  /// An empty ModuleList given the children.
  std::unique_ptr<Module> move_out() override;

  TG_LAYER_HANDLE(ModuleList)
};
/// libtorch's name of the module type.
using ModuleListImpl = ModuleList;

/// Holds modules by name, in insertion order (torch::nn::ModuleDict). The names are the children's.
class ModuleDict : public Module {
 public:
  /// Empty.
  ModuleDict() = default;
  /// The (name, module) pairs in order (libtorch's ModuleDict(std::vector<std::pair<std::string,
  /// std::shared_ptr<Module>>>)); Error for a repeated or invalid name.
  explicit ModuleDict(const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& modules) { update(modules); }
  /// Inserts each pair in order; Error for a name already here (libtorch's update replaces it: a
  /// registered child is never replaced here, so that references to it stay valid).
  void update(const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& modules);
  /// Inserts module (any form, Note [Container elements]) under name; Error for a name already taken.
  template <class M, std::enable_if_t<tg::detail::is_container_element<M>::value, int> = 0>
  Module& insert(const std::string& name, M&& module) {
    return append(name, tg::detail::to_element(std::forward<M>(module), "ModuleDict::insert"));
  }
  /// The module under key (libtorch's operator[]); IndexError naming the key when there is none.
  std::shared_ptr<Module> operator[](const std::string& key) const;
  /// The module under key as a T&; tg::Error when it is no T, IndexError when there is none.
  template <class T>
  typename tg::detail::contained<T>::type& at(const std::string& key) const {
    auto* t = (*this)[key]->template as<T>();
    TG_CHECK(t != nullptr, Error, "ModuleDict::at(\"", key, "\"): the module is a ", (*this)[key]->name(),
             ", not the type asked for");
    return *t;
  }
  /// Whether a module is under key.
  bool contains(const std::string& key) const;
  /// The number of modules.
  std::size_t size() const { return dict().items_.size(); }
  /// The names, in insertion order.
  std::vector<std::string> keys() const;
  /// The modules, in insertion order.
  std::vector<std::shared_ptr<Module>> values() const;
  /// The (name, module) pairs, in insertion order (libtorch's items()).
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> items() const { return dict().items_; }
  /// "ModuleDict".
  std::string name() const override { return "ModuleDict"; }
  /// A ModuleDict of fresh instances of the same modules (for clone()).
  std::unique_ptr<Module> new_instance() const override;

 protected:
  /// An empty ModuleDict given the modules.
  std::unique_ptr<Module> move_out() override;

 private:
  Module& append(const std::string& name, std::shared_ptr<Module> child);
  const ModuleDict& dict() const { return static_cast<const ModuleDict&>(resolved()); }
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> items_;

  TG_LAYER_HANDLE(ModuleDict)
};
/// libtorch's name of the module type.
using ModuleDictImpl = ModuleDict;

}  // namespace nn
}  // namespace tg
