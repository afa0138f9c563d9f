// bench/bench_amp.cpp: mixed precision on the CPU. (1) One training step of the MLP 784-128-10 (SGD lr
// 0.01, CrossEntropyLoss) at batch 64 and 1024 in float32 and with the forward under bfloat16 autocast,
// tensorgrad (tg::amp::AutocastGuard) and libtorch (at::autocast, as `with torch.autocast("cpu")`) in
// the same run; target: tensorgrad's autocast step <= 1.2x its float32 step on a CPU without native
// bfloat16 arithmetic, < 1x on one with it (AVX512_BF16: Note [bfloat16 GEMMs through oneDNN]). Each engine's two steps are timed against each other, interleaved, and the
// engines in separate groups: interleaved with libtorch's autocast step (12 ms at batch 64, which
// evicts the caches) a step starts cold, and which of tensorgrad's steps followed it decided the ratio
// (1.12x that way at batch 64 where 1.24x was the steady-state ratio). (2) Activation bytes per sample that the graph of MLP 784-1024-1024-10 keeps for
// backward at batch 64, float32 and autocast, on both engines measured the same way (live CPU-allocator
// bytes after a forward, less the output; under autocast the second forward of one region, so that
// the cached bfloat16 weights do not count); target: autocast <= 0.5x float32 (+ 2 % for the float32
// output of the last layer's bias add and allocator rounding). (3) Causal attention forward + backward
// on float32 q, k, v (4, 4, 128, 64), composed on the CPU (two matmuls around a softmax), float32 and
// under bfloat16 autocast, on both engines: the matmuls under autocast multiply rounded operands (Note
// [Autocast products through float32]), or bfloat16 casts on oneDNN where the CPU has AVX512_BF16; no
// target. Flags: --help (bench/common.h).
#include "common.h"
#include "tensorgrad/prim/prim.h"

#include <memory>

