// tests/fuzz/fuzz_ops.cpp: libFuzzer target for programs of ops over aliased tensors. The input bytes
// decode into up to kMaxSteps steps over a pool of at most kPool live tensors (float32 or float64, CPU,
// at most kMaxElems elements, values such as 3, -1/2, 1/4, 0, -0, inf, -inf and NaN): creating a
// tensor; out-of-place ops (add sub mul div gt eq, neg exp relu tanh sigmoid abs clamp, sum and mean
// over everything or one dim, matmul, softmax and log_softmax, where); views (transpose, t, permute,
// expand, reshape, view, squeeze, unsqueeze, flatten, narrow, select, detach, contiguous, to); in-place
// ops (add_ sub_ mul_ with a tensor or a scalar, fill_, zero_, copy_), which often write through a view
// into memory that other live tensors see; and sum().backward().
//
// An independent reference below replays the program in float64: each of its tensors is a strided view
// (shape, strides, offset) of a shared storage of values, so views alias and in-place writes go through
// strides as they should. Each value carries an error bound, grown op by op from the float32/float64
// epsilon and from the inputs' bounds through the op's sensitivity (1 for add, |b| for a*b, e^x for
// exp, 1/2 for softmax, ...), so float32 rounding, libm and summation order stay inside the tolerance
// while a wrong element, a missed alias or a write to the wrong place does not. NaN must be NaN and an
// infinity the same infinity. After every step every live tensor, read back with .to(cpu).contiguous(),
// must match its reference; two live tensors must share a storage exactly when their references do;
// requires_grad and is_leaf must agree.
//
// The contract of a step, decided by the reference from its own rules (PyTorch's shape, dim and dtype
// rules): a valid step succeeds, an invalid one throws a tg::Error and changes nothing. Mixed float32 /
// float64 operands compute in PyTorch's result type (Note [Type promotion]: a 0-d operand counts only
// next to another 0-d one), each converted to it first; gt and eq give bool, which the program converts
// to the result type; where's condition is c != 0. In-place
// writes follow Note [Overlapping writes] (prim/checks.cpp), decided here by brute force over the
// element offsets: a written tensor that reaches one location through several elements (an expanded
// view), or an input sharing memory with the written tensor without being the same view, must be
// refused (a tg::Error, nothing changed). When either tensor of such a pair is not a permutation of a
// dense block, tg lets the write through ("too hard", as PyTorch does) and the written values are
// unspecified: the reference marks those storage locations unknown and stops comparing them. The same
// elements seen through differently strided size-1 dims may go either way (tg compares strides, as
// PyTorch does, and the stride of a size-1 dim is a convention). An in-place op on a leaf that requires
// grad, or on a view of a Tensor that requires grad, must throw tg::AutogradError unless it runs
// under NoGradGuard. backward() must succeed or throw tg::AutogradError (a tensor saved for backward
// was overwritten, the graph was already freed); the gradients of the pool's leaves must have the
// leaves' shapes, and must be finite when every tensor so far was float64 and every value was 0 or of
// magnitude in [2^-8, 2^8] (every local derivative is then bounded: an inf or NaN gradient is a bug).
// Softmax rows follow Note [NaN and infinity] (kernels/elementwise.h): NaN everywhere when a row holds NaN or
// +inf or only -inf; a -inf among finite values gives 0 (log_softmax -inf). The sign of zero is not
// modelled, so x / 0 is compared only as 0 / 0 = NaN.
// Any other exception type, a crash or a sanitizer report is a bug; fuzz::bug prints the program.
// Input format (the seed generator tests/fuzz/make_corpus.cpp writes it): see decode_step() below.
#include <tensorgrad.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <iterator>
#include <limits>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "fuzz_common.h"

