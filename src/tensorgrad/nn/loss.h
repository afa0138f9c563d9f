/// \file
/// nn/loss.h: the loss objects of torch::nn beside CrossEntropyLoss and MSELoss (nn/layers.h): NLLLoss,
/// BCELoss, BCEWithLogitsLoss, L1Loss, SmoothL1Loss, HuberLoss, KLDivLoss, MarginRankingLoss,
/// CosineEmbeddingLoss, HingeEmbeddingLoss, TripletMarginLoss, MultiMarginLoss, PoissonNLLLoss,
/// GaussianNLLLoss, CTCLoss, SoftMarginLoss, MultiLabelSoftMarginLoss, MultiLabelMarginLoss and
/// TripletMarginWithDistanceLoss, each with libtorch's *Options (the
/// reduction constants tg::kNone, tg::kMean, tg::kSum are in ops/ops.h). Like CrossEntropyLoss they are not
/// Modules (they hold no parameters or buffers: a weight is an option); they are called as
/// `criterion(input, target)` or, in libtorch's spelling, `criterion->forward(input, target)`. The
/// functions they call: ops/loss.cpp and ops/ctc_loss.cpp.
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

/// Options of HingeEmbeddingLoss (torch::nn::HingeEmbeddingLossOptions).
struct HingeEmbeddingLossOptions {
  /// The margin of the dissimilar pairs (default 1).
  HingeEmbeddingLossOptions& margin(double m) { margin_ = m; return *this; }
  /// How the elements combine (default kMean).
  HingeEmbeddingLossOptions& reduction(Reduction r) { reduction_ = r; return *this; }
  double margin_ = 1.0;           ///< See margin().
  Reduction reduction_ = kMean;   ///< See reduction().
};
/// hinge_embedding_loss(input, target, margin, reduction) (torch::nn::HingeEmbeddingLoss).
class HingeEmbeddingLoss : public detail::LossCall<HingeEmbeddingLoss> {
 public:
  /// With the given options (default: margin 1, mean).
  explicit HingeEmbeddingLoss(const HingeEmbeddingLossOptions& options = {}) : options_(options) {}
  /// input (distances) and target (1 or -1), broadcast.
  Tensor forward(const Tensor& input, const Tensor& target) const {
    return hinge_embedding_loss(input, target, options_.margin_, options_.reduction_);
  }
  const HingeEmbeddingLossOptions& options() const { return options_; }   ///< The options.

 private:
  HingeEmbeddingLossOptions options_;
};

/// Options of TripletMarginLoss (torch::nn::TripletMarginLossOptions).
struct TripletMarginLossOptions {
  /// The margin (default 1; must be positive).
  TripletMarginLossOptions& margin(double m) { margin_ = m; return *this; }
  /// The norm degree of the pairwise distance (default 2).
  TripletMarginLossOptions& p(double v) { p_ = v; return *this; }
  /// Added to the differences before the norm (default 1e-6).
  TripletMarginLossOptions& eps(double e) { eps_ = e; return *this; }
  /// Whether to use the distance of positive to negative when it is smaller (default false).
  TripletMarginLossOptions& swap(bool s) { swap_ = s; return *this; }
  /// How the rows combine (default kMean).
  TripletMarginLossOptions& reduction(Reduction r) { reduction_ = r; return *this; }
  double margin_ = 1.0;           ///< See margin().
  double p_ = 2.0;                ///< See p().
  double eps_ = 1e-6;             ///< See eps().
  bool swap_ = false;             ///< See swap().
  Reduction reduction_ = kMean;   ///< See reduction().
};
/// triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap, reduction)
/// (torch::nn::TripletMarginLoss).
class TripletMarginLoss {
 public:
  /// With the given options (default: margin 1, p 2, eps 1e-6, no swap, mean).
  explicit TripletMarginLoss(const TripletMarginLossOptions& options = {}) : options_(options) {}
  /// anchor, positive, negative (N, D) or (D).
  Tensor forward(const Tensor& anchor, const Tensor& positive, const Tensor& negative) const {
    return triplet_margin_loss(anchor, positive, negative, options_.margin_, options_.p_, options_.eps_, options_.swap_,
                               options_.reduction_);
  }
  /// forward(anchor, positive, negative).
  Tensor operator()(const Tensor& anchor, const Tensor& positive, const Tensor& negative) const {
    return forward(anchor, positive, negative);
  }
  const TripletMarginLoss* operator->() const { return this; }   ///< libtorch's criterion->forward(...)
  const TripletMarginLossOptions& options() const { return options_; }   ///< The options.

