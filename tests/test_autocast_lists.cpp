// tests/test_autocast_lists.cpp: autocast's op lists per device (Note [Autocast op lists]): which ops
// cast their inputs to the lower precision, which to float32, which run as they are, which input dtypes
// are eligible, and the values each list gives against the same ops on inputs cast by hand.
#include <functional>
#include <optional>
#include <string>

#include "testing.h"

using tg::Tensor;

namespace {

/// The dtype letters of tests/data/autocast_lists.py: b bfloat16, h float16, f float32, d float64.
char letter(tg::DType d) {
  switch (d) {
    case tg::kBFloat16: return 'b';
    case tg::kFloat16: return 'h';
    case tg::kFloat32: return 'f';
    case tg::kFloat64: return 'd';
    default: return '?';
  }
}

const tg::DType kInputs[4] = {tg::kBFloat16, tg::kFloat16, tg::kFloat32, tg::kFloat64};
const tg::DType kRegions[2] = {tg::kBFloat16, tg::kFloat16};

/// Fresh standard-normal values of shape s, in dtype d on device dev (positive when asked: log's input).
Tensor input(const tg::Shape& s, tg::DType d, tg::Device dev, bool positive = false) {
  Tensor x = tg::randn(s);
  if (positive) x = tg::abs(x) + 0.5;
  return x.to(d).to(dev);
}

struct ListCase {
  const char* name;
  std::optional<tg::amp::detail::AutocastOp> op;   // its entry in the lists; none for an unlisted op
  const char* cpu;    // PyTorch's output dtypes: regions bfloat16, float16; inputs b, h, f, d
  const char* cuda;
  std::function<Tensor(tg::DType, tg::Device)> run;   // the op with every floating operand in the dtype
};

// The dtypes torch 2.15.0 gives, printed by tests/data/autocast_lists.py (the same ops, shapes and
// operands: `python3 tests/data/autocast_lists.py`, CPU by running each op under
// torch.autocast('cpu', dtype=region), CUDA on fake CUDA tensors with torch.set_autocast_enabled('cuda')).
std::vector<ListCase> list_cases() {
  using Op = tg::amp::detail::AutocastOp;
  using tg::DType;
  using tg::Device;
  const Tensor target = tg::from_vector(std::vector<int64_t>{0, 4, 2});
  return {
      {"matmul", Op::Matmul, "bbbd hhhd", "bbbd hhhd",
       [](DType d, Device v) { return tg::matmul(input({3, 5}, d, v), input({5, 4}, d, v)); }},
      {"linear", Op::Linear, "bbbd hhhd", "bbbd hhhd",
       [](DType d, Device v) { return tg::linear(input({3, 5}, d, v), input({4, 5}, d, v), input({4}, d, v)); }},
      {"conv1d", Op::Conv1d, "bbbd hhhd", "bbbd hhhd",
       [](DType d, Device v) { return tg::conv1d(input({2, 3, 9}, d, v), input({4, 3, 3}, d, v), input({4}, d, v)); }},
      {"conv2d", Op::Conv2d, "bbbd hhhd", "bbbd hhhd",
       [](DType d, Device v) {
         return tg::conv2d(input({2, 3, 7, 7}, d, v), input({4, 3, 3, 3}, d, v), input({4}, d, v));
       }},
      {"scaled_dot_product_attention", Op::ScaledDotProductAttention, "bbbd hhhd", "bbbd hhhd",
       [](DType d, Device v) {
         const Tensor q = input({2, 5, 8}, d, v), k = input({2, 6, 8}, d, v), val = input({2, 6, 8}, d, v);
         return tg::scaled_dot_product_attention(q, k, val);
       }},
      {"softmax", Op::Softmax, "bhfd bhfd", "fffd fffd",
       [](DType d, Device v) { return tg::softmax(input({3, 5}, d, v), 1); }},
      {"log_softmax", Op::LogSoftmax, "bhfd bhfd", "fffd fffd",
       [](DType d, Device v) { return tg::log_softmax(input({3, 5}, d, v), 1); }},
      {"cross_entropy", Op::CrossEntropy, "fffd fffd", "fffd fffd",
       [target](DType d, Device v) { return tg::cross_entropy(input({3, 5}, d, v), target.to(v)); }},
      {"mse_loss", Op::MseLoss, "fffd fffd", "fffd fffd",
       [](DType d, Device v) { return tg::mse_loss(input({3, 5}, d, v), input({3, 5}, d, v)); }},
      {"sum", Op::Sum, "bhfd bhfd", "fffd fffd", [](DType d, Device v) { return tg::sum(input({3, 5}, d, v)); }},
      {"sum_dim", Op::Sum, "bhfd bhfd", "fffd fffd",
       [](DType d, Device v) { return tg::sum(input({3, 5}, d, v), 1); }},
      {"mean", std::nullopt, "bhfd bhfd", "bhfd bhfd",
       [](DType d, Device v) { return tg::mean(input({3, 5}, d, v)); }},
      {"exp", Op::Exp, "bhfd bhfd", "fffd fffd", [](DType d, Device v) { return tg::exp(input({3, 5}, d, v)); }},
      {"log", Op::Log, "bhfd bhfd", "fffd fffd",
       [](DType d, Device v) { return tg::log(input({3, 5}, d, v, true)); }},
      {"pow_scalar", Op::Pow, "bhfd bhfd", "fffd fffd",
       [](DType d, Device v) { return tg::pow(input({3, 5}, d, v, true), 2.5); }},
      {"pow_tensor", Op::Pow, "bhfd bhfd", "fffd fffd",
       [](DType d, Device v) { return tg::pow(input({3, 5}, d, v, true), input({3, 5}, d, v)); }},
      {"layer_norm", Op::LayerNorm, "bhfd bhfd", "fffd fffd",
       [](DType d, Device v) { return tg::layer_norm(input({3, 5}, d, v), {5}, input({5}, d, v), input({5}, d, v)); }},
      {"group_norm", Op::GroupNorm, "bhfd bhfd", "fffd fffd",
       [](DType d, Device v) { return tg::group_norm(input({2, 4, 3}, d, v), 2, input({4}, d, v), input({4}, d, v)); }},
      {"batch_norm", std::nullopt, "bhfd bhfd", "bhfd bhfd",
       [](DType d, Device v) {
         return tg::batch_norm(input({2, 4, 3}, d, v), Tensor(), Tensor(), input({4}, d, v), input({4}, d, v), true);
       }},
      {"softplus", Op::Softplus, "bhfd bhfd", "fffd fffd",
       [](DType d, Device v) { return tg::softplus(input({3, 5}, d, v)); }},
      {"gelu", std::nullopt, "bhfd bhfd", "bhfd bhfd", [](DType d, Device v) { return tg::gelu(input({3, 5}, d, v)); }},
      {"sigmoid", std::nullopt, "bhfd bhfd", "bhfd bhfd",
       [](DType d, Device v) { return tg::sigmoid(input({3, 5}, d, v)); }},
      {"relu", std::nullopt, "bhfd bhfd", "bhfd bhfd", [](DType d, Device v) { return tg::relu(input({3, 5}, d, v)); }},
      {"max_pool2d", std::nullopt, "bhfd bhfd", "bhfd bhfd",
       [](DType d, Device v) { return tg::max_pool2d(input({2, 3, 6, 6}, d, v), {2}); }},
      {"avg_pool2d", std::nullopt, "bhfd bhfd", "bhfd bhfd",
       [](DType d, Device v) { return tg::avg_pool2d(input({2, 3, 6, 6}, d, v), {2}); }},
      {"conv_transpose2d", Op::ConvTranspose2d, "bbbd hhhd", "bbbd hhhd",
       [](DType d, Device v) {
         return tg::conv_transpose2d(input({2, 3, 5, 5}, d, v), input({3, 4, 3, 3}, d, v), input({4}, d, v));
       }},
      {"nll_loss", Op::NllLoss, "fffd fffd", "fffd fffd",
       [target](DType d, Device v) { return tg::nll_loss(input({3, 5}, d, v), target.to(v)); }},
      {"binary_cross_entropy_with_logits", Op::BinaryCrossEntropyWithLogits, "fffd fffd", "fffd fffd",
       [](DType d, Device v) { return tg::binary_cross_entropy_with_logits(input({3, 5}, d, v), input({3, 5}, d, v)); }},
      {"l1_loss", Op::L1Loss, "fffd fffd", "fffd fffd",
       [](DType d, Device v) { return tg::l1_loss(input({3, 5}, d, v), input({3, 5}, d, v)); }},
      {"smooth_l1_loss", Op::SmoothL1Loss, "fffd fffd", "fffd fffd",
       [](DType d, Device v) { return tg::smooth_l1_loss(input({3, 5}, d, v), input({3, 5}, d, v)); }},
      {"huber_loss", Op::HuberLoss, "fffd fffd", "fffd fffd",
       [](DType d, Device v) { return tg::huber_loss(input({3, 5}, d, v), input({3, 5}, d, v)); }},
      {"kl_div", Op::KlDiv, "fffd fffd", "fffd fffd",
       [](DType d, Device v) { return tg::kl_div(input({3, 5}, d, v), tg::abs(input({3, 5}, d, v)), tg::kBatchMean); }},
      {"margin_ranking_loss", Op::MarginRankingLoss, "fffd fffd", "fffd fffd",
       [](DType d, Device v) {
         return tg::margin_ranking_loss(input({3, 5}, d, v), input({3, 5}, d, v), tg::sign(input({3, 5}, d, v)));
       }},
      {"cosine_embedding_loss", Op::CosineEmbeddingLoss, "fffd fffd", "fffd fffd",
       [](DType d, Device v) {
         return tg::cosine_embedding_loss(input({3, 5}, d, v), input({3, 5}, d, v),
                                          tg::from_vector(std::vector<double>{1, -1, 1}).to(d).to(v));
       }},
      {"hinge_embedding_loss", Op::HingeEmbeddingLoss, "fffd fffd", "fffd fffd",
       [](DType d, Device v) {
         return tg::hinge_embedding_loss(input({3, 5}, d, v), tg::sign(input({3, 5}, d, v)));
       }},
      {"triplet_margin_loss", Op::TripletMarginLoss, "fffd fffd", "fffd fffd",
       [](DType d, Device v) {
         return tg::triplet_margin_loss(input({3, 5}, d, v), input({3, 5}, d, v), input({3, 5}, d, v));
       }},
      {"multi_margin_loss", Op::MultiMarginLoss, "fffd fffd", "fffd fffd",
       [target](DType d, Device v) { return tg::multi_margin_loss(input({3, 5}, d, v), target.to(v)); }},
      {"poisson_nll_loss", Op::PoissonNllLoss, "fffd fffd", "fffd fffd",
       [](DType d, Device v) { return tg::poisson_nll_loss(input({3, 5}, d, v), input({3, 5}, d, v, true)); }},
      {"gaussian_nll_loss", Op::GaussianNllLoss, "bhfd bhfd", "fffd fffd",
       [](DType d, Device v) {
         return tg::gaussian_nll_loss(input({3, 5}, d, v), input({3, 5}, d, v), input({3, 5}, d, v, true));
       }},
      {"soft_margin_loss", Op::SoftMarginLoss, "fffd fffd", "fffd fffd",
       [](DType d, Device v) { return tg::soft_margin_loss(input({3, 5}, d, v), tg::sign(input({3, 5}, d, v))); }},
      {"multilabel_soft_margin_loss", Op::MultilabelSoftMarginLoss, "bhfd bhfd", "fffd fffd",
       [](DType d, Device v) {
         return tg::multilabel_soft_margin_loss(input({3, 5}, d, v), input({3, 5}, d, v, true));
       }},
      {"multilabel_margin_loss", Op::MultilabelMarginLoss, "fffd fffd", "fffd fffd",
       [](DType d, Device v) {
         return tg::multilabel_margin_loss(input({3, 5}, d, v),
                                           tg::zeros({3, 5}, tg::TensorOptions().dtype(tg::kInt64)).to(v));
       }},
      {"triplet_margin_with_distance_loss", Op::TripletMarginWithDistanceLoss, "bhfd bhfd", "fffd fffd",
       [](DType d, Device v) {
         return tg::triplet_margin_with_distance_loss(input({3, 5}, d, v), input({3, 5}, d, v), input({3, 5}, d, v));
       }},
      // not in CUDA's list (the script's last line): the input's dtype there
      {"ctc_loss", Op::CtcLoss, "fffd fffd", "bhfd bhfd",
       [](DType d, Device v) {
         return tg::ctc_loss(input({6, 2, 4}, d, v),
                             tg::ones({2, 3}, tg::TensorOptions().dtype(tg::kInt64)).to(v), std::vector<int64_t>{6, 6},
                             std::vector<int64_t>{3, 2});
       }},
  };
}

/// Runs every case on dev under each region and checks each output dtype against `want` (cpu or cuda).
void check_output_dtypes(tg::Device dev, bool cuda) {
  for (const ListCase& c : list_cases()) {
    const std::string name = c.name;
    CAPTURE(name);
    const std::string want = cuda ? c.cuda : c.cpu;
    for (int r = 0; r < 2; ++r) {
      tg::amp::AutocastGuard region(dev, kRegions[r]);
      for (int i = 0; i < 4; ++i) {
        const std::string in = tg::dtype_name(kInputs[i]), reg = tg::dtype_name(kRegions[r]);
        CAPTURE(reg);
        CAPTURE(in);
        CHECK(letter(c.run(kInputs[i], dev).dtype()) == want[static_cast<std::size_t>(5 * r + i)]);
      }
    }
  }
}

/// Gradients of the leaves (in order), undefined ones as empty vectors.
std::vector<std::vector<double>> grads_of(const std::vector<Tensor>& leaves) {
  std::vector<std::vector<double>> g;
  for (const Tensor& l : leaves) g.push_back(l.grad().defined() ? l.grad().to_vector<double>() : std::vector<double>());
  return g;
}

/// A copy of x as a fresh leaf (same values and dtype, requires_grad as x).
Tensor twin(const Tensor& x) { return Tensor(x.data().clone(), x.requires_grad()); }

}  // namespace

