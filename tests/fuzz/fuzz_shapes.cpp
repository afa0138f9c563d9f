// tests/fuzz/fuzz_shapes.cpp: libFuzzer target for shape handling in ops/ (and core/raw_tensor.cpp views).
// The input bytes pick an op and its operands: ranks 0-4, sizes including 0, 1, 2^31 and 2^62 (huge
// ones only as zero-stride expanded views, never allocated), contiguous, transposed or expanded
// layouts, dims and target shapes including -1, negative and out-of-range values. An independent
// reference below computes the result shape or "error"; the op must agree: a result of exactly that
// shape (whose elements can all be read) or a tg::Error. Crashes, sanitizer reports, other exception
// types and disagreements abort. Nothing larger than kMaxElems elements is ever computed.
// Input format (the seed generator tests/fuzz/make_corpus.cpp writes it): see decode() below.
#include <tensorgrad.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "fuzz_common.h"

namespace {

using tg::Shape;
using tg::Tensor;

constexpr int64_t kMaxElems = 4096;                 // the most elements an allocated operand or result holds
constexpr int64_t kBig = int64_t(1) << 31;
constexpr int64_t kHuge = int64_t(1) << 62;
// Operand sizes (byte % 8) and target-shape sizes (byte % 16) for reshape/view/expand/zeros.
constexpr int64_t kOperandSizes[8] = {0, 1, 2, 3, 5, 1, kBig, kHuge};
constexpr int64_t kTargetSizes[16] = {0, 1, 2, 3, 5, kBig, -1, kHuge, -2, 4, 6, 1, int64_t(1) << 32,
                                      std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min(), -1};

enum Op : uint8_t {
  kAdd, kMul, kMatmul, kSumAll, kSumDim, kMeanDim, kMaxAll, kMaxDim, kReshape, kView, kTranspose, kPermute,
  kExpand, kSqueeze, kSqueezeDim, kUnsqueeze, kCat, kIndexSelect, kGather, kSoftmax, kLogSoftmax,
  kCrossEntropy, kZeros, kFlatten, kNumOps
};
const char* const kOpNames[kNumOps] = {
    "add", "mul", "matmul", "sum", "sum(dim)", "mean(dim)", "max", "max(dim)", "reshape", "view", "transpose",
    "permute", "expand", "squeeze", "squeeze(dim)", "unsqueeze", "cat", "index_select", "gather", "softmax",
    "log_softmax", "cross_entropy", "zeros", "flatten"};

/// Reads the input front to back; past the end every byte is 0.
struct Reader {
  const uint8_t* p;
  size_t n, i = 0;
  uint8_t u8() { return i < n ? p[i++] : 0; }
  /// A dim argument: mostly in [-6, 6], sometimes the int64 extremes.
  int64_t dim() {
    const uint8_t b = u8();
    if (b == 0x80) return std::numeric_limits<int64_t>::min();
    if (b == 0x7f) return std::numeric_limits<int64_t>::max();
    return int64_t(int8_t(b)) % 7;
  }
};

// ------------------------------------------------------------------------------------------------
// The reference: exact shape arithmetic, written from the PyTorch semantics, independent of tg.

struct Ref {
  bool error = false;
  Shape shape;
  bool huge = false;   // valid, but the op would compute an intermediate of more than kMaxElems elements
  static Ref fail() { return Ref{true, {}, false}; }
  static Ref ok(Shape s) { return Ref{false, std::move(s), false}; }
};

/// Exact element count; false for a negative size or more than int64 can count. Zero wins over overflow.
bool exact_numel(const Shape& s, int64_t* out) {
  for (int64_t d : s)
    if (d < 0) return false;
  for (int64_t d : s)
    if (d == 0) {
      *out = 0;
      return true;
    }
  int64_t n = 1;
  for (int64_t d : s)
    if (__builtin_mul_overflow(n, d, &n)) return false;
  *out = n;
  return true;
}

int64_t numel_or_max(const Shape& s) {
  int64_t n = 0;
  return exact_numel(s, &n) ? n : std::numeric_limits<int64_t>::max();
}

bool wrap(int64_t dim, int64_t rank, int64_t* out) {
  const int64_t r = std::max<int64_t>(rank, 1);
  if (dim < -r || dim >= r) return false;
  *out = dim < 0 ? dim + r : dim;
  return true;
}

bool floating(tg::DType t) { return t == tg::kFloat32 || t == tg::kFloat64; }

Ref ref_broadcast(const Shape& a, const Shape& b) {
  const size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t da = i + a.size() < n ? 1 : a[i + a.size() - n];
    const int64_t db = i + b.size() < n ? 1 : b[i + b.size() - n];
    if (da != db && da != 1 && db != 1) return Ref::fail();
    out[i] = da == 1 ? db : da;
  }
  return Ref::ok(out);
}

