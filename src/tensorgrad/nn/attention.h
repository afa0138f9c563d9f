/// \file
/// nn/attention.h: MultiheadAttention with PyTorch's parameter names, init and forward
/// (torch.nn.MultiheadAttention), so a PyTorch state_dict of the same module loads. Its attention is
/// scaled_dot_product_attention (ops/attention.cpp) when no weights are asked for, the same math
/// spelled out when they are. PyTorch's options are all here: kdim/vdim (separate projection
/// weights), add_bias_kv, add_zero_attn, batch_first, and the is_causal hint of forward.
#pragma once
#include <memory>
#include <string>
#include <tuple>

#include "tensorgrad/nn/layers.h"
#include "tensorgrad/nn/module.h"
#include "tensorgrad/ops/ops.h"

namespace tg {
namespace nn {

/// Options of MultiheadAttention, PyTorch style: MultiheadAttentionOptions().dropout(0.1).batch_first(true).
struct MultiheadAttentionOptions {
  /// Dropout probability on the attention weights, in training only (default 0).
  MultiheadAttentionOptions& dropout(double p) { dropout_ = p; return *this; }
  /// Whether the in- and out-projections have biases (default true).
  MultiheadAttentionOptions& bias(bool b) { bias_ = b; return *this; }
  /// Inputs and output as (N, L, E) instead of (L, N, E) (default false, as PyTorch).
  MultiheadAttentionOptions& batch_first(bool b) { batch_first_ = b; return *this; }
  /// Learned biases bias_k and bias_v (1, 1, embed_dim) appended to the keys and values as one more
  /// position, which every query may attend (default false).
  MultiheadAttentionOptions& add_bias_kv(bool b) { add_bias_kv_ = b; return *this; }
  /// A zero key and value appended to every head after the projections, which every query may
  /// attend (default false).
  MultiheadAttentionOptions& add_zero_attn(bool b) { add_zero_attn_ = b; return *this; }
  /// The feature size of key (default 0: embed_dim). Different from embed_dim, the projections are
  /// the separate q_proj_weight, k_proj_weight and v_proj_weight instead of in_proj_weight.
  MultiheadAttentionOptions& kdim(int64_t d) { kdim_ = d; return *this; }
  /// The feature size of value (default 0: embed_dim); see kdim().
  MultiheadAttentionOptions& vdim(int64_t d) { vdim_ = d; return *this; }
  double dropout_ = 0;          ///< See dropout().
  bool bias_ = true;            ///< See bias().
  bool batch_first_ = false;    ///< See batch_first().
  bool add_bias_kv_ = false;    ///< See add_bias_kv().
  bool add_zero_attn_ = false;  ///< See add_zero_attn().
  int64_t kdim_ = 0;            ///< See kdim().
  int64_t vdim_ = 0;            ///< See vdim().
};

/// Attention over num_heads heads of embed_dim / num_heads each (torch.nn.MultiheadAttention):
/// query, key and value are projected by the rows of in_proj_weight (3 embed_dim, embed_dim) and
/// in_proj_bias (or, when kdim or vdim differ from embed_dim, by q_proj_weight (embed_dim,
/// embed_dim), k_proj_weight (embed_dim, kdim) and v_proj_weight (embed_dim, vdim) with the same
/// bias), split into heads, attended with scale 1 / sqrt(head_dim), merged and projected by out_proj.
/// Init as PyTorch's _reset_parameters: the projection weights xavier_uniform_, in_proj_bias and
/// out_proj.bias zeros, bias_k and bias_v xavier_normal_, out_proj.weight Linear's default. Call as
/// `auto [out, w] = mha(q, k, v);`.
class MultiheadAttention : public Cloneable<MultiheadAttention> {
 public:
  /// float32 parameters on the CPU from the manual_seed stream. ShapeError unless embed_dim and
  /// num_heads are positive, embed_dim is divisible by num_heads and kdim, vdim are not negative;
  /// Error unless 0 <= dropout <= 1.
  MultiheadAttention(int64_t embed_dim, int64_t num_heads, const MultiheadAttentionOptions& options = {});
  using Module::forward;
  /// query (L, N, E), key (S, N, kdim) and value (S, N, vdim) ((N, L, E) and (N, S, .) with
  /// batch_first; (L, E) and (S, .) unbatched) -> attn_output of query's layout and, when
  /// need_weights, the attention weights (N, L, S') averaged over the heads (average_attn_weights) or
  /// (N, num_heads, L, S') (undefined otherwise), S' = S plus one for add_bias_kv and one for
  /// add_zero_attn (those positions are never masked). key_padding_mask (N, S): true (bool) or -inf
  /// (float) for keys to ignore. attn_mask (L, S) or (N num_heads, L, S): true (bool) forbids a
  /// position, a float mask is added to the scores. is_causal is PyTorch's hint that attn_mask is the
  /// causal mask: it needs attn_mask (Error otherwise), and without key_padding_mask and need_weights
  /// the mask is dropped for scaled_dot_product_attention's is_causal (the top-left triangle over (L,
  /// S')), else attn_mask is applied as given. The dropout applies only in training. A query row with
  /// every key masked gives, as PyTorch's general path: without need_weights, a zero attention row
  /// (the output is out_proj's bias there) and zero gradients through it; with need_weights, NaN
  /// weights and output (softmax of -inf). PyTorch's inference fast path (eval, no grad,
  /// self-attention, batch_first, bool masks) gives NaN there instead; this module has no fast path.
  /// ShapeError / DTypeError in PyTorch's words for inputs of the wrong shape or dtype.
  std::tuple<Tensor, Tensor> forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                         const Tensor& key_padding_mask = Tensor(), bool need_weights = true,
                                         const Tensor& attn_mask = Tensor(), bool average_attn_weights = true,
                                         bool is_causal = false);
  /// "MultiheadAttention" (its child out_proj prints below it, as in PyTorch).
  std::string name() const override { return "MultiheadAttention"; }
  /// A MultiheadAttention of the same configuration (for clone()).
  std::unique_ptr<Module> new_instance() const override {
    return std::make_unique<MultiheadAttention>(embed_dim_, num_heads_, options_);
  }
  /// (3 embed_dim, embed_dim): the query, key and value projections stacked; undefined when kdim or
  /// vdim differ from embed_dim
  Tensor in_proj_weight;
  Tensor q_proj_weight;    ///< (embed_dim, embed_dim) when kdim or vdim differ from embed_dim, else undefined
  Tensor k_proj_weight;    ///< (embed_dim, kdim) when kdim or vdim differ from embed_dim, else undefined
  Tensor v_proj_weight;    ///< (embed_dim, vdim) when kdim or vdim differ from embed_dim, else undefined
  Tensor in_proj_bias;     ///< (3 embed_dim); undefined without bias
  Tensor bias_k;           ///< (1, 1, embed_dim) with add_bias_kv, else undefined
  Tensor bias_v;           ///< (1, 1, embed_dim) with add_bias_kv, else undefined
  Linear out_proj;           ///< embed_dim -> embed_dim, registered as "out_proj"
 private:
  int64_t embed_dim_, num_heads_, kdim_, vdim_;
  MultiheadAttentionOptions options_;
};

}  // namespace nn
}  // namespace tg
