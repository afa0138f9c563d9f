// backend/cpu/optim.cpp: the optimizer family of the CPU backend: the fused SGD and Adam/AdamW updates,
// one pass over each parameter's buffers. The hyperparameters, the per-parameter scalars and the
// per-element math are kernels/optim.h's, shared with the CUDA twin backend/cuda/optim.cu (Note [Kernel
// families] in backend/backend.h); the loops are backend/cpu/kernels.inc's capability clones.
#include "tensorgrad/backend/cpu/cpu_backend.h"

namespace tg {
namespace cpu {

void CpuBackend::sgd_step(const std::vector<SgdParam>& params, const SgdHyper& hyper) {
  for (const SgdParam& sp : params)   // one parameter at a time: each loop is split over the pool
    dispatch_only<kFloat32, kFloat64>(sp.param.dtype(), "sgd", [&](auto t) {
      using T = decltype(t);
      T* w = sp.param.data<T>();
      const T* g = sp.grad.data<T>();
      T* v = sp.velocity.defined() ? sp.velocity.data<T>() : nullptr;
      const SgdScalars<T> k = sp.lr_value.defined()
                                  ? with_lr_value(sgd_scalars<T>(hyper, sp.lr, sp.first_step), sp.lr_value.data<double>())
                                  : sgd_scalars<T>(hyper, sp.lr, sp.first_step);
      parallel_for(sp.param.numel(), 4, [&](int64_t b, int64_t e) {
        with_kernels([&](auto kernels) {
          using K = decltype(kernels);
          if (v == nullptr) K::sgd_plain(w + b, g + b, e - b, k);
          else K::sgd_momentum(w + b, g + b, v + b, e - b, k);
        });
      });
    });
}

void CpuBackend::adam_step(const std::vector<AdamParam>& params, const AdamHyper& hyper) {
  for (const AdamParam& ap : params)   // one parameter at a time: each loop is split over the pool
    dispatch_only<kFloat32, kFloat64>(ap.param.dtype(), "adam", [&](auto t) {
      using T = decltype(t);
      T* w = ap.param.data<T>();
      const T* g = ap.grad.data<T>();
      T *m = ap.exp_avg.data<T>(), *v = ap.exp_avg_sq.data<T>();
      T* vmax = ap.max_exp_avg_sq.defined() ? ap.max_exp_avg_sq.data<T>() : nullptr;
      const AdamScalars<T> k = ap.scalars.defined() ? with_step_values(adam_scalars<T>(hyper, ap.lr, ap.step),
                                                                       ap.scalars.data<double>())
                                                    : adam_scalars<T>(hyper, ap.lr, ap.step);
      parallel_for(ap.param.numel(), 8, [&](int64_t b, int64_t e) {
        with_kernels([&](auto kernels) {
          decltype(kernels)::adam_loop(w + b, g + b, m + b, v + b, vmax == nullptr ? nullptr : vmax + b, e - b, k);
        });
      });
    });
}

}  // namespace cpu
}  // namespace tg
