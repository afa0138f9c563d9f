// tests/cuda_emulator/nccl.cpp: the CUDA emulator's NCCL: communicators bound to the device current at
// their creation, the non-blocking creation and finalization that answer ncclInProgress until they
// are done (so the caller's polling runs), and all_reduce / broadcast / all_gather queued on the
// stream. A world of one rank copies (every reduction is the identity); several ranks, one process
// each, meet in a folder (Note [NCCL ranks on the emulator]). Buffers must lie in device memory of the
// communicator's device and the stream must belong to it (what NCCL would fault on). With
// TG_CUDA_EMULATE_NCCL_STALL=1 (Note [Emulator settings]) a collective answers ncclInProgress and
// never completes, as one whose peer never arrives does on a non-blocking communicator.
// src/tensorgrad/backend/cuda/nccl.cpp points its table here.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "emulator.h"
#include "nccl.h"
#include "tensorgrad/core/half.h"

// Note [NCCL ranks on the emulator]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Each rank is a process with its own emulated devices, so the ranks of a communicator exchange their
// data through files in a folder named by the unique id (in the temporary folder): ncclGetUniqueId
// makes a random name, and each rank's ncclCommInitRankConfig writes join.<rank> (its pid). A
// non-blocking creation stays ncclInProgress until every rank has joined. A collective is queued on
// the stream like a kernel; when it runs, rank r writes op.<n>.<r> (what it was called with and its
// send buffer; written under a temporary name and renamed, so a reader never sees half a file) for
// its n-th collective, waits until every rank's op.<n> is there, checks that they agree (the same
// collective, type, count, reduction and root; otherwise ncclInvalidUsage), and computes the result
// from the files in rank order, so every rank gets the same bits. A rank at its n-th collective has
// finished its (n-1)-th, for which every rank wrote its file after finishing its (n-2)-th: so op.<n-2>
// files have been read by everyone and are removed then. While it waits, the collective fails with
// ncclRemoteError when a peer process is gone or a rank aborted its communicator (abort.<rank>); it
// gives up after TG_CUDA_EMULATE_NCCL_PATIENCE_MS (60 s by default) and then behaves as a stalled
// collective (in progress for ever, until ncclCommAbort), since a host thread cannot be interrupted
// inside the call that runs the stream's work the way a GPU kernel is by an abort from the host.
// Finalization writes fin.<rank> and completes once every rank has; the last rank to be destroyed (or
// aborted) removes the folder.

struct ncclComm {
  int device = 0;
  ncclResult_t state = ncclSuccess;    // ncclInProgress while a non-blocking creation or finalization is not done
  bool stalled = false;   // a collective that can never complete: in progress for ever
  int nranks = 1, rank = 0;
  std::string dir;        // the ranks' folder (several ranks only)
  std::uint64_t issued = 0;                // collectives queued by this rank
  bool finalizing = false;
  ncclResult_t error = ncclSuccess;        // a collective's failure, reported by ncclCommGetAsyncError
  std::vector<long> peers;                 // each rank's pid, once all have joined
};

namespace {

namespace fs = std::filesystem;
using Lock = std::lock_guard<std::recursive_mutex>;
using Clock = std::chrono::steady_clock;

constexpr char kIdPrefix[] = "tensorgrad CUDA emulator ";

std::set<const ncclComm*>& comms() {
  static auto* c = new std::set<const ncclComm*>();   // never destroyed, like the runtime's state
  return *c;
}

std::size_t type_size(ncclDataType_t t) {
  switch (t) {
    case ncclInt8: case ncclUint8: return 1;
    case ncclFloat16: case ncclBfloat16: return 2;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    case ncclInt64: case ncclUint64: case ncclFloat64: return 8;
    default: return 0;
  }
}

bool env_is(const char* name, const char* value) {
  const char* v = std::getenv(name);
  return v != nullptr && std::strcmp(v, value) == 0;
}

std::chrono::milliseconds patience() {
  const char* v = std::getenv("TG_CUDA_EMULATE_NCCL_PATIENCE_MS");
  if (v == nullptr || *v == '\0') return std::chrono::milliseconds(60000);
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  if (*end != '\0' || n < 1) {
    tg_emu::report(std::string("TG_CUDA_EMULATE_NCCL_PATIENCE_MS='") + v + "' is not a positive integer; 60000 used");
    return std::chrono::milliseconds(60000);
  }
  return std::chrono::milliseconds(n);
}

// ---- files of the ranks' folder

/// Writes data to path whole: under a temporary name, then renamed.
bool write_file(const std::string& path, const std::string& data) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f.write(data.data(), static_cast<std::streamsize>(data.size()))) return false;
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  return !ec;
}

