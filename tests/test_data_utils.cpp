// tests/test_data_utils.cpp: PyTorch's dataset utilities for tensorgrad's own data::Dataset and
// DataLoader (Subset, ConcatDataset, random_split, TransformDataset, WeightedRandomSampler), and the
// image transforms of data/transforms.h: deterministic ones against values computed here by formula,
// random ones for shape, reproducibility from tg::manual_seed, validity of every outcome and
// frequencies with bounds many standard deviations wide. The libtorch-style utilities are tested in
// tests/test_data.cpp.
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "testing.h"

using tg::Tensor;
namespace td = tg::data;
namespace T = tg::data::transforms;

namespace {

/// n samples: data (n, 2) with row i = {100 + offset + i, -(offset + i)}, targets (n) int64 = offset + i.
td::TensorDataset numbered(int64_t n, int64_t offset) {
  std::vector<float> data;
  std::vector<int64_t> targets;
  for (int64_t i = 0; i < n; ++i) {
    data.push_back(static_cast<float>(100 + offset + i));
    data.push_back(static_cast<float>(-(offset + i)));
    targets.push_back(offset + i);
  }
  return td::TensorDataset(tg::from_vector(data, {n, 2}), tg::from_vector(targets, {n}));
}

int64_t target_of(const td::Example<>& e) { return e.target.item<int64_t>(); }

/// x (C, H, W) float32 with distinct values 1 + index, as a host vector and a tensor.
Tensor distinct_image(int64_t c, int64_t h, int64_t w) {
  return (tg::arange(c * h * w).to(tg::kFloat32) + 1.0).reshape({c, h, w});
}

/// Element (c, i, j) of a contiguous (C, H, W) host copy.
float at(const std::vector<float>& v, int64_t H, int64_t W, int64_t c, int64_t i, int64_t j) {
  return v[static_cast<size_t>((c * H + i) * W + j)];
}

}  // namespace

// ------------------------------------------------------------------------------------------------
// Subset, ConcatDataset, random_split, TransformDataset

TEST_CASE("data utils (DataLoader): Subset reads its indices of a data::Dataset and refuses bad ones") {
  const td::TensorDataset base = numbered(10, 0);
  const td::Subset sub(base, {7, 2, 2, 9});
  CHECK(sub.size() == 4);
  CHECK(&sub.dataset() == &base);
  CHECK(target_of(sub.get(0)) == 7);
  CHECK(target_of(sub.get(2)) == 2);
  CHECK(sub.get(3).data.to_vector<float>() == std::vector<float>{109, -9});
  const td::Batch b = sub.get_batch({1, 3, 0});   // through TensorDataset's own get_batch
  CHECK(b.target.to_vector<int64_t>() == std::vector<int64_t>{2, 9, 7});
  CHECK(b.data.to_vector<float>() == std::vector<float>{102, -2, 109, -9, 107, -7});
  TG_CHECK_THROWS(td::Subset(base, {3, 10}), tg::IndexError, "indices[1] = 10 is out of range for a dataset of 10");
  TG_CHECK_THROWS(td::Subset(base, {-1}), tg::IndexError, "indices[0] = -1");
  TG_CHECK_THROWS(sub.get(4), tg::IndexError, "Subset::get: index 4 is out of range for a dataset of 4 samples");
  TG_CHECK_THROWS(sub.get(-1), tg::IndexError, "index -1 is out of range");
  TG_CHECK_THROWS(sub.get_batch({0, 4}), tg::IndexError, "Subset::get_batch: index 4");
  const td::Subset empty(base, {});
  CHECK(empty.size() == 0);
}

