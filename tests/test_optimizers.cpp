// tests/test_optimizers.cpp: per-group options of every optimizer (nanoGPT's decay / no-decay AdamW
// groups, options read and changed through param_groups()), and RMSprop, Adagrad, Adadelta, Adamax,
// NAdam and RAdam: trajectories against torch 2.15.0 (tests/optim_reference.h), argument errors,
// checkpoint state and 16-bit parameters; LBFGS with and without its line search. Adam/AdamW alone and the schedulers: tests/test_optim.cpp.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>

#include "optim_reference.h"
#include "testing.h"

using tg::Tensor;
namespace optim = tg::optim;

namespace {

/// The script's three parameters w1 (3), w2 (2), w3 (2), float64 leaves.
struct Problem {
  std::vector<Tensor> w{tg::from_vector(std::vector<double>{1.0, -2.0, 0.5}, {3}, tg::TensorOptions().requires_grad(true)),
                        tg::from_vector(std::vector<double>{0.3, -0.7}, {2}, tg::TensorOptions().requires_grad(true)),
                        tg::from_vector(std::vector<double>{2.0, -1.5}, {2}, tg::TensorOptions().requires_grad(true))};
  std::vector<Tensor> a{tg::from_vector(std::vector<double>{1.0, 3.0, 0.2}, {3}),
                        tg::from_vector(std::vector<double>{0.5, 2.0}, {2}),
                        tg::from_vector(std::vector<double>{1.5, 0.1}, {2})};
  std::vector<Tensor> c{tg::from_vector(std::vector<double>{0.3, 0.1, -1.0}, {3}),
                        tg::from_vector(std::vector<double>{-0.4, 0.9}, {2}),
                        tg::from_vector(std::vector<double>{0.0, 0.5}, {2})};
  /// sum over the tensors of sum(a (w - c)^2) + 0.1 sum(w^3), backwarded.
  void backward() {
    Tensor loss;
    for (std::size_t k = 0; k < w.size(); ++k) {
      Tensor d = w[k] - c[k];
      Tensor term = (a[k] * d * d).sum() + (w[k] * w[k] * w[k]).sum() * 0.1;
      loss = loss.defined() ? loss + term : term;
    }
    loss.backward();
  }
  std::vector<double> values() const {
    std::vector<double> out;
    for (const Tensor& t : w)
      for (double v : t.to_vector<double>()) out.push_back(v);
    return out;
  }
};

const std::vector<std::vector<double>>& reference(const std::string& name) {
  for (const auto& [n, rows] : optim_reference::trajectories())
    if (n == name) return rows;
  FAIL("no reference trajectory named " << name);
  static const std::vector<std::vector<double>> none;
  return none;
}

// The updates are PyTorch's operations on float64 in the same order, except where a fused torch
// kernel rounds once (addcmul, addcdiv, lerp) and we round twice: about 1 ulp per operation, a few
// dozen operations per step, 8 steps, on values below 4 whose updates contract: 1e-13 absolute is
// some 200 ulps of headroom.
constexpr double kTol = 1e-13;

/// Steps the optimizer `make` builds over a fresh Problem and compares every step with the reference
/// rows of `name`; `between(opt, step)` runs after each step (as the script's).
void check_trajectory(const std::string& name, const std::function<std::unique_ptr<optim::Optimizer>(Problem&)>& make,
                      const std::function<void(optim::Optimizer&, int)>& between = nullptr) {
  CAPTURE(name);
  const auto& rows = reference(name);
  Problem p;
  auto opt = make(p);
  for (std::size_t s = 0; s < rows.size(); ++s) {
    opt->zero_grad();
    p.backward();
    opt->step();
    if (between) between(*opt, static_cast<int>(s));
    const auto got = p.values();
    REQUIRE(got.size() == rows[s].size());
    for (std::size_t k = 0; k < got.size(); ++k)
      CHECK_MESSAGE(std::fabs(got[k] - rows[s][k]) <= kTol,
                    "step " << s + 1 << " value " << k << ": " << got[k] << " vs torch " << rows[s][k]);
  }
}

/// The script's groups of the new optimizers: w1 at the defaults, w2 and w3 with options g1 and g2.
template <class Opt, class Options>
std::unique_ptr<optim::Optimizer> three_groups(Problem& p, const Options& defaults, const Options& g1, const Options& g2) {
  return std::make_unique<Opt>(std::vector<optim::ParamGroup>{{{p.w[0]}}, {{p.w[1]}, g1}, {{p.w[2]}, g2}}, defaults);
}

/// One group of every parameter at the optimizer's default options.
template <class Opt>
std::unique_ptr<optim::Optimizer> with_defaults(Problem& p) {
  return std::make_unique<Opt>(p.w);
}

}  // namespace

