/// \file
/// kernels/softmax_loss.h: the softmax and loss family's shared per-row and per-element bodies (Note
/// [Kernel families] in backend/backend.h): the shift of a row holding infinities or NaN, the
/// (log-)softmax value and gradient, the cross-entropy loss of one row with ignore_index and label
/// smoothing, and its gradient per logit. Written once for the CPU loops (backend/cpu/softmax_loss.cpp)
/// and the CUDA kernels (backend/cuda/softmax_loss.cu), as kernels/elementwise.h does for the elementwise ops. The
/// CPU's contiguous fast paths (Note [Row blocks]) compute the same formulas over whole blocks of rows
/// in backend/cpu/kernels.inc. Row statistics (max, sum of exponentials, sum of logits) accumulate in
/// double. Compiled by g++ and by nvcc, so: no dependencies beyond kernels/elementwise.h's exp.
#pragma once
#include <cmath>
#include <cstdint>

#include "tensorgrad/core/macros.h"
#include "tensorgrad/kernels/elementwise.h"

namespace tg {

/// Options of the fused softmax-cross-entropy (PyTorch's ignore_index and label_smoothing).
struct CrossEntropyArgs {
  /// Rows whose target equals it count for nothing.
  int64_t ignore_index = -100;
  /// s in [0, 1]: the target distribution is (1 - s) onehot + s / C.
  double label_smoothing = 0;
  /// Reduction::Sum or Mean: the forward also writes the rows' total (folded into its kernel).
  bool total = false;
  /// Reduction::Mean: the total is divided by the rows not ignored, and so is the backward's dloss.
  bool mean = false;
};

/// \cond INTERNAL
namespace softmax_math {

/// The shift of a softmax row: its maximum when finite, else NaN, so that a row holding +inf, or only
/// -inf, comes out NaN everywhere, as in PyTorch (Note [NaN and infinity] in kernels/elementwise.h). A NaN
/// maximum stays NaN. (max - max is 0 exactly when max is finite: no libm call on either side.)
template <class T>
TG_HD T shift(T max) {
  return max - max == T(0) ? max : T(NAN);
}

/// log-sum-exp of a row from its shift m and s = sum_d exp(x_d - m).
template <class T>
TG_HD T log_sum_exp(double s, T m) {
  return static_cast<T>(std::log(s)) + m;
}

/// softmax of one element: exp(x - m) / s, given inv = 1 / s (in double).
template <class T>
TG_HD T softmax_value(T x, T m, double inv) {
  return static_cast<T>(static_cast<double>(fn::exp(x - m)) * inv);
}

/// log_softmax of one element: x - lse.
template <class T>
TG_HD T log_softmax_value(T x, T lse) {
  return x - lse;
}

/// One term of the backward's row sum: softmax: dy y (sum(dy y)); log_softmax: dy (sum(dy)).
template <class T>
TG_HD double backward_term(bool log, T dy, T y) {
  return log ? static_cast<double>(dy) : static_cast<double>(dy * y);
}

/// The gradient of one element from the row sum s of backward_term: softmax: y (dy - s);
/// log_softmax: dy - exp(y) s.
template <class T>
TG_HD T backward_value(bool log, T dy, T y, double s) {
  return log ? static_cast<T>(dy - fn::exp(y) * s) : static_cast<T>(y * (dy - s));
}

/// Whether a cross-entropy row counts: its target is not ignore_index. An ignored row's loss and
/// gradient are 0 and it is left out of the mean's count.
TG_HD bool ce_counts(int64_t target, int64_t ignore_index) { return target != ignore_index; }

/// The cross-entropy loss of a counted row from its log-sum-exp lse, its target's logit and the sum of
/// its C logits: -log softmax[target], mixed with label smoothing s as
/// (1 - s) (-log softmax[target]) + s mean_c(-log softmax[c]) (PyTorch's label_smoothing).
TG_HD double ce_loss(double lse, double target_logit, double logit_sum, int64_t C, double smoothing) {
  double v = lse - target_logit;
  if (smoothing != 0) v = (1 - smoothing) * v + smoothing * (lse - logit_sum / static_cast<double>(C));
  return v;
}

/// The gradient of a counted row's loss for one logit, from its softmax value p, whether it is the
/// target, the row's upstream gradient g (already divided by the mean's count), the smoothing s and
/// uniform = s / C: (p - s/C) g - (1 - s) onehot g.
template <class T>
TG_HD T ce_grad(T p, bool is_target, T g, T smoothing, T uniform) {
  const T d = (p - uniform) * g;
  return is_target ? d - (T(1) - smoothing) * g : d;
}

}  // namespace softmax_math
/// \endcond
}  // namespace tg
