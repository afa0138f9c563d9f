/// \file
/// engine/variable.h: Variable (what users hold), its shared VariableImpl, graph Nodes and record().
/// The backward algorithm lives in engine/autograd.cpp; op rules live in ops/ (each op's methods on
/// Variable are defined there too, in ops/methods.cpp); GradMode and guards in engine/grad_mode.h.
#pragma once
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <type_traits>
#include <vector>

#include "tensorgrad/engine/grad_mode.h"
#include "tensorgrad/engine/tensor.h"

namespace tg {

struct Node;
class Variable;

/// State shared by every copy of a Variable: copies are handles, as in PyTorch. set_data() (used by
/// Module::to) swaps the value for every holder, so an optimizer built earlier sees the move.
struct VariableImpl {
  Tensor data;
  bool requires_grad = false;
  bool retains_grad = false;
  bool is_view = false;                    // shares storage with a graph input: see Variable::check_inplace
  std::shared_ptr<VariableImpl> grad;      // accumulated gradient (leaves, and non-leaves after retain_grad)
  std::shared_ptr<Node> grad_fn;           // producer; null for leaves
  debug::detail::Counted<debug::detail::kVariable> counted;   // tg::debug::live_counts
};

/// Creation options, PyTorch style: TensorOptions().dtype(kFloat64).device(gpu).requires_grad(true).
class TensorOptions {
 public:
  TensorOptions& dtype(DType d) { dtype_ = d; has_dtype_ = true; return *this; }
  TensorOptions& device(Device d) { device_ = d; return *this; }
  TensorOptions& requires_grad(bool r = true) { requires_grad_ = r; return *this; }
  DType dtype() const { return dtype_; }
  bool has_dtype() const { return has_dtype_; }   // randint defaults to int64 when no dtype was set
  Device device() const { return device_; }
  bool requires_grad() const { return requires_grad_; }
 private:
  DType dtype_ = kFloat32;
  bool has_dtype_ = false;
  Device device_;
  bool requires_grad_ = false;
};

class Variable {
 public:
  Variable() = default;                                  // undefined
  explicit Variable(Tensor data, bool requires_grad = false);
  explicit Variable(std::shared_ptr<VariableImpl> impl) : impl_(std::move(impl)) {}

  bool defined() const { return impl_ != nullptr && impl_->data.defined(); }
  const Tensor& data() const;                            // the value, without autograd
  void set_data(const Tensor& t);                        // swaps the value for all copies (shape may change)
  const std::shared_ptr<VariableImpl>& impl() const { return impl_; }

  // ---- metadata
  const Shape& shape() const { return data().shape(); }
  int64_t size(int64_t d) const { return data().size(d); }
  int64_t dim() const { return data().dim(); }
  int64_t numel() const { return data().numel(); }
  DType dtype() const { return data().dtype(); }
  Device device() const { return data().device(); }
  bool is_cuda() const { return device().is_cuda(); }
  bool is_contiguous() const { return data().is_contiguous(); }

  // ---- values
  double item() const;                                   // one element; syncs with the device
  template <class T> T item() const { return static_cast<T>(item()); }
  template <class T> std::vector<T> to_vector() const;   // all elements in row-major order, converted to T
  Variable to(Device device, bool non_blocking = false) const;   // differentiable
  Variable to(DType dtype) const;                                 // differentiable
  Variable cuda() const { return to(Device::cuda()); }
  Variable cpu() const { return to(Device::cpu()); }

  // ---- autograd
  bool requires_grad() const { return impl_ && impl_->requires_grad; }
  Variable& set_requires_grad(bool r);                   // leaves only (PyTorch: requires_grad_)
  bool is_leaf() const { return !impl_ || !impl_->grad_fn; }
  const std::shared_ptr<Node>& grad_fn() const;
  Variable grad() const;                                 // undefined until a backward reaches it
  void set_grad(const Variable& g);
  void zero_grad();                                      // sets grad to undefined (PyTorch set_to_none)
  void retain_grad();                                    // keep .grad() of a non-leaf after backward
  Variable detach() const;                               // same storage, no graph
  /// Reverse-mode pass from this Variable. grad: dL/dthis (required unless one element).
  void backward(const Variable& grad = Variable(), bool retain_graph = false) const;