TEST_CASE("autocast lists: every op's output dtype on the CPU is PyTorch's, for each region and input dtype") {
  // float32 and the other 16-bit dtype are cast by the lower-precision ops, float64 never; softmax,
  // exp, sum and the norms keep a 16-bit input's dtype on the CPU; only the losses run in float32
  tg::manual_seed(3);
  check_output_dtypes(tg::Device::cpu(), false);
}

TEST_CASE("autocast lists: the policy table is PyTorch's for each device") {
  // The table that detail::cast follows, against the dtypes PyTorch gives (tests/data/autocast_lists.py):
  // a listed op's letters follow from its policy and the eligibility rule (float64 never cast), an
  // unlisted op's are its inputs' dtypes. CUDA's list is checked here without a GPU; the GPU run is
  // "cuda autocast lists: ..." below.
  using tg::amp::detail::CastPolicy;
  for (const ListCase& c : list_cases()) {
    const std::string name = c.name;
    CAPTURE(name);
    for (const bool cuda : {false, true}) {
      CAPTURE(cuda);
      const CastPolicy p = c.op ? tg::amp::detail::policy(*c.op, cuda ? tg::DeviceType::CUDA : tg::DeviceType::CPU)
                                : CastPolicy::None;
      std::string got;
      for (int r = 0; r < 2; ++r) {
        if (r == 1) got += ' ';
        for (tg::DType in : kInputs)
          got += in == tg::kFloat64 || p == CastPolicy::None ? letter(in)
                 : p == CastPolicy::Lower                    ? letter(kRegions[r])
                                                             : 'f';
      }
      CHECK(got == std::string(cuda ? c.cuda : c.cpu));
    }
  }
}

