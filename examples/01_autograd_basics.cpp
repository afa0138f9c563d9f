// examples/01_autograd_basics.cpp: autograd on a handful of scalars, micrograd style. Builds a small
// expression, prints every value and every gradient, checks one gradient by hand, and prints the
// recorded graph as Graphviz text (render it with: dot -Tpng graph.dot -o graph.png).
#include <tensorgrad.h>

#include <cmath>
#include <cstdio>
#include <iostream>

int main() {
  auto scalar = [](double v) {   // a 0-d float64 leaf that requires grad
    return tg::full({}, v, tg::TensorOptions().dtype(tg::kFloat64).requires_grad(true));
  };
  tg::Tensor a = scalar(2.0);
  tg::Tensor b = scalar(-3.0);
  tg::Tensor c = scalar(10.0);

  tg::Tensor e = a * b;          // e = -6
  tg::Tensor d = e + c;          // d = 4
  tg::Tensor f = scalar(-2.0);
  tg::Tensor L = d * f;          // L = -8
  tg::Tensor out = tg::tanh(L * 0.1);

  out.backward();                  // dout/dx for every leaf x

  std::printf("values:    a=%.4f b=%.4f c=%.4f f=%.4f  e=a*b=%.4f  d=e+c=%.4f  L=d*f=%.4f  out=tanh(L/10)=%.4f\n",
              a.item(), b.item(), c.item(), f.item(), e.item(), d.item(), L.item(), out.item());
  std::printf("gradients: dout/da=%.4f dout/db=%.4f dout/dc=%.4f dout/df=%.4f\n", a.grad().item(), b.grad().item(),
              c.grad().item(), f.grad().item());

  // By hand: dout/dL = (1 - tanh^2(L/10)) / 10; dL/da = f * b.
  const double dout_dL = (1 - std::tanh(-0.8) * std::tanh(-0.8)) / 10;
  const double expected = dout_dL * (-2.0) * (-3.0);
  std::printf("check:     dout/da by hand = %.4f -> %s\n", expected,
              std::fabs(expected - a.grad().item()) < 1e-12 ? "matches" : "MISMATCH");

  std::cout << "\ngraph (Graphviz):\n" << tg::autograd::to_dot(out);
  return std::fabs(expected - a.grad().item()) < 1e-12 ? 0 : 1;
}
