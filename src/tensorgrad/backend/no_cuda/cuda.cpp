// backend/no_cuda/cuda.cpp: the tg::cuda functions of core/accelerator.h in a build without the CUDA
// backend (TENSORGRAD_CUDA=OFF, or no nvcc found): no device is available, the memory statistics are
// zero, and every use of a CUDA device raises DeviceError saying why. CMakeLists.txt compiles this file
// instead of backend/cuda/ when CUDA is off. The CUDA build defines the same functions in
// backend/cuda/runtime.cu.
#include <atomic>
#include <string>
#include <utility>

#include "tensorgrad/backend/backend.h"
#include "tensorgrad/core/accelerator.h"
#include "tensorgrad/core/error.h"

namespace tg {

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
bool is_current_stream_capturing() noexcept { return false; }
namespace detail {
struct CapturedGraph {};
void capture_begin(int device, uint64_t, uint64_t) {
  throw DeviceError(tg::detail::cat("CUDAGraph::capture_begin: cannot use cuda:", device, ": ", kNoCuda));
}
CapturedGraph* capture_end(int device) {
  throw DeviceError(tg::detail::cat("CUDAGraph::capture_end: cannot use cuda:", device, ": ", kNoCuda));
}
void capture_abort(int) noexcept {}
void replay_graph(CapturedGraph*, bool, uint64_t, uint64_t) {
  throw DeviceError(tg::detail::cat("CUDAGraph::replay: ", kNoCuda));
}
std::size_t graph_nodes(const CapturedGraph*) noexcept { return 0; }
int graph_device(const CapturedGraph*) noexcept { return -1; }
void destroy_graph(CapturedGraph* g) noexcept { delete g; }
RawTensor graph_input(int64_t, int device) {
  throw DeviceError(tg::detail::cat("graph_input: cannot use cuda:", device, ": ", kNoCuda));
}
void write_graph_input(const RawTensor& dst, const std::vector<double>&) {
  throw DeviceError(tg::detail::cat("write_graph_input: cannot use ", dst.device(), ": ", kNoCuda));
}
uint64_t new_graph_pool() noexcept {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}
Backend& backend(int index) {
  throw DeviceError(tg::detail::cat("cannot use cuda:", index, ": ", kNoCuda));
}
RawTensor to_device(const RawTensor& t, Device device, bool) {   // unreachable: backend_for threw first
  throw DeviceError(tg::detail::cat("to: cannot copy from ", t.device(), " to ", device, ": ", kNoCuda));
}
RawTensor pin(const RawTensor& t) { return t; }
bool is_pinned(const RawTensor&) noexcept { return false; }
uint64_t launch_count() noexcept { return 0; }
bool set_gemm_epilogues(bool) noexcept { return false; }
std::vector<float> mma_layout_probe(int) { throw DeviceError("mma_layout_probe: tensorgrad was built without CUDA"); }
}  // namespace detail
}  // namespace cuda

}  // namespace tg
