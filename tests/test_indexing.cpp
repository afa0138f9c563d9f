// tests/test_indexing.cpp: advanced indexing (x.index({mask}), x.index({i0, i1})), index_put /
// index_put_ (Python's x[indices] = values) and one_hot, against values and error phrases recorded from
// PyTorch (tests/data/indexing_reference.py writes tests/data/indexing_reference.h, and
// tests/data/mixed_index_reference.py the cases that mix index Tensors with slices, integers, None and
// Ellipsis), plus what PyTorch leaves unspecified or tensorgrad does differently: the value kept at a
// repeated position, the values' gradient there, determinism of accumulate, and the in-place rules.
#include <string>
#include <vector>

#include "data/indexing_reference.h"
#include "data/mixed_index_reference.h"
#include "testing.h"

using tg::Tensor;
using tg::TensorIndex;
namespace ref = indexing_reference;
namespace mixed = mixed_index_reference;

namespace {

int64_t numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

/// The index list of a reference case: its index Tensors, then its full slices.
std::vector<TensorIndex> index_list(const ref::PutCase& c) {
  std::vector<TensorIndex> out;
  for (const ref::Index& i : c.indices) {
    const Tensor t = tg::from_vector(i.entries, i.shape);
    out.emplace_back(i.mask ? Tensor((t != 0.0).data()) : t);
  }
  for (int k = 0; k < c.slices; ++k) out.emplace_back(tg::Slice());
  return out;
}

/// Every element of got within 1e-12 of want (float64 throughout).
void check_values(const Tensor& got, const std::vector<double>& want) {
  const std::vector<double> g = got.to_vector<double>();
  REQUIRE(g.size() == want.size());
  for (std::size_t k = 0; k < g.size(); ++k) CHECK(g[k] == doctest::Approx(want[k]).epsilon(1e-12));
}

const char* phrase(const std::string& name) {
  for (const ref::Phrase& p : ref::phrases())
    if (name == p.name) return p.phrase;
  FAIL("no phrase " << name << " in tests/data/indexing_reference.h");
  return "";
}

Tensor x34() { return testing::vals(12, 0.1, 1.0, {3, 4}); }

/// The index list of a mixed reference case, entry by entry.
std::vector<TensorIndex> index_list(const mixed::Case& c) {
  std::vector<TensorIndex> out;
  for (const mixed::Entry& e : c.index) {
    const std::string kind = e.kind;
    if (kind == "slice") out.emplace_back(tg::Slice(e.value[0], e.value[1], e.value[2]));
    else if (kind == "int") out.emplace_back(*e.value[0]);
    else if (kind == "none") out.emplace_back(tg::indexing::None);
    else if (kind == "ellipsis") out.emplace_back(tg::indexing::Ellipsis);
    else {
      const Tensor t = tg::from_vector(e.entries, e.shape);
      if (kind == "mask") out.emplace_back(Tensor((t != 0.0).data()));
      else if (kind == "int32") out.emplace_back(t.to(tg::kInt32));
      else out.emplace_back(t);
    }
  }
  return out;
}

const char* mixed_phrase(const std::string& name) {
  for (const mixed::Phrase& p : mixed::phrases())
    if (name == p.name) return p.phrase;
  FAIL("no phrase " << name << " in tests/data/mixed_index_reference.h");
  return "";
}

}  // namespace

TEST_CASE("indexing: x.index with index Tensors matches PyTorch's x[indices] and its gradient") {
  for (const ref::PutCase& c : ref::put_cases()) {
    CAPTURE(std::string(c.what));
    const Tensor x = testing::vals(numel(c.x_shape), 0.1, 1.0, c.x_shape, true);
    const Tensor read = x.index(index_list(c));
    CHECK(read.shape() == tg::Shape(c.read_shape));
    check_values(read, c.read);
    (read * testing::vals(numel(c.read_shape), 0.5, -0.7, c.read_shape)).sum().backward();
    check_values(x.grad(), c.dread);
    // a copy, not a view: writing it leaves x alone
    const Tensor before = x.detach().clone();
    {
      tg::NoGradGuard no_grad;
      read.detach().fill_(7.0);
    }
    CHECK(tg::equal(x.detach(), before));
  }
}

