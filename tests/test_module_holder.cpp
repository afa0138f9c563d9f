// tests/test_module_holder.cpp: libtorch's module conventions beside ours (nn/pimpl.h, nn/container.h):
// ModuleHolder and TG_MODULE / TORCH_MODULE, the built-in layers as values and as handles, register_module
// of holders, pointers and temporaries, libtorch-style forwards of any arity, the containers, and the
// traversals modules() / named_modules() / named_children() / apply().
#include <sstream>
#include <tuple>

#include "testing.h"

namespace {

using testing::check_close;

// ---- module types in libtorch's style: forward by value, no override, a holder from TG_MODULE

struct TwoLayerImpl : tg::nn::Module {
  tg::nn::Linear fc1{nullptr}, fc2{nullptr};
  explicit TwoLayerImpl(int64_t in) {
    fc1 = register_module("fc1", tg::nn::Linear(in, 3));
    fc2 = register_module("fc2", tg::nn::Linear(3, 1));
  }
  tg::Tensor forward(tg::Tensor x) { return fc2(tg::relu(fc1(x))); }
};
TG_MODULE(TwoLayer);

struct DefaultImpl : tg::nn::Module {
  tg::Tensor w;
  DefaultImpl() { w = register_parameter("w", tg::ones({2})); }
  tg::Tensor forward(tg::Tensor x) { return x * w; }
};
TORCH_MODULE(Default);   // libtorch's spelling of TG_MODULE

// A VAE-like forward: three results; and a forward of two inputs.
struct ThreeOutImpl : tg::nn::Module {
  tg::nn::Linear mu{nullptr}, logvar{nullptr};
  ThreeOutImpl() {
    mu = register_module("mu", tg::nn::Linear(4, 2));
    logvar = register_module("logvar", tg::nn::Linear(4, 2));
  }
  std::tuple<tg::Tensor, tg::Tensor, tg::Tensor> forward(tg::Tensor x) {
    tg::Tensor m = mu(x), lv = logvar(x);
    return {m + lv, m, lv};
  }
};
TG_MODULE(ThreeOut);

struct PairImpl : tg::nn::Module {
  tg::Tensor forward(tg::Tensor x, tg::Tensor y) { return x * y; }
};
TG_MODULE(Pair);

struct PrettyImpl : tg::nn::Module {
  void pretty_print(std::ostream& os) const override { os << "Pretty(k=3)"; }
};
TG_MODULE(Pretty);

tg::Tensor values(const std::vector<float>& v, const tg::Shape& shape) { return tg::from_vector(v, shape); }

/// Sets a Linear's weight and bias in place.
void set_linear(tg::nn::Linear& l, const std::vector<float>& w, const std::vector<float>& b) {
  tg::NoGradGuard no_grad;
  l->weight.copy_(values(w, l->weight.shape()));
  l->bias.copy_(values(b, l->bias.shape()));
}

std::vector<std::string> names_of(const std::vector<std::pair<std::string, tg::Tensor>>& named) {
  std::vector<std::string> out;
  for (const auto& n : named) out.push_back(n.first);
  return out;
}

}  // namespace

TEST_CASE("ModuleHolder: TG_MODULE holds a NameImpl, shares it on copy, calls its forward through ->, * and ()") {
  tg::manual_seed(0);
  TwoLayer net(2);
  CHECK_FALSE(net.is_empty());
  CHECK(static_cast<bool>(net));
  CHECK(names_of(net->named_parameters()) ==
        std::vector<std::string>{"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"});
  TwoLayer copy = net;                         // libtorch: copies of a holder share the module
  CHECK(copy.get() == net.get());
  CHECK(copy.ptr() == net.ptr());
  CHECK(&*net == net.get());
  auto x = tg::randn({5, 2});
  check_close(net(x), net->forward(x));
  check_close(net(x), (*net).forward(x));
  tg::optim::SGD sgd(net->parameters(), 0.1);   // libtorch's `optim::SGD(net->parameters(), lr)`
  CHECK(net->parameters().size() == 4);
  static_assert(std::is_same<TwoLayer::Impl, TwoLayerImpl>::value, "TG_MODULE names the Impl");
  static_assert(std::is_same<TwoLayer::ContainedType, TwoLayerImpl>::value, "ModuleHolder::ContainedType");

  Default d;                                   // a default-constructible Impl: the holder constructs one
  CHECK_FALSE(d.is_empty());
  check_close(d(tg::full({2}, 3.0)), tg::full({2}, 3.0));
}

