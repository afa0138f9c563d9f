// autograd/engine.cpp: the reverse-mode backward pass, gradient accumulation, iterative graph
// teardown, and the thread-local grad/anomaly modes. Op rules live in ops/; the graph types in
// autograd/tensor.h (see Note [Graph ownership]).
#include <algorithm>
#include <cmath>
#include <mutex>
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
};
thread_local SweepContext t_sweep;
}  // namespace

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
  } else if (prim::has_internal_overlap(impl.grad->data) || impl.grad->data.storage() == g.storage()) {
    // a grad the user set to an expanded view, or one aliasing the incoming gradient: adding in place
    // would write one element several times (Note [Overlapping writes]); replace it with the sum
    impl.grad->data = prim::add(impl.grad->data, g);
  } else {
    prim::binary_(BinaryOp::Add, impl.grad->data, g, "backward");   // accumulates into .grad
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

void sweep(const std::shared_ptr<Node>& root_fn, RawTensor seed, bool retain_graph, detail::GradientSink* sink);

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

/// Runs the gradient hooks of table on g (its tensor's complete gradient, replaced in place) in
/// registration order, each on the previous one's result; checks every replacement, as PyTorch's
/// check_single_result.
void run_grad_hooks(const detail::TensorHooks* table, RawTensor& g) {
  if (table == nullptr || table->grad.empty()) return;
  const auto hooks = table->grad.snapshot();
  for (std::size_t k = 0; k < hooks.size(); ++k) {
    Tensor r = (*hooks[k])(Tensor(g));
    if (!r.defined()) continue;   // the hook only looked
    TG_CHECK(r.shape() == g.shape(), ShapeError, "hook 'register_hook #", k, "' has changed the size of value (was ",
             shape_str(g.shape()), ", got ", shape_str(r.shape()), ")");
    TG_CHECK(r.dtype() == g.dtype(), DTypeError, "hook 'register_hook #", k, "' has changed the type of value (was ",
             dtype_name(g.dtype()), ", got ", dtype_name(r.dtype()), ")");
    TG_CHECK(r.device() == g.device(), DeviceError, "hook 'register_hook #", k,
             "' has changed the device of value (was ", g.device(), ", got ", r.device(), ")");
    g = r.data();
  }
}

/// A leaf's complete gradient g: its gradient hooks, accumulation into .grad, then its post-accumulate
/// hooks. See Note [Hook order].
void finish_leaf(const std::shared_ptr<TensorImpl>& leaf, RawTensor g) {
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

}  // namespace

void autograd::run_backward(const Tensor& root, const Tensor& grad, bool retain_graph) {
  TG_CHECK(root.defined(), AutogradError, "backward: called on an undefined Tensor");
  TG_CHECK(root.requires_grad(), AutogradError,
           "element 0 of tensors does not require grad and does not have a grad_fn");
  RawTensor seed;
  if (grad.defined()) {
    TG_CHECK(grad.shape() == root.shape(), ShapeError, "backward: grad of shape ", shape_str(grad.shape()),
             " does not match the output's shape ", shape_str(root.shape()));
    prim::check_same_device("backward", root.data(), grad.data());
    prim::check_same_dtype("backward", root.data(), grad.data());
    seed = grad.data();
  } else {
    TG_CHECK(root.numel() == 1, AutogradError, "grad can be implicitly created only for scalar outputs (the output has shape ",
             shape_str(root.shape()), "; pass a gradient of that shape to backward)");
    seed = prim::full(root.shape(), 1.0, root.dtype(), root.device());
  }
  NoGradGuard no_grad;   // rules call prims only, but a user's custom rule must not record either
  const std::shared_ptr<Node>& root_fn = root.grad_fn();
  if (!root_fn) {   // backward() on a leaf: dL/dL = seed
    finish_leaf(root.impl(), std::move(seed));
    return;
  }
  sweep(root_fn, std::move(seed), retain_graph, nullptr);
}

void detail::run_backward_into(std::shared_ptr<Node> root, RawTensor seed, GradientSink& sink) {
  TG_CHECK(root != nullptr, AutogradError, "run_backward_into: no root Node");
  NoGradGuard no_grad;
  std::sort(sink.to_grad.begin(), sink.to_grad.end());
  sink.parent = t_sweep.sink;                             // the sweep whose rule called this one, if any
  sink.in_whole_backward = t_sweep.running && t_sweep.sink == nullptr;
  sweep(root, std::move(seed), /*retain_graph=*/false, &sink);
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

namespace {

/// Steps 1 and 2 of backward from root_fn with dL/d(root) = seed. With a sink, see Note [Partial backward].
void sweep(const std::shared_ptr<Node>& root_fn, RawTensor seed, bool retain_graph, detail::GradientSink* sink) {
  struct Enter {   // this sweep is t_sweep while it runs, the enclosing one again after (exceptions too)
    SweepContext saved = t_sweep;
    explicit Enter(detail::GradientSink* s) { t_sweep = SweepContext{true, s}; }
    ~Enter() { t_sweep = saved; }
  } enter(sink);
  // 1. Index every Node of this graph and count its consumers inside it (iteratively: graphs can
  //    be 1e6 deep). Leaves with hooks are indexed and counted too (Note [Hook order]).
  NodeIndex index;
  index.insert(root_fn.get());
  std::vector<int> dependencies{0};
  std::size_t hooked_leaves = 0;
  {
    std::vector<Node*> stack{root_fn.get()};
    while (!stack.empty()) {
      Node* node = stack.back();
      stack.pop_back();
      for (const Edge& e : node->next) {
        if (e.fn) {
          if (sink != nullptr && sink->outside(*e.fn)) continue;   // Note [Partial backward]
          const auto [i, added] = index.insert(e.fn.get());
          if (added) {
            dependencies.push_back(0);
            stack.push_back(e.fn.get());
          }
          ++dependencies[i];
        } else if (e.leaf && sink == nullptr && leaf_has_hooks(*e.leaf)) {   // a sink takes every leaf's gradient
          const auto [i, added] = index.insert(e.leaf.get());
          if (added) {
            dependencies.push_back(0);
            ++hooked_leaves;
          }
          ++dependencies[i];
        }
      }
    }
  }

  // 2. Sweep, newest first. The queue owns its Nodes so that none dies while queued. pending[i] is
  //    the gradient summed so far for Node (or hooked leaf) i; it is moved out (freed) when it runs.
  std::vector<RawTensor> pending(index.size());
  pending[0] = std::move(seed);
  std::vector<std::shared_ptr<Node>> ready{root_fn};   // a heap under LaterFirst
  std::vector<std::pair<int, const std::shared_ptr<TensorImpl>*>> ready_leaves;   // completed by this node
  const LaterFirst later_first;
  const bool anomaly = autograd::AnomalyMode::is_enabled();
  const autograd::BackwardObserver* observer = autograd::BackwardTraceGuard::current();
  while (!ready.empty()) {
    std::pop_heap(ready.begin(), ready.end(), later_first);
    std::shared_ptr<Node> node = std::move(ready.back());
    ready.pop_back();
    RawTensor g = std::move(pending[index.at(node.get())]);
    Grads out(node->next.size());
    if (g.defined()) {   // no gradient reached this node: its inputs get none from it
      RuleRun run(*node, retain_graph);   // throws when the rule was (or is being) freed
      if (const detail::TensorHooks* hooks = node->hooks.get()) run_grad_hooks(hooks, g);   // Note [Hook order]
      if (observer != nullptr) (*observer)(*node, g);
      if (auto kept = node->retained.lock()) accumulate(*kept, g);
      for (std::size_t i = 0; i < node->next.size(); ++i) out.needed()[i] = node->next[i].needs_grad();
      {
        memory::detail::OpScope op(node->name, /*backward=*/true);   // Note [Live tensor report]
        node->backward(g, out);
      }
      if (!retain_graph) run.release_rule();   // frees the saved tensors now
    }
    for (std::size_t i = 0; i < node->next.size(); ++i) {
      const Edge& e = node->next[i];
      RawTensor gi = std::move(out.values()[i]);
      if (gi.defined() && e.needs_grad()) {
        if (anomaly && has_non_finite(gi))
          throw AutogradError(detail::cat("Function '", node->name, "' returned nan values in its ", i,
                                          "th output (anomaly detection: the backward of ", node->name,
                                          " produced NaN or Inf for input ", i, ")"));
        if (gi.shape() != e.shape) gi = prim::sum_to(gi, e.shape);   // undo broadcasting
        if (gi.dtype() != e.dtype) gi = gi.to(e.dtype);   // PyTorch casts a gradient to its input's dtype
        TG_CHECK(gi.device() == e.device, AutogradError, "Function '", node->name, "' returned an invalid gradient at index ",
                 i, " - expected device ", e.device, " but got ", gi.device());
      }
      if (sink != nullptr && (e.leaf || (e.fn && sink->outside(*e.fn)))) {   // Note [Partial backward]
        const void* key = e.fn ? static_cast<const void*>(e.fn.get()) : e.leaf.get();
        if (!gi.defined()) continue;
        if (e.leaf && sink->straight_to_grad(*e.leaf)) {
          accumulate(*e.leaf, std::move(gi));
          continue;
        }
        if (RawTensor* p = sink->find(key)) add_gradient(*p, gi);
        else sink->grads.emplace_back(key, std::move(gi));
        continue;
      }
      const int j = e.fn ? index.at(e.fn.get()) : (e.leaf && hooked_leaves != 0 ? index.find_index(e.leaf.get()) : -1);
      if (j >= 0) {
        if (gi.defined()) {
          RawTensor& p = pending[j];
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
        accumulate(*e.leaf, std::move(gi));
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
