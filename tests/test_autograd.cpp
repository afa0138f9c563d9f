// tests/test_autograd.cpp: the engine's semantics, one named case each: backward twice, retained
// graphs, non-scalar roots, no_grad, detach, leaf/non-leaf grads, version counters, fan-out, a
// 150,000-node chain, exceptions inside backward, concurrency, in-place history, anomaly mode,
// to_dot, and a user-defined op through record().
#include <algorithm>
#include <atomic>
#include <cmath>
#include <thread>

#include "testing.h"

using tg::Tensor;
using testing::check_values;

namespace {
Tensor param(std::vector<float> v) {
  return tg::from_vector(v, {static_cast<int64_t>(v.size())}, tg::TensorOptions().requires_grad(true));
}
}  // namespace

TEST_CASE("backward twice through a freed graph throws - retain_graph allows it and accumulates") {
  Tensor x = param({1, 2});
  Tensor y = (x * x).sum();
  y.backward();
  check_values(x.grad(), {2, 4});
  TG_CHECK_THROWS(y.backward(), tg::AutogradError, "Trying to backward through the graph a second time");
  Tensor z = (x * x * x).sum();
  x.zero_grad();
  z.backward(Tensor(), /*retain_graph=*/true);
  z.backward();
  check_values(x.grad(), {6, 24});   // 2 * 3x^2
}

TEST_CASE("non-scalar backward needs an explicit gradient") {
  Tensor x = param({1, 2, 3});
  Tensor y = x * 2.0;
  TG_CHECK_THROWS(y.backward(), tg::AutogradError, "grad can be implicitly created only for scalar outputs");
  y.backward(tg::from_vector(std::vector<float>{1, 0.5f, -1}, {3}));
  check_values(x.grad(), {2, 1, -2});
  TG_CHECK_THROWS((x * 2.0).backward(tg::ones({2})), tg::ShapeError, "does not match");
}

TEST_CASE("backward on something that does not require grad") {
  Tensor c = tg::ones({1});
  TG_CHECK_THROWS(c.backward(), tg::AutogradError, "element 0 of tensors does not require grad and does not have a grad_fn");
  TG_CHECK_THROWS(Tensor().backward(), tg::AutogradError, "undefined");
}

TEST_CASE("no_grad: results do not require grad and record nothing - grad mode is thread-local") {
  Tensor x = param({1, 2});
  {
    tg::NoGradGuard guard;
    Tensor y = x * 3.0;
    CHECK_FALSE(y.requires_grad());
    CHECK(y.is_leaf());
    CHECK_FALSE(tg::GradMode::is_enabled());
    bool other_thread_enabled = false;
    std::thread([&] { other_thread_enabled = tg::GradMode::is_enabled(); }).join();
    CHECK(other_thread_enabled);
  }
  CHECK(tg::GradMode::is_enabled());
  CHECK((x * 3.0).requires_grad());
}

TEST_CASE("detach shares storage and cuts the graph") {
  Tensor x = param({1, 2});
  Tensor y = x * 2.0;
  Tensor d = y.detach();
  CHECK_FALSE(d.requires_grad());
  CHECK(d.is_leaf());
  CHECK(d.data().storage() == y.data().storage());
  Tensor z = (d * x).sum();
  z.backward();
  check_values(x.grad(), {2, 4});   // d is a constant
}

TEST_CASE("leaf vs non-leaf gradients - retain_grad keeps a non-leaf's") {
  Tensor x = param({1, 2});
  Tensor y = x * 3.0;
  Tensor w = x * 4.0;
  w.retain_grad();
  CHECK(x.is_leaf());
  CHECK_FALSE(y.is_leaf());
  ((y + w) * (y + w)).sum().backward();   // d/dw = 2(y + w) = 14x
  check_values(x.grad(), {98, 196});      // 2(7x) * 7
  CHECK_FALSE(y.grad().defined());        // not retained
  check_values(w.grad(), {14, 28});
  Tensor c = tg::ones({2});
  CHECK_FALSE(c.grad().defined());
  TG_CHECK_THROWS(y.set_requires_grad(false), tg::AutogradError, "leaf variables");
  TG_CHECK_THROWS(tg::ones({2}, tg::TensorOptions().dtype(tg::kInt64)).set_requires_grad(true), tg::AutogradError,
                  "floating point");
}

