/// \file
/// data/dataloader.h: libtorch's data loader (torch::data::make_data_loader, DataLoaderOptions,
/// StatelessDataLoader): it takes a libtorch-style dataset (data/datasets.h) by value, asks a sampler
/// (data/samplers.h; RandomSampler by default) for each batch's indices and hands out the dataset's
/// batches, made on worker threads when options.workers() > 0.
/// \code
/// auto dataset = tg::data::datasets::MNIST("./mnist")
///                    .map(tg::data::transforms::Normalize<>(0.1307, 0.3081))
///                    .map(tg::data::transforms::Stack<>());
/// auto loader = tg::data::make_data_loader(std::move(dataset), tg::data::DataLoaderOptions().batch_size(64));
/// for (auto& batch : *loader) { batch.data; batch.target; }   // (64, 1, 28, 28), (64)
/// \endcode
#pragma once
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "tensorgrad/core/error.h"
#include "tensorgrad/data/batch_queue.h"
#include "tensorgrad/data/datasets.h"
#include "tensorgrad/data/samplers.h"
#include "tensorgrad/data/transforms.h"

namespace tg {
namespace data {

/// Note [Two data APIs]
/// tensorgrad's own loader, data::DataLoader (data/loader.h), borrows a data::Dataset (a virtual
/// interface with a const get and a stacking get_batch) and shuffles from its own seed; libtorch's,
/// make_data_loader here, owns its dataset (moved in; copied once per worker, as libtorch does, so
/// that a dataset with state needs no lock), takes batches from a sampler object that draws from
/// tg's random stream (manual_seed), and yields whatever the dataset's get_batch returns: a
/// std::vector<Example<>> until a Stack transform makes it one Example<>. The two are kept apart
/// because their contracts differ (borrowed vs owned, const vs mutable datasets, Batch vs any batch
/// type), and both stay: existing tensorgrad code keeps its loader, ported libtorch code gets its own.
/// What they share is the machinery of DataLoader's epochs: detail::BatchQueue (data/batch_queue.h),
/// the worker threads that make batches ahead, at most max_jobs of them, and hand them out in order.
/// At begin() the loader drains the sampler for the whole epoch (its indices, one request per batch,
/// the last one dropped with drop_last), so that workers never touch the sampler and batch b is
/// always request b: batches arrive in sampler order whatever the number of workers, which is
/// libtorch's enforce_ordering(true); enforce_ordering(false) is accepted and changes nothing. A
/// begin() while an earlier epoch's iterators are alive stops that epoch (its iterators then throw
/// DataError) rather than refusing, as libtorch does, a new iterator before the old one is exhausted.

/// Options of make_data_loader's loader (libtorch's torch::data::DataLoaderOptions): each setting
/// has a setter returning *this and a getter, `DataLoaderOptions().batch_size(64).workers(2)`.
struct DataLoaderOptions {
  /// batch_size 1, no workers.
  DataLoaderOptions() = default;
  /// The given batch_size (implicit, as libtorch's: make_data_loader(dataset, 64)).
  DataLoaderOptions(size_t batch_size) : batch_size_(batch_size) {}   // NOLINT(google-explicit-constructor)

  /// Samples per batch (default 1; make_data_loader throws DataError for 0).
  DataLoaderOptions& batch_size(size_t v) { batch_size_ = v; return *this; }
  /// See batch_size(size_t).
  const size_t& batch_size() const noexcept { return batch_size_; }
  /// Worker threads making batches ahead; 0 (the default) makes each batch on the iterating thread
  /// when it is reached. Each worker reads its own copy of the dataset.
  DataLoaderOptions& workers(size_t v) { workers_ = v; return *this; }
  /// See workers(size_t).
  const size_t& workers() const noexcept { return workers_; }
  /// Batches made or in the making ahead of the consumer (default: 2 * workers).
  DataLoaderOptions& max_jobs(std::optional<size_t> v) { max_jobs_ = v; return *this; }
  /// See max_jobs(std::optional<size_t>).
  const std::optional<size_t>& max_jobs() const noexcept { return max_jobs_; }
  /// The longest wait for a batch made by the workers, else DataError (default: none).
  DataLoaderOptions& timeout(std::optional<std::chrono::milliseconds> v) { timeout_ = v; return *this; }
  /// See timeout(std::optional<std::chrono::milliseconds>).
  const std::optional<std::chrono::milliseconds>& timeout() const noexcept { return timeout_; }
  /// Accepted for libtorch's signature: batches always arrive in order (Note [Two data APIs]).
  DataLoaderOptions& enforce_ordering(bool v) { enforce_ordering_ = v; return *this; }
  /// See enforce_ordering(bool) (default true).
  const bool& enforce_ordering() const noexcept { return enforce_ordering_; }
  /// Leave out the last batch when it is smaller than batch_size (default false).
  DataLoaderOptions& drop_last(bool v) { drop_last_ = v; return *this; }
  /// See drop_last(bool).
  const bool& drop_last() const noexcept { return drop_last_; }

