// tests/test_losses_extra.cpp: hinge_embedding_loss, triplet_margin_loss, multi_margin_loss,
// poisson_nll_loss, gaussian_nll_loss, ctc_loss, soft_margin_loss, multilabel_soft_margin_loss,
// multilabel_margin_loss and triplet_margin_with_distance_loss against values and gradient probes PyTorch 2.15
// computed in float64 (tests/data/losses_extra_reference.py writes tests/data/losses_extra_reference.h;
// the inputs here are built the script's way), their errors, their modules and functional forms.
// Finite-difference gradchecks: tests/test_gradcheck.cpp.
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "data/losses_extra_reference.h"
#include "testing.h"
#include "tensorgrad/nn/functional.h"
#include "tensorgrad/nn/loss.h"

using tg::Tensor;

namespace {

/// sin(0.7 i + seed) * scale + shift over the flattened (shape) float64 tensor, as the script's fill.
Tensor fill(const tg::Shape& shape, double seed, double scale = 1.0, double shift = 0.0, bool grad = true) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = std::sin(0.7 * static_cast<double>(i) + seed) * scale + shift;
  Tensor t = tg::from_vector(v, shape);
  return grad ? Tensor(t.data(), true) : t;
}

Tensor ints(const std::vector<int64_t>& v, const tg::Shape& shape) { return tg::from_vector(v, shape); }
Tensor ints(const std::vector<int64_t>& v) { return tg::from_vector(v); }

const losses_extra_ref::Reference& reference(const std::string& name) {
  for (const auto& r : losses_extra_ref::kCases) {
    if (r.name == name) return r;
  }
  FAIL("no reference case named " << name);
  throw std::logic_error("unreachable");
}

bool close(double got, double want, double tol = 1e-10) {
  if (std::isinf(want)) return got == want;
  return std::abs(got - want) <= tol * (1 + std::abs(want));
}

/// sum(grad * fill(grad.shape, 5)), the script's probe.
double probe(const Tensor& grad) {
  REQUIRE(grad.defined());
  return tg::sum(grad * fill(grad.shape(), 5.0, 1.0, 0.0, false)).item<double>();
}

/// Checks out's elements against the case, backwards sum(out * fill(out.shape, 9)) and checks the probes
/// of the leaves' gradients.
void check_case(const std::string& name, const Tensor& out, const std::vector<Tensor>& leaves) {
  CAPTURE(name);
  const auto& ref = reference(name);
  const std::vector<double> got = out.contiguous().to_vector<double>();
  REQUIRE(got.size() == ref.values.size());
  for (size_t i = 0; i < got.size(); ++i) CHECK_MESSAGE(close(got[i], ref.values[i]), i << ": " << got[i] << " vs " << ref.values[i]);
  REQUIRE(leaves.size() == ref.probes.size());
  tg::sum(out * fill(out.shape(), 9.0, 1.0, 0.0, false)).backward();
  for (size_t i = 0; i < leaves.size(); ++i) {
    const double p = probe(leaves[i].grad());
    CHECK_MESSAGE(close(p, ref.probes[i]), "probe " << i << ": " << p << " vs " << ref.probes[i]);
  }
}

/// +1 where i % period == 0, else -1, over (shape).
Tensor y_pm(const tg::Shape& shape, int64_t period) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = i % period == 0 ? 1.0 : -1.0;
  return tg::from_vector(v, shape);
}

/// The script's ctc(): log_probs = log_softmax(2 fill(shape, 1), -1); checks the loss, the probe of the
/// logits' gradient, and the probe of the gradient a log_probs leaf gets.
void check_ctc(const std::string& name, const tg::Shape& shape, const Tensor& targets, const Tensor& il,
               const Tensor& tl, int64_t blank, tg::Reduction reduction, bool zero_infinity = false) {
  CAPTURE(name);
  const auto& ref = reference(name);
  const Tensor x = fill(shape, 1.0, 2.0);
  const Tensor lp = tg::log_softmax(x, -1);
  const Tensor out = tg::ctc_loss(lp, targets, il, tl, blank, reduction, zero_infinity);
  const std::vector<double> got = out.contiguous().to_vector<double>();
  REQUIRE(got.size() == ref.values.size());
  for (size_t i = 0; i < got.size(); ++i) CHECK_MESSAGE(close(got[i], ref.values[i]), i << ": " << got[i] << " vs " << ref.values[i]);
  if (ref.probes.empty()) return;
  tg::sum(out * fill(out.shape(), 9.0, 1.0, 0.0, false)).backward();
  CHECK_MESSAGE(close(probe(x.grad()), ref.probes[0]), probe(x.grad()) << " vs " << ref.probes[0]);
  const Tensor leaf(lp.detach().data(), true);
  const Tensor out2 = tg::ctc_loss(leaf, targets, il, tl, blank, reduction, zero_infinity);
  tg::sum(out2 * fill(out2.shape(), 9.0, 1.0, 0.0, false)).backward();
  CHECK_MESSAGE(close(probe(leaf.grad()), ref.probes[1]), probe(leaf.grad()) << " vs " << ref.probes[1]);
}

