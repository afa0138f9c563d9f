// tests/test_hooks.cpp: tensor gradient hooks, post-accumulate-grad hooks, module forward hooks,
// their removable handles, and Module::clone. Orders and values marked "PyTorch" were recorded with
// PyTorch 1.13 (Debian's python3-torch) by running the same graph in Python; 1.13 has no
// register_post_accumulate_grad_hook, so there the post-accumulate hooks were recorded as hooks on
// the leaf's AccumulateGrad node (t.expand_as(t).grad_fn.next_functions[0][0].register_hook), which is
// what register_post_accumulate_grad_hook replaced in PyTorch 2.1 and what DDP used before it.
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "testing.h"

using tg::Tensor;
using testing::check_values;

namespace {
Tensor leaf(std::vector<float> v) {
  return tg::from_vector(v, {static_cast<int64_t>(v.size())}, tg::TensorOptions().requires_grad(true));
}

std::string values(const Tensor& v) {   // "[162, 484, 1014]"
  std::string s = "[";
  for (double x : v.to_vector<double>()) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%s%g", s.size() > 1 ? ", " : "", x);
    s += buf;
  }
  return s + "]";
}

using Log = std::vector<std::string>;
}  // namespace

// PyTorch (tests/test_hooks.cpp header), for
//   a = [1, 2, 3], b = [4, 5, 6] (leaves); c = a * b; d = c * 2; e = d + a; e.retain_grad();
//   loss = (e * e).sum(); loss.backward(retain_graph=True); loss.backward()
// with two gradient hooks on a, one on b, c, d, e, and post-accumulate hooks on a and b that print
// .grad. The log of each backward:
//   e:[18, 44, 78]  d:[18, 44, 78]  c:[36, 88, 156]  a:[162, 484, 1014]  a2  post a:[162, 484, 1014]
//   b:[36, 176, 468]  post b:[36, 176, 468]
// and the second backward the same with post a:[324, 968, 2028], post b:[72, 352, 936].
TEST_CASE("hooks: backward calls tensor and post-accumulate hooks in PyTorch's order, on every retained backward") {
  Log log;
  Tensor a = leaf({1, 2, 3}), b = leaf({4, 5, 6});
  a.register_hook([&](const Tensor& g) { log.push_back("a:" + values(g)); });
  a.register_hook([&](const Tensor&) { log.push_back("a2"); });
  b.register_hook([&](const Tensor& g) { log.push_back("b:" + values(g)); });
  a.register_post_accumulate_grad_hook([&](Tensor& p) { log.push_back("post a:" + values(p.grad())); });
  b.register_post_accumulate_grad_hook([&](Tensor& p) { log.push_back("post b:" + values(p.grad())); });
  Tensor c = a * b;
  Tensor d = c * 2.0;
  Tensor e = d + a;
  c.register_hook([&](const Tensor& g) { log.push_back("c:" + values(g)); });
  d.register_hook([&](const Tensor& g) { log.push_back("d:" + values(g)); });
  e.register_hook([&](const Tensor& g) { log.push_back("e:" + values(g)); });
  e.retain_grad();
  Tensor loss = (e * e).sum();

  loss.backward(Tensor(), /*retain_graph=*/true);
  const Log first{"e:[18, 44, 78]",     "d:[18, 44, 78]", "c:[36, 88, 156]",  "a:[162, 484, 1014]",
                  "a2",                 "post a:[162, 484, 1014]", "b:[36, 176, 468]", "post b:[36, 176, 468]"};
  CHECK(log == first);
  log.clear();
  loss.backward();
  const Log second{"e:[18, 44, 78]",     "d:[18, 44, 78]", "c:[36, 88, 156]",  "a:[162, 484, 1014]",
                   "a2",                 "post a:[324, 968, 2028]", "b:[36, 176, 468]", "post b:[72, 352, 936]"};
  CHECK(log == second);
  check_values(a.grad(), {324, 968, 2028});
  check_values(b.grad(), {72, 352, 936});
  check_values(e.grad(), {36, 88, 156});   // retained twice: 2 * [18, 44, 78]
}

