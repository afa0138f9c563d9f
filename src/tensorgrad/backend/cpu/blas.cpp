// backend/cpu/blas.cpp: the matrix product of the CPU backend: CBLAS (OpenBLAS, single-threaded: Note
// [One thread pool]) with a small blocked fallback for float32 and float64, and oneDNN's bfloat16
// matmul on CPUs with native bfloat16 products (Note [bfloat16 GEMMs through oneDNN]). The CUDA twin
// is backend/cuda/blas.cpp (cuBLAS).
#include "tensorgrad/backend/cpu/cpu_backend.h"
#ifdef TENSORGRAD_HAVE_CBLAS
#include <cblas.h>
#endif
#if TENSORGRAD_HAVE_DNNL
#include <memory>
#include <unordered_map>

#include "tensorgrad/backend/cpu/onednn.h"
#endif
#ifdef TENSORGRAD_HAVE_OPENBLAS
extern "C" void openblas_set_num_threads(int);
extern "C" int openblas_get_num_threads(void);
#endif

namespace tg {
namespace cpu {
namespace {

// Matrix products with at least this many multiply-adds are split across the pool's threads (Note
// [One thread pool]); smaller ones run on the calling thread.
constexpr int64_t kGemmParallelMacs = int64_t(1) << 24;

/// The BLAS runs on the thread that calls it (Note [One thread pool] in core/parallel.h): large
/// products are split into row or column blocks over the pool, one BLAS call each. Checked before
/// every BLAS call, on the thread making it: other code in the process (libtorch in bench/) may
/// change the count, and OpenBLAS's OpenMP build keeps one per thread.
void use_single_threaded_blas() {
#ifdef TENSORGRAD_HAVE_OPENBLAS
  if (openblas_get_num_threads() != 1) openblas_set_num_threads(1);
#endif
}

/// Splits C (M, N) of a product with K-long dots into one block per thread of the pool when the product
/// is large (block(i0, i1, j0, j1) computes C[i0:i1, j0:j1]); small ones run on the calling thread.
template <class Block>
void over_blocks(int64_t M, int64_t N, int64_t K, const Block& block) {
  const int threads = max_threads();
  if (threads <= 1 || M * N * K < kGemmParallelMacs) {
    block(0, M, 0, N);
  } else if (M >= N) {   // split the longer side of C into one block per thread
    parallel_for(M, N * K, [&](int64_t i0, int64_t i1) { block(i0, i1, 0, N); });
  } else {
    parallel_for(N, M * K, [&](int64_t j0, int64_t j1) { block(0, M, j0, j1); });
  }
}

#if TENSORGRAD_HAVE_DNNL
// Note [float32 GEMMs through oneDNN]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Where the build has oneDNN, a float32 product block of at least kOneDnnSgemmMacs multiply-adds runs
// through oneDNN's dnnl_sgemm (single-threaded on the calling thread, Note [oneDNN threads]) instead of
// OpenBLAS's cblas_sgemm; smaller blocks, float64, and a failed oneDNN call take the BLAS. Measured
// per call on one core of an AMD EPYC (Zen 4, 2026-12-05, CPU time over repeated calls, Debian's
// OpenBLAS 0.3.21 and oneDNN 2.6): the transformer shapes (M, N, K) of a GPT-2 block at 4 x 128 tokens
// (512 x 2304 x 768 and its two backward products, 512 x 3072 x 768, 128 x 128 x 64 attention scores)
// take 0.87-0.96x of OpenBLAS's time, the character transformer's (2048 x 384 x 128 and its backward)
// 0.86-0.96x, while the 64 x 64 x 32 attention products of that model take 1.12-1.14x, which is why
// small blocks stay on the BLAS (128 x 128 x 32, at the threshold, took 0.84x). The two sum in another
// order, so a product's bits may change with the threshold, not beyond a float32 GEMM's rounding.
constexpr int64_t kOneDnnSgemmMacs = int64_t(1) << 19;
#endif

template <class T>
void gemm_one(const GemmArgs& g, const T* A, const T* B, T* C) {
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
#if TENSORGRAD_HAVE_DNNL
      if constexpr (std::is_same<T, float>::value) {
        if ((i1 - i0) * (j1 - j0) * g.K >= kOneDnnSgemmMacs) {   // Note [float32 GEMMs through oneDNN]
          detail::SingleThreadedOneDnn one_thread;
          if (dnnl_sgemm(g.trans_a ? 'T' : 'N', g.trans_b ? 'T' : 'N', i1 - i0, j1 - j0, g.K, 1.f, a, g.lda, b, g.ldb,
                         float(g.beta), c, g.ldc) == dnnl_success)
            return;
        }
      }
#endif
      if constexpr (std::is_same<T, float>::value)
        cblas_sgemm(CblasRowMajor, ta, tb, int(i1 - i0), int(j1 - j0), int(g.K), 1.f, a, int(g.lda), b,
                    int(g.ldb), float(g.beta), c, int(g.ldc));
      else
        cblas_dgemm(CblasRowMajor, ta, tb, int(i1 - i0), int(j1 - j0), int(g.K), 1.0, a, int(g.lda), b,
                    int(g.ldb), g.beta, c, int(g.ldc));
    };
    over_blocks(g.M, g.N, g.K, block);
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

#if TENSORGRAD_HAVE_DNNL
// Note [bfloat16 GEMMs through oneDNN]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A CPU with AVX512_BF16 multiplies bfloat16 pairs in hardware (VDPBF16PS: exact products, float32
// sums), and oneDNN's bfloat16 matmul runs on it: 2.2x sgemm's speed on one core of an AVX-512 EPYC
// at the MLP's shapes (64x784x128: 65 vs 144 µs), before counting the conversions to and from float32
// that the float32 path adds (Note [Low precision through float32] in prim/blas.cpp). So where the
// build has oneDNN, the CPU code path is avx512 (Note [CPU capabilities]: TG_CPU_CAPABILITY=avx2 or
// baseline turns this off too) and oneDNN reports an ISA with avx512_core_bf16, the CPU backend's
// gemm takes bfloat16 (gemm_takes), and every bfloat16 product (matmul, addmm, linear under autocast)
// is one oneDNN call per matrix and block: bfloat16 operands with their strides, float32
// accumulation, the result rounded once to bfloat16, beta != 0 as oneDNN's sum post-op (added in
// float32 before that rounding). The sums run in another order than sgemm's and VDPBF16PS treats
// subnormal bfloat16 inputs as zero, so results differ from the float32 path's by the rounding the
// tests' tolerances allow, not in their bits (tests/test_dtypes.cpp checks the path in use against
// the exact product; CI runs the suite on the avx512 and avx2 code paths, one of each kind). float16 stays on
// the float32 path: no CPU here has AVX512_FP16. Primitives are built once per shape and layout, per
// thread (a primitive runs on the thread that built it, with that thread's scratchpad), and run
// single-threaded (Note [oneDNN threads]); large products are split over the pool as the BLAS's are.

/// What distinguishes one bfloat16 matmul primitive from another.
struct MatmulKey {
  int64_t M, N, K, lda, ldb, ldc;
  bool trans_a, trans_b;
  float beta;
  bool operator==(const MatmulKey& o) const {
    return M == o.M && N == o.N && K == o.K && lda == o.lda && ldb == o.ldb && ldc == o.ldc &&
           trans_a == o.trans_a && trans_b == o.trans_b && beta == o.beta;
  }
};

struct MatmulKeyHash {
  size_t operator()(const MatmulKey& k) const {
    size_t h = 0;
    for (int64_t v : {k.M, k.N, k.K, k.lda, k.ldb, k.ldc, int64_t(k.trans_a) * 2 + int64_t(k.trans_b)})
      h = h * 1000003u ^ std::hash<int64_t>()(v);
    return h ^ std::hash<float>()(k.beta);
  }
};

/// The bfloat16 layouts of k's operands: A (M, K), B (K, N), C (M, N), each with its row stride, A and
/// B read transposed through swapped strides.
struct MatmulDescs {
  dnnl::memory::desc a, b, c;
  explicit MatmulDescs(const MatmulKey& k) {
    using dims = dnnl::memory::dims;
    constexpr auto bf16 = dnnl::memory::data_type::bf16;
    a = dnnl::memory::desc({k.M, k.K}, bf16, k.trans_a ? dims{1, k.lda} : dims{k.lda, 1});
    b = dnnl::memory::desc({k.K, k.N}, bf16, k.trans_b ? dims{1, k.ldb} : dims{k.ldb, 1});
    c = dnnl::memory::desc({k.M, k.N}, bf16, dims{k.ldc, 1});
  }
};

/// This thread's primitive for k, built on first use; the cache is emptied when it passes 256 shapes.
const dnnl::matmul& bf16_matmul(const MatmulKey& k) {
  thread_local std::unordered_map<MatmulKey, std::unique_ptr<dnnl::matmul>, MatmulKeyHash> cache;
  auto it = cache.find(k);
  if (it != cache.end()) return *it->second;
  if (cache.size() >= 256) cache.clear();
  const MatmulDescs d(k);
  dnnl::primitive_attr attr;
  if (k.beta != 0) {
    dnnl::post_ops ops;
    ops.append_sum(k.beta);
    attr.set_post_ops(ops);
  }
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(d.a, d.b, d.c), attr, detail::onednn_engine());
  return *cache.emplace(k, std::make_unique<dnnl::matmul>(pd)).first->second;
}

/// Runs k's primitive on A, B, C (of k's layout) on this thread.
void run_bf16_matmul(const MatmulKey& key, const uint16_t* a, const uint16_t* b, uint16_t* c) {
  const dnnl::matmul& mm = bf16_matmul(key);
  dnnl::engine& e = detail::onednn_engine();
  thread_local dnnl::stream stream(e);
  const MatmulDescs d(key);
  const dnnl::memory am(d.a, e, const_cast<uint16_t*>(a)), bm(d.b, e, const_cast<uint16_t*>(b)), cm(d.c, e, c);
  mm.execute(stream, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}});
}

