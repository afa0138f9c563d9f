// backend/cuda/nccl.cpp: NCCL opened at run time (its entry points resolved into one table, or, in the CUDA
// emulator build, pointed at the emulator's world-size-1 NCCL, tests/cuda_emulator/nccl.cpp) and the
// communicator behind the NCCL process group: collectives queued on the device's stream, waits that
// poll with a timeout. Host C++ (g++). The process group itself (store, headers, messages) is
// distributed/process_group_nccl.cpp.
#include "tensorgrad/backend/cuda/nccl.h"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstdlib>
#include <cstring>
#include <thread>

#include "tensorgrad/core/accelerator.h"
#include "tensorgrad/backend/cuda/context.cuh"
#include "tensorgrad/backend/cuda/libraries.h"
#include "tensorgrad/core/error.h"
#if !defined(TENSORGRAD_CUDA_EMULATE)
#include "tensorgrad/backend/cuda/loader.h"
#endif

namespace tg {
namespace cuda {
namespace nccl {

// Note [NCCL at run time]
// ~~~~~~~~~~~~~~~~~~~~~~~
// As cuBLAS (Note [CUDA at run time]), NCCL is never linked: a program built with the CUDA backend
// must start on a machine without NCCL, and the installed package must not name libnccl. nccl.h (from
// the CUDA toolkit) gives the function types; libnccl.so.2 is opened with dlopen the first time a
// program asks for the "nccl" backend (init_process_group or is_backend_available), looked for where
// the loader looks, then in $CUDA_HOME/lib64 and the toolkit tensorgrad was built against, or only at
// TG_NCCL_LIBRARY when that is set (a file name or a path). What is missing (a GPU, the library, an
// entry point) is said in unavailable_reason(), which init_process_group("nccl") raises.

namespace {

using Clock = std::chrono::steady_clock;

struct NcclApi {
  decltype(&::ncclGetVersion) get_version = nullptr;
  decltype(&::ncclGetUniqueId) get_unique_id = nullptr;
  decltype(&::ncclCommInitRankConfig) comm_init_rank_config = nullptr;
  decltype(&::ncclCommFinalize) comm_finalize = nullptr;
  decltype(&::ncclCommDestroy) comm_destroy = nullptr;
  decltype(&::ncclCommAbort) comm_abort = nullptr;
  decltype(&::ncclCommGetAsyncError) comm_get_async_error = nullptr;
  decltype(&::ncclGetErrorString) get_error_string = nullptr;
  decltype(&::ncclAllReduce) all_reduce = nullptr;
  decltype(&::ncclBroadcast) broadcast = nullptr;
  decltype(&::ncclAllGather) all_gather = nullptr;
};

struct Nccl {
  detail::LibraryStatus status;
  NcclApi api;
};

#if defined(TENSORGRAD_CUDA_EMULATE)
Nccl* load() {
  auto* n = new Nccl();   // never destroyed, as below
  n->status.loaded = true;
  n->status.path = "the world-size-1 NCCL of the tensorgrad CUDA emulator, tests/cuda_emulator/";
  NcclApi& a = n->api;
  a.get_version = &::ncclGetVersion;
  a.get_unique_id = &::ncclGetUniqueId;
  a.comm_init_rank_config = &::ncclCommInitRankConfig;
  a.comm_finalize = &::ncclCommFinalize;
  a.comm_destroy = &::ncclCommDestroy;
  a.comm_abort = &::ncclCommAbort;
  a.comm_get_async_error = &::ncclCommGetAsyncError;
  a.get_error_string = &::ncclGetErrorString;
  a.all_reduce = &::ncclAllReduce;
  a.broadcast = &::ncclBroadcast;
  a.all_gather = &::ncclAllGather;
  return n;
}
#else
template <class F>
bool resolve(void* h, const char* symbol, F* slot, detail::LibraryStatus* s) {
  void* p = nullptr;
  if (!detail::resolve_symbol(h, symbol, &p, s)) return false;
  *slot = reinterpret_cast<F>(p);
  return true;
}

Nccl* load() {
  auto* n = new Nccl();   // never destroyed: the table is used until the process exits
  const char* env = std::getenv("TG_NCCL_LIBRARY");
  const std::vector<std::string> names =
      env != nullptr && env[0] != 0 ? std::vector<std::string>{env} : detail::library_candidates("libnccl.so.2");
  void* h = detail::open_library(names, &n->status);
  if (h == nullptr) return n;
  NcclApi& a = n->api;
  detail::LibraryStatus* s = &n->status;
  // ncclCommInitRankConfig (non-blocking communicators) and ncclCommFinalize appeared in NCCL 2.14.
  const bool ok = resolve(h, "ncclGetVersion", &a.get_version, s) & resolve(h, "ncclGetUniqueId", &a.get_unique_id, s) &
                  resolve(h, "ncclCommInitRankConfig", &a.comm_init_rank_config, s) &
                  resolve(h, "ncclCommFinalize", &a.comm_finalize, s) & resolve(h, "ncclCommDestroy", &a.comm_destroy, s) &
                  resolve(h, "ncclCommAbort", &a.comm_abort, s) &
                  resolve(h, "ncclCommGetAsyncError", &a.comm_get_async_error, s) &
                  resolve(h, "ncclGetErrorString", &a.get_error_string, s) &
                  resolve(h, "ncclAllReduce", &a.all_reduce, s) & resolve(h, "ncclBroadcast", &a.broadcast, s) &
                  resolve(h, "ncclAllGather", &a.all_gather, s);
  if (!ok) n->status.loaded = false;
  return n;
}
#endif

const Nccl* state() noexcept {
  try {
    static const Nccl* n = load();
    return n;
  } catch (...) {
    return nullptr;
  }
}

std::string library_name() {
  const char* env = std::getenv("TG_NCCL_LIBRARY");
  return env != nullptr && env[0] != 0 ? std::string(env) + " (TG_NCCL_LIBRARY)" : std::string("libnccl.so.2");
}

const NcclApi& api() {
  const Nccl* n = state();
  TG_CHECK(n != nullptr && n->status.loaded, DistributedError, "NCCL could not be loaded: ", unavailable_reason());
  return n->api;
}

std::string error_text(ncclResult_t r) {
  const Nccl* n = state();
  const char* s = n != nullptr && n->api.get_error_string != nullptr ? n->api.get_error_string(r) : nullptr;
  return tg::detail::cat("ncclResult ", static_cast<int>(r), s != nullptr ? std::string(": ") + s : std::string());
}

bool to_nccl_type(DType d, ncclDataType_t* out) {
  switch (d) {
    case kFloat32: *out = ncclFloat32; return true;
    case kFloat64: *out = ncclFloat64; return true;
    case kFloat16: *out = ncclFloat16; return true;
    case kBFloat16: *out = ncclBfloat16; return true;
    case kInt64: *out = ncclInt64; return true;
    case kInt32: *out = ncclInt32; return true;
    case kInt8: *out = ncclInt8; return true;
    case kUInt8: case kBool: *out = ncclUint8; return true;
  }
  return false;
}

ncclRedOp_t to_nccl_op(RedOp op, DType d) {
  if (d == kBool) {   // a bool sum is "any", a product "all" (values stay 0 or 1), as in PyTorch
    if (op == RedOp::Sum || op == RedOp::Avg || op == RedOp::Max) return ncclMax;
    return ncclMin;
  }
  switch (op) {
    case RedOp::Sum: return ncclSum;
    case RedOp::Avg: return ncclAvg;
    case RedOp::Product: return ncclProd;
    case RedOp::Min: return ncclMin;
    case RedOp::Max: return ncclMax;
  }
  return ncclSum;
}

}  // namespace

std::string unavailable_reason() noexcept {
  try {
    std::string missing;
    if (!cuda::is_available()) {
      // the first line of info() says why: "CUDA: not available: no CUDA driver installed (...)"
      std::string why = cuda::info();
      why = why.substr(0, why.find('\n'));
      if (why.rfind("CUDA: ", 0) == 0) why = why.substr(6);
      missing = "no usable CUDA GPU (" + why + ")";
    }
    const Nccl* n = state();
    if (n == nullptr || !n->status.loaded) {
      if (!missing.empty()) missing += "; ";
      missing += n == nullptr ? std::string("out of memory while opening NCCL")
                              : tg::detail::cat("no ", library_name(), " could be loaded (", n->status.detail, ")");
    }
    return missing;
  } catch (...) {
    return "out of memory while looking for NCCL";
  }
}

std::string library_info() noexcept {
  try {
    const Nccl* n = state();
    if (n == nullptr || !n->status.loaded) return "not found (" + (n != nullptr ? n->status.detail : std::string("?")) + ")";
    int v = 0;
    n->api.get_version(&v);
    // NCCL_VERSION: major * 10000 + minor * 100 + patch since 2.9, major * 1000 + ... before
    const int major = v >= 10000 ? v / 10000 : v / 1000, minor = v >= 10000 ? v / 100 % 100 : v / 100 % 10,
              patch = v % 100;
    return tg::detail::cat(major, ".", minor, ".", patch, " (", n->status.path, ")");
  } catch (...) {
    return "?";
  }
}

std::string unique_id() {
  ncclUniqueId id;
  const ncclResult_t r = api().get_unique_id(&id);
  TG_CHECK(r == ncclSuccess, DistributedError, "init_process_group: ncclGetUniqueId failed (", error_text(r), ")");
  return std::string(id.internal, sizeof id.internal);
}

// Note [NCCL timeouts]
// ~~~~~~~~~~~~~~~~~~~~
// An NCCL collective whose peers never arrive spins on the GPU forever, and a blocking communicator's
// creation waits forever for the missing ranks. So the communicator is created non-blocking
// (config.blocking = 0) and nothing here blocks in NCCL or in a stream synchronization: creation and
// every call that answers ncclInProgress are finished by polling ncclCommGetAsyncError, and wait()
// records an event after the queued collectives and polls it, checking the communicator's error at
// each turn. When the timeout passes first, ncclCommAbort ends the kernels and frees the communicator,
// and the caller gets the reason (process_group_nccl.cpp turns it into a DistributedError naming the
// collective, the timeout and, when the store knows, the rank). The CUDA emulator's streams run their
// work only when synchronized (Note [Deferred streams]), so there wait() synchronizes the stream
// instead of polling an event that would never complete; its collectives of several ranks wait for
// their peers inside that synchronization, up to its patience, and then report through
// ncclCommGetAsyncError (Note [NCCL ranks on the emulator] in tests/cuda_emulator/nccl.cpp).
struct Communicator::Impl {
  int device = 0;
  int world_size = 1;
  ncclComm_t comm = nullptr;
  cudaEvent_t done = nullptr;
  std::chrono::milliseconds timeout{0};
  bool aborted = false;
  void* pinned = nullptr;          // wait(read_back, host)'s buffer, grown on demand
  std::size_t pinned_bytes = 0;

