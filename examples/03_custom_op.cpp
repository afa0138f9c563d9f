// examples/03_custom_op.cpp: a differentiable op defined outside the library. my_softplus(x) = log(1 + e^x)
// (the library has tg::softplus built in; this is how one would write it) computes its forward with graph-free tensor math (tg::prim) and hands tg::record its backward,
// d softplus/dx = sigmoid(x). Then tg::autograd::gradcheck compares that backward with finite
// differences, and the op is used inside a small model like any built-in one.
#include <tensorgrad.h>

#include <cstdio>
#include <iostream>

// softplus, stable for large |x|: max(x, 0) + log(1 + exp(-|x|)).
tg::Tensor my_softplus(const tg::Tensor& x) {
  using namespace tg;
  const RawTensor& t = x.data();
  RawTensor y = prim::add(prim::unary(UnaryOp::Relu, t),
                       prim::unary(UnaryOp::Log, prim::add(prim::scalar_like(1.0, t),
                                                           prim::unary(UnaryOp::Exp, prim::unary(UnaryOp::Neg, prim::unary(UnaryOp::Abs, t))))));
  SavedTensor x_saved(x);   // the rule reads x; SavedTensor catches later in-place writes to it
  return record("softplus", y, {x}, [x_saved](const RawTensor& grad, Grads& g) {
    g.set(0, prim::mul(grad, prim::unary(UnaryOp::Sigmoid, x_saved.get())));   // d softplus/dx = sigmoid(x)
  });
}

int main() {
  tg::manual_seed(0);
  auto x = tg::randn({4, 3}, tg::TensorOptions().dtype(tg::kFloat64).requires_grad(true));
  const bool ok = tg::autograd::gradcheck([](const std::vector<tg::Tensor>& in) { return my_softplus(in[0]); }, {x});
  std::printf("gradcheck of my_softplus (float64, central differences): %s\n", ok ? "passed" : "FAILED");

  // Used in a model: gradients flow through it into the Linear layer.
  tg::nn::Linear fc(3, 2);
  auto loss = my_softplus(fc(tg::randn({5, 3}))).mean();
  loss.backward();
  std::cout << "loss " << loss.item() << ", fc.weight.grad:\n" << fc.weight.grad() << "\n";
  const auto v = tg::from_vector(std::vector<float>{-30, 0, 30}, {3});
  std::cout << "my_softplus([-30, 0, 30]) = " << my_softplus(v) << "\n"
            << "tg::softplus([-30, 0, 30]) = " << tg::softplus(v) << "\n";
  return ok ? 0 : 1;
}
