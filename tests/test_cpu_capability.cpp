// tests/test_cpu_capability.cpp: the CPU code paths (core/cpu_capability.h, Note [CPU capabilities]):
// every kernel set this CPU can run against the baseline one, within bounds derived from the
// computation (Note [Derived tolerances] in tests/testing.h); choosing a path by name, by value and
// through TG_CPU_CAPABILITY (in a child process), and what tg::info() reports. The kernels' own
// accuracy against float64 is tested in tests/test_kernels.cpp.
#include "testing.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace {

using tg::RawTensor;
using tg::Tensor;

const double u = testing::unit_roundoff(tg::kFloat32);
const double ex = testing::exp_relative_error();   // fn::exp's relative error on any path

/// float32 tensor with values spread over [lo, hi).
Tensor spread(const tg::Shape& shape, double lo, double hi, uint64_t seed) {
  tg::manual_seed(seed);
  return tg::rand(shape) * (hi - lo) + lo;
}

Tensor as64(const Tensor& x) { return Tensor(x.data().to(tg::kFloat64), false); }
std::vector<double> values(const RawTensor& t) { return Tensor(t).to_vector<double>(); }
Tensor from(const std::vector<double>& v, const tg::Shape& shape) { return tg::from_vector(v, shape); }

using testing::CpuCapabilityGuard;

/// f() on the baseline path, then on every other path this CPU supports, each result handed to
/// check(baseline_result, path_result) with the path's name captured.
void against_baseline(const std::function<std::vector<Tensor>()>& f,
                      const std::function<void(const std::vector<Tensor>&, const std::vector<Tensor>&)>& check) {
  CpuCapabilityGuard guard;
  tg::set_cpu_capability(tg::CpuCapability::Baseline);
  const std::vector<Tensor> base = f();
  for (tg::CpuCapability c : tg::supported_cpu_capabilities()) {
    if (c == tg::CpuCapability::Baseline) continue;
    const std::string name = tg::cpu_capability_name(c);
    CAPTURE(name);
    tg::set_cpu_capability(c);
    check(base, f());
  }
}

void check_equal(const Tensor& a, const Tensor& b) { testing::check_close(a, b, 0, 0); }

}  // namespace

TEST_CASE("cpu capability: every path runs the single-rounding ops bit for bit like the baseline") {
  // One IEEE operation per element (add, divide, sqrt, compare, select...) is correctly rounded on
  // every path, and a lone multiply or add cannot be contracted into an FMA: equal bit for bit. Sizes
  // leave partial vectors; {67, 1} operands take the broadcast-value loops.
  const Tensor a = spread({67, 61}, -3, 3, 41), b = spread({67, 61}, 0.5, 3, 42), s = spread({67, 1}, 1, 2, 43);
  const Tensor w = spread({67, 61}, -1, 1, 44);
  tg::RawTensor ia = tg::RawTensor::empty({4099}, tg::kInt64), ib = tg::RawTensor::empty({4099}, tg::kInt64);
  for (int64_t i = 0; i < 4099; ++i) {
    ia.data<int64_t>()[i] = (i * 7919) % 100003 - 50000;
    ib.data<int64_t>()[i] = (i * 104729) % 1009 + 1;
  }
  against_baseline(
      [&] {
        Tensor leaf(a.data().clone(), true);
        (tg::relu(leaf) * w).sum().backward();   // relu backward: w where a > 0
        return std::vector<Tensor>{a + b, a - b, a * b, a / b, a * s, s - a, a > b, tg::relu(a), -a, tg::abs(a),
                                     tg::sqrt(b), tg::clamp(a, -1, 1), as64(a) * as64(b) + as64(s),
                                     Tensor(ia) + Tensor(ib), Tensor(ia) * Tensor(ib), leaf.grad()};
      },
      [](const std::vector<Tensor>& base, const std::vector<Tensor>& got) {
        for (std::size_t i = 0; i < base.size(); ++i) {
          CAPTURE(i);
          check_equal(got[i], base[i]);
        }
      });
}

