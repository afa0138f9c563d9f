// tests/test_schedulers.cpp: ExponentialLR, MultiStepLR, ConstantLR, LambdaLR, MultiplicativeLR,
// SequentialLR, OneCycleLR (with momentum cycling) and ReduceLROnPlateau against torch 2.15.0
// (tests/scheduler_reference.h), and their argument errors. StepLR, CosineAnnealingLR, LinearLR and
// chaining: tests/test_optim.cpp.
#include <cmath>
#include <filesystem>
#include <functional>
#include <memory>

#include "scheduler_reference.h"
#include "testing.h"

using tg::Tensor;
namespace optim = tg::optim;

namespace {

const std::vector<std::vector<double>>& reference(const std::string& name) {
  for (const auto& [n, rows] : scheduler_reference::histories())
    if (n == name) return rows;
  FAIL("no reference history named " << name);
  static const std::vector<std::vector<double>> none;
  return none;
}

std::vector<optim::ParamGroup> groups(const std::vector<double>& lrs) {
  std::vector<optim::ParamGroup> out;
  for (double lr : lrs) out.push_back({{tg::zeros({1}, tg::TensorOptions().requires_grad(true))}, lr});
  return out;
}

enum class Momentum { kNone, kSgd, kBeta1 };

/// Every group's lr, then (kSgd, kBeta1) every group's momentum or beta1.
std::vector<double> row(optim::Optimizer& opt, Momentum m) {
  std::vector<double> r;
  for (std::size_t g = 0; g < opt.num_param_groups(); ++g) r.push_back(opt.lr(g));
  for (std::size_t g = 0; g < opt.num_param_groups() && m != Momentum::kNone; ++g) {
    const auto& o = opt.param_groups()[g].options();
    r.push_back(m == Momentum::kSgd ? static_cast<const optim::SGDOptions&>(o).momentum()
                                    : std::get<0>(static_cast<const optim::AdamOptions&>(o).betas()));
  }
  return r;
}

// The same double operations as PyTorch's get_lr() in the same order; only cos may differ by an ulp
// between C libraries. At most 15 steps of a few roundings of values at most 2: 15 * 5 * 2 * 2^-53
// < 2e-14.
constexpr double kLrTol = 3e-14;

/// The rows after construction and after each of n calls of step, compared with the first n + 1 rows
/// of the reference `name` (all of them unless a test stops early on purpose).
void check_history(const std::string& name, optim::Optimizer& opt, const std::function<void(int)>& step, int n,
                   Momentum m = Momentum::kNone) {
  CAPTURE(name);
  const auto& want = reference(name);
  REQUIRE(want.size() >= static_cast<std::size_t>(n) + 1);
  for (int i = 0; i <= n; ++i) {
    if (i > 0) step(i - 1);
    const auto got = row(opt, m);
    REQUIRE(got.size() == want[i].size());
    for (std::size_t k = 0; k < got.size(); ++k)
      CHECK_MESSAGE(std::fabs(got[k] - want[i][k]) <= kLrTol, "row " << i << " column " << k << ": " << got[k]
                                                                     << " vs torch " << want[i][k]);
  }
}

}  // namespace