const tg::Reduction kMean = tg::Reduction::Mean, kSum = tg::Reduction::Sum, kNone = tg::Reduction::None;

}  // namespace

TEST_CASE("losses extra: hinge_embedding_loss against PyTorch") {
  const struct { double margin; tg::Reduction r; const char* name; } cases[] = {
      {1.0, kMean, "hinge_embedding_loss margin 1.0 mean"}, {0.5, kSum, "hinge_embedding_loss margin 0.5 sum"},
      {1.5, kNone, "hinge_embedding_loss margin 1.5 none"}};
  for (const auto& c : cases) {
    const Tensor x = fill({3, 4}, 1.0, 2.0);
    check_case(c.name, tg::hinge_embedding_loss(x, y_pm({3, 4}, 3), c.margin, c.r), {x});
  }
}

TEST_CASE("losses extra: triplet_margin_loss against PyTorch") {
  struct Case { const char* name; tg::Shape shape; std::function<Tensor(const Tensor&, const Tensor&, const Tensor&)> f; };
  const std::vector<Case> cases = {
      {"triplet_margin_loss defaults", {4, 5}, [](auto& a, auto& p, auto& n) { return tg::triplet_margin_loss(a, p, n); }},
      {"triplet_margin_loss margin 0.5 p 1 swap sum", {4, 5},
       [](auto& a, auto& p, auto& n) { return tg::triplet_margin_loss(a, p, n, 0.5, 1, 1e-6, true, kSum); }},
      {"triplet_margin_loss p 3 eps 1e-3 none", {4, 5},
       [](auto& a, auto& p, auto& n) { return tg::triplet_margin_loss(a, p, n, 1.0, 3, 1e-3, false, kNone); }},
      {"triplet_margin_loss unbatched margin 2", {5},
       [](auto& a, auto& p, auto& n) { return tg::triplet_margin_loss(a, p, n, 2.0); }}};
  for (const auto& c : cases) {
    const Tensor a = fill(c.shape, 1.0), p = fill(c.shape, 2.0, 1.5), n = fill(c.shape, 1.3, 0.9);
    check_case(c.name, c.f(a, p, n), {a, p, n});
  }
}

TEST_CASE("losses extra: multi_margin_loss against PyTorch") {
  const Tensor target = ints({0, 3, 4, 1});
  const Tensor w = fill({5}, 7.0, 0.4, 1.0, false);
  Tensor x = fill({4, 5}, 1.0, 1.5);
  check_case("multi_margin_loss defaults", tg::multi_margin_loss(x, target), {x});
  x = fill({4, 5}, 1.0, 1.5);
  check_case("multi_margin_loss p 2 margin 0.7 weight sum", tg::multi_margin_loss(x, target, 2, 0.7, w, kSum), {x});
  x = fill({4, 5}, 1.0, 1.5);
  check_case("multi_margin_loss weight none", tg::multi_margin_loss(x, target, 1, 1.0, w, kNone), {x});
  x = fill({5}, 1.0, 1.5);
  const Tensor one = tg::multi_margin_loss(x, ints({2}, {}), 1, 1.0, Tensor(), kNone);
  CHECK(one.dim() == 0);
  check_case("multi_margin_loss unbatched target 2 none", one, {x});
}

TEST_CASE("losses extra: poisson_nll_loss against PyTorch") {
  const struct { const char* name; bool log_input, full; double eps; tg::Reduction r; double scale, shift; } cases[] = {
      {"poisson_nll_loss defaults", true, false, 1e-8, kMean, 1.0, 0.0},
      {"poisson_nll_loss full sum", true, true, 1e-8, kSum, 1.0, 0.0},
      {"poisson_nll_loss log_input false none", false, false, 1e-8, kNone, 0.4, 0.6},
      {"poisson_nll_loss log_input false full eps 0.1", false, true, 0.1, kMean, 0.4, 0.6}};
  for (const auto& c : cases) {
    const Tensor x = fill({3, 4}, 1.0, c.scale, c.shift), t = fill({3, 4}, 2.0, 2.0, 2.0);
    check_case(c.name, tg::poisson_nll_loss(x, t, c.log_input, c.full, c.eps, c.r), {x, t});
  }
}

TEST_CASE("losses extra: gaussian_nll_loss against PyTorch, homoscedastic and clamped variances") {
  const struct { const char* name; tg::Shape vshape; bool full; double eps; tg::Reduction r; double vscale, vshift; } cases[] = {
      {"gaussian_nll_loss defaults", {4, 3}, false, 1e-6, kMean, 0.5, 0.6},
      {"gaussian_nll_loss full sum", {4, 3}, true, 1e-6, kSum, 0.5, 0.6},
      {"gaussian_nll_loss var (4) none", {4}, false, 1e-6, kNone, 0.5, 0.6},
      {"gaussian_nll_loss var (4, 1)", {4, 1}, false, 1e-6, kMean, 0.5, 0.6},
      {"gaussian_nll_loss var below eps", {4, 3}, false, 1e-6, kSum, 1e-7, 1e-7},
      {"gaussian_nll_loss eps 0.5", {4, 3}, false, 0.5, kMean, 0.5, 0.6}};
  for (const auto& c : cases) {
    const Tensor i = fill({4, 3}, 1.0), t = fill({4, 3}, 2.0), v = fill(c.vshape, 3.0, c.vscale, c.vshift);
    check_case(c.name, tg::gaussian_nll_loss(i, t, v, c.full, c.eps, c.r), {i, t, v});
  }
  // a float variance is a full tensor of it
  const Tensor i = fill({4, 3}, 1.0, 1.0, 0.0, false), t = fill({4, 3}, 2.0, 1.0, 0.0, false);
  CHECK(tg::gaussian_nll_loss(i, t, 0.7).item<double>() ==
        doctest::Approx(tg::gaussian_nll_loss(i, t, tg::full_like(i, 0.7)).item<double>()).epsilon(1e-14));
}