namespace {

struct TgMlp {
  tg::nn::Sequential net;
  std::unique_ptr<tg::optim::SGD> optimizer;
  tg::nn::CrossEntropyLoss criterion;
  tg::Tensor x, y;
  bool autocast;
  TgMlp(int64_t batch, bool amp) : autocast(amp) {
    net.add<tg::nn::Linear>(784, 128);
    net.add<tg::nn::ReLU>();
    net.add<tg::nn::Linear>(128, 10);
    optimizer = std::make_unique<tg::optim::SGD>(net.parameters(), tg::optim::SGDOptions(0.01));
    x = tg::randn({batch, 784});
    y = tg::randint(0, 10, {batch});
  }
  void step() {
    optimizer->zero_grad();
    tg::Tensor loss;
    {
      tg::amp::AutocastGuard region(tg::Device::cpu(), tg::kBFloat16, autocast);
      loss = criterion(net(x), y);
    }
    loss.backward();
    optimizer->step();
  }
};

bench::Work tg_step(int64_t batch, bool autocast) {
  auto m = std::make_shared<TgMlp>(batch, autocast);
  return [m] { m->step(); };
}

/// tensorgrad's twin of torch_side::attention(b, h, len, dim, /*causal=*/true, autocast).
bench::Work tg_attention(const tg::Shape& shape, bool autocast) {
  tg::Tensor q = tg::randn(shape, tg::TensorOptions().requires_grad(true));
  tg::Tensor k = tg::randn(shape, tg::TensorOptions().requires_grad(true));
  tg::Tensor v = tg::randn(shape, tg::TensorOptions().requires_grad(true));
  const tg::Tensor gy = tg::randn(shape).to(autocast ? tg::kBFloat16 : tg::kFloat32);
  return [q, k, v, gy, autocast]() mutable {
    tg::Tensor out;
    {
      tg::amp::AutocastGuard region(tg::Device::cpu(), tg::kBFloat16, autocast);
      out = tg::scaled_dot_product_attention(q, k, v, {}, 0.0, /*is_causal=*/true);
    }
    out.backward(gy);
    q.zero_grad();
    k.zero_grad();
    v.zero_grad();
  };
}

/// tensorgrad's twin of torch_side::activation_bytes_per_sample(widths, batch, autocast).
double tg_activation_bytes_per_sample(const std::vector<int64_t>& widths, int64_t batch, bool autocast) {
  tg::manual_seed(0);
  tg::nn::Sequential net;
  for (std::size_t i = 0; i + 1 < widths.size(); ++i) {
    net.add<tg::nn::Linear>(widths[i], widths[i + 1]);
    if (i + 2 < widths.size()) net.add<tg::nn::ReLU>();
  }
  tg::Tensor x = tg::randn({batch, widths[0]});
  tg::amp::AutocastGuard region(tg::Device::cpu(), tg::kBFloat16, autocast);
  if (autocast) net(x);   // fills the cast cache; its graph is dropped at once
  const std::size_t before = tg::memory::memory_allocated();
  tg::Tensor y = net(x);
  const std::size_t out = static_cast<std::size_t>(y.numel()) * tg::dtype_size(y.dtype());
  return static_cast<double>(tg::memory::memory_allocated() - before - out) / static_cast<double>(batch);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace bench;
  const Options o = parse_options(argc, argv, "bench_amp",
      "Mixed precision on the CPU: the MLP step and activation bytes, float32 vs bfloat16 autocast, vs libtorch.");
  set_threads(o.threads);
  tg::manual_seed(0);
  print_header("bfloat16 autocast vs float32: MLP 784-128-10 step (µs, median [min..max]) and activation bytes", o);

  const std::vector<int64_t> batches = o.smoke ? std::vector<int64_t>{4} : std::vector<int64_t>{64, 1024};
  Table steps({"batch", "tg f32", "tg autocast", "tg amp/f32", "torch f32", "torch autocast", "torch amp/f32",
               "tg amp/torch amp", "target"});
  // Where the CPU multiplies bfloat16 itself (Note [bfloat16 GEMMs through oneDNN]) autocast must be
  // faster than float32; elsewhere its products go through float32 and the target is 1.2x.
  const bool native = !tg::prim::products_through_float32(tg::kBFloat16, tg::Device::cpu());
  const std::string step_target_str = native ? "< 1x (native bfloat16)" : "<= 1.2x";
  double worst = 0;
  for (int64_t b : batches) {
    const auto t = measure({tg_step(b, false), tg_step(b, true)}, plan_for(o, 10, 10));
    const auto p = measure({torch_side::mlp_step(b, false), torch_side::mlp_step(b, true)}, plan_for(o, 3, 10, 0.5));
    const std::vector<Stats> s{t[0], t[1], p[0], p[1]};
    const double r = time_ratio(s[1], s[0]);
    worst = std::max(worst, r);
    steps.row({std::to_string(b), cell(s[0], 1e6), cell(s[1], 1e6), ratio_str(r), cell(s[2], 1e6), cell(s[3], 1e6),
               ratio_str(time_ratio(s[3], s[2])), ratio_str(time_ratio(s[1], s[3])),
               o.smoke ? "-" : step_target_str + ": " + verdict(r, native ? r < 1.0 : r <= 1.2)});
  }
  steps.print();

  const int64_t batch = o.smoke ? 4 : 64;
  const std::vector<int64_t> widths{784, 1024, 1024, 10};
  const double t32 = tg_activation_bytes_per_sample(widths, batch, false);
  const double t16 = tg_activation_bytes_per_sample(widths, batch, true);
  const double p32 = torch_side::activation_bytes_per_sample(widths, batch, false);
  const double p16 = torch_side::activation_bytes_per_sample(widths, batch, true);
  const double r = t16 / t32;
  auto b = [](double v) { return std::isfinite(v) ? fmt("%.1f", v) : std::string("n/a"); };
  Table bytes({"MLP 784-1024-1024-10", "tg f32 B/sample", "tg autocast", "tg amp/f32", "torch f32", "torch autocast",
               "torch amp/f32", "target"});
  bytes.row({"batch " + std::to_string(batch), b(t32), b(t16), ratio_str(r), b(p32), b(p16), ratio_str(p16 / p32),
             o.smoke ? "-" : "<= 0.51x: " + verdict(r, r <= 0.51)});
  bytes.print();
  const int64_t AB = o.smoke ? 2 : 4, AH = o.smoke ? 2 : 4, AL = o.smoke ? 5 : 128, AE = o.smoke ? 4 : 64;
  const tg::Shape ashape{AB, AH, AL, AE};
  const auto ta = measure({tg_attention(ashape, false), tg_attention(ashape, true)}, plan_for(o, 5, 10));
  const auto pa = measure({torch_side::attention(AB, AH, AL, AE, true, false), torch_side::attention(AB, AH, AL, AE, true, true)},
                          plan_for(o, 3, 10, 0.5));
  Table att({"causal attention, ms", "tg f32", "tg autocast", "tg amp/f32", "torch f32", "torch autocast", "torch amp/f32",
             "tg amp/torch amp"});
  att.row({"(" + std::to_string(AB) + ", " + std::to_string(AH) + ", " + std::to_string(AL) + ", " + std::to_string(AE) + ")",
           cell(ta[0], 1e3), cell(ta[1], 1e3), ratio_str(time_ratio(ta[1], ta[0])), cell(pa[0], 1e3), cell(pa[1], 1e3),
           ratio_str(time_ratio(pa[1], pa[0])), ratio_str(time_ratio(ta[1], pa[1]))});
  att.print();
  if (!o.smoke) {
    print_target("autocast MLP step / float32, worst batch", o.threads, ratio_str(worst) + " tg f32",
                 "target " + step_target_str, verdict(worst, native ? worst < 1.0 : worst <= 1.2));
    print_target("autocast activation bytes / float32", o.threads, ratio_str(r), "target <= 0.51x",
                 verdict(r, r <= 0.51));
  }
  print_footer();
  return 0;
}
