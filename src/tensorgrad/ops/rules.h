/// \file
/// ops/rules.h: the arithmetic a generic backward rule uses, for RawTensors (prims: a first-order
/// backward, no graph, no Tensor handles) and for Tensors (the ops of ops/ops.h: recorded under
/// create_graph). A rule written once as `[](const auto& grad, auto& g) { ... rules::mul(grad, b) ... }`
/// is instantiated both ways (Note [Differentiable rules] in autograd/engine.cpp); views use the
/// methods both types share (reshape, expand, transpose, permute, unsqueeze, narrow, select, to).
#pragma once
#include "tensorgrad/ops/ops.h"
#include "tensorgrad/prim/prim.h"

namespace tg {

/// In a generic rule, `if constexpr (first_order_v<decltype(g)>)`: true in its first-order (RawTensor)
/// instantiation, where a fused kernel may replace the recorded formula.
template <class G>
constexpr bool first_order_v = std::is_same<std::decay_t<G>, Grads>::value;

namespace rules {

inline RawTensor neg(const RawTensor& a) { return prim::unary(UnaryOp::Neg, a); }   ///< -a
inline Tensor neg(const Tensor& a) { return tg::neg(a); }                            ///< -a
inline RawTensor mul(const RawTensor& a, const RawTensor& b) { return prim::mul(a, b); }   ///< a * b
inline Tensor mul(const Tensor& a, const Tensor& b) { return tg::mul(a, b); }            ///< a * b
inline RawTensor mul(const RawTensor& a, double s) { return prim::mul(a, s); }          ///< a * s
inline Tensor mul(const Tensor& a, double s) { return a * s; }                          ///< a * s
inline RawTensor div(const RawTensor& a, const RawTensor& b) { return prim::div(a, b); }   ///< a / b
inline Tensor div(const Tensor& a, const Tensor& b) { return tg::div(a, b); }            ///< a / b
/// a @ b (batched, broadcast).
inline RawTensor matmul(const RawTensor& a, const RawTensor& b) { return prim::matmul(a, b); }
/// a @ b (batched, broadcast).
inline Tensor matmul(const Tensor& a, const Tensor& b) { return tg::matmul(a, b); }
/// cond ? a : b, cond a constant bool tensor.
inline RawTensor where(const RawTensor& cond, const RawTensor& a, const RawTensor& b) { return prim::where(cond, a, b); }
/// cond ? a : b, cond a constant bool tensor.
inline Tensor where(const RawTensor& cond, const Tensor& a, const Tensor& b) { return tg::where(Tensor(cond), a, b); }
/// a^b, elementwise.
inline RawTensor pow(const RawTensor& a, const RawTensor& b) { return prim::binary(BinaryOp::Pow, a, b, "pow"); }
/// a^b, elementwise.
inline Tensor pow(const Tensor& a, const Tensor& b) { return tg::pow(a, b); }
/// The natural logarithm.
inline RawTensor log(const RawTensor& a) { return prim::unary(UnaryOp::Log, a); }
/// The natural logarithm.
inline Tensor log(const Tensor& a) { return tg::log(a); }
/// a - s.
inline RawTensor sub(const RawTensor& a, double s) { return prim::sub(a, prim::scalar_like(s, a)); }
/// a - s.
inline Tensor sub(const Tensor& a, double s) { return a - s; }
/// A 0-d constant of like's dtype and device.
inline RawTensor scalar(double v, const RawTensor& like) { return prim::scalar_like(v, like); }
/// A 0-d constant of like's dtype and device.
inline Tensor scalar(double v, const Tensor& like) { return tg::scalar_like(v, like); }
/// x summed down to shape.
inline RawTensor sum_to_size(const RawTensor& x, const Shape& shape) { return prim::sum_to(x, shape); }
/// x summed down to shape.
inline Tensor sum_to_size(const Tensor& x, const Shape& shape) { return tg::sum_to_size(x, shape); }

/// The backward of an op that is linear in its input, as a differentiable op of its own: apply maps
/// the incoming gradient (a RawTensor) to the input's, adjoint (Tensor ops) is that map's own
/// gradient. For a RawTensor grad this is apply(grad), nothing recorded; for a Tensor grad (under
/// create_graph) a recorded op named name whose rule is adjoint, so it is differentiable to any
/// order. The backward of a view (into zeros), of a gather (a scatter-add), of the poolings.
template <class Apply, class Adjoint>
RawTensor linear_backward(const char*, const RawTensor& grad, Apply apply, Adjoint) {
  return apply(grad);
}
/// See linear_backward above.
template <class Apply, class Adjoint>
Tensor linear_backward(const char* name, const Tensor& grad, Apply apply, Adjoint adjoint) {
  return record(name, apply(grad.data()), {grad}, [adjoint](const Tensor& u, VarGrads& g) { g.set(0, adjoint(u)); });
}

/// The gradient of gather(x, dim, index) for dL/d(out) = grad: grad scatter-added into zeros of
/// in_shape (x's). Its Tensor form is a differentiable op whose own gradient gathers again
/// (ops/index.cpp); sort, topk and kthvalue use it too.
RawTensor gather_grad(const RawTensor& grad, int64_t dim, const RawTensor& index, const Shape& in_shape);
/// See gather_grad above.
Tensor gather_grad(const Tensor& grad, int64_t dim, const RawTensor& index, const Shape& in_shape);

}  // namespace rules
}  // namespace tg
