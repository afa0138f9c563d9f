// tests/test_autocast.cpp: tg::amp::AutocastGuard: the op lists (Note [Autocast op lists]), nesting,
// per-thread state, the cache of parameter casts, gradients, and errors.
#include <thread>

#include "testing.h"

using tg::Tensor;
using namespace testing;

namespace {
Tensor param(tg::Shape s, uint64_t seed) {
  tg::manual_seed(seed);
  return tg::randn(s, tg::TensorOptions().requires_grad(true));
}
}  // namespace

TEST_CASE("autocast: matmul and linear run in the lower precision, losses and sums in float32") {
  using namespace tg;
  Tensor x = param({4, 8}, 1), w = param({3, 8}, 2), b = param({3}, 3);
  const Tensor target = from_vector(std::vector<int64_t>{0, 2, 1, 1});
  amp::AutocastGuard autocast(Device::cpu(), kBFloat16);
  CHECK(amp::is_autocast_enabled(DeviceType::CPU));
  CHECK(amp::get_autocast_dtype(DeviceType::CPU) == kBFloat16);
  Tensor y = linear(x, w, b);
  CHECK(y.dtype() == kBFloat16);
  CHECK(matmul(x, t(w)).dtype() == kBFloat16);
  CHECK(relu(y).dtype() == kBFloat16);                 // other ops: their input's dtype
  CHECK((y + b).dtype() == kFloat32);                  // type promotion, as in PyTorch
  CHECK(softmax(y, 1).dtype() == kFloat32);
  CHECK(log_softmax(y, 1).dtype() == kFloat32);
  CHECK(sum(y).dtype() == kFloat32);
  CHECK(mean(y).dtype() == kFloat32);
  CHECK(exp(y).dtype() == kFloat32);
  CHECK(mse_loss(y, y.detach()).dtype() == kFloat32);
  Tensor loss = cross_entropy(y, target);
  CHECK(loss.dtype() == kFloat32);
  loss.backward();
  CHECK(w.grad().dtype() == kFloat32);   // gradients come back in the parameters' dtype
  CHECK(b.grad().dtype() == kFloat32);
  CHECK(x.grad().dtype() == kFloat32);
}

TEST_CASE("autocast: gradients under bfloat16 autocast match float32 within bfloat16 rounding") {
  using namespace tg;
  Tensor x = param({16, 32}, 4), w = param({10, 32}, 5), b = param({10}, 6);
  const Tensor target = from_vector(std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1, 2, 3, 4, 5});
  Tensor x2(x.data().clone(), true), w2(w.data().clone(), true), b2(b.data().clone(), true);
  {
    amp::AutocastGuard autocast(Device::cpu());   // the CPU's default: bfloat16
    cross_entropy(linear(x, w, b), target).backward();
  }
  cross_entropy(linear(x2, w2, b2), target).backward();
  // inputs rounded to bfloat16 (u = 2^-8) before a product of K = 32 terms, the product rounded once
  const double tol = 8 * unit_roundoff(kBFloat16);
  for (auto [got, want] : {std::pair{w.grad(), w2.grad()}, std::pair{b.grad(), b2.grad()}, std::pair{x.grad(), x2.grad()}}) {
    const auto g = got.to_vector<double>(), r = want.to_vector<double>();
    double scale = 0;
    for (double v : r) scale = std::max(scale, std::fabs(v));
    for (std::size_t i = 0; i < g.size(); ++i) CHECK(std::fabs(g[i] - r[i]) <= tol * scale);
  }
}

