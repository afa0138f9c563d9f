// tests/test_prune.cpp: tg::nn::utils::prune against masks and state_dict keys recorded from PyTorch
// for fixed weights without ties, PyTorch's state layout (weight_orig, weight_mask, the pruned weight
// recomputed before each forward), iterative composition, remove, the errors, and pruned modules
// through clone() and to(dtype).
#include <algorithm>
#include <cmath>

#include "testing.h"

using tg::Tensor;
namespace prune = tg::nn::utils::prune;

namespace {

/// w[a][b] = sin(off + 7a + 3b) in float32: distinct magnitudes, the same weights as the PyTorch script.
Tensor sin_weights(int64_t o, int64_t i, double off) {
  std::vector<double> v;
  for (int64_t a = 0; a < o; ++a)
    for (int64_t b = 0; b < i; ++b) v.push_back(std::sin(off + 7.0 * double(a) + 3.0 * double(b)));
  return tg::from_vector<double>(v, {o, i}).to(tg::kFloat32);
}

struct Net {
  tg::nn::Sequential model;
  tg::nn::Linear* fc1;
  tg::nn::Linear* fc2;
  Net() {
    fc1 = &model.add<tg::nn::Linear>(5, 4);
    model.add<tg::nn::ReLU>();
    fc2 = &model.add<tg::nn::Linear>(4, 3);
    tg::NoGradGuard g;
    tg::prim::copy_(fc1->weight.data(), sin_weights(4, 5, 1.0).data());
    tg::prim::copy_(fc2->weight.data(), sin_weights(3, 4, 2.0).data());
  }
};

std::vector<int64_t> mask_of(const tg::nn::Module& m, const std::string& key) {
  for (const auto& b : m.named_buffers())
    if (b.first == key) return b.second.to(tg::kInt64).to_vector<int64_t>();
  FAIL("no buffer " << key);
  return {};
}

std::vector<std::string> state_keys(const tg::nn::Module& m) {
  std::vector<std::string> keys;
  for (const auto& p : m.named_parameters()) keys.push_back(p.first);
  for (const auto& b : m.named_buffers()) keys.push_back(b.first);
  std::sort(keys.begin(), keys.end());
  return keys;
}

}  // namespace

// Recorded with PyTorch 1.13 (/usr/bin/python3): the same Sequential(Linear(5, 4), ReLU, Linear(4, 3))
// with weight[a][b] = sin(off + 7a + 3b) (off 1 and 2), then in order:
//   prune.l1_unstructured(fc1, "weight", amount=0.3); prune.l1_unstructured(fc1, "weight", amount=0.5)
//   prune.ln_structured(fc2, "weight", amount=1, n=2, dim=0); prune.ln_structured(fc2, "weight", amount=0.5, n=1, dim=1)
//   prune.global_unstructured([(fc1, "weight"), (fc2, "weight")], pruning_method=prune.L1Unstructured, amount=0.25)
//   prune.remove(fc1, "weight")
// printing fc.weight_mask.flatten() and list(model.state_dict().keys()) after each step.
TEST_CASE("prune: masks, composition and state_dict keys as PyTorch's") {
  Net net;
  tg::nn::Linear& fc1 = *net.fc1;
  tg::nn::Linear& fc2 = *net.fc2;
  const Tensor leaf = fc1.weight;   // the parameter handle an optimizer would hold
  prune::l1_unstructured(fc1, "weight", 0.3);
  CHECK(mask_of(fc1, "weight_mask") == std::vector<int64_t>{1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0});
  prune::l1_unstructured(fc1, "weight", 0.5);
  CHECK(mask_of(fc1, "weight_mask") == std::vector<int64_t>{0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0});
  prune::ln_structured(fc2, "weight", 1, 2.0, 0);
  CHECK(mask_of(fc2, "weight_mask") == std::vector<int64_t>{1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0});
  prune::ln_structured(fc2, "weight", 0.5, 1.0, 1);
  CHECK(mask_of(fc2, "weight_mask") == std::vector<int64_t>{0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 0, 0});
  CHECK(state_keys(net.model) == std::vector<std::string>{"0.bias", "0.weight_mask", "0.weight_orig", "2.bias",
                                                          "2.weight_mask", "2.weight_orig"});
  // the parameter order within a module is PyTorch's: bias, then weight_orig
  std::vector<std::string> fc1_params;
  for (const auto& p : fc1.named_parameters()) fc1_params.push_back(p.first);
  CHECK(fc1_params == std::vector<std::string>{"bias", "weight_orig"});
  CHECK(prune::is_pruned(net.model));

  prune::global_unstructured({{&fc1, "weight"}, {&fc2, "weight"}}, 0.25);
  CHECK(mask_of(fc1, "weight_mask") == std::vector<int64_t>{0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0});
  CHECK(mask_of(fc2, "weight_mask") == std::vector<int64_t>{0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0});

  prune::remove(fc1, "weight");
  CHECK(state_keys(net.model) == std::vector<std::string>{"0.bias", "0.weight", "2.bias", "2.weight_mask",
                                                          "2.weight_orig"});
  // PyTorch: fc1.weight after remove, the pruned entries zero
  const std::vector<float> want = {0, 0, 0, 0, 0, 0.9893582463264465f, -0.9999902248382568f, 0.9906073808670044f,
                                   -0.9613974690437317f, 0.9129452705383301f, 0, 0, 0, 0, 0.9563759565353394f,
                                   0, 0, 0, 0, 0};
  CHECK(fc1.weight.to_vector<float>() == want);
  CHECK(fc1.weight.is_leaf());
  CHECK(fc1.weight.data().raw_data() == leaf.data().raw_data());   // the same storage as the original parameter
  TG_CHECK_THROWS(prune::remove(fc1, "weight"), tg::Error, "has to be pruned before pruning can be removed");
}

