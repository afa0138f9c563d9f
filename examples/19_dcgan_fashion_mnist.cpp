// examples/19_dcgan_fashion_mnist.cpp: pytorch/examples' DCGAN (Radford et al. 2015), scaled to
// Fashion-MNIST's 28x28 images, trained from C++. The generator (DcganGenerator in examples/models.h)
// turns noise into images with ConvTranspose2d, BatchNorm2d and ReLU layers and a tanh; the
// discriminator (DcganDiscriminator) is Conv2d, BatchNorm2d and LeakyReLU(0.2) down to one logit per
// image. Both train with Adam at lr 2e-4, betas (0.5, 0.999), on BCEWithLogitsLoss, in pytorch/examples'
// order: the discriminator's step on a real and a fake batch, then the generator's step, scored by the
// discriminator as if its fakes were real.
//
// After every epoch the generator draws a grid of samples from fixed noise into a PNG file
// (--samples; examples/png.h). The data: Fashion-MNIST's 60,000 training images (Debian's
// dataset-fashion-mnist package), or with --synthetic N generated images (examples/synthetic.h), which
// need no download. Exits 1 when a loss is not finite. At the defaults a step took about 0.33 s on one
// CPU thread of a 2-vCPU EPYC (937 steps an epoch); after 300 steps the grid already shows the
// outlines of shirts and trousers.
#include <tensorgrad.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "cli.h"
#include "device_flag.h"
#include "fashion_mnist.h"   // fashion_mnist_found, fashion_sets
#include "models.h"          // DcganGenerator, DcganDiscriminator
#include "png.h"             // write_png_gray

