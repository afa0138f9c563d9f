// examples/fashion_mnist.h: what 08_train_fashion_mnist.cpp and 09_compress_fashion_mnist.cpp share: the MLP
// 784-256-10, the data sets (Fashion-MNIST from the IDX files, or the generated --synthetic problem of
// synthetic.h), one training epoch with its progress lines, and the test accuracy. The flags and the
// main programs stay in the examples themselves.
#pragma once
#include <tensorgrad.h>

#include "synthetic.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

/// The MLP 784-256-10 (ReLU) as a Sequential with named layers, so that its state_dict keys are
/// "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias" (as its PyTorch twin nn.Sequential(OrderedDict))
/// and the quantization passes (quantize_dynamic, prepare_qat, convert) can replace its Linear layers.
inline std::unique_ptr<tg::nn::Sequential> fashion_mlp() {
  auto net = std::make_unique<tg::nn::Sequential>();
  net->push_back("flatten", std::make_unique<tg::nn::Flatten>());
  net->push_back("fc1", std::make_unique<tg::nn::Linear>(784, 256));
  net->push_back("relu", std::make_unique<tg::nn::ReLU>());
  net->push_back("fc2", std::make_unique<tg::nn::Linear>(256, 10));
  return net;
}

/// The training and test sets and where they came from.
struct FashionSets {
  tg::data::TensorDataset train, test;
  std::string source;
};

/// Whether the four Fashion-MNIST files are in dir (.gz or not); when not, says how to get them on
/// stderr and returns false (the caller exits 2).
inline bool fashion_mnist_found(const std::string& dir) {
  if (std::filesystem::exists(dir + "/train-images-idx3-ubyte.gz") ||
      std::filesystem::exists(dir + "/train-images-idx3-ubyte"))
    return true;
  std::fprintf(stderr,
               "error: Fashion-MNIST not found in %s\n"
               "  install it with: sudo apt-get install dataset-fashion-mnist\n"
               "  or pass --data DIR with train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz,\n"
               "  t10k-images-idx3-ubyte.gz and t10k-labels-idx1-ubyte.gz\n"
               "  or pass --synthetic N to train on generated images\n",
               dir.c_str());
  return false;
}

/// Fashion-MNIST from dir, or with synthetic > 0 that many generated training images (and synthetic / 5
/// test images); blocks: the CNN's block patterns (synthetic.h).
inline FashionSets fashion_sets(int64_t synthetic, const std::string& dir, bool blocks = false) {
  const int64_t n_test = std::max<int64_t>(synthetic / 5, 1);
  if (synthetic > 0)
    return {synthetic_set(synthetic, 1234, 1, blocks), synthetic_set(n_test, 1234, 2, blocks),
            "synthetic 10-class images (--synthetic)"};
  return {tg::data::FashionMNIST(dir, tg::data::Split::Train), tg::data::FashionMNIST(dir, tg::data::Split::Test), dir};
}

inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// Fraction of the loader's images classified correctly, in eval mode without recording a graph.
inline double evaluate(tg::nn::Module& model, tg::data::DataLoader& loader, tg::Device device) {
  tg::NoGradGuard no_grad;
  const bool was_training = model.is_training();
  model.eval();
  int64_t correct = 0, seen = 0;
  for (auto& batch : loader) {
    tg::Tensor logits = model(batch.data.to(device, /*non_blocking=*/true));
    correct += static_cast<int64_t>((logits.argmax(1) == batch.target.to(device)).sum().item());
    seen += batch.target.numel();
  }
  model.train(was_training);
  return static_cast<double>(correct) / static_cast<double>(seen);
}

/// One pass over the loader: cross-entropy, backward (scaled by scaler), optimizer step, with a progress
/// line about once a second ("epoch E/EPOCHS  step ..."), timed from start. amp: the forward under
/// autocast (bfloat16 on the CPU, float16 on CUDA). Returns the mean loss.
inline double train_epoch(tg::nn::Module& model, tg::data::DataLoader& loader, tg::optim::Optimizer& optimizer,
                          tg::amp::GradScaler& scaler, tg::Device device, bool amp, int epoch, int epochs,
                          std::chrono::steady_clock::time_point start) {
  tg::nn::CrossEntropyLoss criterion;
  model.train();
  const auto epoch_start = std::chrono::steady_clock::now();
  auto last_print = epoch_start;
  double loss_sum = 0;
  int64_t step = 0, samples = 0;
  for (auto& batch : loader) {
    optimizer.zero_grad();
    tg::Tensor loss;
    {
      // --amp: Linear layers in the lower precision, the loss in float32 (Note [Autocast op lists])
      tg::amp::AutocastGuard autocast(device, device.is_cuda() ? tg::kFloat16 : tg::kBFloat16, amp);
      loss = criterion(model(batch.data.to(device, true)), batch.target.to(device, true));
    }
    scaler.scale(loss).backward();
    scaler.step(optimizer);
    scaler.update();
    loss_sum += loss.item();
    ++step;
    samples += batch.target.numel();
    const bool last = step == loader.size();
    if (last || seconds_since(last_print) >= 1.0) {
      last_print = std::chrono::steady_clock::now();
      std::printf("epoch %d/%d  step %lld/%lld  loss %.4f  %.0f samples/s  elapsed %.1fs\n", epoch, epochs,
                  static_cast<long long>(step), static_cast<long long>(loader.size()), loss_sum / step,
                  samples / seconds_since(epoch_start), seconds_since(start));
      std::fflush(stdout);
    }
  }
  return step > 0 ? loss_sum / static_cast<double>(step) : 0.0;
}
