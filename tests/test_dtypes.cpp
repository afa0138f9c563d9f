// tests/test_dtypes.cpp: the dtype table (Note [The dtype table]), the 16-bit conversions (core/half.h),
// type promotion (Note [Type promotion]), bool results, every op in float16 and bfloat16 against
// float32 (Note [Low precision through float32]), and master weights (Note [Master weights]).
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <cstring>
#include <limits>
#include <random>

#include "testing.h"
#include "tensorgrad/optim/adam.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>
#define TG_TEST_F16C 1
#endif

using tg::Half;
using tg::BFloat16;
using tg::Tensor;
using namespace testing;

namespace {

float bits_to_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
uint32_t float_to_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

/// The binary16 nearest to f by exhaustive search over the (sorted) positive halves, ties to the
/// even bit pattern, values from 65520 (max + half an ulp) on to inf: IEEE 754's definition, written
/// without any of half.h's bit tricks.
uint16_t reference_half(float f) {
  if (std::isnan(f)) return 0x7E00;
  const uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  const double a = std::fabs(static_cast<double>(f));
  auto value = [](uint16_t b) { return b == 0x7C00 ? 65536.0 : static_cast<double>(static_cast<float>(Half::from_bits(b))); };
  if (a >= 65520.0) return sign | 0x7C00;
  uint16_t lo = 0, hi = 0x7C00;   // value(lo) <= a < value(hi)
  while (hi - lo > 1) {
    const uint16_t mid = static_cast<uint16_t>((lo + hi) / 2);
    if (value(mid) <= a) lo = mid;
    else hi = mid;
  }
  const double dl = a - value(lo), dh = value(hi) - a;
  const uint16_t pick = dl < dh ? lo : dh < dl ? hi : ((lo & 1) == 0 ? lo : hi);
  return sign | pick;
}

/// The bfloat16 nearest to f: the two candidates are the truncation and the next pattern up.
uint16_t reference_bfloat16(float f) {
  if (std::isnan(f)) return 0x7FC0;
  const uint32_t u = float_to_bits(f);
  const uint16_t t = static_cast<uint16_t>(u >> 16);
  const double a = std::fabs(static_cast<double>(f));
  const double lo = std::fabs(static_cast<double>(bits_to_float(uint32_t(t) << 16)));
  if (a == lo) return t;
  const uint16_t up = static_cast<uint16_t>(t + 1);   // away from zero in magnitude
  const double hi = (up & 0x7FFF) == 0x7F80 ? std::ldexp(1.0, 128) : std::fabs(static_cast<double>(bits_to_float(uint32_t(up) << 16)));
  const double dl = a - lo, dh = hi - a;
  return dl < dh ? t : dh < dl ? up : ((t & 1) == 0 ? t : up);
}

#ifdef TG_TEST_F16C
__attribute__((target("f16c"))) uint16_t hardware_half(float f) { return _cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT); }
/// CPUID leaf 1, ECX bit 29 (clang 14's __builtin_cpu_supports does not know "f16c").
bool cpu_has_f16c() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid(1, &a, &b, &c, &d) != 0 && (c & (1u << 29)) != 0;
}
#endif

/// Floats spread over every binade half touches (and beyond), plus the rounding boundaries.
std::vector<float> conversion_sweep() {
  std::vector<float> v;
  std::mt19937 rng(7);
  for (int i = 0; i < 200000; ++i) {
    const uint32_t exp = 90 + rng() % 60;   // 2^-37 .. 2^22
    v.push_back(bits_to_float((rng() & 0x80000000u) | (exp << 23) | (rng() & 0x7FFFFFu)));
  }
  for (uint32_t b = 0; b < 0x7C00; ++b) {   // every half, and the midpoints to its neighbour (ties)
    const float x = static_cast<float>(Half::from_bits(static_cast<uint16_t>(b)));
    const float y = static_cast<float>(Half::from_bits(static_cast<uint16_t>(b + 1)));
    v.push_back(x);
    v.push_back(static_cast<float>((static_cast<double>(x) + y) / 2));
    v.push_back(std::nextafter(static_cast<float>((static_cast<double>(x) + y) / 2), 0.0f));
  }
  for (float f : {65504.0f, 65519.99f, 65520.0f, 65536.0f, 1e30f, std::numeric_limits<float>::infinity(),
                  3.4028235e38f, std::numeric_limits<float>::denorm_min(), 0.0f, -0.0f})
    v.push_back(f);
  return v;
}

