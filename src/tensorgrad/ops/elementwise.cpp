// ops/elementwise.cpp: differentiable elementwise ops. Forward through prim:: (device-dispatched,
// no graph), backward recorded right below it. Rules are written for equal shapes: the engine sums
// each gradient back to its input's shape (autograd/engine.cpp). Scalar math: kernels/elementwise.h.
#include <cmath>
#include <string>

#include "tensorgrad/ops/autocast.h"
#include "tensorgrad/prim/prim.h"
#include "tensorgrad/ops/ops.h"

namespace tg {

namespace {

/// Every unary op: y = f(x); dx = f'(x, y) * grad, saving only what f's backward reads.
Variable unary(UnaryOp op, const char* name, const Variable& x, UnaryArgs args = {}) {
  Tensor y = prim::unary(op, x.data(), args);
  if (!any_requires_grad({x})) return record(name, std::move(y), {x}, [](const Tensor&, Grads&) {});   // no Node
  bool uses_x = false, uses_y = false;
  visit(op, [&](auto f) {
    uses_x = decltype(f)::uses_x;
    uses_y = decltype(f)::uses_y;
  });
  SavedTensor xs = uses_x ? SavedTensor(x) : SavedTensor();
  SavedTensor ys = uses_y ? SavedTensor(y, name) : SavedTensor();
  return record(name, std::move(y), {x},
                [op, args, xs = std::move(xs), ys = std::move(ys)](const Tensor& grad, Grads& g) {
    g.set(0, prim::unary_backward(op, xs.get(), ys.get(), grad, args));   // dx = f'(x) * grad (fn::*::backward)
  });
}

}  // namespace

Variable neg(const Variable& x) { return unary(UnaryOp::Neg, "neg", x); }
// exp, log and pow run in float32 under autocast (Note [Autocast op lists])
Variable exp(const Variable& x) { return unary(UnaryOp::Exp, "exp", amp::detail::cast_float32(x)); }
Variable log(const Variable& x) { return unary(UnaryOp::Log, "log", amp::detail::cast_float32(x)); }
Variable sqrt(const Variable& x) { return unary(UnaryOp::Sqrt, "sqrt", x); }
Variable abs(const Variable& x) { return unary(UnaryOp::Abs, "abs", x); }
Variable relu(const Variable& x) { return unary(UnaryOp::Relu, "relu", x); }
Variable sigmoid(const Variable& x) { return unary(UnaryOp::Sigmoid, "sigmoid", x); }
Variable tanh(const Variable& x) { return unary(UnaryOp::Tanh, "tanh", x); }
Variable pow(const Variable& x, double exponent) {
  return unary(UnaryOp::PowScalar, "pow", amp::detail::cast_float32(x), {exponent, 0});
}

Variable round(const Variable& x) { return unary(UnaryOp::Round, "round", x); }
Variable sign(const Variable& x) { return unary(UnaryOp::Sign, "sign", x); }

Variable clamp(const Variable& x, double min, double max) {
  TG_CHECK(!(min > max), Error, "clamp: min (", min, ") must not be greater than max (", max, ")");
  return unary(UnaryOp::Clamp, "clamp", x, {min, max});
}

Variable add(const Variable& a, const Variable& b) {
  return record("add", prim::add(a.data(), b.data()), {a, b}, [](const Tensor& grad, Grads& g) {
    if (g.need(0)) g.set(0, grad);                                        // d(a+b)/da = 1
    if (g.need(1)) g.set(1, grad);                                        // d(a+b)/db = 1
  });
}

Variable sub(const Variable& a, const Variable& b) {
  return record("sub", prim::sub(a.data(), b.data()), {a, b}, [](const Tensor& grad, Grads& g) {
    if (g.need(0)) g.set(0, grad);                                        // d(a-b)/da = 1
    if (g.need(1)) g.set(1, prim::unary(UnaryOp::Neg, grad));            // d(a-b)/db = -1
  });
}

Variable mul(const Variable& a, const Variable& b) {
  Tensor out = prim::mul(a.data(), b.data());
  // Keep an operand only if the *other* operand's gradient reads it.
  const bool grad_mode = GradMode::is_enabled();
  SavedTensor a_saved = grad_mode && b.requires_grad() ? SavedTensor(a) : SavedTensor();
  SavedTensor b_saved = grad_mode && a.requires_grad() ? SavedTensor(b) : SavedTensor();
  return record("mul", std::move(out), {a, b},
                [a_saved = std::move(a_saved), b_saved = std::move(b_saved)](const Tensor& grad, Grads& g) {
    if (g.need(0)) g.set(0, prim::mul(grad, b_saved.get()));              // d(a*b)/da = b
    if (g.need(1)) g.set(1, prim::mul(grad, a_saved.get()));              // d(a*b)/db = a
  });
}

Variable div(const Variable& a, const Variable& b) {
  Tensor out = prim::div(a.data(), b.data());
  const bool need = any_requires_grad({a, b});
  SavedTensor b_saved = need ? SavedTensor(b) : SavedTensor();
  SavedTensor out_saved = need && b.requires_grad() ? SavedTensor(out, "div") : SavedTensor();
  return record("div", std::move(out), {a, b},
                [b_saved = std::move(b_saved), out_saved = std::move(out_saved)](const Tensor& grad, Grads& g) {
    const Tensor& bt = b_saved.get();
    if (g.need(0)) g.set(0, prim::div(grad, bt));                                          // d(a/b)/da = 1/b
    if (g.need(1)) g.set(1, prim::unary(UnaryOp::Neg, prim::div(prim::mul(grad, out_saved.get()), bt)));  // -a/b^2 = -out/b
  });
}

Variable pow(const Variable& a_in, const Variable& b_in) {
  const Variable a = amp::detail::cast_float32(a_in), b = amp::detail::cast_float32(b_in);
  Tensor out = prim::binary(BinaryOp::Pow, a.data(), b.data(), "pow");
  const bool need = any_requires_grad({a, b});
  SavedTensor a_saved = need ? SavedTensor(a) : SavedTensor();
  SavedTensor b_saved = need ? SavedTensor(b) : SavedTensor();
  SavedTensor out_saved = need && b.requires_grad() ? SavedTensor(out, "pow") : SavedTensor();
  // The formulas are 0 * inf = NaN where the limit is 0, so those points are set to 0, as PyTorch
  // does (Note [NaN and infinity] in kernels/elementwise.h): d/da where b == 0 (a^0 is constant in a, even
  // at a = 0), d/db where a == 0 and b >= 0 (0^b is constant in b there).
  return record("pow", out, {a, b}, [a_saved, b_saved, out_saved](const Tensor& grad, Grads& g) {
    const Tensor& at = a_saved.get();
    if (g.need(0)) {                                                      // d(a^b)/da = b a^(b-1)
      const Tensor& bt = b_saved.get();
      const Tensor zero = prim::scalar_like(0.0, bt);
      const Tensor bm1 = prim::sub(bt, prim::scalar_like(1.0, bt));
      const Tensor da = prim::mul(grad, prim::mul(bt, prim::binary(BinaryOp::Pow, at, bm1, "pow")));
      g.set(0, prim::where(prim::binary(BinaryOp::Eq, bt, zero, "pow"), zero, da));
    }
    if (g.need(1)) {                                                      // d(a^b)/db = a^b log(a)
      const Tensor& bt = b_saved.get();
      const Tensor zero = prim::scalar_like(0.0, at);
      const Tensor db = prim::mul(grad, prim::mul(out_saved.get(), prim::unary(UnaryOp::Log, at)));
      const Tensor flat = prim::mul(prim::binary(BinaryOp::Eq, at, zero, "pow"), prim::binary(BinaryOp::Ge, bt, zero, "pow"));
      g.set(1, prim::where(flat, zero, db));
    }
  });
}

Variable where(const Variable& cond, const Variable& a, const Variable& b) {
  TG_CHECK(!cond.requires_grad(), AutogradError, "where: the condition is not differentiable; detach() it");
  Tensor out = prim::where(cond.data(), a.data(), b.data());
  SavedTensor c_saved = any_requires_grad({a, b}) ? SavedTensor(cond) : SavedTensor();
  return record("where", out, {a, b}, [c_saved](const Tensor& grad, Grads& g) {
    const Tensor& c = c_saved.get();
    const Tensor zero = prim::scalar_like(0.0, grad);
    if (g.need(0)) g.set(0, prim::where(c, grad, zero));                  // d/da = [cond]
    if (g.need(1)) g.set(1, prim::where(c, zero, grad));                  // d/db = [not cond]
  });
}

// Comparisons: no gradient exists, so nothing is recorded.
Variable eq(const Variable& a, const Variable& b) { return Variable(prim::binary(BinaryOp::Eq, a.data(), b.data(), "eq")); }
Variable ne(const Variable& a, const Variable& b) { return Variable(prim::binary(BinaryOp::Ne, a.data(), b.data(), "ne")); }
Variable gt(const Variable& a, const Variable& b) { return Variable(prim::binary(BinaryOp::Gt, a.data(), b.data(), "gt")); }
Variable lt(const Variable& a, const Variable& b) { return Variable(prim::binary(BinaryOp::Lt, a.data(), b.data(), "lt")); }
Variable ge(const Variable& a, const Variable& b) { return Variable(prim::binary(BinaryOp::Ge, a.data(), b.data(), "ge")); }
Variable le(const Variable& a, const Variable& b) { return Variable(prim::binary(BinaryOp::Le, a.data(), b.data(), "le")); }

// ---- activations of torch.nn.functional (scalar math in kernels/elementwise.h)
Variable gelu(const Variable& x, const std::string& approximate) {
  TG_CHECK(approximate == "none" || approximate == "tanh", Error, "gelu: approximate must be \"none\" or \"tanh\", got \"",
           approximate, "\"");
  return approximate == "tanh" ? unary(UnaryOp::GeluTanh, "gelu", x) : unary(UnaryOp::Gelu, "gelu", x);
}
Variable silu(const Variable& x) { return unary(UnaryOp::Silu, "silu", x); }
Variable softplus(const Variable& x, double beta, double threshold) {
  TG_CHECK(beta != 0 && !std::isnan(beta), Error, "softplus: beta must be a non-zero number, got ", beta);
  return unary(UnaryOp::Softplus, "softplus", x, {beta, threshold});
}
Variable leaky_relu(const Variable& x, double negative_slope) {
  return unary(UnaryOp::LeakyRelu, "leaky_relu", x, {negative_slope, 0});
}
Variable log_sigmoid(const Variable& x) { return unary(UnaryOp::LogSigmoid, "log_sigmoid", x); }

Variable Variable::gelu(const std::string& approximate) const { return tg::gelu(*this, approximate); }
Variable Variable::silu() const { return tg::silu(*this); }
Variable Variable::softplus(double beta, double threshold) const { return tg::softplus(*this, beta, threshold); }
Variable Variable::leaky_relu(double negative_slope) const { return tg::leaky_relu(*this, negative_slope); }
Variable Variable::log_sigmoid() const { return tg::log_sigmoid(*this); }

}  // namespace tg
