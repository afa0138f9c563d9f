// tests/test_optim.cpp: Adam/AdamW against an independent scalar transcription of torch.optim's
// algorithm, learning-rate schedulers alone and chained (against torch 2.15.0), and gradient clipping.
// SGD: tests/test_nn.cpp; clip_grad_norm's dtypes and norm types: tests/test_clip_grad.cpp.
#include <cmath>
#include <filesystem>
#include <limits>
#include <memory>
#include <random>

#include "testing.h"

using tg::Tensor;

namespace {

/// torch.optim.Adam / AdamW, one element, written from PyTorch's documented algorithm.
struct RefAdam {
  double lr, b1, b2, eps, wd;
  bool amsgrad, decoupled;
  double m = 0, v = 0, vmax = 0;
  int t = 0;
  double step(double w, double g) {
    ++t;
    if (decoupled) w *= 1 - lr * wd;
    else g += wd * w;
    m = b1 * m + (1 - b1) * g;
    v = b2 * v + (1 - b2) * g * g;
    const double bc1 = 1 - std::pow(b1, t), bc2 = 1 - std::pow(b2, t);
    double vh = v;
    if (amsgrad) vh = vmax = std::max(vmax, v);
    return w - lr / bc1 * m / (std::sqrt(vh) / std::sqrt(bc2) + eps);
  }
};

/// Three steps on the quadratic sum(a (w - c)^2), float64, comparing every element to RefAdam.
void check_adam(tg::optim::AdamOptions o, bool decoupled) {
  const std::vector<double> w0{1.0, -2.0, 0.5}, a{1.0, 3.0, 0.2}, c{0.3, 0.1, -1.0};
  Tensor w = tg::from_vector(w0, {3}, tg::TensorOptions().requires_grad(true));
  Tensor av = tg::from_vector(a, {3}), cv = tg::from_vector(c, {3});
  std::unique_ptr<tg::optim::Optimizer> opt;
  if (decoupled) opt = std::make_unique<tg::optim::AdamW>(std::vector<Tensor>{w}, o);
  else opt = std::make_unique<tg::optim::Adam>(std::vector<Tensor>{w}, o);
  std::vector<RefAdam> ref(3, RefAdam{o.lr_, o.beta1_, o.beta2_, o.eps_, o.weight_decay_, o.amsgrad_, decoupled});
  std::vector<double> expect = w0;
  for (int step = 0; step < 3; ++step) {
    opt->zero_grad();
    (av * (w - cv) * (w - cv)).sum().backward();
    opt->step();
    for (int i = 0; i < 3; ++i) expect[i] = ref[i].step(expect[i], 2 * a[i] * (expect[i] - c[i]));
    const auto got = w.to_vector<double>();
    for (int i = 0; i < 3; ++i) CHECK(got[i] == doctest::Approx(expect[i]).epsilon(1e-12));
  }
}

}  // namespace

TEST_CASE("Adam and AdamW follow torch.optim over three steps on a quadratic") {
  check_adam(tg::optim::AdamOptions(0.1), false);
  check_adam(tg::optim::AdamOptions(0.05).betas(0.8, 0.99).eps(1e-6).weight_decay(0.1), false);
  check_adam(tg::optim::AdamOptions(0.1).amsgrad(), false);
  check_adam(tg::optim::AdamOptions(0.1).weight_decay(0.01), true);
  TG_CHECK_THROWS(tg::optim::Adam(std::vector<Tensor>{}, tg::optim::AdamOptions(0.1).betas(1.0, 0.9)), tg::Error, "invalid betas");
}

TEST_CASE("Adam: the first step moves every element by about lr") {
  Tensor w = tg::from_vector(std::vector<float>{1, -1}, {2}, tg::TensorOptions().requires_grad(true));
  tg::optim::Adam adam({w}, 0.01);
  (w * w).sum().backward();
  adam.step();
  testing::check_values(w, {0.99, -0.99}, 1e-6);   // m / sqrt(v) = sign(g) at step 1
}

