// tests/test_transformer.cpp: TransformerEncoderLayer, TransformerEncoder, TransformerDecoderLayer,
// TransformerDecoder and Transformer (nn/transformer.h) against PyTorch: outputs and the gradients of
// inputs and parameters recorded by tests/data/transformer_reference.py, with the PyTorch state_dict
// loaded by name; then PyTorch's parameter names, the errors, dropout in train and eval, the copies of
// the stacks, and a short training run.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "data/transformer_reference.h"
#include "testing.h"

using tg::Tensor;
namespace nn = tg::nn;

namespace {

Tensor to_tensor(const transformer_ref::Named& n) {
  return tg::from_vector(std::vector<float>(n.values), tg::Shape(n.shape.begin(), n.shape.end()));
}

/// The recorded inputs: key padding masks as bool, attention masks as recorded (float), the others
/// float32 leaves requiring grad.
std::map<std::string, Tensor> inputs_of(const transformer_ref::Case& c) {
  std::map<std::string, Tensor> in;
  for (const auto& n : c.inputs) {
    Tensor t = to_tensor(n);
    const bool mask = n.name.size() >= 4 && n.name.compare(n.name.size() - 4, 4, "mask") == 0;
    if (n.name.find("key_padding_mask") != std::string::npos) t = t > 0.5;
    else if (!mask) t.set_requires_grad(true);
    in[n.name] = t;
  }
  return in;
}

/// |got - want| <= rtol |want| + atol max(max|want|, 1e-3) elementwise: float32 tolerances scaled to the values.
void check_close_to(const Tensor& got, const transformer_ref::Named& want, double rtol = 1e-5, double atol = 1e-6) {
  CAPTURE(want.name);
  REQUIRE(got.defined());
  CHECK(got.shape() == tg::Shape(want.shape.begin(), want.shape.end()));
  const std::vector<double> x = got.to(tg::kFloat64).to_vector<double>();
  REQUIRE(x.size() == want.values.size());
  double scale = 0;
  for (float v : want.values) scale = std::max(scale, std::abs(static_cast<double>(v)));
  double worst = 0;
  std::size_t at = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double err = std::abs(x[i] - want.values[i]) - rtol * std::abs(static_cast<double>(want.values[i]));
    if (err > worst) worst = err, at = i;
  }
  CAPTURE(at);
  CAPTURE(scale);
  CHECK(worst <= atol * std::max(scale, 1e-3));
}

using Call = std::function<Tensor(std::map<std::string, Tensor>&)>;

/// Loads case `index`'s state_dict into module by name (checking that the names and their order are
/// PyTorch's), runs call in eval(), and checks the output and the gradients of sum(out * w).
void check_case(std::size_t index, const std::string& name, nn::Module& module, const Call& call) {
  REQUIRE(index < transformer_ref::kCases.size());
  const transformer_ref::Case& c = transformer_ref::kCases[index];
  REQUIRE(c.name == name);
  CAPTURE(c.name);
  module.eval();
  std::vector<std::string> keys, want_keys;
  for (const auto& [key, p] : module.named_parameters()) keys.push_back(key);
  for (const auto& n : c.params) want_keys.push_back(n.name);
  CHECK(keys == want_keys);
  {
    tg::NoGradGuard no_grad;
    for (const auto& entry : module.named_parameters()) {
      const std::string& key = entry.first;
      const Tensor& p = entry.second;
      auto it = std::find_if(c.params.begin(), c.params.end(), [&](const auto& n) { return n.name == key; });
      REQUIRE(it != c.params.end());
      Tensor value = to_tensor(*it);
      REQUIRE(p.shape() == value.shape());
      tg::prim::copy_(p.data(), value.data());
    }
  }
  auto in = inputs_of(c);
  const Tensor out = call(in);
  check_close_to(out, c.out);
  std::vector<float> w(static_cast<std::size_t>(out.numel()));
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = std::sin(0.7f * static_cast<float>(i) + 9.0f);
  tg::sum(out * tg::from_vector(w, out.shape())).backward();
  for (const auto& g : c.input_grads) check_close_to(in.at(g.name).grad(), g);
  const auto params = module.named_parameters();
  REQUIRE(params.size() == c.param_grads.size());
  for (std::size_t i = 0; i < params.size(); ++i) {
    REQUIRE(params[i].first == c.param_grads[i].name);
    check_close_to(params[i].second.grad(), c.param_grads[i]);
  }
}

nn::TransformerLayerOptions small() { return nn::TransformerLayerOptions(8, 2).dim_feedforward(16); }

}  // namespace

