// nn/checkpoint.cpp: tg::checkpoint and tg::checkpoint_sequential. The forward runs the function once
// to find what it reads, keeps the inputs, and records one "checkpoint" Node; that Node's rule runs
// the function again and backpropagates through it with the partial backward of autograd/engine.cpp
// (Note [Partial backward]); under create_graph the recomputation takes the inputs with their history
// and its gradients keep their graph, so a checkpointed segment can be differentiated twice. The
// random stream's position comes from ops/creation.h.
#include "tensorgrad/nn/checkpoint.h"

#include <string>
#include <unordered_set>
#include <utility>

#include "tensorgrad/ops/autocast.h"
#include "tensorgrad/core/error.h"
#include "tensorgrad/autograd/saved_hooks.h"
#include "tensorgrad/ops/creation.h"

namespace tg {

namespace {

/// Fresh leaves with the inputs' values (same storage) and requires_grad: fn's graph ends at them.
std::vector<Tensor> fresh_leaves(const std::vector<RawTensor>& values, const std::vector<bool>& requires_grad) {
  std::vector<Tensor> out(values.size());
  for (std::size_t i = 0; i < values.size(); ++i)
    if (values[i].defined()) out[i] = Tensor(values[i], requires_grad[i]);
  return out;
}

/// fn(inputs) with the random stream at `at`; the stream is left where it was before the call.
Tensor run_at(const CheckpointFunction& fn, const std::vector<Tensor>& inputs, RngState at) {
  const RngState now = get_rng_state();
  set_rng_state(at);
  Tensor y;
  try {
    y = fn(inputs);
  } catch (...) {
    set_rng_state(now);
    throw;
  }
  set_rng_state(now);
  return y;
}

/// What the checkpointed function reads from outside its own graph, found by walking the graph its
/// first run recorded (iteratively): the leaves that require grad (parameters, or the fresh leaves of
/// the inputs) and the Nodes recorded before it began.
struct Reached {
  std::vector<std::shared_ptr<TensorImpl>> leaves;
  std::vector<std::shared_ptr<Node>> older;
};

Reached reached_from(const Tensor& y, uint64_t first_sequence_nr) {
  Reached r;
  std::unordered_set<const void*> seen;
  std::vector<Node*> stack{y.grad_fn().get()};
  seen.insert(stack.back());
  while (!stack.empty()) {
    Node* node = stack.back();
    stack.pop_back();
    for (const Edge& e : node->next) {
      if (e.leaf) {
        if (seen.insert(e.leaf.get()).second) r.leaves.push_back(e.leaf);
      } else if (e.fn && seen.insert(e.fn.get()).second) {
        if (e.fn->sequence_nr < first_sequence_nr) r.older.push_back(e.fn);
        else stack.push_back(e.fn.get());
      }
    }
  }
  return r;
}

/// The backward rule of a checkpoint Node. Its edges are: the n inputs, then the parameters (leaves)
/// fn read, then the older Nodes it read; keys name them the way the partial backward reports them.
struct CheckpointRule {
  CheckpointFunction fn;
  std::vector<SavedTensor> inputs;            // the inputs' values, version-checked
  std::vector<bool> requires_grad;            // per input
  RngState rng;                               // the random stream before the first run
  bool autocast_on[2] = {false, false};       // the forward's autocast state (CPU, CUDA), restored
  DType autocast_dtype[2] = {kBFloat16, kFloat16};   // for the recomputation
  std::vector<const void*> leaf_keys;         // TensorImpl* of the parameters, edges n ..
  std::vector<uint64_t> leaf_versions;        // their versions at the forward
  std::vector<const void*> older_keys;        // Node* of the older Nodes, after the leaves
  Shape out_shape;
  DType out_dtype;

  /// The inputs' values, refused when an input or a parameter fn reads was written in place since.
  std::vector<RawTensor> checked_values() const {
    const std::size_t n = inputs.size();
    std::vector<RawTensor> values(n);
    for (std::size_t i = 0; i < n; ++i) {
      if (!inputs[i].defined()) continue;
      try {
        values[i] = inputs[i].get();
      } catch (const AutogradError& e) {
        throw AutogradError(detail::cat("checkpoint: input ", i, " of the checkpointed function was modified by an "
                                        "inplace operation after the forward, so backward cannot recompute it: ",
                                        e.what()));
      }
    }
    for (std::size_t j = 0; j < leaf_keys.size(); ++j) {
      const auto* impl = static_cast<const TensorImpl*>(leaf_keys[j]);
      TG_CHECK(impl->data.version() == leaf_versions[j], AutogradError,
               "checkpoint: a leaf the checkpointed function reads (a parameter, ", tensor_meta_str(impl->data),
               ") was modified by an inplace operation after the forward (it is at version ", impl->data.version(),
               "; expected version ", leaf_versions[j], " instead), so the recomputation would not match: call "
               "optimizer.step() after backward, or clone() the tensor");
    }
    return values;
  }

