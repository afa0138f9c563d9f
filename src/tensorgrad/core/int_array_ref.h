/// \file
/// core/int_array_ref.h: IntArrayRef, the sizes argument of the factories, the pooling and convolution
/// functions and the Tensor methods that take sizes: a braced list, a Shape, a std::vector or one
/// integer, as libtorch's c10::IntArrayRef takes them (`tg::randn(3)`, `tg::max_pool2d(x, 2)`).
/// TORCH_CHECK and AT_ASSERT, the checks libtorch programs use, throwing tg::Error.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "tensorgrad/core/error.h"
#include "tensorgrad/core/shape.h"

namespace tg {

/// A list of sizes as a function argument (libtorch's c10::IntArrayRef): `{2, 3}`, a Shape, a
/// std::vector<int64_t>, or one integer, which is the list of that one integer (libtorch's
/// one-element ArrayRef): `tg::randn(3)` is `tg::randn({3})`, and `tg::max_pool2d(x, 2)` pools 2x2
/// windows, a one-element size applying to both spatial dims. It is a Shape, so it passes wherever a
/// Shape or a std::vector<int64_t> is expected. Unlike libtorch's it owns its elements: one kept
/// past the call (in an options object) cannot dangle.
class IntArrayRef : public Shape {
 public:
  /// The empty list; `{}` (a 0-d tensor's sizes).
  IntArrayRef() = default;
  /// The list of the one integer n (libtorch's ArrayRef(const T& one_element)).
  IntArrayRef(int64_t n) : Shape{n} {}   // NOLINT(google-explicit-constructor): as libtorch's
  /// The listed sizes: `{2, 3}`.
  IntArrayRef(std::initializer_list<int64_t> sizes) : Shape(sizes) {}
  /// A Shape's sizes.
  IntArrayRef(const Shape& sizes) : Shape(sizes) {}   // NOLINT(google-explicit-constructor)
  /// A vector's sizes.
  IntArrayRef(const std::vector<int64_t>& sizes) : Shape(sizes) {}   // NOLINT(google-explicit-constructor)
  /// The sizes as a std::vector (libtorch's ArrayRef::vec()).
  std::vector<int64_t> vec() const { return std::vector<int64_t>(begin(), end()); }
};

namespace detail {
/// The condition of TORCH_CHECK(cond, parts...), as bool.
template <class Cond, class... Parts>
bool torch_check_cond(const Cond& cond, const Parts&...) {
  return static_cast<bool>(cond);
}
/// The message of a failed TORCH_CHECK: the parts concatenated, or libtorch's words naming the
/// condition when there are none (text is the macro's arguments as written).
template <class Cond, class... Parts>
std::string torch_check_message(const char* text, const Cond&, const Parts&... parts) {
  if constexpr (sizeof...(Parts) == 0) return cat("Expected ", text, " to be true, but got false.");
  else return cat(parts...);
}
}  // namespace detail

}  // namespace tg

#ifndef TORCH_CHECK
/// libtorch's TORCH_CHECK(cond, message parts...): throws tg::Error with the parts concatenated (or
/// "Expected cond to be true, but got false." without any) when cond is false; cond is evaluated a
/// second time only on that path. Defined only where libtorch's own is not, so a file may include both.
#define TORCH_CHECK(...)                                                                               \
  do {                                                                                                 \
    if (!::tg::detail::torch_check_cond(__VA_ARGS__))                                                  \
      throw ::tg::Error(::tg::detail::torch_check_message(#__VA_ARGS__, __VA_ARGS__));                 \
  } while (0)
#endif
#ifndef AT_ASSERT
/// libtorch's AT_ASSERT(cond): an internal invariant; throws tg::Error naming the condition, the file
/// and the line when it is false. Defined only where libtorch's own is not.
#define AT_ASSERT(...)                                                                                 \
  do {                                                                                                 \
    if (!::tg::detail::torch_check_cond(__VA_ARGS__))                                                  \
      throw ::tg::Error(::tg::detail::cat("AT_ASSERT(", #__VA_ARGS__, ") failed at ", __FILE__, ":", __LINE__)); \
  } while (0)
#endif
