// tests/test_gradcheck.cpp: a table of every differentiable op in ops/ops.h, each checked by
// tg::autograd::gradcheck (float64 central differences, eps 1e-6, atol 1e-5, rtol 1e-3) on several
// samples: same shape, broadcasting pairs, non-contiguous views, 0-d and zero-size inputs.
// "gradcheck table covers every op in ops/ops.h" fails when an op is added without an entry.
#include <functional>
#include <map>
#include <set>

#include "ops_coverage.h"
#include "testing.h"

using tg::Tensor;
using testing::away_from_zero;
using testing::randn64;
using testing::transposed64;
using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

namespace {

struct Sample {
  std::string what;
  std::vector<Tensor> inputs;
  Fn fn;
};
using SampleMaker = std::function<std::vector<Sample>()>;

/// Standard samples for a unary op: 2-D, odd 3-D, non-contiguous, 0-d, zero-size.
/// make(shape, seed) builds an input valid for the op's domain.
std::vector<Sample> unary_samples(const std::function<Tensor(const Tensor&)>& op,
                                  const std::function<Tensor(const tg::Shape&, uint64_t)>& make) {
  Fn f = [op](const std::vector<Tensor>& in) { return op(in[0]); };
  Tensor nc = make({5, 3}, 7);
  Tensor nc_leaf(nc.data().transpose(0, 1), true);
  return {{"(3, 4)", {make({3, 4}, 1)}, f},
          {"(2, 3, 5)", {make({2, 3, 5}, 2)}, f},
          {"non-contiguous (3, 5) view", {nc_leaf}, f},
          {"0-d", {make({}, 3)}, f},
          {"zero-size (0, 3)", {make({0, 3}, 4)}, f}};
}

std::function<Tensor(const tg::Shape&, uint64_t)> normal() {
  return [](const tg::Shape& s, uint64_t seed) { return randn64(s, seed); };
}
std::function<Tensor(const tg::Shape&, uint64_t)> positive(double lo = 0.2) {
  return [lo](const tg::Shape& s, uint64_t seed) { return away_from_zero(s, seed, lo, true); };
}
std::function<Tensor(const tg::Shape&, uint64_t)> nonzero(double lo = 0.1) {
  return [lo](const tg::Shape& s, uint64_t seed) { return away_from_zero(s, seed, lo, false); };
}

/// Standard samples for a broadcasting binary op; b_make builds the right operand (e.g. nonzero for div).
std::vector<Sample> binary_samples(const std::function<Tensor(const Tensor&, const Tensor&)>& op,
                                   const std::function<Tensor(const tg::Shape&, uint64_t)>& a_make,
                                   const std::function<Tensor(const tg::Shape&, uint64_t)>& b_make) {
  Fn f = [op](const std::vector<Tensor>& in) { return op(in[0], in[1]); };
  Tensor nc_base = a_make({4, 3}, 15);
  return {{"same shape (3, 4)", {a_make({3, 4}, 11), b_make({3, 4}, 12)}, f},
          {"broadcast (3, 4) with (4)", {a_make({3, 4}, 13), b_make({4}, 14)}, f},
          {"broadcast (3, 1) with (1, 4)", {a_make({3, 1}, 16), b_make({1, 4}, 17)}, f},
          {"0-d with (2, 3)", {a_make({}, 18), b_make({2, 3}, 19)}, f},
          {"non-contiguous (3, 4) view with (3, 4)", {Tensor(nc_base.data().transpose(0, 1), true), b_make({3, 4}, 20)}, f},
          {"one side without grad", {a_make({2, 3}, 21), Tensor(b_make({2, 3}, 22).data())}, f},
          {"zero-size (0, 3) with (3)", {a_make({0, 3}, 23), b_make({3}, 24)}, f}};
}

/// The table: op name (as declared in ops/ops.h) -> samples.
std::map<std::string, SampleMaker> gradcheck_table() {
  std::map<std::string, SampleMaker> t;
  // ---- elementwise
  t["add"] = [] { return binary_samples([](auto& a, auto& b) { return tg::add(a, b); }, normal(), normal()); };
  t["sub"] = [] { return binary_samples([](auto& a, auto& b) { return tg::sub(a, b); }, normal(), normal()); };
  t["mul"] = [] { return binary_samples([](auto& a, auto& b) { return tg::mul(a, b); }, normal(), normal()); };
  t["div"] = [] { return binary_samples([](auto& a, auto& b) { return tg::div(a, b); }, normal(), nonzero(0.5)); };
  t["pow"] = [] {
    auto s = binary_samples([](auto& a, auto& b) { return tg::pow(a, b); }, positive(0.5), normal());
    for (auto& x : unary_samples([](auto& a) { return tg::pow(a, 2.5); }, positive(0.3))) s.push_back(x);
    for (auto& x : unary_samples([](auto& a) { return tg::pow(a, 3.0); }, normal())) s.push_back(x);
    return s;
  };
  t["neg"] = [] { return unary_samples([](auto& a) { return tg::neg(a); }, normal()); };
  t["exp"] = [] { return unary_samples([](auto& a) { return tg::exp(a); }, normal()); };
  t["log"] = [] { return unary_samples([](auto& a) { return tg::log(a); }, positive()); };
  t["sqrt"] = [] { return unary_samples([](auto& a) { return tg::sqrt(a); }, positive()); };
  t["abs"] = [] { return unary_samples([](auto& a) { return tg::abs(a); }, nonzero()); };
  t["relu"] = [] { return unary_samples([](auto& a) { return tg::relu(a); }, nonzero()); };
  t["sigmoid"] = [] { return unary_samples([](auto& a) { return tg::sigmoid(a); }, normal()); };
  t["tanh"] = [] { return unary_samples([](auto& a) { return tg::tanh(a); }, normal()); };
  t["clamp"] = [] {
    // bounds at +-0.55 while inputs avoid [0.5, 0.6] in magnitude: no element sits on a kink
    return unary_samples([](auto& a) { return tg::clamp(a, -0.55, 0.55); },
                         [](const tg::Shape& s, uint64_t seed) {
                           Tensor x = randn64(s, seed, false);
                           tg::NoGradGuard g;
                           Tensor far = tg::where(tg::abs(x) > 0.55, x * 1.2, x * 0.8);
                           return Tensor(far.data().clone(), true);
                         });
  };
  // round and sign are step functions: gradient 0, checked away from their jumps (randn inputs)
  // the math functions: samples inside each domain ((-0.9, 0.9) for asin, acos and atanh; above 1.2
  // for acosh; positive for the logarithms and rsqrt; away from 0 for reciprocal)
  const auto unit = [](const tg::Shape& s, uint64_t seed) {
    return Tensor(tg::prim::mul(tg::tanh(randn64(s, seed, false)).data(), 0.9), true);
  };
  const auto above_one = [](const tg::Shape& s, uint64_t seed) {
    return Tensor(tg::prim::add(away_from_zero(s, seed, 0.2, true).data(), tg::prim::full({}, 1.0, tg::kFloat64)), true);
  };
  t["sin"] = [] { return unary_samples([](auto& a) { return tg::sin(a); }, normal()); };
  t["cos"] = [] { return unary_samples([](auto& a) { return tg::cos(a); }, normal()); };
  t["tan"] = [unit] { return unary_samples([](auto& a) { return tg::tan(a); }, unit); };
  t["asin"] = [unit] { return unary_samples([](auto& a) { return tg::asin(a); }, unit); };
  t["acos"] = [unit] { return unary_samples([](auto& a) { return tg::acos(a); }, unit); };
  t["atan"] = [] { return unary_samples([](auto& a) { return tg::atan(a); }, normal()); };
  t["sinh"] = [] { return unary_samples([](auto& a) { return tg::sinh(a); }, normal()); };
  t["cosh"] = [] { return unary_samples([](auto& a) { return tg::cosh(a); }, normal()); };
  t["asinh"] = [] { return unary_samples([](auto& a) { return tg::asinh(a); }, normal()); };
  t["acosh"] = [above_one] { return unary_samples([](auto& a) { return tg::acosh(a); }, above_one); };
  t["atanh"] = [unit] { return unary_samples([](auto& a) { return tg::atanh(a); }, unit); };
  t["erf"] = [] { return unary_samples([](auto& a) { return tg::erf(a); }, normal()); };
  t["erfc"] = [] { return unary_samples([](auto& a) { return tg::erfc(a); }, normal()); };
  t["log1p"] = [] { return unary_samples([](auto& a) { return tg::log1p(a); }, positive()); };
  t["expm1"] = [] { return unary_samples([](auto& a) { return tg::expm1(a); }, normal()); };
  t["log2"] = [] { return unary_samples([](auto& a) { return tg::log2(a); }, positive()); };
  t["log10"] = [] { return unary_samples([](auto& a) { return tg::log10(a); }, positive()); };
  t["rsqrt"] = [] { return unary_samples([](auto& a) { return tg::rsqrt(a); }, positive()); };
  t["reciprocal"] = [] { return unary_samples([](auto& a) { return tg::reciprocal(a); }, nonzero(0.5)); };
  t["square"] = [] { return unary_samples([](auto& a) { return tg::square(a); }, normal()); };
  t["floor"] = [] { return unary_samples([](auto& a) { return tg::floor(a); }, normal()); };
  t["ceil"] = [] { return unary_samples([](auto& a) { return tg::ceil(a); }, normal()); };
  t["trunc"] = [] { return unary_samples([](auto& a) { return tg::trunc(a); }, normal()); };
  t["frac"] = [] { return unary_samples([](auto& a) { return tg::frac(a); }, normal()); };
  t["round"] = [] { return unary_samples([](auto& a) { return tg::round(a); }, normal()); };
  t["sign"] = [] { return unary_samples([](auto& a) { return tg::sign(a); }, nonzero()); };
  // ---- sorting: randn inputs have no ties; tanh after the selection gives non-constant weights
  t["sort"] = [] {
    auto s = unary_samples([](auto& a) { return tg::tanh(tg::sort(a).values); }, normal());
    for (auto& x : unary_samples([](auto& a) { return tg::tanh(tg::sort(a, 0, true).values); }, normal())) s.push_back(x);
    return s;
  };
  t["topk"] = [] {
    auto s = unary_samples([](auto& a) { return tg::tanh(tg::topk(a, 1).values); }, normal());
    Fn k2 = [](const std::vector<Tensor>& in) { return tg::tanh(tg::topk(in[0], 2, 0, false).values); };
    s.push_back({"k 2 smallest along dim 0 of (5, 3)", {randn64({5, 3}, 61)}, k2});
    return s;
  };
  t["kthvalue"] = [] {
    auto s = unary_samples([](auto& a) { return tg::tanh(tg::kthvalue(a, 1).values); }, normal());
    Fn k3 = [](const std::vector<Tensor>& in) { return tg::tanh(tg::kthvalue(in[0], 3, 1, true).values); };
    s.push_back({"k 3 along dim 1 keepdim of (4, 5)", {randn64({4, 5}, 62)}, k3});
    return s;
  };
  t["where"] = [] {
    auto cond = [](const tg::Shape& s, uint64_t seed) { return Tensor((randn64(s, seed, false) > 0.0).data()); };
    Fn f = [](const std::vector<Tensor>& in) { return tg::where(in[0], in[1], in[2]); };
    return std::vector<Sample>{{"same shape (3, 4)", {cond({3, 4}, 1), randn64({3, 4}, 2), randn64({3, 4}, 3)}, f},
                               {"broadcast cond (4), a (3, 4), b 0-d", {cond({4}, 4), randn64({3, 4}, 5), randn64({}, 6)}, f},
                               {"zero-size", {cond({0, 2}, 7), randn64({0, 2}, 8), randn64({2}, 9)}, f}};
  };
  // ---- reductions
  t["sum"] = [] {
    auto s = unary_samples([](auto& a) { return tg::sum(a); }, normal());
    for (auto& x : unary_samples([](auto& a) { return a.dim() ? tg::sum(a, -1) : tg::sum(a, 0); }, normal())) s.push_back(x);
    Fn keep = [](const std::vector<Tensor>& in) { return tg::sum(in[0], 0, true); };
    s.push_back({"dim 0 keepdim (3, 4)", {randn64({3, 4}, 30)}, keep});
    s.push_back({"dim 0 keepdim non-contiguous", {transposed64(3, 4, 31)}, keep});
    return s;
  };
  t["mean"] = [] {
    auto s = unary_samples([](auto& a) { return a.numel() ? tg::mean(a) : tg::sum(a); }, normal());
    Fn d1 = [](const std::vector<Tensor>& in) { return tg::mean(in[0], 1); };
    Fn d0k = [](const std::vector<Tensor>& in) { return tg::mean(in[0], 0, true); };
    s.push_back({"dim 1 (3, 5)", {randn64({3, 5}, 32)}, d1});
    s.push_back({"dim 1 non-contiguous", {transposed64(3, 5, 33)}, d1});
    s.push_back({"dim 0 keepdim (2, 3, 4)", {randn64({2, 3, 4}, 34)}, d0k});
    s.push_back({"dim 1 zero rows (0, 3)", {randn64({0, 3}, 35)}, d1});
    return s;
  };
  for (const char* which : {"max", "min"}) {
    const bool is_max = std::string(which) == "max";
    t[which] = [is_max] {
      auto all = [is_max](const Tensor& a) { return is_max ? tg::max(a) : tg::min(a); };
      auto dim = [is_max](const Tensor& a, int64_t d, bool k) { return is_max ? tg::max(a, d, k) : tg::min(a, d, k); };
      Fn f_all = [all](const std::vector<Tensor>& in) { return all(in[0]); };
      Fn f_d1 = [dim](const std::vector<Tensor>& in) { return dim(in[0], 1, false); };
      Fn f_d0k = [dim](const std::vector<Tensor>& in) { return dim(in[0], 0, true); };
      return std::vector<Sample>{{"all (3, 4)", {randn64({3, 4}, 40)}, f_all},
                                 {"all 0-d", {randn64({}, 41)}, f_all},
                                 {"dim 1 (3, 5)", {randn64({3, 5}, 42)}, f_d1},
                                 {"dim 1 non-contiguous", {transposed64(3, 5, 43)}, f_d1},
                                 {"dim 0 keepdim (4, 2, 3)", {randn64({4, 2, 3}, 44)}, f_d0k},
                                 {"dim 1 of (0, 3): empty result", {randn64({0, 3}, 45)}, f_d1}};
    };
  }
  // ---- splitting (ops/slicing.cpp): the pieces weighted differently and flattened into one output, so
  // that a piece sent to the wrong positions changes the Jacobian
  const auto pieces = [](const std::vector<Tensor>& ps) {
    std::vector<Tensor> flat;
    for (std::size_t i = 0; i < ps.size(); ++i) flat.push_back(tg::reshape(ps[i] * (1.0 + static_cast<double>(i)), {-1}));
    return tg::cat(flat, 0);
  };
  t["split"] = [pieces] {
    Fn by3 = [pieces](const std::vector<Tensor>& in) { return pieces(tg::split(in[0], 3, 0)); };
    Fn sizes = [pieces](const std::vector<Tensor>& in) { return pieces(tg::split(in[0], {1, 3, 1}, -1)); };
    return std::vector<Sample>{{"(7, 5) by 3 along 0", {randn64({7, 5}, 300)}, by3},
                               {"sizes {1, 3, 1} along -1, non-contiguous", {transposed64(4, 5, 301)}, sizes}};
  };
  t["split_with_sizes"] = [pieces] {
    Fn f = [pieces](const std::vector<Tensor>& in) { return pieces(tg::split_with_sizes(in[0], {2, 0, 3}, 1)); };
    return std::vector<Sample>{{"(3, 5) sizes {2, 0, 3} along 1", {randn64({3, 5}, 302)}, f}};
  };
  t["chunk"] = [pieces] {
    Fn f = [pieces](const std::vector<Tensor>& in) { return pieces(tg::chunk(in[0], 4, 0)); };
    Fn g = [pieces](const std::vector<Tensor>& in) { return pieces(tg::chunk(in[0], 2, 2)); };
    return std::vector<Sample>{{"(7, 3) in 4 chunks: 2, 2, 2, 1", {randn64({7, 3}, 303)}, f},
                               {"(2, 3, 5) in 2 along 2", {randn64({2, 3, 5}, 304)}, g}};
  };
  t["unbind"] = [pieces] {
    Fn f = [pieces](const std::vector<Tensor>& in) { return pieces(tg::unbind(in[0], 1)); };
    return std::vector<Sample>{{"(3, 4) along 1", {randn64({3, 4}, 305)}, f},
                               {"non-contiguous (4, 3) along 1", {transposed64(4, 3, 306)}, f}};
  };
  // ---- more reductions (ops/reduce.cpp, ops/scan.cpp); inputs away from ties and kinks
  t["amax"] = [] {
    Fn d02 = [](const std::vector<Tensor>& in) { return tg::amax(in[0], {0, 2}); };
    Fn all = [](const std::vector<Tensor>& in) { return tg::amax(in[0]); };
    Fn k1 = [](const std::vector<Tensor>& in) { return tg::amax(in[0], 1, true); };
    return std::vector<Sample>{{"dims {0, 2} of (3, 4, 2)", {randn64({3, 4, 2}, 310)}, d02},
                               {"all (3, 4)", {randn64({3, 4}, 311)}, all},
                               {"dim 1 keepdim non-contiguous", {transposed64(3, 5, 312)}, k1}};
  };
  t["amin"] = [] {
    Fn d1 = [](const std::vector<Tensor>& in) { return tg::amin(in[0], {-1}); };
    return std::vector<Sample>{{"dim -1 of (3, 4)", {randn64({3, 4}, 313)}, d1}};
  };
  t["logsumexp"] = [] {
    Fn d1 = [](const std::vector<Tensor>& in) { return tg::logsumexp(in[0], 1); };
    Fn d02k = [](const std::vector<Tensor>& in) { return tg::logsumexp(in[0], {0, 2}, true); };
    Fn all = [](const std::vector<Tensor>& in) { return tg::logsumexp(in[0], {}); };
    return std::vector<Sample>{{"dim 1 (3, 5)", {randn64({3, 5}, 314)}, d1},
                               {"dims {0, 2} keepdim (2, 3, 4)", {randn64({2, 3, 4}, 315)}, d02k},
                               {"all, non-contiguous", {transposed64(4, 3, 316)}, all},
                               {"0-d", {randn64({}, 317)}, all}};
  };
  t["var"] = [] {
    Fn all = [](const std::vector<Tensor>& in) { return tg::var(in[0]); };
    Fn d1 = [](const std::vector<Tensor>& in) { return tg::var(in[0], 1, false, true); };
    Fn c2 = [](const std::vector<Tensor>& in) { return tg::var(in[0], {0, 2}, 2); };
    return std::vector<Sample>{{"all (3, 4)", {randn64({3, 4}, 318)}, all},
                               {"dim 1 biased keepdim, non-contiguous", {transposed64(4, 5, 319)}, d1},
                               {"dims {0, 2} correction 2 (3, 2, 4)", {randn64({3, 2, 4}, 320)}, c2}};
  };
  t["std"] = [] {
    Fn all = [](const std::vector<Tensor>& in) { return tg::std(in[0]); };
    Fn d0 = [](const std::vector<Tensor>& in) { return tg::std(in[0], 0, true, false); };
    Fn c0 = [](const std::vector<Tensor>& in) { return tg::std(in[0], {1}, 0, true); };
    return std::vector<Sample>{{"all (3, 4)", {randn64({3, 4}, 321)}, all},
                               {"dim 0 (5, 3)", {randn64({5, 3}, 322)}, d0},
                               {"dim 1 correction 0 keepdim", {randn64({2, 6}, 323)}, c0}};
  };
  t["norm"] = [] {
    Fn two = [](const std::vector<Tensor>& in) { return tg::norm(in[0]); };
    Fn one = [](const std::vector<Tensor>& in) { return tg::norm(in[0], 1, 1); };
    Fn inf = [](const std::vector<Tensor>& in) { return tg::norm(in[0], INFINITY, {0}, true); };
    Fn three = [](const std::vector<Tensor>& in) { return tg::norm(in[0], 3, {0, 1}); };
    Fn half = [](const std::vector<Tensor>& in) { return tg::norm(in[0], 0.5, 1); };
    Fn minus_inf = [](const std::vector<Tensor>& in) { return tg::norm(in[0], -INFINITY, 1); };
    return std::vector<Sample>{{"p 2 all (3, 4)", {randn64({3, 4}, 324)}, two},
                               {"p 1 dim 1 (away from 0)", {nonzero()({3, 4}, 325)}, one},
                               {"p inf dim 0 keepdim", {randn64({4, 3}, 326)}, inf},
                               {"p 3 dims {0, 1} of (2, 3, 2)", {randn64({2, 3, 2}, 327)}, three},
                               {"p 0.5 dim 1 (away from 0)", {nonzero()({3, 4}, 328)}, half},
                               {"p -inf dim 1 (away from 0)", {nonzero()({3, 4}, 329)}, minus_inf}};
  };
  t["prod"] = [] {
    Fn all = [](const std::vector<Tensor>& in) { return tg::prod(in[0]); };
    Fn d1 = [](const std::vector<Tensor>& in) { return tg::prod(in[0], 1); };
    Fn d0k = [](const std::vector<Tensor>& in) { return tg::prod(in[0], 0, true); };
    // a zero at [1][2]: the finite differences see the product of the others there, 0 elsewhere in its row
    Tensor z = randn64({3, 5}, 333, false);
    {
      tg::NoGradGuard g;
      z.index({1, 2}) = 0.0;
    }
    return std::vector<Sample>{{"all (3, 4)", {randn64({3, 4}, 330)}, all},
                               {"dim 1 (odd 7 columns)", {randn64({3, 7}, 331)}, d1},
                               {"dim 0 keepdim non-contiguous", {transposed64(5, 3, 332)}, d0k},
                               {"dim 1 with a zero", {Tensor(z.data(), true)}, d1},
                               {"0-d", {randn64({}, 334)}, all}};
  };
  t["cumsum"] = [] {
    Fn d1 = [](const std::vector<Tensor>& in) { return tg::cumsum(in[0], 1); };
    Fn d0 = [](const std::vector<Tensor>& in) { return tg::cumsum(in[0], 0); };
    return std::vector<Sample>{{"dim 1 (3, 9)", {randn64({3, 9}, 335)}, d1},
                               {"dim 0 non-contiguous", {transposed64(6, 4, 336)}, d0},
                               {"0-d", {randn64({}, 337)}, d0}};
  };
  t["cumprod"] = [] {
    Fn d1 = [](const std::vector<Tensor>& in) { return tg::cumprod(in[0], 1); };
    Fn d0 = [](const std::vector<Tensor>& in) { return tg::cumprod(in[0], 0); };
    Tensor z = randn64({2, 9}, 340, false);
    {
      tg::NoGradGuard g;
      z.index({0, 3}) = 0.0;
      z.index({1, 2}) = 0.0;
      z.index({1, 6}) = 0.0;
    }
    return std::vector<Sample>{{"dim 1 (3, 9)", {randn64({3, 9}, 338)}, d1},
                               {"dim 0 non-contiguous", {transposed64(6, 4, 339)}, d0},
                               {"dim 1 with zeros (one and two per row)", {Tensor(z.data(), true)}, d1}};
  };
  // ---- rearranging (ops/shape.cpp)
  t["flip"] = [] {
    Fn f = [](const std::vector<Tensor>& in) { return tg::flip(in[0], {0, 2}); };
    Fn g = [](const std::vector<Tensor>& in) { return tg::flip(in[0], {-1}); };
    return std::vector<Sample>{{"dims {0, 2} of (2, 3, 4)", {randn64({2, 3, 4}, 341)}, f},
                               {"dim -1 non-contiguous", {transposed64(3, 4, 342)}, g}};
  };
  t["roll"] = [] {
    Fn f = [](const std::vector<Tensor>& in) { return tg::roll(in[0], {-2, 5}, {1, 2}); };
    Fn flat = [](const std::vector<Tensor>& in) { return tg::roll(in[0], 4); };
    return std::vector<Sample>{{"shifts {-2, 5} dims {1, 2} of (2, 3, 4)", {randn64({2, 3, 4}, 343)}, f},
                               {"flattened, non-contiguous", {transposed64(3, 4, 344)}, flat}};
  };
  t["repeat"] = [] {
    Fn f = [](const std::vector<Tensor>& in) { return tg::repeat(in[0], {2, 1, 3}); };
    return std::vector<Sample>{{"(2, 3) to (2, 2, 9)", {randn64({2, 3}, 345)}, f},
                               {"non-contiguous", {transposed64(2, 3, 346)}, f}};
  };
  t["repeat_interleave"] = [] {
    Fn f = [](const std::vector<Tensor>& in) { return tg::repeat_interleave(in[0], 3, 1); };
    Fn flat = [](const std::vector<Tensor>& in) { return tg::repeat_interleave(in[0], 2); };
    return std::vector<Sample>{{"3 along 1 of (2, 3)", {randn64({2, 3}, 347)}, f},
                               {"2 flattened, non-contiguous", {transposed64(2, 3, 348)}, flat}};
  };
  // ---- linear algebra
  t["matmul"] = [] {
    Fn f = [](const std::vector<Tensor>& in) { return tg::matmul(in[0], in[1]); };
    return std::vector<Sample>{{"(3, 4) @ (4, 5)", {randn64({3, 4}, 50), randn64({4, 5}, 51)}, f},
                               {"transposed views", {transposed64(3, 4, 52), transposed64(4, 2, 53)}, f},
                               {"batched (2, 3, 4) @ (2, 4, 5)", {randn64({2, 3, 4}, 54), randn64({2, 4, 5}, 55)}, f},
                               {"batched (2, 3, 4) @ (4, 2)", {randn64({2, 3, 4}, 56), randn64({4, 2}, 57)}, f},
                               {"(3, 4) @ batched (2, 4, 2)", {randn64({3, 4}, 58), randn64({2, 4, 2}, 59)}, f},
                               {"K = 0", {randn64({3, 0}, 60), randn64({0, 2}, 61)}, f},
                               {"M = 0", {randn64({0, 4}, 62), randn64({4, 2}, 63)}, f},
                               {"1-D @ 1-D: dot", {randn64({4}, 1100), randn64({4}, 1101)}, f},
                               {"(3, 4) @ 1-D", {transposed64(3, 4, 1102), randn64({4}, 1103)}, f},
                               {"1-D @ (4, 5)", {randn64({4}, 1104), randn64({4, 5}, 1105)}, f},
                               {"(2, 2, 3, 4) @ 1-D", {randn64({2, 2, 3, 4}, 1106), randn64({4}, 1107)}, f},
                               {"1-D @ (2, 4, 3)", {randn64({4}, 1108), randn64({2, 4, 3}, 1109)}, f},
                               {"(2, 2, 3, 4) @ (4, 2): folded", {randn64({2, 2, 3, 4}, 1110), randn64({4, 2}, 1111)}, f},
                               {"(1, 3, 4) @ (2, 2, 4, 2)", {randn64({1, 3, 4}, 1112), randn64({2, 2, 4, 2}, 1113)}, f},
                               {"broadcast (2, 1, 2, 3, 2) @ (3, 1, 2, 4)", {randn64({2, 1, 2, 3, 2}, 1114), randn64({3, 1, 2, 4}, 1115)}, f}};
  };
  t["mm"] = [] {
    Fn f = [](const std::vector<Tensor>& in) { return tg::mm(in[0], in[1]); };
    return std::vector<Sample>{{"(3, 4) @ (4, 5)", {randn64({3, 4}, 1116), randn64({4, 5}, 1117)}, f},
                               {"transposed views", {transposed64(3, 4, 1118), transposed64(4, 2, 1119)}, f}};
  };
  t["bmm"] = [] {
    Fn f = [](const std::vector<Tensor>& in) { return tg::bmm(in[0], in[1]); };
    return std::vector<Sample>{{"(2, 3, 4) @ (2, 4, 5)", {randn64({2, 3, 4}, 1120), randn64({2, 4, 5}, 1121)}, f},
                               {"zero batch", {randn64({0, 3, 4}, 1122), randn64({0, 4, 5}, 1123)}, f}};
  };
  t["dot"] = [] {
    Fn f = [](const std::vector<Tensor>& in) { return tg::dot(in[0], in[1]); };
    return std::vector<Sample>{{"(5) . (5)", {randn64({5}, 1124), randn64({5}, 1125)}, f},
                               {"empty", {randn64({0}, 1126), randn64({0}, 1127)}, f}};
  };
  t["outer"] = [] {
    Fn f = [](const std::vector<Tensor>& in) { return tg::outer(in[0], in[1]); };
    return std::vector<Sample>{{"(3) x (4)", {randn64({3}, 1128), randn64({4}, 1129)}, f}};
  };
  t["einsum"] = [] {
    auto eq = [](const std::string& equation) {
      return Fn([equation](const std::vector<Tensor>& in) { return tg::einsum(equation, in); });
    };
    return std::vector<Sample>{
        {"ij,jk->ik", {randn64({2, 3}, 1130), transposed64(3, 4, 1131)}, eq("ij,jk->ik")},
        {"bij,bjk->bik", {randn64({2, 3, 4}, 1132), randn64({2, 4, 2}, 1133)}, eq("bij,bjk->bik")},
        {"trace ii->", {randn64({3, 3}, 1134)}, eq("ii->")},
        {"diagonal ii->i", {transposed64(3, 3, 1135)}, eq("ii->i")},
        {"ij->ji", {randn64({2, 3}, 1136)}, eq("ij->ji")},
        {"i,j->ij", {randn64({3}, 1137), randn64({4}, 1138)}, eq("i,j->ij")},
        {"bilinear bn,anm,bm->ba", {randn64({2, 3}, 1139), randn64({2, 3, 4}, 1140), randn64({2, 4}, 1141)}, eq("bn,anm,bm->ba")},
        {"...ij,...jk->...ik", {randn64({2, 1, 2, 3}, 1142), randn64({3, 3, 2}, 1143)}, eq("...ij,...jk->...ik")},
        {"implicit ij,jk", {randn64({2, 3}, 1144), randn64({3, 2}, 1145)}, eq("ij,jk")},
        {"ij->", {randn64({2, 3}, 1146)}, eq("ij->")},
        {"iij->ji", {randn64({2, 2, 3}, 1147)}, eq("iij->ji")},
        {"i,i->i with a size-1 broadcast", {randn64({1}, 1148), randn64({3}, 1149)}, eq("i,i->i")}};
  };
  t["linear"] = [] {
    Fn f = [](const std::vector<Tensor>& in) { return tg::linear(in[0], in[1], in[2]); };
    Fn nb = [](const std::vector<Tensor>& in) { return tg::linear(in[0], in[1]); };
    return std::vector<Sample>{{"x (3, 4), W (5, 4), b (5)", {randn64({3, 4}, 64), randn64({5, 4}, 65), randn64({5}, 66)}, f},
                               {"x (2, 3, 4) batched rows", {randn64({2, 3, 4}, 67), randn64({5, 4}, 68), randn64({5}, 69)}, f},
                               {"x non-contiguous", {transposed64(3, 4, 70), randn64({2, 4}, 71), randn64({2}, 72)}, f},
                               {"no bias", {randn64({3, 4}, 73), randn64({2, 4}, 74)}, nb},
                               {"x 1-D", {randn64({4}, 75), randn64({3, 4}, 76), randn64({3}, 77)}, f},
                               {"zero rows", {randn64({0, 4}, 78), randn64({3, 4}, 79), randn64({3}, 80)}, f}};
  };
  // ---- views and shape. Each follows the view with a non-linear op so that the gradient's layout matters.
  auto viewed = [](std::function<Tensor(const Tensor&)> op) {
    return [op](const std::vector<Tensor>& in) {
      Tensor y = op(in[0]);
      return y * y;
    };
  };
  auto view_samples = [viewed](std::function<Tensor(const Tensor&)> op, tg::Shape shape, bool allow_nc) {
    std::vector<Sample> s{{"contiguous " + tg::shape_str(shape), {randn64(shape, 90)}, viewed(op)}};
    if (allow_nc && shape.size() == 2) s.push_back({"non-contiguous", {transposed64(shape[0], shape[1], 91)}, viewed(op)});
    return s;
  };
  t["reshape"] = [view_samples] {
    auto s = view_samples([](auto& a) { return tg::reshape(a, {-1}); }, {3, 4}, true);
    for (auto& x : view_samples([](auto& a) { return tg::reshape(a, {2, 3}); }, {6}, false)) s.push_back(x);
    for (auto& x : view_samples([](auto& a) { return tg::reshape(a, {1}); }, {}, false)) s.push_back(x);
    for (auto& x : view_samples([](auto& a) { return tg::reshape(a, {3, 0}); }, {0, 3}, false)) s.push_back(x);
    return s;
  };
  t["view"] = [view_samples] {
    auto s = view_samples([](auto& a) { return tg::view(a, {4, 3}); }, {3, 4}, false);
    for (auto& x : view_samples([](auto& a) { return tg::view(a, {2, 2, 3}); }, {4, 3}, false)) s.push_back(x);
    return s;
  };
  t["transpose"] = [view_samples] {
    auto s = view_samples([](auto& a) { return tg::transpose(a, 0, 1); }, {3, 4}, true);
    for (auto& x : view_samples([](auto& a) { return tg::transpose(a, -1, 0); }, {2, 3, 4}, false)) s.push_back(x);
    return s;
  };
  t["t"] = [view_samples] {
    auto s = view_samples([](auto& a) { return tg::t(a); }, {3, 4}, true);
    for (auto& x : view_samples([](auto& a) { return tg::t(a); }, {5}, false)) s.push_back(x);
    return s;
  };
  t["permute"] = [view_samples] { return view_samples([](auto& a) { return tg::permute(a, {2, 0, 1}); }, {2, 3, 4}, false); };
  t["squeeze"] = [view_samples] {
    auto s = view_samples([](auto& a) { return tg::squeeze(a); }, {3, 1, 4}, false);
    for (auto& x : view_samples([](auto& a) { return tg::squeeze(a, 1); }, {3, 1, 4}, false)) s.push_back(x);
    return s;
  };
  t["unsqueeze"] = [view_samples] {
    auto s = view_samples([](auto& a) { return tg::unsqueeze(a, 1); }, {3, 4}, true);
    for (auto& x : view_samples([](auto& a) { return tg::unsqueeze(a, 0); }, {}, false)) s.push_back(x);
    return s;
  };
  t["expand"] = [view_samples] {
    auto s = view_samples([](auto& a) { return tg::expand(a, {2, 3, 4}); }, {3, 1}, false);
    for (auto& x : view_samples([](auto& a) { return tg::expand(a, {5}); }, {}, false)) s.push_back(x);
    return s;
  };
  t["contiguous"] = [view_samples] { return view_samples([](auto& a) { return tg::contiguous(a); }, {3, 4}, true); };
  t["clone"] = [view_samples] { return view_samples([](auto& a) { return tg::clone(a); }, {3, 4}, true); };
  t["flatten"] = [view_samples] {
    auto s = view_samples([](auto& a) { return tg::flatten(a); }, {2, 3, 4}, false);
    for (auto& x : view_samples([](auto& a) { return tg::flatten(a, 1); }, {4, 3}, true)) s.push_back(x);
    return s;
  };
  t["cat"] = [] {
    Fn f0 = [](const std::vector<Tensor>& in) { return tg::cat(in, 0) * tg::cat(in, 0); };
    Fn f1 = [](const std::vector<Tensor>& in) { return tg::tanh(tg::cat(in, 1)); };
    return std::vector<Sample>{{"dim 0: (2, 3), (4, 3), (1, 3)", {randn64({2, 3}, 100), randn64({4, 3}, 101), randn64({1, 3}, 102)}, f0},
                               {"dim 1 with a non-contiguous input", {randn64({3, 2}, 103), transposed64(3, 4, 104)}, f1},
                               {"with a zero-size part", {randn64({0, 3}, 105), randn64({2, 3}, 106)}, f0},
                               {"one input without grad", {randn64({2, 3}, 107), randn64({2, 3}, 108, false)}, f0}};
  };
  t["stack"] = [] {
    Fn f0 = [](const std::vector<Tensor>& in) { return tg::tanh(tg::stack(in, 0)); };
    Fn f2 = [](const std::vector<Tensor>& in) { return tg::tanh(tg::stack(in, -1)); };
    return std::vector<Sample>{{"dim 0: 3 x (2, 3)", {randn64({2, 3}, 110), randn64({2, 3}, 111), randn64({2, 3}, 112)}, f0},
                               {"last dim", {randn64({2, 3}, 113), transposed64(2, 3, 114)}, f2},
                               {"0-d inputs", {randn64({}, 115), randn64({}, 116)}, f0}};
  };
  // ---- indexing
  t["index_select"] = [] {
    Tensor idx = tg::from_vector(std::vector<int64_t>{2, 0, 2, 1}, {4});
    Fn d0 = [idx](const std::vector<Tensor>& in) { return tg::tanh(tg::index_select(in[0], 0, idx)); };
    Fn d1 = [idx](const std::vector<Tensor>& in) { return tg::tanh(tg::index_select(in[0], 1, idx)); };
    Tensor empty_idx = tg::from_vector(std::vector<int64_t>{}, {0});
    Fn e = [empty_idx](const std::vector<Tensor>& in) { return tg::index_select(in[0], 0, empty_idx); };
    return std::vector<Sample>{{"dim 0 with repeats", {randn64({3, 4}, 120)}, d0},
                               {"dim 1 non-contiguous", {transposed64(2, 3, 121)}, d1},
                               {"empty index", {randn64({3, 2}, 122)}, e}};
  };
  t["embedding"] = [] {
    Tensor ids = tg::from_vector(std::vector<int64_t>{2, 0, 2, 4, 1, 2}, {2, 3});
    Fn plain = [ids](const std::vector<Tensor>& in) { return tg::tanh(tg::embedding(ids, in[0])); };
    // padding_idx -2 (row 3, which ids never read): the other rows' gradients are unchanged. The padding
    // row's own gradient is 0 by definition, not the derivative, so it is checked in test_layers.cpp.
    Fn pad = [ids](const std::vector<Tensor>& in) { return tg::tanh(tg::embedding(ids, in[0], -2)); };
    Tensor empty = tg::from_vector(std::vector<int64_t>{}, {0, 4});
    Fn e = [empty](const std::vector<Tensor>& in) { return tg::embedding(empty, in[0]); };
    return std::vector<Sample>{{"(2, 3) indices with repeats", {randn64({5, 3}, 123)}, plain},
                               {"padding_idx -2", {randn64({5, 3}, 124)}, pad},
                               {"non-contiguous weight", {transposed64(5, 3, 125)}, plain},
                               {"empty (0, 4) indices", {randn64({5, 2}, 126)}, e}};
  };
  t["gather"] = [] {
    Tensor idx = tg::from_vector(std::vector<int64_t>{0, 2, 2, 1, 0, 0}, {3, 2});
    Fn d1 = [idx](const std::vector<Tensor>& in) { return tg::tanh(tg::gather(in[0], 1, idx)); };
    Tensor idx0 = tg::from_vector(std::vector<int64_t>{1, 0, 1}, {1, 3});
    Fn d0 = [idx0](const std::vector<Tensor>& in) { return tg::tanh(tg::gather(in[0], 0, idx0)); };
    return std::vector<Sample>{{"dim 1 with repeats", {randn64({3, 4}, 123)}, d1},
                               {"dim 0 non-contiguous", {transposed64(2, 3, 124)}, d0}};
  };
  t["scatter_add"] = [] {
    Tensor idx = tg::from_vector(std::vector<int64_t>{0, 2, 2, 1, 0, 3}, {2, 3});
    Fn d1 = [idx](const std::vector<Tensor>& in) { return tg::tanh(tg::scatter_add(in[0], 1, idx, in[1])); };
    return std::vector<Sample>{{"dim 1 with repeats", {randn64({3, 4}, 125), randn64({2, 3}, 126)}, d1},
                               {"src larger than index", {randn64({3, 4}, 127), randn64({3, 5}, 128)}, d1}};
  };
  t["index_add"] = [] {
    Tensor idx = tg::from_vector(std::vector<int64_t>{2, 0, 2}, {3});
    Fn d0 = [idx](const std::vector<Tensor>& in) { return tg::tanh(tg::index_add(in[0], 0, idx, in[1], -1.5)); };
    Fn d1 = [idx](const std::vector<Tensor>& in) { return tg::tanh(tg::index_add(in[0], 1, idx, in[1])); };
    return std::vector<Sample>{{"dim 0 with a repeat, alpha -1.5", {randn64({3, 4}, 129), randn64({3, 4}, 130)}, d0},
                               {"dim 1", {randn64({2, 3}, 131), randn64({2, 3}, 132)}, d1}};
  };
  t["index_put"] = [] {
    using tg::TensorIndex;
    const Tensor rows = tg::from_vector(std::vector<int64_t>{2, 0, -1}, {3});
    const Tensor dup = tg::from_vector(std::vector<int64_t>{1, 3, 1, 0, 1}, {5});
    const Tensor mask = Tensor((tg::from_vector(std::vector<int64_t>{1, 0, 1, 1, 0, 0, 1, 0, 1, 0, 0, 1}, {3, 4}) != 0.0).data());
    const Tensor i0 = tg::from_vector(std::vector<int64_t>{0, 2}, {2, 1}), i1 = tg::from_vector(std::vector<int64_t>{1, 3, 0}, {3});
    Fn put = [rows](const std::vector<Tensor>& in) { return tg::tanh(tg::index_put(in[0], {rows}, in[1])); };
    Fn acc = [dup](const std::vector<Tensor>& in) { return tg::tanh(tg::index_put(in[0], {dup}, in[1], true)); };
    Fn masked = [mask](const std::vector<Tensor>& in) { return tg::tanh(tg::index_put(in[0], {mask}, in[1])); };
    Fn pair = [i0, i1](const std::vector<Tensor>& in) {
      return tg::tanh(tg::index_put(in[0], {i0, i1, tg::Slice()}, in[1], true));
    };
    // a repeated position without accumulate: the last value is written, the earlier one gets no gradient
    Fn last = [dup](const std::vector<Tensor>& in) { return tg::tanh(tg::index_put(in[0], {dup}, in[1])); };
    // index Tensors mixed with slices and integers: x[:, i] += v with repeats, x[i0, 1:, i1] = v
    const Tensor cols = tg::from_vector(std::vector<int64_t>{2, 0, 2}, {3});
    Fn mixed_acc = [cols](const std::vector<Tensor>& in) {
      return tg::tanh(tg::index_put(in[0], {tg::Slice(), cols}, in[1], true));
    };
    Fn mixed_put = [i0, i1](const std::vector<Tensor>& in) {
      return tg::tanh(tg::index_put(in[0], {i0, tg::Slice(1, tg::indexing::None), i1.narrow(0, 0, 1)}, in[1]));
    };
    return std::vector<Sample>{{"int (3) rows of (4, 3), values (3, 3)", {randn64({4, 3}, 260), randn64({3, 3}, 261)}, put},
                               {"x[:, i] with repeats, accumulate", {randn64({2, 4}, 1302), randn64({2, 3}, 1303)}, mixed_acc},
                               {"x[i0, 1:, i1] non-adjacent", {randn64({3, 3, 4}, 1304), randn64({2, 1, 2}, 1305)}, mixed_put},
                               {"accumulate with repeats, values (5, 1)", {randn64({4, 2}, 262), randn64({5, 1}, 263)}, acc},
                               {"mask (3, 4), 0-d value, non-contiguous x", {transposed64(3, 4, 264), randn64({}, 265)}, masked},
                               {"int (2, 1) and (3) broadcast, then Slice(), accumulate", {randn64({3, 4, 2}, 266), randn64({3, 2}, 267)}, pair},
                               {"repeats without accumulate", {randn64({4, 2}, 268), randn64({5, 2}, 269)}, last}};
  };
  // ---- nn functions
  t["softmax"] = [] {
    Fn last = [](const std::vector<Tensor>& in) { return tg::softmax(in[0], -1); };
    Fn first = [](const std::vector<Tensor>& in) { return tg::softmax(in[0], 0); };
    return std::vector<Sample>{{"(3, 5) last dim", {randn64({3, 5}, 130)}, last},
                               {"(4, 3, 2) dim 0", {randn64({4, 3, 2}, 131)}, first},
                               {"non-contiguous", {transposed64(3, 4, 132)}, last},
                               {"0-d", {randn64({}, 133)}, last},
                               {"zero rows", {randn64({0, 4}, 134)}, last}};
  };
  t["log_softmax"] = [] {
    Fn last = [](const std::vector<Tensor>& in) { return tg::log_softmax(in[0], -1); };
    Fn mid = [](const std::vector<Tensor>& in) { return tg::log_softmax(in[0], 1); };
    return std::vector<Sample>{{"(3, 5) last dim", {randn64({3, 5}, 135)}, last},
                               {"(2, 3, 4) dim 1", {randn64({2, 3, 4}, 136)}, mid},
                               {"non-contiguous", {transposed64(3, 4, 137)}, last},
                               {"zero rows", {randn64({0, 4}, 138)}, last}};
  };
  t["cross_entropy"] = [] {
    Tensor tgt = tg::from_vector(std::vector<int64_t>{0, 3, 1, 4, 4}, {5});
    Fn mean = [tgt](const std::vector<Tensor>& in) { return tg::cross_entropy(in[0], tgt); };
    Fn sum = [tgt](const std::vector<Tensor>& in) { return tg::cross_entropy(in[0], tgt, tg::Reduction::Sum); };
    Fn none = [tgt](const std::vector<Tensor>& in) { return tg::cross_entropy(in[0], tgt, tg::Reduction::None); };
    Tensor tgt3 = tg::from_vector(std::vector<int64_t>{1, 0, 2}, {3});
    Fn nc = [tgt3](const std::vector<Tensor>& in) { return tg::cross_entropy(in[0], tgt3); };
    Tensor big = randn64({5, 5}, 141, false);
    Tensor big_leaf(tg::prim::mul(big.data(), 1e4), true);   // logits of +-1e4: stable forward and backward
    Tensor tgt_ign = tg::from_vector(std::vector<int64_t>{0, -100, 1, 4, -100}, {5});
    Fn ignored = [tgt_ign](const std::vector<Tensor>& in) { return tg::cross_entropy(in[0], tgt_ign); };
    Fn smooth = [tgt](const std::vector<Tensor>& in) {
      return tg::cross_entropy(in[0], tgt, tg::Reduction::Sum, -100, 0.2);
    };
    Fn both = [tgt_ign](const std::vector<Tensor>& in) {
      return tg::cross_entropy(in[0], tgt_ign, tg::Reduction::None, -100, 0.1);
    };
    Tensor tgt_nd = tg::from_vector(std::vector<int64_t>{0, 2, 1, -100, 2, 2, 0, 1}, {2, 2, 2});
    Fn nd = [tgt_nd](const std::vector<Tensor>& in) {
      return tg::cross_entropy(in[0], tgt_nd, tg::Reduction::Mean, -100, 0.1);
    };
    Fn probabilities = [](const std::vector<Tensor>& in) {   // the target's own gradient too
      return tg::cross_entropy(in[0], tg::softmax(in[1], 1), tg::Reduction::Sum, -100, 0.2);
    };
    const Tensor weight = tg::from_vector(std::vector<double>{0.5, 2.0, 1.0, 1.5, 0.25}, {5});
    Fn weighted = [tgt_ign, weight](const std::vector<Tensor>& in) {
      return tg::cross_entropy(in[0], tgt_ign, weight, tg::Reduction::Mean, -100, 0.1);
    };
    Fn weighted_probabilities = [weight](const std::vector<Tensor>& in) {
      return tg::cross_entropy(in[0], tg::softmax(in[1], 1), weight, tg::Reduction::Mean, -100, 0.2);
    };
    return std::vector<Sample>{{"mean (5, 5)", {randn64({5, 5}, 140)}, mean},
                               {"class weights, ignore_index and label smoothing", {randn64({5, 5}, 138)}, weighted},
                               {"class weights, class probabilities", {randn64({4, 5}, 137), randn64({4, 5}, 136)},
                                weighted_probabilities},
                               {"ignore_index rows", {randn64({5, 5}, 145)}, ignored},
                               {"label smoothing 0.2", {randn64({5, 5}, 146)}, smooth},
                               {"ignore_index and label smoothing", {randn64({5, 5}, 147)}, both},
                               {"sum", {randn64({5, 5}, 142)}, sum},
                               {"none", {randn64({5, 5}, 143)}, none},
                               {"non-contiguous logits", {transposed64(3, 4, 144)}, nc},
                               {"logits of magnitude 1e4", {big_leaf}, sum},
                               {"(N, C, d1, d2) logits", {randn64({2, 3, 2, 2}, 148)}, nd},
                               {"class probabilities, with their gradient", {randn64({3, 4}, 149), randn64({3, 4}, 139)},
                                probabilities}};
  };
  t["mse_loss"] = [] {
    Fn mean = [](const std::vector<Tensor>& in) { return tg::mse_loss(in[0], in[1]); };
    Fn sum = [](const std::vector<Tensor>& in) { return tg::mse_loss(in[0], in[1], tg::Reduction::Sum); };
    Fn none = [](const std::vector<Tensor>& in) { return tg::mse_loss(in[0], in[1], tg::Reduction::None); };
    return std::vector<Sample>{{"mean (3, 4)", {randn64({3, 4}, 150), randn64({3, 4}, 151)}, mean},
                               {"sum, target without grad", {randn64({3, 4}, 152), randn64({3, 4}, 153, false)}, sum},
                               {"none, 0-d", {randn64({}, 154), randn64({}, 155)}, none}};
  };
  // ---- the losses of ops/loss.cpp
  t["nll_loss"] = [] {
    Tensor tgt = tg::from_vector(std::vector<int64_t>{0, 3, -100, 4, 1}, {5});
    Tensor w = tg::from_vector(std::vector<double>{0.5, 1, 2, 1.5, 0.25}, {5});
    Fn mean = [tgt](const std::vector<Tensor>& in) { return tg::nll_loss(in[0], tgt); };
    Fn weighted = [tgt, w](const std::vector<Tensor>& in) { return tg::nll_loss(in[0], tgt, w); };
    Fn none = [tgt, w](const std::vector<Tensor>& in) { return tg::nll_loss(in[0], tgt, w, tg::Reduction::None); };
    Tensor tgt2 = tg::from_vector(std::vector<int64_t>{2, 0, 1, 2, 2, 0}, {2, 3});
    Fn spatial = [tgt2](const std::vector<Tensor>& in) { return tg::nll_loss(in[0], tgt2, Tensor(), tg::Reduction::Sum); };
    return std::vector<Sample>{{"mean (5, 5), an ignored row", {randn64({5, 5}, 300)}, mean},
                               {"class weights", {randn64({5, 5}, 301)}, weighted},
                               {"none with weights", {randn64({5, 5}, 302)}, none},
                               {"(2, 3, 3) input, (2, 3) target, sum", {randn64({2, 3, 3}, 303)}, spatial}};
  };
  t["binary_cross_entropy"] = [] {
    // probabilities in [0.1, 0.9], away from the clamped logs
    auto probs = [](const tg::Shape& s, uint64_t seed, bool grad = true) {
      return Tensor(tg::prim::add(tg::prim::mul(tg::sigmoid(randn64(s, seed, false)).data(), 0.8),
                                  tg::prim::scalar_like(0.1, randn64(s, seed, false).data())), grad);
    };
    Fn mean = [](const std::vector<Tensor>& in) { return tg::binary_cross_entropy(in[0], in[1]); };
    Fn weighted = [](const std::vector<Tensor>& in) {
      return tg::binary_cross_entropy(in[0], in[1], in[2], tg::Reduction::Sum);
    };
    return std::vector<Sample>{{"mean, target with grad", {probs({3, 4}, 310), probs({3, 4}, 311)}, mean},
                               {"sum, weight (4) broadcast", {probs({3, 4}, 312), probs({3, 4}, 313, false),
                                                               randn64({4}, 314)}, weighted}};
  };
  t["binary_cross_entropy_with_logits"] = [] {
    Fn mean = [](const std::vector<Tensor>& in) { return tg::binary_cross_entropy_with_logits(in[0], in[1]); };
    Fn full = [](const std::vector<Tensor>& in) {
      return tg::binary_cross_entropy_with_logits(in[0], in[1], in[2], in[3], tg::Reduction::None);
    };
    Tensor big(tg::prim::mul(randn64({3, 4}, 320, false).data(), 30.0), true);   // stable where |x| is large
    return std::vector<Sample>{{"mean", {randn64({3, 4}, 321), randn64({3, 4}, 322)}, mean},
                               {"logits of +-30", {big, randn64({3, 4}, 323, false)}, mean},
                               {"weight and pos_weight, none", {randn64({3, 4}, 324), randn64({3, 4}, 325),
                                                                 randn64({3, 4}, 326), randn64({4}, 327)}, full}};
  };
  t["l1_loss"] = [] {
    Fn mean = [](const std::vector<Tensor>& in) { return tg::l1_loss(in[0], in[1]); };
    Fn none = [](const std::vector<Tensor>& in) { return tg::l1_loss(in[0], in[1], tg::Reduction::None); };
    return std::vector<Sample>{{"mean", {randn64({3, 4}, 330), randn64({3, 4}, 331)}, mean},
                               {"none", {randn64({5}, 332), randn64({5}, 333)}, none}};
  };
  t["smooth_l1_loss"] = [] {
    Fn beta = [](const std::vector<Tensor>& in) { return tg::smooth_l1_loss(in[0], in[1], tg::Reduction::Sum, 0.7); };
    Fn l1 = [](const std::vector<Tensor>& in) { return tg::smooth_l1_loss(in[0], in[1], tg::Reduction::Mean, 0.0); };
    return std::vector<Sample>{{"beta 0.7, sum", {randn64({4, 5}, 340), randn64({4, 5}, 341)}, beta},
                               {"beta 0 (l1)", {randn64({4, 5}, 342), randn64({4, 5}, 343)}, l1}};
  };
  t["huber_loss"] = [] {
    Fn delta = [](const std::vector<Tensor>& in) { return tg::huber_loss(in[0], in[1], tg::Reduction::Mean, 0.6); };
    return std::vector<Sample>{{"delta 0.6", {randn64({4, 5}, 350), randn64({4, 5}, 351)}, delta}};
  };
  t["pad"] = [] {
    Fn reflect = [](const std::vector<Tensor>& in) { return tg::pad(in[0], {1, 2, 2, 0}, "reflect"); };
    Fn circular = [](const std::vector<Tensor>& in) { return tg::pad(in[0], {2, 1}, "circular"); };
    Fn constant = [](const std::vector<Tensor>& in) { return tg::pad(in[0], {-1, 2, 1, 1}, "constant", 0.5); };
    Fn replicate = [](const std::vector<Tensor>& in) { return tg::pad(in[0], {2, 1, 1, 1}, "replicate"); };
    return std::vector<Sample>{{"reflect (1, 2, 3, 4)", {randn64({1, 2, 3, 4}, 361)}, reflect},
                               {"circular (2, 3)", {randn64({2, 3}, 362)}, circular},
                               {"constant with a crop", {randn64({2, 3}, 363)}, constant},
                               {"replicate (1, 2, 3)", {randn64({1, 2, 3}, 364)}, replicate}};
  };
  t["interpolate"] = [] {
    Fn nearest = [](const std::vector<Tensor>& in) { return tg::interpolate(in[0], {}, {1.7}); };
    Fn linear = [](const std::vector<Tensor>& in) { return tg::interpolate(in[0], {7}, {}, "linear"); };
    Fn bilinear = [](const std::vector<Tensor>& in) { return tg::interpolate(in[0], {5, 3}, {}, "bilinear"); };
    Fn corners = [](const std::vector<Tensor>& in) { return tg::interpolate(in[0], {}, {2.0}, "bilinear", true); };
    return std::vector<Sample>{{"nearest, scale 1.7", {randn64({1, 2, 3, 2}, 365)}, nearest},
                               {"linear, size 7", {randn64({2, 1, 4}, 366)}, linear},
                               {"bilinear, size (5, 3)", {randn64({1, 2, 3, 4}, 367)}, bilinear},
                               {"bilinear, align_corners", {randn64({1, 1, 2, 3}, 368)}, corners}};
  };
  t["kl_div"] = [] {
    Fn batchmean = [](const std::vector<Tensor>& in) {
      return tg::kl_div(tg::log_softmax(in[0], 1), tg::softmax(in[1], 1), tg::kBatchMean);
    };
    Fn log_target = [](const std::vector<Tensor>& in) { return tg::kl_div(in[0], in[1], tg::Reduction::None, true); };
    return std::vector<Sample>{{"batchmean, both arguments", {randn64({3, 4}, 352), randn64({3, 4}, 353)}, batchmean},
                               {"log_target, none", {randn64({3, 4}, 354), randn64({3, 4}, 355)}, log_target}};
  };
  t["margin_ranking_loss"] = [] {
    const Tensor y = tg::from_vector(std::vector<double>{1, -1, 1, -1, 1}, {5});
    Fn f = [y](const std::vector<Tensor>& in) { return tg::margin_ranking_loss(in[0], in[1], y, 0.1); };
    return std::vector<Sample>{{"margin 0.1", {randn64({5}, 356), randn64({5}, 357)}, f}};
  };
  t["hinge_embedding_loss"] = [] {
    const Tensor y = tg::from_vector(std::vector<double>{1, -1, -1, 1, -1, 1, 1, -1, -1, 1, -1, -1}, {3, 4});
    Fn mean = [y](const std::vector<Tensor>& in) { return tg::hinge_embedding_loss(in[0], y, 0.8); };
    Fn none = [y](const std::vector<Tensor>& in) { return tg::hinge_embedding_loss(in[0], y, 1.0, tg::Reduction::None); };
    return std::vector<Sample>{{"margin 0.8", {randn64({3, 4}, 380)}, mean}, {"none", {randn64({3, 4}, 381)}, none}};
  };
  t["triplet_margin_loss"] = [] {
    Fn defaults = [](const std::vector<Tensor>& in) { return tg::triplet_margin_loss(in[0], in[1], in[2], 1.5); };
    Fn swap = [](const std::vector<Tensor>& in) {
      return tg::triplet_margin_loss(in[0], in[1], in[2], 2.0, 1, 1e-6, true, tg::Reduction::Sum);
    };
    return std::vector<Sample>{{"p 2, margin 1.5", {randn64({3, 4}, 382), randn64({3, 4}, 383), randn64({3, 4}, 384)}, defaults},
                               {"p 1, swap, sum", {randn64({3, 4}, 385), randn64({3, 4}, 386), randn64({3, 4}, 387)}, swap}};
  };
  t["multi_margin_loss"] = [] {
    const Tensor target = tg::from_vector(std::vector<int64_t>{0, 3, 2});
    const Tensor w = tg::from_vector(std::vector<double>{0.5, 1.5, 1.0, 2.0});
    Fn p1 = [target](const std::vector<Tensor>& in) { return tg::multi_margin_loss(in[0], target); };
    Fn p2 = [target, w](const std::vector<Tensor>& in) {
      return tg::multi_margin_loss(in[0], target, 2, 0.7, w, tg::Reduction::None);
    };
    return std::vector<Sample>{{"p 1", {randn64({3, 4}, 388)}, p1}, {"p 2, weight, none", {randn64({3, 4}, 389)}, p2}};
  };
  t["poisson_nll_loss"] = [] {
    Fn log_full = [](const std::vector<Tensor>& in) { return tg::poisson_nll_loss(in[0], in[1], true, true); };
    Fn rate = [](const std::vector<Tensor>& in) {
      return tg::poisson_nll_loss(in[0], in[1], false, false, 1e-8, tg::Reduction::Sum);
    };
    return std::vector<Sample>{{"log input, full", {randn64({3, 4}, 390), away_from_zero({3, 4}, 391, 0.3, true)}, log_full},
                               {"rate input, sum", {away_from_zero({3, 4}, 392, 0.3, true), randn64({3, 4}, 393)}, rate}};
  };
  t["gaussian_nll_loss"] = [] {
    Fn full = [](const std::vector<Tensor>& in) { return tg::gaussian_nll_loss(in[0], in[1], in[2], true); };
    Fn rows = [](const std::vector<Tensor>& in) {
      return tg::gaussian_nll_loss(in[0], in[1], in[2], false, 1e-6, tg::Reduction::None);
    };
    return std::vector<Sample>{
        {"full", {randn64({3, 4}, 394), randn64({3, 4}, 395), away_from_zero({3, 4}, 396, 0.3, true)}, full},
        {"one variance per row, none", {randn64({3, 4}, 397), randn64({3, 4}, 398), away_from_zero({3}, 399, 0.3, true)}, rows}};
  };
  t["ctc_loss"] = [] {
    // through log_softmax, as PyTorch's tests: its rule is the logits' gradient (Note [ctc_loss gradient])
    const Tensor padded = tg::from_vector(std::vector<int64_t>{1, 2, 2, 3, 3, 0}, {2, 3});
    const Tensor il = tg::from_vector(std::vector<int64_t>{6, 4}), tl = tg::from_vector(std::vector<int64_t>{3, 2});
    Fn mean = [padded, il, tl](const std::vector<Tensor>& in) {
      return tg::ctc_loss(tg::log_softmax(in[0], -1), padded, il, tl);
    };
    const Tensor other = tg::from_vector(std::vector<int64_t>{1, 2, 0, 1, 0, 0}, {2, 3});
    Fn none = [other, il, tl](const std::vector<Tensor>& in) {
      return tg::ctc_loss(tg::log_softmax(in[0], -1), other, il, tl, 3, tg::Reduction::None);
    };
    const Tensor unbatched = tg::from_vector(std::vector<int64_t>{2, 2, 1});
    Fn single = [unbatched](const std::vector<Tensor>& in) {
      return tg::ctc_loss(tg::log_softmax(in[0], -1), unbatched, std::vector<int64_t>{5}, std::vector<int64_t>{3}, 0,
                          tg::Reduction::Sum);
    };
    return std::vector<Sample>{{"(6, 2, 4) padded, mean", {randn64({6, 2, 4}, 400)}, mean},
                               {"(6, 2, 5) blank 3, none", {randn64({6, 2, 5}, 401)}, none},
                               {"unbatched (5, 3), sum", {randn64({5, 3}, 402)}, single}};
  };
  t["soft_margin_loss"] = [] {
    const Tensor y = tg::from_vector(std::vector<double>{1, -1, -1, 1, -1, 1, 1, -1, -1, 1, -1, -1}, {3, 4});
    Fn mean = [y](const std::vector<Tensor>& in) { return tg::soft_margin_loss(in[0], y); };
    Fn none = [y](const std::vector<Tensor>& in) { return tg::soft_margin_loss(in[0], y, tg::Reduction::None); };
    return std::vector<Sample>{{"mean", {randn64({3, 4}, 1200)}, mean}, {"none", {randn64({3, 4}, 1201)}, none}};
  };
  t["multilabel_soft_margin_loss"] = [] {
    const Tensor y = tg::from_vector(std::vector<double>{1, 0, 0, 1, 0, 1, 1, 0, 0, 1, 0, 0}, {3, 4});
    Fn mean = [y](const std::vector<Tensor>& in) { return tg::multilabel_soft_margin_loss(in[0], y); };
    // soft targets and the weight get gradients too
    Fn weighted = [](const std::vector<Tensor>& in) {
      return tg::multilabel_soft_margin_loss(in[0], in[1], in[2], tg::Reduction::None);
    };
    return std::vector<Sample>{{"mean", {randn64({3, 4}, 1202)}, mean},
                               {"soft target, weight, none", {randn64({3, 4}, 1203), randn64({3, 4}, 1204), randn64({4}, 1205)},
                                weighted}};
  };
  t["multilabel_margin_loss"] = [] {
    const Tensor target = tg::from_vector(std::vector<int64_t>{3, 0, -1, 1, 2, 2, 1, -1, 0, 0, 0, 0}, {3, 4});
    Fn mean = [target](const std::vector<Tensor>& in) { return tg::multilabel_margin_loss(in[0], target); };
    Fn none = [target](const std::vector<Tensor>& in) { return tg::multilabel_margin_loss(in[0], target, tg::Reduction::None); };
    const Tensor one = tg::from_vector(std::vector<int64_t>{4, 1, -1, 0, 0});
    Fn unbatched = [one](const std::vector<Tensor>& in) { return tg::multilabel_margin_loss(in[0], one, tg::Reduction::Sum); };
    return std::vector<Sample>{{"mean", {randn64({3, 4}, 1206)}, mean}, {"none", {randn64({3, 4}, 1207)}, none},
                               {"unbatched, sum", {randn64({5}, 1208)}, unbatched}};
  };
  t["triplet_margin_with_distance_loss"] = [] {
    Fn pairwise = [](const std::vector<Tensor>& in) { return tg::triplet_margin_with_distance_loss(in[0], in[1], in[2]); };
    Fn squared = [](const std::vector<Tensor>& in) {
      const auto d = [](const Tensor& a, const Tensor& b) { return tg::sum(tg::square(a - b), 1); };
      return tg::triplet_margin_with_distance_loss(in[0], in[1], in[2], d, 4.0, true, tg::Reduction::None);
    };
    return std::vector<Sample>{
        {"pairwise distance", {randn64({3, 4}, 1209), randn64({3, 4}, 1210), randn64({3, 4}, 1211)}, pairwise},
        {"squared distance, margin 4, swap, none", {randn64({3, 4}, 1212), randn64({3, 4}, 1213), randn64({3, 4}, 1214)},
         squared}};
  };
  t["cosine_embedding_loss"] = [] {
    const Tensor y = tg::from_vector(std::vector<double>{1, -1, -1, 1}, {4});
    Fn f = [y](const std::vector<Tensor>& in) {
      return tg::cosine_embedding_loss(in[0], in[1], y, -0.5, tg::Reduction::Sum);
    };
    return std::vector<Sample>{{"margin -0.5, sum", {randn64({4, 3}, 358), randn64({4, 3}, 359)}, f}};
  };
  t["dropout2d"] = [] {
    Fn f = [](const std::vector<Tensor>& in) { tg::manual_seed(9); return tg::dropout2d(in[0], 0.4, true); };
    return std::vector<Sample>{{"p = 0.4 training, (3, 4, 2, 2)", {randn64({3, 4, 2, 2}, 360)}, f}};
  };
  t["dropout"] = [] {
    // The mask comes from the global generator: reseed inside so every evaluation draws the same mask.
    Fn f = [](const std::vector<Tensor>& in) { tg::manual_seed(9); return tg::dropout(in[0], 0.4, true); };
    Fn eval = [](const std::vector<Tensor>& in) { return tg::dropout(in[0], 0.4, false); };
    return std::vector<Sample>{{"p = 0.4 training", {randn64({4, 5}, 160)}, f},
                               {"eval is the identity", {randn64({3}, 161)}, eval},
                               {"zero-size", {randn64({0, 2}, 162)}, f}};
  };
  // ---- activations, masks, slicing views
  t["gelu"] = [] {
    auto s = unary_samples([](auto& a) { return tg::gelu(a); }, normal());
    for (auto& x : unary_samples([](auto& a) { return tg::gelu(a, "tanh"); }, normal())) s.push_back(x);
    return s;
  };
  t["silu"] = [] { return unary_samples([](auto& a) { return tg::silu(a); }, normal()); };
  t["softplus"] = [] {
    auto s = unary_samples([](auto& a) { return tg::softplus(a); }, normal());
    // beta 3 with threshold 2: inputs beyond 2/3 take the linear branch (none within 0.1 of it)
    for (auto& x : unary_samples([](auto& a) { return tg::softplus(a * 3.0 - 0.3, 3, 2); }, nonzero(0.4))) s.push_back(x);
    return s;
  };
  t["prelu"] = [] {
    Fn f = [](const std::vector<Tensor>& in) { return tg::prelu(in[0], in[1]); };
    const auto nz = nonzero();
    return std::vector<Sample>{{"(3, 4) with one weight", {nz({3, 4}, 380), randn64({1}, 381)}, f},
                               {"(2, 3, 4) with a weight per channel", {nz({2, 3, 4}, 382), randn64({3}, 383)}, f},
                               {"1-D with a 0-d weight", {nz({5}, 384), randn64({}, 385)}, f},
                               {"non-contiguous (5, 3) view with a weight per channel", {Tensor(nz({3, 5}, 386).data().transpose(0, 1), true), randn64({3}, 387)}, f}};
  };
  t["leaky_relu"] = [] {
    auto s = unary_samples([](auto& a) { return tg::leaky_relu(a); }, nonzero());
    for (auto& x : unary_samples([](auto& a) { return tg::leaky_relu(a, 0.3); }, nonzero())) s.push_back(x);
    return s;
  };
  t["hardtanh"] = [] { return unary_samples([](auto& a) { return tg::hardtanh(a, -0.5, 0.8); }, normal()); };
  t["relu6"] = [] { return unary_samples([](auto& a) { return tg::relu6(tg::mul(a, tg::scalar_like(4.0, a))); }, normal()); };
  t["hardswish"] = [] { return unary_samples([](auto& a) { return tg::hardswish(tg::mul(a, tg::scalar_like(3.0, a))); }, normal()); };
  t["hardsigmoid"] = [] { return unary_samples([](auto& a) { return tg::hardsigmoid(tg::mul(a, tg::scalar_like(3.0, a))); }, normal()); };
  t["elu"] = [] { return unary_samples([](auto& a) { return tg::elu(a, 1.3); }, normal()); };
  t["selu"] = [] { return unary_samples([](auto& a) { return tg::selu(a); }, normal()); };
  t["celu"] = [] { return unary_samples([](auto& a) { return tg::celu(a, 0.6); }, normal()); };
  t["mish"] = [] { return unary_samples([](auto& a) { return tg::mish(a); }, normal()); };
  t["softsign"] = [] { return unary_samples([](auto& a) { return tg::softsign(a); }, normal()); };
  t["log_sigmoid"] = [] {
    auto s = unary_samples([](auto& a) { return tg::log_sigmoid(a); }, normal());
    for (auto& x : unary_samples([](auto& a) { return tg::log_sigmoid(a * 40.0); }, normal())) s.push_back(x);   // |x| up to ~100
    return s;
  };
  t["masked_fill"] = [] {
    Tensor m = Tensor((randn64({3, 4}, 170, false) > 0.0).data());
    Tensor row = Tensor((randn64({4}, 171, false) > 0.0).data());
    Fn f = [m](const std::vector<Tensor>& in) { return tg::tanh(tg::masked_fill(in[0], m, 0.5)); };
    Fn bcast = [m](const std::vector<Tensor>& in) { return tg::tanh(tg::masked_fill(in[0], m, -2.0)); };
    Fn value = [row](const std::vector<Tensor>& in) { return tg::tanh(tg::masked_fill(in[0], row, in[1])); };
    return std::vector<Sample>{{"(3, 4) mask (3, 4)", {randn64({3, 4}, 172)}, f},
                               {"x (4) broadcast to the mask (3, 4)", {randn64({4}, 173)}, bcast},
                               {"non-contiguous x", {transposed64(3, 4, 174)}, f},
                               {"0-d value with a gradient, mask (4)", {randn64({3, 4}, 175), randn64({}, 176)}, value}};
  };
  for (const char* which : {"tril", "triu"}) {
    const bool lower = std::string(which) == "tril";
    t[which] = [lower] {
      auto tri = [lower](int64_t d) {
        return Fn([lower, d](const std::vector<Tensor>& in) {
          Tensor y = lower ? tg::tril(in[0], d) : tg::triu(in[0], d);
          return y * y;
        });
      };
      return std::vector<Sample>{{"(4, 5) diagonal 0", {randn64({4, 5}, 180)}, tri(0)},
                                 {"batched (2, 3, 4) diagonal -1", {randn64({2, 3, 4}, 181)}, tri(-1)},
                                 {"non-contiguous diagonal 2", {transposed64(4, 3, 182)}, tri(2)},
                                 {"zero rows", {randn64({0, 3}, 183)}, tri(0)}};
    };
  }
  t["narrow"] = [viewed] {
    return std::vector<Sample>{{"dim 1 of (3, 5)", {randn64({3, 5}, 190)}, viewed([](auto& a) { return tg::narrow(a, 1, 1, 3); })},
                               {"negative start, non-contiguous", {transposed64(4, 3, 191)}, viewed([](auto& a) { return tg::narrow(a, 0, -2, 2); })},
                               {"length 0", {randn64({3, 2}, 192)}, viewed([](auto& a) { return tg::narrow(a, 0, 3, 0); })}};
  };
  t["select"] = [viewed] {
    return std::vector<Sample>{{"dim 0 of (3, 4)", {randn64({3, 4}, 193)}, viewed([](auto& a) { return tg::select(a, 0, 1); })},
                               {"dim -1, negative index, non-contiguous", {transposed64(3, 4, 194)}, viewed([](auto& a) { return tg::select(a, -1, -1); })},
                               {"1-D to 0-d", {randn64({5}, 195)}, viewed([](auto& a) { return tg::select(a, 0, 2); })}};
  };
  t["index"] = [viewed] {
    using tg::Slice;
    return std::vector<Sample>{
        {"x[0:2, 1] of (3, 4, 2)", {randn64({3, 4, 2}, 196)}, viewed([](auto& a) { return tg::index(a, {Slice(0, 2), 1}); })},
        {"x[::2, -3:] stepped, non-contiguous", {transposed64(5, 4, 197)},
         viewed([](auto& a) { return tg::index(a, {Slice(tg::indexing::None, tg::indexing::None, 2), Slice(-3)}); })},
        {"x[..., None, 1::2]", {randn64({2, 5}, 198)},
         viewed([](auto& a) { return tg::index(a, {tg::indexing::Ellipsis, tg::indexing::None, Slice(1, tg::indexing::None, 2)}); })},
        {"empty slice", {randn64({3, 2}, 199)}, viewed([](auto& a) { return tg::index(a, {Slice(2, 1)}); })},
        {"x[mask] of a non-contiguous (3, 4), a copy", {transposed64(3, 4, 270)}, viewed([](auto& a) {
           const Tensor m = Tensor((tg::from_vector(std::vector<int64_t>{1, 0, 0, 1, 1, 1, 0, 0, 0, 1, 0, 1}, {3, 4}) != 0.0).data());
           return tg::index(a, {m});
         })},
        {"x[i0, i1] broadcast (2, 1) with (3), repeats", {randn64({3, 4, 2}, 271)}, viewed([](auto& a) {
           return tg::index(a, {tg::from_vector(std::vector<int64_t>{0, -1}, {2, 1}), tg::from_vector(std::vector<int64_t>{1, 1, 3}, {3})});
         })},
        {"x[1:3, i, 0] mixed, repeats", {randn64({4, 3, 2}, 1300)}, viewed([](auto& a) {
           return tg::index(a, {Slice(1, 3), tg::from_vector(std::vector<int64_t>{2, -1, 0}, {3}), 0});
         })},
        {"x[i0, :, i1] non-adjacent, non-contiguous", {transposed64(4, 3, 1301)}, viewed([](auto& a) {
           return tg::index(tg::unsqueeze(a, 2), {tg::from_vector(std::vector<int64_t>{3, 0}, {2}), Slice(),
                                                  tg::from_vector(std::vector<int64_t>{0, 0}, {2})});
         })}};
  };
  // ---- convolution and pooling (ops/conv.cpp)
  t["conv2d"] = [] {
    Fn full = [](const std::vector<Tensor>& in) { return tg::conv2d(in[0], in[1], in[2], {2, 1}, {1, 2}, {1, 2}, 2); };
    Fn pad1 = [](const std::vector<Tensor>& in) { return tg::conv2d(in[0], in[1], Tensor(), {1}, {1}); };
    Fn plain = [](const std::vector<Tensor>& in) { return tg::conv2d(in[0], in[1], in[2]); };
    Fn dil = [](const std::vector<Tensor>& in) { return tg::conv2d(in[0], in[1], in[2], {1}, {2, 0}, {2, 1}, 2); };
    Fn wide_pad = [](const std::vector<Tensor>& in) { return tg::conv2d(in[0], in[1], in[2], {1}, {2}); };
    Tensor nc = randn64({6, 5, 3}, 182, false);
    return std::vector<Sample>{
        // stride 1: the input gradient as a convolution (Note [conv2d input gradient as a convolution])
        {"stride 1, groups 2, padding (2, 0), dilation (2, 1), bias",
         {randn64({2, 4, 6, 5}, 208), randn64({6, 2, 3, 2}, 209), randn64({6}, 210)}, dil},
        // padding beyond the kernel's reach: the input gradient through col2im
        {"stride 1, 2x2 kernel, padding 2", {randn64({1, 2, 4, 3}, 211), randn64({3, 2, 2, 2}, 212), randn64({3}, 213)}, wide_pad},
        {"groups 2, stride (2, 1), padding (1, 2), dilation (1, 2), bias",
         {randn64({2, 4, 5, 6}, 180), randn64({6, 2, 3, 2}, 181), randn64({6}, 183)}, full},
        {"unbatched (3, 5, 5), 3x3 padding 1, no bias", {randn64({3, 5, 5}, 184), randn64({2, 3, 3, 3}, 185)}, pad1},
        {"1x1 kernel on a non-contiguous input", {Tensor(nc.data().permute({2, 1, 0}).unsqueeze(0), true),
                                                  randn64({4, 3, 1, 1}, 186), randn64({4}, 187)}, plain},
        {"weight without grad", {randn64({1, 2, 4, 4}, 188), randn64({3, 2, 2, 2}, 189, false), randn64({3}, 190)}, plain},
        {"zero-size batch", {randn64({0, 2, 4, 4}, 191), randn64({3, 2, 2, 2}, 192), randn64({3}, 193)}, plain}};
  };
  t["conv_transpose2d"] = [] {
    Fn full = [](const std::vector<Tensor>& in) {
      return tg::conv_transpose2d(in[0], in[1], in[2], {2, 1}, {1, 0}, {1, 0}, 2, {1, 2});
    };
    Fn plain = [](const std::vector<Tensor>& in) { return tg::conv_transpose2d(in[0], in[1], in[2]); };
    Fn up = [](const std::vector<Tensor>& in) { return tg::conv_transpose2d(in[0], in[1], Tensor(), {2}, {1}); };
    Fn big_op = [](const std::vector<Tensor>& in) {   // output_padding 2 >= stride 2, allowed by dilation 3
      return tg::conv_transpose2d(in[0], in[1], in[2], {2}, {0}, {2}, 1, {3});
    };
    return std::vector<Sample>{
        {"stride 1, bias", {randn64({2, 3, 4, 4}, 370), randn64({3, 2, 3, 3}, 371), randn64({2}, 372)}, plain},
        {"stride 2, padding 1, unbatched, no bias", {randn64({3, 3, 3}, 373), randn64({3, 4, 4, 4}, 374)}, up},
        {"groups 2, stride (2, 1), padding (1, 0), output_padding (1, 0), dilation (1, 2)",
         {randn64({2, 4, 3, 4}, 375), randn64({4, 3, 2, 3}, 376), randn64({6}, 377)}, full},
        {"output_padding 2 with dilation 3", {randn64({1, 2, 3, 3}, 378), randn64({2, 2, 2, 2}, 379), randn64({2}, 380)}, big_op},
        {"zero-size batch", {randn64({0, 2, 3, 3}, 381), randn64({2, 3, 2, 2}, 382), randn64({3}, 383)}, plain}};
  };
  t["conv1d"] = [] {
    Fn s2 = [](const std::vector<Tensor>& in) { return tg::conv1d(in[0], in[1], in[2], 2, 1); };
    Fn grouped = [](const std::vector<Tensor>& in) { return tg::conv1d(in[0], in[1], Tensor(), 1, 0, 2, 3); };
    return std::vector<Sample>{{"stride 2, padding 1, bias", {randn64({2, 3, 9}, 194), randn64({4, 3, 3}, 195), randn64({4}, 196)}, s2},
                               {"groups 3, dilation 2, unbatched", {randn64({3, 7}, 197), randn64({6, 1, 2}, 198)}, grouped}};
  };
  t["max_pool2d"] = [] {
    Fn k3 = [](const std::vector<Tensor>& in) { return tg::max_pool2d(in[0], {3}, {2}, {1}); };
    Fn k2 = [](const std::vector<Tensor>& in) { return tg::max_pool2d(in[0], {2}); };
    Fn overlap = [](const std::vector<Tensor>& in) { return tg::max_pool2d(in[0], {3, 2}, {1, 1}); };
    Fn dil = [](const std::vector<Tensor>& in) { return tg::max_pool2d(in[0], {3, 2}, {2}, {1}, {1, 2}, true); };
    return std::vector<Sample>{{"kernel 3, stride 2, padding 1", {randn64({2, 3, 7, 8}, 200)}, k3},
                               {"kernel 2, odd width", {randn64({1, 2, 6, 5}, 201)}, k2},
                               {"overlapping (3, 2) windows, unbatched", {randn64({2, 5, 4}, 202)}, overlap},
                               {"dilation (1, 2), ceil_mode", {randn64({1, 2, 8, 10}, 205)}, dil}};
  };
  t["avg_pool2d"] = [] {
    Fn k32 = [](const std::vector<Tensor>& in) { return tg::avg_pool2d(in[0], {3, 2}, {2}, {1}); };
    Fn excl = [](const std::vector<Tensor>& in) { return tg::avg_pool2d(in[0], {3}, {2}, {1}, false); };
    Fn ceil = [](const std::vector<Tensor>& in) { return tg::avg_pool2d(in[0], {3}, {2}, {1}, true, true); };
    Fn ceil_excl = [](const std::vector<Tensor>& in) { return tg::avg_pool2d(in[0], {3, 2}, {2, 3}, {1, 0}, false, true); };
    return std::vector<Sample>{{"kernel (3, 2), stride 2, padding 1", {randn64({2, 3, 7, 8}, 203)}, k32},
                               {"count_include_pad false, unbatched", {randn64({2, 5, 6}, 204)}, excl},
                               {"ceil_mode, padding 1", {randn64({1, 2, 8, 10}, 206)}, ceil},
                               {"ceil_mode, count_include_pad false", {randn64({1, 2, 8, 10}, 207)}, ceil_excl}};
  };
  t["adaptive_avg_pool2d"] = [] {
    Fn o34 = [](const std::vector<Tensor>& in) { return tg::adaptive_avg_pool2d(in[0], {3, 4}); };
    Fn global = [](const std::vector<Tensor>& in) { return tg::adaptive_avg_pool2d(in[0], {1}); };
    Fn up = [](const std::vector<Tensor>& in) { return tg::adaptive_avg_pool2d(in[0], {5, 4}); };
    return std::vector<Sample>{{"(7, 9) to (3, 4)", {randn64({2, 3, 7, 9}, 205)}, o34},
                               {"global", {randn64({1, 2, 5, 5}, 206)}, global},
                               {"output larger than input: overlapping windows", {randn64({2, 3, 3}, 207)}, up}};
  };
  t["max_pool1d"] = [] {
    Fn k3 = [](const std::vector<Tensor>& in) { return tg::max_pool1d(in[0], 3, 2, 1); };
    Fn dil = [](const std::vector<Tensor>& in) { return tg::max_pool1d(in[0], 3, 2, 1, 2, true); };
    return std::vector<Sample>{{"kernel 3, stride 2, padding 1", {randn64({2, 3, 9}, 390)}, k3},
                               {"dilation 2, ceil_mode, unbatched", {randn64({2, 10}, 391)}, dil}};
  };
  t["avg_pool1d"] = [] {
    Fn excl = [](const std::vector<Tensor>& in) { return tg::avg_pool1d(in[0], 3, 2, 1, true, false); };
    Fn plain = [](const std::vector<Tensor>& in) { return tg::avg_pool1d(in[0], 2); };
    return std::vector<Sample>{{"kernel 3, stride 2, padding 1, ceil_mode, count_include_pad false", {randn64({2, 3, 10}, 392)}, excl},
                               {"kernel 2 on a non-contiguous (3, 7) view", {transposed64(7, 3, 393)}, plain}};
  };
  t["adaptive_avg_pool1d"] = [] {
    Fn o4 = [](const std::vector<Tensor>& in) { return tg::adaptive_avg_pool1d(in[0], 4); };
    return std::vector<Sample>{{"10 to 4", {randn64({2, 3, 10}, 394)}, o4}};
  };
  t["adaptive_max_pool2d"] = [] {
    Fn o34 = [](const std::vector<Tensor>& in) { return tg::adaptive_max_pool2d(in[0], {3, 4}); };
    Fn tiles = [](const std::vector<Tensor>& in) { return tg::adaptive_max_pool2d(in[0], {2, 3}); };
    Fn up = [](const std::vector<Tensor>& in) { return tg::adaptive_max_pool2d(in[0], {5, 4}); };
    return std::vector<Sample>{{"(7, 9) to (3, 4)", {randn64({2, 3, 7, 9}, 395)}, o34},
                               {"(6, 9) to (2, 3): max_pool2d's windows", {randn64({1, 2, 6, 9}, 396)}, tiles},
                               {"output larger than input, unbatched", {randn64({2, 3, 3}, 397)}, up}};
  };
  t["adaptive_max_pool1d"] = [] {
    Fn o4 = [](const std::vector<Tensor>& in) { return tg::adaptive_max_pool1d(in[0], 4); };
    Fn o5 = [](const std::vector<Tensor>& in) { return tg::adaptive_max_pool1d(in[0], 5); };
    return std::vector<Sample>{{"10 to 4", {randn64({2, 3, 10}, 398)}, o4}, {"10 to 5, unbatched", {randn64({2, 10}, 399)}, o5}};
  };
  t["conv_transpose1d"] = [] {
    Fn full = [](const std::vector<Tensor>& in) { return tg::conv_transpose1d(in[0], in[1], in[2], 2, 1, 1, 2, 2); };
    Fn plain = [](const std::vector<Tensor>& in) { return tg::conv_transpose1d(in[0], in[1]); };
    return std::vector<Sample>{
        {"stride 2, padding 1, output_padding 1, groups 2, dilation 2, bias",
         {randn64({2, 4, 5}, 400), randn64({4, 3, 3}, 401), randn64({6}, 402)}, full},
        {"unbatched, no bias", {randn64({3, 6}, 403), randn64({3, 2, 4}, 404)}, plain}};
  };
  // ---- the 3-D family (ops/conv3d.cpp), compositions of the 2-D ops
  t["conv3d"] = [] {
    Fn full = [](const std::vector<Tensor>& in) {
      return tg::conv3d(in[0], in[1], in[2], {2, 1, 1}, {1, 0, 1}, {1, 1, 2}, 2);
    };
    Fn plain = [](const std::vector<Tensor>& in) { return tg::conv3d(in[0], in[1]); };
    return std::vector<Sample>{
        {"stride (2, 1, 1), padding (1, 0, 1), dilation (1, 1, 2), groups 2, bias",
         {randn64({1, 2, 4, 3, 4}, 410), randn64({4, 1, 2, 2, 2}, 411), randn64({4}, 412)}, full},
        {"unbatched, no bias", {randn64({2, 3, 3, 3}, 413), randn64({2, 2, 2, 1, 2}, 414)}, plain}};
  };
  t["conv_transpose3d"] = [] {
    Fn full = [](const std::vector<Tensor>& in) {
      return tg::conv_transpose3d(in[0], in[1], in[2], {2, 1, 2}, {1, 0, 0}, {1, 0, 1}, 2, {1, 2, 1});
    };
    Fn plain = [](const std::vector<Tensor>& in) { return tg::conv_transpose3d(in[0], in[1]); };
    return std::vector<Sample>{
        {"stride (2, 1, 2), padding (1, 0, 0), output_padding (1, 0, 1), groups 2, dilation (1, 2, 1), bias",
         {randn64({1, 2, 2, 2, 2}, 415), randn64({2, 1, 2, 2, 2}, 416), randn64({2}, 417)}, full},
        {"unbatched, no bias", {randn64({2, 2, 2, 2}, 418), randn64({2, 1, 2, 1, 2}, 419)}, plain}};
  };
  t["max_pool3d"] = [] {
    Fn k3 = [](const std::vector<Tensor>& in) { return tg::max_pool3d(in[0], 3, 2, 1); };
    Fn dil = [](const std::vector<Tensor>& in) { return tg::max_pool3d(in[0], {2, 2, 3}, {1, 2, 2}, {1, 0, 1}, {2, 1, 1}, true); };
    return std::vector<Sample>{{"kernel 3, stride 2, padding 1", {randn64({1, 2, 4, 5, 4}, 420)}, k3},
                               {"dilation (2, 1, 1), ceil_mode, unbatched", {randn64({2, 4, 5, 4}, 421)}, dil}};
  };
  t["avg_pool3d"] = [] {
    Fn excl = [](const std::vector<Tensor>& in) { return tg::avg_pool3d(in[0], {3, 2, 3}, {2, 2, 1}, {1, 1, 1}, true, false); };
    Fn plain = [](const std::vector<Tensor>& in) { return tg::avg_pool3d(in[0], 2); };
    return std::vector<Sample>{
        {"kernel (3, 2, 3), stride (2, 2, 1), padding 1, ceil_mode, count_include_pad false", {randn64({1, 2, 5, 4, 4}, 422)}, excl},
        {"kernel 2, unbatched", {randn64({2, 4, 4, 5}, 423)}, plain}};
  };
  t["adaptive_avg_pool3d"] = [] {
    Fn o = [](const std::vector<Tensor>& in) { return tg::adaptive_avg_pool3d(in[0], {2, 3, 2}); };
    return std::vector<Sample>{{"(5, 4, 3) to (2, 3, 2)", {randn64({1, 2, 5, 4, 3}, 424)}, o}};
  };
  t["adaptive_max_pool3d"] = [] {
    Fn uneven = [](const std::vector<Tensor>& in) { return tg::adaptive_max_pool3d(in[0], {2, 3, 2}); };
    Fn tiled = [](const std::vector<Tensor>& in) { return tg::adaptive_max_pool3d(in[0], 2); };
    return std::vector<Sample>{{"(5, 4, 3) to (2, 3, 2)", {randn64({1, 2, 5, 4, 3}, 425)}, uneven},
                               {"(4, 4, 2) to 2, unbatched", {randn64({2, 4, 4, 2}, 426)}, tiled}};
  };
  // ---- normalization (ops/norm.cpp)
  t["batch_norm"] = [] {
    // Running statistics are buffers (no grad); training updates them, so each evaluation gets fresh ones.
    Fn train4 = [](const std::vector<Tensor>& in) {
      return tg::batch_norm(in[0], tg::zeros({3}, tg::TensorOptions().dtype(tg::kFloat64)), tg::ones({3}, tg::TensorOptions().dtype(tg::kFloat64)), in[1], in[2], true);
    };
    Fn train2 = [](const std::vector<Tensor>& in) { return tg::batch_norm(in[0], {}, {}, {}, {}, true); };
    const Tensor rm = randn64({3}, 212, false), rv = tg::exp(randn64({3}, 213, false));
    Fn eval = [rm, rv](const std::vector<Tensor>& in) { return tg::batch_norm(in[0], rm, rv, in[1], in[2], false); };
    return std::vector<Sample>{{"training (4, 3, 2, 3) with weight and bias", {randn64({4, 3, 2, 3}, 210), randn64({3}, 211), randn64({3}, 214)}, train4},
                               {"training (5, 4) without affine or running stats", {randn64({5, 4}, 215)}, train2},
                               {"eval (2, 3, 5) with running stats", {randn64({2, 3, 5}, 216), randn64({3}, 217), randn64({3}, 218)}, eval}};
  };
  t["layer_norm"] = [] {
    Fn last = [](const std::vector<Tensor>& in) { return tg::layer_norm(in[0], {5}, in[1], in[2]); };
    Fn two = [](const std::vector<Tensor>& in) { return tg::layer_norm(in[0], {3, 4}, in[1], Tensor(), 1e-3); };
    Fn plain = [](const std::vector<Tensor>& in) { return tg::layer_norm(in[0], {6}); };
    return std::vector<Sample>{{"(4, 5) with weight and bias", {randn64({4, 5}, 220), randn64({5}, 221), randn64({5}, 222)}, last},
                               {"(2, 3, 4) over the last two dims, weight only", {randn64({2, 3, 4}, 223), randn64({3, 4}, 224)}, two},
                               {"non-contiguous (6, 3) view, no affine", {Tensor(randn64({6, 3}, 225, false).data().transpose(0, 1), true)}, plain}};
  };
  // the fused recurrent cells (ops/rnn.cpp): gates (N, 4H) or (N, 3H) and a state (N, H)
  t["fused_lstm_cell"] = [] {
    Fn both = [](const std::vector<Tensor>& in) {
      auto [h, c] = tg::fused_lstm_cell(in[0], in[1], in[2]);
      return tg::cat({h, c}, 1);
    };
    Fn cell = [](const std::vector<Tensor>& in) { return std::get<1>(tg::fused_lstm_cell(in[0], in[1], in[2])); };
    return std::vector<Sample>{
        {"(3, 4 x 2) gates, h' and c'", {randn64({3, 8}, 950), randn64({3, 8}, 951), randn64({3, 2}, 952)}, both},
        {"non-contiguous gates, c' only, state without grad",
         {Tensor(randn64({12, 2}, 953, false).data().transpose(0, 1), true), randn64({2, 12}, 954),
          randn64({2, 3}, 955, false)},
         cell}};
  };
  t["fused_gru_cell"] = [] {
    Fn f = [](const std::vector<Tensor>& in) { return tg::fused_gru_cell(in[0], in[1], in[2]); };
    return std::vector<Sample>{
        {"(3, 3 x 2) gates", {randn64({3, 6}, 956), randn64({3, 6}, 957), randn64({3, 2}, 958)}, f},
        {"input gates without grad", {randn64({2, 9}, 959, false), randn64({2, 9}, 960), randn64({2, 3}, 961)}, f}};
  };
  t["group_norm"] = [] {
    Fn affine = [](const std::vector<Tensor>& in) { return tg::group_norm(in[0], 2, in[1], in[2]); };
    Fn plain = [](const std::vector<Tensor>& in) { return tg::group_norm(in[0], 3, Tensor(), Tensor(), 1e-3); };
    Fn per_channel = [](const std::vector<Tensor>& in) { return tg::group_norm(in[0], 4, in[1]); };
    return std::vector<Sample>{{"(3, 4, 2, 3) 2 groups with weight and bias", {randn64({3, 4, 2, 3}, 226), randn64({4}, 227), randn64({4}, 228)}, affine},
                               {"(2, 6) 3 groups, no affine", {randn64({2, 6}, 229)}, plain},
                               {"non-contiguous (2, 4, 5) view, one channel per group, weight only",
                                {Tensor(randn64({5, 4, 2}, 230, false).data().permute({2, 1, 0}), true), randn64({4}, 231)}, per_channel}};
  };
  t["instance_norm"] = [] {
    // Running statistics are buffers (no grad); training updates them, so each evaluation gets fresh ones.
    Fn train = [](const std::vector<Tensor>& in) {
      const tg::TensorOptions f64 = tg::TensorOptions().dtype(tg::kFloat64);
      return tg::instance_norm(in[0], tg::zeros({3}, f64), tg::ones({3}, f64), in[1], in[2], true, 0.2);
    };
    Fn plain = [](const std::vector<Tensor>& in) { return tg::instance_norm(in[0]); };
    const Tensor rm = randn64({3}, 408, false), rv = tg::exp(randn64({3}, 409, false));
    Fn eval = [rm, rv](const std::vector<Tensor>& in) { return tg::instance_norm(in[0], rm, rv, in[1], in[2], false); };
    return std::vector<Sample>{{"training (2, 3, 5) with running stats, weight and bias", {randn64({2, 3, 5}, 405), randn64({3}, 406), randn64({3}, 407)}, train},
                               {"(2, 3, 2, 3) without affine or running stats", {randn64({2, 3, 2, 3}, 410)}, plain},
                               {"eval (2, 3, 4) with running stats", {randn64({2, 3, 4}, 411), randn64({3}, 412), randn64({3}, 413)}, eval}};
  };
  // ---- attention (ops/attention.cpp)
  t["scaled_dot_product_attention"] = [] {
    Fn plain = [](const std::vector<Tensor>& in) { return tg::scaled_dot_product_attention(in[0], in[1], in[2]); };
    Fn causal = [](const std::vector<Tensor>& in) {
      return tg::scaled_dot_product_attention(in[0], in[1], in[2], Tensor(), 0, true, 0.7);
    };
    const Tensor keep = tg::from_vector(std::vector<int64_t>{1, 0, 1, 1, 1, 1, 0, 1, 1, 1, 1, 0}, {3, 4}) > 0.0;
    Fn bool_mask = [keep](const std::vector<Tensor>& in) { return tg::scaled_dot_product_attention(in[0], in[1], in[2], keep); };
    Fn float_mask = [](const std::vector<Tensor>& in) { return tg::scaled_dot_product_attention(in[0], in[1], in[2], in[3]); };
    Fn drop = [](const std::vector<Tensor>& in) {
      tg::manual_seed(11);
      return tg::scaled_dot_product_attention(in[0], in[1], in[2], Tensor(), 0.3);
    };
    return std::vector<Sample>{
        {"(2, 3, 4) x (2, 5, 4) x (2, 5, 3)", {randn64({2, 3, 4}, 232), randn64({2, 5, 4}, 233), randn64({2, 5, 3}, 234)}, plain},
        {"causal (2, 2, 4, 3) with L > S, scale 0.7", {randn64({2, 2, 4, 3}, 235), randn64({2, 2, 3, 3}, 236), randn64({2, 2, 3, 2}, 237)}, causal},
        {"bool mask (3, 4), key and value broadcast over the batch", {randn64({2, 3, 5}, 238), randn64({1, 4, 5}, 239), randn64({4, 2}, 240)}, bool_mask},
        {"float mask (2, 1, 4) with its gradient, non-contiguous query",
         {transposed64(3, 3, 241), randn64({2, 4, 3}, 242), randn64({2, 4, 2}, 243), randn64({2, 1, 4}, 244)}, float_mask},
        {"dropout 0.3 with a fixed seed", {randn64({3, 4}, 245), randn64({5, 4}, 246), randn64({5, 3}, 247)}, drop}};
  };
  t["sum_to_size"] = [] {
    Fn rows = [](const std::vector<Tensor>& in) { return tg::sum_to_size(in[0], {1, 4}); };
    Fn lead = [](const std::vector<Tensor>& in) { return tg::sum_to_size(in[0], {3, 1}); };
    Fn all = [](const std::vector<Tensor>& in) { return tg::sum_to_size(in[0], {}); };
    return std::vector<Sample>{{"(3, 4) to (1, 4)", {randn64({3, 4}, 250)}, rows},
                               {"(2, 3, 4) to (3, 1)", {randn64({2, 3, 4}, 251)}, lead},
                               {"(2, 3) to 0-d", {randn64({2, 3}, 252)}, all}};
  };
  return t;
}

/// Declared in ops/ops.h but not differentiable (checked by value in tests/test_ops.cpp).
const std::map<std::string, std::string> kNotDifferentiable = {
    {"eq", "comparison"}, {"ne", "comparison"}, {"gt", "comparison"}, {"lt", "comparison"},
    {"ge", "comparison"}, {"le", "comparison"}, {"argmax", "integer result"},
    {"scalar_like", "constant factory"}, {"all", "bool result"}, {"any", "bool result"},
    {"multinomial", "random integer result"}, {"bernoulli", "random 0 / 1 result (PyTorch's gradient is 0)"},
    {"one_hot", "integer input and result"}};

}  // namespace