// PyTorch: the same graph with c.register_hook(g * 10), e.register_hook(g + 1), e.register_hook(g * 3),
// a.register_hook(g * 0.5) and a post-accumulate hook on a gives a.grad [2308.5, 6817.5, 14338.5],
// b.grad [1140, 5400, 14220], e.grad (retained, after e's hooks) [57, 135, 237], and the post hook sees
// a.grad as [2308.5, 6817.5, 14338.5].
TEST_CASE("hooks: register_hook results replace gradients, chained in registration order") {
  Tensor a = leaf({1, 2, 3}), b = leaf({4, 5, 6});
  Tensor c = a * b;
  Tensor d = c * 2.0;
  Tensor e = d + a;
  c.register_hook([](const Tensor& g) { return g * 10.0; });
  e.register_hook([](const Tensor& g) { return g + 1.0; });
  e.register_hook([](const Tensor& g) { return g * 3.0; });   // sees (g + 1)
  e.retain_grad();
  a.register_hook([](const Tensor& g) { return g * 0.5; });
  std::vector<std::vector<double>> seen;
  a.register_post_accumulate_grad_hook([&](Tensor& p) { seen.push_back(p.grad().to_vector<double>()); });
  (e * e).sum().backward();
  check_values(a.grad(), {2308.5, 6817.5, 14338.5});
  check_values(b.grad(), {1140, 5400, 14220});
  check_values(e.grad(), {57, 135, 237});
  REQUIRE(seen.size() == 1);
  CHECK(seen[0] == std::vector<double>{2308.5, 6817.5, 14338.5});
}

TEST_CASE("hooks: a hook returning void or an undefined Tensor keeps the gradient") {
  Tensor x = leaf({1, -2});
  int calls = 0;
  x.register_hook([&](const Tensor&) { ++calls; });
  x.register_hook([&](const Tensor&) { ++calls; return Tensor(); });
  (x * 3.0).sum().backward();
  CHECK(calls == 2);
  check_values(x.grad(), {3, 3});
}

// PyTorch: y = [1, 2]; hook (record, g * 2); (y * y + y * 3 + y).sum().backward() records [[6, 8]] once,
// y.grad [12, 16].
TEST_CASE("hooks: a leaf used several times gets its hooks once, on the summed gradient") {
  Tensor x = leaf({1, 2});
  std::vector<std::string> log;
  x.register_hook([&](const Tensor& g) { log.push_back(values(g)); return g * 2.0; });
  int post = 0;
  x.register_post_accumulate_grad_hook([&](Tensor&) { ++post; });
  (x * x + x * 3.0 + x).sum().backward();   // d/dx = 2x + 4 = [6, 8]
  CHECK(log == Log{"[6, 8]"});
  CHECK(post == 1);
  check_values(x.grad(), {12, 16});
}

// PyTorch: x = [1, 2]; hook (record, g + 1); AccumulateGrad post hook; x.backward([1, 2]) logs
// hook [1, 2], post [2, 3].
TEST_CASE("hooks: backward on a leaf runs its hooks") {
  Tensor x = leaf({1, 2});
  Log log;
  x.register_hook([&](const Tensor& g) { log.push_back("hook " + values(g)); return g + 1.0; });
  x.register_post_accumulate_grad_hook([&](Tensor& p) { log.push_back("post " + values(p.grad())); });
  x.backward(tg::from_vector(std::vector<float>{1, 2}, {2}));
  CHECK(log == Log{"hook [1, 2]", "post [2, 3]"});
}

TEST_CASE("hooks: the post-accumulate hook sees what accumulated into an existing .grad, and may change it") {
  Tensor w = leaf({1, 2});
  w.set_grad(tg::from_vector(std::vector<float>{10, 20}, {2}));
  std::vector<double> seen;
  w.register_post_accumulate_grad_hook([&](Tensor& p) {
    seen = p.grad().to_vector<double>();
    tg::NoGradGuard g;
    p.grad().mul_(0.5);   // what an optimizer-in-backward does: it may use and rewrite .grad
  });
  (w * 2.0).sum().backward();
  CHECK(seen == std::vector<double>{12, 22});
  check_values(w.grad(), {6, 11});
}

