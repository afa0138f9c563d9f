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

/// y = x . weight^T + bias: x (N, in), weight (out, in), bias (out).
/// Init as PyTorch: weight and bias uniform in +-1/sqrt(in).
/// x may have more leading dims: (..., in) -> (..., out), as torch::nn::Linear.
class Linear : public Module {
 public:
  /// float32 parameters on the CPU, drawn from the manual_seed stream; ShapeError unless both sizes
  /// are positive.
  Linear(int64_t in_features, int64_t out_features, bool bias = true);
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

/// A lookup table of num_embeddings vectors of embedding_dim (torch::nn::Embedding): int64 indices
/// (*) -> (*, embedding_dim) through embedding(). weight is drawn from N(0, 1) as PyTorch's, and the
/// row padding_idx (negative counts from num_embeddings), when given, is zero and gets no gradient.
class Embedding : public Module {
 public:
  /// float32 weight on the CPU from the manual_seed stream; ShapeError unless both sizes are positive,
  /// IndexError for a padding_idx outside [-num_embeddings, num_embeddings).
  Embedding(int64_t num_embeddings, int64_t embedding_dim, std::optional<int64_t> padding_idx = std::nullopt);
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

/// Zeroes elements with probability p while training; the identity in eval().
class Dropout : public Module {
 public:
  /// Error unless 0 <= p <= 1.
  explicit Dropout(double p = 0.5);
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
  /// See reduction().
  Reduction reduction_ = Reduction::Mean;
  /// See ignore_index().
  int64_t ignore_index_ = -100;
  /// See label_smoothing().
  double label_smoothing_ = 0;
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
    return cross_entropy(logits, target, options_.reduction_, options_.ignore_index_, options_.label_smoothing_);
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
/// libtorch's name of the module type, which is its own holder (Note [Value modules and handles], nn/pimpl.h).
using FlattenImpl = Flatten;

}  // namespace nn
}  // namespace tg
