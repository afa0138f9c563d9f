/// \file
/// backend/cuda/caching_allocator.h: the pool logic of the CUDA caching allocator (Note [Caching allocator]),
/// written against an injectable raw allocator (a malloc/free pair) so that
/// tests/test_cuda_allocator.cpp checks pool selection, rounding, reuse, retry-on-OOM and statistics on
/// the CPU with a fake. Plain C++, no CUDA header. The device half (cudaMalloc/cudaFree, one instance per
/// device, tg::cuda::memory_* and TG_CUDA_ALLOCATOR=passthrough) is backend/cuda/runtime.cu.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

#include "tensorgrad/core/allocator.h"
#include "tensorgrad/core/error.h"
#include "tensorgrad/core/memory.h"

namespace tg {
namespace cuda {
namespace detail {

/// Where the bytes really come from: cudaMalloc/cudaFree on a device, or a fake in tests.
struct RawAllocator {
  std::function<void*(std::size_t)> malloc;                     // nullptr: out of memory; other failures throw
  std::function<void(void*)> free;                              // must not throw
  std::function<void(std::size_t*, std::size_t*)> mem_info;     // device total and free bytes (optional)
};

/// The pool's counters; the memory::MemoryStats part is what tg::cuda::memory_stats reports.
struct PoolStats : memory::MemoryStats {
  std::size_t requested = 0;        // bytes asked for by the live blocks (before rounding)
  std::size_t cache_hits = 0;       // allocations served from the cache
  std::size_t raw_mallocs = 0, raw_frees = 0, oom_retries = 0;
  std::size_t cached() const { return reserved - allocated; }   // reserved but unused
};

// Note [Caching allocator]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// cudaMalloc is slow and cudaFree synchronizes the device, while a training step frees and requests
// the same sizes every iteration. Freed blocks stay in a size-ordered pool and are handed out again.
// Simpler than PyTorch's CUDACachingAllocator: no block splitting, and one stream per device (Note
// [One stream per device] in backend/cuda/context.cuh), so a block freed by the host while kernels that
// use it are still queued can be handed to the next request at once: every later use is queued behind
// them on the same stream. Requests of at most 1 MiB round up to 512 B and live in the small pool;
// larger ones round up to 2 MiB and live in the large pool. A request takes the smallest cached block
// of its pool that fits and wastes little (max_reuse). On out-of-memory the cache is released and the
// allocation retried once, then tg::OutOfMemoryError says what was asked, what the device has and
// what tensorgrad holds. Passthrough mode (TG_CUDA_ALLOCATOR=passthrough) caches nothing and rounds
// only up to 4 bytes, so that compute-sanitizer sees every tensor's bounds to the word: the atomic
// adds of 1- and 2-byte types (backend/cuda/index.cu) read the aligned 32-bit word holding the element, as
// cudaMalloc's 256-byte granularity always allows.
//
// Note [Graph pools]
// ~~~~~~~~~~~~~~~~~~
// A CUDA graph replays its kernels on the addresses they were captured with, so the memory a capture
// allocates must never be handed to anyone else while the graph may be replayed. While a capture is
// on (begin_capture(pool)), every allocation comes from the private pool `pool` (its cached blocks, or
// new ones from the raw allocator), and a block allocated there returns to that pool when freed,
// during the capture or after it. Blocks freed during the capture can be reused by later allocations
// of the same capture (the graph runs them in capture order) and by later captures into the same
// pool (graphs sharing a pool must be replayed in the order they were captured, as with PyTorch's
// graph_pool_handle). A pool lives while a graph uses it (retain_pool/release_pool); after the last
// release its cached blocks join the ordinary cache and its live blocks go there when freed. Nothing
// is given back to the raw allocator during a capture (cudaFree is illegal there): an out-of-memory
// inside a capture raises at once. A block the host writes between replays (a captured optimizer's
// step values) must not share memory with any temporary of the graph, which a replay would write
// over: it is allocated fresh (allocate(n, true)), never from the cache. Passthrough mode reuses
// nothing, in a pool as elsewhere: a capture's blocks keep their exact sizes (compute-sanitizer and
// the emulator's ASan see a replay's accesses to the byte), stay allocated while the pool lives and
// are freed at its last release (outside a capture; inside one they wait in the ordinary lists for
// empty_cache); other blocks freed during a capture wait there until it ends.
class CachingAllocator {
 public:
  static constexpr std::size_t kSmallSize = std::size_t(1) << 20;    // small pool: rounded <= 1 MiB
  static constexpr std::size_t kSmallRound = 512;
  static constexpr std::size_t kLargeRound = std::size_t(2) << 20;

  /// 512-byte multiples up to 1 MiB, 2 MiB multiples above.
  static std::size_t round_size(std::size_t n) {
    if (n <= kSmallSize) return (n + kSmallRound - 1) / kSmallRound * kSmallRound;
    return (n + kLargeRound - 1) / kLargeRound * kLargeRound;
  }
  static bool is_small(std::size_t rounded) { return rounded <= kSmallSize; }
  /// The largest cached block a request of `rounded` bytes may take: twice its size in the small pool,
  /// a quarter more in the large one (a cached 4 MiB block is not spent on a 2 MiB request).
  static std::size_t max_reuse(std::size_t rounded) {
    return is_small(rounded) ? 2 * rounded : rounded + rounded / 4;
  }

