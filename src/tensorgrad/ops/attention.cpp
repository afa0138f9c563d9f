// ops/attention.cpp: scaled_dot_product_attention, composed of differentiable ops (matmul, where,
// softmax, dropout), so it needs no backward of its own and both backends run it through their
// existing kernels; no fused (flash) kernel. The module built on it, nn::MultiheadAttention, is in
// nn/attention.h.
#include <cmath>
#include <limits>
#include <string>

#include "tensorgrad/engine/prim.h"
#include "tensorgrad/ops/ops.h"

namespace tg {

namespace {

/// The leading dims of x, all but the last two.
Shape batch_dims(const Variable& x) { return Shape(x.shape().begin(), x.shape().end() - 2); }

/// batch followed by rows and cols.
Shape with_matrix(Shape batch, int64_t rows, int64_t cols) {
  batch.push_back(rows);
  batch.push_back(cols);
  return batch;
}

/// x (b..., r, c) broadcast to (batch..., r, c) and merged into one batch dim: (B, r, c). A view when
/// x already has the batch dims and is contiguous, else a copy.
Variable as_batched(const Variable& x, const Shape& batch, int64_t B) {
  const int64_t r = x.size(-2), c = x.size(-1);
  return reshape(expand(x, with_matrix(batch, r, c)), {B, r, c});
}

}  // namespace

// query (..., L, E), key (..., S, E), value (..., S, Ev) -> (..., L, Ev)
Variable scaled_dot_product_attention(const Variable& query, const Variable& key, const Variable& value,
                                      const Variable& attn_mask, double dropout_p, bool is_causal,
                                      std::optional<double> scale) {
  const char* op = "scaled_dot_product_attention";
  TG_CHECK(query.defined() && key.defined() && value.defined(), Error, op, ": undefined query, key or value");
  TG_CHECK(query.dim() >= 2 && key.dim() >= 2 && value.dim() >= 2, ShapeError, op,
           ": expected query, key and value of at least 2 dims (..., L, E), got query ", shape_str(query.shape()),
           ", key ", shape_str(key.shape()), " and value ", shape_str(value.shape()));
  TG_CHECK(query.dtype() == key.dtype() && query.dtype() == value.dtype(), DTypeError, op,
           ": Expected query, key, and value to have the same dtype, but got query.dtype: ", dtype_name(query.dtype()),
           " key.dtype: ", dtype_name(key.dtype()), " and value.dtype: ", dtype_name(value.dtype()), " instead.");
  prim::check_floating(op, query.data());
  prim::check_same_device(op, query.data(), key.data());
  prim::check_same_device(op, query.data(), value.data());
  const int64_t L = query.size(-2), E = query.size(-1), S = key.size(-2), Ev = value.size(-1);
  TG_CHECK(key.size(-1) == E && value.size(-2) == S, ShapeError, op,
           ": expected key (..., S, E) and value (..., S, Ev) for query (..., L, E), got query ",
           shape_str(query.shape()), ", key ", shape_str(key.shape()), " and value ", shape_str(value.shape()));
  TG_CHECK(dropout_p >= 0 && dropout_p <= 1, Error, op, ": dropout probability has to be between 0 and 1, but got ",
           dropout_p);
  TG_CHECK(!(is_causal && attn_mask.defined()), Error, op, ": Explicit attn_mask should not be set when is_causal=True");
  const Shape batch = broadcast_shapes(broadcast_shapes(batch_dims(query), batch_dims(key), op), batch_dims(value), op);
  const Shape scores_shape = with_matrix(batch, L, S);
  if (attn_mask.defined()) {
    TG_CHECK(attn_mask.dtype() == kBool || attn_mask.dtype() == query.dtype(), DTypeError, op,
             ": Expected attn_mask dtype to be bool or float or to match query dtype, but got attn_mask.dtype: ",
             dtype_name(attn_mask.dtype()), " and  query.dtype: ", dtype_name(query.dtype()), " instead.");
    prim::check_same_device(op, query.data(), attn_mask.data());
    // each trailing dim of the mask is 1 or the scores' size: it broadcasts without enlarging them
    const int64_t md = attn_mask.dim(), sd = static_cast<int64_t>(scores_shape.size());
    bool fits = md <= sd;
    for (int64_t i = 1; fits && i <= md; ++i) {
      const int64_t m = attn_mask.shape()[md - i];
      fits = m == 1 || m == scores_shape[sd - i];
    }
    TG_CHECK(fits, ShapeError, op, ": attn_mask of shape ", shape_str(attn_mask.shape()),
             " does not broadcast to the attention scores' shape ", shape_str(scores_shape));
  }
  int64_t B = 1;
  for (int64_t s : batch) B *= s;
  const double factor = scale ? *scale : 1.0 / std::sqrt(static_cast<double>(E));
  const Variable q = as_batched(query, batch, B), k = as_batched(key, batch, B), v = as_batched(value, batch, B);
  // scores (B, L, S) = (q scale) k^T, viewed with the batch dims so that the mask broadcasts
  Variable scores = reshape(matmul(q * factor, transpose(k, 1, 2)), scores_shape);
  const Variable minus_inf = scalar_like(-std::numeric_limits<double>::infinity(), scores);
  if (is_causal) {
    // keep key j for query i when j <= i: col - row <= 0 over (L, S)
    const Tensor row = prim::arange(L, kInt64, query.device()).reshape({L, 1});
    const Tensor col = prim::arange(S, kInt64, query.device());
    const Tensor keep = prim::binary(BinaryOp::Le, prim::sub(col, row), prim::full({}, 0.0, kInt64, query.device()), op);
    scores = where(Variable(keep), scores, minus_inf);
  } else if (attn_mask.defined()) {
    scores = attn_mask.dtype() == kBool ? where(attn_mask, scores, minus_inf) : scores + attn_mask;
  }
  Variable attn = softmax(scores, -1);
  if (dropout_p > 0) attn = dropout(attn, dropout_p, true);
  // out (B, L, Ev) = attn v, then the batch dims back
  return reshape(matmul(reshape(attn, {B, L, S}), v), with_matrix(batch, L, Ev));
}

}  // namespace tg