bool read_file(const std::string& path, std::string* data) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  std::ostringstream ss;
  ss << f.rdbuf();
  *data = ss.str();
  return true;
}

bool exists(const std::string& path) {
  std::error_code ec;
  return fs::exists(path, ec);
}

std::string rank_file(const ncclComm* c, const std::string& what, int rank) {
  return c->dir + "/" + what + "." + std::to_string(rank);
}
std::string op_file(const ncclComm* c, std::uint64_t n, int rank) {
  return c->dir + "/op." + std::to_string(n) + "." + std::to_string(rank);
}

/// Whether process pid still runs (a zombie, killed but not yet reaped, does not).
bool alive(long pid) {
  if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) return false;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return true;   // no /proc: trust kill()
  const std::size_t close = line.rfind(')');
  return close == std::string::npos || close + 2 >= line.size() || line[close + 2] != 'Z';
}

/// Why the ranks cannot go on, or "" while they can: a rank aborted, or a peer process is gone.
std::string broken(const ncclComm* c) {
  for (int r = 0; r < c->nranks; ++r)
    if (r != c->rank && exists(rank_file(c, "abort", r))) return "rank " + std::to_string(r) + " aborted its communicator";
  for (int r = 0; r < static_cast<int>(c->peers.size()); ++r)
    if (r != c->rank && !alive(c->peers[static_cast<std::size_t>(r)]))
      return "rank " + std::to_string(r) + " (pid " + std::to_string(c->peers[static_cast<std::size_t>(r)]) + ") is gone";
  return "";
}

/// Whether every rank has written its `what` file (join, fin); reads the pids when what is "join".
bool all_there(ncclComm* c, const std::string& what) {
  for (int r = 0; r < c->nranks; ++r)
    if (!exists(rank_file(c, what, r))) return false;
  if (what == "join" && c->peers.empty()) {
    for (int r = 0; r < c->nranks; ++r) {
      std::string pid;
      read_file(rank_file(c, "join", r), &pid);
      c->peers.push_back(std::atol(pid.c_str()));
    }
  }
  return true;
}

/// A rank leaves the folder; the last one to leave removes it.
void leave(ncclComm* c) {
  if (c->nranks == 1) return;
  write_file(rank_file(c, "left", c->rank), "");
  for (int r = 0; r < c->nranks; ++r)
    if (!exists(rank_file(c, "left", r))) return;
  std::error_code ec;
  fs::remove_all(c->dir, ec);
}

// ---- arithmetic of the reductions, in each type (float16 and bfloat16 rounded after every step, with
// the library's own conversions of core/half.h)

template <class T>
T combine(T a, T b, ncclRedOp_t op) {
  if constexpr (std::is_integral_v<T>) {   // wrapping, as the GPU's integer arithmetic (no signed overflow)
    using U = std::make_unsigned_t<T>;
    if (op == ncclSum || op == ncclAvg) return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
    if (op == ncclProd) return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
  }
  switch (op) {
    case ncclSum: case ncclAvg: return static_cast<T>(a + b);
    case ncclProd: return static_cast<T>(a * b);
    case ncclMax: return a < b ? b : a;
    case ncclMin: return b < a ? b : a;
    default: return a;
  }
}

