// tests/test_sort.cpp: round, sign, sort, topk and kthvalue on the CPU: values against results
// recorded from PyTorch, stability and NaN order (Note [Sort order]), the gradient scattering into the
// selected positions, and the errors. Float64 gradchecks are in test_gradcheck.cpp; CPU-vs-CUDA parity
// in test_cuda.cpp.
#include <cmath>
#include <limits>

#include "testing.h"

using tg::Tensor;

namespace {
const double kNaN = std::numeric_limits<double>::quiet_NaN();

std::vector<int64_t> ints(const Tensor& v) { return v.to_vector<int64_t>(); }
}  // namespace

// Expected values recorded with PyTorch 1.13 (/usr/bin/python3):
//   x = torch.tensor([nan, -0.0, 0.0, 2.5, -2.5, 0.5, 1.5, -3.7, 3.5, -0.5, 1e30])
//   torch.round(x), torch.sign(x)   (float64; float32 gives the same)
TEST_CASE("round: halves to even, as torch.round, sign as torch.sign") {
  for (tg::DType dt : {tg::kFloat64, tg::kFloat32}) {
    CAPTURE(tg::dtype_name(dt));
    Tensor x = tg::from_vector<double>({kNaN, -0.0, 0.0, 2.5, -2.5, 0.5, 1.5, -3.7, 3.5, -0.5, 1e30}).to(dt);
    const auto r = tg::round(x).to_vector<double>();
    const std::vector<double> want_r = {kNaN, -0.0, 0.0, 2, -2, 0, 2, -4, 4, -0.0, 1e30};
    const auto s = tg::sign(x).to_vector<double>();
    const std::vector<double> want_s = {0, 0, 0, 1, -1, 1, 1, -1, 1, -1, 1};
    REQUIRE(r.size() == want_r.size());
    CHECK(std::isnan(r[0]));
    for (std::size_t i = 1; i < r.size(); ++i) {
      CAPTURE(i);
      CHECK(r[i] == doctest::Approx(want_r[i]).epsilon(1e-7));
      CHECK(std::signbit(r[i]) == std::signbit(want_r[i]));   // round(-0.5) is -0
    }
    for (std::size_t i = 0; i < s.size(); ++i) CHECK(s[i] == want_s[i]);
  }
  // the gradient of both is 0 (PyTorch's zeros_like)
  Tensor x = testing::randn64({3, 4}, 5);
  tg::sum(tg::round(x) * 3.0 + tg::sign(x)).backward();
  for (double g : x.grad().to_vector<double>()) CHECK(g == 0);
  CHECK_THROWS_AS(tg::round(tg::from_vector<int64_t>({1, 2})), tg::DTypeError);
}

// Recorded with PyTorch 1.13: x = torch.tensor([3., 1., 2., 1., nan, -1.])
//   torch.sort(x, stable=True)                   -> [-1, 1, 1, 2, 3, nan], [5, 1, 3, 2, 0, 4]
//   torch.sort(x, descending=True, stable=True)  -> [nan, 3, 2, 1, 1, -1], [4, 0, 2, 1, 3, 5]
//   torch.topk(x, 3)                             -> [nan, 3, 2], [4, 0, 2]
TEST_CASE("sort: stable, NaN largest, as torch.sort(stable=True)") {
  for (tg::DType dt : {tg::kFloat32, tg::kFloat64, tg::kFloat16, tg::kBFloat16}) {
    CAPTURE(tg::dtype_name(dt));
    Tensor x = tg::from_vector<double>({3, 1, 2, 1, kNaN, -1}).to(dt);
    tg::SortResult up = tg::sort(x);
    CHECK(ints(up.indices) == std::vector<int64_t>{5, 1, 3, 2, 0, 4});
    const auto v = up.values.to_vector<double>();
    CHECK(v[0] == -1);
    CHECK(v[4] == 3);
    CHECK(std::isnan(v[5]));
    CHECK(up.values.dtype() == dt);
    CHECK(up.indices.dtype() == tg::kInt64);
    tg::SortResult down = tg::sort(x, 0, /*descending=*/true);
    CHECK(ints(down.indices) == std::vector<int64_t>{4, 0, 2, 1, 3, 5});
    tg::SortResult top = tg::topk(x, 3);
    CHECK(ints(top.indices) == std::vector<int64_t>{4, 0, 2});
  }
  // integers and bool sort too; ties keep their order
  Tensor xi = tg::from_vector<int64_t>({4, -2, 4, 0, -2, 7});
  CHECK(ints(tg::sort(xi).values) == std::vector<int64_t>{-2, -2, 0, 4, 4, 7});
  CHECK(ints(tg::sort(xi).indices) == std::vector<int64_t>{1, 4, 3, 0, 2, 5});
  CHECK(ints(tg::sort(xi, -1, true).indices) == std::vector<int64_t>{5, 0, 2, 3, 1, 4});
  Tensor xb = tg::from_vector<int64_t>({1, 0, 1, 0}).to(tg::kBool);
  CHECK(ints(tg::sort(xb).indices) == std::vector<int64_t>{1, 3, 0, 2});
  Tensor x8 = tg::from_vector<int64_t>({100, -100, 5}).to(tg::kInt8);
  CHECK(ints(tg::sort(x8).indices) == std::vector<int64_t>{1, 2, 0});
}

