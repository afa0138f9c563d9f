// tests/test_leaks.cpp: lifetime. Training an MLP leaves the live counts of storages, Tensors,
// graph nodes and allocator bytes exactly flat after warm-up, with no node alive between steps;
// a negative control proves the detector sees a leak.
#include "testing.h"

using tg::Tensor;

namespace {
struct Mlp : tg::nn::Module {
  tg::nn::Linear fc1{20, 32}, fc2{32, 5};
  Mlp() {
    register_module("fc1", fc1);
    register_module("fc2", fc2);
  }
  Tensor forward(const Tensor& x) override { return fc2(tg::relu(fc1(x))); }
};
}  // namespace

TEST_CASE("leaks: 300 training steps keep every live count flat after warm-up") {
  tg::manual_seed(3);
  Mlp model;
  tg::optim::Adam opt(model.parameters(), 1e-3);
  tg::nn::CrossEntropyLoss criterion;
  const Tensor x = tg::randn({16, 20});
  const Tensor y = tg::randint(0, 5, {16});
  tg::debug::LiveCounts after_warmup;
  int changed = 0, nodes_alive = 0;
  for (int step = 0; step < 300; ++step) {
    {
      opt.zero_grad();
      Tensor loss = criterion(model(x), y);
      loss.backward();
      opt.step();
    }
    const auto now = tg::debug::live_counts();
    if (now.nodes != 0) ++nodes_alive;
    if (step == 9) after_warmup = now;
    if (step > 9 && now != after_warmup) ++changed;
  }
  CHECK(nodes_alive == 0);
  CHECK(changed == 0);
  const auto end = tg::debug::live_counts();
  CHECK(end.storages == after_warmup.storages);
  CHECK(end.variables == after_warmup.variables);
  CHECK(end.cpu_bytes == after_warmup.cpu_bytes);
}

TEST_CASE("leaks: the detector sees a graph kept alive across steps (negative control)") {
  Mlp model;
  const Tensor x = tg::randn({4, 20});
  Tensor total = tg::zeros({});
  tg::debug::LiveCounts first;
  for (int step = 0; step < 20; ++step) {
    Tensor loss = model(x).sum();
    total = total + loss;   // the classic mistake: every step's graph stays reachable from total
    if (step == 9) first = tg::debug::live_counts();
  }
  const auto last = tg::debug::live_counts();
  CHECK(last.nodes > first.nodes);
  CHECK(last.storages > first.storages);
  total = Tensor();
  CHECK(tg::debug::live_counts().nodes == 0);
}

TEST_CASE("leaks: a retained graph is freed when its last Tensor goes") {
  const auto before = tg::debug::live_counts();
  {
    Tensor w = tg::randn({8, 8}, tg::TensorOptions().requires_grad(true));
    Tensor loss = tg::tanh(w.matmul(w)).sum();
    loss.backward(Tensor(), /*retain_graph=*/true);
    CHECK(tg::debug::live_counts().nodes == 3);
  }
  const auto after = tg::debug::live_counts();
  CHECK(after.nodes == before.nodes);
  CHECK(after.storages == before.storages);
  CHECK(after.variables == before.variables);
}
