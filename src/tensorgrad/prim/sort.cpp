// prim/sort.cpp: sort, topk and kthvalue over Backend::argsort (Note [Sort order]).
#include "tensorgrad/prim/prim.h"

#include <algorithm>
#include <limits>

#include "tensorgrad/core/error.h"
#include "tensorgrad/prim/internal.h"

namespace tg {
namespace prim {

// Note [Sort order]
// ~~~~~~~~~~~~~~~~~
// sort, topk and kthvalue order rows as torch.sort(stable=True): a stable sort, so equal values keep
// their original order (ascending and descending alike, ties go to the lower index first); NaN is
// larger than every number (last ascending, first descending); -0 and +0 are equal. The backends only
// produce the index permutation (Backend::argsort); the values are x gathered at it, so they are x's
// elements bit for bit. The CPU runs std::stable_sort per row with that comparison; CUDA runs CUB's
// segmented radix sort (stable) on keys where every NaN has been made the positive quiet NaN
// (backend/cuda/sort.cu).
Sorted sort(const RawTensor& x, int64_t dim, bool descending) {
  check_defined("sort", x);
  if (x.dim() == 0) {   // a 0-d x is its own sort
    wrap_dim(dim, 1, "sort");
    return {x.clone(), full({}, 0, kInt64, x.device())};
  }
  dim = wrap_dim(dim, x.dim(), "sort");
  const int64_t last = x.dim() - 1;
  TG_CHECK(x.device().is_cpu() || x.numel() <= std::numeric_limits<int32_t>::max(), ShapeError,
           "sort: a CUDA tensor of at most 2^31-1 elements, got ", x.numel());   // CUB's item count is an int
  const RawTensor xt = x.transpose(dim, last).contiguous();   // rows along the sorted dim
  RawTensor idx = RawTensor::empty(xt.shape(), kInt64, x.device());
  RawTensor vals = RawTensor::empty(xt.shape(), x.dtype(), x.device());
  if (xt.numel() > 0) {
    Backend& be = backend_for(x.device());
    be.argsort(xt, descending, idx);
    be.gather(xt, last, idx, vals);   // the indices are in range by construction: no host check
  }
  return {vals.transpose(dim, last).contiguous(), idx.transpose(dim, last).contiguous()};
}

Sorted topk(const RawTensor& x, int64_t k, int64_t dim, bool largest) {
  check_defined("topk", x);
  const int64_t d = wrap_dim(dim, std::max<int64_t>(x.dim(), 1), "topk");
  const int64_t size = x.dim() ? x.shape()[d] : 1;
  TG_CHECK(k >= 0 && k <= size, IndexError, "topk: k (", k, ") out of range for dimension ", d, " of size ", size,
           " (selected index k out of range)");
  Sorted s = sort(x, d, largest);
  if (x.dim() == 0) return s;
  return {s.values.narrow(d, 0, k).contiguous(), s.indices.narrow(d, 0, k).contiguous()};
}

Sorted kthvalue(const RawTensor& x, int64_t k, int64_t dim, bool keepdim) {
  check_defined("kthvalue", x);
  const int64_t d = wrap_dim(dim, std::max<int64_t>(x.dim(), 1), "kthvalue");
  const int64_t size = x.dim() ? x.shape()[d] : 1;
  TG_CHECK(k >= 1 && k <= size, IndexError, "kthvalue: k (", k, ") out of range for dimension ", d, " of size ",
           size, " (selected number k out of range)");
  Sorted s = sort(x, d, false);
  if (x.dim() == 0) return s;
  RawTensor v = s.values.narrow(d, k - 1, 1), i = s.indices.narrow(d, k - 1, 1);
  if (!keepdim) v = v.squeeze(d), i = i.squeeze(d);
  return {v.contiguous(), i.contiguous()};
}

}  // namespace prim
}  // namespace tg
