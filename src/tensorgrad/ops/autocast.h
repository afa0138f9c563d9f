/// \file
/// ops/autocast.h: automatic mixed precision regions (PyTorch's torch.autocast), per thread and
/// nestable. Inside a region, the ops of PyTorch's lists run in a chosen precision: see Note
/// [Autocast op lists] in ops/autocast.cpp.
#pragma once
#include "tensorgrad/autograd/tensor.h"

namespace tg {
namespace amp {

/// Enables autocast for one device type on the calling thread until destroyed (PyTorch's
/// `with torch.autocast(device_type, dtype)`). Regions nest: an inner guard's settings hold until it
/// ends, then the outer ones return; `enabled = false` switches autocast off inside a region. dtype
/// must be float16 or bfloat16 (DTypeError); its default is float16 on CUDA and bfloat16 on the CPU,
/// as in PyTorch. Casts of float32 leaves that require grad (parameters) are cached until the
/// outermost region of the thread ends, so a weight used by several ops is converted once per region
/// (Note [Autocast cast cache] in ops/autocast.cpp).
class AutocastGuard {
 public:
  /// Autocast on `device`'s type (the index does not matter) in `dtype`.
  AutocastGuard(Device device, DType dtype, bool enabled = true);
  /// Autocast on `device`'s type in its default dtype.
  explicit AutocastGuard(Device device);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  DeviceType type_;
  bool prev_enabled_;
  DType prev_dtype_;
};

/// Whether autocast is on for `type` on the calling thread (torch.is_autocast_enabled).
bool is_autocast_enabled(DeviceType type);
/// The lower precision autocast uses for `type` on the calling thread (torch.get_autocast_dtype).
DType get_autocast_dtype(DeviceType type);

namespace detail {
/// The ops that PyTorch's autocast lists and tensorgrad has (Note [Autocast op lists]): each names
/// itself when it asks for its inputs' casts.
enum class AutocastOp : uint8_t {
  Matmul,
  Linear,
  Conv1d,
  Conv2d,
  ScaledDotProductAttention,
  Softmax,
  LogSoftmax,
  CrossEntropy,
  MseLoss,
  Sum,
  Exp,
  Log,
  Pow,
  LayerNorm,
  GroupNorm,
  Softplus,
  ConvTranspose2d,
  NllLoss,
  BinaryCrossEntropy,
  BinaryCrossEntropyWithLogits,
  L1Loss,
  SmoothL1Loss,
  HuberLoss,
  KlDiv,
  MarginRankingLoss,
  CosineEmbeddingLoss,
  HingeEmbeddingLoss,
  TripletMarginLoss,
  MultiMarginLoss,
  PoissonNllLoss,
  SoftMarginLoss,
  MultilabelMarginLoss,
  CtcLoss,
  GaussianNllLoss,
  MultilabelSoftMarginLoss,
  TripletMarginWithDistanceLoss,
};
/// What autocast does to an op's floating inputs.
enum class CastPolicy : uint8_t {
  None,      ///< not listed: the op runs in its inputs' dtypes
  Lower,     ///< cast to the region's float16 or bfloat16
  Float32,   ///< cast to float32
};
/// op's policy on a device type: PyTorch's list for that device (the CPU's and CUDA's differ).
CastPolicy policy(AutocastOp op, DeviceType type);
/// x as op's policy casts it when autocast is on for x's device and x is eligible (float32, float16
/// or bfloat16: float64 and integers run as they are, as in PyTorch); x itself otherwise. A
/// parameter's lower-precision cast comes from the region's cache (Note [Autocast cast cache]).
Tensor cast(AutocastOp op, const Tensor& x);
/// Whether autocast is on for the device type of x (the ops test it before casting).
bool active_for(const Tensor& x);
/// Whether a product of a, b and c (matmul: a, b; linear: x, weight, bias, the bias optional) takes
/// the path of Note [Autocast products through float32] (ops/linalg.cpp): autocast on for a's device,
/// whose products in the region's dtype run through float32 (prim::products_through_float32: the
/// CPU, but for bfloat16 on one with AVX512_BF16); a and b defined; every defined operand float32 or the
/// region's dtype, on a's device; one of them at least float32.
bool product_through_float32(const Tensor& a, const Tensor& b, const Tensor& c = Tensor());
/// The region's lower precision for x's device type.
DType lower_dtype(const Tensor& x);
/// x as a float32 operand in the region's precision: a float32 x rounded (round_to_precision), a
/// lower-precision x converted exactly. A parameter's rounding is cached like its cast (Note [Autocast
/// cast cache]).
RawTensor rounded_operand(const Tensor& x);
}  // namespace detail

}  // namespace amp
}  // namespace tg
