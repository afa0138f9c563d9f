// data/utils.cpp: the non-template parts of random_split (data/utils.h): the split sizes from counts or
// fractions, with PyTorch's rules and messages, and the permutation, tensorgrad's shuffle keyed from tg's
// random stream as RandomSampler's (data/samplers.cpp).
#include "tensorgrad/data/utils.h"

#include <cmath>
#include <limits>
#include <numeric>

#include "tensorgrad/data/sampler.h"
#include "tensorgrad/ops/creation.h"

namespace tg {
namespace data {
namespace datasets {
namespace detail {

namespace {

constexpr const char* kSumMismatch = "random_split: Sum of input lengths does not equal the length of the input dataset!";

/// The sum of xs with Neumaier's compensation, as Python's sum() of floats since 3.12, so that
/// fractions such as ten 0.1s sum to exactly 1 as they do for PyTorch.
double python_sum(const std::vector<double>& xs) {
  double s = 0, c = 0;
  for (const double x : xs) {
    const double t = s + x;
    c += std::fabs(s) >= std::fabs(x) ? (s - t) + x : (x - t) + s;
    s = t;
  }
  return s + c;
}

}  // namespace

std::vector<size_t> split_sizes_from_counts(size_t n, const std::vector<int64_t>& counts) {
  std::vector<size_t> sizes;
  sizes.reserve(counts.size());
  size_t sum = 0;
  bool fits = true;   // the running sum stays <= n (so it cannot overflow)
  for (size_t i = 0; i < counts.size(); ++i) {
    TG_CHECK(counts[i] >= 0, DataError, "random_split: length at index ", i, " is negative (", counts[i], ")");
    const auto c = static_cast<size_t>(counts[i]);
    if (fits && c <= n - sum) sum += c;
    else fits = false;
    sizes.push_back(c);
  }
  TG_CHECK(fits && sum == n, DataError, kSumMismatch, " (the dataset has ", n, " samples)");
  return sizes;
}

std::vector<size_t> split_sizes_from_fractions(size_t n, const std::vector<double>& fractions) {
  const double total = python_sum(fractions);
  // PyTorch: math.isclose(sum, 1) (relative tolerance 1e-9) and sum <= 1, else the lengths are taken
  // as counts, which fractions cannot match
  const bool close = std::fabs(total - 1.0) <= 1e-9 * std::max(std::fabs(total), 1.0);
  TG_CHECK(close && total <= 1.0, DataError, kSumMismatch, " (fractions must sum to 1; these sum to ",
           tg::detail::python_float(total), ")");
  std::vector<size_t> sizes;
  sizes.reserve(fractions.size());
  size_t sum = 0;
  for (size_t i = 0; i < fractions.size(); ++i) {
    const double f = fractions[i];
    TG_CHECK(f >= 0 && f <= 1, DataError, "random_split: Fraction at index ", i, " is not between 0 and 1");
    const auto k = static_cast<size_t>(std::floor(static_cast<double>(n) * f));
    sizes.push_back(k);
    sum += k;
  }
  // the floors sum to at most n up to rounding; PyTorch's check then refuses what is left over
  TG_CHECK(sum <= n, DataError, kSumMismatch, " (the dataset has ", n, " samples)");
  for (size_t i = 0; i < n - sum; ++i) ++sizes[i % sizes.size()];
  return sizes;
}

std::vector<size_t> split_permutation(size_t n, std::optional<uint64_t> seed) {
  TG_CHECK(n <= static_cast<size_t>(std::numeric_limits<int64_t>::max()), DataError, "random_split: a dataset of ", n,
           " samples is too large to index");
  std::vector<int64_t> order = data::detail::index_vector(static_cast<int64_t>(n), "random_split", "the permutation");
  std::iota(order.begin(), order.end(), int64_t(0));
  // Without a seed, one draw of the stream is the key, as RandomSampler's: manual_seed fixes it.
  const uint64_t key = seed ? *seed
                            : static_cast<uint64_t>(randint(0, std::numeric_limits<int64_t>::max(), {1}).item<int64_t>());
  data::detail::shuffle_in_place(order, data::detail::splitmix64(key));
  return std::vector<size_t>(order.begin(), order.end());
}

}  // namespace detail
}  // namespace datasets
}  // namespace data
}  // namespace tg
