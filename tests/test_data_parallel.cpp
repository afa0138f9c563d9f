// tests/test_data_parallel.cpp: nn::DataParallel and nn::parallel (scatter, gather, replicate,
// parallel_apply) with several CPU replicas: outputs and gradients against one replica, uneven
// batches, a pruned model, errors from a replica, the caller's grad mode and autocast inside the
// replica threads.
// Test cases that start threads have "thread" in their names (tools/sanitize_check.sh runs them under TSan).
#include <atomic>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "testing.h"

using tg::Device;
using tg::Tensor;
namespace par = tg::nn::parallel;

namespace {

struct Mlp : tg::nn::Cloneable<Mlp> {   // 13 -> 17 -> 5
  tg::nn::Linear fc1{13, 17}, fc2{17, 5};
  Mlp() {
    register_module("fc1", fc1);
    register_module("fc2", fc2);
  }
  Tensor forward(const Tensor& x) override { return fc2(tg::relu(fc1(x))); }
};

std::vector<Device> cpus(int n) { return std::vector<Device>(static_cast<std::size_t>(n), Device::cpu()); }

struct Result {
  Tensor out;
  std::vector<Tensor> grads;   // the module's parameters' gradients
  Tensor input_grad;
};

/// Forward and backward of loss = sum(out * weights) through `run`, on a fresh copy of `reference`.
template <class Run>
Result step(const Mlp& reference, const Tensor& x_value, const Tensor& out_weights, Run&& run) {
  std::unique_ptr<Mlp> model = reference.clone();
  Tensor x(x_value.data().clone(), /*requires_grad=*/true);
  Result r;
  r.out = run(*model, x);
  (r.out * out_weights).sum().backward();
  for (const Tensor& p : model->parameters()) r.grads.push_back(p.grad());
  r.input_grad = x.grad();
  return r;
}

}  // namespace

TEST_CASE("DataParallel: chunk sizes follow torch.chunk, fewer pieces when the batch runs out") {
  // Recorded with /usr/bin/python3 (Debian's torch 1.13):
  //   [c.shape[0] for c in torch.zeros(n, 2).chunk(k, 0)]
  CHECK(par::chunk_sizes(0, 2) == std::vector<int64_t>{0, 0});
  CHECK(par::chunk_sizes(5, 4) == std::vector<int64_t>{2, 2, 1});
  CHECK(par::chunk_sizes(10, 4) == std::vector<int64_t>{3, 3, 3, 1});
  CHECK(par::chunk_sizes(7, 3) == std::vector<int64_t>{3, 3, 1});
  CHECK(par::chunk_sizes(1, 3) == std::vector<int64_t>{1});
  CHECK(par::chunk_sizes(2, 3) == std::vector<int64_t>{1, 1});
  CHECK(par::chunk_sizes(3, 3) == std::vector<int64_t>{1, 1, 1});
  CHECK_THROWS_AS(par::chunk_sizes(4, 0), tg::Error);
}

TEST_CASE("DataParallel: scatter and gather are differentiable row splits") {
  tg::manual_seed(3);
  Tensor x = tg::randn({7, 3}, tg::TensorOptions().dtype(tg::kFloat64).requires_grad(true));
  const std::vector<Tensor> pieces = par::scatter(x, cpus(3));
  REQUIRE(pieces.size() == 3);
  CHECK(pieces[0].shape() == tg::Shape{3, 3});
  CHECK(pieces[2].shape() == tg::Shape{1, 3});
  Tensor back = par::gather({pieces[0] * 1.0, pieces[1] * 2.0, pieces[2] * 3.0}, Device::cpu());
  testing::check_close(Tensor(back.data().narrow(0, 3, 3)), Tensor(x.data().narrow(0, 3, 3)) * 2.0, 0, 0);
  back.sum().backward();
  const std::vector<double> g = x.grad().to_vector<double>();   // 1 for rows 0-2, 2 for 3-5, 3 for row 6
  for (std::size_t i = 0; i < g.size(); ++i) CHECK(g[i] == (i < 9 ? 1.0 : i < 18 ? 2.0 : 3.0));
  // scalar outputs (one loss per replica) are gathered into a vector, as PyTorch does
  CHECK(par::gather({x.sum(), x.mean()}, Device::cpu()).shape() == tg::Shape{2});
  CHECK_THROWS_AS(par::scatter(x.sum(), cpus(2)), tg::ShapeError);
  CHECK_THROWS_AS(par::scatter(Tensor(), cpus(2)), tg::ShapeError);
  CHECK_THROWS_AS(par::scatter(x, {}), tg::Error);
  CHECK_THROWS_AS(par::gather({}, Device::cpu()), tg::Error);
}