  /// `where` names the device in messages ("cuda:0"); caching = false is passthrough mode.
  CachingAllocator(RawAllocator raw, std::string where, bool caching)
      : raw_(std::move(raw)), where_(std::move(where)), caching_(caching) {}
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  bool caching() const { return caching_; }

  /// At least nbytes (nullptr for 0). Throws OutOfMemoryError after one release-and-retry (no retry
  /// during a capture: Note [Graph pools]). fresh: a new block from the raw allocator, never a cached
  /// one (a graph's input written between replays must not share memory with the graph's temporaries).
  void* allocate(std::size_t nbytes, bool fresh = false) {
    if (nbytes == 0) return nullptr;
    std::lock_guard<std::mutex> lock(mutex_);
    if (nbytes > std::numeric_limits<std::size_t>::max() - kLargeRound) throw_oom(nbytes, nbytes, false);
    const std::size_t size = caching_ ? round_size(nbytes) : (nbytes + 3) / 4 * 4;
    if (caching_ && !fresh) {
      Pool& pool = pool_for(capture_pool_, size);
      auto it = pool.lower_bound(size);   // the smallest cached block that fits...
      if (it != pool.end() && it->first <= max_reuse(size)) {   // ...and wastes little
        const std::size_t block = it->first;
        void* p = it->second;
        pool.erase(it);
        ++stats_.cache_hits;
        add_live(p, block, nbytes, capture_pool_);
        return p;
      }
    }
    void* p = raw_.malloc(size);
    if (p == nullptr && capture_pool_ == 0) {
      ++stats_.oom_retries;
      ++stats_.alloc_retries;
      release_cached_locked();
      p = raw_.malloc(size);
    }
    if (p == nullptr) throw_oom(nbytes, size, capture_pool_ == 0);
    ++stats_.raw_mallocs;
    stats_.reserved += size;
    stats_.reserved_total += size;
    if (stats_.reserved > stats_.peak_reserved) stats_.peak_reserved = stats_.reserved;
    try {
      add_live(p, size, nbytes, capture_pool_);
    } catch (...) {   // the bookkeeping could not grow: give the block back
      raw_.free(p);
      stats_.reserved -= size;
      throw;
    }
    return p;
  }

  /// Returns a block from allocate() to the cache (or to the raw allocator in passthrough mode).
  /// Unknown pointers are ignored. Never throws.
  void deallocate(void* ptr) noexcept {
    if (ptr == nullptr) return;
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = live_.find(ptr);
    if (it == live_.end()) return;
    const std::size_t block = it->second.size;
    const std::uint64_t owner = private_.count(it->second.pool) != 0 ? it->second.pool : 0;
    stats_.allocated -= block;
    stats_.requested -= it->second.requested;
    stats_.freed_total += block;
    --stats_.blocks;
    ++stats_.frees_total;
    live_.erase(it);
    // A graph pool's block stays allocated, also in passthrough mode, and nothing is freed during a
    // capture: passthrough parks such a block in the ordinary lists until the capture ends.
    if (caching_ || owner != 0 || capture_pool_ != 0) {
      try {
        pool_for(owner, block).emplace(block, ptr);
        return;
      } catch (...) {   // the pool could not grow: free the block instead
      }
    }
    raw_.free(ptr);
    ++stats_.raw_frees;
    stats_.reserved -= block;
    stats_.released_total += block;
  }

  /// Gives every cached block of the ordinary cache back to the raw allocator (tg::cuda::empty_cache);
  /// nothing during a capture, where freeing is illegal. Live blocks and graph pools stay.
  void empty_cache() noexcept {
    std::lock_guard<std::mutex> lock(mutex_);
    if (capture_pool_ == 0) release_cached_locked();
  }

  /// From now on allocations come from graph pool `pool` (non-zero), which gains a user (Note [Graph
  /// pools]). Error when a capture is already on.
  void begin_capture(std::uint64_t pool) {
    std::lock_guard<std::mutex> lock(mutex_);
    TG_CHECK(capture_pool_ == 0, Error, "CUDA graph capture on ", where_, ": a capture is already on");
    TG_CHECK(pool != 0, Error, "CUDA graph capture: pool id 0 is not a graph pool");
    ++private_[pool].users;
    capture_pool_ = pool;
  }
  /// Allocations come from the ordinary cache again; the pool keeps its user. Passthrough mode frees
  /// the blocks it could not free during the capture.
  void end_capture() noexcept {
    std::lock_guard<std::mutex> lock(mutex_);
    capture_pool_ = 0;
    if (!caching_) release_cached_locked();
  }
  /// Another graph uses `pool`.
  void retain_pool(std::uint64_t pool) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++private_[pool].users;
  }
  /// One user of `pool` is gone; after the last, its cached blocks join the ordinary cache and its
  /// live blocks go there when freed.
  void release_pool(std::uint64_t pool) noexcept {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = private_.find(pool);
    if (it == private_.end() || --it->second.users > 0 || capture_pool_ == pool) return;
    const bool free_now = !caching_ && capture_pool_ == 0;   // passthrough keeps no cache
    for (Pool* from : {&it->second.small, &it->second.large}) {
      for (auto& kv : *from) {
        try {
          if (!free_now) {
            pool_for(0, kv.first).emplace(kv.first, kv.second);
            continue;
          }
        } catch (...) {   // the cache could not grow: free the block instead
        }
        raw_.free(kv.second);
        ++stats_.raw_frees;
        stats_.reserved -= kv.first;
        stats_.released_total += kv.first;
      }
    }
    private_.erase(it);
  }
  /// The graph pool allocations come from now; 0 outside a capture.
  std::uint64_t capture_pool() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return capture_pool_;
  }
  /// Cached blocks of graph pool `pool` (0 when it does not exist).
  std::size_t pool_cached_blocks(std::uint64_t pool) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = private_.find(pool);
    return it == private_.end() ? 0 : it->second.small.size() + it->second.large.size();
  }

