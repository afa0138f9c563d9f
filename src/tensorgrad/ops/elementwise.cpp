// ops/elementwise.cpp: differentiable elementwise ops. Forward through prim:: (device-dispatched,
// no graph), backward recorded right below it. Rules are written for equal shapes: the engine sums
// each gradient back to its input's shape (autograd/engine.cpp). Scalar math: kernels/elementwise.h.
#include <cmath>
#include <string>

#include "tensorgrad/ops/autocast.h"
#include "tensorgrad/prim/prim.h"
#include "tensorgrad/ops/ops.h"
#include "tensorgrad/ops/rules.h"

namespace tg {

using amp::detail::AutocastOp;

namespace {

/// The derivative of unary op `op` as Tensor ops, for a backward under create_graph (Note
/// [Differentiable rules] in autograd/engine.cpp): dx given grad, with x and y the op's input and
/// output as VarGrads gives them back (undefined where the op saves none: fn::*::uses_x/uses_y).
/// Undefined for the ops whose rule is first-order only (the fused kernel without a formula here).
Tensor unary_derivative(UnaryOp op, const Tensor& x, const Tensor& y, const Tensor& grad, UnaryArgs args) {
  auto k = [](double v, const Tensor& like) { return scalar_like(v, like); };   // a constant
  const Tensor zero = grad.defined() ? k(0.0, grad) : Tensor();
  // v where a < x < b, else 0 (the clamps' gradient; false at a NaN x or bound, as the kernels)
  auto inside = [&](double a, double b, const Tensor& v) { return where(gt(x, k(a, x)), where(lt(x, k(b, x)), v, zero), zero); };
  switch (op) {
    case UnaryOp::Neg: return -grad;
    case UnaryOp::Exp: return grad * y;
    case UnaryOp::Log: return grad / x;
    case UnaryOp::Sqrt: return grad / (y * 2.0);
    case UnaryOp::Relu: return where(gt(y, scalar_like(0.0, y)), grad, scalar_like(0.0, grad));
    case UnaryOp::Sigmoid: return grad * (y * (1.0 - y));
    case UnaryOp::Tanh: return grad * (1.0 - y * y);
    case UnaryOp::Sin: return grad * cos(x);
    case UnaryOp::Cos: return -(grad * sin(x));
    case UnaryOp::Sinh: return grad * cosh(x);
    case UnaryOp::Cosh: return grad * sinh(x);
    case UnaryOp::Atan: return grad / (x * x + 1.0);
    case UnaryOp::Log1p: return grad / (x + 1.0);
    case UnaryOp::Expm1: return grad * (y + 1.0);
    case UnaryOp::Rsqrt: return grad * (y * y * y) * -0.5;
    case UnaryOp::Reciprocal: return -(grad * (y * y));
    case UnaryOp::Square: return grad * (x * 2.0);
    case UnaryOp::PowScalar: return args.a == 0 ? grad * 0.0 : grad * (pow(x, args.a - 1) * args.a);
    case UnaryOp::Abs: return grad * sign(x);
    case UnaryOp::Sign:
    case UnaryOp::Round:
    case UnaryOp::Floor:
    case UnaryOp::Ceil:
    case UnaryOp::Trunc: return grad * 0.0;
    case UnaryOp::Frac: return grad;
    case UnaryOp::Erf: return grad * (exp(-(x * x)) * 1.1283791670955126);   // 2/sqrt(pi) e^(-x^2)
    case UnaryOp::Gelu: {   // Phi(x) + x phi(x)
      const Tensor cdf = (erf(x * 0.70710678118654752) + 1.0) * 0.5;
      const Tensor pdf = exp(x * x * -0.5) * 0.39894228040143268;
      return grad * (cdf + x * pdf);
    }
    case UnaryOp::Silu: {
      const Tensor s = sigmoid(x);
      return grad * (s * (x * (1.0 - s) + 1.0));
    }
    case UnaryOp::LogSigmoid: return grad * sigmoid(-x);
    case UnaryOp::LeakyRelu: return where(gt(x, scalar_like(0.0, x)), grad, grad * args.a);
    case UnaryOp::Softplus: {   // sigmoid(beta x), 1 above the threshold where softplus is x
      const Tensor bx = x * args.a;
      return where(gt(bx, scalar_like(args.b, bx)), grad, grad * sigmoid(bx));
    }
    case UnaryOp::Tan: return grad * (y * y + 1.0);
    case UnaryOp::Asin: return grad / sqrt(1.0 - x * x);
    case UnaryOp::Acos: return -(grad / sqrt(1.0 - x * x));
    case UnaryOp::Asinh: return grad / sqrt(x * x + 1.0);
    case UnaryOp::Acosh: return grad / sqrt(x * x - 1.0);
    case UnaryOp::Atanh: return grad / (1.0 - x * x);
    case UnaryOp::Erfc: return grad * (exp(-(x * x)) * -1.1283791670955126);
    case UnaryOp::Log2: return grad / (x * 0.69314718055994530942);
    case UnaryOp::Log10: return grad / (x * 2.30258509299404568402);
    case UnaryOp::Clamp:
    case UnaryOp::Hardtanh: return inside(args.a, args.b, grad);
    case UnaryOp::Hardsigmoid: return inside(-3.0, 3.0, grad * (1.0 / 6.0));
    case UnaryOp::Hardswish:
      return where(lt(x, k(-3.0, x)), zero, where(le(x, k(3.0, x)), grad * (x * (1.0 / 3.0) + 0.5), grad));
    case UnaryOp::Elu: return where(gt(x, k(0.0, x)), grad * args.b, grad * (exp(x) * (args.a * args.b)));
    case UnaryOp::Celu: return where(gt(x, k(0.0, x)), grad, grad * exp(x * (1.0 / args.a)));
    case UnaryOp::Mish: {
      const Tensor t = tanh(log1p(exp(x)));
      return grad * (t + x * sigmoid(x) * (1.0 - t * t));
    }
    case UnaryOp::GeluTanh: {   // 1/2 (1 + tanh u) + x/2 (1 - tanh^2 u) sqrt(2/pi) (1 + 3 0.044715 x^2)
      const Tensor t = tanh((x + x * x * x * 0.044715) * 0.79788456080286535588);
      return grad * ((t + 1.0) * 0.5 + x * 0.5 * (1.0 - t * t) * 0.79788456080286535588 * (x * x * 0.134145 + 1.0));
    }
    default: return Tensor();
  }
}

/// Every unary op: y = f(x); dx = f'(x, y) * grad, saving only what f's backward reads. The rule runs
/// the fused kernel (fn::*::backward); under create_graph it records unary_derivative's formula
/// instead, or, for an op without one, gives a gradient that refuses a second backward.
Tensor unary(UnaryOp op, const char* name, const Tensor& x, UnaryArgs args = {}) {
  if (x.defined()) prim::check_floating(name, x.data());   // the error names the op ("sin: expected a floating ...")
  RawTensor y = prim::unary(op, x.data(), args);
  if (!any_requires_grad({x})) return record(name, std::move(y), {x}, [](const RawTensor&, Grads&) {});   // no Node
  bool uses_x = false, uses_y = false;
  visit(op, [&](auto f) {
    uses_x = decltype(f)::uses_x;
    uses_y = decltype(f)::uses_y;
  });
  SavedTensor xs = uses_x ? SavedTensor(x) : SavedTensor();
  SavedTensor ys = uses_y ? SavedTensor(y, name) : SavedTensor();
  return record(name, std::move(y), {x},
                [op, args, xs = std::move(xs), ys = std::move(ys)](const auto& grad, auto& g) {
    if constexpr (first_order_v<decltype(g)>) {   // dx = f'(x) * grad in one kernel (fn::*::backward)
      g.set(0, prim::unary_backward(op, xs.get(), ys.get(), grad, args));
    } else {
      Tensor dx = g.create_graph() ? unary_derivative(op, g.input(0, xs), g.output(ys), grad, args) : Tensor();
      if (!dx.defined()) dx = g.first_order_only(prim::unary_backward(op, xs.get(), ys.get(), grad.data(), args), grad);
      g.set(0, std::move(dx));
    }
  });
}

}  // namespace

Tensor neg(const Tensor& x) { return unary(UnaryOp::Neg, "neg", x); }
// exp, log and pow: float32 under CUDA autocast (Note [Autocast op lists])
Tensor exp(const Tensor& x) { return unary(UnaryOp::Exp, "exp", amp::detail::cast(AutocastOp::Exp, x)); }
Tensor log(const Tensor& x) { return unary(UnaryOp::Log, "log", amp::detail::cast(AutocastOp::Log, x)); }
Tensor sqrt(const Tensor& x) { return unary(UnaryOp::Sqrt, "sqrt", x); }
Tensor abs(const Tensor& x) { return unary(UnaryOp::Abs, "abs", x); }
Tensor relu(const Tensor& x) { return unary(UnaryOp::Relu, "relu", x); }
Tensor sigmoid(const Tensor& x) { return unary(UnaryOp::Sigmoid, "sigmoid", x); }
Tensor tanh(const Tensor& x) { return unary(UnaryOp::Tanh, "tanh", x); }
Tensor pow(const Tensor& x, double exponent) {
  return unary(UnaryOp::PowScalar, "pow", amp::detail::cast(AutocastOp::Pow, x), {exponent, 0});
}

Tensor round(const Tensor& x) { return unary(UnaryOp::Round, "round", x); }
Tensor sign(const Tensor& x) { return unary(UnaryOp::Sign, "sign", x); }

// min > max is not an error: as torch.clamp, every element is then max (Clamp in kernels/elementwise.h).
Tensor clamp(const Tensor& x, double min, double max) {
  return unary(UnaryOp::Clamp, "clamp", x, {min, max});
}

Tensor add(const Tensor& a, const Tensor& b) {
  return record("add", prim::add(a.data(), b.data()), {a, b}, [](const auto& grad, auto& g) {
    if (g.need(0)) g.set(0, grad);                                        // d(a+b)/da = 1
    if (g.need(1)) g.set(1, grad);                                        // d(a+b)/db = 1
  });
}

Tensor sub(const Tensor& a, const Tensor& b) {
  return record("sub", prim::sub(a.data(), b.data()), {a, b}, [](const auto& grad, auto& g) {
    if (g.need(0)) g.set(0, grad);                                        // d(a-b)/da = 1
    if (g.need(1)) g.set(1, rules::neg(grad));                            // d(a-b)/db = -1
  });
}

void detail::check_alpha(const char* op, DType result, double alpha) {
  TG_CHECK(result != kBool || alpha == 0.0 || alpha == 1.0, DTypeError, op,
           ": Boolean alpha only supported for Boolean results.");
  TG_CHECK(is_floating(result) || alpha == std::trunc(alpha), DTypeError, op,
           ": For integral input tensors, argument alpha must not be a floating point number.");
}

namespace {
/// b alpha for a + alpha b, alpha checked against the result's dtype as PyTorch's alpha_check.
Tensor scaled_by_alpha(const char* op, const Tensor& a, const Tensor& b, double alpha) {
  detail::check_alpha(op, prim::result_type(a.data(), b.data()), alpha);
  return alpha == 1.0 ? b : mul(b, scalar_like(alpha, b));
}
}  // namespace

Tensor add(const Tensor& a, const Tensor& b, double alpha) { return add(a, scaled_by_alpha("add", a, b, alpha)); }
Tensor sub(const Tensor& a, const Tensor& b, double alpha) { return sub(a, scaled_by_alpha("sub", a, b, alpha)); }

Tensor mul(const Tensor& a, const Tensor& b) {
  RawTensor out = prim::mul(a.data(), b.data());
  // Keep an operand only if the *other* operand's gradient reads it.
  const bool grad_mode = GradMode::is_enabled();
  SavedTensor a_saved = grad_mode && b.requires_grad() ? SavedTensor(a) : SavedTensor();
  SavedTensor b_saved = grad_mode && a.requires_grad() ? SavedTensor(b) : SavedTensor();
  return record("mul", std::move(out), {a, b},
                [a_saved = std::move(a_saved), b_saved = std::move(b_saved)](const auto& grad, auto& g) {
    if (g.need(0)) g.set(0, rules::mul(grad, g.input(1, b_saved)));       // d(a*b)/da = b
    if (g.need(1)) g.set(1, rules::mul(grad, g.input(0, a_saved)));       // d(a*b)/db = a
  });
}

Tensor div(const Tensor& a, const Tensor& b) {
  RawTensor out = prim::div(a.data(), b.data());
  const bool need = any_requires_grad({a, b});
  SavedTensor b_saved = need ? SavedTensor(b) : SavedTensor();
  SavedTensor out_saved = need && b.requires_grad() ? SavedTensor(out, "div") : SavedTensor();
  return record("div", std::move(out), {a, b},
                [b_saved = std::move(b_saved), out_saved = std::move(out_saved)](const auto& grad, auto& g) {
    const auto bt = g.input(1, b_saved);
    if (g.need(0)) g.set(0, rules::div(grad, bt));                        // d(a/b)/da = 1/b
    if (g.need(1)) g.set(1, rules::neg(rules::div(rules::mul(grad, g.output(out_saved)), bt)));   // -a/b^2 = -out/b
  });
}

Tensor pow(const Tensor& a_in, const Tensor& b_in) {
  const Tensor a = amp::detail::cast(AutocastOp::Pow, a_in), b = amp::detail::cast(AutocastOp::Pow, b_in);
  RawTensor out = prim::binary(BinaryOp::Pow, a.data(), b.data(), "pow");
  const bool need = any_requires_grad({a, b});
  SavedTensor a_saved = need ? SavedTensor(a) : SavedTensor();
  SavedTensor b_saved = need ? SavedTensor(b) : SavedTensor();
  SavedTensor out_saved = need && b.requires_grad() ? SavedTensor(out, "pow") : SavedTensor();
  // The formulas are 0 * inf = NaN where the limit is 0, so those points are set to 0, as PyTorch
  // does (Note [NaN and infinity] in kernels/elementwise.h): d/da where b == 0 (a^0 is constant in a, even
  // at a = 0), d/db where a == 0 and b >= 0 (0^b is constant in b there).
  return record("pow", out, {a, b}, [a_saved, b_saved, out_saved](const auto& grad, auto& g) {
    const auto at = g.input(0, a_saved), bt = g.input(1, b_saved);
    const RawTensor& ar = a_saved.get();
    const RawTensor& br = b_saved.get();
    if (g.need(0)) {                                                      // d(a^b)/da = b a^(b-1)
      const auto da = rules::mul(grad, rules::mul(bt, rules::pow(at, rules::sub(bt, 1.0))));
      const RawTensor flat = prim::binary(BinaryOp::Eq, br, prim::scalar_like(0.0, br), "pow");   // a constant mask
      g.set(0, rules::where(flat, rules::scalar(0.0, da), da));
    }
    if (g.need(1)) {                                                      // d(a^b)/db = a^b log(a)
      const auto db = rules::mul(grad, rules::mul(g.output(out_saved), rules::log(at)));
      const RawTensor zero = prim::scalar_like(0.0, ar);
      const RawTensor flat = prim::mul(prim::binary(BinaryOp::Eq, ar, zero, "pow"), prim::binary(BinaryOp::Ge, br, zero, "pow"));
      g.set(1, rules::where(flat, rules::scalar(0.0, db), db));
    }
  });
}

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  TG_CHECK(!cond.requires_grad(), AutogradError, "where: the condition is not differentiable; detach() it");
  RawTensor out = prim::where(cond.data(), a.data(), b.data());
  SavedTensor c_saved = any_requires_grad({a, b}) ? SavedTensor(cond) : SavedTensor();
  return record("where", out, {a, b}, [c_saved](const auto& grad, auto& g) {
    const RawTensor c = c_saved.get();
    const auto zero = rules::scalar(0.0, grad);
    if (g.need(0)) g.set(0, rules::where(c, grad, zero));                 // d/da = [cond]
    if (g.need(1)) g.set(1, rules::where(c, zero, grad));                 // d/db = [not cond]
  });
}

