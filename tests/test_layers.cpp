// tests/test_layers.cpp: conv1d/conv2d, pooling and normalization against numbers recorded from
// PyTorch, their error messages, and the modules of nn/conv.h (parameter names, init, a PyTorch
// checkpoint of a small CNN). Gradients are also checked by finite differences in test_gradcheck.cpp.
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "testing.h"

using tg::Variable;

namespace {

/// sin(0.7 i + seed) over the flattened tensor, float64: the inputs of tests/data/layers_reference.py.
Variable fill(const tg::Shape& shape, double seed, bool requires_grad = true) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<double> v(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = std::sin(0.7 * static_cast<double>(i) + seed);
  Variable x = tg::from_vector(v, shape);
  x.set_requires_grad(requires_grad);
  return x;
}

struct Reference {
  std::string name;
  double loss;                  ///< sum(out * fill(out.shape, 9))
  std::vector<double> first;    ///< out.flatten()[:8]
  std::vector<double> probes;   ///< sum(grad_i * fill(input_i.shape, 5)) per input
};

// Printed by `/usr/bin/python3 tests/data/layers_reference.py` (PyTorch 1.13, float64).
const std::vector<Reference> kReferences = {
  {"conv2d groups stride padding dilation", 10.298389355147815, {-0.17013894585435477, -1.2603642359311129, -0.67401432102711245, -1.3675057975201539, -1.3514669847204466, -0.63344118690105455, -1.2777411782011128, -0.32975362581443302}, {-7.7028918430700468, -9.9028095239950051, 4.4208108468680907}},
  {"conv2d 3x3 padding 1", 12.884884159370085, {-1.4147387291230895, -1.1610264879755088, -0.32521529565738261, 0.72992067668908389, 1.5081344943149884, 1.6434200388645628, 1.5051623257862801, -0.70834419408700755}, {-4.5823719042596132, -13.172771550327891, 0.80908292027683293}},
  {"conv2d 1x1 no bias", -3.7440174766081959, {0.32293343379130857, 0.59308205803597569, 0.5842949232235326, 0.3007047561590418, -0.12431155636847258, -0.49086220151424209, -0.62655268335439551, -0.46756564805723777}, {-1.1189050578685198, 3.8549750045936486}},
  {"conv1d stride 2 padding 1", -1.3396872748219608, {0.1542190090939943, 0.13528609408750006, 0.13945891865271284, 0.14638926079096123, 0.12825732160863029, -0.51665784050134411, -0.53635639858946749, -0.53221999414031707}, {0.016424537400820394, -0.016668902313321077, 2.8207815087429324}},
  {"max_pool2d 3 stride 2 padding 1", 0.81203951706168231, {0.99166481045246857, 0.99166481045246857, 0.66296923008218334, -0.37387666483023685, 0.8504366206285644, 0.98935824662338179, 0.98677196427461367, 0.63742259615024155}, {-0.75459143126735773}},
  {"max_pool2d 2", -0.7713452466696753, {0.99166481045246857, 0.67546318055115095, 0.98935824662338179, 0.85916181485649579, 0.65028784015711683, 0.98390669461861668, 0.87588107981088936, 0.98076324774515289}, {0.29665931743393747}},
  {"avg_pool2d (3, 2) stride 2 padding 1", -0.20365910287345157, {0.1921687247202124, 0.5844871430425943, 0.019577904504352484, -0.57783194205743726, -0.20822147325311091, -0.15231501636817232, 0.50454423859940267, 0.69605920920459285}, {2.1818939052046376}},
  {"avg_pool2d count_include_pad false", 1.4671471566472332, {0.74877844485057676, 0.70191212512850665, -0.2475222232553107, -0.78605341531054818, -0.01307660948539846, 0.61607230295498683, 0.4662967095856505, -0.45756206401087379}, {-0.62837521318113043}},
  {"adaptive_avg_pool2d (3, 4)", 0.21538272504257688, {0.83417607693709683, 0.020889366697721162, -0.82707506498788286, -0.30204053821776428, 0.82957960818568754, -0.0074629695409368741, -0.83211652740653674, -0.27540196790578148}, {-0.36436834222419945}},
  {"batch_norm training", -2.8501685960982912, {1.1866444990812812, 1.3786575592283876, 0.97441429343306707, 0.1640366260741255, -0.67134216338918373, -1.1388303771186128, -1.0185610034923738, -0.36709860818768836}, {-22.208645916559032, 5.3920333129704616, -0.22402168425333166}},
  {"batch_norm eval", -0.30055511410649771, {0.24340887231039676, 0.32668505718603608, 0.15136449872343699, -0.20009680497314689, -1.0207192500253679, -1.1329063679647058, -1.1040443046928681, -0.94770733954877873}, {-1.4219859548665323, 0.71500805559869796, 0.89718422216171301}},
  {"layer_norm over (3, 4)", 2.9254137453681199, {0.94603688504271055, -0.06156034825826015, -1.1183588231492019, -0.73289540555584098, 0.68247616544073875, 1.3891035579555289, 0.92097012024490621, 0.5257852994839195}, {-0.46014694868359124, 1.427571971254578, 2.4634350690339706}},
};

tg::TensorOptions f64() { return tg::TensorOptions().dtype(tg::kFloat64); }

using Op = std::function<Variable(const std::vector<Variable>&)>;
struct RefCase {
  std::string name;
  std::vector<tg::Shape> shapes;
  Op fn;
};

/// The same cases as tests/data/layers_reference.py, in its order.
std::vector<RefCase> reference_cases() {
  return {
      {"conv2d groups stride padding dilation", {{2, 4, 5, 6}, {6, 2, 3, 2}, {6}},
       [](auto& in) { return tg::conv2d(in[0], in[1], in[2], {2, 1}, {1, 2}, {1, 2}, 2); }},
      {"conv2d 3x3 padding 1", {{1, 3, 7, 7}, {4, 3, 3, 3}, {4}}, [](auto& in) { return tg::conv2d(in[0], in[1], in[2], {1}, {1}); }},
      {"conv2d 1x1 no bias", {{2, 5, 3, 4}, {3, 5, 1, 1}}, [](auto& in) { return tg::conv2d(in[0], in[1]); }},
      {"conv1d stride 2 padding 1", {{2, 3, 9}, {4, 3, 3}, {4}}, [](auto& in) { return tg::conv1d(in[0], in[1], in[2], 2, 1); }},
      {"max_pool2d 3 stride 2 padding 1", {{2, 3, 7, 8}}, [](auto& in) { return tg::max_pool2d(in[0], {3}, {2}, {1}); }},
      {"max_pool2d 2", {{2, 2, 6, 5}}, [](auto& in) { return tg::max_pool2d(in[0], {2}); }},
      {"avg_pool2d (3, 2) stride 2 padding 1", {{2, 3, 7, 8}}, [](auto& in) { return tg::avg_pool2d(in[0], {3, 2}, {2}, {1}); }},
      {"avg_pool2d count_include_pad false", {{2, 3, 7, 8}}, [](auto& in) { return tg::avg_pool2d(in[0], {3}, {2}, {1}, false); }},
      {"adaptive_avg_pool2d (3, 4)", {{2, 3, 7, 9}}, [](auto& in) { return tg::adaptive_avg_pool2d(in[0], {3, 4}); }},
      {"batch_norm training", {{4, 3, 2, 5}, {3}, {3}}, [](auto& in) {
         const Variable rm = tg::zeros({3}, f64()), rv = tg::ones({3}, f64());
         const Variable y = tg::batch_norm(in[0], rm, rv, in[1], in[2], true, 0.1, 1e-5);
         // The running statistics PyTorch left after the same step (printed by the script too).
         const std::vector<double> m = rm.to_vector<double>(), v = rv.to_vector<double>();
         const double want_m[] = {0.002365513941022255, 0.0025891288111606868, 0.0015383861540162165};
         const double want_v[] = {0.95188494305828308, 0.95223117648722733, 0.95087585915856143};
         for (int c = 0; c < 3; ++c) {
           CHECK(m[c] == doctest::Approx(want_m[c]).epsilon(1e-12));
           CHECK(v[c] == doctest::Approx(want_v[c]).epsilon(1e-12));
         }
         return y;
       }},
      {"batch_norm eval", {{2, 3, 4}, {3}, {3}}, [](auto& in) {
         return tg::batch_norm(in[0], fill({3}, 7.0, false), tg::exp(fill({3}, 8.0, false)), in[1], in[2], false);
       }},
      {"layer_norm over (3, 4)", {{2, 3, 4}, {3, 4}, {3, 4}}, [](auto& in) { return tg::layer_norm(in[0], {3, 4}, in[1], in[2]); }},
  };
}

void check_reference(const RefCase& c, const Reference& r) {
  CAPTURE(c.name);
  REQUIRE(c.name == r.name);
  std::vector<Variable> in;
  for (std::size_t i = 0; i < c.shapes.size(); ++i) in.push_back(fill(c.shapes[i], 1.0 + static_cast<double>(i)));
  const Variable out = c.fn(in);
  const Variable loss = tg::sum(out * fill(out.shape(), 9.0, false));
  CHECK(loss.item() == doctest::Approx(r.loss).epsilon(1e-12));
  const std::vector<double> got = out.to_vector<double>();
  REQUIRE(got.size() >= r.first.size());
  for (std::size_t i = 0; i < r.first.size(); ++i) CHECK(got[i] == doctest::Approx(r.first[i]).epsilon(1e-12));
  loss.backward();
  REQUIRE(r.probes.size() == in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    CAPTURE(i);
    REQUIRE(in[i].grad().defined());
    const double probe = tg::sum(in[i].grad() * fill(in[i].shape(), 5.0, false)).item();
    CHECK(probe == doctest::Approx(r.probes[i]).epsilon(1e-11));
  }
}

}  // namespace

