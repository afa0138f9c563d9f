// distributed/process_group_nccl.cpp: the NCCL backend of tg::distributed, for CUDA tensors: rank 0
// makes NCCL's unique id and publishes it through the group's store (env:// or file://,
// distributed/group_common.h), every rank joins the communicator on its device, and each collective
// all-gathers the collective headers on the device (Note [Collective headers]) before its data moves.
// Compiled only with the CUDA backend; NCCL itself is opened at run time by backend/cuda/nccl.cpp.
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "tensorgrad/core/accelerator.h"
#include "tensorgrad/backend/cuda/nccl.h"
#include "tensorgrad/distributed/group_common.h"
#include "tensorgrad/core/error.h"
#include "tensorgrad/prim/prim.h"
#include "tensorgrad/core/shape.h"

namespace tg {
namespace distributed {
namespace detail {

namespace {

// Note [Several ranks on one GPU]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// NCCL refuses two ranks of one communicator on the same GPU ("Duplicate GPU detected"): it finds
// them by their host hash and device. For tests on a machine with one GPU, TG_NCCL_RANKS_ON_DEVICE=N
// puts every rank on cuda:N, and each rank gets a host hash of its own through NCCL_HOSTID, with NCCL
// moving data over loopback sockets (NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_NET=Socket
// NCCL_SOCKET_IFNAME=lo): slow (milliseconds per collective), but the ranks run the real protocol.
// tools/tgrun --ranks-on-device N sets all of it, as the multi-rank tests of test_distributed.cpp do.
// Not for training: the ranks share one GPU's compute.

/// This rank's GPU: LOCAL_RANK when set (one rank per GPU, as tools/tgrun and torchrun start them),
/// else the calling thread's current device. TG_NCCL_RANKS_ON_DEVICE=N puts every rank on cuda:N
/// instead: a test-only mapping for running several ranks on one GPU (tools/tgrun --ranks-on-device,
/// Note [Several ranks on one GPU]).
int pick_device() {
  const int count = cuda::device_count();
  if (const char* d = std::getenv("TG_NCCL_RANKS_ON_DEVICE"); d != nullptr && *d != '\0') {
    char* end = nullptr;
    const long n = std::strtol(d, &end, 10);
    TG_CHECK(end != d && *end == '\0' && n >= 0 && n < count, DistributedError, "init_process_group: TG_NCCL_RANKS_ON_DEVICE='",
             d, "' is not a device index below ", count, " (the visible CUDA devices)");
    return static_cast<int>(n);
  }
  const char* v = std::getenv("LOCAL_RANK");
  if (v == nullptr || *v == '\0') return cuda::current_device();
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  TG_CHECK(end != v && *end == '\0' && n >= 0, DistributedError, "init_process_group: LOCAL_RANK='", v,
           "' is not a non-negative integer");
  TG_CHECK(n < count, DistributedError, "init_process_group: backend 'nccl' runs one rank per GPU, but LOCAL_RANK=", n,
           " and only ", count, count == 1 ? " CUDA device is" : " CUDA devices are", " visible");
  return static_cast<int>(n);
}

/// distributed::ReduceOp as the NCCL wrapper of the backend floor spells it.
cuda::nccl::RedOp nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::SUM: return cuda::nccl::RedOp::Sum;
    case ReduceOp::AVG: return cuda::nccl::RedOp::Avg;
    case ReduceOp::PRODUCT: return cuda::nccl::RedOp::Product;
    case ReduceOp::MIN: return cuda::nccl::RedOp::Min;
    case ReduceOp::MAX: return cuda::nccl::RedOp::Max;
  }
  return cuda::nccl::RedOp::Sum;
}

// Note [Queued collectives]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// all_reduce waits on the host twice: for the header gather (Note [Collective headers]) and for the
// data. all_reduce_async, which DistributedDataParallel uses for its buckets, waits for neither: it
// queues the header all-gather and the data all-reduce on the device's stream and returns. wait() of
// any of them waits once for everything queued (with the timeout), then reads all the gathered
// headers in one copy and compares them, so a step's buckets cost one wait and one small copy however
// many there are. The headers still name a mismatch on every rank, but only after the data moved; a
// mismatch in size that NCCL cannot finish shows as a failure or a timeout, which wait() then explains
// with the headers when they disagree. The group's waiting collectives first wait for queued ones.
class NcclGroup;

class NcclWork final : public Work {
 public:
  NcclWork(NcclGroup& g, int64_t seq);
  void wait() override;

