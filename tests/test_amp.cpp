// tests/test_amp.cpp: tg::amp::GradScaler against torch.amp.GradScaler: the scale schedule (skipped
// steps, backoff, growth), the unscaled gradients, a tiny model trained with the scaler, several
// optimizers, state_dict and its checkpoint, and the errors. The CUDA case skips without a GPU.
//
// Every reference number below was recorded with torch 2.15.0 (CPU wheel) running the same program
// in Python with torch.amp.GradScaler("cpu", ...) and torch.optim.SGD: the same initial values,
// inputs and inf/NaN injections, get_scale() and _get_growth_tracker() after each update(), and the
// parameters after each step printed with repr(float(v)). Each case names the Python lines it mirrors.
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "testing.h"

using tg::Tensor;
using tg::amp::GradScaler;
using tg::amp::GradScalerOptions;

namespace {

const double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();

Tensor leaf(const std::vector<float>& v, tg::Device device = tg::Device::cpu()) {
  return Tensor(tg::from_vector(v, {static_cast<int64_t>(v.size())}).data().to(device), true);
}

/// Float32 parameters after a few SGD steps: PyTorch and tensorgrad may round the update's products
/// differently by an ulp (FMA contraction), and the error of a few steps stays below 8 ulps of the
/// values' magnitude.
void check_params(const Tensor& got, const std::vector<double>& want, double magnitude = 1.0) {
  const auto g = got.to_vector<double>();
  REQUIRE(g.size() == want.size());
  for (std::size_t i = 0; i < g.size(); ++i)
    CHECK_MESSAGE(std::fabs(g[i] - want[i]) <= 8 * 0x1p-24 * magnitude, "element " << i << ": " << g[i] << " vs " << want[i]);
}

/// Schedule A on `device`: one float32 parameter w, SGD(lr 0.1), GradScaler(init_scale 1024,
/// growth_interval 3); the loss (w * c).sum() with c = [1, -2, 0.25] and an inf, a NaN or a -inf in
/// c on some steps. Python (torch 2.15.0):
///   w = torch.tensor([0.5, -1.0, 2.0], requires_grad=True); opt = torch.optim.SGD([w], lr=0.1)
///   s = torch.amp.GradScaler("cpu", init_scale=1024.0, growth_factor=2.0, backoff_factor=0.5, growth_interval=3)
///   for p in "ok ok inf ok ok ok ok nan ok ok ok ninf ok".split():
///       c = torch.tensor([1.0, -2.0, 0.25]); c[1] = inf (inf), c[2] = nan (nan), c[0] = -inf (ninf)
///       opt.zero_grad(); s.scale((w * c).sum()).backward(); s.step(opt); s.update()
void run_schedule_a(tg::Device device) {
  struct Step {
    const char* what;
    bool ran;
    double scale;
    int64_t tracker;
    std::vector<double> w;
  };
  const std::vector<Step> ref = {
      {"ok", true, 1024, 1, {0.4000000059604645, -0.800000011920929, 1.975000023841858}},
      {"ok", true, 1024, 2, {0.30000001192092896, -0.6000000238418579, 1.9500000476837158}},
      {"inf", false, 512, 0, {0.30000001192092896, -0.6000000238418579, 1.9500000476837158}},
      {"ok", true, 512, 1, {0.20000001788139343, -0.40000003576278687, 1.9250000715255737}},
      {"ok", true, 512, 2, {0.10000001639127731, -0.20000003278255463, 1.9000000953674316}},
      {"ok", true, 1024, 0, {1.4901161193847656e-08, -2.9802322387695312e-08, 1.8750001192092896}},
      {"ok", true, 1024, 1, {-0.09999998658895493, 0.19999997317790985, 1.8500001430511475}},
      {"nan", false, 512, 0, {-0.09999998658895493, 0.19999997317790985, 1.8500001430511475}},
      {"ok", true, 512, 1, {-0.19999998807907104, 0.3999999761581421, 1.8250001668930054}},
      {"ok", true, 512, 2, {-0.29999998211860657, 0.5999999642372131, 1.8000001907348633}},
      {"ok", true, 1024, 0, {-0.3999999761581421, 0.7999999523162842, 1.7750002145767212}},
      {"ninf", false, 512, 0, {-0.3999999761581421, 0.7999999523162842, 1.7750002145767212}},
      {"ok", true, 512, 1, {-0.4999999701976776, 0.9999999403953552, 1.750000238418579}},
  };
  Tensor w = leaf({0.5f, -1.0f, 2.0f}, device);
  tg::optim::SGD opt({w}, 0.1);
  GradScaler scaler(GradScalerOptions().init_scale(1024).growth_factor(2).backoff_factor(0.5).growth_interval(3));
  CHECK(scaler.get_scale() == 1024);
  for (std::size_t i = 0; i < ref.size(); ++i) {
    CAPTURE(i);
    std::vector<float> c{1.0f, -2.0f, 0.25f};
    const std::string what = ref[i].what;
    if (what == "inf") c[1] = float(kInf);
    if (what == "nan") c[2] = float(kNaN);
    if (what == "ninf") c[0] = float(-kInf);
    opt.zero_grad();
    Tensor cv = tg::from_vector(c, {3}).to(device);
    Tensor scaled = scaler.scale((w * cv).sum());
    CHECK(scaled.device() == device);
    scaled.backward();
    CHECK(scaler.step(opt) == ref[i].ran);
    scaler.update();
    CHECK(scaler.get_scale() == ref[i].scale);
    CHECK(scaler.get_growth_tracker() == ref[i].tracker);
    check_params(w, ref[i].w, 2.0);
  }
  // Python: s.state_dict() == {'scale': 512.0, 'growth_factor': 2.0, 'backoff_factor': 0.5,
  //                            'growth_interval': 3, '_growth_tracker': 1}
  const auto state = scaler.state_dict();
  REQUIRE(state.size() == 5);
  const std::vector<std::string> keys{"scale", "growth_factor", "backoff_factor", "growth_interval", "_growth_tracker"};
  const std::vector<double> values{512.0, 2.0, 0.5, 3, 1};
  for (std::size_t k = 0; k < 5; ++k) {
    CHECK(state[k].first == keys[k]);
    CHECK(state[k].second.dim() == 0);
    CHECK(state[k].second.dtype() == (k < 3 ? tg::kFloat64 : tg::kInt64));
    CHECK(state[k].second.item() == values[k]);
  }
}

}  // namespace

