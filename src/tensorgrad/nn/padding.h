/// \file
/// nn/padding.h: the padding layers as Modules, with PyTorch's names and options: ZeroPad1d/2d,
/// ConstantPad1d/2d, ReflectionPad1d/2d and ReplicationPad1d/2d. Each forward is one call of tg::pad
/// (ops/shape.cpp), which also differentiates them. The functional form is F::pad (nn/functional.h).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "tensorgrad/nn/module.h"
#include "tensorgrad/ops/ops.h"

namespace tg {
namespace nn {

/// Options of the zero, reflection and replication padding layers in D spatial dims (libtorch's
/// ZeroPad2dOptions, ReflectionPad1dOptions, ...): the padding, one number for every side or the 2 D
/// numbers (left, right) for D = 1, (left, right, top, bottom) for D = 2.
template <int D>
struct PadOptions {
  /// The padding: PadOptions<2>(1) pads every side by 1, PadOptions<2>({1, 1, 2, 0}) each its own.
  PadOptions(IntArrayRef padding) : padding_(padding) {}   // NOLINT: implicit, as libtorch's
  /// Replaces the padding.
  PadOptions& padding(IntArrayRef p) { padding_ = p; return *this; }
  /// See padding().
  std::vector<int64_t> padding_;
};

/// Options of ConstantPad1d / ConstantPad2d (libtorch's ConstantPad2dOptions(padding, value)): the padding
/// as PadOptions and the fill value.
template <int D>
struct ConstantPadOptions {
  /// The padding (one number or 2 D) and the value the new elements take.
  ConstantPadOptions(IntArrayRef padding, double value) : padding_(padding), value_(value) {}
  /// Replaces the padding.
  ConstantPadOptions& padding(IntArrayRef p) { padding_ = p; return *this; }
  /// Replaces the value.
  ConstantPadOptions& value(double v) { value_ = v; return *this; }
  /// See padding().
  std::vector<int64_t> padding_;
  /// See value().
  double value_;
};

/// ZeroPad1d's options (libtorch's name).
using ZeroPad1dOptions = PadOptions<1>;
/// ZeroPad2d's options (libtorch's name).
using ZeroPad2dOptions = PadOptions<2>;
/// ReflectionPad1d's options (libtorch's name).
using ReflectionPad1dOptions = PadOptions<1>;
/// ReflectionPad2d's options (libtorch's name).
using ReflectionPad2dOptions = PadOptions<2>;
/// ReplicationPad1d's options (libtorch's name).
using ReplicationPad1dOptions = PadOptions<1>;
/// ReplicationPad2d's options (libtorch's name).
using ReplicationPad2dOptions = PadOptions<2>;
/// ConstantPad1d's options (libtorch's name).
using ConstantPad1dOptions = ConstantPadOptions<1>;
/// ConstantPad2d's options (libtorch's name).
using ConstantPad2dOptions = ConstantPadOptions<2>;

/// What the padding layers share: tg::pad(x, padding, mode, value) over the last D dims, with the
/// padding expanded to 2 D numbers and the input's rank checked as PyTorch's layer checks it.
class PadLayer : public Module {
 public:
  /// x (*, spatial...) -> x padded: constant padding takes any input of at least D dims; reflection and
  /// replication (N, C, spatial...) or unbatched (C, spatial...), ShapeError naming the layer otherwise.
  Tensor forward(const Tensor& x) override;
  /// "ZeroPad2d((1, 1, 2, 0))", "ConstantPad1d(padding=(2, 2), value=3.5)", as PyTorch prints them.
  std::string name() const override;
  /// The padding as 2 D numbers (left, right[, top, bottom]).
  const std::vector<int64_t>& padding() const { return padding_; }

