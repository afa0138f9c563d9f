// tests/test_transforms.cpp: torchvision's resizing, colour, geometric and blur transforms of
// data/transforms.h. The deterministic operations (transforms::functional) are checked against
// torchvision 0.29's own outputs (tests/data/transforms_reference.py writes
// tests/data/transforms_reference.h); the random transforms for shape, validity of every draw (each
// output is the functional operation at parameters drawn in the documented ranges, found again by
// replaying tg's stream from the same seed), coverage of the ranges with bounds many standard
// deviations wide, reproducibility from tg::manual_seed, and torchvision's argument checks.
#include <algorithm>
#include <cmath>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "data/transforms_reference.h"
#include "testing.h"

using tg::Tensor;
namespace T = tg::data::transforms;
namespace TF = tg::data::transforms::functional;
using T::InterpolationMode;

namespace {

/// image(shape, seed) = 0.5 + 0.5 sin(0.7 i + seed) over the flattened tensor, float64: the script's inputs.
Tensor image(const std::vector<int64_t>& shape, double seed, tg::DType dtype = tg::kFloat64) {
  int64_t n = 1;
  for (const int64_t s : shape) n *= s;
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = 0.5 + 0.5 * std::sin(0.7 * static_cast<double>(i) + seed);
  return tg::from_vector(v, tg::Shape(shape.begin(), shape.end()), tg::TensorOptions().dtype(tg::kFloat64)).to(dtype);
}

std::vector<int64_t> shape_of(const Tensor& t) { return std::vector<int64_t>(t.shape().begin(), t.shape().end()); }

/// Whether a and b have the same shape and agree within tol everywhere.
bool close(const Tensor& a, const Tensor& b, double tol) {
  if (shape_of(a) != shape_of(b)) return false;
  const std::vector<double> av = a.to_vector<double>(), bv = b.to_vector<double>();
  for (size_t k = 0; k < av.size(); ++k)
    if (!(std::abs(av[k] - bv[k]) <= tol)) return false;
  return true;
}

}  // namespace

