// backend/cuda/reduce.cu: the reduction family of the CUDA Backend: sum/max/min/argmax/argmin along axes (and
// so sum_to). Every reduction is a fixed tree for a given shape: the same input gives the same bits on
// every run. The CPU twin is backend/cpu/reduce.cpp (Note [Kernel families] in backend/backend.h);
// softmax and cross-entropy, which reuse this file's row machinery (Note [Vector rows]), are in
// backend/cuda/softmax_loss.cu.
//
// Note [Vector rows]
// ~~~~~~~~~~~~~~~~~~
// A reduction along unit-stride rows (sum/max/min/argmax, softmax and log_softmax statistics and
// their backward's row sums, cross-entropy's log-sum-exp) is memory-bound, and one 4-byte load per
// loop iteration leaves most of the memory system idle. So rows are read as 16-byte vectors (float4,
// double2, 8 halves; row_for_each in backend/cuda/kernels.cuh): a scalar head up to the row's first
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

#include "tensorgrad/backend/cuda/kernels.cuh"
#include "tensorgrad/kernels/reduce.h"

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

/// Max/min (kMax) with reduce_math::extremum_replaces's rule (the CPU scan's): NaN wins (the first NaN
/// for argmax), ties keep the first.
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
    return reduce_math::extremum_replaces<kMax>(a.v, a.i, b.v, b.i) ? b : a;
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
      row_for_each<4>(
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

}  // namespace

// ------------------------------------------------------------------------------------------------
// Backend methods

void CudaBackend::reduce(ReduceOp op, const RawTensor& x, const RawTensor& out) {
  const int64_t O = out.numel();
  if (O == 0) return;
  DeviceGuard guard(ctx_.device());
  // As the CPU backend: kept dims first, reduced dims last; out (contiguous) enumerates the kept dims.
  ReductionLayout layout = reduction_layout(x, out);
  RawTensor& xp = layout.x;
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

// The scan by doubling (Note [Scans by doubling] in ops/scan.cpp): ceil(log2 n) passes of the binary
// kernel over views, out and a scratch buffer taking turns. Each pass is a bandwidth-bound elementwise
// launch; a kernel giving each line to one thread would leave the long lines of a few rows (a 1-D
// cumsum) serial. Add and Mul are commutative, so the order of the two operands does not matter.
void CudaBackend::scan(BinaryOp op, const RawTensor& x, int64_t dim, bool reverse, const RawTensor& out) {
  const int64_t n = x.shape()[dim];
  copy(x, out);
  if (x.numel() == 0 || n <= 1) return;
  RawTensor scratch = RawTensor::empty(x.shape(), x.dtype(), x.device());
  RawTensor cur = out, next = scratch;
  for (int64_t s = 1; s < n; s *= 2) {
    const int64_t m = n - s;
    // the s elements with nothing s before them (after them, reversed) are carried over unchanged
    if (reverse) {
      copy(cur.narrow(dim, m, s), next.narrow(dim, m, s));
      binary(op, cur.narrow(dim, 0, m), cur.narrow(dim, s, m), next.narrow(dim, 0, m));
    } else {
      copy(cur.narrow(dim, 0, s), next.narrow(dim, 0, s));
      binary(op, cur.narrow(dim, s, m), cur.narrow(dim, 0, m), next.narrow(dim, s, m));
    }
    std::swap(cur, next);
  }
  if (cur.raw_data() != out.raw_data()) copy(cur, out);
}

}  // namespace detail
}  // namespace cuda
}  // namespace tg