TEST_CASE("indexing: index_put matches PyTorch's values and gradients") {
  for (const ref::PutCase& c : ref::put_cases()) {
    CAPTURE(std::string(c.what));
    const Tensor x = testing::vals(numel(c.x_shape), 0.1, 1.0, c.x_shape, true);
    const Tensor v = testing::vals(numel(c.values_shape), 0.2, -1.0, c.values_shape, true);
    const Tensor out = tg::index_put(x, index_list(c), v, c.accumulate);
    CHECK(out.shape() == x.shape());
    check_values(out, c.out);
    (out * testing::vals(numel(c.x_shape), 0.5, -0.7, c.x_shape)).sum().backward();
    check_values(x.grad(), c.dx);
    if (!c.written_twice) check_values(v.grad(), c.dvalues);
    // the method and the in-place form write the same values
    CHECK(tg::equal(x.detach().index_put(index_list(c), v.detach(), c.accumulate), out.detach()));
    Tensor y = x.detach().clone();
    y.index_put_(index_list(c), v.detach(), c.accumulate);
    CHECK(tg::equal(y, out.detach()));
  }
}

TEST_CASE("indexing: a repeated position without accumulate keeps its last value, which alone gets a gradient") {
  const Tensor x = testing::vals(12, 0.1, 1.0, {4, 3}, true);
  Tensor v = tg::from_vector(std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8, 9}, {3, 3});
  v.set_requires_grad(true);
  const Tensor idx = tg::from_vector(std::vector<int64_t>{2, 0, 2}, {3});
  const Tensor out = tg::index_put(x, {idx}, v);
  CHECK(out.select(0, 2).to_vector<double>() == std::vector<double>{7, 8, 9});
  CHECK(out.select(0, 0).to_vector<double>() == std::vector<double>{4, 5, 6});
  out.sum().backward();
  // row 0 of v was overwritten by row 2: its values reach nothing, so their gradient is 0
  CHECK(v.grad().to_vector<double>() == std::vector<double>{0, 0, 0, 1, 1, 1, 1, 1, 1});
  // x's gradient is 0 at the written rows 0 and 2, 1 at the others
  CHECK(x.grad().to_vector<double>() == std::vector<double>{0, 0, 0, 1, 1, 1, 0, 0, 0, 1, 1, 1});
  // a 0-d value broadcast to every position counts each written position once
  const Tensor s = tg::from_vector(std::vector<double>{2.5}, {}).set_requires_grad(true);
  const Tensor dup = tg::from_vector(std::vector<int64_t>{1, 1, 3, 1}, {4});
  tg::index_put(tg::zeros({5}, tg::kFloat64), {dup}, s).sum().backward();
  CHECK(s.grad().item<double>() == 2.0);
}

TEST_CASE("indexing: accumulate adds repeats pairwise in index order, the same on every call") {
  // 1 + 1e-16 + 1e-16 ... in float64: added one by one into 1, each 1e-16 is lost (below half an ulp);
  // pairwise, the eight are summed first (8e-16) and then added to 1, which rounds to 1 + 4 ulps
  std::vector<double> small(8, 1e-16);
  const Tensor v = tg::from_vector(small, {8});
  const Tensor idx = tg::zeros({8}, tg::kInt64);
  const Tensor one = tg::ones({1}, tg::kFloat64);
  const Tensor a = tg::index_put(one, {idx}, v, true);
  CHECK(a.item<double>() == 1.0 + 8e-16);
  for (int k = 0; k < 3; ++k) CHECK(tg::equal(tg::index_put(one, {idx}, v, true), a));
  // integer and bool accumulate too, exactly
  const Tensor twos = tg::from_vector(std::vector<int64_t>{2, 0, 2, 2}, {4});
  const Tensor counts = tg::index_put(tg::zeros({3}, tg::kInt64), {twos}, tg::ones({}, tg::kInt64), true);
  CHECK(counts.to_vector<int64_t>() == std::vector<int64_t>{1, 0, 3});
  const Tensor any = tg::index_put(tg::zeros({3}, tg::kBool), {tg::from_vector(std::vector<int64_t>{1, 1}, {2})},
                                   tg::ones({}, tg::kBool), true);
  CHECK(any.to_vector<bool>() == std::vector<bool>{false, true, false});
}

