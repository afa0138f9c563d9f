// tests/test_habits.cpp: what PyTorch users write by habit. Printing shapes and sizes(), factories
// with a dtype, module class names in printing, Module::cuda/double_/half, forward with several
// inputs, shared ownership in register_module, EnableGradGuard, the differentiable views narrow /
// select / index, the activations gelu / silu / softplus / leaky_relu / log_sigmoid and their
// modules, masked_fill and tril / triu. Their float64 gradchecks are in test_gradcheck.cpp, their
// CPU-vs-CUDA parity cases in test_cuda.cpp. Reference values were recorded with PyTorch 1.13
// (Debian's /usr/bin/python3); each block says how.
#include <cmath>
#include <iomanip>
#include <sstream>

#include "testing.h"

using tg::Tensor;
using tg::indexing::Ellipsis;
using tg::indexing::None;
using tg::Slice;

namespace {

template <class T>
std::string printed(const T& v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

/// A bool mask from 0/1 values (from_vector has no std::vector<bool>).
Tensor mask(const std::vector<int64_t>& bits, const tg::Shape& shape) { return tg::from_vector(bits, shape) != 0.0; }

void check_near(const std::vector<double>& got, const std::vector<double>& want, double rtol, double atol) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    CAPTURE(i);
    CHECK(std::abs(got[i] - want[i]) <= atol + rtol * std::abs(want[i]));
  }
}

// ---- modules for the Module habits
struct Net : tg::nn::Module {
  tg::nn::Linear fc1{3, 4}, fc2{4, 2};
  Net() {
    register_module("fc1", fc1);
    register_module("fc2", fc2);
  }
  Tensor forward(const Tensor& x) override { return fc2(tg::relu(fc1(x))); }
};
struct Leaf : tg::nn::Module {};
template <int N>
struct Block : tg::nn::Module {};

/// forward with two inputs, through Cloneable<Gate>.
struct Gate : tg::nn::Cloneable<Gate> {
  tg::nn::Linear fc{3, 3};
  Gate() { register_module("fc", fc); }
  using Module::forward;
  Tensor forward(const Tensor& x, const Tensor& g) { return fc(x) * tg::sigmoid(g); }
  Tensor forward(const Tensor& x, double scale) { return fc(x) * scale; }
};

/// Children held through shared ownership, libtorch style.
struct Shared : tg::nn::Cloneable<Shared> {
  std::shared_ptr<tg::nn::Linear> fc;
  Shared() { fc = register_module("fc", std::make_shared<tg::nn::Linear>(3, 2)); }
  Tensor forward(const Tensor& x) override { return (*fc)(x); }
};

}  // namespace

// ------------------------------------------------------------------------------------------------
// printing, sizes, factories

TEST_CASE("habits: Shape prints as [2, 3] and sizes() is shape()") {
  Tensor x = tg::zeros({2, 3});
  CHECK(printed(x.sizes()) == "[2, 3]");
  CHECK(printed(x.shape()) == "[2, 3]");
  CHECK(printed(tg::Shape{}) == "[]");
  CHECK(&x.sizes() == &x.shape());
  CHECK(x.data().sizes() == tg::Shape{2, 3});
  CHECK(x.t().strides() == tg::Shape{1, 3});
}

TEST_CASE("habits: arange is int64 for integer bounds and float32 otherwise, as torch.arange") {
  // torch.arange(5).dtype == torch.int64: emb(arange(t)) works without a cast
  CHECK(tg::arange(5).dtype() == tg::kInt64);
  CHECK(tg::arange(5).to_vector<int64_t>() == std::vector<int64_t>{0, 1, 2, 3, 4});
  CHECK(tg::arange(4, tg::kFloat64).dtype() == tg::kFloat64);
  // torch.arange(0, 5, 2) -> [0, 2, 4]; torch.arange(5, 0, -2) -> [5, 3, 1]; torch.arange(2, 7) -> [2 .. 6]
  CHECK(tg::arange(0, 5, 2).to_vector<int64_t>() == std::vector<int64_t>{0, 2, 4});
  CHECK(tg::arange(5, 0, -2).to_vector<int64_t>() == std::vector<int64_t>{5, 3, 1});
  CHECK(tg::arange(2, 7).to_vector<int64_t>() == std::vector<int64_t>{2, 3, 4, 5, 6});
  CHECK(tg::arange(2, 7).dtype() == tg::kInt64);
  // int64 exactly beyond 2^53: start + i step in integers
  const int64_t big = (int64_t(1) << 53) + 1;
  CHECK(tg::arange(big, big + 3).to_vector<int64_t>() == std::vector<int64_t>{big, big + 1, big + 2});
  // torch.arange(0., 1., 0.3) -> float32 [0, 0.3, 0.6, 0.9]; torch.arange(1, 2.5, 0.5) -> float32 [1, 1.5, 2]
  const Tensor f = tg::arange(0.0, 1.0, 0.3);
  CHECK(f.dtype() == tg::kFloat32);
  CHECK(f.numel() == 4);
  CHECK(f.to_vector<float>()[3] == doctest::Approx(0.9f));
  CHECK(tg::arange(1, 2.5, 0.5).to_vector<float>() == std::vector<float>{1.0f, 1.5f, 2.0f});
  CHECK(tg::arange(0, 5, 1, tg::kFloat64).dtype() == tg::kFloat64);
  CHECK(tg::arange(0, 3, tg::kFloat32).to_vector<float>() == std::vector<float>{0, 1, 2});
  CHECK(tg::arange(3, 3).numel() == 0);
  // PyTorch's errors
  TG_CHECK_THROWS(tg::arange(0, 5, 0), tg::Error, "step must be nonzero");
  TG_CHECK_THROWS(tg::arange(0, 5, -1), tg::Error, "upper bound and lower bound inconsistent with step sign");
  TG_CHECK_THROWS(tg::arange(0.0, INFINITY), tg::Error, "unsupported range: 0 -> inf");
}

