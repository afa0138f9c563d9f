// backend/cuda/check.cuh: TG_CUDA_CHECK / TG_CUBLAS_CHECK turn CUDA runtime and cuBLAS status codes into
// tg::CudaError (tg::OutOfMemoryError for allocation failures), never exit or abort. Internal to backend/cuda/:
// it includes CUDA headers, so no public header may include it. The device context is in context.cuh.
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "tensorgrad/core/error.h"

namespace tg {
namespace cuda {
namespace detail {

[[noreturn]] void throw_cuda_error(cudaError_t err, const char* what, const char* file, int line);
[[noreturn]] void throw_cublas_error(cublasStatus_t status, const char* what, const char* file, int line);

}  // namespace detail
}  // namespace cuda
}  // namespace tg

/// Throws tg::CudaError naming the call, the file and line, and the runtime's message.
#define TG_CUDA_CHECK(expr)                                                              \
  do {                                                                                   \
    const cudaError_t tg_err_ = (expr);                                                  \
    if (tg_err_ != cudaSuccess) ::tg::cuda::detail::throw_cuda_error(tg_err_, #expr, __FILE__, __LINE__); \
  } while (0)

#define TG_CUBLAS_CHECK(expr)                                                            \
  do {                                                                                   \
    const cublasStatus_t tg_st_ = (expr);                                                \
    if (tg_st_ != CUBLAS_STATUS_SUCCESS)                                                 \
      ::tg::cuda::detail::throw_cublas_error(tg_st_, #expr, __FILE__, __LINE__);         \
  } while (0)
