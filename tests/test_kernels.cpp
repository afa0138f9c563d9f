// tests/test_kernels.cpp: the CPU backend's fast paths against slow references: the vectorizable float
// exp (kernels/elementwise.h, Note [Vectorizable exp]), the SIMD-cloned contiguous loops and the row-block
// softmax / cross-entropy kernels (backend/cpu/, Notes [CPU capabilities] and [Row blocks]), and
// the thread pool with the matrix products split over it (core/parallel.h, Note [One thread pool]).
#include "testing.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <mutex>
#include <utility>
#include <algorithm>
#include <cstring>
#include <thread>
#include <vector>

#include "tensorgrad/core/parallel.h"

namespace {

/// Distance in units in the last place between a float and the double it approximates.
double ulp_distance(float got, double want) {
  const float w = static_cast<float>(want);
  const float next = std::nextafter(w, std::numeric_limits<float>::infinity());
  const double ulp = std::isinf(next) ? double(w) - std::nextafter(w, 0.f) : double(next) - double(w);
  return std::fabs(double(got) - want) / ulp;
}

/// float32 tensor with values spread over [lo, hi).
tg::Tensor spread(const tg::Shape& shape, double lo, double hi, uint64_t seed) {
  tg::manual_seed(seed);
  return tg::rand(shape) * (hi - lo) + lo;
}

tg::Tensor as64(const tg::Tensor& x) { return tg::Tensor(x.data().to(tg::kFloat64), false); }

/// The worst error of an odd function's float version f against its double reference ref: the largest
/// ulp distance over every stride-th float from 0 up to end_bits and its negation, and where. Inputs
/// whose exact result is subnormal in float go to on_subnormal(v, got, want) instead.
struct Worst {
  double ulps = 0;
  float x = 0;
};
template <class F, class Ref, class OnSubnormal>
Worst sweep_odd(uint32_t end_bits, uint32_t stride, F f, Ref ref, OnSubnormal on_subnormal) {
  Worst w;
  for (uint32_t bits = 0; bits < end_bits; bits += stride) {
    float x;
    std::memcpy(&x, &bits, sizeof x);
    for (float v : {x, -x}) {
      const double want = ref(double(v));
      const float got = f(v);
      if (std::fabs(want) < double(std::numeric_limits<float>::min())) {
        on_subnormal(v, got, want);
        continue;
      }
      const double d = ulp_distance(got, want);
      if (d > w.ulps) {
        w.ulps = d;
        w.x = v;
      }
    }
  }
  return w;
}

}  // namespace

TEST_CASE("float exp is within 1 ulp of the exact value over its whole range") {
  double worst = 0;
  float worst_x = 0;
  for (float x = -103.f; x < 88.7f; x += 7.3e-4f) {
    const double want = std::exp(double(x));
    const float got = tg::fn::exp(x);
    if (want < double(std::numeric_limits<float>::min())) {   // subnormal result: half a subnormal step
      CHECK_MESSAGE(std::fabs(double(got) - want) <= double(std::numeric_limits<float>::denorm_min()),
                    "exp(" << x << ") = " << got << ", want " << want);
      continue;
    }
    const double d = ulp_distance(got, want);
    if (d > worst) {
      worst = d;
      worst_x = x;
    }
  }
  CHECK_MESSAGE(worst <= 1.0, "worst error " << worst << " ulp at x = " << worst_x);
}