TEST_CASE("cpu capability: cumsum, cumprod and multinomial's block sums give the baseline's bits on every path") {
  // The scans' 64-byte blocks and multinomial's 8-lane block sums run the same trees of single adds
  // (or multiplies) on every path: Note [Vectorized scan], Note [Drawing categories in one pass].
  const Tensor a = spread({3, 40001}, -1, 1, 51), near_one = spread({40001}, 0.999, 1.001, 52);
  const Tensor weights = spread({5, 3001}, 0, 1, 53);
  against_baseline(
      [&] {
        Tensor leaf(a.data().clone(), true);
        (tg::cumsum(leaf, 1) * near_one).sum().backward();   // the reverse scan of the weights
        tg::manual_seed(54);
        const Tensor draws = tg::multinomial(weights, 7, true);
        tg::manual_seed(54);
        const Tensor draws64 = tg::multinomial(as64(weights), 7, true);
        return std::vector<Tensor>{tg::cumsum(a, 1), tg::cumsum(as64(a), 1), tg::cumprod(near_one, 0),
                                   tg::cumprod(as64(near_one), 0), leaf.grad(), draws, draws64};
      },
      [](const std::vector<Tensor>& base, const std::vector<Tensor>& got) {
        for (std::size_t i = 0; i < base.size(); ++i) {
          CAPTURE(i);
          check_equal(got[i], base[i]);
        }
      });
}

TEST_CASE("cpu capability: exp sigmoid and tanh backward on every path stay within their derived bounds") {
  // Above the parallel threshold, with tails: exp over its whole finite range, within kExpUlps of the
  // exact value on every path (Note [Vectorizable exp]); float64 exp is libm's, the same everywhere.
  const Tensor x = spread({(1 << 19) + 3}, -87, 88, 45);
  const Tensor z = spread({4099}, -20, 20, 46), dy = spread({4099}, -1, 1, 47);
  const Tensor y = tg::tanh(z);   // computed once: the same input to every path's backward
  const Tensor x64 = as64(x), exact_exp = tg::exp(x64), exact_sigmoid = tg::sigmoid(as64(z));
  // sigmoid = 1 / (1 + e^-z): e^-z within relative ex, the add and the division one rounding each:
  // relative ex + 2u from the exact value per path (O(u^2) terms: the 1e-12).
  const auto sig_bound = (tg::abs(exact_sigmoid) * (ex + 2 * u + 1e-12)).to_vector<double>();
  // tanh backward dy (1 - y^2) from the same float y: y^2, the subtraction and the product round
  // (one rounding fewer with an FMA): |error| <= u |dy| (y^2 + |1 - y^2|) + u |result| per path.
  std::vector<double> tanh_bound;
  {
    const auto yv = y.to_vector<double>(), gv = dy.to_vector<double>();
    for (std::size_t i = 0; i < yv.size(); ++i) {
      const double r = gv[i] * (1 - yv[i] * yv[i]);
      tanh_bound.push_back(2 * (u * std::fabs(gv[i]) * (yv[i] * yv[i] + std::fabs(1 - yv[i] * yv[i])) + u * std::fabs(r)) *
                           (1 + 4 * u));
    }
  }
  CpuCapabilityGuard guard;
  RawTensor tanh_base;
  tg::set_cpu_capability(tg::CpuCapability::Baseline);
  for (tg::CpuCapability c : tg::supported_cpu_capabilities()) {
    const std::string name = tg::cpu_capability_name(c);
    CAPTURE(name);
    tg::set_cpu_capability(c);
    testing::check_ulps(tg::exp(x), exact_exp, testing::kExpUlps);
    testing::check_within(tg::sigmoid(z), exact_sigmoid, from(sig_bound, z.shape()));
    RawTensor dx = RawTensor::empty(z.shape());
    tg::cpu_backend().unary_backward(tg::UnaryOp::Tanh, {}, RawTensor(), y.data(), dy.data(), dx);
    if (c == tg::CpuCapability::Baseline) tanh_base = dx;
    else testing::check_within(Tensor(dx), Tensor(tanh_base), from(tanh_bound, z.shape()));
    check_equal(tg::exp(x64), exact_exp);
  }
}