TEST_CASE("schedulers: ExponentialLR MultiStepLR ConstantLR LambdaLR MultiplicativeLR follow torch 2.15") {
  {
    optim::SGD sgd(groups({1.0, 0.5}), 1.0);
    optim::ExponentialLR s(sgd, 0.9);
    check_history("ExponentialLR", sgd, [&](int) { s.step(); }, 6);
    CHECK(s.get_last_lr(1) == doctest::Approx(0.2657205));
  }
  {
    optim::SGD sgd(groups({1.0, 0.5}), 1.0);
    optim::MultiStepLR s(sgd, {5, 2, 5, 7}, 0.5);   // 5 twice: gamma^2 there
    check_history("MultiStepLR", sgd, [&](int) { s.step(); }, 9);
  }
  {
    optim::SGD sgd(groups({1.0, 0.5}), 1.0);
    optim::ConstantLR s(sgd, 0.25, 3);
    check_history("ConstantLR", sgd, [&](int) { s.step(); }, 5);
  }
  {
    optim::SGD sgd(groups({1.0, 0.5}), 1.0);
    optim::LambdaLR s(sgd, [](int64_t e) { return std::pow(0.95, static_cast<double>(e)); });
    check_history("LambdaLR", sgd, [&](int) { s.step(); }, 6);
  }
  {
    optim::SGD sgd(groups({1.0, 0.5}), 1.0);
    optim::LambdaLR s(sgd, std::vector<std::function<double(int64_t)>>{
                               [](int64_t e) { return 1 / (static_cast<double>(e) + 1); },
                               [](int64_t e) { return 0.5 * static_cast<double>(e) + 1; }});
    check_history("LambdaLR per group", sgd, [&](int) { s.step(); }, 6);
  }
  {
    optim::SGD sgd(groups({1.0, 0.5}), 1.0);
    optim::MultiplicativeLR s(sgd, [](int64_t e) { return 0.9 - 0.01 * static_cast<double>(e); });
    check_history("MultiplicativeLR", sgd, [&](int) { s.step(); }, 5);
  }
  {
    optim::SGD sgd(groups({1.0, 0.5}), 1.0);   // chainable: each multiplies the current rate
    optim::ExponentialLR a(sgd, 0.9);
    optim::MultiStepLR b(sgd, {2, 4}, 0.5);
    check_history("ExponentialLR and MultiStepLR chained", sgd, [&](int) { a.step(); b.step(); }, 6);
  }
}

TEST_CASE("schedulers: SequentialLR runs its schedulers one after another as torch 2.15") {
  {
    optim::SGD sgd(groups({1.0, 0.5}), 1.0);
    optim::LinearLR warm(sgd, 0.1, 1.0, 3);
    optim::CosineAnnealingLR cos(sgd, 5, 0.01);
    optim::SequentialLR seq(sgd, {&warm, &cos}, {3});
    check_history("SequentialLR LinearLR then CosineAnnealingLR", sgd, [&](int) { seq.step(); }, 10);
    CHECK(seq.last_epoch() == 10);
    CHECK(cos.last_epoch() == 7);   // restarted at 0 at the milestone (epoch 3)
    CHECK(std::fabs(seq.get_last_lr(1) - 0.17929083637813795) <= kLrTol);
  }
  {
    optim::SGD sgd(groups({1.0, 0.5}), 1.0);
    optim::ConstantLR a(sgd, 0.5, 2);
    optim::ExponentialLR b(sgd, 0.9);
    optim::StepLR c(sgd, 2, 0.5);
    optim::SequentialLR seq(sgd, {&a, &b, &c}, {3, 6});
    check_history("SequentialLR ConstantLR ExponentialLR StepLR", sgd, [&](int) { seq.step(); }, 10);
  }
  optim::SGD sgd(groups({1.0}), 1.0), other(groups({1.0}), 1.0);
  optim::ExponentialLR a(sgd, 0.9), b(sgd, 0.5), elsewhere(other, 0.9);
  TG_CHECK_THROWS(optim::SequentialLR(sgd, {}, {}), tg::Error, "SequentialLR expects at least one scheduler");
  TG_CHECK_THROWS(optim::SequentialLR(sgd, {&a, nullptr}, {2}), tg::Error, "scheduler 1 is null");
  TG_CHECK_THROWS(optim::SequentialLR(sgd, {&a, &elsewhere}, {2}), tg::Error,
                  "expects all schedulers to belong to the same optimizer, but got scheduler 1");
  TG_CHECK_THROWS(optim::SequentialLR(sgd, {&a, &b}, {2, 4}), tg::Error,
                  "number of schedulers 2 and the number of milestones to be equal to 2");
  CHECK(a.last_epoch() == 0);   // a refused SequentialLR moved no scheduler
}

