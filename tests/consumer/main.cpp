// A user's program built against tensorgrad (installed, pkg-config or add_subdirectory): a gradient
// through the umbrella header. --info prints tg::cuda::info(); --rss prints the peak resident memory;
// --nccl prints whether the "nccl" process group can run and, when not, init_process_group's error.
#include <tensorgrad.h>
// Paths public headers had before the floors (forwarding headers, kept for one release): a consumer
// written against them still compiles.
#include <tensorgrad/amp/grad_scaler.h>
#include <tensorgrad/cuda/cuda.h>
#include <tensorgrad/engine/variable.h>
#include <tensorgrad/nn/serialize.h>
#include <tensorgrad/ops/functors.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>

int main(int argc, char** argv) {
  auto w = tg::from_vector(std::vector<float>{1, 2, 3}, {3}, tg::TensorOptions().requires_grad(true));
  auto loss = (w * w).sum();   // d/dw = 2w
  loss.backward();
  auto g = w.grad().to_vector<float>();
  const bool ok = std::fabs(g[0] - 2) < 1e-6 && std::fabs(g[1] - 4) < 1e-6 && std::fabs(g[2] - 6) < 1e-6;
  std::printf("consumer: loss %.1f, grad [%.1f, %.1f, %.1f], cuda available: %d -> %s\n", loss.item(), g[0], g[1],
              g[2], int(tg::cuda::is_available()), ok ? "ok" : "WRONG");
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--info") == 0) std::cout << tg::cuda::info() << "\n";
    if (std::strcmp(argv[i], "--nccl") == 0) {
      std::cout << "nccl available: " << tg::distributed::is_backend_available("nccl") << "\n";
      try {
        tg::distributed::init_process_group("nccl", tg::distributed::InitOptions().rank(0).world_size(1));
        tg::distributed::destroy_process_group();
      } catch (const tg::DistributedError& e) {
        std::cout << "nccl: " << e.what() << "\n";
      }
    }
    if (std::strcmp(argv[i], "--rss") == 0) {   // VmHWM: the peak resident set size, in kB
      std::ifstream status("/proc/self/status");
      for (std::string line; std::getline(status, line);)
        if (line.rfind("VmHWM:", 0) == 0) std::cout << "peak rss kB: " << line.substr(6) << "\n";
    }
  }
  return ok ? 0 : 1;
}
