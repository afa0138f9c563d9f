// distributed/process_group_gloo.cpp: the Gloo backend of tg::distributed: rendezvous through our
// TCPStore (env://) or Gloo's FileStore (file://), the collectives through Gloo's algorithms over its
// TCP transport, and the diagnosis that turns a failed collective into a DistributedError naming the
// rank. Compiled only when CMake found Gloo; the frontend is distributed/process_group.cpp.
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <thread>

#include "tensorgrad/distributed/backends.h"
#include "tensorgrad/distributed/tcp_store.h"
#include "tensorgrad/engine/error.h"
#include "tensorgrad/engine/prim.h"
#include "tensorgrad/engine/shape.h"

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

/// Gloo's FileStore with its key test made public (the join loop polls single keys).
struct FileStore : gloo::rendezvous::FileStore {
  using gloo::rendezvous::FileStore::FileStore;
  bool has(const std::string& key) { return check({key}); }
};

/// The key-value store of one group (env:// or file://), with its keys prefixed by the generation so
/// that a second group in the same process never reads the first one's keys, and the liveness query
/// behind the error messages (Note [Rendezvous] in tcp_store.cpp).
class Store : public gloo::rendezvous::Store {
 public:
  explicit Store(const Rendezvous& r) : r_(r), prefix_("tg" + std::to_string(r.generation) + "_") {
    if (r.file) {
      std::error_code ec;
      std::filesystem::create_directories(r.path, ec);
      TG_CHECK(std::filesystem::is_directory(r.path), DistributedError, "init_process_group: file:// folder '", r.path,
               "' cannot be created", ec ? ": " + ec.message() : std::string());
      file_ = std::make_unique<FileStore>(r.path);
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
  ~Store() override { leave(); }

  /// Says this rank leaves on purpose, then lets go of the store.
  void leave() {
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

  void set(const std::string& key, const std::vector<char>& data) override {
    if (tcp_) return tcp_->set(prefix_ + key, std::string(data.begin(), data.end()));
    file_->set(prefix_ + key, data);
  }
  std::vector<char> get(const std::string& key) override {
    if (tcp_) {
      const std::string v = tcp_->get(prefix_ + key);
      return std::vector<char>(v.begin(), v.end());
    }
    file_->wait({prefix_ + key}, r_.timeout);
    return file_->get(prefix_ + key);
  }
  void wait(const std::vector<std::string>& keys) override { wait(keys, r_.timeout); }
  void wait(const std::vector<std::string>& keys, const ms& timeout) override {
    std::vector<std::string> k;
    for (const auto& key : keys) k.push_back(prefix_ + key);
    if (tcp_) return tcp_->wait(k, timeout);
    file_->wait(k, timeout);
  }
  bool check(const std::string& key) {
    if (tcp_) return tcp_->check({prefix_ + key});
    return file_->has(prefix_ + key);
  }

  /// The ranks known to have exited without leaving the group.
  std::vector<int> departed() {
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
      if (::flock(fd, LOCK_EX | LOCK_NB) == 0 && !std::filesystem::exists(lock_path(r) + ".bye")) out.push_back(r);
      ::close(fd);   // drops the lock taken for the test
    }
    return out;
  }

  /// The interface the Gloo device listens on: GLOO_SOCKET_IFNAME when set (as in PyTorch), else the
  /// address this rank reaches rank 0's store from (env://), else loopback (file://: one machine).
  gloo::transport::tcp::attr device_attr() const {
    gloo::transport::tcp::attr a;
    if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME"); ifname != nullptr && *ifname != '\0') {
      a.iface = ifname;
    } else {
      a.hostname = tcp_ ? tcp_->local_address() : "127.0.0.1";
    }
    return a;
  }

 private:
  std::string lock_path(int rank) const {
    return (std::filesystem::path(r_.path) / (prefix_ + "alive_" + std::to_string(rank) + ".lock")).string();
  }

  Rendezvous r_;
  std::string prefix_;
  std::unique_ptr<TCPStore> tcp_;
  std::unique_ptr<FileStore> file_;
  int lock_fd_ = -1;
};

// Note [Collective headers]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// Gloo trusts its callers: ranks that pass different sizes read past buffers or hang, and ranks that
// call different collectives deadlock until the timeout. So every collective first all-gathers a fixed
// header of kHeaderWords int64 from each rank (the collective, its sequence number, the dtype, the
// shape, the root or reduce op) and compares them with rank 0's; on any difference every rank raises
// the same DistributedError naming each rank's arguments, before any data moves. The header costs one
// small round trip per collective (about 50 us on loopback); DistributedDataParallel's buckets are
// large enough for it not to matter.
constexpr int kHeaderWords = 16;
constexpr int kMaxHeaderDims = 9;
enum OpCode : int64_t { kAllReduce = 1, kBroadcast, kAllGather, kBarrier };
const char* op_name(int64_t op) {
  switch (op) {
    case kAllReduce: return "all_reduce";
    case kBroadcast: return "broadcast";
    case kAllGather: return "all_gather";
    case kBarrier: return "barrier";
    default: return "?";
  }
}
const char* reduce_name(int64_t r) {
  static const char* names[] = {"SUM", "AVG", "PRODUCT", "MIN", "MAX"};
  return r >= 0 && r < 5 ? names[r] : "?";
}

/// c[i] = op(a[i], b[i]) for n elements of T: Gloo's reduction function for all_reduce.
template <class T, class Op>
void reduce_into(void* c, const void* a, const void* b, std::size_t n, Op op) {
  T* out = static_cast<T*>(c);
  const T* x = static_cast<const T*>(a);
  const T* y = static_cast<const T*>(b);
  for (std::size_t i = 0; i < n; ++i) out[i] = op(x[i], y[i]);
}

template <class T>
gloo::AllreduceOptions::Func reduce_fn(ReduceOp op) {
  // half-precision types compute in float; bool's sum is or and its product and
  using A = std::conditional_t<std::is_same<T, bool>::value || std::is_integral<T>::value || std::is_floating_point<T>::value, T, float>;
  switch (op) {
    case ReduceOp::SUM:
    case ReduceOp::AVG:
      return [](void* c, const void* a, const void* b, std::size_t n) {
        reduce_into<T>(c, a, b, n, [](T x, T y) { return static_cast<T>(static_cast<A>(x) + static_cast<A>(y)); });
      };
    case ReduceOp::PRODUCT:
      return [](void* c, const void* a, const void* b, std::size_t n) {
        reduce_into<T>(c, a, b, n, [](T x, T y) { return static_cast<T>(static_cast<A>(x) * static_cast<A>(y)); });
      };
    case ReduceOp::MIN:
      return [](void* c, const void* a, const void* b, std::size_t n) {
        reduce_into<T>(c, a, b, n, [](T x, T y) { return static_cast<A>(y) < static_cast<A>(x) ? y : x; });
      };
    case ReduceOp::MAX:
      return [](void* c, const void* a, const void* b, std::size_t n) {
        reduce_into<T>(c, a, b, n, [](T x, T y) { return static_cast<A>(x) < static_cast<A>(y) ? y : x; });
      };
  }
  return {};
}

// Note [SIGPIPE]
// ~~~~~~~~~~~~~~
// Gloo's TCP transport sends with writev(), which has no MSG_NOSIGNAL: a write to a rank that died
// delivers SIGPIPE, and its default action kills this process before Gloo's error (EPIPE) could reach
// the diagnosis that names the dead rank. Python ignores SIGPIPE at start-up, so PyTorch never meets
// this; a C++ program keeps the default. While any Gloo group exists, SIGPIPE is therefore ignored if
// its disposition is the default (a handler or SIG_IGN set by the program is left alone), and the
// default comes back when the last group is destroyed. The disposition is process-wide, as in Python.
class SigpipeIgnored {
 public:
  SigpipeIgnored() {
    std::lock_guard<std::mutex> lock(mutex());
    if (count()++ > 0) return;
    struct sigaction old {};
    sigaction(SIGPIPE, nullptr, &old);
    changed() = old.sa_handler == SIG_DFL && !(old.sa_flags & SA_SIGINFO);
    if (changed()) signal(SIGPIPE, SIG_IGN);
  }
  ~SigpipeIgnored() {
    std::lock_guard<std::mutex> lock(mutex());
    if (--count() > 0 || !changed()) return;
    struct sigaction now {};
    sigaction(SIGPIPE, nullptr, &now);
    if (now.sa_handler == SIG_IGN) signal(SIGPIPE, SIG_DFL);   // unless the program set its own since
  }
  SigpipeIgnored(const SigpipeIgnored&) = delete;
  SigpipeIgnored& operator=(const SigpipeIgnored&) = delete;

