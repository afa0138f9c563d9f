/// \file
/// core/debug.h: live-object counters for leak tests (tg::debug::live_counts). Storage, TensorImpl
/// and Node each hold a Counted member; the counts are process-wide relaxed atomics.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace tg {
namespace debug {

/// A snapshot of the live-object counters: compare two snapshots to find leaks.
struct LiveCounts {
  int64_t storages = 0;          ///< live tensor buffers, any device
  int64_t variables = 0;         ///< live TensorImpls (every Tensor handle family, grads included)
  int64_t nodes = 0;             ///< live graph nodes
  std::size_t cpu_bytes = 0;     ///< bytes in live CPU allocator blocks (rounded sizes)
  /// All four counts equal.
  bool operator==(const LiveCounts& o) const {
    return storages == o.storages && variables == o.variables && nodes == o.nodes && cpu_bytes == o.cpu_bytes;
  }
  /// Some count differs.
  bool operator!=(const LiveCounts& o) const { return !(*this == o); }
};
/// The current counts, process-wide (relaxed atomic reads: exact once other threads are quiet).
LiveCounts live_counts();

namespace detail {
enum Kind { kStorage = 0, kVariable = 1, kNode = 2 };
extern std::atomic<int64_t> g_live[3];
/// A member that counts its owner's live instances (copies included).
template <int K>
struct Counted {
  Counted() noexcept { g_live[K].fetch_add(1, std::memory_order_relaxed); }
  Counted(const Counted&) noexcept : Counted() {}
  Counted& operator=(const Counted&) noexcept { return *this; }
  ~Counted() { g_live[K].fetch_sub(1, std::memory_order_relaxed); }
};
}  // namespace detail

}  // namespace debug
}  // namespace tg
