// backend/cuda/graph.cu: CUDA graphs on one device: stream capture with the caching allocator's graph
// pools and the random slot, instantiation, replay (the public class is tg::cuda::CUDAGraph in
// prim/cuda_graph.h).
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include "tensorgrad/backend/cuda/context.cuh"
#include "tensorgrad/backend/cuda/launch.cuh"
#include "tensorgrad/core/accelerator.h"
#include "tensorgrad/core/raw_tensor.h"

// Note [CUDA graphs]
// ~~~~~~~~~~~~~~~~~~
// A training step launches dozens of small kernels, each costing the host a few microseconds; a graph
// captured from the device's one stream (Note [One stream per device] in context.cuh) replays them
// all with one launch. Capture records work instead of running it, so everything a replay must see
// anew has to live in device memory:
// - Tensors: every block allocated during the capture comes from a graph pool that nobody else gets
//   while the graph lives (Note [Graph pools] in caching_allocator.h). cudaMalloc is called in the
//   relaxed capture mode (it is "potentially unsafe" otherwise); blocks are never freed during one.
// - Random numbers: a draw inside the capture reads the seed and the offset from the device's slot
//   (RandomFromSlot in random.cu) plus its place after the capture's first offset; replay_graph
//   writes the generator's position into the slot before each replay (one one-thread kernel, queued
//   on the same stream, so replays in a row each read their own), and the caller advances the
//   generator by what the capture drew. So replays draw fresh numbers, and a seed gives a sequence
//   of replays the numbers the same sequence of eager steps draws.
// - Host synchronizations cannot be captured: item(), to(cpu), copies with host memory, pinned
//   allocations and tg::cuda::synchronize() raise CudaError inside a capture
//   (DeviceContext::refuse_in_capture) and mark it failed, so capture_end raises too rather than
//   returning a graph that misses work. The capture uses cudaStreamCaptureModeThreadLocal: other
//   threads may allocate pinned memory (a DataLoader's workers) meanwhile, but must not queue work
//   on the capturing device.
// Hyperparameters passed to kernels by value are frozen into the graph: an optimizer that changes
// its scalars between steps (Adam's bias corrections, a scheduled lr) must read them from device
// memory instead (Note [Captured Adam], Note [Captured SGD]), and a decision that depends on values
// computed in the step (GradScaler's skip of an inf/NaN step) must be taken on the device (Note
// [GradScaler in CUDA graphs] in optim/grad_scaler.cpp).

