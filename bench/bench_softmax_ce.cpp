// bench/bench_softmax_ce.cpp: softmax cross-entropy (mean over the batch) forward + backward for logits
// (1024, 10) and (256, 1000) that require grad, tensorgrad's fused tg::cross_entropy vs libtorch's
// cross_entropy; the logits' gradient is reset after each call. Target: (1024, 10) <= 0.5x.
// Flags: --help (bench/common.h).
#include "common.h"

int main(int argc, char** argv) {
  using namespace bench;
  const Options o = parse_options(argc, argv, "bench_softmax_ce",
      "Softmax cross-entropy forward + backward on logits (1024, 10) and (256, 1000), tensorgrad vs libtorch.");
  set_threads(o.threads);
  tg::manual_seed(0);
  print_header("softmax cross-entropy forward + backward; µs per call, median [min..max]", o);

  struct Shape2 {
    int64_t n, c;
  };
  const std::vector<Shape2> shapes =
      o.smoke ? std::vector<Shape2>{{8, 10}} : std::vector<Shape2>{{1024, 10}, {256, 1000}};
  Table table({"logits", "tensorgrad µs", "libtorch µs", "tg/torch", "target"});
  double r_small = NAN;
  for (const Shape2& sh : shapes) {
    tg::Tensor logits = tg::randn({sh.n, sh.c}, tg::TensorOptions().requires_grad(true));
    tg::Tensor target = tg::randint(0, sh.c, {sh.n});
    Work tg_work = [logits, target]() mutable {
      tg::cross_entropy(logits, target).backward();
      logits.zero_grad();
    };
    const auto s = measure({tg_work, torch_side::softmax_cross_entropy(sh.n, sh.c)}, plan_for(o, 20, 20, 1.0));
    const double r = time_ratio(s[0], s[1]);
    std::string tgt = "-";
    if (sh.n == 1024 && sh.c == 10) {
      r_small = r;
      tgt = "<= 0.5x: " + verdict(r, r <= 0.5);
    }
    table.row({"(" + std::to_string(sh.n) + ", " + std::to_string(sh.c) + ")", cell(s[0], 1e6), cell(s[1], 1e6),
               ratio_str(r), tgt});
  }
  table.print();
  if (!o.smoke)
    print_target("softmax-CE (1024, 10) forward+backward", o.threads, ratio_str(r_small) + " libtorch",
                 "target <= 0.5x", verdict(r_small, r_small <= 0.5));
  print_footer();
  return 0;
}
