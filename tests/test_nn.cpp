// tests/test_nn.cpp: Module registration and traversal, Linear's init, Sequential, the losses, SGD's
// update formulas against hand-computed values, Module::to(dtype) of buffers and BatchNorm in float16
// and float64 against PyTorch, and the tutorial training loop converging.
#include <cmath>
#include <sstream>

#include "testing.h"

using tg::Tensor;
using testing::check_values;

namespace {
struct Net : tg::nn::Module {
  tg::nn::Linear fc1{4, 8}, fc2{8, 3};
  Net() {
    register_module("fc1", fc1);
    register_module("fc2", fc2);
  }
  Tensor forward(const Tensor& x) override { return fc2(tg::relu(fc1(x))); }
};
}  // namespace

TEST_CASE("Module: parameters in registration order with dotted names") {
  Net net;
  const auto named = net.named_parameters();
  REQUIRE(named.size() == 4);
  CHECK(named[0].first == "fc1.weight");
  CHECK(named[1].first == "fc1.bias");
  CHECK(named[2].first == "fc2.weight");
  CHECK(named[3].first == "fc2.bias");
  CHECK(named[0].second.shape() == tg::Shape{8, 4});
  CHECK(net.parameters().size() == 4);
  for (auto& p : net.parameters()) CHECK(p.requires_grad());
  CHECK(net.children().size() == 2);
  // handles alias the module's own parameters
  CHECK(net.parameters()[0].impl() == net.fc1.weight.impl());
  std::ostringstream os;
  os << net;
  CHECK(os.str() == "Net(\n  (fc1): Linear(in_features=4, out_features=8, bias=true)\n  (fc2): Linear(in_features=8, out_features=3, bias=true)\n)");
}

TEST_CASE("Linear: PyTorch's default init bound 1/sqrt(in) forward shape") {
  tg::manual_seed(0);
  tg::nn::Linear fc(100, 50);
  const double bound = 0.1;
  CHECK(fc.weight.max().item() <= bound);
  CHECK(fc.weight.min().item() >= -bound);
  CHECK(fc.weight.max().item() > 0.09);   // spread over the whole range
  CHECK(fc.bias.abs().max().item() <= bound);
  CHECK(fc(tg::ones({7, 100})).shape() == tg::Shape{7, 50});
  tg::nn::Linear nb(3, 2, false);
  CHECK_FALSE(nb.bias.defined());
  CHECK(nb.parameters().size() == 1);
  TG_CHECK_THROWS(tg::nn::Linear(0, 3), tg::ShapeError, "must be positive");
}

TEST_CASE("Sequential builds in place and runs in order - train/eval reach children") {
  tg::nn::Sequential seq;
  seq.add<tg::nn::Linear>(10, 5);
  seq.add<tg::nn::ReLU>();
  seq.add<tg::nn::Dropout>(0.5);
  seq.add<tg::nn::Linear>(5, 2);
  CHECK(seq.size() == 4);
  CHECK(seq.named_parameters()[2].first == "3.weight");
  seq.eval();
  Tensor x = tg::randn({4, 10});
  testing::check_close(seq(x), seq(x), 0, 0);   // dropout off: deterministic
  for (auto& c : seq.children()) CHECK_FALSE(c.second->is_training());
  seq.train();
  CHECK(seq.children()[2].second->is_training());
}