TEST_CASE("schedulers: StepLR CosineAnnealingLR and LinearLR alone follow their closed forms") {
  Tensor w = tg::ones({1}, tg::TensorOptions().requires_grad(true));
  tg::optim::SGD sgd({w}, 1.0);
  tg::optim::StepLR step(sgd, 2, 0.5);
  std::vector<double> lrs;
  for (int e = 0; e < 5; ++e) {
    lrs.push_back(sgd.lr());
    step.step();
  }
  testing::check_values(tg::from_vector(lrs), {1, 1, 0.5, 0.5, 0.25}, 1e-12);

  tg::optim::SGD sgd2({w}, 0.1);
  tg::optim::CosineAnnealingLR cos(sgd2, 4, 0.0);
  lrs.clear();
  for (int e = 0; e < 5; ++e) {
    lrs.push_back(sgd2.lr());
    cos.step();
  }
  testing::check_values(tg::from_vector(lrs), {0.1, 0.1 * (1 + std::cos(M_PI / 4)) / 2, 0.05, 0.1 * (1 + std::cos(3 * M_PI / 4)) / 2, 0}, 1e-12);

  tg::optim::Adam adam({w}, 0.3);
  tg::optim::LinearLR warm(adam, 0.5, 1.0, 2);
  lrs.clear();
  for (int e = 0; e < 4; ++e) {
    lrs.push_back(adam.lr());
    warm.step();
  }
  testing::check_values(tg::from_vector(lrs), {0.15, 0.225, 0.3, 0.3}, 1e-12);
  TG_CHECK_THROWS(tg::optim::StepLR(sgd, 0), tg::Error, "step_size must not be 0");
}

TEST_CASE("clip_grad_norm scales gradients to the max norm and returns the norm before") {
  Tensor a = tg::from_vector(std::vector<float>{3, 0}, {2}, tg::TensorOptions().requires_grad(true));
  Tensor b = tg::from_vector(std::vector<float>{0}, {1}, tg::TensorOptions().requires_grad(true));
  Tensor unused = tg::ones({2}, tg::TensorOptions().requires_grad(true));
  ((a * a).sum() * 0.5 + b * 4.0).sum().backward();   // grads: a -> [3, 0], b -> [4]
  const double norm = tg::optim::clip_grad_norm({a, b, unused}, 1.0);
  CHECK(norm == doctest::Approx(5.0));
  testing::check_values(a.grad(), {0.6, 0}, 1e-5);
  testing::check_values(b.grad(), {0.8}, 1e-5);
  CHECK(tg::optim::clip_grad_norm({a, b}, 10.0) == doctest::Approx(1.0).epsilon(1e-5));   // no change below the max
  testing::check_values(a.grad(), {0.6, 0}, 1e-5);
}

TEST_CASE("Adam state round trip through a checkpoint gives bitwise identical steps") {
  auto make = [] { return tg::from_vector(std::vector<double>{1, -2, 0.5}, {3}, tg::TensorOptions().requires_grad(true)); };
  auto loss = [](const Tensor& w) { return (w * w * w).sum(); };
  Tensor wa = make();
  tg::optim::Adam a({wa}, tg::optim::AdamOptions(0.1).amsgrad());
  for (int i = 0; i < 2; ++i) {
    a.zero_grad();
    loss(wa).backward();
    a.step();
  }
  const std::string path = testing::temp_path("tg_adam_state.safetensors");
  tg::save(a, path);
  Tensor wb = tg::from_vector(wa.to_vector<double>(), {3}, tg::TensorOptions().requires_grad(true));
  tg::optim::Adam b({wb}, tg::optim::AdamOptions(0.1).amsgrad());
  tg::load(b, path);
  for (auto* pair : {&a, &b}) {
    Tensor w = pair == &a ? wa : wb;
    pair->zero_grad();
    loss(w).backward();
    pair->step();
  }
  CHECK(wa.to_vector<double>() == wb.to_vector<double>());
  // The checkpoint brings its groups' options (amsgrad among them), as PyTorch's load_state_dict.
  tg::optim::Adam plain({wb}, 0.1);
  tg::load(plain, path);
  CHECK(static_cast<tg::optim::AdamOptions&>(plain.param_groups()[0].options()).amsgrad_);
  // The state alone does not fit an optimizer without amsgrad: its max_exp_avg_sq entry is unexpected.
  tg::save_tensors(a.state(), path);
  tg::optim::Adam bare({wb}, 0.1);
  TG_CHECK_THROWS(tg::load(bare, path), tg::Error, "incomplete");
  std::filesystem::remove(path);
}