TEST_CASE("transforms: resize, colour, rotate, affine and gaussian_blur match torchvision") {
  // the script's cases, in its order
  const std::vector<std::pair<std::string, std::function<Tensor()>>> runs = {
      {"resize (3, 7, 9) to (4, 5) bilinear antialias", [] { return TF::resize(image({3, 7, 9}, 1), {4, 5}); }},
      {"resize (3, 7, 9) to (4, 5) bilinear no antialias",
       [] { return TF::resize(image({3, 7, 9}, 1), {4, 5}, InterpolationMode::Bilinear, std::nullopt, false); }},
      {"resize (2, 5, 6) to (8, 11) bilinear antialias", [] { return TF::resize(image({2, 5, 6}, 2), {8, 11}); }},
      {"resize (2, 5, 6) to (8, 4) nearest",
       [] { return TF::resize(image({2, 5, 6}, 2), {8, 4}, InterpolationMode::Nearest); }},
      {"resize (2, 7, 9) shorter side 4", [] { return TF::resize(image({2, 7, 9}, 3), {4}); }},
      {"resize (1, 10, 4) shorter side 5 max_size 6",
       [] { return TF::resize(image({1, 10, 4}, 4), {5}, InterpolationMode::Bilinear, 6); }},
      {"resize (2, 3, 6, 6) to (3, 9) bilinear antialias", [] { return TF::resize(image({2, 3, 6, 6}, 5), {3, 9}); }},
      {"rgb_to_grayscale (2, 3, 4, 5) 1 channel", [] { return TF::rgb_to_grayscale(image({2, 3, 4, 5}, 1), 1); }},
      {"rgb_to_grayscale (3, 4, 5) 3 channels", [] { return TF::rgb_to_grayscale(image({3, 4, 5}, 2), 3); }},
      {"adjust_brightness 1.3", [] { return TF::adjust_brightness(image({3, 4, 5}, 3), 1.3); }},
      {"adjust_contrast 0.6 batch", [] { return TF::adjust_contrast(image({2, 3, 4, 5}, 4), 0.6); }},
      {"adjust_contrast 1.7 one channel", [] { return TF::adjust_contrast(image({1, 4, 5}, 5), 1.7); }},
      {"adjust_saturation 0.4", [] { return TF::adjust_saturation(image({2, 3, 4, 5}, 6), 0.4); }},
      {"adjust_saturation 1.8", [] { return TF::adjust_saturation(image({3, 4, 5}, 7), 1.8); }},
      {"adjust_hue 0.23", [] { return TF::adjust_hue(image({2, 3, 4, 5}, 8), 0.23); }},
      {"adjust_hue -0.41", [] { return TF::adjust_hue(image({3, 4, 5}, 9), -0.41); }},
      {"rotate 33 nearest", [] { return TF::rotate(image({3, 7, 8}, 1), 33.0); }},
      {"rotate 33 bilinear", [] { return TF::rotate(image({3, 7, 8}, 1), 33.0, InterpolationMode::Bilinear); }},
      {"rotate -50 bilinear expand fill 0.3",
       [] { return TF::rotate(image({2, 6, 9}, 2), -50.0, InterpolationMode::Bilinear, true, std::nullopt, 0.3); }},
      {"rotate 20 nearest center (2, 3) fill 0.7",
       [] {
         return TF::rotate(image({2, 6, 7}, 3), 20.0, InterpolationMode::Nearest, false,
                           std::array<double, 2>{2.0, 3.0}, 0.7);
       }},
      {"rotate 90 expand", [] { return TF::rotate(image({1, 4, 6}, 4), 90.0, InterpolationMode::Nearest, true); }},
      {"rotate 270 square", [] { return TF::rotate(image({1, 5, 5}, 5), 270.0); }},
      {"rotate 180", [] { return TF::rotate(image({1, 3, 4}, 6), 180.0); }},
      {"affine nearest fill 0.5",
       [] {
         return TF::affine(image({3, 7, 8}, 7), 25.0, {1.0, -2.0}, 0.8, {10.0, -5.0}, InterpolationMode::Nearest, 0.5);
       }},
      {"affine bilinear",
       [] { return TF::affine(image({3, 7, 8}, 7), 25.0, {1.0, -2.0}, 0.8, {10.0, -5.0}, InterpolationMode::Bilinear); }},
      {"affine bilinear center (1.5, 2) fill 0",
       [] {
         return TF::affine(image({2, 6, 6}, 8), -40.0, {0.0, 1.0}, 1.3, {0.0, 15.0}, InterpolationMode::Bilinear, 0.0,
                           std::array<double, 2>{1.5, 2.0});
       }},
      {"gaussian_blur (3, 5) sigma (0.8, 1.3)",
       [] { return TF::gaussian_blur(image({2, 3, 6, 7}, 1), {3, 5}, {0.8, 1.3}); }},
      {"gaussian_blur 5 default sigma", [] { return TF::gaussian_blur(image({1, 5, 5}, 2), {5}); }},
  };
  REQUIRE(runs.size() == transforms_ref::kCases.size());
  for (size_t c = 0; c < runs.size(); ++c) {
    const transforms_ref::Reference& ref = transforms_ref::kCases[c];
    CAPTURE(ref.name);
    REQUIRE(runs[c].first == ref.name);
    const Tensor out = runs[c].second();
    CHECK(out.dtype() == tg::kFloat64);
    REQUIRE(shape_of(out) == ref.shape);
    // torchvision's adjust_hue converts the image to float32 and back; the rest runs in float64
    const double tol = ref.name.rfind("adjust_hue", 0) == 0 ? 2e-6 : 1e-9;
    const std::vector<double> v = out.to_vector<double>();
    for (size_t k = 0; k < v.size(); ++k) {
      CAPTURE(k);
      CHECK(v[k] == doctest::Approx(ref.values[k]).epsilon(tol).scale(1.0));
    }
  }
}

