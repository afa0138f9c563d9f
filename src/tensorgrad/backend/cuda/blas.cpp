// backend/cuda/blas.cpp: Backend::gemm on cuBLAS (host code, g++). cuBLAS is column-major; a row-major matrix
// read as column-major is its transpose, so C = op(A) op(B) is computed as C^T = op(B)^T op(A)^T: the
// operands swap, the flags stay. Batches use the strided-batched call; a repeated
// matrix (batch stride 0) is folded into one larger GEMM when it can be, else looped. The handle is
// the device context's, bound to its stream (backend/cuda/runtime.cu); cuBLAS itself is opened at run time
// (Note [CUDA at run time], backend/cuda/libraries.cpp). The GEMMs with a bias epilogue go through cuBLASLt
// (Note [cuBLASLt epilogues]). The CPU twin is in backend/cpu/blas.cpp.
#include <atomic>
#include <climits>
#include <cstdint>

#include "tensorgrad/core/accelerator.h"
#include "tensorgrad/backend/cuda/context.cuh"
#include "tensorgrad/backend/cuda/launch.cuh"
#include "tensorgrad/backend/cuda/libraries.h"

namespace tg {
namespace cuda {
namespace detail {
namespace {

cublasOperation_t op_of(bool trans) { return trans ? CUBLAS_OP_T : CUBLAS_OP_N; }

int to_int(int64_t v, const char* what) {
  TG_CHECK(v >= 0 && v <= INT_MAX, ShapeError, "matmul: ", what, " ", v, " exceeds what cuBLAS accepts (2^31-1)");
  return static_cast<int>(v);
}

// Note [16-bit GEMMs on CUDA]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// float16 and bfloat16 products go to cuBLAS in their own dtype: cublasGemmStridedBatchedEx with
// CUBLAS_COMPUTE_32F, float alpha and beta, so the products accumulate in float32 and the result is
// rounded once, as the CPU's convert-and-sgemm path gives (Note [Low precision through float32] in
// prim/blas.cpp), and cuBLAS runs them on tensor cores: half the bytes of float32 operands and no
// conversion launches. The bias and bias-gradient epilogues take them too (Note [cuBLASLt epilogues]).

/// The cuBLAS data type of a 16-bit T.
template <class T>
constexpr cudaDataType_t kHalfType = std::is_same<T, Half>::value ? CUDA_R_16F : CUDA_R_16BF;

/// One call: batch 1 -> gemm, otherwise strided-batched gemm; all row-major, swapped for cuBLAS. The
/// 16-bit dtypes: one strided-batched GemmEx (Note [16-bit GEMMs on CUDA]).
template <class T>
void gemm_call(cublasHandle_t h, const GemmArgs& g, int64_t M, int64_t batch, const T* A, const T* B, T* C,
               int64_t stride_a, int64_t stride_b, int64_t stride_c) {
  const int m = to_int(g.N, "N"), n = to_int(M, "M"), k = to_int(g.K, "K");
  const int lda = to_int(g.lda, "lda"), ldb = to_int(g.ldb, "ldb"), ldc = to_int(g.ldc, "ldc");
  const cublasOperation_t ta = op_of(g.trans_b), tb = op_of(g.trans_a);
  const CublasApi& api = cublas();
  count_launch();   // one cuBLAS call (it may run more than one kernel)
  if constexpr (std::is_same<T, Half>::value || std::is_same<T, BFloat16>::value) {
    const float alpha = 1, beta = static_cast<float>(g.beta);
    TG_CUBLAS_CHECK(api.gemm_strided_batched_ex(h, ta, tb, m, n, k, &alpha, B, kHalfType<T>, ldb, stride_b, A,
                                                kHalfType<T>, lda, stride_a, &beta, C, kHalfType<T>, ldc, stride_c,
                                                to_int(batch, "batch"), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  } else if (batch == 1) {
    const T alpha = T(1), beta = T(g.beta);
    if constexpr (std::is_same<T, float>::value)
      TG_CUBLAS_CHECK(api.sgemm(h, ta, tb, m, n, k, &alpha, B, ldb, A, lda, &beta, C, ldc));
    else
      TG_CUBLAS_CHECK(api.dgemm(h, ta, tb, m, n, k, &alpha, B, ldb, A, lda, &beta, C, ldc));
  } else {
    const T alpha = T(1), beta = T(g.beta);
    const int count = to_int(batch, "batch");
    if constexpr (std::is_same<T, float>::value)
      TG_CUBLAS_CHECK(api.sgemm_strided_batched(h, ta, tb, m, n, k, &alpha, B, ldb, stride_b, A, lda, stride_a, &beta,
                                                C, ldc, stride_c, count));
    else
      TG_CUBLAS_CHECK(api.dgemm_strided_batched(h, ta, tb, m, n, k, &alpha, B, ldb, stride_b, A, lda, stride_a, &beta,
                                                C, ldc, stride_c, count));
  }
}

}  // namespace

// C[i] (M, N) = op(A[i]) (M, K) . op(B[i]) (K, N) + beta C[i]; beta 0 sets C, 1 accumulates.
// FLOPs: 2 M N K per batch entry; cuBLAS picks the kernel (tensor cores are not used for float32 in
// the default math mode: results stay within 1e-4 of the CPU, no TF32).
void CudaBackend::gemm(const GemmArgs& g) {
  if (g.batch == 0 || g.M == 0 || g.N == 0) return;
  DeviceGuard guard(ctx_.device());
  cudaStream_t stream = ctx_.stream();
  dispatch_only<kFloat32, kFloat64, kFloat16, kBFloat16>(g.dtype, "matmul", [&](auto t) {
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

// Note [cuBLASLt epilogues]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// CUDA's side of Note [Bias folded into the GEMM] (prim/blas.cpp): cuBLASLt's epilogues fold the
// bias pass into the GEMM's own launch. With the operands swapped for column-major (this file's
// header), D (m = N, n = M) = op(A_lt) op(B_lt) where A_lt is our B and B_lt our A, so:
// - CUBLASLT_EPILOGUE_BIAS adds a vector of D's m rows to every column: a vector of length N added to
//   every row of our row-major C (GemmEpilogue::bias, linear's forward);
// - CUBLASLT_EPILOGUE_BGRADB writes the sums of op(B_lt) over k, one per column of D: the row sums of
//   our op(A), length M (GemmEpilogue::row_sums; linear's backward has op(A) = g^T, so they are db).
// CudaBackend::gemm_epilogue() asks cuBLASLt's heuristic for an algorithm and returns false, having
// queued nothing, so that the caller (prim::addmm, prim::matmul_row_sums) runs the cuBLAS GEMM and
// its own bias pass instead, when: cuBLASLt could not be loaded (tg::cuda::info() says so); the
// epilogues are switched off (tg::cuda::detail::set_gemm_epilogues, which the tests use to compare the
// two paths); the heuristic has no algorithm for the dtype, layouts, alignment or epilogue
// (CUBLAS_STATUS_NOT_SUPPORTED or no result) or cublasLtMatmul answers NOT_SUPPORTED; or the GEMM is
// one prim never folds (batched, accumulating, K = 0). Any other status is an error, as for cuBLAS.
// float32 computes in float32 (CUBLAS_COMPUTE_32F: no TF32, as the cuBLAS path), float64 in float64,
// float16 and bfloat16 in float32 with their own operands and bias (Note [16-bit GEMMs on CUDA]). The
// descriptors are made per call, as PyTorch's cuBLASLt path does; the heuristic's answer is not
// cached. cuBLASLt shares the cuBLAS handle's workspace, both being queued on the one stream.
namespace {

std::atomic<bool> g_gemm_epilogues{true};

/// The descriptors of one cublasLtMatmul call, destroyed when it has been queued (cuBLASLt reads them
/// at the call, not when the work runs).
struct LtCall {
  const CublasLtApi& api;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulPreference_t preference = nullptr;
  explicit LtCall(const CublasLtApi& lt) : api(lt) {}
  LtCall(const LtCall&) = delete;
  LtCall& operator=(const LtCall&) = delete;
  ~LtCall() {
    if (preference != nullptr) api.preference_destroy(preference);
    for (cublasLtMatrixLayout_t l : {a, b, c})
      if (l != nullptr) api.layout_destroy(l);
    if (desc != nullptr) api.desc_destroy(desc);
  }
  template <class V>
  void set(cublasLtMatmulDescAttributes_t attr, const V& value) {
    TG_CUBLAS_CHECK(api.desc_set(desc, attr, &value, sizeof(value)));
  }
};

}  // namespace

bool CudaBackend::gemm_epilogue(const GemmArgs& g, const GemmEpilogue& e) {
  if (!g_gemm_epilogues.load(std::memory_order_relaxed)) return false;
  if ((e.bias == nullptr) == (e.row_sums == nullptr)) return false;   // one epilogue per call
  if (g.batch != 1 || g.beta != 0 || g.M == 0 || g.N == 0 || g.K == 0) return false;
  if (g.dtype != kFloat32 && g.dtype != kFloat64 && g.dtype != kFloat16 && g.dtype != kBFloat16) return false;
  const CublasLtApi* api = cublaslt();
  if (api == nullptr) return false;
  DeviceGuard guard(ctx_.device());
  cublasLtHandle_t h = ctx_.blas_lt();
  if (h == nullptr) return false;
  const bool f64 = g.dtype == kFloat64;
  const cudaDataType_t type = f64                     ? CUDA_R_64F
                              : g.dtype == kFloat16  ? CUDA_R_16F
                              : g.dtype == kBFloat16 ? CUDA_R_16BF
                                                     : CUDA_R_32F;
  // Column-major and swapped: D (m, n) = op(A_lt) (m, k) op(B_lt) (k, n) with A_lt = our B, B_lt = our A.
  const uint64_t m = static_cast<uint64_t>(g.N), n = static_cast<uint64_t>(g.M), k = static_cast<uint64_t>(g.K);
  const int32_t ta = op_of(g.trans_b), tb = op_of(g.trans_a);
  LtCall call(*api);
  // float32 compute and scale for float32 and the 16-bit dtypes (Note [16-bit GEMMs on CUDA]); the bias
  // vector has D's dtype (CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE left at its default)
  TG_CUBLAS_CHECK(api->desc_create(&call.desc, f64 ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F, f64 ? CUDA_R_64F : CUDA_R_32F));
  call.set(CUBLASLT_MATMUL_DESC_TRANSA, ta);
  call.set(CUBLASLT_MATMUL_DESC_TRANSB, tb);
  const uint32_t epilogue = e.bias != nullptr ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_BGRADB;
  call.set(CUBLASLT_MATMUL_DESC_EPILOGUE, epilogue);
  void* vector = e.bias != nullptr ? const_cast<void*>(e.bias) : e.row_sums;
  call.set(CUBLASLT_MATMUL_DESC_BIAS_POINTER, vector);
  // Stored shapes, column-major: a matrix used transposed is stored (cols, rows) of its op.
  TG_CUBLAS_CHECK(api->layout_create(&call.a, type, ta == CUBLAS_OP_N ? m : k, ta == CUBLAS_OP_N ? k : m, g.ldb));
  TG_CUBLAS_CHECK(api->layout_create(&call.b, type, tb == CUBLAS_OP_N ? k : n, tb == CUBLAS_OP_N ? n : k, g.lda));
  TG_CUBLAS_CHECK(api->layout_create(&call.c, type, m, n, g.ldc));
  void* workspace = ctx_.blas_workspace();
  const uint64_t workspace_bytes = ctx_.blas_workspace_bytes();
  TG_CUBLAS_CHECK(api->preference_create(&call.preference));
  TG_CUBLAS_CHECK(api->preference_set(call.preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes,
                                      sizeof(workspace_bytes)));
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t hs = api->heuristic(h, call.desc, call.a, call.b, call.c, call.c, call.preference, 1, &result, &found);
  if (hs == CUBLAS_STATUS_NOT_SUPPORTED) return false;
  TG_CUBLAS_CHECK(hs);
  if (found < 1 || result.state != CUBLAS_STATUS_SUCCESS) return false;
  const double one = 1, zero = 0;
  const float one_f = 1, zero_f = 0;
  const void* alpha = f64 ? static_cast<const void*>(&one) : static_cast<const void*>(&one_f);
  const void* beta = f64 ? static_cast<const void*>(&zero) : static_cast<const void*>(&zero_f);
  const cublasStatus_t st = api->matmul(h, call.desc, alpha, g.b, call.a, g.a, call.b, beta, g.c, call.c, g.c, call.c,
                                        &result.algo, workspace, workspace_bytes, ctx_.stream());
  if (st == CUBLAS_STATUS_NOT_SUPPORTED) return false;
  TG_CUBLAS_CHECK(st);
  count_launch();   // one cuBLASLt call (it may run more than one kernel)
  return true;
}

bool set_gemm_epilogues(bool enabled) noexcept { return g_gemm_epilogues.exchange(enabled); }

}  // namespace detail
}  // namespace cuda
}  // namespace tg
