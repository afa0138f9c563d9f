// prim/elementwise.cpp: the elementwise family (kernels/elementwise.h): unary ops and their
// gradients, binary ops with broadcasting and type promotion, in place or not, and where.
#include "tensorgrad/prim/prim.h"
#include "tensorgrad/core/error.h"
#include "tensorgrad/prim/internal.h"

namespace tg {
namespace prim {

namespace {
/// The dtype op computes in for operands of common dtype t: true division of integers in float32.
DType compute_dtype(BinaryOp op, DType t) { return op == BinaryOp::Div && !is_floating(t) ? kFloat32 : t; }

void check_binary(BinaryOp op, const RawTensor& a, const RawTensor& b, const char* name) {
  check_defined(name, a);
  check_defined(name, b);
  check_same_device(name, a, b);
  // Integer powers would need exact integer exponentiation (and an error for negative exponents):
  // refused rather than computed through double, whose inf does not fit an integer.
  TG_CHECK(op != BinaryOp::Pow || is_floating(a.dtype()) || is_floating(b.dtype()), DTypeError, name,
           ": not supported for integer tensors (convert with .to(tg::kFloat32) first)");
  TG_CHECK(!(op == BinaryOp::Sub && a.dtype() == kBool && b.dtype() == kBool), DTypeError, name,
           ": subtraction, the `-` operator, with two bool tensors is not supported; use the `^` (logical_xor) "
           "or `!=` (ne) operator instead");
}

}  // namespace


RawTensor unary(UnaryOp op, const RawTensor& x, UnaryArgs args) {
  check_defined("unary", x);
  check_floating("unary", x);
  RawTensor out = RawTensor::empty(x.shape(), x.dtype(), x.device());
  backend_for(x.device()).unary(op, args, x, out);
  return out;
}

namespace {
UnaryOp rounding_op(DType lowp) {
  TG_CHECK(is_low_precision(lowp), DTypeError, "round_to_precision: expected float16 or bfloat16, got ",
           dtype_name(lowp));
  return lowp == kBFloat16 ? UnaryOp::RoundToBFloat16 : UnaryOp::RoundToFloat16;
}
}  // namespace

RawTensor round_to_precision(const RawTensor& x, DType lowp) { return unary(rounding_op(lowp), x); }

void round_to_precision_(const RawTensor& x, DType lowp) {
  check_defined("round_to_precision_", x);
  check_floating("round_to_precision_", x);
  check_no_internal_overlap("round_to_precision_", x);
  backend_for(x.device()).unary(rounding_op(lowp), {}, x, x);   // elementwise: in place is safe
  x.storage()->bump_version();
}

RawTensor unary_backward(UnaryOp op, const RawTensor& x, const RawTensor& y, const RawTensor& dy, UnaryArgs args) {
  RawTensor dx = RawTensor::empty(dy.shape(), dy.dtype(), dy.device());
  backend_for(dy.device()).unary_backward(op, args, x, y, dy, dx);
  return dx;
}

RawTensor binary(BinaryOp op, const RawTensor& a, const RawTensor& b, const char* name) {
  check_binary(op, a, b, name);
  const bool same_shape = a.shape() == b.shape();
  const Shape shape = same_shape ? a.shape() : broadcast_shapes(a.shape(), b.shape(), name);   // before any copy
  const DType common = compute_dtype(op, result_type(a, b));
  const RawTensor ac = as_dtype(a, common), bc = as_dtype(b, common);
  const bool comparison = op == BinaryOp::Eq || op == BinaryOp::Ne || op == BinaryOp::Gt || op == BinaryOp::Lt ||
                          op == BinaryOp::Ge || op == BinaryOp::Le;
  const DType out_dtype = comparison ? kBool : common;
  if (same_shape) {   // the common case: no broadcast views to build
    RawTensor out = RawTensor::empty(shape, out_dtype, a.device());
    backend_for(a.device()).binary(op, ac, bc, out);
    return out;
  }
  RawTensor out = RawTensor::empty(shape, out_dtype, a.device());
  backend_for(a.device()).binary(op, ac.expand(shape), bc.expand(shape), out);
  return out;
}

void binary_(BinaryOp op, const RawTensor& self, const RawTensor& other, const char* name) {
  check_binary(op, self, other, name);
  check_no_internal_overlap(name, self);
  check_no_partial_overlap(name, self, other);
  const DType common = compute_dtype(op, result_type(self, other));
  TG_CHECK(can_cast(common, self.dtype()), DTypeError, name, ": result type ", dtype_name(common),
           " can't be cast to the desired output type ", dtype_name(self.dtype()));
  const Shape shape = broadcast_shapes(self.shape(), other.shape(), name);
  TG_CHECK(shape == self.shape(), ShapeError, name, ": output with shape ", shape_str(self.shape()),
           " doesn't match the broadcast shape ", shape_str(shape));
  const RawTensor o = other.shape() == shape ? other : other.expand(shape);
  if (common == self.dtype() && other.dtype() == self.dtype()) {   // the common case (gradient accumulation)
    backend_for(self.device()).binary(op, self, o, self);
  } else {   // computed in the result type, then rounded into self
    const RawTensor r = binary(op, self, o, name);
    backend_for(self.device()).copy(r, self);
  }
  self.storage()->bump_version();
}

RawTensor mul(const RawTensor& a, double s) { return binary(BinaryOp::Mul, a, scalar_like(s, a), "mul"); }

RawTensor where(const RawTensor& cond, const RawTensor& a, const RawTensor& b) {
  check_defined("where", cond);
  check_defined("where", a);
  check_defined("where", b);
  check_same_device("where", cond, a);
  check_same_device("where", a, b);
  TG_CHECK(cond.dtype() == kBool, DTypeError, "where: expected condition to be a bool tensor, got ",
           dtype_name(cond.dtype()), " (compare it first, e.g. cond != 0)");
  const DType common = result_type(a, b);
  const Shape shape = broadcast_shapes(broadcast_shapes(cond.shape(), a.shape(), "where"), b.shape(), "where");
  RawTensor out = RawTensor::empty(shape, common, a.device());
  backend_for(a.device())
      .where(cond.expand(shape), as_dtype(a, common).expand(shape), as_dtype(b, common).expand(shape), out);
  return out;
}

}  // namespace prim
}  // namespace tg
