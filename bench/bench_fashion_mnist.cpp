// bench/bench_fashion_mnist.cpp: the `make train` model (MLP 784-256-10, ReLU, SGD momentum 0.9, lr 0.05
// with the cosine schedule, batch 64) trained on Fashion-MNIST by both engines: seconds per epoch and test
// accuracy after the same number of epochs. libtorch gets tensorgrad's data (copied once), its initial
// weights and each epoch's shuffled order, so both see the same batches; tensorgrad reads them through
// tg::data::DataLoader (prefetch thread) as `make train` does, libtorch gathers them with index_select.
// Target: epoch <= 0.8x libtorch, accuracy within 0.5 points. Exit 77 (CTest skip) without data.
// Flags: --help (bench/common.h).
#include "common.h"

#include <filesystem>
#include <memory>

namespace {

struct Net : tg::nn::Module {
  tg::nn::Flatten flatten;
  tg::nn::Linear fc1{784, 256}, fc2{256, 10};
  Net() {
    register_module("flatten", flatten);
    register_module("fc1", fc1);
    register_module("fc2", fc2);
  }
  tg::Tensor forward(const tg::Tensor& x) override { return fc2(tg::relu(fc1(flatten(x)))); }
};

double evaluate(Net& model, tg::data::DataLoader& loader) {
  tg::NoGradGuard no_grad;
  model.eval();
  int64_t correct = 0, seen = 0;
  for (auto& batch : loader) {
    correct += static_cast<int64_t>((model(batch.data).argmax(1) == batch.target).sum().item());
    seen += batch.target.numel();
  }
  model.train();
  return seen ? static_cast<double>(correct) / static_cast<double>(seen) : NAN;
}

/// The first k samples of d as a dataset of its own (smoke runs).
std::unique_ptr<tg::data::TensorDataset> head(const tg::data::TensorDataset& d, int64_t k) {
  k = std::min(k, d.size());
  return std::make_unique<tg::data::TensorDataset>(tg::Tensor(d.data().data().narrow(0, 0, k)),
                                                   tg::Tensor(d.targets().data().narrow(0, 0, k)));
}

const float* floats(const tg::Tensor& v) {
  if (!v.is_contiguous()) throw tg::Error("bench_fashion_mnist: expected contiguous data");
  return v.data().data<float>();
}

}  // namespace