const tg::DType kLow[] = {tg::kFloat16, tg::kBFloat16};

}  // namespace

TEST_CASE("dtypes: the table gives every dtype a size, a name and a kind") {
  struct Row { tg::DType d; std::size_t size; const char* name; bool floating; };
  const Row rows[] = {{tg::kFloat32, 4, "float32", true}, {tg::kFloat64, 8, "float64", true},
                      {tg::kFloat16, 2, "float16", true}, {tg::kBFloat16, 2, "bfloat16", true},
                      {tg::kInt64, 8, "int64", false},    {tg::kInt32, 4, "int32", false},
                      {tg::kInt8, 1, "int8", false},      {tg::kUInt8, 1, "uint8", false},
                      {tg::kBool, 1, "bool", false}};
  for (const Row& r : rows) {
    CAPTURE(r.name);
    CHECK(tg::dtype_size(r.d) == r.size);
    CHECK(std::string(tg::dtype_name(r.d)) == r.name);
    CHECK(tg::is_floating(r.d) == r.floating);
    CHECK(tg::is_low_precision(r.d) == (r.d == tg::kFloat16 || r.d == tg::kBFloat16));
    CHECK(tg::zeros({3}, r.d).dtype() == r.d);   // TensorOptions converts from a DType
  }
  const auto bad = static_cast<tg::DType>(200);
  TG_CHECK_THROWS(tg::dtype_size(bad), tg::DTypeError, "not in the dtype table");
  TG_CHECK_THROWS(tg::is_floating(bad), tg::DTypeError, "not in the dtype table");
  static_assert(tg::dtype_of<Half>() == tg::kFloat16 && tg::dtype_of<bool>() == tg::kBool, "dtype_of");
  static_assert(std::is_same<tg::cpp_type_t<tg::kBFloat16>, BFloat16>::value, "cpp_type_t");
}

TEST_CASE("dtypes: float16 conversions round to nearest even (exhaustive round trip, reference, F16C)") {
  for (uint32_t b = 0; b <= 0xFFFF; ++b) {   // every half survives float and back
    const Half h = Half::from_bits(static_cast<uint16_t>(b));
    const float f = h;
    if (std::isnan(f)) {
      CHECK(std::isnan(static_cast<float>(Half(f))));
      continue;
    }
    if (Half(f).bits != b) FAIL_CHECK("half " << b << " -> " << f << " -> " << Half(f).bits);
  }
#ifdef TG_TEST_F16C
  const bool f16c = cpu_has_f16c();
#else
  const bool f16c = false;
#endif
  int64_t bad = 0, checked = 0;
  for (float f : conversion_sweep()) {
    const uint16_t want = reference_half(f);
    const uint16_t got = Half(f).bits;
    if (got != want && ++bad <= 5) FAIL_CHECK("float " << f << ": half bits " << got << ", want " << want);
#ifdef TG_TEST_F16C
    if (f16c && got != hardware_half(f) && ++bad <= 5) FAIL_CHECK("float " << f << ": F16C gives " << hardware_half(f));
#endif
    ++checked;
  }
  CHECK(bad == 0);
  MESSAGE("float -> half: " << checked << " values against the reference" << std::string(f16c ? " and F16C" : ""));
}

TEST_CASE("dtypes: bfloat16 conversions round to nearest even") {
  for (uint32_t b = 0; b <= 0xFFFF; ++b) {
    const BFloat16 h = BFloat16::from_bits(static_cast<uint16_t>(b));
    const float f = h;
    if (std::isnan(f)) continue;
    if (BFloat16(f).bits != b) FAIL_CHECK("bfloat16 " << b);
  }
  int64_t bad = 0;
  std::mt19937 rng(11);
  for (int i = 0; i < 300000; ++i) {
    float f = bits_to_float(rng());
    if (i % 3 == 0) f = bits_to_float((float_to_bits(f) & 0xFFFF0000u) | 0x8000u);   // exact ties
    if (std::isnan(f)) continue;
    if (BFloat16(f).bits != reference_bfloat16(f) && ++bad <= 5) FAIL_CHECK("float " << f);
  }
  CHECK(bad == 0);
  CHECK(std::isnan(static_cast<float>(BFloat16(std::numeric_limits<float>::quiet_NaN()))));
  CHECK(BFloat16(3.4028235e38f).bits == 0x7F80);   // FLT_MAX rounds up to inf
}