TEST_CASE("habits: factories take a dtype, a device or TensorOptions, libtorch style") {
  CHECK(tg::zeros({1}, tg::kInt64).dtype() == tg::kInt64);
  CHECK(tg::ones({2}, tg::kFloat64).dtype() == tg::kFloat64);
  CHECK(tg::empty({2}, tg::kInt32).dtype() == tg::kInt32);
  CHECK(tg::full({2}, 3, tg::kInt64).to_vector<int64_t>() == std::vector<int64_t>{3, 3});
  CHECK(tg::arange(4, tg::kInt64).to_vector<int64_t>() == std::vector<int64_t>{0, 1, 2, 3});
  CHECK(tg::eye(2, tg::kFloat64).dtype() == tg::kFloat64);
  CHECK(tg::rand({2}, tg::kFloat64).dtype() == tg::kFloat64);
  CHECK(tg::randint(0, 5, {3}, tg::kInt32).dtype() == tg::kInt32);
  CHECK(tg::from_vector(std::vector<float>{1, 2}, {2}, tg::kFloat64).dtype() == tg::kFloat64);
  CHECK(tg::zeros({1}, tg::Device::cpu()).device() == tg::Device::cpu());
  Tensor w = tg::randn({2, 2}, tg::dtype(tg::kFloat64).requires_grad());
  CHECK(w.dtype() == tg::kFloat64);
  CHECK(w.requires_grad());
  CHECK(tg::zeros({1}, tg::device(tg::Device::cpu()).dtype(tg::kBool)).dtype() == tg::kBool);
  CHECK_FALSE(tg::ones({1}, tg::requires_grad(false)).requires_grad());
  // *_like with options: what the options set replaces x's dtype
  CHECK(tg::zeros_like(w, tg::kInt64).dtype() == tg::kInt64);
  CHECK_FALSE(tg::zeros_like(w, tg::kInt64).requires_grad());
  CHECK(tg::ones_like(w, tg::TensorOptions()).dtype() == tg::kFloat64);
  CHECK(tg::full_like(w, 2.5, tg::kFloat32).to_vector<float>() == std::vector<float>(4, 2.5f));
  CHECK(tg::randn_like(w, tg::requires_grad()).requires_grad());
  CHECK(tg::rand_like(w, tg::kFloat32).shape() == tg::Shape{2, 2});
}

TEST_CASE("habits: custom modules print their class name, as PyTorch") {
  CHECK(printed(Net()) ==
        "Net(\n  (fc1): Linear(in_features=3, out_features=4, bias=true)\n  (fc2): Linear(in_features=4, out_features=2, "
        "bias=true)\n)");
  CHECK(printed(Leaf()) == "Leaf()");
  CHECK(Leaf().name() == "Leaf");
  CHECK(Block<3>().name() == "Block<3>");
  CHECK(tg::nn::Module().name() == "Module");
  CHECK(printed(tg::nn::Module("Encoder")) == "Encoder()");
  CHECK(printed(tg::nn::Sequential()) == "Sequential()");
  CHECK(printed(tg::nn::ReLU()) == "ReLU()");
  // the name reaches error messages too
  TG_CHECK_THROWS(Leaf()(tg::zeros({1})), tg::Error, "Leaf: forward(const Tensor&) is not implemented");
}

TEST_CASE("habits: an optimizer over a model without parameters raises PyTorch's error") {
  Leaf empty;
  TG_CHECK_THROWS(tg::optim::SGD(empty.parameters(), 0.1), tg::Error, "optimizer got an empty parameter list");
  TG_CHECK_THROWS(tg::optim::Adam(empty.parameters(), tg::optim::AdamOptions(1e-3)), tg::Error,
                  "optimizer got an empty parameter list");
}

