// backend/cpu/norm.cpp: the normalization family of the CPU Backend (Note [Fused normalization
// rows]): layer_norm's rows (group_norm's groups too, ops/norm.cpp) forward and backward, the row
// loops over core/parallel.h's pool; each row's arithmetic is in backend/cpu/kernels.inc, compiled
// once per CPU capability, with the per-element rules of kernels/norm.h. The CUDA twin is
// backend/cuda/norm.cu.
#include <vector>

#include "tensorgrad/backend/cpu/cpu_backend.h"

namespace tg {
namespace cpu {

// Note [Fused normalization rows]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Composed of prims, layer_norm makes about ten passes over the activations in each direction (the
// means, the centred copy, xhat, the products, the reductions), each with a fresh output. Both
// backends instead run it row by row (Backend::layer_norm): on the CPU a row of D values stays in L1
// while its statistics and outputs are computed, so the forward reads x once and writes y once, and
// the backward reads dy and x once and writes dx once. Sums are accumulated in double, in sixteen
// interleaved lanes, whatever T is, the same lanes on every CPU capability. dw and db are summed per
// chunk of rows, then the chunks in order: the chunks depend only on the row count and the pool size,
// so results do not depend on the load. The rows are compiled per capability (Note [CPU
// capabilities]): as one baseline (SSE2) copy, bench/bench_layers' layer_norm (4096, 768) forward +
// backward took 1.15-1.3x libtorch's time on an AVX2 EPYC at one thread, on the AVX2 path 0.8x. The
// 16-bit dtypes run these float32 rows on converted operands (prim/norm.cpp).

namespace {


template <class T>
const T* data_or_null(const RawTensor& t) {
  return t.defined() ? t.data<T>() : nullptr;
}

}  // namespace

void CpuBackend::layer_norm(const RawTensor& x, const RawTensor& w, const RawTensor& b, double eps, const RawTensor& y,
                            const RawTensor& mean, const RawTensor& rstd) {
  const int64_t M = x.shape()[0], D = x.shape()[1];
  dispatch_only<kFloat32, kFloat64>(x.dtype(), "layer_norm", [&](auto tag) {
    using T = decltype(tag);
    const T* xp = x.data<T>();
    const T* wp = data_or_null<T>(w);
    const T* bp = data_or_null<T>(b);
    T* yp = y.data<T>();
    T* mp = mean.data<T>();
    T* rp = rstd.data<T>();
    parallel::run(M, row_parts(M, D), [&](int64_t r0, int64_t r1) {
      with_kernels([&](auto k) {
        for (int64_t r = r0; r < r1; ++r)
          decltype(k)::layer_norm_row(xp + r * D, wp, bp, yp + r * D, D, eps, mp + r, rp + r);
      });
    });
  });
}

void CpuBackend::layer_norm_backward(const RawTensor& dy, const RawTensor& x, const RawTensor& mean, const RawTensor& rstd,
                                     const RawTensor& w, const RawTensor& dx, const RawTensor& dw, const RawTensor& db) {
  const int64_t M = x.shape()[0], D = x.shape()[1];
  dispatch_only<kFloat32, kFloat64>(dy.dtype(), "layer_norm", [&](auto tag) {
    using T = decltype(tag);
    const T* dyp = dy.data<T>();
    const T* xp = x.data<T>();
    const T* mp = mean.data<T>();
    const T* rp = rstd.data<T>();
    const T* wp = data_or_null<T>(w);
    T* dxp = dx.defined() ? dx.data<T>() : nullptr;
    const int parts = row_parts(M, D);
    const bool sums = dw.defined() || db.defined();
    // per chunk partial dw and db, summed in chunk order below
    std::vector<double> partial(sums ? static_cast<std::size_t>(parts) * 2 * D : 0, 0.0);
    // one call per chunk c of rows [c M / parts, (c + 1) M / parts), each with its own partial sums
    parallel::run(parts, parts, [&](int64_t c0, int64_t c1) {
      with_kernels([&](auto k) {
        for (int64_t chunk = c0; chunk < c1; ++chunk) {
          double* pw = sums ? partial.data() + chunk * 2 * D : nullptr;
          double* pb = sums ? pw + D : nullptr;
          for (int64_t r = chunk * M / parts; r < (chunk + 1) * M / parts; ++r)
            decltype(k)::layer_norm_row_backward(dyp + r * D, xp + r * D, mp[r], rp[r], wp,
                                                 dxp != nullptr ? dxp + r * D : nullptr, pw, pb, D);
        }
      });
    });
    if (!sums) return;
    T* dwp = dw.defined() ? dw.data<T>() : nullptr;
    T* dbp = db.defined() ? db.data<T>() : nullptr;
    for (int64_t i = 0; i < D; ++i) {
      double sw = 0, sb = 0;
      for (int c = 0; c < parts; ++c) {
        sw += partial[static_cast<std::size_t>(c) * 2 * D + i];
        sb += partial[static_cast<std::size_t>(c) * 2 * D + D + i];
      }
      if (dwp != nullptr) dwp[i] = static_cast<T>(sw);
      if (dbp != nullptr) dbp[i] = static_cast<T>(sb);
    }
  });
}

}  // namespace cpu
}  // namespace tg
