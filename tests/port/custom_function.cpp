// tests/port/custom_function.cpp: a program written against libtorch's C++ frontend, in the shape of
// its autograd tutorial: tensors that require grad, grad_fn()->name(), backward with a gradient,
// NoGradGuard, detach and requires_grad_, then custom autograd Functions (LinearFunction with saved
// tensors, MulConstant with a saved double) whose gradients are compared with those of the same
// computation written with built-in ops, and a small fit through the custom LinearFunction. CTest
// compiles it after the rename of tests/port/port.cmake (torch:: -> tg::, <torch/torch.h> ->
// <tensorgrad.h>); it also compiles against libtorch as it stands.
//
// Exit 0 when every comparison holds.
#include <torch/torch.h>

#include <cstdio>
#include <iostream>

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// y = x w^T + b, with the gradients written by hand.
class LinearFunction : public torch::autograd::Function<LinearFunction> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, torch::Tensor input, torch::Tensor weight,
                               torch::Tensor bias = torch::Tensor()) {
    ctx->save_for_backward({input, weight, bias});
    auto output = input.mm(weight.t());
    if (bias.defined()) {
      output += bias.unsqueeze(0).expand_as(output);
    }
    return output;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    auto saved = ctx->get_saved_variables();
    auto input = saved[0];
    auto weight = saved[1];
    auto bias = saved[2];

    auto grad_output = grad_outputs[0];
    auto grad_input = grad_output.mm(weight);
    auto grad_weight = grad_output.t().mm(input);
    auto grad_bias = torch::Tensor();
    if (bias.defined()) {
      grad_bias = grad_output.sum(0);
    }
    return {grad_input, grad_weight, grad_bias};
  }
};

// y = x * constant, the constant kept in saved_data.
class MulConstant : public torch::autograd::Function<MulConstant> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, torch::Tensor tensor, double constant) {
    ctx->saved_data["constant"] = constant;
    return tensor * constant;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    // one gradient per input of forward: none for the constant
    return {grad_outputs[0] * ctx->saved_data["constant"].toDouble(), torch::Tensor()};
  }
};

int failures = 0;
void expect(bool ok, const char* what) {
  std::printf("%s: %s\n", ok ? "ok  " : "FAIL", what);
  if (!ok) ++failures;
}

int main() {
  torch::manual_seed(0);

  // ---- the autograd tour
  auto x = torch::ones({2, 2}, torch::requires_grad());
  auto y = x + 2;
  std::cout << y << std::endl;
  expect(y.grad_fn() != nullptr, "an op on a tensor that requires grad has a grad_fn");
  std::printf("y.grad_fn()->name(): %s\n", y.grad_fn()->name().c_str());
  auto z = y * y * 3;
  auto out = z.mean();
  out.backward();
  // d(mean(3 (x + 2)^2))/dx = 6 (x + 2) / 4 = 4.5 at x = 1
  expect(torch::allclose(x.grad(), torch::full({2, 2}, 4.5)), "x.grad() after out.backward() is 4.5 everywhere");

  auto a = torch::randn({2, 2});
  a = ((a * 3) / (a - 1));
  expect(!a.requires_grad(), "a tensor made from tensors without grad does not require grad");
  a.requires_grad_(true);
  expect(a.requires_grad(), "requires_grad_(true)");
  auto b = (a * a).sum();
  expect(b.grad_fn() != nullptr, "(a * a).sum() has a grad_fn");

  auto v = torch::randn(3, torch::requires_grad());
  auto w = v * 2;
  w.backward(torch::tensor({0.1, 1.0, 0.0001}, torch::kFloat));
  expect(torch::allclose(v.grad(), torch::tensor({0.2, 2.0, 0.0002}, torch::kFloat)), "backward(gradient)");

  {
    torch::NoGradGuard no_grad;
    expect(!v.pow(2).requires_grad(), "nothing requires grad under NoGradGuard");
  }
  auto d = v.detach();
  expect(!d.requires_grad() && d.equal(v), "detach: the same values without grad");

  // ---- custom Functions against the same computation in built-in ops
  auto input = torch::randn({4, 3}, torch::dtype(torch::kFloat64).requires_grad(true));
  auto weight = torch::randn({5, 3}, torch::dtype(torch::kFloat64).requires_grad(true));
  auto bias = torch::randn({5}, torch::dtype(torch::kFloat64).requires_grad(true));
  auto custom = LinearFunction::apply(input, weight, bias);
  auto gy = torch::randn({4, 5}, torch::kFloat64);
  custom.backward(gy);
  auto g_input = input.grad().clone(), g_weight = weight.grad().clone(), g_bias = bias.grad().clone();
  input.mutable_grad().reset();
  weight.mutable_grad().reset();
  bias.mutable_grad().reset();
  auto builtin = torch::nn::functional::linear(input, weight, bias);
  expect(torch::allclose(custom, builtin), "LinearFunction's output equals linear's");
  builtin.backward(gy);
  expect(torch::allclose(g_input, input.grad()) && torch::allclose(g_weight, weight.grad()) &&
             torch::allclose(g_bias, bias.grad()),
         "LinearFunction's gradients equal linear's");

  auto t = torch::randn({5, 5}, torch::requires_grad());
  auto m = MulConstant::apply(t, 5.5);
  m.sum().backward();
  expect(torch::allclose(t.grad(), torch::ones({5, 5}) * 5.5), "MulConstant's gradient is the constant");

  // ---- a fit through the custom Function: y = x W^T + b for a known W, b
  auto true_w = torch::randn({2, 3});
  auto true_b = torch::randn({2});
  auto W = torch::zeros({2, 3}, torch::requires_grad());
  auto B = torch::zeros({2}, torch::requires_grad());
  torch::optim::Adam opt({W, B}, torch::optim::AdamOptions(0.05).betas(std::make_tuple(0.9, 0.999)));
  float last = 0;
  for (int step = 0; step < 500; ++step) {
    auto xb = torch::randn({32, 3});
    auto target = xb.mm(true_w.t()) + true_b;
    auto loss = torch::mse_loss(LinearFunction::apply(xb, W, B), target);
    opt.zero_grad();
    loss.backward();
    opt.step();
    last = loss.item<float>();
  }
  std::printf("fit through LinearFunction: final loss %.2e\n", last);
  expect(last < 1e-3f && torch::allclose(W, true_w, 1e-2, 1e-2), "the fit recovers W and b");
  return failures == 0 ? 0 : 1;
}