TEST_CASE("layers: conv and pooling match PyTorch's values and gradients") {
  const std::vector<RefCase> cases = reference_cases();
  REQUIRE(cases.size() == kReferences.size());
  for (std::size_t i = 0; i < cases.size(); ++i) check_reference(cases[i], kReferences[i]);
}

TEST_CASE("layers: conv2d in float32 matches float64 and runs on several threads") {
  // (8, 16, 20, 20) is above the parallel threshold: images are spread over the pool.
  const Variable x = fill({8, 16, 20, 20}, 0.3), w = fill({24, 16, 3, 3}, 0.5), b = fill({24}, 0.9);
  const Variable y64 = tg::conv2d(x, w, b, {1}, {1});
  const Variable x32(x.data().to(tg::kFloat32), true), w32(w.data().to(tg::kFloat32), true), b32(b.data().to(tg::kFloat32), true);
  const Variable y32 = tg::conv2d(x32, w32, b32, {1}, {1});
  CHECK(y32.dtype() == tg::kFloat32);
  testing::check_close(y32.to(tg::kFloat64), y64, 1e-4, 1e-4);
  tg::sum(y64 * y64).backward();
  tg::sum(y32 * y32).backward();
  testing::check_close(w32.grad().to(tg::kFloat64), w.grad(), 1e-4, 1e-3);
  testing::check_close(x32.grad().to(tg::kFloat64), x.grad(), 1e-4, 1e-3);
  testing::check_close(b32.grad().to(tg::kFloat64), b.grad(), 1e-4, 1e-3);
}