TEST_CASE("data utils (DataLoader): ConcatDataset chains datasets of different types by cumulative sizes") {
  const td::TensorDataset a = numbered(3, 0), b = numbered(5, 10), none = numbered(1, 50);
  const td::Subset sub(b, {4, 0});
  const td::Subset empty(none, {});
  const td::ConcatDataset both({a, empty, sub});
  CHECK(both.size() == 5);
  CHECK(both.cumulative_sizes() == std::vector<int64_t>{3, 3, 5});
  std::vector<int64_t> seen;
  for (int64_t i = 0; i < both.size(); ++i) seen.push_back(target_of(both.get(i)));
  CHECK(seen == std::vector<int64_t>{0, 1, 2, 14, 10});
  CHECK(both.get(3).data.to_vector<float>() == std::vector<float>{114, -14});
  const td::Batch batch = both.get_batch({4, 0, 3});
  CHECK(batch.target.to_vector<int64_t>() == std::vector<int64_t>{10, 0, 14});
  TG_CHECK_THROWS(both.get(5), tg::IndexError, "ConcatDataset::get: index 5 is out of range for a dataset of 5");
  TG_CHECK_THROWS(both.get(-1), tg::IndexError, "index -1");
  TG_CHECK_THROWS(td::ConcatDataset({}), tg::DataError, "datasets should not be an empty iterable");
}

TEST_CASE("data utils (DataLoader): random_split sizes, a disjoint cover, reproducible from a seed or manual_seed") {
  const td::TensorDataset base = numbered(11, 0);
  const auto halves = td::random_split(base, {0.5, 0.5}, 3);
  REQUIRE(halves.size() == 2);
  CHECK(halves[0].size() == 6);   // PyTorch 2.x: floor(5.5) each, the remainder to the first
  CHECK(halves[1].size() == 5);
  const auto parts = td::random_split(base, {4, 0, 7}, 3);
  REQUIRE(parts.size() == 3);
  CHECK(parts[0].size() == 4);
  CHECK(parts[1].size() == 0);
  CHECK(parts[2].size() == 7);
  std::vector<int64_t> all;
  for (const td::Subset& p : parts) {
    CHECK(&p.dataset() == &base);
    for (int64_t i = 0; i < p.size(); ++i) {
      CHECK(target_of(p.get(i)) == p.indices()[static_cast<size_t>(i)]);
      all.push_back(p.indices()[static_cast<size_t>(i)]);
    }
  }
  std::sort(all.begin(), all.end());
  std::vector<int64_t> expected(11);
  for (int64_t i = 0; i < 11; ++i) expected[static_cast<size_t>(i)] = i;
  CHECK(all == expected);   // every sample exactly once
  // the same seed gives the same split; the same counts as fractions or counts read one permutation
  CHECK(td::random_split(base, {4, 0, 7}, 3)[2].indices() == parts[2].indices());
  CHECK(td::random_split(base, std::vector<int64_t>{4, 7}, 3)[0].indices() == parts[0].indices());
  // without a seed, tg::manual_seed fixes it
  tg::manual_seed(8);
  const auto x = td::random_split(base, {5, 6});
  tg::manual_seed(8);
  const auto y = td::random_split(base, {5, 6});
  CHECK(x[0].indices() == y[0].indices());
  CHECK(x[1].indices() == y[1].indices());
  const std::string mismatch = "Sum of input lengths does not equal the length of the input dataset!";
  TG_CHECK_THROWS(td::random_split(base, {3, 3}), tg::DataError, mismatch);
  TG_CHECK_THROWS(td::random_split(base, {0.5, 0.6}), tg::DataError, mismatch);
  TG_CHECK_THROWS(td::random_split(base, {-1, 12}), tg::DataError, "length at index 0 is negative (-1)");
  TG_CHECK_THROWS(td::random_split(base, {1.5, -0.5}), tg::DataError, "Fraction at index 0 is not between 0 and 1");
}

TEST_CASE("data utils (DataLoader): TransformDataset applies the transform to each input and target") {
  const td::TensorDataset base = numbered(4, 0);
  const td::TransformDataset scaled(base, [](Tensor x) { return x * 2.0; },
                                    [](Tensor t) { return t + tg::ones_like(t); });
  CHECK(scaled.size() == 4);
  CHECK(scaled.get(2).data.to_vector<float>() == std::vector<float>{204, -4});
  CHECK(target_of(scaled.get(2)) == 3);
  td::DataLoader loader(scaled, td::LoaderOptions().batch_size(3));
  std::vector<float> data;
  std::vector<int64_t> targets;
  for (auto& batch : loader) {
    for (float v : batch.data.to_vector<float>()) data.push_back(v);
    for (int64_t t : batch.target.to_vector<int64_t>()) targets.push_back(t);
  }
  CHECK(data == std::vector<float>{200, 0, 202, -2, 204, -4, 206, -6});
  CHECK(targets == std::vector<int64_t>{1, 2, 3, 4});
  TG_CHECK_THROWS(td::TransformDataset(base, nullptr), tg::Error, "TransformDataset: transform is empty");
}

