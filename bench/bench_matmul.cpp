// bench/bench_matmul.cpp: square float32 matmul (256, 512, 1024, 2048) in GFLOP/s (2 n^3 flops per call):
// tg::matmul and torch::matmul into a fresh output, and cblas_sgemm called directly into a preallocated
// output (the same OpenBLAS tensorgrad links) as the ceiling. Target: tg::matmul at 1024
// >= 0.9x the direct cblas_sgemm rate.
// Flags: --help (bench/common.h).
#include "common.h"

#ifdef TG_BENCH_HAVE_CBLAS
#include <cblas.h>
extern "C" void openblas_set_num_threads(int);
#endif

int main(int argc, char** argv) {
  using namespace bench;
  const Options o = parse_options(argc, argv, "bench_matmul",
      "Square float32 matmul (256 to 2048) in GFLOP/s: tg::matmul, torch::matmul and cblas_sgemm called\n"
      "directly as the ceiling.");
  set_threads(o.threads);
#ifdef TG_BENCH_HAVE_CBLAS
  openblas_set_num_threads(o.threads);
#endif
  tg::manual_seed(0);
  print_header("matmul (n, n) @ (n, n) float32; GFLOP/s from the median [from max..min time]", o);

  const std::vector<int64_t> sizes = o.smoke ? std::vector<int64_t>{64} : std::vector<int64_t>{256, 512, 1024, 2048};
  Table table({"n", "tensorgrad GFLOP/s", "libtorch GFLOP/s", "cblas_sgemm GFLOP/s", "tg/torch time", "tg/cblas rate",
               "target"});
  double at1024 = NAN;
  for (int64_t n : sizes) {
    tg::Tensor a = tg::randn({n, n}), b = tg::randn({n, n});
    Work tg_work = [a, b] { tg::matmul(a, b); };
    Work blas_work;
#ifdef TG_BENCH_HAVE_CBLAS
    auto c = std::make_shared<std::vector<float>>(static_cast<std::size_t>(n * n));
    const float* pa = a.data().data<float>();
    const float* pb = b.data().data<float>();
    blas_work = [c, pa, pb, n, threads = o.threads] {
      openblas_set_num_threads(threads);   // tensorgrad keeps OpenBLAS at 1 thread (core/parallel.h)
      const int k = static_cast<int>(n);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, k, k, k, 1.0f, pa, k, pb, k, 0.0f, c->data(), k);
    };
#endif
    // 2048 takes ~0.1-0.2 s a call: a few calls suffice; small sizes get many.
    const auto s = measure({tg_work, torch_side::matmul(n), blas_work}, plan_for(o, 2, n >= 2048 ? 3 : 5, 1.0));
    const double flops = 2.0 * double(n) * double(n) * double(n);
    auto gf = [flops](const Stats& st) {
      return st.ok() ? fmt("%.1f", flops / st.median * 1e-9) + " [" + fmt("%.1f", flops / st.max * 1e-9) + ".." +
                           fmt("%.1f", flops / st.min * 1e-9) + "]"
                     : std::string("n/a");
    };
    const double rate = s[0].ok() && s[2].ok() ? s[2].median / s[0].median : NAN;   // tg rate / cblas rate
    std::string target = "-";
    if (n == 1024) {
      at1024 = rate;
      target = ">= 0.9x cblas: " + verdict(rate, rate >= 0.9);
    }
    table.row({std::to_string(n), gf(s[0]), gf(s[1]), gf(s[2]), ratio_str(time_ratio(s[0], s[1])), ratio_str(rate),
               target});
  }
  table.print();
  if (!o.smoke)
    print_target("matmul 1024 vs direct cblas_sgemm", o.threads, ratio_str(at1024) + " cblas rate",
                 "target >= 0.9x cblas_sgemm", verdict(at1024, at1024 >= 0.9));
  print_footer();
  return 0;
}
