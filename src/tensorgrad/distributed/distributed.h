/// \file
/// distributed/distributed.h: several processes training together (PyTorch's torch.distributed):
/// init_process_group with env:// or file:// rendezvous, the collectives (all_reduce, broadcast,
/// all_gather, barrier) on the default process group, and the ProcessGroup interface behind them.
/// The Gloo backend is in distributed/process_group_gloo.cpp, the NCCL one in
/// distributed/process_group_nccl.cpp, the TCP key-value store of env:// in
/// distributed/tcp_store.h; DistributedDataParallel is in nn/parallel/distributed.h.
#pragma once
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "tensorgrad/core/raw_tensor.h"
#include "tensorgrad/autograd/tensor.h"

namespace tg {
namespace distributed {

/// How all_reduce combines the ranks' values (PyTorch's ReduceOp). AVG divides the sum by the world
/// size (floating dtypes only).
enum class ReduceOp { SUM, AVG, PRODUCT, MIN, MAX };

/// The default timeout of rendezvous and collectives: 30 minutes, PyTorch's default_pg_timeout.
constexpr std::chrono::milliseconds kDefaultTimeout = std::chrono::minutes(30);

/// Options of init_process_group, PyTorch's keyword arguments: InitOptions().init_method("file:///tmp/rdv")
/// .timeout(std::chrono::seconds(10)). A rank or world size left at -1 is read from the environment
/// (RANK, WORLD_SIZE, as torchrun and tools/tgrun set them).
class InitOptions {
 public:
  /// "env://" (MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE; rank 0 serves a TCP store), or
  /// "file:///path/to/folder" (every rank on one machine or a shared file system; the folder must be
  /// new or empty), or "tcp://host:port" (env:// with the address given here).
  InitOptions& init_method(std::string m) { init_method_ = std::move(m); return *this; }
  /// This process's rank in [0, world_size); -1 reads RANK.
  InitOptions& rank(int r) { rank_ = r; return *this; }
  /// The number of processes; -1 reads WORLD_SIZE.
  InitOptions& world_size(int n) { world_size_ = n; return *this; }
  /// How long the rendezvous and each collective may wait for the other ranks before they fail with a
  /// DistributedError naming the rank that is missing.
  InitOptions& timeout(std::chrono::milliseconds t) { timeout_ = t; return *this; }
  /// See init_method(std::string).
  const std::string& init_method() const { return init_method_; }
  /// See rank(int).
  int rank() const { return rank_; }
  /// See world_size(int).
  int world_size() const { return world_size_; }
  /// See timeout(std::chrono::milliseconds).
  std::chrono::milliseconds timeout() const { return timeout_; }

 private:
  std::string init_method_ = "env://";
  int rank_ = -1;
  int world_size_ = -1;
  std::chrono::milliseconds timeout_ = kDefaultTimeout;
};

/// A collective started without waiting for it (PyTorch's Work, what async_op=True returns).
class Work {
 public:
  virtual ~Work() = default;
  /// Returns once the collective is done, with the group's timeout, and raises its failure (a
  /// DistributedError, as the waiting call would): afterwards its result may be read on the host. On
  /// NCCL, work queued on the device after the collective sees its result without any wait.
  virtual void wait() = 0;
};

/// A group of processes that run collectives together (PyTorch's c10d::ProcessGroup). Every rank must
/// call the same collectives in the same order with tensors of the same shape and dtype; a mismatch
/// raises a DistributedError on every rank (Note [Collective headers], group_common.cpp). The
/// collectives block until this rank's part is done and are not to be called from several threads
/// at once (DistributedDataParallel calls them from its communication thread during backward only).
class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;
  /// This process's rank.
  virtual int rank() const = 0;
  /// The number of processes.
  virtual int size() const = 0;
  /// "gloo" or "nccl".
  virtual std::string backend() const = 0;
  /// Combines t over every rank with op, in place: afterwards every rank holds the same result.
  virtual void all_reduce(RawTensor& t, ReduceOp op = ReduceOp::SUM) = 0;
  /// all_reduce without waiting for it, where the backend can (PyTorch's async_op=True): NCCL queues
  /// it on the device's stream and compares the ranks' collective headers at wait(), so buckets of
  /// gradients go out back to back with one host wait for all of them; Gloo runs it before returning.
  /// t must stay alive until wait(); until then the group's other collectives wait for it first.
  virtual std::unique_ptr<Work> all_reduce_async(RawTensor& t, ReduceOp op = ReduceOp::SUM);
  /// Copies root's t into every other rank's t, in place.
  virtual void broadcast(RawTensor& t, int root = 0) = 0;
  /// out[r] = rank r's t, for every r; out is resized to size() and its entries are fresh tensors
  /// unless they already have t's shape, dtype and device.
  virtual void all_gather(std::vector<RawTensor>& out, const RawTensor& t) = 0;
  /// Returns once every rank has called it.
  virtual void barrier() = 0;
};

/// True when this build has a distributed backend: Gloo (TENSORGRAD_DISTRIBUTED in CMake) or NCCL (a
/// CUDA build that found nccl.h), as torch.distributed.is_available(); is_backend_available() says
/// which one can run here.
bool is_available() noexcept;
/// True when the named backend can run here: "gloo" when this build has Gloo; "nccl" when tensorgrad
/// was built with CUDA and NCCL's header, a GPU is usable and NCCL (libnccl.so.2, opened at run time)
/// loaded.
bool is_backend_available(const std::string& backend) noexcept;

/// Joins the default process group (PyTorch's torch.distributed.init_process_group). backend is
/// "gloo" (CPU tensors, and CUDA tensors staged through host memory) or "nccl" (CUDA tensors of this
/// rank's GPU: LOCAL_RANK when set, else the current device; where a GPU or libnccl.so.2 is missing a
/// DistributedError says which). Blocks until every rank has joined; a rank that does not join within
/// the timeout makes the others fail with a DistributedError naming it.
void init_process_group(const std::string& backend, const InitOptions& options = InitOptions());
/// True between init_process_group and destroy_process_group.
bool is_initialized() noexcept;
/// Leaves the default process group; a no-op when none was initialized.
void destroy_process_group();
/// The default group (DistributedError when not initialized).
ProcessGroup& default_group();
/// This process's rank in the default group.
int get_rank();
/// The number of processes in the default group.
int get_world_size();
/// The default group's backend name.
std::string get_backend();

/// all_reduce on the default group, in place; no autograd is recorded (PyTorch's dist.all_reduce).
void all_reduce(const Tensor& t, ReduceOp op = ReduceOp::SUM);
/// dist.all_reduce(t, op, async_op=True): started on the default group, finished by the returned
/// Work's wait() (ProcessGroup::all_reduce_async); with async_op false it waits and returns null, as
/// PyTorch returns None.
std::unique_ptr<Work> all_reduce(const Tensor& t, ReduceOp op, bool async_op);
/// broadcast on the default group: every rank's t becomes src's t, in place.
void broadcast(const Tensor& t, int src = 0);
/// all_gather on the default group: out[r] becomes rank r's t (out is resized to the world size).
void all_gather(std::vector<Tensor>& out, const Tensor& t);
/// barrier on the default group.
void barrier();

}  // namespace distributed
}  // namespace tg