TEST_CASE("ModuleHolder: the empty holder raises tg::Error naming what to do") {
  TwoLayer empty{nullptr};
  CHECK(empty.is_empty());
  CHECK_FALSE(static_cast<bool>(empty));
  CHECK_THROWS_WITH_AS(empty->parameters(), doctest::Contains("empty holder"), tg::Error);
  CHECK_THROWS_AS(empty.ptr(), tg::Error);
  CHECK_THROWS_AS(empty(tg::randn({1, 2})), tg::Error);
  tg::nn::Module parent;
  CHECK_THROWS_WITH_AS(parent.register_module("net", empty), doctest::Contains("empty TwoLayerImpl holder"), tg::Error);
  TwoLayer other = nullptr;                    // libtorch's `Net net = nullptr;`
  other = TwoLayer(3);                         // assigned later
  CHECK(other->named_parameters().at(0).second.shape() == tg::Shape{3, 3});
}

TEST_CASE("ModuleHolder: forward of any arity and result through the holder") {
  tg::manual_seed(1);
  ThreeOut vae;
  auto x = tg::randn({3, 4});
  auto [z, mu, logvar] = vae(x);               // a VAE's forward returning three tensors
  check_close(mu, vae->mu(x));
  check_close(z, mu + logvar);
  Pair pair;
  auto a = tg::randn({2}), b = tg::randn({2});
  check_close(pair(a, b), a * b);              // model(x, y)
}

TEST_CASE("ModuleHolder: one-input calls run the forward hooks, other calls refuse them") {
  tg::manual_seed(2);
  TwoLayer net(2);
  int calls = 0;
  net->register_forward_hook([&calls](tg::nn::Module&, const tg::Tensor&, const tg::Tensor& out) {
    ++calls;
    return out * 2;
  });
  auto x = tg::randn({1, 2});
  auto y = net(x);
  CHECK(calls == 1);
  check_close(y, net->forward(x) * 2);
  Pair pair;
  pair->register_forward_hook([](tg::nn::Module&, const tg::Tensor&, const tg::Tensor&) {});
  CHECK_THROWS_WITH_AS(pair(x, x), doctest::Contains("forward hooks take one input"), tg::Error);
}

TEST_CASE("register_module: holders, pointers and temporary layers return std::shared_ptr, lvalues a reference") {
  tg::nn::Module parent;
  TwoLayer net(2);
  std::shared_ptr<TwoLayerImpl> from_holder = parent.register_module("net", net);
  CHECK(from_holder.get() == net.get());
  std::shared_ptr<tg::nn::Linear> from_ptr = parent.register_module("lin", std::make_shared<tg::nn::LinearImpl>(2, 2));
  std::shared_ptr<tg::nn::Linear> from_temp = parent.register_module("tmp", tg::nn::Linear(2, 5));
  CHECK(from_temp->weight.shape() == tg::Shape{5, 2});
  tg::nn::ReLU relu;
  tg::nn::ReLU& same = parent.register_module("relu", relu);
  CHECK(&same == &relu);
  std::vector<std::string> children;
  for (const auto& c : parent.children()) children.push_back(c.first);
  CHECK(children == std::vector<std::string>{"net", "lin", "tmp", "relu"});
  CHECK(parent.named_parameters().size() == 8);
}

TEST_CASE("register_module of a temporary layer moves its tensors, draws nothing and keeps its mode") {
  tg::manual_seed(3);
  tg::nn::Linear source(3, 2);
  tg::Tensor w = source.weight;
  tg::nn::Dropout drop(0.3);
  drop.eval();
  tg::manual_seed(42);
  const float expected = tg::randn({1}).item<float>();
  tg::manual_seed(42);
  tg::nn::Module parent;
  auto shared = parent.register_module("fc", std::move(source));   // an xvalue is a temporary too
  CHECK(tg::randn({1}).item<float>() == expected);                   // moving drew nothing
  CHECK(shared->weight.impl() == w.impl());                          // the same tensor, not a copy
  auto d = parent.register_module("drop", std::move(drop));
  CHECK_FALSE(d->is_training());
  CHECK(d->name() == "Dropout(p=0.3)");
}

