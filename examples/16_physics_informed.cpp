// examples/16_physics_informed.cpp: a physics-informed network. A small tanh MLP u(x) learns the
// solution of the 1-D Poisson problem u''(x) = -pi^2 sin(pi x) on [0, 1] with u(0) = u(1) = 0 without
// ever seeing the solution: its loss is the equation's residual at collocation points, where u''(x)
// comes from two nested tg::autograd::grad calls with create_graph, plus the boundary values. The exact
// solution is sin(pi x); the program prints the error against it as training goes, and exits 1 unless
// the final maximum error is below --max-error.
#include <tensorgrad.h>

#include <cmath>
#include <cstdio>
#include <vector>

#include "cli.h"

using tg::Tensor;

int main(int argc, char** argv) {
  int steps = 3000, points = 64, width = 32;
  double lr = 3e-3, max_error = 0.02;
  cli::Parser p("physics_informed", "trains a network on u'' = -pi^2 sin(pi x), u(0) = u(1) = 0");
  p.add("--steps", steps, "N", "Adam steps", cli::Range::positive);
  p.add("--points", points, "N", "collocation points in (0, 1)", cli::Range::positive);
  p.add("--width", width, "W", "hidden units per layer", cli::Range::positive);
  p.add("--lr", lr, "LR", "Adam's learning rate", cli::Range::positive);
  p.add("--max-error", max_error, "E", "largest final max |u - sin(pi x)| accepted", cli::Range::positive);
  p.parse(argc, argv);

  const double pi = 3.14159265358979323846;
  tg::manual_seed(0);
  const auto f64 = tg::TensorOptions().dtype(tg::kFloat64);
  tg::nn::Sequential u(tg::nn::Linear(1, width), tg::nn::Tanh(), tg::nn::Linear(width, width), tg::nn::Tanh(),
                       tg::nn::Linear(width, 1));
  u->to(tg::kFloat64);
  tg::optim::Adam adam(u->parameters(), tg::optim::AdamOptions(lr));

  // collocation points (midpoints of a uniform grid), the right-hand side, the boundary
  std::vector<double> grid(points);
  for (int i = 0; i < points; ++i) grid[i] = (i + 0.5) / points;
  const Tensor x = tg::from_vector(grid, {points, 1}).requires_grad_(true);
  const Tensor rhs = tg::sin(x.detach() * pi) * (-pi * pi);
  const Tensor boundary = tg::from_vector(std::vector<double>{0.0, 1.0}, {2, 1});
  const Tensor test_x = (tg::arange(0, 101, f64) / 100.0).unsqueeze(1);   // 0, 0.01, ..., 1
  const Tensor exact = tg::sin(test_x * pi);

  auto max_error_now = [&] {
    tg::NoGradGuard no_grad;
    return (u->forward(test_x) - exact).abs().max().item();
  };
  double err = max_error_now();
  for (int step = 1; step <= steps; ++step) {
    adam.zero_grad();
    const Tensor ux = u->forward(x);
    // du/dx and d2u/dx2 at every point: the sum's gradient is each point's own derivative (the points
    // are independent), and create_graph keeps both differentiable with respect to the weights
    const Tensor du = tg::autograd::grad({ux.sum()}, {x}, {}, std::nullopt, /*create_graph=*/true)[0];
    const Tensor d2u = tg::autograd::grad({du.sum()}, {x}, {}, std::nullopt, /*create_graph=*/true)[0];
    const Tensor residual = tg::mse_loss(d2u, rhs);
    const Tensor edge = tg::pow(u->forward(boundary), 2.0).mean();
    const Tensor loss = residual + edge * 10.0;
    loss.backward();
    adam.step();
    if (step % (steps / 10 > 0 ? steps / 10 : 1) == 0 || step == steps) {
      err = max_error_now();
      std::printf("step %5d  residual %.3e  boundary %.3e  max |u - sin(pi x)| %.4f\n", step, residual.item(),
                  edge.item(), err);
    }
  }
  if (!(err < max_error)) {
    std::printf("FAILED: max error %.4f is not below %.4f\n", err, max_error);
    return 1;
  }
  std::printf("solved: max error %.4f < %.4f\n", err, max_error);
  return 0;
}
