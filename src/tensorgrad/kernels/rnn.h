/// \file
/// kernels/rnn.h: the recurrent family's shared per-element rules (Note [Kernel families] in
/// backend/backend.h): the pointwise part of one LSTM and one GRU time step and their gradients,
/// written once for the CPU loops (backend/cpu/rnn.cpp) and the CUDA kernels (backend/cuda/rnn.cu).
/// Compiled by g++ and by nvcc, so: no dependencies beyond kernels/elementwise.h, whose sigmoid and
/// tanh these use, as the composed ops do.

// Note [Fused recurrent cells]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A recurrent layer's step is two matrix products (the input's, done for every step at once, and the
// state's) and a pointwise cell. Composed of ops, an LSTM cell is about ten launches forward and
// fifteen backward, each a pass over the (N, 4H) gates; fused (tg::fused_lstm_cell, as PyTorch's
// _thnn_fused_lstm_cell), it is one pass each way. Element e = n H + j of a batch of N rows of H units
// reads the gates of its row at j, H + j, 2H + j, 3H + j (PyTorch's order: LSTM input, forget, cell,
// output; GRU reset, update, new), and the functions below compute on those values (each backend
// loads and stores them its own way: the CPU along rows, so that its loops vectorize):
//   LSTM  forward:  i, f, o = sigmoid(x + h) of their gates, g = tanh(x + h),
//                   c' = f c + i g, h' = o tanh(c')
//         backward: dc = dc' + dh' o (1 - tanh(c')^2);  d(x + h) = (dc g i (1 - i), dc c f (1 - f),
//                   dc i (1 - g^2), dh' tanh(c') o (1 - o));  dc_prev = dc f
//   GRU   forward:  r, z = sigmoid(x + h) of their gates, n = tanh(x_n + r h_n), h' = n + z (h - n)
//                   (= (1 - z) n + z h)
//         backward: dn = dh' (1 - z) (1 - n^2);  dz = dh' (h - n) z (1 - z);  dr = dn h_n r (1 - r);
//                   dx = (dr, dz, dn), dh_gates = (dr, dz, dn r), dh_prev = dh' z
// The forward keeps a workspace for the backward, element by element: for the LSTM (N, H, 8), the
// gates' sums x + h, then i, f, g, o; for the GRU (N, H, 8), the reset and update gates' sums, x_n and
// h_n apart, then r, z, n and a zero (element-major and eight wide, so that the CPU's row
// loops read and write it in whole vectors). The first-order backward reads the activations (the LSTM's one transcendental there is tanh(c'),
// c' recomputed from f, c, i, g as the forward computed it); the op's recorded rule for a backward
// under create_graph (ops/rnn.cpp) rebuilds the same formulas as ops from the sums, which it makes
// functions of the inputs again. Both backends compute in the tensor's dtype (float32 or float64;
// prim/rnn.cpp brings 16-bit floats through float32), element by element with these functions: the
// composed step's formulas in its order, so the two agree to rounding (tests/test_rnn.cpp compares
// them; the composed ops' vector paths may contract a product into an FMA where these do not).
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

/// The LSTM cell on one element's values: s the four gates' sums x + h (input, forget, cell, output),
/// c the cell state -> act the activations i, f, g, o, and h' and c'.
template <class T>
TG_HD void lstm_cell(const T (&s)[4], T c, T (&act)[4], T& h1, T& c1) {
  act[0] = sigmoid(s[0]);
  act[1] = sigmoid(s[1]);
  act[2] = tanh_(s[2]);
  act[3] = sigmoid(s[3]);
  const T f_c = act[1] * c;
  const T i_g = act[0] * act[2];
  c1 = f_c + i_g;   // two products and a sum, as mul, mul, add
  h1 = act[3] * tanh_(c1);
}

/// The LSTM cell's gradient on one element's values: act the forward's i, f, g, o, c the cell state,
/// dh and dc1 the gradients of h' and c' -> dg the gradient of the gates' sums, and dc that of c.
template <class T>
TG_HD void lstm_cell_backward(const T (&act)[4], T c, T dh, T dc1, T (&dg)[4], T& dc) {
  const T i = act[0], f = act[1], g = act[2], o = act[3];
  const T f_c = f * c;
  const T i_g = i * g;
  const T tc = tanh_(f_c + i_g);   // tanh(c'), c' as the forward computed it
  const T dct = dc1 + dh * o * (T(1) - tc * tc);
  dg[0] = dct * g * i * (T(1) - i);
  dg[1] = dct * c * f * (T(1) - f);
  dg[2] = dct * i * (T(1) - g * g);
  dg[3] = dh * tc * o * (T(1) - o);
  dc = dct * f;
}

/// The GRU cell on one element's values: sr, sz the reset and update gates' sums x + h, xn and hn the
/// new gate's two parts, h the state -> act r, z, n and h'.
template <class T>
TG_HD void gru_cell(T sr, T sz, T xn, T hn, T h, T (&act)[3], T& h1) {
  act[0] = sigmoid(sr);
  act[1] = sigmoid(sz);
  const T r_hn = act[0] * hn;
  act[2] = tanh_(xn + r_hn);
  const T d = h - act[2];
  const T z_d = act[1] * d;
  h1 = act[2] + z_d;   // n + z (h - n), as the composed step
}

/// The GRU cell's gradient on one element's values: act the forward's r, z, n, hn the state product's
/// new gate, h the state, dh1 the gradient of h' -> dx the input product's gate gradients (r, z, n),
/// dhn the state product's new-gate gradient (its r and z gradients are dx's), and dh that of h.
template <class T>
TG_HD void gru_cell_backward(const T (&act)[3], T hn, T h, T dh1, T (&dx)[3], T& dhn, T& dh) {
  const T r = act[0], z = act[1], n = act[2];
  const T dn = dh1 * (T(1) - z) * (T(1) - n * n);
  dx[1] = dh1 * (h - n) * z * (T(1) - z);
  dx[0] = dn * hn * r * (T(1) - r);
  dx[2] = dn;
  dhn = dn * r;
  dh = dh1 * z;
}

}  // namespace rnn_math
/// \endcond
}  // namespace tg