/// torch.matmul: 1-D operands get a dim of 1 that the result drops, the batch dims broadcast. Refused
/// as ops/linalg.cpp refuses: element counts beyond int64 (a 0 anywhere counts 0), GEMM dims beyond int
/// (the rows being the batch times M where they are folded).
Ref ref_matmul(const Shape& a, const Shape& b) {
  const int64_t kIntMax = std::numeric_limits<int>::max();
  if ((a.size() == 2 || a.size() == 3) && (b.size() == 2 || b.size() == 3)) {   // one GEMM, as prim::matmul checks it
    const int64_t M = a[a.size() - 2], K = a.back(), K2 = b[b.size() - 2], N = b.back();
    if (K != K2) return Ref::fail();
    const int64_t Ba = a.size() == 3 ? a[0] : 1, Bb = b.size() == 3 ? b[0] : 1;
    if (Ba != Bb && Ba != 1 && Bb != 1) return Ref::fail();
    if (M > kIntMax || N > kIntMax || K > kIntMax) return Ref::fail();
    if (a.size() == 3 || b.size() == 3) return Ref::ok({Ba == 1 ? Bb : Ba, M, N});   // a batch of 1 broadcasts
    return Ref::ok({M, N});
  }
  if (a.empty() || b.empty()) return Ref::fail();
  if (a.size() == 1 && b.size() == 1) return a[0] == b[0] && a[0] <= kIntMax ? Ref::ok({}) : Ref::fail();
  Shape A = a, B = b;
  if (a.size() == 1) A.insert(A.begin(), 1);
  if (b.size() == 1) B.push_back(1);
  const int64_t M = A[A.size() - 2], K = A.back(), K2 = B[B.size() - 2], N = B.back();
  if (K != K2) return Ref::fail();
  const Shape b_batch(B.begin(), B.end() - 2);
  const Ref batch = ref_broadcast(Shape(A.begin(), A.end() - 2), b_batch);
  if (batch.error) return batch;
  int64_t count = 0, rows = 0, b_count = 0, n = 0;
  if (!exact_numel(batch.shape, &count) || !exact_numel({count, M}, &rows) || !exact_numel({count, M, K}, &n) ||
      !exact_numel({count, K, N}, &n) || !exact_numel({count, M, N}, &n))
    return Ref::fail();
  // folded: a (above 3-D) times a vector, or times a b without batch entries
  const bool fold = b.size() == 1 ? a.size() > 3 : exact_numel(b_batch, &b_count) && b_count == 1;
  if ((fold ? rows : M) > kIntMax || N > kIntMax || K > kIntMax) return Ref::fail();
  // an operand with batch entries of its own but not the whole batch is expanded to it and copied
  const Shape a_batch(A.begin(), A.end() - 2);
  int64_t a_count = 0, a_expanded = 0, b_expanded = 0;
  const bool a_copied = !(exact_numel(a_batch, &a_count) && a_count == 1) && a_batch != batch.shape;
  const bool b_copied = !fold && b_batch != batch.shape;
  exact_numel({count, M, K}, &a_expanded);
  exact_numel({count, K, N}, &b_expanded);
  Shape out = batch.shape;
  if (a.size() > 1) out.push_back(M);
  if (b.size() > 1) out.push_back(N);
  Ref r = Ref::ok(out);
  r.huge = (a_copied && a_expanded > kMaxElems) || (b_copied && b_expanded > kMaxElems);
  return r;
}