 protected:
  /// kind names the layer in messages; mode is tg::pad's, which checks the sizes against the input.
  /// ShapeError unless padding has 1 or 2 D numbers.
  PadLayer(const char* kind, int dims, std::string mode, IntArrayRef padding, double value = 0);
  /// No parameters: the state of a handle (TG_LAYER_HANDLE in nn/pimpl.h).
  PadLayer() = default;
  const char* kind_ = "";            ///< "ZeroPad2d", ...
  int dims_ = 1;                     ///< D
  std::string mode_;                 ///< tg::pad's mode
  std::vector<int64_t> padding_;     ///< 2 D numbers
  double value_ = 0;                 ///< the fill of mode "constant"
};

/// Zero padding of the last dim (torch::nn::ZeroPad1d): ZeroPad1d(2) or ZeroPad1d({1, 3}).
class ZeroPad1d : public PadLayer {
 public:
  /// (left, right), or one number for both.
  explicit ZeroPad1d(const ZeroPad1dOptions& options) : PadLayer("ZeroPad1d", 1, "constant", options.padding_) {}
  /// The padding itself: ZeroPad1d(2), ZeroPad1d({1, 3}).
  explicit ZeroPad1d(IntArrayRef padding) : PadLayer("ZeroPad1d", 1, "constant", padding) {}
  /// A ZeroPad1d of the same padding (for clone()).
  std::unique_ptr<Module> new_instance() const override { return std::make_unique<ZeroPad1d>(padding_); }
  TG_LAYER_HANDLE(ZeroPad1d)
};

/// Zero padding of the last two dims (torch::nn::ZeroPad2d): ZeroPad2d(1) or ZeroPad2d({1, 1, 2, 0}).
class ZeroPad2d : public PadLayer {
 public:
  /// (left, right, top, bottom), or one number for all four.
  explicit ZeroPad2d(const ZeroPad2dOptions& options) : PadLayer("ZeroPad2d", 2, "constant", options.padding_) {}
  /// The padding itself: ZeroPad2d(1), ZeroPad2d({1, 1, 2, 0}).
  explicit ZeroPad2d(IntArrayRef padding) : PadLayer("ZeroPad2d", 2, "constant", padding) {}
  /// A ZeroPad2d of the same padding (for clone()).
  std::unique_ptr<Module> new_instance() const override { return std::make_unique<ZeroPad2d>(padding_); }
  TG_LAYER_HANDLE(ZeroPad2d)
};

/// Padding of the last dim with a value (torch::nn::ConstantPad1d): ConstantPad1d(ConstantPad1dOptions(2, 3.5)).
class ConstantPad1d : public PadLayer {
 public:
  /// The padding and the value.
  explicit ConstantPad1d(const ConstantPad1dOptions& options)
      : PadLayer("ConstantPad1d", 1, "constant", options.padding_, options.value_) {}
  /// (left, right) or one number, and the value: ConstantPad1d(2, 3.5), as PyTorch's.
  ConstantPad1d(IntArrayRef padding, double value) : ConstantPad1d(ConstantPad1dOptions(padding, value)) {}
  /// A ConstantPad1d of the same options (for clone()).
  std::unique_ptr<Module> new_instance() const override { return std::make_unique<ConstantPad1d>(padding_, value_); }
  TG_LAYER_HANDLE(ConstantPad1d)
};

/// Padding of the last two dims with a value (torch::nn::ConstantPad2d).
class ConstantPad2d : public PadLayer {
 public:
  /// The padding and the value.
  explicit ConstantPad2d(const ConstantPad2dOptions& options)
      : PadLayer("ConstantPad2d", 2, "constant", options.padding_, options.value_) {}
  /// (left, right, top, bottom) or one number, and the value: ConstantPad2d({1, 0, 2, 1}, -1.0).
  ConstantPad2d(IntArrayRef padding, double value) : ConstantPad2d(ConstantPad2dOptions(padding, value)) {}
  /// A ConstantPad2d of the same options (for clone()).
  std::unique_ptr<Module> new_instance() const override { return std::make_unique<ConstantPad2d>(padding_, value_); }
  TG_LAYER_HANDLE(ConstantPad2d)
};

/// Padding of the last dim by its reflection about the edge element (torch::nn::ReflectionPad1d); each
/// pad below the dim's size (tg::pad's check).
class ReflectionPad1d : public PadLayer {
 public:
  /// (left, right), or one number for both.
  explicit ReflectionPad1d(const ReflectionPad1dOptions& options)
      : PadLayer("ReflectionPad1d", 1, "reflect", options.padding_) {}
  /// The padding itself: ReflectionPad1d(2), ReflectionPad1d({1, 3}).
  explicit ReflectionPad1d(IntArrayRef padding) : PadLayer("ReflectionPad1d", 1, "reflect", padding) {}
  /// A ReflectionPad1d of the same padding (for clone()).
  std::unique_ptr<Module> new_instance() const override { return std::make_unique<ReflectionPad1d>(padding_); }
  TG_LAYER_HANDLE(ReflectionPad1d)
};

/// Padding of the last two dims by reflection (torch::nn::ReflectionPad2d).
class ReflectionPad2d : public PadLayer {
 public:
  /// (left, right, top, bottom), or one number for all four.
  explicit ReflectionPad2d(const ReflectionPad2dOptions& options)
      : PadLayer("ReflectionPad2d", 2, "reflect", options.padding_) {}
  /// The padding itself: ReflectionPad2d(1), ReflectionPad2d({1, 1, 2, 0}).
  explicit ReflectionPad2d(IntArrayRef padding) : PadLayer("ReflectionPad2d", 2, "reflect", padding) {}
  /// A ReflectionPad2d of the same padding (for clone()).
  std::unique_ptr<Module> new_instance() const override { return std::make_unique<ReflectionPad2d>(padding_); }
  TG_LAYER_HANDLE(ReflectionPad2d)
};

/// Padding of the last dim by repeating the edge element (torch::nn::ReplicationPad1d).
class ReplicationPad1d : public PadLayer {
 public:
  /// (left, right), or one number for both.
  explicit ReplicationPad1d(const ReplicationPad1dOptions& options)
      : PadLayer("ReplicationPad1d", 1, "replicate", options.padding_) {}
  /// The padding itself: ReplicationPad1d(2), ReplicationPad1d({1, 3}).
  explicit ReplicationPad1d(IntArrayRef padding) : PadLayer("ReplicationPad1d", 1, "replicate", padding) {}
  /// A ReplicationPad1d of the same padding (for clone()).
  std::unique_ptr<Module> new_instance() const override { return std::make_unique<ReplicationPad1d>(padding_); }
  TG_LAYER_HANDLE(ReplicationPad1d)
};

/// Padding of the last two dims by repeating the edge elements (torch::nn::ReplicationPad2d).
class ReplicationPad2d : public PadLayer {
 public:
  /// (left, right, top, bottom), or one number for all four.
  explicit ReplicationPad2d(const ReplicationPad2dOptions& options)
      : PadLayer("ReplicationPad2d", 2, "replicate", options.padding_) {}
  /// The padding itself: ReplicationPad2d(1), ReplicationPad2d({1, 1, 2, 0}).
  explicit ReplicationPad2d(IntArrayRef padding) : PadLayer("ReplicationPad2d", 2, "replicate", padding) {}
  /// A ReplicationPad2d of the same padding (for clone()).
  std::unique_ptr<Module> new_instance() const override { return std::make_unique<ReplicationPad2d>(padding_); }
  TG_LAYER_HANDLE(ReplicationPad2d)
};

/// libtorch's name of the module type, which is its own holder (Note [Value modules and handles], nn/pimpl.h).
using ZeroPad1dImpl = ZeroPad1d;
/// libtorch's name of the module type, which is its own holder (Note [Value modules and handles], nn/pimpl.h).
using ZeroPad2dImpl = ZeroPad2d;
/// libtorch's name of the module type, which is its own holder (Note [Value modules and handles], nn/pimpl.h).
using ConstantPad1dImpl = ConstantPad1d;
/// libtorch's name of the module type, which is its own holder (Note [Value modules and handles], nn/pimpl.h).
using ConstantPad2dImpl = ConstantPad2d;
/// libtorch's name of the module type, which is its own holder (Note [Value modules and handles], nn/pimpl.h).
using ReflectionPad1dImpl = ReflectionPad1d;
/// libtorch's name of the module type, which is its own holder (Note [Value modules and handles], nn/pimpl.h).
using ReflectionPad2dImpl = ReflectionPad2d;
/// libtorch's name of the module type, which is its own holder (Note [Value modules and handles], nn/pimpl.h).
using ReplicationPad1dImpl = ReplicationPad1d;
/// libtorch's name of the module type, which is its own holder (Note [Value modules and handles], nn/pimpl.h).
using ReplicationPad2dImpl = ReplicationPad2d;

}  // namespace nn
}  // namespace tg
