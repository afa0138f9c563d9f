// ops/index.cpp: index_select and gather with their scatter-add backwards. The index is an int64
// Variable and gets no gradient. Kernels: Backend::index_select/index_add/gather/scatter_add.
#include "tensorgrad/engine/prim.h"
#include "tensorgrad/ops/ops.h"

namespace tg {

// x (..., D, ...), index (K) -> out (..., K, ...)
Variable index_select(const Variable& x, int64_t dim, const Variable& index) {
  Tensor out = prim::index_select(x.data(), dim, index.data());
  const Shape in_shape = x.shape();
  dim = wrap_dim(dim, x.dim(), "index_select");
  SavedTensor idx = any_requires_grad({x}) ? SavedTensor(index) : SavedTensor();
  return record("index_select", out, {x}, [idx, dim, in_shape](const Tensor& grad, Grads& g) {
    Tensor dx = prim::full(in_shape, 0.0, grad.dtype(), grad.device());
    prim::index_add_(dx, dim, idx.get(), grad);                           // dx[index[k]] += grad[k]
    g.set(0, dx);
  });
}

// out[..i..] = x[..index[..i..]..] along dim; index has x's rank
Variable gather(const Variable& x, int64_t dim, const Variable& index) {
  Tensor out = prim::gather(x.data(), dim, index.data());
  const Shape in_shape = x.shape();
  dim = wrap_dim(dim, x.dim(), "gather");
  SavedTensor idx = any_requires_grad({x}) ? SavedTensor(index) : SavedTensor();
  return record("gather", out, {x}, [idx, dim, in_shape](const Tensor& grad, Grads& g) {
    Tensor dx = prim::full(in_shape, 0.0, grad.dtype(), grad.device());
    prim::scatter_add_(dx, dim, idx.get(), grad.contiguous());            // dx[index[i]] += grad[i]
    g.set(0, dx);
  });
}

}  // namespace tg