TEST_CASE("transforms: functional operations keep a float32 image's dtype and values") {
  const Tensor x64 = image({3, 6, 7}, 2), x32 = image({3, 6, 7}, 2, tg::kFloat32);
  const std::vector<std::function<Tensor(const Tensor&)>> ops = {
      [](const Tensor& x) { return TF::resize(x, {4, 5}); },
      [](const Tensor& x) { return TF::resize(x, {9}, InterpolationMode::Bilinear, std::nullopt, false); },
      [](const Tensor& x) { return TF::adjust_hue(x, 0.3); },
      [](const Tensor& x) { return TF::adjust_contrast(x, 0.5); },
      [](const Tensor& x) { return TF::rotate(x, 17.0, InterpolationMode::Bilinear); },
      [](const Tensor& x) { return TF::gaussian_blur(x, {3}, {0.7}); },
  };
  for (size_t k = 0; k < ops.size(); ++k) {
    CAPTURE(k);
    const Tensor y = ops[k](x32);
    CHECK(y.dtype() == tg::kFloat32);
    CHECK(close(y.to(tg::kFloat64), ops[k](x64), 1e-5));
  }
}

TEST_CASE("transforms: the functional operations refuse what torchvision refuses") {
  const Tensor x = image({3, 4, 5}, 1);
  TG_CHECK_THROWS(TF::resize(x, {1, 2, 3}), tg::DataError, "a sequence of one or two integers");
  TG_CHECK_THROWS(TF::resize(x, {0}), tg::DataError, "the size must be positive");
  TG_CHECK_THROWS(TF::resize(x, {3, 4}, InterpolationMode::Bilinear, 6), tg::DataError,
                  "max_size should only be passed if size specifies the length of the smaller edge");
  TG_CHECK_THROWS(TF::resize(x, {5}, InterpolationMode::Bilinear, 5), tg::DataError,
                  "max_size = 5 must be strictly greater than the requested size for the smaller edge size = 5");
  TG_CHECK_THROWS(TF::resize(tg::ones({3, 4, 5}, tg::TensorOptions().dtype(tg::kInt64)), {2}), tg::DTypeError,
                  "expected a floating image tensor");
  TG_CHECK_THROWS(TF::resize(image({5}, 1), {2}), tg::ShapeError, "at least 2 dims");
  TG_CHECK_THROWS(TF::adjust_hue(x, 0.7), tg::DataError, "hue_factor (0.7) is not in [-0.5, 0.5].");
  TG_CHECK_THROWS(TF::adjust_brightness(x, -0.5), tg::DataError, "brightness_factor (-0.5) is not non-negative.");
  TG_CHECK_THROWS(TF::adjust_contrast(x, -1), tg::DataError, "contrast_factor (-1) is not non-negative.");
  TG_CHECK_THROWS(TF::adjust_saturation(image({2, 4, 5}, 1), 0.5), tg::ShapeError,
                  "Input image tensor permitted channel values are 1 or 3, but found 2");
  TG_CHECK_THROWS(TF::rgb_to_grayscale(image({4, 5}, 1)), tg::ShapeError, "at least 3 dims");
  TG_CHECK_THROWS(TF::rgb_to_grayscale(x, 2), tg::DataError, "num_output_channels should be either 1 or 3");
  TG_CHECK_THROWS(TF::affine(x, 0, {0, 0}, 0.0, {0, 0}), tg::DataError, "Argument scale should be positive");
  TG_CHECK_THROWS(TF::gaussian_blur(x, {4}), tg::DataError, "kernel_size should have odd and positive integers");
  TG_CHECK_THROWS(TF::gaussian_blur(x, {3}, {0.0}), tg::DataError, "sigma should have positive values");
  TG_CHECK_THROWS(TF::gaussian_blur(x, {3, 3, 3}), tg::DataError, "its length should be 2");
  TG_CHECK_THROWS(TF::gaussian_blur(x, {9}, {1.0}), tg::ShapeError,
                  "Padding size should be less than the corresponding input dimension");
  // gray pixels keep their value through the hue shift; a one-channel image is left as it is
  const Tensor gray = tg::full({3, 2, 2}, 0.25, tg::TensorOptions().dtype(tg::kFloat64));
  CHECK(close(TF::adjust_hue(gray, 0.4), gray, 1e-12));
  CHECK(close(TF::adjust_saturation(image({1, 4, 5}, 1), 0.3), image({1, 4, 5}, 1), 0.0));
  // an unchanged size returns the image; a full turn too
  CHECK(close(TF::resize(x, {4}), x, 0.0));
  CHECK(close(TF::rotate(x, 360.0), x, 0.0));
}