TEST_CASE("layers: conv and pooling errors name the op and the shapes") {
  const Variable x = tg::randn({2, 4, 5, 5});
  TG_CHECK_THROWS(tg::conv2d(tg::randn({4, 5}), tg::randn({3, 4, 3, 3})), tg::ShapeError,
                  "conv2d: Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: [4, 5]");
  TG_CHECK_THROWS(tg::conv2d(x, tg::randn({3, 4, 3})), tg::ShapeError, "conv2d: expected weight of 4 dims");
  TG_CHECK_THROWS(tg::conv2d(x, tg::randn({3, 2, 3, 3}), Variable(), {1}, {0}, {1}, 2), tg::ShapeError,
                  "conv2d: Given groups=2, expected weight to be divisible by 2 at dimension 0, but got weight of size [3, 2, 3, 3]");
  TG_CHECK_THROWS(tg::conv2d(x, tg::randn({4, 3, 3, 3})), tg::ShapeError,
                  "conv2d: Given groups=1, weight of size [4, 3, 3, 3], expected input[2, 4, 5, 5] to have 3 channels, but got 4 channels instead");
  TG_CHECK_THROWS(tg::conv2d(x, tg::randn({4, 4, 8, 3}), Variable(), {1}, {1}), tg::ShapeError,
                  "conv2d: Calculated padded input size per channel: (7 x 7). Kernel size: (8 x 3)");
  CHECK(tg::conv2d(x, tg::randn({4, 4, 7, 7}), Variable(), {1}, {1}).shape() == tg::Shape{2, 4, 1, 1});   // exactly fits
  TG_CHECK_THROWS(tg::conv2d(x, tg::randn({4, 4, 7, 7})), tg::ShapeError, "Kernel size can't be greater than actual input size");
  TG_CHECK_THROWS(tg::conv2d(x, tg::randn({4, 4, 3, 3}), tg::randn({3})), tg::ShapeError,
                  "expected bias to be 1-dimensional with 4 elements, but got bias of size [3]");
  TG_CHECK_THROWS(tg::conv2d(x, tg::randn({4, 4, 3, 3}), Variable(), {0}), tg::ShapeError, "non-positive stride");
  TG_CHECK_THROWS(tg::conv2d(x, tg::randn({4, 4, 3, 3}), Variable(), {1, 1, 1}), tg::ShapeError,
                  "conv2d: stride must have 1 or 2 elements, got 3");
  TG_CHECK_THROWS(tg::conv2d(x, tg::randn({4, 4, 3, 3}), Variable(), {1}, {-1}), tg::ShapeError, "negative padding");
  TG_CHECK_THROWS(tg::conv2d(x, tg::randn({4, 4, 3, 3}, tg::TensorOptions().dtype(tg::kFloat64))), tg::DTypeError, "conv2d");
  TG_CHECK_THROWS(tg::conv2d(tg::randint(0, 3, {1, 1, 4, 4}), tg::randint(0, 3, {1, 1, 2, 2})), tg::DTypeError, "conv2d");
  TG_CHECK_THROWS(tg::conv1d(tg::randn({2, 3, 4}), tg::randn({2, 3, 5})), tg::ShapeError,
                  "conv1d: Calculated padded input size per channel: (4). Kernel size: (5)");
  TG_CHECK_THROWS(tg::conv1d(tg::randn({2, 3, 4, 4}), tg::randn({2, 3, 1})), tg::ShapeError,
                  "Expected 2D (unbatched) or 3D (batched) input to conv1d, but got input of size: [2, 3, 4, 4]");
  TG_CHECK_THROWS(tg::max_pool2d(tg::randn({5, 5}), {2}), tg::ShapeError, "max_pool2d: Expected 3D or 4D");
  TG_CHECK_THROWS(tg::max_pool2d(x, {3}, {1}, {2}), tg::ShapeError,
                  "max_pool2d: pad should be at most half of effective kernel size, but got pad=(2 x 2), kernel_size=(3 x 3)");
  TG_CHECK_THROWS(tg::max_pool2d(x, {6}), tg::ShapeError,
                  "max_pool2d: Given input size: (4x5x5). Calculated output size: (4x0x0). Output size is too small");
  TG_CHECK_THROWS(tg::avg_pool2d(x, {0}), tg::ShapeError, "avg_pool2d: kernel_size must be greater than zero");
  TG_CHECK_THROWS(tg::adaptive_avg_pool2d(x, {0, 2}), tg::ShapeError, "adaptive_avg_pool2d: elements of output_size must be positive");
}