TEST_CASE("parameter groups: each group steps with its own learning rate and schedulers scale each") {
  Tensor a = tg::from_vector(std::vector<double>{1}, {1}, tg::TensorOptions().requires_grad(true));
  Tensor b = tg::from_vector(std::vector<double>{1}, {1}, tg::TensorOptions().requires_grad(true));
  Tensor c = tg::from_vector(std::vector<double>{1}, {1}, tg::TensorOptions().requires_grad(true));
  tg::optim::SGD sgd({tg::optim::ParamGroup{{a}, 0.1}, tg::optim::ParamGroup{{b}, std::nullopt}}, 0.5);
  CHECK(sgd.num_param_groups() == 2);
  CHECK(sgd.lr(0) == 0.1);
  CHECK(sgd.lr(1) == 0.5);   // the default
  sgd.add_param_group({{c}, 1.0});
  (a + b + c).sum().backward();   // every gradient is 1
  sgd.step();
  testing::check_values(a, {0.9}, 1e-15);
  testing::check_values(b, {0.5}, 1e-15);
  testing::check_values(c, {0.0}, 1e-15);
  tg::optim::StepLR sched(sgd, 1, 0.5);
  sched.step();
  CHECK(sgd.lr(0) == doctest::Approx(0.05));
  CHECK(sgd.lr(1) == doctest::Approx(0.25));
  CHECK(sgd.lr(2) == doctest::Approx(0.5));
  sgd.set_lr(0.01);
  CHECK(sgd.lr(2) == 0.01);
  TG_CHECK_THROWS(sgd.lr(3), tg::IndexError, "parameter group 3 does not exist");
  TG_CHECK_THROWS(sgd.add_param_group({{a}, 0.1}), tg::Error, "more than one parameter group");
  tg::optim::Adam adam({tg::optim::ParamGroup{{a}, 0.01}, tg::optim::ParamGroup{{b}, 0.0}});
  const double b_before = b.item();
  adam.zero_grad();
  (a * b).sum().backward();
  adam.step();
  CHECK(b.item() == b_before);   // lr 0 leaves the group unchanged
  CHECK(a.item() != 0.9);
}

TEST_CASE("optimizer state whose parameter changed shape is refused before any update (SGD, Adam)") {
  for (int which = 0; which < 2; ++which) {
    Tensor a = testing::randn64({4}, 1), b = testing::randn64({3, 3}, 2);
    std::unique_ptr<tg::optim::Optimizer> opt;
    if (which == 0) opt = std::make_unique<tg::optim::SGD>(std::vector<Tensor>{a, b}, tg::optim::SGDOptions(0.1).momentum(0.9));
    else opt = std::make_unique<tg::optim::Adam>(std::vector<Tensor>{a, b}, tg::optim::AdamOptions(0.1).amsgrad());
    auto one_step = [&] {
      opt->zero_grad();
      ((a * a).sum() + (b * b).sum()).backward();
      opt->step();
    };
    one_step();   // creates the state at the old shapes
    b.set_data(testing::randn64({5, 7}, 3, false).data());   // documented as allowed
    const auto a_before = a.to_vector<double>();
    opt->zero_grad();
    ((a * a).sum() + (b * b).sum()).backward();
    TG_CHECK_THROWS(opt->step(), tg::ShapeError, "must match the size of parameter 1");
    CHECK(a.to_vector<double>() == a_before);   // all or nothing: parameter 0 was not stepped either
  }
}

TEST_CASE("optimizers validate their arguments as PyTorch does") {
  Tensor w = testing::randn64({2}, 4);
  TG_CHECK_THROWS(tg::optim::SGD(std::vector<Tensor>{}, tg::optim::SGDOptions(0.1)), tg::Error,
                  "optimizer got an empty parameter list");
  tg::nn::Module empty_model;   // no registered parameters: an optimizer over it would do nothing
  TG_CHECK_THROWS(tg::optim::Adam(empty_model.parameters()), tg::Error, "empty parameter list");
  TG_CHECK_THROWS(tg::optim::SGD({w}, tg::optim::SGDOptions(0.1).weight_decay(-0.1)), tg::Error, "invalid weight_decay");
  TG_CHECK_THROWS(tg::optim::SGD({w}, tg::optim::SGDOptions(-1)), tg::Error, "invalid learning rate");
  TG_CHECK_THROWS(tg::optim::SGD({w}, tg::optim::SGDOptions(std::nan(""))), tg::Error, "invalid learning rate");
  TG_CHECK_THROWS(tg::optim::Adam({w}, tg::optim::AdamOptions(0.1).weight_decay(-1)), tg::Error, "invalid weight_decay");
  TG_CHECK_THROWS(tg::optim::Adam({w}, tg::optim::AdamOptions(0.1).eps(-1e-8)), tg::Error, "invalid epsilon");
  TG_CHECK_THROWS(tg::nn::init::uniform_(w, 1, 0), tg::Error, "from=1 > to=0");
  TG_CHECK_THROWS(tg::nn::init::normal_(w, 0, -1), tg::Error, "std >= 0.0");
}

