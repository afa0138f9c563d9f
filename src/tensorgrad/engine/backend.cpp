// engine/backend.cpp: the backend selector (the one place outside cuda/ that knows CUDA exists),
// cross-device Tensor::to, and the tg::cuda stubs of a build without CUDA.
#include "tensorgrad/engine/backend.h"

#include "tensorgrad/cuda/cuda.h"
#include "tensorgrad/engine/error.h"

namespace tg {

Device with_index(Device device) {
  return device.is_cuda() && !device.has_index() ? Device::cuda(cuda::current_device()) : device;
}

Backend& backend_for(Device device) {
  if (device.is_cpu()) return cpu_backend();
  return cuda::detail::backend(with_index(device).index());
}

RowView rows_of(const Tensor& x, int64_t dim) {
  RowView r{1, x.dim() == 0 ? 1 : x.shape()[dim], 1};
  for (int64_t d = 0; d < dim; ++d) r.outer *= x.shape()[d];
  for (int64_t d = dim + 1; d < x.dim(); ++d) r.inner *= x.shape()[d];
  return r;
}

ReductionLayout reduction_layout(const Tensor& x, const Tensor& out) {
  ReductionLayout l;
  std::vector<int64_t> perm, reduced;
  for (int64_t d = 0; d < x.dim(); ++d) (out.shape()[d] == x.shape()[d] ? perm : reduced).push_back(d);
  l.nkept = static_cast<int64_t>(perm.size());
  perm.insert(perm.end(), reduced.begin(), reduced.end());
  l.x = x.permute(perm);
  for (int64_t d : reduced) l.R *= x.shape()[d];
  bool single = true;   // are the reduced dims one stride apart?
  int64_t expect = -1;
  for (int64_t d = l.x.dim() - 1; d >= l.nkept; --d) {
    if (l.x.shape()[d] == 1) continue;
    if (expect == -1) l.rstride = l.x.strides()[d];
    else if (l.x.strides()[d] != expect) single = false;
    expect = l.x.strides()[d] * l.x.shape()[d];
  }
  if (!single) {
    l.x = l.x.contiguous();
    l.rstride = 1;
  }
  return l;
}

Tensor Tensor::to(Device target, bool non_blocking) const {
  const Device device = with_index(target);
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
std::size_t max_memory_reserved(int) { return 0; }
memory::MemoryStats memory_stats(int) { return {}; }
std::pair<std::size_t, std::size_t> mem_get_info(int device) {
  throw DeviceError(tg::detail::cat("mem_get_info: cannot use cuda:", device < 0 ? 0 : device, ": ", kNoCuda));
}
std::string memory_summary(int device) {
  throw DeviceError(tg::detail::cat("memory_summary: cannot use cuda:", device < 0 ? 0 : device, ": ", kNoCuda));
}
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
uint64_t launch_count() noexcept { return 0; }
bool set_gemm_epilogues(bool) noexcept { return false; }
}  // namespace detail
}  // namespace cuda
#endif

}  // namespace tg