TEST_CASE("GradScaler: skip on inf/NaN, backoff and growth follow torch.amp.GradScaler (schedule A)") {
  run_schedule_a(tg::Device::cpu());
}

TEST_CASE("GradScaler: defaults are PyTorch's, and a disabled scaler is a pass-through") {
  GradScaler scaler;
  CHECK(scaler.get_scale() == 65536.0);
  CHECK(scaler.get_growth_factor() == 2.0);
  CHECK(scaler.get_backoff_factor() == 0.5);
  CHECK(scaler.get_growth_interval() == 2000);
  CHECK(scaler.get_growth_tracker() == 0);
  CHECK(scaler.is_enabled());

  // Python: d = torch.amp.GradScaler("cpu", enabled=False); d.state_dict() == {}, d.get_scale() == 1.0
  GradScaler off(GradScalerOptions().enabled(false).growth_factor(0.5));   // factors of a disabled scaler are not checked
  Tensor w = leaf({1.0f, -2.0f});
  tg::optim::SGD opt({w}, 0.5);
  Tensor loss = (w * w).sum();
  Tensor same = off.scale(loss);
  CHECK(same.impl() == loss.impl());
  same.backward();
  off.unscale_(opt);
  off.unscale_(opt);   // no state, so no error either
  CHECK(off.step(opt));
  off.update();
  CHECK(off.get_scale() == 1.0);
  CHECK(off.state_dict().empty());
  off.load_state_dict({});
  check_params(w, {1.0 - 0.5 * 2.0, -2.0 + 0.5 * 4.0});   // plain SGD: w - lr * 2 w
}

