// tests/test_losses.cpp: nll_loss, binary_cross_entropy (with and without logits), l1_loss,
// smooth_l1_loss, huber_loss, kl_div, margin_ranking_loss, cosine_embedding_loss, cross_entropy over
// (N, C, d...) and with probability targets, dropout2d and conv_transpose2d against values PyTorch 2.15 computed in
// float64 on the same inputs, and their errors. The inputs are closed forms, vals(n, a, b)[i] =
// a + b sin(1.3 i + 0.4), so that the Python that printed the reference values is short:
//   d = torch.float64; vals = lambda n, a, b: a + b * torch.sin(1.3 * torch.arange(n, dtype=d) + 0.4)
// and each case's comment gives the call. Gradients by gradcheck: tests/test_gradcheck.cpp.
#include <cmath>
#include <vector>

#include "testing.h"

using tg::Tensor;

namespace {

using testing::vals;

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

namespace {
/// softmax(vals(12, a, b).reshape(3, 4), 1) as float64 values, row by row.
std::vector<double> softmax_rows(double a, double b) {
  std::vector<double> v = vals(12, a, b, {12}).to_vector<double>();
  for (int r = 0; r < 3; ++r) {
    double z = 0;
    for (int c = 0; c < 4; ++c) z += std::exp(v[static_cast<size_t>(4 * r + c)]);
    for (int c = 0; c < 4; ++c) v[static_cast<size_t>(4 * r + c)] = std::exp(v[static_cast<size_t>(4 * r + c)]) / z;
  }
  return v;
}
}  // namespace

TEST_CASE("losses: kl_div against PyTorch, batchmean, log_target and a zero target") {
  // tests/data/losses_more_reference.py: x = log_softmax(vals(12, 0, 2).reshape(3, 4), 1),
  // t = softmax(vals(12, 1, 1.5).reshape(3, 4), 1) with t[1, 2] = 0
  Tensor x = Tensor(tg::log_softmax(vals(12, 0, 2, {3, 4}), 1).data(), true);
  std::vector<double> tv = softmax_rows(1, 1.5);
  tv[6] = 0.0;
  Tensor t = Tensor(tg::from_vector(tv, {3, 4}).data(), true);
  Tensor loss = tg::kl_div(x, t, tg::kBatchMean);
  check_close(loss, {0.04450673597407817});
  loss.backward();
  check_close(x.grad(), {-0.07755476019074871, -0.1913977976016375, -0.053438783684805244, -0.010941991856141906,
                         -0.016657481820673385, -0.10224982439211375, -0.0, -0.0383606713133406, -0.01043975483192633,
                         -0.0231629552711283, -0.13804631967734032, -0.16168430355293836});
  // the target's gradient log t + 1 - x, NaN at t == 0 as PyTorch's xlogy gives
  const std::vector<double> dt = t.grad().to_vector<double>();
  CHECK(std::isnan(dt[6]));
  CHECK(dt[0] == doctest::Approx(0.3848987572867985).epsilon(1e-12));
  CHECK(dt[11] == doctest::Approx(0.3080165727950474).epsilon(1e-12));
  check_close(tg::kl_div(x, t), {0.011126683993519543});   // 'mean': over every element
  check_close(tg::kl_div(x, t, tg::Reduction::None),
              {0.03599229679960758, -0.0840773942303456, 0.044703483286207824, 0.02650659486405693, 0.03267049291031954,
               0.015005246728353516, 0.0, 0.04323773806459805, 0.026226478013563995, 0.03973004126625651,
               -0.00963486461774038, -0.03683990516264346});
  check_close(tg::kl_div(x, vals(12, -1, 0.5, {3, 4}), tg::Reduction::Sum, /*log_target=*/true), {4.197839550991537});
  // the module, with libtorch's options
  tg::nn::KLDivLoss batchmean{tg::nn::KLDivLossOptions(tg::kBatchMean)};
  check_close(batchmean(x, t), {0.04450673597407817});
  tg::nn::KLDivLoss summed(tg::nn::KLDivLossOptions().reduction(tg::kSum).log_target(true));
  check_close(summed->forward(x, vals(12, -1, 0.5, {3, 4})), {4.197839550991537});
  TG_CHECK_THROWS(tg::kl_div(x, tg::ones({4})), tg::ShapeError, "kl_div");
}

TEST_CASE("losses: margin_ranking_loss and cosine_embedding_loss against PyTorch") {
  // a = vals(6, 0, 1), b = vals(6, 0.2, 0.8).flip(0), y = [1, -1, 1, 1, -1, -1], margin 0.3
  Tensor a = vals(6, 0, 1, {6}, true);
  std::vector<double> bv = vals(6, 0.2, 0.8, {6}).to_vector<double>();
  Tensor b = Tensor(tg::from_vector(std::vector<double>(bv.rbegin(), bv.rend()), {6}).data(), true);
  const Tensor y = tg::from_vector(std::vector<double>{1, -1, 1, 1, -1, -1}, {6});
  Tensor loss = tg::margin_ranking_loss(a, b, y, 0.3);
  check_close(loss, {0.6776631039484773});
  loss.backward();
  const double s = 1.0 / 6;
  check_close(a.grad(), {-s, s, 0, -s, 0, s});   // 0 where the hinge is inactive
  check_close(b.grad(), {s, -s, 0, s, 0, -s});
  check_close(tg::nn::MarginRankingLoss(tg::nn::MarginRankingLossOptions().margin(0.3).reduction(tg::kNone))(a, b, y),
              {0.5733334692019096, 1.5966781207503253, 0.0, 1.5290619431973491, 0.0, 0.3669050905412797});
  TG_CHECK_THROWS(tg::margin_ranking_loss(a, tg::reshape(b, {2, 3}), y), tg::ShapeError,
                  "All input tensors should have same dimension");

  // p = vals(12, 0, 1).reshape(3, 4), q = vals(12, 0.5, 1).flip(0).reshape(3, 4), y = [1, -1, -1]
  Tensor p = vals(12, 0, 1, {3, 4}, true);
  std::vector<double> qv = vals(12, 0.5, 1, {12}).to_vector<double>();
  Tensor q = Tensor(tg::from_vector(std::vector<double>(qv.rbegin(), qv.rend()), {3, 4}).data(), true);
  const Tensor y3 = tg::from_vector(std::vector<double>{1, -1, -1}, {3});
  loss = tg::cosine_embedding_loss(p, q, y3, -0.2);
  check_close(loss, {0.6392768092785175});
  loss.backward();
  check_close(p.grad(), {-0.11419304524287163, -0.018146685799831586, 0.013148646627832015, -0.0661547832835738,
                         0.14715893838258864, 0.12339720477415338, 0.022224030165357872, -0.00814164761837426,
                         0.04311706861764385, 0.11355435103330616, 0.10021943009028855, 0.02264799621050881});
  check_close(q.grad(), {0.05454897294344929, -0.02861856369356193, -0.013738519100230022, 0.07738980653397698,
                         -0.11681150948130076, -0.012415687340562892, 0.0623563420797254, -0.002036619493391746,
                         -0.08483590380006487, -0.09037765414892754, -0.008854582499960018, 0.04030182019285701});
  check_close(tg::nn::CosineEmbeddingLoss(tg::nn::CosineEmbeddingLossOptions().margin(0.1).reduction(tg::kNone))
                  ->forward(p, q, y3),
              {0.17636210954218223, 0.5729286012476309, 0.5685397170457391});
  check_close(tg::cosine_embedding_loss(tg::select(p, 0, 0), tg::select(q, 0, 0), tg::full({}, -1.0, tg::kFloat64), 0.1),
              {0.7236378904578178});
  TG_CHECK_THROWS(tg::cosine_embedding_loss(p, q, tg::ones({3, 1}, tg::kFloat64)), tg::ShapeError,
                  "0D or 1D target tensor expected, multi-target not supported");
  TG_CHECK_THROWS(tg::cosine_embedding_loss(tg::select(p, 0, 0), tg::select(q, 0, 0), y3), tg::ShapeError,
                  "1D target tensor expects 2D input tensors, but found inputs with sizes [4] and [4].");
}

TEST_CASE("losses: cross_entropy over (N, C, d1, d2) and with class-probability targets, against PyTorch") {
  // z = vals(24, 0, 2).reshape(2, 3, 2, 2), target [[[0, 2], [1, -100]], [[2, 2], [0, 1]]], label_smoothing 0.1
  Tensor z = vals(24, 0, 2, {2, 3, 2, 2}, true);
  const Tensor tgt = tg::from_vector(std::vector<int64_t>{0, 2, 1, -100, 2, 2, 0, 1}, {2, 2, 2});
  Tensor loss = tg::cross_entropy(z, tgt, tg::Reduction::Mean, -100, 0.1);
  check_close(loss, {1.0963144730502468});
  loss.backward();
  check_close(z.grad(), {-0.013725077705027193, 0.09088507497683711, 0.010658179585893875, 0.0, 0.01076931079708892,
                         0.03709321088240282, -0.05701662202515148, 0.0, 0.0029557669079382748, -0.12797828585923993,
                         0.04635844243925763, 0.0, 0.0022515924787971813, 0.0008012433118442639, -0.04775202282756953,
                         0.11484166677789237, 0.04696435347754019, 0.010746218771631571, 0.01531996399510993,
                         -0.11357799513204586, -0.049215945956337374, -0.011547462083475844, 0.03243205883245962,
                         -0.0012636716458464487},
              1e-10);
  const Tensor none = tg::cross_entropy(z, tgt, tg::Reduction::None);
  CHECK(none.shape() == tg::Shape{2, 2, 2});
  check_close(none, {0.1776232638000195, 3.2838055606894847, 0.6269531945409385, 0.0, 0.5296318378604733,
                     0.1595807809701609, 0.5123782058307697, 1.9784213864283113});
  TG_CHECK_THROWS(tg::cross_entropy(z, tg::zeros({2, 2}, tg::kInt64)), tg::ShapeError, "Expected target size [2, 2, 2], got [2, 2]");

  // probabilities: z2 = vals(12, 0, 2).reshape(3, 4), tp = softmax(vals(12, 1, 1.5).reshape(3, 4), 1), smoothing 0.2
  Tensor z2 = vals(12, 0, 2, {3, 4}, true);
  Tensor tp = Tensor(tg::from_vector(softmax_rows(1, 1.5), {3, 4}).data(), true);
  loss = tg::cross_entropy(z2, tp, tg::Reduction::Mean, -100, 0.2);
  check_close(loss, {1.284766360674085});
  loss.backward();
  check_close(z2.grad(), {-0.012271224700197302, 0.05179448286959427, -0.018982872213583777, -0.020540385955813197,
                          -0.02132940742210478, -0.0010980861586922458, 0.04343659446382356, -0.021009100883026554,
                          -0.020499745644042743, -0.022120653088166655, 0.014191869100846207, 0.028428529631363164},
              1e-10);
  check_close(tp.grad(), {0.43009466459226736, 0.10889654824889777, 0.5625204428582852, 1.1264062800899237,
                          0.9733476429632143, 0.32817089509093644, 0.1349491392020978, 0.6767527003442749,
                          1.1469101708418914, 0.8635561625582157, 0.2288770401651232, 0.17267920486353133},
              1e-10);
  // (N, C, d) probabilities: classes along dim 1
  std::vector<double> t3 = vals(24, 1, 1.5, {24}).to_vector<double>();
  for (int n = 0; n < 2; ++n)
    for (int d = 0; d < 4; ++d) {
      double zs = 0;
      for (int c = 0; c < 3; ++c) zs += std::exp(t3[static_cast<size_t>(12 * n + 4 * c + d)]);
      for (int c = 0; c < 3; ++c)
        t3[static_cast<size_t>(12 * n + 4 * c + d)] = std::exp(t3[static_cast<size_t>(12 * n + 4 * c + d)]) / zs;
    }
  check_close(tg::cross_entropy(vals(24, 0, 2, {2, 3, 4}), tg::from_vector(t3, {2, 3, 4}), tg::Reduction::Sum),
              {6.733529023676887}, 1e-10);
  // a floating target of another shape is not probabilities: refused as class indices
  TG_CHECK_THROWS(tg::cross_entropy(z2, tg::ones({3}, tg::kFloat64)), tg::DTypeError, "int64 class indices");
}

TEST_CASE("losses: cross_entropy with class weights against PyTorch") {
  // tests/data/losses_more_reference.py: zw = vals(20, 0, 2).reshape(5, 4), targets [1, 3, -100, 0, 1],
  // weight [0.5, 2, 1, 1.5]
  const Tensor wc = tg::from_vector(std::vector<double>{0.5, 2.0, 1.0, 1.5}, {4});
  const Tensor tw = tg::from_vector(std::vector<int64_t>{1, 3, -100, 0, 1}, {5});
  Tensor zw = vals(20, 0, 2, {5, 4}, true);
  Tensor loss = tg::cross_entropy(zw, tw, wc);
  check_close(loss, {1.879738222456916}, 1e-12);
  loss.backward();
  check_close(zw.grad(), {0.06643925011906833, -0.11175394571576239, 0.04043482140092708, 0.004879874195766994,
                          0.006497433525825449, 0.07302633001624909, 0.15071665933219103, -0.23024042287426555, 0.0,
                          0.0, 0.0, 0.0, -0.07661917056631617, 0.001616845311889221, 0.007286901716233849,
                          0.06771542353819311, 0.24665391279999882, -0.31088279213796755, 0.00851702289261835,
                          0.055711856445350386},
              1e-10);
  zw.zero_grad();
  // with label smoothing 0.15: the module and F:: spellings with the weight option
  loss = tg::nn::CrossEntropyLoss(tg::nn::CrossEntropyLossOptions().weight(wc).label_smoothing(0.15))(zw, tw);
  check_close(loss, {1.8631312813737186}, 1e-12);
  loss.backward();
  check_close(zw.grad(), {0.059577042299870736, -0.08671778626925077, 0.03191036269712493, -0.004769618727744899,
                          0.0032099976876798124, 0.05870067176584286, 0.14069874284888625, -0.2026094123024089, 0.0,
                          0.0, 0.0, 0.0, -0.06573348394373732, -0.010519364492935702, 0.002676454602386466,
                          0.07357639383428656, 0.22965463020499888, -0.2746456350802069, 0.001787940354908568,
                          0.04320306452029943},
              1e-10);
  namespace F = tg::nn::functional;
  check_close(F::cross_entropy(zw, tw, F::CrossEntropyFuncOptions().weight(wc).label_smoothing(0.15).reduction(tg::Reduction::Sum)),
              {11.178787688242313}, 1e-12);
  check_close(tg::cross_entropy(zw, tw, wc, tg::Reduction::None, -100, 0.15),
              {1.071789442369284, 3.558190164340407, 0.0, 1.5163724199959987, 5.032435661536623}, 1e-12);
  // (N, C, d1, d2) index targets and class-probability targets
  const Tensor z = vals(24, 0, 2, {2, 3, 2, 2});
  const Tensor tgt = tg::from_vector(std::vector<int64_t>{0, 2, 1, -100, 2, 2, 0, 1}, {2, 2, 2});
  check_close(tg::cross_entropy(z, tgt, tg::from_vector(std::vector<double>{1.0, 0.25, 3.0}, {3}), tg::Reduction::Mean,
                                -100, 0.1),
              {1.1870173709393188}, 1e-12);
  const Tensor z2 = vals(12, 0, 2, {3, 4});
  const Tensor tp = tg::from_vector(softmax_rows(1, 1.5), {3, 4});
  check_close(tg::cross_entropy(z2, tp, wc, tg::Reduction::Mean, -100, 0.2), {1.578296924841532}, 1e-12);
  check_close(tg::cross_entropy(z2, tp, wc, tg::Reduction::None), {1.202750595762381, 1.551583048254825, 1.3439999762087989},
              1e-12);
  TG_CHECK_THROWS(tg::cross_entropy(zw, tw, tg::ones({3}, tg::kFloat64)), tg::ShapeError,
                  "weight tensor should be defined either for all 4 classes or no classes but got weight tensor of shape: [3]");
  TG_CHECK_THROWS(tg::cross_entropy(zw, tw, Tensor(wc.data(), true)), tg::AutogradError, "class weights get no gradient");
}
