// tests/test_sampling.cpp: multinomial, bernoulli (ops/random.cpp), normal and randperm (ops/creation.cpp)
// checked statistically with fixed seeds: each frequency within 5 standard deviations of its expectation
// (sqrt(N p (1 - p)) for a count of N draws; a false alarm has probability below 1e-6 per check, and
// the seeds make every run the same), the laws PyTorch documents (no category of probability 0, no
// index twice without replacement, permutations), repeatability under manual_seed, and PyTorch's errors.
#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <vector>

#include "testing.h"

using tg::Tensor;

namespace {

/// |count - N p| <= 5 sqrt(N p (1 - p)), the 5-sigma band of a binomial count.
void check_count(int64_t count, int64_t n, double p) {
  const double expected = static_cast<double>(n) * p, sigma = std::sqrt(static_cast<double>(n) * p * (1 - p));
  CHECK_MESSAGE(std::fabs(static_cast<double>(count) - expected) <= 5 * sigma + 1e-9,
                "count " << count << " of " << n << " draws with p " << p << ": expected " << expected << " +- 5 x " << sigma);
}

std::vector<int64_t> histogram(const std::vector<int64_t>& samples, int64_t categories) {
  std::vector<int64_t> h(static_cast<std::size_t>(categories), 0);
  for (int64_t s : samples) {
    REQUIRE(s >= 0);
    REQUIRE(s < categories);
    ++h[static_cast<std::size_t>(s)];
  }
  return h;
}

}  // namespace

TEST_CASE("multinomial with replacement: frequencies proportional to the weights, never a weight of 0") {
  tg::manual_seed(1);
  const std::vector<double> w{1, 2, 0, 3, 4};   // unnormalized, a zero in the middle
  const Tensor probs = tg::from_vector(w);
  const int64_t n = 20000;
  const Tensor s = tg::multinomial(probs, n, true);
  CHECK(s.dtype() == tg::kInt64);
  CHECK(s.shape() == tg::Shape{n});
  const std::vector<int64_t> h = histogram(s.to_vector<int64_t>(), 5);
  CHECK(h[2] == 0);
  for (std::size_t k = 0; k < w.size(); ++k) check_count(h[k], n, w[k] / 10.0);
  // rows of a 2-D input are separate distributions; float64 and a trailing zero category
  const Tensor rows = tg::from_vector(std::vector<double>{0.7, 0.1, 0.2, 0.0, 0.0, 0.5, 0.5, 0.0}, {2, 4}).to(tg::kFloat64);
  const Tensor r = tg::multinomial(rows, n, true);
  CHECK(r.shape() == tg::Shape{2, n});
  const std::vector<int64_t> all = r.to_vector<int64_t>();
  const std::vector<int64_t> h0 = histogram(std::vector<int64_t>(all.begin(), all.begin() + n), 4);
  const std::vector<int64_t> h1 = histogram(std::vector<int64_t>(all.begin() + n, all.end()), 4);
  check_count(h0[0], n, 0.7);
  check_count(h0[1], n, 0.1);
  CHECK(h0[3] == 0);
  CHECK(h1[0] == 0);
  CHECK(h1[3] == 0);
  check_count(h1[1], n, 0.5);
  // one category: always it
  CHECK(tg::multinomial(tg::ones({1}), 5, true).to_vector<int64_t>() == std::vector<int64_t>(5, 0));
}

TEST_CASE("multinomial with replacement: each draw inverts its row's CDF at the generator's uniform") {
  // Rows of 100003 weights (not a multiple of the CPU's blocks of 8), some zero, one zero but for
  // its last weight, one with a few large weights; float32 and float64. Each draw must be the first
  // category whose float64 running sum over the total is above the uniform the same seed gives
  // (draws at a rounding boundary of the running sums have probability about 1e-12 here).
  const int64_t C = 100003, S = 37;
  std::vector<double> w(static_cast<std::size_t>(3 * C));
  for (int64_t k = 0; k < C; ++k) {
    const auto i = static_cast<std::size_t>(k);
    w[i] = k % 7 == 3 ? 0.0 : 0.5 + std::sin(0.37 * static_cast<double>(k)) * 0.4;
    w[static_cast<std::size_t>(C) + i] = k == C - 1 ? 2.5 : 0.0;
    w[static_cast<std::size_t>(2 * C) + i] = k % 9973 == 5 ? 1e4 : 1e-3;
  }
  for (tg::DType dt : {tg::kFloat32, tg::kFloat64}) {
    CAPTURE(tg::dtype_name(dt));
    const Tensor p = tg::from_vector(w, {3, C}).to(dt);
    tg::manual_seed(123);
    const std::vector<int64_t> got = tg::multinomial(p, S, true).to_vector<int64_t>();
    tg::manual_seed(123);
    const Tensor u = tg::rand({3, S}, tg::TensorOptions().dtype(tg::kFloat64));
    const Tensor run = tg::cumsum(p.to(tg::kFloat64), 1);
    const Tensor cdf = run / tg::narrow(run, 1, C - 1, 1);
    const Tensor want = tg::sum(tg::unsqueeze(cdf, 1) <= tg::unsqueeze(u, 2), {2});
    CHECK(got == want.to_vector<int64_t>());
    for (int64_t j = 0; j < S; ++j) CHECK(got[static_cast<std::size_t>(S + j)] == C - 1);
  }
}

