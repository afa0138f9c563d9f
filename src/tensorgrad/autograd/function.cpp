// autograd/function.cpp: libtorch's custom autograd Function (autograd/function.h) on top of
// tg::record: IValue, AutogradContext, and FunctionCall, the non-template part of Function<T>::apply.
#include "tensorgrad/autograd/function.h"

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>

#include "tensorgrad/core/error.h"
#include "tensorgrad/prim/prim.h"

namespace tg {
namespace autograd {

/// Note [Custom Functions on record]
/// A Function<T> call becomes graph Nodes through tg::record, whose Node has one output and one
/// backward rule; libtorch's CppNode has several outputs and calls T::backward once with all their
/// gradients. With one differentiable output the Function is one record() of it. With several,
/// record() makes a hub Node whose output stands for all of them flattened and concatenated (an
/// expanded zero: it is never read), and each output is a record() of its own value with the hub as
/// its one input; an output's rule places its gradient in its slice of a zero vector, the engine sums
/// those into the hub's gradient, and the hub's rule cuts it back into one gradient per output and
/// calls T::backward once. An output that received no gradient keeps a zero slice, which is
/// libtorch's default (materialize_grads); each output's rule also notes that it ran, so that
/// set_materialize_grads(false) can hand undefined Tensors instead. Hence: all differentiable outputs
/// on one device (the hub has one), gradients summed in their common dtype (float64 when they differ).
/// The rules call T::backward under a mutex (it may write the context). In a plain backward grad mode
/// is off and the saved tensors come without history. The rules are generic (Note [Differentiable
/// rules] in autograd/engine.cpp): under create_graph grad mode is on, get_saved_variables() gives
/// each saved tensor its history (an input's edge, an output's own Node, another tensor its handle)
/// and the gradients T::backward returns keep theirs, so a Function whose backward is written with
/// differentiable ops can be differentiated again, as in libtorch. Inputs marked
/// dirty take the Function's Node as their grad_fn, the Node's edge going to a copy of their old
/// history (what ops/inplace.cpp does for add_ and the others).

// ------------------------------------------------------------------------------------------------
// IValue

namespace {
template <class V>
const V& get_kind(const std::variant<std::monostate, bool, int64_t, double, std::string, Tensor, std::vector<int64_t>,
                                     std::vector<double>>& v,
                  const char* want, const char* who, const char* have) {
  const V* p = std::get_if<V>(&v);
  TG_CHECK(p != nullptr, Error, "IValue::", who, ": expected ", want, " but got ", have);
  return *p;
}
}  // namespace

bool IValue::toBool() const { return get_kind<bool>(v_, "Bool", "toBool", tagKind()); }
int64_t IValue::toInt() const { return get_kind<int64_t>(v_, "Int", "toInt", tagKind()); }
double IValue::toDouble() const { return get_kind<double>(v_, "Double", "toDouble", tagKind()); }
const std::string& IValue::toStringRef() const { return get_kind<std::string>(v_, "String", "toStringRef", tagKind()); }
Tensor IValue::toTensor() const { return get_kind<Tensor>(v_, "Tensor", "toTensor", tagKind()); }
std::vector<int64_t> IValue::toIntVector() const {
  return get_kind<std::vector<int64_t>>(v_, "IntList", "toIntVector", tagKind());
}
std::vector<double> IValue::toDoubleVector() const {
  return get_kind<std::vector<double>>(v_, "DoubleList", "toDoubleVector", tagKind());
}

const char* IValue::tagKind() const {
  static const char* const kinds[] = {"None", "Bool", "Int", "Double", "String", "Tensor", "IntList", "DoubleList"};
  return kinds[v_.index()];
}

// ------------------------------------------------------------------------------------------------
// AutogradContext

namespace {
bool contains(const std::vector<const TensorImpl*>& v, const TensorImpl* p) {
  return p != nullptr && std::find(v.begin(), v.end(), p) != v.end();
}
}  // namespace

void AutogradContext::save_for_backward(variable_list to_save) { to_save_ = std::move(to_save); }

void AutogradContext::mark_dirty(const variable_list& inputs) {
  dirty_.clear();
  for (const Tensor& t : inputs) dirty_.push_back(t.impl().get());
}

void AutogradContext::mark_non_differentiable(const variable_list& outputs) {
  non_differentiable_.clear();
  for (const Tensor& t : outputs) non_differentiable_.push_back(t.impl().get());
}

void AutogradContext::set_materialize_grads(bool value) { materialize_grads_ = value; }

variable_list AutogradContext::get_saved_variables() const {
  variable_list out;
  out.reserve(saved_.size());
  for (size_t i = 0; i < saved_.size(); ++i) {
    RawTensor t = saved_[i].get();   // AutogradError when written in place since
    if (!t.defined()) out.emplace_back();
    else if (unpack_) out.push_back(unpack_(i));
    else out.emplace_back(std::move(t));
  }
  return out;
}

bool AutogradContext::needs_input_grad(size_t output_edge_index) const {
  TG_CHECK(output_edge_index < needs_input_grad_.size(), IndexError, "AutogradContext::needs_input_grad: index ",
           output_edge_index, " is out of range for a Function of ", needs_input_grad_.size(), " tensor inputs");
  return needs_input_grad_[output_edge_index];
}

bool AutogradContext::needs_input_grad(std::initializer_list<std::pair<size_t, size_t>> idxs) const {
  for (const auto& range : idxs)
    for (size_t i = range.first; i < range.second; ++i)
      if (needs_input_grad(i)) return true;
  return false;
}

// ------------------------------------------------------------------------------------------------
// The recorded Node(s)

namespace detail {

/// What the rules of one Function call share. See Note [Custom Functions on record].
struct FunctionState {
  struct Output {
    Shape shape;
    DType dtype = kFloat32;
    Device device;
    bool defined = false;
    bool differentiable = false;
    int64_t offset = 0;   // in the hub's gradient
  };
  const char* name = "";
  std::shared_ptr<AutogradContext> ctx;
  FunctionCall::Backward backward;
  std::vector<bool> is_var;
  std::vector<Output> outputs;
  std::vector<bool> received;   // per output: its rule ran since the last backward call (hub only)
  std::mutex mutex;

