// tests/port/mnist.cpp: a program written against libtorch's C++ frontend, in the shape of its MNIST
// tutorial (a CNN with Conv2d, Dropout2d, max_pool2d, log_softmax and nll_loss; the MNIST dataset with
// Normalize and Stack transforms; make_data_loader; SGD with momentum). CTest compiles it after the
// rename of tests/port/port.cmake (torch:: -> tg::, <torch/torch.h> -> <tensorgrad.h>) and runs it on
// the Fashion-MNIST files, which have MNIST's names and format. It also compiles against libtorch as
// it stands.
//
// Usage: mnist DATA_ROOT [TRAIN_BATCHES]. Exit 0 when the test accuracy after TRAIN_BATCHES batches
// (default 300) of one epoch is above 50% (chance: 10%; libtorch reaches 68% on Fashion-MNIST).
#include <torch/torch.h>

#include <cstdio>
#include <cstdlib>
#include <string>

struct Net : torch::nn::Module {
  Net()
      : conv1(torch::nn::Conv2dOptions(1, 10, /*kernel_size=*/5)),
        conv2(torch::nn::Conv2dOptions(10, 20, /*kernel_size=*/5)),
        fc1(320, 50),
        fc2(50, 10) {
    register_module("conv1", conv1);
    register_module("conv2", conv2);
    register_module("conv2_drop", conv2_drop);
    register_module("fc1", fc1);
    register_module("fc2", fc2);
  }

  torch::Tensor forward(torch::Tensor x) {
    x = torch::relu(torch::max_pool2d(conv1->forward(x), 2));
    x = torch::relu(torch::max_pool2d(conv2_drop->forward(conv2->forward(x)), 2));
    x = x.view({-1, 320});
    x = torch::relu(fc1->forward(x));
    x = torch::dropout(x, /*p=*/0.5, /*train=*/is_training());
    x = fc2->forward(x);
    return torch::log_softmax(x, /*dim=*/1);
  }

  torch::nn::Conv2d conv1;
  torch::nn::Conv2d conv2;
  torch::nn::Dropout2d conv2_drop;
  torch::nn::Linear fc1;
  torch::nn::Linear fc2;
};

template <typename DataLoader>
void train(size_t epoch, Net& model, torch::Device device, DataLoader& data_loader, torch::optim::Optimizer& optimizer,
           size_t max_batches) {
  model.train();
  size_t batch_idx = 0;
  for (auto& batch : data_loader) {
    auto data = batch.data.to(device), targets = batch.target.to(device);
    optimizer.zero_grad();
    auto output = model.forward(data);
    auto loss = torch::nll_loss(output, targets);
    AT_ASSERT(!std::isnan(loss.template item<float>()));
    loss.backward();
    optimizer.step();
    if (batch_idx++ % 50 == 0) {
      std::printf("Train Epoch: %zu [%5zu] Loss: %.4f\n", epoch, batch_idx * batch.data.size(0), loss.template item<float>());
    }
    if (batch_idx == max_batches) break;
  }
}

template <typename DataLoader>
double test(Net& model, torch::Device device, DataLoader& data_loader, size_t dataset_size) {
  torch::NoGradGuard no_grad;
  model.eval();
  double test_loss = 0;
  int32_t correct = 0;
  for (const auto& batch : data_loader) {
    auto data = batch.data.to(device), targets = batch.target.to(device);
    auto output = model.forward(data);
    test_loss += torch::nll_loss(output, targets, /*weight=*/{}, torch::Reduction::Sum).template item<float>();
    auto pred = output.argmax(1);
    correct += pred.eq(targets).sum().template item<int64_t>();
  }
  test_loss /= dataset_size;
  const double accuracy = static_cast<double>(correct) / dataset_size;
  std::printf("Test set: Average loss: %.4f | Accuracy: %.3f\n", test_loss, accuracy);
  return accuracy;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: mnist DATA_ROOT [TRAIN_BATCHES]\n");
    return 2;
  }
  const std::string root = argv[1];
  const size_t max_batches = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 300;
  torch::manual_seed(1);
  torch::DeviceType device_type = torch::cuda::is_available() ? torch::kCUDA : torch::kCPU;
  torch::Device device(device_type);

  Net model;
  model.to(device);

  auto train_dataset = torch::data::datasets::MNIST(root)
                           .map(torch::data::transforms::Normalize<>(0.1307, 0.3081))
                           .map(torch::data::transforms::Stack<>());
  const size_t train_dataset_size = train_dataset.size().value();
  auto train_loader =
      torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(std::move(train_dataset), 64);

  auto test_dataset = torch::data::datasets::MNIST(root, torch::data::datasets::MNIST::Mode::kTest)
                          .map(torch::data::transforms::Normalize<>(0.1307, 0.3081))
                          .map(torch::data::transforms::Stack<>());
  const size_t test_dataset_size = test_dataset.size().value();
  auto test_loader = torch::data::make_data_loader(std::move(test_dataset), 1000);
  std::printf("%zu training and %zu test images\n", train_dataset_size, test_dataset_size);

  torch::optim::SGD optimizer(model.parameters(), torch::optim::SGDOptions(0.01).momentum(0.5));
  train(1, model, device, *train_loader, optimizer, max_batches);
  const double accuracy = test(model, device, *test_loader, test_dataset_size);
  return accuracy > 0.5 ? 0 : 1;
}
