// tests/test_libtorch_spellings.cpp: libtorch's spellings of tensors, ops and options, as a libtorch
// program writes them after s/torch::/tg::/: the k-constants, IntArrayRef's bare integers, tg::tensor,
// the Tensor methods (eq, mm, x[i], uniform_, new_zeros, view_as, requires_grad_, grad_fn()->name(),
// max(dim) as a tuple), TORCH_CHECK, the layers' *Options(required...) constructors, AdamOptions'
// tuple betas, tg::nn::functional, and save/load of tensors. Values that come from PyTorch name the
// call that gave them (PyTorch 2.x).
#include <cstdio>
#include <filesystem>
#include <tuple>
#include <type_traits>

#include "testing.h"

using testing::check_close;
using testing::check_values;
using tg::Tensor;
namespace F = tg::nn::functional;

namespace {
std::vector<int64_t> sizes_of(const Tensor& t) { return std::vector<int64_t>(t.sizes().begin(), t.sizes().end()); }
}  // namespace

TEST_CASE("libtorch spellings: dtype and device constants") {
  static_assert(tg::kFloat == tg::kFloat32 && tg::kDouble == tg::kFloat64 && tg::kHalf == tg::kFloat16, "floats");
  static_assert(tg::kLong == tg::kInt64 && tg::kInt == tg::kInt32 && tg::kChar == tg::kInt8 && tg::kByte == tg::kUInt8,
                "integers");
  static_assert(tg::kCPU == tg::DeviceType::CPU && tg::kCUDA == tg::DeviceType::CUDA, "device types");
  CHECK(tg::ones({2}, tg::kLong).dtype() == tg::kInt64);
  CHECK(tg::ones({2}, tg::kDouble).dtype() == tg::kFloat64);
  CHECK(tg::Device(tg::kCUDA, 0).str() == "cuda:0");   // torch::Device(torch::kCUDA, 0)
  CHECK(tg::Device(tg::kCPU).is_cpu());
  const Tensor x = tg::ones({2});
  CHECK(x.to(tg::kCPU).device().is_cpu());               // x.to(torch::kCPU)
  CHECK(x.to(tg::kHalf).dtype() == tg::kFloat16);
  if (!tg::cuda::is_available()) TG_CHECK_THROWS(x.to(tg::kCUDA), tg::DeviceError, "");
}

TEST_CASE("libtorch spellings: a bare integer where libtorch takes an IntArrayRef") {
  tg::manual_seed(0);
  CHECK(sizes_of(tg::randn(3)) == std::vector<int64_t>{3});               // torch::randn(3)
  CHECK(sizes_of(tg::zeros(2)) == std::vector<int64_t>{2});
  CHECK(sizes_of(tg::empty(4, tg::Device(tg::kCPU))) == std::vector<int64_t>{4});   // torch::empty(n, device)
  CHECK(tg::empty(4, tg::kCPU).device().is_cpu());                                    // torch::empty(4, torch::kCPU)
  CHECK(sizes_of(tg::full(3, 2.0)) == std::vector<int64_t>{3});
  CHECK(sizes_of(tg::randint(0, 5, 6)) == std::vector<int64_t>{6});
  CHECK(tg::ones({}).dim() == 0);                                          // {} is still a 0-d shape
  CHECK(sizes_of(tg::ones({2, 3})) == std::vector<int64_t>{2, 3});
  const tg::IntArrayRef one = 3, list = {2, 3}, none;
  CHECK(one.vec() == std::vector<int64_t>{3});
  CHECK(list.vec() == std::vector<int64_t>{2, 3});
  CHECK(none.empty());
  CHECK(tg::ones({2, 3}).sizes().vec() == std::vector<int64_t>{2, 3});   // x.sizes().vec()
  // torch.nn.functional.max_pool2d(torch.arange(16.).view(1, 1, 4, 4), 2) -> [[5, 7], [13, 15]]
  const Tensor img = tg::arange(16).to(tg::kFloat).view({1, 1, 4, 4});
  check_values(tg::max_pool2d(img, 2), {5, 7, 13, 15});
  check_values(tg::max_pool2d(img, 2, 2), {5, 7, 13, 15});
  check_values(tg::avg_pool2d(img, 2), {2.5, 4.5, 10.5, 12.5});   // F.avg_pool2d(..., 2)
  CHECK(sizes_of(tg::adaptive_avg_pool2d(img, 1)) == std::vector<int64_t>{1, 1, 1, 1});
  // torch.nn.functional.conv2d(img, torch.ones(1, 1, 3, 3), None, 1, 1)[0, 0, 0] -> [10, 18, 24, 18]
  const Tensor conv = tg::conv2d(img, tg::ones({1, 1, 3, 3}), Tensor(), 1, 1);
  check_values(tg::flatten(conv.select(2, 0)), {10, 18, 24, 18});
}

