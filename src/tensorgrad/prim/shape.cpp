// prim/shape.cpp: cat, the one shape op that copies (views are RawTensor methods, core/raw_tensor.h).
#include "tensorgrad/prim/prim.h"

#include <vector>

#include "tensorgrad/core/error.h"
#include "tensorgrad/prim/internal.h"

namespace tg {
namespace prim {

RawTensor cat(const std::vector<RawTensor>& xs, int64_t dim) {
  TG_CHECK(!xs.empty(), ShapeError, "cat: expected a non-empty list of tensors");
  const RawTensor& first = xs[0];
  TG_CHECK(first.dim() > 0, ShapeError, "cat: zero-dimensional tensor cannot be concatenated");
  dim = wrap_dim(dim, first.dim(), "cat");
  Shape shape = first.shape();
  shape[dim] = 0;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const RawTensor& x = xs[i];
    check_defined("cat", x);
    check_same_device("cat", first, x);
    TG_CHECK(x.dim() == first.dim(), ShapeError, "cat: tensors must have the same number of dimensions: got ",
             first.dim(), " and ", x.dim());
    for (int64_t d = 0; d < x.dim(); ++d)
      TG_CHECK(d == dim || x.shape()[d] == first.shape()[d], ShapeError, "cat: sizes of tensors must match except ",
               "in dimension ", dim, ". Expected size ", first.shape()[d], " but got size ", x.shape()[d],
               " for tensor number ", i, " in the list");
    TG_CHECK(!__builtin_add_overflow(shape[dim], x.shape()[dim], &shape[dim]), ShapeError, "cat: the sizes along ",
             "dimension ", dim, " add up to more than int64 can count");
  }
  DType dtype = first.dtype();   // Note [Type promotion]; the copies below convert
  for (const RawTensor& x : xs) dtype = promote_types(dtype, x.dtype());
  RawTensor out = RawTensor::empty(shape, dtype, first.device());
  int64_t at = 0;
  for (const RawTensor& x : xs) {
    if (x.numel() > 0) backend_for(out.device()).copy(x, out.narrow(dim, at, x.shape()[dim]));
    at += x.shape()[dim];
  }
  return out;
}

}  // namespace prim
}  // namespace tg
