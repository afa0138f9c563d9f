// ops/index.cpp: index_select, gather and embedding with their scatter-add backwards, and the
// scatter-adds themselves as ops (scatter_add, index_add) whose gradients gather. The index is an int64
// Tensor and gets no gradient. Kernels: Backend::index_select/index_add/gather/scatter_add.
#include <algorithm>
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

namespace {
/// src's first index.size(d) entries along every d: what scatter_add reads (all of src when the shapes agree).
template <class T>
T read_part(const T& src, const Shape& index_shape) {
  T part = src;
  for (std::size_t d = 0; d < index_shape.size(); ++d)
    if (part.shape()[d] != index_shape[d]) part = part.narrow(static_cast<int64_t>(d), 0, index_shape[d]);
  return part;
}
}  // namespace

// out = x; out[index[i][j]][j] += src[i][j] along dim 0 (likewise for other dims)
Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  const char* op = "scatter_add";
  TG_CHECK(x.defined() && index.defined() && src.defined(), Error, op, ": x, index and src must be defined");
  dim = wrap_dim(dim, std::max<int64_t>(x.dim(), 1), op);
  TG_CHECK(index.dtype() == kInt64, DTypeError, op, "(): Expected dtype int64 for index, got ", dtype_name(index.dtype()));
  TG_CHECK(x.dtype() == src.dtype(), DTypeError, op, "(): Expected self.dtype to be equal to src.dtype (",
           dtype_name(x.dtype()), " vs ", dtype_name(src.dtype()), ")");
  prim::check_floating(op, x.data());   // the backends' scatter-adds are floating (PyTorch also adds integers)
  TG_CHECK(index.dim() == x.dim() && src.dim() == x.dim(), ShapeError, op,
           "(): Index tensor must have the same number of dimensions as self and src tensors (self ",
           shape_str(x.shape()), ", index ", shape_str(index.shape()), ", src ", shape_str(src.shape()), ")");
  bool fits = true;
  for (int64_t d = 0; d < x.dim(); ++d)
    fits = fits && index.size(d) <= src.size(d) && (d == dim || index.size(d) <= x.size(d));
  TG_CHECK(fits, ShapeError, op, "(): Expected index ", shape_str(index.shape()), " to be smaller than self ",
           shape_str(x.shape()), " apart from dimension ", dim, " and to be smaller size than src ",
           shape_str(src.shape()));
  RawTensor out = x.data().contiguous().clone();
  if (index.numel() > 0) prim::scatter_add_(out, dim, index.data(), read_part(src.data(), index.shape()).contiguous());
  const RawTensor idx = index.data();
  const Shape src_shape = src.shape();
  return record(op, out, {x, src}, [idx, dim, src_shape](const auto& grad, auto& g) {
    if (g.need(0)) g.set(0, grad);   // d out / d x = 1
    if (g.need(1)) {                 // d out[index[i]] / d src[i] = 1: the gradient gathered back
      if constexpr (first_order_v<decltype(g)>) {
        RawTensor ds = prim::full(src_shape, 0.0, grad.dtype(), grad.device());
        if (idx.numel() > 0) prim::copy_(read_part(ds, idx.shape()), prim::gather(grad.contiguous(), dim, idx));
        g.set(1, ds);
      } else {
        const Tensor part = gather(grad, dim, Tensor(idx));
        std::vector<int64_t> widths;   // pad's order: the last dim's (before, after) first
        for (std::size_t d = src_shape.size(); d-- > 0;) {
          widths.push_back(0);
          widths.push_back(src_shape[d] - idx.shape()[d]);
        }
        g.set(1, part.shape() == src_shape ? part : pad(part, widths));
      }
    }
  });
}

// out = x; out.index_select(dim, index) += alpha src
Tensor index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src, double alpha) {
  const char* op = "index_add";
  TG_CHECK(x.defined() && index.defined() && src.defined(), Error, op, ": x, index and src must be defined");
  TG_CHECK(x.dim() >= 1, ShapeError, op, "(): expected self of at least 1 dim, got a 0-d tensor");
  dim = wrap_dim(dim, x.dim(), op);
  TG_CHECK(index.dtype() == kInt64, DTypeError, op, "(): Expected dtype int64 for index, got ", dtype_name(index.dtype()));
  TG_CHECK(index.dim() <= 1, IndexError, op, "(): Index is supposed to be a vector, got ", index.dim(), "-D index");
  TG_CHECK(x.dtype() == src.dtype(), DTypeError, op, "(): self (", dtype_name(x.dtype()), ") and source (",
           dtype_name(src.dtype()), ") must have the same scalar type");
  prim::check_floating(op, x.data());   // as scatter_add
  TG_CHECK(src.dim() == x.dim() && src.size(dim) == index.numel(), ShapeError, op, "(): Number of indices (",
           index.numel(), ") should be equal to source.size(dim): (", src.dim() == x.dim() ? src.size(dim) : -1,
           "), for dim: ", dim);
  Shape want = x.shape();
  want[static_cast<std::size_t>(dim)] = index.numel();
  TG_CHECK(src.shape() == want, ShapeError, op, "(): source ", shape_str(src.shape()), " should have self's shape ",
           shape_str(x.shape()), " off dim ", dim);
  detail::check_alpha(op, x.dtype(), alpha);
  const RawTensor idx = index.data().reshape({index.numel()});
  RawTensor out = x.data().contiguous().clone();
  const RawTensor s = alpha == 1.0 ? src.data() : prim::mul(src.data(), prim::scalar_like(alpha, src.data()));
  if (idx.numel() > 0) prim::index_add_(out, dim, idx, s.contiguous());
  return record(op, out, {x, src}, [idx, dim, alpha](const auto& grad, auto& g) {
    if (g.need(0)) g.set(0, grad);
    if (g.need(1)) {   // d out[index[k]] / d src[k] = alpha
      if constexpr (first_order_v<decltype(g)>) {
        const RawTensor picked = prim::index_select(grad, dim, idx);
        g.set(1, alpha == 1.0 ? picked : prim::mul(picked, prim::scalar_like(alpha, picked)));
      } else {
        const Tensor picked = index_select(grad, dim, Tensor(idx));
        g.set(1, alpha == 1.0 ? picked : picked * alpha);
      }
    }
  });
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
