/// \file
/// autograd/functional.h: torch.autograd.functional in C++: jacobian, hessian, vjp, jvp, hvp and vhp
/// of a function, built on autograd::grad with create_graph (Note [Differentiable rules] in
/// autograd/engine.cpp). Each takes a function of one Tensor or of a vector of Tensors; the vector
/// forms return one result per input, as PyTorch's tuples. The function's inputs are fresh leaves
/// (the caller's tensors are not touched) unless create_graph, where they keep the caller's graph
/// so that the result can be differentiated again; results have no graph unless create_graph.
/// strict = true raises AutogradError where the output does not depend on an input (PyTorch's
/// strict mode); otherwise such a result is zeros.
/// \code
/// namespace F = tg::autograd::functional;
/// auto [loss, Hv] = F::hvp([&](const tg::Tensor& w) { return model_loss(w); }, w, v);
/// tg::Tensor H = F::hessian([](const tg::Tensor& x) { return (x * x * x).sum(); }, x);
/// \endcode
#pragma once
#include <functional>
#include <utility>
#include <vector>

#include "tensorgrad/autograd/tensor.h"

namespace tg {
namespace autograd {
namespace functional {

/// A function of one Tensor.
using Fn = std::function<Tensor(const Tensor&)>;
/// A function of several Tensors.
using FnN = std::function<Tensor(const std::vector<Tensor>&)>;

/// The Jacobian of f at x: shape f(x).shape ++ x.shape (one backward per element of the output).
Tensor jacobian(const Fn& f, const Tensor& x, bool create_graph = false, bool strict = false);
/// The Jacobian with respect to each input: result i has shape f(xs).shape ++ xs[i].shape.
std::vector<Tensor> jacobian(const FnN& f, const std::vector<Tensor>& xs, bool create_graph = false,
                             bool strict = false);
/// The Hessian of a scalar (one-element) f at x: shape x.shape ++ x.shape.
Tensor hessian(const Fn& f, const Tensor& x, bool create_graph = false, bool strict = false);
/// The Hessian blocks of a scalar f: result[i][j] = d2f / dxs[i] dxs[j], shape xs[i].shape ++ xs[j].shape.
std::vector<std::vector<Tensor>> hessian(const FnN& f, const std::vector<Tensor>& xs, bool create_graph = false,
                                         bool strict = false);
/// (f(x), v^T J): v has f(x)'s shape (undefined: f must return one element, and v is 1).
std::pair<Tensor, Tensor> vjp(const Fn& f, const Tensor& x, const Tensor& v = Tensor(), bool create_graph = false,
                              bool strict = false);
/// (f(xs), v^T J per input).
std::pair<Tensor, std::vector<Tensor>> vjp(const FnN& f, const std::vector<Tensor>& xs, const Tensor& v = Tensor(),
                                           bool create_graph = false, bool strict = false);
/// (f(x), J u): u has x's shape (undefined: x must have one element, and u is 1). Computed with two
/// reverse passes (the double-vjp trick, as PyTorch), so every op of f needs a differentiable rule.
std::pair<Tensor, Tensor> jvp(const Fn& f, const Tensor& x, const Tensor& u = Tensor(), bool create_graph = false,
                              bool strict = false);
/// (f(xs), sum over i of J_i u_i): us holds one tangent per input.
std::pair<Tensor, Tensor> jvp(const FnN& f, const std::vector<Tensor>& xs, const std::vector<Tensor>& us,
                              bool create_graph = false, bool strict = false);
/// (f(x), v^T H) for a scalar f: one backward with create_graph and one through its gradient.
std::pair<Tensor, Tensor> vhp(const Fn& f, const Tensor& x, const Tensor& v, bool create_graph = false,
                              bool strict = false);
/// (f(xs), v^T H per input).
std::pair<Tensor, std::vector<Tensor>> vhp(const FnN& f, const std::vector<Tensor>& xs, const std::vector<Tensor>& vs,
                                           bool create_graph = false, bool strict = false);
/// (f(x), H v) for a scalar f. The Hessian of a twice continuously differentiable f is symmetric, so
/// H v = (v^T H)^T and this computes it as vhp does (PyTorch's hvp takes a third reverse pass, the
/// double-vjp trick, to the same values).
std::pair<Tensor, Tensor> hvp(const Fn& f, const Tensor& x, const Tensor& v, bool create_graph = false,
                              bool strict = false);
/// (f(xs), H v per input).
std::pair<Tensor, std::vector<Tensor>> hvp(const FnN& f, const std::vector<Tensor>& xs, const std::vector<Tensor>& vs,
                                           bool create_graph = false, bool strict = false);

}  // namespace functional
}  // namespace autograd
}  // namespace tg
