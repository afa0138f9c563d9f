// tools/gpu_probe/gpu_probe.cpp: prints tg::cuda::info() and a smoke sum on cuda:0 (exit 2 without a
// device). With --bench, times each CUDA kernel family and prints, per row, the median time, the bytes
// (or FLOPs) the call must move and, for memory-bound rows, that rate as a fraction of a device-to-device
// copy measured first in the same run; then matrix products and the README's MLP training step (batch 64
// and 1024) with the kernel launches per step. --tsv PATH also writes the rows that
// tools/gpu_torch_bench.py times again with PyTorch (GEMMs, MLP steps) for the ratios. Medians over
// --reps calls after 3 warm-up calls; nothing is asserted. Run by tools/gpu_check.sh.
#include <tensorgrad.h>

#include "cli.h"   // examples/cli.h

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

// ==== The launch counter: the one place it is read =====================================================
// tools/gpu_probe/CMakeLists.txt defines TG_PROBE_HAVE_LAUNCH_COUNT=1 when a program calling
// tg::cuda::detail::launch_count() (the units of work queued on CUDA streams so far: kernel launches,
// cuBLAS calls, stream memsets and copies; src/tensorgrad/core/accelerator.h) compiles and links against the
// installed tensorgrad. Without it the MLP rows print "launches: n/a (no counter in this build)". A
// counter under another name or header is hooked here and only here.
std::optional<uint64_t> launches_so_far() {
#if TG_PROBE_HAVE_LAUNCH_COUNT
  return static_cast<uint64_t>(tg::cuda::detail::launch_count());
#else
  return std::nullopt;
#endif
}
// ========================================================================================================

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

std::string dims(std::initializer_list<int64_t> d) {   // "4096x4096x4096"
  std::string s;
  for (int64_t v : d) s += (s.empty() ? "" : "x") + std::to_string(v);
  return s;
}

struct Table {
  int reps = 10;
  double copy_gbs = 0;          // the device-to-device copy of this run: what memory-bound rows are a fraction of
  std::FILE* tsv = nullptr;     // key, shape, median ms, launches per call (or n/a)

  void tsv_row(const std::string& key, const std::string& shape, double ms, const std::string& launches = "n/a") {
    if (tsv) std::fprintf(tsv, "%s\t%s\t%.6f\t%s\n", key.c_str(), shape.c_str(), ms, launches.c_str());
  }
  /// A memory-bound row: `bytes` read plus written per call.
  void bytes(const std::string& what, const std::string& shape, double bytes, const std::function<void()>& fn) {
    const double ms = median_ms(fn, reps);
    const double gbs = bytes / (ms * 1e-3) / 1e9;
    std::printf("%-38s %-20s %9.3f ms %9.1f GB/s %6.2fx copy\n", what.c_str(), shape.c_str(), ms, gbs,
                copy_gbs > 0 ? gbs / copy_gbs : 0.0);
    std::fflush(stdout);
  }
  /// A compute-bound row: `flops` per call; `key` names it in the TSV (tools/gpu_torch_bench.py reads
  /// the shape from there).
  void flops(const std::string& key, const std::string& what, const std::string& shape, double flops,
             const std::function<void()>& fn) {
    const double ms = median_ms(fn, reps);
    std::printf("%-38s %-20s %9.3f ms %9.2f TFLOP/s\n", what.c_str(), shape.c_str(), ms, flops / (ms * 1e-3) / 1e12);
    std::fflush(stdout);
    tsv_row(key, shape, ms);
  }
};

