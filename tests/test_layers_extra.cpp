// tests/test_layers_extra.cpp: prelu, instance_norm, max_pool1d / avg_pool1d, the adaptive max poolings,
// adaptive_avg_pool1d and conv_transpose1d, and their modules (PReLU, InstanceNorm1d/2d, ConvTranspose1d,
// MaxPool1d, AvgPool1d, AdaptiveMaxPool2d, AdaptiveAvgPool1d, AdaptiveMaxPool1d, the padding layers)
// against numbers recorded from PyTorch (tests/data/layers_extra_reference.py), with the modules'
// names, state_dict keys, options and every error path. Finite-difference checks: test_gradcheck.cpp.
#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "data/layers_extra_reference.h"
#include "testing.h"

using tg::Tensor;
namespace nn = tg::nn;

namespace {

Tensor fill(const tg::Shape& shape, double seed, bool requires_grad = true) {
  return testing::sin_fill(shape, seed, requires_grad);
}

/// The values the script recorded under name.
const std::vector<double>& recorded(const std::string& name) {
  for (const auto& entry : layers_extra::kValues)
    if (entry.first == name) return entry.second;
  FAIL("no recorded values named " << name);
  static const std::vector<double> none;
  return none;
}

/// Checks t's values against the recorded ones of name, to a relative eps (float32 values: 1e-7).
void check_values(const Tensor& t, const std::string& name, double eps = 1e-12) {
  CAPTURE(name);
  const std::vector<double> got = t.to(tg::kFloat64).to_vector<double>(), want = recorded(name);
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(want[i]).epsilon(eps));
}

/// m in float64 (the script's default dtype), each parameter (registration order) set to fill(shape,
/// seed), as the script's set_params.
void set_params(nn::Module& m, const std::vector<double>& seeds) {
  m.to(tg::kFloat64);
  auto params = m.parameters();
  REQUIRE(params.size() == seeds.size());
  tg::NoGradGuard no_grad;
  for (std::size_t i = 0; i < params.size(); ++i) params[i].copy_(fill(params[i].shape(), seeds[i], false));
}

using Op = std::function<Tensor(const std::vector<Tensor>&)>;
struct RefCase {
  std::string name;
  std::vector<tg::Shape> shapes;
  Op fn;
  std::shared_ptr<nn::Module> module;   ///< whose parameter gradients are probed after the inputs'
};

/// A case that runs module m on its one input.
RefCase module_case(std::string name, tg::Shape shape, std::shared_ptr<nn::Module> m) {
  nn::Module* raw = m.get();
  return {std::move(name), {std::move(shape)}, [raw](auto& in) { return (*raw)(in[0]); }, m};
}

