/// \file
/// nn/transformer.h: PyTorch's transformer layers (torch.nn.TransformerEncoderLayer,
/// TransformerEncoder, TransformerDecoderLayer, TransformerDecoder, Transformer) built from
/// MultiheadAttention, Linear, Dropout and LayerNorm, with PyTorch's options, forward arguments,
/// registration order and parameter names, so that a PyTorch state_dict of the same module loads
/// ("self_attn.in_proj_weight", "linear1.weight", "norm1.bias", "layers.0.self_attn.out_proj.weight",
/// "encoder.norm.weight", ...). Only PyTorch's general path exists: no inference fast path and no
/// nested tensors (the results are the same; TransformerEncoder has no enable_nested_tensor).
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "tensorgrad/nn/attention.h"
#include "tensorgrad/nn/container.h"
#include "tensorgrad/nn/layers.h"
#include "tensorgrad/nn/module.h"
#include "tensorgrad/nn/norm.h"

namespace tg {
namespace nn {

/// PyTorch's Transformer.generate_square_subsequent_mask(sz): the (sz, sz) float mask with -inf above
/// the diagonal and 0 on and below it (position i attends positions 0..i), of dtype on device.
/// ShapeError for a negative sz.
Tensor generate_square_subsequent_mask(int64_t sz, DType dtype = kFloat32, Device device = Device::cpu());

/// The options of TransformerEncoderLayer and TransformerDecoderLayer, PyTorch's keyword arguments
/// with their defaults: TransformerEncoderLayerOptions(512, 8).dim_feedforward(1024).batch_first(true).
struct TransformerLayerOptions {
  /// The model width and the number of attention heads (nhead must divide d_model).
  TransformerLayerOptions(int64_t d_model, int64_t nhead) : d_model_(d_model), nhead_(nhead) {}
  /// The hidden width of the feed-forward block (default 2048).
  TransformerLayerOptions& dim_feedforward(int64_t d) { dim_feedforward_ = d; return *this; }
  /// The dropout probability of every Dropout and of the attention weights (default 0.1).
  TransformerLayerOptions& dropout(double p) { dropout_ = p; return *this; }
  /// The feed-forward activation by PyTorch's name: "relu" (the default) or "gelu" (exact, erf);
  /// another name raises tg::Error when the layer is built.
  TransformerLayerOptions& activation(const std::string& name) {
    activation_ = name;
    activation_fn_ = nullptr;
    return *this;
  }
  /// A feed-forward activation of the caller's (PyTorch's activation=callable); name is what the
  /// layer prints for it.
  TransformerLayerOptions& activation(std::function<Tensor(const Tensor&)> fn, const std::string& name = "custom") {
    activation_ = name;
    activation_fn_ = std::move(fn);
    return *this;
  }
  /// The eps of the LayerNorms (default 1e-5).
  TransformerLayerOptions& layer_norm_eps(double eps) { layer_norm_eps_ = eps; return *this; }
  /// Inputs and output as (batch, seq, feature) instead of (seq, batch, feature) (default false).
  TransformerLayerOptions& batch_first(bool b) { batch_first_ = b; return *this; }
  /// LayerNorm before each block (pre-norm) instead of after the residual sum (default false).
  TransformerLayerOptions& norm_first(bool b) { norm_first_ = b; return *this; }
  /// Biases in the Linears, the attention projections and the LayerNorms (default true).
  TransformerLayerOptions& bias(bool b) { bias_ = b; return *this; }
  int64_t d_model_;                                     ///< See the constructor.
  int64_t nhead_;                                       ///< See the constructor.
  int64_t dim_feedforward_ = 2048;                      ///< See dim_feedforward().
  double dropout_ = 0.1;                                ///< See dropout().
  std::string activation_ = "relu";                     ///< See activation().
  std::function<Tensor(const Tensor&)> activation_fn_;  ///< See activation(); empty for a named one
  double layer_norm_eps_ = 1e-5;                        ///< See layer_norm_eps().
  bool batch_first_ = false;                            ///< See batch_first().
  bool norm_first_ = false;                             ///< See norm_first().
  bool bias_ = true;                                    ///< See bias().
};
/// libtorch's name of the encoder layer's options.
using TransformerEncoderLayerOptions = TransformerLayerOptions;
/// libtorch's name of the decoder layer's options.
using TransformerDecoderLayerOptions = TransformerLayerOptions;

/// Self-attention and a feed-forward block, each with dropout, a residual sum and a LayerNorm
/// (torch.nn.TransformerEncoderLayer). Post-norm (the default):
///   x = norm1(x + dropout1(self_attn(x, x, x)));  x = norm2(x + dropout2(linear2(dropout(act(linear1(x))))))
/// with norm_first: x = x + dropout1(self_attn(norm1(x))), x = x + dropout2(linear2(...(norm2(x)))).
/// Children in PyTorch's order: self_attn, linear1, dropout, linear2, norm1, norm2, dropout1, dropout2.
/// Parameters float32 on the CPU, initialised as PyTorch's (MultiheadAttention's and Linear's inits).
class TransformerEncoderLayer : public Cloneable<TransformerEncoderLayer> {
 private:
  TransformerLayerOptions options_;   // first: the children below are built from it

