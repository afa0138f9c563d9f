// tests/cuda_emulator/emulator.h: what the emulator's cuBLAS and cuBLASLt (cublas.cpp, cublaslt.cpp)
// need from its runtime (runtime.cpp): the one lock, streams, the current device, device-memory range
// checks, reports and the planted bugs of Note [Emulator settings].
// Internal to tests/cuda_emulator/.
#pragma once
#include <cstddef>
#include <functional>
#include <mutex>
#include <string>

#include "cuda_runtime_api.h"

namespace tg_emu {

/// Every runtime and cuBLAS entry point holds it: emulated work runs one operation at a time.
std::recursive_mutex& api_mutex();
int current_device();
/// The stream a handle names (0: the current device's default stream); nullptr for an unknown handle.
CUstream_st* stream_of(cudaStream_t stream);
int device_of(const CUstream_st* stream);
/// Runs op on the stream: at once (immediate mode) or when the stream is synchronized (deferred mode).
void submit(CUstream_st* stream, std::function<void()> op);
/// Whether [p, p + bytes) lies inside one allocation of `device`'s memory.
bool in_device_memory(const void* p, std::size_t bytes, int device);
/// One line on stderr, "tensorgrad CUDA emulator: <what>": why a call failed a check.
void report(const std::string& what);
/// With TG_CUDA_EMULATE_TRACE=1, one line on stderr per unit of stream work (a kernel, a GEMM).
void trace(const std::string& what);
/// TG_CUDA_EMULATE_CANARY=wrong-bias-pointer: cublasLtMatmul reads and writes its bias vector one
/// element off (Note [Emulator settings]).
bool wrong_bias_pointer();

}  // namespace tg_emu
