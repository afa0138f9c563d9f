// prim/rnn.cpp: the recurrent family (kernels/rnn.h): the LSTM and GRU cells' pointwise step and its
// gradient through Backend::lstm_cell / gru_cell, and a layer's whole time loop on them (Note [Fused
// recurrent layer]). Checks the operands, brings the cells' float16/bfloat16 through float32 (Note
// [Low precision through float32] in prim/blas.cpp) and allocates; the ops (ops/rnn.cpp) have already
// brought their operands to one dtype.
#include "tensorgrad/prim/prim.h"

#include <algorithm>
#include <tuple>

#include "tensorgrad/core/error.h"
#include "tensorgrad/prim/internal.h"

namespace tg {
namespace prim {

namespace {
/// t contiguous, in float32 when it is a 16-bit float.
RawTensor operand(const RawTensor& t) { return through_float32(t).contiguous(); }

/// Checks the gates xg, hg (N, gates H) and the state s (N, H) of a cell.
void check_cell(const char* op, const RawTensor& xg, const RawTensor& hg, const RawTensor& s, int64_t gates) {
  for (const RawTensor* t : {&xg, &hg, &s}) {
    check_defined(op, *t);
    check_floating(op, *t);
    check_same_device(op, xg, *t);
    check_same_dtype(op, xg, *t);
  }
  TG_CHECK(s.dim() == 2, ShapeError, op, ": expected a state of shape (N, H), got ", shape_str(s.shape()));
  const Shape want{s.shape()[0], gates * s.shape()[1]};
  TG_CHECK(xg.shape() == want && hg.shape() == want, ShapeError, op, ": expected gates of shape ", shape_str(want),
           " for a state of shape ", shape_str(s.shape()), ", got ", shape_str(xg.shape()), " and ",
           shape_str(hg.shape()));
}
}  // namespace

LstmCell lstm_cell(const RawTensor& xg, const RawTensor& hg, const RawTensor& cx) {
  check_cell("lstm_cell", xg, hg, cx, 4);
  const RawTensor x = operand(xg), h = operand(hg), c = operand(cx);
  const int64_t N = cx.shape()[0], H = cx.shape()[1];
  LstmCell r;
  r.hc = RawTensor::empty({2, N, H}, x.dtype(), x.device());
  r.ws = RawTensor::empty({N, H, 8}, x.dtype(), x.device());
  if (N * H > 0) backend_for(x.device()).lstm_cell(x, h, c, r.hc, r.ws);
  if (x.dtype() != xg.dtype()) r.hc = r.hc.to(xg.dtype());
  return r;
}

LstmCellGrads lstm_cell_backward(const RawTensor& dhc, const RawTensor& cx, const RawTensor& ws) {
  const int64_t N = cx.shape()[0], H = cx.shape()[1];
  check_same_device("lstm_cell_backward", cx, dhc);
  TG_CHECK(dhc.shape() == Shape({2, N, H}), ShapeError, "lstm_cell_backward: gradient of shape ",
           shape_str(dhc.shape()), " for a state of shape ", shape_str(cx.shape()));
  const DType dt = ws.dtype();   // float32 or float64
  const RawTensor d = as_dtype(dhc, dt).contiguous(), c = as_dtype(cx, dt).contiguous();
  LstmCellGrads g;
  g.dgates = RawTensor::empty({N, 4 * H}, dt, cx.device());
  g.dcx = RawTensor::empty({N, H}, dt, cx.device());
  if (N * H > 0) backend_for(cx.device()).lstm_cell_backward(d, c, ws, g.dgates, g.dcx);
  if (dt != cx.dtype()) {
    g.dgates = g.dgates.to(cx.dtype());
    g.dcx = g.dcx.to(cx.dtype());
  }
  return g;
}

GruCell gru_cell(const RawTensor& xg, const RawTensor& hg, const RawTensor& hx) {
  check_cell("gru_cell", xg, hg, hx, 3);
  const RawTensor x = operand(xg), h = operand(hg), s = operand(hx);
  const int64_t N = hx.shape()[0], H = hx.shape()[1];
  GruCell r;
  r.hy = RawTensor::empty({N, H}, x.dtype(), x.device());
  r.ws = RawTensor::empty({N, H, 8}, x.dtype(), x.device());
  if (N * H > 0) backend_for(x.device()).gru_cell(x, h, s, r.hy, r.ws);
  if (x.dtype() != xg.dtype()) r.hy = r.hy.to(xg.dtype());
  return r;
}

GruCellGrads gru_cell_backward(const RawTensor& dhy, const RawTensor& hx, const RawTensor& ws) {
  const int64_t N = hx.shape()[0], H = hx.shape()[1];
  check_same_device("gru_cell_backward", hx, dhy);
  TG_CHECK(dhy.shape() == hx.shape(), ShapeError, "gru_cell_backward: gradient of shape ", shape_str(dhy.shape()),
           " for a state of shape ", shape_str(hx.shape()));
  const DType dt = ws.dtype();
  const RawTensor d = as_dtype(dhy, dt).contiguous(), s = as_dtype(hx, dt).contiguous();
  GruCellGrads g;
  g.dxg = RawTensor::empty({N, 3 * H}, dt, hx.device());
  g.dhg = RawTensor::empty({N, 3 * H}, dt, hx.device());
  g.dhx = RawTensor::empty({N, H}, dt, hx.device());
  if (N * H > 0) backend_for(hx.device()).gru_cell_backward(d, s, ws, g.dxg, g.dhg, g.dhx);
  if (dt != hx.dtype()) {
    g.dxg = g.dxg.to(hx.dtype());
    g.dhg = g.dhg.to(hx.dtype());
    g.dhx = g.dhx.to(hx.dtype());
  }
  return g;
}

// Note [Fused recurrent layer]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// recurrent_layer runs the whole time loop of one direction of an LSTM or GRU layer in buffers made
// once, so that a step allocates nothing and, in the common case, launches two kernels forwards (the
// recurrent GEMM with its bias, the fused cell of Note [Fused recurrent cells] in kernels/rnn.h) and
// three backwards (an add, the cell's backward, the GEMM of dh_prev).
//
// The rows are laid out as a packed sequence's data (step t is rows off[t] .. off[t] + bs[t]; the
// sequences running at a step are a prefix of the batch). The states live in one buffer per state,
// S (and C for the LSTM's cell state), of R + 2B rows: the initial state (B rows), every step's new
// state (R rows, in the row order of the output) and the final states (B rows), with the initial
// state first going forwards and after the steps going backwards:
//   forwards:  S = [h0 | step 0 | step 1 | ... | step T-1 | h_n]
//   backwards: S = [step 0 | step 1 | ... | step T-1 | h0 | h_n]
// So the state a step reads, the first bs[t] rows of the previous step's (or of h0), is a contiguous
// view of S that the GEMM and the cell read where it lies, and the cell writes h' (and c') where the
// next step reads them. With one batch size at every step the state each row read is S shifted by
// B rows (forwards) or not (backwards), aligned with the rows: W_hh's gradient is one GEMM over every
// row at the end, dgates^T S', with b_hh's as its row sums. A packed sequence whose batch shrinks
// needs nothing more (its steps read prefixes); its W_hh gradient is one accumulating GEMM per step.
// Going backwards, where the batch grows, the sequences that join at a step read h0's rows after
// the previous step's: those steps copy their state into J (and JC), kept for the backward. The
// sequences that end at a step (the last rows of its batch) copy their state to h_n.
//
// The recorded value is S for a GRU and (S, C) stacked for an LSTM; the op (ops/rnn.cpp) hands out
// views of it: the output rows, h_n, c_n. The backward walks the steps in the opposite order with
// the running gradient of the state read by the next step in that order (dh, dc), into which h_n's
// (c_n's) gradient goes where sequences end; a step's dh is that plus its output rows' gradient.
// The LSTM cell's backward reads (dh, dc) as one (2, b, H) view and writes dc_prev into the other of
// two such buffers, taken in turn, so that no kernel reads and writes one buffer. Rows that read h0
// hand their gradient to dh0 (dc0).
//
// The op records this as one node; under create_graph its rule differentiates the same steps made of
// recorded ops instead. Both devices run this loop.

namespace {
/// Checks the batch sizes of a recurrent layer against xp's R rows; each step's first row.
std::vector<int64_t> step_offsets(const std::vector<int64_t>& bs, int64_t rows) {
  TG_CHECK(!bs.empty(), ShapeError, "recurrent_layer: no time steps");
  std::vector<int64_t> offsets(bs.size());
  int64_t r = 0;
  for (std::size_t t = 0; t < bs.size(); ++t) {
    TG_CHECK(bs[t] > 0 && (t == 0 || bs[t] <= bs[t - 1]), ShapeError,
             "recurrent_layer: batch sizes must be positive and non-increasing, got ", bs[t], " at step ", t);
    offsets[t] = r;
    r += bs[t];
  }
  TG_CHECK(r == rows, ShapeError, "recurrent_layer: the batch sizes sum to ", r, " rows, the input has ", rows);
  return offsets;
}

/// Where each step of a recurrent layer finds the state it reads and puts the one it makes, in the
/// buffers of Note [Fused recurrent layer]; the same for the forward and the backward.
struct LayerPlan {
  int64_t T, B, R;
  bool reverse, uniform;
  std::vector<int64_t> bs, off;
  std::vector<int64_t> prev_rows;   // per step: the state row where it reads (in S, or in J when joined)
  std::vector<int64_t> joined;      // per step: its first row in J when some of its rows join there, else -1
  int64_t joined_rows = 0;