namespace {

struct Args {
  std::string data = "/usr/share/datasets/fashion-mnist";
  int64_t synthetic = 0;
  int epochs = 5;
  int max_steps = 0;
  int batch_size = 64;
  int nz = 100;
  int ngf = 64;
  int ndf = 64;
  double lr = 2e-4;
  double beta1 = 0.5;
  int grid = 8;
  std::string samples = "dcgan_fashion_mnist.png";
  int log_every = 100;
  int threads = 0;
  std::string device = "auto";
};

Args parse(int argc, char** argv) {
  Args a;
  cli::Parser p("dcgan_fashion_mnist",
                "Trains a DCGAN (ConvTranspose2d generator, Conv2d discriminator, BCEWithLogitsLoss, Adam) on\n"
                "Fashion-MNIST and writes a PNG grid of generated images after every epoch.");
  p.add("--data", a.data, "DIR", "folder of the four Fashion-MNIST IDX files, .gz or not");
  p.add("--synthetic", a.synthetic, "N", "train on N generated images instead of Fashion-MNIST; 0: Fashion-MNIST",
        cli::Range::non_negative);
  p.add("--epochs", a.epochs, "N", "passes over the training images", cli::Range::positive);
  p.add("--max-steps", a.max_steps, "N", "stop after N steps in all; 0: run every epoch", cli::Range::non_negative);
  p.add("--batch-size", a.batch_size, "B", "images per step (real and fake alike)", cli::Range::positive);
  p.add("--nz", a.nz, "N", "size of the generator's noise vector", cli::Range::positive);
  p.add("--ngf", a.ngf, "N", "width of the generator (its layers have 4N, 2N and 1 channels)", cli::Range::positive);
  p.add("--ndf", a.ndf, "N", "width of the discriminator (N and 2N channels)", cli::Range::positive);
  p.add("--lr", a.lr, "LR", "Adam's learning rate, both networks", cli::Range::positive);
  p.add("--beta1", a.beta1, "B", "Adam's beta1, both networks (beta2 is 0.999)", cli::Range::non_negative);
  p.add("--grid", a.grid, "N", "the sample grid is N x N images", cli::Range::positive);
  p.add("--samples", a.samples, "PATH", "PNG file the sample grid is written to");
  p.add("--log-every", a.log_every, "N", "steps between progress lines", cli::Range::positive);
  p.add("--threads", a.threads, "T", "CPU threads; 0 keeps the library's default", cli::Range::non_negative);
  add_device_flag(p, a.device);
  p.parse(argc, argv);
  if (a.beta1 >= 1) {
    char got[32];
    std::snprintf(got, sizeof got, "%g", a.beta1);
    p.fail(std::string("--beta1 expects a number in [0, 1), got ") + got);
  }
  if (a.grid > 64) p.fail("--grid " + std::to_string(a.grid) + " is more than 64 images a side");
  // Checked now rather than when the first epoch ends and the grid is written.
  const std::filesystem::path folder = std::filesystem::path(a.samples).parent_path();
  std::error_code ec;
  if (!folder.empty() && !std::filesystem::is_directory(folder, ec))
    p.fail("--samples " + a.samples + ": no folder " + folder.string());
  check_device_flag(p, a.device);
  return a;
}

/// The generator's images for `noise` as an n x n grid of 28x28 tiles, 2 black pixels between them
/// and around (torchvision's make_grid), in gray levels 0-255 from tanh's [-1, 1]. In training mode,
/// as pytorch/examples draws its samples: the batch norms use the grid's own statistics.
bool write_grid(DcganGenerator& generator, const tg::Tensor& noise, int n, const std::string& path) {
  tg::NoGradGuard no_grad;
  const tg::Tensor images = generator(noise).to(tg::Device::cpu()).contiguous();   // (n n, 1, 28, 28)
  const std::vector<float> v = images.to_vector<float>();
  const uint32_t pad = 2, tile = 28, side = static_cast<uint32_t>(n) * (tile + pad) + pad;
  std::vector<uint8_t> pixels(static_cast<std::size_t>(side) * side, 0);
  for (int k = 0; k < n * n; ++k) {
    const uint32_t top = pad + static_cast<uint32_t>(k / n) * (tile + pad);
    const uint32_t left = pad + static_cast<uint32_t>(k % n) * (tile + pad);
    for (uint32_t y = 0; y < tile; ++y)
      for (uint32_t x = 0; x < tile; ++x) {
        const float g = v[static_cast<std::size_t>(k) * tile * tile + y * tile + x];
        const float level = std::clamp((g + 1.0f) * 127.5f, 0.0f, 255.0f);
        pixels[static_cast<std::size_t>(top + y) * side + left + x] = static_cast<uint8_t>(std::lround(level));
      }
  }
  return write_png_gray(path, pixels, side, side);
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = parse(argc, argv);
  try {
    if (a.threads > 0) tg::set_num_threads(a.threads);
    const tg::Device device = device_from_flag(a.device);
    if (a.synthetic == 0 && !fashion_mnist_found(a.data)) return 2;
    const FashionSets sets = fashion_sets(a.synthetic, a.data);
    tg::data::DataLoader loader(sets.train,
                                tg::data::LoaderOptions().batch_size(a.batch_size).shuffle(true).seed(0).drop_last(true));
    if (loader.size() == 0) {
      std::fprintf(stderr, "dcgan_fashion_mnist: %lld images make no full batch of --batch-size %d\n",
                   static_cast<long long>(sets.train.size()), a.batch_size);
      return 1;
    }
    std::printf("data: %lld training images from %s, %lld steps per epoch\n", static_cast<long long>(sets.train.size()),
                sets.source.c_str(), static_cast<long long>(loader.size()));

    tg::manual_seed(0);
    DcganGenerator generator(a.nz, a.ngf);
    DcganDiscriminator discriminator(a.ndf);
    generator.to(device);
    discriminator.to(device);
    std::cout << "generator: " << generator << "\ndiscriminator: " << discriminator << "\n";
    const auto adam = tg::optim::AdamOptions(a.lr).betas(a.beta1, 0.999);
    tg::optim::Adam g_opt(generator.parameters(), adam), d_opt(discriminator.parameters(), adam);
    tg::nn::BCEWithLogitsLoss criterion;
    const tg::Tensor fixed_noise = tg::randn({a.grid * a.grid, a.nz, 1, 1}).to(device);
    const tg::Tensor real_label = tg::ones({a.batch_size}).to(device), fake_label = tg::zeros({a.batch_size}).to(device);

    const auto t0 = std::chrono::steady_clock::now();
    int step = 0;
    double d_loss = NAN, g_loss = NAN;
    bool done = false;
    for (int epoch = 1; epoch <= a.epochs && !done; ++epoch) {
      int64_t in_epoch = 0;
      for (auto& batch : loader) {
        ++step;
        ++in_epoch;
        const tg::Tensor real = batch.data.to(device) * 2.0 - 1.0;   // [0, 1] -> tanh's [-1, 1]
        // The discriminator: real images scored 1, the generator's (detached: no generator gradient) 0.
        d_opt.zero_grad();
        const tg::Tensor d_real = discriminator(real);
        const tg::Tensor loss_real = criterion(d_real, real_label);
        loss_real.backward();
        const tg::Tensor fake = generator(tg::randn({a.batch_size, a.nz, 1, 1}).to(device));
        const tg::Tensor d_fake = discriminator(fake.detach());
        const tg::Tensor loss_fake = criterion(d_fake, fake_label);
        loss_fake.backward();
        d_opt.step();
        // The generator: its fakes scored as real by the discriminator just updated.
        g_opt.zero_grad();
        const tg::Tensor d_fake2 = discriminator(fake);
        const tg::Tensor loss_g = criterion(d_fake2, real_label);
        loss_g.backward();
        g_opt.step();

        d_loss = loss_real.item() + loss_fake.item();
        g_loss = loss_g.item();
        if (!std::isfinite(d_loss) || !std::isfinite(g_loss)) {
          std::fprintf(stderr, "dcgan_fashion_mnist: a loss is not finite at step %d (D %g, G %g)\n", step, d_loss,
                       g_loss);
          return 1;
        }
        done = a.max_steps > 0 && step >= a.max_steps;
        if (step % a.log_every == 0 || in_epoch == loader.size() || done) {
          tg::NoGradGuard no_grad;
          std::printf("[epoch %d/%d][step %lld/%lld] loss D %.4f  loss G %.4f  D(x) %.4f  D(G(z)) %.4f / %.4f  %.1f s\n",
                      epoch, a.epochs, static_cast<long long>(in_epoch), static_cast<long long>(loader.size()),
                      d_loss, g_loss, tg::sigmoid(d_real).mean().item(), tg::sigmoid(d_fake).mean().item(),
                      tg::sigmoid(d_fake2).mean().item(), seconds_since(t0));
          std::fflush(stdout);
        }
        if (done) break;
      }
      if (!write_grid(generator, fixed_noise, a.grid, a.samples)) {
        std::fprintf(stderr, "dcgan_fashion_mnist: cannot write --samples %s\n", a.samples.c_str());
        return 1;
      }
      std::printf("epoch %d: wrote a %dx%d grid of samples to %s\n", epoch, a.grid, a.grid, a.samples.c_str());
      std::fflush(stdout);
    }
    std::printf("trained %d steps in %.1f s; final losses finite: D %.4f, G %.4f\n", step, seconds_since(t0), d_loss,
                g_loss);
    return 0;
  } catch (const tg::Error& e) {
    std::fprintf(stderr, "dcgan_fashion_mnist: %s\n", e.what());
    return 1;
  }
}