 private:
  TripletMarginLossOptions options_;
};

/// Options of MultiMarginLoss (torch::nn::MultiMarginLossOptions).
struct MultiMarginLossOptions {
  /// The exponent of each term, 1 or 2 (default 1).
  MultiMarginLossOptions& p(int64_t v) { p_ = v; return *this; }
  /// The margin (default 1).
  MultiMarginLossOptions& margin(double m) { margin_ = m; return *this; }
  /// Per-class weights (C), or undefined for none.
  MultiMarginLossOptions& weight(const Tensor& w) { weight_ = w; return *this; }
  /// How the rows combine (default kMean).
  MultiMarginLossOptions& reduction(Reduction r) { reduction_ = r; return *this; }
  int64_t p_ = 1;                 ///< See p().
  double margin_ = 1.0;           ///< See margin().
  Tensor weight_;                 ///< See weight().
  Reduction reduction_ = kMean;   ///< See reduction().
};
/// multi_margin_loss(input, target, p, margin, weight, reduction) (torch::nn::MultiMarginLoss).
class MultiMarginLoss : public detail::LossCall<MultiMarginLoss> {
 public:
  /// With the given options (default: p 1, margin 1, no weights, mean).
  explicit MultiMarginLoss(const MultiMarginLossOptions& options = {}) : options_(options) {}
  /// input (N, C) or (C), target (N) or () int64.
  Tensor forward(const Tensor& input, const Tensor& target) const {
    return multi_margin_loss(input, target, options_.p_, options_.margin_, options_.weight_, options_.reduction_);
  }
  const MultiMarginLossOptions& options() const { return options_; }   ///< The options.

 private:
  MultiMarginLossOptions options_;
};

/// Options of PoissonNLLLoss (torch::nn::PoissonNLLLossOptions).
struct PoissonNLLLossOptions {
  /// Whether the input is the log of the rate (default true).
  PoissonNLLLossOptions& log_input(bool b) { log_input_ = b; return *this; }
  /// Whether to add Stirling's approximation of log(target!) (default false).
  PoissonNLLLossOptions& full(bool b) { full_ = b; return *this; }
  /// Added to the rate before its log when log_input is false (default 1e-8).
  PoissonNLLLossOptions& eps(double e) { eps_ = e; return *this; }
  /// How the elements combine (default kMean).
  PoissonNLLLossOptions& reduction(Reduction r) { reduction_ = r; return *this; }
  bool log_input_ = true;         ///< See log_input().
  bool full_ = false;             ///< See full().
  double eps_ = 1e-8;             ///< See eps().
  Reduction reduction_ = kMean;   ///< See reduction().
};
/// poisson_nll_loss(input, target, log_input, full, eps, reduction) (torch::nn::PoissonNLLLoss).
class PoissonNLLLoss : public detail::LossCall<PoissonNLLLoss> {
 public:
  /// With the given options (default: log input, not full, eps 1e-8, mean).
  explicit PoissonNLLLoss(const PoissonNLLLossOptions& options = {}) : options_(options) {}
  /// input (rates or log-rates) and target (counts), broadcast.
  Tensor forward(const Tensor& input, const Tensor& target) const {
    return poisson_nll_loss(input, target, options_.log_input_, options_.full_, options_.eps_, options_.reduction_);
  }
  const PoissonNLLLossOptions& options() const { return options_; }   ///< The options.

 private:
  PoissonNLLLossOptions options_;
};

/// Options of GaussianNLLLoss (torch::nn::GaussianNLLLossOptions).
struct GaussianNLLLossOptions {
  /// Whether to add the constant 0.5 log(2 pi) (default false).
  GaussianNLLLossOptions& full(bool b) { full_ = b; return *this; }
  /// The smallest variance used (default 1e-6).
  GaussianNLLLossOptions& eps(double e) { eps_ = e; return *this; }
  /// How the elements combine (default kMean).
  GaussianNLLLossOptions& reduction(Reduction r) { reduction_ = r; return *this; }
  bool full_ = false;             ///< See full().
  double eps_ = 1e-6;             ///< See eps().
  Reduction reduction_ = kMean;   ///< See reduction().
};
/// gaussian_nll_loss(input, target, var, full, eps, reduction) (torch::nn::GaussianNLLLoss).
class GaussianNLLLoss {
 public:
  /// With the given options (default: not full, eps 1e-6, mean).
  explicit GaussianNLLLoss(const GaussianNLLLossOptions& options = {}) : options_(options) {}
  /// input (means), target and var (variances) as gaussian_nll_loss takes them.
  Tensor forward(const Tensor& input, const Tensor& target, const Tensor& var) const {
    return gaussian_nll_loss(input, target, var, options_.full_, options_.eps_, options_.reduction_);
  }
  /// forward(input, target, var).
  Tensor operator()(const Tensor& input, const Tensor& target, const Tensor& var) const {
    return forward(input, target, var);
  }
  const GaussianNLLLoss* operator->() const { return this; }   ///< libtorch's criterion->forward(...)
  const GaussianNLLLossOptions& options() const { return options_; }   ///< The options.

