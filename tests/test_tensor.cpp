// tests/test_tensor.cpp: Device/DType, shapes and overflow checks, RawTensor views and copies,
// printing, the caching CPU allocator and the Philox generator.
#include <algorithm>
#include <limits>
#include <sstream>
#include <type_traits>

#include "tensorgrad/core/allocator.h"
#include "testing.h"

using tg::RawTensor;
using tg::Tensor;

TEST_CASE("Device: parse print compare") {
  CHECK(tg::Device::cpu().str() == "cpu");
  CHECK(tg::Device::cuda(0).str() == "cuda:0");
  CHECK(tg::Device::cuda(1).str() == "cuda:1");
  CHECK(tg::Device("cuda:0") == tg::Device::cuda(0));
  // "cuda" without an index is the current device, looked up when used (PyTorch): a value of its own
  CHECK(tg::Device("cuda") == tg::Device::cuda());
  CHECK(tg::Device("cuda") == tg::Device(tg::DeviceType::CUDA));
  CHECK(tg::Device("cuda") != tg::Device::cuda(0));
  CHECK(tg::Device::cuda().str() == "cuda");
  CHECK(tg::Device::cuda().index() == -1);
  CHECK_FALSE(tg::Device::cuda().has_index());
  CHECK(tg::Device::cuda(0).has_index());
  CHECK(tg::Device::cpu().has_index());
  TG_CHECK_THROWS(tg::Device(tg::DeviceType::CUDA, -2), tg::DeviceError, "must be -1 or non-negative, got -2");
  CHECK(tg::Device("cpu").is_cpu());
  CHECK(tg::Device("cuda:3").index() == 3);
  for (const char* bad : {"gpu", "cuda:", "cuda:x", "cuda:-1", "CPU", "", "cuda:0:1", "cuda:1234567"})
    TG_CHECK_THROWS(tg::Device(std::string(bad)), tg::Error, "expected a device string");
  std::ostringstream os;
  os << tg::Device::cuda(2) << " " << tg::kFloat64;
  CHECK(os.str() == "cuda:2 float64");
}

TEST_CASE("dtype table: every helper reads it, and a value outside it is a DTypeError, never another type") {
  CHECK(tg::dtype_size(tg::kFloat32) == 4);
  CHECK(tg::dtype_size(tg::kFloat64) == 8);
  CHECK(tg::dtype_size(tg::kInt64) == 8);
  CHECK(tg::is_floating(tg::kFloat32));
  CHECK_FALSE(tg::is_floating(tg::kInt64));
  CHECK(std::string(tg::dtype_name(tg::kFloat64)) == "float64");
  CHECK(tg::dispatch_dtype(tg::kInt64, [](auto z) { return std::is_same<decltype(z), int64_t>::value; }));
  CHECK(std::is_same<tg::sum_accumulator_t<float>, double>::value);
  CHECK(std::is_same<tg::sum_accumulator_t<int64_t>, int64_t>::value);
  const auto bad = static_cast<tg::DType>(200);
  CHECK(std::string(tg::dtype_name(bad)) == "unknown");
  TG_CHECK_THROWS(tg::dtype_size(bad), tg::DTypeError, "not in the dtype table");
  TG_CHECK_THROWS(tg::is_floating(bad), tg::DTypeError, "not in the dtype table");
  TG_CHECK_THROWS(tg::dispatch_dtype(bad, [](auto) { return 0; }), tg::DTypeError, "value 200");
  TG_CHECK_THROWS(tg::dispatch_floating(bad, "op", [](auto) { return 0; }), tg::DTypeError, "not in the dtype table");
  TG_CHECK_THROWS(tg::dispatch_floating(tg::kInt64, "op", [](auto) { return 0; }), tg::DTypeError, "op: expected a floating");
  TG_CHECK_THROWS(tg::zeros({2}, tg::TensorOptions().dtype(bad)), tg::DTypeError, "not in the dtype table");
}