namespace {

/// The model of tests/data/small_cnn.py, with the same layers and names.
struct SmallCnn : tg::nn::Module {
  tg::nn::Conv2d conv1{2, 4, 3, tg::nn::Conv2dOptions().padding(1)};
  tg::nn::BatchNorm2d bn1{4};
  tg::nn::MaxPool2d pool{2};
  tg::nn::Conv2d conv2{4, 6, 3, tg::nn::Conv2dOptions().padding({1, 2}).dilation({1, 2}).groups(2)};
  tg::nn::AvgPool2d avg{2};
  tg::nn::AdaptiveAvgPool2d gap{1};
  tg::nn::Conv1d conv3{6, 3, 2, tg::nn::Conv1dOptions().bias(false)};
  tg::nn::LayerNorm ln{{15}};
  tg::nn::Linear fc{15, 5};
  tg::nn::BatchNorm1d bn3{5};
  SmallCnn() {
    register_module("conv1", conv1);
    register_module("bn1", bn1);
    register_module("pool", pool);
    register_module("conv2", conv2);
    register_module("avg", avg);
    register_module("gap", gap);
    register_module("conv3", conv3);
    register_module("ln", ln);
    register_module("fc", fc);
    register_module("bn3", bn3);
  }
  Variable forward(const Variable& x) override {
    Variable h = pool(tg::relu(bn1(conv1(x))));                 // (N, 4, 4, 4)
    h = avg(tg::relu(conv2(h)));                                 // (N, 6, 2, 2)
    const Variable s = conv3(tg::flatten(h, 2));                 // (N, 3, 3)
    const Variable z = tg::cat({tg::flatten(s, 1), tg::flatten(gap(h), 1)}, 1);   // (N, 15)
    return bn3(fc(ln(z)));
  }
};

}  // namespace

