/// \file
/// core/memory.h: memory introspection of the CPU allocator with PyTorch's torch.cuda names
/// (tg::memory::memory_allocated, max_memory_allocated, memory_reserved, reset_peak_memory_stats,
/// empty_cache, memory_stats, memory_summary), and the statistics record and table that the CUDA
/// family in core/accelerator.h (tg::cuda::memory_stats, memory_summary) shares. The CPU allocator itself
/// is core/allocator.cpp; the CUDA one backend/cuda/caching_allocator.h.
#pragma once
#include <cstddef>
#include <string>

namespace tg {
class Storage;
namespace memory {

/// One allocator's counters (torch.cuda.memory_stats, as a struct). Bytes are block sizes, i.e.
/// rounded requests. "Reserved" is what the allocator holds from the system (the CPU heap or the
/// CUDA driver): live blocks plus its cache. The peaks restart at reset_peak_memory_stats; the
/// totals count since the process started.
struct MemoryStats {
  std::size_t allocated = 0;          ///< bytes in live blocks
  std::size_t peak_allocated = 0;     ///< highest `allocated` since the last peak reset
  std::size_t allocated_total = 0;    ///< bytes of every block handed out
  std::size_t freed_total = 0;        ///< bytes of every block given back by a tensor
  std::size_t reserved = 0;           ///< bytes held from the system, live and cached
  std::size_t peak_reserved = 0;      ///< highest `reserved` since the last peak reset
  std::size_t reserved_total = 0;     ///< bytes of every block taken from the system
  std::size_t released_total = 0;     ///< bytes of every block returned to the system
  std::size_t blocks = 0;             ///< live blocks
  std::size_t peak_blocks = 0;        ///< highest `blocks` since the last peak reset
  std::size_t allocations_total = 0;  ///< blocks handed out
  std::size_t frees_total = 0;        ///< blocks given back
  std::size_t alloc_retries = 0;      ///< system allocations that failed and were retried after emptying the cache
  std::size_t ooms = 0;               ///< requests that failed after the retry (OutOfMemoryError)
};

/// Bytes in live CPU tensor blocks (rounded sizes), as torch.cuda.memory_allocated for the CPU.
std::size_t memory_allocated();
/// The peak of memory_allocated() since the process started or reset_peak_memory_stats().
std::size_t max_memory_allocated();
/// Bytes the CPU allocator holds from the heap: live blocks and its cache.
std::size_t memory_reserved();
/// The peak of memory_reserved() since the process started or reset_peak_memory_stats().
std::size_t max_memory_reserved();
/// Restarts the peaks from the current values (torch.cuda.reset_peak_memory_stats).
void reset_peak_memory_stats();
/// Returns the CPU allocator's cached, unused blocks to the heap; live tensors keep theirs.
void empty_cache();
/// Every counter of the CPU allocator.
MemoryStats memory_stats();
/// The counters of the CPU allocator as a table like torch.cuda.memory_summary().
std::string memory_summary();

/// `bytes` as torch.cuda.memory_summary prints sizes: in B below 768 KiB, in KiB below 768 MiB, in
/// MiB below 768 GiB, ..., rounded down ("512 B", "1024 KiB", "3071 MiB").
std::string format_bytes(std::size_t bytes);

namespace detail {
/// The table of memory_summary() for any allocator: title (e.g. "CPU", "CUDA, device ID 0") and counters.
std::string summary_table(const std::string& title, const MemoryStats& s);
/// "allocated 1.50 MiB, reserved 4.00 MiB (cached 2.50 MiB), peak allocated 3.00 MiB": one line of
/// counters for OutOfMemoryError messages.
std::string stats_line(const MemoryStats& s);
/// stats_line for the CPU allocator and for each CUDA device in use, each prefixed with its device
/// ("cpu: ...; cuda:0: ..."): what OutOfMemoryError messages list. Never throws.
std::string all_devices_line() noexcept;

/// The op a thread is running, as Storage::describe records it: a Node's name while the backward
/// engine runs its rule (backward true), otherwise none.
struct CurrentOp {
  const char* name = nullptr;   ///< a string literal (the Node's name), or nullptr
  bool backward = false;        ///< true inside the Node's backward rule
};
/// This thread's CurrentOp.
CurrentOp current_op() noexcept;
/// Sets this thread's CurrentOp for its lifetime and restores the previous one after.
class OpScope {
 public:
  /// Marks the thread as running `name` (its backward rule when backward is true).
  OpScope(const char* name, bool backward) noexcept;
  ~OpScope();
  OpScope(const OpScope&) = delete;
  OpScope& operator=(const OpScope&) = delete;

 private:
  CurrentOp saved_;
};
/// Lists a storage among the live tensors (Storage::describe). See Note [Live tensor report].
void track(Storage* s);
/// Removes a storage from the list (its destructor).
void untrack(Storage* s) noexcept;
/// "; largest live tensors: 512.00 MiB float32 [1024, 131072] on cuda:0 from matmul, ..." with the n
/// largest listed storages of every device, or "" when none is listed. Never throws.
std::string largest_live_tensors(std::size_t n) noexcept;
}  // namespace detail

}  // namespace memory
}  // namespace tg
