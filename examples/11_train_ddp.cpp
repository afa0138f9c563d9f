// examples/11_train_ddp.cpp: the Fashion-MNIST MLP of 08_train_fashion_mnist.cpp trained by several
// processes with DistributedDataParallel over Gloo. Launch it through tools/tgrun, which sets RANK,
// WORLD_SIZE, MASTER_ADDR and MASTER_PORT:
//   tools/tgrun --nproc-per-node 2 build/examples/train_ddp --epochs 1
// Every epoch all ranks shuffle the sample order with the same seed and rank r takes the batches
// r, r + world, r + 2 world, ...: each rank a shard, together one pass. DDP averages the gradients, so
// the replicas stay identical (checked at the end with an all_reduce of the parameters' max and min).
// --synthetic N trains on generated images (examples/synthetic.h) instead of the dataset. --backend
// nccl trains on the GPUs instead, one per rank (cuda:LOCAL_RANK), with the gradients reduced by NCCL.
#include <tensorgrad.h>

#include "cli.h"
#include "synthetic.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <numeric>
#include <random>
#include <string>

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

struct Args {
  int epochs = 2;
  int64_t batch_size = 64;
  double lr = 0.05;
  std::string data = "/usr/share/datasets/fashion-mnist";
  int threads = 1;
  int64_t synthetic = 0;
  double min_accuracy = 0;
  std::string backend = "gloo";
};

Args parse(int argc, char** argv) {
  Args a;
  cli::Parser p("train_ddp",
                "Trains an MLP 784-256-10 on Fashion-MNIST with DistributedDataParallel on every process of a\n"
                "tg::distributed job (launch with tools/tgrun --nproc-per-node N); rank 0 reports the accuracy.");
  p.add("--epochs", a.epochs, "N", "passes over the training set, shared by the ranks", cli::Range::positive);
  p.add("--batch-size", a.batch_size, "B", "training images per step on each rank", cli::Range::positive);
  p.add("--lr", a.lr, "LR", "learning rate (SGD, momentum 0.9)", cli::Range::positive);
  p.add("--data", a.data, "DIR", "folder of the four Fashion-MNIST IDX files, .gz or not");
  p.add("--threads", a.threads, "T", "CPU threads per rank; 0 keeps the library's default", cli::Range::non_negative);
  p.add("--synthetic", a.synthetic, "N", "train on N generated images (test on N/5) instead of Fashion-MNIST",
        cli::Range::non_negative);
  p.add("--min-accuracy", a.min_accuracy, "P", "exit 1 when the final test accuracy is below P (0 to 1)",
        cli::Range::non_negative);
  p.add("--backend", a.backend, "NAME", "gloo (on the CPU) or nccl (on the GPU cuda:LOCAL_RANK of each rank)");
  p.parse(argc, argv);
  return a;
}