TEST_CASE("libtorch spellings: tg::tensor infers dtype and shape as torch::tensor") {
  // torch::tensor({1, 2, 3}) is int64; torch::tensor({1.0, 2.0}) float32; torch::tensor(3.5) a 0-d float32
  const Tensor i = tg::tensor({1, 2, 3});
  CHECK(i.dtype() == tg::kInt64);
  CHECK(sizes_of(i) == std::vector<int64_t>{3});
  CHECK(i.to_vector<int64_t>() == std::vector<int64_t>{1, 2, 3});
  CHECK(tg::tensor({1.0, 2.0}).dtype() == tg::kFloat32);
  const Tensor s = tg::tensor(3.5);
  CHECK(s.dim() == 0);
  CHECK(s.item<float>() == 3.5f);
  CHECK(tg::tensor({true, false}).dtype() == tg::kBool);
  CHECK(tg::tensor(7).dtype() == tg::kInt64);
  CHECK(tg::tensor({3}).dim() == 1);   // torch::tensor({3}).sizes() == [1]
  const Tensor m = tg::tensor({{1.0f, 2.0f}, {3.0f, 4.0f}});
  CHECK(sizes_of(m) == std::vector<int64_t>{2, 2});
  check_values(m, {1, 2, 3, 4});
  const Tensor deep = tg::tensor({{{1, 2}}, {{3, 4}}});
  CHECK(sizes_of(deep) == std::vector<int64_t>{2, 1, 2});
  // a std::vector keeps its element type: std::vector<double> gives float64, as libtorch's ArrayRef<double>
  CHECK(tg::tensor(std::vector<double>{1, 2}).dtype() == tg::kFloat64);
  CHECK(tg::tensor(std::vector<float>{1, 2}).dtype() == tg::kFloat32);
  CHECK(tg::tensor(std::vector<int64_t>{1, 2}).dtype() == tg::kInt64);
  // options: torch::tensor({1, 2}, torch::kFloat), torch::tensor({1.0}, torch::requires_grad())
  CHECK(tg::tensor({1, 2}, tg::kFloat).dtype() == tg::kFloat32);
  CHECK(tg::tensor({1.0, 2.0}, tg::requires_grad()).requires_grad());
  const int64_t big = (int64_t{1} << 53) + 1;   // integers go through int64, not double
  CHECK(tg::tensor({big}).item<int64_t>() == big);
  TG_CHECK_THROWS(tg::tensor({{1, 2}, {3}}), tg::ShapeError, "tensor: expected a list of length 2 at dim 1 (got 1)");
  TG_CHECK_THROWS(tg::tensor({1, {2}}), tg::ShapeError, "tensor: a list at dim 1 where the other elements are numbers");
  TG_CHECK_THROWS(tg::tensor({{1}, 2}), tg::ShapeError, "tensor: a number at dim 1");
  TG_CHECK_THROWS(tg::tensor({1, 2.5}), tg::DTypeError, "tensor: expected all values to have the same kind");
}

TEST_CASE("libtorch spellings: comparison methods, mm, view_as, expand_as, reshape_as") {
  const Tensor a = tg::tensor({1.0, 2.0, 3.0}), b = tg::tensor({1.0, 5.0, 3.0});
  CHECK(a.eq(b).dtype() == tg::kBool);
  CHECK(a.eq(b).to_vector<bool>() == std::vector<bool>{true, false, true});   // a.eq(b)
  CHECK(a.ne(b).to_vector<bool>() == std::vector<bool>{false, true, false});
  CHECK(a.gt(1.5).to_vector<bool>() == std::vector<bool>{false, true, true});
  CHECK(a.lt(b).to_vector<bool>() == std::vector<bool>{false, true, false});
  CHECK(a.ge(2.0).to_vector<bool>() == std::vector<bool>{false, true, true});
  CHECK(a.le(b).to_vector<bool>() == std::vector<bool>{true, true, true});
  CHECK(a.eq(2.0).sum().item<int64_t>() == 1);
  // torch.tensor([[1., 2.], [3., 4.]]).mm(torch.tensor([[5., 6.], [7., 8.]])) -> [[19, 22], [43, 50]]
  const Tensor p = tg::tensor({{1.0, 2.0}, {3.0, 4.0}}), q = tg::tensor({{5.0, 6.0}, {7.0, 8.0}});
  check_values(p.mm(q), {19, 22, 43, 50});
  TG_CHECK_THROWS(tg::ones({2, 2, 2}).mm(q), tg::ShapeError, "mm: self must be a matrix, got 3-D tensor");
  TG_CHECK_THROWS(p.mm(tg::ones({2})), tg::ShapeError, "mm: mat2 must be a matrix, got 1-D tensor");
  const Tensor flat = tg::arange(4).to(tg::kFloat);
  CHECK(sizes_of(flat.view_as(p)) == std::vector<int64_t>{2, 2});
  CHECK(sizes_of(flat.reshape_as(p)) == std::vector<int64_t>{2, 2});
  CHECK(sizes_of(tg::ones({1, 2}).expand_as(tg::ones({3, 2}))) == std::vector<int64_t>{3, 2});
  TG_CHECK_THROWS(flat.view_as(tg::ones({3})), tg::ShapeError, "");
}