namespace {

/// The learning rates of every group before the first step and after each of n steps of `schedulers`
/// (stepped in order after each optimizer step, as a training loop does), one row per point in time.
std::vector<std::vector<double>> lr_history(tg::optim::Optimizer& opt,
                                            const std::vector<tg::optim::LRScheduler*>& schedulers, int n) {
  auto row = [&] {
    std::vector<double> r;
    for (std::size_t g = 0; g < opt.num_param_groups(); ++g) r.push_back(opt.lr(g));
    return r;
  };
  std::vector<std::vector<double>> out{row()};
  for (int i = 0; i < n; ++i) {
    for (auto* s : schedulers) s->step();
    out.push_back(row());
  }
  return out;
}

/// Rows of learning rates equal within tol (absolute), with the step that differs in the message.
void check_history(const std::vector<std::vector<double>>& got, const std::vector<std::vector<double>>& want,
                   double tol) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    REQUIRE(got[i].size() == want[i].size());
    for (std::size_t g = 0; g < got[i].size(); ++g)
      CHECK_MESSAGE(std::fabs(got[i][g] - want[i][g]) <= tol, "step " << i << " group " << g << ": " << got[i][g]
                                                                     << " vs " << want[i][g]);
  }
}

tg::optim::SGD sgd_groups(const std::vector<double>& lrs) {
  std::vector<tg::optim::ParamGroup> groups;
  for (double lr : lrs) groups.push_back({{tg::zeros({1}, tg::TensorOptions().requires_grad(true))}, lr});
  return tg::optim::SGD(groups, 1.0);
}

/// One row per step of a single group.
std::vector<std::vector<double>> rows(const std::vector<double>& lrs) {
  std::vector<std::vector<double>> out;
  for (double lr : lrs) out.push_back({lr});
  return out;
}

// The schedules below are the same double operations as PyTorch's get_lr() in the same order; only
// cos may differ by an ulp between C libraries. 13 steps of at most 5 roundings of rates at most 2:
// 13 * 5 * 2 * 2^-53 < 1.5e-14 for each computation.
constexpr double kLrTol = 3e-14;

}  // namespace

