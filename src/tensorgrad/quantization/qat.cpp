// quantization/qat.cpp: fake_quantize_per_channel_affine (forward through prim::, the straight-through
// backward right below), the per-channel moving-average observer, PerChannelFakeQuantize, QatLinear,
// QuantizedLinear, prepare_qat and convert. The design: Note [Quantization-aware Linear] in
// quantization/qat.h; the int8 product and the model rebuild are quantization/dynamic.cpp's.
#include "tensorgrad/quantization/qat.h"

#include <cmath>
#include <limits>
#include <sstream>
#include <tuple>
#include <vector>

#include "tensorgrad/prim/prim.h"
#include "tensorgrad/ops/ops.h"
#include "tensorgrad/ops/rules.h"
#include "tensorgrad/quantization/dynamic.h"

namespace tg {

namespace {

/// v (C) on the host as doubles (a few values: the parameters of a per-channel quantizer).
std::vector<double> host_doubles(const RawTensor& v) {
  return Tensor(v.to(Device::cpu()).to(kFloat64).contiguous()).to_vector<double>();
}

/// v (C) viewed with C along axis and 1 elsewhere, for broadcasting against a tensor of `dim` dimensions.
RawTensor along(const RawTensor& v, int64_t axis, int64_t dim) {
  Shape s(static_cast<std::size_t>(dim), 1);
  s[static_cast<std::size_t>(axis)] = v.numel();
  return v.contiguous().reshape(s);
}

}  // namespace

Tensor fake_quantize_per_channel_affine(const Tensor& x, const Tensor& scale, const Tensor& zero_point,
                                          int64_t axis, int64_t quant_min, int64_t quant_max) {
  const char* op = "fake_quantize_per_channel_affine";
  TG_CHECK(x.defined() && scale.defined() && zero_point.defined(), Error, op,
           ": x, scale and zero_point must be defined");
  prim::check_floating(op, x.data());
  TG_CHECK(axis >= 0 && axis < x.dim(), IndexError, op,
           ": `axis` must be between 0 and number of dimensions of input, got axis ", axis, " for input ",
           shape_str(x.shape()));
  const int64_t C = x.shape()[static_cast<std::size_t>(axis)];
  TG_CHECK(scale.dim() == 1 && zero_point.dim() == 1 && scale.numel() == C && zero_point.numel() == C, ShapeError,
           op, ": dimensions of scale and zero-point are not consistent with input tensor: scale ",
           shape_str(scale.shape()), ", zero_point ", shape_str(zero_point.shape()), ", input ", shape_str(x.shape()),
           " at axis ", axis);
  TG_CHECK(is_floating(scale.dtype()), DTypeError, op, ": scale must be floating, got ", dtype_name(scale.dtype()));
  TG_CHECK(!is_floating(zero_point.dtype()), DTypeError, op, ": zero_point must be an integer tensor, got ",
           dtype_name(zero_point.dtype()));
  TG_CHECK(quant_min <= quant_max, Error, op, ": `quant_min` should be less than or equal to `quant_max`, got ",
           quant_min, " and ", quant_max);
  for (double s : host_doubles(scale.data()))
    TG_CHECK(std::isfinite(s) && static_cast<float>(s) > 0, Error, op, ": scale must be positive and finite, got ", s);
  for (double z : host_doubles(zero_point.data()))
    TG_CHECK(z >= double(quant_min) && z <= double(quant_max), Error, op,
             ": `zero_point` must be between `quant_min` and `quant_max`, got ", z, " outside [", quant_min, ", ",
             quant_max, "]");
  const RawTensor xf = x.data().to(kFloat32);
  const RawTensor s = along(scale.data().to(kFloat32).to(x.device()), axis, x.dim());
  const RawTensor z = along(zero_point.data().to(kFloat32).to(x.device()), axis, x.dim());
  const RawTensor inv = prim::div(prim::scalar_like(1.0, s), s);   // PyTorch's float inverse 1.0f / scale
  const RawTensor q = prim::add(prim::unary(UnaryOp::Round, prim::mul(xf, inv)), z);
  const RawTensor y =
      prim::mul(prim::sub(prim::unary(UnaryOp::Clamp, q, {double(quant_min), double(quant_max)}), z), s).to(x.dtype());
  if (!any_requires_grad({x})) return Tensor(y);
  // the straight-through mask: 1 where q was not clamped
  const RawTensor inside = prim::mul(prim::binary(BinaryOp::Ge, q, prim::scalar_like(double(quant_min), q), op),
                                  prim::binary(BinaryOp::Le, q, prim::scalar_like(double(quant_max), q), op));
  SavedTensor mask(inside, op);
  return record(op, y, {x}, [mask](const auto& grad, auto& g) {
    g.set(0, rules::where(mask.get(), grad, rules::scalar(0.0, grad)));   // dx = dy where not clamped, else 0
  });
}

namespace quantization {

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

/// The range of dtype (kInt8 or kUInt8), halved by reduce_range as PyTorch's observers do.
std::pair<int64_t, int64_t> quant_range(const char* who, DType dtype, bool reduce_range) {
  TG_CHECK(dtype == kUInt8 || dtype == kInt8, DTypeError, who, ": expected dtype uint8 (quint8) or int8 (qint8), got ",
           dtype_name(dtype));
  if (dtype == kInt8) return reduce_range ? std::make_pair(int64_t(-64), int64_t(63)) : std::make_pair(int64_t(-128), int64_t(127));
  return reduce_range ? std::make_pair(int64_t(0), int64_t(127)) : std::make_pair(int64_t(0), int64_t(255));
}

std::vector<float> host_floats(const Tensor& v) {
  const std::vector<double> d = v.to(kFloat64).to_vector<double>();
  return std::vector<float>(d.begin(), d.end());
}

void set_floats(Tensor& v, const std::vector<float>& values) {   // v on any device
  prim::copy_(v.data(), prim::from_host(values.data(), v.shape(), kFloat32, v.device()));
}

}  // namespace

// ---- MovingAveragePerChannelMinMaxObserver

MovingAveragePerChannelMinMaxObserver::MovingAveragePerChannelMinMaxObserver(int64_t channels, int64_t ch_axis,
                                                                             double averaging_constant, DType dtype,
                                                                             bool symmetric, bool reduce_range)
    : channels_(channels),
      ch_axis_(ch_axis),
      averaging_constant_(averaging_constant),
      dtype_(dtype),
      symmetric_(symmetric),
      reduce_range_(reduce_range) {
  const char* who = "MovingAveragePerChannelMinMaxObserver";
  TG_CHECK(channels > 0 && ch_axis >= 0, Error, who, ": channels must be positive and ch_axis non-negative, got ",
           channels, " and ", ch_axis);
  TG_CHECK(averaging_constant > 0 && averaging_constant <= 1, Error, who,
           ": averaging_constant must be in (0, 1], got ", averaging_constant);
  std::tie(quant_min_, quant_max_) = quant_range(who, dtype, reduce_range);
  eps_ = Tensor(prim::full({1}, std::numeric_limits<float>::epsilon(), kFloat32));
  min_val_ = Tensor(prim::full({channels}, kInf, kFloat32));
  max_val_ = Tensor(prim::full({channels}, -kInf, kFloat32));
  register_buffer("eps", eps_);
  register_buffer("min_val", min_val_);
  register_buffer("max_val", max_val_);
}

Tensor MovingAveragePerChannelMinMaxObserver::forward(const Tensor& x) {
  const char* who = "MovingAveragePerChannelMinMaxObserver";
  TG_CHECK(x.defined(), Error, who, ": x must be defined");
  prim::check_floating(who, x.data());
  TG_CHECK(ch_axis_ < x.dim() && x.shape()[static_cast<std::size_t>(ch_axis_)] == channels_, ShapeError, who,
           ": expected ", channels_, " channels along axis ", ch_axis_, ", got input ", shape_str(x.shape()));
  if (x.numel() == 0) return x;   // PyTorch: an empty batch changes nothing
  // (C, rest): the channel axis first, the others flattened
  std::vector<int64_t> perm{ch_axis_};
  for (int64_t d = 0; d < x.dim(); ++d)
    if (d != ch_axis_) perm.push_back(d);
  const RawTensor rows = x.data().to(kFloat32).permute(perm).contiguous().reshape({channels_, x.numel() / channels_});
  const std::vector<float> bmin = host_floats(Tensor(prim::reduce(ReduceOp::Min, rows, {1}, false, who)));
  const std::vector<float> bmax = host_floats(Tensor(prim::reduce(ReduceOp::Max, rows, {1}, false, who)));
  std::vector<float> lo = host_floats(min_val_), hi = host_floats(max_val_);
  const float c = static_cast<float>(averaging_constant_);
  for (std::size_t i = 0; i < lo.size(); ++i) {
    if (lo[i] == kInf && hi[i] == -kInf) {   // the first batch sets them
      lo[i] = bmin[i];
      hi[i] = bmax[i];
    } else {
      lo[i] = lo[i] + c * (bmin[i] - lo[i]);
      hi[i] = hi[i] + c * (bmax[i] - hi[i]);
    }
  }
  set_floats(min_val_, lo);
  set_floats(max_val_, hi);
  return x;
}

std::pair<RawTensor, RawTensor> MovingAveragePerChannelMinMaxObserver::calculate_qparams() const {
  const std::vector<float> lo = host_floats(min_val_), hi = host_floats(max_val_);
  const float eps = host_floats(eps_)[0];
  std::vector<float> scale(lo.size(), 1.0f);
  std::vector<int32_t> zp(lo.size(), 0);
  for (std::size_t i = 0; i < lo.size(); ++i) {
    if (lo[i] == kInf && hi[i] == -kInf) continue;   // not seen yet: scale 1, zero point 0
    const float min_neg = std::min(lo[i], 0.0f), max_pos = std::max(hi[i], 0.0f);
    if (symmetric_) {
      const float m = std::max(-min_neg, max_pos);
      scale[i] = std::max(m / static_cast<float>(double(quant_max_ - quant_min_) / 2), eps);
      zp[i] = dtype_ == kUInt8 ? static_cast<int32_t>((quant_min_ + quant_max_ + 1) / 2) : 0;
    } else {
      scale[i] = std::max((max_pos - min_neg) / static_cast<float>(quant_max_ - quant_min_), eps);
      const int64_t z = quant_min_ - static_cast<int64_t>(std::nearbyint(min_neg / scale[i]));   // half to even
      zp[i] = static_cast<int32_t>(std::min(std::max(z, quant_min_), quant_max_));
    }
  }
  const int64_t C = static_cast<int64_t>(lo.size());
  return {prim::from_host(scale.data(), {C}, kFloat32, Device::cpu()),
          prim::from_host(zp.data(), {C}, kInt32, Device::cpu())};
}

std::string MovingAveragePerChannelMinMaxObserver::name() const {
  std::ostringstream os;
  os << "MovingAveragePerChannelMinMaxObserver(ch_axis=" << ch_axis_ << ", channels=" << channels_ << ")";
  return os.str();
}

std::unique_ptr<nn::Module> MovingAveragePerChannelMinMaxObserver::new_instance() const {
  return std::make_unique<MovingAveragePerChannelMinMaxObserver>(channels_, ch_axis_, averaging_constant_, dtype_,
                                                                 symmetric_, reduce_range_);
}

// ---- PerChannelFakeQuantize

PerChannelFakeQuantize::PerChannelFakeQuantize(int64_t channels, int64_t ch_axis, double averaging_constant,
                                               DType dtype, bool symmetric, bool reduce_range)
    : FakeQuantizeBase(channels),
      observer_(channels, ch_axis, averaging_constant, dtype, symmetric, reduce_range),
      channels_(channels),
      ch_axis_(ch_axis),
      averaging_constant_(averaging_constant),
      dtype_(dtype),
      symmetric_(symmetric),
      reduce_range_(reduce_range) {
  register_module("activation_post_process", observer_);
}

Tensor PerChannelFakeQuantize::forward(const Tensor& x) {
  if (observer_enabled()) {
    observer_(x.detach());
    const auto p = observer_.calculate_qparams();
    prim::copy_(scale_.data(), prim::to_device(p.first, scale_.device()));   // the buffers may be on CUDA
    prim::copy_(zero_point_.data(), prim::to_device(p.second, zero_point_.device()));
  }
  if (!fake_quant_enabled()) return x;
  return fake_quantize_per_channel_affine(x, scale_, zero_point_, ch_axis_, observer_.quant_min(),
                                          observer_.quant_max());
}

std::string PerChannelFakeQuantize::name() const {
  return "PerChannelFakeQuantize(" + describe_switches(observer_.quant_min(), observer_.quant_max()) +
         ", ch_axis=" + std::to_string(ch_axis_) + ")";
}

std::unique_ptr<nn::Module> PerChannelFakeQuantize::new_instance() const {
  return std::make_unique<PerChannelFakeQuantize>(channels_, ch_axis_, averaging_constant_, dtype_, symmetric_,
                                                  reduce_range_);
}

// ---- QatLinear

QatLinear::QatLinear(int64_t in_features, int64_t out_features, bool with_bias)
    : weight_fake_quant(out_features > 0 ? out_features : 1),
      input_fake_quant(0.01, kUInt8, /*symmetric=*/false, /*reduce_range=*/true),
      in_features_(in_features),
      out_features_(out_features) {
  TG_CHECK(in_features > 0 && out_features > 0, ShapeError,
           "QatLinear: in_features and out_features must be positive, got ", in_features, " and ", out_features);
  weight = Tensor(prim::full({out_features, in_features}, 0, kFloat32));
  if (with_bias) bias = Tensor(prim::full({out_features}, 0, kFloat32));
  register_parameter("weight", weight);
  if (with_bias) register_parameter("bias", bias);
  register_module("weight_fake_quant", weight_fake_quant);
  register_module("input_fake_quant", input_fake_quant);
}

QatLinear::QatLinear(const nn::Linear& linear)
    : QatLinear(linear.weight.shape()[1], linear.weight.shape()[0], linear.bias.defined()) {
  NoGradGuard no_grad;
  weight = Tensor(linear.weight.data().clone());
  if (linear.bias.defined()) bias = Tensor(linear.bias.data().clone());
  weight.set_requires_grad(true);
  if (bias.defined()) bias.set_requires_grad(true);
}

Tensor QatLinear::forward(const Tensor& x) {
  return linear(input_fake_quant(x), weight_fake_quant(weight), bias);
}

std::string QatLinear::name() const {
  std::ostringstream os;
  os << "QatLinear(in_features=" << in_features_ << ", out_features=" << out_features_
     << ", bias=" << (bias.defined() ? "true" : "false") << ")";
  return os.str();
}

std::unique_ptr<nn::Module> QatLinear::new_instance() const {
  return std::make_unique<QatLinear>(in_features_, out_features_, bias.defined());
}

// ---- ObservedLinear

QConfig default_qconfig() {
  return {[] { return std::make_unique<MinMaxObserver>(kUInt8, /*symmetric=*/false, /*reduce_range=*/true); }};
}

QConfig get_default_qconfig(const std::string& backend) {
  TG_CHECK(backend == "x86" || backend == "fbgemm", Error, "get_default_qconfig: backend '", backend,
           "' not supported; use \"x86\" or \"fbgemm\"");
  return {[] {
    return std::make_unique<HistogramObserver>(2048, kUInt8, /*symmetric=*/false, /*reduce_range=*/true);
  }};
}

ObservedLinear::ObservedLinear(int64_t in_features, int64_t out_features, bool with_bias, const QConfig& qconfig)
    : in_features_(in_features), out_features_(out_features), qconfig_(qconfig) {
  TG_CHECK(in_features > 0 && out_features > 0, ShapeError,
           "ObservedLinear: in_features and out_features must be positive, got ", in_features, " and ", out_features);
  TG_CHECK(static_cast<bool>(qconfig.activation), Error, "ObservedLinear: the QConfig has no activation observer");
  std::unique_ptr<ObserverBase> observer = qconfig.activation();
  TG_CHECK(observer != nullptr, Error, "ObservedLinear: the QConfig's activation factory returned no observer");
  weight = Tensor(prim::full({out_features, in_features}, 0, kFloat32));
  if (with_bias) bias = Tensor(prim::full({out_features}, 0, kFloat32));
  register_parameter("weight", weight);
  if (with_bias) register_parameter("bias", bias);
  input_observer = register_module("input_observer", std::shared_ptr<ObserverBase>(std::move(observer)));
}

ObservedLinear::ObservedLinear(const nn::Linear& linear, const QConfig& qconfig)
    : ObservedLinear(linear.weight.shape()[1], linear.weight.shape()[0], linear.bias.defined(), qconfig) {
  weight = Tensor(linear.weight.data().clone());
  if (linear.bias.defined()) bias = Tensor(linear.bias.data().clone());
  weight.set_requires_grad(true);
  if (bias.defined()) bias.set_requires_grad(true);
}

Tensor ObservedLinear::forward(const Tensor& x) { return linear((*input_observer)(x), weight, bias); }

std::string ObservedLinear::name() const {
  std::ostringstream os;
  os << "ObservedLinear(in_features=" << in_features_ << ", out_features=" << out_features_
     << ", bias=" << (bias.defined() ? "true" : "false") << ")";
  return os.str();
}

std::unique_ptr<nn::Module> ObservedLinear::new_instance() const {
  return std::make_unique<ObservedLinear>(in_features_, out_features_, bias.defined(), qconfig_);
}

namespace {

/// The int8 symmetric per-channel scales and zero points of a weight (O, I) from its own min and max
/// per row (PyTorch's default_per_channel_weight_observer after one observation).
std::pair<RawTensor, RawTensor> weight_qparams(const Tensor& weight) {
  MovingAveragePerChannelMinMaxObserver obs(weight.shape()[0], 0, 0.01, kInt8, /*symmetric=*/true);
  obs(weight.detach());
  return obs.calculate_qparams();
}

}  // namespace

// ---- QuantizedLinear

QuantizedLinear::QuantizedLinear(int64_t in_features, int64_t out_features, bool with_bias, int64_t input_quant_min,
                                 int64_t input_quant_max)
    : in_features_(in_features),
      out_features_(out_features),
      input_quant_min_(input_quant_min),
      input_quant_max_(input_quant_max) {
  TG_CHECK(in_features > 0 && out_features > 0, ShapeError,
           "QuantizedLinear: in_features and out_features must be positive, got ", in_features, " and ", out_features);
  TG_CHECK(input_quant_min >= 0 && input_quant_min <= input_quant_max && input_quant_max <= 255, Error,
           "QuantizedLinear: the input's range must lie in [0, 255] (uint8), got [", input_quant_min, ", ",
           input_quant_max, "]");
  weight_ = Tensor(prim::full({out_features, in_features}, 0, kInt8));
  scale_ = Tensor(prim::full({out_features}, 1, kFloat64));
  zero_point_ = Tensor(prim::full({out_features}, 0, kInt64));
  if (with_bias) bias_ = Tensor(prim::full({out_features}, 0, kFloat32));
  input_scale_ = Tensor(prim::full({1}, 1, kFloat64));
  input_zero_point_ = Tensor(prim::full({1}, 0, kInt64));
  register_buffer("weight", weight_);
  register_buffer("weight_scale", scale_);
  register_buffer("weight_zero_point", zero_point_);
  if (with_bias) register_buffer("bias", bias_);
  register_buffer("input_scale", input_scale_);
  register_buffer("input_zero_point", input_zero_point_);
}

QuantizedLinear::QuantizedLinear(const RawTensor& weight, const RawTensor& bias, const RawTensor& weight_scale,
                                 const RawTensor& weight_zero_point, double input_scale, int64_t input_zero_point,
                                 int64_t input_quant_min, int64_t input_quant_max)
    : QuantizedLinear(weight.dim() == 2 ? weight.shape()[1] : 0, weight.dim() == 2 ? weight.shape()[0] : 0,
                      bias.defined(), input_quant_min, input_quant_max) {
  TG_CHECK(weight.device().is_cpu(), DeviceError, "QuantizedLinear: the int8 kernels run on the CPU, got a weight on ",
           weight.device().str());
  TG_CHECK(std::isfinite(input_scale) && input_scale > 0, Error,
           "QuantizedLinear: the input scale must be positive and finite, got ", input_scale);
  TG_CHECK(input_zero_point >= input_quant_min && input_zero_point <= input_quant_max, Error,
           "QuantizedLinear: the input zero point ", input_zero_point, " is outside [", input_quant_min, ", ",
           input_quant_max, "]");
  const QuantizedTensor q = quantize_per_channel(Tensor(weight), Tensor(weight_scale.to(kFloat64)),
                                                 Tensor(weight_zero_point.to(kInt64)), 0, kInt8);
  prim::copy_(weight_.data(), q.int_repr().data());
  prim::copy_(scale_.data(), weight_scale);
  prim::copy_(zero_point_.data(), weight_zero_point);
  if (bias.defined()) prim::copy_(bias_.data(), bias);
  prim::fill_(input_scale_.data(), input_scale);
  prim::fill_(input_zero_point_.data(), double(input_zero_point));
}

QuantizedLinear::QuantizedLinear(const QatLinear& qat)
    : QuantizedLinear(qat.weight.data(), qat.bias.defined() ? qat.bias.data() : RawTensor(),
                      qat.weight_fake_quant.scale(), qat.weight_fake_quant.zero_point(), qat.input_fake_quant.scale(),
                      qat.input_fake_quant.zero_point(), qat.input_fake_quant.observer().quant_min(),
                      qat.input_fake_quant.observer().quant_max()) {}

QuantizedLinear::QuantizedLinear(const ObservedLinear& observed)
    : QuantizedLinear(observed.weight.data(), observed.bias.defined() ? observed.bias.data() : RawTensor(),
                      weight_qparams(observed.weight).first, weight_qparams(observed.weight).second,
                      observed.input_observer->calculate_qparams().scale,
                      observed.input_observer->calculate_qparams().zero_point, observed.input_observer->quant_min(),
                      observed.input_observer->quant_max()) {}

double QuantizedLinear::input_scale() const { return Tensor(input_scale_.data().reshape({})).item(); }
int64_t QuantizedLinear::input_zero_point() const {
  return Tensor(input_zero_point_.data().reshape({})).item<int64_t>();
}

Tensor QuantizedLinear::forward(const Tensor& input) {
  TG_CHECK(input.defined() && input.dim() >= 1 && input.shape().back() == in_features_, ShapeError,
           "QuantizedLinear: expected input (..., ", in_features_, "), got ",
           input.defined() ? shape_str(input.shape()) : "undefined");
  TG_CHECK(input.device().is_cpu(), DeviceError, "QuantizedLinear: the int8 kernels run on the CPU, got an input on ",
           input.device().str());
  prim::check_floating("QuantizedLinear", input.data());
  const int64_t N = input.numel() / in_features_;
  const RawTensor x = input.data().to(kFloat32).contiguous().reshape({N, in_features_});
  Shape out_shape = input.shape();
  out_shape.back() = out_features_;
  const double sx = input_scale();
  const int64_t zx = input_zero_point();
  // xq = clamp(nearbyint(x * (1.0f / sx)) + zx, qmin, qmax): the input FakeQuantize's integers
  const double inv = static_cast<double>(1.0f / static_cast<float>(sx));
  const RawTensor xq = prim::unary(UnaryOp::Clamp,
                                prim::add(prim::unary(UnaryOp::Round, prim::mul(x, inv)), prim::scalar_like(double(zx), x)),
                                {double(input_quant_min_), double(input_quant_max_)})
                        .to(kUInt8);
  const RawTensor acc = int8_matmul(xq, weight_.data());   // (N, O) int32
  const double sx32 = static_cast<float>(sx);           // the scale the fake quantization multiplied by
  const RawTensor y = internal::int8_linear_output(acc, sx32, zx, colsum_.get(weight_.data()), scale_.data(),
                                              bias_.defined() ? bias_.data() : RawTensor());
  return Tensor(y.reshape(out_shape));
}

std::string QuantizedLinear::name() const {
  std::ostringstream os;
  os << "QuantizedLinear(in_features=" << in_features_ << ", out_features=" << out_features_
     << ", scale=" << input_scale() << ", zero_point=" << input_zero_point() << ", qscheme=per_channel_affine)";
  return os.str();
}

std::unique_ptr<nn::Module> QuantizedLinear::new_instance() const {
  return std::make_unique<QuantizedLinear>(in_features_, out_features_, bias_.defined(), input_quant_min_,
                                           input_quant_max_);
}

QuantizedTensor QuantizedLinear::weight() const {
  return QuantizedTensor::per_channel(weight_, scale_, zero_point_, 0);
}

// ---- prepare_qat / convert

std::unique_ptr<nn::Module> prepare_qat(const nn::Module& model) {
  auto out = internal::rebuild(
      model, [](const nn::Module& m) { return dynamic_cast<const nn::Linear*>(&m) != nullptr; },
      [](const nn::Module& m) { return std::make_unique<QatLinear>(dynamic_cast<const nn::Linear&>(m)); },
      "prepare_qat", "Linear");
  out->train();
  return out;
}

std::unique_ptr<nn::Module> prepare(const nn::Module& model, const QConfig& qconfig) {
  auto out = internal::rebuild(
      model, [](const nn::Module& m) { return dynamic_cast<const nn::Linear*>(&m) != nullptr; },
      [&qconfig](const nn::Module& m) {
        return std::make_unique<ObservedLinear>(dynamic_cast<const nn::Linear&>(m), qconfig);
      },
      "prepare", "Linear");
  out->eval();
  return out;
}

std::unique_ptr<nn::Module> convert(const nn::Module& model) {
  auto out = internal::rebuild(
      model,
      [](const nn::Module& m) {
        return dynamic_cast<const QatLinear*>(&m) != nullptr || dynamic_cast<const ObservedLinear*>(&m) != nullptr;
      },
      [](const nn::Module& m) -> std::unique_ptr<nn::Module> {
        if (const auto* qat = dynamic_cast<const QatLinear*>(&m)) return std::make_unique<QuantizedLinear>(*qat);
        return std::make_unique<QuantizedLinear>(dynamic_cast<const ObservedLinear&>(m));
      },
      "convert", "QatLinear or ObservedLinear");
  out->eval();
  return out;
}

namespace {

void set_observers(nn::Module& model, bool on) {
  std::vector<nn::Module*> stack{&model};   // a work list, not recursion over the module tree
  while (!stack.empty()) {
    nn::Module* m = stack.back();
    stack.pop_back();
    if (auto* fq = dynamic_cast<FakeQuantize*>(m)) fq->enable_observer(on);
    if (auto* pc = dynamic_cast<PerChannelFakeQuantize*>(m)) pc->enable_observer(on);
    for (const auto& c : m->children()) stack.push_back(c.second);
  }
}

}  // namespace

void disable_observer(nn::Module& model) { set_observers(model, false); }
void enable_observer(nn::Module& model) { set_observers(model, true); }

}  // namespace quantization
}  // namespace tg
