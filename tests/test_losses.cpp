// tests/test_losses.cpp: nll_loss, binary_cross_entropy (with and without logits), l1_loss,
// smooth_l1_loss, huber_loss, dropout2d and conv_transpose2d against values PyTorch 2.15 computed in
// float64 on the same inputs, and their errors. The inputs are closed forms, vals(n, a, b)[i] =
// a + b sin(1.3 i + 0.4), so that the Python that printed the reference values is short:
//   d = torch.float64; vals = lambda n, a, b: a + b * torch.sin(1.3 * torch.arange(n, dtype=d) + 0.4)
// and each case's comment gives the call. Gradients by gradcheck: tests/test_gradcheck.cpp.
#include <cmath>
#include <vector>

#include "testing.h"

using tg::Tensor;

namespace {

Tensor vals(int64_t n, double a, double b, const tg::Shape& shape, bool grad = false) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = a + b * std::sin(1.3 * static_cast<double>(i) + 0.4);
  Tensor t = tg::from_vector(v, shape);
  return grad ? Tensor(t.data(), true) : t;
}

/// f applied to each of vals(n, a, b), as a (shape) float64 tensor.
template <class F>
Tensor map_vals(int64_t n, double a, double b, const tg::Shape& shape, F f, bool grad = false) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = f(a + b * std::sin(1.3 * static_cast<double>(i) + 0.4));
  Tensor t = tg::from_vector(v, shape);
  return grad ? Tensor(t.data(), true) : t;
}

/// tp = 0.5 + 0.5 cos(vals(12, 1, 2)), (3, 4): targets in [0, 1].
Tensor probability_targets() {
  return map_vals(12, 1, 2, {3, 4}, [](double v) { return 0.5 + 0.5 * std::cos(v); });
}

void check_close(const Tensor& got, const std::vector<double>& want, double rtol = 1e-12) {
  const std::vector<double> g = got.contiguous().to_vector<double>();
  REQUIRE(g.size() == want.size());
  for (size_t i = 0; i < g.size(); ++i) CHECK(g[i] == doctest::Approx(want[i]).epsilon(rtol));
}

}  // namespace

TEST_CASE("losses: nll_loss against PyTorch") {
  // x = log_softmax(vals(20, 0, 2).reshape(4, 5), 1); F.nll_loss(x, [1, -100, 4, 0], weight=w)
  Tensor x = Tensor(tg::log_softmax(vals(20, 0, 2, {4, 5}), 1).data(), true);
  const Tensor target = tg::from_vector(std::vector<int64_t>{1, -100, 4, 0}, {4});
  const Tensor w = tg::from_vector(std::vector<double>{0.5, 1, 2, 1.5, 0.25}, {5});
  Tensor loss = tg::nll_loss(x, target, w);
  check_close(loss, {0.8591315870788725});
  loss.backward();
  check_close(x.grad(), {0.0, -0.5714285714285714, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
                         -0.14285714285714285, -0.2857142857142857, 0.0, 0.0, 0.0, 0.0});
  // reduction='none' without weights: the ignored row is 0
  check_close(tg::nll_loss(x, target, Tensor(), tg::Reduction::None),
              {0.4339143468353809, 0.0, 2.903743454915777, 0.6872601336474039});
  // (N, C, d) input: F.nll_loss(vals(18, 0, 1).reshape(2, 3, 3), [[2, 0, 1], [2, 2, 0]], reduction='sum')
  check_close(tg::nll_loss(vals(18, 0, 1, {2, 3, 3}), tg::from_vector(std::vector<int64_t>{2, 0, 1, 2, 2, 0}, {2, 3}),
                           Tensor(), tg::Reduction::Sum),
              {-4.935387286211024});
  // every row ignored: the weighted mean is 0 / 0, NaN as PyTorch 2.x
  CHECK(std::isnan(tg::nll_loss(x, tg::full({4}, -100, tg::kInt64)).item()));
}

