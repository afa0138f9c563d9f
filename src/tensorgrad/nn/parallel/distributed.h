/// \file
/// nn/parallel/distributed.h: DistributedDataParallel (PyTorch's torch.nn.parallel.DistributedDataParallel):
/// one model replica per process, parameters broadcast from rank 0, gradients averaged over the ranks
/// in buckets that are all-reduced on a communication thread while backward still runs. The
/// collectives are tg::distributed's (distributed/distributed.h); the algorithm is in distributed.cpp
/// (Note [DDP buckets]).
#pragma once
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tensorgrad/distributed/distributed.h"
#include "tensorgrad/autograd/hooks.h"
#include "tensorgrad/nn/module.h"

namespace tg {
namespace nn {
namespace parallel {

/// Options of DistributedDataParallel, with PyTorch's names and defaults.
class DistributedDataParallelOptions {
 public:
  /// The most bytes of gradients in one bucket (PyTorch's bucket_cap_mb, 25 MiB).
  DistributedDataParallelOptions& bucket_cap_mb(double mb) { bucket_cap_mb_ = mb; return *this; }
  /// When true, parameters that the forward's output does not depend on are found after each forward
  /// (a walk of the graph) and reduced as zeros; when false (the default) such a parameter makes the
  /// next forward raise a DistributedError naming it.
  DistributedDataParallelOptions& find_unused_parameters(bool on) { find_unused_ = on; return *this; }
  /// Copies rank 0's buffers to every rank at the start of each forward (PyTorch's broadcast_buffers).
  DistributedDataParallelOptions& broadcast_buffers(bool on) { broadcast_buffers_ = on; return *this; }
  /// See bucket_cap_mb(double).
  double bucket_cap_mb() const { return bucket_cap_mb_; }
  /// See find_unused_parameters(bool).
  bool find_unused_parameters() const { return find_unused_; }
  /// See broadcast_buffers(bool).
  bool broadcast_buffers() const { return broadcast_buffers_; }

 private:
  double bucket_cap_mb_ = 25.0;
  bool find_unused_ = false;
  bool broadcast_buffers_ = true;
};

/// Data parallelism over processes: wraps a module (held by reference, registered as the child
/// "module"), gives every rank rank 0's parameters and buffers at construction, and makes each
/// backward through its forward leave every rank with the gradients averaged over the ranks, so that
/// the same optimizer step keeps the replicas identical:
/// \code
/// tg::distributed::init_process_group("gloo");
/// tg::nn::parallel::DistributedDataParallel ddp(model);
/// tg::optim::SGD opt(ddp.parameters(), 0.1);
/// opt.zero_grad(); criterion(ddp(x), y).backward(); opt.step();
/// \endcode
/// Every rank must construct it, run forward and backward the same number of times, and hold the
/// same parameter shapes. Collectives of one's own must not run during a backward through it.
class DistributedDataParallel : public Module {
 public:
  /// Wraps module on the default process group (see distributed::init_process_group).
  explicit DistributedDataParallel(Module& module,
                                   const DistributedDataParallelOptions& options = DistributedDataParallelOptions());
  /// Wraps module on group.
  DistributedDataParallel(Module& module, distributed::ProcessGroup& group,
                          const DistributedDataParallelOptions& options = DistributedDataParallelOptions());
  /// Waits for the communication thread, takes out the gradient hooks.
  ~DistributedDataParallel() override;

  /// The module's forward; arms the gradient reduction of the next backward (unless under no_sync()
  /// or with grad mode off).
  Tensor forward(const Tensor& x) override;
  /// "DistributedDataParallel".
  std::string name() const override { return "DistributedDataParallel"; }
  /// The wrapped module.
  Module& module() { return module_; }

  /// While alive, forwards do not arm the reduction: their backwards accumulate gradients locally, and
  /// the first backward of a forward after the guard reduces the accumulated sums (PyTorch's no_sync()).
  class NoSyncGuard {
   public:
    /// Turns synchronization off on ddp until destruction.
    explicit NoSyncGuard(DistributedDataParallel& ddp) : ddp_(&ddp), prev_(ddp.no_sync_) { ddp.no_sync_ = true; }
    ~NoSyncGuard() {
      if (ddp_) ddp_->no_sync_ = prev_;
    }
    NoSyncGuard(const NoSyncGuard&) = delete;              ///< one guard, one restore
    NoSyncGuard& operator=(const NoSyncGuard&) = delete;   ///< one guard, one restore
    /// Moves the restore into the new guard.
    NoSyncGuard(NoSyncGuard&& o) noexcept : ddp_(o.ddp_), prev_(o.prev_) { o.ddp_ = nullptr; }

   private:
    DistributedDataParallel* ddp_;
    bool prev_;
  };
  /// `{ auto guard = ddp.no_sync(); ... }`: see NoSyncGuard.
  NoSyncGuard no_sync() { return NoSyncGuard(*this); }

  /// What the last synchronized backward communicated, for benchmarks.
  struct Stats {
    int buckets = 0;                 ///< all-reduces launched
    int64_t bytes = 0;               ///< gradient bytes all-reduced (each rank's payload)
    double comm_seconds = 0;         ///< time the communication thread spent on the buckets
    double exposed_seconds = 0;      ///< time backward's last hook waited for it (not hidden behind backward)
  };
  /// See Stats.
  Stats last_stats() const;
  /// The buckets as indices into parameters(), in launch order (reverse registration order).
  std::vector<std::vector<int>> bucket_indices() const;

 private:
  struct Bucket {
    std::vector<int> params;   // indices into params_
    int64_t numel = 0;
    int pending = 0;           // parameters not yet ready in this backward
  };
  void init(const DistributedDataParallelOptions& options);
  void on_grad_ready(int index);
  void launch_ready_buckets();             // under mutex_
  void wait_idle(std::unique_lock<std::mutex>& lock);
  void finish_step(std::unique_lock<std::mutex>& lock);
  void reset_step();                       // under mutex_
  void comm_loop();
  void reduce_bucket(int b);
  void mark_unused(const Tensor& out);   // find_unused_parameters

  Module& module_;
  distributed::ProcessGroup& group_;
  DistributedDataParallelOptions options_;
  std::vector<Tensor> params_;           // parameters that require grad, registration order
  std::vector<std::string> names_;
  std::vector<int> bucket_of_;
  std::vector<Bucket> buckets_;
  std::vector<RemovableHandle> hooks_;
  bool no_sync_ = false;

  mutable std::mutex mutex_;
  std::condition_variable cv_;
  bool armed_ = false;                     // the last forward expects a synchronized backward
  std::vector<char> ready_;                // per parameter, this backward
  int ready_count_ = 0;
  bool got_grad_ = false;                  // a hook fired since the last forward
  int next_bucket_ = 0;                    // the next bucket to launch (buckets launch in order)
  int done_buckets_ = 0;
  std::deque<int> queue_;                  // launched buckets for the communication thread
  bool busy_ = false;
  bool stop_ = false;
  std::vector<std::unique_ptr<distributed::Work>> works_;   // this step's queued bucket collectives
  std::exception_ptr error_;
  Stats stats_, last_stats_;
  std::thread comm_;
};

}  // namespace parallel
}  // namespace nn
}  // namespace tg
