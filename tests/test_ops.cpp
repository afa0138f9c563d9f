// tests/test_ops.cpp: forward values of the ops against hand-computed results, NaN propagation,
// empty inputs, the non-differentiable ops, and in-place ops. Gradients: tests/test_gradcheck.cpp.
#include <cmath>
#include <limits>

#include "testing.h"

using tg::Tensor;
using testing::check_values;

namespace {
Tensor vec(std::vector<float> v, tg::Shape s) { return tg::from_vector(v, s); }
const double kNaN = std::numeric_limits<double>::quiet_NaN();
}  // namespace

TEST_CASE("elementwise values and broadcasting") {
  Tensor a = vec({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = vec({10, 20, 30}, {3});
  check_values(a + b, {11, 22, 33, 14, 25, 36});
  check_values(a - b, {-9, -18, -27, -6, -15, -24});
  check_values(a * vec({2, 3}, {2, 1}), {2, 4, 6, 12, 15, 18});
  check_values(b / a, {10, 10, 10, 2.5, 4, 5});
  check_values(2.0 - a, {1, 0, -1, -2, -3, -4});
  check_values(-a + 1.0, {0, -1, -2, -3, -4, -5});
  check_values(tg::pow(a, 2.0), {1, 4, 9, 16, 25, 36});
  check_values(tg::pow(vec({2, 3}, {2}), vec({3, 2}, {2})), {8, 9});
  check_values(tg::sqrt(vec({4, 9}, {2})), {2, 3});
  check_values(tg::abs(vec({-1.5, 2}, {2})), {1.5, 2});
  check_values(tg::relu(vec({-1, 0, 2}, {3})), {0, 0, 2});
  check_values(tg::exp(vec({0, 1}, {2})), {1, std::exp(1.0)}, 1e-6);
  check_values(tg::log(vec({1, std::exp(2.0f)}, {2})), {0, 2}, 1e-6);
  check_values(tg::sigmoid(vec({0}, {1})), {0.5});
  check_values(tg::tanh(vec({0.5}, {1})), {std::tanh(0.5)}, 1e-7);
  check_values(tg::clamp(vec({-2, 0.5, 3}, {3}), -1, 1), {-1, 0.5, 1});
  Tensor c = vec({1, 0, 1}, {3}) != 0.0;
  check_values(tg::where(c, b, vec({-1}, {1})), {10, -1, 30});
  TG_CHECK_THROWS(tg::where(vec({1, 0, 1}, {3}), b, b), tg::DTypeError, "expected condition to be a bool tensor, got float32");
  // 0-d with anything
  check_values(vec({2}, {}) * a, {2, 4, 6, 8, 10, 12});
  CHECK((vec({2}, {}) * vec({3}, {})).dim() == 0);
}

TEST_CASE("comparisons and argmax are not differentiable and give 0/1 and int64") {
  Tensor a = tg::from_vector(std::vector<float>{1, 5, 3}, {3}, tg::TensorOptions().requires_grad(true));
  Tensor b = vec({2, 5, 1}, {3});
  check_values(a == b, {0, 1, 0});
  check_values(a != b, {1, 0, 1});
  check_values(a > b, {0, 0, 1});
  check_values(a < b, {1, 0, 0});
  check_values(a >= b, {0, 1, 1});
  check_values(a <= b, {1, 1, 0});
  check_values(a > 2.0, {0, 1, 1});
  CHECK_FALSE((a > b).requires_grad());
  Tensor m = vec({1, 9, 3, 7, 2, 8}, {2, 3});
  CHECK(m.argmax().item() == 1);
  CHECK(m.argmax().dtype() == tg::kInt64);
  check_values(m.argmax(1), {1, 2});
  check_values(m.argmax(0), {1, 0, 1});
  CHECK(m.argmax(1, true).shape() == tg::Shape{2, 1});
  // accuracy as users write it: int64 == int64, summed
  Tensor labels = tg::from_vector(std::vector<int64_t>{1, 0}, {2});
  CHECK((m.argmax(1) == labels).sum().item() == 1);
}

TEST_CASE("reductions: values dims keepdim empty inputs") {
  Tensor a = vec({1, 2, 3, 4, 5, 6}, {2, 3});
  CHECK(a.sum().item() == 21);
  check_values(a.sum(0), {5, 7, 9});
  check_values(a.sum(1), {6, 15});
  check_values(a.sum(-1, true), {6, 15});
  CHECK(a.sum(1, true).shape() == tg::Shape{2, 1});
  CHECK(a.mean().item() == doctest::Approx(3.5));
  check_values(a.mean(0), {2.5, 3.5, 4.5});
  check_values(a.max(1), {3, 6});
  check_values(a.min(0), {1, 2, 3});
  CHECK(a.max().item() == 6);
  CHECK(a.min().item() == 1);
  check_values(a.t().sum(1), {5, 7, 9});   // non-contiguous input
  // big sums use a double accumulator: no float drift
  Tensor ones = tg::ones({3000001});
  CHECK(ones.sum().item() == 3000001);
  // empty inputs: sum is 0, mean is NaN, max of empty throws
  Tensor e = tg::zeros({0, 3});
  CHECK(e.sum().item() == 0);
  check_values(e.sum(0), {0, 0, 0});
  CHECK(std::isnan(e.mean().item()));
  CHECK(e.sum(1).shape() == tg::Shape{0});
  CHECK(e.max(1).shape() == tg::Shape{0});
  TG_CHECK_THROWS(e.max(), tg::IndexError, "empty");
  TG_CHECK_THROWS(e.max(0), tg::IndexError, "of size 0");
  TG_CHECK_THROWS(e.argmax(), tg::IndexError, "non-empty");
}

TEST_CASE("NaN in gives NaN out: relu clamp max min softmax") {
  Tensor x = tg::from_vector(std::vector<double>{1, kNaN, -2}, {3});
  Tensor r = tg::relu(x);
  CHECK(std::isnan(r.to_vector<double>()[1]));
  CHECK(std::isnan(tg::clamp(x, -1, 1).to_vector<double>()[1]));
  CHECK(std::isnan(x.max().item()));
  CHECK(std::isnan(x.min().item()));
  CHECK(x.argmax().item() == 1);
  const auto s = tg::softmax(x, 0).to_vector<double>();
  for (double v : s) CHECK(std::isnan(v));
}

TEST_CASE("NaN and infinity: clamp with a NaN bound is NaN everywhere, min > max gives max, as PyTorch") {
  // torch 2.15.0: x = torch.tensor([-2.0, 0.5, 3.0, nan, 1.0], requires_grad=True) (dtype as below);
  // y = torch.clamp(x, min=lo, max=hi); y.sum().backward(); y.tolist(), x.grad.tolist()
  const double inf = std::numeric_limits<double>::infinity();
  const struct {
    double lo, hi;
    std::vector<double> y, grad;
  } cases[] = {
      {kNaN, 1.0, {kNaN, kNaN, kNaN, kNaN, kNaN}, {0, 0, 0, 0, 0}},
      {0.0, kNaN, {kNaN, kNaN, kNaN, kNaN, kNaN}, {0, 0, 0, 0, 0}},
      {kNaN, kNaN, {kNaN, kNaN, kNaN, kNaN, kNaN}, {0, 0, 0, 0, 0}},
      {kNaN, -5.0, {kNaN, kNaN, kNaN, kNaN, kNaN}, {0, 0, 0, 0, 0}},   // NaN wins over min > max
      {0.0, 1.0, {0, 0.5, 1, kNaN, 1}, {0, 1, 0, 0, 0}},               // 0 at the bound 1.0 itself
      {-inf, inf, {-2, 0.5, 3, kNaN, 1}, {1, 1, 1, 0, 1}},
      {-2.0, 3.0, {-2, 0.5, 3, kNaN, 1}, {0, 1, 0, 0, 1}},             // both bounds hit: gradient 0 there
      {1.0, 0.0, {0, 0, 0, kNaN, 0}, {0, 0, 0, 0, 0}},                 // min > max: max everywhere
      {0.5, 0.5, {0.5, 0.5, 0.5, kNaN, 0.5}, {0, 0, 0, 0, 0}},
  };
  const auto same = [](const std::vector<double>& got, const std::vector<double>& want) {
    REQUIRE(got.size() == want.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
      CAPTURE(i);
      if (std::isnan(want[i])) CHECK(std::isnan(got[i]));
      else CHECK(got[i] == want[i]);
    }
  };
  for (tg::DType dtype : {tg::kFloat32, tg::kFloat64, tg::kFloat16, tg::kBFloat16}) {
    for (const auto& c : cases) {
      CAPTURE(tg::dtype_name(dtype));
      CAPTURE(c.lo);
      CAPTURE(c.hi);
      Tensor x(tg::from_vector(std::vector<double>{-2.0, 0.5, 3.0, kNaN, 1.0}, {5}).to(dtype).data(), true);
      Tensor y = tg::clamp(x, c.lo, c.hi);
      CHECK(y.dtype() == dtype);
      same(y.to(tg::kFloat64).to_vector<double>(), c.y);
      tg::sum(y).backward();
      same(x.grad().to(tg::kFloat64).to_vector<double>(), c.grad);
      same(x.clamp(c.lo, c.hi).to(tg::kFloat64).to_vector<double>(), c.y);   // the method is the same op
    }
  }
  // strided input: the NaN bound reaches every element of a transposed view too
  Tensor t = tg::from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3}).t();
  for (double v : tg::clamp(t, 0.0, kNaN).to(tg::kFloat64).to_vector<double>()) CHECK(std::isnan(v));
}

