/// \file
/// kernels/norm.h: the normalization family's shared per-element rules (Note [Kernel families] in
/// backend/backend.h): layer_norm's output and input gradient given a row's statistics, and the
/// statistics' last step. Written once for the CPU rows (backend/cpu/norm.cpp, kernels.inc) and the
/// CUDA kernels (backend/cuda/norm.cu); each backend sums a row its own way (the CPU in sixteen double
/// lanes, CUDA in a fixed tree of doubles), both in double. group_norm runs on the same rows
/// (ops/norm.cpp). Compiled by g++ and by nvcc, so: no dependencies.
#pragma once
#include <cmath>

#include "tensorgrad/core/macros.h"

namespace tg {
/// \cond INTERNAL
namespace norm_math {

/// 1 / sqrt(var + eps): a row's reciprocal standard deviation from its biased variance (the sum of
/// squared deviations divided by the row length, as PyTorch's layer_norm and group_norm take it).
TG_HD double rstd(double var, double eps) { return 1.0 / ::sqrt(var + eps); }

/// xhat = (x - mean) rstd, the normalized value; the output is xhat w + b with the affine parameters
/// that are given, applied in that order.
template <class T>
TG_HD T xhat(T x, T mean, T rstd) {
  return (x - mean) * rstd;
}

/// dx = rstd (g - mean(g) - xhat mean(g xhat)) for g = dy w (dy when there is no weight): the input
/// gradient of one element, given the row means mean_g and mean_gx of g and of g xhat.
template <class T>
TG_HD T dx(T g, T xh, T rstd, T mean_g, T mean_gx) {
  return rstd * (g - mean_g - xh * mean_gx);
}

}  // namespace norm_math
/// \endcond
}  // namespace tg
