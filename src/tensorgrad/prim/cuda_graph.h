/// \file
/// prim/cuda_graph.h: CUDA graphs (torch.cuda.CUDAGraph, libtorch's at::cuda::CUDAGraph): a training
/// step captured once from the device's stream and replayed with one launch. How capture works and
/// what it refuses: Note [CUDA graphs] in backend/cuda/graph.cu; docs/cuda.md has the recipe.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "tensorgrad/core/accelerator.h"

namespace tg {
namespace cuda {
namespace detail {
/// Runs `hook` on the host before each replay of the graph this thread is capturing: what a captured
/// step must see anew goes to device memory there (an optimizer's step values: Note [Captured Adam]
/// in optim/adam.cpp). Error when this thread is not capturing.
void add_replay_hook(std::function<void()> hook);
}  // namespace detail

/// A memory pool graphs may share (torch.cuda.graph_pool_handle()): graphs captured into one pool
/// must be replayed in the order they were captured.
struct MempoolId {
  std::uint64_t id = 0;   ///< 0: none (a graph then gets a pool of its own)
};

/// A new pool for CUDAGraph::capture_begin / GraphCapture (torch.cuda.graph_pool_handle()).
MempoolId graph_pool_handle();

/// A captured sequence of CUDA work, replayed as a whole (torch.cuda.CUDAGraph). Capture on the
/// current device after a warm-up step (so that lazily created state exists); every tensor the
/// captured work reads must stay alive, at the same address, while the graph is replayed: copy new
/// inputs into them with copy_() before replay(). Random draws inside the capture (dropout) draw
/// fresh numbers at each replay, continuing tg's random stream. Inside a capture a host
/// synchronization (item(), to(cpu), tg::cuda::synchronize) raises CudaError and the capture fails.
/// DeviceError without a usable GPU.
class CUDAGraph {
 public:
  CUDAGraph() = default;
  ~CUDAGraph();
  CUDAGraph(const CUDAGraph&) = delete;
  CUDAGraph& operator=(const CUDAGraph&) = delete;

  /// Starts capturing the current device's stream: its work is recorded, not run, and its
  /// allocations come from `pool` (a pool of its own by default). Synchronizes the device first.
  void capture_begin(MempoolId pool = {});
  /// Ends the capture and instantiates the graph. CudaError when something illegal was attempted
  /// during the capture (the graph is then empty and the capture over).
  void capture_end();
  /// Queues the captured work on the device's stream (one launch; asynchronous like any CUDA op).
  void replay();
  /// Frees the graph and gives its pool back; the graph can capture again.
  void reset();
  /// The pool the graph's allocations came from (share it with another graph's capture_begin).
  MempoolId pool() const { return MempoolId{pool_}; }
  /// The number of kernels, copies and memsets the graph replays (0 before capture_end).
  std::size_t num_nodes() const noexcept;

 private:
  int device_ = -1;
  std::uint64_t pool_ = 0;
  bool capturing_ = false;
  std::uint64_t rng_base_ = 0, rng_seed_ = 0, rng_count_ = 0;
  detail::CapturedGraph* graph_ = nullptr;
  std::vector<std::function<void()>> hooks_;   // run before each replay (detail::add_replay_hook)
  friend void detail::add_replay_hook(std::function<void()> hook);
};

/// `with torch.cuda.graph(g):` as a scope: the constructor synchronizes and begins g's capture, the
/// destructor ends it (and raises CudaError as capture_end does). When an exception leaves the
/// scope, the capture is abandoned instead and the exception goes on.
class GraphCapture {
 public:
  /// Begins capturing into graph (its allocations from `pool`, a pool of its own by default).
  explicit GraphCapture(CUDAGraph& graph, MempoolId pool = {});
  /// Ends the capture (capture_end) unless end() did or an exception is unwinding.
  ~GraphCapture() noexcept(false);
  GraphCapture(const GraphCapture&) = delete;
  GraphCapture& operator=(const GraphCapture&) = delete;
  /// Ends the capture now (capture_end); the destructor then does nothing.
  void end();

 private:
  CUDAGraph& graph_;
  bool open_ = true;
  int uncaught_;
};

}  // namespace cuda
}  // namespace tg