TEST_CASE("Shape: element counts are checked for negative sizes and int64 overflow before allocation") {
  CHECK(tg::checked_numel({2, 3, 4}) == 24);
  CHECK(tg::checked_numel({}) == 1);
  CHECK(tg::checked_numel({5, 0, int64_t(1) << 62}) == 0);
  TG_CHECK_THROWS(tg::checked_numel({int64_t(1) << 32, int64_t(1) << 32}), tg::ShapeError, "more elements than fit in int64");
  TG_CHECK_THROWS(tg::zeros({3, -1}), tg::ShapeError, "negative dimension");
  TG_CHECK_THROWS(tg::zeros({int64_t(1) << 40, int64_t(1) << 30}), tg::ShapeError, "int64");
  TG_CHECK_THROWS(tg::zeros({int64_t(1) << 61}), tg::OutOfMemoryError, "cannot allocate");
  CHECK(tg::broadcast_shapes({3, 1}, {1, 4}, "add") == tg::Shape{3, 4});
  CHECK(tg::broadcast_shapes({}, {2}, "add") == tg::Shape{2});
}

TEST_CASE("Shape: a vector of sizes with 6 dims inline, any rank on the heap") {
  using tg::Shape;
  Shape s{2, 3, 4};
  CHECK(s.size() == 3);
  CHECK(s.capacity() == 6);   // inline
  CHECK(s == Shape{2, 3, 4});
  CHECK(s != Shape{2, 3});
  CHECK(s == std::vector<int64_t>{2, 3, 4});   // converts from and to std::vector
  CHECK(std::vector<int64_t>(s) == std::vector<int64_t>{2, 3, 4});
  CHECK(Shape(3, 1) == Shape{1, 1, 1});        // (count, value), not an iterator pair
  CHECK(Shape(2) == Shape{0, 0});              // value-initialized
  CHECK(Shape().empty());

  // Past the inline capacity: grows onto the heap, keeps order; copies and moves keep the values.
  Shape big;
  for (int64_t i = 0; i < 9; ++i) big.push_back(10 + i);
  CHECK(big.size() == 9);
  CHECK(big.capacity() > 6);
  CHECK(big.front() == 10);
  CHECK(big.back() == 18);
  Shape copy = big;
  CHECK(copy == big);
  copy[0] = -1;
  CHECK(big[0] == 10);                          // a deep copy
  Shape moved = std::move(copy);
  CHECK(moved.size() == 9);
  CHECK(moved[0] == -1);
  CHECK(copy.empty());                          // NOLINT: a moved-from Shape is empty and usable
  copy = s;
  CHECK(copy == s);
  moved = s;                                    // heap -> inline values
  CHECK(moved == s);
  s = big;                                      // inline -> heap values
  CHECK(s == big);
  Shape small{7};
  small = std::move(big);
  CHECK(small.size() == 9);
  big = Shape{1, 2};
  CHECK(big == Shape{1, 2});

  // insert / erase / resize as std::vector does, also on aliasing arguments and across the boundary.
  Shape v{1, 2, 3, 4, 5, 6};
  v.insert(v.begin() + 1, v[5]);                // grows while inserting one of its own elements
  CHECK(v == Shape{1, 6, 2, 3, 4, 5, 6});
  v.erase(v.begin());
  CHECK(v == Shape{6, 2, 3, 4, 5, 6});
  v.insert(v.begin(), v.begin() + 4, v.end());
  CHECK(v == Shape{5, 6, 6, 2, 3, 4, 5, 6});
  v.erase(v.begin() + 1, v.begin() + 3);
  CHECK(v == Shape{5, 2, 3, 4, 5, 6});
  v.resize(8, v[0]);
  CHECK(v == Shape{5, 2, 3, 4, 5, 6, 5, 5});
  v.resize(2);
  CHECK(v == Shape{5, 2});
  v.push_back(v.back());
  v.pop_back();
  CHECK(v == Shape{5, 2});
  CHECK(Shape(v.rbegin(), v.rend()) == Shape{2, 5});

  // A 7-d tensor (heap shape) works like any other.
  RawTensor t = RawTensor::empty({1, 2, 1, 2, 1, 2, 3});
  CHECK(t.strides() == Shape{24, 12, 12, 6, 6, 3, 1});
  CHECK(t.permute({6, 5, 4, 3, 2, 1, 0}).shape() == Shape{3, 2, 1, 2, 1, 2, 1});
}