TEST_CASE("float erf is within 3 ulp of the exact value for every binade (Note [Vectorizable erf])") {
  // Every 61st float from 0 up to 6 (past which erf is 1 in float), both signs: all binades, the
  // seam at 0.921875 and the clamp at 3.92 included.
  const Worst w = sweep_odd(
      0x40c00000u, 61, [](float v) { return tg::fn::erf(v); }, [](double v) { return std::erf(v); },
      [](float v, float got, double want) {   // subnormal: one subnormal step
        CHECK_MESSAGE(std::fabs(double(got) - want) <= double(std::numeric_limits<float>::denorm_min()),
                      "erf(" << v << ") = " << got << ", want " << want);
      });
  CHECK_MESSAGE(w.ulps <= 3.0, "worst error " << w.ulps << " ulp at x = " << w.x);
  CHECK(std::isnan(tg::fn::erf(std::numeric_limits<float>::quiet_NaN())));
  CHECK(tg::fn::erf(std::numeric_limits<float>::infinity()) == 1.f);
  CHECK(tg::fn::erf(-std::numeric_limits<float>::infinity()) == -1.f);
  CHECK(tg::fn::erf(30.f) == 1.f);
  CHECK(std::signbit(tg::fn::erf(-0.f)));
}

TEST_CASE("float tanh is within 1.5 ulp of the exact value for every binade (Note [Vectorizable tanh])") {
  // Every 37th float from 0 up to 10 (past which tanh is 1 in float), both signs: all binades and
  // the seam at 0.625.
  const Worst w = sweep_odd(
      0x41200000u, 37, [](float v) { return tg::fn::tanh(v); }, [](double v) { return std::tanh(v); },
      [](float v, float got, double) { CHECK(got == v); });   // subnormal: tanh(x) = x
  CHECK_MESSAGE(w.ulps <= 1.5, "worst error " << w.ulps << " ulp at x = " << w.x);
  CHECK(std::isnan(tg::fn::tanh(std::numeric_limits<float>::quiet_NaN())));
  CHECK(tg::fn::tanh(std::numeric_limits<float>::infinity()) == 1.f);
  CHECK(tg::fn::tanh(-std::numeric_limits<float>::infinity()) == -1.f);
  CHECK(tg::fn::tanh(30.f) == 1.f);
  CHECK(std::signbit(tg::fn::tanh(-0.f)));
}

TEST_CASE("float exp edge values: NaN inf overflow underflow") {
  CHECK(std::isnan(tg::fn::exp(std::numeric_limits<float>::quiet_NaN())));
  CHECK(tg::fn::exp(std::numeric_limits<float>::infinity()) == std::numeric_limits<float>::infinity());
  CHECK(tg::fn::exp(-std::numeric_limits<float>::infinity()) == 0.f);
  CHECK(tg::fn::exp(0.f) == 1.f);
  CHECK(tg::fn::exp(88.72f) == doctest::Approx(std::exp(double(88.72f))).epsilon(1e-6));   // just below FLT_MAX
  CHECK(tg::fn::exp(88.73f) == std::numeric_limits<float>::infinity());
  CHECK(tg::fn::exp(-200.f) == 0.f);
  CHECK(tg::fn::exp(-100.f) > 0.f);   // subnormal, not flushed
}

TEST_CASE("exp of float tensors matches the double reference in every loop shape") {
  const tg::Tensor x = spread({64, 33}, -20, 20, 7);
  const tg::Tensor ref = tg::exp(as64(x));
  // Within kExpUlps on every code path (Note [Vectorizable exp]); sigmoid adds an add and a division:
  // relative exp_relative_error() + u + u (Note [Derived tolerances], tests/testing.h).
  const double u = testing::unit_roundoff(tg::kFloat32);
  testing::check_ulps(tg::exp(x), ref, testing::kExpUlps);                                    // contiguous
  testing::check_ulps(tg::exp(x.transpose(0, 1)), ref.transpose(0, 1), testing::kExpUlps);    // strided
  // a tensor too large for one thread's chunk, with NaN and inf in it
  tg::Tensor big = spread({1 << 19}, -80, 80, 8);
  big.data().data<float>()[5] = std::numeric_limits<float>::quiet_NaN();
  big.data().data<float>()[6] = std::numeric_limits<float>::infinity();
  testing::check_ulps(tg::exp(big), tg::exp(as64(big)), testing::kExpUlps);
  // backward of exp (y dy) and sigmoid (uses exp too)
  tg::Tensor leaf(x.data().clone(), true);
  tg::exp(leaf).sum().backward();
  testing::check_ulps(leaf.grad(), ref, testing::kExpUlps);
  testing::check_close(tg::sigmoid(x), tg::sigmoid(as64(x)), testing::exp_relative_error() + 2 * u + 1e-12, 1e-30);
}