  LayerPlan(const std::vector<int64_t>& sizes, int64_t rows, bool rev)
      : T(static_cast<int64_t>(sizes.size())), B(sizes.empty() ? 0 : sizes[0]), R(rows), reverse(rev), bs(sizes) {
    off = step_offsets(bs, R);
    uniform = bs.back() == B;
    prev_rows.assign(bs.size(), 0);
    joined.assign(bs.size(), -1);
    for (int64_t k = 0; k < T; ++k) {
      const int64_t t = step(k);
      if (k == 0) {
        prev_rows[t] = init_row();
      } else if (continuing(k) < bs[t]) {
        joined[t] = joined_rows;
        joined_rows += bs[t];
      } else {
        prev_rows[t] = out_row(step(k - 1));
      }
    }
  }
  /// The step run k-th: the forward runs k = 0 .. T-1.
  int64_t step(int64_t k) const { return reverse ? T - 1 - k : k; }
  int64_t init_row() const { return reverse ? R : 0; }
  int64_t out_row(int64_t t) const { return (reverse ? 0 : B) + off[t]; }
  int64_t final_row() const { return R + B; }
  /// The rows of the k-th step that continue from the step before it (the others read h0).
  int64_t continuing(int64_t k) const { return k == 0 ? 0 : std::min(bs[step(k)], bs[step(k - 1)]); }
  /// The rows of the k-th step that go on to the next one (the others end here).
  int64_t going_on(int64_t k) const { return k + 1 < T ? std::min(bs[step(k)], bs[step(k + 1)]) : 0; }
  /// With one batch size: the first row of S whose rows are the states the steps read, row by row.
  int64_t read_rows() const { return reverse ? B : 0; }
};

/// The state the step t reads: b rows of S, or of J where sequences join.
RawTensor read_state(const LayerPlan& p, int64_t t, const RawTensor& S, const RawTensor& J) {
  return p.joined[t] >= 0 ? J.narrow(0, p.joined[t], p.bs[t]) : S.narrow(0, p.prev_rows[t], p.bs[t]);
}
}  // namespace

RecurrentLayer recurrent_layer(bool lstm, const RawTensor& xp, const std::vector<int64_t>& bs, const RawTensor& h0,
                               const RawTensor& c0, const RawTensor& w_hh, const RawTensor& b_hh, bool reverse) {
  const char* op = "recurrent_layer";
  const int64_t gates = lstm ? 4 : 3;
  for (const RawTensor* t : {&xp, &h0, &w_hh}) {
    check_defined(op, *t);
    check_same_device(op, xp, *t);
    check_same_dtype(op, xp, *t);
  }
  TG_CHECK(xp.dtype() == kFloat32 || xp.dtype() == kFloat64, DTypeError, op, ": expected float32 or float64, got ",
           dtype_name(xp.dtype()));
  TG_CHECK(h0.dim() == 2 && xp.dim() == 2, ShapeError, op, ": expected 2-D input gates and state, got shapes ",
           shape_str(xp.shape()), " and ", shape_str(h0.shape()));
  const int64_t B = h0.shape()[0], H = h0.shape()[1], G = gates * H, R = xp.shape()[0];
  const LayerPlan p(bs, R, reverse);
  TG_CHECK(bs[0] == B && xp.shape()[1] == G && w_hh.shape() == Shape({G, H}), ShapeError, op,
           ": input gates ", shape_str(xp.shape()), ", state ", shape_str(h0.shape()), " and weight ",
           shape_str(w_hh.shape()), " do not fit ", bs[0], " sequences of ", gates, " gates");
  for (const RawTensor* t : {&c0, &b_hh}) {
    if (!t->defined()) continue;
    check_same_device(op, xp, *t);
    check_same_dtype(op, xp, *t);
  }
  TG_CHECK(!lstm || (c0.defined() && c0.shape() == h0.shape()), ShapeError, op, ": expected a cell state of shape ",
           shape_str(h0.shape()));
  TG_CHECK(!b_hh.defined() || b_hh.shape() == Shape({G}), ShapeError, op, ": expected a bias of shape [", G, "], got ",
           shape_str(b_hh.shape()));
  const DType dt = xp.dtype();
  const Device dev = xp.device();
  Backend& be = backend_for(dev);
  const RawTensor x = xp.contiguous(), w_t = w_hh.transpose(0, 1), bias = b_hh.defined() ? b_hh.contiguous() : b_hh;
  RecurrentLayer r;
  const int64_t rows = R + 2 * B;
  r.out = lstm ? RawTensor::empty({2, rows, H}, dt, dev) : RawTensor::empty({rows, H}, dt, dev);
  const RawTensor S = lstm ? r.out.select(0, 0) : r.out, C = lstm ? r.out.select(0, 1) : RawTensor();
  r.ws = RawTensor::empty({R, H, 8}, dt, dev);
  if (p.joined_rows > 0) {
    r.joined = RawTensor::empty({p.joined_rows, H}, dt, dev);
    if (lstm) r.joined_c = RawTensor::empty({p.joined_rows, H}, dt, dev);
  }
  be.copy(h0, S.narrow(0, p.init_row(), B));
  if (lstm) be.copy(c0, C.narrow(0, p.init_row(), B));
  const RawTensor hg = RawTensor::empty({B, G}, dt, dev);
  for (int64_t k = 0; k < p.T; ++k) {
    const int64_t t = p.step(k), b = bs[t], o = p.off[t];
    if (p.joined[t] >= 0) {   // rows [n, b) join from h0 (c0) after the previous step's n
      const int64_t n = p.continuing(k), from = p.out_row(p.step(k - 1));
      for (const auto& [state, J] : {std::pair<RawTensor, RawTensor>{S, r.joined}, {C, r.joined_c}}) {
        if (!J.defined()) continue;
        be.copy(state.narrow(0, from, n), J.narrow(0, p.joined[t], n));
        be.copy(state.narrow(0, p.init_row() + n, b - n), J.narrow(0, p.joined[t] + n, b - n));
      }
    }
    const RawTensor h_prev = read_state(p, t, S, r.joined), g = hg.narrow(0, 0, b), ws = r.ws.narrow(0, o, b);
    gemm_into(h_prev, w_t, g, /*accumulate=*/false, bias);
    if (lstm) {
      const RawTensor hc = r.out.narrow(1, p.out_row(t), b);   // (2, b, H): h' in S, c' in C
      be.lstm_cell(x.narrow(0, o, b), g, read_state(p, t, C, r.joined_c), hc, ws);
    } else {
      be.gru_cell(x.narrow(0, o, b), g, h_prev, S.narrow(0, p.out_row(t), b), ws);
    }
    const int64_t m = p.going_on(k);   // rows [m, b) end here: their final states
    if (m < b) {
      be.copy(S.narrow(0, p.out_row(t) + m, b - m), S.narrow(0, p.final_row() + m, b - m));
      if (lstm) be.copy(C.narrow(0, p.out_row(t) + m, b - m), C.narrow(0, p.final_row() + m, b - m));
    }
  }
  return r;
}

RecurrentLayerGrads recurrent_layer_backward(bool lstm, const RawTensor& dout_in, const RecurrentLayer& f,
                                             const RawTensor& w_hh, const std::vector<int64_t>& bs, bool reverse,
                                             bool want_weights) {
  const DType dt = f.ws.dtype();
  const Device dev = f.ws.device();
  const int64_t R = f.ws.shape()[0], H = f.ws.shape()[1], G = (lstm ? 4 : 3) * H;
  const LayerPlan p(bs, R, reverse);
  const int64_t B = p.B;
  const Shape want = lstm ? Shape{2, R + 2 * B, H} : Shape{R + 2 * B, H};
  check_same_device("recurrent_layer_backward", f.ws, dout_in);
  TG_CHECK(dout_in.shape() == want, ShapeError, "recurrent_layer_backward: gradient of shape ",
           shape_str(dout_in.shape()), " for an output of shape ", shape_str(want));
  Backend& be = backend_for(dev);
  const RawTensor dout = as_dtype(dout_in, dt).contiguous(), w = w_hh.contiguous();
  const RawTensor dS = lstm ? dout.select(0, 0) : dout, dC = lstm ? dout.select(0, 1) : RawTensor();
  const RawTensor S = lstm ? f.out.select(0, 0) : f.out, C = lstm ? f.out.select(0, 1) : RawTensor();
  RecurrentLayerGrads d;
  const RawTensor dg = RawTensor::empty({R, G}, dt, dev);   // the state product's gates (LSTM: both products')
  d.dxp = lstm ? dg : RawTensor::empty({R, G}, dt, dev);
  d.dh0 = RawTensor::empty({B, H}, dt, dev);
  if (lstm) d.dc0 = RawTensor::empty({B, H}, dt, dev);
  // dh: the running gradient of the state the step after reads; the LSTM's (dh + output, dc) pairs,
  // two of them taken in turn, and the GRU's dh + output
  const RawTensor dh = RawTensor::empty({B, H}, dt, dev);
  const RawTensor pairs = RawTensor::empty({lstm ? 2 : 1, lstm ? 2 : 1, B, H}, dt, dev);
  RawTensor dw = want_weights && !p.uniform ? RawTensor::empty({G, H}, dt, dev) : RawTensor();
  bool dw_started = false;
  for (int64_t k = p.T - 1; k >= 0; --k) {
    const int64_t t = p.step(k), b = bs[t], o = p.off[t];
    const int64_t m = p.going_on(k);   // rows [m, b) end here: the final states' gradient joins
    const RawTensor cur = pairs.select(0, k % 2 == 0 || !lstm ? 0 : 1).narrow(1, 0, b);   // (2 or 1, b, H)
    const RawTensor dc = lstm ? cur.select(0, 1) : RawTensor();
    if (m < b) {
      be.copy(dS.narrow(0, p.final_row() + m, b - m), dh.narrow(0, m, b - m));
      if (lstm) be.copy(dC.narrow(0, p.final_row() + m, b - m), dc.narrow(0, m, b - m));
    }
    // this step's dh' = what the later steps and h_n want + the output rows' gradient
    be.binary(BinaryOp::Add, dh.narrow(0, 0, b), dS.narrow(0, p.out_row(t), b), cur.select(0, 0));
    const RawTensor dgs = dg.narrow(0, o, b), ws = f.ws.narrow(0, o, b), dhs = dh.narrow(0, 0, b);
    const RawTensor h_prev = read_state(p, t, S, f.joined);
    if (lstm) {
      const RawTensor next = pairs.select(0, k % 2 == 0 ? 1 : 0).narrow(1, 0, b);
      be.lstm_cell_backward(cur, read_state(p, t, C, f.joined_c), ws, dgs, next.select(0, 1));
      gemm_into(dgs, w, dhs, /*accumulate=*/false);
    } else {
      be.gru_cell_backward(cur.select(0, 0), h_prev, ws, d.dxp.narrow(0, o, b), dgs, dhs);
      gemm_into(dgs, w, dhs, /*accumulate=*/true);
    }
    if (dw.defined()) {   // batch sizes that change: W_hh's gradient step by step
      gemm_into(dgs.transpose(0, 1), h_prev, dw, /*accumulate=*/dw_started);
      dw_started = true;
    }
    // the rows that read h0: rows [n, b)
    const int64_t n = p.continuing(k);
    if (n < b) {
      be.copy(dhs.narrow(0, n, b - n), d.dh0.narrow(0, n, b - n));
      if (lstm) {
        const RawTensor dc_prev = pairs.select(0, k % 2 == 0 ? 1 : 0).select(0, 1).narrow(0, 0, b);
        be.copy(dc_prev.narrow(0, n, b - n), d.dc0.narrow(0, n, b - n));
      }
    }
  }
  if (want_weights) {
    if (p.uniform) {
      std::tie(d.dw_hh, d.db_hh) = matmul_row_sums(dg.transpose(0, 1), S.narrow(0, p.read_rows(), R));
    } else {
      d.dw_hh = dw;
      d.db_hh = sum_to(dg, {G});
    }
  }
  return d;
}

}  // namespace prim
}  // namespace tg
