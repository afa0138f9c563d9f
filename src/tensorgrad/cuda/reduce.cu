// cuda/reduce.cu: the reducing half of the CUDA Backend: sum/max/min/argmax/argmin along axes (and so
// sum_to), softmax / log-softmax forward and backward, and the fused cross-entropy forward/backward
// with ignore_index, label smoothing and the device error flag for bad targets. Every reduction is a
// fixed tree for a given shape: the same input gives the same bits on every run. The CPU twins are in
// engine/cpu_backend.cpp; elementwise kernels are in cuda/elementwise.cu.
//
// Note [Vector rows]
// ~~~~~~~~~~~~~~~~~~
// A reduction along unit-stride rows (sum/max/min/argmax, softmax and log_softmax statistics and
// their backward's row sums, cross-entropy's log-sum-exp) is memory-bound, and one 4-byte load per
// loop iteration leaves most of the memory system idle. So rows are read as 16-byte vectors (float4,
// double2, 8 halves; row_for_each in cuda/detail/kernels.cuh): a scalar head up to the row's first
// 16-byte boundary (a row of a narrowed view or of odd length starts anywhere), the aligned vectors,
// a scalar tail. Element j of each vector goes to the thread's accumulator j: V independent chains
// (V loads in flight, no add waiting on the previous one), combined in a fixed pairwise tree, then
// the team's tree. Which element lands in which accumulator depends only on the row's length and
// its offset from a 16-byte boundary, so a tensor gives the same bits on every run; the same values
// at another offset may differ in the last bits, as they may on the CPU between SIMD widths. The
// extremum reducers carry positions, so ties and NaN resolve by position whatever the grouping. The
// accumulator types are unchanged (float for 16-bit sums, double for softmax statistics), and so
// are the NaN and infinity rules (Note [NaN and infinity]). Elementwise row passes (softmax's output,
// its backward) use vectors only where every operand has the same offset from a 16-byte boundary.
// Other layouts keep the general-stride kernels (reduce_cols_kernel, softmax_cols_kernel).
#include <algorithm>
#include <type_traits>
#include <vector>

#include "tensorgrad/cuda/detail/kernels.cuh"