TEST_CASE("hooks: remove() takes one hook out, twice is harmless, the same hook on several tensors") {
  Tensor a = leaf({1}), b = leaf({2});
  int count_a = 0, count_b = 0;
  auto counter = [](int& n) { return [&n](const Tensor&) { ++n; }; };
  auto ha = a.register_hook(counter(count_a));
  auto hb = b.register_hook(counter(count_b));
  auto hb2 = b.register_hook([](const Tensor& g) { return g * 100.0; });
  (a * b).sum().backward();
  CHECK(count_a == 1);
  CHECK(count_b == 1);
  check_values(b.grad(), {100});
  hb2.remove();
  hb2.remove();
  CHECK(hb2.size() == 0);
  ha.remove();
  b.zero_grad();
  (a * b).sum().backward();
  CHECK(count_a == 1);   // removed
  CHECK(count_b == 2);   // still there
  check_values(b.grad(), {1});

  // one handle for hooks on several tensors (what DDP keeps for its per-parameter hooks)
  Tensor p = leaf({1}), q = leaf({2});
  int post = 0;
  std::vector<tg::RemovableHandle> each;
  for (Tensor* v : {&p, &q}) each.push_back(v->register_post_accumulate_grad_hook([&](Tensor&) { ++post; }));
  tg::RemovableHandle all(each);
  CHECK(all.size() == 2);
  (p * q).sum().backward();
  CHECK(post == 2);
  all.remove();
  all.remove();
  (p * q).sum().backward();
  CHECK(post == 2);
}

TEST_CASE("hooks: a handle outliving its tensor or module is harmless, and a non-leaf's hook stays with its graph") {
  tg::RemovableHandle h, hm;
  {
    Tensor x = leaf({1});
    h = x.register_hook([](const Tensor&) {});
    tg::nn::ReLU relu;
    hm = relu.register_forward_hook([](tg::nn::Module&, const Tensor&, const Tensor&) {});
  }
  h.remove();
  hm.remove();
  CHECK(h.size() == 0);

  int calls = 0;
  Tensor x = leaf({1, 2});
  Tensor loss;
  tg::RemovableHandle hy;
  {
    Tensor y = x * 2.0;   // the handle y goes away; its hook lives on y's grad_fn
    hy = y.register_hook([&](const Tensor& g) { ++calls; return g * 5.0; });
    loss = y.sum();
  }
  loss.backward(Tensor(), true);
  CHECK(calls == 1);
  check_values(x.grad(), {10, 10});
  hy.remove();
  loss.backward();
  CHECK(calls == 1);
  check_values(x.grad(), {12, 12});

  tg::RemovableHandle on_freed;
  {
    Tensor z = x * 3.0;
    on_freed = z.register_hook([](const Tensor&) {});
    z.sum().backward();   // frees the graph; z and its grad_fn die at the end of the block
  }
  on_freed.remove();
  CHECK(on_freed.size() == 0);
}

TEST_CASE("hooks: a hook may register and remove hooks while backward runs") {
  Tensor x = leaf({1});
  Tensor y = x * 2.0;
  int late = 0;
  tg::RemovableHandle self;
  Log log;
  self = y.register_hook([&](const Tensor&) {
    log.push_back("once");
    self.remove();   // removing itself: it has already been called for this backward
    x.register_post_accumulate_grad_hook([&](Tensor&) { ++late; });   // x has no hooks yet: from the next backward on
  });
  Tensor loss = y.sum();
  loss.backward(Tensor(), true);
  CHECK(log == Log{"once"});
  CHECK(late == 0);
  loss.backward();
  CHECK(log == Log{"once"});
  CHECK(late == 1);
}

