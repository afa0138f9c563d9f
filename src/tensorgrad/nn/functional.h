/// \file
/// nn/functional.h: tg::nn::functional, libtorch's torch::nn::functional: the ops of ops/ops.h with
/// their options objects, so that `namespace F = tg::nn::functional;` and `F::dropout(x,
/// F::DropoutFuncOptions().p(0.5).training(is_training()))` port unchanged. Each function is one call
/// of the op in ops/ops.h; the options are the layers' own where libtorch shares them.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tensorgrad/nn/activation.h"
#include "tensorgrad/nn/conv.h"
#include "tensorgrad/nn/layers.h"
#include "tensorgrad/nn/loss.h"
#include "tensorgrad/ops/ops.h"

namespace tg {
namespace nn {
namespace functional {

/// Options of pad (libtorch's PadFuncOptions): the pad list, then mode ("constant", "reflect",
/// "replicate", "circular") and value.
struct PadFuncOptions {
  /// pad()'s list: (left, right) pairs from the last dim backwards.
  PadFuncOptions(std::vector<int64_t> pad) : pad_(std::move(pad)) {}   // NOLINT: implicit, as libtorch's
  /// The mode (default "constant").
  PadFuncOptions& mode(std::string m) { mode_ = std::move(m); return *this; }
  /// The fill of mode "constant" (default 0).
  PadFuncOptions& value(double v) { value_ = v; return *this; }
  std::vector<int64_t> pad_;           ///< See the constructor.
  std::string mode_ = "constant";      ///< See mode().
  std::optional<double> value_;        ///< See value().
};
/// tg::pad(x, pad, mode, value) (torch::nn::functional::pad).
inline Tensor pad(const Tensor& x, const PadFuncOptions& options) {
  return tg::pad(x, options.pad_, options.mode_, options.value_);
}
/// Options of interpolate (libtorch's InterpolateFuncOptions): Upsample's.
using InterpolateFuncOptions = UpsampleOptions;
/// tg::interpolate(x, size, scale_factor, mode, align_corners) (torch::nn::functional::interpolate).
inline Tensor interpolate(const Tensor& x, const InterpolateFuncOptions& options) {
  return tg::interpolate(x, options.size_, options.scale_factor_, options.mode_, options.align_corners_);
}

/// Options of relu (libtorch's ReLUFuncOptions): inplace(true) writes the result into x.
struct ReLUFuncOptions {
  /// Whether to write the result into x and return x (default false).
  ReLUFuncOptions& inplace(bool i) { inplace_ = i; return *this; }
  bool inplace_ = false;   ///< See inplace().
};
/// max(x, 0) (torch::nn::functional::relu); with inplace(true) x itself, overwritten (copy_, so the
/// in-place rules apply: AutogradError for a leaf that requires grad).
inline Tensor relu(const Tensor& x, const ReLUFuncOptions& options = {}) {
  if (!options.inplace_) return tg::relu(x);
  Tensor out = x;
  out.copy_(tg::relu(x));
  return out;
}

/// Options of leaky_relu: LeakyReLUFuncOptions().negative_slope(0.2).
using LeakyReLUFuncOptions = LeakyReLUOptions;
/// x where x > 0, negative_slope x elsewhere (torch::nn::functional::leaky_relu).
inline Tensor leaky_relu(const Tensor& x, const LeakyReLUFuncOptions& options = {}) {
  return tg::leaky_relu(x, options.negative_slope_);
}

/// Options of gelu: GELUFuncOptions().approximate("tanh").
using GELUFuncOptions = GELUOptions;
/// x Phi(x) (torch::nn::functional::gelu).
inline Tensor gelu(const Tensor& x, const GELUFuncOptions& options = {}) { return tg::gelu(x, options.approximate_); }

/// x sigmoid(x) (torch::nn::functional::silu).
inline Tensor silu(const Tensor& x) { return tg::silu(x); }
/// tg::one_hot(x, num_classes) (torch::nn::functional::one_hot).
inline Tensor one_hot(const Tensor& x, int64_t num_classes = -1) { return tg::one_hot(x, num_classes); }

/// Options of dropout (libtorch's DropoutFuncOptions): p 0.5 and training true by default, as
/// libtorch's (pass .training(is_training()) from a module).
struct DropoutFuncOptions {
  /// The probability of zeroing an element (default 0.5).
  DropoutFuncOptions& p(double p) { p_ = p; return *this; }
  /// Whether to drop at all (default true).
  DropoutFuncOptions& training(bool t) { training_ = t; return *this; }
  /// Whether to write the result into x and return x (default false).
  DropoutFuncOptions& inplace(bool i) { inplace_ = i; return *this; }
  double p_ = 0.5;         ///< See p().
  bool training_ = true;   ///< See training().
  bool inplace_ = false;   ///< See inplace().
};
/// tg::dropout(x, p, training) (torch::nn::functional::dropout); with inplace(true) x itself,
/// overwritten (copy_, as F::relu's).
inline Tensor dropout(const Tensor& x, const DropoutFuncOptions& options = {}) {
  if (!options.inplace_) return tg::dropout(x, options.p_, options.training_);
  Tensor out = x;
  out.copy_(tg::dropout(x, options.p_, options.training_));
  return out;
}

/// Options of softmax: the dim, which a bare integer converts to (`F::softmax(x, 1)`).
struct SoftmaxFuncOptions {
  /// Over dim.
  SoftmaxFuncOptions(int64_t dim) : dim_(dim) {}   // NOLINT(google-explicit-constructor): as libtorch's
  int64_t dim_;   ///< See the constructor.
};
/// tg::softmax(x, dim) (torch::nn::functional::softmax).
inline Tensor softmax(const Tensor& x, const SoftmaxFuncOptions& options) { return tg::softmax(x, options.dim_); }

/// Options of log_softmax: the dim, which a bare integer converts to (`F::log_softmax(x, 1)`).
struct LogSoftmaxFuncOptions {
  /// Over dim.
  LogSoftmaxFuncOptions(int64_t dim) : dim_(dim) {}   // NOLINT(google-explicit-constructor): as libtorch's
  int64_t dim_;   ///< See the constructor.
};
/// tg::log_softmax(x, dim) (torch::nn::functional::log_softmax).
inline Tensor log_softmax(const Tensor& x, const LogSoftmaxFuncOptions& options) {
  return tg::log_softmax(x, options.dim_);
}

/// Options of max_pool2d: MaxPool2dFuncOptions(2).stride(2), the layer's.
using MaxPool2dFuncOptions = MaxPool2dOptions;
/// tg::max_pool2d with the options' sizes (torch::nn::functional::max_pool2d).
inline Tensor max_pool2d(const Tensor& x, const MaxPool2dFuncOptions& o) {
  return tg::max_pool2d(x, o.kernel_size_, o.stride_, o.padding_, o.dilation_, o.ceil_mode_);
}

/// Options of avg_pool2d: AvgPool2dFuncOptions(2).stride(2), the layer's.
using AvgPool2dFuncOptions = AvgPool2dOptions;
/// tg::avg_pool2d with the options' sizes (torch::nn::functional::avg_pool2d).
inline Tensor avg_pool2d(const Tensor& x, const AvgPool2dFuncOptions& o) {
  return tg::avg_pool2d(x, o.kernel_size_, o.stride_, o.padding_, o.count_include_pad_, o.ceil_mode_);
}

/// Options of adaptive_avg_pool2d: the output size, one number or {OH, OW}.
struct AdaptiveAvgPool2dFuncOptions {
  /// Windows covering the input to give output_size.
  AdaptiveAvgPool2dFuncOptions(IntArrayRef output_size)   // NOLINT(google-explicit-constructor): as libtorch's
      : output_size_(std::move(output_size)) {}
  IntArrayRef output_size_;   ///< See the constructor.
};
/// tg::adaptive_avg_pool2d (torch::nn::functional::adaptive_avg_pool2d).
inline Tensor adaptive_avg_pool2d(const Tensor& x, const AdaptiveAvgPool2dFuncOptions& o) {
  return tg::adaptive_avg_pool2d(x, o.output_size_);
}

/// Options of max_pool1d: MaxPool1dFuncOptions(3).stride(2), the layer's.
using MaxPool1dFuncOptions = MaxPool1dOptions;
/// tg::max_pool1d with the options' sizes (torch::nn::functional::max_pool1d).
inline Tensor max_pool1d(const Tensor& x, const MaxPool1dFuncOptions& o) {
  return tg::max_pool1d(x, o.kernel_size_, o.stride_, o.padding_, o.dilation_, o.ceil_mode_);
}

/// Options of avg_pool1d: AvgPool1dFuncOptions(3).stride(2), the layer's.
using AvgPool1dFuncOptions = AvgPool1dOptions;
/// tg::avg_pool1d with the options' sizes (torch::nn::functional::avg_pool1d).
inline Tensor avg_pool1d(const Tensor& x, const AvgPool1dFuncOptions& o) {
  return tg::avg_pool1d(x, o.kernel_size_, o.stride_, o.padding_, o.ceil_mode_, o.count_include_pad_);
}

/// Options of adaptive_max_pool2d: the output size, one number or {OH, OW}.
using AdaptiveMaxPool2dFuncOptions = AdaptiveAvgPool2dFuncOptions;
/// tg::adaptive_max_pool2d (torch::nn::functional::adaptive_max_pool2d, without indices).
inline Tensor adaptive_max_pool2d(const Tensor& x, const AdaptiveMaxPool2dFuncOptions& o) {
  return tg::adaptive_max_pool2d(x, o.output_size_);
}
/// Options of adaptive_avg_pool1d: the output size, one number.
using AdaptiveAvgPool1dFuncOptions = AdaptiveAvgPool2dFuncOptions;
/// tg::adaptive_avg_pool1d (torch::nn::functional::adaptive_avg_pool1d).
inline Tensor adaptive_avg_pool1d(const Tensor& x, const AdaptiveAvgPool1dFuncOptions& o) {
  return tg::adaptive_avg_pool1d(x, o.output_size_);
}
/// Options of adaptive_max_pool1d: the output size, one number.
using AdaptiveMaxPool1dFuncOptions = AdaptiveAvgPool2dFuncOptions;
/// tg::adaptive_max_pool1d (torch::nn::functional::adaptive_max_pool1d, without indices).
inline Tensor adaptive_max_pool1d(const Tensor& x, const AdaptiveMaxPool1dFuncOptions& o) {
  return tg::adaptive_max_pool1d(x, o.output_size_);
}

/// tg::prelu(x, weight) (torch::nn::functional::prelu).
inline Tensor prelu(const Tensor& x, const Tensor& weight) { return tg::prelu(x, weight); }

/// Options of instance_norm (libtorch's InstanceNormFuncOptions): the running statistics, weight and
/// bias tensors (none by default), use_input_stats, momentum and eps.
struct InstanceNormFuncOptions {
  /// Running mean (C), updated when use_input_stats.
  InstanceNormFuncOptions& running_mean(Tensor t) { running_mean_ = std::move(t); return *this; }
  /// Running variance (C), updated when use_input_stats.
  InstanceNormFuncOptions& running_var(Tensor t) { running_var_ = std::move(t); return *this; }
  /// Per-channel scale (C).
  InstanceNormFuncOptions& weight(Tensor t) { weight_ = std::move(t); return *this; }
  /// Per-channel shift (C).
  InstanceNormFuncOptions& bias(Tensor t) { bias_ = std::move(t); return *this; }
  /// Normalize with each instance's statistics (default true) rather than the running ones.
  InstanceNormFuncOptions& use_input_stats(bool u) { use_input_stats_ = u; return *this; }
  /// The weight of the batch's statistics in the running ones (default 0.1).
  InstanceNormFuncOptions& momentum(double m) { momentum_ = m; return *this; }
  /// Added to the variance (default 1e-5).
  InstanceNormFuncOptions& eps(double e) { eps_ = e; return *this; }
  Tensor running_mean_;           ///< See running_mean().
  Tensor running_var_;            ///< See running_var().
  Tensor weight_;                 ///< See weight().
  Tensor bias_;                   ///< See bias().
  bool use_input_stats_ = true;   ///< See use_input_stats().
  double momentum_ = 0.1;         ///< See momentum().
  double eps_ = 1e-5;             ///< See eps().
};
/// tg::instance_norm with the options (torch::nn::functional::instance_norm).
inline Tensor instance_norm(const Tensor& x, const InstanceNormFuncOptions& o = {}) {
  return tg::instance_norm(x, o.running_mean_, o.running_var_, o.weight_, o.bias_, o.use_input_stats_, o.momentum_,
                           o.eps_);
}

/// Options of conv_transpose1d (libtorch's ConvTranspose1dFuncOptions): the bias tensor, stride,
/// padding, output_padding, groups and dilation, each size one number.
struct ConvTranspose1dFuncOptions {
  /// The bias tensor (out_channels); none by default.
  ConvTranspose1dFuncOptions& bias(Tensor b) { bias_ = std::move(b); return *this; }
  /// Step between input positions in the output (default 1).
  ConvTranspose1dFuncOptions& stride(int64_t s) { stride_ = s; return *this; }
  /// Cropped from each side of the output (default 0).
  ConvTranspose1dFuncOptions& padding(int64_t p) { padding_ = p; return *this; }
  /// Added to one side of the output (default 0): below the stride or the dilation.
  ConvTranspose1dFuncOptions& output_padding(int64_t p) { output_padding_ = p; return *this; }
  /// Channel groups (default 1).
  ConvTranspose1dFuncOptions& groups(int64_t g) { groups_ = g; return *this; }
  /// Spacing between kernel taps (default 1).
  ConvTranspose1dFuncOptions& dilation(int64_t d) { dilation_ = d; return *this; }
  Tensor bias_;                  ///< See bias().
  int64_t stride_ = 1;           ///< See stride().
  int64_t padding_ = 0;          ///< See padding().
  int64_t output_padding_ = 0;   ///< See output_padding().
  int64_t groups_ = 1;           ///< See groups().
  int64_t dilation_ = 1;         ///< See dilation().
};
/// tg::conv_transpose1d with the options (torch::nn::functional::conv_transpose1d).
inline Tensor conv_transpose1d(const Tensor& x, const Tensor& weight, const ConvTranspose1dFuncOptions& o = {}) {
  return tg::conv_transpose1d(x, weight, o.bias_, o.stride_, o.padding_, o.output_padding_, o.groups_, o.dilation_);
}

/// Options of conv2d (libtorch's Conv2dFuncOptions): stride, padding, dilation, groups, and the bias
/// tensor.
struct Conv2dFuncOptions {
  /// The bias tensor (out_channels); none by default.
  Conv2dFuncOptions& bias(Tensor b) { bias_ = std::move(b); return *this; }
  /// Step between windows (default 1): one number or {h, w}.
  Conv2dFuncOptions& stride(IntArrayRef s) { stride_ = std::move(s); return *this; }
  /// Zero padding on each side (default 0).
  Conv2dFuncOptions& padding(IntArrayRef p) { padding_ = std::move(p); return *this; }
  /// Spacing between kernel taps (default 1).
  Conv2dFuncOptions& dilation(IntArrayRef d) { dilation_ = std::move(d); return *this; }
  /// Channel groups (default 1).
  Conv2dFuncOptions& groups(int64_t g) { groups_ = g; return *this; }
  Tensor bias_;                ///< See bias().
  IntArrayRef stride_{1};      ///< See stride().
  IntArrayRef padding_{0};     ///< See padding().
  IntArrayRef dilation_{1};    ///< See dilation().
  int64_t groups_ = 1;         ///< See groups().
};
/// tg::conv2d with the options (torch::nn::functional::conv2d).
inline Tensor conv2d(const Tensor& x, const Tensor& weight, const Conv2dFuncOptions& o = {}) {
  return tg::conv2d(x, weight, o.bias_, o.stride_, o.padding_, o.dilation_, o.groups_);
}

/// Options of conv3d (libtorch's Conv3dFuncOptions): conv2d's, each size one number or {d, h, w}.
using Conv3dFuncOptions = Conv2dFuncOptions;
/// tg::conv3d with the options (torch::nn::functional::conv3d).
inline Tensor conv3d(const Tensor& x, const Tensor& weight, const Conv3dFuncOptions& o = {}) {
  return tg::conv3d(x, weight, o.bias_, o.stride_, o.padding_, o.dilation_, o.groups_);
}

/// Options of conv_transpose3d (libtorch's ConvTranspose3dFuncOptions): the bias tensor, stride,
/// padding, output_padding, groups and dilation, each size one number or {d, h, w}.
struct ConvTranspose3dFuncOptions {
  /// The bias tensor (out_channels); none by default.
  ConvTranspose3dFuncOptions& bias(Tensor b) { bias_ = std::move(b); return *this; }
  /// Step between input positions in the output (default 1).
  ConvTranspose3dFuncOptions& stride(IntArrayRef s) { stride_ = std::move(s); return *this; }
  /// Cropped from each side of the output (default 0).
  ConvTranspose3dFuncOptions& padding(IntArrayRef p) { padding_ = std::move(p); return *this; }
  /// Added to one side of the output (default 0): below the stride or the dilation.
  ConvTranspose3dFuncOptions& output_padding(IntArrayRef p) { output_padding_ = std::move(p); return *this; }
  /// Channel groups (default 1).
  ConvTranspose3dFuncOptions& groups(int64_t g) { groups_ = g; return *this; }
  /// Spacing between kernel taps (default 1).
  ConvTranspose3dFuncOptions& dilation(IntArrayRef d) { dilation_ = std::move(d); return *this; }
  Tensor bias_;                     ///< See bias().
  IntArrayRef stride_{1};           ///< See stride().
  IntArrayRef padding_{0};          ///< See padding().
  IntArrayRef output_padding_{0};   ///< See output_padding().
  int64_t groups_ = 1;              ///< See groups().
  IntArrayRef dilation_{1};         ///< See dilation().
};
/// tg::conv_transpose3d with the options (torch::nn::functional::conv_transpose3d).
inline Tensor conv_transpose3d(const Tensor& x, const Tensor& weight, const ConvTranspose3dFuncOptions& o = {}) {
  return tg::conv_transpose3d(x, weight, o.bias_, o.stride_, o.padding_, o.output_padding_, o.groups_, o.dilation_);
}

/// Options of max_pool3d: MaxPool3dFuncOptions(2).stride(2), the layer's.
using MaxPool3dFuncOptions = MaxPool3dOptions;
/// tg::max_pool3d with the options' sizes (torch::nn::functional::max_pool3d).
inline Tensor max_pool3d(const Tensor& x, const MaxPool3dFuncOptions& o) {
  return tg::max_pool3d(x, o.kernel_size_, o.stride_, o.padding_, o.dilation_, o.ceil_mode_);
}
/// Options of avg_pool3d: AvgPool3dFuncOptions(2).stride(2), the layer's.
using AvgPool3dFuncOptions = AvgPool3dOptions;
/// tg::avg_pool3d with the options' sizes (torch::nn::functional::avg_pool3d).
inline Tensor avg_pool3d(const Tensor& x, const AvgPool3dFuncOptions& o) {
  return tg::avg_pool3d(x, o.kernel_size_, o.stride_, o.padding_, o.ceil_mode_, o.count_include_pad_);
}
/// Options of adaptive_avg_pool3d: the output size, one number or {OD, OH, OW}.
using AdaptiveAvgPool3dFuncOptions = AdaptiveAvgPool2dFuncOptions;
/// tg::adaptive_avg_pool3d (torch::nn::functional::adaptive_avg_pool3d).
inline Tensor adaptive_avg_pool3d(const Tensor& x, const AdaptiveAvgPool3dFuncOptions& o) {
  return tg::adaptive_avg_pool3d(x, o.output_size_);
}
/// Options of adaptive_max_pool3d: the output size, one number or {OD, OH, OW}.
using AdaptiveMaxPool3dFuncOptions = AdaptiveAvgPool2dFuncOptions;
/// tg::adaptive_max_pool3d (torch::nn::functional::adaptive_max_pool3d, without indices).
inline Tensor adaptive_max_pool3d(const Tensor& x, const AdaptiveMaxPool3dFuncOptions& o) {
  return tg::adaptive_max_pool3d(x, o.output_size_);
}

/// x . weight^T + bias (torch::nn::functional::linear).
inline Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor()) {
  return tg::linear(x, weight, bias);
}

/// Options of cross_entropy: the layer's (weight, reduction, ignore_index, label_smoothing).
using CrossEntropyFuncOptions = CrossEntropyLossOptions;
/// tg::cross_entropy with the options (torch::nn::functional::cross_entropy).
inline Tensor cross_entropy(const Tensor& logits, const Tensor& target, const CrossEntropyFuncOptions& o = {}) {
  return tg::cross_entropy(logits, target, o.weight_, o.reduction_, o.ignore_index_, o.label_smoothing_);
}

/// Options of mse_loss: the reduction (default the mean).
struct MSELossFuncOptions {
  /// Sets how the elements combine.
  MSELossFuncOptions& reduction(Reduction r) { reduction_ = r; return *this; }
  Reduction reduction_ = Reduction::Mean;   ///< See reduction().
};
/// tg::mse_loss with the options (torch::nn::functional::mse_loss).
inline Tensor mse_loss(const Tensor& input, const Tensor& target, const MSELossFuncOptions& o = {}) {
  return tg::mse_loss(input, target, o.reduction_);
}

/// Options of hinge_embedding_loss: the module's (margin, reduction).
using HingeEmbeddingLossFuncOptions = HingeEmbeddingLossOptions;
/// tg::hinge_embedding_loss with the options (torch::nn::functional::hinge_embedding_loss).
inline Tensor hinge_embedding_loss(const Tensor& input, const Tensor& target, const HingeEmbeddingLossFuncOptions& o = {}) {
  return tg::hinge_embedding_loss(input, target, o.margin_, o.reduction_);
}
/// Options of triplet_margin_loss: the module's (margin, p, eps, swap, reduction).
using TripletMarginLossFuncOptions = TripletMarginLossOptions;
/// tg::triplet_margin_loss with the options (torch::nn::functional::triplet_margin_loss).
inline Tensor triplet_margin_loss(const Tensor& anchor, const Tensor& positive, const Tensor& negative,
                                  const TripletMarginLossFuncOptions& o = {}) {
  return tg::triplet_margin_loss(anchor, positive, negative, o.margin_, o.p_, o.eps_, o.swap_, o.reduction_);
}
/// Options of multi_margin_loss: the module's (p, margin, weight, reduction).
using MultiMarginLossFuncOptions = MultiMarginLossOptions;
/// tg::multi_margin_loss with the options (torch::nn::functional::multi_margin_loss).
inline Tensor multi_margin_loss(const Tensor& input, const Tensor& target, const MultiMarginLossFuncOptions& o = {}) {
  return tg::multi_margin_loss(input, target, o.p_, o.margin_, o.weight_, o.reduction_);
}
/// Options of poisson_nll_loss: the module's (log_input, full, eps, reduction).
using PoissonNLLLossFuncOptions = PoissonNLLLossOptions;
/// tg::poisson_nll_loss with the options (torch::nn::functional::poisson_nll_loss).
inline Tensor poisson_nll_loss(const Tensor& input, const Tensor& target, const PoissonNLLLossFuncOptions& o = {}) {
  return tg::poisson_nll_loss(input, target, o.log_input_, o.full_, o.eps_, o.reduction_);
}
/// Options of gaussian_nll_loss: the module's (full, eps, reduction).
using GaussianNLLLossFuncOptions = GaussianNLLLossOptions;
/// tg::gaussian_nll_loss with the options (torch::nn::functional::gaussian_nll_loss).
inline Tensor gaussian_nll_loss(const Tensor& input, const Tensor& target, const Tensor& var,
                                const GaussianNLLLossFuncOptions& o = {}) {
  return tg::gaussian_nll_loss(input, target, var, o.full_, o.eps_, o.reduction_);
}
/// Options of ctc_loss: the module's (blank, reduction, zero_infinity).
using CTCLossFuncOptions = CTCLossOptions;
/// tg::ctc_loss with the options (torch::nn::functional::ctc_loss).
inline Tensor ctc_loss(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                       const Tensor& target_lengths, const CTCLossFuncOptions& o = {}) {
  return tg::ctc_loss(log_probs, targets, input_lengths, target_lengths, o.blank_, o.reduction_, o.zero_infinity_);
}
/// Options of soft_margin_loss: the module's (reduction).
using SoftMarginLossFuncOptions = SoftMarginLossOptions;
/// tg::soft_margin_loss with the options (torch::nn::functional::soft_margin_loss).
inline Tensor soft_margin_loss(const Tensor& input, const Tensor& target, const SoftMarginLossFuncOptions& o = {}) {
  return tg::soft_margin_loss(input, target, o.reduction_);
}
/// Options of multilabel_soft_margin_loss: the module's (weight, reduction).
using MultilabelSoftMarginLossFuncOptions = MultiLabelSoftMarginLossOptions;
/// tg::multilabel_soft_margin_loss with the options (torch::nn::functional::multilabel_soft_margin_loss).
inline Tensor multilabel_soft_margin_loss(const Tensor& input, const Tensor& target,
                                          const MultilabelSoftMarginLossFuncOptions& o = {}) {
  return tg::multilabel_soft_margin_loss(input, target, o.weight_, o.reduction_);
}
/// Options of multilabel_margin_loss: the module's (reduction).
using MultilabelMarginLossFuncOptions = MultiLabelMarginLossOptions;
/// tg::multilabel_margin_loss with the options (torch::nn::functional::multilabel_margin_loss).
inline Tensor multilabel_margin_loss(const Tensor& input, const Tensor& target,
                                     const MultilabelMarginLossFuncOptions& o = {}) {
  return tg::multilabel_margin_loss(input, target, o.reduction_);
}
/// Options of triplet_margin_with_distance_loss: the module's (distance_function, margin, swap, reduction).
using TripletMarginWithDistanceLossFuncOptions = TripletMarginWithDistanceLossOptions;
/// tg::triplet_margin_with_distance_loss with the options
/// (torch::nn::functional::triplet_margin_with_distance_loss).
inline Tensor triplet_margin_with_distance_loss(const Tensor& anchor, const Tensor& positive, const Tensor& negative,
                                                const TripletMarginWithDistanceLossFuncOptions& o = {}) {
  return tg::triplet_margin_with_distance_loss(anchor, positive, negative, o.distance_function_, o.margin_, o.swap_,
                                               o.reduction_);
}

}  // namespace functional
}  // namespace nn
}  // namespace tg
