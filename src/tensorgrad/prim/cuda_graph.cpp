// prim/cuda_graph.cpp: tg::cuda::CUDAGraph and GraphCapture over the device half in
// backend/cuda/graph.cu (Note [CUDA graphs]); here the random stream's bookkeeping: a capture's draws
// are counted, the generator is put back where the capture began, and each replay reserves that many
// counters, so the graph draws what the same eager steps would.
#include "tensorgrad/prim/cuda_graph.h"

#include <exception>

#include "tensorgrad/core/error.h"
#include "tensorgrad/prim/prim.h"

namespace tg {
namespace cuda {

namespace {
thread_local CUDAGraph* t_capturing = nullptr;   // the graph this thread is capturing
}  // namespace

namespace detail {
void add_replay_hook(std::function<void()> hook) {
  TG_CHECK(t_capturing != nullptr, Error, "add_replay_hook: this thread is not capturing a CUDA graph");
  t_capturing->hooks_.push_back(std::move(hook));
}
}  // namespace detail

MempoolId graph_pool_handle() { return MempoolId{detail::new_graph_pool()}; }

CUDAGraph::~CUDAGraph() {
  if (t_capturing == this) t_capturing = nullptr;
  if (capturing_) detail::capture_abort(device_);
  detail::destroy_graph(graph_);
}

void CUDAGraph::capture_begin(MempoolId pool) {
  TG_CHECK(!capturing_, Error, "CUDAGraph::capture_begin: this graph is already capturing");
  TG_CHECK(graph_ == nullptr, Error,
           "CUDAGraph::capture_begin: this graph already holds a capture; call reset() first");
  hooks_.clear();
  const int device = current_device();
  const std::uint64_t id = pool.id != 0 ? pool.id : detail::new_graph_pool();
  const RngState at = prim::get_rng_state();
  detail::capture_begin(device, id, at.offset);   // DeviceError without CUDA
  device_ = device;
  pool_ = id;
  rng_base_ = at.offset;
  rng_seed_ = at.seed;
  capturing_ = true;
  t_capturing = this;
}

void CUDAGraph::capture_end() {
  TG_CHECK(capturing_, Error, "CUDAGraph::capture_end: capture_begin was not called");
  capturing_ = false;
  if (t_capturing == this) t_capturing = nullptr;
  // The capture's draws read the generator's position at each replay: put it back where it was.
  const RngState now = prim::get_rng_state();
  prim::set_rng_state(RngState{rng_seed_, rng_base_});
  detail::CapturedGraph* g = detail::capture_end(device_);   // raises when the capture failed
  if (now.seed != rng_seed_) {
    detail::destroy_graph(g);
    throw Error("CUDAGraph::capture_end: manual_seed was called during the capture; seed before capture_begin "
                "or between replays");
  }
  rng_count_ = now.offset - rng_base_;
  graph_ = g;
}

void CUDAGraph::replay() {
  TG_CHECK(graph_ != nullptr, Error, "CUDAGraph::replay: nothing was captured (call capture_begin and capture_end)");
  for (const auto& hook : hooks_) hook();
  const RngState at = prim::reserve_random(rng_count_);
  detail::replay_graph(graph_, rng_count_ > 0, at.seed, at.offset);
}

void CUDAGraph::reset() {
  if (t_capturing == this) t_capturing = nullptr;
  hooks_.clear();
  if (capturing_) {
    detail::capture_abort(device_);
    capturing_ = false;
    prim::set_rng_state(RngState{rng_seed_, rng_base_});
  }
  detail::destroy_graph(graph_);
  graph_ = nullptr;
  rng_count_ = 0;
}

std::size_t CUDAGraph::num_nodes() const noexcept { return graph_ != nullptr ? detail::graph_nodes(graph_) : 0; }

GraphCapture::GraphCapture(CUDAGraph& graph, MempoolId pool) : graph_(graph), uncaught_(std::uncaught_exceptions()) {
  graph_.capture_begin(pool);
}

GraphCapture::~GraphCapture() noexcept(false) {
  if (!open_) return;
  open_ = false;
  if (std::uncaught_exceptions() > uncaught_) {   // unwinding: abandon the capture, keep the exception
    graph_.reset();
    return;
  }
  graph_.capture_end();
}

void GraphCapture::end() {
  TG_CHECK(open_, Error, "GraphCapture::end: the capture has already ended");
  open_ = false;
  graph_.capture_end();
}

}  // namespace cuda
}  // namespace tg
