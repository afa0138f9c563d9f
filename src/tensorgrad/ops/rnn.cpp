// ops/rnn.cpp: fused_lstm_cell and fused_gru_cell, the pointwise part of one step of nn::LSTM and
// nn::GRU (nn/rnn.cpp) as one recorded op each (Note [Fused recurrent cells] in kernels/rnn.h).
// Kernels: Backend::lstm_cell / gru_cell (backend/cpu/rnn.cpp, backend/cuda/rnn.cu).
#include "tensorgrad/ops/ops.h"
#include "tensorgrad/ops/rules.h"
#include "tensorgrad/prim/prim.h"

namespace tg {

namespace {

/// The three operands in their promoted dtype (recorded casts, so that each keeps its gradient's dtype).
std::tuple<Tensor, Tensor, Tensor> promoted(const char* op, const Tensor& xg, const Tensor& hg, const Tensor& s) {
  TG_CHECK(xg.defined() && hg.defined() && s.defined(), Error, op, ": the gates and the state must be defined");
  const DType dt = promote_types(promote_types(xg.dtype(), hg.dtype()), s.dtype());
  TG_CHECK(is_floating(dt), DTypeError, op, ": expected floating gates and state, got ", dtype_name(xg.dtype()), ", ",
           dtype_name(hg.dtype()), " and ", dtype_name(s.dtype()));
  auto cast = [dt](const Tensor& t) { return t.dtype() == dt ? t : t.to(dt); };
  return {cast(xg), cast(hg), cast(s)};
}

/// Under create_graph: a zero of input i's shape whose gradient is the identity into input i (its
/// history minus its value), or undefined when input i wants no gradient; added to the workspace's
/// saved sums, it makes them functions of the gates again.
Tensor through(const VarGrads& g, std::size_t i) {
  const Tensor h = g.history(i);
  return h.defined() ? h - h.detach() : Tensor();
}
Tensor plus(const Tensor& a, const Tensor& b) { return b.defined() ? a + b : a; }

}  // namespace

std::tuple<Tensor, Tensor> fused_lstm_cell(const Tensor& input_gates, const Tensor& hidden_gates, const Tensor& cx) {
  const auto [xg, hg, c] = promoted("fused_lstm_cell", input_gates, hidden_gates, cx);
  prim::LstmCell r = prim::lstm_cell(xg.data(), hg.data(), c.data());
  const bool need = any_requires_grad({xg, hg, c});
  const SavedTensor c_saved = need ? SavedTensor(c) : SavedTensor();
  const RawTensor ws = need ? r.ws : RawTensor();
  // one output (2, N, H) holding h' and c', viewed apart below
  const Tensor hc = record("fused_lstm_cell", r.hc, {xg, hg, c}, [c_saved, ws](const auto& grad, auto& g) {
    if constexpr (first_order_v<decltype(g)>) {   // one kernel: Note [Fused recurrent cells]
      const prim::LstmCellGrads d = prim::lstm_cell_backward(grad, c_saved.get(), ws);
      if (g.need(0)) g.set(0, d.dgates);   // d(x + h) reaches both products' gates
      if (g.need(1)) g.set(1, d.dgates);
      if (g.need(2)) g.set(2, d.dcx);
    } else {   // the same formulas as recorded ops, the gates' sums made functions of the inputs again
      // the gates' sums (N, 4H) from the workspace (N, H, 8)
      const RawTensor saved = ws.narrow(2, 0, 4).permute({0, 2, 1}).contiguous().reshape({ws.size(0), 4 * ws.size(1)});
      const std::vector<Tensor> s = chunk(plus(plus(Tensor(saved.to(grad.dtype())), through(g, 0)), through(g, 1)), 4, 1);
      const Tensor i = sigmoid(s[0]), f = sigmoid(s[1]), gg = tanh(s[2]), o = sigmoid(s[3]);
      const Tensor cv = g.input(2, c_saved);
      const Tensor tc = tanh(f * cv + i * gg);
      const Tensor dh = grad.select(0, 0);
      const Tensor dc = grad.select(0, 1) + dh * o * (1.0 - tc * tc);
      const Tensor dgates = cat({dc * gg * i * (1.0 - i), dc * cv * f * (1.0 - f), dc * i * (1.0 - gg * gg),
                                 dh * tc * o * (1.0 - o)}, 1);
      if (g.need(0)) g.set(0, dgates);
      if (g.need(1)) g.set(1, dgates);
      if (g.need(2)) g.set(2, dc * f);
    }
  });
  return {hc.select(0, 0), hc.select(0, 1)};
}

Tensor fused_gru_cell(const Tensor& input_gates, const Tensor& hidden_gates, const Tensor& hx) {
  const auto [xg, hg, h] = promoted("fused_gru_cell", input_gates, hidden_gates, hx);
  prim::GruCell r = prim::gru_cell(xg.data(), hg.data(), h.data());
  const bool need = any_requires_grad({xg, hg, h});
  const SavedTensor h_saved = need ? SavedTensor(h) : SavedTensor();
  const RawTensor ws = need ? r.ws : RawTensor();
  return record("fused_gru_cell", r.hy, {xg, hg, h}, [h_saved, ws](const auto& grad, auto& g) {
    if constexpr (first_order_v<decltype(g)>) {   // one kernel: Note [Fused recurrent cells]
      const prim::GruCellGrads d = prim::gru_cell_backward(grad, h_saved.get(), ws);
      if (g.need(0)) g.set(0, d.dxg);
      if (g.need(1)) g.set(1, d.dhg);
      if (g.need(2)) g.set(2, d.dhx);
    } else {   // the same formulas as recorded ops, the saved sums made functions of the inputs again
      const std::vector<Tensor> w = unbind(Tensor(ws.to(grad.dtype())), 2);   // s_r, s_z, x_n, h_n, r, z, n, 0
      const Tensor tx = through(g, 0), th = through(g, 1);
      const std::vector<Tensor> dx = tx.defined() ? chunk(tx, 3, 1) : std::vector<Tensor>(3);
      const std::vector<Tensor> dh3 = th.defined() ? chunk(th, 3, 1) : std::vector<Tensor>(3);
      const Tensor r = sigmoid(plus(plus(w[0], dx[0]), dh3[0])), z = sigmoid(plus(plus(w[1], dx[1]), dh3[1]));
      const Tensor hn = plus(w[3], dh3[2]);
      const Tensor n = tanh(plus(w[2], dx[2]) + r * hn);
      const Tensor hv = g.input(2, h_saved);
      const Tensor dn = grad * (1.0 - z) * (1.0 - n * n);
      const Tensor dz = grad * (hv - n) * z * (1.0 - z);
      const Tensor dr = dn * hn * r * (1.0 - r);
      if (g.need(0)) g.set(0, cat({dr, dz, dn}, 1));
      if (g.need(1)) g.set(1, cat({dr, dz, dn * r}, 1));
      if (g.need(2)) g.set(2, grad * z);
    }
  });
}

}  // namespace tg