TEST_CASE("hooks: errors") {
  Tensor plain = tg::ones({2});
  TG_CHECK_THROWS(plain.register_hook([](const Tensor&) {}), tg::AutogradError,
                  "cannot register a hook on a tensor that doesn't require gradient");
  TG_CHECK_THROWS(plain.register_post_accumulate_grad_hook([](Tensor&) {}), tg::AutogradError,
                  "cannot register a hook on a tensor that doesn't require gradient");
  Tensor x = leaf({1, 2});
  Tensor y = x * 2.0;
  TG_CHECK_THROWS(y.register_post_accumulate_grad_hook([](Tensor&) {}), tg::AutogradError,
                  "post accumulate grad hooks cannot be registered on non-leaf tensors");
  TG_CHECK_THROWS(Tensor().register_hook([](const Tensor&) {}), tg::Error, "undefined");

  auto h = y.register_hook([](const Tensor& g) { return g.sum(); });
  TG_CHECK_THROWS(y.sum().backward(Tensor(), true), tg::ShapeError,
                  "hook 'register_hook #0' has changed the size of value (was [2], got [])");
  h.remove();
  h = y.register_hook([](const Tensor& g) { return g.to(tg::kFloat64); });
  TG_CHECK_THROWS(y.sum().backward(Tensor(), true), tg::DTypeError, "has changed the type of value");
  h.remove();
  // a hook that throws: the error reaches the caller, and a retained graph can be run again
  h = y.register_hook([](const Tensor&) -> Tensor { throw tg::Error("hook failed"); });
  Tensor loss = y.sum();
  TG_CHECK_THROWS(loss.backward(Tensor(), true), tg::Error, "hook failed");
  CHECK_FALSE(x.grad().defined());
  h.remove();
  loss.backward();
  check_values(x.grad(), {2, 2});
}

TEST_CASE("hooks: threads backward through graphs sharing a hooked leaf while others add and remove hooks") {
  Tensor w = leaf({1, 2, 3});
  std::atomic<int> posts{0}, grads{0};
  w.register_post_accumulate_grad_hook([&](Tensor&) { posts.fetch_add(1); });
  w.register_hook([&](const Tensor& g) { grads.fetch_add(1); return g; });
  constexpr int kThreads = 3, kSteps = 200;
  std::atomic<bool> stop{false};
  std::thread churn([&] {
    while (!stop.load()) {
      auto h = w.register_hook([](const Tensor&) {});
      auto p = w.register_post_accumulate_grad_hook([](Tensor&) {});
      h.remove();
      p.remove();
    }
  });
  std::vector<std::thread> workers;
  for (int t = 0; t < kThreads; ++t)
    workers.emplace_back([&] {
      for (int i = 0; i < kSteps; ++i) (w * 2.0).sum().backward();
    });
  for (auto& t : workers) t.join();
  stop.store(true);
  churn.join();
  CHECK(posts.load() == kThreads * kSteps);
  CHECK(grads.load() == kThreads * kSteps);
  check_values(w.grad(), {2.0 * kThreads * kSteps, 2.0 * kThreads * kSteps, 2.0 * kThreads * kSteps});
}

// ------------------------------------------------------------------------------------------------
// module hooks

// PyTorch: nn.Sequential(nn.Linear(2, 2), nn.ReLU()) with these hooks, called once, logs
// seq pre, lin pre 1, lin pre 2, lin fwd, relu pre, relu fwd, seq fwd.
TEST_CASE("module hooks: pre-hooks and forward hooks run in PyTorch's order, for submodules too") {
  Log log;
  tg::nn::Sequential seq;
  auto& lin = seq.add<tg::nn::Linear>(2, 2);
  auto& relu = seq.add<tg::nn::ReLU>();
  seq.register_forward_pre_hook([&](tg::nn::Module&, const Tensor&) { log.push_back("seq pre"); });
  seq.register_forward_hook([&](tg::nn::Module&, const Tensor&, const Tensor&) { log.push_back("seq fwd"); });
  lin.register_forward_pre_hook([&](tg::nn::Module&, const Tensor&) { log.push_back("lin pre 1"); });
  auto h = lin.register_forward_pre_hook([&](tg::nn::Module&, const Tensor&) { log.push_back("lin pre 2"); });
  lin.register_forward_hook([&](tg::nn::Module& m, const Tensor&, const Tensor&) {
    CHECK(&m == &lin);
    log.push_back("lin fwd");
  });
  relu.register_forward_pre_hook([&](tg::nn::Module&, const Tensor&) { log.push_back("relu pre"); });
  relu.register_forward_hook([&](tg::nn::Module&, const Tensor&, const Tensor&) { log.push_back("relu fwd"); });
  seq(tg::ones({1, 2}));
  CHECK(log == Log{"seq pre", "lin pre 1", "lin pre 2", "lin fwd", "relu pre", "relu fwd", "seq fwd"});
  log.clear();
  h.remove();
  seq(tg::ones({1, 2}));   // every call, without the removed one
  CHECK(log == Log{"seq pre", "lin pre 1", "lin fwd", "relu pre", "relu fwd", "seq fwd"});
  log.clear();
  seq.forward(tg::ones({1, 2}));   // forward() itself skips the module's own hooks (as in PyTorch)
  CHECK(log == Log{"lin pre 1", "lin fwd", "relu pre", "relu fwd"});
}

