// bench/bench_overhead.cpp: per-op autograd overhead, tensorgrad vs libtorch. A chain of 100 alternating
// add/mul on tiny tensors (1 and 16 elements) that require grad: nanoseconds per op for the forward
// without grad, the forward recording the graph, and forward + backward (.sum().backward(), counted as
// part of the chain's 100 ops). Target: forward + backward on 1 element <= 0.2x libtorch.
// Flags: --help (bench/common.h).
#include "common.h"

namespace {

constexpr int kChain = 100;

tg::Tensor chain(const tg::Tensor& x, const tg::Tensor& a, const tg::Tensor& b) {
  tg::Tensor y = x;
  for (int i = 0; i < kChain / 2; ++i) y = (y + a) * b;
  return y;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace bench;
  const Options o = parse_options(argc, argv, "bench_overhead",
      "Per-op autograd overhead on tiny tensors (a chain of 100 add/mul), tensorgrad vs libtorch: ns per op.");
  set_threads(o.threads);
  print_header("per-op overhead: chain of 100 alternating add/mul, requires_grad; ns per op, median [min..max]", o);

  Table table({"elements", "mode", "tensorgrad ns/op", "libtorch ns/op", "tg/torch", "target"});
  double ratio_1_fwdbwd = NAN;
  for (int64_t n : {int64_t(1), int64_t(16)}) {
    auto opts = tg::TensorOptions().requires_grad(true);
    tg::Tensor x = tg::randn({n}, opts), a = tg::full({n}, 1e-3, opts), b = tg::full({n}, 0.999, opts);
    struct Mode {
      const char* name;
      Work tg_work;
      torch_side::ChainMode torch_mode;
    };
    const Mode modes[] = {
        {"forward, no grad", [&] { tg::NoGradGuard g; chain(x, a, b); }, torch_side::ChainMode::NoGrad},
        {"forward, recording", [&] { chain(x, a, b); }, torch_side::ChainMode::Record},
        {"forward + backward", [&] { chain(x, a, b).sum().backward(); }, torch_side::ChainMode::Backward},
    };
    for (const Mode& m : modes) {
      // Thousands of calls per group: the median of a 100-op chain is stable after a short warm-up.
      const auto s = measure({m.tg_work, torch_side::op_chain(n, kChain, m.torch_mode)}, plan_for(o, 20, 50));
      const double r = time_ratio(s[0], s[1]);
      std::string target = "-";
      if (n == 1 && m.torch_mode == torch_side::ChainMode::Backward) {
        ratio_1_fwdbwd = r;
        target = "<= 0.2x: " + verdict(r, r <= 0.2);
      }
      table.row({std::to_string(n), m.name, cell(s[0], 1e9 / kChain, "%.0f"), cell(s[1], 1e9 / kChain, "%.0f"),
                 ratio_str(r), target});
    }
  }
  table.print();
  if (!o.smoke)
    print_target("per-op overhead, forward+backward, 1 element", o.threads, ratio_str(ratio_1_fwdbwd) + " libtorch",
                 "target <= 0.2x", verdict(ratio_1_fwdbwd, ratio_1_fwdbwd <= 0.2));
  print_footer();
  return 0;
}
