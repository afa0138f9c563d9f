// examples/07_memory.cpp: where training memory goes and three ways to keep less of it. A 32-layer MLP
// (Linear(256, 256) -> ReLU) takes one step at batch 1024 four ways: plainly, with
// tg::checkpoint_sequential (activations recomputed in backward instead of kept), with SaveOnCpuGuard
// (saved activations moved to host memory: it changes nothing on the CPU, on a GPU it frees device
// memory), and with saved-tensor hooks that count what the graph keeps. Each run prints the peak of the
// allocator of its device above the memory held before the step, read through tg::memory (CPU) or
// tg::cuda (GPU), and the allocator's summary table closes.
#include <tensorgrad.h>

#include <any>
#include <cstdio>
#include <set>

namespace {

double mib(std::size_t bytes) { return static_cast<double>(bytes) / (1 << 20); }

struct Peak {   // the device's allocator statistics, whichever device the model is on
  tg::Device device;
  std::size_t allocated() const { return device.is_cuda() ? tg::cuda::memory_allocated() : tg::memory::memory_allocated(); }
  std::size_t peak() const { return device.is_cuda() ? tg::cuda::max_memory_allocated() : tg::memory::max_memory_allocated(); }
  void reset() const {
    if (device.is_cuda()) tg::cuda::reset_peak_memory_stats();
    else tg::memory::reset_peak_memory_stats();
  }
};

}  // namespace

int main() {
  const tg::Device device = tg::cuda::is_available() ? tg::Device::cuda() : tg::Device::cpu();
  tg::manual_seed(0);
  tg::nn::Sequential model;
  for (int i = 0; i < 32; ++i) {
    model.add<tg::nn::Linear>(256, 256);
    model.add<tg::nn::ReLU>();
  }
  model.to(device);
  const tg::Tensor x = tg::randn({1024, 256}).to(device);
  const tg::Tensor target = tg::randn({1024, 256}).to(device);
  const Peak stats{device};

  // One step; returns the peak above what was allocated before it (parameters, inputs, gradients).
  // The gradients are not zeroed: after the warm-up they exist and each step adds into them in place,
  // so the peaks below are what the graph keeps for backward plus the temporaries of backward.
  auto step = [&](const char* what, auto forward) {
    tg::cuda::synchronize();
    const std::size_t base = stats.allocated();
    stats.reset();
    tg::Tensor loss = tg::mse_loss(forward(x), target);
    loss.backward();
    tg::cuda::synchronize();
    const std::size_t peak = stats.peak() - base;
    std::printf("%-34s peak %8.2f MiB above the %.2f MiB held before the step (loss %.6f)\n", what, mib(peak),
                mib(base), loss.item());
    return peak;
  };

  std::printf("32 x (Linear(256, 256) -> ReLU), batch 1024, on %s\n", device.is_cuda() ? "cuda" : "cpu");
  step("warm-up (allocates the gradients)", [&](const tg::Tensor& in) { return model(in); });
  const std::size_t plain = step("plain", [&](const tg::Tensor& in) { return model(in); });
  const std::size_t ckpt = step("checkpoint_sequential(model, 4)",
                                [&](const tg::Tensor& in) { return tg::checkpoint_sequential(model, 4, in); });
  step("SaveOnCpuGuard", [&](const tg::Tensor& in) {
    tg::autograd::SaveOnCpuGuard offload;   // applies to what is saved while it lives: the forward
    return model(in);
  });
  std::printf("checkpointing keeps %.2fx the plain peak\n", static_cast<double>(ckpt) / static_cast<double>(plain));

  // What the graph keeps, by distinct storage, the weights and the input left out: each ReLU output
  // once (the next Linear saves the same storage), 32 x 256 floats = 32 KiB per sample.
  std::set<const void*> storages{x.data().storage().get()};
  for (const auto& p : model.parameters()) storages.insert(p.data().storage().get());
  std::size_t saved = 0;
  {
    tg::autograd::SavedTensorHooksGuard count(
        [&](const tg::RawTensor& t) {
          if (storages.insert(t.storage().get()).second) saved += t.storage()->nbytes();
          return std::any(t);
        },
        [](const std::any& p) { return std::any_cast<tg::RawTensor>(p); });
    tg::Tensor out = model(x);
  }
  std::printf("activations saved for backward: %.2f MiB, %.0f bytes per sample\n", mib(saved),
              static_cast<double>(saved) / 1024);
  std::printf("%s", device.is_cuda() ? tg::cuda::memory_summary().c_str() : tg::memory::memory_summary().c_str());
}