// ------------------------------------------------------------------------------------------------
// WeightedRandomSampler

TEST_CASE("data utils (DataLoader): WeightedRandomSampler draws by weight, anew each pass, never a zero weight") {
  td::WeightedRandomSampler sampler(std::vector<double>{0, 1, 0, 3}, 2000);
  CHECK(sampler.size() == 2000);
  CHECK(sampler.num_samples() == 2000);
  CHECK(sampler.replacement());
  CHECK(sampler.weights().dtype() == tg::kFloat64);
  tg::manual_seed(4);
  const std::vector<int64_t> first = sampler.indices();
  REQUIRE(first.size() == 2000);
  int64_t threes = 0;
  for (int64_t i : first) {
    CHECK((i == 1 || i == 3));
    threes += i == 3;
  }
  // P(3) = 0.75; the standard deviation of the share over 2000 draws is about 0.0097
  CHECK(threes > 1400);
  CHECK(threes < 1600);
  CHECK(sampler.indices() != first);   // a new draw
  tg::manual_seed(4);
  CHECK(sampler.indices() == first);   // manual_seed fixes the draws
  // without replacement: each index at most once, never a zero weight
  td::WeightedRandomSampler once(tg::from_vector(std::vector<float>{1, 0, 2, 5}), 3, false);
  for (int rep = 0; rep < 20; ++rep) {
    std::vector<int64_t> v = once.indices();
    std::sort(v.begin(), v.end());
    CHECK(v == std::vector<int64_t>{0, 2, 3});
  }
}

TEST_CASE("data utils (DataLoader): WeightedRandomSampler refuses what PyTorch refuses") {
  using W = std::vector<double>;
  TG_CHECK_THROWS(td::WeightedRandomSampler(W{1, 2}, 0), tg::DataError,
                  "num_samples should be a positive integer value, but got num_samples=0");
  TG_CHECK_THROWS(td::WeightedRandomSampler(W{1, 2}, -3), tg::DataError, "num_samples=-3");
  TG_CHECK_THROWS(td::WeightedRandomSampler(tg::ones({1, 2}), 2), tg::ShapeError, "have shape (1, 2)");
  TG_CHECK_THROWS(td::WeightedRandomSampler(W{-1, 2}, 2), tg::DataError, "probability entry < 0");
  TG_CHECK_THROWS(td::WeightedRandomSampler(W{1, std::nan("")}, 2), tg::DataError, "infinity or NaN");
  TG_CHECK_THROWS(td::WeightedRandomSampler(W{0, 0}, 2), tg::DataError, "sum of probabilities <= 0");
  TG_CHECK_THROWS(td::WeightedRandomSampler(W{1, 2}, 3, false), tg::DataError, "n_sample > prob_dist.size(-1)");
  TG_CHECK_THROWS(td::WeightedRandomSampler(W{1, 0, 0}, 2, false), tg::DataError,
                  "num_samples (2) must not exceed the number of nonzero weights (1)");
  // weights longer than the dataset: the loader names the index it cannot read
  const td::TensorDataset small = numbered(2, 0);
  td::WeightedRandomSampler far(W{0, 0, 1}, 4);
  td::DataLoader loader(small, td::LoaderOptions().sampler(far));
  TG_CHECK_THROWS(loader.begin(), tg::IndexError, "the sampler gave index 2 for a dataset of 2 samples");
}