TEST_CASE("transformer: generate_square_subsequent_mask is PyTorch's") {
  const Tensor m = nn::generate_square_subsequent_mask(3);
  CHECK(m.dtype() == tg::kFloat32);
  CHECK(m.shape() == tg::Shape{3, 3});
  const auto v = m.to_vector<double>();
  const double inf = std::numeric_limits<double>::infinity();
  CHECK(v == std::vector<double>{0, -inf, -inf, 0, 0, -inf, 0, 0, 0});
  CHECK(nn::Transformer::generate_square_subsequent_mask(2, tg::kFloat64).dtype() == tg::kFloat64);
  CHECK(nn::generate_square_subsequent_mask(0).numel() == 0);
}

TEST_CASE("transformer: encoder layers match PyTorch (outputs, input and parameter gradients)") {
  SUBCASE("post-norm relu, (L, N, E), causal src_mask") {
    nn::TransformerEncoderLayer m(small());
    check_case(0, "encoder layer post-norm relu (L, N, E) causal src_mask", m,
               [&](auto& in) { return m.forward(in["src"], in["src_mask"]); });
  }
  SUBCASE("norm_first gelu batch_first, causal src_mask and key padding mask") {
    nn::TransformerEncoderLayer m(small().norm_first(true).activation("gelu").batch_first(true));
    check_case(1, "encoder layer norm_first gelu batch_first causal src_mask and key padding mask", m,
               [&](auto& in) { return m.forward(in["src"], in["src_mask"], in["src_key_padding_mask"]); });
  }
  SUBCASE("post-norm gelu batch_first, key padding mask only") {
    nn::TransformerEncoderLayer m(small().activation("gelu").batch_first(true));
    check_case(2, "encoder layer post-norm gelu batch_first key padding mask", m,
               [&](auto& in) { return m.forward(in["src"], Tensor(), in["src_key_padding_mask"]); });
  }
  SUBCASE("norm_first relu with the is_causal hint") {
    nn::TransformerEncoderLayer m(small().norm_first(true));
    check_case(3, "encoder layer norm_first relu (L, N, E) is_causal", m,
               [&](auto& in) { return m.forward(in["src"], in["src_mask"], Tensor(), true); });
  }
  SUBCASE("no bias, unbatched, one-input call") {
    nn::TransformerEncoderLayer m(small().bias(false));
    CHECK_FALSE(m.norm1.bias.defined());
    check_case(4, "encoder layer no bias unbatched", m, [&](auto& in) { return m(in["src"]); });
  }
}

TEST_CASE("transformer: a 2-layer TransformerEncoder with a final norm matches PyTorch") {
  nn::TransformerEncoderLayer layer(small().batch_first(true));
  nn::TransformerEncoder enc(layer, 2, nn::LayerNorm(std::vector<int64_t>{8}));
  CHECK(enc.num_layers() == 2);
  CHECK(enc.layers.size() == 2);
  check_case(5, "encoder 2 layers + norm batch_first causal mask and key padding mask", enc,
             [&](auto& in) { return enc.forward(in["src"], in["mask"], in["src_key_padding_mask"]); });
}

TEST_CASE("transformer: decoder layers and a 2-layer TransformerDecoder match PyTorch") {
  SUBCASE("post-norm relu, (T, N, E), causal tgt_mask, memory key padding mask") {
    nn::TransformerDecoderLayer m(small());
    check_case(6, "decoder layer post-norm relu (T, N, E) causal tgt_mask and memory key padding mask", m,
               [&](auto& in) {
                 return m.forward(in["tgt"], in["memory"], in["tgt_mask"], Tensor(), Tensor(),
                                  in["memory_key_padding_mask"]);
               });
  }
  SUBCASE("norm_first gelu batch_first, tgt_is_causal and tgt key padding mask") {
    nn::TransformerDecoderLayer m(small().norm_first(true).activation("gelu").batch_first(true));
    check_case(7, "decoder layer norm_first gelu batch_first tgt_is_causal and tgt key padding mask", m,
               [&](auto& in) {
                 return m(in["tgt"], in["memory"], in["tgt_mask"], Tensor(), in["tgt_key_padding_mask"], Tensor(), true);
               });
  }
  SUBCASE("2 layers + norm") {
    nn::TransformerDecoderLayer layer(small().batch_first(true));
    nn::TransformerDecoder dec(layer, 2, std::make_shared<nn::LayerNorm>(std::vector<int64_t>{8}));
    check_case(8, "decoder 2 layers + norm batch_first causal tgt_mask", dec,
               [&](auto& in) { return dec.forward(in["tgt"], in["memory"], in["tgt_mask"]); });
  }
}

