// ops/ctc_loss.cpp: the connectionist temporal classification loss (torch.nn.functional.ctc_loss):
// argument checks, the alpha-beta recursions on the CPU in float64, and one recorded op whose rule
// is PyTorch's gradient. The other losses (compositions of differentiable ops) are in ops/loss.cpp;
// the module CTCLoss and functional::ctc_loss with CTCLossFuncOptions in nn/loss.h, nn/functional.h.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "tensorgrad/ops/autocast.h"
#include "tensorgrad/ops/ops.h"
#include "tensorgrad/prim/prim.h"

namespace tg {

// Note [ctc_loss]
// ~~~~~~~~~~~~~~~
// For one batch entry with input length T_b and target l_1 .. l_L, the extended label sequence is
// l' = (blank, l_1, blank, l_2, ..., l_L, blank), S' = 2L + 1 states. An alignment is a path through
// the states, one per time step, that starts in state 0 or 1, ends in state S' - 1 or S' - 2, and from
// state s moves to s, s + 1, or s + 2 when l'_{s+2} is a label different from l'_s (skipping a blank
// is allowed only between different labels, so repeated labels need a blank between them). The loss is
// -log of the sum over alignments of prod_t p_t(l'_{s_t}), computed in log space:
//   alpha_0(0) = lp_0(blank), alpha_0(1) = lp_0(l_1)
//   alpha_t(s) = lp_t(l'_s) + logsumexp(alpha_{t-1}(s), alpha_{t-1}(s-1), alpha_{t-1}(s-2) if allowed)
//   nll = -logsumexp(alpha_{T_b-1}(S'-1), alpha_{T_b-1}(S'-2))
// and beta the same recursion run backwards from the last step. No alignment (a target longer than
// the input allows, counting the blanks its repeats need) leaves every alpha at -inf: nll = inf, which
// zero_infinity replaces by 0. An input length of 0 gives 0 for an empty target, else inf. Positions
// t >= T_b are not read and get a zero gradient. This runs on the CPU in float64 (a CUDA or float32
// input is copied and converted, the loss and gradient copied back): the recursion is sequential in
// t, and the batches it serves are small.
//
// Note [ctc_loss gradient]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// With lcab_t(c) = logsumexp over the states s with l'_s = c of alpha_t(s) + beta_t(s), the derivative
// of nll with respect to lp_t(c) is -exp(lcab_t(c) + nll - lp_t(c)) (alpha and beta both include
// lp_t, hence the - lp_t). PyTorch's rule returns exp(lp_t(c)) - exp(lcab_t(c) + nll - lp_t(c)): the
// derivative with respect to the logits when lp = log_softmax(logits). The added exp(lp_t) sums over
// c to 1 at every step, so log_softmax's backward (g - softmax * sum(g)) removes it, and a
// log_softmax followed by ctc_loss gets the exact gradient; a log_probs leaf gets PyTorch's gradient,
// which this op reproduces. For an impossible alignment the rule reads -inf + inf (NaN, as PyTorch),
// unless zero_infinity zeroes that entry's gradient. The rule is computed once in the forward (only
// when a gradient is wanted) and scaled by the incoming gradient in the backward, a first-order rule:
// as PyTorch's ctc_loss_backward it is not differentiable again.

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

/// log(exp(a) + exp(b)) for a, b possibly -inf.
double log_add(double a, double b) {
  if (a == kNegInf) return b;
  if (b == kNegInf) return a;
  const double m = std::max(a, b);
  return m + std::log1p(std::exp(-std::abs(a - b)));
}

/// A length tensor (N) or 0-d as int64 values on the host; ShapeError for another size.
std::vector<int64_t> read_lengths(const char* what, const Tensor& lengths, int64_t N, bool batched) {
  TG_CHECK(lengths.defined(), Error, "ctc_loss: ", what, " is undefined");
  TG_CHECK(lengths.dtype() == kInt64 || lengths.dtype() == kInt32, DTypeError, "ctc_loss: ", what,
           " must be an int64 (or int32) tensor, got ", dtype_name(lengths.dtype()));
  TG_CHECK(batched ? (lengths.dim() == 1 && lengths.size(0) == N) : lengths.numel() == 1 && lengths.dim() <= 1,
           ShapeError, "ctc_loss: ", what, " must be of size batch_size (", N, "), got ", shape_str(lengths.shape()));
  const RawTensor host = lengths.data().to(Device::cpu()).to(kInt64).contiguous();
  const int64_t* p = host.data<int64_t>();
  return std::vector<int64_t>(p, p + host.numel());
}

}  // namespace