TEST_CASE("SmallVector holds non-trivial elements: constructed and destroyed once each") {
  auto p = std::make_shared<int>(0);
  {
    tg::SmallVector<std::shared_ptr<int>, 2> v;
    for (int i = 0; i < 5; ++i) v.push_back(p);   // 2 inline, then the heap
    CHECK(p.use_count() == 6);
    auto w = v;
    CHECK(p.use_count() == 11);
    auto m = std::move(w);
    CHECK(p.use_count() == 11);
    v.erase(v.begin(), v.begin() + 3);
    CHECK(p.use_count() == 8);
    v.clear();
    CHECK(p.use_count() == 6);
  }
  CHECK(p.use_count() == 1);
}

TEST_CASE("Tensor views share storage and compute strides") {
  Tensor x = tg::arange(12).reshape({3, 4});
  const RawTensor& t = x.data();
  CHECK(t.strides() == tg::Shape{4, 1});
  RawTensor tr = t.transpose(0, 1);
  CHECK(tr.shape() == tg::Shape{4, 3});
  CHECK(tr.strides() == tg::Shape{1, 4});
  CHECK_FALSE(tr.is_contiguous());
  CHECK(tr.storage() == t.storage());
  RawTensor c = tr.contiguous();
  CHECK(c.is_contiguous());
  CHECK(c.storage() != t.storage());
  testing::check_values(Tensor(c), {0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11});
  // view of a non-contiguous tensor where possible, error where not
  RawTensor sub = t.narrow(1, 1, 2);   // (3, 2) with strides (4, 1)
  CHECK(sub.view({3, 2, 1}).strides() == tg::Shape{4, 1, 1});
  TG_CHECK_THROWS(tr.view({12}), tg::ShapeError, "view size is not compatible");
  testing::check_values(Tensor(tr.reshape({12})), {0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11});
  RawTensor e = t.select(0, 1).unsqueeze(0).expand({2, 4});
  CHECK(e.strides() == tg::Shape{0, 1});
  testing::check_values(Tensor(e), {4, 5, 6, 7, 4, 5, 6, 7});
  CHECK(t.permute({1, 0}).shape() == tg::Shape{4, 3});
  CHECK(t.unsqueeze(2).squeeze().shape() == tg::Shape{3, 4});
  CHECK(t.clone().storage() != t.storage());
}

TEST_CASE("dtype conversions and item") {
  Tensor x = tg::from_vector(std::vector<float>{1.5f, -2.25f}, {2});
  CHECK(x.to(tg::kFloat64).dtype() == tg::kFloat64);
  testing::check_values(x.to(tg::kFloat64), {1.5, -2.25});
  testing::check_values(x.to(tg::kInt64), {1, -2});
  CHECK(x.sum().item() == doctest::Approx(-0.75));
  CHECK(x.sum().item<float>() == doctest::Approx(-0.75f));
  TG_CHECK_THROWS(x.item(), tg::ShapeError, "cannot be converted to Scalar");
  CHECK(tg::eye(3).to_vector<float>() == std::vector<float>{1, 0, 0, 0, 1, 0, 0, 0, 1});
  CHECK(tg::full({2}, 7.0, tg::TensorOptions().dtype(tg::kInt64)).to_vector<int64_t>() == std::vector<int64_t>{7, 7});
}

TEST_CASE("printing follows PyTorch's layout") {
  std::ostringstream a, b, c, d;
  a << tg::from_vector(std::vector<float>{1, 2, 3, 4}, {2, 2});
  CHECK(a.str() == "tensor([[1., 2.],\n        [3., 4.]])");
  b << tg::from_vector(std::vector<double>{0.5, -1.25}, {2});
  CHECK(b.str() == "tensor([ 0.5000, -1.2500], dtype=float64)");
  c << tg::from_vector(std::vector<int64_t>{3}, {});
  CHECK(c.str() == "tensor(3)");
  d << tg::from_vector(std::vector<float>{1, 2}, {2}, tg::TensorOptions().requires_grad(true)) * 2.0;
  CHECK(d.str() == "tensor([2., 4.], grad_fn=<mul>)");
  std::ostringstream e;
  e << tg::zeros({2, 0});
  CHECK(e.str() == "tensor([], size=(2, 0))");
}