 public:
  /// PyTorch's positional form TransformerEncoderLayer(d_model, nhead, dim_feedforward, dropout).
  /// ShapeError unless d_model, nhead and dim_feedforward are positive and nhead divides d_model;
  /// Error for a dropout outside [0, 1] or an unknown activation.
  TransformerEncoderLayer(int64_t d_model, int64_t nhead, int64_t dim_feedforward = 2048, double dropout = 0.1);
  /// libtorch's form: TransformerEncoderLayer(TransformerEncoderLayerOptions(8, 2).norm_first(true)).
  explicit TransformerEncoderLayer(const TransformerEncoderLayerOptions& options);
  using Module::forward;
  /// forward(src, no mask): lets the layer run inside Sequential and with forward hooks.
  Tensor forward(const Tensor& src) override;
  /// src (S, N, E), or (N, S, E) with batch_first, or unbatched (S, E) -> the same shape. src_mask
  /// (S, S) or (N nhead, S, S): true (bool) forbids a position, a float mask is added to the scores.
  /// src_key_padding_mask (N, S) ((S) unbatched): true or -inf for keys to ignore. is_causal is
  /// PyTorch's hint that src_mask is the causal mask (it needs src_mask). ShapeError naming the layer
  /// and the shapes for an input of the wrong rank or width.
  Tensor forward(const Tensor& src, const Tensor& src_mask, const Tensor& src_key_padding_mask = Tensor(),
                 bool is_causal = false);
  /// "TransformerEncoderLayer" (its children print below it, as in PyTorch).
  std::string name() const override { return "TransformerEncoderLayer"; }
  /// A layer of the same options (for clone(), and TransformerEncoder's copies).
  std::unique_ptr<Module> new_instance() const override {
    return std::make_unique<TransformerEncoderLayer>(options_);
  }
  /// The options the layer was built with.
  const TransformerLayerOptions& options() const { return options_; }

  MultiheadAttention self_attn;   ///< d_model, nhead, attention dropout, bias, batch_first
  Linear linear1;                 ///< d_model -> dim_feedforward
  Dropout dropout;                ///< after the activation
  Linear linear2;                 ///< dim_feedforward -> d_model
  LayerNorm norm1;                ///< of the self-attention block
  LayerNorm norm2;                ///< of the feed-forward block
  Dropout dropout1;               ///< on the self-attention output
  Dropout dropout2;               ///< on the feed-forward output