  std::vector<std::weak_ptr<Node>> output_nodes;   // per output: the Node it was recorded with

  /// Calls T::backward with grads (one per output) and sets the input gradients g asks for. G is Grads
  /// (a plain backward) or VarGrads (create_graph: see Note [Custom Functions on record]).
  template <class G>
  void call(variable_list grads, G& g) {
    constexpr bool kGraph = std::is_same<G, VarGrads>::value;
    std::lock_guard<std::mutex> lock(mutex);
    AutogradContext& c = *ctx;
    c.needs_input_grad_.assign(g.size(), false);
    for (size_t k = 0; k < g.size(); ++k) c.needs_input_grad_[k] = g.need(k);
    for (size_t i = 0; i < outputs.size(); ++i) {
      const Output& o = outputs[i];
      if (!grads[i].defined() && c.materialize_grads_ && o.defined)
        grads[i] = Tensor(prim::full(o.shape, 0.0, o.dtype, o.device));
    }
    std::fill(received.begin(), received.end(), false);
    variable_list result;
    if constexpr (kGraph) {
      struct Unpack {   // saved tensors with their history while T::backward runs, and not after
        AutogradContext& c;
        ~Unpack() { c.unpack_ = nullptr; }
      } unpack{c};
      c.unpack_ = [this, &c, &g](size_t s) -> Tensor {
        const AutogradContext::Origin& o = c.saved_origin_[s];
        if (o.kind == AutogradContext::Origin::kInput) return g.input(o.index, c.saved_[s]);
        if (o.kind == AutogradContext::Origin::kOutput) {
          auto impl = std::make_shared<TensorImpl>();
          impl->data = c.saved_[s].get();
          if (std::shared_ptr<Node> node = output_nodes[o.index].lock()) {
            impl->requires_grad = true;
            impl->grad_fn = std::move(node);
          }
          return Tensor(std::move(impl));
        }
        c.saved_[s].get();   // the version check
        return o.handle.defined() ? o.handle : Tensor(c.saved_[s].get());
      };
      result = backward(&c, std::move(grads));
    } else {
      NoGradGuard no_grad;
      result = backward(&c, std::move(grads));
    }
    const size_t n = is_var.size();
    if (result.size() > n &&
        std::all_of(result.begin() + static_cast<std::ptrdiff_t>(n), result.end(),
                    [](const Tensor& t) { return !t.defined(); }))
      result.resize(n);
    TG_CHECK(result.size() == n, AutogradError, "function ", name,
             " returned an incorrect number of gradients (expected ", n, ", got ", result.size(), ")");
    size_t k = 0;
    for (size_t i = 0; i < n; ++i) {
      if (!is_var[i]) {
        TG_CHECK(!result[i].defined(), AutogradError, "function ", name,
                 " returned a gradient that is defined at position ", i + 1,
                 ", but the corresponding forward input was not a Variable");
        continue;
      }
      if (g.need(k) && result[i].defined()) {
        if constexpr (kGraph) g.set(k, std::move(result[i]));
        else g.set(k, result[i].data());
      }
      ++k;
    }
  }
};

/// grad (one output's gradient) placed at offset in zeros of total elements of dtype: the gradient of
/// the hub of Note [Custom Functions on record] from that output; recorded under create_graph, its
/// own gradient is the slice again.
template <class T>
T embed_in_hub(const T& grad, int64_t offset, int64_t total, DType dtype, const Device& device) {
  if constexpr (std::is_same<T, RawTensor>::value) {
    RawTensor full = prim::full({total}, 0.0, dtype, device);
    prim::copy_(full.narrow(0, offset, grad.numel()).view(grad.shape()), grad);
    return full;
  } else {
    const Shape shape = grad.shape();
    const DType from = grad.dtype();
    return record("FunctionOutput", embed_in_hub(grad.data(), offset, total, dtype, device), {grad},
                  [offset, shape, from](const auto& gg, auto& g) {
                    g.set(0, gg.narrow(0, offset, numel_of(shape)).reshape(shape).to(from));
                  });
  }
}

const char* function_node_name(const std::type_info& type) {
  static std::mutex mutex;
  static std::map<const std::type_info*, std::string> names;   // strings live for the process: Nodes point at them
  std::lock_guard<std::mutex> lock(mutex);
  auto it = names.find(&type);
  if (it == names.end()) {
    int status = 0;
    char* demangled = abi::__cxa_demangle(type.name(), nullptr, nullptr, &status);
    const std::string plain = status == 0 && demangled != nullptr ? demangled : type.name();
    std::free(demangled);
    it = names.emplace(&type, "tg::autograd::CppNode<" + plain + ">").first;
  }
  return it->second.c_str();
}

}  // namespace detail

// ------------------------------------------------------------------------------------------------
// FunctionCall

FunctionCall::FunctionCall(const char* name) : name_(name), ctx_(std::make_shared<AutogradContext>()) {}

void FunctionCall::add(const Tensor& t) {
  is_var_.push_back(true);
  vars_.push_back(t);
}

void FunctionCall::add(const std::optional<Tensor>& t) {
  if (t && t->defined()) add(*t);
  else is_var_.push_back(false);
}

void FunctionCall::add(const std::vector<Tensor>& ts) {
  for (const Tensor& t : ts) add(t);
}

AutogradContext* FunctionCall::begin() {
  executable_ = any_requires_grad(vars_);
  ctx_->needs_input_grad_.clear();
  for (const Tensor& t : vars_) ctx_->needs_input_grad_.push_back(executable_ && t.requires_grad());
  return ctx_.get();
}

variable_list FunctionCall::finish(variable_list outputs, Backward backward) {
  AutogradContext& c = *ctx_;
  // A dirty input must come back as an output (libtorch's rule), and may not be a leaf that wants a gradient.
  for (const TensorImpl* d : c.dirty_) {
    const bool returned =
        std::any_of(outputs.begin(), outputs.end(), [&](const Tensor& o) { return o.impl().get() == d; });
    TG_CHECK(returned, AutogradError, name_, ": some elements marked as dirty during the forward method were not "
             "returned as output. The inputs that are modified inplace must all be outputs of the Function.");
    const bool leaf_wanting_grad = std::any_of(vars_.begin(), vars_.end(), [&](const Tensor& v) {
      return v.impl().get() == d && v.is_leaf() && v.requires_grad();
    });
    TG_CHECK(!(executable_ && leaf_wanting_grad), AutogradError, name_,
             ": a leaf Variable that requires grad has been used in an in-place operation (mark_dirty)");
  }
  auto state = std::make_shared<detail::FunctionState>();
  state->name = name_;
  state->is_var = is_var_;
  state->outputs.resize(outputs.size());
  size_t n_diff = 0;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& o = outputs[i];
    auto& info = state->outputs[i];
    info.defined = o.defined();
    if (!info.defined) continue;
    info.shape = o.shape();
    info.dtype = o.dtype();
    info.device = o.device();
    info.differentiable = executable_ && is_floating(o.dtype()) && !contains(c.non_differentiable_, o.impl().get());
    n_diff += info.differentiable ? 1 : 0;
  }
  // Tensors saved now, with the versions they have after forward (libtorch saves them here too).
  if (executable_ && n_diff > 0)
    for (const Tensor& t : c.to_save_) {
      c.saved_.push_back(t.defined() ? SavedTensor(t) : SavedTensor());
      AutogradContext::Origin o;   // an output (a dirty input is one), an input, or another tensor
      for (size_t i = 0; i < outputs.size() && o.kind == AutogradContext::Origin::kOther; ++i)
        if (t.defined() && outputs[i].impl() == t.impl()) o = {AutogradContext::Origin::kOutput, i, Tensor()};
      for (size_t k = 0; k < vars_.size() && o.kind == AutogradContext::Origin::kOther; ++k)
        if (t.defined() && vars_[k].impl() == t.impl()) o = {AutogradContext::Origin::kInput, k, Tensor()};
      if (o.kind == AutogradContext::Origin::kOther && t.requires_grad()) o.handle = t;
      c.saved_origin_.push_back(std::move(o));
    }
  c.to_save_.clear();

