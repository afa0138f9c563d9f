/// \file
/// nn/loss.h: the loss objects of torch::nn beside CrossEntropyLoss and MSELoss (nn/layers.h): NLLLoss,
/// BCELoss, BCEWithLogitsLoss, L1Loss, SmoothL1Loss, HuberLoss, KLDivLoss, MarginRankingLoss and
/// CosineEmbeddingLoss, each with libtorch's *Options (the
/// reduction constants tg::kNone, tg::kMean, tg::kSum are in ops/ops.h). Like CrossEntropyLoss they are not
/// Modules (they hold no parameters or buffers: a weight is an option); they are called as
/// `criterion(input, target)` or, in libtorch's spelling, `criterion->forward(input, target)`. The
/// functions they call: ops/loss.cpp.
#pragma once
#include <cstdint>

#include "tensorgrad/ops/ops.h"

namespace tg {

namespace nn {

namespace detail {
/// The call forms every loss object shares: criterion(input, target) and criterion->forward(...).
template <class Loss>
struct LossCall {
  /// Loss::forward(input, target).
  Tensor operator()(const Tensor& input, const Tensor& target) const {
    return static_cast<const Loss&>(*this).forward(input, target);
  }
  /// The object itself, so that libtorch's criterion->forward(input, target) compiles.
  const Loss* operator->() const { return static_cast<const Loss*>(this); }
};
}  // namespace detail

/// Options of NLLLoss (torch::nn::NLLLossOptions).
struct NLLLossOptions {
  /// Per-class weights (C), or undefined for none.
  NLLLossOptions& weight(const Tensor& w) { weight_ = w; return *this; }
  /// The target value that counts nothing (default -100).
  NLLLossOptions& ignore_index(int64_t i) { ignore_index_ = i; return *this; }
  /// How the rows combine (default kMean).
  NLLLossOptions& reduction(Reduction r) { reduction_ = r; return *this; }
  Tensor weight_;                      ///< See weight().
  int64_t ignore_index_ = -100;        ///< See ignore_index().
  Reduction reduction_ = kMean;        ///< See reduction().
};
/// nll_loss(input, target, weight, reduction, ignore_index) (torch::nn::NLLLoss).
class NLLLoss : public detail::LossCall<NLLLoss> {
 public:
  /// With the given options (default: no weights, mean).
  explicit NLLLoss(const NLLLossOptions& options = {}) : options_(options) {}
  /// input (N, C) log-probabilities, target (N) int64.
  Tensor forward(const Tensor& input, const Tensor& target) const {
    return nll_loss(input, target, options_.weight_, options_.reduction_, options_.ignore_index_);
  }
  const NLLLossOptions& options() const { return options_; }   ///< The options.

 private:
  NLLLossOptions options_;
};

/// Options of BCELoss (torch::nn::BCELossOptions).
struct BCELossOptions {
  /// A weight broadcast with the loss, or undefined for none.
  BCELossOptions& weight(const Tensor& w) { weight_ = w; return *this; }
  /// How the elements combine (default kMean).
  BCELossOptions& reduction(Reduction r) { reduction_ = r; return *this; }
  Tensor weight_;                 ///< See weight().
  Reduction reduction_ = kMean;   ///< See reduction().
};
/// binary_cross_entropy(input, target, weight, reduction) (torch::nn::BCELoss).
class BCELoss : public detail::LossCall<BCELoss> {
 public:
  /// With the given options (default: no weight, mean).
  explicit BCELoss(const BCELossOptions& options = {}) : options_(options) {}
  /// input: probabilities in [0, 1]; target of its shape.
  Tensor forward(const Tensor& input, const Tensor& target) const {
    return binary_cross_entropy(input, target, options_.weight_, options_.reduction_);
  }
  const BCELossOptions& options() const { return options_; }   ///< The options.

 private:
  BCELossOptions options_;
};

/// Options of BCEWithLogitsLoss (torch::nn::BCEWithLogitsLossOptions).
struct BCEWithLogitsLossOptions {
  /// A weight broadcast with the loss, or undefined for none.
  BCEWithLogitsLossOptions& weight(const Tensor& w) { weight_ = w; return *this; }
  /// The weight of the positive term, broadcast along the classes (the last dim).
  BCEWithLogitsLossOptions& pos_weight(const Tensor& w) { pos_weight_ = w; return *this; }
  /// How the elements combine (default kMean).
  BCEWithLogitsLossOptions& reduction(Reduction r) { reduction_ = r; return *this; }
  Tensor weight_;                 ///< See weight().
  Tensor pos_weight_;             ///< See pos_weight().
  Reduction reduction_ = kMean;   ///< See reduction().
};
/// binary_cross_entropy_with_logits(input, target, weight, pos_weight, reduction)
/// (torch::nn::BCEWithLogitsLoss).
class BCEWithLogitsLoss : public detail::LossCall<BCEWithLogitsLoss> {
 public:
  /// With the given options (default: no weights, mean).
  explicit BCEWithLogitsLoss(const BCEWithLogitsLossOptions& options = {}) : options_(options) {}
  /// input: logits; target of its shape.
  Tensor forward(const Tensor& input, const Tensor& target) const {
    return binary_cross_entropy_with_logits(input, target, options_.weight_, options_.pos_weight_, options_.reduction_);
  }
  const BCEWithLogitsLossOptions& options() const { return options_; }   ///< The options.

