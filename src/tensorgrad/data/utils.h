/// \file
/// data/utils.h: PyTorch's dataset utilities (torch.utils.data) for libtorch-style datasets
/// (data/datasets.h): Subset, ConcatDataset and random_split. Each is a datasets::Dataset<Self>
/// itself, so .map(transforms::Stack<>()) and make_data_loader (data/dataloader.h) take them like
/// any other dataset. The weighted sampler is samplers::WeightedRandomSampler (data/samplers.h).
/// \code
/// auto parts = tg::data::datasets::random_split(tg::data::datasets::MNIST("./mnist"), {0.9, 0.1});
/// auto loader = tg::data::make_data_loader(parts[0].map(tg::data::transforms::Stack<>()), 64);
/// \endcode
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "tensorgrad/core/error.h"
#include "tensorgrad/data/datasets.h"

namespace tg {
namespace data {
namespace datasets {

/// The samples of another dataset at the given indices, in that order (PyTorch's
/// torch.utils.data.Subset): size() is indices.size() and get(i) is dataset.get(indices[i]). The
/// dataset is held by value, as MapDataset holds its source (a copy of MNIST or TensorDataset shares
/// their tensors' storage), so that each loader worker reads its own copy. The indices are not
/// checked against the dataset when the Subset is made (PyTorch does not either, and the dataset may
/// be unsized): the dataset's own get refuses one out of its range when it is read.
template <class SourceDataset>
class Subset : public Dataset<Subset<SourceDataset>, typename SourceDataset::ExampleType> {
 public:
  using DatasetType = SourceDataset;                              ///< The viewed dataset's type.
  using ExampleType = typename SourceDataset::ExampleType;        ///< What get returns.

  /// The samples of dataset at indices (repeats allowed, in any order).
  Subset(SourceDataset dataset, std::vector<size_t> indices)
      : dataset_(std::move(dataset)), indices_(std::move(indices)) {}
  /// dataset.get(indices[index]); IndexError, naming index and the size, for index >= size().
  ExampleType get(size_t index) override { return dataset_.get(source_index(index)); }
  /// The dataset's get_batch of the mapped indices, so that a dataset with a faster batch read
  /// keeps it (PyTorch's Subset.__getitems__); IndexError as get.
  std::vector<ExampleType> get_batch(std::vector<size_t> indices) override {
    for (size_t& i : indices) i = source_index(i);
    return dataset_.get_batch(std::move(indices));
  }
  /// The number of indices.
  std::optional<size_t> size() const override { return indices_.size(); }
  /// The viewed dataset.
  const SourceDataset& dataset() const noexcept { return dataset_; }
  /// The viewed dataset.
  SourceDataset& dataset() noexcept { return dataset_; }
  /// The indices into dataset(), in this subset's order.
  const std::vector<size_t>& indices() const noexcept { return indices_; }

 private:
  size_t source_index(size_t index) const {
    TG_CHECK(index < indices_.size(), IndexError, "Subset: index ", index, " is out of range for a subset of ",
             indices_.size(), " samples");
    return indices_[index];
  }
  SourceDataset dataset_;
  std::vector<size_t> indices_;
};

/// Several datasets one after the other (PyTorch's torch.utils.data.ConcatDataset): sample i is
/// sample i - cumulative_sizes()[k - 1] of dataset k, the first k whose cumulative size exceeds i
/// (a binary search). The datasets may be of different types, all with SingleExample as their
/// ExampleType; each is held by value (copied with the ConcatDataset, so that each loader worker
/// reads its own copy) and must be sized. Indices are size_t, as everywhere in libtorch's data
/// API, so PyTorch's negative indices have no spelling here.
/// \code
/// tg::data::datasets::ConcatDataset<> both(train_part, extra_part);   // two datasets, any types
/// \endcode
template <class SingleExample = Example<>>
class ConcatDataset : public Dataset<ConcatDataset<SingleExample>, SingleExample> {
  /// One dataset, its type erased.
  struct Part {
    virtual ~Part() = default;
    virtual SingleExample get(size_t index) = 0;
    virtual std::unique_ptr<Part> clone() const = 0;
  };
  template <class D>
  struct Held : Part {
    explicit Held(D d) : dataset(std::move(d)) {}
    SingleExample get(size_t index) override { return dataset.get(index); }
    std::unique_ptr<Part> clone() const override {
      if constexpr (std::is_copy_constructible<D>::value) {
        return std::make_unique<Held>(dataset);
      } else {
        throw DataError("ConcatDataset: one of its datasets cannot be copied (make_data_loader's workers each "
                        "read their own copy)");
      }
    }
    D dataset;
  };