/// The cases of tests/data/layers_extra_reference.py, in its order.
std::vector<RefCase> reference_cases() {
  std::vector<RefCase> t = {
      {"prelu one weight", {{2, 3, 4}, {1}}, [](auto& in) { return tg::prelu(in[0], in[1]); }, nullptr},
      {"prelu per channel", {{2, 3, 4, 2}, {3}}, [](auto& in) { return tg::prelu(in[0], in[1]); }, nullptr},
      {"prelu 1-D input", {{7}, {1}}, [](auto& in) { return tg::prelu(in[0], in[1]); }, nullptr},
      {"prelu unbatched (C, L) per channel", {{4, 5}, {5}}, [](auto& in) { return tg::prelu(in[0], in[1]); }, nullptr},
      {"instance_norm training with running stats, momentum 0.2", {{2, 3, 5}, {3}, {3}}, [](auto& in) {
         const Tensor rm = fill({3}, 7.0, false), rv = tg::exp(fill({3}, 8.0, false));
         const Tensor y = tg::instance_norm(in[0], rm, rv, in[1], in[2], true, 0.2, 1e-5);
         check_values(rm, "instance_norm training running_mean");
         check_values(rv, "instance_norm training running_var");
         return y;
       }, nullptr},
      {"instance_norm no affine, no running stats", {{2, 3, 4, 3}}, [](auto& in) { return tg::instance_norm(in[0]); }, nullptr},
      {"instance_norm eval with running stats", {{2, 3, 4}, {3}, {3}}, [](auto& in) {
         return tg::instance_norm(in[0], fill({3}, 7.0, false), tg::exp(fill({3}, 8.0, false)), in[1], in[2], false);
       }, nullptr},
      {"max_pool1d 3 stride 2 padding 1", {{2, 3, 9}}, [](auto& in) { return tg::max_pool1d(in[0], 3, 2, 1); }, nullptr},
      {"max_pool1d 3 stride 2 padding 1 dilation 2 ceil_mode", {{2, 3, 10}},
       [](auto& in) { return tg::max_pool1d(in[0], 3, 2, 1, 2, true); }, nullptr},
      {"avg_pool1d 3 stride 2 padding 1 ceil_mode count_include_pad false", {{2, 3, 10}},
       [](auto& in) { return tg::avg_pool1d(in[0], 3, 2, 1, true, false); }, nullptr},
      {"avg_pool1d 2 unbatched", {{2, 7}}, [](auto& in) { return tg::avg_pool1d(in[0], 2); }, nullptr},
      {"adaptive_max_pool2d (3, 4) of (7, 9)", {{2, 3, 7, 9}}, [](auto& in) { return tg::adaptive_max_pool2d(in[0], {3, 4}); }, nullptr},
      {"adaptive_max_pool2d (2, 3) of (6, 9): equal windows", {{1, 2, 6, 9}},
       [](auto& in) { return tg::adaptive_max_pool2d(in[0], {2, 3}); }, nullptr},
      {"adaptive_max_pool2d (5, 4) of unbatched (2, 3, 3): overlapping windows", {{2, 3, 3}},
       [](auto& in) { return tg::adaptive_max_pool2d(in[0], {5, 4}); }, nullptr},
      {"adaptive_max_pool2d (3, 3) of (6, 7): equal rows, unequal columns", {{1, 2, 6, 7}},
       [](auto& in) { return tg::adaptive_max_pool2d(in[0], 3); }, nullptr},
      {"adaptive_avg_pool1d 4 of 10", {{2, 3, 10}}, [](auto& in) { return tg::adaptive_avg_pool1d(in[0], 4); }, nullptr},
      {"adaptive_max_pool1d 4 of 10", {{2, 3, 10}}, [](auto& in) { return tg::adaptive_max_pool1d(in[0], 4); }, nullptr},
      {"adaptive_max_pool1d 5 of 10 unbatched", {{2, 10}}, [](auto& in) { return tg::adaptive_max_pool1d(in[0], 5); }, nullptr},
      {"conv_transpose1d stride 2 padding 1 output_padding 1 groups 2 dilation 2", {{2, 4, 5}, {4, 3, 3}, {6}},
       [](auto& in) { return tg::conv_transpose1d(in[0], in[1], in[2], 2, 1, 1, 2, 2); }, nullptr},
      {"conv_transpose1d no bias", {{1, 3, 6}, {3, 2, 4}}, [](auto& in) { return tg::conv_transpose1d(in[0], in[1]); }, nullptr},
      {"conv_transpose1d unbatched stride 3", {{2, 4}, {2, 3, 2}, {3}},
       [](auto& in) { return tg::conv_transpose1d(in[0], in[1], in[2], 3); }, nullptr},
  };
  // ---- modules, parameters set to the script's values
  auto prelu = std::make_shared<nn::PReLU>(nn::PReLUOptions().num_parameters(3).init(0.1));
  check_values(prelu->weight, "PReLU(3, init 0.1) initial weight", 1e-7);   // float32 until set_params
  set_params(*prelu, {2.0});
  t.push_back(module_case("PReLU(3) module", {2, 3, 4}, prelu));
  auto in1 = std::make_shared<nn::InstanceNorm1d>(nn::InstanceNorm1dOptions(3).affine(true).track_running_stats(true).momentum(0.3));
  set_params(*in1, {2.0, 3.0});
  RefCase train = module_case("InstanceNorm1d(3, affine, track) training", {4, 3, 6}, in1);
  nn::InstanceNorm1d* in1_raw = in1.get();
  train.fn = [in1_raw](auto& in) {
    const Tensor y = (*in1_raw)(in[0]);
    check_values(in1_raw->running_mean, "InstanceNorm1d training running_mean");
    check_values(in1_raw->running_var, "InstanceNorm1d training running_var");
    check_values(in1_raw->num_batches_tracked, "InstanceNorm1d num_batches_tracked");
    in1_raw->eval();   // the next case evaluates with the running statistics of this step
    return y;
  };
  t.push_back(train);
  t.push_back(module_case("InstanceNorm1d(3, affine, track) eval after one step", {2, 3, 5}, in1));
  auto in2 = std::make_shared<nn::InstanceNorm2d>(3);   // no parameters or buffers: any dtype
  t.push_back(module_case("InstanceNorm2d(3) unbatched", {3, 4, 5}, in2));
  RefCase in2_eval = module_case("InstanceNorm2d(3) eval without running stats", {2, 3, 2, 4}, in2);
  nn::InstanceNorm2d* in2_raw = in2.get();
  in2_eval.fn = [in2_raw](auto& in) {
    in2_raw->eval();
    return (*in2_raw)(in[0]);
  };
  t.push_back(in2_eval);
  auto ct = std::make_shared<nn::ConvTranspose1d>(4, 6, 3, nn::ConvTranspose1dOptions().stride(2).padding(1).output_padding(1).groups(2));
  set_params(*ct, {2.0, 3.0});
  t.push_back(module_case("ConvTranspose1d(4, 6, 3) stride 2 padding 1 output_padding 1 groups 2", {2, 4, 5}, ct));
  t.push_back(module_case("MaxPool1d(3) stride 2 padding 1 ceil_mode", {2, 3, 10},
                          std::make_shared<nn::MaxPool1d>(nn::MaxPool1dOptions(3).stride(2).padding(1).ceil_mode(true))));
  t.push_back(module_case("AvgPool1d(4) stride 3 padding 2 count_include_pad false", {2, 3, 11},
                          std::make_shared<nn::AvgPool1d>(nn::AvgPool1dOptions(4).stride(3).padding(2).count_include_pad(false))));
  t.push_back(module_case("AdaptiveMaxPool2d((4, 3))", {2, 3, 7, 5}, std::make_shared<nn::AdaptiveMaxPool2d>(std::vector<int64_t>{4, 3})));
  t.push_back(module_case("AdaptiveAvgPool1d(3)", {2, 3, 8}, std::make_shared<nn::AdaptiveAvgPool1d>(3)));
  t.push_back(module_case("AdaptiveMaxPool1d(3)", {2, 3, 8}, std::make_shared<nn::AdaptiveMaxPool1d>(3)));
  t.push_back(module_case("ZeroPad1d((1, 2))", {2, 3, 4}, std::make_shared<nn::ZeroPad1d>(tg::IntArrayRef{1, 2})));
  t.push_back(module_case("ZeroPad2d((1, 1, 2, 0))", {2, 3, 4}, std::make_shared<nn::ZeroPad2d>(nn::ZeroPad2dOptions({1, 1, 2, 0}))));
  t.push_back(module_case("ConstantPad1d(2, 3.5)", {2, 3, 4}, std::make_shared<nn::ConstantPad1d>(2, 3.5)));
  t.push_back(module_case("ConstantPad2d((1, 0, 2, 1), -1.5)", {1, 2, 3, 4},
                          std::make_shared<nn::ConstantPad2d>(nn::ConstantPad2dOptions({1, 0, 2, 1}, -1.5))));
  t.push_back(module_case("ReflectionPad1d((1, 3))", {2, 3, 5}, std::make_shared<nn::ReflectionPad1d>(tg::IntArrayRef{1, 3})));
  t.push_back(module_case("ReflectionPad2d(2)", {1, 2, 3, 4}, std::make_shared<nn::ReflectionPad2d>(2)));
  t.push_back(module_case("ReplicationPad1d((2, 1))", {3, 4}, std::make_shared<nn::ReplicationPad1d>(nn::ReplicationPad1dOptions({2, 1}))));
  t.push_back(module_case("ReplicationPad2d((1, 0, 2, 1))", {2, 3, 3, 2},
                          std::make_shared<nn::ReplicationPad2d>(tg::IntArrayRef{1, 0, 2, 1})));
  return t;
}