/// The MLP of README.md's first program: Linear(784, 128), ReLU, Linear(128, 10), SGD lr 0.01 momentum
/// 0.9, cross-entropy; one step = zero_grad, forward, loss, backward, step (no host sync inside).
void mlp_step_row(Table& t, int64_t batch) {
  const tg::Device gpu = tg::Device::cuda();
  tg::manual_seed(0);
  tg::nn::Sequential model;
  model.add<tg::nn::Linear>(784, 128);
  model.add<tg::nn::ReLU>();
  model.add<tg::nn::Linear>(128, 10);
  model.to(gpu);
  tg::optim::SGD optimizer(model.parameters(), tg::optim::SGDOptions(0.01).momentum(0.9));
  tg::nn::CrossEntropyLoss criterion;
  const tg::Tensor x = tg::randn({batch, 784}).to(gpu);
  const tg::Tensor y = tg::randint(0, 10, {batch}).to(gpu);
  auto step = [&] {
    optimizer.zero_grad();
    tg::Tensor loss = criterion(model(x), y);
    loss.backward();
    optimizer.step();
  };
  const double ms = median_ms(step, t.reps);
  // launches per step: one more step, counted as it is queued (the synchronize after it copies the
  // device error flag, one more unit of work that belongs to no step)
  tg::cuda::synchronize();
  const std::optional<uint64_t> before = launches_so_far();
  step();
  const std::optional<uint64_t> after = launches_so_far();
  tg::cuda::synchronize();
  const std::string launches = before && after ? std::to_string(*after - *before) : "n/a";
  const std::string shape = dims({batch, 784, 128, 10});
  std::printf("%-38s %-20s %9.3f ms   launches: %s\n", ("MLP step, batch " + std::to_string(batch)).c_str(),
              shape.c_str(), ms, before ? launches.c_str() : "n/a (no counter in this build)");
  std::fflush(stdout);
  t.tsv_row("mlp_step", shape, ms, launches);
  // The same step captured into a CUDA graph (Note [CUDA graphs]) and replayed: one launch per step.
  tg::cuda::CUDAGraph graph;
  {
    tg::cuda::GraphCapture capture(graph);
    step();
  }
  const double graph_ms = median_ms([&] { graph.replay(); }, t.reps);
  std::printf("%-38s %-20s %9.3f ms   %.2fx of eager, a graph of %zu nodes\n",
              ("MLP step captured, batch " + std::to_string(batch)).c_str(), shape.c_str(), graph_ms, graph_ms / ms,
              graph.num_nodes());
  std::fflush(stdout);
  t.tsv_row("mlp_step_graph", shape, graph_ms, "1");
}

