// engine/cpu_backend.cpp: the CPU backend, the reference every other backend is tested against.
// Plain loops over ops/functors.h, split over engine/parallel.h's thread pool above a size threshold,
// CBLAS (OpenBLAS, single-threaded: Note [One thread pool]) for gemm with a
// small blocked fallback. Validation happened in engine/prim.cpp; inside a parallel region only a
// scratch allocation can throw (OutOfMemoryError), which the pool hands to the caller. The CUDA twin
// of this file is cuda/.
#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <limits>
#include <thread>
#include <vector>

#include "tensorgrad/engine/backend.h"
#include "tensorgrad/engine/cpu_capability.h"
#include "tensorgrad/engine/cpu_conv.h"
#include "tensorgrad/engine/macros.h"
#include "tensorgrad/engine/parallel.h"
#include "tensorgrad/ops/optim_math.h"

#if defined(__SSE__) || defined(__x86_64__)
#include <xmmintrin.h>
#define TG_HAVE_MXCSR 1
#endif
#ifdef TENSORGRAD_HAVE_CBLAS
#include <cblas.h>
#endif
#ifdef TENSORGRAD_HAVE_OPENBLAS
extern "C" void openblas_set_num_threads(int);
extern "C" int openblas_get_num_threads(void);
#endif

namespace tg {
namespace {

// Loops with less work than this (elements x cost per element) run on one thread. A parallel region
// costs a few µs on idle cores and up to milliseconds when the cores are busy with other work (the
// data loader's thread, another process), so only clearly large loops are split.
constexpr int64_t kParallelGrain = int64_t(1) << 18;
// Full sums are cut into chunks of this many elements and combined in order: deterministic for any
// thread count.
constexpr int64_t kSumChunk = 32768;
// Matrix products with at least this many multiply-adds are split across the pool's threads (Note
// [One thread pool]); smaller ones run on the calling thread.
constexpr int64_t kGemmParallelMacs = int64_t(1) << 24;

std::atomic<bool> g_flush_denormal{false};

/// Sets or clears FTZ (bit 15) and DAZ (bit 6) in this thread's MXCSR.
void apply_flush_denormal(bool on) {
#ifdef TG_HAVE_MXCSR
  const unsigned bits = 0x8040u;
  const unsigned csr = _mm_getcsr();
  const unsigned want = on ? (csr | bits) : (csr & ~bits);
  if (want != csr) _mm_setcsr(want);
#else
  (void)on;
#endif
}

int max_threads() { return parallel::max_threads(); }

/// Calls f(begin, end) on disjoint chunks of [0, n); parallel when the work (n * cost) is large.
template <class F>
void parallel_for(int64_t n, int64_t cost_per_item, F f) {
  if (n <= 0) return;
  const int threads = max_threads();
  if (threads <= 1 || n < 2 || n * std::max<int64_t>(cost_per_item, 1) < kParallelGrain) {
    f(int64_t(0), n);
    return;
  }
  const bool flush = g_flush_denormal.load(std::memory_order_relaxed);
  const std::thread::id caller = std::this_thread::get_id();
  parallel::run(n, threads, [&](int64_t b, int64_t e) {
    // Pool threads follow the process-wide setting; the calling thread keeps its own floating-point
    // mode, as it does for the loops too small to split.
    if (std::this_thread::get_id() != caller) apply_flush_denormal(flush);
    f(b, e);
  });
}

/// f(begin, end) over blocks of about 16K elements of `rows` contiguous rows of D elements each,
/// blocks spread over the threads: see Note [Row blocks].
template <class F>
void for_row_blocks(int64_t rows, int64_t D, F f) {
  const int64_t per_block = std::max<int64_t>(1, (int64_t(1) << 14) / std::max<int64_t>(D, 1));
  // Work units per element for parallel_for's threshold: four passes over the block, one of them an
  // exp (about 20 operations), so (1024, 10) logits already split over two threads.
  constexpr int64_t kCostPerElement = 32;
  parallel_for(rows, D * kCostPerElement, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; i += per_block) f(i, std::min(e, i + per_block));
  });
}

// ------------------------------------------------------------------------------------------------
// Strided N-operand loops. Note [Strided loops]: every elementwise kernel walks its operands through
// one of these: size-1 dims are dropped, dims that are contiguous in every operand are merged, and
// the innermost dim becomes a row handed to a row function with each operand's inner stride.

template <std::size_t N>
struct Loop {
  std::vector<int64_t> sizes;                      // outer .. inner, after coalescing
  std::array<std::vector<int64_t>, N> strides;     // per operand, in elements
};

