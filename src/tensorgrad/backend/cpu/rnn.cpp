// backend/cpu/rnn.cpp: the recurrent family of the CPU Backend: the LSTM and GRU cells' pointwise step
// and its gradient (Note [Fused recurrent cells] in kernels/rnn.h): row loops over core/parallel.h's pool
// with kernels/rnn.h's rules, vectorized for SSE2 (float sigmoid and tanh are fn::exp and fn::tanh,
// Note [Vectorizable tanh] in kernels/elementwise.h). Baseline code, not kernels.inc: the rules round
// as the composed ops' baseline path does (no products contracted into FMAs), and a step's N H elements
// are few next to its two GEMMs. The CUDA twin is backend/cuda/rnn.cu.
#include "tensorgrad/backend/cpu/cpu_backend.h"
#include "tensorgrad/kernels/rnn.h"

namespace tg {
namespace cpu {

namespace {

// One row's loops, on the layouts of Note [Fused recurrent cells] (the LSTM's and the GRU's workspaces
// (N, H, 8)). Each is a function of its own over restrict pointers (the outputs are fresh
// tensors) and kept out of the loop over rows: GCC vectorizes the loop over j only so.
template <class T>
__attribute__((noinline)) void lstm_row(int64_t H, const T* __restrict x, const T* __restrict h, const T* __restrict c,
                          T* __restrict h1, T* __restrict c1, T* __restrict w) {
  for (int64_t j = 0; j < H; ++j) {
    const T sum[4] = {x[j] + h[j], x[H + j] + h[H + j], x[2 * H + j] + h[2 * H + j], x[3 * H + j] + h[3 * H + j]};
    T act[4];
    rnn_math::lstm_cell(sum, c[j], act, h1[j], c1[j]);
    for (int k = 0; k < 4; ++k) {
      w[j * 8 + k] = sum[k];
      w[j * 8 + 4 + k] = act[k];
    }
  }
}
template <class T>
__attribute__((noinline)) void lstm_backward_row(int64_t H, const T* __restrict dh, const T* __restrict dc1, const T* __restrict c,
                                   const T* __restrict w, T* __restrict dg, T* __restrict dc) {
  for (int64_t j = 0; j < H; ++j) {
    const T act[4] = {w[j * 8 + 4], w[j * 8 + 5], w[j * 8 + 6], w[j * 8 + 7]};
    T d[4];
    rnn_math::lstm_cell_backward(act, c[j], dh[j], dc1[j], d, dc[j]);
    for (int k = 0; k < 4; ++k) dg[k * H + j] = d[k];
  }
}
template <class T>
__attribute__((noinline)) void gru_row(int64_t H, const T* __restrict x, const T* __restrict h, const T* __restrict s,
                         T* __restrict y, T* __restrict w) {
  for (int64_t j = 0; j < H; ++j) {
    const T sr = x[j] + h[j], sz = x[H + j] + h[H + j], xn = x[2 * H + j], hn = h[2 * H + j];
    T act[3];
    rnn_math::gru_cell(sr, sz, xn, hn, s[j], act, y[j]);
    const T keep[8] = {sr, sz, xn, hn, act[0], act[1], act[2], T(0)};
    for (int k = 0; k < 8; ++k) w[j * 8 + k] = keep[k];
  }
}
template <class T>
__attribute__((noinline)) void gru_backward_row(int64_t H, const T* __restrict d, const T* __restrict s, const T* __restrict w,
                                  T* __restrict dx, T* __restrict dh, T* __restrict ds) {
  for (int64_t j = 0; j < H; ++j) {
    const T act[3] = {w[j * 8 + 4], w[j * 8 + 5], w[j * 8 + 6]};
    T g[3], dhn;
    rnn_math::gru_cell_backward(act, w[j * 8 + 3], s[j], d[j], g, dhn, ds[j]);
    for (int k = 0; k < 3; ++k) dx[k * H + j] = g[k];
    dh[j] = g[0];
    dh[H + j] = g[1];
    dh[2 * H + j] = dhn;
  }
}
}  // namespace

void CpuBackend::lstm_cell(const RawTensor& xg, const RawTensor& hg, const RawTensor& cx, const RawTensor& hc,
                           const RawTensor& ws) {
  const int64_t N = cx.shape()[0], H = cx.shape()[1];
  dispatch_only<kFloat32, kFloat64>(xg.dtype(), "lstm_cell", [&](auto tag) {
    using T = decltype(tag);
    const T *x = xg.data<T>(), *h = hg.data<T>(), *c = cx.data<T>();
    T *out = hc.data<T>(), *w = ws.data<T>();
    const int64_t half = hc.strides()[0];   // c' is `half` elements after h'
    parallel::run(N, row_parts(N, H), [&](int64_t n0, int64_t n1) {
      for (int64_t n = n0; n < n1; ++n)
        lstm_row(H, x + n * 4 * H, h + n * 4 * H, c + n * H, out + n * H, out + half + n * H, w + n * 8 * H);
    });
  });
}

void CpuBackend::lstm_cell_backward(const RawTensor& dhc, const RawTensor& cx, const RawTensor& ws,
                                    const RawTensor& dgates, const RawTensor& dcx) {
  const int64_t N = cx.shape()[0], H = cx.shape()[1];
  dispatch_only<kFloat32, kFloat64>(dhc.dtype(), "lstm_cell_backward", [&](auto tag) {
    using T = decltype(tag);
    const T *d = dhc.data<T>(), *c = cx.data<T>(), *w = ws.data<T>();
    T *dg = dgates.data<T>(), *dc = dcx.data<T>();
    const int64_t half = dhc.strides()[0];   // dc' is `half` elements after dh'
    parallel::run(N, row_parts(N, H), [&](int64_t n0, int64_t n1) {
      for (int64_t n = n0; n < n1; ++n)
        lstm_backward_row(H, d + n * H, d + half + n * H, c + n * H, w + n * 8 * H, dg + n * 4 * H, dc + n * H);
    });
  });
}

void CpuBackend::gru_cell(const RawTensor& xg, const RawTensor& hg, const RawTensor& hx, const RawTensor& hy,
                          const RawTensor& ws) {
  const int64_t N = hx.shape()[0], H = hx.shape()[1];
  dispatch_only<kFloat32, kFloat64>(xg.dtype(), "gru_cell", [&](auto tag) {
    using T = decltype(tag);
    const T *x = xg.data<T>(), *h = hg.data<T>(), *s = hx.data<T>();
    T *out = hy.data<T>(), *w = ws.data<T>();
    parallel::run(N, row_parts(N, H), [&](int64_t n0, int64_t n1) {
      for (int64_t n = n0; n < n1; ++n) gru_row(H, x + n * 3 * H, h + n * 3 * H, s + n * H, out + n * H, w + n * 8 * H);
    });
  });
}

void CpuBackend::gru_cell_backward(const RawTensor& dhy, const RawTensor& hx, const RawTensor& ws, const RawTensor& dxg,
                                   const RawTensor& dhg, const RawTensor& dhx) {
  const int64_t N = hx.shape()[0], H = hx.shape()[1];
  dispatch_only<kFloat32, kFloat64>(dhy.dtype(), "gru_cell_backward", [&](auto tag) {
    using T = decltype(tag);
    const T *d = dhy.data<T>(), *s = hx.data<T>(), *w = ws.data<T>();
    T *dx = dxg.data<T>(), *dh = dhg.data<T>(), *ds = dhx.data<T>();
    parallel::run(N, row_parts(N, H), [&](int64_t n0, int64_t n1) {
      for (int64_t n = n0; n < n1; ++n)
        gru_backward_row(H, d + n * H, s + n * H, w + n * 8 * H, dx + n * 3 * H, dh + n * 3 * H, ds + n * H);
    });
  });
}

}  // namespace cpu
}  // namespace tg
