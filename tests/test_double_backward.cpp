// tests/test_double_backward.cpp: gradients of gradients. autograd::grad and backward with
// create_graph (values, PyTorch's errors, what composes with them), the functional API against values
// recorded from PyTorch (tests/data/double_backward_reference.py), and third derivatives by nested
// grad calls. The per-op second derivatives are gradgradchecked in tests/test_gradcheck.cpp.
#include <any>
#include <cmath>
#include <thread>
#include <utility>
#include <vector>

#include "testing.h"

using tg::Tensor;
using testing::check_close;
using testing::vals;
namespace F = tg::autograd::functional;

namespace {
Tensor t64(const std::vector<double>& v, const tg::Shape& shape) { return tg::from_vector(v, shape); }
double at(const Tensor& t, int64_t i) { return t.data().to(tg::kFloat64).contiguous().data<double>()[i]; }
}  // namespace

TEST_CASE("double backward: d/dx of x^3 sin x by nested grad calls, to the third derivative") {
  const Tensor x = vals(5, 0.3, 1.2, {5}, true);
  const Tensor y = (tg::pow(x, 3.0) * tg::sin(x)).sum();
  const Tensor d1 = tg::autograd::grad({y}, {x}, {}, std::nullopt, /*create_graph=*/true)[0];
  const Tensor d2 = tg::autograd::grad({d1.sum()}, {x}, {}, std::nullopt, true)[0];
  const Tensor d3 = tg::autograd::grad({d2.sum()}, {x})[0];
  CHECK(d1.requires_grad());
  CHECK(d2.requires_grad());
  CHECK_FALSE(d3.requires_grad());   // no create_graph on the last call: a plain value
  for (int64_t i = 0; i < 5; ++i) {
    const double v = at(x, i), s = std::sin(v), c = std::cos(v);
    CAPTURE(i);
    CHECK(at(d1, i) == doctest::Approx(3 * v * v * s + v * v * v * c).epsilon(1e-12));
    CHECK(at(d2, i) == doctest::Approx(6 * v * s + 6 * v * v * c - v * v * v * s).epsilon(1e-12));
    CHECK(at(d3, i) == doctest::Approx(6 * s + 18 * v * c - 9 * v * v * s - v * v * v * c).epsilon(1e-12));
  }
  CHECK_FALSE(x.grad().defined());   // grad() returns gradients; .grad is untouched
}

TEST_CASE("double backward: backward(create_graph) leaves a .grad with a graph, then a gradient penalty trains") {
  Tensor w = vals(6, 0.2, 0.7, {2, 3}, true);
  Tensor x = vals(12, 0.0, 1.0, {4, 3}, true);
  const Tensor out = tg::tanh(tg::linear(x, w)).sum();
  out.backward(Tensor(), std::nullopt, /*create_graph=*/true);
  REQUIRE(w.grad().defined());
  CHECK(w.grad().requires_grad());
  CHECK(w.grad().grad_fn() != nullptr);
  // WGAN-GP's shape: a penalty on the input gradient's norm, differentiated with respect to w
  const Tensor gx = x.grad();
  const Tensor penalty = tg::pow(tg::sqrt(tg::pow(gx, 2.0).sum(1)) - 1.0, 2.0).mean();
  const Tensor gw = tg::autograd::grad({penalty}, {w})[0];
  // the same by central differences in w
  auto penalty_at = [&](const Tensor& wv) {
    const Tensor xx(x.data().clone(), true);
    const Tensor o = tg::tanh(tg::linear(xx, wv)).sum();
    const Tensor g = tg::autograd::grad({o}, {xx}, {}, std::nullopt, true)[0];
    return tg::pow(tg::sqrt(tg::pow(g, 2.0).sum(1)) - 1.0, 2.0).mean().item();
  };
  for (int64_t i = 0; i < 6; ++i) {
    tg::RawTensor up = w.data().clone(), down = w.data().clone();
    up.data<double>()[i] += 1e-6;
    down.data<double>()[i] -= 1e-6;
    const double numeric = (penalty_at(Tensor(up, true)) - penalty_at(Tensor(down, true))) / 2e-6;
    CAPTURE(i);
    CHECK(at(gw, i) == doctest::Approx(numeric).epsilon(1e-6));
  }
  // A leaf's .grad with a graph leads back to the leaf itself (a reference cycle, as in PyTorch, which
  // warns about it): clearing the gradients frees the graph (LeakSanitizer checks that it does).
  w.zero_grad();
  x.zero_grad();
}