TEST_CASE("autocast: regions nest and restore; enabled = false switches off; other threads and devices unaffected") {
  using namespace tg;
  Tensor a = param({2, 2}, 7);
  CHECK(matmul(a, a).dtype() == kFloat32);
  {
    amp::AutocastGuard outer(Device::cpu(), kBFloat16);
    CHECK(matmul(a, a).dtype() == kBFloat16);
    {
      amp::AutocastGuard off(Device::cpu(), kBFloat16, /*enabled=*/false);
      CHECK_FALSE(amp::is_autocast_enabled(DeviceType::CPU));
      CHECK(matmul(a, a).dtype() == kFloat32);
      {
        amp::AutocastGuard inner(Device::cpu(), kFloat16);
        CHECK(matmul(a, a).dtype() == kFloat16);
      }
      CHECK(matmul(a, a).dtype() == kFloat32);
    }
    CHECK(matmul(a, a).dtype() == kBFloat16);
    DType seen = kFloat64;
    std::thread other([&] { seen = matmul(a, a).dtype(); });   // autocast is per thread
    other.join();
    CHECK(seen == kFloat32);
  }
  CHECK(matmul(a, a).dtype() == kFloat32);
  {
    amp::AutocastGuard gpu(Device::cuda());   // CUDA autocast does not touch CPU tensors
    CHECK(amp::is_autocast_enabled(DeviceType::CUDA));
    CHECK(amp::get_autocast_dtype(DeviceType::CUDA) == kFloat16);
    CHECK(matmul(a, a).dtype() == kFloat32);
  }
  CHECK_FALSE(amp::is_autocast_enabled(DeviceType::CUDA));
  TG_CHECK_THROWS(amp::AutocastGuard(Device::cpu(), kFloat32), DTypeError,
                  "the autocast dtype must be float16 or bfloat16, got float32");
}

TEST_CASE("autocast: a parameter is cast once per region, again after it changes or the region ends") {
  // A float64 operand keeps matmul on the cast path on the CPU too (float32 and bfloat16 operands
  // alone are rounded instead: Note [Autocast products through float32]).
  using namespace tg;
  Tensor w = param({3, 3}, 8);
  Tensor x(param({2, 3}, 9).data().to(kFloat64), true);
  std::shared_ptr<Node> first, second;
  {
    amp::AutocastGuard autocast(Device::cpu(), kBFloat16);
    Tensor y1 = matmul(x, w), y2 = matmul(x, w);
    // matmul's second input is the cast of w: one cast node shared by both uses
    first = y1.grad_fn()->next[1].fn;
    REQUIRE(first != nullptr);
    CHECK(first == y2.grad_fn()->next[1].fn);
    sum(y1 + y2).backward();
    CHECK(w.grad().dtype() == kFloat32);
    prim::fill_(w.data(), 1.0);   // a new version: the next use casts again
    second = matmul(x, w).grad_fn()->next[1].fn;
    CHECK(second != first);
  }
  amp::AutocastGuard again(Device::cpu(), kBFloat16);
  CHECK(matmul(x, w).grad_fn()->next[1].fn != second);   // the cache ended with the region
}

TEST_CASE("autocast: linear's rounded weight is made once per region, again after it changes or the region ends") {
  // Note [Autocast products through float32]: on the CPU linear multiplies the weight rounded to the
  // region's dtype, cached like a cast. A write that bypasses the version counter shows which
  // rounding a call used: the cached one until the version changes or the region ends.
  using namespace tg;
  Tensor w = param({3, 3}, 8);
  const Tensor x = tg::randn({2, 3});
  auto poke = [&](float v) { w.data().data<float>()[0] = v; };   // no version bump
  {
    amp::AutocastGuard autocast(Device::cpu(), kBFloat16);
    const std::vector<double> y1 = linear(x, w).to_vector<double>();
    poke(100.0f);
    CHECK(linear(x, w).to_vector<double>() == y1);   // the cached rounding
    prim::fill_(w.data(), 1.0);                      // a new version: rounded again
    const std::vector<double> y3 = linear(x, w).to_vector<double>();
    CHECK(y3 != y1);
    const std::vector<double> x_sums = sum(x, {1}).to(kBFloat16).to(kFloat32).to_vector<double>();
    for (std::size_t i = 0; i < y3.size(); ++i) CHECK(y3[i] == doctest::Approx(x_sums[i / 3]).epsilon(0.02));
    poke(2.0f);
    CHECK(linear(x, w).to_vector<double>() == y3);
  }
  amp::AutocastGuard again(Device::cpu(), kBFloat16);
  CHECK(linear(x, w).to_vector<double>() != std::vector<double>(6, 0.0));
  Tensor y = linear(x, w);   // the cache ended with the region: w[0][0] = 2 counts now
  const Tensor w_now = Tensor(w.data().clone());
  amp::AutocastGuard off(Device::cpu(), kBFloat16, false);
  CHECK(y.to_vector<double>() ==
        linear(x.to(kBFloat16), w_now.to(kBFloat16)).to_vector<double>());
}