TEST_CASE("printing: int64 values are exact and large tensors are summarized as PyTorch does") {
  std::ostringstream a;
  const int64_t big = std::numeric_limits<int64_t>::max();
  a << tg::from_vector(std::vector<int64_t>{big, std::numeric_limits<int64_t>::min(), (int64_t(1) << 53) + 1}, {3});
  CHECK(a.str() == "tensor([ 9223372036854775807, -9223372036854775808,     9007199254740993])");
  // more than 1000 elements: the first and last 3 of each longer dim
  std::ostringstream b;
  b << tg::arange(2000, tg::TensorOptions().dtype(tg::kInt64));
  CHECK(b.str() == "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])");
  std::ostringstream c;
  c << tg::zeros({2000, 3});
  CHECK(c.str() == "tensor([[0., 0., 0.],\n        [0., 0., 0.],\n        [0., 0., 0.],\n        ...,\n"
                   "        [0., 0., 0.],\n        [0., 0., 0.],\n        [0., 0., 0.]])");
  std::ostringstream d;   // a (8192, 8192) tensor prints 36 values, not 67 million
  d << tg::zeros({8192, 8192}).data().transpose(0, 1);
  CHECK(d.str().size() < 400);
  CHECK(d.str().find("...") != std::string::npos);
  // 1000 elements exactly: printed in full
  std::ostringstream e;
  e << tg::zeros({1000});
  CHECK(e.str().find("...") == std::string::npos);
}

TEST_CASE("item<int64_t> is exact beyond 2^53") {
  const int64_t v = (int64_t(1) << 53) + 1;
  CHECK(tg::from_vector(std::vector<int64_t>{v}, {1}).item<int64_t>() == v);
  CHECK(tg::from_vector(std::vector<int64_t>{std::numeric_limits<int64_t>::max()}, {}).item<int64_t>() ==
        std::numeric_limits<int64_t>::max());
  CHECK(tg::from_vector(std::vector<float>{2.5f}, {}).item<float>() == 2.5f);
  TG_CHECK_THROWS(tg::zeros({2}).item<float>(), tg::ShapeError, "cannot be converted to Scalar");
}

TEST_CASE("integers: randint is exact over every int64 interval") {
  const int64_t max = std::numeric_limits<int64_t>::max(), min = std::numeric_limits<int64_t>::min();
  tg::manual_seed(1);
  for (int64_t v : tg::randint(max - 10, max, {64}).to_vector<int64_t>()) {   // was SIGFPE (range in double)
    CHECK(v >= max - 10);
    CHECK(v < max);
  }
  const int64_t p53 = int64_t(1) << 53;   // doubles above 2^53 are even: [2^53, 2^53 + 3) came out wrong
  std::vector<int> seen(3, 0);
  for (int64_t v : tg::randint(p53, p53 + 3, {600}).to_vector<int64_t>()) {
    REQUIRE(v >= p53);
    REQUIRE(v < p53 + 3);
    ++seen[static_cast<std::size_t>(v - p53)];
  }
  for (int count : seen) CHECK(count > 100);   // each of the three values, about 200 times
  // the widest interval and one that crosses zero: values spread over both signs
  const auto wide = tg::randint(min, max, {256}).to_vector<int64_t>();
  CHECK(std::count_if(wide.begin(), wide.end(), [](int64_t v) { return v < 0; }) > 64);
  CHECK(std::count_if(wide.begin(), wide.end(), [](int64_t v) { return v > 0; }) > 64);
  for (int64_t v : tg::randint(-3, 2, {200}).to_vector<int64_t>()) {
    CHECK(v >= -3);
    CHECK(v < 2);
  }
  for (int64_t v : tg::randint(min, min + 2, {50}).to_vector<int64_t>()) CHECK((v == min || v == min + 1));
  // float dtypes get the same integers, converted
  tg::manual_seed(9);
  const auto as_int = tg::randint(0, 1000, {100}).to_vector<int64_t>();
  tg::manual_seed(9);
  const auto as_float = tg::randint(0, 1000, {100}, tg::TensorOptions().dtype(tg::kFloat64)).to_vector<double>();
  for (std::size_t i = 0; i < as_int.size(); ++i) CHECK(double(as_int[i]) == as_float[i]);
}