TEST_CASE("schedulers compose on one optimizer: each multiplies the current learning rate, as torch 2.15") {
  using namespace tg::optim;
  // opt = torch.optim.SGD([p], lr=1.0); s1 = StepLR(opt, 3, 0.5); s2 = LinearLR(opt, 0.5, 1.0, 4); then 10
  // times opt.step(); s1.step(); s2.step(), recording opt.param_groups[0]["lr"] (torch 2.15.0), in either
  // order of construction and stepping:
  const auto step_linear = rows({0.5, 0.625, 0.75, 0.4375, 0.5, 0.5, 0.25, 0.25, 0.25, 0.125, 0.125});
  for (int order = 0; order < 2; ++order) {
    CAPTURE(order);
    SGD sgd = sgd_groups({1.0});
    std::unique_ptr<LRScheduler> a, b;
    if (order == 0) {
      a = std::make_unique<StepLR>(sgd, 3, 0.5);
      b = std::make_unique<LinearLR>(sgd, 0.5, 1.0, 4);
    } else {
      a = std::make_unique<LinearLR>(sgd, 0.5, 1.0, 4);
      b = std::make_unique<StepLR>(sgd, 3, 0.5);
    }
    check_history(lr_history(sgd, {a.get(), b.get()}, 10), step_linear, kLrTol);
    // s1.base_lrs == s2.base_lrs == [1.0]: the second scheduler reads initial_lr, set before the first's warm-up
    CHECK(a->base_lr() == 1.0);
    CHECK(b->base_lr() == 1.0);
    CHECK(sgd.initial_lr(0) == 1.0);
  }
  {
    // LinearLR(opt, 0.25, 1.0, 3) then CosineAnnealingLR(opt, 5, 0.01), 12 steps (torch 2.15.0);
    // s1.get_last_lr() -> [0.9054634122155997] (before s2's last step), s2.get_last_lr() -> [0.6579634122155994]
    SGD sgd = sgd_groups({1.0});
    LinearLR warm(sgd, 0.25, 1.0, 3);
    CosineAnnealingLR cos(sgd, 5, 0.01);
    check_history(lr_history(sgd, {&warm, &cos}, 12),
                  rows({0.25, 0.45320916362186214, 0.4946817794215431, 0.35288765964794455, 0.10477181826211074, 0.01,
                        0.104536587784401, 0.35203658778440117, 0.6579634122155993, 0.9054634122155996,
                        1.0000000000000004, 0.9054634122155997, 0.6579634122155994}),
                  kLrTol);
    CHECK(std::fabs(warm.get_last_lr() - 0.9054634122155997) <= kLrTol);
    CHECK(std::fabs(cos.get_last_lr() - 0.6579634122155994) <= kLrTol);
    CHECK(cos.base_lr() == 1.0);
  }
  {
    // Two groups at 0.3 and 2.0: StepLR(opt, 2, 0.5) and StepLR(opt, 3, 0.1), 7 steps (torch 2.15.0)
    SGD sgd = sgd_groups({0.3, 2.0});
    StepLR s1(sgd, 2, 0.5), s2(sgd, 3, 0.1);
    check_history(lr_history(sgd, {&s1, &s2}, 7),
                  {{0.3, 2.0}, {0.3, 2.0}, {0.15, 1.0}, {0.015, 0.1}, {0.0075, 0.05}, {0.0075, 0.05},
                   {0.000375, 0.0025000000000000005}, {0.000375, 0.0025000000000000005}},
                  kLrTol);
  }
  {
    // Two groups at 0.3 and 2.0: LinearLR(opt, 0.5, 0.2, 3) and CosineAnnealingLR(opt, 4, 0.05), 9 steps
    SGD sgd = sgd_groups({0.3, 2.0});
    LinearLR s1(sgd, 0.5, 0.2, 3);
    CosineAnnealingLR s2(sgd, 4, 0.05);
    check_history(lr_history(sgd, {&s1, &s2}, 9),
                  {{0.15, 1.0},
                   {0.10974873734152915, 0.6901650429449553},
                   {0.06892766952966368, 0.3239276695296636},
                   {0.04881430372189613, 0.09860615092018304},
                   {0.05, 0.05},
                   {0.08661165235168156, 0.3355708883431161},
                   {0.17500000000000004, 1.0250000000000001},
                   {0.2633883476483186, 1.7144291116568844},
                   {0.30000000000000016, 2.0000000000000004},
                   {0.2633883476483186, 1.7144291116568844}},
                  kLrTol);
    CHECK(s1.base_lr(1) == 2.0);
    CHECK(s2.base_lr(1) == 2.0);
  }
}

TEST_CASE("schedulers compose: chained StepLRs and a LinearLR give the product of their closed forms") {
  // The rule on random hyperparameters: multiplicative schedulers chained on one optimizer give
  // base_lr * prod_i factor_i(epoch), each factor its closed form alone.
  using namespace tg::optim;
  std::mt19937_64 rng(20240611);
  std::uniform_real_distribution<double> unit(0.05, 0.95);
  std::uniform_int_distribution<int> size(1, 5);
  for (int trial = 0; trial < 6; ++trial) {
    const double lr0 = 3 * unit(rng), lr1 = unit(rng), g1 = unit(rng), g2 = unit(rng), start = unit(rng),
                 end = unit(rng);
    const int s1 = size(rng), s2 = size(rng), total = size(rng) + 1;
    CAPTURE(trial);
    SGD sgd = sgd_groups({lr0, lr1});
    StepLR a(sgd, s1, g1);
    LinearLR w(sgd, start, end, total);
    StepLR b(sgd, s2, g2);
    const auto got = lr_history(sgd, {&a, &w, &b}, 17);
    for (int e = 0; e <= 17; ++e) {
      const double f = std::pow(g1, e / s1) * std::pow(g2, e / s2) *
                       (start + (end - start) * std::min(e, total) / static_cast<double>(total));
      for (std::size_t g = 0; g < 2; ++g) {
        const double want = (g == 0 ? lr0 : lr1) * f;
        // 17 steps of a few roundings each, against pow and one division: relative 1e-13 is 450 ulps
        CHECK_MESSAGE(std::fabs(got[e][g] - want) <= 1e-13 * want, "epoch " << e << " group " << g << ": "
                                                                         << got[e][g] << " vs " << want);
      }
    }
  }
}