TEST_CASE("indexing: index_put_ with a scalar, masks and integer dtypes") {
  // labels[mask] = -100, as in a language-model loss
  Tensor labels = tg::from_vector(std::vector<int64_t>{5, 1, 7, 2}, {4});
  labels.index_put_({labels > 4.0}, -100);
  CHECK(labels.to_vector<int64_t>() == std::vector<int64_t>{-100, 1, -100, 2});
  Tensor x = tg::zeros({2, 3});
  x.index_put_({tg::from_vector(std::vector<int64_t>{1}, {1}), tg::Slice()}, 2.5);
  CHECK(x.to_vector<float>() == std::vector<float>{0, 0, 0, 2.5f, 2.5f, 2.5f});
  x.index_put_({x > 1.0}, tg::from_vector(std::vector<float>{1, 2, 3}, {3}));
  CHECK(x.to_vector<float>() == std::vector<float>{0, 0, 0, 1, 2, 3});
  x.index_put_({tg::from_vector(std::vector<int64_t>{0, 0}, {2}), tg::indexing::Ellipsis}, 1.0, true);
  CHECK(x.to_vector<float>() == std::vector<float>{2, 2, 2, 1, 2, 3});
  // int32 positions index as int64 ones
  CHECK(tg::equal(x.index({tg::from_vector(std::vector<int64_t>{1, 0}, {2}).to(tg::kInt32)}),
                  x.index({tg::from_vector(std::vector<int64_t>{1, 0}, {2})})));
}

TEST_CASE("indexing: index_put and index compute in every dtype") {
  const tg::DType dtypes[] = {tg::kFloat32, tg::kFloat64, tg::kFloat16, tg::kBFloat16, tg::kInt64,
                              tg::kInt32,   tg::kInt8,    tg::kUInt8,   tg::kBool};
  const Tensor rows = tg::from_vector(std::vector<int64_t>{1, 3, 1}, {3});
  for (tg::DType dt : dtypes) {
    CAPTURE(tg::dtype_name(dt));
    const Tensor x = tg::zeros({4, 3}, dt);
    const double two = dt == tg::kBool ? 1.0 : 2.0;   // bool adds as logical or
    const Tensor acc = tg::index_put(x, {rows}, tg::ones({3}, dt), true);
    CHECK(acc.dtype() == dt);
    CHECK(acc.to_vector<double>() == std::vector<double>{0, 0, 0, two, two, two, 0, 0, 0, 1, 1, 1});
    const Tensor put = tg::index_put(x, {rows, tg::from_vector(std::vector<int64_t>{0, 2, 1}, {3})}, 1.0);
    CHECK(put.to_vector<double>() == std::vector<double>{0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 1});   // (1, 0) (3, 2) (1, 1)
    const Tensor read = acc.index({acc > 0.0});
    CHECK(read.shape() == tg::Shape{6});   // rows 1 and 3
    CHECK(read.dtype() == dt);
  }
}

