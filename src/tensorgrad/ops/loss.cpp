// ops/loss.cpp: the losses beside cross_entropy and mse_loss (ops/softmax_loss.cpp): nll_loss,
// binary_cross_entropy (with and without logits), l1_loss, smooth_l1_loss, huber_loss, kl_div,
// margin_ranking_loss, cosine_embedding_loss, hinge_embedding_loss, triplet_margin_loss,
// multi_margin_loss, poisson_nll_loss, gaussian_nll_loss, soft_margin_loss,
// multilabel_soft_margin_loss, multilabel_margin_loss and triplet_margin_with_distance_loss, with
// PyTorch's arguments, checks and messages (ctc_loss has its own file, ops/ctc_loss.cpp). They are
// compositions of differentiable ops, whose gradients are PyTorch's, except binary_cross_entropy,
// whose own backward avoids the 0/0 of the composed one where the input is exactly 0 or 1
// (Note [binary_cross_entropy at 0 and 1]). Modules wrapping these: nn/loss.h.
#include <cmath>
#include <limits>
#include <optional>
#include <utility>

#include "tensorgrad/ops/autocast.h"
#include "tensorgrad/ops/creation.h"
#include "tensorgrad/prim/prim.h"
#include "tensorgrad/ops/ops.h"
#include "tensorgrad/ops/rules.h"

