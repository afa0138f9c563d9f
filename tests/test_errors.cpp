// tests/test_errors.cpp: the error contract of docs/guarantees.md: each bad input raises the right
// tg::Error subclass with a message a user can act on, before anything is allocated or computed.
#include <cmath>
#include <limits>

#include "testing.h"

using tg::Tensor;

TEST_CASE("errors: every class derives from tg::Error and std::runtime_error") {
  try {
    throw tg::ShapeError("x");
  } catch (const tg::Error& e) {
    CHECK(std::string(e.what()) == "x");
  }
  CHECK_THROWS_AS(throw tg::OutOfMemoryError("x"), std::runtime_error);
  CHECK_THROWS_AS(throw tg::SerializationError("x"), tg::Error);
}

TEST_CASE("errors: shapes") {
  TG_CHECK_THROWS(tg::matmul(tg::ones({3, 2}), tg::ones({3, 2})), tg::ShapeError,
                  "matmul: mat1 and mat2 shapes cannot be multiplied (3x2 and 3x2)");
  TG_CHECK_THROWS(tg::ones({5}) + tg::ones({6}), tg::ShapeError,
                  "add: the size of tensor a (5) must match the size of tensor b (6) at non-singleton dimension 0");
  TG_CHECK_THROWS(tg::ones({2, 3}) * tg::ones({4, 3}), tg::ShapeError, "mul: the size of tensor a (2)");
  TG_CHECK_THROWS(tg::matmul(tg::ones({3}), tg::ones({2, 4})), tg::ShapeError,
                  "matmul: mat1 and mat2 shapes cannot be multiplied (1x3 and 2x4)");
  TG_CHECK_THROWS(tg::matmul(tg::ones({}), tg::ones({3})), tg::ShapeError, "matmul: both arguments to matmul need to be at least 1D");
  TG_CHECK_THROWS(tg::matmul(tg::ones({2, 3, 4}), tg::ones({3, 4, 5})), tg::ShapeError, "batch sizes 2 and 3");
  TG_CHECK_THROWS(tg::linear(tg::ones({2, 3}), tg::ones({4, 5})), tg::ShapeError, "linear: mat1 and mat2 shapes");
  TG_CHECK_THROWS(tg::cat({tg::ones({2, 3}), tg::ones({2, 4})}, 0), tg::ShapeError, "sizes of tensors must match");
  TG_CHECK_THROWS(tg::cat({}, 0), tg::ShapeError, "non-empty list");
  TG_CHECK_THROWS(tg::stack({tg::ones({2}), tg::ones({3})}), tg::ShapeError, "equal size");
  TG_CHECK_THROWS(tg::mse_loss(tg::ones({2}), tg::ones({3})), tg::ShapeError, "must have the same shape");
  TG_CHECK_THROWS(tg::ones({2, 3}).t().view({6}), tg::ShapeError, "use .reshape(...) instead");
  TG_CHECK_THROWS(tg::t(tg::ones({2, 3, 4})), tg::ShapeError, "<= 2 dimensions");
}

TEST_CASE("errors: dims and indices out of range") {
  Tensor x = tg::ones({2, 3});
  TG_CHECK_THROWS(x.sum(2), tg::IndexError, "dimension out of range (expected to be in range of [-2, 1], but got 2)");
  TG_CHECK_THROWS(x.softmax(-3), tg::IndexError, "dimension out of range");
  TG_CHECK_THROWS(x.transpose(0, 5), tg::IndexError, "transpose: dimension out of range");
  TG_CHECK_THROWS(x.unsqueeze(4), tg::IndexError, "unsqueeze");
  Tensor idx = tg::from_vector(std::vector<int64_t>{0, 3}, {2});
  TG_CHECK_THROWS(x.index_select(1, idx), tg::IndexError, "index_select: index 3 is out of bounds for dimension 1 with size 3");
  Tensor neg = tg::from_vector(std::vector<int64_t>{-1}, {1, 1});
  TG_CHECK_THROWS(x.gather(0, neg), tg::IndexError, "gather: index -1 is out of bounds");
  TG_CHECK_THROWS(x.index_select(0, tg::ones({1})), tg::DTypeError, "int64");
}

