// ops/rnn.cpp: fused_lstm_cell and fused_gru_cell, the pointwise part of one step of nn::LSTM and
// nn::GRU (nn/rnn.cpp) as one recorded op each (Note [Fused recurrent cells] in kernels/rnn.h), and
// the time loop of one direction of a recurrent layer (ops/recurrent.h): one recorded op over every
// step for LSTM and GRU (Note [Fused recurrent layer] in prim/rnn.cpp), step by step otherwise.
// Kernels: Backend::lstm_cell / gru_cell (backend/cpu/rnn.cpp, backend/cuda/rnn.cu).
#include <algorithm>
#include <atomic>
#include <memory>

#include "tensorgrad/ops/autocast.h"
#include "tensorgrad/ops/ops.h"
#include "tensorgrad/ops/recurrent.h"
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

// ---- the time loop of a recurrent layer

std::pair<Tensor, Tensor> detail::recurrent_step(CellKind k, const Tensor& xp, const Tensor& h, const Tensor& c,
                                                 const Tensor& w_hh, const Tensor& b_hh, const Tensor& w_hr) {
  const Tensor hp = linear(h, w_hh, b_hh);
  switch (k) {
    case CellKind::RnnTanh: return {tanh(add(xp, hp)), Tensor()};
    case CellKind::RnnRelu: return {relu(add(xp, hp)), Tensor()};
    default: break;
  }
  // LSTM and GRU: one fused op (Note [Fused recurrent cells] in kernels/rnn.h) on rows; an unbatched
  // cell's (4H) or (3H) gates are one row
  const bool row = h.dim() == 1;
  auto rows = [row](const Tensor& t) { return row && t.defined() ? unsqueeze(t, 0) : t; };
  auto unrow = [row](const Tensor& t) { return row ? squeeze(t, 0) : t; };
  if (k == CellKind::Gru) return {unrow(fused_gru_cell(rows(xp), rows(hp), rows(h))), Tensor()};
  auto [h_new, c_new] = fused_lstm_cell(rows(xp), rows(hp), rows(c));
  h_new = unrow(h_new);
  return {w_hr.defined() ? linear(h_new, w_hr) : h_new, unrow(c_new)};
}

