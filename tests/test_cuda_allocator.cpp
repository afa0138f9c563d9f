// tests/test_cuda_allocator.cpp: the CUDA caching allocator's pool logic (backend/cuda/caching_allocator.h) on
// the CPU, through a fake raw allocator with a capacity: rounding, small/large pool selection, reuse
// limits, release-and-retry on out-of-memory, the OutOfMemoryError message, statistics and
// passthrough mode. Runs on every machine, with or without CUDA; the device side is tested in
// tests/test_cuda.cpp.
#include <cstdint>
#include <map>
#include <string>

#include "tensorgrad/backend/cuda/caching_allocator.h"
#include "testing.h"

using tg::cuda::detail::CachingAllocator;
using tg::cuda::detail::RawAllocator;

namespace {

constexpr std::size_t kKiB = 1024, kMiB = 1024 * 1024;

/// Hands out fake, never dereferenced addresses up to `capacity` bytes in use.
struct FakeDevice {
  explicit FakeDevice(std::size_t cap) : capacity(cap) {}
  std::size_t capacity;
  std::size_t in_use = 0;
  uintptr_t next = 0x10000;
  std::map<void*, std::size_t> blocks;
  int mallocs = 0, frees = 0, failed = 0;
  std::size_t last_request = 0;

  RawAllocator raw() {
    RawAllocator r;
    r.malloc = [this](std::size_t n) -> void* {
      last_request = n;
      if (in_use + n > capacity) {
        ++failed;
        return nullptr;
      }
      void* p = reinterpret_cast<void*>(next);
      next += n + 4096;
      blocks[p] = n;
      in_use += n;
      ++mallocs;
      return p;
    };
    r.free = [this](void* p) {
      auto it = blocks.find(p);
      if (it == blocks.end()) return;
      in_use -= it->second;
      blocks.erase(it);
      ++frees;
    };
    r.mem_info = [this](std::size_t* total, std::size_t* free) {
      *total = capacity;
      *free = capacity - in_use;
    };
    return r;
  }
};

}  // namespace

TEST_CASE("cuda allocator: sizes round to 512 B up to 1 MiB and to 2 MiB above") {
  CHECK(CachingAllocator::round_size(1) == 512);
  CHECK(CachingAllocator::round_size(512) == 512);
  CHECK(CachingAllocator::round_size(513) == 1024);
  CHECK(CachingAllocator::round_size(kMiB - 1) == kMiB);
  CHECK(CachingAllocator::round_size(kMiB) == kMiB);
  CHECK(CachingAllocator::round_size(kMiB + 1) == 2 * kMiB);
  CHECK(CachingAllocator::round_size(3 * kMiB) == 4 * kMiB);
  CHECK(CachingAllocator::is_small(kMiB));
  CHECK_FALSE(CachingAllocator::is_small(2 * kMiB));
  CHECK(CachingAllocator::max_reuse(1024) == 2048);
  CHECK(CachingAllocator::max_reuse(8 * kMiB) == 10 * kMiB);
}

TEST_CASE("cuda allocator: freed blocks are reused within their pool") {
  FakeDevice dev(64 * kMiB);
  CachingAllocator a(dev.raw(), "cuda:0", true);
  CHECK(a.allocate(0) == nullptr);
  void* p = a.allocate(1000);   // rounds to 1024
  CHECK(dev.last_request == 1024);
  a.deallocate(p);
  CHECK(dev.frees == 0);                       // kept in the cache
  CHECK(a.cached_blocks(true) == 1);
  void* q = a.allocate(900);                   // 1024 fits and wastes at most half
  CHECK(q == p);
  CHECK(dev.mallocs == 1);
  CHECK(a.stats().cache_hits == 1);
  a.deallocate(q);
  void* r = a.allocate(3000);                  // the cached 1024 is too small
  CHECK(r != p);
  CHECK(dev.mallocs == 2);
  a.deallocate(r);                             // cache: 1024 (p), 3072 (r)
  void* s = a.allocate(1000);
  CHECK(s == p);
  void* t = a.allocate(512);                   // only 3072 is cached: more than twice 512, so a fresh block
  CHECK(t != r);
  CHECK(dev.mallocs == 3);
  a.deallocate(s);
  a.deallocate(t);

  // A large cached block is never spent on a small request, nor a much larger one on a large request.
  void* big = a.allocate(10 * kMiB);
  a.deallocate(big);
  CHECK(a.cached_blocks(false) == 1);
  void* small = a.allocate(100 * kKiB);
  CHECK(small != big);
  void* six = a.allocate(6 * kMiB);            // 10 MiB > 6 + 1.5 MiB: not reused
  CHECK(six != big);
  void* eight = a.allocate(8 * kMiB);          // 10 MiB <= 8 + 2 MiB: reused
  CHECK(eight == big);
  a.deallocate(small);
  a.deallocate(six);
  a.deallocate(eight);
  a.deallocate(reinterpret_cast<void*>(0x1));  // unknown pointers are ignored
}