/// out = the reduction of the ranks' arrays (parts, rank order) of n elements of T.
template <class T>
void reduce_as(const std::vector<const char*>& parts, char* out, std::size_t n, ncclRedOp_t op) {
  for (std::size_t i = 0; i < n; ++i) {
    T acc;
    std::memcpy(&acc, parts[0] + i * sizeof(T), sizeof(T));
    for (std::size_t r = 1; r < parts.size(); ++r) {
      T v;
      std::memcpy(&v, parts[r] + i * sizeof(T), sizeof(T));
      acc = combine(acc, v, op);
    }
    if (op == ncclAvg) acc = static_cast<T>(acc / static_cast<T>(parts.size()));
    std::memcpy(out + i * sizeof(T), &acc, sizeof(T));
  }
}

/// The same for a 16-bit float type, through float with a rounding after every operation.
template <float (*ToFloat)(std::uint16_t), std::uint16_t (*FromFloat)(float)>
void reduce_16(const std::vector<const char*>& parts, char* out, std::size_t n, ncclRedOp_t op) {
  for (std::size_t i = 0; i < n; ++i) {
    std::uint16_t h;
    std::memcpy(&h, parts[0] + i * 2, 2);
    float acc = ToFloat(h);
    for (std::size_t r = 1; r < parts.size(); ++r) {
      std::memcpy(&h, parts[r] + i * 2, 2);
      acc = ToFloat(FromFloat(combine(acc, ToFloat(h), op)));
    }
    if (op == ncclAvg) acc = ToFloat(FromFloat(acc / static_cast<float>(parts.size())));
    h = FromFloat(acc);
    std::memcpy(out + i * 2, &h, 2);
  }
}

void reduce(ncclDataType_t type, const std::vector<const char*>& parts, char* out, std::size_t n, ncclRedOp_t op) {
  switch (type) {
    case ncclInt8: reduce_as<std::int8_t>(parts, out, n, op); break;
    case ncclUint8: reduce_as<std::uint8_t>(parts, out, n, op); break;
    case ncclInt32: reduce_as<std::int32_t>(parts, out, n, op); break;
    case ncclUint32: reduce_as<std::uint32_t>(parts, out, n, op); break;
    case ncclInt64: reduce_as<std::int64_t>(parts, out, n, op); break;
    case ncclUint64: reduce_as<std::uint64_t>(parts, out, n, op); break;
    case ncclFloat32: reduce_as<float>(parts, out, n, op); break;
    case ncclFloat64: reduce_as<double>(parts, out, n, op); break;
    case ncclFloat16: reduce_16<tg::detail::half_bits_to_float, tg::detail::float_to_half_bits>(parts, out, n, op); break;
    case ncclBfloat16: reduce_16<tg::detail::bfloat16_bits_to_float, tg::detail::float_to_bfloat16_bits>(parts, out, n, op); break;
    default: break;
  }
}

// ---- collectives

enum Kind : std::int64_t { kAllReduce = 1, kBroadcast, kAllGather };
const char* kind_name(std::int64_t k) {
  return k == kAllReduce ? "ncclAllReduce" : k == kBroadcast ? "ncclBroadcast" : "ncclAllGather";
}

/// What a rank called its collective with: the first bytes of its op file, compared across ranks.
struct Call {
  std::int64_t kind, type, op, count, root;
  bool operator==(const Call& o) const {
    return kind == o.kind && type == o.type && op == o.op && count == o.count && root == o.root;
  }
  std::string str() const {
    std::string s = std::string(kind_name(kind)) + " of " + std::to_string(count) + " elements of type " +
                    std::to_string(type);
    if (kind == kAllReduce) s += " with op " + std::to_string(op);
    if (kind == kBroadcast) s += " from root " + std::to_string(root);
    return s;
  }
};