TEST_CASE("CosineAnnealingLR: PyTorch's recursive form past T_max, a negative T_max, groups added later") {
  using namespace tg::optim;
  // CosineAnnealingLR(opt, 3, 0.1) from lr 1.0, 13 steps: it rises again after T_max (torch 2.15.0)
  const auto cos3 = rows({1.0, 0.775, 0.3250000000000001, 0.1, 0.32499999999999996, 0.7750000000000005,
                          1.0000000000000007, 0.7750000000000007, 0.3250000000000005, 0.1, 0.32499999999999996,
                          0.7749999999999991, 0.9999999999999994, 0.7749999999999996});
  for (int64_t t : {3, -3}) {   // CosineAnnealingLR(opt, -3, 0.1) gives the same rates in torch 2.15.0
    CAPTURE(t);
    SGD sgd = sgd_groups({1.0});
    CosineAnnealingLR cos(sgd, t, 0.1);
    check_history(lr_history(sgd, {&cos}, 13), cos3, kLrTol);
  }
  {
    // A group added after StepLR(opt, 2, 0.5) is stepped too: after steps 1 to 4, [[1.0, 0.2], [0.5, 0.1],
    // [0.5, 0.1], [0.25, 0.05]]; the scheduler has no base_lr for it and its initial_lr stays unset (torch 2.15.0)
    SGD sgd = sgd_groups({1.0});
    StepLR s(sgd, 2, 0.5);
    sgd.add_param_group({{tg::zeros({1}, tg::TensorOptions().requires_grad(true))}, 0.2});
    check_history(lr_history(sgd, {&s}, 4), {{1.0, 0.2}, {1.0, 0.2}, {0.5, 0.1}, {0.5, 0.1}, {0.25, 0.05}}, kLrTol);
    CHECK(s.num_base_lrs() == 1);
    TG_CHECK_THROWS(s.base_lr(1), tg::IndexError, "base_lr: list index out of range: parameter group 1");
    CHECK(!sgd.initial_lr(1).has_value());
    CHECK(s.get_last_lr(1) == doctest::Approx(0.05));
  }
  {
    // CosineAnnealingLR(opt, 2) with a group added: steps 1 and 2 -> [0.5, 0.1], [0.0, 0.0]; step 3 needs
    // the new group's base_lr and PyTorch raises ValueError: zip() argument 2 is longer than argument 1
    SGD sgd = sgd_groups({1.0});
    CosineAnnealingLR cos(sgd, 2, 0.0);
    sgd.add_param_group({{tg::zeros({1}, tg::TensorOptions().requires_grad(true))}, 0.2});
    check_history(lr_history(sgd, {&cos}, 2), {{1.0, 0.2}, {0.5, 0.1}, {0.0, 0.0}}, kLrTol);
    TG_CHECK_THROWS(cos.step(), tg::Error, "parameter group 1 was added after the scheduler was built");
    CHECK(cos.last_epoch() == 2);   // a step that raises changes nothing
    CHECK(sgd.lr(0) == doctest::Approx(0.0));
  }
}