TEST_CASE("losses: nll_loss errors") {
  const Tensor x = tg::zeros({3, 4});
  TG_CHECK_THROWS(tg::nll_loss(x, tg::from_vector(std::vector<int64_t>{0, 4, 1}, {3})), tg::IndexError,
                  "nll_loss: Target 4 is out of bounds");
  TG_CHECK_THROWS(tg::nll_loss(x, tg::from_vector(std::vector<int64_t>{0, -2, 1}, {3})), tg::IndexError,
                  "Target -2 is out of bounds");
  TG_CHECK_THROWS(tg::nll_loss(x, tg::zeros({3})), tg::DTypeError, "expected target of dtype int64");
  TG_CHECK_THROWS(tg::nll_loss(x, tg::zeros({2}, tg::kInt64)), tg::ShapeError,
                  "Expected target of shape [3] for input of shape [3, 4]");
  TG_CHECK_THROWS(tg::nll_loss(x, tg::zeros({3}, tg::kInt64), tg::ones({3})), tg::ShapeError,
                  "weight tensor should be defined either for all 4 classes");
  TG_CHECK_THROWS(tg::nll_loss(x, tg::zeros({3}, tg::kInt64), Tensor(tg::ones({4}).data(), true)), tg::AutogradError,
                  "the derivative for 'weight' is not implemented");
}

TEST_CASE("losses: binary_cross_entropy against PyTorch, at 0 and 1 too") {
  // xp = 0.5 + 0.45 sin(vals(12, 0, 3)), tp = 0.5 + 0.5 cos(vals(12, 1, 2)), both (3, 4)
  Tensor xp = map_vals(12, 0, 3, {3, 4}, [](double v) { return 0.5 + 0.45 * std::sin(v); }, true);
  const Tensor tp = probability_targets();
  Tensor loss = tg::binary_cross_entropy(xp, tp);
  check_close(loss, {1.452145723430908});
  loss.backward();
  check_close(xp.grad(), {0.5486043946870249, 0.19377423509799552, 0.01644388294096758, -0.19253165128897998,
                          -1.1163023969114307, 1.134277883849162, 0.22622581966610902, -0.1496238665157851,
                          -0.129028174212253, -1.3617879615562567, 0.5154051113730018, 0.3186367934569993});
  // inputs of exactly 0 and 1: the logs clamp at -100 and the gradient stays finite (PyTorch's eps)
  Tensor xe(tg::from_vector(std::vector<double>{0.0, 1.0, 0.5, 1.0}, {4}).data(), true);
  const Tensor te = tg::from_vector(std::vector<double>{0.0, 1.0, 1.0, 0.0}, {4});
  Tensor edges = tg::binary_cross_entropy(xe, te, Tensor(), tg::Reduction::Sum);
  check_close(edges, {100.69314718055995});
  edges.backward();
  check_close(xe.grad(), {0.0, 0.0, -2.0, 1000000003995.8029}, 1e-9);
}

TEST_CASE("losses: binary_cross_entropy errors") {
  TG_CHECK_THROWS(tg::binary_cross_entropy(tg::full({3}, 1.5), tg::ones({3})), tg::Error,
                  "binary_cross_entropy: all elements of input should be between 0 and 1");
  TG_CHECK_THROWS(tg::binary_cross_entropy(tg::full({3}, 0.5), tg::ones({4})), tg::ShapeError,
                  "that is different to the input size");
  TG_CHECK_THROWS(tg::binary_cross_entropy(tg::full({3}, 0.5), tg::ones({3}, tg::kFloat64)), tg::DTypeError,
                  "must have the same dtype");
}