 private:
  static std::mutex& mutex() { static std::mutex m; return m; }
  static int& count() { static int n = 0; return n; }
  static bool& changed() { static bool c = false; return c; }
};

class GlooGroup final : public ProcessGroup {
 public:
  explicit GlooGroup(const Rendezvous& r) : r_(r), store_(std::make_unique<Store>(r)) {
    join();
    try {
      auto attr = store_->device_attr();
      device_ = gloo::transport::tcp::CreateDevice(attr);
      auto ctx = std::make_shared<gloo::rendezvous::Context>(r.rank, r.world_size);
      ctx->setTimeout(r.timeout);
      ctx->connectFullMesh(*store_, device_);
      context_ = std::move(ctx);
    } catch (const gloo::Exception& e) {
      throw DistributedError(diagnose("init_process_group", e.what(), false));
    }
  }
  ~GlooGroup() override {
    context_.reset();
    store_->leave();
  }

  int rank() const override { return r_.rank; }
  int size() const override { return r_.world_size; }
  std::string backend() const override { return "gloo"; }

  void all_reduce(Tensor& t, ReduceOp op) override {
    TG_CHECK(op != ReduceOp::AVG || is_floating(t.dtype()), DistributedError, "all_reduce: ReduceOp::AVG needs a floating "
             "dtype, got ", dtype_name(t.dtype()));
    check_headers(kAllReduce, &t, static_cast<int64_t>(op));
    if (r_.world_size == 1 || t.numel() == 0) return;
    Tensor buf = staging(t);
    run("all_reduce", [&] {
      dispatch_dtype(buf.dtype(), [&](auto z) {
        using T = decltype(z);
        gloo::AllreduceOptions typed(context_);
        typed.setOutput(static_cast<T*>(buf.raw_data()), static_cast<std::size_t>(buf.numel()));
        typed.setReduceFunction(reduce_fn<T>(op));
        typed.setTimeout(r_.timeout);
        typed.setTag(tag_);
        gloo::allreduce(typed);
      });
    });
    if (op == ReduceOp::AVG) {
      Tensor avg = prim::mul(buf, 1.0 / r_.world_size);
      if (buf.storage() == t.storage()) prim::copy_(buf, avg);
      else buf = avg;
    }
    finish(t, buf);
  }

