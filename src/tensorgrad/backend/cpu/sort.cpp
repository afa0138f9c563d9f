// backend/cpu/sort.cpp: the sorting family of the CPU backend: argsort. The CUDA twin is backend/cuda/sort.cu.
#include "tensorgrad/backend/cpu/cpu_backend.h"

namespace tg {
namespace cpu {

// Note [Sort order] in prim/sort.cpp: a stable sort per row, NaN above every number.
void CpuBackend::argsort(const RawTensor& x, bool descending, const RawTensor& indices) {
  const int64_t N = x.dim() ? x.shape().back() : 1, R = N ? x.numel() / N : 0;
  int64_t* ip = indices.data<int64_t>();
  dispatch_dtype(x.dtype(), [&](auto t) {
    using T = decltype(t);
    using V = opmath_t<T>;
    const T* xp = x.data<T>();
    parallel_for(R, N * 16, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const T* row = xp + r * N;
        int64_t* out = ip + r * N;
        for (int64_t j = 0; j < N; ++j) out[j] = j;
        auto at = [row](int64_t j) { return static_cast<V>(row[j]); };
        auto is_nan = [](V v) { return v != v; };
        if (descending)
          std::stable_sort(out, out + N, [&](int64_t a, int64_t b) {
            const V va = at(a), vb = at(b);
            return va > vb || (is_nan(va) && !is_nan(vb));
          });
        else
          std::stable_sort(out, out + N, [&](int64_t a, int64_t b) {
            const V va = at(a), vb = at(b);
            return va < vb || (is_nan(vb) && !is_nan(va));
          });
      }
    });
  });
}

}  // namespace cpu
}  // namespace tg