TEST_CASE("dtypes: promote_types follows torch.promote_types") {
  using namespace tg;
  // torch.promote_types(a, b) for these pairs (PyTorch 2.x), except uint8 with int8: torch gives
  // int16, which tensorgrad lacks; int32 holds every value int16 would.
  struct P { DType a, b, want; };
  const P pairs[] = {
      {kBool, kUInt8, kUInt8},        {kBool, kFloat16, kFloat16},   {kUInt8, kInt8, kInt32},
      {kUInt8, kInt32, kInt32},       {kInt8, kInt64, kInt64},       {kInt32, kInt64, kInt64},
      {kInt64, kFloat16, kFloat16},   {kInt32, kBFloat16, kBFloat16}, {kFloat16, kBFloat16, kFloat32},
      {kFloat16, kFloat32, kFloat32}, {kBFloat16, kFloat64, kFloat64}, {kFloat32, kFloat64, kFloat64},
      {kInt64, kFloat32, kFloat32},   {kBool, kBool, kBool},
  };
  for (const P& p : pairs) {
    CAPTURE(dtype_name(p.a));
    CAPTURE(dtype_name(p.b));
    CHECK(promote_types(p.a, p.b) == p.want);
    CHECK(promote_types(p.b, p.a) == p.want);
  }
}

TEST_CASE("dtypes: binary ops promote as PyTorch's result_type, with 0-d operands and scalars ranking lower") {
  using namespace tg;
  auto t = [](DType d, Shape s = {2}) { return ones(s, d); };
  CHECK((t(kFloat16) * 2.5).dtype() == kFloat16);                       // a scalar does not widen a float
  CHECK((t(kInt64) * 0.5).dtype() == kFloat32);                         // ... but makes an integer float32
  CHECK((t(kInt32) * 3.0).dtype() == kInt32);
  CHECK((t(kFloat16) + t(kFloat32, {})).dtype() == kFloat16);           // 0-d of the same category
  CHECK((t(kInt64) + t(kFloat64, {})).dtype() == kFloat64);             // 0-d of a higher category
  CHECK((t(kInt32) + t(kInt64, {})).dtype() == kInt32);
  CHECK((t(kUInt8) + t(kInt8, {})).dtype() == kUInt8);
  CHECK((t(kBool) + t(kInt64, {})).dtype() == kInt64);
  CHECK((t(kBool) + 2.0).dtype() == kInt64);
  CHECK((t(kFloat16) + t(kFloat32)).dtype() == kFloat32);               // both with dims
  CHECK((t(kFloat32, {}) + t(kFloat64, {})).dtype() == kFloat64);       // both 0-d
  CHECK((t(kInt32) / t(kInt32)).dtype() == kFloat32);                   // true division
  TG_CHECK_THROWS(pow(t(kInt64), t(kInt64)), DTypeError, "pow: not supported for integer tensors");
  CHECK(pow(t(kInt64), t(kFloat32)).dtype() == kFloat32);
  CHECK((t(kUInt8) * t(kFloat16)).to_vector<float>() == std::vector<float>{1, 1});
  // bool arithmetic: + is or, * is and; - is refused as in PyTorch
  Tensor a = from_vector(std::vector<float>{1, 0, 1, 0}) != 0.0, b = from_vector(std::vector<float>{1, 1, 0, 0}) != 0.0;
  CHECK((a + b).to_vector<bool>() == std::vector<bool>{true, true, true, false});
  CHECK((a * b).to_vector<bool>() == std::vector<bool>{true, false, false, false});
  TG_CHECK_THROWS(a - b, DTypeError, "subtraction, the `-` operator, with two bool tensors is not supported");
  // in place: the result type must cast to self
  Tensor i = t(kInt64);
  TG_CHECK_THROWS(i.add_(t(kFloat32)), DTypeError, "result type float32 can't be cast to the desired output type int64");
  Tensor h = t(kFloat16);
  h.add_(t(kFloat32) * 0.25);   // computed in float32, rounded into float16
  CHECK(h.dtype() == kFloat16);
  CHECK(h.to_vector<float>() == std::vector<float>{1.25f, 1.25f});
  CHECK(cat({t(kInt32), t(kFloat16)}).dtype() == kFloat16);
  CHECK(where(t(kFloat32) > 0.0, t(kInt64), t(kFloat64)).dtype() == kFloat64);
}