TEST_CASE("libtorch spellings: clone and flatten") {
  const Tensor x = tg::arange(6).to(tg::kFloat).view({2, 3}).requires_grad_();
  const Tensor c = x.clone();                          // x.clone(): a copy, CloneBackward0
  CHECK(c.data().storage() != x.data().storage());
  CHECK(c.grad_fn()->name() == "CloneBackward0");
  const Tensor t = x.t().clone();
  CHECK(t.is_contiguous());
  check_values(t, {0, 3, 1, 4, 2, 5});
  (c * 2.0).sum().backward();
  check_values(x.grad(), {2, 2, 2, 2, 2, 2});
  CHECK(sizes_of(tg::ones({2, 3, 4}).flatten(1)) == std::vector<int64_t>{2, 12});   // x.flatten(1)
  CHECK(sizes_of(tg::ones({2, 3, 4}).flatten()) == std::vector<int64_t>{24});
  CHECK(tg::ones({2}, tg::kLong).clone().dtype() == tg::kInt64);
}

TEST_CASE("libtorch spellings: norm, all, any, tg::str") {
  // torch.tensor([3., -4.]).norm() -> 5; .norm(1) -> 7; .norm(3) -> 4.497941445275415
  const Tensor x = tg::tensor({3.0, -4.0}, tg::requires_grad());
  CHECK(x.norm().item<double>() == doctest::Approx(5));
  CHECK(x.norm(1).item<double>() == doctest::Approx(7));
  CHECK(x.norm(3).item<double>() == doctest::Approx(4.497941445275415));
  x.norm().backward();                                 // d|x|/dx = x / |x| = [0.6, -0.8]
  check_values(x.grad(), {0.6, -0.8});
  TG_CHECK_THROWS(tg::tensor({1, 2}).norm(), tg::DTypeError, "norm: expected a floating point tensor");
  TG_CHECK_THROWS(x.norm(0), tg::Error, "norm: p must be positive");
  // x.eq(y).all().item<bool>(), as the autograd tutorial checks a detach()
  CHECK(x.eq(x.detach()).all().item<bool>());
  CHECK(x.all().dtype() == tg::kBool);
  CHECK_FALSE(tg::tensor({1, 0}).all().item<bool>());
  CHECK(tg::tensor({1, 0}).any().item<bool>());
  CHECK_FALSE(tg::zeros({3}).any().item<bool>());
  CHECK(tg::zeros({0}).all().item<bool>());
  CHECK(tg::str("dcgan-sample-", 3, ".pt") == "dcgan-sample-3.pt");   // torch::str(...)
}

TEST_CASE("libtorch spellings: x[i], x[i][j], x[t], and assignment through them") {
  Tensor x = tg::arange(6).to(tg::kFloat).view({2, 3});
  check_values(x[1], {3, 4, 5});                       // x[1]
  CHECK(x[1][2].item<float>() == 5.0f);                // x[1][2]
  check_values(x[tg::tensor(1)], {3, 4, 5});           // x[torch::tensor(1)]
  TG_CHECK_THROWS(x[tg::tensor({1})], tg::IndexError, "can only index with a 0-d integer tensor");
  TG_CHECK_THROWS(x[tg::tensor(1.0)], tg::IndexError, "can only index with a 0-d integer tensor");
  TG_CHECK_THROWS(x[2], tg::IndexError, "");
  // libtorch's x[0] = y copies into x; x[1][1] = 9 fills
  x[0] = tg::tensor({10.0f, 11.0f, 12.0f});
  x[1][1] = 9;
  check_values(x, {10, 11, 12, 3, 9, 5});
  x[1] = tg::zeros({1});                               // broadcast, as copy_
  check_values(x[1], {0, 0, 0});
  // a named Tensor still rebinds, as in libtorch
  Tensor y = x;
  y = tg::ones({2});
  CHECK(sizes_of(x) == std::vector<int64_t>{2, 3});
  CHECK(sizes_of(y) == std::vector<int64_t>{2});
  // the in-place rules hold through the view: a leaf that requires grad refuses
  Tensor w = tg::zeros({2, 2}, tg::requires_grad());
  TG_CHECK_THROWS(w[0] = tg::ones({2}), tg::AutogradError, "");
}