// PyTorch: Linear(2, 2) with weight [[1, 2], [3, 4]], bias [0.5, -0.5], pre-hooks x * 2 then x + 1,
// forward hooks recording the input, then out * 10, then out - 1; x = [[1, -2]] requires grad:
// y = [[-26, -36]], the input seen by forward hooks [[3, -3]], after y.sum().backward():
// x.grad [[80, 120]], weight.grad [[30, -30], [30, -30]], bias.grad [10, 10].
TEST_CASE("module hooks: replaced inputs and outputs, recorded in the graph") {
  tg::nn::Linear lin(2, 2);
  {
    tg::NoGradGuard g;
    lin.weight.copy_(tg::from_vector(std::vector<float>{1, 2, 3, 4}, {2, 2}));
    lin.bias.copy_(tg::from_vector(std::vector<float>{0.5f, -0.5f}, {2}));
  }
  std::vector<std::vector<double>> seen;
  lin.register_forward_pre_hook([](tg::nn::Module&, const Tensor& in) { return in * 2.0; });
  lin.register_forward_pre_hook([](tg::nn::Module&, const Tensor& in) { return in + 1.0; });
  lin.register_forward_hook([&](tg::nn::Module&, const Tensor& in, const Tensor&) { seen.push_back(in.to_vector<double>()); });
  lin.register_forward_hook([](tg::nn::Module&, const Tensor&, const Tensor& out) { return out * 10.0; });
  lin.register_forward_hook([](tg::nn::Module&, const Tensor&, const Tensor& out) { return out - 1.0; });
  Tensor x = tg::from_vector(std::vector<float>{1, -2}, {1, 2}, tg::TensorOptions().requires_grad(true));
  Tensor y = lin(x);
  check_values(y, {-26, -36});
  REQUIRE(seen.size() == 1);
  CHECK(seen[0] == std::vector<double>{3, -3});
  y.sum().backward();
  check_values(x.grad(), {80, 120});
  check_values(lin.weight.grad(), {30, -30, 30, -30});
  check_values(lin.bias.grad(), {10, 10});
}

// ------------------------------------------------------------------------------------------------
// clone

namespace {
struct Net : tg::nn::Cloneable<Net> {
  tg::nn::Linear fc1{3, 4}, fc2{4, 2};
  tg::nn::Dropout drop{0.25};
  Tensor scale = tg::full({1}, 2.0);
  Tensor steps = tg::zeros({1}, tg::TensorOptions().dtype(tg::kInt64));
  Net() {
    register_module("fc1", fc1);
    register_module("drop", drop);
    register_module("fc2", fc2);
    register_parameter("scale", scale, /*requires_grad=*/false);
    register_buffer("steps", steps);
  }
  Tensor forward(const Tensor& x) override { return fc2(drop(tg::relu(fc1(x)))) * scale; }
};

struct Sized : tg::nn::Module {   // a constructor with arguments: overrides new_instance()
  tg::nn::Linear fc;
  int64_t n;
  explicit Sized(int64_t n_) : fc(n_, n_), n(n_) { register_module("fc", fc); }
  std::unique_ptr<tg::nn::Module> new_instance() const override { return std::make_unique<Sized>(n); }
  Tensor forward(const Tensor& x) override { return fc(x); }
};

struct NoArgsMissing : tg::nn::Cloneable<NoArgsMissing> {   // Cloneable without a default constructor
  tg::nn::Linear fc;
  explicit NoArgsMissing(int64_t n) : fc(n, n) { register_module("fc", fc); }
};

struct WrongLayout : tg::nn::Module {
  tg::nn::Linear fc;
  explicit WrongLayout(int64_t n) : fc(n, n) { register_module("fc", fc); }
  std::unique_ptr<tg::nn::Module> new_instance() const override { return std::make_unique<WrongLayout>(fc.weight.size(0) + 1); }
};

struct Tied : tg::nn::Cloneable<Tied> {
  tg::nn::Linear enc{3, 3}, dec{3, 3};
  Tied() {
    register_module("enc", enc);
    register_module("dec", dec);
    dec.weight = enc.weight;   // tied: one parameter under two names
  }
};
}  // namespace