// Recorded with PyTorch 1.13:
//   x = torch.tensor([[0.3, -1.2, 2.2, 0.7], [1.1, 0.4, -0.6, -2.0], [-0.9, 1.8, 0.2, 0.5]])
//   torch.sort(x, dim=0).indices   -> [[2, 0, 1, 1], [0, 1, 2, 2], [1, 2, 0, 0]]
//   torch.topk(x, 2, dim=1).indices -> [[2, 3], [0, 1], [1, 3]]
//   torch.topk(x, 2, dim=1, largest=False).indices -> [[1, 0], [3, 2], [0, 2]]
//   torch.kthvalue(x, 2, dim=1)     -> values [0.3, -0.6, 0.2], indices [0, 2, 2]
//   torch.kthvalue(x, 3, dim=0, keepdim=True).values -> [[1.1, 1.8, 2.2, 0.7]]
TEST_CASE("sort, topk, kthvalue: along any dim, against PyTorch") {
  Tensor x = tg::from_vector<double>({0.3, -1.2, 2.2, 0.7, 1.1, 0.4, -0.6, -2.0, -0.9, 1.8, 0.2, 0.5}, {3, 4});
  CHECK(ints(tg::sort(x, 0).indices) == std::vector<int64_t>{2, 0, 1, 1, 0, 1, 2, 2, 1, 2, 0, 0});
  CHECK(ints(tg::topk(x, 2, 1).indices) == std::vector<int64_t>{2, 3, 0, 1, 1, 3});
  CHECK(tg::topk(x, 2, 1).values.shape() == tg::Shape{3, 2});
  CHECK(ints(tg::topk(x, 2, 1, /*largest=*/false).indices) == std::vector<int64_t>{1, 0, 3, 2, 0, 2});
  tg::SortResult k2 = tg::kthvalue(x, 2, 1);
  CHECK(k2.values.shape() == tg::Shape{3});
  testing::check_values(k2.values, {0.3, -0.6, 0.2});
  CHECK(ints(k2.indices) == std::vector<int64_t>{0, 2, 2});
  tg::SortResult k3 = tg::kthvalue(x, 3, 0, /*keepdim=*/true);
  CHECK(k3.values.shape() == tg::Shape{1, 4});
  testing::check_values(k3.values, {1.1, 1.8, 2.2, 0.7});
  // a non-contiguous input sorts its logical rows
  Tensor xt(x.data().transpose(0, 1));   // (4, 3): its rows are x's columns
  CHECK(ints(tg::sort(xt, 1).indices) == std::vector<int64_t>{2, 0, 1, 0, 1, 2, 1, 2, 0, 1, 2, 0});
  // 0-d and empty inputs
  Tensor s = tg::from_vector<double>({2.5}, {});
  CHECK(tg::sort(s).values.shape() == tg::Shape{});
  CHECK(tg::sort(s).indices.item<int64_t>() == 0);
  CHECK(tg::topk(s, 1).values.item() == 2.5);
  CHECK(tg::sort(tg::zeros({0, 3})).values.shape() == tg::Shape{0, 3});
  CHECK(tg::topk(x, 0, 1).values.shape() == tg::Shape{3, 0});
}

TEST_CASE("sort, topk, kthvalue: the gradient goes to the selected positions") {
  Tensor x = testing::randn64({4, 7}, 11);
  tg::SortResult top = tg::topk(x, 3, 1);
  Tensor w = tg::from_vector<double>({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {4, 3});
  tg::sum(top.values * w).backward();
  const auto g = x.grad().to_vector<double>();
  const auto idx = ints(top.indices);
  std::vector<double> want(28, 0.0);
  for (int r = 0; r < 4; ++r)
    for (int j = 0; j < 3; ++j) want[r * 7 + idx[r * 3 + j]] = 1 + r * 3 + j;
  for (std::size_t i = 0; i < g.size(); ++i) CHECK(g[i] == want[i]);
  CHECK_FALSE(top.indices.requires_grad());
  // kthvalue without keepdim
  Tensor y = testing::randn64({5, 3}, 12);
  tg::SortResult k = tg::kthvalue(y, 2, 0);
  tg::sum(k.values).backward();
  const auto gy = y.grad().to_vector<double>();
  const auto ki = ints(k.indices);
  for (int c = 0; c < 3; ++c)
    for (int r = 0; r < 5; ++r) CHECK(gy[r * 3 + c] == (r == ki[c] ? 1.0 : 0.0));
}

TEST_CASE("sort, topk, kthvalue: bad arguments raise, naming the op") {
  Tensor x = tg::randn({3, 4});
  TG_CHECK_THROWS(tg::sort(x, 2), tg::IndexError, "sort");
  TG_CHECK_THROWS(tg::topk(x, 5), tg::IndexError, "topk: k (5) out of range");
  TG_CHECK_THROWS(tg::topk(x, -1), tg::IndexError, "topk");
  TG_CHECK_THROWS(tg::kthvalue(x, 0), tg::IndexError, "kthvalue: k (0) out of range");
  TG_CHECK_THROWS(tg::kthvalue(x, 5), tg::IndexError, "kthvalue");
}
