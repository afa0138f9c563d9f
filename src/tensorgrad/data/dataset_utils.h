/// \file
/// data/dataset_utils.h: PyTorch's dataset utilities (torch.utils.data) for tensorgrad's own
/// data::Dataset and DataLoader (data/dataset.h, data/loader.h): Subset, ConcatDataset, random_split,
/// and TransformDataset, which applies a transform (data/transforms.h) to each sample's input. The
/// weighted sampler is data::WeightedRandomSampler (data/sampler.h). The same utilities for the
/// libtorch-style datasets are in data/utils.h; both share the split arithmetic there.
/// \code
/// auto parts = tg::data::random_split(train, {0.9, 0.1}, /*seed=*/0);   // train: any data::Dataset
/// tg::data::ConcatDataset both({parts[0], extra});
/// tg::data::DataLoader loader(both, tg::data::LoaderOptions().batch_size(64).shuffle(true));
/// \endcode
/// Like DataLoader, these borrow their datasets: each must outlive the Subset, ConcatDataset or
/// TransformDataset made from it (an rvalue dataset does not compile).
#pragma once
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <vector>

#include "tensorgrad/data/dataset.h"
#include "tensorgrad/data/utils.h"

namespace tg {
namespace data {

/// The samples of another dataset at the given indices, in that order (PyTorch's
/// torch.utils.data.Subset): size() is indices.size() and get(i) is dataset.get(indices[i]).
/// get_batch maps the indices and calls the dataset's own get_batch, so a TensorDataset keeps its
/// single gather (PyTorch's Subset.__getitems__).
class Subset : public Dataset {
 public:
  /// The samples of dataset at indices (repeats allowed, any order). Unlike PyTorch, which finds a bad
  /// index only when it is read, each index is checked here: IndexError, naming it, unless it lies in
  /// [0, dataset.size()).
  Subset(const Dataset& dataset, std::vector<int64_t> indices);
  Subset(const Dataset&& dataset, std::vector<int64_t> indices) = delete;   // would dangle
  /// The number of indices.
  int64_t size() const override { return static_cast<int64_t>(indices_.size()); }
  /// dataset.get(indices[index]); IndexError for index outside [0, size()).
  Example<> get(int64_t index) const override;
  /// dataset.get_batch of the mapped indices; IndexError as get.
  Batch get_batch(const std::vector<int64_t>& indices) const override;
  /// The viewed dataset.
  const Dataset& dataset() const noexcept { return *dataset_; }
  /// The indices into dataset(), in this subset's order.
  const std::vector<int64_t>& indices() const noexcept { return indices_; }

 private:
  const Dataset* dataset_;
  std::vector<int64_t> indices_;
};

/// Several datasets one after the other (PyTorch's torch.utils.data.ConcatDataset): sample i is
/// sample i - cumulative_sizes()[k - 1] of dataset k, the first k whose cumulative size exceeds i
/// (a binary search). `ConcatDataset({a, b, c})` with datasets of any Dataset types. Indices are
/// [0, size()) as for every data::Dataset: PyTorch's negative indices counting from the end are an
/// IndexError here.
class ConcatDataset : public Dataset {
 public:
  /// datasets, in order, borrowed. DataError (PyTorch's "datasets should not be an empty iterable")
  /// when there is none, or when the sizes' sum overflows int64.
  explicit ConcatDataset(std::vector<std::reference_wrapper<const Dataset>> datasets);
  /// The sum of the datasets' sizes.
  int64_t size() const override { return cumulative_sizes_.back(); }
  /// The sample at index of the concatenation; IndexError, naming index and the size, outside [0, size()).
  Example<> get(int64_t index) const override;
  /// Entry k: the sizes of datasets 0 .. k summed (PyTorch's cumulative_sizes).
  const std::vector<int64_t>& cumulative_sizes() const noexcept { return cumulative_sizes_; }
  /// The datasets, in order.
  const std::vector<std::reference_wrapper<const Dataset>>& datasets() const noexcept { return datasets_; }

