// backend/cuda/runtime.cu: device management for a build with CUDA: the availability probe, per-device
// contexts (stream, cuBLAS handle, caching allocator, error flag), the public tg::cuda API, the pinned
// host allocator, and copies between devices (RawTensor::to). The kernels are in backend/cuda/elementwise.cu,
// unary.cu, reduce.cu, softmax_loss.cu, index.cu, optim.cu, random.cu, sort.cu; gemm in backend/cuda/blas.cpp; the pool logic in backend/cuda/caching_allocator.h.
// The stubs of a build without CUDA are at the end of backend/backend.cpp.
#include <cuda_runtime.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>
#include <unordered_map>
#include <vector>

#include "tensorgrad/core/accelerator.h"
#include "tensorgrad/backend/cuda/context.cuh"
#include "tensorgrad/backend/cuda/launch.cuh"
#include "tensorgrad/backend/cuda/libraries.h"

#ifndef TENSORGRAD_CUDA_ARCHS
#define TENSORGRAD_CUDA_ARCHS "unknown"
#endif
#ifndef TG_CUDA_RUNTIME_LINKAGE   // the CUDA emulator's stand-in header names itself instead
#define TG_CUDA_RUNTIME_LINKAGE "linked statically"
#endif

namespace tg {
namespace cuda {
namespace detail {

[[noreturn]] void throw_cuda_error(cudaError_t err, const char* what, const char* file, int line) {
  cudaGetLastError();   // clear the (non-sticky) error so that later calls do not report it again
  std::string msg = tg::detail::cat("CUDA error ", cudaGetErrorName(err), " (", cudaGetErrorString(err), ") in ", what,
                                    " at ", file, ":", line);
  if (err == cudaErrorMemoryAllocation) throw OutOfMemoryError(msg);
  throw CudaError(msg);
}

[[noreturn]] void throw_cublas_error(cublasStatus_t status, const char* what, const char* file, int line) {
  const CublasApi& api = cublas();   // loaded: a status comes from a call through it
  std::string msg = tg::detail::cat("cuBLAS error ", api.status_name(status), " (", api.status_string(status), ") in ",
                                    what, " at ", file, ":", line);
  if (status == CUBLAS_STATUS_ALLOC_FAILED) throw OutOfMemoryError(msg);
  throw CudaError(msg);
}

namespace {

constexpr int kMaxDevices = 64;

std::string version_str(int v) { return tg::detail::cat(v / 1000, ".", (v % 1000) / 10); }

/// "CUDA runtime 13.0, driver 12.4" or "..., no CUDA driver found". Never throws.
std::string versions() {
  int runtime = 0, driver = 0;
  cudaRuntimeGetVersion(&runtime);
  const cudaError_t err = cudaDriverGetVersion(&driver);
  std::string s = "CUDA runtime " + version_str(runtime);
  if (err == cudaSuccess && driver > 0) s += ", driver " + version_str(driver);
  else s += ", no CUDA driver found";
  return s;
}

__global__ void probe_kernel(int* out, int value) { *out = value; }

/// Runs a one-thread kernel on `device` and reads its result back: catches a GPU whose architecture
/// has no code in this build (cudaErrorNoKernelImageForDevice) at first use, not in the first real op.
bool probe_device(int device, std::string* why) {
  int previous = 0;
  cudaGetDevice(&previous);
  cudaError_t err = cudaSetDevice(device);
  int* p = nullptr;
  int value = 0;
  if (err == cudaSuccess) err = cudaMalloc(&p, sizeof(int));
  if (err == cudaSuccess) {
    TG_LAUNCH(1, 1, 0, nullptr, probe_kernel)(p, 42);
    err = cudaGetLastError();
    if (err == cudaSuccess) err = cudaMemcpy(&value, p, sizeof(int), cudaMemcpyDeviceToHost);
    cudaFree(p);
  }
  cudaGetLastError();
  cudaSetDevice(previous);
  if (err == cudaSuccess && value == 42) return true;
  cudaDeviceProp prop{};
  const bool have_prop = cudaGetDeviceProperties(&prop, device) == cudaSuccess;
  cudaGetLastError();
  *why = tg::detail::cat("a probe kernel could not run on cuda:", device);
  if (have_prop) *why += tg::detail::cat(" (", prop.name, ", compute capability ", prop.major, ".", prop.minor, ")");
  *why += err == cudaSuccess ? std::string(": it returned a wrong value")
                             : tg::detail::cat(": ", cudaGetErrorName(err), " (", cudaGetErrorString(err), ")");
  if (err == cudaErrorNoKernelImageForDevice || err == cudaErrorInvalidDeviceFunction || err == cudaErrorUnsupportedPtxVersion)
    *why += tg::detail::cat("; tensorgrad was compiled for architectures ", TENSORGRAD_CUDA_ARCHS,
                            ": rebuild with -DCMAKE_CUDA_ARCHITECTURES=", have_prop ? prop.major * 10 + prop.minor : 0);
  return false;
}

struct ProbeResult {
  bool available = false;
  int count = 0;
  std::string reason;   // why not, when !available
};

ProbeResult run_probe() noexcept {
  ProbeResult r;
  try {
    int count = 0;
    const cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess) {
      cudaGetLastError();
      const LibraryStatus& driver = driver_library();
      r.reason = driver.loaded ? tg::detail::cat("no usable CUDA device: ", cudaGetErrorString(err))
                               : "no CUDA driver installed (" + driver.detail + ")";
      return r;
    }
    if (count <= 0) {
      r.reason = "the CUDA runtime reports no device";
      return r;
    }
    std::string why;
    if (!probe_device(0, &why)) {
      r.reason = why;
      return r;
    }
    const LibraryStatus& blas = cublas_library();   // Note [CUDA at run time]: opened only with a device
    if (!blas.loaded) {
      r.reason = "cuBLAS could not be loaded (" + blas.detail + ")";
      return r;
    }
    r.available = true;
    r.count = count < kMaxDevices ? count : kMaxDevices;
  } catch (...) {
    r.available = false;
    r.reason = "the CUDA runtime could not be queried";
  }
  return r;
}

/// Probed once per process; never destroyed (Note [Process-lifetime CUDA objects]).
const ProbeResult& probe() noexcept {
  static const ProbeResult* result = new (std::nothrow) ProbeResult(run_probe());
  static const ProbeResult fallback{false, 0, "out of memory while probing CUDA"};
  return result != nullptr ? *result : fallback;
}

// ------------------------------------------------------------------------------------------------
// Contexts, one per device, created on first use.

struct DeviceSlot {
  DeviceContext* ctx;
  CudaBackend* backend;
};
std::atomic<DeviceSlot*> g_slots[kMaxDevices];
std::mutex g_slots_mutex;

DeviceSlot* existing_slot(int device) {
  if (device < 0 || device >= kMaxDevices) return nullptr;
  return g_slots[device].load(std::memory_order_acquire);
}

[[noreturn]] void throw_unusable(int device, const std::string& reason) {
  throw DeviceError(tg::detail::cat("cannot use cuda:", device, ": ", reason, " (", versions(), ")"));
}

DeviceSlot& slot(int device) {
  if (DeviceSlot* s = existing_slot(device)) return *s;
  const ProbeResult& p = probe();
  if (!p.available) throw_unusable(device, "CUDA is not available: " + p.reason);
  if (device < 0 || device >= p.count)
    throw_unusable(device, tg::detail::cat("this machine has ", p.count, " usable CUDA device", p.count == 1 ? "" : "s",
                                           p.count == 1 ? " (cuda:0)" : tg::detail::cat(" (cuda:0 to cuda:", p.count - 1, ")")));
  std::lock_guard<std::mutex> lock(g_slots_mutex);
  if (DeviceSlot* s = existing_slot(device)) return *s;
  std::string why;
  if (device != 0 && !probe_device(device, &why)) throw_unusable(device, why);
  const char* mode = std::getenv("TG_CUDA_ALLOCATOR");
  const bool caching = !(mode != nullptr && std::string(mode) == "passthrough");
  auto* ctx = new DeviceContext(device, caching);   // never destroyed
  auto* s = new DeviceSlot{ctx, new CudaBackend(*ctx)};
  g_slots[device].store(s, std::memory_order_release);
  return *s;
}

thread_local int t_current_device = 0;

// ------------------------------------------------------------------------------------------------
// Pinned host memory, cached like the CPU allocator. A block handed to an asynchronous copy records
// an event on the copy's stream; a freed block is reused only once its events have completed, so the
// prefetch thread never overwrites a batch the GPU is still reading.

class PinnedAllocator final : public Allocator {
 public:
  void* allocate(std::size_t nbytes) override {
    if (nbytes == 0) return nullptr;
    const std::size_t size = CachingAllocator::round_size(nbytes);
    std::lock_guard<std::mutex> lock(mutex_);
    auto range = free_.equal_range(size);
    for (auto it = range.first; it != range.second; ++it) {
      if (!events_done(it->second)) continue;
      void* p = it->second.ptr;
      free_.erase(it);
      live_.emplace(p, Block{p, size, {}});
      return p;
    }
    void* p = nullptr;
    cudaError_t err = cudaHostAlloc(&p, size, cudaHostAllocPortable);
    if (err != cudaSuccess) {
      cudaGetLastError();
      release_locked();
      err = cudaHostAlloc(&p, size, cudaHostAllocPortable);
    }
    if (err != cudaSuccess) {
      cudaGetLastError();
      throw OutOfMemoryError(tg::detail::cat("pinned host memory: cannot allocate ", nbytes, " bytes: ",
                                             cudaGetErrorString(err)));
    }
    live_.emplace(p, Block{p, size, {}});
    return p;
  }