TEST_CASE("transformer: Transformer matches PyTorch") {
  nn::Transformer t(nn::TransformerOptions(8, 2).num_encoder_layers(1).num_decoder_layers(2).dim_feedforward(16)
                        .batch_first(true));
  check_case(9, "transformer 1 + 2 layers batch_first causal tgt_mask, src key padding mask as memory's", t,
             [&](auto& in) {
               return t.forward(in["src"], in["tgt"], Tensor(), in["tgt_mask"], Tensor(), in["src_key_padding_mask"],
                                Tensor(), in["memory_key_padding_mask"]);
             });
}

TEST_CASE("transformer: bad configurations and inputs raise errors naming the module and the shapes") {
  auto message = [](const std::function<void()>& f) -> std::string {
    try {
      f();
    } catch (const tg::ShapeError& e) {
      return std::string("ShapeError: ") + e.what();
    } catch (const tg::Error& e) {
      return std::string("Error: ") + e.what();
    }
    return "no error";
  };
  std::string m = message([] { nn::TransformerEncoderLayer(8, 3); });
  CHECK(m.find("ShapeError: TransformerEncoderLayer") == 0);
  CHECK(m.find("d_model (8) must be divisible by nhead (3)") != std::string::npos);
  m = message([] { nn::TransformerDecoderLayer(10, 4); });
  CHECK(m.find("ShapeError: TransformerDecoderLayer") == 0);
  m = message([] { nn::TransformerEncoderLayer(small().activation("tanh")); });
  CHECK(m.find("activation should be relu/gelu, not tanh") != std::string::npos);
  m = message([] { nn::TransformerEncoderLayer(small().dropout(1.5)); });
  CHECK(m.find("Error: TransformerEncoderLayer") == 0);

  nn::TransformerEncoderLayer enc(small());
  m = message([&] { enc(tg::randn({5, 2, 7})); });
  CHECK(m.find("ShapeError: TransformerEncoderLayer") == 0);
  CHECK(m.find("[5, 2, 7]") != std::string::npos);
  CHECK(m.find("d_model is 8") != std::string::npos);
  m = message([&] { enc(tg::randn({8})); });
  CHECK(m.find("ShapeError: TransformerEncoderLayer") == 0);
  m = message([] { nn::TransformerEncoder(nn::TransformerEncoderLayer(small()), 0); });
  CHECK(m.find("Error: TransformerEncoder: num_layers must be at least 1") == 0);

  nn::TransformerDecoderLayer dec(small());
  m = message([&] { dec(tg::randn({4, 2, 8}), tg::randn({5, 3, 8})); });
  CHECK(m.find("ShapeError: TransformerDecoderLayer") == 0);
  CHECK(m.find("batch number") != std::string::npos);
  m = message([&] { dec(tg::randn({4, 2, 8}), tg::randn({5, 2, 6})); });
  CHECK(m.find("memory of shape [5, 2, 6]") != std::string::npos);
}

TEST_CASE("transformer: dropout acts in train mode only, from the manual_seed stream") {
  tg::manual_seed(3);
  nn::TransformerEncoderLayer layer(nn::TransformerLayerOptions(8, 2).dim_feedforward(16).dropout(0.5));
  const Tensor x = tg::randn({4, 2, 8});
  tg::manual_seed(11);
  const Tensor a = layer(x);
  tg::manual_seed(11);
  const Tensor b = layer(x);
  testing::check_close(a, b, 0, 0);   // the same draws
  layer.eval();
  const Tensor e1 = layer(x), e2 = layer(x);
  testing::check_close(e1, e2, 0, 0);
  CHECK(tg::max(tg::abs(a - e1)).item<double>() > 1e-3);
  layer.train();
  const Tensor c = layer(x);
  CHECK(tg::max(tg::abs(a - c)).item<double>() > 1e-3);   // fresh draws
}

