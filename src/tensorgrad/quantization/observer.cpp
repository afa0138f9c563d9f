// quantization/observer.cpp: MinMaxObserver, MovingAverageMinMaxObserver, FakeQuantize and
// fake_quantize_per_tensor_affine (forward through prim::, the straight-through backward right below).
// The arithmetic: Note [Observers] in quantization/observer.h.
#include "tensorgrad/quantization/observer.h"

#include <cmath>
#include <limits>
#include <sstream>

#include "tensorgrad/engine/prim.h"
#include "tensorgrad/ops/ops.h"

namespace tg {

Variable fake_quantize_per_tensor_affine(const Variable& x, double scale, int64_t zero_point, int64_t quant_min,
                                         int64_t quant_max) {
  const char* op = "fake_quantize_per_tensor_affine";
  TG_CHECK(x.defined(), Error, op, ": x must be defined");
  prim::check_floating(op, x.data());
  TG_CHECK(std::isfinite(scale) && scale > 0, Error, op, ": scale must be positive and finite, got ", scale);
  TG_CHECK(quant_min <= quant_max, Error, op, ": quant_min (", quant_min, ") must not be greater than quant_max (",
           quant_max, ")");
  TG_CHECK(zero_point >= quant_min && zero_point <= quant_max, Error, op, ": zero_point ", zero_point,
           " is outside [", quant_min, ", ", quant_max, "]");
  const Tensor xf = x.data().to(kFloat32);
  const double inv = static_cast<double>(1.0f / static_cast<float>(scale));   // PyTorch's float inverse
  const Tensor q = prim::add(prim::unary(UnaryOp::Round, prim::mul(xf, inv)), prim::scalar_like(double(zero_point), xf));
  const Tensor lo = prim::scalar_like(double(quant_min), q), hi = prim::scalar_like(double(quant_max), q);
  const Tensor y = prim::mul(prim::sub(prim::unary(UnaryOp::Clamp, q, {double(quant_min), double(quant_max)}),
                                       prim::scalar_like(double(zero_point), q)),
                             static_cast<double>(static_cast<float>(scale)))
                       .to(x.dtype());
  if (!any_requires_grad({x})) return Variable(y);
  // the straight-through mask: 1 where q was not clamped
  const Tensor inside = prim::mul(prim::binary(BinaryOp::Ge, q, lo, op), prim::binary(BinaryOp::Le, q, hi, op));
  SavedTensor mask(inside, op);
  return record(op, y, {x}, [mask](const Tensor& grad, Grads& g) {
    g.set(0, prim::where(mask.get(), grad, prim::scalar_like(0.0, grad)));   // dx = dy where not clamped, else 0
  });
}

namespace quantization {

namespace {

float host_value(const Variable& v) { return static_cast<float>(v.item()); }

void set_value(Variable& v, double value) { prim::fill_(v.data(), value); }

}  // namespace

MinMaxObserver::MinMaxObserver(DType dtype, bool symmetric, bool reduce_range)
    : dtype_(dtype), symmetric_(symmetric), reduce_range_(reduce_range) {
  TG_CHECK(dtype == kUInt8 || dtype == kInt8, DTypeError,
           "MinMaxObserver: expected dtype uint8 (quint8) or int8 (qint8), got ", dtype_name(dtype));
  quant_min_ = dtype == kInt8 ? -128 : 0;
  quant_max_ = dtype == kInt8 ? 127 : 255;
  if (reduce_range) quant_min_ /= 2, quant_max_ = dtype == kInt8 ? 63 : 127;   // PyTorch: -64..63, 0..127
  eps_ = Variable(prim::full({1}, std::numeric_limits<float>::epsilon(), kFloat32));
  min_val_ = Variable(prim::full({}, std::numeric_limits<double>::infinity(), kFloat32));
  max_val_ = Variable(prim::full({}, -std::numeric_limits<double>::infinity(), kFloat32));
  register_buffer("eps", eps_);
  register_buffer("min_val", min_val_);
  register_buffer("max_val", max_val_);
}

Variable MinMaxObserver::forward(const Variable& x) {
  TG_CHECK(x.defined(), Error, name(), ": x must be defined");
  prim::check_floating("MinMaxObserver", x.data());
  if (x.numel() == 0) return x;   // PyTorch: an empty batch changes nothing
  const Tensor xf = x.data().to(kFloat32);
  const float lo = host_value(Variable(prim::reduce(ReduceOp::Min, xf, {}, false, "MinMaxObserver")));
  const float hi = host_value(Variable(prim::reduce(ReduceOp::Max, xf, {}, false, "MinMaxObserver")));
  update(lo, hi);
  return x;
}

void MinMaxObserver::update(float batch_min, float batch_max) {
  set_value(min_val_, std::min(host_value(min_val_), batch_min));
  set_value(max_val_, std::max(host_value(max_val_), batch_max));
}

double MinMaxObserver::min_val() const { return min_val_.item(); }
double MinMaxObserver::max_val() const { return max_val_.item(); }

QParams MinMaxObserver::calculate_qparams() const {
  const float lo = host_value(min_val_), hi = host_value(max_val_);
  if (lo == std::numeric_limits<float>::infinity() && hi == -std::numeric_limits<float>::infinity()) return {};
  const float eps = host_value(Variable(eps_.data().reshape({})));
  const float min_neg = std::min(lo, 0.0f), max_pos = std::max(hi, 0.0f);
  QParams p;
  if (symmetric_) {
    const float m = std::max(-min_neg, max_pos);
    const float scale = std::max(m / static_cast<float>(double(quant_max_ - quant_min_) / 2), eps);
    p.scale = scale;
    p.zero_point = dtype_ == kUInt8 ? 128 : 0;
  } else {
    const float scale = std::max((max_pos - min_neg) / static_cast<float>(quant_max_ - quant_min_), eps);
    const int64_t zp = quant_min_ - static_cast<int64_t>(std::nearbyint(min_neg / scale));   // torch.round: half to even
    p.scale = scale;
    p.zero_point = std::min(std::max(zp, quant_min_), quant_max_);
  }
  return p;
}

std::string MinMaxObserver::name() const {
  std::ostringstream os;
  os << "MinMaxObserver(min_val=" << min_val() << ", max_val=" << max_val() << ")";
  return os.str();
}

std::unique_ptr<nn::Module> MinMaxObserver::new_instance() const {
  return std::make_unique<MinMaxObserver>(dtype_, symmetric_, reduce_range_);
}

MovingAverageMinMaxObserver::MovingAverageMinMaxObserver(double averaging_constant, DType dtype, bool symmetric,
                                                         bool reduce_range)
    : MinMaxObserver(dtype, symmetric, reduce_range), averaging_constant_(averaging_constant) {
  TG_CHECK(averaging_constant > 0 && averaging_constant <= 1, Error,
           "MovingAverageMinMaxObserver: averaging_constant must be in (0, 1], got ", averaging_constant);
}

void MovingAverageMinMaxObserver::update(float batch_min, float batch_max) {
  const float lo = host_value(min_val_), hi = host_value(max_val_);
  const float c = static_cast<float>(averaging_constant_);
  if (lo == std::numeric_limits<float>::infinity() && hi == -std::numeric_limits<float>::infinity()) {
    set_value(min_val_, batch_min);   // the first batch
    set_value(max_val_, batch_max);
    return;
  }
  set_value(min_val_, lo + c * (batch_min - lo));
  set_value(max_val_, hi + c * (batch_max - hi));
}

std::string MovingAverageMinMaxObserver::name() const {
  std::ostringstream os;
  os << "MovingAverageMinMaxObserver(min_val=" << min_val() << ", max_val=" << max_val() << ")";
  return os.str();
}

std::unique_ptr<nn::Module> MovingAverageMinMaxObserver::new_instance() const {
  return std::make_unique<MovingAverageMinMaxObserver>(averaging_constant_, dtype_, symmetric_, reduce_range_);
}

FakeQuantize::FakeQuantize(double averaging_constant, DType dtype, bool symmetric, bool reduce_range)
    : observer_(averaging_constant, dtype, symmetric, reduce_range),
      averaging_constant_(averaging_constant),
      dtype_(dtype),
      symmetric_(symmetric),
      reduce_range_(reduce_range) {
  fake_quant_enabled_ = Variable(prim::full({1}, 1, kUInt8));
  observer_enabled_ = Variable(prim::full({1}, 1, kUInt8));
  scale_ = Variable(prim::full({1}, 1, kFloat32));
  zero_point_ = Variable(prim::full({1}, 0, kInt32));
  register_buffer("fake_quant_enabled", fake_quant_enabled_);
  register_buffer("observer_enabled", observer_enabled_);
  register_buffer("scale", scale_);
  register_buffer("zero_point", zero_point_);
  register_module("activation_post_process", observer_);
}

Variable FakeQuantize::forward(const Variable& x) {
  if (Variable(observer_enabled_.data().reshape({})).item() != 0) {
    observer_(x.detach());
    const QParams p = observer_.calculate_qparams();
    set_value(scale_, p.scale);
    set_value(zero_point_, double(p.zero_point));
  }
  if (Variable(fake_quant_enabled_.data().reshape({})).item() == 0) return x;
  return fake_quantize_per_tensor_affine(x, scale(), zero_point(), observer_.quant_min(), observer_.quant_max());
}

void FakeQuantize::enable_fake_quant(bool on) { set_value(fake_quant_enabled_, on ? 1 : 0); }
void FakeQuantize::enable_observer(bool on) { set_value(observer_enabled_, on ? 1 : 0); }
double FakeQuantize::scale() const { return Variable(scale_.data().reshape({})).item(); }
int64_t FakeQuantize::zero_point() const { return Variable(zero_point_.data().reshape({})).item<int64_t>(); }

std::string FakeQuantize::name() const {
  std::ostringstream os;
  os << "FakeQuantize(fake_quant_enabled=" << Variable(fake_quant_enabled_.data().reshape({})).item<int64_t>()
     << ", observer_enabled=" << Variable(observer_enabled_.data().reshape({})).item<int64_t>()
     << ", quant_min=" << observer_.quant_min() << ", quant_max=" << observer_.quant_max() << ", scale=" << scale()
     << ", zero_point=" << zero_point() << ")";
  return os.str();
}

std::unique_ptr<nn::Module> FakeQuantize::new_instance() const {
  return std::make_unique<FakeQuantize>(averaging_constant_, dtype_, symmetric_, reduce_range_);
}

}  // namespace quantization
}  // namespace tg