TEST_CASE("cuda autocast lists: every op's output dtype on CUDA is PyTorch's, for each region and input dtype") {
  TG_NEED_CUDA();
  tg::manual_seed(4);
  check_output_dtypes(tg::Device::cuda(), true);
}

TEST_CASE("autocast lists: float64 runs as it is: results and gradients are those without autocast, bit for bit") {
  // PyTorch's is_autocast_eligible excludes float64: torch.matmul(a.double(), b.double()) under
  // torch.autocast('cpu', dtype=torch.bfloat16) is float64 (tests/data/autocast_lists.py, column d)
  using namespace tg;
  using Fn = std::function<Tensor(const std::vector<Tensor>&)>;
  struct Case {
    const char* name;
    std::vector<Shape> shapes;
    Fn f;
  };
  const Tensor target = from_vector(std::vector<int64_t>{2, 0, 6, 1, 3});
  const std::vector<Case> cases = {
      {"matmul", {{5, 9}, {9, 4}}, [](const std::vector<Tensor>& v) { return matmul(v[0], v[1]); }},
      {"linear", {{5, 9}, {7, 9}, {7}}, [](const std::vector<Tensor>& v) { return linear(v[0], v[1], v[2]); }},
      {"conv1d", {{2, 3, 11}, {5, 3, 3}, {5}},
       [](const std::vector<Tensor>& v) { return conv1d(v[0], v[1], v[2], 2, 1); }},
      {"conv2d", {{2, 3, 7, 9}, {4, 3, 3, 2}, {4}},
       [](const std::vector<Tensor>& v) { return conv2d(v[0], v[1], v[2], {1}, {1}); }},
      {"scaled_dot_product_attention", {{2, 5, 8}, {2, 6, 8}, {2, 6, 3}},
       [](const std::vector<Tensor>& v) { return scaled_dot_product_attention(v[0], v[1], v[2]); }},
      {"cross_entropy", {{5, 7}}, [target](const std::vector<Tensor>& v) { return cross_entropy(v[0], target); }},
      {"softmax", {{5, 7}}, [](const std::vector<Tensor>& v) { return softmax(v[0], 1); }},
      {"layer_norm", {{5, 7}, {7}, {7}},
       [](const std::vector<Tensor>& v) { return layer_norm(v[0], {7}, v[1], v[2]); }},
  };
  for (const Case& c : cases) {
    const std::string name = c.name;
    CAPTURE(name);
    for (DType lowp : {kBFloat16, kFloat16}) {
      const std::string region = dtype_name(lowp);
      CAPTURE(region);
      std::vector<Tensor> leaves, plain;
      for (std::size_t i = 0; i < c.shapes.size(); ++i) {
        leaves.push_back(Tensor(tg::randn(c.shapes[i], kFloat64).data(), true));
        plain.push_back(twin(leaves.back()));
      }
      Tensor y;
      {
        amp::AutocastGuard autocast(Device::cpu(), lowp);
        y = c.f(leaves);
      }
      const Tensor y2 = c.f(plain);
      CHECK(y.dtype() == kFloat64);
      CHECK(y.to_vector<double>() == y2.to_vector<double>());
      const Tensor upstream = tg::randn(y.shape(), kFloat64);
      y.backward(upstream);
      y2.backward(upstream);
      CHECK(grads_of(leaves) == grads_of(plain));
    }
  }
}