/// Runs (on the stream, under the API lock) the n-th collective of a communicator of several ranks:
/// Note [NCCL ranks on the emulator].
void exchange(ncclComm* c, std::uint64_t n, Call call, const void* send, void* recv, std::size_t send_bytes) {
  if (comms().count(c) == 0) return;   // aborted or destroyed before its queued work ran
  if (c->stalled || c->error != ncclSuccess) return;   // an earlier collective failed: nothing moves
  std::string mine(sizeof call, '\0');
  std::memcpy(&mine[0], &call, sizeof call);
  mine.append(static_cast<const char*>(send), send_bytes);
  if (!write_file(op_file(c, n, c->rank), mine)) {
    tg_emu::report("NCCL rank " + std::to_string(c->rank) + ": cannot write its part to " + c->dir);
    c->error = ncclSystemError;
    return;
  }
  const auto deadline = Clock::now() + patience();
  for (int r = 0, turn = 0; r < c->nranks;) {
    if (exists(op_file(c, n, r))) {
      ++r;
      continue;
    }
    if (++turn % 64 == 0) {
      const std::string why = broken(c);
      if (!why.empty()) {
        tg_emu::report(std::string(kind_name(call.kind)) + " #" + std::to_string(n) + " of rank " +
                       std::to_string(c->rank) + ": " + why);
        c->error = ncclRemoteError;
        return;
      }
      if (Clock::now() >= deadline) {
        tg_emu::report(std::string(kind_name(call.kind)) + " #" + std::to_string(n) + " of rank " +
                       std::to_string(c->rank) + ": rank " + std::to_string(r) + " did not arrive within " +
                       std::to_string(patience().count()) + " ms (TG_CUDA_EMULATE_NCCL_PATIENCE_MS): stalled");
        c->stalled = true;
        return;
      }
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  std::vector<std::string> files(static_cast<std::size_t>(c->nranks));
  std::vector<const char*> parts;
  for (int r = 0; r < c->nranks; ++r) {
    std::string& f = files[static_cast<std::size_t>(r)];
    Call theirs{};
    if (!read_file(op_file(c, n, r), &f) || f.size() < sizeof theirs) {
      c->error = ncclSystemError;
      return;
    }
    std::memcpy(&theirs, f.data(), sizeof theirs);
    if (!(theirs == call)) {
      tg_emu::report("collective #" + std::to_string(n) + ": rank " + std::to_string(c->rank) + " called " +
                     call.str() + ", rank " + std::to_string(r) + " called " + theirs.str());
      c->error = ncclInvalidUsage;
      return;
    }
    parts.push_back(f.data() + sizeof theirs);
  }
  char* out = static_cast<char*>(recv);
  if (call.kind == kAllReduce) {
    reduce(static_cast<ncclDataType_t>(call.type), parts, out, static_cast<std::size_t>(call.count),
           static_cast<ncclRedOp_t>(call.op));
  } else if (call.kind == kBroadcast) {
    std::memmove(out, parts[static_cast<std::size_t>(call.root)], send_bytes);
  } else {
    for (int r = 0; r < c->nranks; ++r) std::memcpy(out + r * send_bytes, parts[static_cast<std::size_t>(r)], send_bytes);
  }
  if (n >= 2) {
    std::error_code ec;
    fs::remove(op_file(c, n - 2, c->rank), ec);
  }
}

/// Validates a collective's communicator, stream and buffers, then queues it: with one rank the copy
/// of send into recv (nothing when they are the same buffer), with several the exchange.
ncclResult_t collective(const Call& call, const void* send, void* recv, std::size_t send_bytes, ncclComm_t comm,
                        cudaStream_t stream) {
  std::size_t recv_bytes = send_bytes;
  Lock lock(tg_emu::api_mutex());
  const char* name = kind_name(call.kind);
  tg_emu::trace(std::string(name) + " " + std::to_string(send_bytes) + " bytes");
  if (comms().count(comm) == 0 || comm->state != ncclSuccess || comm->stalled || comm->finalizing)
    return ncclInvalidArgument;
  CUstream_st* s = tg_emu::stream_of(stream);
  if (s == nullptr || tg_emu::device_of(s) != comm->device) {
    tg_emu::report(std::string(name) + ": the stream does not belong to the communicator's cuda:" +
                   std::to_string(comm->device));
    return ncclInvalidArgument;
  }
  if (env_is("TG_CUDA_EMULATE_NCCL_STALL", "1")) {
    comm->stalled = true;
    return ncclInProgress;
  }
  if (call.kind == kBroadcast && call.root >= comm->nranks) return ncclInvalidArgument;
  if (call.kind == kAllGather) recv_bytes = send_bytes * static_cast<std::size_t>(comm->nranks);
  if (send_bytes > 0 && (!tg_emu::in_device_memory(send, send_bytes, comm->device) ||
                         !tg_emu::in_device_memory(recv, recv_bytes, comm->device))) {
    tg_emu::report(std::string(name) + ": a buffer runs outside device memory of cuda:" + std::to_string(comm->device));
    return ncclInvalidArgument;
  }
  if (comm->nranks == 1) {
    if (send_bytes > 0 && send != recv) tg_emu::submit(s, [send, recv, send_bytes] { std::memmove(recv, send, send_bytes); });
    return ncclSuccess;
  }
  const std::uint64_t n = comm->issued++;
  tg_emu::submit(s, [comm, n, call, send, recv, send_bytes] { exchange(comm, n, call, send, recv, send_bytes); });
  return ncclSuccess;
}

std::string random_hex(int digits) {
  std::random_device rd;
  std::mt19937_64 g((static_cast<std::uint64_t>(rd()) << 32) ^ rd() ^ static_cast<std::uint64_t>(::getpid()));
  static const char* hex = "0123456789abcdef";
  std::string s;
  for (int i = 0; i < digits; ++i) s += hex[g() % 16];
  return s;
}

}  // namespace

ncclResult_t ncclGetVersion(int* version) {
  if (version == nullptr) return ncclInvalidArgument;
  *version = NCCL_MAJOR * 10000 + NCCL_MINOR * 100 + NCCL_PATCH;
  return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  if (id == nullptr) return ncclInvalidArgument;
  std::memset(id->internal, 0, sizeof id->internal);
  const std::string s = kIdPrefix + random_hex(24);
  std::memcpy(id->internal, s.data(), s.size());
  return ncclSuccess;
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank, ncclConfig_t* config) {
  if (comm == nullptr || nranks < 1 || rank < 0 || rank >= nranks) return ncclInvalidArgument;
  Lock lock(tg_emu::api_mutex());
  const bool blocking = config == nullptr || config->blocking != 0;
  auto* c = new ncclComm();
  c->device = tg_emu::current_device();
  c->state = blocking ? ncclSuccess : ncclInProgress;
  c->nranks = nranks;
  c->rank = rank;
  if (nranks > 1) {
    const std::string key(id.internal, strnlen(id.internal, sizeof id.internal));
    if (key.rfind(kIdPrefix, 0) != 0 || key.size() != sizeof kIdPrefix - 1 + 24) {
      tg_emu::report("ncclCommInitRankConfig: the unique id was not made by this emulator's ncclGetUniqueId");
      delete c;
      return ncclInvalidArgument;
    }
    std::error_code ec;
    c->dir = (fs::temp_directory_path(ec) / ("tg-emu-nccl-" + key.substr(sizeof kIdPrefix - 1))).string();
    fs::create_directories(c->dir, ec);
    if (exists(rank_file(c, "join", rank)) || !write_file(rank_file(c, "join", rank), std::to_string(::getpid()))) {
      tg_emu::report("ncclCommInitRankConfig: rank " + std::to_string(rank) + " cannot join in " + c->dir +
                     " (joined twice?)");
      delete c;
      return ncclInvalidUsage;
    }
    if (blocking) {   // waits for the other ranks, as NCCL's blocking creation does (with the emulator's patience)
      const auto deadline = Clock::now() + patience();
      while (!all_there(c, "join")) {
        if (Clock::now() >= deadline) {
          leave(c);
          delete c;
          return ncclSystemError;
        }
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
    }
  }
  comms().insert(c);
  *comm = c;
  return c->state;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* async_error) {
  Lock lock(tg_emu::api_mutex());
  if (comms().count(comm) == 0 || async_error == nullptr) return ncclInvalidArgument;
  if (comm->error != ncclSuccess) {
    *async_error = comm->error;
    return ncclSuccess;
  }
  if (comm->stalled) {
    *async_error = ncclInProgress;
    return ncclSuccess;
  }
  if (comm->state == ncclInProgress) {
    if (comm->nranks == 1) {
      comm->state = ncclSuccess;   // creation and finalization complete once they have been asked about
    } else {
      // every rank there first: one that finalized and then exited is not a failure
      if (all_there(comm, comm->finalizing ? "fin" : "join")) {
        comm->state = ncclSuccess;
      } else if (const std::string why = comm->peers.empty() ? "" : broken(comm); !why.empty()) {
        tg_emu::report("NCCL rank " + std::to_string(comm->rank) + ": " + why);
        comm->error = ncclRemoteError;
      }
    }
  }
  *async_error = comm->error != ncclSuccess ? comm->error : comm->state;
  return ncclSuccess;
}

ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  Lock lock(tg_emu::api_mutex());
  if (comms().count(comm) == 0 || comm->stalled || comm->state != ncclSuccess) return ncclInvalidArgument;
  comm->finalizing = true;
  comm->state = ncclInProgress;   // non-blocking: done once every rank finalized (ncclCommGetAsyncError)
  if (comm->nranks > 1) write_file(rank_file(comm, "fin", comm->rank), "");
  return ncclInProgress;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  Lock lock(tg_emu::api_mutex());
  if (comms().erase(comm) == 0) return ncclInvalidArgument;
  leave(comm);
  delete comm;
  return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t comm) {
  Lock lock(tg_emu::api_mutex());
  if (comms().count(comm) == 0) return ncclInvalidArgument;
  if (comm->nranks > 1) write_file(rank_file(comm, "abort", comm->rank), "");   // the peers' collectives fail
  return ncclCommDestroy(comm);
}

const char* ncclGetErrorString(ncclResult_t result) {
  switch (result) {
    case ncclSuccess: return "no error";
    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unhandled error";
  }
}

ncclResult_t ncclAllReduce(const void* send, void* recv, size_t count, ncclDataType_t type, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream) {
  if (type_size(type) == 0 || op < ncclSum || op >= ncclNumOps) return ncclInvalidArgument;
  const std::size_t bytes = count * type_size(type);
  return collective(Call{kAllReduce, type, op, static_cast<std::int64_t>(count), 0}, send, recv, bytes, comm, stream);
}

ncclResult_t ncclBroadcast(const void* send, void* recv, size_t count, ncclDataType_t type, int root, ncclComm_t comm,
                           cudaStream_t stream) {
  if (type_size(type) == 0 || root < 0) return ncclInvalidArgument;
  const std::size_t bytes = count * type_size(type);
  return collective(Call{kBroadcast, type, 0, static_cast<std::int64_t>(count), root}, send, recv, bytes, comm, stream);
}

ncclResult_t ncclAllGather(const void* send, void* recv, size_t count, ncclDataType_t type, ncclComm_t comm,
                           cudaStream_t stream) {
  if (type_size(type) == 0) return ncclInvalidArgument;
  const std::size_t bytes = count * type_size(type);
  return collective(Call{kAllGather, type, 0, static_cast<std::int64_t>(count), 0}, send, recv, bytes, comm, stream);
}
