/// \file
/// quantization/qat.h: quantization-aware training (torch.ao.quantization.prepare_qat / convert):
/// per-channel fake quantization (tg::fake_quantize_per_channel_affine, the per-channel moving-average
/// observer and PerChannelFakeQuantize), QatLinear (a Linear that trains through fake-quantized weights
/// and inputs) and QuantizedLinear, the int8 Linear convert() makes of it. Per-tensor FakeQuantize and
/// the observers are in quantization/observer.h; the dynamic int8 Linear in quantization/dynamic.h.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "tensorgrad/nn/layers.h"
#include "tensorgrad/quantization/dynamic.h"
#include "tensorgrad/quantization/observer.h"
#include "tensorgrad/quantization/quantize.h"

namespace tg {

/// x quantized and dequantized per channel along axis (torch.fake_quantize_per_channel_affine): for
/// index c of axis, (clamp(nearbyint(x * (1.0f / scale[c])) + zero_point[c], quant_min, quant_max) -
/// zero_point[c]) * scale[c], in float32 (halves to even), returned in x's dtype. scale (C) floating,
/// zero_point (C) integer, C = x.size(axis), axis in [0, x.dim()). Backward: the straight-through
/// estimator, the gradient passes where the unclamped integer lies in [quant_min, quant_max] and is 0
/// where it was clamped; scale and zero_point get none (as PyTorch's). Errors name the op: a bad
/// axis, scale or zero_point shapes, a non-positive scale, quant_min > quant_max, a zero point outside them.
Tensor fake_quantize_per_channel_affine(const Tensor& x, const Tensor& scale, const Tensor& zero_point,
                                          int64_t axis, int64_t quant_min, int64_t quant_max);

namespace quantization {

/// The moving average of each channel's min and max (torch.ao.quantization.
/// MovingAveragePerChannelMinMaxObserver): per index c of ch_axis, min_val[c] takes the first batch's
/// min over the other dimensions, then min_val[c] += averaging_constant (batch min - min_val[c]);
/// max likewise. forward(x) returns x. calculate_qparams() as Note [Observers] per channel. The
/// number of channels is fixed at construction (PyTorch's starts with empty min_val / max_val and
/// sizes them on the first batch), so that a checkpoint loads into a fresh observer; state_dict keys
/// are PyTorch's: eps, min_val, max_val.
class MovingAveragePerChannelMinMaxObserver : public nn::Module {
 public:
  /// channels > 0; averaging_constant in (0, 1]; dtype kUInt8 (default, as PyTorch's) or kInt8;
  /// per_channel_affine (default) or symmetric; reduce_range halves the range. Error otherwise.
  MovingAveragePerChannelMinMaxObserver(int64_t channels, int64_t ch_axis = 0, double averaging_constant = 0.01,
                                        DType dtype = kUInt8, bool symmetric = false, bool reduce_range = false);
  /// Folds x's per-channel min and max into the statistics; x floating with x.size(ch_axis) == channels.
  Tensor forward(const Tensor& x) override;
  /// scale (C) float32 and zero_point (C) int32 for the statistics so far (scale 1, zero point 0
  /// for a channel not seen yet).
  std::pair<RawTensor, RawTensor> calculate_qparams() const;
  /// The quantized range.
  int64_t quant_min() const { return quant_min_; }
  /// The quantized range.
  int64_t quant_max() const { return quant_max_; }
  /// The channel axis.
  int64_t ch_axis() const { return ch_axis_; }
  /// "MovingAveragePerChannelMinMaxObserver(ch_axis=0, channels=...)".
  std::string name() const override;
  /// The same settings, no statistics (for clone()).
  std::unique_ptr<nn::Module> new_instance() const override;

 private:
  int64_t channels_, ch_axis_;
  double averaging_constant_;
  DType dtype_;
  bool symmetric_, reduce_range_;
  int64_t quant_min_, quant_max_;
  Tensor eps_, min_val_, max_val_;
};

/// Per-channel fake quantization (torch.ao.quantization.FakeQuantize with
/// MovingAveragePerChannelMinMaxObserver: PyTorch's default_per_channel_weight_fake_quant by
/// default, int8 per_channel_symmetric along axis 0): forward observes x when the observer is enabled,
/// stores the per-channel scale and zero point, and returns fake_quantize_per_channel_affine(x, ...)
/// when fake quantization is enabled. Buffers as PyTorch's: fake_quant_enabled, observer_enabled,
/// scale (C) float32, zero_point (C) int32, activation_post_process.{eps, min_val, max_val}.
class PerChannelFakeQuantize : public FakeQuantizeBase {
 public:
  /// The observer's settings (see MovingAveragePerChannelMinMaxObserver).
  explicit PerChannelFakeQuantize(int64_t channels, int64_t ch_axis = 0, double averaging_constant = 0.01,
                                  DType dtype = kInt8, bool symmetric = true, bool reduce_range = false);
  /// Observes, then fake-quantizes x (see the class comment).
  Tensor forward(const Tensor& x) override;
  /// The scales in use, (C) float32.
  RawTensor scale() const { return scale_.data(); }
  /// The zero points in use, (C) int32.
  RawTensor zero_point() const { return zero_point_.data(); }
  /// The observer (PyTorch's activation_post_process).
  MovingAveragePerChannelMinMaxObserver& observer() { return observer_; }
  /// "PerChannelFakeQuantize(fake_quant_enabled=1, observer_enabled=1, quant_min=-128, quant_max=127, ch_axis=0)".
  std::string name() const override;
  /// The same settings, fresh state (for clone()).
  std::unique_ptr<nn::Module> new_instance() const override;