TEST_CASE("losses extra: ctc_loss against PyTorch: padded and concatenated targets, repeats, blanks, impossible alignments") {
  const Tensor padded = ints({1, 2, 2, 3, 4, 4, 0, 0, 1, 3, 2, 0}, {3, 4});
  const Tensor concat = ints({1, 2, 2, 3, 4, 4, 1, 3, 2});
  const Tensor il = ints({6, 5, 4}), tl = ints({4, 2, 3});
  check_ctc("ctc_loss padded mean", {6, 3, 5}, padded, il, tl, 0, kMean);
  check_ctc("ctc_loss padded sum", {6, 3, 5}, padded, il, tl, 0, kSum);
  check_ctc("ctc_loss padded none", {6, 3, 5}, padded, il, tl, 0, kNone);
  check_ctc("ctc_loss concatenated mean", {6, 3, 5}, concat, il, tl, 0, kMean);
  const Tensor t2 = ints({1, 0, 0, 0}, {2, 2});
  check_ctc("ctc_loss blank 2 empty target sum", {4, 2, 3}, t2, ints({4, 3}), ints({2, 0}), 2, kSum);
  check_ctc("ctc_loss blank 2 empty target mean", {4, 2, 3}, t2, ints({4, 3}), ints({2, 0}), 2, kMean);
  check_ctc("ctc_loss unbatched blank 3", {5, 4}, ints({0, 2, 2}), ints({5}, {}), ints({3}, {}), 3, kMean);
  const Tensor imp = ints({1, 2, 0, 2, 2, 2}, {2, 3});
  check_ctc("ctc_loss impossible zero_infinity none", {4, 2, 5}, imp, ints({4, 4}), ints({2, 3}), 0, kNone, true);
  check_ctc("ctc_loss impossible zero_infinity mean", {4, 2, 5}, imp, ints({4, 4}), ints({2, 3}), 0, kMean, true);
  check_ctc("ctc_loss impossible zero_infinity sum", {4, 2, 5}, imp, ints({4, 4}), ints({2, 3}), 0, kSum, true);
  check_ctc("ctc_loss impossible none", {4, 2, 5}, imp, ints({4, 4}), ints({2, 3}), 0, kNone);
}

TEST_CASE("losses extra: ctc_loss lengths as lists, an input length of 0, float32") {
  const Tensor lp = tg::log_softmax(fill({6, 3, 5}, 1.0, 2.0, 0.0, false), -1);
  const Tensor padded = ints({1, 2, 2, 3, 4, 4, 0, 0, 1, 3, 2, 0}, {3, 4});
  const Tensor a = tg::ctc_loss(lp, padded, std::vector<int64_t>{6, 5, 4}, std::vector<int64_t>{4, 2, 3});
  CHECK(close(a.item<double>(), reference("ctc_loss padded mean").values[0]));
  // input length 0: 0 for an empty target, inf otherwise (PyTorch's convention)
  const Tensor z = tg::ctc_loss(lp, padded, std::vector<int64_t>{0, 0, 4}, std::vector<int64_t>{0, 2, 3}, 0, kNone);
  const std::vector<double> zv = z.to_vector<double>();
  CHECK(zv[0] == 0.0);
  CHECK(std::isinf(zv[1]));
  // float32 in, float32 out, the float64 value rounded
  const Tensor f = tg::ctc_loss(lp.to(tg::kFloat32), padded, ints({6, 5, 4}), ints({4, 2, 3}));
  CHECK(f.dtype() == tg::kFloat32);
  CHECK(f.item<double>() == doctest::Approx(reference("ctc_loss padded mean").values[0]).epsilon(1e-5));
}

TEST_CASE("losses extra: soft_margin_loss against PyTorch") {
  const struct { tg::Reduction r; const char* name; } cases[] = {
      {kMean, "soft_margin_loss mean"}, {kSum, "soft_margin_loss sum"}, {kNone, "soft_margin_loss none"}};
  for (const auto& c : cases) {
    const Tensor x = fill({3, 4}, 1.0, 2.0);
    check_case(c.name, tg::soft_margin_loss(x, y_pm({3, 4}, 3), c.r), {x});
  }
  const Tensor x = fill({3, 4}, 1.0, 2.0);
  check_case("soft_margin_loss target (4) broadcast", tg::soft_margin_loss(x, y_pm({4}, 3)), {x});
}

