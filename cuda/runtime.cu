// cuda/runtime.cu: tg::cuda device queries for a build with CUDA. The kernels, the caching
// allocator and the CUDA Backend are the CUDA issue's work; until they land this backend is a stub
// that says so: is_available() is false on every machine and info() tells what the runtime sees.
// Compiled by nvcc so that the CUDA toolchain path of the build is exercised on every machine.
#include <cuda_runtime_api.h>

#include <sstream>

#include "cuda/cuda.h"
#include "engine/backend.h"
#include "engine/error.h"

#ifndef TENSORGRAD_CUDA_ARCHS
#define TENSORGRAD_CUDA_ARCHS "unknown"
#endif

namespace tg {
namespace cuda {
namespace {

const char* kNoKernels = "this build of tensorgrad has no CUDA kernels yet (the CUDA backend is not implemented)";

/// What the runtime reports, or why it could not be asked. Never throws.
std::string runtime_report(int* count_out) {
  std::ostringstream os;
  int runtime = 0, driver = 0, count = 0;
  cudaRuntimeGetVersion(&runtime);
  const cudaError_t derr = cudaDriverGetVersion(&driver);
  os << "CUDA runtime " << runtime / 1000 << "." << (runtime % 1000) / 10;
  if (derr == cudaSuccess && driver > 0) os << ", driver " << driver / 1000 << "." << (driver % 1000) / 10;
  else os << ", no CUDA driver found";
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    os << "; no usable device: " << cudaGetErrorString(err);
    cudaGetLastError();   // clear the sticky-free error slot
    count = 0;
  } else {
    os << "; " << count << " device(s)";
    for (int i = 0; i < count; ++i) {
      cudaDeviceProp p{};
      if (cudaGetDeviceProperties(&p, i) != cudaSuccess) continue;
      os << "\n  cuda:" << i << " " << p.name << ", compute capability " << p.major << "." << p.minor << ", "
         << (p.totalGlobalMem >> 20) << " MiB, " << p.multiProcessorCount << " SMs";
    }
  }
  os << "\n  compiled for architectures: " << TENSORGRAD_CUDA_ARCHS;
  if (count_out) *count_out = count;
  return os.str();
}

}  // namespace

bool is_available() noexcept { return false; }   // honest until the CUDA backend exists
int device_count() noexcept { return 0; }
void synchronize() {}
std::size_t memory_allocated(int) { return 0; }
std::size_t max_memory_allocated(int) { return 0; }
std::size_t memory_reserved(int) { return 0; }
void empty_cache() {}
void reset_peak_memory_stats(int) {}

std::string info() {
  try {
    return std::string("CUDA: not available: ") + kNoKernels + "\n  " + runtime_report(nullptr);
  } catch (...) {
    return std::string("CUDA: not available: ") + kNoKernels;
  }
}

namespace detail {
Backend& backend(int index) {
  int count = 0;
  const std::string report = runtime_report(&count);
  throw DeviceError(tg::detail::cat("cannot use cuda:", index, ": ", kNoKernels, " (", report, ")"));
}
}  // namespace detail

}  // namespace cuda
}  // namespace tg