// Recorded with PyTorch 1.13: prune.global_unstructured on the unpruned net with amount=0.5.
TEST_CASE("prune: global_unstructured on fresh parameters, against PyTorch") {
  Net net;
  prune::global_unstructured({{net.fc1, "weight"}, {net.fc2, "weight"}}, 0.5);
  CHECK(mask_of(*net.fc1, "weight_mask") ==
        std::vector<int64_t>{1, 1, 0, 0, 0, 1, 1, 1, 1, 1, 0, 1, 1, 1, 1, 0, 0, 0, 0, 0});
  CHECK(mask_of(*net.fc2, "weight_mask") == std::vector<int64_t>{1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 0, 0});
}

TEST_CASE("prune: the pruned weight is recomputed before each forward and trains weight_orig") {
  Net net;
  tg::nn::Linear& fc1 = *net.fc1;
  tg::optim::SGD opt(net.model.parameters(), tg::optim::SGDOptions(0.1));
  prune::l1_unstructured(fc1, "weight", 8);   // an absolute count
  const Tensor orig = fc1.named_parameters()[1].second;
  const Tensor mask = fc1.named_buffers()[0].second;
  CHECK(tg::sum(mask).item() == 12);
  Tensor x = tg::randn({6, 5});
  for (int step = 0; step < 2; ++step) {
    opt.zero_grad();
    Tensor y = net.model(x);
    tg::sum(y * y).backward();
    // the gradient reaches weight_orig through the mask: zero at pruned entries
    const auto g = orig.grad().to_vector<float>();
    const auto mv = mask.to_vector<float>();
    for (std::size_t i = 0; i < g.size(); ++i)
      if (mv[i] == 0) CHECK(g[i] == 0);
    opt.step();   // the optimizer built before pruning updates the same leaf
    // after the step, forward sees orig * mask again
    net.model(x);
    testing::check_close(fc1.weight, orig * mask);
  }
  // random_unstructured prunes the requested count among the unpruned entries
  tg::manual_seed(3);
  prune::random_unstructured(*net.fc2, "weight", 0.5);
  CHECK(tg::sum(net.fc2->named_buffers()[0].second).item() == 6);
  prune::random_unstructured(*net.fc2, "weight", 3);
  CHECK(tg::sum(net.fc2->named_buffers()[0].second).item() == 3);
}