TEST_CASE("schedulers: OneCycleLR cycles the learning rate and the momentum or beta1 as torch 2.15") {
  {
    optim::SGD sgd(groups({0.1, 0.05}), optim::SGDOptions(0.1).momentum(0.9));
    optim::OneCycleLR s(sgd, std::vector<double>{1.0, 0.5}, optim::OneCycleLROptions().total_steps(10));
    check_history("OneCycleLR cos SGD", sgd, [&](int) { s.step(); }, 10, Momentum::kSgd);
    CHECK(sgd.initial_lr(1) == doctest::Approx(0.02));   // max_lr / div_factor
    TG_CHECK_THROWS(s.step(), tg::Error, "Tried to step 11 times. The specified number of total steps is 10");
    CHECK(s.last_epoch() == 10);
  }
  {
    optim::Adam adam(groups({0.1, 0.05}), optim::AdamOptions(0.1));
    optim::OneCycleLR s(adam, 1.0, optim::OneCycleLROptions().epochs(3).steps_per_epoch(4).pct_start(0.25)
                                       .anneal_strategy("linear").div_factor(10).final_div_factor(100)
                                       .three_phase(true).base_momentum(0.8).max_momentum(0.9));
    CHECK(s.total_steps() == 12);
    check_history("OneCycleLR three_phase linear Adam", adam, [&](int) { s.step(); }, 11, Momentum::kBeta1);
    // torch 2.15 then sets the 12th rate, linear past the end, to -0.013142857142857137: we refuse a
    // negative learning rate, and the step changes nothing
    TG_CHECK_THROWS(s.step(), tg::Error, "invalid learning rate -0.01314");
    CHECK(s.last_epoch() == 11);
    CHECK(std::fabs(adam.lr(0) - reference("OneCycleLR three_phase linear Adam")[11][0]) <= kLrTol);
  }
  {
    optim::SGD sgd(groups({0.1}), 0.1);
    optim::OneCycleLR s(sgd, 0.3, optim::OneCycleLROptions().total_steps(7).cycle_momentum(false).pct_start(0.4));
    check_history("OneCycleLR no momentum", sgd, [&](int) { s.step(); }, 7, Momentum::kSgd);
  }
  Tensor w = testing::randn64({2}, 5);
  optim::Adagrad adagrad({w}, 0.1);
  TG_CHECK_THROWS(optim::OneCycleLR(adagrad, 1.0, optim::OneCycleLROptions().total_steps(10)), tg::Error,
                  "optimizer must support momentum or beta1 with `cycle_momentum` option enabled");
  CHECK(!adagrad.initial_lr(0).has_value());   // refused before anything was set
  optim::OneCycleLR fine(adagrad, 1.0, optim::OneCycleLROptions().total_steps(10).cycle_momentum(false));
  CHECK(adagrad.lr() == doctest::Approx(0.04));
  optim::SGD sgd(groups({0.1, 0.2}), 0.1);
  TG_CHECK_THROWS(optim::OneCycleLR(sgd, 1.0, {}), tg::Error, "You must define either total_steps OR (epochs AND steps_per_epoch)");
  TG_CHECK_THROWS(optim::OneCycleLR(sgd, 1.0, optim::OneCycleLROptions().total_steps(-3)), tg::Error,
                  "Expected positive integer total_steps, but got -3");
  TG_CHECK_THROWS(optim::OneCycleLR(sgd, 1.0, optim::OneCycleLROptions().epochs(2).steps_per_epoch(-1)), tg::Error,
                  "Expected positive integer steps_per_epoch, but got -1");
  TG_CHECK_THROWS(optim::OneCycleLR(sgd, 1.0, optim::OneCycleLROptions().total_steps(5).pct_start(1.5)), tg::Error,
                  "Expected float between 0 and 1 pct_start, but got 1.5");
  TG_CHECK_THROWS(optim::OneCycleLR(sgd, 1.0, optim::OneCycleLROptions().total_steps(5).anneal_strategy("exp")),
                  tg::Error, "anneal_strategy must be one of 'cos' or 'linear', instead got exp");
  TG_CHECK_THROWS(optim::OneCycleLR(sgd, std::vector<double>{1.0, 2.0, 3.0}, optim::OneCycleLROptions().total_steps(5)),
                  tg::Error, "max_lr has 3 values, param_groups has 2");
  CHECK(!sgd.initial_lr(0).has_value());
  CHECK(static_cast<const optim::SGDOptions&>(sgd.param_groups()[0].options()).momentum() == 0.0);
}