TEST_CASE("x used twice gets twice the gradient (fan-out accumulation)") {
  Tensor x = param({3});
  (x + x).sum().backward();
  check_values(x.grad(), {2});
  x.zero_grad();
  Tensor a = x * 2.0;
  (a * a + a).sum().backward();   // d/dx = (2a + 1) * 2 = 2(12+1)
  check_values(x.grad(), {26});
}

TEST_CASE("broadcast gradients are summed back to the input's shape") {
  Tensor a = tg::ones({3, 4}, tg::TensorOptions().requires_grad(true));
  Tensor b = tg::ones({4}, tg::TensorOptions().requires_grad(true));
  Tensor s = tg::ones({}, tg::TensorOptions().requires_grad(true));
  ((a + b) * s).sum().backward();
  CHECK(b.grad().shape() == tg::Shape{4});
  check_values(b.grad(), {3, 3, 3, 3});
  CHECK(s.grad().dim() == 0);
  CHECK(s.grad().item() == 24);
}

TEST_CASE("grads accumulate across backward calls - zero_grad resets") {
  Tensor x = param({1});
  (x * 2.0).sum().backward();
  (x * 3.0).sum().backward();
  check_values(x.grad(), {5});
  Tensor held = x.grad();
  (x * 1.0).sum().backward();
  check_values(held, {6});   // accumulation is in place, as in PyTorch
  x.zero_grad();
  CHECK_FALSE(x.grad().defined());
}

TEST_CASE("version counter: in-place on a saved tensor throws PyTorch's error") {
  Tensor x = param({1, -2, 3});
  Tensor y = tg::exp(x);   // exp saves its output
  Tensor z = y.sum();
  y.mul_(2.0);
  TG_CHECK_THROWS(z.backward(), tg::AutogradError,
                  "one of the variables needed for gradient computation has been modified by an inplace operation");
  Tensor y2 = tg::exp(x);
  Tensor z2 = y2.sum();
  y2.add_(1.0);
  TG_CHECK_THROWS(z2.backward(), tg::AutogradError, "which is output 0 of exp, is at version 1; expected version 0");
  // through a view
  Tensor a = tg::ones({4}, tg::TensorOptions().requires_grad(true));
  Tensor b = tg::ones({4});
  Tensor c = (a * b).sum();   // mul saved b
  b.reshape({2, 2}).add_(1.0);
  TG_CHECK_THROWS(c.backward(), tg::AutogradError, "modified by an inplace operation");
  // through detach
  Tensor p = tg::ones({2}, tg::TensorOptions().requires_grad(true));
  Tensor q = tg::sigmoid(p);
  Tensor r = q.sum();
  q.detach().zero_();
  TG_CHECK_THROWS(r.backward(), tg::AutogradError, "modified by an inplace operation");
}

TEST_CASE("in-place on a leaf that requires grad throws - under no_grad it works") {
  Tensor w = param({1, 2});
  TG_CHECK_THROWS(w.add_(1.0), tg::AutogradError, "a leaf Tensor that requires grad is being used in an in-place operation");
  {
    tg::NoGradGuard g;
    w.sub_(tg::from_vector(std::vector<float>{0.5f, 0.5f}, {2}));
  }
  check_values(w, {0.5, 1.5});
  Tensor v = w * 1.0;
  TG_CHECK_THROWS(v.reshape({2, 1}).mul_(2.0), tg::AutogradError, "view of a Tensor that requires grad");
}

