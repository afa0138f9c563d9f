// core/allocator.cpp: the caching CPU allocator. See Note [CPU caching allocator] in allocator.h.
#include "tensorgrad/core/allocator.h"

#include <pthread.h>
#include <sys/mman.h>
#include <sys/sysinfo.h>

#include <array>
#include <atomic>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "tensorgrad/core/debug.h"
#include "tensorgrad/core/error.h"

// Under AddressSanitizer the cache would hide bugs (a read past a tensor's bytes lands in the block's
// rounding slack; a use after free lands in a cached block), so both are poisoned while not in use.
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TG_ASAN_POISONING 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) && !defined(TG_ASAN_POISONING)
#define TG_ASAN_POISONING 1
#endif
#ifdef TG_ASAN_POISONING
#include <sanitizer/asan_interface.h>
#endif

namespace tg {
namespace {

/// RAM plus swap (sysinfo), read once; the largest size when sysinfo fails.
std::size_t machine_memory_bytes() {
  static const std::size_t bytes = [] {
    struct sysinfo si {};
    if (::sysinfo(&si) != 0 || si.mem_unit == 0) return std::numeric_limits<std::size_t>::max();
    const std::size_t max = std::numeric_limits<std::size_t>::max();
    const std::size_t units = static_cast<std::size_t>(si.totalram) + static_cast<std::size_t>(si.totalswap);
    return units > max / si.mem_unit ? max : units * si.mem_unit;
  }();
  return bytes;
}

#ifdef TG_ASAN_POISONING
void mark_in_use(void* p, std::size_t nbytes, std::size_t size) {   // [0, nbytes) usable, the slack not
  ASAN_UNPOISON_MEMORY_REGION(p, nbytes);
  ASAN_POISON_MEMORY_REGION(static_cast<char*>(p) + nbytes, size - nbytes);
}
void mark_cached(void* p, std::size_t size) { ASAN_POISON_MEMORY_REGION(p, size); }
void mark_freed(void* p, std::size_t size) { ASAN_UNPOISON_MEMORY_REGION(p, size); }
#else
void mark_in_use(void*, std::size_t, std::size_t) {}
void mark_cached(void*, std::size_t) {}
void mark_freed(void*, std::size_t) {}
#endif

constexpr std::size_t kAlign = 64;
constexpr std::size_t kHugePage = std::size_t(2) << 20;
constexpr std::size_t kSmallMax = 4096;

// Small sizes round to 64 B; larger ones to a quarter of their power of two (at most 25% waste).
std::size_t round_size(std::size_t n) {
  if (n <= kSmallMax) return (n + kAlign - 1) / kAlign * kAlign;
  std::size_t p = 1;
  while (p < n) p <<= 1;
  const std::size_t q = p / 8;
  return (n + q - 1) / q * q;
}

/// The allocator's lock. Its critical sections are a free-list push or pop, and every op allocates:
/// one atomic exchange takes it, where std::mutex costs two locked operations and two calls (a lock
/// and unlock round trip measured 6 ns against 13 ns here). A waiter spins briefly, then yields.
class SpinLock {
 public:
  void lock() noexcept {
    int spins = 0;
    while (locked_.exchange(true, std::memory_order_acquire)) {
      while (locked_.load(std::memory_order_relaxed)) {
        if (++spins < 64) {
#if defined(__x86_64__) || defined(__i386__)
          __builtin_ia32_pause();
#endif
        } else {
          std::this_thread::yield();   // the holder may be descheduled (empty_cache frees many blocks)
        }
      }
    }
  }
  void unlock() noexcept { locked_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> locked_{false};
};

class CachingCpuAllocator;
CachingCpuAllocator* g_allocator = nullptr;   // the one instance, for the fork handlers

class CachingCpuAllocator final : public Allocator {
 public:
  CachingCpuAllocator() {
    // A fork while another thread holds the lock would leave it held forever in the child (with the
    // free lists perhaps half-updated): fork waits for the lock, and both sides release it after.
    g_allocator = this;
    ::pthread_atfork([] { g_allocator->lock_.lock(); }, [] { g_allocator->lock_.unlock(); },
                     [] { g_allocator->lock_.unlock(); });
  }

  void* allocate(std::size_t nbytes) override {
    if (nbytes == 0) return nullptr;
    const std::size_t size = round_size(nbytes);
    {
      std::lock_guard<SpinLock> lock(lock_);
      std::vector<void*>* list = find_free_list(size);
      if (list != nullptr && !list->empty()) {
        void* p = list->back();
        list->pop_back();
        stats_.cached -= size;
        account_alloc(size, false);
        mark_in_use(p, nbytes, size);
        return p;
      }
    }
    void* p = raw_alloc(size);
    if (p == nullptr) {   // give the cache back to the system and try once more
      count([](CpuMemoryStats& s) { ++s.alloc_retries; });
      cpu_empty_cache();
      p = raw_alloc(size);
    }
    if (p == nullptr) {
      count([](CpuMemoryStats& s) { ++s.ooms; });
      const std::size_t machine = machine_memory_bytes();
      throw OutOfMemoryError(detail::cat(
          "CPU out of memory: tried to allocate ", nbytes, " bytes (", memory::format_bytes(nbytes), ", ", size,
          " rounded) ",
          size > machine ? detail::cat("(more than this machine's RAM and swap, ", memory::format_bytes(machine), ") ")
                         : std::string(),
          "after freeing the allocator's cache and retrying; memory held by tensorgrad: ",
          memory::detail::all_devices_line(), memory::detail::largest_live_tensors(5),
          ". Free tensors you no longer need, lower the batch size, or use tg::checkpoint to keep fewer activations."));
    }
    std::lock_guard<SpinLock> lock(lock_);
    account_alloc(size, true);
    mark_in_use(p, nbytes, size);
    return p;
  }