 private:
  std::weak_ptr<NcclGroup*> group_;
  int64_t seq_;
};

class NcclGroup final : public ProcessGroup {
 public:
  explicit NcclGroup(const Rendezvous& r) : r_(r), device_(pick_device()), store_(std::make_unique<GroupStore>(r)) {
    store_->join();
    std::string id;
    if (r.rank == 0) {
      id = cuda::nccl::unique_id();
      store_->set("nccl_id", std::vector<char>(id.begin(), id.end()));
    } else {
      const std::vector<char> v = store_->get("nccl_id");
      id.assign(v.begin(), v.end());
    }
    try {
      comm_ = std::make_unique<cuda::nccl::Communicator>(device_, id, r.rank, r.world_size, r.timeout);
    } catch (const DistributedError& e) {
      // NCCL's own reason when it refused; after a timeout, the store may know which rank is gone
      if (std::strstr(e.what(), "not ready within") == nullptr) throw;
      throw DistributedError(store_->diagnose("init_process_group", 0, false, true, "nccl", e.what()));
    }
  }
  ~NcclGroup() override {
    try {
      wait_queued(seq_);
    } catch (const Error&) {   // a failure nobody waited for: the communicator is aborted below
    }
    self_.reset();
    comm_.reset();
    store_->leave();
  }

  /// Waits for every collective queued up to sequence number seq and checks their headers (Note
  /// [Queued collectives]); nothing when they were waited for already.
  void wait_queued(int64_t seq) {
    if (seq <= waited_ || pending_.empty()) return;
    check_usable("wait");
    std::vector<Pending> done;
    done.swap(pending_);
    waited_ = seq_;
    // the headers gathered so far, read back by the same wait as the collectives
    std::vector<RawTensor> parts;
    for (const Pending& p : done) parts.push_back(p.headers);
    std::vector<char> words;
    const cuda::nccl::WaitResult w = comm_->wait(prim::cat(parts, 0), &words);
    std::string mismatch;
    if (w.ok) {
      mismatch = compare_pending(done, words);
    } else if (!w.timed_out) {   // a failure: the headers may say why, if their gathers completed
      try {
        const RawTensor all = prim::cat(parts, 0).to(Device::cpu());
        const char* b = static_cast<const char*>(all.raw_data());
        mismatch = compare_pending(done, std::vector<char>(b, b + all.numel() * static_cast<int64_t>(sizeof(int64_t))));
      } catch (const Error&) {
      }
    }
    if (!mismatch.empty()) {
      broken_ = mismatch;
      throw DistributedError(mismatch);
    }
    if (w.ok) return;
    broken_ = store_->diagnose(op_name(done.front().op), done.front().seq, true, w.timed_out, "nccl", w.what);
    throw DistributedError(broken_);
  }

  std::shared_ptr<NcclGroup*> self() const { return self_; }

  int rank() const override { return r_.rank; }
  int size() const override { return r_.world_size; }
  std::string backend() const override { return "nccl"; }

  void all_reduce(RawTensor& t, ReduceOp op) override {
    check_tensor("all_reduce", t);
    check_reduce_op(t, op);
    exchange_headers(kAllReduce, &t, static_cast<int64_t>(op));
    if (t.numel() == 0) return;
    RawTensor buf = staging(t);
    run("all_reduce", [&] { return comm_->all_reduce(buf, nccl_op(op)); });
    finish(t, buf);
  }

  void broadcast(RawTensor& t, int root) override {
    TG_CHECK(root >= 0 && root < r_.world_size, DistributedError, "broadcast: root ", root,
             " is out of range for world size ", r_.world_size);
    check_tensor("broadcast", t);
    exchange_headers(kBroadcast, &t, root);
    if (t.numel() == 0) return;
    RawTensor buf = staging(t);
    run("broadcast", [&] { return comm_->broadcast(buf, root); });
    finish(t, buf);
  }