// ------------------------------------------------------------------------------------------------
// Module habits

TEST_CASE("habits: Module::double_/float_/half/bfloat16/cpu/to(device, dtype) move in place") {
  tg::manual_seed(1);
  Net net;
  const std::vector<double> before = net.fc1.weight.to_vector<double>();
  CHECK(&net.double_() == &net);
  for (auto& p : net.parameters()) CHECK(p.dtype() == tg::kFloat64);
  CHECK(net.fc1.weight.to_vector<double>() == before);   // float32 values are exact in float64
  net.half();
  CHECK(net.fc2.bias.dtype() == tg::kFloat16);
  net.bfloat16();
  CHECK(net.fc2.bias.dtype() == tg::kBFloat16);
  net.float_().cpu();
  CHECK(net.fc1.weight.dtype() == tg::kFloat32);
  net.to(tg::Device::cpu(), tg::kFloat64);
  CHECK(net.fc1.weight.dtype() == tg::kFloat64);
  TG_CHECK_THROWS(net.to(tg::Device::cpu(), tg::kInt64), tg::DTypeError, "must be floating point");
  CHECK(net.fc1.weight.dtype() == tg::kFloat64);   // refused before anything moved
}

TEST_CASE("habits: Module::cuda() moves to the GPU, or names the module and the reason without one") {
  Net net;
  Leaf leaf;   // nothing to move: still an error without a GPU
  if (!tg::cuda::is_available()) {
    TG_CHECK_THROWS(net.cuda(), tg::DeviceError, "Net.to(cuda");
    TG_CHECK_THROWS(leaf.cuda(), tg::DeviceError, "Leaf.to(cuda");
    CHECK(net.fc1.weight.device() == tg::Device::cpu());
    return;
  }
  net.cuda();
  for (auto& p : net.parameters()) CHECK(p.is_cuda());
  CHECK(net(tg::randn({2, 3}).cuda()).is_cuda());
  net.cpu();
  CHECK_FALSE(net.fc1.weight.is_cuda());
}

TEST_CASE("habits: forward with several inputs through Cloneable, hooks refused for them") {
  tg::manual_seed(2);
  Gate gate;
  Tensor x = tg::randn({2, 3}, tg::requires_grad()), g = tg::randn({2, 3});
  Tensor y = gate(x, g);
  testing::check_close(y, gate.fc(x) * tg::sigmoid(g));
  y.sum().backward();
  CHECK(x.grad().defined());
  CHECK(gate.fc.weight.grad().defined());
  testing::check_close(gate(x, 2.0), gate.fc(x) * 2.0);   // not only Tensors
  // one input still goes through Module::operator(), with hooks
  TG_CHECK_THROWS(gate(x), tg::Error, "Gate: forward(const Tensor&) is not implemented");
  int calls = 0;
  auto h = gate.register_forward_hook([&calls](tg::nn::Module&, const Tensor&, const Tensor&) { ++calls; });
  TG_CHECK_THROWS(gate(x, g), tg::Error, "forward hooks take one input, but this call passes 2");
  CHECK(calls == 0);
  h.remove();
  CHECK(gate(x, g).shape() == tg::Shape{2, 3});
}

TEST_CASE("habits: register_module of a std::shared_ptr shares ownership") {
  tg::manual_seed(3);
  Shared s;
  REQUIRE(s.named_parameters().size() == 2);
  CHECK(s.named_parameters()[0].first == "fc.weight");
  CHECK(s(tg::randn({1, 3})).shape() == tg::Shape{1, 2});
  std::unique_ptr<Shared> copy = s.clone();
  CHECK(copy->named_parameters()[0].second.to_vector<float>() == s.named_parameters()[0].second.to_vector<float>());
  CHECK(copy->named_parameters()[0].second.impl() != s.named_parameters()[0].second.impl());
  tg::nn::Module parent;
  std::weak_ptr<tg::nn::Linear> weak;
  {
    auto child = parent.register_module("fc", std::make_shared<tg::nn::Linear>(3, 2));
    weak = child;
  }
  CHECK_FALSE(weak.expired());       // the parent keeps its child alive
  CHECK((*parent.children()[0].second)(tg::randn({1, 3})).shape() == tg::Shape{1, 2});
  TG_CHECK_THROWS(parent.register_module("fc2", std::shared_ptr<tg::nn::Linear>()), tg::Error, "null module");
}

