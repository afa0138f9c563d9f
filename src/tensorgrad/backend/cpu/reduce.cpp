// backend/cpu/reduce.cpp: the reduction family of the CPU backend: sum, max, min, argmax, argmin along
// axes (and so sum_to), and the running sums and products of scan (cumsum, cumprod). The CUDA twin is backend/cuda/reduce.cu (Note [Kernel families] in backend/backend.h).
#include "tensorgrad/backend/cpu/cpu_backend.h"
#include "tensorgrad/kernels/reduce.h"

namespace tg {
namespace cpu {
namespace {

// Full sums are cut into chunks of this many elements and combined in order: deterministic for any
// thread count.
constexpr int64_t kSumChunk = 32768;

}  // namespace

void CpuBackend::reduce(ReduceOp op, const RawTensor& x, const RawTensor& out) {
  if (x.numel() == 0) {   // only a sum over an empty dim gets here (prim::reduce): zeros, no pointer arithmetic
    fill(out, 0.0);
    return;
  }
  // Kept dims first, reduced dims last; out (contiguous) enumerates the kept dims in order.
  const ReductionLayout layout = reduction_layout(x, out);
  const RawTensor& xp = layout.x;
  const int64_t R = layout.R, rstride = layout.rstride;
  const int64_t O = out.numel();
  const Shape kept_strides = layout.kept_strides();
  const Shape kept_shape = layout.kept_shape();
  // offsets of each output's reduced block
  std::vector<int64_t> base(static_cast<std::size_t>(O));
  {
    Shape out_strides = contiguous_strides(kept_shape);
    auto L = make_loop<2>(kept_shape, {&out_strides, &kept_strides});
    run_loop(L, [&](auto o, int64_t n, auto st) {
      for (int64_t i = 0; i < n; ++i) base[o[0] + i * st[0]] = o[1] + i * st[1];
    }, /*serial=*/true);
  }
  dispatch_dtype(x.dtype(), [&](auto t) {
    using T = decltype(t);
    const T* p = xp.data<T>();
    if (op == ReduceOp::Sum) {
      using Acc = SumAcc<T>;
      T* y = out.data<T>();
      auto sum_range = [&](const T* q, int64_t b, int64_t e) {
        if (rstride == 1) return with_kernels([&](auto k) { return decltype(k)::row_sum(q + b, e - b); });
        Acc acc = 0;
        for (int64_t r = b; r < e; ++r) acc += q[r * rstride];
        return acc;
      };
      bool columns = rstride != 1 && O > 1;   // outputs contiguous in the input: sum row after row
      for (int64_t o = 1; columns && o < O; ++o) columns = base[o] == base[0] + o;
      if (columns) {
        const T* q = p + base[0];
        parallel_for(O, R, [&](int64_t b, int64_t e) {
          Scratch<Acc> acc(e - b);
          std::fill_n(acc.get(), e - b, Acc(0));
          with_kernels([&](auto k) {
            for (int64_t r = 0; r < R; ++r) decltype(k)::add_row_to(q + r * rstride + b, acc.get(), e - b);
          });
          for (int64_t o = b; o < e; ++o) y[o] = static_cast<T>(acc.get()[o - b]);
        });
        return;
      }
      if (O == 1 && R >= 2 * kSumChunk) {
        // One output, much input: fixed chunks summed in parallel, combined in order (deterministic).
        const int64_t chunks = (R + kSumChunk - 1) / kSumChunk;
        std::vector<Acc> partial(static_cast<std::size_t>(chunks));
        parallel_for(chunks, kSumChunk, [&](int64_t b, int64_t e) {
          for (int64_t c = b; c < e; ++c)
            partial[c] = sum_range(p + base[0], c * kSumChunk, std::min(R, (c + 1) * kSumChunk));
        });
        Acc acc = 0;
        for (Acc v : partial) acc += v;
        y[0] = static_cast<T>(acc);
        return;
      }
      parallel_for(O, R, [&](int64_t b, int64_t e) {
        for (int64_t o = b; o < e; ++o) y[o] = static_cast<T>(sum_range(p + base[o], 0, R));
      });
      return;
    }
    const bool want_index = op == ReduceOp::ArgMax || op == ReduceOp::ArgMin;
    // A scan in order with reduce_math's rule (the CUDA reducers combine partial results with it).
    auto scan = [&](auto is_max) {
      parallel_for(O, R, [&](int64_t b, int64_t e) {
        for (int64_t o = b; o < e; ++o) {
          const T* q = p + base[o];
          T best = q[0];
          int64_t at = 0;
          for (int64_t r = 1; r < R; ++r) {
            const T v = q[r * rstride];
            if (reduce_math::later_replaces<decltype(is_max)::value>(best, v)) {
              best = v;
              at = r;
              if (reduce_math::is_nan(best)) break;   // nothing after a NaN replaces it
            }
          }
          if (want_index) out.data<int64_t>()[o] = at;
          else out.data<T>()[o] = best;
        }
      });
    };
    if (op == ReduceOp::Max || op == ReduceOp::ArgMax) scan(std::true_type{});
    else scan(std::false_type{});
  });
}

namespace {

/// The scan of one contiguous line of n elements (stride 1) from src into dst, in scan order k = 0 ..
/// n-1 (element k, or n-1-k when Reverse). A single running value would make every step wait for the
/// previous one (a chain of n add latencies, several times slower than memory), so the line is cut
/// into chunks of kChains segments of kSeg elements, scanned side by side (independent chains), then
/// each segment is combined with the running value of everything before it: two passes over each
/// chunk while it is in cache. The segments of a chunk are at most 2 to 4 KiB apart, so the chains'
/// streams do not evict one another from L1 (segments a whole line apart would, on long lines). The
/// tail shorter than a chunk runs as one chain.
template <bool Reverse, class T, class Op>
void scan_line(const T* src, T* dst, int64_t n, Op op) {
  constexpr int64_t kChains = 8;
  // segments of 512 on long lines; a shorter line is one chunk of 8 shorter segments (down to 32)
  const int64_t kSeg = n >= kChains * 512 ? 512 : std::max<int64_t>(n / kChains, 32), kChunk = kChains * kSeg;
  auto at = [n](int64_t k) { return Reverse ? n - 1 - k : k; };
  bool have = false;   // whether carry holds the scan of the elements before the current chunk
  T carry{};
  for (int64_t c0 = 0; c0 < n; c0 += kChunk) {
    if (n - c0 < kChunk) {
      for (int64_t k = c0; k < n; ++k) {
        const T v = src[at(k)];
        carry = have ? op(carry, v) : v;
        have = true;
        dst[at(k)] = carry;
      }
      break;
    }
    T acc[kChains];
    for (int64_t c = 0; c < kChains; ++c) dst[at(c0 + c * kSeg)] = acc[c] = src[at(c0 + c * kSeg)];
    for (int64_t p = 1; p < kSeg; ++p)
      for (int64_t c = 0; c < kChains; ++c) {
        const int64_t k = c0 + c * kSeg + p;
        dst[at(k)] = acc[c] = op(acc[c], src[at(k)]);
      }
    for (int64_t c = 0; c < kChains; ++c) {   // segment c after everything before it
      if (have)
        for (int64_t k = c0 + c * kSeg; k < c0 + (c + 1) * kSeg; ++k) dst[at(k)] = op(carry, dst[at(k)]);
      carry = have ? op(carry, acc[c]) : acc[c];
      have = true;
    }
  }
}

}  // namespace

// One pass per line: out[o][k][j] = out[o][k-1][j] op x[o][k][j] over the (outer, n, inner) view of
// x, k from 0 (or from n-1 when reverse). The lines are split among the threads in runs of consecutive
// j, so a run of one o walks rows of `inner` contiguous elements (vectorizable); lines of inner 1 are
// contiguous and go through scan_line. One read of x and one or two writes of out, memory-bound.
void CpuBackend::scan(BinaryOp op, const RawTensor& x, int64_t dim, bool reverse, const RawTensor& out) {
  const Shape& shape = x.shape();
  const int64_t n = shape[dim];
  if (x.numel() == 0) return;
  int64_t inner = 1;
  for (std::size_t d = static_cast<std::size_t>(dim) + 1; d < shape.size(); ++d) inner *= shape[d];
  const int64_t outer = x.numel() / (n * inner);
  const bool mul = op == BinaryOp::Mul;
  TG_CHECK(mul || op == BinaryOp::Add, Error, "scan: op must be Add or Mul");
  auto run = [&](auto t) {
    using T = decltype(t);
    const T* p = x.data<T>();
    T* y = out.data<T>();
    if (inner == 1) {
      parallel_for(outer, n, [&](int64_t b, int64_t e) {
        for (int64_t o = b; o < e; ++o) {
          const auto times = [](T a, T v) { return a * v; };
          const auto plus = [](T a, T v) { return a + v; };
          if (reverse) {
            if (mul) scan_line<true>(p + o * n, y + o * n, n, times);
            else scan_line<true>(p + o * n, y + o * n, n, plus);
          } else {
            if (mul) scan_line<false>(p + o * n, y + o * n, n, times);
            else scan_line<false>(p + o * n, y + o * n, n, plus);
          }
        }
      });
      return;
    }
    parallel_for(outer * inner, n, [&](int64_t b, int64_t e) {
      for (int64_t l = b; l < e;) {
        const int64_t o = l / inner, j0 = l % inner, j1 = std::min(inner, j0 + (e - l));   // one o, columns [j0, j1)
        const T* src = p + o * n * inner;
        T* dst = y + o * n * inner;
        for (int64_t k = 0; k < n; ++k) {
          const int64_t i = reverse ? n - 1 - k : k;
          const T* in = src + i * inner;
          T* row = dst + i * inner;
          if (k == 0) {
            for (int64_t j = j0; j < j1; ++j) row[j] = in[j];
          } else {
            const T* prev = dst + (reverse ? i + 1 : i - 1) * inner;
            if (mul) for (int64_t j = j0; j < j1; ++j) row[j] = prev[j] * in[j];
            else for (int64_t j = j0; j < j1; ++j) row[j] = prev[j] + in[j];
          }
        }
        l += j1 - j0;
      }
    });
  };
  switch (x.dtype()) {
    case kFloat32: run(float{}); break;
    case kFloat64: run(double{}); break;
    case kInt64: run(int64_t{}); break;
    default: TG_CHECK(false, DTypeError, "scan: expected float32, float64 or int64, got ", dtype_name(x.dtype()));
  }
}

}  // namespace cpu
}  // namespace tg