TEST_CASE("optimizers: per-group options of SGD, Adam and AdamW follow torch 2.15") {
  check_trajectory("SGD", [](Problem& p) {
    return std::make_unique<optim::SGD>(
        std::vector<optim::ParamGroup>{{{p.w[0]}, optim::SGDOptions(0.1).momentum(0.9).nesterov(true)},
                                       {{p.w[1]}, optim::SGDOptions(0.05).momentum(0.5).dampening(0.1).weight_decay(0.01)},
                                       {{p.w[2]}}},
        optim::SGDOptions(0.1));
  });
  // Adam: group 1's weight_decay and betas and group 2's lr change after the third step, through
  // param_groups() (torch: opt.param_groups[1]["weight_decay"] = 0.2, ...)
  check_trajectory(
      "Adam",
      [](Problem& p) {
        return std::make_unique<optim::Adam>(
            std::vector<optim::ParamGroup>{{{p.w[0]}, optim::AdamOptions(0.1).betas(0.8, 0.99).weight_decay(0.1).amsgrad()},
                                           {{p.w[1]}, 0.05},
                                           {{p.w[2]}, optim::AdamOptions(0.1).eps(1e-3)}},
            optim::AdamOptions(0.1));
      },
      [](optim::Optimizer& opt, int step) {
        if (step != 2) return;
        auto& o1 = static_cast<optim::AdamOptions&>(opt.param_groups()[1].options());
        o1.weight_decay(0.2).betas(0.5, 0.9);
        opt.param_groups()[2].options().set_lr(0.02);
      });
  // nanoGPT's recipe: decay and no-decay groups of one AdamW, and libtorch's OptimizerParamGroup spelling
  check_trajectory("AdamW", [](Problem& p) {
    std::vector<optim::OptimizerParamGroup> groups;
    groups.emplace_back(std::vector<Tensor>{p.w[0]}, std::make_unique<optim::AdamWOptions>(optim::AdamWOptions(0.1).weight_decay(0.1)));
    groups.emplace_back(std::vector<Tensor>{p.w[1]}, optim::AdamWOptions(0.1).weight_decay(0.0));
    groups.emplace_back(std::vector<Tensor>{p.w[2]}, 0.03);   // the defaults' weight_decay 1e-2
    return std::make_unique<optim::AdamW>(std::move(groups), optim::AdamWOptions(0.1));
  });
}

TEST_CASE("optimizers: RMSprop Adagrad Adadelta Adamax NAdam RAdam follow torch 2.15 with per-group options") {
  check_trajectory("RMSprop", [](Problem& p) {
    return three_groups<optim::RMSprop>(p, optim::RMSpropOptions(0.01),
        optim::RMSpropOptions(0.01).alpha(0.9).eps(1e-6).weight_decay(0.1).momentum(0.9).centered(true),
        optim::RMSpropOptions(0.02).momentum(0.5));
  });
  check_trajectory("Adagrad", [](Problem& p) {
    return three_groups<optim::Adagrad>(p, optim::AdagradOptions(0.1),
        optim::AdagradOptions(0.1).lr_decay(0.1).weight_decay(0.05).initial_accumulator_value(0.5).eps(1e-8),
        optim::AdagradOptions(0.3).initial_accumulator_value(0.1));
  });
  // PyTorch fills every sum from the constructor's initial_accumulator_value; a group's own is not read
  check_trajectory("Adagrad initial_accumulator_value", [](Problem& p) {
    return three_groups<optim::Adagrad>(p, optim::AdagradOptions(0.1).initial_accumulator_value(0.3),
                                        optim::AdagradOptions(0.1).initial_accumulator_value(0.9),
                                        optim::AdagradOptions(0.3));
  });
  check_trajectory("Adadelta", [](Problem& p) {
    return three_groups<optim::Adadelta>(p, optim::AdadeltaOptions(),
        optim::AdadeltaOptions(0.5).rho(0.8).eps(1e-4).weight_decay(0.1), optim::AdadeltaOptions().rho(0.5));
  });
  check_trajectory("Adamax", [](Problem& p) {
    return three_groups<optim::Adamax>(p, optim::AdamaxOptions(0.1),
        optim::AdamaxOptions(0.05).betas(0.7, 0.9).eps(1e-6).weight_decay(0.1), optim::AdamaxOptions(0.2));
  });
  check_trajectory("NAdam", [](Problem& p) {
    return three_groups<optim::NAdam>(p, optim::NAdamOptions(0.1),
        optim::NAdamOptions(0.05).betas(0.8, 0.95).weight_decay(0.1).momentum_decay(0.01),
        optim::NAdamOptions(0.1).weight_decay(0.1).decoupled_weight_decay(true));
  });
  check_trajectory("RAdam", [](Problem& p) {
    return three_groups<optim::RAdam>(p, optim::RAdamOptions(0.1),
        optim::RAdamOptions(0.1).betas(0.8, 0.9).weight_decay(0.1),
        optim::RAdamOptions(0.1).weight_decay(0.1).decoupled_weight_decay(true).betas(0.9, 0.9));
  });
  // each optimizer's default options, one group of all three parameters
  check_trajectory("RMSprop defaults", with_defaults<optim::RMSprop>);
  check_trajectory("Adagrad defaults", with_defaults<optim::Adagrad>);
  check_trajectory("Adadelta defaults", with_defaults<optim::Adadelta>);
  check_trajectory("Adamax defaults", with_defaults<optim::Adamax>);
  check_trajectory("NAdam defaults", with_defaults<optim::NAdam>);
  check_trajectory("RAdam defaults", with_defaults<optim::RAdam>);
  CHECK(optim::RMSpropOptions().lr() == 1e-2);
  CHECK(optim::AdagradOptions().eps() == 1e-10);
  CHECK(optim::AdadeltaOptions().lr() == 1.0);
  CHECK(optim::AdadeltaOptions().eps() == 1e-6);
  CHECK(optim::AdamaxOptions().lr() == 2e-3);
  CHECK(optim::NAdamOptions().momentum_decay() == 4e-3);
  CHECK(optim::RAdamOptions().lr() == 1e-3);
}

