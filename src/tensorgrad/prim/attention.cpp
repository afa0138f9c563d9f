// prim/attention.cpp: the graph-free fused attention of prim/prim.h: dtype and device
// checks, operands read in place where their strides allow (Note [Attention operands in place]),
// allocation of the outputs and of the saved log-sum-exp, and the
// backend call (the host reference in backend/cpu/attention.cpp, the kernels in backend/cuda/attention.cu).
// The shapes, the mask's strides and the choice between this and the composed path are the op's, in
// ops/attention.cpp (Note [Fused attention]).
#include <optional>
#include <utility>
#include <vector>

#include "tensorgrad/prim/prim.h"

namespace tg {
namespace prim {

std::optional<AttentionRows> attention_rows(const RawTensor& t) {
  const int64_t nd = t.dim();
  if (nd < 2) return std::nullopt;
  std::vector<std::pair<int64_t, int64_t>> dims;   // (size, stride) of the batch dims, outer to inner
  for (int64_t d = 0; d < nd - 2; ++d) {
    const int64_t size = t.shape()[d], stride = t.strides()[d];
    if (size == 1) continue;
    if (!dims.empty() && dims.back().second == stride * size) {   // the dim before steps over this one
      dims.back() = {dims.back().first * size, stride};
      continue;
    }
    dims.emplace_back(size, stride);
  }
  if (dims.size() > 2) return std::nullopt;
  AttentionRows r;
  r.stride_row = t.strides()[nd - 2];
  if (dims.size() == 2) {
    r.inner = dims[1].first;
    r.stride_outer = dims[0].second;
    r.stride_inner = dims[1].second;
  } else if (dims.size() == 1) {
    r.inner = dims[0].first;
    r.stride_inner = dims[0].second;
  }
  return r;
}

namespace {

// Note [Attention operands in place]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The fused kernels read q, k, v and dout, and write out, through AttentionRows: each operand is
// (batch..., rows, width) with contiguous rows, and its batch dims, after dropping those of size 1 and
// merging those that step over each other exactly, must come down to at most two strides. That holds
// for contiguous tensors, for expanded (broadcast) batch dims, and for the heads of a transformer's
// packed projection: qkv(x).reshape(B, L, 3, H, E).permute(2, 0, 3, 1, 4).select(0, i) is (B, H, L, E)
// with strides (3 L H E, E, 3 H E, 1), read in place instead of copied. Where the batch does not fold,
// or a row is not contiguous, the operand is copied once to a contiguous tensor first. out is written
// with the heads innermost, as PyTorch's fused kernels write theirs: for batch dims (..., H), out's
// memory is (..., L, H, Ev) and the result is its (..., H, L, Ev) view, so that the usual
// y.transpose(1, 2).reshape(B, L, H Ev) that merges the heads again is a view, not a copy. On the GPU
// this saves a transformer block five copies (q, k and v, the merged heads, and the incoming gradient,
// which arrives in out's layout).

/// How the rows of t (batch..., rows, width) lie, when its batch folds into two strides and its rows
/// are contiguous; std::nullopt otherwise.
std::optional<AttentionRows> rows_in_place(const RawTensor& t) {
  if (t.dim() < 2 || (t.shape()[t.dim() - 1] > 1 && t.strides()[t.dim() - 1] != 1)) return std::nullopt;
  return attention_rows(t);
}

/// t itself when its rows can be read in place, else a contiguous copy; sets rows.
RawTensor in_place_or_copy(const RawTensor& t, AttentionRows& rows) {
  if (const std::optional<AttentionRows> r = rows_in_place(t)) {
    rows = *r;
    return t;
  }
  const RawTensor c = t.contiguous();
  rows = *rows_in_place(c);
  return c;
}

/// The product of the batch dims of t (batch..., rows, width).
int64_t batch_of(const RawTensor& t) {
  int64_t b = 1;
  for (int64_t d = 0; d + 2 < t.dim(); ++d) b *= t.shape()[d];
  return b;
}

/// Shape (batch..., rows, width) of t with its last two dims replaced.
Shape with_rows(const RawTensor& t, int64_t rows, int64_t width) {
  Shape s(t.shape().begin(), t.shape().end() - 2);
  s.push_back(rows);
  s.push_back(width);
  return s;
}

void check_operands(const char* op, const RawTensor& q, const RawTensor& k, const RawTensor& v, const AttentionArgs& a) {
  check_same_device(op, q, k);
  check_same_device(op, q, v);
  check_same_dtype(op, q, k);
  check_same_dtype(op, q, v);
  check_floating(op, q);
  // no keys or no width: the composed path's answers (zeros; the mean of v) are the op's business
  TG_CHECK(a.S > 0 && a.E > 0, ShapeError, op, ": fused attention needs at least one key and E > 0, got S = ", a.S,
           " and E = ", a.E);
  const bool ok = q.dim() >= 2 && q.dim() == k.dim() && q.dim() == v.dim() && batch_of(q) == a.B &&
                  with_rows(q, a.L, a.E) == q.shape() && with_rows(q, a.S, a.E) == k.shape() &&
                  with_rows(q, a.S, a.Ev) == v.shape();
  TG_CHECK(ok, ShapeError, op, ": fused attention expects q (batch..., L, E), k (batch..., S, E), v (batch..., S, Ev) ",
           "with the same batch dims, B = ", a.B, ", L = ", a.L, ", S = ", a.S, ", E = ", a.E, ", Ev = ", a.Ev, ", got ",
           shape_str(q.shape()), ", ", shape_str(k.shape()), " and ", shape_str(v.shape()));
  if (a.mask.defined()) {
    check_same_device(op, q, a.mask);
    TG_CHECK(a.mask.dtype() == kBool || a.mask.dtype() == q.dtype(), DTypeError, op,
             ": fused attention expects a bool mask or one of the query's dtype, got ", dtype_name(a.mask.dtype()));
  }
}
}  // namespace

DType attention_lse_dtype(DType dtype) { return dtype == kFloat64 ? kFloat64 : kFloat32; }

Attention attention(const RawTensor& q, const RawTensor& k, const RawTensor& v, const AttentionArgs& args) {
  const char* op = "scaled_dot_product_attention";
  check_operands(op, q, k, v, args);
  AttentionArgs a = args;
  const RawTensor qi = in_place_or_copy(q, a.q_rows), ki = in_place_or_copy(k, a.k_rows),
                  vi = in_place_or_copy(v, a.v_rows);
  Attention r;
  // out with the last batch dim (the heads) innermost: Note [Attention operands in place]
  const int64_t nd = q.dim();
  if (nd >= 4) {
    Shape memory = with_rows(q, a.L, a.Ev);
    std::swap(memory[static_cast<std::size_t>(nd - 3)], memory[static_cast<std::size_t>(nd - 2)]);
    r.out = RawTensor::empty(memory, q.dtype(), q.device()).transpose(nd - 3, nd - 2);
  } else {
    r.out = RawTensor::empty(with_rows(q, a.L, a.Ev), q.dtype(), q.device());
  }
  a.out_rows = *rows_in_place(r.out);
  r.lse = RawTensor::empty({a.B, a.L}, attention_lse_dtype(q.dtype()), q.device());
  if (r.out.numel() == 0) return r;
  backend_for(q.device()).attention(qi, ki, vi, a, r.out, r.lse);
  return r;
}

AttentionGrads attention_backward(const RawTensor& q, const RawTensor& k, const RawTensor& v, const RawTensor& out,
                                  const RawTensor& lse, const RawTensor& dout, const AttentionArgs& args) {
  const char* op = "scaled_dot_product_attention";
  check_operands(op, q, k, v, args);
  check_same_dtype(op, q, dout);
  check_same_device(op, q, dout);
  TG_CHECK(out.shape() == with_rows(q, args.L, args.Ev) && dout.shape() == out.shape(), ShapeError, op,
           ": fused attention backward expects out and dout of shape ", shape_str(with_rows(q, args.L, args.Ev)),
           ", got ", shape_str(out.shape()), " and ", shape_str(dout.shape()));
  AttentionArgs a = args;
  const RawTensor qi = in_place_or_copy(q, a.q_rows), ki = in_place_or_copy(k, a.k_rows),
                  vi = in_place_or_copy(v, a.v_rows), oi = in_place_or_copy(out, a.out_rows),
                  gi = in_place_or_copy(dout, a.dout_rows);
  AttentionGrads g;
  g.dq = RawTensor::empty(q.shape(), q.dtype(), q.device());
  g.dk = RawTensor::empty(k.shape(), k.dtype(), k.device());
  g.dv = RawTensor::empty(v.shape(), v.dtype(), v.device());
  if (g.dq.numel() + g.dk.numel() + g.dv.numel() == 0) return g;
  backend_for(q.device()).attention_backward(qi, ki, vi, oi, lse.contiguous(), gi, a, g.dq, g.dk, g.dv);
  return g;
}

}  // namespace prim
}  // namespace tg
