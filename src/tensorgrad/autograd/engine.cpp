// autograd/engine.cpp: the reverse-mode backward pass, gradient accumulation, iterative graph
// teardown, and the thread-local grad/anomaly modes. Op rules live in ops/; the graph types in
// autograd/tensor.h (see Note [Graph ownership]).
#include <algorithm>
#include <cmath>
#include <mutex>
#include <optional>
#include <type_traits>
#include <thread>
#include <utility>
#include <vector>

#include "tensorgrad/autograd/tools.h"
#include "tensorgrad/core/error.h"
#include "tensorgrad/core/memory.h"
#include "tensorgrad/prim/prim.h"
#include "tensorgrad/autograd/tensor.h"

namespace tg {

namespace {
thread_local bool t_grad_enabled = true;
thread_local bool t_anomaly_enabled = false;

/// The innermost sweep running on this thread (a rule may start a partial one inside another), so
/// that a partial backward knows where its caller sends leaf gradients (Note [Partial backward]).
struct SweepContext {
  bool running = false;
  detail::GradientSink* sink = nullptr;
  bool capturing = false;   // an autograd::grad sweep: no gradient may go to a .grad
};
thread_local SweepContext t_sweep;
thread_local bool t_in_backward_rule = false;
}  // namespace

bool detail::in_backward_rule() { return t_in_backward_rule; }
detail::BackwardRuleScope::BackwardRuleScope() : prev_(t_in_backward_rule) { t_in_backward_rule = true; }
detail::BackwardRuleScope::~BackwardRuleScope() { t_in_backward_rule = prev_; }

bool GradMode::is_enabled() { return t_grad_enabled; }
void GradMode::set_enabled(bool enabled) { t_grad_enabled = enabled; }
bool autograd::AnomalyMode::is_enabled() { return t_anomaly_enabled; }
void autograd::AnomalyMode::set_enabled(bool enabled) { t_anomaly_enabled = enabled; }

// Note [Gradient slots]
// ~~~~~~~~~~~~~~~~~~~~~
// A leaf's gradient slot (TensorImpl::grad) is read and replaced under one mutex,
// detail::grad_mutex(): by backward's accumulation (leaves shared by graphs that run backward on
// several threads), by Tensor::grad(), set_grad() and zero_grad(). So zero_grad() or set_grad() on
// one thread while another thread's backward reaches the same leaf never frees a gradient that is
// being written: the gradient lands either in the slot that was dropped or in the new one. What is
// not protected, here as in PyTorch, is two threads writing one gradient *tensor*:
// optimizer.zero_grad(/*set_to_none=*/false) fills it in place while a backward may be adding into
// it, and the values are then unspecified (no memory is corrupted: each holder keeps the tensor
// alive). Training code resets gradients between backward passes, not during them.
std::mutex& detail::grad_mutex() {
  static std::mutex m;
  return m;
}

namespace {

/// Adds g into impl.grad. The first gradient is stolen when nobody else holds it (and it is a plain
/// contiguous tensor), else copied, so that later in-place accumulation never writes into a tensor
/// that another leaf or the caller also holds.
void accumulate(TensorImpl& impl, RawTensor g) {
  std::lock_guard<std::mutex> lock(detail::grad_mutex());
  if (!impl.grad || !impl.grad->data.defined()) {
    if (g.storage().use_count() > 1 || !g.is_contiguous() || g.offset() != 0 ||
        g.storage()->nbytes() != static_cast<std::size_t>(g.numel()) * dtype_size(g.dtype()))
      g = g.clone();
    impl.grad = std::make_shared<TensorImpl>();
    impl.grad->data = std::move(g);
  } else if (impl.grad->requires_grad || prim::has_internal_overlap(impl.grad->data) ||
             impl.grad->data.storage() == g.storage()) {
    // a grad with a graph (create_graph), which the user may hold and must not change; a grad the user
    // set to an expanded view, or one aliasing the incoming gradient: adding in place would write one
    // element several times (Note [Overlapping writes]); replace it with the sum
    auto sum = std::make_shared<TensorImpl>();
    sum->data = prim::add(impl.grad->data, g);
    impl.grad = std::move(sum);
  } else {
    prim::binary_(BinaryOp::Add, impl.grad->data, g, "backward");   // accumulates into .grad
  }
}

/// The same under create_graph: .grad becomes a Tensor with a graph, and a second gradient is added
/// out of place (recorded), as in PyTorch.
void accumulate(TensorImpl& impl, const Tensor& g) {
  if (!g.requires_grad()) return accumulate(impl, g.data());
  std::lock_guard<std::mutex> lock(detail::grad_mutex());
  if (!impl.grad || !impl.grad->data.defined()) {
    if (g.is_leaf()) {   // a gradient that is a leaf requiring grad (a grad_outputs passed through): itself
      impl.grad = g.impl();
      return;
    }
    auto fresh = std::make_shared<TensorImpl>();   // a handle of its own on the same value and history
    fresh->data = g.data();
    fresh->requires_grad = true;
    fresh->grad_fn = g.impl()->grad_fn;
    impl.grad = std::move(fresh);
  } else {
    impl.grad = Tensor(impl.grad).add(g).impl();
  }
}

/// sum += g for two gradients of one tensor arriving at a Node (fan-out). In place when sum is the only
/// handle on its storage and a plain contiguous tensor of g's shape and dtype (a gradient the engine
/// made: no other gradient, saved tensor or caller sees it), else a fresh sum: one allocation and one
/// pass fewer per fan-out, which a transformer has several of per block (residuals, q/k/v).
void add_gradient(RawTensor& sum, const RawTensor& g) {
  if (sum.storage().use_count() == 1 && sum.is_contiguous() && sum.shape() == g.shape() && sum.dtype() == g.dtype() &&
      sum.device() == g.device() && sum.storage() != g.storage()) {
    prim::binary_(BinaryOp::Add, sum, g, "backward");
  } else {
    sum = prim::add(sum, g);
  }
}
/// Under create_graph: a recorded sum.
void add_gradient(Tensor& sum, const Tensor& g) { sum = sum.add(g); }

// Note [View gradients]
// ~~~~~~~~~~~~~~~~~~~~~
// The gradient of a view (narrow, select, basic indexing; the pieces of split, chunk and unbind) is
// zeros of the input's shape with the view's gradient in the viewed positions. A tensor read through
// k views (a recurrent layer's input projection, one narrow per time step; q, k, v chunked from one
// projection) would get k full tensors of zeros, and k full additions to sum them. Instead a view's
// first-order rule hands the engine the small gradient and the view (Grads::set_view); when the
// input's running sum at its producer is a plain contiguous tensor only the engine holds, the
// engine adds the gradient into that view of the sum in place: one full tensor for the k views and
// k small additions. Otherwise (the first gradient to arrive, a leaf, a partial backward's boundary,
// anomaly mode, a sum someone else holds) the zeros are made as before. Every element is summed in
// the order the gradients arrive either way, so the result's bits are those of the full additions.

/// Whether a view gradient v for edge e may be added in place into sum, the running gradient of
/// e's producer: a contiguous tensor of the input's shape, dtype and device, that only the engine holds.
bool owns_view_sum(const RawTensor& sum, const Grads::ViewGrad& v, const Edge& e) {
  return sum.defined() && sum.storage().use_count() == 1 && sum.is_contiguous() && sum.offset() == 0 &&
         sum.shape() == v.in_shape && v.in_shape == e.shape && sum.dtype() == v.grad.dtype() &&
         sum.dtype() == e.dtype && sum.device() == v.grad.device() && sum.storage() != v.grad.storage();
}

bool has_non_finite(const RawTensor& t) {
  if (!is_floating(t.dtype())) return false;
  const RawTensor host = t.to(Device::cpu()).contiguous();
  return dispatch_dtype(host.dtype(), [&](auto z) {
    using T = decltype(z);
    const T* p = host.data<T>();
    for (int64_t i = 0; i < host.numel(); ++i)
      if (!std::isfinite(static_cast<double>(p[i]))) return true;
    return false;
  });
}

const char* kSecondBackward =
    "Trying to backward through the graph a second time (or directly access saved tensors after they have "
    "already been freed). Saved intermediate values of the graph are freed when you call .backward(). Specify "
    "retain_graph=true if you need to backward through the graph a second time or if you need to access saved "
    "tensors after calling backward.";

/// Dense indices 0, 1, 2, ... for the Nodes one backward reaches, in order of discovery, so that its
/// per-Node state (consumers left, gradient so far) lives in plain vectors; leaves with hooks get
/// indices too (Note [Hook order]). Open addressing keyed by address: it allocates once per doubling,
/// where std::unordered_map allocated once per Node.
class NodeIndex {
 public:
  NodeIndex() : slots_(64) {}
  std::size_t size() const { return size_; }
  /// n's index, giving it the next one (size() before the call) when new; .second is true then.
  std::pair<int, bool> insert(const void* n) {
    if (2 * (size_ + 1) > slots_.size()) grow();   // load factor <= 1/2
    Slot& s = find(n);
    if (s.node != nullptr) return {s.index, false};
    s = Slot{n, static_cast<int>(size_++)};
    return {s.index, true};
  }
  int at(const void* n) const { return const_cast<NodeIndex*>(this)->find(n).index; }   // n was inserted
  /// n's index, or -1 when it was never inserted.
  int find_index(const void* n) const { return const_cast<NodeIndex*>(this)->find(n).index; }

