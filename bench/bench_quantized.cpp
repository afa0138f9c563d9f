// bench/bench_quantized.cpp: inference through one Linear 1024-1024 at batch 1, 64 and 1024: float32
// (tg::nn::Linear, OpenBLAS sgemm) vs int8 (tg::quantization::DynamicQuantizedLinear: per-batch
// activation quantization, oneDNN's u8s8s32 matmul, dequantization). µs per forward and the speedup.
// Target: int8 >= 1.5x faster than float32 at batch >= 64 on the CPU. libtorch's
// quantize_dynamic is a Python-level transform with no C++ API in Debian's libtorch, so there is no
// libtorch column. oneDNN runs single-threaded inside tensorgrad's pool, so --threads sets both
// engines' threads whatever OMP_NUM_THREADS says (Note [oneDNN threads], quantization/dynamic.cpp).
// Flags: --help (bench/common.h).
#include "common.h"

#include <memory>

namespace {

struct Layers {
  tg::nn::Linear lin{1024, 1024};
  std::unique_ptr<tg::nn::Module> q = tg::quantization::quantize_dynamic(lin);
  tg::Tensor x;
  explicit Layers(int64_t batch) : x(tg::randn({batch, 1024})) {}
};

}  // namespace

int main(int argc, char** argv) {
  using namespace bench;
  const Options o = parse_options(argc, argv, "bench_quantized",
      "One Linear 1024-1024 forward at batch 1, 64, 1024: float32 vs int8 dynamic quantization, us per call.");
  set_threads(o.threads);
  tg::manual_seed(0);
  print_header("Linear 1024-1024 inference, float32 vs int8 (quantize_dynamic); µs per forward, median [min..max]", o);
  std::printf("int8 product on oneDNN: %s\n", tg::quantization::has_onednn() ? "yes" : "no (reference loop)");
  const std::vector<int64_t> batches = o.smoke ? std::vector<int64_t>{1, 4} : std::vector<int64_t>{1, 64, 1024};
  Table table({"batch", "float32 µs", "int8 µs", "int8 speedup", "target"});
  std::vector<double> speedups;
  for (int64_t b : batches) {
    auto L = std::make_shared<Layers>(b);
    Work f32 = [L] {
      tg::NoGradGuard g;
      L->lin(L->x);
    };
    Work i8 = [L] { (*L->q)(L->x); };
    const auto s = measure({f32, i8}, plan_for(o, 5, 10, 1.0));
    const double speedup = s[0].median / s[1].median;
    speedups.push_back(speedup);
    const std::string target = b >= 64 ? ">= 1.5x: " + verdict(speedup, speedup >= 1.5) : "-";
    table.row({std::to_string(b), cell(s[0], 1e6), cell(s[1], 1e6), ratio_str(speedup), target});
  }
  table.print();
  if (!o.smoke)
    for (std::size_t i = 1; i < batches.size(); ++i)
      print_target("int8 Linear, batch " + std::to_string(batches[i]), o.threads, ratio_str(speedups[i]) + " faster",
                   "target >= 1.5x", verdict(speedups[i], speedups[i] >= 1.5));
  print_footer();
  return 0;
}