TEST_CASE("indexing: index_put_ follows the in-place rules") {
  // a leaf that requires grad is refused; under NoGradGuard it is written (an optimizer's update)
  const Tensor w = testing::vals(12, 0, 1, {3, 4}, true);
  Tensor leaf = w;
  const Tensor rows = tg::from_vector(std::vector<int64_t>{0}, {1});
  TG_CHECK_THROWS(leaf.index_put_({rows}, 1.0), tg::AutogradError, phrase("leaf"));
  TG_CHECK_THROWS(leaf.index_put_({rows}, 1.0), tg::AutogradError, "index_put_");
  {
    tg::NoGradGuard no_grad;
    leaf.index_put_({rows}, 1.0);
  }
  CHECK(w.select(0, 0).to_vector<double>() == std::vector<double>{1, 1, 1, 1});

  // on a non-leaf it is recorded: the gradient reaches the old value (0 at the written rows) and values
  const Tensor a = testing::vals(12, 0.1, 1.0, {3, 4}, true);
  const Tensor v = testing::vals(4, 0.2, -1.0, {4}, true);
  Tensor y = a * 2.0;
  const uint64_t version = y.data().storage()->version();
  y.index_put_({tg::from_vector(std::vector<int64_t>{2}, {1})}, v);
  CHECK(y.data().storage()->version() > version);
  CHECK(y.requires_grad());
  y.sum().backward();
  CHECK(a.grad().to_vector<double>() == std::vector<double>{2, 2, 2, 2, 2, 2, 2, 2, 0, 0, 0, 0});
  CHECK(v.grad().to_vector<double>() == std::vector<double>{1, 1, 1, 1});

  // a tensor an op saved for backward, then written in place: backward refuses, as PyTorch's
  const Tensor b = testing::vals(4, 0.1, 1.0, {4}, true);
  Tensor e = tg::exp(b);   // exp saves its output
  const Tensor loss = e.sum();
  e.index_put_({tg::from_vector(std::vector<int64_t>{1}, {1})}, 0.0);
  TG_CHECK_THROWS(loss.backward(), tg::AutogradError,
                  "one of the variables needed for gradient computation has been modified by an inplace operation");

  // a plain tensor written with values that require grad becomes part of the graph
  Tensor z = tg::zeros({3}, tg::kFloat64);
  const Tensor s = tg::from_vector(std::vector<double>{4.0}, {}).set_requires_grad(true);
  z.index_put_({tg::from_vector(std::vector<int64_t>{0, 2}, {2})}, s);
  CHECK(z.requires_grad());
  (z * z).sum().backward();
  CHECK(s.grad().item<double>() == 16.0);   // d/ds 2 s^2 at 4
}

TEST_CASE("indexing: bad indices and values raise PyTorch's errors naming the op") {
  Tensor x = x34();
  const Tensor i2 = tg::from_vector(std::vector<int64_t>{0, 1}, {2});
  const Tensor one = tg::ones({}, tg::kFloat64);
  TG_CHECK_THROWS(x.index_put_({tg::from_vector(std::vector<int64_t>{0}, {1})}, tg::ones({4})), tg::DTypeError,
                  phrase("dtype"));
  TG_CHECK_THROWS(x.index_put_({i2}, tg::ones({3}, tg::kFloat64)), tg::ShapeError, phrase("values shape"));
  TG_CHECK_THROWS(x.index_put_({i2}, tg::ones({3}, tg::kFloat64)), tg::ShapeError, "index_put_");
  TG_CHECK_THROWS(tg::index_put(x, {i2}, tg::ones({3}, tg::kFloat64)), tg::ShapeError, "index_put:");
  TG_CHECK_THROWS(x.index_put_({tg::from_vector(std::vector<int64_t>{0, 3}, {2})}, one), tg::IndexError,
                  phrase("out of range"));
  TG_CHECK_THROWS(x.index_put_({tg::from_vector(std::vector<int64_t>{-4}, {1})}, one), tg::IndexError,
                  phrase("negative out of range"));
  const Tensor mask4 = Tensor((tg::from_vector(std::vector<int64_t>{1, 0, 1, 1}, {4}) != 0.0).data());
  TG_CHECK_THROWS(x.index_put_({mask4}, one), tg::IndexError, phrase("mask shape"));
  TG_CHECK_THROWS(x.index({mask4}), tg::IndexError, phrase("mask shape"));
  TG_CHECK_THROWS(x.index_put_({i2, tg::from_vector(std::vector<int64_t>{0, 1, 2}, {3})}, one), tg::IndexError,
                  phrase("broadcast"));
  TG_CHECK_THROWS(x.index_put_({tg::zeros({1}, tg::kFloat64)}, one), tg::IndexError, phrase("index dtype"));
  TG_CHECK_THROWS(x.index_put_({i2, i2, i2}, one), tg::IndexError, phrase("too many"));
  TG_CHECK_THROWS(TensorIndex(Tensor()), tg::Error, "an index Tensor must be defined");
  // x is unchanged by the refused writes
  CHECK(tg::equal(x, x34()));
}

