// data/loader.cpp: DataLoader's epochs. An Epoch owns a sample order, a bounded queue and the
// prefetch thread that fills it; iterators share the Epoch, and the last one to go stops the thread.
// Batches themselves come from Dataset::get_batch (data/dataset.cpp).
#include "tensorgrad/data/loader.h"

#include <algorithm>
#include <condition_variable>
#include <map>
#include <exception>
#include <limits>
#include <mutex>
#include <numeric>
#include <thread>
#include <utility>

#include "tensorgrad/core/accelerator.h"
#include "tensorgrad/core/error.h"
#include "tensorgrad/autograd/grad_mode.h"
#include "tensorgrad/core/parallel.h"


namespace tg {
namespace data {


/// Note [Epoch lifetime]
/// The worker threads use only the Epoch (never a shared_ptr to it) and the dataset. shutdown() sets
/// `stop`, wakes the threads and joins them: a thread waiting for room returns at once, one inside
/// get_batch returns after that batch. ~Epoch (the last iterator going away, e.g. a `break`) calls it;
/// so does ~DataLoader for epochs whose iterators outlive it, which then throw DataError instead of
/// touching a dataset that may be gone. The consumer side (pos, current) is the iterating thread's.
///
/// Note [Worker order]
/// Workers take batch numbers from one counter (`next`) and file each finished batch under its
/// number; the consumer takes batch `pos` only, waiting for it if needed, so batches arrive in
/// order whatever thread made them and whenever it finished, and each is make(b) of the same
/// indices, the same bits as with one worker. A worker may start batch b only while b < front +
/// capacity (front: the batch the consumer takes next), so at most `capacity` batches are made or
/// in the making ahead of the consumer. A batch whose make() threw is filed as its error and
/// rethrown when the consumer reaches it; no worker starts a batch after it.
struct DataLoader::Epoch {
  struct Slot {
    Batch batch;
    std::exception_ptr error;   // set instead of batch when preparing it threw
  };

  Epoch(const Dataset& dataset, std::vector<int64_t> order, int64_t batch_size, int64_t num_batches,
        int64_t capacity, int64_t workers)
      : dataset(dataset), order(std::move(order)), batch_size(batch_size), num_batches(num_batches),
        capacity(capacity), workers(workers) {}
  ~Epoch() { shutdown(); }
  Epoch(const Epoch&) = delete;
  Epoch& operator=(const Epoch&) = delete;

  /// Starts the workers; if the OS refuses a thread, the ones started are stopped and DataError thrown.
  void start() {
    if (capacity == 0 || num_batches == 0) return;
    const int64_t n = std::min(workers, num_batches);
    try {
      threads.reserve(static_cast<std::size_t>(n));
      for (int64_t i = 0; i < n; ++i) threads.emplace_back([this] { run(); });
    } catch (const std::exception& e) {   // std::system_error from the OS, or std::bad_alloc
      shutdown();
      throw DataError(tg::detail::cat("DataLoader: cannot start worker thread ", threads.size() + 1, " of ", n, ": ",
                                      e.what()));
    }
  }

  /// Batch b of this epoch: data (B, ...), target (B, ...). Runs on a worker thread (or, with
  /// prefetch 0, on the caller's).
  Batch make(int64_t b) const {
    NoGradGuard no_grad;   // a dataset's own transforms record no graph
    // b < num_batches = ceil(order.size() / batch_size), so first < order.size(); the last batch is cut
    // without forming first + batch_size, which overflows for a batch_size near int64's limit.
    const int64_t first = b * batch_size;
    const int64_t last = first + std::min<int64_t>(batch_size, static_cast<int64_t>(order.size()) - first);
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
      batch.data = Tensor(cuda::detail::pin(batch.data.data()));
      if (batch.target.defined()) batch.target = Tensor(cuda::detail::pin(batch.target.data()));
    }
    return batch;
  }

  /// A worker thread: takes the next batch number while there is room, makes it, files it. See Note
  /// [Worker order].
  void run() {
    // Copies on this thread stay on it: spreading them over the thread pool would fight the training
    // step for the cores (PyTorch's loader workers run single-threaded too). On a busy 2-core machine a
    // 64-image gather took 3-7 ms with a team of threads and 6 us without.
    parallel::set_thread_serial(true);
    for (;;) {
      int64_t b;
      {
        std::unique_lock<std::mutex> lock(mutex);
        // next - front, not front + capacity: capacity saturates at INT64_MAX (begin())
        space.wait(lock, [&] { return stop || next >= last_batch || next - front < capacity; });
        if (stop || next >= last_batch) return;
        b = next++;
      }
      Slot slot;
      try {
        slot.batch = make(b);
      } catch (...) {
        slot.error = std::current_exception();
      }
      {
        std::lock_guard<std::mutex> lock(mutex);
        if (slot.error) last_batch = std::min(last_batch, b + 1);   // nothing after a failed batch
        done.emplace(b, std::move(slot));
      }
      ready.notify_all();   // the consumer waits for one particular batch
    }
  }

