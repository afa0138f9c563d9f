// data/loader.cpp: DataLoader's epochs. An Epoch owns a sample order, a bounded queue and the
// prefetch thread that fills it; iterators share the Epoch, and the last one to go stops the thread.
// Batches themselves come from Dataset::get_batch (data/dataset.cpp).
#include "tensorgrad/data/loader.h"

#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <exception>
#include <limits>
#include <mutex>
#include <numeric>
#include <random>
#include <thread>
#include <utility>

#include "tensorgrad/cuda/cuda.h"
#include "tensorgrad/engine/error.h"
#include "tensorgrad/engine/grad_mode.h"
#include "tensorgrad/engine/parallel.h"


namespace tg {
namespace data {

namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/// Uniform in [0, m), m > 0, without modulo bias; mt19937_64's output is fixed by the standard, so the
/// order is the same with every standard library (std::shuffle's is not).
uint64_t uniform_below(std::mt19937_64& gen, uint64_t m) {
  const uint64_t threshold = (0 - m) % m;   // 2^64 mod m: reject the incomplete last block
  for (;;) {
    const uint64_t r = gen();
    if (r >= threshold) return r % m;
  }
}

}  // namespace

/// Note [Epoch lifetime]
/// The prefetch thread uses only the Epoch (never a shared_ptr to it) and the dataset. shutdown() sets
/// `stop`, wakes the thread and joins it: a thread blocked on a full queue returns at once, one inside
/// get_batch returns after that batch. ~Epoch (the last iterator going away, e.g. a `break`) calls it;
/// so does ~DataLoader for epochs whose iterators outlive it, which then throw DataError instead of
/// touching a dataset that may be gone. The consumer side (pos, current) is the iterating thread's.
struct DataLoader::Epoch {
  struct Slot {
    Batch batch;
    std::exception_ptr error;   // set instead of batch when preparing it threw
  };

  Epoch(const Dataset& dataset, std::vector<int64_t> order, int64_t batch_size, int64_t num_batches,
        int64_t capacity)
      : dataset(dataset), order(std::move(order)), batch_size(batch_size), num_batches(num_batches),
        capacity(capacity) {}
  ~Epoch() { shutdown(); }
  Epoch(const Epoch&) = delete;
  Epoch& operator=(const Epoch&) = delete;

  void start() {
    if (capacity > 0 && num_batches > 0) worker = std::thread([this] { run(); });
  }

  /// Batch b of this epoch: data (B, ...), target (B, ...). Runs on the prefetch thread (or, with
  /// prefetch 0, on the caller's).
  Batch make(int64_t b) const {
    NoGradGuard no_grad;   // a dataset's own transforms record no graph
    const int64_t first = b * batch_size;
    const int64_t last = std::min<int64_t>(first + batch_size, static_cast<int64_t>(order.size()));
    const std::vector<int64_t> indices(order.begin() + first, order.begin() + last);
    Batch batch = dataset.get_batch(indices);
    const int64_t n = last - first;
    TG_CHECK(batch.data.defined() && batch.data.dim() >= 1 && batch.data.size(0) == n &&
                 (!batch.target.defined() || (batch.target.dim() >= 1 && batch.target.size(0) == n)),
             DataError, "DataLoader: get_batch returned data ",
             batch.data.defined() ? tensor_meta_str(batch.data.data()) : std::string("undefined"), " and target ",
             batch.target.defined() ? tensor_meta_str(batch.target.data()) : std::string("undefined"), " for ", n,
             " indices; both need a first dimension of ", n);
    if (pin) {   // pin_memory with a usable GPU: page-locked copies, so that to(cuda, true) is asynchronous
      batch.data = Variable(cuda::detail::pin(batch.data.data()));
      if (batch.target.defined()) batch.target = Variable(cuda::detail::pin(batch.target.data()));
    }
    return batch;
  }

  /// The prefetch thread: fills the queue in order, at most `capacity` ahead; stops at the first error.
  void run() {
    // Copies on this thread stay on it: spreading them over the thread pool would fight the training
    // step for the cores (PyTorch's loader workers run single-threaded too). On a busy 2-core machine a
    // 64-image gather took 3-7 ms with a team of threads and 6 us without.
    parallel::set_thread_serial(true);
    for (int64_t b = 0; b < num_batches; ++b) {
      {
        std::unique_lock<std::mutex> lock(mutex);
        space.wait(lock, [&] { return stop || static_cast<int64_t>(queue.size()) < capacity; });
        if (stop) return;
      }
      Slot slot;
      try {
        slot.batch = make(b);
      } catch (...) {
        slot.error = std::current_exception();
      }
      const bool failed = slot.error != nullptr;
      {
        std::lock_guard<std::mutex> lock(mutex);
        queue.push_back(std::move(slot));
      }
      ready.notify_one();
      if (failed) return;
    }
  }

  /// Consumer: makes `current` batch `pos`, waiting for the thread if needed. On an error the epoch
  /// ends (pos = num_batches) and the error is rethrown with its own type.
  void fetch() {
    if (has_current) return;
    Slot slot;
    {
      std::unique_lock<std::mutex> lock(mutex);
      if (capacity > 0) ready.wait(lock, [&] { return !queue.empty() || stop; });
      if (stop) {   // only ~DataLoader sets it while an iterator lives
        pos = num_batches;
        throw DataError("DataLoader: the loader was destroyed while one of its iterators was still in use");
      }
      if (capacity > 0) {
        slot = std::move(queue.front());
        queue.pop_front();
      }
    }
    if (capacity > 0) {
      space.notify_one();
    } else {
      try {
        slot.batch = make(pos);
      } catch (...) {
        slot.error = std::current_exception();
      }
    }
    if (slot.error) {
      pos = num_batches;
      std::rethrow_exception(slot.error);
    }
    current = std::move(slot.batch);
    has_current = true;
  }