TEST_CASE("GradScaler: non-power-of-two factors round the scale to float32 as PyTorch does (schedule B)") {
  // Python: w = torch.tensor([0.5, -1.0], requires_grad=True); opt = torch.optim.SGD([w], lr=0.01)
  //   s = torch.amp.GradScaler("cpu", init_scale=1000.3, growth_factor=1.7, backoff_factor=0.3, growth_interval=2)
  //   s.get_scale() == 1000.3 before the first scale(); then for p in "ok ok ok inf inf ok ok ok ok ok":
  //   c = [1.0, 3.0] (c[0] = inf on "inf"); s.scale((w * c).sum()).backward(); s.step(opt); s.update()
  const std::vector<double> scales{1000.2999877929688, 1700.510009765625, 1700.510009765625, 510.15301513671875,
                                   153.0458984375,     153.0458984375,    260.17803955078125, 260.17803955078125,
                                   442.30267333984375, 442.30267333984375};
  const char* pattern[] = {"ok", "ok", "ok", "inf", "inf", "ok", "ok", "ok", "ok", "ok"};
  Tensor w = leaf({0.5f, -1.0f});
  tg::optim::SGD opt({w}, 0.01);
  GradScaler scaler(GradScalerOptions().init_scale(1000.3).growth_factor(1.7).backoff_factor(0.3).growth_interval(2));
  CHECK(scaler.get_scale() == 1000.3);   // before scale(): init_scale itself, a double
  for (std::size_t i = 0; i < scales.size(); ++i) {
    CAPTURE(i);
    std::vector<float> c{1.0f, 3.0f};
    if (std::string(pattern[i]) == "inf") c[0] = float(kInf);
    opt.zero_grad();
    scaler.scale((w * tg::from_vector(c, {2})).sum()).backward();
    scaler.step(opt);
    scaler.update();
    CHECK(scaler.get_scale() == scales[i]);   // exact: float64 products rounded to float32
  }
  // Python: s.state_dict()['_growth_tracker'] == 1, 'growth_factor': 1.7, 'backoff_factor': 0.3
  CHECK(scaler.get_growth_tracker() == 1);
}

TEST_CASE("GradScaler: growth stops at float32's range (schedule C)") {
  // Python: w = torch.tensor([0.5], requires_grad=True); opt = torch.optim.SGD([w], lr=0.01)
  //   s = torch.amp.GradScaler("cpu", init_scale=3e38, growth_interval=1); twice:
  //   s.scale((w * 1e-3).sum()).backward(); s.step(opt); s.update()
  //   -> get_scale() == 3.0000000054977558e+38 both times, w == 0.49997997283935547
  Tensor w = leaf({0.5f});
  tg::optim::SGD opt({w}, 0.01);
  GradScaler scaler(GradScalerOptions().init_scale(3e38).growth_interval(1));
  for (int i = 0; i < 2; ++i) {
    opt.zero_grad();
    scaler.scale((w * 1e-3).sum()).backward();
    CHECK(scaler.step(opt));
    scaler.update();
    CHECK(scaler.get_scale() == 3.0000000054977558e+38);
    CHECK(scaler.get_growth_tracker() == 0);
  }
  check_params(w, {0.49997997283935547});
}