TEST_CASE("gradgradcheck table covers every op in ops/ops.h") {
  std::map<std::string, std::string> excluded = testing::kFirstOrderOnly;
  excluded.insert(kNotDifferentiable.begin(), kNotDifferentiable.end());
  testing::check_covers_declared_ops(testing::kTwice, excluded, "kTwice (the twice-differentiable ops) of tests/ops_coverage.h");
}

TEST_CASE("gradgradcheck: every twice-differentiable op, float64 central differences of the first derivative") {
  const auto table = gradcheck_table();
  for (const std::string& op : testing::kTwice) {
    REQUIRE(table.count(op) == 1);
    for (const Sample& sample : table.at(op)()) {
      CAPTURE(op);
      CAPTURE(sample.what);
      try {
        CHECK(tg::autograd::gradgradcheck(sample.fn, sample.inputs));
      } catch (const tg::Error& e) {
        FAIL_CHECK(op << " [" << sample.what << "]: " << std::string(e.what()));
      }
    }
  }
}

TEST_CASE("gradgradcheck: an op with a first-order rule refuses a double backward by name") {
  // a user's op recorded with a prim rule only (examples/03's way): create_graph runs it, a second
  // backward that reaches its gradient names it
  Fn sin_op = [](const std::vector<Tensor>& in) {
    tg::SavedTensor xs(in[0]);
    const tg::RawTensor y = tg::prim::unary(tg::UnaryOp::Sin, in[0].data());
    return tg::record("my_sin", y, {in[0]}, [xs](const tg::RawTensor& grad, tg::Grads& g) {
      g.set(0, tg::prim::mul(grad, tg::prim::unary(tg::UnaryOp::Cos, xs.get())));
    });
  };
  const Tensor x = randn64({4}, 172);
  CHECK(tg::autograd::gradcheck(sin_op, {x}));
  TG_CHECK_THROWS(tg::autograd::gradgradcheck(sin_op, {x}), tg::AutogradError,
                  "the derivative of 'my_sin' is not implemented twice");
  const auto table = gradcheck_table();
  for (const auto& entry : testing::kFirstOrderOnly) {
    CAPTURE(entry.first);
    int refused = 0;
    for (const Sample& sample : table.at(entry.first)()) {
      try {
        tg::autograd::gradgradcheck(sample.fn, sample.inputs);
      } catch (const tg::AutogradError& e) {
        if (std::string(e.what()).find("is not implemented twice") != std::string::npos) ++refused;
      }
    }
    CHECK_MESSAGE(refused > 0, entry.first << ": no sample was refused; does it belong in kTwice (tests/ops_coverage.h)?");
  }
}