TEST_CASE("DataParallel: 2 and 3 CPU replica threads give one replica's outputs and gradients") {
  tg::manual_seed(11);
  Mlp reference;
  reference.to(tg::kFloat64);
  for (int replicas : {2, 3}) {
    for (int64_t batch : {12, 13, 2}) {   // even, uneven (5, 5, 3 over three), fewer rows than replicas
      CAPTURE(replicas);
      CAPTURE(batch);
      tg::manual_seed(100 + static_cast<uint64_t>(batch));
      const Tensor x = tg::randn({batch, 13}, tg::kFloat64);
      const Tensor w = tg::randn({batch, 5}, tg::kFloat64);
      const Result one = step(reference, x, w, [](Mlp& m, const Tensor& in) { return m(in); });
      const Result dp = step(reference, x, w, [&](Mlp& m, const Tensor& in) {
        tg::nn::DataParallel parallel(m, cpus(replicas));
        CHECK(parallel.devices().size() == static_cast<std::size_t>(replicas));
        return parallel(in);
      });
      // float64: the replicas only change the order of the sums over the batch (rtol 1e-12 is
      // about 4500 float64 roundings; a row or a replica's gradient lost or doubled is off by O(1)).
      testing::check_close(dp.out, one.out, 1e-12, 1e-13);
      REQUIRE(dp.grads.size() == one.grads.size());
      for (std::size_t i = 0; i < one.grads.size(); ++i) testing::check_close(dp.grads[i], one.grads[i], 1e-12, 1e-13);
      testing::check_close(dp.input_grad, one.input_grad, 1e-12, 1e-13);
    }
  }
  // float32, batch 13 over 3: each gradient element is a sum of at most 13 per-sample terms per
  // layer, so reordering moves it by a few gamma_13 ~ 8e-7 of the sum of |terms|; rtol 1e-5 with an
  // atol for elements that cancel to near zero.
  Mlp ref32;
  tg::manual_seed(5);
  const Tensor x = tg::randn({13, 13});
  const Tensor w = tg::randn({13, 5});
  const Result one = step(ref32, x, w, [](Mlp& m, const Tensor& in) { return m(in); });
  const Result dp = step(ref32, x, w, [](Mlp& m, const Tensor& in) { return tg::nn::DataParallel(m, cpus(3))(in); });
  testing::check_close(dp.out, one.out, 1e-5, 1e-6);
  for (std::size_t i = 0; i < one.grads.size(); ++i) testing::check_close(dp.grads[i], one.grads[i], 1e-5, 1e-5);
}