TEST_CASE("GradScaler: unscale_ multiplies by float32(1 / scale), also for float64 gradients (D)") {
  // Python: w = torch.tensor([1.5, -2.25], dtype=torch.float64, requires_grad=True)
  //   opt = torch.optim.SGD([w], lr=0.5); s = torch.amp.GradScaler("cpu", init_scale=3.0)
  //   c = torch.tensor([0.7, 1.3], dtype=torch.float64); s.scale((w * c).sum()).backward()
  //   w.grad -> [2.0999999999999996, 3.9000000000000004]; s.unscale_(opt)
  //   w.grad -> [0.7000000208616256, 1.3000000387430193]   (not 0.7, 1.3: 1/3 rounded to float32)
  //   s.step(opt); s.update() -> w == [1.1499999895691873, -2.9000000193715096], scale 3.0, tracker 1
  Tensor w = tg::from_vector(std::vector<double>{1.5, -2.25}, {2}, tg::TensorOptions().requires_grad(true));
  tg::optim::SGD opt({w}, 0.5);
  GradScaler scaler(GradScalerOptions().init_scale(3.0));
  scaler.scale((w * tg::from_vector(std::vector<double>{0.7, 1.3}, {2})).sum()).backward();
  auto g = w.grad().to_vector<double>();
  CHECK(g[0] == 2.0999999999999996);
  CHECK(g[1] == 3.9000000000000004);
  const Tensor grad_before = w.grad();
  scaler.unscale_(opt);
  CHECK(w.grad().impl() == grad_before.impl());   // in place
  g = w.grad().to_vector<double>();
  CHECK(g[0] == 0.7000000208616256);
  CHECK(g[1] == 1.3000000387430193);
  CHECK(scaler.step(opt));
  scaler.update();
  const auto v = w.to_vector<double>();
  CHECK(v[0] == doctest::Approx(1.1499999895691873).epsilon(1e-15));
  CHECK(v[1] == doctest::Approx(-2.9000000193715096).epsilon(1e-15));
  CHECK(scaler.get_scale() == 3.0);
  CHECK(scaler.get_growth_tracker() == 1);
}

TEST_CASE("GradScaler: a tiny model trained with SGD momentum and the scaler matches PyTorch (E)") {
  // Python: W = [[0.1, -0.2, 0.3], [0.4, 0.5, -0.6]], b = [0.05, -0.05] (float32, requires_grad)
  //   x = [[1.0, 2.0, -1.0], [0.5, -0.3, 0.8], [-1.2, 0.7, 0.1], [0.3, 0.3, 0.3]]
  //   y = [[0.2, -0.1], [1.0, 0.5], [-0.4, 0.3], [0.0, 0.9]]
  //   opt = torch.optim.SGD([W, b], lr=0.1, momentum=0.9); s = torch.amp.GradScaler("cpu", growth_interval=2)
  //   for step in range(7): xi = x.clone(); xi[1, 1] = inf at step 2
  //       out = xi @ W.t() + b; loss = ((out - y) * (out - y)).mean()
  //       s.scale(loss).backward(); s.step(opt); s.update(3.0) at step 4, else s.update()
  Tensor W = tg::from_vector(std::vector<float>{0.1f, -0.2f, 0.3f, 0.4f, 0.5f, -0.6f}, {2, 3},
                               tg::TensorOptions().requires_grad(true));
  Tensor b = leaf({0.05f, -0.05f});
  const std::vector<float> xs{1.0f, 2.0f, -1.0f, 0.5f, -0.3f, 0.8f, -1.2f, 0.7f, 0.1f, 0.3f, 0.3f, 0.3f};
  const Tensor y = tg::from_vector(std::vector<float>{0.2f, -0.1f, 1.0f, 0.5f, -0.4f, 0.3f, 0.0f, 0.9f}, {4, 2});
  tg::optim::SGD opt({W, b}, tg::optim::SGDOptions(0.1).momentum(0.9));
  GradScaler scaler(GradScalerOptions().growth_interval(2));
  const std::vector<double> losses{0.8971375226974487, 0.7118118405342102, kInf, 0.45595189929008484,
                                   0.25359541177749634, 0.16494855284690857, 0.17050136625766754};
  const std::vector<double> scales{65536, 131072, 65536, 65536, 3, 6, 6};
  const std::vector<int64_t> trackers{1, 0, 0, 1, 1, 0, 1};
  for (int step = 0; step < 7; ++step) {
    CAPTURE(step);
    std::vector<float> xi = xs;
    if (step == 2) xi[4] = float(kInf);
    opt.zero_grad();
    Tensor out = tg::matmul(tg::from_vector(xi, {4, 3}), W.t()) + b;
    Tensor loss = ((out - y) * (out - y)).mean();
    scaler.scale(loss).backward();
    CHECK(scaler.step(opt) == (step != 2));
    if (step == 4) scaler.update(3.0);
    else scaler.update();
    if (std::isinf(losses[step])) CHECK(std::isinf(loss.item()));
    else CHECK(loss.item() == doctest::Approx(losses[step]).epsilon(1e-6));
    CHECK(scaler.get_scale() == scales[step]);
    CHECK(scaler.get_growth_tracker() == trackers[step]);
  }
  // Python: W.flatten(), b after the 7 steps
  check_params(W.reshape({6}), {0.4966358244419098, 0.01222139410674572, 0.25636571645736694, -0.12415695935487747,
                                -0.42386624217033386, 0.346431165933609});
  check_params(b, {0.2758512794971466, 0.3343776762485504});
}