TEST_CASE("autocast lists: conv1d and conv2d run in the region's dtype with the bits of inputs cast by hand") {
  // PyTorch's lists put conv1d and conv2d among the lower-precision ops on both devices:
  // F.conv2d(x, w, b) under torch.autocast('cpu', dtype=torch.bfloat16) is bfloat16 for float32 x, w, b.
  // The result and every gradient must be those of the op run outside autocast on explicit casts.
  using namespace tg;
  for (DType lowp : {kBFloat16, kFloat16}) {
    const std::string region = dtype_name(lowp);
    CAPTURE(region);
    for (const bool two_d : {false, true}) {
      CAPTURE(two_d);
      const Shape xs = two_d ? Shape{3, 4, 9, 7} : Shape{3, 4, 13};
      const Shape ws = two_d ? Shape{6, 2, 3, 2} : Shape{6, 2, 5};
      Tensor x(tg::randn(xs).data(), true), w(tg::randn(ws).data(), true), b(tg::randn({6}).data(), true);
      Tensor x2 = twin(x), w2 = twin(w), b2 = twin(b);
      auto conv = [two_d](const Tensor& xi, const Tensor& wi, const Tensor& bi) {
        return two_d ? conv2d(xi, wi, bi, {2, 1}, {1, 0}, {1}, 2) : conv1d(xi, wi, bi, 2, 1, 2, 2);
      };
      Tensor y;
      {
        amp::AutocastGuard autocast(Device::cpu(), lowp);
        y = conv(x, w, b);
      }
      const Tensor y2 = conv(x2.to(lowp), w2.to(lowp), b2.to(lowp));
      REQUIRE(y.dtype() == lowp);
      CHECK(y.shape() == y2.shape());
      CHECK(y.to_vector<double>() == y2.to_vector<double>());
      const Tensor upstream = tg::randn(y.shape()).to(lowp);
      y.backward(upstream);
      y2.backward(upstream);
      for (const Tensor* leaf : {&x, &w, &b}) CHECK(leaf->grad().dtype() == kFloat32);
      CHECK(grads_of({x, w, b}) == grads_of({x2, w2, b2}));
    }
  }
}