TEST_CASE("double backward: the functional API matches PyTorch (float64)") {
  // values: tests/data/double_backward_reference.py
  const Tensor X = vals(12, 0.0, 1.0, {4, 3}), W1 = vals(15, 0.1, 0.5, {5, 3}), b1 = vals(5, 0.0, 0.3, {5}),
               W2 = vals(10, 0.0, 0.4, {2, 5}), T = vals(8, 0.2, 0.5, {4, 2}), V = vals(15, 0.0, 1.0, {5, 3});
  auto mlp_loss = [&](const Tensor& w1) { return tg::mse_loss(tg::linear(tg::tanh(tg::linear(X, w1, b1)), W2), T); };
  auto [loss, hv] = F::hvp(mlp_loss, W1, V);
  CHECK(loss.item() == doctest::Approx(0.12789764795446334).epsilon(1e-13));
  check_close(hv, t64({0.019555865061604456, 0.042618652020779843, 0.0032450139246305975, -0.002712206256063567,
                       -0.011070682088203918, -0.0032105827252759014, -0.015191988355684609, 0.0013033610751767024,
                       0.015889283477453921, 0.015321313009047455, -0.012434852285220796, -0.021973929849880169,
                       -0.0045715924858599237, -0.035208628648030066, -0.014264941355792369},
                      {5, 3}),
              1e-11, 1e-14);
  CHECK_FALSE(hv.requires_grad());
  CHECK_FALSE(W1.requires_grad());   // the caller's tensor is not touched

  const Tensor x = vals(4, 0.3, 0.8, {4});
  auto scalar = [](const Tensor& v) { return (tg::pow(v, 3.0) * tg::sin(v)).sum() + tg::logsumexp(v, 0); };
  check_close(F::hessian(scalar, x),
              t64({4.0066830956243766, -0.11266823851502568, -0.057054771850842755, -0.024487994089325685,
                   -0.11266823851502568, 8.2061021487872043, -0.092370613341685073, -0.039645606496368113,
                   -0.057054771850842755, -0.092370613341685073, 2.0722739623403741, -0.020076385886133391,
                   -0.024487994089325685, -0.039645606496368113, -0.020076385886133391, 2.1607785244940896},
                  {4, 4}),
              1e-11, 1e-14);
  check_close(F::jacobian([](const Tensor& v) { return tg::softmax(v * v, 0); }, x),
              t64({0.19808323979519399, -0.20544270987729926, -0.027840352552139108, 0.029690311906151744,
                   -0.11491052855294397, 0.54353962162076863, -0.063300066026504925, 0.067506282490037206,
                   -0.041233968485728661, -0.16761600284193481, 0.11424295947708979, 0.024223645647060053,
                   -0.041938742756521354, -0.17048090890153458, -0.02310254089844576, -0.121420240043249},
                  {4, 4}),
              1e-11, 1e-14);
  const Tensor A = vals(12, 0.0, 0.7, {3, 4}), u = vals(4, 0.5, 0.5, {4});
  check_close(F::jvp([&](const Tensor& v) { return tg::sigmoid(tg::matmul(A, v.unsqueeze(1)).squeeze(1)); }, x, u).second,
              t64({0.15806354690108176, 0.11125735390033022, -0.10028359989397234}, {3}), 1e-11, 1e-14);
  check_close(F::vhp(scalar, x, u).second,
              t64({2.6377011746064101, 8.0392659781029483, 1.0498929744827694, 0.022626225183370836}, {4}), 1e-11,
              1e-14);
}

