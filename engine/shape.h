// engine/shape.h: Shape (sizes) and strides arithmetic, all int64 and overflow-checked.
// Broadcasting rules (NumPy) live here too; the loops that use them are in the backends.
#pragma once
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace tg {

using Shape = std::vector<int64_t>;

std::string shape_str(const Shape& s);                       // "[2, 3]"
std::string shape_x(const Shape& s);                         // "2x3" (matmul messages)
/// Element count; throws ShapeError on negative sizes or int64 overflow (before anything is allocated).
int64_t checked_numel(const Shape& s, const char* op = "tensor");
/// Element count of a shape already validated by checked_numel. A zero size wins before any product
/// is formed, so zero-size shapes with huge sizes elsewhere ({0, 2^62, 2^62}) never overflow.
inline int64_t numel_of(const Shape& s) {
  for (int64_t d : s)
    if (d == 0) return 0;
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}
/// Row-major strides. For a zero-size shape whose strides would overflow int64 they saturate at
/// INT64_MAX: such a tensor has no element, so no stride is ever used to address one.
Shape contiguous_strides(const Shape& s);
/// Wraps a possibly negative dim into [0, rank); throws IndexError naming op otherwise.
int64_t wrap_dim(int64_t dim, int64_t rank, const char* op);
/// NumPy broadcast of two shapes; throws ShapeError in PyTorch's words naming op.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);

}  // namespace tg
