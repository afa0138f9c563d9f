// ops/softmax_loss.cpp: softmax, log_softmax, the fused softmax-cross-entropy loss, mse_loss, dropout and
// dropout2d.
// Kernels: Backend::softmax / cross_entropy (one pass per row). Modules wrapping these: nn/.
#include "tensorgrad/ops/autocast.h"
#include "tensorgrad/kernels/philox.h"
#include "tensorgrad/prim/prim.h"
#include "tensorgrad/ops/ops.h"
#include "tensorgrad/ops/rules.h"

namespace tg {

namespace {
Tensor softmax_impl(const Tensor& x_in, int64_t dim, bool log) {
  using amp::detail::AutocastOp;
  // Note [Autocast op lists]: float32 on CUDA, the input's dtype on the CPU
  const Tensor x = amp::detail::cast(log ? AutocastOp::LogSoftmax : AutocastOp::Softmax, x_in);
  const char* name = log ? "log_softmax" : "softmax";
  RawTensor y = prim::softmax(x.data(), dim, log);
  dim = wrap_dim(dim, x.dim(), name);
  SavedTensor y_saved = any_requires_grad({x}) ? SavedTensor(y, name) : SavedTensor();
  return record(name, y, {x}, [y_saved, dim, log](const auto& grad, auto& g) {
    // softmax: dx = y (grad - sum(grad y));  log_softmax: dx = grad - exp(y) sum(grad)
    if constexpr (first_order_v<decltype(g)>) {   // one fused kernel
      g.set(0, prim::softmax_backward(y_saved.get(), grad, dim, log));
    } else {   // the same formulas, recorded (Note [Differentiable rules])
      const Tensor yt = g.output(y_saved);
      g.set(0, log ? grad - exp(yt) * sum(grad, dim, true) : yt * (grad - sum(grad * yt, dim, true)));
    }
  });
}
}  // namespace

Tensor softmax(const Tensor& x, int64_t dim) { return softmax_impl(x, dim, false); }
Tensor log_softmax(const Tensor& x, int64_t dim) { return softmax_impl(x, dim, true); }

// logits (N, C), target (N) int64 -> loss: (N) for None, 0-d for Mean and Sum. Rows whose target is
// ignore_index count for nothing (the mean divides by the rows that are not ignored, as in PyTorch).
namespace {
/// cross_entropy with class probabilities as targets (a floating target of the logits' shape: PyTorch's
/// rule; another floating target is refused as indices would be), classes along dim 1: -sum_c t_c log_softmax(x)_c per position, t mixed with the uniform distribution by
/// label_smoothing; composed, so the target gets a gradient too, as in PyTorch.
Tensor cross_entropy_probabilities(const Tensor& logits, const Tensor& target, Reduction reduction,
                                   double label_smoothing) {
  TG_CHECK(label_smoothing >= 0 && label_smoothing <= 1, Error,
           "cross_entropy: label_smoothing must be in [0, 1], got ", label_smoothing);
  const int64_t class_dim = logits.dim() == 1 ? 0 : 1;
  const Tensor t = amp::detail::cast(amp::detail::AutocastOp::CrossEntropy, target);
  Tensor mixed = t;
  if (label_smoothing > 0) {
    const double C = static_cast<double>(logits.size(class_dim));
    mixed = add(mul(t, scalar_like(1.0 - label_smoothing, t)), scalar_like(label_smoothing / C, t));
  }
  const Tensor loss = neg(sum(mul(log_softmax(logits, class_dim), mixed), class_dim));
  if (reduction == Reduction::None) return loss;
  return reduction == Reduction::Sum ? sum(loss) : mean(loss);
}
}  // namespace

namespace {
/// cross_entropy's gradient with respect to logits x (N, C) as recorded ops, for a backward under
/// create_graph: (softmax(x) - q) times each row's weight, q = (1 - s) onehot(target) + s / C the target
/// distribution and the weight grad (per row, or the total's, divided by the count for the mean), 0
/// for ignored rows. q and the weights' masks are constants.
Tensor cross_entropy_grad(const Tensor& x, const RawTensor& target, const CrossEntropyArgs& args, const Tensor& grad,
                          const RawTensor& count) {
  const int64_t N = x.size(0), C = x.size(1);
  const RawTensor valid = prim::binary(BinaryOp::Ne, target, prim::scalar_like(static_cast<double>(args.ignore_index), target),
                                       "cross_entropy");
  const RawTensor safe = prim::where(valid, target, prim::scalar_like(0.0, target)).reshape({N, 1});
  RawTensor q = prim::full({N, C}, args.label_smoothing / static_cast<double>(C), x.dtype(), x.device());
  prim::scatter_add_(q, 1, safe, prim::full({N, 1}, 1.0 - args.label_smoothing, x.dtype(), x.device()));
  Tensor weight = Tensor(valid.to(x.dtype()).reshape({N, 1})) * (args.total ? grad : grad.reshape({N, 1}));
  if (args.mean) weight = weight / Tensor(count.to(x.dtype()));
  return (softmax(x, 1) - Tensor(q)) * weight;
}
}  // namespace

Tensor cross_entropy(const Tensor& logits_in, const Tensor& target, Reduction reduction, int64_t ignore_index,
                       double label_smoothing) {
  if (target.defined() && is_floating(target.dtype()) && target.shape() == logits_in.shape())
    return cross_entropy_probabilities(amp::detail::cast(amp::detail::AutocastOp::CrossEntropy, logits_in), target,
                                       reduction, label_smoothing);
  if (logits_in.dim() > 2) {
    // (N, C, d1, ...) with target (N, d1, ...): every position is a row of C logits
    Shape want = logits_in.shape();
    want.erase(want.begin() + 1);
    TG_CHECK(target.shape() == want, ShapeError, "cross_entropy: Expected target size ", shape_str(want), ", got ",
             shape_str(target.shape()));
    std::vector<int64_t> order(static_cast<std::size_t>(logits_in.dim()));
    for (int64_t d = 0; d < logits_in.dim(); ++d) order[static_cast<std::size_t>(d)] = d;
    order.erase(order.begin() + 1);
    order.push_back(1);   // the classes last
    const int64_t C = logits_in.size(1);
    const Tensor rows = reshape(permute(logits_in, order), Shape{target.numel(), C});
    const Tensor loss = cross_entropy(rows, reshape(target, Shape{target.numel()}), reduction, ignore_index,
                                      label_smoothing);
    return reduction == Reduction::None ? reshape(loss, target.shape()) : loss;
  }
  TG_CHECK(!target.requires_grad(), AutogradError, "cross_entropy: no gradient with respect to targets");
  // Note [Autocast op lists]: float32
  const Tensor logits = amp::detail::cast(amp::detail::AutocastOp::CrossEntropy, logits_in);
  // The reduction is folded into the kernels: the forward writes the sum or mean (and the count of
  // rows not ignored, kept on the device: no sync), the backward divides by that count itself.
  const CrossEntropyArgs args{ignore_index, label_smoothing, reduction != Reduction::None, reduction == Reduction::Mean};
  prim::CrossEntropyResult r = prim::cross_entropy(logits.data(), target.data(), args);
  const RawTensor out = reduction == Reduction::None ? r.loss : r.total;
  const bool need = any_requires_grad({logits});
  SavedTensor x_saved = need ? SavedTensor(logits) : SavedTensor();
  SavedTensor t_saved = need ? SavedTensor(target) : SavedTensor();
  SavedTensor lse_saved = need ? SavedTensor(r.lse, "cross_entropy") : SavedTensor();        // (N)
  SavedTensor count_saved = need && r.count.defined() ? SavedTensor(r.count, "cross_entropy") : SavedTensor();
  return record("cross_entropy", out, {logits}, [x_saved, t_saved, lse_saved, count_saved, args](const auto& grad, auto& g) {
    // dlogits = (softmax(logits) - (1 - s) onehot(target) - s / C) * grad per row (/ count for the mean)
    if constexpr (first_order_v<decltype(g)>) {   // one fused kernel
      g.set(0, prim::cross_entropy_backward(x_saved.get(), t_saved.get(), args, lse_saved.get(), grad, count_saved.get()));
    } else if (x_saved.get().dim() == 2) {   // the same formula as recorded ops
      g.set(0, cross_entropy_grad(g.input(0, x_saved), t_saved.get(), args, grad, count_saved.get()));
    } else {
      g.set(0, g.first_order_only(prim::cross_entropy_backward(x_saved.get(), t_saved.get(), args, lse_saved.get(),
                                                               grad.data(), count_saved.get()),
                                  grad));
    }
  });
}

Tensor cross_entropy(const Tensor& logits_in, const Tensor& target, const Tensor& weight, Reduction reduction,
                     int64_t ignore_index, double label_smoothing) {
  if (!weight.defined()) return cross_entropy(logits_in, target, reduction, ignore_index, label_smoothing);
  TG_CHECK(logits_in.defined() && logits_in.dim() >= 1, ShapeError, "cross_entropy: expected logits of at least 1 dim");
  const int64_t class_dim = logits_in.dim() == 1 ? 0 : 1;
  const int64_t C = logits_in.size(class_dim);
  TG_CHECK(weight.dim() == 1 && weight.numel() == C, ShapeError, "cross_entropy: weight tensor should be defined either ",
           "for all ", C, " classes or no classes but got weight tensor of shape: ", shape_str(weight.shape()));
  TG_CHECK(label_smoothing >= 0 && label_smoothing <= 1, Error,
           "cross_entropy: label_smoothing must be in [0, 1], got ", label_smoothing);
  TG_CHECK(!weight.requires_grad(), AutogradError, "cross_entropy: the class weights get no gradient; detach() them");
  const Tensor logits = amp::detail::cast(amp::detail::AutocastOp::CrossEntropy, logits_in);
  const Tensor logp = log_softmax(logits, class_dim);
  Shape along_classes(static_cast<std::size_t>(logits.dim()), 1);
  along_classes[static_cast<std::size_t>(class_dim)] = C;
  const Tensor w = reshape(weight.to(logp.dtype()), along_classes);   // broadcasts along the classes
  const double s = label_smoothing;
  if (target.defined() && is_floating(target.dtype()) && target.shape() == logits.shape()) {   // class probabilities
    const Tensor t = amp::detail::cast(amp::detail::AutocastOp::CrossEntropy, target);
    const Tensor mixed = s > 0 ? t * (1.0 - s) + s / static_cast<double>(C) : t;
    const Tensor loss = neg(sum(logp * mixed * w, class_dim));
    if (reduction == Reduction::None) return loss;
    return reduction == Reduction::Sum ? sum(loss) : mean(loss);
  }
  const Tensor nll = nll_loss(logp, target, weight.to(logp.dtype()), reduction, ignore_index);
  if (s == 0) return nll;
  // the smoothing term, 0 at ignored positions, reduced as nll_loss reduces (Mean: over the weights)
  const Tensor valid = ne(target, scalar_like(static_cast<double>(ignore_index), target));
  const Tensor smooth = where(valid, neg(sum(logp * w, class_dim)), scalar_like(0.0, logp));
  Tensor reduced = smooth;
  if (reduction == Reduction::Sum) {
    reduced = sum(smooth);
  } else if (reduction == Reduction::Mean) {
    const Tensor safe = where(valid, target, scalar_like(0.0, target));
    const Tensor picked = reshape(index_select(weight.to(logp.dtype()), 0, reshape(safe, Shape{safe.numel()})), safe.shape());
    reduced = sum(smooth) / sum(where(valid, picked, scalar_like(0.0, picked)));
  }
  return nll * (1.0 - s) + reduced * (s / static_cast<double>(C));
}

Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  TG_CHECK(input.shape() == target.shape(), ShapeError, "mse_loss: input of shape ", shape_str(input.shape()),
           " and target of shape ", shape_str(target.shape()), " must have the same shape");
  // Note [Autocast op lists]: float32. Composite: the gradient comes from sub, mul and the reduction.
  using amp::detail::AutocastOp;
  const Tensor d = sub(amp::detail::cast(AutocastOp::MseLoss, input), amp::detail::cast(AutocastOp::MseLoss, target));
  const Tensor sq = mul(d, d);
  if (reduction == Reduction::None) return sq;
  return reduction == Reduction::Sum ? sum(sq) : mean(sq);
}

