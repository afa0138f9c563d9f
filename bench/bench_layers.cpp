// bench/bench_layers.cpp: conv2d forward + backward on (64, 32, 28, 28) with 32 3x3 filters (padding 1,
// bias), and layer_norm forward + backward on (4096, 768) (a transformer's activations: 8 sequences of
// 512 tokens), tensorgrad vs libtorch in the same process; the gradients are reset after each call.
// Targets (issue 17): both <= 1.0x. Flags: --help (bench/common.h).
#include "common.h"

int main(int argc, char** argv) {
  using namespace bench;
  const Options o = parse_options(argc, argv, "bench_layers",
      "conv2d (64, 32, 28, 28) 3x3 and layer_norm (4096, 768) forward + backward, tensorgrad vs libtorch.");
  set_threads(o.threads);
  tg::manual_seed(0);
  print_header("conv2d and layer_norm forward + backward; ms per call, median [min..max]", o);
  Table table({"op", "tensorgrad ms", "libtorch ms", "tg/torch", "target"});

  const int64_t N = o.smoke ? 2 : 64, C = o.smoke ? 3 : 32, H = o.smoke ? 6 : 28, O = o.smoke ? 4 : 32;
  tg::Variable x = tg::randn({N, C, H, H}, tg::TensorOptions().requires_grad(true));
  tg::Variable w = tg::randn({O, C, 3, 3}, tg::TensorOptions().requires_grad(true));
  tg::Variable b = tg::randn({O}, tg::TensorOptions().requires_grad(true));
  const tg::Variable gy = tg::randn({N, O, H, H});
  Work conv_tg = [x, w, b, gy]() mutable {
    tg::conv2d(x, w, b, {1}, {1}).backward(gy);
    x.zero_grad();
    w.zero_grad();
    b.zero_grad();
  };
  const auto sc = measure({conv_tg, torch_side::conv2d(N, C, H, H, O, 3)}, plan_for(o, 5, 3, 2.0));
  const double rc = time_ratio(sc[0], sc[1]);
  table.row({"conv2d (" + std::to_string(N) + ", " + std::to_string(C) + ", " + std::to_string(H) + ", " +
                 std::to_string(H) + ") 3x3 -> " + std::to_string(O),
             cell(sc[0], 1e3), cell(sc[1], 1e3), ratio_str(rc), "<= 1.0x: " + verdict(rc, rc <= 1.0)});

  const int64_t R = o.smoke ? 8 : 4096, D = o.smoke ? 16 : 768;
  tg::Variable lx = tg::randn({R, D}, tg::TensorOptions().requires_grad(true));
  tg::Variable lw = tg::randn({D}, tg::TensorOptions().requires_grad(true));
  tg::Variable lb = tg::randn({D}, tg::TensorOptions().requires_grad(true));
  const tg::Variable lgy = tg::randn({R, D});
  Work ln_tg = [lx, lw, lb, lgy, D]() mutable {
    tg::layer_norm(lx, {D}, lw, lb).backward(lgy);
    lx.zero_grad();
    lw.zero_grad();
    lb.zero_grad();
  };
  const auto sl = measure({ln_tg, torch_side::layer_norm(R, D)}, plan_for(o, 5, 3, 2.0));
  const double rl = time_ratio(sl[0], sl[1]);
  table.row({"layer_norm (" + std::to_string(R) + ", " + std::to_string(D) + ")", cell(sl[0], 1e3), cell(sl[1], 1e3),
             ratio_str(rl), "<= 1.0x: " + verdict(rl, rl <= 1.0)});
  table.print();
  if (!o.smoke) {
    print_target("conv2d (64, 32, 28, 28) 3x3 forward+backward", o.threads, ratio_str(rc) + " libtorch",
                 "target <= 1.0x", verdict(rc, rc <= 1.0));
    print_target("layer_norm (4096, 768) forward+backward", o.threads, ratio_str(rl) + " libtorch", "target <= 1.0x",
                 verdict(rl, rl <= 1.0));
  }
  print_footer();
  return 0;
}
