// cuda/elementwise.cu: the elementwise family of the CUDA Backend: copy, fill, unary (forward and
// backward, one kernel per ops/functors.h functor), binary with broadcasting through strides, where.
// The per-element bodies are ops/functors.h's; the CPU twin is engine/cpu/elementwise.cpp (Note
// [Kernel families] in engine/backend.h); tests/test_cuda.cpp compares the two.
#include <cmath>
#include <cstring>
#include <type_traits>

#include "tensorgrad/cuda/detail/kernels.cuh"

namespace tg {
namespace cuda {
namespace detail {
namespace {

// ------------------------------------------------------------------------------------------------
// Kernel bodies. A *Flat body takes a linear index (all operands contiguous); a *Strided body takes
// one element offset per operand (launch_strided).

/// dst = D(src), contiguous: V elements per load and store (V * sizeof of each type <= 16 bytes, both
/// pointers aligned to it), every load of a thread's vector before its store; scalar tail.
template <class D, class S, int V>
__global__ void cast_vec_kernel(D* dst, const S* src, int64_t n) {
  const int64_t nv = n / V;
  const auto* sv = reinterpret_cast<const Vec<S, V>*>(src);
  auto* dv = reinterpret_cast<Vec<D, V>*>(dst);
  for (int64_t i = global_thread(); i < nv; i += grid_stride()) {
    const Vec<S, V> a = sv[i];
    Vec<D, V> r;
#pragma unroll
    for (int j = 0; j < V; ++j) r.v[j] = static_cast<D>(a.v[j]);
    dv[i] = r;
  }
  for (int64_t i = nv * V + global_thread(); i < n; i += grid_stride()) dst[i] = static_cast<D>(src[i]);
}
/// Elements per vector of a cast from S to D: 16 bytes of the wider type.
template <class D, class S>
constexpr int kCastWidth = 16 / (sizeof(D) > sizeof(S) ? sizeof(D) : sizeof(S));
inline bool aligned_to(const void* p, std::size_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

template <class D, class S>
struct CastStrided {
  D* dst;
  const S* src;
  __device__ void operator()(const int64_t (&o)[2]) const { dst[o[0]] = static_cast<D>(src[o[1]]); }
};

/// dst = value, contiguous and 16-byte aligned: 16-byte stores, scalar tail.
template <class T, int V>
__global__ void fill_vec_kernel(T* dst, int64_t n, T value) {
  const int64_t nv = n / V;
  Vec<T, V> r;
#pragma unroll
  for (int j = 0; j < V; ++j) r.v[j] = value;
  auto* dv = reinterpret_cast<Vec<T, V>*>(dst);
  for (int64_t i = global_thread(); i < nv; i += grid_stride()) dv[i] = r;
  for (int64_t i = nv * V + global_thread(); i < n; i += grid_stride()) dst[i] = value;
}
template <class T>
struct FillStrided {
  T* dst;
  T value;
  __device__ void operator()(const int64_t (&o)[1]) const { dst[o[0]] = value; }
};

template <class T, class F>
struct UnaryStrided {
  T* y;
  const T* x;
  UnaryArgs args;
  __device__ void operator()(const int64_t (&o)[2]) const { y[o[0]] = T(F::forward(opmath_t<T>(x[o[1]]), args)); }
};

/// y = F(x), contiguous: V-wide vector loads and stores (float4 / double2), scalar tail.
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

/// dx = F'(x, y, dy), contiguous: V-wide vector loads of x, y and dy, all before the store of dx
/// (V = 1 when a pointer is not 16-byte aligned); scalar tail.
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

/// a op b for one element: computed in opmath_t<T>, stored as binary_out_t (bool for comparisons).
template <class F, class T>
__device__ __forceinline__ binary_out_t<F, T> apply_binary(T a, T b) {
  using M = opmath_t<T>;
  return binary_out_t<F, T>(F::apply(M(a), M(b)));
}

/// out = a op b, all contiguous and of out's shape: vector loads of both operands (V > 1 only when
/// out has the operands' type).
template <class T, class F, int V>
__global__ void binary_vec_kernel(const T* a, const T* b, binary_out_t<F, T>* out, int64_t n) {
  using O = binary_out_t<F, T>;
  const int64_t nv = V > 1 ? n / V : 0;
  if constexpr (V > 1) {
    static_assert(std::is_same<O, T>::value, "vector stores need out of the operands' type");
    const auto* av = reinterpret_cast<const Vec<T, V>*>(a);
    const auto* bv = reinterpret_cast<const Vec<T, V>*>(b);
    auto* ov = reinterpret_cast<Vec<T, V>*>(out);
    for (int64_t i = global_thread(); i < nv; i += grid_stride()) {
      const Vec<T, V> x = av[i], y = bv[i];
      Vec<T, V> r;
#pragma unroll
      for (int j = 0; j < V; ++j) r.v[j] = apply_binary<F>(x.v[j], y.v[j]);
      ov[i] = r;
    }
  }
  for (int64_t i = nv * V + global_thread(); i < n; i += grid_stride()) out[i] = apply_binary<F>(a[i], b[i]);
}

/// out = a op b where one side is a single (broadcast) element: x * 0.5, bias-free scalars.
template <class T, class F, bool kScalarA>
struct BinaryScalarFlat {
  binary_out_t<F, T>* out;
  const T* tensor;
  const T* scalar;
  __device__ void operator()(int64_t i) const {
    const T s = *scalar;
    out[i] = kScalarA ? apply_binary<F>(s, tensor[i]) : apply_binary<F>(tensor[i], s);
  }
};
template <class T, class F>
struct BinaryStrided {
  binary_out_t<F, T>* out;
  const T *a, *b;
  __device__ void operator()(const int64_t (&o)[3]) const { out[o[0]] = apply_binary<F>(a[o[1]], b[o[2]]); }
};

template <class T>
struct WhereStrided {
  T* out;
  const bool* cond;
  const T *a, *b;
  __device__ void operator()(const int64_t (&o)[4]) const { out[o[0]] = cond[o[1]] ? a[o[2]] : b[o[3]]; }
};

bool all_zero_strides(const Tensor& t) {
  for (int64_t s : t.strides())
    if (s != 0) return false;
  return true;
}

template <class T>
constexpr bool kVectorizable = std::is_same<T, float>::value || std::is_same<T, double>::value ||
                               std::is_same<T, int64_t>::value;

}  // namespace

// ------------------------------------------------------------------------------------------------
// Backend methods. Validation happened in engine/prim.cpp.

void CudaBackend::copy(const Tensor& src, const Tensor& dst) {
  const int64_t n = dst.numel();
  if (n == 0) return;
  DeviceGuard guard(ctx_.device());
  cudaStream_t stream = ctx_.stream();
  const bool flat = src.is_contiguous() && dst.is_contiguous() && src.shape() == dst.shape();
  if (flat && src.dtype() == dst.dtype()) {   // a plain device-to-device copy at copy-engine speed
    count_launch();
    TG_CUDA_CHECK(cudaMemcpyAsync(dst.raw_data(), src.raw_data(), static_cast<std::size_t>(n) * dtype_size(dst.dtype()),
                                  cudaMemcpyDeviceToDevice, stream));
    return;
  }
  dispatch_dtype(src.dtype(), [&](auto s) {
    dispatch_dtype(dst.dtype(), [&](auto d) {
      using S = decltype(s);
      using D = decltype(d);
      if (flat) {
        constexpr int V = kCastWidth<D, S>;
        D* dp = dst.data<D>();
        const S* sp = src.data<S>();
        if (aligned_to(dp, V * sizeof(D)) && aligned_to(sp, V * sizeof(S)))
          TG_LAUNCH(grid_for(n, V), kBlock, 0, stream, cast_vec_kernel<D, S, V>)(dp, sp, n);
        else
          TG_LAUNCH(grid_for(n), kBlock, 0, stream, cast_vec_kernel<D, S, 1>)(dp, sp, n);
        TG_CUDA_CHECK(cudaGetLastError());
      } else launch_strided<2>(stream, dst.shape(), {&dst.strides(), &src.strides()}, CastStrided<D, S>{dst.data<D>(), src.data<S>()});
    });
  });
}

void CudaBackend::fill(const Tensor& dst, double value) {
  const int64_t n = dst.numel();
  if (n == 0) return;
  DeviceGuard guard(ctx_.device());
  cudaStream_t stream = ctx_.stream();
  if (dst.is_contiguous() && value == 0 && !std::signbit(value)) {   // +0 is all-zero bits in every dtype
    count_launch();
    TG_CUDA_CHECK(cudaMemsetAsync(dst.raw_data(), 0, static_cast<std::size_t>(n) * dtype_size(dst.dtype()), stream));
    return;
  }
  dispatch_dtype(dst.dtype(), [&](auto t) {
    using T = decltype(t);
    const T v = static_cast<T>(value);
    if (dst.is_contiguous()) {
      constexpr int V = VecWidth<T>::value;
      if (aligned16(dst.data<T>()))
        TG_LAUNCH(grid_for(n, V), kBlock, 0, stream, fill_vec_kernel<T, V>)(dst.data<T>(), n, v);
      else
        TG_LAUNCH(grid_for(n), kBlock, 0, stream, fill_vec_kernel<T, 1>)(dst.data<T>(), n, v);
      TG_CUDA_CHECK(cudaGetLastError());
    } else launch_strided<1>(stream, dst.shape(), {&dst.strides()}, FillStrided<T>{dst.data<T>(), v});
  });
}

void CudaBackend::unary(UnaryOp op, UnaryArgs args, const Tensor& x, const Tensor& out) {
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
      if (x.is_contiguous() && out.is_contiguous()) {
        constexpr int V = VecWidth<T>::value;
        if (aligned16(xp) && aligned16(yp)) {
          TG_LAUNCH(grid_for(n, V), kBlock, 0, stream, unary_vec_kernel<T, F, V>)(xp, yp, n, args);
        } else {
          TG_LAUNCH(grid_for(n), kBlock, 0, stream, unary_vec_kernel<T, F, 1>)(xp, yp, n, args);
        }
        TG_CUDA_CHECK(cudaGetLastError());
        return;
      }
      launch_strided<2>(stream, out.shape(), {&out.strides(), &x.strides()}, UnaryStrided<T, F>{yp, xp, args});
    });
  });
}