template <std::size_t N>
Loop<N> make_loop(const Shape& shape, const std::array<const Shape*, N>& strides) {
  Loop<N> L;
  for (int64_t s : shape)
    if (s == 0) {   // no elements: one empty dim (merging the others could overflow int64 for {0, 2^62, 2^62})
      L.sizes.assign(1, 0);
      for (std::size_t k = 0; k < N; ++k) L.strides[k].assign(1, 0);
      return L;
    }
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    if (!L.sizes.empty()) {   // merge with the previous dim when contiguous in every operand
      bool merge = true;
      for (std::size_t k = 0; k < N; ++k)
        if (L.strides[k].back() != (*strides[k])[d] * shape[d]) merge = false;
      if (merge) {
        L.sizes.back() *= shape[d];
        for (std::size_t k = 0; k < N; ++k) L.strides[k].back() = (*strides[k])[d];
        continue;
      }
    }
    L.sizes.push_back(shape[d]);
    for (std::size_t k = 0; k < N; ++k) L.strides[k].push_back((*strides[k])[d]);
  }
  return L;
}

/// row(offsets, n, inner_strides) for every row of the loop; rows run in parallel unless serial.
template <std::size_t N, class Row>
void run_loop(const Loop<N>& L, Row row, bool serial = false) {
  using Offs = std::array<int64_t, N>;
  const int64_t nd = static_cast<int64_t>(L.sizes.size());
  if (nd == 0) {
    row(Offs{}, int64_t(1), Offs{});
    return;
  }
  for (int64_t s : L.sizes)
    if (s == 0) return;   // no elements: no row (its pointers would offset a null or foreign storage)
  const int64_t inner = L.sizes.back();
  int64_t outer = 1;
  for (int64_t d = 0; d + 1 < nd; ++d) outer *= L.sizes[d];
  Offs inner_strides;
  for (std::size_t k = 0; k < N; ++k) inner_strides[k] = L.strides[k].back();
  auto rows = [&](int64_t begin, int64_t end) {
    std::vector<int64_t> idx(std::max<int64_t>(nd - 1, 1), 0);
    int64_t rem = begin;
    for (int64_t d = nd - 2; d >= 0; --d) {
      idx[d] = rem % L.sizes[d];
      rem /= L.sizes[d];
    }
    for (int64_t o = begin; o < end; ++o) {
      Offs offs{};
      for (int64_t d = 0; d + 1 < nd; ++d)
        for (std::size_t k = 0; k < N; ++k) offs[k] += idx[d] * L.strides[k][d];
      row(offs, inner, inner_strides);
      for (int64_t d = nd - 2; d >= 0; --d) {   // odometer increment
        if (++idx[d] < L.sizes[d]) break;
        idx[d] = 0;
      }
    }
  };
  if (serial) {
    rows(0, outer);
  } else if (outer == 1) {   // one long row (any contiguous tensor): split the row itself
    parallel_for(inner, 1, [&](int64_t begin, int64_t end) {
      Offs offs;
      for (std::size_t k = 0; k < N; ++k) offs[k] = begin * inner_strides[k];
      row(offs, end - begin, inner_strides);
    });
  } else {
    parallel_for(outer, inner, rows);
  }
}

template <class T>
bool is_nan(T v) {
  return v != v;   // false for integers
}

// ------------------------------------------------------------------------------------------------
// Note [CPU capabilities]: the library is compiled for baseline x86-64 (SSE2) so that one binary runs
// on any x86-64 CPU. The contiguous inner loops, where the time goes, are written once in
// engine/cpu_kernels.inc and compiled three times here, as the structs KernelsBaseline, KernelsAvx2
// (AVX2 + FMA + BMI2, x86-64-v3's vector set) and KernelsAvx512 (AVX-512 F/BW/DQ/VL/CD, x86-64-v4's),
// each function carrying __attribute__((target(...))) (GCC and clang). with_kernels() reads
// tg::cpu_capability() (one relaxed atomic load once chosen) and calls its body with the matching
// struct, so a kernel call costs a load and a switch on top of a direct call. The capability is
// detected once with __builtin_cpu_supports (engine/cpu_capability.cpp, whose checks must list every
// instruction set of the target strings below), overridden by TG_CPU_CAPABILITY or
// tg::set_cpu_capability, so that tests and benchmarks run every path on one machine. Code outside
// these structs (strided loops, bookkeeping) is baseline. The paths round differently only where a
// multiply and an add contract into an FMA (AVX2, AVX-512; the lanes and order of sums are the same on
// every path), and a path gives the same bits on every CPU that runs it: tests compare the paths
// within derived bounds (tests/test_cpu_capability.cpp, Note [Derived tolerances] in tests/testing.h).
// cpu_backend.cpp is compiled with -fno-trapping-math and -fno-math-errno (CMakeLists.txt): under
// GCC's default, a loop with a select between computed values (the clamps of fn::exp, see Note
// [Vectorizable exp]) vectorizes only with AVX-512's masked instructions, so exp under AVX2 ran at
// scalar speed; and sqrt's errno check kept Adam's loop and sqrt scalar on every path. tensorgrad
// never reads floating-point exception flags or errno; results are unchanged.

/// What sums accumulate in: double for floating types, int64 for integers.
template <class T>
using SumAcc = sum_accumulator_t<T>;

