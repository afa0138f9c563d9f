// ops/sort.cpp: sort, topk and kthvalue on Tensors. The permutation comes from prim::sort (the
// backends' argsort, Note [Sort order] in prim/sort.cpp); the gradient of the values is scattered
// back to the positions they were taken from, as gather's is. Indices get no gradient.
#include "tensorgrad/prim/prim.h"
#include "tensorgrad/ops/ops.h"
#include "tensorgrad/ops/rules.h"

namespace tg {

namespace {

/// values = x at idx along dim (idx: int64 of values' shape, x's rank); dx = 0 except dx[idx] = grad.
Tensor record_selection(const char* name, const Tensor& x, RawTensor values, const Tensor& idx, int64_t dim) {
  const Shape in_shape = x.shape();
  SavedTensor idx_saved = any_requires_grad({x}) ? SavedTensor(idx) : SavedTensor();   // in-place edits of it are caught
  return record(name, std::move(values), {x}, [idx_saved, dim, in_shape](const auto& grad, auto& g) {
    g.set(0, rules::gather_grad(grad, dim, idx_saved.get(), in_shape));   // dx[idx[i]] += grad[i]
  });
}

}  // namespace

SortResult sort(const Tensor& x, int64_t dim, bool descending) {
  if (x.dim() == 0) {   // a 0-d x is its own sort; reshape keeps the graph
    prim::sort(x.data(), dim, descending);   // validates dim
    SortResult r = sort(reshape(x, {1}), 0, descending);
    return {reshape(r.values, {}), Tensor(r.indices.data().reshape({}))};
  }
  prim::Sorted s = prim::sort(x.data(), dim, descending);
  const int64_t d = wrap_dim(dim, x.dim(), "sort");
  Tensor indices(s.indices);
  Tensor values = record_selection("sort", x, std::move(s.values), indices, d);
  return {values, indices};
}

SortResult topk(const Tensor& x, int64_t k, int64_t dim, bool largest, bool /*sorted*/) {
  if (x.dim() == 0) {
    prim::topk(x.data(), k, dim, largest);   // validates k and dim
    SortResult r = topk(reshape(x, {1}), k, 0, largest);
    return {reshape(r.values, {}), Tensor(r.indices.data().reshape({}))};
  }
  prim::Sorted s = prim::topk(x.data(), k, dim, largest);
  const int64_t d = wrap_dim(dim, x.dim(), "topk");
  Tensor indices(s.indices);
  Tensor values = record_selection("topk", x, std::move(s.values), indices, d);
  return {values, indices};
}

SortResult kthvalue(const Tensor& x, int64_t k, int64_t dim, bool keepdim) {
  if (x.dim() == 0) {
    prim::kthvalue(x.data(), k, dim, keepdim);   // validates k and dim
    SortResult r = kthvalue(reshape(x, {1}), k, 0, true);
    return {reshape(r.values, {}), Tensor(r.indices.data().reshape({}))};
  }
  prim::Sorted s = prim::kthvalue(x.data(), k, dim, /*keepdim=*/true);   // the gradient scatters with dim kept
  const int64_t d = wrap_dim(dim, x.dim(), "kthvalue");
  Tensor indices(s.indices);
  Tensor values = record_selection("kthvalue", x, std::move(s.values), indices, d);
  if (keepdim) return {values, indices};
  return {squeeze(values, d), Tensor(s.indices.squeeze(d))};
}

}  // namespace tg