 private:
  struct Slot {
    const void* node = nullptr;
    int index = -1;
  };
  Slot& find(const void* n) {   // n's slot, or the empty slot where it belongs
    const std::size_t mask = slots_.size() - 1;
    std::size_t i = (reinterpret_cast<std::uintptr_t>(n) >> 4) * 0x9E3779B97F4A7C15ull >> 32 & mask;
    while (slots_[i].node != nullptr && slots_[i].node != n) i = (i + 1) & mask;
    return slots_[i];
  }
  void grow() {
    std::vector<Slot> old(slots_.size() * 2);
    old.swap(slots_);
    for (const Slot& s : old)
      if (s.node != nullptr) find(s.node) = s;
  }
  std::vector<Slot> slots_;   // a power of two
  std::size_t size_ = 0;
};

// Note [Concurrent backward]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// Several threads may backward through one graph at once. With retain_graph a run only reads the
// rule and its saved tensors, so any number of such runs share a Node (a count in Node::run_state).
// Without it the run frees the rule, so it claims the Node for itself: a thread that finds the rule
// claimed by a freeing run, or already freed, raises PyTorch's "backward through the graph a second
// time" error instead of calling a rule that another thread is destroying. A freeing run waits for
// retaining runs in progress to finish. Every backward starts at the root, so of several threads
// that backward one graph without retain_graph exactly one gets past it; the others raise.
class RuleRun {
 public:
  static constexpr uint32_t kExclusive = 1u << 30, kReleased = 1u << 31;
  RuleRun(Node& n, bool retain_graph) : node_(n), retain_(retain_graph) {
    uint32_t s = n.run_state.load(std::memory_order_acquire);
    for (;;) {
      if ((s & (kExclusive | kReleased)) != 0) throw AutogradError(kSecondBackward);
      if (!retain_ && s != 0) {   // retaining runs in progress: the rule is freed after them
        std::this_thread::yield();
        s = n.run_state.load(std::memory_order_acquire);
        continue;
      }
      if (n.run_state.compare_exchange_weak(s, retain_ ? s + 1 : kExclusive, std::memory_order_acq_rel,
                                            std::memory_order_acquire))
        break;
    }
    if (!n.backward) {   // a Node whose rule was never bound: nothing to call
      undo();
      throw AutogradError(kSecondBackward);
    }
  }
  RuleRun(const RuleRun&) = delete;
  RuleRun& operator=(const RuleRun&) = delete;
  /// Frees the rule and its saved tensors (retain_graph = false), after it ran.
  void release_rule() {
    node_.backward.release();
    released_ = true;
  }
  ~RuleRun() { undo(); }