TEST_CASE("GradScaler: several optimizers keep their own unscale state and share the backoff (F)") {
  // Python: w1 = [1.0, 2.0], w2 = [-1.0, 0.5]; o1 = SGD([w1], lr=0.5); o2 = SGD([w2], lr=0.25)
  //   s = torch.amp.GradScaler("cpu", init_scale=256.0, growth_interval=2); for step in range(3):
  //   a = [0.5, -1.5]; bb = [2.0, 0.75] (bb[0] = inf at step 1)
  //   s.scale((w1 * a).sum() + (w2 * bb).sum()).backward(); s.unscale_(o1); s.step(o1); s.step(o2); s.update()
  //   -> step 0: both ran, scale 256; step 1: o1 ran, o2 skipped, scale 128; step 2: both ran, scale 128
  //      w1 == [0.25, 4.25], w2 == [-2.0, 0.125]
  Tensor w1 = leaf({1.0f, 2.0f}), w2 = leaf({-1.0f, 0.5f});
  tg::optim::SGD o1({w1}, 0.5), o2({w2}, 0.25);
  GradScaler scaler(GradScalerOptions().init_scale(256).growth_interval(2));
  const bool ran2[] = {true, false, true};
  const double scales[] = {256, 128, 128};
  for (int step = 0; step < 3; ++step) {
    CAPTURE(step);
    std::vector<float> bb{2.0f, 0.75f};
    if (step == 1) bb[0] = float(kInf);
    o1.zero_grad();
    o2.zero_grad();
    const Tensor a = tg::from_vector(std::vector<float>{0.5f, -1.5f}, {2});
    scaler.scale((w1 * a).sum() + (w2 * tg::from_vector(bb, {2})).sum()).backward();
    scaler.unscale_(o1);
    CHECK(scaler.step(o1));
    CHECK(scaler.step(o2) == ran2[step]);
    scaler.update();
    CHECK(scaler.get_scale() == scales[step]);
  }
  check_params(w1, {0.25, 4.25});
  check_params(w2, {-2.0, 0.125});
}

TEST_CASE("GradScaler: update() after unscale_ alone reads its flags, scale() takes a list") {
  // Python: w = torch.tensor([1.0, 2.0], requires_grad=True); opt = torch.optim.SGD([w], lr=0.1)
  //   s = torch.amp.GradScaler("cpu", init_scale=64.0); c = torch.tensor([nan, 1.0])
  //   s.scale((w * c).sum()).backward(); s.unscale_(opt); s.update()
  //   -> get_scale() 32.0, tracker 0, w unchanged [1.0, 2.0]
  Tensor w = leaf({1.0f, 2.0f});
  tg::optim::SGD opt({w}, 0.1);
  GradScaler s(GradScalerOptions().init_scale(64));
  s.scale((w * tg::from_vector(std::vector<float>{float(kNaN), 1.0f}, {2})).sum()).backward();
  s.unscale_(opt);
  s.update();
  CHECK(s.get_scale() == 32.0);
  CHECK(s.get_growth_tracker() == 0);
  check_params(w, {1.0, 2.0});
  // Python: a = [1.0], b = [2.0]; s = GradScaler("cpu", init_scale=4.0); s.scale([a * 3.0, b * 5.0]) -> 12.0, 40.0
  GradScaler four(GradScalerOptions().init_scale(4));
  const auto outs = four.scale(std::vector<Tensor>{leaf({1.0f}) * 3.0, leaf({2.0f}) * 5.0});
  REQUIRE(outs.size() == 2);
  CHECK(outs[0].item() == 12.0);
  CHECK(outs[1].item() == 40.0);
}

