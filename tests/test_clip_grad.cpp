// tests/test_clip_grad.cpp: clip_grad_norm, get_total_norm and clip_grads_with_norm_ against
// torch.nn.utils (torch 2.15.0) and against an independent float64 transcription of its algorithm:
// the dtypes the norms are computed and rounded in (Note [Clipping dtypes]), every norm_type,
// non-finite norms and error_if_nonfinite.
#include <cmath>
#include <limits>

#include "testing.h"

using tg::Tensor;

namespace {

/// A leaf of dtype d whose gradient holds `values` (rounded to d).
Tensor with_grad(const std::vector<double>& values, tg::DType d, const tg::Shape& shape = {}) {
  const tg::Shape s = shape.empty() ? tg::Shape{static_cast<int64_t>(values.size())} : shape;
  Tensor p = tg::zeros(s, tg::TensorOptions().dtype(d).requires_grad(true));
  p.set_grad(tg::from_vector(values, s).to(d));
  return p;
}

/// A leaf of dtype d whose gradient is scale * randn (rounded to d), fresh from seed.
Tensor random_grad(const tg::Shape& shape, tg::DType d, double scale, uint64_t seed) {
  tg::manual_seed(seed);
  Tensor p = tg::zeros(shape, tg::TensorOptions().dtype(d).requires_grad(true));
  p.set_grad((tg::randn(shape, tg::TensorOptions().dtype(tg::kFloat64)) * scale).to(d));
  return p;
}

/// x rounded to d as the library rounds a float32 result into d (float64: x itself).
double round_to(double x, tg::DType d) {
  if (d == tg::kFloat64) return x;
  return tg::from_vector(std::vector<double>{x}).to(tg::kFloat32).to(d).item();
}

/// One unit in the last place of d at |x| (the spacing of d's values there; float16 subnormals too).
double ulp(double x, tg::DType d) {
  const int mant = d == tg::kFloat16 ? 10 : d == tg::kBFloat16 ? 7 : d == tg::kFloat32 ? 23 : 52;
  const int min_exp = d == tg::kFloat16 ? -14 : d == tg::kFloat64 ? -1022 : -126;
  const int e = x == 0 ? min_exp : std::max(min_exp, std::ilogb(std::fabs(x)));
  return std::ldexp(1.0, e - mant);
}

/// torch.linalg.vector_norm(x, p) of the stored values, in float64.
double ref_norm(const std::vector<double>& x, double p) {
  if (std::isinf(p)) {
    double m = p > 0 ? 0 : std::numeric_limits<double>::infinity();
    for (double v : x) m = p > 0 ? std::max(m, std::fabs(v)) : std::min(m, std::fabs(v));
    return m;
  }
  double s = 0;
  for (double v : x) s += p == 0 ? (v != 0) : std::pow(std::fabs(v), p);
  return p == 0 ? s : std::pow(s, 1 / p);
}

/// torch.nn.utils.get_total_norm in float64 from the gradients of params: each norm rounded to its
/// gradient's dtype, the total rounded to the promoted dtype `total_dtype`.
double ref_total(const std::vector<Tensor>& params, double p, tg::DType total_dtype) {
  std::vector<double> norms;
  for (const Tensor& q : params) norms.push_back(round_to(ref_norm(q.grad().to_vector<double>(), p), q.dtype()));
  return round_to(ref_norm(norms, p), total_dtype);
}

/// |got - want| <= rel |want| + abs elementwise.
void check_rel(const Tensor& got, const std::vector<double>& want, double rel, double abs = 0) {
  const auto g = got.to_vector<double>();
  REQUIRE(g.size() == want.size());
  for (std::size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(want[i])) {
      CHECK_MESSAGE(std::isnan(g[i]), "element " << i << ": expected NaN, got " << g[i]);
      continue;
    }
    if (g[i] == want[i]) continue;
    CHECK_MESSAGE(std::fabs(g[i] - want[i]) <= rel * std::fabs(want[i]) + abs,
                  "element " << i << ": " << g[i] << " vs " << want[i] << " (rel " << rel << ", abs " << abs << ")");
  }
}

}  // namespace

