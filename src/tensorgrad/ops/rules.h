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
/// A 0-d constant of like's dtype and device.
inline RawTensor scalar(double v, const RawTensor& like) { return prim::scalar_like(v, like); }
/// A 0-d constant of like's dtype and device.
inline Tensor scalar(double v, const Tensor& like) { return tg::scalar_like(v, like); }
/// x summed down to shape.
inline RawTensor sum_to_size(const RawTensor& x, const Shape& shape) { return prim::sum_to(x, shape); }
/// x summed down to shape.
inline Tensor sum_to_size(const Tensor& x, const Shape& shape) { return tg::sum_to_size(x, shape); }

}  // namespace rules
}  // namespace tg