Tensor ctc_loss(const Tensor& log_probs_in, const Tensor& targets, const std::vector<int64_t>& input_lengths,
                const std::vector<int64_t>& target_lengths, int64_t blank, Reduction reduction, bool zero_infinity) {
  const char* op = "ctc_loss";
  // float32 under CPU autocast; CUDA's list does not have it (Note [Autocast op lists])
  const Tensor log_probs =
      log_probs_in.defined() ? amp::detail::cast(amp::detail::AutocastOp::CtcLoss, log_probs_in) : log_probs_in;
  // ---- checks, before anything is computed
  TG_CHECK(log_probs.dim() == 3 || log_probs.dim() == 2, ShapeError, op,
           ": log_probs must be (T, N, C) or unbatched (T, C), got ", shape_str(log_probs.shape()));
  prim::check_floating(op, log_probs.data());
  TG_CHECK(targets.dtype() == kInt64 || targets.dtype() == kInt32, DTypeError, op,
           ": targets must be an int64 (or int32) tensor, got ", dtype_name(targets.dtype()));
  const bool batched = log_probs.dim() == 3;
  const int64_t T = log_probs.size(0), N = batched ? log_probs.size(1) : 1, C = log_probs.size(-1);
  TG_CHECK(blank >= 0 && blank < C, IndexError, op, ": blank must be in label range: blank ", blank, " for ", C,
           " classes");
  TG_CHECK(static_cast<int64_t>(input_lengths.size()) == N, ShapeError, op, ": input_lengths must be of size batch_size (",
           N, "), got ", input_lengths.size());
  TG_CHECK(static_cast<int64_t>(target_lengths.size()) == N, ShapeError, op,
           ": target_lengths must be of size batch_size (", N, "), got ", target_lengths.size());
  // padded targets (N, S) (unbatched: (S)), or batched 1-D targets concatenated
  const bool concatenated = batched && targets.dim() == 1;
  if (batched) {
    TG_CHECK(targets.dim() == 2 || targets.dim() == 1, ShapeError, op,
             ": targets must be (N, S) padded or 1-D concatenated for log_probs ", shape_str(log_probs.shape()),
             ", got ", shape_str(targets.shape()));
    TG_CHECK(concatenated || targets.size(0) == N, ShapeError, op, ": targets ", shape_str(targets.shape()),
             " must have batch_size (", N, ") rows for log_probs ", shape_str(log_probs.shape()));
  } else {
    TG_CHECK(targets.dim() == 1, ShapeError, op, ": unbatched log_probs ", shape_str(log_probs.shape()),
             " expect 1-D targets, got ", shape_str(targets.shape()));
  }
  const int64_t S = targets.dim() == 2 ? targets.size(1) : targets.size(0);
  int64_t total = 0;
  for (int64_t b = 0; b < N; ++b) {
    const int64_t il = input_lengths[b], tl = target_lengths[b];
    TG_CHECK(il >= 0 && il <= T, Error, op, ": Expected input_lengths to have value at most ", T,
             " (and at least 0), but got value ", il, " for batch entry ", b);
    TG_CHECK(tl >= 0, Error, op, ": Expected target_lengths to be at least 0, but got value ", tl, " for batch entry ", b);
    TG_CHECK(concatenated || tl <= S, ShapeError, op, ": Expected tensor to have size at least ", tl,
             " at dimension ", targets.dim() - 1, ", but got size ", S, " for argument 'targets'");
    total += tl;
  }
  TG_CHECK(!concatenated || total <= S, ShapeError, op, ": concatenated targets hold ", S,
           " labels, fewer than the sum of target_lengths (", total, ")");
  prim::check_same_device(op, log_probs.data(), targets.data());

  // ---- the data on the host: lp (T, N, C) float64, each entry's target
  const Device device = log_probs.device();
  const DType dtype = log_probs.dtype();
  RawTensor lp_host = log_probs.data().to(Device::cpu()).to(kFloat64);
  if (!batched) lp_host = lp_host.unsqueeze(1);
  lp_host = lp_host.contiguous();
  const double* lp = lp_host.data<double>();
  const RawTensor tg_host = targets.data().to(Device::cpu()).to(kInt64).contiguous();
  const int64_t* tgt = tg_host.data<int64_t>();
  auto at = [&](int64_t t, int64_t b, int64_t c) { return lp[(t * N + b) * C + c]; };
  std::vector<int64_t> offset(N);
  for (int64_t b = 0, o = 0; b < N; ++b) {
    offset[b] = concatenated ? o : b * S;
    o += target_lengths[b];
    for (int64_t i = 0; i < target_lengths[b]; ++i) {
      const int64_t label = tgt[offset[b] + i];
      TG_CHECK(label >= 0 && label < C && label != blank, IndexError, op, ": target ", label, " of batch entry ", b,
               " (position ", i, ") is out of range for ", C, " classes or equal to blank ", blank);
    }
  }

  const bool want_grad = GradMode::is_enabled() && log_probs.requires_grad();
  std::vector<double> nll(N);
  std::vector<double> grad(want_grad ? T * N * C : 0, 0.0);   // the rule of Note [ctc_loss gradient], (T, N, C)
  for (int64_t b = 0; b < N; ++b) {
    const int64_t Tb = input_lengths[b], L = target_lengths[b], Sx = 2 * L + 1;
    // l'_s: blank at even s, l_{(s-1)/2} at odd s
    auto label = [&](int64_t s) { return s % 2 == 0 ? blank : tgt[offset[b] + s / 2]; };
    // the skip s-2 -> s is allowed when l'_s is a label different from l'_{s-2}
    auto skip = [&](int64_t s) { return s % 2 == 1 && s >= 2 && label(s) != label(s - 2); };
    if (Tb == 0) {
      nll[b] = L == 0 ? 0.0 : std::numeric_limits<double>::infinity();
      continue;   // no step to differentiate: the gradient stays 0
    }
    std::vector<double> alpha(Tb * Sx, kNegInf), beta(Tb * Sx, kNegInf);
    alpha[0] = at(0, b, blank);
    if (Sx > 1) alpha[1] = at(0, b, label(1));
    for (int64_t t = 1; t < Tb; ++t) {
      for (int64_t s = 0; s < Sx; ++s) {
        double a = alpha[(t - 1) * Sx + s];
        if (s >= 1) a = log_add(a, alpha[(t - 1) * Sx + s - 1]);
        if (skip(s)) a = log_add(a, alpha[(t - 1) * Sx + s - 2]);
        alpha[t * Sx + s] = a == kNegInf ? kNegInf : a + at(t, b, label(s));
      }
    }
    const double* last = &alpha[(Tb - 1) * Sx];
    nll[b] = -(Sx > 1 ? log_add(last[Sx - 1], last[Sx - 2]) : last[0]);
    if (!want_grad || (zero_infinity && std::isinf(nll[b]))) continue;   // zero_infinity: a zero gradient
    beta[(Tb - 1) * Sx + Sx - 1] = at(Tb - 1, b, blank);
    if (Sx > 1) beta[(Tb - 1) * Sx + Sx - 2] = at(Tb - 1, b, label(Sx - 2));
    for (int64_t t = Tb - 2; t >= 0; --t) {
      for (int64_t s = 0; s < Sx; ++s) {
        double v = beta[(t + 1) * Sx + s];
        if (s + 1 < Sx) v = log_add(v, beta[(t + 1) * Sx + s + 1]);
        if (s + 2 < Sx && skip(s + 2)) v = log_add(v, beta[(t + 1) * Sx + s + 2]);
        beta[t * Sx + s] = v == kNegInf ? kNegInf : v + at(t, b, label(s));
      }
    }
    std::vector<double> lcab(C);
    for (int64_t t = 0; t < Tb; ++t) {
      std::fill(lcab.begin(), lcab.end(), kNegInf);
      for (int64_t s = 0; s < Sx; ++s) {
        const double ab = alpha[t * Sx + s] + beta[t * Sx + s];   // -inf when either is
        lcab[label(s)] = log_add(lcab[label(s)], ab);
      }
      for (int64_t c = 0; c < C; ++c) {   // sets: exp(lp) - exp(lcab + nll - lp)
        const double l = at(t, b, c);
        grad[(t * N + b) * C + c] = std::exp(l) - std::exp(lcab[c] + nll[b] - l);
      }
    }
  }

  // ---- the reduction: per-entry losses and the factor each entry's gradient is scaled by
  std::vector<double> scale(N, 1.0);
  double reduced = 0;
  for (int64_t b = 0; b < N; ++b) {
    if (zero_infinity && std::isinf(nll[b])) nll[b] = 0;
    if (reduction == Reduction::Mean) scale[b] = 1.0 / static_cast<double>(std::max<int64_t>(target_lengths[b], 1)) / N;
    reduced += nll[b] * scale[b];
  }
  RawTensor out;
  if (reduction == Reduction::None) {
    out = prim::from_host(nll.data(), batched ? Shape{N} : Shape{}, kFloat64, Device::cpu());
  } else {
    out = prim::from_host(&reduced, Shape{}, kFloat64, Device::cpu());
  }
  out = out.to(dtype).to(device);
  if (!want_grad) return Tensor(out);
  for (int64_t t = 0; t < T; ++t) {   // the reduction's factors folded into the rule (sets, in place)
    for (int64_t b = 0; b < N; ++b) {
      for (int64_t c = 0; c < C; ++c) grad[(t * N + b) * C + c] *= scale[b];
    }
  }
  const RawTensor rule = prim::from_host(grad.data(), log_probs.shape(), kFloat64, Device::cpu()).to(dtype).to(device);
  // the incoming gradient: 0-d for mean and sum, (N) for none (0-d unbatched), broadcast along (T, ., C)
  const Shape grad_view = reduction == Reduction::None && batched ? Shape{1, N, 1} : Shape{};
  return record(op, out, {log_probs}, [rule, grad_view](const RawTensor& g_out, Grads& g) {
    if (g.need(0)) g.set(0, prim::mul(rule, g_out.reshape(grad_view)));   // d loss / d lp: the rule times the incoming gradient
  });
}

Tensor ctc_loss(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                const Tensor& target_lengths, int64_t blank, Reduction reduction, bool zero_infinity) {
  TG_CHECK(log_probs.dim() == 3 || log_probs.dim() == 2, ShapeError,
           "ctc_loss: log_probs must be (T, N, C) or unbatched (T, C), got ", shape_str(log_probs.shape()));
  const bool batched = log_probs.dim() == 3;
  const int64_t N = batched ? log_probs.size(1) : 1;
  return ctc_loss(log_probs, targets, read_lengths("input_lengths", input_lengths, N, batched),
                  read_lengths("target_lengths", target_lengths, N, batched), blank, reduction, zero_infinity);
}

}  // namespace tg