 private:
  Tensor activate(const Tensor& x) const;
};

/// Self-attention, cross-attention over memory and a feed-forward block, each with dropout, a
/// residual sum and a LayerNorm (torch.nn.TransformerDecoderLayer). Post-norm (the default):
///   x = norm1(x + dropout1(self_attn(x, x, x)));  x = norm2(x + dropout2(multihead_attn(x, mem, mem)));
///   x = norm3(x + dropout3(linear2(dropout(act(linear1(x))))))
/// with norm_first each block reads normK(x) and the sum is not normalised. Children in PyTorch's
/// order: self_attn, multihead_attn, linear1, dropout, linear2, norm1, norm2, norm3, dropout1,
/// dropout2, dropout3.
class TransformerDecoderLayer : public Cloneable<TransformerDecoderLayer> {
 private:
  TransformerLayerOptions options_;   // first: the children below are built from it

 public:
  /// PyTorch's positional form TransformerDecoderLayer(d_model, nhead, dim_feedforward, dropout).
  /// Errors as TransformerEncoderLayer's.
  TransformerDecoderLayer(int64_t d_model, int64_t nhead, int64_t dim_feedforward = 2048, double dropout = 0.1);
  /// libtorch's form: TransformerDecoderLayer(TransformerDecoderLayerOptions(8, 2).batch_first(true)).
  explicit TransformerDecoderLayer(const TransformerDecoderLayerOptions& options);
  using Module::forward;
  /// tgt (T, N, E) and memory (S, N, E) ((N, T, E), (N, S, E) with batch_first; (T, E), (S, E)
  /// unbatched) -> tgt's shape. tgt_mask (T, T) and memory_mask (T, S) as MultiheadAttention's
  /// attn_mask, the key padding masks (N, T) and (N, S); the is_causal flags are PyTorch's hints that
  /// tgt_mask / memory_mask is the causal mask. ShapeError naming the layer and the shapes for inputs
  /// of the wrong rank or width, or batch sizes that differ.
  Tensor forward(const Tensor& tgt, const Tensor& memory, const Tensor& tgt_mask = Tensor(),
                 const Tensor& memory_mask = Tensor(), const Tensor& tgt_key_padding_mask = Tensor(),
                 const Tensor& memory_key_padding_mask = Tensor(), bool tgt_is_causal = false,
                 bool memory_is_causal = false);
  /// "TransformerDecoderLayer".
  std::string name() const override { return "TransformerDecoderLayer"; }
  /// A layer of the same options (for clone(), and TransformerDecoder's copies).
  std::unique_ptr<Module> new_instance() const override {
    return std::make_unique<TransformerDecoderLayer>(options_);
  }
  /// The options the layer was built with.
  const TransformerLayerOptions& options() const { return options_; }

  MultiheadAttention self_attn;        ///< self-attention over tgt
  MultiheadAttention multihead_attn;   ///< cross-attention: queries from tgt, keys and values from memory
  Linear linear1;                      ///< d_model -> dim_feedforward
  Dropout dropout;                     ///< after the activation
  Linear linear2;                      ///< dim_feedforward -> d_model
  LayerNorm norm1;                     ///< of the self-attention block
  LayerNorm norm2;                     ///< of the cross-attention block
  LayerNorm norm3;                     ///< of the feed-forward block
  Dropout dropout1;                    ///< on the self-attention output
  Dropout dropout2;                    ///< on the cross-attention output
  Dropout dropout3;                    ///< on the feed-forward output

