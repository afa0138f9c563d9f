// quantization/quantize.cpp: quantize_per_tensor / quantize_per_channel / dequantize as chains of
// prim:: ops (so either device runs them), the checks on quantization parameters, and the safetensors
// layout. The arithmetic and the file keys: Note [Quantized tensors] in quantization/quantize.h.
#include "tensorgrad/quantization/quantize.h"

#include <cmath>
#include <map>

#include "tensorgrad/autograd/grad_mode.h"
#include "tensorgrad/prim/prim.h"
#include "tensorgrad/io/safetensors.h"

namespace tg {

namespace {

void qrange(const char* op, DType dtype, int64_t* qmin, int64_t* qmax) {
  TG_CHECK(dtype == kInt8 || dtype == kUInt8, DTypeError, op, ": expected dtype int8 (qint8) or uint8 (quint8), got ",
           dtype_name(dtype));
  *qmin = dtype == kInt8 ? -128 : 0;
  *qmax = dtype == kInt8 ? 127 : 255;
}

void check_scale(const char* op, double scale) {
  TG_CHECK(std::isfinite(scale) && scale > 0, Error, op, ": scale must be positive and finite, got ", scale);
  TG_CHECK(static_cast<float>(scale) > 0 && std::isfinite(1.0f / static_cast<float>(scale)), Error, op,
           ": scale ", scale, " is too small for float32 arithmetic");
}

void check_zero_point(const char* op, int64_t zp, int64_t qmin, int64_t qmax) {
  TG_CHECK(zp >= qmin && zp <= qmax, Error, op, ": zero_point ", zp, " is outside [", qmin, ", ", qmax, "]");
}

/// v (C) reshaped to broadcast along axis of a rank-`rank` tensor: (1, .., C, .., 1).
RawTensor along(const RawTensor& v, int64_t axis, int64_t rank) {
  Shape s(static_cast<std::size_t>(rank), 1);
  s[static_cast<std::size_t>(axis)] = v.numel();
  return v.reshape(s);
}

/// The per-channel parameters checked and normalized: scales float64, zero points int64, both (C)
/// contiguous on x's device.
void check_channels(const char* op, const RawTensor& x, const RawTensor& scales, const RawTensor& zero_points, int64_t* axis,
                    int64_t qmin, int64_t qmax, RawTensor* s64, RawTensor* z64) {
  TG_CHECK(x.dim() > 0, ShapeError, op, ": a 0-d tensor has no channel axis");
  *axis = wrap_dim(*axis, x.dim(), op);
  const int64_t C = x.shape()[static_cast<std::size_t>(*axis)];
  TG_CHECK(scales.defined() && zero_points.defined(), Error, op, ": scales and zero_points must be defined");
  TG_CHECK(scales.dim() == 1 && scales.numel() == C, ShapeError, op, ": expected scales of shape (", C,
           ") for axis ", *axis, " of size ", C, ", got ", shape_str(scales.shape()));
  TG_CHECK(zero_points.dim() == 1 && zero_points.numel() == C, ShapeError, op, ": expected zero_points of shape (",
           C, "), got ", shape_str(zero_points.shape()));
  prim::check_floating(op, scales);
  TG_CHECK(!is_floating(zero_points.dtype()) && zero_points.dtype() != kBool, DTypeError, op,
           ": zero_points must be an integer tensor, got ", dtype_name(zero_points.dtype()));
  prim::check_same_device(op, x, scales);
  prim::check_same_device(op, x, zero_points);
  *s64 = scales.to(kFloat64).contiguous();
  *z64 = zero_points.to(kInt64).contiguous();
  // the parameters are checked on the host: they are C numbers, and a bad one must fail here, not
  // produce garbage (one read, as any parameter check of a per-channel op)
  const Tensor sv(s64->to(Device::cpu())), zv(z64->to(Device::cpu()));
  const std::vector<double> sc = sv.to_vector<double>();
  const std::vector<int64_t> zp = zv.to_vector<int64_t>();
  for (std::size_t c = 0; c < sc.size(); ++c) {
    check_scale(op, sc[c]);
    check_zero_point(op, zp[c], qmin, qmax);
  }
}

/// clamp(zp + nearbyint(x * inv_scale), qmin, qmax) in float32, stored as dtype. inv and zp are 0-d or
/// broadcast along the channel axis.
RawTensor quantize_values(const RawTensor& x, const RawTensor& inv, const RawTensor& zp, int64_t qmin, int64_t qmax, DType dtype) {
  const RawTensor xf = x.to(kFloat32);
  const RawTensor r = prim::unary(UnaryOp::Round, prim::mul(xf, inv));                  // nearbyint(x / s)
  const RawTensor q = prim::unary(UnaryOp::Clamp, prim::add(r, zp), {double(qmin), double(qmax)});
  return q.to(dtype);                                                                  // exact: integral values
}

}  // namespace

QuantizedTensor QuantizedTensor::per_tensor(Tensor int_repr, double scale, int64_t zero_point) {
  TG_CHECK(int_repr.defined(), Error, "QuantizedTensor: int_repr must be defined");
  int64_t qmin = 0, qmax = 0;
  qrange("QuantizedTensor", int_repr.dtype(), &qmin, &qmax);
  check_scale("QuantizedTensor", scale);
  check_zero_point("QuantizedTensor", zero_point, qmin, qmax);
  QuantizedTensor q;
  q.int_repr_ = Tensor(int_repr.data());
  q.scheme_ = QScheme::PerTensorAffine;
  q.scale_ = scale;
  q.zero_point_ = zero_point;
  return q;
}

QuantizedTensor QuantizedTensor::per_channel(Tensor int_repr, Tensor scales, Tensor zero_points, int64_t axis) {
  TG_CHECK(int_repr.defined(), Error, "QuantizedTensor: int_repr must be defined");
  int64_t qmin = 0, qmax = 0;
  qrange("QuantizedTensor", int_repr.dtype(), &qmin, &qmax);
  RawTensor s, z;
  check_channels("QuantizedTensor", int_repr.data(), scales.data(), zero_points.data(), &axis, qmin, qmax, &s, &z);
  QuantizedTensor q;
  q.int_repr_ = Tensor(int_repr.data());
  q.scheme_ = QScheme::PerChannelAffine;
  q.scales_ = Tensor(s);
  q.zero_points_ = Tensor(z);
  q.axis_ = axis;
  return q;
}

double QuantizedTensor::q_scale() const {
  TG_CHECK(scheme_ == QScheme::PerTensorAffine, Error, "q_scale: expected a per-tensor quantized tensor, got per-channel");
  return scale_;
}
int64_t QuantizedTensor::q_zero_point() const {
  TG_CHECK(scheme_ == QScheme::PerTensorAffine, Error,
           "q_zero_point: expected a per-tensor quantized tensor, got per-channel");
  return zero_point_;
}
const Tensor& QuantizedTensor::q_per_channel_scales() const {
  TG_CHECK(scheme_ == QScheme::PerChannelAffine, Error,
           "q_per_channel_scales: expected a per-channel quantized tensor, got per-tensor");
  return scales_;
}
const Tensor& QuantizedTensor::q_per_channel_zero_points() const {
  TG_CHECK(scheme_ == QScheme::PerChannelAffine, Error,
           "q_per_channel_zero_points: expected a per-channel quantized tensor, got per-tensor");
  return zero_points_;
}
int64_t QuantizedTensor::q_per_channel_axis() const {
  TG_CHECK(scheme_ == QScheme::PerChannelAffine, Error,
           "q_per_channel_axis: expected a per-channel quantized tensor, got per-tensor");
  return axis_;
}

Tensor QuantizedTensor::dequantize() const {
  TG_CHECK(defined(), Error, "dequantize: the quantized tensor is undefined");
  RawTensor out;
  if (scheme_ == QScheme::PerTensorAffine) {
    const RawTensor q = int_repr_.data().to(kFloat32);
    out = prim::mul(prim::sub(q, prim::scalar_like(double(zero_point_), q)),
                    static_cast<double>(static_cast<float>(scale_)));                      // (q - zp) float(s)
  } else {
    const RawTensor q = int_repr_.data().to(kFloat64);
    const RawTensor z = along(zero_points_.data().to(kFloat64), axis_, q.dim());
    const RawTensor s = along(scales_.data(), axis_, q.dim());
    out = prim::mul(prim::sub(q, z), s);                                                       // (q - zp[c]) s[c]
  }
  return Tensor(out.to(kFloat32));
}

QuantizedTensor QuantizedTensor::to(Device device) const {
  QuantizedTensor q = *this;
  if (!defined()) return q;
  q.int_repr_ = int_repr_.to(device);
  if (scales_.defined()) q.scales_ = scales_.to(device), q.zero_points_ = zero_points_.to(device);
  return q;
}

int64_t QuantizedTensor::nbytes() const {
  return defined() ? int_repr_.numel() * static_cast<int64_t>(dtype_size(dtype())) : 0;
}

QuantizedTensor quantize_per_tensor(const Tensor& x, double scale, int64_t zero_point, DType dtype) {
  TG_CHECK(x.defined(), Error, "quantize_per_tensor: x must be defined");
  prim::check_floating("quantize_per_tensor", x.data());
  int64_t qmin = 0, qmax = 0;
  qrange("quantize_per_tensor", dtype, &qmin, &qmax);
  check_scale("quantize_per_tensor", scale);
  check_zero_point("quantize_per_tensor", zero_point, qmin, qmax);
  const RawTensor xf = x.data().to(kFloat32);
  const double inv = static_cast<double>(1.0f / static_cast<float>(scale));   // PyTorch's float inverse
  const RawTensor q = quantize_values(xf, prim::scalar_like(inv, xf), prim::scalar_like(double(zero_point), xf), qmin,
                                   qmax, dtype);
  return QuantizedTensor::per_tensor(Tensor(q), scale, zero_point);
}

QuantizedTensor quantize_per_channel(const Tensor& x, const Tensor& scales, const Tensor& zero_points,
                                     int64_t axis, DType dtype) {
  TG_CHECK(x.defined(), Error, "quantize_per_channel: x must be defined");
  prim::check_floating("quantize_per_channel", x.data());
  int64_t qmin = 0, qmax = 0;
  qrange("quantize_per_channel", dtype, &qmin, &qmax);
  RawTensor s, z;
  check_channels("quantize_per_channel", x.data(), scales.data(), zero_points.data(), &axis, qmin, qmax, &s, &z);
  const RawTensor xf = x.data().to(kFloat32);
  const RawTensor s32 = s.to(kFloat32);
  const RawTensor inv = prim::div(prim::full({}, 1.0, kFloat32, x.device()), s32);      // 1.0f / float(s[c])
  const RawTensor q = quantize_values(xf, along(inv, axis, x.dim()), along(z.to(kFloat32), axis, x.dim()), qmin, qmax,
                                   dtype);
  return QuantizedTensor::per_channel(Tensor(q), Tensor(s), Tensor(z), axis);
}

Tensor dequantize(const QuantizedTensor& q) { return q.dequantize(); }

void save_quantized(const std::vector<std::pair<std::string, QuantizedTensor>>& tensors, const std::string& path) {
  std::vector<std::pair<std::string, RawTensor>> flat;
  for (const auto& entry : tensors) {
    const std::string& name = entry.first;
    const QuantizedTensor& q = entry.second;
    TG_CHECK(q.defined(), SerializationError, "save_quantized: ", path, ": tensor '", name, "' is undefined");
    flat.emplace_back(name, q.int_repr().data());
    if (q.qscheme() == QScheme::PerTensorAffine) {
      flat.emplace_back(name + ".scale", prim::full({}, q.q_scale(), kFloat64));
      flat.emplace_back(name + ".zero_point", prim::full({}, double(q.q_zero_point()), kInt64));
    } else {
      flat.emplace_back(name + ".scale", q.q_per_channel_scales().data());
      flat.emplace_back(name + ".zero_point", q.q_per_channel_zero_points().data());
      flat.emplace_back(name + ".axis", prim::full({}, double(q.q_per_channel_axis()), kInt64));
    }
  }
  save_tensors(flat, path);
}

std::vector<std::pair<std::string, QuantizedTensor>> load_quantized(const std::string& path) {
  const std::vector<std::pair<std::string, RawTensor>> flat = load_tensors(path);
  std::map<std::string, RawTensor> by_name(flat.begin(), flat.end());
  std::vector<std::pair<std::string, QuantizedTensor>> out;
  auto ends_with = [](const std::string& s, const std::string& suffix) {
    return s.size() > suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  std::size_t used = 0;
  for (const auto& entry : flat) {
    const std::string& name = entry.first;
    if (ends_with(name, ".scale") || ends_with(name, ".zero_point") || ends_with(name, ".axis")) continue;
    const RawTensor& ints = entry.second;
    TG_CHECK(ints.dtype() == kInt8 || ints.dtype() == kUInt8, SerializationError, "load_quantized: ", path,
             ": tensor '", name, "' is ", dtype_name(ints.dtype()), ", expected I8 or U8");
    const auto s = by_name.find(name + ".scale"), z = by_name.find(name + ".zero_point");
    TG_CHECK(s != by_name.end() && z != by_name.end(), SerializationError, "load_quantized: ", path, ": tensor '",
             name, "' lacks '", name, ".scale' or '", name, ".zero_point'");
    const auto a = by_name.find(name + ".axis");
    try {
      if (a == by_name.end()) {
        TG_CHECK(s->second.dim() == 0 && z->second.dim() == 0, Error, "per-tensor parameters must be 0-d");
        // an integer, as save_quantized writes it: converting a float (NaN, 1e30) to int64 is undefined
        TG_CHECK(!is_floating(z->second.dtype()) && z->second.dtype() != kBool, Error,
                 "the zero point must be an integer tensor, got ", dtype_name(z->second.dtype()));
        out.emplace_back(name, QuantizedTensor::per_tensor(Tensor(ints), Tensor(s->second.to(kFloat64)).item(),
                                                           Tensor(z->second.to(kInt64)).item<int64_t>()));
        used += 3;
      } else {
        TG_CHECK(a->second.dim() == 0 && !is_floating(a->second.dtype()), Error,
                 "the axis must be a 0-d integer");
        out.emplace_back(name, QuantizedTensor::per_channel(Tensor(ints), Tensor(s->second), Tensor(z->second),
                                                            Tensor(a->second.to(kInt64)).item<int64_t>()));
        used += 4;
      }
    } catch (const SerializationError&) {
      throw;
    } catch (const Error& e) {
      throw SerializationError(detail::cat("load_quantized: ", path, ": tensor '", name, "': ", e.what()));
    }
  }
  TG_CHECK(used == flat.size(), SerializationError, "load_quantized: ", path, ": ", flat.size() - used,
           " tensor(s) belong to no quantized tensor");
  return out;
}

}  // namespace tg
