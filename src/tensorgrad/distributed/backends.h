/// \file
/// distributed/backends.h: what init_process_group (distributed/process_group.cpp) hands a backend: the
/// parsed rendezvous. The Gloo backend defines make_gloo_group in distributed/process_group_gloo.cpp,
/// compiled only when CMake found Gloo (TENSORGRAD_DISTRIBUTED), the NCCL backend make_nccl_group in
/// distributed/process_group_nccl.cpp, compiled only with CUDA. Internal; no Gloo or NCCL type here.
#pragma once
#include <chrono>
#include <memory>
#include <string>

#include "tensorgrad/distributed/distributed.h"

namespace tg {
namespace distributed {
namespace detail {

/// A parsed init_method with this process's rank, the world size and the timeout.
struct Rendezvous {
  bool file = false;            ///< file://path (else env:// or tcp://host:port)
  std::string path;             ///< the folder of file://
  std::string host;             ///< MASTER_ADDR of env://
  int port = 0;                 ///< MASTER_PORT of env://
  int rank = 0;                 ///< this process
  int world_size = 1;           ///< every process
  int generation = 0;           ///< how many groups this process made before: keeps their keys apart
  std::chrono::milliseconds timeout{0};   ///< rendezvous and collectives
  /// "env://127.0.0.1:29500" or "file:///tmp/rdv", for messages.
  std::string describe() const {
    return file ? "file://" + path : "env://" + host + ":" + std::to_string(port);
  }
};

/// A Gloo process group joined through r (blocks until every rank joined, or throws DistributedError).
std::unique_ptr<ProcessGroup> make_gloo_group(const Rendezvous& r);
/// An NCCL process group joined through r on this rank's GPU (distributed/process_group_nccl.cpp,
/// compiled only with the CUDA backend; the caller has checked that NCCL is usable).
std::unique_ptr<ProcessGroup> make_nccl_group(const Rendezvous& r);

}  // namespace detail
}  // namespace distributed
}  // namespace tg