// Note [NaN and infinity] (kernels/elementwise.h): the rules, each as PyTorch computes it.
namespace {
const double kInf = std::numeric_limits<double>::infinity();
/// Every value NaN.
bool all_nan(const Tensor& v) {
  for (double x : v.to_vector<double>())
    if (!std::isnan(x)) return false;
  return true;
}
}  // namespace

TEST_CASE("NaN and infinity: a softmax row holding +inf or only -inf is NaN, a -inf among finite values is 0") {
  for (tg::DType dt : {tg::kFloat32, tg::kFloat64}) {
    CAPTURE(tg::dtype_name(dt));
    const Tensor up = tg::from_vector(std::vector<double>{kInf, 1, 2}, {3}).to(dt);
    CHECK(all_nan(tg::softmax(up, 0)));
    CHECK(all_nan(tg::log_softmax(up, 0)));
    const Tensor down = tg::from_vector(std::vector<double>{-kInf, -kInf}, {2}).to(dt);
    CHECK(all_nan(tg::softmax(down, 0)));
    CHECK(all_nan(tg::log_softmax(down, 0)));
    const Tensor mixed = tg::from_vector(std::vector<double>{-kInf, 0, kInf, -kInf, 3, 3}, {3, 2}).to(dt);
    // rows (the contiguous kernel): [-inf, 0] -> [0, 1]; [inf, -inf] -> NaN; [3, 3] -> [.5, .5]
    const auto rows = tg::softmax(mixed, 1).to_vector<double>();
    CHECK(rows[0] == 0);
    CHECK(rows[1] == 1);
    CHECK(std::isnan(rows[2]));
    CHECK(std::isnan(rows[3]));
    CHECK(rows[4] == doctest::Approx(0.5));
    const auto logs = tg::log_softmax(mixed, 1).to_vector<double>();
    CHECK(logs[0] == -kInf);
    CHECK(logs[1] == 0);
    CHECK(std::isnan(logs[2]));
    // columns (the strided kernel): [-inf, inf, 3] -> NaN; [0, -inf, 3] -> [e^-3 / (1 + e^-3), 0, ...]
    const auto cols = tg::softmax(mixed, 0).to_vector<double>();
    CHECK(std::isnan(cols[0]));
    CHECK(std::isnan(cols[2]));
    CHECK(std::isnan(cols[4]));
    CHECK(cols[1] == doctest::Approx(std::exp(-3.0) / (1 + std::exp(-3.0))));
    CHECK(cols[3] == 0);
    CHECK(cols[5] == doctest::Approx(1 / (1 + std::exp(-3.0))));
    // a NaN anywhere in the row: the whole row
    CHECK(all_nan(tg::softmax(tg::from_vector(std::vector<double>{1, kNaN, kInf}, {3}).to(dt), 0)));
  }
}