TEST_CASE("multinomial without replacement: distinct indices, the first draw proportional to the weights") {
  tg::manual_seed(2);
  const int64_t rows = 6000;
  // each row the same distribution (0.5, 0.3, 0.2, 0): the first pick is k with p_k, the pair (0, 1)
  // has probability 0.5 * 0.3 / 0.5 = 0.3, and all three nonzero categories come before the zero one
  const Tensor p = tg::from_vector(std::vector<double>{0.5, 0.3, 0.2, 0.0}).reshape({1, 4}).expand({rows, 4}).contiguous();
  const Tensor s = tg::multinomial(p, 3);
  CHECK(s.shape() == tg::Shape{rows, 3});
  const std::vector<int64_t> v = s.to_vector<int64_t>();
  std::vector<int64_t> first(4, 0);
  int64_t pair01 = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t a = v[r * 3], b = v[r * 3 + 1], c = v[r * 3 + 2];
    CHECK((a != b && b != c && a != c));
    CHECK((a != 3 && b != 3 && c != 3));
    ++first[static_cast<std::size_t>(a)];
    pair01 += a == 0 && b == 1;
  }
  check_count(first[0], rows, 0.5);
  check_count(first[1], rows, 0.3);
  check_count(first[2], rows, 0.2);
  check_count(pair01, rows, 0.3);
  // num_samples = C: a permutation of the categories
  const std::vector<int64_t> perm = tg::multinomial(tg::rand({50}) + 0.1, 50).to_vector<int64_t>();
  CHECK(std::set<int64_t>(perm.begin(), perm.end()).size() == 50);
}

TEST_CASE("multinomial and bernoulli repeat under manual_seed and differ across seeds") {
  const Tensor p = tg::rand({3, 40}) + 0.05;
  tg::manual_seed(7);
  const Tensor a = tg::multinomial(p, 30, true), b = tg::multinomial(p, 10), c = tg::bernoulli(p * 0.5);
  tg::manual_seed(7);
  CHECK(tg::equal(tg::multinomial(p, 30, true), a));
  CHECK(tg::equal(tg::multinomial(p, 10), b));
  CHECK(tg::equal(tg::bernoulli(p * 0.5), c));
  tg::manual_seed(8);
  CHECK_FALSE(tg::equal(tg::multinomial(p, 30, true), a));
}

TEST_CASE("multinomial: PyTorch's errors") {
  const Tensor p = tg::from_vector(std::vector<double>{0.2, 0.3, 0.5});
  TG_CHECK_THROWS(tg::multinomial(p, 4), tg::Error, "multinomial: cannot sample n_sample (4) > prob_dist.size(-1) (3) samples without replacement");
  TG_CHECK_THROWS(tg::multinomial(p, 0, true), tg::Error, "cannot sample n_sample <= 0 samples");
  TG_CHECK_THROWS(tg::multinomial(tg::from_vector(std::vector<double>{0.2, -0.1, 0.5}), 1), tg::Error,
                  "probability tensor contains either `inf`, `nan` or element < 0");
  TG_CHECK_THROWS(tg::multinomial(tg::from_vector(std::vector<double>{0.2, std::nan(""), 0.5}), 1), tg::Error, "`nan`");
  TG_CHECK_THROWS(tg::multinomial(tg::from_vector(std::vector<double>{0.2, INFINITY}), 1), tg::Error, "`inf`");
  TG_CHECK_THROWS(tg::multinomial(tg::from_vector(std::vector<double>{0.2, 0.8, 0, 0}, {2, 2}), 1, true), tg::Error,
                  "invalid multinomial distribution (sum of probabilities <= 0)");
  TG_CHECK_THROWS(tg::multinomial(tg::ones({2, 2, 2}), 1), tg::ShapeError, "prob_dist must be 1 or 2 dim, got shape [2, 2, 2]");
  TG_CHECK_THROWS(tg::multinomial(tg::ones({3}, tg::kInt64), 1), tg::DTypeError, "only supports floating-point dtypes");
  CHECK(tg::multinomial(tg::ones({0, 3}), 2).shape() == tg::Shape{0, 2});
}