TEST_CASE("double backward: a Hessian-vector product through conv2d, layer_norm, attention and cross_entropy matches PyTorch") {
  // values: tests/data/double_backward_reference.py (composite_loss, composite_hvp)
  const Tensor X = vals(50, 0.0, 1.0, {2, 1, 5, 5}), W = vals(27, 0.1, 0.4, {3, 1, 3, 3}), b = vals(3, 0.0, 0.1, {3}),
               Wl = vals(300, 0.0, 0.2, {4, 75}), V = vals(27, 0.0, 1.0, {3, 1, 3, 3});
  const Tensor targets = tg::from_vector(std::vector<int64_t>{1, 3});
  auto loss_of = [&](const Tensor& w) {
    Tensor h = tg::tanh(tg::conv2d(X, w, b, {1}, {1})).reshape({2, 3, 25});
    h = tg::layer_norm(h, {25});
    h = tg::scaled_dot_product_attention(h, h, h);
    return tg::cross_entropy(tg::linear(h.reshape({2, 75}), Wl), targets);
  };
  auto [loss, hv] = F::hvp(loss_of, W, V);
  CHECK(loss.item() == doctest::Approx(8.6951541984185514).epsilon(1e-13));
  check_close(hv, t64({2.1652090655904788, 1.4145588210573437, -0.61514972710429316, 3.5514372386218453,
                       2.1224946692230819, -1.198476607756167, 2.416682918523581, 1.6905878290628547,
                       -0.67641247024800299, 3.1155186178024268, 1.0422685038481616, -1.9652827980629939,
                       4.0008165476472097, 0.41243553769190011, -2.8781545960921937, 3.3139324849408269,
                       -0.24942820136612689, -2.7187290048196866, 3.6040080352286736, -0.77715528065620809,
                       -3.3303330698327249, 3.9580302184119103, -1.9705155071701945, -4.1704721190084548,
                       3.2184706731175403, -2.3091166168432271, -3.7699946416456696},
                      {3, 1, 3, 3}),
              1e-10, 1e-13);
}

TEST_CASE("double backward: the functional API's shapes, several inputs, create_graph and strict") {
  const Tensor a = vals(3, 0.5, 0.4, {3}), b = vals(2, -0.2, 0.6, {2});
  F::FnN f = [](const std::vector<Tensor>& in) { return tg::sum(in[0] * in[0]) * tg::sum(tg::exp(in[1])); };
  const std::vector<Tensor> J = F::jacobian(f, {a, b});
  CHECK(J[0].shape() == tg::Shape{3});
  CHECK(J[1].shape() == tg::Shape{2});
  const auto H = F::hessian(f, {a, b});
  REQUIRE(H.size() == 2);
  CHECK(H[0][1].shape() == tg::Shape{3, 2});
  check_close(H[0][1], H[1][0].t(), 1e-12, 1e-14);   // mixed partials agree
  // d2f/da_i db_j = 2 a_i exp(b_j)
  CHECK(at(H[0][1], 1 * 2 + 0) == doctest::Approx(2 * at(a, 1) * std::exp(at(b, 0))).epsilon(1e-12));
  // vector-valued f: jacobian of shape f(x).shape ++ x.shape
  CHECK(F::jacobian([](const Tensor& v) { return tg::matmul(v.unsqueeze(1), v.unsqueeze(0)); }, a).shape() == tg::Shape{3, 3, 3});
  // create_graph keeps the caller's graph: the Hessian-vector product can be differentiated again
  const Tensor w = vals(3, 0.1, 0.9, {3}, true);
  auto cube = [](const Tensor& v) { return tg::pow(v, 3.0).sum(); };
  const Tensor hv = F::hvp(cube, w, tg::ones_like(w), /*create_graph=*/true).second;   // 6 w
  REQUIRE(hv.requires_grad());
  const Tensor d = tg::autograd::grad({hv.sum()}, {w})[0];
  check_close(d, tg::full({3}, 6.0, tg::kFloat64), 1e-12, 1e-14);
  // strict: an output that does not depend on an input is an error, otherwise zeros
  auto constant = [](const Tensor& v) { return v.detach() * 2.0; };
  check_close(F::jacobian(constant, a), tg::zeros({3, 3}, tg::kFloat64));
  TG_CHECK_THROWS(F::jacobian(constant, a, false, /*strict=*/true), tg::AutogradError, "independent of input 0");
  TG_CHECK_THROWS(F::hessian([](const Tensor& v) { return v * 2.0; }, a), tg::AutogradError, "single element");
  TG_CHECK_THROWS(F::vjp([](const Tensor& v) { return v * 2.0; }, a), tg::AutogradError, "v can only be None");
}

