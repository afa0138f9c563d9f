// backend/cuda/context.cuh: the per-device context (stream, lazy cuBLAS and cuBLASLt handles, caching
// allocator, device error flag), the device guard, and the CUDA Backend class whose methods are defined
// across backend/cuda/elementwise.cu, backend/cuda/unary.cu, backend/cuda/reduce.cu, backend/cuda/softmax_loss.cu, backend/cuda/index.cu, backend/cuda/optim.cu,
// backend/cuda/random.cu and backend/cuda/blas.cpp.
// Internal to backend/cuda/ (includes CUDA headers). Created and never destroyed in backend/cuda/runtime.cu.
#pragma once
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

#include "tensorgrad/backend/cuda/caching_allocator.h"
#include "tensorgrad/backend/cuda/check.cuh"
#include "tensorgrad/backend/backend.h"

namespace tg {
namespace cuda {
namespace detail {

/// Written by kernels that find bad input (Note [Device error flag] in backend/cuda/softmax_loss.cu); copied to
/// the host and checked at every synchronization.
struct DeviceErrorFlag {
  int code;          // 0: no error, else one of the kErr* below
  int op;            // kErrIndex: which op (kOpIndexSelect, ...)
  int dim;           // kErrIndex: the indexed dim
  int pad;
  long long value;   // the offending value (a target class, an index)
  long long bound;   // its bound (the number of classes, the dim's size)
};
constexpr int kErrCrossEntropyTarget = 1;
constexpr int kErrIndex = 2;
// kErrCtcTarget: value is the label, bound the number of classes, op the batch entry, dim the position
// in its target, pad the blank (ctc_target_error)
constexpr int kErrCtcTarget = 3;
constexpr int kOpIndexSelect = 0, kOpIndexAdd = 1, kOpGather = 2, kOpScatterAdd = 3;

/// tg::Allocator over one device's CachingAllocator (Storage's deallocate never touches CUDA in
/// caching mode, so Storages may die after the runtime shut down).
class DeviceAllocator final : public Allocator {
 public:
  DeviceAllocator(int device, bool caching);
  void* allocate(std::size_t nbytes) override { return pool_.allocate(nbytes); }
  void deallocate(void* ptr, std::size_t) noexcept override { pool_.deallocate(ptr); }
  CachingAllocator& pool() { return pool_; }
  /// Set while the device's stream is captured: new blocks are then requested from cudaMalloc in the
  /// relaxed capture mode, which allows it (Note [CUDA graphs] in backend/cuda/graph.cu).
  std::atomic<bool> capturing{false};

 private:
  CachingAllocator pool_;
};

/// The state of a stream capture on one device (Note [CUDA graphs] in backend/cuda/graph.cu).
struct CaptureState {
  std::atomic<bool> on{false};
  std::uint64_t pool = 0;       // the graph pool its allocations come from
  std::uint64_t rng_base = 0;   // the random stream's offset when the capture began
  std::string failure;          // why it can no longer end in a graph (an illegal call was refused)
  std::thread::id thread;       // the capturing thread
};

// Note [One stream per device]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Every kernel, cuBLAS call and async copy on a device goes to its context's one non-blocking stream,
// in program order. Two consequences that the rest of backend/cuda/ relies on: (1) no op needs an event or a
// synchronization to see the result of the previous one, and (2) the caching allocator may hand a
// just-freed block to the next request without waiting, because every later use of it is queued
// behind the earlier ones. The only synchronizations are item()/to(cpu) (cudaStreamSynchronize, then
// the error flag is checked) and tg::cuda::synchronize(). Copies between two GPUs order the two
// streams with events (backend/cuda/runtime.cu, copy_peer).
//
// Note [Process-lifetime CUDA objects]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Contexts, streams, cuBLAS handles, allocators and their cached blocks are created on first use and
// never destroyed: static destructors may run after the CUDA runtime has shut down, and Storages
// owned by user statics may be freed after ours. The driver reclaims everything at process exit.
class DeviceContext {
 public:
  DeviceContext(int device, bool caching_allocator);   // sets up the stream, the flag and the allocator
  DeviceContext(const DeviceContext&) = delete;
  DeviceContext& operator=(const DeviceContext&) = delete;