// ------------------------------------------------------------------------------------------------
// The transforms

TEST_CASE("transforms: Resize and Grayscale as transforms, and their argument checks") {
  const Tensor x = image({2, 3, 8, 12}, 1);
  CHECK(close(T::Resize<>(4)(x), TF::resize(x, {4}), 0.0));
  CHECK(shape_of(T::Resize<>(4)(x)) == std::vector<int64_t>{2, 3, 4, 6});
  CHECK(shape_of(T::Resize<>({5, 7}, InterpolationMode::Nearest)(x)) == std::vector<int64_t>{2, 3, 5, 7});
  CHECK(shape_of(T::Resize<>(6, InterpolationMode::Bilinear, 10)(x)) == std::vector<int64_t>{2, 3, 6, 9});
  // 6 x int(6 * 12 / 8) = 6 x 9 is above max_size 8: int(8 * 6 / 9) x 8
  CHECK(shape_of(T::Resize<>(6, InterpolationMode::Bilinear, 8)(x)) == std::vector<int64_t>{2, 3, 5, 8});
  TG_CHECK_THROWS(T::Resize<>({1, 2, 3}), tg::DataError, "a sequence of one or two integers");
  TG_CHECK_THROWS(T::Resize<>(-3), tg::DataError, "the size must be positive, got -3");
  TG_CHECK_THROWS(T::Resize<>(5, InterpolationMode::Bilinear, 4), tg::DataError, "must be strictly greater");
  CHECK(close(T::Grayscale<>(3)(x), TF::rgb_to_grayscale(x, 3), 0.0));
  CHECK(shape_of(T::Grayscale<>()(x)) == std::vector<int64_t>{2, 1, 8, 12});
  TG_CHECK_THROWS(T::Grayscale<>(2), tg::DataError, "num_output_channels should be either 1 or 3");
}

TEST_CASE("transforms: RandomGrayscale turns about p of the images gray, keeping the channels, reproducibly") {
  const Tensor x = image({3, 4, 5}, 2);
  const Tensor gray = TF::rgb_to_grayscale(x, 3);
  CHECK(close(T::RandomGrayscale<>(1.0)(x), gray, 0.0));
  CHECK(close(T::RandomGrayscale<>(0.0)(x), x, 0.0));
  T::RandomGrayscale<> rg(0.5);
  tg::manual_seed(3);
  std::vector<bool> outcomes;
  for (int k = 0; k < 2000; ++k) {
    const Tensor y = rg(x);
    const bool g = close(y, gray, 0.0);
    CHECK((g || close(y, x, 0.0)));
    outcomes.push_back(g);
  }
  const auto grays = std::count(outcomes.begin(), outcomes.end(), true);
  CHECK(grays > 800);    // 9 standard deviations (22) around 1000
  CHECK(grays < 1200);
  tg::manual_seed(3);
  for (int k = 0; k < 50; ++k) CHECK(close(rg(x), gray, 0.0) == outcomes[static_cast<size_t>(k)]);
  TG_CHECK_THROWS(T::RandomGrayscale<>(1.2), tg::DataError, "p must be a probability");
  TG_CHECK_THROWS(T::RandomGrayscale<>(1.0)(image({4, 5}, 1)), tg::ShapeError, "at least 3 dims");
}