namespace {

using tg::DType;
using tg::Shape;
using tg::Tensor;

constexpr size_t kMaxSteps = 12;
constexpr size_t kPool = 6;             // live tensors; a new one evicts the oldest
constexpr int64_t kMaxElems = 512;      // results larger than this are skipped, not computed
constexpr size_t kMaxRank = 6;
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kTameLow = 0x1p-8, kTameHigh = 0x1p8;   // see tame below

/// Reads the input front to back; past the end every byte is 0.
struct Reader {
  const uint8_t* p;
  size_t n, i = 0;
  bool done() const { return i >= n; }
  uint8_t u8() { return i < n ? p[i++] : 0; }
  int64_t dim() { return int64_t(int8_t(u8())) % 5; }     // [-4, 4]
  int64_t small() { return int64_t(int8_t(u8())) % 6; }   // [-5, 5]: narrow starts and lengths, select indices
};

/// An element value from one byte: 0xF0-0xF3 inf, 0xF4-0xF7 -inf, 0xF8-0xFB NaN, 0xFC-0xFF -0; below,
/// k = b % 33 gives 0..16 (k <= 16) or -1..-16 (16 - k), divided by 1, 2 or 4 ((b / 33) % 3). Exact in float32.
double decode_value(uint8_t b) {
  if (b >= 0xF0) {
    switch ((b - 0xF0) / 4) {
      case 0: return kInf;
      case 1: return -kInf;
      case 2: return kNaN;
      default: return -0.0;
    }
  }
  const int k = b % 33;
  return double(k <= 16 ? k : 16 - k) / double(1 << ((b / 33) % 3));
}

const double kBounds[8] = {-kInf, -2, -1, -0.5, 0, 0.5, 1, kInf};   // clamp bounds, byte % 8
const int64_t kTargetSizes[8] = {-1, 0, 1, 2, 3, 4, 1, 2};         // reshape/view/expand sizes, byte % 8

std::string num(double v) {
  std::ostringstream os;
  os.precision(17);
  os << v;
  return os.str();
}

std::string dtype_str(DType t) { return tg::dtype_name(t); }

// ------------------------------------------------------------------------------------------------
// Reference values: a value and a bound on how far tg's element may be from it.

/// What tg may hold in one element: within err of v. NaN and +-inf are exact (err 0). err = inf means
/// unknown: anything goes, the element is not compared.
struct Val {
  double v = 0, err = 0;
  bool unknown() const { return !(err < kInf); }
  bool finite() const { return !unknown() && std::isfinite(v); }
  bool exact_zero() const { return v == 0 && err == 0; }
};
Val exact(double v) { return Val{v, 0}; }
const Val kUnknown{0, kInf};

struct Precision {
  double eps, tiny, max;   // ulp of 1; an absolute slack for subnormal or flushed results; largest finite
};
Precision precision(DType t) {
  if (t == tg::kFloat32) return {0x1p-23, 4.0 * FLT_MIN, FLT_MAX};
  return {0x1p-52, 4.0 * DBL_MIN, DBL_MAX};
}

/// A result stored in dtype t: certainly finite, certainly infinite (beyond the largest finite value by
/// more than its bound), or unknown in between.
Val fit(Val x, DType t) {
  if (x.unknown()) return kUnknown;
  if (!std::isfinite(x.v)) return exact(x.v);
  const double m = precision(t).max;
  if (std::abs(x.v) + x.err < m * (1 - 0x1p-20)) return x;
  if (std::abs(x.v) - x.err > m * (1 + 0x1p-20)) return exact(std::copysign(kInf, x.v));
  return kUnknown;
}

/// A computed value v whose inputs contribute err, plus the op's own rounding: ulps epsilons of the
/// largest magnitude the computed value may have, |v| + err (tg rounds the value it computed, which
/// can be far from v: exp of an operand known only within [1, 16] rounds a number near e^16), and the
/// absolute slack.
Val rounded(double v, double err, DType t, double ulps) {
  const Precision p = precision(t);
  return fit(Val{v, err + ulps * p.eps * (std::abs(v) + err) + p.tiny}, t);
}

enum class Bin { kAdd, kSub, kMul, kDiv, kGt, kEq };
const char* const kBinNames[6] = {"add", "sub", "mul", "div", "gt", "eq"};

/// gt and eq give 1 or 0, or {0.5, 0.5} (either) when the bounds leave the order open.
Val compare(Bin op, const Val& a, const Val& b) {
  if (std::isnan(a.v) || std::isnan(b.v)) return exact(0);
  const Val either{0.5, 0.5};
  if (op == Bin::kGt) {
    if (a.v - a.err > b.v + b.err) return exact(1);
    if (a.v + a.err <= b.v - b.err) return exact(0);
    return either;
  }
  if (a.err == 0 && b.err == 0) return exact(a.v == b.v ? 1 : 0);
  if (a.v + a.err < b.v - b.err || b.v + b.err < a.v - a.err) return exact(0);
  return either;
}

Val binary(Bin op, const Val& a, const Val& b, DType t) {
  if (a.unknown() || b.unknown()) return kUnknown;
  if (op == Bin::kGt || op == Bin::kEq) return compare(op, a, b);
  if (std::isnan(a.v) || std::isnan(b.v)) return exact(kNaN);
  const bool fa = std::isfinite(a.v), fb = std::isfinite(b.v);
  switch (op) {
    case Bin::kAdd:
    case Bin::kSub: {
      const double bv = op == Bin::kSub ? -b.v : b.v;
      if (fa && fb) return rounded(a.v + bv, a.err + b.err, t, 2);
      return exact(a.v + bv);   // an infinity with a finite value or another infinity: IEEE decides
    }
    case Bin::kMul: {
      if (fa && fb) return rounded(a.v * b.v, std::abs(b.v) * a.err + std::abs(a.v) * b.err + a.err * b.err, t, 2);
      if (!fa && !fb) return exact(a.v * b.v);
      const Val& f = fa ? a : b;
      if (f.exact_zero()) return exact(kNaN);         // 0 * inf
      if (std::abs(f.v) <= f.err) return kUnknown;    // the finite factor may be 0
      return exact(a.v * b.v);
    }
    case Bin::kDiv: {
      if (!fb) return exact(fa ? 0.0 : kNaN);           // x / inf = +-0, inf / inf = NaN
      if (b.exact_zero()) return a.exact_zero() ? exact(kNaN) : kUnknown;   // x / +-0: the zero's sign decides
      if (std::abs(b.v) <= b.err) return kUnknown;      // the divisor may be 0
      if (!fa) return exact(a.v / b.v);
      const double q = a.v / b.v;
      return rounded(q, (a.err + std::abs(q) * b.err) / (std::abs(b.v) - b.err), t, 2);
    }
    default: return kUnknown;
  }
}

enum class Un { kNeg, kExp, kRelu, kTanh, kSigmoid, kAbs, kClamp };
const char* const kUnNames[7] = {"neg", "exp", "relu", "tanh", "sigmoid", "abs", "clamp"};

Val unary(Un op, const Val& x, DType t, double lo, double hi) {
  if (x.unknown()) return kUnknown;
  if (std::isnan(x.v)) return exact(kNaN);
  const bool f = std::isfinite(x.v);
  switch (op) {   // neg, abs, relu and clamp are exact and 1-Lipschitz: the bound carries over
    case Un::kNeg: return Val{-x.v, x.err};
    case Un::kAbs: return Val{std::abs(x.v), x.err};
    case Un::kRelu: return Val{x.v < 0 ? 0.0 : x.v, x.err};
    case Un::kClamp: {   // min(max(x, lo), hi): with lo > hi every element is hi, as torch.clamp
      const double y = x.v < lo ? lo : x.v;
      return Val{y > hi ? hi : y, x.err};
    }
    case Un::kExp: {
      const double y = std::exp(x.v);
      if (!f) return exact(y);
      if (std::isinf(y)) return x.v - x.err > 710 ? exact(kInf) : kUnknown;
      return rounded(y, y * std::expm1(x.err), t, 4);   // |e^(x+d) - e^x| <= e^x (e^|d| - 1)
    }
    case Un::kTanh: return f ? rounded(std::tanh(x.v), x.err, t, 4) : exact(std::tanh(x.v));
    case Un::kSigmoid: {
      const double y = 1 / (1 + std::exp(-x.v));
      return f ? rounded(y, x.err / 4, t, 8) : exact(y);   // slope at most 1/4
    }
  }
  return kUnknown;
}

/// sum of xs in dtype t, in any order (tg's chunks, BLAS kernels): |error| <= (n + 1) eps sum |x|.
Val sum_of(const std::vector<Val>& xs, DType t) {
  bool nan = false, pinf = false, ninf = false;
  double s = 0, mag = 0, err = 0;
  for (const Val& x : xs) {
    if (x.unknown()) return kUnknown;
    if (std::isnan(x.v)) nan = true;
    else if (x.v == kInf) pinf = true;
    else if (x.v == -kInf) ninf = true;
    else {
      s += x.v;
      mag += std::abs(x.v) + x.err;
      err += x.err;
    }
  }
  if (nan || (pinf && ninf)) return exact(kNaN);
  const Precision p = precision(t);
  if (mag >= p.max * (1 - 0x1p-20)) return kUnknown;   // some partial sum may overflow
  if (pinf || ninf) return exact(pinf ? kInf : -kInf);
  const double n = double(xs.size());
  return fit(Val{s, err + (n + 1) * p.eps * mag + n * p.tiny}, t);
}

Val mean_of(const std::vector<Val>& xs, DType t) {
  if (xs.empty()) return exact(kNaN);   // 0 / 0, as in PyTorch
  const Val s = sum_of(xs, t);
  if (!s.finite()) return s;
  const double n = double(xs.size());
  return rounded(s.v / n, s.err / n, t, 3);
}

/// softmax or log_softmax of one row. Sensitivity to the inputs (max-norm): 1/2 for softmax, 2 for
/// log_softmax. tg's own rounding: the shift x - max costs eps |x - max| in the exponent, the sum of
/// exponentials D eps, the rest a few eps; each of these on the magnitudes the inputs may have, within
/// their bounds (as rounded()).
std::vector<Val> softmax_row(const std::vector<Val>& row, bool log, DType t) {
  const size_t D = row.size();
  bool nan = false;
  double m = -kInf, maxerr = 0;
  for (const Val& x : row) {
    if (x.unknown()) return std::vector<Val>(D, kUnknown);
    if (std::isnan(x.v) || x.v == kInf) nan = true;
    else if (std::isfinite(x.v)) {
      m = std::max(m, x.v);
      maxerr = std::max(maxerr, x.err);
    }
  }
  // No finite shift (NaN or +inf anywhere, or -inf only): NaN everywhere (Note [NaN and infinity]).
  if (nan || m == -kInf) return std::vector<Val>(D, exact(kNaN));
  double s = 0, spread = 0;
  for (const Val& x : row)
    if (std::isfinite(x.v)) {
      s += std::exp(x.v - m);
      spread = std::max(spread, m - x.v);
    }
  const Precision p = precision(t);
  const double ls = std::log(s);   // >= 0: the largest term is 1
  spread += 2 * maxerr;   // the largest shift the row as tg holds it may have
  const double rel = p.eps * (spread + double(D) + 8);
  std::vector<Val> out;
  for (const Val& x : row) {
    if (x.v == -kInf) {
      out.push_back(exact(log ? -kInf : 0.0));
    } else if (log) {
      const double mag = std::abs(x.v) + std::abs(m) + 2 * maxerr + ls + 2 * maxerr;
      out.push_back(fit(Val{x.v - m - ls, 2 * maxerr + 4 * p.eps * mag + rel + p.tiny}, t));
    } else {
      const double y = std::exp(x.v - m) / s;
      const double y_max = std::min(1.0, y + maxerr / 2);
      out.push_back(fit(Val{y, maxerr / 2 + y_max * (rel + p.eps * (m - x.v + 2 * maxerr)) + p.tiny}, t));
    }
  }
  return out;
}

/// where(c, a, b) for one element: a where c != 0 (NaN counts), b where c is exactly 0.
Val where_of(const Val& c, const Val& a, const Val& b) {
  if (c.unknown()) return kUnknown;
  if (std::isnan(c.v) || std::abs(c.v) > c.err) return a;
  if (c.exact_zero()) return b;
  if (a.finite() && b.finite()) return Val{(a.v + b.v) / 2, std::abs(a.v - b.v) / 2 + std::max(a.err, b.err)};
  return kUnknown;
}

Val cast(const Val& x, DType from, DType to) {
  if (from == to || to == tg::kFloat64 || !x.finite()) return x;
  return rounded(x.v, x.err, to, 1);
}

// ------------------------------------------------------------------------------------------------
// Reference tensors: strided views of shared storages.

int64_t num_elements(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

Shape row_major_strides(const Shape& s) {
  Shape st(s.size());
  int64_t acc = 1;
  for (size_t i = s.size(); i-- > 0;) {
    st[i] = acc;
    acc *= std::max<int64_t>(s[i], 1);
  }
  return st;
}

/// Calls f(index) for every index of shape s in row-major order.
template <class F>
void for_each_index(const Shape& s, F f) {
  const int64_t n = num_elements(s);
  std::vector<int64_t> idx(s.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    f(idx);
    for (size_t d = s.size(); d-- > 0;) {
      if (++idx[d] < s[d]) break;
      idx[d] = 0;
    }
  }
}

struct RStorage {
  std::vector<Val> el;
  DType dtype;
};

struct RTensor {
  std::shared_ptr<RStorage> st;
  Shape shape, strides;
  int64_t offset = 0;
  bool requires_grad = false, is_leaf = true, is_view = false;   // as tg's Tensor should have them

  DType dtype() const { return st->dtype; }
  int64_t numel() const { return num_elements(shape); }
  int64_t rank() const { return int64_t(shape.size()); }
  /// Storage position of the element at idx; idx may have more (leading) dims than this tensor, and
  /// size-1 dims read position 0: broadcasting.
  int64_t at(const std::vector<int64_t>& idx) const {
    const size_t lead = idx.size() - shape.size();
    int64_t o = offset;
    for (size_t d = 0; d < shape.size(); ++d)
      if (shape[d] != 1) o += idx[lead + d] * strides[d];
    return o;
  }
  const Val& get(const std::vector<int64_t>& idx) const { return st->el[size_t(at(idx))]; }
  std::vector<int64_t> offsets() const {
    std::vector<int64_t> out;
    for_each_index(shape, [&](const std::vector<int64_t>& idx) { out.push_back(at(idx)); });
    return out;
  }
  std::vector<Val> values() const {
    std::vector<Val> out;
    for_each_index(shape, [&](const std::vector<int64_t>& idx) { out.push_back(get(idx)); });
    return out;
  }
};
using Ref = std::shared_ptr<RTensor>;

/// A new tensor with its own storage, values in row-major order; requires grad when an input does.
Ref fresh(const Shape& shape, DType t, std::vector<Val> vals, bool requires_grad) {
  auto r = std::make_shared<RTensor>();
  r->st = std::make_shared<RStorage>(RStorage{std::move(vals), t});
  r->shape = shape;
  r->strides = row_major_strides(shape);
  r->requires_grad = requires_grad;
  r->is_leaf = !requires_grad;
  return r;
}

/// A view op's result (mark_view: a view of a Tensor that requires grad is marked as such).
Ref view_of(const RTensor& base, Shape shape, Shape strides, int64_t offset) {
  auto r = std::make_shared<RTensor>();
  r->st = base.st;
  r->shape = std::move(shape);
  r->strides = std::move(strides);
  r->offset = offset;
  r->requires_grad = base.requires_grad;
  r->is_leaf = !base.requires_grad;
  r->is_view = base.requires_grad || base.is_view;
  return r;
}

/// The same memory as a plain leaf without grad (detach, and Tensor(RawTensor::narrow / select)).
Ref alias_leaf(const RTensor& base, Shape shape, Shape strides, int64_t offset) {
  Ref r = view_of(base, std::move(shape), std::move(strides), offset);
  r->requires_grad = r->is_view = false;
  r->is_leaf = true;
  return r;
}

// ------------------------------------------------------------------------------------------------
// Reference shape rules (PyTorch's), independent of tg.

bool wrap(int64_t dim, int64_t rank, int64_t* out) {
  const int64_t r = std::max<int64_t>(rank, 1);   // a 0-d tensor takes dims 0 and -1
  if (dim < -r || dim >= r) return false;
  *out = dim < 0 ? dim + r : dim;
  return true;
}

bool broadcast(const Shape& a, const Shape& b, Shape* out) {
  const size_t n = std::max(a.size(), b.size());
  Shape s(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t da = i + a.size() < n ? 1 : a[i + a.size() - n];
    const int64_t db = i + b.size() < n ? 1 : b[i + b.size() - n];
    if (da != db && da != 1 && db != 1) return false;
    s[i] = da == 1 ? db : da;
  }
  *out = s;
  return true;
}

/// A reshape/view target against numel: one -1 inferred, the other sizes >= 0, the same element count.
bool reshape_target(int64_t numel, const Shape& target, Shape* out) {
  int64_t infer = -1, known = 1;
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] == -1) {
      if (infer >= 0) return false;
      infer = int64_t(i);
    } else if (target[i] < 0) {
      return false;
    } else {
      known *= target[i];
    }
  }
  Shape s = target;
  if (infer >= 0) {
    if (known == 0 || numel % known != 0) return false;
    s[size_t(infer)] = numel / known;
  }
  if (num_elements(s) != numel) return false;
  *out = s;
  return true;
}

