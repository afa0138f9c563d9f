/// \file
/// distributed/group_common.h: what the Gloo and NCCL process groups share: the key-value store of a
/// group (env:// through our TCPStore, file:// as one file per key) with the join that names missing
/// ranks and the diagnosis of a failed collective, and the collective headers compared across ranks
/// before any data moves (Note [Collective headers]). Internal; no Gloo or CUDA type appears here. The
/// backends are distributed/process_group_gloo.cpp and distributed/process_group_nccl.cpp.
#pragma once
#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tensorgrad/distributed/backends.h"

namespace tg {
namespace distributed {

class TCPStore;

namespace detail {

/// The key-value store of one group (env:// or file://), with its keys prefixed by the generation so
/// that a second group in the same process never reads the first one's keys, and the liveness query
/// behind the error messages (Note [Rendezvous] in tcp_store.cpp). file:// keeps one file per key in
/// the folder, written under a temporary name and renamed, as Gloo's FileStore does, and a lock file
/// per rank held for the life of the group.
class GroupStore {
 public:
  explicit GroupStore(const Rendezvous& r);
  ~GroupStore();
  GroupStore(const GroupStore&) = delete;
  GroupStore& operator=(const GroupStore&) = delete;

  /// Says this rank leaves on purpose, then lets go of the store.
  void leave();

  void set(const std::string& key, const std::vector<char>& data);
  /// key's value, waiting up to the group's timeout for it.
  std::vector<char> get(const std::string& key);
  /// Waits until every key is set; after timeout a DistributedError names the keys still missing.
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout);
  bool check(const std::string& key);

  /// The ranks known to have exited without leaving the group.
  std::vector<int> departed();

  /// Every rank announces itself, then waits for the others, naming the ones still missing at the
  /// timeout (a backend's own rendezvous would only say that a key is missing).
  void join();

  /// Describes a failed operation `op` (with its sequence number seq when in_collective): the rank
  /// that exited when one did, else (when timed_out inside a collective) the ranks that did not reach
  /// it: each rank that timed out marks itself in the store and waits a moment for the others' marks.
  /// backend_what is the transport's own message, quoted as "(<backend>: <first line>)".
  std::string diagnose(const char* op, int64_t seq, bool in_collective, bool timed_out, const std::string& backend,
                       const std::string& backend_what);

  /// This rank's address on its connection to rank 0's TCP store (env://), or "127.0.0.1" (file://).
  std::string local_address() const;

  const Rendezvous& rendezvous() const { return r_; }

 private:
  std::string key_path(const std::string& key) const;
  std::string lock_path(int rank) const;

  Rendezvous r_;
  std::string prefix_;
  std::unique_ptr<TCPStore> tcp_;
  int lock_fd_ = -1;
};

// See Note [Collective headers] in group_common.cpp.
constexpr int kHeaderWords = 16;
enum OpCode : int64_t { kAllReduce = 1, kBroadcast, kAllGather, kBarrier };
const char* op_name(int64_t op);

/// One rank's header of a collective: the op, its sequence number, t's dtype and shape (t may be null
/// for a barrier), and arg (the root or the reduce op). Raises when t is undefined.
std::array<int64_t, kHeaderWords> make_header(int64_t op, int64_t seq, const RawTensor* t, int64_t arg);

/// Compares every rank's header (all: world_size rows of kHeaderWords, rank order) with rank 0's and
/// raises the same DistributedError on every rank, naming each rank's arguments, when any differs.
void compare_headers(int64_t op, int64_t seq, const std::vector<int64_t>& all, int world_size);

/// ReduceOp::AVG needs a floating dtype (every backend); raises otherwise.
void check_reduce_op(const RawTensor& t, ReduceOp op);

}  // namespace detail
}  // namespace distributed
}  // namespace tg
