// cuda/cuda.h: the public tg::cuda API (device queries and memory statistics). No CUDA header here,
// so plain C++ consumers build. Implemented in cuda/runtime.cpp when tensorgrad is built with CUDA,
// and by the stubs at the end of engine/backend.cpp when it is not.
#pragma once
#include <cstddef>
#include <string>

namespace tg {
class Backend;
namespace cuda {

bool is_available() noexcept;          // never throws: any runtime error means "not available"
int device_count() noexcept;           // 0 without a usable GPU
void synchronize();
std::size_t memory_allocated(int device = -1);
std::size_t max_memory_allocated(int device = -1);
std::size_t memory_reserved(int device = -1);
void empty_cache();
void reset_peak_memory_stats(int device = -1);
/// Driver and runtime versions, devices, compiled architectures; or why no GPU can be used.
std::string info();

namespace detail {
/// The backend for cuda:index; throws DeviceError with the reason when it cannot be used.
Backend& backend(int index);
}  // namespace detail

}  // namespace cuda
}  // namespace tg