TEST_CASE("clip_grad_norm: float16 and bfloat16 gradients are normed in float32 as torch.nn.utils.clip_grad_norm_") {
  const double u16 = testing::unit_roundoff(tg::kFloat16), ub16 = testing::unit_roundoff(tg::kBFloat16);
  {
    // p = torch.zeros(2, dtype=torch.float16, requires_grad=True); p.grad = torch.tensor([300., 4.],
    // dtype=torch.float16); torch.nn.utils.clip_grad_norm_([p], 1.0) -> tensor(300., dtype=torch.float16),
    // p.grad -> [1.0, 0.013336181640625]  (torch 2.15.0)
    Tensor p = with_grad({300, 4}, tg::kFloat16);
    CHECK(tg::optim::clip_grad_norm({p}, 1.0) == 300.0);   // squares in float16 would overflow to inf
    check_rel(p.grad(), {1.0, 0.013336181640625}, 2 * u16);
    // the same with max_norm 0.3 -> p.grad [0.300048828125, 0.004001617431640625]
    Tensor q = with_grad({300, 4}, tg::kFloat16);
    CHECK(tg::optim::clip_grad_norm({q}, 0.3) == 300.0);
    check_rel(q.grad(), {0.300048828125, 0.004001617431640625}, 2 * u16);
  }
  {
    // the same in torch.bfloat16 -> tensor(300., dtype=torch.bfloat16), p.grad [0.99609375, 0.0133056640625]
    Tensor p = with_grad({300, 4}, tg::kBFloat16);
    CHECK(tg::optim::clip_grad_norm({p}, 1.0) == 300.0);
    check_rel(p.grad(), {0.99609375, 0.0133056640625}, 2 * ub16);
    // grads [60000., 60000.] in torch.bfloat16 -> tensor(84480., dtype=torch.bfloat16), [0.7109375, 0.7109375]
    Tensor big = with_grad({60000, 60000}, tg::kBFloat16);
    CHECK(tg::optim::clip_grad_norm({big}, 1.0) == 84480.0);
    check_rel(big.grad(), {0.7109375, 0.7109375}, 2 * ub16);
  }
  {
    // A float16 norm above 65504 is inf in float16, as in PyTorch: grads [60000., 60000.] in float16 ->
    // tensor(inf, dtype=torch.float16), p.grad [0., 0.]; with a float32 grad [1.] next to it, the
    // float32 total is inf too and both gradients become 0.
    Tensor p = with_grad({60000, 60000}, tg::kFloat16);
    CHECK(std::isinf(tg::optim::clip_grad_norm({p}, 1.0)));
    check_rel(p.grad(), {0, 0}, 0);
    Tensor a = with_grad({60000, 60000}, tg::kFloat16), b = with_grad({1}, tg::kFloat32);
    CHECK(std::isinf(tg::optim::clip_grad_norm({a, b}, 1.0)));
    check_rel(a.grad(), {0, 0}, 0);
    check_rel(b.grad(), {0}, 0);
  }
}

