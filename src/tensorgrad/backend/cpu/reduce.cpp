// backend/cpu/reduce.cpp: the reduction family of the CPU backend: sum, max, min, argmax, argmin along
// axes (and so sum_to). The CUDA twin is backend/cuda/reduce.cu (Note [Kernel families] in backend/backend.h).
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

}  // namespace cpu
}  // namespace tg
