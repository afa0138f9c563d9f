// ops/creation.cpp: factory functions. Random ones draw from the one Philox stream (prim/random.cpp),
// so the same manual_seed gives the same values on every device.
#include "tensorgrad/ops/creation.h"

#include <cmath>
#include <cstdint>
#include <limits>

#include "tensorgrad/kernels/philox.h"
#include "tensorgrad/prim/prim.h"

namespace tg {

namespace {
Tensor leaf(RawTensor t, const TensorOptions& o) { return Tensor(std::move(t), o.requires_grad()); }
}  // namespace

void manual_seed(uint64_t seed) { prim::manual_seed(seed); }
RngState get_rng_state() { return prim::get_rng_state(); }
void set_rng_state(RngState state) { prim::set_rng_state(state); }

Tensor empty(IntArrayRef shape, const TensorOptions& o) { return leaf(prim::empty(shape, o.dtype(), o.device()), o); }
Tensor zeros(IntArrayRef shape, const TensorOptions& o) { return full(shape, 0.0, o); }
Tensor ones(IntArrayRef shape, const TensorOptions& o) { return full(shape, 1.0, o); }
Tensor full(IntArrayRef shape, double value, const TensorOptions& o) {
  return leaf(prim::full(shape, value, o.dtype(), o.device()), o);
}
Tensor arange(int64_t n, const TensorOptions& o) {
  return leaf(prim::arange(n, o.has_dtype() ? o.dtype() : kInt64, o.device()), o);
}

namespace {
/// The element count of arange(start, end, step), with PyTorch's checks.
int64_t arange_size(double start, double end, double step) {
  TG_CHECK(std::isfinite(start) && std::isfinite(end), Error, "unsupported range: ", start, " -> ", end);
  TG_CHECK(step != 0, Error, "step must be nonzero");
  TG_CHECK((step > 0 && end >= start) || (step < 0 && end <= start), Error,
           "upper bound and lower bound inconsistent with step sign");
  return static_cast<int64_t>(std::ceil((end - start) / step));
}
}  // namespace

// Both fill the values on the host (start + i step, exactly in int64 for integer bounds, in double
// for floating ones, as PyTorch's CPU kernel) and convert them once to the dtype and device.
Tensor detail::arange_integral(int64_t start, int64_t end, int64_t step, const TensorOptions& o) {
  arange_size(static_cast<double>(start), static_cast<double>(end), static_cast<double>(step));   // the checks
  // the count in integers: exact where the bounds are beyond double's 2^53
  const int64_t n = step > 0 ? (end - start + step - 1) / step : (start - end - step - 1) / -step;
  RawTensor host = prim::empty({n}, kInt64, Device());
  int64_t* p = host.data<int64_t>();
  for (int64_t i = 0; i < n; ++i) p[i] = start + i * step;
  return leaf(host.to(o.has_dtype() ? o.dtype() : kInt64).to(o.device()), o);
}
Tensor detail::arange_floating(double start, double end, double step, const TensorOptions& o) {
  const int64_t n = arange_size(start, end, step);
  RawTensor host = prim::empty({n}, kFloat64, Device());
  double* p = host.data<double>();
  for (int64_t i = 0; i < n; ++i) p[i] = start + static_cast<double>(i) * step;
  return leaf(host.to(o.has_dtype() ? o.dtype() : kFloat32).to(o.device()), o);
}
Tensor eye(int64_t n, const TensorOptions& o) { return leaf(prim::eye(n, o.dtype(), o.device()), o); }

Tensor rand(IntArrayRef shape, const TensorOptions& o) {
  TG_CHECK(is_floating(o.dtype()), DTypeError, "rand: expected a floating point dtype, got ", dtype_name(o.dtype()));
  return leaf(prim::random(philox::Distribution::uniform(0.0, 1.0), shape, o.dtype(), o.device()), o);
}

Tensor randn(IntArrayRef shape, const TensorOptions& o) {
  TG_CHECK(is_floating(o.dtype()), DTypeError, "randn: expected a floating point dtype, got ", dtype_name(o.dtype()));
  return leaf(prim::random(philox::Distribution::normal(0.0, 1.0), shape, o.dtype(), o.device()), o);
}

// low < high, and low and high - 1 values of the dtype: checked by prim::random, in PyTorch's words.
Tensor randint(int64_t low, int64_t high, IntArrayRef shape, const TensorOptions& o) {
  const DType dtype = o.has_dtype() ? o.dtype() : kInt64;
  return leaf(prim::random(philox::Distribution::integer(low, high), shape, dtype, o.device()), o);
}

Tensor normal(double mean, double std, IntArrayRef size, const TensorOptions& o) {
  TG_CHECK(is_floating(o.dtype()), DTypeError, "normal: expected a floating point dtype, got ", dtype_name(o.dtype()));
  TG_CHECK(std >= 0.0, Error, "normal: expects std >= 0.0, but found std ", std);
  return leaf(prim::random(philox::Distribution::normal(mean, std), size, o.dtype(), o.device()), o);
}

Tensor randperm(int64_t n, const TensorOptions& o) {
  TG_CHECK(n >= 0, Error, "randperm: n must be non-negative, got ", n);
  const DType dtype = o.has_dtype() ? o.dtype() : kInt64;
  // the largest index the dtype holds exactly (PyTorch's check in randperm: "n must be ... for dtype")
  int64_t largest = std::numeric_limits<int64_t>::max();
  switch (dtype) {
    case kBool: largest = 1; break;
    case kUInt8: largest = 255; break;
    case kInt8: largest = 127; break;
    case kInt32: largest = std::numeric_limits<int32_t>::max(); break;
    case kFloat16: largest = 2048; break;
    case kBFloat16: largest = 256; break;
    case kFloat32: largest = int64_t(1) << 24; break;
    case kFloat64: largest = int64_t(1) << 53; break;
    default: break;
  }
  TG_CHECK(n == 0 || n - 1 <= largest, Error, "randperm: n (", n, ") is too large for the result dtype ",
           dtype_name(dtype), " (indices up to ", largest, ")");
  // the stable sort of n independent uniform draws: every order equally likely (two equal float64 draws,
  // about n^2 / 2^54 likely, keep their index order)
  const RawTensor u = prim::random(philox::Distribution::uniform(0.0, 1.0), {n}, kFloat64, o.device());
  return leaf(prim::sort(u, 0, false).indices.to(dtype), o);
}

template <class T>
Tensor from_vector(const std::vector<T>& values, const Shape& shape, const TensorOptions& o) {
  constexpr DType own = dtype_of<T>();
  TG_CHECK(checked_numel(shape, "from_vector") == static_cast<int64_t>(values.size()), ShapeError, "from_vector: ",
           values.size(), " values cannot fill shape ", shape_str(shape));
  RawTensor t = prim::from_host(values.data(), shape, own, o.device());
  if (o.has_dtype()) t = t.to(o.dtype());
  return leaf(t, o);
}
template Tensor from_vector<float>(const std::vector<float>&, const Shape&, const TensorOptions&);
template Tensor from_vector<double>(const std::vector<double>&, const Shape&, const TensorOptions&);
template Tensor from_vector<int64_t>(const std::vector<int64_t>&, const Shape&, const TensorOptions&);
template Tensor from_vector<int32_t>(const std::vector<int32_t>&, const Shape&, const TensorOptions&);
template Tensor from_vector<int8_t>(const std::vector<int8_t>&, const Shape&, const TensorOptions&);
template Tensor from_vector<uint8_t>(const std::vector<uint8_t>&, const Shape&, const TensorOptions&);
template Tensor from_vector<Half>(const std::vector<Half>&, const Shape&, const TensorOptions&);
template Tensor from_vector<BFloat16>(const std::vector<BFloat16>&, const Shape&, const TensorOptions&);

void TensorData::collect(std::size_t depth, Shape& shape, std::vector<const TensorData*>& leaves) const {
  if (kind_ != Kind::List) {
    TG_CHECK(depth == shape.size(), ShapeError, "tensor: a number at dim ", depth,
             " where the other elements are lists");
    leaves.push_back(this);
    return;
  }
  const auto n = static_cast<int64_t>(elements_.size());
  if (depth == shape.size()) {
    TG_CHECK(leaves.empty(), ShapeError, "tensor: a list at dim ", depth, " where the other elements are numbers");
    shape.push_back(n);
  } else {
    TG_CHECK(shape[depth] == n, ShapeError, "tensor: expected a list of length ", shape[depth], " at dim ", depth,
             " (got ", n, ")");
  }
  for (const TensorData& e : elements_) e.collect(depth + 1, shape, leaves);
}

Tensor TensorData::make(const TensorOptions& options) const {
  Shape shape;
  std::vector<const TensorData*> leaves;
  collect(0, shape, leaves);
  // the dtype libtorch infers: one kind for every value (a std::vector's element type decides alone)
  Kind kind = leaves.empty() ? Kind::Floating : leaves[0]->kind_;
  for (const TensorData* v : leaves)
    TG_CHECK(v->kind_ == kind, DTypeError,
             "tensor: expected all values to have the same kind (bool, integer or floating); write 1.0, not 1, "
             "among floating values");
  DType dtype = kind == Kind::Bool ? kBool : kind == Kind::Integer ? kInt64 : kFloat32;
  if (vector_dtype_ >= 0) dtype = static_cast<DType>(vector_dtype_);
  if (options.has_dtype()) dtype = options.dtype();
  RawTensor t;
  if (kind == Kind::Floating) {
    std::vector<double> values;
    values.reserve(leaves.size());
    for (const TensorData* v : leaves) values.push_back(v->value_);
    t = prim::from_host(values.data(), shape, kFloat64, options.device());
  } else {
    std::vector<int64_t> values;
    values.reserve(leaves.size());
    for (const TensorData* v : leaves) values.push_back(v->integer_);
    t = prim::from_host(values.data(), shape, kInt64, options.device());
  }
  return leaf(t.to(dtype), options);
}

Tensor tensor(const TensorData& values, const TensorOptions& options) { return values.make(options); }

namespace {
TensorOptions like(const Tensor& x) { return TensorOptions().dtype(x.dtype()).device(x.device()); }
}  // namespace

Tensor zeros_like(const Tensor& x) { return zeros(x.shape(), like(x)); }
Tensor ones_like(const Tensor& x) { return ones(x.shape(), like(x)); }
Tensor full_like(const Tensor& x, double value) { return full(x.shape(), value, like(x)); }
Tensor rand_like(const Tensor& x) { return rand(x.shape(), like(x)); }
Tensor randn_like(const Tensor& x) { return randn(x.shape(), like(x)); }

namespace {
/// options over x's dtype and device: what options sets wins.
TensorOptions like(const Tensor& x, const TensorOptions& o) {
  return TensorOptions()
      .dtype(o.has_dtype() ? o.dtype() : x.dtype())
      .device(o.has_device() ? o.device() : x.device())
      .requires_grad(o.requires_grad());
}
}  // namespace

Tensor zeros_like(const Tensor& x, const TensorOptions& o) { return zeros(x.shape(), like(x, o)); }
Tensor ones_like(const Tensor& x, const TensorOptions& o) { return ones(x.shape(), like(x, o)); }
Tensor full_like(const Tensor& x, double value, const TensorOptions& o) { return full(x.shape(), value, like(x, o)); }
Tensor rand_like(const Tensor& x, const TensorOptions& o) { return rand(x.shape(), like(x, o)); }
Tensor randn_like(const Tensor& x, const TensorOptions& o) { return randn(x.shape(), like(x, o)); }

}  // namespace tg