namespace {
/// 1 where i % period == 0, else 0, over (shape): the script's y01.
Tensor y01(const tg::Shape& shape, int64_t period) { return (y_pm(shape, period) + 1.0) / 2.0; }
}  // namespace

TEST_CASE("losses extra: multilabel_soft_margin_loss against PyTorch, weight and soft targets with gradients") {
  Tensor x = fill({3, 5}, 1.0, 2.0);
  check_case("multilabel_soft_margin_loss defaults", tg::multilabel_soft_margin_loss(x, y01({3, 5}, 3)), {x});
  x = fill({3, 5}, 1.0, 2.0);
  const Tensor t = fill({3, 5}, 2.0, 0.5, 0.5), w = fill({5}, 7.0, 0.4, 1.0);
  check_case("multilabel_soft_margin_loss soft target weight sum", tg::multilabel_soft_margin_loss(x, t, w, kSum), {x, t, w});
  x = fill({3, 5}, 1.0, 2.0);
  const Tensor rows = tg::multilabel_soft_margin_loss(x, y01({3, 5}, 2), Tensor(), kNone);
  CHECK(rows.shape() == tg::Shape{3});
  check_case("multilabel_soft_margin_loss none", rows, {x});
  x = fill({5}, 1.0, 2.0);
  const Tensor w1 = fill({5}, 7.0, 0.4, 1.0);
  const Tensor one = tg::multilabel_soft_margin_loss(x, y01({5}, 3), w1, kNone);
  CHECK(one.dim() == 0);
  check_case("multilabel_soft_margin_loss unbatched weight none", one, {x, w1});
}

TEST_CASE("losses extra: multilabel_margin_loss against PyTorch: lists ending at -1, repeated, full and empty") {
  // rows: a list ending at -1 (the entries after it are ignored), a repeated index, every class, none
  const Tensor target = ints({3, 0, -1, 1, 2, 4, 4, 1, -1, -1, 0, 1, 2, 3, 4, -1, 2, 2, 2, 2}, {4, 5});
  const struct { tg::Reduction r; const char* name; } cases[] = {
      {kMean, "multilabel_margin_loss mean"}, {kSum, "multilabel_margin_loss sum"}, {kNone, "multilabel_margin_loss none"}};
  for (const auto& c : cases) {
    const Tensor x = fill({4, 5}, 1.0, 1.5);
    check_case(c.name, tg::multilabel_margin_loss(x, target, c.r), {x});
  }
  Tensor x = fill({5}, 1.0, 1.5);
  check_case("multilabel_margin_loss unbatched mean", tg::multilabel_margin_loss(x, ints({2, 4, -1, 0, 0})), {x});
  x = fill({5}, 1.0, 1.5);
  const Tensor one = tg::multilabel_margin_loss(x, ints({2, 4, -1, 0, 0}), kNone);
  CHECK(one.dim() == 0);
  check_case("multilabel_margin_loss unbatched none", one, {x});
  // float32 in, float32 out, the float64 value rounded
  const Tensor f = tg::multilabel_margin_loss(fill({4, 5}, 1.0, 1.5, 0.0, false).to(tg::kFloat32), target);
  CHECK(f.dtype() == tg::kFloat32);
  CHECK(f.item<double>() == doctest::Approx(reference("multilabel_margin_loss mean").values[0]).epsilon(1e-6));
}

namespace {
/// The script's l1_distance and cosine_distance, along the last dim.
Tensor l1_distance(const Tensor& a, const Tensor& b) { return tg::sum(tg::abs(a - b), a.dim() - 1); }
Tensor cosine_distance(const Tensor& a, const Tensor& b) {
  const int64_t d = a.dim() - 1;
  return 1.0 - tg::sum(a * b, d) / (tg::norm(a, 2, {d}) * tg::norm(b, 2, {d}));
}
}  // namespace

TEST_CASE("losses extra: triplet_margin_with_distance_loss against PyTorch, default and given distances") {
  struct Case {
    const char* name;
    tg::Shape shape;
    double nseed, nscale;
    std::function<Tensor(const Tensor&, const Tensor&, const Tensor&)> f;
  };
  const std::vector<Case> cases = {
      {"triplet_margin_with_distance_loss defaults", {4, 5}, 1.3, 0.9,
       [](auto& a, auto& p, auto& n) { return tg::triplet_margin_with_distance_loss(a, p, n); }},
      {"triplet_margin_with_distance_loss swap sum", {4, 5}, 2.4, 1.2,
       [](auto& a, auto& p, auto& n) { return tg::triplet_margin_with_distance_loss(a, p, n, {}, 1.0, true, kSum); }},
      {"triplet_margin_with_distance_loss l1 distance margin 0.5 swap none", {4, 5}, 2.4, 1.2,
       [](auto& a, auto& p, auto& n) { return tg::triplet_margin_with_distance_loss(a, p, n, l1_distance, 0.5, true, kNone); }},
      {"triplet_margin_with_distance_loss cosine distance margin 1.5", {4, 5}, 1.3, 0.9,
       [](auto& a, auto& p, auto& n) { return tg::triplet_margin_with_distance_loss(a, p, n, cosine_distance, 1.5); }},
      {"triplet_margin_with_distance_loss unbatched margin 2", {5}, 1.3, 0.9,
       [](auto& a, auto& p, auto& n) { return tg::triplet_margin_with_distance_loss(a, p, n, {}, 2.0); }}};
  for (const auto& c : cases) {
    const Tensor a = fill(c.shape, 1.0), p = fill(c.shape, 2.0, 1.5), n = fill(c.shape, c.nseed, c.nscale);
    check_case(c.name, c.f(a, p, n), {a, p, n});
  }
  // the default distance is triplet_margin_loss's (p 2, eps 1e-6)
  const Tensor a = fill({4, 5}, 1.0, 1.0, 0.0, false), p = fill({4, 5}, 2.0, 1.5, 0.0, false);
  const Tensor n = fill({4, 5}, 2.4, 1.2, 0.0, false);
  CHECK(tg::allclose(tg::triplet_margin_with_distance_loss(a, p, n, {}, 0.7, true, kNone),
                     tg::triplet_margin_loss(a, p, n, 0.7, 2, 1e-6, true, kNone), 0, 0));
}

