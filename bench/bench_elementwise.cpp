// bench/bench_elementwise.cpp: elementwise ops on 16M floats with a fresh output each call (add, relu, exp),
// relu forward + backward, cumsum, and multinomial's draw from 256 rows of 64K weights (a language model's
// sampling at a large vocabulary), tensorgrad vs libtorch, in GB/s of compulsory traffic (each input read
// and each output written once; multinomial reads its weights and writes 256 indices). Ceilings measured
// in the same run on the same threads: a plain c = a + b loop and std::memcpy into preallocated (already
// faulted) buffers, plus c = a + b into a freshly malloc'd buffer (what a fresh output costs without a
// caching allocator). Target: add, relu, exp, cumsum and multinomial >= 0.7x the a+b->c loop's
// bandwidth. Flags: --help (bench/common.h).
#include "common.h"

#include <cstdlib>
#include <memory>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace {

/// [begin, end) of chunk t of n split into `parts` nearly equal pieces.
inline void chunk(int64_t n, int parts, int t, int64_t& begin, int64_t& end) {
  begin = n * t / parts;
  end = n * (t + 1) / parts;
}

/// Runs f(begin, end) on `threads` OpenMP threads over [0, n) (serially without OpenMP).
template <class F>
void parallel_chunks(int64_t n, int threads, F f) {
#ifdef _OPENMP
#pragma omp parallel num_threads(threads)
  {
    int64_t b, e;
    chunk(n, omp_get_num_threads(), omp_get_thread_num(), b, e);
    f(b, e);
  }
#else
  (void)threads;
  f(int64_t(0), n);
#endif
}

void add_loop(const float* a, const float* b, float* c, int64_t n, int threads) {
  parallel_chunks(n, threads, [=](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) c[i] = a[i] + b[i];
  });
}

struct FreeDeleter {
  void operator()(float* p) const { std::free(p); }
};
using Buffer = std::unique_ptr<float, FreeDeleter>;