 private:
  void undo() {
    if (done_) return;
    done_ = true;
    if (retain_) node_.run_state.fetch_sub(1, std::memory_order_acq_rel);
    else node_.run_state.store(released_ ? kReleased : 0, std::memory_order_release);
  }
  Node& node_;
  const bool retain_;
  bool released_ = false;
  bool done_ = false;
};

/// Where a backward starts: a Node with the gradient of its output, or a leaf with its own.
template <class G>
struct Root {
  std::shared_ptr<Node> fn;
  std::shared_ptr<TensorImpl> leaf;
  G seed;
};

/// [begin, end) of an array of Roots, for range-for.
template <class G>
struct RootRange {
  const Root<G>* b;
  const Root<G>* e;
  const Root<G>* begin() const { return b; }
  const Root<G>* end() const { return e; }
};

/// The tensors autograd::grad returns gradients for instead of accumulating into .grad: a non-leaf
/// by its grad_fn (whose one output it is), a leaf by its TensorImpl. See Note [Differentiable rules].
template <class G>
struct Capture {
  std::vector<const void*> keys;
  std::vector<G> grads;   // one per key; undefined while none arrived
  int find(const void* key) const {
    for (std::size_t i = 0; i < keys.size(); ++i)
      if (keys[i] == key) return static_cast<int>(i);
    return -1;
  }
  void add(int i, G g) {
    if (!grads[i].defined()) grads[i] = std::move(g);
    else add_gradient(grads[i], g);
  }
};

template <class G>
void sweep(const Root<G>* roots, std::size_t n_roots, bool retain_graph, detail::GradientSink* sink, Capture<G>* capture);

struct LaterFirst {   // newest node first (highest sequence number), as PyTorch does
  bool operator()(const std::shared_ptr<Node>& a, const std::shared_ptr<Node>& b) const {
    return a->sequence_nr < b->sequence_nr;
  }
};

}  // namespace

// Note [Hook lists]
// ~~~~~~~~~~~~~~~~~
// Tensor hooks live in a table made on first registration (detail::LazyHooks, autograd/hooks.h): a
// leaf's on its TensorImpl, a non-leaf's on its grad_fn Node, so that a tensor or Node without hooks
// costs one null pointer and backward checks it with one atomic load. The table is created under
// detail::hook_mutex() and then published; it is never replaced or freed before its owner. Each list
// in it has its own mutex, held only to add, remove or copy out (snapshot) its entries, never while a
// hook runs: like the gradient slots (Note [Gradient slots]), a list may be changed on one thread while
// another thread's backward reads it, and the backward calls the hooks as they were when it took the
// snapshot. A hook may itself register or remove hooks (removing one that is about to run in the same
// snapshot does not stop it). Whether a leaf takes the hook path is decided when backward indexes the
// graph: hooks registered on a leaf while a backward runs take effect from the next backward. The
// handles hold weak references to the lists, so they outlive their tensors (and modules) harmlessly.
//
// Note [Hook order]
// ~~~~~~~~~~~~~~~~~
// Backward calls hooks in PyTorch's order (tests/test_hooks.cpp checks a log against one recorded from
// PyTorch). A non-leaf's register_hook hooks run once its gradient is complete (summed over every use),
// when its grad_fn is taken from the ready queue: after the second-time check, before retain_grad()
// keeps the gradient and before the rule runs, so that both see the replaced gradient. A leaf with
// hooks is indexed like a Node (PyTorch's AccumulateGrad): its incoming gradients are summed and, once
// the last one has arrived, its gradient hooks run on the sum, the result accumulates into .grad, and
// then its post-accumulate-grad hooks run with .grad complete. PyTorch gives AccumulateGrad the highest
// priority, so this happens right after the Node that delivered the last gradient, before any other
// Node; leaves completed by the same Node go in input order. A leaf without hooks accumulates each
// incoming gradient as it arrives. Hooks run only when a gradient reaches their tensor (a branch that
// delivers none calls none), under no-grad, on the thread that runs backward.

namespace {

Tensor as_tensor(const RawTensor& g) { return Tensor(g); }
const Tensor& as_tensor(const Tensor& g) { return g; }
const RawTensor& raw(const RawTensor& g) { return g; }
const RawTensor& raw(const Tensor& g) { return g.data(); }
void set_from(RawTensor& g, const Tensor& r) { g = r.data(); }
void set_from(Tensor& g, const Tensor& r) { g = r; }
RawTensor sum_to_shape(const RawTensor& g, const Shape& shape) { return prim::sum_to(g, shape); }
Tensor sum_to_shape(const Tensor& g, const Shape& shape) { return g.sum_to_size(shape); }

/// Runs the gradient hooks of table on g (its tensor's complete gradient, replaced in place) in
/// registration order, each on the previous one's result; checks every replacement, as PyTorch's
/// check_single_result. Under create_graph the hooks see (and may return) gradients with a graph.
template <class G>
void run_grad_hooks(const detail::TensorHooks* table, G& g) {
  if (table == nullptr || table->grad.empty()) return;
  const auto hooks = table->grad.snapshot();
  for (std::size_t k = 0; k < hooks.size(); ++k) {
    Tensor r = (*hooks[k])(as_tensor(g));
    if (!r.defined()) continue;   // the hook only looked
    TG_CHECK(r.shape() == g.shape(), ShapeError, "hook 'register_hook #", k, "' has changed the size of value (was ",
             shape_str(g.shape()), ", got ", shape_str(r.shape()), ")");
    TG_CHECK(r.dtype() == g.dtype(), DTypeError, "hook 'register_hook #", k, "' has changed the type of value (was ",
             dtype_name(g.dtype()), ", got ", dtype_name(r.dtype()), ")");
    TG_CHECK(r.device() == g.device(), DeviceError, "hook 'register_hook #", k,
             "' has changed the device of value (was ", g.device(), ", got ", r.device(), ")");
    set_from(g, r);
  }
}

/// A leaf's complete gradient g: its gradient hooks, accumulation into .grad, then its post-accumulate
/// hooks. See Note [Hook order].
template <class G>
void finish_leaf(const std::shared_ptr<TensorImpl>& leaf, G g) {
  const detail::TensorHooks* table = leaf->hooks.get();
  run_grad_hooks(table, g);
  accumulate(*leaf, std::move(g));
  if (table == nullptr || table->post_accumulate.empty()) return;
  Tensor param(leaf);
  for (const auto& hook : table->post_accumulate.snapshot()) (*hook)(param);
}

/// True when backward must take the hook path for this leaf (Note [Hook order]).
bool leaf_has_hooks(const TensorImpl& leaf) {
  const detail::TensorHooks* table = leaf.hooks.get();
  return table != nullptr && (!table->grad.empty() || !table->post_accumulate.empty());
}

/// Checks one (output, gradient) pair of a backward or grad call and returns where the sweep starts:
/// its Node (or leaf) and grad, or ones for a one-element output without one. `what` names the call.
template <class G>
Root<G> make_root(const Tensor& root, const Tensor& grad, std::size_t i, const char* what) {
  TG_CHECK(root.defined(), AutogradError, what, ": output ", i, " is an undefined Tensor");
  TG_CHECK(root.requires_grad(), AutogradError, "element ", i,
           " of tensors does not require grad and does not have a grad_fn");
  Root<G> r;
  if (root.is_leaf()) r.leaf = root.impl();
  else r.fn = root.impl()->grad_fn;
  if (grad.defined()) {
    TG_CHECK(grad.shape() == root.shape(), ShapeError, what, ": grad of shape ", shape_str(grad.shape()),
             " does not match the shape ", shape_str(root.shape()), " of output ", i);
    prim::check_same_device(what, root.data(), grad.data());
    prim::check_same_dtype(what, root.data(), grad.data());
    if constexpr (std::is_same<G, Tensor>::value) r.seed = grad;
    else r.seed = grad.data();
    return r;
  }
  TG_CHECK(root.numel() == 1, AutogradError, "grad can be implicitly created only for scalar outputs (output ", i,
           " has shape ", shape_str(root.shape()), "; pass a gradient of that shape)");
  r.seed = G(prim::full(root.shape(), 1.0, root.dtype(), root.device()));
  return r;
}

/// The roots of a backward from roots with gradients grads (checked), as the sweep takes them.
template <class G>
std::vector<Root<G>> make_roots(const std::vector<Tensor>& roots, const std::vector<Tensor>& grads, const char* what) {
  TG_CHECK(grads.empty() || grads.size() == roots.size(), AutogradError, what, ": got ", grads.size(),
           " gradients for ", roots.size(), " outputs");
  std::vector<Root<G>> out;
  out.reserve(roots.size());
  for (std::size_t i = 0; i < roots.size(); ++i)
    out.push_back(make_root<G>(roots[i], grads.empty() ? Tensor() : grads[i], i, what));
  return out;
}

}  // namespace

void autograd::run_backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& grads, bool retain_graph,
                            bool create_graph) {
  TG_CHECK(!roots.empty(), AutogradError, "backward: no tensors to differentiate");
  if (create_graph) {   // the rules' ops are recorded: the gradients get a graph
    EnableGradGuard enable;
    const std::vector<Root<Tensor>> r = make_roots<Tensor>(roots, grads, "backward");
    sweep<Tensor>(r.data(), r.size(), retain_graph, nullptr, nullptr);
    return;
  }
  const std::vector<Root<RawTensor>> r = make_roots<RawTensor>(roots, grads, "backward");
  NoGradGuard no_grad;   // rules call prims only, but a user's custom rule must not record either
  sweep<RawTensor>(r.data(), r.size(), retain_graph, nullptr, nullptr);
}