void check_reference(const RefCase& c, const layers_extra::Reference& r) {
  CAPTURE(c.name);
  REQUIRE(c.name == r.name);
  if (c.module) c.module->zero_grad();
  std::vector<Tensor> in;
  for (std::size_t i = 0; i < c.shapes.size(); ++i) in.push_back(fill(c.shapes[i], 1.0 + static_cast<double>(i)));
  const Tensor out = c.fn(in);
  const Tensor loss = tg::sum(out * fill(out.shape(), 9.0, false));
  CHECK(loss.item() == doctest::Approx(r.loss).epsilon(1e-12));
  const std::vector<double> got = out.to_vector<double>();
  REQUIRE(got.size() >= r.first.size());
  for (std::size_t i = 0; i < r.first.size(); ++i) CHECK(got[i] == doctest::Approx(r.first[i]).epsilon(1e-12));
  loss.backward();
  std::vector<Tensor> probed = in;
  if (c.module)
    for (const Tensor& p : c.module->parameters()) probed.push_back(p);
  REQUIRE(r.probes.size() == probed.size());
  for (std::size_t i = 0; i < probed.size(); ++i) {
    CAPTURE(i);
    REQUIRE(probed[i].grad().defined());
    const double probe = tg::sum(probed[i].grad() * fill(probed[i].shape(), 5.0, false)).item();
    CHECK(probe == doctest::Approx(r.probes[i]).epsilon(1e-11));
  }
}

/// PyTorch's repr of the script's module named name.
std::string recorded_repr(const std::string& name) {
  for (const auto& entry : layers_extra::kReprs)
    if (entry.first == name) return entry.second;
  FAIL("no recorded repr named " << name);
  return "";
}

/// PyTorch's state_dict keys of the script's module named name.
std::vector<std::string> recorded_keys(const std::string& name) {
  for (const auto& entry : layers_extra::kStateDictKeys)
    if (entry.first == name) return entry.second;
  FAIL("no recorded state_dict keys named " << name);
  return {};
}

/// m's parameter names, then its buffer names: the order of PyTorch's state_dict.
std::vector<std::string> state_dict_keys(const nn::Module& m) {
  std::vector<std::string> keys;
  for (const auto& p : m.named_parameters()) keys.push_back(p.first);
  for (const auto& b : m.named_buffers()) keys.push_back(b.first);
  return keys;
}

}  // namespace

TEST_CASE("layers extra: prelu, instance_norm, 1-D and adaptive pooling, conv_transpose1d and padding match PyTorch") {
  const std::vector<RefCase> cases = reference_cases();
  REQUIRE(cases.size() == layers_extra::kCases.size());
  for (std::size_t i = 0; i < cases.size(); ++i) check_reference(cases[i], layers_extra::kCases[i]);
}

TEST_CASE("layers extra: module names and state_dict keys are PyTorch's") {
  CHECK(nn::PReLU(nn::PReLUOptions().num_parameters(3)).name() == recorded_repr("PReLU(3)"));
  CHECK(nn::InstanceNorm1d(nn::InstanceNorm1dOptions(3).affine(true).track_running_stats(true).momentum(0.3)).name() ==
        recorded_repr("InstanceNorm1d(3, affine, track, momentum 0.3)"));
  CHECK(nn::InstanceNorm2d(3).name() == recorded_repr("InstanceNorm2d(3)"));
  CHECK(nn::ConvTranspose1d(4, 6, 3, nn::ConvTranspose1dOptions().stride(2).padding(1).output_padding(1).groups(2)).name() ==
        recorded_repr("ConvTranspose1d(4, 6, 3) stride 2 padding 1 output_padding 1 groups 2"));
  CHECK(nn::ConvTranspose1d(nn::ConvTranspose1dOptions(3, 2, 4).bias(false)).name() == recorded_repr("ConvTranspose1d(3, 2, 4) no bias"));
  CHECK(nn::MaxPool1d(nn::MaxPool1dOptions(3).stride(2).padding(1).ceil_mode(true)).name() ==
        recorded_repr("MaxPool1d(3) stride 2 padding 1 ceil_mode"));
  CHECK(nn::AvgPool1d(nn::AvgPool1dOptions(4).stride(3).padding(2).count_include_pad(false)).name() ==
        recorded_repr("AvgPool1d(4) stride 3 padding 2 count_include_pad false"));
  CHECK(nn::AdaptiveMaxPool2d(std::vector<int64_t>{4, 3}).name() == recorded_repr("AdaptiveMaxPool2d((4, 3))"));
  CHECK(nn::AdaptiveAvgPool1d(3).name() == recorded_repr("AdaptiveAvgPool1d(3)"));
  CHECK(nn::AdaptiveMaxPool1d(3).name() == recorded_repr("AdaptiveMaxPool1d(3)"));
  CHECK(nn::ZeroPad1d({1, 2}).name() == recorded_repr("ZeroPad1d((1, 2))"));
  CHECK(nn::ZeroPad2d({1, 1, 2, 0}).name() == recorded_repr("ZeroPad2d((1, 1, 2, 0))"));
  CHECK(nn::ConstantPad1d(2, 3.5).name() == recorded_repr("ConstantPad1d(2, 3.5)"));
  CHECK(nn::ConstantPad2d({1, 0, 2, 1}, -1.5).name() == recorded_repr("ConstantPad2d((1, 0, 2, 1), -1.5)"));
  CHECK(nn::ReflectionPad1d({1, 3}).name() == recorded_repr("ReflectionPad1d((1, 3))"));
  CHECK(nn::ReflectionPad2d(2).name() == recorded_repr("ReflectionPad2d(2)"));
  CHECK(nn::ReplicationPad1d({2, 1}).name() == recorded_repr("ReplicationPad1d((2, 1))"));
  CHECK(nn::ReplicationPad2d({1, 0, 2, 1}).name() == recorded_repr("ReplicationPad2d((1, 0, 2, 1))"));

  CHECK(state_dict_keys(nn::PReLU(nn::PReLUOptions().num_parameters(3))) == recorded_keys("PReLU(3)"));
  CHECK(state_dict_keys(nn::InstanceNorm1d(nn::InstanceNorm1dOptions(3).affine(true).track_running_stats(true))) ==
        recorded_keys("InstanceNorm1d(3, affine, track)"));
  CHECK(state_dict_keys(nn::InstanceNorm2d(3)) == recorded_keys("InstanceNorm2d(3)"));
  CHECK(state_dict_keys(nn::ConvTranspose1d(4, 6, 3, nn::ConvTranspose1dOptions().groups(2))) == recorded_keys("ConvTranspose1d(4, 6, 3)"));
}