TEST_CASE("cpu capability: sums softmax and cross-entropy on every path match the baseline within derived bounds") {
  // Sums and row maxima: fixed lanes and order, exact float-to-double conversions and correctly
  // rounded double adds: equal bit for bit on every path (float64 and int64 too).
  const Tensor big = spread({(1 << 20) + 5}, -1, 1, 51), m = spread({300, 70}, -1, 1, 52);
  against_baseline(
      [&] {
        return std::vector<Tensor>{big.sum(), m.sum(0), m.sum(1), m.transpose(0, 1).sum(1), as64(m).sum(0),
                                     as64(big).sum(), m.max(1)};
      },
      [](const std::vector<Tensor>& base, const std::vector<Tensor>& got) {
        for (std::size_t i = 0; i < base.size(); ++i) {
          CAPTURE(i);
          check_equal(got[i], base[i]);
        }
      });
  for (const tg::Shape& shape : {tg::Shape{3000, 10}, tg::Shape{40, 1000}, tg::Shape{129, 17}}) {
    CAPTURE(shape[1]);
    const Tensor x = spread(shape, -30, 30, 53), g = spread(shape, -1, 1, 54);
    // Every path shifts by the same row maximum (equal bits); only e^(x - max) differs, within
    // relative ex of exact per path. softmax = e * float(1 / sum e), sum in double: relative ex (exp)
    // + ex (the sum inherits it) + u + u (the two roundings of 1/s) + u (the product) per path from
    // exact, twice that between paths. log_softmax = x - (float(log s) + max): log s off by ex
    // absolute, then roundings of log s, of lse and of the difference: 2 (ex + u|log s| + u|lse| + u|y|).
    const Tensor y64 = tg::log_softmax(as64(x), 1);
    const Tensor lse64 = as64(x) - y64, logs64 = lse64 - as64(x).max(1, true);
    const Tensor sm_bound = tg::exp(y64) * (2 * (2 * ex + 3 * u) + 1e-12);
    const Tensor lsm_bound = (tg::abs(logs64) + tg::abs(lse64) + tg::abs(y64)) * (2 * u) + (2 * ex + 1e-12);
    against_baseline(
        [&] { return std::vector<Tensor>{tg::softmax(x, 1), tg::log_softmax(x, 1)}; },
        [&](const std::vector<Tensor>& base, const std::vector<Tensor>& got) {
          testing::check_within(got[0], base[0], sm_bound);
          testing::check_within(got[1], base[1], lsm_bound);
        });
    // Backward kernels on the same y and dy. softmax: y (dy - sum(dy y)) with the dot product in double
    // from exact float products: no exp, equal bit for bit. log_softmax: dy - e^y sum(dy): e^y within
    // relative ex, then a product and a difference rounded: 2 ((ex + u) |e^y s| + u |dx|) between paths.
    const RawTensor ys = tg::softmax(x, 1).data(), yl = tg::log_softmax(x, 1).data();
    std::vector<double> lbw_bound;
    {
      const auto yv = values(yl), gv = values(g.data());
      const int64_t C = shape[1];
      for (int64_t n = 0; n < shape[0]; ++n) {
        double s = 0;
        for (int64_t c = 0; c < C; ++c) s += gv[n * C + c];
        for (int64_t c = 0; c < C; ++c) {
          const double es = std::exp(yv[n * C + c]) * std::fabs(s);
          lbw_bound.push_back(2 * ((ex + u) * es + u * (std::fabs(gv[n * C + c]) + es)) * (1 + 4 * u) + 1e-30);
        }
      }
    }
    against_baseline(
        [&] {
          RawTensor ds = RawTensor::empty(shape), dl = RawTensor::empty(shape);
          tg::cpu_backend().softmax_backward(ys, g.data(), 1, false, ds);
          tg::cpu_backend().softmax_backward(yl, g.data(), 1, true, dl);
          return std::vector<Tensor>{Tensor(ds), Tensor(dl)};
        },
        [&](const std::vector<Tensor>& base, const std::vector<Tensor>& got) {
          check_equal(got[0], base[0]);
          testing::check_within(got[1], base[1], from(lbw_bound, shape));
        });
  }
}