TEST_CASE("optimizers: param_groups() reads and sets each group's options, and bad options raise before any update") {
  Problem p;
  optim::AdamW opt({{{p.w[0]}, optim::AdamWOptions(6e-4).weight_decay(0.1)},
                    {{p.w[1], p.w[2]}, optim::AdamWOptions(6e-4).weight_decay(0.0)}});
  REQUIRE(opt.param_groups().size() == 2);
  CHECK(static_cast<const optim::AdamOptions&>(opt.param_groups()[0].options()).weight_decay() == 0.1);
  CHECK(static_cast<const optim::AdamOptions&>(opt.param_groups()[1].options()).weight_decay() == 0.0);
  CHECK(dynamic_cast<const optim::AdamWOptions*>(&opt.param_groups()[1].options()) != nullptr);
  CHECK(opt.param_groups()[1].params().size() == 2);
  CHECK(opt.lr(1) == 6e-4);
  for (auto& group : opt.param_groups()) static_cast<optim::AdamOptions&>(group.options()).lr(1e-3);   // libtorch's loop
  CHECK(opt.lr(0) == 1e-3);
  CHECK(opt.lr(1) == 1e-3);
  opt.set_lr(1, 2e-3);   // what schedulers call
  CHECK(static_cast<const optim::AdamOptions&>(opt.param_groups()[1].options()).lr() == 2e-3);
  // an option set out of range through param_groups() is refused at the next step, before any update
  static_cast<optim::AdamOptions&>(opt.param_groups()[1].options()).betas(1.5, 0.9);
  const auto before = p.values();
  opt.zero_grad();
  p.backward();
  TG_CHECK_THROWS(opt.step(), tg::Error, "AdamW (parameter group 1): invalid betas (1.5, 0.9)");
  CHECK(p.values() == before);
  static_cast<optim::AdamOptions&>(opt.param_groups()[1].options()).betas(0.9, 0.95);
  // options of another optimizer's type
  opt.param_groups()[0].set_options(std::make_unique<optim::SGDOptions>(0.1));
  TG_CHECK_THROWS(opt.step(), tg::Error, "the group's options are SGDOptions, options of another optimizer; give it AdamOptions");
  CHECK(p.values() == before);
  opt.param_groups()[0].set_options(std::make_unique<optim::AdamWOptions>(1e-3));
  opt.step();
  CHECK(p.values() != before);
  TG_CHECK_THROWS(opt.param_groups()[2], tg::IndexError, "parameter group 2 does not exist");

  // construction and add_param_group check each group's options with the group's index
  Tensor extra = testing::randn64({4}, 3);
  TG_CHECK_THROWS(optim::SGD({{{p.w[0]}, optim::SGDOptions(0.1)}, {{p.w[1]}, optim::SGDOptions(0.1).momentum(-1)}}, 0.1),
                  tg::Error, "SGD (parameter group 1): invalid momentum -1");
  TG_CHECK_THROWS(optim::SGD({{{p.w[0]}, optim::AdamOptions(0.1)}}, 0.1), tg::Error, "options of another optimizer");
  TG_CHECK_THROWS(optim::Adam({{{p.w[0]}, -1.0}}), tg::Error, "Adam (parameter group 0): invalid learning rate -1");
  TG_CHECK_THROWS(optim::SGD({{{p.w[0], p.w[0]}}}, 0.1), tg::Error, "more than once in parameter group 0");
  TG_CHECK_THROWS(opt.add_param_group({{extra}, optim::RMSpropOptions()}), tg::Error, "options of another optimizer");
  TG_CHECK_THROWS(opt.add_param_group({{extra}, optim::AdamOptions(0.1).eps(-1)}), tg::Error, "invalid epsilon");
  CHECK(opt.num_param_groups() == 2);   // a refused group is not added
  opt.add_param_group({{extra}, optim::AdamWOptions(0.5).weight_decay(0.2)});
  CHECK(opt.lr(2) == 0.5);
  CHECK(static_cast<const optim::AdamOptions&>(opt.param_groups()[2].options()).weight_decay() == 0.2);
  opt.add_param_group({{testing::randn64({2}, 4)}});   // the defaults: AdamWOptions()
  CHECK(opt.lr(3) == 1e-3);
  CHECK(static_cast<const optim::AdamOptions&>(opt.param_groups()[3].options()).weight_decay() == 1e-2);
  // a group's options are a copy: changing the ones passed in later changes nothing
  optim::SGDOptions mine(0.3);
  optim::SGD sgd({{{testing::randn64({2}, 5)}, mine}}, 0.1);
  mine.lr(0.7);
  CHECK(sgd.lr(0) == 0.3);
  CHECK(static_cast<const optim::SGDOptions&>(sgd.defaults()).lr() == 0.1);
}

