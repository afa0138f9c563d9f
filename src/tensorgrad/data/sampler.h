/// \file
/// data/sampler.h: Sampler, the sample order a DataLoader follows (LoaderOptions::sampler), and
/// DistributedSampler, which gives each of several processes its own share of a dataset (PyTorch's
/// torch.utils.data.distributed.DistributedSampler). The loader that consumes them is data/loader.h;
/// the process group that supplies rank and world size is not here.
#pragma once
#include <cstdint>
#include <vector>

#include "tensorgrad/autograd/tensor.h"

namespace tg {
namespace data {

/// A source of sample indices for a DataLoader (PyTorch's torch.utils.data.Sampler): the loader
/// asks for indices() when an epoch begins and batches them in that order.
class Sampler {
 public:
  virtual ~Sampler() = default;
  /// The indices of one pass, in order (PyTorch's list(iter(sampler))).
  virtual std::vector<int64_t> indices() const = 0;
  /// The number of indices one pass gives (PyTorch's len(sampler)).
  virtual int64_t size() const = 0;
};

/// One rank's share of a dataset of dataset_size samples split among num_replicas processes, with
/// PyTorch's semantics: the order (0, 1, ..., n-1, or with shuffle a permutation drawn from seed +
/// epoch, the same on every rank) is padded by repeating its first indices until it divides evenly
/// (or, with drop_last, cut to the largest multiple of num_replicas), and rank r takes positions
/// r, r + num_replicas, r + 2 num_replicas, ... so every rank gets size() = ceil(n / num_replicas)
/// indices (floor with drop_last) and the ranks' shares are disjoint except for the padding. Call
/// set_epoch(e) before each epoch, as with PyTorch, or every epoch repeats epoch 0's order:
/// \code
/// tg::data::DistributedSampler sampler(dataset.size(), world, rank, /*shuffle=*/true, /*seed=*/0);
/// tg::data::DataLoader loader(dataset, tg::data::LoaderOptions().batch_size(64).sampler(sampler));
/// for (int epoch = 0; epoch < epochs; ++epoch) {
///   sampler.set_epoch(epoch);
///   for (auto& batch : loader) { ... }
/// }
/// \endcode
/// The permutation is tensorgrad's own (a Mersenne Twister, fixed by the C++ standard), not
/// torch.randperm's: equal on every rank and machine, but not PyTorch's numbers.
class DistributedSampler : public Sampler {
 public:
  /// Error unless dataset_size >= 0, num_replicas >= 1 and 0 <= rank < num_replicas (PyTorch:
  /// "Invalid rank 2, rank should be in the interval [0, 1]").
  DistributedSampler(int64_t dataset_size, int64_t num_replicas, int64_t rank, bool shuffle = true,
                     uint64_t seed = 0, bool drop_last = false);
  /// This rank's indices for the current epoch: size() of them. OutOfMemoryError, before any
  /// allocation, when the order (dataset_size indices with shuffle, size() without) is larger than the
  /// machine's memory, or when allocating it fails.
  std::vector<int64_t> indices() const override;
  /// num_samples().
  int64_t size() const override { return num_samples_; }
  /// Sets the epoch whose order indices() gives: the shuffle draws from seed + epoch (every rank must
  /// use the same epoch). Error for a negative epoch.
  void set_epoch(int64_t epoch);
  /// The epoch indices() uses (0 until set_epoch).
  int64_t epoch() const { return epoch_; }
  /// Indices per rank: ceil(n / num_replicas), or ceil((n - num_replicas) / num_replicas) with
  /// drop_last when n is not a multiple of num_replicas (PyTorch's num_samples).
  int64_t num_samples() const { return num_samples_; }
  /// num_samples() * num_replicas: the padded (or cut) length of the order all ranks share. DataError
  /// when that product does not fit in int64 (PyTorch's Python integer has no such limit; indices()
  /// of such a sampler could not be allocated anyway).
  int64_t total_size() const;