Tensor dropout(const Tensor& x, double p, bool training) {
  TG_CHECK(p >= 0 && p <= 1, Error, "dropout: probability has to be between 0 and 1, but got ", p);
  if (!training || p == 0) return x;
  prim::check_floating("dropout", x.data());
  // mask = [u >= p] / (1 - p), u drawn from the global Philox stream (manual_seed makes it repeatable).
  // Backward saves no mask: it draws the same u again from the stream position of the forward's draw.
  auto make_mask = [p](const RawTensor& u) {
    RawTensor mask = prim::binary(BinaryOp::Ge, u, prim::scalar_like(p, u), "dropout").to(u.dtype());   // a 0/1 mask in u's dtype
    if (p < 1) prim::binary_(BinaryOp::Mul, mask, prim::scalar_like(1.0 / (1.0 - p), mask), "dropout");
    return mask;
  };
  const philox::Distribution uniform = philox::Distribution::uniform(0.0, 1.0);
  RngState drawn_at;
  RawTensor out = prim::mul(x.data(), make_mask(prim::random(uniform, x.shape(), x.dtype(), x.device(), &drawn_at)));
  return record("dropout", out, {x}, [make_mask, uniform, drawn_at, dtype = x.dtype()](const auto& grad, auto& g) {
    using T = std::decay_t<decltype(grad)>;
    const RawTensor u = prim::random_at(uniform, grad.shape(), dtype, grad.device(), drawn_at);
    g.set(0, rules::mul(grad, T(make_mask(u))));                         // d(x * mask)/dx = mask
  });
}

Tensor dropout2d(const Tensor& x, double p, bool training) {
  TG_CHECK(p >= 0 && p <= 1, Error, "dropout2d: dropout probability has to be between 0 and 1, but got ", p);
  TG_CHECK(x.dim() >= 2, ShapeError, "dropout2d: expected an input of at least 2 dims (N, C, ...), got shape ",
           shape_str(x.shape()));
  if (!training || p == 0) return x;
  prim::check_floating("dropout2d", x.data());
  // one draw per (n, c) plane, broadcast over the plane: keep where u >= p, scaled by 1/(1-p); the
  // product's backward multiplies by the same mask
  Shape planes{x.size(0), x.size(1)};
  for (int64_t d = 2; d < x.dim(); ++d) planes.push_back(1);
  const RawTensor u = prim::random(philox::Distribution::uniform(0.0, 1.0), planes, x.dtype(), x.device());
  RawTensor mask = prim::binary(BinaryOp::Ge, u, prim::scalar_like(p, u), "dropout2d").to(x.dtype());
  if (p < 1) prim::binary_(BinaryOp::Mul, mask, prim::scalar_like(1.0 / (1.0 - p), mask), "dropout2d");
  return mul(x, Tensor(mask));
}

}  // namespace tg