void autograd::run_backward(const Tensor& root, const Tensor& grad, bool retain_graph, bool create_graph) {
  if (create_graph) {
    EnableGradGuard enable;
    const Root<Tensor> r = make_root<Tensor>(root, grad, 0, "backward");
    sweep<Tensor>(&r, 1, retain_graph, nullptr, nullptr);
    return;
  }
  const Root<RawTensor> r = make_root<RawTensor>(root, grad, 0, "backward");   // no vectors: the common call
  NoGradGuard no_grad;
  sweep<RawTensor>(&r, 1, retain_graph, nullptr, nullptr);
}

std::vector<Tensor> autograd::grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                                   const std::vector<Tensor>& grad_outputs, std::optional<bool> retain_graph,
                                   bool create_graph, bool allow_unused) {
  TG_CHECK(!outputs.empty(), AutogradError, "grad: no outputs to differentiate");
  TG_CHECK(!inputs.empty(), AutogradError, "grad requires non-empty inputs.");
  const bool retain = retain_graph.value_or(create_graph);
  std::vector<const void*> keys;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& x = inputs[i];
    TG_CHECK(x.defined(), AutogradError, "grad: input ", i, " is an undefined Tensor");
    TG_CHECK(x.requires_grad(), AutogradError, "One of the differentiated Tensors (input ", i,
             ") does not require grad");
    keys.push_back(x.is_leaf() ? static_cast<const void*>(x.impl().get()) : x.impl()->grad_fn.get());
  }
  auto run = [&](auto tag) {
    using G = decltype(tag);
    std::vector<Root<G>> roots = make_roots<G>(outputs, grad_outputs, "grad");
    Capture<G> capture;
    capture.keys = keys;
    capture.grads.resize(keys.size());
    // a root that is itself an input gets its seed; the sweep adds what flows to it from the others
    std::vector<Root<G>> node_roots;
    for (Root<G>& r : roots) {
      const void* key = r.leaf ? static_cast<const void*>(r.leaf.get()) : r.fn.get();
      if (r.leaf) {
        const int c = capture.find(key);
        if (c >= 0) capture.add(c, r.seed);
      } else {
        node_roots.push_back(std::move(r));
      }
    }
    if (!node_roots.empty()) sweep<G>(node_roots.data(), node_roots.size(), retain, nullptr, &capture);
    std::vector<Tensor> out(keys.size());
    for (std::size_t i = 0; i < keys.size(); ++i) {
      TG_CHECK(capture.grads[i].defined() || allow_unused, AutogradError, "One of the differentiated Tensors (input ",
               i, ") appears to not have been used in the graph. Set allow_unused=true if this is the desired behavior.");
      if (capture.grads[i].defined()) {
        if constexpr (std::is_same<G, Tensor>::value) out[i] = capture.grads[i];
        else out[i] = Tensor(capture.grads[i]);
      }
    }
    return out;
  };
  if (create_graph) {
    EnableGradGuard enable;
    return run(Tensor());
  }
  NoGradGuard no_grad;
  return run(RawTensor());
}

