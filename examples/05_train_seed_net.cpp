// examples/05_train_seed_net.cpp: the training loop of docs/api.md ("Modules"), where it appears verbatim: an
// MLP trained with zero_grad / forward / loss / backward / step on one random batch, on the GPU when one is usable.
#include <tensorgrad.h>
#include <cstdio>
struct Net : tg::nn::Module {
  tg::nn::Linear fc1{784, 128}, fc2{128, 10};
  Net() { register_module("fc1", fc1); register_module("fc2", fc2); }
  tg::Tensor forward(const tg::Tensor& x) override { return fc2(tg::relu(fc1(x))); }
};
int main() {
  tg::Device device = tg::cuda::is_available() ? tg::Device::cuda() : tg::Device::cpu();
  Net model;
  model.to(device);
  auto inputs = tg::randn({100, 784}).to(device);
  auto targets = tg::randint(0, 10, {100}).to(device);
  tg::nn::CrossEntropyLoss criterion;
  tg::optim::SGD optimizer(model.parameters(), 0.01);
  for (int epoch = 0; epoch < 10; ++epoch) {
    optimizer.zero_grad();
    auto outputs = model(inputs);
    auto loss = criterion(outputs, targets);
    loss.backward();
    optimizer.step();
    std::printf("Epoch %d, Loss: %f\n", epoch + 1, loss.item());
  }
}
