// examples/09_compress_fashion_mnist.cpp: making the Fashion-MNIST MLP 784-256-10 smaller. It trains the
// float32 model (as train_fashion_mnist does), then compares with it, on the test set:
//   1. dynamic quantization (quantize_dynamic): int8 weights, activations quantized per batch; the
//      accuracy and the checkpoint size;
//   2. 50% global magnitude pruning (global_unstructured over fc1 and fc2) and one epoch of fine-tuning;
//   3. quantization-aware training: prepare_qat, one epoch through fake-quantized weights and inputs,
//      then convert to int8 Linear layers with fixed input scales (static quantization);
//   4. static post-training quantization: prepare (observers on the Linear inputs), a calibration pass
//      over --calibration-batches training batches, convert to the same int8 Linear layers.
// The bars: dynamic within 0.5 points of float32 with a checkpoint 3.5x smaller, pruned
// within 1 point, QAT within 0.5 points; --check makes a missed bar fail the run (exit 1).
// With --synthetic N it uses the generated images of synthetic.h instead of Fashion-MNIST.
// Flags: `compress_fashion_mnist --help` (parsed by examples/cli.h).
#include <tensorgrad.h>

#include "cli.h"
#include "fashion_mnist.h"

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace {

struct Args {
  int epochs = 8;
  int64_t batch_size = 64;
  double lr = 0.05;
  double finetune_lr = 0.005;
  std::string data = "/usr/share/datasets/fashion-mnist";
  int threads = 0;
  int calibration_batches = 32;
  int64_t synthetic = 0;
  std::string dir = std::filesystem::temp_directory_path().string();
  bool check = false;
};

Args parse(int argc, char** argv) {
  Args a;
  cli::Parser p("compress_fashion_mnist",
                "Trains the MLP 784-256-10 on Fashion-MNIST, then compares dynamic int8 quantization, 50% global\n"
                "magnitude pruning with one epoch of fine-tuning, and one epoch of quantization-aware training\n"
                "(converted to int8) with the float32 model: test accuracy and checkpoint size.");
  p.add("--epochs", a.epochs, "N", "float32 training epochs (SGD, momentum 0.9, cosine schedule)", cli::Range::positive);
  p.add("--batch-size", a.batch_size, "B", "training images per step", cli::Range::positive);
  p.add("--lr", a.lr, "LR", "initial learning rate of the float32 training", cli::Range::positive);
  p.add("--finetune-lr", a.finetune_lr, "LR", "learning rate of the pruning and QAT epochs", cli::Range::positive);
  p.add("--data", a.data, "DIR", "folder of the four Fashion-MNIST IDX files, .gz or not");
  p.add("--threads", a.threads, "T", "CPU threads; 0 keeps the library's default", cli::Range::non_negative);
  p.add("--calibration-batches", a.calibration_batches, "N",
        "training batches the static quantization observes before convert", cli::Range::positive);
  p.add("--synthetic", a.synthetic, "N",
        "train on N generated images of 10 classes (and test on N/5), not Fashion-MNIST; 0: Fashion-MNIST",
        cli::Range::non_negative);
  p.add("--dir", a.dir, "DIR", "folder for the float32 and int8 checkpoints whose sizes are compared");
  p.add("--check", a.check, "exit 1 when a stage misses its bar (0.5 / 1 / 0.5 points, 3.5x smaller)");
  p.parse(argc, argv);
  return a;
}

/// The named child of a Sequential (the Linear layers fc1 and fc2 of fashion_mlp()).
tg::nn::Module& child(tg::nn::Module& model, const std::string& name) {
  for (const auto& c : model.children())
    if (c.first == name) return *c.second;
  throw tg::Error("compress_fashion_mnist: the model has no layer '" + name + "'");
}

/// The size in bytes of model's checkpoint written to path.
double checkpoint_bytes(const tg::nn::Module& model, const std::string& path) {
  tg::save(model, path);
  const double bytes = static_cast<double>(std::filesystem::file_size(path));
  std::filesystem::remove(path);
  return bytes;
}

struct Bar {
  std::string what;
  bool met;
};

}  // namespace