TEST_CASE("NaN and infinity: cross-entropy of a row with +inf is NaN, a -inf target logit gives +inf") {
  for (tg::DType dt : {tg::kFloat32, tg::kFloat64}) {
    CAPTURE(tg::dtype_name(dt));
    Tensor logits = tg::from_vector(std::vector<double>{kInf, 1, 2, -kInf, 0, 1, 0.5, 0.25, 0}, {3, 3}).to(dt);
    logits.set_requires_grad(true);
    const Tensor target = tg::from_vector(std::vector<int64_t>{1, 0, 2}, {3});
    const auto loss = tg::cross_entropy(logits, target, tg::Reduction::None).to_vector<double>();
    CHECK(std::isnan(loss[0]));
    CHECK(loss[1] == kInf);
    CHECK(std::isfinite(loss[2]));
    CHECK(std::isnan(tg::cross_entropy(logits, target).item()));   // the mean sees the NaN
    // gradients: the +inf row NaN; the -inf row is softmax - onehot: -1 at the target, finite elsewhere
    tg::cross_entropy(logits, target, tg::Reduction::Sum).backward();
    const auto g = logits.grad().to_vector<double>();
    for (int c = 0; c < 3; ++c) CHECK(std::isnan(g[c]));
    CHECK(g[3] == -1);
    CHECK(std::isfinite(g[4]));
    for (int c = 6; c < 9; ++c) CHECK(std::isfinite(g[c]));
    // an ignored row does not reach the mean, even when it is NaN
    const Tensor ignored = tg::from_vector(std::vector<int64_t>{-100, 2, 2}, {3});
    const double mean = tg::cross_entropy(logits.detach(), ignored).item();
    CHECK(std::isfinite(mean));
  }
}