TEST_CASE("binary ops on contiguous rows and broadcast scalars match the double reference") {
  const tg::Tensor a = spread({37, 65}, -3, 3, 9), b = spread({37, 65}, 0.5, 3, 10), s = spread({37, 1}, 1, 2, 11);
  // one correctly rounded operation: within u |exact| (the float64 results are exact or nearly)
  const double u = testing::unit_roundoff(tg::kFloat32) * (1 + 1e-8);
  testing::check_close(a + b, as64(a) + as64(b), u, 0);
  testing::check_close(a / b, as64(a) / as64(b), u, 0);
  testing::check_close(a * s, as64(a) * as64(s), u, 0);   // row op broadcast value
  testing::check_close(s - a, as64(s) - as64(a), u, 0);   // broadcast value op row
}

TEST_CASE("softmax and log_softmax over row blocks match the double reference") {
  // 10 and 1000 classes (one block and many rows per block), 17 (a partial lane), 3000 rows (several
  // blocks), and dim 0 (the strided path).
  for (const tg::Shape& shape : {tg::Shape{3, 10}, tg::Shape{3000, 10}, tg::Shape{40, 1000}, tg::Shape{129, 17}}) {
    const tg::Tensor x = spread(shape, -30, 30, 12);
    testing::check_close(tg::softmax(x, -1), tg::softmax(as64(x), -1), 1e-5, 1e-9);
    testing::check_close(tg::log_softmax(x, -1), tg::log_softmax(as64(x), -1), 1e-5, 1e-5);
    testing::check_close(tg::softmax(x, 0), tg::softmax(as64(x), 0), 1e-5, 1e-9);
    // backward through both, against float64
    for (bool log : {false, true}) {
      tg::Tensor xf(x.data().clone(), true), xd(x.data().to(tg::kFloat64), true);
      const tg::Tensor w = spread(shape, -1, 1, 13);
      auto f = [&](const tg::Tensor& v) { return log ? tg::log_softmax(v, -1) : tg::softmax(v, -1); };
      (f(xf) * w).sum().backward();
      (f(xd) * as64(w)).sum().backward();
      testing::check_close(xf.grad(), xd.grad(), 1e-4, 1e-6);
    }
  }
}

TEST_CASE("softmax rows with NaN give NaN rows and leave the other rows alone") {
  tg::Tensor x = spread({4, 10}, -3, 3, 14);
  x.data().data<float>()[12] = std::numeric_limits<float>::quiet_NaN();   // row 1
  const auto y = tg::softmax(x, 1).to_vector<double>();
  for (int i = 0; i < 40; ++i) CHECK_MESSAGE(std::isnan(y[i]) == (i / 10 == 1), "element " << i);
}