TEST_CASE("transforms: RandomResizedCrop windows follow torchvision's scale, ratio and fallback") {
  const int64_t H = 20, W = 30;
  const std::array<double, 2> scale{0.08, 1.0}, ratio{3.0 / 4.0, 4.0 / 3.0};
  tg::manual_seed(7);
  std::set<int64_t> tops, heights;
  double min_area = 1, max_area = 0;
  for (int k = 0; k < 2000; ++k) {
    const std::array<int64_t, 4> w = T::detail::resized_crop_window(H, W, scale, ratio);
    const int64_t top = w[0], left = w[1], h = w[2], wd = w[3];
    REQUIRE(h > 0);
    REQUIRE(wd > 0);
    CHECK(top >= 0);
    CHECK(left >= 0);
    CHECK(top + h <= H);
    CHECK(left + wd <= W);
    // the window's aspect ratio and area share, up to the rounding of its sides to whole pixels
    const double r = static_cast<double>(wd) / static_cast<double>(h);
    CHECK(r >= ratio[0] * (1 - 1.0 / static_cast<double>(std::min(h, wd))) - 0.05);
    CHECK(r <= ratio[1] * (1 + 1.0 / static_cast<double>(std::min(h, wd))) + 0.05);
    const double share = static_cast<double>(h * wd) / static_cast<double>(H * W);
    CHECK(share <= 1.0);
    min_area = std::min(min_area, share);
    max_area = std::max(max_area, share);
    tops.insert(top);
    heights.insert(h);
  }
  CHECK(min_area < 0.15);   // shares below 0.15 come with probability about 7% per draw
  CHECK(max_area > 0.8);
  CHECK(tops.size() > 10);
  CHECK(heights.size() > 10);
  // an area share above 1 never fits: the fallback is the centre window at the nearest allowed ratio
  const std::array<int64_t, 4> wide = T::detail::resized_crop_window(10, 20, {2.0, 3.0}, ratio);
  CHECK(wide == std::array<int64_t, 4>{0, 3, 10, 13});   // w = round(10 * 4 / 3) = 13, left = (20 - 13) / 2
  const std::array<int64_t, 4> tall = T::detail::resized_crop_window(20, 10, {2.0, 3.0}, ratio);
  CHECK(tall == std::array<int64_t, 4>{3, 0, 13, 10});   // h = round(10 / (3 / 4)) = 13
  CHECK(T::detail::resized_crop_window(10, 11, {2.0, 3.0}, ratio) == std::array<int64_t, 4>{0, 0, 10, 11});

  // the transform: the window drawn from the same seed, resized
  const Tensor x = image({3, H, W}, 4);
  T::RandomResizedCrop<> rrc({8, 6});
  for (int k = 0; k < 20; ++k) {
    tg::manual_seed(static_cast<uint64_t>(40 + k));
    const Tensor y = rrc(x);
    tg::manual_seed(static_cast<uint64_t>(40 + k));
    const std::array<int64_t, 4> w = T::detail::resized_crop_window(H, W, scale, ratio);
    CHECK(shape_of(y) == std::vector<int64_t>{3, 8, 6});
    CHECK(close(y, TF::resized_crop(x, w[0], w[1], w[2], w[3], {8, 6}), 0.0));
  }
  CHECK(shape_of(T::RandomResizedCrop<>(5)(image({2, 3, 9, 9}, 1))) == std::vector<int64_t>{2, 3, 5, 5});
  TG_CHECK_THROWS(T::RandomResizedCrop<>(0), tg::DataError, "the crop size must be positive");
  TG_CHECK_THROWS(T::RandomResizedCrop<>(4, {0.9, 0.1}), tg::DataError, "Scale and ratio should be of kind (min, max)");
  TG_CHECK_THROWS(T::RandomResizedCrop<>(4, {0.1, 0.9}, {0.0, 1.0}), tg::DataError, "of kind (min, max)");
}