 private:
  GaussianNLLLossOptions options_;
};

/// Options of CTCLoss (torch::nn::CTCLossOptions).
struct CTCLossOptions {
  /// The blank label (default 0).
  CTCLossOptions& blank(int64_t b) { blank_ = b; return *this; }
  /// How the batch entries combine (default kMean: each loss divided by its target length, then averaged).
  CTCLossOptions& reduction(Reduction r) { reduction_ = r; return *this; }
  /// Whether an impossible alignment gives 0 (and a zero gradient) instead of inf (default false).
  CTCLossOptions& zero_infinity(bool z) { zero_infinity_ = z; return *this; }
  int64_t blank_ = 0;             ///< See blank().
  Reduction reduction_ = kMean;   ///< See reduction().
  bool zero_infinity_ = false;    ///< See zero_infinity().
};
/// ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, reduction, zero_infinity)
/// (torch::nn::CTCLoss).
class CTCLoss {
 public:
  /// With the given options (default: blank 0, mean, zero_infinity false).
  explicit CTCLoss(const CTCLossOptions& options = {}) : options_(options) {}
  /// log_probs (T, N, C) or (T, C), targets (N, S) or concatenated, lengths (N) int64.
  Tensor forward(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                 const Tensor& target_lengths) const {
    return ctc_loss(log_probs, targets, input_lengths, target_lengths, options_.blank_, options_.reduction_,
                    options_.zero_infinity_);
  }
  /// forward(log_probs, targets, input_lengths, target_lengths).
  Tensor operator()(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                    const Tensor& target_lengths) const {
    return forward(log_probs, targets, input_lengths, target_lengths);
  }
  const CTCLoss* operator->() const { return this; }   ///< libtorch's criterion->forward(...)
  const CTCLossOptions& options() const { return options_; }   ///< The options.

 private:
  CTCLossOptions options_;
};

/// Options of SoftMarginLoss (torch::nn::SoftMarginLossOptions).
struct SoftMarginLossOptions {
  /// How the elements combine (default kMean).
  SoftMarginLossOptions& reduction(Reduction r) { reduction_ = r; return *this; }
  Reduction reduction_ = kMean;   ///< See reduction().
};
/// soft_margin_loss(input, target, reduction) (torch::nn::SoftMarginLoss).
class SoftMarginLoss : public detail::LossCall<SoftMarginLoss> {
 public:
  /// With the given options (default: mean).
  explicit SoftMarginLoss(const SoftMarginLossOptions& options = {}) : options_(options) {}
  /// input and target (1 or -1), broadcast.
  Tensor forward(const Tensor& input, const Tensor& target) const {
    return soft_margin_loss(input, target, options_.reduction_);
  }
  const SoftMarginLossOptions& options() const { return options_; }   ///< The options.

 private:
  SoftMarginLossOptions options_;
};

/// Options of MultiLabelSoftMarginLoss (torch::nn::MultiLabelSoftMarginLossOptions).
struct MultiLabelSoftMarginLossOptions {
  /// Per-class weights broadcast with the loss (C), or undefined for none.
  MultiLabelSoftMarginLossOptions& weight(const Tensor& w) { weight_ = w; return *this; }
  /// How the rows combine (default kMean).
  MultiLabelSoftMarginLossOptions& reduction(Reduction r) { reduction_ = r; return *this; }
  Tensor weight_;                 ///< See weight().
  Reduction reduction_ = kMean;   ///< See reduction().
};
/// multilabel_soft_margin_loss(input, target, weight, reduction) (torch::nn::MultiLabelSoftMarginLoss).
class MultiLabelSoftMarginLoss : public detail::LossCall<MultiLabelSoftMarginLoss> {
 public:
  /// With the given options (default: no weights, mean).
  explicit MultiLabelSoftMarginLoss(const MultiLabelSoftMarginLossOptions& options = {}) : options_(options) {}
  /// input (N, C) or (C) logits, target of its shape (0 or 1 per class).
  Tensor forward(const Tensor& input, const Tensor& target) const {
    return multilabel_soft_margin_loss(input, target, options_.weight_, options_.reduction_);
  }
  const MultiLabelSoftMarginLossOptions& options() const { return options_; }   ///< The options.