TEST_CASE("in-place ops on non-leaves are recorded: gradients stay correct") {
  Tensor x = param({1, 2});
  Tensor w = param({3, 4});
  Tensor y = x * 1.0;
  y.mul_(w);          // y = x w
  y.add_(x);          // y = x w + x
  y.sub_(2.0);
  y.sum().backward();
  check_values(x.grad(), {4, 5});   // w + 1
  check_values(w.grad(), {1, 2});   // x
  Tensor z = x * 1.0;
  z.copy_(w);         // z's value now comes from w only
  z.sum().backward();
  check_values(w.grad(), {2, 3});   // +1
  check_values(x.grad(), {4, 5});   // unchanged: the old z gets no gradient
}

TEST_CASE("a 150000-node chain backwards and frees without stack overflow") {
  Tensor x = param({1});
  Tensor y = x;
  for (int i = 0; i < 150000; ++i) y = y + 1e-6;
  y.sum().backward();
  check_values(x.grad(), {1});
  Tensor z = x;
  for (int i = 0; i < 150000; ++i) z = z * 1.0;
  z = Tensor();     // freeing the never-backwarded chain is iterative too
  y = Tensor();
  CHECK(x.grad().item() == 1);
}

TEST_CASE("an exception inside backward propagates - the next backward works") {
  Tensor x = param({2});
  Tensor bad = tg::record("explodes", x.data().clone(), {x},
                            [](const tg::RawTensor&, tg::Grads&) { throw std::runtime_error("boom in backward"); });
  CHECK_THROWS_WITH_AS(bad.sum().backward(), "boom in backward", std::runtime_error);
  CHECK(tg::GradMode::is_enabled());   // the engine's NoGradGuard was unwound
  Tensor fine = (x * x).sum();
  fine.backward();
  check_values(x.grad(), {4});
}

TEST_CASE("a user-defined op through record(): softplus with its own backward") {
  auto softplus = [](const Tensor& v) {
    tg::RawTensor y = tg::prim::unary(tg::UnaryOp::Log, tg::prim::add(tg::prim::unary(tg::UnaryOp::Exp, v.data()),
                                                                  tg::prim::scalar_like(1.0, v.data())));
    tg::SavedTensor xs(v);
    return tg::record("softplus", y, {v}, [xs](const tg::RawTensor& grad, tg::Grads& g) {
      g.set(0, tg::prim::mul(grad, tg::prim::unary(tg::UnaryOp::Sigmoid, xs.get())));   // d softplus = sigmoid
    });
  };
  Tensor x = testing::randn64({5}, 3);
  CHECK(tg::autograd::gradcheck([&](const std::vector<Tensor>& in) { return softplus(in[0]); }, {x}));
}

TEST_CASE("independent graphs backward concurrently from 8 threads - a shared leaf accumulates exactly") {
  Tensor shared = param({1, 2, 3});
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      Tensor own = param({float(t)});
      for (int k = 0; k < 50; ++k) {
        Tensor loss = (shared * 2.0).sum() + (own * own).sum();
        loss.backward();
      }
      if (std::fabs(own.grad().item() - 100.0 * t) > 1e-3) ++wrong;   // 50 * 2t
    });
  for (auto& th : threads) th.join();
  CHECK(wrong.load() == 0);
  check_values(shared.grad(), {800, 800, 800});   // 8 threads * 50 steps * 2
}

namespace {
/// Runs loss.backward(retain_graph) from `threads` threads released together; returns how many
/// raised the "backward a second time" AutogradError (any other exception fails the test).
int concurrent_backward(const Tensor& loss, int threads, bool retain_graph) {
  std::atomic<int> second{0}, other{0}, waiting{threads};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&] {
      --waiting;
      while (waiting.load() > 0) std::this_thread::yield();   // start together
      try {
        loss.backward(Tensor(), retain_graph);
      } catch (const tg::AutogradError& e) {
        (std::string(e.what()).find("backward through the graph a second time") != std::string::npos ? second : other)++;
      } catch (...) {
        ++other;
      }
    });
  for (auto& th : pool) th.join();
  CHECK(other.load() == 0);
  return second.load();
}
}  // namespace

