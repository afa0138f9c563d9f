// prim/attention.cpp: the graph-free fused attention of prim/prim.h: dtype and device
// checks, contiguous operands, allocation of the outputs and of the saved log-sum-exp, and the
// backend call (the host reference in backend/cpu/attention.cpp, the kernels in backend/cuda/attention.cu).
// The shapes, the mask's strides and the choice between this and the composed path are the op's, in
// ops/attention.cpp (Note [Fused attention]).
#include "tensorgrad/prim/prim.h"

namespace tg {
namespace prim {

namespace {
void check_operands(const char* op, const RawTensor& q, const RawTensor& k, const RawTensor& v, const AttentionArgs& a) {
  check_same_device(op, q, k);
  check_same_device(op, q, v);
  check_same_dtype(op, q, k);
  check_same_dtype(op, q, v);
  check_floating(op, q);
  // no keys or no width: the composed path's answers (zeros; the mean of v) are the op's business
  TG_CHECK(a.S > 0 && a.E > 0, ShapeError, op, ": fused attention needs at least one key and E > 0, got S = ", a.S,
           " and E = ", a.E);
  TG_CHECK(q.shape() == (Shape{a.B, a.L, a.E}) && k.shape() == (Shape{a.B, a.S, a.E}) &&
               v.shape() == (Shape{a.B, a.S, a.Ev}),
           ShapeError, op, ": fused attention expects q (B, L, E), k (B, S, E), v (B, S, Ev) = ",
           shape_str({a.B, a.L, a.E}), ", ", shape_str({a.B, a.S, a.E}), ", ", shape_str({a.B, a.S, a.Ev}), ", got ",
           shape_str(q.shape()), ", ", shape_str(k.shape()), " and ", shape_str(v.shape()));
  if (a.mask.defined()) {
    check_same_device(op, q, a.mask);
    TG_CHECK(a.mask.dtype() == kBool || a.mask.dtype() == q.dtype(), DTypeError, op,
             ": fused attention expects a bool mask or one of the query's dtype, got ", dtype_name(a.mask.dtype()));
  }
}
}  // namespace

DType attention_lse_dtype(DType dtype) { return dtype == kFloat64 ? kFloat64 : kFloat32; }

Attention attention(const RawTensor& q, const RawTensor& k, const RawTensor& v, const AttentionArgs& args) {
  const char* op = "scaled_dot_product_attention";
  check_operands(op, q, k, v, args);
  Attention r;
  r.out = RawTensor::empty({args.B, args.L, args.Ev}, q.dtype(), q.device());
  r.lse = RawTensor::empty({args.B, args.L}, attention_lse_dtype(q.dtype()), q.device());
  if (r.out.numel() == 0) return r;
  backend_for(q.device()).attention(q.contiguous(), k.contiguous(), v.contiguous(), args, r.out, r.lse);
  return r;
}

AttentionGrads attention_backward(const RawTensor& q, const RawTensor& k, const RawTensor& v, const RawTensor& out,
                                  const RawTensor& lse, const RawTensor& dout, const AttentionArgs& args) {
  const char* op = "scaled_dot_product_attention";
  check_operands(op, q, k, v, args);
  check_same_dtype(op, q, dout);
  check_same_device(op, q, dout);
  AttentionGrads g;
  g.dq = RawTensor::empty(q.shape(), q.dtype(), q.device());
  g.dk = RawTensor::empty(k.shape(), k.dtype(), k.device());
  g.dv = RawTensor::empty(v.shape(), v.dtype(), v.device());
  if (g.dq.numel() + g.dk.numel() + g.dv.numel() == 0) return g;
  backend_for(q.device()).attention_backward(q.contiguous(), k.contiguous(), v.contiguous(), out.contiguous(),
                                             lse.contiguous(), dout.contiguous(), args, g.dq, g.dk, g.dv);
  return g;
}

}  // namespace prim
}  // namespace tg
