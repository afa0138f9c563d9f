// tests/test_qat.cpp: observers (MinMaxObserver, MovingAverageMinMaxObserver, HistogramObserver and the
// per-channel one), FakeQuantize, PerChannelFakeQuantize and fake_quantize_per_tensor/per_channel_affine
// with their straight-through backward, prepare_qat and convert, against values recorded from PyTorch (Note
// [Observers] in quantization/observer.h, Note [Quantization-aware Linear] in quantization/qat.h).
#include <cmath>
#include <filesystem>

#include "testing.h"
#include "tensorgrad/quantization/observer.h"
#include "tensorgrad/quantization/qat.h"

using tg::Tensor;
namespace q = tg::quantization;

namespace {

/// x[k] = s sin(off + 1.7 k) + 0.3 in float32, the inputs of the PyTorch script.
Tensor wave(int64_t n, double off, double s) {
  std::vector<double> v;
  for (int64_t k = 0; k < n; ++k) v.push_back(s * std::sin(off + 1.7 * double(k)) + 0.3);
  return tg::from_vector<double>(v).to(tg::kFloat32);
}

std::vector<Tensor> batches() { return {wave(10, 0.0, 2.0), wave(10, 1.0, 3.0), wave(10, 2.0, 0.5)}; }

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
    for (const Tensor& x : batches()) {
      Tensor y = (*r.obs)(x);
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

// Recorded with PyTorch 1.13 by tests/data/histogram_observer_reference.py: HistogramObserver()s fed
// the batches below, then min_val, max_val, the histogram's sum and first moment (sum of i * h[i], in
// float64) and calculate_qparams(). PyTorch 1.13 bins with histc over int(min_val)..int(max_val): the
// first case counts 110 of its 200 values, and the last (range inside (0, 1), so int() gives 0 and 0)
// falls back to histc's data range. Note [Histogram observer] in quantization/observer.h.
TEST_CASE("HistogramObserver: histogram, range search, scale and zero point as PyTorch's") {
  struct Row {
    std::string what;
    std::unique_ptr<q::HistogramObserver> obs;
    std::vector<Tensor> xs;
    double min_val, max_val, hist_sum, hist_moment, scale;
    int64_t zero_point;
  };
  std::vector<Row> rows;
  rows.push_back({"one call quint8 affine", std::make_unique<q::HistogramObserver>(), {wave(200, 0.0, 2.0)},
                  -1.6999619007110596, 2.2995858192443848, 110.0, 115771.0, 0.015577282756567001, 107});
  rows.push_back({"widening calls quint8 affine", std::make_unique<q::HistogramObserver>(),
                  {wave(200, 0.0, 2.0), wave(300, 1.0, 3.0), wave(100, 2.0, 0.5), wave(150, 0.7, 6.5)},
                  -6.1975555419921875, 6.805856704711914, 516.0, 525797.4924926758, 0.050894178450107574, 122});
  rows.push_back({"widening calls qint8 symmetric", std::make_unique<q::HistogramObserver>(2048, tg::kInt8, true),
                  {wave(120, 0.3, 1.5), wave(250, 1.1, 4.0), wave(80, 2.5, 9.0)},
                  -8.699912071228027, 9.33324909210205, 291.0, 302274.3103027344, 0.07306382805109024, 0});
  rows.push_back({"quint8 affine reduce_range, range inside (0, 1)",
                  std::make_unique<q::HistogramObserver>(2048, tg::kUInt8, false, true),
                  {wave(64, 0.5, 0.25), wave(64, 1.5, 0.2)},
                  0.05064205825328827, 0.5498800277709961, 128.0, 132742.0, 0.004327844362705946, 0});
  for (Row& r : rows) {
    CAPTURE(r.what);
    for (const Tensor& x : r.xs) {
      Tensor y = (*r.obs)(x);
      CHECK(y.data().raw_data() == x.data().raw_data());   // observers pass x through
    }
    CHECK(r.obs->min_val() == r.min_val);
    CHECK(r.obs->max_val() == r.max_val);
    const std::vector<float> h = r.obs->histogram().to_vector<float>();
    REQUIRE(h.size() == 2048);
    double sum = 0, moment = 0;
    for (std::size_t i = 0; i < h.size(); ++i) sum += h[i], moment += double(i) * double(h[i]);
    // the histogram's entries are counts divided by powers of 128 here: both sums are exact in float64
    CHECK(sum == r.hist_sum);
    CHECK(moment == r.hist_moment);
    const q::QParams p = r.obs->calculate_qparams();
    CHECK(p.scale == doctest::Approx(r.scale).epsilon(1e-6));
    CHECK(p.zero_point == r.zero_point);
  }
}

TEST_CASE("HistogramObserver: state_dict keys, empty and bad input, fresh state") {
  q::HistogramObserver obs;
  std::vector<std::string> keys;
  for (const auto& b : obs.named_buffers()) keys.push_back(b.first);
  CHECK(keys == std::vector<std::string>{"eps", "histogram", "min_val", "max_val"});   // PyTorch's order
  CHECK(obs.calculate_qparams().scale == 1);   // before any data: PyTorch's defaults
  CHECK(obs.calculate_qparams().zero_point == 0);
  obs(tg::zeros({0}));   // an empty batch changes nothing
  CHECK(std::isinf(obs.min_val()));
  TG_CHECK_THROWS(obs(tg::from_vector<double>({1.0, INFINITY}).to(tg::kFloat32)), tg::Error,
                  "HistogramObserver: expected finite values, got inf");
  TG_CHECK_THROWS(obs(tg::from_vector<double>({NAN, 1.0}).to(tg::kFloat32)), tg::Error,
                  "HistogramObserver: expected finite values");
  TG_CHECK_THROWS(obs(tg::from_vector<int64_t>({1, 2})), tg::DTypeError, "HistogramObserver");
  CHECK(std::isinf(obs.min_val()));   // a rejected batch leaves no trace
  TG_CHECK_THROWS(q::HistogramObserver(2048, tg::kInt64), tg::DTypeError, "HistogramObserver: expected dtype uint8");
  TG_CHECK_THROWS(q::HistogramObserver(0), tg::Error, "HistogramObserver: bins must be positive, got 0");
  // a single repeated value: histc widens the range [3, 3] to [2, 4] (recorded by the same script)
  q::HistogramObserver one(8);
  one(tg::full({5}, 3.0));
  CHECK(one.histogram().to_vector<float>() == std::vector<float>{0, 0, 0, 0, 5, 0, 0, 0});
  CHECK(one.calculate_qparams().scale == doctest::Approx(0.0117647061124444).epsilon(1e-6));
  CHECK(one.calculate_qparams().zero_point == 0);
  // the copy from new_instance() starts empty with the same settings; a checkpoint carries the
  // histogram and range into it
  obs(wave(50, 0.0, 2.0));
  obs(wave(70, 1.0, 3.5));
  auto copy = obs.new_instance();
  auto* fresh = dynamic_cast<q::HistogramObserver*>(copy.get());
  REQUIRE(fresh != nullptr);
  CHECK(std::isinf(fresh->min_val()));
  CHECK(fresh->bins() == 2048);
  testing::TempDir dir;
  tg::save(obs, dir.path + "/hist.safetensors");
  tg::load(*fresh, dir.path + "/hist.safetensors");
  CHECK(fresh->histogram().to_vector<float>() == obs.histogram().to_vector<float>());
  CHECK(fresh->max_val() == obs.max_val());
  CHECK(fresh->calculate_qparams().scale == obs.calculate_qparams().scale);
  CHECK(fresh->calculate_qparams().zero_point == obs.calculate_qparams().zero_point);
}

TEST_CASE("cuda HistogramObserver: CUDA batches give the CPU observer's histogram and qparams") {
  TG_NEED_CUDA();
  // the "widening calls qint8 symmetric" case above: an observer fed CUDA batches, and one moved to
  // the GPU as a whole (its buffers with it), against the same observer on the CPU
  q::HistogramObserver on_cpu(2048, tg::kInt8, true), cuda_input(2048, tg::kInt8, true), moved(2048, tg::kInt8, true);
  moved.to(tg::Device::cuda(0));
  for (const Tensor& x : {wave(120, 0.3, 1.5), wave(250, 1.1, 4.0), wave(80, 2.5, 9.0)}) {
    const Tensor xc = x.to(tg::Device::cuda(0));
    CHECK(cuda_input(xc).data().raw_data() == xc.data().raw_data());
    moved(xc);
    on_cpu(x);
  }
  const std::vector<float> want = on_cpu.histogram().to_vector<float>();
  CHECK(cuda_input.histogram().to_vector<float>() == want);
  CHECK(moved.histogram().to_vector<float>() == want);
  for (q::HistogramObserver* obs : {&on_cpu, &cuda_input, &moved}) {
    CHECK(obs->max_val() == 9.33324909210205);
    CHECK(obs->calculate_qparams().scale == doctest::Approx(0.07306382805109024).epsilon(1e-6));
  }
}

// Recorded with PyTorch 1.13:
//   x = torch.tensor([-1.0, -0.2, 0.0, 0.4, 1.3, 2.9, 5.0], requires_grad=True)
//   y = torch.fake_quantize_per_tensor_affine(x, 0.1, 10, 0, 40); y.backward(torch.arange(1., 8.))
TEST_CASE("fake_quantize_per_tensor_affine: values and the straight-through gradient") {
  Tensor x(tg::from_vector<double>({-1.0, -0.2, 0.0, 0.4, 1.3, 2.9, 5.0}).to(tg::kFloat32).data(), true);
  Tensor y = tg::fake_quantize_per_tensor_affine(x, 0.1, 10, 0, 40);
  CHECK(y.to_vector<double>() == std::vector<double>{-1.0, -0.20000000298023224, 0.0, 0.4000000059604645,
                                                     1.3000000715255737, 2.9000000953674316, 3.0});
  tg::sum(y * tg::from_vector<double>({1, 2, 3, 4, 5, 6, 7}).to(tg::kFloat32)).backward();
  CHECK(x.grad().to_vector<double>() == std::vector<double>{1, 2, 3, 4, 5, 6, 0});   // 5.0 was clamped
  // float64 inputs keep their dtype and get the same mask
  Tensor x64 = testing::randn64({4, 5}, 3);
  Tensor y64 = tg::fake_quantize_per_tensor_affine(x64, 0.05, 0, -20, 20);
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
    Tensor x(xs[static_cast<std::size_t>(i)].data().clone(), true);
    Tensor y = fq(x);
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
  Tensor x = wave(5, 0.0, 100.0);
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
  const Tensor x = tg::randn({64, 8});
  const Tensor target = tg::sum(x, 1, true) * 0.5;
  double first = 0, last = 0;
  for (int step = 0; step < 60; ++step) {
    opt.zero_grad();
    Tensor loss = tg::mse_loss(model(x), target);
    loss.backward();
    opt.step();
    if (step == 0) first = loss.item();
    last = loss.item();
  }
  MESSAGE("QAT loss " << first << " -> " << last);
  CHECK(last < 0.5 * first);
}

// ---- per channel. Recorded with PyTorch 1.13 by tests/data/qat_reference.py.

TEST_CASE("fake_quantize_per_channel_affine: values and the straight-through gradient, as PyTorch's") {
  // axis 0, int8, zero points 0, -3, 10: entries 6 and 8 clamp
  Tensor x(wave(15, 0.5, 2.0).reshape({3, 5}).data().clone(), true);
  Tensor y = tg::fake_quantize_per_channel_affine(x, tg::from_vector<double>({0.05, 0.011, 0.3}).to(tg::kFloat32),
                                                    tg::from_vector<double>({0, -3, 10}).to(tg::kInt32), 0, -128, 127);
  CHECK(y.to_vector<double>() ==
        std::vector<double>{1.25, 1.899999976158142, -1.100000023841858, -0.949999988079071, 2.0, 1.121999979019165,
                            -1.375, -0.032999999821186066, 1.4299999475479126, 0.12099999934434891,
                            -1.8000000715255737, 0.9000000357627869, 2.1000001430511475, -0.9000000357627869,
                            -1.2000000476837158});
  tg::sum(y * (tg::arange(15) + 1.0).to(tg::kFloat32).reshape({3, 5})).backward();
  CHECK(x.grad().to_vector<double>() == std::vector<double>{1, 2, 3, 4, 5, 6, 0, 8, 0, 10, 11, 12, 13, 14, 15});
  // axis 1, uint8 with zero points up to 255
  Tensor x2(wave(12, 1.0, 3.0).reshape({3, 4}).data().clone(), true);
  Tensor y2 = tg::fake_quantize_per_channel_affine(
      x2, tg::from_vector<double>({0.02, 0.1, 0.005, 0.5}).to(tg::kFloat32),
      tg::from_vector<double>({0, 128, 255, 100}).to(tg::kInt32), 1, 0, 255);
  CHECK(y2.to_vector<double>() == std::vector<double>{2.819999933242798, 1.600000023841858, -1.274999976158142, 0.0,
                                                      3.299999952316284, 0.10000000149011612, -1.274999976158142, 1.5,
                                                      2.9800000190734863, -1.399999976158142, -1.274999976158142, 2.5});
  tg::sum(y2 * (tg::arange(12) + 1.0).to(tg::kFloat32).reshape({3, 4})).backward();
  CHECK(x2.grad().to_vector<double>() == std::vector<double>{1, 2, 0, 4, 5, 6, 0, 8, 9, 10, 0, 12});
  // bad arguments name the op
  const Tensor s3 = tg::from_vector<double>({0.1, 0.1, 0.1}).to(tg::kFloat32);
  const Tensor z3 = tg::from_vector<double>({0, 0, 0}).to(tg::kInt32);
  TG_CHECK_THROWS(tg::fake_quantize_per_channel_affine(x, s3, z3, 2, -128, 127), tg::IndexError,
                  "fake_quantize_per_channel_affine: `axis` must be between 0 and number of dimensions");
  TG_CHECK_THROWS(tg::fake_quantize_per_channel_affine(x, s3, z3, 1, -128, 127), tg::ShapeError,
                  "dimensions of scale and zero-point are not consistent with input tensor");
  TG_CHECK_THROWS(tg::fake_quantize_per_channel_affine(x, s3, tg::from_vector<double>({0, 200, 0}).to(tg::kInt32), 0,
                                                       -128, 127),
                  tg::Error, "`zero_point` must be between `quant_min` and `quant_max`");
  TG_CHECK_THROWS(tg::fake_quantize_per_channel_affine(x, tg::from_vector<double>({0.1, 0.0, 0.1}).to(tg::kFloat32),
                                                       z3, 0, -128, 127),
                  tg::Error, "scale must be positive");
  TG_CHECK_THROWS(tg::fake_quantize_per_channel_affine(x, s3, z3, 0, 5, -5), tg::Error,
                  "`quant_min` should be less than or equal to `quant_max`");
  TG_CHECK_THROWS(tg::fake_quantize_per_channel_affine(x, z3, z3, 0, -128, 127), tg::DTypeError, "scale must be floating");
}

TEST_CASE("MovingAveragePerChannelMinMaxObserver: min, max, scales and zero points as PyTorch's") {
  struct Row {
    const char* what;
    std::unique_ptr<q::MovingAveragePerChannelMinMaxObserver> obs;
    std::vector<double> min_val, max_val, scale, zero_point;
  };
  std::vector<Row> rows;
  rows.push_back({"default: uint8 affine, axis 0", std::make_unique<q::MovingAveragePerChannelMinMaxObserver>(3),
                  {-1.5469084978103638, -1.1053744554519653, -1.6118345260620117},
                  {2.273399829864502, 1.89971125125885, 2.015510082244873},
                  {0.01498160045593977, 0.011784649454057217, 0.014224880374968052},
                  {103, 94, 113}});
  rows.push_back({"int8 symmetric, axis 0",
                  std::make_unique<q::MovingAveragePerChannelMinMaxObserver>(3, 0, 0.01, tg::kInt8, true),
                  {-1.5469084978103638, -1.1053744554519653, -1.6118345260620117},
                  {2.273399829864502, 1.89971125125885, 2.015510082244873},
                  {0.017830586060881615, 0.014899696223437786, 0.015807922929525375},
                  {0, 0, 0}});
  rows.push_back({"uint8 affine reduce_range, axis 1, c 0.5",
                  std::make_unique<q::MovingAveragePerChannelMinMaxObserver>(4, 1, 0.5, tg::kUInt8, false, true),
                  {0.9580416679382324, -0.1701125204563141, -1.1082731485366821, -0.11728698015213013},
                  {1.705812692642212, 0.9839083552360535, -0.35354167222976685, 1.0321824550628662},
                  {0.013431595638394356, 0.00908677838742733, 0.00872656051069498, 0.009050940163433552},
                  {0, 19, 127, 13}});
  const std::vector<Tensor> bs = {wave(12, 0.0, 2.0).reshape({3, 4}), wave(12, 1.0, 3.0).reshape({3, 4}),
                                    wave(12, 2.0, 0.5).reshape({3, 4})};
  for (auto& r : rows) {
    CAPTURE(r.what);
    for (const auto& b : bs) CHECK((*r.obs)(b).data().raw_data() == b.data().raw_data());
    std::vector<double> mins, maxs;
    for (const auto& kv : r.obs->named_buffers()) {
      if (kv.first == "min_val") mins = kv.second.to_vector<double>();
      if (kv.first == "max_val") maxs = kv.second.to_vector<double>();
    }
    CHECK(mins == r.min_val);
    CHECK(maxs == r.max_val);
    const auto p = r.obs->calculate_qparams();
    CHECK(Tensor(p.first).to_vector<double>() == r.scale);
    CHECK(Tensor(p.second).to(tg::kFloat64).to_vector<double>() == r.zero_point);
  }
  // before any data: scale 1, zero point 0; a wrong channel count names the observer
  q::MovingAveragePerChannelMinMaxObserver fresh(2);
  CHECK(Tensor(fresh.calculate_qparams().first).to_vector<double>() == std::vector<double>{1, 1});
  TG_CHECK_THROWS(fresh(tg::zeros({3, 4})), tg::ShapeError,
                  "MovingAveragePerChannelMinMaxObserver: expected 2 channels along axis 0, got input [3, 4]");
  TG_CHECK_THROWS(q::MovingAveragePerChannelMinMaxObserver(2, 0, 0.01, tg::kInt64), tg::DTypeError, "expected dtype");
}

namespace {

/// A Sequential with one Linear "fc" 6 -> 4 holding the weights of tests/data/qat_reference.py.
std::unique_ptr<tg::nn::Sequential> reference_linear() {
  auto model = std::make_unique<tg::nn::Sequential>();
  auto lin = std::make_unique<tg::nn::Linear>(6, 4);
  {
    tg::NoGradGuard g;
    tg::prim::copy_(lin->weight.data(), wave(24, 0.3, 0.8).reshape({4, 6}).data());
    tg::prim::copy_(lin->bias.data(), tg::from_vector<double>({0.1, -0.2, 0.3, -0.4}).data());
  }
  model->push_back("fc", std::move(lin));
  return model;
}

const std::vector<double> kQatOut = {0.4256051182746887,  -2.2860279083251953, 4.883206844329834,
                                     -2.953608989715576,  3.898038864135742,   0.42415493726730347,
                                     -1.2445917129516602, 4.334799766540527,   -2.7820281982421875,
                                     2.022235870361328,   -0.04207116365432739, -2.1880054473876953};
const std::vector<double> kWeightScales = {0.008058336563408375, 0.008451811037957668, 0.008383703418076038,
                                           0.008574431762099266};

}  // namespace

// PyTorch: the fbgemm QAT qconfig's (version 0: FakeQuantize, not the fused variant) activation and
// weight fake quantizers, act and wfq, after one forward F.linear(act(X), wfq(W), b)
// (tests/data/qat_reference.py).
TEST_CASE("prepare_qat and convert: QatLinear and QuantizedLinear against PyTorch's fake-quantized Linear") {
  const auto model = reference_linear();
  std::unique_ptr<tg::nn::Module> qat = q::prepare_qat(*model);
  CHECK(qat->is_training());
  auto* ql = dynamic_cast<q::QatLinear*>(qat->children().at(0).second);
  REQUIRE(ql != nullptr);
  CHECK(qat->children().at(0).first == "fc");
  std::vector<std::string> keys;
  for (const auto& kv : qat->named_parameters()) keys.push_back(kv.first);
  for (const auto& kv : qat->named_buffers()) keys.push_back(kv.first);   // PyTorch's state_dict keys
  CHECK(keys == std::vector<std::string>{"fc.weight", "fc.bias", "fc.weight_fake_quant.fake_quant_enabled",
                                         "fc.weight_fake_quant.observer_enabled", "fc.weight_fake_quant.scale",
                                         "fc.weight_fake_quant.zero_point",
                                         "fc.weight_fake_quant.activation_post_process.eps",
                                         "fc.weight_fake_quant.activation_post_process.min_val",
                                         "fc.weight_fake_quant.activation_post_process.max_val",
                                         "fc.input_fake_quant.fake_quant_enabled",
                                         "fc.input_fake_quant.observer_enabled", "fc.input_fake_quant.scale",
                                         "fc.input_fake_quant.zero_point",
                                         "fc.input_fake_quant.activation_post_process.eps",
                                         "fc.input_fake_quant.activation_post_process.min_val",
                                         "fc.input_fake_quant.activation_post_process.max_val"});
  const Tensor X = wave(18, 2.0, 1.5).reshape({3, 6});
  const Tensor y = (*qat)(X);
  // float32 sums of 6 products and a bias, |y| < 5: a few ulps of 5
  testing::check_values(y, kQatOut, 4e-6);
  CHECK(ql->input_fake_quant.scale() == 0.02328876219689846);
  CHECK(ql->input_fake_quant.zero_point() == 52);
  CHECK(Tensor(ql->weight_fake_quant.scale()).to_vector<double>() == kWeightScales);
  // the gradient reaches the float weight through the straight-through estimator
  tg::sum(y).backward();
  REQUIRE(ql->weight.grad().defined());
  CHECK(tg::max(tg::abs(ql->weight.grad())).item() > 0);
  // the source model is untouched
  CHECK(dynamic_cast<tg::nn::Linear*>(model->children().at(0).second) != nullptr);

  // convert: int8 weights with the trained scales, the input's scale and zero point fixed; the int8
  // product gives the fake-quantized Linear's result up to float32 rounding
  std::unique_ptr<tg::nn::Module> int8 = q::convert(*qat);
  CHECK_FALSE(int8->is_training());
  auto* qlin = dynamic_cast<q::QuantizedLinear*>(int8->children().at(0).second);
  REQUIRE(qlin != nullptr);
  CHECK(qlin->weight().dtype() == tg::kInt8);
  CHECK(qlin->input_scale() == 0.02328876219689846);
  CHECK(qlin->input_zero_point() == 52);
  CHECK(qlin->name() == "QuantizedLinear(in_features=6, out_features=4, scale=0.0232888, zero_point=52, "
                        "qscheme=per_channel_affine)");
  Tensor yq;
  {
    tg::NoGradGuard g;
    yq = (*int8)(X);
  }
  testing::check_values(yq, kQatOut, 4e-6);
  CHECK_FALSE(yq.requires_grad());
  // a checkpoint of the converted model loads into a fresh converted model with the same outputs
  testing::TempDir dir;
  const std::string path = dir.path + "/int8.safetensors";
  tg::save(*int8, path);
  auto again = q::convert(*q::prepare_qat(*reference_linear()));
  tg::load(*again, path);
  testing::check_close((*again)(X), yq, 0, 0);
  TG_CHECK_THROWS((*int8)(tg::randn({2, 5})), tg::ShapeError, "QuantizedLinear: expected input (..., 6)");
}

TEST_CASE("prepare_qat: nested Sequentials are rebuilt, a Linear called by another module's forward raises") {
  tg::nn::Sequential outer;
  auto inner = std::make_unique<tg::nn::Sequential>();
  inner->add<tg::nn::Linear>(4, 8);
  inner->add<tg::nn::ReLU>();
  outer.push_back("body", std::move(inner));
  outer.add<tg::nn::Linear>(8, 2);
  // Sequential::push_back(name, ...) names a child; clone() keeps the names
  const auto copy = outer.clone();
  CHECK(copy->children().at(0).first == "body");
  CHECK(copy->children().at(1).first == "1");
  auto qat = q::prepare_qat(outer);
  std::vector<std::string> names;
  for (const auto& kv : qat->named_parameters()) names.push_back(kv.first);
  CHECK(names == std::vector<std::string>{"body.0.weight", "body.0.bias", "1.weight", "1.bias"});
  CHECK((*qat)(tg::randn({3, 4})).shape() == tg::Shape{3, 2});
  CHECK(q::convert(*qat)->named_buffers().size() == 12);   // two QuantizedLinear of 6 buffers each
  struct Net : tg::nn::Module {
    tg::nn::Linear fc{3, 2};
    Net() { register_module("fc", fc); }
    Tensor forward(const Tensor& x) override { return fc(x); }
  } net;
  TG_CHECK_THROWS(q::prepare_qat(net), tg::Error, "prepare_qat: the Linear 'fc' is inside");
  TG_CHECK_THROWS(outer.push_back("body", std::make_unique<tg::nn::ReLU>()), tg::Error, "already registered");
}

// PyTorch: MinMaxObserver(quint8, reduce_range) over two input batches, PerChannelMinMaxObserver(qint8,
// per_channel_symmetric) over the weight, and the Linear fake-quantized with their parameters
// (tests/data/qat_reference.py).
TEST_CASE("prepare and convert: static post-training quantization of a Linear against PyTorch's observers") {
  const auto model = reference_linear();
  std::unique_ptr<tg::nn::Module> observed = q::prepare(*model);
  auto* ol = dynamic_cast<q::ObservedLinear*>(observed->children().at(0).second);
  REQUIRE(ol != nullptr);
  const Tensor X = wave(18, 2.0, 1.5).reshape({3, 6});
  {
    tg::NoGradGuard g;
    // calibration: the observed model computes the float Linear
    testing::check_close((*observed)(X), (*model)(X), 0, 0);
    (*observed)(wave(18, 4.0, 1.0).reshape({3, 6}));
  }
  CHECK(dynamic_cast<q::MinMaxObserver*>(ol->input_observer.get()) != nullptr);   // default_qconfig()
  const q::QParams p = ol->input_observer->calculate_qparams();
  CHECK(p.scale == 0.02328876219689846);
  CHECK(p.zero_point == 52);
  std::unique_ptr<tg::nn::Module> int8 = q::convert(*observed);
  auto* qlin = dynamic_cast<q::QuantizedLinear*>(int8->children().at(0).second);
  REQUIRE(qlin != nullptr);
  CHECK(qlin->weight().q_per_channel_scales().to_vector<double>() == kWeightScales);
  CHECK(qlin->input_scale() == 0.02328876219689846);
  // float32 sums of 6 products and a bias, |y| < 5: a few ulps of 5
  testing::check_values((*int8)(X), kQatOut, 4e-6);
  TG_CHECK_THROWS(q::convert(*q::prepare(tg::nn::Linear(3, 2)))->forward(tg::randn({2, 5})), tg::ShapeError,
                  "QuantizedLinear: expected input (..., 3)");
}

// PyTorch's x86/fbgemm default qconfig observes activations with HistogramObserver(reduce_range=True);
// the observer itself is checked against PyTorch in "HistogramObserver: ...".
TEST_CASE("prepare with get_default_qconfig: a HistogramObserver on each Linear's input, kept by clone and convert") {
  const auto model = reference_linear();
  std::unique_ptr<tg::nn::Module> observed = q::prepare(*model, q::get_default_qconfig("x86"));
  auto* ol = dynamic_cast<q::ObservedLinear*>(observed->children().at(0).second);
  REQUIRE(ol != nullptr);
  REQUIRE(dynamic_cast<q::HistogramObserver*>(ol->input_observer.get()) != nullptr);
  CHECK(ol->input_observer->quant_min() == 0);
  CHECK(ol->input_observer->quant_max() == 127);   // reduce_range
  q::HistogramObserver alone(2048, tg::kUInt8, /*symmetric=*/false, /*reduce_range=*/true);
  const Tensor a = wave(18, 2.0, 1.5).reshape({3, 6}), b = wave(18, 4.0, 1.0).reshape({3, 6});
  {
    tg::NoGradGuard g;
    for (const Tensor& x : {a, b}) {
      (*observed)(x);
      alone(x);
    }
  }
  const q::QParams p = ol->input_observer->calculate_qparams(), expected = alone.calculate_qparams();
  CHECK(p.scale == expected.scale);
  CHECK(p.zero_point == expected.zero_point);
  // The L2 search clips the range that MinMaxObserver keeps whole (0.0232..., zero point 52 above).
  CHECK(p.scale != 0.02328876219689846);
  // clone() makes the same observer kind and copies its histogram
  const std::unique_ptr<tg::nn::Module> copy = observed->clone();
  auto* cl = dynamic_cast<q::ObservedLinear*>(copy->children().at(0).second);
  REQUIRE(cl != nullptr);
  REQUIRE(dynamic_cast<q::HistogramObserver*>(cl->input_observer.get()) != nullptr);
  CHECK(cl->input_observer->calculate_qparams().scale == p.scale);
  std::unique_ptr<tg::nn::Module> int8 = q::convert(*observed);
  auto* qlin = dynamic_cast<q::QuantizedLinear*>(int8->children().at(0).second);
  REQUIRE(qlin != nullptr);
  CHECK(qlin->input_scale() == p.scale);
  CHECK(qlin->input_zero_point() == p.zero_point);
  CHECK(dynamic_cast<q::HistogramObserver*>(
            dynamic_cast<q::ObservedLinear*>(q::prepare(*model, q::get_default_qconfig("fbgemm"))->children().at(0).second)
                ->input_observer.get()) != nullptr);
  TG_CHECK_THROWS(q::get_default_qconfig("qnnpack"), tg::Error, "backend 'qnnpack' not supported");
  TG_CHECK_THROWS(q::prepare(*model, q::QConfig{}), tg::Error, "the QConfig has no activation observer");
}