TEST_CASE("optimizers: bad options of the new optimizers raise tg::Error naming the optimizer and the value") {
  Tensor w = testing::randn64({3}, 7);
  TG_CHECK_THROWS(optim::RMSprop({w}, optim::RMSpropOptions(-0.1)), tg::Error, "RMSprop: invalid learning rate -0.1");
  TG_CHECK_THROWS(optim::RMSprop({w}, optim::RMSpropOptions().alpha(-1)), tg::Error, "RMSprop: invalid alpha value -1");
  TG_CHECK_THROWS(optim::RMSprop({w}, optim::RMSpropOptions().eps(-1)), tg::Error, "RMSprop: invalid epsilon value -1");
  TG_CHECK_THROWS(optim::RMSprop({w}, optim::RMSpropOptions().momentum(-0.5)), tg::Error, "invalid momentum value -0.5");
  TG_CHECK_THROWS(optim::RMSprop({w}, optim::RMSpropOptions().weight_decay(-1)), tg::Error, "invalid weight_decay value");
  TG_CHECK_THROWS(optim::Adagrad({w}, optim::AdagradOptions().lr_decay(-1)), tg::Error, "Adagrad: invalid lr_decay value -1");
  TG_CHECK_THROWS(optim::Adagrad({w}, optim::AdagradOptions().initial_accumulator_value(-2)), tg::Error,
                  "invalid initial_accumulator_value value -2");
  TG_CHECK_THROWS(optim::Adagrad({w}, optim::AdagradOptions().eps(-1)), tg::Error, "Adagrad: invalid epsilon value");
  TG_CHECK_THROWS(optim::Adadelta({w}, optim::AdadeltaOptions().rho(1.5)), tg::Error, "Adadelta: invalid rho value 1.5");
  TG_CHECK_THROWS(optim::Adadelta({w}, optim::AdadeltaOptions().rho(-0.1)), tg::Error, "invalid rho value");
  TG_CHECK_THROWS(optim::Adadelta({w}, optim::AdadeltaOptions(std::nan(""))), tg::Error, "invalid learning rate");
  TG_CHECK_THROWS(optim::Adamax({w}, optim::AdamaxOptions().betas(1.0, 0.9)), tg::Error,
                  "Adamax: invalid beta parameter at index 0: 1");
  TG_CHECK_THROWS(optim::NAdam({w}, optim::NAdamOptions().betas(0.9, -0.1)), tg::Error,
                  "NAdam: invalid beta parameter at index 1: -0.1");
  TG_CHECK_THROWS(optim::NAdam({w}, optim::NAdamOptions().momentum_decay(-1)), tg::Error,
                  "NAdam: invalid momentum_decay value -1");
  TG_CHECK_THROWS(optim::RAdam({w}, optim::RAdamOptions().weight_decay(-1)), tg::Error, "RAdam: invalid weight_decay value -1");
  TG_CHECK_THROWS(optim::RAdam({w}, optim::RAdamOptions().eps(-1)), tg::Error, "RAdam: invalid epsilon value");
  TG_CHECK_THROWS(optim::RAdam(std::vector<Tensor>{}), tg::Error, "empty parameter list");
  TG_CHECK_THROWS(optim::RMSprop({{{w}, optim::RAdamOptions()}}), tg::Error,
                  "the group's options are RAdamOptions, options of another optimizer; give it RMSpropOptions");
}

namespace {

/// n steps of opt on sum(w^3) + sum(w^2) over ws.
void steps(optim::Optimizer& opt, const std::vector<Tensor>& ws, int n) {
  for (int i = 0; i < n; ++i) {
    opt.zero_grad();
    Tensor loss;
    for (const Tensor& w : ws) {
      Tensor t = (w * w * w).sum() + (w * w).sum();
      loss = loss.defined() ? loss + t : t;
    }
    loss.backward();
    opt.step();
  }
}

using Factory = std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>)>;

/// Each new optimizer with options that create every buffer it has, by name.
std::vector<std::pair<std::string, Factory>> factories() {
  return {
      {"RMSprop", [](std::vector<Tensor> w) {
         return std::make_unique<optim::RMSprop>(w, optim::RMSpropOptions(0.01).momentum(0.9).centered(true));
       }},
      {"Adagrad", [](std::vector<Tensor> w) {
         return std::make_unique<optim::Adagrad>(w, optim::AdagradOptions(0.1).initial_accumulator_value(0.1));
       }},
      {"Adadelta", [](std::vector<Tensor> w) { return std::make_unique<optim::Adadelta>(w); }},
      {"Adamax", [](std::vector<Tensor> w) { return std::make_unique<optim::Adamax>(w, 0.05); }},
      {"NAdam", [](std::vector<Tensor> w) { return std::make_unique<optim::NAdam>(w, 0.05); }},
      {"RAdam", [](std::vector<Tensor> w) { return std::make_unique<optim::RAdam>(w, 0.05); }},
  };
}

}  // namespace