  variable_list result(outputs.size());
  for (size_t i = 0; i < outputs.size(); ++i)   // non-differentiable outputs: fresh handles without history
    if (outputs[i].defined() && !state->outputs[i].differentiable)
      result[i] = contains(c.dirty_, outputs[i].impl().get()) ? outputs[i] : Tensor(outputs[i].data());
  if (n_diff == 0) return result;

  // The edges: a dirty input's go to a copy of its history before forward wrote it.
  variable_list edges = vars_;
  for (Tensor& e : edges)
    if (contains(c.dirty_, e.impl().get())) e = Tensor(std::make_shared<TensorImpl>(*e.impl()));
  state->ctx = ctx_;
  state->backward = std::move(backward);

  // The recorded output i: the dirty input itself (its history replaced) or a fresh Tensor.
  state->output_nodes.resize(outputs.size());
  auto place = [&](size_t i, Tensor recorded) {
    state->output_nodes[i] = recorded.grad_fn();
    if (contains(c.dirty_, outputs[i].impl().get())) {
      outputs[i].impl()->grad_fn = recorded.grad_fn();
      outputs[i].impl()->requires_grad = true;
      result[i] = outputs[i];
    } else {
      result[i] = std::move(recorded);
    }
  };

  if (n_diff == 1) {
    size_t j = 0;
    while (!state->outputs[j].differentiable) ++j;
    place(j, record(name_, outputs[j].data(), edges, [state, j](const auto& grad, auto& g) {
          variable_list grads(state->outputs.size());
          grads[j] = Tensor(grad);
          state->call(std::move(grads), g);
        }));
    return result;
  }