  // ---- ops as methods (defined in ops/methods.cpp; every one is also a free function in ops/ops.h)
  Variable add(const Variable& o) const;
  Variable sub(const Variable& o) const;
  Variable mul(const Variable& o) const;
  Variable div(const Variable& o) const;
  Variable pow(const Variable& o) const;
  Variable pow(double exponent) const;
  Variable neg() const;
  Variable exp() const;
  Variable log() const;
  Variable sqrt() const;
  Variable abs() const;
  Variable relu() const;
  Variable sigmoid() const;
  Variable tanh() const;
  Variable clamp(double min, double max) const;
  Variable sum() const;
  Variable sum(int64_t dim, bool keepdim = false) const;
  Variable mean() const;
  Variable mean(int64_t dim, bool keepdim = false) const;
  Variable max() const;
  Variable max(int64_t dim, bool keepdim = false) const;
  Variable min() const;
  Variable min(int64_t dim, bool keepdim = false) const;
  Variable argmax() const;
  Variable argmax(int64_t dim, bool keepdim = false) const;
  Variable matmul(const Variable& o) const;
  Variable reshape(const Shape& shape) const;
  Variable view(const Shape& shape) const;
  Variable transpose(int64_t d0, int64_t d1) const;
  Variable t() const;
  Variable permute(const std::vector<int64_t>& dims) const;
  Variable squeeze() const;
  Variable squeeze(int64_t dim) const;
  Variable unsqueeze(int64_t dim) const;
  Variable expand(const Shape& shape) const;
  Variable contiguous() const;
  Variable index_select(int64_t dim, const Variable& index) const;
  Variable gather(int64_t dim, const Variable& index) const;
  Variable softmax(int64_t dim) const;
  Variable log_softmax(int64_t dim) const;

  // ---- in place (ops/inplace.cpp). Version counters catch writes to tensors saved for backward.
  Variable& add_(const Variable& o);
  Variable& add_(double s);
  Variable& sub_(const Variable& o);
  Variable& sub_(double s);
  Variable& mul_(const Variable& o);
  Variable& mul_(double s);
  Variable& zero_();
  Variable& fill_(double value);
  Variable& copy_(const Variable& src);

