// autograd/tensor.cpp: Tensor's non-op members, SavedTensor, record() and printing.
// The backward pass is in autograd/engine.cpp; the ops (and their Tensor methods) in ops/.
#include "tensorgrad/autograd/tensor.h"

#include <any>
#include <cctype>
#include <cstring>
#include <atomic>

#include "tensorgrad/core/error.h"
#include "tensorgrad/prim/prim.h"
#include "tensorgrad/autograd/saved_hooks.h"

namespace tg {

namespace {
std::atomic<uint64_t> g_sequence{0};

std::shared_ptr<TensorImpl> need_impl(const std::shared_ptr<TensorImpl>& impl, const char* what) {
  TG_CHECK(impl != nullptr && impl->data.defined(), Error, what, ": the Tensor is undefined");
  return impl;
}
}  // namespace

Tensor::Tensor(RawTensor data, bool requires_grad) : impl_(std::make_shared<TensorImpl>()) {
  impl_->data = std::move(data);
  if (requires_grad) set_requires_grad(true);
}

const RawTensor& Tensor::data() const {
  TG_CHECK(impl_ != nullptr, Error, "the Tensor is undefined (default-constructed)");
  return impl_->data;
}

void Tensor::set_data(const RawTensor& t) {
  need_impl(impl_, "set_data");
  impl_->data = t;
}

double Tensor::item() const { return data().item(); }

template <class T>
std::vector<T> Tensor::to_vector() const {
  constexpr DType want = dtype_of<T>();
  const RawTensor host = data().to(Device::cpu()).to(want).contiguous();
  const T* p = host.data<T>();
  return std::vector<T>(p, p + host.numel());
}
template std::vector<float> Tensor::to_vector<float>() const;
template std::vector<double> Tensor::to_vector<double>() const;
template std::vector<int64_t> Tensor::to_vector<int64_t>() const;
template std::vector<int32_t> Tensor::to_vector<int32_t>() const;
template std::vector<int8_t> Tensor::to_vector<int8_t>() const;
template std::vector<uint8_t> Tensor::to_vector<uint8_t>() const;
template std::vector<bool> Tensor::to_vector<bool>() const;
template std::vector<Half> Tensor::to_vector<Half>() const;
template std::vector<BFloat16> Tensor::to_vector<BFloat16>() const;

Tensor& Tensor::set_requires_grad(bool r) {
  need_impl(impl_, "set_requires_grad");
  TG_CHECK(is_leaf() || r, AutogradError,
           "you can only change requires_grad flags of leaf variables. If you want to use a computed variable in "
           "a subgraph that doesn't require differentiation use var_no_grad = var.detach().");
  TG_CHECK(!r || is_floating(impl_->data.dtype()), AutogradError,
           "only Tensors of floating point dtype can require gradients (got ", dtype_name(impl_->data.dtype()), ")");
  impl_->requires_grad = r;
  return *this;
}

std::shared_ptr<RecordedNode> Tensor::grad_fn() const {
  // Every Node in a TensorImpl is one record() made, a RecordedNode (attach_node takes no other).
  return impl_ ? std::static_pointer_cast<RecordedNode>(impl_->grad_fn) : nullptr;
}

namespace {
/// "log_softmax" -> "LogSoftmax".
std::string camel_case(const char* op) {
  std::string out;
  bool upper = true;
  for (const char* c = op; *c != '\0'; ++c) {
    if (*c == '_') { upper = true; continue; }
    out += upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(*c))) : *c;
    upper = false;
  }
  return out;
}
}  // namespace

std::string RecordedNode::name() const {
  // The ops whose PyTorch backward node is named after another kernel than the op (PyTorch 2.x).
  static const std::pair<const char*, const char*> kKernel[] = {
      {"matmul", "Mm"}, {"linear", "Addmm"}, {"cross_entropy", "NllLoss"}, {"conv2d", "Convolution"},
      {"max_pool2d", "MaxPool2DWithIndices"}, {"to", "ToCopy"}, {"reshape", "View"}, {"narrow", "Slice"},
      {"index", "Slice"}, {"dropout", "Mul"}, {"contiguous", "Clone"}, {"layer_norm", "NativeLayerNorm"},
      {"batch_norm", "NativeBatchNorm"}, {"group_norm", "NativeGroupNorm"}, {"t", "T"},
      {"conv_transpose2d", "Convolution"}, {"relu6", "Hardtanh"}, {"selu", "Elu"}, {"square", "Pow"}};
  const char* op = Node::name;
  // a custom Function's node keeps its C++ name, as libtorch's CppNode<T>
  if (std::strchr(op, ':') != nullptr) return op;
  for (const auto& [ours, theirs] : kKernel)
    if (std::strcmp(op, ours) == 0) return std::string(theirs) + "Backward0";
  return camel_case(op) + "Backward0";
}

