/// \file
/// kernels/ctc.h: the CTC loss's arguments (CtcArgs) and shared value-level rules (Note [Kernel
/// families] in backend/backend.h): the extended labels, one state's step of the alpha and beta recursions, the log-space sum of a
/// class's states and the gradient rule, written once for the CPU loops (backend/cpu/ctc_loss.cpp) and
/// the CUDA kernels (backend/cuda/ctc_loss.cu). Compiled by g++ and by nvcc.

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
// t >= T_b are not read and get a zero gradient.
//
// Both backends compute in float64 whatever the input's dtype (float32 or float64; float16 and
// bfloat16 come through float32): log_probs are read in their dtype and widened, alpha, beta and nll
// are float64, and only the gradient is rounded to the input's dtype, once. PyTorch's CUDA kernels
// compute in the input's dtype; float64 here keeps the CUDA results those of the CPU reference up to
// the last bits of float64 (the device's exp and log1p against libm's: a few ulp per operation, over
// the T_b steps of a recursion), so a float32 loss or gradient differs from the CPU's by at most one
// float32 rounding. The cost is float64 arithmetic on the device, small next to the log_softmax that
// feeds the loss.
//
// Kernels (backend/cuda/ctc_loss.cu): the recursion is sequential in t and parallel over the states,
// so each runs as one block per batch entry whose threads take the states (and the classes), looping
// over t with a __syncthreads between steps: one launch for the forward (alpha and nll) and one for
// the gradient (beta and the rule of Note [ctc_loss gradient], row t of the gradient right after beta
// row t, so beta needs only two rows per entry). The launch count does not grow with T or N; a batch
// with fewer entries than the device has multiprocessors leaves some idle, acceptable for a loss whose
// T S' work per entry is small. The CPU backend runs the same steps, one entry per task. The lengths
// are host values (the op checks them, as PyTorch's); they travel to the device with the offsets of
// each entry's labels in targets, a host-to-device copy, and nothing comes back to the host. The
// labels themselves are checked on the host for CPU tensors and by the forward kernel for CUDA ones
// (Note [Device error flag] in backend/cuda/softmax_loss.cu: an entry with a bad label gets a NaN
// loss and gradient and the IndexError of ctc_target_error is raised at the next sync; with several
// bad labels the CPU names the first, the device any one of them).
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
// when a gradient is wanted), each entry's rows already scaled by the reduction's factor (ctc_math::
// scale), and multiplied by the incoming gradient in the backward, a first-order rule: as PyTorch's
// ctc_loss_backward it is not differentiable again. A class c that is not in l' has lcab = -inf and
// the rule exp(lp_t(c)); each class of l' sums its states in increasing s, on both backends, so the
// CPU and CUDA sums round alike.
#pragma once
#include <cmath>
#include <cstdint>

#include "tensorgrad/core/macros.h"