TEST_CASE("integers: randint refuses bounds its dtype cannot hold, in PyTorch's words, instead of wrapping") {
  // torch 2.15.0, e.g. torch.randint(0, 300, (3,), dtype=torch.uint8):
  //   RuntimeError: to - 1 is out of bounds for unsigned char
  const auto opts = [](tg::DType d) { return tg::TensorOptions().dtype(d); };
  TG_CHECK_THROWS(tg::randint(0, 300, {3}, opts(tg::kUInt8)), tg::Error, "to - 1 is out of bounds for unsigned char");
  TG_CHECK_THROWS(tg::randint(0, 300, {3}, opts(tg::kUInt8)), tg::Error,
                  "high - 1 = 299 is outside uint8's range [0, 255]");
  TG_CHECK_THROWS(tg::randint(0, 257, {3}, opts(tg::kUInt8)), tg::Error, "to - 1 is out of bounds for unsigned char");
  TG_CHECK_THROWS(tg::randint(-1, 10, {3}, opts(tg::kUInt8)), tg::Error, "from is out of bounds for unsigned char");
  TG_CHECK_THROWS(tg::randint(300, 301, {3}, opts(tg::kUInt8)), tg::Error, "from is out of bounds for unsigned char");
  TG_CHECK_THROWS(tg::randint(-129, 0, {3}, opts(tg::kInt8)), tg::Error, "from is out of bounds for signed char");
  TG_CHECK_THROWS(tg::randint(-128, 129, {3}, opts(tg::kInt8)), tg::Error, "to - 1 is out of bounds for signed char");
  TG_CHECK_THROWS(tg::randint(0, 129, {3}, opts(tg::kInt8)), tg::Error, "to - 1 is out of bounds for signed char");
  const int64_t i32 = int64_t(1) << 31;
  TG_CHECK_THROWS(tg::randint(0, i32 + 1, {3}, opts(tg::kInt32)), tg::Error, "to - 1 is out of bounds for int");
  TG_CHECK_THROWS(tg::randint(-i32 - 1, 0, {3}, opts(tg::kInt32)), tg::Error, "from is out of bounds for int");
  TG_CHECK_THROWS(tg::randint(0, 3, {3}, opts(tg::kBool)), tg::Error, "to - 1 is out of bounds for bool");
  TG_CHECK_THROWS(tg::randint(-1, 1, {3}, opts(tg::kBool)), tg::Error, "from is out of bounds for bool");
  TG_CHECK_THROWS(tg::randint(0, 65506, {3}, opts(tg::kFloat16)), tg::Error, "to - 1 is out of bounds for c10::Half");
  TG_CHECK_THROWS(tg::randint(-65505, 0, {3}, opts(tg::kFloat16)), tg::Error, "from is out of bounds for c10::Half");
  // torch.randint(5, 5, (3,)): RuntimeError: random_ expects 'from' to be less than 'to', but got from=5 >= to=5
  TG_CHECK_THROWS(tg::randint(5, 5, {3}), tg::Error, "expected 'from' to be less than 'to', but got from=5 >= to=5");
  TG_CHECK_THROWS(tg::randint(6, 5, {3}, opts(tg::kUInt8)), tg::Error, "but got from=6 >= to=5");
  // the prim API checks too: an empty integer range is an error, not a division by zero
  TG_CHECK_THROWS(tg::prim::random(tg::philox::Distribution::integer(7, 7), {3}, tg::kInt64, tg::Device::cpu()),
                  tg::Error, "but got from=7 >= to=7");
  TG_CHECK_THROWS(tg::prim::random(tg::philox::Distribution::integer(0, 300), {3}, tg::kUInt8, tg::Device::cpu()),
                  tg::Error, "to - 1 is out of bounds for unsigned char");

  // the edges PyTorch accepts give values inside them, over their whole range
  const auto values = [](int64_t low, int64_t high, tg::DType d) {
    return tg::randint(low, high, {4099}, tg::TensorOptions().dtype(d)).to(tg::kFloat64).to_vector<double>();
  };
  tg::manual_seed(11);
  const struct {
    int64_t low, high;
    tg::DType dtype;
  } ok[] = {{0, 256, tg::kUInt8},       {-128, 128, tg::kInt8},   {0, i32, tg::kInt32},
            {-i32, 0, tg::kInt32},      {0, 2, tg::kBool},        {1, 2, tg::kBool},
            {0, 65505, tg::kFloat16},   {-65504, 0, tg::kFloat16}};
  for (const auto& c : ok) {
    CAPTURE(c.low);
    CAPTURE(c.high);
    const auto v = values(c.low, c.high, c.dtype);
    const double lo = *std::min_element(v.begin(), v.end()), hi = *std::max_element(v.begin(), v.end());
    CHECK(lo >= double(c.low));
    CHECK(hi <= double(c.high - 1));
    // 4099 draws reach both ends' tenth of the range (for float16, values round to the nearest float16)
    CHECK(lo <= double(c.low) + double(c.high - 1 - c.low) / 10);
    CHECK(hi >= double(c.high - 1) - double(c.high - 1 - c.low) / 10);
  }
  // float32, float64 and bfloat16 hold every int64: no bound to refuse
  CHECK(values(0, std::numeric_limits<int64_t>::max(), tg::kBFloat16).size() == 4099);
  CHECK(values(std::numeric_limits<int64_t>::min(), 0, tg::kFloat32).size() == 4099);
}