TEST_CASE("autocast: linear on the CPU gives the bits of the casts, the 16-bit product and the casts' backward") {
  // Note [Autocast products through float32]: linear rounds float32 operands in place of the cast
  // nodes; the result and every gradient must be the bits of the cast path, computed here outside
  // autocast with explicit differentiable casts, for the cases the path saves differently.
  using namespace tg;
  // the path under test: bfloat16 products through float32, also on a CPU that has them natively
  const testing::Bf16ProductsThroughFloat32 through_float32;
  for (DType lowp : {kBFloat16, kFloat16}) {
    CAPTURE(dtype_name(lowp));
    struct Case {
      const char* name;
      bool x_grad, x_lowp, bias, three_d;
    };
    for (const Case c : {Case{"caller's batch, bias", false, false, true, false},
                         Case{"input that requires grad, no bias", true, false, false, false},
                         Case{"lower-precision input, bias", true, true, true, false},
                         Case{"3-D input that requires grad, bias", true, false, true, true}}) {
      CAPTURE(c.name);
      tg::manual_seed(31);
      const Shape xs = c.three_d ? Shape{2, 5, 24} : Shape{10, 24};
      RawTensor xd = tg::randn(xs).data();
      if (c.x_lowp) xd = xd.to(lowp);
      const RawTensor wd = tg::randn({7, 24}).data(), bd = tg::randn({7}).data();
      Tensor x(xd.clone(), c.x_grad), w(wd.clone(), true), b(bd.clone(), true);
      Tensor x2(xd.clone(), c.x_grad), w2(wd.clone(), true), b2(bd.clone(), true);
      Shape ys = xs;
      ys.back() = 7;
      const Tensor upstream = tg::randn(ys).to(lowp);
      Tensor y;
      {
        amp::AutocastGuard autocast(Device::cpu(), lowp);
        y = c.bias ? linear(x, w, b) : linear(x, w);
        REQUIRE(y.grad_fn() != nullptr);
        // no cast nodes: linear's inputs are the leaves themselves
        CHECK(y.grad_fn()->next[1].fn == nullptr);
        CHECK(y.grad_fn()->next[1].leaf == w.impl());
      }
      y.backward(upstream);
      const Tensor x2c = c.x_lowp ? x2 : x2.to(lowp);
      const Tensor y2 = c.bias ? linear(x2c, w2.to(lowp), b2.to(lowp)) : linear(x2c, w2.to(lowp));
      y2.backward(upstream);
      CHECK(y.dtype() == lowp);
      CHECK(y.shape() == y2.shape());
      CHECK(y.to_vector<double>() == y2.to_vector<double>());
      CHECK(w.grad().dtype() == kFloat32);
      CHECK(w.grad().to_vector<double>() == w2.grad().to_vector<double>());
      if (c.bias) CHECK(b.grad().to_vector<double>() == b2.grad().to_vector<double>());
      if (c.x_grad) {
        CHECK(x.grad().dtype() == x.dtype());
        CHECK(x.grad().to_vector<double>() == x2.grad().to_vector<double>());
      }
    }
  }
}