TEST_CASE("layers extra: module defaults, shapes, init and holders") {
  // PReLU: one slope of 0.25
  nn::PReLU prelu;
  CHECK(prelu.weight.shape() == tg::Shape{1});
  CHECK(prelu.weight.to_vector<float>()[0] == 0.25f);
  CHECK(prelu.weight.requires_grad());
  // InstanceNorm: no parameters or buffers by default, ones and zeros with affine and tracking
  nn::InstanceNorm2d plain(4);
  CHECK(plain.parameters().empty());
  CHECK(plain.named_buffers().empty());
  nn::InstanceNorm2d full(nn::InstanceNorm2dOptions(4).affine(true).track_running_stats(true));
  CHECK(full.weight.to_vector<float>() == std::vector<float>(4, 1.0f));
  CHECK(full.bias.to_vector<float>() == std::vector<float>(4, 0.0f));
  CHECK(full.running_var.to_vector<float>() == std::vector<float>(4, 1.0f));
  CHECK(full.num_batches_tracked.dtype() == tg::kInt64);
  // float32 forward of the modules keeps the dtype and the documented shapes
  tg::manual_seed(3);
  const Tensor x = tg::randn({2, 4, 9});
  CHECK(nn::InstanceNorm1d(4)(x).shape() == tg::Shape{2, 4, 9});
  CHECK(nn::MaxPool1d(3)(x).shape() == tg::Shape{2, 4, 3});
  CHECK(nn::AvgPool1d(nn::AvgPool1dOptions(2).stride(1))(x).shape() == tg::Shape{2, 4, 8});
  CHECK(nn::AdaptiveMaxPool1d(4)(x).shape() == tg::Shape{2, 4, 4});
  CHECK(nn::AdaptiveAvgPool1d(5)(x).shape() == tg::Shape{2, 4, 5});
  CHECK(nn::AdaptiveMaxPool2d(2)(tg::randn({4, 5, 7})).shape() == tg::Shape{4, 2, 2});
  nn::ConvTranspose1d up(4, 3, 4, nn::ConvTranspose1dOptions().stride(2).padding(1));
  CHECK(up.weight.shape() == tg::Shape{4, 3, 4});
  CHECK(up.bias.shape() == tg::Shape{3});
  const Tensor y = up(x);
  CHECK(y.shape() == tg::Shape{2, 3, 18});   // (9 - 1) 2 - 2 + 3 + 1
  CHECK(y.dtype() == tg::kFloat32);
  // the init bound: U(+-1/sqrt(fan_in)), fan_in = out / groups k = 12
  const double bound = 1.0 / std::sqrt(12.0);
  for (float w : up.weight.to_vector<float>()) CHECK(std::abs(w) <= bound);
  CHECK(nn::ZeroPad2d(1)(tg::randn({2, 3})).shape() == tg::Shape{4, 5});
  // holders: libtorch's spelling of a member built later
  struct Net : nn::Module {
    nn::PReLU act{nullptr};
    nn::InstanceNorm1d norm{nullptr};
    nn::ReflectionPad1d pad{nullptr};
    nn::MaxPool1d pool{nullptr};
    Net() {
      act = register_module("act", nn::PReLU(nn::PReLUOptions().num_parameters(4)));
      norm = register_module("norm", nn::InstanceNorm1d(nn::InstanceNorm1dOptions(4).affine(true)));
      pad = register_module("pad", nn::ReflectionPad1d(2));
      pool = register_module("pool", nn::MaxPool1d(nn::MaxPool1dOptions(2)));
    }
    Tensor forward(const Tensor& v) override { return pool(pad(norm(act(v)))); }
  };
  Net net;
  CHECK(net.forward(x).shape() == tg::Shape{2, 4, 6});
  std::vector<std::string> names;
  for (const auto& p : net.named_parameters()) names.push_back(p.first);
  CHECK(names == std::vector<std::string>{"act.weight", "norm.weight", "norm.bias"});
  // clone() keeps the configuration and copies the values
  tg::NoGradGuard no_grad;
  prelu.weight.fill_(0.5);
  auto copy = prelu.clone();
  CHECK(copy->name() == "PReLU(num_parameters=1)");
  CHECK(copy->parameters()[0].to_vector<float>()[0] == 0.5f);
}