// Comparisons: no gradient exists, so nothing is recorded.
Tensor eq(const Tensor& a, const Tensor& b) { return Tensor(prim::binary(BinaryOp::Eq, a.data(), b.data(), "eq")); }
Tensor ne(const Tensor& a, const Tensor& b) { return Tensor(prim::binary(BinaryOp::Ne, a.data(), b.data(), "ne")); }
Tensor gt(const Tensor& a, const Tensor& b) { return Tensor(prim::binary(BinaryOp::Gt, a.data(), b.data(), "gt")); }
Tensor lt(const Tensor& a, const Tensor& b) { return Tensor(prim::binary(BinaryOp::Lt, a.data(), b.data(), "lt")); }
Tensor ge(const Tensor& a, const Tensor& b) { return Tensor(prim::binary(BinaryOp::Ge, a.data(), b.data(), "ge")); }
Tensor le(const Tensor& a, const Tensor& b) { return Tensor(prim::binary(BinaryOp::Le, a.data(), b.data(), "le")); }

// ---- activations of torch.nn.functional (scalar math in kernels/elementwise.h)
Tensor gelu(const Tensor& x, const std::string& approximate) {
  TG_CHECK(approximate == "none" || approximate == "tanh", Error, "gelu: approximate must be \"none\" or \"tanh\", got \"",
           approximate, "\"");
  return approximate == "tanh" ? unary(UnaryOp::GeluTanh, "gelu", x) : unary(UnaryOp::Gelu, "gelu", x);
}
Tensor silu(const Tensor& x) { return unary(UnaryOp::Silu, "silu", x); }
Tensor softplus(const Tensor& x, double beta, double threshold) {
  TG_CHECK(beta != 0 && !std::isnan(beta), Error, "softplus: beta must be a non-zero number, got ", beta);
  // float32 under CUDA autocast (Note [Autocast op lists])
  return unary(UnaryOp::Softplus, "softplus", amp::detail::cast(AutocastOp::Softplus, x), {beta, threshold});
}
Tensor leaky_relu(const Tensor& x, double negative_slope) {
  return unary(UnaryOp::LeakyRelu, "leaky_relu", x, {negative_slope, 0});
}
Tensor log_sigmoid(const Tensor& x) { return unary(UnaryOp::LogSigmoid, "log_sigmoid", x); }