TEST_CASE("autocast: matmul on the CPU gives the bits of the casts, the 16-bit product and the casts' backward") {
  // Note [Autocast products through float32] for matmul: float32 operands rounded in place of the cast
  // nodes, a gradient of an operand broadcast over the batch summed in the region's dtype. Compared
  // bit for bit with the cast path, computed outside autocast with explicit differentiable casts.
  using namespace tg;
  // the path under test: bfloat16 products through float32, also on a CPU that has them natively
  const testing::Bf16ProductsThroughFloat32 through_float32;
  for (DType lowp : {kBFloat16, kFloat16}) {
    const std::string lowp_name = dtype_name(lowp);
    CAPTURE(lowp_name);
    struct Case {
      const char* name;
      Shape a, b;
      bool a_lowp, b_lowp, a_intermediate;
    };
    for (const Case& c : {Case{"float32 leaf times a parameter", {10, 24}, {24, 7}, false, false, false},
                         Case{"batched intermediate times a parameter broadcast over the batch", {3, 5, 24}, {24, 7}, false, false, true},
                         Case{"parameter broadcast over a lower-precision batch", {5, 24}, {3, 24, 7}, false, true, false},
                         Case{"lower-precision leaf times a float32 intermediate, both batched", {3, 5, 24}, {3, 24, 7}, true, false, true}}) {
      const std::string case_name = c.name;
      CAPTURE(case_name);
      tg::manual_seed(41);
      RawTensor ad = tg::randn(c.a).data(), bd = tg::randn(c.b).data();
      if (c.a_lowp) ad = ad.to(lowp);
      if (c.b_lowp) bd = bd.to(lowp);
      Tensor a(ad.clone(), true), b(bd.clone(), true), a2(ad.clone(), true), b2(bd.clone(), true);
      // an intermediate float32 operand: saved by the rounded path as its lower-precision copy
      auto operands = [&](const Tensor& x, const Tensor& y) {
        return c.a_intermediate ? (c.a_lowp ? std::pair{x, y * 2.0} : std::pair{x * 2.0, y}) : std::pair{x, y};
      };
      const Shape out_shape = matmul(a.detach().to(lowp), b.detach().to(lowp)).shape();
      const Tensor upstream = tg::randn(out_shape).to(lowp);
      Tensor y;
      {
        amp::AutocastGuard autocast(Device::cpu(), lowp);
        const auto [x, w] = operands(a, b);
        y = matmul(x, w);
        if (!c.a_intermediate) {   // no cast nodes: matmul's inputs are the leaves themselves
          CHECK(y.grad_fn()->next[0].leaf == a.impl());
          CHECK(y.grad_fn()->next[1].leaf == b.impl());
        }
      }
      y.backward(upstream);
      const auto [x2, w2] = operands(a2, b2);
      const Tensor y2 = matmul(x2.to(lowp), w2.to(lowp));
      y2.backward(upstream);
      CHECK(y.dtype() == lowp);
      CHECK(y.shape() == y2.shape());
      CHECK(y.to_vector<double>() == y2.to_vector<double>());
      CHECK(a.grad().dtype() == a.dtype());
      CHECK(b.grad().dtype() == b.dtype());
      CHECK(a.grad().to_vector<double>() == a2.grad().to_vector<double>());
      CHECK(b.grad().to_vector<double>() == b2.grad().to_vector<double>());
    }
  }
}

TEST_CASE("autocast: a product on the CPU saves a float32 leaf itself: writing into it before backward is an error") {
  // Note [Autocast products through float32]: the caller's float32 batch is saved as it is and rounded
  // again in backward, so an in-place write between forward and backward would change the weight's
  // gradient; the saved tensor's version check refuses it, as for any saved input.
  using namespace tg;
  // the path under test: bfloat16 products through float32, also on a CPU that has them natively
  const testing::Bf16ProductsThroughFloat32 through_float32;
  for (const bool use_linear : {false, true}) {
    CAPTURE(use_linear);
    Tensor w = param({6, 6}, 12);
    Tensor x = tg::randn({4, 6});
    Tensor y;
    {
      amp::AutocastGuard autocast(Device::cpu(), kBFloat16);
      y = use_linear ? linear(x, w) : matmul(x, w);
    }
    prim::fill_(x.data(), 1.0);
    CHECK_THROWS_AS(sum(y).backward(), AutogradError);
  }
}
