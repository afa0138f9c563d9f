// ops/attention.cpp: scaled_dot_product_attention. On CUDA it runs fused kernels (backend/cuda/attention.cu,
// through prim/attention.cpp) with its backward below; elsewhere, and for what the kernels do
// not cover, it is composed of differentiable ops (matmul, where, softmax, dropout), which need no
// backward of their own. Note [Fused attention] says which case takes which path. The module built
// on it, nn::MultiheadAttention, is in nn/attention.h.
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tensorgrad/ops/autocast.h"
#include "tensorgrad/autograd/grad_mode.h"
#include "tensorgrad/prim/prim.h"
#include "tensorgrad/ops/ops.h"
#include "tensorgrad/ops/rules.h"

namespace tg {

namespace {

/// The leading dims of x, all but the last two.
Shape batch_dims(const Tensor& x) { return Shape(x.shape().begin(), x.shape().end() - 2); }

/// batch followed by rows and cols.
Shape with_matrix(Shape batch, int64_t rows, int64_t cols) {
  batch.push_back(rows);
  batch.push_back(cols);
  return batch;
}

/// x (b..., r, c) broadcast to (batch..., r, c) and merged into one batch dim: (B, r, c). A view when
/// x already has the batch dims and is contiguous, else a copy.
Tensor as_batched(const Tensor& x, const Shape& batch, int64_t B) {
  const int64_t r = x.size(-2), c = x.size(-1);
  return reshape(expand(x, with_matrix(batch, r, c)), {B, r, c});
}

// Note [Fused attention]
// ~~~~~~~~~~~~~~~~~~~~~~~
// On a CUDA device scaled_dot_product_attention runs one fused forward kernel (online softmax over
// tiles of 32 keys: a running max and sum per query row, so the (L, S) scores never reach global
// memory; the row's log-sum-exp is saved) and a fused backward (the probabilities recomputed from q,
// k and that log-sum-exp: one kernel for dq, one for dk and dv, no atomics, so it is deterministic),
// accumulating in float32 for float16/bfloat16 inputs (float64 for float64). It covers is_causal,
// scale, and a bool or additive float mask that broadcasts as the composed path's does, read in place
// through its strides when its batch dims fold into two strides (any (L, S), (N, 1, L, S), (N, H, 1,
// S), ... mask), else copied once to a contiguous (B, L, S) mask. The composed path runs instead:
//   - on the CPU (BLAS matrix products are fast there; backend/cpu/attention.cpp is the fused kernels'
//     host reference, reached through prim::attention, for tests),
//   - with dropout_p > 0: the composed path's dropout mask is drawn over the materialised (B..., L, S)
//     probabilities, which a kernel that never materialises them cannot reproduce,
//   - when a float attn_mask requires grad (the fused backward gives no mask gradient),
//   - for a head dim E or Ev above fused_attention_max_dim (128, 64 for float64: the kernels' tiles
//     live in static shared memory), and for zero-size inputs.
// Under autocast the fused path takes q, k, v (and a float mask) cast to the autocast dtype, as PyTorch
// lists scaled_dot_product_attention among the lower-precision ops (Note [Autocast op lists]); the
// composed path keeps its per-op casts (matmul lower; softmax float32 on CUDA, in its input's dtype on
// the CPU), which give the lower-precision output too.
// The fused node is named "scaled_dot_product_attention"; the composed one ends in a reshape. Under
// create_graph the fused node's differentiable form runs the composed path again on its saved inputs
// and differentiates that with create_graph (autograd::grad inside the rule): the fused kernels have
// no second derivative of their own, and this costs a recomputation only in a double backward.
// A query row whose scores are all -inf (every key masked: a bool mask false along it, a float mask -inf
// along it, or -inf scores from infinite inputs) attends nothing: its output row is 0 and it passes zero
// gradients to q, k, v and the mask, on both paths and devices, as PyTorch's scaled_dot_product_attention
// (its _safe_softmax, since 2.5). softmax itself keeps NaN for such a row
// (Note [NaN and infinity]), and so do nn::MultiheadAttention's weights when need_weights is true, as
// PyTorch's. The fused kernels find such a row by its running max staying -inf; they write 0 and save
// its log-sum-exp as +inf, so that exp(s - lse) is 0 for every key of it in the backward.

/// A bool (batch..., L, 1) Tensor, true for the rows of scores (batch..., L, S) whose every score is -inf
/// (a row holding NaN is not one: it stays NaN, as softmax's), for the composed path's zero rows;
/// undefined when no row can be one: S = 0 or no scores, or on the CPU when none is (the common case then
/// costs one read of the scores; on CUDA that check would wait for the device, so the rows are always
/// zeroed there).
Tensor fully_masked_rows(const Tensor& scores) {
  const char* op = "scaled_dot_product_attention";
  if (scores.numel() == 0 || scores.size(-1) == 0) return Tensor();
  const RawTensor s = scores.data();
  const RawTensor row_max = prim::reduce(ReduceOp::Max, s, {-1}, true, op);
  const RawTensor minus_inf = prim::scalar_like(-std::numeric_limits<double>::infinity(), s);
  const RawTensor dead = prim::binary(BinaryOp::Eq, row_max, minus_inf, op);
  if (s.device().is_cpu() && prim::sum(dead).item() == 0) return Tensor();
  return Tensor(dead);
}

/// The widest q/k and v rows the CUDA kernels take for dtype (their shared-memory tiles' width).
int64_t fused_attention_max_dim(DType dtype) { return dtype == kFloat64 ? 64 : 128; }

/// Whether the fused path applies: see Note [Fused attention].
bool use_fused_attention(const Tensor& query, const Tensor& attn_mask, double dropout_p, int64_t B, int64_t L,
                         int64_t S, int64_t E, int64_t Ev) {
  if (query.device().is_cpu() || dropout_p > 0) return false;
  if (attn_mask.defined() && attn_mask.requires_grad() && GradMode::is_enabled()) return false;
  const int64_t max_dim = fused_attention_max_dim(query.dtype());
  return B > 0 && L > 0 && S > 0 && E > 0 && Ev > 0 && E <= max_dim && Ev <= max_dim;
}

/// args' mask fields for attn_mask (broadcastable to scores_shape = (batch..., L, S)): its batch dims
/// folded into an outer and an inner stride when they fold (prim::attention_rows), else a contiguous
/// copy's.
void set_mask(AttentionArgs& a, const RawTensor& mask, const Shape& scores_shape) {
  RawTensor m = mask.expand(scores_shape);
  std::optional<AttentionRows> r = prim::attention_rows(m);
  if (!r) {
    m = m.contiguous();
    r = prim::attention_rows(m);
  }
  a.mask = m;
  a.mask_inner = r->inner;
  a.mask_stride_outer = r->stride_outer;
  a.mask_stride_inner = r->stride_inner;
  a.mask_stride_l = r->stride_row;
  a.mask_stride_s = m.strides()[m.dim() - 1];
}

/// The composed path (Note [Fused attention]): query (batch..., L, E) etc. through matmul, the mask,
/// softmax, dropout and matmul, each a differentiable op. `batch` is the broadcast batch shape (B
/// elements); factor the scale.
Tensor composed_attention(const Tensor& query, const Tensor& key, const Tensor& value, const Tensor& attn_mask,
                          double dropout_p, bool is_causal, double factor, const Shape& batch, int64_t B, int64_t L,
                          int64_t S, int64_t Ev) {
  const Shape scores_shape = with_matrix(batch, L, S);
  const Tensor q = as_batched(query, batch, B), k = as_batched(key, batch, B), v = as_batched(value, batch, B);
  // scores (B, L, S) = (q scale) k^T, viewed with the batch dims so that the mask broadcasts
  Tensor scores = reshape(matmul(q * factor, transpose(k, 1, 2)), scores_shape);
  const Tensor minus_inf = scalar_like(-std::numeric_limits<double>::infinity(), scores);
  if (is_causal) {
    // keep key j for query i when j <= i (col - row <= 0 over (L, S)), as an additive bias of 0 and
    // -inf (PyTorch's reference does the same): its backward passes the gradient through unchanged,
    // where a where() would write a masked copy of it (the softmax already gives 0 at -inf).
    const RawTensor row = prim::arange(L, kInt64, query.device()).reshape({L, 1});
    const RawTensor col = prim::arange(S, kInt64, query.device());
    const RawTensor keep = prim::binary(BinaryOp::Le, prim::sub(col, row), prim::full({}, 0.0, kInt64, query.device()),
                                           "scaled_dot_product_attention");
    const RawTensor bias = prim::where(keep, prim::scalar_like(0.0, scores.data()), minus_inf.data());
    scores = scores + Tensor(bias);
  } else if (attn_mask.defined()) {
    scores = attn_mask.dtype() == kBool ? where(attn_mask, scores, minus_inf) : scores + attn_mask;
  }
  // Rows whose scores are all -inf attend nothing: their probabilities are 0, as PyTorch's _safe_softmax
  // (Note [Fused attention]). Their scores are replaced by zeros before the softmax (finite weights and
  // gradients) and their output rows set to 0 below, so they pass no gradient to q, k, v or the mask.
  // The causal mask keeps key 0 on every row, so it leaves no such row, and the search (a max over the
  // scores and a sum read back) is skipped: about 2% of a small transformer's CPU training step.
  const Tensor dead = is_causal ? Tensor() : fully_masked_rows(scores);
  if (dead.defined()) scores = where(dead, scalar_like(0.0, scores), scores);
  Tensor attn = softmax(scores, -1);
  if (dropout_p > 0) attn = dropout(attn, dropout_p, true);
  // out (B, L, Ev) = attn v, then the batch dims back
  Tensor out = reshape(matmul(reshape(attn, {B, L, S}), v), with_matrix(batch, L, Ev));
  if (dead.defined()) out = where(dead, scalar_like(0.0, out), out);
  return out;
}

/// The fused path: q (batch..., L, E), k (batch..., S, E), v (batch..., S, Ev) -> (batch..., L, Ev).
Tensor fused_attention(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionArgs& args) {
  prim::Attention r = prim::attention(q.data(), k.data(), v.data(), args);
  const char* name = "scaled_dot_product_attention";
  const bool need = any_requires_grad({q, k, v});
  SavedTensor q_saved = need ? SavedTensor(q) : SavedTensor();
  SavedTensor k_saved = need ? SavedTensor(k) : SavedTensor();
  SavedTensor v_saved = need ? SavedTensor(v) : SavedTensor();
  SavedTensor out_saved = need ? SavedTensor(r.out, name) : SavedTensor();
  SavedTensor lse_saved = need ? SavedTensor(r.lse, name) : SavedTensor();   // (B, L)
  return record(name, r.out, {q, k, v},
                [q_saved, k_saved, v_saved, out_saved, lse_saved, args](const auto& grad, auto& g) {
                  if constexpr (first_order_v<decltype(g)>) {
                    // p = softmax(s), s = q k^T scale + mask; D_i = sum_d grad_id out_id;
                    // ds = p (grad v^T - D); dq = ds k scale; dk = ds^T q scale; dv = p^T grad
                    prim::AttentionGrads d = prim::attention_backward(q_saved.get(), k_saved.get(), v_saved.get(),
                                                                      out_saved.get(), lse_saved.get(), grad, args);
                    if (g.need(0)) g.set(0, d.dq);
                    if (g.need(1)) g.set(1, d.dk);
                    if (g.need(2)) g.set(2, d.dv);
                  } else {
                    // Under create_graph: the composed path again on the saved inputs (with their
                    // history), differentiated with create_graph, so that the gradient's graph is made of
                    // differentiable ops (the fused kernels have no second derivative of their own).
                    const Tensor in[3] = {g.input(0, q_saved), g.input(1, k_saved), g.input(2, v_saved)};
                    const Shape batch(in[0].shape().begin(), in[0].shape().end() - 2);
                    const Tensor out = composed_attention(in[0], in[1], in[2], args.mask.defined() ? Tensor(args.mask) : Tensor(),
                                                          0.0, args.causal, args.scale, batch, args.B, args.L, args.S, args.Ev);
                    std::vector<Tensor> wrt;
                    for (int i = 0; i < 3; ++i)
                      if (g.need(i) && in[i].requires_grad()) wrt.push_back(in[i]);
                    if (wrt.empty() || !out.requires_grad()) return;
                    const std::vector<Tensor> d = autograd::grad({out}, wrt, {grad}, true, true, /*allow_unused=*/true);
                    std::size_t at = 0;
                    for (int i = 0; i < 3; ++i)
                      if (g.need(i) && in[i].requires_grad()) g.set(i, d[at++]);
                  }
                });
}

}  // namespace

// query (..., L, E), key (..., S, E), value (..., S, Ev) -> (..., L, Ev)
Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                      const Tensor& attn_mask, double dropout_p, bool is_causal,
                                      std::optional<double> scale) {
  const char* op = "scaled_dot_product_attention";
  TG_CHECK(query.defined() && key.defined() && value.defined(), Error, op, ": undefined query, key or value");
  TG_CHECK(query.dim() >= 2 && key.dim() >= 2 && value.dim() >= 2, ShapeError, op,
           ": expected query, key and value of at least 2 dims (..., L, E), got query ", shape_str(query.shape()),
           ", key ", shape_str(key.shape()), " and value ", shape_str(value.shape()));
  TG_CHECK(query.dtype() == key.dtype() && query.dtype() == value.dtype(), DTypeError, op,
           ": Expected query, key, and value to have the same dtype, but got query.dtype: ", dtype_name(query.dtype()),
           " key.dtype: ", dtype_name(key.dtype()), " and value.dtype: ", dtype_name(value.dtype()), " instead.");
  prim::check_floating(op, query.data());
  prim::check_same_device(op, query.data(), key.data());
  prim::check_same_device(op, query.data(), value.data());
  const int64_t L = query.size(-2), E = query.size(-1), S = key.size(-2), Ev = value.size(-1);
  TG_CHECK(key.size(-1) == E && value.size(-2) == S, ShapeError, op,
           ": expected key (..., S, E) and value (..., S, Ev) for query (..., L, E), got query ",
           shape_str(query.shape()), ", key ", shape_str(key.shape()), " and value ", shape_str(value.shape()));
  TG_CHECK(dropout_p >= 0 && dropout_p <= 1, Error, op, ": dropout probability has to be between 0 and 1, but got ",
           dropout_p);
  TG_CHECK(!(is_causal && attn_mask.defined()), Error, op, ": Explicit attn_mask should not be set when is_causal=True");
  const Shape batch = broadcast_shapes(broadcast_shapes(batch_dims(query), batch_dims(key), op), batch_dims(value), op);
  const Shape scores_shape = with_matrix(batch, L, S);
  if (attn_mask.defined()) {
    TG_CHECK(attn_mask.dtype() == kBool || attn_mask.dtype() == query.dtype(), DTypeError, op,
             ": Expected attn_mask dtype to be bool or float or to match query dtype, but got attn_mask.dtype: ",
             dtype_name(attn_mask.dtype()), " and  query.dtype: ", dtype_name(query.dtype()), " instead.");
    prim::check_same_device(op, query.data(), attn_mask.data());
    // each trailing dim of the mask is 1 or the scores' size: it broadcasts without enlarging them
    const int64_t md = attn_mask.dim(), sd = static_cast<int64_t>(scores_shape.size());
    bool fits = md <= sd;
    for (int64_t i = 1; fits && i <= md; ++i) {
      const int64_t m = attn_mask.shape()[md - i];
      fits = m == 1 || m == scores_shape[sd - i];
    }
    TG_CHECK(fits, ShapeError, op, ": attn_mask of shape ", shape_str(attn_mask.shape()),
             " does not broadcast to the attention scores' shape ", shape_str(scores_shape));
  }
  int64_t B = 1;
  for (int64_t s : batch) B *= s;
  const double factor = scale ? *scale : 1.0 / std::sqrt(static_cast<double>(E));
  if (use_fused_attention(query, attn_mask, dropout_p, B, L, S, E, Ev)) {   // Note [Fused attention]
    // q, k, v with the batch dims broadcast, read in place where their strides allow (Note [Attention
    // operands in place] in prim/attention.cpp); under autocast, in the lower precision (Note
    // [Autocast op lists])
    constexpr amp::detail::AutocastOp kOp = amp::detail::AutocastOp::ScaledDotProductAttention;
    const Tensor ql = amp::detail::cast(kOp, expand(query, with_matrix(batch, L, E))),
                 kl = amp::detail::cast(kOp, expand(key, with_matrix(batch, S, E))),
                 vl = amp::detail::cast(kOp, expand(value, with_matrix(batch, S, Ev)));
    const Tensor mask =
        attn_mask.defined() && attn_mask.dtype() != kBool ? amp::detail::cast(kOp, attn_mask) : attn_mask;
    AttentionArgs args;
    args.B = B;
    args.L = L;
    args.S = S;
    args.E = E;
    args.Ev = Ev;
    args.scale = factor;
    args.causal = is_causal;
    if (mask.defined()) set_mask(args, mask.data(), scores_shape);
    return fused_attention(ql, kl, vl, args);   // (batch..., L, Ev), the heads innermost in memory
  }
  return composed_attention(query, key, value, attn_mask, dropout_p, is_causal, factor, batch, B, L, S, Ev);
}

}  // namespace tg
