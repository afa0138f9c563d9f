/// \file
/// autograd/function.h: libtorch's custom autograd Functions (torch::autograd::Function<T>): a class
/// with a static forward(AutogradContext*, ...) and a static backward(AutogradContext*, variable_list),
/// called through T::apply(...). Built on tg::record (autograd/tensor.h), which is tensorgrad's own
/// way to add a differentiable op and the cheaper one; see Note [Custom Functions on record] in
/// autograd/function.cpp.
/// \code
/// struct MulConstant : tg::autograd::Function<MulConstant> {
///   static tg::Tensor forward(tg::autograd::AutogradContext* ctx, tg::Tensor x, double c) {
///     ctx->saved_data["c"] = c;
///     return x * c;
///   }
///   static tg::autograd::variable_list backward(tg::autograd::AutogradContext* ctx,
///                                               tg::autograd::variable_list grad_outputs) {
///     return {grad_outputs[0] * ctx->saved_data["c"].toDouble(), tg::Tensor()};   // none for c
///   }
/// };
/// tg::Tensor y = MulConstant::apply(x, 5.0);
/// \endcode
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "tensorgrad/autograd/grad_mode.h"
#include "tensorgrad/autograd/tensor.h"

namespace tg {
namespace autograd {

/// libtorch's name for the autograd tensor in torch::autograd (an alias of tg::Tensor).
using Variable = Tensor;
/// A list of tensors: what a Function's forward may return and what its backward takes and returns.
using variable_list = std::vector<Tensor>;
/// libtorch's other spelling of variable_list.
using tensor_list = std::vector<Tensor>;

/// A value a Function's forward keeps for its backward in AutogradContext::saved_data (libtorch's
/// c10::IValue, reduced to what a custom Function saves): None, bool, int64, double, string, Tensor,
/// and lists of int64 or double. to*() of another kind throws Error naming both kinds.
class IValue {
 public:
  /// None.
  IValue() = default;
  /// A bool (not an Int: `saved_data["flag"] = true`).
  IValue(bool v) : v_(v) {}   // NOLINT(google-explicit-constructor)
  /// An Int, from any integer type.
  template <class I, std::enable_if_t<std::is_integral<I>::value && !std::is_same<I, bool>::value, int> = 0>
  IValue(I v) : v_(static_cast<int64_t>(v)) {}   // NOLINT(google-explicit-constructor)
  /// A Double, from float or double.
  template <class F, std::enable_if_t<std::is_floating_point<F>::value, int> = 0>
  IValue(F v) : v_(static_cast<double>(v)) {}   // NOLINT(google-explicit-constructor)
  /// A String.
  IValue(std::string v) : v_(std::move(v)) {}   // NOLINT(google-explicit-constructor)
  /// A String (not a bool, which a pointer would otherwise convert to).
  IValue(const char* v) : v_(std::string(v)) {}   // NOLINT(google-explicit-constructor)
  /// A Tensor (kept as is: saving an output of the Function here makes a reference cycle, as in libtorch).
  IValue(Tensor v) : v_(std::move(v)) {}   // NOLINT(google-explicit-constructor)
  /// An IntList.
  IValue(std::vector<int64_t> v) : v_(std::move(v)) {}   // NOLINT(google-explicit-constructor)
  /// An IntList of a shape: `saved_data["sizes"] = x.sizes();`.
  IValue(const Shape& v) : v_(std::vector<int64_t>(v.begin(), v.end())) {}   // NOLINT(google-explicit-constructor)
  /// A DoubleList.
  IValue(std::vector<double> v) : v_(std::move(v)) {}   // NOLINT(google-explicit-constructor)

  bool isNone() const { return v_.index() == 0; }                         ///< Whether it holds nothing.
  bool isBool() const { return std::holds_alternative<bool>(v_); }        ///< Whether it holds a bool.
  bool isInt() const { return std::holds_alternative<int64_t>(v_); }      ///< Whether it holds an int64.
  bool isDouble() const { return std::holds_alternative<double>(v_); }    ///< Whether it holds a double.
  bool isString() const { return std::holds_alternative<std::string>(v_); }   ///< Whether it holds a string.
  bool isTensor() const { return std::holds_alternative<Tensor>(v_); }    ///< Whether it holds a Tensor.
  bool isIntList() const { return std::holds_alternative<std::vector<int64_t>>(v_); }   ///< An int64 list?
  bool isDoubleList() const { return std::holds_alternative<std::vector<double>>(v_); }   ///< A double list?

