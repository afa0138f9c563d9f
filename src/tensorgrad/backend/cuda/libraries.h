// backend/cuda/libraries.h: the CUDA libraries tensorgrad opens at run time instead of linking them
// (Note [CUDA at run time]): the driver (libcuda.so.1, only checked: the static CUDA runtime opens it
// itself), cuBLAS (libcublas.so.N) and cuBLASLt (libcublasLt.so.N), every entry point of each resolved
// into one table. Internal to backend/cuda/: it includes cuBLAS's headers for the function types. Implemented
// in backend/cuda/libraries.cpp.
#pragma once
#include <cublasLt.h>
#include <cublas_v2.h>

#include <string>

namespace tg {
namespace cuda {
namespace detail {

/// Where a library was found, or why it was not: the dlopen error of every place that was tried.
struct LibraryStatus {
  bool loaded = false;
  std::string path;     // the file that was opened (dlinfo), when loaded
  std::string detail;   // when not loaded: one "name: dlerror" per attempt
};

/// The driver library (libcuda.so.1): opened once to tell "no driver installed" from "no device" or
/// "driver too old" in messages. Never throws.
const LibraryStatus& driver_library() noexcept;

/// cuBLAS entry points, named after the functions of cublas_v2.h and typed from their declarations,
/// so a signature that changes in a new toolkit is a compile error, not a wrong call.
struct CublasApi {
  decltype(&::cublasCreate_v2) create = nullptr;
  decltype(&::cublasSetStream_v2) set_stream = nullptr;
  decltype(&::cublasSetWorkspace_v2) set_workspace = nullptr;
  decltype(&::cublasSgemm_v2) sgemm = nullptr;
  decltype(&::cublasDgemm_v2) dgemm = nullptr;
  decltype(&::cublasSgemmStridedBatched) sgemm_strided_batched = nullptr;
  decltype(&::cublasDgemmStridedBatched) dgemm_strided_batched = nullptr;
  /// cublasGemmStridedBatchedEx with a cublasComputeType_t: the 16-bit GEMMs. Spelled out because
  /// cublas_api.h also declares an inline C++ overload taking the compute type as a cudaDataType.
  cublasStatus_t (*gemm_strided_batched_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                            const void*, const void*, cudaDataType, int, long long int, const void*,
                                            cudaDataType, int, long long int, const void*, void*, cudaDataType, int,
                                            long long int, int, cublasComputeType_t, cublasGemmAlgo_t) = nullptr;
  decltype(&::cublasGetStatusName) status_name = nullptr;
  decltype(&::cublasGetStatusString) status_string = nullptr;
  decltype(&::cublasGetProperty) get_property = nullptr;
};

/// Opens cuBLAS on the first call (thread-safe) and resolves the whole table; the status says where
/// it came from or why it could not be used. Never throws. The library stays loaded for the process.
const LibraryStatus& cublas_library() noexcept;
/// The resolved table; throws DeviceError naming the library and each failed attempt when cuBLAS
/// cannot be loaded.
const CublasApi& cublas();

/// cuBLASLt entry points, typed from cublasLt.h like CublasApi: what the GEMMs with an epilogue
/// (Note [cuBLASLt epilogues], backend/cuda/blas.cpp) call.
struct CublasLtApi {
  decltype(&::cublasLtCreate) create = nullptr;
  decltype(&::cublasLtGetVersion) get_version = nullptr;
  decltype(&::cublasLtMatmulDescCreate) desc_create = nullptr;
  decltype(&::cublasLtMatmulDescDestroy) desc_destroy = nullptr;
  decltype(&::cublasLtMatmulDescSetAttribute) desc_set = nullptr;
  decltype(&::cublasLtMatrixLayoutCreate) layout_create = nullptr;
  decltype(&::cublasLtMatrixLayoutDestroy) layout_destroy = nullptr;
  decltype(&::cublasLtMatmulPreferenceCreate) preference_create = nullptr;
  decltype(&::cublasLtMatmulPreferenceDestroy) preference_destroy = nullptr;
  decltype(&::cublasLtMatmulPreferenceSetAttribute) preference_set = nullptr;
  decltype(&::cublasLtMatmulAlgoGetHeuristic) heuristic = nullptr;
  decltype(&::cublasLtMatmul) matmul = nullptr;
};

/// Opens cuBLASLt on the first call (thread-safe), like cublas_library(). Never throws. A missing
/// cuBLASLt leaves CUDA usable: the GEMMs then run without epilogues.
const LibraryStatus& cublaslt_library() noexcept;
/// The resolved table, or nullptr when cuBLASLt cannot be loaded (cublaslt_library() says why).
const CublasLtApi* cublaslt() noexcept;

}  // namespace detail
}  // namespace cuda
}  // namespace tg