/// Strides under which `shape` shows r's elements in r's row-major order, when some exist (then
/// reshape and view give a view; otherwise view refuses and reshape copies). Brute force: the step
/// of each dim of size > 1 is read off the offsets, then every element is checked. Size-1 dims get
/// contiguous strides (a convention; see Overlap::kEither).
bool view_strides(const RTensor& r, const Shape& shape, Shape* strides) {
  const std::vector<int64_t> off = r.offsets();
  const Shape cs = row_major_strides(shape);
  Shape st = cs;
  if (!off.empty()) {
    for (size_t d = 0; d < shape.size(); ++d)
      if (shape[d] > 1) st[d] = off[size_t(cs[d])] - off[0];
    for (size_t i = 0; i < off.size(); ++i) {
      int64_t expect = off[0], rest = int64_t(i);
      for (size_t d = 0; d < shape.size(); ++d) {
        expect += (rest / cs[d]) * st[d];
        rest %= cs[d];
      }
      if (off[i] != expect) return false;
    }
  }
  *strides = st;
  return true;
}

bool is_contiguous(const RTensor& r) {
  const std::vector<int64_t> off = r.offsets();
  for (size_t i = 0; i < off.size(); ++i)
    if (off[i] != off[0] + int64_t(i)) return false;
  return true;
}