void bench(Table& t, int log2n) {
  const tg::Device gpu = tg::Device::cuda();
  const auto on = tg::TensorOptions().device(gpu);
  const int64_t n = int64_t(1) << log2n;           // 2^26 by default: 64 Mi floats = 256 MiB per tensor
  const int64_t m = int64_t(1) << (log2n / 2);     // the side of an n-element matrix (8192)
  const double f4 = 4.0 * double(n);
  const std::string vec = std::to_string(n) + " f32", mat = dims({m, m});
  std::printf("\n%-38s %-20s %12s %14s %11s\n", "kernel family", "shape", "median", "rate", "vs copy");
  tg::manual_seed(0);
  tg::Tensor a = tg::randn({n}, on), b = tg::randn({n}, on), c;

  // The reference: what a device-to-device copy (clone: cudaMemcpyAsync) achieves here, now.
  {
    const double ms = median_ms([&] { c = tg::Tensor(a.data().clone()); }, t.reps);
    t.copy_gbs = 2 * f4 / (ms * 1e-3) / 1e9;
    std::printf("%-38s %-20s %9.3f ms %9.1f GB/s %6.2fx copy (the reference of this column)\n",
                "copy D2D (clone, cudaMemcpyAsync)", vec.c_str(), ms, t.copy_gbs, 1.0);
  }
  // elementwise
  t.bytes("binary add, float4 vectors", vec, 3 * f4, [&] { c = a + b; });
  t.bytes("binary mul by 0-d scalar", vec, 2 * f4, [&] { c = a * 0.5; });
  tg::Tensor mat_a = tg::randn({m, m}, on), row = tg::randn({m}, on);
  t.bytes("binary add, row broadcast (2-D)", mat + " + " + std::to_string(m), 2 * f4, [&] { c = mat_a + row; });
  t.bytes("unary exp, float4 vectors", vec, 2 * f4, [&] { c = tg::exp(a); });
  t.bytes("unary relu", vec, 2 * f4, [&] { c = tg::relu(a); });
  t.bytes("unary_backward tanh", vec, 3 * f4, [&] {
    c = tg::Tensor(tg::prim::unary_backward(tg::UnaryOp::Tanh, tg::RawTensor(), a.data(), b.data()));
  });
  t.bytes("strided copy (transpose)", mat, 2 * f4, [&] { c = tg::contiguous(tg::t(mat_a)); });
  // casts and fills
  t.bytes("cast f32 -> f64", vec, 3 * f4, [&] { c = a.to(tg::kFloat64); });
  {
    const tg::Tensor d = a.to(tg::kFloat64);
    t.bytes("cast f64 -> f32", vec, 3 * f4, [&] { c = d.to(tg::kFloat32); });
  }
  t.bytes("fill_ in place", vec, f4, [&] { b.fill_(0.25); });
  t.bytes("full (allocate + fill)", vec, f4, [&] { c = tg::full({n}, 0.5, on); });
  t.bytes("zeros", vec, f4, [&] { c = tg::zeros({n}, on); });
  t.bytes("randn (Philox, double math)", vec, f4, [&] { c = tg::randn({n}, on); });
  b = tg::randn({n}, on);
  // reductions
  t.bytes("sum all (split rows)", vec, f4, [&] { c = tg::sum(a); });
  t.bytes("sum dim 1 (block per row)", mat, f4, [&] { c = tg::sum(mat_a, 1); });
  t.bytes("sum dim 0 (columns, sum_to)", mat, f4, [&] { c = tg::sum(mat_a, 0); });
  {
    const tg::Tensor tall = tg::randn({n / 128, 128}, on);   // a bias gradient over a tall batch
    t.bytes("sum dim 0 tall (columns over blocks)", dims({n / 128, 128}), f4, [&] { c = tg::sum(tall, 0); });
  }
  {
    const tg::Tensor off = tg::narrow(mat_a, 1, 1, m - 1);   // every row 4 bytes past a 16-byte boundary
    t.bytes("sum dim 1, rows off 16 B (head/tail)", dims({m, m - 1}), f4, [&] { c = tg::sum(off, 1); });
    const tg::Tensor half = mat_a.to(tg::kFloat16);
    t.bytes("sum dim 1 f16 (8-wide vectors)", mat + " f16", f4 / 2, [&] { c = tg::sum(half, 1); });
  }
  t.bytes("max dim 1", mat, f4, [&] { c = tg::max(mat_a, 1); });
  t.bytes("argmax dim 1", mat, f4, [&] { c = tg::argmax(mat_a, 1); });
  // softmax family
  t.bytes("softmax last dim (2 reads, 1 write)", mat, 2 * f4, [&] { c = tg::softmax(mat_a, 1); });
  {
    const int64_t cols = std::max<int64_t>(m / 8, 1), rows = n / cols;
    const tg::Tensor sm = tg::randn({rows, cols}, on);
    t.bytes("log_softmax, warp per row", dims({rows, cols}), 2 * f4, [&] { c = tg::log_softmax(sm, 1); });
  }
  {
    const int64_t classes = 2 * m, rows = n / classes;
    tg::Tensor logits(tg::randn({rows, classes}, on).data(), true);
    const tg::Tensor target = tg::randint(0, classes, {rows}, on);
    t.bytes("cross_entropy forward (1 read)", dims({rows, classes}), f4, [&] { c = tg::cross_entropy(logits, target); });
    t.bytes("cross_entropy fwd+bwd (+1 r, 1 w)", dims({rows, classes}), 3 * f4, [&] {
      logits.zero_grad();
      tg::cross_entropy(logits, target).backward();
    });
  }
  // optimizer steps
  {
    tg::Tensor w(tg::randn({n}, on).data(), true);
    w.set_grad(tg::randn({n}, on));
    tg::optim::Adam adam({w}, tg::optim::AdamOptions(1e-3));
    t.bytes("adam_step fused (r 4, w 3 arrays)", vec, 7 * f4, [&] { adam.step(); });
    tg::optim::SGD sgd({w}, tg::optim::SGDOptions(0.1).momentum(0.9));
    t.bytes("sgd_step fused momentum (r 3, w 2)", vec, 5 * f4, [&] { sgd.step(); });
  }
  {
    const tg::Tensor idx = tg::randint(0, m, {m}, on);
    t.bytes("index_select rows", mat, 2 * f4, [&] { c = tg::index_select(mat_a, 0, idx); });
  }
  // transfers (not device-bound: shown against the copy for scale only)
  {
    const tg::RawTensor host = tg::randn({n}).data();
    const tg::RawTensor pinned = tg::cuda::detail::pin(host);
    t.bytes("H2D pageable", vec, f4, [&] { c = tg::Tensor(host.to(gpu)); });
    t.bytes("H2D pinned, non_blocking", vec, f4, [&] { c = tg::Tensor(pinned.to(gpu, true)); });
    t.bytes("D2H (sync point)", vec, f4, [&] { (void)a.data().to(tg::Device::cpu()); });
  }
  // matrix products (cuBLAS); tools/gpu_torch_bench.py times torch.matmul on the same shapes
  std::printf("\n");
  for (int64_t s : {m / 2, m}) {
    tg::Tensor x = tg::randn({s, s}, on), y = tg::randn({s, s}, on);
    t.flops("matmul_f32", "matmul f32 (cuBLAS sgemm)", dims({s, s, s}), 2.0 * s * s * s, [&] { c = tg::matmul(x, y); });
  }
  {
    const int64_t s = m / 2;
    const auto on64 = tg::TensorOptions().device(gpu).dtype(tg::kFloat64);
    tg::Tensor x = tg::randn({s, s}, on64), y = tg::randn({s, s}, on64);
    t.flops("matmul_f64", "matmul f64 (cuBLAS dgemm)", dims({s, s, s}), 2.0 * s * s * s, [&] { c = tg::matmul(x, y); });
  }
  {
    const int64_t batch = 64, s = std::max<int64_t>(m / 16, 1);
    tg::Tensor x = tg::randn({batch, s, s}, on), y = tg::randn({batch, s, s}, on);
    t.flops("bmm_f32", "batched matmul f32 (strided)", dims({batch, s, s, s}), 2.0 * batch * s * s * s,
            [&] { c = tg::matmul(x, y); });
  }
  // fused causal attention: (B, H, L, E) = (4, 8, L, 64), L = m / 4, in float32 and bfloat16 on the kernels
  // chosen by default (the tensor cores from sm_80: backend/cuda/attention_mma.cu) and in float32 on the
  // CUDA-core kernels too (TG_CUDA_ATTENTION=cuda-cores, backend/cuda/attention.cu); the FLOPs counted are
  // the useful ones, 4 B H L^2 E / 2 for the forward (q k^T and p v under the causal triangle) and 2.5x
  // that for forward and backward; tools/gpu_torch_bench.py times
  // torch.nn.functional.scaled_dot_product_attention on the same shape and dtype
  std::printf("\n");
  struct Sdpa {
    tg::DType dtype;
    const char* tag;
    bool cuda_cores;
  };
  for (const Sdpa& a : {Sdpa{tg::kFloat32, "f32", false}, Sdpa{tg::kBFloat16, "bf16", false},
                        Sdpa{tg::kFloat32, "f32", true}})
    for (const bool backward : {false, true}) {
      const char* before = std::getenv("TG_CUDA_ATTENTION");
      const std::string saved = before == nullptr ? "" : before;
      if (a.cuda_cores) ::setenv("TG_CUDA_ATTENTION", "cuda-cores", 1);
      const int64_t B = 4, H = 8, L = std::max<int64_t>(m / 4, 32), E = 64;
      const auto opt = tg::TensorOptions().device(gpu).dtype(a.dtype);
      tg::Tensor q(tg::randn({B, H, L, E}, opt).data(), backward), k(tg::randn({B, H, L, E}, opt).data(), backward),
          v(tg::randn({B, H, L, E}, opt).data(), backward);
      const double fwd = 4.0 * B * H * L * L * E / 2;
      const std::string key = std::string("sdpa_causal_") + (backward ? "fwd_bwd_" : "fwd_") + a.tag +
                              (a.cuda_cores ? "_cudacores" : "");
      const std::string what = std::string("sdpa causal ") + a.tag + (backward ? " fwd+bwd" : " forward") +
                               (a.cuda_cores ? " (CUDA cores)" : "");
      t.flops(key.c_str(), what.c_str(), dims({B, H, L, E}), backward ? 2.5 * fwd : fwd, [&] {
        c = tg::scaled_dot_product_attention(q, k, v, {}, 0, true);
        if (backward) tg::sum(c).backward();
      });
      if (a.cuda_cores) {
        if (before == nullptr) ::unsetenv("TG_CUDA_ATTENTION");
        else ::setenv("TG_CUDA_ATTENTION", saved.c_str(), 1);
      }
    }
  // the README's MLP step; tools/gpu_torch_bench.py times PyTorch eager on the same model
  std::printf("\n");
  for (int64_t batch : {64, 1024}) mlp_step_row(t, batch);
  {   // per-op overhead: a chain of tiny ops, no synchronization inside
    tg::Tensor x = tg::randn({8}, on);
    const double ms = median_ms([&] {
      tg::Tensor y = x;
      for (int i = 0; i < 1000; ++i) y = y * 1.0001;
    }, 5);
    std::printf("%-38s %-20s %9.3f us per op (host + launch, graph-free)\n", "tiny elementwise op", "8 f32", ms);
  }
  std::printf("\nallocator: %zu bytes allocated, %zu reserved, peak %zu\n", tg::cuda::memory_allocated(),
              tg::cuda::memory_reserved(), tg::cuda::max_memory_allocated());
}

}  // namespace