Tensor prelu(const Tensor& x, const Tensor& weight) {
  // x (*), weight (1) / 0-d or (C) with C = x.size(1) (1 for a 1-D x); PyTorch's checks in its order
  prim::check_floating("prelu", x.data());
  TG_CHECK(x.dtype() == weight.dtype(), DTypeError, "prelu: Type promoting not supported. Got ", dtype_name(x.dtype()),
           " and ", dtype_name(weight.dtype()));
  prim::check_same_device("prelu", x.data(), weight.data());
  if (weight.numel() != 1) {
    TG_CHECK(x.dim() > 0, ShapeError, "prelu: Not allow zero-dim input tensor (weight of size ",
             shape_str(weight.shape()), ")");
    const int64_t channels = x.dim() > 1 ? x.shape()[1] : 1;
    TG_CHECK(channels == weight.numel(), ShapeError,
             "prelu: Mismatch of parameter numbers and input channel size. Found parameter numbers = ", weight.numel(),
             " and channel size = ", channels, " (input of size ", shape_str(x.shape()), ")");
  }
  TG_CHECK(weight.dim() <= 1, ShapeError, "prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = ",
           weight.dim(), " (weight of size ", shape_str(weight.shape()), ")");
  // weight viewed as (1, C, 1, ...) of x's rank, so that it broadcasts along dim 1
  Tensor w = weight;
  if (x.dim() != weight.dim()) {
    Shape s(static_cast<std::size_t>(x.dim()), 1);
    if (x.dim() > 1) s[1] = weight.numel();
    w = reshape(weight, s);
  }
  // d/dx = 1 where x > 0, else weight; d/dweight = 0 where x > 0, else x (where and mul's rules)
  return where(x > 0.0, x, w * x);
}