TEST_CASE("cpu capability: cross-entropy on every path matches the baseline within derived bounds") {
  for (const tg::Shape& shape : {tg::Shape{3000, 10}, tg::Shape{64, 1000}, tg::Shape{5, 3}}) {
    const int64_t N = shape[0], C = shape[1];
    CAPTURE(C);
    const Tensor x = spread(shape, -10, 10, 55);
    RawTensor t = RawTensor::empty({N}, tg::kInt64);
    for (int64_t n = 0; n < N; ++n) t.data<int64_t>()[n] = (n * 7) % C;
    t.data<int64_t>()[1] = -100;   // ignored
    const Tensor dloss = spread({N}, 0.5, 2, 56);
    const auto xv = x.to_vector<double>(), gv = dloss.to_vector<double>();
    std::vector<double> lse_exact(N);   // float64 log-sum-exp of the float logits
    for (int64_t n = 0; n < N; ++n) {
      double mx = xv[n * C];
      for (int64_t c = 1; c < C; ++c) mx = std::max(mx, xv[n * C + c]);
      double sum = 0;
      for (int64_t c = 0; c < C; ++c) sum += std::exp(xv[n * C + c] - mx);
      lse_exact[n] = mx + std::log(sum);
    }
    for (double smoothing : {0.0, 0.1}) {
      CAPTURE(smoothing);
      const tg::CrossEntropyArgs args{-100, smoothing};
      // Forward, per row: lse = log(sum e) + max in double from float e within relative ex: off by ex
      // per path; the loss, lse - x[t] (with smoothing a mix whose weights sum to 1 with lse - mean x),
      // inherits that ex; both are rounded to float once: 2 (ex + u |value|) between paths.
      std::vector<double> lse_bound, loss_bound;
      RawTensor base_lse;
      for (int64_t n = 0; n < N; ++n) {
        double mean = 0;
        for (int64_t c = 0; c < C; ++c) mean += xv[n * C + c] / double(C);
        const int64_t tn = t.data<int64_t>()[n];
        const double loss = tn < 0 ? 0 : (1 - smoothing) * (lse_exact[n] - xv[n * C + tn]) + smoothing * (lse_exact[n] - mean);
        lse_bound.push_back(2 * (ex + u * std::fabs(lse_exact[n])) + 1e-12);
        loss_bound.push_back(tn < 0 ? 0 : 2 * (ex + u * std::fabs(loss)) + 1e-12);
      }
      against_baseline(
          [&] {
            RawTensor loss = RawTensor::empty({N}), lse = RawTensor::empty({N});
            tg::cpu_backend().cross_entropy(x.data(), t, args, loss, lse, RawTensor(), RawTensor());
            return std::vector<Tensor>{Tensor(loss), Tensor(lse)};
          },
          [&](const std::vector<Tensor>& base, const std::vector<Tensor>& got) {
            testing::check_within(got[0], base[0], from(loss_bound, {N}));
            testing::check_within(got[1], base[1], from(lse_bound, {N}));
          });
      {
        CpuCapabilityGuard guard;
        tg::set_cpu_capability(tg::CpuCapability::Baseline);
        RawTensor loss = RawTensor::empty({N});
        base_lse = RawTensor::empty({N});
        tg::cpu_backend().cross_entropy(x.data(), t, args, loss, base_lse, RawTensor(), RawTensor());
      }
      // Backward on the same lse: p = e^(x - lse) within relative ex per path, then (p - s/C) g and, at
      // the target, - (1 - s) g, each rounded: 2 (|g| (ex p + u |p - s/C|) + u |d| + u (|d| + |(1 - s) g|)).
      const auto lv = values(base_lse);
      std::vector<double> bw_bound;
      for (int64_t n = 0; n < N; ++n)
        for (int64_t c = 0; c < C; ++c) {
          const double pr = std::exp(xv[n * C + c] - lv[n]), uni = smoothing / double(C), g = std::fabs(gv[n]);
          const double d = std::fabs((pr - uni) * gv[n]);
          bw_bound.push_back(2 * (g * (ex * pr + u * std::fabs(pr - uni)) + u * d + u * (d + (1 - smoothing) * g)) *
                                 (1 + 4 * u) +
                             1e-30);
        }
      against_baseline(
          [&] {
            RawTensor dx = RawTensor::empty(shape);
            tg::cpu_backend().cross_entropy_backward(x.data(), t, args, base_lse, dloss.data(), RawTensor(), dx);
            return std::vector<Tensor>{Tensor(dx)};
          },
          [&](const std::vector<Tensor>& base, const std::vector<Tensor>& got) {
            testing::check_within(got[0], base[0], from(bw_bound, shape));
          });
    }
  }
}

