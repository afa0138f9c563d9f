/// \file
/// nn/conv.h: the convolution and pooling layers as Modules, with PyTorch's names, options and init:
/// Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d, MaxPool1d, MaxPool2d,
/// MaxPool3d, AvgPool1d, AvgPool2d, AvgPool3d, AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveAvgPool3d,
/// AdaptiveMaxPool1d, AdaptiveMaxPool2d, AdaptiveMaxPool3d. Each forward is one call into ops/ops.h (ops/conv.cpp,
/// ops/pooling.cpp, ops/conv3d.cpp). The normalization layers are in nn/norm.h, the padding layers in
/// nn/padding.h.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tensorgrad/nn/module.h"
#include "tensorgrad/ops/ops.h"

namespace tg {
namespace nn {

/// The settings every convolution's options share (Conv2dOptions, ConvTranspose2dOptions): each
/// setter returns the derived options, so that chains keep their type. A size is one number (both
/// spatial dims) or {h, w}.
template <class Self>
struct ConvOptionsBase {
  /// Step between windows (default 1).
  Self& stride(int64_t s) { stride_ = {s}; return self(); }
  /// Step between windows, {h, w}.
  Self& stride(const std::vector<int64_t>& s) { stride_ = s; return self(); }
  /// Zero padding on each side (default 0).
  Self& padding(int64_t p) { padding_ = {p}; return self(); }
  /// Zero padding on each side, {h, w}.
  Self& padding(const std::vector<int64_t>& p) { padding_ = p; return self(); }
  /// Spacing between kernel taps (default 1).
  Self& dilation(int64_t d) { dilation_ = {d}; return self(); }
  /// Spacing between kernel taps, {h, w}.
  Self& dilation(const std::vector<int64_t>& d) { dilation_ = d; return self(); }
  /// Channel groups (default 1): in and out channels must both be divisible by it.
  Self& groups(int64_t g) { groups_ = g; return self(); }
  /// Whether the layer has a bias (default true).
  Self& bias(bool b) { bias_ = b; return self(); }
  /// See stride().
  std::vector<int64_t> stride_{1};
  /// See padding().
  std::vector<int64_t> padding_{0};
  /// See dilation().
  std::vector<int64_t> dilation_{1};
  /// See groups().
  int64_t groups_ = 1;
  /// See bias().
  bool bias_ = true;
  /// The input channels of libtorch's form (in, out, k); -1 when not given.
  int64_t in_channels_ = -1;
  /// The output channels of libtorch's form (in, out, k); -1 when not given.
  int64_t out_channels_ = -1;
  /// The kernel size of libtorch's form (in, out, k); empty when not given.
  std::vector<int64_t> kernel_size_;

 protected:
  ConvOptionsBase() = default;
  /// libtorch's form: the channels and the kernel size too.
  ConvOptionsBase(int64_t in_channels, int64_t out_channels, IntArrayRef kernel_size)
      : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(kernel_size.vec()) {}