TEST_CASE("clip_grad_norm: mixed dtypes promote the total and scale each gradient in its own dtype") {
  const double u32 = testing::unit_roundoff(tg::kFloat32);
  struct Case {
    tg::DType a, b, total;
    double max_norm, norm;
    std::vector<double> ga, gb;
  };
  // a.grad = [300., 4.] of dtype a, b.grad = [3.] of dtype b; n = torch.nn.utils.clip_grad_norm_([a, b], max_norm)
  // (torch 2.15.0): n.dtype, n, a.grad, b.grad as listed.
  const Case cases[] = {
      {tg::kFloat16, tg::kFloat32, tg::kFloat32, 1.0, 300.0150146484375, {1.0, 0.013336181640625},
       {0.009999499656260014}},
      {tg::kFloat16, tg::kBFloat16, tg::kFloat32, 1.0, 300.0150146484375, {1.0, 0.013336181640625}, {0.010009765625}},
      {tg::kFloat32, tg::kFloat64, tg::kFloat64, 1.0, 300.0416706549004, {0.9998611211776733, 0.013331481255590916},
       {0.009998611137757282}},
      {tg::kFloat16, tg::kFloat64, tg::kFloat64, 0.3, 300.01499962501873, {0.300048828125, 0.004001617431640625},
       {0.0029998500012500626}},
  };
  for (const Case& c : cases) {
    CAPTURE(std::string(tg::dtype_name(c.a)));
    CAPTURE(std::string(tg::dtype_name(c.b)));
    Tensor a = with_grad({300, 4}, c.a), b = with_grad({3}, c.b);
    const Tensor total = tg::optim::get_total_norm({a.grad(), b.grad()});
    CHECK(total.dtype() == c.total);
    check_rel(total, {c.norm}, 4 * u32);   // a float32 norm of two terms: a few float32 roundings
    CHECK(tg::optim::clip_grad_norm({a, b}, c.max_norm) == doctest::Approx(c.norm).epsilon(4 * u32));
    const auto tol = [&](tg::DType d) { return d == tg::kFloat64 ? 8 * u32 : 8 * testing::unit_roundoff(d) + 8 * u32; };
    check_rel(a.grad(), c.ga, tol(c.a));
    check_rel(b.grad(), c.gb, tol(c.b));
    CHECK(a.grad().dtype() == c.a);
    CHECK(b.grad().dtype() == c.b);
  }
}

TEST_CASE("clip_grad_norm: random float16, bfloat16 and float32 gradients above 256 match the float64 reference") {
  // Odd sizes, elements up to ~1500 (beyond float16's sqrt(65504) = 256), clipped to a max below the norm.
  const std::pair<tg::DType, tg::DType> pairs[] = {
      {tg::kFloat16, tg::kFloat16}, {tg::kBFloat16, tg::kBFloat16}, {tg::kFloat16, tg::kFloat32},
      {tg::kFloat16, tg::kBFloat16}, {tg::kFloat32, tg::kFloat32}};
  uint64_t seed = 4101;
  for (const auto& pair : pairs) {
    const tg::DType da = pair.first, db = pair.second;   // not a structured binding: CAPTURE's lambda reads them
    CAPTURE(std::string(tg::dtype_name(da)));
    CAPTURE(std::string(tg::dtype_name(db)));
    std::vector<Tensor> params{random_grad({37}, da, 300, seed++), random_grad({5, 9}, db, 300, seed++),
                               random_grad({3}, da, 0.5, seed++)};
    const tg::DType td = tg::promote_types(da, db);
    const double want = ref_total(params, 2.0, td);
    std::vector<std::vector<double>> before;
    for (const Tensor& p : params) before.push_back(p.grad().to_vector<double>());
    const double max_norm = 0.37 * want;
    const double got = tg::optim::clip_grad_norm(params, max_norm);
    // Each norm's float32 sum of at most 47 terms (45 squares, the total's 3) is within gamma_47 of the
    // float64 one; rounded to its gradient's dtype it is the reference's value or a neighbour (2 u of
    // the coarser dtype, relative); the total adds its own rounding to td (an ulp).
    REQUIRE(std::isfinite(got));
    const double sum_err = testing::gamma_n(47, tg::kFloat32);
    const double coarse = std::max(testing::unit_roundoff(da), testing::unit_roundoff(db));
    const double rel_total = 2 * coarse + 2 * sum_err;
    CHECK(std::fabs(got - want) <= rel_total * want + 2 * ulp(want, td));
    const double coef = max_norm / (want + 1e-6);
    for (std::size_t i = 0; i < params.size(); ++i) {
      std::vector<double> expect = before[i];
      for (double& v : expect) v *= coef;
      // The total's error, three roundings of the coefficient to td, and the product's rounding to d.
      const tg::DType d = params[i].dtype();
      const double rel = rel_total + 4 * testing::unit_roundoff(td) + 2 * testing::unit_roundoff(d);
      check_rel(params[i].grad(), expect, rel, ulp(0, d));
    }
  }
}