TEST_CASE("habits: EnableGradGuard records inside NoGradGuard and restores the mode") {
  Tensor w = tg::randn({3}, tg::requires_grad());
  tg::NoGradGuard no_grad;
  CHECK_FALSE((w * 2.0).requires_grad());
  {
    tg::EnableGradGuard enable;
    CHECK(tg::GradMode::is_enabled());
    Tensor y = (w * 2.0).sum();
    CHECK(y.requires_grad());
    y.backward();
    CHECK(w.grad().to_vector<float>() == std::vector<float>(3, 2.0f));
    {
      tg::NoGradGuard inner;
      CHECK_FALSE(tg::GradMode::is_enabled());
    }
    CHECK(tg::GradMode::is_enabled());
  }
  CHECK_FALSE(tg::GradMode::is_enabled());
}

// ------------------------------------------------------------------------------------------------
// narrow / select / index

TEST_CASE("habits: index follows Python's slicing rules, values and shapes recorded from PyTorch") {
  // /usr/bin/python3: x = torch.arange(24.).reshape(2, 3, 4); print(list(x[...].shape), x[...].flatten().tolist())
  Tensor x = tg::arange(24, tg::kFloat64).reshape({2, 3, 4});
  struct Case {
    const char* what;
    std::vector<tg::TensorIndex> idx;
    tg::Shape shape;
    std::vector<double> values;
  };
  const std::vector<Case> cases = {
      {"x[0:4, 1]", {Slice(0, 4), 1}, {2, 4}, {4, 5, 6, 7, 16, 17, 18, 19}},
      {"x[..., ::2]", {Ellipsis, Slice(None, None, 2)}, {2, 3, 2}, {0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22}},
      {"x[:, -1]", {Slice(), -1}, {2, 4}, {8, 9, 10, 11, 20, 21, 22, 23}},
      {"x[None, 1, 1:]", {None, 1, Slice(1)}, {1, 2, 4}, {16, 17, 18, 19, 20, 21, 22, 23}},
      {"x[:, 5:]", {Slice(), Slice(5)}, {2, 0, 4}, {}},
      {"x[1, -2:, 1:4:2]", {1, Slice(-2), Slice(1, 4, 2)}, {2, 2}, {17, 19, 21, 23}},
      {"x[-1, ..., None]", {-1, Ellipsis, None}, {3, 4, 1}, {12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23}},
      {"x[:, -10:2]", {Slice(), Slice(-10, 2)}, {2, 2, 4}, {0, 1, 2, 3, 4, 5, 6, 7, 12, 13, 14, 15, 16, 17, 18, 19}},
  };
  for (const Case& c : cases) {
    CAPTURE(c.what);
    Tensor y = x.index(c.idx);
    CHECK(y.shape() == c.shape);
    CHECK(y.to_vector<double>() == c.values);
    CHECK(y.data().storage() == x.data().storage());   // a view, no copy
  }
  CHECK(printed(tg::TensorIndex(Slice(1, None, 2))) == "1::2");
  CHECK(printed(tg::TensorIndex(Slice())) == ":");
  // narrow and select agree with the same slices
  CHECK(x.narrow(2, -3, 2).to_vector<double>() == x.index({Ellipsis, Slice(1, 3)}).to_vector<double>());
  CHECK(x.select(1, -1).to_vector<double>() == x.index({Slice(), -1}).to_vector<double>());
}

TEST_CASE("habits: gradients of narrow, select and index land in the sliced positions") {
  Tensor x = tg::zeros({3, 4}, tg::dtype(tg::kFloat64).requires_grad());
  (x.narrow(1, 1, 2) * 2.0).sum().backward();
  CHECK(x.grad().to_vector<double>() == std::vector<double>{0, 2, 2, 0, 0, 2, 2, 0, 0, 2, 2, 0});
  x.zero_grad();
  (x.select(0, -1) * 3.0).sum().backward();
  CHECK(x.grad().to_vector<double>() == std::vector<double>{0, 0, 0, 0, 0, 0, 0, 0, 3, 3, 3, 3});
  x.zero_grad();
  // x[::2, 1:] used twice: the engine adds both gradients
  Tensor v = x.index({Slice(None, None, 2), Slice(1)});
  (v + v * 4.0).sum().backward();
  CHECK(x.grad().to_vector<double>() == std::vector<double>{0, 5, 5, 5, 0, 0, 0, 0, 0, 5, 5, 5});
  // in-place writes through a view of a Tensor that requires grad are refused, as for the other views
  TG_CHECK_THROWS(x.index({0}).mul_(2.0), tg::AutogradError, "view");
}