 private:
  BCEWithLogitsLossOptions options_;
};

/// Options of L1Loss (torch::nn::L1LossOptions).
struct L1LossOptions {
  /// With the given reduction (implicit, as libtorch's: L1Loss(torch::kSum)).
  L1LossOptions(Reduction r = kMean) : reduction_(r) {}   // NOLINT
  /// How the elements combine (default kMean).
  L1LossOptions& reduction(Reduction r) { reduction_ = r; return *this; }
  Reduction reduction_;   ///< See reduction().
};
/// l1_loss(input, target, reduction) (torch::nn::L1Loss).
class L1Loss : public detail::LossCall<L1Loss> {
 public:
  /// With the given options (default: mean).
  explicit L1Loss(const L1LossOptions& options = {}) : options_(options) {}
  /// input and target of one shape.
  Tensor forward(const Tensor& input, const Tensor& target) const { return l1_loss(input, target, options_.reduction_); }
  const L1LossOptions& options() const { return options_; }   ///< The options.

 private:
  L1LossOptions options_;
};

/// Options of SmoothL1Loss (torch::nn::SmoothL1LossOptions).
struct SmoothL1LossOptions {
  /// With the given reduction (implicit, as libtorch's).
  SmoothL1LossOptions(Reduction r = kMean) : reduction_(r) {}   // NOLINT
  /// How the elements combine (default kMean).
  SmoothL1LossOptions& reduction(Reduction r) { reduction_ = r; return *this; }
  /// Where the loss turns from quadratic to linear (default 1).
  SmoothL1LossOptions& beta(double b) { beta_ = b; return *this; }
  Reduction reduction_;   ///< See reduction().
  double beta_ = 1.0;     ///< See beta().
};
/// smooth_l1_loss(input, target, reduction, beta) (torch::nn::SmoothL1Loss).
class SmoothL1Loss : public detail::LossCall<SmoothL1Loss> {
 public:
  /// With the given options (default: mean, beta 1).
  explicit SmoothL1Loss(const SmoothL1LossOptions& options = {}) : options_(options) {}
  /// input and target of one shape.
  Tensor forward(const Tensor& input, const Tensor& target) const {
    return smooth_l1_loss(input, target, options_.reduction_, options_.beta_);
  }
  const SmoothL1LossOptions& options() const { return options_; }   ///< The options.

 private:
  SmoothL1LossOptions options_;
};

/// Options of HuberLoss (torch::nn::HuberLossOptions).
struct HuberLossOptions {
  /// With the given reduction (implicit, as libtorch's).
  HuberLossOptions(Reduction r = kMean) : reduction_(r) {}   // NOLINT
  /// How the elements combine (default kMean).
  HuberLossOptions& reduction(Reduction r) { reduction_ = r; return *this; }
  /// Where the loss turns from quadratic to linear (default 1).
  HuberLossOptions& delta(double d) { delta_ = d; return *this; }
  Reduction reduction_;   ///< See reduction().
  double delta_ = 1.0;    ///< See delta().
};
/// huber_loss(input, target, reduction, delta) (torch::nn::HuberLoss).
class HuberLoss : public detail::LossCall<HuberLoss> {
 public:
  /// With the given options (default: mean, delta 1).
  explicit HuberLoss(const HuberLossOptions& options = {}) : options_(options) {}
  /// input and target of one shape.
  Tensor forward(const Tensor& input, const Tensor& target) const {
    return huber_loss(input, target, options_.reduction_, options_.delta_);
  }
  const HuberLossOptions& options() const { return options_; }   ///< The options.

