// distributed/process_group_gloo.cpp: the Gloo backend of tg::distributed: rendezvous through the
// group's store (env:// or file://, distributed/group_common.h), the collectives through Gloo's
// algorithms over its TCP transport, failures turned into a DistributedError naming the rank by the
// store's diagnosis. Compiled only when CMake found Gloo; the frontend is distributed/process_group.cpp.
#include <signal.h>

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "tensorgrad/distributed/group_common.h"
#include "tensorgrad/core/error.h"
#include "tensorgrad/prim/prim.h"
#include "tensorgrad/core/shape.h"

namespace tg {
namespace distributed {
namespace detail {

namespace {

using ms = std::chrono::milliseconds;

/// Gloo's view of the group's store (distributed/group_common.h): Gloo's rendezvous reads and
/// writes the addresses of every rank's sockets through it.
class GlooStore : public gloo::rendezvous::Store {
 public:
  explicit GlooStore(GroupStore& s) : s_(s) {}
  void set(const std::string& key, const std::vector<char>& data) override { s_.set(key, data); }
  std::vector<char> get(const std::string& key) override { return s_.get(key); }
  void wait(const std::vector<std::string>& keys) override { s_.wait(keys, s_.rendezvous().timeout); }
  void wait(const std::vector<std::string>& keys, const ms& timeout) override { s_.wait(keys, timeout); }

 private:
  GroupStore& s_;
};

/// The interface the Gloo device listens on: GLOO_SOCKET_IFNAME when set (as in PyTorch), else the
/// address this rank reaches rank 0's store from (env://), else loopback (file://: one machine).
gloo::transport::tcp::attr device_attr(const GroupStore& store) {
  gloo::transport::tcp::attr a;
  if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME"); ifname != nullptr && *ifname != '\0') {
    a.iface = ifname;
  } else {
    a.hostname = store.local_address();
  }
  return a;
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
  explicit GlooGroup(const Rendezvous& r) : r_(r), store_(std::make_unique<GroupStore>(r)) {
    store_->join();
    try {
      auto attr = device_attr(*store_);
      device_ = gloo::transport::tcp::CreateDevice(attr);
      auto ctx = std::make_shared<gloo::rendezvous::Context>(r.rank, r.world_size);
      ctx->setTimeout(r.timeout);
      GlooStore gloo_store(*store_);
      ctx->connectFullMesh(gloo_store, device_);
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

  void all_reduce(RawTensor& t, ReduceOp op) override {
    check_reduce_op(t, op);
    check_headers(kAllReduce, &t, static_cast<int64_t>(op));
    if (r_.world_size == 1 || t.numel() == 0) return;
    RawTensor buf = staging(t);
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
      RawTensor avg = prim::mul(buf, 1.0 / r_.world_size);
      if (buf.storage() == t.storage()) prim::copy_(buf, avg);
      else buf = avg;
    }
    finish(t, buf);
  }

  void broadcast(RawTensor& t, int root) override {
    TG_CHECK(root >= 0 && root < r_.world_size, DistributedError, "broadcast: root ", root,
             " is out of range for world size ", r_.world_size);
    check_headers(kBroadcast, &t, root);
    if (r_.world_size == 1 || t.numel() == 0) return;
    RawTensor buf = staging(t);
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

  void all_gather(std::vector<RawTensor>& out, const RawTensor& t) override {
    check_headers(kAllGather, &t, 0);
    const std::size_t bytes = static_cast<std::size_t>(t.numel()) * dtype_size(t.dtype());
    RawTensor in = t.to(Device::cpu()).contiguous();
    RawTensor all = RawTensor::empty(Shape{static_cast<int64_t>(r_.world_size) * std::max<int64_t>(t.numel(), 1)}, t.dtype());
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
      RawTensor part = all.narrow(0, r * t.numel(), t.numel()).view(t.shape());
      out[r] = t.device().is_cpu() ? part.clone() : part.to(t.device());
    }
  }

  void barrier() override {
    check_headers(kBarrier, nullptr, 0);
    // the header exchange is itself an all-gather: every rank has reached this point
  }

 private:
  /// A contiguous CPU tensor holding t's values: t itself when it already is one.
  static RawTensor staging(const RawTensor& t) {
    if (t.device().is_cpu() && t.is_contiguous() && t.offset() == 0) return t;
    return t.to(Device::cpu()).contiguous();
  }
  /// Writes the collective's result buf back into t when they differ.
  static void finish(RawTensor& t, const RawTensor& buf) {
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
    const bool timed_out = gloo_what.find("imed out") != std::string::npos;
    return store_->diagnose(op, seq_, in_collective, timed_out, "gloo", gloo_what);
  }

  /// See Note [Collective headers] (distributed/group_common.cpp).
  void check_headers(int64_t op, const RawTensor* t, int64_t arg) {
    check_usable(op_name(op));
    ++seq_;
    std::array<int64_t, kHeaderWords> h = make_header(op, seq_, t, arg);
    if (r_.world_size == 1) return;
    std::vector<int64_t> all(static_cast<std::size_t>(kHeaderWords) * r_.world_size);
    run(op_name(op), [&] {
      gloo::AllgatherOptions opts(context_);
      opts.setInput(h.data(), kHeaderWords);
      opts.setOutput(all.data(), all.size());
      opts.setTimeout(r_.timeout);
      opts.setTag(tag_);
      gloo::allgather(opts);
    });
    compare_headers(op, seq_, all, r_.world_size);
  }

  SigpipeIgnored sigpipe_;   // first member: ignored before any socket opens, restored after all close
  Rendezvous r_;
  std::unique_ptr<GroupStore> store_;
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
