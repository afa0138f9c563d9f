/// \file
/// core/int_array_ref.h: IntArrayRef, the sizes argument of the factories, the pooling and convolution
/// functions and the Tensor methods that take sizes: a braced list, a Shape, a std::vector or one
/// integer, as libtorch's c10::IntArrayRef takes them (`tg::randn(3)`, `tg::max_pool2d(x, 2)`).
/// TORCH_CHECK and AT_ASSERT, the checks libtorch programs use, throwing tg::Error.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <vector>

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
};

}  // namespace tg