TEST_CASE("autocast lists: on the CPU softmax, exp, sum and the norms give a 16-bit input's own results") {
  // Not on the CPU's lists, these run in their input's dtype: the values are those without autocast,
  // bit for bit, gradients included; cross_entropy and mse_loss (float32 list) equal the op run on
  // inputs cast to float32 by hand.
  using namespace tg;
  using Fn = std::function<Tensor(const Tensor&)>;
  const Tensor target = from_vector(std::vector<int64_t>{3, 0, 4, 4, 1});
  const std::vector<std::pair<const char*, Fn>> unlisted = {
      {"softmax", [](const Tensor& x) { return softmax(x, 1); }},
      {"log_softmax", [](const Tensor& x) { return log_softmax(x, 0); }},
      {"exp", [](const Tensor& x) { return exp(x); }},
      {"log", [](const Tensor& x) { return log(abs(x) + 0.25); }},
      {"pow", [](const Tensor& x) { return pow(abs(x) + 0.25, 1.5); }},
      {"sum", [](const Tensor& x) { return sum(x, 1); }},
      {"mean", [](const Tensor& x) { return mean(x); }},
      {"softplus", [](const Tensor& x) { return softplus(x); }},
      {"layer_norm", [](const Tensor& x) { return layer_norm(x, {7}); }},
      {"group_norm", [](const Tensor& x) { return group_norm(x.reshape({5, 7, 1}), 7); }},
  };
  const std::vector<std::pair<const char*, Fn>> float32_list = {
      {"cross_entropy", [target](const Tensor& x) { return cross_entropy(x, target); }},
      {"mse_loss", [](const Tensor& x) { return mse_loss(x, x.detach() * 0.5); }},
  };
  for (DType lowp : {kBFloat16, kFloat16}) {
    const std::string region = dtype_name(lowp);
    CAPTURE(region);
    for (const bool float32_op : {false, true}) {
      for (const auto& [op_name, f] : float32_op ? float32_list : unlisted) {
        const std::string name = op_name;
        CAPTURE(name);
        Tensor x(tg::randn({5, 7}).data().to(lowp), true);
        Tensor x2 = twin(x);
        Tensor y;
        {
          amp::AutocastGuard autocast(Device::cpu(), lowp);
          y = f(x);
        }
        const Tensor y2 = f(float32_op ? x2.to(kFloat32) : x2);
        CHECK(y.dtype() == (float32_op ? kFloat32 : lowp));
        CHECK(y.to_vector<double>() == y2.to_vector<double>());
        const Tensor upstream = tg::randn(y.shape()).to(y.dtype());
        y.backward(upstream);
        y2.backward(upstream);
        CHECK(x.grad().dtype() == lowp);
        CHECK(x.grad().to_vector<double>() == x2.grad().to_vector<double>());
      }
    }
  }
}