TEST_CASE("habits: bad narrow / select / index arguments raise IndexError naming the op, dim and size") {
  Tensor x = tg::zeros({2, 3});
  TG_CHECK_THROWS(x.narrow(1, 2, 2), tg::IndexError, "narrow: start (2) + length (2) exceeds the size (3) of dimension 1");
  TG_CHECK_THROWS(x.narrow(1, -4, 1), tg::IndexError, "for dimension 1 with size 3");
  TG_CHECK_THROWS(x.narrow(1, 0, -1), tg::IndexError, "narrow: length (-1) must be non-negative");
  TG_CHECK_THROWS(x.narrow(2, 0, 1), tg::IndexError, "narrow");
  TG_CHECK_THROWS(tg::zeros({}).narrow(0, 0, 1), tg::IndexError, "narrow: cannot be applied to a 0-dim tensor");
  TG_CHECK_THROWS(x.select(1, 3), tg::IndexError, "select: index 3 is out of bounds for dimension 1 with size 3");
  TG_CHECK_THROWS(x.select(0, -3), tg::IndexError, "select: index -3 is out of bounds for dimension 0 with size 2");
  TG_CHECK_THROWS(x.index({Slice(), 3}), tg::IndexError, "index: index 3 is out of bounds for dimension 1 with size 3");
  TG_CHECK_THROWS(x.index({0, 0, 0}), tg::IndexError, "index: too many indices for tensor of dimension 2");
  TG_CHECK_THROWS(x.index({Slice(0, 2, 0)}), tg::IndexError, "index: slice step must be positive, got 0 for dimension 0");
  TG_CHECK_THROWS(x.index({Ellipsis, 0, Ellipsis}), tg::IndexError, "single ellipsis");
}

// ------------------------------------------------------------------------------------------------
// activations, masks

TEST_CASE("habits: gelu, silu, softplus, leaky_relu, log_sigmoid match PyTorch's values and gradients") {
  // /usr/bin/python3 with torch 1.13: x = torch.tensor([...], dtype=torch.float64, requires_grad=True);
  // y = F.<op>(x); y.backward(torch.ones_like(y)); print(y.tolist(), x.grad.tolist()); and F.<op>(x.float())
  const std::vector<double> xs = {-30.0, -3.5, -1.2, -0.3, 0.0, 0.4, 1.7, 2.9, 25.0};
  struct Ref {
    const char* what;
    std::function<Tensor(const Tensor&)> f;
    std::vector<double> y, dx;
  };
  const std::vector<Ref> refs = {
      {"gelu", [](const Tensor& v) { return tg::gelu(v); },
       {-0.0, -0.0008142017766243903, -0.13808360426604993, -0.1146265733433142, 0.0, 0.2621686966441297,
        1.6242387133104768, 2.8945891414288862, 25.0},
       {-4.420938404635643e-195, -0.0028217603536246205, -0.11795359575814726, 0.26767223317289013, 0.5,
        0.8027297977316535, 1.1153179687821648, 1.015396530716966, 1.0}},
      {"gelu tanh", [](const Tensor& v) { return v.gelu("tanh"); },
       {-0.0, -0.0006161976553737403, -0.13829723086213513, -0.11462907645724074, 0.0, 0.2621611694273562,
        1.624105895551156, 2.895033333764528, 25.0},
       {0.0, -0.0024226437601167334, -0.11772613473311264, 0.26770454836119817, 0.5, 0.8026588344205614,
        1.115914631452605, 1.0151255217340986, 1.0}},
      {"silu", [](const Tensor& v) { return tg::silu(v); },
       {-2.8072868906517896e-12, -0.10259280762974712, -0.2777702598011788, -0.1276672449565023, 0.0,
        0.23947506404498084, 1.437409049357991, 2.7487546670725886, 24.9999999996528},
       {-2.713710660963134e-12, -0.07027335282771814, 0.01800188772481552, 0.3522199896811173, 0.5,
        0.6947919584090637, 1.067564504759019, 1.0912037868378475, 1.000000000333312}},
      {"softplus", [](const Tensor& v) { return tg::softplus(v); },
       {9.357622968839737e-14, 0.029750418272620566, 0.26328246733803123, 0.5543552444685271, 0.6931471805599453,
        0.9130152523999526, 1.8677860293862658, 2.953562776217963, 25.0},
       {9.3576229688393e-14, 0.029312230751356316, 0.23147521650098238, 0.425557483188341, 0.5, 0.598687660112452,
        0.8455347349164652, 0.9478464369215822, 1.0}},
      {"softplus beta 2 threshold 3", [](const Tensor& v) { return v.softplus(2, 3); },
       {4.37825538134826e-27, 0.00045573322688712237, 0.04341807607697484, 0.21874397524294284, 0.34657359027997264,
        0.5855503329738889, 1.7, 2.9, 25.0},
       {8.75651076269652e-27, 0.0009110511944006454, 0.08317269649392238, 0.35434369377420455, 0.5,
        0.6899744811276125, 1.0, 1.0, 1.0}},
      {"leaky_relu", [](const Tensor& v) { return tg::leaky_relu(v); },
       {-0.3, -0.035, -0.012, -0.003, 0.0, 0.4, 1.7, 2.9, 25.0}, {0.01, 0.01, 0.01, 0.01, 0.01, 1, 1, 1, 1}},
      {"leaky_relu 0.2", [](const Tensor& v) { return v.leaky_relu(0.2); },
       {-6.0, -0.7000000000000001, -0.24, -0.06, 0.0, 0.4, 1.7, 2.9, 25.0}, {0.2, 0.2, 0.2, 0.2, 0.2, 1, 1, 1, 1}},
      {"log_sigmoid", [](const Tensor& v) { return tg::log_sigmoid(v); },
       {-30.000000000000092, -3.5297504182726205, -1.4632824673380311, -0.8543552444685272, -0.6931471805599453,
        -0.5130152523999526, -0.16778602938626594, -0.053562776217963175, -1.3887943864867583e-11},
       {0.9999999999999064, 0.9706877692486436, 0.7685247834990176, 0.5744425168116589, 0.5, 0.401312339887548,
        0.1544652650835347, 0.05215356307841774, 1.3887943864771146e-11}},
  };
  for (const Ref& r : refs) {
    CAPTURE(r.what);
    Tensor x = tg::from_vector(xs, {9}, tg::requires_grad());
    Tensor y = r.f(x);
    y.backward(tg::ones_like(y));
    check_near(y.to_vector<double>(), r.y, 1e-13, 1e-300);
    check_near(x.grad().to_vector<double>(), r.dx, 1e-12, 1e-300);
    // float32 within float32 rounding of the float64 reference (PyTorch's float32 values differ from it
    // by up to 1.3e-7 too, where 1 + erf(x) cancels in gelu)
    check_near(r.f(tg::from_vector(xs, {9}, tg::kFloat32)).to_vector<double>(), r.y, 2e-6, 1e-6);
    // NaN in gives NaN out (Note [NaN and infinity])
    CHECK(std::isnan(r.f(tg::full({1}, std::nan(""), tg::kFloat64)).item()));
  }
  TG_CHECK_THROWS(tg::gelu(tg::zeros({1}), "erf"), tg::Error, "gelu: approximate must be \"none\" or \"tanh\"");
  TG_CHECK_THROWS(tg::softplus(tg::zeros({1}), 0), tg::Error, "softplus: beta must be a non-zero number");
  TG_CHECK_THROWS(tg::silu(tg::zeros({1}, tg::kInt64)), tg::DTypeError, "silu: expected a floating point tensor, got int64");
}