Ref ref_reduce_dim(const Shape& s, int64_t dim, bool keepdim, bool needs_nonempty) {
  int64_t d = 0;
  if (!wrap(dim, int64_t(s.size()), &d)) return Ref::fail();
  if (s.empty()) return Ref::ok({});
  if (needs_nonempty && s[size_t(d)] == 0) return Ref::fail();
  Shape out = s;
  if (keepdim) out[size_t(d)] = 1;
  else out.erase(out.begin() + d);
  return Ref::ok(out);
}

/// reshape/view target against numel: one -1 inferred, everything else >= 0, same element count.
Ref ref_reshape(int64_t numel, const Shape& target) {
  int64_t infer = -1;
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] == -1) {
      if (infer >= 0) return Ref::fail();
      infer = int64_t(i);
    } else if (target[i] < 0) {
      return Ref::fail();
    }
  }
  Shape out = target;
  if (infer >= 0) {
    Shape rest = target;
    rest.erase(rest.begin() + infer);
    int64_t known = 0;
    if (!exact_numel(rest, &known) || known == 0 || numel % known != 0) return Ref::fail();
    out[size_t(infer)] = numel / known;
  }
  int64_t n = 0;
  if (!exact_numel(out, &n) || n != numel) return Ref::fail();
  return Ref::ok(out);
}

Ref ref_expand(const Shape& have, const Shape& target) {
  if (target.size() < have.size()) return Ref::fail();
  const size_t lead = target.size() - have.size();
  Shape out(target.size());
  for (size_t i = 0; i < target.size(); ++i) {
    if (i < lead) {
      if (target[i] < 0) return Ref::fail();
      out[i] = target[i];
      continue;
    }
    const int64_t h = have[i - lead];
    const int64_t want = target[i] == -1 ? h : target[i];
    if (want < 0 || (want != h && h != 1)) return Ref::fail();
    out[i] = want;
  }
  int64_t n = 0;
  if (!exact_numel(out, &n)) return Ref::fail();
  return Ref::ok(out);
}

Ref ref_zeros(const Shape& s, tg::DType dtype) {
  int64_t n = 0;
  if (!exact_numel(s, &n)) return Ref::fail();
  int64_t bytes = 0;
  if (__builtin_mul_overflow(n, int64_t(tg::dtype_size(dtype)), &bytes)) return Ref::fail();
  return Ref::ok(s);
}

// ------------------------------------------------------------------------------------------------
// Operands

struct Operand {
  Tensor v;      // what the op receives (a view of leaf, or leaf itself)
  Tensor leaf;   // requires grad when the operand does
  Shape shape;
};

std::string describe(const Tensor& v) {
  std::ostringstream os;
  os << tg::dtype_name(v.dtype()) << tg::shape_str(v.shape()) << " strides " << tg::shape_str(v.data().strides());
  return os.str();
}

Tensor make_values(const Shape& shape, tg::DType dtype, bool grad) {
  if (dtype == tg::kInt64) return tg::randint(0, 5, shape);
  return tg::randn(shape, tg::TensorOptions().dtype(dtype).requires_grad(grad));
}