TEST_CASE("GradScaler: unscale_ skips parameters without a gradient and handles 0-d, empty and expanded ones") {
  Tensor a = leaf({1.0f, 2.0f});
  Tensor s0 = Tensor(tg::full({}, 3.0).data(), true);
  Tensor none = leaf({5.0f});
  Tensor empty = Tensor(tg::zeros({0}).data(), true);
  Tensor e = leaf({1.0f, 1.0f, 1.0f});
  tg::optim::SGD opt({a, s0, none, empty, e}, 1.0);
  GradScaler scaler(GradScalerOptions().init_scale(4));
  scaler.scale((a * 2.0).sum() + s0 * 3.0 + empty.sum()).backward();
  e.set_grad(Tensor(tg::full({1}, 8.0).data().expand({3})));   // an expanded gradient set by hand
  CHECK(!none.grad().defined());
  scaler.unscale_(opt);
  check_params(a.grad(), {2.0, 2.0});
  CHECK(s0.grad().item() == 3.0);
  CHECK(empty.grad().numel() == 0);
  check_params(e.grad(), {2.0, 2.0, 2.0});
  CHECK(!none.grad().defined());
  CHECK(scaler.step(opt));
  check_params(none, {5.0});
  scaler.update();
}

TEST_CASE("GradScaler: state_dict round-trips through tg::save / tg::load and load_state_dict checks everything") {
  const std::string path = testing::temp_path("tg_test_amp_scaler.safetensors");
  Tensor w = leaf({1.0f});
  tg::optim::SGD opt({w}, 0.1);
  GradScaler a(GradScalerOptions().init_scale(1000.3).growth_factor(1.7).backoff_factor(0.3).growth_interval(5));
  for (int i = 0; i < 3; ++i) {
    opt.zero_grad();
    a.scale(w.sum()).backward();
    a.step(opt);
    a.update();
  }
  tg::save(a, path);
  const auto file = tg::load_tensors(path);
  REQUIRE(file.size() == 5);
  CHECK(file[0].first == "scale");
  CHECK(file[0].second.item() == doctest::Approx(1000.3).epsilon(1e-7));   // float32(1000.3) = 1000.2999877929688
  CHECK(file[4].first == "_growth_tracker");
  CHECK(file[4].second.item() == 3);

  // A fresh scaler takes init_scale and tracker from the file; its first scale() continues from them.
  GradScaler b;
  tg::load(b, path);
  CHECK(b.get_scale() == a.get_scale());
  CHECK(b.get_growth_factor() == 1.7);
  CHECK(b.get_backoff_factor() == 0.3);
  CHECK(b.get_growth_interval() == 5);
  CHECK(b.get_growth_tracker() == 3);
  for (GradScaler* s : {&a, &b}) {
    for (int i = 0; i < 2; ++i) {
      opt.zero_grad();
      s->scale(w.sum()).backward();
      s->step(opt);
      s->update();
    }
  }
  CHECK(b.get_scale() == a.get_scale());   // both grew once, at the 5th clean step
  CHECK(a.get_scale() == doctest::Approx(1000.3 * 1.7).epsilon(1e-6));
  CHECK(b.get_growth_tracker() == 0);

  // Errors leave the scaler unchanged.
  auto state = a.state_dict();
  const double before = a.get_scale();
  auto broken = state;
  broken[1].second = tg::full({}, 0.9, tg::TensorOptions().dtype(tg::kFloat64)).data();
  TG_CHECK_THROWS(a.load_state_dict(broken), tg::Error, "The growth factor must be > 1.0");
  broken = state;
  broken.pop_back();
  TG_CHECK_THROWS(a.load_state_dict(broken), tg::Error, "\"_growth_tracker\" is missing");
  broken = state;
  broken.emplace_back("_scale", tg::full({}, 2.0).data());
  TG_CHECK_THROWS(a.load_state_dict(broken), tg::Error, "unexpected key \"_scale\"");
  broken = state;
  broken[3].second = tg::full({}, 5.0, tg::TensorOptions().dtype(tg::kFloat64)).data();
  TG_CHECK_THROWS(a.load_state_dict(broken), tg::DTypeError, "\"growth_interval\" must be an int64 integer");
  broken = state;
  broken[0].second = tg::full({2}, 5.0, tg::TensorOptions().dtype(tg::kFloat64)).data();
  TG_CHECK_THROWS(a.load_state_dict(broken), tg::Error, "\"scale\" must hold one number");
  broken = state;
  broken[0].second = tg::full({}, -1.0, tg::TensorOptions().dtype(tg::kFloat64)).data();
  TG_CHECK_THROWS(a.load_state_dict(broken), tg::Error, "the scale must be positive and finite");
  // Python: torch.amp.GradScaler("cpu").load_state_dict({}) raises RuntimeError "The source state dict
  // is empty, possibly because it was saved from a disabled instance of GradScaler."
  TG_CHECK_THROWS(a.load_state_dict({}), tg::Error, "The source state dict is empty, possibly because it was saved "
                  "from a disabled instance of GradScaler.");
  CHECK(a.get_scale() == before);
  CHECK(a.get_growth_factor() == 1.7);

  // A file of a disabled scaler is empty, and an enabled scaler refuses it.
  GradScaler off(GradScalerOptions().enabled(false));
  tg::save(off, path);
  TG_CHECK_THROWS(tg::load(a, path), tg::SerializationError, "The source state dict is empty");
  TG_CHECK_THROWS(tg::load(a, path, tg::LoadOptions().strict(false)), tg::SerializationError, "strict(false)");
  tg::optim::SGD momentum({w}, tg::optim::SGDOptions(0.1).momentum(0.9));
  momentum.zero_grad();
  (w * 2.0).sum().backward();
  momentum.step();
  tg::save(momentum, path);   // an optimizer's checkpoint is not a scaler's
  TG_CHECK_THROWS(tg::load(a, path), tg::SerializationError, "does not fit the GradScaler");
  TG_CHECK_THROWS(tg::load(a, path), tg::SerializationError, "unexpected key \"momentum_buffer.0\"");
  std::filesystem::remove(path);
}