TEST_CASE("dtypes: comparisons give bool, where takes bool, sums of bool and small integers are int64") {
  using namespace tg;
  Tensor x = from_vector(std::vector<float>{-1, 0, 2, std::nanf("")});
  Tensor m = x > 0.0;
  CHECK(m.dtype() == kBool);
  CHECK(m.to_vector<bool>() == std::vector<bool>{false, false, true, false});
  CHECK((x == x).to_vector<bool>() == std::vector<bool>{true, true, true, false});   // NaN != NaN
  CHECK((x != 0.0).to_vector<bool>() == std::vector<bool>{true, false, true, true});
  std::ostringstream os;
  os << m.data();
  CHECK(os.str() == "tensor([False, False,  True, False])");
  std::ostringstream os8;
  os8 << from_vector(std::vector<int64_t>{3, 200}).to(kUInt8).data();
  CHECK(os8.str() == "tensor([  3, 200], dtype=uint8)");
  CHECK(sum(m).dtype() == kInt64);
  CHECK(sum(m).item<int64_t>() == 1);
  Tensor big = full({300}, 200.0, kUInt8);
  CHECK(sum(big).dtype() == kInt64);
  CHECK(sum(big).item<int64_t>() == 60000);   // no uint8 wrap-around
  check_values(where(m, x, zeros({4})), {0, 0, 2, 0});
  TG_CHECK_THROWS(full({1}, 128, kInt8), Error, "value 128 cannot be converted to type int8 without overflow");
  TG_CHECK_THROWS(full({1}, -1, kUInt8), Error, "cannot be converted to type uint8");
  CHECK(full({1}, -128.7, kInt8).item<int64_t>() == -128);   // truncates, as PyTorch
  CHECK(full({1}, 2.0, kBool).item<bool>() == true);
}

TEST_CASE("dtypes: 16-bit sums, softmax and matrix products accumulate in float32") {
  using namespace tg;
  // 4096 ones: a float16 accumulator would stop at 2048 (2049 is not a half), bfloat16's at 256.
  CHECK(sum(ones({4096}, kFloat16)).item() == 4096);
  CHECK(sum(ones({4096}, kBFloat16)).item() == 4096);
  CHECK(sum(ones({64, 4096}, kFloat16), 1).to_vector<float>() == std::vector<float>(64, 4096.0f));
  CHECK(matmul(ones({2, 4096}, kFloat16), ones({4096, 3}, kFloat16)).to_vector<float>() == std::vector<float>(6, 4096.0f));
  CHECK(mean(ones({5000}, kBFloat16)).item() == 1);
  Tensor p = softmax(zeros({1, 3000}, kFloat16), 1);
  CHECK(p.dtype() == kFloat16);
  CHECK(sum(p.to(kFloat32)).item() == doctest::Approx(1).epsilon(3000 * 0x1p-11));
}

namespace {
/// An op under test in one dtype: forward of its inputs, then backward of sum(out * w).
struct LowCase {
  const char* name;
  std::function<Tensor(const std::vector<Tensor>&)> f;
  std::vector<std::function<Tensor(tg::DType)>> inputs;   // made in float32, then rounded to the dtype
  double forward_roundings;    // roundings of the result relative to a float32 evaluation of the same inputs
  double backward_roundings;
};

Tensor rand_in(tg::Shape s, uint64_t seed, double lo = 0, bool positive = false) {
  tg::manual_seed(seed);
  Tensor x = tg::randn(s);
  tg::NoGradGuard g;
  return positive ? tg::abs(x) + lo : x;
}

/// |got - want| <= k u (|want| + mean |want|) elementwise, u the dtype's unit roundoff: k roundings of
/// relative size u, with the mean absolute value as the scale where a sum cancels.
void check_low(const Tensor& got, const Tensor& want, tg::DType d, double k, const std::string& what) {
  CAPTURE(what);
  REQUIRE(got.shape() == want.shape());
  const std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>();
  double scale = 0;
  for (double v : w) scale += std::fabs(v);
  scale /= std::max<std::size_t>(w.size(), 1);
  const double u = unit_roundoff(d);
  int bad = 0;
  for (std::size_t i = 0; i < w.size(); ++i) {
    const double bound = k * u * (std::fabs(w[i]) + scale) + 1e-30;
    if (!(std::fabs(g[i] - w[i]) <= bound) && ++bad <= 3)
      FAIL_CHECK("element " << i << ": " << g[i] << " vs float32 " << w[i] << " (bound " << bound << ")");
  }
}
}  // namespace