TEST_CASE("indexing: index Tensors mixed with slices, integers, None and Ellipsis read as PyTorch's x[index]") {
  for (const mixed::Case& c : mixed::cases()) {
    CAPTURE(std::string(c.what));
    const Tensor x = testing::vals(numel(c.x_shape), 0.1, 1.0, c.x_shape, true);
    const Tensor read = x.index(index_list(c));
    CHECK(read.shape() == tg::Shape(c.read_shape));
    check_values(read, c.read);
    CHECK(tg::equal(tg::index(x, index_list(c)), read));
    (read * testing::vals(numel(c.read_shape), 0.5, -0.7, c.read_shape)).sum().backward();
    check_values(x.grad(), c.dread);
    // a copy, not a view: writing it leaves x alone
    const Tensor before = x.detach().clone();
    {
      tg::NoGradGuard no_grad;
      read.detach().fill_(7.0);
    }
    CHECK(tg::equal(x.detach(), before));
  }
}

TEST_CASE("indexing: index_put and index_put_ with mixed index lists match PyTorch's values and gradients") {
  for (const mixed::Case& c : mixed::cases()) {
    CAPTURE(std::string(c.what));
    const Tensor x = testing::vals(numel(c.x_shape), 0.1, 1.0, c.x_shape, true);
    const Tensor v = testing::vals(numel(c.values_shape), 0.2, -1.0, c.values_shape, true);
    const Tensor w = testing::vals(numel(c.x_shape), 0.5, -0.7, c.x_shape);
    const Tensor out = tg::index_put(x, index_list(c), v, c.accumulate);
    CHECK(out.shape() == x.shape());
    check_values(out, c.out);
    (out * w).sum().backward();
    check_values(x.grad(), c.dx);
    check_values(v.grad(), c.dvalues);
    CHECK(tg::equal(x.detach().index_put(index_list(c), v.detach(), c.accumulate), out.detach()));

    // in place on a non-leaf: the same values, a new version, and the gradients through the write
    const Tensor x2 = testing::vals(numel(c.x_shape), 0.1, 1.0, c.x_shape, true);
    const Tensor v2 = testing::vals(numel(c.values_shape), 0.2, -1.0, c.values_shape, true);
    Tensor y = x2 * 1.0;
    const Tensor alias = y.reshape({-1});   // shares y's storage
    const uint64_t version = y.data().storage()->version();
    y.index_put_(index_list(c), v2, c.accumulate);
    CHECK(y.data().storage()->version() > version);
    check_values(y, c.out);
    check_values(alias, c.out);   // the write went to y's storage
    (y * w).sum().backward();
    check_values(x2.grad(), c.dx);
    check_values(v2.grad(), c.dvalues);
  }
}

