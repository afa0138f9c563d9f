// nn/transformer.cpp: the transformer layers and stacks of nn/transformer.h, written after PyTorch's
// torch/nn/modules/transformer.py (its general path: the blocks _sa_block, _mha_block and _ff_block).
#include "tensorgrad/nn/transformer.h"

#include <limits>
#include <vector>

#include "tensorgrad/nn/init.h"
#include "tensorgrad/ops/creation.h"

namespace tg {
namespace nn {

namespace {

/// options after the checks that must precede building the children; who names the module in errors.
const TransformerLayerOptions& checked(const TransformerLayerOptions& o, const char* who) {
  TG_CHECK(o.d_model_ > 0 && o.nhead_ > 0 && o.dim_feedforward_ > 0, ShapeError, who,
           ": d_model, nhead and dim_feedforward must be positive, got ", o.d_model_, ", ", o.nhead_, " and ",
           o.dim_feedforward_);
  TG_CHECK(o.d_model_ % o.nhead_ == 0, ShapeError, who, ": d_model (", o.d_model_, ") must be divisible by nhead (",
           o.nhead_, ")");
  TG_CHECK(o.dropout_ >= 0 && o.dropout_ <= 1, Error, who, ": dropout probability has to be between 0 and 1, but got ",
           o.dropout_);
  TG_CHECK(o.activation_fn_ || o.activation_ == "relu" || o.activation_ == "gelu", Error, who,
           ": activation should be relu/gelu, not ", o.activation_);
  return o;
}

MultiheadAttentionOptions attention_options(const TransformerLayerOptions& o) {
  return MultiheadAttentionOptions().dropout(o.dropout_).bias(o.bias_).batch_first(o.batch_first_);
}

/// PyTorch's LayerNorm(d_model, eps, bias=bias): without bias, the LayerNorm keeps only its weight.
void drop_norm_bias(LayerNorm& norm, bool bias) {
  if (bias) return;
  norm.unregister("bias");
  norm.bias = Tensor();
}

/// The feed-forward activation of options o.
Tensor activation_of(const TransformerLayerOptions& o, const Tensor& x) {
  if (o.activation_fn_) return o.activation_fn_(x);
  return o.activation_ == "gelu" ? gelu(x) : relu(x);
}

/// ShapeError unless x is (S, N, E) / (N, S, E) or unbatched (S, E) with E = d_model.
void check_input(const Tensor& x, const char* who, const char* what, int64_t d_model) {
  TG_CHECK(x.defined(), Error, who, ": undefined ", what);
  TG_CHECK(x.dim() == 2 || x.dim() == 3, ShapeError, who, ": ", what,
           " should be unbatched 2-D (seq, d_model) or batched 3-D, got a ", x.dim(), "-D tensor of shape ",
           shape_str(x.shape()));
  TG_CHECK(x.size(-1) == d_model, ShapeError, who, ": ", what, " of shape ", shape_str(x.shape()), " has ", x.size(-1),
           " features, but d_model is ", d_model);
}

/// ShapeError unless tgt and memory have the same rank and batch size (batch dim by batch_first).
void check_same_batch(const Tensor& tgt, const Tensor& memory, bool batch_first, const char* who, const char* a,
                      const char* b) {
  TG_CHECK(tgt.dim() == memory.dim(), ShapeError, who, ": ", a, " of shape ", shape_str(tgt.shape()), " and ", b,
           " of shape ", shape_str(memory.shape()), " must both be batched (3-D) or both unbatched (2-D)");
  if (tgt.dim() == 3) {
    const int64_t d = batch_first ? 0 : 1;
    TG_CHECK(tgt.size(d) == memory.size(d), ShapeError, who, ": the batch number of ", a, " (shape ",
             shape_str(tgt.shape()), ") and ", b, " (shape ", shape_str(memory.shape()), ") must be equal");
  }
}

/// A fresh copy of norm (a LayerNorm of the same configuration given norm's values).
std::shared_ptr<LayerNorm> copy_of(const LayerNorm& norm) {
  std::unique_ptr<Module> copy = norm->clone();
  return std::shared_ptr<LayerNorm>(static_cast<LayerNorm*>(copy.release()));
}

}  // namespace

Tensor generate_square_subsequent_mask(int64_t sz, DType dtype, Device device) {
  TG_CHECK(sz >= 0, ShapeError, "generate_square_subsequent_mask: sz must not be negative, got ", sz);
  std::vector<double> v(static_cast<size_t>(sz * sz), 0.0);
  for (int64_t i = 0; i < sz; ++i)
    for (int64_t j = i + 1; j < sz; ++j) v[static_cast<size_t>(i * sz + j)] = -std::numeric_limits<double>::infinity();
  return from_vector(v, {sz, sz}, TensorOptions().dtype(dtype).device(device));
}

// ---- TransformerEncoderLayer

TransformerEncoderLayer::TransformerEncoderLayer(int64_t d_model, int64_t nhead, int64_t dim_feedforward, double dropout)
    : TransformerEncoderLayer(TransformerEncoderLayerOptions(d_model, nhead).dim_feedforward(dim_feedforward).dropout(dropout)) {}

TransformerEncoderLayer::TransformerEncoderLayer(const TransformerEncoderLayerOptions& options)
    : options_(checked(options, "TransformerEncoderLayer")),
      self_attn(options_.d_model_, options_.nhead_, attention_options(options_)),
      linear1(options_.d_model_, options_.dim_feedforward_, options_.bias_),
      dropout(options_.dropout_),
      linear2(options_.dim_feedforward_, options_.d_model_, options_.bias_),
      norm1(std::vector<int64_t>{options_.d_model_}, options_.layer_norm_eps_),
      norm2(std::vector<int64_t>{options_.d_model_}, options_.layer_norm_eps_),
      dropout1(options_.dropout_),
      dropout2(options_.dropout_) {
  register_module("self_attn", self_attn);
  register_module("linear1", linear1);
  register_module("dropout", dropout);
  register_module("linear2", linear2);
  register_module("norm1", norm1);
  register_module("norm2", norm2);
  register_module("dropout1", dropout1);
  register_module("dropout2", dropout2);
  drop_norm_bias(norm1, options_.bias_);
  drop_norm_bias(norm2, options_.bias_);
}

Tensor TransformerEncoderLayer::activate(const Tensor& x) const { return activation_of(options_, x); }

Tensor TransformerEncoderLayer::forward(const Tensor& src) { return forward(src, Tensor()); }

Tensor TransformerEncoderLayer::forward(const Tensor& src, const Tensor& src_mask, const Tensor& src_key_padding_mask,
                                        bool is_causal) {
  check_input(src, "TransformerEncoderLayer", "src", options_.d_model_);
  // _sa_block and _ff_block of PyTorch, with the residual sums and norms in the order norm_first asks
  auto sa_block = [&](const Tensor& x) {
    return dropout1(std::get<0>(self_attn.forward(x, x, x, src_key_padding_mask, /*need_weights=*/false, src_mask,
                                                  /*average_attn_weights=*/true, is_causal)));
  };
  auto ff_block = [&](const Tensor& x) { return dropout2(linear2(dropout(activate(linear1(x))))); };
  Tensor x = src;
  if (options_.norm_first_) {
    x = x + sa_block(norm1(x));
    x = x + ff_block(norm2(x));
  } else {
    x = norm1(x + sa_block(x));
    x = norm2(x + ff_block(x));
  }
  return x;
}

// ---- TransformerDecoderLayer

TransformerDecoderLayer::TransformerDecoderLayer(int64_t d_model, int64_t nhead, int64_t dim_feedforward, double dropout)
    : TransformerDecoderLayer(TransformerDecoderLayerOptions(d_model, nhead).dim_feedforward(dim_feedforward).dropout(dropout)) {}

TransformerDecoderLayer::TransformerDecoderLayer(const TransformerDecoderLayerOptions& options)
    : options_(checked(options, "TransformerDecoderLayer")),
      self_attn(options_.d_model_, options_.nhead_, attention_options(options_)),
      multihead_attn(options_.d_model_, options_.nhead_, attention_options(options_)),
      linear1(options_.d_model_, options_.dim_feedforward_, options_.bias_),
      dropout(options_.dropout_),
      linear2(options_.dim_feedforward_, options_.d_model_, options_.bias_),
      norm1(std::vector<int64_t>{options_.d_model_}, options_.layer_norm_eps_),
      norm2(std::vector<int64_t>{options_.d_model_}, options_.layer_norm_eps_),
      norm3(std::vector<int64_t>{options_.d_model_}, options_.layer_norm_eps_),
      dropout1(options_.dropout_),
      dropout2(options_.dropout_),
      dropout3(options_.dropout_) {
  register_module("self_attn", self_attn);
  register_module("multihead_attn", multihead_attn);
  register_module("linear1", linear1);
  register_module("dropout", dropout);
  register_module("linear2", linear2);
  register_module("norm1", norm1);
  register_module("norm2", norm2);
  register_module("norm3", norm3);
  register_module("dropout1", dropout1);
  register_module("dropout2", dropout2);
  register_module("dropout3", dropout3);
  drop_norm_bias(norm1, options_.bias_);
  drop_norm_bias(norm2, options_.bias_);
  drop_norm_bias(norm3, options_.bias_);
}

Tensor TransformerDecoderLayer::activate(const Tensor& x) const { return activation_of(options_, x); }

Tensor TransformerDecoderLayer::forward(const Tensor& tgt, const Tensor& memory, const Tensor& tgt_mask,
                                        const Tensor& memory_mask, const Tensor& tgt_key_padding_mask,
                                        const Tensor& memory_key_padding_mask, bool tgt_is_causal,
                                        bool memory_is_causal) {
  const char* who = "TransformerDecoderLayer";
  check_input(tgt, who, "tgt", options_.d_model_);
  check_input(memory, who, "memory", options_.d_model_);
  check_same_batch(tgt, memory, options_.batch_first_, who, "tgt", "memory");
  auto sa_block = [&](const Tensor& x) {
    return dropout1(std::get<0>(
        self_attn.forward(x, x, x, tgt_key_padding_mask, false, tgt_mask, true, tgt_is_causal)));
  };
  auto mha_block = [&](const Tensor& x) {
    return dropout2(std::get<0>(multihead_attn.forward(x, memory, memory, memory_key_padding_mask, false, memory_mask,
                                                       true, memory_is_causal)));
  };
  auto ff_block = [&](const Tensor& x) { return dropout3(linear2(dropout(activate(linear1(x))))); };
  Tensor x = tgt;
  if (options_.norm_first_) {
    x = x + sa_block(norm1(x));
    x = x + mha_block(norm2(x));
    x = x + ff_block(norm3(x));
  } else {
    x = norm1(x + sa_block(x));
    x = norm2(x + mha_block(x));
    x = norm3(x + ff_block(x));
  }
  return x;
}

// ---- TransformerEncoder and TransformerDecoder

TransformerEncoder::TransformerEncoder(const TransformerEncoderLayer& encoder_layer, int64_t num_layers,
                                       std::shared_ptr<LayerNorm> norm_module)
    : num_layers_(num_layers) {
  TG_CHECK(num_layers >= 1, Error, "TransformerEncoder: num_layers must be at least 1, got ", num_layers);
  // PyTorch's _get_clones: independent deep copies, equal at the start
  for (int64_t i = 0; i < num_layers; ++i) layers.push_back(std::shared_ptr<TransformerEncoderLayer>(encoder_layer.clone()));
  register_module("layers", layers);
  if (norm_module) norm = register_module("norm", std::move(norm_module));
}

TransformerEncoder::TransformerEncoder(const TransformerEncoderLayer& encoder_layer, int64_t num_layers,
                                       const LayerNorm& norm_module)
    : TransformerEncoder(encoder_layer, num_layers, copy_of(norm_module)) {}

std::unique_ptr<Module> TransformerEncoder::new_instance() const {
  const auto& first = layers.at<TransformerEncoderLayer>(0);
  return std::make_unique<TransformerEncoder>(first, num_layers_, norm.is_empty() ? nullptr : copy_of(norm));
}

Tensor TransformerEncoder::forward(const Tensor& src) { return forward(src, Tensor()); }

Tensor TransformerEncoder::forward(const Tensor& src, const Tensor& mask, const Tensor& src_key_padding_mask,
                                   bool is_causal) {
  Tensor x = src;
  for (const auto& layer : layers)
    x = static_cast<TransformerEncoderLayer&>(*layer).forward(x, mask, src_key_padding_mask, is_causal);
  if (!norm.is_empty()) x = norm(x);
  return x;
}

TransformerDecoder::TransformerDecoder(const TransformerDecoderLayer& decoder_layer, int64_t num_layers,
                                       std::shared_ptr<LayerNorm> norm_module)
    : num_layers_(num_layers) {
  TG_CHECK(num_layers >= 1, Error, "TransformerDecoder: num_layers must be at least 1, got ", num_layers);
  for (int64_t i = 0; i < num_layers; ++i) layers.push_back(std::shared_ptr<TransformerDecoderLayer>(decoder_layer.clone()));
  register_module("layers", layers);
  if (norm_module) norm = register_module("norm", std::move(norm_module));
}

TransformerDecoder::TransformerDecoder(const TransformerDecoderLayer& decoder_layer, int64_t num_layers,
                                       const LayerNorm& norm_module)
    : TransformerDecoder(decoder_layer, num_layers, copy_of(norm_module)) {}

std::unique_ptr<Module> TransformerDecoder::new_instance() const {
  const auto& first = layers.at<TransformerDecoderLayer>(0);
  return std::make_unique<TransformerDecoder>(first, num_layers_, norm.is_empty() ? nullptr : copy_of(norm));
}

Tensor TransformerDecoder::forward(const Tensor& tgt, const Tensor& memory, const Tensor& tgt_mask,
                                   const Tensor& memory_mask, const Tensor& tgt_key_padding_mask,
                                   const Tensor& memory_key_padding_mask, bool tgt_is_causal, bool memory_is_causal) {
  Tensor x = tgt;
  for (const auto& layer : layers)
    x = static_cast<TransformerDecoderLayer&>(*layer).forward(x, memory, tgt_mask, memory_mask, tgt_key_padding_mask,
                                                              memory_key_padding_mask, tgt_is_causal, memory_is_causal);
  if (!norm.is_empty()) x = norm(x);
  return x;
}

// ---- Transformer

namespace {

std::shared_ptr<LayerNorm> final_norm(const TransformerOptions& o) {
  auto norm = std::make_shared<LayerNorm>(std::vector<int64_t>{o.d_model_}, o.layer_norm_eps_);
  drop_norm_bias(*norm, o.bias_);
  return norm;
}

const TransformerOptions& checked_depths(const TransformerOptions& o) {
  checked(o, "Transformer");
  TG_CHECK(o.num_encoder_layers_ >= 1 && o.num_decoder_layers_ >= 1, Error,
           "Transformer: num_encoder_layers and num_decoder_layers must be at least 1, got ", o.num_encoder_layers_,
           " and ", o.num_decoder_layers_);
  return o;
}

}  // namespace

Transformer::Transformer(const TransformerOptions& options)
    : options_(checked_depths(options)),
      encoder(TransformerEncoderLayer(static_cast<const TransformerLayerOptions&>(options_)),
              options_.num_encoder_layers_, final_norm(options_)),
      decoder(TransformerDecoderLayer(static_cast<const TransformerLayerOptions&>(options_)),
              options_.num_decoder_layers_, final_norm(options_)) {
  register_module("encoder", encoder);
  register_module("decoder", decoder);
  // PyTorch's _reset_parameters: xavier_uniform_ on every parameter of more than one dimension
  for (Tensor p : parameters())
    if (p.dim() > 1) init::xavier_uniform_(p);
}

Tensor Transformer::forward(const Tensor& src, const Tensor& tgt, const Tensor& src_mask, const Tensor& tgt_mask,
                            const Tensor& memory_mask, const Tensor& src_key_padding_mask,
                            const Tensor& tgt_key_padding_mask, const Tensor& memory_key_padding_mask,
                            bool src_is_causal, bool tgt_is_causal, bool memory_is_causal) {
  const char* who = "Transformer";
  check_input(src, who, "src", options_.d_model_);
  check_input(tgt, who, "tgt", options_.d_model_);
  check_same_batch(src, tgt, options_.batch_first_, who, "src", "tgt");
  const Tensor memory = encoder.forward(src, src_mask, src_key_padding_mask, src_is_causal);
  return decoder.forward(tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask, memory_key_padding_mask,
                         tgt_is_causal, memory_is_causal);
}

}  // namespace nn
}  // namespace tg