/// The shift of a softmax row: its maximum when finite, else NaN, so that a row holding +inf or only
/// -inf comes out NaN everywhere, as in PyTorch (Note [NaN and infinity] in ops/functors.h).
template <class T>
T row_shift(T max) {
  return std::isfinite(max) ? max : std::numeric_limits<T>::quiet_NaN();
}


#define TG_KERNELS KernelsBaseline
#define TG_TARGET
#include "tensorgrad/engine/cpu_kernels.inc"
#undef TG_KERNELS
#undef TG_TARGET
#if TG_X86_SIMD
#define TG_KERNELS KernelsAvx2
#define TG_TARGET __attribute__((target("avx2,fma,bmi,bmi2")))
#include "tensorgrad/engine/cpu_kernels.inc"
#undef TG_KERNELS
#undef TG_TARGET
#define TG_KERNELS KernelsAvx512
#define TG_TARGET __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512cd,avx2,fma,bmi,bmi2")))
#include "tensorgrad/engine/cpu_kernels.inc"
#undef TG_KERNELS
#undef TG_TARGET
#else
using KernelsAvx2 = KernelsBaseline;     // never chosen: cpu_capability() is always baseline here
using KernelsAvx512 = KernelsBaseline;
#endif

/// body(K{}) with K the loop set of the active capability; body calls K::template kernel<...>(...).
template <class Body>
decltype(auto) with_kernels(Body&& body) {
  switch (cpu_capability()) {
    case CpuCapability::Avx512: return body(KernelsAvx512{});
    case CpuCapability::Avx2: return body(KernelsAvx2{});
    case CpuCapability::Baseline: break;
  }
  return body(KernelsBaseline{});
}

/// Scratch memory from the caching allocator, for kernels that need a temporary buffer.
template <class T>
class Scratch {
 public:
  explicit Scratch(int64_t n)
      : bytes_(static_cast<std::size_t>(n) * sizeof(T)), p_(static_cast<T*>(cpu_allocator().allocate(bytes_))) {}
  ~Scratch() { cpu_allocator().deallocate(p_, bytes_); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  T* get() const { return p_; }

 private:
  std::size_t bytes_;
  T* p_;
};

// ------------------------------------------------------------------------------------------------

/// The BLAS runs on the thread that calls it (Note [One thread pool] in engine/parallel.h): large
/// products are split into row or column blocks over the pool, one BLAS call each. Checked before
/// every BLAS call, on the thread making it: other code in the process (libtorch in bench/) may
/// change the count, and OpenBLAS's OpenMP build keeps one per thread.
void use_single_threaded_blas() {
#ifdef TENSORGRAD_HAVE_OPENBLAS
  if (openblas_get_num_threads() != 1) openblas_set_num_threads(1);
#endif
}

class CpuBackend final : public Backend {
 public:
  Allocator& allocator() override { return cpu_allocator(); }

  void copy(const Tensor& src, const Tensor& dst) override {
    dispatch_dtype(src.dtype(), [&](auto s) {
      dispatch_dtype(dst.dtype(), [&](auto d) {
        using S = decltype(s);
        using D = decltype(d);
        const S* sp = src.data<S>();
        D* dp = dst.data<D>();
        auto L = make_loop<2>(dst.shape(), {&dst.strides(), &src.strides()});
        run_loop(L, [&](auto o, int64_t n, auto st) {
          D* out = dp + o[0];
          const S* in = sp + o[1];
          if (st[0] == 1 && st[1] == 1) {
            for (int64_t i = 0; i < n; ++i) out[i] = static_cast<D>(in[i]);
          } else {
            for (int64_t i = 0; i < n; ++i) out[i * st[0]] = static_cast<D>(in[i * st[1]]);
          }
        });
      });
    });
  }

  void fill(const Tensor& dst, double value) override {
    dispatch_dtype(dst.dtype(), [&](auto t) {
      using T = decltype(t);
      const T v = static_cast<T>(value);
      T* p = dst.data<T>();
      auto L = make_loop<1>(dst.shape(), {&dst.strides()});
      run_loop(L, [&](auto o, int64_t n, auto st) {
        for (int64_t i = 0; i < n; ++i) p[o[0] + i * st[0]] = v;
      });
    });
  }

  void unary(UnaryOp op, UnaryArgs args, const Tensor& x, const Tensor& out) override {
    dispatch_floating(x.dtype(), "unary", [&](auto t) {
      using T = decltype(t);
      visit(op, [&](auto f) {
        using F = decltype(f);
        const T* xp = x.data<T>();
        T* yp = out.data<T>();
        auto L = make_loop<2>(out.shape(), {&out.strides(), &x.strides()});
        run_loop(L, [&](auto o, int64_t n, auto st) {
          T* y = yp + o[0];
          const T* in = xp + o[1];
          if (st[0] == 1 && st[1] == 1) {
            with_kernels([&](auto k) { decltype(k)::template unary_contiguous<F>(in, y, n, args); });
          } else {
            using M = opmath_t<T>;
            for (int64_t i = 0; i < n; ++i) y[i * st[0]] = T(F::forward(M(in[i * st[1]]), args));
          }
        });
      });
    });
  }