 public:
  using ExampleType = SingleExample;   ///< What get returns.

  /// datasets, in order, all of one type. Error (PyTorch's "datasets should not be an empty
  /// iterable") when there is none; DataError for an unsized one.
  template <class D>
  explicit ConcatDataset(std::vector<D> datasets) {
    TG_CHECK(!datasets.empty(), Error, "ConcatDataset: datasets should not be an empty iterable");
    for (D& d : datasets) add(std::move(d));
  }
  /// The given datasets, in order, of any types whose ExampleType is SingleExample (DataError for an
  /// unsized one).
  template <class D, class... Ds,
            std::enable_if_t<sizeof...(Ds) != 0 || !std::is_same<std::decay_t<D>, ConcatDataset>::value, int> = 0>
  explicit ConcatDataset(D first, Ds... rest) {
    add(std::move(first));
    (add(std::move(rest)), ...);
  }
  /// Copies every dataset.
  ConcatDataset(const ConcatDataset& other) : cumulative_sizes_(other.cumulative_sizes_) {
    parts_.reserve(other.parts_.size());
    for (const auto& p : other.parts_) parts_.push_back(p->clone());
  }
  /// See the copy constructor.
  ConcatDataset& operator=(const ConcatDataset& other) {
    if (this != &other) *this = ConcatDataset(other);
    return *this;
  }
  ConcatDataset(ConcatDataset&&) noexcept = default;              ///< Takes the datasets.
  ConcatDataset& operator=(ConcatDataset&&) noexcept = default;   ///< Takes the datasets.

  /// The sample at index of the concatenation; IndexError, naming index and the size, past the end.
  ExampleType get(size_t index) override {
    const size_t total = total_size();
    TG_CHECK(index < total, IndexError, "ConcatDataset: index ", index, " is out of range for a dataset of ", total,
             " samples");
    const size_t k = static_cast<size_t>(
        std::upper_bound(cumulative_sizes_.begin(), cumulative_sizes_.end(), index) - cumulative_sizes_.begin());
    return parts_[k]->get(k == 0 ? index : index - cumulative_sizes_[k - 1]);
  }
  /// The sum of the datasets' sizes.
  std::optional<size_t> size() const override { return total_size(); }
  /// Entry k: the sizes of datasets 0 .. k summed (PyTorch's cumulative_sizes).
  const std::vector<size_t>& cumulative_sizes() const noexcept { return cumulative_sizes_; }

