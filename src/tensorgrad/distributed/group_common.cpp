// distributed/group_common.cpp: the store, join and failure diagnosis of a process group, and the
// collective headers (Note [Collective headers]); shared by the Gloo backend
// (distributed/process_group_gloo.cpp) and the NCCL one (distributed/process_group_nccl.cpp). Plain
// POSIX, no Gloo and no CUDA: the transports that move headers and tensors are in the backends.
#include "tensorgrad/distributed/group_common.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

#include "tensorgrad/distributed/tcp_store.h"
#include "tensorgrad/core/error.h"
#include "tensorgrad/core/shape.h"

namespace tg {
namespace distributed {
namespace detail {

namespace {

using Clock = std::chrono::steady_clock;
using ms = std::chrono::milliseconds;

std::string join_ranks(const std::vector<int>& ranks) {
  std::string s;
  for (std::size_t i = 0; i < ranks.size(); ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  return s;
}
std::string rank_word(const std::vector<int>& ranks) { return ranks.size() == 1 ? "rank " : "ranks "; }

std::string first_line(const std::string& s) {
  const auto at = s.find('\n');
  return at == std::string::npos ? s : s.substr(0, at);
}

}  // namespace

GroupStore::GroupStore(const Rendezvous& r) : r_(r), prefix_("tg" + std::to_string(r.generation) + "_") {
  if (r.file) {
    std::error_code ec, dir_ec;   // the error_code overloads: the others throw std::filesystem_error
    std::filesystem::create_directories(r.path, ec);
    TG_CHECK(std::filesystem::is_directory(r.path, dir_ec), DistributedError, "init_process_group: file:// folder '",
             r.path, "' cannot be created", ec ? ": " + ec.message() : std::string());
    // This rank's lock file: held (flock) for the life of the group; the kernel drops it when the
    // process dies, which is how a file:// rank learns that another one exited.
    lock_fd_ = ::open(lock_path(r.rank).c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    TG_CHECK(lock_fd_ >= 0 && ::flock(lock_fd_, LOCK_EX | LOCK_NB) == 0, DistributedError,
             "init_process_group: rank ", r.rank, " cannot lock ", lock_path(r.rank),
             " (is another process running as rank ", r.rank, " on this folder?)");
  } else {
    tcp_ = std::make_unique<TCPStore>(r.host, r.port, r.rank == 0, r.rank, r.timeout);
  }
}

GroupStore::~GroupStore() { leave(); }

void GroupStore::leave() {
  if (tcp_) {
    try {
      tcp_->close();
    } catch (const std::exception&) {   // rank 0 already gone: nothing to tell
    }
  }
  if (lock_fd_ >= 0) {
    const int fd = ::open((lock_path(r_.rank) + ".bye").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd >= 0) ::close(fd);
    ::close(lock_fd_);
    lock_fd_ = -1;
  }
}

std::string GroupStore::key_path(const std::string& key) const {
  return (std::filesystem::path(r_.path) / (prefix_ + key)).string();
}

std::string GroupStore::lock_path(int rank) const {
  return (std::filesystem::path(r_.path) / (prefix_ + "alive_" + std::to_string(rank) + ".lock")).string();
}

void GroupStore::set(const std::string& key, const std::vector<char>& data) {
  if (tcp_) return tcp_->set(prefix_ + key, std::string(data.begin(), data.end()));
  // Written under a name no reader looks at, then renamed: a reader sees the whole value or nothing.
  const std::string path = key_path(key);
  const std::string tmp = path + ".tmp" + std::to_string(r_.rank);
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f.write(data.data(), static_cast<std::streamsize>(data.size()));
    TG_CHECK(f.good(), DistributedError, "process group store: cannot write ", tmp);
  }
  TG_CHECK(std::rename(tmp.c_str(), path.c_str()) == 0, DistributedError, "process group store: cannot rename ", tmp,
           " to ", path);
}

bool GroupStore::check(const std::string& key) {
  if (tcp_) return tcp_->check({prefix_ + key});
  std::error_code ec;   // a path that cannot be examined counts as absent; the wait times out naming the key
  return std::filesystem::exists(key_path(key), ec);
}

void GroupStore::wait(const std::vector<std::string>& keys, ms timeout) {
  if (tcp_) {
    std::vector<std::string> k;
    for (const auto& key : keys) k.push_back(prefix_ + key);
    return tcp_->wait(k, timeout);
  }
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    std::vector<std::string> missing;
    for (const auto& key : keys)
      if (!check(key)) missing.push_back(key);
    if (missing.empty()) return;
    if (Clock::now() >= deadline) {
      std::string names;
      for (const auto& key : missing) names += (names.empty() ? "" : ", ") + key;
      throw DistributedError("process group store " + r_.describe() + ": timed out after " +
                             std::to_string(timeout.count()) + " ms waiting for " + names);
    }
    std::this_thread::sleep_for(ms(2));
  }
}

std::vector<char> GroupStore::get(const std::string& key) {
  if (tcp_) {
    const std::string v = tcp_->get(prefix_ + key);
    return std::vector<char>(v.begin(), v.end());
  }
  wait({key}, r_.timeout);
  std::ifstream f(key_path(key), std::ios::binary);
  TG_CHECK(f.good(), DistributedError, "process group store: cannot read ", key_path(key));
  return std::vector<char>(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

std::vector<int> GroupStore::departed() {
  std::vector<int> out;
  if (tcp_) {
    try {
      return tcp_->departed_ranks();
    } catch (const DistributedError&) {
      return {0};   // the store itself is gone: rank 0 serves it
    }
  }
  for (int r = 0; r < r_.world_size; ++r) {
    if (r == r_.rank) continue;
    const int fd = ::open(lock_path(r).c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) continue;   // never joined
    std::error_code ec;
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0 && !std::filesystem::exists(lock_path(r) + ".bye", ec)) out.push_back(r);
    ::close(fd);   // drops the lock taken for the test
  }
  return out;
}

std::string GroupStore::local_address() const { return tcp_ ? tcp_->local_address() : "127.0.0.1"; }

void GroupStore::join() {
  set("join_" + std::to_string(r_.rank), {'1'});
  const auto deadline = Clock::now() + r_.timeout;
  std::vector<int> missing;
  for (int r = 0; r < r_.world_size; ++r) missing.push_back(r);
  for (;;) {
    std::vector<int> still;
    for (int r : missing)
      if (!check("join_" + std::to_string(r))) still.push_back(r);
    missing.swap(still);
    if (missing.empty()) return;
    if (Clock::now() >= deadline)
      throw DistributedError("init_process_group: " + rank_word(missing) + join_ranks(missing) + " did not join within " +
                             std::to_string(r_.timeout.count()) + " ms (rank " + std::to_string(r_.rank) +
                             " of world size " + std::to_string(r_.world_size) + ", rendezvous " + r_.describe() + ")");
    std::this_thread::sleep_for(ms(5));
  }
}

std::string GroupStore::diagnose(const char* op, int64_t seq, bool in_collective, bool timed_out,
                                 const std::string& backend, const std::string& backend_what) {
  const std::string where = std::string(op) + (in_collective ? " #" + std::to_string(seq) : std::string()) + ": ";
  const std::string quoted = " (" + backend + ": " + first_line(backend_what) + ")";
  std::vector<int> dead;
  // The kernel closes a dead process's sockets together, but the store may hear of it a moment
  // after the transport did: ask again for up to half a second.
  const auto until = Clock::now() + std::min<ms>(ms(500), r_.timeout);
  for (;;) {
    try {
      dead = departed();
    } catch (const std::exception&) {
    }
    if (!dead.empty() || Clock::now() >= until) break;
    std::this_thread::sleep_for(ms(10));
  }
  if (!dead.empty())
    return where + rank_word(dead) + join_ranks(dead) + (dead.size() == 1 ? " has" : " have") +
           " exited (its connection closed) while rank " + std::to_string(r_.rank) + " waited for it" + quoted;
  if (timed_out && in_collective) {
    std::vector<int> late;
    try {
      const std::string mark = "late_" + std::to_string(seq) + "_";
      set(mark + std::to_string(r_.rank), {'1'});
      const auto grace = Clock::now() + std::min<ms>(ms(500), r_.timeout);
      for (;;) {
        late.clear();
        for (int r = 0; r < r_.world_size; ++r)
          if (r != r_.rank && !check(mark + std::to_string(r))) late.push_back(r);
        if (late.empty() || Clock::now() >= grace) break;
        std::this_thread::sleep_for(ms(10));
      }
    } catch (const std::exception&) {
    }
    if (!late.empty())
      return where + rank_word(late) + join_ranks(late) + " did not reach this collective within " +
             std::to_string(r_.timeout.count()) + " ms (stuck, or calling collectives in another order)" + quoted;
  }
  return where + (timed_out ? "timed out after " + std::to_string(r_.timeout.count()) + " ms waiting for the other ranks"
                            : std::string("a connection to another rank failed")) + quoted;
}

// Note [Collective headers]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// Gloo and NCCL trust their callers: ranks that pass different sizes read past buffers or hang, and
// ranks that call different collectives deadlock until the timeout. So every collective first
// all-gathers a fixed header of kHeaderWords int64 from each rank (the collective, its sequence
// number, the dtype, the shape, the root or reduce op) and compares them with rank 0's; on any
// difference every rank raises the same DistributedError naming each rank's arguments, before any
// data moves. Each backend moves the headers with its own all-gather (Gloo over TCP; NCCL on the
// device, then read back once the gather completed within the timeout). The header costs one small
// round trip per collective (about 50 us on loopback). NCCL's queued all-reduce, which
// DistributedDataParallel's buckets use, reads its headers later, together with the others queued
// (Note [Queued collectives] in process_group_nccl.cpp).
namespace {

constexpr int kMaxHeaderDims = 9;

const char* reduce_name(int64_t r) {
  static const char* names[] = {"SUM", "AVG", "PRODUCT", "MIN", "MAX"};
  return r >= 0 && r < 5 ? names[r] : "?";
}

std::string describe(const int64_t* h) {
  const int64_t op = h[0];
  std::string s = op_name(op);
  if (op == kBarrier) return s;
  s += std::string(" of ") + dtype_name(static_cast<DType>(h[2])) + " [";
  for (int64_t d = 0; d < std::min<int64_t>(h[3], kMaxHeaderDims); ++d) s += (d ? ", " : "") + std::to_string(h[5 + d]);
  if (h[3] > kMaxHeaderDims) s += ", ...";
  s += "]";
  if (op == kAllReduce) s += std::string(" with ") + reduce_name(h[4]);
  if (op == kBroadcast) s += " from root " + std::to_string(h[4]);
  return s;
}

}  // namespace

const char* op_name(int64_t op) {
  switch (op) {
    case kAllReduce: return "all_reduce";
    case kBroadcast: return "broadcast";
    case kAllGather: return "all_gather";
    case kBarrier: return "barrier";
    default: return "?";
  }
}

std::array<int64_t, kHeaderWords> make_header(int64_t op, int64_t seq, const RawTensor* t, int64_t arg) {
  std::array<int64_t, kHeaderWords> h{};
  h[0] = op;
  h[1] = seq;
  h[4] = arg;
  if (t != nullptr) {
    TG_CHECK(t->defined(), DistributedError, op_name(op), ": the tensor is undefined");
    h[2] = static_cast<int64_t>(t->dtype());
    h[3] = t->dim();
    int64_t rest = 1;
    for (int64_t d = 0; d < t->dim(); ++d) {
      if (d < kMaxHeaderDims) h[5 + d] = t->size(d);
      else rest = rest * 1000003 + t->size(d);
    }
    h[kHeaderWords - 2] = rest;
    h[kHeaderWords - 1] = t->numel();
  }
  return h;
}

void compare_headers(int64_t op, int64_t seq, const std::vector<int64_t>& all, int world_size) {
  bool same = true;
  for (int r = 1; r < world_size && same; ++r)
    same = std::equal(all.begin(), all.begin() + kHeaderWords, all.begin() + r * kHeaderWords);
  if (same) return;
  std::string msg = std::string(op_name(op)) + " #" + std::to_string(seq) +
                    ": the ranks called different collectives or passed tensors that differ:";
  for (int r = 0; r < world_size; ++r) {
    const int64_t* hr = all.data() + r * kHeaderWords;
    msg += std::string(r ? ";" : "") + " rank " + std::to_string(r) + " called " + describe(hr);
    if (hr[1] != seq) msg += " as its collective #" + std::to_string(hr[1]);
  }
  throw DistributedError(msg);
}

void check_reduce_op(const RawTensor& t, ReduceOp op) {
  TG_CHECK(!t.defined() || op != ReduceOp::AVG || is_floating(t.dtype()), DistributedError,
           "all_reduce: ReduceOp::AVG needs a floating dtype, got ", dtype_name(t.dtype()));
}

}  // namespace detail
}  // namespace distributed
}  // namespace tg