// ------------------------------------------------------------------------------------------------
// Note [Overlapping writes], by brute force over element offsets.

enum class Overlap {
  kNone,          // the write is well defined
  kRefuse,        // tg must throw
  kEither,        // the same elements through differently strided size-1 dims: refused or done, both fine
  kUnspecified,   // "too hard": tg lets it through, the written values are unspecified
};

/// The written tensor reaching one location through several elements: refused when a dim of size > 1
/// steps by 0 (an expanded dim), "too hard" otherwise.
Overlap internal_overlap(const RTensor& out) {
  std::vector<int64_t> off = out.offsets();
  std::sort(off.begin(), off.end());
  if (std::adjacent_find(off.begin(), off.end()) == off.end()) return Overlap::kNone;
  for (size_t d = 0; d < out.shape.size(); ++d)
    if (out.shape[d] > 1 && out.strides[d] == 0) return Overlap::kRefuse;
  return Overlap::kUnspecified;
}

/// Whether t's elements cover [min, min + numel) exactly once: a permutation of a dense block.
bool dense(const std::vector<int64_t>& sorted) {
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) return false;
  return sorted.empty() || sorted.back() - sorted.front() + 1 == int64_t(sorted.size());
}

/// Writing `out` while reading `in`.
Overlap pair_overlap(const RTensor& out, const RTensor& in) {
  if (&out == &in || out.st != in.st) return Overlap::kNone;   // the same Tensor is the same view
  const std::vector<int64_t> oo = out.offsets(), io = in.offsets();
  std::vector<int64_t> a = oo, b = io, common;
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(common));
  if (common.empty()) return Overlap::kNone;
  const bool same = out.shape == in.shape && oo == io;
  if (!dense(a) || !dense(b)) return same ? Overlap::kNone : Overlap::kUnspecified;
  if (!same) return Overlap::kRefuse;
  for (int64_t d : out.shape)
    if (d == 1) return Overlap::kEither;
  return Overlap::kNone;
}

// ------------------------------------------------------------------------------------------------
// The program: tg tensors and their references, step by step.

struct Entry {
  Tensor v;
  Ref r;
  std::string name;
};

enum class Expect { kOk, kError, kAutograd, kEither, kOkOrAutograd };

class Program {
 public:
  /// Decodes and runs one step (false once the input or the step budget is used up). Input format:
  /// a kind byte (% 10), then the kind's bytes. An operand byte picks a live tensor (% pool size; the
  /// step is skipped while the pool is empty); a dim byte is int8 % 5; a value byte decode_value().
  ///   0 make     h, h % 4 size bytes (% 5), one value byte per element; h & 4: float64, h & 8: requires grad
  ///   1 binary   op (% 6: add sub mul div gt eq), a, b
  ///   2 unary    op (% 7: neg exp relu tanh sigmoid abs clamp), x; clamp: lo, hi (kBounds, % 8)
  ///   3 reduce   op (% 4: sum, sum(dim), mean, mean(dim)), x; the dim ones: dim, keepdim (& 1)
  ///   4 matmul   a, b
  ///   5 softmax  op (& 1: softmax, log_softmax), x, dim
  ///   6 where    cond, a, b
  ///   7 view     op (% 15), x, arguments (see step_view)
  ///   8 inplace  op (% 8: add_ sub_ mul_ add_(s) mul_(s) fill_(s) zero_ copy_), flags (& 1: under
  ///              NoGradGuard), self, then the other operand or the scalar's value byte
  ///   9 backward x: sum(x).backward()
  bool decode_step(Reader& in) {
    if (in.done() || steps_ == kMaxSteps) return false;
    ++steps_;
    switch (in.u8() % 10) {
      case 0: step_make(in); break;
      case 1: step_binary(in); break;
      case 2: step_unary(in); break;
      case 3: step_reduce(in); break;
      case 4: step_matmul(in); break;
      case 5: step_softmax(in); break;
      case 6: step_where(in); break;
      case 7: step_view(in); break;
      case 8: step_inplace(in); break;
      default: step_backward(in); break;
    }
    check_all();
    return true;
  }

 private:
  std::vector<Entry> pool_;
  std::string trace_;
  size_t steps_ = 0;
  int next_ = 0;
  bool tame_ = true;   // all float64, every value 0 or of magnitude in [kTameLow, kTameHigh] so far

  [[noreturn]] void fail(const std::string& what) const { fuzz::bug("fuzz_ops program:\n" + trace_ + "  " + what); }

  void note(const std::string& line) {
    static const bool verbose = std::getenv("TG_FUZZ_VERBOSE") != nullptr;
    if (verbose) std::fprintf(stderr, "  %s\n", line.c_str());
    trace_ += "  " + line + "\n";
  }

  std::string new_name() const { return "t" + std::to_string(next_); }

  static std::string desc(const Entry& e) {
    const tg::RawTensor& t = e.v.data();
    return e.name + ":" + dtype_str(t.dtype()) + tg::shape_str(t.shape()) + "/" + tg::shape_str(t.strides()) +
           (e.r->requires_grad ? "/grad" : "");
  }

  bool pick(Reader& in, Entry* out) {
    const uint8_t b = in.u8();
    if (pool_.empty()) return false;
    *out = pool_[b % pool_.size()];
    return true;
  }

  static bool too_big(const Shape& s) { return num_elements(s) > kMaxElems || s.size() > kMaxRank; }

  void push(const Tensor& v, const Ref& r) {
    if (pool_.size() == kPool) pool_.erase(pool_.begin());
    pool_.push_back(Entry{v, r, new_name()});
    ++next_;
  }

  /// Runs call and checks it against what the reference expects. True when it returned.
  bool run(const std::string& what, Expect expect, const std::function<void()>& call) {
    bool threw = false, autograd = false;
    std::string message;
    try {
      call();
    } catch (const tg::AutogradError& e) {
      threw = autograd = true;
      message = e.what();
    } catch (const tg::Error& e) {
      threw = true;
      message = e.what();
    } catch (const std::exception& e) {
      fail(what + " threw a non-tg exception: " + e.what());
    }
    note(what + (threw ? " -> threw: " + message : " -> ok"));
    if (threw) {
      if (expect == Expect::kOk) fail("the step threw, but the reference says it is valid");
      if ((expect == Expect::kAutograd || expect == Expect::kOkOrAutograd) && !autograd)
        fail("the step threw, but not the tg::AutogradError expected");
    } else if (expect == Expect::kError || expect == Expect::kAutograd) {
      fail(std::string("the step returned, but the reference expects ") +
           (expect == Expect::kAutograd ? "a tg::AutogradError" : "a tg::Error"));
    }
    return !threw;
  }

  /// Runs an op that makes a new tensor: checks the outcome; on success adds the result with ref.
  void produce(const std::string& what, const Ref& ref, const std::function<Tensor()>& call) {
    if (ref && too_big(ref->shape)) {
      note(what + ": skipped, result of shape " + tg::shape_str(ref->shape) + " too large");
      return;
    }
    Tensor y;
    if (run(new_name() + " = " + what, ref ? Expect::kOk : Expect::kError, [&] { y = call(); })) push(y, ref);
  }