TEST_CASE("data utils (DataLoader): an epoch over ConcatDataset + Subset with a WeightedRandomSampler") {
  // the concatenation: samples 0, 1, 2 of a, then b's samples 4 and 0 (targets 0, 1, 2, 14, 10)
  const td::TensorDataset a = numbered(3, 0), b = numbered(5, 10);
  const td::Subset sub(b, {4, 0});
  const td::ConcatDataset both({a, sub});
  const std::vector<int64_t> target_at{0, 1, 2, 14, 10};
  td::WeightedRandomSampler sampler(std::vector<double>{1, 0, 1, 0, 2}, 37);
  td::DataLoader loader(both, td::LoaderOptions().batch_size(8).sampler(sampler).num_workers(2));
  CHECK(loader.size() == 5);
  tg::manual_seed(21);
  const std::vector<int64_t> expected = sampler.indices();
  tg::manual_seed(21);   // the loader reads the sampler's indices when the epoch begins: the same draw
  std::vector<int64_t> seen;
  int64_t batches = 0;
  for (auto& batch : loader) {
    ++batches;
    const std::vector<int64_t> t = batch.target.to_vector<int64_t>();
    const std::vector<float> d = batch.data.to_vector<float>();
    REQUIRE(d.size() == 2 * t.size());
    for (size_t k = 0; k < t.size(); ++k) {
      CHECK(d[2 * k] == static_cast<float>(100 + t[k]));   // data and target of one sample
      CHECK(d[2 * k + 1] == static_cast<float>(-t[k]));
      seen.push_back(t[k]);
    }
  }
  CHECK(batches == 5);
  REQUIRE(seen.size() == 37);
  std::map<int64_t, int> counts;
  for (size_t k = 0; k < seen.size(); ++k) {
    CHECK(seen[k] == target_at[static_cast<size_t>(expected[k])]);   // in the sampler's order
    ++counts[seen[k]];
  }
  CHECK(counts.count(1) == 0);    // weight 0
  CHECK(counts.count(14) == 0);   // weight 0
  for (const auto& kv : counts) CHECK((kv.first == 0 || kv.first == 2 || kv.first == 10));
}

// ------------------------------------------------------------------------------------------------
// Image transforms: deterministic

TEST_CASE("data transforms: Normalize per channel of a CHW image and an NCHW batch") {
  tg::manual_seed(1);
  const std::vector<double> mean{0.1, 0.2, 0.3}, stddev{0.5, 0.25, 2.0};
  T::Normalize<> normalize(mean, stddev);
  for (const std::vector<int64_t>& shape : {std::vector<int64_t>{3, 4, 5}, std::vector<int64_t>{2, 3, 4, 5}}) {
    const Tensor x = tg::rand(shape);
    const Tensor y = normalize(x);
    REQUIRE(y.shape() == x.shape());
    const std::vector<float> xv = x.to_vector<float>(), yv = y.to_vector<float>();
    for (size_t k = 0; k < xv.size(); ++k) {
      const size_t c = (k / 20) % 3;   // 4 x 5 elements per channel
      CHECK(yv[k] == doctest::Approx((xv[k] - mean[c]) / stddev[c]).epsilon(1e-6));
    }
  }
  TG_CHECK_THROWS(T::Normalize<>({0.5, 0.5}, {1.0, 0.0}), tg::DataError, "std evaluated to zero");
  TG_CHECK_THROWS(normalize(tg::rand({2, 4, 5})), tg::ShapeError, "");   // 2 channels, 3 means
}

TEST_CASE("data transforms: Pad with a constant, as torchvision's one, two or four values") {
  const Tensor x = distinct_image(2, 3, 4);
  const std::vector<float> xv = x.to_vector<float>();
  const Tensor y = T::Pad<>({1, 2, 3, 4}, 7.0)(x);   // left 1, top 2, right 3, bottom 4
  REQUIRE(y.shape() == std::vector<int64_t>{2, 3 + 2 + 4, 4 + 1 + 3});
  const std::vector<float> yv = y.to_vector<float>();
  for (int64_t c = 0; c < 2; ++c)
    for (int64_t i = 0; i < 9; ++i)
      for (int64_t j = 0; j < 8; ++j) {
        const bool inside = i >= 2 && i < 5 && j >= 1 && j < 5;
        CHECK(at(yv, 9, 8, c, i, j) == (inside ? at(xv, 3, 4, c, i - 2, j - 1) : 7.0f));
      }
  CHECK(T::Pad<>(2)(x).shape() == std::vector<int64_t>{2, 7, 8});
  CHECK(T::Pad<>({1, 2})(x).shape() == std::vector<int64_t>{2, 7, 6});   // left/right 1, top/bottom 2
  CHECK(T::Pad<>(1)(tg::rand({5, 2, 3, 4})).shape() == std::vector<int64_t>{5, 2, 5, 6});   // a batch
  CHECK(T::Pad<>(0)(x).to_vector<float>() == xv);
  TG_CHECK_THROWS(T::Pad<>({1, 2, 3}), tg::DataError, "1, 2, or 4 element sequence");
  TG_CHECK_THROWS(T::Pad<>(-1), tg::DataError, "padding must be non-negative, got -1");
  TG_CHECK_THROWS(T::Pad<>(1)(tg::rand({5})), tg::ShapeError, "at least 2 dims");
}

