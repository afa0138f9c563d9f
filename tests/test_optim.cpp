// tests/test_optim.cpp: Adam/AdamW against an independent scalar transcription of torch.optim's
// algorithm, learning-rate schedulers' closed forms, and gradient clipping. SGD: tests/test_nn.cpp.
#include <cmath>
#include <filesystem>
#include <memory>

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

TEST_CASE("schedulers: StepLR CosineAnnealingLR and LinearLR closed forms") {
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
  TG_CHECK_THROWS(tg::optim::StepLR(sgd, 0), tg::Error, "step_size must be positive");
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
  const std::string path = (std::filesystem::temp_directory_path() / "tg_adam_state.safetensors").string();
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
  tg::optim::Adam plain({wb}, 0.1);   // no amsgrad: a max_exp_avg_sq entry does not fit
  TG_CHECK_THROWS(tg::load(plain, path), tg::Error, "incomplete");
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
