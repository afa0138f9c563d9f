// ops/inplace.cpp: in-place ops (add_ sub_ mul_ zero_ fill_ copy_ index_put_). They write through prim::*_,
// which bumps the storage's version counter (Note [Version counter] in autograd/tensor.h). On a
// non-leaf that requires grad they re-record its history: the old value becomes input 0 of a new
// Node, as PyTorch's rebase_history does.
#include "tensorgrad/prim/prim.h"
#include "tensorgrad/ops/advanced_index.h"
#include "tensorgrad/ops/ops.h"
#include "tensorgrad/ops/rules.h"

#include <utility>

namespace tg {

namespace {

void check_inplace(const Tensor& self, const char* name) {
  TG_CHECK(self.defined(), Error, name, ": the Tensor is undefined");
  if (!GradMode::is_enabled() || !self.requires_grad()) return;
  TG_CHECK(!self.is_leaf(), AutogradError, name, ": a leaf Tensor that requires grad is being used in an in-place "
           "operation. Wrap the update in tg::NoGradGuard (as optimizers do) or use an out-of-place op.");
  TG_CHECK(!self.impl()->is_view, AutogradError, name, ": in-place operation on a view of a Tensor that requires "
           "grad is not supported; use the out-of-place op instead");
}

/// After self was written in place: when a gradient must flow, self's history becomes
/// old-self -> this op (input 0), others -> this op (inputs 1..).
/// The rules are generic (Note [Differentiable rules] in autograd/engine.cpp): the same formulas on
/// RawTensors or, under create_graph, as recorded ops.
template <class F>
void rebase(Tensor& self, const char* name, const std::vector<Tensor>& others, F&& backward) {
  std::vector<Tensor> inputs;
  inputs.reserve(others.size() + 1);
  inputs.push_back(Tensor(std::make_shared<TensorImpl>(*self.impl())));   // the old version's history
  inputs.insert(inputs.end(), others.begin(), others.end());
  if (!any_requires_grad(inputs)) return;
  Tensor r = record(name, self.data(), inputs, std::forward<F>(backward));
  self.impl()->grad_fn = r.grad_fn();
  self.impl()->requires_grad = true;
}

}  // namespace

Tensor& Tensor::add_(const Tensor& o) {
  check_inplace(*this, "add_");
  prim::binary_(BinaryOp::Add, data(), o.data(), "add_");
  rebase(*this, "add_", {o}, [](const auto& grad, auto& g) {
    if (g.need(0)) g.set(0, grad);                                        // d(a+b)/da = 1
    if (g.need(1)) g.set(1, grad);                                        // d(a+b)/db = 1
  });
  return *this;
}

Tensor& Tensor::sub_(const Tensor& o) {
  check_inplace(*this, "sub_");
  prim::binary_(BinaryOp::Sub, data(), o.data(), "sub_");
  rebase(*this, "sub_", {o}, [](const auto& grad, auto& g) {
    if (g.need(0)) g.set(0, grad);                                        // d(a-b)/da = 1
    if (g.need(1)) g.set(1, rules::neg(grad));                           // d(a-b)/db = -1
  });
  return *this;
}

Tensor& Tensor::mul_(const Tensor& o) {
  check_inplace(*this, "mul_");
  const bool record_grad = GradMode::is_enabled() && (requires_grad() || o.requires_grad());
  // the old value of self is needed by o's gradient: keep a copy before overwriting it
  const SavedTensor old = record_grad && o.requires_grad() ? SavedTensor(data().clone(), "mul_") : SavedTensor();
  SavedTensor o_saved = record_grad && requires_grad() ? SavedTensor(o) : SavedTensor();
  prim::binary_(BinaryOp::Mul, data(), o.data(), "mul_");
  rebase(*this, "mul_", {o}, [old, o_saved](const auto& grad, auto& g) {
    if (g.need(0)) g.set(0, rules::mul(grad, g.input(1, o_saved)));      // d(a*b)/da = b
    if (g.need(1)) g.set(1, rules::mul(grad, g.input(0, old)));          // d(a*b)/db = a (before the write)
  });
  return *this;
}

Tensor& Tensor::add_(const Tensor& o, double alpha) {
  detail::check_alpha("add_", dtype(), alpha);   // the result has this dtype
  return add_(alpha == 1.0 ? o : tg::mul(o, scalar_like(alpha, o)));
}
Tensor& Tensor::sub_(const Tensor& o, double alpha) {
  detail::check_alpha("sub_", dtype(), alpha);
  return sub_(alpha == 1.0 ? o : tg::mul(o, scalar_like(alpha, o)));
}
Tensor& Tensor::add_(double s) { return add_(scalar_like(s, *this)); }
Tensor& Tensor::sub_(double s) { return sub_(scalar_like(s, *this)); }
Tensor& Tensor::mul_(double s) { return mul_(scalar_like(s, *this)); }
Tensor& Tensor::zero_() { return fill_(0.0); }

Tensor& Tensor::fill_(double value) {
  check_inplace(*this, "fill_");
  prim::fill_(data(), value);
  rebase(*this, "fill_", {}, [](const auto&, auto&) {});               // a constant: no gradient flows back
  return *this;
}

Tensor& Tensor::copy_(const Tensor& src) {
  check_inplace(*this, "copy_");
  prim::copy_(data(), src.data());
  const DType src_dtype = src.defined() ? src.dtype() : dtype();
  const Device src_device = src.defined() ? src.device() : device();
  rebase(*this, "copy_", {src}, [src_dtype, src_device](const auto& grad, auto& g) {
    if (g.need(1)) g.set(1, grad.to(src_dtype).to(src_device));         // d(copy)/dsrc = 1; old self gets none
  });
  return *this;
}

Tensor& Tensor::index_put_(const std::vector<TensorIndex>& indices, const Tensor& values, bool accumulate) {
  check_inplace(*this, "index_put_");
  // The out-of-place result, recorded from the current value (its graph reaches the old history and
  // values), then written over this: the node's gradient flows to that result only, as copy_'s does.
  const Tensor result = detail::index_put("index_put_", *this, indices, values, accumulate);
  prim::copy_(data(), result.data());
  rebase(*this, "index_put_", {result}, [](const auto& grad, auto& g) {
    if (g.need(1)) g.set(1, grad);
  });
  return *this;
}

Tensor& Tensor::index_put_(const std::vector<TensorIndex>& indices, double value, bool accumulate) {
  TG_CHECK(defined(), Error, "index_put_: the Tensor is undefined");
  return index_put_(indices, Tensor(prim::full({}, value, dtype(), device())), accumulate);
}

}  // namespace tg