TEST_CASE("errors: cross_entropy targets") {
  Tensor logits = tg::ones({2, 5});
  TG_CHECK_THROWS(tg::cross_entropy(logits, tg::from_vector(std::vector<int64_t>{1, 7}, {2})), tg::IndexError,
                  "cross_entropy: target 7 is out of bounds for 5 classes");
  TG_CHECK_THROWS(tg::cross_entropy(logits, tg::from_vector(std::vector<int64_t>{-1, 0}, {2})), tg::IndexError,
                  "target -1 is out of bounds");
  TG_CHECK_THROWS(tg::cross_entropy(logits, tg::ones({2})), tg::DTypeError, "int64 class indices");
  TG_CHECK_THROWS(tg::cross_entropy(logits, tg::from_vector(std::vector<int64_t>{1}, {1})), tg::ShapeError,
                  "expected target of shape (2)");
  TG_CHECK_THROWS(tg::cross_entropy(tg::ones({5}), tg::from_vector(std::vector<int64_t>{1}, {1})), tg::ShapeError,
                  "(N, C)");
}

TEST_CASE("errors: dtypes") {
  Tensor f = tg::ones({2});
  Tensor d = tg::ones({2}, tg::TensorOptions().dtype(tg::kFloat64));
  Tensor i = tg::ones({2}, tg::TensorOptions().dtype(tg::kInt64));
  CHECK((f + d).dtype() == tg::kFloat64);   // promoted, as in PyTorch (Note [Type promotion])
  TG_CHECK_THROWS(tg::exp(i), tg::DTypeError, "floating point");
  CHECK((i / i).dtype() == tg::kFloat32);   // true division of integers
  TG_CHECK_THROWS(i.add_(f * 0.5), tg::DTypeError, "add_: result type float32 can't be cast to the desired output type int64");
  TG_CHECK_THROWS(tg::matmul(tg::ones({2, 2}, tg::TensorOptions().dtype(tg::kInt64)), tg::ones({2, 2}, tg::TensorOptions().dtype(tg::kInt64))),
                  tg::DTypeError, "matmul");
  {   // refused before a is expanded to the broadcast batch (2^28 elements here, a 1 GiB copy)
    const Tensor b = tg::zeros({1, 1, 1, 0}, tg::TensorOptions().dtype(tg::kInt64)).expand({int64_t(1) << 27, 1, 1, 0});
    tg::memory::reset_peak_memory_stats();
    const std::size_t before = tg::memory::memory_allocated();
    TG_CHECK_THROWS(tg::matmul(tg::ones({2, 1, 1}), b), tg::DTypeError,
                    "matmul: expected both tensors to have the same dtype, but got float32 and int64");
    CHECK(tg::memory::max_memory_allocated() - before < (std::size_t(1) << 20));
  }
  CHECK((i + i).to_vector<int64_t>() == std::vector<int64_t>{2, 2});   // int64 arithmetic that is safe works
}

TEST_CASE("errors: devices") {
  // A CUDA tensor cannot be created here (no GPU, or no CUDA build): the request says why.
  if (!tg::cuda::is_available()) {
    TG_CHECK_THROWS(tg::ones({2}, tg::TensorOptions().device(tg::Device::cuda())), tg::DeviceError, "cannot use cuda:0");
    TG_CHECK_THROWS(tg::ones({2}).to(tg::Device::cuda()), tg::DeviceError, "cuda:0");
  }
  // The operand check runs before any kernel: exercised with a tensor that only claims to live on
  // cuda:0 (its bytes are host memory and are never touched).
  auto storage = std::make_shared<tg::Storage>(8, tg::Device::cuda(), &tg::cpu_allocator());
  tg::RawTensor fake(storage, {2}, {1}, 0, tg::kFloat32);
  TG_CHECK_THROWS(tg::prim::add(fake, tg::ones({2}).data()), tg::DeviceError,
                  "add: expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu");
  TG_CHECK_THROWS(tg::prim::matmul(tg::ones({2, 2}).data(), fake.view({2, 1})), tg::DeviceError, "matmul: expected all tensors");
}

TEST_CASE("errors: autograd misuse") {
  Tensor c = tg::ones({1});
  TG_CHECK_THROWS(c.backward(), tg::AutogradError, "does not require grad and does not have a grad_fn");
  TG_CHECK_THROWS(tg::cross_entropy(tg::ones({1, 2}), tg::from_vector(std::vector<int64_t>{0}, {1}).to(tg::kFloat32).set_requires_grad(true)),
                  tg::AutogradError, "no gradient with respect to targets");
  Tensor x = tg::ones({2}, tg::TensorOptions().requires_grad(true));
  TG_CHECK_THROWS(tg::where(x, x, x), tg::AutogradError, "condition is not differentiable");
}

