/// \file
/// nn/layers.h: the standard layers and losses as Modules: Linear, ReLU, Sigmoid, Tanh, Dropout,
/// Flatten, Sequential, CrossEntropyLoss, MSELoss. Each forward is one call into ops/ops.h.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "tensorgrad/nn/module.h"
#include "tensorgrad/ops/ops.h"

namespace tg {
namespace nn {

/// y = x . weight^T + bias: x (N, in), weight (out, in), bias (out).
/// Init as PyTorch: weight and bias uniform in +-1/sqrt(in).
class Linear : public Module {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias = true);
  Variable forward(const Variable& x) override { return linear(x, weight, bias); }
  std::string name() const override;
  Variable weight;   // registered as "weight"
  Variable bias;     // registered as "bias"; undefined when bias = false
 private:
  int64_t in_features_, out_features_;
};

class ReLU : public Module {
 public:
  Variable forward(const Variable& x) override { return relu(x); }
  std::string name() const override { return "ReLU()"; }
};
class Sigmoid : public Module {
 public:
  Variable forward(const Variable& x) override { return sigmoid(x); }
  std::string name() const override { return "Sigmoid()"; }
};
class Tanh : public Module {
 public:
  Variable forward(const Variable& x) override { return tanh(x); }
  std::string name() const override { return "Tanh()"; }
};

/// Zeroes elements with probability p while training; the identity in eval().
class Dropout : public Module {
 public:
  explicit Dropout(double p = 0.5);
  Variable forward(const Variable& x) override { return dropout(x, p_, is_training()); }
  std::string name() const override;
 private:
  double p_;
};

/// Flattens dims start_dim..end_dim (default: all but the batch dim).
class Flatten : public Module {
 public:
  explicit Flatten(int64_t start_dim = 1, int64_t end_dim = -1) : start_(start_dim), end_(end_dim) {}
  Variable forward(const Variable& x) override { return flatten(x, start_, end_); }
  std::string name() const override { return "Flatten()"; }
 private:
  int64_t start_, end_;
};

/// Runs its children in order. Built in place: seq.add<Linear>(784, 128); seq.add<ReLU>();
class Sequential : public Module {
 public:
  template <class M, class... Args>
  M& add(Args&&... args) {
    auto owned = std::make_unique<M>(std::forward<Args>(args)...);
    M& ref = *owned;
    register_module(std::to_string(owned_.size()), ref);
    owned_.push_back(std::move(owned));
    return ref;
  }
  Variable forward(const Variable& x) override;
  std::string name() const override { return "Sequential"; }
  std::size_t size() const { return owned_.size(); }
 private:
  std::vector<std::unique_ptr<Module>> owned_;
};

/// Options of CrossEntropyLoss, PyTorch style: CrossEntropyLossOptions().ignore_index(0).label_smoothing(0.1).
struct CrossEntropyLossOptions {
  CrossEntropyLossOptions& reduction(Reduction r) { reduction_ = r; return *this; }
  CrossEntropyLossOptions& ignore_index(int64_t i) { ignore_index_ = i; return *this; }
  CrossEntropyLossOptions& label_smoothing(double s) { label_smoothing_ = s; return *this; }
  Reduction reduction_ = Reduction::Mean;
  int64_t ignore_index_ = -100;
  double label_smoothing_ = 0;
};

/// Mean (or sum) over the batch of -log softmax(logits)[target]; targets are int64 class indices.
class CrossEntropyLoss {
 public:
  CrossEntropyLoss() = default;
  explicit CrossEntropyLoss(Reduction reduction) { options_.reduction(reduction); }
  explicit CrossEntropyLoss(const CrossEntropyLossOptions& options) : options_(options) {}
  Variable operator()(const Variable& logits, const Variable& target) const {
    return cross_entropy(logits, target, options_.reduction_, options_.ignore_index_, options_.label_smoothing_);
  }
 private:
  CrossEntropyLossOptions options_;
};

class MSELoss {
 public:
  explicit MSELoss(Reduction reduction = Reduction::Mean) : reduction_(reduction) {}
  Variable operator()(const Variable& input, const Variable& target) const {
    return mse_loss(input, target, reduction_);
  }
 private:
  Reduction reduction_;
};

}  // namespace nn
}  // namespace tg