  /// Every live tensor against its reference: shape, dtype, values, autograd flags, shared storages.
  void check_all() {
    for (size_t i = 0; i < pool_.size(); ++i) {
      const Entry& e = pool_[i];
      const RTensor& r = *e.r;
      const tg::RawTensor& t = e.v.data();
      if (t.shape() != r.shape || t.dtype() != r.dtype())
        fail(desc(e) + " should be " + dtype_str(r.dtype()) + tg::shape_str(r.shape));
      if (e.v.requires_grad() != r.requires_grad || e.v.is_leaf() != r.is_leaf)
        fail(desc(e) + std::string(": requires_grad ") + (e.v.requires_grad() ? "true" : "false") + ", is_leaf " +
             (e.v.is_leaf() ? "true" : "false") + "; the reference says " + (r.requires_grad ? "true" : "false") +
             ", " + (r.is_leaf ? "true" : "false"));
      for (size_t j = 0; j < i; ++j) {
        const bool tg_shared = t.storage() == pool_[j].v.data().storage();
        if (tg_shared != (r.st == pool_[j].r->st))
          fail(desc(e) + " and " + desc(pool_[j]) + (tg_shared ? " share" : " do not share") +
               " a storage; the reference says the opposite");
      }
      const tg::RawTensor host = t.to(tg::Device::cpu()).contiguous();
      const std::vector<int64_t> off = r.offsets();
      for (size_t k = 0; k < off.size(); ++k) {
        const double got = host.dtype() == tg::kFloat32 ? double(host.data<float>()[k]) : host.data<double>()[k];
        const Val& want = r.st->el[size_t(off[k])];
        if (!matches(got, want))
          fail(desc(e) + " element " + std::to_string(k) + " (row-major) is " + num(got) + ", the reference " +
               num(want.v) + " +- " + num(want.err));
        if (!want.finite() || (want.v != 0 && (std::abs(want.v) < kTameLow || std::abs(want.v) > kTameHigh)))
          tame_ = false;
      }
      if (r.dtype() != tg::kFloat64) tame_ = false;
    }
  }

  static bool matches(double got, const Val& want) {
    if (want.unknown()) return true;
    if (std::isnan(want.v)) return std::isnan(got);
    if (std::isinf(want.v)) return got == want.v;
    return std::isfinite(got) && std::abs(got - want.v) <= want.err * (1 + 1e-9);
  }

  // ---- steps

  void step_make(Reader& in) {
    const uint8_t h = in.u8();
    const DType t = (h & 4) ? tg::kFloat64 : tg::kFloat32;
    const bool grad = (h & 8) != 0;
    Shape s(h % 4);
    for (auto& d : s) d = in.u8() % 5;
    std::vector<double> values(size_t(num_elements(s)));
    std::vector<Val> vals;
    std::string list;
    for (auto& x : values) {
      x = decode_value(in.u8());
      vals.push_back(exact(x));
      list += (list.empty() ? "" : ", ") + num(x);
    }
    const Ref ref = fresh(s, t, vals, grad);
    ref->is_leaf = true;
    produce("from_vector({" + list + "}, " + tg::shape_str(s) + ", " + dtype_str(t) + (grad ? ", requires_grad)" : ")"),
            ref, [&] { return tg::from_vector(values, s, tg::TensorOptions().dtype(t).requires_grad(grad)); });
  }

  /// An elementwise op over broadcast inputs (their references), in dtype t.
  /// PyTorch's result type of two floating tensors (Note [Type promotion] in prim/promote.cpp): a 0-d
  /// operand decides only when the other is 0-d too; float64 wins otherwise.
  static DType result_of(const RTensor& a, const RTensor& b) {
    const bool a0 = a.rank() == 0, b0 = b.rank() == 0;
    if (a0 != b0) return a0 ? b.dtype() : a.dtype();
    return a.dtype() == tg::kFloat64 || b.dtype() == tg::kFloat64 ? tg::kFloat64 : tg::kFloat32;
  }

  static Ref elementwise(const std::vector<const RTensor*>& xs, const Shape& shape, DType t, bool grad,
                         const std::function<Val(const std::vector<Val>&)>& f) {
    std::vector<Val> out;
    for_each_index(shape, [&](const std::vector<int64_t>& idx) {
      std::vector<Val> args;
      for (const RTensor* x : xs) args.push_back(x->get(idx));
      out.push_back(f(args));
    });
    return fresh(shape, t, out, grad);
  }

  void step_binary(Reader& in) {
    const Bin op = Bin(in.u8() % 6);
    Entry a, b;
    if (!pick(in, &a) || !pick(in, &b)) return;
    Shape s;
    Ref ref;
    // Mixed dtypes compute in the result type, each operand converted to it first; comparisons give
    // bool, read here as 0/1 in the result type (the pool holds floating tensors only).
    const DType t = result_of(*a.r, *b.r), ta = a.r->dtype(), tb = b.r->dtype();
    if (broadcast(a.r->shape, b.r->shape, &s)) {
      const bool grad = op != Bin::kGt && op != Bin::kEq && (a.r->requires_grad || b.r->requires_grad);
      ref = elementwise({a.r.get(), b.r.get()}, s, t, grad,
                        [&](const std::vector<Val>& x) { return binary(op, cast(x[0], ta, t), cast(x[1], tb, t), t); });
    }
    produce(std::string(kBinNames[int(op)]) + "(" + desc(a) + ", " + desc(b) + ")", ref, [&] {
      switch (op) {
        case Bin::kAdd: return tg::add(a.v, b.v);
        case Bin::kSub: return tg::sub(a.v, b.v);
        case Bin::kMul: return tg::mul(a.v, b.v);
        case Bin::kDiv: return tg::div(a.v, b.v);
        case Bin::kGt: return tg::gt(a.v, b.v).to(t);
        default: return tg::eq(a.v, b.v).to(t);
      }
    });
  }

  void step_unary(Reader& in) {
    const Un op = Un(in.u8() % 7);
    Entry x;
    if (!pick(in, &x)) return;
    double lo = 0, hi = 0;
    std::string args;
    if (op == Un::kClamp) {
      lo = kBounds[in.u8() % 8];
      hi = kBounds[in.u8() % 8];
      args = ", " + num(lo) + ", " + num(hi);
    }
    const DType t = x.r->dtype();
    const Ref ref = elementwise({x.r.get()}, x.r->shape, t, x.r->requires_grad,
                                [&](const std::vector<Val>& v) { return unary(op, v[0], t, lo, hi); });
    produce(std::string(kUnNames[int(op)]) + "(" + desc(x) + args + ")", ref, [&] {
      switch (op) {
        case Un::kNeg: return tg::neg(x.v);
        case Un::kExp: return tg::exp(x.v);
        case Un::kRelu: return tg::relu(x.v);
        case Un::kTanh: return tg::tanh(x.v);
        case Un::kSigmoid: return tg::sigmoid(x.v);
        case Un::kAbs: return tg::abs(x.v);
        default: return tg::clamp(x.v, lo, hi);
      }
    });
  }

  /// The rows of x along dim w (a 0-d x is one row): calls f(positions) with the storage positions
  /// of each row and the row-major positions of its elements in x.
  static void rows(const RTensor& x, int64_t w, const std::function<void(const std::vector<Val>&, const std::vector<int64_t>&)>& f) {
    if (x.rank() == 0) {
      f({x.get({})}, {0});
      return;
    }
    Shape outer = x.shape;
    outer[size_t(w)] = 1;
    const Shape cs = row_major_strides(x.shape);
    for_each_index(outer, [&](const std::vector<int64_t>& base) {
      std::vector<Val> row;
      std::vector<int64_t> where;
      std::vector<int64_t> idx = base;
      for (int64_t j = 0; j < x.shape[size_t(w)]; ++j) {
        idx[size_t(w)] = j;
        row.push_back(x.get(idx));
        int64_t flat = 0;
        for (size_t d = 0; d < idx.size(); ++d) flat += idx[d] * cs[d];
        where.push_back(flat);
      }
      f(row, where);
    });
  }