TEST_CASE("libtorch spellings: uniform_, normal_ and requires_grad_") {
  tg::manual_seed(1);
  Tensor u = tg::empty({1000});
  u.uniform_(-2, 3);                                   // x.uniform_(-2, 3)
  CHECK(u.min().item<double>() >= -2);
  CHECK(u.max().item<double>() < 3);
  CHECK(u.mean().item<double>() == doctest::Approx(0.5).epsilon(0.1));
  Tensor n = tg::empty({4000}, tg::kDouble);
  n.normal_(2, 0.5);                                   // x.normal_(2, 0.5)
  CHECK(n.mean().item<double>() == doctest::Approx(2).epsilon(0.02));
  CHECK(n.dtype() == tg::kFloat64);
  Tensor d = tg::empty({8});
  CHECK(&d.uniform_() == &d);
  CHECK(d.max().item<double>() < 1);
  TG_CHECK_THROWS(tg::zeros({2}, tg::kLong).uniform_(), tg::DTypeError, "uniform_: expected a floating point tensor");
  TG_CHECK_THROWS(tg::zeros({2}).normal_(0, -1), tg::Error, "normal_: expects std >= 0.0");
  TG_CHECK_THROWS(tg::zeros({2}).uniform_(1, 0), tg::Error, "uniform_: expects to return a [from, to) range");
  Tensor w = tg::randn({3}).requires_grad_();          // torch::randn({3}).requires_grad_()
  CHECK(w.requires_grad());
  TG_CHECK_THROWS(w.uniform_(), tg::AutogradError, "");   // a leaf that requires grad: wrap in NoGradGuard
  {
    tg::NoGradGuard no_grad;
    w.uniform_();
  }
  w.requires_grad_(false);
  CHECK_FALSE(w.requires_grad());
}

TEST_CASE("libtorch spellings: new_zeros, new_ones, new_full, new_empty") {
  const Tensor x = tg::ones({2}, tg::kDouble);
  const Tensor z = x.new_zeros({3, 2});                // x.new_zeros({3, 2})
  CHECK(z.dtype() == tg::kFloat64);
  CHECK(sizes_of(z) == std::vector<int64_t>{3, 2});
  check_values(z, {0, 0, 0, 0, 0, 0});
  check_values(x.new_ones(2), {1, 1});
  check_values(x.new_full({2}, 7), {7, 7});
  CHECK(x.new_empty(5).numel() == 5);
  CHECK(x.new_zeros(2, tg::kLong).dtype() == tg::kInt64);   // options override
  CHECK(x.new_ones({2}, tg::requires_grad()).requires_grad());
}

TEST_CASE("libtorch spellings: grad_fn()->name() gives PyTorch's node names") {
  const Tensor w = tg::randn({3, 3}, tg::requires_grad()), x = tg::randn({2, 3});
  // (w * 2).grad_fn.name() -> 'MulBackward0', and so on for each line (PyTorch 2.x)
  CHECK((w * 2).grad_fn()->name() == "MulBackward0");
  CHECK((w + w).grad_fn()->name() == "AddBackward0");
  CHECK(w.sum().grad_fn()->name() == "SumBackward0");
  CHECK(x.mm(w).grad_fn()->name() == "MmBackward0");
  CHECK(tg::linear(x, w, tg::zeros({3})).grad_fn()->name() == "AddmmBackward0");
  CHECK(x.matmul(w).relu().grad_fn()->name() == "ReluBackward0");
  CHECK(x.matmul(w).log_softmax(1).grad_fn()->name() == "LogSoftmaxBackward0");
  CHECK(tg::cross_entropy(x.matmul(w), tg::tensor({0, 1})).grad_fn()->name() == "NllLossBackward0");
  CHECK(w.reshape({9}).grad_fn()->name() == "ViewBackward0");
  CHECK(w.transpose(0, 1).grad_fn()->name() == "TransposeBackward0");
  CHECK(w[0].grad_fn()->name() == "SelectBackward0");
  CHECK(w.to(tg::kDouble).grad_fn()->name() == "ToCopyBackward0");
  CHECK(w.grad_fn() == nullptr);                       // a leaf has none
  // the Node itself keeps its op name and edges
  const auto fn = (w * 2).grad_fn();
  const tg::Node& node = *fn;
  CHECK(std::string(node.name) == "mul");
  CHECK(fn->next.size() == 2);
  std::ostringstream printed;
  printed << (w * 2);
  CHECK(printed.str().find("grad_fn=<mul>") != std::string::npos);
}