 private:
  size_t batch_size_ = 1;
  size_t workers_ = 0;
  std::optional<size_t> max_jobs_;
  std::optional<std::chrono::milliseconds> timeout_;
  bool enforce_ordering_ = true;
  bool drop_last_ = false;
};

namespace detail {
/// One pass of a make_data_loader loader: its batch requests and the queue whose workers turn them
/// into batches. Iterators share it; the consumer side (pos, current) is the iterating thread's.
template <class Batch>
struct LoaderEpoch {
  LoaderEpoch(const LoaderEpoch&) = delete;
  LoaderEpoch& operator=(const LoaderEpoch&) = delete;
  /// An epoch of num_batches; queue made by the loader (its make reads this epoch's requests).
  LoaderEpoch(int64_t num_batches, std::optional<std::chrono::milliseconds> timeout)
      : num_batches(num_batches), timeout(timeout) {}
  /// Stops the workers before the requests they read go.
  ~LoaderEpoch() {
    if (queue) queue->shutdown();
  }
  /// Batch pos, waiting for it; an error ends the epoch and is rethrown with its type.
  Batch& get() {
    if (!current) {
      try {
        current.emplace(std::move(*std::static_pointer_cast<Batch>(queue->take(pos, timeout))));
      } catch (...) {
        pos = num_batches;
        throw;
      }
    }
    return *current;
  }
  /// Moves past batch pos (made and consumed, so that its error is not skipped).
  void advance() {
    TG_CHECK(pos < num_batches, IndexError, "DataLoader: ++ on the end iterator");
    get();
    current.reset();
    ++pos;
  }
  const int64_t num_batches;                               ///< batches of this epoch
  const std::optional<std::chrono::milliseconds> timeout;  ///< DataLoaderOptions::timeout
  int64_t pos = 0;                                         ///< the batch the iterator is at
  std::optional<Batch> current;                            ///< batch pos once taken
  std::unique_ptr<BatchQueue> queue;                       ///< made after the requests it reads
};
}  // namespace detail

/// An input iterator over one epoch of a make_data_loader loader (libtorch's torch::data::Iterator):
/// `*it` is the batch, made by then; copies share the position. The end iterator is Iterator().
template <class Batch>
class Iterator {
 public:
  using iterator_category = std::input_iterator_tag;   ///< Single pass.
  using value_type = Batch;                            ///< The batch type.
  using difference_type = std::ptrdiff_t;              ///< For the standard algorithms.
  using pointer = Batch*;                              ///< Batch*.
  using reference = Batch&;                            ///< Batch&.

  /// The end iterator.
  Iterator() = default;
  /// The current batch; rethrows the error that replaced it.
  Batch& operator*() const { return epoch_->get(); }
  /// The current batch's members: it->data.
  Batch* operator->() const { return &epoch_->get(); }
  /// The next batch; IndexError on the end iterator.
  Iterator& operator++() {
    TG_CHECK(epoch_ != nullptr, IndexError, "DataLoader: ++ on the end iterator");
    epoch_->advance();
    return *this;
  }
  /// Both at the end, or the same epoch at the same position.
  bool operator==(const Iterator& other) const {
    if (at_end() || other.at_end()) return at_end() && other.at_end();
    return epoch_ == other.epoch_;
  }
  /// Not ==.
  bool operator!=(const Iterator& other) const { return !(*this == other); }
  /// Starts at the first batch of epoch (loaders make these).
  explicit Iterator(std::shared_ptr<detail::LoaderEpoch<Batch>> epoch) : epoch_(std::move(epoch)) {}

 private:
  bool at_end() const { return epoch_ == nullptr || epoch_->pos >= epoch_->num_batches; }
  std::shared_ptr<detail::LoaderEpoch<Batch>> epoch_;
};

/// The loader make_data_loader returns (libtorch's StatelessDataLoader): owns the dataset (one copy
/// per worker) and the sampler; `for (auto& batch : *loader)` runs an epoch. See Note [Two data APIs].
template <class Dataset, class Sampler>
class StatelessDataLoader {
  static_assert(!Dataset::is_stateful,
                "tg::data: stateful datasets (a std::optional batch: StatefulDataset, ChunkDataset) are not "
                "supported; derive from tg::data::datasets::Dataset<Self> or BatchDataset<Self>");

 public:
  using BatchType = typename Dataset::BatchType;                ///< What an iteration yields.
  using BatchRequestType = typename Sampler::BatchRequestType;  ///< What the sampler gives.
  using iterator = Iterator<BatchType>;                         ///< This loader's iterator.