TEST_CASE("NaN and infinity: pow's gradients are 0 where the function is locally constant") {
  for (tg::DType dt : {tg::kFloat32, tg::kFloat64}) {
    CAPTURE(tg::dtype_name(dt));
    // (a, b) = (0, 2), (0, 0), (2, 0), (3, 2)
    Tensor a = tg::from_vector(std::vector<double>{0, 0, 2, 3}, {4}).to(dt);
    Tensor b = tg::from_vector(std::vector<double>{2, 0, 0, 2}, {4}).to(dt);
    a.set_requires_grad(true);
    b.set_requires_grad(true);
    tg::pow(a, b).sum().backward();
    check_values(a.grad(), {0, 0, 0, 6}, 1e-6);                            // b a^(b-1), 0 where b == 0
    check_values(b.grad(), {0, 0, std::log(2.0), 9 * std::log(3.0)}, 1e-6);   // a^b ln a, 0 where a == 0
    Tensor x = tg::from_vector(std::vector<double>{0, 1}, {2}).to(dt);
    x.set_requires_grad(true);
    tg::pow(x, 0.0).sum().backward();
    check_values(x.grad(), {0, 0});
    // broadcast: one base against several exponents
    Tensor base = tg::zeros({1}, tg::TensorOptions().dtype(dt).requires_grad(true));
    Tensor exps = tg::from_vector(std::vector<double>{0, 0.5, 3}, {3}).to(dt);
    exps.set_requires_grad(true);
    tg::pow(base, exps).sum().backward();
    check_values(exps.grad(), {0, 0, 0});
  }
}

TEST_CASE("matmul: 2-D batched mixed transposed operands against a naive loop") {
  tg::manual_seed(3);
  for (auto [M, K, N] : {std::tuple<int64_t, int64_t, int64_t>{257, 33, 17}, {1, 5, 1}, {4, 1, 3}}) {
    Tensor a = tg::randn({M, K}, tg::TensorOptions().dtype(tg::kFloat64));
    Tensor b = tg::randn({K, N}, tg::TensorOptions().dtype(tg::kFloat64));
    const auto av = a.to_vector<double>(), bv = b.to_vector<double>();
    std::vector<double> ref(static_cast<std::size_t>(M * N), 0.0);
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j)
        for (int64_t k = 0; k < K; ++k) ref[i * N + j] += av[i * K + k] * bv[k * N + j];
    // the loop and the BLAS each within gemm_error_bound of the exact product: Note [Derived tolerances]
    const Tensor want = tg::from_vector(ref, {M, N}), bound = testing::gemm_error_bound(a, b) * 2.0;
    testing::check_within(a.matmul(b), want, bound);
    testing::check_within(tg::matmul(a.t().contiguous().t(), b.t().contiguous().t()), want, bound);   // transposed storage
  }
  Tensor A = tg::randn({3, 4, 5}), B = tg::randn({3, 5, 2});
  Tensor C = A.matmul(B);
  CHECK(C.shape() == tg::Shape{3, 4, 2});
  for (int64_t i = 0; i < 3; ++i) {   // float32, one batch entry at a time: within twice the bound
    Tensor Ai(A.data().select(0, i)), Bi(B.data().select(0, i)), Ci(C.data().select(0, i));
    testing::check_within(Ci, Ai.matmul(Bi), testing::gemm_error_bound(Ai, Bi) * 2.0);
  }
  Tensor W = tg::randn({5, 2});
  Tensor D = A.matmul(W);   // (3, 4, 5) @ (5, 2): the 2-D operand is shared by every batch entry
  for (int64_t i = 0; i < 3; ++i) {
    Tensor Ai(A.data().select(0, i));
    testing::check_within(Tensor(D.data().select(0, i)), Ai.matmul(W), testing::gemm_error_bound(Ai, W) * 2.0);
  }
  CHECK(tg::matmul(tg::zeros({2, 0}), tg::zeros({0, 3})).sum().item() == 0);
  CHECK(tg::matmul(tg::ones({2, 0}), tg::ones({0, 3})).shape() == tg::Shape{2, 3});
}