TEST_CASE("losses extra: multilabel and soft margin errors name the op and the shapes") {
  const Tensor x = fill({3, 4}, 1.0, 1.0, 0.0, false);
  const Tensor t = ints({0, 1, -1, 2, 3, -1, 0, 0, 1, 2, 3, 0}, {3, 4});
  // multilabel_margin_loss
  TG_CHECK_THROWS(tg::multilabel_margin_loss(x, ints({0, 1, 2})), tg::ShapeError,
                  "multilabel_margin_loss: inconsistent target size: [3] for input of size: [3, 4]");
  TG_CHECK_THROWS(tg::multilabel_margin_loss(x, ints({0, 1, -1, 2, 3, -1}, {3, 2})), tg::ShapeError,
                  "inconsistent target size: [3, 2]");
  TG_CHECK_THROWS(tg::multilabel_margin_loss(fill({4}, 1.0, 1.0, 0.0, false), ints({0, 1, 2})), tg::ShapeError,
                  "inconsistent target size");
  TG_CHECK_THROWS(tg::multilabel_margin_loss(fill({2, 3, 4}, 1.0, 1.0, 0.0, false), ints({0, 1}, {1, 2})), tg::ShapeError,
                  "multilabel_margin_loss: Expected non-empty vector or matrix with optional 0-dim batch size");
  TG_CHECK_THROWS(tg::multilabel_margin_loss(fill({3, 0}, 1.0, 1.0, 0.0, false), ints({}, {3, 0})), tg::ShapeError,
                  "Expected non-empty vector or matrix");
  TG_CHECK_THROWS(tg::multilabel_margin_loss(x, ints({0, 1, -1, 2, 4, -1, 0, 0, 1, 2, 3, 0}, {3, 4})), tg::IndexError,
                  "multilabel_margin_loss: argument #2 'target' is out of range: got 4");
  // below -1, even after a row's first -1, as PyTorch's check
  TG_CHECK_THROWS(tg::multilabel_margin_loss(x, ints({0, 1, -1, -2, 3, -1, 0, 0, 1, 2, 3, 0}, {3, 4})), tg::IndexError,
                  "out of range: got -2");
  TG_CHECK_THROWS(tg::multilabel_margin_loss(x, tg::from_vector(std::vector<int32_t>(12, 0), {3, 4})), tg::DTypeError,
                  "multilabel_margin_loss: expected target of dtype int64");
  TG_CHECK_THROWS(tg::multilabel_margin_loss(ints(std::vector<int64_t>(12, 0), {3, 4}), t), tg::DTypeError,
                  "multilabel_margin_loss");
  // multilabel_soft_margin_loss, soft_margin_loss
  TG_CHECK_THROWS(tg::multilabel_soft_margin_loss(fill({}, 1.0, 1.0, 0.0, false), fill({}, 2.0, 1.0, 0.0, false)),
                  tg::IndexError, "multilabel_soft_margin_loss: Dimension specified as -1");
  TG_CHECK_THROWS(tg::multilabel_soft_margin_loss(ints({1, 0}), ints({1, 0})), tg::DTypeError, "multilabel_soft_margin_loss");
  TG_CHECK_THROWS(tg::multilabel_soft_margin_loss(x, fill({2, 4}, 1.0, 1.0, 0.0, false)), tg::ShapeError,
                  "the size of tensor a (2) must match the size of tensor b (3)");
  TG_CHECK_THROWS(tg::soft_margin_loss(ints({1, 2}), ints({1, -1})), tg::DTypeError, "soft_margin_loss");
  TG_CHECK_THROWS(tg::soft_margin_loss(x, fill({2, 4}, 1.0, 1.0, 0.0, false)), tg::ShapeError, "must match the size of tensor b (2)");
  // triplet_margin_with_distance_loss and its object
  TG_CHECK_THROWS(tg::triplet_margin_with_distance_loss(x, x, x, {}, 0.0), tg::Error,
                  "triplet_margin_with_distance_loss: margin must be greater than 0, got 0");
  TG_CHECK_THROWS(tg::triplet_margin_with_distance_loss(x, x, fill({4}, 1.0)), tg::ShapeError,
                  "anchor 2D, positive 2D, and negative 1D inputs");
  TG_CHECK_THROWS(tg::triplet_margin_with_distance_loss(ints({1, 2}), ints({1, 2}), ints({1, 2})), tg::DTypeError,
                  "triplet_margin_with_distance_loss");
  TG_CHECK_THROWS(tg::nn::TripletMarginWithDistanceLoss(tg::nn::TripletMarginWithDistanceLossOptions().margin(-1)),
                  tg::Error, "TripletMarginWithDistanceLoss: expected margin to be greater than 0, got -1 instead");
  // a given distance may take integer points
  const auto hamming = [](const Tensor& a, const Tensor& b) { return tg::sum(tg::ne(a, b).to(tg::kFloat64), a.dim() - 1); };
  CHECK(tg::triplet_margin_with_distance_loss(ints({1, 2}), ints({1, 3}), ints({1, 2}), hamming).item<double>() == 2.0);
}