TEST_CASE("SGD: plain momentum nesterov and weight decay follow torch.optim.SGD") {
  // One parameter w = [1, -2] with the constant gradient of loss = sum(g * w), g = [0.5, 1].
  auto run = [](tg::optim::SGDOptions opts, int steps) {
    Tensor w = tg::from_vector(std::vector<double>{1, -2}, {2}, tg::TensorOptions().requires_grad(true));
    Tensor g = tg::from_vector(std::vector<double>{0.5, 1}, {2});
    tg::optim::SGD opt({w}, opts);
    for (int i = 0; i < steps; ++i) {
      opt.zero_grad();
      (w * g).sum().backward();
      opt.step();
    }
    return w.to_vector<double>();
  };
  auto near = [](std::vector<double> a, std::vector<double> b) {
    for (std::size_t i = 0; i < a.size(); ++i) CHECK(a[i] == doctest::Approx(b[i]).epsilon(1e-12));
  };
  near(run(0.1, 1), {0.95, -2.1});
  // momentum 0.9, 3 steps: v1 = g, v2 = 1.9 g, v3 = 2.71 g; w -= 0.1 (1 + 1.9 + 2.71) g = 0.561 g
  near(run(tg::optim::SGDOptions(0.1).momentum(0.9), 3), {1 - 0.561 * 0.5, -2 - 0.561});
  // nesterov: d = g + 0.9 v: steps 1.9 g, 2.71 g, 3.439 g -> 0.8049 g
  near(run(tg::optim::SGDOptions(0.1).momentum(0.9).nesterov(), 3), {1 - 0.8049 * 0.5, -2 - 0.8049});
  // weight decay 0.1, one step: d = g + 0.1 w = [0.6, 0.8]
  near(run(tg::optim::SGDOptions(0.1).weight_decay(0.1), 1), {1 - 0.06, -2 - 0.08});
  // dampening 0.5: v1 = g, v2 = 0.9 g + 0.5 g = 1.4 g -> 2.4 g in total
  near(run(tg::optim::SGDOptions(0.1).momentum(0.9).dampening(0.5), 2), {1 - 0.24 * 0.5, -2 - 0.24});
  TG_CHECK_THROWS(tg::optim::SGD(std::vector<Tensor>{}, tg::optim::SGDOptions(0.1).nesterov()), tg::Error, "Nesterov");
}

TEST_CASE("zero_grad: set_to_none and zero-filling") {
  Net net;
  tg::optim::SGD opt(net.parameters(), 0.1);
  net(tg::ones({2, 4})).sum().backward();
  CHECK(net.fc1.weight.grad().defined());
  opt.zero_grad(/*set_to_none=*/false);
  CHECK(net.fc1.weight.grad().abs().sum().item() == 0);
  opt.zero_grad();
  CHECK_FALSE(net.fc1.weight.grad().defined());
  net.zero_grad();
}

TEST_CASE("Module::to(dtype) moves parameters in place: an optimizer built before keeps working") {
  Net net;
  tg::optim::SGD opt(net.parameters(), 0.1);
  net.to(tg::kFloat64);
  CHECK(net.fc1.weight.dtype() == tg::kFloat64);
  Tensor x = tg::ones({2, 4}, tg::TensorOptions().dtype(tg::kFloat64));
  const double before = net.fc2.bias.sum().item();
  opt.zero_grad();
  net(x).sum().backward();
  opt.step();
  CHECK(net.fc2.bias.sum().item() == doctest::Approx(before - 0.1 * 2 * 3));   // d sum / d bias = 2 per element
  net.to(tg::Device::cpu());   // a no-op move keeps everything
  CHECK(net.fc1.weight.dtype() == tg::kFloat64);
  if (!tg::cuda::is_available()) {
    const auto w = net.fc1.weight.to_vector<double>();
    TG_CHECK_THROWS(net.to(tg::Device::cuda()), tg::DeviceError, "cuda:0");
    CHECK(net.fc1.weight.device().is_cpu());   // a failed move changes nothing
    CHECK(net.fc1.weight.to_vector<double>() == w);
  }
}

namespace {
/// BatchNorm1d(3, momentum 0.3) with a user's int32 and bool buffers beside its own.
struct NormNet : tg::nn::Module {
  tg::nn::BatchNorm1d bn{3, 1e-5, 0.3};
  Tensor counts = tg::zeros({2}, tg::kInt32);
  Tensor flags = tg::zeros({2}, tg::kBool);
  NormNet() {
    register_module("bn", bn);
    register_buffer("counts", counts);
    register_buffer("flags", flags);
  }
  Tensor forward(const Tensor& x) override { return bn(x); }
};

/// x = ((arange(12).reshape(4, 3) / 7 - 0.5) ** 3, float64: the input of the PyTorch references.
Tensor norm_input() {
  std::vector<double> v;
  for (int i = 0; i < 12; ++i) v.push_back(std::pow(i / 7.0 - 0.5, 3));
  return tg::from_vector<double>(v, {4, 3});
}

std::vector<std::pair<std::string, tg::DType>> dtypes_of(const tg::nn::Module& m) {
  std::vector<std::pair<std::string, tg::DType>> out;
  for (const auto& p : m.named_parameters()) out.emplace_back(p.first, p.second.dtype());
  for (const auto& b : m.named_buffers()) out.emplace_back(b.first, b.second.dtype());
  return out;
}
}  // namespace