int main(int argc, char** argv) {
  try {
    const Args args = parse(argc, argv);
    if (args.threads > 0) tg::set_num_threads(args.threads);
    tg::set_flush_denormal(true);   // see 08_train_fashion_mnist.cpp: momentum buffers decay into subnormals
    const tg::Device device = tg::Device::cpu();   // the int8 kernels run on the CPU
    std::printf("device: cpu (%d threads); int8 product on oneDNN: %s\n", tg::get_num_threads(),
                tg::quantization::has_onednn() ? "yes" : "no (reference loop)");
    if (args.synthetic == 0 && !fashion_mnist_found(args.data)) return 2;
    const FashionSets sets = fashion_sets(args.synthetic, args.data);
    tg::data::DataLoader train_loader(
        sets.train, tg::data::LoaderOptions().batch_size(args.batch_size).shuffle(true).seed(0));
    tg::data::DataLoader test_loader(sets.test, tg::data::LoaderOptions().batch_size(1000));
    std::printf("data: %lld training and %lld test images from %s\n", static_cast<long long>(sets.train.size()),
                static_cast<long long>(sets.test.size()), sets.source.c_str());
    const auto start = std::chrono::steady_clock::now();
    tg::amp::GradScaler no_scaling(tg::amp::GradScalerOptions().enabled(false));

    // ---- float32
    tg::manual_seed(0);
    std::unique_ptr<tg::nn::Sequential> model = fashion_mlp();
    {
      tg::optim::SGD optimizer(model->parameters(), tg::optim::SGDOptions(args.lr).momentum(0.9));
      tg::optim::CosineAnnealingLR schedule(optimizer, args.epochs);
      for (int epoch = 1; epoch <= args.epochs; ++epoch) {
        train_epoch(*model, train_loader, optimizer, no_scaling, device, false, epoch, args.epochs, start);
        schedule.step();
      }
    }
    const double acc_f32 = evaluate(*model, test_loader, device);
    const double bytes_f32 = checkpoint_bytes(*model, args.dir + "/compress_f32.safetensors");
    std::printf("float32: test accuracy %.2f%%, checkpoint %.0f bytes\n", 100 * acc_f32, bytes_f32);

    // ---- 1. dynamic quantization
    std::unique_ptr<tg::nn::Module> dynamic = tg::quantization::quantize_dynamic(*model);
    const double acc_dyn = evaluate(*dynamic, test_loader, device);
    const double bytes_dyn = checkpoint_bytes(*dynamic, args.dir + "/compress_int8.safetensors");
    std::printf("quantize_dynamic: test accuracy %.2f%%, checkpoint %.0f bytes (%.2fx smaller)\n", 100 * acc_dyn,
                bytes_dyn, bytes_f32 / bytes_dyn);

    // ---- 2. 50% global magnitude pruning + one epoch of fine-tuning
    std::unique_ptr<tg::nn::Module> pruned = model->clone();
    tg::nn::utils::prune::global_unstructured({{&child(*pruned, "fc1"), "weight"}, {&child(*pruned, "fc2"), "weight"}},
                                              0.5);
    const double acc_pruned_before = evaluate(*pruned, test_loader, device);
    {
      tg::optim::SGD optimizer(pruned->parameters(), tg::optim::SGDOptions(args.finetune_lr).momentum(0.9));
      train_epoch(*pruned, train_loader, optimizer, no_scaling, device, false, 1, 1, start);
    }
    tg::nn::utils::prune::remove(child(*pruned, "fc1"), "weight");
    tg::nn::utils::prune::remove(child(*pruned, "fc2"), "weight");
    const double acc_pruned = evaluate(*pruned, test_loader, device);
    int64_t zeros = 0, total = 0;
    for (const char* name : {"fc1", "fc2"}) {
      const tg::Tensor& w = dynamic_cast<tg::nn::Linear&>(child(*pruned, name)).weight;
      zeros += static_cast<int64_t>((w == 0.0).sum().item());
      total += w.numel();
    }
    std::printf("pruned 50%%: test accuracy %.2f%% before fine-tuning, %.2f%% after one epoch (%.1f%% of the "
                "weights zero)\n",
                100 * acc_pruned_before, 100 * acc_pruned, 100.0 * double(zeros) / double(total));

    // ---- 3. quantization-aware training, then int8
    std::unique_ptr<tg::nn::Module> qat = tg::quantization::prepare_qat(*model);
    {
      tg::optim::SGD optimizer(qat->parameters(), tg::optim::SGDOptions(args.finetune_lr).momentum(0.9));
      train_epoch(*qat, train_loader, optimizer, no_scaling, device, false, 1, 1, start);
    }
    tg::quantization::disable_observer(*qat);   // the test images must not move the scales
    const double acc_qat = evaluate(*qat, test_loader, device);
    std::unique_ptr<tg::nn::Module> int8 = tg::quantization::convert(*qat);
    const double acc_int8 = evaluate(*int8, test_loader, device);
    const double bytes_int8 = checkpoint_bytes(*int8, args.dir + "/compress_qat_int8.safetensors");
    std::printf("QAT: test accuracy %.2f%% fake-quantized, %.2f%% converted to int8, checkpoint %.0f bytes (%.2fx "
                "smaller)\n",
                100 * acc_qat, 100 * acc_int8, bytes_int8, bytes_f32 / bytes_int8);

    // ---- 4. static post-training quantization: observe the Linear inputs, then convert
    std::unique_ptr<tg::nn::Module> observed = tg::quantization::prepare(*model);
    {
      tg::NoGradGuard no_grad;
      int seen = 0;
      for (auto& batch : train_loader) {
        (*observed)(batch.data);
        if (++seen == args.calibration_batches) break;
      }
    }
    std::unique_ptr<tg::nn::Module> static_int8 = tg::quantization::convert(*observed);
    const double acc_static = evaluate(*static_int8, test_loader, device);
    std::printf("static quantization (%d calibration batches): test accuracy %.2f%%\n", args.calibration_batches,
                100 * acc_static);

    // ---- the bars, in points of test accuracy below float32
    const std::vector<Bar> bars = {
        {"quantize_dynamic within 0.5 points", 100 * (acc_f32 - acc_dyn) <= 0.5},
        {"quantize_dynamic checkpoint >= 3.5x smaller", bytes_f32 / bytes_dyn >= 3.5},
        {"50% pruning + 1 epoch within 1 point", 100 * (acc_f32 - acc_pruned) <= 1.0},
        {"QAT (converted to int8) within 0.5 points", 100 * (acc_f32 - acc_int8) <= 0.5},
    };
    std::printf("\n%-46s %s\n", "bar", "result");
    bool all = true;
    for (const Bar& b : bars) {
      std::printf("%-46s %s\n", b.what.c_str(), b.met ? "met" : "MISSED");
      all = all && b.met;
    }
    std::printf("took %.1fs\n", seconds_since(start));
    if (args.check && !all) {
      std::printf("FAIL: a stage missed its bar (--check)\n");
      return 1;
    }
    return 0;
  } catch (const tg::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