TEST_CASE("transformer: the stacks hold independent copies, and clone() copies a stack") {
  nn::TransformerEncoderLayer layer(small());
  nn::TransformerEncoder enc(layer, 2);
  CHECK(enc.norm.is_empty());
  CHECK(nn::TransformerEncoder(layer, 1, nullptr).norm.is_empty());   // PyTorch's norm=None
  auto& l0 = enc.layers.at<nn::TransformerEncoderLayer>(0);
  auto& l1 = enc.layers.at<nn::TransformerEncoderLayer>(1);
  testing::check_close(l0.linear1.weight, layer.linear1.weight, 0, 0);
  testing::check_close(l1.linear1.weight, layer.linear1.weight, 0, 0);
  {
    tg::NoGradGuard g;
    tg::prim::copy_(l0.linear1.weight.data(), tg::zeros(l0.linear1.weight.shape()).data());
  }
  CHECK(tg::max(tg::abs(l1.linear1.weight)).item<double>() > 0);
  CHECK(tg::max(tg::abs(layer.linear1.weight)).item<double>() > 0);
  std::vector<std::string> keys;
  for (const auto& [k, p] : enc.named_parameters()) keys.push_back(k);
  REQUIRE(keys.size() == 24);
  CHECK(keys.front() == "layers.0.self_attn.in_proj_weight");
  CHECK(keys.back() == "layers.1.norm2.bias");

  nn::TransformerDecoder dec(nn::TransformerDecoderLayer(small()), 2, nn::LayerNorm(std::vector<int64_t>{8}));
  std::unique_ptr<nn::TransformerDecoder> copy = dec.clone();
  const Tensor tgt = tg::randn({3, 2, 8}), mem = tg::randn({4, 2, 8});
  dec.eval();
  copy->eval();
  testing::check_close((*copy)(tgt, mem), dec(tgt, mem), 0, 0);
  CHECK(copy->named_parameters().back().first == "norm.bias");
  std::ostringstream os;
  os << dec;
  CHECK(os.str().find("TransformerDecoderLayer") != std::string::npos);
  CHECK(os.str().find("multihead_attn") != std::string::npos);
}

TEST_CASE("transformer: a 1-layer encoder learns a toy task with Adam") {
  // Each position's output should be the mean of the sequence's inputs: attention has to mix positions.
  tg::manual_seed(5);
  nn::TransformerEncoderLayer layer(nn::TransformerLayerOptions(8, 2).dim_feedforward(32).dropout(0).batch_first(true));
  nn::TransformerEncoder enc(layer, 1);
  nn::Linear head(8, 8);
  std::vector<Tensor> params = enc.parameters();
  for (const Tensor& p : head.parameters()) params.push_back(p);
  tg::optim::Adam opt(params, 1e-2);
  const Tensor x = tg::randn({16, 5, 8});
  const Tensor target = tg::expand(tg::mean(x, 1, true), {16, 5, 8});
  double first = 0, last = 0;
  for (int step = 0; step < 30; ++step) {
    opt.zero_grad();
    Tensor loss = tg::mse_loss(head(enc(x)), target);
    loss.backward();
    opt.step();
    (step == 0 ? first : last) = loss.item<double>();
  }
  CAPTURE(first);
  CAPTURE(last);
  CHECK(last < 0.5 * first);
}

TEST_CASE("transformer: gradcheck of a tiny float64 decoder layer (norm_first, gelu, causal mask)") {
  tg::manual_seed(7);
  nn::TransformerDecoderLayer layer(
      nn::TransformerLayerOptions(4, 2).dim_feedforward(6).norm_first(true).activation("gelu"));
  layer.to(tg::kFloat64);
  layer.eval();
  const Tensor mask = nn::generate_square_subsequent_mask(3, tg::kFloat64);
  const Tensor tgt = testing::randn64({3, 1, 4}, 21), memory = testing::randn64({2, 1, 4}, 22);
  CHECK(tg::autograd::gradcheck(
      [&](const std::vector<Tensor>& in) { return layer.forward(in[0], in[1], mask); }, {tgt, memory}));
}

TEST_CASE("transformer: an activation function of the caller's is used, and copied with the layer") {
  tg::manual_seed(2);
  nn::TransformerEncoderLayer named(small().activation("gelu"));
  int calls = 0;
  nn::TransformerEncoderLayer custom(small().activation(
      [&calls](const Tensor& x) {
        ++calls;
        return tg::gelu(x);
      },
      "my_gelu"));
  {
    tg::NoGradGuard g;
    const auto from = named.named_parameters(), to = custom.named_parameters();
    REQUIRE(from.size() == to.size());
    for (std::size_t i = 0; i < from.size(); ++i) tg::prim::copy_(to[i].second.data(), from[i].second.data());
  }
  named.eval();
  custom.eval();
  const Tensor x = tg::randn({3, 2, 8});
  testing::check_close(custom(x), named(x), 0, 0);
  CHECK(calls == 1);
  nn::TransformerEncoder enc(custom, 2);
  enc.eval();
  enc(x);
  CHECK(calls == 3);
  CHECK(custom.options().activation_ == "my_gelu");
}
