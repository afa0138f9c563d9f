/// \file
/// backend/cuda/nccl.h: NCCL for the NCCL process group (distributed/process_group_nccl.cpp): the library
/// opened at run time (Note [NCCL at run time]) and one communicator whose collectives run on its
/// device's stream and are waited for with a timeout. No CUDA or NCCL type appears here, so the
/// distributed/ side includes it with a plain C++ compiler; implemented in backend/cuda/nccl.cpp.
#pragma once
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "tensorgrad/core/raw_tensor.h"

namespace tg {
namespace cuda {
namespace nccl {

/// How all_reduce combines the ranks' values: distributed::ReduceOp's members, which the NCCL process
/// group (distributed/process_group_nccl.cpp) maps onto these (the backend floor sits below distributed/).
enum class RedOp { Sum, Avg, Product, Min, Max };

/// Empty when NCCL can run here; else everything that is missing, in words: no usable CUDA GPU (with
/// the runtime's reason), no libnccl.so.2 found (each place tried and its loader error), or a library
/// without an entry point we call. Opens the library on the first call. Never throws.
std::string unavailable_reason() noexcept;

/// "2.28.9 (/path/to/libnccl.so.2)" when the library loaded, else "not found (<loader errors>)".
std::string library_info() noexcept;

/// A fresh ncclUniqueId, its 128 bytes: rank 0 makes it and publishes it through the group's store.
std::string unique_id();

/// How a collective ended when it was waited for.
struct WaitResult {
  bool ok = true;           ///< completed
  bool timed_out = false;   ///< not completed within the timeout (the communicator was aborted)
  std::string what;         ///< when not ok: NCCL's error or the timeout, in words
};

/// One NCCL communicator on one device, created in non-blocking mode so that neither its creation nor
/// a collective can wait forever: every wait polls with the timeout and aborts the communicator when
/// it passes (Note [NCCL timeouts], backend/cuda/nccl.cpp). The collectives are queued on the device's stream
/// (Note [One stream per device]) in place on contiguous tensors of that device; wait() blocks the
/// calling thread until everything queued so far on the stream has run.
class Communicator {
 public:
  /// Joins the communicator of world_size ranks named by id (from unique_id()) as `rank` on `device`.
  /// Throws DistributedError with NCCL's reason when it fails or does not complete within timeout.
  Communicator(int device, const std::string& id, int rank, int world_size, std::chrono::milliseconds timeout);
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

    /// The CUDA device index the communicator was created on.
  int device() const;
  // Each collective queues its work and returns how the queueing went (an error or a timeout aborts
  // the communicator); the result is there once wait() returned ok.
  /// t (contiguous, on device()) = op over every rank's t. AVG only for floating dtypes; bool sums
  /// are "any" and bool products "all", as PyTorch maps them.
  WaitResult all_reduce(const RawTensor& t, RedOp op);
  /// t (contiguous, on device()) = root's t.
  WaitResult broadcast(const RawTensor& t, int root);
  /// out (contiguous, world_size * in.numel() elements of in's dtype, on device()) = every rank's in,
  /// in rank order.
  WaitResult all_gather(const RawTensor& in, const RawTensor& out);
  /// Waits for the queued work; on an NCCL error or at the timeout the communicator is aborted and
  /// the result says why. Never throws.
  WaitResult wait() noexcept;
  /// wait() with a copy of `read_back` (contiguous, on device()) into *host queued before it, through
  /// a pinned buffer of the communicator: one host wait for the collectives and the copy. *host holds
  /// the bytes when the result is ok. Never throws.
  WaitResult wait(const RawTensor& read_back, std::vector<char>* host) noexcept;
  /// Aborts the communicator (outstanding collectives end; it cannot be used again).
  void abort() noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace nccl
}  // namespace cuda
}  // namespace tg