  void deallocate(void* ptr, std::size_t) noexcept override {
    if (ptr == nullptr) return;
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = live_.find(ptr);
    if (it == live_.end()) return;
    try {
      free_.emplace(it->second.size, std::move(it->second));
    } catch (...) {   // cannot cache it: leak rather than free memory a copy may still read
    }
    live_.erase(it);
  }

  bool owns(const void* ptr) {
    std::lock_guard<std::mutex> lock(mutex_);
    return live_.count(const_cast<void*>(ptr)) != 0;
  }

  /// The block at `base` is read by work queued on `stream`: it is not reused before that work ran.
  void record_use(void* base, cudaStream_t stream) {
    cudaEvent_t ev;
    TG_CUDA_CHECK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    TG_CUDA_CHECK(cudaEventRecord(ev, stream));
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = live_.find(base);
    if (it == live_.end()) {
      cudaEventDestroy(ev);
      return;
    }
    it->second.events.push_back(ev);
  }

 private:
  struct Block {
    void* ptr;
    std::size_t size;
    std::vector<cudaEvent_t> events;
  };
  /// True when every event of b completed (they are then destroyed).
  static bool events_done(Block& b) {
    while (!b.events.empty()) {
      const cudaError_t q = cudaEventQuery(b.events.back());
      if (q == cudaErrorNotReady) return false;
      cudaGetLastError();
      cudaEventDestroy(b.events.back());
      b.events.pop_back();
    }
    return true;
  }
  void release_locked() {
    for (auto it = free_.begin(); it != free_.end();) {
      if (events_done(it->second)) {
        cudaFreeHost(it->second.ptr);
        it = free_.erase(it);
      } else {
        ++it;
      }
    }
    cudaGetLastError();
  }