TEST_CASE("clip_grad_norm: norm_type p, inf, -inf, 0 and negative p as torch.nn.utils computes them") {
  const double u32 = testing::unit_roundoff(tg::kFloat32);
  struct Case {
    double p, norm;
    std::vector<double> ga, gc;
  };
  // a.grad = [3., 0., -4.], b.grad = [0., 0.], c.grad = [-1.] (float32);
  // n = torch.nn.utils.clip_grad_norm_([a, b, c], 1.0, norm_type=p) (torch 2.15.0): n, a.grad, c.grad.
  const double inf = std::numeric_limits<double>::infinity();
  const Case cases[] = {
      {2, 5.099019527435303, {0.5883483290672302, 0, -0.784464418888092}, {-0.196116104722023}},
      {1, 8.0, {0.3749999403953552, 0, -0.4999999403953552}, {-0.1249999850988388}},
      {3.5, 4.379349231719971, {0.6850331425666809, 0, -0.9133775234222412}, {-0.2283443808555603}},
      {0.5, 22.392305374145508, {0.1339745819568634, 0, -0.17863278090953827}, {-0.04465819522738457}},
      {inf, 4.0, {0.7499998211860657, 0, -0.9999997615814209}, {-0.24999994039535522}},
      {-inf, 0.0, {3, 0, -4}, {-1}},   // b's norm is 0: the total is 0, the coefficient 1
      {0, 2.0, {1.4999992847442627, 0, -1.9999990463256836}, {-0.4999997615814209}},   // a and c are nonzero
      {-1, 0.0, {3, 0, -4}, {-1}},
      {-1.5, 0.0, {3, 0, -4}, {-1}},
  };
  for (const Case& c : cases) {
    CAPTURE(c.p);
    Tensor a = with_grad({3, 0, -4}, tg::kFloat32), b = with_grad({0, 0}, tg::kFloat32);
    Tensor z = with_grad({-1}, tg::kFloat32);
    const double got = tg::optim::clip_grad_norm({a, b, z}, 1.0, c.p);
    // pow and the sums in float32: a few roundings, amplified by 1/p for 0 < |p| < 1.
    const double rel = 8 * u32 * (c.p == 0 || std::isinf(c.p) ? 1.0 : std::max(1.0, 1 / std::fabs(c.p)));
    CHECK(std::fabs(got - c.norm) <= rel * c.norm);
    check_rel(a.grad(), c.ga, rel);
    check_rel(z.grad(), c.gc, rel);
  }
  // Without the zero gradient: a.grad = [3., -4.], c.grad = [-1.], max_norm 0.1 (torch 2.15.0):
  // norm_type=-1 -> 0.6315789222717285, a.grad [0.4749992787837982, -0.633332371711731];
  // norm_type=-inf -> 1.0, a.grad [0.2999997138977051, -0.39999961853027344].
  Tensor a = with_grad({3, -4}, tg::kFloat32), z = with_grad({-1}, tg::kFloat32);
  CHECK(tg::optim::clip_grad_norm({a, z}, 0.1, -1) == doctest::Approx(0.6315789222717285).epsilon(8 * u32));
  check_rel(a.grad(), {0.4749992787837982, -0.633332371711731}, 8 * u32);
  Tensor a2 = with_grad({3, -4}, tg::kFloat32), z2 = with_grad({-1}, tg::kFloat32);
  CHECK(tg::optim::clip_grad_norm({a2, z2}, 0.1, -inf) == 1.0);
  check_rel(a2.grad(), {0.2999997138977051, -0.39999961853027344}, 8 * u32);
}