 private:
  MovingAveragePerChannelMinMaxObserver observer_;
  int64_t channels_, ch_axis_;
  double averaging_constant_;
  DType dtype_;
  bool symmetric_, reduce_range_;
};

// Note [Quantization-aware Linear]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// prepare_qat(model) replaces each Linear by a QatLinear (torch.ao.nn.qat.Linear) with the same
// weight and bias, which computes
//   y = linear(input_fake_quant(x), weight_fake_quant(weight), bias)
// weight_fake_quant: per output channel, int8 symmetric (PyTorch's default_per_channel_weight_fake_quant);
// input_fake_quant: per tensor, uint8 affine with reduce_range, [0, 127] (the activation FakeQuantize
// of PyTorch's fbgemm QAT qconfig). Training goes through the straight-through estimator of both.
// PyTorch observes activations at each layer's output (and at a QuantStub for the model's input); here
// each Linear observes its own input, which is what its int8 product quantizes, so no QuantStub is
// needed and the ReLU between two Linears stays in float32. convert(model) replaces each QatLinear by a
// QuantizedLinear: the weight quantized with weight_fake_quant's scales (so its integers are those the
// training saw), the input quantized at run time with input_fake_quant's fixed scale and zero point
// (static quantization), the uint8 x int8 -> int32 product of quantization/dynamic.h's int8_matmul,
// and a float32 output:
//   y[n][o] = (acc[n][o] - zx colsum[o]) sx sw[o] + bias[o]
// PyTorch's quantized Linear also requantizes its output to the next observer's scale; here the next
// layer quantizes its own input, so the output stays float32 (one rounding fewer).

/// A Linear trained through fake quantization (torch.ao.nn.qat.Linear); see Note [Quantization-aware
/// Linear]. Parameters "weight", "bias"; children "weight_fake_quant" and "input_fake_quant".
class QatLinear : public nn::Module {
 public:
  /// Copies a float Linear's weight and bias (same device and dtype).
  explicit QatLinear(const nn::Linear& linear);
  /// Fresh sizes (weights zero), for clone() and for loading a checkpoint.
  QatLinear(int64_t in_features, int64_t out_features, bool bias = true);
  /// linear(input_fake_quant(x), weight_fake_quant(weight), bias).
  Tensor forward(const Tensor& x) override;
  /// "QatLinear(in_features=784, out_features=256, bias=true)".
  std::string name() const override;
  /// A layer of the same sizes (for clone()).
  std::unique_ptr<nn::Module> new_instance() const override;
  /// The fake quantizers.
  PerChannelFakeQuantize weight_fake_quant;
  /// The fake quantizers.
  FakeQuantize input_fake_quant;
  Tensor weight;   ///< (out_features, in_features)
  Tensor bias;     ///< (out_features), undefined without bias
  /// Sizes.
  int64_t in_features() const { return in_features_; }
  /// Sizes.
  int64_t out_features() const { return out_features_; }

 private:
  int64_t in_features_, out_features_;
};

/// How prepare() observes activations (torch.ao.quantization.QConfig, its activation half; weights are
/// always observed per output channel, int8 symmetric): a factory of the observer each ObservedLinear
/// puts on its input.
struct QConfig {
  /// Makes one fresh activation observer.
  std::function<std::unique_ptr<ObserverBase>()> activation;
};

/// torch.ao.quantization.default_qconfig's activation observer: MinMaxObserver(uint8, affine,
/// reduce_range), [0, 127].
QConfig default_qconfig();

/// torch.ao.quantization.get_default_qconfig(backend) for "x86" and "fbgemm" (the same): a
/// HistogramObserver(uint8, affine, reduce_range) on the activations. Another name raises an Error
/// naming the two.
QConfig get_default_qconfig(const std::string& backend = "x86");

/// A Linear that records the range of its input for static post-training quantization (what
/// torch.ao.quantization.prepare makes of a Linear, with the observer on the input: Note
/// [Quantization-aware Linear]). Parameters "weight", "bias" (the float Linear's); child
/// "input_observer", made by a QConfig (default: MinMaxObserver(uint8, affine, reduce_range: [0, 127])).
/// forward(x) observes x
/// and returns linear(x, weight, bias). convert() turns it into a QuantizedLinear whose weight is
/// quantized per output channel, int8 symmetric, from its own min and max per channel (PyTorch's
/// default_per_channel_weight_observer), and whose input scale and zero point are the observer's.
class ObservedLinear : public nn::Module {
 public:
  /// Copies a float Linear's weight and bias; the input observer from qconfig.
  explicit ObservedLinear(const nn::Linear& linear, const QConfig& qconfig = default_qconfig());
  /// Fresh sizes (weights zero), for clone() and for loading a checkpoint.
  ObservedLinear(int64_t in_features, int64_t out_features, bool bias = true, const QConfig& qconfig = default_qconfig());
  /// Observes x, then linear(x, weight, bias).
  Tensor forward(const Tensor& x) override;
  /// "ObservedLinear(in_features=784, out_features=256, bias=true)".
  std::string name() const override;
  /// A layer of the same sizes and observer kind (for clone()).
  std::unique_ptr<nn::Module> new_instance() const override;
  /// The input's observer (the child "input_observer").
  std::shared_ptr<ObserverBase> input_observer;
  Tensor weight;   ///< (out_features, in_features)
  Tensor bias;     ///< (out_features), undefined without bias