TEST_CASE("gradgradcheck reports a wrong second derivative") {
  // A differentiable rule with the right first derivative and a wrong graph: gradcheck passes, gradgradcheck must not.
  Tensor x = randn64({4}, 171);
  Fn wrong = [](const std::vector<Tensor>& in) {
    tg::SavedTensor xs(in[0]);
    const tg::RawTensor cube = tg::prim::mul(tg::prim::mul(in[0].data(), in[0].data()), in[0].data());
    return tg::record("bad_cube", cube, {in[0]}, [xs](const Tensor& grad, tg::VarGrads& g) {
      const Tensor v = g.input(0, xs);
      // right value, wrong graph: 3 x^2 computed as 3 x * x.detach() differentiates to 3 x, not 6 x
      g.set(0, grad * (v * 3.0) * v.detach());
    });
  };
  CHECK(tg::autograd::gradcheck(wrong, {x}));   // the first derivative is right
  TG_CHECK_THROWS(tg::autograd::gradgradcheck(wrong, {x}), tg::AutogradError, "Jacobian mismatch");
}

TEST_CASE("gradcheck table covers every op in ops/ops.h") {
  std::set<std::string> covered;
  for (const auto& entry : gradcheck_table()) covered.insert(entry.first);
  testing::check_covers_declared_ops(covered, kNotDifferentiable, "the gradcheck table of tests/test_gradcheck.cpp");
}