TEST_CASE("libtorch spellings: max(dim) and min(dim) are (values, indices) tuples and values") {
  const Tensor x = tg::tensor({{1.0, 5.0, 3.0}, {4.0, 2.0, 6.0}}, tg::requires_grad());
  // torch.tensor([[1., 5., 3.], [4., 2., 6.]]).max(1) -> values [5, 6], indices [1, 2]
  auto [values, indices] = x.max(1);
  check_values(values, {5, 6});
  CHECK(indices.to_vector<int64_t>() == std::vector<int64_t>{1, 2});
  CHECK(indices.dtype() == tg::kInt64);
  CHECK(std::get<1>(x.max(1)).to_vector<int64_t>() == std::vector<int64_t>{1, 2});   // std::get<1>(x.max(1))
  Tensor v, i;
  std::tie(v, i) = tg::max(x, 1);                      // torch::max(x, 1)
  check_values(v, {5, 6});
  // min(1) -> values [1, 2], indices [0, 1]
  const auto mn = x.min(1);
  check_values(mn.values(), {1, 2});
  CHECK(mn.indices().to_vector<int64_t>() == std::vector<int64_t>{0, 1});
  // still the values, as before: a Tensor, with the gradient
  const Tensor m = x.max(1);
  check_values(m, {5, 6});
  CHECK(sizes_of(x.max(1, true)) == std::vector<int64_t>{2, 1});
  x.max(1).sum().backward();
  check_values(x.grad(), {0, 1, 0, 0, 0, 1});
  static_assert(std::tuple_size<tg::ValuesWithIndices>::value == 2, "a pair");
}

TEST_CASE("libtorch spellings: TORCH_CHECK and AT_ASSERT throw tg::Error") {
  const int n = 3;
  TORCH_CHECK(n == 3, "n must be 3");
  AT_ASSERT(n > 0);
  TG_CHECK_THROWS([&] { TORCH_CHECK(n == 4, "n must be 4, got ", n); }(), tg::Error, "n must be 4, got 3");
  TG_CHECK_THROWS([&] { TORCH_CHECK(n == 4); }(), tg::Error, "Expected n == 4 to be true, but got false.");
  TG_CHECK_THROWS([&] { AT_ASSERT(n < 0); }(), tg::Error, "AT_ASSERT(n < 0) failed at");
}

