/// \file
/// ops/creation.h: factory functions (tg::randn, tg::zeros, ...) and the random seed. Not
/// differentiable ops: results are leaves, requiring grad only when the options say so.
/// Defined in ops/creation.cpp; the Philox generator behind them is kernels/philox.h.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <type_traits>
#include <vector>

#include "tensorgrad/prim/prim.h"
#include "tensorgrad/autograd/tensor.h"

namespace tg {

/// Seeds the one random stream behind rand, randn, randint, dropout and the nn::init functions, on
/// every device (torch.manual_seed). The same seed gives the same values on the CPU and the GPU,
/// whatever the thread count.
void manual_seed(uint64_t seed);
/// The random stream's position (torch.get_rng_state): set_rng_state(get_rng_state()) later replays
/// the same draws on every device. tg::checkpoint uses it to give recomputed dropout the same masks.
RngState get_rng_state();
/// Moves the random stream to a position get_rng_state returned (torch.set_rng_state).
void set_rng_state(RngState state);

// Every factory below returns a leaf with options' dtype (float32 unless set) and device (cpu
// unless set) that requires grad when options say so (floating dtypes only). A negative size throws
// ShapeError, an unusable device DeviceError. The sizes are an IntArrayRef, as libtorch's: `{2, 3}`,
// a Shape, or one integer (`tg::randn(3)` is `tg::randn({3})`, `tg::empty(n, device)`).

/// Unspecified contents (torch.empty).
Tensor empty(IntArrayRef shape, const TensorOptions& options = {});
/// All zeros (torch.zeros).
Tensor zeros(IntArrayRef shape, const TensorOptions& options = {});
/// All ones (torch.ones).
Tensor ones(IntArrayRef shape, const TensorOptions& options = {});
/// Every element value (torch.full).
Tensor full(IntArrayRef shape, double value, const TensorOptions& options = {});
/// 0, 1, ..., n-1, 1-D, int64 unless options set a dtype (torch.arange(n)); ShapeError for n < 0.
Tensor arange(int64_t n, const TensorOptions& options = {});
namespace detail {
/// The ranges of arange(start, end, step): one for integer bounds (int64 by default), one for any
/// floating one (float32 by default).
Tensor arange_integral(int64_t start, int64_t end, int64_t step, const TensorOptions& options);
Tensor arange_floating(double start, double end, double step, const TensorOptions& options);
template <class... A>
constexpr bool all_arithmetic = (std::is_arithmetic<A>::value && ...);
template <class... A>
constexpr bool all_integral = (std::is_integral<A>::value && ...);
}  // namespace detail
/// start, start + step, ... up to end (excluded), 1-D, as torch.arange(start, end, step): int64 when
/// start, end and step are all integers and options set no dtype, else float32; ceil((end - start) /
/// step) elements. Error for step 0, a step whose sign leads away from end, or an infinite bound
/// (PyTorch's messages).
template <class S, class E, class P, std::enable_if_t<detail::all_arithmetic<S, E, P>, int> = 0>
Tensor arange(S start, E end, P step, const TensorOptions& options = {}) {
  if constexpr (detail::all_integral<S, E, P>)
    return detail::arange_integral(static_cast<int64_t>(start), static_cast<int64_t>(end), static_cast<int64_t>(step),
                                   options);
  else
    return detail::arange_floating(static_cast<double>(start), static_cast<double>(end), static_cast<double>(step),
                                   options);
}
/// arange(start, end, 1, options).
template <class S, class E, std::enable_if_t<detail::all_arithmetic<S, E>, int> = 0>
Tensor arange(S start, E end, const TensorOptions& options = {}) {
  return arange(start, end, 1, options);
}
/// The (n, n) identity matrix (torch.eye).
Tensor eye(int64_t n, const TensorOptions& options = {});
/// Uniform in [0, 1) (torch.rand); DTypeError for int64.
Tensor rand(IntArrayRef shape, const TensorOptions& options = {});
/// Standard normal (torch.randn); DTypeError for int64.
Tensor randn(IntArrayRef shape, const TensorOptions& options = {});
/// Integers uniform in [low, high); int64 unless options set another dtype. Error unless low < high
/// and low and high - 1 are values of the dtype (torch.randint: "from is out of bounds for unsigned
/// char" for uint8 and low = -1; bool holds [0, 1], float16 [-65504, 65504]).
Tensor randint(int64_t low, int64_t high, IntArrayRef shape, const TensorOptions& options = {});
/// Normal with this mean and standard deviation (torch.normal(mean, std, size)); floating dtypes only
/// (DTypeError). Error for a negative or NaN std.
Tensor normal(double mean, double std, IntArrayRef size, const TensorOptions& options = {});
/// A random permutation of 0 .. n-1 (torch.randperm), int64 unless options set another dtype: the
/// positions that sort n uniform float64 draws. Error for a negative n.
Tensor randperm(int64_t n, const TensorOptions& options = {});
/// Copies values into a tensor of `shape` (default: 1-D). The dtype follows T unless options set one.
/// T is float, double or int64_t; ShapeError unless values.size() is shape's element count.
template <class T>
Tensor from_vector(const std::vector<T>& values, const Shape& shape, const TensorOptions& options = {});
/// from_vector(values, shape) with the 1-D shape {values.size()}.
template <class T>
Tensor from_vector(const std::vector<T>& values) { return from_vector(values, {static_cast<int64_t>(values.size())}); }

/// The values of tg::tensor(): a number, a braced list of them, a braced list of such lists (nested to
/// any depth, each level of one length), or a std::vector (libtorch's TensorDataContainer).
class TensorData {
 public:
  /// A 0-d value of dtype bool.
  TensorData(bool v) : kind_(Kind::Bool), value_(v), integer_(v) {}   // NOLINT(google-explicit-constructor)
  /// A 0-d integer value (int64 unless options say otherwise).
  template <class T, std::enable_if_t<std::is_integral<T>::value && !std::is_same<T, bool>::value, int> = 0>
  TensorData(T v)   // NOLINT(google-explicit-constructor)
      : kind_(Kind::Integer), value_(static_cast<double>(v)), integer_(static_cast<int64_t>(v)) {}
  /// A 0-d floating value (float32 unless options say otherwise).
  TensorData(double v) : kind_(Kind::Floating), value_(v) {}   // NOLINT(google-explicit-constructor)
  /// A 0-d float32 value.
  TensorData(float v) : kind_(Kind::Floating), value_(v) {}   // NOLINT(google-explicit-constructor)
  /// One more dim: its elements, all of one shape.
  TensorData(std::initializer_list<TensorData> elements) : kind_(Kind::List), elements_(elements) {}
  /// A 1-D list of T; float64 for double, float32 for float, int64 for the integers, bool for bool.
  template <class T>
  TensorData(const std::vector<T>& values)   // NOLINT(google-explicit-constructor)
      : kind_(Kind::List), elements_(values.begin(), values.end()), vector_dtype_(vector_dtype<T>()) {}
  /// The tensor these values make (tg::tensor).
  Tensor make(const TensorOptions& options) const;

