// tests/test_qat.cpp: observers (MinMaxObserver, MovingAverageMinMaxObserver), FakeQuantize and
// fake_quantize_per_tensor_affine with its straight-through backward, against values recorded from
// PyTorch (Note [Observers] in quantization/observer.h).
#include <cmath>

#include "testing.h"
#include "tensorgrad/quantization/observer.h"

using tg::Variable;
namespace q = tg::quantization;

namespace {

/// x[k] = s sin(off + 1.7 k) + 0.3 in float32, the inputs of the PyTorch script.
Variable wave(int64_t n, double off, double s) {
  std::vector<double> v;
  for (int64_t k = 0; k < n; ++k) v.push_back(s * std::sin(off + 1.7 * double(k)) + 0.3);
  return tg::from_vector<double>(v).to(tg::kFloat32);
}

std::vector<Variable> batches() { return {wave(10, 0.0, 2.0), wave(10, 1.0, 3.0), wave(10, 2.0, 0.5)}; }

}  // namespace

// Recorded with PyTorch 1.13 (/usr/bin/python3): each observer sees the three batches, then
//   obs.min_val, obs.max_val, obs.calculate_qparams()
// for MinMaxObserver(), MinMaxObserver(dtype=torch.qint8, qscheme=torch.per_tensor_symmetric),
// MinMaxObserver(reduce_range=True), MovingAverageMinMaxObserver(),
// MovingAverageMinMaxObserver(averaging_constant=0.5, dtype=torch.qint8).
TEST_CASE("observers: min, max, scale and zero point as PyTorch's") {
  struct Row {
    const char* what;
    std::unique_ptr<q::MinMaxObserver> obs;
    double min_val, max_val, scale;
    int64_t zero_point;
  };
  std::vector<Row> rows;
  rows.push_back({"minmax quint8", std::make_unique<q::MinMaxObserver>(), -2.637533187866211, 3.2956299781799316,
                  0.02326730638742447, 113});
  rows.push_back({"minmax qint8 symmetric", std::make_unique<q::MinMaxObserver>(tg::kInt8, true), -2.637533187866211,
                  3.2956299781799316, 0.02584807761013508, 0});
  rows.push_back({"minmax quint8 reduce_range", std::make_unique<q::MinMaxObserver>(tg::kUInt8, false, true),
                  -2.637533187866211, 3.2956299781799316, 0.046717818826436996, 56});
  rows.push_back({"moving average quint8", std::make_unique<q::MovingAverageMinMaxObserver>(), -1.5488624572753906,
                  2.2783782482147217, 0.01500878669321537, 103});
  rows.push_back({"moving average 0.5 qint8", std::make_unique<q::MovingAverageMinMaxObserver>(0.5, tg::kInt8),
                  -1.147234320640564, 1.787741780281067, 0.011509709991514683, -28});
  for (Row& r : rows) {
    CAPTURE(r.what);
    for (const Variable& x : batches()) {
      Variable y = (*r.obs)(x);
      CHECK(y.data().raw_data() == x.data().raw_data());   // observers pass x through
    }
    CHECK(r.obs->min_val() == r.min_val);
    CHECK(r.obs->max_val() == r.max_val);
    const q::QParams p = r.obs->calculate_qparams();
    CHECK(p.scale == r.scale);
    CHECK(p.zero_point == r.zero_point);
  }
  q::MinMaxObserver fresh;
  CHECK(fresh.calculate_qparams().scale == 1);
  TG_CHECK_THROWS(q::MinMaxObserver(tg::kInt64), tg::DTypeError, "MinMaxObserver: expected dtype uint8");
  TG_CHECK_THROWS(q::MovingAverageMinMaxObserver(0.0), tg::Error, "averaging_constant must be in (0, 1]");
}

// Recorded with PyTorch 1.13:
//   x = torch.tensor([-1.0, -0.2, 0.0, 0.4, 1.3, 2.9, 5.0], requires_grad=True)
//   y = torch.fake_quantize_per_tensor_affine(x, 0.1, 10, 0, 40); y.backward(torch.arange(1., 8.))
TEST_CASE("fake_quantize_per_tensor_affine: values and the straight-through gradient") {
  Variable x(tg::from_vector<double>({-1.0, -0.2, 0.0, 0.4, 1.3, 2.9, 5.0}).to(tg::kFloat32).data(), true);
  Variable y = tg::fake_quantize_per_tensor_affine(x, 0.1, 10, 0, 40);
  CHECK(y.to_vector<double>() == std::vector<double>{-1.0, -0.20000000298023224, 0.0, 0.4000000059604645,
                                                     1.3000000715255737, 2.9000000953674316, 3.0});
  tg::sum(y * tg::from_vector<double>({1, 2, 3, 4, 5, 6, 7}).to(tg::kFloat32)).backward();
  CHECK(x.grad().to_vector<double>() == std::vector<double>{1, 2, 3, 4, 5, 6, 0});   // 5.0 was clamped
  // float64 inputs keep their dtype and get the same mask
  Variable x64 = testing::randn64({4, 5}, 3);
  Variable y64 = tg::fake_quantize_per_tensor_affine(x64, 0.05, 0, -20, 20);
  CHECK(y64.dtype() == tg::kFloat64);
  tg::sum(y64).backward();
  const auto xv = x64.to_vector<double>(), gv = x64.grad().to_vector<double>();
  for (std::size_t i = 0; i < xv.size(); ++i) CHECK(gv[i] == (std::nearbyint(float(xv[i]) * 20.0f) >= -20 &&
                                                              std::nearbyint(float(xv[i]) * 20.0f) <= 20 ? 1.0 : 0.0));
  TG_CHECK_THROWS(tg::fake_quantize_per_tensor_affine(x, 0.0, 0, 0, 255), tg::Error, "scale must be positive");
  TG_CHECK_THROWS(tg::fake_quantize_per_tensor_affine(x, 0.1, 300, 0, 255), tg::Error, "zero_point 300 is outside");
}