  void step_reduce(Reader& in) {
    const int op = in.u8() % 4;   // sum, sum(dim), mean, mean(dim)
    Entry x;
    if (!pick(in, &x)) return;
    const bool mean = op >= 2, all = op % 2 == 0;
    const DType t = x.r->dtype();
    const bool grad = x.r->requires_grad;
    int64_t dim = 0, w = 0;
    bool keepdim = false;
    Ref ref;
    if (all) {
      const std::vector<Val> v = x.r->values();
      ref = fresh({}, t, {mean ? mean_of(v, t) : sum_of(v, t)}, grad);
    } else {
      dim = in.dim();
      keepdim = in.u8() & 1;
      if (wrap(dim, x.r->rank(), &w)) {
        Shape s = x.r->shape;
        if (!s.empty()) {
          if (keepdim) s[size_t(w)] = 1;
          else s.erase(s.begin() + w);
        }
        std::vector<Val> out;
        rows(*x.r, w, [&](const std::vector<Val>& row, const std::vector<int64_t>&) {
          out.push_back(mean ? mean_of(row, t) : sum_of(row, t));
        });
        ref = fresh(s, t, out, grad);
      }
    }
    const std::string args = all ? "" : ", " + std::to_string(dim) + (keepdim ? ", keepdim" : "");
    produce(std::string(mean ? "mean(" : "sum(") + desc(x) + args + ")", ref, [&] {
      if (all) return mean ? tg::mean(x.v) : tg::sum(x.v);
      return mean ? tg::mean(x.v, dim, keepdim) : tg::sum(x.v, dim, keepdim);
    });
  }

  void step_matmul(Reader& in) {
    Entry a, b;
    if (!pick(in, &a) || !pick(in, &b)) return;
    const RTensor &ra = *a.r, &rb = *b.r;
    const DType t = ra.dtype();
    Ref ref;
    if (ra.rank() >= 1 && rb.rank() >= 1 && t == rb.dtype()) {
      // torch.matmul: a 1-D operand gets a dim of 1 that the result drops; the batch dims broadcast
      // (RTensor::get reads a longer index right-aligned and ignores it along dims of size 1)
      Shape A = ra.shape, B = rb.shape;
      if (ra.rank() == 1) A.insert(A.begin(), 1);
      if (rb.rank() == 1) B.push_back(1);
      const int64_t M = A[A.size() - 2], K = A.back(), K2 = B[B.size() - 2], N = B.back();
      const size_t la = A.size() - 2, lb = B.size() - 2, nb = std::max(la, lb);
      Shape batch(nb);
      bool fits = K == K2;
      for (size_t i = 0; i < nb && fits; ++i) {
        const int64_t da = i + la < nb ? 1 : A[i + la - nb];
        const int64_t db = i + lb < nb ? 1 : B[i + lb - nb];
        fits = da == db || da == 1 || db == 1;
        batch[i] = da == 1 ? db : da;
      }
      if (fits) {
        Shape s = batch;
        if (ra.rank() > 1) s.push_back(M);
        if (rb.rank() > 1) s.push_back(N);
        std::vector<Val> out;
        for_each_index(batch, [&](const std::vector<int64_t>& bi) {
          for (int64_t m = 0; m < M; ++m)
            for (int64_t n = 0; n < N; ++n) {
              std::vector<Val> terms;
              bool overflow = false;   // a product of finite factors beyond the largest finite value
              for (int64_t k = 0; k < K; ++k) {
                std::vector<int64_t> ia = bi, ib = bi;
                if (ra.rank() > 1) ia.push_back(m);
                ia.push_back(k);
                ib.push_back(k);
                if (rb.rank() > 1) ib.push_back(n);
                const Val &x = ra.get(ia), &y = rb.get(ib);
                terms.push_back(binary(Bin::kMul, x, y, t));
                overflow = overflow || (x.finite() && y.finite() && !terms.back().finite());
              }
              // A BLAS that fuses multiply and add (FMA) never rounds an overflowing product to inf.
              out.push_back(overflow ? kUnknown : sum_of(terms, t));
            }
        });
        ref = fresh(s, t, out, ra.requires_grad || rb.requires_grad);
      }
    }
    produce("matmul(" + desc(a) + ", " + desc(b) + ")", ref, [&] { return tg::matmul(a.v, b.v); });
  }

  void step_softmax(Reader& in) {
    const bool log = in.u8() & 1;
    Entry x;
    if (!pick(in, &x)) return;
    const int64_t dim = in.dim();
    const DType t = x.r->dtype();
    int64_t w = 0;
    Ref ref;
    if (wrap(dim, x.r->rank(), &w)) {
      std::vector<Val> out(size_t(x.r->numel()));
      rows(*x.r, w, [&](const std::vector<Val>& row, const std::vector<int64_t>& where) {
        const std::vector<Val> y = softmax_row(row, log, t);
        for (size_t j = 0; j < y.size(); ++j) out[size_t(where[j])] = y[j];
      });
      ref = fresh(x.r->shape, t, out, x.r->requires_grad);
    }
    produce(std::string(log ? "log_softmax(" : "softmax(") + desc(x) + ", " + std::to_string(dim) + ")", ref,
            [&] { return log ? tg::log_softmax(x.v, dim) : tg::softmax(x.v, dim); });
  }

  void step_where(Reader& in) {
    Entry c, a, b;
    if (!pick(in, &c) || !pick(in, &a) || !pick(in, &b)) return;
    const std::string what = "where(" + desc(c) + ", " + desc(a) + ", " + desc(b) + ")";
    if (c.r->requires_grad) {   // the condition gets no gradient
      run(new_name() + " = " + what, Expect::kAutograd, [&] { (void)tg::where(c.v, a.v, b.v); });
      return;
    }
    Shape s1, s;
    Ref ref;
    // tg's where takes a bool condition: c != 0 (NaN counts as true, as where_of models); a and b in
    // their result type.
    const DType t = result_of(*a.r, *b.r), ta = a.r->dtype(), tb = b.r->dtype();
    if (broadcast(c.r->shape, a.r->shape, &s1) && broadcast(s1, b.r->shape, &s))
      ref = elementwise({c.r.get(), a.r.get(), b.r.get()}, s, t, a.r->requires_grad || b.r->requires_grad,
                        [&](const std::vector<Val>& x) { return where_of(x[0], cast(x[1], ta, t), cast(x[2], tb, t)); });
    produce(what, ref, [&] { return tg::where(c.v != 0.0, a.v, b.v); });
  }

  static Shape read_target(Reader& in) {
    Shape s(in.u8() % 5);
    for (auto& d : s) d = kTargetSizes[in.u8() % 8];
    return s;
  }

  /// reshape's result: a view when the strides allow one, else a copy (marked as a view all the same,
  /// as reshaping views are).
  static Ref reshaped(const RTensor& x, const Shape& s) {
    Shape st;
    if (view_strides(x, s, &st)) return view_of(x, s, st, x.offset);
    Ref r = fresh(s, x.dtype(), x.values(), x.requires_grad);
    r->is_view = x.requires_grad || x.is_view;
    return r;
  }