TEST_CASE("data transforms: CenterCrop takes torchvision's centre window, padding a small image with zeros") {
  const Tensor x = distinct_image(2, 7, 6);
  const std::vector<float> xv = x.to_vector<float>();
  const Tensor y = T::CenterCrop<>({3, 4})(x);
  REQUIRE(y.shape() == std::vector<int64_t>{2, 3, 4});
  const std::vector<float> yv = y.contiguous().to_vector<float>();
  for (int64_t c = 0; c < 2; ++c)   // top = round((7 - 3) / 2) = 2, left = round((6 - 4) / 2) = 1
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 4; ++j) CHECK(at(yv, 3, 4, c, i, j) == at(xv, 7, 6, c, i + 2, j + 1));
  // (6 - 3) / 2 = 1.5 rounds half to even: 2; (6 - 1) / 2 = 2.5: 2
  const Tensor s = distinct_image(1, 6, 6);
  const std::vector<float> sv = s.to_vector<float>();
  const std::vector<float> s3 = T::CenterCrop<>(3)(s).contiguous().to_vector<float>();
  const std::vector<float> s1 = T::CenterCrop<>({1, 3})(s).contiguous().to_vector<float>();
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 3; ++j) CHECK(at(s3, 3, 3, 0, i, j) == at(sv, 6, 6, 0, i + 2, j + 2));
  for (int64_t j = 0; j < 3; ++j) CHECK(at(s1, 1, 3, 0, 0, j) == at(sv, 6, 6, 0, 2, j + 2));
  // a 2 x 3 image in a 4 x 4 window: zero rows above and below, a zero column left and none... right:
  // torchvision's padding (left, top, right, bottom) = (0, 1, 1, 1)
  const Tensor small = distinct_image(1, 2, 3);
  const std::vector<float> smv = small.to_vector<float>();
  const Tensor big = T::CenterCrop<>(4)(small);
  REQUIRE(big.shape() == std::vector<int64_t>{1, 4, 4});
  const std::vector<float> bv = big.contiguous().to_vector<float>();
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 4; ++j) {
      const bool inside = i >= 1 && i < 3 && j < 3;
      CHECK(at(bv, 4, 4, 0, i, j) == (inside ? at(smv, 2, 3, 0, i - 1, j) : 0.0f));
    }
  CHECK(T::CenterCrop<>(2)(tg::rand({3, 2, 5, 5})).shape() == std::vector<int64_t>{3, 2, 2, 2});   // a batch
  TG_CHECK_THROWS(T::CenterCrop<>(0), tg::DataError, "the crop size must be positive");
  TG_CHECK_THROWS(T::CenterCrop<>({1, 2, 3}), tg::DataError, "it should have 1 or 2 values");
}

TEST_CASE("data transforms: flips with p = 1 reverse the width or the height, with p = 0 never") {
  const Tensor x = distinct_image(2, 3, 4);
  const std::vector<float> xv = x.to_vector<float>();
  const std::vector<float> h = T::RandomHorizontalFlip<>(1.0)(x).to_vector<float>();
  const std::vector<float> v = T::RandomVerticalFlip<>(1.0)(x).to_vector<float>();
  for (int64_t c = 0; c < 2; ++c)
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 4; ++j) {
        CHECK(at(h, 3, 4, c, i, j) == at(xv, 3, 4, c, i, 3 - j));
        CHECK(at(v, 3, 4, c, i, j) == at(xv, 3, 4, c, 2 - i, j));
      }
  T::RandomHorizontalFlip<> never_h(0.0);
  T::RandomVerticalFlip<> never_v(0.0);
  T::RandomHorizontalFlip<> always(1.0);
  for (int k = 0; k < 200; ++k) {
    CHECK(never_h(x).to_vector<float>() == xv);
    CHECK(never_v(x).to_vector<float>() == xv);
    CHECK(always(x).to_vector<float>() == h);
  }
  TG_CHECK_THROWS(T::RandomHorizontalFlip<>(1.5), tg::DataError, "p must be a probability in [0, 1], got 1.5");
  TG_CHECK_THROWS(T::RandomVerticalFlip<>(-0.1), tg::DataError, "p must be a probability");
  TG_CHECK_THROWS(always(tg::rand({4})), tg::ShapeError, "at least 2 dims");
}

