// examples/device_basics.cpp: the device-detection program from API.md, as written there: use the
// GPU when one is usable, fall back to the CPU otherwise. One binary runs on both kinds of machine.
#include <tensorgrad.h>
#include <iostream>
int main() {
  tg::Device device = tg::cuda::is_available() ? tg::Device::cuda() : tg::Device::cpu();
  std::cout << (device.is_cuda() ? "CUDA is available! Using GPU for computations."
                                 : "CUDA not available. Using CPU.") << "\n";
  auto x = tg::randn({5, 5}, tg::TensorOptions().device(device));
  auto y = tg::ones({5, 5}, tg::TensorOptions().device(device));
  std::cout << x + y << "\n";
}
