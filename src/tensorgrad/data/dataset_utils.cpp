// data/dataset_utils.cpp: Subset, ConcatDataset, TransformDataset and random_split's subsets for
// tensorgrad's own data::Dataset (data/dataset_utils.h). The split sizes and the permutation are the
// libtorch-style random_split's (data/utils.cpp).
#include "tensorgrad/data/dataset_utils.h"

#include <algorithm>
#include <utility>

#include "tensorgrad/core/error.h"
#include "tensorgrad/data/internal.h"

namespace tg {
namespace data {

// ------------------------------------------------------------------------------------------------
// Subset

Subset::Subset(const Dataset& dataset, std::vector<int64_t> indices) : dataset_(&dataset), indices_(std::move(indices)) {
  const int64_t n = dataset.size();
  for (size_t k = 0; k < indices_.size(); ++k)
    TG_CHECK(indices_[k] >= 0 && indices_[k] < n, IndexError, "Subset: indices[", k, "] = ", indices_[k],
             " is out of range for a dataset of ", n, " samples");
}

Example<> Subset::get(int64_t index) const {
  detail::check_index(index, size(), "Subset::get");
  return dataset_->get(indices_[static_cast<size_t>(index)]);
}

Batch Subset::get_batch(const std::vector<int64_t>& indices) const {
  TG_CHECK(!indices.empty(), IndexError, "Subset::get_batch: indices is empty");
  std::vector<int64_t> mapped;
  mapped.reserve(indices.size());
  for (const int64_t index : indices) {
    detail::check_index(index, size(), "Subset::get_batch");
    mapped.push_back(indices_[static_cast<size_t>(index)]);
  }
  return dataset_->get_batch(mapped);
}

// ------------------------------------------------------------------------------------------------
// ConcatDataset

ConcatDataset::ConcatDataset(std::vector<std::reference_wrapper<const Dataset>> datasets)
    : datasets_(std::move(datasets)) {
  TG_CHECK(!datasets_.empty(), DataError, "ConcatDataset: datasets should not be an empty iterable");
  int64_t total = 0;
  for (size_t k = 0; k < datasets_.size(); ++k) {
    const int64_t n = datasets_[k].get().size();
    TG_CHECK(n >= 0, DataError, "ConcatDataset: dataset ", k, " reports a negative size ", n);
    TG_CHECK(!__builtin_add_overflow(total, n, &total), DataError,
             "ConcatDataset: the datasets' sizes overflow int64 at dataset ", k);
    cumulative_sizes_.push_back(total);
  }
}

Example<> ConcatDataset::get(int64_t index) const {
  detail::check_index(index, size(), "ConcatDataset::get");
  // the first dataset whose cumulative size exceeds index (PyTorch's bisect_right)
  const auto k = static_cast<size_t>(std::upper_bound(cumulative_sizes_.begin(), cumulative_sizes_.end(), index) -
                                     cumulative_sizes_.begin());
  return datasets_[k].get().get(k == 0 ? index : index - cumulative_sizes_[k - 1]);
}

// ------------------------------------------------------------------------------------------------
// TransformDataset

TransformDataset::TransformDataset(const Dataset& dataset, TransformFunction transform,
                                   TransformFunction target_transform)
    : dataset_(&dataset), transform_(std::move(transform)), target_transform_(std::move(target_transform)) {
  TG_CHECK(static_cast<bool>(transform_), Error, "TransformDataset: transform is empty");
}

Example<> TransformDataset::get(int64_t index) const {
  Example<> example = dataset_->get(index);
  example.data = transform_(std::move(example.data));
  if (target_transform_) example.target = target_transform_(std::move(example.target));
  return example;
}

// ------------------------------------------------------------------------------------------------
// random_split

namespace detail {

std::vector<Subset> split_subsets(const Dataset& dataset, const std::vector<size_t>& sizes,
                                  std::optional<uint64_t> seed) {
  const std::vector<size_t> order = datasets::detail::split_permutation(static_cast<size_t>(dataset.size()), seed);
  std::vector<Subset> parts;
  parts.reserve(sizes.size());
  size_t offset = 0;   // the sizes sum to order.size() (split_sizes checked it)
  for (const size_t n : sizes) {
    parts.emplace_back(dataset, std::vector<int64_t>(order.begin() + static_cast<std::ptrdiff_t>(offset),
                                                     order.begin() + static_cast<std::ptrdiff_t>(offset + n)));
    offset += n;
  }
  return parts;
}

}  // namespace detail

}  // namespace data
}  // namespace tg
