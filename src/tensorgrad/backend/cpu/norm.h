// backend/cpu/norm.h: layer_norm's fused CPU rows (backend/cpu/norm.cpp), which ops/norm.cpp calls for
// CPU float32 and float64; CUDA and the 16-bit dtypes compose layer_norm of prims instead.
#pragma once
#include "tensorgrad/core/tensor.h"

namespace tg {
namespace detail {

/// x (M, D) contiguous -> y (M, D), mean and rstd (M), all set; w and b (D) contiguous or undefined.
/// float32 or float64, every tensor of x's dtype. See Note [Fused layer_norm rows on the CPU].
void cpu_layer_norm_rows(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& y, const Tensor& mean,
                         const Tensor& rstd, int64_t M, int64_t D, double eps);

/// The backward of cpu_layer_norm_rows: dy, x (M, D), mean, rstd (M), w (D) or undefined -> dx (M, D),
/// dw, db (D), each set when defined. With xhat = (x - mean) rstd and g = dy w:
/// dx = rstd (g - mean(g) - xhat mean(g xhat)), dw = sum over rows of dy xhat, db = sum over rows of dy.
void cpu_layer_norm_rows_backward(const Tensor& dy, const Tensor& x, const Tensor& mean, const Tensor& rstd,
                                  const Tensor& w, const Tensor& dx, const Tensor& dw, const Tensor& db, int64_t M,
                                  int64_t D);

}  // namespace detail
}  // namespace tg