TEST_CASE("get_total_norm: every norm_type on random float32 and float64 tensors matches the float64 reference") {
  const double inf = std::numeric_limits<double>::infinity();
  const double ps[] = {2, 1, 3.5, 0.5, 7, inf, -inf, 0, -1.5};
  uint64_t seed = 977;
  for (tg::DType d : {tg::kFloat32, tg::kFloat64}) {
    std::vector<Tensor> params{random_grad({3, 7}, d, 2.0, seed++), random_grad({11}, d, 0.25, seed++),
                               random_grad({1}, d, 5.0, seed++)};
    std::vector<Tensor> grads;
    for (const Tensor& p : params) grads.push_back(p.grad());
    for (double p : ps) {
      CAPTURE(std::string(tg::dtype_name(d)));
      CAPTURE(p);
      const double want = ref_total(params, p, d);
      const Tensor got = tg::optim::get_total_norm(grads, p);
      CHECK(got.dtype() == d);
      CHECK(got.dim() == 0);
      // Sums of at most 21 terms, each with a pow of a few ulps, then a root that scales the relative
      // error by 1/|p|; the norms are rounded to d once more before the total.
      const double u = testing::unit_roundoff(d);
      const double amplify = p == 0 || std::isinf(p) ? 1.0 : std::max(1.0, 1 / std::fabs(p));
      const double rel = (testing::gamma_n(21, d) + 8 * u) * amplify * 2;
      CHECK_MESSAGE(std::fabs(got.item() - want) <= rel * std::fabs(want), got.item() << " vs " << want);
    }
  }
}

TEST_CASE("clip_grad_norm: a NaN total makes every gradient NaN and an infinite one zeroes them, as PyTorch") {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  for (tg::DType d : {tg::kFloat32, tg::kFloat16, tg::kBFloat16, tg::kFloat64}) {
    CAPTURE(std::string(tg::dtype_name(d)));
    // a.grad = [nan, 4.], b.grad = [3.]: clip_grad_norm_([a, b], 1.0) -> tensor(nan), a.grad [nan, nan],
    // b.grad [nan] (torch 2.15.0)
    Tensor a = with_grad({nan, 4}, d), b = with_grad({3}, d);
    CHECK(std::isnan(tg::optim::clip_grad_norm({a, b}, 1.0)));
    check_rel(a.grad(), {nan, nan}, 0);
    check_rel(b.grad(), {nan}, 0);
    // a.grad = [inf, 4.] -> tensor(inf), a.grad [nan, 0.], b.grad [0.]
    Tensor c = with_grad({inf, 4}, d), e = with_grad({3}, d);
    CHECK(std::isinf(tg::optim::clip_grad_norm({c, e}, 1.0)));
    check_rel(c.grad(), {nan, 0}, 0);
    check_rel(e.grad(), {0}, 0);
    // norm_type='inf' and 1 also give NaN for a NaN gradient; norm_type=0 counts it as nonzero:
    // grad [nan, 1.], norm_type=0 -> tensor(1.), grad [nan, 0.99999...]
    for (double p : {inf, 1.0, -inf, -1.0, 3.0}) {
      Tensor f = with_grad({nan, 1}, d);
      CHECK(std::isnan(tg::optim::clip_grad_norm({f}, 1.0, p)));
    }
    Tensor f = with_grad({nan, 1}, d);
    CHECK(tg::optim::clip_grad_norm({f}, 1.0, 0.0) == 1.0);
    CHECK(std::isnan(f.grad().to_vector<double>()[0]));
  }
}

