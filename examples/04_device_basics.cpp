// examples/04_device_basics.cpp: the three device programs of PyTorch's GPU tutorials, in tensorgrad:
// (1) detect a GPU and fall back to the CPU, (2) create tensors on a device and move them
// explicitly, (3) move a model to the device and run it there. One binary runs on machines with
// and without a GPU; without one every step runs on the CPU and says so.
#include <tensorgrad.h>

#include <iostream>

struct Net : tg::nn::Module {
  tg::nn::Linear fc1{10, 16}, fc2{16, 2};
  Net() {
    register_module("fc1", fc1);
    register_module("fc2", fc2);
  }
  tg::Tensor forward(const tg::Tensor& x) override { return fc2(tg::relu(fc1(x))); }
};

int main() {
  // (1) Detection: the device = cuda if available else cpu habit.
  tg::Device device = tg::cuda::is_available() ? tg::Device::cuda() : tg::Device::cpu();
  std::cout << (device.is_cuda() ? "CUDA is available! Using GPU for computations."
                                 : "CUDA not available. Using CPU.")
            << "\n" << tg::cuda::info() << "\n\n";

  // (2) RawTensors: created directly on the device, or moved there; results come back with .cpu().
  auto a = tg::randn({3, 3}, tg::TensorOptions().device(device));
  auto b = tg::ones({3, 3}).to(device);
  auto c = a.matmul(b) + 1.0;
  std::cout << "a is on " << a.device() << ", b on " << b.device() << ", c = a @ b + 1 on " << c.device() << "\n";
  std::cout << "c back on the CPU:\n" << c.cpu() << "\n\n";

  // (3) A model on the device: parameters move in place, inputs follow, gradients stay there.
  Net model;
  model.to(device);
  auto x = tg::randn({4, 10}).to(device);
  auto loss = model(x).pow(2.0).mean();
  loss.backward();
  std::cout << "model output computed on " << loss.device() << ", loss " << loss.item()
            << ", fc1.weight.grad on " << model.fc1.weight.grad().device() << "\n";
  std::cout << "GPU memory held by tensors: " << tg::cuda::memory_allocated() << " bytes\n";
  return 0;
}
