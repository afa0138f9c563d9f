// backend/cpu/cpu_backend.h: the CPU backend's class and the loop machinery its families share (internal
// header, included only by backend/cpu/*.cpp). The CPU backend is the reference every other backend is
// tested against: plain loops over the shared per-element and per-row bodies of ops/ (Note [Kernel
// families] in backend/backend.h), split over core/parallel.h's thread pool above a size threshold,
// with the contiguous inner loops compiled once per CPU capability (backend/cpu/kernels.inc, Note [CPU
// capabilities]). One file per family, each the twin of a backend/cuda/ file: elementwise.cpp, reduce.cpp,
// softmax_loss.cpp, index.cpp, optim.cpp, blas.cpp, random.cpp, sort.cpp; runtime.cpp holds the
// backend object and the thread / floating-point settings (backend/cuda/runtime.cu's counterpart).
// Validation happened in prim/; inside a parallel region only a scratch allocation can
// throw (OutOfMemoryError), which the pool hands to the caller.
#pragma once
#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "tensorgrad/backend/backend.h"
#include "tensorgrad/core/cpu_capability.h"
#include "tensorgrad/backend/cpu/conv.h"
#include "tensorgrad/core/macros.h"
#include "tensorgrad/core/parallel.h"
#include "tensorgrad/kernels/norm.h"
#include "tensorgrad/kernels/optim.h"
#include "tensorgrad/kernels/softmax_loss.h"

#if defined(__SSE__) || defined(__x86_64__)
#include <immintrin.h>   // intrinsics of the AVX2 and AVX-512 clones (TG_X86_AVX2 in kernels.inc)
#include <xmmintrin.h>
#define TG_HAVE_MXCSR 1
#endif