TEST_CASE("kernel family rules (kernels/reduce.h, kernels/softmax_loss.h) give PyTorch's values on every path") {
  // Note [Kernel families]: one body per rule, run by the contiguous fast paths and the strided loops
  // alike. The expected values are PyTorch's (torch.softmax / argmax / cross_entropy on the same rows).
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  for (tg::DType dt : {tg::kFloat32, tg::kFloat64}) {
    CAPTURE(tg::dtype_name(dt));
    // rows: [inf, 1] -> NaN NaN;  [-inf, -inf] -> NaN NaN;  [-inf, 0] -> 0 1;  [0, log 3] -> 1/4 3/4
    const tg::Tensor x = tg::from_vector(std::vector<double>{inf, 1, -inf, -inf, -inf, 0, 0, std::log(3.0)}, {4, 2}).to(dt);
    const std::vector<double> want{nan, nan, nan, nan, 0, 1, 0.25, 0.75};
    const tg::Tensor xt = x.t().contiguous();   // the same rows as columns: the strided loop (dim 0)
    const auto rows = tg::softmax(x, 1).to_vector<double>(), cols = tg::softmax(xt, 0).t().contiguous().to_vector<double>();
    const auto lrows = tg::log_softmax(x, 1).to_vector<double>(), lcols = tg::log_softmax(xt, 0).t().contiguous().to_vector<double>();
    for (std::size_t i = 0; i < want.size(); ++i) {
      CAPTURE(i);
      for (double got : {rows[i], cols[i]}) {
        if (std::isnan(want[i])) CHECK(std::isnan(got));
        else CHECK(got == doctest::Approx(want[i]).epsilon(1e-6));
      }
      for (double got : {lrows[i], lcols[i]}) {   // log_softmax: log of the same, -inf for the 0
        if (std::isnan(want[i])) CHECK(std::isnan(got));
        else if (want[i] == 0) CHECK(got == -inf);
        else CHECK(got == doctest::Approx(std::log(want[i])).epsilon(1e-6));
      }
    }
    // max / argmax: the first NaN wins, ties keep the first position (torch.argmax([1, nan, 3, nan]) = 1,
    // torch.argmax([3, 1, 3, 0]) = 0, torch.argmax([-2, -1, -1, -5]) = 1), along a contiguous and a
    // strided dim.
    const tg::Tensor r = tg::from_vector(std::vector<double>{1, nan, 3, nan, 3, 1, 3, 0, 2, 1, 1, 5}, {3, 4}).to(dt);
    CHECK(tg::argmax(r, 1).to_vector<int64_t>() == std::vector<int64_t>{1, 0, 3});
    CHECK(tg::argmax(r.t().contiguous(), 0).to_vector<int64_t>() == std::vector<int64_t>{1, 0, 3});
    CHECK(tg::argmax(r * -1.0, 1).to_vector<int64_t>() == std::vector<int64_t>{1, 3, 1});   // argmin's ties
    CHECK(std::isnan(tg::max(r, 1).to_vector<double>()[0]));
    CHECK(tg::min(r, 1).to_vector<double>()[2] == 1);
    // cross_entropy([[1, 2, 3]], [0], label_smoothing=0.1) = 2.3076059644; its gradient softmax - (0.9
    // onehot + 0.1 / 3); a mean over rows that are all ignored is NaN, as in PyTorch.
    tg::Tensor logits(tg::from_vector(std::vector<double>{1, 2, 3}, {1, 3}).to(dt).data(), true);
    const tg::Tensor target = tg::from_vector(std::vector<int64_t>{0}, {1});
    const tg::Tensor loss = tg::cross_entropy(logits, target, tg::Reduction::Mean, -100, 0.1);
    CHECK(loss.item() == doctest::Approx(2.3076059644).epsilon(1e-6));
    loss.backward();
    const auto g = logits.grad().to_vector<double>();
    const std::vector<double> want_g{0.0900305732 - 0.9 - 0.1 / 3, 0.2447284711 - 0.1 / 3, 0.6652409558 - 0.1 / 3};
    for (int c = 0; c < 3; ++c) CHECK(g[c] == doctest::Approx(want_g[c]).epsilon(1e-6));
    CHECK(std::isnan(tg::cross_entropy(logits, tg::from_vector(std::vector<int64_t>{-100}, {1}), tg::Reduction::Mean).item()));
  }
}

