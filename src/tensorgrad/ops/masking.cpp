// ops/masking.cpp: masked_fill, tril and triu, each a where() over a bool mask with its backward
// below it, and their Tensor methods. The masks of tril/triu are built on the input's device from
// two aranges, so both backends run them without a kernel of their own. where itself is in
// ops/elementwise.cpp, its kernels in the backends.
#include "tensorgrad/prim/prim.h"
#include "tensorgrad/ops/ops.h"
#include "tensorgrad/ops/rules.h"

namespace tg {

namespace {

/// Validates masked_fill's operands: a bool mask on x's device that broadcasts with x.
void check_mask(const Tensor& x, const Tensor& mask) {
  TG_CHECK(x.defined() && mask.defined(), Error, "masked_fill: undefined input or mask");
  TG_CHECK(mask.dtype() == kBool, DTypeError, "masked_fill: only supports boolean masks, but got mask with dtype ",
           dtype_name(mask.dtype()), " (compare it first, e.g. mask > 0)");
  TG_CHECK(!mask.requires_grad(), AutogradError, "masked_fill: the mask is not differentiable; detach() it");
  prim::check_same_device("masked_fill", x.data(), mask.data());
  (void)broadcast_shapes(x.shape(), mask.shape(), "masked_fill");
}

/// The (rows, cols) bool mask of tril (lower = true) or triu: col - row <= diagonal, or >= diagonal.
RawTensor triangle_mask(int64_t rows, int64_t cols, int64_t diagonal, bool lower, Device device) {
  const RawTensor r = prim::arange(rows, kInt64, device).reshape({rows, 1});
  const RawTensor c = prim::arange(cols, kInt64, device);
  const RawTensor diff = prim::sub(c, r);                                    // (rows, cols): col - row
  const RawTensor d = prim::full({}, static_cast<double>(diagonal), kInt64, device);
  return prim::binary(lower ? BinaryOp::Le : BinaryOp::Ge, diff, d, lower ? "tril" : "triu");
}

Tensor triangle(const Tensor& x, int64_t diagonal, bool lower) {
  const char* name = lower ? "tril" : "triu";
  TG_CHECK(x.defined(), Error, name, ": undefined input");
  TG_CHECK(x.dim() >= 2, ShapeError, name, ": input tensor must have at least 2 dimensions, but got shape ",
           shape_str(x.shape()));
  const RawTensor keep = triangle_mask(x.size(-2), x.size(-1), diagonal, lower, x.device());   // over the last two dims
  const RawTensor zero = prim::full({}, 0.0, x.dtype(), x.device());
  return record(name, prim::where(keep, x.data(), zero), {x}, [keep](const auto& grad, auto& g) {
    g.set(0, rules::where(keep, grad, rules::scalar(0.0, grad)));         // d/dx = [kept]
  });
}

}  // namespace

Tensor masked_fill(const Tensor& x, const Tensor& mask, double value) {
  check_mask(x, mask);
  const RawTensor fill = prim::full({}, value, x.dtype(), x.device());      // value in x's dtype, as PyTorch
  const RawTensor m = mask.data();
  return record("masked_fill", prim::where(m, fill, x.data()), {x}, [m](const auto& grad, auto& g) {
    g.set(0, rules::where(m, rules::scalar(0.0, grad), grad));           // d/dx = [not mask]
  });
}

Tensor masked_fill(const Tensor& x, const Tensor& mask, const Tensor& value) {
  check_mask(x, mask);
  TG_CHECK(value.defined() && value.dim() == 0, ShapeError,
           "masked_fill: only supports a 0-dimensional value tensor, but got tensor with ",
           value.defined() ? value.dim() : 0, " dimension(s)");
  prim::check_same_device("masked_fill", x.data(), value.data());
  const Tensor v = value.to(x.dtype());                                  // recorded: the gradient casts back
  const RawTensor m = mask.data();
  return record("masked_fill", prim::where(m, v.data(), x.data()), {x, v}, [m](const auto& grad, auto& g) {
    const auto zero = rules::scalar(0.0, grad);
    if (g.need(0)) g.set(0, rules::where(m, zero, grad));                 // d/dx = [not mask]
    if (g.need(1)) g.set(1, rules::where(m, grad, zero));                 // d/dvalue = sum over the mask (engine's sum_to)
  });
}

Tensor tril(const Tensor& x, int64_t diagonal) { return triangle(x, diagonal, true); }
Tensor triu(const Tensor& x, int64_t diagonal) { return triangle(x, diagonal, false); }

Tensor Tensor::masked_fill(const Tensor& mask, double value) const { return tg::masked_fill(*this, mask, value); }
Tensor Tensor::masked_fill(const Tensor& mask, const Tensor& value) const {
  return tg::masked_fill(*this, mask, value);
}
Tensor Tensor::tril(int64_t diagonal) const { return tg::tril(*this, diagonal); }
Tensor Tensor::triu(int64_t diagonal) const { return tg::triu(*this, diagonal); }

}  // namespace tg
