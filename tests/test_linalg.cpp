// tests/test_linalg.cpp: matmul of every rank, mm, bmm, dot, outer and einsum against values and error
// messages recorded from PyTorch (tests/data/linalg_reference.py writes tests/data/linalg_reference.h),
// and the errors PyTorch has no counterpart for. Gradients of gradients are in tests/test_gradcheck.cpp
// (gradgradcheck), CPU-vs-CUDA parity in tests/test_cuda.cpp.
#include <string>
#include <vector>

#include "data/linalg_reference.h"
#include "testing.h"

using tg::Tensor;

namespace {

tg::Shape to_shape(const std::vector<int64_t>& s) { return tg::Shape(s.begin(), s.end()); }

int64_t numel(const tg::Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

/// Operand j of a reference case (tests/data/linalg_reference.py): vals(n, 0.1 (j + 1), 1, shape), built
/// transposed in its last two dims and viewed back when `transposed` (a non-contiguous leaf).
Tensor operand(const std::vector<int64_t>& shape, std::size_t j, bool transposed) {
  const double a = 0.1 * static_cast<double>(j + 1);
  tg::Shape s = to_shape(shape);
  if (!transposed || s.size() < 2) return testing::vals(numel(s), a, 1.0, s, true);
  std::swap(s[s.size() - 1], s[s.size() - 2]);
  return Tensor(testing::vals(numel(s), a, 1.0, s).data().transpose(-1, -2), true);
}

Tensor run(const std::string& op, const std::string& equation, const std::vector<Tensor>& in) {
  if (op == "matmul") return tg::matmul(in.at(0), in.at(1));
  if (op == "mm") return tg::mm(in.at(0), in.at(1));
  if (op == "bmm") return tg::bmm(in.at(0), in.at(1));
  if (op == "dot") return tg::dot(in.at(0), in.at(1));
  if (op == "outer") return tg::outer(in.at(0), in.at(1));
  REQUIRE(op == "einsum");
  return tg::einsum(equation, in);
}

std::string describe(const std::string& op, const std::string& equation, const std::vector<std::vector<int64_t>>& shapes) {
  std::string s = op + (equation.empty() ? "" : " \"" + equation + "\"");
  for (const auto& shape : shapes) s += " " + tg::shape_str(to_shape(shape));
  return s;
}

}  // namespace

TEST_CASE("linalg: matmul of every rank, mm, bmm, dot, outer and einsum match PyTorch, values and gradients") {
  int einsum_cases = 0, matmul_cases = 0;
  for (const linalg_reference::Case& c : linalg_reference::cases()) {
    const std::string what = describe(c.op, c.equation, c.shapes) + (c.transposed ? " (transposed views)" : "");
    CAPTURE(what);
    std::vector<Tensor> in;
    for (std::size_t j = 0; j < c.shapes.size(); ++j) in.push_back(operand(c.shapes[j], j, c.transposed));
    const Tensor y = run(c.op, c.equation, in);
    REQUIRE(y.shape() == to_shape(c.out_shape));
    CHECK(y.dtype() == tg::kFloat64);
    testing::check_values(y, c.out, 1e-12);
    const Tensor w = testing::vals(y.numel(), 0.5, -0.7, y.shape());
    tg::sum(y * w).backward();
    REQUIRE(c.grads.size() == in.size());
    for (std::size_t j = 0; j < in.size(); ++j) {
      CAPTURE(j);
      REQUIRE(in[j].grad().defined());
      CHECK(in[j].grad().shape() == in[j].shape());
      testing::check_values(in[j].grad(), c.grads[j], 1e-12);
    }
    einsum_cases += std::string(c.op) == "einsum";
    matmul_cases += std::string(c.op) == "matmul";
  }
  CHECK(einsum_cases >= 12);
  CHECK(matmul_cases >= 16);
}

TEST_CASE("linalg: errors name the op and carry PyTorch's message") {
  for (const linalg_reference::ErrorCase& c : linalg_reference::errors()) {
    const std::string what = describe(c.op, c.equation, c.shapes);
    CAPTURE(what);
    std::vector<Tensor> in;
    for (std::size_t j = 0; j < c.shapes.size(); ++j) in.push_back(operand(c.shapes[j], j, false));
    const std::string type = c.type;
    std::string message;
    bool right_type = false;
    try {
      run(c.op, c.equation, in);
    } catch (const tg::ShapeError& e) {
      message = e.what();
      right_type = type == "ShapeError";
    } catch (const tg::Error& e) {   // not a subclass: the equation itself is wrong
      message = e.what();
      right_type = type == "Error" && dynamic_cast<const tg::ShapeError*>(&e) == nullptr;
    }
    CAPTURE(message);
    REQUIRE_MESSAGE(!message.empty(), "no error");
    CHECK_MESSAGE(right_type, "expected tg::" << type);
    CHECK(message.find(c.phrase) != std::string::npos);
    CHECK(message.rfind(std::string(c.op), 0) == 0);   // the message starts with the op's name
  }
}

TEST_CASE("linalg: errors PyTorch words differently or lacks") {
  const Tensor a = testing::vals(24, 0.1, 1.0, {2, 3, 4});
  // A batched product with mismatched K names both shapes (PyTorch's names the bmm it reshaped them to).
  TG_CHECK_THROWS(tg::matmul(a, testing::vals(60, 0.2, 1.0, {2, 2, 5, 3})), tg::ShapeError,
                  "matmul: mat1 and mat2 shapes cannot be multiplied (2x3x4 and 2x2x5x3)");
  TG_CHECK_THROWS(tg::matmul(testing::vals(4, 0.1, 1.0, {4}), testing::vals(30, 0.2, 1.0, {2, 5, 3})), tg::ShapeError,
                  "matmul: mat1 and mat2 shapes cannot be multiplied (1x4 and 2x5x3)");
  // tensorgrad's products are floating only; einsum too (PyTorch's also take integers on the CPU).
  const Tensor i = tg::arange(6).reshape({2, 3});
  TG_CHECK_THROWS(tg::matmul(i, tg::arange(3)), tg::DTypeError, "matmul");
  TG_CHECK_THROWS(tg::einsum("ij->ji", {i}), tg::DTypeError, "einsum(): expected floating-point operands, but operand 0 is int64");
  TG_CHECK_THROWS(tg::einsum("ij,jk", {tg::ones({2, 3}), tg::ones({3, 2}, tg::kFloat64)}), tg::DTypeError,
                  "einsum(): expected all operands to have one dtype, but found float32 and float64");
  TG_CHECK_THROWS(tg::einsum("", {}), tg::Error, "einsum(): must provide at least one operand");
  TG_CHECK_THROWS(tg::einsum("i", {Tensor()}), tg::Error, "einsum(): operand 0 is undefined");
  TG_CHECK_THROWS(tg::mm(Tensor(), a), tg::Error, "mm: undefined input");
  TG_CHECK_THROWS(tg::dot(tg::ones({3}), tg::ones({3}, tg::kFloat64)), tg::DTypeError, "");
}

TEST_CASE("linalg: matmul broadcasts batch dims, (2, 1, 4, 5, 3) @ (6, 1, 3, 7) -> (2, 6, 4, 5, 7), as a loop computes it") {
  const Tensor a = testing::vals(120, 0.1, 1.0, {2, 1, 4, 5, 3}), b = testing::vals(126, 0.2, 1.0, {6, 1, 3, 7});
  const Tensor y = tg::matmul(a, b);
  REQUIRE(y.shape() == tg::Shape{2, 6, 4, 5, 7});
  const std::vector<double> av = a.to_vector<double>(), bv = b.to_vector<double>(), yv = y.to_vector<double>();
  std::size_t at = 0;
  for (int p = 0; p < 2; ++p)
    for (int q = 0; q < 6; ++q)
      for (int r = 0; r < 4; ++r)
        for (int m = 0; m < 5; ++m)
          for (int n = 0; n < 7; ++n, ++at) {
            double s = 0;
            for (int k = 0; k < 3; ++k) s += av[static_cast<std::size_t>(((p * 4 + r) * 5 + m) * 3 + k)] *
                                             bv[static_cast<std::size_t>((q * 3 + k) * 7 + n)];
            CHECK(yv[at] == doctest::Approx(s).epsilon(1e-12));
          }
  // The method spelling is the same op.
  CHECK(a.matmul(b).shape() == y.shape());
}

TEST_CASE("linalg: 2-D and 3-D products record one node on the operands, in float32 too") {
  for (tg::DType dt : {tg::kFloat32, tg::kFloat64}) {
    const Tensor a(testing::vals(12, 0.1, 1.0, {3, 4}).to(dt).data(), true);
    const Tensor b(testing::vals(40, 0.2, 1.0, {2, 4, 5}).to(dt).data(), true);
    for (const Tensor& y : {tg::matmul(a, b), tg::matmul(a, tg::transpose(a, 0, 1)), tg::mm(a, tg::t(a))}) {
      REQUIRE(y.grad_fn() != nullptr);
      CHECK(y.grad_fn()->name() == "MmBackward0");
      CHECK(y.dtype() == dt);
    }
    // The other ranks reshape around that product: the result is the product's reshape.
    const Tensor v = tg::matmul(a, Tensor(testing::vals(4, 0.3, 1.0, {4}).to(dt).data(), true));
    CHECK(v.shape() == tg::Shape{3});
    CHECK(v.grad_fn()->name() != "MmBackward0");
  }
}

TEST_CASE("linalg: einsum of float32 operands matches the float64 result") {
  const Tensor a = testing::vals(24, 0.1, 1.0, {2, 3, 4}), b = testing::vals(20, 0.2, 1.0, {4, 5});
  const Tensor y64 = tg::einsum("bij,jk->bik", {a, b});
  const Tensor y32 = tg::einsum("bij,jk->bik", {a.to(tg::kFloat32), b.to(tg::kFloat32)});
  CHECK(y32.dtype() == tg::kFloat32);
  testing::check_close(y32.to(tg::kFloat64), y64, 1e-5, 1e-5);
}

TEST_CASE("linalg: the methods a.mm(b), a.bmm(b), a.dot(b), a.outer(b) are the free functions") {
  const tg::Tensor a = testing::vals(6, -0.3, 0.9, {2, 3}), b = testing::vals(12, 0.1, 0.5, {3, 4});
  testing::check_close(a.mm(b), tg::mm(a, b), 0, 0);
  const tg::Tensor p = testing::vals(24, 0.2, 0.4, {2, 3, 4}), q = testing::vals(40, -0.1, 0.6, {2, 4, 5});
  testing::check_close(p.bmm(q), tg::bmm(p, q), 0, 0);
  const tg::Tensor u = testing::vals(3, 0.5, 1.0, {3}), v = testing::vals(3, -0.5, 0.25, {3});
  testing::check_close(u.dot(v), tg::dot(u, v), 0, 0);
  testing::check_close(u.outer(v), tg::outer(u, v), 0, 0);
  CHECK(u.outer(v).shape() == tg::Shape{3, 3});
}

TEST_CASE("linalg: matmul's results are not views, and counts beyond int64 are refused") {
  // a product reshaped to the result's shape is a fresh result (PyTorch's _unsafe_view): in place ok
  const tg::Tensor v = testing::vals(3, 0.5, 1.0, {3}, true);
  tg::Tensor d = tg::matmul(v, v);   // 0-d
  d.mul_(tg::scalar_like(2.0, d));
  d.backward();
  testing::check_close(v.grad(), v.detach() * 4.0, 1e-15, 0);   // d(2 v.v)/dv = 4 v
  tg::Tensor m = tg::matmul(testing::vals(24, 0.1, 0.3, {2, 1, 3, 4}, true), testing::vals(4, 0.2, 0.5, {4}));
  m.add_(tg::ones({2, 1, 3}, tg::kFloat64));
  CHECK(m.shape() == tg::Shape{2, 1, 3});
  // a batch of 5 x 2^62 entries (the operands hold no elements: a dim of size 0) overflows int64
  const int64_t huge = int64_t{1} << 62;
  TG_CHECK_THROWS(tg::matmul(tg::zeros({1, huge, 0, 2}), tg::zeros({5, 1, 2, 2})), tg::ShapeError,
                  "matmul: the product of [1, 4611686018427387904, 0, 2] and [5, 1, 2, 2] has more elements than int64 can count");
}