TEST_CASE("layers: a PyTorch checkpoint of a small CNN loads and gives PyTorch's output") {
  SmallCnn model;
  // PyTorch's parameter and buffer names, in its state_dict order.
  std::vector<std::string> names;
  for (const auto& p : model.named_parameters()) names.push_back(p.first);
  CHECK(names == std::vector<std::string>{"conv1.weight", "conv1.bias", "bn1.weight", "bn1.bias", "conv2.weight",
                                          "conv2.bias", "conv3.weight", "ln.weight", "ln.bias", "fc.weight", "fc.bias",
                                          "bn3.weight", "bn3.bias"});
  names.clear();
  for (const auto& b : model.named_buffers()) names.push_back(b.first);
  CHECK(names == std::vector<std::string>{"bn1.running_mean", "bn1.running_var", "bn1.num_batches_tracked",
                                          "bn3.running_mean", "bn3.running_var", "bn3.num_batches_tracked"});
  CHECK(model.bn1.num_batches_tracked.dtype() == tg::kInt64);
  CHECK(model.conv2.weight.shape() == tg::Shape{6, 2, 3, 3});
  CHECK(model.conv3.weight.shape() == tg::Shape{3, 6, 2});
  CHECK_FALSE(model.conv3.bias.defined());
  // Written by `/usr/bin/python3 tests/data/small_cnn.py` (PyTorch 1.13): three training steps, then eval.
  tg::load(model, TG_SOURCE_DIR "/tests/data/small_cnn.safetensors");
  CHECK(model.bn1.num_batches_tracked.item() == 3);
  model.eval();
  const Variable x(fill({2, 2, 8, 8}, 0.5, false).data().to(tg::kFloat32));
  const std::vector<float> got = model(x).to_vector<float>();
  // The output that script printed for the same input.
  const std::vector<double> want = {-0.0273345225, -1.28765082, -0.517788529, 1.24481857,  -0.341008753,
                                    -0.0858731195, -1.27098513, -0.393312484, 0.638541698, -0.192865744};
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < want.size(); ++i) CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-5));
}