  /// fn run again on ins, its graph recorded, with the forward's random stream and autocast state;
  /// sink->first_sequence_nr marks where the recomputed part begins.
  Tensor recompute(const std::vector<Tensor>& ins, detail::GradientSink& sink) const {
    Tensor y;
    {
      EnableGradGuard grad_on;   // the recomputation records its graph although backward runs with grad off
      // the recomputation runs in the precisions the forward ran in (Note [Autocast op lists])
      amp::AutocastGuard cpu_autocast(Device::cpu(), autocast_dtype[0], autocast_on[0]);
      amp::AutocastGuard cuda_autocast(Device::cuda(), autocast_dtype[1], autocast_on[1]);
      detail::DisableSavedTensorHooksGuard no_hooks;   // the recomputed graph lives only here
      sink.first_sequence_nr = detail::next_sequence_nr();
      y = run_at(fn, ins, rng);
    }
    TG_CHECK(y.defined() && y.shape() == out_shape && y.dtype() == out_dtype, AutogradError,
             "checkpoint: the recomputed output (", y.defined() ? tensor_meta_str(y.data()) : std::string("undefined"),
             ") differs from the forward's (", dtype_name(out_dtype), " ", shape_str(out_shape),
             "); the checkpointed function must compute the same thing when run again");
    return y;
  }

  /// The first-order rule: fn runs on fresh leaves holding the inputs' values; the partial backward
  /// delivers the parameters' gradients to .grad as they come (Note [Partial backward]).
  void operator()(const RawTensor& grad, Grads& g) const {
    const std::size_t n = inputs.size();
    std::vector<Tensor> fresh = fresh_leaves(checked_values(), requires_grad);
    detail::GradientSink sink;
    sink.to_grad = leaf_keys;
    Tensor y = recompute(fresh, sink);
    if (y.grad_fn() && !sink.outside(*y.grad_fn())) {
      std::shared_ptr<Node> root = y.grad_fn();
      y = Tensor();   // the recomputed output's value is not needed: free it before the backward
      detail::run_backward_into(std::move(root), grad, sink);
    } else if (y.requires_grad()) {
      sink.grads.emplace_back(y.grad_fn() ? static_cast<const void*>(y.grad_fn().get()) : y.impl().get(), grad);
    }
    // Deliver each collected gradient to its edge; one that fits no edge means fn read something else.
    std::size_t delivered = 0;
    auto deliver = [&](std::size_t edge, const void* key) {
      if (RawTensor* t = sink.find(key)) {
        ++delivered;
        if (g.need(edge)) g.set(edge, std::move(*t));
      }
    };
    for (std::size_t i = 0; i < n; ++i)
      if (fresh[i].defined()) deliver(i, fresh[i].impl().get());
    for (std::size_t j = 0; j < leaf_keys.size(); ++j) deliver(n + j, leaf_keys[j]);
    for (std::size_t k = 0; k < older_keys.size(); ++k) deliver(n + leaf_keys.size() + k, older_keys[k]);
    TG_CHECK(delivered == sink.grads.size(), AutogradError,
             "checkpoint: the recomputation read a tensor that requires grad which the forward did not read; "
             "the checkpointed function must compute the same thing when run again");
  }