TEST_CASE("Module::to(dtype), half(), bfloat16(), double_() cast floating buffers and gradients, never integer ones") {
  // PyTorch 2.15.0: {k: v.dtype for k, v in torch.nn.BatchNorm1d(3).half().state_dict().items()}
  //   -> weight, bias, running_mean, running_var: torch.float16; num_batches_tracked: torch.int64
  // (Module._apply casts t if t.is_floating_point(); integer and bool tensors keep their dtype.)
  using tg::kBool;
  using tg::kInt32;
  using tg::kInt64;
  for (tg::DType dt : {tg::kFloat16, tg::kBFloat16, tg::kFloat64, tg::kFloat32}) {
    const std::string dtype = tg::dtype_name(dt);
    CAPTURE(dtype);
    NormNet net;
    net.eval();   // the running statistics stay zeros and ones, exact in every dtype
    net(norm_input().to(tg::kFloat32)).sum().backward();   // gradients to cast as well
    if (dt == tg::kFloat16) net.half();
    else if (dt == tg::kBFloat16) net.bfloat16();
    else if (dt == tg::kFloat64) net.double_();
    else net.to(tg::kFloat64).to(dt);                        // and back to float32
    using V = std::vector<std::pair<std::string, tg::DType>>;
    CHECK(dtypes_of(net) == V{{"bn.weight", dt}, {"bn.bias", dt}, {"counts", kInt32}, {"flags", kBool},
                              {"bn.running_mean", dt}, {"bn.running_var", dt}, {"bn.num_batches_tracked", kInt64}});
    CHECK(net.bn.weight.grad().dtype() == dt);
    CHECK(net.bn.running_var.to_vector<double>() == std::vector<double>{1, 1, 1});   // values kept
    CHECK(net.bn.running_mean.to_vector<double>() == std::vector<double>{0, 0, 0});
  }
  // to(device, dtype) casts the buffers too; a dtype that is not floating changes nothing
  NormNet net;
  net.to(tg::Device::cpu(), tg::kFloat64);
  CHECK(net.bn.running_mean.dtype() == tg::kFloat64);
  TG_CHECK_THROWS(net.to(tg::kInt64), tg::DTypeError, "Module::to: parameters must be floating point, got int64");
  CHECK(net.bn.running_mean.dtype() == tg::kFloat64);
  CHECK(net.bn.num_batches_tracked.dtype() == kInt64);
}