 private:
  std::vector<std::reference_wrapper<const Dataset>> datasets_;
  std::vector<int64_t> cumulative_sizes_;
};

/// A dataset whose samples are another's with transform applied to each input (and target_transform,
/// when given, to each target), as torchvision datasets apply their transform= and
/// target_transform= arguments. A transform is any Tensor -> Tensor callable, e.g. a
/// transforms::Compose of image transforms (data/transforms.h). get_batch stacks get() results, so a
/// random transform draws anew for every sample. The transforms run on the DataLoader's worker
/// threads (Note [Dataset thread safety]): they must be safe to call concurrently, as tensorgrad's
/// transforms are; their random draws come from tg's stream, so with num_workers(n > 1) the draws'
/// order, and so which sample gets which, varies from run to run.
/// \code
/// namespace T = tg::data::transforms;
/// tg::data::TransformDataset augmented(train, T::Compose<>({T::RandomCrop<>(28, 4),
///                                                          T::RandomHorizontalFlip<>(),
///                                                          T::Normalize<>(0.2860, 0.3530)}));
/// \endcode
class TransformDataset : public Dataset {
 public:
  /// A transform of a sample's input or target.
  using TransformFunction = std::function<Tensor(Tensor)>;
  /// dataset's samples through transform (Error when it is empty) and, when given, target_transform.
  TransformDataset(const Dataset& dataset, TransformFunction transform, TransformFunction target_transform = nullptr);
  TransformDataset(const Dataset&& dataset, TransformFunction transform,
                   TransformFunction target_transform = nullptr) = delete;   // would dangle
  /// dataset.size().
  int64_t size() const override { return dataset_->size(); }
  /// dataset.get(index) with the transforms applied.
  Example<> get(int64_t index) const override;
  /// The transformed dataset.
  const Dataset& dataset() const noexcept { return *dataset_; }

 private:
  const Dataset* dataset_;
  TransformFunction transform_, target_transform_;
};

namespace detail {
/// Subsets of dataset holding consecutive runs of sizes[k] indices of one permutation drawn from seed
/// (or, without one, from tg's stream): random_split's second half.
std::vector<Subset> split_subsets(const Dataset& dataset, const std::vector<size_t>& sizes,
                                  std::optional<uint64_t> seed);
}  // namespace detail

/// dataset split at random into non-overlapping Subsets of the given lengths (PyTorch's
/// torch.utils.data.random_split), with the rules of the libtorch-style datasets::random_split
/// (data/utils.h), whose arithmetic it shares: integer lengths are counts summing to dataset.size(),
/// double lengths fractions summing to 1 (10 samples by {0.3, 0.3, 0.4} give 3, 3, 4; 11 by
/// {0.5, 0.5} give 6, 5), else DataError with PyTorch's "Sum of input lengths does not equal the length
/// of the input dataset!". The permutation is drawn from seed when given (PyTorch's generator
/// argument), else from one draw of tg's random stream (so tg::manual_seed fixes it); it is tensorgrad's
/// shuffle, not torch.randperm's numbers. The Subsets borrow dataset.
template <class Length>
std::vector<Subset> random_split(const Dataset& dataset, const std::vector<Length>& lengths,
                                 std::optional<uint64_t> seed = std::nullopt) {
  const std::vector<size_t> sizes = datasets::detail::split_sizes(static_cast<size_t>(dataset.size()), lengths);
  return detail::split_subsets(dataset, sizes, seed);
}

/// random_split with a braced list of lengths: random_split(dataset, {0.8, 0.2}) or {800, 200}.
template <class Length>
std::vector<Subset> random_split(const Dataset& dataset, std::initializer_list<Length> lengths,
                                 std::optional<uint64_t> seed = std::nullopt) {
  return random_split(dataset, std::vector<Length>(lengths), seed);
}

/// The Subsets would borrow a temporary.
template <class Length>
std::vector<Subset> random_split(const Dataset&& dataset, const std::vector<Length>& lengths,
                                 std::optional<uint64_t> seed = std::nullopt) = delete;
/// The Subsets would borrow a temporary.
template <class Length>
std::vector<Subset> random_split(const Dataset&& dataset, std::initializer_list<Length> lengths,
                                 std::optional<uint64_t> seed = std::nullopt) = delete;

}  // namespace data
}  // namespace tg
