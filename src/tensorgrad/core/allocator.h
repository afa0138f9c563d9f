/// \file
/// core/allocator.h: the Allocator interface and the caching CPU allocator behind every CPU Storage.
/// The CUDA caching allocator implements the same interface in backend/cuda/ (its own issue).
#pragma once
#include <cstddef>
#include <cstdint>

#include "tensorgrad/core/memory.h"

namespace tg {

/// Where a Storage gets its bytes: the caching CPU allocator (cpu_allocator()), or the CUDA caching
/// allocator of one device. Implement it to back tensors with other memory.
class Allocator {
 public:
  virtual ~Allocator() = default;
  /// Returns at least nbytes (64-byte aligned on CPU); throws OutOfMemoryError. nbytes == 0 gives nullptr.
  virtual void* allocate(std::size_t nbytes) = 0;
  /// Gives back a block from allocate(nbytes) with the same nbytes. Never throws.
  virtual void deallocate(void* ptr, std::size_t nbytes) noexcept = 0;
};

/// The counters of the caching CPU allocator (cpu_memory_stats()); tg::memory reads them.
/// reserved == allocated + cached.
struct CpuMemoryStats : memory::MemoryStats {
  std::size_t cached = 0;          ///< bytes in freed blocks kept for reuse
};

/// The process-wide caching CPU allocator behind every CPU Storage; never destroyed, thread-safe.
///
/// Note [CPU caching allocator]
/// A training step frees and re-requests the same sizes every iteration; a fresh 64 MiB block costs
/// ~50 ms of page faults here. Freed blocks are kept in per-size free lists (sizes rounded so that
/// near-equal requests share blocks) and handed out again; blocks of 2 MiB and more are
/// madvise(MADV_HUGEPAGE)d. The cache is bounded (set_cpu_cache_limit()); on allocation failure it is
/// emptied and the request retried once, then OutOfMemoryError names the requested size and lists
/// the statistics of every device (tg::memory::detail::all_devices_line).
/// A request larger than the machine's RAM and swap together is treated as a failed allocation
/// without asking the system: under Linux's "always overcommit" policy (vm.overcommit_memory = 1, as
/// on some VMs) malloc would grant it and the first write would bring the kernel's OOM killer instead
/// of an OutOfMemoryError.
Allocator& cpu_allocator();
/// The CPU allocator's current byte counts.
CpuMemoryStats cpu_memory_stats();
/// Frees every cached (unused) CPU block; live blocks stay (tg::memory::empty_cache).
void cpu_empty_cache();
/// Restarts the peaks of cpu_memory_stats() from the current values (tg::memory::reset_peak_memory_stats).
void cpu_reset_peak_memory_stats();
/// Most bytes of freed blocks the CPU cache keeps; blocks freed beyond it go back to the system.
/// Empties the cache.
void set_cpu_cache_limit(std::size_t bytes);   ///< Default 1 GiB.

}  // namespace tg