void CudaBackend::unary_backward(UnaryOp op, UnaryArgs args, const Tensor& x, const Tensor& y, const Tensor& dy,
                                 const Tensor& dx) {
  const int64_t n = dx.numel();
  if (n == 0) return;
  DeviceGuard guard(ctx_.device());
  cudaStream_t stream = ctx_.stream();
  // An operand the functor does not read may be undefined: dy stands in for it (never read).
  const Tensor& xs = x.defined() ? x : dy;
  const Tensor& ys = y.defined() ? y : dy;
  dispatch_floating(dx.dtype(), "unary_backward", [&](auto t) {
    using T = decltype(t);
    host_visit(op, [&](auto f) {
      using F = decltype(f);
      if (xs.is_contiguous() && ys.is_contiguous() && dy.is_contiguous() && dx.is_contiguous()) {
        constexpr int V = VecWidth<T>::value;
        const T *xp = xs.data<T>(), *yp = ys.data<T>(), *gp = dy.data<T>();
        T* dp = dx.data<T>();
        if (aligned16(xp) && aligned16(yp) && aligned16(gp) && aligned16(dp))
          TG_LAUNCH(grid_for(n, V), kBlock, 0, stream, unary_backward_vec_kernel<T, F, V>)(dp, xp, yp, gp, n, args);
        else
          TG_LAUNCH(grid_for(n), kBlock, 0, stream, unary_backward_vec_kernel<T, F, 1>)(dp, xp, yp, gp, n, args);
        TG_CUDA_CHECK(cudaGetLastError());
      } else {
        launch_strided<4>(stream, dx.shape(), {&dx.strides(), &xs.strides(), &ys.strides(), &dy.strides()},
                          UnaryBackwardStrided<T, F>{dx.data<T>(), xs.data<T>(), ys.data<T>(), dy.data<T>(), args});
      }
    });
  });
}