TEST_CASE("transforms: ColorJitter draws each factor in its range and applies the four in a random order") {
  const Tensor x = image({3, 4, 5}, 3);
  const std::vector<double> xv = x.to_vector<double>();
  // brightness alone: y = clamp(f x); f recovered from a pixel well inside (0, 1)
  T::ColorJitter<> bright(0.5);   // f in (0.5, 1.5)
  size_t probe = 0;
  for (size_t k = 0; k < xv.size(); ++k)
    if (xv[k] > 0.3 && xv[k] < 0.6) probe = k;
  REQUIRE(xv[probe] > 0.3);
  tg::manual_seed(12);
  double fmin = 2, fmax = 0;
  std::vector<double> drawn;
  for (int k = 0; k < 500; ++k) {
    const Tensor y = bright(x);
    const double f = y.to_vector<double>()[probe] / xv[probe];
    CHECK(f >= 0.5 - 1e-12);
    CHECK(f <= 1.5 + 1e-12);
    CHECK(close(y, TF::adjust_brightness(x, f), 1e-12));
    fmin = std::min(fmin, f);
    fmax = std::max(fmax, f);
    drawn.push_back(f);
  }
  CHECK(fmin < 0.55);   // 500 uniform draws: a miss of the outer 5% has probability 0.95^500
  CHECK(fmax > 1.45);
  tg::manual_seed(12);
  for (int k = 0; k < 20; ++k)
    CHECK(bright(x).to_vector<double>()[probe] / xv[probe] == doctest::Approx(drawn[static_cast<size_t>(k)]));

  // brightness fixed at 2 and contrast at 0: brightness first gives mean(clamp(2 x)), contrast first
  // clamp(2 mean(x)); both orders come up
  T::ColorJitter<> both({2.0, 2.0}, {0.0, 0.0});
  const Tensor bc = TF::adjust_contrast(TF::adjust_brightness(x, 2.0), 0.0);
  const Tensor cb = TF::adjust_brightness(TF::adjust_contrast(x, 0.0), 2.0);
  REQUIRE(!close(bc, cb, 1e-3));
  tg::manual_seed(13);
  int n_bc = 0, n_cb = 0;
  for (int k = 0; k < 400; ++k) {
    const Tensor y = both(x);
    const bool is_bc = close(y, bc, 1e-12), is_cb = close(y, cb, 1e-12);
    CHECK((is_bc || is_cb));
    n_bc += is_bc;
    n_cb += is_cb;
  }
  CHECK(n_bc > 110);   // about 200 each, standard deviation 10
  CHECK(n_cb > 110);

  // saturation and hue: each output is the adjustment at a factor in range (found by replaying the draw)
  T::ColorJitter<> sh({1.0, 1.0}, {0.0}, {0.2, 0.9}, {0.1});   // only saturation and hue
  for (int k = 0; k < 20; ++k) {
    tg::manual_seed(static_cast<uint64_t>(70 + k));
    const Tensor y = sh(x);
    tg::manual_seed(static_cast<uint64_t>(70 + k));
    const std::vector<int64_t> order = tg::randperm(4).to_vector<int64_t>();
    const double s = T::detail::uniform(0.2, 0.9), h = T::detail::uniform(-0.1, 0.1);
    CHECK(s >= 0.2);
    CHECK(s <= 0.9);
    CHECK(std::abs(h) <= 0.1);
    const bool sat_first = std::find(order.begin(), order.end(), 2) < std::find(order.begin(), order.end(), 3);
    const Tensor expect = sat_first ? TF::adjust_hue(TF::adjust_saturation(x, s), h)
                                    : TF::adjust_saturation(TF::adjust_hue(x, h), s);
    CHECK(close(y, expect, 1e-12));
  }
  // the identity ranges are skipped; the default jitter changes nothing
  CHECK(close(T::ColorJitter<>()(x), x, 0.0));
  CHECK(!T::ColorJitter<>(0.0, 0.0, 0.0, 0.0).ranges[0].has_value());
  CHECK(T::ColorJitter<>(0.4).ranges[0] == std::array<double, 2>{0.6, 1.4});
  CHECK(T::ColorJitter<>(1.5).ranges[0] == std::array<double, 2>{0.0, 2.5});   // clipped at 0
  CHECK(T::ColorJitter<>(0, 0, 0, 0.2).ranges[3] == std::array<double, 2>{-0.2, 0.2});
  TG_CHECK_THROWS(T::ColorJitter<>(-0.1), tg::DataError, "If brightness is a single number, it must be non negative.");
  TG_CHECK_THROWS(T::ColorJitter<>(0, 0, 0, 0.7), tg::DataError, "hue values should be between (-0.5, 0.5)");
  TG_CHECK_THROWS(T::ColorJitter<>({1.5, 0.5}, {0}), tg::DataError, "brightness values should be between");
  TG_CHECK_THROWS(T::ColorJitter<>({1.0}, {-0.5, 1.0}), tg::DataError, "contrast values should be between");
  TG_CHECK_THROWS(T::ColorJitter<>({1.0}, {1.0, 2.0, 3.0}), tg::DataError, "a sequence with length 2");
}