TEST_CASE("clone: a deep, independent copy with the same values, dtypes, devices and flags") {
  tg::manual_seed(7);
  Net net;
  net.to(tg::kFloat64);
  net.eval();
  net.drop.train();   // one child in another mode than its parent
  {
    tg::NoGradGuard g;
    net.steps.fill_(5);
  }
  Tensor x = tg::randn({5, 3}, tg::TensorOptions().dtype(tg::kFloat64));
  net(x).sum().backward();   // the original has gradients; the copy must not
  int hook_calls = 0;
  auto h = net.fc1.register_forward_hook([&](tg::nn::Module&, const Tensor&, const Tensor&) { ++hook_calls; });

  tg::manual_seed(11);
  const int64_t expected_draw = tg::randint(0, 1 << 30, {1}).item<int64_t>();
  tg::manual_seed(11);
  std::unique_ptr<Net> copy = net.clone();   // typed through Cloneable<Net>
  CHECK(tg::randint(0, 1 << 30, {1}).item<int64_t>() == expected_draw);   // clone drew nothing

  const auto orig = net.named_parameters(), cloned = copy->named_parameters();
  REQUIRE(orig.size() == cloned.size());
  for (std::size_t i = 0; i < orig.size(); ++i) {
    CAPTURE(orig[i].first);
    CHECK(cloned[i].first == orig[i].first);
    CHECK(cloned[i].second.impl() != orig[i].second.impl());
    CHECK(cloned[i].second.data().storage() != orig[i].second.data().storage());
    CHECK(cloned[i].second.dtype() == orig[i].second.dtype());
    CHECK(cloned[i].second.device() == orig[i].second.device());
    CHECK(cloned[i].second.requires_grad() == orig[i].second.requires_grad());
    CHECK(cloned[i].second.to_vector<double>() == orig[i].second.to_vector<double>());
    CHECK_FALSE(cloned[i].second.grad().defined());
  }
  CHECK_FALSE(copy->scale.requires_grad());
  CHECK(copy->steps.dtype() == tg::kInt64);
  CHECK(copy->steps.to_vector<int64_t>() == std::vector<int64_t>{5});
  CHECK_FALSE(copy->is_training());
  CHECK(copy->drop.is_training());
  CHECK_FALSE(copy->fc1.is_training());
  // the members of the copy are what it registered: its own forward uses the copied values
  for (const auto& [name, v] : cloned)
    if (name == "fc1.weight") CHECK(copy->fc1.weight.impl() == v.impl());
  copy->drop.eval();
  net.drop.eval();
  check_values((*copy)(x), net(x).to_vector<double>(), 0);
  // the same forward hooks, called for the copy's module; removing the original's leaves the copy's
  hook_calls = 0;
  h.remove();
  net(x);
  CHECK(hook_calls == 0);
  (*copy)(x);
  CHECK(hook_calls == 1);

  // change the copy: the original is unchanged
  const auto w_before = net.fc1.weight.to_vector<double>();
  const auto g_before = net.fc1.weight.grad().to_vector<double>();
  {
    tg::NoGradGuard g;
    copy->fc1.weight.fill_(0.0);
    copy->steps.fill_(9);
  }
  copy->zero_grad();
  (*copy)(x).sum().backward();
  CHECK(net.fc1.weight.to_vector<double>() == w_before);
  CHECK(net.fc1.weight.grad().to_vector<double>() == g_before);
  CHECK(net.steps.to_vector<int64_t>() == std::vector<int64_t>{5});
  copy->train();
  CHECK_FALSE(net.is_training());
}