TEST_CASE("cpu capability: the optimizer loops on every path match the baseline within derived bounds") {
  // One fused step from the same state. Every multiply and add may round on its own or fuse into an
  // FMA, so each path's error is bounded by u times the magnitudes of the rounded quantities
  // (first order, the (1 + 8u) covers the rest), and two paths differ by at most twice that.
  const int64_t n = 4099;
  const Tensor w = spread({n}, -1, 1, 61), g = spread({n}, -1, 1, 62), v0 = spread({n}, -0.5, 0.5, 63);
  const Tensor m0 = spread({n}, -0.1, 0.1, 64), s0 = spread({n}, 0.01, 0.1, 65), vmax0 = spread({n}, 0.01, 0.11, 66);
  const auto W = w.to_vector<double>(), G = g.to_vector<double>(), V = v0.to_vector<double>();
  const auto M = m0.to_vector<double>(), S = s0.to_vector<double>(), VM = vmax0.to_vector<double>();
  // SGD, momentum 0.9, dampening 0.1, weight decay 0.01, Nesterov, not the first step:
  // d = g + wd w; v' = mom v + (1 - damp) d; step = d + mom v'; w' = w - lr step.
  const double lr = 0.1, mom = 0.9, damp = 0.1, wd = 0.01;
  std::vector<double> sgd_w_bound, sgd_v_bound;
  for (int64_t i = 0; i < n; ++i) {
    const double d = G[i] + wd * W[i], e_d = u * (std::fabs(wd * W[i]) + std::fabs(d));
    const double v = mom * V[i] + (1 - damp) * d;
    const double e_v = u * (std::fabs(mom * V[i]) + std::fabs((1 - damp) * d) + std::fabs(v)) + (1 - damp) * e_d;
    const double st = d + mom * v, e_st = e_d + mom * e_v + u * (std::fabs(mom * v) + std::fabs(st));
    const double w2 = W[i] - lr * st, e_w = lr * e_st + u * (std::fabs(lr * st) + std::fabs(w2));
    sgd_w_bound.push_back(2 * e_w * (1 + 8 * u));
    sgd_v_bound.push_back(2 * e_v * (1 + 8 * u));
  }
  against_baseline(
      [&] {
        RawTensor pw = w.data().clone(), pv = v0.data().clone();
        tg::cpu_backend().sgd_step({tg::SgdParam{pw, g.data(), pv, lr, /*first_step=*/false, RawTensor()}},
                                   tg::SgdHyper{mom, damp, wd, /*nesterov=*/true});
        return std::vector<Tensor>{Tensor(pw), Tensor(pv)};
      },
      [&](const std::vector<Tensor>& base, const std::vector<Tensor>& got) {
        testing::check_within(got[0], base[0], from(sgd_w_bound, {n}));
        testing::check_within(got[1], base[1], from(sgd_v_bound, {n}));
      });
  // Adam (L2 weight decay, amsgrad) at step 3: gi = g + wd w; m' = b1 m + (1 - b1) gi;
  // v' = b2 v + (1 - b2) gi^2; vv = max(vmax, v'); den = sqrt(vv) / sqrt(bc2) + eps;
  // w' = w - (lr / bc1) m' / den. Relative errors add along the chain: sqrt halves vv's, the
  // product, the quotient and the subtraction round once each.
  const double b1 = 0.9, b2 = 0.999, eps = 1e-8, awd = 0.01;
  const int64_t step = 3;
  const double bc1 = 1 - std::pow(b1, double(step)), bc2 = 1 - std::pow(b2, double(step));
  std::vector<double> adam_w_bound, adam_m_bound, adam_v_bound;
  for (int64_t i = 0; i < n; ++i) {
    const double gi = G[i] + awd * W[i], e_g = u * (std::fabs(awd * W[i]) + std::fabs(gi));
    const double m = b1 * M[i] + (1 - b1) * gi;
    const double e_m = u * (std::fabs(b1 * M[i]) + std::fabs((1 - b1) * gi) + std::fabs(m)) + (1 - b1) * e_g;
    const double v = b2 * S[i] + (1 - b2) * gi * gi;
    const double e_v = u * (std::fabs(b2 * S[i]) + 2 * (1 - b2) * gi * gi + std::fabs(v)) + (1 - b2) * 2 * std::fabs(gi) * e_g;
    const double vv = std::max(VM[i], v), e_vv = VM[i] >= v ? 0 : e_v;
    const double root = std::sqrt(vv) / std::sqrt(bc2), den = root + eps;
    const double e_den = root * (e_vv / (2 * vv) + 2 * u) + u * den;
    const double st = (lr / bc1) * m / den;
    const double rel = e_m / std::fabs(m) + e_den / den + 2 * u;
    const double w2 = W[i] - st;
    adam_w_bound.push_back(2 * (std::fabs(st) * rel + u * std::fabs(w2)) * (1 + 8 * u));
    adam_m_bound.push_back(2 * e_m * (1 + 8 * u));
    adam_v_bound.push_back(2 * e_v * (1 + 8 * u));
  }
  against_baseline(
      [&] {
        RawTensor pw = w.data().clone(), pm = m0.data().clone(), ps = s0.data().clone(), pmax = vmax0.data().clone();
        tg::cpu_backend().adam_step({tg::AdamParam{pw, g.data(), pm, ps, pmax, lr, step, tg::RawTensor()}},
                                    tg::AdamHyper{b1, b2, eps, awd, /*decoupled=*/false});
        return std::vector<Tensor>{Tensor(pw), Tensor(pm), Tensor(ps)};
      },
      [&](const std::vector<Tensor>& base, const std::vector<Tensor>& got) {
        testing::check_within(got[0], base[0], from(adam_w_bound, {n}));
        testing::check_within(got[1], base[1], from(adam_m_bound, {n}));
        testing::check_within(got[2], base[2], from(adam_v_bound, {n}));
      });
}

