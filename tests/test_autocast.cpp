// tests/test_autocast.cpp: tg::amp::AutocastGuard: the op lists (Note [Autocast op lists]), nesting,
// per-thread state, the cache of parameter casts, gradients, and errors.
#include <optional>
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

TEST_CASE("autocast: on the CPU matmul and linear run in the lower precision, the losses in float32, the rest as is") {
  // Note [Autocast op lists], the CPU's lists: under torch.autocast('cpu', dtype=torch.bfloat16) torch 2.15.0
  // gives torch.softmax(y, 1).dtype, torch.sum(y).dtype, torch.exp(y).dtype == torch.bfloat16 for a
  // bfloat16 y, and F.cross_entropy / F.mse_loss float32 (tests/data/autocast_lists.py)
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
  CHECK(softmax(y, 1).dtype() == kBFloat16);
  CHECK(log_softmax(y, 1).dtype() == kBFloat16);
  CHECK(sum(y).dtype() == kBFloat16);
  CHECK(mean(y).dtype() == kBFloat16);
  CHECK(exp(y).dtype() == kBFloat16);
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

TEST_CASE("autocast: regions nest and restore, enabled = false switches off, other threads and devices unaffected") {
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

// ---- the cache of parameters' casts: Note [Autocast cast cache]

namespace {
/// Gradients of the leaves (in order) as values.
std::vector<std::vector<double>> grads_of(const std::vector<tg::Tensor>& leaves) {
  std::vector<std::vector<double>> g;
  for (const Tensor& l : leaves) g.push_back(l.grad().defined() ? l.grad().to_vector<double>() : std::vector<double>());
  return g;
}

/// A fresh leaf with x's values and requires_grad.
Tensor twin(const Tensor& x) { return Tensor(x.data().clone(), x.requires_grad()); }

/// The products of the cache cases: conv2d casts its parameters (the cast path on every CPU); matmul and
/// linear cast them where the device multiplies the region's dtype itself and round them where products
/// run through float32 (Note [Autocast products through float32]).
struct Product {
  const char* name;
  tg::Shape x, w;   // the input's and the weight's shapes; the bias is (w[0])
  Tensor (*run)(const Tensor& x, const Tensor& w, const Tensor& b);
};
const Product kProducts[] = {
    {"conv2d", {2, 3, 7, 6}, {5, 3, 3, 2}, [](const Tensor& x, const Tensor& w, const Tensor& b) {
       return tg::conv2d(x, w, b, {2, 1}, {1});
     }},
    {"matmul", {3, 7, 9}, {9, 5}, [](const Tensor& x, const Tensor& w, const Tensor&) { return tg::matmul(x, w); }},
    {"linear", {7, 9}, {5, 9}, [](const Tensor& x, const Tensor& w, const Tensor& b) { return tg::linear(x, w, b); }},
};
}  // namespace

TEST_CASE("autocast cache: a tensor allocated where a dead parameter lived never gets the dead one's cast") {
  // Fresh parameters of one shape and dtype, each used once in one region and then freed: every
  // result must be the op on the parameter's own values (its detach(), no parameter, is cast afresh),
  // on the cast path and on both rounding paths (float16, and bfloat16 through float32).
  using namespace tg;
  for (const Product& p : kProducts) {
    for (const DType lowp : {kBFloat16, kFloat16}) {
      for (const bool through_float32 : {false, true}) {
        const std::string name = p.name, region = dtype_name(lowp);
        CAPTURE(name);
        CAPTURE(region);
        CAPTURE(through_float32);
        std::optional<testing::Bf16ProductsThroughFloat32> path;
        if (through_float32) path.emplace();
        const Tensor x = tg::randn(p.x);
        amp::AutocastGuard autocast(Device::cpu(), lowp);
        for (int i = 0; i < 24; ++i) {
          Tensor w = param(p.w, 100 + i), b = param({p.w[0]}, 200 + i);
          CHECK(p.run(x, w, b).to_vector<double>() == p.run(x, w.detach(), b.detach()).to_vector<double>());
        }
      }
    }
  }
}

TEST_CASE("autocast cache: a parameter is cast once per region, again after a write, set_data or the region's end") {
  // A write that bypasses the version counter (poke) shows which cast conv2d used: the cached one
  // until the weight's version or value changes or the outermost region ends; a fresh cast is the op
  // on w.detach(), which is no parameter.
  using namespace tg;
  Tensor w = param({4, 3, 3, 2}, 21);
  const Tensor x = tg::randn({2, 3, 6, 5});
  auto poke = [&](float v) { w.data().data<float>()[0] = v; };
  auto cached = [&] { return conv2d(x, w).to_vector<double>(); };
  auto fresh = [&] { return conv2d(x, w.detach()).to_vector<double>(); };
  std::vector<double> y1, y3;
  {
    amp::AutocastGuard outer(Device::cpu(), kBFloat16);
    y1 = cached();
    CHECK(y1 == fresh());
    const uint64_t version = w.data().version();
    poke(100.0f);
    CHECK(fresh() != y1);   // the poke shows in a fresh cast
    CHECK(cached() == y1);  // and not in the cached one
    {
      amp::AutocastGuard inner(Device::cpu(), kBFloat16);   // nested regions share the cache
      CHECK(cached() == y1);
    }
    w.set_data(tg::randn(w.shape()).data());   // a new value at the version the cast was made at
    REQUIRE(w.data().version() == version);
    const std::vector<double> y2 = cached();
    CHECK(y2 != y1);
    CHECK(y2 == fresh());
    prim::fill_(w.data(), 0.5);                // an in-place write: a new version
    y3 = cached();
    CHECK(y3 != y2);
    CHECK(y3 == fresh());
    poke(-3.0f);
    CHECK(cached() == y3);
  }
  amp::AutocastGuard again(Device::cpu(), kBFloat16);   // a new region casts again: the poke counts
  const std::vector<double> y4 = cached();
  CHECK(y4 != y3);
  CHECK(y4 == fresh());
}

TEST_CASE("autocast cache: several backwards in one region accumulate each pass's gradient") {
  // Gradient accumulation with the forward under autocast: three forward-backward passes in one region,
  // and two losses built before either backward (torch 2.15.0 runs both: F.conv2d(x, w).float().sum()
  // .backward() twice in one torch.autocast('cpu', dtype=torch.bfloat16) region). Each parameter's grad
  // must be the sum, in pass order, of the gradients of the same passes run each in its own region.
  using namespace tg;
  for (const Product& p : kProducts) {
    for (const DType lowp : {kBFloat16, kFloat16}) {
      for (const bool through_float32 : {false, true}) {
        const std::string name = p.name, region = dtype_name(lowp);
        CAPTURE(name);
        CAPTURE(region);
        CAPTURE(through_float32);
        std::optional<testing::Bf16ProductsThroughFloat32> path;
        if (through_float32) path.emplace();
        const Tensor w = param(p.w, 31), b = param({p.w[0]}, 32);
        std::vector<Tensor> xs, ups;
        for (int k = 0; k < 3; ++k) {
          xs.push_back(tg::randn(p.x));
          ups.push_back(tg::randn(p.run(xs[k], w.detach(), b.detach()).shape()).to(lowp));
        }
        // the reference: each pass alone, on fresh copies of the parameters; the gradients summed in order
        std::vector<RawTensor> want(2);
        for (int k = 0; k < 3; ++k) {
          const Tensor w1 = twin(w), b1 = twin(b);
          {
            amp::AutocastGuard autocast(Device::cpu(), lowp);
            p.run(xs[k], w1, b1).backward(ups[k]);
          }
          const std::vector<Tensor> g{w1.grad(), b1.grad()};
          for (int i = 0; i < 2; ++i)
            if (g[i].defined()) want[i] = k == 0 ? g[i].data() : prim::add(want[i], g[i].data());
        }
        auto check = [&](const Tensor& wg, const Tensor& bg) {
          REQUIRE(wg.grad().defined());
          CHECK(wg.grad().to_vector<double>() == Tensor(want[0]).to_vector<double>());
          CHECK(bg.grad().defined() == want[1].defined());
          if (want[1].defined()) CHECK(bg.grad().to_vector<double>() == Tensor(want[1]).to_vector<double>());
        };
        {
          const Tensor w1 = twin(w), b1 = twin(b);
          {
            amp::AutocastGuard autocast(Device::cpu(), lowp);
            for (int k = 0; k < 3; ++k) p.run(xs[k], w1, b1).backward(ups[k]);
          }
          check(w1, b1);
        }
        {
          const Tensor w1 = twin(w), b1 = twin(b);
          {
            amp::AutocastGuard autocast(Device::cpu(), lowp);
            std::vector<Tensor> ys;
            for (int k = 0; k < 3; ++k) ys.push_back(p.run(xs[k], w1, b1));
            for (int k = 0; k < 3; ++k) ys[k].backward(ups[k]);
          }
          check(w1, b1);
        }
      }
    }
  }
}

TEST_CASE("autocast cache: a checkpointed block gives the plain run's gradients, backward inside or after the region") {
  // tg::checkpoint matches the edges its recomputation records to those of its forward (Note [Partial
  // backward]); each use of a cached cast ends at the parameter both times (Note [Autocast cast cache]).
  // The block's weight is first cast inside the block, or already used before it in the region; the
  // backward runs inside the region or after it; one pass or two in one region. torch 2.15.0 gives the
  // plain gradients for torch.utils.checkpoint.checkpoint(lambda t: F.conv2d(t, w), x) under
  // torch.autocast('cpu', dtype=torch.bfloat16) with backward inside the region, reentrant or not.
  using namespace tg;
  const Tensor w1 = param({4, 3, 3, 3}, 41), b1 = param({4}, 42), w2 = param({5, 4 * 5 * 4}, 43);
  const Tensor x0 = tg::randn({2, 3, 7, 6}), extra = tg::randn({1, 3, 5, 5}), target = tg::randn({2, 5});
  auto block = [](const Tensor& x, const Tensor& w, const Tensor& b) { return relu(conv2d(x, w, b, {1}, {0})); };
  for (const DType lowp : {kBFloat16, kFloat16}) {
    for (const bool through_float32 : {false, true}) {
      std::optional<testing::Bf16ProductsThroughFloat32> path;
      if (through_float32) path.emplace();
      for (const bool used_before : {false, true}) {
        for (const bool backward_inside : {false, true}) {
          for (const int passes : {1, 2}) {
            if (passes == 2 && !backward_inside) continue;
            const std::string region = dtype_name(lowp);
            CAPTURE(region);
            CAPTURE(through_float32);
            CAPTURE(used_before);
            CAPTURE(backward_inside);
            CAPTURE(passes);
            auto run = [&](bool checkpointed) {
              const Tensor cw1 = twin(w1), cb1 = twin(b1), cw2 = twin(w2), x(x0.data().clone(), true);
              std::optional<amp::AutocastGuard> autocast(std::in_place, Device::cpu(), lowp);
              for (int k = 0; k < passes; ++k) {
                Tensor loss = used_before ? sum(conv2d(extra, cw1).to(kFloat32)) : Tensor();
                const Tensor h = checkpointed ? checkpoint([&](const std::vector<Tensor>& in) {
                                                  return block(in[0], cw1, cb1);
                                                }, {x})
                                              : block(x, cw1, cb1);
                const Tensor l = mse_loss(linear(flatten(h, 1), cw2), target);
                loss = loss.defined() ? loss + l : l;
                if (!backward_inside) autocast.reset();
                loss.backward();
              }
              return grads_of({cw1, cb1, cw2, x});
            };
            const auto plain = run(false);
            CHECK(run(true) == plain);
          }
        }
      }
    }
  }
}

TEST_CASE("autocast cache: a cast first made under NoGradGuard still carries the gradient of later uses") {
  // The cache holds values and each use records its own cast node (Note [Autocast cast cache]), so a
  // cast cached while grad mode was off does not cut a later use off from the parameter.
  using namespace tg;
  for (const Product& p : kProducts) {
    const std::string name = p.name;
    CAPTURE(name);
    const Tensor w = param(p.w, 51), b = param({p.w[0]}, 52), x = tg::randn(p.x);
    const Tensor w1 = twin(w), b1 = twin(b), w2 = twin(w), b2 = twin(b);
    const Tensor up = tg::randn(p.run(x, w.detach(), b.detach()).shape(), kBFloat16);
    {
      amp::AutocastGuard autocast(Device::cpu(), kBFloat16);
      {
        NoGradGuard no_grad;
        (void)p.run(x, w1, b1);
      }
      const Tensor y = p.run(x, w1, b1);
      REQUIRE(y.requires_grad());
      y.backward(up);
    }
    {
      amp::AutocastGuard autocast(Device::cpu(), kBFloat16);
      p.run(x, w2, b2).backward(up);
    }
    REQUIRE(w1.grad().defined());
    CHECK(grads_of({w1, b1}) == grads_of({w2, b2}));
  }
}

TEST_CASE("autocast cache: a region where parameters come and go keeps a bounded cache") {
  // Entries of dead parameters are swept when the cache has doubled (Note [Autocast cast cache]): 600
  // short-lived parameters, five alive at a time, leave at most 64 dead entries' casts alive.
  using namespace tg;
  const Tensor x = tg::randn({1, 2, 5, 5});
  amp::AutocastGuard autocast(Device::cpu(), kBFloat16);
  std::vector<Tensor> alive(5);
  int64_t storages_at_100 = 0;
  for (int i = 0; i < 600; ++i) {
    alive[i % 5] = param({3, 2, 2, 2}, 1000 + i);
    (void)conv2d(x, alive[i % 5]);
    if (i == 100) storages_at_100 = debug::live_counts().storages;
  }
  CHECK(debug::live_counts().storages - storages_at_100 <= 64);
}
