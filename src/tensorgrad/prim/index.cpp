// prim/index.cpp: the indexing family (kernels/index.h): index_select, index_add_, gather and
// scatter_add_. Index ranges are checked on the host for CPU tensors, by the kernels for CUDA ones.
#include "tensorgrad/prim/prim.h"
#include "tensorgrad/core/error.h"
#include "tensorgrad/prim/internal.h"

namespace tg {
namespace prim {

RawTensor index_select(const RawTensor& x, int64_t dim, const RawTensor& index) {
  check_defined("index_select", x);
  check_same_device("index_select", x, index);
  check_int64_index("index_select", index);
  TG_CHECK(index.dim() <= 1, ShapeError, "index_select: index must be 0-D or 1-D, got shape ",
           shape_str(index.shape()));
  dim = wrap_dim(dim, x.dim(), "index_select");
  TG_CHECK(x.dim() > 0 || index.numel() == 1, IndexError, "index_select: index to a 0-d tensor can have only 1 value, got ",
           index.numel(), " value(s)");   // the output keeps x's shape []: exactly one element
  const int64_t size = x.dim() ? x.shape()[dim] : 1;
  check_index_range("index_select", index, size, dim);
  Shape shape = x.shape();
  if (x.dim()) shape[dim] = index.numel();
  RawTensor out = RawTensor::empty(shape, x.dtype(), x.device());
  if (out.numel() > 0)
    backend_for(x.device()).index_select(x.contiguous(), dim, index.contiguous().reshape({index.numel()}), out);
  return out;
}

void index_add_(const RawTensor& dst, int64_t dim, const RawTensor& index, const RawTensor& src) {
  check_same_device("index_add_", dst, src);
  check_same_device("index_add_", dst, index);
  check_same_dtype("index_add_", dst, src);
  check_int64_index("index_add_", index);
  dim = wrap_dim(dim, dst.dim(), "index_add_");
  check_index_range("index_add_", index, dst.dim() ? dst.shape()[dim] : 1, dim);
  TG_CHECK(dst.is_contiguous(), Error, "index_add_: destination must be contiguous");
  check_no_partial_overlap("index_add_", dst, src, /*same_view_ok=*/false);
  check_no_partial_overlap("index_add_", dst, index, false);
  if (src.numel() > 0)
    backend_for(dst.device()).index_add(dst, dim, index.contiguous().reshape({index.numel()}), src.contiguous());
  dst.storage()->bump_version();
}

namespace {
void check_gather_shapes(const char* op, const RawTensor& x, int64_t dim, const RawTensor& index) {
  TG_CHECK(index.dim() == x.dim(), ShapeError, op, ": index tensor must have the same number of dimensions as ",
           "input tensor (", shape_str(index.shape()), " vs ", shape_str(x.shape()), ")");
  for (int64_t d = 0; d < x.dim(); ++d)
    TG_CHECK(d == dim || index.shape()[d] <= x.shape()[d], ShapeError, op, ": size of index ",
             shape_str(index.shape()), " does not fit input ", shape_str(x.shape()), " at dimension ", d);
}
}  // namespace

RawTensor gather(const RawTensor& x, int64_t dim, const RawTensor& index) {
  check_defined("gather", x);
  check_same_device("gather", x, index);
  check_int64_index("gather", index);
  dim = wrap_dim(dim, x.dim(), "gather");
  check_gather_shapes("gather", x, dim, index);
  check_index_range("gather", index, x.dim() ? x.shape()[dim] : 1, dim);
  RawTensor out = RawTensor::empty(index.shape(), x.dtype(), x.device());
  if (out.numel() > 0) backend_for(x.device()).gather(x, dim, index, out);
  return out;
}

void scatter_add_(const RawTensor& dst, int64_t dim, const RawTensor& index, const RawTensor& src) {
  check_same_device("scatter_add_", dst, src);
  check_same_device("scatter_add_", dst, index);
  check_same_dtype("scatter_add_", dst, src);
  check_int64_index("scatter_add_", index);
  dim = wrap_dim(dim, dst.dim(), "scatter_add_");
  check_gather_shapes("scatter_add_", dst, dim, index);
  TG_CHECK(src.shape() == index.shape(), ShapeError, "scatter_add_: src shape ", shape_str(src.shape()),
           " must match index shape ", shape_str(index.shape()));
  check_index_range("scatter_add_", index, dst.dim() ? dst.shape()[dim] : 1, dim);
  check_no_internal_overlap("scatter_add_", dst);
  check_no_partial_overlap("scatter_add_", dst, src, /*same_view_ok=*/false);
  check_no_partial_overlap("scatter_add_", dst, index, false);
  if (src.numel() > 0) backend_for(dst.device()).scatter_add(dst, dim, index, src);
  dst.storage()->bump_version();
}

}  // namespace prim
}  // namespace tg
