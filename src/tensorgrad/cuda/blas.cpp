// cuda/blas.cpp: Backend::gemm on cuBLAS (host code, g++). cuBLAS is column-major; a row-major matrix
// read as column-major is its transpose, so C = op(A) op(B) is computed as C^T = op(B)^T op(A)^T: the
// operands swap, the flags stay (EXAMPLES.md E5). Batches use the strided-batched call; a repeated
// matrix (batch stride 0) is folded into one larger GEMM when it can be, else looped. The handle is
// the device context's, bound to its stream (cuda/runtime.cu); cuBLAS itself is opened at run time
// (Note [CUDA at run time], cuda/libraries.cpp). The CPU twin is in engine/cpu_backend.cpp.
#include <climits>

#include "tensorgrad/cuda/detail/context.cuh"
#include "tensorgrad/cuda/detail/launch.cuh"
#include "tensorgrad/cuda/detail/libraries.h"

namespace tg {
namespace cuda {
namespace detail {
namespace {

cublasOperation_t op_of(bool trans) { return trans ? CUBLAS_OP_T : CUBLAS_OP_N; }

int to_int(int64_t v, const char* what) {
  TG_CHECK(v >= 0 && v <= INT_MAX, ShapeError, "matmul: ", what, " ", v, " exceeds what cuBLAS accepts (2^31-1)");
  return static_cast<int>(v);
}

/// One call: batch 1 -> gemm, otherwise strided-batched gemm; all row-major, swapped for cuBLAS.
template <class T>
void gemm_call(cublasHandle_t h, const GemmArgs& g, int64_t M, int64_t batch, const T* A, const T* B, T* C,
               int64_t stride_a, int64_t stride_b, int64_t stride_c) {
  const T alpha = T(1), beta = T(g.beta);
  const int m = to_int(g.N, "N"), n = to_int(M, "M"), k = to_int(g.K, "K");
  const int lda = to_int(g.lda, "lda"), ldb = to_int(g.ldb, "ldb"), ldc = to_int(g.ldc, "ldc");
  const cublasOperation_t ta = op_of(g.trans_b), tb = op_of(g.trans_a);
  const CublasApi& api = cublas();
  count_launch();   // one cuBLAS call (it may run more than one kernel)
  if (batch == 1) {
    if constexpr (std::is_same<T, float>::value)
      TG_CUBLAS_CHECK(api.sgemm(h, ta, tb, m, n, k, &alpha, B, ldb, A, lda, &beta, C, ldc));
    else
      TG_CUBLAS_CHECK(api.dgemm(h, ta, tb, m, n, k, &alpha, B, ldb, A, lda, &beta, C, ldc));
    return;
  }
  const int count = to_int(batch, "batch");
  if constexpr (std::is_same<T, float>::value)
    TG_CUBLAS_CHECK(api.sgemm_strided_batched(h, ta, tb, m, n, k, &alpha, B, ldb, stride_b, A, lda, stride_a, &beta, C,
                                              ldc, stride_c, count));
  else
    TG_CUBLAS_CHECK(api.dgemm_strided_batched(h, ta, tb, m, n, k, &alpha, B, ldb, stride_b, A, lda, stride_a, &beta, C,
                                              ldc, stride_c, count));
}

}  // namespace

// C[i] (M, N) = op(A[i]) (M, K) . op(B[i]) (K, N) + beta C[i]; beta 0 sets C, 1 accumulates.
// FLOPs: 2 M N K per batch entry; cuBLAS picks the kernel (tensor cores are not used for float32 in
// the default math mode: results stay within 1e-4 of the CPU, no TF32).
void CudaBackend::gemm(const GemmArgs& g) {
  if (g.batch == 0 || g.M == 0 || g.N == 0) return;
  DeviceGuard guard(ctx_.device());
  cudaStream_t stream = ctx_.stream();
  dispatch_only<kFloat32, kFloat64>(g.dtype, "matmul", [&](auto t) {
    using T = decltype(t);
    const T* A = static_cast<const T*>(g.a);
    const T* B = static_cast<const T*>(g.b);
    T* C = static_cast<T*>(g.c);
    if (g.K == 0) {   // an empty sum: C = beta C
      if (g.beta == 1) return;
      TG_CHECK(g.beta == 0, Error, "matmul: K = 0 with beta ", g.beta, " is not supported on CUDA");
      for (int64_t i = 0; i < g.batch; ++i)
        TG_CUDA_CHECK(cudaMemset2DAsync(C + i * g.stride_c, static_cast<std::size_t>(g.ldc) * sizeof(T), 0,
                                        static_cast<std::size_t>(g.N) * sizeof(T), static_cast<std::size_t>(g.M),
                                        stream));
      return;
    }
    cublasHandle_t h = ctx_.blas();
    if (g.batch == 1 || (g.stride_a != 0 && g.stride_b != 0 && g.stride_c != 0)) {
      gemm_call<T>(h, g, g.M, g.batch, A, B, C, g.stride_a, g.stride_b, g.stride_c);
    } else if (g.stride_b == 0 && !g.trans_a && g.stride_a == g.M * g.lda && g.stride_c == g.M * g.ldc) {
      // (batch, M, K) rows stacked uniformly times one (K, N): a single (batch * M, K) . (K, N) GEMM.
      gemm_call<T>(h, g, g.batch * g.M, 1, A, B, C, 0, 0, 0);
    } else {
      // A repeated operand that cannot be folded: one GEMM per batch entry, all queued on the stream.
      for (int64_t i = 0; i < g.batch; ++i)
        gemm_call<T>(h, g, g.M, 1, A + i * g.stride_a, B + i * g.stride_b, C + i * g.stride_c, 0, 0, 0);
    }
  });
}

}  // namespace detail
}  // namespace cuda
}  // namespace tg