TEST_CASE("layers: modules have PyTorch's init, options, train/eval behaviour and printing") {
  tg::manual_seed(3);
  tg::nn::Conv2d conv(3, 8, 3, tg::nn::Conv2dOptions().stride(2).padding(1).bias(true));
  // kaiming_uniform_(a = sqrt(5)): U(+-1/sqrt(fan_in)), fan_in = 3 * 3 * 3
  const double bound = 1.0 / std::sqrt(27.0);
  CHECK(tg::max(tg::abs(conv.weight)).item() <= bound);
  CHECK(tg::max(tg::abs(conv.weight)).item() > 0.8 * bound);
  CHECK(tg::max(tg::abs(conv.bias)).item() <= bound);
  CHECK(conv.name() == "Conv2d(3, 8, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1))");
  CHECK(conv(tg::randn({2, 3, 9, 9})).shape() == tg::Shape{2, 8, 5, 5});
  CHECK(tg::nn::MaxPool2d(2).name() == "MaxPool2d(kernel_size=2, stride=2, padding=0)");
  TG_CHECK_THROWS(tg::nn::Conv2d(3, 8, 3, tg::nn::Conv2dOptions().groups(2)), tg::ShapeError,
                  "Conv2d: in_channels must be divisible by groups (3 and 2)");

  tg::nn::BatchNorm2d bn(3);
  CHECK(bn.name() == "BatchNorm2d(3, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)");
  const Variable x = tg::randn({4, 3, 5, 5}) * 2.0 + 1.0;
  const Variable y = bn(x);   // training: batch statistics, running ones move by momentum 0.1
  CHECK(bn.num_batches_tracked.item() == 1);
  const std::vector<float> rm = bn.running_mean.to_vector<float>();
  const std::vector<float> batch_mean = tg::mean(tg::mean(tg::mean(x, 3), 2), 0).to_vector<float>();
  for (int c = 0; c < 3; ++c) CHECK(rm[c] == doctest::Approx(0.1 * batch_mean[c]).epsilon(1e-5));
  CHECK(std::abs(tg::mean(y).item()) < 1e-5);
  bn.eval();   // eval: running statistics, nothing updated
  const Variable z = bn(x);
  CHECK(bn.num_batches_tracked.item() == 1);
  CHECK(bn.running_mean.to_vector<float>() == rm);
  CHECK(std::abs(tg::mean(z).item()) > 0.1);   // normalized with the running (not the batch) statistics
  TG_CHECK_THROWS(bn(tg::randn({4, 3, 5})), tg::ShapeError, "BatchNorm2d: expected 4D input (got 3D input");
  bn.train();
  TG_CHECK_THROWS(tg::nn::BatchNorm1d(3)(tg::randn({1, 3})), tg::ShapeError,
                  "Expected more than 1 value per channel when training");

  tg::nn::LayerNorm ln({4});
  CHECK(ln.name() == "LayerNorm((4,), eps=1e-05, elementwise_affine=True)");
  const Variable l = ln(tg::randn({3, 4}) * 5.0);
  CHECK(std::abs(tg::mean(l).item()) < 1e-5);
  TG_CHECK_THROWS(ln(tg::randn({3, 5})), tg::ShapeError, "layer_norm: Given normalized_shape=[4], expected input with shape [*, 4], but got input of size[3, 5]");

  // clone() keeps the configuration and copies parameters and buffers
  std::unique_ptr<tg::nn::Module> copy = bn.clone();
  CHECK(copy->name() == bn.name());
  CHECK(copy->named_buffers().size() == 3);
}
