// bench/bench_memory.cpp: what memory features cost and save. (1) Activation bytes per sample that the
// graph of a Linear->ReLU MLP keeps for backward (784-1024-1024-10 and 16 x Linear(256, 256)), tensorgrad
// vs libtorch measured the same way: the bytes live in the CPU allocator after the forward, less the
// output's (target <= 1.0x). (2) The step time of a 32 x (Linear(128, 128) -> ReLU) MLP at batch 2048 with
// checkpoint_sequential(.., 4) against the plain step, both tensorgrad (recomputation overhead, target
// <= 1.4x), with the peak memory of each (target <= 0.4x; the shape of tests/test_memory.cpp's check). Flags: --help (bench/common.h).
#include "common.h"

#include <memory>

namespace {

std::unique_ptr<tg::nn::Sequential> relu_mlp(const std::vector<int64_t>& widths) {
  auto seq = std::make_unique<tg::nn::Sequential>();
  for (std::size_t i = 0; i + 1 < widths.size(); ++i) {
    seq->add<tg::nn::Linear>(widths[i], widths[i + 1]);
    if (i + 2 < widths.size()) seq->add<tg::nn::ReLU>();
  }
  return seq;
}

/// tensorgrad's twin of torch_side::activation_bytes_per_sample (sizes chosen so that the allocator's
/// rounding adds nothing: every activation is a power of two or a multiple of 64 bytes below 4 KiB).
double tg_activation_bytes_per_sample(const std::vector<int64_t>& widths, int64_t batch) {
  tg::manual_seed(0);
  auto net = relu_mlp(widths);
  tg::Tensor x = tg::randn({batch, widths[0]});
  const std::size_t before = tg::memory::memory_allocated();
  tg::Tensor y = (*net)(x);
  const std::size_t out = static_cast<std::size_t>(y.numel()) * sizeof(float);
  return static_cast<double>(tg::memory::memory_allocated() - before - out) / static_cast<double>(batch);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace bench;
  const Options o = parse_options(argc, argv, "bench_memory",
      "Activation bytes per sample vs libtorch, and the step time and peak memory of checkpoint_sequential.");
  set_threads(o.threads);
  print_header("Memory: activations kept for backward (bytes per sample) and gradient checkpointing", o);

  const int64_t batch = o.smoke ? 4 : 64;
  struct Model {
    std::string name;
    std::vector<int64_t> widths;
  };
  const std::vector<Model> models{{"MLP 784-1024-1024-10", {784, 1024, 1024, 10}},
                                  {"MLP 16 x Linear(256, 256)", std::vector<int64_t>(17, 256)}};
  Table bytes({"model", "tensorgrad B/sample", "libtorch B/sample", "tg/torch", "target"});
  std::vector<double> ratios;
  for (const Model& m : models) {
    const double t = tg_activation_bytes_per_sample(m.widths, batch);
    const double p = torch_side::activation_bytes_per_sample(m.widths, batch);
    const double r = t / p;
    ratios.push_back(r);
    bytes.row({m.name, fmt("%.1f", t), std::isfinite(p) ? fmt("%.1f", p) : "n/a", ratio_str(r),
               o.smoke ? "-" : "<= 1.0x: " + verdict(r, r <= 1.0)});
  }
  bytes.print();

  // Checkpointing: the same step plain and with checkpoint_sequential(.., 4).
  const int64_t width = o.smoke ? 16 : 128, rows = o.smoke ? 8 : 2048;
  tg::manual_seed(1);
  auto net = std::make_shared<tg::nn::Sequential>();
  for (int i = 0; i < 32; ++i) {
    net->add<tg::nn::Linear>(width, width);
    net->add<tg::nn::ReLU>();
  }
  const tg::Tensor x = tg::randn({rows, width});
  auto step = [net, x](bool ckpt) {
    return [net, x, ckpt] {
      tg::Tensor out = ckpt ? tg::checkpoint_sequential(*net, 4, x) : (*net)(x);
      out.mean().backward();   // gradients accumulate in place: no allocation for them
    };
  };
  auto peak = [&](bool ckpt) {
    step(ckpt)();
    const std::size_t base = tg::memory::memory_allocated();
    tg::memory::reset_peak_memory_stats();
    step(ckpt)();
    return tg::memory::max_memory_allocated() - base;
  };
  const std::size_t peak_plain = peak(false), peak_ckpt = peak(true);
  const auto s = measure({step(false), step(true)}, plan_for(o, 3, 5, 1.0));
  const double overhead = time_ratio(s[1], s[0]);
  Table ck({"32 x (Linear(128,128), ReLU), batch 2048", "ms/step", "peak MiB above baseline"});
  ck.row({"plain", cell(s[0], 1e3, "%.2f"), fmt("%.2f", static_cast<double>(peak_plain) / (1 << 20))});
  ck.row({"checkpoint_sequential(.., 4)", cell(s[1], 1e3, "%.2f"), fmt("%.2f", static_cast<double>(peak_ckpt) / (1 << 20))});
  ck.print();
  const double mem_ratio = static_cast<double>(peak_ckpt) / static_cast<double>(peak_plain);
  std::printf("checkpointing: %.2fx the step time, %.2fx the peak memory\n", overhead, mem_ratio);
  if (o.smoke) {
    print_footer();
    return 0;
  }
  for (std::size_t i = 0; i < models.size(); ++i)
    print_target("activation bytes, " + models[i].name, 0, ratio_str(ratios[i]) + " libtorch", "target <= 1.0x",
                 verdict(ratios[i], ratios[i] <= 1.0));
  print_target("checkpoint_sequential(4) step time, 32 layers", o.threads, ratio_str(overhead) + " plain",
               "target <= 1.4x", verdict(overhead, overhead <= 1.4));
  print_target("checkpoint_sequential(4) peak memory, 32 layers", 0, ratio_str(mem_ratio) + " plain",
               "target <= 0.4x", verdict(mem_ratio, mem_ratio <= 0.4));
  print_footer();
  return 0;
}
