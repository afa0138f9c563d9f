// engine/cpu/blas.cpp: the matrix product of the CPU backend: CBLAS (OpenBLAS, single-threaded: Note
// [One thread pool]) with a small blocked fallback. The CUDA twin is cuda/blas.cpp (cuBLAS).
#include "tensorgrad/engine/cpu/cpu_backend.h"
#ifdef TENSORGRAD_HAVE_CBLAS
#include <cblas.h>
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

/// The BLAS runs on the thread that calls it (Note [One thread pool] in engine/parallel.h): large
/// products are split into row or column blocks over the pool, one BLAS call each. Checked before
/// every BLAS call, on the thread making it: other code in the process (libtorch in bench/) may
/// change the count, and OpenBLAS's OpenMP build keeps one per thread.
void use_single_threaded_blas() {
#ifdef TENSORGRAD_HAVE_OPENBLAS
  if (openblas_get_num_threads() != 1) openblas_set_num_threads(1);
#endif
}

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

}  // namespace

void CpuBackend::gemm(const GemmArgs& g) {
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
bool CpuBackend::gemm_epilogue(const GemmArgs& g, const GemmEpilogue& e) {
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

}  // namespace cpu
}  // namespace tg