TEST_CASE("autograd::grad: PyTorch's errors") {
  const Tensor x = vals(3, 0.1, 1.0, {3}, true), z = vals(3, 0.4, 0.2, {3}, true);
  const Tensor c = vals(3, 0.0, 1.0, {3});
  TG_CHECK_THROWS(tg::autograd::grad({(x * 2.0).sum()}, {c}), tg::AutogradError, "does not require grad");
  TG_CHECK_THROWS(tg::autograd::grad({(x * 2.0).sum()}, {z}), tg::AutogradError, "allow_unused");
  const std::vector<Tensor> unused = tg::autograd::grad({(x * 2.0).sum()}, {x, z}, {}, std::nullopt, false, true);
  CHECK(unused[0].defined());
  CHECK_FALSE(unused[1].defined());
  TG_CHECK_THROWS(tg::autograd::grad({x * 2.0}, {x}), tg::AutogradError, "implicitly created only for scalar outputs");
  TG_CHECK_THROWS(tg::autograd::grad({x.sum()}, {x}, {tg::ones({2}, tg::kFloat64)}), tg::ShapeError,
                  "does not match the shape");
  // a second pass through a freed graph
  const Tensor y = (tg::exp(x) * x).sum();
  tg::autograd::grad({y}, {x});
  TG_CHECK_THROWS(tg::autograd::grad({y}, {x}), tg::AutogradError, "backward through the graph a second time");
  // an op whose backward is first-order only (a user's prim rule) is named when a gradient through it is differentiated
  auto my_exp = [](const Tensor& v) {
    const tg::RawTensor y = tg::prim::unary(tg::UnaryOp::Exp, v.data());
    return tg::record("my_exp", y, {v}, [y](const tg::RawTensor& grad, tg::Grads& g) { g.set(0, tg::prim::mul(grad, y)); });
  };
  const Tensor g1 = tg::autograd::grad({my_exp(x).pow(2.0).sum()}, {x}, {}, std::nullopt, true)[0];
  CHECK(g1.requires_grad());   // the first derivative itself is fine
  check_close(g1.detach(), tg::exp(x.detach() * 2.0) * 2.0, 1e-12, 1e-14);
  TG_CHECK_THROWS(tg::autograd::grad({g1.sum()}, {x}), tg::AutogradError, "derivative of 'my_exp' is not implemented twice");
}

TEST_CASE("autograd::grad: non-leaf inputs, several outputs, weighted outputs") {
  const Tensor x = vals(4, 0.2, 0.9, {4}, true);
  const Tensor h = tg::sin(x);           // a non-leaf input
  const Tensor y1 = (h * h).sum(), y2 = (h * 3.0).sum();
  const std::vector<Tensor> g = tg::autograd::grad({y1, y2}, {h, x}, {}, /*retain_graph=*/true);
  for (int64_t i = 0; i < 4; ++i) {
    const double s = std::sin(at(x, i)), c = std::cos(at(x, i));
    CHECK(at(g[0], i) == doctest::Approx(2 * s + 3).epsilon(1e-12));
    CHECK(at(g[1], i) == doctest::Approx((2 * s + 3) * c).epsilon(1e-12));
  }
  // grad_outputs weight a non-scalar output
  const Tensor w = vals(4, 1.0, 0.5, {4});
  const Tensor gw = tg::autograd::grad({h * 2.0}, {x}, {w})[0];
  for (int64_t i = 0; i < 4; ++i) CHECK(at(gw, i) == doctest::Approx(2 * at(w, i) * std::cos(at(x, i))).epsilon(1e-12));
  // the output itself as an input: its gradient is its grad_output
  const Tensor self = tg::autograd::grad({y1}, {y1})[0];
  CHECK(self.item() == 1.0);
}