Tensor Tensor::grad() const {
  if (!impl_) return Tensor();
  std::lock_guard<std::mutex> lock(detail::grad_mutex());
  return impl_->grad ? Tensor(impl_->grad) : Tensor();
}

void Tensor::set_grad(const Tensor& g) {
  need_impl(impl_, "set_grad");
  if (!g.defined()) {
    std::lock_guard<std::mutex> lock(detail::grad_mutex());
    impl_->grad.reset();
    return;
  }
  TG_CHECK(g.shape() == shape(), ShapeError, "set_grad: assigned grad has shape ", shape_str(g.shape()),
           " but the Tensor has shape ", shape_str(shape()));
  TG_CHECK(g.dtype() == dtype(), DTypeError, "set_grad: assigned grad has data of a different type (",
           dtype_name(g.dtype()), " for a ", dtype_name(dtype()), " Tensor)");
  TG_CHECK(g.device() == device(), DeviceError, "set_grad: assigned grad has data located on a different device (",
           g.device(), " for a Tensor on ", device(), ")");
  // Backward would accumulate into the Tensor's own values, and an optimizer would read the
  // gradient it is overwriting (Note [Overlapping writes], prim/checks.cpp).
  TG_CHECK(g.data().storage() != data().storage(), AutogradError,
           "set_grad: can't assign Tensor as its own grad (the assigned grad shares memory with the Tensor)");
  auto slot = std::make_shared<TensorImpl>();
  slot->data = g.data();
  std::lock_guard<std::mutex> lock(detail::grad_mutex());
  impl_->grad = std::move(slot);
}

void Tensor::zero_grad() {
  if (!impl_) return;
  std::shared_ptr<TensorImpl> old;   // released after the lock: its storage goes back to the cache
  std::lock_guard<std::mutex> lock(detail::grad_mutex());
  old.swap(impl_->grad);
}

void Tensor::retain_grad() {
  need_impl(impl_, "retain_grad");
  TG_CHECK(impl_->requires_grad, AutogradError, "can't retain_grad on Tensor that has requires_grad=false");
  if (is_leaf()) return;   // leaves keep their grad anyway
  impl_->retains_grad = true;
  impl_->grad_fn->retained = impl_;
}

Tensor Tensor::detach() const { return Tensor(data()); }

namespace {
const char* kNoGradHook = "cannot register a hook on a tensor that doesn't require gradient";
}  // namespace

// A non-leaf's hooks go on its grad_fn, where backward meets its gradient; a leaf's on its
// TensorImpl. See Note [Hook lists] and Note [Hook order] in autograd/engine.cpp.
RemovableHandle Tensor::add_grad_hook(detail::GradHook hook) {
  need_impl(impl_, "register_hook");
  TG_CHECK(impl_->requires_grad, AutogradError, "register_hook: ", kNoGradHook);
  TG_CHECK(hook != nullptr, Error, "register_hook: the hook is empty");
  detail::LazyHooks<detail::TensorHooks>& lazy = impl_->grad_fn ? impl_->grad_fn->hooks : impl_->hooks;
  const std::shared_ptr<detail::TensorHooks>& table = lazy.get_or_create();
  const uint64_t id = table->grad.add(std::move(hook));
  return RemovableHandle(std::shared_ptr<detail::HookRegistry>(table, &table->grad), id);
}

