// core/memory.cpp: tg::memory (the CPU allocator's statistics with torch.cuda's names), the summary
// table both devices print, and the statistics line of OutOfMemoryError messages. The counters are
// kept by core/allocator.cpp (CPU) and backend/cuda/caching_allocator.h (CUDA).
#include "tensorgrad/core/memory.h"

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <sstream>
#include <vector>

#include "tensorgrad/core/accelerator.h"
#include "tensorgrad/core/allocator.h"
#include "tensorgrad/core/error.h"
#include "tensorgrad/core/raw_tensor.h"

namespace tg {
namespace memory {

std::size_t memory_allocated() { return cpu_memory_stats().allocated; }
std::size_t max_memory_allocated() { return cpu_memory_stats().peak_allocated; }
std::size_t memory_reserved() { return cpu_memory_stats().reserved; }
std::size_t max_memory_reserved() { return cpu_memory_stats().peak_reserved; }
void reset_peak_memory_stats() { cpu_reset_peak_memory_stats(); }
void empty_cache() { cpu_empty_cache(); }
MemoryStats memory_stats() { return cpu_memory_stats(); }
std::string memory_summary() { return detail::summary_table("CPU", memory_stats()); }

std::string format_bytes(std::size_t bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  std::size_t value = bytes, unit = 0;
  double in_unit = static_cast<double>(bytes);
  while (unit + 1 < sizeof(kUnits) / sizeof(kUnits[0]) && in_unit >= 768.0 * 1024) {   // torch's _format_size
    value /= 1024;
    in_unit /= 1024;
    ++unit;
  }
  return tg::detail::cat(value, " ", kUnits[unit]);
}

std::string detail::summary_table(const std::string& title, const MemoryStats& s) {
  constexpr int kWidth = 75;   // between the outer bars, as PyTorch's table
  std::ostringstream os;
  const std::string rule_eq = "|" + std::string(kWidth, '=') + "|\n";
  const std::string rule_dash = "|" + std::string(kWidth, '-') + "|\n";
  auto centered = [&](const std::string& text) {
    const int pad = kWidth - static_cast<int>(text.size());
    const int left = pad > 0 ? pad / 2 : 0, right = pad > 0 ? pad - pad / 2 : 0;
    os << "|" << std::string(left, ' ') << text << std::string(right, ' ') << "|\n";
  };
  auto row = [&](const char* metric, const std::string& a, const std::string& b, const std::string& c,
                 const std::string& d) {
    char line[160];
    std::snprintf(line, sizeof(line), "| %-21s | %10s | %10s | %10s | %10s |\n", metric, a.c_str(), b.c_str(),
                  c.c_str(), d.c_str());
    os << line;
  };
  os << rule_eq;
  centered("tensorgrad " + title + " memory summary");
  os << rule_dash;
  centered(tg::detail::cat("OOMs: ", s.ooms, "   |   allocation retries after emptying the cache: ", s.alloc_retries));
  os << rule_eq;
  row("Metric", "Cur Usage", "Peak Usage", "Tot Alloc", "Tot Freed");
  os << rule_dash;
  row("Allocated memory", format_bytes(s.allocated), format_bytes(s.peak_allocated), format_bytes(s.allocated_total),
      format_bytes(s.freed_total));
  row("Reserved memory", format_bytes(s.reserved), format_bytes(s.peak_reserved), format_bytes(s.reserved_total),
      format_bytes(s.released_total));
  row("Cached (unused)", format_bytes(s.reserved - s.allocated), "", "", "");
  os << rule_dash;
  row("Allocations", std::to_string(s.blocks), std::to_string(s.peak_blocks), std::to_string(s.allocations_total),
      std::to_string(s.frees_total));
  os << rule_eq;
  return os.str();
}

namespace {
std::string mib(std::size_t bytes) {
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%.2f MiB", static_cast<double>(bytes) / (1 << 20));
  return buf;
}
}  // namespace

std::string detail::stats_line(const MemoryStats& s) {
  return tg::detail::cat("allocated ", mib(s.allocated), ", reserved ", mib(s.reserved), " (cached ",
                         mib(s.reserved - s.allocated), "), peak allocated ", mib(s.peak_allocated));
}

std::string detail::all_devices_line() noexcept {
  try {
    std::string line = "cpu: " + stats_line(cpu_memory_stats());
    const int n = cuda::device_count();
    for (int d = 0; d < n; ++d) {
      const MemoryStats s = cuda::memory_stats(d);
      if (s.reserved_total == 0) continue;   // a device tensorgrad has not used
      line += tg::detail::cat("; cuda:", d, ": ", stats_line(s));
    }
    return line;
  } catch (...) {   // out of memory while describing memory: say less
    return "(memory statistics unavailable)";
  }
}

// Note [Live tensor report]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// An OutOfMemoryError names the largest live tensors, each with its shape, dtype, device and the op
// that created it, so a user sees what holds the memory. RawTensor::empty describes each new storage
// (Storage::describe) and those of at least Storage::kReportedBytes join one doubly linked list
// under a mutex; smaller storages skip both, so small ops (where a lock would show in the per-op
// overhead) pay one comparison. The creating op comes from two places: tg::record names its
// result's storage when the storage is not one of its inputs' (a view keeps its base's name), and
// the backward engine sets this thread's CurrentOp around each rule, so gradients are "from
// matmul (backward)". Storages made outside both (parameters, loaded data) show no op.

struct StorageList {
  std::mutex mutex;
  Storage* head = nullptr;

