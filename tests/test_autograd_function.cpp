// tests/test_autograd_function.cpp: libtorch's custom autograd Function (autograd/function.h): the C++
// tutorial's LinearFunction and MulConstant written as a libtorch user writes them, checked against
// the built-in ops, PyTorch's numbers and gradcheck; several outputs, non-differentiable and dirty
// ones, needs_input_grad, saved_data's kinds, and the errors of a wrong backward.
#include <optional>
#include <string>
#include <vector>

#include "testing.h"

using tg::Tensor;
using tg::autograd::AutogradContext;
using tg::autograd::Function;
using tg::autograd::variable_list;

namespace {

// The tutorial's LinearFunction (docs: "Custom autograd functions" of libtorch's C++ frontend).
struct LinearFunction : public Function<LinearFunction> {
  static Tensor forward(AutogradContext* ctx, Tensor input, Tensor weight, Tensor bias = Tensor()) {
    ctx->save_for_backward({input, weight, bias});
    auto output = input.matmul(weight.t());
    if (bias.defined()) output = output + bias.unsqueeze(0).expand(output.shape());
    return output;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    auto saved = ctx->get_saved_variables();
    auto input = saved[0];
    auto weight = saved[1];
    auto bias = saved[2];
    auto grad_output = grad_outputs[0];
    auto grad_input = grad_output.matmul(weight);
    auto grad_weight = grad_output.t().matmul(input);
    auto grad_bias = Tensor();
    if (bias.defined()) grad_bias = grad_output.sum(0);
    return {grad_input, grad_weight, grad_bias};
  }
};

// The tutorial's MulConstant: a non-tensor argument, kept in saved_data.
struct MulConstant : public Function<MulConstant> {
  static Tensor forward(AutogradContext* ctx, Tensor tensor, double constant) {
    ctx->saved_data["constant"] = constant;
    return tensor * constant;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    return {grad_outputs[0] * ctx->saved_data["constant"].toDouble(), Tensor()};   // none for the double
  }
};

// Two outputs, a*b and a+b: one backward call gets both gradients.
struct ProductAndSum : public Function<ProductAndSum> {
  static bool materialize;            // set_materialize_grads
  static std::vector<bool> seen;      // which grad_outputs backward found defined
  static int calls;
  static variable_list forward(AutogradContext* ctx, Tensor a, Tensor b) {
    ctx->save_for_backward({a, b});
    ctx->set_materialize_grads(materialize);
    return {a * b, a + b};
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    ++calls;
    seen = {g[0].defined(), g[1].defined()};
    auto s = ctx->get_saved_variables();
    Tensor ga = g[0].defined() ? g[0] * s[1] : tg::zeros_like(s[0]);
    Tensor gb = g[0].defined() ? g[0] * s[0] : tg::zeros_like(s[1]);
    if (g[1].defined()) {
      ga = ga + g[1];
      gb = gb + g[1];
    }
    return {ga, gb};
  }
};
bool ProductAndSum::materialize = true;
std::vector<bool> ProductAndSum::seen;
int ProductAndSum::calls = 0;

// Sorted values and their int64 indices (never differentiable), plus a float copy marked so.
struct SortWithIndices : public Function<SortWithIndices> {
  static variable_list forward(AutogradContext* ctx, Tensor x) {
    auto [values, indices] = tg::sort(x, 0);
    Tensor copy = values * 1.0;
    ctx->mark_non_differentiable({copy});
    ctx->saved_data["indices"] = indices;
    ctx->saved_data["n"] = x.size(0);
    return {values, indices, copy};
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    CHECK(g[1].dtype() == tg::kInt64);   // materialized zeros of the int64 output
    CHECK(g[2].sum().item() == 0.0);
    CHECK(ctx->saved_data["n"].toInt() == g[0].size(0));
    // values[k] = x[indices[k]], so x's gradient at j is g[k] where indices[k] = j: the inverse permutation.
    Tensor inverse = tg::sort(ctx->saved_data["indices"].toTensor(), 0).indices;
    return {tg::index_select(g[0], 0, inverse)};
  }
};

// In place: doubles its input, which it marks dirty and returns.
struct DoubleInPlace : public Function<DoubleInPlace> {
  static bool return_it;
  static Tensor forward(AutogradContext* ctx, Tensor x) {
    x.mul_(2.0);
    ctx->mark_dirty({x});
    return return_it ? x : x * 1.0;
  }
  static variable_list backward(AutogradContext*, variable_list g) { return {g[0] * 2.0}; }
};
bool DoubleInPlace::return_it = true;

// Records needs_input_grad in backward; lists and optional tensors as arguments.
struct WeightedSum : public Function<WeightedSum> {
  static std::vector<bool> needs;
  static std::vector<bool> forward_needs;
  static Tensor forward(AutogradContext* ctx, std::vector<Tensor> xs, std::optional<Tensor> scale, int64_t repeat) {
    forward_needs = {ctx->needs_input_grad(0), ctx->needs_input_grad(1)};
    Tensor s = xs[0] + xs[1];
    ctx->saved_data["has_scale"] = scale.has_value();
    ctx->saved_data["repeat"] = repeat;
    if (scale) {
      ctx->save_for_backward({s, *scale});
      s = s * *scale;
    }
    return s * static_cast<double>(repeat);
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    const bool has_scale = ctx->saved_data["has_scale"].toBool();
    needs.clear();
    for (size_t i = 0; i < (has_scale ? 3u : 2u); ++i) needs.push_back(ctx->needs_input_grad(i));
    CHECK(ctx->needs_input_grad({{0, 2}}) == (needs[0] || needs[1]));
    Tensor gx = g[0] * static_cast<double>(ctx->saved_data["repeat"].toInt());
    if (!has_scale) return {gx, gx, Tensor(), Tensor()};
    auto saved = ctx->get_saved_variables();
    return {gx * saved[1], gx * saved[1], (gx * saved[0]).sum(), Tensor()};
  }
};
std::vector<bool> WeightedSum::needs;
std::vector<bool> WeightedSum::forward_needs;

// A backward that returns the wrong number of gradients, or one for a non-tensor argument.
struct BadBackward : public Function<BadBackward> {
  static int mode;
  static Tensor forward(AutogradContext*, Tensor x, double) { return x * 2.0; }
  static variable_list backward(AutogradContext*, variable_list g) {
    if (mode == 0) return {g[0]};
    if (mode == 1) return {g[0], g[0]};
    return {g[0], Tensor(), Tensor()};   // extra undefined ones are allowed
  }
};
int BadBackward::mode = 0;

// Saves its input, which the caller then writes in place before backward.
struct Square : public Function<Square> {
  static Tensor forward(AutogradContext* ctx, Tensor x) {
    ctx->save_for_backward({x});
    return x * x;
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    return {g[0] * 2.0 * ctx->get_saved_variables()[0]};
  }
};

}  // namespace