RemovableHandle Tensor::register_post_accumulate_grad_hook(detail::PostAccumulateGradHook hook) {
  need_impl(impl_, "register_post_accumulate_grad_hook");
  TG_CHECK(is_leaf(), AutogradError,
           "register_post_accumulate_grad_hook: post accumulate grad hooks cannot be registered on non-leaf tensors");
  TG_CHECK(impl_->requires_grad, AutogradError, "register_post_accumulate_grad_hook: ", kNoGradHook);
  TG_CHECK(hook != nullptr, Error, "register_post_accumulate_grad_hook: the hook is empty");
  const std::shared_ptr<detail::TensorHooks>& table = impl_->hooks.get_or_create();
  const uint64_t id = table->post_accumulate.add(std::move(hook));
  return RemovableHandle(std::shared_ptr<detail::HookRegistry>(table, &table->post_accumulate), id);
}

void Tensor::backward(const Tensor& grad, std::optional<bool> retain_graph, bool create_graph) const {
  TG_CHECK(defined(), AutogradError, "backward: called on an undefined Tensor");
  autograd::run_backward(*this, grad, retain_graph.value_or(create_graph), create_graph);
}

void autograd::backward(const std::vector<Tensor>& tensors, const std::vector<Tensor>& grad_tensors,
                        std::optional<bool> retain_graph, bool create_graph) {
  run_backward(tensors, grad_tensors, retain_graph.value_or(create_graph), create_graph);
}

std::ostream& operator<<(std::ostream& os, const Tensor& v) {
  if (!v.defined()) return os << "Tensor(undefined)";
  std::vector<std::string> suffixes;   // PyTorch's last suffix: grad_fn, else requires_grad
  if (!v.is_leaf()) suffixes.push_back(std::string("grad_fn=<") + v.impl()->grad_fn->name + ">");
  else if (v.requires_grad()) suffixes.push_back("requires_grad=true");
  return os << detail::tensor_repr(v.data(), suffixes);
}

// ------------------------------------------------------------------------------------------------

/// A tensor packed by saved-tensor hooks: what pack returned, the hooks that unpack it, and enough
/// of the original to check the unpacked tensor and the version (while its storage lives elsewhere).
struct SavedTensor::Packed {
  std::shared_ptr<const detail::SavedTensorHooks> hooks;
  std::any payload;
  std::weak_ptr<Storage> storage;
  Shape shape;
  DType dtype;
};

SavedTensor::SavedTensor(const Tensor& input)
    : t_(input.defined() ? input.data() : RawTensor()), version_(t_.version()),
      producer_(!input.is_leaf() ? input.impl()->grad_fn->name : nullptr) {
  if (t_.defined() && detail::current_saved_tensor_hooks() != nullptr) pack();
}

SavedTensor::SavedTensor(const RawTensor& output, const char* op_name)
    : t_(output), version_(output.version()), producer_(op_name) {
  if (t_.defined() && detail::current_saved_tensor_hooks() != nullptr) pack();
}

void SavedTensor::pack() {
  auto p = std::make_shared<Packed>();
  p->hooks = detail::current_saved_tensor_hooks_handle();
  p->storage = t_.storage();
  p->shape = t_.shape();
  p->dtype = t_.dtype();
  p->payload = p->hooks->pack(t_);
  packed_ = std::move(p);
  t_ = RawTensor();   // the graph holds what pack returned, not the tensor
}

RawTensor SavedTensor::get() const {
  RawTensor t = t_;
  uint64_t now = t_.version();
  if (packed_) {
    t = packed_->hooks->unpack(packed_->payload);
    TG_CHECK(t.defined() && t.shape() == packed_->shape && t.dtype() == packed_->dtype, AutogradError,
             "saved tensor unpack hook: returned ", t.defined() ? tensor_meta_str(t) : std::string("an undefined tensor"),
             " for a saved ", dtype_name(packed_->dtype), " ", shape_str(packed_->shape),
             " tensor; unpack must give back the tensor pack was given");
    const std::shared_ptr<Storage> original = packed_->storage.lock();
    now = original ? original->version() : version_;   // freed everywhere: nobody can have written it
  }
  if (t.defined() && now != version_) {
    std::string which = producer_ ? detail::cat(", which is output 0 of ", producer_, ",") : std::string();
    throw AutogradError(detail::cat(
        "one of the variables needed for gradient computation has been modified by an inplace operation: ",
        tensor_meta_str(t), which, " is at version ", now, "; expected version ", version_,
        " instead. Hint: the backward of an op reads a tensor you changed in place afterwards; use an "
        "out-of-place op (x = x + y instead of x.add_(y)) or .clone() it first."));
  }
  return t;
}