  bool toBool() const;                                    ///< The bool; Error for another kind.
  int64_t toInt() const;                                  ///< The int64; Error for another kind.
  double toDouble() const;                                ///< The double; Error for another kind (an Int too, as c10).
  const std::string& toStringRef() const;                 ///< The string; Error for another kind.
  Tensor toTensor() const;                                ///< The Tensor; Error for another kind.
  std::vector<int64_t> toIntVector() const;               ///< The int64 list; Error for another kind.
  std::vector<double> toDoubleVector() const;             ///< The double list; Error for another kind.
  /// The kind held, c10's words: "None", "Bool", "Int", "Double", "String", "Tensor", "IntList", "DoubleList".
  const char* tagKind() const;

 private:
  std::variant<std::monostate, bool, int64_t, double, std::string, Tensor, std::vector<int64_t>, std::vector<double>>
      v_;
};

namespace detail {
struct FunctionState;
}  // namespace detail

/// What a Function's forward hands its backward (libtorch's torch::autograd::AutogradContext): tensors
/// saved through save_for_backward (checked against in-place writes, Note [Version counter]), other
/// values in saved_data, and which inputs were written in place or which outputs carry no gradient.
struct AutogradContext {
  /// An empty context (Function<T>::apply makes one per call).
  AutogradContext() = default;
  AutogradContext(const AutogradContext&) = delete;
  AutogradContext& operator=(const AutogradContext&) = delete;

  /// Non-tensor values for backward: `ctx->saved_data["c"] = 2.0;` then `.toDouble()`.
  std::unordered_map<std::string, IValue> saved_data;

  /// Saves tensors (inputs or outputs of forward) for get_saved_variables(); call it at most once,
  /// inside forward. The versions are taken when forward returns.
  void save_for_backward(variable_list to_save);
  /// Marks inputs that forward wrote in place; each must also be returned as an output, and gets the
  /// Function as its history (PyTorch's rebase). A leaf that requires grad is refused (AutogradError).
  void mark_dirty(const variable_list& inputs);
  /// Marks outputs that carry no gradient: they come back not requiring grad, and backward receives
  /// zeros for them.
  void mark_non_differentiable(const variable_list& outputs);
  /// Whether backward receives zeros (true, the default) or undefined Tensors for outputs that got
  /// no gradient.
  void set_materialize_grads(bool value);
  /// The saved tensors, in save order; AutogradError when one was written in place after forward
  /// returned. Without history, except while backward runs with create_graph: then each has its
  /// history (an input's, the Function's own for an output), as libtorch's saved variables.
  variable_list get_saved_variables() const;
  /// In backward: whether the i-th tensor input wants a gradient (i counts tensor inputs only, as
  /// libtorch's edges). In forward: whether it requires grad.
  bool needs_input_grad(size_t output_edge_index) const;
  /// Whether any tensor input in the [begin, end) ranges wants a gradient.
  bool needs_input_grad(std::initializer_list<std::pair<size_t, size_t>> idxs) const;

 private:
  friend struct detail::FunctionState;
  friend class FunctionCall;
  /// Where a saved tensor came from: input k of the Function, output k, or another tensor (kept by
  /// handle when it requires grad, so that a create_graph backward sees its history).
  struct Origin {
    enum Kind { kInput, kOutput, kOther } kind = kOther;
    size_t index = 0;
    Tensor handle;
  };
  variable_list to_save_;
  std::vector<SavedTensor> saved_;
  std::vector<Origin> saved_origin_;
  /// Set while T::backward runs under create_graph: a saved tensor (by position) with its history.
  std::function<Tensor(size_t)> unpack_;
  std::vector<const TensorImpl*> dirty_, non_differentiable_;
  std::vector<bool> needs_input_grad_;
  bool materialize_grads_ = true;
};

/// The return type of X::forward called with args (libtorch's forward_t).
template <class X, class... Args>
using forward_t = decltype(X::forward(nullptr, std::declval<Args>()...));

/// One Function<T>::apply call's bookkeeping: the tensor inputs and what they were before forward.
/// The non-template part of apply lives here (autograd/function.cpp).
class FunctionCall {
 public:
  /// The backward as apply stores it: T::backward.
  using Backward = std::function<variable_list(AutogradContext*, variable_list)>;

