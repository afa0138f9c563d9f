// tests/port/dcgan.cpp: a program written against libtorch's C++ frontend, in the shape of its DCGAN
// example: a generator module of ConvTranspose2d / BatchNorm2d layers declared with TORCH_MODULE, a
// discriminator built as a variadic Sequential, the MNIST dataset normalized to [-1, 1], a data loader
// with options, two Adam optimizers with tuple betas, binary_cross_entropy with noisy real labels, and
// checkpoints written by torch::save and read back by torch::load. The layers are narrower than the
// example's (kWidth) so that a CPU runs it in seconds. CTest compiles it after the rename of
// tests/port/port.cmake (torch:: -> tg::, <torch/torch.h> -> <tensorgrad.h>) and runs it on the
// Fashion-MNIST files; it also compiles against libtorch as it stands.
//
// Usage: dcgan DATA_ROOT CHECKPOINT_DIR [BATCHES]. Exit 0 when every loss stayed finite, the
// discriminator tells the real images from the fakes at the end (mean D(real) above mean D(fake)), the
// generator's images lie in [-1, 1], and the generator read back from its checkpoint makes the same
// images.
#include <torch/torch.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

const int64_t kNoiseSize = 32;
const int64_t kWidth = 16;   // the example's 64
const int64_t kBatchSize = 64;

struct DCGANGeneratorImpl : torch::nn::Module {
  DCGANGeneratorImpl(int64_t noise_size)
      : conv1(torch::nn::ConvTranspose2dOptions(noise_size, kWidth * 4, 4).bias(false)),
        batch_norm1(kWidth * 4),
        conv2(torch::nn::ConvTranspose2dOptions(kWidth * 4, kWidth * 2, 3).stride(2).padding(1).bias(false)),
        batch_norm2(kWidth * 2),
        conv3(torch::nn::ConvTranspose2dOptions(kWidth * 2, kWidth, 4).stride(2).padding(1).bias(false)),
        batch_norm3(kWidth),
        conv4(torch::nn::ConvTranspose2dOptions(kWidth, 1, 4).stride(2).padding(1).bias(false)) {
    register_module("conv1", conv1);
    register_module("conv2", conv2);
    register_module("conv3", conv3);
    register_module("conv4", conv4);
    register_module("batch_norm1", batch_norm1);
    register_module("batch_norm2", batch_norm2);
    register_module("batch_norm3", batch_norm3);
  }

  torch::Tensor forward(torch::Tensor x) {
    x = torch::relu(batch_norm1(conv1(x)));   // (N, 4w, 4, 4)
    x = torch::relu(batch_norm2(conv2(x)));   // (N, 2w, 7, 7)
    x = torch::relu(batch_norm3(conv3(x)));   // (N, w, 14, 14)
    x = torch::tanh(conv4(x));                // (N, 1, 28, 28)
    return x;
  }