void CudaBackend::binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  const int64_t n = out.numel();
  if (n == 0) return;
  DeviceGuard guard(ctx_.device());
  cudaStream_t stream = ctx_.stream();
  dispatch_dtype(a.dtype(), [&](auto t) {
    using T = decltype(t);
    host_visit(op, [&](auto f) {
      using F = decltype(f);
      using O = binary_out_t<F, T>;   // bool for comparisons
      const T *ap = a.data<T>(), *bp = b.data<T>();
      O* op_ = out.data<O>();
      const bool out_flat = out.is_contiguous();
      const bool a_flat = a.is_contiguous() && a.shape() == out.shape();
      const bool b_flat = b.is_contiguous() && b.shape() == out.shape();
      if (out_flat && a_flat && b_flat) {
        constexpr int V = VecWidth<T>::value;
        bool vec = false;
        if constexpr (kVectorizable<T> && std::is_same<O, T>::value) {
          vec = aligned16(ap) && aligned16(bp) && aligned16(op_);
          if (vec) TG_LAUNCH(grid_for(n, V), kBlock, 0, stream, binary_vec_kernel<T, F, V>)(ap, bp, op_, n);
        }
        if (!vec) TG_LAUNCH(grid_for(n), kBlock, 0, stream, binary_vec_kernel<T, F, 1>)(ap, bp, op_, n);
        TG_CUDA_CHECK(cudaGetLastError());
      } else if (out_flat && a_flat && all_zero_strides(b)) {
        launch_flat(stream, n, BinaryScalarFlat<T, F, false>{op_, ap, bp});
      } else if (out_flat && b_flat && all_zero_strides(a)) {
        launch_flat(stream, n, BinaryScalarFlat<T, F, true>{op_, bp, ap});
      } else {
        launch_strided<3>(stream, out.shape(), {&out.strides(), &a.strides(), &b.strides()},
                          BinaryStrided<T, F>{op_, ap, bp});
      }
    });
  });
}

void CudaBackend::where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out) {
  if (out.numel() == 0) return;
  DeviceGuard guard(ctx_.device());
  cudaStream_t stream = ctx_.stream();
  dispatch_dtype(out.dtype(), [&](auto t) {
    using T = decltype(t);
    launch_strided<4>(stream, out.shape(), {&out.strides(), &cond.strides(), &a.strides(), &b.strides()},
                      WhereStrided<T>{out.data<T>(), cond.data<bool>(), a.data<T>(), b.data<T>()});
  });
}

}  // namespace detail
}  // namespace cuda
}  // namespace tg
