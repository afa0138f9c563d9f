// tests/test_autocast.cpp: tg::amp::AutocastGuard: the op lists (Note [Autocast op lists]), nesting,
// per-thread state, the cache of parameter casts, gradients, and errors.
#include <thread>

#include "testing.h"

using tg::Variable;
using namespace testing;

namespace {
Variable param(tg::Shape s, uint64_t seed) {
  tg::manual_seed(seed);
  return tg::randn(s, tg::TensorOptions().requires_grad(true));
}
}  // namespace

TEST_CASE("autocast: matmul and linear run in the lower precision, losses and sums in float32") {
  using namespace tg;
  Variable x = param({4, 8}, 1), w = param({3, 8}, 2), b = param({3}, 3);
  const Variable target = from_vector(std::vector<int64_t>{0, 2, 1, 1});
  amp::AutocastGuard autocast(Device::cpu(), kBFloat16);
  CHECK(amp::is_autocast_enabled(DeviceType::CPU));
  CHECK(amp::get_autocast_dtype(DeviceType::CPU) == kBFloat16);
  Variable y = linear(x, w, b);
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
  Variable loss = cross_entropy(y, target);
  CHECK(loss.dtype() == kFloat32);
  loss.backward();
  CHECK(w.grad().dtype() == kFloat32);   // gradients come back in the parameters' dtype
  CHECK(b.grad().dtype() == kFloat32);
  CHECK(x.grad().dtype() == kFloat32);
}

TEST_CASE("autocast: gradients under bfloat16 autocast match float32 within bfloat16 rounding") {
  using namespace tg;
  Variable x = param({16, 32}, 4), w = param({10, 32}, 5), b = param({10}, 6);
  const Variable target = from_vector(std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1, 2, 3, 4, 5});
  Variable x2(x.data().clone(), true), w2(w.data().clone(), true), b2(b.data().clone(), true);
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
  Variable a = param({2, 2}, 7);
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
  using namespace tg;
  Variable w = param({3, 3}, 8);
  Variable x = param({2, 3}, 9);
  std::shared_ptr<Node> first, second;
  {
    amp::AutocastGuard autocast(Device::cpu(), kBFloat16);
    Variable y1 = linear(x, w), y2 = linear(x, w);
    // linear's second input is the cast of w: one cast node shared by both uses
    first = y1.grad_fn()->next[1].fn;
    REQUIRE(first != nullptr);
    CHECK(first == y2.grad_fn()->next[1].fn);
    sum(y1 + y2).backward();
    CHECK(w.grad().dtype() == kFloat32);
    prim::fill_(w.data(), 1.0);   // a new version: the next use casts again
    second = linear(x, w).grad_fn()->next[1].fn;
    CHECK(second != first);
  }
  amp::AutocastGuard again(Device::cpu(), kBFloat16);
  CHECK(linear(x, w).grad_fn()->next[1].fn != second);   // the cache ended with the region
}
