// bench/bench_layers.cpp: conv2d forward + backward on (64, 32, 28, 28) with 32 3x3 filters (padding 1,
// bias), layer_norm forward + backward on (4096, 768) (a transformer's activations: 8 sequences of
// 512 tokens), causal attention forward + backward on q, k, v (8, 8, 128, 64) (batch 8, 8 heads,
// 128 tokens, head dim 64) and embedding forward + backward (1024 ids into (10000, 512)), tensorgrad
// vs libtorch in the same process; the gradients are reset after each call. libtorch 1.13 has no
// scaled_dot_product_attention, so its attention row is the same composition (matmul, masked_fill,
// softmax, matmul). Targets: conv2d, layer_norm and attention <= 1.0x. Flags: --help.
#include "common.h"

int main(int argc, char** argv) {
  using namespace bench;
  const Options o = parse_options(argc, argv, "bench_layers",
      "conv2d (64, 32, 28, 28) 3x3, layer_norm (4096, 768), causal attention (8, 8, 128, 64) and embedding "
      "(1024 ids into (10000, 512)) forward + backward, tensorgrad vs libtorch.");
  set_threads(o.threads);
  tg::manual_seed(0);
  print_header("conv2d, layer_norm, attention and embedding forward + backward; ms per call, median [min..max]", o);
  Table table({"op", "tensorgrad ms", "libtorch ms", "tg/torch", "target"});

  const int64_t N = o.smoke ? 2 : 64, C = o.smoke ? 3 : 32, H = o.smoke ? 6 : 28, O = o.smoke ? 4 : 32;
  tg::Tensor x = tg::randn({N, C, H, H}, tg::TensorOptions().requires_grad(true));
  tg::Tensor w = tg::randn({O, C, 3, 3}, tg::TensorOptions().requires_grad(true));
  tg::Tensor b = tg::randn({O}, tg::TensorOptions().requires_grad(true));
  const tg::Tensor gy = tg::randn({N, O, H, H});
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
  tg::Tensor lx = tg::randn({R, D}, tg::TensorOptions().requires_grad(true));
  tg::Tensor lw = tg::randn({D}, tg::TensorOptions().requires_grad(true));
  tg::Tensor lb = tg::randn({D}, tg::TensorOptions().requires_grad(true));
  const tg::Tensor lgy = tg::randn({R, D});
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

  const int64_t AB = o.smoke ? 2 : 8, AH = o.smoke ? 2 : 8, AL = o.smoke ? 5 : 128, AE = o.smoke ? 4 : 64;
  const tg::Shape ashape{AB, AH, AL, AE};
  tg::Tensor aq = tg::randn(ashape, tg::TensorOptions().requires_grad(true));
  tg::Tensor ak = tg::randn(ashape, tg::TensorOptions().requires_grad(true));
  tg::Tensor av = tg::randn(ashape, tg::TensorOptions().requires_grad(true));
  const tg::Tensor agy = tg::randn(ashape);
  Work att_tg = [aq, ak, av, agy]() mutable {
    tg::scaled_dot_product_attention(aq, ak, av, {}, 0.0, /*is_causal=*/true).backward(agy);
    aq.zero_grad();
    ak.zero_grad();
    av.zero_grad();
  };
  const auto sa = measure({att_tg, torch_side::attention(AB, AH, AL, AE, true)}, plan_for(o, 5, 3, 2.0));
  const double ra = time_ratio(sa[0], sa[1]);
  table.row({"causal attention (" + std::to_string(AB) + ", " + std::to_string(AH) + ", " + std::to_string(AL) + ", " +
                 std::to_string(AE) + ")",
             cell(sa[0], 1e3), cell(sa[1], 1e3), ratio_str(ra), "<= 1.0x: " + verdict(ra, ra <= 1.0)});

  const int64_t EV = o.smoke ? 50 : 10000, ED = o.smoke ? 8 : 512, ET = o.smoke ? 16 : 1024;
  tg::Tensor ew = tg::randn({EV, ED}, tg::TensorOptions().requires_grad(true));
  const tg::Tensor ids = tg::randint(0, EV, {ET});
  const tg::Tensor egy = tg::randn({ET, ED});
  Work emb_tg = [ew, ids, egy]() mutable {
    tg::embedding(ids, ew).backward(egy);
    ew.zero_grad();
  };
  const auto se = measure({emb_tg, torch_side::embedding(EV, ED, ET)}, plan_for(o, 5, 3, 2.0));
  const double re = time_ratio(se[0], se[1]);
  table.row({"embedding " + std::to_string(ET) + " ids into (" + std::to_string(EV) + ", " + std::to_string(ED) + ")",
             cell(se[0], 1e3), cell(se[1], 1e3), ratio_str(re), "-"});
  table.print();
  if (!o.smoke) {
    print_target("conv2d (64, 32, 28, 28) 3x3 forward+backward", o.threads, ratio_str(rc) + " libtorch",
                 "target <= 1.0x", verdict(rc, rc <= 1.0));
    print_target("layer_norm (4096, 768) forward+backward", o.threads, ratio_str(rl) + " libtorch", "target <= 1.0x",
                 verdict(rl, rl <= 1.0));
    print_target("causal attention (8, 8, 128, 64) forward+backward", o.threads, ratio_str(ra) + " libtorch",
                 "target <= 1.0x", verdict(ra, ra <= 1.0));
  }
  print_footer();
  return 0;
}