double accuracy(Net& model, const tg::data::TensorDataset& test, tg::Device device) {
  tg::NoGradGuard no_grad;
  model.eval();
  tg::data::DataLoader loader(test, tg::data::LoaderOptions().batch_size(1000));
  int64_t correct = 0, seen = 0;
  for (auto& batch : loader) {
    correct += static_cast<int64_t>((model(batch.data.to(device)).argmax(1) == batch.target.to(device)).sum().item());
    seen += batch.target.numel();
  }
  model.train();
  return static_cast<double>(correct) / static_cast<double>(seen);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Args args = parse(argc, argv);
    if (args.threads > 0) tg::set_num_threads(args.threads);
    tg::set_flush_denormal(true);
    tg::Device device = tg::Device::cpu();
    if (args.backend == "nccl") {   // one GPU per rank, as tools/tgrun and torchrun number them
      const char* local = std::getenv("LOCAL_RANK");
      device = tg::Device::cuda(local != nullptr ? std::atoi(local) : 0);
      tg::cuda::set_device(device.index());
    }
    tg::distributed::init_process_group(args.backend);
    const int rank = tg::distributed::get_rank(), world = tg::distributed::get_world_size();
    if (args.synthetic == 0 && !std::filesystem::exists(args.data + "/train-images-idx3-ubyte.gz") &&
        !std::filesystem::exists(args.data + "/train-images-idx3-ubyte")) {
      std::fprintf(stderr, "error: Fashion-MNIST not found in %s (apt-get install dataset-fashion-mnist, or --synthetic N)\n",
                   args.data.c_str());
      return 2;
    }
    const tg::data::TensorDataset train =
        args.synthetic ? synthetic_set(args.synthetic, 1234, 1) : tg::data::FashionMNIST(args.data, tg::data::Split::Train);
    const tg::data::TensorDataset test = args.synthetic ? synthetic_set(std::max<int64_t>(args.synthetic / 5, 1), 1234, 2)
                                                        : tg::data::FashionMNIST(args.data, tg::data::Split::Test);
    if (rank == 0)
      std::printf("rank 0 of %d: %lld training images, %lld per rank per epoch, batch %lld per rank\n", world,
                  static_cast<long long>(train.size()), static_cast<long long>(train.size() / world),
                  static_cast<long long>(args.batch_size));

    tg::manual_seed(static_cast<uint64_t>(rank));   // different on purpose: DDP starts every rank from rank 0's
    Net net;
    net.to(device);
    tg::nn::parallel::DistributedDataParallel model(net);
    tg::optim::SGD optimizer(model.parameters(), tg::optim::SGDOptions(args.lr).momentum(0.9));
    tg::nn::CrossEntropyLoss criterion;

    const int64_t batches = train.size() / args.batch_size / world;   // per rank; the same on every rank
    std::vector<int64_t> order(static_cast<std::size_t>(train.size()));
    for (int epoch = 0; epoch < args.epochs; ++epoch) {
      const auto t0 = std::chrono::steady_clock::now();
      std::iota(order.begin(), order.end(), 0);
      std::shuffle(order.begin(), order.end(), std::mt19937_64(static_cast<uint64_t>(epoch)));   // same on every rank
      double loss_sum = 0;
      for (int64_t b = 0; b < batches; ++b) {
        const int64_t first = (b * world + rank) * args.batch_size;
        const std::vector<int64_t> idx(order.begin() + first, order.begin() + first + args.batch_size);
        tg::data::Batch batch = train.get_batch(idx);
        optimizer.zero_grad();
        tg::Tensor loss = criterion(model(batch.data.to(device)), batch.target.to(device));
        loss.backward();   // gradients averaged over the ranks when it returns
        optimizer.step();
        loss_sum += loss.item();
      }
      tg::Tensor mean_loss = tg::full({1}, loss_sum / std::max<int64_t>(batches, 1)).to(device);
      tg::distributed::all_reduce(mean_loss, tg::distributed::ReduceOp::AVG);
      const double acc = accuracy(net, test, device);
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (rank == 0)
        std::printf("epoch %d: loss %.4f, test accuracy %.2f%%, %.1f s, %.0f images/s over %d ranks\n", epoch + 1,
                    mean_loss.item(), 100 * acc, secs, batches * args.batch_size * world / secs, world);
    }
    // The replicas must still be identical: the max and min over the ranks of every parameter agree.
    for (auto& p : net.parameters()) {
      tg::Tensor hi(p.data().clone()), lo(p.data().clone());
      tg::distributed::all_reduce(hi, tg::distributed::ReduceOp::MAX);
      tg::distributed::all_reduce(lo, tg::distributed::ReduceOp::MIN);
      if ((hi - lo).abs().max().item() != 0.0) {
        std::fprintf(stderr, "rank %d: the replicas differ\n", rank);
        return 1;
      }
    }
    const double acc = accuracy(net, test, device);
    if (rank == 0) std::printf("replicas identical on %d ranks; final test accuracy %.2f%%\n", world, 100 * acc);
    tg::distributed::destroy_process_group();
    if (acc < args.min_accuracy) {
      std::fprintf(stderr, "rank %d: test accuracy %.4f is below --min-accuracy %.4f\n", rank, acc, args.min_accuracy);
      return 1;
    }
    return 0;
  } catch (const tg::Error& e) {
    std::fprintf(stderr, "train_ddp: %s\n", e.what());
    return 1;
  }
}