  /// Under create_graph: fn runs on the inputs with their own history, so that the gradients it gives
  /// (collected at the edge of the recomputed part, with their graph) depend on the inputs through it;
  /// each goes to the edge that leads where it was collected.
  void operator()(const Tensor& grad, VarGrads& g) const {
    const std::size_t n = inputs.size();
    const std::vector<RawTensor> values = checked_values();
    std::vector<Tensor> ins(n);
    for (std::size_t i = 0; i < n; ++i)
      if (values[i].defined()) ins[i] = requires_grad[i] ? g.input(i, inputs[i]) : Tensor(values[i]);
    detail::GradientSink sink;
    const Tensor y = recompute(ins, sink);
    if (y.grad_fn() && !sink.outside(*y.grad_fn())) {
      detail::run_backward_into(y.grad_fn(), grad, sink);
    } else if (y.requires_grad()) {   // fn returned an input or an older tensor as it is
      sink.graph_grads.emplace_back(y.grad_fn() ? static_cast<const void*>(y.grad_fn().get()) : y.impl().get(), grad);
    }
    TG_CHECK(detail::deliver_graph_grads(sink, g) == sink.graph_grads.size(), AutogradError,
             "checkpoint: the recomputation read a tensor that requires grad which the forward did not read; "
             "the checkpointed function must compute the same thing when run again");
  }
};

}  // namespace

Tensor checkpoint(CheckpointFunction fn, const std::vector<Tensor>& inputs) {
  TG_CHECK(static_cast<bool>(fn), Error, "checkpoint: the function is empty");
  if (!GradMode::is_enabled()) return fn(inputs);
  const std::size_t n = inputs.size();
  std::vector<RawTensor> values(n);
  std::vector<bool> requires_grad(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (!inputs[i].defined()) continue;
    values[i] = inputs[i].data();
    requires_grad[i] = inputs[i].requires_grad();
  }
  const RngState rng = get_rng_state();
  const std::vector<Tensor> fresh = fresh_leaves(values, requires_grad);
  const uint64_t first = detail::next_sequence_nr();
  Tensor y;
  {
    detail::DisableSavedTensorHooksGuard no_hooks;   // this graph is dropped before returning
    y = fn(fresh);
  }
  TG_CHECK(y.defined(), Error, "checkpoint: the checkpointed function returned an undefined Tensor");
  if (!y.requires_grad()) return y;
  if (!y.grad_fn() || y.grad_fn()->sequence_nr < first) {   // fn recorded nothing: y is an input or older
    for (std::size_t i = 0; i < n; ++i)
      if (fresh[i].defined() && y.impl() == fresh[i].impl()) return inputs[i];
    return y;
  }
  Reached reached = reached_from(y, first);

  CheckpointRule rule;
  rule.fn = std::move(fn);
  rule.requires_grad = requires_grad;
  rule.rng = rng;
  for (int k = 0; k < 2; ++k) {
    const DeviceType type = k == 0 ? DeviceType::CPU : DeviceType::CUDA;
    rule.autocast_on[k] = amp::is_autocast_enabled(type);
    rule.autocast_dtype[k] = amp::get_autocast_dtype(type);
  }
  rule.out_shape = y.shape();
  rule.out_dtype = y.dtype();
  rule.inputs.reserve(n);
  for (std::size_t i = 0; i < n; ++i) rule.inputs.push_back(inputs[i].defined() ? SavedTensor(inputs[i]) : SavedTensor());
  std::vector<Tensor> edges(inputs.begin(), inputs.end());
  for (const auto& leaf : reached.leaves) {
    bool is_input = false;
    for (const Tensor& f : fresh) is_input = is_input || (f.defined() && f.impl() == leaf);
    if (is_input) continue;
    rule.leaf_keys.push_back(leaf.get());
    rule.leaf_versions.push_back(leaf->data.version());
    edges.push_back(Tensor(leaf));
  }
  for (const auto& node : reached.older) rule.older_keys.push_back(node.get());

  RawTensor out = y.data();
  y = Tensor();   // drops the graph the first run recorded, and with it its activations
  const SmallVector<InputRef, 4> refs(edges.begin(), edges.end());
  Tensor result = detail::attach_node("checkpoint", std::move(out), refs.data(), refs.size(),
                                        std::make_shared<detail::NodeWith<CheckpointRule>>(std::move(rule)));
  Node& node = *result.grad_fn();
  for (const auto& older : reached.older) {   // edges to Nodes recorded before fn ran
    Edge e;
    e.fn = older;
    e.shape = older->out_shape;
    e.dtype = older->out_dtype;
    e.device = older->out_device;
    node.next.push_back(std::move(e));
  }
  return result;
}

Tensor checkpoint_sequential(nn::Sequential& seq, int segments, const Tensor& x) {
  const std::vector<std::pair<std::string, nn::Module*>> children = seq.children();
  const int64_t count = static_cast<int64_t>(children.size());
  TG_CHECK(segments >= 1 && segments <= count, Error, "checkpoint_sequential: segments must be between 1 and the ",
           "number of modules (", count, "), got ", segments);
  const int64_t size = count / segments;
  auto run = [children](int64_t begin, int64_t end, const Tensor& in) {
    Tensor h = in;
    for (int64_t i = begin; i < end; ++i) h = (*children[static_cast<std::size_t>(i)].second)(h);
    return h;
  };
  Tensor h = x;
  int64_t begin = 0;
  for (int s = 0; s + 1 < segments; ++s, begin += size) {
    const int64_t end = begin + size;
    h = checkpoint([run, begin, end](const std::vector<Tensor>& in) { return run(begin, end, in[0]); }, {h});
  }
  return run(begin, count, h);   // the last segment's activations are needed at once: not checkpointed
}

}  // namespace tg