 private:
  Self& self() { return static_cast<Self&>(*this); }
};

/// Options of Conv1d / Conv2d, PyTorch style: Conv2dOptions().stride(2).padding(1).bias(false).
/// libtorch's form names the layer's required arguments first, Conv2dOptions(in, out,
/// kernel_size).stride(1), and builds the layer alone: Conv2d(Conv2dOptions(1, 32, 3).stride(1)).
struct Conv2dOptions : ConvOptionsBase<Conv2dOptions> {
  /// Only the optional settings: for Conv2d(in, out, kernel_size, options).
  Conv2dOptions() = default;
  /// libtorch's form: the channels and the kernel size ({k} or {kH, kW}, or one number) too.
  Conv2dOptions(int64_t in_channels, int64_t out_channels, IntArrayRef kernel_size)
      : ConvOptionsBase(in_channels, out_channels, kernel_size) {}
};
/// Conv1d takes the same options (each size a single number).
using Conv1dOptions = Conv2dOptions;

/// conv2d(x, weight, bias, ...) as a module (torch::nn::Conv2d): weight (out, in / groups, kH, kW)
/// and bias (out), initialised like PyTorch (uniform in +-1/sqrt(fan_in), fan_in = in / groups kH kW).
class Conv2d : public Module {
 public:
  /// A square kernel_size x kernel_size convolution; ShapeError for non-positive sizes or channels
  /// not divisible by groups.
  Conv2d(int64_t in_channels, int64_t out_channels, int64_t kernel_size, const Conv2dOptions& options = {});
  /// A kernel of {kH, kW}.
  Conv2d(int64_t in_channels, int64_t out_channels, const std::vector<int64_t>& kernel_size,
         const Conv2dOptions& options = {});
  /// libtorch's form: Conv2d(Conv2dOptions(1, 32, 3).stride(1)). Error naming Conv2d when options
  /// were built without the channels and kernel size (Conv2dOptions()).
  explicit Conv2d(const Conv2dOptions& options);
  /// x (N, in, H, W) or (in, H, W) -> (N, out, OH, OW).
  Tensor forward(const Tensor& x) override;
  /// "Conv2d(1, 32, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))", as PyTorch prints it.
  std::string name() const override;
  /// A Conv2d of the same configuration (for clone()).
  std::unique_ptr<Module> new_instance() const override;
  Tensor weight;   ///< (out_channels, in_channels / groups, kH, kW), registered as "weight"
  Tensor bias;     ///< (out_channels), registered as "bias"; undefined with bias(false)
 private:
  int64_t in_, out_;
  std::vector<int64_t> kernel_;
  Conv2dOptions options_;
  TG_LAYER_HANDLE(Conv2d)
};

/// conv1d(x, weight, bias, ...) as a module (torch::nn::Conv1d): weight (out, in / groups, k), bias (out).
class Conv1d : public Module {
 public:
  /// A kernel of kernel_size taps; ShapeError for non-positive sizes or channels not divisible by
  /// groups, or options with {h, w} pairs.
  Conv1d(int64_t in_channels, int64_t out_channels, int64_t kernel_size, const Conv1dOptions& options = {});
  /// libtorch's form: Conv1d(Conv1dOptions(3, 8, 3).padding(1)). Error naming Conv1d when options
  /// were built without the channels and kernel size, ShapeError for a kernel of two sizes.
  explicit Conv1d(const Conv1dOptions& options);
  /// x (N, in, L) or (in, L) -> (N, out, OL).
  Tensor forward(const Tensor& x) override;
  /// "Conv1d(3, 8, kernel_size=(3,), stride=(1,))".
  std::string name() const override;
  /// A Conv1d of the same configuration (for clone()).
  std::unique_ptr<Module> new_instance() const override;
  Tensor weight;   ///< (out_channels, in_channels / groups, kernel_size), registered as "weight"
  Tensor bias;     ///< (out_channels), registered as "bias"; undefined with bias(false)
 private:
  int64_t in_, out_, kernel_;
  Conv1dOptions options_;
  TG_LAYER_HANDLE(Conv1d)
};

/// Options of ConvTranspose2d (torch::nn::ConvTranspose2dOptions): the settings of Conv2dOptions and
/// output_padding, in either form: ConvTranspose2dOptions().stride(2) for ConvTranspose2d(in, out, k,
/// options), or libtorch's ConvTranspose2dOptions(in, out, k).stride(2) for ConvTranspose2d(options).
struct ConvTranspose2dOptions : ConvOptionsBase<ConvTranspose2dOptions> {
  /// Only the optional settings.
  ConvTranspose2dOptions() = default;
  /// libtorch's form: the channels and the kernel size too.
  ConvTranspose2dOptions(int64_t in_channels, int64_t out_channels, IntArrayRef kernel_size)
      : ConvOptionsBase(in_channels, out_channels, kernel_size) {}
  /// Rows and columns added to one side of the output (default 0): below the stride or the dilation.
  ConvTranspose2dOptions& output_padding(int64_t p) { output_padding_ = {p}; return *this; }
  /// output_padding, {h, w}.
  ConvTranspose2dOptions& output_padding(const std::vector<int64_t>& p) { output_padding_ = p; return *this; }
  /// See output_padding().
  std::vector<int64_t> output_padding_{0};
};

/// conv_transpose2d(x, weight, bias, ...) as a module (torch::nn::ConvTranspose2d): weight (in, out /
/// groups, kH, kW) and bias (out), initialised like PyTorch (uniform in +-1/sqrt(fan_in), fan_in = out
/// / groups kH kW, the weight's dims 1.. as PyTorch reads them).
class ConvTranspose2d : public Module {
 public:
  /// A kernel_size x kernel_size transposed convolution; ShapeError for non-positive sizes or channels
  /// not divisible by groups.
  ConvTranspose2d(int64_t in_channels, int64_t out_channels, int64_t kernel_size,
                  const ConvTranspose2dOptions& options = {});
  /// A kernel of {kH, kW}.
  ConvTranspose2d(int64_t in_channels, int64_t out_channels, const std::vector<int64_t>& kernel_size,
                  const ConvTranspose2dOptions& options = {});
  /// libtorch's form: ConvTranspose2d(ConvTranspose2dOptions(64, 32, 4).stride(2)). Error naming the
  /// layer when the options name no channels or kernel size.
  explicit ConvTranspose2d(const ConvTranspose2dOptions& options);
  /// x (N, in, H, W) or (in, H, W) -> (N, out, OH, OW), OH = (H - 1) stride - 2 padding + dilation
  /// (kH - 1) + output_padding + 1.
  Tensor forward(const Tensor& x) override;
  /// "ConvTranspose2d(64, 32, kernel_size=(4, 4), stride=(2, 2), padding=(1, 1))", as PyTorch prints it.
  std::string name() const override;
  /// A ConvTranspose2d of the same configuration (for clone()).
  std::unique_ptr<Module> new_instance() const override;
  Tensor weight;   ///< (in_channels, out_channels / groups, kH, kW), registered as "weight"
  Tensor bias;     ///< (out_channels), registered as "bias"; undefined with bias(false)
 private:
  int64_t in_, out_;
  std::vector<int64_t> kernel_;
  ConvTranspose2dOptions options_;
  TG_LAYER_HANDLE(ConvTranspose2d)
};

/// ConvTranspose1d takes the same options (each size a single number).
using ConvTranspose1dOptions = ConvTranspose2dOptions;

/// conv_transpose1d(x, weight, bias, ...) as a module (torch::nn::ConvTranspose1d): weight (in, out /
/// groups, k) and bias (out), initialised like PyTorch (uniform in +-1/sqrt(fan_in), fan_in = out /
/// groups k).
class ConvTranspose1d : public Module {
 public:
  /// A kernel of kernel_size taps; ShapeError for non-positive sizes, channels not divisible by groups,
  /// or options with {h, w} pairs.
  ConvTranspose1d(int64_t in_channels, int64_t out_channels, int64_t kernel_size,
                  const ConvTranspose1dOptions& options = {});
  /// libtorch's form: ConvTranspose1d(ConvTranspose1dOptions(16, 8, 4).stride(2)). Error naming the layer
  /// when the options name no channels or kernel size, ShapeError for a kernel of two sizes.
  explicit ConvTranspose1d(const ConvTranspose1dOptions& options);
  /// x (N, in, L) or (in, L) -> (N, out, OL), OL = (L - 1) stride - 2 padding + dilation (k - 1) +
  /// output_padding + 1.
  Tensor forward(const Tensor& x) override;
  /// "ConvTranspose1d(16, 8, kernel_size=(4,), stride=(2,), padding=(1,))", as PyTorch prints it.
  std::string name() const override;
  /// A ConvTranspose1d of the same configuration (for clone()).
  std::unique_ptr<Module> new_instance() const override;
  Tensor weight;   ///< (in_channels, out_channels / groups, kernel_size), registered as "weight"
  Tensor bias;     ///< (out_channels), registered as "bias"; undefined with bias(false)
 private:
  int64_t in_, out_, kernel_;
  ConvTranspose1dOptions options_;
  TG_LAYER_HANDLE(ConvTranspose1d)
};

/// Options of MaxPool2d, as libtorch names them: MaxPool2dOptions(3).stride(2).padding(1).dilation(2)
/// .ceil_mode(true). A size is one number (both spatial dims) or {h, w}; an empty stride means
/// kernel_size.
struct MaxPool2dOptions {
  /// Windows of kernel_size ({n} or {h, w}).
  MaxPool2dOptions(std::vector<int64_t> kernel_size) : kernel_size_(std::move(kernel_size)) {}  // NOLINT: implicit, as libtorch's
  /// Square windows.
  MaxPool2dOptions(int64_t kernel_size) : kernel_size_{kernel_size} {}  // NOLINT: implicit, as libtorch's
  /// Step between windows (default kernel_size): one number or {h, w}, as libtorch's .stride(2).
  MaxPool2dOptions& stride(IntArrayRef s) { stride_ = s; return *this; }
  /// -inf padding on each side (default 0), at most half the kernel.
  MaxPool2dOptions& padding(IntArrayRef p) { padding_ = p; return *this; }
  /// Spacing between the window's taps (default 1).
  MaxPool2dOptions& dilation(IntArrayRef d) { dilation_ = d; return *this; }
  /// Round the output size up (default false): see tg::max_pool2d.
  MaxPool2dOptions& ceil_mode(bool c) { ceil_mode_ = c; return *this; }
  /// See the constructors.
  std::vector<int64_t> kernel_size_;
  /// See stride().
  std::vector<int64_t> stride_;
  /// See padding().
  std::vector<int64_t> padding_{0};
  /// See dilation().
  std::vector<int64_t> dilation_{1};
  /// See ceil_mode().
  bool ceil_mode_ = false;
};

/// Options of AvgPool2d, as libtorch names them: AvgPool2dOptions(3).stride(2).padding(1).ceil_mode(true)
/// .count_include_pad(false).
struct AvgPool2dOptions {
  /// Windows of kernel_size ({n} or {h, w}).
  AvgPool2dOptions(std::vector<int64_t> kernel_size) : kernel_size_(std::move(kernel_size)) {}  // NOLINT: implicit, as libtorch's
  /// Square windows.
  AvgPool2dOptions(int64_t kernel_size) : kernel_size_{kernel_size} {}  // NOLINT: implicit, as libtorch's
  /// Step between windows (default kernel_size): one number or {h, w}.
  AvgPool2dOptions& stride(IntArrayRef s) { stride_ = s; return *this; }
  /// Zero padding on each side (default 0), at most half the kernel.
  AvgPool2dOptions& padding(IntArrayRef p) { padding_ = p; return *this; }
  /// Round the output size up (default false): see tg::avg_pool2d.
  AvgPool2dOptions& ceil_mode(bool c) { ceil_mode_ = c; return *this; }
  /// Count the padding in each window's divisor (default true).
  AvgPool2dOptions& count_include_pad(bool c) { count_include_pad_ = c; return *this; }
  /// See the constructors.
  std::vector<int64_t> kernel_size_;
  /// See stride().
  std::vector<int64_t> stride_;
  /// See padding().
  std::vector<int64_t> padding_{0};
  /// See ceil_mode().
  bool ceil_mode_ = false;
  /// See count_include_pad().
  bool count_include_pad_ = true;
};

/// max_pool2d(x, kernel_size, stride, padding, dilation, ceil_mode) as a module (torch::nn::MaxPool2d);
/// stride defaults to kernel_size.
class MaxPool2d : public Module {
 public:
  /// Square windows.
  explicit MaxPool2d(int64_t kernel_size, int64_t stride = 0, int64_t padding = 0);
  /// Windows {kH, kW}; an empty stride means kernel_size.
  explicit MaxPool2d(const std::vector<int64_t>& kernel_size, const std::vector<int64_t>& stride = {},
                     const std::vector<int64_t>& padding = {0});
  /// Every option, libtorch style: MaxPool2d(MaxPool2dOptions(3).stride({2}).dilation({2}).ceil_mode(true)).
  explicit MaxPool2d(const MaxPool2dOptions& options);
  /// x (N, C, H, W) or (C, H, W) -> the window maxima.
  Tensor forward(const Tensor& x) override {
    return max_pool2d(x, o_.kernel_size_, o_.stride_, o_.padding_, o_.dilation_, o_.ceil_mode_);
  }
  /// "MaxPool2d(kernel_size=2, stride=2, padding=0)", as PyTorch prints it, then dilation and ceil_mode
  /// when not their defaults.
  std::string name() const override;
  /// A MaxPool2d of the same options (for clone()).
  std::unique_ptr<Module> new_instance() const override;
 private:
  MaxPool2dOptions o_;
  TG_LAYER_HANDLE_VIA(MaxPool2d, 1)
};

/// avg_pool2d(x, kernel_size, stride, padding, count_include_pad, ceil_mode) as a module
/// (torch::nn::AvgPool2d).
class AvgPool2d : public Module {
 public:
  /// Square windows; stride 0 means kernel_size.
  explicit AvgPool2d(int64_t kernel_size, int64_t stride = 0, int64_t padding = 0, bool count_include_pad = true);
  /// Windows {kH, kW}; an empty stride means kernel_size.
  explicit AvgPool2d(const std::vector<int64_t>& kernel_size, const std::vector<int64_t>& stride = {},
                     const std::vector<int64_t>& padding = {0}, bool count_include_pad = true);
  /// Every option, libtorch style: AvgPool2d(AvgPool2dOptions(3).stride({2}).ceil_mode(true)).
  explicit AvgPool2d(const AvgPool2dOptions& options);
  /// x (N, C, H, W) or (C, H, W) -> the window means.
  Tensor forward(const Tensor& x) override {
    return avg_pool2d(x, o_.kernel_size_, o_.stride_, o_.padding_, o_.count_include_pad_, o_.ceil_mode_);
  }
  /// "AvgPool2d(kernel_size=2, stride=2, padding=0)", then ceil_mode and count_include_pad when not
  /// their defaults.
  std::string name() const override;
  /// An AvgPool2d of the same options (for clone()).
  std::unique_ptr<Module> new_instance() const override;
 private:
  AvgPool2dOptions o_;
  TG_LAYER_HANDLE_VIA(AvgPool2d, 1)
};

/// adaptive_avg_pool2d(x, output_size) as a module (torch::nn::AdaptiveAvgPool2d).
class AdaptiveAvgPool2d : public Module {
 public:
  /// output_size {n} (square) or {OH, OW}.
  explicit AdaptiveAvgPool2d(const std::vector<int64_t>& output_size);
  /// A square output of output_size x output_size.
  explicit AdaptiveAvgPool2d(int64_t output_size) : AdaptiveAvgPool2d(std::vector<int64_t>{output_size}) {}
  /// x (N, C, H, W) or (C, H, W) -> (N, C, OH, OW).
  Tensor forward(const Tensor& x) override { return adaptive_avg_pool2d(x, output_size_); }
  /// "AdaptiveAvgPool2d(output_size=(1, 1))".
  std::string name() const override;
  /// An AdaptiveAvgPool2d of the same size (for clone()).
  std::unique_ptr<Module> new_instance() const override { return std::make_unique<AdaptiveAvgPool2d>(output_size_); }
 private:
  std::vector<int64_t> output_size_;
  TG_LAYER_HANDLE(AdaptiveAvgPool2d)
};

/// MaxPool1d's options, as libtorch names them: MaxPool1dOptions(3).stride(2).padding(1).dilation(2)
/// .ceil_mode(true), each size a single number.
using MaxPool1dOptions = MaxPool2dOptions;
/// AvgPool1d's options, as libtorch names them: AvgPool1dOptions(3).stride(2).count_include_pad(false),
/// each size a single number.
using AvgPool1dOptions = AvgPool2dOptions;

/// max_pool1d(x, kernel_size, stride, padding, dilation, ceil_mode) as a module (torch::nn::MaxPool1d);
/// stride defaults to kernel_size.
class MaxPool1d : public Module {
 public:
  /// Every option, libtorch style: MaxPool1d(MaxPool1dOptions(3).stride(2)), or MaxPool1d(3). ShapeError
  /// for sizes of more than one element.
  explicit MaxPool1d(const MaxPool1dOptions& options);
  /// x (N, C, L) or (C, L) -> the window maxima.
  Tensor forward(const Tensor& x) override {
    return max_pool1d(x, o_.kernel_size_, o_.stride_, o_.padding_, o_.dilation_, o_.ceil_mode_);
  }
  /// "MaxPool1d(kernel_size=3, stride=3, padding=0, dilation=1, ceil_mode=False)", as PyTorch prints it.
  std::string name() const override;
  /// A MaxPool1d of the same options (for clone()).
  std::unique_ptr<Module> new_instance() const override { return std::make_unique<MaxPool1d>(o_); }
 private:
  MaxPool1dOptions o_;
  TG_LAYER_HANDLE_VIA(MaxPool1d, 1)
};

/// avg_pool1d(x, kernel_size, stride, padding, ceil_mode, count_include_pad) as a module
/// (torch::nn::AvgPool1d); stride defaults to kernel_size.
class AvgPool1d : public Module {
 public:
  /// Every option, libtorch style: AvgPool1d(AvgPool1dOptions(3).stride(2)), or AvgPool1d(3). ShapeError
  /// for sizes of more than one element.
  explicit AvgPool1d(const AvgPool1dOptions& options);
  /// x (N, C, L) or (C, L) -> the window means.
  Tensor forward(const Tensor& x) override {
    return avg_pool1d(x, o_.kernel_size_, o_.stride_, o_.padding_, o_.ceil_mode_, o_.count_include_pad_);
  }
  /// "AvgPool1d(kernel_size=(3,), stride=(3,), padding=(0,))", as PyTorch prints it.
  std::string name() const override;
  /// An AvgPool1d of the same options (for clone()).
  std::unique_ptr<Module> new_instance() const override { return std::make_unique<AvgPool1d>(o_); }
 private:
  AvgPool1dOptions o_;
  TG_LAYER_HANDLE_VIA(AvgPool1d, 1)
};

/// adaptive_max_pool2d(x, output_size) as a module (torch::nn::AdaptiveMaxPool2d, without indices).
class AdaptiveMaxPool2d : public Module {
 public:
  /// output_size {n} (square) or {OH, OW}; ShapeError otherwise or for a non-positive size.
  explicit AdaptiveMaxPool2d(const std::vector<int64_t>& output_size);
  /// A square output of output_size x output_size.
  explicit AdaptiveMaxPool2d(int64_t output_size) : AdaptiveMaxPool2d(std::vector<int64_t>{output_size}) {}
  /// x (N, C, H, W) or (C, H, W) -> (N, C, OH, OW).
  Tensor forward(const Tensor& x) override { return adaptive_max_pool2d(x, output_size_); }
  /// "AdaptiveMaxPool2d(output_size=(3, 4))".
  std::string name() const override;
  /// An AdaptiveMaxPool2d of the same size (for clone()).
  std::unique_ptr<Module> new_instance() const override { return std::make_unique<AdaptiveMaxPool2d>(output_size_); }
 private:
  std::vector<int64_t> output_size_;
  TG_LAYER_HANDLE(AdaptiveMaxPool2d)
};

/// adaptive_avg_pool1d(x, output_size) as a module (torch::nn::AdaptiveAvgPool1d).
class AdaptiveAvgPool1d : public Module {
 public:
  /// An output of output_size; ShapeError unless positive.
  explicit AdaptiveAvgPool1d(int64_t output_size);
  /// x (N, C, L) or (C, L) -> (N, C, output_size).
  Tensor forward(const Tensor& x) override { return adaptive_avg_pool1d(x, output_size_); }
  /// "AdaptiveAvgPool1d(output_size=5)".
  std::string name() const override { return "AdaptiveAvgPool1d(output_size=" + std::to_string(output_size_) + ")"; }
  /// An AdaptiveAvgPool1d of the same size (for clone()).
  std::unique_ptr<Module> new_instance() const override { return std::make_unique<AdaptiveAvgPool1d>(output_size_); }
 private:
  int64_t output_size_ = 1;
  TG_LAYER_HANDLE(AdaptiveAvgPool1d)
};

/// adaptive_max_pool1d(x, output_size) as a module (torch::nn::AdaptiveMaxPool1d, without indices).
class AdaptiveMaxPool1d : public Module {
 public:
  /// An output of output_size; ShapeError unless positive.
  explicit AdaptiveMaxPool1d(int64_t output_size);
  /// x (N, C, L) or (C, L) -> (N, C, output_size).
  Tensor forward(const Tensor& x) override { return adaptive_max_pool1d(x, output_size_); }
  /// "AdaptiveMaxPool1d(output_size=5)".
  std::string name() const override { return "AdaptiveMaxPool1d(output_size=" + std::to_string(output_size_) + ")"; }
  /// An AdaptiveMaxPool1d of the same size (for clone()).
  std::unique_ptr<Module> new_instance() const override { return std::make_unique<AdaptiveMaxPool1d>(output_size_); }
 private:
  int64_t output_size_ = 1;
  TG_LAYER_HANDLE(AdaptiveMaxPool1d)
};

/// Conv3d takes Conv2dOptions (libtorch's Conv3dOptions), each size one number (all three dims) or
/// {d, h, w}.
using Conv3dOptions = Conv2dOptions;

/// conv3d(x, weight, bias, ...) as a module (torch::nn::Conv3d): weight (out, in / groups, kD, kH, kW)
/// and bias (out), initialised like PyTorch (uniform in +-1/sqrt(fan_in), fan_in = in / groups kD kH kW).
class Conv3d : public Module {
 public:
  /// A cubic kernel_size^3 convolution; ShapeError for non-positive sizes or channels not divisible by
  /// groups, or sizes of other than 1 or 3 elements.
  Conv3d(int64_t in_channels, int64_t out_channels, int64_t kernel_size, const Conv3dOptions& options = {});
  /// A kernel of {kD, kH, kW}.
  Conv3d(int64_t in_channels, int64_t out_channels, const std::vector<int64_t>& kernel_size,
         const Conv3dOptions& options = {});
  /// libtorch's form: Conv3d(Conv3dOptions(1, 8, 3).stride(2)). Error naming Conv3d when the options
  /// name no channels or kernel size.
  explicit Conv3d(const Conv3dOptions& options);
  /// x (N, in, D, H, W) or (in, D, H, W) -> (N, out, OD, OH, OW).
  Tensor forward(const Tensor& x) override;
  /// "Conv3d(1, 8, kernel_size=(3, 3, 3), stride=(1, 1, 1))", as PyTorch prints it.
  std::string name() const override;
  /// A Conv3d of the same configuration (for clone()).
  std::unique_ptr<Module> new_instance() const override;
  Tensor weight;   ///< (out_channels, in_channels / groups, kD, kH, kW), registered as "weight"
  Tensor bias;     ///< (out_channels), registered as "bias"; undefined with bias(false)
 private:
  int64_t in_, out_;
  std::vector<int64_t> kernel_;
  Conv3dOptions options_;
  TG_LAYER_HANDLE(Conv3d)
};

/// ConvTranspose3d takes ConvTranspose2dOptions (libtorch's ConvTranspose3dOptions), each size one
/// number or {d, h, w}.
using ConvTranspose3dOptions = ConvTranspose2dOptions;

/// conv_transpose3d(x, weight, bias, ...) as a module (torch::nn::ConvTranspose3d): weight (in, out /
/// groups, kD, kH, kW) and bias (out), initialised like PyTorch (fan_in = out / groups kD kH kW).
class ConvTranspose3d : public Module {
 public:
  /// A cubic kernel; ShapeError for non-positive sizes or channels not divisible by groups.
  ConvTranspose3d(int64_t in_channels, int64_t out_channels, int64_t kernel_size,
                  const ConvTranspose3dOptions& options = {});
  /// A kernel of {kD, kH, kW}.
  ConvTranspose3d(int64_t in_channels, int64_t out_channels, const std::vector<int64_t>& kernel_size,
                  const ConvTranspose3dOptions& options = {});
  /// libtorch's form: ConvTranspose3d(ConvTranspose3dOptions(8, 4, 2).stride(2)). Error naming the
  /// layer when the options name no channels or kernel size.
  explicit ConvTranspose3d(const ConvTranspose3dOptions& options);
  /// x (N, in, D, H, W) or (in, D, H, W) -> (N, out, OD, OH, OW), OD = (D - 1) stride - 2 padding +
  /// dilation (kD - 1) + output_padding + 1.
  Tensor forward(const Tensor& x) override;
  /// "ConvTranspose3d(8, 4, kernel_size=(2, 2, 2), stride=(2, 2, 2))", as PyTorch prints it.
  std::string name() const override;
  /// A ConvTranspose3d of the same configuration (for clone()).
  std::unique_ptr<Module> new_instance() const override;
  Tensor weight;   ///< (in_channels, out_channels / groups, kD, kH, kW), registered as "weight"
  Tensor bias;     ///< (out_channels), registered as "bias"; undefined with bias(false)
 private:
  int64_t in_, out_;
  std::vector<int64_t> kernel_;
  ConvTranspose3dOptions options_;
  TG_LAYER_HANDLE(ConvTranspose3d)
};

/// MaxPool3d's options, as libtorch names them: MaxPool3dOptions(3).stride(2).padding(1).dilation(2)
/// .ceil_mode(true), each size one number or {d, h, w}.
using MaxPool3dOptions = MaxPool2dOptions;
/// AvgPool3d's options, as libtorch names them: AvgPool3dOptions(3).stride(2).count_include_pad(false),
/// each size one number or {d, h, w} (no divisor_override, which AvgPool2d lacks too).
using AvgPool3dOptions = AvgPool2dOptions;

/// max_pool3d(x, kernel_size, stride, padding, dilation, ceil_mode) as a module (torch::nn::MaxPool3d);
/// stride defaults to kernel_size.
class MaxPool3d : public Module {
 public:
  /// Every option, libtorch style: MaxPool3d(MaxPool3dOptions(3).stride(2)), or MaxPool3d(2). ShapeError
  /// for sizes of other than 1 or 3 elements.
  explicit MaxPool3d(const MaxPool3dOptions& options);
  /// x (N, C, D, H, W) or (C, D, H, W) -> the window maxima.
  Tensor forward(const Tensor& x) override {
    return max_pool3d(x, o_.kernel_size_, o_.stride_, o_.padding_, o_.dilation_, o_.ceil_mode_);
  }
  /// "MaxPool3d(kernel_size=3, stride=2, padding=0, dilation=1, ceil_mode=False)", as PyTorch prints it.
  std::string name() const override;
  /// A MaxPool3d of the same options (for clone()).
  std::unique_ptr<Module> new_instance() const override { return std::make_unique<MaxPool3d>(o_); }
 private:
  MaxPool3dOptions o_;
  TG_LAYER_HANDLE_VIA(MaxPool3d, 1)
};

/// avg_pool3d(x, kernel_size, stride, padding, ceil_mode, count_include_pad) as a module
/// (torch::nn::AvgPool3d); stride defaults to kernel_size.
class AvgPool3d : public Module {
 public:
  /// Every option, libtorch style: AvgPool3d(AvgPool3dOptions(3).stride(2)), or AvgPool3d(2). ShapeError
  /// for sizes of other than 1 or 3 elements.
  explicit AvgPool3d(const AvgPool3dOptions& options);
  /// x (N, C, D, H, W) or (C, D, H, W) -> the window means.
  Tensor forward(const Tensor& x) override {
    return avg_pool3d(x, o_.kernel_size_, o_.stride_, o_.padding_, o_.ceil_mode_, o_.count_include_pad_);
  }
  /// "AvgPool3d(kernel_size=2, stride=2, padding=0)", as PyTorch prints it.
  std::string name() const override;
  /// An AvgPool3d of the same options (for clone()).
  std::unique_ptr<Module> new_instance() const override { return std::make_unique<AvgPool3d>(o_); }
 private:
  AvgPool3dOptions o_;
  TG_LAYER_HANDLE_VIA(AvgPool3d, 1)
};

/// adaptive_avg_pool3d(x, output_size) as a module (torch::nn::AdaptiveAvgPool3d).
class AdaptiveAvgPool3d : public Module {
 public:
  /// output_size {n} (cubic) or {OD, OH, OW}; ShapeError otherwise or for a non-positive size.
  explicit AdaptiveAvgPool3d(const std::vector<int64_t>& output_size);
  /// A cubic output of output_size^3.
  explicit AdaptiveAvgPool3d(int64_t output_size) : AdaptiveAvgPool3d(std::vector<int64_t>{output_size}) {}
  /// x (N, C, D, H, W) or (C, D, H, W) -> (N, C, OD, OH, OW).
  Tensor forward(const Tensor& x) override { return adaptive_avg_pool3d(x, output_size_); }
  /// "AdaptiveAvgPool3d(output_size=2)" or "AdaptiveAvgPool3d(output_size=(1, 2, 3))", as given.
  std::string name() const override;
  /// An AdaptiveAvgPool3d of the same size (for clone()).
  std::unique_ptr<Module> new_instance() const override { return std::make_unique<AdaptiveAvgPool3d>(output_size_); }
 private:
  std::vector<int64_t> output_size_;
  TG_LAYER_HANDLE(AdaptiveAvgPool3d)
};

/// adaptive_max_pool3d(x, output_size) as a module (torch::nn::AdaptiveMaxPool3d, without indices).
class AdaptiveMaxPool3d : public Module {
 public:
  /// output_size {n} (cubic) or {OD, OH, OW}; ShapeError otherwise or for a non-positive size.
  explicit AdaptiveMaxPool3d(const std::vector<int64_t>& output_size);
  /// A cubic output of output_size^3.
  explicit AdaptiveMaxPool3d(int64_t output_size) : AdaptiveMaxPool3d(std::vector<int64_t>{output_size}) {}
  /// x (N, C, D, H, W) or (C, D, H, W) -> (N, C, OD, OH, OW).
  Tensor forward(const Tensor& x) override { return adaptive_max_pool3d(x, output_size_); }
  /// "AdaptiveMaxPool3d(output_size=2)" or "AdaptiveMaxPool3d(output_size=(1, 2, 3))", as given.
  std::string name() const override;
  /// An AdaptiveMaxPool3d of the same size (for clone()).
  std::unique_ptr<Module> new_instance() const override { return std::make_unique<AdaptiveMaxPool3d>(output_size_); }
 private:
  std::vector<int64_t> output_size_;
  TG_LAYER_HANDLE(AdaptiveMaxPool3d)
};

/// libtorch's name of the module type, which is its own holder (Note [Value modules and handles], nn/pimpl.h).
using Conv2dImpl = Conv2d;
/// libtorch's name of the module type, which is its own holder (Note [Value modules and handles], nn/pimpl.h).
using Conv1dImpl = Conv1d;
/// libtorch's name of the module class (Note [Value modules and handles]).
using ConvTranspose2dImpl = ConvTranspose2d;
/// libtorch's name of the module type, which is its own holder (Note [Value modules and handles], nn/pimpl.h).
using MaxPool2dImpl = MaxPool2d;
/// libtorch's name of the module type, which is its own holder (Note [Value modules and handles], nn/pimpl.h).
using AvgPool2dImpl = AvgPool2d;
/// libtorch's name of the module type, which is its own holder (Note [Value modules and handles], nn/pimpl.h).
using AdaptiveAvgPool2dImpl = AdaptiveAvgPool2d;
/// libtorch's name of the module type, which is its own holder (Note [Value modules and handles], nn/pimpl.h).
using ConvTranspose1dImpl = ConvTranspose1d;
/// libtorch's name of the module type, which is its own holder (Note [Value modules and handles], nn/pimpl.h).
using MaxPool1dImpl = MaxPool1d;
/// libtorch's name of the module type, which is its own holder (Note [Value modules and handles], nn/pimpl.h).
using AvgPool1dImpl = AvgPool1d;
/// libtorch's name of the module type, which is its own holder (Note [Value modules and handles], nn/pimpl.h).
using AdaptiveMaxPool2dImpl = AdaptiveMaxPool2d;
/// libtorch's name of the module type, which is its own holder (Note [Value modules and handles], nn/pimpl.h).
using AdaptiveAvgPool1dImpl = AdaptiveAvgPool1d;
/// libtorch's name of the module type, which is its own holder (Note [Value modules and handles], nn/pimpl.h).
using AdaptiveMaxPool1dImpl = AdaptiveMaxPool1d;
/// libtorch's name of the module type, which is its own holder (Note [Value modules and handles], nn/pimpl.h).
using Conv3dImpl = Conv3d;
/// libtorch's name of the module type, which is its own holder (Note [Value modules and handles], nn/pimpl.h).
using ConvTranspose3dImpl = ConvTranspose3d;
/// libtorch's name of the module type, which is its own holder (Note [Value modules and handles], nn/pimpl.h).
using MaxPool3dImpl = MaxPool3d;
/// libtorch's name of the module type, which is its own holder (Note [Value modules and handles], nn/pimpl.h).
using AvgPool3dImpl = AvgPool3d;
/// libtorch's name of the module type, which is its own holder (Note [Value modules and handles], nn/pimpl.h).
using AdaptiveAvgPool3dImpl = AdaptiveAvgPool3d;
/// libtorch's name of the module type, which is its own holder (Note [Value modules and handles], nn/pimpl.h).
using AdaptiveMaxPool3dImpl = AdaptiveMaxPool3d;

}  // namespace nn
}  // namespace tg