TEST_CASE("DataParallel: replica threads of a pruned model use weight_orig * weight_mask, gradients reach weight_orig") {
  // PyTorch's replicate shares the pruning hook with each replica, which computes its weight from its
  // copy of weight_orig (differentiable, a Broadcast output) and of weight_mask (detached): the
  // module's weight_orig gets the sum over the replicas of the weight's gradient times the mask,
  // equal to one module's on the whole batch, zero where the mask is, and the mask gets none.
  tg::manual_seed(21);
  Mlp reference;
  reference.to(tg::kFloat64);
  tg::nn::utils::prune::l1_unstructured(reference.fc1, "weight", 0.4);
  tg::nn::utils::prune::ln_structured(reference.fc2, "weight", 2, 2.0, 0);
  for (int replicas : {2, 3}) {
    for (int64_t batch : {12, 13}) {
      CAPTURE(replicas);
      CAPTURE(batch);
      tg::manual_seed(200 + static_cast<uint64_t>(batch));
      const Tensor x = tg::randn({batch, 13}, tg::kFloat64);
      const Tensor w = tg::randn({batch, 5}, tg::kFloat64);
      const Result one = step(reference, x, w, [](Mlp& m, const Tensor& in) { return m(in); });
      std::vector<Tensor> masks, members;
      const Result dp = step(reference, x, w, [&](Mlp& m, const Tensor& in) {
        for (const auto& b : m.named_buffers()) masks.push_back(b.second);
        members = {m.fc1.weight, m.fc2.weight};
        tg::nn::DataParallel parallel(m, cpus(replicas));
        Tensor out = parallel(in);
        // the replicas wrote their own weights: the module's pruned weights are the ones it had
        CHECK(m.fc1.weight.impl() == members[0].impl());
        CHECK(m.fc2.weight.impl() == members[1].impl());
        return out;
      });
      testing::check_close(dp.out, one.out, 1e-12, 1e-13);
      REQUIRE(dp.grads.size() == 4);   // fc1.bias, fc1.weight_orig, fc2.bias, fc2.weight_orig
      for (std::size_t i = 0; i < one.grads.size(); ++i) testing::check_close(dp.grads[i], one.grads[i], 1e-12, 1e-13);
      testing::check_close(dp.input_grad, one.input_grad, 1e-12, 1e-13);
      REQUIRE(masks.size() == 2);
      for (std::size_t k = 0; k < 2; ++k) {
        CHECK_FALSE(masks[k].grad().defined());
        const auto g = dp.grads[2 * k + 1].to_vector<double>();
        const auto mv = masks[k].to_vector<double>();
        int zeros = 0;
        for (std::size_t i = 0; i < g.size(); ++i)
          if (mv[i] == 0) {
            CHECK(g[i] == 0);
            ++zeros;
          }
        CHECK(zeros == (k == 0 ? 88 : 34));   // 0.4 of fc1's 17 x 13 entries; 2 of fc2's 5 rows of 17
      }
    }
  }
}

TEST_CASE("DataParallel: replica threads sum into the module once per backward, names and hooks") {
  Mlp model;
  tg::nn::DataParallel dp(model, cpus(2));
  const auto named = dp.named_parameters();
  REQUIRE(named.size() == 4);
  CHECK(named[0].first == "module.fc1.weight");   // PyTorch's names under DataParallel
  std::atomic<int> accumulated{0};
  auto h = model.fc1.weight.register_post_accumulate_grad_hook([&](Tensor&) { ++accumulated; });
  std::mutex m;
  std::vector<bool> grad_modes, autocast_modes;
  auto fh = model.register_forward_hook([&](tg::nn::Module&, const Tensor&, const Tensor&) {
    std::lock_guard<std::mutex> lock(m);   // runs on the replica threads
    grad_modes.push_back(tg::GradMode::is_enabled());
    autocast_modes.push_back(tg::amp::is_autocast_enabled(tg::DeviceType::CPU));
  });
  tg::manual_seed(2);
  const Tensor x = tg::randn({6, 13});
  dp(x).sum().backward();
  CHECK(accumulated.load() == 1);   // the model's own leaf, reached by both replicas, accumulated once
  CHECK(grad_modes == std::vector<bool>{true, true});
  // the caller's grad mode goes into the threads
  {
    tg::NoGradGuard no_grad;
    CHECK_FALSE(dp(x).requires_grad());
  }
  CHECK(grad_modes == std::vector<bool>{true, true, false, false});
  // and so does its autocast state: linear runs in bfloat16 in the replicas as on the caller's thread
  {
    tg::amp::AutocastGuard autocast(Device::cpu(), tg::kBFloat16);
    CHECK(dp(x).dtype() == model(x).dtype());
    CHECK(dp(x).dtype() == tg::kBFloat16);
  }
  CHECK(autocast_modes == std::vector<bool>{false, false, false, false, true, true, true, true, true});
  fh.remove();
  h.remove();
}