TEST_CASE("layers extra: InstanceNorm tracks running statistics in training and uses them in eval") {
  nn::InstanceNorm1d norm(nn::InstanceNorm1dOptions(2).track_running_stats(true).momentum(0.5));
  norm.to(tg::kFloat64);
  const Tensor x = fill({3, 2, 4}, 0.4, false);
  const Tensor y = norm(x);
  // each (n, c) row normalized by its own statistics: mean 0, biased variance 1 - eps / (var + eps)
  const Tensor rows = tg::reshape(y, {6, 4});
  testing::check_close(tg::mean(rows, 1), tg::zeros({6}, tg::kFloat64), 0, 1e-12);
  // running = 0.5 running + 0.5 (batch mean of the instance means / unbiased variances)
  const Tensor flat = tg::reshape(x, {3, 2, 4});
  testing::check_close(norm.running_mean, tg::mean(tg::mean(flat, 2), 0) * 0.5, 1e-12, 1e-14);
  testing::check_close(norm.running_var, tg::mean(tg::var(flat, {2}, true), 0) * 0.5 + 0.5, 1e-12, 1e-14);
  CHECK(!norm.running_mean.requires_grad());
  // eval: the running statistics normalize, and stay as they were
  norm.eval();
  const std::vector<double> before = norm.running_mean.to_vector<double>();
  const Tensor z = norm(x);
  CHECK(norm.running_mean.to_vector<double>() == before);
  const Tensor want = (x - tg::reshape(norm.running_mean, {1, 2, 1})) / tg::sqrt(tg::reshape(norm.running_var, {1, 2, 1}) + 1e-5);
  testing::check_close(z, want, 1e-12, 1e-12);
  // without tracking, eval still uses each instance's statistics
  nn::InstanceNorm1d untracked(2);
  untracked.eval();
  testing::check_close(untracked(x), y, 1e-12, 1e-12);
}

TEST_CASE("layers extra: adaptive max pooling sends each window's gradient to its maximum") {
  // windows of (5) -> 3: [0, 2), [1, 4), [3, 5); the maxima at 1, 2 and 4 each take their window's gradient
  Tensor x = tg::from_vector(std::vector<double>{0.5, 3.0, 2.0, -1.0, 4.0}, {1, 1, 5});
  x.set_requires_grad(true);
  const Tensor y = tg::adaptive_max_pool1d(x, 3);
  CHECK(y.to_vector<double>() == std::vector<double>{3.0, 3.0, 4.0});
  tg::sum(y * tg::from_vector(std::vector<double>{1.0, 10.0, 100.0}, {1, 1, 3})).backward();
  CHECK(x.grad().to_vector<double>() == std::vector<double>{0.0, 11.0, 0.0, 0.0, 100.0});
}