TEST_CASE("losses: binary_cross_entropy_with_logits against PyTorch") {
  // F.binary_cross_entropy_with_logits(vals(12, 0, 4).reshape(3, 4), tp, weight=vals(12, 1, 0.5), pos_weight=pw)
  Tensor xl = vals(12, 0, 4, {3, 4}, true);
  const Tensor tp = probability_targets();
  const Tensor pw = tg::from_vector(std::vector<double>{1.0, 2.0, 0.5, 3.0}, {4});
  Tensor loss = tg::binary_cross_entropy_with_logits(xl, tp, vals(12, 1, 0.5, {3, 4}), pw);
  check_close(loss, {3.132558995502157});
  loss.backward();
  check_close(xl.grad(), {0.042739794515606666, 0.12154267433615924, 0.009958166593139464, -0.11032404239191725,
                          -0.051826422246118005, 0.07160038243138818, 0.1177125256475486, -0.108965374896773,
                          -0.032550967477281444, -0.11054321652900102, 0.09684166180585635, 0.10838747024182314});
  // stable at +-100: F.binary_cross_entropy_with_logits([-100, 100, 0], [1, 0, 1], reduction='none')
  check_close(tg::binary_cross_entropy_with_logits(tg::from_vector(std::vector<double>{-100, 100, 0}, {3}),
                                                   tg::from_vector(std::vector<double>{1, 0, 1}, {3}), Tensor(),
                                                   Tensor(), tg::Reduction::None),
              {100.0, 100.0, 0.6931471805599453});
}

TEST_CASE("losses: l1, smooth_l1 and huber against PyTorch") {
  // a = vals(10, 0, 2), b = vals(10, 0.3, 1.5).flip(0)
  const Tensor a = vals(10, 0, 2, {10});
  std::vector<double> bv = vals(10, 0.3, 1.5, {10}).to_vector<double>();
  const Tensor b = tg::from_vector(std::vector<double>(bv.rbegin(), bv.rend()), {10});
  check_close(tg::l1_loss(a, b), {2.1330893050507727});
  check_close(tg::smooth_l1_loss(a, b, tg::Reduction::Mean, 0.7), {1.8093400655544851});
  check_close(tg::smooth_l1_loss(a, b, tg::Reduction::Mean, 0.0), {2.1330893050507727});
  check_close(tg::huber_loss(a, b, tg::Reduction::Sum, 0.6), {11.126065148968902});
  TG_CHECK_THROWS(tg::smooth_l1_loss(a, b, tg::Reduction::Mean, -1), tg::Error, "does not support negative values for beta");
  TG_CHECK_THROWS(tg::huber_loss(a, b, tg::Reduction::Mean, 0), tg::Error, "non-positive values for delta");
  TG_CHECK_THROWS(tg::l1_loss(a, tg::ones({3})), tg::ShapeError, "l1_loss: Using a target size [3] that is different to the input size [10]");
  TG_CHECK_THROWS(tg::l1_loss(tg::ones({3}, tg::kInt64), tg::ones({3}, tg::kInt64)), tg::DTypeError, "l1_loss");
}

TEST_CASE("losses: conv_transpose2d against PyTorch") {
  // F.conv_transpose2d(vals(96, 0, 1).reshape(2, 4, 3, 4), vals(72, 0.1, 0.5).reshape(4, 3, 2, 3), vals(6, 0, 1),
  //                    stride=(2, 1), padding=(1, 0), output_padding=(1, 0), groups=2, dilation=(1, 2)),
  // then y.backward(vals(y.numel(), 0, 1))
  Tensor x = vals(96, 0, 1, {2, 4, 3, 4}, true), w = vals(72, 0.1, 0.5, {4, 3, 2, 3}, true), b = vals(6, 0, 1, {6}, true);
  Tensor y = tg::conv_transpose2d(x, w, b, {2, 1}, {1, 0}, {1, 0}, 2, {1, 2});
  CHECK(y.shape() == tg::Shape{2, 6, 5, 8});
  check_close(tg::sum(y * y), {324.83190509281775});
  check_close(y.reshape({-1}).narrow(0, 0, 8),
              {0.14297850117099803, -0.3372339413194722, 0.2298702109554716, 1.0578598123011629, 0.6683342760246147,
               1.1208956642293968, 0.5305781619318796, -0.27011750742589263});
  y.backward(vals(y.numel(), 0, 1, y.shape()));
  check_close(tg::sum(x.grad() * x.grad()), {184.49334266866376});
  check_close(tg::sum(w.grad() * w.grad()), {130.37667627467718});
  check_close(b.grad(), {-0.5302037945632154, 1.1359856783554603, 0.1598934091874058, -1.188107981570498,
                         0.22740788598485362, 1.1139772037793425});
}