  int device() const { return device_; }
  cudaStream_t stream() const { return stream_; }
  cublasHandle_t blas();                               // created on first use, bound to stream()
  /// The cuBLASLt handle, created on first use; nullptr when cuBLASLt cannot be loaded.
  cublasLtHandle_t blas_lt();
  /// cuBLAS's workspace (allocated by blas()); the cuBLASLt calls use it too, being queued on the same
  /// stream (Note [One stream per device]).
  void* blas_workspace() {
    blas();
    return workspace_;
  }
  std::size_t blas_workspace_bytes() {
    blas();
    return workspace_bytes_;
  }
  DeviceAllocator& allocator() { return allocator_; }
  DeviceErrorFlag* error_flag() const { return flag_device_; }   // device memory, for kernels
  /// Blocks until the stream is idle, then raises the error a kernel recorded (and clears it). The
  /// flag is read and cleared under flag_mutex_, so when several threads synchronize one device
  /// exactly one of them raises a recorded error (Note [Device error flag] in backend/cuda/softmax_loss.cu).
  void sync();
  /// Throws CudaError when the stream is being captured into a CUDA graph, naming `what` (a host
  /// synchronization, a copy with host memory) as illegal there; the capture is then marked failed,
  /// so its capture_end raises too (Note [CUDA graphs] in backend/cuda/graph.cu).
  void refuse_in_capture(const char* what);

  CaptureState capture;
  /// Device memory {seed, offset} that random draws inside a capture read (allocated by the first
  /// capture): each replay writes the generator's position there first.
  std::uint64_t* rng_slot = nullptr;

  int sm_count = 0;
  int major = 0, minor = 0;
  std::string name;
  std::size_t total_memory = 0;

 private:
  int device_;
  cudaStream_t stream_ = nullptr;
  std::once_flag blas_once_;
  cublasHandle_t blas_ = nullptr;
  void* workspace_ = nullptr;
  std::size_t workspace_bytes_ = 0;
  std::once_flag blas_lt_once_;
  cublasLtHandle_t blas_lt_ = nullptr;
  DeviceAllocator allocator_;
  std::mutex flag_mutex_;                    // one sync() at a time reads and clears the flag
  DeviceErrorFlag* flag_host_ = nullptr;     // pinned: the copy sync() reads
  DeviceErrorFlag* flag_device_ = nullptr;   // what kernels write
};

/// The context of a usable device; creates it on first use. Throws DeviceError with the reason.
DeviceContext& context(int device);

/// Makes `device` the calling thread's current CUDA device for its lifetime; restores the previous one.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
};

/// The kernels an attention of dtype dt runs on a device of compute capability `major` (the
/// TG_CUDA_ATTENTION override included), and why in words: Note [Attention providers] in
/// backend/cuda/attention_mma.cu. Asks the runtime whether the tensor-core kernels were compiled for
/// such a device (which needs one) when the rest allows them.
struct AttentionChoice {
  bool mma;
  std::string why;
};
AttentionChoice attention_kernels(int major, DType dt);

/// The CUDA Backend of one device (backend/backend.h has the contract of every method). Each method
/// sets the device, launches on the context's stream and returns without synchronizing.
class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(DeviceContext& ctx) : ctx_(ctx) {}
  Allocator& allocator() override { return ctx_.allocator(); }
  DeviceContext& ctx() { return ctx_; }