namespace tg {
namespace cuda {
namespace detail {
namespace {

// ------------------------------------------------------------------------------------------------
// Reducers: load an element, combine two partial results (associative; ties and NaN resolved by
// position so the tree shape does not matter), store the final result.

template <class T>
struct SumReducer {
  // The dtype table's accumulator (float for the 16-bit floats), in a type the shuffles take.
  using Acc = std::conditional_t<std::is_integral<T>::value, long long, sum_accumulator_t<T>>;
  T* out;
  __device__ static Acc identity() { return Acc(0); }
  __device__ Acc load(T v, int64_t) const { return static_cast<Acc>(v); }
  __device__ Acc operator()(Acc a, Acc b) const { return a + b; }
  __device__ void store(int64_t o, Acc a) const { out[o] = static_cast<T>(a); }
};

/// A value and its position in the reduced block; i < 0 is "nothing seen yet".
template <class T>
struct Extremum {
  T v;
  long long i;
};
/// A type the warp shuffles take that holds every T exactly: long long for the integers and bool,
/// double for double, float for float and the 16-bit floats.
template <class T>
using ShuffleType = std::conditional_t<std::is_integral<T>::value, long long,
                                       std::conditional_t<std::is_same<T, double>::value, double, float>>;
template <class T>
__device__ __forceinline__ Extremum<T> shfl_down(Extremum<T> e, int o) {
  using W = ShuffleType<T>;
  return {static_cast<T>(detail::shfl_down(static_cast<W>(e.v), o)), detail::shfl_down(e.i, o)};
}
template <class T>
__device__ __forceinline__ Extremum<T> shfl_idx(Extremum<T> e, int src) {
  using W = ShuffleType<T>;
  return {static_cast<T>(detail::shfl_idx(static_cast<W>(e.v), src)), detail::shfl_idx(e.i, src)};
}

/// Max/min (kMax) with the CPU's rules: NaN wins (the first NaN for argmax), ties keep the first.
template <class T, bool kMax>
struct ExtremumReducer {
  using Acc = Extremum<T>;
  T* out_value;          // max/min: the value ...
  int64_t* out_index;    // ... argmax/argmin: the position (exactly one of the two is set)
  __device__ static Acc identity() { return {T(0), -1}; }
  __device__ Acc load(T v, int64_t r) const { return {v, static_cast<long long>(r)}; }
  __device__ Acc operator()(const Acc& a, const Acc& b) const {
    if (a.i < 0) return b;
    if (b.i < 0) return a;
    const bool an = is_nan(a.v), bn = is_nan(b.v);
    if (an || bn) {
      if (an && bn) return a.i <= b.i ? a : b;
      return an ? a : b;
    }
    if (kMax ? b.v > a.v : b.v < a.v) return b;
    if (kMax ? a.v > b.v : a.v < b.v) return a;
    return a.i <= b.i ? a : b;
  }
  __device__ void store(int64_t o, const Acc& a) const {
    if (out_index != nullptr) out_index[o] = a.i;
    else out_value[o] = a.v;
  }
};

/// One team (warp or block) per (output, split) of a unit-stride layout: reads the split's part of the
/// row with 16-byte vector loads (row_for_each: a scalar head up to the first 16-byte boundary, a
/// scalar tail), coalesced across the team, into V independent accumulators per thread (element j
/// of each vector into slot j), which combine in a fixed tree, then a tree over the team.
template <class Red, class T, bool kWarp>
__global__ void reduce_rows_kernel(const T* x, OffsetCalc<1> base, int64_t O, int64_t R, int64_t splits,
                                   int64_t chunk, typename Red::Acc* partial, Red red) {
  using Acc = typename Red::Acc;
  constexpr int V = VecRow<T>::V;
  __shared__ Acc scratch[32];
  const Team<kWarp> team;
  const int64_t items = O * splits;
  for (int64_t item = team.first; item < items; item += team.stride) {
    const int64_t o = item / splits, s = item - o * splits;
    const int64_t r0 = s * chunk, r1 = r0 + chunk < R ? r0 + chunk : R;
    int64_t off[1];
    base.get(o, off);
    Acc acc[V];
#pragma unroll
    for (int j = 0; j < V; ++j) acc[j] = Red::identity();
    if (r1 > r0) {   // x + off[0] is not formed otherwise: x is null when R is 0
      const T* p = x + off[0] + r0;
      row_for_each(
          p, r1 - r0, team.lane, team.size, [&](int64_t d) { acc[0] = red(acc[0], red.load(p[d], r0 + d)); },
          [&](int64_t d) {
            const Vec<T, V> v = load_vec<T, V>(p + d);
#pragma unroll
            for (int j = 0; j < V; ++j) acc[j] = red(acc[j], red.load(v.v[j], r0 + d + j));
          });
    }
    Acc a = combine_slots(acc, red);
    a = team.allreduce(a, red, scratch);
    if (team.lane == 0) {
      if (splits > 1) partial[o * splits + s] = a;
      else red.store(o, a);
    }
  }
}

/// One thread per (output, split), consecutive threads on consecutive outputs: coalesced when the
/// outputs are adjacent in memory and the reduced elements are not (sum over the batch dim). Each
/// thread reads kColSlots rows per iteration into as many independent accumulators (loads in flight
/// at once), combined in a fixed tree.
constexpr int kColSlots = 4;
template <class Red, class T>
__global__ void reduce_cols_kernel(const T* x, OffsetCalc<1> base, int64_t O, int64_t R, int64_t rstride,
                                   int64_t splits, int64_t chunk, typename Red::Acc* partial, Red red) {
  using Acc = typename Red::Acc;
  for (int64_t item = global_thread(); item < O * splits; item += grid_stride()) {
    const int64_t s = item / O, o = item - s * O;
    const int64_t r0 = s * chunk, r1 = r0 + chunk < R ? r0 + chunk : R;
    int64_t off[1];
    base.get(o, off);
    Acc acc[kColSlots];
#pragma unroll
    for (int j = 0; j < kColSlots; ++j) acc[j] = Red::identity();
    int64_t r = r0;   // x + off[0] is not formed when r0 == r1: x is null when R is 0
    for (; r + kColSlots <= r1; r += kColSlots) {
      T v[kColSlots];
#pragma unroll
      for (int j = 0; j < kColSlots; ++j) v[j] = x[off[0] + (r + j) * rstride];
#pragma unroll
      for (int j = 0; j < kColSlots; ++j) acc[j] = red(acc[j], red.load(v[j], r + j));
    }
    for (; r < r1; ++r) acc[0] = red(acc[0], red.load(x[off[0] + r * rstride], r));
    const Acc a = combine_slots(acc, red);
    if (splits > 1) partial[s * O + o] = a;
    else red.store(o, a);
  }
}

/// Second pass: a warp per output combines its splits (partial[o * so + s * ss]) in a fixed tree.
template <class Red>
__global__ void reduce_partials_kernel(const typename Red::Acc* partial, int64_t O, int64_t splits, int64_t so,
                                       int64_t ss, Red red) {
  using Acc = typename Red::Acc;
  const Team<true> team;
  for (int64_t o = team.first; o < O; o += team.stride) {
    Acc acc = Red::identity();
    for (int64_t s = team.lane; s < splits; s += team.size) acc = red(acc, partial[o * so + s * ss]);
    acc = team.allreduce(acc, red, static_cast<Acc*>(nullptr));
    if (team.lane == 0) red.store(o, acc);
  }
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// Threads a column reduction aims for (an H200 holds 132 x 2048 resident threads), and the most
/// splits of one output (the second pass reads them with one warp).
constexpr int64_t kColThreads = int64_t(1) << 18;
constexpr int64_t kMaxColSplits = 2048;

/// Scratch device memory from the caching allocator, returned when the scope ends. Safe without a
/// synchronization: see Note [One stream per device].
struct Scratch {
  Allocator& allocator;
  std::size_t nbytes;
  void* ptr;
  Scratch(Allocator& a, std::size_t n) : allocator(a), nbytes(n), ptr(a.allocate(n)) {}
  ~Scratch() { allocator.deallocate(ptr, nbytes); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
};

/// Runs the reduction of x's (O, R) layout: output o reduces x[base(o) + r * rstride], r < R.
template <class Red, class T>
void run_reduce(DeviceContext& ctx, const T* x, const OffsetCalc<1>& base, int64_t O, int64_t R, int64_t rstride,
                const Red& red) {
  using Acc = typename Red::Acc;
  cudaStream_t stream = ctx.stream();
  // Split counts depend only on the shape (never on the device), so results are reproducible.
  const bool rows = rstride == 1 && R >= 32;
  int64_t splits = 1;
  if (rows) {
    if (O < 1024 && R > 8192) splits = std::min(ceil_div(R, 4096), std::max<int64_t>(1, 2048 / O));
  } else if (O < kColThreads && R > 64) {
    // Column sums (the bias gradient of a tall batch): enough threads to keep a GPU's memory system
    // busy, at least 32 rows each; the second pass combines the splits, so the result is the same
    // on every run (no atomics).
    splits = std::min({ceil_div(R, 32), std::max<int64_t>(1, kColThreads / O), kMaxColSplits});
  }
  const int64_t chunk = splits > 1 ? ceil_div(R, splits) : std::max<int64_t>(R, 1);
  Acc* partial = nullptr;
  std::unique_ptr<Scratch> scratch;
  if (splits > 1) {
    scratch.reset(new Scratch(ctx.allocator(), static_cast<std::size_t>(O * splits) * sizeof(Acc)));
    partial = static_cast<Acc*>(scratch->ptr);
  }
  if (rows) {
    if (chunk >= 1024) {
      TG_LAUNCH(team_grid(O * splits, false), kBlock, 0, stream, reduce_rows_kernel<Red, T, false>)(
          x, base, O, R, splits, chunk, partial, red);
    } else {
      TG_LAUNCH(team_grid(O * splits, true), kBlock, 0, stream, reduce_rows_kernel<Red, T, true>)(
          x, base, O, R, splits, chunk, partial, red);
    }
  } else {
    TG_LAUNCH(grid_for(O * splits), kBlock, 0, stream, reduce_cols_kernel<Red, T>)(x, base, O, R, rstride, splits,
                                                                                   chunk, partial, red);
  }
  TG_CUDA_CHECK(cudaGetLastError());
  if (splits > 1) {
    const int64_t so = rows ? splits : 1, ss = rows ? 1 : O;
    TG_LAUNCH(team_grid(O, true), kBlock, 0, stream, reduce_partials_kernel<Red>)(partial, O, splits, so, ss, red);
    TG_CUDA_CHECK(cudaGetLastError());
  }
}

// ------------------------------------------------------------------------------------------------
// Softmax and cross-entropy rows. Row statistics are gathered in one read with the online
// (running-max) softmax: each thread keeps (m, s) with s = sum exp(x - m), rescaled when m grows;
// partial results combine the same way. NaN and infinities follow Note [NaN and infinity]
// (ops/functors.h), as the CPU backend does: a NaN anywhere makes s NaN, and so does a row whose max
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

/// The row's statistics, known to every lane of the team; s is NaN when the max is not finite. Each
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
  if (is_inf(st.m)) st.s = static_cast<double>(NAN);
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
      const T lse = static_cast<T>(tlog(st.s)) + st.m;
      map_row(in, out, D, team.lane, team.size, [lse](T v) { return v - lse; });
    } else {
      const double inv = 1.0 / st.s;
      const T m = st.m;
      map_row(in, out, D, team.lane, team.size,
              [m, inv](T v) { return static_cast<T>(static_cast<double>(texp(v - m)) * inv); });
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
    if (is_inf(m)) m = T(NAN);   // Note [NaN and infinity]: the whole column NaN
    double s = 0;
    for (int64_t d = 0; d < D; ++d) s += static_cast<double>(texp(in[d * inner] - m));
    if (log_) {
      const T lse = static_cast<T>(tlog(s)) + m;
      for (int64_t d = 0; d < D; ++d) out[d * inner] = in[d * inner] - lse;
    } else {
      const double inv = 1.0 / s;
      for (int64_t d = 0; d < D; ++d) out[d * inner] = static_cast<T>(static_cast<double>(texp(in[d * inner] - m)) * inv);
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
  const auto term = [log_](T g, T yv) { return log_ ? static_cast<double>(g) : static_cast<double>(g * yv); };
  const auto grad = [log_](T g, T yv, double s) {
    return log_ ? static_cast<T>(g - texp(yv) * s) : static_cast<T>(yv * (g - s));
  };
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
      s += log_ ? static_cast<double>(dy[i]) : static_cast<double>(dy[i] * y[i]);
    }
    for (int64_t d = 0; d < D; ++d) {
      const int64_t i = off + d * inner;
      dx[i] = log_ ? static_cast<T>(dy[i] - texp(y[i]) * s) : static_cast<T>(y[i] * (dy[i] - s));
    }
  }
}

// Note [Device error flag]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// A kernel cannot throw and device asserts would kill the context, so a kernel that meets bad input
// (a cross-entropy target outside [0, C) that is not ignore_index, an index out of range) records the first such value in
// its device's DeviceErrorFlag (device memory, one per device, cuda/runtime.cu) and writes NaN
// instead of reading out of bounds. Every synchronization (item(), to(cpu), tg::cuda::synchronize())
// queues a copy of the flag to pinned host memory before it waits, then raises the IndexError that
// engine/prim.cpp raises on the CPU for the same target (prim::cross_entropy_target_error), and
// clears the flag. The flag belongs to the device's one stream (Note [One stream per device]), and
// a sync reads and clears it under its context's mutex: when several threads synchronize one device,
// the first to look raises the error and the others return normally, instead of racing on the pinned
// copy (two raising, or none). Nothing in the happy path waits or copies more than those 32 bytes per sync.
// Index kernels (cuda/index.cu) report out-of-range indices the same way, as the IndexError of
// prim::index_out_of_range_error; engine/prim.cpp checks only CPU indices on the host.

/// The team leader's part of cross_entropy_kernel: lse, and the row's loss or the error flag.
/// Returns the loss as stored (0 for an ignored row).
template <class T>
__device__ T write_loss(const RowStats<T>& st, const T* row, int64_t t, int64_t n, int64_t C, int64_t ignore_index,
                        double smoothing, T* loss, T* lse, DeviceErrorFlag* flag) {
  const double l = tlog(st.s) + static_cast<double>(st.m);   // log-sum-exp
  lse[n] = static_cast<T>(l);
  T v = T(0);
  if (t == ignore_index) {
    v = T(0);
  } else if (t < 0 || t >= C) {
    record_error(flag, kErrCrossEntropyTarget, 0, 0, t, C);
    v = T(NAN);
  } else {
    double d = l - static_cast<double>(row[t]);   // -log softmax[target]
    if (smoothing != 0) d = (1 - smoothing) * d + smoothing * (l - st.sx / static_cast<double>(C));   // + s mean(-log softmax)
    v = static_cast<T>(d);
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
      kept += target[n] != ignore_index ? 1.0 : 0.0;
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
    kept += target[n] != ignore_index ? 1.0 : 0.0;
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
    if (t == ignore_index) return {t, T(0), T(0), T(0)};
    const T g = count != nullptr ? dloss[n * gstride] / count[0] : dloss[n * gstride];
    return {t, x[i], lse[n], g};
  }
  __device__ void store(int64_t i, const Loaded& a) const {
    if (a.t == ignore_index) {
      dx[i] = T(0);
      return;
    }
    T d = (texp(a.x - a.lse) - uniform) * a.g;          // (softmax - s/C) g
    if (i % C == a.t) d -= (T(1) - smoothing) * a.g;    // - (1 - s) onehot g
    dx[i] = d;
  }
};

/// Rows of at most this many elements go to one warp each; longer ones to a block each.
constexpr int64_t kWarpRow = 1024;

}  // namespace

// ------------------------------------------------------------------------------------------------
// Backend methods

void CudaBackend::reduce(ReduceOp op, const Tensor& x, const Tensor& out) {
  const int64_t O = out.numel();
  if (O == 0) return;
  DeviceGuard guard(ctx_.device());
  // As the CPU backend: kept dims first, reduced dims last; out (contiguous) enumerates the kept dims.
  ReductionLayout layout = reduction_layout(x, out);
  Tensor& xp = layout.x;
  const int64_t nkept = layout.nkept, R = layout.R;
  int64_t rstride = layout.rstride;
  Shape kept_shape(xp.shape().begin(), xp.shape().begin() + nkept);
  Shape kept_strides(xp.strides().begin(), xp.strides().begin() + nkept);
  if (coalesce<1>(kept_shape, {&kept_strides}).sizes.size() > static_cast<std::size_t>(kMaxDims)) {
    xp = xp.contiguous();   // kept dims then merge into one
    rstride = 1;
    kept_strides.assign(xp.strides().begin(), xp.strides().begin() + nkept);
  }
  OffsetCalc<1> base;
  for_each_slice<1>(kept_shape, {&kept_strides}, [&](const OffsetCalc<1>& c, int64_t) { base = c; });

  dispatch_dtype(x.dtype(), [&](auto t) {
    using T = decltype(t);
    const T* p = xp.data<T>();
    switch (op) {
      case ReduceOp::Sum:
        run_reduce(ctx_, p, base, O, R, rstride, SumReducer<T>{out.data<T>()});
        break;
      case ReduceOp::Max:
        run_reduce(ctx_, p, base, O, R, rstride, ExtremumReducer<T, true>{out.data<T>(), nullptr});
        break;
      case ReduceOp::Min:
        run_reduce(ctx_, p, base, O, R, rstride, ExtremumReducer<T, false>{out.data<T>(), nullptr});
        break;
      case ReduceOp::ArgMax:
        run_reduce(ctx_, p, base, O, R, rstride, ExtremumReducer<T, true>{nullptr, out.data<int64_t>()});
        break;
      case ReduceOp::ArgMin:
        run_reduce(ctx_, p, base, O, R, rstride, ExtremumReducer<T, false>{nullptr, out.data<int64_t>()});
        break;
    }
  });
}

void CudaBackend::softmax(const Tensor& x, int64_t dim, bool log, const Tensor& out) {
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

void CudaBackend::softmax_backward(const Tensor& y, const Tensor& dy, int64_t dim, bool log, const Tensor& dx) {
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

void CudaBackend::cross_entropy(const Tensor& logits, const Tensor& target, const CrossEntropyArgs& args,
                                const Tensor& loss, const Tensor& lse, const Tensor& total, const Tensor& count) {
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

void CudaBackend::cross_entropy_backward(const Tensor& logits, const Tensor& target, const CrossEntropyArgs& args,
                                         const Tensor& lse, const Tensor& dloss, const Tensor& count,
                                         const Tensor& dlogits) {
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
