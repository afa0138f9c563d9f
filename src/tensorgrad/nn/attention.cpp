// nn/attention.cpp: MultiheadAttention's constructor (PyTorch's _reset_parameters) and forward
// (PyTorch's multi_head_attention_forward, computed batch-first). The attention itself is
// scaled_dot_product_attention in ops/attention.cpp.
#include "tensorgrad/nn/attention.h"

#include <cmath>
#include <limits>

#include "tensorgrad/prim/prim.h"
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
Tensor additive(const Tensor& mask, DType dtype, const char* what) {
  TG_CHECK(mask.dtype() == kBool || mask.dtype() == dtype, DTypeError, "MultiheadAttention: only bool and floating types of ",
           what, " are supported (the floating one of the query's dtype ", dtype_name(dtype), "), got ",
           dtype_name(mask.dtype()));
  if (mask.dtype() != kBool) return mask;
  const Tensor zeros = Tensor(prim::full(mask.shape(), 0.0, dtype, mask.device()));
  return masked_fill(zeros, mask, -std::numeric_limits<double>::infinity());
}

}  // namespace

MultiheadAttention::MultiheadAttention(int64_t embed_dim, int64_t num_heads, const MultiheadAttentionOptions& options)
    : out_proj(checked_embed_dim(embed_dim, num_heads, options.dropout_), embed_dim, options.bias_),
      embed_dim_(embed_dim),
      num_heads_(num_heads),
      kdim_(options.kdim_ > 0 ? options.kdim_ : embed_dim),
      vdim_(options.vdim_ > 0 ? options.vdim_ : embed_dim),
      options_(options) {
  TG_CHECK(options.kdim_ >= 0 && options.vdim_ >= 0, ShapeError,
           "MultiheadAttention: kdim and vdim must be positive (or 0 for embed_dim), got ", options.kdim_, " and ",
           options.vdim_);
  // PyTorch's __init__ and _reset_parameters: xavier_uniform_ on the projections (stacked when the
  // three share embed_dim, separate otherwise), zero biases, xavier_normal_ on bias_k and bias_v;
  // out_proj's weight keeps Linear's kaiming_uniform_(a = sqrt(5)). Registered in PyTorch's order.
  if (kdim_ == embed_dim && vdim_ == embed_dim) {
    in_proj_weight = Tensor(prim::empty({3 * embed_dim, embed_dim}));
    init::xavier_uniform_(in_proj_weight);
    register_parameter("in_proj_weight", in_proj_weight);
  } else {
    q_proj_weight = Tensor(prim::empty({embed_dim, embed_dim}));
    k_proj_weight = Tensor(prim::empty({embed_dim, kdim_}));
    v_proj_weight = Tensor(prim::empty({embed_dim, vdim_}));
    register_parameter("q_proj_weight", q_proj_weight);
    register_parameter("k_proj_weight", k_proj_weight);
    register_parameter("v_proj_weight", v_proj_weight);
  }
  if (options.bias_) {
    in_proj_bias = Tensor(prim::full({3 * embed_dim}, 0.0));
    register_parameter("in_proj_bias", in_proj_bias);
  }
  if (options.add_bias_kv_) {
    bias_k = Tensor(prim::empty({1, 1, embed_dim}));
    bias_v = Tensor(prim::empty({1, 1, embed_dim}));
    register_parameter("bias_k", bias_k);
    register_parameter("bias_v", bias_v);
  }
  register_module("out_proj", out_proj);
  // _reset_parameters, in its order (the draws of the manual_seed stream follow PyTorch's)
  if (!in_proj_weight.defined()) {
    init::xavier_uniform_(q_proj_weight);
    init::xavier_uniform_(k_proj_weight);
    init::xavier_uniform_(v_proj_weight);
  }
  if (options.bias_) init::zeros_(out_proj.bias);
  if (options.add_bias_kv_) {
    init::xavier_normal_(bias_k);
    init::xavier_normal_(bias_v);
  }
}