TEST_CASE("concurrent backward on one graph without retain_graph: one thread wins, the others raise") {
  for (int round = 0; round < 20; ++round) {
    Tensor w = testing::randn64({64, 32}, 11 + round);
    Tensor x = testing::randn64({16, 64}, 12, false);
    Tensor loss = tg::relu(tg::matmul(x, w)).mul(tg::tanh(tg::matmul(x, w))).sum();   // several rules, shared w
    const int losers = concurrent_backward(loss, 8, /*retain_graph=*/false);
    CHECK(losers == 7);
    // the winner's gradient alone, as one backward would give
    Tensor w2 = Tensor(w.data().clone(), true);
    tg::relu(tg::matmul(x, w2)).mul(tg::tanh(tg::matmul(x, w2))).sum().backward();
    testing::check_close(w.grad(), w2.grad(), 0, 0);   // bit for bit: the same rules on the same data
    TG_CHECK_THROWS(loss.backward(), tg::AutogradError, "second time");   // and the graph stays freed
  }
}

TEST_CASE("concurrent backward on one graph with retain_graph: every thread runs, the gradients add up") {
  Tensor w = testing::randn64({32, 8}, 21);
  Tensor x = testing::randn64({5, 32}, 22, false);
  Tensor loss = tg::sigmoid(tg::matmul(x, w)).sum();
  CHECK(concurrent_backward(loss, 8, /*retain_graph=*/true) == 0);
  Tensor w1 = Tensor(w.data().clone(), true);
  tg::sigmoid(tg::matmul(x, w1)).sum().backward();
  testing::check_close(w.grad(), w1.grad() * 8.0, 1e-12, 1e-12);   // 8 sums of the same float64 values
  // a freeing backward after the retaining ones frees the graph once
  CHECK(concurrent_backward(loss, 4, /*retain_graph=*/false) == 3);
}

TEST_CASE("concurrent zero_grad and set_grad while other threads backward: every gradient is whole") {
  // Note [Gradient slots]: resetting or replacing a gradient during another thread's backward is
  // memory-safe (ASan and TSan run this), and each accumulation lands whole in one slot.
  Tensor w = tg::zeros({64, 16}, tg::TensorOptions().dtype(tg::kFloat64).requires_grad(true));
  const Tensor x = tg::ones({64, 16}, tg::TensorOptions().dtype(tg::kFloat64));
  std::atomic<bool> stop{false};
  std::atomic<int> errors{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < 4; ++t)
    workers.emplace_back([&] {
      try {
        for (int i = 0; i < 50; ++i) (x * w).sum().backward();   // adds 1 to every element
      } catch (...) {
        ++errors;
      }
    });
  std::thread resetter([&] {
    for (int i = 0; !stop.load(); ++i) {
      if (i % 3 == 0) w.zero_grad();
      else if (i % 3 == 1) w.set_grad(tg::zeros({64, 16}, tg::TensorOptions().dtype(tg::kFloat64)));
      else if (w.grad().defined() && w.grad().shape() != tg::Shape{64, 16}) ++errors;
    }
  });
  for (auto& th : workers) th.join();
  stop = true;
  resetter.join();
  CHECK(errors.load() == 0);
  if (w.grad().defined()) {   // some number k of whole accumulations: every element equals k
    const auto g = w.grad().to_vector<double>();
    CHECK(g[0] >= 0);
    CHECK(g[0] <= 200);
    CHECK(g[0] == std::floor(g[0]));
    CHECK(std::count(g.begin(), g.end(), g[0]) == static_cast<std::ptrdiff_t>(g.size()));
  }
}

TEST_CASE("anomaly mode names the op whose backward produced NaN") {
  Tensor x = tg::from_vector(std::vector<double>{0.0, 1.0}, {2}, tg::TensorOptions().requires_grad(true));
  Tensor y = tg::sqrt(x).sum();   // d sqrt at 0 = inf
  {
    tg::autograd::DetectAnomalyGuard guard;
    TG_CHECK_THROWS(y.backward(Tensor(), true), tg::AutogradError, "Function 'sqrt' returned nan values");
  }
  y.backward();   // without the guard: no check, inf flows into the grad
  CHECK(std::isinf(x.grad().to_vector<double>()[0]));
}

