// engine/backend.cpp: the backend selector (the one place outside cuda/ that knows CUDA exists),
// cross-device Tensor::to, and the tg::cuda stubs of a build without CUDA.
#include "engine/backend.h"

#include "cuda/cuda.h"
#include "engine/error.h"

namespace tg {

Backend& backend_for(Device device) {
  if (device.is_cpu()) return cpu_backend();
  return cuda::detail::backend(device.index());
}

Tensor Tensor::to(Device device) const {
  if (device == this->device()) return *this;
  Backend& target = backend_for(device);   // throws DeviceError when the device is unusable
  (void)target;
  // Cross-device copies belong to the CUDA backend (its own issue); until it lands no CUDA device is
  // usable, so backend_for above has already thrown.
  throw DeviceError(detail::cat("to: copies between ", this->device(), " and ", device, " are not supported"));
}

#if !TENSORGRAD_WITH_CUDA
namespace cuda {
namespace {
const char* kNoCuda = "tensorgrad was built without CUDA support (-DTENSORGRAD_CUDA=OFF or no nvcc found)";
}
bool is_available() noexcept { return false; }
int device_count() noexcept { return 0; }
void synchronize() {}
std::size_t memory_allocated(int) { return 0; }
std::size_t max_memory_allocated(int) { return 0; }
std::size_t memory_reserved(int) { return 0; }
void empty_cache() {}
void reset_peak_memory_stats(int) {}
std::string info() { return std::string("CUDA: not available: ") + kNoCuda; }
namespace detail {
Backend& backend(int index) {
  throw DeviceError(tg::detail::cat("cannot use cuda:", index, ": ", kNoCuda));
}
}  // namespace detail
}  // namespace cuda
#endif

}  // namespace tg