/// C = op(A) op(B) + beta C for one bfloat16 matrix of g (M, N, K > 0).
void gemm_one_bf16(const GemmArgs& g, const uint16_t* A, const uint16_t* B, uint16_t* C) {
  over_blocks(g.M, g.N, g.K, [&](int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    const MatmulKey key{i1 - i0, j1 - j0, g.K, g.lda, g.ldb, g.ldc, g.trans_a, g.trans_b, float(g.beta)};
    const uint16_t* a = A + i0 * (g.trans_a ? 1 : g.lda);
    const uint16_t* b = B + j0 * (g.trans_b ? g.ldb : 1);
    uint16_t* c = C + i0 * g.ldc + j0;
    detail::SingleThreadedOneDnn one_thread;
    try {
      run_bf16_matmul(key, a, b, c);
    } catch (const dnnl::error& e) {   // out of memory, or a layout no implementation takes
      TG_CHECK(e.status != dnnl_out_of_memory, OutOfMemoryError, "matmul: out of memory in oneDNN's bfloat16 matmul (",
               key.M, "x", key.K, " by ", key.K, "x", key.N, ")");
      throw Error(detail::cat("matmul: oneDNN's bfloat16 matmul failed for ", key.M, "x", key.K, " by ", key.K, "x",
                              key.N, ": ", e.what()));
    }
  });
}

