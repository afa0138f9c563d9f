// backend/cpu/rnn.cpp: the recurrent family of the CPU Backend: the LSTM and GRU cells' pointwise step
// and its gradient (Note [Fused recurrent cells] in kernels/rnn.h), element loops over core/parallel.h's
// pool with kernels/rnn.h's rules. Baseline code, not kernels.inc: the rules round as the composed ops
// do (no products contracted into FMAs), and a step's N H elements are few next to its two GEMMs.
// The CUDA twin is backend/cuda/rnn.cu.
#include "tensorgrad/backend/cpu/cpu_backend.h"
#include "tensorgrad/kernels/rnn.h"

namespace tg {
namespace cpu {

namespace {
/// f(e) for e in [0, n), over the pool's threads when n is large enough to pay for them.
template <class F>
void for_elements(int64_t n, const F& f) {
  const int parts = n >= (int64_t(1) << 15) ? parallel::max_threads() : 1;
  parallel::run(n, parts, [&](int64_t e0, int64_t e1) {
    for (int64_t e = e0; e < e1; ++e) f(e);
  });
}
}  // namespace

void CpuBackend::lstm_cell(const RawTensor& xg, const RawTensor& hg, const RawTensor& cx, const RawTensor& hc,
                           const RawTensor& ws) {
  const int64_t N = cx.shape()[0], H = cx.shape()[1];
  dispatch_only<kFloat32, kFloat64>(xg.dtype(), "lstm_cell", [&](auto tag) {
    using T = decltype(tag);
    const T *x = xg.data<T>(), *h = hg.data<T>(), *c = cx.data<T>();
    T *out = hc.data<T>(), *w = ws.data<T>();
    for_elements(N * H, [&](int64_t e) { rnn_math::lstm_cell(e, N, H, x, h, c, out, w); });
  });
}

void CpuBackend::lstm_cell_backward(const RawTensor& dhc, const RawTensor& cx, const RawTensor& ws,
                                    const RawTensor& dgates, const RawTensor& dcx) {
  const int64_t N = cx.shape()[0], H = cx.shape()[1];
  dispatch_only<kFloat32, kFloat64>(dhc.dtype(), "lstm_cell_backward", [&](auto tag) {
    using T = decltype(tag);
    const T *d = dhc.data<T>(), *c = cx.data<T>(), *w = ws.data<T>();
    T *dg = dgates.data<T>(), *dc = dcx.data<T>();
    for_elements(N * H, [&](int64_t e) { rnn_math::lstm_cell_backward(e, N, H, d, c, w, dg, dc); });
  });
}

void CpuBackend::gru_cell(const RawTensor& xg, const RawTensor& hg, const RawTensor& hx, const RawTensor& hy,
                          const RawTensor& ws) {
  const int64_t N = hx.shape()[0], H = hx.shape()[1];
  dispatch_only<kFloat32, kFloat64>(xg.dtype(), "gru_cell", [&](auto tag) {
    using T = decltype(tag);
    const T *x = xg.data<T>(), *h = hg.data<T>(), *s = hx.data<T>();
    T *out = hy.data<T>(), *w = ws.data<T>();
    for_elements(N * H, [&](int64_t e) { rnn_math::gru_cell(e, H, x, h, s, out, w); });
  });
}

void CpuBackend::gru_cell_backward(const RawTensor& dhy, const RawTensor& hx, const RawTensor& ws, const RawTensor& dxg,
                                   const RawTensor& dhg, const RawTensor& dhx) {
  const int64_t N = hx.shape()[0], H = hx.shape()[1];
  dispatch_only<kFloat32, kFloat64>(dhy.dtype(), "gru_cell_backward", [&](auto tag) {
    using T = decltype(tag);
    const T *d = dhy.data<T>(), *s = hx.data<T>(), *w = ws.data<T>();
    T *dx = dxg.data<T>(), *dh = dhg.data<T>(), *ds = dhx.data<T>();
    for_elements(N * H, [&](int64_t e) { rnn_math::gru_cell_backward(e, H, d, s, w, dx, dh, ds); });
  });
}

}  // namespace cpu
}  // namespace tg
