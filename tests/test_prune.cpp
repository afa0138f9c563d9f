// tests/test_prune.cpp: tg::nn::utils::prune against masks and state_dict keys recorded from PyTorch
// for fixed weights without ties, PyTorch's state layout (weight_orig, weight_mask, the pruned weight
// recomputed before each forward), iterative composition, remove, and the errors.
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