TEST_CASE("CPU allocator: freed blocks are reused statistics add up") {
  tg::cpu_empty_cache();
  const auto before = tg::cpu_memory_stats();
  const void* first;
  {
    RawTensor t = RawTensor::empty({1 << 20});   // 4 MiB
    first = t.raw_data();
    CHECK(tg::cpu_memory_stats().allocated >= before.allocated + (std::size_t(4) << 20));
  }
  CHECK(tg::cpu_memory_stats().cached >= (std::size_t(4) << 20));
  RawTensor again = RawTensor::empty({1 << 20});
  CHECK(again.raw_data() == first);   // the same block, no new page faults
  CHECK(reinterpret_cast<uintptr_t>(again.raw_data()) % 64 == 0);
  tg::cpu_empty_cache();
  CHECK(tg::cpu_memory_stats().cached == 0);
}

TEST_CASE("Philox: manual_seed makes randn repeatable - values have the right statistics") {
  tg::manual_seed(123);
  auto a = tg::randn({1000}).to_vector<float>();
  auto a2 = tg::randn({1000}).to_vector<float>();
  tg::manual_seed(123);
  auto b = tg::randn({1000}).to_vector<float>();
  CHECK(a == b);
  CHECK(a != a2);
  tg::manual_seed(5);
  Tensor n = tg::randn({200000}, tg::TensorOptions().dtype(tg::kFloat64));
  const double mean = n.mean().item();
  const double var = ((n - mean) * (n - mean)).mean().item();
  CHECK(std::fabs(mean) < 0.01);
  CHECK(std::fabs(var - 1.0) < 0.02);
  Tensor u = tg::rand({100000});
  CHECK(u.min().item() >= 0.0);
  CHECK(u.max().item() < 1.0);
  CHECK(std::fabs(u.mean().item() - 0.5) < 0.01);
  Tensor r = tg::randint(3, 7, {10000});
  CHECK(r.dtype() == tg::kInt64);
  CHECK(r.min().item() == 3);
  CHECK(r.max().item() == 6);
  // float64 and float32 draws of the same counters agree to float precision
  tg::manual_seed(8);
  auto f32 = tg::randn({16}).to_vector<double>();
  tg::manual_seed(8);
  auto f64 = tg::randn({16}, tg::TensorOptions().dtype(tg::kFloat64)).to_vector<double>();
  for (int i = 0; i < 16; ++i) CHECK(f32[i] == doctest::Approx(f64[i]).epsilon(1e-6));
}

TEST_CASE("factories and the _like variants") {
  Tensor z = tg::zeros({2, 3}, tg::TensorOptions().dtype(tg::kFloat64));
  CHECK(z.dtype() == tg::kFloat64);
  CHECK(tg::ones_like(z).sum().item() == 6);
  CHECK(tg::full_like(z, 2.5).to_vector<double>() == std::vector<double>(6, 2.5));
  CHECK(tg::arange(4).to_vector<float>() == std::vector<float>{0, 1, 2, 3});
  CHECK(tg::randn_like(z).shape() == z.shape());
  CHECK(tg::rand_like(z).dtype() == tg::kFloat64);
  TG_CHECK_THROWS(tg::from_vector(std::vector<float>{1, 2, 3}, {2, 2}), tg::ShapeError, "cannot fill shape");
  TG_CHECK_THROWS(tg::randint(5, 5, {2}), tg::Error, "expected 'from' to be less than 'to'");
  TG_CHECK_THROWS(tg::randn({2}, tg::TensorOptions().dtype(tg::kInt64)), tg::DTypeError, "floating point");
}
