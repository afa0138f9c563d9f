// ops/methods.cpp: Tensor's op methods and the operators, each a one-line call of the free
// function in ops/ops.h, plus the differentiable device/dtype moves Tensor::to, and the methods
// spelled as libtorch spells them (eq, mm, operator[], new_zeros, ...).
#include <cmath>

#include "tensorgrad/prim/prim.h"
#include "tensorgrad/ops/creation.h"
#include "tensorgrad/ops/ops.h"

namespace tg {

Tensor scalar_like(double value, const Tensor& like) { return Tensor(prim::scalar_like(value, like.data())); }

Tensor Tensor::add(const Tensor& o) const { return tg::add(*this, o); }
Tensor Tensor::sub(const Tensor& o) const { return tg::sub(*this, o); }
Tensor Tensor::add(const Tensor& o, double alpha) const { return tg::add(*this, o, alpha); }
Tensor Tensor::sub(const Tensor& o, double alpha) const { return tg::sub(*this, o, alpha); }
Tensor Tensor::mul(const Tensor& o) const { return tg::mul(*this, o); }
Tensor Tensor::div(const Tensor& o) const { return tg::div(*this, o); }
Tensor Tensor::pow(const Tensor& o) const { return tg::pow(*this, o); }
Tensor Tensor::pow(double e) const { return tg::pow(*this, e); }
Tensor Tensor::neg() const { return tg::neg(*this); }
Tensor Tensor::exp() const { return tg::exp(*this); }
Tensor Tensor::log() const { return tg::log(*this); }
Tensor Tensor::sqrt() const { return tg::sqrt(*this); }
Tensor Tensor::abs() const { return tg::abs(*this); }
Tensor Tensor::relu() const { return tg::relu(*this); }
Tensor Tensor::sigmoid() const { return tg::sigmoid(*this); }
Tensor Tensor::tanh() const { return tg::tanh(*this); }
Tensor Tensor::clamp(double lo, double hi) const { return tg::clamp(*this, lo, hi); }
Tensor Tensor::sum() const { return tg::sum(*this); }
Tensor Tensor::sum_to_size(const Shape& shape) const { return tg::sum_to_size(*this, shape); }
Tensor Tensor::sum(int64_t dim, bool keepdim) const { return tg::sum(*this, dim, keepdim); }
Tensor Tensor::mean() const { return tg::mean(*this); }
Tensor Tensor::mean(int64_t dim, bool keepdim) const { return tg::mean(*this, dim, keepdim); }
Tensor Tensor::max() const { return tg::max(*this); }
ValuesWithIndices Tensor::max(int64_t dim, bool keepdim) const { return tg::max(*this, dim, keepdim); }
Tensor Tensor::min() const { return tg::min(*this); }
ValuesWithIndices Tensor::min(int64_t dim, bool keepdim) const { return tg::min(*this, dim, keepdim); }
Tensor Tensor::argmax() const { return tg::argmax(*this); }
Tensor Tensor::argmax(int64_t dim, bool keepdim) const { return tg::argmax(*this, dim, keepdim); }
Tensor Tensor::matmul(const Tensor& o) const { return tg::matmul(*this, o); }
Tensor Tensor::mm(const Tensor& o) const { return tg::mm(*this, o); }
Tensor Tensor::bmm(const Tensor& o) const { return tg::bmm(*this, o); }
Tensor Tensor::dot(const Tensor& o) const { return tg::dot(*this, o); }
Tensor Tensor::outer(const Tensor& o) const { return tg::outer(*this, o); }
Tensor Tensor::reshape(const Shape& s) const { return tg::reshape(*this, s); }
Tensor Tensor::view(const Shape& s) const { return tg::view(*this, s); }
Tensor Tensor::transpose(int64_t d0, int64_t d1) const { return tg::transpose(*this, d0, d1); }
Tensor Tensor::t() const { return tg::t(*this); }
Tensor Tensor::permute(const std::vector<int64_t>& dims) const { return tg::permute(*this, dims); }
Tensor Tensor::squeeze() const { return tg::squeeze(*this); }
Tensor Tensor::squeeze(int64_t dim) const { return tg::squeeze(*this, dim); }
Tensor Tensor::unsqueeze(int64_t dim) const { return tg::unsqueeze(*this, dim); }
Tensor Tensor::expand(const Shape& s) const { return tg::expand(*this, s); }
Tensor Tensor::contiguous() const { return tg::contiguous(*this); }
Tensor Tensor::index_select(int64_t dim, const Tensor& index) const { return tg::index_select(*this, dim, index); }
Tensor Tensor::gather(int64_t dim, const Tensor& index) const { return tg::gather(*this, dim, index); }
Tensor Tensor::softmax(int64_t dim) const { return tg::softmax(*this, dim); }
Tensor Tensor::log_softmax(int64_t dim) const { return tg::log_softmax(*this, dim); }

// ---- libtorch's spellings
Tensor Tensor::eq(const Tensor& o) const { return tg::eq(*this, o); }
Tensor Tensor::eq(double s) const { return tg::eq(*this, scalar_like(s, *this)); }
Tensor Tensor::ne(const Tensor& o) const { return tg::ne(*this, o); }
Tensor Tensor::ne(double s) const { return tg::ne(*this, scalar_like(s, *this)); }
Tensor Tensor::gt(const Tensor& o) const { return tg::gt(*this, o); }
Tensor Tensor::gt(double s) const { return tg::gt(*this, scalar_like(s, *this)); }
Tensor Tensor::lt(const Tensor& o) const { return tg::lt(*this, o); }
Tensor Tensor::lt(double s) const { return tg::lt(*this, scalar_like(s, *this)); }
Tensor Tensor::ge(const Tensor& o) const { return tg::ge(*this, o); }
Tensor Tensor::ge(double s) const { return tg::ge(*this, scalar_like(s, *this)); }
Tensor Tensor::le(const Tensor& o) const { return tg::le(*this, o); }
Tensor Tensor::le(double s) const { return tg::le(*this, scalar_like(s, *this)); }

Tensor Tensor::operator[](int64_t i) const { return select(0, i); }
Tensor Tensor::operator[](const Tensor& i) const {
  TG_CHECK(i.defined() && i.dim() == 0 && !is_floating(i.dtype()) && i.dtype() != kBool, IndexError,
           "operator[]: can only index with a 0-d integer tensor (got ",
           i.defined() ? tensor_meta_str(i.data()) : std::string("an undefined tensor"), ")");
  return select(0, i.item<int64_t>());
}

Tensor& Tensor::uniform_(double from, double to) {
  TG_CHECK(is_floating(dtype()), DTypeError, "uniform_: expected a floating point tensor, got ", dtype_name(dtype()));
  TG_CHECK(from <= to, Error, "uniform_: expects to return a [from, to) range, but found from=", from, " > to=", to);
  const Tensor u = tg::rand(sizes(), TensorOptions().dtype(dtype()).device(device()));
  return copy_(from == 0 && to == 1 ? u : u * (to - from) + from);
}

Tensor& Tensor::normal_(double mean, double std) {
  TG_CHECK(is_floating(dtype()), DTypeError, "normal_: expected a floating point tensor, got ", dtype_name(dtype()));
  TG_CHECK(std >= 0, Error, "normal_: expects std >= 0.0, but found std ", std);
  const Tensor n = tg::randn(sizes(), TensorOptions().dtype(dtype()).device(device()));
  return copy_(mean == 0 && std == 1 ? n : n * std + mean);
}

namespace {
/// options over like's dtype and device: what options sets wins (the new_* methods).
TensorOptions over(const Tensor& like, const TensorOptions& o) {
  return TensorOptions()
      .dtype(o.has_dtype() ? o.dtype() : like.dtype())
      .device(o.has_device() ? o.device() : like.device())
      .requires_grad(o.requires_grad());
}
}  // namespace

Tensor Tensor::new_zeros(IntArrayRef size, const TensorOptions& o) const { return tg::zeros(size, over(*this, o)); }
Tensor Tensor::new_ones(IntArrayRef size, const TensorOptions& o) const { return tg::ones(size, over(*this, o)); }
Tensor Tensor::new_full(IntArrayRef size, double value, const TensorOptions& o) const {
  return tg::full(size, value, over(*this, o));
}
Tensor Tensor::new_empty(IntArrayRef size, const TensorOptions& o) const { return tg::empty(size, over(*this, o)); }
Tensor Tensor::clone() const { return tg::clone(*this); }
Tensor Tensor::flatten(int64_t start_dim, int64_t end_dim) const { return tg::flatten(*this, start_dim, end_dim); }

Tensor Tensor::norm(double p) const {
  TG_CHECK(is_floating(dtype()), DTypeError, "norm: expected a floating point tensor, got ", dtype_name(dtype()));
  TG_CHECK(p > 0, Error, "norm: p must be positive, got ", p);
  if (p == 2) return tg::sqrt(tg::sum(tg::mul(*this, *this)));
  if (p == 1) return tg::sum(tg::abs(*this));
  return tg::pow(tg::sum(tg::pow(tg::abs(*this), p)), 1.0 / p);
}
Tensor Tensor::all() const { return tg::sum(ne(0.0)) == static_cast<double>(numel()); }
Tensor Tensor::any() const { return tg::sum(ne(0.0)) > 0.0; }

bool Tensor::equal(const Tensor& other) const {
  TG_CHECK(defined() && other.defined(), Error, "equal: got an undefined tensor");
  prim::check_same_device("equal", data(), other.data());
  if (shape() != other.shape() || dtype() != other.dtype()) return false;
  if (numel() == 0) return true;
  // NaN differs from everything, itself included, as torch.equal
  return prim::sum(prim::binary(BinaryOp::Ne, data(), other.data(), "equal")).item() == 0;
}

bool Tensor::allclose(const Tensor& other, double rtol, double atol, bool equal_nan) const {
  TG_CHECK(defined() && other.defined(), Error, "allclose: got an undefined tensor");
  prim::check_same_device("allclose", data(), other.data());
  // in float64 on the host, both broadcast to their common shape (torch.allclose broadcasts too)
  const Shape common = prim::binary(BinaryOp::Eq, data(), other.data(), "allclose").shape();
  auto host = [&common](const RawTensor& t) {
    return t.to(kFloat64).to(Device::cpu()).expand(common).contiguous();
  };
  const RawTensor a = host(data()), b = host(other.data());
  const double* x = a.data<double>();
  const double* y = b.data<double>();
  for (int64_t i = 0; i < a.numel(); ++i) {
    if (x[i] == y[i]) continue;   // equal values, infinities of one sign included
    if (std::isnan(x[i]) || std::isnan(y[i])) {
      if (equal_nan && std::isnan(x[i]) && std::isnan(y[i])) continue;
      return false;
    }
    if (!(std::fabs(x[i] - y[i]) <= atol + rtol * std::fabs(y[i]))) return false;   // an infinity fails here
  }
  return true;
}
bool allclose(const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan) {
  return a.allclose(b, rtol, atol, equal_nan);
}
bool equal(const Tensor& a, const Tensor& b) { return a.equal(b); }

Tensor Tensor::view_as(const Tensor& other) const { return view(other.sizes()); }
Tensor Tensor::expand_as(const Tensor& other) const { return expand(other.sizes()); }
Tensor Tensor::reshape_as(const Tensor& other) const { return reshape(other.sizes()); }

Tensor Tensor::to(Device target, bool non_blocking) const {
  // non_blocking: host-to-device copies from pinned memory (DataLoader pin_memory) are asynchronous.
  const Device device = with_index(target);   // "cuda": the current device
  if (device == this->device()) return *this;
  const Device from = this->device();
  return record("to", data().to(device, non_blocking), {*this}, [from](const auto& grad, auto& g) {
    g.set(0, grad.to(from));                                              // the gradient goes back
  });
}

Tensor Tensor::to(DType dtype) const {
  if (dtype == this->dtype()) return *this;
  const DType from = this->dtype();
  if (!is_floating(dtype)) return Tensor(data().to(dtype));            // int64 results carry no gradient
  return record("to", data().to(dtype), {*this}, [from](const auto& grad, auto& g) {
    g.set(0, grad.to(from));                                              // cast back
  });
}

Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator-(const Tensor& x) { return neg(x); }
Tensor operator+(const Tensor& a, double s) { return add(a, scalar_like(s, a)); }
Tensor operator-(const Tensor& a, double s) { return sub(a, scalar_like(s, a)); }
Tensor operator*(const Tensor& a, double s) { return mul(a, scalar_like(s, a)); }
Tensor operator/(const Tensor& a, double s) { return div(a, scalar_like(s, a)); }
Tensor operator+(double s, const Tensor& a) { return add(scalar_like(s, a), a); }
Tensor operator-(double s, const Tensor& a) { return sub(scalar_like(s, a), a); }
Tensor operator*(double s, const Tensor& a) { return mul(scalar_like(s, a), a); }
Tensor operator/(double s, const Tensor& a) { return div(scalar_like(s, a), a); }
Tensor operator==(const Tensor& a, const Tensor& b) { return eq(a, b); }
Tensor operator!=(const Tensor& a, const Tensor& b) { return ne(a, b); }
Tensor operator>(const Tensor& a, const Tensor& b) { return gt(a, b); }
Tensor operator<(const Tensor& a, const Tensor& b) { return lt(a, b); }
Tensor operator>=(const Tensor& a, const Tensor& b) { return ge(a, b); }
Tensor operator<=(const Tensor& a, const Tensor& b) { return le(a, b); }
Tensor operator>(const Tensor& a, double s) { return gt(a, scalar_like(s, a)); }
Tensor operator<(const Tensor& a, double s) { return lt(a, scalar_like(s, a)); }
Tensor operator>=(const Tensor& a, double s) { return ge(a, scalar_like(s, a)); }
Tensor operator<=(const Tensor& a, double s) { return le(a, scalar_like(s, a)); }
Tensor operator==(const Tensor& a, double s) { return eq(a, scalar_like(s, a)); }
Tensor operator!=(const Tensor& a, double s) { return ne(a, scalar_like(s, a)); }

}  // namespace tg