TEST_CASE("transforms: RandomRotation and RandomAffine sample their parameters in range, reproducibly") {
  const Tensor x = image({2, 7, 9}, 5);
  T::RandomRotation<> rot(30.0);
  double amin = 90, amax = -90;
  for (int k = 0; k < 60; ++k) {
    tg::manual_seed(static_cast<uint64_t>(200 + k));
    const Tensor y = rot(x);
    tg::manual_seed(static_cast<uint64_t>(200 + k));
    const double a = T::detail::uniform(-30.0, 30.0);
    CHECK(std::abs(a) <= 30.0);
    CHECK(close(y, TF::rotate(x, a, InterpolationMode::Nearest, false, std::nullopt, 0.0), 0.0));
    amin = std::min(amin, a);
    amax = std::max(amax, a);
  }
  CHECK(amin < -15);   // 60 draws all above -15 has probability 0.75^60
  CHECK(amax > 15);
  // a fixed angle, expand, a centre and a fill pass through
  const T::RandomRotation<> fixed({40.0, 40.0}, InterpolationMode::Bilinear, true, std::array<double, 2>{3.0, 2.0}, 0.5);
  CHECK(close(T::RandomRotation<>(fixed)(x),
              TF::rotate(x, 40.0, InterpolationMode::Bilinear, true, std::array<double, 2>{3.0, 2.0}, 0.5), 0.0));
  TG_CHECK_THROWS(T::RandomRotation<>(-5.0), tg::DataError, "If degrees is a single number, it must be positive.");
  TG_CHECK_THROWS(T::RandomRotation<>({1.0, 2.0, 3.0}), tg::DataError, "it must be of len 2");

  T::RandomAffine<> aff({-20.0, 10.0}, std::array<double, 2>{0.2, 0.3}, std::array<double, 2>{0.7, 1.2},
                        {-5.0, 5.0, 2.0, 8.0}, InterpolationMode::Bilinear, 0.25);
  std::set<double> txs;
  for (int k = 0; k < 40; ++k) {
    tg::manual_seed(static_cast<uint64_t>(300 + k));
    const Tensor y = aff(x);
    tg::manual_seed(static_cast<uint64_t>(300 + k));
    const double angle = T::detail::uniform(-20.0, 10.0);
    const double tx = std::nearbyint(T::detail::uniform(-0.2 * 9, 0.2 * 9));
    const double ty = std::nearbyint(T::detail::uniform(-0.3 * 7, 0.3 * 7));
    const double s = T::detail::uniform(0.7, 1.2);
    const double shx = T::detail::uniform(-5.0, 5.0), shy = T::detail::uniform(2.0, 8.0);
    CHECK(std::abs(tx) <= 2.0);   // whole pixels within 0.2 * 9
    CHECK(std::abs(ty) <= 2.0);
    CHECK(close(y, TF::affine(x, angle, {tx, ty}, s, {shx, shy}, InterpolationMode::Bilinear, 0.25), 0.0));
    txs.insert(tx);
  }
  CHECK(txs.size() >= 4);   // -2 .. 2: five values, the outer two with probability 0.08 each
  TG_CHECK_THROWS(T::RandomAffine<>(10.0, std::array<double, 2>{0.5, 1.5}), tg::DataError,
                  "translation values should be between 0 and 1");
  TG_CHECK_THROWS(T::RandomAffine<>(10.0, std::nullopt, std::array<double, 2>{0.0, 1.0}), tg::DataError,
                  "scale values should be positive");
  TG_CHECK_THROWS(T::RandomAffine<>(10.0, std::nullopt, std::nullopt, {-3.0}), tg::DataError,
                  "If shear is a single number, it must be positive.");
  TG_CHECK_THROWS(T::RandomAffine<>(10.0, std::nullopt, std::nullopt, {1.0, 2.0, 3.0}), tg::DataError,
                  "length 2 or 4");
  // degrees 0 and nothing else: the identity
  CHECK(close(T::RandomAffine<>(0.0)(x), x, 0.0));
}

