// bench/footprint/tg_user.cpp: the user program of the footprint benchmark (bench/footprint.sh): includes
// <tensorgrad.h> and trains the MLP 784-128-10 with SGD + momentum for 10 steps on random data, as the
// README's first program does. Its twin with <torch/torch.h> is bench/footprint/torch_user.cpp.
#include <tensorgrad.h>

#include <cstdio>

int main() {
  tg::manual_seed(0);
  tg::nn::Sequential model;
  model.add<tg::nn::Linear>(784, 128);
  model.add<tg::nn::ReLU>();
  model.add<tg::nn::Linear>(128, 10);
  tg::optim::SGD optimizer(model.parameters(), tg::optim::SGDOptions(0.01).momentum(0.9));
  tg::nn::CrossEntropyLoss criterion;
  auto x = tg::randn({64, 784});
  auto y = tg::randint(0, 10, {64});
  for (int step = 0; step < 10; ++step) {
    optimizer.zero_grad();
    auto loss = criterion(model(x), y);
    loss.backward();
    optimizer.step();
    std::printf("step %d loss %.4f\n", step, loss.item());
  }
}