TEST_CASE("bernoulli: frequencies p, exact at 0 and 1, p's dtype, and PyTorch's errors") {
  tg::manual_seed(3);
  const int64_t n = 20000;
  const std::vector<double> ps{0.0, 0.25, 0.5, 0.9, 1.0};
  const Tensor p = tg::from_vector(ps).to(tg::kFloat64).reshape({1, 5}).expand({n, 5});
  const Tensor b = tg::bernoulli(p);
  CHECK(b.dtype() == tg::kFloat64);
  const std::vector<double> sums = tg::sum(b, 0).to_vector<double>();
  CHECK(sums[0] == 0.0);
  CHECK(sums[4] == static_cast<double>(n));
  for (std::size_t k = 1; k < 4; ++k) check_count(static_cast<int64_t>(sums[k]), n, ps[k]);
  const std::vector<double> values = b.to_vector<double>();
  CHECK(std::all_of(values.begin(), values.end(), [](double v) { return v == 0.0 || v == 1.0; }));
  const Tensor c = tg::bernoulli(tg::zeros({n}, tg::kFloat32), 0.3);
  CHECK(c.dtype() == tg::kFloat32);
  check_count(static_cast<int64_t>(tg::sum(c).item()), n, 0.3);
  CHECK_FALSE(tg::bernoulli(testing::randn64({3}, 1).sigmoid()).requires_grad());
  TG_CHECK_THROWS(tg::bernoulli(tg::from_vector(std::vector<double>{0.5, 1.5})), tg::Error,
                  "bernoulli: expects all probabilities p to be in [0, 1]");
  TG_CHECK_THROWS(tg::bernoulli(tg::zeros({2}), -0.1), tg::Error, "bernoulli: expects p to be in [0, 1], but got p=-0.1");
  TG_CHECK_THROWS(tg::bernoulli(tg::zeros({2}, tg::kInt64)), tg::DTypeError, "bernoulli");
}

TEST_CASE("normal: mean and standard deviation within 5 standard errors, and PyTorch's errors") {
  tg::manual_seed(4);
  const int64_t n = 100000;
  const Tensor x = tg::normal(2.0, 3.0, {n}, tg::kFloat64);
  CHECK(x.shape() == tg::Shape{n});
  const double mean = tg::mean(x).item(), sd = std::sqrt(tg::var(x).item());
  CHECK(std::fabs(mean - 2.0) <= 5 * 3.0 / std::sqrt(double(n)));
  CHECK(std::fabs(sd - 3.0) <= 5 * 3.0 / std::sqrt(2.0 * double(n)));   // the standard error of s is about sigma / sqrt(2n)
  CHECK(tg::normal(0, 1, {2, 3}).dtype() == tg::kFloat32);
  CHECK(tg::equal(tg::normal(5.0, 0.0, {4}), tg::full({4}, 5.0)));
  tg::manual_seed(9);
  const Tensor a = tg::normal(1, 2, {5});
  tg::manual_seed(9);
  CHECK(tg::equal(tg::normal(1, 2, {5}), a));
  TG_CHECK_THROWS(tg::normal(0, -1, {3}), tg::Error, "normal: expects std >= 0.0, but found std -1");
  TG_CHECK_THROWS(tg::normal(0, 1, {3}, tg::kInt64), tg::DTypeError, "normal: expected a floating point dtype");
}

TEST_CASE("randperm: a permutation, int64, each position uniform, and PyTorch's errors") {
  tg::manual_seed(5);
  const Tensor p = tg::randperm(1000);
  CHECK(p.dtype() == tg::kInt64);
  std::vector<int64_t> v = p.to_vector<int64_t>();
  CHECK_FALSE(std::is_sorted(v.begin(), v.end()));
  std::sort(v.begin(), v.end());
  for (int64_t i = 0; i < 1000; ++i) CHECK(v[static_cast<std::size_t>(i)] == i);
  // where 0 lands in 4000 permutations of 5: each position with probability 1/5
  std::vector<int64_t> where(5, 0);
  for (int trial = 0; trial < 4000; ++trial) {
    const std::vector<int64_t> q = tg::randperm(5).to_vector<int64_t>();
    ++where[static_cast<std::size_t>(std::find(q.begin(), q.end(), 0) - q.begin())];
  }
  for (int64_t c : where) check_count(c, 4000, 0.2);
  CHECK(tg::randperm(0).shape() == tg::Shape{0});
  CHECK(tg::randperm(7, tg::kInt32).dtype() == tg::kInt32);
  tg::manual_seed(6);
  const Tensor a = tg::randperm(50);
  tg::manual_seed(6);
  CHECK(tg::equal(tg::randperm(50), a));
  TG_CHECK_THROWS(tg::randperm(-1), tg::Error, "randperm: n must be non-negative, got -1");
  TG_CHECK_THROWS(tg::randperm(300, tg::kUInt8), tg::Error, "randperm: n (300) is too large for the result dtype uint8");
}
