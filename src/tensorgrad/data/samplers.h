/// \file
/// data/samplers.h: libtorch's samplers (torch::data::samplers), which hand make_data_loader
/// (data/dataloader.h) one batch of indices at a time: SequentialSampler, RandomSampler (the default),
/// DistributedRandomSampler, DistributedSequentialSampler, WeightedRandomSampler (PyTorch's), and the
/// Sampler base for one's own. The
/// sample orders of tensorgrad's own DataLoader (data/loader.h) are in data/sampler.h.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "tensorgrad/autograd/tensor.h"
#include "tensorgrad/core/device.h"

namespace tg {
namespace data {
/// libtorch's samplers (torch::data::samplers): where make_data_loader takes its batches' indices.
namespace samplers {

/// The interface make_data_loader reads (libtorch's torch::data::samplers::Sampler): reset() when an
/// epoch begins, then next(batch_size) until it returns nullopt. libtorch's save(archive) and
/// load(archive) are not part of it (tensorgrad has no serialize::OutputArchive).
template <class BatchRequest = std::vector<size_t>>
class Sampler {
 public:
  /// What next() returns: the indices of one batch.
  using BatchRequestType = BatchRequest;
  virtual ~Sampler() = default;
  /// Starts a new pass, over new_size samples when given.
  virtual void reset(std::optional<size_t> new_size) = 0;
  /// The next batch_size indices (fewer at the end of the pass), or nullopt when the pass is over.
  virtual std::optional<BatchRequest> next(size_t batch_size) = 0;
};

/// 0, 1, ..., size - 1 in order (libtorch's SequentialSampler).
class SequentialSampler : public Sampler<> {
 public:
  /// A sampler over size samples.
  explicit SequentialSampler(size_t size);
  /// Starts again at 0, over new_size samples when given.
  void reset(std::optional<size_t> new_size = std::nullopt) override;
  /// The next batch_size indices.
  std::optional<std::vector<size_t>> next(size_t batch_size) override;
  /// How many indices this pass has given.
  size_t index() const noexcept { return index_; }

 private:
  size_t size_;
  size_t index_ = 0;
};

/// A random permutation of 0 .. size - 1, drawn anew by every reset() (libtorch's RandomSampler, the
/// default of make_data_loader). Each permutation draws its key from tg's random stream, so
/// tg::manual_seed fixes the orders; the permutation itself is tensorgrad's shuffle
/// (data::detail::shuffle_in_place), not torch::randperm's numbers. The constructor draws the first
/// one, as libtorch's does.
class RandomSampler : public Sampler<> {
 public:
  /// A sampler over size samples (Error when negative). index_dtype is accepted for libtorch's
  /// signature (int64 or int32; the indices are kept as size_t).
  explicit RandomSampler(int64_t size, DType index_dtype = kInt64);
  /// Draws a new permutation, of new_size samples when given.
  void reset(std::optional<size_t> new_size = std::nullopt) override;
  /// The next batch_size indices of the permutation.
  std::optional<std::vector<size_t>> next(size_t batch_size) override;
  /// How many indices this pass has given.
  size_t index() const noexcept { return index_; }

 private:
  std::vector<int64_t> indices_;
  size_t index_ = 0;
};

/// num_samples indices of 0 .. N - 1 drawn with probabilities proportional to N weights (PyTorch's
/// torch.utils.data.WeightedRandomSampler), with replacement (the default) or without (then each index at
/// most once per pass). Each pass is one tg::multinomial of the weights, drawn when the sampler is made and
/// anew by every reset(), so tg::manual_seed fixes the draws; next(batch_size) hands out the pass in
/// slices, as RandomSampler does. With make_data_loader(dataset, sampler, options) an epoch is then
/// num_samples samples, e.g. a class-balanced epoch from weights 1 / (count of the sample's class).
/// The arguments are checked when the sampler is made, with PyTorch's messages (DataError): num_samples
/// positive, weights 1-D (ShapeError) and non-empty, finite, non-negative and not all zero, and without
/// replacement num_samples at most the number of nonzero weights (PyTorch then draws zero-weight indices
/// once the others are used up; this sampler refuses, so that an index of weight 0 is never drawn).
class WeightedRandomSampler : public Sampler<> {
 public:
  /// Samples by weights (N), any real dtype (kept as a float64 copy on the CPU).
  WeightedRandomSampler(const Tensor& weights, int64_t num_samples, bool replacement = true);
  /// Samples by weights given as numbers.
  WeightedRandomSampler(const std::vector<double>& weights, int64_t num_samples, bool replacement = true);
  /// Draws a new pass; new_size, when given, becomes num_samples (checked as in the constructor).
  void reset(std::optional<size_t> new_size = std::nullopt) override;
  /// The next batch_size indices of the pass.
  std::optional<std::vector<size_t>> next(size_t batch_size) override;
  /// How many indices this pass has given.
  size_t index() const noexcept { return index_; }
  /// The weights, (N) float64.
  const Tensor& weights() const noexcept { return weights_; }
  /// The number of indices one pass gives (PyTorch's len(sampler)).
  int64_t num_samples() const noexcept { return num_samples_; }
  /// Whether an index may be drawn more than once per pass.
  bool replacement() const noexcept { return replacement_; }

