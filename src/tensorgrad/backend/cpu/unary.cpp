// backend/cpu/unary.cpp: the unary part of the elementwise family of the CPU backend: forward
// (y = F(x)) and backward (dx = F'(x, y, dy)) for every kernels/elementwise.h functor and floating dtype. The
// CUDA twin is backend/cuda/unary.cu (Note [Kernel families] in backend/backend.h); contiguous rows go to the
// capability clones of backend/cpu/kernels.inc; copy, fill, binary and where are in elementwise.cpp.
#include "tensorgrad/backend/cpu/cpu_backend.h"

namespace tg {
namespace cpu {

void CpuBackend::unary(UnaryOp op, UnaryArgs args, const RawTensor& x, const RawTensor& out) {
  dispatch_floating(x.dtype(), "unary", [&](auto t) {
    using T = decltype(t);
    visit(op, [&](auto f) {
      using F = decltype(f);
      const T* xp = x.data<T>();
      T* yp = out.data<T>();
      auto L = make_loop<2>(out.shape(), {&out.strides(), &x.strides()});
      run_loop(L, [&](auto o, int64_t n, auto st) {
        T* y = yp + o[0];
        const T* in = xp + o[1];
        if (st[0] == 1 && st[1] == 1) {
          with_kernels([&](auto k) { decltype(k)::template unary_contiguous<F>(in, y, n, args); });
        } else {
          using M = opmath_t<T>;
          for (int64_t i = 0; i < n; ++i) y[i * st[0]] = T(F::forward(M(in[i * st[1]]), args));
        }
      });
    });
  });
}

void CpuBackend::unary_backward(UnaryOp op, UnaryArgs args, const RawTensor& x, const RawTensor& y, const RawTensor& dy,
                    const RawTensor& dx) {
  // An operand the functor does not read may be undefined: dy stands in for it (never read).
  const RawTensor& xs = x.defined() ? x : dy;
  const RawTensor& ys = y.defined() ? y : dy;
  dispatch_floating(dx.dtype(), "unary_backward", [&](auto t) {
    using T = decltype(t);
    visit(op, [&](auto f) {
      using F = decltype(f);
      const T *xp = xs.data<T>(), *yp = ys.data<T>(), *gp = dy.data<T>();
      T* dp = dx.data<T>();
      auto L = make_loop<4>(dx.shape(), {&dx.strides(), &xs.strides(), &ys.strides(), &dy.strides()});
      run_loop(L, [&](auto o, int64_t n, auto st) {
        if (st[0] == 1 && st[1] == 1 && st[2] == 1 && st[3] == 1) {
          with_kernels([&](auto k) {
            decltype(k)::template unary_backward_contiguous<F>(xp + o[1], yp + o[2], gp + o[3], dp + o[0], n, args);
          });
        } else {
          using M = opmath_t<T>;
          for (int64_t i = 0; i < n; ++i)
            dp[o[0] + i * st[0]] =
                T(F::backward(M(xp[o[1] + i * st[1]]), M(yp[o[2] + i * st[2]]), M(gp[o[3] + i * st[3]]), args));
        }
      });
    });
  });
}

}  // namespace cpu
}  // namespace tg
