/// \file
/// data/loader.h: DataLoader, which cuts a Dataset into batches (optionally shuffled, reproducibly
/// from a seed and the epoch number, or in a Sampler's order) and prepares the next ones on background
/// worker threads. The datasets are in data/dataset.h and data/idx.h, the samplers in data/sampler.h;
/// the threads and their queue live in data/loader.cpp.
#pragma once
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <vector>

#include "tensorgrad/data/dataset.h"
#include "tensorgrad/data/sampler.h"

namespace tg {
namespace data {

/// Builder-style options: LoaderOptions().batch_size(64).shuffle(true).seed(0).
class LoaderOptions {
 public:
  /// Samples per batch (default 1; the DataLoader throws Error unless positive).
  LoaderOptions& batch_size(int64_t n) { batch_size_ = n; return *this; }
  /// A new random order every epoch (default off: dataset order).
  LoaderOptions& shuffle(bool on) { shuffle_ = on; return *this; }
  /// With a usable GPU the prefetch thread copies each batch into pinned (page-locked) host memory, so
  /// that batch.data.to(gpu, true) is asynchronous; without one it is a no-op.
  LoaderOptions& pin_memory(bool on) { pin_memory_ = on; return *this; }
  /// The shuffle seed (default 0): an epoch's order depends only on it and the epoch number, not on
  /// manual_seed.
  LoaderOptions& seed(uint64_t s) { seed_ = s; return *this; }
  /// Drop the last, smaller batch when the dataset size is not a multiple of batch_size.
  LoaderOptions& drop_last(bool on) { drop_last_ = on; return *this; }
  /// Batches prepared ahead by the background thread; 0 prepares each batch on the caller's thread.
  /// With num_workers(n), n > 1, up to prefetch * n batches (PyTorch's prefetch_factor * num_workers).
  LoaderOptions& prefetch(int64_t n) { prefetch_ = n; return *this; }
  /// Worker threads that load and collate batches in parallel (PyTorch's num_workers, as threads of
  /// this process). The batches still arrive in the order one worker gives, each the same bits
  /// (Dataset::get_batch must be safe to call from several threads: Note [Dataset thread safety]).
  /// 0 (the default) and 1 both mean one background thread (none with prefetch(0)); n > 1 needs
  /// prefetch >= 1. Error for a negative n.
  LoaderOptions& num_workers(int64_t n) { num_workers_ = n; return *this; }
  /// Takes the sample order from sampler (e.g. a DistributedSampler) instead of the dataset order or
  /// shuffle, which must then be off (Error, as PyTorch's "sampler option is mutually exclusive with
  /// shuffle"). Borrowed: the sampler must outlive the loader; its indices() are read when each epoch
  /// begins, so set_epoch on it before the loop.
  LoaderOptions& sampler(const Sampler& s) { sampler_ = &s; return *this; }

  /// See batch_size(int64_t).
  int64_t batch_size() const { return batch_size_; }
  /// See shuffle(bool).
  bool shuffle() const { return shuffle_; }
  /// See pin_memory(bool).
  bool pin_memory() const { return pin_memory_; }
  /// See seed(uint64_t).
  uint64_t seed() const { return seed_; }
  /// See drop_last(bool).
  bool drop_last() const { return drop_last_; }
  /// See prefetch(int64_t) (default 2).
  int64_t prefetch() const { return prefetch_; }
  /// See num_workers(int64_t).
  int64_t num_workers() const { return num_workers_; }
  /// See sampler(const Sampler&); null when none was given.
  const Sampler* sampler() const { return sampler_; }

 private:
  int64_t batch_size_ = 1;
  bool shuffle_ = false;
  bool pin_memory_ = false;
  uint64_t seed_ = 0;
  bool drop_last_ = false;
  int64_t prefetch_ = 2;
  int64_t num_workers_ = 0;
  const Sampler* sampler_ = nullptr;
};

/// for (auto& batch : loader) { batch.data; batch.target; }   // data (B, ...), target (B, ...)
/// Each begin() starts a new epoch: with shuffle, its order depends only on the seed and the epoch number
/// (0, 1, 2, ... counted by begin(), or set_epoch()). An exception thrown while preparing a batch is
/// rethrown, with its type, where the consumer dereferences or increments past it; the epoch then ends.
/// Destroying the last iterator of an epoch (breaking out of the loop) or the loader stops and joins
/// its thread. The dataset must outlive the loader; see Note [Dataset thread safety].
class DataLoader {
  struct Epoch;   // one pass over the data: its order, its prefetch thread and queue (data/loader.cpp)

 public:
  /// An input iterator over one epoch's batches; copies share the position.
  class Iterator {
   public:
    /// Single pass.
    using iterator_category = std::input_iterator_tag;
    /// A Batch.
    using value_type = Batch;
    /// For the standard algorithms.
    using difference_type = std::ptrdiff_t;
    /// Batch*.
    using pointer = Batch*;
    /// Batch&.
    using reference = Batch&;

    Iterator() = default;                 ///< the end iterator
    Batch& operator*() const;             ///< waits for the batch; rethrows the error that replaced it
    /// The current batch's members: it->data, it->target.
    Batch* operator->() const { return &**this; }
    /// Moves to the next batch; a batch skipped without dereferencing is still consumed (and its
    /// error rethrown). IndexError on the end iterator.
    Iterator& operator++();
    /// Both at the end, or the same epoch at the same position.
    bool operator==(const Iterator& other) const;
    /// Not ==.
    bool operator!=(const Iterator& other) const { return !(*this == other); }

   private:
    friend class DataLoader;
    explicit Iterator(std::shared_ptr<Epoch> epoch) : epoch_(std::move(epoch)) {}
    bool at_end() const;
    std::shared_ptr<Epoch> epoch_;   // copies share the position (an input iterator)
  };

  /// Borrows dataset (it must outlive the loader); Error unless batch_size > 0 and prefetch >= 0.
  DataLoader(const Dataset& dataset, LoaderOptions options = LoaderOptions());
  DataLoader(const Dataset&& dataset, LoaderOptions options = LoaderOptions()) = delete;   // would dangle
  /// Stops and joins the prefetch threads of epochs still running.
  ~DataLoader();
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  Iterator begin();                        ///< starts epoch epoch() and its prefetch thread
  /// The end iterator.
  Iterator end() { return Iterator(); }
  /// Batches per epoch: ceil(N / batch_size), or floor with drop_last; N is the sampler's size()
  /// when there is one, else the dataset's.
  int64_t size() const;
  int64_t epoch() const { return epoch_; } ///< the number the next begin() uses
  /// Sets the number the next begin() uses (>= 0, else Error), e.g. to resume a run at a given
  /// epoch's order.
  void set_epoch(int64_t epoch);
  /// The options it was built with.
  const LoaderOptions& options() const { return options_; }
  /// The borrowed dataset.
  const Dataset& dataset() const { return *dataset_; }
  /// The sample order of an epoch (identity without shuffle): a permutation of [0, dataset.size()).
  /// With a sampler, its indices() (the epoch number is the sampler's own: see its set_epoch).
  std::vector<int64_t> order(int64_t epoch) const;

 private:
  const Dataset* dataset_;
  LoaderOptions options_;
  int64_t epoch_ = 0;
  std::vector<std::weak_ptr<Epoch>> live_;   // epochs whose threads the destructor must stop
};

}  // namespace data
}  // namespace tg