TEST_CASE("libtorch spellings: layers built from libtorch's options objects") {
  tg::manual_seed(0);
  // torch::nn::Conv2d conv(torch::nn::Conv2dOptions(1, 32, 3).stride(1))
  tg::nn::Conv2d conv(tg::nn::Conv2dOptions(1, 32, 3).stride(1));
  CHECK(sizes_of(conv.weight) == std::vector<int64_t>{32, 1, 3, 3});
  CHECK(conv.name() == "Conv2d(1, 32, kernel_size=(3, 3), stride=(1, 1))");   // print(nn.Conv2d(1, 32, 3, stride=1))
  tg::nn::Conv2d rect(tg::nn::Conv2dOptions(2, 4, {3, 5}).padding(1).bias(false));
  CHECK(sizes_of(rect.weight) == std::vector<int64_t>{4, 2, 3, 5});
  CHECK_FALSE(rect.bias.defined());
  tg::nn::Conv2d ours(1, 8, 3, tg::nn::Conv2dOptions().padding(1));   // tensorgrad's form still works
  CHECK(sizes_of(ours(tg::randn({1, 1, 5, 5}))) == std::vector<int64_t>{1, 8, 5, 5});
  TG_CHECK_THROWS(tg::nn::Conv2d(tg::nn::Conv2dOptions().stride(2)), tg::Error,
                  "Conv2d: the options name no channels or kernel size");
  tg::nn::Conv1d conv1(tg::nn::Conv1dOptions(3, 8, 3).padding(1));
  CHECK(sizes_of(conv1.weight) == std::vector<int64_t>{8, 3, 3});
  TG_CHECK_THROWS(tg::nn::Conv1d(tg::nn::Conv1dOptions(3, 8, {3, 3})), tg::ShapeError,
                  "Conv1d: kernel_size must be a single number");

  tg::nn::Linear fc(tg::nn::LinearOptions(3, 4).bias(false));   // torch::nn::LinearOptions(3, 4).bias(false)
  CHECK(sizes_of(fc.weight) == std::vector<int64_t>{4, 3});
  CHECK_FALSE(fc.bias.defined());
  CHECK(tg::nn::Linear(tg::nn::LinearOptions(3, 4)).bias.defined());

  tg::nn::BatchNorm2d bn(tg::nn::BatchNorm2dOptions(3).momentum(0.01).eps(1e-3));
  CHECK(bn.name() == "BatchNorm2d(3, eps=0.001, momentum=0.01, affine=True, track_running_stats=True)");
  tg::nn::BatchNorm1d bn1(tg::nn::BatchNorm1dOptions(4).affine(false).track_running_stats(false));
  CHECK_FALSE(bn1.weight.defined());
  CHECK_FALSE(bn1.running_mean.defined());
  tg::nn::BatchNorm2d plain(8);                                          // tensorgrad's form
  CHECK(sizes_of(plain.weight) == std::vector<int64_t>{8});

  tg::nn::Dropout drop(tg::nn::DropoutOptions(0.2));
  CHECK(drop.name() == "Dropout(p=0.2)");
  CHECK(tg::nn::Dropout(tg::nn::DropoutOptions().p(0.3)).name() == "Dropout(p=0.3)");
  CHECK(tg::nn::Dropout(0.4).name() == "Dropout(p=0.4)");

  TG_CHECK_THROWS(tg::nn::Dropout(tg::nn::DropoutOptions(0.2).inplace(true)), tg::Error,
                  "Dropout: DropoutOptions().inplace(true) is not supported");
  CHECK(tg::nn::Dropout(tg::nn::DropoutOptions(0.2).inplace(false)).name() == "Dropout(p=0.2)");

  // torch::nn::Dropout2d: whole channels kept (scaled by 2) or zeroed while training, the identity in eval()
  tg::manual_seed(3);
  tg::nn::Dropout2d drop2d(tg::nn::Dropout2dOptions(0.5));
  CHECK(drop2d.name() == "Dropout2d(p=0.5)");
  const Tensor maps = drop2d(tg::ones({4, 16, 3, 3}));
  const Tensor per_channel = maps.view({64, 9});
  CHECK(per_channel.max(1).eq(per_channel.min(1)).all().item<bool>());     // one value per channel
  const int64_t kept = per_channel.select(1, 0).eq(2.0).sum().item<int64_t>();
  CHECK(kept + per_channel.select(1, 0).eq(0.0).sum().item<int64_t>() == 64);
  CHECK(kept > 10);
  CHECK(kept < 54);
  drop2d.eval();
  check_close(drop2d(maps), maps, 0);
  TG_CHECK_THROWS(drop2d(tg::ones({2, 2})), tg::ShapeError, "Dropout2d: expected a 3-D or 4-D input");

  tg::nn::Embedding emb(tg::nn::EmbeddingOptions(10, 3).padding_idx(0).sparse(false));
  TG_CHECK_THROWS(tg::nn::Embedding(tg::nn::EmbeddingOptions(10, 3).sparse(true)), tg::Error,
                  "Embedding: EmbeddingOptions().sparse(true) is not supported");
  CHECK(emb.padding_idx() == 0);
  CHECK(sizes_of(emb.weight) == std::vector<int64_t>{10, 3});

  tg::nn::LayerNorm ln(tg::nn::LayerNormOptions({3}).eps(1e-6).elementwise_affine(false));
  CHECK_FALSE(ln.weight.defined());
  CHECK(tg::nn::LayerNorm(std::vector<int64_t>{16}).weight.defined());

  // torch::nn::MaxPool2d(MaxPool2dOptions(3).stride(2)) on (1, 1, 7, 7) -> (1, 1, 3, 3)
  tg::nn::MaxPool2d pool(tg::nn::MaxPool2dOptions(3).stride(2));
  CHECK(sizes_of(pool(tg::randn({1, 1, 7, 7}))) == std::vector<int64_t>{1, 1, 3, 3});
  CHECK(pool.name() == "MaxPool2d(kernel_size=3, stride=2, padding=0)");
  tg::nn::MaxPool2d vec_pool(tg::nn::MaxPool2dOptions({2, 2}).stride({2, 2}).padding(0).dilation(1));
  CHECK(sizes_of(vec_pool(tg::randn({1, 1, 4, 4}))) == std::vector<int64_t>{1, 1, 2, 2});
  tg::nn::AvgPool2d avg(tg::nn::AvgPool2dOptions(2).stride(1).padding(1));
  CHECK(sizes_of(avg(tg::randn({1, 1, 4, 4}))) == std::vector<int64_t>{1, 1, 5, 5});
}