 private:
  size_t total_size() const { return cumulative_sizes_.empty() ? 0 : cumulative_sizes_.back(); }   // 0 once moved from
  template <class D>
  void add(D d) {
    static_assert(std::is_same<typename D::ExampleType, SingleExample>::value,
                  "ConcatDataset<E>: every dataset's ExampleType must be E");
    const std::optional<size_t> n = d.size();
    TG_CHECK(n.has_value(), DataError, "ConcatDataset: dataset ", parts_.size(), " has no size");
    const size_t before = total_size();
    TG_CHECK(*n <= std::numeric_limits<size_t>::max() - before, DataError,
             "ConcatDataset: the datasets' sizes overflow size_t");
    parts_.push_back(std::make_unique<Held<D>>(std::move(d)));
    cumulative_sizes_.push_back(before + *n);
  }
  std::vector<std::unique_ptr<Part>> parts_;
  std::vector<size_t> cumulative_sizes_;
};

/// ConcatDataset(std::vector<D>) is a ConcatDataset of D's examples.
template <class D>
ConcatDataset(std::vector<D>) -> ConcatDataset<typename D::ExampleType>;
/// ConcatDataset(a, b, ...) is a ConcatDataset of a's examples.
template <class D, class... Ds>
ConcatDataset(D, Ds...) -> ConcatDataset<typename D::ExampleType>;

namespace detail {
/// The split sizes of n samples for lengths given as counts: each non-negative (DataError naming it)
/// and their sum n (DataError with PyTorch's "Sum of input lengths does not equal the length of the input
/// dataset!").
std::vector<size_t> split_sizes_from_counts(size_t n, const std::vector<int64_t>& counts);
/// The split sizes of n samples for lengths given as fractions (PyTorch 2.x): when the fractions sum
/// to 1 (math.isclose) and not above it, each fraction must lie in [0, 1] (DataError) and gets
/// floor(n * fraction) samples, and the remainder goes one by one to the first splits, round robin;
/// else DataError with PyTorch's "Sum of input lengths does not equal the length of the input dataset!".
std::vector<size_t> split_sizes_from_fractions(size_t n, const std::vector<double>& fractions);
/// A permutation of 0 .. n - 1 drawn from seed when given, else from one draw of tg's random stream.
std::vector<size_t> split_permutation(size_t n, std::optional<uint64_t> seed);
/// The split sizes of n samples for random_split's lengths: integer counts (split_sizes_from_counts;
/// an unsigned count past int64 cannot match and is refused as such) or double fractions
/// (split_sizes_from_fractions). Both random_splits (this one and data::random_split of
/// data/dataset_utils.h) read their lengths through it.
template <class Length>
std::vector<size_t> split_sizes(size_t n, const std::vector<Length>& lengths) {
  static_assert((std::is_integral<Length>::value && !std::is_same<Length, bool>::value) ||
                    std::is_same<Length, double>::value,
                "random_split: lengths are integer counts or double fractions (float fractions, rounded, would "
                "miss PyTorch's sum-to-1 test)");
  if constexpr (std::is_integral<Length>::value) {
    std::vector<int64_t> counts;
    counts.reserve(lengths.size());
    for (const Length l : lengths) {
      if constexpr (std::is_unsigned<Length>::value)   // past int64 it cannot be a sample count
        counts.push_back(static_cast<uint64_t>(l) > uint64_t(std::numeric_limits<int64_t>::max())
                             ? std::numeric_limits<int64_t>::max()
                             : static_cast<int64_t>(l));
      else
        counts.push_back(static_cast<int64_t>(l));
    }
    return split_sizes_from_counts(n, counts);
  } else {
    return split_sizes_from_fractions(n, lengths);
  }
}
}  // namespace detail

/// dataset split at random into non-overlapping Subsets of the given lengths (PyTorch's
/// torch.utils.data.random_split): integer lengths are counts summing to the dataset's size,
/// double lengths are fractions summing to 1 (see detail::split_sizes_from_fractions: 10
/// samples by {0.3, 0.3, 0.4} give 3, 3, 4; 11 by {0.5, 0.5} give 6, 5). Subset k holds the next
/// lengths[k] indices of one random permutation of the dataset; each Subset holds a copy of dataset.
/// The permutation is drawn from seed when given (PyTorch's generator argument), else from tg's
/// random stream (one draw, so tg::manual_seed fixes it); it is tensorgrad's shuffle
/// (data::detail::shuffle_in_place), not torch.randperm's numbers. Unlike PyTorch, the element type
/// decides what lengths are (integer {1} is a count, not the fraction 1) and a negative count is a
/// DataError. Lengths that do not fit the dataset, and an unsized dataset, are DataErrors too.
template <class D, class Length>
std::vector<Subset<D>> random_split(D dataset, const std::vector<Length>& lengths,
                                    std::optional<uint64_t> seed = std::nullopt) {
  const std::optional<size_t> size = dataset.size();
  TG_CHECK(size.has_value(), DataError, "random_split: the dataset has no size");
  const std::vector<size_t> sizes = detail::split_sizes(*size, lengths);
  const std::vector<size_t> order = detail::split_permutation(*size, seed);
  std::vector<Subset<D>> parts;
  parts.reserve(sizes.size());
  size_t offset = 0;
  for (const size_t n : sizes) {
    parts.emplace_back(dataset, std::vector<size_t>(order.begin() + static_cast<std::ptrdiff_t>(offset),
                                                    order.begin() + static_cast<std::ptrdiff_t>(offset + n)));
    offset += n;
  }
  return parts;
}

/// random_split with a braced list of lengths: random_split(dataset, {0.8, 0.2}) or {800, 200}.
template <class D, class Length>
std::vector<Subset<D>> random_split(D dataset, std::initializer_list<Length> lengths,
                                    std::optional<uint64_t> seed = std::nullopt) {
  return random_split(std::move(dataset), std::vector<Length>(lengths), seed);
}

}  // namespace datasets
}  // namespace data
}  // namespace tg