TEST_CASE("optimizers: the new optimizers' state round-trips through a checkpoint with PyTorch's names") {
  const std::map<std::string, std::vector<std::string>> names = {
      {"RMSprop", {"square_avg.0", "momentum_buffer.0", "grad_avg.0", "step.0"}},
      {"Adagrad", {"sum.0", "step.0"}},
      {"Adadelta", {"square_avg.0", "acc_delta.0", "step.0"}},
      {"Adamax", {"exp_avg.0", "exp_inf.0", "step.0"}},
      {"NAdam", {"exp_avg.0", "exp_avg_sq.0", "step.0", "mu_product.0"}},
      {"RAdam", {"exp_avg.0", "exp_avg_sq.0", "step.0"}},
  };
  const std::string path = testing::temp_path("tg_optimizers_state.safetensors");
  for (const auto& entry : factories()) {
    const std::string& name = entry.first;   // not a structured binding: clang 14 refuses one in CAPTURE
    const Factory& make = entry.second;
    CAPTURE(name);
    Tensor wa = testing::randn64({5}, 11), wa2 = testing::randn64({2, 3}, 12);
    auto a = make({wa, wa2});
    CHECK(a->state().empty());   // nothing before the first step
    steps(*a, {wa, wa2}, 7);
    std::vector<std::string> got;
    for (const auto& [n, t] : a->state())
      if (n.size() > 2 && n.compare(n.size() - 2, 2, ".0") == 0) got.push_back(n);
    CHECK(got == names.at(name));
    tg::save(*a, path);
    Tensor wb = tg::from_vector(wa.to_vector<double>(), {5}, tg::TensorOptions().requires_grad(true));
    Tensor wb2 = tg::from_vector(wa2.to_vector<double>(), {2, 3}, tg::TensorOptions().requires_grad(true));
    auto b = make({wb, wb2});
    tg::load(*b, path);
    steps(*a, {wa, wa2}, 3);
    steps(*b, {wb, wb2}, 3);
    CHECK(wa.to_vector<double>() == wb.to_vector<double>());   // bitwise: the whole state came back
    CHECK(wa2.to_vector<double>() == wb2.to_vector<double>());
    // an incomplete or misnamed state is refused and changes nothing
    auto state = a->state();
    auto without_step = state;
    without_step.erase(std::remove_if(without_step.begin(), without_step.end(),
                                      [](const auto& e) { return e.first == "step.1"; }),
                       without_step.end());
    TG_CHECK_THROWS(b->set_state(without_step), tg::Error, "the state of parameter 1 is incomplete");
    auto renamed = state;
    renamed[0].first = "bogus.0";
    TG_CHECK_THROWS(b->set_state(renamed), tg::Error, "unexpected entry \"bogus.0\"");
    auto wrong_shape = state;
    wrong_shape[0].second = tg::prim::full({4}, 0.0, tg::kFloat64);
    TG_CHECK_THROWS(b->set_state(wrong_shape), tg::ShapeError, "has shape");
    steps(*a, {wa, wa2}, 1);
    steps(*b, {wb, wb2}, 1);
    CHECK(wa.to_vector<double>() == wb.to_vector<double>());
  }
  std::filesystem::remove(path);
  // RMSprop without momentum needs no momentum_buffer: the state of one with it does not fit
  Tensor w = testing::randn64({3}, 13);
  optim::RMSprop plain({w}, optim::RMSpropOptions(0.01).momentum(0.9));
  steps(plain, {w}, 1);
  optim::RMSprop other({w}, optim::RMSpropOptions(0.01).centered(true));
  TG_CHECK_THROWS(other.set_state(plain.state()), tg::Error, "its group's options need square_avg, grad_avg, step");
}

TEST_CASE("optimizers: 16-bit parameters step through float32 master weights") {
  // The same float32 gradients (exact in bfloat16) on a float32 parameter and on a bfloat16 one: the
  // bfloat16 parameter's master copy follows the float32 run exactly, and the parameter is its rounding.
  const std::vector<float> w0{0.5f, -1.25f, 2.0f, 0.0078125f}, g0{0.25f, -0.5f, 1.0f, -0.125f};
  for (const auto& entry : factories()) {
    const std::string& name = entry.first;   // not a structured binding: clang 14 refuses one in CAPTURE
    const Factory& make = entry.second;
    CAPTURE(name);
    Tensor w32 = tg::from_vector(w0, {4}, tg::TensorOptions().requires_grad(true));
    Tensor w16(tg::from_vector(w0, {4}).data().to(tg::kBFloat16), true);
    auto a = make({w32});
    auto b = make({w16});
    for (int s = 0; s < 4; ++s) {
      w32.set_grad(tg::from_vector(g0, {4}));
      w16.set_grad(Tensor(tg::from_vector(g0, {4}).data().to(tg::kBFloat16)));
      a->step();
      b->step();
    }
    CHECK(w16.dtype() == tg::kBFloat16);
    const auto want = Tensor(w32.data().to(tg::kBFloat16).to(tg::kFloat32)).to_vector<float>();
    CHECK(Tensor(w16.data().to(tg::kFloat32)).to_vector<float>() == want);
    bool found = false;
    for (const auto& [n, t] : b->state()) {
      if (n != "master_weight.0") continue;
      found = true;
      CHECK(Tensor(t).to_vector<float>() == w32.to_vector<float>());
    }
    CHECK(found);
  }
}