  std::mutex mutex_;
  std::multimap<std::size_t, Block> free_;
  std::unordered_map<void*, Block> live_;
};

PinnedAllocator& pinned_allocator() {
  static auto* a = new PinnedAllocator();   // never destroyed
  return *a;
}

// ------------------------------------------------------------------------------------------------
// Copies between devices

std::size_t nbytes_of(const RawTensor& t) { return static_cast<std::size_t>(t.numel()) * dtype_size(t.dtype()); }

/// cuda:i -> cuda:j. The copy runs on the destination's stream after the source's queued work (event),
/// and the source's stream waits for the copy before it may reuse the source block.
RawTensor copy_peer(const RawTensor& t, Device device) {
  DeviceContext& from = context(t.device().index());
  DeviceContext& to = context(device.index());
  from.refuse_in_capture("a copy to another device");
  to.refuse_in_capture("a copy from another device");
  const RawTensor src = t.contiguous();
  RawTensor out = RawTensor::empty(t.shape(), t.dtype(), device);
  cudaEvent_t ready = nullptr, done = nullptr;
  {
    DeviceGuard guard(from.device());
    TG_CUDA_CHECK(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming));
    TG_CUDA_CHECK(cudaEventRecord(ready, from.stream()));
  }
  {
    DeviceGuard guard(to.device());
    TG_CUDA_CHECK(cudaStreamWaitEvent(to.stream(), ready, 0));
    count_launch();
    TG_CUDA_CHECK(cudaMemcpyPeerAsync(out.raw_data(), to.device(), src.raw_data(), from.device(), nbytes_of(src),
                                      to.stream()));
    TG_CUDA_CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
    TG_CUDA_CHECK(cudaEventRecord(done, to.stream()));
  }
  {
    DeviceGuard guard(from.device());
    TG_CUDA_CHECK(cudaStreamWaitEvent(from.stream(), done, 0));
  }
  cudaEventDestroy(ready);   // released once completed
  cudaEventDestroy(done);
  return out;
}

}  // namespace

// ------------------------------------------------------------------------------------------------
// DeviceContext

DeviceAllocator::DeviceAllocator(int device, bool caching)
    : pool_(RawAllocator{[device, this](std::size_t n) -> void* {
                           DeviceGuard guard(device);
                           void* p = nullptr;
                           // During a capture cudaMalloc is legal in the relaxed mode only: the graph
                           // keeps the new block (Note [Graph pools] in backend/cuda/caching_allocator.h).
                           cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
                           const bool relax = capturing.load(std::memory_order_acquire);
                           if (relax) cudaThreadExchangeStreamCaptureMode(&mode);
                           const cudaError_t err = cudaMalloc(&p, n);
                           if (relax) cudaThreadExchangeStreamCaptureMode(&mode);
                           if (err == cudaErrorMemoryAllocation) {
                             cudaGetLastError();
                             return nullptr;
                           }
                           TG_CUDA_CHECK(err);
                           return p;
                         },
                         [device](void* p) {
                           int previous = -1;
                           if (cudaGetDevice(&previous) == cudaSuccess && previous != device) cudaSetDevice(device);
                           cudaFree(p);   // errors ignored: this may run while the process exits
                           if (previous >= 0 && previous != device) cudaSetDevice(previous);
                           cudaGetLastError();
                         },
                         [device](std::size_t* total, std::size_t* free) {
                           DeviceGuard guard(device);
                           if (cudaMemGetInfo(free, total) != cudaSuccess) cudaGetLastError();
                         }},
            tg::detail::cat("cuda:", device), caching) {}

DeviceContext::DeviceContext(int device, bool caching_allocator) : device_(device), allocator_(device, caching_allocator) {
  DeviceGuard guard(device);
  cudaDeviceProp prop{};
  TG_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  sm_count = prop.multiProcessorCount;
  major = prop.major;
  minor = prop.minor;
  name = prop.name;
  total_memory = prop.totalGlobalMem;
  TG_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  TG_CUDA_CHECK(cudaMallocHost(&flag_host_, sizeof(DeviceErrorFlag)));
  std::memset(flag_host_, 0, sizeof(DeviceErrorFlag));
  TG_CUDA_CHECK(cudaMalloc(&flag_device_, sizeof(DeviceErrorFlag)));
  count_launch();
  TG_CUDA_CHECK(cudaMemsetAsync(flag_device_, 0, sizeof(DeviceErrorFlag), stream_));
}

cublasHandle_t DeviceContext::blas() {
  std::call_once(blas_once_, [this] {
    DeviceGuard guard(device_);
    const CublasApi& api = cublas();
    TG_CUBLAS_CHECK(api.create(&blas_));
    TG_CUBLAS_CHECK(api.set_stream(blas_, stream_));   // same stream as our kernels
    // Its workspace comes from our allocator (and shows in memory_allocated): NVIDIA's recommended
    // 32 MiB on Hopper, 4 MiB before. Kept for the process, like the handle.
    const std::size_t bytes = std::size_t(major >= 9 ? 32 : 4) << 20;
    void* workspace = allocator_.allocate(bytes);
    TG_CUBLAS_CHECK(api.set_workspace(blas_, workspace, bytes));
    workspace_ = workspace;
    workspace_bytes_ = bytes;
  });
  return blas_;
}

cublasLtHandle_t DeviceContext::blas_lt() {
  std::call_once(blas_lt_once_, [this] {
    const CublasLtApi* api = cublaslt();   // Note [CUDA at run time]: optional
    if (api == nullptr) return;
    DeviceGuard guard(device_);
    TG_CUBLAS_CHECK(api->create(&blas_lt_));
  });
  return blas_lt_;
}

void DeviceContext::refuse_in_capture(const char* what) {
  if (!capture.on.load(std::memory_order_acquire)) return;
  std::string msg = tg::detail::cat(what, " on cuda:", device_,
                                    " inside a CUDA graph capture: a capture records work for the GPU and cannot "
                                    "wait for it or exchange data with host memory (PyTorch: operation not permitted "
                                    "when stream is capturing); copy inputs into static tensors before replay() and "
                                    "read results after it");
  if (capture.failure.empty()) capture.failure = msg;
  throw CudaError(msg);
}

void DeviceContext::sync() {
  refuse_in_capture("a synchronization (item(), to(cpu), tg::cuda::synchronize())");
  DeviceGuard guard(device_);
  std::lock_guard<std::mutex> lock(flag_mutex_);
  count_launch();
  TG_CUDA_CHECK(cudaMemcpyAsync(flag_host_, flag_device_, sizeof(DeviceErrorFlag), cudaMemcpyDeviceToHost, stream_));
  TG_CUDA_CHECK(cudaStreamSynchronize(stream_));
  if (flag_host_->code == 0) return;
  const DeviceErrorFlag f = *flag_host_;
  std::memset(flag_host_, 0, sizeof(DeviceErrorFlag));
  count_launch();
  TG_CUDA_CHECK(cudaMemsetAsync(flag_device_, 0, sizeof(DeviceErrorFlag), stream_));
  if (f.code == kErrCrossEntropyTarget) throw cross_entropy_target_error(f.value, f.bound);
  if (f.code == kErrIndex) {
    static const char* const kOps[] = {"index_select", "index_add_", "gather", "scatter_add_"};
    const char* op = f.op >= 0 && f.op < 4 ? kOps[f.op] : "index";
    throw index_out_of_range_error(op, f.value, f.dim, f.bound);
  }
  if (f.code == kErrCtcTarget) throw ctc_target_error(f.value, f.op, f.dim, f.bound, f.pad);
  throw CudaError(tg::detail::cat("a kernel on cuda:", device_, " reported error code ", f.code));
}

DeviceContext& context(int device) { return *slot(device).ctx; }

DeviceGuard::DeviceGuard(int device) {
  if (cudaGetDevice(&previous_) != cudaSuccess) {
    cudaGetLastError();
    previous_ = -1;
  }
  if (previous_ != device) TG_CUDA_CHECK(cudaSetDevice(device));
}

DeviceGuard::~DeviceGuard() {
  int now = -1;
  if (previous_ >= 0 && cudaGetDevice(&now) == cudaSuccess && now != previous_) cudaSetDevice(previous_);
}

void CudaBackend::synchronize() { ctx_.sync(); }

// ------------------------------------------------------------------------------------------------
// Hooks for the engine and the DataLoader (core/accelerator.h)

Backend& backend(int index) { return *slot(index).backend; }

RawTensor to_device(const RawTensor& t, Device device, bool non_blocking) {
  const Device from = t.device();
  if (from.is_cuda() && device.is_cuda()) return copy_peer(t, device);
  if (from.is_cpu()) {   // host -> device
    DeviceContext& ctx = context(device.index());
    ctx.refuse_in_capture("a copy from host memory (to(cuda))");
    const RawTensor src = t.contiguous();
    RawTensor out = RawTensor::empty(t.shape(), t.dtype(), device);
    if (out.numel() == 0) return out;
    DeviceGuard guard(ctx.device());
    const bool pinned = is_pinned(src);
    count_launch();
  TG_CUDA_CHECK(cudaMemcpyAsync(out.raw_data(), src.raw_data(), nbytes_of(src), cudaMemcpyHostToDevice, ctx.stream()));
    if (pinned && non_blocking) {
      pinned_allocator().record_use(src.storage()->data(), ctx.stream());   // asynchronous: keep the block
    } else if (pinned) {
      ctx.sync();   // a blocking copy from pinned memory: the caller may overwrite the source next
    }
    // From pageable memory cudaMemcpyAsync returns once the source has been staged by the driver, so
    // the host buffer may be reused at once without waiting for the device.
    return out;
  }
  // device -> host: the one synchronization point of a transfer (raises recorded kernel errors).
  DeviceContext& ctx = context(from.index());
  ctx.refuse_in_capture("a copy to host memory (item(), to(cpu))");
  const RawTensor src = t.contiguous();
  RawTensor out = RawTensor::empty(t.shape(), t.dtype(), Device::cpu());
  DeviceGuard guard(ctx.device());
  if (out.numel() > 0)
    count_launch();
  TG_CUDA_CHECK(cudaMemcpyAsync(out.raw_data(), src.raw_data(), nbytes_of(src), cudaMemcpyDeviceToHost, ctx.stream()));
  ctx.sync();
  return out;
}

RawTensor pin(const RawTensor& t) {
  TG_CHECK(t.device().is_cpu(), DeviceError, "pin_memory: expected a CPU tensor, got one on ", t.device());
  if (!is_available() || t.numel() == 0 || (is_pinned(t) && t.is_contiguous())) return t;
  for (int d = 0; d < kMaxDevices; ++d) {   // cudaHostAlloc is illegal in the capturing thread only
    DeviceSlot* s = existing_slot(d);
    if (s != nullptr && s->ctx->capture.on.load() && s->ctx->capture.thread == std::this_thread::get_id())
      s->ctx->refuse_in_capture("a pinned allocation (pin_memory)");
  }
  auto storage = std::make_shared<Storage>(nbytes_of(t), Device::cpu(), &pinned_allocator());
  RawTensor out(std::move(storage), t.shape(), contiguous_strides(t.shape()), 0, t.dtype());
  cpu_backend().copy(t, out);
  return out;
}

bool is_pinned(const RawTensor& t) noexcept {
  try {
    return t.defined() && t.device().is_cpu() && t.storage()->data() != nullptr &&
           pinned_allocator().owns(t.storage()->data());
  } catch (...) {
    return false;
  }
}

namespace {
std::atomic<uint64_t> g_launches{0};
}  // namespace
void count_launch() noexcept { g_launches.fetch_add(1, std::memory_order_relaxed); }
uint64_t launch_count() noexcept { return g_launches.load(std::memory_order_relaxed); }

}  // namespace detail