void detail::run_backward_into(std::shared_ptr<Node> root, RawTensor seed, GradientSink& sink) {
  TG_CHECK(root != nullptr, AutogradError, "run_backward_into: no root Node");
  NoGradGuard no_grad;
  std::sort(sink.to_grad.begin(), sink.to_grad.end());
  sink.parent = t_sweep.sink;                             // the sweep whose rule called this one, if any
  sink.in_whole_backward = t_sweep.running && t_sweep.sink == nullptr && !t_sweep.capturing;
  const Root<RawTensor> r{std::move(root), nullptr, std::move(seed)};
  sweep<RawTensor>(&r, 1, /*retain_graph=*/false, &sink, nullptr);
}

void detail::run_backward_into(std::shared_ptr<Node> root, Tensor seed, GradientSink& sink) {
  TG_CHECK(root != nullptr, AutogradError, "run_backward_into: no root Node");
  EnableGradGuard grad_on;   // create_graph: the rules record the gradients' graph
  const Root<Tensor> r{std::move(root), nullptr, std::move(seed)};
  sweep<Tensor>(&r, 1, /*retain_graph=*/true, &sink, nullptr);   // the gradients' graph reads the saved tensors
}

std::size_t detail::deliver_graph_grads(GradientSink& sink, VarGrads& g) {
  std::size_t delivered = 0;
  for (std::size_t e = 0; e < g.size(); ++e) {
    const Tensor h = g.history(e);   // the leaf, or a Tensor whose grad_fn is the producer
    if (!h.defined()) continue;
    const void* key = h.grad_fn() ? static_cast<const void*>(h.grad_fn().get()) : h.impl().get();
    if (Tensor* t = sink.find_graph(key); t != nullptr && t->defined()) {
      ++delivered;
      if (g.need(e)) g.set(e, std::move(*t));
      *t = Tensor();   // an edge repeated (one tensor passed twice) gets it once
    }
  }
  return delivered;
}