TEST_CASE("cpu capability: layer_norm's fused rows on every path match the baseline within derived bounds") {
  // Note [Fused normalization rows]: the sums run in the same double lanes on every path, so the
  // paths differ where a float32 multiply and add fuse into an FMA, and where that moves mean, rstd or
  // the two backward means by one float32 rounding. With xhat = (x - m) s, g = dy w and the means m1,
  // m2, one path's error is at most u times (the rounded quantities, each flip of m, s, m1, m2 counted):
  // y:  (|x| + 2|m|) s |w| + 3 |xhat w| + |b|;
  // dx: s (3|g| + 3|m1| + 4|xhat m2| + (|x| + 2|m|) s |m2|) + 2|dx|;
  // dw: the sum over rows of |dy| ((|x| + 2|m|) s + 2|xhat|); db sums the same doubles: equal bits.
  // Two paths differ by at most twice that; (1 + 8u) covers the second-order terms.
  const int64_t M = 37, D = 203;   // D not a multiple of the sixteen lanes
  const Tensor x = spread({M, D}, -2, 3, 71), w = spread({D}, -1.5, 1.5, 72), b = spread({D}, -1, 1, 73);
  const Tensor gy = spread({M, D}, -1, 1, 74);
  // the bounds from a float64 run of the same rows
  const Tensor x64 = as64(x), w64 = as64(w), gy64 = as64(gy);
  const auto X = x64.to_vector<double>(), W = w64.to_vector<double>(), B = as64(b).to_vector<double>();
  const auto G = gy64.to_vector<double>();
  std::vector<double> y_bound(M * D), dx_bound(M * D), dw_bound(D, 0.0);
  for (int64_t r = 0; r < M; ++r) {
    double m = 0, v = 0, m1 = 0, m2 = 0;
    for (int64_t i = 0; i < D; ++i) m += X[r * D + i] / D;
    for (int64_t i = 0; i < D; ++i) v += (X[r * D + i] - m) * (X[r * D + i] - m) / D;
    const double sd = 1 / std::sqrt(v + 1e-5);
    for (int64_t i = 0; i < D; ++i) {
      m1 += G[r * D + i] * W[i] / D;
      m2 += G[r * D + i] * W[i] * (X[r * D + i] - m) * sd / D;
    }
    for (int64_t i = 0; i < D; ++i) {
      const int64_t k = r * D + i;
      const double xh = (X[k] - m) * sd, g = G[k] * W[i], dx = sd * (g - m1 - xh * m2);
      const double shift = (std::fabs(X[k]) + 2 * std::fabs(m)) * sd;
      y_bound[k] = 2 * u * (shift * std::fabs(W[i]) + 3 * std::fabs(xh * W[i]) + std::fabs(B[i])) * (1 + 8 * u);
      dx_bound[k] = 2 * u *
                    (sd * (3 * std::fabs(g) + 3 * std::fabs(m1) + 4 * std::fabs(xh * m2) + shift * std::fabs(m2)) +
                     2 * std::fabs(dx)) *
                    (1 + 8 * u);
      dw_bound[i] += 2 * u * std::fabs(G[k]) * (shift + 2 * std::fabs(xh)) * (1 + 8 * u);
    }
  }
  against_baseline(
      [&] {
        const Tensor xv(x.data(), true), wv(w.data(), true), bv(b.data(), true);
        const Tensor y = tg::layer_norm(xv, {D}, wv, bv);
        tg::sum(y * gy).backward();
        return std::vector<Tensor>{y, xv.grad(), wv.grad(), bv.grad()};
      },
      [&](const std::vector<Tensor>& base, const std::vector<Tensor>& got) {
        testing::check_within(got[0], base[0], from(y_bound, {M, D}));
        testing::check_within(got[1], base[1], from(dx_bound, {M, D}));
        testing::check_within(got[2], base[2], from(dw_bound, {D}));
        check_equal(got[3], base[3]);
      });
}