  void add(Storage* s) {
    std::lock_guard<std::mutex> lock(mutex);
    s->live_prev_ = nullptr;
    s->live_next_ = head;
    if (head != nullptr) head->live_prev_ = s;
    head = s;
  }
  void remove(Storage* s) noexcept {
    std::lock_guard<std::mutex> lock(mutex);
    if (s->live_prev_ != nullptr) s->live_prev_->live_next_ = s->live_next_;
    else head = s->live_next_;
    if (s->live_next_ != nullptr) s->live_next_->live_prev_ = s->live_prev_;
    s->live_prev_ = s->live_next_ = nullptr;
  }
  /// The n largest (nbytes, line) pairs and the count and bytes of all listed storages.
  std::string largest(std::size_t n) {
    struct Entry {
      std::size_t nbytes;
      std::string line;
    };
    std::vector<Entry> top;
    std::size_t count = 0, bytes = 0;
    std::lock_guard<std::mutex> lock(mutex);
    for (Storage* s = head; s != nullptr; s = s->live_next_) {
      ++count;
      bytes += s->nbytes();
      if (top.size() == n && s->nbytes() <= top.back().nbytes) continue;
      const char* op = s->op();
      Entry e{s->nbytes(), tg::detail::cat(format_bytes(s->nbytes()), " ", dtype_name(s->described_dtype()), " ",
                                           shape_str(s->described_shape()), " on ", s->device(), " from ",
                                           op != nullptr ? op : "no op (a leaf, parameter or loaded tensor)",
                                           op != nullptr && s->op_is_backward() ? " (backward)" : "")};
      auto at = std::upper_bound(top.begin(), top.end(), e.nbytes,
                                 [](std::size_t v, const Entry& x) { return v > x.nbytes; });
      top.insert(at, std::move(e));
      if (top.size() > n) top.pop_back();
    }
    if (top.empty()) return "";
    std::string out = tg::detail::cat("; largest live tensors (of ", count, " of at least ",
                                      format_bytes(Storage::kReportedBytes), ", ", format_bytes(bytes), " in all): ");
    for (std::size_t i = 0; i < top.size(); ++i) out += (i ? ", " : "") + top[i].line;
    return out;
  }
};

namespace {
StorageList& storage_list() {
  static StorageList* list = new StorageList;   // never destroyed: storages may outlive static destructors
  return *list;
}
thread_local detail::CurrentOp t_current_op;
}  // namespace

detail::CurrentOp detail::current_op() noexcept { return t_current_op; }
detail::OpScope::OpScope(const char* name, bool backward) noexcept : saved_(t_current_op) {
  t_current_op = CurrentOp{name, backward};
}
detail::OpScope::~OpScope() { t_current_op = saved_; }
void detail::track(Storage* s) { storage_list().add(s); }
void detail::untrack(Storage* s) noexcept { storage_list().remove(s); }
std::string detail::largest_live_tensors(std::size_t n) noexcept {
  try {
    return storage_list().largest(n);
  } catch (...) {   // no memory left even for the report: the message keeps its other parts
    return "";
  }
}

}  // namespace memory
}  // namespace tg