TEST_CASE("dtypes: every op in float16 and bfloat16 matches float32 within the dtype's rounding") {
  using namespace tg;
  using In = std::function<Tensor(DType)>;
  auto in = [](Shape s, uint64_t seed, double lo = 0, bool positive = false) -> In {
    return [=](DType d) { return rand_in(s, seed, lo, positive).to(d); };
  };
  auto target = [](DType) { return from_vector(std::vector<int64_t>{2, 0, 1, 4}); };
  const std::vector<LowCase> cases = {
      {"relu", [](auto v) { return relu(v[0]); }, {in({6, 5}, 1)}, 1, 1},
      {"sigmoid", [](auto v) { return sigmoid(v[0]); }, {in({6, 5}, 2)}, 1, 4},
      {"tanh", [](auto v) { return tanh(v[0]); }, {in({6, 5}, 3)}, 1, 4},
      {"exp", [](auto v) { return exp(v[0]); }, {in({6, 5}, 4)}, 1, 3},
      {"log", [](auto v) { return log(v[0]); }, {in({6, 5}, 5, 0.5, true)}, 1, 2},
      {"sqrt", [](auto v) { return sqrt(v[0]); }, {in({6, 5}, 6, 0.5, true)}, 1, 3},
      {"abs neg", [](auto v) { return -abs(v[0]); }, {in({6, 5}, 7)}, 1, 1},
      {"pow 3", [](auto v) { return pow(v[0], 3.0); }, {in({6, 5}, 8)}, 1, 3},
      {"clamp", [](auto v) { return clamp(v[0], -0.5, 0.5); }, {in({6, 5}, 9)}, 1, 1},
      {"add broadcast", [](auto v) { return v[0] + v[1]; }, {in({6, 5}, 10), in({5}, 11)}, 1, 2},
      {"mul", [](auto v) { return v[0] * v[1]; }, {in({6, 5}, 12), in({6, 5}, 13)}, 1, 2},
      {"div", [](auto v) { return v[0] / v[1]; }, {in({6, 5}, 14), in({6, 5}, 15, 0.5, true)}, 1, 4},
      {"sum dim", [](auto v) { return sum(v[0], 1); }, {in({6, 50}, 16)}, 1, 1},
      {"mean", [](auto v) { return mean(v[0]); }, {in({6, 50}, 17)}, 2, 2},
      {"max dim", [](auto v) { return max(v[0], 0); }, {in({6, 5}, 18)}, 1, 1},
      {"softmax", [](auto v) { return softmax(v[0], 1); }, {in({4, 9}, 19)}, 1, 4},
      {"log_softmax", [](auto v) { return log_softmax(v[0], 1); }, {in({4, 9}, 20)}, 1, 4},
      {"matmul", [](auto v) { return matmul(v[0], v[1]); }, {in({5, 40}, 21), in({40, 3}, 22)}, 1, 2},
      {"linear", [](auto v) { return linear(v[0], v[1], v[2]); }, {in({5, 40}, 23), in({3, 40}, 24), in({3}, 25)}, 2, 2},
      {"cross_entropy", [](auto v) { return cross_entropy(v[0], v[1]); }, {in({4, 6}, 26), target}, 1, 3},
      {"mse_loss", [](auto v) { return mse_loss(v[0], v[1]); }, {in({6, 5}, 27), in({6, 5}, 28)}, 4, 3},
      {"index_select", [](auto v) { return index_select(v[0], 0, from_vector(std::vector<int64_t>{3, 0, 3})); },
       {in({6, 5}, 29)}, 0, 1},
      {"reshape t", [](auto v) { return t(reshape(v[0], {5, 6})); }, {in({6, 5}, 30)}, 0, 0},
  };
  for (DType d : kLow) {
    for (const LowCase& c : cases) {
      CAPTURE(c.name);
      CAPTURE(dtype_name(d));
      std::vector<Tensor> lo, ref;
      for (const auto& make : c.inputs) {
        Tensor x = make(d);
        const bool diff = is_floating(x.dtype());
        lo.push_back(diff ? Tensor(x.data(), true) : x);
        ref.push_back(diff ? Tensor(x.data().to(kFloat32), true) : x);   // the same values, exactly
      }
      Tensor y = c.f(lo), yr = c.f(ref);
      CHECK(y.dtype() == d);
      check_low(y.to(kFloat32), yr, d, c.forward_roundings + 0.01, std::string(c.name) + " forward");
      Tensor w = rand_in(yr.shape(), 99);
      sum(y * w.to(d)).backward();
      sum(yr * w.to(d).to(kFloat32)).backward();
      for (std::size_t i = 0; i < lo.size(); ++i) {
        if (!lo[i].requires_grad()) continue;
        REQUIRE(lo[i].grad().defined());
        CHECK(lo[i].grad().dtype() == d);   // the engine casts each gradient to its input's dtype
        check_low(lo[i].grad().to(kFloat32), ref[i].grad(), d, c.backward_roundings + 1,
                  std::string(c.name) + " gradient " + std::to_string(i));
      }
    }
  }
}