  void unary_backward(UnaryOp op, UnaryArgs args, const Tensor& x, const Tensor& y, const Tensor& dy,
                      const Tensor& dx) override {
    // An operand the functor does not read may be undefined: dy stands in for it (never read).
    const Tensor& xs = x.defined() ? x : dy;
    const Tensor& ys = y.defined() ? y : dy;
    dispatch_floating(dx.dtype(), "unary_backward", [&](auto t) {
      using T = decltype(t);
      visit(op, [&](auto f) {
        using F = decltype(f);
        const T *xp = xs.data<T>(), *yp = ys.data<T>(), *gp = dy.data<T>();
        T* dp = dx.data<T>();
        auto L = make_loop<4>(dx.shape(), {&dx.strides(), &xs.strides(), &ys.strides(), &dy.strides()});
        run_loop(L, [&](auto o, int64_t n, auto st) {
          if (st[0] == 1 && st[1] == 1 && st[2] == 1 && st[3] == 1) {
            with_kernels([&](auto k) {
              decltype(k)::template unary_backward_contiguous<F>(xp + o[1], yp + o[2], gp + o[3], dp + o[0], n, args);
            });
          } else {
            using M = opmath_t<T>;
            for (int64_t i = 0; i < n; ++i)
              dp[o[0] + i * st[0]] =
                  T(F::backward(M(xp[o[1] + i * st[1]]), M(yp[o[2] + i * st[2]]), M(gp[o[3] + i * st[3]]), args));
          }
        });
      });
    });
  }

  void binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) override {
    dispatch_dtype(a.dtype(), [&](auto t) {
      using T = decltype(t);
      visit(op, [&](auto f) {
        using F = decltype(f);
        using O = binary_out_t<F, T>;   // bool for comparisons
        const T *ap = a.data<T>(), *bp = b.data<T>();
        O* op_ = out.data<O>();
        if (a.is_contiguous() && b.is_contiguous() && out.is_contiguous() && a.shape() == out.shape() &&
            b.shape() == out.shape()) {   // flat fast path: no loop bookkeeping
          parallel_for(out.numel(), 1, [&](int64_t begin, int64_t end) {
            with_kernels([&](auto k) {
              decltype(k)::template binary_contiguous<F, T, 1, 1>(ap + begin, bp + begin, op_ + begin, end - begin);
            });
          });
          return;
        }
        auto L = make_loop<3>(out.shape(), {&out.strides(), &a.strides(), &b.strides()});
        run_loop(L, [&](auto o, int64_t n, auto st) {
          O* y = op_ + o[0];
          const T* u = ap + o[1];
          const T* v = bp + o[2];
          if (st[0] == 1 && st[1] == 1 && st[2] == 1) {          // the vectorizable cases first
            with_kernels([&](auto k) { decltype(k)::template binary_contiguous<F, T, 1, 1>(u, v, y, n); });
          } else if (st[0] == 1 && st[1] == 1 && st[2] == 0) {
            with_kernels([&](auto k) { decltype(k)::template binary_contiguous<F, T, 1, 0>(u, v, y, n); });
          } else if (st[0] == 1 && st[1] == 0 && st[2] == 1) {
            with_kernels([&](auto k) { decltype(k)::template binary_contiguous<F, T, 0, 1>(u, v, y, n); });
          } else {
            using M = opmath_t<T>;
            for (int64_t i = 0; i < n; ++i) y[i * st[0]] = O(F::apply(M(u[i * st[1]]), M(v[i * st[2]])));
          }
        });
      });
    });
  }

