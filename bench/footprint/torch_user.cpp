// bench/footprint/torch_user.cpp: the libtorch twin of bench/footprint/tg_user.cpp for the footprint
// benchmark (bench/footprint.sh): includes <torch/torch.h> and trains the same MLP 784-128-10 with SGD +
// momentum for 10 steps on random data.
#include <torch/torch.h>

#include <cstdio>

int main() {
  torch::manual_seed(0);
  torch::nn::Sequential model(torch::nn::Linear(784, 128), torch::nn::ReLU(), torch::nn::Linear(128, 10));
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.01).momentum(0.9));
  torch::nn::CrossEntropyLoss criterion;
  auto x = torch::randn({64, 784});
  auto y = torch::randint(0, 10, {64}, torch::kLong);
  for (int step = 0; step < 10; ++step) {
    optimizer.zero_grad();
    auto loss = criterion(model->forward(x), y);
    loss.backward();
    optimizer.step();
    std::printf("step %d loss %.4f\n", step, loss.item<double>());
  }
}
