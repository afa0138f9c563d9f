// data/samplers.cpp: libtorch's samplers (data/samplers.h). The permutations use the shuffle that
// tensorgrad's own DataLoader and DistributedSampler use (data/sampler.cpp); RandomSampler keys it
// from tg's random stream, so that manual_seed fixes it. WeightedRandomSampler's checks and its draw
// (tg::multinomial, from the same stream) are those of the DataLoader's sampler (data/sampler.cpp).
#include "tensorgrad/data/samplers.h"

#include <algorithm>
#include <limits>
#include <numeric>

#include "tensorgrad/core/error.h"
#include "tensorgrad/data/sampler.h"
#include "tensorgrad/ops/creation.h"
#include "tensorgrad/ops/ops.h"

namespace tg {
namespace data {
namespace samplers {

namespace {

/// The next min(batch_size, end - index) entries of indices from index, advancing index.
std::optional<std::vector<size_t>> next_block(const std::vector<int64_t>& indices, size_t& index, size_t end,
                                              size_t batch_size) {
  if (index >= end) return std::nullopt;
  const size_t n = std::min(batch_size, end - index);
  std::vector<size_t> out(indices.begin() + static_cast<std::ptrdiff_t>(index),
                          indices.begin() + static_cast<std::ptrdiff_t>(index + n));
  index += n;
  return out;
}

/// 0, 1, ..., n - 1; OutOfMemoryError (not std::bad_alloc) when n indices cannot be held.
std::vector<int64_t> iota_indices(size_t n, const char* who) {
  TG_CHECK(n <= static_cast<size_t>(std::numeric_limits<int64_t>::max()), DataError, who, ": a dataset of ", n,
           " samples is too large to index");
  std::vector<int64_t> order = data::detail::index_vector(static_cast<int64_t>(n), who, "the sample order");
  std::iota(order.begin(), order.end(), int64_t(0));
  return order;
}

void check_replicas(size_t num_replicas, size_t rank, const char* who) {
  TG_CHECK(num_replicas >= 1, Error, who, ": num_replicas must be positive, got 0");
  TG_CHECK(rank < num_replicas, Error, who, ": Invalid rank ", rank, ", rank should be in the interval [0, ",
           num_replicas - 1, "]");
}

}  // namespace

// ------------------------------------------------------------------------------------------------
// SequentialSampler

SequentialSampler::SequentialSampler(size_t size) : size_(size) {}

void SequentialSampler::reset(std::optional<size_t> new_size) {
  if (new_size) size_ = *new_size;
  index_ = 0;
}

std::optional<std::vector<size_t>> SequentialSampler::next(size_t batch_size) {
  if (index_ >= size_) return std::nullopt;
  const size_t n = std::min(batch_size, size_ - index_);
  std::vector<size_t> out(n);
  std::iota(out.begin(), out.end(), index_);
  index_ += n;
  return out;
}

// ------------------------------------------------------------------------------------------------
// RandomSampler

RandomSampler::RandomSampler(int64_t size, DType index_dtype) {
  TG_CHECK(size >= 0, Error, "RandomSampler: n must be non-negative, got ", size);
  TG_CHECK(index_dtype == kInt64 || index_dtype == kInt32, DTypeError,
           "RandomSampler: index_dtype must be int64 or int32, got ", dtype_name(index_dtype));
  reset(static_cast<size_t>(size));
}

void RandomSampler::reset(std::optional<size_t> new_size) {
  indices_ = iota_indices(new_size.value_or(indices_.size()), "RandomSampler");
  // One draw of the stream as the key: manual_seed(s) gives the same orders every run.
  const int64_t key = randint(0, std::numeric_limits<int64_t>::max(), {1}).item<int64_t>();
  data::detail::shuffle_in_place(indices_, data::detail::splitmix64(static_cast<uint64_t>(key)));
  index_ = 0;
}

std::optional<std::vector<size_t>> RandomSampler::next(size_t batch_size) {
  return next_block(indices_, index_, indices_.size(), batch_size);
}

// ------------------------------------------------------------------------------------------------
// WeightedRandomSampler

WeightedRandomSampler::WeightedRandomSampler(const Tensor& weights, int64_t num_samples, bool replacement)
    : num_samples_(num_samples), replacement_(replacement) {
  weights_ = data::detail::checked_sampling_weights(weights, num_samples, nonzero_);
  check_num_samples(num_samples_);
  reset();
}

WeightedRandomSampler::WeightedRandomSampler(const std::vector<double>& weights, int64_t num_samples, bool replacement)
    : WeightedRandomSampler(from_vector(weights), num_samples, replacement) {}

void WeightedRandomSampler::check_num_samples(int64_t num_samples) const {
  data::detail::check_weighted_num_samples(num_samples, weights_.size(0), nonzero_, replacement_);
}

void WeightedRandomSampler::reset(std::optional<size_t> new_size) {
  if (new_size) {
    TG_CHECK(*new_size <= static_cast<size_t>(std::numeric_limits<int64_t>::max()), Error,
             "WeightedRandomSampler: num_samples ", *new_size, " is too large");
    check_num_samples(static_cast<int64_t>(*new_size));   // a refused size leaves the sampler as it was
    num_samples_ = static_cast<int64_t>(*new_size);
  }
  indices_ = data::detail::weighted_draw(weights_, num_samples_, replacement_);
  index_ = 0;
}

std::optional<std::vector<size_t>> WeightedRandomSampler::next(size_t batch_size) {
  return next_block(indices_, index_, indices_.size(), batch_size);
}

// ------------------------------------------------------------------------------------------------
// DistributedRandomSampler

DistributedRandomSampler::DistributedRandomSampler(size_t size, size_t num_replicas, size_t rank,
                                                   bool allow_duplicates)
    : DistributedSampler(size, num_replicas, rank, allow_duplicates) {
  check_replicas(num_replicas, rank, "DistributedRandomSampler");
  reset(size_);
}

void DistributedRandomSampler::populate_indices() {
  const size_t local = local_sample_count();
  const size_t count = num_replicas_ == 1 ? size_ : local * num_replicas_;
  all_indices_ = iota_indices(count, "DistributedRandomSampler");
  // libtorch pads with i - size, which runs past the dataset when the padding is longer than it
  // (more replicas than samples); modulo size repeats the order instead.
  for (size_t i = size_; i < count; ++i) all_indices_[i] = static_cast<int64_t>((i - size_) % size_);
  begin_index_ = rank_ * local;
  end_index_ = begin_index_ + local;
  sample_index_ = begin_index_;
}

void DistributedRandomSampler::reset(std::optional<size_t> new_size) {
  size_ = new_size.value_or(size_);
  populate_indices();
  // keyed by the epoch only: the same order on every rank
  data::detail::shuffle_in_place(all_indices_, data::detail::splitmix64(static_cast<uint64_t>(epoch_)));
  sample_index_ = begin_index_;
}

std::optional<std::vector<size_t>> DistributedRandomSampler::next(size_t batch_size) {
  return next_block(all_indices_, sample_index_, end_index_, batch_size);
}

// ------------------------------------------------------------------------------------------------
// DistributedSequentialSampler

DistributedSequentialSampler::DistributedSequentialSampler(size_t size, size_t num_replicas, size_t rank,
                                                           bool allow_duplicates)
    : DistributedSampler(size, num_replicas, rank, allow_duplicates) {
  check_replicas(num_replicas, rank, "DistributedSequentialSampler");
  populate_indices();
}

void DistributedSequentialSampler::populate_indices() {
  begin_index_ = rank_ * local_sample_count();
  end_index_ = begin_index_ + local_sample_count();
  sample_index_ = begin_index_;
}

void DistributedSequentialSampler::reset(std::optional<size_t> new_size) {
  const size_t size = new_size.value_or(size_);
  if (size != size_) {
    size_ = size;
    populate_indices();
  } else {
    sample_index_ = begin_index_;
  }
}

std::optional<std::vector<size_t>> DistributedSequentialSampler::next(size_t batch_size) {
  if (sample_index_ >= end_index_) return std::nullopt;
  const size_t end = std::min(sample_index_ + batch_size, end_index_);
  std::vector<size_t> out(end - sample_index_);
  std::iota(out.begin(), out.end(), sample_index_);
  if (end > size_)   // the padding repeats the first indices
    for (size_t& i : out) i %= size_;
  sample_index_ = end;
  return out;
}

}  // namespace samplers
}  // namespace data
}  // namespace tg