TEST_CASE("habits: ELU, CELU, SELU, Hardtanh, ReLU6, Hardswish, Hardsigmoid, Mish, Softsign, Softmax, LogSoftmax and Identity modules") {
  // reprs printed by pip's torch 2.15: print(torch.nn.ELU(), torch.nn.Hardtanh(-2.0, 3.0), ...)
  CHECK(printed(tg::nn::ELU()) == "ELU(alpha=1.0)");
  CHECK(printed(tg::nn::ELU(0.5)) == "ELU(alpha=0.5)");
  CHECK(printed(tg::nn::CELU(2.0)) == "CELU(alpha=2.0)");
  CHECK(printed(tg::nn::SELU()) == "SELU()");
  CHECK(printed(tg::nn::Hardtanh()) == "Hardtanh(min_val=-1.0, max_val=1.0)");
  CHECK(printed(tg::nn::Hardtanh(-2.0, 3.0)) == "Hardtanh(min_val=-2.0, max_val=3.0)");
  CHECK(printed(tg::nn::ReLU6()) == "ReLU6()");
  CHECK(printed(tg::nn::Hardswish()) == "Hardswish()");
  CHECK(printed(tg::nn::Hardsigmoid()) == "Hardsigmoid()");
  CHECK(printed(tg::nn::Mish()) == "Mish()");
  CHECK(printed(tg::nn::Softsign()) == "Softsign()");
  CHECK(printed(tg::nn::Softmax(1)) == "Softmax(dim=1)");
  CHECK(printed(tg::nn::LogSoftmax(-1)) == "LogSoftmax(dim=-1)");
  CHECK(printed(tg::nn::Identity()) == "Identity()");
  // torch.nn.Hardtanh(1.0, 1.0): AssertionError; here an Error naming the module
  TG_CHECK_THROWS(tg::nn::Hardtanh(1.0, 1.0), tg::Error, "Hardtanh: max_val must be greater than min_val");
  // each forward is its function (whose values the unary math tests check against PyTorch)
  const Tensor x = tg::randn({3, 4}, tg::kFloat64);
  CHECK(tg::nn::ELU(0.5)(x).equal(tg::elu(x, 0.5)));
  CHECK(tg::nn::CELU(2.0)(x).equal(tg::celu(x, 2.0)));
  CHECK(tg::nn::SELU()(x).equal(tg::selu(x)));
  CHECK(tg::nn::Hardtanh(-0.5, 0.25)(x).equal(tg::hardtanh(x, -0.5, 0.25)));
  CHECK(tg::nn::ReLU6()(x * 5.0).equal(tg::relu6(x * 5.0)));
  CHECK(tg::nn::Hardswish()(x).equal(tg::hardswish(x)));
  CHECK(tg::nn::Hardsigmoid()(x).equal(tg::hardsigmoid(x)));
  CHECK(tg::nn::Mish()(x).equal(tg::mish(x)));
  CHECK(tg::nn::Softsign()(x).equal(tg::softsign(x)));
  CHECK(tg::nn::Softmax(1)(x).equal(tg::softmax(x, 1)));
  CHECK(tg::nn::LogSoftmax(0)(x).equal(tg::log_softmax(x, 0)));
  CHECK(tg::nn::Identity()(x).equal(x));
  // in a Sequential, cloned with their options
  tg::nn::Sequential seq;
  seq.add<tg::nn::Linear>(4, 3);
  seq.add<tg::nn::ELU>(0.5);
  seq.add<tg::nn::Hardtanh>(-0.5, 0.5);
  seq.add<tg::nn::LogSoftmax>(1);
  seq.add<tg::nn::Identity>();
  seq.to(tg::kFloat64);
  auto copy = seq.clone();
  CHECK(printed(*copy) == printed(seq));
  CHECK((*copy)(x).equal(seq(x)));
}