TEST_CASE("BatchNorm1d after half() and double_() trains and evaluates in that dtype, as PyTorch") {
  // PyTorch 2.15.0: bn = torch.nn.BatchNorm1d(3, momentum=0.3).half(); y = bn(x.half()) with x as
  // norm_input(); y, bn.running_mean, bn.running_var, then bn.eval(); bn(x.half()):
  const std::vector<double> y_train = {-0.98291015625, -0.77880859375, -0.75830078125, -0.441650390625, -0.64404296875,
                                       -0.71923828125, -0.2421875, -0.27880859375, -0.2137451171875, 1.6669921875,
                                       1.7021484375, 1.69140625};
  const std::vector<double> mean16 = {0.0303955078125, 0.0660400390625, 0.11212158203125};
  const std::vector<double> var16 = {0.72119140625, 0.74658203125, 0.80224609375};
  const std::vector<double> y_eval = {-0.1829833984375, -0.129150390625, -0.1361083984375, -0.036224365234375,
                                      -0.07598876953125, -0.11419677734375, 0.017852783203125, 0.0682373046875,
                                      0.17138671875, 0.53564453125, 0.85009765625, 1.2470703125};
  NormNet half;
  half.half();
  const Tensor x16 = norm_input().to(tg::kFloat16);
  const Tensor y = half(x16);
  CHECK(y.dtype() == tg::kFloat16);
  CHECK(half.bn.running_mean.dtype() == tg::kFloat16);
  CHECK(half.bn.num_batches_tracked.to_vector<int64_t>() == std::vector<int64_t>{1});
  // a few float16 roundings apart (unit roundoff 2^-11): 4 ulps of each value
  check_values(y.to(tg::kFloat64), y_train, 4 * 9.8e-4);
  check_values(half.bn.running_mean.to(tg::kFloat64), mean16, 4 * 4.9e-4 * 0.12);
  check_values(half.bn.running_var.to(tg::kFloat64), var16, 4 * 4.9e-4);
  half.eval();
  const Tensor z = half(x16);
  CHECK(z.dtype() == tg::kFloat16);
  check_values(z.to(tg::kFloat64), y_eval, 4 * 9.8e-4);
  // PyTorch 2.15.0: bn2 = torch.nn.BatchNorm1d(3, momentum=0.3).double(); bn2(x); bn2.running_mean, bn2.running_var
  NormNet dbl;
  dbl.double_();
  dbl(norm_input());
  check_values(dbl.bn.running_mean, {0.030393586005830912, 0.06603498542274053, 0.11217201166180756}, 1e-14);
  check_values(dbl.bn.running_var, {0.7211925409480743, 0.7464944984657753, 0.8024342004606924}, 1e-14);
}

TEST_CASE("the tutorial training loop lowers the loss on a learnable problem") {
  tg::manual_seed(1);
  tg::nn::Sequential model;
  model.add<tg::nn::Linear>(20, 32);
  model.add<tg::nn::ReLU>();
  model.add<tg::nn::Linear>(32, 4);
  Tensor inputs = tg::randn({64, 20});
  Tensor targets = inputs.index_select(1, tg::arange(4, tg::TensorOptions().dtype(tg::kInt64))).argmax(1);
  tg::nn::CrossEntropyLoss criterion;
  tg::optim::SGD optimizer(model.parameters(), tg::optim::SGDOptions(0.1).momentum(0.9));
  double first = 0, last = 0;
  for (int epoch = 0; epoch < 60; ++epoch) {
    optimizer.zero_grad();
    Tensor loss = criterion(model(inputs), targets);
    loss.backward();
    optimizer.step();
    if (epoch == 0) first = loss.item();
    last = loss.item();
  }
  CHECK(last < 0.25 * first);
  const double acc = (model(inputs).argmax(1) == targets).to(tg::kFloat32).mean().item();
  CHECK(acc > 0.9);
}

TEST_CASE("nn::init: bounds and statistics follow torch.nn.init") {
  tg::manual_seed(2);
  Tensor w = tg::empty({200, 300});
  tg::nn::init::xavier_uniform_(w);
  const double xb = std::sqrt(6.0 / 500);
  CHECK(w.abs().max().item() <= xb);
  CHECK(w.abs().max().item() > 0.99 * xb);
  tg::nn::init::kaiming_uniform_(w);
  const double kb = std::sqrt(2.0) * std::sqrt(3.0 / 300);
  CHECK(w.abs().max().item() <= kb);
  CHECK(w.abs().max().item() > 0.99 * kb);
  tg::nn::init::kaiming_normal_(w);
  const double sd = std::sqrt(2.0 / 300);
  CHECK(std::sqrt((w * w).mean().item()) == doctest::Approx(sd).epsilon(0.02));
  tg::nn::init::normal_(w, 3, 0.5);
  CHECK(w.mean().item() == doctest::Approx(3).epsilon(0.01));
  tg::nn::init::constant_(w, 0.25);
  CHECK(w.min().item() == 0.25);
  Tensor b = tg::empty({5});
  TG_CHECK_THROWS(tg::nn::init::xavier_uniform_(b), tg::ShapeError, "fewer than 2 dimensions");
  const auto fans = tg::nn::init::fan_in_and_out(tg::empty({4, 3, 5, 5}));
  CHECK(fans.first == 75);
  CHECK(fans.second == 100);
}

