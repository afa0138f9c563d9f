// backend/cuda/unary.cu: the unary part of the elementwise family of the CUDA Backend: one kernel per
// kernels/elementwise.h functor and floating dtype, forward (y = F(x)) and backward (dx = F'(x, y, dy)).
// The CPU twin is backend/cpu/unary.cpp (Note [Kernel families] in backend/backend.h); copy, fill,
// binary and where are in backend/cuda/elementwise.cu. tests/test_cuda.cpp compares the two backends.
//
// Each (dtype, functor) pair has two kernels: a vectorized one for contiguous, 16-byte-aligned operands,
// and the strided launcher's (backend/cuda/kernels.cuh) for everything else, an unaligned contiguous
// view included (it coalesces to one dim and walks it with stride 1). There are 4 dtypes x ~18
// functors x 2 directions of them, so every kernel variant more here is ~150 more kernels to compile.
#include "tensorgrad/backend/cuda/kernels.cuh"

namespace tg {
namespace cuda {
namespace detail {
namespace {

template <class T, class F>
struct UnaryStrided {
  T* y;
  const T* x;
  UnaryArgs args;
  __device__ void operator()(const int64_t (&o)[2]) const { y[o[0]] = T(F::forward(opmath_t<T>(x[o[1]]), args)); }
};

/// y = F(x), contiguous and 16-byte aligned: V-wide vector loads and stores (float4 / double2 / 8 halves),
/// scalar tail.
template <class T, class F, int V>
__global__ void unary_vec_kernel(const T* x, T* y, int64_t n, UnaryArgs args) {
  using M = opmath_t<T>;   // float for the 16-bit types: Note [Half precision arithmetic]
  const int64_t nv = n / V;
  const auto* xv = reinterpret_cast<const Vec<T, V>*>(x);
  auto* yv = reinterpret_cast<Vec<T, V>*>(y);
  for (int64_t i = global_thread(); i < nv; i += grid_stride()) {
    const Vec<T, V> a = xv[i];
    Vec<T, V> r;
#pragma unroll
    for (int j = 0; j < V; ++j) r.v[j] = T(F::forward(M(a.v[j]), args));
    yv[i] = r;
  }
  for (int64_t i = nv * V + global_thread(); i < n; i += grid_stride()) y[i] = T(F::forward(M(x[i]), args));
}

/// dx = F'(x, y, dy), contiguous and 16-byte aligned: V-wide vector loads of x, y and dy, all before
/// the store of dx; scalar tail.
template <class T, class F, int V>
__global__ void unary_backward_vec_kernel(T* dx, const T* x, const T* y, const T* dy, int64_t n, UnaryArgs args) {
  using M = opmath_t<T>;
  const int64_t nv = n / V;
  for (int64_t i = global_thread(); i < nv; i += grid_stride()) {
    const Vec<T, V> a = load_vec<T, V>(x + i * V), b = load_vec<T, V>(y + i * V), g = load_vec<T, V>(dy + i * V);
    Vec<T, V> r;
#pragma unroll
    for (int j = 0; j < V; ++j) r.v[j] = T(F::backward(M(a.v[j]), M(b.v[j]), M(g.v[j]), args));
    store_vec<T, V>(dx + i * V, r);
  }
  for (int64_t i = nv * V + global_thread(); i < n; i += grid_stride()) dx[i] = T(F::backward(M(x[i]), M(y[i]), M(dy[i]), args));
}
template <class T, class F>
struct UnaryBackwardStrided {
  T* dx;
  const T *x, *y, *dy;
  UnaryArgs args;
  __device__ void operator()(const int64_t (&o)[4]) const {
    using M = opmath_t<T>;
    dx[o[0]] = T(F::backward(M(x[o[1]]), M(y[o[2]]), M(dy[o[3]]), args));
  }
};

}  // namespace

// Validation happened in prim/.

void CudaBackend::unary(UnaryOp op, UnaryArgs args, const RawTensor& x, const RawTensor& out) {
  const int64_t n = out.numel();
  if (n == 0) return;
  DeviceGuard guard(ctx_.device());
  cudaStream_t stream = ctx_.stream();
  dispatch_floating(x.dtype(), "unary", [&](auto t) {
    using T = decltype(t);
    host_visit(op, [&](auto f) {
      using F = decltype(f);
      const T* xp = x.data<T>();
      T* yp = out.data<T>();
      if (x.is_contiguous() && out.is_contiguous() && aligned16(xp) && aligned16(yp)) {
        constexpr int V = VecWidth<T>::value;
        TG_LAUNCH(grid_for(n, V), kBlock, 0, stream, unary_vec_kernel<T, F, V>)(xp, yp, n, args);
        TG_CUDA_CHECK(cudaGetLastError());
        return;
      }
      launch_strided<2>(stream, out.shape(), {&out.strides(), &x.strides()}, UnaryStrided<T, F>{yp, xp, args});
    });
  });
}

void CudaBackend::unary_backward(UnaryOp op, UnaryArgs args, const RawTensor& x, const RawTensor& y, const RawTensor& dy,
                                 const RawTensor& dx) {
  const int64_t n = dx.numel();
  if (n == 0) return;
  DeviceGuard guard(ctx_.device());
  cudaStream_t stream = ctx_.stream();
  // An operand the functor does not read may be undefined: dy stands in for it (never read).
  const RawTensor& xs = x.defined() ? x : dy;
  const RawTensor& ys = y.defined() ? y : dy;
  dispatch_floating(dx.dtype(), "unary_backward", [&](auto t) {
    using T = decltype(t);
    host_visit(op, [&](auto f) {
      using F = decltype(f);
      const T *xp = xs.data<T>(), *yp = ys.data<T>(), *gp = dy.data<T>();
      T* dp = dx.data<T>();
      if (xs.is_contiguous() && ys.is_contiguous() && dy.is_contiguous() && dx.is_contiguous() && aligned16(xp) &&
          aligned16(yp) && aligned16(gp) && aligned16(dp)) {
        constexpr int V = VecWidth<T>::value;
        TG_LAUNCH(grid_for(n, V), kBlock, 0, stream, unary_backward_vec_kernel<T, F, V>)(dp, xp, yp, gp, n, args);
        TG_CUDA_CHECK(cudaGetLastError());
        return;
      }
      launch_strided<4>(stream, dx.shape(), {&dx.strides(), &xs.strides(), &ys.strides(), &dy.strides()},
                        UnaryBackwardStrided<T, F>{dp, xp, yp, gp, args});
    });
  });
}

}  // namespace detail
}  // namespace cuda
}  // namespace tg