  void broadcast(Tensor& t, int root) override {
    TG_CHECK(root >= 0 && root < r_.world_size, DistributedError, "broadcast: root ", root,
             " is out of range for world size ", r_.world_size);
    check_headers(kBroadcast, &t, root);
    if (r_.world_size == 1 || t.numel() == 0) return;
    Tensor buf = staging(t);
    run("broadcast", [&] {
      gloo::BroadcastOptions opts(context_);
      opts.setOutput(static_cast<uint8_t*>(buf.raw_data()), buf.numel() * dtype_size(buf.dtype()));
      opts.setRoot(root);
      opts.setTimeout(r_.timeout);
      opts.setTag(tag_);
      gloo::broadcast(opts);
    });
    finish(t, buf);
  }

  void all_gather(std::vector<Tensor>& out, const Tensor& t) override {
    check_headers(kAllGather, &t, 0);
    const std::size_t bytes = static_cast<std::size_t>(t.numel()) * dtype_size(t.dtype());
    Tensor in = t.to(Device::cpu()).contiguous();
    Tensor all = Tensor::empty(Shape{static_cast<int64_t>(r_.world_size) * std::max<int64_t>(t.numel(), 1)}, t.dtype());
    if (r_.world_size > 1 && bytes > 0) {
      run("all_gather", [&] {
        gloo::AllgatherOptions opts(context_);
        opts.setInput(static_cast<uint8_t*>(in.raw_data()), bytes);
        opts.setOutput(static_cast<uint8_t*>(all.raw_data()), bytes * r_.world_size);
        opts.setTimeout(r_.timeout);
        opts.setTag(tag_);
        gloo::allgather(opts);
      });
    } else if (bytes > 0) {
      std::memcpy(all.raw_data(), in.raw_data(), bytes);
    }
    out.resize(r_.world_size);
    for (int r = 0; r < r_.world_size; ++r) {
      Tensor part = all.narrow(0, r * t.numel(), t.numel()).view(t.shape());
      out[r] = t.device().is_cpu() ? part.clone() : part.to(t.device());
    }
  }