 private:
  enum class Kind : uint8_t { Bool, Integer, Floating, List };
  template <class T>
  static int vector_dtype() {
    if (std::is_same<T, double>::value) return static_cast<int>(kFloat64);
    if (std::is_same<T, bool>::value) return static_cast<int>(kBool);
    if (std::is_integral<T>::value) return static_cast<int>(kInt64);
    return static_cast<int>(kFloat32);
  }
  void collect(std::size_t depth, Shape& shape, std::vector<const TensorData*>& leaves) const;
  Kind kind_;
  double value_ = 0;
  int64_t integer_ = 0;
  std::vector<TensorData> elements_;
  int vector_dtype_ = -1;   // the dtype a std::vector's element type gives; -1: inferred
};

/// A tensor of the given values (libtorch's torch::tensor): `tg::tensor({1, 2, 3})` is int64,
/// `tg::tensor({{1.0, 2.0}, {3.0, 4.0}})` float32 (2, 2), `tg::tensor(3.5)` a 0-d float32, as
/// libtorch infers them: floating values give float32 (a std::vector<double> float64), integers
/// int64, bools bool; options' dtype, device and requires_grad apply. ShapeError for lists of
/// unequal lengths or an empty list that is not the only one, DTypeError for values of mixed kinds
/// (integers with floating values; write 1.0 for 1).
Tensor tensor(const TensorData& values, const TensorOptions& options = {});

/// zeros() with x's shape, dtype and device (torch.zeros_like).
Tensor zeros_like(const Tensor& x);
/// ones() with x's shape, dtype and device.
Tensor ones_like(const Tensor& x);
/// full() with x's shape, dtype and device.
Tensor full_like(const Tensor& x, double value);
/// rand() with x's shape, dtype and device.
Tensor rand_like(const Tensor& x);
/// randn() with x's shape, dtype and device.
Tensor randn_like(const Tensor& x);

// The *_like factories with options, as torch::zeros_like(x, options): the dtype and device that
// options set replace x's, requires_grad comes from options.
/// zeros() with x's shape; dtype and device from options where set, else x's.
Tensor zeros_like(const Tensor& x, const TensorOptions& options);
/// ones() with x's shape; dtype and device from options where set, else x's.
Tensor ones_like(const Tensor& x, const TensorOptions& options);
/// full() with x's shape; dtype and device from options where set, else x's.
Tensor full_like(const Tensor& x, double value, const TensorOptions& options);
/// rand() with x's shape; dtype and device from options where set, else x's.
Tensor rand_like(const Tensor& x, const TensorOptions& options);
/// randn() with x's shape; dtype and device from options where set, else x's.
Tensor randn_like(const Tensor& x, const TensorOptions& options);

}  // namespace tg