TEST_CASE("GradScaler: errors carry PyTorch's messages (second unscale_, step after step, ...)") {
  // Python, torch 2.15.0 (the messages of torch/amp/grad_scaler.py):
  //   unscale_ before any scale(): AssertionError "Attempted unscale_ but _scale is None.  This may
  //     indicate your script did not use scaler.scale(loss or outputs) earlier in the iteration."
  //   a second unscale_: RuntimeError "unscale_() has already been called on this optimizer since the last update()."
  //   a second step: RuntimeError "step() has already been called since the last update()."
  //   unscale_ after step: RuntimeError "unscale_() is being called after step()."
  //   step on an optimizer without gradients: AssertionError "No inf checks were recorded for this optimizer."
  //   update without any check: AssertionError "No inf checks were recorded prior to update."
  Tensor w = leaf({1.0f});
  tg::optim::SGD opt({w}, 0.1);
  GradScaler s;
  TG_CHECK_THROWS(s.unscale_(opt), tg::Error, "Attempted unscale_ but _scale is None");
  TG_CHECK_THROWS(s.step(opt), tg::Error, "Attempted step but _scale is None");
  TG_CHECK_THROWS(s.update(), tg::Error, "Attempted update but _scale is None");
  s.scale(w.sum()).backward();
  s.unscale_(opt);
  TG_CHECK_THROWS(s.unscale_(opt), tg::Error, "unscale_() has already been called on this optimizer since the last update().");
  CHECK(s.step(opt));
  const auto after_step = w.to_vector<float>();
  TG_CHECK_THROWS(s.step(opt), tg::Error, "step() has already been called since the last update().");
  CHECK(w.to_vector<float>() == after_step);   // the refused step changed nothing
  TG_CHECK_THROWS(s.unscale_(opt), tg::Error, "unscale_() is being called after step().");
  s.update();
  tg::optim::SGD no_grads({leaf({1.0f})}, 0.1);
  TG_CHECK_THROWS(s.step(no_grads), tg::Error, "No inf checks were recorded for this optimizer.");
  s.update(1024.0);   // update(new_scale) needs no checks
  CHECK(s.get_scale() == 1024.0);
  TG_CHECK_THROWS(s.update(), tg::Error, "No inf checks were recorded prior to update.");
  TG_CHECK_THROWS(s.update(0.0), tg::Error, "the scale must be positive and finite");
  TG_CHECK_THROWS(s.update(1e39), tg::Error, "outside float32's range");
  TG_CHECK_THROWS(s.scale(tg::randint(0, 3, {2})), tg::DTypeError, "scale");

  // Python: GradScaler(growth_factor=1.0) -> "The growth factor must be > 1.0."; backoff_factor=1.0 ->
  // "The backoff factor must be < 1.0."
  TG_CHECK_THROWS(GradScaler(GradScalerOptions().growth_factor(1.0)), tg::Error, "The growth factor must be > 1.0");
  TG_CHECK_THROWS(GradScaler(GradScalerOptions().backoff_factor(1.0)), tg::Error, "The backoff factor must be < 1.0");
  TG_CHECK_THROWS(GradScaler(GradScalerOptions().growth_interval(0)), tg::Error, "growth interval must be at least 1");
  TG_CHECK_THROWS(GradScaler(GradScalerOptions().init_scale(kNaN)), tg::Error, "positive and finite");
  TG_CHECK_THROWS(s.set_growth_factor(0.5), tg::Error, "The growth factor must be > 1.0");
}