// ------------------------------------------------------------------------------------------------

bool any_requires_grad(const InputRef* inputs, std::size_t n) {
  if (!GradMode::is_enabled()) return false;
  for (std::size_t i = 0; i < n; ++i)
    if (inputs[i].get().requires_grad()) return true;
  return false;
}

Tensor detail::attach_node(const char* name, RawTensor out, const InputRef* inputs, std::size_t n,
                             std::shared_ptr<RecordedNode> node) {
  node->Node::name = name;
  node->sequence_nr = g_sequence.fetch_add(1, std::memory_order_relaxed);
  node->next.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    const Tensor& in = inputs[i].get();
    if (!in.requires_grad()) continue;
    Edge& e = node->next[i];
    if (in.impl()->grad_fn) e.fn = in.impl()->grad_fn;
    else e.leaf = in.impl();
    e.shape = in.shape();
    e.dtype = in.dtype();
    e.device = in.device();
  }
  node->out_shape = out.shape();
  node->out_dtype = out.dtype();
  node->out_device = out.device();
  auto impl = std::make_shared<TensorImpl>();
  impl->data = std::move(out);
  impl->requires_grad = true;
  impl->grad_fn = std::move(node);
  return Tensor(std::move(impl));
}

Tensor detail::with_history(RawTensor data, const Edge& e) {
  if (e.leaf) return Tensor(e.leaf);   // the leaf itself, so that a gradient reaching it accumulates there
  if (!e.fn) return Tensor(std::move(data));
  auto impl = std::make_shared<TensorImpl>();
  impl->data = std::move(data);
  impl->requires_grad = true;
  impl->grad_fn = e.fn;
  return Tensor(std::move(impl));
}

Tensor VarGrads::input(std::size_t i, const SavedTensor& s) const {
  if (!s.defined()) return Tensor();
  if (!create_graph_) return Tensor(s.get());
  return detail::with_history(s.get(), (*node_)->next[i]);
}

void Grads::set_view(std::size_t i, RawTensor grad, Shape in_shape, std::function<RawTensor(const RawTensor&)> view_of) {
  values()[i] = RawTensor();
  for (ViewGrad& v : views_)
    if (v.input == i) {
      v = ViewGrad{i, std::move(grad), std::move(in_shape), std::move(view_of)};
      return;
    }
  views_.push_back(ViewGrad{i, std::move(grad), std::move(in_shape), std::move(view_of)});
}

RawTensor Grads::ViewGrad::materialize() const {
  RawTensor full = prim::full(in_shape, 0.0, grad.dtype(), grad.device());
  prim::copy_(view_of(full), grad);
  return full;
}

RawTensor Grads::input(std::size_t, const SavedTensor& s) const { return s.get(); }
RawTensor Grads::output(const SavedTensor& s) const { return s.get(); }

Tensor VarGrads::first_order_only(RawTensor value, const Tensor& grad) const {
  if (!create_graph_) return Tensor(std::move(value));
  return detail::refusing_double_backward(*node_, grad, std::move(value));
}

Tensor VarGrads::history(std::size_t i) const {
  const Edge& e = (*node_)->next[i];
  if (!e.needs_grad()) return Tensor();
  return detail::with_history(prim::full({1}, 0.0, e.dtype, e.device).expand(e.shape), e);
}

Tensor VarGrads::output(const SavedTensor& s) const {
  if (!s.defined()) return Tensor();
  if (!create_graph_) return Tensor(s.get());
  auto impl = std::make_shared<TensorImpl>();
  impl->data = s.get();
  impl->requires_grad = true;
  impl->grad_fn = *node_;
  return Tensor(std::move(impl));
}

uint64_t detail::next_sequence_nr() { return g_sequence.load(std::memory_order_relaxed); }

Tensor mark_view(Tensor out, const Tensor& base) {
  if (out.impl() && (base.requires_grad() || (base.impl() && base.impl()->is_view))) out.impl()->is_view = true;
  return out;
}

}  // namespace tg