// Recorded with PyTorch 1.13: fq = FakeQuantize(observer=MovingAverageMinMaxObserver, quant_min=0,
// quant_max=255, dtype=torch.quint8, qscheme=torch.per_tensor_affine); fq(x) for the first two batches,
// with fq.scale and fq.zero_point after each, and x.grad of fq(x).sum(); list(fq.state_dict().keys()).
TEST_CASE("FakeQuantize: observes, fake-quantizes, and has PyTorch's state_dict keys") {
  q::FakeQuantize fq;
  std::vector<std::string> keys;
  for (const auto& b : fq.named_buffers()) keys.push_back(b.first);
  CHECK(keys == std::vector<std::string>{"fake_quant_enabled", "observer_enabled", "scale", "zero_point",
                                         "activation_post_process.eps", "activation_post_process.min_val",
                                         "activation_post_process.max_val"});
  const std::vector<std::vector<double>> want = {
      {0.30078110098838806, 2.2859363555908203, -0.21054676175117493, -1.5490226745605469, 1.2933586835861206,
       1.8949209451675415, -1.097851037979126, -0.9324213862419128, 2.015233278274536, 1.097851037979126},
      {2.29844331741333, 1.5877405405044556, -1.5574978590011597, -0.2419414073228836, 2.29844331741333,
       0.07560668885707855, -1.5574978590011597, 1.2853137254714966, 2.29844331741333, -1.3760417699813843}};
  const double scales[] = {0.015039054676890373, 0.015121337957680225};
  // the second batch is wider than the averaged range: its clamped entries get no gradient
  const std::vector<std::vector<double>> grads = {{1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, {0, 1, 0, 1, 0, 1, 0, 1, 0, 1}};
  const auto xs = batches();
  for (int i = 0; i < 2; ++i) {
    CAPTURE(i);
    Variable x(xs[static_cast<std::size_t>(i)].data().clone(), true);
    Variable y = fq(x);
    CHECK(y.to_vector<double>() == want[static_cast<std::size_t>(i)]);
    CHECK(fq.scale() == scales[i]);
    CHECK(fq.zero_point() == 103);
    tg::sum(y).backward();   // straight through where not clamped
    CHECK(x.grad().to_vector<double>() == grads[static_cast<std::size_t>(i)]);
  }
  // frozen observer: the scale stays; fake quantization off: x comes back
  fq.enable_observer(false);
  fq(wave(10, 3.0, 10.0));
  CHECK(fq.scale() == scales[1]);
  fq.enable_fake_quant(false);
  Variable x = wave(5, 0.0, 100.0);
  CHECK(fq(x).data().raw_data() == x.data().raw_data());
}

TEST_CASE("FakeQuantize: quantization-aware training of a small model converges") {
  // y = relu(W2 fq(relu(W1 x))): training through the fake quantizer lowers the loss, and the
  // gradient reaches W1 through the straight-through estimator
  tg::manual_seed(4);
  tg::nn::Sequential model;
  model.add<tg::nn::Linear>(8, 16);
  model.add<tg::nn::ReLU>();
  model.add<q::FakeQuantize>();
  model.add<tg::nn::Linear>(16, 1);
  tg::optim::SGD opt(model.parameters(), tg::optim::SGDOptions(0.05));
  const Variable x = tg::randn({64, 8});
  const Variable target = tg::sum(x, 1, true) * 0.5;
  double first = 0, last = 0;
  for (int step = 0; step < 60; ++step) {
    opt.zero_grad();
    Variable loss = tg::mse_loss(model(x), target);
    loss.backward();
    opt.step();
    if (step == 0) first = loss.item();
    last = loss.item();
  }
  MESSAGE("QAT loss " << first << " -> " << last);
  CHECK(last < 0.5 * first);
}