 private:
  int64_t in_features_, out_features_;
  QConfig qconfig_;
};

/// A statically quantized Linear (torch.ao.nn.quantized.Linear, float32 in and out): int8 weights per
/// output channel, the input quantized with a fixed scale and zero point; see Note [Quantization-aware
/// Linear]. Buffers: "weight" int8 (O, I), "weight_scale" float64 (O), "weight_zero_point" int64 (O),
/// "bias" float32 (O), "input_scale" float64 (1), "input_zero_point" int64 (1). Inference only, CPU.
class QuantizedLinear : public nn::Module {
 public:
  /// From a QatLinear's weight and fake quantizers (CPU; DeviceError otherwise).
  explicit QuantizedLinear(const QatLinear& qat);
  /// From an ObservedLinear after calibration (see ObservedLinear).
  explicit QuantizedLinear(const ObservedLinear& observed);
  /// From a float weight (O, I) and bias, weight scales (O) and zero points (O), and the input's
  /// scale and zero point (uint8, [input_quant_min, input_quant_max]).
  QuantizedLinear(const RawTensor& weight, const RawTensor& bias, const RawTensor& weight_scale, const RawTensor& weight_zero_point,
                  double input_scale, int64_t input_zero_point, int64_t input_quant_min, int64_t input_quant_max);
  /// Empty of the given sizes, for clone() and loading a checkpoint.
  QuantizedLinear(int64_t in_features, int64_t out_features, bool bias = true, int64_t input_quant_min = 0,
                  int64_t input_quant_max = 127);
  /// x (..., in_features) float -> (..., out_features) float32.
  Tensor forward(const Tensor& x) override;
  /// "QuantizedLinear(in_features=.., out_features=.., scale=.., zero_point=.., qscheme=per_channel_affine)".
  std::string name() const override;
  /// A layer of the same sizes (for clone()).
  std::unique_ptr<nn::Module> new_instance() const override;
  /// The weight as a quantized tensor (per channel, axis 0).
  QuantizedTensor weight() const;
  /// The input's fixed scale.
  double input_scale() const;
  /// The input's fixed zero point.
  int64_t input_zero_point() const;

 private:
  int64_t in_features_, out_features_, input_quant_min_, input_quant_max_;
  Tensor weight_, scale_, zero_point_, bias_, input_scale_, input_zero_point_;
  internal::WeightSums colsum_;   // (O) int64: sum_i wq[o][i]
};

/// A copy of model in which every Linear is a QatLinear (torch.ao.quantization.prepare_qat with the
/// fbgemm QAT qconfig); the copy is in training mode. model: a Linear, a Sequential or nested
/// Sequentials (children keep their names); Error for a Linear inside another kind of module.
std::unique_ptr<nn::Module> prepare_qat(const nn::Module& model);

/// A copy of model in which every Linear is an ObservedLinear (torch.ao.quantization.prepare, for
/// static post-training quantization), in eval mode: run calibration batches through it, then convert().
/// qconfig picks the activation observer (default_qconfig(): MinMaxObserver; get_default_qconfig():
/// HistogramObserver, as PyTorch's x86/fbgemm default). The same structure rules as prepare_qat.
std::unique_ptr<nn::Module> prepare(const nn::Module& model, const QConfig& qconfig = default_qconfig());

/// A copy of model in which every QatLinear and ObservedLinear is a QuantizedLinear
/// (torch.ao.quantization.convert), in eval mode; the same structure rules as prepare_qat. CPU only.
std::unique_ptr<nn::Module> convert(const nn::Module& model);

/// Freezes the scales and zero points of every FakeQuantize and PerChannelFakeQuantize in model
/// (torch.ao.quantization.disable_observer applied to each module): what an evaluation of a QAT model
/// does first, so that the test data does not move them.
void disable_observer(nn::Module& model);
/// Lets them observe again (torch.ao.quantization.enable_observer).
void enable_observer(nn::Module& model);

}  // namespace quantization
}  // namespace tg