TEST_CASE("cuda allocator: statistics track live and peak and reserved and cached bytes") {
  FakeDevice dev(64 * kMiB);
  CachingAllocator a(dev.raw(), "cuda:0", true);
  void* p = a.allocate(1000);
  void* q = a.allocate(3 * kMiB);
  auto st = a.stats();
  CHECK(st.allocated == 1024 + 4 * kMiB);
  CHECK(st.requested == 1000 + 3 * kMiB);
  CHECK(st.reserved == st.allocated);
  CHECK(st.peak_allocated == st.allocated);
  a.deallocate(q);
  st = a.stats();
  CHECK(st.allocated == 1024);
  CHECK(st.cached() == 4 * kMiB);
  CHECK(st.peak_allocated == 1024 + 4 * kMiB);
  CHECK(st.blocks == 1);
  CHECK(st.peak_blocks == 2);
  CHECK(st.allocations_total == 2);
  CHECK(st.frees_total == 1);
  CHECK(st.allocated_total == 1024 + 4 * kMiB);
  CHECK(st.freed_total == 4 * kMiB);
  CHECK(st.peak_reserved == 1024 + 4 * kMiB);
  a.reset_peak();
  CHECK(a.stats().peak_allocated == 1024);
  CHECK(a.stats().peak_reserved == 1024 + 4 * kMiB);   // the cached block is still reserved
  a.empty_cache();
  st = a.stats();
  CHECK(st.reserved == 1024);
  CHECK(st.released_total == 4 * kMiB);
  CHECK(st.reserved_total == 1024 + 4 * kMiB);
  CHECK(st.cached() == 0);
  CHECK(dev.in_use == 1024);
  a.deallocate(p);
  a.empty_cache();
  CHECK(a.stats().reserved == 0);
  CHECK(dev.in_use == 0);
  CHECK(dev.mallocs == dev.frees);
}

TEST_CASE("cuda allocator: out of memory releases the cache and retries once") {
  FakeDevice dev(4 * kMiB);
  CachingAllocator a(dev.raw(), "cuda:0", true);
  void* live = a.allocate(2 * kMiB);
  void* cached = a.allocate(2 * kMiB);
  a.deallocate(cached);                         // device full: 2 MiB live + 2 MiB cached
  void* p = a.allocate(kMiB);                    // small pool: the large cached block does not fit the rule
  CHECK(p != nullptr);
  CHECK(dev.failed == 1);                        // first try failed...
  CHECK(a.stats().oom_retries == 1);
  CHECK(dev.frees == 1);                         // ...the cache was released, the retry succeeded
  CHECK(a.cached_blocks(false) == 0);

  // Still too big after the release: OutOfMemoryError with the request and the device's state.
  std::string message;
  try {
    a.allocate(3 * kMiB);
  } catch (const tg::OutOfMemoryError& e) {
    message = e.what();
  }
  REQUIRE_FALSE(message.empty());
  CHECK(message.find("CUDA out of memory on cuda:0") != std::string::npos);
  CHECK(message.find("tried to allocate 3145728 bytes") != std::string::npos);
  CHECK(message.find("4194304 bytes total") != std::string::npos);
  CHECK(message.find("1048576 free") != std::string::npos);
  CHECK(message.find("3145728 bytes allocated") != std::string::npos);   // 2 MiB + 1 MiB live
  CHECK(message.find("reserved but unused") != std::string::npos);
  CHECK(message.find("after freeing its cache and retrying") != std::string::npos);
  CHECK(message.find("cuda:0: allocated 3.00 MiB, reserved 3.00 MiB (cached 0.00 MiB), peak allocated 4.00 MiB") !=
        std::string::npos);                      // peak: both 2 MiB blocks live
  CHECK(message.find("; cpu: allocated ") != std::string::npos);   // the other device's statistics too
  CHECK(a.stats().ooms == 1);
  CHECK(a.stats().alloc_retries == 2);           // the retry that succeeded and the one that did not
  CHECK(a.stats().allocated == 3 * kMiB);        // the failure changed nothing
  a.deallocate(p);
  a.deallocate(live);
  TG_CHECK_THROWS(a.allocate(~std::size_t(0) - 10), tg::OutOfMemoryError, "tried to allocate");
}

TEST_CASE("cuda allocator: passthrough mode rounds only to 4 bytes and caches nothing") {
  FakeDevice dev(64 * kMiB);
  CachingAllocator a(dev.raw(), "cuda:1", false);
  CHECK_FALSE(a.caching());
  void* p = a.allocate(1000);
  CHECK(dev.last_request == 1000);               // exact bounds for compute-sanitizer
  CHECK(a.stats().allocated == 1000);
  a.deallocate(p);
  CHECK(dev.frees == 1);
  CHECK(a.stats().reserved == 0);
  void* q = a.allocate(1000);
  CHECK(dev.mallocs == 2);
  a.deallocate(q);
  CHECK(dev.in_use == 0);
  void* r = a.allocate(1001);   // to the 32-bit word only (the narrow atomics of backend/cuda/index.cu)
  CHECK(dev.last_request == 1004);
  a.deallocate(r);
  CHECK(dev.in_use == 0);
}