TEST_CASE("double backward composes with hooks, retain_grad and no_grad") {
  const Tensor x = vals(3, 0.4, 0.5, {3}, true);
  // a tensor hook sees a gradient with a graph under create_graph
  bool saw_graph = false;
  Tensor h = tg::exp(x);
  h.register_hook([&](const Tensor& g) { saw_graph = g.requires_grad(); });
  const Tensor y = (h * h).sum();
  const Tensor gx = tg::autograd::grad({y}, {x}, {}, std::nullopt, true)[0];
  CHECK(saw_graph);
  check_close(tg::autograd::grad({gx.sum()}, {x})[0], tg::exp(x.detach() * 2.0) * 4.0, 1e-12, 1e-14);   // d/dx 2e^2x
  // a hook that scales the gradient is differentiated through; as in PyTorch it runs again in the second
  // backward, which passes through h2's grad_fn once more (exp's gradient reads its output h2): 9 e^x
  Tensor h2 = tg::exp(x);
  h2.register_hook([](const Tensor& g) { return g * 3.0; });
  const Tensor g2 = tg::autograd::grad({h2.sum()}, {x}, {}, std::nullopt, true)[0];   // 3 e^x
  check_close(g2.detach(), tg::exp(x.detach()) * 3.0, 1e-12, 1e-14);
  check_close(tg::autograd::grad({g2.sum()}, {x})[0], tg::exp(x.detach()) * 9.0, 1e-12, 1e-14);
  // an output computed under no_grad has no graph to differentiate, create_graph or not
  {
    tg::NoGradGuard no_grad;
    TG_CHECK_THROWS(tg::autograd::grad({tg::exp(x).sum()}, {x}, {}, std::nullopt, true), tg::AutogradError,
                    "does not require grad and does not have a grad_fn");
  }
}

TEST_CASE("double backward through a checkpointed segment equals the one without checkpointing") {
  // the segment reads its input, a parameter through its closure, and a tensor computed before it
  const Tensor x0 = vals(6, -0.8, 0.9, {2, 3}, true);
  Tensor w = vals(3, 0.3, 1.1, {3}, true);
  auto run = [&](bool checkpointed) {
    const Tensor h = tg::sin(x0);   // the segment's input: a non-leaf with history
    const Tensor older = tg::exp(w * 0.5);
    auto segment = [w, older](const std::vector<Tensor>& in) { return tg::tanh(in[0] * w) * older + in[0] * in[0]; };
    const Tensor y = checkpointed ? tg::checkpoint(segment, {h}) : segment({h});
    const std::vector<Tensor> g = tg::autograd::grad({(y * y).sum()}, {x0, w}, {}, std::nullopt, /*create_graph=*/true);
    const Tensor penalty = (g[0] * g[0]).sum() + (g[1] * g[1]).sum();
    return std::make_pair(g, tg::autograd::grad({penalty}, {x0, w}));
  };
  const auto plain = run(false), ckpt = run(true);
  CHECK_FALSE(w.grad().defined());   // autograd::grad leaves .grad alone, inside the checkpoint's recomputation too
  {
    // the same first-order gradients without create_graph
    const Tensor y = tg::checkpoint([w](const std::vector<Tensor>& in) { return tg::tanh(in[0] * w); }, {tg::sin(x0)});
    const std::vector<Tensor> g = tg::autograd::grad({y.sum()}, {x0, w});
    const Tensor t = tg::tanh(tg::sin(x0.detach()) * w.detach());
    check_close(g[1], ((1.0 - t * t) * tg::sin(x0.detach())).sum(0), 1e-12, 1e-14);
    CHECK_FALSE(w.grad().defined());
  }
  for (int k = 0; k < 2; ++k) {
    CAPTURE(k);
    CHECK(ckpt.first[k].requires_grad());
    check_close(ckpt.first[k].detach(), plain.first[k].detach(), 1e-12, 1e-14);
    check_close(ckpt.second[k], plain.second[k], 1e-12, 1e-14);
  }
}