TEST_CASE("cross_entropy over row blocks matches the double reference with smoothing and ignore_index") {
  for (const tg::Shape& shape : {tg::Shape{3000, 10}, tg::Shape{64, 1000}, tg::Shape{5, 3}}) {
    const int64_t N = shape[0], C = shape[1];
    const tg::Tensor x = spread(shape, -10, 10, 15);
    tg::RawTensor t = tg::RawTensor::empty({N}, tg::kInt64);
    for (int64_t n = 0; n < N; ++n) t.data<int64_t>()[n] = (n * 7) % C;
    t.data<int64_t>()[1] = -100;   // ignored
    for (double smoothing : {0.0, 0.1}) {
      tg::Tensor xf(x.data().clone(), true), xd(x.data().to(tg::kFloat64), true);
      const tg::Tensor lf = tg::cross_entropy(xf, tg::Tensor(t), tg::Reduction::Mean, -100, smoothing);
      const tg::Tensor ld = tg::cross_entropy(xd, tg::Tensor(t), tg::Reduction::Mean, -100, smoothing);
      CHECK(lf.item() == doctest::Approx(ld.item()).epsilon(1e-5));
      lf.backward();
      ld.backward();
      testing::check_close(xf.grad(), xd.grad(), 1e-4, 1e-8);
    }
  }
}

// ---- the CPU thread pool (core/parallel.h, Note [One thread pool]); "thread" in the names puts these
// in the ThreadSanitizer stage of .ci/run.

TEST_CASE("thread pool: every index of a loop runs exactly once and chunks are disjoint") {
  tg::set_num_threads(3);
  for (int64_t n : {int64_t(1), int64_t(2), int64_t(7), int64_t(1000), int64_t(100003)}) {
    for (int parts : {1, 2, 3, 8}) {
      std::vector<std::atomic<int>> hits(static_cast<std::size_t>(n));
      tg::parallel::run(n, parts, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) hits[static_cast<std::size_t>(i)].fetch_add(1);
      });
      int64_t wrong = 0;
      for (auto& h : hits) wrong += h.load() != 1;
      CHECK_MESSAGE(wrong == 0, "n " << n << " parts " << parts);
    }
  }
  tg::set_num_threads(2);
  CHECK(tg::get_num_threads() == 2);
}

TEST_CASE("thread pool: chunks of a loop over almost 2^63 indices cover it without overflow") {
  tg::set_num_threads(2);
  const int64_t n = std::numeric_limits<int64_t>::max();
  for (int parts : {2, 3, 7}) {
    std::mutex m;
    std::vector<std::pair<int64_t, int64_t>> ranges;
    tg::parallel::run(n, parts, [&](int64_t b, int64_t e) {
      std::lock_guard<std::mutex> lk(m);
      ranges.emplace_back(b, e);
    });
    std::sort(ranges.begin(), ranges.end());
    REQUIRE(ranges.size() == static_cast<std::size_t>(parts));
    CHECK(ranges.front().first == 0);
    CHECK(ranges.back().second == n);
    for (std::size_t i = 0; i < ranges.size(); ++i) {
      CHECK(ranges[i].first < ranges[i].second);
      if (i > 0) CHECK(ranges[i].first == ranges[i - 1].second);
    }
  }
}

TEST_CASE("thread pool: an exception in one chunk reaches the caller after the others finish") {
  tg::set_num_threads(2);
  std::atomic<int> done{0};
  auto loop = [&] {
    tg::parallel::run(1000, 4, [&](int64_t b, int64_t e) {
      if (b == 0) throw tg::DataError("chunk 0 failed");
      done.fetch_add(static_cast<int>(e - b));
    });
  };
  CHECK_THROWS_AS(loop(), tg::DataError);
  CHECK(done.load() == 750);
  // the pool still works afterwards
  std::atomic<int64_t> sum{0};
  tg::parallel::run(100, 2, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) sum.fetch_add(i);
  });
  CHECK(sum.load() == 4950);
}