// Note [Graph pools]: during a capture every block comes from the graph's pool and goes back there,
// blocks of the ordinary cache are not used, nothing is freed, and after the last release the pool's
// blocks join the ordinary cache.
TEST_CASE("cuda allocator: graph pools keep a capture's blocks from everyone else until released") {
  FakeDevice dev(64 * kMiB);
  CachingAllocator a(dev.raw(), "cuda:0", true);
  void* cached = a.allocate(4 * kKiB);
  a.deallocate(cached);   // a cached block in the ordinary cache
  REQUIRE(a.cached_blocks(true) == 1);

  a.begin_capture(7);
  CHECK(a.capture_pool() == 7);
  void* t = a.allocate(4 * kKiB);
  CHECK(t != cached);   // the ordinary cache is not used during a capture
  void* out = a.allocate(4 * kKiB);
  a.deallocate(t);      // a temporary of the graph: back to its pool...
  void* again = a.allocate(4 * kKiB);
  CHECK(again == t);    // ...and reusable within the same capture
  a.deallocate(again);
  a.empty_cache();      // nothing is freed during a capture
  CHECK(dev.frees == 0);
  a.end_capture();
  CHECK(a.capture_pool() == 0);
  CHECK(a.pool_cached_blocks(7) == 1);

  // Eager allocations after the capture do not get the graph's blocks.
  void* eager1 = a.allocate(4 * kKiB);
  void* eager2 = a.allocate(4 * kKiB);
  CHECK(eager1 == cached);
  CHECK(eager2 != t);
  CHECK(eager2 != out);
  // A second capture into the same pool reuses them; a capture into another pool does not.
  a.begin_capture(7);
  CHECK(a.allocate(4 * kKiB) == t);
  a.end_capture();
  a.begin_capture(8);
  void* other = a.allocate(4 * kKiB);
  CHECK(other != t);
  a.end_capture();
  CHECK_THROWS_AS(a.begin_capture(0), tg::Error);

  // Two captures into pool 7 made it two users: it lives until both release it.
  a.deallocate(t);
  a.release_pool(7);
  CHECK(a.pool_cached_blocks(7) == 1);
  a.release_pool(7);
  CHECK(a.pool_cached_blocks(7) == 0);   // its cached block joined the ordinary cache
  a.deallocate(out);                     // a live block of the released pool goes there too
  const std::size_t ordinary = a.cached_blocks(true);
  CHECK(ordinary == 2);
  void* reused = a.allocate(4 * kKiB);
  CHECK((reused == t || reused == out));
  a.deallocate(reused);
  a.deallocate(eager1);
  a.deallocate(eager2);
  a.release_pool(8);
  a.deallocate(other);
  CHECK(a.stats().allocated == 0);

}

TEST_CASE("cuda allocator: in passthrough mode a graph pool reuses nothing and frees its blocks at the last release") {
  FakeDevice dev(64 * kMiB);
  CachingAllocator a(dev.raw(), "cuda:0", false);
  void* before = a.allocate(300);    // allocated before the capture, freed inside it
  a.begin_capture(5);
  a.deallocate(before);
  CHECK(dev.frees == 0);             // no cudaFree during a capture
  void* t = a.allocate(1000);
  CHECK(dev.last_request == 1000);   // exact size, as passthrough gives everywhere
  a.deallocate(t);
  CHECK(dev.frees == 0);             // the graph replays into it: kept while the pool lives
  void* u = a.allocate(1000);
  CHECK(u != t);                     // and never handed out again
  a.end_capture();
  CHECK(dev.frees == 1);             // the block freed during the capture, now
  a.deallocate(u);
  CHECK(dev.frees == 1);
  a.release_pool(5);
  CHECK(dev.frees == 3);
  CHECK(a.stats().reserved == 0);
  void* v = a.allocate(64);          // outside a capture, passthrough as before
  a.deallocate(v);
  CHECK(dev.frees == 4);
}

TEST_CASE("cuda allocator: an out-of-memory inside a capture raises at once, freeing nothing") {
  FakeDevice dev(4 * kMiB);
  CachingAllocator a(dev.raw(), "cuda:0", true);
  void* big = a.allocate(3 * kMiB);   // 4 MiB rounded: the device is full
  a.deallocate(big);                  // cached, not freed
  a.begin_capture(3);
  CHECK_THROWS_AS(a.allocate(2 * kMiB), tg::OutOfMemoryError);
  CHECK(dev.frees == 0);   // no release-and-retry: cudaFree is illegal during a capture
  a.end_capture();
  a.release_pool(3);
  void* p = a.allocate(2 * kMiB);   // outside the capture the retry frees the cache
  CHECK(p != nullptr);
  a.deallocate(p);
}
