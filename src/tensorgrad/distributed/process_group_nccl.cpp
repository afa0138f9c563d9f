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

/// This rank's GPU: LOCAL_RANK when set (one rank per GPU, as tools/tgrun and torchrun start them),
/// else the calling thread's current device.
int pick_device() {
  const int count = cuda::device_count();
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
    comm_.reset();
    store_->leave();
  }

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

  Rendezvous r_;
  int device_;
  std::unique_ptr<GroupStore> store_;
  std::unique_ptr<cuda::nccl::Communicator> comm_;
  int64_t seq_ = 0;      // collectives called so far: part of the header, names a late rank's collective
  std::string broken_;   // the failure that closed the group, empty while usable
};

}  // namespace

std::unique_ptr<ProcessGroup> make_nccl_group(const Rendezvous& r) { return std::make_unique<NcclGroup>(r); }

}  // namespace detail
}  // namespace distributed
}  // namespace tg
