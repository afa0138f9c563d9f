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

// Note [Vectorized scan]
// ~~~~~~~~~~~~~~~~~~~~~~~
// A contiguous line (cumsum or cumprod along the last dim) is scanned in blocks of 64 bytes (16 floats,
// 8 doubles or int64s; kernels.inc's scan_contiguous): each block becomes its own inclusive scan in
// log2(W) lane shifts and combines (scan_lanes), then is combined with the running value of the blocks
// before it, whose last lane is the next running value. One dependent combine per block instead of
// one per element, so one thread scans at the memory's speed. Every code path (baseline, AVX2,
// AVX-512) runs the same tree on the same 64-byte blocks, so they give the same bits.
// The threads take different lines; a line is not split among them. A split can keep the bits (cut
// the line into pieces, each scanned from a base that is the combination of the pieces' totals before
// it), but it did not pay where it was measured: on 2 cores, one thread already moves a 16M-float
// cumsum at the memory's speed (4.4 ms median, 2026-12-06), and a split that read the line 1.4 times
// took the same time.

// One pass per line: out[o][k][j] = out[o][k-1][j] op x[o][k][j] over the (outer, n, inner) view of
// x, k from 0 (or from n-1 when reverse). The lines are split among the threads in runs of consecutive
// j, so a run of one o walks rows of `inner` contiguous elements (vectorizable); lines of inner 1 are
// contiguous and go through scan_contiguous (Note [Vectorized scan]). One read of x and one write
// of out, memory-bound.
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
      auto lines = [&](auto is_mul, auto is_reverse) {
        constexpr bool Mul = decltype(is_mul)::value, Reverse = decltype(is_reverse)::value;
        parallel_for(outer, n, [&](int64_t b, int64_t e) {
          with_kernels([&](auto k) {
            for (int64_t o = b; o < e; ++o)
              decltype(k)::template scan_contiguous<Mul, Reverse>(p + o * n, y + o * n, n);
          });
        });
      };
      if (mul) {
        if (reverse) lines(std::true_type{}, std::true_type{});
        else lines(std::true_type{}, std::false_type{});
      } else {
        if (reverse) lines(std::false_type{}, std::true_type{});
        else lines(std::false_type{}, std::false_type{});
      }
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
