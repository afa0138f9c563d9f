// tests/test_conv3d.cpp: conv3d, conv_transpose3d, max_pool3d, avg_pool3d, adaptive_avg_pool3d,
// adaptive_max_pool3d and the modules Conv3d, ConvTranspose3d, MaxPool3d, AvgPool3d, AdaptiveAvgPool3d, AdaptiveMaxPool3d, BatchNorm3d, InstanceNorm3d
// against numbers recorded from PyTorch (tests/data/conv3d_reference.py), with the modules' names,
// state_dict keys, options, the F:: spellings and the error paths. Finite-difference checks (first and
// second order): test_gradcheck.cpp; CPU-vs-CUDA parity: test_cuda.cpp.
#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "data/conv3d_reference.h"
#include "testing.h"

using tg::Tensor;
namespace nn = tg::nn;

namespace {

Tensor fill(const tg::Shape& shape, double seed, bool requires_grad = true) {
  return testing::sin_fill(shape, seed, requires_grad);
}

/// The values the script recorded under name.
const std::vector<double>& recorded(const std::string& name) {
  for (const auto& entry : conv3d_ref::kValues)
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

/// The cases of tests/data/conv3d_reference.py, in its order.
std::vector<RefCase> reference_cases() {
  std::vector<RefCase> t = {
      {"conv3d stride 2 padding 1 bias", {{2, 3, 5, 6, 5}, {4, 3, 3, 3, 3}, {4}},
       [](auto& in) { return tg::conv3d(in[0], in[1], in[2], 2, 1); }, nullptr},
      {"conv3d stride (1, 2, 1) padding (2, 0, 1) dilation (2, 1, 2) groups 2", {{1, 4, 6, 5, 7}, {6, 2, 2, 3, 2}, {6}},
       [](auto& in) { return tg::conv3d(in[0], in[1], in[2], {1, 2, 1}, {2, 0, 1}, {2, 1, 2}, 2); }, nullptr},
      {"conv3d unbatched no bias", {{2, 4, 4, 4}, {3, 2, 2, 1, 3}}, [](auto& in) { return tg::conv3d(in[0], in[1]); }, nullptr},
      {"conv3d kernel depth 1 stride (3, 1, 1)", {{2, 2, 7, 4, 4}, {3, 2, 1, 2, 2}},
       [](auto& in) { return tg::conv3d(in[0], in[1], Tensor(), {3, 1, 1}); }, nullptr},
      {"conv_transpose3d stride 2 padding 1 output_padding 1 groups 2 dilation 2", {{2, 4, 3, 4, 3}, {4, 3, 3, 2, 3}, {6}},
       [](auto& in) { return tg::conv_transpose3d(in[0], in[1], in[2], 2, 1, 1, 2, 2); }, nullptr},
      {"conv_transpose3d stride (2, 1, 3) padding (1, 0, 1) output_padding (1, 0, 2) dilation (1, 2, 1)",
       {{1, 3, 4, 3, 3}, {3, 2, 3, 2, 3}, {2}},
       [](auto& in) { return tg::conv_transpose3d(in[0], in[1], in[2], {2, 1, 3}, {1, 0, 1}, {1, 0, 2}, 1, {1, 2, 1}); },
       nullptr},
      {"conv_transpose3d unbatched no bias", {{2, 3, 2, 4}, {2, 3, 2, 2, 2}},
       [](auto& in) { return tg::conv_transpose3d(in[0], in[1]); }, nullptr},
      {"conv_transpose3d depth output_padding 1 below dilation 2", {{1, 2, 3, 3, 3}, {2, 2, 2, 2, 2}},
       [](auto& in) { return tg::conv_transpose3d(in[0], in[1], Tensor(), 1, 0, {1, 0, 0}, 1, 2); }, nullptr},
      {"max_pool3d 3 stride 2 padding 1", {{2, 3, 7, 6, 5}}, [](auto& in) { return tg::max_pool3d(in[0], 3, 2, 1); }, nullptr},
      {"max_pool3d (2, 3, 2) stride (1, 2, 2) padding (1, 1, 0) dilation (2, 1, 2) ceil_mode", {{1, 2, 6, 7, 7}},
       [](auto& in) { return tg::max_pool3d(in[0], {2, 3, 2}, {1, 2, 2}, {1, 1, 0}, {2, 1, 2}, true); }, nullptr},
      {"max_pool3d 2 unbatched", {{2, 4, 5, 6}}, [](auto& in) { return tg::max_pool3d(in[0], 2); }, nullptr},
      {"avg_pool3d 3 stride 2 padding 1", {{2, 3, 7, 6, 5}}, [](auto& in) { return tg::avg_pool3d(in[0], 3, 2, 1); }, nullptr},
      {"avg_pool3d (2, 3, 3) stride (2, 2, 1) padding 1 ceil_mode count_include_pad false", {{1, 2, 7, 6, 5}},
       [](auto& in) { return tg::avg_pool3d(in[0], {2, 3, 3}, {2, 2, 1}, 1, true, false); }, nullptr},
      {"avg_pool3d 3 stride 2 padding 1 ceil_mode", {{1, 2, 6, 6, 6}},
       [](auto& in) { return tg::avg_pool3d(in[0], 3, 2, 1, true); }, nullptr},
      {"avg_pool3d 2 unbatched", {{2, 4, 5, 6}}, [](auto& in) { return tg::avg_pool3d(in[0], 2); }, nullptr},
      {"adaptive_avg_pool3d (3, 4, 2) of (7, 6, 5)", {{2, 3, 7, 6, 5}},
       [](auto& in) { return tg::adaptive_avg_pool3d(in[0], {3, 4, 2}); }, nullptr},
      {"adaptive_avg_pool3d 2 unbatched of (5, 5, 5)", {{2, 5, 5, 5}},
       [](auto& in) { return tg::adaptive_avg_pool3d(in[0], 2); }, nullptr},
      {"adaptive_max_pool3d (3, 4, 2) of (7, 6, 5)", {{2, 3, 7, 6, 5}},
       [](auto& in) { return tg::adaptive_max_pool3d(in[0], {3, 4, 2}); }, nullptr},
      {"adaptive_max_pool3d (2, 3, 5) of (4, 6, 5)", {{1, 2, 4, 6, 5}},
       [](auto& in) { return tg::adaptive_max_pool3d(in[0], {2, 3, 5}); }, nullptr},
      {"adaptive_max_pool3d 2 unbatched of (5, 4, 3)", {{2, 5, 4, 3}},
       [](auto& in) { return tg::adaptive_max_pool3d(in[0], 2); }, nullptr},
  };
  // ---- modules, parameters set to the script's values
  auto conv = std::make_shared<nn::Conv3d>(4, 6, std::vector<int64_t>{3, 2, 3},
                                           nn::Conv3dOptions().stride({2, 1, 1}).padding(1).groups(2));
  set_params(*conv, {2.0, 3.0});
  t.push_back(module_case("Conv3d(4, 6, (3, 2, 3)) stride (2, 1, 1) padding 1 groups 2", {2, 4, 5, 4, 5}, conv));
  auto ct = std::make_shared<nn::ConvTranspose3d>(
      nn::ConvTranspose3dOptions(4, 6, 3).stride(2).padding(1).output_padding(1).groups(2));
  set_params(*ct, {2.0, 3.0});
  t.push_back(module_case("ConvTranspose3d(4, 6, 3) stride 2 padding 1 output_padding 1 groups 2", {2, 4, 3, 2, 3}, ct));
  t.push_back(module_case("MaxPool3d(3) stride 2 padding 1 ceil_mode", {2, 3, 6, 7, 5},
                          std::make_shared<nn::MaxPool3d>(nn::MaxPool3dOptions(3).stride(2).padding(1).ceil_mode(true))));
  t.push_back(module_case(
      "AvgPool3d((2, 3, 3)) stride 2 padding 1 count_include_pad false", {2, 3, 5, 6, 7},
      std::make_shared<nn::AvgPool3d>(nn::AvgPool3dOptions({2, 3, 3}).stride(2).padding(1).count_include_pad(false))));
  t.push_back(module_case("AdaptiveAvgPool3d((2, 3, 1))", {2, 3, 5, 7, 4},
                          std::make_shared<nn::AdaptiveAvgPool3d>(std::vector<int64_t>{2, 3, 1})));
  t.push_back(module_case("AdaptiveMaxPool3d((3, 2, 2))", {2, 3, 5, 7, 4},
                          std::make_shared<nn::AdaptiveMaxPool3d>(std::vector<int64_t>{3, 2, 2})));
  auto bn = std::make_shared<nn::BatchNorm3d>(nn::BatchNorm3dOptions(3).momentum(0.2));
  set_params(*bn, {2.0, 3.0});
  RefCase bn_train = module_case("BatchNorm3d(3, momentum 0.2) training", {2, 3, 3, 4, 2}, bn);
  nn::BatchNorm3d* bn_raw = bn.get();
  bn_train.fn = [bn_raw](auto& in) {
    const Tensor y = (*bn_raw)(in[0]);
    check_values(bn_raw->running_mean, "BatchNorm3d training running_mean");
    check_values(bn_raw->running_var, "BatchNorm3d training running_var");
    bn_raw->eval();   // the next case evaluates with the running statistics of this step
    return y;
  };
  t.push_back(bn_train);
  t.push_back(module_case("BatchNorm3d(3) eval after one step", {2, 3, 2, 2, 3}, bn));
  auto in3 = std::make_shared<nn::InstanceNorm3d>(nn::InstanceNorm3dOptions(3).affine(true).track_running_stats(true));
  set_params(*in3, {2.0, 3.0});
  RefCase in3_train = module_case("InstanceNorm3d(3, affine, track) training", {2, 3, 3, 2, 4}, in3);
  nn::InstanceNorm3d* in3_raw = in3.get();
  in3_train.fn = [in3_raw](auto& in) {
    const Tensor y = (*in3_raw)(in[0]);
    check_values(in3_raw->running_mean, "InstanceNorm3d training running_mean");
    check_values(in3_raw->running_var, "InstanceNorm3d training running_var");
    return y;
  };
  t.push_back(in3_train);
  t.push_back(module_case("InstanceNorm3d(2) unbatched", {2, 3, 4, 2}, std::make_shared<nn::InstanceNorm3d>(2)));
  return t;
}

void check_reference(const RefCase& c, const conv3d_ref::Reference& r) {
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
  for (const auto& entry : conv3d_ref::kReprs)
    if (entry.first == name) return entry.second;
  FAIL("no recorded repr named " << name);
  return "";
}

/// PyTorch's state_dict keys of the script's module named name.
std::vector<std::string> recorded_keys(const std::string& name) {
  for (const auto& entry : conv3d_ref::kStateDictKeys)
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

TEST_CASE("conv3d: the 3-D convolutions, poolings and their modules match PyTorch") {
  const std::vector<RefCase> cases = reference_cases();
  REQUIRE(cases.size() == conv3d_ref::kCases.size());
  for (std::size_t i = 0; i < cases.size(); ++i) check_reference(cases[i], conv3d_ref::kCases[i]);
}

TEST_CASE("conv3d: module names and state_dict keys are PyTorch's") {
  CHECK(nn::Conv3d(4, 6, std::vector<int64_t>{3, 2, 3}, nn::Conv3dOptions().stride({2, 1, 1}).padding(1).groups(2)).name() ==
        recorded_repr("Conv3d(4, 6, (3, 2, 3)) stride (2, 1, 1) padding 1 groups 2"));
  CHECK(nn::Conv3d(nn::Conv3dOptions(2, 3, 2).dilation(2).bias(false)).name() ==
        recorded_repr("Conv3d(2, 3, 2) no bias dilation 2"));
  CHECK(nn::ConvTranspose3d(4, 6, 3, nn::ConvTranspose3dOptions().stride(2).padding(1).output_padding(1).groups(2)).name() ==
        recorded_repr("ConvTranspose3d(4, 6, 3) stride 2 padding 1 output_padding 1 groups 2"));
  CHECK(nn::MaxPool3d(nn::MaxPool3dOptions(3).stride(2).padding(1).ceil_mode(true)).name() ==
        recorded_repr("MaxPool3d(3) stride 2 padding 1 ceil_mode"));
  CHECK(nn::MaxPool3d(nn::MaxPool3dOptions({1, 2, 2})).name() == recorded_repr("MaxPool3d((1, 2, 2))"));
  CHECK(nn::AvgPool3d(nn::AvgPool3dOptions({2, 3, 3}).stride(2).padding(1).count_include_pad(false)).name() ==
        recorded_repr("AvgPool3d((2, 3, 3)) stride 2 padding 1 count_include_pad false"));
  CHECK(nn::AvgPool3d(2).name() == recorded_repr("AvgPool3d(2)"));
  CHECK(nn::AdaptiveAvgPool3d(std::vector<int64_t>{2, 3, 1}).name() == recorded_repr("AdaptiveAvgPool3d((2, 3, 1))"));
  CHECK(nn::AdaptiveAvgPool3d(2).name() == recorded_repr("AdaptiveAvgPool3d(2)"));
  CHECK(nn::AdaptiveMaxPool3d(std::vector<int64_t>{3, 2, 2}).name() == recorded_repr("AdaptiveMaxPool3d((3, 2, 2))"));
  CHECK(nn::AdaptiveMaxPool3d(2).name() == recorded_repr("AdaptiveMaxPool3d(2)"));
  CHECK(nn::InstanceNorm3d(nn::InstanceNorm3dOptions(3).affine(true).track_running_stats(true)).name() ==
        recorded_repr("InstanceNorm3d(3, affine, track)"));
  // BatchNorm3d prints as this library's BatchNorm1d / BatchNorm2d do (PyTorch 2.15 adds "bias=True")
  CHECK(nn::BatchNorm3d(3).name() == "BatchNorm3d(3, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)");

  CHECK(state_dict_keys(nn::Conv3d(4, 6, std::vector<int64_t>{3, 2, 3}, nn::Conv3dOptions().groups(2))) ==
        recorded_keys("Conv3d(4, 6, (3, 2, 3))"));
  CHECK(state_dict_keys(nn::ConvTranspose3d(4, 6, 3, nn::ConvTranspose3dOptions().groups(2))) ==
        recorded_keys("ConvTranspose3d(4, 6, 3)"));
  CHECK(state_dict_keys(nn::BatchNorm3d(3)) == recorded_keys("BatchNorm3d(3)"));
  CHECK(state_dict_keys(nn::InstanceNorm3d(nn::InstanceNorm3dOptions(3).affine(true).track_running_stats(true))) ==
        recorded_keys("InstanceNorm3d(3, affine, track)"));
}

TEST_CASE("conv3d: conv_transpose3d is the adjoint of conv3d") {
  // <conv3d(u, w), v> = <u, conv_transpose3d(v, w)> for the same stride, padding, dilation and groups,
  // with output_padding making conv_transpose3d's output u's size
  tg::manual_seed(11);
  const auto f64 = tg::TensorOptions().dtype(tg::kFloat64);
  const Tensor u = tg::randn({2, 4, 7, 6, 8}, f64), w = tg::randn({6, 2, 3, 2, 3}, f64);
  const Tensor cu = tg::conv3d(u, w, Tensor(), {2, 1, 3}, {1, 0, 2}, {1, 2, 1}, 2);   // (2, 6, 4, 4, 4)
  REQUIRE(cu.shape() == tg::Shape{2, 6, 4, 4, 4});
  const Tensor v = tg::randn(cu.shape(), f64);
  // 7 = (4 - 1) 2 - 2 + 2 + op + 1 -> op 0 for D; 6 = 3 - 0 + 2 + op + 1 -> 0; 8 = 9 - 4 + 2 + op + 1 -> 0
  const Tensor tv = tg::conv_transpose3d(v, w, Tensor(), {2, 1, 3}, {1, 0, 2}, {0, 0, 0}, 2, {1, 2, 1});
  REQUIRE(tv.shape() == u.shape());
  CHECK(tg::sum(cu * v).item() == doctest::Approx(tg::sum(u * tv).item()).epsilon(1e-12));
}

TEST_CASE("conv3d: module options, shapes, init, holders and the F:: spellings") {
  tg::manual_seed(5);
  const Tensor x = tg::randn({2, 4, 6, 5, 7});
  nn::Conv3d conv(nn::Conv3dOptions(4, 8, {3, 1, 2}).stride(2).padding({1, 0, 1}));
  CHECK(conv.weight.shape() == tg::Shape{8, 4, 3, 1, 2});
  CHECK(conv.bias.shape() == tg::Shape{8});
  const Tensor y = conv(x);
  CHECK(y.shape() == tg::Shape{2, 8, 3, 3, 4});
  CHECK(y.dtype() == tg::kFloat32);
  CHECK(y.is_contiguous());
  // the init bound: U(+-1/sqrt(fan_in)), fan_in = in / groups kD kH kW = 24
  const double bound = 1.0 / std::sqrt(24.0);
  double largest = 0;
  for (float v : conv.weight.to_vector<float>()) largest = std::max(largest, std::abs(static_cast<double>(v)));
  for (float v : conv.bias.to_vector<float>()) CHECK(std::abs(v) <= bound);
  CHECK(largest <= bound);
  CHECK(largest > bound / 2);   // spread over the range, not a constant
  nn::ConvTranspose3d up(4, 3, 2, nn::ConvTranspose3dOptions().stride(2));
  CHECK(up.weight.shape() == tg::Shape{4, 3, 2, 2, 2});
  CHECK(up(x).shape() == tg::Shape{2, 3, 12, 10, 14});
  for (float v : up.weight.to_vector<float>()) CHECK(std::abs(v) <= 1.0 / std::sqrt(24.0));   // fan_in = 3 * 8
  CHECK(nn::MaxPool3d(2)(x).shape() == tg::Shape{2, 4, 3, 2, 3});
  CHECK(nn::AvgPool3d(nn::AvgPool3dOptions(3).stride(1).padding(1))(x).shape() == x.shape());
  CHECK(nn::AdaptiveAvgPool3d(std::vector<int64_t>{1, 2, 3})(x).shape() == tg::Shape{2, 4, 1, 2, 3});
  CHECK(nn::AdaptiveMaxPool3d(std::vector<int64_t>{1, 2, 3})(x).shape() == tg::Shape{2, 4, 1, 2, 3});
  CHECK(nn::BatchNorm3d(4)(x).shape() == x.shape());
  CHECK(nn::InstanceNorm3d(4)(x).shape() == x.shape());
  // the F:: spellings are the ops
  namespace F = tg::nn::functional;
  const Tensor w = tg::randn({6, 2, 2, 2, 2}), b = tg::randn({6});
  CHECK(tg::equal(F::conv3d(x, w, F::Conv3dFuncOptions().bias(b).stride({1, 2, 1}).groups(2)),
                  tg::conv3d(x, w, b, {1, 2, 1}, {0}, {1}, 2)));
  const Tensor wt = tg::randn({4, 3, 2, 2, 2});
  CHECK(tg::equal(F::conv_transpose3d(x, wt, F::ConvTranspose3dFuncOptions().stride(2).output_padding(1).dilation(2)),
                  tg::conv_transpose3d(x, wt, Tensor(), 2, 0, 1, 1, 2)));
  CHECK(tg::equal(F::max_pool3d(x, F::MaxPool3dFuncOptions(3).stride(2).padding(1)), tg::max_pool3d(x, 3, 2, 1)));
  CHECK(tg::equal(F::avg_pool3d(x, F::AvgPool3dFuncOptions(2).ceil_mode(true)), tg::avg_pool3d(x, 2, {}, {0}, true)));
  CHECK(tg::equal(F::adaptive_avg_pool3d(x, F::AdaptiveAvgPool3dFuncOptions({2, 2, 3})), tg::adaptive_avg_pool3d(x, {2, 2, 3})));
  CHECK(tg::equal(F::adaptive_max_pool3d(x, F::AdaptiveMaxPool3dFuncOptions({2, 3, 3})), tg::adaptive_max_pool3d(x, {2, 3, 3})));
  // holders: libtorch's spelling of members built later, and clone()
  struct Net : nn::Module {
    nn::Conv3d conv{nullptr};
    nn::BatchNorm3d norm{nullptr};
    nn::MaxPool3d pool{nullptr};
    Net() {
      conv = register_module("conv", nn::Conv3d(nn::Conv3dOptions(4, 2, 3).padding(1)));
      norm = register_module("norm", nn::BatchNorm3d(2));
      pool = register_module("pool", nn::MaxPool3d(nn::MaxPool3dOptions(2)));
    }
    Tensor forward(const Tensor& v) override { return pool(norm(conv(v))); }
  };
  Net net;
  CHECK(net.forward(x).shape() == tg::Shape{2, 2, 3, 2, 3});
  std::vector<std::string> names;
  for (const auto& p : net.named_parameters()) names.push_back(p.first);
  CHECK(names == std::vector<std::string>{"conv.weight", "conv.bias", "norm.weight", "norm.bias"});
  auto copy = conv.clone();
  CHECK(copy->name() == conv.name());
  CHECK(tg::equal((*copy)(x), conv(x)));
}

TEST_CASE("conv3d: bad shapes and options throw errors naming the op") {
  const Tensor x = tg::randn({2, 4, 5, 5, 5}), w = tg::randn({6, 4, 3, 3, 3});
  TG_CHECK_THROWS(tg::conv3d(tg::randn({4, 5, 5}), w), tg::ShapeError,
                  "conv3d: Expected 4D (unbatched) or 5D (batched) input to conv3d, but got input of size: [4, 5, 5]");
  TG_CHECK_THROWS(tg::conv3d(x, tg::randn({6, 4, 3, 3})), tg::ShapeError, "conv3d: expected weight of 5 dims");
  TG_CHECK_THROWS(tg::conv3d(x, w, Tensor(), {1, 2}), tg::ShapeError, "conv3d: stride must have 1 or 3 elements, got 2");
  TG_CHECK_THROWS(tg::conv3d(x, w, Tensor(), 0), tg::ShapeError, "conv3d: non-positive stride is not supported");
  TG_CHECK_THROWS(tg::conv3d(x, w, Tensor(), 1, -1), tg::ShapeError, "conv3d: negative padding is not supported");
  TG_CHECK_THROWS(tg::conv3d(x, w, Tensor(), 1, 0, 0), tg::ShapeError, "conv3d: dilation should be greater than zero");
  TG_CHECK_THROWS(tg::conv3d(x, w, Tensor(), 1, 0, 1, 4), tg::ShapeError,
                  "conv3d: Given groups=4, expected weight to be divisible by 4 at dimension 0");
  TG_CHECK_THROWS(tg::conv3d(x, tg::randn({6, 3, 3, 3, 3})), tg::ShapeError,
                  "conv3d: Given groups=1, weight of size [6, 3, 3, 3, 3], expected input[2, 4, 5, 5, 5] to have 3 "
                  "channels, but got 4 channels instead");
  TG_CHECK_THROWS(tg::conv3d(x, w, tg::randn({5})), tg::ShapeError,
                  "conv3d: Given weight of size [6, 4, 3, 3, 3], expected bias to be 1-dimensional with 6 elements");
  TG_CHECK_THROWS(tg::conv3d(x, tg::randn({6, 4, 6, 3, 3})), tg::ShapeError,
                  "conv3d: Calculated padded input size per channel: (5 x 5 x 5). Kernel size: (6 x 3 x 3). Kernel "
                  "size can't be greater than actual input size");
  TG_CHECK_THROWS(tg::conv3d(tg::ones({2, 4, 5, 5, 5}, tg::TensorOptions().dtype(tg::kInt64)), w), tg::DTypeError, "conv3d");

  const Tensor wt = tg::randn({4, 3, 2, 2, 2});
  TG_CHECK_THROWS(tg::conv_transpose3d(tg::randn({4, 5, 5}), wt), tg::ShapeError,
                  "conv_transpose3d: Expected 4D (unbatched) or 5D (batched) input to conv_transpose3d");
  TG_CHECK_THROWS(tg::conv_transpose3d(x, tg::randn({4, 3, 2, 2})), tg::ShapeError,
                  "conv_transpose3d: expected weight of 5 dims");
  TG_CHECK_THROWS(tg::conv_transpose3d(x, wt, Tensor(), 2, 0, {2, 0, 0}), tg::ShapeError,
                  "conv_transpose3d: output padding must be smaller than either stride or dilation, but got "
                  "output_padding (2 x 0 x 0), stride (2 x 2 x 2) and dilation (1 x 1 x 1)");
  TG_CHECK_THROWS(tg::conv_transpose3d(x, tg::randn({3, 3, 2, 2, 2})), tg::ShapeError,
                  "conv_transpose3d: Given transposed=1, weight of size [3, 3, 2, 2, 2], expected input[2, 4, 5, 5, 5] "
                  "to have 3 channels, but got 4 channels instead");
  TG_CHECK_THROWS(tg::conv_transpose3d(x, wt, tg::randn({4})), tg::ShapeError,
                  "conv_transpose3d: Given transposed=1, weight of size [4, 3, 2, 2, 2], expected bias to be "
                  "1-dimensional with 3 elements");
  TG_CHECK_THROWS(tg::conv_transpose3d(x, tg::randn({4, 1, 2, 2, 2}), Tensor(), 1, 0, 0, 3), tg::ShapeError,
                  "conv_transpose3d: Given groups=3, expected weight to be divisible by 3 at dimension 0");
  TG_CHECK_THROWS(tg::conv_transpose3d(x, wt, Tensor(), 1, 4), tg::ShapeError,
                  "conv_transpose3d: Given input size per channel: (5 x 5 x 5). Calculated output size per channel: "
                  "(-2 x -2 x -2). Output size is too small");

  TG_CHECK_THROWS(tg::max_pool3d(tg::randn({4, 5, 5}), 2), tg::ShapeError,
                  "max_pool3d: Expected 4D or 5D (batch mode) tensor for input, got [4, 5, 5]");
  TG_CHECK_THROWS(tg::max_pool3d(x, {2, 2}), tg::ShapeError, "max_pool3d: kernel_size must have 1 or 3 elements, got 2");
  TG_CHECK_THROWS(tg::max_pool3d(x, 0), tg::ShapeError, "max_pool3d: kernel_size must be greater than zero");
  TG_CHECK_THROWS(tg::max_pool3d(x, 2, 0), tg::ShapeError, "max_pool3d: stride must be greater than zero");
  TG_CHECK_THROWS(tg::max_pool3d(x, 2, {}, 0, 0), tg::ShapeError, "max_pool3d: dilation must be greater than zero");
  TG_CHECK_THROWS(tg::max_pool3d(x, {3, 3, 2}, {}, {1, 1, 2}), tg::ShapeError,
                  "max_pool3d: pad should be at most half of effective kernel size, but got pad=(1 x 1 x 2)");
  TG_CHECK_THROWS(tg::max_pool3d(x, {6, 2, 2}), tg::ShapeError,
                  "max_pool3d: Given input size: (4x5x5x5). Calculated output size: (4x0x2x2). Output size is too small");
  TG_CHECK_THROWS(tg::max_pool3d(tg::ones({1, 2, 4, 4, 4}, tg::TensorOptions().dtype(tg::kInt64)), 2), tg::DTypeError,
                  "max_pool3d");
  TG_CHECK_THROWS(tg::avg_pool3d(tg::randn({5, 5}), 2), tg::ShapeError, "avg_pool3d: Expected 4D or 5D");
  TG_CHECK_THROWS(tg::avg_pool3d(x, 2, {}, 2), tg::ShapeError, "avg_pool3d: pad should be at most half");
  TG_CHECK_THROWS(tg::avg_pool3d(x, {2, 7, 2}), tg::ShapeError, "avg_pool3d: Given input size: (4x5x5x5)");
  TG_CHECK_THROWS(tg::adaptive_avg_pool3d(tg::randn({5, 5, 5}), 2), tg::ShapeError,
                  "adaptive_avg_pool3d: Expected 4D or 5D tensor, but got [5, 5, 5]");
  TG_CHECK_THROWS(tg::adaptive_avg_pool3d(x, {2, 2}), tg::ShapeError,
                  "adaptive_avg_pool3d: output_size must have 1 or 3 elements, got 2");
  TG_CHECK_THROWS(tg::adaptive_avg_pool3d(x, {2, 0, 2}), tg::ShapeError,
                  "adaptive_avg_pool3d: elements of output_size must be positive, got (2 x 0 x 2)");
  TG_CHECK_THROWS(tg::adaptive_avg_pool3d(tg::randn({2, 4, 0, 5, 5}), 2), tg::ShapeError,
                  "adaptive_avg_pool3d: Expected input to have non-zero size for non-batch dimensions, but input has "
                  "sizes [2, 4, 0, 5, 5] with dimension 2 being empty");
  TG_CHECK_THROWS(tg::adaptive_max_pool3d(tg::randn({5, 5, 5}), 2), tg::ShapeError,
                  "adaptive_max_pool3d: Expected 4D or 5D tensor, but got [5, 5, 5]");
  TG_CHECK_THROWS(tg::adaptive_max_pool3d(x, {2, 2}), tg::ShapeError,
                  "adaptive_max_pool3d: output_size must have 1 or 3 elements, got 2");
  TG_CHECK_THROWS(tg::adaptive_max_pool3d(x, {2, -1, 2}), tg::ShapeError,
                  "adaptive_max_pool3d: elements of output_size must be positive, got [2, -1, 2]");
  TG_CHECK_THROWS(tg::adaptive_max_pool3d(tg::randn({2, 4, 5, 0, 5}), 2), tg::ShapeError,
                  "adaptive_max_pool3d: Expected input to have non-zero size for non-batch dimensions, but input has "
                  "sizes [2, 4, 5, 0, 5] with dimension 3 being empty");
  TG_CHECK_THROWS(tg::adaptive_max_pool3d(tg::ones({1, 2, 4, 4, 4}, tg::TensorOptions().dtype(tg::kInt64)), 2),
                  tg::DTypeError, "adaptive_max_pool3d");

  TG_CHECK_THROWS(nn::Conv3d(4, 6, std::vector<int64_t>{3, 3}), tg::ShapeError,
                  "Conv3d: kernel_size must have 1 or 3 elements, got 2");
  TG_CHECK_THROWS(nn::Conv3d(4, 6, 3, nn::Conv3dOptions().groups(4)), tg::ShapeError,
                  "Conv3d: out_channels must be divisible by groups");
  TG_CHECK_THROWS(nn::Conv3d(nn::Conv3dOptions()), tg::Error, "Conv3d: the options name no channels or kernel size");
  TG_CHECK_THROWS(nn::ConvTranspose3d(4, 6, 3, nn::ConvTranspose3dOptions().output_padding({1, 1})), tg::ShapeError,
                  "ConvTranspose3d: output_padding must have 1 or 3 elements, got 2");
  TG_CHECK_THROWS(nn::MaxPool3d(nn::MaxPool3dOptions({2, 2})), tg::ShapeError,
                  "MaxPool3d: kernel_size, stride, padding and dilation must have 1 or 3 elements, got (2, 2)");
  TG_CHECK_THROWS(nn::AvgPool3d(nn::AvgPool3dOptions(2).padding({1, 1})), tg::ShapeError,
                  "AvgPool3d: kernel_size, stride, padding and dilation must have 1 or 3 elements, got (1, 1)");
  TG_CHECK_THROWS(nn::AdaptiveAvgPool3d(0), tg::ShapeError, "AdaptiveAvgPool3d: elements of output_size must be positive");
  TG_CHECK_THROWS(nn::AdaptiveMaxPool3d(std::vector<int64_t>{2, 2}), tg::ShapeError,
                  "AdaptiveMaxPool3d: output_size must have 1 or 3 elements, got 2");
  TG_CHECK_THROWS(nn::BatchNorm3d(4)(tg::randn({4, 5, 5, 5})), tg::ShapeError,
                  "BatchNorm3d: expected 5D input (got 4D input of size [4, 5, 5, 5])");
  TG_CHECK_THROWS(nn::InstanceNorm3d(4)(tg::randn({4, 5, 5})), tg::ShapeError,
                  "InstanceNorm3d: expected 4D or 5D input (got 3D input of size [4, 5, 5])");
}