TEST_CASE("indexing: index_put_ with a mixed index list on a basic view writes its base") {
  Tensor base = tg::zeros({4, 3, 5}, tg::kFloat64);
  Tensor view = base.index({tg::Slice(1, 3)});   // rows 1 and 2, sharing base's storage
  const Tensor cols = tg::from_vector(std::vector<int64_t>{4, 0}, {2});
  view.index_put_({tg::Slice(), 2, cols}, 1.0);
  view.index_put_({tg::indexing::Ellipsis, cols.to(tg::kInt32)}, 2.0, true);
  double total = 0;
  for (int64_t r = 0; r < 4; ++r)
    for (int64_t k = 0; k < 3; ++k)
      for (int64_t j = 0; j < 5; ++j) {
        const double want = (r == 1 || r == 2) && (j == 0 || j == 4) ? (k == 2 ? 3.0 : 2.0) : 0.0;
        CHECK(base.index({r, k, j}).item<double>() == want);
        total += want;
      }
  CHECK(base.sum().item<double>() == total);
}

TEST_CASE("indexing: mixed index lists raise PyTorch's errors naming the op") {
  Tensor x = testing::vals(5 * 6 * 7, 0.1, 1.0, {5, 6, 7});
  const Tensor copy = x.clone();
  const Tensor idx3 = tg::from_vector(std::vector<int64_t>{0, 2, 4}, {3});
  const Tensor one = tg::ones({}, tg::kFloat64);
  const Tensor nine = tg::from_vector(std::vector<int64_t>{9}, {1});
  // a position out of range names the dim of x it indexes and that dim's size
  TG_CHECK_THROWS(x.index({tg::Slice(), nine}), tg::IndexError, mixed_phrase("out of range"));
  TG_CHECK_THROWS(x.index({tg::Slice(), nine}), tg::IndexError,
                  "index: index 9 is out of bounds for dimension 1 with size 6");
  TG_CHECK_THROWS(x.index_put_({0, tg::Slice(), nine.to(tg::kInt32)}, one), tg::IndexError,
                  "index_put_: index 9 is out of bounds for dimension 2 with size 7");
  TG_CHECK_THROWS(x.index({idx3, 9}), tg::IndexError, mixed_phrase("integer out of range"));
  TG_CHECK_THROWS(tg::index_put(x, {idx3, 9}, one), tg::IndexError, "index_put:");
  const Tensor mask23 = Tensor(tg::ones({2, 3}, tg::kBool).data());
  TG_CHECK_THROWS(x.index({tg::Slice(1, 3), mask23}), tg::IndexError, mixed_phrase("mask shape"));
  TG_CHECK_THROWS(x.index_put_({tg::Slice(1, 3), mask23}, one), tg::IndexError, "index_put_:");
  TG_CHECK_THROWS(x.index({tg::Slice(), tg::Slice(), idx3, 0}), tg::IndexError, mixed_phrase("too many"));
  TG_CHECK_THROWS(x.index_put_({idx3, tg::indexing::None, tg::Slice(), mask23}, one), tg::IndexError,
                  mixed_phrase("too many"));
  const Tensor two = tg::from_vector(std::vector<int64_t>{1, 2}, {2});
  TG_CHECK_THROWS(x.index({tg::Slice(), idx3, two}), tg::IndexError, mixed_phrase("broadcast"));
  TG_CHECK_THROWS(x.index_put_({tg::Slice(), idx3, two}, one), tg::IndexError, "index_put_:");
  TG_CHECK_THROWS(x.index_put_({tg::Slice(), idx3}, tg::ones({2, 2}, tg::kFloat64)), tg::ShapeError,
                  mixed_phrase("values shape"));
  TG_CHECK_THROWS(x.index_put_({tg::Slice(), idx3}, tg::ones({2, 2}, tg::kFloat64)), tg::ShapeError, "index_put_:");
  TG_CHECK_THROWS(x.index({tg::Slice(), tg::ones({1}, tg::kFloat64)}), tg::IndexError, mixed_phrase("index dtype"));
  TG_CHECK_THROWS(x.index({tg::indexing::Ellipsis, idx3, tg::indexing::Ellipsis}), tg::IndexError,
                  "index: an index can only have a single ellipsis");
  TG_CHECK_THROWS(x.index_put_({tg::Slice(0, 3, 0), idx3}, one), tg::IndexError,
                  "index_put_: slice step must be positive");
  // x is unchanged by the refused writes
  CHECK(tg::equal(x, copy));
}

