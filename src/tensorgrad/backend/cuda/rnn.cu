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

template <class T>
struct LstmCell {
  const T *xg, *hg, *cx;
  T *hc, *ws;
  int64_t N, H;
  __device__ void operator()(int64_t e) const { rnn_math::lstm_cell(e, N, H, xg, hg, cx, hc, ws); }
};

template <class T>
struct LstmCellBackward {
  const T *dhc, *cx, *ws;
  T *dgates, *dcx;
  int64_t N, H;
  __device__ void operator()(int64_t e) const { rnn_math::lstm_cell_backward(e, N, H, dhc, cx, ws, dgates, dcx); }
};

template <class T>
struct GruCell {
  const T *xg, *hg, *hx;
  T *hy, *ws;
  int64_t H;
  __device__ void operator()(int64_t e) const { rnn_math::gru_cell(e, H, xg, hg, hx, hy, ws); }
};

template <class T>
struct GruCellBackward {
  const T *dhy, *hx, *ws;
  T *dxg, *dhg, *dhx;
  int64_t H;
  __device__ void operator()(int64_t e) const { rnn_math::gru_cell_backward(e, H, dhy, hx, ws, dxg, dhg, dhx); }
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
                LstmCell<T>{xg.data<T>(), hg.data<T>(), cx.data<T>(), hc.data<T>(), ws.data<T>(), N, H});
  });
}

void CudaBackend::lstm_cell_backward(const RawTensor& dhc, const RawTensor& cx, const RawTensor& ws,
                                     const RawTensor& dgates, const RawTensor& dcx) {
  const int64_t N = cx.shape()[0], H = cx.shape()[1];
  DeviceGuard guard(ctx_.device());
  dispatch_only<kFloat32, kFloat64>(dhc.dtype(), "lstm_cell_backward", [&](auto t) {
    using T = decltype(t);
    launch_flat(ctx_.stream(), N * H,
                LstmCellBackward<T>{dhc.data<T>(), cx.data<T>(), ws.data<T>(), dgates.data<T>(), dcx.data<T>(), N, H});
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
