// examples/17_wgan_gp.cpp: a Wasserstein GAN with gradient penalty (WGAN-GP, Gulrajani et al. 2017) on
// 2-D toy data: points on a circle of radius 2. The critic's loss includes 10 (||grad_x D(x_hat)|| - 1)^2
// at points x_hat between real and generated samples, where grad_x D comes from tg::autograd::grad with
// create_graph, so that the penalty itself is differentiated with respect to the critic's weights.
// Prints the generated points' mean radius as training goes; exits 1 unless it ends within
// --max-radius-error of 2, the points spread around the circle (6 of 8 sectors) and the critic's
// gradient norm at x_hat ends near 1.
#include <tensorgrad.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "cli.h"

using tg::Tensor;

namespace {
/// n points on the circle of radius 2, with a little noise.
Tensor real_batch(int64_t n) {
  const Tensor angle = tg::rand({n, 1}) * 6.283185307179586;
  return tg::cat({tg::cos(angle), tg::sin(angle)}, 1) * 2.0 + tg::randn({n, 2}) * 0.02;
}

/// The mean distance of points (n, 2) from the origin.
double mean_radius(const Tensor& points) { return tg::sqrt(tg::pow(points, 2.0).sum(1)).mean().item(); }

/// How many of 8 equal sectors around the origin hold at least 5% of the points: a generator that
/// collapsed onto one spot of the circle has the right radius but fills one or two.
int sectors_filled(const Tensor& points) {
  const std::vector<float> v = points.to_vector<float>();
  int count[8] = {0};
  for (std::size_t i = 0; i + 1 < v.size(); i += 2) {
    const double a = std::atan2(v[i + 1], v[i]) + 3.141592653589793;   // [0, 2 pi]
    ++count[std::min(7, static_cast<int>(a / (2 * 3.141592653589793) * 8))];
  }
  int filled = 0;
  for (int c : count) filled += c * 20 >= static_cast<int>(v.size() / 2);
  return filled;
}
}  // namespace

int main(int argc, char** argv) {
  int steps = 1500, batch = 128, critic_steps = 5;
  double max_radius_error = 0.25;
  cli::Parser p("wgan_gp", "trains a WGAN-GP generator on points of a circle of radius 2");
  p.add("--steps", steps, "N", "generator steps", cli::Range::positive);
  p.add("--batch-size", batch, "B", "samples per step", cli::Range::positive);
  p.add("--critic-steps", critic_steps, "N", "critic steps per generator step", cli::Range::positive);
  p.add("--max-radius-error", max_radius_error, "E", "largest final |mean radius - 2| accepted", cli::Range::positive);
  p.parse(argc, argv);

  tg::manual_seed(0);
  tg::nn::Sequential generator(tg::nn::Linear(2, 64), tg::nn::ReLU(), tg::nn::Linear(64, 64), tg::nn::ReLU(),
                               tg::nn::Linear(64, 2));
  tg::nn::Sequential critic(tg::nn::Linear(2, 64), tg::nn::ReLU(), tg::nn::Linear(64, 64), tg::nn::ReLU(),
                            tg::nn::Linear(64, 1));
  const auto options = tg::optim::AdamOptions(1e-3).betas(0.5, 0.9);
  tg::optim::Adam g_opt(generator->parameters(), options), d_opt(critic->parameters(), options);
  const double lambda = 10.0;

  double radius = 0, grad_norm = 0;
  int sectors = 0;
  for (int step = 1; step <= steps; ++step) {
    for (int k = 0; k < critic_steps; ++k) {
      d_opt.zero_grad();
      const Tensor real = real_batch(batch);
      Tensor fake;
      {
        tg::NoGradGuard no_grad;   // the critic's step does not train the generator
        fake = generator->forward(tg::randn({batch, 2}));
      }
      // the gradient penalty at random points between real and fake samples
      const Tensor eps = tg::rand({batch, 1});
      const Tensor x_hat = (real * eps + fake * (1.0 - eps)).requires_grad_(true);
      const Tensor grad_x = tg::autograd::grad({critic->forward(x_hat).sum()}, {x_hat}, {}, std::nullopt,
                                               /*create_graph=*/true)[0];
      const Tensor norms = tg::sqrt(tg::pow(grad_x, 2.0).sum(1) + 1e-12);
      const Tensor penalty = tg::pow(norms - 1.0, 2.0).mean();
      const Tensor d_loss = critic->forward(fake).mean() - critic->forward(real).mean() + penalty * lambda;
      d_loss.backward();   // through the penalty's graph too: second derivatives of the critic
      d_opt.step();
      grad_norm = norms.mean().item();
    }
    g_opt.zero_grad();
    const Tensor g_loss = -critic->forward(generator->forward(tg::randn({batch, 2}))).mean();
    g_loss.backward();
    g_opt.step();
    if (step % (steps / 10 > 0 ? steps / 10 : 1) == 0 || step == steps) {
      tg::NoGradGuard no_grad;
      const Tensor samples = generator->forward(tg::randn({1024, 2}));
      radius = mean_radius(samples);
      sectors = sectors_filled(samples);
      std::printf("step %5d  critic gradient norm %.3f  generated mean radius %.3f (target 2), %d of 8 sectors\n",
                  step, grad_norm, radius, sectors);
    }
  }
  const bool ok = std::fabs(radius - 2.0) < max_radius_error && std::fabs(grad_norm - 1.0) < 0.5 && sectors >= 6;
  std::printf("%s: mean radius %.3f, gradient norm %.3f, %d of 8 sectors filled\n", ok ? "trained" : "FAILED", radius,
              grad_norm, sectors);
  return ok ? 0 : 1;
}
