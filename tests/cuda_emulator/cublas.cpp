// tests/cuda_emulator/cublas.cpp: the CUDA emulator's cuBLAS: handles bound to a device and a stream,
// and a reference GEMM (column-major, as cuBLAS) for float and double, single and strided-batched, and
// for float16 and bfloat16 with float alpha and beta (cublasGemmStridedBatchedEx, CUBLAS_COMPUTE_32F).
// Arguments are validated as cuBLAS documents them (CUBLAS_STATUS_INVALID_VALUE), and every matrix
// must lie in device memory of the handle's device (what a GPU would fault on). src/tensorgrad/cuda/
// libraries.cpp points its table here in the emulator build.
#include <cmath>
#include <cstdlib>
#include <set>
#include <string>

#include "cublas_v2.h"
#include "emulator.h"
#include "tensorgrad/core/half.h"

struct cublasContext {
  int device;
  cudaStream_t stream = nullptr;
};

namespace {

using Lock = std::lock_guard<std::recursive_mutex>;

std::set<const cublasContext*>& handles() {
  static auto* h = new std::set<const cublasContext*>();   // never destroyed, like the handles
  return *h;
}

bool valid_op(cublasOperation_t op) { return op == CUBLAS_OP_N || op == CUBLAS_OP_T || op == CUBLAS_OP_C; }

long long at_least_one(long long v) { return v > 1 ? v : 1; }

/// Whether `count` matrices of rows x cols (leading dimension ld, `stride` elements apart) starting at
/// p lie in device memory of `device`.
template <class T>
bool matrices_in_memory(const T* p, long long rows, long long cols, long long ld, long long stride, int count,
                        int device) {
  const long long span = (cols - 1) * ld + rows;
  const long long lo = stride < 0 ? stride * (count - 1) : 0, hi = (stride > 0 ? stride * (count - 1) : 0) + span;
  return tg_emu::in_device_memory(p + lo, static_cast<std::size_t>(hi - lo) * sizeof(T), device);
}

/// C = alpha op(A) op(B) + beta C for each of `count` matrices, accumulated in double and rounded once
/// to T; C is not read when beta is 0. S is the type of alpha and beta (float for the 16-bit T).
template <class T, class S = T>
cublasStatus_t gemm(const char* name, cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                    const S* alpha, const T* A, int lda, long long sa, const T* B, int ldb, long long sb, const S* beta,
                    T* C, int ldc, long long sc, int count) {
  Lock lock(tg_emu::api_mutex());
  tg_emu::trace(std::string(name) + " m " + std::to_string(m) + " n " + std::to_string(n) + " k " + std::to_string(k));
  if (handles().count(h) == 0) return CUBLAS_STATUS_NOT_INITIALIZED;
  // cuBLAS's documented conditions for CUBLAS_STATUS_INVALID_VALUE.
  if (!valid_op(ta) || !valid_op(tb) || m < 0 || n < 0 || k < 0 || count < 0 || alpha == nullptr || beta == nullptr)
    return CUBLAS_STATUS_INVALID_VALUE;
  const long long rows_a = ta == CUBLAS_OP_N ? m : k, cols_a = ta == CUBLAS_OP_N ? k : m;
  const long long rows_b = tb == CUBLAS_OP_N ? k : n, cols_b = tb == CUBLAS_OP_N ? n : k;
  if (lda < at_least_one(rows_a) || ldb < at_least_one(rows_b) || ldc < at_least_one(m))
    return CUBLAS_STATUS_INVALID_VALUE;
  if (tg_emu::current_device() != h->device) {
    tg_emu::report(std::string(name) + ": a handle of cuda:" + std::to_string(h->device) + " used while cuda:" +
                   std::to_string(tg_emu::current_device()) + " is current");
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  if (m == 0 || n == 0 || count == 0) return CUBLAS_STATUS_SUCCESS;
  const bool reads_ab = k > 0;
  if ((reads_ab && (!matrices_in_memory(A, rows_a, cols_a, lda, sa, count, h->device) ||
                    !matrices_in_memory(B, rows_b, cols_b, ldb, sb, count, h->device))) ||
      !matrices_in_memory(C, m, n, ldc, sc, count, h->device)) {
    tg_emu::report(std::string(name) + ": a matrix runs outside device memory of cuda:" + std::to_string(h->device) +
                   " (an illegal address on a GPU)");
    return CUBLAS_STATUS_EXECUTION_FAILED;
  }
  if (count > 1 && std::llabs(sc) < (static_cast<long long>(n) - 1) * ldc + m) {
    tg_emu::report(std::string(name) + ": the batch's C matrices overlap (strideC " + std::to_string(sc) +
                   "): their results would race");
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  CUstream_st* s = tg_emu::stream_of(h->stream);
  if (s == nullptr) return CUBLAS_STATUS_EXECUTION_FAILED;
  const double a = *alpha, b = *beta;   // host pointer mode: read at the call
  tg_emu::submit(s, [=] {
    for (int i = 0; i < count; ++i) {
      const T* Ai = A + i * sa;
      const T* Bi = B + i * sb;
      T* Ci = C + i * sc;
      for (int col = 0; col < n; ++col) {
        for (int row = 0; row < m; ++row) {
          double acc = 0;
          for (int p = 0; p < k; ++p) {
            const T x = ta == CUBLAS_OP_N ? Ai[row + static_cast<long long>(p) * lda] : Ai[p + static_cast<long long>(row) * lda];
            const T y = tb == CUBLAS_OP_N ? Bi[p + static_cast<long long>(col) * ldb] : Bi[col + static_cast<long long>(p) * ldb];
            acc += static_cast<double>(x) * static_cast<double>(y);
          }
          T& c = Ci[row + static_cast<long long>(col) * ldc];
          c = static_cast<T>(b == 0 ? a * acc : a * acc + b * static_cast<double>(c));
        }
      }
    }
  });
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace

cublasStatus_t cublasCreate_v2(cublasHandle_t* handle) {
  if (handle == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  Lock lock(tg_emu::api_mutex());
  auto* h = new cublasContext{tg_emu::current_device()};   // handles live for the process, like the contexts
  handles().insert(h);
  *handle = h;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream) {
  Lock lock(tg_emu::api_mutex());
  if (handles().count(handle) == 0) return CUBLAS_STATUS_NOT_INITIALIZED;
  CUstream_st* s = tg_emu::stream_of(stream);
  if (s == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  if (tg_emu::device_of(s) != handle->device) {
    tg_emu::report("cublasSetStream: a stream of cuda:" + std::to_string(tg_emu::device_of(s)) + " for a handle of cuda:" +
                   std::to_string(handle->device));
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  handle->stream = stream;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t handle, void* workspace, std::size_t bytes) {
  Lock lock(tg_emu::api_mutex());
  if (handles().count(handle) == 0) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (reinterpret_cast<std::uintptr_t>(workspace) % 256 != 0) return CUBLAS_STATUS_INVALID_VALUE;   // documented
  if (bytes > 0 && !tg_emu::in_device_memory(workspace, bytes, handle->device)) {
    tg_emu::report("cublasSetWorkspace: the workspace is not device memory of cuda:" + std::to_string(handle->device));
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSgemm_v2(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                              int k, const float* alpha, const float* A, int lda, const float* B, int ldb,
                              const float* beta, float* C, int ldc) {
  return gemm("cublasSgemm", handle, transa, transb, m, n, k, alpha, A, lda, 0, B, ldb, 0, beta, C, ldc, 0, 1);
}

cublasStatus_t cublasDgemm_v2(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                              int k, const double* alpha, const double* A, int lda, const double* B, int ldb,
                              const double* beta, double* C, int ldc) {
  return gemm("cublasDgemm", handle, transa, transb, m, n, k, alpha, A, lda, 0, B, ldb, 0, beta, C, ldc, 0, 1);
}

cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                         int m, int n, int k, const float* alpha, const float* A, int lda,
                                         long long int strideA, const float* B, int ldb, long long int strideB,
                                         const float* beta, float* C, int ldc, long long int strideC, int batchCount) {
  return gemm("cublasSgemmStridedBatched", handle, transa, transb, m, n, k, alpha, A, lda, strideA, B, ldb, strideB,
              beta, C, ldc, strideC, batchCount);
}

cublasStatus_t cublasDgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                         int m, int n, int k, const double* alpha, const double* A, int lda,
                                         long long int strideA, const double* B, int ldb, long long int strideB,
                                         const double* beta, double* C, int ldc, long long int strideC, int batchCount) {
  return gemm("cublasDgemmStridedBatched", handle, transa, transb, m, n, k, alpha, A, lda, strideA, B, ldb, strideB,
              beta, C, ldc, strideC, batchCount);
}

cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                          int m, int n, int k, const void* alpha, const void* A, cudaDataType Atype,
                                          int lda, long long int strideA, const void* B, cudaDataType Btype, int ldb,
                                          long long int strideB, const void* beta, void* C, cudaDataType Ctype, int ldc,
                                          long long int strideC, int batchCount, cublasComputeType_t computeType,
                                          cublasGemmAlgo_t algo) {
  const char* name = "cublasGemmStridedBatchedEx";
  if (Atype != Btype || Atype != Ctype || computeType != CUBLAS_COMPUTE_32F || algo != CUBLAS_GEMM_DEFAULT ||
      (Atype != CUDA_R_16F && Atype != CUDA_R_16BF))
    return CUBLAS_STATUS_NOT_SUPPORTED;
  const auto* a = static_cast<const float*>(alpha);
  const auto* b = static_cast<const float*>(beta);
  if (Atype == CUDA_R_16F)
    return gemm(name, handle, transa, transb, m, n, k, a, static_cast<const tg::Half*>(A), lda, strideA,
                static_cast<const tg::Half*>(B), ldb, strideB, b, static_cast<tg::Half*>(C), ldc, strideC, batchCount);
  return gemm(name, handle, transa, transb, m, n, k, a, static_cast<const tg::BFloat16*>(A), lda, strideA,
              static_cast<const tg::BFloat16*>(B), ldb, strideB, b, static_cast<tg::BFloat16*>(C), ldc, strideC,
              batchCount);
}

const char* cublasGetStatusName(cublasStatus_t status) {
  switch (status) {
#define TG_EMU_NAME(s) \
  case s: return #s;
    TG_EMU_NAME(CUBLAS_STATUS_SUCCESS)
    TG_EMU_NAME(CUBLAS_STATUS_NOT_INITIALIZED)
    TG_EMU_NAME(CUBLAS_STATUS_ALLOC_FAILED)
    TG_EMU_NAME(CUBLAS_STATUS_INVALID_VALUE)
    TG_EMU_NAME(CUBLAS_STATUS_ARCH_MISMATCH)
    TG_EMU_NAME(CUBLAS_STATUS_MAPPING_ERROR)
    TG_EMU_NAME(CUBLAS_STATUS_EXECUTION_FAILED)
    TG_EMU_NAME(CUBLAS_STATUS_INTERNAL_ERROR)
    TG_EMU_NAME(CUBLAS_STATUS_NOT_SUPPORTED)
    TG_EMU_NAME(CUBLAS_STATUS_LICENSE_ERROR)
#undef TG_EMU_NAME
  }
  return "CUBLAS_STATUS_UNKNOWN";
}

const char* cublasGetStatusString(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS: return "success";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "the library was not initialized";
    case CUBLAS_STATUS_ALLOC_FAILED: return "the resource allocation failed";
    case CUBLAS_STATUS_INVALID_VALUE: return "an invalid numeric value was used as an argument";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "an absent device architectural feature is required";
    case CUBLAS_STATUS_MAPPING_ERROR: return "an access to GPU memory space failed";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "the GPU program failed to execute";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "an internal operation failed";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "the functionality requested is not supported";
    case CUBLAS_STATUS_LICENSE_ERROR: return "the functionality requested requires some license";
  }
  return "unknown status";
}

cublasStatus_t cublasGetProperty(libraryPropertyType type, int* value) {
  if (value == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  switch (type) {
    case MAJOR_VERSION: *value = CUBLAS_VER_MAJOR; return CUBLAS_STATUS_SUCCESS;
    case MINOR_VERSION: *value = CUBLAS_VER_MINOR; return CUBLAS_STATUS_SUCCESS;
    case PATCH_LEVEL: *value = CUBLAS_VER_PATCH; return CUBLAS_STATUS_SUCCESS;
  }
  return CUBLAS_STATUS_INVALID_VALUE;
}
