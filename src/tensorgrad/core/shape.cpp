// core/shape.cpp: shape arithmetic with int64 overflow checks, broadcasting, dim wrapping.
#include "tensorgrad/core/shape.h"

#include <algorithm>
#include <limits>
#include <sstream>

#include "tensorgrad/core/error.h"

namespace tg {

std::string shape_str(const Shape& s) {
  std::ostringstream os;
  os << '[';
  for (std::size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  os << ']';
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Shape& s) { return os << shape_str(s); }

std::string shape_x(const Shape& s) {
  std::ostringstream os;
  for (std::size_t i = 0; i < s.size(); ++i) os << (i ? "x" : "") << s[i];
  return os.str();
}

int64_t checked_numel(const Shape& s, const char* op) {
  int64_t n = 1;
  for (int64_t d : s) TG_CHECK(d >= 0, ShapeError, op, ": negative dimension ", d, " in shape ", shape_str(s));
  for (int64_t d : s) {
    if (d == 0) return 0;
  }
  for (int64_t d : s) {
    TG_CHECK(n <= std::numeric_limits<int64_t>::max() / d, ShapeError, op, ": shape ", shape_str(s),
             " has more elements than fit in int64");
    n *= d;
  }
  return n;
}

Shape contiguous_strides(const Shape& s) {
  Shape st = s;   // the right length (a block copy); every element is overwritten below
  int64_t acc = 1;
  for (std::size_t i = s.size(); i-- > 0;) {
    st[i] = acc;
    if (__builtin_mul_overflow(acc, std::max<int64_t>(s[i], 1), &acc)) acc = std::numeric_limits<int64_t>::max();
  }
  return st;
}

int64_t wrap_dim(int64_t dim, int64_t rank, const char* op) {
  const int64_t r = std::max<int64_t>(rank, 1);   // a 0-d tensor accepts dim 0 and -1, as in PyTorch
  TG_CHECK(dim >= -r && dim < r, IndexError, op, ": dimension out of range (expected to be in range of [", -r,
           ", ", r - 1, "], but got ", dim, ")");
  return dim < 0 ? dim + r : dim;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  const std::size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (std::size_t i = 0; i < n; ++i) {
    const int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    TG_CHECK(da == db || da == 1 || db == 1, ShapeError, op, ": the size of tensor a (", da,
             ") must match the size of tensor b (", db, ") at non-singleton dimension ", i);
    out[i] = da == 1 ? db : da;
  }
  return out;
}

}  // namespace tg
