/// \file
/// kernels/optim.h: the optimizer family's shared body (Note [Kernel families] in backend/backend.h):
/// the hyperparameters of one fused step (SgdHyper, AdamHyper), the per-parameter scalars derived
/// from them (sgd_scalars, adam_scalars: bias corrections, decay factor), and the per-element math of
/// torch.optim.SGD, Adam and AdamW, written once for the CPU loops (backend/cpu/optim.cpp through
/// backend/cpu/kernels.inc) and the CUDA kernels (backend/cuda/optim.cu), as kernels/elementwise.h does for the
/// elementwise ops. Each per-element function takes the element's old values and returns the new
/// ones, so a caller loads every value before it stores any. Compiled by g++ and by nvcc, so: no
/// dependencies.
#pragma once
#include <cmath>
#include <cstdint>

#include "tensorgrad/core/macros.h"

namespace tg {

/// The hyperparameters of one fused SGD step (Backend::sgd_step), shared by every parameter of the
/// call; each parameter brings its own learning rate (SgdParam::lr). PyTorch's torch.optim.SGD names.
struct SgdHyper {
  double momentum = 0;       ///< 0: plain SGD, no velocity
  double dampening = 0;      ///< the velocity update weighs d by 1 - dampening
  double weight_decay = 0;   ///< L2 term added to the gradient (0: none)
  bool nesterov = false;     ///< step along d + momentum v instead of v
};

/// The hyperparameters of one fused Adam/AdamW step (Backend::adam_step), shared by every parameter
/// of the call; each parameter brings its learning rate and step count (AdamParam). PyTorch's names.
struct AdamHyper {
  double beta1 = 0.9;        ///< decay rate of the first moment
  double beta2 = 0.999;      ///< decay rate of the second moment
  double eps = 1e-8;         ///< added to the denominator
  double weight_decay = 0;   ///< Adam: L2 term added to the gradient; AdamW: decoupled decay
  bool decoupled = false;    ///< AdamW's decoupled weight decay instead of Adam's L2 term
};

/// \cond INTERNAL
/// SGD's scalars for one parameter.
template <class T>
struct SgdScalars {
  T lr;                    ///< the parameter's group learning rate
  T momentum;              ///< 0: plain SGD, no velocity
  T one_minus_dampening;   ///< 1 - dampening, the weight of d in the velocity update
  T weight_decay;          ///< L2 term added to the gradient (0: none)
  bool nesterov;           ///< step along d + momentum v instead of v
  bool first_step;         ///< the velocity is new: v = d
};

/// Adam's scalars for one parameter at one step: step_size = lr / bc1, inv_sqrt_bc2 = 1 / sqrt(bc2),
/// decay = 1 - lr wd (AdamW), with bc1 = 1 - beta1^step and bc2 = 1 - beta2^step.
template <class T>
struct AdamScalars {
  T step_size;      ///< lr / bc1
  T inv_sqrt_bc2;   ///< 1 / sqrt(bc2)
  T beta1;          ///< decay rate of the first moment
  T beta2;          ///< decay rate of the second moment
  T eps;            ///< added to the denominator
  T weight_decay;   ///< Adam: L2 term added to the gradient (0: none)
  T decay;          ///< AdamW: 1 - lr wd, the factor the weight is multiplied by
  bool decoupled;   ///< AdamW's decoupled weight decay instead of Adam's L2 term
};

/// SGD's scalars for one parameter of a step (host code: both backends build them here, so the
/// kernels of the two see the same values).
template <class T>
SgdScalars<T> sgd_scalars(const SgdHyper& h, double lr, bool first_step) {
  return SgdScalars<T>{T(lr), T(h.momentum), T(1 - h.dampening), T(h.weight_decay), h.nesterov, first_step};
}

/// What of AdamScalars changes from step to step, in double: lr / bc1, 1 / sqrt(bc2) and 1 - lr wd,
/// with the bias corrections bc1 = 1 - beta1^step and bc2 = 1 - beta2^step (step 1-based). A
/// captured step reads these from device memory (AdamParam::scalars), so it is laid out as 3 doubles.
struct AdamStepValues {
  double step_size, inv_sqrt_bc2, decay;
};
inline AdamStepValues adam_step_values(const AdamHyper& h, double lr, int64_t step) {
  const double bc1 = 1 - std::pow(h.beta1, double(step)), bc2 = 1 - std::pow(h.beta2, double(step));
  return AdamStepValues{lr / bc1, 1 / std::sqrt(bc2), 1 - lr * h.weight_decay};
}

/// Adam's scalars for one parameter at its step (1-based): adam_step_values, then rounded to T once
/// (host code, as sgd_scalars).
template <class T>
AdamScalars<T> adam_scalars(const AdamHyper& h, double lr, int64_t step) {
  const AdamStepValues s = adam_step_values(h, lr, step);
  return AdamScalars<T>{T(s.step_size), T(s.inv_sqrt_bc2), T(h.beta1), T(h.beta2), T(h.eps),
                        T(h.weight_decay), T(s.decay),     h.decoupled};
}

/// k with its learning rate taken from device memory (one double), rounded to T as sgd_scalars
/// rounds it: a captured capturable SGD step's lr (SgdParam::lr_value).
template <class T>
TG_HD SgdScalars<T> with_lr_value(SgdScalars<T> k, const double* lr) {
  k.lr = T(lr[0]);
  return k;
}

/// k with its per-step values taken from device memory (3 doubles laid out as AdamStepValues),
/// rounded to T as adam_scalars rounds them: a captured step's scalars (AdamParam::scalars).
template <class T>
TG_HD AdamScalars<T> with_step_values(AdamScalars<T> k, const double* values) {
  k.step_size = T(values[0]);
  k.inv_sqrt_bc2 = T(values[1]);
  k.decay = T(values[2]);
  return k;
}

namespace optim_math {
using std::sqrt;

/// The gradient with weight decay, g + wd w; g itself when wd is 0, as PyTorch (an infinite weight
/// does not turn the step into NaN).
template <class T>
TG_HD T with_weight_decay(T g, T w, T wd) {
  return wd == T(0) ? g : g + wd * w;
}

/// SGD without momentum: w - lr (g + wd w).
template <class T>
TG_HD T sgd_plain(T w, T g, const SgdScalars<T>& k) {
  return w - k.lr * with_weight_decay(g, w, k.weight_decay);
}

/// SGD with momentum: d = g + wd w (g when wd is 0); v = d on the first step (v_old is then not used), else
/// momentum v_old + (1 - dampening) d; returns w - lr (nesterov ? d + momentum v : v), sets v_new.
template <class T>
TG_HD T sgd_momentum(T w, T g, T v_old, T& v_new, const SgdScalars<T>& k) {
  const T d = with_weight_decay(g, w, k.weight_decay);
  const T v = k.first_step ? d : k.momentum * v_old + k.one_minus_dampening * d;
  v_new = v;
  return w - k.lr * (k.nesterov ? d + k.momentum * v : v);
}

/// One element of Adam/AdamW: AdamW w *= 1 - lr wd, else g += wd w (when wd is not 0); m = b1 m + (1 - b1) g;
/// v = b2 v + (1 - b2) g^2; with amsgrad, vmax = max(vmax, v) (std::max's NaN rule) replaces v in
/// the step; w -= lr/bc1 m / (sqrt(v/bc2) + eps). Updates w, m, v and, when amsgrad, vmax.
template <class T>
TG_HD void adam(T& w, T g, T& m, T& v, T& vmax, bool amsgrad, const AdamScalars<T>& k) {
  if (k.decoupled) w *= k.decay;
  else g = with_weight_decay(g, w, k.weight_decay);
  m = k.beta1 * m + (T(1) - k.beta1) * g;
  v = k.beta2 * v + (T(1) - k.beta2) * g * g;
  T vv = v;
  if (amsgrad) vv = vmax = vmax < v ? v : vmax;
  w -= k.step_size * m / (sqrt(vv) * k.inv_sqrt_bc2 + k.eps);
}

}  // namespace optim_math
/// \endcond
}  // namespace tg