  // backend/cuda/elementwise.cu (copy, fill, binary, where) and backend/cuda/unary.cu
  void copy(const RawTensor& src, const RawTensor& dst) override;
  void fill(const RawTensor& dst, double value) override;
  void unary(UnaryOp op, UnaryArgs args, const RawTensor& x, const RawTensor& out) override;
  void unary_backward(UnaryOp op, UnaryArgs args, const RawTensor& x, const RawTensor& y, const RawTensor& dy,
                      const RawTensor& dx) override;
  void binary(BinaryOp op, const RawTensor& a, const RawTensor& b, const RawTensor& out) override;
  void where(const RawTensor& cond, const RawTensor& a, const RawTensor& b, const RawTensor& out) override;
  // backend/cuda/reduce.cu
  void reduce(ReduceOp op, const RawTensor& x, const RawTensor& out) override;
  void scan(BinaryOp op, const RawTensor& x, int64_t dim, bool reverse, const RawTensor& out) override;
  // backend/cuda/softmax_loss.cu
  void softmax(const RawTensor& x, int64_t dim, bool log, const RawTensor& out) override;
  void softmax_backward(const RawTensor& y, const RawTensor& dy, int64_t dim, bool log, const RawTensor& dx) override;
  void cross_entropy(const RawTensor& logits, const RawTensor& target, const CrossEntropyArgs& args, const RawTensor& loss,
                     const RawTensor& lse, const RawTensor& total, const RawTensor& count) override;
  void cross_entropy_backward(const RawTensor& logits, const RawTensor& target, const CrossEntropyArgs& args,
                              const RawTensor& lse, const RawTensor& dloss, const RawTensor& count,
                              const RawTensor& dlogits) override;
  // backend/cuda/optim.cu
  void sgd_step(const std::vector<SgdParam>& params, const SgdHyper& hyper) override;
  void adam_step(const std::vector<AdamParam>& params, const AdamHyper& hyper) override;
  // backend/cuda/index.cu
  void index_select(const RawTensor& x, int64_t dim, const RawTensor& index, const RawTensor& out) override;
  void index_add(const RawTensor& dst, int64_t dim, const RawTensor& index, const RawTensor& src) override;
  void gather(const RawTensor& x, int64_t dim, const RawTensor& index, const RawTensor& out) override;
  void scatter_add(const RawTensor& dst, int64_t dim, const RawTensor& index, const RawTensor& src) override;
  // backend/cuda/random.cu
  void random(const philox::Distribution& dist, uint64_t seed, uint64_t offset, const RawTensor& out) override;
  bool sample_categories(const RawTensor& probs, const RawTensor& u, const RawTensor& out,
                         const RawTensor& status) override;
  // backend/cuda/blas.cpp
  void gemm(const GemmArgs& args) override;
  bool gemm_epilogue(const GemmArgs& args, const GemmEpilogue& epilogue) override;
  // backend/cuda/conv.cu
  void conv2d(const RawTensor& x, const RawTensor& weight, const RawTensor& bias, const Conv2dArgs& args,
              const RawTensor& out) override;
  void conv2d_backward(const RawTensor& x, const RawTensor& weight, const RawTensor& dy, const Conv2dArgs& args,
                       const RawTensor& dx, const RawTensor& dweight, const RawTensor& dbias) override;
  void max_pool2d(const RawTensor& x, const Pool2dArgs& args, const RawTensor& out, const RawTensor& indices) override;
  void max_pool2d_backward(const RawTensor& dy, const RawTensor& indices, const Pool2dArgs& args, const RawTensor& dx) override;
  void avg_pool2d(const RawTensor& x, const Pool2dArgs& args, const RawTensor& out) override;
  void avg_pool2d_backward(const RawTensor& dy, const Pool2dArgs& args, const RawTensor& dx) override;
  // backend/cuda/attention.cu
  void attention(const RawTensor& q, const RawTensor& k, const RawTensor& v, const AttentionArgs& args, const RawTensor& out,
                 const RawTensor& lse) override;
  void attention_backward(const RawTensor& q, const RawTensor& k, const RawTensor& v, const RawTensor& out, const RawTensor& lse,
                          const RawTensor& dout, const AttentionArgs& args, const RawTensor& dq, const RawTensor& dk,
                          const RawTensor& dv) override;
  // backend/cuda/norm.cu
  void layer_norm(const RawTensor& x, const RawTensor& w, const RawTensor& b, double eps, const RawTensor& y, const RawTensor& mean,
                  const RawTensor& rstd) override;
  void layer_norm_backward(const RawTensor& dy, const RawTensor& x, const RawTensor& mean, const RawTensor& rstd, const RawTensor& w,
                           const RawTensor& dx, const RawTensor& dw, const RawTensor& db) override;
  // backend/cuda/ctc_loss.cu
  void ctc_loss(const RawTensor& log_probs, const RawTensor& targets, const RawTensor& lengths, const CtcArgs& args,
                const RawTensor& alpha, const RawTensor& nll) override;
  void ctc_loss_backward(const RawTensor& log_probs, const RawTensor& targets, const RawTensor& lengths,
                         const RawTensor& alpha, const RawTensor& nll, const CtcArgs& args, const RawTensor& beta,
                         const RawTensor& grad) override;
  // backend/cuda/rnn.cu
  void lstm_cell(const RawTensor& xg, const RawTensor& hg, const RawTensor& cx, const RawTensor& hc,
                 const RawTensor& ws) override;
  void lstm_cell_backward(const RawTensor& dhc, const RawTensor& cx, const RawTensor& ws, const RawTensor& dgates,
                          const RawTensor& dcx) override;
  void gru_cell(const RawTensor& xg, const RawTensor& hg, const RawTensor& hx, const RawTensor& hy,
                const RawTensor& ws) override;
  void gru_cell_backward(const RawTensor& dhy, const RawTensor& hx, const RawTensor& ws, const RawTensor& dxg,
                         const RawTensor& dhg, const RawTensor& dhx) override;
  // backend/cuda/runtime.cu
  void synchronize() override;
  // backend/cuda/sort.cu
  void argsort(const RawTensor& x, bool descending, const RawTensor& indices) override;

 private:
  DeviceContext& ctx_;
};

}  // namespace detail
}  // namespace cuda
}  // namespace tg