  // Several: a hub Node. See Note [Custom Functions on record].
  DType hub_dtype = kFloat32;
  Device device;
  bool first = true;
  int64_t total = 0;
  for (auto& o : state->outputs) {
    if (!o.differentiable) continue;
    if (first) {
      hub_dtype = o.dtype;
      device = o.device;
      first = false;
    } else {
      if (o.dtype != hub_dtype) hub_dtype = kFloat64;
      TG_CHECK(o.device == device, DeviceError, name_, ": differentiable outputs on different devices (",
               device.str(), " and ", o.device.str(), ") are not supported; return them from separate Functions");
    }
    o.offset = total;
    total += numel_of(o.shape);
  }
  state->received.assign(state->outputs.size(), false);
  const RawTensor hub_value = prim::full({1}, 0.0, hub_dtype, device).expand({total});
  const Tensor hub = record(name_, hub_value, edges, [state](const auto& grad, auto& g) {
    variable_list grads(state->outputs.size());
    for (size_t i = 0; i < state->outputs.size(); ++i) {
      const auto& o = state->outputs[i];
      if (!o.differentiable || (!state->received[i] && !state->ctx->materialize_grads_)) continue;
      grads[i] = Tensor(grad.narrow(0, o.offset, numel_of(o.shape)).reshape(o.shape).to(o.dtype));
    }
    state->call(std::move(grads), g);
  });
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!state->outputs[i].differentiable) continue;
    place(i, record(name_, outputs[i].data(), {hub}, [state, i, total, hub_dtype](const auto& grad, auto& g) {
            const auto& o = state->outputs[i];
            auto full = detail::embed_in_hub(grad, o.offset, total, hub_dtype, o.device);
            {
              std::lock_guard<std::mutex> lock(state->mutex);
              state->received[i] = true;
            }
            g.set(0, std::move(full));
          }));
  }
  return result;
}

}  // namespace autograd
}  // namespace tg
