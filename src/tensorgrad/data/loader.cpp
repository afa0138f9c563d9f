// data/loader.cpp: DataLoader's epochs. An Epoch owns a sample order and the BatchQueue whose
// threads fill it (data/batch_queue.h); iterators share the Epoch, and the last one to go stops the
// threads. Batches themselves come from Dataset::get_batch (data/dataset.cpp).
#include "tensorgrad/data/loader.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <utility>

#include "tensorgrad/autograd/grad_mode.h"
#include "tensorgrad/core/accelerator.h"
#include "tensorgrad/core/error.h"
#include "tensorgrad/data/batch_queue.h"

namespace tg {
namespace data {

/// Note [Epoch lifetime]
/// An Epoch's batches come from its BatchQueue (data/batch_queue.h), whose worker threads use only
/// the Epoch's order and the dataset. The queue's shutdown() stops and joins them: ~Epoch (the last
/// iterator going away, e.g. a `break`) calls it; so does ~DataLoader for epochs whose iterators
/// outlive it, which then throw DataError instead of touching a dataset that may be gone. The
/// consumer side (pos, current) is the iterating thread's.
struct DataLoader::Epoch {
  Epoch(const Dataset& dataset, std::vector<int64_t> order, int64_t batch_size, int64_t num_batches,
        int64_t capacity, int64_t workers, bool pin)
      : dataset(dataset), order(std::move(order)), batch_size(batch_size), num_batches(num_batches), pin(pin),
        queue(num_batches, capacity, workers,
              [this](int64_t b, int64_t) -> std::shared_ptr<void> { return std::make_shared<Batch>(make(b)); },
              "DataLoader") {}
  ~Epoch() { queue.shutdown(); }
  Epoch(const Epoch&) = delete;
  Epoch& operator=(const Epoch&) = delete;

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

  /// Consumer: makes `current` batch `pos`, waiting for the workers if needed. On an error the epoch
  /// ends (pos = num_batches) and the error is rethrown with its own type.
  void fetch() {
    if (has_current) return;
    try {
      current = std::move(*std::static_pointer_cast<Batch>(queue.take(pos)));
    } catch (...) {
      pos = num_batches;
      throw;
    }
    has_current = true;
  }

  const Dataset& dataset;
  const std::vector<int64_t> order;
  const int64_t batch_size, num_batches;
  const bool pin;   // pin_memory(true) and a usable GPU
  // consumer side: the iterating thread only
  int64_t pos = 0;
  bool has_current = false;
  Batch current;
  detail::BatchQueue queue;   // last: its threads read the members above
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
    if (auto epoch = weak.lock()) epoch->queue.shutdown();   // See Note [Epoch lifetime]
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
  auto epoch = std::make_shared<Epoch>(*dataset_, order(epoch_), options_.batch_size(), num_batches, capacity, workers,
                                       options_.pin_memory() && cuda::is_available());
  epoch_ = epoch_ == std::numeric_limits<int64_t>::max() ? 0 : epoch_ + 1;   // the shuffle seed wraps, never overflows
  epoch->queue.start();
  live_.push_back(epoch);
  return Iterator(std::move(epoch));
}

}  // namespace data
}  // namespace tg