TEST_CASE("prune: bad arguments raise, naming the function") {
  Net net;
  TG_CHECK_THROWS(prune::l1_unstructured(*net.fc1, "kernel", 0.5), tg::Error,
                  "l1_unstructured: module Linear(in_features=5, out_features=4, bias=true) has no parameter named 'kernel'");
  TG_CHECK_THROWS(prune::l1_unstructured(*net.fc1, "weight", 1.5), tg::Error,
                  "should either be a float in the range [0, 1] or a non-negative integer");
  TG_CHECK_THROWS(prune::l1_unstructured(*net.fc1, "weight", 21), tg::Error,
                  "amount=21 should be smaller than the number of parameters to prune=20");
  TG_CHECK_THROWS(prune::ln_structured(*net.fc1, "bias", 1, 2.0, 0), tg::ShapeError, "at least 2 dims");
  TG_CHECK_THROWS(prune::remove(*net.fc1, "weight"), tg::Error, "has to be pruned");
  CHECK_FALSE(prune::is_pruned(net.model));
}

// ------------------------------------------------------------------------------------------------
// Copies and casts of pruned modules

namespace {

/// Conv2d(2, 3, 3) -> ReLU -> Linear(12, 4) on (N, 2, 4, 4) inputs.
struct ConvNet : tg::nn::Cloneable<ConvNet> {
  tg::nn::Conv2d conv{2, 3, 3};
  tg::nn::Linear fc{12, 4};
  ConvNet() {
    register_module("conv", conv);
    register_module("fc", fc);
  }
  Tensor forward(const Tensor& x) override { return fc(tg::relu(conv(x)).reshape({x.size(0), 12})); }
};

std::vector<std::string> names_in_order(const tg::nn::Module& m) {
  std::vector<std::string> out;
  for (const auto& p : m.named_parameters()) out.push_back(p.first);
  out.push_back("|");
  for (const auto& b : m.named_buffers()) out.push_back(b.first);
  return out;
}

Tensor state(const tg::nn::Module& m, const std::string& key) {
  for (const auto& p : m.named_parameters())
    if (p.first == key) return p.second;
  for (const auto& b : m.named_buffers())
    if (b.first == key) return b.second;
  FAIL("no parameter or buffer " << key);
  return Tensor();
}

}  // namespace