namespace tg {

namespace {

Tensor reduce_loss(const Tensor& loss, Reduction reduction) {
  switch (reduction) {
    case Reduction::None: return loss;
    case Reduction::Sum: return sum(loss);
    case Reduction::Mean: break;
  }
  return mean(loss);
}

/// A class index of t (int64, not empty) outside [0, C), the smallest if one is negative, else the
/// largest; none when all lie inside. The range check of nll_loss and multi_margin_loss, which PyTorch
/// makes too: two reductions, each read back.
std::optional<int64_t> class_index_outside(const RawTensor& t, int64_t C, const char* op) {
  const auto lo = static_cast<int64_t>(prim::reduce(ReduceOp::Min, t, {}, false, op).item());
  const auto hi = static_cast<int64_t>(prim::reduce(ReduceOp::Max, t, {}, false, op).item());
  if (lo < 0) return lo;
  if (hi >= C) return hi;
  return std::nullopt;
}

/// ShapeError unless input and target have one shape (PyTorch broadcasts some losses with a warning;
/// these refuse, as mse_loss does), DTypeError unless input is floating.
void check_pair(const char* op, const Tensor& input, const Tensor& target) {
  TG_CHECK(input.shape() == target.shape(), ShapeError, op, ": Using a target size ", shape_str(target.shape()),
           " that is different to the input size ", shape_str(input.shape()),
           " is not supported. Please ensure they have the same size.");
  prim::check_floating(op, input.data());
  prim::check_same_device(op, input.data(), target.data());
}

/// x under autocast's float32 policy for op (Note [Autocast op lists]).
Tensor f32(amp::detail::AutocastOp op, const Tensor& x) { return x.defined() ? amp::detail::cast(op, x) : x; }


/// The checks multi_margin_loss and multilabel_margin_loss share, in PyTorch's words: input a
/// non-empty vector or matrix (or 0-d) of a floating dtype, target int64 on its device. Returns the
/// rows N and classes C.
std::pair<int64_t, int64_t> margin_rows(const char* op, const Tensor& input, const Tensor& target) {
  const int64_t nd = input.dim();
  TG_CHECK((nd == 2 && input.size(1) != 0) || (nd == 1 && input.size(0) != 0) || nd == 0, ShapeError, op,
           ": Expected non-empty vector or matrix with optional 0-dim batch size, but got: ", shape_str(input.shape()));
  prim::check_floating(op, input.data());
  TG_CHECK(target.dtype() == kInt64, DTypeError, op, ": expected target of dtype int64 (class indices), got ",
           dtype_name(target.dtype()));
  prim::check_same_device(op, input.data(), target.data());
  return {nd == 2 ? input.size(0) : 1, nd == 0 ? 1 : input.size(nd - 1)};
}
}  // namespace

Tensor nll_loss(const Tensor& input_in, const Tensor& target, const Tensor& weight_in, Reduction reduction,
                int64_t ignore_index) {
  const char* op = "nll_loss";
  using amp::detail::AutocastOp;
  const Tensor input = f32(AutocastOp::NllLoss, input_in), weight = f32(AutocastOp::NllLoss, weight_in);
  TG_CHECK(input.dim() >= 1, ShapeError, op, ": input tensor should be 1D or more, got a 0-d input");
  prim::check_floating(op, input.data());
  TG_CHECK(target.dtype() == kInt64, DTypeError, op, ": expected target of dtype int64 (class indices), got ",
           dtype_name(target.dtype()));
  prim::check_same_device(op, input.data(), target.data());
  const int64_t C = input.dim() == 1 ? input.size(0) : input.size(1);
  // the target's expected shape: () for a (C) input, (N) for (N, C), (N, d1, ...) for (N, C, d1, ...)
  Shape expected;
  if (input.dim() >= 2) {
    expected.push_back(input.size(0));
    for (int64_t d = 2; d < input.dim(); ++d) expected.push_back(input.size(d));
  }
  TG_CHECK(target.shape() == expected, ShapeError, op, ": Expected target of shape ", shape_str(expected),
           " for input of shape ", shape_str(input.shape()), ", got target of shape ", shape_str(target.shape()));
  if (weight.defined()) {
    TG_CHECK(weight.dim() == 1 && weight.size(0) == C, ShapeError, op,
             ": weight tensor should be defined either for all ", C,
             " classes or no classes but got weight tensor of shape: ", shape_str(weight.shape()));
    prim::check_same_device(op, input.data(), weight.data());
    TG_CHECK(!(weight.requires_grad() && GradMode::is_enabled()), AutogradError, op,
             ": the derivative for 'weight' is not implemented (as in PyTorch): pass weight.detach()");
  }
  // rows (M, C) and their targets (M): the class dim moved last, every other dim flattened
  Tensor rows;
  if (input.dim() == 1) {
    rows = unsqueeze(input, 0);
  } else if (input.dim() == 2) {
    rows = input;
  } else {
    std::vector<int64_t> order{0};
    for (int64_t d = 2; d < input.dim(); ++d) order.push_back(d);
    order.push_back(1);
    rows = reshape(permute(input, order), {-1, C});
  }
  const RawTensor t = target.data().reshape({-1});
  const RawTensor ignore = prim::scalar_like(static_cast<double>(ignore_index), t);
  const RawTensor valid = prim::binary(BinaryOp::Ne, t, ignore, op);
  const RawTensor safe = prim::where(valid, t, prim::scalar_like(0.0, t));
  if (safe.numel() > 0) {
    const std::optional<int64_t> bad = class_index_outside(safe, C, op);
    TG_CHECK(!bad, IndexError, op, ": Target ", bad.value_or(0), " is out of bounds (", C, " classes; ignore_index is ",
             ignore_index, ")");
  }
  const Tensor picked = squeeze(gather(rows, 1, Tensor(safe.reshape({-1, 1}))), 1);   // (M)
  Tensor w = Tensor(valid.to(rows.dtype()));
  if (weight.defined()) w = mul(index_select(weight.detach(), 0, Tensor(safe)), w);
  const Tensor loss = neg(mul(picked, w));
  if (reduction == Reduction::None) return reshape(loss, target.shape());
  if (reduction == Reduction::Sum) return sum(loss);
  return div(sum(loss), sum(w));   // PyTorch's weighted mean: NaN when every target is ignored
}

// Note [binary_cross_entropy at 0 and 1]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The loss is -(t max(log x, -100) + (1 - t) max(log(1 - x), -100)), PyTorch's clamp of the logs, so
// an input of exactly 0 or 1 (a saturated sigmoid in float32) gives a finite loss. Composed from
// log and clamp, its gradient would be 0 / 0 there (clamp passes 0, log divides by x = 0); PyTorch's
// own backward is (x - t) / max(x (1 - x), 1e-12), finite everywhere, and that is this op's backward.
// The target's gradient, max(log(1 - x), -100) - max(log x, -100), is PyTorch 2.x's too.
Tensor binary_cross_entropy(const Tensor& input_in, const Tensor& target_in, const Tensor& weight, Reduction reduction) {
  const char* op = "binary_cross_entropy";
  TG_CHECK(!(amp::is_autocast_enabled(DeviceType::CUDA) && input_in.device().is_cuda()), Error,
           "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast. Many models use a "
           "sigmoid layer right before the binary cross entropy layer. In this case, combine the two layers using "
           "binary_cross_entropy_with_logits or BCEWithLogitsLoss, which are safe to autocast.");
  using amp::detail::AutocastOp;
  const Tensor input = f32(AutocastOp::BinaryCrossEntropy, input_in),
               target = f32(AutocastOp::BinaryCrossEntropy, target_in);
  check_pair(op, input, target);
  TG_CHECK(input.dtype() == target.dtype(), DTypeError, op, ": input (", dtype_name(input.dtype()), ") and target (",
           dtype_name(target.dtype()), ") must have the same dtype");
  const RawTensor x = input.data(), t = target.data();
  if (x.numel() > 0) {   // one read back, as PyTorch checks its input's range
    const double lo = prim::reduce(ReduceOp::Min, x, {}, false, op).item();
    const double hi = prim::reduce(ReduceOp::Max, x, {}, false, op).item();
    TG_CHECK(lo >= 0 && hi <= 1, Error, op, ": all elements of input should be between 0 and 1, got values in [", lo,
             ", ", hi, "]");
  }
  const double inf = std::numeric_limits<double>::infinity();
  auto clamped_log = [inf](const RawTensor& v) {
    return prim::unary(UnaryOp::Clamp, prim::unary(UnaryOp::Log, v), {-100.0, inf});
  };
  const RawTensor one = prim::scalar_like(1.0, x);
  const RawTensor log_x = clamped_log(x), log_1mx = clamped_log(prim::sub(one, x));
  // -(t log x + (1 - t) log(1 - x)) = -(log(1 - x) + t (log x - log(1 - x)))
  const RawTensor loss = prim::unary(UnaryOp::Neg, prim::add(log_1mx, prim::mul(t, prim::sub(log_x, log_1mx))));
  const bool grad_mode = GradMode::is_enabled();
  const bool need = grad_mode && (input.requires_grad() || target.requires_grad());
  const SavedTensor x_saved = need ? SavedTensor(input) : SavedTensor();
  const SavedTensor t_saved = need ? SavedTensor(target) : SavedTensor();
  // the target's gradient, log(1 - x) - log(x) clamped, is kept only when the target requires grad
  const RawTensor dloss_dt = grad_mode && target.requires_grad() ? prim::sub(log_1mx, log_x) : RawTensor();
  const Tensor elementwise = record(op, loss, {input, target}, [x_saved, t_saved, dloss_dt, inf](const auto& grad, auto& g) {
    // PyTorch's epsilon is the float 1e-12 (9.9999999600e-13 as a double): the same here
    const double eps = static_cast<double>(1e-12f);
    if constexpr (first_order_v<decltype(g)>) {
      if (g.need(0)) {   // (x - t) / max(x (1 - x), 1e-12)
        const RawTensor xv = x_saved.get(), tv = t_saved.get();
        const RawTensor denom = prim::unary(UnaryOp::Clamp, prim::mul(xv, prim::sub(prim::scalar_like(1.0, xv), xv)), {eps, inf});
        g.set(0, prim::mul(grad, prim::div(prim::sub(xv, tv), denom)));
      }
      if (g.need(1)) g.set(1, prim::mul(grad, dloss_dt));
    } else {   // the same formulas as recorded ops (clamp passes no gradient where it clamps)
      const Tensor xv = g.input(0, x_saved), tv = g.input(1, t_saved);
      if (g.need(0)) g.set(0, grad * ((xv - tv) / clamp(xv * (1.0 - xv), eps, inf)));
      if (g.need(1)) g.set(1, grad * (clamp(log(1.0 - xv), -100.0, inf) - clamp(log(xv), -100.0, inf)));
    }
  });
  return reduce_loss(weight.defined() ? mul(elementwise, weight) : elementwise, reduction);
}

Tensor binary_cross_entropy_with_logits(const Tensor& input_in, const Tensor& target_in, const Tensor& weight,
                                        const Tensor& pos_weight, Reduction reduction) {
  const char* op = "binary_cross_entropy_with_logits";
  using amp::detail::AutocastOp;
  const Tensor input = f32(AutocastOp::BinaryCrossEntropyWithLogits, input_in),
               target = f32(AutocastOp::BinaryCrossEntropyWithLogits, target_in);
  check_pair(op, input, target);
  // -(p t log sigmoid(x) + (1 - t) log sigmoid(-x)), p = pos_weight (broadcast along the classes, the
  // last dim): log_sigmoid keeps it stable for large |x|, and its gradient is PyTorch's.
  const Tensor positive = pos_weight.defined() ? mul(mul(pos_weight, target), log_sigmoid(input))
                                               : mul(target, log_sigmoid(input));
  const Tensor loss = neg(add(positive, mul(sub(scalar_like(1.0, target), target), log_sigmoid(neg(input)))));
  return reduce_loss(weight.defined() ? mul(loss, weight) : loss, reduction);
}

Tensor l1_loss(const Tensor& input_in, const Tensor& target_in, Reduction reduction) {
  using amp::detail::AutocastOp;
  const Tensor input = f32(AutocastOp::L1Loss, input_in), target = f32(AutocastOp::L1Loss, target_in);
  check_pair("l1_loss", input, target);
  return reduce_loss(abs(sub(input, target)), reduction);
}

Tensor smooth_l1_loss(const Tensor& input_in, const Tensor& target_in, Reduction reduction, double beta) {
  const char* op = "smooth_l1_loss";
  TG_CHECK(beta >= 0, Error, op, ": smooth_l1_loss does not support negative values for beta (got ", beta, ")");
  using amp::detail::AutocastOp;
  const Tensor input = f32(AutocastOp::SmoothL1Loss, input_in), target = f32(AutocastOp::SmoothL1Loss, target_in);
  check_pair(op, input, target);
  const Tensor d = sub(input, target), a = abs(d);
  if (beta == 0) return reduce_loss(a, reduction);   // PyTorch: l1_loss
  // 0.5 d^2 / beta where |d| < beta, |d| - 0.5 beta elsewhere
  const Tensor quadratic = mul(mul(d, d), scalar_like(0.5 / beta, d));
  const Tensor linear = sub(a, scalar_like(0.5 * beta, a));
  return reduce_loss(where(lt(a, scalar_like(beta, a)), quadratic, linear), reduction);
}

Tensor huber_loss(const Tensor& input_in, const Tensor& target_in, Reduction reduction, double delta) {
  const char* op = "huber_loss";
  TG_CHECK(delta > 0, Error, op, ": huber_loss does not support non-positive values for delta (got ", delta, ")");
  using amp::detail::AutocastOp;
  const Tensor input = f32(AutocastOp::HuberLoss, input_in), target = f32(AutocastOp::HuberLoss, target_in);
  check_pair(op, input, target);
  const Tensor d = sub(input, target), a = abs(d);
  // 0.5 d^2 where |d| < delta, delta (|d| - 0.5 delta) elsewhere
  const Tensor quadratic = mul(mul(d, d), scalar_like(0.5, d));
  const Tensor linear = mul(sub(a, scalar_like(0.5 * delta, a)), scalar_like(delta, a));
  return reduce_loss(where(lt(a, scalar_like(delta, a)), quadratic, linear), reduction);
}

Tensor kl_div(const Tensor& input_in, const Tensor& target_in, Reduction reduction, bool log_target) {
  using amp::detail::AutocastOp;
  const Tensor input = f32(AutocastOp::KlDiv, input_in), target = f32(AutocastOp::KlDiv, target_in);
  check_pair("kl_div", input, target);
  prim::check_floating("kl_div", target.data());
  Tensor loss;
  if (log_target) {
    loss = mul(exp(target), sub(target, input));
  } else {
    // xlogy(t, t) - t input: t log t is 0 at t == 0 (its gradient there is NaN, as PyTorch's xlogy)
    const Tensor zero = scalar_like(0.0, target);
    loss = sub(where(eq(target, zero), zero, mul(target, log(target))), mul(target, input));
  }
  return reduce_loss(loss, reduction);
}

Tensor kl_div(const Tensor& input, const Tensor& target, BatchMean, bool log_target) {
  const Tensor total = kl_div(input, target, Reduction::Sum, log_target);
  if (input.dim() == 0) return total;
  return div(total, scalar_like(static_cast<double>(input.size(0)), total));
}

Tensor margin_ranking_loss(const Tensor& input1_in, const Tensor& input2_in, const Tensor& target_in, double margin,
                           Reduction reduction) {
  const char* op = "margin_ranking_loss";
  using amp::detail::AutocastOp;
  const Tensor input1 = f32(AutocastOp::MarginRankingLoss, input1_in), input2 = f32(AutocastOp::MarginRankingLoss, input2_in),
               target = f32(AutocastOp::MarginRankingLoss, target_in);
  TG_CHECK(input1.dim() == input2.dim() && input1.dim() == target.dim(), ShapeError, op,
           ": All input tensors should have same dimension but got sizes: input1: ", shape_str(input1.shape()),
           ", input2: ", shape_str(input2.shape()), ", target: ", shape_str(target.shape()));
  prim::check_floating(op, input1.data());
  // max(0, -y (x1 - x2) + margin); relu's gradient is 0 at the kink, as PyTorch's clamp_min there
  const Tensor d = sub(input1, input2);
  return reduce_loss(relu(add(mul(neg(target), d), scalar_like(margin, d))), reduction);
}

Tensor cosine_embedding_loss(const Tensor& input1_in, const Tensor& input2_in, const Tensor& target_in, double margin,
                             Reduction reduction) {
  const char* op = "cosine_embedding_loss";
  using amp::detail::AutocastOp;
  const Tensor input1 = f32(AutocastOp::CosineEmbeddingLoss, input1_in),
               input2 = f32(AutocastOp::CosineEmbeddingLoss, input2_in),
               target = f32(AutocastOp::CosineEmbeddingLoss, target_in);
  const int64_t td = target.dim();
  TG_CHECK(td == 0 || td == 1, ShapeError, op, ": 0D or 1D target tensor expected, multi-target not supported");
  if (td == 1) {
    TG_CHECK(input1.dim() == 2 && input2.dim() == 2, ShapeError, op,
             ": 1D target tensor expects 2D input tensors, but found inputs with sizes ", shape_str(input1.shape()),
             " and ", shape_str(input2.shape()), ".");
  } else {
    TG_CHECK(input1.dim() == 1 && input2.dim() == 1, ShapeError, op,
             ": 0D target tensor expects 1D input tensors, but found inputs with sizes ", shape_str(input1.shape()),
             " and ", shape_str(input2.shape()), ".");
  }
  TG_CHECK(input1.shape() == input2.shape(), ShapeError, op, ": the inputs must have one shape, got ",
           shape_str(input1.shape()), " and ", shape_str(input2.shape()));
  TG_CHECK(td == 0 || target.size(0) == input1.size(0), ShapeError, op, ": expected a target of size (",
           input1.size(0), "), got ", shape_str(target.shape()));
  prim::check_floating(op, input1.data());
  // PyTorch's arithmetic: cos = sum(x1 x2) / sqrt((sum(x1^2) + eps) (sum(x2^2) + eps)), eps = 1e-12
  const int64_t dim = input1.dim() - 1;
  const Tensor dot = sum(mul(input1, input2), dim);
  const Tensor eps = scalar_like(1e-12, dot);
  const Tensor cos = div(dot, sqrt(mul(add(sum(mul(input1, input1), dim), eps), add(sum(mul(input2, input2), dim), eps))));
  const Tensor zero = scalar_like(0.0, cos);
  const Tensor positive = where(eq(target, scalar_like(1.0, target)), sub(scalar_like(1.0, cos), cos), zero);
  const Tensor negative = where(eq(target, scalar_like(-1.0, target)), relu(sub(cos, scalar_like(margin, cos))), zero);
  return reduce_loss(add(positive, negative), reduction);
}

Tensor hinge_embedding_loss(const Tensor& input_in, const Tensor& target_in, double margin, Reduction reduction) {
  using amp::detail::AutocastOp;
  const Tensor input = f32(AutocastOp::HingeEmbeddingLoss, input_in),
               target = f32(AutocastOp::HingeEmbeddingLoss, target_in);
  prim::check_floating("hinge_embedding_loss", input.data());
  prim::check_same_device("hinge_embedding_loss", input.data(), target.data());
  // PyTorch's formula: where(y != 1, max(0, margin - x), 0) + where(y != -1, x, 0), so a target other
  // than 1 and -1 gets both terms
  const Tensor zero = scalar_like(0.0, input);
  const Tensor margin_term = where(ne(target, scalar_like(1.0, target)), relu(sub(scalar_like(margin, input), input)), zero);
  const Tensor self_term = where(ne(target, scalar_like(-1.0, target)), input, zero);
  return reduce_loss(add(margin_term, self_term), reduction);
}

namespace {
/// torch.nn.functional.pairwise_distance: the p-norm of x1 - x2 + eps along the last dim.
Tensor pairwise_distance(const Tensor& x1, const Tensor& x2, double p, double eps) {
  const Tensor d = sub(x1, x2);
  return norm(add(d, scalar_like(eps, d)), p, {d.dim() - 1});
}
}  // namespace

Tensor triplet_margin_loss(const Tensor& anchor_in, const Tensor& positive_in, const Tensor& negative_in, double margin,
                           double p, double eps, bool swap, Reduction reduction) {
  const char* op = "triplet_margin_loss";
  using amp::detail::AutocastOp;
  const Tensor anchor = f32(AutocastOp::TripletMarginLoss, anchor_in),
               positive = f32(AutocastOp::TripletMarginLoss, positive_in),
               negative = f32(AutocastOp::TripletMarginLoss, negative_in);
  TG_CHECK(margin > 0, Error, op, ": margin must be greater than 0, got ", margin);
  TG_CHECK(p > 0, Error, op, ": p must be greater than 0, got ", p);
  TG_CHECK(anchor.dim() == positive.dim() && positive.dim() == negative.dim(), ShapeError, op,
           ": The anchor, positive, and negative tensors are expected to have the same number of dimensions, but "
           "got: anchor ", anchor.dim(), "D, positive ", positive.dim(), "D, and negative ", negative.dim(), "D inputs");
  TG_CHECK(anchor.dim() >= 1, ShapeError, op, ": expected inputs of shape (N, D) or (D), got 0-d inputs");
  prim::check_floating(op, anchor.data());
  const Tensor dist_pos = pairwise_distance(anchor, positive, p, eps);
  Tensor dist_neg = pairwise_distance(anchor, negative, p, eps);
  if (swap) {   // the harder of the two negatives: min(d(a, n), d(p, n))
    const Tensor dist_swap = pairwise_distance(positive, negative, p, eps);
    dist_neg = where(lt(dist_swap, dist_neg), dist_swap, dist_neg);
  }
  // max(0, margin + d(a, p) - d(a, n))
  return reduce_loss(relu(add(sub(dist_pos, dist_neg), scalar_like(margin, dist_pos))), reduction);
}

Tensor multi_margin_loss(const Tensor& input_in, const Tensor& target, int64_t p, double margin, const Tensor& weight_in,
                         Reduction reduction) {
  const char* op = "multi_margin_loss";
  using amp::detail::AutocastOp;
  const Tensor input = f32(AutocastOp::MultiMarginLoss, input_in), weight = f32(AutocastOp::MultiMarginLoss, weight_in);
  TG_CHECK(p == 1 || p == 2, Error, op, ": only p == 1 and p == 2 supported (got ", p, ")");
  const auto [N, C] = margin_rows(op, input, target);
  const int64_t nd = input.dim();
  TG_CHECK(target.dim() <= 1 && target.numel() == N, ShapeError, op,
           ": target tensor should be 1-D with size equal to the number of input samples (batch size). Expected "
           "target size (", N, "), but got ", shape_str(target.shape()), ". Input has shape ", shape_str(input.shape()), ".");
  if (weight.defined()) {
    TG_CHECK(weight.dim() <= 1 && weight.numel() == C, ShapeError, op, ": inconsistent weight size, expected ", C,
             " but got ", shape_str(weight.shape()));
    prim::check_same_device(op, input.data(), weight.data());
    TG_CHECK(!(weight.requires_grad() && GradMode::is_enabled()), AutogradError, op,
             ": the derivative for 'weight' is not implemented (as in PyTorch): pass weight.detach()");
  }
  const RawTensor t = target.data().reshape({N});
  if (N > 0) {
    const std::optional<int64_t> bad = class_index_outside(t, C, op);
    TG_CHECK(!bad, IndexError, op, ": target out of range: ", bad.value_or(0), " for ", C, " classes");
  }
  const Tensor rows = reshape(input, {N, C});                         // (N, C)
  const Tensor index = Tensor(t.reshape({N, 1}));
  const Tensor picked = gather(rows, 1, index);                       // x[y] (N, 1)
  // max(0, margin - x[y] + x[i]) (squared for p == 2), without the term i == y
  Tensor z = relu(add(sub(rows, picked), scalar_like(margin, rows)));
  if (p == 2) z = mul(z, z);
  const Tensor is_target = eq(Tensor(prim::arange(C, kInt64, t.device()).reshape({1, C})), index);
  z = where(is_target, scalar_like(0.0, z), z);
  Tensor loss = div(sum(z, 1), scalar_like(static_cast<double>(C), z));   // (N)
  if (weight.defined()) loss = mul(loss, index_select(reshape(weight.detach(), {C}), 0, Tensor(t)));
  if (reduction == Reduction::None) return nd == 2 ? loss : reshape(loss, {});
  return reduce_loss(loss, reduction);
}

Tensor poisson_nll_loss(const Tensor& input_in, const Tensor& target_in, bool log_input, bool full, double eps,
                        Reduction reduction) {
  const char* op = "poisson_nll_loss";
  using amp::detail::AutocastOp;
  const Tensor input = f32(AutocastOp::PoissonNllLoss, input_in), target = f32(AutocastOp::PoissonNllLoss, target_in);
  prim::check_floating(op, input.data());
  prim::check_same_device(op, input.data(), target.data());
  // exp(x) - t x with log-rate input, else x - t log(x + eps)
  Tensor loss = log_input ? sub(exp(input), mul(target, input))
                          : sub(input, mul(target, log(add(input, scalar_like(eps, input)))));
  if (full) {   // Stirling's approximation of log(t!), t log t - t + 0.5 log(2 pi t), where t > 1
    const double two_pi = 2 * 3.14159265358979323846;
    const Tensor stirling = add(sub(mul(target, log(target)), target),
                                mul(scalar_like(0.5, target), log(mul(scalar_like(two_pi, target), target))));
    loss = add(loss, where(le(target, scalar_like(1.0, target)), scalar_like(0.0, stirling), stirling));
  }
  return reduce_loss(loss, reduction);
}

Tensor gaussian_nll_loss(const Tensor& input_in, const Tensor& target_in, const Tensor& var_arg, bool full, double eps,
                         Reduction reduction) {
  const char* op = "gaussian_nll_loss";
  // under CUDA autocast all in float32, the dtype PyTorch's composition gives (Note [Autocast op lists])
  using amp::detail::AutocastOp;
  const Tensor input = f32(AutocastOp::GaussianNllLoss, input_in), target = f32(AutocastOp::GaussianNllLoss, target_in),
               var_in = f32(AutocastOp::GaussianNllLoss, var_arg);
  prim::check_floating(op, input.data());
  prim::check_same_device(op, input.data(), var_in.data());
  if (var_in.numel() > 0) {   // one read back, as PyTorch's torch.any(var < 0)
    TG_CHECK(prim::reduce(ReduceOp::Min, var_in.data(), {}, false, op).item() >= 0, Error, op,
             ": var has negative entry/entries");
  }
  Tensor var = var_in;
  if (var.shape() != input.shape()) {
    const Shape& in = input.shape();
    const Shape& vs = var.shape();
    if (!in.empty() && Shape(in.begin(), in.end() - 1) == vs) {
      var = unsqueeze(var, -1);   // homoscedastic: one variance per row, broadcast along the last dim
    } else {
      int64_t mismatched = 0;   // PyTorch's test: one rank, and the sizes that differ sum to 1
      if (in.size() == vs.size()) {
        for (size_t d = 0; d < in.size(); ++d) mismatched += in[d] != vs[d] ? vs[d] : 0;
      }
      TG_CHECK(in.size() == vs.size() && mismatched == 1, ShapeError, op, ": var is of incorrect size: ",
               shape_str(vs), " for input ", shape_str(in));
    }
  }
  // max(var, eps) with the identity as gradient, as PyTorch's clamp_ of a clone under no_grad
  const Tensor held = var.detach();
  const double inf = std::numeric_limits<double>::infinity();
  var = add(var, sub(clamp(held, eps, inf), held));
  // 0.5 (log v + (x - t)^2 / v)
  const Tensor d = sub(input, target);
  Tensor loss = mul(scalar_like(0.5, d), add(log(var), div(mul(d, d), var)));
  if (full) loss = add(loss, scalar_like(0.5 * std::log(2 * 3.14159265358979323846), loss));
  return reduce_loss(loss, reduction);
}

Tensor gaussian_nll_loss(const Tensor& input, const Tensor& target, double var, bool full, double eps,
                         Reduction reduction) {
  TG_CHECK(var >= 0, Error, "gaussian_nll_loss: var has negative entry/entries");
  return gaussian_nll_loss(input, target, full_like(input, var), full, eps, reduction);
}

Tensor soft_margin_loss(const Tensor& input_in, const Tensor& target_in, Reduction reduction) {
  const char* op = "soft_margin_loss";
  using amp::detail::AutocastOp;
  const Tensor input = f32(AutocastOp::SoftMarginLoss, input_in), target = f32(AutocastOp::SoftMarginLoss, target_in);
  prim::check_floating(op, input.data());
  prim::check_same_device(op, input.data(), target.data());
  // log(1 + exp(-y x)), PyTorch's formula as written (not softplus's threshold), so the values and the
  // overflow for large -y x are its own
  return reduce_loss(log1p(exp(neg(mul(input, target)))), reduction);
}

Tensor multilabel_soft_margin_loss(const Tensor& input_in, const Tensor& target_in, const Tensor& weight_in,
                                   Reduction reduction) {
  const char* op = "multilabel_soft_margin_loss";
  // under CUDA autocast all in float32, the dtype PyTorch's composition gives (Note [Autocast op lists])
  using amp::detail::AutocastOp;
  const Tensor input = f32(AutocastOp::MultilabelSoftMarginLoss, input_in),
               target = f32(AutocastOp::MultilabelSoftMarginLoss, target_in),
               weight = f32(AutocastOp::MultilabelSoftMarginLoss, weight_in);
  prim::check_floating(op, input.data());
  prim::check_same_device(op, input.data(), target.data());
  if (weight.defined()) prim::check_same_device(op, input.data(), weight.data());
  TG_CHECK(input.dim() >= 1, IndexError, op, ": Dimension specified as -1 but tensor has no dimensions");
  // -(y log sigmoid(x) + (1 - y) log sigmoid(-x)), weighted, summed over input's last dim and divided by
  // its size, as PyTorch's Python composition
  Tensor loss = neg(add(mul(target, log_sigmoid(input)),
                        mul(sub(scalar_like(1.0, target), target), log_sigmoid(neg(input)))));
  if (weight.defined()) loss = mul(loss, weight);
  const int64_t class_dim = input.dim() - 1;
  loss = div(sum(loss, class_dim), scalar_like(static_cast<double>(input.size(class_dim)), loss));
  return reduce_loss(loss, reduction);
}

Tensor multilabel_margin_loss(const Tensor& input_in, const Tensor& target, Reduction reduction) {
  const char* op = "multilabel_margin_loss";
  const Tensor input = f32(amp::detail::AutocastOp::MultilabelMarginLoss, input_in);
  const auto [N, C] = margin_rows(op, input, target);
  const int64_t nd = input.dim();
  const bool target_fits = nd == 2 ? target.dim() == 2 && target.size(0) == N && target.size(1) == C
                                   : target.dim() <= 1 && target.numel() == C;
  TG_CHECK(target_fits, ShapeError, op, ": inconsistent target size: ", shape_str(target.shape()),
           " for input of size: ", shape_str(input.shape()));
  const Tensor t(target.data().reshape({N, C}));   // the masks below are built from it without a graph
  if (N > 0) {   // every entry in [-1, C), also after a row's first -1: PyTorch's check, two values read back
    const auto lo = static_cast<int64_t>(prim::reduce(ReduceOp::Min, t.data(), {}, false, op).item());
    const auto hi = static_cast<int64_t>(prim::reduce(ReduceOp::Max, t.data(), {}, false, op).item());
    TG_CHECK(lo >= -1 && hi < C, IndexError, op, ": argument #2 'target' is out of range: got ", lo < -1 ? lo : hi,
             ", expected class indices in [0, ", C, ") or -1 ending a row's list (target ", shape_str(target.shape()),
             ", input ", shape_str(input.shape()), ")");
  }
  // listed[n, k]: slot k of row n comes before the row's first -1
  const Tensor listed = eq(cumsum(eq(t, scalar_like(-1.0, t)), 1), scalar_like(0.0, t));        // (N, C) bool
  // is_target[n, j]: a listed slot of row n names class j
  const Tensor classes(prim::arange(C, kInt64, t.device()).reshape({1, 1, C}));
  const Tensor no = scalar_like(0.0, listed);
  const Tensor names = where(unsqueeze(listed, 2), eq(unsqueeze(t, 2), classes), no);              // (N, C, C)
  const Tensor is_target = any(names, 1);                                                           // (N, C)
  // the terms of listed slots k and classes j not listed: max(0, 1 - x[y_k] + x[j])
  const Tensor rows = reshape(input, {N, C});
  const Tensor picked = gather(rows, 1, where(listed, t, scalar_like(0.0, t)));   // x[y_k]; unlisted slots read x[0]
  const Tensor z = relu(add(sub(unsqueeze(rows, 1), unsqueeze(picked, 2)), scalar_like(1.0, rows)));   // (N, k, j)
  const Tensor counted = where(unsqueeze(listed, 2), unsqueeze(eq(is_target, no), 1), no);          // (N, C, C)
  const Tensor loss = div(sum(sum(where(counted, z, scalar_like(0.0, z)), 2), 1), scalar_like(static_cast<double>(C), z));
  // None: (N), or 0-d for a target of at most one dim, as PyTorch's output
  if (reduction == Reduction::None) return target.dim() <= 1 ? reshape(loss, {}) : loss;
  return reduce_loss(loss, reduction);
}

Tensor triplet_margin_with_distance_loss(const Tensor& anchor_in, const Tensor& positive_in, const Tensor& negative_in,
                                         const DistanceFunction& distance_function, double margin, bool swap,
                                         Reduction reduction) {
  const char* op = "triplet_margin_with_distance_loss";
  // the default distance under CUDA autocast runs in float32, as PyTorch's pairwise_distance (its norm)
  // does; a distance_function's own ops decide for it (Note [Autocast op lists])
  using amp::detail::AutocastOp;
  auto cast = [&](const Tensor& x) { return distance_function ? x : f32(AutocastOp::TripletMarginWithDistanceLoss, x); };
  const Tensor anchor = cast(anchor_in), positive = cast(positive_in), negative = cast(negative_in);
  TG_CHECK(margin > 0, Error, op, ": margin must be greater than 0, got ", margin);
  TG_CHECK(anchor.dim() == positive.dim() && positive.dim() == negative.dim(), ShapeError, op,
           ": The anchor, positive, and negative tensors are expected to have the same number of dimensions, but "
           "got: anchor ", anchor.dim(), "D, positive ", positive.dim(), "D, and negative ", negative.dim(), "D inputs");
  if (!distance_function) prim::check_floating(op, anchor.data());
  const DistanceFunction distance =
      distance_function ? distance_function
                        : DistanceFunction([](const Tensor& a, const Tensor& b) { return pairwise_distance(a, b, 2, 1e-6); });
  const Tensor dist_pos = distance(anchor, positive);
  Tensor dist_neg = distance(anchor, negative);
  if (swap) {   // the harder of the two negatives: min(d(a, n), d(p, n))
    const Tensor dist_swap = distance(positive, negative);
    dist_neg = where(lt(dist_swap, dist_neg), dist_swap, dist_neg);
  }
  // max(0, margin + d(a, p) - d(a, n))
  return reduce_loss(relu(add(sub(dist_pos, dist_neg), scalar_like(margin, dist_pos))), reduction);
}

}  // namespace tg