TEST_CASE("autocast lists: a float64 input with a float32 parameter is refused, as PyTorch refuses it") {
  // float64 is not eligible and float32 is, so the operands end in different dtypes. torch 2.15.0, under
  // torch.autocast('cpu', dtype=torch.bfloat16): torch.mm(a.double(), w) raises "expected m1 and m2 to
  // have the same dtype, but got: double != c10::BFloat16"; F.conv2d(x.double(), w) raises "expected
  // scalar type Double but found BFloat16".
  using namespace tg;
  const Tensor w = Tensor(tg::randn({3, 5}).data(), true), k = Tensor(tg::randn({4, 3, 3, 3}).data(), true);
  amp::AutocastGuard autocast(Device::cpu(), kBFloat16);
  TG_CHECK_THROWS(matmul(tg::randn({2, 3}, kFloat64), w), DTypeError,
                  "matmul: expected both tensors to have the same dtype, but got float64 and bfloat16");
  TG_CHECK_THROWS(conv2d(tg::randn({1, 3, 5, 6}, kFloat64), k), DTypeError,
                  "conv2d: expected both tensors to have the same dtype, but got float64 and bfloat16");
  CHECK_FALSE(w.grad().defined());
}

TEST_CASE("autocast lists: binary_cross_entropy is float32 on the CPU, as PyTorch's CPU list has it") {
  // python3: with torch.autocast('cpu', dtype=torch.bfloat16): F.binary_cross_entropy(x, x).dtype ->
  // torch.float32 for a bfloat16 or float32 x. On CUDA PyTorch refuses it under autocast: the next case.
  const Tensor x = tg::full({3, 4}, 0.25, tg::kBFloat16);
  tg::amp::AutocastGuard region(tg::Device::cpu(), tg::kBFloat16);
  CHECK(tg::binary_cross_entropy(x, x).dtype() == tg::kFloat32);
  CHECK(tg::binary_cross_entropy(x.to(tg::kFloat32), x.to(tg::kFloat32)).dtype() == tg::kFloat32);
  CHECK(tg::amp::detail::policy(tg::amp::detail::AutocastOp::BinaryCrossEntropy, tg::DeviceType::CPU) ==
        tg::amp::detail::CastPolicy::Float32);
}

