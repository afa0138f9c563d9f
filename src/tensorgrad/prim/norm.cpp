// prim/norm.cpp: the normalization family (kernels/norm.h): layer_norm's rows forward and backward
// through Backend::layer_norm (group_norm's groups are rows too, ops/norm.cpp). Checks the operands,
// converts float16/bfloat16 to float32 (Note [Low precision through float32] in prim/blas.cpp) and
// allocates; the row shapes and the affine parameters' shapes are the op's.
#include "tensorgrad/prim/prim.h"

#include "tensorgrad/core/error.h"
#include "tensorgrad/prim/internal.h"

namespace tg {
namespace prim {

namespace {
void check_rows(const char* op, const RawTensor& x, const RawTensor& w, const RawTensor& b) {
  check_defined(op, x);
  check_floating(op, x);
  TG_CHECK(x.dim() == 2, ShapeError, op, ": expected rows (M, D), got shape ", shape_str(x.shape()));
  for (const RawTensor* p : {&w, &b}) {
    if (!p->defined()) continue;
    check_same_device(op, x, *p);
    check_same_dtype(op, x, *p);
    TG_CHECK(p->shape() == Shape{x.shape()[1]}, ShapeError, op, ": expected weight and bias of shape [",
             x.shape()[1], "], got ", shape_str(p->shape()));
  }
}
}  // namespace

LayerNorm layer_norm(const RawTensor& x, const RawTensor& w, const RawTensor& b, double eps) {
  check_rows("layer_norm", x, w, b);
  const bool lowp = is_low_precision(x.dtype());
  const RawTensor xc = through_float32(x).contiguous();
  const RawTensor wc = through_float32(w).contiguous(), bc = through_float32(b).contiguous();
  const int64_t M = x.shape()[0], D = x.shape()[1];
  LayerNorm r;
  r.y = RawTensor::empty({M, D}, xc.dtype(), x.device());
  r.mean = RawTensor::empty({M}, xc.dtype(), x.device());
  r.rstd = RawTensor::empty({M}, xc.dtype(), x.device());
  if (M * D > 0) backend_for(x.device()).layer_norm(xc, wc, bc, eps, r.y, r.mean, r.rstd);
  if (lowp) r.y = r.y.to(x.dtype());
  return r;
}

LayerNormGrads layer_norm_backward(const RawTensor& dy, const RawTensor& x, const RawTensor& mean, const RawTensor& rstd,
                                   const RawTensor& w, bool want_dx, bool want_dw, bool want_db) {
  check_rows("layer_norm_backward", x, w, RawTensor());
  check_same_device("layer_norm_backward", x, dy);
  TG_CHECK(dy.shape() == x.shape(), ShapeError, "layer_norm_backward: gradient of shape ", shape_str(dy.shape()),
           " for rows of shape ", shape_str(x.shape()));
  const bool lowp = is_low_precision(x.dtype());
  const RawTensor xc = through_float32(x).contiguous(), wc = through_float32(w).contiguous();
  const RawTensor dyc = as_dtype(dy, xc.dtype()).contiguous();
  const int64_t M = x.shape()[0], D = x.shape()[1];
  LayerNormGrads g;
  if (want_dx) g.dx = RawTensor::empty({M, D}, xc.dtype(), x.device());
  if (want_dw) g.dw = RawTensor::empty({D}, xc.dtype(), x.device());
  if (want_db) g.db = RawTensor::empty({D}, xc.dtype(), x.device());
  if (M * D > 0) {
    backend_for(x.device()).layer_norm_backward(dyc, xc, mean, rstd, wc, g.dx, g.dw, g.db);
  } else {   // no rows: the parameter gradients are empty sums
    if (want_dw) fill_(g.dw, 0.0);
    if (want_db) fill_(g.db, 0.0);
  }
  if (lowp) {
    if (g.dx.defined()) g.dx = g.dx.to(x.dtype());
    if (g.dw.defined()) g.dw = g.dw.to(x.dtype());
    if (g.db.defined()) g.db = g.db.to(x.dtype());
  }
  return g;
}

}  // namespace prim
}  // namespace tg
