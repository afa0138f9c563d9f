// examples/12_which_kernel.cpp: which code computed each gradient. One backward pass of a small MLP
// (Linear -> ReLU -> Linear -> cross-entropy) on the best device here, watched op by op through a
// BackwardTraceGuard: for each op the engine runs, its output's device, dtype and shape, and what did
// the work. On the CPU that is tensorgrad's own loops, compiled three times (baseline x86-64, AVX2 + FMA,
// AVX-512) with the best this processor runs chosen at start-up (core/cpu_capability.h), and the
// BLAS library for matrix products; on a GPU (or the CUDA emulator) the number of kernels, cuBLAS calls
// and copies each op's backward queued (tg::cuda::detail::launch_count()). Then the same backward on
// every CPU code path this processor supports, to show that the choice of loop changes the speed,
// not the gradients beyond float rounding.
#include <tensorgrad.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace {

struct Mlp : tg::nn::Module {
  tg::nn::Linear fc1{64, 32}, fc2{32, 10};
  Mlp() {
    register_module("fc1", fc1);
    register_module("fc2", fc2);
  }
  tg::Tensor forward(const tg::Tensor& x) override { return fc2(tg::relu(fc1(x))); }
};

/// The loss of the MLP (weights from seed 0) on a fixed batch, and fc1.weight's gradient after backward.
/// With a tracer, the tracer sees every op backward runs.
std::vector<float> fc1_weight_grad(tg::Device device, const tg::autograd::BackwardObserver& tracer = nullptr) {
  tg::manual_seed(0);
  Mlp model;
  model.to(device);
  const tg::Tensor x = tg::randn({16, 64}).to(device);
  const tg::Tensor y = tg::randint(0, 10, {16}).to(device);
  const tg::Tensor loss = tg::cross_entropy(model(x), y);
  if (tracer) {
    tg::autograd::BackwardTraceGuard guard(tracer);
    loss.backward();
  } else {
    loss.backward();
  }
  return model.fc1.weight.grad().to(tg::Device::cpu()).to_vector<float>();
}

}  // namespace

int main() {
  std::printf("%s\n\n", tg::info().c_str());
  const tg::Device device = tg::cuda::is_available() ? tg::Device::cuda() : tg::Device::cpu();
  const bool on_gpu = device.is_cuda();
  std::printf("backward of Linear -> ReLU -> Linear -> cross_entropy on %s, op by op:\n", device.str().c_str());

  // The observer runs just before each op's backward rule: what was queued on the GPU since the previous
  // call is the previous op's work.
  std::vector<std::string> ops;
  std::vector<uint64_t> launches_before;
  const auto tracer = [&](const tg::Node& node, const tg::RawTensor&) {
    ops.push_back(std::string(node.name) + " -> " + node.out_device.str() + " " + tg::dtype_name(node.out_dtype) +
                  " " + tg::shape_str(node.out_shape));
    launches_before.push_back(on_gpu ? tg::cuda::detail::launch_count() : 0);
  };
  const std::vector<float> reference = fc1_weight_grad(device, tracer);
  const uint64_t launches_end = on_gpu ? tg::cuda::detail::launch_count() : 0;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    std::printf("  %zu. %-44s ", i + 1, ops[i].c_str());
    if (on_gpu) {
      const uint64_t after = i + 1 < ops.size() ? launches_before[i + 1] : launches_end;
      std::printf("%llu CUDA launches (kernels, cuBLAS calls, copies)\n",
                  static_cast<unsigned long long>(after - launches_before[i]));
    } else if (ops[i].rfind("linear", 0) == 0 || ops[i].rfind("matmul", 0) == 0) {
      std::printf("matrix products on the BLAS above, bias sum on the %s loops\n", tg::cpu_capability_name());
    } else {
      std::printf("tensorgrad's %s loops\n", tg::cpu_capability_name());
    }
  }

  // The same gradients from every CPU code path: only the rounding of the vectorized sums may differ.
  std::printf("\nfc1.weight's gradient on each CPU code path this processor runs:\n");
  const std::vector<float> cpu_reference = fc1_weight_grad(tg::Device::cpu());
  const tg::CpuCapability chosen = tg::cpu_capability();
  double worst = 0;
  for (tg::CpuCapability c : tg::supported_cpu_capabilities()) {
    tg::set_cpu_capability(c);
    const std::vector<float> g = fc1_weight_grad(tg::Device::cpu());
    double diff = 0;
    for (std::size_t i = 0; i < g.size(); ++i) diff = std::max(diff, std::fabs(double(g[i]) - cpu_reference[i]));
    worst = std::max(worst, diff);
    std::printf("  %-8s largest difference from the %s path: %.3g\n", tg::cpu_capability_name(c),
                tg::cpu_capability_name(chosen), diff);
  }
  tg::set_cpu_capability(chosen);
  double gpu_diff = 0;
  for (std::size_t i = 0; i < reference.size(); ++i)
    gpu_diff = std::max(gpu_diff, std::fabs(double(reference[i]) - cpu_reference[i]));
  if (on_gpu) std::printf("  %s against the CPU: %.3g\n", device.str().c_str(), gpu_diff);
  // float32 sums of 16 products in another order differ by a few units in the last place, not more
  const bool agree = worst < 1e-5 && gpu_diff < 1e-4 && ops.size() >= 4;
  std::printf("%s\n", agree ? "the code paths agree within float32 rounding" : "the code paths DISAGREE");
  return agree ? 0 : 1;
}