// ------------------------------------------------------------------------------------------------
// Public tg::cuda API

bool is_available() noexcept { return detail::probe().available; }

int device_count() noexcept { return detail::probe().available ? detail::probe().count : 0; }

void set_device(int device) {
  detail::DeviceContext& ctx = detail::context(device);   // validates
  TG_CUDA_CHECK(cudaSetDevice(ctx.device()));
  detail::t_current_device = device;
}

int current_device() { return detail::t_current_device; }

void synchronize() {
  if (!is_available()) return;
  for (int d = 0; d < detail::kMaxDevices; ++d)
    if (detail::DeviceSlot* s = detail::existing_slot(d)) s->ctx->sync();
}

namespace {
detail::CachingAllocator* pool_of(int device) {
  if (!is_available()) return nullptr;
  detail::DeviceSlot* s = detail::existing_slot(device < 0 ? detail::t_current_device : device);
  return s != nullptr ? &s->ctx->allocator().pool() : nullptr;
}
}  // namespace

std::size_t memory_allocated(int device) {
  detail::CachingAllocator* p = pool_of(device);
  return p != nullptr ? p->stats().allocated : 0;
}
std::size_t max_memory_allocated(int device) {
  detail::CachingAllocator* p = pool_of(device);
  return p != nullptr ? p->stats().peak_allocated : 0;
}
std::size_t memory_reserved(int device) {
  detail::CachingAllocator* p = pool_of(device);
  return p != nullptr ? p->stats().reserved : 0;
}
void reset_peak_memory_stats(int device) {
  if (detail::CachingAllocator* p = pool_of(device)) p->reset_peak();
}
std::size_t max_memory_reserved(int device) {
  detail::CachingAllocator* p = pool_of(device);
  return p != nullptr ? p->stats().peak_reserved : 0;
}
memory::MemoryStats memory_stats(int device) {
  detail::CachingAllocator* p = pool_of(device);
  return p != nullptr ? static_cast<memory::MemoryStats>(p->stats()) : memory::MemoryStats{};
}
std::pair<std::size_t, std::size_t> mem_get_info(int device) {
  const int d = device < 0 ? detail::t_current_device : device;
  detail::DeviceContext& ctx = detail::context(d);   // DeviceError when cuda:d cannot be used
  detail::DeviceGuard on(ctx.device());
  std::size_t free = 0, total = 0;
  TG_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  return {free, total};
}
std::string memory_summary(int device) {
  const int d = device < 0 ? detail::t_current_device : device;
  detail::context(d);   // DeviceError when cuda:d cannot be used
  return memory::detail::summary_table(tg::detail::cat("CUDA, device ID ", d), memory_stats(d));
}
void empty_cache() {
  if (!is_available()) return;
  for (int d = 0; d < detail::kMaxDevices; ++d)
    if (detail::DeviceSlot* s = detail::existing_slot(d)) s->ctx->allocator().pool().empty_cache();
}