TEST_CASE("one_hot matches torch.nn.functional.one_hot") {
  for (const ref::OneHotCase& c : ref::one_hot_cases()) {
    CAPTURE(std::string(c.what));
    const Tensor x = tg::from_vector(c.entries, c.shape);
    const Tensor out = tg::one_hot(x, c.num_classes);
    CHECK(out.dtype() == tg::kInt64);
    CHECK(out.shape() == tg::Shape(c.out_shape));
    CHECK(out.to_vector<int64_t>() == c.out);
    CHECK(tg::equal(tg::nn::functional::one_hot(x, c.num_classes), out));
  }
  TG_CHECK_THROWS(tg::one_hot(tg::zeros({1}), 2), tg::DTypeError, phrase("one_hot dtype"));
  TG_CHECK_THROWS(tg::one_hot(tg::zeros({0}, tg::kInt64)), tg::Error, phrase("one_hot empty"));
  TG_CHECK_THROWS(tg::one_hot(tg::from_vector(std::vector<int64_t>{1, -1}, {2}), 3), tg::IndexError,
                  phrase("one_hot negative"));
  TG_CHECK_THROWS(tg::one_hot(tg::from_vector(std::vector<int64_t>{1, -1}, {2}), 3), tg::IndexError, "got -1");
  TG_CHECK_THROWS(tg::one_hot(tg::from_vector(std::vector<int64_t>{1, 3}, {2}), 3), tg::IndexError,
                  phrase("one_hot too large"));
  TG_CHECK_THROWS(tg::one_hot(tg::from_vector(std::vector<int64_t>{1, 3}, {2}), 3), tg::IndexError, "got 3");
  TG_CHECK_THROWS(tg::one_hot(tg::from_vector(std::vector<int64_t>{1}, {1}), -2), tg::IndexError, "num_classes");
}

TEST_CASE("cuda indexing: CPU index Tensors index a CUDA tensor, with the CPU's values and gradients") {
  TG_NEED_CUDA();
  const Tensor x = testing::vals(12, 0.1, 1.0, {4, 3}, true);
  const Tensor xg = Tensor(x.detach().cuda().data(), true);
  const Tensor v = testing::vals(3, 0.2, -1.0, {3}, true);
  const Tensor vg = Tensor(v.detach().cuda().data(), true);
  const Tensor rows = tg::from_vector(std::vector<int64_t>{3, 0, 3, 3}, {4});   // on the CPU, with repeats
  for (bool accumulate : {false, true}) {
    CAPTURE(accumulate);
    const Tensor out = tg::index_put(x, {rows, tg::Slice()}, v, accumulate);
    const Tensor outg = tg::index_put(xg, {rows, tg::Slice()}, vg, accumulate);
    CHECK(outg.is_cuda());
    CHECK(tg::equal(outg.cpu(), out));   // the same additions in the same order: the same bits
    const auto g = tg::autograd::grad({(out * out).sum()}, {x, v});
    const auto gg = tg::autograd::grad({(outg * outg).sum()}, {xg, vg});
    CHECK(tg::allclose(gg[0].cpu(), g[0]));
    CHECK(tg::allclose(gg[1].cpu(), g[1]));
  }
  // a mask computed on the device
  const Tensor read = xg.index({xg > 0.5});
  CHECK(tg::equal(read.cpu(), x.index({x > 0.5})));
  CHECK(tg::equal(tg::one_hot(rows.cuda(), 5).cpu(), tg::one_hot(rows, 5)));
}
