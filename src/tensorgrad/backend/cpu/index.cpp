// backend/cpu/index.cpp: the indexing family of the CPU backend: index_select, index_add, gather,
// scatter_add. The CUDA twin is backend/cuda/index.cu (Note [Kernel families] in backend/backend.h).
#include "tensorgrad/backend/cpu/cpu_backend.h"

namespace tg {
namespace cpu {
namespace {

/// gather: out[i] = x[i with dim -> index[i]];  scatter: x[i with dim -> index[i]] += out[i].
void gather_scatter(const RawTensor& x, int64_t dim, const RawTensor& index, const RawTensor& other, bool scatter) {
  // Walk index's shape; x is read with its own strides except along dim, where index picks.
  Shape xs = x.strides();
  const int64_t dim_stride = x.dim() ? xs[dim] : 0;
  if (x.dim()) xs[dim] = 0;
  const int64_t* ip = index.data<int64_t>();
  dispatch_dtype(x.dtype(), [&](auto t) {
    using T = decltype(t);
    T* xp = x.data<T>();
    T* op = other.data<T>();
    auto L = make_loop<3>(index.shape(), {&other.strides(), &index.strides(), &xs});
    run_loop(L, [&](auto o, int64_t n, auto st) {
      for (int64_t i = 0; i < n; ++i) {
        T* xe = xp + o[2] + i * st[2] + ip[o[1] + i * st[1]] * dim_stride;
        T* oe = op + o[0] + i * st[0];
        if (scatter) *xe += *oe;
        else *oe = *xe;
      }
    }, /*serial=*/scatter);   // scatter_add may hit one element twice
  });
}

}  // namespace

void CpuBackend::index_select(const RawTensor& x, int64_t dim, const RawTensor& index, const RawTensor& out) {
  const RowView r = rows_of(x, dim);
  const int64_t K = index.numel();
  const int64_t* ip = index.data<int64_t>();
  dispatch_dtype(x.dtype(), [&](auto t) {
    using T = decltype(t);
    const T* xp = x.data<T>();
    T* yp = out.data<T>();
    parallel_for(r.outer * K, r.inner, [&](int64_t b, int64_t e) {
      for (int64_t k = b; k < e; ++k) {
        const int64_t o = k / K, j = k % K;
        std::copy_n(xp + (o * r.D + ip[j]) * r.inner, r.inner, yp + (o * K + j) * r.inner);
      }
    });
  });
}

void CpuBackend::index_add(const RawTensor& dst, int64_t dim, const RawTensor& index, const RawTensor& src) {
  const RowView r = rows_of(dst, dim);
  const int64_t K = index.numel();
  const int64_t* ip = index.data<int64_t>();
  dispatch_dtype(dst.dtype(), [&](auto t) {
    using T = decltype(t);
    T* dp = dst.data<T>();
    const T* sp = src.data<T>();
    parallel_for(r.outer, K * r.inner, [&](int64_t b, int64_t e) {   // distinct o never collide
      for (int64_t o = b; o < e; ++o)
        for (int64_t j = 0; j < K; ++j) {
          T* d = dp + (o * r.D + ip[j]) * r.inner;
          const T* s = sp + (o * K + j) * r.inner;
          for (int64_t i = 0; i < r.inner; ++i) d[i] += s[i];
        }
    });
  });
}

void CpuBackend::gather(const RawTensor& x, int64_t dim, const RawTensor& index, const RawTensor& out) {
  gather_scatter(x, dim, index, out, /*scatter=*/false);
}

void CpuBackend::scatter_add(const RawTensor& dst, int64_t dim, const RawTensor& index, const RawTensor& src) {
  gather_scatter(dst, dim, index, src, /*scatter=*/true);
}

}  // namespace cpu
}  // namespace tg
