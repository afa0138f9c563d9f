// backend/cuda/softmax_loss.cu: the softmax and loss family of the CUDA Backend: softmax / log-softmax forward
// and backward, and the fused cross-entropy forward/backward with ignore_index, label smoothing and
// the device error flag for bad targets. Rows are read as in backend/cuda/reduce.cu (Note [Vector rows]);
// every row statistic is a fixed tree for a given shape. The CPU twin is backend/cpu/softmax_loss.cpp
// (Note [Kernel families] in backend/backend.h).
#include <algorithm>
#include <type_traits>
#include <vector>

#include "tensorgrad/backend/cuda/kernels.cuh"
#include "tensorgrad/kernels/index.h"
#include "tensorgrad/kernels/softmax_loss.h"

namespace tg {
namespace cuda {
namespace detail {
namespace {

// ------------------------------------------------------------------------------------------------
// Softmax and cross-entropy rows. Row statistics are gathered in one read with the online
// (running-max) softmax: each thread keeps (m, s) with s = sum exp(x - m), rescaled when m grows;
// partial results combine the same way. NaN and infinities follow Note [NaN and infinity]
// (kernels/elementwise.h), as the CPU backend does: a NaN anywhere makes s NaN, and so does a row whose max
// is +inf or -inf (a row holding +inf, or only -inf), so the whole row comes out NaN.

template <class T>
struct RowStats {
  T m;        // running max (never NaN: NaN never wins a comparison)
  double s;   // sum of exp(x - m)
  double sx;  // sum of x (label smoothing only)
};
template <class T>
__device__ __forceinline__ RowStats<T> shfl_down(RowStats<T> v, int o) {
  return {detail::shfl_down(v.m, o), detail::shfl_down(v.s, o), detail::shfl_down(v.sx, o)};
}
template <class T>
__device__ __forceinline__ RowStats<T> shfl_idx(RowStats<T> v, int src) {
  return {detail::shfl_idx(v.m, src), detail::shfl_idx(v.s, src), detail::shfl_idx(v.sx, src)};
}

template <class T>
struct RowStatsOp {
  __device__ static RowStats<T> identity() { return {-T(INFINITY), 0.0, 0.0}; }
  /// Folds one element into a thread's statistics.
  __device__ static void add(RowStats<T>& st, T x) {
    st.sx += static_cast<double>(x);
    if (x > st.m) {   // a new max: rescale (a -inf max has seen nothing but -inf and NaN: s is 0 or NaN)
      st.s = st.s * (st.m == -T(INFINITY) ? 1.0 : static_cast<double>(texp(st.m - x))) + 1.0;
      st.m = x;
    } else if (x != -T(INFINITY)) {   // exp(-inf - m) adds nothing; NaN adds NaN
      st.s += static_cast<double>(texp(x - st.m));
    }
  }
  __device__ RowStats<T> operator()(RowStats<T> a, RowStats<T> b) const {
    if (a.m < b.m) {
      const RowStats<T> t = a;
      a = b;
      b = t;
    }
    const double f = b.m == -T(INFINITY) ? 1.0 : static_cast<double>(texp(b.m - a.m));
    return {a.m, a.s + b.s * f, a.sx + b.sx};
  }
};

/// The row's statistics, known to every lane of the team; m is the row's shift (softmax_math::shift:
/// NaN when the max is not finite). Each
/// thread keeps V independent statistics (element j of each 16-byte vector into slot j, see
/// row_for_each), combined in a fixed tree.
template <class T, bool kWarp>
__device__ RowStats<T> row_stats(const T* in, int64_t D, const Team<kWarp>& team, RowStats<T>* scratch) {
  constexpr int V = VecRow<T>::V;
  RowStatsOp<T> op;
  RowStats<T> acc[V];
#pragma unroll
  for (int j = 0; j < V; ++j) acc[j] = RowStatsOp<T>::identity();
  row_for_each(
      in, D, team.lane, team.size, [&](int64_t d) { RowStatsOp<T>::add(acc[0], in[d]); },
      [&](int64_t d) {
        const Vec<T, V> v = load_vec<T, V>(in + d);
#pragma unroll
        for (int j = 0; j < V; ++j) RowStatsOp<T>::add(acc[j], v.v[j]);
      });
  RowStats<T> st = combine_slots(acc, op);
  st = team.allreduce(st, op, scratch);
  st.m = softmax_math::shift(st.m);   // NaN when the max is not finite: the whole row NaN
  return st;
}

/// out[d] = f(in[d]) over a contiguous row: 16-byte loads and stores when in and out have the same
/// offset from a 16-byte boundary, one element at a time otherwise.
template <class T, class F>
__device__ __forceinline__ void map_row(const T* in, T* out, int64_t D, int lane, int size, const F& f) {
  constexpr int V = VecRow<T>::V;
  if (!same_alignment16(in, out)) {
    for (int64_t d = lane; d < D; d += size) out[d] = f(in[d]);
    return;
  }
  row_for_each(
      in, D, lane, size, [&](int64_t d) { out[d] = f(in[d]); },
      [&](int64_t d) {
        const Vec<T, V> a = load_vec<T, V>(in + d);
        Vec<T, V> r;
#pragma unroll
        for (int j = 0; j < V; ++j) r.v[j] = f(a.v[j]);
        store_vec<T, V>(out + d, r);
      });
}

/// (log-)softmax over the last dim: one team per row, one read for the statistics, one read and one
/// write for the result.
template <class T, bool kWarp>
__global__ void softmax_rows_kernel(const T* x, T* y, int64_t rows, int64_t D, bool log_) {
  __shared__ RowStats<T> scratch[32];
  const Team<kWarp> team;
  for (int64_t row = team.first; row < rows; row += team.stride) {
    const T* in = x + row * D;
    T* out = y + row * D;
    const RowStats<T> st = row_stats<T, kWarp>(in, D, team, scratch);
    if (log_) {
      const T lse = softmax_math::log_sum_exp(st.s, st.m);
      map_row(in, out, D, team.lane, team.size, [lse](T v) { return softmax_math::log_softmax_value(v, lse); });
    } else {
      const double inv = 1.0 / st.s;
      const T m = st.m;
      map_row(in, out, D, team.lane, team.size, [m, inv](T v) { return softmax_math::softmax_value(v, m, inv); });
    }
  }
}

/// (log-)softmax over a middle dim: one thread per (outer, inner) column, adjacent threads on
/// adjacent inner positions (coalesced); three passes over the column, as the CPU loop.
template <class T>
__global__ void softmax_cols_kernel(const T* x, T* y, int64_t outer, int64_t D, int64_t inner, bool log_) {
  for (int64_t k = global_thread(); k < outer * inner; k += grid_stride()) {
    const int64_t off = (k / inner) * D * inner + k % inner;
    const T* in = x + off;
    T* out = y + off;
    T m = in[0];
    for (int64_t d = 1; d < D; ++d) m = m < in[d * inner] ? in[d * inner] : m;   // std::max's NaN rule
    m = softmax_math::shift(m);   // Note [NaN and infinity]: the whole column NaN
    double s = 0;
    for (int64_t d = 0; d < D; ++d) s += static_cast<double>(texp(in[d * inner] - m));
    if (log_) {
      const T lse = softmax_math::log_sum_exp(s, m);
      for (int64_t d = 0; d < D; ++d) out[d * inner] = softmax_math::log_softmax_value(in[d * inner], lse);
    } else {
      const double inv = 1.0 / s;
      for (int64_t d = 0; d < D; ++d) out[d * inner] = softmax_math::softmax_value(in[d * inner], m, inv);
    }
  }
}

/// softmax: dx = y (dy - sum(dy y));  log_softmax: dx = dy - exp(y) sum(dy). One team per row; 16-byte
/// loads and stores (V independent partial sums per thread) when y, dy and dx share their offset
/// from a 16-byte boundary, one element at a time otherwise.
template <class T, bool kWarp>
__global__ void softmax_backward_rows_kernel(const T* y, const T* dy, T* dx, int64_t rows, int64_t D, bool log_) {
  constexpr int V = VecRow<T>::V;
  __shared__ double scratch[32];
  const Team<kWarp> team;
  const auto term = [log_](T g, T yv) { return softmax_math::backward_term(log_, g, yv); };
  const auto grad = [log_](T g, T yv, double s) { return softmax_math::backward_value(log_, g, yv, s); };
  for (int64_t row = team.first; row < rows; row += team.stride) {
    const T *yr = y + row * D, *gr = dy + row * D;
    T* dr = dx + row * D;
    const bool vec = same_alignment16(yr, gr) && same_alignment16(yr, dr);
    double acc[V];
#pragma unroll
    for (int j = 0; j < V; ++j) acc[j] = 0;
    if (vec) {
      row_for_each(
          yr, D, team.lane, team.size, [&](int64_t d) { acc[0] += term(gr[d], yr[d]); },
          [&](int64_t d) {
            const Vec<T, V> a = load_vec<T, V>(yr + d), g = load_vec<T, V>(gr + d);
#pragma unroll
            for (int j = 0; j < V; ++j) acc[j] += term(g.v[j], a.v[j]);
          });
    } else {
      for (int64_t d = team.lane; d < D; d += team.size) acc[0] += term(gr[d], yr[d]);
    }
    double s = combine_slots(acc, SumOp<double>());
    s = team.allreduce(s, SumOp<double>(), scratch);
    if (vec) {
      row_for_each(
          yr, D, team.lane, team.size, [&](int64_t d) { dr[d] = grad(gr[d], yr[d], s); },
          [&](int64_t d) {
            const Vec<T, V> a = load_vec<T, V>(yr + d), g = load_vec<T, V>(gr + d);
            Vec<T, V> r;
#pragma unroll
            for (int j = 0; j < V; ++j) r.v[j] = grad(g.v[j], a.v[j], s);
            store_vec<T, V>(dr + d, r);
          });
    } else {
      for (int64_t d = team.lane; d < D; d += team.size) dr[d] = grad(gr[d], yr[d], s);
    }
  }
}

template <class T>
__global__ void softmax_backward_cols_kernel(const T* y, const T* dy, T* dx, int64_t outer, int64_t D, int64_t inner,
                                             bool log_) {
  for (int64_t k = global_thread(); k < outer * inner; k += grid_stride()) {
    const int64_t off = (k / inner) * D * inner + k % inner;
    double s = 0;
    for (int64_t d = 0; d < D; ++d) {
      const int64_t i = off + d * inner;
      s += softmax_math::backward_term(log_, dy[i], y[i]);
    }
    for (int64_t d = 0; d < D; ++d) {
      const int64_t i = off + d * inner;
      dx[i] = softmax_math::backward_value(log_, dy[i], y[i], s);
    }
  }
}

// Note [Device error flag]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// A kernel cannot throw and device asserts would kill the context, so a kernel that meets bad input
// (a cross-entropy target outside [0, C) that is not ignore_index, an index out of range) records the first such value in
// its device's DeviceErrorFlag (device memory, one per device, backend/cuda/runtime.cu) and writes NaN
// instead of reading out of bounds. Every synchronization (item(), to(cpu), tg::cuda::synchronize())
// queues a copy of the flag to pinned host memory before it waits, then raises the IndexError that
// prim/softmax_loss.cpp raises on the CPU for the same target (cross_entropy_target_error, backend/backend.h), and
// clears the flag. The flag belongs to the device's one stream (Note [One stream per device]), and
// a sync reads and clears it under its context's mutex: when several threads synchronize one device,
// the first to look raises the error and the others return normally, instead of racing on the pinned
// copy (two raising, or none). Nothing in the happy path waits or copies more than those 32 bytes per sync.
// Index kernels (backend/cuda/index.cu) report out-of-range indices the same way, as the IndexError of
// index_out_of_range_error; prim/checks.cpp checks only CPU indices on the host. ctc_loss's forward
// kernel (backend/cuda/ctc_loss.cu) reports a bad label as ctc_target_error's IndexError; prim/ctc_loss.cpp
// checks only CPU labels on the host.

/// The team leader's part of cross_entropy_kernel: lse, and the row's loss or the error flag.
/// Returns the loss as stored (0 for an ignored row).
template <class T>
__device__ T write_loss(const RowStats<T>& st, const T* row, int64_t t, int64_t n, int64_t C, int64_t ignore_index,
                        double smoothing, T* loss, T* lse, DeviceErrorFlag* flag) {
  const double l = tlog(st.s) + static_cast<double>(st.m);   // log-sum-exp
  lse[n] = static_cast<T>(l);
  T v = T(0);
  if (!softmax_math::ce_counts(t, ignore_index)) {
    v = T(0);
  } else if (!index_math::in_range(t, C)) {
    record_error(flag, kErrCrossEntropyTarget, 0, 0, t, C);
    v = T(NAN);
  } else {
    v = static_cast<T>(softmax_math::ce_loss(l, static_cast<double>(row[t]), st.sx, C, smoothing));
  }
  loss[n] = v;
  return v;
}

/// Where cross_entropy_kernel writes the rows' total: the sum, or with count the mean over the rows
/// not ignored (count[0] is set to their number).
template <class T>
struct LossTotal {
  T* total = nullptr;   // null: per-row losses only
  T* count = nullptr;   // null: the sum; else the mean
};

/// Thread 0 of the one block writes the block's sum (/ kept) to out. Every thread calls it.
template <class T>
__device__ void write_total(double sum, double kept, const LossTotal<T>& out) {
  __shared__ double scratch[32];
  sum = block_allreduce(sum, SumOp<double>(), scratch);
  kept = block_allreduce(kept, SumOp<double>(), scratch);
  if (threadIdx.x == 0) {
    if (out.count != nullptr) out.count[0] = static_cast<T>(kept);
    out.total[0] = static_cast<T>(out.count != nullptr ? sum / kept : sum);
  }
}

/// Fused log-softmax + NLL with ignore_index and label smoothing: one team per row, one read of the
/// row (online statistics) plus the target's logit. Sets loss (N) and lse (N). With out.total the
/// grid is one block (a small problem, kFusedTotal elements at most) and the same kernel also writes
/// the rows' total, summed in a fixed order: the mean costs no extra launch.
template <class T, bool kWarp>
__global__ void cross_entropy_kernel(const T* logits, const int64_t* target, T* loss, T* lse, int64_t N, int64_t C,
                                     int64_t ignore_index, double smoothing, DeviceErrorFlag* flag, LossTotal<T> out) {
  __shared__ RowStats<T> scratch[32];
  const Team<kWarp> team;
  double sum = 0, kept = 0;   // this thread's rows (team leaders only)
  for (int64_t n = team.first; n < N; n += team.stride) {
    const T* row = logits + n * C;
    const RowStats<T> st = row_stats<T, kWarp>(row, C, team, scratch);
    if (team.lane == 0) {
      sum += static_cast<double>(write_loss(st, row, target[n], n, C, ignore_index, smoothing, loss, lse, flag));
      kept += softmax_math::ce_counts(target[n], ignore_index) ? 1.0 : 0.0;
    }
  }
  if (out.total != nullptr) write_total(sum, kept, out);
}

/// The rows' total for problems too large for one block: one block over the per-row losses, in a
/// fixed order.
template <class T>
__global__ void loss_total_kernel(const T* loss, const int64_t* target, int64_t N, int64_t ignore_index, LossTotal<T> out) {
  double sum = 0, kept = 0;
  for (int64_t n = threadIdx.x; n < N; n += blockDim.x) {
    sum += static_cast<double>(loss[n]);
    kept += softmax_math::ce_counts(target[n], ignore_index) ? 1.0 : 0.0;
  }
  write_total(sum, kept, out);
}

/// dlogits = (softmax - s/C) g - (1 - s) onehot(target) g; 0 for ignored rows. One element per index,
/// fully coalesced: reads the logit, writes its gradient, the per-row values come from cache; the
/// ILP kernel (launch_flat_ilp) loads several elements per thread before it stores any.
template <class T>
struct CrossEntropyBackwardFlat {
  const T *x, *lse, *dloss;
  const T* count;   // the mean's divisor (the forward's count); null for sum and none
  const int64_t* target;
  T* dx;
  int64_t C, gstride, ignore_index;
  T smoothing, uniform;
  struct Loaded {
    int64_t t;
    T x, lse, g;
  };
  __device__ Loaded load(int64_t i) const {
    const int64_t n = i / C;
    const int64_t t = target[n];
    if (!softmax_math::ce_counts(t, ignore_index)) return {t, T(0), T(0), T(0)};
    const T g = count != nullptr ? dloss[n * gstride] / count[0] : dloss[n * gstride];
    return {t, x[i], lse[n], g};
  }
  __device__ void store(int64_t i, const Loaded& a) const {
    if (!softmax_math::ce_counts(a.t, ignore_index)) {
      dx[i] = T(0);
      return;
    }
    dx[i] = softmax_math::ce_grad(texp(a.x - a.lse), i % C == a.t, a.g, smoothing, uniform);
  }
};

/// Rows of at most this many elements go to one warp each; longer ones to a block each.
constexpr int64_t kWarpRow = 1024;

}  // namespace

// ------------------------------------------------------------------------------------------------
// Backend methods

void CudaBackend::softmax(const RawTensor& x, int64_t dim, bool log, const RawTensor& out) {
  if (out.numel() == 0) return;
  DeviceGuard guard(ctx_.device());
  cudaStream_t stream = ctx_.stream();
  const RowView r = rows_of(x, dim);
  dispatch_only<kFloat32, kFloat64>(x.dtype(), "softmax", [&](auto t) {
    using T = decltype(t);
    const T* xp = x.data<T>();
    T* yp = out.data<T>();
    if (r.inner == 1) {
      if (r.D <= kWarpRow)
        TG_LAUNCH(team_grid(r.outer, true), kBlock, 0, stream, softmax_rows_kernel<T, true>)(xp, yp, r.outer, r.D, log);
      else
        TG_LAUNCH(team_grid(r.outer, false), kBlock, 0, stream, softmax_rows_kernel<T, false>)(xp, yp, r.outer, r.D, log);
    } else {
      TG_LAUNCH(grid_for(r.outer * r.inner), kBlock, 0, stream, softmax_cols_kernel<T>)(xp, yp, r.outer, r.D, r.inner,
                                                                                        log);
    }
    TG_CUDA_CHECK(cudaGetLastError());
  });
}

void CudaBackend::softmax_backward(const RawTensor& y, const RawTensor& dy, int64_t dim, bool log, const RawTensor& dx) {
  if (dx.numel() == 0) return;
  DeviceGuard guard(ctx_.device());
  cudaStream_t stream = ctx_.stream();
  const RowView r = rows_of(y, dim);
  dispatch_only<kFloat32, kFloat64>(y.dtype(), "softmax_backward", [&](auto t) {
    using T = decltype(t);
    const T *yp = y.data<T>(), *gp = dy.data<T>();
    T* dp = dx.data<T>();
    if (r.inner == 1) {
      if (r.D <= kWarpRow)
        TG_LAUNCH(team_grid(r.outer, true), kBlock, 0, stream, softmax_backward_rows_kernel<T, true>)(
            yp, gp, dp, r.outer, r.D, log);
      else
        TG_LAUNCH(team_grid(r.outer, false), kBlock, 0, stream, softmax_backward_rows_kernel<T, false>)(
            yp, gp, dp, r.outer, r.D, log);
    } else {
      TG_LAUNCH(grid_for(r.outer * r.inner), kBlock, 0, stream, softmax_backward_cols_kernel<T>)(
          yp, gp, dp, r.outer, r.D, r.inner, log);
    }
    TG_CUDA_CHECK(cudaGetLastError());
  });
}

void CudaBackend::cross_entropy(const RawTensor& logits, const RawTensor& target, const CrossEntropyArgs& args,
                                const RawTensor& loss, const RawTensor& lse, const RawTensor& total, const RawTensor& count) {
  const int64_t N = logits.shape()[0], C = logits.shape()[1];
  if (N == 0) return;
  DeviceGuard guard(ctx_.device());
  cudaStream_t stream = ctx_.stream();
  // Up to kFusedTotal logits, one block computes every row and the total in one launch (an MLP's
  // batch of 64 or 1024 rows of 10 classes); larger problems spread the rows over the GPU and add a
  // one-block total kernel.
  constexpr int64_t kFusedTotal = 1 << 16;
  const bool fused = args.total && N * C <= kFusedTotal;
  dispatch_only<kFloat32, kFloat64>(logits.dtype(), "cross_entropy", [&](auto t) {
    using T = decltype(t);
    LossTotal<T> out;
    if (args.total) out = {total.data<T>(), args.mean ? count.data<T>() : nullptr};
    const LossTotal<T> in_kernel = fused ? out : LossTotal<T>{};
    if (C <= kWarpRow)
      TG_LAUNCH(fused ? 1u : team_grid(N, true), kBlock, 0, stream, cross_entropy_kernel<T, true>)(
          logits.data<T>(), target.data<int64_t>(), loss.data<T>(), lse.data<T>(), N, C, args.ignore_index,
          args.label_smoothing, ctx_.error_flag(), in_kernel);
    else
      TG_LAUNCH(fused ? 1u : team_grid(N, false), kBlock, 0, stream, cross_entropy_kernel<T, false>)(
          logits.data<T>(), target.data<int64_t>(), loss.data<T>(), lse.data<T>(), N, C, args.ignore_index,
          args.label_smoothing, ctx_.error_flag(), in_kernel);
    TG_CUDA_CHECK(cudaGetLastError());
    if (args.total && !fused) {
      TG_LAUNCH(1u, kBlock, 0, stream, loss_total_kernel<T>)(loss.data<T>(), target.data<int64_t>(), N, args.ignore_index, out);
      TG_CUDA_CHECK(cudaGetLastError());
    }
  });
}

void CudaBackend::cross_entropy_backward(const RawTensor& logits, const RawTensor& target, const CrossEntropyArgs& args,
                                         const RawTensor& lse, const RawTensor& dloss, const RawTensor& count,
                                         const RawTensor& dlogits) {
  const int64_t N = logits.shape()[0], C = logits.shape()[1];
  if (N * C == 0) return;
  DeviceGuard guard(ctx_.device());
  dispatch_only<kFloat32, kFloat64>(logits.dtype(), "cross_entropy_backward", [&](auto t) {
    using T = decltype(t);
    const T s = T(args.label_smoothing);
    CrossEntropyBackwardFlat<T> body{logits.data<T>(), lse.data<T>(), dloss.data<T>(),
                                     args.mean ? count.data<T>() : nullptr, target.data<int64_t>(),
                                     dlogits.data<T>(), C, dloss.strides().empty() ? 0 : dloss.strides()[0],
                                     args.ignore_index, s, s / T(C)};
    launch_flat_ilp(ctx_.stream(), N * C, body);
  });
}

}  // namespace detail
}  // namespace cuda
}  // namespace tg