Tensor* detail::GradientSink::find_graph(const void* key) {
  for (auto& kv : graph_grads)
    if (kv.first == key) return &kv.second;
  return nullptr;
}

bool detail::GradientSink::outside(const Node& n) const { return n.sequence_nr < first_sequence_nr; }

bool detail::GradientSink::straight_to_grad(const TensorImpl& leaf) const {
  if (leaf_has_hooks(leaf) || !std::binary_search(to_grad.begin(), to_grad.end(), static_cast<const void*>(&leaf)))
    return false;
  return parent != nullptr ? parent->straight_to_grad(leaf) : in_whole_backward;
}

RawTensor* detail::GradientSink::find(const void* key) {
  for (auto& kv : grads)
    if (kv.first == key) return &kv.second;
  return nullptr;
}

// Note [Differentiable rules]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A rule has a first-order form, void(const RawTensor& grad, Grads&) on prims, a differentiable form,
// void(const Tensor& grad, VarGrads&) on the Tensor ops of ops/ops.h (PyTorch's derivatives.yaml
// formulas), or both: most rules are written once as a generic lambda, [](const auto& grad, auto& g),
// whose arithmetic goes through ops/rules.h (prims for RawTensors, ops for Tensors) and whose views use
// the methods both types share; `if constexpr (first_order_v<decltype(g)>)` lets a rule keep a fused
// kernel for its first-order form (the unary ops, softmax, linear, layer_norm, cross_entropy). A
// backward without create_graph runs the first-order form: no Tensor handles, nothing recorded, as fast
// as a prim rule (a rule with only the differentiable form runs it on plain Tensors under no-grad).
// With create_graph (backward(..., create_graph=true), autograd::grad) the engine sweeps Tensors with
// grad mode on, so the differentiable form's ops record the gradient's own graph, whose leaves are the
// op's inputs (VarGrads::input gives a saved input back with the history of the edge it came through)
// and the op itself for a saved output (VarGrads::output); the sums of fan-out, the sum back to a
// broadcast input's shape and the cast to its dtype are recorded ops too. A rule with only a first-order
// form still runs there (under no-grad), and each gradient it returns gets a Node that raises
// AutogradError naming the op if a later backward reaches it: PyTorch's "derivative ... is not
// implemented" for a double backward, raised only when the second derivative is actually needed. Which
// ops are differentiable twice is listed, and enforced, by tests/ops_coverage.h (gradgradcheck entries).
//
// autograd::grad returns gradients instead of accumulating them: its inputs are captured as the sweep
// reaches them (a leaf by its TensorImpl, a non-leaf by its grad_fn, the Node whose one output it
// is), .grad is never touched, and only Nodes from which some input can be reached run their rules.

/// Under create_graph, what a first-order rule returned for one input, as a Tensor whose Node refuses
/// to be differentiated (Note [Differentiable rules]): it depends on the incoming gradient and on the
/// op's inputs, so it requires grad whenever they do.
Tensor detail::refusing_double_backward(const std::shared_ptr<Node>& node, const Tensor& g, RawTensor value) {
  std::vector<Tensor> inputs{g};
  for (const Edge& e : node->next)
    if (e.needs_grad()) inputs.push_back(detail::with_history(value, e));
  const char* name = node->name;
  return record(name, std::move(value), inputs, [name](const RawTensor&, Grads&) {
    throw AutogradError(detail::cat("the derivative of '", name, "' is not implemented twice: its backward is not "
                                    "differentiable, so a gradient computed with create_graph=true through ",
                                    name, " cannot be differentiated again (docs/autograd.md lists the ops that can)"));
  });
}