  /// Loads dataset in sampler's order; DataError for batch_size 0, or for workers > 0 and a dataset
  /// that cannot be copied.
  StatelessDataLoader(Dataset dataset, Sampler sampler, DataLoaderOptions options)
      : sampler_(std::move(sampler)), options_(std::move(options)) {
    TG_CHECK(options_.batch_size() > 0, DataError, "make_data_loader: batch_size must be positive, got 0");
    if (!options_.max_jobs()) options_.max_jobs(2 * options_.workers());
    const size_t copies = std::max<size_t>(1, options_.workers());
    if constexpr (std::is_copy_constructible<Dataset>::value) {
      datasets_.reserve(copies);
      for (size_t w = 1; w < copies; ++w) datasets_.push_back(dataset);
    } else {
      TG_CHECK(copies == 1, DataError, "make_data_loader: workers(", options_.workers(),
               ") needs a copyable dataset (each worker reads its own copy)");
    }
    datasets_.push_back(std::move(dataset));
  }
  /// Stops the workers of an epoch still running; its iterators then throw DataError.
  ~StatelessDataLoader() { join(); }
  StatelessDataLoader(const StatelessDataLoader&) = delete;
  StatelessDataLoader& operator=(const StatelessDataLoader&) = delete;

  /// Starts an epoch: resets the sampler, takes its batches' indices, starts the workers.
  Iterator<BatchType> begin() {
    join();
    sampler_.reset(std::nullopt);
    auto requests = std::make_shared<std::vector<BatchRequestType>>();
    const size_t batch_size = options_.batch_size();
    while (auto request = sampler_.next(batch_size)) {
      if (request->size() == 0 || (request->size() < batch_size && options_.drop_last())) break;
      requests->push_back(std::move(*request));
    }
    const auto num_batches = static_cast<int64_t>(requests->size());
    auto epoch = std::make_shared<detail::LoaderEpoch<BatchType>>(num_batches, options_.timeout());
    const int64_t workers = static_cast<int64_t>(options_.workers());
    const int64_t capacity = workers == 0 ? 0 : static_cast<int64_t>(*options_.max_jobs());
    std::vector<Dataset>* datasets = &datasets_;
    epoch->queue = std::make_unique<detail::BatchQueue>(
        num_batches, capacity, std::max<int64_t>(workers, 1),
        [datasets, requests](int64_t b, int64_t worker) -> std::shared_ptr<void> {
          // each batch is made once: its request can be moved out
          return std::make_shared<BatchType>(
              (*datasets)[static_cast<size_t>(worker)].get_batch(std::move((*requests)[static_cast<size_t>(b)])));
        },
        "DataLoader");
    epoch->queue->start();
    live_ = epoch;
    return Iterator<BatchType>(std::move(epoch));
  }
  /// The end iterator.
  Iterator<BatchType> end() { return Iterator<BatchType>(); }
  /// Stops and joins the workers of the running epoch (libtorch's join).
  void join() {
    if (auto epoch = live_.lock())
      if (epoch->queue)
        epoch->queue->shutdown("the loader began a new epoch or was destroyed while an iterator was in use");
  }
  /// The options, max_jobs filled in.
  const DataLoaderOptions& options() const noexcept { return options_; }
  /// The sampler.
  Sampler& sampler() noexcept { return sampler_; }

 private:
  std::vector<Dataset> datasets_;   // [w] for worker w; [0] also for workers(0)
  Sampler sampler_;
  DataLoaderOptions options_;
  std::weak_ptr<detail::LoaderEpoch<BatchType>> live_;
};

/// A loader of dataset in sampler's order (libtorch's make_data_loader(dataset, sampler, options)).
template <class Dataset, class Sampler>
std::unique_ptr<StatelessDataLoader<Dataset, Sampler>> make_data_loader(Dataset dataset, Sampler sampler,
                                                                        DataLoaderOptions options) {
  return std::make_unique<StatelessDataLoader<Dataset, Sampler>>(std::move(dataset), std::move(sampler),
                                                                 std::move(options));
}

/// A loader of dataset with a Sampler(dataset.size()): RandomSampler (shuffled, a new order per
/// epoch) unless given, as libtorch: make_data_loader<SequentialSampler>(std::move(ds), 64). DataError
/// for an unsized dataset.
template <class Sampler = samplers::RandomSampler, class Dataset,
          std::enable_if_t<std::is_constructible<Sampler, size_t>::value, int> = 0>
std::unique_ptr<StatelessDataLoader<Dataset, Sampler>> make_data_loader(
    Dataset dataset, DataLoaderOptions options = DataLoaderOptions()) {
  const std::optional<size_t> size = dataset.size();
  TG_CHECK(size.has_value(), DataError, "make_data_loader: expected the dataset to be sized in order to construct "
           "the Sampler");
  Sampler sampler(*size);
  return make_data_loader(std::move(dataset), std::move(sampler), std::move(options));
}

}  // namespace data
}  // namespace tg