/// Operand header byte h: rank (h & 7) % 5, layout (h >> 3) % 4 (0 contiguous, 1 transposed, 2 expanded,
/// 3 a narrowed slice), dtype (h >> 5) % 4 (0, 1 float32, 2 float64, 3 int64), requires grad h >> 7;
/// then one size byte per dim (kOperandSizes) and one mask byte (dims kept at 1 before expanding).
/// Returns false when building the operand was itself the test (an expand that must fail did).
bool read_operand(Reader& in, Operand* out) {
  const uint8_t h = in.u8();
  const int64_t rank = (h & 7) % 5;
  const int layout = (h >> 3) % 4;
  const int dsel = (h >> 5) % 4;
  const tg::DType dtype = dsel == 2 ? tg::kFloat64 : dsel == 3 ? tg::kInt64 : tg::kFloat32;
  const bool grad = (h >> 7) && floating(dtype);
  Shape s(static_cast<size_t>(rank));
  for (auto& d : s) d = kOperandSizes[in.u8() % 8];
  const uint8_t mask = in.u8();
  out->shape = s;
  const int64_t n = numel_or_max(s);
  if (n <= kMaxElems && layout != 2) {
    if (layout == 1 && rank >= 2) {   // a transposed view of a fresh tensor
      Shape t = s;
      std::swap(t[size_t(rank - 1)], t[size_t(rank - 2)]);
      out->leaf = make_values(t, dtype, grad);
      out->v = out->leaf.transpose(-1, -2);
    } else if (layout == 3 && rank >= 1 && n > 0) {   // rows 1, 3, 5, ... of a taller tensor: an offset and a stride jump
      Shape t = s;
      t[0] = s[0] * 2 + 1;
      const tg::RawTensor wide = make_values(t, dtype, false).data();
      Shape st = wide.strides();
      const int64_t offset = st[0];
      st[0] *= 2;
      out->leaf = Tensor(wide.as_strided(s, st, offset), false);   // not differentiable: no grad to check
      out->v = out->leaf;
    } else {
      out->leaf = make_values(s, dtype, grad);
      out->v = out->leaf;
    }
    return true;
  }
  // Expanded: a small base (size 1 where the mask says so or the size is large) viewed at the full shape.
  Shape base = s;
  for (size_t i = 0; i < base.size(); ++i)
    if (((mask >> i) & 1) || base[i] > 5) base[i] = 1;
  out->leaf = make_values(base, dtype, grad);
  const Ref ref = ref_expand(base, s);
  try {
    out->v = out->leaf.expand(s);
  } catch (const tg::Error& e) {
    if (!ref.error) fuzz::bug(std::string("expand of the operand to ") + tg::shape_str(s) + " threw: " + e.what());
    return false;
  }
  if (ref.error) fuzz::bug("expand to " + tg::shape_str(s) + " succeeded but its element count overflows int64");
  if (out->v.shape() != s) fuzz::bug("expand gave " + tg::shape_str(out->v.shape()) + ", expected " + tg::shape_str(s));
  return true;
}

Shape read_target(Reader& in) {
  Shape s(static_cast<size_t>(in.u8() % 6));
  for (auto& d : s) d = kTargetSizes[in.u8() % 16];
  return s;
}

/// An int64 index tensor: header byte (rank (h % 3), length (h >> 2) % 4), values dim()-style in [-6, 6].
Tensor read_index(Reader& in, int64_t rank_hint, const Shape* like) {
  const uint8_t h = in.u8();
  Shape s;
  if (like) {   // gather: index of the input's rank (or one off), sizes near the input's
    const int64_t rank = (h & 3) == 3 ? rank_hint + 1 : rank_hint;
    for (int64_t i = 0; i < rank; ++i) {
      const int64_t base = i < int64_t(like->size()) ? std::min<int64_t>((*like)[size_t(i)], 3) : 1;
      s.push_back(std::max<int64_t>(0, base + int64_t(in.u8() % 3) - 1));
    }
  } else {
    const int64_t rank = h % 3;
    for (int64_t i = 0; i < rank; ++i) s.push_back((h >> 2) % 4);
  }
  const int64_t n = numel_or_max(s);
  std::vector<int64_t> values(static_cast<size_t>(n));
  for (auto& v : values) v = int64_t(int8_t(in.u8())) % 7;
  return tg::from_vector(values, s);
}

bool all_in(const Tensor& index, int64_t size) {
  for (int64_t v : index.to_vector<int64_t>())
    if (v < 0 || v >= size) return false;
  return true;
}