/// Whether oneDNN runs bfloat16 products in hardware here (its ISA includes avx512_core_bf16).
bool onednn_has_bf16() {
  static const bool isa = [] {
    try {
      const dnnl::cpu_isa have = dnnl::get_effective_cpu_isa();
      const auto bits = static_cast<unsigned>(have), want = static_cast<unsigned>(dnnl::cpu_isa::avx512_core_bf16);
      return (bits & want) == want;
    } catch (const dnnl::error&) {
      return false;
    }
  }();
  return isa;
}
#else
bool onednn_has_bf16() { return false; }
#endif

/// Whether bfloat16 products go to oneDNN now (Note [bfloat16 GEMMs through oneDNN]): the hardware,
/// and the avx512 code path.
bool bf16_gemm_on_onednn() { return onednn_has_bf16() && cpu_capability() == CpuCapability::Avx512; }

}  // namespace

bool CpuBackend::gemm_takes(DType dtype) const {
  return dtype == kFloat32 || dtype == kFloat64 || (dtype == kBFloat16 && bf16_gemm_on_onednn());
}

void CpuBackend::gemm(const GemmArgs& g) {
#if TENSORGRAD_HAVE_DNNL
  // bfloat16 arrives only where gemm_takes said yes; the code path is not asked again, so another
  // thread switching it between the two calls cannot strand this one.
  if (g.dtype == kBFloat16 && onednn_has_bf16()) {
    const auto* A = static_cast<const uint16_t*>(g.a);
    const auto* B = static_cast<const uint16_t*>(g.b);
    auto* C = static_cast<uint16_t*>(g.c);
    if (g.M == 0 || g.N == 0) return;
    for (int64_t i = 0; i < g.batch; ++i) {
      uint16_t* c = C + i * g.stride_c;
      if (g.K > 0) {
        gemm_one_bf16(g, A + i * g.stride_a, B + i * g.stride_b, c);
      } else if (g.beta == 0) {   // empty sums: zeros (bfloat16 0 is all bits clear)
        for (int64_t r = 0; r < g.M; ++r) std::fill_n(c + r * g.ldc, g.N, uint16_t(0));
      }
    }
    return;
  }
#endif
  dispatch_only<kFloat32, kFloat64>(g.dtype, "matmul", [&](auto t) {
    using T = decltype(t);
    const T* A = static_cast<const T*>(g.a);
    const T* B = static_cast<const T*>(g.b);
    T* C = static_cast<T*>(g.c);
    auto matrices = [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) gemm_one(g, A + i * g.stride_a, B + i * g.stride_b, C + i * g.stride_c);
    };
    // A batch of products too small to split one by one (attention's per-head products) is split
    // over the pool by whole matrices: each is still one call on one thread, so its bits do not
    // depend on the thread count.
    const int64_t macs = g.M * g.N * std::max<int64_t>(g.K, 1);
    if (g.batch > 1 && macs < kGemmParallelMacs)
      parallel_for(g.batch, macs, matrices);
    else
      matrices(0, g.batch);
  });
}

// The CPU's side of Note [Bias folded into the GEMM] (prim/blas.cpp): the bias is copied into C's
// rows and the BLAS accumulates the product onto it (beta = 1); the row sums of op(A) are summed
// here in the order of reduce()'s column sums (SumAcc, stored row after stored row). Either way one
// backend call instead of two, which at small batches saves the second op's dispatch.
bool CpuBackend::gemm_epilogue(const GemmArgs& g, const GemmEpilogue& e) {
  if ((g.dtype != kFloat32 && g.dtype != kFloat64) || (e.bias == nullptr) == (e.row_sums == nullptr) || g.batch != 1 || g.beta != 0 || g.K == 0) return false;
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

}  // namespace cpu
}  // namespace tg