namespace {

using detail::CellKind;

std::atomic<bool> g_fused_layers{true};

/// recurrent_layer step by step, each step made of recorded ops (recurrent_step). At each step the
/// cell runs on the prefix of the rows still running: going forwards, when the batch shrinks the rows
/// past the new size have ended, and their state is set aside as their final state; going backwards,
/// the batch grows, and the rows joining start from their initial state at their own last step.
std::tuple<Tensor, Tensor, Tensor> layer_steps(CellKind k, const Tensor& xp, const std::vector<int64_t>& bs,
                                               const Tensor& h0, const Tensor& c0, const Tensor& w_hh,
                                               const Tensor& b_hh, const Tensor& w_hr, bool reverse) {
  const int64_t T = static_cast<int64_t>(bs.size());
  if (T == 0) return {Tensor(prim::empty({0, h0.size(-1)}, h0.dtype(), h0.device())), h0, c0};
  std::vector<int64_t> offsets(bs.size());
  for (std::size_t t = 1; t < bs.size(); ++t) offsets[t] = offsets[t - 1] + bs[t - 1];
  auto step = [&](int64_t t, const Tensor& h, const Tensor& c) {
    const auto i = static_cast<std::size_t>(t);
    return detail::recurrent_step(k, narrow(xp, 0, offsets[i], bs[i]), h, c, w_hh, b_hh, w_hr);
  };
  std::vector<Tensor> outputs(static_cast<std::size_t>(T));
  if (!reverse) {
    // the sequences that end before step t are the rows past bs[t]: their final state is set aside,
    // last rows first
    std::vector<Tensor> h_done, c_done;
    Tensor h = h0, c = c0;
    int64_t active = bs[0];
    for (int64_t t = 0; t < T; ++t) {
      const int64_t b = bs[static_cast<std::size_t>(t)];
      if (b < active) {
        h_done.push_back(narrow(h, 0, b, active - b));
        h = narrow(h, 0, 0, b);
        if (c.defined()) {
          c_done.push_back(narrow(c, 0, b, active - b));
          c = narrow(c, 0, 0, b);
        }
        active = b;
      }
      std::tie(h, c) = step(t, h, c);
      outputs[static_cast<std::size_t>(t)] = h;
    }
    auto finals = [](std::vector<Tensor>& done, const Tensor& last) {
      if (done.empty()) return last;
      done.push_back(last);
      std::reverse(done.begin(), done.end());   // back to the batch order: the rows still running first
      return cat(done, 0);
    };
    const Tensor h_n = finals(h_done, h);
    const Tensor c_n = c.defined() ? finals(c_done, c) : Tensor();
    return {T == 1 ? outputs[0] : cat(outputs, 0), h_n, c_n};
  }
  // backwards from the last step: the sequences whose last step is t join there from their initial state
  int64_t active = bs[static_cast<std::size_t>(T - 1)];
  Tensor h = active == h0.size(0) ? h0 : narrow(h0, 0, 0, active);
  Tensor c = !c0.defined() || active == c0.size(0) ? c0 : narrow(c0, 0, 0, active);
  for (int64_t t = T - 1; t >= 0; --t) {
    const int64_t b = bs[static_cast<std::size_t>(t)];
    if (b > active) {
      h = cat({h, narrow(h0, 0, active, b - active)}, 0);
      if (c.defined()) c = cat({c, narrow(c0, 0, active, b - active)}, 0);
      active = b;
    }
    std::tie(h, c) = step(t, h, c);
    outputs[static_cast<std::size_t>(t)] = h;
  }
  return {T == 1 ? outputs[0] : cat(outputs, 0), h, c};
}

/// Whether recurrent_layer runs as one fused op: an LSTM without projection or a GRU over at least one
/// step of a nonempty batch, every operand of one dtype that the fused loop computes in (float32,
/// float64) and one device, and autocast off (under autocast the products run in its dtype, as
/// linear does: step by step).
bool fusable(CellKind k, const Tensor& xp, const std::vector<int64_t>& bs, const Tensor& h0, const Tensor& c0,
             const Tensor& w_hh, const Tensor& b_hh, const Tensor& w_hr) {
  if ((k != CellKind::Lstm && k != CellKind::Gru) || w_hr.defined() || bs.empty() || bs[0] <= 0 || h0.dim() != 2 ||
      !g_fused_layers.load(std::memory_order_relaxed))
    return false;
  const DType dt = xp.dtype();
  if (dt != kFloat32 && dt != kFloat64) return false;
  for (const Tensor* t : {&h0, &c0, &w_hh, &b_hh})
    if (t->defined() && (t->dtype() != dt || t->device() != xp.device())) return false;
  return !amp::is_autocast_enabled(xp.device().type());
}

/// The step-by-step loop's output rows o and final states in the layout of the fused layer's value
/// (Note [Fused recurrent layer] in prim/rnn.cpp), the rows the op hands no view of (h0, c0, the
/// steps' c) zero: what its rule differentiates under create_graph.
Tensor states_of(bool lstm, bool reverse, const Tensor& o, const Tensor& h_n, const Tensor& c_n) {
  auto zeros = [&o](int64_t rows) { return Tensor(prim::full({rows, o.size(1)}, 0.0, o.dtype(), o.device())); };
  const int64_t B = h_n.size(0), R = o.size(0);
  const Tensor s = reverse ? cat({o, zeros(B), h_n}, 0) : cat({zeros(B), o, h_n}, 0);
  return lstm ? stack({s, cat({zeros(R + B), c_n}, 0)}, 0) : s;
}

/// The fused layer: one recorded op whose value is prim::RecurrentLayer::out, every state of the
/// loop (Note [Fused recurrent layer] in prim/rnn.cpp); the output rows and the final states are
/// views of it.
std::tuple<Tensor, Tensor, Tensor> fused_layer(CellKind k, const Tensor& xp, const std::vector<int64_t>& bs,
                                               const Tensor& h0, const Tensor& c0, const Tensor& w_hh,
                                               const Tensor& b_hh, bool reverse) {
  const bool lstm = k == CellKind::Lstm;
  // the inputs, in this order: xp, h0, w_hh, then c0 (LSTM), then b_hh (when defined)
  std::vector<Tensor> inputs{xp, h0, w_hh};
  if (lstm) inputs.push_back(c0);
  if (b_hh.defined()) inputs.push_back(b_hh);
  const bool need = any_requires_grad(inputs);
  auto fwd = std::make_shared<prim::RecurrentLayer>(prim::recurrent_layer(
      lstm, xp.data(), bs, h0.data(), lstm ? c0.data() : RawTensor(), w_hh.data(),
      b_hh.defined() ? b_hh.data() : RawTensor(), reverse));
  const char* name = lstm ? "lstm_layer" : "gru_layer";
  const RawTensor states = fwd->out;
  fwd->out = RawTensor();   // saved below, version-checked: the output's views may be written in place
  std::vector<SavedTensor> saved;
  SavedTensor states_saved;
  if (need) {
    saved.assign(inputs.begin(), inputs.end());
    states_saved = SavedTensor(states, name);
  } else {
    fwd.reset();
  }
  const Tensor y = record(name, states, inputs, [k, fwd, saved, states_saved, bs, reverse](const auto& grad, auto& g) {
    const bool lstm = k == CellKind::Lstm;
    const std::size_t n_in = saved.size(), i_c0 = 3, i_b = lstm ? 4 : 3;
    if constexpr (first_order_v<decltype(g)>) {   // the fused loop's backward: Note [Fused recurrent layer]
      const bool weights = g.need(2) || (n_in > i_b && g.need(i_b));
      prim::RecurrentLayer f = *fwd;
      f.out = g.output(states_saved);
      const RawTensor w_hh = g.input(2, saved[2]);
      prim::RecurrentLayerGrads d = prim::recurrent_layer_backward(lstm, grad, f, w_hh, bs, reverse, weights);
      if (g.need(0)) g.set(0, d.dxp);
      if (g.need(1)) g.set(1, d.dh0);
      if (g.need(2)) g.set(2, d.dw_hh);
      if (lstm && g.need(i_c0)) g.set(i_c0, d.dc0);
      if (n_in > i_b && g.need(i_b)) g.set(i_b, d.db_hh);
    } else {
      // Under create_graph: the same steps made of recorded ops, run again on the inputs with their
      // history and differentiated there (Note [Partial backward] in autograd/tensor.h), so that the
      // gradients are functions of the inputs
      std::vector<Tensor> in(n_in);
      for (std::size_t i = 0; i < n_in; ++i) in[i] = g.input(i, saved[i]);
      detail::GradientSink sink;
      Tensor again;
      {
        EnableGradGuard grad_on;
        amp::AutocastGuard cpu_off(Device::cpu(), kBFloat16, false), cuda_off(Device::cuda(), kFloat16, false);
        sink.first_sequence_nr = detail::next_sequence_nr();
        auto [o, h_n, c_n] = layer_steps(k, in[0], bs, in[1], lstm ? in[i_c0] : Tensor(), in[2],
                                         n_in > i_b ? in[i_b] : Tensor(), Tensor(), reverse);
        again = states_of(lstm, reverse, o, h_n, c_n);
      }
      if (again.grad_fn()) detail::run_backward_into(again.grad_fn(), grad, sink);
      TG_CHECK(detail::deliver_graph_grads(sink, g) == sink.graph_grads.size(), AutogradError,
               lstm ? "lstm_layer" : "gru_layer", ": the recomputed steps read a tensor outside the layer's inputs");
    }
  });
  const int64_t R = xp.size(0), B = h0.size(0);
  const Tensor S = lstm ? select(y, 0, 0) : y;
  return {narrow(S, 0, reverse ? 0 : B, R), narrow(S, 0, R + B, B), lstm ? narrow(select(y, 0, 1), 0, R + B, B) : Tensor()};
}

}  // namespace

void detail::set_fused_recurrent_layers(bool on) { g_fused_layers.store(on, std::memory_order_relaxed); }

std::tuple<Tensor, Tensor, Tensor> detail::recurrent_layer(CellKind k, const Tensor& xp, const std::vector<int64_t>& bs,
                                                           const Tensor& h0, const Tensor& c0, const Tensor& w_hh,
                                                           const Tensor& b_hh, const Tensor& w_hr, bool reverse) {
  if (fusable(k, xp, bs, h0, c0, w_hh, b_hh, w_hr)) return fused_layer(k, xp, bs, h0, c0, w_hh, b_hh, reverse);
  return layer_steps(k, xp, bs, h0, c0, w_hh, b_hh, w_hr, reverse);
}

}  // namespace tg