TEST_CASE("transforms: GaussianBlur draws one sigma per image in its range and refuses even kernels") {
  const Tensor x = image({3, 8, 8}, 6);
  T::GaussianBlur<> blur({3, 5}, {0.5, 1.5});
  double smin = 2, smax = 0;
  for (int k = 0; k < 60; ++k) {
    tg::manual_seed(static_cast<uint64_t>(500 + k));
    const Tensor y = blur(x);
    tg::manual_seed(static_cast<uint64_t>(500 + k));
    const double s = T::detail::uniform(0.5, 1.5);
    CHECK(s >= 0.5);
    CHECK(s <= 1.5);
    CHECK(close(y, TF::gaussian_blur(x, {3, 5}, {s, s}), 0.0));
    smin = std::min(smin, s);
    smax = std::max(smax, s);
  }
  CHECK(smin < 0.75);   // 60 draws all above the lower quarter has probability 0.75^60
  CHECK(smax > 1.25);
  CHECK(close(T::GaussianBlur<>(3, {0.9})(x), TF::gaussian_blur(x, {3}, {0.9}), 0.0));   // one sigma: fixed
  TG_CHECK_THROWS(T::GaussianBlur<>(4), tg::DataError, "Kernel size value should be an odd and positive number.");
  TG_CHECK_THROWS(T::GaussianBlur<>({3, 0}), tg::DataError, "odd and positive");
  TG_CHECK_THROWS(T::GaussianBlur<>(3, {2.0, 1.0}), tg::DataError,
                  "sigma values should be positive and of the form (min, max)");
  TG_CHECK_THROWS(T::GaussianBlur<>(3, {0.0}), tg::DataError, "sigma values should be positive");
}

TEST_CASE("transforms: the new transforms compose and feed a TransformDataset") {
  const Tensor images = tg::rand({4, 3, 12, 10});
  const tg::data::TensorDataset base(images, tg::arange(4));
  const tg::data::TransformDataset augmented(
      base, T::Compose<>({T::RandomResizedCrop<>(8), T::ColorJitter<>(0.4, 0.4, 0.4, 0.1), T::RandomGrayscale<>(0.2),
                          T::RandomRotation<>(15.0), T::RandomAffine<>(0.0, std::array<double, 2>{0.1, 0.1}),
                          T::GaussianBlur<>(3), T::Normalize<>(0.5, 0.25)}));
  tg::data::DataLoader loader(augmented, tg::data::LoaderOptions().batch_size(2).num_workers(2));
  int64_t samples = 0;
  for (auto& batch : loader) {
    CHECK(shape_of(batch.data) == std::vector<int64_t>{2, 3, 8, 8});
    for (const float v : batch.data.to_vector<float>()) CHECK((v >= -2.0f - 1e-5f && v <= 2.0f + 1e-5f));
    samples += batch.data.size(0);
  }
  CHECK(samples == 4);
}
