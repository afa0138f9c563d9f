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

Tensor Tensor::to(Device device, bool non_blocking) const {
  if (device == this->device()) return *this;
  backend_for(device);   // throws DeviceError when the target device is unusable
  // Host<->device and device<->device copies: cuda/runtime.cu (stream-ordered; pinned sources may be
  // asynchronous with non_blocking; copies to the CPU synchronize).
  return cuda::detail::to_device(*this, device, non_blocking);
}

#if !TENSORGRAD_WITH_CUDA
namespace cuda {
namespace {
const char* kNoCuda = "tensorgrad was built without CUDA support (-DTENSORGRAD_CUDA=OFF or no nvcc found)";
}
bool is_available() noexcept { return false; }
int device_count() noexcept { return 0; }
void set_device(int device) { throw DeviceError(tg::detail::cat("cannot use cuda:", device, ": ", kNoCuda)); }
int current_device() { return 0; }
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
Tensor to_device(const Tensor& t, Device device, bool) {   // unreachable: backend_for threw first
  throw DeviceError(tg::detail::cat("to: cannot copy from ", t.device(), " to ", device, ": ", kNoCuda));
}
Tensor pin(const Tensor& t) { return t; }
bool is_pinned(const Tensor&) noexcept { return false; }
}  // namespace detail
}  // namespace cuda
#endif

}  // namespace tg