TEST_CASE("autograd::Function: the tutorial's LinearFunction matches F.linear and gradcheck") {
  // torch: x = [[1,2],[3,4]], w = [[1,0],[.5,-1],[2,1]], b = [.1,.2,.3]; y = F.linear(x, w, b);
  // (y*y).sum().backward()
  auto opts = tg::TensorOptions().requires_grad(true);
  Tensor x = tg::from_vector(std::vector<float>{1, 2, 3, 4}, {2, 2}, opts);
  Tensor w = tg::from_vector(std::vector<float>{1, 0, 0.5, -1, 2, 1}, {3, 2}, opts);
  Tensor b = tg::from_vector(std::vector<float>{0.1f, 0.2f, 0.3f}, {3}, opts);
  Tensor y = LinearFunction::apply(x, w, b);
  testing::check_values(y, {1.1, -1.3, 4.3, 3.1, -2.3, 10.3}, 1e-5);
  CHECK(y.requires_grad());
  CHECK(std::string(y.grad_fn()->name()).find("tg::autograd::CppNode<") == 0);
  CHECK(std::string(y.grad_fn()->name()).find("LinearFunction>") != std::string::npos);
  (y * y).sum().backward();
  testing::check_values(x.grad(), {18.1, 11.2, 45.1, 25.2}, 1e-4);
  testing::check_values(w.grad(), {20.8, 29.2, -16.4, -23.6, 70.4, 99.6}, 1e-4);
  testing::check_values(b.grad(), {8.4, -7.2, 29.2}, 1e-4);

  // Without a bias (the default argument): two tensor inputs, backward's third gradient undefined.
  Tensor y2 = LinearFunction::apply(x, w);
  testing::check_close(y2, tg::linear(x, w));

  CHECK(tg::autograd::gradcheck(
      [](const std::vector<Tensor>& in) { return LinearFunction::apply(in[0], in[1], in[2]); },
      {testing::randn64({4, 3}, 1), testing::randn64({5, 3}, 2), testing::randn64({5}, 3)}));
}

