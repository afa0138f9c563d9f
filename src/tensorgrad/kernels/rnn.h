/// \file
/// kernels/rnn.h: the recurrent family's shared per-element rules (Note [Kernel families] in
/// backend/backend.h): the pointwise part of one LSTM and one GRU time step and their gradients,
/// written once for the CPU loops (backend/cpu/rnn.cpp) and the CUDA kernels (backend/cuda/rnn.cu).
/// Compiled by g++ and by nvcc, so: no dependencies beyond kernels/elementwise.h, whose sigmoid and
/// tanh these use, as the composed ops do.
///
/// Note [Fused recurrent cells]
/// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
/// A recurrent layer's step is two matrix products (the input's, done for every step at once, and the
/// state's) and a pointwise cell. Composed of ops, an LSTM cell is about ten launches forward and
/// fifteen backward, each a pass over the (N, 4H) gates; fused (tg::fused_lstm_cell, as PyTorch's
/// _thnn_fused_lstm_cell), it is one pass each way. Element e = n H + j of a batch of N rows of H units
/// reads the gates of its row at j, H + j, 2H + j, 3H + j (PyTorch's order: LSTM input, forget, cell,
/// output; GRU reset, update, new):
///   LSTM  forward:  i, f, o = sigmoid(x + h) of their gates, g = tanh(x + h),
///                   c' = f c + i g, h' = o tanh(c')
///         backward: dc = dc' + dh' o (1 - tanh(c')^2);  d(x + h) = (dc g i (1 - i), dc c f (1 - f),
///                   dc i (1 - g^2), dh' tanh(c') o (1 - o));  dc_prev = dc f
///   GRU   forward:  r, z = sigmoid(x + h) of their gates, n = tanh(x_n + r h_n), h' = n + z (h - n)
///                   (= (1 - z) n + z h)
///         backward: dn = dh' (1 - z) (1 - n^2);  dz = dh' (h - n) z (1 - z);  dr = dn h_n r (1 - r);
///                   dx = (dr, dz, dn), dh_gates = (dr, dz, dn r), dh_prev = dh' z
/// The forward keeps a workspace for the backward: for the LSTM (N, 8H), the gates' sums x + h, then
/// i, f, g, o; for the GRU (N, 7H), the reset and update gates' sums, x_n and h_n apart, then r, z, n.
/// The first-order backward reads the activations (the LSTM's one transcendental there is tanh(c'),
/// c' recomputed from f, c, i, g as the forward computed it); the op's recorded rule for a backward
/// under create_graph (ops/rnn.cpp) rebuilds the same formulas as ops from the sums, which it makes
/// functions of the inputs again. Both backends compute in the tensor's dtype (float32 or float64;
/// prim/rnn.cpp brings 16-bit floats through float32), element by element with these functions: the
/// composed step's formulas in its order, so the two agree to rounding (tests/test_rnn.cpp compares
/// them; the composed ops' vector paths may contract a product into an FMA where these do not).
#pragma once
#include <cstdint>

#include "tensorgrad/core/macros.h"
#include "tensorgrad/kernels/elementwise.h"