namespace tg {
namespace cuda {
namespace detail {

struct CapturedGraph {
  int device;
  std::uint64_t pool;
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  std::size_t nodes;
};

namespace {

/// Values a launch writes into a graph input, passed by value (1920 bytes of kernel arguments).
constexpr int kInputChunk = 240;
struct InputChunk {
  double v[kInputChunk];
};
__global__ void set_doubles(double* out, InputChunk chunk, int count) {
  for (int i = static_cast<int>(threadIdx.x); i < count; i += static_cast<int>(blockDim.x)) out[i] = chunk.v[i];
}

__global__ void set_rng_slot(std::uint64_t* slot, std::uint64_t seed, std::uint64_t offset) {
  slot[0] = seed;
  slot[1] = offset;
}

/// Leaves capture mode on ctx (its capture already ended or failed): the allocator back on its
/// ordinary cache and, without a graph to own it, the pool released.
void finish_capture(DeviceContext& ctx, bool release_pool) noexcept {
  ctx.capture.on.store(false, std::memory_order_release);
  ctx.allocator().capturing.store(false, std::memory_order_release);
  CachingAllocator& pool = ctx.allocator().pool();
  pool.end_capture();
  if (release_pool) pool.release_pool(ctx.capture.pool);
}

}  // namespace

void capture_begin(int device, std::uint64_t pool, std::uint64_t rng_base) {
  DeviceContext& ctx = context(device);
  TG_CHECK(!ctx.capture.on.load(), CudaError, "CUDAGraph::capture_begin: cuda:", device,
           " is already being captured (one capture per device at a time)");
  DeviceGuard guard(device);
  ctx.sync();   // errors of earlier work surface here, not as a failed capture
  if (ctx.rng_slot == nullptr) TG_CUDA_CHECK(cudaMalloc(&ctx.rng_slot, 2 * sizeof(std::uint64_t)));
  ctx.blas();      // the handles and cuBLAS's workspace exist before the capture, not inside it
  ctx.blas_lt();
  ctx.allocator().pool().begin_capture(pool);
  ctx.allocator().capturing.store(true, std::memory_order_release);
  const cudaError_t err = cudaStreamBeginCapture(ctx.stream(), cudaStreamCaptureModeThreadLocal);
  if (err != cudaSuccess) {
    ctx.capture.pool = pool;
    finish_capture(ctx, true);
    throw_cuda_error(err, "cudaStreamBeginCapture", __FILE__, __LINE__);
  }
  ctx.capture.pool = pool;
  ctx.capture.rng_base = rng_base;
  ctx.capture.failure.clear();
  ctx.capture.thread = std::this_thread::get_id();
  ctx.capture.on.store(true, std::memory_order_release);
}

CapturedGraph* capture_end(int device) {
  DeviceContext& ctx = context(device);
  TG_CHECK(ctx.capture.on.load(), CudaError, "CUDAGraph::capture_end: cuda:", device, " is not being captured");
  DeviceGuard guard(device);
  cudaGraph_t graph = nullptr;
  const cudaError_t err = cudaStreamEndCapture(ctx.stream(), &graph);
  const std::string failure = ctx.capture.failure;
  const std::uint64_t pool = ctx.capture.pool;
  if (err != cudaSuccess || !failure.empty()) {
    cudaGetLastError();
    if (graph != nullptr) cudaGraphDestroy(graph);
    finish_capture(ctx, true);
    throw CudaError(tg::detail::cat("CUDAGraph::capture_end: the capture on cuda:", device, " failed: ",
                                    !failure.empty() ? failure
                                                     : tg::detail::cat(cudaGetErrorName(err), " (",
                                                                       cudaGetErrorString(err), ")")));
  }
  finish_capture(ctx, false);
  std::size_t nodes = 0;
  cudaGraphExec_t exec = nullptr;
  cudaError_t e = cudaGraphGetNodes(graph, nullptr, &nodes);
  if (e == cudaSuccess) e = cudaGraphInstantiate(&exec, graph, 0);
  if (e != cudaSuccess) {
    cudaGraphDestroy(graph);
    ctx.allocator().pool().release_pool(pool);
    throw_cuda_error(e, "cudaGraphInstantiate", __FILE__, __LINE__);
  }
  return new CapturedGraph{device, pool, graph, exec, nodes};
}

void capture_abort(int device) noexcept {
  try {
    DeviceContext& ctx = context(device);
    if (!ctx.capture.on.load()) return;
    DeviceGuard guard(device);
    cudaGraph_t graph = nullptr;
    if (cudaStreamEndCapture(ctx.stream(), &graph) == cudaSuccess && graph != nullptr) cudaGraphDestroy(graph);
    cudaGetLastError();
    finish_capture(ctx, true);
  } catch (...) {   // the device was usable when the capture began; nothing more to undo
  }
}

void replay_graph(CapturedGraph* g, bool random, std::uint64_t seed, std::uint64_t offset) {
  DeviceContext& ctx = context(g->device);
  TG_CHECK(!ctx.capture.on.load(), CudaError, "CUDAGraph::replay: cuda:", g->device,
           " is being captured; replay a graph before or after a capture, not inside one");
  DeviceGuard guard(g->device);
  if (random) {
    TG_LAUNCH(1, 1, 0, ctx.stream(), set_rng_slot)(ctx.rng_slot, seed, offset);
    TG_CUDA_CHECK(cudaGetLastError());
  }
  count_launch();
  TG_CUDA_CHECK(cudaGraphLaunch(g->exec, ctx.stream()));
}

std::size_t graph_nodes(const CapturedGraph* g) noexcept { return g->nodes; }
int graph_device(const CapturedGraph* g) noexcept { return g->device; }

void destroy_graph(CapturedGraph* g) noexcept {
  if (g == nullptr) return;
  try {
    DeviceContext& ctx = context(g->device);
    DeviceGuard guard(g->device);
    cudaGraphExecDestroy(g->exec);
    cudaGraphDestroy(g->graph);
    cudaGetLastError();
    // Replays still queued run before any later use of the pool's blocks (one stream per device).
    ctx.allocator().pool().release_pool(g->pool);
  } catch (...) {   // the device was usable when g was captured
  }
  delete g;
}

namespace {
/// Fresh blocks of a device's allocator (one per device, never destroyed).
class FreshAllocator final : public Allocator {
 public:
  explicit FreshAllocator(DeviceAllocator& a) : a_(a) {}
  void* allocate(std::size_t nbytes) override { return a_.pool().allocate(nbytes, /*fresh=*/true); }
  void deallocate(void* ptr, std::size_t) noexcept override { a_.pool().deallocate(ptr); }

