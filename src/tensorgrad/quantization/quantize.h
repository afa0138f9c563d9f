/// \file
/// quantization/quantize.h: quantized tensors (torch.quantize_per_tensor, torch.quantize_per_channel,
/// RawTensor.dequantize) and their safetensors layout. The int8 / uint8 values live in an ordinary
/// tensor; a QuantizedTensor adds its scheme, scales and zero points. Quantized modules
/// (quantize_dynamic) are in quantization/dynamic.h.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tensorgrad/autograd/tensor.h"

namespace tg {

/// How a QuantizedTensor maps its integers to real values (torch.qscheme).
enum class QScheme : uint8_t { PerTensorAffine, PerChannelAffine };
/** \var QScheme::PerTensorAffine
    One scale and zero point for every element (torch.per_tensor_affine). */
/** \var QScheme::PerChannelAffine
    One scale and zero point per index along one axis (torch.per_channel_affine). */

// Note [Quantized tensors]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// PyTorch gives a quantized tensor its own dtypes (qint8, quint8) and backend. tensorgrad keeps the
// integers in an ordinary int8 / uint8 Tensor (int_repr()), so that every existing kernel copies,
// moves and saves them, and QuantizedTensor is a small value type holding that Tensor plus the
// quantization parameters: scale and zero point (per tensor), or float64 scales, int64 zero points and
// an axis (per channel). Its dtype() is the integer dtype (torch.qint8 is kInt8, torch.quint8 kUInt8).
// The arithmetic is PyTorch's (ATen's quantize_val / dequantize_val), checked against values recorded
// from PyTorch in tests/test_quantization.cpp:
//   q = clamp(zero_point + nearbyint(x * (1.0f / float(scale))), qmin, qmax)   in float32, halves to even
//   x' = (float(q) - zero_point) * float(scale)                 per tensor, in float32
//   x' = float((double(q) - zero_points[c]) * scales[c])       per channel c, in float64
// with [qmin, qmax] = [-128, 127] for int8 and [0, 255] for uint8 (ATen's vectorized per-tensor
// dequantize multiplies in float, its per-channel loop in double: both are matched bit for bit).
// Both run through prim:: ops, so they work on either device.
// In a safetensors file (save_quantized / load_quantized) a quantized tensor `name` is stored as
//   name              the integers (I8 or U8), the tensor's shape
//   name.scale        F64: 0-d per tensor, (C) per channel
//   name.zero_point   I64: the same shape as name.scale
//   name.axis         I64 0-d, per channel only

/// A tensor of int8 or uint8 values with the scale(s) and zero point(s) that map them to real
/// numbers (see Note [Quantized tensors] in quantization/quantize.h). Copies alias, as Tensors do.
class QuantizedTensor {
 public:
  /// An undefined quantized tensor (defined() is false).
  QuantizedTensor() = default;
  /// Per-tensor affine from its parts: int_repr int8 or uint8 (DTypeError), scale > 0 and finite
  /// (Error), zero_point inside the dtype's range (Error).
  static QuantizedTensor per_tensor(Tensor int_repr, double scale, int64_t zero_point);
  /// Per-channel affine from its parts: scales (C) floating and positive, zero_points (C) integer in
  /// the dtype's range, C = int_repr.size(axis) (ShapeError), all on int_repr's device.
  static QuantizedTensor per_channel(Tensor int_repr, Tensor scales, Tensor zero_points, int64_t axis);

  /// Whether this holds a tensor.
  bool defined() const { return int_repr_.defined(); }
  /// The stored integers (torch.Tensor.int_repr), int8 or uint8.
  const Tensor& int_repr() const { return int_repr_; }
  /// kInt8 (torch.qint8) or kUInt8 (torch.quint8).
  DType dtype() const { return int_repr_.dtype(); }
  /// The tensor's shape.
  const Shape& shape() const { return int_repr_.shape(); }
  /// Where the integers are.
  Device device() const { return int_repr_.device(); }
  /// The scheme (torch.Tensor.qscheme).
  QScheme qscheme() const { return scheme_; }
  /// The scale of a per-tensor quantized tensor (torch.Tensor.q_scale); Error for per channel.
  double q_scale() const;
  /// The zero point of a per-tensor quantized tensor (torch.Tensor.q_zero_point); Error for per channel.
  int64_t q_zero_point() const;
  /// The float64 scales (C) of a per-channel tensor (torch.Tensor.q_per_channel_scales); Error per tensor.
  const Tensor& q_per_channel_scales() const;
  /// The int64 zero points (C) of a per-channel tensor; Error per tensor.
  const Tensor& q_per_channel_zero_points() const;
  /// The channel axis of a per-channel tensor (torch.Tensor.q_per_channel_axis); Error per tensor.
  int64_t q_per_channel_axis() const;
  /// The real values, float32 (torch.Tensor.dequantize): (q - zero_point) * scale. Not differentiable.
  Tensor dequantize() const;
  /// A copy on device (the parameters travel with it).
  QuantizedTensor to(Device device) const;
  /// The bytes of the integers (what a checkpoint stores for them, the parameters aside).
  int64_t nbytes() const;

 private:
  Tensor int_repr_;
  QScheme scheme_ = QScheme::PerTensorAffine;
  double scale_ = 1;
  int64_t zero_point_ = 0;
  Tensor scales_, zero_points_;   // per channel: (C) float64, (C) int64
  int64_t axis_ = 0;
};

/// Quantizes floating x with one scale and zero point (torch.quantize_per_tensor): dtype kInt8 or
/// kUInt8 (DTypeError otherwise); scale > 0 and finite, zero_point in the dtype's range (Error).
QuantizedTensor quantize_per_tensor(const Tensor& x, double scale, int64_t zero_point, DType dtype);
/// Quantizes floating x with scales[c] and zero_points[c] for index c along axis
/// (torch.quantize_per_channel): scales (C) floating, zero_points (C) integer, C = x.size(axis).
QuantizedTensor quantize_per_channel(const Tensor& x, const Tensor& scales, const Tensor& zero_points,
                                     int64_t axis, DType dtype);
/// q.dequantize().
Tensor dequantize(const QuantizedTensor& q);

/// Writes quantized tensors to a safetensors file under the keys of Note [Quantized tensors]
/// (through save_tensors: atomic, checksummed). Names must be unique.
void save_quantized(const std::vector<std::pair<std::string, QuantizedTensor>>& tensors, const std::string& path);
/// Reads the quantized tensors save_quantized wrote (on the CPU), in the file's order of their
/// integer tensors. SerializationError for a file whose keys or dtypes do not form quantized tensors.
std::vector<std::pair<std::string, QuantizedTensor>> load_quantized(const std::string& path);

}  // namespace tg
