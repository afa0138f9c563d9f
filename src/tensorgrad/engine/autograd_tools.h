/// \file
/// engine/autograd_tools.h: tools for checking and seeing the graph: gradcheck (float64 central
/// differences), to_dot (Graphviz text). DetectAnomalyGuard is in engine/grad_mode.h.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "tensorgrad/engine/variable.h"

namespace tg {
namespace autograd {

/// Tolerances of gradcheck(), PyTorch's defaults: an element passes when
/// |analytical - numerical| <= atol + rtol * |numerical|.
struct GradcheckOptions {
  /// The finite-difference step: (f(x + eps) - f(x - eps)) / (2 eps).
  double eps = 1e-6, atol = 1e-5, rtol = 1e-3;
  /** \var atol
      The absolute tolerance. */
  /** \var rtol
      The relative tolerance, times |numerical|. */
};

/// Compares backward's gradient of every input that requires grad with central differences.
/// A non-scalar output y is checked through sum(y * w) with fixed, distinct weights w. Inputs must
/// be float64 CPU tensors without overlapping (expanded) elements. Returns true, or throws
/// AutogradError naming the input, the worst element, both values and the tolerance.
bool gradcheck(const std::function<Variable(const std::vector<Variable>&)>& fn, const std::vector<Variable>& inputs,
               const GradcheckOptions& options = {});

/// Called by backward for each op just before its rule runs, in the engine's order, with the
/// gradient of the op's output.
using BackwardObserver = std::function<void(const Node& node, const Tensor& grad)>;

/// While alive, backward on this thread reports every op it runs to `observer`. For teaching and
/// debugging (examples/graph_walkthrough.cpp); without a guard the engine pays one branch per op.
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

/// Graphviz text of the graph that produced v: one box per op (name and output shape), one
/// ellipse per leaf that requires grad, edges from inputs to the ops that consume them.
std::string to_dot(const Variable& v);

}  // namespace autograd
}  // namespace tg
