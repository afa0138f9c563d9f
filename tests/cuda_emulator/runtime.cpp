// tests/cuda_emulator/runtime.cpp: the CUDA emulator's runtime: emulated devices over host memory
// (allocations tracked, copies and memsets range-checked), streams and events in immediate or deferred
// mode, and kernel launches that run each CUDA thread as a fiber (Note [Fiber switches]) with __syncthreads and warp
// shuffles as cooperative barriers. Configured by environment variables (Note [Emulator settings]).
// The stand-in headers are in include/; cuBLAS is cublas.cpp.
#include <sys/mman.h>
#if !defined(__x86_64__)
#include <ucontext.h>
#endif
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "cuda_runtime.h"
#include "emulator.h"

#if defined(__SANITIZE_ADDRESS__)
#define TG_EMU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TG_EMU_ASAN 1
#endif
#endif
#ifdef TG_EMU_ASAN
#include <sanitizer/common_interface_defs.h>
#endif

// Note [Deferred streams]
// ~~~~~~~~~~~~~~~~~~~~~~~
// In immediate mode every operation runs inside the call that queues it. In deferred mode a stream
// keeps its operations until something waits for them: cudaStreamSynchronize, cudaDeviceSynchronize,
// a synchronous cudaMemcpy, an asynchronous copy into pageable host memory (synchronous on a GPU too),
// cudaFree / cudaFreeHost (which synchronize the device), or another stream's cudaStreamWaitEvent when
// that stream runs. Events complete only when the work before them ran; cudaEventQuery never makes
// progress. So a host buffer reused before its asynchronous copy ran, a missing event between two
// streams or a missing synchronization before the host reads a result shows up as wrong data.
// Copies from pageable host memory are staged at the call, as the driver does, so reusing such a
// buffer at once is correct. Position n of a stream is "after its first n operations"; an event
// records (stream, position).
//
// Note [Graphs on the emulator]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// cudaStreamBeginCapture turns a stream into a recorder: every kernel launch, copy and memset queued
// on it becomes a node of the capture's graph instead of running. cudaGraphInstantiate copies the
// nodes; cudaGraphLaunch queues them on a stream as one unit of work that runs them in capture order
// with the arguments they were captured with (the same pointers, the same by-value scalars), as a
// replay does on a GPU. What the runtime refuses during a capture is refused here with its error
// codes: synchronizing the capturing stream (cudaErrorStreamCaptureUnsupported, and the capture is
// invalidated, so cudaStreamEndCapture returns cudaErrorStreamCaptureInvalidated); the potentially
// unsafe calls cudaMalloc, cudaFree, cudaHostAlloc, cudaFreeHost, cudaMemcpy and
// cudaDeviceSynchronize from a thread that has a capture in global or thread-local mode, or while any
// thread has one in global mode, unless the calling thread exchanged its mode for relaxed
// (cudaThreadExchangeStreamCaptureMode); a copy between pageable host memory and a capturing stream;
// querying an event recorded in a capture (cudaErrorCapturedEvent); and a wait that joins a captured
// and an uncaptured stream (cudaErrorStreamCaptureIsolation). Only one stream per capture: the
// emulator does not fork a capture into other streams through events.
struct CUgraph_st {
  std::vector<std::function<void()>> nodes;
};

struct CUgraphExec_st {
  std::vector<std::function<void()>> nodes;
};

struct CUstream_st {
  int device = 0;
  std::deque<std::function<void()>> queue;
  std::uint64_t enqueued = 0, executed = 0;
  bool running = false;
  CUgraph_st* capture = nullptr;   // non-null while the stream is capturing (Note [Graphs on the emulator])
  cudaStreamCaptureMode capture_mode = cudaStreamCaptureModeGlobal;
  std::thread::id capture_thread;
  bool capture_invalid = false;
};

struct CUevent_st {
  int device;
  CUstream_st* stream = nullptr;   // of the last record; nullptr: never recorded (complete)
  std::uint64_t position = 0;
  const CUgraph_st* captured = nullptr;   // the capture its last record happened in, if any
};