TEST_CASE("thread pool: a loop inside a loop runs inline on its thread, in the same chunks") {
  tg::set_num_threads(2);
  std::atomic<int> inner_threads{0}, elsewhere{0}, chunks{0}, wrong_chunk{0};
  tg::parallel::run(4, 2, [&](int64_t, int64_t) {
    inner_threads.fetch_add(tg::parallel::max_threads());
    const std::thread::id outer = std::this_thread::get_id();
    tg::parallel::run(10, 2, [&](int64_t b, int64_t e) {
      elsewhere += std::this_thread::get_id() != outer;
      wrong_chunk += !((b == 0 && e == 5) || (b == 5 && e == 10));   // Note [Deterministic chunks]
      ++chunks;
    });
  });
  CHECK(inner_threads.load() == 4);   // two chunks, each saw max_threads() == the pool's size
  CHECK(elsewhere.load() == 0);
  CHECK(chunks.load() == 4);
  CHECK(wrong_chunk.load() == 0);
  std::atomic<int> refused{0};
  tg::parallel::run(2, 2, [&](int64_t, int64_t) {
    try {
      tg::set_num_threads(4);
    } catch (const tg::Error& e) {
      refused += std::string(e.what()).find("inside a parallel CPU loop") != std::string::npos;
    }
  });
  CHECK(refused.load() == 2);
  CHECK(tg::get_num_threads() == 2);
}

TEST_CASE("thread pool: large ops from several threads at once give the single-thread results") {
  tg::set_num_threads(2);
  const tg::Tensor x = spread({1 << 19}, -5, 5, 21);   // above the parallel threshold
  const tg::Tensor a = spread({256, 512}, -1, 1, 22), b = spread({512, 256}, -1, 1, 23);
  const tg::Tensor want_exp = tg::exp(x), want_mm = tg::matmul(a, b), want_sm = tg::softmax(a, 1);
  // exp and softmax compute each element (each row) the same way in any chunk: equal bit for bit. The
  // product is split over the pool on this thread but runs whole on a thread that finds the pool busy,
  // and OpenBLAS's blocking depends on the block's shape: Note [Derived tolerances].
  const auto mm_bound = (testing::gemm_error_bound(a, b) * 2.0).to_vector<double>();
  const auto want_mm_v = want_mm.to_vector<double>();
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int rep = 0; rep < 3; ++rep) {
        const auto e = tg::exp(x).to_vector<float>();
        const auto m = tg::matmul(a, b).to_vector<double>();
        const auto s = tg::softmax(a, 1).to_vector<float>();
        mismatches += e != want_exp.to_vector<float>();
        for (std::size_t i = 0; i < m.size(); ++i) mismatches += !(std::fabs(m[i] - want_mm_v[i]) <= mm_bound[i]);
        mismatches += s != want_sm.to_vector<float>();
      }
    });
  for (auto& t : threads) t.join();
  CHECK(mismatches.load() == 0);
}

TEST_CASE("thread pool: matrix products split over threads match one thread") {
  // Above the split threshold (2^24 multiply-adds), both the row split (M >= N) and the column split.
  const tg::Tensor a = spread({512, 256}, -1, 1, 24), b = spread({256, 300}, -1, 1, 25);
  const tg::Tensor c = spread({64, 2048}, -1, 1, 26), d = spread({2048, 300}, -1, 1, 27);
  // The blocks round differently from the whole product (OpenBLAS blocks by shape): each result is
  // within gemm_error_bound of the exact product, so the two within twice it (Note [Derived tolerances]).
  tg::set_num_threads(1);
  const tg::Tensor ab1 = tg::matmul(a, b), cd1 = tg::matmul(c, d);
  tg::set_num_threads(2);
  const tg::Tensor ab_bound = testing::gemm_error_bound(a, b), cd_bound = testing::gemm_error_bound(c, d);
  testing::check_within(tg::matmul(a, b), ab1, ab_bound * 2.0);
  testing::check_within(tg::matmul(c, d), cd1, cd_bound * 2.0);
  // against float64: the float64 product's own bound on top
  testing::check_within(tg::matmul(a, b), tg::matmul(as64(a), as64(b)),
                        ab_bound + testing::gemm_error_bound(as64(a), as64(b)));
  testing::check_within(tg::matmul(c, d), tg::matmul(as64(c), as64(d)),
                        cd_bound + testing::gemm_error_bound(as64(c), as64(d)));
}