TEST_CASE("losses: conv_transpose2d errors") {
  const Tensor x = tg::zeros({1, 4, 3, 3});
  TG_CHECK_THROWS(tg::conv_transpose2d(x, tg::zeros({3, 2, 3, 3})), tg::ShapeError,
                  "conv_transpose2d: Given transposed=1, weight of size [3, 2, 3, 3], expected input[1, 4, 3, 3] to "
                  "have 3 channels, but got 4 channels instead");
  TG_CHECK_THROWS(tg::conv_transpose2d(x, tg::zeros({4, 2, 3, 3}), Tensor(), {2}, {0}, {2}), tg::ShapeError,
                  "output padding must be smaller than either stride or dilation");
  TG_CHECK_THROWS(tg::conv_transpose2d(x, tg::zeros({4, 2, 3, 3}), tg::zeros({3})), tg::ShapeError,
                  "expected bias to be 1-dimensional with 2 elements");
  TG_CHECK_THROWS(tg::conv_transpose2d(x, tg::zeros({4, 2, 3, 3}), Tensor(), {1}, {3}), tg::ShapeError,
                  "Output size is too small");
  TG_CHECK_THROWS(tg::conv_transpose2d(tg::zeros({4, 3}), tg::zeros({4, 2, 3, 3})), tg::ShapeError,
                  "Expected 3D (unbatched) or 4D (batched) input");
  TG_CHECK_THROWS(tg::conv_transpose2d(x, tg::zeros({4, 2, 3, 3}), Tensor(), {1}, {0}, {0}, 3), tg::ShapeError,
                  "expected weight to be divisible by 3");
}

TEST_CASE("losses: dropout2d zeroes whole channels") {
  tg::manual_seed(3);
  const Tensor x = tg::ones({8, 16, 3, 3});
  const Tensor y = tg::dropout2d(x, 0.5, true);
  const std::vector<float> v = y.to_vector<float>();
  int zeroed = 0;
  for (size_t plane = 0; plane < 8 * 16; ++plane) {
    const float first = v[plane * 9];
    CHECK((first == 0.0f || first == 2.0f));   // dropped, or kept and scaled by 1 / (1 - p)
    for (size_t k = 1; k < 9; ++k) CHECK(v[plane * 9 + k] == first);
    zeroed += first == 0.0f;
  }
  CHECK(zeroed > 32);    // about half of 128 planes (binomial: 64 +- 5.7)
  CHECK(zeroed < 96);
  CHECK(tg::dropout2d(x, 0.5, false).data().storage() == x.data().storage());   // the identity when not training
  TG_CHECK_THROWS(tg::dropout2d(tg::ones({4}), 0.5), tg::ShapeError, "at least 2 dims");
  TG_CHECK_THROWS(tg::dropout2d(x, 1.5), tg::Error, "between 0 and 1");
}

TEST_CASE("losses: the loss objects of torch::nn call the functions with their options") {
  tg::manual_seed(5);
  const Tensor logp = tg::log_softmax(tg::randn({6, 4}, tg::kFloat64), 1);
  const Tensor cls = tg::from_vector(std::vector<int64_t>{0, 3, 1, 2, -100, 1}, {6});
  const Tensor w = tg::from_vector(std::vector<double>{1, 2, 0.5, 1}, {4});
  tg::nn::NLLLoss nll(tg::nn::NLLLossOptions().weight(w).reduction(tg::kSum));
  check_close(nll(logp, cls), tg::nll_loss(logp, cls, w, tg::Reduction::Sum).to_vector<double>());
  check_close(nll->forward(logp, cls), tg::nll_loss(logp, cls, w, tg::Reduction::Sum).to_vector<double>());
  CHECK(tg::nn::NLLLoss().options().ignore_index_ == -100);

  const Tensor p = tg::sigmoid(tg::randn({3, 4}, tg::kFloat64)), t = tg::rand({3, 4}, tg::kFloat64);
  check_close(tg::nn::BCELoss()(p, t), tg::binary_cross_entropy(p, t).to_vector<double>());
  check_close(tg::nn::BCELoss(tg::nn::BCELossOptions().reduction(tg::kNone))(p, t),
              tg::binary_cross_entropy(p, t, Tensor(), tg::Reduction::None).to_vector<double>());
  const Tensor logits = tg::randn({3, 4}, tg::kFloat64), pw = tg::full({4}, 2.0, tg::kFloat64);
  check_close(tg::nn::BCEWithLogitsLoss(tg::nn::BCEWithLogitsLossOptions().pos_weight(pw))(logits, t),
              tg::binary_cross_entropy_with_logits(logits, t, Tensor(), pw).to_vector<double>());
  check_close(tg::nn::L1Loss(tg::kSum)(logits, t), tg::l1_loss(logits, t, tg::Reduction::Sum).to_vector<double>());
  check_close(tg::nn::SmoothL1Loss(tg::nn::SmoothL1LossOptions().beta(0.3))(logits, t),
              tg::smooth_l1_loss(logits, t, tg::Reduction::Mean, 0.3).to_vector<double>());
  check_close(tg::nn::HuberLoss(tg::nn::HuberLossOptions(tg::kSum).delta(0.4))->forward(logits, t),
              tg::huber_loss(logits, t, tg::Reduction::Sum, 0.4).to_vector<double>());
}