int main(int argc, char** argv) {
  using namespace bench;
  const Options o = parse_options(argc, argv, "bench_fashion_mnist",
      "The `make train` model trained on Fashion-MNIST by tensorgrad and libtorch on the same batches:\n"
      "seconds per epoch and test accuracy. Exits 77 (CTest: skipped) without the data.");
  if (!std::filesystem::exists(o.data + "/train-images-idx3-ubyte.gz") &&
      !std::filesystem::exists(o.data + "/train-images-idx3-ubyte")) {
    std::fprintf(stderr,
                 "bench_fashion_mnist: no Fashion-MNIST in %s (apt-get install dataset-fashion-mnist): skipped\n",
                 o.data.c_str());
    return 77;
  }
  set_threads(o.threads);
  // As `make train` does: subnormal floats (momentum of weights whose gradient is always zero, such as
  // the border pixels') flushed to zero, in both engines.
  tg::set_flush_denormal(true);
  torch_side::set_flush_denormal(true);
  print_header("Fashion-MNIST, MLP 784-256-10, SGD momentum 0.9, lr 0.05 cosine, batch 64; " +
                   std::to_string(o.epochs) + " epoch(s)",
               o);
  try {
    const tg::data::FashionMNIST full_train(o.data, tg::data::Split::Train);
    const tg::data::FashionMNIST full_test(o.data, tg::data::Split::Test);
    std::unique_ptr<tg::data::TensorDataset> small_train, small_test;
    if (o.smoke) {
      small_train = head(full_train, 512);
      small_test = head(full_test, 256);
    }
    using Base = const tg::data::TensorDataset&;
    Base train = o.smoke ? *small_train : static_cast<Base>(full_train);
    Base test = o.smoke ? *small_test : static_cast<Base>(full_test);
    const int64_t batch = 64;
    const double lr = 0.05, momentum = 0.9;
    tg::data::DataLoader train_loader(train, tg::data::LoaderOptions().batch_size(batch).shuffle(true).seed(0));
    tg::data::DataLoader test_loader(test, tg::data::LoaderOptions().batch_size(1000));

    tg::manual_seed(0);
    Net model;
    tg::optim::SGD optimizer(model.parameters(), tg::optim::SGDOptions(lr).momentum(momentum));
    std::unique_ptr<torch_side::FashionTrainer> torch_model;
    if (torch_side::available()) {
      const torch_side::FashionTrainer::Init init{floats(model.fc1.weight), floats(model.fc1.bias),
                                                   floats(model.fc2.weight), floats(model.fc2.bias), 784, 256, 10};
      torch_model = std::make_unique<torch_side::FashionTrainer>(
          floats(train.data()), train.targets().data().data<int64_t>(), train.size(), floats(test.data()),
          test.targets().data().data<int64_t>(), test.size(), init, lr, momentum);
    }

    Table per_epoch({"epoch", "lr", "tensorgrad s", "tg mean loss", "libtorch s", "torch mean loss"});
    std::vector<double> tg_s, torch_s;
    for (int e = 0; e < o.epochs; ++e) {
      // CosineAnnealingLR(T_max = epochs) stepped after each epoch, as `make train` does
      const double lr_e = 0.5 * lr * (1 + std::cos(3.14159265358979323846 * e / o.epochs));
      const std::vector<int64_t> order = train_loader.order(train_loader.epoch());
      optimizer.set_lr(lr_e);
      auto t0 = Clock::now();
      double loss_sum = 0;
      int64_t steps = 0;
      for (auto& b : train_loader) {
        optimizer.zero_grad();
        tg::Tensor loss = tg::cross_entropy(model(b.data), b.target);
        loss.backward();
        optimizer.step();
        loss_sum += loss.item();
        ++steps;
      }
      tg_s.push_back(seconds_since(t0));
      const double tg_loss = loss_sum / static_cast<double>(steps);
      double torch_loss = NAN;
      if (torch_model) {
        t0 = Clock::now();
        torch_loss = torch_model->train_epoch(order, batch, lr_e);
        torch_s.push_back(seconds_since(t0));
      }
      per_epoch.row({std::to_string(e + 1), fmt("%.4f", lr_e), fmt("%.2f", tg_s.back()), fmt("%.4f", tg_loss),
                     torch_model ? fmt("%.2f", torch_s.back()) : "n/a", fmt("%.4f", torch_loss)});
    }
    per_epoch.print();
    const double tg_acc = evaluate(model, test_loader);
    const double torch_acc = torch_model ? torch_model->test_accuracy() : NAN;
    const Stats ts = summarize(tg_s), hs = summarize(torch_s);
    const double r = time_ratio(ts, hs);
    const double gap = 100 * (tg_acc - torch_acc);
    Table summary({"engine", "s/epoch median [min..max]", "test accuracy", "tg/torch", "target"});
    summary.row({"tensorgrad", cell(ts, 1, "%.2f"), fmt("%.2f%%", 100 * tg_acc), ratio_str(r),
                 "<= 0.8x: " + verdict(r, r <= 0.8)});
    summary.row({"libtorch", cell(hs, 1, "%.2f"), torch_model ? fmt("%.2f%%", 100 * torch_acc) : "n/a", "",
                 "accuracy within 0.5 points: " + verdict(gap, std::fabs(gap) <= 0.5)});
    summary.print();
    if (!o.smoke)
      print_target("Fashion-MNIST epoch (" + std::to_string(o.epochs) + " epoch" + (o.epochs > 1 ? "s" : "") + ")",
                   o.threads, ratio_str(r) + " libtorch, acc " + fmt("%+.2f", gap) + " points",
                   "target <= 0.8x, accuracy within 0.5", verdict(r, r <= 0.8 && std::fabs(gap) <= 0.5));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_fashion_mnist: %s\n", e.what());
    return 1;
  }
  print_footer();
  return 0;
}