  torch::nn::ConvTranspose2d conv1, conv2, conv3, conv4;
  torch::nn::BatchNorm2d batch_norm1, batch_norm2, batch_norm3;
};
TORCH_MODULE(DCGANGenerator);

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: dcgan DATA_ROOT CHECKPOINT_DIR [BATCHES]\n");
    return 2;
  }
  const std::string root = argv[1], dir = argv[2];
  const int64_t max_batches = argc > 3 ? std::atol(argv[3]) : 40;
  torch::manual_seed(1);

  DCGANGenerator generator(kNoiseSize);
  torch::nn::Sequential discriminator(
      // Layer 1
      torch::nn::Conv2d(torch::nn::Conv2dOptions(1, kWidth, 4).stride(2).padding(1).bias(false)),
      torch::nn::LeakyReLU(torch::nn::LeakyReLUOptions().negative_slope(0.2)),
      // Layer 2
      torch::nn::Conv2d(torch::nn::Conv2dOptions(kWidth, kWidth * 2, 4).stride(2).padding(1).bias(false)),
      torch::nn::BatchNorm2d(kWidth * 2),
      torch::nn::LeakyReLU(torch::nn::LeakyReLUOptions().negative_slope(0.2)),
      // Layer 3
      torch::nn::Conv2d(torch::nn::Conv2dOptions(kWidth * 2, kWidth * 4, 4).stride(2).padding(1).bias(false)),
      torch::nn::BatchNorm2d(kWidth * 4),
      torch::nn::LeakyReLU(torch::nn::LeakyReLUOptions().negative_slope(0.2)),
      // Layer 4
      torch::nn::Conv2d(torch::nn::Conv2dOptions(kWidth * 4, 1, 3).stride(1).padding(0).bias(false)),
      torch::nn::Sigmoid());

  auto dataset = torch::data::datasets::MNIST(root)
                     .map(torch::data::transforms::Normalize<>(0.5, 0.5))
                     .map(torch::data::transforms::Stack<>());
  auto data_loader =
      torch::data::make_data_loader(std::move(dataset), torch::data::DataLoaderOptions().batch_size(kBatchSize).workers(2));

  torch::optim::Adam generator_optimizer(generator->parameters(),
                                         torch::optim::AdamOptions(2e-4).betas(std::make_tuple(0.5, 0.5)));
  torch::optim::Adam discriminator_optimizer(discriminator->parameters(),
                                             torch::optim::AdamOptions(5e-4).betas(std::make_tuple(0.5, 0.5)));

  bool finite = true;
  double real_score = 0, fake_score = 0;
  int64_t batch_index = 0;
  for (torch::data::Example<>& batch : *data_loader) {
    // Train discriminator with real images.
    discriminator->zero_grad();
    torch::Tensor real_images = batch.data;
    torch::Tensor real_labels = torch::empty(batch.data.size(0)).uniform_(0.8, 1.0);
    torch::Tensor real_output = discriminator->forward(real_images).reshape(real_labels.sizes());
    torch::Tensor d_loss_real = torch::binary_cross_entropy(real_output, real_labels);
    d_loss_real.backward();

    // Train discriminator with fake images.
    torch::Tensor noise = torch::randn({batch.data.size(0), kNoiseSize, 1, 1});
    torch::Tensor fake_images = generator->forward(noise);
    torch::Tensor fake_labels = torch::zeros(batch.data.size(0));
    torch::Tensor fake_output = discriminator->forward(fake_images.detach()).reshape(fake_labels.sizes());
    torch::Tensor d_loss_fake = torch::binary_cross_entropy(fake_output, fake_labels);
    d_loss_fake.backward();

    torch::Tensor d_loss = d_loss_real + d_loss_fake;
    discriminator_optimizer.step();

    // Train generator.
    generator->zero_grad();
    fake_labels.fill_(1);
    fake_output = discriminator->forward(fake_images).reshape(fake_labels.sizes());
    torch::Tensor g_loss = torch::binary_cross_entropy(fake_output, fake_labels);
    g_loss.backward();
    generator_optimizer.step();

    ++batch_index;
    finite = finite && std::isfinite(d_loss.item<float>()) && std::isfinite(g_loss.item<float>());
    real_score = real_output.mean().item<double>();
    fake_score = fake_output.mean().item<double>();
    if (batch_index % 10 == 0) {
      std::printf("[%3ld] D_loss: %.4f | G_loss: %.4f | D(real) %.3f D(G(z)) %.3f\n", static_cast<long>(batch_index),
                  d_loss.item<float>(), g_loss.item<float>(), real_score, fake_score);
    }
    if (batch_index == max_batches) break;
  }

  torch::save(generator, dir + "/generator-checkpoint.pt");
  DCGANGenerator restored(kNoiseSize);
  torch::load(restored, dir + "/generator-checkpoint.pt");
  generator->eval();
  restored->eval();
  torch::NoGradGuard no_grad;
  torch::Tensor noise = torch::randn({8, kNoiseSize, 1, 1});
  torch::Tensor images = generator->forward(noise);
  const bool same = torch::allclose(images, restored->forward(noise));
  const bool in_range = images.min().item<float>() >= -1 && images.max().item<float>() <= 1;
  std::printf("losses finite: %d, D(real) %.3f > D(G(z)) %.3f: %d, images in [-1, 1]: %d, checkpoint read back: %d\n",
              finite, real_score, fake_score, real_score > fake_score, in_range, same);
  return finite && real_score > fake_score && in_range && same ? 0 : 1;
}