TEST_CASE("clip_grad_norm: error_if_nonfinite raises PyTorch's error before changing any gradient") {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  Tensor a = with_grad({inf, 4}, tg::kFloat32), b = with_grad({3}, tg::kFloat32);
  // torch.nn.utils.clip_grad_norm_([a, b], 1.0, error_if_nonfinite=True) raises RuntimeError: The total
  // norm of order 2.0 for gradients from `parameters` is non-finite, so it cannot be clipped. ...
  TG_CHECK_THROWS(tg::optim::clip_grad_norm({a, b}, 1.0, 2.0, true), tg::Error,
                  "clip_grad_norm: The total norm of order 2.0 for gradients from `parameters` is non-finite, so it "
                  "cannot be clipped");
  check_rel(a.grad(), {inf, 4}, 0);   // unchanged
  check_rel(b.grad(), {3}, 0);
  Tensor c = with_grad({nan, 4}, tg::kFloat32);
  TG_CHECK_THROWS(tg::nn::utils::clip_grad_norm_({c}, 1.0, inf, true), tg::Error, "norm of order inf for gradients");
  TG_CHECK_THROWS(tg::optim::get_total_norm({c.grad()}, 3.5, true), tg::Error, "order 3.5 for");
  // float16 overflow of the norm counts as non-finite too
  Tensor h = with_grad({60000, 60000}, tg::kFloat16);
  TG_CHECK_THROWS(tg::optim::clip_grad_norm({h}, 1.0, 2.0, true), tg::Error, "non-finite");
  check_rel(h.grad(), {60000, 60000}, 0);
  // a finite norm clips as without the switch
  Tensor e = with_grad({3, 4}, tg::kFloat32);
  CHECK(tg::optim::clip_grad_norm({e}, 1.0, 2.0, true) == doctest::Approx(5.0));
  check_rel(e.grad(), {0.6, 0.8}, 1e-6);
}

TEST_CASE("clip_grad_norm: max_norm, empty and missing gradients as torch.nn.utils treats them") {
  const double inf = std::numeric_limits<double>::infinity();
  // a.grad = [3., 4.]: clip_grad_norm_([a], -1.0) -> tensor(5.), a.grad [-0.5999999046325684,
  // -0.7999998331069946]: PyTorch does not refuse a negative max_norm (torch 2.15.0)
  Tensor a = with_grad({3, 4}, tg::kFloat32);
  CHECK(tg::optim::clip_grad_norm({a}, -1.0) == 5.0);
  check_rel(a.grad(), {-0.5999999046325684, -0.7999998331069946}, 4e-7);
  // float16 zeros with max_norm 0: 1 / (0 + 1e-6) is inf in float16, times 0 is NaN -> grads [nan, nan]
  Tensor z = with_grad({0, 0}, tg::kFloat16);
  CHECK(tg::optim::clip_grad_norm({z}, 0.0) == 0.0);
  CHECK(std::isnan(z.grad().to_vector<double>()[0]));
  Tensor z32 = with_grad({0, 0}, tg::kFloat32);   // float32: 0 / 1e-6 = 0 -> [0., 0.]
  CHECK(tg::optim::clip_grad_norm({z32}, 0.0) == 0.0);
  check_rel(z32.grad(), {0, 0}, 0);
  // A max above the norm leaves the gradients bit for bit (the coefficient clamps to 1).
  Tensor r = random_grad({13}, tg::kFloat32, 1.0, 31);
  const auto before = r.grad().to_vector<float>();
  CHECK(tg::optim::clip_grad_norm({r}, inf) > 0);
  CHECK(r.grad().to_vector<float>() == before);
  // No gradients: torch.nn.utils.get_total_norm([]) -> tensor(0.), float32 on the CPU
  Tensor none = tg::zeros({3}, tg::TensorOptions().requires_grad(true));
  CHECK(tg::optim::clip_grad_norm({none}, 1.0, inf, true) == 0.0);
  CHECK(tg::optim::get_total_norm({}).dtype() == tg::kFloat32);
  CHECK(tg::optim::get_total_norm({}).item() == 0.0);
  // An empty gradient counts 0 for p > 0 and p = 0; PyTorch refuses inf and negative p on it:
  // clip_grad_norm_([a, e], 1.0, norm_type='inf') -> RuntimeError: _foreach_norm cannot compute the
  // infinity norm on an empty tensor because the operation does not have an identity
  Tensor e = with_grad({}, tg::kFloat32, {0});
  Tensor b = with_grad({3, -4}, tg::kFloat32);
  CHECK(tg::optim::clip_grad_norm({b, e}, 10.0) == 5.0);
  CHECK(tg::optim::clip_grad_norm({b, e}, 10.0, 0.0) == 1.0);   // e's count 0 is not counted
  TG_CHECK_THROWS(tg::optim::clip_grad_norm({b, e}, 1.0, inf), tg::Error,
                  "_foreach_norm cannot compute the infinity norm on an empty tensor because the operation does not "
                  "have an identity");
  TG_CHECK_THROWS(tg::optim::clip_grad_norm({b, e}, 1.0, -1.0), tg::Error, "cannot compute the -1 norm on an empty");
  TG_CHECK_THROWS(tg::optim::clip_grad_norm({b, e}, 1.0, -inf), tg::Error, "cannot compute the -inf norm on an empty");
  check_rel(b.grad(), {3, -4}, 0);   // a refused call changes nothing
}

