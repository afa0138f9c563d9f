/// \file
/// autograd/tools.h: tools for checking and seeing the graph: gradcheck (float64 central
/// differences), to_dot (Graphviz text). DetectAnomalyGuard is in autograd/grad_mode.h.
#pragma once
#include <functional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tensorgrad/autograd/tensor.h"

namespace tg {
namespace autograd {

/// Tolerances of gradcheck(), PyTorch's defaults: an element passes when
/// |analytical - numerical| <= atol + rtol * |numerical|.
struct GradcheckOptions {
  double eps = 1e-6;   ///< The finite-difference step: (f(x + eps) - f(x - eps)) / (2 eps).
  double atol = 1e-5;   ///< The absolute tolerance.
  double rtol = 1e-3;   ///< The relative tolerance, times |numerical|.
};

/// Compares backward's gradient of every input that requires grad with central differences.
/// A non-scalar output y is checked through sum(y * w) with fixed, distinct weights w. Inputs must
/// be float64 CPU tensors without overlapping (expanded) elements. Returns true, or throws
/// AutogradError naming the input, the worst element, both values and the tolerance.
bool gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& fn, const std::vector<Tensor>& inputs,
               const GradcheckOptions& options = {});

/// Checks second derivatives (torch.autograd.gradgradcheck): the gradient of fn's output, weighted by
/// fixed float64 grad_outputs v, with respect to the inputs that require grad, computed by
/// autograd::grad with create_graph, is itself gradchecked with respect to those inputs and v. So every
/// op fn uses must have a differentiable rule (Note [Differentiable rules] in autograd/engine.cpp), and
/// the rules' second derivatives are compared with central differences of their first ones. Same
/// input requirements and errors as gradcheck.
bool gradgradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& fn, const std::vector<Tensor>& inputs,
                   const GradcheckOptions& options = {});

/// Called by backward for each op just before its rule runs, in the engine's order, with the
/// gradient of the op's output.
using BackwardObserver = std::function<void(const Node& node, const RawTensor& grad)>;

/// While alive, backward on this thread reports every op it runs to `observer`. For teaching and
/// debugging (examples/02_graph_walkthrough.cpp); without a guard the engine pays one branch per op.
class BackwardTraceGuard {
 public:
  /// Installs observer for this thread (guards nest: the innermost one reports).
  explicit BackwardTraceGuard(BackwardObserver observer);
  /// Restores the observer that was installed before.
  ~BackwardTraceGuard();
  BackwardTraceGuard(const BackwardTraceGuard&) = delete;
  BackwardTraceGuard& operator=(const BackwardTraceGuard&) = delete;
  static const BackwardObserver* current();   ///< the innermost guard's observer on this thread, or null
 private:
  BackwardObserver observer_;
  const BackwardObserver* prev_;
};

/// Records, for every op a backward on this thread runs while it is alive, the L2 norm of the
/// gradient of the op's output (through a BackwardTraceGuard), for to_dot's annotations. The keys
/// are the graph's Nodes: read them while the output that holds the graph is alive.
/// \code
/// tg::autograd::GradNormRecorder recorder;
/// loss.backward();
/// std::string dot = tg::autograd::to_dot(loss, tg::autograd::DotOptions()
///     .params(model.named_parameters()).grad_norms(recorder));
/// \endcode
class GradNormRecorder {
 public:
  /// Starts recording on this thread.
  GradNormRecorder();
  GradNormRecorder(const GradNormRecorder&) = delete;
  GradNormRecorder& operator=(const GradNormRecorder&) = delete;
  /// ||dL/d(output)|| of each op the backward ran so far (the last one, when several backwards ran it).
  const std::unordered_map<const Node*, double>& norms() const { return norms_; }
 private:
  std::unordered_map<const Node*, double> norms_;
  BackwardTraceGuard guard_;   // after norms_: it writes there until destroyed
};

/// What to_dot adds to the plain graph (torchviz's make_dot arguments).
struct DotOptions {
  /// Labels the leaves found among params with their names, as torchviz's
  /// make_dot(y, params=dict(model.named_parameters())): "fc1.weight".
  DotOptions& params(std::vector<std::pair<std::string, Tensor>> p) { params_ = std::move(p); return *this; }
  /// Labels each leaf with the L2 norm of its .grad (once a backward reached it).
  DotOptions& grad_norms(bool on = true) { grad_norms_ = on; return *this; }
  /// grad_norms(true), and each op with the norm recorder saw flowing into it (recorder must outlive to_dot).
  DotOptions& grad_norms(const GradNormRecorder& recorder) { grad_norms_ = true; recorder_ = &recorder; return *this; }
  /// See params().
  std::vector<std::pair<std::string, Tensor>> params_;
  /// See grad_norms().
  bool grad_norms_ = false;
  /// See grad_norms(const GradNormRecorder&).
  const GradNormRecorder* recorder_ = nullptr;
};

/// Graphviz text of the graph that produced v: one box per op (name and output shape), one
/// ellipse per leaf that requires grad (named when options.params lists it), edges from inputs to
/// the ops that consume them; gradient norms when options ask for them.
std::string to_dot(const Tensor& v, const DotOptions& options = {});

}  // namespace autograd
}  // namespace tg
