// backend/cpu/softmax_loss.cpp: the softmax and loss family of the CPU backend: softmax / log-softmax forward
// and backward, and the fused cross-entropy with ignore_index and label smoothing. The CUDA twin is
// backend/cuda/softmax_loss.cu (Note [Kernel families] in backend/backend.h).
#include "tensorgrad/backend/cpu/cpu_backend.h"

namespace tg {
namespace cpu {

// Softmax family. Note [Row blocks]: with contiguous rows (softmax over the last dim, every
// cross-entropy) a block of rows is shifted by its row maxima, exponentiated in one vectorized pass
// (exp_in_place), then summed per row. Blocks hold about 16K elements so that the three passes
// stay in the L1/L2 cache; short rows (10 classes) vectorize as well as long ones.
void CpuBackend::softmax(const RawTensor& x, int64_t dim, bool log, const RawTensor& out) {
  dispatch_only<kFloat32, kFloat64>(x.dtype(), "softmax", [&](auto t) {
    using T = decltype(t);
    const RowView r = rows_of(x, dim);
    const T* xp = x.data<T>();
    T* yp = out.data<T>();
    if (r.inner == 1) {
      const int64_t D = r.D;
      for_row_blocks(r.outer, D, [&](int64_t b, int64_t e) {
        with_kernels([&](auto k) {
          using K = decltype(k);
          Scratch<T> maxes(e - b);
          K::exp_of_shifted_rows(xp + b * D, e - b, D, yp + b * D, maxes.get());
          for (int64_t n = b; n < e; ++n) {
            T* y = yp + n * D;
            const double s = K::row_sum(y, D);
            if (log) {
              const T lse = softmax_math::log_sum_exp(s, maxes.get()[n - b]);
              for (int64_t d = 0; d < D; ++d) y[d] = softmax_math::log_softmax_value(xp[n * D + d], lse);
            } else {   // fast path: the reference is softmax_math::softmax_value, the strided loop's
              const T inv = static_cast<T>(1.0 / s);
              for (int64_t d = 0; d < D; ++d) y[d] *= inv;
            }
          }
        });
      });
      return;
    }
    parallel_for(r.outer * r.inner, r.D * 8, [&](int64_t b, int64_t e) {   // strided rows: one at a time
      for (int64_t k = b; k < e; ++k) {
        const int64_t off = (k / r.inner) * r.D * r.inner + k % r.inner;
        const T* in = xp + off;
        T* y = yp + off;
        T m = in[0];
        for (int64_t d = 1; d < r.D; ++d) m = std::max(m, in[d * r.inner]);
        m = softmax_math::shift(m);
        double s = 0;
        for (int64_t d = 0; d < r.D; ++d) s += fn::exp(in[d * r.inner] - m);
        if (log) {
          const T lse = softmax_math::log_sum_exp(s, m);
          for (int64_t d = 0; d < r.D; ++d) y[d * r.inner] = softmax_math::log_softmax_value(in[d * r.inner], lse);
        } else {
          const double inv = 1.0 / s;
          for (int64_t d = 0; d < r.D; ++d) y[d * r.inner] = softmax_math::softmax_value(in[d * r.inner], m, inv);
        }
      }
    });
  });
}

void CpuBackend::softmax_backward(const RawTensor& y, const RawTensor& dy, int64_t dim, bool log, const RawTensor& dx) {
  dispatch_only<kFloat32, kFloat64>(y.dtype(), "softmax_backward", [&](auto t) {
    using T = decltype(t);
    const RowView r = rows_of(y, dim);
    const T *yp = y.data<T>(), *gp = dy.data<T>();
    T* dp = dx.data<T>();
    if (r.inner == 1) {
      const int64_t D = r.D;
      for_row_blocks(r.outer, D, [&](int64_t b, int64_t e) {
        with_kernels([&](auto k) {
          using K = decltype(k);
          if (log) {
            std::copy(yp + b * D, yp + e * D, dp + b * D);
            K::exp_in_place(dp + b * D, (e - b) * D);
          }
          for (int64_t n = b; n < e; ++n) {
            const T *yr = yp + n * D, *gr = gp + n * D;
            T* d = dp + n * D;
            // fast path: softmax_math::backward_value's formulas with the row sum in T, the
            // exponentials of a block in one pass
            if (log) {
              const T s = static_cast<T>(K::row_sum(gr, D));
              for (int64_t i = 0; i < D; ++i) d[i] = gr[i] - d[i] * s;
            } else {
              const T s = static_cast<T>(K::row_dot(gr, yr, D));
              for (int64_t i = 0; i < D; ++i) d[i] = yr[i] * (gr[i] - s);
            }
          }
        });
      });
      return;
    }
    parallel_for(r.outer * r.inner, r.D * 4, [&](int64_t b, int64_t e) {   // strided rows: one at a time
      for (int64_t k = b; k < e; ++k) {
        const int64_t off = (k / r.inner) * r.D * r.inner + k % r.inner;
        double s = 0;
        for (int64_t d = 0; d < r.D; ++d) {
          const int64_t i = off + d * r.inner;
          s += softmax_math::backward_term(log, gp[i], yp[i]);
        }
        for (int64_t d = 0; d < r.D; ++d) {
          const int64_t i = off + d * r.inner;
          dp[i] = softmax_math::backward_value(log, gp[i], yp[i], s);
        }
      }
    });
  });
}

void CpuBackend::cross_entropy(const RawTensor& logits, const RawTensor& target, const CrossEntropyArgs& args, const RawTensor& loss,
                   const RawTensor& lse, const RawTensor& total, const RawTensor& count) {
  dispatch_only<kFloat32, kFloat64>(logits.dtype(), "cross_entropy", [&](auto t) {
    using T = decltype(t);
    const int64_t C = logits.shape()[1];
    const T* x = logits.data<T>();
    const int64_t* tg_ = target.data<int64_t>();
    T *lp = loss.data<T>(), *sp = lse.data<T>();
    const double s = args.label_smoothing;
    for_row_blocks(logits.shape()[0], C, [&](int64_t b, int64_t e) {   // see Note [Row blocks]
      with_kernels([&](auto k) {
        using K = decltype(k);
        Scratch<T> scratch((e - b) * (C + 1));   // the shifted block, then one maximum per row
        T* z = scratch.get();
        T* maxes = z + (e - b) * C;
        K::exp_of_shifted_rows(x + b * C, e - b, C, z, maxes);
        for (int64_t n = b; n < e; ++n) {
          const T* row = x + n * C;
          const double l = std::log(K::row_sum(z + (n - b) * C, C)) + maxes[n - b];   // log-sum-exp, stable
          sp[n] = static_cast<T>(l);
          if (!softmax_math::ce_counts(tg_[n], args.ignore_index)) {
            lp[n] = T(0);
            continue;
          }
          const double logit_sum = s != 0 ? static_cast<double>(K::row_sum(row, C)) : 0.0;   // label smoothing only
          lp[n] = static_cast<T>(softmax_math::ce_loss(l, static_cast<double>(row[tg_[n]]), logit_sum, C, s));
        }
      });
    });
    if (!args.total) return;
    // The total in double, rows in order (the same on every thread count); mean: over the rows not
    // ignored, NaN (0 / 0) when there are none.
    double sum = 0;
    int64_t kept = 0;
    const int64_t N = logits.shape()[0];
    for (int64_t n = 0; n < N; ++n) {
      sum += static_cast<double>(lp[n]);
      kept += softmax_math::ce_counts(tg_[n], args.ignore_index);
    }
    if (args.mean) count.data<T>()[0] = static_cast<T>(kept);
    total.data<T>()[0] = static_cast<T>(args.mean ? sum / static_cast<double>(kept) : sum);
  });
}

void CpuBackend::cross_entropy_backward(const RawTensor& logits, const RawTensor& target, const CrossEntropyArgs& args,
                            const RawTensor& lse, const RawTensor& dloss, const RawTensor& count,
                            const RawTensor& dlogits) {
  dispatch_only<kFloat32, kFloat64>(logits.dtype(), "cross_entropy_backward", [&](auto t) {
    using T = decltype(t);
    const int64_t C = logits.shape()[1];
    const T *x = logits.data<T>(), *sp = lse.data<T>(), *gp = dloss.data<T>();
    const int64_t* tg_ = target.data<int64_t>();
    const int64_t gs = dloss.strides().empty() ? 0 : dloss.strides()[0];
    const T s = T(args.label_smoothing), uniform = s / T(C);
    const T divisor = args.mean ? count.data<T>()[0] : T(1);
    T* dp = dlogits.data<T>();
    for_row_blocks(logits.shape()[0], C, [&](int64_t b, int64_t e) {   // see Note [Row blocks]
      with_kernels([&](auto k) {
        using K = decltype(k);
        for (int64_t n = b; n < e; ++n)
          for (int64_t c = 0; c < C; ++c) dp[n * C + c] = x[n * C + c] - sp[n];
        K::exp_in_place(dp + b * C, (e - b) * C);                                   // softmax
        for (int64_t n = b; n < e; ++n) {
          T* d = dp + n * C;
          const int64_t target = tg_[n];
          if (!softmax_math::ce_counts(target, args.ignore_index)) {
            std::fill_n(d, C, T(0));
            continue;
          }
          const T g = args.mean ? gp[n * gs] / divisor : gp[n * gs];
          // every logit as a non-target (a loop without a per-element select), then the target's
          const T p_target = d[target];
          for (int64_t c = 0; c < C; ++c) d[c] = softmax_math::ce_grad(d[c], false, g, s, uniform);
          d[target] = softmax_math::ce_grad(p_target, true, g, s, uniform);
        }
      });
    });
  });
}

}  // namespace cpu
}  // namespace tg