namespace tg_emu {
namespace {

constexpr std::size_t kSharedMemPerBlock = 48 * 1024;

// Note [Emulator settings]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// TG_CUDA_EMULATE_DEVICES=N (default 2, at most 16): the number of emulated devices, so that copies
//   between devices run.
// TG_CUDA_EMULATE_MODE=immediate|deferred (default immediate): Note [Deferred streams].
// TG_CUDA_EMULATE_MEMORY_MIB=M (default 16384): each device's memory; cudaMalloc beyond it fails.
// TG_CUDA_EMULATE_NCCL_STALL=1: the emulator's NCCL (nccl.cpp) answers every collective with
//   ncclInProgress and never completes it, as a peer that never arrives would (read at each call).
// TG_CUDA_EMULATE_NCCL_PATIENCE_MS=T (default 60000): how long a collective of several ranks waits
//   for the others before it stalls (Note [NCCL ranks on the emulator] in nccl.cpp).
// TG_CUDA_EMULATE_CANARY: the negative controls of tools/cuda_emulator_check.sh, bugs planted on
//   purpose that the suite must catch:
//   no-barrier:FILE:LINE   the __syncthreads() at that line of a file whose path ends in FILE does
//                          nothing (a missing barrier);
//   early-host-reuse       cudaEventQuery reports every event complete, so the pinned host allocator
//                          hands out a buffer whose asynchronous copy has not run yet;
//   wrong-bias-pointer     cublasLtMatmul (cublaslt.cpp) reads the bias of CUBLASLT_EPILOGUE_BIAS and
//                          writes the gradient of BGRADA/BGRADB one element off, wrapping around
//                          inside the vector, as a bias pointer one element off would.
struct Config {
  int devices = 2;
  bool deferred = false;
  std::size_t memory = std::size_t(16384) << 20;
  std::string no_barrier_file;
  int no_barrier_line = 0;
  bool early_host_reuse = false;
  bool wrong_bias_pointer = false;
  bool trace = false;   // TG_CUDA_EMULATE_TRACE=1: every kernel launch printed to stderr
};

[[noreturn]] void fatal(const std::string& what) {
  std::fprintf(stderr, "tensorgrad CUDA emulator: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

long env_int(const char* name, long fallback, long lo, long hi) {
  const char* v = std::getenv(name);
  if (v == nullptr || v[0] == 0) return fallback;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  if (*end != 0 || n < lo || n > hi)
    fatal(std::string(name) + "=" + v + ": expected an integer from " + std::to_string(lo) + " to " + std::to_string(hi));
  return n;
}

Config read_config() {
  Config c;
  c.devices = static_cast<int>(env_int("TG_CUDA_EMULATE_DEVICES", c.devices, 1, 16));
  c.memory = static_cast<std::size_t>(env_int("TG_CUDA_EMULATE_MEMORY_MIB", 16384, 1, 1 << 24)) << 20;
  c.trace = env_int("TG_CUDA_EMULATE_TRACE", 0, 0, 1) == 1;
  if (const char* m = std::getenv("TG_CUDA_EMULATE_MODE"); m != nullptr && m[0] != 0) {
    const std::string mode = m;
    if (mode == "deferred") c.deferred = true;
    else if (mode != "immediate") fatal("TG_CUDA_EMULATE_MODE=" + mode + ": expected immediate or deferred");
  }
  if (const char* k = std::getenv("TG_CUDA_EMULATE_CANARY"); k != nullptr && k[0] != 0) {
    const std::string canary = k;
    const std::string prefix = "no-barrier:";
    const std::size_t colon = canary.rfind(':');
    if (canary == "early-host-reuse") {
      c.early_host_reuse = true;
    } else if (canary == "wrong-bias-pointer") {
      c.wrong_bias_pointer = true;
    } else if (canary.compare(0, prefix.size(), prefix) == 0 && colon > prefix.size()) {
      c.no_barrier_file = canary.substr(prefix.size(), colon - prefix.size());
      c.no_barrier_line = std::atoi(canary.c_str() + colon + 1);
    } else {
      fatal("TG_CUDA_EMULATE_CANARY=" + canary + ": expected no-barrier:FILE:LINE, early-host-reuse or wrong-bias-pointer");
    }
  }
  return c;
}

const Config& config() {
  static const Config c = read_config();
  return c;
}

struct Allocation {
  std::size_t size;
  int device;   // -1: pinned host memory
};

struct DeviceState {
  std::size_t used = 0;
  CUstream_st* default_stream = nullptr;
  cudaError_t pending = cudaSuccess;   // found while running queued work; returned by the next sync
};

struct State {
  std::recursive_mutex mutex;
  std::vector<DeviceState> devices;
  std::map<std::uintptr_t, Allocation> allocations;   // by start address
  std::set<const CUstream_st*> streams;
  std::set<const CUevent_st*> events;
  std::unordered_map<std::uintptr_t, bool> uses_barriers;   // per kernel: Note [Fibers only where needed]
};

/// Never destroyed: Storages owned by statics free device memory during exit.
State& state() {
  static State* s = [] {
    auto* st = new State();
    st->devices.resize(static_cast<std::size_t>(config().devices));
    return st;
  }();
  return *s;
}

thread_local int t_device = 0;
thread_local cudaError_t t_last_error = cudaSuccess;

/// A failing call also sets the calling thread's last error, as the runtime does.
cudaError_t fail(cudaError_t err) {
  t_last_error = err;
  return err;
}

bool valid_device(int d) { return d >= 0 && d < config().devices; }

/// The allocation that holds [p, p + n), or nullptr when p is in none; *overflow is set when p is in
/// one but the range runs past its end.
const Allocation* find_allocation(const void* p, std::size_t n, bool* overflow) {
  *overflow = false;
  const auto q = reinterpret_cast<std::uintptr_t>(p);
  auto& all = state().allocations;
  auto it = all.upper_bound(q);
  if (it == all.begin()) return nullptr;
  --it;
  const std::uintptr_t end = it->first + it->second.size;
  if (q >= end) return nullptr;
  if (n > end - q) {
    *overflow = true;
    return nullptr;
  }
  return &it->second;
}

std::string hex(const void* p) {
  std::ostringstream os;
  os << p;
  return os.str();
}

enum class Space { Pageable, Pinned, Device, Bad };
struct Region {
  Space space;
  int device;
};

/// Where [p, p + n) lies; Bad (with a report) when it starts inside an allocation and runs past its end.
Region locate(const void* p, std::size_t n, const char* what) {
  bool overflow = false;
  const Allocation* a = find_allocation(p, n, &overflow);
  if (overflow) {
    report(std::string(what) + ": " + std::to_string(n) + " bytes at " + hex(p) + " run past the end of its allocation");
    return {Space::Bad, -1};
  }
  if (a == nullptr) return {Space::Pageable, -1};
  if (a->device < 0) return {Space::Pinned, -1};
  return {Space::Device, a->device};
}

// ------------------------------------------------------------------------------------------------
// Streams

CUstream_st* default_stream(int device) {
  DeviceState& d = state().devices[static_cast<std::size_t>(device)];
  if (d.default_stream == nullptr) {
    d.default_stream = new CUstream_st();
    d.default_stream->device = device;
    state().streams.insert(d.default_stream);
  }
  return d.default_stream;
}

void run_next(CUstream_st* s) {
  std::function<void()> op = std::move(s->queue.front());
  s->queue.pop_front();
  s->running = true;
  op();
  s->running = false;
  ++s->executed;
}

/// Runs s's queued work up to position `until`.
void flush(CUstream_st* s, std::uint64_t until) {
  while (s->executed < until) {
    if (s->running) fatal("a stream waits for an event recorded after the wait on that same stream (a deadlock on a GPU)");
    run_next(s);
  }
}
void flush(CUstream_st* s) { flush(s, s->enqueued); }

void flush_device(int device) {
  for (const CUstream_st* s : state().streams)
    if (s->device == device) flush(const_cast<CUstream_st*>(s));
}
void flush_all() {
  for (const CUstream_st* s : state().streams) flush(const_cast<CUstream_st*>(s));
}

// The calls that make the host wait for a device (tg_cuda_emulator_host_waits).
std::atomic<unsigned long long> g_host_waits{0};
// The copies from device memory to host memory (tg_cuda_emulator_device_to_host_copies).
std::atomic<unsigned long long> g_device_to_host{0};

thread_local cudaStreamCaptureMode t_capture_mode = cudaStreamCaptureModeGlobal;

/// Whether a potentially unsafe call (`what`) from this thread must be refused because of a capture
/// (Note [Graphs on the emulator]); the captures it would disturb are invalidated.
bool refuse_during_capture(const char* what) {
  if (t_capture_mode == cudaStreamCaptureModeRelaxed) return false;
  bool refused = false;
  for (const CUstream_st* c : state().streams) {
    auto* s = const_cast<CUstream_st*>(c);
    if (s->capture == nullptr || s->capture_mode == cudaStreamCaptureModeRelaxed) continue;
    if (s->capture_mode == cudaStreamCaptureModeGlobal || s->capture_thread == std::this_thread::get_id()) {
      s->capture_invalid = true;
      refused = true;
    }
  }
  if (refused) trace(std::string(what) + " refused during a stream capture (the capture is invalidated)");
  return refused;
}

/// The error queued work on `device` ran into (cleared): what the next synchronizing call returns.
cudaError_t take_pending(int device) {
  cudaError_t& p = state().devices[static_cast<std::size_t>(device)].pending;
  const cudaError_t e = p;
  p = cudaSuccess;
  return e == cudaSuccess ? e : fail(e);
}

// ------------------------------------------------------------------------------------------------
// Kernels: Note [Fibers only where needed]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The blocks of a grid run one after another on the launching host thread. Within a block, each CUDA
// thread is a fiber with its own stack; the scheduler resumes them in thread order, and a fiber runs
// until it reaches __syncthreads() (released when every thread of the block is there: a thread that
// exited or waits elsewhere is a deadlock, reported as a launch failure), a warp shuffle (released
// when every lane of the mask is there; values pass through a per-warp buffer, two of them
// alternating so that a lane that runs ahead cannot overwrite what a slower lane has yet to read) or
// its end. Fibers cost a context switch per barrier, so a kernel runs them only when it needs them:
// block 0 of its first launch runs as fibers, and if no thread of it reached a barrier or a shuffle,
// every later block and launch of that kernel runs its threads as plain calls, one after another. A
// barrier reached in that mode cannot be honoured and aborts the process with the kernel's name.

#ifdef TG_EMU_ASAN
constexpr std::size_t kStackBytes = 256 * 1024;   // instrumented frames are larger
#else
constexpr std::size_t kStackBytes = 64 * 1024;
#endif

// Note [Fiber switches]
// ~~~~~~~~~~~~~~~~~~~~~
// On x86-64 a switch between fibers is switch_stack below: it pushes the callee-saved registers and the
// SSE and x87 control words on the running stack, stores the stack pointer, loads the other one and pops
// the same. glibc's swapcontext also saves and restores the signal mask, one rt_sigprocmask system call
// per switch: 3.5 million of them in the fused attention test alone, a third of the CUDA suite's time.
// No fiber changes the signal mask, so it need not travel. A fiber's first switch "returns" into
// fiber_main from a frame prepared by start_stack. Other architectures keep ucontext.
#if defined(__x86_64__)
extern "C" void tg_emu_switch_stack(void** save_sp, void* load_sp);
asm(R"(
  .text
  .p2align 4
  .globl tg_emu_switch_stack
  .hidden tg_emu_switch_stack
  .type tg_emu_switch_stack, @function
tg_emu_switch_stack:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size tg_emu_switch_stack, .-tg_emu_switch_stack
)");

struct Context {
  void* sp = nullptr;
};
/// Makes `to` start at entry() on [stack, stack + bytes) when switched to: a frame as switch_stack
/// leaves one (control words, six registers, entry as the return address), over a null return address
/// for entry itself, which never returns; at entry the stack is aligned as after a call.
void start_stack(Context& to, char* stack, std::size_t bytes, void (*entry)()) {
  auto* top = reinterpret_cast<std::uint64_t*>(reinterpret_cast<std::uintptr_t>(stack + bytes) & ~std::uintptr_t{15});
  std::uint64_t* sp = top - 9;
  std::uint32_t mxcsr;
  std::uint16_t fcw;
  asm volatile("stmxcsr %0" : "=m"(mxcsr));
  asm volatile("fnstcw %0" : "=m"(fcw));
  sp[0] = mxcsr | (std::uint64_t{fcw} << 32);
  for (int r = 1; r <= 6; ++r) sp[r] = 0;   // r15, r14, r13, r12, rbx, rbp
  sp[7] = reinterpret_cast<std::uint64_t>(entry);
  sp[8] = 0;
  to.sp = sp;
}
void switch_to(Context& from, Context& to) { tg_emu_switch_stack(&from.sp, to.sp); }
#else
struct Context {
  ucontext_t uc;
};
void start_stack(Context& to, char* stack, std::size_t bytes, void (*entry)()) {
  getcontext(&to.uc);
  to.uc.uc_stack.ss_sp = stack;
  to.uc.uc_stack.ss_size = bytes;
  to.uc.uc_link = nullptr;
  makecontext(&to.uc, entry, 0);
}
void switch_to(Context& from, Context& to) { swapcontext(&from.uc, &to.uc); }
#endif

/// A fiber stack (with a guard page below it) and its context, reused by fiber after fiber.
struct FiberSlot {
  Context ctx;
  char* mapping = nullptr;
  char* stack = nullptr;
  FiberSlot() {
    const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    void* m = mmap(nullptr, kStackBytes + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) fatal("cannot map a fiber stack");
    mapping = static_cast<char*>(m);
    mprotect(mapping, page, PROT_NONE);   // an overflowing fiber faults instead of corrupting memory
    stack = mapping + page;
  }
  ~FiberSlot() { munmap(mapping, kStackBytes + static_cast<std::size_t>(sysconf(_SC_PAGESIZE))); }
  FiberSlot(const FiberSlot&) = delete;
  FiberSlot& operator=(const FiberSlot&) = delete;
};

thread_local std::vector<std::unique_ptr<FiberSlot>> t_slots;

enum class FiberState { NotStarted, Runnable, Running, AtBarrier, AtShuffle, Done };

struct Fiber {
  FiberSlot* slot;
  FiberState state = FiberState::NotStarted;
  uint3 index;
  int lane, warp;
  const char* file = "";   // where it waits
  int line = 0;
  int read_buffer = 0, read_lane = 0;   // the shuffle value it takes when released
  void* fake_stack = nullptr;           // ASan's bookkeeping across switches
};

struct Warp {
  int size = 32;
  int arrived = 0;
  unsigned mask = 0;
  int buffer = 0;
  unsigned long long values[2][32] = {};
  std::size_t gather_bytes = 0;   // of the warp_gather in progress (arrived > 0)
  bool gathering = false;         // the lanes waiting are in warp_gather, not in a shuffle
  unsigned char gathered[2][32 * kMaxGatherBytes] = {};
};

struct Block {
  const std::function<void()>* body;
  const char* kernel;
  std::vector<Fiber> fibers;
  std::vector<Warp> warps;
  Context scheduler;
  void* scheduler_fake_stack = nullptr;
  const void* scheduler_bottom = nullptr;
  std::size_t scheduler_size = 0;
  int at_barrier = 0;
  const char* barrier_file = "";
  int barrier_line = 0;
  bool synchronized = false;   // some thread reached a barrier or a shuffle
  std::string error;           // a broken barrier: the block is abandoned
};

thread_local Block* t_block = nullptr;
thread_local int t_fiber = -1;
thread_local const char* t_direct_kernel = nullptr;   // the kernel running without fibers

void start_switch(void** fake, const void* bottom, std::size_t size) {
#ifdef TG_EMU_ASAN
  __sanitizer_start_switch_fiber(fake, bottom, size);
#else
  (void)fake, (void)bottom, (void)size;
#endif
}
void finish_switch(void* fake, const void** bottom, std::size_t* size) {
#ifdef TG_EMU_ASAN
  __sanitizer_finish_switch_fiber(fake, bottom, size);
#else
  (void)fake, (void)bottom, (void)size;
#endif
}

/// Back to the scheduler from the running fiber, which will be resumed in state Running.
void yield(FiberState state) {
  Block& b = *t_block;
  Fiber& f = b.fibers[static_cast<std::size_t>(t_fiber)];
  f.state = state;
  start_switch(&f.fake_stack, b.scheduler_bottom, b.scheduler_size);
  switch_to(f.slot->ctx, b.scheduler);
  finish_switch(f.fake_stack, &b.scheduler_bottom, &b.scheduler_size);
}

void fiber_main() {
  Block& b = *t_block;
  finish_switch(nullptr, &b.scheduler_bottom, &b.scheduler_size);
  (*b.body)();
  Fiber& f = b.fibers[static_cast<std::size_t>(t_fiber)];
  f.state = FiberState::Done;
  start_switch(nullptr, b.scheduler_bottom, b.scheduler_size);   // this fiber's stack is finished with
  switch_to(f.slot->ctx, b.scheduler);
  fatal("a finished fiber was resumed");
}

void resume(Block& b, int i) {
  Fiber& f = b.fibers[static_cast<std::size_t>(i)];
  FiberSlot& slot = *f.slot;
  if (f.state == FiberState::NotStarted) start_stack(slot.ctx, slot.stack, kStackBytes, fiber_main);
  f.state = FiberState::Running;
  t_fiber = i;
  threadIdx = f.index;
  start_switch(&b.scheduler_fake_stack, slot.stack, kStackBytes);
  switch_to(b.scheduler, slot.ctx);
  finish_switch(b.scheduler_fake_stack, nullptr, nullptr);
}

std::string describe_deadlock(const Block& b) {
  int at_barrier = 0, at_shuffle = 0, done = 0;
  std::string where_barrier, where_shuffle;
  for (const Fiber& f : b.fibers) {
    if (f.state == FiberState::AtBarrier) {
      ++at_barrier;
      where_barrier = std::string(f.file) + ":" + std::to_string(f.line);
    } else if (f.state == FiberState::AtShuffle) {
      ++at_shuffle;
      where_shuffle = std::string(f.file) + ":" + std::to_string(f.line);
    } else if (f.state == FiberState::Done) {
      ++done;
    }
  }
  return "deadlock: " + std::to_string(at_barrier) + " threads wait at __syncthreads" +
                  (at_barrier ? " (" + where_barrier + ")" : "") + ", " + std::to_string(at_shuffle) +
                  " at a warp shuffle" + (at_shuffle ? " (" + where_shuffle + ")" : "") + ", " + std::to_string(done) +
                  " exited: a barrier not reached by every thread it waits for";
}

/// Runs one block as fibers; returns false (b.error set) when a barrier was broken.
bool run_fibers(Block& b, const dim3& block) {
  const int n = static_cast<int>(block.x * block.y * block.z);
  while (t_slots.size() < static_cast<std::size_t>(n)) t_slots.push_back(std::make_unique<FiberSlot>());
  b.fibers.resize(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    Fiber& f = b.fibers[static_cast<std::size_t>(i)];
    f = Fiber();
    f.slot = t_slots[static_cast<std::size_t>(i)].get();
    const unsigned u = static_cast<unsigned>(i);
    f.index = {u % block.x, (u / block.x) % block.y, u / (block.x * block.y)};
    f.lane = i % 32;
    f.warp = i / 32;
  }
  b.warps.assign(static_cast<std::size_t>((n + 31) / 32), Warp());
  for (std::size_t w = 0; w < b.warps.size(); ++w) b.warps[w].size = std::min(32, n - static_cast<int>(w) * 32);
  Block* outer = t_block;
  t_block = &b;
  for (;;) {
    bool progressed = false, finished = true;
    for (int i = 0; i < n && b.error.empty(); ++i) {
      const FiberState s = b.fibers[static_cast<std::size_t>(i)].state;
      if (s == FiberState::NotStarted || s == FiberState::Runnable) {
        resume(b, i);
        progressed = true;
      }
    }
    if (!b.error.empty()) break;
    for (const Fiber& f : b.fibers)
      if (f.state != FiberState::Done) finished = false;
    if (finished) break;
    if (!progressed) {
      b.error = describe_deadlock(b);
      break;
    }
  }
  t_block = outer;
  return b.error.empty();
}

void run_grid(const dim3& grid, const dim3& block, std::uintptr_t kernel, const char* name,
              const std::function<void()>& body, int device) {
  gridDim = grid;
  blockDim = block;
  auto& known = state().uses_barriers;
  auto it = known.find(kernel);
  bool fibers = it == known.end() || it->second;
  bool first = it == known.end();
  for (unsigned z = 0; z < grid.z; ++z) {
    for (unsigned y = 0; y < grid.y; ++y) {
      for (unsigned x = 0; x < grid.x; ++x) {
        blockIdx = {x, y, z};
        if (!fibers) {
          t_direct_kernel = name;
          for (unsigned tz = 0; tz < block.z; ++tz)
            for (unsigned ty = 0; ty < block.y; ++ty)
              for (unsigned tx = 0; tx < block.x; ++tx) {
                threadIdx = {tx, ty, tz};
                body();
              }
          t_direct_kernel = nullptr;
          continue;
        }
        Block b;
        b.body = &body;
        b.kernel = name;
        if (!run_fibers(b, block)) {
          report(std::string("kernel ") + name + ", block (" + std::to_string(x) + ", " + std::to_string(y) + ", " +
                 std::to_string(z) + "): " + b.error);
          state().devices[static_cast<std::size_t>(device)].pending = cudaErrorLaunchFailure;
          return;
        }
        if (first) {
          known[kernel] = b.synchronized;
          fibers = b.synchronized;
          first = false;
        }
      }
    }
  }
}

bool valid_launch(const dim3& g, const dim3& b, std::size_t smem) {
  const unsigned long long threads = 1ull * b.x * b.y * b.z;
  return g.x >= 1 && g.y >= 1 && g.z >= 1 && b.x >= 1 && b.y >= 1 && b.z >= 1 && g.x <= 2147483647u &&
         g.y <= 65535u && g.z <= 65535u && b.x <= 1024u && b.y <= 1024u && b.z <= 64u && threads <= 1024u &&
         smem <= kSharedMemPerBlock;
}

Block& synchronizing_block(const char* what, const char* file, int line) {
  if (t_block == nullptr) {
    if (t_direct_kernel != nullptr)
      fatal(std::string("kernel ") + t_direct_kernel + " reached " + what + " at " + file + ":" + std::to_string(line) +
            ", but block 0 of its first launch never did, so it runs without fibers (Note [Fibers only where needed])");
    fatal(std::string(what) + " called outside a kernel at " + file + ":" + std::to_string(line));
  }
  t_block->synchronized = true;
  return *t_block;
}

}  // namespace

// ------------------------------------------------------------------------------------------------
// Internal interface (emulator.h)

std::recursive_mutex& api_mutex() { return state().mutex; }

void trace(const std::string& what) {
  if (config().trace) std::fprintf(stderr, "tensorgrad CUDA emulator: %s\n", what.c_str());
}
int current_device() { return t_device; }
bool wrong_bias_pointer() { return config().wrong_bias_pointer; }

CUstream_st* stream_of(cudaStream_t stream) {
  if (stream == nullptr) return default_stream(t_device);
  return state().streams.count(stream) ? stream : nullptr;
}

int device_of(const CUstream_st* stream) { return stream->device; }

void submit(CUstream_st* s, std::function<void()> op) {
  if (s->capture != nullptr) {   // Note [Graphs on the emulator]: recorded, not run
    if (!s->capture_invalid) s->capture->nodes.push_back(std::move(op));
    return;
  }
  s->queue.push_back(std::move(op));
  ++s->enqueued;
  if (!config().deferred) flush(s);
}

bool in_device_memory(const void* p, std::size_t bytes, int device) {
  bool overflow = false;
  const Allocation* a = find_allocation(p, bytes, &overflow);
  return a != nullptr && a->device == device;
}

void report(const std::string& what) {
  std::fprintf(stderr, "tensorgrad CUDA emulator: %s\n", what.c_str());
  std::fflush(stderr);
}

// ------------------------------------------------------------------------------------------------
// Device-side primitives (cuda_runtime.h)

void launch(const dim3& grid, const dim3& block, std::size_t smem, cudaStream_t stream, std::uintptr_t kernel,
            const char* name, std::function<void()> body) {
  std::lock_guard<std::recursive_mutex> lock(api_mutex());
  if (!valid_launch(grid, block, smem)) {
    fail(cudaErrorInvalidConfiguration);
    return;
  }
  CUstream_st* s = stream_of(stream);
  if (s == nullptr || s->device != t_device) {
    if (s != nullptr)
      report(std::string("kernel ") + name + " launched on a stream of cuda:" + std::to_string(s->device) +
             " while cuda:" + std::to_string(t_device) + " is current");
    fail(cudaErrorInvalidResourceHandle);
    return;
  }
  trace(std::string("launch ") + name + " grid (" + std::to_string(grid.x) + ", " + std::to_string(grid.y) + ", " +
        std::to_string(grid.z) + ") block (" + std::to_string(block.x) + ", " + std::to_string(block.y) + ", " +
        std::to_string(block.z) + ")");
  auto shared_body = std::make_shared<const std::function<void()>>(std::move(body));
  const int device = s->device;
  submit(s, [grid, block, kernel, name, shared_body, device] { run_grid(grid, block, kernel, name, *shared_body, device); });
}

unsigned long long shuffle(unsigned mask, unsigned long long bits, Shuffle kind, int arg, int width, const char* file,
                           int line) {
  Block& b = synchronizing_block("a warp shuffle", file, line);
  Fiber& f = b.fibers[static_cast<std::size_t>(t_fiber)];
  Warp& w = b.warps[static_cast<std::size_t>(f.warp)];
  const std::string site = std::string(file) + ":" + std::to_string(line);
  if (width < 1 || width > 32 || (width & (width - 1)) != 0) fatal("shuffle width " + std::to_string(width) + " at " + site);
  const unsigned lanes = w.size == 32 ? 0xffffffffu : (1u << w.size) - 1;
  if ((mask & ~lanes) != 0 || (mask >> f.lane & 1u) == 0) {
    b.error = "warp shuffle at " + site + " with mask " + std::to_string(mask) + " in a warp of " +
              std::to_string(w.size) + " lanes, called by lane " + std::to_string(f.lane);
    yield(FiberState::AtShuffle);   // abandoned
  }
  if (w.arrived == 0) {
    w.mask = mask;
    w.gathering = false;
  } else if (w.gathering) {
    b.error = "lanes of warp " + std::to_string(f.warp) + " meet at a shuffle and a warp-collective call at " + site;
    yield(FiberState::AtShuffle);
  } else if (w.mask != mask) {
    b.error = "lanes of warp " + std::to_string(f.warp) + " shuffle with different masks at " + site;
    yield(FiberState::AtShuffle);
  }
  const int segment = f.lane / width * width;
  int src = f.lane;
  if (kind == Shuffle::Index) src = segment + ((arg % width) + width) % width;
  else if (f.lane % width + arg < width) src = f.lane + arg;
  if ((mask >> src & 1u) == 0) {
    b.error = "lane " + std::to_string(f.lane) + " reads lane " + std::to_string(src) + ", outside the mask, at " + site;
    yield(FiberState::AtShuffle);
  }
  w.values[w.buffer][f.lane] = bits;
  f.read_buffer = w.buffer;
  f.read_lane = src;
  f.file = file;
  f.line = line;
  if (++w.arrived == __builtin_popcount(mask)) {
    for (int l = 0; l < w.size; ++l) {
      Fiber& other = b.fibers[static_cast<std::size_t>(f.warp * 32 + l)];
      if ((mask >> l & 1u) != 0 && other.state == FiberState::AtShuffle) other.state = FiberState::Runnable;
    }
    w.arrived = 0;
    w.buffer ^= 1;
  } else {
    yield(FiberState::AtShuffle);
  }
  return w.values[f.read_buffer][f.read_lane];
}

void warp_gather(const void* mine, std::size_t bytes, void* all, const char* file, int line) {
  Block& b = synchronizing_block("a warp-collective instruction", file, line);
  Fiber& f = b.fibers[static_cast<std::size_t>(t_fiber)];
  Warp& w = b.warps[static_cast<std::size_t>(f.warp)];
  const std::string site = std::string(file) + ":" + std::to_string(line);
  if (bytes > kMaxGatherBytes) fatal("warp_gather of " + std::to_string(bytes) + " bytes at " + site);
  if (w.size != 32) {
    b.error = "warp-collective instruction at " + site + " in a warp of " + std::to_string(w.size) +
              " lanes (it needs all 32)";
    yield(FiberState::AtShuffle);   // abandoned
  }
  if (w.arrived == 0) {
    w.mask = 0xffffffffu;
    w.gathering = true;
    w.gather_bytes = bytes;
  } else if (!w.gathering || w.gather_bytes != bytes) {
    b.error = "lanes of warp " + std::to_string(f.warp) + " meet at different warp-collective calls at " + site;
    yield(FiberState::AtShuffle);
  }
  if (bytes > 0) std::memcpy(&w.gathered[w.buffer][static_cast<std::size_t>(f.lane) * bytes], mine, bytes);
  f.read_buffer = w.buffer;
  f.file = file;
  f.line = line;
  if (++w.arrived == 32) {
    for (int l = 0; l < 32; ++l) {
      Fiber& other = b.fibers[static_cast<std::size_t>(f.warp * 32 + l)];
      if (other.state == FiberState::AtShuffle) other.state = FiberState::Runnable;
    }
    w.arrived = 0;
    w.gathering = false;
    w.buffer ^= 1;
  } else {
    yield(FiberState::AtShuffle);
  }
  if (bytes > 0) std::memcpy(all, w.gathered[f.read_buffer], 32 * bytes);
}

}  // namespace tg_emu

void __syncthreads(const char* file, int line) {
  using namespace tg_emu;
  const Config& c = config();
  if (c.no_barrier_line == line && !c.no_barrier_file.empty()) {
    const std::string f = file;
    if (f.size() >= c.no_barrier_file.size() &&
        f.compare(f.size() - c.no_barrier_file.size(), c.no_barrier_file.size(), c.no_barrier_file) == 0)
      return;   // the planted missing barrier
  }
  Block& b = synchronizing_block("__syncthreads", file, line);
  Fiber& f = b.fibers[static_cast<std::size_t>(t_fiber)];
  if (b.at_barrier == 0) {
    b.barrier_file = file;
    b.barrier_line = line;
  } else if (b.barrier_line != line || std::string(b.barrier_file) != file) {
    b.error = std::string("threads wait at two different __syncthreads: ") + b.barrier_file + ":" +
              std::to_string(b.barrier_line) + " and " + file + ":" + std::to_string(line);
    yield(FiberState::AtBarrier);   // abandoned
  }
  f.file = file;
  f.line = line;
  if (++b.at_barrier == static_cast<int>(b.fibers.size())) {
    for (Fiber& other : b.fibers)
      if (other.state == FiberState::AtBarrier) other.state = FiberState::Runnable;
    b.at_barrier = 0;
  } else {
    yield(FiberState::AtBarrier);
  }
}

// ------------------------------------------------------------------------------------------------
// Runtime API (cuda_runtime_api.h)

using tg_emu::api_mutex;
using tg_emu::fail;
using tg_emu::state;
using Lock = std::lock_guard<std::recursive_mutex>;

cudaError_t cudaGetDeviceCount(int* count) {
  if (count == nullptr) return fail(cudaErrorInvalidValue);
  *count = tg_emu::config().devices;
  return cudaSuccess;
}

cudaError_t cudaGetDevice(int* device) {
  if (device == nullptr) return fail(cudaErrorInvalidValue);
  *device = tg_emu::t_device;
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
  if (!tg_emu::valid_device(device)) return fail(cudaErrorInvalidDevice);
  tg_emu::t_device = device;
  return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  if (prop == nullptr) return fail(cudaErrorInvalidValue);
  if (!tg_emu::valid_device(device)) return fail(cudaErrorInvalidDevice);
  *prop = cudaDeviceProp{};
  std::snprintf(prop->name, sizeof prop->name, "tensorgrad CUDA emulator (%s streams)",
                tg_emu::config().deferred ? "deferred" : "immediate");
  prop->totalGlobalMem = tg_emu::config().memory;
  prop->sharedMemPerBlock = tg_emu::kSharedMemPerBlock;
  prop->warpSize = 32;
  prop->maxThreadsPerBlock = 1024;
  prop->maxThreadsDim[0] = 1024;
  prop->maxThreadsDim[1] = 1024;
  prop->maxThreadsDim[2] = 64;
  prop->maxGridSize[0] = 2147483647;
  prop->maxGridSize[1] = 65535;
  prop->maxGridSize[2] = 65535;
  prop->major = 9;
  prop->minor = 0;
  prop->multiProcessorCount = 1;
  return cudaSuccess;
}

cudaError_t cudaMemGetInfo(std::size_t* free, std::size_t* total) {
  if (free == nullptr || total == nullptr) return fail(cudaErrorInvalidValue);
  Lock lock(api_mutex());
  *total = tg_emu::config().memory;
  *free = *total - state().devices[static_cast<std::size_t>(tg_emu::t_device)].used;
  return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int* version) {
  if (version == nullptr) return fail(cudaErrorInvalidValue);
  *version = CUDART_VERSION;
  return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int* version) {
  if (version == nullptr) return fail(cudaErrorInvalidValue);
  *version = CUDART_VERSION;
  return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize() {
  Lock lock(api_mutex());
  ++tg_emu::g_host_waits;
  if (tg_emu::refuse_during_capture("cudaDeviceSynchronize")) return fail(cudaErrorStreamCaptureUnsupported);
  tg_emu::flush_device(tg_emu::t_device);
  return tg_emu::take_pending(tg_emu::t_device);
}

cudaError_t cudaGetLastError() {
  const cudaError_t e = tg_emu::t_last_error;
  tg_emu::t_last_error = cudaSuccess;
  return e;
}

cudaError_t cudaPeekAtLastError() { return tg_emu::t_last_error; }

const char* cudaGetErrorName(cudaError_t error) {
  switch (error) {
#define TG_EMU_NAME(e) \
  case e: return #e;
    TG_EMU_NAME(cudaSuccess)
    TG_EMU_NAME(cudaErrorInvalidValue)
    TG_EMU_NAME(cudaErrorMemoryAllocation)
    TG_EMU_NAME(cudaErrorInitializationError)
    TG_EMU_NAME(cudaErrorInvalidConfiguration)
    TG_EMU_NAME(cudaErrorInvalidPitchValue)
    TG_EMU_NAME(cudaErrorInvalidDevicePointer)
    TG_EMU_NAME(cudaErrorInvalidMemcpyDirection)
    TG_EMU_NAME(cudaErrorInsufficientDriver)
    TG_EMU_NAME(cudaErrorInvalidDeviceFunction)
    TG_EMU_NAME(cudaErrorNoDevice)
    TG_EMU_NAME(cudaErrorInvalidDevice)
    TG_EMU_NAME(cudaErrorNoKernelImageForDevice)
    TG_EMU_NAME(cudaErrorUnsupportedPtxVersion)
    TG_EMU_NAME(cudaErrorInvalidResourceHandle)
    TG_EMU_NAME(cudaErrorNotReady)
    TG_EMU_NAME(cudaErrorIllegalAddress)
    TG_EMU_NAME(cudaErrorLaunchFailure)
    TG_EMU_NAME(cudaErrorIllegalState)
    TG_EMU_NAME(cudaErrorStreamCaptureUnsupported)
    TG_EMU_NAME(cudaErrorStreamCaptureInvalidated)
    TG_EMU_NAME(cudaErrorStreamCaptureIsolation)
    TG_EMU_NAME(cudaErrorCapturedEvent)
    TG_EMU_NAME(cudaErrorStreamCaptureWrongThread)
#undef TG_EMU_NAME
  }
  return "cudaErrorUnknown";
}

const char* cudaGetErrorString(cudaError_t error) {
  switch (error) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInitializationError: return "initialization error";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorInvalidPitchValue: return "invalid pitch argument";
    case cudaErrorInvalidDevicePointer: return "invalid device pointer";
    case cudaErrorInvalidMemcpyDirection: return "invalid copy direction for memcpy";
    case cudaErrorInsufficientDriver: return "CUDA driver version is insufficient for CUDA runtime version";
    case cudaErrorInvalidDeviceFunction: return "invalid device function";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorNoKernelImageForDevice: return "no kernel image is available for execution on the device";
    case cudaErrorUnsupportedPtxVersion: return "the provided PTX was compiled with an unsupported toolchain";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorNotReady: return "device not ready";
    case cudaErrorIllegalAddress: return "an illegal memory access was encountered";
    case cudaErrorLaunchFailure: return "unspecified launch failure";
    case cudaErrorIllegalState: return "the resource is not in a valid state to perform the requested operation";
    case cudaErrorStreamCaptureUnsupported: return "operation not permitted when stream is capturing";
    case cudaErrorStreamCaptureInvalidated: return "operation failed due to a previous error during capture";
    case cudaErrorStreamCaptureIsolation: return "operation would make the legacy stream depend on a capturing blocking stream";
    case cudaErrorCapturedEvent: return "operation not permitted on an event last recorded in a capturing stream";
    case cudaErrorStreamCaptureWrongThread: return "attempt to terminate a thread-local capture sequence from another thread";
  }
  return "unknown error";
}

// ---- memory

cudaError_t cudaMalloc(void** ptr, std::size_t size) {
  if (ptr == nullptr) return fail(cudaErrorInvalidValue);
  *ptr = nullptr;
  if (size == 0) return cudaSuccess;
  Lock lock(api_mutex());
  if (tg_emu::refuse_during_capture("cudaMalloc")) return fail(cudaErrorStreamCaptureUnsupported);
  tg_emu::DeviceState& d = state().devices[static_cast<std::size_t>(tg_emu::t_device)];
  if (size > tg_emu::config().memory - d.used) return fail(cudaErrorMemoryAllocation);
  void* p = nullptr;
  // posix_memalign keeps the exact size, so that ASan's redzone starts at the last byte asked for.
  if (posix_memalign(&p, 256, size) != 0 || p == nullptr) return fail(cudaErrorMemoryAllocation);
  std::memset(p, 0xff, size);   // not zero: every float and double reads as NaN until written
  state().allocations[reinterpret_cast<std::uintptr_t>(p)] = {size, tg_emu::t_device};
  d.used += size;
  *ptr = p;
  return cudaSuccess;
}

cudaError_t cudaFree(void* ptr) {
  if (ptr == nullptr) return cudaSuccess;
  Lock lock(api_mutex());
  if (tg_emu::refuse_during_capture("cudaFree")) return fail(cudaErrorStreamCaptureUnsupported);
  ++tg_emu::g_host_waits;
  tg_emu::flush_all();   // cudaFree synchronizes: queued work may still use the block
  auto& all = state().allocations;
  auto it = all.find(reinterpret_cast<std::uintptr_t>(ptr));
  if (it == all.end() || it->second.device < 0) {
    tg_emu::report("cudaFree of " + tg_emu::hex(ptr) + ", which is not the start of a device allocation");
    return fail(cudaErrorInvalidValue);
  }
  state().devices[static_cast<std::size_t>(it->second.device)].used -= it->second.size;
  all.erase(it);
  std::free(ptr);
  return cudaSuccess;
}

cudaError_t cudaHostAlloc(void** ptr, std::size_t size, unsigned int flags) {
  if (ptr == nullptr || (flags & ~0x0fu) != 0) return fail(cudaErrorInvalidValue);
  *ptr = nullptr;
  if (size == 0) return cudaSuccess;
  Lock lock(api_mutex());
  if (tg_emu::refuse_during_capture("cudaHostAlloc")) return fail(cudaErrorStreamCaptureUnsupported);
  void* p = nullptr;
  if (posix_memalign(&p, 4096, size) != 0 || p == nullptr) return fail(cudaErrorMemoryAllocation);
  state().allocations[reinterpret_cast<std::uintptr_t>(p)] = {size, -1};
  *ptr = p;
  return cudaSuccess;
}

cudaError_t cudaMallocHost(void** ptr, std::size_t size) { return cudaHostAlloc(ptr, size, cudaHostAllocDefault); }

cudaError_t cudaFreeHost(void* ptr) {
  if (ptr == nullptr) return cudaSuccess;
  Lock lock(api_mutex());
  if (tg_emu::refuse_during_capture("cudaFreeHost")) return fail(cudaErrorStreamCaptureUnsupported);
  ++tg_emu::g_host_waits;
  tg_emu::flush_all();
  auto& all = state().allocations;
  auto it = all.find(reinterpret_cast<std::uintptr_t>(ptr));
  if (it == all.end() || it->second.device >= 0) {
    tg_emu::report("cudaFreeHost of " + tg_emu::hex(ptr) + ", which is not the start of a pinned allocation");
    return fail(cudaErrorInvalidValue);
  }
  all.erase(it);
  std::free(ptr);
  return cudaSuccess;
}

namespace tg_emu {
namespace {

bool is_device(Space s) { return s == Space::Device; }

/// Checks a copy's direction against where its two ranges are, and that device memory belongs to
/// `device`; reports and returns false otherwise.
bool check_copy(const Region& dst, const Region& src, cudaMemcpyKind kind, int device, const char* what) {
  if (dst.space == Space::Bad || src.space == Space::Bad) return false;
  bool ok = true;
  switch (kind) {
    case cudaMemcpyHostToDevice: ok = is_device(dst.space) && !is_device(src.space); break;
    case cudaMemcpyDeviceToHost: ok = !is_device(dst.space) && is_device(src.space); break;
    case cudaMemcpyDeviceToDevice: ok = is_device(dst.space) && is_device(src.space); break;
    case cudaMemcpyHostToHost: ok = !is_device(dst.space) && !is_device(src.space); break;
    case cudaMemcpyDefault: break;
  }
  if (!ok) {
    report(std::string(what) + ": the pointers do not match cudaMemcpyKind " + std::to_string(kind));
    return false;
  }
  if ((is_device(dst.space) && dst.device != device) || (is_device(src.space) && src.device != device)) {
    report(std::string(what) + ": device memory of another device than the stream's cuda:" + std::to_string(device) +
           " (copies between devices go through cudaMemcpyPeerAsync)");
    return false;
  }
  return true;
}

/// The copy as queued work: a source in pageable host memory is staged now (Note [Deferred streams]).
std::function<void()> copy_op(void* dst, const void* src, std::size_t count, Space src_space) {
  if (src_space == Space::Pageable && config().deferred) {
    auto staged = std::make_shared<std::vector<char>>(static_cast<const char*>(src), static_cast<const char*>(src) + count);
    return [dst, staged] { std::memcpy(dst, staged->data(), staged->size()); };
  }
  return [dst, src, count] { std::memmove(dst, src, count); };
}

}  // namespace
}  // namespace tg_emu

cudaError_t cudaMemcpyAsync(void* dst, const void* src, std::size_t count, cudaMemcpyKind kind, cudaStream_t stream) {
  using namespace tg_emu;
  Lock lock(api_mutex());
  trace("cudaMemcpyAsync " + std::to_string(count) + " bytes");
  CUstream_st* s = stream_of(stream);
  if (s == nullptr) return fail(cudaErrorInvalidResourceHandle);
  if (count == 0) return cudaSuccess;
  if (dst == nullptr || src == nullptr) return fail(cudaErrorInvalidValue);
  const Region d = locate(dst, count, "cudaMemcpyAsync destination"), r = locate(src, count, "cudaMemcpyAsync source");
  if (!check_copy(d, r, kind, s->device, "cudaMemcpyAsync")) return fail(cudaErrorInvalidValue);
  if (is_device(r.space) && !is_device(d.space)) ++g_device_to_host;
  if (s->capture != nullptr && (d.space == Space::Pageable || r.space == Space::Pageable)) {
    s->capture_invalid = true;   // a copy with pageable memory is not a graph node
    trace("cudaMemcpyAsync with pageable host memory refused during a stream capture");
    return fail(cudaErrorStreamCaptureUnsupported);
  }
  if (d.space == Space::Pageable) {   // into pageable memory: returns once the copy is done, as on a GPU
    ++g_host_waits;
    flush(s);
    std::memmove(dst, src, count);
    return take_pending(s->device);
  }
  submit(s, copy_op(dst, src, count, r.space));
  return cudaSuccess;
}

cudaError_t cudaMemcpy(void* dst, const void* src, std::size_t count, cudaMemcpyKind kind) {
  using namespace tg_emu;
  Lock lock(api_mutex());
  if (refuse_during_capture("cudaMemcpy")) return fail(cudaErrorStreamCaptureUnsupported);
  CUstream_st* s = default_stream(t_device);
  if (count == 0) return cudaSuccess;
  if (dst == nullptr || src == nullptr) return fail(cudaErrorInvalidValue);
  const Region d = locate(dst, count, "cudaMemcpy destination"), r = locate(src, count, "cudaMemcpy source");
  if (!check_copy(d, r, kind, s->device, "cudaMemcpy")) return fail(cudaErrorInvalidValue);
  if (is_device(r.space) && !is_device(d.space)) ++g_device_to_host;
  submit(s, copy_op(dst, src, count, r.space));
  ++g_host_waits;
  flush(s);
  return take_pending(s->device);
}

cudaError_t cudaMemcpyPeerAsync(void* dst, int dst_device, const void* src, int src_device, std::size_t count,
                                cudaStream_t stream) {
  using namespace tg_emu;
  Lock lock(api_mutex());
  CUstream_st* s = stream_of(stream);
  if (s == nullptr) return fail(cudaErrorInvalidResourceHandle);
  if (!valid_device(dst_device) || !valid_device(src_device)) return fail(cudaErrorInvalidDevice);
  if (count == 0) return cudaSuccess;
  const Region d = locate(dst, count, "cudaMemcpyPeerAsync destination");
  const Region r = locate(src, count, "cudaMemcpyPeerAsync source");
  if (d.space != Space::Device || d.device != dst_device || r.space != Space::Device || r.device != src_device) {
    report("cudaMemcpyPeerAsync: the pointers are not device memory of cuda:" + std::to_string(dst_device) +
           " and cuda:" + std::to_string(src_device));
    return fail(cudaErrorInvalidValue);
  }
  submit(s, copy_op(dst, src, count, r.space));
  return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void* ptr, int value, std::size_t count, cudaStream_t stream) {
  using namespace tg_emu;
  Lock lock(api_mutex());
  trace("cudaMemsetAsync " + std::to_string(count) + " bytes");
  CUstream_st* s = stream_of(stream);
  if (s == nullptr) return fail(cudaErrorInvalidResourceHandle);
  if (count == 0) return cudaSuccess;
  const Region d = locate(ptr, count, "cudaMemsetAsync");
  if (d.space != Space::Device || d.device != s->device) {
    if (d.space != Space::Bad) report("cudaMemsetAsync: " + hex(ptr) + " is not device memory of the stream's device");
    return fail(cudaErrorInvalidValue);
  }
  submit(s, [ptr, value, count] { std::memset(ptr, value, count); });
  return cudaSuccess;
}

cudaError_t cudaMemset2DAsync(void* ptr, std::size_t pitch, int value, std::size_t width, std::size_t height,
                              cudaStream_t stream) {
  using namespace tg_emu;
  Lock lock(api_mutex());
  CUstream_st* s = stream_of(stream);
  if (s == nullptr) return fail(cudaErrorInvalidResourceHandle);
  if (width > pitch && height > 1) return fail(cudaErrorInvalidValue);
  if (width == 0 || height == 0) return cudaSuccess;
  const std::size_t span = pitch * (height - 1) + width;
  const Region d = locate(ptr, span, "cudaMemset2DAsync");
  if (d.space != Space::Device || d.device != s->device) {
    if (d.space != Space::Bad) report("cudaMemset2DAsync: " + hex(ptr) + " is not device memory of the stream's device");
    return fail(cudaErrorInvalidValue);
  }
  submit(s, [ptr, pitch, value, width, height] {
    for (std::size_t r = 0; r < height; ++r) std::memset(static_cast<char*>(ptr) + r * pitch, value, width);
  });
  return cudaSuccess;
}

// ---- streams and events

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int flags) {
  if (stream == nullptr || (flags & ~0x1u) != 0) return fail(cudaErrorInvalidValue);
  Lock lock(api_mutex());
  auto* s = new CUstream_st();   // streams live for the process, like the contexts
  s->device = tg_emu::t_device;
  state().streams.insert(s);
  *stream = s;
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  cudaError_t result;
  {
    Lock lock(api_mutex());
    CUstream_st* s = tg_emu::stream_of(stream);
    if (s == nullptr) return fail(cudaErrorInvalidResourceHandle);
    if (s->capture != nullptr) {   // Note [Graphs on the emulator]
      s->capture_invalid = true;
      tg_emu::trace("cudaStreamSynchronize of a capturing stream (the capture is invalidated)");
      return fail(cudaErrorStreamCaptureUnsupported);
    }
    ++tg_emu::g_host_waits;
    tg_emu::flush(s);
    result = tg_emu::take_pending(s->device);
  }
  // A real synchronization blocks while the GPU finishes; waiting a little, outside the API lock,
  // gives other host threads that window, so races between threads that synchronize one device
  // (reading and clearing the error flag, say) interleave here as they would on a GPU.
  std::this_thread::sleep_for(std::chrono::microseconds(20));
  return result;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
  Lock lock(api_mutex());
  CUstream_st* s = tg_emu::stream_of(stream);
  if (s == nullptr || state().events.count(event) == 0) return fail(cudaErrorInvalidResourceHandle);
  if (flags != 0) return fail(cudaErrorInvalidValue);
  if (s->capture != nullptr || event->captured != nullptr) {   // Note [Graphs on the emulator]
    if (s->capture != nullptr && event->captured == s->capture) return cudaSuccess;   // already in order
    if (s->capture != nullptr) s->capture_invalid = true;
    return fail(cudaErrorStreamCaptureIsolation);
  }
  CUstream_st* other = event->stream;
  const std::uint64_t position = event->position;
  if (other != nullptr) tg_emu::submit(s, [other, position] { tg_emu::flush(other, position); });
  return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags) {
  if (event == nullptr || (flags & ~0x7u) != 0) return fail(cudaErrorInvalidValue);
  Lock lock(api_mutex());
  auto* e = new CUevent_st{tg_emu::t_device, nullptr, 0};
  state().events.insert(e);
  *event = e;
  return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  Lock lock(api_mutex());
  CUstream_st* s = tg_emu::stream_of(stream);
  if (s == nullptr || state().events.count(event) == 0) return fail(cudaErrorInvalidResourceHandle);
  if (event->device != s->device) {
    tg_emu::report("cudaEventRecord: an event of cuda:" + std::to_string(event->device) + " on a stream of cuda:" +
                   std::to_string(s->device));
    return fail(cudaErrorInvalidResourceHandle);
  }
  event->stream = s;
  event->position = s->enqueued;
  event->captured = s->capture;
  return cudaSuccess;
}

cudaError_t cudaEventQuery(cudaEvent_t event) {
  Lock lock(api_mutex());
  if (state().events.count(event) == 0) return fail(cudaErrorInvalidResourceHandle);
  if (event->captured != nullptr) return fail(cudaErrorCapturedEvent);
  if (tg_emu::config().early_host_reuse) return cudaSuccess;   // the planted bug: Note [Emulator settings]
  const bool done = event->stream == nullptr || event->stream->executed >= event->position;
  return done ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  Lock lock(api_mutex());
  if (state().events.erase(event) == 0) return fail(cudaErrorInvalidResourceHandle);
  delete event;   // waits already queued hold its stream and position, not the event
  return cudaSuccess;
}

// ---- stream capture and graphs (Note [Graphs on the emulator])

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode mode) {
  Lock lock(api_mutex());
  if (stream == nullptr) return fail(cudaErrorStreamCaptureUnsupported);   // the legacy default stream
  CUstream_st* s = tg_emu::stream_of(stream);
  if (s == nullptr) return fail(cudaErrorInvalidResourceHandle);
  if (mode != cudaStreamCaptureModeGlobal && mode != cudaStreamCaptureModeThreadLocal &&
      mode != cudaStreamCaptureModeRelaxed)
    return fail(cudaErrorInvalidValue);
  if (s->capture != nullptr) return fail(cudaErrorIllegalState);
  s->capture = new CUgraph_st();
  s->capture_mode = mode;
  s->capture_thread = std::this_thread::get_id();
  s->capture_invalid = false;
  tg_emu::trace("cudaStreamBeginCapture");
  return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* graph) {
  Lock lock(api_mutex());
  if (graph == nullptr) return fail(cudaErrorInvalidValue);
  *graph = nullptr;
  CUstream_st* s = tg_emu::stream_of(stream);
  if (s == nullptr) return fail(cudaErrorInvalidResourceHandle);
  if (s->capture == nullptr) return fail(cudaErrorIllegalState);
  if (s->capture_mode != cudaStreamCaptureModeRelaxed && s->capture_thread != std::this_thread::get_id())
    return fail(cudaErrorStreamCaptureWrongThread);
  CUgraph_st* g = s->capture;
  const bool invalid = s->capture_invalid;
  s->capture = nullptr;
  s->capture_invalid = false;
  for (const CUevent_st* e : state().events)   // events recorded in it no longer name a live capture
    if (e->captured == g) const_cast<CUevent_st*>(e)->captured = nullptr;
  tg_emu::trace("cudaStreamEndCapture: " + std::to_string(g->nodes.size()) + " nodes" + (invalid ? " (invalidated)" : ""));
  if (invalid) {
    delete g;
    return fail(cudaErrorStreamCaptureInvalidated);
  }
  *graph = g;
  return cudaSuccess;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t stream, cudaStreamCaptureStatus* status) {
  Lock lock(api_mutex());
  if (status == nullptr) return fail(cudaErrorInvalidValue);
  CUstream_st* s = tg_emu::stream_of(stream);
  if (s == nullptr) return fail(cudaErrorInvalidResourceHandle);
  *status = s->capture == nullptr ? cudaStreamCaptureStatusNone
            : s->capture_invalid  ? cudaStreamCaptureStatusInvalidated
                                  : cudaStreamCaptureStatusActive;
  return cudaSuccess;
}