namespace {
struct Picky : tg::nn::Cloneable<Picky> {   // a forward that fails on small batches
  tg::nn::Linear fc{4, 2};
  bool plain_exception = false;
  Picky() { register_module("fc", fc); }
  std::unique_ptr<tg::nn::Module> new_instance() const override {
    auto p = std::make_unique<Picky>();
    p->plain_exception = plain_exception;
    return p;
  }
  Tensor forward(const Tensor& x) override {
    if (x.size(0) < 3) {
      if (plain_exception) throw std::runtime_error("picky: a plain exception");
      throw tg::DataError("picky: batch of " + std::to_string(x.size(0)) + " rows is too small");
    }
    return fc(x);
  }
};
}  // namespace

TEST_CASE("DataParallel: an exception in one replica thread reaches the caller with its type") {
  Picky model;
  tg::nn::DataParallel dp(model, cpus(3));
  const Tensor x = tg::randn({10, 4});   // pieces of 4, 4, 2 rows: the third replica throws
  CHECK_THROWS_WITH_AS(dp(x), "picky: batch of 2 rows is too small", tg::DataError);
  model.plain_exception = true;
  CHECK_THROWS_WITH_AS(dp(x), "picky: a plain exception", std::runtime_error);
  CHECK(dp(tg::randn({9, 4})).shape() == tg::Shape{9, 2});   // and the next call works
}

TEST_CASE("DataParallel: bad inputs and devices are tg::Errors, without CUDA the module runs as it is") {
  Mlp model;
  tg::nn::DataParallel dp(model, cpus(2));
  CHECK_THROWS_WITH_AS(dp(tg::randn({3}).sum()), doctest::Contains("batch dimension"), tg::ShapeError);
  CHECK_THROWS_WITH_AS(dp(Tensor()), doctest::Contains("undefined"), tg::ShapeError);
  CHECK_THROWS_WITH_AS(tg::nn::DataParallel(model, std::vector<Device>{}), doctest::Contains("empty"), tg::DeviceError);
  const Tensor x = tg::randn({4, 13});
  if (!tg::cuda::is_available()) {
    // PyTorch: no GPU, so device_ids are ignored and dp(x) is model(x)
    tg::nn::DataParallel ids(model, std::vector<int>{0, 1});
    CHECK(ids.devices().empty());
    testing::check_close(ids(x), model(x), 0, 0);
    CHECK_THROWS_WITH_AS(tg::nn::DataParallel(model, {Device::cpu(), Device::cuda(1)}),
                         doctest::Contains("CUDA is not available"), tg::DeviceError);
  } else {
    const int n = tg::cuda::device_count();
    CHECK_THROWS_WITH_AS(tg::nn::DataParallel(model, std::vector<int>{0, n}), doctest::Contains("out of range"),
                         tg::DeviceError);
    CHECK_THROWS_WITH_AS(tg::nn::DataParallel(model, std::vector<int>{-1}), doctest::Contains("out of range"),
                         tg::DeviceError);
    // parameters that are not on device_ids[0]
    tg::nn::DataParallel two(model, {Device::cuda(0), Device::cuda(0)});
    CHECK_THROWS_WITH_AS(two(x), doctest::Contains("parameters and buffers on device cuda:0"), tg::DeviceError);
    // one device: the module is moved there and the input follows it
    tg::nn::DataParallel one(model, std::vector<int>{0});
    CHECK(model.fc1.weight.device() == Device::cuda(0));
    CHECK(one(x).device() == Device::cuda(0));
    CHECK(two(x).device() == Device::cuda(0));
    model.to(Device::cpu());
  }
}
