// bench/bench_overhead.cpp: per-op autograd overhead. A chain of 100 alternating add/mul on tiny
// tensors (1 and 16 elements) that require grad: nanoseconds per op for forward without grad,
// forward recording the graph, and forward + backward. Prints the median over repetitions after a
// warm-up, and the spread (min..max). The libtorch side-by-side run comes with the benchmark issue.
// Usage: bench_overhead [--reps N] [--threads T]
#include <tensorgrad.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

constexpr int kChain = 100;

template <class F>
std::vector<double> time_ns_per_op(F&& f, int reps) {
  for (int i = 0; i < std::max(3, reps / 10); ++i) f();   // warm-up: caches, allocator pools
  std::vector<double> ns;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    const auto t1 = std::chrono::steady_clock::now();
    ns.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / kChain);
  }
  std::sort(ns.begin(), ns.end());
  return ns;
}

tg::Variable chain(const tg::Variable& x, const tg::Variable& a, const tg::Variable& b) {
  tg::Variable y = x;
  for (int i = 0; i < kChain / 2; ++i) y = (y + a) * b;   // 100 ops
  return y;
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 2000, threads = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--reps")) reps = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--threads")) threads = std::atoi(argv[i + 1]);
  }
  tg::set_num_threads(threads);
  std::printf("per-op overhead, chain of %d alternating add/mul, %d reps, %d thread(s); ns per op: median [min..max]\n",
              kChain, reps, threads);
  std::printf("%-10s %-28s %-28s %-28s\n", "elements", "forward, no grad", "forward, recording", "forward + backward");
  for (int64_t n : {int64_t(1), int64_t(16)}) {
    auto opts = tg::TensorOptions().requires_grad(true);
    tg::Variable x = tg::randn({n}, opts), a = tg::full({n}, 1e-3, opts), b = tg::full({n}, 0.999, opts);
    auto nograd = time_ns_per_op([&] { tg::NoGradGuard g; chain(x, a, b); }, reps);
    auto fwd = time_ns_per_op([&] { chain(x, a, b); }, reps);
    auto fwdbwd = time_ns_per_op([&] { chain(x, a, b).sum().backward(); }, reps);
    auto cell = [](const std::vector<double>& v) {
      static char buf[4][64];
      static int k = 0;
      char* s = buf[k++ % 4];
      std::snprintf(s, 64, "%7.0f [%.0f..%.0f]", v[v.size() / 2], v.front(), v.back());
      return s;
    };
    std::printf("%-10lld %-28s %-28s %-28s\n", static_cast<long long>(n), cell(nograd), cell(fwd), cell(fwdbwd));
  }
  return 0;
}