TEST_CASE("to_dot lists ops shapes and leaves that require grad") {
  Tensor w = tg::ones({3, 2}, tg::TensorOptions().requires_grad(true));
  Tensor x = tg::ones({4, 3});
  Tensor loss = tg::relu(x.matmul(w)).sum();
  const std::string dot = tg::autograd::to_dot(loss);
  CHECK(dot.find("digraph") == 0);
  CHECK(dot.find("matmul\\n[4, 2]") != std::string::npos);
  CHECK(dot.find("relu") != std::string::npos);
  CHECK(dot.find("sum\\n[]") != std::string::npos);
  CHECK(dot.find("leaf [3, 2]\\nrequires_grad") != std::string::npos);
  CHECK(dot.find("leaf [4, 3]") == std::string::npos);   // x does not require grad: not drawn
}

TEST_CASE("record() takes a lambda or a BackwardFn, any number of inputs, the rule is freed by backward") {
  // A BackwardFn (type-erased) and a temporary in the input list.
  Tensor x = param({1, 2, 3});
  const tg::BackwardFn twice = [](const tg::RawTensor& grad, tg::Grads& g) { g.set(0, tg::prim::mul(grad, 2.0)); };
  Tensor y = tg::record("twice", tg::prim::mul(x.data(), 2.0), {x * 1.0}, twice);
  y.sum().backward();
  check_values(x.grad(), {2, 2, 2});

  // Six inputs from a std::vector (more than the inline room for edges and gradients), one without grad.
  std::vector<Tensor> xs;
  for (int i = 0; i < 6; ++i) xs.push_back(i == 3 ? tg::ones({2}) : param({1, 2}));
  tg::RawTensor sum = tg::prim::zeros_like(xs[0].data());
  for (const Tensor& v : xs) sum = tg::prim::add(sum, v.data());
  std::vector<bool> asked(6, false);
  Tensor s = tg::record("sum6", sum, xs, [&asked](const tg::RawTensor& grad, tg::Grads& g) {
    for (std::size_t i = 0; i < g.size(); ++i)
      if (g.need(i)) {
        asked[i] = true;
        g.set(i, tg::prim::mul(grad, double(i + 1)));
      }
  });
  REQUIRE(s.grad_fn()->next.size() == 6);
  s.sum().backward();
  for (int i = 0; i < 6; ++i) {
    CHECK(asked[i] == (i != 3));
    if (i != 3) check_values(xs[i].grad(), {float(i + 1), float(i + 1)});
  }

  // What a rule captured is released as soon as it ran (retain_graph = false), while the Node lives on.
  tg::RawTensor captured = tg::prim::full({4}, 1.0);
  const std::weak_ptr<tg::Storage> alive = captured.storage();
  Tensor z = tg::record("keep", x.data().clone(), {x}, [captured](const tg::RawTensor& grad, tg::Grads& g) {
    g.set(0, grad);
  });
  captured = tg::RawTensor();
  CHECK(!alive.expired());
  CHECK(static_cast<bool>(z.grad_fn()->backward));
  z.sum().backward();
  CHECK(alive.expired());
  CHECK(!z.grad_fn()->backward);
  TG_CHECK_THROWS(z.sum().backward(), tg::AutogradError, "backward through the graph a second time");
}

TEST_CASE("activations are freed by backward - nothing of the graph outlives its Tensors") {
  Tensor w = tg::ones({64, 64}, tg::TensorOptions().requires_grad(true));
  const auto before = tg::cpu_memory_stats().allocated;
  {
    Tensor h = w;
    for (int i = 0; i < 10; ++i) h = tg::tanh(h.matmul(w));
    Tensor loss = h.sum();
    loss.backward();
  }
  w.zero_grad();
  CHECK(tg::cpu_memory_stats().allocated == before);
}