  /// Consumer: makes `current` batch `pos`, waiting for the workers if needed. On an error the epoch
  /// ends (pos = num_batches) and the error is rethrown with its own type.
  void fetch() {
    if (has_current) return;
    Slot slot;
    if (capacity > 0) {
      {
        std::unique_lock<std::mutex> lock(mutex);
        ready.wait(lock, [&] { return stop || done.count(pos) != 0; });
        if (stop) {   // only ~DataLoader sets it while an iterator lives
          pos = num_batches;
          throw DataError("DataLoader: the loader was destroyed while one of its iterators was still in use");
        }
        auto it = done.find(pos);
        slot = std::move(it->second);
        done.erase(it);
        front = pos + 1;
      }
      space.notify_all();
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
    for (std::thread& t : threads)
      if (t.joinable()) t.join();
  }

  const Dataset& dataset;
  const std::vector<int64_t> order;
  const int64_t batch_size, num_batches, capacity, workers;
  bool pin = false;   // pin_memory(true) and a usable GPU; set before start()
  // consumer side: the iterating thread only
  int64_t pos = 0;
  bool has_current = false;
  Batch current;
  // shared with the workers, under `mutex`
  std::mutex mutex;
  std::condition_variable space, ready;
  std::map<int64_t, Slot> done;       // finished batches not yet taken, by number
  int64_t next = 0;                   // the next batch number a worker takes
  int64_t front = 0;                  // the batch the consumer takes next
  int64_t last_batch = num_batches;   // one past the last batch to make (cut at a failed one)
  bool stop = false;
  std::mutex join_mutex;   // shutdown may race between an iterator's and the loader's destructors
  std::vector<std::thread> threads;
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
  TG_CHECK(options_.num_workers() >= 0, Error, "DataLoader: num_workers must be non-negative, got ",
           options_.num_workers());
  TG_CHECK(options_.num_workers() <= 1 || options_.prefetch() >= 1, Error, "DataLoader: num_workers ",
           options_.num_workers(), " needs prefetch >= 1 (batches each worker prepares ahead), got prefetch 0");
  TG_CHECK(options_.sampler() == nullptr || !options_.shuffle(), Error,
           "DataLoader: sampler option is mutually exclusive with shuffle");
}

DataLoader::~DataLoader() {
  for (auto& weak : live_)
    if (auto epoch = weak.lock()) epoch->shutdown();   // See Note [Epoch lifetime]
}

int64_t DataLoader::size() const {
  const int64_t n = options_.sampler() ? options_.sampler()->size() : dataset_->size(), b = options_.batch_size();
  TG_CHECK(n >= 0, DataError, "DataLoader: the ", options_.sampler() ? "sampler" : "dataset",
           " reports a negative size ", n);
  return n / b + (!options_.drop_last() && n % b != 0 ? 1 : 0);
}

void DataLoader::set_epoch(int64_t epoch) {
  TG_CHECK(epoch >= 0, Error, "DataLoader: set_epoch needs a non-negative epoch, got ", epoch);
  epoch_ = epoch;
}

std::vector<int64_t> DataLoader::order(int64_t epoch) const {
  const int64_t n = dataset_->size();
  if (const Sampler* sampler = options_.sampler()) {
    std::vector<int64_t> indices = sampler->indices();
    TG_CHECK(static_cast<int64_t>(indices.size()) == sampler->size(), DataError, "DataLoader: the sampler gave ",
             indices.size(), " indices but its size() is ", sampler->size());
    for (int64_t i : indices)
      TG_CHECK(i >= 0 && i < n, IndexError, "DataLoader: the sampler gave index ", i, " for a dataset of ", n,
               " samples");
    return indices;
  }
  // One int64 per sample: a dataset reporting 2^40 samples cannot be ordered in memory, which raises
  // OutOfMemoryError before anything is allocated.
  std::vector<int64_t> order = detail::index_vector(n, "DataLoader", "the sample order");
  std::iota(order.begin(), order.end(), int64_t(0));
  if (!options_.shuffle()) return order;
  detail::shuffle_in_place(order, detail::splitmix64(detail::splitmix64(options_.seed()) ^ static_cast<uint64_t>(epoch)));
  return order;
}

DataLoader::Iterator DataLoader::begin() {
  live_.erase(std::remove_if(live_.begin(), live_.end(), [](const std::weak_ptr<Epoch>& w) { return w.expired(); }),
              live_.end());
  const int64_t workers = std::max<int64_t>(options_.num_workers(), 1);
  int64_t capacity = 0;   // PyTorch's prefetch_factor * num_workers; saturates (a limit no epoch reaches)
  if (__builtin_mul_overflow(options_.prefetch(), workers, &capacity)) capacity = std::numeric_limits<int64_t>::max();
  const int64_t num_batches = size();   // first: it refuses a negative size before order() allocates
  auto epoch = std::make_shared<Epoch>(*dataset_, order(epoch_), options_.batch_size(), num_batches, capacity, workers);
  epoch_ = epoch_ == std::numeric_limits<int64_t>::max() ? 0 : epoch_ + 1;   // the shuffle seed wraps, never overflows
  epoch->pin = options_.pin_memory() && cuda::is_available();
  epoch->start();
  live_.push_back(epoch);
  return Iterator(std::move(epoch));
}

}  // namespace data
}  // namespace tg