TEST_CASE("linear equals matmul with the transposed weight plus bias") {
  tg::manual_seed(4);
  Tensor x = tg::randn({7, 5}), w = tg::randn({3, 5}), b = tg::randn({3});
  // Both sides sum K + 1 = 6 terms (the bias in or after the product) in some order: each within
  // gamma_6 (|x| |w|^T + |b|) of the exact value (Note [Derived tolerances]).
  const Tensor x64(x.data().to(tg::kFloat64)), w64(w.data().to(tg::kFloat64)), b64(b.data().to(tg::kFloat64));
  const Tensor bound = (tg::matmul(tg::abs(x64), tg::abs(w64).t()) + tg::abs(b64)) * (2 * testing::gamma_n(6, tg::kFloat32));
  testing::check_within(tg::linear(x, w, b), x.matmul(w.t()) + b, bound);
  testing::check_within(tg::linear(x, w), x.matmul(w.t()), testing::gemm_error_bound(x, w.t()) * 2.0);
}

TEST_CASE("softmax log_softmax and cross_entropy values - stability for logits of +-1e4") {
  Tensor x = tg::from_vector(std::vector<double>{1, 2, 3, 1, 1, 1}, {2, 3});
  const double e1 = std::exp(1.0), e2 = std::exp(2.0), e3 = std::exp(3.0), s = e1 + e2 + e3;
  check_values(tg::softmax(x, 1), {e1 / s, e2 / s, e3 / s, 1. / 3, 1. / 3, 1. / 3}, 1e-12);
  check_values(tg::log_softmax(x, 1), {1 - std::log(s), 2 - std::log(s), 3 - std::log(s), -std::log(3.0), -std::log(3.0), -std::log(3.0)}, 1e-12);
  check_values(tg::softmax(x, 0).sum(0), {1, 1, 1}, 1e-12);
  Tensor t = tg::from_vector(std::vector<int64_t>{2, 0}, {2});
  const double l0 = std::log(s) - 3, l1 = std::log(3.0);
  CHECK(tg::cross_entropy(x, t).item() == doctest::Approx((l0 + l1) / 2).epsilon(1e-12));
  CHECK(tg::cross_entropy(x, t, tg::Reduction::Sum).item() == doctest::Approx(l0 + l1).epsilon(1e-12));
  check_values(tg::cross_entropy(x, t, tg::Reduction::None), {l0, l1}, 1e-12);
  // equals the composite -log_softmax[target]
  CHECK(tg::cross_entropy(x, t).item() ==
        doctest::Approx(-(tg::gather(tg::log_softmax(x, 1), 1, t.unsqueeze(1))).mean().item()).epsilon(1e-12));
  // +-1e4 logits: finite loss and gradient
  Tensor big = tg::from_vector(std::vector<float>{1e4f, -1e4f, 0, -1e4f, 1e4f, 1e4f}, {2, 3},
                                 tg::TensorOptions().requires_grad(true));
  Tensor loss = tg::cross_entropy(big, tg::from_vector(std::vector<int64_t>{1, 2}, {2}));
  CHECK(loss.item() == doctest::Approx((2e4 + std::log(2.0)) / 2).epsilon(1e-6));
  loss.backward();
  for (float g : big.grad().to_vector<float>()) CHECK(std::isfinite(g));
  check_values(tg::softmax(big, 1), {1, 0, 0, 0, 0.5, 0.5}, 1e-6);
}

TEST_CASE("mse_loss dropout statistics and eval identity") {
  Tensor a = vec({1, 2, 3}, {3}), b = vec({1, 4, 0}, {3});
  CHECK(tg::mse_loss(a, b).item() == doctest::Approx(13.0 / 3));
  CHECK(tg::mse_loss(a, b, tg::Reduction::Sum).item() == doctest::Approx(13.0));
  tg::manual_seed(11);
  Tensor x = tg::ones({100000});
  Tensor y = tg::dropout(x, 0.25, true);
  const auto v = y.to_vector<float>();
  int64_t zeros = 0;
  for (float f : v) {
    if (f == 0) ++zeros;
    else CHECK(f == doctest::Approx(1 / 0.75));
  }
  CHECK(std::fabs(zeros / 100000.0 - 0.25) < 0.01);
  CHECK(tg::dropout(x, 0.25, false).data().storage() == x.data().storage());
  CHECK(tg::dropout(x, 1.0, true).sum().item() == 0);
  TG_CHECK_THROWS(tg::dropout(x, 1.5), tg::Error, "between 0 and 1");
}

