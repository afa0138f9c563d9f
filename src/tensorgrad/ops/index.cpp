// ops/index.cpp: index_select, gather and embedding with their scatter-add backwards. The index is
// an int64 Tensor and gets no gradient. Kernels: Backend::index_select/index_add/gather/scatter_add.
#include <string>

#include "tensorgrad/prim/prim.h"
#include "tensorgrad/ops/ops.h"
#include "tensorgrad/ops/rules.h"

namespace tg {


// x (..., D, ...), index (K) -> out (..., K, ...)
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index) {
  RawTensor out = prim::index_select(x.data(), dim, index.data());
  const Shape in_shape = x.shape();
  dim = wrap_dim(dim, x.dim(), "index_select");
  SavedTensor idx = any_requires_grad({x}) ? SavedTensor(index) : SavedTensor();
  return record("index_select", out, {x}, [idx, dim, in_shape](const auto& grad, auto& g) {
    const RawTensor index = idx.get();
    g.set(0, rules::linear_backward("index_select_backward", grad, [&](const RawTensor& gr) {
            RawTensor dx = prim::full(in_shape, 0.0, gr.dtype(), gr.device());
            prim::index_add_(dx, dim, index, gr);                         // dx[index[k]] += grad[k]
            return dx;
          }, [index, dim](const Tensor& g2) { return index_select(g2, dim, Tensor(index)); }));
  });
}

// out[..i..] = x[..index[..i..]..] along dim; index has x's rank
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index) {
  RawTensor out = prim::gather(x.data(), dim, index.data());
  const Shape in_shape = x.shape();
  dim = wrap_dim(dim, x.dim(), "gather");
  SavedTensor idx = any_requires_grad({x}) ? SavedTensor(index) : SavedTensor();
  return record("gather", out, {x}, [idx, dim, in_shape](const auto& grad, auto& g) {
    g.set(0, rules::gather_grad(grad, dim, idx.get(), in_shape));         // dx[index[i]] += grad[i]
  });
}

RawTensor rules::gather_grad(const RawTensor& grad, int64_t dim, const RawTensor& index, const Shape& in_shape) {
  RawTensor dx = prim::full(in_shape, 0.0, grad.dtype(), grad.device());
  prim::scatter_add_(dx, dim, index, grad.contiguous());                  // dx[index[i]] += grad[i]
  return dx;
}

Tensor rules::gather_grad(const Tensor& grad, int64_t dim, const RawTensor& index, const Shape& in_shape) {
  return rules::linear_backward("gather_backward", grad,
                                [&](const RawTensor& gr) { return gather_grad(gr, dim, index, in_shape); },
                                [index, dim](const Tensor& g2) { return gather(g2, dim, Tensor(index)); });
}

// input (*) int64, weight (V, D) -> out (*, D): out[i] = weight[input[i]]
Tensor embedding(const Tensor& input, const Tensor& weight, std::optional<int64_t> padding_idx) {
  TG_CHECK(weight.defined() && weight.dim() == 2, ShapeError, "embedding: 'weight' must be 2-D, got weight of size ",
           weight.defined() ? shape_str(weight.shape()) : std::string("(undefined)"));
  TG_CHECK(input.defined() && input.dtype() == kInt64, DTypeError,
           "embedding: Expected tensor for argument #1 'indices' to have scalar type Long, but got ",
           input.defined() ? dtype_name(input.dtype()) : "an undefined tensor", " instead");
  TG_CHECK(!input.requires_grad(), AutogradError, "embedding: the indices get no gradient and must not require grad");
  const int64_t V = weight.shape()[0], D = weight.shape()[1];
  if (padding_idx) {
    TG_CHECK(*padding_idx >= -V && *padding_idx < V, IndexError, "embedding: Padding_idx must be within num_embeddings (",
             *padding_idx, " for ", V, " embeddings)");
    if (*padding_idx < 0) *padding_idx += V;
  }
  const Shape in_shape = input.shape();
  Shape out_shape = in_shape;
  out_shape.push_back(D);
  const RawTensor flat = input.data().reshape({input.numel()});
  RawTensor out;
  try {
    out = prim::index_select(weight.data(), 0, flat).view(out_shape);   // checks the range and the device
  } catch (const IndexError& e) {   // PyTorch's "index out of range in self", with the op's own details
    throw IndexError(std::string("embedding: index out of range in self (") + e.what() + ")");
  }
  SavedTensor idx = any_requires_grad({weight}) ? SavedTensor(input) : SavedTensor();
  const int64_t pad = padding_idx ? *padding_idx : -1;
  return record("embedding", out, {weight}, [idx, V, D, pad](const auto& grad, auto& g) {
    const RawTensor index = idx.get();
    const Shape out_shape = grad.shape();
    g.set(0, rules::linear_backward("embedding_backward", grad, [&](const RawTensor& gr) {
            RawTensor dw = prim::full({V, D}, 0.0, gr.dtype(), gr.device());
            prim::index_add_(dw, 0, index.reshape({index.numel()}), gr.reshape({index.numel(), D}));   // dw[input[i]] += grad[i]
            if (pad >= 0) prim::fill_(dw.select(0, pad), 0.0);                                          // dw[padding_idx] = 0
            return dw;
          }, [index, pad, out_shape](const Tensor& g2) {   // the rows gathered back; the padding row got none
            const Tensor rows = pad >= 0 ? where(Tensor(prim::binary(BinaryOp::Ne, index.reshape({index.numel(), 1}),
                                                                     prim::scalar_like(static_cast<double>(pad), index),
                                                                     "embedding")),
                                                 index_select(g2, 0, Tensor(index.reshape({index.numel()}))),
                                                 scalar_like(0.0, g2))
                                         : index_select(g2, 0, Tensor(index.reshape({index.numel()})));
            return rows.reshape(out_shape);
          }));
  });
}

}  // namespace tg