  std::unique_ptr<Work> all_reduce_async(RawTensor& t, ReduceOp op) override {
    check_tensor("all_reduce", t);
    check_reduce_op(t, op);
    check_usable("all_reduce");
    // Note [Queued collectives]: the header is gathered on the device and read at wait()
    Pending p;
    p.seq = ++seq_;
    p.op = kAllReduce;
    const std::array<int64_t, kHeaderWords> h = make_header(kAllReduce, p.seq, &t, static_cast<int64_t>(op));
    RawTensor mine = RawTensor::empty(Shape{kHeaderWords}, kInt64);
    std::memcpy(mine.raw_data(), h.data(), sizeof h);
    const Device dev = Device::cuda(device_);
    const RawTensor mine_dev = mine.to(dev);   // from pageable memory: staged, no wait
    p.headers = RawTensor::empty(Shape{static_cast<int64_t>(kHeaderWords) * r_.world_size}, kInt64, dev);
    prim::fill_(p.headers, 0.0);   // rows a failed gather did not write stay 0: "not read" (compare_pending)
    p.tensor = t;
    pending_.push_back(p);
    issue("all_reduce", [&] { return comm_->all_gather(mine_dev, pending_.back().headers); });
    if (t.numel() > 0) {
      const RawTensor buf = staging(t);
      issue("all_reduce", [&] { return comm_->all_reduce(buf, nccl_op(op)); });
      finish(t, buf);   // queued after the collective on the same stream
    }
    return std::make_unique<NcclWork>(*this, p.seq);
  }

  void all_gather(std::vector<RawTensor>& out, const RawTensor& t) override {
    check_tensor("all_gather", t);
    exchange_headers(kAllGather, &t, 0);
    const int64_t n = t.numel();
    RawTensor in = staging(t);
    RawTensor all = RawTensor::empty(Shape{static_cast<int64_t>(r_.world_size) * std::max<int64_t>(n, 1)}, t.dtype(), t.device());
    if (n > 0) run("all_gather", [&] { return comm_->all_gather(in, all); });
    out.resize(r_.world_size);
    for (int r = 0; r < r_.world_size; ++r) out[r] = all.narrow(0, r * n, n).view(t.shape()).clone();
  }

  void barrier() override {
    exchange_headers(kBarrier, nullptr, 0);
    // the header exchange is an all-gather waited for: every rank has reached this point
  }

 private:
  /// NCCL moves CUDA tensors of this rank's device only.
  void check_tensor(const char* op, const RawTensor& t) const {
    TG_CHECK(t.defined(), DistributedError, op, ": the tensor is undefined");
    TG_CHECK(t.device().is_cuda(), DistributedError, op, ": backend 'nccl' needs CUDA tensors (Tensors must be CUDA and "
             "dense), got a tensor on ", t.device().str(), "; use backend 'gloo' for CPU tensors");
    const int index = t.device().has_index() ? t.device().index() : cuda::current_device();
    TG_CHECK(index == device_, DistributedError, op, ": the tensor is on cuda:", index, " but rank ", r_.rank,
             "'s NCCL group runs on cuda:", device_, " (LOCAL_RANK, or the device current at init_process_group)");
  }

  /// A contiguous tensor on this device holding t's values: t itself when it already is one.
  static RawTensor staging(const RawTensor& t) { return t.is_contiguous() ? t : t.contiguous(); }
  /// Writes the collective's result buf back into t when they differ.
  static void finish(RawTensor& t, const RawTensor& buf) {
    if (buf.storage() == t.storage()) return;
    prim::copy_(t, buf);
  }

  void check_usable(const char* op) const {
    TG_CHECK(broken_.empty(), DistributedError, op, ": the process group failed earlier (", broken_,
             "); call destroy_process_group() and init_process_group() again");
  }

  /// Queues f's collective, then waits for it (Note [NCCL timeouts] in backend/cuda/nccl.cpp); a failure or a
  /// timeout breaks the group and raises, naming the rank when the store knows it.
  template <class F>
  void run(const char* op, F&& f) {
    check_usable(op);
    cuda::nccl::WaitResult w;
    try {
      w = f();
    } catch (const Error& e) {
      w = {false, false, e.what()};
      comm_->abort();
    }
    if (w.ok) w = comm_->wait();
    if (w.ok) return;
    broken_ = store_->diagnose(op, seq_, true, w.timed_out, "nccl", w.what);
    throw DistributedError(broken_);
  }