 private:
  std::shared_ptr<VariableImpl> impl_;
};

std::ostream& operator<<(std::ostream& os, const Variable& v);

// ------------------------------------------------------------------------------------------------
// The graph. See Note [Graph ownership].

/// Note [Graph ownership]
/// A Node is one recorded op. Its edges point at what each input needs for its gradient: the
/// producing Node for a non-leaf, the VariableImpl for a leaf that requires grad (so that backward can
/// accumulate into .grad), nothing otherwise. Edges never point at a non-leaf's data, and backward
/// closures capture Tensors, never Variables, so there are no reference cycles and an activation
/// lives only as long as a closure that needs it. Nodes are freed iteratively (engine/autograd.cpp,
/// Node::~Node), so a chain of a million ops neither overflows the stack in backward nor in teardown.
struct Edge {
  std::shared_ptr<Node> fn;                // producer of a non-leaf input
  std::shared_ptr<VariableImpl> leaf;      // a leaf input that requires grad
  Shape shape;                             // the input's shape: the engine sums gradients back to it
  bool needs_grad() const { return fn != nullptr || leaf != nullptr; }
};

/// What a backward closure sees: which inputs want a gradient, and where to put it.
class Grads {
 public:
  explicit Grads(std::size_t n) : needed_(n, false), values_(n) {}
  std::size_t size() const { return needed_.size(); }
  bool need(std::size_t i) const { return needed_[i]; }
  /// Sets input i's gradient; it may have the broadcast shape: the engine sums it to the input's shape.
  void set(std::size_t i, Tensor g) { values_[i] = std::move(g); }
  SmallVector<bool, 4>& needed() { return needed_; }
  SmallVector<Tensor, 2>& values() { return values_; }
 private:
  SmallVector<bool, 4> needed_;
  SmallVector<Tensor, 2> values_;   // undefined = no gradient
};

/// grad = dL/d(output), with the output's shape. Must capture Tensors only, never Variables.
/// record() takes any callable of this signature; BackwardFn is the type-erased one to store it in.
using BackwardFn = std::function<void(const Tensor& grad, Grads& out)>;

/// A Node's handle on its backward rule, which lives inside the Node's own allocation (see
/// detail::NodeWith): calling it runs the rule; release() destroys the rule and what it captured.
class BackwardRule {
 public:
  BackwardRule() = default;
  BackwardRule(const BackwardRule&) = delete;
  BackwardRule& operator=(const BackwardRule&) = delete;
  explicit operator bool() const { return rule_ != nullptr; }   // false once released
  void operator()(const Tensor& grad, Grads& out) const { call_(rule_, grad, out); }
  void bind(void* rule, void (*call)(void*, const Tensor&, Grads&), void (*destroy)(void*)) {
    rule_ = rule;
    call_ = call;
    destroy_ = destroy;
  }
  void release() noexcept {
    if (rule_ != nullptr) destroy_(rule_);
    rule_ = nullptr;
  }
 private:
  void* rule_ = nullptr;
  void (*call_)(void*, const Tensor&, Grads&) = nullptr;
  void (*destroy_)(void*) = nullptr;
};

struct Node {
  Node() = default;
  Node(const Node&) = delete;              // one owner of the rule and of the parent links
  Node& operator=(const Node&) = delete;
  const char* name = "";                   // "mul": errors, anomaly reports and graph dumps
  uint64_t sequence_nr = 0;                // creation order; backward runs the newest first
  SmallVector<Edge, 2> next;               // edge i <-> input i
  Shape out_shape;
  DType out_dtype = kFloat32;
  Device out_device;
  BackwardRule backward;                   // false once released (retain_graph = false)
  std::weak_ptr<VariableImpl> retained;    // the output, when it called retain_grad()
  debug::detail::Counted<debug::detail::kNode> counted;       // tg::debug::live_counts
  ~Node();                                 // see Note [Iterative graph teardown]
};

/// One input of an op, by reference: the {a, b} lists of record() and any_requires_grad() borrow
/// the Variables (alive until the call returns, temporaries included) instead of copying their
/// handles, which would cost two atomic reference-count updates per input per op.
class InputRef {
 public:
  InputRef(const Variable& v) : v_(&v) {}   // NOLINT: implicit, so that {a, b} works
  const Variable& get() const { return *v_; }
 private:
  const Variable* v_;
};

namespace detail {
/// A Node with its rule F stored inline: one allocation per recorded op. record() makes these with
/// make_shared, whose control block destroys the NodeWith (so ~Node need not be virtual).
template <class F>
struct NodeWith final : Node {
  explicit NodeWith(F&& f) : rule(std::move(f)) { bind(); }
  explicit NodeWith(const F& f) : rule(f) { bind(); }
  ~NodeWith() { backward.release(); }
  void bind() {
    backward.bind(
        &rule, [](void* r, const Tensor& grad, Grads& out) { (**static_cast<std::optional<F>*>(r))(grad, out); },
        [](void* r) { static_cast<std::optional<F>*>(r)->reset(); });
  }
  std::optional<F> rule;
};
/// Links a fresh Node to the inputs that require grad and returns the recorded output (variable.cpp).
Variable attach_node(const char* name, Tensor out, const InputRef* inputs, std::size_t n, std::shared_ptr<Node> node);
}  // namespace detail

/// A tensor saved for backward, with the version it had when saved. get() throws AutogradError
/// (PyTorch's words) when an in-place op changed it since. See Note [Version counter].
class SavedTensor {
 public:
  SavedTensor() = default;
  SavedTensor(const Variable& input);                        // NOLINT: an input of the op
  SavedTensor(const Tensor& output, const char* op_name);    // the op's own output
  const Tensor& get() const;
  bool defined() const { return t_.defined(); }
 private:
  Tensor t_;
  uint64_t version_ = 0;
  const char* producer_ = nullptr;                           // op whose output 0 this is; null for leaves
};

/// Note [Version counter]
/// Each Storage counts the in-place writes to its bytes (every prim that writes in place bumps it).
/// Views and detach() share the Storage, so a write through any alias is seen. A SavedTensor records
/// the count when the forward saves it and checks it when the backward reads it.

/// True when grad mode is on and some input requires grad: an op records a Node only then, and
/// saves tensors for its backward only then.
bool any_requires_grad(const InputRef* inputs, std::size_t n);
inline bool any_requires_grad(std::initializer_list<InputRef> inputs) {
  return any_requires_grad(inputs.begin(), inputs.size());
}
inline bool any_requires_grad(const std::vector<Variable>& inputs) {
  const SmallVector<InputRef, 4> refs(inputs.begin(), inputs.end());
  return any_requires_grad(refs.data(), refs.size());
}

/// Wraps a forward result. Attaches a Node only if grad mode is on and some input requires grad;
/// otherwise returns a plain Variable. This is also how users add their own differentiable ops.
/// backward: any callable as BackwardFn (a lambda, a BackwardFn); it is stored inside the Node.
template <class F>
Variable record(const char* name, Tensor out, const InputRef* inputs, std::size_t n, F&& backward) {
  using Rule = std::decay_t<F>;
  static_assert(std::is_invocable<Rule&, const Tensor&, Grads&>::value,
                "record: the backward rule must be callable as void(const Tensor& grad, Grads& out)");
  if (!any_requires_grad(inputs, n)) return Variable(std::move(out));
  return detail::attach_node(name, std::move(out), inputs, n,
                             std::make_shared<detail::NodeWith<Rule>>(std::forward<F>(backward)));
}
template <class F>
Variable record(const char* name, Tensor out, std::initializer_list<InputRef> inputs, F&& backward) {
  return record(name, std::move(out), inputs.begin(), inputs.size(), std::forward<F>(backward));
}
template <class F>
Variable record(const char* name, Tensor out, const std::vector<Variable>& inputs, F&& backward) {
  const SmallVector<InputRef, 4> refs(inputs.begin(), inputs.end());
  return record(name, std::move(out), refs.data(), refs.size(), std::forward<F>(backward));
}
/// Marks `out` as a view of `base` (shares its storage) for the in-place rules.
Variable mark_view(Variable out, const Variable& base);

namespace autograd {
/// The backward pass (engine/autograd.cpp). Variable::backward calls it.
void run_backward(const Variable& root, const Variable& grad, bool retain_graph);
}  // namespace autograd

}  // namespace tg