std::string info() {
  try {
    const detail::ProbeResult& p = detail::probe();
    std::ostringstream os;
    if (p.available) os << "CUDA: available";
    else os << "CUDA: not available: " << p.reason;
    int runtime = 0, driver = 0;
    cudaRuntimeGetVersion(&runtime);
    os << "\n  runtime: CUDA " << detail::version_str(runtime) << " (" << TG_CUDA_RUNTIME_LINKAGE << ")";
    const detail::LibraryStatus& drv = detail::driver_library();
    if (!drv.loaded) os << "\n  driver: not found (" << drv.detail << ")";
    else if (cudaDriverGetVersion(&driver) == cudaSuccess && driver > 0)
      os << "\n  driver: CUDA " << detail::version_str(driver) << " (" << drv.path << ")";
    else os << "\n  driver: " << drv.path << " (version unknown)";
    const detail::LibraryStatus& blas = detail::cublas_library();
    if (blas.loaded) {
      int major = 0, minor = 0, patch = 0;
      const detail::CublasApi& api = detail::cublas();
      api.get_property(MAJOR_VERSION, &major);
      api.get_property(MINOR_VERSION, &minor);
      api.get_property(PATCH_LEVEL, &patch);
      os << "\n  cuBLAS: " << major << "." << minor << "." << patch << " (" << blas.path << ")";
    } else {
      os << "\n  cuBLAS: not found (" << blas.detail << ")";
    }
    const detail::LibraryStatus& lt = detail::cublaslt_library();
    if (lt.loaded) {
      const std::size_t v = detail::cublaslt()->get_version();
      os << "\n  cuBLASLt: " << v / 10000 << "." << (v / 100) % 100 << "." << v % 100 << " (" << lt.path << ")";
    } else {
      os << "\n  cuBLASLt: not found (" << lt.detail << "): linear adds its bias in a launch of its own";
    }
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) {
      cudaGetLastError();
      count = 0;
    }
    os << "\n  " << count << " device(s)";
    for (int i = 0; i < count; ++i) {
      cudaDeviceProp prop{};
      if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) {
        cudaGetLastError();
        continue;
      }
      os << "\n  cuda:" << i << " " << prop.name << ", compute capability " << prop.major << "." << prop.minor << ", "
         << (prop.totalGlobalMem >> 20) << " MiB, " << prop.multiProcessorCount << " SMs";
      std::string attention;
      try {
        attention = detail::attention_kernels(prop.major, kFloat32).why;
      } catch (const Error& e) {
        attention = e.what();
      }
      os << "\n    attention (float32, float16, bfloat16): " << attention;
    }
    os << "\n  compiled for architectures: " << TENSORGRAD_CUDA_ARCHS << " (SASS and PTX each)";
    const char* mode = std::getenv("TG_CUDA_ALLOCATOR");
    os << "\n  allocator: "
       << (mode != nullptr && std::string(mode) == "passthrough" ? "passthrough (TG_CUDA_ALLOCATOR)" : "caching");
    return os.str();
  } catch (...) {
    return "CUDA: not available: the CUDA runtime could not be queried";
  }
}

}  // namespace cuda
}  // namespace tg