TEST_CASE("losses: nn::ConvTranspose2d in both styles, PyTorch's parameters and printing") {
  // print(torch.nn.ConvTranspose2d(64, 32, 4, stride=2, padding=1, output_padding=1, groups=2, bias=False,
  //                                dilation=2)), print(torch.nn.ConvTranspose2d(8, 4, 3))
  tg::nn::ConvTranspose2d up(64, 32, 4,
                             tg::nn::ConvTranspose2dOptions().stride(2).padding(1).output_padding(1).groups(2).bias(false).dilation(2));
  CHECK(up.name() == "ConvTranspose2d(64, 32, kernel_size=(4, 4), stride=(2, 2), padding=(1, 1), dilation=(2, 2), "
                     "output_padding=(1, 1), groups=2, bias=False)");
  CHECK(up.weight.shape() == tg::Shape{64, 16, 4, 4});
  CHECK(!up.bias.defined());
  tg::nn::ConvTranspose2d plain(tg::nn::ConvTranspose2dOptions(8, 4, 3));   // libtorch's form
  CHECK(plain.name() == "ConvTranspose2d(8, 4, kernel_size=(3, 3), stride=(1, 1))");
  CHECK(plain.bias.shape() == tg::Shape{4});
  // U(+-1/sqrt(fan_in)), fan_in = weight.size(1) kH kW = 4 * 9 (PyTorch's _calculate_fan_in_and_fan_out)
  const double bound = 1.0 / std::sqrt(36.0);
  for (const Tensor& p : {plain.weight, plain.bias}) {
    CHECK(tg::max(p).item() <= bound);
    CHECK(tg::min(p).item() >= -bound);
  }
  const Tensor x = tg::randn({2, 8, 5, 5});
  check_close(plain(x).to(tg::kFloat64), tg::conv_transpose2d(x, plain.weight, plain.bias).to(tg::kFloat64).to_vector<double>(), 1e-15);
  // the handle form: a temporary registered into a module and reached through ->
  struct Net : tg::nn::Module {
    tg::nn::ConvTranspose2d deconv{nullptr};
    Net() { deconv = register_module("deconv", tg::nn::ConvTranspose2d(tg::nn::ConvTranspose2dOptions(3, 2, 2).stride(2))); }
  } net;
  CHECK(net.deconv->forward(tg::ones({1, 3, 4, 4})).shape() == tg::Shape{1, 2, 8, 8});
  CHECK(net.parameters().size() == 2);
  TG_CHECK_THROWS(tg::nn::ConvTranspose2d(tg::nn::ConvTranspose2dOptions()), tg::Error,
                  "ConvTranspose2d: the options name no channels or kernel size");
  TG_CHECK_THROWS(tg::nn::ConvTranspose2d(6, 4, 3, tg::nn::ConvTranspose2dOptions().groups(4)), tg::ShapeError,
                  "in_channels must be divisible by groups");
}
