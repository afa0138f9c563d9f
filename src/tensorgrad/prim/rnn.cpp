// prim/rnn.cpp: the recurrent family (kernels/rnn.h): the LSTM and GRU cells' pointwise step and its
// gradient through Backend::lstm_cell / gru_cell. Checks the operands, brings float16/bfloat16
// through float32 (Note [Low precision through float32] in prim/blas.cpp) and allocates; the op
// (ops/rnn.cpp) has already brought its operands to one dtype.
#include "tensorgrad/prim/prim.h"

#include "tensorgrad/core/error.h"
#include "tensorgrad/prim/internal.h"

namespace tg {
namespace prim {

namespace {
/// t contiguous, in float32 when it is a 16-bit float.
RawTensor operand(const RawTensor& t) { return (is_low_precision(t.dtype()) ? t.to(kFloat32) : t).contiguous(); }

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

}  // namespace prim
}  // namespace tg