namespace {

/// Runs node's rule on g into out: the rule as written, or, under create_graph, a first-order rule
/// wrapped as refusing_double_backward says.
void call_rule(const std::shared_ptr<Node>& node, const RawTensor& g, Grads& out) {
  if (node->backward.first_order()) return node->backward(g, out);   // a prim rule, or a generic one's RawTensor form
  detail::BackwardRuleScope in_rule;   // autocast leaves the rule's ops alone
  VarGrads v(out.size(), &node, /*create_graph=*/false);
  v.needed() = out.needed();
  node->backward(Tensor(g), v);
  for (std::size_t i = 0; i < out.size(); ++i)
    if (v.values()[i].defined()) out.set(i, v.values()[i].data());
}
void call_rule(const std::shared_ptr<Node>& node, const Tensor& g, BasicGrads<Tensor>& out) {
  if (node->backward.differentiable()) {
    detail::BackwardRuleScope in_rule;   // autocast leaves the rule's ops alone
    VarGrads v(out.size(), &node, /*create_graph=*/true);
    v.needed() = out.needed();
    node->backward(g, v);
    for (std::size_t i = 0; i < out.size(); ++i) out.set(i, std::move(v.values()[i]));
    return;
  }
  Grads r(out.size());
  r.needed() = out.needed();
  {
    NoGradGuard no_grad;
    node->backward(g.data(), r);
  }
  for (std::size_t i = 0; i < out.size(); ++i)
    if (RawTensor v = r.take(i); v.defined()) out.set(i, detail::refusing_double_backward(node, g, std::move(v)));
}

/// Steps 1 and 2 of backward from roots. With a sink, see Note [Partial backward]; with a capture,
/// Note [Differentiable rules]. G is RawTensor, or Tensor under create_graph.
template <class G>
void sweep(const Root<G>* roots, std::size_t n_roots, bool retain_graph, detail::GradientSink* sink, Capture<G>* capture) {
  const Root<G>* const roots_end = roots + n_roots;
  constexpr bool kGraph = std::is_same<G, Tensor>::value;
  struct Enter {   // this sweep is t_sweep while it runs, the enclosing one again after (exceptions too)
    SweepContext saved = t_sweep;
    Enter(detail::GradientSink* s, bool capturing) { t_sweep = SweepContext{true, s, capturing}; }
    ~Enter() { t_sweep = saved; }
  } enter(sink, capture != nullptr);
  // 0. Leaf roots: backward() on a leaf gives dL/dL = seed.
  for (const Root<G>& r : RootRange<G>{roots, roots_end})
    if (r.leaf) finish_leaf(r.leaf, r.seed);
  // 1. Index every Node of this graph and count its consumers inside it (iteratively: graphs can
  //    be 1e6 deep). Leaves with hooks are indexed and counted too (Note [Hook order]).
  NodeIndex index;
  std::vector<int> dependencies;
  std::vector<Node*> nodes;   // by index, kept only for a capture (which indexes no leaves)
  std::vector<Node*> stack;
  for (const Root<G>& r : RootRange<G>{roots, roots_end}) {
    if (!r.fn) continue;
    if (index.insert(r.fn.get()).second) {
      dependencies.push_back(0);
      if (capture != nullptr) nodes.push_back(r.fn.get());
      stack.push_back(r.fn.get());
    }
  }
  std::size_t hooked_leaves = 0;
  while (!stack.empty()) {
    Node* node = stack.back();
    stack.pop_back();
    for (const Edge& e : node->next) {
      if (e.fn) {
        if (sink != nullptr && sink->outside(*e.fn)) continue;   // Note [Partial backward]
        const auto [i, added] = index.insert(e.fn.get());
        if (added) {
          dependencies.push_back(0);
          if (capture != nullptr) nodes.push_back(e.fn.get());
          stack.push_back(e.fn.get());
        }
        ++dependencies[i];
      } else if (e.leaf && sink == nullptr && capture == nullptr && leaf_has_hooks(*e.leaf)) {
        const auto [i, added] = index.insert(e.leaf.get());   // a sink or a capture takes every leaf's gradient
        if (added) {
          dependencies.push_back(0);
          ++hooked_leaves;
        }
        ++dependencies[i];
      }
    }
  }
  // With a capture, only Nodes from which an input can be reached run (inputs have older sequence
  // numbers than their consumers, so one pass in creation order settles it).
  std::vector<char> runs;
  if (capture != nullptr) {
    runs.assign(nodes.size(), 0);
    std::vector<int> order(nodes.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
    std::sort(order.begin(), order.end(), [&](int a, int b) { return nodes[a]->sequence_nr < nodes[b]->sequence_nr; });
    for (int i : order) {
      for (const Edge& e : nodes[i]->next) {
        const void* key = e.fn ? static_cast<const void*>(e.fn.get()) : e.leaf.get();
        if (key == nullptr) continue;
        const int j = e.fn ? index.find_index(key) : -1;
        if (capture->find(key) >= 0 || (j >= 0 && runs[j])) runs[i] = 1;
      }
    }
  }

  // 2. Sweep, newest first. The queue owns its Nodes so that none dies while queued. pending[i] is
  //    the gradient summed so far for Node (or hooked leaf) i; it is moved out (freed) when it runs.
  std::vector<G> pending(index.size());
  std::vector<std::shared_ptr<Node>> ready;   // a heap under LaterFirst
  const LaterFirst later_first;
  for (const Root<G>& r : RootRange<G>{roots, roots_end}) {
    if (!r.fn) continue;
    const int i = index.at(r.fn.get());
    G& p = pending[i];
    const bool first = !p.defined();
    if (first) p = r.seed;
    else add_gradient(p, r.seed);
    if (first && dependencies[i] == 0) {
      ready.push_back(r.fn);
      std::push_heap(ready.begin(), ready.end(), later_first);
    }
  }
  std::vector<std::pair<int, const std::shared_ptr<TensorImpl>*>> ready_leaves;   // completed by this node
  const bool anomaly = autograd::AnomalyMode::is_enabled();
  const autograd::BackwardObserver* observer = autograd::BackwardTraceGuard::current();
  while (!ready.empty()) {
    std::pop_heap(ready.begin(), ready.end(), later_first);
    std::shared_ptr<Node> node = std::move(ready.back());
    ready.pop_back();
    const int at = index.at(node.get());
    G g = std::move(pending[at]);
    std::conditional_t<kGraph, BasicGrads<Tensor>, Grads> out(node->next.size());
    if (g.defined()) {   // no gradient reached this node: its inputs get none from it
      const bool run_rule = runs.empty() || runs[at] != 0;
      std::optional<RuleRun> run;
      if (run_rule) run.emplace(*node, retain_graph);   // throws when the rule was (or is being) freed
      if (const detail::TensorHooks* hooks = node->hooks.get()) run_grad_hooks(hooks, g);   // Note [Hook order]
      if (capture != nullptr) {
        const int c = capture->find(node.get());
        if (c >= 0) capture->add(c, g);
      } else if (auto kept = node->retained.lock()) {
        accumulate(*kept, g);
      }
      if (run_rule) {
        if (observer != nullptr) (*observer)(*node, raw(g));
        for (std::size_t i = 0; i < node->next.size(); ++i) out.needed()[i] = node->next[i].needs_grad();
        {
          memory::detail::OpScope op(node->name, /*backward=*/true);   // Note [Live tensor report]
          call_rule(node, g, out);
        }
        if (!retain_graph) run->release_rule();   // frees the saved tensors now
      }
    }
    for (std::size_t i = 0; i < node->next.size(); ++i) {
      const Edge& e = node->next[i];
      G gi = std::move(out.values()[i]);
      if constexpr (!kGraph) {
        if (const Grads::ViewGrad* v = out.view(i)) {   // Note [View gradients]
          const bool to_pending = e.fn && e.needs_grad() && !anomaly && (sink == nullptr || !sink->outside(*e.fn));
          RawTensor* sum = to_pending ? &pending[index.at(e.fn.get())] : nullptr;
          if (sum != nullptr && owns_view_sum(*sum, *v, e)) {
            prim::binary_(BinaryOp::Add, v->view_of(*sum), v->grad, "backward");   // gi stays undefined
          } else {
            gi = v->materialize();
          }
        }
      }
      if (gi.defined() && e.needs_grad()) {
        if (anomaly && has_non_finite(raw(gi)))
          throw AutogradError(detail::cat("Function '", node->name, "' returned nan values in its ", i,
                                          "th output (anomaly detection: the backward of ", node->name,
                                          " produced NaN or Inf for input ", i, ")"));
        if (gi.shape() != e.shape) gi = sum_to_shape(gi, e.shape);   // undo broadcasting
        if (gi.dtype() != e.dtype) gi = gi.to(e.dtype);   // PyTorch casts a gradient to its input's dtype
        TG_CHECK(gi.device() == e.device, AutogradError, "Function '", node->name, "' returned an invalid gradient at index ",
                 i, " - expected device ", e.device, " but got ", gi.device());
      }
      if (sink != nullptr && (e.leaf || (e.fn && sink->outside(*e.fn)))) {   // Note [Partial backward]
        const void* key = e.fn ? static_cast<const void*>(e.fn.get()) : e.leaf.get();
        if (!gi.defined()) continue;
        if constexpr (kGraph) {   // under create_graph every gradient is collected, with its graph
          if (Tensor* p = sink->find_graph(key)) add_gradient(*p, gi);
          else sink->graph_grads.emplace_back(key, std::move(gi));
        } else {
          if (e.leaf && sink->straight_to_grad(*e.leaf)) {
            accumulate(*e.leaf, std::move(gi));
            continue;
          }
          if (RawTensor* p = sink->find(key)) add_gradient(*p, gi);
          else sink->grads.emplace_back(key, std::move(gi));
        }
        continue;
      }
      const int j = e.fn ? index.at(e.fn.get()) : (e.leaf && hooked_leaves != 0 ? index.find_index(e.leaf.get()) : -1);
      if (j >= 0) {
        if (gi.defined()) {
          G& p = pending[j];
          if (!p.defined()) p = std::move(gi);
          else add_gradient(p, gi);   // fan-out: gradients from several consumers add up
        }
        if (--dependencies[j] == 0) {
          if (e.fn) {
            ready.push_back(e.fn);
            std::push_heap(ready.begin(), ready.end(), later_first);
          } else if (pending[j].defined()) {
            ready_leaves.emplace_back(j, &e.leaf);
          }
        }
      } else if (e.leaf && gi.defined()) {
        if (capture == nullptr) {
          accumulate(*e.leaf, std::move(gi));
        } else {
          const int c = capture->find(e.leaf.get());
          if (c >= 0) capture->add(c, std::move(gi));   // autograd::grad leaves .grad alone
        }
      }
    }
    for (const auto& [j, leaf] : ready_leaves) finish_leaf(*leaf, std::move(pending[j]));   // Note [Hook order]
    ready_leaves.clear();
  }
}

}  // namespace

// Note [Iterative graph teardown]
// Dropping the last handle to a long chain would recurse once per Node (~Node -> ~Edge -> ~Node ...)
// and overflow the stack around 1e5 nodes. Instead, every parent this Node solely owns is moved into
// a heap-allocated stack and freed in a loop (PyTorch: deleteNode in function.cpp).
Node::~Node() {
  std::vector<std::shared_ptr<Node>> orphans;
  auto take_parents = [&orphans](Node& n) {
    for (Edge& e : n.next)
      if (e.fn && e.fn.use_count() == 1) orphans.push_back(std::move(e.fn));
    n.next.clear();
  };
  take_parents(*this);
  while (!orphans.empty()) {
    std::shared_ptr<Node> n = std::move(orphans.back());
    orphans.pop_back();
    take_parents(*n);   // n dies at the end of this iteration, parent-less
  }
}

}  // namespace tg