TEST_CASE("habits: activation modules with PyTorch's options and printing") {
  // printed by /usr/bin/python3: print(torch.nn.GELU(), torch.nn.SiLU(), torch.nn.Softplus(), ...)
  CHECK(printed(tg::nn::GELU()) == "GELU(approximate='none')");
  CHECK(printed(tg::nn::GELU(tg::nn::GELUOptions().approximate("tanh"))) == "GELU(approximate='tanh')");
  CHECK(printed(tg::nn::SiLU()) == "SiLU()");
  CHECK(printed(tg::nn::Softplus()) == "Softplus(beta=1, threshold=20)");
  CHECK(printed(tg::nn::Softplus(tg::nn::SoftplusOptions().beta(2).threshold(3.5))) == "Softplus(beta=2, threshold=3.5)");
  CHECK(printed(tg::nn::LeakyReLU()) == "LeakyReLU(negative_slope=0.01)");
  TG_CHECK_THROWS(tg::nn::GELU("fast"), tg::Error, "GELU: approximate must be");
  TG_CHECK_THROWS(tg::nn::Softplus(0.0), tg::Error, "Softplus: beta must be a non-zero number");
  Tensor x = tg::randn({4, 5});
  testing::check_close(tg::nn::GELU("tanh")(x), tg::gelu(x, "tanh"));
  testing::check_close(tg::nn::SiLU()(x), tg::silu(x));
  testing::check_close(tg::nn::Softplus(2, 3)(x), tg::softplus(x, 2, 3));
  testing::check_close(tg::nn::LeakyReLU(tg::nn::LeakyReLUOptions().negative_slope(0.3))(x), tg::leaky_relu(x, 0.3));
  tg::nn::Sequential seq;
  seq.add<tg::nn::Linear>(5, 3);
  seq.add<tg::nn::GELU>("tanh");
  seq.add<tg::nn::Softplus>(2.0, 4.0);
  auto copy = seq.clone();
  CHECK(printed(*copy) == printed(seq));
  testing::check_close((*copy)(x), seq(x));
}