TEST_CASE("sums: column sums (outer dim) and long rows in lanes match the double reference") {
  const tg::Tensor x = spread({300, 70}, -1, 1, 31);
  testing::check_close(x.sum(0), as64(x).sum(0), 1e-6, 1e-6);                 // row after row
  testing::check_close(x.sum(1), as64(x).sum(1), 1e-6, 1e-6);                 // lanes per row
  testing::check_close(x.transpose(0, 1).sum(1), as64(x).sum(0), 1e-6, 1e-6); // the same through a view
  const tg::Tensor big = spread({1 << 20}, -1, 1, 32);                       // chunked, combined in order
  CHECK(big.sum().item() == doctest::Approx(as64(big).sum().item()).epsilon(1e-6));
  // integers stay exact
  tg::RawTensor t = tg::RawTensor::empty({50, 33}, tg::kInt64);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<int64_t>()[i] = (i * 7919) % 1000003 + (int64_t(1) << 40);
  const auto cols = tg::Tensor(t).sum(0).to_vector<int64_t>();
  for (int64_t j = 0; j < 33; ++j) {
    int64_t want = 0;
    for (int64_t i = 0; i < 50; ++i) want += t.data<int64_t>()[i * 33 + j];
    CHECK(cols[j] == want);
  }
}

TEST_CASE("thread pool: a child forked after the pool started runs its loops inline and finishes") {
  tg::set_num_threads(2);
  const tg::Tensor x = spread({1 << 19}, -5, 5, 33);   // above the parallel threshold
  const auto want = tg::exp(x).to_vector<float>();      // the pool has run in the parent
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    // the parent's chunks (Note [Deterministic chunks]), run inline: the same values
    bool ok = tg::exp(x).to_vector<float>() == want && tg::parallel::max_threads() == 2;
    tg::set_num_threads(3);   // a no-op in the child: it must not wait for the parent's threads
    ok = ok && tg::get_num_threads() == 1;
    ::_exit(ok ? 0 : 1);
  }
  int status = 0;
  pid_t done = 0;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while ((done = ::waitpid(pid, &status, WNOHANG)) == 0 && std::chrono::steady_clock::now() < give_up)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  if (done == 0) ::kill(pid, SIGKILL), ::waitpid(pid, &status, 0);
  CHECK_MESSAGE(done == pid, "the forked child hung");
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(tg::parallel::max_threads() == 2);   // the parent's pool is untouched
}

// The child half of the next test: run under `ulimit -s <4 TB>`, where no thread stack can be
// mapped, set_num_threads must raise tg::Error (not std::system_error) and loops still run.
TEST_CASE("thread pool: (child process) report what set_num_threads does when threads cannot start") {
  std::string report;
  const int before = tg::get_num_threads();
  try {
    tg::set_num_threads(4);
    report = "started " + std::to_string(tg::get_num_threads());
    tg::set_num_threads(before);   // run in a whole-suite process: leave the pool as it was
  } catch (const tg::Error& e) {
    report = std::string("tg::Error: ") + e.what();
  }
  const auto x = tg::ones({1 << 20});   // a loop large enough to be split: runs on this thread
  if (x.sum().item() != double(1 << 20)) report += " | WRONG SUM";
  std::printf("threads-report[%s]\n", report.c_str());
  std::fflush(stdout);
}

TEST_CASE("thread pool: set_num_threads raises tg::Error for a bad count and when threads cannot start") {
  TG_CHECK_THROWS(tg::set_num_threads(0), tg::Error, "expected a positive number of threads, got 0");
  TG_CHECK_THROWS(tg::set_num_threads(-3), tg::Error, "got -3");
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  const bool sanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
  const bool sanitized = true;
#else
  const bool sanitized = false;
#endif
#else
  const bool sanitized = false;
#endif
  if (sanitized) {   // the sanitizers' own start-up mappings do not survive a 4 TB stack limit
    MESSAGE("sanitizer build: the thread-creation failure is checked in the plain builds");
    return;
  }
  // OpenBLAS starts its own threads when it loads and exits the process if it cannot: keep it at one
  const std::string out =
      testing::run_self("ulimit -s 4000000000 &&", "OPENBLAS_NUM_THREADS=1", "thread pool: (child process)*");
  const auto at = out.find("threads-report[");
  REQUIRE_MESSAGE(at != std::string::npos, out);
  const std::string report = out.substr(at + 15, out.find("]\n", at) - at - 15);
  if (report.rfind("started", 0) == 0) {   // this machine maps even 4 TB thread stacks: nothing to check
    MESSAGE("threads could still be created under ulimit -s 4000000000: " << report);
    return;
  }
  CHECK_MESSAGE(report.find("tg::Error: set_num_threads: cannot start 3 worker threads") == 0, report);
  CHECK_MESSAGE(report.find("WRONG SUM") == std::string::npos, report);
}