TEST_CASE("prune: clone() of a pruned Conv2d and Linear copies weight_orig, weight_mask and the hook apart") {
  // PyTorch keeps the reparametrization in a copy: replicate shares the pruning hook, which computes
  // weight = weight_orig * weight_mask on the module it is called with, and deepcopy copies the
  // attributes; prune.remove on the copy leaves the original pruned.
  tg::manual_seed(4);
  ConvNet net;
  int user_hook_calls = 0;
  net.fc.register_forward_pre_hook([&](tg::nn::Module&, const Tensor&) { ++user_hook_calls; });
  prune::ln_structured(net.conv, "weight", 1, 2.0, 0);
  prune::l1_unstructured(net.conv, "bias", 1);
  prune::l1_unstructured(net.fc, "weight", 0.4);
  const Tensor x = tg::randn({5, 2, 4, 4});
  const Tensor y = net(x);

  std::unique_ptr<ConvNet> copy = net.clone();
  CHECK(names_in_order(*copy) == names_in_order(net));
  CHECK(names_in_order(net) == std::vector<std::string>{"conv.weight_orig", "conv.bias_orig", "fc.bias",
                                                        "fc.weight_orig", "|", "conv.weight_mask", "conv.bias_mask",
                                                        "fc.weight_mask"});
  CHECK(prune::is_pruned(*copy));
  for (const std::string key : {"conv.weight_orig", "conv.bias_orig", "fc.weight_orig", "conv.weight_mask",
                                "conv.bias_mask", "fc.weight_mask"}) {
    CAPTURE(key);
    CHECK(state(*copy, key).to_vector<float>() == state(net, key).to_vector<float>());
    CHECK(state(*copy, key).data().storage() != state(net, key).data().storage());
    CHECK(state(*copy, key).requires_grad() == state(net, key).requires_grad());
  }
  // the copy's pruned weight is its own orig * mask at once, and its forward gives the original's
  testing::check_close(copy->fc.weight, state(*copy, "fc.weight_orig") * state(*copy, "fc.weight_mask"), 0, 0);
  user_hook_calls = 0;
  CHECK((*copy)(x).to_vector<float>() == y.to_vector<float>());
  CHECK(user_hook_calls == 1);   // the user's hook came along, and the pruning hook ran for the copy

  // the copy trains its own weight_orig, through its own mask; the original is untouched
  const Tensor net_weight = net.fc.weight;
  const std::vector<float> net_orig = state(net, "fc.weight_orig").to_vector<float>();
  {
    tg::NoGradGuard no_grad;
    state(*copy, "fc.weight_orig").fill_(1.0);
  }
  (*copy)(x).sum().backward();
  const auto g = state(*copy, "fc.weight_orig").grad().to_vector<float>();
  const auto mask = state(*copy, "fc.weight_mask").to_vector<float>();
  REQUIRE(g.size() == mask.size());
  int nonzero = 0;
  for (std::size_t i = 0; i < g.size(); ++i) {
    if (mask[i] == 0) CHECK(g[i] == 0);
    nonzero += g[i] != 0;
  }
  CHECK(nonzero > 0);
  CHECK_FALSE(state(net, "fc.weight_orig").grad().defined());
  CHECK(net.fc.weight.impl() == net_weight.impl());   // the copy's hook wrote the copy's weight only
  CHECK(state(net, "fc.weight_orig").to_vector<float>() == net_orig);
  CHECK(net(x).to_vector<float>() == y.to_vector<float>());

  // remove() on the copy: the copy's fc has a plain weight again, registered after its bias, and its
  // hook is gone; the original stays pruned. A copy of that copy keeps its order and pruning.
  prune::remove(copy->fc, "weight");
  CHECK(names_in_order(copy->fc) == std::vector<std::string>{"bias", "weight", "|"});
  CHECK(copy->fc.weight.to_vector<float>() == mask);   // orig * mask with orig all ones
  CHECK(prune::is_pruned(net.fc));
  std::unique_ptr<ConvNet> second = copy->clone();
  CHECK(names_in_order(*second) == names_in_order(*copy));
  CHECK((*second)(x).to_vector<float>() == (*copy)(x).to_vector<float>());
  // pruning the second copy again composes with the mask it copied: 1 of the 2 channels left
  prune::ln_structured(second->conv, "weight", 1, 2.0, 0);
  const auto m2 = state(*second, "conv.weight_mask").to_vector<float>();
  CHECK(std::count(m2.begin(), m2.end(), 1.0f) == 18);   // one channel of 2 x 3 x 3
  const std::vector<int64_t> m1 = mask_of(*copy, "conv.weight_mask");   // the first copy's is unchanged
  CHECK(std::count(m1.begin(), m1.end(), 1) == 36);
}

TEST_CASE("prune: half(), double_() and to(dtype) cast weight_orig and weight_mask, the forward runs in that dtype") {
  // PyTorch 2.15.0: m = torch.nn.Linear(4, 3); prune.l1_unstructured(m, 'weight', 0.5); m.half();
  // {k: v.dtype for k, v in m.state_dict().items()} -> bias, weight_orig, weight_mask: torch.float16,
  // and m(torch.randn(2, 4).half()).dtype -> torch.float16.
  tg::manual_seed(6);
  ConvNet net;
  prune::l1_unstructured(net.fc, "weight", 0.5);
  prune::ln_structured(net.conv, "weight", 1, 1.0, 0);
  const Tensor x = tg::randn({3, 2, 4, 4});
  const Tensor y32 = net(x);
  for (tg::DType dt : {tg::kFloat64, tg::kFloat16, tg::kBFloat16}) {   // float64 first: its round trip is exact
    const std::string dtype = tg::dtype_name(dt);
    CAPTURE(dtype);
    net.to(dt);
    for (const std::string key :
         {"fc.weight_orig", "fc.weight_mask", "fc.bias", "conv.weight_orig", "conv.weight_mask"})
      CHECK(state(net, key).dtype() == dt);
    const Tensor y = net(x.to(dt));
    CHECK(y.dtype() == dt);
    CHECK(net.fc.weight.dtype() == dt);
    // 16-bit weights and inputs: each output is a sum of 18 + 12 rounded products, a few percent at most
    const double tol = dt == tg::kFloat64 ? 1e-6 : dt == tg::kFloat16 ? 2e-2 : 1e-1;
    testing::check_close(y.to(tg::kFloat32), y32, tol, tol);
    net.float_();
  }
  CHECK(state(net, "fc.weight_mask").dtype() == tg::kFloat32);
}