TEST_CASE("layers extra: errors name the op or module and the shapes") {
  const Tensor x3 = tg::randn({2, 3, 8}), x4 = tg::randn({2, 3, 6, 6});
  // prelu
  TG_CHECK_THROWS(tg::prelu(x3, tg::randn({4})), tg::ShapeError,
                  "prelu: Mismatch of parameter numbers and input channel size. Found parameter numbers = 4 and channel size = 3");
  TG_CHECK_THROWS(tg::prelu(tg::randn({}), tg::randn({2})), tg::ShapeError, "prelu: Not allow zero-dim input tensor");
  TG_CHECK_THROWS(tg::prelu(x3, tg::randn({1, 1})), tg::ShapeError,
                  "prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = 2");
  TG_CHECK_THROWS(tg::prelu(x3, tg::randn({3}, tg::kFloat64)), tg::DTypeError,
                  "prelu: Type promoting not supported. Got float32 and float64");
  TG_CHECK_THROWS(tg::prelu(tg::randint(0, 3, {2, 3}), tg::randint(0, 3, {3})), tg::DTypeError, "prelu");
  TG_CHECK_THROWS(nn::PReLU(nn::PReLUOptions().num_parameters(0)), tg::Error, "PReLU: num_parameters must be positive, got 0");
  TG_CHECK_THROWS(nn::PReLU(nn::PReLUOptions().num_parameters(4))(x3), tg::ShapeError, "prelu: Mismatch");
  // instance_norm
  TG_CHECK_THROWS(tg::instance_norm(tg::randn({3})), tg::ShapeError, "instance_norm: expected input of at least 2 dims");
  TG_CHECK_THROWS(tg::instance_norm(tg::randn({2, 3, 1})), tg::ShapeError,
                  "instance_norm: Expected more than 1 spatial element when training, got input size [2, 3, 1]");
  TG_CHECK_THROWS(tg::instance_norm(x3, tg::zeros({4}), tg::ones({4})), tg::ShapeError,
                  "instance_norm: expected weight, bias, running_mean and running_var of shape [3] for input of size [2, 3, 8], got [4]");
  TG_CHECK_THROWS(tg::instance_norm(x3, Tensor(), Tensor(), tg::ones({3}), tg::zeros({2})), tg::ShapeError, "got [2]");
  TG_CHECK_THROWS(tg::instance_norm(x3, Tensor(), Tensor(), Tensor(), Tensor(), false), tg::Error,
                  "instance_norm: Expected running_mean and running_var to be defined when use_input_stats is false");
  TG_CHECK_THROWS(tg::instance_norm(x3, tg::zeros({3}, tg::TensorOptions().requires_grad(true)), tg::ones({3})),
                  tg::AutogradError, "instance_norm: running_mean and running_var are buffers");
  TG_CHECK_THROWS(tg::instance_norm(tg::randint(0, 3, {2, 3, 4})), tg::DTypeError, "instance_norm");
  TG_CHECK_THROWS(nn::InstanceNorm1d(3)(x4), tg::ShapeError,
                  "InstanceNorm1d: expected 2D or 3D input (got 4D input of size [2, 3, 6, 6])");
  TG_CHECK_THROWS(nn::InstanceNorm2d(3)(tg::randn({3, 8})), tg::ShapeError, "InstanceNorm2d: expected 3D or 4D input (got 2D");
  CHECK_NOTHROW(nn::InstanceNorm2d(3)(tg::randn({3, 2, 2})));   // unbatched
  TG_CHECK_THROWS(nn::InstanceNorm1d(nn::InstanceNorm1dOptions(4).affine(true))(x3), tg::ShapeError,
                  "InstanceNorm1d: expected input's size at dim=1 to match num_features (4), but got: 3");
  TG_CHECK_THROWS(nn::InstanceNorm1d(nn::InstanceNorm1dOptions(5).track_running_stats(true))(tg::randn({3, 8})),
                  tg::ShapeError, "InstanceNorm1d: expected input's size at dim=0 to match num_features (5), but got: 3");
  CHECK(nn::InstanceNorm1d(4)(x3).shape() == x3.shape());   // PyTorch only warns without per-channel tensors
  TG_CHECK_THROWS(nn::InstanceNorm2d(0), tg::ShapeError, "InstanceNorm: num_features must be positive, got 0");
  TG_CHECK_THROWS(nn::InstanceNorm2d(nn::InstanceNorm2dOptions(2).momentum(1.5)), tg::Error, "InstanceNorm: momentum");
  TG_CHECK_THROWS(nn::InstanceNorm2d(nn::InstanceNorm2dOptions(2).eps(0)), tg::Error, "InstanceNorm: eps must be positive");
  // max_pool1d / avg_pool1d
  TG_CHECK_THROWS(tg::max_pool1d(x4, 2), tg::ShapeError, "max_pool1d: Expected 2D or 3D input tensor, but got [2, 3, 6, 6]");
  TG_CHECK_THROWS(tg::max_pool1d(x3, {2, 2}), tg::ShapeError, "max_pool1d: kernel_size must be an int or a list of one int, but got 2");
  TG_CHECK_THROWS(tg::max_pool1d(x3, 0), tg::ShapeError, "max_pool1d: kernel_size must be greater than zero, but got 0");
  TG_CHECK_THROWS(tg::max_pool1d(x3, 2, 0), tg::ShapeError, "max_pool1d: stride must be greater than zero, but got 0");
  TG_CHECK_THROWS(tg::max_pool1d(x3, 2, {}, -1), tg::ShapeError, "max_pool1d: padding must be non-negative, but got -1");
  TG_CHECK_THROWS(tg::max_pool1d(x3, 3, {}, 2), tg::ShapeError,
                  "max_pool1d: padding should be at most half of kernel size, but got padding=2 and kernel_size=3");
  TG_CHECK_THROWS(tg::max_pool1d(x3, 2, {}, 0, 0), tg::ShapeError, "max_pool1d: dilation must be greater than zero, but got 0");
  TG_CHECK_THROWS(tg::max_pool1d(x3, 5, 1, 0, 2), tg::ShapeError,
                  "max_pool1d: Invalid computed output size: 0 (input of size [2, 3, 8], kernel_size 5, padding 0, dilation 2)");
  TG_CHECK_THROWS(tg::max_pool1d(tg::randint(0, 3, {2, 3, 4}), 2), tg::DTypeError, "max_pool1d");
  TG_CHECK_THROWS(tg::avg_pool1d(x3, 9), tg::ShapeError, "avg_pool1d: Invalid computed output size: 0");
  TG_CHECK_THROWS(tg::avg_pool1d(x3, 2, {}, 2), tg::ShapeError, "avg_pool1d: padding should be at most half of kernel size");
  TG_CHECK_THROWS(tg::avg_pool1d(tg::randn({8}), 2), tg::ShapeError, "avg_pool1d: Expected 2D or 3D input tensor, but got [8]");
  TG_CHECK_THROWS(nn::MaxPool1d(nn::MaxPool1dOptions({2, 2})), tg::ShapeError, "MaxPool1d: kernel_size, stride, padding and dilation must be single numbers");
  TG_CHECK_THROWS(nn::MaxPool1d(nn::MaxPool1dOptions(std::vector<int64_t>{})), tg::ShapeError, "MaxPool1d: kernel_size must be a single number");
  TG_CHECK_THROWS(nn::AvgPool1d(nn::AvgPool1dOptions(2).padding({1, 1})), tg::ShapeError, "AvgPool1d: kernel_size, stride, padding and dilation must be single numbers");
  // adaptive pooling
  TG_CHECK_THROWS(tg::adaptive_max_pool2d(x3.select(0, 0).select(0, 0), 2), tg::ShapeError,
                  "adaptive_max_pool2d: Expected 3D or 4D tensor, but got [8]");
  TG_CHECK_THROWS(tg::adaptive_max_pool2d(x4, {0, 2}), tg::ShapeError,
                  "adaptive_max_pool2d: elements of output_size must be positive, got [0, 2]");
  TG_CHECK_THROWS(tg::adaptive_max_pool2d(x4, {1, 2, 3}), tg::ShapeError, "adaptive_max_pool2d: output_size must have 1 or 2 elements, got 3");
  TG_CHECK_THROWS(tg::adaptive_max_pool2d(tg::randn({2, 3, 0, 4}), 2), tg::ShapeError,
                  "adaptive_max_pool2d: Expected input to have non-zero size for non-batch dimensions, but input has sizes [2, 3, 0, 4] with dimension 2 being empty");
  TG_CHECK_THROWS(tg::adaptive_max_pool2d(tg::randint(0, 3, {2, 3, 4}), 2), tg::DTypeError, "adaptive_max_pool2d");
  TG_CHECK_THROWS(tg::adaptive_max_pool1d(x3, {2, 2}), tg::ShapeError, "adaptive_max_pool1d: output_size must have 1 element, got 2");
  TG_CHECK_THROWS(tg::adaptive_max_pool1d(tg::randn({2, 0, 4}), 2), tg::ShapeError, "with dimension 1 being empty");
  TG_CHECK_THROWS(tg::adaptive_avg_pool1d(x4, 2), tg::ShapeError, "adaptive_avg_pool1d: Expected 2D or 3D input tensor, but got [2, 3, 6, 6]");
  TG_CHECK_THROWS(tg::adaptive_avg_pool1d(x3, 0), tg::ShapeError, "adaptive_avg_pool1d: elements of output_size must be positive, got [0]");
  TG_CHECK_THROWS(nn::AdaptiveMaxPool2d(std::vector<int64_t>{2, 0}), tg::ShapeError, "AdaptiveMaxPool2d: elements of output_size must be positive");
  TG_CHECK_THROWS(nn::AdaptiveMaxPool2d(std::vector<int64_t>{1, 2, 3}), tg::ShapeError, "AdaptiveMaxPool2d: output_size must have 1 or 2 elements");
  TG_CHECK_THROWS(nn::AdaptiveAvgPool1d(0), tg::ShapeError, "AdaptiveAvgPool1d: output_size must be positive, got 0");
  TG_CHECK_THROWS(nn::AdaptiveMaxPool1d(-1), tg::ShapeError, "AdaptiveMaxPool1d: output_size must be positive, got -1");
  // conv_transpose1d
  const Tensor w = tg::randn({3, 2, 3});
  TG_CHECK_THROWS(tg::conv_transpose1d(x4, w), tg::ShapeError,
                  "conv_transpose1d: Expected 2D (unbatched) or 3D (batched) input to conv_transpose1d, but got input of size: [2, 3, 6, 6]");
  TG_CHECK_THROWS(tg::conv_transpose1d(x3, tg::randn({3, 2, 3, 3})), tg::ShapeError,
                  "conv_transpose1d: expected weight of 3 dims (in_channels, out_channels / groups, kW), got weight of size [3, 2, 3, 3]");
  TG_CHECK_THROWS(tg::conv_transpose1d(x3, tg::randn({4, 2, 3})), tg::ShapeError,
                  "conv_transpose1d: Given transposed=1, weight of size [4, 2, 3], expected input[2, 3, 8] to have 4 channels, but got 3 channels instead");
  TG_CHECK_THROWS(tg::conv_transpose1d(x3, w, tg::randn({3})), tg::ShapeError,
                  "conv_transpose1d: Given transposed=1, weight of size [3, 2, 3], expected bias to be 1-dimensional with 2 elements, but got bias of size [3] instead");
  TG_CHECK_THROWS(tg::conv_transpose1d(x3, w, Tensor(), 2, 0, 2), tg::ShapeError,
                  "conv_transpose1d: output padding must be smaller than either stride or dilation, but got output_padding (2), stride (2) and dilation (1)");
  TG_CHECK_THROWS(tg::conv_transpose1d(x3, w, Tensor(), 1, 0, 0, 2), tg::ShapeError,
                  "conv_transpose1d: Given groups=2, expected weight to be divisible by 2 at dimension 0, but got weight of size [3, 2, 3] instead");
  TG_CHECK_THROWS(tg::conv_transpose1d(x3, w, Tensor(), 1, 0, 0, 0), tg::ShapeError,
                  "conv_transpose1d: non-positive groups is not supported (groups=0)");
  TG_CHECK_THROWS(tg::conv_transpose1d(x3, w, Tensor(), 0), tg::ShapeError, "conv_transpose1d: non-positive stride is not supported");
  TG_CHECK_THROWS(tg::conv_transpose1d(x3, w, Tensor(), 1, -1), tg::ShapeError, "conv_transpose1d: negative padding is not supported");
  TG_CHECK_THROWS(tg::conv_transpose1d(x3, w, Tensor(), 1, 0, 0, 1, 0), tg::ShapeError, "conv_transpose1d: dilation should be greater than zero");
  TG_CHECK_THROWS(tg::conv_transpose1d(x3, w, Tensor(), 1, 6), tg::ShapeError,
                  "conv_transpose1d: Given input size per channel: (8). Calculated output size per channel: (-2). Output size is too small");
  TG_CHECK_THROWS(tg::conv_transpose1d(x3, tg::randn({3, 2, 3}, tg::kFloat64)), tg::DTypeError, "conv_transpose1d");
  TG_CHECK_THROWS(nn::ConvTranspose1d(4, 6, 3, nn::ConvTranspose1dOptions().groups(4)), tg::ShapeError,
                  "ConvTranspose1d: out_channels must be divisible by groups (6 and 4)");
  TG_CHECK_THROWS(nn::ConvTranspose1d(4, 6, 3, nn::ConvTranspose1dOptions().stride({2, 2})), tg::ShapeError,
                  "ConvTranspose1d: stride, padding, output_padding and dilation must be single numbers, got (2, 2)");
  TG_CHECK_THROWS(nn::ConvTranspose1d(nn::ConvTranspose1dOptions()), tg::Error, "ConvTranspose1d: the options name no channels");
  TG_CHECK_THROWS(nn::ConvTranspose1d(nn::ConvTranspose1dOptions(4, 6, {3, 3})), tg::ShapeError,
                  "ConvTranspose1d: kernel_size must be a single number, got (3, 3)");
  TG_CHECK_THROWS(nn::ConvTranspose1d(4, 6, 0), tg::ShapeError, "ConvTranspose1d: kernel_size must be positive");
  TG_CHECK_THROWS(nn::ConvTranspose1d(0, 6, 3), tg::ShapeError, "ConvTranspose1d: in_channels and out_channels must be positive, got 0 and 6");
  // the conv_transpose2d messages keep their (h x w) form
  TG_CHECK_THROWS(tg::conv_transpose2d(x4, tg::randn({3, 2, 3, 3}), Tensor(), {1}, {0}, {1}), tg::ShapeError,
                  "conv_transpose2d: output padding must be smaller than either stride or dilation, but got output_padding (1 x 1), stride (1 x 1)");
  // padding layers
  TG_CHECK_THROWS(nn::ZeroPad2d({1, 2, 3}), tg::ShapeError, "ZeroPad2d: padding must be one number or 4 numbers, got [1, 2, 3]");
  TG_CHECK_THROWS(nn::ConstantPad1d({1, 2, 3, 4}, 0.0), tg::ShapeError, "ConstantPad1d: padding must be one number or 2 numbers");
  TG_CHECK_THROWS(nn::ZeroPad2d(1)(tg::randn({5})), tg::ShapeError, "ZeroPad2d: expected an input of at least 2 dims, got input of size [5]");
  TG_CHECK_THROWS(nn::ReflectionPad1d(2)(x4), tg::ShapeError, "ReflectionPad1d: expected 2D or 3D input (got 4D input of size [2, 3, 6, 6])");
  TG_CHECK_THROWS(nn::ReplicationPad2d(1)(tg::randn({6, 6})), tg::ShapeError, "ReplicationPad2d: expected 3D or 4D input (got 2D");
  TG_CHECK_THROWS(nn::ReflectionPad1d(8)(x3), tg::ShapeError, "pad");   // tg::pad: a reflect pad not below the dim
}

