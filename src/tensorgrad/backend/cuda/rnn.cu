// backend/cuda/rnn.cu: the recurrent family of the CUDA Backend: the LSTM and GRU cells' pointwise step
// and its gradient, one launch each (Note [Fused recurrent cells] in kernels/rnn.h), one thread per
// element with kernels/rnn.h's rules. The CPU twin is backend/cpu/rnn.cpp.
#include <cstdint>

#include "tensorgrad/backend/cuda/kernels.cuh"
#include "tensorgrad/kernels/rnn.h"

namespace tg {
namespace cuda {
namespace detail {
namespace {

// One thread per element e = n H + j, on the layouts of Note [Fused recurrent cells] (the LSTM's
// and the GRU's workspaces (N, H, 8)).
template <class T>
struct LstmCell {
  const T *xg, *hg, *cx;
  T *hc, *ws;
  int64_t half, H;   // c' is `half` elements after h' (hc's stride(0))
  __device__ void operator()(int64_t e) const {
    const int64_t n = e / H, j = e % H;
    const T* x = xg + n * 4 * H + j;
    const T* h = hg + n * 4 * H + j;
    T* w = ws + e * 8;
    const T sum[4] = {x[0] + h[0], x[H] + h[H], x[2 * H] + h[2 * H], x[3 * H] + h[3 * H]};
    T act[4];
    rnn_math::lstm_cell(sum, cx[e], act, hc[e], hc[half + e]);
    for (int k = 0; k < 4; ++k) {
      w[k] = sum[k];
      w[4 + k] = act[k];
    }
  }
};

template <class T>
struct LstmCellBackward {
  const T *dhc, *cx, *ws;
  T *dgates, *dcx;
  int64_t half, H;   // dc' is `half` elements after dh' (dhc's stride(0))
  __device__ void operator()(int64_t e) const {
    const int64_t n = e / H, j = e % H;
    const T* w = ws + e * 8;
    const T act[4] = {w[4], w[5], w[6], w[7]};
    T d[4];
    rnn_math::lstm_cell_backward(act, cx[e], dhc[e], dhc[half + e], d, dcx[e]);
    for (int k = 0; k < 4; ++k) dgates[n * 4 * H + k * H + j] = d[k];
  }
};

template <class T>
struct GruCell {
  const T *xg, *hg, *hx;
  T *hy, *ws;
  int64_t H;
  __device__ void operator()(int64_t e) const {
    const int64_t n = e / H, j = e % H;
    const T* x = xg + n * 3 * H + j;
    const T* h = hg + n * 3 * H + j;
    const T sr = x[0] + h[0], sz = x[H] + h[H], xn = x[2 * H], hn = h[2 * H];
    T act[3];
    rnn_math::gru_cell(sr, sz, xn, hn, hx[e], act, hy[e]);
    const T keep[8] = {sr, sz, xn, hn, act[0], act[1], act[2], T(0)};
    T* w = ws + e * 8;
    for (int k = 0; k < 8; ++k) w[k] = keep[k];
  }
};

template <class T>
struct GruCellBackward {
  const T *dhy, *hx, *ws;
  T *dxg, *dhg, *dhx;
  int64_t H;
  __device__ void operator()(int64_t e) const {
    const int64_t n = e / H, j = e % H;
    const T* w = ws + e * 8;
    const T act[3] = {w[4], w[5], w[6]};
    T g[3], dhn;
    rnn_math::gru_cell_backward(act, w[3], hx[e], dhy[e], g, dhn, dhx[e]);
    T* dx = dxg + n * 3 * H + j;
    T* dh = dhg + n * 3 * H + j;
    for (int k = 0; k < 3; ++k) dx[k * H] = g[k];
    dh[0] = g[0];
    dh[H] = g[1];
    dh[2 * H] = dhn;
  }
};

}  // namespace

// Backend methods. Validation happened in prim/rnn.cpp.

void CudaBackend::lstm_cell(const RawTensor& xg, const RawTensor& hg, const RawTensor& cx, const RawTensor& hc,
                            const RawTensor& ws) {
  const int64_t N = cx.shape()[0], H = cx.shape()[1];
  DeviceGuard guard(ctx_.device());
  dispatch_only<kFloat32, kFloat64>(xg.dtype(), "lstm_cell", [&](auto t) {
    using T = decltype(t);
    launch_flat(ctx_.stream(), N * H,
                LstmCell<T>{xg.data<T>(), hg.data<T>(), cx.data<T>(), hc.data<T>(), ws.data<T>(), hc.strides()[0], H});
  });
}

void CudaBackend::lstm_cell_backward(const RawTensor& dhc, const RawTensor& cx, const RawTensor& ws,
                                     const RawTensor& dgates, const RawTensor& dcx) {
  const int64_t N = cx.shape()[0], H = cx.shape()[1];
  DeviceGuard guard(ctx_.device());
  dispatch_only<kFloat32, kFloat64>(dhc.dtype(), "lstm_cell_backward", [&](auto t) {
    using T = decltype(t);
    launch_flat(ctx_.stream(), N * H,
                LstmCellBackward<T>{dhc.data<T>(), cx.data<T>(), ws.data<T>(), dgates.data<T>(), dcx.data<T>(),
                                    dhc.strides()[0], H});
  });
}

void CudaBackend::gru_cell(const RawTensor& xg, const RawTensor& hg, const RawTensor& hx, const RawTensor& hy,
                           const RawTensor& ws) {
  const int64_t N = hx.shape()[0], H = hx.shape()[1];
  DeviceGuard guard(ctx_.device());
  dispatch_only<kFloat32, kFloat64>(xg.dtype(), "gru_cell", [&](auto t) {
    using T = decltype(t);
    launch_flat(ctx_.stream(), N * H, GruCell<T>{xg.data<T>(), hg.data<T>(), hx.data<T>(), hy.data<T>(), ws.data<T>(), H});
  });
}

void CudaBackend::gru_cell_backward(const RawTensor& dhy, const RawTensor& hx, const RawTensor& ws,
                                    const RawTensor& dxg, const RawTensor& dhg, const RawTensor& dhx) {
  const int64_t N = hx.shape()[0], H = hx.shape()[1];
  DeviceGuard guard(ctx_.device());
  dispatch_only<kFloat32, kFloat64>(dhy.dtype(), "gru_cell_backward", [&](auto t) {
    using T = decltype(t);
    launch_flat(ctx_.stream(), N * H,
                GruCellBackward<T>{dhy.data<T>(), hx.data<T>(), ws.data<T>(), dxg.data<T>(), dhg.data<T>(),
                                   dhx.data<T>(), H});
  });
}

}  // namespace detail
}  // namespace cuda
}  // namespace tg