TEST_CASE("errors: undefined Tensors and bad factories do not crash") {
  Tensor u;
  CHECK_FALSE(u.defined());
  CHECK_FALSE(u.requires_grad());
  TG_CHECK_THROWS(u.shape(), tg::Error, "undefined");
  TG_CHECK_THROWS(u + tg::ones({1}), tg::Error, "undefined");
  TG_CHECK_THROWS(tg::arange(-1), tg::ShapeError, "non-negative");
  TG_CHECK_THROWS(tg::eye(-2), tg::ShapeError, "non-negative");
}

TEST_CASE("errors: CPU allocation failure raises OutOfMemoryError with the size and leaks nothing") {
  // 2^40 floats = 4 TiB: a valid shape that no allocator here can serve. It is more than the machine's
  // RAM and swap, so it is refused before malloc is asked, also where the kernel overcommits memory
  // (vm.overcommit_memory = 1), where malloc would grant it and the first write would bring the OOM
  // killer. (Under AddressSanitizer this needs ASAN_OPTIONS=allocator_may_return_null=1, which .ci/run
  // sets.)
  const auto before = tg::debug::live_counts();
  TG_CHECK_THROWS(tg::zeros({int64_t(1) << 40}), tg::OutOfMemoryError, "tried to allocate 4398046511104 bytes");
  TG_CHECK_THROWS(tg::zeros({int64_t(1) << 40}), tg::OutOfMemoryError, "(more than this machine's RAM and swap, ");
  Tensor w = tg::ones({3}, tg::TensorOptions().requires_grad(true));
  TG_CHECK_THROWS(w * tg::zeros({int64_t(1) << 38, 1}), tg::OutOfMemoryError, "CPU out of memory");
  w = Tensor();
  const auto after = tg::debug::live_counts();
  CHECK(after.storages == before.storages);
  CHECK(after.variables == before.variables);
  CHECK(after.nodes == before.nodes);
  CHECK(after.cpu_bytes == before.cpu_bytes);
}

// ------------------------------------------------------------------------------------------------
// Overlapping writes (Note [Overlapping writes], prim/checks.cpp): refused as PyTorch refuses them

namespace {
Tensor square3(uint64_t seed) { return testing::randn64({3, 3}, seed, false); }
}  // namespace

TEST_CASE("overlap: an input sharing memory with the written tensor through another view is refused") {
  const char* partial = "some elements of the input tensor and the written-to tensor refer to a single memory location";
  Tensor a = square3(1);
  const auto before = a.to_vector<double>();
  TG_CHECK_THROWS(a.add_(a.t()), tg::Error, partial);
  TG_CHECK_THROWS(a.sub_(a.t()), tg::Error, partial);
  TG_CHECK_THROWS(a.mul_(a.t()), tg::Error, partial);
  TG_CHECK_THROWS(a.copy_(a.t()), tg::Error, partial);
  TG_CHECK_THROWS(a.copy_(tg::Tensor(a.data().select(0, 1))), tg::Error, partial);   // a row broadcast over a
  CHECK(a.to_vector<double>() == before);   // refused before anything was written
  // the same view, and disjoint views of one storage, are fine
  a.add_(a);
  for (std::size_t i = 0; i < before.size(); ++i) CHECK(a.to_vector<double>()[i] == 2 * before[i]);
  const tg::RawTensor m = a.data();
  const auto row1 = m.narrow(0, 1, 1).clone();
  tg::prim::binary_(tg::BinaryOp::Add, m.narrow(0, 0, 1), m.narrow(0, 1, 1), "add_");
  CHECK(m.narrow(0, 1, 1).clone().to(tg::Device::cpu()).data<double>()[0] == row1.data<double>()[0]);
}