  void deallocate(void* ptr, std::size_t nbytes) noexcept override {
    if (ptr == nullptr) return;
    const std::size_t size = round_size(nbytes);
    std::lock_guard<SpinLock> lock(lock_);
    stats_.allocated -= size;
    stats_.freed_total += size;
    --stats_.blocks;
    ++stats_.frees_total;
    if (stats_.cached + size <= limit_) {
      try {
        free_list(size).push_back(ptr);
        stats_.cached += size;
        mark_cached(ptr, size);
        return;
      } catch (...) {  // the free list could not grow: give the block back instead
      }
    }
    mark_freed(ptr, size);
    std::free(ptr);
    stats_.reserved -= size;
    stats_.released_total += size;
  }

  void empty_cache() {
    std::lock_guard<SpinLock> lock(lock_);
    auto free_blocks = [this](std::vector<void*>& list, std::size_t size) {
      for (void* p : list) {
        mark_freed(p, size);
        std::free(p);
        stats_.reserved -= size;
        stats_.released_total += size;
      }
      list.clear();
    };
    for (std::size_t i = 0; i < small_free_.size(); ++i) free_blocks(small_free_[i], (i + 1) * kAlign);
    for (auto& kv : free_) free_blocks(kv.second, kv.first);
    free_.clear();
    stats_.cached = 0;
  }

  CpuMemoryStats stats() {
    std::lock_guard<SpinLock> lock(lock_);
    return stats_;
  }
  void reset_peak() {
    std::lock_guard<SpinLock> lock(lock_);
    stats_.peak_allocated = stats_.allocated;
    stats_.peak_reserved = stats_.reserved;
    stats_.peak_blocks = stats_.blocks;
  }
  void set_limit(std::size_t bytes) {
    {
      std::lock_guard<SpinLock> lock(lock_);
      limit_ = bytes;
    }
    empty_cache();
  }

 private:
  static void* raw_alloc(std::size_t size) {
    if (size > machine_memory_bytes()) return nullptr;   // Note [CPU caching allocator]: overcommit
    if (size < kHugePage) return std::aligned_alloc(kAlign, size);   // size is a multiple of 64
    // Large blocks start on a 2 MiB boundary so that madvise covers whole huge pages (best effort).
    const std::size_t padded = (size + kHugePage - 1) / kHugePage * kHugePage;
    void* p = std::aligned_alloc(kHugePage, padded);
#ifdef MADV_HUGEPAGE
    if (p != nullptr) madvise(p, padded, MADV_HUGEPAGE);
#endif
    return p;
  }
  // Free list of one rounded size: small sizes index an array (no hashing on the per-op path).
  std::vector<void*>& free_list(std::size_t size) {
    return size <= kSmallMax ? small_free_[size / kAlign - 1] : free_[size];
  }
  std::vector<void*>* find_free_list(std::size_t size) {
    if (size <= kSmallMax) return &small_free_[size / kAlign - 1];
    auto it = free_.find(size);
    return it == free_.end() ? nullptr : &it->second;
  }
  /// Counts a block of `size` handed out; fresh: taken from the system rather than the cache.
  void account_alloc(std::size_t size, bool fresh) {
    stats_.allocated += size;
    stats_.allocated_total += size;
    ++stats_.blocks;
    ++stats_.allocations_total;
    if (fresh) {
      stats_.reserved += size;
      stats_.reserved_total += size;
      if (stats_.reserved > stats_.peak_reserved) stats_.peak_reserved = stats_.reserved;
    }
    if (stats_.allocated > stats_.peak_allocated) stats_.peak_allocated = stats_.allocated;
    if (stats_.blocks > stats_.peak_blocks) stats_.peak_blocks = stats_.blocks;
  }
  template <class F>
  void count(F&& f) {
    std::lock_guard<SpinLock> lock(lock_);
    f(stats_);
  }

  SpinLock lock_;
  std::array<std::vector<void*>, kSmallMax / kAlign> small_free_;   // sizes 64, 128, ..., kSmallMax
  std::unordered_map<std::size_t, std::vector<void*>> free_;         // larger sizes
  CpuMemoryStats stats_;
  std::size_t limit_ = std::size_t(1) << 30;
};

// Never destroyed: Storages freed from static destructors of user code may still call it.
CachingCpuAllocator& instance() {
  static auto* a = new CachingCpuAllocator();
  return *a;
}

}  // namespace

Allocator& cpu_allocator() { return instance(); }
CpuMemoryStats cpu_memory_stats() { return instance().stats(); }
void cpu_empty_cache() { instance().empty_cache(); }
void cpu_reset_peak_memory_stats() { instance().reset_peak(); }
void set_cpu_cache_limit(std::size_t bytes) { instance().set_limit(bytes); }

namespace debug {
namespace detail {
std::atomic<int64_t> g_live[3] = {};
}  // namespace detail
LiveCounts live_counts() {
  LiveCounts c;
  c.storages = detail::g_live[detail::kStorage].load(std::memory_order_relaxed);
  c.variables = detail::g_live[detail::kVariable].load(std::memory_order_relaxed);
  c.nodes = detail::g_live[detail::kNode].load(std::memory_order_relaxed);
  c.cpu_bytes = cpu_memory_stats().allocated;
  return c;
}
}  // namespace debug

}  // namespace tg