cudaError_t cudaThreadExchangeStreamCaptureMode(cudaStreamCaptureMode* mode) {
  if (mode == nullptr) return fail(cudaErrorInvalidValue);
  const cudaStreamCaptureMode previous = tg_emu::t_capture_mode;
  tg_emu::t_capture_mode = *mode;
  *mode = previous;
  return cudaSuccess;
}

cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t* nodes, std::size_t* count) {
  if (graph == nullptr || count == nullptr || nodes != nullptr) return fail(cudaErrorInvalidValue);   // counting only
  Lock lock(api_mutex());
  *count = graph->nodes.size();
  return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long flags) {
  if (exec == nullptr || graph == nullptr || flags != 0) return fail(cudaErrorInvalidValue);
  Lock lock(api_mutex());
  *exec = new CUgraphExec_st{graph->nodes};
  return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
  if (exec == nullptr) return fail(cudaErrorInvalidValue);
  Lock lock(api_mutex());
  CUstream_st* s = tg_emu::stream_of(stream);
  if (s == nullptr) return fail(cudaErrorInvalidResourceHandle);
  if (s->capture != nullptr) return fail(cudaErrorStreamCaptureUnsupported);   // no child graphs here
  tg_emu::trace("cudaGraphLaunch: " + std::to_string(exec->nodes.size()) + " nodes");
  const std::vector<std::function<void()>>* nodes = &exec->nodes;   // the exec outlives its queued launches
  tg_emu::submit(s, [nodes] {
    for (const auto& node : *nodes) node();
  });
  return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  if (exec == nullptr) return fail(cudaErrorInvalidValue);
  Lock lock(api_mutex());
  tg_emu::flush_all();   // a launch still queued runs its nodes first
  delete exec;
  return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  if (graph == nullptr) return fail(cudaErrorInvalidValue);
  Lock lock(api_mutex());
  delete graph;
  return cudaSuccess;
}

// The number of calls so far that made the host wait for a device: cudaStreamSynchronize,
// cudaDeviceSynchronize, synchronous cudaMemcpy, cudaMemcpyAsync into pageable memory, cudaFree and
// cudaFreeHost. Tests count the waits of a training step with it (a weak symbol there: absent on a GPU).
extern "C" unsigned long long tg_cuda_emulator_host_waits() { return tg_emu::g_host_waits.load(); }

// The number of copies so far from device memory to host memory (cudaMemcpy, cudaMemcpyAsync; pinned or
// pageable). Tests check with it that an op's data stays on the device (a weak symbol there too).
extern "C" unsigned long long tg_cuda_emulator_device_to_host_copies() { return tg_emu::g_device_to_host.load(); }