 private:
  Tensor activate(const Tensor& x) const;
};

/// num_layers independent deep copies of encoder_layer run in order, then the optional norm
/// (torch.nn.TransformerEncoder; the copies are PyTorch's _get_clones, so they start equal).
/// Children: "layers" (a ModuleList: "layers.0.self_attn.in_proj_weight", ...) and, when given, "norm".
class TransformerEncoder : public Cloneable<TransformerEncoder> {
 public:
  /// Copies encoder_layer num_layers times; norm (shared, as PyTorch keeps the module passed) runs
  /// last when not null. Error unless num_layers >= 1.
  TransformerEncoder(const TransformerEncoderLayer& encoder_layer, int64_t num_layers,
                     std::shared_ptr<LayerNorm> norm = nullptr);
  /// The same with a copy of norm (a temporary LayerNorm(...) or a member).
  TransformerEncoder(const TransformerEncoderLayer& encoder_layer, int64_t num_layers, const LayerNorm& norm);
  /// No final norm (PyTorch's norm=None).
  TransformerEncoder(const TransformerEncoderLayer& encoder_layer, int64_t num_layers, std::nullptr_t)
      : TransformerEncoder(encoder_layer, num_layers, std::shared_ptr<LayerNorm>()) {}
  using Module::forward;
  /// forward(src, no mask).
  Tensor forward(const Tensor& src) override;
  /// Each layer's forward(x, mask, src_key_padding_mask, is_causal), then norm. Shapes as
  /// TransformerEncoderLayer::forward's.
  Tensor forward(const Tensor& src, const Tensor& mask, const Tensor& src_key_padding_mask = Tensor(),
                 bool is_causal = false);
  /// "TransformerEncoder".
  std::string name() const override { return "TransformerEncoder"; }
  /// An encoder of the same layout (for clone()).
  std::unique_ptr<Module> new_instance() const override;
  /// The number of layers.
  int64_t num_layers() const { return num_layers_; }

  ModuleList layers;          ///< the TransformerEncoderLayer copies, "0", "1", ...
  LayerNorm norm{nullptr};    ///< the final norm; an empty handle when none was given

 private:
  int64_t num_layers_;
};

/// num_layers independent deep copies of decoder_layer run in order on (tgt, memory), then the
/// optional norm (torch.nn.TransformerDecoder). Children: "layers" and, when given, "norm".
class TransformerDecoder : public Cloneable<TransformerDecoder> {
 public:
  /// Copies decoder_layer num_layers times; norm (shared) runs last when not null. Error unless
  /// num_layers >= 1.
  TransformerDecoder(const TransformerDecoderLayer& decoder_layer, int64_t num_layers,
                     std::shared_ptr<LayerNorm> norm = nullptr);
  /// The same with a copy of norm.
  TransformerDecoder(const TransformerDecoderLayer& decoder_layer, int64_t num_layers, const LayerNorm& norm);
  /// No final norm (PyTorch's norm=None).
  TransformerDecoder(const TransformerDecoderLayer& decoder_layer, int64_t num_layers, std::nullptr_t)
      : TransformerDecoder(decoder_layer, num_layers, std::shared_ptr<LayerNorm>()) {}
  using Module::forward;
  /// Each layer's forward with the same arguments, then norm. Shapes as TransformerDecoderLayer::forward's.
  Tensor forward(const Tensor& tgt, const Tensor& memory, const Tensor& tgt_mask = Tensor(),
                 const Tensor& memory_mask = Tensor(), const Tensor& tgt_key_padding_mask = Tensor(),
                 const Tensor& memory_key_padding_mask = Tensor(), bool tgt_is_causal = false,
                 bool memory_is_causal = false);
  /// "TransformerDecoder".
  std::string name() const override { return "TransformerDecoder"; }
  /// A decoder of the same layout (for clone()).
  std::unique_ptr<Module> new_instance() const override;
  /// The number of layers.
  int64_t num_layers() const { return num_layers_; }

  ModuleList layers;          ///< the TransformerDecoderLayer copies, "0", "1", ...
  LayerNorm norm{nullptr};    ///< the final norm; an empty handle when none was given