 private:
  int64_t dataset_size_, num_replicas_, rank_;
  bool shuffle_;
  uint64_t seed_;
  int64_t num_samples_;
  int64_t epoch_ = 0;
};

/// num_samples indices of 0 .. N - 1 drawn with probabilities proportional to N weights (PyTorch's
/// torch.utils.data.WeightedRandomSampler), with replacement (the default) or without (then each index
/// at most once per pass), as a DataLoader's sampler:
/// \code
/// tg::data::WeightedRandomSampler sampler(weights, /*num_samples=*/1000);   // e.g. 1 / (count of the class)
/// tg::data::DataLoader loader(dataset, tg::data::LoaderOptions().batch_size(64).sampler(sampler));
/// \endcode
/// Every indices() (every epoch of the loader) is a new tg::multinomial draw of the weights from tg's
/// random stream, so tg::manual_seed fixes the epochs' draws; the numbers are tensorgrad's, not
/// torch.multinomial's. The arguments are checked when the sampler is made (DataError, ShapeError for
/// weights that are not 1-D), with PyTorch's messages: num_samples positive; weights finite,
/// non-negative, not all zero; without replacement, num_samples at most the number of nonzero weights
/// (PyTorch then draws indices of weight 0 once the others are used up; this sampler refuses, so that
/// an index of weight 0 is never drawn). The libtorch-style sampler of the same name
/// (data::samplers::WeightedRandomSampler, data/samplers.h) shares these checks and the draw.
class WeightedRandomSampler : public Sampler {
 public:
  /// Samples by weights (N), any real dtype (kept as a float64 copy on the CPU).
  WeightedRandomSampler(const Tensor& weights, int64_t num_samples, bool replacement = true);
  /// Samples by weights given as numbers.
  WeightedRandomSampler(const std::vector<double>& weights, int64_t num_samples, bool replacement = true);
  /// A new draw of num_samples() indices in [0, N).
  std::vector<int64_t> indices() const override;
  /// num_samples().
  int64_t size() const override { return num_samples_; }
  /// The weights, (N) float64.
  const Tensor& weights() const noexcept { return weights_; }
  /// The number of indices one pass gives (PyTorch's len(sampler)).
  int64_t num_samples() const noexcept { return num_samples_; }
  /// Whether an index may be drawn more than once per pass.
  bool replacement() const noexcept { return replacement_; }

 private:
  Tensor weights_;
  int64_t num_samples_;
  bool replacement_;
  int64_t nonzero_ = 0;
};

namespace detail {
/// The weights of a WeightedRandomSampler (both this one and data::samplers'), checked in PyTorch's
/// order: num_samples positive, weights defined and 1-D (ShapeError), each finite and non-negative,
/// their sum positive (DataError with torch.multinomial's messages). Returns them as a float64 (N) CPU
/// tensor and counts the nonzero ones into nonzero.
Tensor checked_sampling_weights(const Tensor& weights, int64_t num_samples, int64_t& nonzero);
/// num_samples positive and, without replacement, at most the number of weights and of nonzero weights
/// (DataError).
void check_weighted_num_samples(int64_t num_samples, int64_t num_weights, int64_t nonzero, bool replacement);
/// One pass of a WeightedRandomSampler: tg::multinomial(weights, num_samples, replacement) from tg's
/// random stream, as indices.
std::vector<int64_t> weighted_draw(const Tensor& weights, int64_t num_samples, bool replacement);

/// Shuffles order in place (Fisher-Yates, driven by a std::mt19937_64 seeded with key, drawing
/// without modulo bias), so an order depends only on key, on every standard library. DataLoader's
/// shuffle and DistributedSampler share it.
void shuffle_in_place(std::vector<int64_t>& order, uint64_t key);
/// The SplitMix64 mixing step: spreads nearby seeds (0, 1, 2...) over the generator's key space.
uint64_t splitmix64(uint64_t x);
/// A vector of n zeros for an index list (n >= 0). Throws OutOfMemoryError naming who and what when
/// n int64s are more than the machine's physical memory (checked before asking: an allocation that
/// size aborts under AddressSanitizer instead of throwing) or when the allocation fails, so that no
/// std::bad_alloc or std::length_error leaves the loader or a sampler.
std::vector<int64_t> index_vector(int64_t n, const char* who, const char* what);
}  // namespace detail

}  // namespace data
}  // namespace tg