  /// View op x args (op % 15):
  ///   0 transpose d0 d1 | 1 t | 2 permute h, then (h < 0xC0) a byte of Lehmer code for a permutation of
  ///   the rank's dims, dim i negative when bit i of h is set, else (h % 7) dim bytes | 3 expand target |
  ///   4 reshape target | 5 view target | 6 squeeze | 7 squeeze dim | 8 unsqueeze dim | 9 flatten start
  ///   end | 10 narrow dim start length | 11 select dim index | 12 detach | 13 contiguous |
  ///   14 to dtype (& 1: float64)
  /// A target is a rank byte (% 5) and one size byte per dim (kTargetSizes). narrow/select arguments
  /// are int8 % 6; narrow and select are RawTensor views, wrapped as a new Tensor without grad.
  void step_view(Reader& in) {
    const int op = in.u8() % 15;
    Entry x;
    if (!pick(in, &x)) return;
    const RTensor& r = *x.r;
    const int64_t rank = r.rank();
    Ref ref;   // stays null when the reference says the call is invalid
    std::string what;
    std::function<Tensor()> call;
    switch (op) {
      case 0: {
        const int64_t d0 = in.dim(), d1 = in.dim();
        int64_t w0 = 0, w1 = 0;
        if (wrap(d0, rank, &w0) && wrap(d1, rank, &w1)) {
          Shape s = r.shape, st = r.strides;
          if (rank) {
            std::swap(s[size_t(w0)], s[size_t(w1)]);
            std::swap(st[size_t(w0)], st[size_t(w1)]);
          }
          ref = view_of(r, s, st, r.offset);
        }
        what = "transpose(" + desc(x) + ", " + std::to_string(d0) + ", " + std::to_string(d1) + ")";
        call = [=] { return tg::transpose(x.v, d0, d1); };
        break;
      }
      case 1: {
        if (rank == 2) ref = view_of(r, {r.shape[1], r.shape[0]}, {r.strides[1], r.strides[0]}, r.offset);
        else if (rank < 2) ref = view_of(r, r.shape, r.strides, r.offset);
        what = "t(" + desc(x) + ")";
        call = [=] { return tg::t(x.v); };
        break;
      }
      case 2: {
        const uint8_t h = in.u8();
        std::vector<int64_t> dims;
        if (h < 0xC0) {
          std::vector<int64_t> left(static_cast<size_t>(rank));
          for (int64_t i = 0; i < rank; ++i) left[size_t(i)] = i;
          unsigned code = in.u8();
          for (int64_t i = 0; i < rank; ++i) {
            const size_t k = code % left.size();
            code /= unsigned(left.size());
            dims.push_back(left[k] - (((h >> i) & 1) ? rank : 0));
            left.erase(left.begin() + int64_t(k));
          }
        } else {
          dims.resize(h % 7);
          for (auto& d : dims) d = in.dim();
        }
        if (int64_t(dims.size()) == rank) {
          Shape s, st;
          std::vector<bool> seen(size_t(std::max<int64_t>(rank, 1)), false);
          bool ok = true;
          for (int64_t d : dims) {
            int64_t w = 0;
            if (!wrap(d, rank, &w) || seen[size_t(w)]) {
              ok = false;
              break;
            }
            seen[size_t(w)] = true;
            s.push_back(r.shape[size_t(w)]);
            st.push_back(r.strides[size_t(w)]);
          }
          if (ok) ref = view_of(r, s, st, r.offset);
        }
        what = "permute(" + desc(x) + ", " + tg::shape_str(dims) + ")";
        call = [=] { return tg::permute(x.v, dims); };
        break;
      }
      case 3: {
        const Shape target = read_target(in);
        if (target.size() >= r.shape.size()) {
          const size_t lead = target.size() - r.shape.size();
          Shape s(target.size()), st(target.size());
          bool ok = true;
          for (size_t i = 0; i < target.size() && ok; ++i) {
            if (i < lead) {
              ok = target[i] >= 0;
              s[i] = target[i];
              st[i] = 0;
              continue;
            }
            const int64_t have = r.shape[i - lead];
            const int64_t want = target[i] == -1 ? have : target[i];
            ok = want >= 0 && (want == have || have == 1);
            s[i] = want;
            st[i] = want == have ? r.strides[i - lead] : 0;
          }
          if (ok) ref = view_of(r, s, st, r.offset);
        }
        what = "expand(" + desc(x) + ", " + tg::shape_str(target) + ")";
        call = [=] { return tg::expand(x.v, target); };
        break;
      }
      case 4:
      case 5: {
        const Shape target = read_target(in);
        Shape s, st;
        if (reshape_target(r.numel(), target, &s)) {
          if (op == 4) ref = reshaped(r, s);
          else if (view_strides(r, s, &st)) ref = view_of(r, s, st, r.offset);
        }
        what = std::string(op == 4 ? "reshape(" : "view(") + desc(x) + ", " + tg::shape_str(target) + ")";
        call = [=] { return op == 4 ? tg::reshape(x.v, target) : tg::view(x.v, target); };
        break;
      }
      case 6: {
        Shape s, st;
        for (size_t d = 0; d < r.shape.size(); ++d)
          if (r.shape[d] != 1) {
            s.push_back(r.shape[d]);
            st.push_back(r.strides[d]);
          }
        ref = view_of(r, s, st, r.offset);
        what = "squeeze(" + desc(x) + ")";
        call = [=] { return tg::squeeze(x.v); };
        break;
      }
      case 7:
      case 8: {
        const int64_t dim = in.dim();
        int64_t w = 0;
        Shape s = r.shape, st = r.strides;
        if (op == 7 && wrap(dim, rank, &w)) {
          if (rank && s[size_t(w)] == 1) {
            s.erase(s.begin() + w);
            st.erase(st.begin() + w);
          }
          ref = view_of(r, s, st, r.offset);
        } else if (op == 8 && wrap(dim, rank + 1, &w)) {
          s.insert(s.begin() + w, 1);
          st.insert(st.begin() + w, 1);
          ref = view_of(r, s, st, r.offset);
        }
        what = std::string(op == 7 ? "squeeze(" : "unsqueeze(") + desc(x) + ", " + std::to_string(dim) + ")";
        call = [=] { return op == 7 ? tg::squeeze(x.v, dim) : tg::unsqueeze(x.v, dim); };
        break;
      }
      case 9: {
        const int64_t start = in.dim(), end = in.dim();
        int64_t ws = 0, we = 0;
        if (rank == 0) {
          ref = reshaped(r, {1});
        } else if (wrap(start, rank, &ws) && wrap(end, rank, &we) && ws <= we) {
          Shape s(r.shape.begin(), r.shape.begin() + ws);
          s.push_back(num_elements(Shape(r.shape.begin() + ws, r.shape.begin() + we + 1)));
          s.insert(s.end(), r.shape.begin() + we + 1, r.shape.end());
          ref = reshaped(r, s);
        }
        what = "flatten(" + desc(x) + ", " + std::to_string(start) + ", " + std::to_string(end) + ")";
        call = [=] { return tg::flatten(x.v, start, end); };
        break;
      }
      case 10:
      case 11: {
        const int64_t dim = in.dim(), a = in.small(), len = op == 10 ? in.small() : 0;
        int64_t w = 0;
        if (rank > 0 && wrap(dim, rank, &w)) {
          const int64_t size = r.shape[size_t(w)];
          Shape s = r.shape, st = r.strides;
          if (op == 10 && a >= 0 && len >= 0 && a + len <= size) {
            s[size_t(w)] = len;
            ref = alias_leaf(r, s, st, r.offset + a * st[size_t(w)]);
          } else if (op == 11 && a >= -size && a < size) {
            const int64_t i = a < 0 ? a + size : a;
            s.erase(s.begin() + w);
            st.erase(st.begin() + w);
            ref = alias_leaf(r, s, st, r.offset + i * r.strides[size_t(w)]);
          }
        }
        what = op == 10 ? "Tensor(narrow(" + desc(x) + ", " + std::to_string(dim) + ", " + std::to_string(a) + ", " +
                              std::to_string(len) + "))"
                        : "Tensor(select(" + desc(x) + ", " + std::to_string(dim) + ", " + std::to_string(a) + "))";
        call = [=] { return Tensor(op == 10 ? x.v.data().narrow(dim, a, len) : x.v.data().select(dim, a)); };
        break;
      }
      case 12: {
        ref = alias_leaf(r, r.shape, r.strides, r.offset);
        what = "detach(" + desc(x) + ")";
        call = [=] { return x.v.detach(); };
        break;
      }
      case 13: {
        if (is_contiguous(r)) {
          ref = x.r;   // x itself: the same Tensor
        } else {
          ref = fresh(r.shape, r.dtype(), r.values(), r.requires_grad);
        }
        what = "contiguous(" + desc(x) + ")";
        call = [=] { return tg::contiguous(x.v); };
        break;
      }
      default: {
        const DType to = (in.u8() & 1) ? tg::kFloat64 : tg::kFloat32;
        if (to == r.dtype()) {
          ref = x.r;   // x itself
        } else {
          std::vector<Val> v = r.values();
          for (auto& e : v) e = cast(e, r.dtype(), to);
          ref = fresh(r.shape, to, v, r.requires_grad);
        }
        what = "to(" + desc(x) + ", " + dtype_str(to) + ")";
        call = [=] { return x.v.to(to); };
        break;
      }
    }
    produce(what, ref, call);
  }