namespace {
/// Whether /proc/cpuinfo lists the AVX512_BF16 flag (false where it cannot be read).
bool cpu_lists_avx512_bf16() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("flags", 0) == 0) return (line + " ").find(" avx512_bf16 ") != std::string::npos;
  return false;
}
}  // namespace

TEST_CASE("dtypes: bfloat16 products run on oneDNN exactly where the CPU multiplies bfloat16 itself") {
  // Note [bfloat16 GEMMs through oneDNN]: with oneDNN in the build, AVX512_BF16 in the CPU, the avx512
  // code path and no ISA cap on oneDNN, the CPU backend multiplies bfloat16 itself; anywhere else, and
  // for float16 always, products go through float32.
  using namespace tg;
  const bool capped = std::getenv("ONEDNN_MAX_CPU_ISA") != nullptr || std::getenv("DNNL_MAX_CPU_ISA") != nullptr;
  const bool native = quantization::has_onednn() && cpu_lists_avx512_bf16() && !capped &&
                      cpu_capability() == CpuCapability::Avx512;
  MESSAGE("bfloat16 products on the CPU: " << std::string(native ? "oneDNN" : "through float32"));
  CHECK(prim::products_through_float32(kBFloat16, Device::cpu()) == !native);
  CHECK(prim::products_through_float32(kFloat16, Device::cpu()));
  CHECK_FALSE(prim::products_through_float32(kFloat32, Device::cpu()));
  CHECK(info().find(native ? "bfloat16 on oneDNN" : "float16 and bfloat16 through float32") != std::string::npos);
  const testing::Bf16ProductsThroughFloat32 through_float32;
  CHECK(prim::products_through_float32(kBFloat16, Device::cpu()));
}