 private:
  void check_num_samples(int64_t num_samples) const;
  Tensor weights_;
  int64_t num_samples_;
  bool replacement_;
  int64_t nonzero_ = 0;
  std::vector<int64_t> indices_;
  size_t index_ = 0;
};

/// What libtorch's two distributed samplers share: the dataset size, the number of processes, this
/// process's rank and the epoch (libtorch's DistributedSampler). Each rank reads a contiguous block of
/// local_sample_count() positions of an order all ranks share; allow_duplicates pads that order
/// with its first indices so that every rank gets ceil(size / num_replicas) of them, else each gets
/// floor(size / num_replicas) and the remainder is left out.
template <class BatchRequest = std::vector<size_t>>
class DistributedSampler : public Sampler<BatchRequest> {
 public:
  /// size samples among num_replicas processes, this one rank.
  DistributedSampler(size_t size, size_t num_replicas = 1, size_t rank = 0, bool allow_duplicates = true)
      : size_(size), num_replicas_(num_replicas), rank_(rank), epoch_(0), allow_duplicates_(allow_duplicates) {}
  /// Sets the epoch whose order the next reset() draws (call it before each epoch).
  void set_epoch(size_t epoch) { epoch_ = epoch; }
  /// The epoch set last (0 at first).
  size_t epoch() const { return epoch_; }

 protected:
  /// The number of indices each rank reads per pass.
  size_t local_sample_count() const {
    return allow_duplicates_ ? (size_ + num_replicas_ - 1) / num_replicas_ : size_ / num_replicas_;
  }
  size_t size_;            ///< The dataset size.
  size_t num_replicas_;    ///< The number of processes.
  size_t rank_;            ///< This process's rank.
  size_t epoch_;           ///< See set_epoch().
  bool allow_duplicates_;  ///< Pad to equal shares (true) or leave the remainder out.
};

/// This rank's block of a permutation of the (padded) indices drawn from the epoch, the same on every
/// rank (libtorch's DistributedRandomSampler). The permutation is tensorgrad's shuffle keyed by the
/// epoch (libtorch's std::shuffle differs between standard libraries).
class DistributedRandomSampler : public DistributedSampler<> {
 public:
  /// Error unless num_replicas >= 1 and rank < num_replicas.
  DistributedRandomSampler(size_t size, size_t num_replicas = 1, size_t rank = 0, bool allow_duplicates = true);
  /// Draws the epoch's permutation, over new_size samples when given.
  void reset(std::optional<size_t> new_size = std::nullopt) override;
  /// The next batch_size indices of this rank's block.
  std::optional<std::vector<size_t>> next(size_t batch_size) override;
  /// The position in the shared order of the next index.
  size_t index() const noexcept { return sample_index_; }

 private:
  void populate_indices();
  size_t begin_index_ = 0, end_index_ = 0, sample_index_ = 0;
  std::vector<int64_t> all_indices_;
};

/// This rank's contiguous block of 0, 1, ..., size - 1, wrapping around past the end when padded
/// (libtorch's DistributedSequentialSampler).
class DistributedSequentialSampler : public DistributedSampler<> {
 public:
  /// Error unless num_replicas >= 1 and rank < num_replicas.
  DistributedSequentialSampler(size_t size, size_t num_replicas = 1, size_t rank = 0, bool allow_duplicates = true);
  /// Starts this rank's block again, over new_size samples when given.
  void reset(std::optional<size_t> new_size = std::nullopt) override;
  /// The next batch_size indices of this rank's block.
  std::optional<std::vector<size_t>> next(size_t batch_size) override;
  /// The position of the next index.
  size_t index() const noexcept { return sample_index_; }

 private:
  void populate_indices();
  size_t begin_index_ = 0, end_index_ = 0, sample_index_ = 0;
};

}  // namespace samplers
}  // namespace data
}  // namespace tg
