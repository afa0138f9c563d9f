// tests/api/device_seed.cpp: the device-detection program of docs/api.md ("A complete program: pick a
// device"), verbatim below this header, built and run by CTest. The tutorial version: examples/04_device_basics.cpp.
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