namespace tg {
/// \cond INTERNAL
namespace rnn_math {

template <class T>
TG_HD T sigmoid(T x) {
  return fn::Sigmoid::forward(x, UnaryArgs{});
}
template <class T>
TG_HD T tanh_(T x) {
  return fn::Tanh::forward(x, UnaryArgs{});
}

/// One element e = n H + j of the LSTM cell: xg, hg (N, 4H) the two products' gates, cx (N, H) the
/// cell state -> hc (2, N, H): h' at e and c' at N H + e; ws (N, 8H): the gates' sums, then i, f, g, o.
template <class T>
TG_HD void lstm_cell(int64_t e, int64_t N, int64_t H, const T* xg, const T* hg, const T* cx, T* hc, T* ws) {
  const int64_t n = e / H, j = e % H, row = n * 4 * H + j, wrow = n * 8 * H + j;
  T sum[4];
  for (int k = 0; k < 4; ++k) {
    sum[k] = xg[row + k * H] + hg[row + k * H];
    ws[wrow + k * H] = sum[k];
  }
  const T i = sigmoid(sum[0]), f = sigmoid(sum[1]), g = tanh_(sum[2]), o = sigmoid(sum[3]);
  ws[wrow + 4 * H] = i;
  ws[wrow + 5 * H] = f;
  ws[wrow + 6 * H] = g;
  ws[wrow + 7 * H] = o;
  const T f_c = f * cx[e];
  const T i_g = i * g;
  const T c = f_c + i_g;   // two products and a sum, as mul, mul, add
  hc[e] = o * tanh_(c);
  hc[N * H + e] = c;
}

/// The LSTM cell's gradient at element e: dhc (2, N, H) the gradients of h' and c', cx the cell state,
/// ws the forward's -> dgates (N, 4H) (the gradient of either product's gates) and dcx (N, H).
template <class T>
TG_HD void lstm_cell_backward(int64_t e, int64_t N, int64_t H, const T* dhc, const T* cx, const T* ws, T* dgates,
                              T* dcx) {
  const int64_t n = e / H, j = e % H, row = n * 4 * H + j, wrow = n * 8 * H + 4 * H + j;
  const T i = ws[wrow], f = ws[wrow + H], g = ws[wrow + 2 * H], o = ws[wrow + 3 * H];
  const T f_c = f * cx[e];
  const T i_g = i * g;
  const T tc = tanh_(f_c + i_g);   // tanh(c'), c' as the forward computed it
  const T dh = dhc[e];
  const T dc = dhc[N * H + e] + dh * o * (T(1) - tc * tc);
  dgates[row] = dc * g * i * (T(1) - i);
  dgates[row + H] = dc * cx[e] * f * (T(1) - f);
  dgates[row + 2 * H] = dc * i * (T(1) - g * g);
  dgates[row + 3 * H] = dh * tc * o * (T(1) - o);
  dcx[e] = dc * f;
}

/// One element e = n H + j of the GRU cell: xg, hg (N, 3H) the two products' gates, hx (N, H) the
/// state -> hy (N, H); ws (N, 7H): the reset and update gates' sums, x_n, h_n, then r, z, n.
template <class T>
TG_HD void gru_cell(int64_t e, int64_t H, const T* xg, const T* hg, const T* hx, T* hy, T* ws) {
  const int64_t n = e / H, j = e % H, row = n * 3 * H + j, wrow = n * 7 * H + j;
  const T sr = xg[row] + hg[row], sz = xg[row + H] + hg[row + H];
  const T xn = xg[row + 2 * H], hn = hg[row + 2 * H];
  const T r = sigmoid(sr), z = sigmoid(sz);
  const T r_hn = r * hn;
  const T nn = tanh_(xn + r_hn);
  const T d = hx[e] - nn;
  const T z_d = z * d;
  hy[e] = nn + z_d;   // n + z (h - n), as the composed step
  const T w[7] = {sr, sz, xn, hn, r, z, nn};
  for (int k = 0; k < 7; ++k) ws[wrow + k * H] = w[k];
}

/// The GRU cell's gradient at element e: dhy (N, H), hx the state, ws the forward's -> dxg and dhg
/// (N, 3H), the gradients of the two products' gates, and dhx (N, H).
template <class T>
TG_HD void gru_cell_backward(int64_t e, int64_t H, const T* dhy, const T* hx, const T* ws, T* dxg, T* dhg, T* dhx) {
  const int64_t n = e / H, j = e % H, row = n * 3 * H + j, wrow = n * 7 * H + j;
  const T hn = ws[wrow + 3 * H], r = ws[wrow + 4 * H], z = ws[wrow + 5 * H], nn = ws[wrow + 6 * H];
  const T dh = dhy[e];
  const T dn = dh * (T(1) - z) * (T(1) - nn * nn);
  const T dz = dh * (hx[e] - nn) * z * (T(1) - z);
  const T dr = dn * hn * r * (T(1) - r);
  dxg[row] = dr;
  dxg[row + H] = dz;
  dxg[row + 2 * H] = dn;
  dhg[row] = dr;
  dhg[row + H] = dz;
  dhg[row + 2 * H] = dn * r;
  dhx[e] = dh * z;
}

}  // namespace rnn_math
/// \endcond
}  // namespace tg