TEST_CASE("clip_grad_norm: bad arguments raise tg::Error naming the call, before any gradient changes") {
  Tensor a = with_grad({3, 4}, tg::kFloat32);
  TG_CHECK_THROWS(tg::optim::clip_grad_norm({a, Tensor()}, 1.0), tg::Error, "clip_grad_norm: parameter 1 is undefined");
  check_rel(a.grad(), {3, 4}, 0);
  TG_CHECK_THROWS(tg::optim::get_total_norm({a.grad(), tg::from_vector(std::vector<int64_t>{1, 2})}), tg::DTypeError,
                  "Expected a floating point or complex tensor as input. Got int64");
  TG_CHECK_THROWS(tg::optim::get_total_norm({Tensor()}), tg::Error, "get_total_norm: tensor 0 is undefined");
  TG_CHECK_THROWS(tg::optim::clip_grads_with_norm_({a}, 1.0, tg::ones({2})), tg::Error,
                  "total_norm must hold one number");
  // An expanded gradient cannot be written in place (PyTorch: "unsupported operation: some elements of the
  // input tensor and the written-to tensor refer to a single memory location"): refused before a is scaled.
  Tensor x = tg::zeros({3}, tg::TensorOptions().requires_grad(true));
  x.set_grad(Tensor(tg::full({1}, 8.0).data().expand({3})));
  TG_CHECK_THROWS(tg::optim::clip_grad_norm({a, x}, 1.0), tg::Error, "clip_grad_norm: unsupported operation");
  check_rel(a.grad(), {3, 4}, 0);
}