  void where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out) override {
    dispatch_dtype(out.dtype(), [&](auto t) {
      using T = decltype(t);
      const bool* cp = cond.data<bool>();
      const T *ap = a.data<T>(), *bp = b.data<T>();
      T* yp = out.data<T>();
      auto L = make_loop<4>(out.shape(), {&out.strides(), &cond.strides(), &a.strides(), &b.strides()});
      run_loop(L, [&](auto o, int64_t n, auto st) {
        for (int64_t i = 0; i < n; ++i)
          yp[o[0] + i * st[0]] = cp[o[1] + i * st[1]] ? ap[o[2] + i * st[2]] : bp[o[3] + i * st[3]];
      });
    });
  }

  void reduce(ReduceOp op, const Tensor& x, const Tensor& out) override {
    if (x.numel() == 0) {   // only a sum over an empty dim gets here (prim::reduce): zeros, no pointer arithmetic
      fill(out, 0.0);
      return;
    }
    // Kept dims first, reduced dims last; out (contiguous) enumerates the kept dims in order.
    const ReductionLayout layout = reduction_layout(x, out);
    const Tensor& xp = layout.x;
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
      const bool is_max = op == ReduceOp::Max || op == ReduceOp::ArgMax;
      const bool want_index = op == ReduceOp::ArgMax || op == ReduceOp::ArgMin;
      parallel_for(O, R, [&](int64_t b, int64_t e) {
        for (int64_t o = b; o < e; ++o) {
          const T* q = p + base[o];
          T best = q[0];
          int64_t at = 0;
          if (!is_nan(best)) {
            for (int64_t r = 1; r < R; ++r) {
              const T v = q[r * rstride];
              if (is_nan(v)) {   // NaN wins, as in PyTorch
                best = v;
                at = r;
                break;
              }
              if (is_max ? v > best : v < best) {
                best = v;
                at = r;
              }
            }
          }
          if (want_index) out.data<int64_t>()[o] = at;
          else out.data<T>()[o] = best;
        }
      });
    });
  }

  void gemm(const GemmArgs& g) override {
    dispatch_only<kFloat32, kFloat64>(g.dtype, "matmul", [&](auto t) {
      using T = decltype(t);
      const T* A = static_cast<const T*>(g.a);
      const T* B = static_cast<const T*>(g.b);
      T* C = static_cast<T*>(g.c);
      for (int64_t i = 0; i < g.batch; ++i)
        gemm_one(g, A + i * g.stride_a, B + i * g.stride_b, C + i * g.stride_c);
    });
  }

  // The CPU's side of Note [Bias folded into the GEMM] (engine/prim.cpp): the bias is copied into C's
  // rows and the BLAS accumulates the product onto it (beta = 1); the row sums of op(A) are summed
  // here in the order of reduce()'s column sums (SumAcc, stored row after stored row). Either way one
  // backend call instead of two, which at small batches saves the second op's dispatch.
  bool gemm_epilogue(const GemmArgs& g, const GemmEpilogue& e) override {
    if ((e.bias == nullptr) == (e.row_sums == nullptr) || g.batch != 1 || g.beta != 0 || g.K == 0) return false;
    dispatch_only<kFloat32, kFloat64>(g.dtype, "matmul", [&](auto t) {
      using T = decltype(t);
      const T* A = static_cast<const T*>(g.a);
      T* C = static_cast<T*>(g.c);
      if (e.bias != nullptr) {
        const T* bias = static_cast<const T*>(e.bias);
        for (int64_t i = 0; i < g.M; ++i) std::copy_n(bias, g.N, C + i * g.ldc);
        GemmArgs accumulate = g;
        accumulate.beta = 1;
        gemm_one(accumulate, A, static_cast<const T*>(g.b), C);
        return;
      }
      gemm_one(g, A, static_cast<const T*>(g.b), C);
      T* sums = static_cast<T*>(e.row_sums);
      with_kernels([&](auto k) {
        if (g.trans_a) {   // A stored (K, M): a column sum of its stored rows
          Scratch<SumAcc<T>> acc(g.M);
          std::fill_n(acc.get(), g.M, SumAcc<T>(0));
          for (int64_t r = 0; r < g.K; ++r) decltype(k)::add_row_to(A + r * g.lda, acc.get(), g.M);
          for (int64_t i = 0; i < g.M; ++i) sums[i] = static_cast<T>(acc.get()[i]);
        } else {
          for (int64_t i = 0; i < g.M; ++i) sums[i] = static_cast<T>(decltype(k)::row_sum(A + i * g.lda, g.K));
        }
      });
    });
    return true;
  }

  // Softmax family. Note [Row blocks]: with contiguous rows (softmax over the last dim, every
  // cross-entropy) a block of rows is shifted by its row maxima, exponentiated in one vectorized pass
  // (exp_in_place), then summed per row. Blocks hold about 16K elements so that the three passes
  // stay in the L1/L2 cache; short rows (10 classes) vectorize as well as long ones.
  void softmax(const Tensor& x, int64_t dim, bool log, const Tensor& out) override {
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
                const T lse = static_cast<T>(std::log(s)) + maxes.get()[n - b];
                for (int64_t d = 0; d < D; ++d) y[d] = xp[n * D + d] - lse;
              } else {
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
          m = row_shift(m);
          double s = 0;
          for (int64_t d = 0; d < r.D; ++d) s += fn::exp(in[d * r.inner] - m);
          if (log) {
            const T lse = static_cast<T>(std::log(s)) + m;
            for (int64_t d = 0; d < r.D; ++d) y[d * r.inner] = in[d * r.inner] - lse;
          } else {
            const double inv = 1.0 / s;
            for (int64_t d = 0; d < r.D; ++d) y[d * r.inner] = static_cast<T>(fn::exp(in[d * r.inner] - m) * inv);
          }
        }
      });
    });
  }

  // softmax: dx = y (dy - sum(dy y));  log_softmax: dx = dy - exp(y) sum(dy)
  void softmax_backward(const Tensor& y, const Tensor& dy, int64_t dim, bool log, const Tensor& dx) override {
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
            s += log ? gp[i] : gp[i] * yp[i];
          }
          for (int64_t d = 0; d < r.D; ++d) {
            const int64_t i = off + d * r.inner;
            dp[i] = log ? static_cast<T>(gp[i] - fn::exp(yp[i]) * s) : static_cast<T>(yp[i] * (gp[i] - s));
          }
        }
      });
    });
  }

  void cross_entropy(const Tensor& logits, const Tensor& target, const CrossEntropyArgs& args, const Tensor& loss,
                     const Tensor& lse, const Tensor& total, const Tensor& count) override {
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
            if (tg_[n] == args.ignore_index) {
              lp[n] = T(0);
              continue;
            }
            double v = l - row[tg_[n]];                                   // -log softmax[target]
            if (s != 0) v = (1 - s) * v + s * (l - K::row_sum(row, C) / static_cast<double>(C));   // + s * mean_c(-log softmax[c])
            lp[n] = static_cast<T>(v);
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
        kept += tg_[n] != args.ignore_index;
      }
      if (args.mean) count.data<T>()[0] = static_cast<T>(kept);
      total.data<T>()[0] = static_cast<T>(args.mean ? sum / static_cast<double>(kept) : sum);
    });
  }

  void cross_entropy_backward(const Tensor& logits, const Tensor& target, const CrossEntropyArgs& args,
                              const Tensor& lse, const Tensor& dloss, const Tensor& count,
                              const Tensor& dlogits) override {
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
            if (tg_[n] == args.ignore_index) {
              std::fill_n(d, C, T(0));
              continue;
            }
            const T g = args.mean ? gp[n * gs] / divisor : gp[n * gs];
            for (int64_t c = 0; c < C; ++c) d[c] = (d[c] - uniform) * g;   // (softmax - s/C) g
            d[tg_[n]] -= (T(1) - s) * g;                                   // - (1 - s) onehot g
          }
        });
      });
    });
  }

  void index_select(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& out) override {
    const RowView r = rows_of(x, dim);
    const int64_t K = index.numel();
    const int64_t* ip = index.data<int64_t>();
    dispatch_dtype(x.dtype(), [&](auto t) {
      using T = decltype(t);
      const T* xp = x.data<T>();
      T* yp = out.data<T>();
      parallel_for(r.outer * K, r.inner, [&](int64_t b, int64_t e) {
        for (int64_t k = b; k < e; ++k) {
          const int64_t o = k / K, j = k % K;
          std::copy_n(xp + (o * r.D + ip[j]) * r.inner, r.inner, yp + (o * K + j) * r.inner);
        }
      });
    });
  }

  void index_add(const Tensor& dst, int64_t dim, const Tensor& index, const Tensor& src) override {
    const RowView r = rows_of(dst, dim);
    const int64_t K = index.numel();
    const int64_t* ip = index.data<int64_t>();
    dispatch_dtype(dst.dtype(), [&](auto t) {
      using T = decltype(t);
      T* dp = dst.data<T>();
      const T* sp = src.data<T>();
      parallel_for(r.outer, K * r.inner, [&](int64_t b, int64_t e) {   // distinct o never collide
        for (int64_t o = b; o < e; ++o)
          for (int64_t j = 0; j < K; ++j) {
            T* d = dp + (o * r.D + ip[j]) * r.inner;
            const T* s = sp + (o * K + j) * r.inner;
            for (int64_t i = 0; i < r.inner; ++i) d[i] += s[i];
          }
      });
    });
  }

  void gather(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& out) override {
    gather_scatter(x, dim, index, out, /*scatter=*/false);
  }
  void scatter_add(const Tensor& dst, int64_t dim, const Tensor& index, const Tensor& src) override {
    gather_scatter(dst, dim, index, src, /*scatter=*/true);
  }

  void random(const philox::Distribution& dist, uint64_t seed, uint64_t offset, const Tensor& out) override {
    dispatch_dtype(out.dtype(), [&](auto t) {
      using T = decltype(t);
      T* p = out.data<T>();
      parallel_for(out.numel(), 16, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i)
          p[i] = philox::sample<T>(dist, seed, offset + static_cast<uint64_t>(i));
      });
    });
  }

  void sgd_step(const std::vector<SgdParam>& params, double momentum, double dampening, double weight_decay,
                bool nesterov) override {
    for (const SgdParam& sp : params)   // one parameter at a time: each loop is split over the pool
      dispatch_only<kFloat32, kFloat64>(sp.param.dtype(), "sgd", [&](auto t) {
        using T = decltype(t);
        T* w = sp.param.data<T>();
        const T* g = sp.grad.data<T>();
        T* v = sp.velocity.defined() ? sp.velocity.data<T>() : nullptr;
        const SgdScalars<T> k{T(sp.lr), T(momentum), T(1 - dampening), T(weight_decay), nesterov, sp.first_step};
        parallel_for(sp.param.numel(), 4, [&](int64_t b, int64_t e) {
          with_kernels([&](auto kernels) {
            using K = decltype(kernels);
            if (v == nullptr) K::sgd_plain(w + b, g + b, e - b, k);
            else K::sgd_momentum(w + b, g + b, v + b, e - b, k);
          });
        });
      });
  }

  void adam_step(const std::vector<AdamParam>& params, double beta1, double beta2, double eps, double weight_decay,
                 bool decoupled) override {
    for (const AdamParam& ap : params)   // one parameter at a time: each loop is split over the pool
      dispatch_only<kFloat32, kFloat64>(ap.param.dtype(), "adam", [&](auto t) {
        using T = decltype(t);
        T* w = ap.param.data<T>();
        const T* g = ap.grad.data<T>();
        T *m = ap.exp_avg.data<T>(), *v = ap.exp_avg_sq.data<T>();
        T* vmax = ap.max_exp_avg_sq.defined() ? ap.max_exp_avg_sq.data<T>() : nullptr;
        const double lr = ap.lr;
        const double bc1 = 1 - std::pow(beta1, double(ap.step)), bc2 = 1 - std::pow(beta2, double(ap.step));
        const AdamScalars<T> k{T(lr / bc1), T(1 / std::sqrt(bc2)), T(beta1), T(beta2), T(eps), T(weight_decay),
                               T(1 - lr * weight_decay), decoupled};
        parallel_for(ap.param.numel(), 8, [&](int64_t b, int64_t e) {
          with_kernels([&](auto kernels) {
            decltype(kernels)::adam_loop(w + b, g + b, m + b, v + b, vmax == nullptr ? nullptr : vmax + b, e - b, k);
          });
        });
      });
  }

  // Convolution and pooling: engine/cpu_conv.cpp.
  void conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv2dArgs& args,
              const Tensor& out) override {
    detail::cpu_conv2d(x, weight, bias, args, out);
  }
  void conv2d_backward(const Tensor& x, const Tensor& weight, const Tensor& dy, const Conv2dArgs& args,
                       const Tensor& dx, const Tensor& dweight, const Tensor& dbias) override {
    detail::cpu_conv2d_backward(x, weight, dy, args, dx, dweight, dbias);
  }
  void max_pool2d(const Tensor& x, const Pool2dArgs& args, const Tensor& out, const Tensor& indices) override {
    detail::cpu_max_pool2d(x, args, out, indices);
  }
  void max_pool2d_backward(const Tensor& dy, const Tensor& indices, const Pool2dArgs& args,
                           const Tensor& dx) override {
    detail::cpu_max_pool2d_backward(dy, indices, args, dx);
  }
  void avg_pool2d(const Tensor& x, const Pool2dArgs& args, const Tensor& out) override {
    detail::cpu_avg_pool2d(x, args, out);
  }
  void avg_pool2d_backward(const Tensor& dy, const Pool2dArgs& args, const Tensor& dx) override {
    detail::cpu_avg_pool2d_backward(dy, args, dx);
  }

  void synchronize() override {}

  // Note [Sort order] in engine/prim.cpp: a stable sort per row, NaN above every number.
  void argsort(const Tensor& x, bool descending, const Tensor& indices) override {
    const int64_t N = x.dim() ? x.shape().back() : 1, R = N ? x.numel() / N : 0;
    int64_t* ip = indices.data<int64_t>();
    dispatch_dtype(x.dtype(), [&](auto t) {
      using T = decltype(t);
      using V = opmath_t<T>;
      const T* xp = x.data<T>();
      parallel_for(R, N * 16, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          const T* row = xp + r * N;
          int64_t* out = ip + r * N;
          for (int64_t j = 0; j < N; ++j) out[j] = j;
          auto at = [row](int64_t j) { return static_cast<V>(row[j]); };
          auto is_nan = [](V v) { return v != v; };
          if (descending)
            std::stable_sort(out, out + N, [&](int64_t a, int64_t b) {
              const V va = at(a), vb = at(b);
              return va > vb || (is_nan(va) && !is_nan(vb));
            });
          else
            std::stable_sort(out, out + N, [&](int64_t a, int64_t b) {
              const V va = at(a), vb = at(b);
              return va < vb || (is_nan(vb) && !is_nan(va));
            });
        }
      });
    });
  }

 private:
  /// gather: out[i] = x[i with dim -> index[i]];  scatter: x[i with dim -> index[i]] += out[i].
  static void gather_scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& other, bool scatter) {
    // Walk index's shape; x is read with its own strides except along dim, where index picks.
    Shape xs = x.strides();
    const int64_t dim_stride = x.dim() ? xs[dim] : 0;
    if (x.dim()) xs[dim] = 0;
    const int64_t* ip = index.data<int64_t>();
    dispatch_dtype(x.dtype(), [&](auto t) {
      using T = decltype(t);
      T* xp = x.data<T>();
      T* op = other.data<T>();
      auto L = make_loop<3>(index.shape(), {&other.strides(), &index.strides(), &xs});
      run_loop(L, [&](auto o, int64_t n, auto st) {
        for (int64_t i = 0; i < n; ++i) {
          T* xe = xp + o[2] + i * st[2] + ip[o[1] + i * st[1]] * dim_stride;
          T* oe = op + o[0] + i * st[0];
          if (scatter) *xe += *oe;
          else *oe = *xe;
        }
      }, /*serial=*/scatter);   // scatter_add may hit one element twice
    });
  }

  template <class T>
  static void gemm_one(const GemmArgs& g, const T* A, const T* B, T* C) {
    if (g.K == 1 && g.beta == 0 && g.M > 0 && g.N > 0) {   // outer product: the weight gradient at batch 1
      const int64_t a_step = g.trans_a ? 1 : g.lda, b_step = g.trans_b ? g.ldb : 1;
      parallel_for(g.M, g.N, [&](int64_t i0, int64_t i1) {
        with_kernels([&](auto k) {
          for (int64_t i = i0; i < i1; ++i) decltype(k)::scaled_row(A[i * a_step], B, b_step, C + i * g.ldc, g.N);
        });
      });
      return;
    }
#ifdef TENSORGRAD_HAVE_CBLAS
    if (g.M > 0 && g.N > 0) {
      if (g.K == 0) {
        if (g.beta == 0) std::fill_n(C, g.M * g.N, T(0));
        return;
      }
      const auto ta = g.trans_a ? CblasTrans : CblasNoTrans, tb = g.trans_b ? CblasTrans : CblasNoTrans;
      // C[i0:i1, j0:j1] = op(A)[i0:i1, :] op(B)[:, j0:j1] + beta C[i0:i1, j0:j1]
      auto block = [&](int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
        use_single_threaded_blas();   // on the thread that calls: an OpenMP build of OpenBLAS counts per thread
        const T* a = A + i0 * (g.trans_a ? 1 : g.lda);
        const T* b = B + j0 * (g.trans_b ? g.ldb : 1);
        T* c = C + i0 * g.ldc + j0;
        if constexpr (std::is_same<T, float>::value)
          cblas_sgemm(CblasRowMajor, ta, tb, int(i1 - i0), int(j1 - j0), int(g.K), 1.f, a, int(g.lda), b,
                      int(g.ldb), float(g.beta), c, int(g.ldc));
        else
          cblas_dgemm(CblasRowMajor, ta, tb, int(i1 - i0), int(j1 - j0), int(g.K), 1.0, a, int(g.lda), b,
                      int(g.ldb), g.beta, c, int(g.ldc));
      };
      const int threads = max_threads();
      if (threads <= 1 || g.M * g.N * g.K < kGemmParallelMacs) {
        block(0, g.M, 0, g.N);
      } else if (g.M >= g.N) {   // split the longer side of C into one block per thread
        parallel_for(g.M, g.N * g.K, [&](int64_t i0, int64_t i1) { block(i0, i1, 0, g.N); });
      } else {
        parallel_for(g.N, g.M * g.K, [&](int64_t j0, int64_t j1) { block(0, g.M, j0, j1); });
      }
    }
#else
    // Blocked fallback: C = op(A) op(B) + beta C, with the k loop outside the j loop for unit strides.
    auto a_at = [&](int64_t i, int64_t k) { return g.trans_a ? A[k * g.lda + i] : A[i * g.lda + k]; };
    auto b_at = [&](int64_t k, int64_t j) { return g.trans_b ? B[j * g.ldb + k] : B[k * g.ldb + j]; };
    constexpr int64_t kBlock = 64;
    parallel_for(g.M, g.N * g.K, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i)
        for (int64_t j = 0; j < g.N; ++j) C[i * g.ldc + j] = g.beta == 0 ? T(0) : T(g.beta) * C[i * g.ldc + j];
      for (int64_t kb = 0; kb < g.K; kb += kBlock)
        for (int64_t i = i0; i < i1; ++i)
          for (int64_t k = kb; k < std::min(g.K, kb + kBlock); ++k) {
            const T aik = a_at(i, k);
            T* c = C + i * g.ldc;
            for (int64_t j = 0; j < g.N; ++j) c[j] += aik * b_at(k, j);
          }
    });
#endif
  }
};

}  // namespace

Backend& cpu_backend() {
  static auto* b = new CpuBackend();   // never destroyed: see Note [CPU caching allocator]
  return *b;
}

void set_num_threads(int n) { parallel::set_num_threads(n); }

bool set_flush_denormal(bool on) {
  g_flush_denormal.store(on, std::memory_order_relaxed);
  apply_flush_denormal(on);
#ifdef TG_HAVE_MXCSR
  return true;
#else
  return !on;
#endif
}

int get_num_threads() { return parallel::num_threads(); }

}  // namespace tg