TEST_CASE("dtypes: bfloat16 products are the exact product within float32 sums and one rounding, on every layout") {
  // Whichever path multiplies (oneDNN's bfloat16 matmul, or sgemm on converted operands), each element
  // of a bfloat16 product is the exact product of the stored values, summed in float32 (gamma_K of
  // float32 on sum |a||b|) and rounded once to bfloat16 (u of bfloat16): checked against float64 for
  // the layouts the BLAS operands take (transposed, strided rows, batches, a broadcast batch), a
  // product large enough to be split over threads, linear's bias and an empty sum.
  using namespace tg;
  MESSAGE("bfloat16 products on the CPU: "
          << std::string(prim::products_through_float32(kBFloat16, Device::cpu()) ? "through float32" : "oneDNN"));
  const int threads_before = get_num_threads();
  struct Restore {
    int n;
    ~Restore() { set_num_threads(n); }
  } restore{threads_before};
  auto bf16_in = [](Shape s, uint64_t seed) { return rand_in(s, seed).to(kBFloat16); };
  auto check_product = [](const Tensor& got, const Tensor& a, const Tensor& b, const Tensor& bias,
                          const std::string& what) {
    CAPTURE(what);
    REQUIRE(got.dtype() == kBFloat16);
    NoGradGuard no_grad;
    const Tensor a64 = a.to(kFloat64), b64 = b.to(kFloat64);
    Tensor exact = matmul(a64, b64), scale = matmul(abs(a64), abs(b64));
    if (bias.defined()) {
      exact = exact + bias.to(kFloat64);
      scale = scale + abs(bias.to(kFloat64));
    }
    const int64_t K = a.shape().back() + (bias.defined() ? 1 : 0);
    REQUIRE(got.shape() == exact.shape());
    const std::vector<double> g = got.to_vector<double>(), e = exact.to_vector<double>(), sc = scale.to_vector<double>();
    int bad = 0;
    for (std::size_t i = 0; i < e.size(); ++i) {
      const double bound = unit_roundoff(kBFloat16) * std::fabs(e[i]) + 1.01 * gamma_n(K, kFloat32) * sc[i];
      if (!(std::fabs(g[i] - e[i]) <= bound) && ++bad <= 3)
        FAIL_CHECK("element " << i << ": " << g[i] << " vs exact " << e[i] << " (bound " << bound << ")");
    }
  };
  const Tensor none;
  set_num_threads(1);
  {
    const Tensor a = bf16_in({33, 70}, 1), b = bf16_in({70, 19}, 2);
    check_product(matmul(a, b), a, b, none, "plain");
    const Tensor at = bf16_in({70, 33}, 3).t(), bt = bf16_in({19, 70}, 4).t();
    check_product(matmul(at, b), at, b, none, "a transposed");
    check_product(matmul(a, bt), a, bt, none, "b transposed");
    check_product(matmul(at, bt), at, bt, none, "both transposed");
    const Tensor as = bf16_in({33, 90}, 5).narrow(1, 7, 70), bs = bf16_in({70, 40}, 6).narrow(1, 3, 19);
    check_product(matmul(as, bs), as, bs, none, "rows wider than the matrices");
    const Tensor a3 = bf16_in({3, 9, 40}, 7), b3 = bf16_in({3, 40, 11}, 8), b2 = bf16_in({40, 11}, 9), a2 = bf16_in({9, 40}, 10);
    check_product(matmul(a3, b3), a3, b3, none, "batched");
    check_product(matmul(a3, b2), a3, b2, none, "b broadcast over the batch");
    check_product(matmul(a2, b3), a2, b3, none, "a broadcast over the batch");
    const Tensor x = bf16_in({17, 40}, 11), w = bf16_in({13, 40}, 12), bias = bf16_in({13}, 13);
    check_product(linear(x, w, bias), x, w.t(), bias, "linear with bias");
    check_product(linear(x, w), x, w.t(), none, "linear without bias");
    CHECK(matmul(bf16_in({4, 0}, 14), bf16_in({0, 5}, 15)).to_vector<double>() == std::vector<double>(20, 0.0));
  }
  set_num_threads(2);
  {
    const Tensor a = bf16_in({256, 512}, 16), b = bf16_in({512, 160}, 17), bt = bf16_in({512, 300}, 18);
    check_product(matmul(a, b), a, b, none, "split over threads by rows");
    check_product(matmul(b.t(), bt), b.t(), bt, none, "split over threads by columns");
  }
}

TEST_CASE("dtypes: gradients of mixed-dtype ops come back in each input's dtype") {
  using namespace tg;
  Tensor a = full({3}, 2.0, TensorOptions().requires_grad(true));
  Tensor b = full({3}, 3.0, TensorOptions().dtype(kFloat64).requires_grad(true));
  Tensor h = full({3}, 0.5, TensorOptions().dtype(kBFloat16).requires_grad(true));
  Tensor y = sum(a * b * h);
  CHECK(y.dtype() == kFloat64);
  y.backward();
  CHECK(a.grad().dtype() == kFloat32);
  CHECK(b.grad().dtype() == kFloat64);
  CHECK(h.grad().dtype() == kBFloat16);
  check_values(a.grad(), {1.5, 1.5, 1.5});
  check_values(b.grad(), {1, 1, 1});
  check_values(h.grad(), {6, 6, 6});
}