TEST_CASE("autograd::Function: the tutorial's MulConstant keeps a double in saved_data") {
  // torch: x = torch.randn(5, 5, requires_grad=True); MulConstant.apply(x, 5.5).sum().backward() -> x.grad = 5.5
  Tensor x = tg::randn({5, 5}, tg::TensorOptions().requires_grad(true));
  Tensor y = MulConstant::apply(x, 5.5);
  testing::check_close(y, x * 5.5);
  y.sum().backward();
  testing::check_close(x.grad(), tg::full({5, 5}, 5.5));
  CHECK(tg::autograd::gradcheck([](const std::vector<Tensor>& in) { return MulConstant::apply(in[0], -2.5); },
                                {testing::randn64({3, 4}, 4)}));

  // No input requires grad, or grad mode is off: forward runs, nothing is recorded.
  Tensor plain = MulConstant::apply(tg::ones({2}), 3.0);
  CHECK_FALSE(plain.requires_grad());
  testing::check_values(plain, {3, 3});
  {
    tg::NoGradGuard no_grad;
    Tensor z = MulConstant::apply(x, 2.0);
    CHECK_FALSE(z.requires_grad());
    CHECK(z.grad_fn() == nullptr);
  }
}

TEST_CASE("autograd::Function: several outputs reach one backward call, unused ones as zeros or undefined") {
  Tensor a = testing::randn64({3}, 5), b = testing::randn64({3}, 6);
  ProductAndSum::materialize = true;
  ProductAndSum::calls = 0;
  variable_list out = ProductAndSum::apply(a, b);
  REQUIRE(out.size() == 2);
  testing::check_close(out[0], a * b);
  testing::check_close(out[1], a + b);
  (out[0].sum() + (out[1] * out[1]).sum()).backward();
  CHECK(ProductAndSum::calls == 1);   // one call for both outputs
  testing::check_close(a.grad(), b + (a + b) * 2.0);
  testing::check_close(b.grad(), a + (a + b) * 2.0);

  // Only the first output used: the second's gradient is zeros (libtorch's materialize_grads) ...
  a.zero_grad();
  ProductAndSum::apply(a, b)[0].sum().backward();
  CHECK(ProductAndSum::seen == std::vector<bool>{true, true});
  testing::check_close(a.grad(), b);
  // ... or undefined with set_materialize_grads(false).
  ProductAndSum::materialize = false;
  a.zero_grad();
  ProductAndSum::apply(a, b)[1].sum().backward();
  CHECK(ProductAndSum::seen == std::vector<bool>{false, true});
  testing::check_close(a.grad(), tg::ones({3}, tg::TensorOptions().dtype(tg::kFloat64)));
  ProductAndSum::materialize = true;

  // retain_graph: a second backward through the same Node accumulates again.
  a.zero_grad();
  variable_list again = ProductAndSum::apply(a, b);
  Tensor loss = again[0].sum() + again[1].sum();
  loss.backward(Tensor(), /*retain_graph=*/true);
  loss.backward();
  testing::check_close(a.grad(), (b + 1.0) * 2.0);

  CHECK(tg::autograd::gradcheck(
      [](const std::vector<Tensor>& in) {
        variable_list o = ProductAndSum::apply(in[0], in[1]);
        return o[0] * 3.0 + o[1] * o[1];
      },
      {testing::randn64({2, 3}, 7), testing::randn64({2, 3}, 8)}));
}

TEST_CASE("autograd::Function: int64 and mark_non_differentiable outputs carry no gradient") {
  Tensor x = tg::from_vector(std::vector<double>{3, 1, 2}, {3}, tg::TensorOptions().requires_grad(true));
  variable_list out = SortWithIndices::apply(x);
  CHECK(out[0].requires_grad());
  CHECK_FALSE(out[1].requires_grad());
  CHECK_FALSE(out[2].requires_grad());
  testing::check_values(out[0], {1, 2, 3});
  testing::check_values(out[1], {1, 2, 0});
  (out[0] * tg::from_vector(std::vector<double>{10, 20, 30})).sum().backward();
  testing::check_values(x.grad(), {30, 10, 20});   // torch.sort's gradient: scattered back to the sources
}

TEST_CASE("autograd::Function: mark_dirty makes the written input carry the Function's history") {
  Tensor leaf = tg::from_vector(std::vector<float>{1, 2}, {2}, tg::TensorOptions().requires_grad(true));
  Tensor x = leaf * 3.0;
  Tensor y = DoubleInPlace::apply(x);
  CHECK(y.impl() == x.impl());   // the same tensor, written in place, as libtorch returns it
  testing::check_values(x, {6, 12});
  CHECK(std::string(x.grad_fn()->name()).find("DoubleInPlace") != std::string::npos);
  y.sum().backward();
  testing::check_values(leaf.grad(), {6, 6});   // d(2 * 3 * leaf)

  TG_CHECK_THROWS(DoubleInPlace::apply(leaf), tg::AutogradError, "a leaf Variable that requires grad");
  DoubleInPlace::return_it = false;
  TG_CHECK_THROWS(DoubleInPlace::apply(leaf * 1.0), tg::AutogradError, "marked as dirty");
  DoubleInPlace::return_it = true;
}

