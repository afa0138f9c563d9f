// data/sampler.cpp: DistributedSampler's padding, interleaving and per-epoch shuffle, the seeded
// Fisher-Yates shuffle DataLoader uses too, and WeightedRandomSampler with the weight checks and draw
// that libtorch-style samplers::WeightedRandomSampler (data/samplers.cpp) shares. The loader's side is
// data/loader.cpp.
#include "tensorgrad/data/sampler.h"

#include <unistd.h>

#include <cmath>
#include <exception>
#include <numeric>
#include <random>
#include <string>
#include <utility>

#include "tensorgrad/core/error.h"
#include "tensorgrad/ops/creation.h"
#include "tensorgrad/ops/ops.h"

namespace tg {
namespace data {

namespace detail {

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

namespace {
/// Uniform in [0, m), m > 0, without modulo bias; mt19937_64's output is fixed by the standard, so the
/// order is the same with every standard library (std::shuffle's is not).
uint64_t uniform_below(std::mt19937_64& gen, uint64_t m) {
  const uint64_t threshold = (0 - m) % m;   // 2^64 mod m: reject the incomplete last block
  for (;;) {
    const uint64_t r = gen();
    if (r >= threshold) return r % m;
  }
}
}  // namespace

void shuffle_in_place(std::vector<int64_t>& order, uint64_t key) {
  std::mt19937_64 gen(key);
  for (std::size_t i = order.size(); i > 1; --i)   // Fisher-Yates
    std::swap(order[i - 1], order[uniform_below(gen, i)]);
}

std::vector<int64_t> index_vector(int64_t n, const char* who, const char* what) {
  TG_CHECK(n >= 0, DataError, who, ": ", what, " cannot have a negative length ", n);
  const auto oom = [&] {
    return OutOfMemoryError(tg::detail::cat(who, ": cannot allocate ", what, " of ", n, " samples (", n,
                                            " x 8 bytes); is the dataset's size() right?"));
  };
  // In double: n * 8 overflows int64 for n above 2^60, and a double's rounding cannot matter at
  // sizes this far from the limit.
  const long pages = ::sysconf(_SC_PHYS_PAGES), page_size = ::sysconf(_SC_PAGE_SIZE);
  if (pages > 0 && page_size > 0 &&
      static_cast<double>(n) * sizeof(int64_t) > static_cast<double>(pages) * static_cast<double>(page_size))
    throw oom();
  try {
    return std::vector<int64_t>(static_cast<std::size_t>(n));
  } catch (const std::exception&) {   // std::bad_alloc, or std::length_error beyond max_size()
    throw oom();
  }
}

namespace {
/// shape as a Python tuple, as PyTorch's message prints it: (1, 2), (3,), ().
std::string python_tuple(const Shape& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}
}  // namespace

Tensor checked_sampling_weights(const Tensor& weights, int64_t num_samples, int64_t& nonzero) {
  // PyTorch's order: num_samples, the shape, then torch.multinomial's checks of the values
  TG_CHECK(num_samples > 0, DataError, "WeightedRandomSampler: num_samples should be a positive integer value, but "
           "got num_samples=", num_samples);
  TG_CHECK(weights.defined(), DataError, "WeightedRandomSampler: weights is an undefined tensor");
  TG_CHECK(weights.dim() == 1, ShapeError, "WeightedRandomSampler: weights should be a 1d sequence but given weights "
           "have shape ", python_tuple(weights.shape()));
  const std::vector<double> w = weights.detach().to(kFloat64).to_vector<double>();
  double sum = 0;
  nonzero = 0;
  for (const double x : w) {
    TG_CHECK(std::isfinite(x), DataError, "WeightedRandomSampler: invalid multinomial distribution (encountering "
             "probability entry = infinity or NaN)");
    TG_CHECK(x >= 0, DataError, "WeightedRandomSampler: invalid multinomial distribution (encountering probability "
             "entry < 0)");
    sum += x;
    if (x > 0) ++nonzero;
  }
  TG_CHECK(sum > 0 && std::isfinite(sum), DataError, "WeightedRandomSampler: invalid multinomial distribution (sum "
           "of probabilities <= 0)", sum > 0 ? " (the weights' sum overflows)" : "");
  return from_vector(w);
}

void check_weighted_num_samples(int64_t num_samples, int64_t num_weights, int64_t nonzero, bool replacement) {
  TG_CHECK(num_samples > 0, DataError, "WeightedRandomSampler: num_samples should be a positive integer value, but "
           "got num_samples=", num_samples);
  if (replacement) return;
  TG_CHECK(num_samples <= num_weights, DataError, "WeightedRandomSampler: cannot sample n_sample > "
           "prob_dist.size(-1) samples without replacement (num_samples ", num_samples, ", ", num_weights,
           " weights)");
  TG_CHECK(num_samples <= nonzero, DataError, "WeightedRandomSampler: without replacement num_samples (", num_samples,
           ") must not exceed the number of nonzero weights (", nonzero, ")");
}

std::vector<int64_t> weighted_draw(const Tensor& weights, int64_t num_samples, bool replacement) {
  return multinomial(weights, num_samples, replacement).to_vector<int64_t>();
}

}  // namespace detail

WeightedRandomSampler::WeightedRandomSampler(const Tensor& weights, int64_t num_samples, bool replacement)
    : num_samples_(num_samples), replacement_(replacement) {
  weights_ = detail::checked_sampling_weights(weights, num_samples, nonzero_);
  detail::check_weighted_num_samples(num_samples_, weights_.size(0), nonzero_, replacement_);
}

WeightedRandomSampler::WeightedRandomSampler(const std::vector<double>& weights, int64_t num_samples, bool replacement)
    : WeightedRandomSampler(from_vector(weights), num_samples, replacement) {}

std::vector<int64_t> WeightedRandomSampler::indices() const {
  return detail::weighted_draw(weights_, num_samples_, replacement_);
}

DistributedSampler::DistributedSampler(int64_t dataset_size, int64_t num_replicas, int64_t rank, bool shuffle,
                                       uint64_t seed, bool drop_last)
    : dataset_size_(dataset_size), num_replicas_(num_replicas), rank_(rank), shuffle_(shuffle), seed_(seed) {
  TG_CHECK(dataset_size >= 0, Error, "DistributedSampler: the dataset size must be non-negative, got ", dataset_size);
  TG_CHECK(num_replicas >= 1, Error, "DistributedSampler: num_replicas must be positive, got ", num_replicas);
  TG_CHECK(rank >= 0 && rank < num_replicas, Error, "DistributedSampler: Invalid rank ", rank,
           ", rank should be in the interval [0, ", num_replicas - 1, "]");
  const int64_t n = dataset_size, w = num_replicas;
  if (drop_last && n % w != 0)
    num_samples_ = n < w ? 0 : (n - w + w - 1) / w;   // ceil((n - w) / w); PyTorch's math.ceil gives 0 below 0
  else
    num_samples_ = n / w + (n % w != 0 ? 1 : 0);      // ceil(n / w)
}

void DistributedSampler::set_epoch(int64_t epoch) {
  TG_CHECK(epoch >= 0, Error, "DistributedSampler: set_epoch needs a non-negative epoch, got ", epoch);
  epoch_ = epoch;
}

int64_t DistributedSampler::total_size() const {
  int64_t total = 0;
  TG_CHECK(!__builtin_mul_overflow(num_samples_, num_replicas_, &total), DataError,
           "DistributedSampler: total_size = num_samples (", num_samples_, ") * num_replicas (", num_replicas_,
           ") does not fit in int64 (a dataset of ", dataset_size_, " samples)");
  return total;
}

std::vector<int64_t> DistributedSampler::indices() const {
  // Rank r takes positions r, r + w, r + 2w, ... of the padded order, and position p of the padded
  // order is order[p mod n]: PyTorch's indices += indices[:padding], repeated as often as needed when
  // the padding is longer than the dataset (with drop_last every p is below n). The position is kept
  // modulo n as it advances, in uint64_t (q + step < 2n < 2^64), so no product r + i w is formed: for
  // a dataset near int64's limit it would overflow.
  std::vector<int64_t> order;
  if (shuffle_) {   // the whole permutation first: it is the larger allocation
    order = detail::index_vector(dataset_size_, "DistributedSampler", "the sample order");
    std::iota(order.begin(), order.end(), int64_t(0));
    // seed + epoch as PyTorch (g.manual_seed(seed + epoch)); wraps rather than overflows
    detail::shuffle_in_place(order, detail::splitmix64(seed_ + static_cast<uint64_t>(epoch_)));
  }
  std::vector<int64_t> mine = detail::index_vector(num_samples_, "DistributedSampler", "this rank's indices");
  if (mine.empty()) return mine;   // otherwise n > 0
  const uint64_t n = static_cast<uint64_t>(dataset_size_), step = static_cast<uint64_t>(num_replicas_) % n;
  uint64_t q = static_cast<uint64_t>(rank_) % n;
  for (int64_t& v : mine) {
    v = shuffle_ ? order[static_cast<std::size_t>(q)] : static_cast<int64_t>(q);   // without shuffle order[q] = q
    q += step;
    if (q >= n) q -= n;
  }
  return mine;
}

}  // namespace data
}  // namespace tg