 private:
  int64_t num_layers_;
};

/// The options of Transformer: the layer options (d_model default 512, nhead 8) and the depths.
struct TransformerOptions : TransformerLayerOptions {
  /// d_model and nhead as PyTorch's defaults unless given.
  TransformerOptions(int64_t d_model = 512, int64_t nhead = 8) : TransformerLayerOptions(d_model, nhead) {}
  /// The number of encoder layers (default 6).
  TransformerOptions& num_encoder_layers(int64_t n) { num_encoder_layers_ = n; return *this; }
  /// The number of decoder layers (default 6).
  TransformerOptions& num_decoder_layers(int64_t n) { num_decoder_layers_ = n; return *this; }
  /// TransformerLayerOptions::dim_feedforward(), keeping the type for chaining.
  TransformerOptions& dim_feedforward(int64_t d) { TransformerLayerOptions::dim_feedforward(d); return *this; }
  /// TransformerLayerOptions::dropout().
  TransformerOptions& dropout(double p) { TransformerLayerOptions::dropout(p); return *this; }
  /// TransformerLayerOptions::activation() by name.
  TransformerOptions& activation(const std::string& name) { TransformerLayerOptions::activation(name); return *this; }
  /// TransformerLayerOptions::activation() of the caller's.
  TransformerOptions& activation(std::function<Tensor(const Tensor&)> fn, const std::string& name = "custom") {
    TransformerLayerOptions::activation(std::move(fn), name);
    return *this;
  }
  /// TransformerLayerOptions::layer_norm_eps().
  TransformerOptions& layer_norm_eps(double eps) { TransformerLayerOptions::layer_norm_eps(eps); return *this; }
  /// TransformerLayerOptions::batch_first().
  TransformerOptions& batch_first(bool b) { TransformerLayerOptions::batch_first(b); return *this; }
  /// TransformerLayerOptions::norm_first().
  TransformerOptions& norm_first(bool b) { TransformerLayerOptions::norm_first(b); return *this; }
  /// TransformerLayerOptions::bias().
  TransformerOptions& bias(bool b) { TransformerLayerOptions::bias(b); return *this; }
  int64_t num_encoder_layers_ = 6;   ///< See num_encoder_layers().
  int64_t num_decoder_layers_ = 6;   ///< See num_decoder_layers().
};

/// An encoder and a decoder, each with a final LayerNorm (torch.nn.Transformer without custom
/// encoder or decoder): forward(src, tgt, ...) = decoder(tgt, encoder(src, src_mask,
/// src_key_padding_mask), tgt_mask, memory_mask, tgt_key_padding_mask, memory_key_padding_mask).
/// Children "encoder" and "decoder"; every parameter of more than one dimension is then re-drawn
/// xavier_uniform_, as PyTorch's _reset_parameters.
class Transformer : public Cloneable<Transformer> {
 public:
  /// Errors as the layers'; Error unless both depths are at least 1.
  explicit Transformer(const TransformerOptions& options = TransformerOptions());
  using Module::forward;
  /// src (S, N, E) and tgt (T, N, E) ((N, ., E) with batch_first) -> (T, N, E). ShapeError naming the
  /// module when the batch sizes or the widths differ from d_model.
  Tensor forward(const Tensor& src, const Tensor& tgt, const Tensor& src_mask = Tensor(),
                 const Tensor& tgt_mask = Tensor(), const Tensor& memory_mask = Tensor(),
                 const Tensor& src_key_padding_mask = Tensor(), const Tensor& tgt_key_padding_mask = Tensor(),
                 const Tensor& memory_key_padding_mask = Tensor(), bool src_is_causal = false,
                 bool tgt_is_causal = false, bool memory_is_causal = false);
  /// PyTorch's static Transformer.generate_square_subsequent_mask(sz).
  static Tensor generate_square_subsequent_mask(int64_t sz, DType dtype = kFloat32, Device device = Device::cpu()) {
    return ::tg::nn::generate_square_subsequent_mask(sz, dtype, device);
  }
  /// "Transformer".
  std::string name() const override { return "Transformer"; }
  /// A Transformer of the same options (for clone()).
  std::unique_ptr<Module> new_instance() const override { return std::make_unique<Transformer>(options_); }

 private:
  TransformerOptions options_;   // before encoder and decoder, which are built from it

 public:
  TransformerEncoder encoder;   ///< num_encoder_layers layers and a LayerNorm
  TransformerDecoder decoder;   ///< num_decoder_layers layers and a LayerNorm
};

}  // namespace nn
}  // namespace tg