  void barrier() override {
    check_headers(kBarrier, nullptr, 0);
    // the header exchange is itself an all-gather: every rank has reached this point
  }

 private:
  /// Every rank announces itself, then waits for the others, naming the ones still missing at the
  /// timeout (Gloo's own rendezvous would only say that a key is missing).
  void join() {
    store_->set("join_" + std::to_string(r_.rank), {'1'});
    const auto deadline = Clock::now() + r_.timeout;
    std::vector<int> missing;
    for (int r = 0; r < r_.world_size; ++r) missing.push_back(r);
    for (;;) {
      std::vector<int> still;
      for (int r : missing)
        if (!store_->check("join_" + std::to_string(r))) still.push_back(r);
      missing.swap(still);
      if (missing.empty()) return;
      if (Clock::now() >= deadline)
        throw DistributedError("init_process_group: " + rank_word(missing) + join_ranks(missing) + " did not join within " +
                               std::to_string(r_.timeout.count()) + " ms (rank " + std::to_string(r_.rank) +
                               " of world size " + std::to_string(r_.world_size) + ", rendezvous " + r_.describe() + ")");
      std::this_thread::sleep_for(ms(5));
    }
  }

  /// A contiguous CPU tensor holding t's values: t itself when it already is one.
  static Tensor staging(const Tensor& t) {
    if (t.device().is_cpu() && t.is_contiguous() && t.offset() == 0) return t;
    return t.to(Device::cpu()).contiguous();
  }
  /// Writes the collective's result buf back into t when they differ.
  static void finish(Tensor& t, const Tensor& buf) {
    if (buf.storage() == t.storage()) return;
    prim::copy_(t, buf.to(t.device()));
  }

  void check_usable(const char* op) const {
    TG_CHECK(broken_.empty(), DistributedError, op, ": the process group failed earlier (", broken_,
             "); call destroy_process_group() and init_process_group() again");
  }

  template <class F>
  void run(const char* op, F&& f) {
    check_usable(op);
    try {
      f();
    } catch (const gloo::Exception& e) {
      fail(op, e.what());
    }
  }

  /// Describes a failed collective: the rank that exited when one did, else the ranks that did not
  /// reach this collective (each rank that timed out marks itself in the store, and waits a moment
  /// for the others' marks). Then the group is closed, so that its sockets close and the ranks still
  /// waiting on this one fail at once instead of at their own timeout.
  [[noreturn]] void fail(const char* op, const std::string& gloo_what) {
    const std::string what = diagnose(op, gloo_what, true);
    broken_ = what;
    context_.reset();
    throw DistributedError(what);
  }