namespace {

/// The script's LBFGS problem: w1 (2) on Rosenbrock, w2 (3) on sum(a (w2 - c)^2) + 0.1 sum(w2^4).
struct LbfgsProblem {
  Tensor w1 = tg::from_vector(std::vector<double>{-1.2, 1.0}, {2}, tg::TensorOptions().requires_grad(true));
  Tensor w2 = tg::from_vector(std::vector<double>{0.5, -0.3, 0.8}, {3}, tg::TensorOptions().requires_grad(true));
  Tensor a = tg::from_vector(std::vector<double>{1.0, 2.0, 0.5}, {3});
  Tensor c = tg::from_vector(std::vector<double>{0.2, -0.4, 1.0}, {3});
  Tensor loss() const {
    Tensor x0 = tg::index_select(w1, 0, tg::from_vector(std::vector<int64_t>{0}, {1}));
    Tensor x1 = tg::index_select(w1, 0, tg::from_vector(std::vector<int64_t>{1}, {1}));
    Tensor r = (1.0 - x0) * (1.0 - x0) + (x1 - x0 * x0) * (x1 - x0 * x0) * 100.0;
    Tensor d = w2 - c;
    return r.sum() + (a * d * d).sum() + (w2 * w2 * w2 * w2).sum() * 0.1;
  }
};

}  // namespace

TEST_CASE("optimizers: LBFGS follows torch 2.15, with and without the strong-Wolfe line search") {
  struct Case {
    const char* name;
    optim::LBFGSOptions options;
  };
  const std::vector<Case> cases = {
      {"LBFGS", optim::LBFGSOptions(1).max_iter(5)},
      {"LBFGS lr 0.5 history 3", optim::LBFGSOptions(0.5).max_iter(7).history_size(3)},
      {"LBFGS strong_wolfe", optim::LBFGSOptions(1).max_iter(10).history_size(4).line_search_fn("strong_wolfe")},
      {"LBFGS strong_wolfe max_eval", optim::LBFGSOptions(1).max_iter(20).max_eval(9).line_search_fn("strong_wolfe")},
      {"LBFGS strong_wolfe lr 300", optim::LBFGSOptions(300).max_iter(20).line_search_fn("strong_wolfe")},
      {"LBFGS strong_wolfe lr 0.01", optim::LBFGSOptions(0.01).max_iter(6).line_search_fn("strong_wolfe")},
  };
  // PyTorch's scalars are 0-d tensors and its dot products sum in another order: the first step agrees
  // within a few 1e-14, and on Rosenbrock's valley the curvature pairs amplify that by about 100 per
  // step (measured: 2.5e-14, 2e-12, 1.5e-10, 2.8e-8 with the line search). The bound 1e-13 * 300^(s - 1)
  // at step s keeps that margin while a different branch of the algorithm or the line search (an error
  // of 1e-3 and more) fails at once.
  for (const Case& k : cases) {
    const std::string name = k.name;
    CAPTURE(name);
    const auto& rows = reference(name);
    LbfgsProblem p;
    optim::LBFGS opt({p.w1, p.w2}, k.options);
    auto closure = [&] {
      opt.zero_grad();
      Tensor l = p.loss();
      l.backward();
      return l;
    };
    for (std::size_t s = 0; s < rows.size(); ++s) {
      const double loss = opt.step(closure).item();
      std::vector<double> got = p.w1.to_vector<double>();
      for (double v : p.w2.to_vector<double>()) got.push_back(v);
      got.push_back(loss);
      REQUIRE(got.size() == rows[s].size());
      const double tol = 1e-13 * std::pow(300.0, static_cast<double>(s));
      for (std::size_t j = 0; j < got.size(); ++j)
        CHECK_MESSAGE(std::fabs(got[j] - rows[s][j]) <= tol * std::max(1.0, std::fabs(rows[s][j])),
                      "step " << s + 1 << " value " << j << ": " << got[j] << " vs torch " << rows[s][j]);
    }
  }
}