TEST_CASE("autograd::Function: needs_input_grad, tensor lists and optional tensors") {
  Tensor a = testing::randn64({3}, 9), b = testing::randn64({3}, 10, false), s = testing::randn64({}, 11);
  Tensor y = WeightedSum::apply(std::vector<Tensor>{a, b}, std::optional<Tensor>(s), int64_t(2));
  CHECK(WeightedSum::forward_needs == std::vector<bool>{true, false});
  y.sum().backward();
  CHECK(WeightedSum::needs == std::vector<bool>{true, false, true});
  testing::check_close(a.grad(), tg::full({3}, 2.0, tg::TensorOptions().dtype(tg::kFloat64)) * s);
  testing::check_close(s.grad(), ((a + b) * 2.0).sum());

  // An empty optional is a non-tensor argument: two tensor inputs.
  a.zero_grad();
  WeightedSum::apply(std::vector<Tensor>{a, b}, std::optional<Tensor>(), int64_t(1)).sum().backward();
  CHECK(WeightedSum::needs == std::vector<bool>{true, false});
  AutogradContext ctx;
  TG_CHECK_THROWS(ctx.needs_input_grad(0), tg::IndexError, "AutogradContext::needs_input_grad: index 0");

  CHECK(tg::autograd::gradcheck(
      [](const std::vector<Tensor>& in) {
        return WeightedSum::apply(std::vector<Tensor>{in[0], in[1]}, std::optional<Tensor>(in[2]), int64_t(3));
      },
      {testing::randn64({2}, 12), testing::randn64({2}, 13), testing::randn64({}, 14)}));
}

TEST_CASE("autograd::Function: a wrong backward or a saved tensor written in place raises AutogradError") {
  Tensor x = testing::randn64({2}, 15);
  BadBackward::mode = 0;
  TG_CHECK_THROWS(BadBackward::apply(x, 1.0).sum().backward(), tg::AutogradError,
                  "returned an incorrect number of gradients (expected 2, got 1)");
  BadBackward::mode = 1;
  TG_CHECK_THROWS(BadBackward::apply(x, 1.0).sum().backward(), tg::AutogradError,
                  "defined at position 2, but the corresponding forward input was not a Variable");
  BadBackward::mode = 2;
  BadBackward::apply(x, 1.0).sum().backward();
  testing::check_close(x.grad(), tg::ones({2}, tg::TensorOptions().dtype(tg::kFloat64)));

  Tensor leaf = testing::randn64({2}, 16);
  Tensor h = leaf * 1.0;
  Tensor y = Square::apply(h);
  {
    tg::NoGradGuard no_grad;
    h.add_(1.0);
  }
  TG_CHECK_THROWS(y.sum().backward(), tg::AutogradError, "modified by an inplace operation");
}

TEST_CASE("autograd::Function: IValue holds saved_data's kinds and names a wrong one") {
  using tg::autograd::IValue;
  IValue none, b(true), i(7), l(int64_t(1) << 40), d(2.5), f(1.5f), s("name"), t(tg::ones({2})),
      il(std::vector<int64_t>{1, 2}), dl(std::vector<double>{0.5});
  CHECK(none.isNone());
  CHECK((b.isBool() && b.toBool()));
  CHECK((i.isInt() && i.toInt() == 7));
  CHECK(l.toInt() == (int64_t(1) << 40));
  CHECK((d.isDouble() && d.toDouble() == 2.5));
  CHECK(f.toDouble() == 1.5);
  CHECK((s.isString() && s.toStringRef() == "name"));
  CHECK((t.isTensor() && t.toTensor().size(0) == 2));
  CHECK(il.toIntVector() == std::vector<int64_t>{1, 2});
  IValue sizes = tg::zeros({3, 4}).sizes();   // libtorch's IntArrayRef becomes an IntList
  CHECK((sizes.isIntList() && sizes.toIntVector() == std::vector<int64_t>{3, 4}));
  CHECK(dl.toDoubleVector() == std::vector<double>{0.5});
  CHECK(std::string(il.tagKind()) == "IntList");
  TG_CHECK_THROWS(d.toInt(), tg::Error, "IValue::toInt: expected Int but got Double");
  TG_CHECK_THROWS(i.toDouble(), tg::Error, "IValue::toDouble: expected Double but got Int");
  TG_CHECK_THROWS(none.toTensor(), tg::Error, "expected Tensor but got None");
}