  void do_abort() noexcept {
    if (comm != nullptr && !aborted) {
      aborted = true;
      api().comm_abort(comm);
    }
  }

  /// Polls the communicator until it leaves ncclInProgress (or its deadline passes).
  WaitResult settle(ncclResult_t issued, Clock::time_point deadline) noexcept {
    ncclResult_t r = issued;
    while (r == ncclInProgress) {
      if (Clock::now() >= deadline) {
        do_abort();
        return {false, true, tg::detail::cat("NCCL did not complete within ", timeout.count(), " ms")};
      }
      std::this_thread::sleep_for(std::chrono::microseconds(50));
      if (api().comm_get_async_error(comm, &r) != ncclSuccess) break;
    }
    if (r == ncclSuccess) return {};
    do_abort();
    return {false, false, error_text(r)};
  }

  /// Waits (polling, Note [NCCL timeouts]) until the work queued on stream so far has run and the
  /// communicator reports no error, or until deadline; aborts on a failure or at the deadline.
  WaitResult wait_stream(cudaStream_t stream, Clock::time_point deadline) noexcept {
#if defined(TENSORGRAD_CUDA_EMULATE)
    cudaStreamSynchronize(stream);
#endif
    cudaError_t e = cudaEventRecord(done, stream);
    for (;;) {
      if (e == cudaSuccess) e = cudaEventQuery(done);
      if (e != cudaSuccess && e != cudaErrorNotReady) {
        cudaGetLastError();
        do_abort();
        return {false, false, tg::detail::cat("CUDA error ", cudaGetErrorString(e))};
      }
      // the communicator's own state too: a collective that failed or stalled (the emulator's ends
      // its stream work and reports through here) is not done even when the event is
      ncclResult_t r = ncclSuccess;
      api().comm_get_async_error(comm, &r);
      if (r != ncclSuccess && r != ncclInProgress) {
        do_abort();
        return {false, false, error_text(r)};
      }
      if (e == cudaSuccess && r == ncclSuccess) return {};
      if (Clock::now() >= deadline) {
        do_abort();
        return {false, true, tg::detail::cat("the collectives did not complete within ", timeout.count(), " ms")};
      }
      std::this_thread::sleep_for(std::chrono::microseconds(20));
      e = cudaSuccess;
    }
  }