Buffer alloc_floats(int64_t n) {
  auto* p = static_cast<float*>(std::malloc(static_cast<std::size_t>(n) * sizeof(float)));
  if (!p) std::abort();
  return Buffer(p);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace bench;
  const Options o = parse_options(argc, argv, "bench_elementwise",
      "Elementwise ops on 16M floats (add, relu, exp, relu forward + backward, cumsum, multinomial),\n"
      "tensorgrad vs libtorch,\n"
      "in GB/s against a plain a+b->c loop and memcpy measured in the same run.");
  set_threads(o.threads);
  tg::manual_seed(0);
  const int64_t n = o.smoke ? 4096 : int64_t(16) << 20;   // 16M floats = 64 MiB per tensor
  print_header("elementwise on " + std::to_string(n) +
                   " floats, fresh output; GB/s of compulsory traffic, ms median [min..max]",
               o);

  const int threads = o.threads;
  Buffer ca = alloc_floats(n), cb = alloc_floats(n), cc = alloc_floats(n);
  for (int64_t i = 0; i < n; ++i) {
    ca.get()[i] = static_cast<float>(i % 1000) * 1e-3f;
    cb.get()[i] = 1.0f;
    cc.get()[i] = 0.0f;   // faulted in: the ceilings measure bandwidth, not page faults
  }
  const float* pa = ca.get();
  const float* pb = cb.get();
  float* pc = cc.get();
  const auto ceil = measure(
      {[=] { add_loop(pa, pb, pc, n, threads); },
       [=] {
         parallel_chunks(n, threads, [=](int64_t lo, int64_t hi) {
           std::memcpy(pc + lo, pa + lo, static_cast<std::size_t>(hi - lo) * sizeof(float));
         });
       },
       [=] {
         Buffer fresh = alloc_floats(n);
         add_loop(pa, pb, fresh.get(), n, threads);
       }},
      plan_for(o, 2, 10, 1.0));
  const double bytes3 = 3.0 * 4 * double(n), bytes2 = 2.0 * 4 * double(n);
  auto gbs = [](double bytes, const Stats& s) { return s.ok() ? bytes / s.median * 1e-9 : NAN; };
  const double ceiling = gbs(bytes3, ceil[0]);

  Table table({"op", "MB moved", "tensorgrad ms", "tg GB/s", "libtorch ms", "torch GB/s", "tg/torch time",
               "tg/ceiling", "target"});
  auto mb = [](double bytes) { return fmt("%.0f", bytes / 1e6); };
  auto gb = [](double v) { return std::isfinite(v) ? fmt("%.2f", v) : std::string("n/a"); };
  table.row({"ceiling: c = a + b loop", mb(bytes3), cell(ceil[0], 1e3, "%.2f"), gb(ceiling), "", "", "", "1.00x", ""});
  table.row({"ceiling: memcpy", mb(bytes2), cell(ceil[1], 1e3, "%.2f"), gb(gbs(bytes2, ceil[1])), "", "", "",
             ratio_str(gbs(bytes2, ceil[1]) / ceiling), ""});
  table.row({"c = a + b into fresh malloc", mb(bytes3), cell(ceil[2], 1e3, "%.2f"), gb(gbs(bytes3, ceil[2])), "", "",
             "", ratio_str(gbs(bytes3, ceil[2]) / ceiling), ""});

  tg::Tensor a = tg::randn({n}), b = tg::randn({n});
  tg::Tensor x = tg::randn({n}, tg::TensorOptions().requires_grad(true)), g = tg::ones({n});
  const tg::Tensor weights = (tg::abs(a) + 0.1).view({256, -1});
  struct Op {
    const char* name;
    double bytes;
    Work tg_work;
    torch_side::Elementwise torch_op;
    bool has_target;
  };
  const Op ops[] = {
      {"add (fresh output)", bytes3, [a, b] { tg::add(a, b); }, torch_side::Elementwise::Add, true},
      {"relu (fresh output)", bytes2, [a] { tg::relu(a); }, torch_side::Elementwise::Relu, true},
      {"exp (fresh output)", bytes2, [a] { tg::exp(a); }, torch_side::Elementwise::Exp, true},
      // forward reads x, writes y; backward reads dy and the mask source, writes dx
      {"relu forward + backward", 5.0 * 4 * double(n),
       [x, g]() mutable {
         tg::relu(x).backward(g);
         x.zero_grad();
       },
       torch_side::Elementwise::ReluForwardBackward, false},
      {"cumsum", bytes2, [a] { tg::cumsum(a, 0); }, torch_side::Elementwise::Cumsum, true},
      {"multinomial, 256 rows, 1 draw each", 4.0 * double(n), [weights] { tg::multinomial(weights, 1, true); },
       torch_side::Elementwise::Multinomial, true},
  };
  struct Row {
    std::string name;
    double frac;
  };
  std::vector<Row> targets;
  for (const Op& op : ops) {
    const auto s = measure({op.tg_work, torch_side::elementwise(op.torch_op, n)}, plan_for(o, 2, 10, 1.0));
    const double frac = gbs(op.bytes, s[0]) / ceiling;
    std::string target = "-";
    if (op.has_target) {
      target = ">= 0.7x ceiling: " + verdict(frac, frac >= 0.7);
      targets.push_back({op.name, frac});
    }
    table.row({op.name, mb(op.bytes), cell(s[0], 1e3, "%.2f"), gb(gbs(op.bytes, s[0])), cell(s[1], 1e3, "%.2f"),
               gb(gbs(op.bytes, s[1])), ratio_str(time_ratio(s[0], s[1])), ratio_str(frac), target});
  }
  table.print();
  if (!o.smoke)
    for (const Row& r : targets)
      print_target("elementwise 16M, " + r.name, o.threads, ratio_str(r.frac) + " of a+b->c bandwidth",
                   "target >= 0.7x copy-loop bandwidth", verdict(r.frac, r.frac >= 0.7));
  print_footer();
  return 0;
}