TEST_CASE("schedulers: ReduceLROnPlateau reduces on a plateau as torch 2.15") {
  {
    const std::vector<double> m{1.0, 0.9, 0.95, 0.96, 0.97, 0.97, 0.5, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6};
    optim::SGD sgd(groups({1.0, 0.5}), 1.0);
    optim::ReduceLROnPlateau s(sgd, "min", 0.5, 2, 1e-4, "rel", 1, {0.1, 0.01});
    check_history("ReduceLROnPlateau min rel", sgd, [&](int i) { s.step(m[i]); }, static_cast<int>(m.size()));
    CHECK(s.best() == 0.5);
    CHECK(s.last_epoch() == 14);
    CHECK(s.get_last_lr(1) == 0.0625);
  }
  {
    const std::vector<double> m{0.1, 0.12, 0.2, 0.24, 0.26, 0.27, 0.28, 0.5, 0.5, 0.5, 0.5};
    optim::SGD sgd(groups({1.0, 0.5}), 1.0);
    optim::ReduceLROnPlateau s(sgd, "max", 0.3, 1, 0.05, "abs", 0, {0.05});
    check_history("ReduceLROnPlateau max abs", sgd, [&](int i) { s.step(m[i]); }, static_cast<int>(m.size()));
  }
  {
    optim::SGD sgd(groups({1e-7, 1.0}), 1.0);   // a reduction smaller than eps is skipped
    optim::ReduceLROnPlateau s(sgd, "min", 0.5, 0, 1e-4, "rel", 0, {0.0}, 1e-7);
    check_history("ReduceLROnPlateau eps", sgd, [&](int) { s.step(1.0); }, 8);
  }
  optim::SGD sgd(groups({1.0, 0.5}), 1.0);
  optim::ReduceLROnPlateau s(sgd, "min", 0.5, 1, 1e-4, "rel", 2);
  CHECK(std::isinf(s.best()));
  s.step(1.0);
  s.step(2.0);
  CHECK(s.num_bad_epochs() == 1);
  s.step(2.0);   // reduces, then rests two epochs
  CHECK(sgd.lr(0) == 0.5);
  CHECK(s.in_cooldown());
  CHECK(s.num_bad_epochs() == 0);
  TG_CHECK_THROWS(s.get_last_lr(2), tg::IndexError, "list index out of range: parameter group 2");
  TG_CHECK_THROWS(optim::ReduceLROnPlateau(sgd, "min", 1.0), tg::Error, "Factor should be < 1.0");
  TG_CHECK_THROWS(optim::ReduceLROnPlateau(sgd, "mean"), tg::Error, "mode mean is unknown!");
  TG_CHECK_THROWS(optim::ReduceLROnPlateau(sgd, "min", 0.1, 10, 1e-4, "relative"), tg::Error,
                  "threshold mode relative is unknown!");
  TG_CHECK_THROWS(optim::ReduceLROnPlateau(sgd, "min", 0.1, 10, 1e-4, "rel", 0, {0.1, 0.2, 0.3}), tg::Error,
                  "expected 2 min_lrs, got 3");
  optim::ReduceLROnPlateau per_group(sgd, "min", 0.1, 10, 1e-4, "rel", 0, {0.1, 0.2});
  sgd.add_param_group({{tg::zeros({1}, tg::TensorOptions().requires_grad(true))}, 0.3});
  TG_CHECK_THROWS(per_group.step(1.0), tg::Error, "differs from when `ReduceLROnPlateau` was initialized (2)");
  CHECK(per_group.last_epoch() == 0);
}

TEST_CASE("schedulers: ConstantLR and LambdaLR refuse bad arguments with PyTorch's words") {
  optim::SGD sgd(groups({1.0, 0.5}), 1.0);
  TG_CHECK_THROWS(optim::ConstantLR(sgd, 1.5), tg::Error, "Constant multiplicative factor expected to be between 0 and 1");
  TG_CHECK_THROWS(optim::LambdaLR(sgd, std::vector<std::function<double(int64_t)>>{[](int64_t) { return 1.0; }}),
                  tg::Error, "Expected 2 lr_lambdas, but got 1");
  TG_CHECK_THROWS(optim::LambdaLR(sgd, std::function<double(int64_t)>()), tg::Error, "lr_lambda should be a function");
  TG_CHECK_THROWS(optim::MultiplicativeLR(sgd, std::function<double(int64_t)>()), tg::Error,
                  "lr_lambda should be a function");
  CHECK(!sgd.initial_lr(0).has_value());   // refused before initial_lr was recorded
  optim::LambdaLR s(sgd, [](int64_t e) { return 1.0 / static_cast<double>(e + 1); });
  sgd.add_param_group({{tg::zeros({1}, tg::TensorOptions().requires_grad(true))}, 0.3});
  TG_CHECK_THROWS(s.step(), tg::Error, "LambdaLR: parameter group 2 was added after the scheduler was built");
  CHECK(s.last_epoch() == 0);
  CHECK(sgd.lr(0) == 1.0);
}

