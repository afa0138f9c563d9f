/// \file
/// quantization/dynamic.h: dynamic quantization (torch.ao.quantization.quantize_dynamic): Linear
/// layers with int8 weights, quantized per output channel, whose input is quantized per batch at
/// run time; the product is int8 x int8 with int32 accumulation (oneDNN's matmul when tensorgrad is
/// built with it, a reference loop otherwise), dequantized to float32. Quantized tensors are in
/// quantization/quantize.h.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "tensorgrad/nn/layers.h"
#include "tensorgrad/quantization/quantize.h"

namespace tg {
namespace quantization {

// Note [Dynamic quantized Linear]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The weight (O, I) is quantized once, per output channel and symmetric (PyTorch's
// per_channel_dynamic_qconfig: qint8, scale[o] = max|w[o]| / 127.5 in float32, at least float32
// epsilon, zero point 0). Each forward quantizes its input x (N, I) per tensor to uint8 from the
// batch's own range with PyTorch's ChooseQuantizationParams and reduce_range, as torch's dynamic
// Linear calls it (quantized::linear_dynamic(..., reduce_range=True), also on its onednn engine):
// min and max widened to include 0, the range [0, 127], scale = (max - min) / 127, the zero point
// from whichever end rounds with the smaller error. Then
//   acc[n][o] = sum_i xq[n][i] wq[o][i]                                  (uint8 x int8 -> int32, exact)
//   y[n][o]   = (acc[n][o] - zx colsum[o]) sx sw[o] + bias[o]            (float32)
// with colsum[o] = sum_i wq[o][i] precomputed. The integer product is oneDNN's u8s8s32 matmul when
// built with it (TENSORGRAD_HAVE_DNNL), else a plain loop; tests compare it with the float64 product
// of the dequantized operands. Inference only: the output never requires grad; CPU only.

namespace internal {

/// sum_i wq[o][i] (O) int64 of an int8 weight (O, I), recomputed only when the weight's storage or
/// version changes; safe for concurrent forwards.
class WeightSums {
 public:
  /// The sums for w.
  RawTensor get(const RawTensor& w) const;

 private:
  mutable std::mutex mutex_;
  mutable RawTensor sums_;
  mutable const void* of_ = nullptr;
  mutable uint64_t version_ = 0;
};

}  // namespace internal

/// A Linear whose weight is int8 (torch.ao.nn.quantized.dynamic.Linear); see Note [Dynamic
/// quantized Linear]. Its buffers, saved by tg::save, are "weight" (int8 (O, I)), "weight_scale"
/// (float64 (O)), "weight_zero_point" (int64 (O)) and "bias" (float32 (O), when the Linear had one).
class DynamicQuantizedLinear : public nn::Module {
 public:
  /// Quantizes a float Linear's weight (on the CPU; DeviceError for a CUDA Linear).
  explicit DynamicQuantizedLinear(const nn::Linear& linear);
  /// An empty layer of the given sizes (weights zero, scales 1), for clone() and for loading a checkpoint.
  DynamicQuantizedLinear(int64_t in_features, int64_t out_features, bool bias = true);
  /// x (..., in_features) float -> (..., out_features) float32; DeviceError for a CUDA x.
  Tensor forward(const Tensor& x) override;
  /// "DynamicQuantizedLinear(in_features=784, out_features=128, dtype=qint8, qscheme=per_channel_affine)".
  std::string name() const override;
  /// A layer of the same sizes (for clone(); the state is copied by clone()).
  std::unique_ptr<nn::Module> new_instance() const override;
  /// The weight as a quantized tensor (per channel, axis 0).
  QuantizedTensor weight() const;

 private:
  int64_t in_features_, out_features_;
  Tensor weight_, scale_, zero_point_, bias_;
  internal::WeightSums colsum_;   // (O) int64: sum_i wq[o][i], recomputed when the weight changes
};

namespace internal {

/// The float32 output of an int8 Linear from its int32 product acc (N, O) = xq wq^T:
/// y[n][o] = (acc[n][o] - zx colsum[o]) sx sw[o] + bias[o], with w_scale (O) float64 and bias (O)
/// float32 or undefined (Note [Dynamic quantized Linear]).
RawTensor int8_linear_output(const RawTensor& acc, double sx, int64_t zx, const RawTensor& colsum, const RawTensor& w_scale,
                          const RawTensor& bias);

/// A copy of model in which each module m with wants(m) is replace(m), the rest cloned; model is such
/// a module, a Sequential or nested Sequentials (children keep their names). Error naming op for a
/// wanted module inside another kind of module, whose forward calls it directly.
std::unique_ptr<nn::Module> rebuild(const nn::Module& model, const std::function<bool(const nn::Module&)>& wants,
                                    const std::function<std::unique_ptr<nn::Module>(const nn::Module&)>& replace,
                                    const std::string& op, const std::string& what);

}  // namespace internal

/// Returns a copy of model in which every Linear is a DynamicQuantizedLinear
/// (torch.ao.quantization.quantize_dynamic(model, {nn.Linear}, dtype=torch.qint8) with per-channel
/// weights). model is a Linear, a Sequential, or nested Sequentials; the other modules are cloned and
/// the children keep their names (a state_dict says "fc1.weight" when the Sequential named it "fc1").
/// Error for a Linear inside another kind of module, whose forward calls it directly and so cannot
/// be rebuilt around a replacement.
std::unique_ptr<nn::Module> quantize_dynamic(const nn::Module& model);

/// The int32 product acc (N, O) = xq (N, I) uint8 times wq (O, I) int8 transposed, all contiguous
/// CPU tensors (the kernel behind DynamicQuantizedLinear: oneDNN when built with it).
RawTensor int8_matmul(const RawTensor& xq, const RawTensor& wq);
/// Whether int8_matmul runs on oneDNN (else a reference loop).
bool has_onednn();

}  // namespace quantization
}  // namespace tg