// ------------------------------------------------------------------------------------------------
// Image transforms: random

TEST_CASE("data transforms: RandomHorizontalFlip with p = 0.5 flips about half the time, reproducibly") {
  const Tensor x = distinct_image(1, 2, 5);
  const std::vector<float> xv = x.to_vector<float>();
  const std::vector<float> flipped = tg::flip(x, {-1}).to_vector<float>();
  T::RandomHorizontalFlip<> flip;   // p = 0.5
  tg::manual_seed(11);
  std::vector<bool> outcomes;
  for (int k = 0; k < 2000; ++k) {
    const std::vector<float> y = flip(x).to_vector<float>();
    const bool f = y == flipped;
    CHECK((f || y == xv));
    outcomes.push_back(f);
  }
  const auto flips = std::count(outcomes.begin(), outcomes.end(), true);
  CHECK(flips > 800);    // 40%: the standard deviation of the count is about 22
  CHECK(flips < 1200);   // 60%
  tg::manual_seed(11);
  for (int k = 0; k < 50; ++k) CHECK((flip(x).to_vector<float>() == flipped) == outcomes[static_cast<size_t>(k)]);
}

TEST_CASE("data transforms: RandomCrop returns a window of the zero-padded image, each window drawn") {
  const int64_t C = 2, H = 5, W = 6, pad = 2, h = 4, w = 4;
  const Tensor x = distinct_image(C, H, W);
  const std::vector<float> xv = x.to_vector<float>();
  const int64_t PH = H + 2 * pad, PW = W + 2 * pad;
  // the padded image, by formula, and every window of it
  auto padded = [&](int64_t c, int64_t i, int64_t j) {
    return (i >= pad && i < pad + H && j >= pad && j < pad + W) ? at(xv, H, W, c, i - pad, j - pad) : 0.0f;
  };
  std::vector<std::vector<float>> windows;
  for (int64_t top = 0; top + h <= PH; ++top)
    for (int64_t left = 0; left + w <= PW; ++left) {
      std::vector<float> win;
      for (int64_t c = 0; c < C; ++c)
        for (int64_t i = 0; i < h; ++i)
          for (int64_t j = 0; j < w; ++j) win.push_back(padded(c, top + i, left + j));
      windows.push_back(win);
    }
  REQUIRE(windows.size() == 42);   // 6 tops x 7 lefts, all different (each holds distinct nonzero values)
  T::RandomCrop<> crop(h, pad);
  tg::manual_seed(5);
  std::vector<size_t> drawn;
  std::set<size_t> distinct;
  for (int k = 0; k < 2000; ++k) {
    const Tensor y = crop(x);
    REQUIRE(y.shape() == std::vector<int64_t>{C, h, w});
    const std::vector<float> yv = y.contiguous().to_vector<float>();
    const auto it = std::find(windows.begin(), windows.end(), yv);
    CHECK(it != windows.end());   // a window of the padded image
    const auto which = static_cast<size_t>(it - windows.begin());
    drawn.push_back(which);
    distinct.insert(which);
  }
  CHECK(distinct.size() == 42);   // about 48 draws expected per window: none missing
  tg::manual_seed(5);
  for (int k = 0; k < 50; ++k)
    CHECK(crop(x).contiguous().to_vector<float>() == windows[drawn[static_cast<size_t>(k)]]);
  // a crop of the whole (padded) image is the image itself; a (h, w) window of a batch
  CHECK(T::RandomCrop<>({H, W})(x).to_vector<float>() == xv);
  CHECK(T::RandomCrop<>({3, 2}, {1, 0, 0, 1})(tg::rand({4, C, H, W})).shape() == std::vector<int64_t>{4, C, 3, 2});
  TG_CHECK_THROWS(T::RandomCrop<>(6)(x), tg::ShapeError,
                  "Required crop size (6, 6) is larger than input image size (5, 6)");
  TG_CHECK_THROWS(T::RandomCrop<>(0), tg::DataError, "the crop size must be positive");
  TG_CHECK_THROWS(T::RandomCrop<>(2, -1), tg::DataError, "padding must be non-negative");
}