  enum Inplace { kAdd_, kSub_, kMul_, kAddScalar_, kMulScalar_, kFill_, kZero_, kCopy_ };

  void step_inplace(Reader& in) {
    static const char* const names[8] = {"add_", "sub_", "mul_", "add_", "mul_", "fill_", "zero_", "copy_"};
    const int op = in.u8() % 8;
    const bool no_grad = in.u8() & 1;
    Entry self, other;
    if (!pick(in, &self)) return;
    const bool tensor_op = op == kAdd_ || op == kSub_ || op == kMul_ || op == kCopy_;
    double scalar = 0;
    if (tensor_op && !pick(in, &other)) return;
    if (op == kAddScalar_ || op == kMulScalar_ || op == kFill_) scalar = decode_value(in.u8());
    RTensor& s = *self.r;
    const DType t = s.dtype();

    // What tg must do, in its order: the autograd refusal, then dtypes and shapes, then overlaps.
    Expect expect = Expect::kOk;
    Overlap internal = Overlap::kNone, pair = Overlap::kNone;
    if (!no_grad && s.requires_grad && (s.is_leaf || s.is_view)) {
      expect = Expect::kAutograd;
    } else {
      Shape b;
      bool valid = true;
      // any floating result casts to a floating self (prim::can_cast): only the shapes can refuse
      if (tensor_op) valid = broadcast(s.shape, other.r->shape, &b) && b == s.shape;
      internal = internal_overlap(s);
      if (tensor_op) pair = pair_overlap(s, *other.r);
      if (!valid || internal == Overlap::kRefuse || pair == Overlap::kRefuse) expect = Expect::kError;
      else if (pair == Overlap::kEither) expect = Expect::kEither;
    }

    std::string what = (no_grad ? "[no_grad] " : "") + desc(self) + "." + names[op] + "(";
    if (tensor_op) what += desc(other);
    else if (op != kZero_) what += num(scalar);
    what += ")";
    const bool done = run(what, expect, [&] {
      std::optional<tg::NoGradGuard> guard;
      if (no_grad) guard.emplace();
      Tensor v = self.v;
      switch (op) {
        case kAdd_: v.add_(other.v); break;
        case kSub_: v.sub_(other.v); break;
        case kMul_: v.mul_(other.v); break;
        case kAddScalar_: v.add_(scalar); break;
        case kMulScalar_: v.mul_(scalar); break;
        case kFill_: v.fill_(scalar); break;
        case kZero_: v.zero_(); break;
        default: v.copy_(other.v); break;
      }
    });
    if (!done) return;

    // Every element's new value from the old values (all read before any write), then the writes.
    // A tensor operand: computed in the result type of (self, other), then rounded into self's dtype.
    const DType r = tensor_op && op != kCopy_ ? result_of(s, *other.r) : t;
    const DType to = tensor_op ? other.r->dtype() : t;
    std::vector<Val> next;
    for_each_index(s.shape, [&](const std::vector<int64_t>& idx) {
      const Val old = cast(s.get(idx), t, r);
      const Val o = tensor_op ? cast(other.r->get(idx), to, op == kCopy_ ? to : r) : exact(scalar);
      switch (op) {
        case kAdd_:
        case kAddScalar_: next.push_back(cast(binary(Bin::kAdd, old, o, r), r, t)); break;
        case kSub_: next.push_back(cast(binary(Bin::kSub, old, o, r), r, t)); break;
        case kMul_:
        case kMulScalar_: next.push_back(cast(binary(Bin::kMul, old, o, r), r, t)); break;
        case kFill_: next.push_back(o); break;
        case kZero_: next.push_back(exact(0)); break;
        default: next.push_back(cast(o, other.r->dtype(), t)); break;
      }
    });
    const bool unspecified = internal == Overlap::kUnspecified || pair == Overlap::kUnspecified;
    const std::vector<int64_t> off = s.offsets();
    for (size_t i = 0; i < off.size(); ++i) s.st->el[size_t(off[i])] = unspecified ? kUnknown : next[i];
    if (unspecified) note("  (an overlap tg cannot judge: the written elements are no longer compared)");
    // rebase: with grad mode on, self now requires grad when it or the other operand did.
    if (!no_grad && (s.requires_grad || (tensor_op && other.r->requires_grad))) {
      s.requires_grad = true;
      s.is_leaf = false;
    }
  }

  void step_backward(Reader& in) {
    Entry x;
    if (!pick(in, &x)) return;
    const bool check_finite = tame_;
    const Expect expect = x.r->requires_grad ? Expect::kOkOrAutograd : Expect::kAutograd;
    if (!run("sum(" + desc(x) + ").backward()", expect, [&] { tg::sum(x.v).backward(); })) return;
    for (const Entry& e : pool_) {
      if (!e.r->requires_grad || !e.r->is_leaf) continue;
      const Tensor g = e.v.grad();
      if (!g.defined()) continue;
      if (g.shape() != e.r->shape || g.dtype() != e.r->dtype())
        fail("the gradient of " + desc(e) + " is " + dtype_str(g.dtype()) + tg::shape_str(g.shape()));
      if (!check_finite) continue;
      for (double v : g.to_vector<double>())
        if (!std::isfinite(v)) fail("the gradient of " + desc(e) + " holds " + num(v) + " in a program of tame values");
    }
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Reader in{data, size};
  try {
    Program program;
    while (program.decode_step(in)) {
    }
  } catch (const std::exception& e) {   // the steps catch tg::Error themselves; anything else is unexpected
    fuzz::bug(std::string("unexpected exception: ") + e.what());
  }
  return 0;
}