TEST_CASE("dtypes: 16-bit parameters train through float32 master weights (SGD, Adam), saved with the state") {
  using namespace tg;
  for (DType d : kLow) {
    CAPTURE(dtype_name(d));
    // lr * grad = 1e-3 is below half an ulp of 1.0 in both dtypes: stepping the 16-bit weight itself
    // would leave it at 1 forever; the float32 copy accumulates the steps.
    Tensor w = full({4}, 1.0, TensorOptions().dtype(d).requires_grad(true));
    optim::SGD sgd({w}, optim::SGDOptions(1.0).momentum(0.5));
    float master = 1.0f, v = 0.0f;
    for (int step = 0; step < 10; ++step) {
      sgd.zero_grad();
      sum(w * full({4}, 1e-3, d)).backward();
      const float g = static_cast<float>(d == kFloat16 ? float(Half(1e-3f)) : float(BFloat16(1e-3f)));
      v = step == 0 ? g : 0.5f * v + g;
      master -= 1.0f * v;
      sgd.step();
    }
    const float want = d == kFloat16 ? float(Half(master)) : float(BFloat16(master));
    CHECK(w.to_vector<float>() == std::vector<float>(4, want));
    CHECK(want < 1.0f);
    bool has_master = false;
    for (const auto& [name, t] : sgd.state()) {
      CHECK(t.dtype() == kFloat32);   // momentum and master copy in float32
      if (name == "master_weight.0") {
        has_master = true;
        CHECK(Tensor(t).to_vector<float>() == std::vector<float>(4, master));
      }
    }
    CHECK(has_master);
    // a new optimizer loaded from the state continues exactly
    optim::SGD resumed({w}, optim::SGDOptions(1.0).momentum(0.5));
    resumed.set_state(sgd.state());
    resumed.zero_grad();
    sum(w * full({4}, 1e-3, d)).backward();
    resumed.step();
    v = 0.5f * v + (d == kFloat16 ? float(Half(1e-3f)) : float(BFloat16(1e-3f)));
    master -= v;
    CHECK(w.to_vector<float>() == std::vector<float>(4, d == kFloat16 ? float(Half(master)) : float(BFloat16(master))));
    // writing the weight invalidates the copy: the next step starts from the written value
    prim::fill_(w.data(), 2.0);   // bumps the version, as every in-place write
    resumed.zero_grad();
    sum(w * full({4}, 0.0, d)).backward();
    resumed.step();   // grad 0: only momentum moves it, from 2.0
    const float after = 2.0f - 0.5f * v;
    CHECK(w.to_vector<float>() == std::vector<float>(4, d == kFloat16 ? float(Half(after)) : float(BFloat16(after))));

    Tensor q = full({3}, 1.0, TensorOptions().dtype(d).requires_grad(true));
    optim::Adam adam({q}, optim::AdamOptions(1e-3));
    for (int step = 0; step < 5; ++step) {
      adam.zero_grad();
      sum(q * full({3}, 0.1, d)).backward();
      adam.step();
    }
    // Adam's first steps move by about lr each: 5e-3 in float32, then rounded once
    const float moved = 1.0f - q.to_vector<float>()[0];
    CHECK(moved == doctest::Approx(5e-3).epsilon(0.02 + 2 * unit_roundoff(d) / 5e-3));
    for (const auto& [name, t] : adam.state())
      if (name.rfind("step.", 0) != 0) CHECK(t.dtype() == kFloat32);
    TG_CHECK_THROWS(adam.set_state({{"exp_avg.0", prim::full({3}, 0.0, d)}}), DTypeError, "state is float32");
  }
}

TEST_CASE("dtypes: every dtype round-trips through safetensors") {
  using namespace tg;
  TempDir dir;
  std::vector<std::pair<std::string, RawTensor>> in;
  for (DType d : {kFloat16, kBFloat16, kInt32, kInt8, kUInt8, kBool, kFloat32, kFloat64, kInt64})
    in.emplace_back(dtype_name(d), (arange(5, kInt64) * 3.0 - 4.0).to(d).data());
  save_tensors(in, dir.path + "/all.safetensors");
  const auto out = load_tensors(dir.path + "/all.safetensors");
  REQUIRE(out.size() == in.size());
  for (const auto& [name, t] : in) {
    const std::string dtype = name;   // CAPTURE's lambda cannot capture a structured binding (C++17)
    CAPTURE(dtype);
    bool found = false;
    for (const auto& [n, u] : out)
      if (n == name) {
        found = true;
        CHECK(u.dtype() == t.dtype());
        CHECK(Tensor(u).to_vector<double>() == Tensor(t).to_vector<double>());
      }
    CHECK(found);
  }
  const std::string bytes = read_bytes(dir.path + "/all.safetensors");
  CHECK(bytes.find("\"dtype\":\"BF16\"") != std::string::npos);
  CHECK(bytes.find("\"dtype\":\"BOOL\"") != std::string::npos);
}