TEST_CASE("layers extra: the F:: spellings call the ops with their options") {
  namespace F = tg::nn::functional;
  tg::manual_seed(5);
  const Tensor x = tg::randn({2, 3, 11}), x4 = tg::randn({2, 3, 7, 9});
  testing::check_close(F::max_pool1d(x, F::MaxPool1dFuncOptions(3).stride(2).padding(1)), tg::max_pool1d(x, 3, 2, 1), 0, 0);
  testing::check_close(F::avg_pool1d(x, F::AvgPool1dFuncOptions(3).ceil_mode(true).count_include_pad(false)),
                       tg::avg_pool1d(x, 3, {}, 0, true, false), 0, 0);
  testing::check_close(F::adaptive_max_pool2d(x4, F::AdaptiveMaxPool2dFuncOptions({3, 4})), tg::adaptive_max_pool2d(x4, {3, 4}), 0, 0);
  testing::check_close(F::adaptive_avg_pool1d(x, F::AdaptiveAvgPool1dFuncOptions(4)), tg::adaptive_avg_pool1d(x, 4), 0, 0);
  testing::check_close(F::adaptive_max_pool1d(x, F::AdaptiveMaxPool1dFuncOptions(4)), tg::adaptive_max_pool1d(x, 4), 0, 0);
  const Tensor w = tg::randn({3});
  testing::check_close(F::prelu(x, w), tg::prelu(x, w), 0, 0);
  const Tensor weight = tg::randn({3}), bias = tg::randn({3});
  const Tensor rm = tg::zeros({3}), rv = tg::ones({3});
  const Tensor y = F::instance_norm(x, F::InstanceNormFuncOptions().running_mean(rm).running_var(rv).weight(weight).bias(bias).momentum(0.5));
  testing::check_close(y, tg::instance_norm(x, Tensor(), Tensor(), weight, bias), 1e-6, 1e-6);
  CHECK(rm.abs().sum().item() > 0);   // updated through the options' handle
  const Tensor cw = tg::randn({3, 2, 3}), cb = tg::randn({2});
  testing::check_close(F::conv_transpose1d(x, cw, F::ConvTranspose1dFuncOptions().bias(cb).stride(2).groups(1).padding(1)),
                       tg::conv_transpose1d(x, cw, cb, 2, 1), 0, 0);
}