TEST_CASE("losses extra: errors name the op") {
  const Tensor x = fill({3, 4}, 1.0, 1.0, 0.0, false);
  // triplet_margin_loss
  TG_CHECK_THROWS(tg::triplet_margin_loss(x, x, x, 0.0), tg::Error, "margin must be greater than 0");
  TG_CHECK_THROWS(tg::triplet_margin_loss(x, fill({4}, 1.0), x), tg::ShapeError, "same number of dimensions");
  // multi_margin_loss
  const Tensor t3 = ints({0, 1, 2});
  TG_CHECK_THROWS(tg::multi_margin_loss(x, t3, 3), tg::Error, "only p == 1 and p == 2 supported");
  TG_CHECK_THROWS(tg::multi_margin_loss(x, ints({0, 1})), tg::ShapeError, "target tensor should be 1-D");
  TG_CHECK_THROWS(tg::multi_margin_loss(x, ints({0, 4, 1})), tg::IndexError, "target out of range");
  TG_CHECK_THROWS(tg::multi_margin_loss(x, t3, 1, 1.0, fill({3}, 1.0, 1.0, 0.0, false)), tg::ShapeError,
                  "inconsistent weight size, expected 4");
  TG_CHECK_THROWS(tg::multi_margin_loss(fill({2, 3, 1}, 1.0), ints({0, 1})), tg::ShapeError, "Expected non-empty vector or matrix");
  TG_CHECK_THROWS(tg::multi_margin_loss(x, x), tg::DTypeError, "int64");
  // gaussian_nll_loss
  TG_CHECK_THROWS(tg::gaussian_nll_loss(x, x, fill({3, 4}, 1.0, 1.0, -0.5, false)), tg::Error, "var has negative entry");
  TG_CHECK_THROWS(tg::gaussian_nll_loss(x, x, fill({3, 2}, 1.0, 0.1, 1.0, false)), tg::ShapeError, "var is of incorrect size");
  TG_CHECK_THROWS(tg::gaussian_nll_loss(x, x, -1.0), tg::Error, "var has negative entry");
  // floating inputs
  TG_CHECK_THROWS(tg::hinge_embedding_loss(ints({1, 2}), ints({1, -1})), tg::DTypeError, "hinge_embedding_loss");
  TG_CHECK_THROWS(tg::poisson_nll_loss(ints({1, 2}), ints({1, 2})), tg::DTypeError, "poisson_nll_loss");
}

TEST_CASE("losses extra: ctc_loss errors") {
  const Tensor lp = tg::log_softmax(fill({5, 2, 4}, 1.0, 1.0, 0.0, false), -1);
  const Tensor tgt = ints({1, 2, 3, 1}, {2, 2});
  const Tensor il = ints({5, 4}), tl = ints({2, 2});
  TG_CHECK_THROWS(tg::ctc_loss(fill({5}, 1.0), tgt, il, tl), tg::ShapeError, "(T, N, C)");
  TG_CHECK_THROWS(tg::ctc_loss(lp, tgt, ints({5, 4, 3}), tl), tg::ShapeError, "input_lengths must be of size batch_size (2)");
  TG_CHECK_THROWS(tg::ctc_loss(lp, tgt, il, ints({2})), tg::ShapeError, "target_lengths must be of size batch_size (2)");
  TG_CHECK_THROWS(tg::ctc_loss(lp, tgt, ints({6, 4}), tl), tg::Error, "Expected input_lengths to have value at most 5");
  TG_CHECK_THROWS(tg::ctc_loss(lp, tgt, ints({-1, 4}), tl), tg::Error, "input_lengths");
  TG_CHECK_THROWS(tg::ctc_loss(lp, tgt, il, ints({-1, 2})), tg::Error, "target_lengths to be at least 0");
  TG_CHECK_THROWS(tg::ctc_loss(lp, tgt, il, ints({3, 2})), tg::ShapeError, "size at least 3");
  TG_CHECK_THROWS(tg::ctc_loss(lp, tgt, il, tl, 4), tg::IndexError, "blank must be in label range");
  TG_CHECK_THROWS(tg::ctc_loss(lp, tgt, il, tl, -1), tg::IndexError, "blank must be in label range");
  TG_CHECK_THROWS(tg::ctc_loss(lp, ints({1, 4, 3, 1}, {2, 2}), il, tl), tg::IndexError, "target 4 of batch entry 0");
  TG_CHECK_THROWS(tg::ctc_loss(lp, ints({1, 2, 0, 1}, {2, 2}), il, tl), tg::IndexError, "equal to blank 0");
  TG_CHECK_THROWS(tg::ctc_loss(lp, ints({1, 2, 3}), il, tl), tg::ShapeError, "fewer than the sum of target_lengths (4)");
  TG_CHECK_THROWS(tg::ctc_loss(lp, ints({1, 2, 3, 1, 2, 3}, {3, 2}), il, tl), tg::ShapeError, "batch_size (2) rows");
  TG_CHECK_THROWS(tg::ctc_loss(lp, fill({2, 2}, 1.0, 1.0, 0.0, false), il, tl), tg::DTypeError, "targets must be an int64");
  TG_CHECK_THROWS(tg::ctc_loss(lp, tgt, fill({2}, 1.0, 1.0, 0.0, false), tl), tg::DTypeError, "input_lengths must be an int64");
  TG_CHECK_THROWS(tg::ctc_loss(lp.select(1, 0), ints({1, 2}, {1, 2}), ints({5}, {}), ints({2}, {})), tg::ShapeError,
                  "expect 1-D targets");
  // a target longer than the input allows is not an error: inf, or 0 with zero_infinity
  CHECK(std::isinf(tg::ctc_loss(lp, tgt, ints({1, 4}), tl, 0, kSum).item<double>()));
  CHECK(std::isfinite(tg::ctc_loss(lp, tgt, ints({1, 4}), tl, 0, kSum, true).item<double>()));
}