TEST_CASE("optimizers: LBFGS state, errors and a stationary start") {
  LbfgsProblem p;
  optim::LBFGS a({p.w1, p.w2}, optim::LBFGSOptions(1).max_iter(4).history_size(3).line_search_fn("strong_wolfe"));
  auto closure_for = [&](optim::LBFGS& opt, LbfgsProblem& q) {
    return [&opt, &q] {
      opt.zero_grad();
      Tensor l = q.loss();
      l.backward();
      return l;
    };
  };
  CHECK(a.state().empty());
  for (int i = 0; i < 2; ++i) a.step(closure_for(a, p));
  std::vector<std::string> names;
  for (const auto& e : a.state()) names.push_back(e.first);
  CHECK(std::find(names.begin(), names.end(), "old_dirs.2") != names.end());   // history_size pairs kept
  CHECK(std::find(names.begin(), names.end(), "old_dirs.3") == names.end());
  const std::string path = testing::temp_path("tg_lbfgs_state.safetensors");
  tg::save(a, path);
  LbfgsProblem q;
  q.w1 = tg::from_vector(p.w1.to_vector<double>(), {2}, tg::TensorOptions().requires_grad(true));
  q.w2 = tg::from_vector(p.w2.to_vector<double>(), {3}, tg::TensorOptions().requires_grad(true));
  optim::LBFGS b({q.w1, q.w2}, optim::LBFGSOptions(1).max_iter(4).history_size(3).line_search_fn("strong_wolfe"));
  tg::load(b, path);
  std::filesystem::remove(path);
  a.step(closure_for(a, p));
  b.step(closure_for(b, q));
  CHECK(p.w1.to_vector<double>() == q.w1.to_vector<double>());   // bitwise: the whole state came back
  CHECK(p.w2.to_vector<double>() == q.w2.to_vector<double>());
  auto state = a.state();
  auto bad = state;
  for (auto& e : bad)
    if (e.first == "d") e.second = tg::prim::full({4}, 0.0, tg::kFloat64);
  TG_CHECK_THROWS(b.set_state(bad), tg::ShapeError, "\"d\" must have shape [5]");
  bad = state;
  bad.erase(std::remove_if(bad.begin(), bad.end(), [](const auto& e) { return e.first == "t"; }), bad.end());
  TG_CHECK_THROWS(b.set_state(bad), tg::Error, "the state is incomplete: no entry \"t\"");
  bad = state;
  bad.emplace_back("old_dirs.7", tg::prim::full({5}, 0.0, tg::kFloat64));
  TG_CHECK_THROWS(b.set_state(bad), tg::Error, "unexpected entry \"old_dirs.7\"");

  TG_CHECK_THROWS(a.step(), tg::Error, "LBFGS: step() needs the closure");
  TG_CHECK_THROWS(optim::LBFGS({p.w1}, optim::LBFGSOptions().line_search_fn("backtracking")), tg::Error,
                  "only 'strong_wolfe' is supported as line_search_fn, got 'backtracking'");
  TG_CHECK_THROWS(optim::LBFGS({p.w1}, optim::LBFGSOptions().history_size(0)), tg::Error, "history_size must be positive");
  TG_CHECK_THROWS(optim::LBFGS({p.w1}, optim::LBFGSOptions(-1)), tg::Error, "LBFGS: invalid learning rate -1");
  a.add_param_group({{testing::randn64({2}, 9)}});
  TG_CHECK_THROWS(a.step(closure_for(a, p)), tg::Error, "LBFGS doesn't support per-parameter options (parameter groups)");
  CHECK(optim::LBFGSOptions().max_iter() == 20);
  CHECK(optim::LBFGS({testing::randn64({2}, 10)}).options().max_eval() == 25);   // max_iter * 5 / 4

  // at a stationary point the first evaluation ends the step: the parameter is not moved
  Tensor w = tg::from_vector(std::vector<double>{0.0, 0.0}, {2}, tg::TensorOptions().requires_grad(true));
  optim::LBFGS at_min({w});
  int calls = 0;
  const double l = at_min.step([&] {
    ++calls;
    at_min.zero_grad();
    Tensor loss = (w * w).sum();
    loss.backward();
    return loss;
  }).item();
  CHECK(l == 0.0);
  CHECK(calls == 1);
  CHECK(w.to_vector<double>() == std::vector<double>{0.0, 0.0});
}

namespace {
/// An optimizer written outside the library on the base's learning-rate constructors: w -= lr g.
struct PlainDescent : optim::Optimizer {
  PlainDescent(std::vector<optim::ParamGroup> groups, double lr) : Optimizer(std::move(groups), lr) {}
  void step() override {
    check_grads("PlainDescent");
    tg::NoGradGuard no_grad;
    for (std::size_t i = 0; i < params_.size(); ++i)
      if (params_[i].grad().defined())
        tg::prim::binary_(tg::BinaryOp::Sub, params_[i].data(), tg::prim::mul(params_[i].grad().data(), lr_of(i)), "sub_");
  }
};
}  // namespace

TEST_CASE("optimizers: an optimizer on the base's learning-rate constructors gets LROptions per group") {
  Tensor a = tg::from_vector(std::vector<double>{1.0}, {1}, tg::TensorOptions().requires_grad(true));
  Tensor b = tg::from_vector(std::vector<double>{1.0}, {1}, tg::TensorOptions().requires_grad(true));
  PlainDescent opt({{{a}}, {{b}, 0.25}}, 0.5);
  CHECK(std::string(opt.param_groups()[0].options().type_name()) == "LROptions");
  CHECK(opt.lr(0) == 0.5);
  CHECK(opt.lr(1) == 0.25);
  (a * 2.0 + b * 4.0).sum().backward();
  opt.step();
  CHECK(a.item() == 0.0);   // 1 - 0.5 * 2
  CHECK(b.item() == 0.0);   // 1 - 0.25 * 4
  opt.param_groups()[1].options().set_lr(-1);
  TG_CHECK_THROWS(opt.step(), tg::Error, "PlainDescent (parameter group 1): invalid learning rate -1");
  TG_CHECK_THROWS(opt.add_param_group({{testing::randn64({1}, 3)}, optim::SGDOptions(0.1)}), tg::Error,
                  "the group's options are SGDOptions, options of another optimizer; give it LROptions");
}