// ---- the math functions of torch (kernels/elementwise.h: fn::Sin, ...)
Tensor sin(const Tensor& x) { return unary(UnaryOp::Sin, "sin", x); }
Tensor cos(const Tensor& x) { return unary(UnaryOp::Cos, "cos", x); }
Tensor tan(const Tensor& x) { return unary(UnaryOp::Tan, "tan", x); }
Tensor asin(const Tensor& x) { return unary(UnaryOp::Asin, "asin", x); }
Tensor acos(const Tensor& x) { return unary(UnaryOp::Acos, "acos", x); }
Tensor atan(const Tensor& x) { return unary(UnaryOp::Atan, "atan", x); }
Tensor sinh(const Tensor& x) { return unary(UnaryOp::Sinh, "sinh", x); }
Tensor cosh(const Tensor& x) { return unary(UnaryOp::Cosh, "cosh", x); }
Tensor asinh(const Tensor& x) { return unary(UnaryOp::Asinh, "asinh", x); }
Tensor acosh(const Tensor& x) { return unary(UnaryOp::Acosh, "acosh", x); }
Tensor atanh(const Tensor& x) { return unary(UnaryOp::Atanh, "atanh", x); }
Tensor erf(const Tensor& x) { return unary(UnaryOp::Erf, "erf", x); }
Tensor erfc(const Tensor& x) { return unary(UnaryOp::Erfc, "erfc", x); }
Tensor log1p(const Tensor& x) { return unary(UnaryOp::Log1p, "log1p", x); }
Tensor expm1(const Tensor& x) { return unary(UnaryOp::Expm1, "expm1", x); }
Tensor log2(const Tensor& x) { return unary(UnaryOp::Log2, "log2", x); }
Tensor log10(const Tensor& x) { return unary(UnaryOp::Log10, "log10", x); }
Tensor rsqrt(const Tensor& x) { return unary(UnaryOp::Rsqrt, "rsqrt", x); }
Tensor reciprocal(const Tensor& x) { return unary(UnaryOp::Reciprocal, "reciprocal", x); }
Tensor square(const Tensor& x) { return unary(UnaryOp::Square, "square", x); }
namespace {
/// floor, ceil and trunc of an integer tensor: its values, as PyTorch returns them (bool refused).
Tensor rounding(UnaryOp op, const char* name, const Tensor& x) {
  if (x.defined() && !is_floating(x.dtype())) {
    TG_CHECK(x.dtype() != kBool, DTypeError, name, ": not implemented for bool tensors (as in PyTorch)");
    return Tensor(x.data().clone());
  }
  return unary(op, name, x);
}
}  // namespace
Tensor floor(const Tensor& x) { return rounding(UnaryOp::Floor, "floor", x); }
Tensor ceil(const Tensor& x) { return rounding(UnaryOp::Ceil, "ceil", x); }
Tensor trunc(const Tensor& x) { return rounding(UnaryOp::Trunc, "trunc", x); }
Tensor frac(const Tensor& x) { return unary(UnaryOp::Frac, "frac", x); }