TEST_CASE("libtorch spellings: AdamOptions with a tuple of betas, AdamWOptions, SGDOptions") {
  tg::optim::AdamOptions o(2e-4);
  o.betas(std::make_tuple(0.5, 0.999));              // AdamOptions(2e-4).betas(std::make_tuple(0.5, 0.999))
  CHECK(o.beta1_ == 0.5);
  CHECK(std::get<1>(o.betas()) == 0.999);
  CHECK(o.lr() == 2e-4);
  CHECK(o.lr(1e-3).lr() == 1e-3);
  tg::nn::Linear model(3, 2);
  tg::optim::Adam adam(model.parameters(), tg::optim::AdamOptions(2e-4).betas(std::make_tuple(0.5, 0.5)));
  CHECK(adam.options().beta2_ == 0.5);
  CHECK(tg::optim::AdamWOptions(1e-3).weight_decay_ == 1e-2);   // torch.optim.AdamW's default weight_decay
  tg::optim::AdamW adamw(model.parameters(), tg::optim::AdamWOptions(1e-3).betas(std::make_tuple(0.9, 0.99)));
  CHECK(adamw.options().weight_decay_ == 1e-2);
  tg::optim::SGD sgd(model.parameters(), tg::optim::SGDOptions(0.01).momentum(0.5));
  CHECK(sgd.options().momentum_ == 0.5);
}

TEST_CASE("libtorch spellings: tg::nn::functional as torch::nn::functional") {
  tg::manual_seed(0);
  const Tensor x = tg::randn({4, 5});
  check_close(F::relu(x), tg::relu(x), 0);
  check_close(F::leaky_relu(x, F::LeakyReLUFuncOptions().negative_slope(0.2)), tg::leaky_relu(x, 0.2), 0);
  check_close(F::gelu(x, F::GELUFuncOptions().approximate("tanh")), tg::gelu(x, "tanh"), 0);
  check_close(F::silu(x), tg::silu(x), 0);
  check_close(F::log_softmax(x, /*dim=*/1), tg::log_softmax(x, 1), 0);              // F::log_softmax(x, 1)
  check_close(F::log_softmax(x, F::LogSoftmaxFuncOptions(0)), tg::log_softmax(x, 0), 0);
  check_close(F::softmax(x, 1), tg::softmax(x, 1), 0);
  check_close(F::dropout(x, F::DropoutFuncOptions().p(0.5).training(false)), x, 0);  // identity when not training
  const Tensor dropped = F::dropout(x, F::DropoutFuncOptions().p(0.5));               // training by default
  CHECK(dropped.eq(0.0).sum().item<int64_t>() > 0);
  // inplace(true) overwrites x and returns it: F::relu(x, F::ReLUFuncOptions().inplace(true))
  Tensor y = x * 1.0;
  const Tensor r = F::relu(y, F::ReLUFuncOptions().inplace(true));
  CHECK(r.impl() == y.impl());
  check_close(y, tg::relu(x), 0);
  check_close(F::relu(x, F::ReLUFuncOptions().inplace(false)), tg::relu(x), 0);
  Tensor z = x * 1.0;
  F::dropout(z, F::DropoutFuncOptions().p(1.0).inplace(true));
  CHECK(z.eq(0.0).sum().item<int64_t>() == z.numel());
  TG_CHECK_THROWS(F::relu(tg::randn({2}, tg::requires_grad()), F::ReLUFuncOptions().inplace(true)), tg::AutogradError,
                  "");
  const Tensor img = tg::arange(16).to(tg::kFloat).view({1, 1, 4, 4});
  check_values(F::max_pool2d(img, F::MaxPool2dFuncOptions(2)), {5, 7, 13, 15});
  check_values(F::max_pool2d(img, F::MaxPool2dFuncOptions(3).stride(1)), {10, 11, 14, 15});
  check_values(F::avg_pool2d(img, F::AvgPool2dFuncOptions(2)), {2.5, 4.5, 10.5, 12.5});
  check_values(F::adaptive_avg_pool2d(img, F::AdaptiveAvgPool2dFuncOptions(1)), {7.5});
  const Tensor k = tg::ones({1, 1, 3, 3});
  check_values(tg::flatten(F::conv2d(img, k, F::Conv2dFuncOptions().padding(1).bias(tg::ones({1}))).select(2, 0)),
               {11, 19, 25, 19});
  const Tensor w = tg::randn({3, 5}), b = tg::randn({3});
  check_close(F::linear(x, w, b), tg::linear(x, w, b), 0);
  const Tensor target = tg::tensor({0, 1, 2, 1});
  check_close(F::cross_entropy(x.narrow(1, 0, 3), target), tg::cross_entropy(x.narrow(1, 0, 3), target), 0);
  CHECK(F::cross_entropy(x.narrow(1, 0, 3), target, F::CrossEntropyFuncOptions().reduction(tg::kNone)).dim() == 1);
  check_close(F::mse_loss(x, tg::zeros({4, 5}), F::MSELossFuncOptions().reduction(tg::kSum)), (x * x).sum(), 1e-5);
}