namespace tg {

/// The geometry and options of one CTC loss (Backend::ctc_loss, ctc_loss_backward; Note [ctc_loss]
/// above): log_probs (T, N, C); entry b's target has L_b <= S labels, so its alpha and beta
/// rows have 2 L_b + 1 <= 2 S + 1 states.
struct CtcArgs {
  int64_t T = 0;   ///< Time steps of log_probs.
  int64_t N = 0;   ///< Batch entries.
  int64_t C = 0;   ///< Classes, the blank included.
  int64_t S = 0;   ///< The longest target length (the workspaces hold 2 S + 1 states per row).
  int64_t blank = 0;   ///< The blank's class.
  /// Backward: an entry whose nll is inf (no alignment) gets a zero gradient.
  bool zero_infinity = false;
  /// Backward: entry b's gradient is scaled by 1 / max(L_b, 1) / N (the mean reduction), else by 1.
  bool mean = false;
};

/// \cond INTERNAL
namespace ctc_math {

/// -inf, the log of 0.
TG_HD double neg_inf() { return -static_cast<double>(INFINITY); }

/// log(exp(a) + exp(b)) for a, b possibly -inf (NaN in, NaN out).
TG_HD double log_add(double a, double b) {
  if (a == neg_inf()) return b;
  if (b == neg_inf()) return a;
  const double m = a < b ? b : a;
  return m + std::log1p(std::exp(-std::fabs(a - b)));
}

/// One batch entry's extended labels l' (Note [ctc_loss]) over its L target labels.
struct Labels {
  const int64_t* target;   ///< the entry's first label
  int64_t blank;
  /// l'_s: blank at even s, l_{(s-1)/2} at odd s.
  TG_HD int64_t operator()(int64_t s) const { return s % 2 == 0 ? blank : target[s / 2]; }
  /// Whether the skip s - 2 -> s is allowed: l'_s a label different from l'_{s-2}.
  TG_HD bool skip(int64_t s) const { return s % 2 == 1 && s >= 2 && target[s / 2] != target[s / 2 - 1]; }
  /// Whether label i (0-based) is its value's first occurrence in the target: the one position whose
  /// states sum the class's lcab.
  TG_HD bool first(int64_t i) const {
    for (int64_t j = 0; j < i; ++j)
      if (target[j] == target[i]) return false;
    return true;
  }
};

/// Whether a label is a class of C other than the blank.
TG_HD bool label_ok(int64_t label, int64_t C, int64_t blank) { return label >= 0 && label < C && label != blank; }

/// alpha_0(s), with l = lp_0(l'_s): states 0 and 1 start a path.
TG_HD double alpha_first(int64_t s, double l) { return s < 2 ? l : neg_inf(); }

/// alpha_t(s) from the previous row prev = alpha_{t-1}, with l = lp_t(l'_s).
TG_HD double alpha_step(const double* prev, int64_t s, const Labels& lab, double l) {
  double a = prev[s];
  if (s >= 1) a = log_add(a, prev[s - 1]);
  if (lab.skip(s)) a = log_add(a, prev[s - 2]);
  return a == neg_inf() ? neg_inf() : a + l;
}

/// nll from the last row of alpha (Sx = 2L + 1 states).
TG_HD double nll_of(const double* last, int64_t Sx) { return -(Sx > 1 ? log_add(last[Sx - 1], last[Sx - 2]) : last[0]); }

/// nll of an entry with input length 0: no step, so 0 for an empty target, else no alignment.
TG_HD double nll_empty(int64_t L) { return L == 0 ? 0.0 : static_cast<double>(INFINITY); }

/// beta_{T_b-1}(s), with l = lp_{T_b-1}(l'_s): states Sx - 1 and Sx - 2 end a path.
TG_HD double beta_last(int64_t s, int64_t Sx, double l) { return s >= Sx - 2 ? l : neg_inf(); }

/// beta_t(s) from the next row next = beta_{t+1}, with l = lp_t(l'_s).
TG_HD double beta_step(const double* next, int64_t s, int64_t Sx, const Labels& lab, double l) {
  double v = next[s];
  if (s + 1 < Sx) v = log_add(v, next[s + 1]);
  if (s + 2 < Sx && lab.skip(s + 2)) v = log_add(v, next[s + 2]);
  return v == neg_inf() ? neg_inf() : v + l;
}

/// lcab_t(l'_{s0}) (Note [ctc_loss gradient]) from the rows alpha_t and beta_t: the states s >= s0 of
/// s0's parity with the label of s0, in increasing s (s0 = 0 for the blank, 2 i + 1 for the first
/// occurrence i of a label).
TG_HD double lcab(const double* alpha, const double* beta, const Labels& lab, int64_t s0, int64_t Sx) {
  const int64_t c = lab(s0);
  double acc = neg_inf();
  for (int64_t s = s0; s < Sx; s += 2)
    if (lab(s) == c) acc = log_add(acc, alpha[s] + beta[s]);   // -inf when either is
  return acc;
}

/// The rule exp(lp) - exp(lcab + nll - lp), times the entry's factor.
TG_HD double grad_value(double l, double lcab_c, double nll, double scale) {
  return (std::exp(l) - std::exp(lcab_c + nll - l)) * scale;
}

/// The factor of entry b's loss and gradient: 1 / max(L, 1) / N for the mean reduction, else 1.
TG_HD double scale(bool mean, int64_t L, int64_t N) {
  return mean ? 1.0 / static_cast<double>(L > 1 ? L : 1) / static_cast<double>(N) : 1.0;
}

/// Whether entry b's gradient is zero throughout: zero_infinity and no alignment.
TG_HD bool zeroed(bool zero_infinity, double nll) { return zero_infinity && (nll == static_cast<double>(INFINITY) || nll == neg_inf()); }

}  // namespace ctc_math
/// \endcond
}  // namespace tg