TEST_CASE("cat stack index_select gather values") {
  Tensor a = vec({1, 2, 3, 4}, {2, 2}), b = vec({5, 6}, {1, 2});
  check_values(tg::cat({a, b}, 0), {1, 2, 3, 4, 5, 6});
  check_values(tg::cat({a, a}, 1), {1, 2, 1, 2, 3, 4, 3, 4});
  check_values(tg::stack({a, a}, 0), {1, 2, 3, 4, 1, 2, 3, 4});
  CHECK(tg::stack({a, a}, 2).shape() == tg::Shape{2, 2, 2});
  check_values(tg::stack({a, a}, 2), {1, 1, 2, 2, 3, 3, 4, 4});
  Tensor idx = tg::from_vector(std::vector<int64_t>{1, 1, 0}, {3});
  check_values(a.index_select(0, idx), {3, 4, 3, 4, 1, 2});
  check_values(a.index_select(1, idx), {2, 2, 1, 4, 4, 3});
  Tensor g = tg::from_vector(std::vector<int64_t>{1, 0, 0, 0}, {2, 2});
  check_values(a.gather(1, g), {2, 1, 3, 3});
  check_values(a.gather(0, g), {3, 2, 1, 2});
}

TEST_CASE("views as Tensors: reshape transpose permute expand flatten") {
  Tensor x = tg::arange(24).reshape({2, 3, 4});
  CHECK(x.permute({2, 0, 1}).shape() == tg::Shape{4, 2, 3});
  CHECK(x.transpose(0, 2).contiguous().view({-1}).to_vector<float>()[1] == 12);
  CHECK(tg::flatten(x, 1).shape() == tg::Shape{2, 12});
  CHECK(tg::flatten(x).shape() == tg::Shape{24});
  CHECK(x.unsqueeze(0).squeeze(0).shape() == x.shape());
  CHECK(vec({1, 2}, {2, 1}).expand({2, 3}).to_vector<float>() == std::vector<float>{1, 1, 1, 2, 2, 2});
  TG_CHECK_THROWS(x.reshape({5, -1}), tg::ShapeError, "is invalid for input of size 24");
  TG_CHECK_THROWS(x.view({-1, -1}), tg::ShapeError, "only one dimension can be inferred");
  TG_CHECK_THROWS(x.expand({3, 3, 4}), tg::ShapeError, "must match the existing size");
  TG_CHECK_THROWS(x.permute({0, 0, 1}), tg::ShapeError, "repeated dim");
}

TEST_CASE("in-place ops change values and bump the version counter") {
  Tensor x = vec({1, 2, 3}, {3});
  const uint64_t v0 = x.data().version();
  x.add_(vec({1, 1, 1}, {3}));
  x.mul_(2.0);
  x.sub_(1.0);
  check_values(x, {3, 5, 7});
  CHECK(x.data().version() == v0 + 3);
  x.fill_(4.0);
  check_values(x, {4, 4, 4});
  x.zero_();
  check_values(x, {0, 0, 0});
  x.copy_(vec({9}, {1}));   // broadcast source
  check_values(x, {9, 9, 9});
  Tensor view = x.reshape({3, 1});
  view.add_(1.0);           // writes through the view
  check_values(x, {10, 10, 10});
  TG_CHECK_THROWS(x.add_(vec({1, 2}, {2})), tg::ShapeError, "must match");
  TG_CHECK_THROWS(vec({1}, {1}).add_(vec({1, 2}, {2})), tg::ShapeError, "doesn't match the broadcast shape");
}

