/// \file
/// data/sampler.h: Sampler, the sample order a DataLoader follows (LoaderOptions::sampler), and
/// DistributedSampler, which gives each of several processes its own share of a dataset (PyTorch's
/// torch.utils.data.distributed.DistributedSampler). The loader that consumes them is data/loader.h;
/// the process group that supplies rank and world size is not here.
#pragma once
#include <cstdint>
#include <vector>

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

namespace detail {
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