  PoolStats stats() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return stats_;
  }
  void reset_peak() {
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.peak_allocated = stats_.allocated;
    stats_.peak_reserved = stats_.reserved;
    stats_.peak_blocks = stats_.blocks;
  }
  /// Cached blocks in the small (<= 1 MiB) or the large pool.
  std::size_t cached_blocks(bool small) const {
    std::lock_guard<std::mutex> lock(mutex_);
    return (small ? small_ : large_).size();
  }

 private:
  using Pool = std::multimap<std::size_t, void*>;   // block size -> block
  struct GraphPool {
    Pool small, large;
    int users = 0;   // graphs (and the capture under way) that replay into its blocks
  };
  struct Live {
    std::size_t size, requested;
    std::uint64_t pool;   // the graph pool it came from; 0: the ordinary cache
  };

  /// The free list a block of `rounded` bytes belongs to: graph pool `pool`'s, or the ordinary cache's (0).
  Pool& pool_for(std::uint64_t pool, std::size_t rounded) {
    if (pool == 0) return is_small(rounded) ? small_ : large_;
    GraphPool& g = private_[pool];
    return is_small(rounded) ? g.small : g.large;
  }

  void add_live(void* p, std::size_t block, std::size_t nbytes, std::uint64_t pool) {
    live_.emplace(p, Live{block, nbytes, pool});
    stats_.allocated += block;
    stats_.requested += nbytes;
    stats_.allocated_total += block;
    ++stats_.blocks;
    ++stats_.allocations_total;
    if (stats_.allocated > stats_.peak_allocated) stats_.peak_allocated = stats_.allocated;
    if (stats_.blocks > stats_.peak_blocks) stats_.peak_blocks = stats_.blocks;
  }

  void release_cached_locked() noexcept {
    for (Pool* pool : {&small_, &large_}) {
      for (auto& kv : *pool) {
        raw_.free(kv.second);
        ++stats_.raw_frees;
        stats_.reserved -= kv.first;
        stats_.released_total += kv.first;
      }
      pool->clear();
    }
  }

  [[noreturn]] void throw_oom(std::size_t nbytes, std::size_t rounded, bool retried) {
    ++stats_.ooms;
    std::size_t total = 0, free = 0;
    if (raw_.mem_info) {
      try {
        raw_.mem_info(&total, &free);
      } catch (...) {   // the message still names the request
      }
    }
    throw OutOfMemoryError(tg::detail::cat(
        "CUDA out of memory on ", where_, ": tried to allocate ", nbytes, " bytes (", mib(nbytes), ", ", rounded,
        " rounded); the device has ", total, " bytes total (", mib(total), ") and ", free, " free (", mib(free),
        "); tensorgrad has ", stats_.allocated, " bytes allocated (", mib(stats_.allocated), ") and ",
        stats_.cached(), " bytes reserved but unused (", mib(stats_.cached()), ")",
        retried ? " after freeing its cache and retrying" : "", "; ", where_, ": ", memory::detail::stats_line(stats_), "; cpu: ",
        memory::detail::stats_line(cpu_memory_stats()), memory::detail::largest_live_tensors(5),
        ". Free tensors, lower the batch size, or use tg::checkpoint to keep fewer activations."));
  }
  static std::string mib(std::size_t bytes) {
    const long long hundredths = static_cast<long long>(static_cast<double>(bytes) / (1 << 20) * 100 + 0.5);
    std::string frac = std::to_string(hundredths % 100);
    if (frac.size() < 2) frac = "0" + frac;
    return std::to_string(hundredths / 100) + "." + frac + " MiB";
  }

  RawAllocator raw_;
  const std::string where_;
  const bool caching_;
  mutable std::mutex mutex_;
  Pool small_, large_;
  std::map<std::uint64_t, GraphPool> private_;   // Note [Graph pools]
  std::uint64_t capture_pool_ = 0;               // the pool allocations come from; 0: no capture
  std::unordered_map<void*, Live> live_;
  PoolStats stats_;
};

}  // namespace detail
}  // namespace cuda
}  // namespace tg