TEST_CASE("habits: masked_fill, tril and triu match PyTorch") {
  // /usr/bin/python3: torch.arange(12.).reshape(3, 4).masked_fill(torch.tensor([True, False, True, False]), -1.5)
  Tensor a = tg::arange(12, tg::kFloat64).reshape({3, 4});
  Tensor m = mask({1, 0, 1, 0}, {4});
  CHECK(a.masked_fill(m, -1.5).to_vector<double>() ==
        std::vector<double>{-1.5, 1, -1.5, 3, -1.5, 5, -1.5, 7, -1.5, 9, -1.5, 11});
  // torch.arange(4.).masked_fill(torch.tensor([[True], [False], [True]]), 7): the broadcast shape (3, 4)
  Tensor col = mask({1, 0, 1}, {3, 1});
  Tensor b = tg::arange(4, tg::kFloat64).masked_fill(col, 7);
  CHECK(b.shape() == tg::Shape{3, 4});
  CHECK(b.to_vector<double>() == std::vector<double>{7, 7, 7, 7, 0, 1, 2, 3, 7, 7, 7, 7});
  CHECK(tg::arange(3, tg::kInt64).masked_fill(mask({0, 1, 0}, {3}), 9.0)
            .to_vector<int64_t>() == std::vector<int64_t>{0, 9, 2});
  TG_CHECK_THROWS(a.masked_fill(a, 0.0), tg::DTypeError, "masked_fill: only supports boolean masks");
  TG_CHECK_THROWS(a.masked_fill(tg::zeros({5}, tg::kBool), 0.0), tg::ShapeError, "masked_fill");
  TG_CHECK_THROWS(a.masked_fill(m, tg::zeros({2})), tg::ShapeError, "only supports a 0-dimensional value tensor");
  // gradients: x gets dL/dy off the mask, a 0-d value the sum over the mask
  Tensor x = tg::randn({3, 4}, tg::dtype(tg::kFloat64).requires_grad());
  Tensor v = tg::full({}, 2.0, tg::dtype(tg::kFloat64).requires_grad());
  (x.masked_fill(m, v) * 3.0).sum().backward();
  CHECK(x.grad().to_vector<double>() == std::vector<double>{0, 3, 0, 3, 0, 3, 0, 3, 0, 3, 0, 3});
  CHECK(v.grad().item() == 18.0);

  // t = torch.arange(1., 13.).reshape(3, 4); t.tril(d).flatten().tolist(), t.triu(d).flatten().tolist()
  Tensor t = tg::arange(12, tg::kFloat64).reshape({3, 4}) + 1.0;
  CHECK(t.tril().to_vector<double>() == std::vector<double>{1, 0, 0, 0, 5, 6, 0, 0, 9, 10, 11, 0});
  CHECK(t.triu().to_vector<double>() == std::vector<double>{1, 2, 3, 4, 0, 6, 7, 8, 0, 0, 11, 12});
  CHECK(t.tril(1).to_vector<double>() == std::vector<double>{1, 2, 0, 0, 5, 6, 7, 0, 9, 10, 11, 12});
  CHECK(t.triu(1).to_vector<double>() == std::vector<double>{0, 2, 3, 4, 0, 0, 7, 8, 0, 0, 0, 12});
  CHECK(t.tril(-1).to_vector<double>() == std::vector<double>{0, 0, 0, 0, 5, 0, 0, 0, 9, 10, 0, 0});
  CHECK(t.triu(-1).to_vector<double>() == std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8, 0, 10, 11, 12});
  CHECK(t.tril(5).to_vector<double>() == t.to_vector<double>());
  CHECK(t.triu(-5).to_vector<double>() == t.to_vector<double>());
  CHECK(t.triu(5).to_vector<double>() == std::vector<double>(12, 0.0));
  // torch.arange(1., 13.).reshape(2, 2, 3).tril(0): over the last two dims of each batch entry
  Tensor bt = (tg::arange(12, tg::kFloat64) + 1.0).reshape({2, 2, 3});
  CHECK(bt.tril().to_vector<double>() == std::vector<double>{1, 0, 0, 4, 5, 0, 7, 0, 0, 10, 11, 0});
  CHECK(tg::tril(tg::ones({2, 2}, tg::kInt64)).to_vector<int64_t>() == std::vector<int64_t>{1, 0, 1, 1});
  TG_CHECK_THROWS(tg::triu(tg::zeros({3})), tg::ShapeError, "triu: input tensor must have at least 2 dimensions");
  Tensor w = tg::randn({3, 3}, tg::dtype(tg::kFloat64).requires_grad());
  w.triu(1).sum().backward();
  CHECK(w.grad().to_vector<double>() == std::vector<double>{0, 1, 1, 0, 0, 1, 0, 0, 0});
}

// ------------------------------------------------------------------------------------------------
// to_dot

TEST_CASE("habits: to_dot names parameters as torchviz does and annotates gradient norms") {
  tg::manual_seed(4);
  Net net;
  Tensor x = tg::randn({5, 3});
  Tensor loss = net(x).sum();
  const std::string plain = tg::autograd::to_dot(loss, tg::autograd::DotOptions().params(net.named_parameters()));
  CHECK(plain.find("fc1.weight\\n[4, 3]") != std::string::npos);
  CHECK(plain.find("fc2.bias\\n[2]") != std::string::npos);
  CHECK(plain.find("|grad|") == std::string::npos);   // no backward yet, no norms asked
  std::string dot;
  {
    tg::autograd::GradNormRecorder recorder;
    loss.backward();
    dot = tg::autograd::to_dot(loss, tg::autograd::DotOptions().params(net.named_parameters()).grad_norms(recorder));
    // the op nodes carry the norm of the gradient that reached them: sum's output gradient is 1
    CHECK(dot.find("sum\\n[] float32\\n(freed)\\n|grad| = 1\"") != std::string::npos);
  }
  const double w_norm = std::sqrt((net.fc1.weight.grad() * net.fc1.weight.grad()).sum().item());
  std::ostringstream want;
  want << "fc1.weight\\n[4, 3]\\n|grad| = " << std::setprecision(4) << w_norm;
  CHECK(dot.find(want.str()) != std::string::npos);
}