TEST_CASE("Linear in both styles: a value registered by reference, and libtorch's handle") {
  tg::manual_seed(4);
  struct ValueNet : tg::nn::Module {   // ours, unchanged
    tg::nn::Linear fc{4, 2};
    ValueNet() { register_module("fc", fc); }
    tg::Tensor forward(const tg::Tensor& x) override { return fc(x); }
  } v;
  CHECK_FALSE(v.fc.is_handle());
  CHECK(v.fc->weight.impl() == v.fc.weight.impl());    // -> on a value is the value
  CHECK(v.fc.get() == &v.fc);
  CHECK(v.fc.ptr().get() == &v.fc);
  CHECK(&*v.fc == &v.fc);

  struct TorchNet : tg::nn::Module {   // libtorch's
    tg::nn::Linear fc{nullptr};
    TorchNet() { fc = register_module("fc", tg::nn::Linear(4, 2)); }
    tg::Tensor forward(tg::Tensor x) { return fc->forward(x); }
  } t;
  CHECK(t.fc.is_handle());
  CHECK_FALSE(t.fc.is_empty());
  CHECK(t.named_parameters().at(0).second.impl() == t.fc->weight.impl());
  CHECK_FALSE(t.fc.weight.defined());                   // a handle's own members stay empty: use ->
  auto x = tg::randn({3, 4});
  check_close(t.fc(x), tg::linear(x, t.fc->weight, t.fc->bias));
  check_close(t.forward(x), t.fc(x));
  CHECK(t.fc.ptr().use_count() >= 2);                   // owned by the parent and shared by the handle
  t.eval();
  CHECK_FALSE(t.fc->is_training());
  std::shared_ptr<tg::nn::Linear> p = t.fc.ptr();
  CHECK(p.get() == t.fc.get());
  auto copy = t.fc.clone();                             // a handle clones the module it stands for
  CHECK(copy->name() == "Linear(in_features=4, out_features=2, bias=true)");
  check_close(copy->named_parameters().at(0).second, t.fc->weight);
}

TEST_CASE("A layer handle: empty until assigned, tg::Error naming the layer when used empty") {
  tg::nn::Linear fc{nullptr};
  CHECK(fc.is_handle());
  CHECK(fc.is_empty());
  CHECK_FALSE(static_cast<bool>(fc));
  CHECK_THROWS_WITH_AS(fc(tg::randn({1, 2})), doctest::Contains("Linear: accessing an empty handle"), tg::Error);
  CHECK_THROWS_AS(fc->weight, tg::Error);
  tg::nn::Module parent;
  CHECK_THROWS_WITH_AS(parent.register_module("fc", fc), doctest::Contains("empty Linear handle"), tg::Error);
  fc = tg::nn::Linear(2, 3);                            // libtorch: a new, unregistered module
  CHECK(fc->weight.shape() == tg::Shape{3, 2});
  parent.register_module("fc", fc);                     // a handle registers its module
  CHECK(parent.named_parameters().at(0).second.impl() == fc->weight.impl());
  tg::nn::Linear same = fc.ptr();                       // a second handle to it
  CHECK(same.get() == fc.get());
}

namespace {
/// Both styles for one layer type: a value registered by reference and a handle given a temporary;
/// both compute the same through (), -> and forward, and the parent sees the same names.
template <class L, class... Args>
void check_both_styles(const tg::Tensor& x, Args... args) {
  tg::nn::Module values_parent, handles_parent;
  tg::manual_seed(7);
  L value(args...);
  values_parent.register_module("m", value);
  tg::manual_seed(7);
  L handle{nullptr};
  CHECK(handle.is_empty());
  handle = handles_parent.register_module("m", L(args...));
  CHECK_FALSE(handle.is_empty());
  CHECK(names_of(values_parent.named_parameters()) == names_of(handles_parent.named_parameters()));
  CHECK(names_of(values_parent.named_buffers()) == names_of(handles_parent.named_buffers()));
  values_parent.eval();
  handles_parent.eval();
  CHECK_FALSE(handle->is_training());
  tg::Tensor a = value(x), b = handle(x), c = handle->forward(x), d = value->forward(x);
  check_close(a, b);
  check_close(b, c);
  check_close(a, d);
  CHECK(value->name() == handle->name());
  CHECK(handle.ptr() == handles_parent.named_children().at(0).second);
}
}  // namespace