TEST_CASE("GradScaler: a graph scaled before update() keeps the scale it saw") {
  // update() replaces the device copy of the scale instead of writing into it, so a retained graph
  // still backwards with the scale it was built with. (PyTorch 2.15.0 fills its scale tensor in place,
  // and the same program raises "one of the variables needed for gradient computation has been
  // modified by an inplace operation" there.)
  Tensor w = leaf({1.0f});
  GradScaler s(GradScalerOptions().init_scale(8));
  Tensor scaled = s.scale((w * 3.0).sum());
  scaled.backward(Tensor(), /*retain_graph=*/true);
  s.update(2.0);
  w.zero_grad();
  scaled.backward();
  CHECK(w.grad().item() == 24.0);
  CHECK(s.scale(w.sum()).item() == 2.0);
}

// As tests/test_cuda.cpp: skips visibly without a GPU, fails instead under TG_REQUIRE_CUDA=1.
TEST_CASE("GradScaler: a 16-bit loss is scaled in float32, float16 gradients are refused as in PyTorch") {
  // torch: (torch.ones((), dtype=torch.float16) * scaler._scale).dtype is torch.float32, and
  // scaler.unscale_ raises ValueError("Attempting to unscale FP16 gradients.") for a float16 .grad.
  GradScaler scaler;
  for (tg::DType d : {tg::kFloat16, tg::kBFloat16}) {
    Tensor w = tg::full({2}, 1.0, tg::TensorOptions().dtype(d).requires_grad(true));
    Tensor scaled = scaler.scale(tg::sum(w * 2.0));
    CHECK(scaled.dtype() == tg::kFloat32);
    CHECK(scaled.item() == 4.0 * 65536);   // would be inf in float16
    scaled.backward();
    CHECK(w.grad().dtype() == d);
    tg::optim::SGD sgd({w}, 0.1);
    if (d == tg::kFloat16) {
      TG_CHECK_THROWS(scaler.unscale_(sgd), tg::DTypeError, "Attempting to unscale FP16 gradients.");
    } else {
      CHECK(scaler.step(sgd));
      scaler.update();
      CHECK(w.grad().to_vector<float>() == std::vector<float>{2, 2});   // unscaled
    }
  }
}

TEST_CASE("cuda amp: GradScaler schedule A on a CUDA parameter matches PyTorch's") {
  if (!tg::cuda::is_available()) {
    const char* v = std::getenv("TG_REQUIRE_CUDA");
    if (v != nullptr && std::string(v) == "1") FAIL("TG_REQUIRE_CUDA=1 but no usable GPU:\n" << tg::cuda::info());
    MESSAGE("no CUDA device: skipped");
    return;
  }
  run_schedule_a(tg::Device::cuda(0));
}
