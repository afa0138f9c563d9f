// prim/reduce.cpp: the reduction family (kernels/reduce.h): sum, mean, max, min, argmax and argmin
// over dims, sum_to (a broadcast gradient summed back to its input's shape), and scan (cumsum, cumprod).
#include "tensorgrad/prim/prim.h"

#include <algorithm>
#include <vector>

#include "tensorgrad/core/error.h"
#include "tensorgrad/prim/internal.h"

namespace tg {
namespace prim {

RawTensor reduce(ReduceOp op, const RawTensor& x, const std::vector<int64_t>& dims, bool keepdim, const char* name) {
  check_defined(name, x);
  // PyTorch sums bool and every integer type in int64 (torch.sum(uint8) is int64).
  if (op == ReduceOp::Sum && !is_floating(x.dtype()) && x.dtype() != kInt64)
    return reduce(op, as_dtype(x, kInt64), dims, keepdim, name);
  const bool arg = op == ReduceOp::ArgMax || op == ReduceOp::ArgMin;
  if (arg && dims.empty()) {   // over all elements: the flattened index, as in PyTorch
    TG_CHECK(x.numel() > 0, IndexError, name, ": expected a non-empty tensor (cannot take ", name,
             " of an empty tensor)");
    RawTensor flat = x.reshape({x.numel()});
    RawTensor out = RawTensor::empty({1}, kInt64, x.device());
    backend_for(x.device()).reduce(op, flat, out);
    return keepdim ? out.view(Shape(x.dim(), 1)) : out.view({});
  }
  TG_CHECK(!arg || dims.size() == 1, ShapeError, name, ": expects exactly one dim");
  TG_CHECK(op == ReduceOp::Sum || x.numel() > 0 || !dims.empty(), IndexError, name,
           ": cannot compute ", name, " of an empty tensor (shape ", shape_str(x.shape()), ")");
  std::vector<bool> reduced(static_cast<std::size_t>(std::max<int64_t>(x.dim(), 1)), dims.empty());
  for (int64_t d : dims) {
    const int64_t w = wrap_dim(d, x.dim(), name);
    TG_CHECK(!reduced[w] || dims.empty(), ShapeError, name, ": dim ", w, " appears multiple times in the list of dims");
    reduced[w] = true;
  }
  Shape keep_shape = x.shape(), final_shape;
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (reduced[d]) {
      TG_CHECK(op == ReduceOp::Sum || x.shape()[d] > 0, IndexError, name, ": cannot compute ", name,
               " over dimension ", d, " of size 0 (shape ", shape_str(x.shape()), ")");
      keep_shape[d] = 1;
      if (keepdim) final_shape.push_back(1);
    } else {
      final_shape.push_back(x.shape()[d]);
    }
  }
  RawTensor out = RawTensor::empty(keep_shape, arg ? kInt64 : x.dtype(), x.device());
  if (out.numel() > 0) backend_for(x.device()).reduce(op, x, out);
  return out.view(final_shape);
}

RawTensor scan(BinaryOp op, const RawTensor& x, int64_t dim, bool reverse, const char* name) {
  check_defined(name, x);
  dim = wrap_dim(dim, x.dim(), name);
  const DType dt = x.dtype();
  const DType work = !is_floating(dt) ? kInt64 : dt == kFloat64 ? kFloat64 : kFloat32;
  RawTensor in = x.to(work).contiguous();
  if (in.dim() == 0) in = in.reshape({1});
  RawTensor out = RawTensor::empty(in.shape(), work, x.device());
  if (out.numel() > 0) backend_for(x.device()).scan(op, in, dim, reverse, out);
  out = out.view(x.shape());
  return is_floating(dt) && dt != work ? out.to(dt) : out;
}

RawTensor sum_to(const RawTensor& x, const Shape& shape) {
  if (x.shape() == shape) return x;
  TG_CHECK(broadcast_shapes(x.shape(), shape, "sum_to") == x.shape(), ShapeError, "sum_to: cannot sum shape ",
           shape_str(x.shape()), " down to ", shape_str(shape));
  const int64_t lead = x.dim() - static_cast<int64_t>(shape.size());
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < x.dim(); ++d)
    if (d < lead || (shape[d - lead] == 1 && x.shape()[d] != 1)) dims.push_back(d);
  if (dims.empty()) return x.reshape(shape);
  RawTensor out = RawTensor::empty(shape, x.dtype(), x.device());
  // reduce into x's rank with ones on the summed dims, then view as the target shape
  Shape keep = x.shape();
  for (int64_t d : dims) keep[d] = 1;
  RawTensor keep_view = out.view(keep);
  backend_for(x.device()).reduce(ReduceOp::Sum, x, keep_view);
  return out;
}

}  // namespace prim
}  // namespace tg