  std::string diagnose(const char* op, const std::string& gloo_what, bool in_collective) {
    const std::string where = std::string(op) + (in_collective ? " #" + std::to_string(seq_) : std::string()) + ": ";
    const std::string gloo = " (gloo: " + first_line(gloo_what) + ")";
    const bool timed_out = gloo_what.find("imed out") != std::string::npos;
    std::vector<int> dead;
    // The kernel closes a dead process's sockets together, but the store may hear of it a moment
    // after Gloo did: ask again for up to half a second.
    const auto until = Clock::now() + std::min<ms>(ms(500), r_.timeout);
    for (;;) {
      try {
        dead = store_->departed();
      } catch (const std::exception&) {
      }
      if (!dead.empty() || Clock::now() >= until) break;
      std::this_thread::sleep_for(ms(10));
    }
    if (!dead.empty())
      return where + rank_word(dead) + join_ranks(dead) + (dead.size() == 1 ? " has" : " have") +
             " exited (its connection closed) while rank " + std::to_string(r_.rank) + " waited for it" + gloo;
    if (timed_out && in_collective) {
      std::vector<int> late;
      try {
        const std::string mark = "late_" + std::to_string(seq_) + "_";
        store_->set(mark + std::to_string(r_.rank), {'1'});
        const auto grace = Clock::now() + std::min<ms>(ms(500), r_.timeout);
        for (;;) {
          late.clear();
          for (int r = 0; r < r_.world_size; ++r)
            if (r != r_.rank && !store_->check(mark + std::to_string(r))) late.push_back(r);
          if (late.empty() || Clock::now() >= grace) break;
          std::this_thread::sleep_for(ms(10));
        }
      } catch (const std::exception&) {
      }
      if (!late.empty())
        return where + rank_word(late) + join_ranks(late) + " did not reach this collective within " +
               std::to_string(r_.timeout.count()) + " ms (stuck, or calling collectives in another order)" + gloo;
    }
    return where + (timed_out ? "timed out after " + std::to_string(r_.timeout.count()) + " ms waiting for the other ranks"
                              : std::string("a connection to another rank failed")) + gloo;
  }

  static std::string first_line(const std::string& s) {
    const auto at = s.find('\n');
    return at == std::string::npos ? s : s.substr(0, at);
  }

  static std::string describe(const int64_t* h) {
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

  /// See Note [Collective headers].
  void check_headers(int64_t op, const Tensor* t, int64_t arg) {
    check_usable(op_name(op));
    ++seq_;
    int64_t h[kHeaderWords] = {};
    h[0] = op;
    h[1] = seq_;
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
    if (r_.world_size == 1) return;
    std::vector<int64_t> all(static_cast<std::size_t>(kHeaderWords) * r_.world_size);
    run(op_name(op), [&] {
      gloo::AllgatherOptions opts(context_);
      opts.setInput(h, kHeaderWords);
      opts.setOutput(all.data(), all.size());
      opts.setTimeout(r_.timeout);
      opts.setTag(tag_);
      gloo::allgather(opts);
    });
    bool same = true;
    for (int r = 1; r < r_.world_size && same; ++r)
      same = std::equal(all.begin(), all.begin() + kHeaderWords, all.begin() + r * kHeaderWords);
    if (same) return;
    std::string msg = std::string(op_name(op)) + " #" + std::to_string(seq_) +
                      ": the ranks called different collectives or passed tensors that differ:";
    for (int r = 0; r < r_.world_size; ++r) {
      const int64_t* hr = all.data() + r * kHeaderWords;
      msg += std::string(r ? ";" : "") + " rank " + std::to_string(r) + " called " + describe(hr);
      if (hr[1] != seq_) msg += " as its collective #" + std::to_string(hr[1]);
    }
    throw DistributedError(msg);
  }

  SigpipeIgnored sigpipe_;   // first member: ignored before any socket opens, restored after all close
  Rendezvous r_;
  std::unique_ptr<Store> store_;
  std::shared_ptr<gloo::transport::Device> device_;
  std::shared_ptr<gloo::Context> context_;
  int64_t seq_ = 0;        // collectives called so far: part of the header, names a late rank's collective
  uint32_t tag_ = 0;       // one collective at a time: a single tag
  std::string broken_;     // the failure that closed the group, empty while usable
};

}  // namespace

std::unique_ptr<ProcessGroup> make_gloo_group(const Rendezvous& r) { return std::make_unique<GlooGroup>(r); }

}  // namespace detail
}  // namespace distributed
}  // namespace tg
