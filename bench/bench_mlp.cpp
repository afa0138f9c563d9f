// bench/bench_mlp.cpp: one training step of an MLP (Linear 784-128, ReLU, Linear 128-10, CrossEntropyLoss,
// SGD lr 0.01: zero_grad, forward, backward, step) at batch 1, 32, 100, 256, 1024, tensorgrad vs libtorch:
// µs per step and samples/s. Targets: batch 1 <= 0.2x, batch 100 <= 0.8x, batch 1024 <= 1.0x on
// 1 thread and <= 0.7x on 2 threads and faster than tensorgrad on 1 thread (measured in the same run).
// Flags: --help (bench/common.h).
#include "common.h"

#include <memory>

namespace {

struct TgMlp {
  tg::nn::Sequential net;
  std::unique_ptr<tg::optim::SGD> optimizer;
  tg::nn::CrossEntropyLoss criterion;
  tg::Tensor x, y;
  explicit TgMlp(int64_t batch) {
    net.add<tg::nn::Linear>(784, 128);
    net.add<tg::nn::ReLU>();
    net.add<tg::nn::Linear>(128, 10);
    optimizer = std::make_unique<tg::optim::SGD>(net.parameters(), tg::optim::SGDOptions(0.01));
    x = tg::randn({batch, 784});
    y = tg::randint(0, 10, {batch});
  }
  void step() {
    optimizer->zero_grad();
    tg::Tensor loss = criterion(net(x), y);
    loss.backward();
    optimizer->step();
  }
};

bench::Work tg_step(int64_t batch) {
  auto m = std::make_shared<TgMlp>(batch);
  return [m] { m->step(); };
}

}  // namespace

int main(int argc, char** argv) {
  using namespace bench;
  const Options o = parse_options(argc, argv, "bench_mlp",
      "One SGD training step of an MLP 784-128-10 at batch 1 to 1024, tensorgrad vs libtorch: us per step.");
  set_threads(o.threads);
  tg::manual_seed(0);
  print_header("MLP 784-128-10 training step (SGD lr 0.01); µs per step, median [min..max]", o);

  const std::vector<int64_t> batches =
      o.smoke ? std::vector<int64_t>{1, 4} : std::vector<int64_t>{1, 32, 100, 256, 1024};
  const int64_t big = batches.back();
  Table table({"batch", "tensorgrad µs/step", "libtorch µs/step", "tg samples/s", "torch samples/s", "tg/torch",
               "target"});
  double r1 = NAN, r100 = NAN, rbig = NAN;
  Stats tg_big;
  for (int64_t b : batches) {
    const auto s = measure({tg_step(b), torch_side::mlp_step(b)}, plan_for(o, 10, 10, 1.5));
    const double r = time_ratio(s[0], s[1]);
    std::string target = "-";
    if (b == 1) {
      r1 = r;
      target = "<= 0.2x: " + verdict(r, r <= 0.2);
    } else if (b == 100) {
      r100 = r;
      target = "<= 0.8x: " + verdict(r, r <= 0.8);
    } else if (b == big) {
      rbig = r;
      tg_big = s[0];
      target = o.threads == 1 ? "<= 1.0x: " + verdict(r, r <= 1.0) : "<= 0.7x (see below)";
    }
    auto rate = [b](const Stats& st) { return st.ok() ? fmt("%.0f", b / st.median) : std::string("n/a"); };
    table.row({std::to_string(b), cell(s[0], 1e6), cell(s[1], 1e6), rate(s[0]), rate(s[1]), ratio_str(r), target});
  }
  table.print();

  const std::string bl = "MLP step, batch " + std::to_string(big);
  if (o.smoke) {   // tiny sizes: no target lines
    print_footer();
    return 0;
  }
  print_target("MLP step, batch 1", o.threads, ratio_str(r1) + " libtorch", "target <= 0.2x", verdict(r1, r1 <= 0.2));
  print_target("MLP step, batch 100", o.threads, ratio_str(r100) + " libtorch", "target <= 0.8x",
               verdict(r100, r100 <= 0.8));
  if (o.threads == 1) {
    print_target(bl + ", 1 thread", 1, ratio_str(rbig) + " libtorch", "target <= 1.0x", verdict(rbig, rbig <= 1.0));
  } else {
    // The same tensorgrad step on 1 thread, in this run, for "faster than tensorgrad on 1 thread".
    tg::set_num_threads(1);
    const Stats one = measure({tg_step(big)}, plan_for(o, 10, 10, 1.0))[0];
    tg::set_num_threads(o.threads);
    const double speedup = one.median / tg_big.median;
    std::printf("tensorgrad batch %lld on 1 thread (same run): %s µs/step; speedup on %d threads: %.2fx"
                " (> 1 is faster)\n",
                static_cast<long long>(big), cell(one, 1e6).c_str(), o.threads, speedup);
    print_target(bl + ", " + std::to_string(o.threads) + " threads", o.threads,
                 ratio_str(rbig) + " libtorch, speedup " + fmt("%.2fx", speedup) + " vs tg 1t",
                 "target <= 0.7x and faster than tg 1t", verdict(rbig, rbig <= 0.7 && speedup > 1.0));
  }
  print_footer();
  return 0;
}