TEST_CASE("cuda autocast lists: binary_cross_entropy is refused under CUDA autocast, as PyTorch refuses it") {
  TG_NEED_CUDA();
  const Tensor x = tg::full({3, 4}, 0.25, tg::kFloat32).to(tg::Device::cuda());
  tg::amp::AutocastGuard region(tg::Device::cuda(), tg::kFloat16);
  TG_CHECK_THROWS(tg::binary_cross_entropy(x, x), tg::Error, "binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast");
  CHECK(tg::binary_cross_entropy_with_logits(x, x).dtype() == tg::kFloat32);
}

TEST_CASE("autocast lists: the newer losses on PyTorch's float32 lists compute on their inputs cast by hand") {
  // Under CPU autocast a bfloat16 input of a float32-listed loss is cast to float32 first: the loss and
  // the input's gradient are those of the same loss on the input converted by hand, bit for bit; the
  // compositions PyTorch keeps off the CPU list (gaussian_nll_loss, ...) stay bfloat16.
  tg::manual_seed(9);
  const Tensor target = tg::from_vector(std::vector<int64_t>{0, 4, 2});
  const Tensor labels = tg::zeros({3, 5}, tg::TensorOptions().dtype(tg::kInt64));
  const std::vector<std::pair<std::string, std::function<Tensor(const Tensor&, const Tensor&)>>> losses = {
      {"hinge_embedding_loss", [](const Tensor& x, const Tensor& y) { return tg::hinge_embedding_loss(x, tg::sign(y)); }},
      {"triplet_margin_loss", [](const Tensor& x, const Tensor& y) { return tg::triplet_margin_loss(x, y, y * 0.5); }},
      {"multi_margin_loss", [target](const Tensor& x, const Tensor&) { return tg::multi_margin_loss(x, target); }},
      {"poisson_nll_loss", [](const Tensor& x, const Tensor& y) { return tg::poisson_nll_loss(x, tg::abs(y)); }},
      {"soft_margin_loss", [](const Tensor& x, const Tensor& y) { return tg::soft_margin_loss(x, tg::sign(y)); }},
      {"multilabel_margin_loss", [labels](const Tensor& x, const Tensor&) { return tg::multilabel_margin_loss(x, labels); }},
      {"ctc_loss",
       [](const Tensor& x, const Tensor&) {
         return tg::ctc_loss(x.reshape({5, 1, 3}), tg::ones({1, 2}, tg::TensorOptions().dtype(tg::kInt64)),
                             std::vector<int64_t>{5}, std::vector<int64_t>{2});
       }},
  };
  for (const auto& entry : losses) {
    const std::string& name = entry.first;
    const auto& loss = entry.second;
    CAPTURE(name);
    const Tensor x = tg::randn({3, 5}).to(tg::kBFloat16).set_requires_grad(true);
    const Tensor y = tg::randn({3, 5}).to(tg::kBFloat16);
    Tensor out;
    {
      tg::amp::AutocastGuard region(tg::Device::cpu(), tg::kBFloat16);
      out = loss(x, y);
    }
    CHECK(out.dtype() == tg::kFloat32);
    out.backward();
    CHECK(x.grad().dtype() == tg::kBFloat16);
    const Tensor x32 = x.detach().to(tg::kFloat32).set_requires_grad(true);
    const Tensor ref = loss(x32, y.to(tg::kFloat32));
    ref.backward();
    CHECK(out.to_vector<float>() == ref.to_vector<float>());
    CHECK(x.grad().to_vector<float>() == x32.grad().to(tg::kBFloat16).to_vector<float>());
  }
  const Tensor x = tg::randn({3, 5}).to(tg::kBFloat16), v = tg::abs(tg::randn({3, 5})).to(tg::kBFloat16) + 0.5;
  tg::amp::AutocastGuard region(tg::Device::cpu(), tg::kBFloat16);
  CHECK(tg::gaussian_nll_loss(x, x * 0.5, v).dtype() == tg::kBFloat16);
  CHECK(tg::multilabel_soft_margin_loss(x, v).dtype() == tg::kBFloat16);
  CHECK(tg::triplet_margin_with_distance_loss(x, v, x * 0.5).dtype() == tg::kBFloat16);
}