 private:
  HuberLossOptions options_;
};

/// Options of KLDivLoss (torch::nn::KLDivLossOptions).
struct KLDivLossOptions {
  /// With the given reduction (implicit, as libtorch's).
  KLDivLossOptions(Reduction r = kMean) : reduction_(r) {}   // NOLINT
  /// libtorch's KLDivLossOptions(torch::kBatchMean).
  KLDivLossOptions(BatchMean) : batch_mean_(true) {}   // NOLINT
  /// How the elements combine (default kMean: over every element, as PyTorch's 'mean').
  KLDivLossOptions& reduction(Reduction r) { reduction_ = r; batch_mean_ = false; return *this; }
  /// The sum divided by the batch size (kBatchMean).
  KLDivLossOptions& reduction(BatchMean) { batch_mean_ = true; return *this; }
  /// Whether the target holds log-probabilities (default false).
  KLDivLossOptions& log_target(bool b) { log_target_ = b; return *this; }
  Reduction reduction_ = kMean;   ///< See reduction().
  bool batch_mean_ = false;       ///< See reduction(BatchMean).
  bool log_target_ = false;       ///< See log_target().
};
/// kl_div(input, target, reduction, log_target) (torch::nn::KLDivLoss).
class KLDivLoss : public detail::LossCall<KLDivLoss> {
 public:
  /// With the given options (default: mean over elements, probabilities as target).
  explicit KLDivLoss(const KLDivLossOptions& options = {}) : options_(options) {}
  /// input log-probabilities, target of input's shape.
  Tensor forward(const Tensor& input, const Tensor& target) const {
    if (options_.batch_mean_) return kl_div(input, target, kBatchMean, options_.log_target_);
    return kl_div(input, target, options_.reduction_, options_.log_target_);
  }
  const KLDivLossOptions& options() const { return options_; }   ///< The options.

 private:
  KLDivLossOptions options_;
};

/// Options of MarginRankingLoss (torch::nn::MarginRankingLossOptions).
struct MarginRankingLossOptions {
  /// The margin (default 0).
  MarginRankingLossOptions& margin(double m) { margin_ = m; return *this; }
  /// How the elements combine (default kMean).
  MarginRankingLossOptions& reduction(Reduction r) { reduction_ = r; return *this; }
  double margin_ = 0;             ///< See margin().
  Reduction reduction_ = kMean;   ///< See reduction().
};
/// margin_ranking_loss(input1, input2, target, margin, reduction) (torch::nn::MarginRankingLoss).
class MarginRankingLoss {
 public:
  /// With the given options (default: margin 0, mean).
  explicit MarginRankingLoss(const MarginRankingLossOptions& options = {}) : options_(options) {}
  /// x1, x2 and target (1 or -1) of one number of dims, broadcast.
  Tensor forward(const Tensor& input1, const Tensor& input2, const Tensor& target) const {
    return margin_ranking_loss(input1, input2, target, options_.margin_, options_.reduction_);
  }
  /// forward(input1, input2, target).
  Tensor operator()(const Tensor& input1, const Tensor& input2, const Tensor& target) const {
    return forward(input1, input2, target);
  }
  const MarginRankingLoss* operator->() const { return this; }   ///< libtorch's criterion->forward(...)
  const MarginRankingLossOptions& options() const { return options_; }   ///< The options.

 private:
  MarginRankingLossOptions options_;
};

/// Options of CosineEmbeddingLoss (torch::nn::CosineEmbeddingLossOptions).
struct CosineEmbeddingLossOptions {
  /// The margin of the dissimilar pairs (default 0).
  CosineEmbeddingLossOptions& margin(double m) { margin_ = m; return *this; }
  /// How the rows combine (default kMean).
  CosineEmbeddingLossOptions& reduction(Reduction r) { reduction_ = r; return *this; }
  double margin_ = 0;             ///< See margin().
  Reduction reduction_ = kMean;   ///< See reduction().
};
/// cosine_embedding_loss(input1, input2, target, margin, reduction) (torch::nn::CosineEmbeddingLoss).
class CosineEmbeddingLoss {
 public:
  /// With the given options (default: margin 0, mean).
  explicit CosineEmbeddingLoss(const CosineEmbeddingLossOptions& options = {}) : options_(options) {}
  /// x1, x2 (N, D) or (D), target (N) or 0-d of 1 (similar) and -1 (dissimilar).
  Tensor forward(const Tensor& input1, const Tensor& input2, const Tensor& target) const {
    return cosine_embedding_loss(input1, input2, target, options_.margin_, options_.reduction_);
  }
  /// forward(input1, input2, target).
  Tensor operator()(const Tensor& input1, const Tensor& input2, const Tensor& target) const {
    return forward(input1, input2, target);
  }
  const CosineEmbeddingLoss* operator->() const { return this; }   ///< libtorch's criterion->forward(...)
  const CosineEmbeddingLossOptions& options() const { return options_; }   ///< The options.

 private:
  CosineEmbeddingLossOptions options_;
};

}  // namespace nn
}  // namespace tg