TEST_CASE("clone: Sequential, modules with constructor arguments, ties, a target device") {
  tg::manual_seed(3);
  tg::nn::Sequential seq;
  seq.add<tg::nn::Linear>(4, 3);
  seq.add<tg::nn::Tanh>();
  seq.add<tg::nn::Linear>(3, 2, /*bias=*/false);
  std::unique_ptr<tg::nn::Module> copy = seq.clone(tg::Device::cpu());
  Tensor x = tg::randn({2, 4});
  CHECK((*copy)(x).to_vector<float>() == seq(x).to_vector<float>());
  CHECK(copy->named_parameters().size() == 3);   // no bias in the last Linear
  std::ostringstream a, b;
  a << seq;
  b << *copy;
  CHECK(a.str() == b.str());

  Sized sized(5);
  auto sized_copy = sized.clone();
  CHECK(dynamic_cast<Sized*>(sized_copy.get()) != nullptr);
  CHECK(static_cast<Sized&>(*sized_copy).fc.weight.to_vector<float>() == sized.fc.weight.to_vector<float>());

  Tied tied;
  auto tied_copy = tied.clone();
  CHECK(tied_copy->dec.weight.impl() == tied_copy->enc.weight.impl());   // still one parameter
  CHECK(tied_copy->enc.weight.impl() != tied.enc.weight.impl());
  CHECK(tied_copy->parameters().size() == tied.parameters().size());
}

TEST_CASE("clone: errors name the module and what to do") {
  struct Plain : tg::nn::Module {
    std::string name() const override { return "Plain"; }
  };
  Plain plain;
  TG_CHECK_THROWS(plain.clone(), tg::Error, "Plain: clone() needs new_instance()");
  NoArgsMissing no_default(2);
  TG_CHECK_THROWS(no_default.clone(), tg::Error, "the module has no default constructor");
  WrongLayout wrong(2);
  TG_CHECK_THROWS(wrong.clone(), tg::ShapeError, "clone: new_instance() of WrongLayout gave \"fc.weight\" shape [3, 3] instead of [2, 2]");
  struct Derived : Net {};   // inherits Net's new_instance(), which builds a Net
  Derived derived;
  TG_CHECK_THROWS(derived.clone(), tg::Error, "built a module of another type");
}

// ------------------------------------------------------------------------------------------------
// on a GPU: skipped visibly without one, fails under TG_REQUIRE_CUDA=1 (as tests/test_cuda.cpp)

TEST_CASE("cuda: clone(device) copies a module to the GPU, and tensor hooks see its CUDA gradients") {
  if (!tg::cuda::is_available()) {
    const char* require = std::getenv("TG_REQUIRE_CUDA");
    if (require != nullptr && std::string(require) == "1") FAIL("TG_REQUIRE_CUDA=1 but no usable GPU:\n" << tg::cuda::info());
    MESSAGE("no CUDA device: skipped");
    return;
  }
  const tg::Device gpu = tg::Device::cuda(0);
  tg::manual_seed(5);
  tg::nn::Linear lin(33, 7);
  std::unique_ptr<tg::nn::Module> copy = lin.clone(gpu);
  auto& g = static_cast<tg::nn::Linear&>(*copy);
  CHECK(g.weight.device() == gpu);
  CHECK(g.bias.device() == gpu);
  CHECK(lin.weight.device() == tg::Device::cpu());
  CHECK(g.weight.to_vector<float>() == lin.weight.to_vector<float>());
  std::vector<double> post;
  g.weight.register_hook([](const Tensor& grad) { return grad * 2.0; });
  g.weight.register_post_accumulate_grad_hook([&](Tensor& p) { post = p.grad().to_vector<double>(); });
  Tensor x = tg::randn({5, 33});
  g(x.to(gpu)).sum().backward();
  lin(x).sum().backward();
  testing::check_close(g.weight.grad().cpu(), lin.weight.grad() * 2.0, 1e-5, 1e-6);
  CHECK(post == g.weight.grad().to_vector<double>());
}