TEST_CASE("overlap: a written tensor that reaches one location through several elements is refused") {
  const char* internal = "more than one element of the written-to tensor refers to a single memory location";
  Tensor row = tg::zeros({1, 3}, tg::TensorOptions().dtype(tg::kFloat64));
  TG_CHECK_THROWS(row.expand({4, 3}).add_(1.0), tg::Error, internal);
  TG_CHECK_THROWS(row.expand({4, 3}).mul_(2.0), tg::Error, internal);
  TG_CHECK_THROWS(row.expand({4, 3}).fill_(1.0), tg::Error, internal);
  TG_CHECK_THROWS(row.expand({4, 3}).copy_(testing::randn64({4, 3}, 2, false)), tg::Error, internal);
  CHECK(row.to_vector<double>() == std::vector<double>{0, 0, 0});
  // an expanded input is fine: it is only read
  Tensor m = tg::zeros({4, 3}, tg::TensorOptions().dtype(tg::kFloat64));
  m.add_(tg::ones({1, 3}, tg::TensorOptions().dtype(tg::kFloat64)).expand({4, 3}));
  CHECK(m.sum().item() == 12.0);
}

TEST_CASE("overlap: index_add_ and scatter_add_ refuse a source that aliases the destination") {
  const tg::RawTensor dst = testing::randn64({4, 3}, 3, false).data();
  const tg::RawTensor idx = tg::from_vector(std::vector<int64_t>{0, 1}, {2}).data();
  TG_CHECK_THROWS(tg::prim::index_add_(dst, 0, idx, dst.narrow(0, 1, 2)), tg::Error, "refer to a single memory location");
  const tg::RawTensor gidx = tg::from_vector(std::vector<int64_t>{0, 1, 2, 3, 0, 1}, {2, 3}).data();
  TG_CHECK_THROWS(tg::prim::scatter_add_(dst, 0, gidx, dst.narrow(0, 0, 2)), tg::Error, "refer to a single memory location");
}

TEST_CASE("overlap: a Tensor cannot be its own grad, and an expanded grad accumulates out of place") {
  Tensor x = testing::randn64({2, 3}, 4);
  TG_CHECK_THROWS(x.set_grad(x), tg::AutogradError, "can't assign Tensor as its own grad");
  TG_CHECK_THROWS(x.set_grad(Tensor(x.data().transpose(0, 1).transpose(0, 1))), tg::AutogradError, "own grad");
  TG_CHECK_THROWS(x.set_grad(tg::zeros({2, 3})), tg::DTypeError, "different type");
  // a grad set to an expanded view: backward adds (x * 2).sum()'s gradient 2 to every element once
  Tensor base = tg::ones({1, 3}, tg::TensorOptions().dtype(tg::kFloat64));
  x.set_grad(base.expand({2, 3}));
  (x * 2.0).sum().backward();
  testing::check_values(x.grad(), {3, 3, 3, 3, 3, 3});
  testing::check_values(base, {1, 1, 1});   // the expanded source was not written through
}

TEST_CASE("integers: fills that do not fit an int64 raise, fractional scalars promote int64 tensors to float32") {
  const auto i64 = tg::TensorOptions().dtype(tg::kInt64);
  TG_CHECK_THROWS(tg::full({2}, 1e20, i64), tg::Error, "cannot be converted to type int64 without overflow");
  TG_CHECK_THROWS(tg::full({2}, std::nan(""), i64), tg::Error, "without overflow");
  TG_CHECK_THROWS(tg::full({2}, 9223372036854775808.0, i64), tg::Error, "without overflow");   // 2^63
  Tensor z = tg::zeros({3}, i64);
  TG_CHECK_THROWS(z.fill_(std::numeric_limits<double>::infinity()), tg::Error, "without overflow");
  CHECK(z.to_vector<int64_t>() == std::vector<int64_t>{0, 0, 0});
  CHECK(tg::full({2}, 2.5, i64).to_vector<int64_t>() == std::vector<int64_t>{2, 2});   // truncates, as PyTorch
  CHECK(tg::full({1}, -9223372036854775808.0, i64).item<int64_t>() == std::numeric_limits<int64_t>::min());
  Tensor n = tg::arange(4, i64);
  CHECK((n * 0.5).dtype() == tg::kFloat32);   // a fractional scalar promotes to the default float dtype
  CHECK((n * 0.5).to_vector<float>() == std::vector<float>{0, 0.5f, 1, 1.5f});
  CHECK((n + 0.5).to_vector<float>() == std::vector<float>{0.5f, 1.5f, 2.5f, 3.5f});
  CHECK((n * 3.0).dtype() == tg::kInt64);    // an integral one keeps the integer dtype
  CHECK((n * 3.0).to_vector<int64_t>() == std::vector<int64_t>{0, 3, 6, 9});
  CHECK((n.to(tg::kFloat32) * 0.5).to_vector<float>() == std::vector<float>{0, 0.5f, 1, 1.5f});
}
