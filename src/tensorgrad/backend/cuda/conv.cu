// backend/cuda/conv.cu: convolution and pooling of the CUDA Backend. conv2d is im2col + cuBLAS: a chunk of
// images is unfolded into one column buffer (one thread per column element), multiplied by the
// weight through CudaBackend::gemm (strided-batched over the images of the chunk), and the input
// gradient is folded back by col2im, one thread per input element summing the taps that read it (no
// atomics). Pooling is one thread per output element; the pooling backward adds with atomicAdd, so
// the last bits of overlapping windows' sums may vary from run to run. Window rules shared with the
// CPU loops: kernels/pool.h (the windows, their maximum and mean) and kernels/conv.h (the input element
// each tap reads). The CPU twin is backend/cpu/conv.cpp.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "tensorgrad/backend/cuda/kernels.cuh"
#include "tensorgrad/kernels/conv.h"
#include "tensorgrad/kernels/pool.h"

namespace tg {
namespace cuda {
namespace detail {
namespace {

// Column buffers hold at most this many elements per chunk of images (256 MiB of float32).
constexpr int64_t kMaxColumnElements = int64_t(1) << 26;

/// col (nb, C KH KW, OH OW) from x (nb, C, H, W): element (n, (c, kh, kw), (oh, ow)) = x[n][c][ih][iw]
/// with ih = oh sH - pH + kh dH (likewise iw), 0 outside the input.
template <class T>
struct Im2col {
  const T* x;
  T* col;
  Conv2dArgs a;
  __device__ void operator()(int64_t e) const {
    const int64_t ow = e % a.OW;
    int64_t r = e / a.OW;
    const int64_t oh = r % a.OH;
    r /= a.OH;
    const int64_t kw = r % a.KW;
    r /= a.KW;
    const int64_t kh = r % a.KH;
    r /= a.KH;   // r = n C + c
    const int64_t ih = conv_input_index(oh, kh, a.stride_h, a.pad_h, a.dil_h);
    const int64_t iw = conv_input_index(ow, kw, a.stride_w, a.pad_w, a.dil_w);
    col[e] = (ih >= 0 && ih < a.H && iw >= 0 && iw < a.W) ? x[(r * a.H + ih) * a.W + iw] : T(0);
  }
};

/// dx (nb, C, H, W) = the sum of the col entries that im2col read from each element. Sets dx.
template <class T>
struct Col2im {
  const T* col;
  T* dx;
  Conv2dArgs a;
  __device__ void operator()(int64_t e) const {
    const int64_t w = e % a.W;
    int64_t r = e / a.W;
    const int64_t h = r % a.H;
    r /= a.H;   // r = n C + c
    const int64_t L = a.OH * a.OW;
    const T* base = col + r * a.KH * a.KW * L;
    T s = T(0);
    for (int64_t kh = 0; kh < a.KH; ++kh) {
      const int64_t oh = conv_output_index(h, kh, a.stride_h, a.pad_h, a.dil_h, a.OH);
      if (oh < 0) continue;
      for (int64_t kw = 0; kw < a.KW; ++kw) {
        const int64_t ow = conv_output_index(w, kw, a.stride_w, a.pad_w, a.dil_w, a.OW);
        if (ow < 0) continue;
        s += base[(kh * a.KW + kw) * L + oh * a.OW + ow];
      }
    }
    dx[e] = s;
  }
};

/// out (nb, O, L) element = bias[o]. Sets out.
template <class T>
struct FillBias {
  const T* bias;
  T* out;
  int64_t O, L;
  __device__ void operator()(int64_t e) const { out[e] = bias[(e / L) % O]; }
};

template <class T>
struct MaxPool {
  const T* x;
  T* out;
  int64_t* indices;
  Pool2dArgs a;
  __device__ void operator()(int64_t e) const {
    const int64_t ow = e % a.OW, oh = (e / a.OW) % a.OH, p = e / (a.OW * a.OH);
    const PoolSpan sh = pool_span_h(a, oh);
    const PoolSpan sw = pool_span_w(a, ow);
    int64_t at = 0;
    out[e] = max_window(x + p * a.H * a.W, a.W, sh, sw, at);
    indices[e] = at;
  }
};

template <class T>
struct MaxPoolBackward {
  const T* dy;
  const int64_t* indices;
  T* dx;
  Pool2dArgs a;
  __device__ void operator()(int64_t e) const {
    const int64_t p = e / (a.OW * a.OH);
    atomicAdd(dx + p * a.H * a.W + indices[e], dy[e]);
  }
};

template <class T>
struct AvgPool {
  const T* x;
  T* out;
  Pool2dArgs a;
  __device__ void operator()(int64_t e) const {
    const int64_t ow = e % a.OW, oh = (e / a.OW) % a.OH, p = e / (a.OW * a.OH);
    const PoolSpan sh = pool_span_h(a, oh);
    const PoolSpan sw = pool_span_w(a, ow);
    out[e] = avg_window(x + p * a.H * a.W, a.W, sh, sw);
  }
};

template <class T>
struct AvgPoolBackward {
  const T* dy;
  T* dx;
  Pool2dArgs a;
  __device__ void operator()(int64_t e) const {
    const int64_t ow = e % a.OW, oh = (e / a.OW) % a.OH, p = e / (a.OW * a.OH);
    const PoolSpan sh = pool_span_h(a, oh);
    const PoolSpan sw = pool_span_w(a, ow);
    T* plane = dx + p * a.H * a.W;
    const T g = dy[e] / T(avg_divisor(sh, sw));
    for (int64_t h = sh.begin; h < sh.end; ++h)
      for (int64_t w = sw.begin; w < sw.end; ++w) atomicAdd(plane + h * a.W + w, g);
  }
};

/// One row-major product on the device: C[i] (M, N) = op(A[i]) op(B[i]) + beta C[i], i < batch.
template <class T>
void gemm_on(CudaBackend& be, bool ta, bool tb, int64_t batch, int64_t M, int64_t N, int64_t K, const T* A,
             int64_t lda, int64_t sa, const T* B, int64_t ldb, int64_t sb, double beta, T* C, int64_t ldc, int64_t sc) {
  be.gemm(make_gemm(dtype_of<T>(), batch, M, N, K, {A, ta, lda, sa}, {B, tb, ldb, sb}, C, ldc, sc, beta));
}

/// Images per chunk: as many as keep the column buffer under kMaxColumnElements (at least one).
int64_t chunk_images(const Conv2dArgs& a) {
  const int64_t per_image = std::max<int64_t>(1, a.C * a.KH * a.KW * a.OH * a.OW);
  return std::max<int64_t>(1, std::min<int64_t>(a.N, kMaxColumnElements / per_image));
}

}  // namespace

void CudaBackend::conv2d(const RawTensor& x, const RawTensor& weight, const RawTensor& bias, const Conv2dArgs& a,
                         const RawTensor& out) {
  if (out.numel() == 0) return;
  DeviceGuard guard(ctx_.device());
  dispatch_only<kFloat32, kFloat64>(a.dtype, "conv2d", [&](auto t) {
    using T = decltype(t);
    const int64_t G = a.groups, Cg = a.C / G, Og = a.O / G, L = a.OH * a.OW, K = Cg * a.KH * a.KW;
    const int64_t chunk = chunk_images(a);
    const RawTensor col = RawTensor::empty({chunk * a.C * a.KH * a.KW * L}, a.dtype, out.device());
    for (int64_t n0 = 0; n0 < a.N; n0 += chunk) {
      const int64_t nb = std::min(chunk, a.N - n0);
      const T* xp = x.data<T>() + n0 * a.C * a.H * a.W;
      T* yp = out.data<T>() + n0 * a.O * L;
      launch_flat(ctx_.stream(), nb * a.C * a.KH * a.KW * L, Im2col<T>{xp, col.data<T>(), a});
      if (bias.defined()) launch_flat(ctx_.stream(), nb * a.O * L, FillBias<T>{bias.data<T>(), yp, a.O, L});
      // y[n, g] (Og, L) = W_g (Og, K) . col[n, g] (K, L) for the nb images
      for (int64_t g = 0; g < G; ++g)
        gemm_on<T>(*this, false, false, nb, Og, L, K, weight.data<T>() + g * Og * K, K, 0, col.data<T>() + g * K * L, L,
                   a.C * a.KH * a.KW * L, bias.defined() ? 1.0 : 0.0, yp + g * Og * L, L, a.O * L);
    }
  });
}

void CudaBackend::conv2d_backward(const RawTensor& x, const RawTensor& weight, const RawTensor& dy, const Conv2dArgs& a,
                                  const RawTensor& dx, const RawTensor& dweight, const RawTensor& dbias) {
  DeviceGuard guard(ctx_.device());
  dispatch_only<kFloat32, kFloat64>(a.dtype, "conv2d", [&](auto t) {
    using T = decltype(t);
    const int64_t G = a.groups, Cg = a.C / G, Og = a.O / G, L = a.OH * a.OW, K = Cg * a.KH * a.KW;
    if (dbias.defined()) reduce(ReduceOp::Sum, dy.reshape({a.N, a.O, L}), dbias.reshape({1, a.O, 1}));   // db = sum of dy
    if (!dx.defined() && !dweight.defined()) return;
    const int64_t chunk = chunk_images(a);
    const RawTensor col = RawTensor::empty({chunk * a.C * a.KH * a.KW * L}, a.dtype, dy.device());
    for (int64_t n0 = 0; n0 < a.N; n0 += chunk) {
      const int64_t nb = std::min(chunk, a.N - n0);
      const T* dyp = dy.data<T>() + n0 * a.O * L;
      if (dweight.defined()) {
        launch_flat(ctx_.stream(), nb * a.C * a.KH * a.KW * L,
                    Im2col<T>{x.data<T>() + n0 * a.C * a.H * a.W, col.data<T>(), a});
        // dW_g (Og, K) (+)= dy[n, g] (Og, L) . col[n, g] (K, L)^T, image by image
        for (int64_t n = 0; n < nb; ++n)
          for (int64_t g = 0; g < G; ++g)
            gemm_on<T>(*this, false, true, 1, Og, K, L, dyp + (n * a.O + g * Og) * L, L, 0,
                       col.data<T>() + (n * a.C * a.KH * a.KW + g * K) * L, L, 0, n0 + n == 0 ? 0.0 : 1.0,
                       dweight.data<T>() + g * Og * K, K, 0);
      }
      if (dx.defined()) {
        // dcol[n, g] (K, L) = W_g (Og, K)^T . dy[n, g] (Og, L), then folded back onto dx
        for (int64_t g = 0; g < G; ++g)
          gemm_on<T>(*this, true, false, nb, K, L, Og, weight.data<T>() + g * Og * K, K, 0, dyp + g * Og * L, L, a.O * L,
                     0.0, col.data<T>() + g * K * L, L, a.C * a.KH * a.KW * L);
        launch_flat(ctx_.stream(), nb * a.C * a.H * a.W,
                    Col2im<T>{col.data<T>(), dx.data<T>() + n0 * a.C * a.H * a.W, a});
      }
    }
  });
}

void CudaBackend::max_pool2d(const RawTensor& x, const Pool2dArgs& a, const RawTensor& out, const RawTensor& indices) {
  if (out.numel() == 0) return;
  DeviceGuard guard(ctx_.device());
  dispatch_only<kFloat32, kFloat64>(x.dtype(), "max_pool2d", [&](auto t) {
    using T = decltype(t);
    launch_flat(ctx_.stream(), out.numel(), MaxPool<T>{x.data<T>(), out.data<T>(), indices.data<int64_t>(), a});
  });
}

void CudaBackend::max_pool2d_backward(const RawTensor& dy, const RawTensor& indices, const Pool2dArgs& a, const RawTensor& dx) {
  if (dx.numel() == 0) return;
  DeviceGuard guard(ctx_.device());
  fill(dx, 0.0);
  dispatch_only<kFloat32, kFloat64>(dy.dtype(), "max_pool2d", [&](auto t) {
    using T = decltype(t);
    launch_flat(ctx_.stream(), dy.numel(), MaxPoolBackward<T>{dy.data<T>(), indices.data<int64_t>(), dx.data<T>(), a});
  });
}

void CudaBackend::avg_pool2d(const RawTensor& x, const Pool2dArgs& a, const RawTensor& out) {
  if (out.numel() == 0) return;
  DeviceGuard guard(ctx_.device());
  dispatch_only<kFloat32, kFloat64>(x.dtype(), "avg_pool2d", [&](auto t) {
    using T = decltype(t);
    launch_flat(ctx_.stream(), out.numel(), AvgPool<T>{x.data<T>(), out.data<T>(), a});
  });
}

void CudaBackend::avg_pool2d_backward(const RawTensor& dy, const Pool2dArgs& a, const RawTensor& dx) {
  if (dx.numel() == 0) return;
  DeviceGuard guard(ctx_.device());
  fill(dx, 0.0);
  dispatch_only<kFloat32, kFloat64>(dy.dtype(), "avg_pool2d", [&](auto t) {
    using T = decltype(t);
    launch_flat(ctx_.stream(), dy.numel(), AvgPoolBackward<T>{dy.data<T>(), dx.data<T>(), a});
  });
}

}  // namespace detail
}  // namespace cuda
}  // namespace tg
