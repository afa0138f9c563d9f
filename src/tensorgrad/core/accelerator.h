// core/accelerator.h: the public tg::cuda API (device queries, current device, memory statistics) and the
// hooks the engine and the DataLoader use (detail::). No CUDA header here, so plain C++ consumers build.
// Implemented in backend/cuda/runtime.cu when tensorgrad is built with CUDA, and by the stubs at the end of
// backend/backend.cpp when it is not. The kernels behind the CUDA Backend are in backend/cuda/*.cu.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>
#include <string>
#include <utility>

#include "tensorgrad/core/memory.h"

namespace tg {
class Backend;
class Device;
class RawTensor;
namespace cuda {

/// True when the runtime reports at least one device and a probe kernel ran on cuda:0. Never throws:
/// any runtime error (no driver, no device, driver too old, no code for the GPU's architecture)
/// means "not available", and info() says why.
bool is_available() noexcept;
/// The number of CUDA devices the runtime reports; 0 without a usable GPU. Never throws.
int device_count() noexcept;           // 0 without a usable GPU
/// The calling thread's current device (0 unless set_device was called); tg::cuda::memory_* default to it.
void set_device(int device);           // throws DeviceError for an unusable index
/// The calling thread's current device index (0 unless set_device was called; 0 without CUDA).
int current_device();
/// Waits for all queued work on every device in use; raises errors kernels recorded (e.g. a bad
/// cross_entropy target) as the CPU would.
void synchronize();
/// Bytes in live tensor blocks (rounded sizes) on device (-1: the current one); 0 without a usable
/// GPU or before the device is first used (torch.cuda.memory_allocated).
std::size_t memory_allocated(int device = -1);       // bytes in live tensor blocks (rounded sizes)
/// The peak of memory_allocated(device) since the last reset_peak_memory_stats (torch.cuda.max_memory_allocated).
std::size_t max_memory_allocated(int device = -1);   // peak of memory_allocated since the last reset
/// Bytes the caching allocator holds from the driver on device, live and cached (torch.cuda.memory_reserved).
std::size_t memory_reserved(int device = -1);        // bytes the caching allocator holds from the driver
/// Returns the cached, unused blocks of every device in use to the driver (torch.cuda.empty_cache);
/// live tensors keep theirs.
void empty_cache();                                  // returns cached, unused blocks to the driver
/// Restarts max_memory_allocated(device) and max_memory_reserved(device) from the current values.
void reset_peak_memory_stats(int device = -1);
/// The peak of memory_reserved(device) since the last reset_peak_memory_stats (torch.cuda.max_memory_reserved).
std::size_t max_memory_reserved(int device = -1);
/// Every counter of device's caching allocator (torch.cuda.memory_stats, as a struct); all zero
/// without a usable GPU or before the device is first used, like memory_allocated.
memory::MemoryStats memory_stats(int device = -1);
/// {free, total} bytes of device as the driver reports them (torch.cuda.mem_get_info): free counts
/// what other processes and tensorgrad's cache hold as used. DeviceError without a usable GPU.
std::pair<std::size_t, std::size_t> mem_get_info(int device = -1);
/// memory_stats(device) as a table like torch.cuda.memory_summary(). DeviceError without a usable GPU.
std::string memory_summary(int device = -1);
/// Driver and runtime versions, devices, compiled architectures; or why no GPU can be used.
std::string info();
/// Whether the current device's stream is being captured into a CUDA graph
/// (torch.cuda.is_current_stream_capturing); false without a usable GPU.
bool is_current_stream_capturing() noexcept;

namespace detail {
/// The backend for cuda:index; throws DeviceError with the reason when it cannot be used.
Backend& backend(int index);
/// RawTensor::to between devices, at least one of them CUDA (backend/backend.cpp). Host-to-device copies
/// from pinned memory are asynchronous when non_blocking; device-to-host copies synchronize.
RawTensor to_device(const RawTensor& t, Device device, bool non_blocking);
/// A contiguous copy of a CPU tensor in pinned (page-locked) host memory, so that to(cuda, true)
/// can be asynchronous; t itself when no GPU is usable. The DataLoader's pin_memory uses it.
RawTensor pin(const RawTensor& t);
/// Whether t's storage is pinned host memory from pin().
bool is_pinned(const RawTensor& t) noexcept;
/// The units of work tensorgrad has queued on CUDA streams since the process started, all devices
/// and threads together: kernel launches, cuBLAS calls and stream memsets/copies. The launch-count
/// test of a training step and tools/gpu_probe read its difference across a step.
uint64_t launch_count() noexcept;
/// Whether linear may fold its bias into the GEMM on CUDA (cuBLASLt's bias epilogues, default on):
/// with false every GEMM takes the cuBLAS path and the bias its own launch, as without cuBLASLt. Returns
/// the previous setting; the tests use it to run both paths. A no-op returning false without CUDA.
bool set_gemm_epilogues(bool enabled) noexcept;
/// One warp-level tensor-core product on cuda:0 of kind 0 (.tf32 m16n8k8), 1 (.f16 m16n8k16) or 2
/// (.bf16 m16n8k16), its operands placed by the fragment layouts of backend/cuda/mma.cuh (Note
/// [Tensor-core fragments]) from A(r, c) = (3r + c) % 7 - 3 and B(k, n) = (5k + 2n) % 5 - 2 (exact in
/// every input type), and D (16 x 8, row-major) stored by the same layouts. D equals A B on the host
/// exactly when those layouts are the hardware's: the layout-conformance test. DeviceError where no
/// GPU of compute capability 8.0 or newer is usable.
std::vector<float> mma_layout_probe(int kind);

/// A graph captured from a device's stream and instantiated (backend/cuda/graph.cu); the public
/// tg::cuda::CUDAGraph (prim/cuda_graph.h) owns one. Note [CUDA graphs] in backend/cuda/graph.cu.
struct CapturedGraph;
/// Starts capturing cuda:device's stream: allocations come from graph pool `pool` (Note [Graph pools]
/// in backend/cuda/caching_allocator.h) and random draws at offsets from rng_base on read the seed
/// and offset from device memory. Synchronizes the device first. DeviceError without CUDA.
void capture_begin(int device, uint64_t pool, uint64_t rng_base);
/// Ends the capture of cuda:device and instantiates its graph (the caller owns it: destroy_graph).
/// Throws CudaError when an illegal call was refused during the capture; the capture is over either way.
CapturedGraph* capture_end(int device);
/// Ends the capture of cuda:device without a graph (an exception is unwinding through it).
void capture_abort(int device) noexcept;
/// Queues one replay of g on its device's stream; with `random`, first writes (seed, offset) where
/// its random draws read them.
void replay_graph(CapturedGraph* g, bool random, uint64_t seed, uint64_t offset);
/// The number of nodes (kernels, copies, memsets) the graph holds.
std::size_t graph_nodes(const CapturedGraph* g) noexcept;
/// The device g was captured on.
int graph_device(const CapturedGraph* g) noexcept;
/// Frees g and releases its pool.
void destroy_graph(CapturedGraph* g) noexcept;
/// A graph pool id no other pool has (never 0).
uint64_t new_graph_pool() noexcept;
/// A contiguous float64 tensor of numel elements on cuda:device, in memory no work of the graph
/// being captured uses otherwise (a fresh block of its pool): what the host writes before each replay
/// and the graph reads (Note [Graph pools]). Error outside a capture of that device.
RawTensor graph_input(int64_t numel, int device);
/// Writes values into dst (a graph_input) on its device's stream, outside any capture: kernels that
/// take the values as arguments, 240 per launch, so the host neither waits nor stages a copy.
void write_graph_input(const RawTensor& dst, const std::vector<double>& values);
}  // namespace detail

}  // namespace cuda
}  // namespace tg
