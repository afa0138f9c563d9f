// backend/cpu/elementwise.cpp: the elementwise family of the CPU backend: copy (casts between every pair
// of dtypes), fill, binary with broadcasting through strides, where; unary is in backend/cpu/unary.cpp.
// The per-element bodies are kernels/elementwise.h's, shared with the CUDA twin backend/cuda/elementwise.cu (Note
// [Kernel families] in backend/backend.h); contiguous rows go to the capability clones of
// backend/cpu/kernels.inc. The family is two files on each backend so that its instantiations (every
// dtype pair, every functor, each in every CPU capability) compile in parallel.
#include "tensorgrad/backend/cpu/cpu_backend.h"

namespace tg {
namespace cpu {

void CpuBackend::copy(const RawTensor& src, const RawTensor& dst) {
  dispatch_dtype(src.dtype(), [&](auto s) {
    dispatch_dtype(dst.dtype(), [&](auto d) {
      using S = decltype(s);
      using D = decltype(d);
      const S* sp = src.data<S>();
      D* dp = dst.data<D>();
      auto L = make_loop<2>(dst.shape(), {&dst.strides(), &src.strides()});
      run_loop(L, [&](auto o, int64_t n, auto st) {
        D* out = dp + o[0];
        const S* in = sp + o[1];
        if (st[0] == 1 && st[1] == 1) {
          with_kernels([&](auto k) { decltype(k)::template convert_contiguous<S, D>(in, out, n); });
        } else {
          for (int64_t i = 0; i < n; ++i) out[i * st[0]] = static_cast<D>(in[i * st[1]]);
        }
      });
    });
  });
}

void CpuBackend::fill(const RawTensor& dst, double value) {
  dispatch_dtype(dst.dtype(), [&](auto t) {
    using T = decltype(t);
    const T v = static_cast<T>(value);
    T* p = dst.data<T>();
    auto L = make_loop<1>(dst.shape(), {&dst.strides()});
    run_loop(L, [&](auto o, int64_t n, auto st) {
      for (int64_t i = 0; i < n; ++i) p[o[0] + i * st[0]] = v;
    });
  });
}

void CpuBackend::binary(BinaryOp op, const RawTensor& a, const RawTensor& b, const RawTensor& out) {
  dispatch_dtype(a.dtype(), [&](auto t) {
    using T = decltype(t);
    visit(op, [&](auto f) {
      using F = decltype(f);
      using O = binary_out_t<F, T>;   // bool for comparisons
      const T *ap = a.data<T>(), *bp = b.data<T>();
      O* op_ = out.data<O>();
      if (a.is_contiguous() && b.is_contiguous() && out.is_contiguous() && a.shape() == out.shape() &&
          b.shape() == out.shape()) {   // flat fast path: no loop bookkeeping
        parallel_for(out.numel(), 1, [&](int64_t begin, int64_t end) {
          with_kernels([&](auto k) {
            decltype(k)::template binary_contiguous<F, T, 1, 1>(ap + begin, bp + begin, op_ + begin, end - begin);
          });
        });
        return;
      }
      auto L = make_loop<3>(out.shape(), {&out.strides(), &a.strides(), &b.strides()});
      run_loop(L, [&](auto o, int64_t n, auto st) {
        O* y = op_ + o[0];
        const T* u = ap + o[1];
        const T* v = bp + o[2];
        if (st[0] == 1 && st[1] == 1 && st[2] == 1) {          // the vectorizable cases first
          with_kernels([&](auto k) { decltype(k)::template binary_contiguous<F, T, 1, 1>(u, v, y, n); });
        } else if (st[0] == 1 && st[1] == 1 && st[2] == 0) {
          with_kernels([&](auto k) { decltype(k)::template binary_contiguous<F, T, 1, 0>(u, v, y, n); });
        } else if (st[0] == 1 && st[1] == 0 && st[2] == 1) {
          with_kernels([&](auto k) { decltype(k)::template binary_contiguous<F, T, 0, 1>(u, v, y, n); });
        } else {
          using M = opmath_t<T>;
          for (int64_t i = 0; i < n; ++i) y[i * st[0]] = O(F::apply(M(u[i * st[1]]), M(v[i * st[2]])));
        }
      });
    });
  });
}

void CpuBackend::where(const RawTensor& cond, const RawTensor& a, const RawTensor& b, const RawTensor& out) {
  dispatch_dtype(out.dtype(), [&](auto t) {
    using T = decltype(t);
    const bool* cp = cond.data<bool>();
    const T *ap = a.data<T>(), *bp = b.data<T>();
    T* yp = out.data<T>();
    auto L = make_loop<4>(out.shape(), {&out.strides(), &cond.strides(), &a.strides(), &b.strides()});
    run_loop(L, [&](auto o, int64_t n, auto st) {
      for (int64_t i = 0; i < n; ++i)
        yp[o[0] + i * st[0]] = cp[o[1] + i * st[1]] ? ap[o[2] + i * st[2]] : bp[o[3] + i * st[3]];
    });
  });
}

}  // namespace cpu
}  // namespace tg