TEST_CASE("cross_entropy ignore_index and label_smoothing match their definitions") {
  tg::manual_seed(12);
  Tensor x = tg::randn({6, 4}, tg::TensorOptions().dtype(tg::kFloat64));
  Tensor t = tg::from_vector(std::vector<int64_t>{0, 3, -100, 2, 1, -100}, {6});
  // ignore_index: the mean runs over the 4 rows that are not ignored
  Tensor keep = tg::from_vector(std::vector<int64_t>{0, 1, 3, 4}, {4});
  const double subset = tg::cross_entropy(x.index_select(0, keep), t.index_select(0, keep)).item();
  CHECK(tg::cross_entropy(x, t).item() == doctest::Approx(subset).epsilon(1e-12));
  testing::check_values(tg::cross_entropy(x, t, tg::Reduction::None).index_select(0, tg::from_vector(std::vector<int64_t>{2, 5}, {2})), {0, 0});
  // label smoothing s: (1 - s) nll + s mean_c(-log_softmax)
  Tensor tk = t.index_select(0, keep), xk = x.index_select(0, keep);
  const double s = 0.3;
  Tensor logp = tg::log_softmax(xk, 1);
  const double nll = -tg::gather(logp, 1, tk.unsqueeze(1)).mean().item();
  const double uniform = -logp.mean(1).mean().item();
  CHECK(tg::cross_entropy(xk, tk, tg::Reduction::Mean, -100, s).item() == doctest::Approx((1 - s) * nll + s * uniform).epsilon(1e-12));
  tg::nn::CrossEntropyLoss smoothed(tg::nn::CrossEntropyLossOptions().label_smoothing(s).ignore_index(-100));
  CHECK(smoothed(x, t).item() == doctest::Approx((1 - s) * nll + s * uniform).epsilon(1e-12));
  // every row ignored: the mean is NaN as in PyTorch; the gradient is zero
  Tensor xa = tg::randn({2, 3}, tg::TensorOptions().requires_grad(true));
  Tensor all_ignored = tg::from_vector(std::vector<int64_t>{-100, -100}, {2});
  CHECK(std::isnan(tg::cross_entropy(xa, all_ignored).item()));
  tg::cross_entropy(xa, all_ignored, tg::Reduction::Sum).backward();
  CHECK(xa.grad().abs().sum().item() == 0);
  TG_CHECK_THROWS(tg::cross_entropy(x, t, tg::Reduction::Mean, -100, 1.5), tg::Error, "label_smoothing must be in [0, 1]");
  TG_CHECK_THROWS(tg::cross_entropy(x, t, tg::Reduction::Mean, 7), tg::IndexError, "target -100 is out of bounds");
}

TEST_CASE("set_flush_denormal flushes subnormal floats to zero in CPU kernels and can be undone") {
  Tensor tiny = tg::full({4}, 1e-40);   // a float32 subnormal
  CHECK((tiny * 1.0).to_vector<float>()[0] > 0);
  REQUIRE(tg::set_flush_denormal(true));
  CHECK((tiny * 1.0).to_vector<float>()[0] == 0);
  Tensor big = tg::full({1 << 20}, 1e-40);   // large enough for the parallel path
  CHECK((big * 1.0).sum().item() == 0);
  tg::set_flush_denormal(false);
  CHECK((tiny * 1.0).to_vector<float>()[0] > 0);
}

TEST_CASE("add and sub with alpha, as torch.add(input, other, alpha=...) and add_(other, alpha)") {
  const Tensor a = testing::vals(6, 0.5, 1.0, {2, 3}, true), b = testing::vals(3, -0.2, 0.7, {3}, true);
  const Tensor y = tg::add(a, b, 2.5);   // b broadcast over the rows
  testing::check_close(y, a.detach() + b.detach() * 2.5, 1e-15, 0);
  y.sum().backward();
  testing::check_close(a.grad(), tg::ones({2, 3}, tg::kFloat64), 0, 0);
  testing::check_close(b.grad(), tg::full({3}, 5.0, tg::TensorOptions().dtype(tg::kFloat64)), 1e-15, 0);   // 2 rows x 2.5
  testing::check_close(a.sub(b, -0.5), a.detach() + b.detach() * 0.5, 1e-15, 0);
  testing::check_close(tg::sub(a, b, 1.0), a.detach() - b.detach(), 0, 0);
  // integers: an integral alpha keeps the dtype; a fractional one is refused, as in PyTorch
  const Tensor i = tg::from_vector(std::vector<int64_t>{1, 2, 3}, {3});
  const Tensor j = tg::add(i, i, 3.0);
  CHECK(j.dtype() == tg::kInt64);
  CHECK(j.to_vector<int64_t>() == std::vector<int64_t>{4, 8, 12});
  TG_CHECK_THROWS(tg::add(i, i, 0.5), tg::DTypeError, "add: For integral input tensors, argument alpha must not be a floating point number.");
  const Tensor flags = tg::from_vector(std::vector<double>{1, 0}, {2}).to(tg::kBool);
  TG_CHECK_THROWS(tg::add(flags, flags, 2.0), tg::DTypeError, "Boolean alpha only supported for Boolean results.");
  // in place: *this += alpha o; the result's dtype is this one's
  Tensor acc = tg::zeros({3}, tg::kFloat64);
  acc.add_(tg::ones({3}, tg::kFloat64), 0.25).sub_(tg::ones({3}, tg::kFloat64), 1.5);
  testing::check_close(acc, tg::full({3}, -1.25, tg::TensorOptions().dtype(tg::kFloat64)), 0, 0);
  Tensor counts = tg::zeros({3}, tg::kInt64);
  TG_CHECK_THROWS(counts.add_(i, 0.5), tg::DTypeError, "add_: For integral input tensors");
  counts.add_(i, 2.0);
  CHECK(counts.to_vector<int64_t>() == std::vector<int64_t>{2, 4, 6});
}