  void shutdown() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      stop = true;
    }
    space.notify_all();
    ready.notify_all();
    std::lock_guard<std::mutex> lock(join_mutex);
    if (worker.joinable()) worker.join();
  }

  const Dataset& dataset;
  const std::vector<int64_t> order;
  const int64_t batch_size, num_batches, capacity;
  bool pin = false;   // pin_memory(true) and a usable GPU; set before start()
  // consumer side: the iterating thread only
  int64_t pos = 0;
  bool has_current = false;
  Batch current;
  // shared with the prefetch thread, under `mutex`
  std::mutex mutex;
  std::condition_variable space, ready;
  std::deque<Slot> queue;
  bool stop = false;
  std::mutex join_mutex;   // shutdown may race between an iterator's and the loader's destructors
  std::thread worker;
};

// ------------------------------------------------------------------------------------------------
// Iterator

bool DataLoader::Iterator::at_end() const { return !epoch_ || epoch_->pos >= epoch_->num_batches; }

Batch& DataLoader::Iterator::operator*() const {
  TG_CHECK(!at_end(), IndexError, "DataLoader: dereferencing the end iterator");
  epoch_->fetch();
  return epoch_->current;
}

DataLoader::Iterator& DataLoader::Iterator::operator++() {
  TG_CHECK(!at_end(), IndexError, "DataLoader: incrementing the end iterator");
  epoch_->fetch();   // a batch skipped without dereferencing is still consumed, and its error rethrown
  epoch_->current = Batch();
  epoch_->has_current = false;
  ++epoch_->pos;
  return *this;
}

bool DataLoader::Iterator::operator==(const Iterator& other) const {
  const bool a = at_end(), b = other.at_end();
  return (a || b) ? a == b : epoch_ == other.epoch_;
}

// ------------------------------------------------------------------------------------------------
// DataLoader

DataLoader::DataLoader(const Dataset& dataset, LoaderOptions options) : dataset_(&dataset), options_(options) {
  TG_CHECK(options_.batch_size() > 0, Error, "DataLoader: batch_size must be positive, got ", options_.batch_size());
  TG_CHECK(options_.prefetch() >= 0, Error, "DataLoader: prefetch must be non-negative, got ", options_.prefetch());
  TG_CHECK(dataset.size() >= 0, DataError, "DataLoader: the dataset reports a negative size ", dataset.size());
}

DataLoader::~DataLoader() {
  for (auto& weak : live_)
    if (auto epoch = weak.lock()) epoch->shutdown();   // See Note [Epoch lifetime]
}

int64_t DataLoader::size() const {
  const int64_t n = dataset_->size(), b = options_.batch_size();
  return n / b + (!options_.drop_last() && n % b != 0 ? 1 : 0);
}

void DataLoader::set_epoch(int64_t epoch) {
  TG_CHECK(epoch >= 0, Error, "DataLoader: set_epoch needs a non-negative epoch, got ", epoch);
  epoch_ = epoch;
}

std::vector<int64_t> DataLoader::order(int64_t epoch) const {
  const int64_t n = dataset_->size();
  // One int64 per sample: a dataset reporting 2^40 samples cannot be ordered in memory. An order
  // larger than the machine's memory is refused before any allocation (an allocation that size
  // aborts under AddressSanitizer instead of throwing); a smaller one that still fails throws too.
  const auto oom = [n] {
    return OutOfMemoryError(tg::detail::cat("DataLoader: cannot allocate the sample order of ", n, " samples (", n,
                                            " x 8 bytes); is the dataset's size() right?"));
  };
  const long pages = ::sysconf(_SC_PHYS_PAGES), page_size = ::sysconf(_SC_PAGE_SIZE);
  if (pages > 0 && page_size > 0 &&
      static_cast<double>(n) * sizeof(int64_t) > static_cast<double>(pages) * static_cast<double>(page_size))
    throw oom();
  std::vector<int64_t> order;
  try {
    order.resize(static_cast<std::size_t>(n));
  } catch (const std::exception&) {
    throw oom();
  }
  std::iota(order.begin(), order.end(), int64_t(0));
  if (!options_.shuffle()) return order;
  std::mt19937_64 gen(splitmix64(splitmix64(options_.seed()) ^ static_cast<uint64_t>(epoch)));
  for (std::size_t i = order.size(); i > 1; --i)   // Fisher-Yates
    std::swap(order[i - 1], order[uniform_below(gen, i)]);
  return order;
}

DataLoader::Iterator DataLoader::begin() {
  live_.erase(std::remove_if(live_.begin(), live_.end(), [](const std::weak_ptr<Epoch>& w) { return w.expired(); }),
              live_.end());
  auto epoch = std::make_shared<Epoch>(*dataset_, order(epoch_), options_.batch_size(), size(), options_.prefetch());
  epoch_ = epoch_ == std::numeric_limits<int64_t>::max() ? 0 : epoch_ + 1;   // the shuffle seed wraps, never overflows
  epoch->pin = options_.pin_memory() && cuda::is_available();
  epoch->start();
  live_.push_back(epoch);
  return Iterator(std::move(epoch));
}

}  // namespace data
}  // namespace tg