TEST_CASE("schedulers: bad arguments and indices raise tg::Error subclasses as PyTorch refuses") {
  using namespace tg::optim;
  SGD sgd = sgd_groups({1.0, 0.5});
  // PyTorch raises ZeroDivisionError (integer modulo by zero) at the first step; we refuse at
  // construction, before initial_lr is recorded.
  TG_CHECK_THROWS(StepLR(sgd, 0), tg::Error, "StepLR: step_size must not be 0");
  TG_CHECK_THROWS(CosineAnnealingLR(sgd, 0), tg::Error, "CosineAnnealingLR: T_max must not be 0");
  // LinearLR(opt, 0, 1) -> ValueError: Starting multiplicative factor expected to be greater than 0 and
  // less or equal to 1.; LinearLR(opt, 0.5, 1.1) -> ValueError: Ending multiplicative factor expected to be
  // between 0 and 1. (torch 2.15.0); neither sets initial_lr.
  TG_CHECK_THROWS(LinearLR(sgd, 0.0, 1.0), tg::Error,
                  "Starting multiplicative factor expected to be greater than 0 and less or equal to 1");
  TG_CHECK_THROWS(LinearLR(sgd, 1.5, 1.0), tg::Error, "Starting multiplicative factor");
  TG_CHECK_THROWS(LinearLR(sgd, 0.5, 1.1), tg::Error, "Ending multiplicative factor expected to be between 0 and 1");
  TG_CHECK_THROWS(LinearLR(sgd, 0.5, -0.1), tg::Error, "Ending multiplicative factor");
  CHECK(!sgd.initial_lr(0).has_value());
  CHECK(sgd.lr(0) == 1.0);
  TG_CHECK_THROWS(sgd.initial_lr(2), tg::IndexError, "parameter group 2 does not exist");
  TG_CHECK_THROWS(sgd.set_initial_lr(7, 0.1), tg::IndexError, "parameter group 7 does not exist");

  StepLR s(sgd, 2, 0.5);
  TG_CHECK_THROWS(s.base_lr(2), tg::IndexError, "base_lr: list index out of range: parameter group 2");
  TG_CHECK_THROWS(s.get_last_lr(5), tg::IndexError, "get_last_lr: list index out of range: parameter group 5");
  CHECK(s.base_lr(1) == 0.5);

  // What PyTorch accepts: StepLR(opt, -2, 0.5) -> [1.0, 1.0, 0.5, 0.5, 0.25, 0.25];
  // LinearLR(opt, 0.5, 1.0, 0) and total_iters=-3 -> [0.5, 0.5, 0.5, 0.5] (torch 2.15.0)
  SGD neg = sgd_groups({1.0});
  StepLR back(neg, -2, 0.5);
  check_history(lr_history(neg, {&back}, 5), rows({1.0, 1.0, 0.5, 0.5, 0.25, 0.25}), kLrTol);
  for (int64_t total : {0, -3}) {
    SGD flat = sgd_groups({1.0});
    LinearLR never(flat, 0.5, 1.0, total);
    check_history(lr_history(flat, {&never}, 3), rows({0.5, 0.5, 0.5, 0.5}), kLrTol);
  }
}

TEST_CASE("Adam::set_state reads the step count exactly, beyond what a double holds") {
  Tensor w = testing::randn64({5}, 17);
  tg::optim::Adam adam({w}, 0.1);
  adam.zero_grad();
  (w * w).sum().backward();
  adam.step();
  auto state = adam.state();
  auto with_step = [&](int64_t step) {
    auto s = state;
    for (auto& [name, t] : s)
      if (name == "step.0") t = tg::prim::full({}, 0.0, tg::kInt64);
    for (auto& [name, t] : s)
      if (name == "step.0") t.data<int64_t>()[0] = step;   // exact, beyond what a double holds
    return s;
  };
  for (const int64_t step : {(int64_t(1) << 53) + 1, std::numeric_limits<int64_t>::max()}) {
    adam.set_state(with_step(step));
    for (const auto& [name, t] : adam.state())
      if (name == "step.0") CHECK(t.data<int64_t>()[0] == step);
  }
  TG_CHECK_THROWS(adam.set_state(with_step(0)), tg::Error, "must be at least 1");
}

TEST_CASE("SGD: capturable(true) changes no eager step and is kept with the group's options") {
  auto run = [](bool capturable) {
    tg::manual_seed(3);
    Tensor w = tg::randn({7}).requires_grad_(true);
    tg::optim::SGD opt({w}, tg::optim::SGDOptions(0.1).momentum(0.9).nesterov(true).weight_decay(0.01).capturable(capturable));
    tg::optim::ExponentialLR sched(opt, 0.5);
    for (int k = 0; k < 3; ++k) {
      opt.zero_grad();
      (w * w * static_cast<double>(k + 1)).sum().backward();
      opt.step();
      sched.step();
    }
    return w.to_vector<float>();
  };
  const std::vector<float> plain = run(false), capturable = run(true);
  REQUIRE(plain.size() == capturable.size());
  for (std::size_t i = 0; i < plain.size(); ++i) CHECK(plain[i] == capturable[i]);
  tg::optim::SGDOptions o(0.1);
  CHECK_FALSE(o.capturable());
  o.capturable(true);
  CHECK(o.capturable());
  bool listed = false;
  for (const auto& [name, v] : o.values()) listed = listed || (name == "capturable" && v == 1.0);
  CHECK(listed);
  CHECK(o.set_value("capturable", 0.0));
  CHECK_FALSE(o.capturable());
}