 private:
  DeviceAllocator& a_;
};
}  // namespace

RawTensor graph_input(int64_t numel, int device) {
  DeviceContext& ctx = context(device);
  TG_CHECK(ctx.capture.on.load(), Error, "graph_input: cuda:", device, " is not being captured");
  TG_CHECK(numel >= 0, Error, "graph_input: negative size ", numel);
  static FreshAllocator* fresh[64] = {};
  static std::mutex mutex;
  FreshAllocator* a;
  {
    std::lock_guard<std::mutex> lock(mutex);
    TG_CHECK(device >= 0 && device < 64, Error, "graph_input: no device ", device);
    if (fresh[device] == nullptr) fresh[device] = new FreshAllocator(ctx.allocator());   // never destroyed
    a = fresh[device];
  }
  DeviceGuard guard(device);
  auto storage = std::make_shared<Storage>(static_cast<std::size_t>(numel) * sizeof(double), Device::cuda(device), a);
  return RawTensor(std::move(storage), {numel}, {1}, 0, kFloat64);
}

void write_graph_input(const RawTensor& dst, const std::vector<double>& values) {
  TG_CHECK(dst.device().is_cuda() && dst.dtype() == kFloat64 && dst.is_contiguous() &&
               dst.numel() == static_cast<int64_t>(values.size()),
           Error, "write_graph_input: expected a contiguous float64 CUDA tensor of ", values.size(), " elements, got ",
           tensor_meta_str(dst), " on ", dst.device());
  DeviceContext& ctx = context(dst.device().index());
  ctx.refuse_in_capture("writing a graph's input");
  DeviceGuard guard(ctx.device());
  double* out = dst.data<double>();
  for (std::size_t start = 0; start < values.size(); start += kInputChunk) {
    const int count = static_cast<int>(std::min<std::size_t>(kInputChunk, values.size() - start));
    InputChunk chunk{};
    std::copy(values.begin() + static_cast<std::ptrdiff_t>(start),
              values.begin() + static_cast<std::ptrdiff_t>(start) + count, chunk.v);
    TG_LAUNCH(1, 128, 0, ctx.stream(), set_doubles)(out + start, chunk, count);
    TG_CUDA_CHECK(cudaGetLastError());
  }
}

std::uint64_t new_graph_pool() noexcept {
  static std::atomic<std::uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace detail

bool is_current_stream_capturing() noexcept {
  if (!is_available()) return false;
  try {
    return detail::context(current_device()).capture.on.load(std::memory_order_acquire);
  } catch (...) {
    return false;
  }
}

}  // namespace cuda
}  // namespace tg
