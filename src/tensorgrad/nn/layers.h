/// \file
/// nn/layers.h: the standard layers and losses as Modules: Linear, Embedding, ReLU, Sigmoid, Tanh,
/// Dropout, Flatten, CrossEntropyLoss, MSELoss (and Sequential, from nn/container.h). Each forward is
/// one call into ops/ops.h.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tensorgrad/nn/container.h"
#include "tensorgrad/nn/module.h"
#include "tensorgrad/ops/ops.h"

namespace tg {
namespace nn {

/// Options of Linear, as libtorch's: LinearOptions(in_features, out_features).bias(false).
struct LinearOptions {
  /// The sizes Linear(in_features, out_features) takes.
  LinearOptions(int64_t in_features, int64_t out_features) : in_features_(in_features), out_features_(out_features) {}
  /// Whether the layer has a bias (default true).
  LinearOptions& bias(bool b) { bias_ = b; return *this; }
  int64_t in_features_;    ///< See the constructor.
  int64_t out_features_;   ///< See the constructor.
  bool bias_ = true;       ///< See bias().
};

/// y = x . weight^T + bias: x (N, in), weight (out, in), bias (out).
/// Init as PyTorch: weight and bias uniform in +-1/sqrt(in).
/// x may have more leading dims: (..., in) -> (..., out), as torch::nn::Linear.
class Linear : public Module {
 public:
  /// float32 parameters on the CPU, drawn from the manual_seed stream; ShapeError unless both sizes
  /// are positive.
  Linear(int64_t in_features, int64_t out_features, bool bias = true);
  /// libtorch's form: Linear(LinearOptions(784, 64).bias(false)).
  explicit Linear(const LinearOptions& options) : Linear(options.in_features_, options.out_features_, options.bias_) {}
  /// linear(x, weight, bias): x (..., in_features) -> (..., out_features).
  Tensor forward(const Tensor& x) override { return linear(x, weight, bias); }
  /// "Linear(in_features=784, out_features=128, bias=true)".
  std::string name() const override;
  /// A Linear of the same sizes (for clone()).
  std::unique_ptr<Module> new_instance() const override;
  Tensor weight;   ///< (out_features, in_features), registered as "weight"
  Tensor bias;     ///< (out_features), registered as "bias"; undefined when bias = false
 private:
  int64_t in_features_, out_features_;
  TG_LAYER_HANDLE(Linear)
};

/// Options of Embedding, as libtorch's: EmbeddingOptions(num_embeddings, embedding_dim).padding_idx(0).
/// libtorch's max_norm is not supported (calling it fails to compile with a message saying so), nor
/// sparse(true) (Embedding(options) throws Error).
struct EmbeddingOptions {
  /// The sizes Embedding(num_embeddings, embedding_dim) takes.
  EmbeddingOptions(int64_t num_embeddings, int64_t embedding_dim)
      : num_embeddings_(num_embeddings), embedding_dim_(embedding_dim) {}
  /// The row that is zero and gets no gradient (negative counts from num_embeddings).
  EmbeddingOptions& padding_idx(int64_t i) { padding_idx_ = i; return *this; }
  /// Not supported (libtorch renormalizes looked-up rows in place); fails to compile.
  template <class T>
  EmbeddingOptions& max_norm(T) {
    static_assert(sizeof(T) == 0, "EmbeddingOptions::max_norm is not supported by tensorgrad: renormalize the "
                                  "weight yourself under tg::NoGradGuard");
    return *this;
  }
  /// false (the default) only: the gradient of the weight is always dense.
  EmbeddingOptions& sparse(bool s) { sparse_ = s; return *this; }
  int64_t num_embeddings_;                ///< See the constructor.
  int64_t embedding_dim_;                 ///< See the constructor.
  std::optional<int64_t> padding_idx_;    ///< See padding_idx().
  bool sparse_ = false;                   ///< See sparse().
};

/// A lookup table of num_embeddings vectors of embedding_dim (torch::nn::Embedding): int64 indices
/// (*) -> (*, embedding_dim) through embedding(). weight is drawn from N(0, 1) as PyTorch's, and the
/// row padding_idx (negative counts from num_embeddings), when given, is zero and gets no gradient.
class Embedding : public Module {
 public:
  /// float32 weight on the CPU from the manual_seed stream; ShapeError unless both sizes are positive,
  /// IndexError for a padding_idx outside [-num_embeddings, num_embeddings).
  Embedding(int64_t num_embeddings, int64_t embedding_dim, std::optional<int64_t> padding_idx = std::nullopt);
  /// libtorch's form: Embedding(EmbeddingOptions(10, 3).padding_idx(0)).
  explicit Embedding(const EmbeddingOptions& options)
      : Embedding(options.num_embeddings_, options.embedding_dim_, options.padding_idx_) {
    TG_CHECK(!options.sparse_, Error, "Embedding: EmbeddingOptions().sparse(true) is not supported: the gradient "
             "of the weight is always dense (drop .sparse(true))");
  }
  /// An Embedding whose weight is a copy of embeddings (V, D) (torch.nn.Embedding.from_pretrained):
  /// freeze (the default) makes it a parameter that does not require grad. The padding_idx row is kept
  /// as given (PyTorch does not zero it either) and gets no gradient. ShapeError unless embeddings is 2-D.
  static std::unique_ptr<Embedding> from_pretrained(const Tensor& embeddings, bool freeze = true,
                                                    std::optional<int64_t> padding_idx = std::nullopt);
  /// embedding(input, weight, padding_idx): input (*) int64 -> (*, embedding_dim).
  Tensor forward(const Tensor& input) override { return embedding(input, weight, padding_idx_); }
  /// "Embedding(10, 3, padding_idx=0)".
  std::string name() const override;
  /// An Embedding of the same sizes and padding_idx (for clone()).
  std::unique_ptr<Module> new_instance() const override;
  /// The padding index in [0, num_embeddings), if any.
  std::optional<int64_t> padding_idx() const { return padding_idx_; }
  Tensor weight;   ///< (num_embeddings, embedding_dim), registered as "weight"
 private:
  int64_t num_embeddings_, embedding_dim_;
  std::optional<int64_t> padding_idx_;
  TG_LAYER_HANDLE(Embedding)
};

/// relu(x) as a module (torch::nn::ReLU).
class ReLU : public Module {
 public:
  /// relu(x), any shape.
  Tensor forward(const Tensor& x) override { return relu(x); }
  /// "ReLU()".
  std::string name() const override { return "ReLU()"; }
  /// A ReLU (for clone()).
  std::unique_ptr<Module> new_instance() const override { return std::make_unique<ReLU>(); }
  TG_LAYER_HANDLE_DEFAULT(ReLU)
};
/// sigmoid(x) as a module (torch::nn::Sigmoid).
class Sigmoid : public Module {
 public:
  /// sigmoid(x), any shape.
  Tensor forward(const Tensor& x) override { return sigmoid(x); }
  /// "Sigmoid()".
  std::string name() const override { return "Sigmoid()"; }
  /// A Sigmoid (for clone()).
  std::unique_ptr<Module> new_instance() const override { return std::make_unique<Sigmoid>(); }
  TG_LAYER_HANDLE_DEFAULT(Sigmoid)
};
/// tanh(x) as a module (torch::nn::Tanh).
class Tanh : public Module {
 public:
  /// tanh(x), any shape.
  Tensor forward(const Tensor& x) override { return tanh(x); }
  /// "Tanh()".
  std::string name() const override { return "Tanh()"; }
  /// A Tanh (for clone()).
  std::unique_ptr<Module> new_instance() const override { return std::make_unique<Tanh>(); }
  TG_LAYER_HANDLE_DEFAULT(Tanh)
};

/// Options of Dropout, as libtorch's: DropoutOptions(0.2), DropoutOptions().p(0.2). libtorch's
/// inplace(true) is not supported by the layer (Dropout(options) throws Error saying so).
struct DropoutOptions {
  /// The probability of zeroing an element (default 0.5).
  DropoutOptions(double p = 0.5) : p_(p) {}   // NOLINT(google-explicit-constructor): as libtorch's
  /// Sets the probability.
  DropoutOptions& p(double p) { p_ = p; return *this; }
  /// false (the default) only: the layer returns a new tensor.
  DropoutOptions& inplace(bool i) { inplace_ = i; return *this; }
  double p_;               ///< See p().
  bool inplace_ = false;   ///< See inplace().
};

/// Zeroes elements with probability p while training; the identity in eval().
class Dropout : public Module {
 public:
  /// Error unless 0 <= p <= 1.
  explicit Dropout(double p = 0.5);
  /// libtorch's form: Dropout(DropoutOptions().p(0.2)).
  explicit Dropout(const DropoutOptions& options) : Dropout(options.p_) {
    TG_CHECK(!options.inplace_, Error, "Dropout: DropoutOptions().inplace(true) is not supported: the layer returns "
             "a new tensor (drop .inplace(true), or call tg::nn::functional::dropout with inplace(true))");
  }
  /// dropout(x, p, is_training()): scaled by 1/(1-p) while training, x itself in eval().
  Tensor forward(const Tensor& x) override { return dropout(x, p_, is_training()); }
  /// "Dropout(p=0.5)".
  std::string name() const override;
  /// A Dropout with the same p (for clone()).
  std::unique_ptr<Module> new_instance() const override { return std::make_unique<Dropout>(p_); }
 private:
  double p_;
  TG_LAYER_HANDLE(Dropout)
};

/// Zeroes whole channels with probability p while training (torch::nn::Dropout2d, tg::dropout2d): input
/// (N, C, H, W) or (N, C, L), as PyTorch 2.x reads a 3-D input; each channel of each sample kept
/// (scaled by 1/(1-p)) or zeroed as one, from the manual_seed stream; the identity in eval().
class Dropout2d : public Module {
 public:
  /// Error unless 0 <= p <= 1.
  explicit Dropout2d(double p = 0.5);
  /// libtorch's form: Dropout2d(Dropout2dOptions(0.2)); inplace(true) throws Error.
  explicit Dropout2d(const DropoutOptions& options);
  /// x times a (N, C, 1, 1) mask of 0 and 1/(1-p) while training; x itself in eval(). ShapeError
  /// unless x is 3-D or 4-D.
  Tensor forward(const Tensor& x) override;
  /// "Dropout2d(p=0.5)".
  std::string name() const override;
  /// A Dropout2d with the same p (for clone()).
  std::unique_ptr<Module> new_instance() const override { return std::make_unique<Dropout2d>(p_); }
 private:
  double p_;
  TG_LAYER_HANDLE(Dropout2d)
};
/// Dropout2d's options (libtorch's name): Dropout2dOptions(0.2).
using Dropout2dOptions = DropoutOptions;

/// Options of Upsample (torch::nn::UpsampleOptions): a size or a scale factor, a mode ("nearest",
/// "linear", "bilinear") and align_corners for the interpolating modes.
struct UpsampleOptions {
  /// The output's spatial size (one value for every spatial dim, or one each).
  UpsampleOptions& size(std::vector<int64_t> s) { size_ = std::move(s); return *this; }
  /// The factor of each spatial dim (one value for all, or one each).
  UpsampleOptions& scale_factor(std::vector<double> f) { scale_factor_ = std::move(f); return *this; }
  /// "nearest" (default), "linear" or "bilinear".
  UpsampleOptions& mode(std::string m) { mode_ = std::move(m); return *this; }
  /// Corner-aligned sampling (linear modes only).
  UpsampleOptions& align_corners(bool a) { align_corners_ = a; return *this; }
  std::vector<int64_t> size_;          ///< See size().
  std::vector<double> scale_factor_;   ///< See scale_factor().
  std::string mode_ = "nearest";       ///< See mode().
  std::optional<bool> align_corners_;  ///< See align_corners().
};
/// interpolate(x, size, scale_factor, mode, align_corners) (torch::nn::Upsample).
class Upsample : public Module {
 public:
  /// With the given options (one of size and scale_factor must be set).
  explicit Upsample(const UpsampleOptions& options = {}) : options_(options) {}
  /// x (N, C, ...) resized.
  Tensor forward(const Tensor& x) override {
    return interpolate(x, options_.size_, options_.scale_factor_, options_.mode_, options_.align_corners_);
  }
  /// "Upsample(scale_factor=2.0, mode='nearest')", PyTorch's repr.
  std::string name() const override;
  /// An Upsample with the same options (for clone()).
  std::unique_ptr<Module> new_instance() const override { return std::make_unique<Upsample>(options_); }
  const UpsampleOptions& options() const { return options_; }   ///< The options.
 private:
  UpsampleOptions options_;
  TG_LAYER_HANDLE(Upsample)
};

/// Flattens dims start_dim..end_dim (default: all but the batch dim).
class Flatten : public Module {
 public:
  /// Flattens dims start_dim..end_dim (torch::nn::Flatten's defaults).
  explicit Flatten(int64_t start_dim = 1, int64_t end_dim = -1) : start_(start_dim), end_(end_dim) {}
  /// flatten(x, start_dim, end_dim): (N, 1, 28, 28) -> (N, 784) with the defaults.
  Tensor forward(const Tensor& x) override { return flatten(x, start_, end_); }
  /// "Flatten()".
  std::string name() const override { return "Flatten()"; }
  /// A Flatten of the same dims (for clone()).
  std::unique_ptr<Module> new_instance() const override { return std::make_unique<Flatten>(start_, end_); }
 private:
  int64_t start_, end_;
  TG_LAYER_HANDLE(Flatten)
};

/// Options of CrossEntropyLoss, PyTorch style: CrossEntropyLossOptions().ignore_index(0).label_smoothing(0.1).
struct CrossEntropyLossOptions {
  /// Sets how rows combine (default Reduction::Mean).
  CrossEntropyLossOptions& reduction(Reduction r) { reduction_ = r; return *this; }
  /// Sets the target value whose rows count for nothing (default -100).
  CrossEntropyLossOptions& ignore_index(int64_t i) { ignore_index_ = i; return *this; }
  /// Sets the label smoothing in [0, 1] (default 0).
  CrossEntropyLossOptions& label_smoothing(double s) { label_smoothing_ = s; return *this; }
  /// Sets the class weights, a (C) tensor (default none: every class weighs 1).
  CrossEntropyLossOptions& weight(const Tensor& w) { weight_ = w; return *this; }
  /// See reduction().
  Reduction reduction_ = Reduction::Mean;
  /// See ignore_index().
  int64_t ignore_index_ = -100;
  /// See label_smoothing().
  double label_smoothing_ = 0;
  /// See weight().
  Tensor weight_;
};

/// Mean (or sum) over the batch of -log softmax(logits)[target]; targets are int64 class indices.
/// Not a Module: it has no parameters (torch::nn::CrossEntropyLoss).
class CrossEntropyLoss {
 public:
  /// Mean over the batch, no ignored class, no smoothing.
  CrossEntropyLoss() = default;
  /// With the given reduction.
  explicit CrossEntropyLoss(Reduction reduction) { options_.reduction(reduction); }
  /// With all options.
  explicit CrossEntropyLoss(const CrossEntropyLossOptions& options) : options_(options) {}
  /// cross_entropy(logits, target, ...): logits (N, C), target (N) int64 -> 0-d, or (N) with
  /// Reduction::None.
  Tensor operator()(const Tensor& logits, const Tensor& target) const {
    return cross_entropy(logits, target, options_.weight_, options_.reduction_, options_.ignore_index_,
                         options_.label_smoothing_);
  }
 private:
  CrossEntropyLossOptions options_;
};

/// The mean (or sum) of (input - target)^2 (torch::nn::MSELoss); not a Module.
class MSELoss {
 public:
  /// With the given reduction (default: the mean).
  explicit MSELoss(Reduction reduction = Reduction::Mean) : reduction_(reduction) {}
  /// mse_loss(input, target, reduction); input and target of one shape.
  Tensor operator()(const Tensor& input, const Tensor& target) const {
    return mse_loss(input, target, reduction_);
  }
 private:
  Reduction reduction_;
};

/// libtorch's name of the module type, which is its own holder (Note [Value modules and handles], nn/pimpl.h).
using LinearImpl = Linear;
/// libtorch's name of the module type, which is its own holder (Note [Value modules and handles], nn/pimpl.h).
using EmbeddingImpl = Embedding;
/// libtorch's name of the module type, which is its own holder (Note [Value modules and handles], nn/pimpl.h).
using ReLUImpl = ReLU;
/// libtorch's name of the module type, which is its own holder (Note [Value modules and handles], nn/pimpl.h).
using SigmoidImpl = Sigmoid;
/// libtorch's name of the module type, which is its own holder (Note [Value modules and handles], nn/pimpl.h).
using TanhImpl = Tanh;
/// libtorch's name of the module type, which is its own holder (Note [Value modules and handles], nn/pimpl.h).
using DropoutImpl = Dropout;
/// libtorch's name of the module class (Note [Value modules and handles]).
using Dropout2dImpl = Dropout2d;
/// libtorch's name of the module type, which is its own holder (Note [Value modules and handles], nn/pimpl.h).
using FlattenImpl = Flatten;

}  // namespace nn
}  // namespace tg