TEST_CASE("losses extra: the loss objects' defaults and functional forms") {
  namespace nn = tg::nn;
  namespace F = tg::nn::functional;
  CHECK(nn::HingeEmbeddingLoss().options().margin_ == 1.0);
  CHECK(nn::HingeEmbeddingLoss().options().reduction_ == tg::kMean);
  const nn::TripletMarginLossOptions tm;
  CHECK(tm.margin_ == 1.0);
  CHECK(tm.p_ == 2.0);
  CHECK(tm.eps_ == 1e-6);
  CHECK(!tm.swap_);
  CHECK(tm.reduction_ == tg::kMean);
  const nn::MultiMarginLossOptions mm;
  CHECK(mm.p_ == 1);
  CHECK(mm.margin_ == 1.0);
  CHECK(!mm.weight_.defined());
  const nn::PoissonNLLLossOptions pn;
  CHECK(pn.log_input_);
  CHECK(!pn.full_);
  CHECK(pn.eps_ == 1e-8);
  const nn::GaussianNLLLossOptions gn;
  CHECK(!gn.full_);
  CHECK(gn.eps_ == 1e-6);
  CHECK(gn.reduction_ == tg::kMean);
  const nn::CTCLossOptions co;
  CHECK(co.blank_ == 0);
  CHECK(co.reduction_ == tg::kMean);
  CHECK(!co.zero_infinity_);

  // the objects and the functional forms call the functions with their options
  const Tensor x = fill({3, 4}, 1.0, 2.0, 0.0, false), y = y_pm({3, 4}, 3);
  auto same = [](const Tensor& a, const Tensor& b) { CHECK(tg::allclose(a, b, 0, 0)); };
  same(nn::HingeEmbeddingLoss(nn::HingeEmbeddingLossOptions().margin(0.5).reduction(tg::kSum))(x, y),
       tg::hinge_embedding_loss(x, y, 0.5, kSum));
  same(F::hinge_embedding_loss(x, y, F::HingeEmbeddingLossFuncOptions().margin(0.5)), tg::hinge_embedding_loss(x, y, 0.5));
  const Tensor p = fill({3, 4}, 2.0, 1.5, 0.0, false), n = fill({3, 4}, 1.3, 0.9, 0.0, false);
  same(nn::TripletMarginLoss(nn::TripletMarginLossOptions().margin(0.5).p(1).swap(true))->forward(x, p, n),
       tg::triplet_margin_loss(x, p, n, 0.5, 1, 1e-6, true));
  same(F::triplet_margin_loss(x, p, n, F::TripletMarginLossFuncOptions().eps(1e-3)), tg::triplet_margin_loss(x, p, n, 1.0, 2, 1e-3));
  const Tensor t = ints({0, 3, 1});
  const Tensor w = fill({4}, 7.0, 0.4, 1.0, false);
  same(nn::MultiMarginLoss(nn::MultiMarginLossOptions().p(2).margin(0.7).weight(w).reduction(tg::kNone))(x, t),
       tg::multi_margin_loss(x, t, 2, 0.7, w, kNone));
  same(F::multi_margin_loss(x, t), tg::multi_margin_loss(x, t));
  const Tensor counts = fill({3, 4}, 2.0, 2.0, 2.0, false);
  same(nn::PoissonNLLLoss(nn::PoissonNLLLossOptions().full(true).reduction(tg::kSum))(x, counts),
       tg::poisson_nll_loss(x, counts, true, true, 1e-8, kSum));
  same(F::poisson_nll_loss(p.abs(), counts, F::PoissonNLLLossFuncOptions().log_input(false).eps(0.1)),
       tg::poisson_nll_loss(p.abs(), counts, false, false, 0.1));
  const Tensor var = fill({3, 4}, 3.0, 0.5, 0.6, false);
  same(nn::GaussianNLLLoss(nn::GaussianNLLLossOptions().full(true).eps(0.5))(x, p, var),
       tg::gaussian_nll_loss(x, p, var, true, 0.5));
  same(F::gaussian_nll_loss(x, p, var), tg::gaussian_nll_loss(x, p, var));
  const Tensor lp = tg::log_softmax(fill({6, 3, 5}, 1.0, 2.0, 0.0, false), -1);
  const Tensor padded = ints({1, 2, 2, 3, 4, 4, 0, 0, 1, 3, 2, 0}, {3, 4});
  const Tensor il = ints({6, 5, 4}), tl = ints({4, 2, 3});
  same(nn::CTCLoss(nn::CTCLossOptions().reduction(tg::kNone))->forward(lp, padded, il, tl),
       tg::ctc_loss(lp, padded, il, tl, 0, kNone));
  same(F::ctc_loss(lp, padded, il, tl, F::CTCLossFuncOptions().reduction(tg::kSum).zero_infinity(true)),
       tg::ctc_loss(lp, padded, il, tl, 0, kSum, true));
}