TEST_CASE("cpu capability: float <-> float16 / bfloat16 conversions on every path give core/half.h's bits") {
  // The contiguous conversions of copy (kernels.inc convert_contiguous: F16C on the AVX2 and AVX-512
  // paths, AVX2 lanes for bfloat16) and prim::round_to_precision (the same in one pass) against the scalar round-to-nearest-even of
  // core/half.h: ties both ways, the largest finite values and the first that overflow, half's
  // subnormals and values below them, infinities, signed zeros; 203 values, so each path runs its
  // vector body and its tail. NaN converts to a NaN (payload bits may differ by path).
  std::vector<float> v{0.0f, -0.0f, 1.0f, -1.0f, 65504.0f, 65520.0f, -65520.0f, 65519.99f, 3.0e38f, -3.4e38f,
                       std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                       5.9604645e-8f, 2.9802322e-8f, 2.9802326e-8f, 8.940697e-8f, 6.1035156e-5f, 6.1e-5f,
                       1.0009766f, 1.0004883f, 1.0014648f, 1.00390625f, 1.0078125f, 1.01171875f, 1e-40f, -1e-42f};
  for (int i = 0; v.size() < 203; ++i) v.push_back(std::ldexp(std::sin(1.7 * i) + 1.25, i % 40 - 24) * (i % 3 ? 1 : -1));
  const int64_t n = static_cast<int64_t>(v.size());
  RawTensor f = RawTensor::empty({n}, tg::kFloat32);
  std::copy(v.begin(), v.end(), f.data<float>());
  v.push_back(std::numeric_limits<float>::quiet_NaN());
  RawTensor fn = RawTensor::empty({n + 1}, tg::kFloat32);
  std::copy(v.begin(), v.end(), fn.data<float>());
  CpuCapabilityGuard guard;
  for (tg::CpuCapability c : tg::supported_cpu_capabilities()) {
    const std::string name = tg::cpu_capability_name(c);
    CAPTURE(name);
    tg::set_cpu_capability(c);
    const RawTensor h = f.to(tg::kFloat16), b = f.to(tg::kBFloat16);
    const RawTensor h32 = h.to(tg::kFloat32), b32 = b.to(tg::kFloat32);
    for (int64_t i = 0; i < n; ++i) {
      CAPTURE(v[i]);
      CHECK(h.data<tg::Half>()[i].bits == tg::Half(v[i]).bits);
      CHECK(b.data<tg::BFloat16>()[i].bits == tg::BFloat16(v[i]).bits);
      const float hf = static_cast<float>(tg::Half(v[i])), bf = static_cast<float>(tg::BFloat16(v[i]));
      CHECK(std::memcmp(h32.data<float>() + i, &hf, sizeof hf) == 0);
      CHECK(std::memcmp(b32.data<float>() + i, &bf, sizeof bf) == 0);
    }
    // round_to_precision (autocast's products through float32) gives the round trip's bits in one pass
    const RawTensor hr = tg::prim::round_to_precision(f, tg::kFloat16), br = tg::prim::round_to_precision(f, tg::kBFloat16);
    RawTensor br_in_place = f.clone();
    tg::prim::round_to_precision_(br_in_place, tg::kBFloat16);
    CHECK(std::memcmp(hr.data<float>(), h32.data<float>(), sizeof(float) * static_cast<std::size_t>(n)) == 0);
    CHECK(std::memcmp(br.data<float>(), b32.data<float>(), sizeof(float) * static_cast<std::size_t>(n)) == 0);
    CHECK(std::memcmp(br_in_place.data<float>(), b32.data<float>(), sizeof(float) * static_cast<std::size_t>(n)) == 0);
    const RawTensor hn = fn.to(tg::kFloat16).to(tg::kFloat32), bn = fn.to(tg::kBFloat16).to(tg::kFloat32);
    CHECK(std::isnan(hn.data<float>()[n]));
    CHECK(std::isnan(bn.data<float>()[n]));
    // bfloat16 keeps a NaN's sign and top payload bits and sets the quiet bit on every path, also for
    // a signaling NaN whose payload lies only in the low 16 bits (rounding it would carry into the
    // exponent and give infinity, or -0 for 0x7FFFFFFF); 17 NaNs, so the vector body sees them.
    const uint32_t nan_bits[] = {0x7F800001u, 0xFF800001u, 0x7FFFFFFFu, 0xFFFFFFFFu, 0x7FC00000u, 0x7F808000u,
                                 0x7FBFFFFFu, 0xFFC12345u, 0x7F800001u, 0x7F80FFFFu, 0xFF80FFFFu, 0x7FC0FFFFu,
                                 0x7FFF8000u, 0x7F817FFFu, 0xFFFF0001u, 0x7F800100u, 0x7FA00000u};
    RawTensor nans = RawTensor::empty({17}, tg::kFloat32);
    std::memcpy(nans.data<float>(), nan_bits, sizeof nan_bits);
    const RawTensor bnans = nans.to(tg::kBFloat16), rnans = tg::prim::round_to_precision(nans, tg::kBFloat16);
    for (int i = 0; i < 17; ++i) {
      CAPTURE(nan_bits[i]);
      float f;
      std::memcpy(&f, &nan_bits[i], sizeof f);
      CHECK(bnans.data<tg::BFloat16>()[i].bits == tg::BFloat16(f).bits);
      CHECK(bnans.data<tg::BFloat16>()[i].bits == static_cast<uint16_t>((nan_bits[i] >> 16) | 0x40u));
      uint32_t r;
      std::memcpy(&r, rnans.data<float>() + i, sizeof r);
      CHECK(r == (((nan_bits[i] >> 16) | 0x40u) << 16));
    }
  }
}