 private:
  MultiLabelSoftMarginLossOptions options_;
};

/// Options of MultiLabelMarginLoss (torch::nn::MultiLabelMarginLossOptions).
struct MultiLabelMarginLossOptions {
  /// How the rows combine (default kMean).
  MultiLabelMarginLossOptions& reduction(Reduction r) { reduction_ = r; return *this; }
  Reduction reduction_ = kMean;   ///< See reduction().
};
/// multilabel_margin_loss(input, target, reduction) (torch::nn::MultiLabelMarginLoss).
class MultiLabelMarginLoss : public detail::LossCall<MultiLabelMarginLoss> {
 public:
  /// With the given options (default: mean).
  explicit MultiLabelMarginLoss(const MultiLabelMarginLossOptions& options = {}) : options_(options) {}
  /// input (N, C) or (C), target int64 of its shape: class indices until the first -1.
  Tensor forward(const Tensor& input, const Tensor& target) const {
    return multilabel_margin_loss(input, target, options_.reduction_);
  }
  const MultiLabelMarginLossOptions& options() const { return options_; }   ///< The options.

 private:
  MultiLabelMarginLossOptions options_;
};

/// Options of TripletMarginWithDistanceLoss (torch::nn::TripletMarginWithDistanceLossOptions).
struct TripletMarginWithDistanceLossOptions {
  /// The type of distance_function (libtorch's spelling).
  using distance_function_t = DistanceFunction;
  /// The distance of two batches of points (default: empty, meaning pairwise_distance with p 2 and eps
  /// 1e-6, as libtorch's std::nullopt).
  TripletMarginWithDistanceLossOptions& distance_function(const DistanceFunction& f) {
    distance_function_ = f;
    return *this;
  }
  /// The margin (default 1; must be positive).
  TripletMarginWithDistanceLossOptions& margin(double m) { margin_ = m; return *this; }
  /// Whether to use the distance of positive to negative when it is smaller (default false).
  TripletMarginWithDistanceLossOptions& swap(bool s) { swap_ = s; return *this; }
  /// How the rows combine (default kMean).
  TripletMarginWithDistanceLossOptions& reduction(Reduction r) { reduction_ = r; return *this; }
  DistanceFunction distance_function_;   ///< See distance_function().
  double margin_ = 1.0;                  ///< See margin().
  bool swap_ = false;                    ///< See swap().
  Reduction reduction_ = kMean;          ///< See reduction().
};
/// triplet_margin_with_distance_loss(anchor, positive, negative, distance_function, margin, swap, reduction)
/// (torch::nn::TripletMarginWithDistanceLoss).
class TripletMarginWithDistanceLoss {
 public:
  /// With the given options (default: pairwise_distance, margin 1, no swap, mean); Error unless the
  /// margin is positive (as PyTorch's constructor).
  explicit TripletMarginWithDistanceLoss(const TripletMarginWithDistanceLossOptions& options = {})
      : options_(options) {
    TG_CHECK(options_.margin_ > 0, Error, "TripletMarginWithDistanceLoss: expected margin to be greater than 0, got ",
             options_.margin_, " instead");
  }
  /// anchor, positive, negative of one number of dims, as the distance function takes them.
  Tensor forward(const Tensor& anchor, const Tensor& positive, const Tensor& negative) const {
    return triplet_margin_with_distance_loss(anchor, positive, negative, options_.distance_function_,
                                             options_.margin_, options_.swap_, options_.reduction_);
  }
  /// forward(anchor, positive, negative).
  Tensor operator()(const Tensor& anchor, const Tensor& positive, const Tensor& negative) const {
    return forward(anchor, positive, negative);
  }
  const TripletMarginWithDistanceLoss* operator->() const { return this; }   ///< libtorch's criterion->forward(...)
  const TripletMarginWithDistanceLossOptions& options() const { return options_; }   ///< The options.

 private:
  TripletMarginWithDistanceLossOptions options_;
};

}  // namespace nn
}  // namespace tg