TEST_CASE("data transforms: Compose chains transforms, and a TransformDataset feeds them to the DataLoader") {
  const Tensor x = distinct_image(3, 4, 4);
  const std::vector<float> xv = x.to_vector<float>();
  // Pad 1 then a centre crop of the original size gives the original back; then a flip and Normalize
  T::Compose<> pipeline({T::Pad<>(1), T::CenterCrop<>(4), T::RandomVerticalFlip<>(1.0),
                         T::Normalize<>(0.5, 2.0)});
  const std::vector<float> y = pipeline(x).contiguous().to_vector<float>();
  for (int64_t c = 0; c < 3; ++c)
    for (int64_t i = 0; i < 4; ++i)
      for (int64_t j = 0; j < 4; ++j)
        CHECK(at(y, 4, 4, c, i, j) == doctest::Approx((at(xv, 4, 4, c, 3 - i, j) - 0.5) / 2.0));
  TG_CHECK_THROWS(T::Compose<>({T::Pad<>(1), nullptr}), tg::Error, "Compose: transform 1 is empty");

  // images (6, 1, 4, 4) with labels 0 .. 5, augmented per sample in the loader
  const Tensor images = tg::arange(6 * 16).to(tg::kFloat32).reshape({6, 1, 4, 4});
  const td::TensorDataset base(images, tg::arange(6));
  const td::TransformDataset augmented(base, T::Compose<>({T::RandomCrop<>(4, 1), T::RandomHorizontalFlip<>()}));
  td::DataLoader loader(augmented, td::LoaderOptions().batch_size(4).shuffle(true).num_workers(2));
  int64_t samples = 0;
  for (auto& batch : loader) {
    CHECK(batch.data.shape()[1] == 1);
    CHECK(batch.data.shape()[2] == 4);
    CHECK(batch.data.shape()[3] == 4);
    const std::vector<int64_t> t = batch.target.to_vector<int64_t>();
    for (size_t k = 0; k < t.size(); ++k) {
      // every value of an augmented sample is its own image's (16 t .. 16 t + 15) or the zero border
      for (float v : batch.data.select(0, static_cast<int64_t>(k)).contiguous().to_vector<float>())
        CHECK((v == 0.0f || (v >= 16.0f * t[k] && v <= 16.0f * t[k] + 15)));
    }
    samples += static_cast<int64_t>(t.size());
  }
  CHECK(samples == 6);
}

namespace {
/// Three libtorch-style samples: data (1, 4, 4) = distinct_image + i, target i.
struct Images : tg::data::datasets::Dataset<Images> {
  tg::data::Example<> get(size_t i) override {
    return {distinct_image(1, 4, 4) + static_cast<double>(i), tg::full({}, static_cast<double>(i))};
  }
  std::optional<size_t> size() const override { return 3; }
};
}  // namespace

TEST_CASE("data transforms: the image transforms map libtorch-style datasets too") {
  auto mapped = Images().map(T::CenterCrop<>(2)).map(T::RandomHorizontalFlip<>(1.0)).map(T::Stack<>());
  auto loader = tg::data::make_data_loader<tg::data::samplers::SequentialSampler>(
      std::move(mapped), tg::data::DataLoaderOptions().batch_size(3));
  int batches = 0;
  for (auto& batch : *loader) {
    ++batches;
    REQUIRE(batch.data.shape() == std::vector<int64_t>{3, 1, 2, 2});
    const std::vector<float> v = batch.data.contiguous().to_vector<float>();
    // the centre 2 x 2 window starts at (1, 1); the flip reads its columns right to left: column 2 - j
    for (int64_t n = 0; n < 3; ++n)
      for (int64_t i = 0; i < 2; ++i)
        for (int64_t j = 0; j < 2; ++j)
          CHECK(v[static_cast<size_t>((n * 2 + i) * 2 + j)] == static_cast<float>(1 + (i + 1) * 4 + (2 - j) + n));
  }
  CHECK(batches == 1);
}