TEST_CASE("thread pool: a model trained on a thread gets the same result whether other threads train at once") {
  // Note [Deterministic chunks]: whether a matrix product is split depends on its shape and
  // set_num_threads only, not on whether the pool was busy with another thread's loop.
  const int before = tg::get_num_threads();
  tg::set_num_threads(2);
  auto train = [](uint64_t seed) {
    tg::manual_seed(seed);
    tg::nn::Linear fc1(784, 128), fc2(128, 10);   // batch 256: 25.7 M multiply-adds, split over threads
    tg::optim::SGD opt({fc1.weight, fc1.bias, fc2.weight, fc2.bias}, tg::optim::SGDOptions(0.05).momentum(0.9));
    const tg::Tensor x = tg::randn({256, 784});
    const tg::Tensor y = tg::randint(0, 10, {256});
    for (int step = 0; step < 6; ++step) {
      opt.zero_grad();
      tg::cross_entropy(fc2(tg::relu(fc1(x))), y).backward();
      opt.step();
    }
    return fc1.weight.to_vector<float>();
  };
  // The same model and data trained alone, then by four threads at once.
  const std::vector<float> alone = train(5);
  std::vector<std::vector<float>> together(4);
  {
    std::vector<std::thread> threads;
    std::mutex seed_lock;
    for (int t = 0; t < 4; ++t)
      threads.emplace_back([&, t] {
        std::unique_lock<std::mutex> lock(seed_lock);   // the random draws share one process-wide stream
        tg::manual_seed(5);
        tg::nn::Linear fc1(784, 128), fc2(128, 10);
        tg::optim::SGD opt({fc1.weight, fc1.bias, fc2.weight, fc2.bias}, tg::optim::SGDOptions(0.05).momentum(0.9));
        const tg::Tensor x = tg::randn({256, 784});
        const tg::Tensor y = tg::randint(0, 10, {256});
        lock.unlock();
        for (int step = 0; step < 6; ++step) {
          opt.zero_grad();
          tg::cross_entropy(fc2(tg::relu(fc1(x))), y).backward();
          opt.step();
        }
        together[t] = fc1.weight.to_vector<float>();
      });
    for (auto& th : threads) th.join();
  }
  tg::set_num_threads(before);
  for (int t = 0; t < 4; ++t) CHECK_MESSAGE(together[t] == alone, "thread " << t << " differs from the run alone");
}

TEST_CASE("thread pool: a loop that finds the pool busy runs the same chunks on its own thread") {
  tg::set_num_threads(2);
  std::atomic<bool> holding{false}, release{false};
  std::thread holder([&] {   // holds the pool with a loop whose chunks wait
    tg::parallel::run(2, 2, [&](int64_t, int64_t) {
      holding = true;
      while (!release.load()) std::this_thread::yield();
    });
  });
  while (!holding.load()) std::this_thread::yield();
  std::mutex m;
  std::vector<std::pair<int64_t, int64_t>> seen;
  tg::parallel::run(11, 2, [&](int64_t b, int64_t e) {
    std::lock_guard<std::mutex> lock(m);
    seen.emplace_back(b, e);
  });
  release = true;
  holder.join();
  CHECK(seen == std::vector<std::pair<int64_t, int64_t>>{{0, 6}, {6, 11}});   // not one chunk [0, 11)
}
