// tools/gpu_probe/gpu_probe.cpp: prints tg::cuda::info(); with --bench, times each CUDA kernel family on
// large inputs and prints the bytes (or FLOPs) it must move per call, the achieved rate, and that rate
// as a share of --peak-gbs (default 4300: the H200's copy bandwidth) or of the measured cuBLAS rate.
// Medians over repetitions after warm-up; nothing is asserted. Run by tools/gpu_check.sh.
#include <tensorgrad.h>

#include "cli.h"   // examples/cli.h

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace {

double median_ms(const std::function<void()>& fn, int reps) {
  for (int i = 0; i < 3; ++i) fn();   // warm-up: caches, cuBLAS heuristics, allocator blocks
  tg::cuda::synchronize();
  std::vector<double> ms;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    tg::cuda::synchronize();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

double g_peak_gbs = 4300;

void row_bytes(const char* what, const char* shape, double bytes, double ms) {
  const double gbs = bytes / (ms * 1e-3) / 1e9;
  std::printf("%-34s %-22s %9.3f ms %9.1f GB/s %6.1f%% of %.0f GB/s\n", what, shape, ms, gbs, 100 * gbs / g_peak_gbs,
              g_peak_gbs);
}
void row_flops(const char* what, const char* shape, double flops, double ms) {
  std::printf("%-34s %-22s %9.3f ms %9.1f TFLOP/s\n", what, shape, ms, flops / (ms * 1e-3) / 1e12);
}

void bench(int reps) {
  const tg::Device gpu = tg::Device::cuda();
  const auto on = tg::TensorOptions().device(gpu);
  const int64_t n = int64_t(1) << 26;   // 64 Mi floats = 256 MiB per tensor
  const double f4 = 4.0 * double(n);
  std::printf("\n%-34s %-22s %12s %14s\n", "kernel family", "shape", "median", "rate");
  tg::manual_seed(0);
  tg::Variable a = tg::randn({n}, on), b = tg::randn({n}, on), c;
  row_bytes("copy (cudaMemcpyAsync D2D)", "64Mi f32", 2 * f4, median_ms([&] { c = tg::Variable(a.data().clone()); }, reps));
  row_bytes("binary add, float4 vectors", "64Mi f32", 3 * f4, median_ms([&] { c = a + b; }, reps));
  row_bytes("binary mul by 0-d scalar", "64Mi f32", 2 * f4, median_ms([&] { c = a * 0.5; }, reps));
  row_bytes("unary exp, float4 vectors", "64Mi f32", 2 * f4, median_ms([&] { c = tg::exp(a); }, reps));
  row_bytes("unary_backward tanh", "64Mi f32", 3 * f4, median_ms([&] {
              c = tg::Variable(tg::prim::unary_backward(tg::UnaryOp::Tanh, tg::Tensor(), a.data(), b.data()));
            }, reps));
  tg::Variable m = tg::randn({8192, 8192}, on), row = tg::randn({8192}, on);
  row_bytes("binary add, row broadcast (2-D)", "8192x8192 + 8192", 2 * f4, median_ms([&] { c = m + row; }, reps));
  row_bytes("strided copy (transpose)", "8192x8192", 2 * f4, median_ms([&] { c = tg::contiguous(tg::t(m)); }, reps));
  row_bytes("sum all (split rows)", "64Mi f32", f4, median_ms([&] { c = tg::sum(a); }, reps));
  row_bytes("sum dim 1 (block per row)", "8192x8192", f4, median_ms([&] { c = tg::sum(m, 1); }, reps));
  row_bytes("sum dim 0 (columns, sum_to)", "8192x8192", f4, median_ms([&] { c = tg::sum(m, 0); }, reps));
  row_bytes("max dim 1", "8192x8192", f4, median_ms([&] { c = tg::max(m, 1); }, reps));
  row_bytes("softmax last dim (2 reads, 1 write)", "8192x8192", 2 * f4, median_ms([&] { c = tg::softmax(m, 1); }, reps));
  tg::Variable sm = tg::randn({65536, 1024}, on);
  row_bytes("log_softmax, warp per row", "65536x1024", 2 * f4, median_ms([&] { c = tg::log_softmax(sm, 1); }, reps));
  {
    tg::Variable logits(tg::randn({4096, 16384}, on).data(), true);
    const tg::Variable target = tg::randint(0, 16384, {4096}, on);
    const double bytes = 4.0 * 4096 * 16384;
    row_bytes("cross_entropy forward (1 read)", "4096x16384", bytes, median_ms([&] { c = tg::cross_entropy(logits, target); }, reps));
    row_bytes("cross_entropy fwd+bwd (+1 r, 1 w)", "4096x16384", 3 * bytes, median_ms([&] {
                logits.zero_grad();
                tg::cross_entropy(logits, target).backward();
              }, reps));
  }
  row_bytes("randn (Philox, double math)", "64Mi f32", f4, median_ms([&] { c = tg::randn({n}, on); }, reps));
  {
    tg::Variable w(tg::randn({n}, on).data(), true);
    w.set_grad(tg::randn({n}, on));
    tg::optim::Adam adam({w}, tg::optim::AdamOptions(1e-3));
    row_bytes("adam_step fused (r 4, w 3 arrays)", "64Mi f32", 7 * f4, median_ms([&] { adam.step(); }, reps));
    tg::optim::SGD sgd({w}, tg::optim::SGDOptions(0.1).momentum(0.9));
    row_bytes("sgd_step fused momentum (r 3, w 2)", "64Mi f32", 5 * f4, median_ms([&] { sgd.step(); }, reps));
  }
  {
    const tg::Variable idx = tg::randint(0, 8192, {8192}, on);
    row_bytes("index_select rows", "8192x8192", 2 * f4, median_ms([&] { c = tg::index_select(m, 0, idx); }, reps));
  }
  for (int s : {4096, 8192}) {
    tg::Variable x = tg::randn({s, s}, on), y = tg::randn({s, s}, on);
    const std::string shape = std::to_string(s) + "^3 f32";
    row_flops("matmul (cuBLAS sgemm)", shape.c_str(), 2.0 * s * s * s, median_ms([&] { c = tg::matmul(x, y); }, reps));
  }
  {
    const auto on64 = tg::TensorOptions().device(gpu).dtype(tg::kFloat64);
    tg::Variable x = tg::randn({4096, 4096}, on64), y = tg::randn({4096, 4096}, on64);
    row_flops("matmul (cuBLAS dgemm)", "4096^3 f64", 2.0 * 4096 * 4096 * 4096, median_ms([&] { c = tg::matmul(x, y); }, reps));
  }
  {
    tg::Variable x = tg::randn({64, 512, 512}, on), y = tg::randn({64, 512, 512}, on);
    row_flops("batched matmul (strided batched)", "64x512^3 f32", 2.0 * 64 * 512 * 512 * 512,
              median_ms([&] { c = tg::matmul(x, y); }, reps));
  }
  {
    const tg::Tensor host = tg::randn({n}).data();
    const tg::Tensor pinned = tg::cuda::detail::pin(host);
    row_bytes("H2D pageable", "256 MiB", f4, median_ms([&] { c = tg::Variable(host.to(gpu)); }, reps));
    row_bytes("H2D pinned, non_blocking", "256 MiB", f4, median_ms([&] { c = tg::Variable(pinned.to(gpu, true)); }, reps));
    row_bytes("D2H (sync point)", "256 MiB", f4, median_ms([&] { (void)a.data().to(tg::Device::cpu()); }, reps));
  }
  {   // per-op overhead: a chain of tiny ops, no synchronization inside
    tg::Variable x = tg::randn({8}, on);
    const double ms = median_ms([&] {
      tg::Variable y = x;
      for (int i = 0; i < 1000; ++i) y = y * 1.0001;
    }, 5);
    std::printf("%-34s %-22s %9.3f us per op (host + launch, graph-free)\n", "tiny elementwise op", "8 f32", ms);
  }
  std::printf("\nallocator: %zu bytes allocated, %zu reserved, peak %zu\n", tg::cuda::memory_allocated(),
              tg::cuda::memory_reserved(), tg::cuda::max_memory_allocated());
}

}  // namespace

int main(int argc, char** argv) {
  bool run_bench = false;
  int reps = 10;
  cli::Parser p("gpu_probe",
                "Prints tg::cuda::info() and a smoke sum on cuda:0 (exit 2 without a GPU); with --bench, times\n"
                "each CUDA kernel family against the bytes or FLOPs it must move.");
  p.add("--bench", run_bench, "time the kernel families");
  p.add("--reps", reps, "N", "timed calls per kernel (median), after 3 warm-up calls", cli::Range::positive);
  p.add("--peak-gbs", g_peak_gbs, "GBS", "GB/s the rates are shown as a share of; the default is the H200's copy bandwidth",
        cli::Range::positive);
  p.parse(argc, argv);
  std::printf("%s\n", tg::cuda::info().c_str());
  if (!tg::cuda::is_available()) return 2;   // a GPU check without a GPU fails
  try {
    tg::Variable x = tg::randn({257, 33}, tg::TensorOptions().device(tg::Device::cuda()));
    std::printf("smoke: sum of a (257, 33) randn on cuda:0 = %.6f\n", tg::sum(x).item());
    if (run_bench) bench(reps);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpu_probe: %s\n", e.what());
    return 1;
  }
  return 0;
}