// ------------------------------------------------------------------------------------------------
// One case: the reference, the call, the comparison.

struct Case {
  Op op;
  std::vector<Operand> operands;
  std::string detail;   // op arguments, for the report
  bool metadata_only = false;   // views: safe to call on huge expanded operands

  std::string what() const {
    std::string s = std::string(kOpNames[op]) + "(";
    for (size_t i = 0; i < operands.size(); ++i) s += (i ? ", " : "") + describe(operands[i].v);
    return s + ")" + detail;
  }

  void run(const Ref& ref, const std::function<Tensor()>& call, bool view_may_fail = false) const {
    static const bool verbose = std::getenv("TG_FUZZ_VERBOSE") != nullptr;
    if (verbose) std::fprintf(stderr, "%s: reference %s\n", what().c_str(), ref.error ? "error" : tg::shape_str(ref.shape).c_str());
    // Huge results, or huge inputs that a non-view op would really walk, are skipped unless an error is expected.
    if (!ref.error) {
      bool skip = ref.huge || numel_or_max(ref.shape) > kMaxElems;
      for (const Operand& o : operands) skip = skip || (!metadata_only && o.v.numel() > kMaxElems);
      if (skip) {
        if (verbose) std::fprintf(stderr, "  skipped: too many elements to compute\n");
        return;
      }
    }
    Tensor out;
    try {
      out = call();
    } catch (const tg::Error& e) {
      if (verbose) std::fprintf(stderr, "  threw: %s\n", e.what());
      if (ref.error) return;
      if (view_may_fail && std::strstr(e.what(), "view size is not compatible")) return;
      fuzz::bug(what() + " threw but the reference gives " + tg::shape_str(ref.shape) + ": " + e.what());
    }
    if (ref.error) fuzz::bug(what() + " returned " + describe(out) + " but the reference says it is an error");
    if (out.shape() != ref.shape)
      fuzz::bug(what() + " returned shape " + tg::shape_str(out.shape()) + ", the reference " + tg::shape_str(ref.shape));
    check_result(out);
  }

  /// Reads every element (ASan catches strides or offsets that leave the storage) and backpropagates.
  void check_result(const Tensor& out) const {
    if (out.numel() > kMaxElems) return;
    (void)out.to_vector<double>();
    if (!out.requires_grad() || !floating(out.dtype())) return;
    // Operands with a huge dim (a huge expanded view, or a zero-size one with a 2^31 dim) are not
    // backpropagated: intermediate gradients (a matmul's before its batch sum) may be huge themselves.
    for (const Operand& o : operands)
      for (int64_t d : o.v.shape())
        if (d > kMaxElems) return;
    try {
      tg::sum(out).backward();
    } catch (const tg::Error& e) {
      fuzz::bug(what() + ": backward threw: " + e.what());
    }
    for (const Operand& o : operands) {
      if (!o.leaf.requires_grad()) continue;
      const Tensor g = o.leaf.grad();
      if (g.defined() && g.shape() != o.leaf.shape())
        fuzz::bug(what() + ": gradient of shape " + tg::shape_str(g.shape()) + " for a leaf of shape " +
                  tg::shape_str(o.leaf.shape()));
      if (g.defined()) (void)g.to_vector<double>();
    }
  }
};