TEST_CASE("schedulers: a checkpoint of SequentialLR and ReduceLROnPlateau resumes the same schedule") {
  namespace optim = tg::optim;
  const std::string path = testing::temp_path("tg_scheduler_state.safetensors");
  const std::string opt_path = path + ".opt";
  // warm-up then cosine annealing, interrupted after 4 epochs and resumed by fresh objects
  auto make = [](tg::Tensor w) { return std::make_unique<optim::SGD>(std::vector<tg::Tensor>{w}, optim::SGDOptions(0.1)); };
  tg::Tensor w = tg::zeros({2}, tg::TensorOptions().requires_grad(true));
  auto opt = make(w);
  optim::LinearLR warm(*opt, 0.1, 1.0, 3);
  optim::CosineAnnealingLR cosine(*opt, 10, 0.001);
  optim::SequentialLR seq(*opt, {&warm, &cosine}, {3});
  for (int e = 0; e < 4; ++e) seq.step();
  tg::save(*opt, opt_path);
  tg::save(seq, path);
  tg::Tensor w2 = tg::zeros({2}, tg::TensorOptions().requires_grad(true));
  auto opt2 = make(w2);
  optim::LinearLR warm2(*opt2, 0.1, 1.0, 3);
  optim::CosineAnnealingLR cosine2(*opt2, 10, 0.001);
  optim::SequentialLR seq2(*opt2, {&warm2, &cosine2}, {3});
  tg::load(*opt2, opt_path);
  tg::load(seq2, path);
  CHECK(seq2.last_epoch() == 4);
  CHECK(cosine2.last_epoch() == cosine.last_epoch());
  for (int e = 0; e < 8; ++e) {
    CAPTURE(e);
    seq.step();
    seq2.step();
    CHECK(opt2->lr() == opt->lr());   // bitwise: the same recursion from the same state
  }
  // another kind of scheduler's state does not fit, and nothing changes
  optim::StepLR step(*opt2, 3);
  TG_CHECK_THROWS(tg::load(step, path), tg::SerializationError, "unexpected entries");
  CHECK(step.last_epoch() == 0);
  TG_CHECK_THROWS(tg::load(seq2, opt_path), tg::SerializationError, "the checkpoint does not fit the scheduler");

  // ReduceLROnPlateau: its best metric, bad epochs and cooldown come back
  auto opt3 = make(w);
  optim::ReduceLROnPlateau plateau(*opt3, "min", 0.5, 1, 1e-4, "rel", 1);
  for (double metric : {1.0, 0.9, 0.95, 0.97}) plateau.step(metric);
  tg::save(*opt3, opt_path);
  tg::save(plateau, path);
  auto opt4 = make(w2);
  optim::ReduceLROnPlateau plateau2(*opt4, "min", 0.5, 1, 1e-4, "rel", 1);
  tg::load(*opt4, opt_path);
  tg::load(plateau2, path);
  CHECK(plateau2.best() == 0.9);
  CHECK(plateau2.num_bad_epochs() == plateau.num_bad_epochs());
  CHECK(plateau2.in_cooldown() == plateau.in_cooldown());
  for (double metric : {0.96, 0.99, 0.5, 0.6, 0.7, 0.8}) {
    plateau.step(metric);
    plateau2.step(metric);
    CHECK(opt4->lr() == opt3->lr());
  }
  CHECK(opt3->lr() < 0.1 / 2);   // it did reduce
  std::filesystem::remove(path);
  std::filesystem::remove(opt_path);
}