namespace {
/// x^3 with a backward written in differentiable ops on the saved input: twice differentiable.
struct Cube : tg::autograd::Function<Cube> {
  static Tensor forward(tg::autograd::AutogradContext* ctx, const Tensor& x) {
    ctx->save_for_backward({x});
    return x * x * x;
  }
  static tg::autograd::variable_list backward(tg::autograd::AutogradContext* ctx, tg::autograd::variable_list g) {
    const Tensor x = ctx->get_saved_variables()[0];
    return {g[0] * 3.0 * x * x};
  }
};
/// e^x saving its output.
struct ExpSavingOutput : tg::autograd::Function<ExpSavingOutput> {
  static Tensor forward(tg::autograd::AutogradContext* ctx, const Tensor& x) {
    const Tensor y = tg::exp(x);
    ctx->save_for_backward({y});
    return y;
  }
  static tg::autograd::variable_list backward(tg::autograd::AutogradContext* ctx, tg::autograd::variable_list g) {
    return {g[0] * ctx->get_saved_variables()[0]};
  }
};
/// (sin x, cos x): two outputs through the hub of Note [Custom Functions on record].
struct SinCos : tg::autograd::Function<SinCos> {
  static tg::autograd::variable_list forward(tg::autograd::AutogradContext* ctx, const Tensor& x) {
    ctx->save_for_backward({x});
    return {tg::sin(x), tg::cos(x)};
  }
  static tg::autograd::variable_list backward(tg::autograd::AutogradContext* ctx, tg::autograd::variable_list g) {
    const Tensor x = ctx->get_saved_variables()[0];
    return {g[0] * tg::cos(x) - g[1] * tg::sin(x)};
  }
};
}  // namespace

TEST_CASE("double backward through custom autograd Functions: saved inputs and outputs keep their history") {
  const Tensor x = vals(4, -0.7, 0.8, {4}, true);
  const Tensor xd = x.detach();
  const Tensor d1 = tg::autograd::grad({Cube::apply(x).sum()}, {x}, {}, std::nullopt, true)[0];
  check_close(d1.detach(), xd * xd * 3.0, 1e-12, 1e-14);
  const Tensor d2 = tg::autograd::grad({d1.sum()}, {x}, {}, std::nullopt, true)[0];
  check_close(d2.detach(), xd * 6.0, 1e-12, 1e-14);
  check_close(tg::autograd::grad({d2.sum()}, {x})[0], tg::full({4}, 6.0, tg::TensorOptions().dtype(tg::kFloat64)), 1e-12, 1e-14);
  // a saved output comes back with the Function as its grad_fn: d2/dx2 e^x = e^x
  const Tensor e1 = tg::autograd::grad({ExpSavingOutput::apply(x).sum()}, {x}, {}, std::nullopt, true)[0];
  check_close(tg::autograd::grad({e1.sum()}, {x})[0], tg::exp(xd), 1e-12, 1e-14);
  // two outputs: d/dx (sin x + 2 cos x) = cos x - 2 sin x, and again: -sin x - 2 cos x
  const auto sc = SinCos::apply(x);
  const Tensor s1 = tg::autograd::grad({(sc[0] + sc[1] * 2.0).sum()}, {x}, {}, std::nullopt, true)[0];
  check_close(s1.detach(), tg::cos(xd) - tg::sin(xd) * 2.0, 1e-12, 1e-14);
  check_close(tg::autograd::grad({s1.sum()}, {x})[0], tg::neg(tg::sin(xd)) - tg::cos(xd) * 2.0, 1e-12, 1e-14);
  // without create_graph the saved tensors come without history, as before
  const Tensor plain = tg::autograd::grad({Cube::apply(x).sum()}, {x})[0];
  CHECK_FALSE(plain.requires_grad());
}