// ---- more activations of torch.nn.functional
Tensor hardtanh(const Tensor& x, double min_val, double max_val) {
  TG_CHECK(!(min_val > max_val), Error, "hardtanh: min_val cannot be greater than max_val (got ", min_val, " > ",
           max_val, ")");
  return unary(UnaryOp::Hardtanh, "hardtanh", x, {min_val, max_val});
}
Tensor relu6(const Tensor& x) { return unary(UnaryOp::Hardtanh, "relu6", x, {0.0, 6.0}); }
Tensor hardswish(const Tensor& x) { return unary(UnaryOp::Hardswish, "hardswish", x); }
Tensor hardsigmoid(const Tensor& x) { return unary(UnaryOp::Hardsigmoid, "hardsigmoid", x); }
Tensor elu(const Tensor& x, double alpha) { return unary(UnaryOp::Elu, "elu", x, {alpha, 1.0}); }
Tensor selu(const Tensor& x) {
  // torch.nn.functional.selu's constants
  return unary(UnaryOp::Elu, "selu", x, {1.6732632423543772848170429916717, 1.0507009873554804934193349852946});
}
Tensor celu(const Tensor& x, double alpha) {
  TG_CHECK(alpha != 0, Error, "celu: alpha cannot be 0 for CELU");
  return unary(UnaryOp::Celu, "celu", x, {alpha, 0.0});
}
Tensor mish(const Tensor& x) { return unary(UnaryOp::Mish, "mish", x); }
Tensor softsign(const Tensor& x) { return div(x, add(abs(x), scalar_like(1.0, x))); }   // x / (1 + |x|), as PyTorch composes it

Tensor Tensor::gelu(const std::string& approximate) const { return tg::gelu(*this, approximate); }
Tensor Tensor::silu() const { return tg::silu(*this); }
Tensor Tensor::softplus(double beta, double threshold) const { return tg::softplus(*this, beta, threshold); }
Tensor Tensor::leaky_relu(double negative_slope) const { return tg::leaky_relu(*this, negative_slope); }
Tensor Tensor::log_sigmoid() const { return tg::log_sigmoid(*this); }

}  // namespace tg