TEST_CASE("gradcheck: every differentiable op float64 central differences") {
  for (const auto& entry : gradcheck_table()) {
    for (const Sample& sample : entry.second()) {
      CAPTURE(entry.first);
      CAPTURE(sample.what);
      bool ok = false;
      try {
        ok = tg::autograd::gradcheck(sample.fn, sample.inputs);
      } catch (const tg::Error& e) {
        FAIL_CHECK(entry.first << " [" << sample.what << "]: " << std::string(e.what()));
        continue;
      }
      CHECK(ok);
    }
  }
}

TEST_CASE("gradcheck reports a wrong gradient with the worst element") {
  // A custom op whose backward is deliberately off by a factor 2 on purpose: gradcheck must catch it.
  Tensor x = randn64({4}, 170);
  Fn wrong = [](const std::vector<Tensor>& in) {
    return tg::record("bad_square", tg::prim::mul(in[0].data(), in[0].data()), {in[0]},
                      [x = in[0].data()](const tg::RawTensor& grad, tg::Grads& g) {
                        g.set(0, tg::prim::mul(grad, x));   // should be 2 x grad
                      });
  };
  TG_CHECK_THROWS(tg::autograd::gradcheck(wrong, {x}), tg::AutogradError, "Jacobian mismatch for input 0");
  Tensor f32(tg::randn({3}).data(), true);
  TG_CHECK_THROWS(tg::autograd::gradcheck(wrong, {f32}), tg::DTypeError, "float64");
}