// ------------------------------------------------------------------------------------------------
// The module tree (Note [Module tree], nn/module.cpp)

TEST_CASE("Module tree: a module cannot be registered inside itself, directly or through a descendant") {
  tg::nn::Module a, b, c;
  TG_CHECK_THROWS(a.register_module("self", a), tg::Error, "would contain itself");
  b.register_module("c", c);
  a.register_module("b", b);
  TG_CHECK_THROWS(c.register_module("a", a), tg::Error, "would contain itself");   // a -> b -> c -> a
  TG_CHECK_THROWS(c.register_module("b", b), tg::Error, "would contain itself");
  CHECK(c.children().empty());   // refused registrations leave nothing behind
  CHECK(a.parameters().empty());  // and traversal terminates
}

TEST_CASE("Module tree: a shared layer and a tied weight count once, as PyTorch's parameters() does") {
  struct Tied : tg::nn::Module {
    tg::nn::Linear enc{6, 6}, dec{6, 6};
    Tied() {
      register_module("enc", enc);
      register_module("dec", dec);
      register_module("again", enc);   // the same Linear under a second name
      dec.weight = enc.weight;         // tied: one TensorImpl
    }
  } m;
  const auto named = m.named_parameters();
  std::vector<std::string> names;
  for (const auto& p : named) names.push_back(p.first);
  CHECK(names == std::vector<std::string>{"enc.weight", "enc.bias", "dec.bias"});
  // SGD steps the tied weight once per step: w - lr * g, not w - 2 lr * g
  const tg::RawTensor w0 = m.enc.weight.data().clone();
  tg::optim::SGD sgd(m.parameters(), tg::optim::SGDOptions(0.5));
  auto x = testing::randn64({3, 6}, 5, false).to(tg::kFloat32);
  m.dec(m.enc(x)).sum().backward();
  const tg::RawTensor g = m.enc.weight.grad().data().clone();
  sgd.step();
  testing::check_close(m.enc.weight, Tensor(tg::prim::sub(w0, tg::prim::mul(g, tg::prim::scalar_like(0.5, g)))), 1e-6, 1e-7);
}

TEST_CASE("Module tree: names are non-empty, dot-free and unique across children, parameters and buffers") {
  struct M : tg::nn::Module {
    tg::nn::Linear fc{2, 2};
    Tensor buf = tg::zeros({2}), other = tg::zeros({2});
  } m;
  m.register_module("fc", m.fc);
  m.register_buffer("running", m.buf);
  TG_CHECK_THROWS(m.register_buffer("", m.other), tg::Error, "invalid name");
  TG_CHECK_THROWS(m.register_buffer("a.b", m.other), tg::Error, "invalid name");
  TG_CHECK_THROWS(m.register_buffer("running", m.other), tg::Error, "already registered");
  TG_CHECK_THROWS(m.register_buffer("fc", m.other), tg::Error, "already registered");
  TG_CHECK_THROWS(m.register_parameter("running", m.other), tg::Error, "already registered");
  TG_CHECK_THROWS(m.register_module("running", m.fc), tg::Error, "already registered");
  CHECK(m.named_buffers().size() == 1);
  // the module still saves and loads: no refused name got in
  testing::TempDir dir;
  const std::string path = dir.path + "/m.safetensors";
  tg::save(m, path);
  CHECK_NOTHROW(tg::load(m, path));
}

TEST_CASE("Module tree: 300,000 nested Sequentials are destroyed without overflowing the stack") {
  auto root = std::make_unique<tg::nn::Sequential>();
  tg::nn::Sequential* cur = root.get();
  for (int i = 0; i < 300000; ++i) cur = &cur->add<tg::nn::Sequential>();
  cur->add<tg::nn::Linear>(2, 2);
  CHECK(root->size() == 1);
  root.reset();   // recursive destruction overflows an 8 MB stack around 10^5 levels
}