TEST_CASE("optimizers: a checkpoint restores every group's options and initial_lr (PyTorch's param_groups)") {
  const std::string path = testing::temp_path("tg_optimizer_groups.safetensors");
  // Two groups with their own options, stepped under a scheduler; then a fresh optimizer at other
  // options and a fresh scheduler load both files and go on exactly as the first pair does.
  Tensor a0 = testing::randn64({4}, 21), b0 = testing::randn64({3}, 22);
  optim::RMSprop opt({optim::ParamGroup({a0}, optim::RMSpropOptions(0.01).momentum(0.9).centered(true)),
                      optim::ParamGroup({b0}, optim::RMSpropOptions(0.02).alpha(0.9).weight_decay(0.01))},
                     optim::RMSpropOptions(0.01));
  optim::StepLR sched(opt, 2, 0.5);
  for (int e = 0; e < 3; ++e) {
    steps(opt, {a0, b0}, 1);
    sched.step();
  }
  CHECK(opt.lr(1) == 0.01);   // 0.02 halved once
  tg::save(opt, path);
  const std::string sched_path = path + ".sched";
  tg::save(sched, sched_path);
  Tensor a1 = tg::from_vector(a0.to_vector<double>(), {4}, tg::TensorOptions().requires_grad(true));
  Tensor b1 = tg::from_vector(b0.to_vector<double>(), {3}, tg::TensorOptions().requires_grad(true));
  optim::RMSprop resumed({optim::ParamGroup({a1}), optim::ParamGroup({b1})}, optim::RMSpropOptions(0.5));
  optim::StepLR resumed_sched(resumed, 2, 0.5);
  tg::load(resumed, path);
  tg::load(resumed_sched, sched_path);
  for (std::size_t g = 0; g < 2; ++g) {
    CAPTURE(g);
    CHECK(resumed.param_groups()[g].options().values() == opt.param_groups()[g].options().values());
    CHECK(resumed.initial_lr(g) == opt.initial_lr(g));
    CHECK(resumed_sched.base_lr(g) == sched.base_lr(g));
  }
  CHECK(resumed_sched.last_epoch() == 3);
  for (int e = 0; e < 4; ++e) {
    steps(opt, {a0, b0}, 1);
    sched.step();
    steps(resumed, {a1, b1}, 1);
    resumed_sched.step();
  }
  CHECK(resumed.lr(0) == opt.lr(0));
  CHECK(resumed.lr(1) == opt.lr(1));
  CHECK(a1.to_vector<double>() == a0.to_vector<double>());   // bitwise: options, state and schedule came back
  CHECK(b1.to_vector<double>() == b0.to_vector<double>());

  // Mismatches are refused and change nothing.
  Tensor c = testing::randn64({4}, 23);
  optim::RMSprop one_group({c}, optim::RMSpropOptions(0.3));
  TG_CHECK_THROWS(tg::load(one_group, path), tg::SerializationError, "but the optimizer has 1 group(s)");
  CHECK(one_group.lr() == 0.3);
  optim::SGD sgd({optim::ParamGroup({a1}), optim::ParamGroup({b1})}, optim::SGDOptions(0.3));
  TG_CHECK_THROWS(tg::load(sgd, path), tg::SerializationError, "(SGDOptions) have no option 'alpha'");
  optim::RMSprop shuffled({optim::ParamGroup({a1, b1}), optim::ParamGroup({c})}, optim::RMSpropOptions(0.3));
  TG_CHECK_THROWS(tg::load(shuffled, path), tg::SerializationError, "parameter group 0 holds other parameters");
  Tensor five = testing::randn64({5}, 24);
  optim::RMSprop wrong_shape({optim::ParamGroup({five}), optim::ParamGroup({b1})}, optim::RMSpropOptions(0.3));
  TG_CHECK_THROWS(tg::load(wrong_shape, path), tg::SerializationError, "has shape");
  CHECK(wrong_shape.lr(0) == 0.3);   // the options set before the state was refused came back
  CHECK(static_cast<optim::RMSpropOptions&>(wrong_shape.param_groups()[0].options()).momentum_ == 0);
  // a checkpoint brings its options with its state: plain RMSprop's into one built with momentum
  optim::RMSprop plain({c}, optim::RMSpropOptions(0.01));
  steps(plain, {c}, 1);
  tg::save(plain, path);
  optim::RMSprop with_momentum({c}, optim::RMSpropOptions(0.7).momentum(0.9));
  tg::load(with_momentum, path);   // the checkpoint's options (no momentum) and its state, together
  CHECK(static_cast<optim::RMSpropOptions&>(with_momentum.param_groups()[0].options()).momentum_ == 0);
  CHECK(with_momentum.lr() == 0.01);
  // A checkpoint without param_groups (the state alone) loads the state and keeps the options.
  tg::save_tensors(plain.state(), path);
  optim::RMSprop keeps({c}, optim::RMSpropOptions(0.4));
  tg::load(keeps, path);
  CHECK(keeps.lr() == 0.4);
  std::filesystem::remove(path);
  std::filesystem::remove(sched_path);
}
