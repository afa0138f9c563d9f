/// \file
/// kernels/elementwise.h: the scalar math of every elementwise op, forward and local derivative side by side.
/// Compiled by g++ (backend/cpu/) and by nvcc (the CUDA kernels), so: no dependencies.
/// Adding a unary op: one struct here + one entry in TG_UNARY_OPS + its Tensor function in
/// ops/elementwise.cpp. Binary ops only need forward: their gradients are composed in ops/.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "tensorgrad/core/half.h"
#include "tensorgrad/core/macros.h"

namespace tg {

/// Scalar parameters of a unary op (pow's exponent, clamp's bounds); most ops ignore them.
struct UnaryArgs {
  double a = 0;   ///< pow's exponent; clamp's lower bound; softplus's beta; leaky_relu's negative_slope.
  double b = 0;   ///< clamp's upper bound; softplus's threshold.
};

// The functors, their op lists, the UnaryOp and BinaryOp kernel ids and visit(): the kernels' own
// vocabulary, documented here in the code rather than in the API reference.
/// \cond INTERNAL
namespace fn {
using std::abs;
using std::acos;
using std::acosh;
using std::asin;
using std::asinh;
using std::atan;
using std::atanh;
using std::ceil;
using std::cos;
using std::cosh;
using std::erfc;
using std::expm1;
using std::floor;
using std::log;
using std::log10;
using std::log1p;
using std::log2;
using std::pow;
using std::rint;
using std::sin;
using std::sinh;
using std::sqrt;
using std::tan;
using std::trunc;

/// Note [Vectorizable exp]: std::exp is a libm call per element, which no compiler vectorizes, and
/// made exp(x) on 16M floats 4x slower than a copy. On the CPU, float exp is this branch-free
/// version instead (Cephes' polynomial for e^r on [-ln2/2, ln2/2], r = x - n ln2, scaled by 2^n
/// in two steps so that results near overflow and subnormal results come out right): within 1 ulp
/// of the exact value, 1.02 ulp where the compiler contracts it into FMAs (the AVX2 and AVX-512
/// paths; tests/test_kernels.cpp and test_cpu_capability.cpp sweep it), NaN in gives NaN out, and a
/// loop over it vectorizes on every CPU code path (Note [CPU capabilities] in backend/cpu/cpu_backend.h:
/// under AVX2 the clamps need that file's -fno-trapping-math).
/// Double stays with libm: it is the reference dtype. The GPU uses its own expf.
TG_HD_INLINE float exp(float x) {
#ifdef __CUDA_ARCH__
  return ::expf(x);
#else
  auto to_bits = [](float f) { int32_t i; std::memcpy(&i, &f, sizeof i); return i; };
  auto from_bits = [](int32_t i) { float f; std::memcpy(&f, &i, sizeof f); return f; };
  float xc = x < -104.0f ? -104.0f : x;   // e^-104 rounds to 0, e^88.8 to inf; NaN passes both
  xc = xc > 88.8f ? 88.8f : xc;
  const float t = xc * 1.44269504088896341f + 12582912.0f;   // + 1.5 * 2^23: round(x log2 e) lands in
  const float nf = t - 12582912.0f;                         // the low mantissa bits of t
  const int32_t n = to_bits(t) - 0x4B400000;
  const float r = (xc - nf * 0.693359375f) - nf * -2.12194440e-4f;   // x - n ln2, ln2 in two parts
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;                                  // e^r
  const int32_t n1 = n >> 1, n2 = n - n1;                    // 2^n = 2^n1 2^n2, each a normal float
  return p * from_bits(int32_t(uint32_t(n1 + 127) << 23)) * from_bits(int32_t(uint32_t(n2 + 127) << 23));
#endif
}
/// std::exp: double keeps libm's exp, the reference.
TG_HD double exp(double x) { return std::exp(x); }

/// Note [Vectorizable erf]: gelu's forward and backward spent most of a transformer MLP's elementwise
/// time in libm's erff, one call per element that no compiler vectorizes. On the CPU, float erf is
/// this branch-free form instead, so that the gelu loops vectorize on every CPU code path:
///   |x| < 0.921875:  erf(x) = x P(x^2), P of degree 5 (least-squares fit of erf(x)/x on that range,
///                    relative error 1.7e-8 before rounding);
///   otherwise:       erf(x) = sign(x) (1 - e^-a^2 R(t)), a = min(|x|, 3.92), t = (a - 2.4209375) /
///                    1.4990625, R of degree 8 fitting erfc(a) e^(a^2) (absolute error of erfc 5e-9);
///                    past 3.92 erfc is below half an ulp of 1, so the result rounds to +-1.
/// Both sides are computed and one is selected; NaN takes the second side and stays NaN. Within 2.7
/// ulp of the exact value over every float (swept in tests/test_kernels.cpp), against libm's 1: gelu
/// needs 1 + erf(x), whose rounding (up to 6e-8 absolute) is the same either way. The coefficients
/// were fitted in float64 with numpy against mpmath's erf on 6,000 Chebyshev points per range. Double
/// stays with libm (the reference dtype); the GPU uses its own erff.
TG_HD_INLINE float erf(float x) {
#ifdef __CUDA_ARCH__
  return ::erff(x);
#else
  const float ax = x < 0.0f ? -x : x, z = x * x;
  float p = -6.0245570821e-04f;   // x P(x^2)
  p = p * z + 5.0008848635e-03f;
  p = p * z - 2.6772948351e-02f;
  p = p * z + 1.1282038871e-01f;
  p = p * z - 3.7612524046e-01f;
  p = p * z + 1.1283791593e+00f;
  const float a = ax > 3.92f ? 3.92f : ax;   // NaN stays NaN (the comparison is false)
  const float t = (a - 2.4209375f) * 0.66708359391f;
  float r = 3.1266834065e-03f;   // R(t) ~ erfc(a) e^(a^2)
  r = r * t + 3.8587797858e-03f;
  r = r * t + 6.0893350400e-03f;
  r = r * t - 6.5718266088e-03f;
  r = r * t + 1.2870842187e-02f;
  r = r * t - 3.0176353903e-02f;
  r = r * t + 6.0507357803e-02f;
  r = r * t - 1.1758033265e-01f;
  r = r * t + 2.1684573841e-01f;
  const float tail = ax > 3.92f ? 1.0f : 1.0f - exp(-a * a) * r;   // 1 exactly past the clamp
  return ax < 0.921875f ? x * p : (x < 0.0f ? -tail : tail);
#endif
}
/// std::erf: double keeps libm's erf, the reference.
TG_HD double erf(double x) { return std::erf(x); }

/// Note [Vectorizable tanh]: libm's tanhf is a call per element (through expm1f), which no compiler
/// vectorizes; it was 8% of an LSTM language-model training step on the CPU. On the CPU, float tanh is
/// this branch-free form instead:
///   |x| < 0.625:  tanh(x) = x + x^3 P(x^2), P of degree 4 (least-squares fit of (tanh(x) - x) / x^3
///                 weighted for relative error on 4,000 Chebyshev points, in float64 with numpy against
///                 mpmath's tanh; relative error 4.6e-9 before rounding);
///   otherwise:    tanh(x) = sign(x) (1 - 2 / (e^(2|x|) + 1)) with fn::exp; past |x| = 9 the quotient is
///                 below half an ulp of 1 and the result rounds to +-1, infinities included.
/// Both sides are computed and one is selected; NaN takes the second side and stays NaN, and -0 stays
/// -0. Within 1.4 ulp of the exact value over every float (swept in tests/test_kernels.cpp), against
/// libm's 1. Double stays with libm (the reference dtype); the GPU uses its own tanhf.
TG_HD_INLINE float tanh(float x) {
#ifdef __CUDA_ARCH__
  return ::tanhf(x);
#else
  const float a = x < 0.0f ? -x : x, z = x * x;
  float p = -5.7189625640e-03f;   // P(x^2)
  p = p * z + 2.0653124519e-02f;
  p = p * z - 5.3744657902e-02f;
  p = p * z + 1.3331512665e-01f;
  p = p * z - 3.3333285220e-01f;
  const float small = x + x * z * p;
  const float big = 1.0f - 2.0f / (exp(2.0f * a) + 1.0f);
  const float r = a < 0.625f ? small : (x < 0.0f ? -big : big);
  return x == 0.0f ? x : r;   // keeps the sign of -0
#endif
}
/// std::tanh: double keeps libm's tanh, the reference.
TG_HD double tanh(double x) { return std::tanh(x); }

// Note [NaN and infinity]
// ~~~~~~~~~~~~~~~~~~~~~~~
// Both backends follow PyTorch's rules, checked by tests/test_ops.cpp ("NaN and infinity: ...") on the
// CPU and tests/test_cuda.cpp ("cuda parity: NaN and infinity ...") against it:
// - Elementwise ops: NaN in gives NaN out (relu, clamp and abs too: comparisons are written so that
//   NaN takes the value path); IEEE results otherwise (log(0) = -inf, sqrt(-1) = NaN, 1/0 = inf).
// - max, min, argmax: NaN wins (argmax gives the first NaN's index), as in PyTorch.
// - softmax, log_softmax and cross-entropy work on a row shifted by its maximum. A row holding NaN or
//   +inf, or holding only -inf, has no finite shift: the whole row is NaN (softmax([inf, 1, 2]) is
//   [nan, nan, nan], and so is cross-entropy's loss for that row). A -inf among finite values is
//   probability 0 (log_softmax -inf); cross-entropy with the target there is +inf.
// - scaled_dot_product_attention, unlike softmax, gives 0 for a query row whose scores are all -inf
//   (every key masked), with zero gradients, as PyTorch 2.5 and later;
//   nn::MultiheadAttention with need_weights = true keeps softmax's NaN in its weights and output, as
//   PyTorch's does (Note [Fused attention] in ops/attention.cpp).
// - Gradients whose formula is 0 * inf where the function is locally constant are 0, not NaN:
//   pow(a, b) with respect to b where a == 0 and b >= 0, with respect to a where b == 0 (also the
//   scalar-exponent pow); relu, abs and clamp at their kinks take the documented one-sided value.

// The functor protocol of the unary ops:
// forward(x, p) = y;  backward(x, y, dy, p) = dL/dx given y = forward(x) and dy = dL/dy.
// Kernels call them with T = opmath_t of the tensor's dtype (float for float16 and bfloat16: Note
// [Half precision arithmetic] in core/half.h) and round the result to the dtype when storing it.
// uses_x / uses_y say which of x and y backward reads, so that an op saves only those.
// NaN in gives NaN out everywhere: comparisons are written so that NaN takes the value path.
/// relu: y = max(x, 0) (NaN stays NaN); dx = dy where y > 0 (the same points as x > 0), else 0.
struct Relu {
  static constexpr bool uses_x = false, uses_y = true;
  template <class T> TG_HD_INLINE static T forward(T x, UnaryArgs) { return x < T(0) ? T(0) : x; }   // NaN stays NaN
  template <class T> TG_HD_INLINE static T backward(T, T y, T dy, UnaryArgs) { return y > T(0) ? dy : T(0); }
};
/// sigmoid: y = 1 / (1 + e^-x); dx = dy y (1 - y).
struct Sigmoid {
  static constexpr bool uses_x = false, uses_y = true;
  template <class T> TG_HD_INLINE static T forward(T x, UnaryArgs) { return T(1) / (T(1) + exp(-x)); }
  template <class T> TG_HD_INLINE static T backward(T, T y, T dy, UnaryArgs) { return dy * y * (T(1) - y); }  // s(1-s)
};
/// tanh: y = tanh(x); dx = dy (1 - y^2).
struct Tanh {
  static constexpr bool uses_x = false, uses_y = true;
  template <class T> TG_HD_INLINE static T forward(T x, UnaryArgs) { return tanh(x); }
  template <class T> TG_HD_INLINE static T backward(T, T y, T dy, UnaryArgs) { return dy * (T(1) - y * y); }  // 1 - tanh^2
};
/// exp: y = e^x (fn::exp); dx = dy y.
struct Exp {
  static constexpr bool uses_x = false, uses_y = true;
  template <class T> TG_HD_INLINE static T forward(T x, UnaryArgs) { return exp(x); }
  template <class T> TG_HD_INLINE static T backward(T, T y, T dy, UnaryArgs) { return dy * y; }              // e^x
};
/// log: y = ln(x); dx = dy / x.
struct Log {
  static constexpr bool uses_x = true, uses_y = false;
  template <class T> TG_HD_INLINE static T forward(T x, UnaryArgs) { return log(x); }
  template <class T> TG_HD_INLINE static T backward(T x, T, T dy, UnaryArgs) { return dy / x; }             // 1/x
};
/// neg: y = -x; dx = -dy.
struct Neg {
  static constexpr bool uses_x = false, uses_y = false;
  template <class T> TG_HD_INLINE static T forward(T x, UnaryArgs) { return -x; }
  template <class T> TG_HD_INLINE static T backward(T, T, T dy, UnaryArgs) { return -dy; }                  // -1
};
/// sqrt: y = sqrt(x); dx = dy / (2 y).
struct Sqrt {
  static constexpr bool uses_x = false, uses_y = true;
  template <class T> TG_HD_INLINE static T forward(T x, UnaryArgs) { return sqrt(x); }
  template <class T> TG_HD_INLINE static T backward(T, T y, T dy, UnaryArgs) { return dy / (T(2) * y); }     // 1/(2 sqrt x)
};
/// abs: y = |x|; dx = dy sign(x) (0 at 0).
struct Abs {
  static constexpr bool uses_x = true, uses_y = false;
  template <class T> TG_HD_INLINE static T forward(T x, UnaryArgs) { return abs(x); }
  template <class T> TG_HD_INLINE static T backward(T x, T, T dy, UnaryArgs) {                              // sign(x)
    return x > T(0) ? dy : (x < T(0) ? -dy : T(0));
  }
};
/// pow with a scalar exponent a (UnaryArgs::a): y = x^a; dx = dy a x^(a-1) (0 when a = 0).
struct PowScalar {   // x^a
  static constexpr bool uses_x = true, uses_y = false;
  template <class T> TG_HD_INLINE static T forward(T x, UnaryArgs p) { return pow(x, T(p.a)); }
  template <class T> TG_HD_INLINE static T backward(T x, T, T dy, UnaryArgs p) {                            // a x^(a-1)
    return p.a == 0 ? T(0) : dy * T(p.a) * pow(x, T(p.a - 1));
  }
};
/// clamp to [a, b] (UnaryArgs), as torch.clamp: y = min(max(x, a), b), so a > b gives b everywhere; a NaN x
/// stays NaN, and a NaN bound makes every element NaN (PyTorch fills the result with NaN then). dx = dy
/// strictly inside, a < x < b, else 0: 0 at the bounds themselves (as torch 2.15), everywhere for a NaN
/// bound or a >= b, and at a NaN x.
struct Clamp {
  static constexpr bool uses_x = true, uses_y = false;
  template <class T> TG_HD_INLINE static T forward(T x, UnaryArgs p) {
    if (p.a != p.a || p.b != p.b) return T(p.a != p.a ? p.a : p.b);                                // NaN bound
    const T lo = T(p.a), hi = T(p.b);
    const T y = x < lo ? lo : x;                                                                      // NaN x stays
    return y > hi ? hi : y;
  }
  template <class T> TG_HD_INLINE static T backward(T x, T, T dy, UnaryArgs p) {                            // 1 inside
    return (x > T(p.a) && x < T(p.b)) ? dy : T(0);
  }
};
/// round: y = x rounded to the nearest integer, halves to even (torch.round: rint under the default
/// rounding mode, 2.5 -> 2, -0.5 -> -0); dx = 0 (PyTorch's zero gradient of a step function).
struct Round {
  static constexpr bool uses_x = false, uses_y = false;
  template <class T> TG_HD_INLINE static T forward(T x, UnaryArgs) { return rint(x); }
  template <class T> TG_HD_INLINE static T backward(T, T, T, UnaryArgs) { return T(0); }                  // 0
};
/// sign: y = 1 for x > 0, -1 for x < 0, else 0 (also for -0 and NaN, as torch.sign: (0 < x) - (x < 0));
/// dx = 0.
struct Sign {
  static constexpr bool uses_x = false, uses_y = false;
  template <class T> TG_HD_INLINE static T forward(T x, UnaryArgs) { return T(int(T(0) < x) - int(x < T(0))); }
  template <class T> TG_HD_INLINE static T backward(T, T, T, UnaryArgs) { return T(0); }                  // 0
};

// The activations of torch.nn.functional below follow PyTorch 1.13's CPU kernels formula by formula
// (aten/src/ATen/native/cpu/Activation.cpp and UnaryOpsKernel.cpp), so that values match to rounding.
/// gelu, exact (approximate="none"): y = x Phi(x) = x/2 (1 + erf(x / sqrt 2)); dx = dy (Phi(x) + x phi(x)).
struct Gelu {
  static constexpr bool uses_x = true, uses_y = false;
  template <class T> TG_HD_INLINE static T forward(T x, UnaryArgs) {
    return x * T(0.5) * (T(1) + erf(x * T(0.70710678118654752440)));                                  // 1/sqrt 2
  }
  template <class T> TG_HD_INLINE static T backward(T x, T, T dy, UnaryArgs) {                              // Phi + x phi
    const T cdf = T(0.5) * (T(1) + erf(x * T(0.70710678118654752440)));
    const T pdf = T(0.39894228040143267794) * exp(T(-0.5) * x * x);                                   // 1/sqrt(2 pi)
    return dy * (cdf + x * pdf);
  }
};
/// gelu, approximate="tanh": y = x/2 (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3);
/// dx = dy (1/2 (1 + tanh u) + x/2 (1 - tanh^2 u) sqrt(2/pi) (1 + 3 0.044715 x^2)).
struct GeluTanh {
  static constexpr bool uses_x = true, uses_y = false;
  template <class T> TG_HD_INLINE static T forward(T x, UnaryArgs) {
    const T inner = T(0.79788456080286535588) * (x + T(0.044715) * x * x * x);                       // sqrt(2/pi)
    return T(0.5) * x * (T(1) + tanh(inner));
  }
  template <class T> TG_HD_INLINE static T backward(T x, T, T dy, UnaryArgs) {
    const T x_sq = x * x;
    const T t = tanh(T(0.79788456080286535588) * (x + T(0.044715) * x_sq * x));
    const T left_derivative = T(0.5) * (T(1) + t);
    const T right_derivative = (T(1) - t * t) * T(0.79788456080286535588) * (T(1) + T(3) * T(0.044715) * x_sq);
    return dy * (left_derivative + T(0.5) * x * right_derivative);
  }
};
/// silu (swish): y = x sigmoid(x) = x / (1 + e^-x); dx = dy s (1 + x (1 - s)), s = sigmoid(x).
struct Silu {
  static constexpr bool uses_x = true, uses_y = false;
  template <class T> TG_HD_INLINE static T forward(T x, UnaryArgs) { return x / (T(1) + exp(-x)); }
  template <class T> TG_HD_INLINE static T backward(T x, T, T dy, UnaryArgs) {                              // s (1 + x (1 - s))
    const T s = T(1) / (T(1) + exp(-x));
    return dy * s * (T(1) + x * (T(1) - s));
  }
};
/// softplus with beta = a, threshold = b (UnaryArgs): y = log(1 + e^(beta x)) / beta, and y = x where
/// beta x > threshold (linear there, as PyTorch); dx = dy sigmoid(beta x), dy where beta x > threshold.
struct Softplus {
  static constexpr bool uses_x = true, uses_y = false;
  template <class T> TG_HD_INLINE static T forward(T x, UnaryArgs p) {
    const T bx = x * T(p.a);
    return bx > T(p.b) ? x : log1p(exp(bx)) / T(p.a);
  }
  template <class T> TG_HD_INLINE static T backward(T x, T, T dy, UnaryArgs p) {                            // e^bx / (e^bx + 1)
    const T bx = x * T(p.a);
    const T z = exp(bx);
    return bx > T(p.b) ? dy : dy * z / (z + T(1));
  }
};
/// leaky_relu with negative_slope = a (UnaryArgs): y = x where x > 0, else a x (NaN stays NaN);
/// dx = dy where x > 0, else a dy.
struct LeakyRelu {
  static constexpr bool uses_x = true, uses_y = false;
  template <class T> TG_HD_INLINE static T forward(T x, UnaryArgs p) { return x > T(0) ? x : x * T(p.a); }
  template <class T> TG_HD_INLINE static T backward(T x, T, T dy, UnaryArgs p) { return x > T(0) ? dy : dy * T(p.a); }
};
/// log_sigmoid: y = log(1 / (1 + e^-x)) = min(x, 0) - log(1 + e^-|x|), stable for large |x|;
/// dx = dy (1 - sigmoid(x)), written with z = e^-|x| as 1/(1+z) for x < 0 and z/(1+z) otherwise.
struct LogSigmoid {
  static constexpr bool uses_x = true, uses_y = false;
  template <class T> TG_HD_INLINE static T forward(T x, UnaryArgs) {
    const T m = x < T(0) ? x : T(0);   // min(x, 0); NaN takes the log1p path and stays NaN
    return m - log1p(exp(-abs(x)));
  }
  template <class T> TG_HD_INLINE static T backward(T x, T, T dy, UnaryArgs) {
    const bool negative = x < T(0);
    const T z = exp(-abs(x));
    return dy * ((negative ? T(1) : T(0)) - (negative ? T(1) : T(-1)) * (z / (T(1) + z)));
  }
};
// The math of torch's unary functions (torch.sin, ...): libm's (the GPU's) value, and the derivative
// PyTorch's autograd formula gives (tools/autograd/derivatives.yaml), at the same points.
/// sin: dx = dy cos x.
struct Sin {
  static constexpr bool uses_x = true, uses_y = false;
  template <class T> TG_HD_INLINE static T forward(T x, UnaryArgs) { return sin(x); }
  template <class T> TG_HD_INLINE static T backward(T x, T, T dy, UnaryArgs) { return dy * cos(x); }
};
/// cos: dx = -dy sin x.
struct Cos {
  static constexpr bool uses_x = true, uses_y = false;
  template <class T> TG_HD_INLINE static T forward(T x, UnaryArgs) { return cos(x); }
  template <class T> TG_HD_INLINE static T backward(T x, T, T dy, UnaryArgs) { return -dy * sin(x); }
};
/// tan: dx = dy (1 + y^2).
struct Tan {
  static constexpr bool uses_x = false, uses_y = true;
  template <class T> TG_HD_INLINE static T forward(T x, UnaryArgs) { return tan(x); }
  template <class T> TG_HD_INLINE static T backward(T, T y, T dy, UnaryArgs) { return dy * (T(1) + y * y); }
};
/// asin: dx = dy / sqrt(1 - x^2) (inf at +-1, NaN outside).
struct Asin {
  static constexpr bool uses_x = true, uses_y = false;
  template <class T> TG_HD_INLINE static T forward(T x, UnaryArgs) { return asin(x); }
  template <class T> TG_HD_INLINE static T backward(T x, T, T dy, UnaryArgs) { return dy / sqrt(T(1) - x * x); }
};
/// acos: dx = -dy / sqrt(1 - x^2).
struct Acos {
  static constexpr bool uses_x = true, uses_y = false;
  template <class T> TG_HD_INLINE static T forward(T x, UnaryArgs) { return acos(x); }
  template <class T> TG_HD_INLINE static T backward(T x, T, T dy, UnaryArgs) { return -dy / sqrt(T(1) - x * x); }
};
/// atan: dx = dy / (1 + x^2).
struct Atan {
  static constexpr bool uses_x = true, uses_y = false;
  template <class T> TG_HD_INLINE static T forward(T x, UnaryArgs) { return atan(x); }
  template <class T> TG_HD_INLINE static T backward(T x, T, T dy, UnaryArgs) { return dy / (T(1) + x * x); }
};
/// sinh: dx = dy cosh x.
struct Sinh {
  static constexpr bool uses_x = true, uses_y = false;
  template <class T> TG_HD_INLINE static T forward(T x, UnaryArgs) { return sinh(x); }
  template <class T> TG_HD_INLINE static T backward(T x, T, T dy, UnaryArgs) { return dy * cosh(x); }
};
/// cosh: dx = dy sinh x.
struct Cosh {
  static constexpr bool uses_x = true, uses_y = false;
  template <class T> TG_HD_INLINE static T forward(T x, UnaryArgs) { return cosh(x); }
  template <class T> TG_HD_INLINE static T backward(T x, T, T dy, UnaryArgs) { return dy * sinh(x); }
};
/// asinh: dx = dy / sqrt(x^2 + 1).
struct Asinh {
  static constexpr bool uses_x = true, uses_y = false;
  template <class T> TG_HD_INLINE static T forward(T x, UnaryArgs) { return asinh(x); }
  template <class T> TG_HD_INLINE static T backward(T x, T, T dy, UnaryArgs) { return dy / sqrt(x * x + T(1)); }
};
/// acosh: dx = dy / sqrt(x^2 - 1) (NaN below 1).
struct Acosh {
  static constexpr bool uses_x = true, uses_y = false;
  template <class T> TG_HD_INLINE static T forward(T x, UnaryArgs) { return acosh(x); }
  template <class T> TG_HD_INLINE static T backward(T x, T, T dy, UnaryArgs) { return dy / sqrt(x * x - T(1)); }
};
/// atanh: dx = dy / (1 - x^2).
struct Atanh {
  static constexpr bool uses_x = true, uses_y = false;
  template <class T> TG_HD_INLINE static T forward(T x, UnaryArgs) { return atanh(x); }
  template <class T> TG_HD_INLINE static T backward(T x, T, T dy, UnaryArgs) { return dy / (T(1) - x * x); }
};
/// erf: dx = dy 2/sqrt(pi) e^(-x^2) (fn::erf, Note [Vectorizable erf]).
struct Erf {
  static constexpr bool uses_x = true, uses_y = false;
  template <class T> TG_HD_INLINE static T forward(T x, UnaryArgs) { return erf(x); }
  template <class T> TG_HD_INLINE static T backward(T x, T, T dy, UnaryArgs) {
    return dy * T(1.12837916709551257390) * exp(-x * x);   // 2/sqrt(pi)
  }
};
/// erfc = 1 - erf: dx = -dy 2/sqrt(pi) e^(-x^2).
struct Erfc {
  static constexpr bool uses_x = true, uses_y = false;
  template <class T> TG_HD_INLINE static T forward(T x, UnaryArgs) { return erfc(x); }
  template <class T> TG_HD_INLINE static T backward(T x, T, T dy, UnaryArgs) {
    return -dy * T(1.12837916709551257390) * exp(-x * x);
  }
};
/// log1p: y = log(1 + x), accurate near 0; dx = dy / (1 + x).
struct Log1p {
  static constexpr bool uses_x = true, uses_y = false;
  template <class T> TG_HD_INLINE static T forward(T x, UnaryArgs) { return log1p(x); }
  template <class T> TG_HD_INLINE static T backward(T x, T, T dy, UnaryArgs) { return dy / (x + T(1)); }
};
/// expm1: y = e^x - 1, accurate near 0; dx = dy (y + 1).
struct Expm1 {
  static constexpr bool uses_x = false, uses_y = true;
  template <class T> TG_HD_INLINE static T forward(T x, UnaryArgs) { return expm1(x); }
  template <class T> TG_HD_INLINE static T backward(T, T y, T dy, UnaryArgs) { return dy * (y + T(1)); }
};
/// log2: dx = dy / (x ln 2).
struct Log2 {
  static constexpr bool uses_x = true, uses_y = false;
  template <class T> TG_HD_INLINE static T forward(T x, UnaryArgs) { return log2(x); }
  template <class T> TG_HD_INLINE static T backward(T x, T, T dy, UnaryArgs) { return dy / (x * T(0.69314718055994530942)); }
};
/// log10: dx = dy / (x ln 10).
struct Log10 {
  static constexpr bool uses_x = true, uses_y = false;
  template <class T> TG_HD_INLINE static T forward(T x, UnaryArgs) { return log10(x); }
  template <class T> TG_HD_INLINE static T backward(T x, T, T dy, UnaryArgs) { return dy / (x * T(2.30258509299404568402)); }
};
/// rsqrt: y = 1 / sqrt(x); dx = -dy y^3 / 2.
struct Rsqrt {
  static constexpr bool uses_x = false, uses_y = true;
  template <class T> TG_HD_INLINE static T forward(T x, UnaryArgs) { return T(1) / sqrt(x); }
  template <class T> TG_HD_INLINE static T backward(T, T y, T dy, UnaryArgs) { return T(-0.5) * dy * y * y * y; }
};
/// reciprocal: y = 1 / x; dx = -dy y^2.
struct Reciprocal {
  static constexpr bool uses_x = false, uses_y = true;
  template <class T> TG_HD_INLINE static T forward(T x, UnaryArgs) { return T(1) / x; }
  template <class T> TG_HD_INLINE static T backward(T, T y, T dy, UnaryArgs) { return -dy * y * y; }
};
/// square: y = x^2; dx = 2 x dy.
struct Square {
  static constexpr bool uses_x = true, uses_y = false;
  template <class T> TG_HD_INLINE static T forward(T x, UnaryArgs) { return x * x; }
  template <class T> TG_HD_INLINE static T backward(T x, T, T dy, UnaryArgs) { return T(2) * x * dy; }
};
/// floor: dx = 0 (a step function).
struct Floor {
  static constexpr bool uses_x = false, uses_y = false;
  template <class T> TG_HD_INLINE static T forward(T x, UnaryArgs) { return floor(x); }
  template <class T> TG_HD_INLINE static T backward(T, T, T, UnaryArgs) { return T(0); }
};
/// ceil: dx = 0.
struct Ceil {
  static constexpr bool uses_x = false, uses_y = false;
  template <class T> TG_HD_INLINE static T forward(T x, UnaryArgs) { return ceil(x); }
  template <class T> TG_HD_INLINE static T backward(T, T, T, UnaryArgs) { return T(0); }
};
/// trunc (round toward 0): dx = 0.
struct Trunc {
  static constexpr bool uses_x = false, uses_y = false;
  template <class T> TG_HD_INLINE static T forward(T x, UnaryArgs) { return trunc(x); }
  template <class T> TG_HD_INLINE static T backward(T, T, T, UnaryArgs) { return T(0); }
};
/// frac: y = x - trunc(x) (the sign of x); dx = dy.
struct Frac {
  static constexpr bool uses_x = false, uses_y = false;
  template <class T> TG_HD_INLINE static T forward(T x, UnaryArgs) { return x - trunc(x); }
  template <class T> TG_HD_INLINE static T backward(T, T, T dy, UnaryArgs) { return dy; }
};
/// hardtanh with min_val = a, max_val = b (UnaryArgs): y = min(max(x, a), b) (NaN stays NaN); dx = dy
/// strictly inside (a, b), else 0, as PyTorch's hardtanh_backward (relu6 is hardtanh(0, 6)).
struct Hardtanh {
  static constexpr bool uses_x = true, uses_y = false;
  template <class T> TG_HD_INLINE static T forward(T x, UnaryArgs p) {
    const T y = x < T(p.a) ? T(p.a) : x;
    return y > T(p.b) ? T(p.b) : y;
  }
  template <class T> TG_HD_INLINE static T backward(T x, T, T dy, UnaryArgs p) {
    return (x > T(p.a) && x < T(p.b)) ? dy : T(0);
  }
};
/// hardswish: y = x min(max(x + 3, 0), 6) / 6; dx = 0 below -3, dy (x / 3 + 1/2) up to 3, dy above.
struct Hardswish {
  static constexpr bool uses_x = true, uses_y = false;
  template <class T> TG_HD_INLINE static T forward(T x, UnaryArgs) {
    T r = x + T(3);
    r = r < T(0) ? T(0) : r;
    r = r > T(6) ? T(6) : r;
    return x * r / T(6);
  }
  template <class T> TG_HD_INLINE static T backward(T x, T, T dy, UnaryArgs) {
    return x < T(-3) ? T(0) : (x <= T(3) ? dy * (x / T(3) + T(0.5)) : dy);
  }
};
/// hardsigmoid: y = min(max(x + 3, 0), 6) / 6; dx = dy / 6 strictly inside (-3, 3), else 0.
struct Hardsigmoid {
  static constexpr bool uses_x = true, uses_y = false;
  template <class T> TG_HD_INLINE static T forward(T x, UnaryArgs) {
    T r = x + T(3);
    r = r < T(0) ? T(0) : r;
    r = r > T(6) ? T(6) : r;
    return r / T(6);
  }
  template <class T> TG_HD_INLINE static T backward(T x, T, T dy, UnaryArgs) {
    return (x > T(-3) && x < T(3)) ? dy / T(6) : T(0);
  }
};
/// elu with alpha = a and scale = b (UnaryArgs; selu is elu with its two constants): y = b x for
/// x > 0, else b a (e^x - 1); dx = b dy for x > 0, else dy b a e^x.
struct Elu {
  static constexpr bool uses_x = true, uses_y = false;
  template <class T> TG_HD_INLINE static T forward(T x, UnaryArgs p) {
    return x > T(0) ? T(p.b) * x : T(p.b) * T(p.a) * expm1(x);
  }
  template <class T> TG_HD_INLINE static T backward(T x, T, T dy, UnaryArgs p) {
    return x > T(0) ? dy * T(p.b) : dy * T(p.b) * T(p.a) * exp(x);
  }
};
/// celu with alpha = a: y = x for x > 0, else a (e^(x / a) - 1); dx = dy for x > 0, else dy e^(x / a).
struct Celu {
  static constexpr bool uses_x = true, uses_y = false;
  template <class T> TG_HD_INLINE static T forward(T x, UnaryArgs p) {
    return x > T(0) ? x : T(p.a) * expm1(x / T(p.a));
  }
  template <class T> TG_HD_INLINE static T backward(T x, T, T dy, UnaryArgs p) {
    return x > T(0) ? dy : dy * exp(x / T(p.a));
  }
};
/// mish: y = x tanh(softplus(x)), softplus(x) = log(1 + e^x); dx = dy (tanh(sp) + x sigmoid(x)
/// (1 - tanh(sp)^2)), PyTorch's formula.
struct Mish {
  static constexpr bool uses_x = true, uses_y = false;
  template <class T> TG_HD_INLINE static T forward(T x, UnaryArgs) { return x * tanh(log1p(exp(x))); }
  template <class T> TG_HD_INLINE static T backward(T x, T, T dy, UnaryArgs) {
    const T t = tanh(log1p(exp(x)));
    const T s = T(1) / (T(1) + exp(-x));
    return dy * (t + x * s * (T(1) - t * t));
  }
};

/// Rounding to the precision and range of L (BFloat16 or Half), the value kept in x's dtype: y =
/// float(L(x)) (round to nearest even, NaN quiet; a double is rounded to float first); dx = the same
/// rounding of dy, the gradient of x.to(L).to(x's dtype). Internal: autocast's products on devices
/// that multiply through float32 (Note [Autocast products through float32] in ops/linalg.cpp).
template <class L>
struct RoundTo {
  static constexpr bool uses_x = false, uses_y = false;
  template <class T> TG_HD_INLINE static T forward(T x, UnaryArgs) { return T(static_cast<float>(L(static_cast<float>(x)))); }
  template <class T> TG_HD_INLINE static T backward(T, T, T dy, UnaryArgs p) { return forward(dy, p); }
};
/// Rounding to bfloat16's precision (prim::round_to_precision).
using RoundToBFloat16 = RoundTo<BFloat16>;
/// Rounding to float16's precision and range (prim::round_to_precision).
using RoundToFloat16 = RoundTo<Half>;
}  // namespace fn

/// X-macro over the unary functors, in UnaryOp order: TG_UNARY_OPS(X) expands X(Name) for each.
#define TG_UNARY_OPS(X) \
  X(Relu) X(Sigmoid) X(Tanh) X(Exp) X(Log) X(Neg) X(Sqrt) X(Abs) X(PowScalar) X(Clamp) \
  X(Round) X(Sign) \
  X(Gelu) X(GeluTanh) X(Silu) X(Softplus) X(LeakyRelu) X(LogSigmoid) \
  X(Sin) X(Cos) X(Tan) X(Asin) X(Acos) X(Atan) X(Sinh) X(Cosh) X(Asinh) X(Acosh) X(Atanh) \
  X(Erf) X(Erfc) X(Log1p) X(Expm1) X(Log2) X(Log10) X(Rsqrt) X(Reciprocal) X(Square) \
  X(Floor) X(Ceil) X(Trunc) X(Frac) X(Hardtanh) X(Hardswish) X(Hardsigmoid) X(Elu) X(Celu) X(Mish) \
  X(RoundToBFloat16) X(RoundToFloat16)

/// The unary elementwise ops, one per functor in tg::fn (prim::unary, Backend::unary).
enum class UnaryOp : uint8_t {
#define TG_ENUM(Name) Name,
  TG_UNARY_OPS(TG_ENUM)
#undef TG_ENUM
};

/// Turns the runtime enum into a compile-time functor: visitor(fn::Relu{}), ...
template <class Visitor>
TG_HD void visit(UnaryOp op, Visitor&& visitor) {
  switch (op) {
#define TG_CASE(Name) \
  case UnaryOp::Name: visitor(fn::Name{}); return;
    TG_UNARY_OPS(TG_CASE)
#undef TG_CASE
  }
}

namespace fn {
// Binary forward math, called with T = opmath_t of the operands' dtype (prim:: promotes both operands
// to one dtype first). Comparisons return bool (the kernels store them in a bool tensor); the others T.
/// a + b.
struct Add {
  template <class T> TG_HD_INLINE static T apply(T a, T b) {
    if constexpr (std::is_same<T, bool>::value) return a || b;   // PyTorch: bool + bool is or
    else return a + b;
  }
};
/// a - b.
struct Sub { template <class T> TG_HD_INLINE static T apply(T a, T b) { return a - b; } };
/// a * b.
struct Mul {
  template <class T> TG_HD_INLINE static T apply(T a, T b) {
    if constexpr (std::is_same<T, bool>::value) return a && b;   // bool * bool is and
    else return a * b;
  }
};
/// a / b.
struct Div { template <class T> TG_HD_INLINE static T apply(T a, T b) { return a / b; } };
/// a^b.
struct Pow { template <class T> TG_HD_INLINE static T apply(T a, T b) { return T(pow(a, b)); } };
/// a == b (bool).
struct Eq { template <class T> TG_HD_INLINE static bool apply(T a, T b) { return a == b; } };
/// a != b (bool).
struct Ne { template <class T> TG_HD_INLINE static bool apply(T a, T b) { return a != b; } };
/// a > b (bool).
struct Gt { template <class T> TG_HD_INLINE static bool apply(T a, T b) { return a > b; } };
/// a < b (bool).
struct Lt { template <class T> TG_HD_INLINE static bool apply(T a, T b) { return a < b; } };
/// a >= b (bool).
struct Ge { template <class T> TG_HD_INLINE static bool apply(T a, T b) { return a >= b; } };
/// a <= b (bool).
struct Le { template <class T> TG_HD_INLINE static bool apply(T a, T b) { return a <= b; } };
}  // namespace fn

/// The element type binary op F stores for operands of C++ type T: bool for the comparisons, T for
/// the arithmetic ops.
template <class F, class T>
using binary_out_t =
    std::conditional_t<std::is_same<decltype(F::apply(opmath_t<T>{}, opmath_t<T>{})), bool>::value, bool, T>;

/// X-macro over the binary functors, in BinaryOp order: TG_BINARY_OPS(X) expands X(Name) for each.
#define TG_BINARY_OPS(X) X(Add) X(Sub) X(Mul) X(Div) X(Pow) X(Eq) X(Ne) X(Gt) X(Lt) X(Ge) X(Le)

/// The binary elementwise ops, one per functor in tg::fn (prim::binary, Backend::binary).
enum class BinaryOp : uint8_t {
#define TG_ENUM(Name) Name,
  TG_BINARY_OPS(TG_ENUM)
#undef TG_ENUM
};

/// Turns the runtime enum into a compile-time functor: visitor(fn::Add{}), ...
template <class Visitor>
TG_HD void visit(BinaryOp op, Visitor&& visitor) {
  switch (op) {
#define TG_CASE(Name) \
  case BinaryOp::Name: visitor(fn::Name{}); return;
    TG_BINARY_OPS(TG_CASE)
#undef TG_CASE
  }
}

/// \endcond

/// The reductions of prim::reduce and Backend::reduce.
enum class ReduceOp : uint8_t {
  Sum,      ///< The sum (0 for no elements).
  Max,      ///< The largest element (NaN if any is NaN).
  Min,      ///< The smallest element (NaN if any is NaN).
  ArgMax,   ///< The index of the largest element (int64), over one dim.
  ArgMin,   ///< The index of the smallest element (int64), over one dim.
};

}  // namespace tg