std::tuple<Tensor, Tensor> MultiheadAttention::forward(const Tensor& query, const Tensor& key,
                                                           const Tensor& value, const Tensor& key_padding_mask,
                                                           bool need_weights, const Tensor& attn_mask,
                                                           bool average_attn_weights, bool is_causal) {
  TG_CHECK(query.defined() && key.defined() && value.defined(), Error, "MultiheadAttention: undefined query, key or value");
  const int64_t E = embed_dim_, H = num_heads_, hd = E / H;
  const bool separate = !in_proj_weight.defined();
  TG_CHECK(query.dim() == 2 || query.dim() == 3, ShapeError,
           "MultiheadAttention: query should be unbatched 2D or batched 3D tensor but received ", query.dim(),
           "-D query tensor of size ", shape_str(query.shape()));
  const bool batched = query.dim() == 3;
  TG_CHECK(key.dim() == query.dim() && value.dim() == query.dim(), ShapeError, "MultiheadAttention: For ",
           batched ? "batched (3-D)" : "unbatched (2-D)", " `query`, expected `key` and `value` to be ",
           batched ? "3-D" : "2-D", " but found ", key.dim(), "-D and ", value.dim(), "-D tensors respectively");
  TG_CHECK(query.size(-1) == E, ShapeError, "MultiheadAttention: was expecting embedding dimension of ", E,
           ", but got ", query.size(-1));
  if (separate) {
    const Shape ks(key.shape().begin(), key.shape().end() - 1), vs(value.shape().begin(), value.shape().end() - 1);
    TG_CHECK(ks == vs, ShapeError, "MultiheadAttention: key's sequence and batch dims ", shape_str(ks),
             " do not match value's ", shape_str(vs));
  } else {
    TG_CHECK(key.shape() == value.shape(), ShapeError, "MultiheadAttention: key shape ", shape_str(key.shape()),
             " does not match value shape ", shape_str(value.shape()));
  }
  TG_CHECK(!is_causal || attn_mask.defined(), Error,
           "MultiheadAttention: Need attn_mask if specifying the is_causal hint. You may use the Transformer module "
           "method `generate_square_subsequent_mask` to create this mask.");
  // PyTorch's hint: without key_padding_mask and weights, the causal attn_mask is dropped for
  // scaled_dot_product_attention's is_causal; otherwise the mask is applied as given.
  const bool causal = is_causal && !key_padding_mask.defined() && !need_weights;
  // Everything below is batch-first: (N, L, E). An unbatched input is a batch of one.
  auto batch_first = [&](const Tensor& x) {
    if (!batched) return unsqueeze(x, 0);
    return options_.batch_first_ ? x : transpose(x, 0, 1);
  };
  const Tensor q_in = batch_first(query), k_in = batch_first(key), v_in = batch_first(value);
  const int64_t N = q_in.size(0), L = q_in.size(1), S = k_in.size(1);
  TG_CHECK(k_in.size(0) == N && k_in.size(2) == kdim_ && v_in.size(2) == vdim_, ShapeError, "MultiheadAttention: key of size ",
           shape_str(key.shape()), " and value of size ", shape_str(value.shape()), " do not match query of size ",
           shape_str(query.shape()), " (batch dims, and kdim ", kdim_, " and vdim ", vdim_, ")");
  // Keys appended after the inputs' S: bias_k/bias_v (add_bias_kv), then a zero key (add_zero_attn);
  // the masks get a 0 (attend) column for each.
  const int64_t extra = (bias_k.defined() ? 1 : 0) + (options_.add_zero_attn_ ? 1 : 0);
  auto pad_keys = [&](const Tensor& m) {   // m (..., S) additive -> (..., S + extra), zeros appended
    if (extra == 0) return m;
    Shape zs = m.shape();
    zs.back() = extra;
    return cat({m, Tensor(prim::full(zs, 0.0, m.dtype(), m.device()))}, -1);
  };
  // The additive mask, broadcastable to (N, H, L, S + extra), or undefined.
  Tensor mask;
  if (attn_mask.defined() && !causal) {
    Tensor m = additive(attn_mask, query.dtype(), "attn_mask");
    if (m.dim() == 2) {
      TG_CHECK(m.shape() == Shape({L, S}), ShapeError, "MultiheadAttention: The shape of the 2D attn_mask is ",
               shape_str(m.shape()), ", but should be ", shape_str(Shape{L, S}), ".");
    } else {
      TG_CHECK(m.dim() == 3 && m.shape() == Shape({N * H, L, S}), ShapeError, "MultiheadAttention: The shape of the ",
               m.dim(), "D attn_mask is ", shape_str(m.shape()), ", but should be ", shape_str(Shape{N * H, L, S}), ".");
      m = reshape(m, {N, H, L, S});
    }
    mask = pad_keys(m);
  }
  if (key_padding_mask.defined()) {
    const Shape want = batched ? Shape{N, S} : Shape{S};
    TG_CHECK(key_padding_mask.shape() == want, ShapeError, "MultiheadAttention: expecting key_padding_mask shape of ",
             shape_str(want), ", but got ", shape_str(key_padding_mask.shape()));
    const Tensor kpm =
        reshape(pad_keys(reshape(additive(key_padding_mask, query.dtype(), "key_padding_mask"), {N, S})), {N, 1, 1, S + extra});
    mask = mask.defined() ? mask + kpm : kpm;
  }
  // Projections (N, len, E): rows which E.. of in_proj_weight, or the separate weights
  auto project = [&](const Tensor& x, int64_t which) {
    const Tensor w = separate ? (which == 0 ? q_proj_weight : which == 1 ? k_proj_weight : v_proj_weight)
                                : narrow(in_proj_weight, 0, which * E, E);
    const Tensor b = in_proj_bias.defined() ? narrow(in_proj_bias, 0, which * E, E) : Tensor();
    return linear(x, w, b);
  };
  Tensor qp = project(q_in, 0), kp = project(k_in, 1), vp = project(v_in, 2);
  if (bias_k.defined()) {   // one more key and value: bias_k, bias_v for every batch entry
    kp = cat({kp, expand(bias_k, {N, 1, E})}, 1);
    vp = cat({vp, expand(bias_v, {N, 1, E})}, 1);
  }
  const int64_t Sk = kp.size(1);
  // split into heads: q (N, H, L, hd), k and v (N, H, Sk, hd)
  auto heads_of = [&](const Tensor& x, int64_t len) { return transpose(reshape(x, {N, len, H, hd}), 1, 2); };
  const Tensor q = heads_of(qp, L);
  Tensor k = heads_of(kp, Sk), v = heads_of(vp, Sk);
  if (options_.add_zero_attn_) {   // a zero key and value in every head
    const Tensor zeros = Tensor(prim::full({N, H, 1, hd}, 0.0, k.dtype(), k.device()));
    k = cat({k, zeros}, 2);
    v = cat({v, zeros}, 2);
  }
  const int64_t S2 = k.size(2);   // S + extra
  const double p = is_training() ? options_.dropout_ : 0.0;
  Tensor heads, weights;   // heads (N, H, L, hd); weights (N, H, L, S2) when asked for
  if (!need_weights) {
    heads = scaled_dot_product_attention(q, k, v, mask, p, causal);
  } else {
    // the same math as scaled_dot_product_attention, keeping the softmax for the caller
    const Tensor q3 = reshape(q, {N * H, L, hd}) * (1.0 / std::sqrt(static_cast<double>(hd)));
    Tensor scores = reshape(matmul(q3, transpose(reshape(k, {N * H, S2, hd}), 1, 2)), {N, H, L, S2});
    if (mask.defined()) scores = scores + mask;
    weights = softmax(scores, -1);
    const Tensor dropped = p > 0 ? dropout(weights, p, true) : weights;
    heads = reshape(matmul(reshape(dropped, {N * H, L, S2}), reshape(v, {N * H, S2, hd})), {N, H, L, hd});
    if (average_attn_weights) weights = mean(weights, 1);   // (N, L, S2)
    if (!batched) weights = squeeze(weights, 0);
  }
  // (N, H, L, hd) -> (N, L, E), out_proj, then the caller's layout
  Tensor out = out_proj(reshape(transpose(heads, 1, 2), {N, L, E}));
  if (!batched) out = squeeze(out, 0);
  else if (!options_.batch_first_) out = transpose(out, 0, 1);
  return {out, weights};
}

}  // namespace nn
}  // namespace tg
