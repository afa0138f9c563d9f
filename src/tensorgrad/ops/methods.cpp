// ops/methods.cpp: Variable's op methods and the operators, each a one-line call of the free
// function in ops/ops.h, plus the differentiable device/dtype moves Variable::to.
#include "tensorgrad/prim/prim.h"
#include "tensorgrad/ops/ops.h"

namespace tg {

Variable scalar_like(double value, const Variable& like) { return Variable(prim::scalar_like(value, like.data())); }

Variable Variable::add(const Variable& o) const { return tg::add(*this, o); }
Variable Variable::sub(const Variable& o) const { return tg::sub(*this, o); }
Variable Variable::mul(const Variable& o) const { return tg::mul(*this, o); }
Variable Variable::div(const Variable& o) const { return tg::div(*this, o); }
Variable Variable::pow(const Variable& o) const { return tg::pow(*this, o); }
Variable Variable::pow(double e) const { return tg::pow(*this, e); }
Variable Variable::neg() const { return tg::neg(*this); }
Variable Variable::exp() const { return tg::exp(*this); }
Variable Variable::log() const { return tg::log(*this); }
Variable Variable::sqrt() const { return tg::sqrt(*this); }
Variable Variable::abs() const { return tg::abs(*this); }
Variable Variable::relu() const { return tg::relu(*this); }
Variable Variable::sigmoid() const { return tg::sigmoid(*this); }
Variable Variable::tanh() const { return tg::tanh(*this); }
Variable Variable::clamp(double lo, double hi) const { return tg::clamp(*this, lo, hi); }
Variable Variable::sum() const { return tg::sum(*this); }
Variable Variable::sum(int64_t dim, bool keepdim) const { return tg::sum(*this, dim, keepdim); }
Variable Variable::mean() const { return tg::mean(*this); }
Variable Variable::mean(int64_t dim, bool keepdim) const { return tg::mean(*this, dim, keepdim); }
Variable Variable::max() const { return tg::max(*this); }
Variable Variable::max(int64_t dim, bool keepdim) const { return tg::max(*this, dim, keepdim); }
Variable Variable::min() const { return tg::min(*this); }
Variable Variable::min(int64_t dim, bool keepdim) const { return tg::min(*this, dim, keepdim); }
Variable Variable::argmax() const { return tg::argmax(*this); }
Variable Variable::argmax(int64_t dim, bool keepdim) const { return tg::argmax(*this, dim, keepdim); }
Variable Variable::matmul(const Variable& o) const { return tg::matmul(*this, o); }
Variable Variable::reshape(const Shape& s) const { return tg::reshape(*this, s); }
Variable Variable::view(const Shape& s) const { return tg::view(*this, s); }
Variable Variable::transpose(int64_t d0, int64_t d1) const { return tg::transpose(*this, d0, d1); }
Variable Variable::t() const { return tg::t(*this); }
Variable Variable::permute(const std::vector<int64_t>& dims) const { return tg::permute(*this, dims); }
Variable Variable::squeeze() const { return tg::squeeze(*this); }
Variable Variable::squeeze(int64_t dim) const { return tg::squeeze(*this, dim); }
Variable Variable::unsqueeze(int64_t dim) const { return tg::unsqueeze(*this, dim); }
Variable Variable::expand(const Shape& s) const { return tg::expand(*this, s); }
Variable Variable::contiguous() const { return tg::contiguous(*this); }
Variable Variable::index_select(int64_t dim, const Variable& index) const { return tg::index_select(*this, dim, index); }
Variable Variable::gather(int64_t dim, const Variable& index) const { return tg::gather(*this, dim, index); }
Variable Variable::softmax(int64_t dim) const { return tg::softmax(*this, dim); }
Variable Variable::log_softmax(int64_t dim) const { return tg::log_softmax(*this, dim); }

Variable Variable::to(Device target, bool non_blocking) const {
  // non_blocking: host-to-device copies from pinned memory (DataLoader pin_memory) are asynchronous.
  const Device device = with_index(target);   // "cuda": the current device
  if (device == this->device()) return *this;
  const Device from = this->device();
  return record("to", data().to(device, non_blocking), {*this}, [from](const Tensor& grad, Grads& g) {
    g.set(0, grad.to(from));                                              // the gradient goes back
  });
}

Variable Variable::to(DType dtype) const {
  if (dtype == this->dtype()) return *this;
  const DType from = this->dtype();
  if (!is_floating(dtype)) return Variable(data().to(dtype));            // int64 results carry no gradient
  return record("to", data().to(dtype), {*this}, [from](const Tensor& grad, Grads& g) {
    g.set(0, grad.to(from));                                              // cast back
  });
}

Variable operator+(const Variable& a, const Variable& b) { return add(a, b); }
Variable operator-(const Variable& a, const Variable& b) { return sub(a, b); }
Variable operator*(const Variable& a, const Variable& b) { return mul(a, b); }
Variable operator/(const Variable& a, const Variable& b) { return div(a, b); }
Variable operator-(const Variable& x) { return neg(x); }
Variable operator+(const Variable& a, double s) { return add(a, scalar_like(s, a)); }
Variable operator-(const Variable& a, double s) { return sub(a, scalar_like(s, a)); }
Variable operator*(const Variable& a, double s) { return mul(a, scalar_like(s, a)); }
Variable operator/(const Variable& a, double s) { return div(a, scalar_like(s, a)); }
Variable operator+(double s, const Variable& a) { return add(scalar_like(s, a), a); }
Variable operator-(double s, const Variable& a) { return sub(scalar_like(s, a), a); }
Variable operator*(double s, const Variable& a) { return mul(scalar_like(s, a), a); }
Variable operator/(double s, const Variable& a) { return div(scalar_like(s, a), a); }
Variable operator==(const Variable& a, const Variable& b) { return eq(a, b); }
Variable operator!=(const Variable& a, const Variable& b) { return ne(a, b); }
Variable operator>(const Variable& a, const Variable& b) { return gt(a, b); }
Variable operator<(const Variable& a, const Variable& b) { return lt(a, b); }
Variable operator>=(const Variable& a, const Variable& b) { return ge(a, b); }
Variable operator<=(const Variable& a, const Variable& b) { return le(a, b); }
Variable operator>(const Variable& a, double s) { return gt(a, scalar_like(s, a)); }
Variable operator<(const Variable& a, double s) { return lt(a, scalar_like(s, a)); }
Variable operator>=(const Variable& a, double s) { return ge(a, scalar_like(s, a)); }
Variable operator<=(const Variable& a, double s) { return le(a, scalar_like(s, a)); }
Variable operator==(const Variable& a, double s) { return eq(a, scalar_like(s, a)); }
Variable operator!=(const Variable& a, double s) { return ne(a, scalar_like(s, a)); }

}  // namespace tg