TEST_CASE("cpu capability: an unknown name or a path this CPU cannot run throws, naming what it supports") {
  CpuCapabilityGuard guard;
  const std::vector<tg::CpuCapability> supported = tg::supported_cpu_capabilities();
  REQUIRE(!supported.empty());
  CHECK(supported.front() == tg::CpuCapability::Baseline);
  CHECK(supported.back() == tg::best_cpu_capability());
  TG_CHECK_THROWS(tg::set_cpu_capability("avx3"), tg::CpuCapabilityError, "unknown CPU capability \"avx3\"");
  TG_CHECK_THROWS(tg::set_cpu_capability(""), tg::CpuCapabilityError, "this CPU supports: baseline");
  TG_CHECK_THROWS(tg::set_cpu_capability(static_cast<tg::CpuCapability>(7)), tg::CpuCapabilityError,
                  "unknown capability value 7");
  for (tg::CpuCapability c : {tg::CpuCapability::Baseline, tg::CpuCapability::Avx2, tg::CpuCapability::Avx512}) {
    const bool runs = std::find(supported.begin(), supported.end(), c) != supported.end();
    const std::string name = tg::cpu_capability_name(c);
    CAPTURE(name);
    if (runs) {
      tg::set_cpu_capability(name);
      CHECK(tg::cpu_capability() == c);
      CHECK(std::string(tg::cpu_capability_name()) == name);
    } else {   // only on a CPU without it, e.g. avx512 on an AVX2-only EPYC
      TG_CHECK_THROWS(tg::set_cpu_capability(c), tg::CpuCapabilityError, "this CPU cannot run the " + name);
      TG_CHECK_THROWS(tg::set_cpu_capability(name), tg::CpuCapabilityError, "it supports: baseline");
    }
  }
  tg::set_cpu_capability("BASELINE");   // names are case-insensitive
  CHECK(tg::cpu_capability() == tg::CpuCapability::Baseline);
}

// The child half of the next test: what the first kernel call makes of this process's TG_CPU_CAPABILITY.
TEST_CASE("cpu capability: (child process) report the path TG_CPU_CAPABILITY chose") {
  std::string report;
  try {
    (void)tg::exp(tg::ones({4}));
    report = tg::cpu_capability_name();
  } catch (const tg::CpuCapabilityError& e) {
    report = std::string("CpuCapabilityError: ") + e.what();
  }
  std::printf("capability-report[%s]\n", report.c_str());
  std::fflush(stdout);
}

TEST_CASE("cpu capability: TG_CPU_CAPABILITY chooses the path at first use and a bad value fails loudly") {
  auto child = [&](const std::string& value) -> std::string {
    const std::string out =
        testing::run_self("", "TG_CPU_CAPABILITY='" + value + "'", "cpu capability: (child process)*");
    const auto at = out.find("capability-report[");
    return at == std::string::npos ? "no report in: " + out : out.substr(at + 18, out.find(']', at) - at - 18);
  };
  for (tg::CpuCapability c : tg::supported_cpu_capabilities())
    CHECK(child(tg::cpu_capability_name(c)) == std::string(tg::cpu_capability_name(c)));
  CHECK(child("") == std::string(tg::cpu_capability_name(tg::best_cpu_capability())));   // empty: unset
  const std::string bad = child("avx1024");
  CHECK_MESSAGE(bad.find("CpuCapabilityError: TG_CPU_CAPABILITY=avx1024: unknown CPU capability") == 0, bad);
  CHECK_MESSAGE(bad.find("this CPU supports: baseline") != std::string::npos, bad);
}

TEST_CASE("cpu capability: tg::info names the version, the path in use, the best one, the BLAS, zlib and CUDA") {
  CpuCapabilityGuard guard;
  tg::set_cpu_capability(tg::CpuCapability::Baseline);
  const std::string s = tg::info();
  CHECK_MESSAGE(s.find("tensorgrad ") == 0, s);
  CHECK_MESSAGE(s.find("CPU code path: baseline (best on this CPU: " +
                       std::string(tg::cpu_capability_name(tg::best_cpu_capability()))) != std::string::npos, s);
  CHECK_MESSAGE(s.find("CPU threads: " + std::to_string(tg::get_num_threads())) != std::string::npos, s);
  CHECK_MESSAGE(s.find("BLAS: ") != std::string::npos, s);
  CHECK_MESSAGE(s.find(tg::detail::idx_reads_gzip() ? "IDX files: gzip (zlib) and plain\n"
                                                     : "IDX files: plain only (built without zlib") != std::string::npos,
                s);
  CHECK_MESSAGE(s.find(tg::cuda::info()) != std::string::npos, s);
  tg::set_cpu_capability(tg::best_cpu_capability());
  CHECK(tg::info().find(std::string("CPU code path: ") + tg::cpu_capability_name()) != std::string::npos);
}
