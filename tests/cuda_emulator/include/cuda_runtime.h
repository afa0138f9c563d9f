// tests/cuda_emulator/include/cuda_runtime.h: the CUDA emulator's stand-in for cuda_runtime.h: the
// runtime API (cuda_runtime_api.h) plus what device code needs when src/tensorgrad/cuda/*.cu is compiled
// as host C++: the execution-space keywords, __shared__, threadIdx/blockIdx/blockDim/gridDim,
// __syncthreads, warp shuffles, atomics, and the launcher behind TG_LAUNCH (backend/cuda/launch.cuh).
// The scheduler behind them (fibers, barriers, streams) is tests/cuda_emulator/runtime.cpp.
#pragma once
#include <math.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>

#include "cuda_runtime_api.h"

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
// Note [Emulated shared memory]: blocks of a grid run one at a time on the launching host thread, so
// one thread_local copy per kernel instantiation is that block's shared memory. Unlike a GPU's, it
// keeps its contents from one block to the next (a read before the block's first write sees stale
// data, not garbage); barriers, not the storage, are what the emulator checks.
#define __shared__ static thread_local

// The built-in indices of the thread the emulator is running (set by its scheduler before each
// thread runs or resumes).
inline thread_local uint3 threadIdx{0, 0, 0};
inline thread_local uint3 blockIdx{0, 0, 0};
inline thread_local dim3 blockDim{1, 1, 1};
inline thread_local dim3 gridDim{1, 1, 1};

namespace tg_emu {

enum class Shuffle { Index, Down };

/// A warp shuffle of up to 8 bytes among the lanes of `mask` (every one of them must reach it).
unsigned long long shuffle(unsigned mask, unsigned long long bits, Shuffle kind, int arg, int width, const char* file,
                           int line);

/// A warp-collective exchange: each of the 32 lanes of a full warp contributes `bytes` (at most
/// kMaxGatherBytes) from `mine`; once every lane has, each receives all of them in `all` (lane l's at
/// all + l * bytes). The emulator's form of the instructions that read other lanes' registers
/// (mma.sync in backend/cuda/mma.cuh); with bytes 0 it is __syncwarp.
constexpr std::size_t kMaxGatherBytes = 64;
void warp_gather(const void* mine, std::size_t bytes, void* all, const char* file, int line);

/// Runs body once per CUDA thread of grid x block on `stream` (now, or when the stream is
/// synchronized in deferred mode). Launch errors go to cudaGetLastError, as on a GPU.
void launch(const dim3& grid, const dim3& block, std::size_t smem, cudaStream_t stream, std::uintptr_t kernel,
            const char* name, std::function<void()> body);

/// The callable TG_LAUNCH(grid, block, smem, stream, kernel) returns: takes the kernel's arguments,
/// converts them once to its parameter types (the parameter buffer of a real launch) and launches.
template <class... P>
class Launch {
 public:
  Launch(dim3 grid, dim3 block, std::size_t smem, cudaStream_t stream, void (*kernel)(P...), const char* name)
      : grid_(grid), block_(block), smem_(smem), stream_(stream), kernel_(kernel), name_(name) {}
  template <class... A>
  void operator()(A&&... args) const {
    static_assert(sizeof...(A) == sizeof...(P), "TG_LAUNCH: wrong number of kernel arguments");
    auto params = std::make_shared<const std::tuple<std::decay_t<P>...>>(std::forward<A>(args)...);
    void (*kernel)(P...) = kernel_;
    launch(grid_, block_, smem_, stream_, reinterpret_cast<std::uintptr_t>(kernel), name_,
           [kernel, params] { std::apply(kernel, *params); });
  }

 private:
  dim3 grid_, block_;
  std::size_t smem_;
  cudaStream_t stream_;
  void (*kernel_)(P...);
  const char* name_;
};

template <class... P>
Launch<P...> make_launch(dim3 grid, dim3 block, std::size_t smem, cudaStream_t stream, void (*kernel)(P...),
                         const char* name) {
  return Launch<P...>(grid, block, smem, stream, kernel, name);
}

template <class T>
T shuffle_value(unsigned mask, T v, Shuffle kind, int arg, int width, const char* file, int line) {
  static_assert(std::is_trivially_copyable<T>::value && sizeof(T) <= 8, "a shuffle moves at most 8 bytes");
  unsigned long long bits = 0;
  std::memcpy(&bits, &v, sizeof v);
  bits = shuffle(mask, bits, kind, arg, width, file, line);
  std::memcpy(&v, &bits, sizeof v);
  return v;
}

}  // namespace tg_emu

// The typed allocation wrappers the real cuda_runtime.h declares for C++.
template <class T>
cudaError_t cudaMalloc(T** ptr, std::size_t size) {
  return ::cudaMalloc(reinterpret_cast<void**>(ptr), size);
}
template <class T>
cudaError_t cudaMallocHost(T** ptr, std::size_t size) {
  return ::cudaMallocHost(reinterpret_cast<void**>(ptr), size);
}
template <class T>
cudaError_t cudaHostAlloc(T** ptr, std::size_t size, unsigned int flags) {
  return ::cudaHostAlloc(reinterpret_cast<void**>(ptr), size, flags);
}

/// A kernel's attributes (cudaFuncAttributes): every emulated kernel is sm_90 code.
template <class T>
cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* attr, T* entry) {
  if (attr == nullptr || entry == nullptr) return cudaErrorInvalidValue;
  attr->binaryVersion = 90;
  attr->ptxVersion = 90;
  return cudaSuccess;
}

/// A barrier among every thread of the block; the emulator also names the call site in reports.
void __syncthreads(const char* file = __builtin_FILE(), int line = __builtin_LINE());

template <class T>
T __shfl_sync(unsigned mask, T v, int src, int width = 32, const char* file = __builtin_FILE(),
              int line = __builtin_LINE()) {
  return ::tg_emu::shuffle_value(mask, v, ::tg_emu::Shuffle::Index, src, width, file, line);
}
template <class T>
T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32, const char* file = __builtin_FILE(),
                   int line = __builtin_LINE()) {
  return ::tg_emu::shuffle_value(mask, v, ::tg_emu::Shuffle::Down, static_cast<int>(delta), width, file, line);
}

/// A barrier among the 32 lanes of the calling thread's warp (the full mask only).
inline void __syncwarp(unsigned mask = 0xffffffffu, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  (void)mask;
  ::tg_emu::warp_gather(nullptr, 0, nullptr, file, line);
}

// Atomics: the threads of a grid are fibers of one host thread that switch only at barriers and
// shuffles, and the emulator runs one grid at a time, so a plain read-modify-write is atomic.
inline float atomicAdd(float* p, float v) {
  const float old = *p;
  *p = old + v;
  return old;
}
inline double atomicAdd(double* p, double v) {
  const double old = *p;
  *p = old + v;
  return old;
}
inline unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) {
  const unsigned long long old = *p;
  *p = old + v;
  return old;
}
inline int atomicAdd(int* p, int v) {
  const int old = *p;
  *p = static_cast<int>(static_cast<unsigned>(old) + static_cast<unsigned>(v));
  return old;
}
inline int atomicCAS(int* p, int compare, int value) {
  const int old = *p;
  if (old == compare) *p = value;
  return old;
}
inline unsigned long long atomicCAS(unsigned long long* p, unsigned long long compare, unsigned long long value) {
  const unsigned long long old = *p;
  if (old == compare) *p = value;
  return old;
}