TEST_CASE("losses extra: the multilabel, soft margin and distance loss objects' defaults and functional forms") {
  namespace nn = tg::nn;
  namespace F = tg::nn::functional;
  CHECK(nn::SoftMarginLoss().options().reduction_ == tg::kMean);
  CHECK(nn::MultiLabelMarginLoss().options().reduction_ == tg::kMean);
  CHECK(!nn::MultiLabelSoftMarginLoss().options().weight_.defined());
  CHECK(nn::MultiLabelSoftMarginLoss().options().reduction_ == tg::kMean);
  const nn::TripletMarginWithDistanceLossOptions td;
  CHECK(!td.distance_function_);
  CHECK(td.margin_ == 1.0);
  CHECK(!td.swap_);
  CHECK(td.reduction_ == tg::kMean);

  // the objects and the functional forms call the functions with their options
  const Tensor x = fill({3, 4}, 1.0, 2.0, 0.0, false), y = y_pm({3, 4}, 3);
  auto same = [](const Tensor& a, const Tensor& b) { CHECK(tg::allclose(a, b, 0, 0)); };
  same(nn::SoftMarginLoss(nn::SoftMarginLossOptions().reduction(tg::kNone))(x, y), tg::soft_margin_loss(x, y, kNone));
  same(F::soft_margin_loss(x, y, F::SoftMarginLossFuncOptions().reduction(tg::kSum)), tg::soft_margin_loss(x, y, kSum));
  const Tensor labels = y01({3, 4}, 2), w = fill({4}, 7.0, 0.4, 1.0, false);
  same(nn::MultiLabelSoftMarginLoss(nn::MultiLabelSoftMarginLossOptions().weight(w).reduction(tg::kNone))->forward(x, labels),
       tg::multilabel_soft_margin_loss(x, labels, w, kNone));
  same(F::multilabel_soft_margin_loss(x, labels, F::MultilabelSoftMarginLossFuncOptions().weight(w)),
       tg::multilabel_soft_margin_loss(x, labels, w));
  const Tensor t = ints({0, 1, -1, 2, 3, -1, 0, 0, 1, 2, 3, 0}, {3, 4});
  same(nn::MultiLabelMarginLoss(nn::MultiLabelMarginLossOptions().reduction(tg::kSum))(x, t),
       tg::multilabel_margin_loss(x, t, kSum));
  same(F::multilabel_margin_loss(x, t, F::MultilabelMarginLossFuncOptions().reduction(tg::kNone)),
       tg::multilabel_margin_loss(x, t, kNone));
  const Tensor p = fill({3, 4}, 2.0, 1.5, 0.0, false), n = fill({3, 4}, 2.4, 1.2, 0.0, false);
  same(nn::TripletMarginWithDistanceLoss(
           nn::TripletMarginWithDistanceLossOptions().distance_function(l1_distance).margin(0.5).swap(true))(x, p, n),
       tg::triplet_margin_with_distance_loss(x, p, n, l1_distance, 0.5, true));
  same(nn::TripletMarginWithDistanceLoss()->forward(x, p, n), tg::triplet_margin_with_distance_loss(x, p, n));
  same(F::triplet_margin_with_distance_loss(x, p, n, F::TripletMarginWithDistanceLossFuncOptions().reduction(tg::kNone)),
       tg::triplet_margin_with_distance_loss(x, p, n, {}, 1.0, false, kNone));
  // the given distance is the one called
  int calls = 0;
  const nn::TripletMarginWithDistanceLoss counted(nn::TripletMarginWithDistanceLossOptions().swap(true).distance_function(
      [&calls](const Tensor& a, const Tensor& b) { ++calls; return l1_distance(a, b); }));
  counted(x, p, n);
  CHECK(calls == 3);
}