TEST_CASE("libtorch spellings: tg::save and tg::load of a tensor and of a list of tensors") {
  const std::string one = testing::temp_path("tg_spellings_one.safetensors");
  const std::string list = testing::temp_path("tg_spellings_list.safetensors");
  const Tensor x = tg::tensor({{1.5, 2.5}, {3.5, 4.5}});
  tg::save(x, one);                                    // torch::save(x, path)
  Tensor y;
  tg::load(y, one);                                    // torch::load(y, path)
  check_close(y, x, 0);
  CHECK(y.dtype() == tg::kFloat32);
  CHECK(y.is_leaf());
  const std::vector<Tensor> xs = {x, tg::tensor({1, 2, 3}), tg::tensor({true})};
  tg::save(xs, list);                                  // torch::save(std::vector<torch::Tensor>, path)
  std::vector<Tensor> ys;
  tg::load(ys, list);
  REQUIRE(ys.size() == 3);
  check_close(ys[0], x, 0);
  CHECK(ys[1].to_vector<int64_t>() == std::vector<int64_t>{1, 2, 3});
  CHECK(ys[2].dtype() == tg::kBool);
  std::vector<Tensor> single;
  tg::load(single, one);                               // one tensor is a list of one
  CHECK(single.size() == 1);
  Tensor unchanged = tg::ones({1});
  TG_CHECK_THROWS(tg::load(unchanged, list), tg::SerializationError, "holds 3 tensors, not one");
  CHECK(unchanged.numel() == 1);
  const std::string module_file = testing::temp_path("tg_spellings_module.safetensors");
  tg::save(tg::nn::Linear(2, 2), module_file);
  TG_CHECK_THROWS(tg::load(ys, module_file), tg::SerializationError, "holds a tensor named \"");
  CHECK(ys.size() == 3);
  TG_CHECK_THROWS(tg::save(Tensor(), one), tg::SerializationError, "the tensor is undefined");
  for (const auto& p : {one, list, module_file}) std::filesystem::remove(p);
}

TEST_CASE("libtorch spellings: += -= *=, allclose, equal, mutable_grad, Dropout2d handles, save and load of a holder") {
  Tensor x = tg::ones({2, 3});
  x += tg::full({3}, 2.0);   // x.add_(y): 3 everywhere
  x *= 2.0;
  x -= tg::ones({2, 3});
  check_close(x, tg::full({2, 3}, 5.0), 0);
  // torch.allclose / torch.equal: python3 -c "import torch; print(torch.allclose(torch.tensor([1., 2.]),
  //   torch.tensor([1.000001, 2.])), torch.equal(torch.tensor([1., float('nan')]), torch.tensor([1., float('nan')])))"
  //   -> True False
  const Tensor a = tg::from_vector(std::vector<float>{1.0f, 2.0f}), b = tg::from_vector(std::vector<float>{1.000001f, 2.0f});
  CHECK(tg::allclose(a, b));
  CHECK(!tg::allclose(a, b, 0, 1e-9));
  CHECK(a.allclose(tg::from_vector(std::vector<float>{1.0f, 2.0f}).reshape({1, 2})));   // broadcasts, as torch
  const Tensor nan = tg::from_vector(std::vector<float>{1.0f, std::nanf("")});
  CHECK(!tg::equal(nan, nan));
  CHECK(!tg::allclose(nan, nan));
  CHECK(tg::allclose(nan, nan, 1e-5, 1e-8, /*equal_nan=*/true));
  CHECK(tg::equal(a, a.clone()));
  CHECK(!a.equal(a.to(tg::kFloat64)));   // another dtype
  // x.mutable_grad().reset() drops the gradient, = sets it
  Tensor w = tg::ones({3}).requires_grad_();
  tg::sum(w * 2.0).backward();
  CHECK(w.mutable_grad().defined());
  w.mutable_grad().reset();
  CHECK(!w.grad().defined());
  w.mutable_grad() = tg::full({3}, 7.0);
  check_close(w.grad(), tg::full({3}, 7.0), 0);
  // Dropout2d as a handle; torch::save / torch::load of a TORCH_MODULE holder
  struct NetImpl : tg::nn::Module {
    tg::nn::Linear fc{nullptr};
    tg::nn::Dropout2d drop{nullptr};
    NetImpl() {
      fc = register_module("fc", tg::nn::Linear(3, 2));
      drop = register_module("drop", tg::nn::Dropout2d(0.5));
    }
  };
  TORCH_MODULE(Net);
  Net net, other;
  CHECK(net->drop->name() == "Dropout2d(p=0.5)");
  testing::TempDir dir;
  const std::string path = dir.path + "/holder.safetensors";
  tg::save(net, path);
  tg::load(other, path);
  check_close(other->fc->weight, net->fc->weight, 0);
  check_close(other->fc->bias, net->fc->bias, 0);
}
