// backend/cuda/optim.cu: the optimizer family of the CUDA Backend: the fused SGD and Adam/AdamW updates, many
// parameters per launch (PyTorch's foreach path). The hyperparameters, the per-parameter scalars and
// the per-element math are kernels/optim.h's, shared with the CPU twin backend/cpu/optim.cpp (Note
// [Kernel families] in backend/backend.h).
#include <vector>

#include "tensorgrad/backend/cuda/kernels.cuh"
#include "tensorgrad/kernels/optim.h"

namespace tg {
namespace cuda {
namespace detail {
namespace {

/// torch.optim.SGD over up to kSgdTensors parameters in one launch, all contiguous: element i of the
/// flat index space belongs to the parameter k with start[k] <= i < start[k + 1]. Every value is
/// loaded once, before the first store: reads w, g (and v), 12-16 B/elem in fp32, writes 4-8.
constexpr int kSgdTensors = 24;
template <class T>
struct SgdMulti {
  T* w[kSgdTensors];
  const T* g[kSgdTensors];
  T* v[kSgdTensors];   // null without momentum
  SgdScalars<T> scalars[kSgdTensors];   // sgd_scalars(): the same values the CPU loop gets
  const double* lr_value[kSgdTensors];   // null, or SgdParam::lr_value: replaces scalars[k].lr
  int64_t start[kSgdTensors + 1];
  int count;
  struct Loaded {
    int k;
    int64_t j;
    T w, g, v;
  };
  __device__ Loaded load(int64_t i) const {
    int k = 0;
    while (i >= start[k + 1]) ++k;   // the few parameters of one launch: a short scan
    const int64_t j = i - start[k];
    // A new momentum buffer is not read: it holds no values yet.
    return {k, j, w[k][j], g[k][j], v[k] != nullptr && !scalars[k].first_step ? v[k][j] : T(0)};
  }
  __device__ void store(int64_t, const Loaded& a) const {
    const SgdScalars<T> s = lr_value[a.k] != nullptr ? with_lr_value(scalars[a.k], lr_value[a.k]) : scalars[a.k];
    if (v[a.k] == nullptr) {
      w[a.k][a.j] = optim_math::sgd_plain(a.w, a.g, s);
      return;
    }
    T vnew;
    w[a.k][a.j] = optim_math::sgd_momentum(a.w, a.g, a.v, vnew, s);
    v[a.k][a.j] = vnew;
  }
};

/// torch.optim.Adam / AdamW over up to kAdamTensors parameters in one launch, all contiguous, indexed
/// as SgdMulti. Every value is loaded once, before the first store: one read of w, g, m, v (and vmax)
/// and one write of w, m, v (and vmax), 16 B read + 12 B written per fp32 element without amsgrad.
constexpr int kAdamTensors = 24;
template <class T>
struct AdamMulti {
  T* w[kAdamTensors];
  const T* g[kAdamTensors];
  T* m[kAdamTensors];
  T* v[kAdamTensors];
  T* vmax[kAdamTensors];   // null unless amsgrad
  AdamScalars<T> scalars[kAdamTensors];   // adam_scalars(): the same values the CPU loop gets
  const double* step_values[kAdamTensors];  // null, or AdamParam::scalars: replace those of scalars[k]
  int64_t start[kAdamTensors + 1];
  int count;
  struct Loaded {
    int k;
    int64_t j;
    T w, g, m, v, vmax;
  };
  __device__ Loaded load(int64_t i) const {
    int k = 0;
    while (i >= start[k + 1]) ++k;   // the few parameters of one launch: a short scan
    const int64_t j = i - start[k];
    return {k, j, w[k][j], g[k][j], m[k][j], v[k][j], vmax[k] != nullptr ? vmax[k][j] : T(0)};
  }
  __device__ void store(int64_t, Loaded a) const {
    const int k = a.k;
    optim_math::adam(a.w, a.g, a.m, a.v, a.vmax, vmax[k] != nullptr,
                     step_values[k] != nullptr ? with_step_values(scalars[k], step_values[k]) : scalars[k]);
    m[k][a.j] = a.m;
    v[k][a.j] = a.v;
    if (vmax[k] != nullptr) vmax[k][a.j] = a.vmax;
    w[k][a.j] = a.w;
  }
};

}  // namespace

// ------------------------------------------------------------------------------------------------
// Backend methods. Validation happened in prim/.

void CudaBackend::sgd_step(const std::vector<SgdParam>& params, const SgdHyper& hyper) {
  if (params.empty()) return;
  DeviceGuard guard(ctx_.device());
  dispatch_only<kFloat32, kFloat64>(params[0].param.dtype(), "sgd", [&](auto t) {
    using T = decltype(t);
    SgdMulti<T> body{};
    auto flush = [&] {
      if (body.count > 0) launch_flat_ilp(ctx_.stream(), body.start[body.count], body);
      body.count = 0;
    };
    for (const SgdParam& sp : params) {
      const int64_t n = sp.param.numel();
      if (n == 0) continue;
      const int k = body.count;
      body.w[k] = sp.param.data<T>();
      body.g[k] = sp.grad.data<T>();
      body.v[k] = sp.velocity.defined() ? sp.velocity.data<T>() : nullptr;
      body.scalars[k] = sgd_scalars<T>(hyper, sp.lr, sp.first_step);
      body.lr_value[k] = sp.lr_value.defined() ? sp.lr_value.data<double>() : nullptr;
      body.start[k + 1] = body.start[k] + n;
      if (++body.count == kSgdTensors) flush();
    }
    flush();
  });
}

void CudaBackend::adam_step(const std::vector<AdamParam>& params, const AdamHyper& hyper) {
  if (params.empty()) return;
  DeviceGuard guard(ctx_.device());
  dispatch_only<kFloat32, kFloat64>(params[0].param.dtype(), "adam", [&](auto t) {
    using T = decltype(t);
    AdamMulti<T> body{};
    auto flush = [&] {
      if (body.count > 0) launch_flat_ilp(ctx_.stream(), body.start[body.count], body);
      body.count = 0;
    };
    for (const AdamParam& ap : params) {
      const int64_t n = ap.param.numel();
      if (n == 0) continue;
      const int k = body.count;
      body.w[k] = ap.param.data<T>();
      body.g[k] = ap.grad.data<T>();
      body.m[k] = ap.exp_avg.data<T>();
      body.v[k] = ap.exp_avg_sq.data<T>();
      body.vmax[k] = ap.max_exp_avg_sq.defined() ? ap.max_exp_avg_sq.data<T>() : nullptr;
      body.scalars[k] = adam_scalars<T>(hyper, ap.lr, ap.step);
      body.step_values[k] = ap.scalars.defined() ? ap.scalars.data<double>() : nullptr;
      body.start[k + 1] = body.start[k] + n;
      if (++body.count == kAdamTensors) flush();
    }
    flush();
  });
}

}  // namespace detail
}  // namespace cuda
}  // namespace tg
