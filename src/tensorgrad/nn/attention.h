/// \file
/// nn/attention.h: MultiheadAttention with PyTorch's parameter names, init and forward
/// (torch.nn.MultiheadAttention), so a PyTorch state_dict of the same module loads. Its attention is
/// scaled_dot_product_attention (ops/attention.cpp) when no weights are asked for, the same math
/// spelled out when they are. Not supported: kdim/vdim different from embed_dim, add_bias_kv,
/// add_zero_attn, is_causal (pass a causal attn_mask).
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
  double dropout_ = 0;        ///< See dropout().
  bool bias_ = true;          ///< See bias().
  bool batch_first_ = false;  ///< See batch_first().
};

/// Attention over num_heads heads of embed_dim / num_heads each (torch.nn.MultiheadAttention):
/// query, key and value are projected by the rows of in_proj_weight (3 embed_dim, embed_dim) and
/// in_proj_bias, split into heads, attended with scale 1 / sqrt(head_dim), merged and projected by
/// out_proj. Init as PyTorch's _reset_parameters: in_proj_weight xavier_uniform_, in_proj_bias and
/// out_proj.bias zeros, out_proj.weight Linear's default. Call as `auto [out, w] = mha(q, k, v);`.
class MultiheadAttention : public Cloneable<MultiheadAttention> {
 public:
  /// float32 parameters on the CPU from the manual_seed stream. ShapeError unless embed_dim and
  /// num_heads are positive and embed_dim is divisible by num_heads; Error unless 0 <= dropout <= 1.
  MultiheadAttention(int64_t embed_dim, int64_t num_heads, const MultiheadAttentionOptions& options = {});
  using Module::forward;
  /// query (L, N, E), key and value (S, N, E) ((N, L, E) and (N, S, E) with batch_first; (L, E) and
  /// (S, E) unbatched) -> attn_output of query's layout and, when need_weights, the attention weights
  /// (N, L, S) averaged over the heads (average_attn_weights) or (N, num_heads, L, S) (undefined
  /// otherwise). key_padding_mask (N, S): true (bool) or -inf (float) for keys to ignore. attn_mask
  /// (L, S) or (N num_heads, L, S): true (bool) forbids a position, a float mask is added to the
  /// scores. The dropout applies only in training. A query row with every key masked gives NaN, as
  /// in PyTorch. ShapeError / DTypeError in PyTorch's words for inputs of the wrong shape or dtype.
  std::tuple<Variable, Variable> forward(const Variable& query, const Variable& key, const Variable& value,
                                         const Variable& key_padding_mask = Variable(), bool need_weights = true,
                                         const Variable& attn_mask = Variable(), bool average_attn_weights = true);
  /// "MultiheadAttention" (its child out_proj prints below it, as in PyTorch).
  std::string name() const override { return "MultiheadAttention"; }
  /// A MultiheadAttention of the same configuration (for clone()).
  std::unique_ptr<Module> new_instance() const override {
    return std::make_unique<MultiheadAttention>(embed_dim_, num_heads_, options_);
  }
  Variable in_proj_weight;   ///< (3 embed_dim, embed_dim): the query, key and value projections stacked
  Variable in_proj_bias;     ///< (3 embed_dim); undefined without bias
  Linear out_proj;           ///< embed_dim -> embed_dim, registered as "out_proj"
 private:
  int64_t embed_dim_, num_heads_;
  MultiheadAttentionOptions options_;
};

}  // namespace nn
}  // namespace tg