  /// Calls NCCL (call: a function of the communicator returning an ncclResult_t) unless the
  /// communicator was aborted (then it no longer exists), and settles the result.
  template <class Call>
  WaitResult issue(Call&& call) noexcept {
    if (aborted) return {false, false, "the NCCL communicator was aborted after an earlier failure"};
    return settle(call(), Clock::now() + timeout);
  }
};

Communicator::Communicator(int device, const std::string& id, int rank, int world_size, std::chrono::milliseconds timeout)
    : impl_(std::make_unique<Impl>()) {
  TG_CHECK(id.size() == sizeof(ncclUniqueId), DistributedError, "init_process_group: the NCCL id from the store has ",
           id.size(), " bytes, expected ", sizeof(ncclUniqueId));
  const NcclApi& a = api();
  impl_->device = device;
  impl_->world_size = world_size;
  impl_->timeout = timeout;
  detail::DeviceGuard guard(device);
  detail::context(device);   // the device's stream exists before NCCL is bound to the device
  ncclUniqueId uid;
  std::memcpy(uid.internal, id.data(), sizeof uid.internal);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;   // Note [NCCL timeouts]
  const ncclResult_t r = a.comm_init_rank_config(&impl_->comm, world_size, uid, rank, &config);
  if (r != ncclSuccess && r != ncclInProgress) {
    if (impl_->comm != nullptr) impl_->do_abort();
    throw DistributedError(tg::detail::cat("init_process_group: ncclCommInitRankConfig failed for rank ", rank,
                                           " of world size ", world_size, " on cuda:", device, " (", error_text(r), ")"));
  }
  const WaitResult w = impl_->settle(r, Clock::now() + timeout);
  if (!w.ok)
    throw DistributedError(tg::detail::cat("init_process_group: NCCL's communicator (rank ", rank, " of world size ",
                                           world_size, " on cuda:", device, ") ",
                                           w.timed_out ? tg::detail::cat("was not ready within ", timeout.count(), " ms")
                                                       : "failed: " + w.what));
  const cudaError_t e = cudaEventCreateWithFlags(&impl_->done, cudaEventDisableTiming);
  if (e != cudaSuccess) {
    cudaGetLastError();
    impl_->do_abort();
    throw DistributedError(tg::detail::cat("init_process_group: cudaEventCreateWithFlags failed on cuda:", device, " (",
                                           cudaGetErrorString(e), ")"));
  }
}

Communicator::~Communicator() {
  if (impl_->comm != nullptr && !impl_->aborted) {
    // Finishes what is queued, then finalizes (non-blocking: polled with the timeout) and frees the
    // communicator; one that cannot finish (a peer is gone) is aborted instead.
    WaitResult w = wait();
    if (w.ok) w = impl_->issue([&] { return api().comm_finalize(impl_->comm); });
    if (w.ok) api().comm_destroy(impl_->comm);
  }
  if (impl_->done != nullptr) cudaEventDestroy(impl_->done);
  if (impl_->pinned != nullptr) cudaFreeHost(impl_->pinned);
}

int Communicator::device() const { return impl_->device; }

WaitResult Communicator::all_reduce(const RawTensor& t, RedOp op) {
  ncclDataType_t type;
  if (!to_nccl_type(t.dtype(), &type)) return {false, false, "NCCL has no type for this dtype"};
  detail::DeviceGuard guard(impl_->device);
  const cudaStream_t stream = detail::context(impl_->device).stream();
  return impl_->issue([&] {
    return api().all_reduce(t.raw_data(), t.raw_data(), static_cast<std::size_t>(t.numel()), type,
                            to_nccl_op(op, t.dtype()), impl_->comm, stream);
  });
}

WaitResult Communicator::broadcast(const RawTensor& t, int root) {
  detail::DeviceGuard guard(impl_->device);
  const cudaStream_t stream = detail::context(impl_->device).stream();
  return impl_->issue([&] {
    return api().broadcast(t.raw_data(), t.raw_data(), static_cast<std::size_t>(t.numel()) * dtype_size(t.dtype()),
                           ncclUint8, root, impl_->comm, stream);
  });
}

WaitResult Communicator::all_gather(const RawTensor& in, const RawTensor& out) {
  detail::DeviceGuard guard(impl_->device);
  const cudaStream_t stream = detail::context(impl_->device).stream();
  return impl_->issue([&] {
    return api().all_gather(in.raw_data(), out.raw_data(), static_cast<std::size_t>(in.numel()) * dtype_size(in.dtype()),
                            ncclUint8, impl_->comm, stream);
  });
}

WaitResult Communicator::wait() noexcept { return wait(RawTensor(), nullptr); }

WaitResult Communicator::wait(const RawTensor& read_back, std::vector<char>* host) noexcept {
  Impl& m = *impl_;
  if (m.aborted) return {false, false, "the NCCL communicator was aborted after an earlier failure"};
  try {
    detail::DeviceGuard guard(m.device);
    const cudaStream_t stream = detail::context(m.device).stream();
    const auto deadline = Clock::now() + m.timeout;
    const std::size_t bytes =
        read_back.defined() ? static_cast<std::size_t>(read_back.numel()) * dtype_size(read_back.dtype()) : 0;
    if (bytes > 0) {   // queued before the wait, into pinned memory: asynchronous, covered by the one wait
      if (m.pinned_bytes < bytes) {
        if (m.pinned != nullptr) cudaFreeHost(m.pinned);
        m.pinned = nullptr;
        m.pinned_bytes = 0;
        if (cudaHostAlloc(&m.pinned, bytes, cudaHostAllocDefault) != cudaSuccess) {
          cudaGetLastError();
          m.pinned = nullptr;
          return {false, false, tg::detail::cat("cudaHostAlloc of ", bytes, " bytes failed")};
        }
        m.pinned_bytes = bytes;
      }
      const cudaError_t c = cudaMemcpyAsync(m.pinned, read_back.raw_data(), bytes, cudaMemcpyDeviceToHost, stream);
      if (c != cudaSuccess) {
        cudaGetLastError();
        return {false, false, tg::detail::cat("cudaMemcpyAsync of the headers failed (", cudaGetErrorString(c), ")")};
      }
    }
    const WaitResult w = m.wait_stream(stream, deadline);
    if (w.ok && bytes > 0 && host != nullptr) {
      host->resize(bytes);
      std::memcpy(host->data(), m.pinned, bytes);
    }
    return w;
  } catch (const std::exception& ex) {
    return {false, false, ex.what()};
  }
}

void Communicator::abort() noexcept { impl_->do_abort(); }

}  // namespace nccl
}  // namespace cuda
}  // namespace tg