TEST_CASE("double backward composes with saved-tensor hooks, anomaly detection and threads") {
  const Tensor x = vals(5, 0.2, 1.3, {5}, true);
  auto second = [](const Tensor& v) {
    const Tensor d1 = tg::autograd::grad({(tg::pow(v, 3.0) * tg::sin(v)).sum()}, {v}, {}, std::nullopt, true)[0];
    return tg::autograd::grad({d1.sum()}, {v})[0];
  };
  const Tensor expected = second(x);
  {
    // every tensor saved, by the forward and by the recorded gradient, goes through the hooks
    int packed = 0, unpacked = 0;
    tg::autograd::SavedTensorHooksGuard hooks(
        [&](const tg::RawTensor& t) { ++packed; return std::any(t.clone()); },
        [&](const std::any& p) { ++unpacked; return std::any_cast<tg::RawTensor>(p); });
    check_close(second(x), expected, 1e-14, 0);
    CHECK(packed > 0);
    CHECK(unpacked > 0);
  }
  {
    // a first derivative that is finite where the second is not: d/dx x^1.5 = 1.5 x^0.5 at 0, then 0.75 x^-0.5
    const Tensor z = tg::zeros({2}, tg::TensorOptions().dtype(tg::kFloat64).requires_grad(true));
    tg::autograd::DetectAnomalyGuard anomaly;
    const Tensor d1 = tg::autograd::grad({tg::pow(z, 1.5).sum()}, {z}, {}, std::nullopt, true)[0];
    CHECK(at(d1, 0) == 0.0);
    TG_CHECK_THROWS(tg::autograd::grad({d1.sum()}, {z}), tg::AutogradError, "returned nan values");
  }
  // second derivatives on several threads at once, each of its own graph of shared leaves
  std::vector<Tensor> results(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) threads.emplace_back([&, t] { results[static_cast<std::size_t>(t)] = second(x); });
  for (std::thread& t : threads) t.join();
  for (const Tensor& r : results) check_close(r, expected, 1e-14, 0);
}

TEST_CASE("double backward: to_dot draws the graph of a gradient") {
  const Tensor x = vals(3, 0.4, 0.5, {3}, true);
  const Tensor g = tg::autograd::grad({tg::sin(x).sum()}, {x}, {}, std::nullopt, true)[0];   // cos x, recorded
  const std::string dot = tg::autograd::to_dot(g);
  CHECK(dot.find("cos") != std::string::npos);
  CHECK(dot.find("mul") != std::string::npos);   // sin's backward: grad * cos(x)
}

TEST_CASE("double backward under CPU autocast: a gradient penalty through linear and matmul") {
  // x (5, 3) @ W^T (3 -> 4) + b, then @ M (4, 2): float32 parameters multiplied in bfloat16
  const Tensor x = vals(15, -1.0, 1.0, {5, 3}).to(tg::kFloat32);
  auto params = [] {
    return std::vector<Tensor>{vals(12, -0.6, 0.7, {4, 3}).to(tg::kFloat32).requires_grad_(true),
                               vals(4, -0.2, 0.3, {4}).to(tg::kFloat32).requires_grad_(true),
                               vals(8, -0.5, 0.9, {4, 2}).to(tg::kFloat32).requires_grad_(true)};
  };
  auto penalty_grads = [&](bool autocast, bool create_graph) {
    std::vector<Tensor> p = params();
    std::vector<Tensor> g;
    {
      tg::amp::AutocastGuard guard(tg::Device::cpu(), tg::kBFloat16, autocast);
      const Tensor y = tg::matmul(tg::linear(x, p[0], p[1]), p[2]);
      g = tg::autograd::grad({(y.to(tg::kFloat32) * y.to(tg::kFloat32)).sum()}, p, {}, std::nullopt, create_graph);
    }
    if (!create_graph) return g;
    Tensor penalty = (g[0] * g[0]).sum() + (g[1] * g[1]).sum() + (g[2] * g[2]).sum();
    std::vector<Tensor> out = tg::autograd::grad({penalty}, p);
    out.insert(out.begin(), g.begin(), g.end());
    return out;
  };
  const std::vector<Tensor> plain = penalty_grads(true, false), mixed = penalty_grads(true, true),
                            full = penalty_grads(false, true);
  for (int k = 0; k < 3; ++k) {
    CAPTURE(k);
    CHECK(mixed[static_cast<std::size_t>(k)].requires_grad());
    // the recorded first derivative has the plain backward's values (both round to bfloat16 in the same places)
    check_close(mixed[static_cast<std::size_t>(k)].detach(), plain[static_cast<std::size_t>(k)], 1e-5, 1e-6);
    // and the second derivative is float32's within bfloat16's rounding (8 bits of mantissa, a few roundings deep)
    check_close(mixed[static_cast<std::size_t>(k) + 3], full[static_cast<std::size_t>(k) + 3], 5e-2, 5e-2);
  }
}
