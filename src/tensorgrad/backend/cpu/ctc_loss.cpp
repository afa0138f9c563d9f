// backend/cpu/ctc_loss.cpp: the CTC loss of the CPU Backend (Note [ctc_loss] in kernels/ctc.h): the
// alpha recursion and nll, and the beta recursion with the gradient rule, one batch entry per task of
// core/parallel.h's pool, with kernels/ctc.h's rules in float64. The reference the CUDA twin
// (backend/cuda/ctc_loss.cu) is tested against.
#include <vector>

#include "tensorgrad/backend/cpu/cpu_backend.h"
#include "tensorgrad/kernels/ctc.h"

namespace tg {
namespace cpu {

namespace {

/// Entry b's operands: its lengths, labels and log_probs lp_t(c) = lp[(t N + b) C + c], widened.
template <class T>
struct Entry {
  const T* lp;
  int64_t N, C, b, Tb, L, Sx;
  ctc_math::Labels lab;
  Entry(const T* lp_, const int64_t* targets, const int64_t* lengths, const CtcArgs& a, int64_t b_)
      : lp(lp_), N(a.N), C(a.C), b(b_), Tb(lengths[b_]), L(lengths[a.N + b_]), Sx(2 * L + 1),
        lab{targets + lengths[2 * a.N + b_], a.blank} {}
  double at(int64_t t, int64_t c) const { return static_cast<double>(lp[(t * N + b) * C + c]); }
};

}  // namespace

void CpuBackend::ctc_loss(const RawTensor& log_probs, const RawTensor& targets, const RawTensor& lengths,
                          const CtcArgs& args, const RawTensor& alpha, const RawTensor& nll) {
  const int64_t N = args.N, W = 2 * args.S + 1, T = args.T;
  dispatch_only<kFloat32, kFloat64>(log_probs.dtype(), "ctc_loss", [&](auto tag) {
    using V = decltype(tag);
    const V* lp = log_probs.data<V>();
    const int64_t *tgt = targets.data<int64_t>(), *len = lengths.data<int64_t>();
    double *al = alpha.data<double>(), *out = nll.data<double>();
    parallel::run(N, row_parts(N, T * W), [&](int64_t b0, int64_t b1) {
      for (int64_t b = b0; b < b1; ++b) {
        const Entry<V> e(lp, tgt, len, args, b);
        if (e.Tb == 0) {
          out[b] = ctc_math::nll_empty(e.L);
          continue;
        }
        double* a = al + b * T * W;   // row t at a + t W
        for (int64_t s = 0; s < e.Sx; ++s) a[s] = ctc_math::alpha_first(s, e.at(0, e.lab(s)));
        for (int64_t t = 1; t < e.Tb; ++t) {
          for (int64_t s = 0; s < e.Sx; ++s)
            a[t * W + s] = ctc_math::alpha_step(a + (t - 1) * W, s, e.lab, e.at(t, e.lab(s)));
        }
        out[b] = ctc_math::nll_of(a + (e.Tb - 1) * W, e.Sx);
      }
    });
  });
}

void CpuBackend::ctc_loss_backward(const RawTensor& log_probs, const RawTensor& targets, const RawTensor& lengths,
                                   const RawTensor& alpha, const RawTensor& nll, const CtcArgs& args,
                                   const RawTensor& beta, const RawTensor& grad) {
  const int64_t N = args.N, W = 2 * args.S + 1, T = args.T, C = args.C;
  dispatch_only<kFloat32, kFloat64>(log_probs.dtype(), "ctc_loss_backward", [&](auto tag) {
    using V = decltype(tag);
    const V* lp = log_probs.data<V>();
    const int64_t *tgt = targets.data<int64_t>(), *len = lengths.data<int64_t>();
    const double *al = alpha.data<double>(), *nl = nll.data<double>();
    double* be = beta.data<double>();
    V* g = grad.data<V>();
    parallel::run(N, row_parts(N, T * (W + C)), [&](int64_t b0, int64_t b1) {
      for (int64_t b = b0; b < b1; ++b) {
        const Entry<V> e(lp, tgt, len, args, b);
        const double n = nl[b], scale = ctc_math::scale(args.mean, e.L, N);
        auto row = [&](int64_t t) { return g + (t * N + b) * C; };
        // rows t >= T_b, and every row of a zeroed entry: 0; a NaN nll (NaN input): NaN, as the rule gives
        const int64_t live = ctc_math::zeroed(args.zero_infinity, n) ? 0 : e.Tb;
        for (int64_t t = live; t < T; ++t)
          for (int64_t c = 0; c < C; ++c) row(t)[c] = V(0);
        if (live == 0) continue;
        if (n != n) {
          for (int64_t t = 0; t < live; ++t)
            for (int64_t c = 0; c < C; ++c) row(t)[c] = static_cast<V>(n);
          continue;
        }
        const double* a = al + b * T * W;
        double* rows[2] = {be + b * 2 * W, be + b * 2 * W + W};   // beta_t in rows[t % 2]
        for (int64_t t = e.Tb - 1; t >= 0; --t) {
          double* cur = rows[t % 2];
          for (int64_t s = 0; s < e.Sx; ++s) {
            const double l = e.at(t, e.lab(s));
            cur[s] = t == e.Tb - 1 ? ctc_math::beta_last(s, e.Sx, l) : ctc_math::beta_step(rows[(t + 1) % 2], s, e.Sx, e.lab, l);
          }
          V* r = row(t);
          for (int64_t c = 0; c < C; ++c) r[c] = static_cast<V>(ctc_math::grad_value(e.at(t, c), ctc_math::neg_inf(), n, scale));
          // the classes of l': the blank's states from s = 0, each label's from its first occurrence
          for (int64_t i = -1; i < e.L; ++i) {
            if (i >= 0 && !e.lab.first(i)) continue;
            const int64_t s0 = i < 0 ? 0 : 2 * i + 1, c = e.lab(s0);
            r[c] = static_cast<V>(ctc_math::grad_value(e.at(t, c), ctc_math::lcab(a + t * W, cur, e.lab, s0, e.Sx), n, scale));
          }
        }
      }
    });
  });
}

}  // namespace cpu
}  // namespace tg
