// examples/08_train_fashion_mnist.cpp: the main job (`make train`). An MLP 784-256-10 (ReLU), or with
// --model cnn a small CNN (two conv-batchnorm-relu-maxpool blocks and two linear layers, about 92.5%
// test accuracy), trained on Fashion-MNIST with SGD + momentum and a cosine learning-rate schedule, batches from the DataLoader,
// a progress line about once a second, test accuracy after every epoch, then a checkpoint that is
// saved, reloaded into a fresh model and re-evaluated to the same accuracy. With --synthetic N it trains
// on N generated 28x28 images of 10 classes instead (no dataset needed, e.g. on a bare GPU machine),
// and --min-accuracy makes a low final accuracy fail the run (exit 1).
// Flags: `train_fashion_mnist --help` (parsed by examples/cli.h).
#include <tensorgrad.h>

#include "cli.h"
#include "device_flag.h"
#include "fashion_mnist.h"
#include "models.h"   // Cnn

#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

namespace {

std::unique_ptr<tg::nn::Module> make_model(const std::string& kind) {
  if (kind == "cnn") return std::make_unique<Cnn>();
  return fashion_mlp();
}

struct Args {
  int epochs = 12;
  int64_t batch_size = 64;
  double lr = 0.05;
  std::string device = "auto";
  std::string data = "/usr/share/datasets/fashion-mnist";
  int threads = 0;
  std::string checkpoint;   // default: fashion_mnist_<model>.safetensors
  std::string model = "mlp";
  int64_t synthetic = 0;
  double min_accuracy = 0;
  bool amp = false;
  std::string metrics;   // CSV file, empty: none
};

/// The flags (examples/cli.h): --help lists them with their defaults; a bad one exits 2 naming it.
Args parse(int argc, char** argv) {
  Args a;
  cli::Parser p("train_fashion_mnist",
                "Trains an MLP 784-256-10 (ReLU) on Fashion-MNIST with SGD, momentum 0.9 and a cosine schedule,\n"
                "prints the test accuracy after every epoch, then saves the model, reloads it into a fresh one\n"
                "and checks that it scores the same.");
  p.add("--epochs", a.epochs, "N", "passes over the 60,000 training images", cli::Range::positive);
  p.add("--batch-size", a.batch_size, "B", "training images per step", cli::Range::positive);
  p.add("--lr", a.lr, "LR", "initial learning rate, annealed to 0 over the epochs", cli::Range::positive);
  add_device_flag(p, a.device);
  p.add("--data", a.data, "DIR", "folder of the four Fashion-MNIST IDX files, .gz or not");
  p.add("--threads", a.threads, "T", "CPU threads; 0 keeps the library's default", cli::Range::non_negative);
  p.add("--model", a.model, "M", "mlp (784-256-10) or cnn (two conv blocks with batchnorm)");
  p.add("--checkpoint", a.checkpoint, "PATH",
        "safetensors file the trained model is saved to and reloaded from (default fashion_mnist_<model>.safetensors)");
  p.add("--synthetic", a.synthetic, "N",
        "train on N generated images of 10 classes (and test on N/5), not Fashion-MNIST; 0: Fashion-MNIST",
        cli::Range::non_negative);
  p.add("--min-accuracy", a.min_accuracy, "P", "exit 1 when the final test accuracy is below P (0 to 1)",
        cli::Range::non_negative);
  p.add("--metrics", a.metrics, "CSV",
        "write epoch, train_loss, test_accuracy, lr and seconds to this CSV file (tools/plot_metrics.sh draws it)");
  p.add("--amp", a.amp,
        "mixed precision: the forward under tg::amp::AutocastGuard (bfloat16 on the CPU, float16 with a GradScaler on CUDA)");
  p.parse(argc, argv);
  if (a.min_accuracy > 1) {
    char got[32];
    std::snprintf(got, sizeof got, "%g", a.min_accuracy);
    p.fail(std::string("--min-accuracy expects a fraction in [0, 1], got ") + got);
  }
  if (a.model != "mlp" && a.model != "cnn") p.fail("--model expects mlp or cnn, got '" + a.model + "'");
  if (a.checkpoint.empty()) a.checkpoint = "fashion_mnist_" + a.model + ".safetensors";
  check_device_flag(p, a.device);
  return a;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Args args = parse(argc, argv);
    if (args.threads > 0) tg::set_num_threads(args.threads);
    // Momentum buffers of weights that never get a gradient (the always-black border pixels) decay
    // into subnormal floats; flushing them to zero keeps every epoch as fast as the first.
    tg::set_flush_denormal(true);
    const tg::Device device = device_from_flag(args.device);
    std::printf("device: %s (%d CPU threads)%s\n", device.str().c_str(), tg::get_num_threads(),
                tg::cuda::is_available() ? "" : "; CUDA not available");

    if (args.synthetic == 0 && !fashion_mnist_found(args.data)) return 2;
    const FashionSets sets = fashion_sets(args.synthetic, args.data, args.model == "cnn");
    const tg::data::TensorDataset& train_set = sets.train;
    const tg::data::TensorDataset& test_set = sets.test;
    const std::string& source = sets.source;
    tg::data::DataLoader train_loader(
        train_set, tg::data::LoaderOptions().batch_size(args.batch_size).shuffle(true).pin_memory(true).seed(0));
    tg::data::DataLoader test_loader(test_set, tg::data::LoaderOptions().batch_size(1000));
    std::printf("data: %lld training and %lld test images from %s\n", static_cast<long long>(train_set.size()),
                static_cast<long long>(test_set.size()), source.c_str());

    tg::manual_seed(0);
    std::unique_ptr<tg::nn::Module> net = make_model(args.model);
    tg::nn::Module& model = *net;
    model.to(device);
    std::cout << model << "\n";
    if (args.amp)
      std::printf("mixed precision: %s autocast around the forward\n", device.is_cuda() ? "float16" : "bfloat16");
    tg::optim::SGD optimizer(model.parameters(), tg::optim::SGDOptions(args.lr).momentum(0.9));
    tg::optim::CosineAnnealingLR schedule(optimizer, args.epochs);
    // float16 gradients can underflow: on CUDA --amp scales the loss (bfloat16 has float32's range)
    tg::amp::GradScaler scaler(tg::amp::GradScalerOptions().enabled(args.amp && device.is_cuda()));

        std::FILE* csv = nullptr;
    if (!args.metrics.empty()) {
      csv = std::fopen(args.metrics.c_str(), "w");
      if (csv == nullptr) throw tg::IOError("cannot write --metrics " + args.metrics);
      std::fprintf(csv, "epoch,train_loss,test_accuracy,lr,seconds\n");
    }
    const auto start = std::chrono::steady_clock::now();
    double accuracy = 0;
    for (int epoch = 1; epoch <= args.epochs; ++epoch) {
      const double loss = train_epoch(model, train_loader, optimizer, scaler, device, args.amp, epoch, args.epochs, start);
      schedule.step();
      accuracy = evaluate(model, test_loader, device);
      std::printf("epoch %d: test accuracy %.2f%%  (lr now %.4f)\n", epoch, 100 * accuracy, optimizer.lr());
      std::fflush(stdout);
      if (csv != nullptr) {
        std::fprintf(csv, "%d,%.5f,%.5f,%.6g,%.3f\n", epoch, loss, accuracy, optimizer.lr(), seconds_since(start));
        std::fflush(csv);
      }
    }
    if (csv != nullptr) std::fclose(csv);
    const double train_seconds = seconds_since(start);
    std::printf("trained %d epochs in %.1fs: test accuracy %.2f%%\n", args.epochs, train_seconds, 100 * accuracy);

    tg::save(model, args.checkpoint);
    std::unique_ptr<tg::nn::Module> restored = make_model(args.model);
    tg::load(*restored, args.checkpoint);
    restored->to(device);
    const double again = evaluate(*restored, test_loader, device);
    std::printf("checkpoint %s reloaded into a fresh model: test accuracy %.2f%% (%s)\n", args.checkpoint.c_str(),
                100 * again, again == accuracy ? "identical" : "DIFFERENT");
    if (accuracy < args.min_accuracy) {
      std::printf("FAIL: test accuracy %.2f%% is below --min-accuracy %.2f%%\n", 100 * accuracy, 100 * args.min_accuracy);
      return 1;
    }
    return again == accuracy ? 0 : 1;
  } catch (const tg::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
