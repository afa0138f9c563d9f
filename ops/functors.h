// ops/functors.h: the scalar math of every elementwise op, forward and local derivative side by side.
// Compiled by g++ (engine/cpu_backend.cpp) and by nvcc (the CUDA kernels), so: no dependencies.
// Adding a unary op: one struct here + one entry in TG_UNARY_OPS + its Variable function in
// ops/elementwise.cpp. Binary ops only need forward: their gradients are composed in ops/.
#pragma once
#include <cmath>
#include <cstdint>

#include "engine/macros.h"

namespace tg {

/// Scalar parameters of a unary op (pow's exponent, clamp's bounds); most ops ignore them.
struct UnaryArgs {
  double a = 0, b = 0;
};

namespace fn {
using std::abs;
using std::exp;
using std::log;
using std::pow;
using std::sqrt;
using std::tanh;

// forward(x, p) = y;  backward(x, y, dy, p) = dL/dx given y = forward(x) and dy = dL/dy.
// uses_x / uses_y say which of x and y backward reads, so that an op saves only those.
// NaN in gives NaN out everywhere: comparisons are written so that NaN takes the value path.
struct Relu {
  static constexpr bool uses_x = true, uses_y = false;   // what backward reads
  template <class T> TG_HD static T forward(T x, UnaryArgs) { return x < T(0) ? T(0) : x; }   // NaN stays NaN
  template <class T> TG_HD static T backward(T x, T, T dy, UnaryArgs) { return x > T(0) ? dy : T(0); }
};
struct Sigmoid {
  static constexpr bool uses_x = false, uses_y = true;   // what backward reads
  template <class T> TG_HD static T forward(T x, UnaryArgs) { return T(1) / (T(1) + exp(-x)); }
  template <class T> TG_HD static T backward(T, T y, T dy, UnaryArgs) { return dy * y * (T(1) - y); }  // s(1-s)
};
struct Tanh {
  static constexpr bool uses_x = false, uses_y = true;   // what backward reads
  template <class T> TG_HD static T forward(T x, UnaryArgs) { return tanh(x); }
  template <class T> TG_HD static T backward(T, T y, T dy, UnaryArgs) { return dy * (T(1) - y * y); }  // 1 - tanh^2
};
struct Exp {
  static constexpr bool uses_x = false, uses_y = true;   // what backward reads
  template <class T> TG_HD static T forward(T x, UnaryArgs) { return exp(x); }
  template <class T> TG_HD static T backward(T, T y, T dy, UnaryArgs) { return dy * y; }              // e^x
};
struct Log {
  static constexpr bool uses_x = true, uses_y = false;   // what backward reads
  template <class T> TG_HD static T forward(T x, UnaryArgs) { return log(x); }
  template <class T> TG_HD static T backward(T x, T, T dy, UnaryArgs) { return dy / x; }             // 1/x
};
struct Neg {
  static constexpr bool uses_x = false, uses_y = false;   // what backward reads
  template <class T> TG_HD static T forward(T x, UnaryArgs) { return -x; }
  template <class T> TG_HD static T backward(T, T, T dy, UnaryArgs) { return -dy; }                  // -1
};
struct Sqrt {
  static constexpr bool uses_x = false, uses_y = true;   // what backward reads
  template <class T> TG_HD static T forward(T x, UnaryArgs) { return sqrt(x); }
  template <class T> TG_HD static T backward(T, T y, T dy, UnaryArgs) { return dy / (T(2) * y); }     // 1/(2 sqrt x)
};
struct Abs {
  static constexpr bool uses_x = true, uses_y = false;   // what backward reads
  template <class T> TG_HD static T forward(T x, UnaryArgs) { return abs(x); }
  template <class T> TG_HD static T backward(T x, T, T dy, UnaryArgs) {                              // sign(x)
    return x > T(0) ? dy : (x < T(0) ? -dy : T(0));
  }
};
struct PowScalar {   // x^a
  static constexpr bool uses_x = true, uses_y = false;   // what backward reads
  template <class T> TG_HD static T forward(T x, UnaryArgs p) { return pow(x, T(p.a)); }
  template <class T> TG_HD static T backward(T x, T, T dy, UnaryArgs p) {                            // a x^(a-1)
    return p.a == 0 ? T(0) : dy * T(p.a) * pow(x, T(p.a - 1));
  }
};
struct Clamp {       // min(max(x, a), b)
  static constexpr bool uses_x = true, uses_y = false;   // what backward reads
  template <class T> TG_HD static T forward(T x, UnaryArgs p) {
    return x < T(p.a) ? T(p.a) : (x > T(p.b) ? T(p.b) : x);                                         // NaN stays NaN
  }
  template <class T> TG_HD static T backward(T x, T, T dy, UnaryArgs p) {                            // 1 inside
    return (x >= T(p.a) && x <= T(p.b)) ? dy : T(0);
  }
};
}  // namespace fn

#define TG_UNARY_OPS(X) \
  X(Relu) X(Sigmoid) X(Tanh) X(Exp) X(Log) X(Neg) X(Sqrt) X(Abs) X(PowScalar) X(Clamp)

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
// Binary forward math. Comparisons give 1 or 0 in the operands' dtype (tensorgrad has no bool dtype).
struct Add { template <class T> TG_HD static T apply(T a, T b) { return a + b; } };
struct Sub { template <class T> TG_HD static T apply(T a, T b) { return a - b; } };
struct Mul { template <class T> TG_HD static T apply(T a, T b) { return a * b; } };
struct Div { template <class T> TG_HD static T apply(T a, T b) { return a / b; } };
struct Pow { template <class T> TG_HD static T apply(T a, T b) { return T(pow(a, b)); } };
struct Eq { template <class T> TG_HD static T apply(T a, T b) { return a == b ? T(1) : T(0); } };
struct Ne { template <class T> TG_HD static T apply(T a, T b) { return a != b ? T(1) : T(0); } };
struct Gt { template <class T> TG_HD static T apply(T a, T b) { return a > b ? T(1) : T(0); } };
struct Lt { template <class T> TG_HD static T apply(T a, T b) { return a < b ? T(1) : T(0); } };
struct Ge { template <class T> TG_HD static T apply(T a, T b) { return a >= b ? T(1) : T(0); } };
struct Le { template <class T> TG_HD static T apply(T a, T b) { return a <= b ? T(1) : T(0); } };
}  // namespace fn

#define TG_BINARY_OPS(X) X(Add) X(Sub) X(Mul) X(Div) X(Pow) X(Eq) X(Ne) X(Gt) X(Lt) X(Ge) X(Le)

enum class BinaryOp : uint8_t {
#define TG_ENUM(Name) Name,
  TG_BINARY_OPS(TG_ENUM)
#undef TG_ENUM
};

template <class Visitor>
TG_HD void visit(BinaryOp op, Visitor&& visitor) {
  switch (op) {
#define TG_CASE(Name) \
  case BinaryOp::Name: visitor(fn::Name{}); return;
    TG_BINARY_OPS(TG_CASE)
#undef TG_CASE
  }
}

enum class ReduceOp : uint8_t { Sum, Max, Min, ArgMax, ArgMin };

}  // namespace tg