/// Input: op byte (% kNumOps), then the op's operands (read_operand) and arguments, in the order read below.
void decode(Reader& in) {
  Case c;
  c.op = Op(in.u8() % kNumOps);
  auto operand = [&]() -> bool {
    Operand o;
    if (!read_operand(in, &o)) return false;
    c.operands.push_back(o);
    return true;
  };
  auto x = [&](size_t i) -> const Tensor& { return c.operands[i].v; };
  switch (c.op) {
    case kAdd:
    case kMul: {
      if (!operand() || !operand()) return;
      const Ref ref = ref_broadcast(x(0).shape(), x(1).shape());   // mixed dtypes promote (Note [Type promotion])
      c.run(ref, [&] { return c.op == kAdd ? tg::add(x(0), x(1)) : tg::mul(x(0), x(1)); });
      return;
    }
    case kMatmul: {
      if (!operand() || !operand()) return;
      Ref ref = ref_matmul(x(0).shape(), x(1).shape());
      if (x(0).dtype() != x(1).dtype() || !floating(x(0).dtype())) ref = Ref::fail();
      c.run(ref, [&] { return tg::matmul(x(0), x(1)); });
      return;
    }
    case kSumAll:
    case kMaxAll: {
      if (!operand()) return;
      Ref ref = Ref::ok({});
      if (c.op == kMaxAll && x(0).numel() == 0) ref = Ref::fail();
      c.run(ref, [&] { return c.op == kSumAll ? tg::sum(x(0)) : tg::max(x(0)); });
      return;
    }
    case kSumDim:
    case kMeanDim:
    case kMaxDim: {
      if (!operand()) return;
      const int64_t dim = in.dim();
      const bool keepdim = in.u8() & 1;
      c.detail = " dim " + std::to_string(dim) + (keepdim ? " keepdim" : "");
      Ref ref = ref_reduce_dim(x(0).shape(), dim, keepdim, c.op == kMaxDim);
      if (c.op == kMeanDim && !floating(x(0).dtype())) ref = Ref::fail();
      c.run(ref, [&]() -> Tensor {
        if (c.op == kSumDim) return tg::sum(x(0), dim, keepdim);
        if (c.op == kMeanDim) return tg::mean(x(0), dim, keepdim);
        return tg::max(x(0), dim, keepdim);   // the values of (values, indices)
      });
      return;
    }
    case kReshape:
    case kView: {
      if (!operand()) return;
      const Shape target = read_target(in);
      c.detail = " to " + tg::shape_str(target);
      const Ref ref = ref_reshape(x(0).numel(), target);
      if (c.op == kView) {
        c.metadata_only = true;
        c.run(ref, [&] { return tg::view(x(0), target); }, /*view_may_fail=*/!x(0).is_contiguous());
      } else {
        c.metadata_only = x(0).is_contiguous();   // otherwise reshape may copy
        c.run(ref, [&] { return tg::reshape(x(0), target); });
      }
      return;
    }
    case kTranspose: {
      if (!operand()) return;
      const int64_t d0 = in.dim(), d1 = in.dim();
      c.detail = " dims " + std::to_string(d0) + ", " + std::to_string(d1);
      const int64_t rank = x(0).dim();
      int64_t w0 = 0, w1 = 0;
      Ref ref = Ref::fail();
      if (wrap(d0, rank, &w0) && wrap(d1, rank, &w1)) {
        Shape s = x(0).shape();
        if (rank) std::swap(s[size_t(w0)], s[size_t(w1)]);
        ref = Ref::ok(s);
      }
      c.metadata_only = true;
      c.run(ref, [&] { return tg::transpose(x(0), d0, d1); });
      return;
    }
    case kPermute: {
      if (!operand()) return;
      std::vector<int64_t> dims(in.u8() % 6);
      for (auto& d : dims) d = in.dim();
      const int64_t rank = x(0).dim();
      Ref ref = Ref::ok({});
      std::vector<bool> seen(size_t(std::max<int64_t>(rank, 1)), false);
      if (int64_t(dims.size()) != rank) ref = Ref::fail();
      for (int64_t d : dims) {
        int64_t w = 0;
        if (ref.error || !wrap(d, rank, &w) || seen[size_t(w)]) {
          ref = Ref::fail();
          break;
        }
        seen[size_t(w)] = true;
        ref.shape.push_back(x(0).shape()[size_t(w)]);
      }
      c.metadata_only = true;
      c.run(ref, [&] { return tg::permute(x(0), dims); });
      return;
    }
    case kExpand: {
      if (!operand()) return;
      const Shape target = read_target(in);
      c.detail = " to " + tg::shape_str(target);
      c.metadata_only = true;
      c.run(ref_expand(x(0).shape(), target), [&] { return tg::expand(x(0), target); });
      return;
    }
    case kSqueeze: {
      if (!operand()) return;
      Shape s;
      for (int64_t d : x(0).shape())
        if (d != 1) s.push_back(d);
      c.metadata_only = true;
      c.run(Ref::ok(s), [&] { return tg::squeeze(x(0)); });
      return;
    }
    case kSqueezeDim:
    case kUnsqueeze: {
      if (!operand()) return;
      const int64_t dim = in.dim();
      c.detail = " dim " + std::to_string(dim);
      const int64_t rank = x(0).dim();
      Shape s = x(0).shape();
      int64_t w = 0;
      Ref ref = Ref::fail();
      if (c.op == kSqueezeDim && wrap(dim, rank, &w)) {
        if (rank && s[size_t(w)] == 1) s.erase(s.begin() + w);
        ref = Ref::ok(s);
      } else if (c.op == kUnsqueeze && wrap(dim, rank + 1, &w)) {
        s.insert(s.begin() + w, 1);
        ref = Ref::ok(s);
      }
      c.metadata_only = true;
      c.run(ref, [&] { return c.op == kSqueezeDim ? tg::squeeze(x(0), dim) : tg::unsqueeze(x(0), dim); });
      return;
    }
    case kCat: {
      const int count = 1 + in.u8() % 3;
      for (int i = 0; i < count; ++i)
        if (!operand()) return;
      const int64_t dim = in.dim();
      c.detail = " dim " + std::to_string(dim);
      const Shape& first = x(0).shape();
      int64_t w = 0;
      Ref ref = Ref::fail();
      if (!first.empty() && wrap(dim, int64_t(first.size()), &w)) {
        ref = Ref::ok(first);
        ref.shape[size_t(w)] = 0;
        for (const Operand& o : c.operands) {
          const Shape& s = o.v.shape();
          bool fits = s.size() == first.size();   // dtypes promote (Note [Type promotion])
          for (size_t d = 0; fits && d < s.size(); ++d) fits = int64_t(d) == w || s[d] == first[d];
          if (!fits || __builtin_add_overflow(ref.shape[size_t(w)], s[size_t(w)], &ref.shape[size_t(w)])) {
            ref = Ref::fail();
            break;
          }
        }
        tg::DType dtype = x(0).dtype();
        for (const Operand& o : c.operands) dtype = tg::promote_types(dtype, o.v.dtype());
        if (!ref.error && ref_zeros(ref.shape, dtype).error) ref = Ref::fail();   // too many elements or bytes
      }
      std::vector<Tensor> xs;
      for (const Operand& o : c.operands) xs.push_back(o.v);
      c.run(ref, [&] { return tg::cat(xs, dim); });
      return;
    }
    case kIndexSelect: {
      if (!operand()) return;
      const int64_t dim = in.dim();
      const Tensor index = read_index(in, 0, nullptr);
      c.detail = " dim " + std::to_string(dim) + " index " + describe(index);
      const int64_t rank = x(0).dim();
      int64_t w = 0;
      Ref ref = Ref::fail();
      if (index.dim() <= 1 && wrap(dim, rank, &w)) {
        const int64_t size = rank ? x(0).shape()[size_t(w)] : 1;
        Shape s = x(0).shape();
        if (rank) s[size_t(w)] = index.numel();
        if (all_in(index, size) && (rank > 0 || index.numel() == 1)) ref = Ref::ok(s);
      }
      c.run(ref, [&] { return tg::index_select(x(0), dim, index); });
      return;
    }
    case kGather: {
      if (!operand()) return;
      const int64_t dim = in.dim();
      const Tensor index = read_index(in, x(0).dim(), &x(0).shape());
      c.detail = " dim " + std::to_string(dim) + " index " + describe(index);
      const int64_t rank = x(0).dim();
      int64_t w = 0;
      Ref ref = Ref::fail();
      if (index.dim() == rank && wrap(dim, rank, &w)) {
        bool fits = true;
        for (int64_t d = 0; d < rank; ++d) fits = fits && (d == w || index.shape()[size_t(d)] <= x(0).shape()[size_t(d)]);
        if (fits && all_in(index, rank ? x(0).shape()[size_t(w)] : 1)) ref = Ref::ok(index.shape());
      }
      c.run(ref, [&] { return tg::gather(x(0), dim, index); });
      return;
    }
    case kSoftmax:
    case kLogSoftmax: {
      if (!operand()) return;
      const int64_t dim = in.dim();
      c.detail = " dim " + std::to_string(dim);
      int64_t w = 0;
      Ref ref = floating(x(0).dtype()) && wrap(dim, x(0).dim(), &w) ? Ref::ok(x(0).shape()) : Ref::fail();
      c.run(ref, [&] { return c.op == kSoftmax ? tg::softmax(x(0), dim) : tg::log_softmax(x(0), dim); });
      return;
    }
    case kCrossEntropy: {
      if (!operand()) return;
      const uint8_t h = in.u8();
      const tg::Reduction reduction = h % 3 == 0 ? tg::Reduction::Mean : h % 3 == 1 ? tg::Reduction::Sum : tg::Reduction::None;
      const Shape& ls = x(0).shape();
      const int64_t N = ls.empty() ? 1 : std::min<int64_t>(ls[0], 64);
      const int64_t len = std::max<int64_t>(0, N + int64_t((h >> 2) % 3) - 1);   // N - 1, N or N + 1
      std::vector<int64_t> values(static_cast<size_t>(len));
      for (auto& v : values) v = int64_t(int8_t(in.u8())) % 7;
      const Tensor target = tg::from_vector(values, {len});
      c.detail = " target " + describe(target);
      Ref ref = Ref::fail();
      if (floating(x(0).dtype()) && ls.size() == 2 && len == ls[0] && (ls[1] > 0 || ls[0] == 0) && all_in(target, ls[1]))
        ref = Ref::ok(reduction == tg::Reduction::None ? Shape{ls[0]} : Shape{});
      c.run(ref, [&] { return tg::cross_entropy(x(0), target, reduction); });
      return;
    }
    case kZeros: {
      const Shape target = read_target(in);
      const uint8_t dsel = in.u8() % 3;
      const tg::DType dtype = dsel == 0 ? tg::kFloat32 : dsel == 1 ? tg::kFloat64 : tg::kInt64;
      c.detail = " shape " + tg::shape_str(target);
      c.run(ref_zeros(target, dtype), [&] { return tg::zeros(target, tg::TensorOptions().dtype(dtype)); });
      return;
    }
    case kFlatten: {
      if (!operand()) return;
      const int64_t start = in.dim(), end = in.dim();
      c.detail = " dims " + std::to_string(start) + ".." + std::to_string(end);
      const Shape& s = x(0).shape();
      const int64_t rank = x(0).dim();
      int64_t ws = 0, we = 0;
      Ref ref = Ref::fail();
      if (rank == 0) {
        ref = Ref::ok({1});
      } else if (wrap(start, rank, &ws) && wrap(end, rank, &we) && ws <= we) {
        Shape mid(s.begin() + ws, s.begin() + we + 1), out(s.begin(), s.begin() + ws);
        int64_t n = 0;
        if (exact_numel(mid, &n)) {
          out.push_back(n);
          out.insert(out.end(), s.begin() + we + 1, s.end());
          ref = Ref::ok(out);
        }
      }
      c.metadata_only = x(0).is_contiguous();
      c.run(ref, [&] { return tg::flatten(x(0), start, end); });
      return;
    }
    case kNumOps: return;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tg::manual_seed(size);
  Reader in{data, size};
  try {
    decode(in);
  } catch (const std::exception& e) {   // building operands never fails; a tg::Error here is unexpected too
    fuzz::bug(std::string("unexpected exception: ") + e.what());
  }
  return 0;
}