TEST_CASE("a custom rule's gradient in another dtype is cast to its input's dtype, as PyTorch does") {
  Tensor x = tg::from_vector(std::vector<float>{1, 2, 3}, {3}, tg::TensorOptions().requires_grad(true));
  Tensor y = tg::record("twice_in_double", tg::prim::mul(x.data(), 2.0), {x}, [](const tg::RawTensor& grad, tg::Grads& g) {
    g.set(0, tg::prim::mul(grad.to(tg::kFloat64), 2.0));   // a float64 gradient for a float32 input
  });
  Tensor z = y * y;   // a non-leaf path as well: the cast happens before fan-in
  (z.sum() + y.sum()).backward();
  CHECK(x.grad().dtype() == tg::kFloat32);
  testing::check_values(x.grad(), {2 * (2 * 2 + 1), 2 * (2 * 4 + 1), 2 * (2 * 6 + 1)});   // d/dx (4x^2 + 2x)
}

TEST_CASE("view gradients: k narrows of one tensor add into its gradient in place, values unchanged") {
  // Note [View gradients]: base is read through 32 narrow views; their gradients are added into base's
  // running gradient in place instead of each being a full tensor of zeros.
  const int64_t rows = 512, cols = 256, k = 32, step = rows / k;
  Tensor x = testing::randn64({rows, cols}, 71, false).to(tg::kFloat32);
  x.requires_grad_(true);
  const Tensor w = tg::rand({step, cols});
  auto run = [&](bool anomaly) {
    x.zero_grad();
    std::unique_ptr<tg::autograd::DetectAnomalyGuard> guard;
    if (anomaly) guard = std::make_unique<tg::autograd::DetectAnomalyGuard>();
    const Tensor base = x * 2.0;   // a non-leaf: its gradient is summed at its producer
    Tensor loss = tg::zeros({});
    for (int64_t i = 0; i < k; ++i) loss = loss + tg::sum(tg::narrow(base, 0, i * step, step) * (w * double(i + 1)));
    const std::size_t before = tg::memory::memory_stats().allocated_total;
    loss.backward();
    return std::make_pair(x.grad().clone(), tg::memory::memory_stats().allocated_total - before);
  };
  const auto [fast, fast_bytes] = run(false);
  const auto [slow, slow_bytes] = run(true);   // anomaly mode materializes every view's zeros
  // each row block i gets 2 (i + 1) w
  for (int64_t i = 0; i < k; ++i) CHECK(tg::equal(tg::narrow(fast, 0, i * step, step), w * double(2 * (i + 1))));
  CHECK(tg::equal(fast, slow));
  const std::size_t full = static_cast<std::size_t>(rows * cols) * sizeof(float);
  CHECK(slow_bytes > k * full);        // the control: k full tensors of zeros
  CHECK(fast_bytes * 4 < slow_bytes);  // base's sum, x's gradient and the pieces' own: a few full tensors
}

TEST_CASE("view gradients: unbind, chunk and select pieces of a non-leaf and of a leaf") {
  const Tensor x = testing::randn64({4, 6}, 72);
  const Tensor y = x * 3.0;
  const std::vector<Tensor> rows = tg::unbind(y, 0);
  const std::vector<Tensor> halves = tg::chunk(x, 2, 1);   // x is a leaf: its zeros are made
  Tensor loss = tg::sum(rows[0] * 1.0) + tg::sum(rows[2] * 5.0) + tg::sum(tg::select(y, 1, 4)) +
                tg::sum(halves[1] * 7.0);
  loss.backward();
  std::vector<double> want(24, 0.0);
  for (int64_t r = 0; r < 4; ++r)
    for (int64_t c = 0; c < 6; ++c) {
      double g = 0;
      if (r == 0) g += 3.0;
      if (r == 2) g += 15.0;
      if (c == 4) g += 3.0;
      if (c >= 3) g += 7.0;
      want[static_cast<std::size_t>(r * 6 + c)] = g;
    }
  CHECK(x.grad().to_vector<double>() == want);
}
