// nn/attention.cpp: MultiheadAttention's constructor (PyTorch's _reset_parameters) and forward
// (PyTorch's multi_head_attention_forward, computed batch-first). The attention itself is
// scaled_dot_product_attention in ops/attention.cpp.
#include "tensorgrad/nn/attention.h"

#include <cmath>
#include <limits>

#include "tensorgrad/engine/prim.h"
#include "tensorgrad/nn/init.h"

namespace tg {
namespace nn {

namespace {

/// embed_dim after the checks that must precede building out_proj.
int64_t checked_embed_dim(int64_t embed_dim, int64_t num_heads, double dropout) {
  TG_CHECK(embed_dim > 0 && num_heads > 0, ShapeError, "MultiheadAttention: embed_dim and num_heads must be positive, got ",
           embed_dim, " and ", num_heads);
  TG_CHECK(embed_dim % num_heads == 0, ShapeError, "MultiheadAttention: embed_dim must be divisible by num_heads (",
           embed_dim, " and ", num_heads, ")");
  TG_CHECK(dropout >= 0 && dropout <= 1, Error, "MultiheadAttention: dropout probability has to be between 0 and 1, but got ",
           dropout);
  return embed_dim;
}

/// A mask as an additive float mask of dtype: bool true -> -inf, false -> 0; a float mask as it is.
Variable additive(const Variable& mask, DType dtype, const char* what) {
  TG_CHECK(mask.dtype() == kBool || mask.dtype() == dtype, DTypeError, "MultiheadAttention: only bool and floating types of ",
           what, " are supported (the floating one of the query's dtype ", dtype_name(dtype), "), got ",
           dtype_name(mask.dtype()));
  if (mask.dtype() != kBool) return mask;
  const Variable zeros = Variable(prim::full(mask.shape(), 0.0, dtype, mask.device()));
  return masked_fill(zeros, mask, -std::numeric_limits<double>::infinity());
}

}  // namespace

MultiheadAttention::MultiheadAttention(int64_t embed_dim, int64_t num_heads, const MultiheadAttentionOptions& options)
    : out_proj(checked_embed_dim(embed_dim, num_heads, options.dropout_), embed_dim, options.bias_),
      embed_dim_(embed_dim),
      num_heads_(num_heads),
      options_(options) {
  // PyTorch's _reset_parameters: xavier_uniform_ on the stacked projections, zero biases; out_proj's
  // weight keeps Linear's kaiming_uniform_(a = sqrt(5)).
  in_proj_weight = Variable(prim::empty({3 * embed_dim, embed_dim}));
  init::xavier_uniform_(in_proj_weight);
  register_parameter("in_proj_weight", in_proj_weight);
  if (options.bias_) {
    in_proj_bias = Variable(prim::full({3 * embed_dim}, 0.0));
    register_parameter("in_proj_bias", in_proj_bias);
    init::zeros_(out_proj.bias);
  }
  register_module("out_proj", out_proj);
}

std::tuple<Variable, Variable> MultiheadAttention::forward(const Variable& query, const Variable& key,
                                                           const Variable& value, const Variable& key_padding_mask,
                                                           bool need_weights, const Variable& attn_mask,
                                                           bool average_attn_weights) {
  TG_CHECK(query.defined() && key.defined() && value.defined(), Error, "MultiheadAttention: undefined query, key or value");
  const int64_t E = embed_dim_, H = num_heads_, hd = E / H;
  TG_CHECK(query.dim() == 2 || query.dim() == 3, ShapeError,
           "MultiheadAttention: query should be unbatched 2D or batched 3D tensor but received ", query.dim(),
           "-D query tensor of size ", shape_str(query.shape()));
  const bool batched = query.dim() == 3;
  TG_CHECK(key.dim() == query.dim() && value.dim() == query.dim(), ShapeError, "MultiheadAttention: For ",
           batched ? "batched (3-D)" : "unbatched (2-D)", " `query`, expected `key` and `value` to be ",
           batched ? "3-D" : "2-D", " but found ", key.dim(), "-D and ", value.dim(), "-D tensors respectively");
  TG_CHECK(query.size(-1) == E, ShapeError, "MultiheadAttention: was expecting embedding dimension of ", E,
           ", but got ", query.size(-1));
  TG_CHECK(key.shape() == value.shape(), ShapeError, "MultiheadAttention: key shape ", shape_str(key.shape()),
           " does not match value shape ", shape_str(value.shape()));
  // Everything below is batch-first: (N, L, E). An unbatched input is a batch of one.
  auto batch_first = [&](const Variable& x) {
    if (!batched) return unsqueeze(x, 0);
    return options_.batch_first_ ? x : transpose(x, 0, 1);
  };
  const Variable q_in = batch_first(query), k_in = batch_first(key), v_in = batch_first(value);
  const int64_t N = q_in.size(0), L = q_in.size(1), S = k_in.size(1);
  TG_CHECK(k_in.size(0) == N && k_in.size(2) == E, ShapeError, "MultiheadAttention: key of size ", shape_str(key.shape()),
           " does not match query of size ", shape_str(query.shape()), " (batch and embedding dims)");
  // The additive mask, broadcastable to (N, H, L, S), or undefined.
  Variable mask;
  if (attn_mask.defined()) {
    Variable m = additive(attn_mask, query.dtype(), "attn_mask");
    if (m.dim() == 2) {
      TG_CHECK(m.shape() == Shape({L, S}), ShapeError, "MultiheadAttention: The shape of the 2D attn_mask is ",
               shape_str(m.shape()), ", but should be ", shape_str(Shape{L, S}), ".");
    } else {
      TG_CHECK(m.dim() == 3 && m.shape() == Shape({N * H, L, S}), ShapeError, "MultiheadAttention: The shape of the ",
               m.dim(), "D attn_mask is ", shape_str(m.shape()), ", but should be ", shape_str(Shape{N * H, L, S}), ".");
      m = reshape(m, {N, H, L, S});
    }
    mask = m;
  }
  if (key_padding_mask.defined()) {
    const Shape want = batched ? Shape{N, S} : Shape{S};
    TG_CHECK(key_padding_mask.shape() == want, ShapeError, "MultiheadAttention: expecting key_padding_mask shape of ",
             shape_str(want), ", but got ", shape_str(key_padding_mask.shape()));
    const Variable kpm = reshape(additive(key_padding_mask, query.dtype(), "key_padding_mask"), {N, 1, 1, S});
    mask = mask.defined() ? mask + kpm : kpm;
  }
  // Projections, split into heads: q (N, H, L, hd), k and v (N, H, S, hd).
  auto project = [&](const Variable& x, int64_t which, int64_t len) {
    const Variable w = narrow(in_proj_weight, 0, which * E, E);
    const Variable b = in_proj_bias.defined() ? narrow(in_proj_bias, 0, which * E, E) : Variable();
    return transpose(reshape(linear(x, w, b), {N, len, H, hd}), 1, 2);
  };
  const Variable q = project(q_in, 0, L), k = project(k_in, 1, S), v = project(v_in, 2, S);
  const double p = is_training() ? options_.dropout_ : 0.0;
  Variable heads, weights;   // heads (N, H, L, hd); weights (N, H, L, S) when asked for
  if (!need_weights) {
    heads = scaled_dot_product_attention(q, k, v, mask, p);
  } else {
    // the same math as scaled_dot_product_attention, keeping the softmax for the caller
    const Variable q3 = reshape(q, {N * H, L, hd}) * (1.0 / std::sqrt(static_cast<double>(hd)));
    Variable scores = reshape(matmul(q3, transpose(reshape(k, {N * H, S, hd}), 1, 2)), {N, H, L, S});
    if (mask.defined()) scores = scores + mask;
    weights = softmax(scores, -1);
    const Variable dropped = p > 0 ? dropout(weights, p, true) : weights;
    heads = reshape(matmul(reshape(dropped, {N * H, L, S}), reshape(v, {N * H, S, hd})), {N, H, L, hd});
    if (average_attn_weights) weights = mean(weights, 1);   // (N, L, S)
    if (!batched) weights = squeeze(weights, 0);
  }
  // (N, H, L, hd) -> (N, L, E), out_proj, then the caller's layout
  Variable out = out_proj(reshape(transpose(heads, 1, 2), {N, L, E}));
  if (!batched) out = squeeze(out, 0);
  else if (!options_.batch_first_) out = transpose(out, 0, 1);
  return {out, weights};
}

}  // namespace nn
}  // namespace tg