TEST_CASE("scatter_add and index_add against PyTorch: values, gradients, errors") {
  // tests/data/scatter_reference.py: x = vals(12, 0, 1).reshape(3, 4), loss = sum(y * w), w = vals(12, -1, 0.5)
  const Tensor x = testing::vals(12, 0, 1, {3, 4}, true), w = testing::vals(12, -1, 0.5, {3, 4});
  const Tensor src = testing::vals(6, 0.5, 2, {2, 3}, true);
  const Tensor index = tg::from_vector(std::vector<int64_t>{0, 2, 2, 1, 0, 3}, {2, 3});
  const Tensor y = tg::scatter_add(x, 1, index, src);
  testing::check_close(y, tg::from_vector(std::vector<double>{1.6682550269259517, 0.9916648104524686, 3.4066896450845388,
                                                               -0.9161659367494552, -1.3937999136169625, -0.7538921091107104,
                                                               0.9407305566797726, 1.5817284083145908, -0.9809362300664916,
                                                               -0.44964746453459986, 0.7403758899524486, 0.8457468311429334},
                                          {3, 4}),
                       1e-12, 1e-14);
  (y * w).sum().backward();
  testing::check_close(x.grad(), w, 0, 0);
  testing::check_close(src.grad(), tg::from_vector(std::vector<double>{-0.8052908288456747, -0.9294399959700664,
                                                                       -0.9294399959700664, -0.7107801178058999,
                                                                       -1.3156333189361604, -1.0375755602309047},
                                                   {2, 3}),
                       1e-12, 1e-14);
  const Tensor s2 = testing::vals(8, 1, 1, {2, 4}, true);
  const Tensor y2 = tg::index_add(x.detach(), 0, tg::from_vector(std::vector<int64_t>{2, 0}, {2}), s2, -1.5);
  testing::check_close(y2, tg::from_vector(std::vector<double>{-0.1636817008828682, -1.3759948361298318, -2.769975826959792,
                                                                -2.303439256056741, -0.6312666378723208, 0.5784397643882001,
                                                                0.9407305566797726, -0.0751511204618093, -3.0650637435294676,
                                                                -3.4371446802133025, -0.9713041221373521, 0.7199957362671162},
                                           {3, 4}),
                       1e-12, 1e-14);
  (y2 * w).sum().backward();
  testing::check_close(s2.grad(), tg::from_vector(std::vector<double>{2.2357021725498685, 1.8372355984009499, 0.9447180825356636,
                                                                      0.8656898766428001, 1.2079362432685121, 0.7562513921606486,
                                                                      1.3941599939550997, 2.1871244525620916},
                                                  {2, 4}),
                       1e-12, 1e-14);
  // a src larger than index: only its first index.size(d) entries are read, and only they get a gradient
  // (PyTorch's backward refuses this case; the gradient here is the derivative, zeros elsewhere)
  const Tensor big = testing::vals(15, 0.5, 2, {3, 5}, true);
  tg::scatter_add(x.detach(), 1, index, big).sum().backward();
  CHECK(big.grad().to_vector<double>() == std::vector<double>{1, 1, 1, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0});
  TG_CHECK_THROWS(tg::scatter_add(x, 1, index, src.to(tg::kFloat32)), tg::DTypeError,
                  "scatter_add(): Expected self.dtype to be equal to src.dtype");
  TG_CHECK_THROWS(tg::index_add(x, 0, tg::from_vector(std::vector<int64_t>{0, 1, 2}, {3}), s2), tg::ShapeError,
                  "index_add(): Number of indices (3) should be equal to source.size(dim): (2), for dim: 0");
  TG_CHECK_THROWS(tg::scatter_add(x, 1, tg::zeros({4, 1}, tg::kInt64), src), tg::ShapeError, "Expected index [4, 1] to be smaller");
  TG_CHECK_THROWS(tg::scatter_add(x, 1, tg::from_vector(std::vector<int64_t>{0, 9}, {1, 2}), src), tg::IndexError, "");
}
