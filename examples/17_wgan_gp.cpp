// examples/17_wgan_gp.cpp: a Wasserstein GAN with gradient penalty (WGAN-GP, Gulrajani et al. 2017) on
// 2-D toy data: a generator learns to turn standard normal noise into samples of a shifted, stretched
// Gaussian (mean (2, -1), standard deviations 0.6 and 0.3). The critic's loss includes
// 10 (||grad_x D(x_hat)|| - 1)^2 at points x_hat between real and generated samples, where grad_x D
// comes from tg::autograd::grad with create_graph, so that the penalty itself is differentiated with
// respect to the critic's weights. Prints the generated samples' mean and spread as training goes;
// exits 1 unless they end near the target's and the critic's gradient norm at x_hat ends near 1.
#include <tensorgrad.h>

#include <cmath>
#include <cstdio>
#include <vector>

#include "cli.h"

using tg::Tensor;

namespace {
const double kMean[2] = {2.0, -1.0}, kStd[2] = {0.6, 0.3};

/// n samples of the target distribution.
Tensor real_batch(int64_t n) {
  return tg::randn({n, 2}) * tg::from_vector(std::vector<float>{0.6f, 0.3f}) +
         tg::from_vector(std::vector<float>{2.0f, -1.0f});
}
}  // namespace

int main(int argc, char** argv) {
  int steps = 1000, batch = 128, critic_steps = 5;
  double tolerance = 0.2, lr = 1e-3;
  cli::Parser p("wgan_gp", "trains a WGAN-GP generator to sample a 2-D Gaussian");
  p.add("--steps", steps, "N", "generator steps", cli::Range::positive);
  p.add("--batch-size", batch, "B", "samples per step", cli::Range::positive);
  p.add("--critic-steps", critic_steps, "N", "critic steps per generator step", cli::Range::positive);
  p.add("--lr", lr, "LR", "Adam's learning rate (both networks)", cli::Range::positive);
  p.add("--tolerance", tolerance, "T", "largest final error of the mean and standard deviations accepted",
        cli::Range::positive);
  p.parse(argc, argv);

  tg::manual_seed(0);
  tg::nn::Sequential generator(tg::nn::Linear(2, 64), tg::nn::ReLU(), tg::nn::Linear(64, 64), tg::nn::ReLU(),
                               tg::nn::Linear(64, 2));
  tg::nn::Sequential critic(tg::nn::Linear(2, 64), tg::nn::ReLU(), tg::nn::Linear(64, 64), tg::nn::ReLU(),
                            tg::nn::Linear(64, 1));
  const auto options = tg::optim::AdamOptions(lr).betas(0.5, 0.9);
  tg::optim::Adam g_opt(generator->parameters(), options), d_opt(critic->parameters(), options);
  const double lambda = 10.0;

  // GAN training circles its target rather than settling on it, so the check averages the generated
  // samples' statistics over the last fifth of training (every 10 steps)
  double grad_norm = 0, error = 0, avg[4] = {0, 0, 0, 0};
  int averaged = 0;
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
    const bool report = step % (steps / 10 > 0 ? steps / 10 : 1) == 0 || step == steps;
    const bool average = step > steps - steps / 5 && step % 10 == 0;
    if (report || average) {
      tg::NoGradGuard no_grad;
      const Tensor samples = generator->forward(tg::randn({4096, 2}));
      const std::vector<float> mean = samples.mean(0).to_vector<float>();
      const std::vector<float> std = tg::std(samples, {0}, true, false).to_vector<float>();
      if (average) {
        for (int d = 0; d < 2; ++d) {
          avg[d] += mean[d];
          avg[2 + d] += std[d];
        }
        ++averaged;
      }
      if (report)
        std::printf("step %5d  critic gradient norm %.3f  mean (%.3f, %.3f)  std (%.3f, %.3f)\n", step, grad_norm,
                    mean[0], mean[1], std[0], std[1]);
    }
  }
  for (double& v : avg) v /= averaged > 0 ? averaged : 1;
  for (int d = 0; d < 2; ++d)
    error = std::fmax(error, std::fmax(std::fabs(avg[d] - kMean[d]), std::fabs(avg[2 + d] - kStd[d])));
  std::printf("over the last fifth: mean (%.3f, %.3f)  std (%.3f, %.3f), target (%.1f, %.1f) and (%.1f, %.1f)\n", avg[0],
              avg[1], avg[2], avg[3], kMean[0], kMean[1], kStd[0], kStd[1]);
  const bool ok = error < tolerance && std::fabs(grad_norm - 1.0) < 0.5;
  std::printf("%s: largest error of the mean and standard deviations %.3f (accepted below %.3f), gradient norm %.3f\n",
              ok ? "trained" : "FAILED", error, tolerance, grad_norm);
  return ok ? 0 : 1;
}