TEST_CASE("Both styles on Linear, Conv2d, BatchNorm2d, Dropout, Embedding, LayerNorm, Sequential, the others") {
  check_both_styles<tg::nn::Linear>(tg::randn({2, 4}), 4, 3);
  check_both_styles<tg::nn::Conv2d>(tg::randn({1, 2, 5, 5}), 2, 3, 3);
  check_both_styles<tg::nn::BatchNorm2d>(tg::randn({2, 3, 4, 4}), 3);
  check_both_styles<tg::nn::Dropout>(tg::randn({4, 4}), 0.5);
  check_both_styles<tg::nn::Embedding>(tg::randint(0, 10, {3}), 10, 4);
  check_both_styles<tg::nn::LayerNorm>(tg::randn({2, 6}), std::vector<int64_t>{6});
  check_both_styles<tg::nn::BatchNorm1d>(tg::randn({4, 3}), 3);
  check_both_styles<tg::nn::GroupNorm>(tg::randn({2, 4, 3}), 2, 4);
  check_both_styles<tg::nn::Conv1d>(tg::randn({1, 2, 7}), 2, 3, 3);
  check_both_styles<tg::nn::MaxPool2d>(tg::randn({1, 1, 4, 4}), 2);
  check_both_styles<tg::nn::AvgPool2d>(tg::randn({1, 1, 4, 4}), 2);
  check_both_styles<tg::nn::AdaptiveAvgPool2d>(tg::randn({1, 1, 4, 4}), 2);
  check_both_styles<tg::nn::Flatten>(tg::randn({2, 3, 4}));
  check_both_styles<tg::nn::ReLU>(tg::randn({5}));
  check_both_styles<tg::nn::Sigmoid>(tg::randn({5}));
  check_both_styles<tg::nn::Tanh>(tg::randn({5}));
  check_both_styles<tg::nn::GELU>(tg::randn({5}));
  check_both_styles<tg::nn::SiLU>(tg::randn({5}));
  check_both_styles<tg::nn::Softplus>(tg::randn({5}));
  check_both_styles<tg::nn::LeakyReLU>(tg::randn({5}), 0.2);
  // Sequential: the same children in both, built from temporaries
  tg::nn::Module values_parent, handles_parent;
  tg::manual_seed(8);
  tg::nn::Sequential value(tg::nn::Linear(3, 4), tg::nn::ReLU());
  values_parent.register_module("seq", value);
  tg::manual_seed(8);
  tg::nn::Sequential handle{nullptr};
  handle = handles_parent.register_module("seq", tg::nn::Sequential(tg::nn::Linear(3, 4), tg::nn::ReLU()));
  CHECK(names_of(handles_parent.named_parameters()) == std::vector<std::string>{"seq.0.weight", "seq.0.bias"});
  auto x = tg::randn({2, 3});
  check_close(value(x), handle(x));
  check_close(handle->forward(x), value->forward(x));
  CHECK(handle->size() == 2);
  CHECK(handle[1]->as<tg::nn::ReLU>() != nullptr);   // libtorch's holder operator[]
  static_assert(std::is_same<tg::nn::LinearImpl, tg::nn::Linear>::value, "LinearImpl names the layer");
  static_assert(std::is_same<tg::nn::SequentialImpl, tg::nn::Sequential>::value, "SequentialImpl names it");
}