TEST_CASE("get_total_norm then clip_grads_with_norm_ is clip_grad_norm, libtorch's clip_grad_norm_ and clip_grad_norm_tensor") {
  Tensor a = random_grad({7, 3}, tg::kFloat16, 100, 61), b = random_grad({5}, tg::kFloat32, 3, 62);
  Tensor a2 = with_grad(a.grad().to_vector<double>(), tg::kFloat16, {7, 3});
  Tensor b2 = with_grad(b.grad().to_vector<double>(), tg::kFloat32);
  Tensor a3 = with_grad(a.grad().to_vector<double>(), tg::kFloat16, {7, 3});
  Tensor b3 = with_grad(b.grad().to_vector<double>(), tg::kFloat32);
  Tensor a4 = with_grad(a.grad().to_vector<double>(), tg::kFloat16, {7, 3});
  Tensor b4 = with_grad(b.grad().to_vector<double>(), tg::kFloat32);
  const Tensor total = tg::optim::get_total_norm({a.grad(), b.grad()}, 3.0);
  CHECK(total.dtype() == tg::kFloat32);   // promoted from float16 and float32
  tg::optim::clip_grads_with_norm_({a, b}, 0.5, total);
  const uint64_t version = a2.grad().data().version();
  CHECK(tg::optim::clip_grad_norm({a2, b2}, 0.5, 3.0) == total.item());
  CHECK(a2.grad().data().version() > version);   // an in-place write
  CHECK(tg::nn::utils::clip_grad_norm_({a3, b3}, 0.5, 3.0) == total.item());
  CHECK(a.grad().to_vector<double>() == a2.grad().to_vector<double>());
  CHECK(b.grad().to_vector<double>() == b2.grad().to_vector<double>());
  CHECK(a.grad().to_vector<double>() == a3.grad().to_vector<double>());
  const Tensor norm = tg::optim::clip_grad_norm_tensor({a4, b4}, 0.5, 3.0);   // Python's return type
  CHECK(norm.dim() == 0);
  CHECK(norm.dtype() == tg::kFloat32);
  CHECK(norm.item() == total.item());
  CHECK(a.grad().to_vector<double>() == a4.grad().to_vector<double>());
  CHECK(b.grad().to_vector<double>() == b4.grad().to_vector<double>());
  CHECK(tg::optim::get_total_norm({a.grad(), b.grad()}, 3.0).item() == doctest::Approx(0.5).epsilon(1e-2));
  const Tensor none = tg::optim::clip_grad_norm_tensor({tg::zeros({2}, tg::TensorOptions().requires_grad(true))}, 1.0);
  CHECK(none.dtype() == tg::kFloat32);   // no gradient: a float32 0 on the CPU, as get_total_norm of nothing
  CHECK(none.item() == 0.0);
}

TEST_CASE("clip_grad_norm on CUDA and across devices matches the CPU") {
  TG_NEED_CUDA();
  const tg::Device gpu = tg::Device::cuda(0);
  for (tg::DType d : {tg::kFloat16, tg::kBFloat16, tg::kFloat32}) {
    CAPTURE(std::string(tg::dtype_name(d)));
    Tensor a = random_grad({37}, d, 300, 71), b = random_grad({5, 9}, tg::kFloat32, 2, 72);
    Tensor ga = tg::zeros({37}, tg::TensorOptions().dtype(d).device(gpu).requires_grad(true));
    Tensor gb = tg::zeros({5, 9}, tg::TensorOptions().device(gpu).requires_grad(true));
    ga.set_grad(a.grad().to(gpu));
    gb.set_grad(b.grad().to(gpu));
    Tensor mb = tg::zeros({5, 9}, tg::TensorOptions().requires_grad(true));   // mixed: the CPU one second
    mb.set_grad(Tensor(b.grad().data().clone()));
    Tensor ma = tg::zeros({37}, tg::TensorOptions().dtype(d).device(gpu).requires_grad(true));
    ma.set_grad(a.grad().to(gpu));
    const double cpu = tg::optim::clip_grad_norm({a, b}, 1.0);
    const double cuda = tg::optim::clip_grad_norm({ga, gb}, 1.0);
    const double mixed = tg::optim::clip_grad_norm({ma, mb}, 1.0);
    const double tol = 2 * ulp(cpu, tg::promote_types(d, tg::kFloat32)) + 1e-6 * cpu;   // sums in another order
    CHECK(std::fabs(cuda - cpu) <= tol);
    CHECK(std::fabs(mixed - cpu) <= tol);
    const double rel = 8 * testing::unit_roundoff(d) + 1e-5;
    check_rel(ga.grad().to(tg::Device::cpu()), a.grad().to_vector<double>(), rel, ulp(0, d));
    check_rel(ma.grad().to(tg::Device::cpu()), a.grad().to_vector<double>(), rel, ulp(0, d));
    check_rel(mb.grad(), b.grad().to_vector<double>(), rel);
  }
}