int main(int argc, char** argv) {
  bool run_bench = false;
  int reps = 10, log2n = 26;
  std::string tsv;
  cli::Parser p("gpu_probe",
                "Prints tg::cuda::info() and a smoke sum on cuda:0 (exit 2 without a device); with --bench, times\n"
                "each CUDA kernel family against a device-to-device copy of the same run, the matrix products\n"
                "and the README's MLP step.");
  p.add("--bench", run_bench, "time the kernel families");
  p.add("--reps", reps, "N", "timed calls per kernel (median), after 3 warm-up calls", cli::Range::positive);
  p.add("--log2n", log2n, "K", "elements per vector 2^K, matrices 2^(K/2) square (26: 256 MiB per tensor)",
        cli::Range::positive);
  p.add("--tsv", tsv, "PATH", "also write the GEMM and MLP rows (key, shape, ms, launches) for tools/gpu_torch_bench.py");
  p.parse(argc, argv);
  if (log2n < 8 || log2n > 30) p.fail("--log2n expects 8 to 30, got " + std::to_string(log2n));
  const std::string info = tg::cuda::info();
  std::printf("%s\n", info.c_str());
  if (!tg::cuda::is_available()) return 2;   // a GPU check without a GPU fails
  if (info.find("emulator") != std::string::npos)
    std::printf("NOTE: this build runs on the CUDA emulator (host fibers): every time below is meaningless for a GPU\n");
  try {
    tg::Tensor x = tg::randn({257, 33}, tg::TensorOptions().device(tg::Device::cuda()));
    std::printf("smoke: sum of a (257, 33) randn on cuda:0 = %.6f\n", tg::sum(x).item());
    if (run_bench) {
      Table t;
      t.reps = reps;
      if (!tsv.empty() && !(t.tsv = std::fopen(tsv.c_str(), "w"))) {
        std::fprintf(stderr, "gpu_probe: cannot write %s\n", tsv.c_str());
        return 1;
      }
      bench(t, log2n);
      if (t.tsv) std::fclose(t.tsv);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpu_probe: %s\n", e.what());
    return 1;
  }
  return 0;
}