namespace {
/// The new layers in one model, for the device test below.
struct ExtraNet : nn::Module {
  nn::PReLU act{nn::PReLUOptions().num_parameters(4)};
  nn::InstanceNorm1d norm{nn::InstanceNorm1dOptions(4).affine(true).track_running_stats(true)};
  nn::ConvTranspose1d up{4, 3, 4, nn::ConvTranspose1dOptions().stride(2).padding(1)};
  nn::ReflectionPad1d pad{2};
  nn::AdaptiveMaxPool1d pool{7};
  nn::AvgPool1d avg{nn::AvgPool1dOptions(2).stride(1)};
  ExtraNet() {
    register_module("act", act);
    register_module("norm", norm);
    register_module("up", up);
    register_module("pad", pad);
    register_module("pool", pool);
    register_module("avg", avg);
  }
  Tensor forward(const Tensor& x) override { return avg(pool(pad(up(norm(act(x)))))); }   // (N, 4, L) -> (N, 3, 6)
};
}  // namespace

TEST_CASE("cuda: the new layers as modules on the device match the CPU, running statistics included") {
  TG_NEED_CUDA();
  tg::manual_seed(7);
  ExtraNet cpu;
  tg::manual_seed(7);
  ExtraNet gpu;
  cpu.to(tg::kFloat64);
  gpu.to(tg::Device::cuda(), tg::kFloat64);
  const Tensor x = fill({3, 4, 9}, 0.2, false), w = fill({3, 3, 6}, 0.6, false);
  Tensor xc(x.data(), true), xg(x.data().to(tg::Device::cuda()), true);
  for (int step = 0; step < 2; ++step) {   // two training steps: the running statistics move twice
    const Tensor yc = cpu(xc), yg = gpu(xg);
    CHECK(yg.is_cuda());
    testing::check_close(yg, yc, 1e-10, 1e-12);
    tg::sum(yc * w).backward();
    tg::sum(yg * w.to(tg::Device::cuda())).backward();
  }
  testing::check_close(xg.grad(), xc.grad(), 1e-10, 1e-12);
  const auto pc = cpu.named_parameters(), pg = gpu.named_parameters();
  REQUIRE(pc.size() == pg.size());
  for (std::size_t i = 0; i < pc.size(); ++i) {
    CAPTURE(pc[i].first);
    testing::check_close(pg[i].second.grad(), pc[i].second.grad(), 1e-10, 1e-12);
  }
  testing::check_close(gpu.norm.running_mean, cpu.norm.running_mean, 1e-10, 1e-12);
  testing::check_close(gpu.norm.running_var, cpu.norm.running_var, 1e-10, 1e-12);
  cpu.eval();
  gpu.eval();
  testing::check_close(gpu(xg), cpu(xc), 1e-10, 1e-12);
}
