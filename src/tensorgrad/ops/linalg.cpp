// ops/linalg.cpp: matmul and the fused linear layer op. Forward and backward through prim::matmul,
// prim::addmm and prim::matmul_row_sums, which hand transposed views to the BLAS as flags (no copies).
// Kernels: Backend::gemm, and Backend::gemm_epilogue for linear's bias (Note [Bias folded into the GEMM]).
// Shapes: N = rows (batch), I = in_features, O = out_features.
//
// Note [Autocast saves the caller's input]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Under autocast linear multiplies the lower-precision cast of its input, and its weight gradient
// needs that cast again (dW = grad^T x). When the input is a leaf that requires no grad (the batch the
// caller passed in, which the caller holds anyway), linear saves the caller's tensor and casts it again
// in backward instead of keeping the cast copy alive until then: bench/bench_amp's MLP keeps half of
// float32's activation bytes instead of 0.72x, for one more conversion of the input per step. (PyTorch
// saves the copy.) Like any saved input, writing into that tensor in place before backward is then an
// AutogradError. Inputs that are intermediate results keep the cast copy, as nobody else holds them.
#include "tensorgrad/amp/autocast.h"
#include "tensorgrad/engine/prim.h"
#include "tensorgrad/ops/ops.h"

namespace tg {

// a (M, K) or (B, M, K), b (K, N) or (B, K, N) -> (M, N) or (B, M, N)
Variable matmul(const Variable& a_in, const Variable& b_in) {
  // Note [Autocast op lists]: lower precision
  const Variable a = amp::detail::cast_lower(a_in), b = amp::detail::cast_lower(b_in);
  Tensor out = prim::matmul(a.data(), b.data());
  const bool grad_mode = GradMode::is_enabled();
  SavedTensor a_saved = grad_mode && b.requires_grad() ? SavedTensor(a) : SavedTensor();
  SavedTensor b_saved = grad_mode && a.requires_grad() ? SavedTensor(b) : SavedTensor();
  return record("matmul", out, {a, b}, [a_saved, b_saved](const Tensor& grad, Grads& g) {
    if (g.need(0)) g.set(0, prim::matmul(grad, b_saved.get().transpose(-1, -2)));   // da = grad . b^T
    if (g.need(1)) g.set(1, prim::matmul(a_saved.get().transpose(-1, -2), grad));   // db = a^T . grad (summed over a broadcast batch)
  });
}

// y (N, O) = x (N, I) . weight (O, I)^T + bias (O); x of higher rank is flattened to (N, I) and back.
Variable linear(const Variable& x_in, const Variable& weight_in, const Variable& bias_in) {
  // Note [Autocast op lists]: lower precision
  const Variable x = amp::detail::cast_lower(x_in), weight = amp::detail::cast_lower(weight_in),
                 bias = amp::detail::cast_lower(bias_in);
  TG_CHECK(x.dim() >= 1 && weight.dim() == 2, ShapeError, "linear: expected input (..., in_features) and weight ",
           "(out_features, in_features), got ", shape_str(x.shape()), " and ", shape_str(weight.shape()));
  const int64_t I = x.shape().back(), O = weight.shape()[0];
  TG_CHECK(weight.shape()[1] == I, ShapeError, "linear: mat1 and mat2 shapes cannot be multiplied (",
           shape_x({x.numel() / std::max<int64_t>(I, 1), I}), " and ", shape_x({weight.shape()[1], O}), ")");
  TG_CHECK(!bias.defined() || bias.shape() == Shape{O}, ShapeError, "linear: expected bias of shape [", O,
           "], got ", bias.defined() ? shape_str(bias.shape()) : "undefined");
  const Shape in_shape = x.shape();
  Shape out_shape = in_shape;
  out_shape.back() = O;
  const Tensor x2 = x.data().reshape({-1, I});
  // Note [Bias folded into the GEMM]: the bias goes into the GEMM when it has x's dtype and device.
  const bool fold = bias.defined() && bias.dtype() == x.dtype() && bias.device() == x.device();
  Tensor y = fold ? prim::addmm(bias.data(), x2, weight.data().transpose(0, 1))
                  : prim::matmul(x2, weight.data().transpose(0, 1));
  if (bias.defined() && !fold) prim::binary_(BinaryOp::Add, y, bias.data(), "linear");   // row-broadcast bias, in place
  const bool grad_mode = GradMode::is_enabled();
  // Note [Autocast saves the caller's input]: a leaf input cast by autocast is saved uncast
  const bool recast = x.dtype() != x_in.dtype() && x_in.is_leaf() && !x_in.requires_grad();
  SavedTensor x_saved = grad_mode && weight.requires_grad() ? SavedTensor(recast ? x_in : x) : SavedTensor();
  SavedTensor w_saved = grad_mode && x.requires_grad() ? SavedTensor(weight) : SavedTensor();
  std::vector<Variable> inputs{x, weight};
  if (bias.defined()) inputs.push_back(bias);
  const DType x_dtype = x.dtype();
  return record("linear", y.view(out_shape), inputs, [x_saved, w_saved, in_shape, I, O, x_dtype](const Tensor& grad, Grads& g) {
    const Tensor g2 = grad.reshape({-1, O});
    auto saved_x = [&] {   // x as the forward multiplied it: (N, I) in x_dtype
      const Tensor xs = x_saved.get().reshape({-1, I});
      return xs.dtype() == x_dtype ? xs : xs.to(x_dtype);
    };
    const bool need_bias = g.size() > 2 && g.need(2);
    if (g.need(0)) g.set(0, prim::matmul(g2, w_saved.get()).view(in_shape));   // dx = grad . W   (N, I)
    if (g.need(1) && need_bias) {   // dW = grad^T . x (O, I) and db = sum_n grad (O): one GEMM where it folds
      std::pair<Tensor, Tensor> wb = prim::matmul_row_sums(g2.transpose(0, 1), saved_x());
      g.set(1, wb.first);
      g.set(2, wb.second);
    } else if (g.need(1)) {
      g.set(1, prim::matmul(g2.transpose(0, 1), saved_x()));
    } else if (need_bias) {
      g.set(2, prim::sum_to(g2, {O}));
    }
  });
}

}  // namespace tg