TEST_CASE("register_parameter and register_buffer of a tensor that is no member return the registered tensor") {
  struct Affine : tg::nn::Module {
    tg::Tensor W, b, steps;
    Affine() {
      W = register_parameter("W", tg::ones({2, 2}));       // libtorch's spelling
      b = register_parameter("b", tg::zeros({2}), /*requires_grad=*/false);
      steps = register_buffer("steps", tg::zeros({1}, tg::kInt64));
    }
  } m;
  CHECK(m.W.requires_grad());
  CHECK_FALSE(m.b.requires_grad());
  CHECK(names_of(m.named_parameters()) == std::vector<std::string>{"W", "b"});
  CHECK(m.named_parameters().at(0).second.impl() == m.W.impl());
  CHECK(m.named_buffers().at(0).second.impl() == m.steps.impl());
  m.to(tg::kFloat64);                                       // in place: the members see it
  CHECK(m.W.dtype() == tg::kFloat64);
  CHECK(m.steps.dtype() == tg::kInt64);
  CHECK(m.buffers().size() == 1);
}

TEST_CASE("Sequential(m1, m2, ...): values, holders, pointers and members, PyTorch's values") {
  tg::nn::Linear first(2, 3);
  tg::nn::Sequential seq(std::move(first), tg::nn::ReLU(), std::make_shared<tg::nn::Linear>(3, 1));
  CHECK(seq.size() == 3);
  set_linear(seq->at<tg::nn::Linear>(0), {0.1f, 0.2f, 0.3f, -0.4f, 0.5f, 0.6f}, {0.01f, -0.02f, 0.03f});
  set_linear(*seq->ptr<tg::nn::Linear>(2), {1.f, -1.f, 0.5f}, {0.1f});
  // PyTorch: s = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1)) with these weights;
  // s(torch.tensor([[1., 2.], [-1., 0.5]])) -> [[1.475], [0.11]]
  auto y = seq(values({1.f, 2.f, -1.f, 0.5f}, {2, 2}));
  check_close(y, values({1.475f, 0.11f}, {2, 1}), 1e-5, 1e-6);
  CHECK(names_of(seq.named_parameters()) == std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"});
  CHECK(seq[0]->as<tg::nn::Linear>() != nullptr);
  CHECK(seq.ptr(1)->as<tg::nn::Linear>() == nullptr);
  CHECK(seq.ptr<tg::nn::ReLU>(1) != nullptr);
  CHECK_THROWS_AS(seq[3], tg::IndexError);
  CHECK_THROWS_WITH_AS(seq.at<tg::nn::Linear>(1), doctest::Contains("not the type asked for"), tg::Error);

  tg::manual_seed(9);
  TwoLayer net(2);                                  // a holder of a libtorch-style forward(Tensor)
  tg::nn::Tanh tanh;                                // a member-like value: held by reference
  tg::nn::Sequential mixed(net, tanh);
  auto x = tg::randn({4, 2});
  check_close(mixed(x), tg::tanh(net(x)));
  mixed->push_back(tg::nn::Linear(1, 2));           // libtorch's seq->push_back
  mixed->push_back("out", TwoLayer(2));
  mixed.push_back(std::make_unique<tg::nn::ReLU>());   // ours, unchanged
  CHECK(mixed->size() == 5);
  std::vector<std::string> kids;
  for (const auto& c : mixed.named_children()) kids.push_back(c.first);
  CHECK(kids == std::vector<std::string>{"0", "1", "2", "out", "4"});
  int count = 0;
  for (const auto& m : *mixed) count += m != nullptr;
  CHECK(count == 5);
  tg::nn::Sequential more;
  more.extend(mixed);
  CHECK(more.size() == 5);
  CHECK(more[0].get() == net.get());                // extend shares
}

TEST_CASE("Sequential: clone() rebuilds the children, move keeps them, deep nesting is destroyed iteratively") {
  tg::manual_seed(10);
  tg::nn::Sequential seq(tg::nn::Linear(2, 2), tg::nn::ReLU());
  auto copy = seq.clone();
  CHECK(copy->named_parameters().at(0).second.impl() != seq.named_parameters().at(0).second.impl());
  check_close(copy->named_parameters().at(0).second, seq.named_parameters().at(0).second);
  tg::nn::Module* first = seq[0].get();
  tg::nn::Sequential moved(std::move(seq));          // a handle to a Sequential holding the same children
  CHECK(moved.is_handle());
  CHECK(moved[0].get() == first);
}

TEST_CASE("ModuleList and ModuleDict hold modules without running them") {
  tg::nn::ModuleList list(tg::nn::Linear(2, 2), tg::nn::Linear(2, 2));
  list->push_back(tg::nn::ReLU());
  CHECK(list->size() == 3);
  CHECK(names_of(list.named_parameters()) == std::vector<std::string>{"0.weight", "0.bias", "1.weight", "1.bias"});
  auto x = tg::randn({1, 2});
  tg::Tensor y = x;
  for (const auto& m : *list) y = (*m)(y);           // the user's forward over the list
  check_close(y, tg::relu(list->at<tg::nn::Linear>(1)(list->at<tg::nn::Linear>(0)(x))));
  CHECK_THROWS_WITH_AS(list(x), doctest::Contains("not implemented"), tg::Error);

  tg::nn::ModuleDict dict({{"enc", std::make_shared<tg::nn::Linear>(4, 2)}, {"act", std::make_shared<tg::nn::ReLU>()}});
  dict->insert("dec", tg::nn::Linear(2, 4));
  CHECK(dict->size() == 3);
  CHECK(dict->keys() == std::vector<std::string>{"enc", "act", "dec"});
  CHECK(dict->contains("act"));
  CHECK_FALSE(dict->contains("nope"));
  CHECK(dict["enc"]->as<tg::nn::Linear>()->weight.shape() == tg::Shape{2, 4});
  CHECK(dict->at<tg::nn::Linear>("dec").weight.shape() == tg::Shape{4, 2});
  CHECK(dict->values().size() == 3);
  CHECK(dict->items().at(1).first == "act");
  CHECK_THROWS_AS(dict["nope"], tg::IndexError);
  CHECK_THROWS_WITH_AS(dict->insert("enc", tg::nn::ReLU()), doctest::Contains("already registered"), tg::Error);
  CHECK(names_of(dict.named_parameters()) ==
        std::vector<std::string>{"enc.weight", "enc.bias", "dec.weight", "dec.bias"});
  auto copy = dict.clone();
  CHECK(copy->named_parameters().size() == 4);
}

TEST_CASE("modules(), named_modules(), named_children(), apply(): PyTorch's order and names") {
  struct Block : tg::nn::Module {
    tg::nn::Linear fc{2, 2};
    tg::nn::Sequential seq{tg::nn::Linear(2, 2), tg::nn::ReLU()};
    Block() {
      register_module("fc", fc);
      register_module("seq", seq);
    }
  } b;
  // PyTorch: the same Block: [n for n, _ in b.named_modules()] -> ['', 'fc', 'seq', 'seq.0', 'seq.1'],
  // named_modules(prefix='root') -> ['root', 'root.fc', 'root.seq', 'root.seq.0', 'root.seq.1'],
  // [n for n, _ in b.named_children()] -> ['fc', 'seq']
  std::vector<std::string> names, prefixed, kids;
  for (const auto& m : b.named_modules()) names.push_back(m.first);
  for (const auto& m : b.named_modules("root")) prefixed.push_back(m.first);
  for (const auto& c : b.named_children()) kids.push_back(c.first);
  CHECK(names == std::vector<std::string>{"", "fc", "seq", "seq.0", "seq.1"});
  CHECK(prefixed == std::vector<std::string>{"root", "root.fc", "root.seq", "root.seq.0", "root.seq.1"});
  CHECK(kids == std::vector<std::string>{"fc", "seq"});
  CHECK(b.modules().size() == 5);
  CHECK(b.modules(/*include_self=*/false).size() == 4);
  CHECK(b.modules().at(1).get() == &b.fc);
  CHECK(b.named_modules("", false).front().first == "fc");
  int linears = 0;
  b.apply([&linears](tg::nn::Module& m) {             // libtorch's weight-init idiom
    if (auto* lin = m.as<tg::nn::Linear>()) {
      tg::NoGradGuard no_grad;
      lin->weight.fill_(0.5);
      ++linears;
    }
  });
  CHECK(linears == 2);
  CHECK(b.seq->at<tg::nn::Linear>(0).weight.sum().item<float>() == doctest::Approx(2.0));
  std::vector<std::string> applied;
  b.apply([&applied](const std::string& name, tg::nn::Module&) { applied.push_back(name); }, "net");
  CHECK(applied == std::vector<std::string>{"net", "net.fc", "net.seq", "net.seq.0", "net.seq.1"});
  CHECK(b.parameters(/*recurse=*/false).empty());
  CHECK(b.fc.parameters(false).size() == 2);
  // the pointer of a module held by reference does not own it; one made by make_shared does
  CHECK(b.shared().use_count() == 0);
  auto owned = std::make_shared<tg::nn::Linear>(1, 1);
  CHECK(owned->shared() == owned);
}

TEST_CASE("as<T>() on modules and holders, is_training(), pretty_print and printing holders") {
  TwoLayer net(2);
  tg::nn::Module& base = *net;
  CHECK(base.as<TwoLayerImpl>() == net.get());
  CHECK(base.as<TwoLayer>() == net.get());            // a holder type names its Impl, as libtorch's
  CHECK(base.as<tg::nn::Linear>() == nullptr);
  CHECK(net->fc1.ptr()->as<tg::nn::Linear>() == net->fc1.get());
  const tg::nn::Module& cbase = base;
  CHECK(cbase.as<TwoLayerImpl>() == net.get());
  CHECK(net->is_training());
  net->eval();
  CHECK_FALSE(net->fc2->is_training());
  std::ostringstream os;
  os << net;
  CHECK(os.str() == "TwoLayerImpl(\n  (fc1): Linear(in_features=2, out_features=3, bias=true)\n"
                    "  (fc2): Linear(in_features=3, out_features=1, bias=true)\n)");
  std::ostringstream pretty;
  pretty << Pretty();
  CHECK(pretty.str() == "Pretty(k=3)");
  std::ostringstream empty;
  empty << TwoLayer(nullptr);
  CHECK(empty.str() == "ModuleHolder(empty)");
}

namespace {
tg::nn::Linear make_linear() {
  tg::nn::Linear l(3, 4);
  return l;   // a named value: moves into a handle
}
TwoLayer make_net() { return TwoLayer(5); }
tg::nn::Sequential make_seq() { return tg::nn::Sequential(tg::nn::Linear(2, 2), tg::nn::ReLU()); }
}  // namespace

TEST_CASE("Modules come back from factories: layers move into handles, holders share") {
  tg::nn::Linear l = make_linear();
  CHECK(l->weight.shape() == tg::Shape{4, 3});
  CHECK(l(tg::randn({1, 3})).shape() == tg::Shape{1, 4});
  TwoLayer net = make_net();
  CHECK(net->fc1->weight.shape() == tg::Shape{3, 5});
  tg::nn::Sequential seq = make_seq();
  CHECK(seq->size() == 2);
  auto w = tg::randn({5, 2});
  tg::nn::Embedding emb = tg::nn::Embedding::from_pretrained(w);   // libtorch's from_pretrained gives the holder
  CHECK(emb.is_handle());
  check_close(emb->weight, w);
  check_close(emb(tg::from_vector(std::vector<int64_t>{4})), w.index({4}).unsqueeze(0));
  emb = tg::nn::Embedding::from_pretrained(tg::zeros({3, 2}));      // and is assigned to one
  CHECK(emb->weight.shape() == tg::Shape{3, 2});
  tg::nn::Module parent;
  parent.register_module("fc", l);
  parent.register_module("seq", std::move(seq));
  CHECK(names_of(parent.named_parameters()) ==
        std::vector<std::string>{"fc.weight", "fc.bias", "seq.0.weight", "seq.0.bias"});
}

TEST_CASE("A libtorch-style module runs inside Sequential and as a registered child of a value module") {
  tg::manual_seed(11);
  struct Outer : tg::nn::Module {
    TwoLayerImpl inner{2};      // a value of a libtorch-style type, registered by reference
    Outer() { register_module("inner", inner); }
    tg::Tensor forward(const tg::Tensor& x) override { return inner(x); }   // Module::operator()
  } outer;
  auto x = tg::randn({3, 2});
  check_close(outer(x), outer.inner.forward(x));
  struct NoForward : tg::nn::Module {};
  tg::nn::Module parent;
  NoForward nf;
  parent.register_module("nf", nf);
  CHECK_THROWS_WITH_AS(nf(x), doctest::Contains("forward(const Tensor&) is not implemented"), tg::Error);
}
