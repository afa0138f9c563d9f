// examples/15_higher_derivatives.cpp: the gradient is itself a function that can be differentiated.
// With create_graph = true the backward pass records its own graph; this program prints that graph for
// f(x) = x^3 sin(x), then takes f', f'' and f''' by three nested tg::autograd::grad calls and compares
// them with the derivatives worked out by hand. Exit status 1 when one differs.
#include <tensorgrad.h>

#include <cmath>
#include <cstdio>
#include <string>

using tg::Tensor;

int main() {
  const Tensor x = tg::from_vector(std::vector<double>{-1.5, 0.25, 2.0}).requires_grad_(true);
  const Tensor y = (tg::pow(x, 3.0) * tg::sin(x)).sum();

  // f'(x) with create_graph: the result is an ordinary Tensor with a grad_fn of its own
  const Tensor d1 = tg::autograd::grad({y}, {x}, {}, std::nullopt, /*create_graph=*/true)[0];
  std::printf("f'(x) = %s\n", d1.grad_fn() ? d1.grad_fn()->name().c_str() : "(no graph)");
  std::printf("The graph that computes f'(x), recorded by the backward pass (Graphviz):\n%s\n",
              tg::autograd::to_dot(d1).c_str());

  // f''(x) and f'''(x): each call differentiates the graph the previous one recorded
  const Tensor d2 = tg::autograd::grad({d1.sum()}, {x}, {}, std::nullopt, true)[0];
  const Tensor d3 = tg::autograd::grad({d2.sum()}, {x})[0];

  // by hand: f = x^3 s, f' = 3x^2 s + x^3 c, f'' = 6x s + 6x^2 c - x^3 s, f''' = 6 s + 18x c - 9x^2 s - x^3 c
  bool ok = true;
  const auto xs = x.to_vector<double>(), a1 = d1.to_vector<double>(), a2 = d2.to_vector<double>(),
             a3 = d3.to_vector<double>();
  std::printf("%8s %14s %14s %14s %14s %14s %14s\n", "x", "f' autograd", "f' by hand", "f'' autograd", "f'' by hand",
              "f''' autograd", "f''' by hand");
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const double v = xs[i], s = std::sin(v), c = std::cos(v);
    const double h1 = 3 * v * v * s + v * v * v * c, h2 = 6 * v * s + 6 * v * v * c - v * v * v * s,
                 h3 = 6 * s + 18 * v * c - 9 * v * v * s - v * v * v * c;
    std::printf("%8.3f %14.10f %14.10f %14.10f %14.10f %14.10f %14.10f\n", v, a1[i], h1, a2[i], h2, a3[i], h3);
    for (auto [a, h] : {std::pair<double, double>{a1[i], h1}, {a2[i], h2}, {a3[i], h3}})
      if (std::fabs(a - h) > 1e-12 * (1 + std::fabs(h))) ok = false;
  }
  std::printf(ok ? "every derivative matches the hand-written formula\n" : "MISMATCH\n");
  return ok ? 0 : 1;
}