  /// A call of the Function named name (a string that outlives the graph).
  explicit FunctionCall(const char* name);
  /// A tensor argument: a gradient input of the Function.
  void add(const Tensor& t);
  /// An optional tensor: a gradient input when it holds a defined Tensor, else a non-tensor argument.
  void add(const std::optional<Tensor>& t);
  /// Each tensor of a list is a gradient input (libtorch's TensorList).
  void add(const std::vector<Tensor>& ts);
  /// Any other argument: no gradient; backward returns an undefined Tensor at its position.
  template <class A>
  void add(const A&) {
    is_var_.push_back(false);
  }
  /// The context forward fills in (needs_input_grad set from the inputs).
  AutogradContext* begin();
  /// Records the outputs of forward into the graph (one Node for them all) and returns them.
  variable_list finish(variable_list outputs, Backward backward);

 private:
  const char* name_;
  std::shared_ptr<AutogradContext> ctx_;
  variable_list vars_;          // tensor inputs in order
  std::vector<bool> is_var_;    // per argument of forward
  bool executable_ = false;     // grad mode on and some input requires grad
};

namespace detail {
/// "tg::autograd::CppNode<Name>" for a Function type, as libtorch names the Node (kept for the process).
const char* function_node_name(const std::type_info& type);
/// The outputs of forward as a list.
inline variable_list to_list(Tensor t) { return {std::move(t)}; }
/// See to_list(Tensor).
inline variable_list to_list(variable_list v) { return v; }
/// The wrapped outputs as forward's return type.
template <class R>
R from_list(variable_list v);
/// One Tensor.
template <>
inline Tensor from_list<Tensor>(variable_list v) { return std::move(v.at(0)); }
/// A list.
template <>
inline variable_list from_list<variable_list>(variable_list v) { return v; }
}  // namespace detail

/// A custom differentiable op in libtorch's shape (torch::autograd::Function): derive T from
/// Function<T> and give it
/// `static Tensor-or-variable_list forward(AutogradContext* ctx, args...)`, where args may be Tensors,
/// std::optional<Tensor>, std::vector<Tensor> and any other values, and
/// `static variable_list backward(AutogradContext* ctx, variable_list grad_outputs)`, which gets one
/// gradient per output and returns one per argument of forward (undefined for non-tensor arguments
/// and for inputs that need none; extra undefined ones are allowed). forward runs with grad mode off.
/// Not supported: double backward through the Function (the gradient it returns has no history) and
/// forward-mode jvp; outputs on different devices.
template <class T>
struct Function {
  /// Runs T::forward on args and records T::backward for its outputs.
  template <class X = T, class... Args>
  static auto apply(Args&&... args) -> std::enable_if_t<std::is_same<X, T>::value, forward_t<X, Args...>> {
    using R = forward_t<X, Args...>;
    static_assert(std::is_same<R, Tensor>::value || std::is_same<R, variable_list>::value,
                  "tg::autograd::Function: forward must return tg::Tensor or tg::autograd::variable_list");
    FunctionCall call(detail::function_node_name(typeid(X)));
    (call.add(args), ...);
    AutogradContext* ctx = call.begin();
    R out;
    {
      NoGradGuard no_grad;
      out = X::forward(ctx, std::forward<Args>(args)...);
    }
    return detail::from_list<R>(call.finish(detail::to_list(std::move(out)), [](AutogradContext* c, variable_list g) {
      return variable_list(X::backward(c, std::move(g)));
    }));
  }
};

}  // namespace autograd
}  // namespace tg