  /// See Note [Collective headers] (distributed/group_common.cpp): gathered on the device, read back
  /// once the gather completed.
  void exchange_headers(int64_t op, const RawTensor* t, int64_t arg) {
    check_usable(op_name(op));
    wait_queued(seq_);
    ++seq_;
    const std::array<int64_t, kHeaderWords> h = make_header(op, seq_, t, arg);
    RawTensor mine = RawTensor::empty(Shape{kHeaderWords}, kInt64);
    std::memcpy(mine.raw_data(), h.data(), sizeof h);
    const Device dev = Device::cuda(device_);
    RawTensor mine_dev = mine.to(dev);
    RawTensor all_dev = RawTensor::empty(Shape{static_cast<int64_t>(kHeaderWords) * r_.world_size}, kInt64, dev);
    run(op_name(op), [&] { return comm_->all_gather(mine_dev, all_dev); });
    const RawTensor all = all_dev.to(Device::cpu());
    std::vector<int64_t> words(static_cast<std::size_t>(kHeaderWords) * r_.world_size);
    std::memcpy(words.data(), all.raw_data(), words.size() * sizeof(int64_t));
    compare_headers(op, seq_, words, r_.world_size);
  }

  /// A collective queued by all_reduce_async: its headers' gather on the device, and its tensor kept
  /// alive until it is waited for.
  struct Pending {
    int64_t seq = 0, op = 0;
    RawTensor headers, tensor;
  };

  /// Queues f's collective without waiting for it; a failure breaks the group and raises.
  template <class F>
  void issue(const char* op, F&& f) {
    cuda::nccl::WaitResult w;
    try {
      w = f();
    } catch (const Error& e) {
      w = {false, false, e.what()};
      comm_->abort();
    }
    if (w.ok) return;
    pending_.clear();
    broken_ = store_->diagnose(op, seq_, true, w.timed_out, "nccl", w.what);
    throw DistributedError(broken_);
  }

  /// Compares the gathered headers of the collectives in `done` (all: their bytes, in order) and
  /// returns the message of the first mismatch, "" when every rank agreed or a row was never written.
  std::string compare_pending(const std::vector<Pending>& done, const std::vector<char>& all) const {
    const std::size_t n = static_cast<std::size_t>(kHeaderWords) * static_cast<std::size_t>(r_.world_size);
    if (all.size() != done.size() * n * sizeof(int64_t)) return "";
    for (std::size_t i = 0; i < done.size(); ++i) {
      std::vector<int64_t> words(n);
      std::memcpy(words.data(), all.data() + i * n * sizeof(int64_t), n * sizeof(int64_t));
      for (int r = 0; r < r_.world_size; ++r)
        if (words[static_cast<std::size_t>(r) * kHeaderWords] == 0) return "";   // a row the gather never wrote
      try {
        compare_headers(done[i].op, done[i].seq, words, r_.world_size);
      } catch (const DistributedError& e) {
        return e.what();
      }
    }
    return "";
  }

  Rendezvous r_;
  int device_;
  std::unique_ptr<GroupStore> store_;
  std::unique_ptr<cuda::nccl::Communicator> comm_;
  int64_t seq_ = 0;      // collectives called so far: part of the header, names a late rank's collective
  std::string broken_;   // the failure that closed the group, empty while usable
  std::vector<Pending> pending_;   // queued by all_reduce_async, not waited for yet
  int64_t waited_ = 0;             // every collective up to this sequence number has been waited for
  std::shared_ptr<NcclGroup*> self_ = std::make_shared<NcclGroup*>(this);   // NcclWork's view of the group
};

NcclWork::NcclWork(NcclGroup& g, int64_t seq) : group_(g.self()), seq_(seq) {}

void NcclWork::wait() {
  const std::shared_ptr<NcclGroup*> g = group_.lock();
  TG_CHECK(g != nullptr, DistributedError, "Work::wait: the process group of this all_reduce was destroyed first "
           "(destroy_process_group waits for queued collectives itself)");
  (*g)->wait_queued(seq_);
}

}  // namespace

std::unique_ptr<ProcessGroup> make_nccl_group(const Rendezvous& r) { return std::make_unique<NcclGroup>(r); }

}  // namespace detail
}  // namespace distributed
}  // namespace tg