namespace tg {
namespace cpu {

// Loops with less work than this (elements x cost per element) run on one thread. A parallel region
// costs a few µs on idle cores and up to milliseconds when the cores are busy with other work (the
// data loader's thread, another process), so only clearly large loops are split.
constexpr int64_t kParallelGrain = int64_t(1) << 18;
// set_flush_denormal's process-wide setting, which the pool threads follow (parallel_for).
inline std::atomic<bool> g_flush_denormal{false};

/// Sets or clears FTZ (bit 15) and DAZ (bit 6) in this thread's MXCSR.
inline void apply_flush_denormal(bool on) {
#ifdef TG_HAVE_MXCSR
  const unsigned bits = 0x8040u;
  const unsigned csr = _mm_getcsr();
  const unsigned want = on ? (csr | bits) : (csr & ~bits);
  if (want != csr) _mm_setcsr(want);
#else
  (void)on;
#endif
}

inline int max_threads() { return parallel::max_threads(); }

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
// backend/cpu/kernels.inc and compiled three times here, as the structs KernelsBaseline, KernelsAvx2
// (AVX2 + FMA + BMI2 + F16C, x86-64-v3's vector set) and KernelsAvx512 (AVX-512 F/BW/DQ/VL/CD, x86-64-v4's),
// each function carrying __attribute__((target(...))) (GCC and clang). with_kernels() reads
// tg::cpu_capability() (one relaxed atomic load once chosen) and calls its body with the matching
// struct, so a kernel call costs a load and a switch on top of a direct call. The capability is
// detected once with __builtin_cpu_supports (core/cpu_capability.cpp, whose checks must list every
// instruction set of the target strings below), overridden by TG_CPU_CAPABILITY or
// tg::set_cpu_capability, so that tests and benchmarks run every path on one machine. Code outside
// these structs (strided loops, bookkeeping) is baseline. The paths round differently only where a
// multiply and an add contract into an FMA (AVX2, AVX-512; the lanes and order of sums are the same on
// every path), and a path gives the same bits on every CPU that runs it: tests compare the paths
// within derived bounds (tests/test_cpu_capability.cpp, Note [Derived tolerances] in tests/testing.h).
// backend/cpu/*.cpp are compiled with -fno-trapping-math and -fno-math-errno (CMakeLists.txt): under
// GCC's default, a loop with a select between computed values (the clamps of fn::exp, see Note
// [Vectorizable exp]) vectorizes only with AVX-512's masked instructions, so exp under AVX2 ran at
// scalar speed; and sqrt's errno check kept Adam's loop and sqrt scalar on every path. tensorgrad
// never reads floating-point exception flags or errno; results are unchanged.

/// What sums accumulate in: double for floating types, int64 for integers.
template <class T>
using SumAcc = sum_accumulator_t<T>;


#define TG_KERNELS KernelsBaseline
#define TG_TARGET
#define TG_X86_AVX2 0
#include "tensorgrad/backend/cpu/kernels.inc"
#undef TG_KERNELS
#undef TG_TARGET
#undef TG_X86_AVX2
#if TG_X86_SIMD
#define TG_KERNELS KernelsAvx2
#define TG_TARGET __attribute__((target("avx2,fma,bmi,bmi2,f16c")))
#define TG_X86_AVX2 1
#include "tensorgrad/backend/cpu/kernels.inc"
#undef TG_KERNELS
#undef TG_TARGET
#undef TG_X86_AVX2
#define TG_KERNELS KernelsAvx512
#define TG_TARGET __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512cd,avx2,fma,bmi,bmi2,f16c")))
#define TG_X86_AVX2 1
#include "tensorgrad/backend/cpu/kernels.inc"
#undef TG_KERNELS
#undef TG_TARGET
#undef TG_X86_AVX2
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

/// Parts for a loop over M rows of D values (layer_norm's rows, the recurrent cells' rows): the pool's
/// size when the work is large enough to pay for the threads, at most M.
inline int row_parts(int64_t M, int64_t D) {
  return M * D >= (int64_t(1) << 16) ? std::max(1, std::min<int>(parallel::max_threads(), static_cast<int>(M))) : 1;
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

/// The CPU Backend (backend/backend.h has the contract of every method). Each family's methods are
/// defined in its file of backend/cpu/, named in the comments below.
class CpuBackend final : public Backend {
 public:
  Allocator& allocator() override { return cpu_allocator(); }
  void synchronize() override {}

  // backend/cpu/elementwise.cpp (copy, fill, binary, where) and backend/cpu/unary.cpp
  void copy(const RawTensor& src, const RawTensor& dst) override;
  void fill(const RawTensor& dst, double value) override;
  void unary(UnaryOp op, UnaryArgs args, const RawTensor& x, const RawTensor& out) override;
  void unary_backward(UnaryOp op, UnaryArgs args, const RawTensor& x, const RawTensor& y, const RawTensor& dy,
                      const RawTensor& dx) override;
  void binary(BinaryOp op, const RawTensor& a, const RawTensor& b, const RawTensor& out) override;
  void where(const RawTensor& cond, const RawTensor& a, const RawTensor& b, const RawTensor& out) override;
  // backend/cpu/reduce.cpp
  void reduce(ReduceOp op, const RawTensor& x, const RawTensor& out) override;
  void scan(BinaryOp op, const RawTensor& x, int64_t dim, bool reverse, const RawTensor& out) override;
  bool sample_categories(const RawTensor& probs, const RawTensor& u, const RawTensor& out,
                         const RawTensor& status) override;
  // backend/cpu/softmax_loss.cpp
  void softmax(const RawTensor& x, int64_t dim, bool log, const RawTensor& out) override;
  void softmax_backward(const RawTensor& y, const RawTensor& dy, int64_t dim, bool log, const RawTensor& dx) override;
  void cross_entropy(const RawTensor& logits, const RawTensor& target, const CrossEntropyArgs& args, const RawTensor& loss,
                     const RawTensor& lse, const RawTensor& total, const RawTensor& count) override;
  void cross_entropy_backward(const RawTensor& logits, const RawTensor& target, const CrossEntropyArgs& args,
                              const RawTensor& lse, const RawTensor& dloss, const RawTensor& count,
                              const RawTensor& dlogits) override;
  // backend/cpu/index.cpp
  void index_select(const RawTensor& x, int64_t dim, const RawTensor& index, const RawTensor& out) override;
  void index_add(const RawTensor& dst, int64_t dim, const RawTensor& index, const RawTensor& src) override;
  void gather(const RawTensor& x, int64_t dim, const RawTensor& index, const RawTensor& out) override;
  void scatter_add(const RawTensor& dst, int64_t dim, const RawTensor& index, const RawTensor& src) override;
  // backend/cpu/random.cpp
  void random(const philox::Distribution& dist, uint64_t seed, uint64_t offset, const RawTensor& out) override;
  // backend/cpu/optim.cpp
  void sgd_step(const std::vector<SgdParam>& params, const SgdHyper& hyper) override;
  void adam_step(const std::vector<AdamParam>& params, const AdamHyper& hyper) override;
  // backend/cpu/blas.cpp
  void gemm(const GemmArgs& g) override;
  bool gemm_takes(DType dtype) const override;
  bool gemm_epilogue(const GemmArgs& g, const GemmEpilogue& e) override;
  // backend/cpu/sort.cpp
  void argsort(const RawTensor& x, bool descending, const RawTensor& indices) override;
  // backend/cpu/norm.cpp
  void layer_norm(const RawTensor& x, const RawTensor& w, const RawTensor& b, double eps, const RawTensor& y, const RawTensor& mean,
                  const RawTensor& rstd) override;
  void layer_norm_backward(const RawTensor& dy, const RawTensor& x, const RawTensor& mean, const RawTensor& rstd, const RawTensor& w,
                           const RawTensor& dx, const RawTensor& dw, const RawTensor& db) override;
  // backend/cpu/ctc_loss.cpp
  void ctc_loss(const RawTensor& log_probs, const RawTensor& targets, const RawTensor& lengths, const CtcArgs& args,
                const RawTensor& alpha, const RawTensor& nll) override;
  void ctc_loss_backward(const RawTensor& log_probs, const RawTensor& targets, const RawTensor& lengths,
                         const RawTensor& alpha, const RawTensor& nll, const CtcArgs& args, const RawTensor& beta,
                         const RawTensor& grad) override;
  // backend/cpu/rnn.cpp
  void lstm_cell(const RawTensor& xg, const RawTensor& hg, const RawTensor& cx, const RawTensor& hc,
                 const RawTensor& ws) override;
  void lstm_cell_backward(const RawTensor& dhc, const RawTensor& cx, const RawTensor& ws, const RawTensor& dgates,
                          const RawTensor& dcx) override;
  void gru_cell(const RawTensor& xg, const RawTensor& hg, const RawTensor& hx, const RawTensor& hy,
                const RawTensor& ws) override;
  void gru_cell_backward(const RawTensor& dhy, const RawTensor& hx, const RawTensor& ws, const RawTensor& dxg,
                         const RawTensor& dhg, const RawTensor& dhx) override;
  // backend/cpu/attention.cpp
  void attention(const RawTensor& q, const RawTensor& k, const RawTensor& v, const AttentionArgs& args, const RawTensor& out,
                 const RawTensor& lse) override;
  void attention_backward(const RawTensor& q, const RawTensor& k, const RawTensor& v, const RawTensor& out, const RawTensor& lse,
                          const RawTensor& dout, const AttentionArgs& args, const RawTensor& dq, const RawTensor& dk,
                          const RawTensor& dv) override;

  // Convolution and pooling: backend/cpu/conv.cpp.
  void conv2d(const RawTensor& x, const RawTensor& weight, const RawTensor& bias, const Conv2dArgs& args,
              const RawTensor& out) override {
    detail::cpu_conv2d(x, weight, bias, args, out);
  }
  void conv2d_backward(const RawTensor& x, const RawTensor& weight, const RawTensor& dy, const Conv2dArgs& args,
                       const RawTensor& dx, const RawTensor& dweight, const RawTensor& dbias) override {
    detail::cpu_conv2d_backward(x, weight, dy, args, dx, dweight, dbias);
  }
  void max_pool2d(const RawTensor& x, const Pool2dArgs& args, const RawTensor& out, const RawTensor& indices) override {
    detail::cpu_max_pool2d(x, args, out, indices);
  }
  void max_pool2d_backward(const RawTensor& dy, const RawTensor& indices, const Pool2dArgs& args,
                           const RawTensor& dx) override {
    detail::cpu_max_pool2d_backward(dy, indices, args, dx);
  }
  void avg_pool2d(const RawTensor& x, const Pool2dArgs& args, const RawTensor& out) override {
    detail::cpu_avg_pool2d(x, args, out);
  }
  void avg_pool2d_backward(const RawTensor& dy, const Pool2dArgs& args, const RawTensor& dx) override {
    detail::cpu_avg_pool2d_backward(dy, args, dx);
  }
};

}  // namespace cpu
}  // namespace tg
