// tests/test_cuda.cpp: the CUDA suite. Without a usable GPU (our machines, CI) it checks the honest
// "not available" behaviour and every case that needs a device skips inside its body with a visible
// MESSAGE; with TG_REQUIRE_CUDA=1 a missing GPU fails instead, so a GPU machine can never silently skip.
// The parity table (parity_table) holds cases on odd sizes, non-contiguous views, broadcasting pairs,
// zero-size inputs and rows that start off a 16-byte boundary (the vector row kernels' scalar head and
// tail), each named by the op of ops/ops.h it exercises. Its inputs are drawn on the CPU and copied to
// the device only when a case runs, so "cuda parity table covers every op in ops/ops.h" checks it
// against ops.h on every build, with or without a GPU. With a GPU the same table runs in each of the
// nine dtypes: each case's output, and for the floating dtypes the gradient of every floating input,
// on CUDA and on the CPU backend (the reference). In the integer dtypes and bool the results must be
// equal exactly, and where the CPU raises (an op that needs floating input: DTypeError) CUDA must
// raise the same error class and message. Then end-to-end training, linear's bias folded into the
// GEMM (both paths against the CPU), the fused attention kernels against the CPU, the launch counts of
// a training step and of a transformer block, the fused SGD and Adam steps (one launch per 24 parameters), Philox parity,
// determinism, the device error flag (raised by one synchronizing thread), "cuda" as the current
// device, allocator statistics and pinned DataLoader batches. The allocator's pool logic is tested
// GPU-free in test_cuda_allocator.cpp.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <typeinfo>
#include <vector>

#include "ops_coverage.h"
#include "testing.h"

using tg::Device;
using tg::RawTensor;
using tg::Tensor;

namespace {

const Device kCpu = Device::cpu();
const Device kGpu = Device::cuda(0);

enum class Tol { Elementwise, Reduction };

struct Tolerance {
  double rtol, atol;
};
/// float64 1e-7; float32 elementwise 1e-5, reductions / matmul / softmax 1e-4; int64 exact. float16
/// and bfloat16: both devices compute in float32 and round once, so results differ where the two
/// float32 values straddle a rounding boundary: 1 ulp (2u), and a few where a gradient chains several
/// 16-bit roundings; 4u elementwise, 8u for reductions.
Tolerance tolerance(tg::DType dt, Tol kind) {
  if (!tg::is_floating(dt)) return {0, 0};
  if (dt == tg::kFloat64) return {1e-7, 1e-9};
  if (dt == tg::kFloat16 || dt == tg::kBFloat16) {
    const double u = testing::unit_roundoff(dt);
    return kind == Tol::Elementwise ? Tolerance{4 * u, 4 * u} : Tolerance{8 * u, 8 * u};
  }
  return kind == Tol::Elementwise ? Tolerance{1e-5, 1e-5} : Tolerance{1e-4, 1e-4};
}

RawTensor randn_t(const tg::Shape& shape, uint64_t seed, tg::DType dt) {
  tg::manual_seed(seed);
  return tg::randn(shape, tg::TensorOptions().dtype(dt)).data();
}

/// int64 values uniform in [low, high), seeded.
RawTensor randint_t(const tg::Shape& shape, uint64_t seed, int64_t low, int64_t high) {
  tg::manual_seed(seed);
  return tg::randint(low, high, shape).data();
}

/// An input made the same way on both devices: a base tensor drawn on the CPU, copied to the device,
/// then viewed (a transpose, a misaligning narrow) so the view is non-contiguous on both.
struct Input {
  RawTensor base;
  std::function<RawTensor(const RawTensor&)> view;
  bool grad = true;
  Tensor on(Device d) const {
    RawTensor t = base.to(d);
    if (view) t = view(t);
    return Tensor(t, grad && tg::is_floating(t.dtype()));
  }
};

// The makers draw floating inputs from randn and integer inputs from randint in [-bound, bound], with
// the bound chosen per op so that no integer result overflows (the CPU's would be undefined): for
// int64 values far beyond 32 bits, and for ops that only move or compare values beyond 2^53, so that a
// kernel that truncates or goes through float or double differs from the CPU. The narrower integer
// dtypes take the same role of bound scaled to their range (fit_bound); uint8 and bool draw from
// [0, bound]. Indices (random_index, int_values) are int64 in every table.

/// Sums of the largest case (2^19 elements) stay below 2^59.
constexpr int64_t kSumBound = int64_t(1) << 40;
/// Products of two stay below 2^62.
constexpr int64_t kMulBound = int64_t(1) << 31;
/// For ops that move or compare values; times 3 (the shape cases scale their output) stays below 2^63.
constexpr int64_t kWideBound = int64_t(1) << 61;
/// mse_loss: the sum of 8481 squared differences stays below 2^62.
constexpr int64_t kMseBound = int64_t(1) << 23;

/// The int64 bound b (one of the four above) for an integer dtype dt: sums of two, products of two,
/// values times 3 and squared differences stay inside dt (uint8 and bool draw non-negative values, so
/// their subtractions wrap modulo 2^8, identically on both devices).
int64_t fit_bound(tg::DType dt, int64_t b) {
  if (dt == tg::kInt64) return b;
  struct Bounds {
    int64_t sum, mul, wide, mse;
  };
  const Bounds r = dt == tg::kInt32  ? Bounds{int64_t(1) << 28, int64_t(1) << 15, int64_t(1) << 29, int64_t(1) << 10}
                   : dt == tg::kInt8 ? Bounds{40, 11, 40, 5}
                   : dt == tg::kUInt8 ? Bounds{120, 15, 80, 15}
                                     : Bounds{1, 1, 1, 1};   // bool
  if (b == kMulBound) return r.mul;
  if (b == kWideBound) return r.wide;
  if (b == kMseBound) return r.mse;
  return r.sum;
}

/// Integer values in [low, high] of dt, clipped to what dt holds without sign (uint8, bool: from 0).
RawTensor int_t(const tg::Shape& s, uint64_t seed, tg::DType dt, int64_t low, int64_t high) {
  if (dt == tg::kUInt8 || dt == tg::kBool) low = std::max<int64_t>(low, 0);
  return randint_t(s, seed, low, high + 1).to(dt);
}

Input normal(const tg::Shape& s, uint64_t seed, tg::DType dt, int64_t bound = kSumBound) {
  if (!tg::is_floating(dt)) {
    const int64_t b = fit_bound(dt, bound);
    return {int_t(s, seed, dt, -b, b), nullptr, true};
  }
  return {randn_t(s, seed, dt), nullptr, true};
}
/// normal() with the integer bound for ops that only move or compare values.
Input wide(const tg::Shape& s, uint64_t seed, tg::DType dt) { return normal(s, seed, dt, kWideBound); }
Input positive(const tg::Shape& s, uint64_t seed, tg::DType dt) {
  if (!tg::is_floating(dt)) return {int_t(s, seed, dt, 1, fit_bound(dt, kSumBound)), nullptr, true};
  RawTensor x = randn_t(s, seed, dt);
  return {tg::prim::add(tg::prim::unary(tg::UnaryOp::Abs, x), tg::prim::scalar_like(0.2, x)), nullptr, true};
}
Input nonzero(const tg::Shape& s, uint64_t seed, tg::DType dt) {
  if (dt == tg::kUInt8 || dt == tg::kBool) return positive(s, seed, dt);
  if (!tg::is_floating(dt)) {   // [-b, -1] and [1, b]
    const int64_t b = fit_bound(dt, kSumBound);
    RawTensor x = randint_t(s, seed, -b, b);
    return {tg::prim::where(tg::prim::binary(tg::BinaryOp::Gt, x, tg::prim::scalar_like(-1.0, x), "gt"),
                            tg::prim::add(x, tg::prim::scalar_like(1.0, x)), x)
                .to(dt),
            nullptr, true};
  }
  RawTensor x = randn_t(s, seed, dt);
  RawTensor a = tg::prim::add(tg::prim::unary(tg::UnaryOp::Abs, x), tg::prim::scalar_like(0.5, x));
  return {tg::prim::where(tg::prim::binary(tg::BinaryOp::Gt, x, tg::prim::scalar_like(0.0, x), "gt"), a,
                          tg::prim::unary(tg::UnaryOp::Neg, a)),
          nullptr, true};
}
/// Few distinct values, so that comparisons see many equal pairs: randn clamped to [-0.5, 0.5], or
/// integers in [-3, 3] ([0, 3] unsigned, [0, 1] bool).
Input ties(const tg::Shape& s, uint64_t seed, tg::DType dt) {
  if (!tg::is_floating(dt)) return {int_t(s, seed, dt, -3, dt == tg::kBool ? 1 : 3), nullptr, true};
  return {tg::clamp(Tensor(randn_t(s, seed, dt)), -0.5, 0.5).data(), nullptr, true};
}
/// (rows, cols) as the transpose of a (cols, rows) tensor.
Input transposed(int64_t rows, int64_t cols, uint64_t seed, tg::DType dt, int64_t bound = kSumBound) {
  return {normal({cols, rows}, seed, dt, bound).base, [](const RawTensor& t) { return t.transpose(0, 1); }, true};
}
Input constant(const RawTensor& t) { return {t, nullptr, false}; }
Input int_values(const std::vector<int64_t>& v, const tg::Shape& s) {
  return constant(tg::from_vector(v, s).data());
}
/// int64 values uniform in [0, high), seeded.
Input random_index(const tg::Shape& s, int64_t high, uint64_t seed) {
  return constant(randint_t(s, seed, 0, high));
}

/// Every element of a (any device) within atol + rtol |b| of b (the CPU reference); NaN positions and
/// infinities must match exactly. Two int64 tensors are compared as int64, exactly.
void check_same(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-7) {
  REQUIRE(a.shape() == b.shape());
  int reported = 0;
  if (a.dtype() == tg::kInt64 && b.dtype() == tg::kInt64) {
    const auto x = a.to_vector<int64_t>(), y = b.to_vector<int64_t>();
    for (std::size_t i = 0; i < x.size() && reported < 10; ++i) {
      if (x[i] == y[i]) continue;
      ++reported;
      FAIL_CHECK("element " << i << ": cuda " << x[i] << " vs cpu " << y[i]);
    }
    CHECK(reported == 0);
    return;
  }
  const auto x = a.to_vector<double>(), y = b.to_vector<double>();
  for (std::size_t i = 0; i < x.size() && reported < 10; ++i) {
    bool ok;
    if (std::isnan(y[i])) ok = std::isnan(x[i]);
    else if (std::isinf(y[i])) ok = x[i] == y[i];
    else ok = std::fabs(x[i] - y[i]) <= atol + rtol * std::fabs(y[i]);
    if (!ok) {
      ++reported;
      FAIL_CHECK("element " << i << ": cuda " << x[i] << " vs cpu " << y[i]);
    }
  }
  CHECK(reported == 0);
}

using Fn = std::function<Tensor(const std::vector<Tensor>&)>;
struct Case {
  std::string op;     ///< the op of ops/ops.h this case exercises, as declared there
  std::string what;   ///< the sample: shapes, views, arguments
  std::vector<Input> inputs;
  Fn fn;
  Tol tol = Tol::Elementwise;
  std::string name() const { return op + " " + what; }
};

/// The tg::Error subclass of e, for messages (the check itself compares typeid).
std::string error_class(const tg::Error& e) {
  if (dynamic_cast<const tg::DTypeError*>(&e) != nullptr) return "DTypeError";
  if (dynamic_cast<const tg::ShapeError*>(&e) != nullptr) return "ShapeError";
  if (dynamic_cast<const tg::IndexError*>(&e) != nullptr) return "IndexError";
  if (dynamic_cast<const tg::DeviceError*>(&e) != nullptr) return "DeviceError";
  if (dynamic_cast<const tg::AutogradError*>(&e) != nullptr) return "AutogradError";
  if (dynamic_cast<const tg::OutOfMemoryError*>(&e) != nullptr) return "OutOfMemoryError";
  if (dynamic_cast<const tg::CudaError*>(&e) != nullptr) return "CudaError";
  return std::string("tg::Error (") + typeid(e).name() + ")";
}

/// One device's run of a case: its output, or the tg::Error it raised.
struct Run {
  Tensor y;
  const std::type_info* error = nullptr;
  std::string error_text;   ///< "<class>: <message>"
};
Run run_case(const Case& c, const std::vector<Tensor>& inputs, bool on_device) {
  Run r;
  try {
    r.y = c.fn(inputs);
    if (on_device) tg::cuda::synchronize();   // an error the device flags at the next sync belongs to this case
  } catch (const tg::Error& e) {
    r.error = &typeid(e);
    r.error_text = error_class(e) + ": " + e.what();
  }
  return r;
}

enum class Outcome { Values, SameError };

/// Runs c on both devices: outputs, then the gradient of sum(y * w) (w fixed, random) w.r.t. every
/// floating input, compared element by element (NaN positions must match). When the CPU raises a
/// tg::Error, the case passes only where errors_allowed (the integer cases of kFloatingOnly and refused()) and CUDA
/// raised the same class with the same message.
Outcome check_parity(const Case& c, bool errors_allowed) {
  const std::string name = c.name();
  CAPTURE(name);
  std::vector<Tensor> on_cpu, on_gpu;
  for (const Input& in : c.inputs) {
    on_cpu.push_back(in.on(kCpu));
    on_gpu.push_back(in.on(kGpu));
  }
  const Run cpu = run_case(c, on_cpu, false), gpu = run_case(c, on_gpu, true);
  if (cpu.error != nullptr) {
    CHECK_MESSAGE(errors_allowed, "the CPU raised " << cpu.error_text << " for a case that must compute");
    if (gpu.error == nullptr) {
      FAIL_CHECK("the CPU raised " << cpu.error_text << " but CUDA computed a result");
    } else {
      CHECK_MESSAGE(*gpu.error == *cpu.error, "the CPU raised " << cpu.error_text << ", CUDA " << gpu.error_text);
      CHECK_MESSAGE(gpu.error_text == cpu.error_text, "the CPU raised " << cpu.error_text << ", CUDA " << gpu.error_text);
    }
    return Outcome::SameError;
  }
  if (gpu.error != nullptr) {
    FAIL_CHECK("CUDA raised " << gpu.error_text << " where the CPU computed a result");
    return Outcome::Values;
  }
  const Tensor &yc = cpu.y, &yg = gpu.y;
  CHECK(yg.device() == kGpu);
  REQUIRE(yg.dtype() == yc.dtype());
  const Tolerance tol = tolerance(yc.dtype(), c.tol);
  check_same(yg, yc, tol.rtol, tol.atol);
  if (!yc.requires_grad()) return Outcome::Values;
  const RawTensor w = randn_t(yc.shape(), 999, yc.dtype());
  tg::sum(yc * Tensor(w)).backward();
  tg::sum(yg * Tensor(w.to(kGpu))).backward();
  for (std::size_t i = 0; i < on_cpu.size(); ++i) {
    if (!on_cpu[i].requires_grad()) continue;
    CAPTURE(i);
    REQUIRE(on_cpu[i].grad().defined() == on_gpu[i].grad().defined());
    if (!on_cpu[i].grad().defined()) continue;
    CHECK(on_gpu[i].grad().device() == kGpu);
    check_same(on_gpu[i].grad(), on_cpu[i].grad(), tol.rtol, tol.atol);
  }
  return Outcome::Values;
}

using Maker = std::function<Input(const tg::Shape&, uint64_t, tg::DType)>;

/// variant (e.g. "exponent 2.5 ") prefixes each sample's description.
std::vector<Case> unary_cases(const std::string& op, std::function<Tensor(const Tensor&)> fn, Maker make,
                              tg::DType dt, const std::string& variant = "") {
  Fn f = [fn](const std::vector<Tensor>& in) { return fn(in[0]); };
  Input nc = make({33, 257}, 7, dt);
  nc.view = [](const RawTensor& t) { return t.transpose(0, 1); };
  Input mis = make({4100}, 8, dt);
  mis.view = [](const RawTensor& t) { return t.narrow(0, 1, 4099); };
  return {{op, variant + "(257, 33)", {make({257, 33}, 1, dt)}, f},
          {op, variant + "4099 elements: vector tail", {make({4099}, 2, dt)}, f},
          {op, variant + "misaligned", {mis}, f},
          {op, variant + "non-contiguous (257, 33) view", {nc}, f},
          {op, variant + "0-d", {make({}, 3, dt)}, f},
          {op, variant + "zero-size (0, 33)", {make({0, 33}, 4, dt)}, f}};
}

std::vector<Case> binary_cases(const std::string& op, std::function<Tensor(const Tensor&, const Tensor&)> fn,
                               Maker a, Maker b, tg::DType dt) {
  Fn f = [fn](const std::vector<Tensor>& in) { return fn(in[0], in[1]); };
  Input nc = a({33, 257}, 15, dt);
  nc.view = [](const RawTensor& t) { return t.transpose(0, 1); };
  Input mis = a({4100}, 16, dt);
  mis.view = [](const RawTensor& t) { return t.narrow(0, 1, 4099); };
  const Tol r = Tol::Reduction;   // broadcast gradients are sums
  return {{op, "same shape (257, 33)", {a({257, 33}, 11, dt), b({257, 33}, 12, dt)}, f},
          {op, "broadcast (257, 33) with (33)", {a({257, 33}, 13, dt), b({33}, 14, dt)}, f, r},
          {op, "broadcast (257, 1) with (1, 33)", {a({257, 1}, 17, dt), b({1, 33}, 18, dt)}, f, r},
          {op, "0-d with (257, 33)", {a({}, 19, dt), b({257, 33}, 20, dt)}, f, r},
          {op, "(257, 33) with 0-d", {a({257, 33}, 21, dt), b({}, 22, dt)}, f, r},
          {op, "non-contiguous with contiguous", {nc, b({257, 33}, 23, dt)}, f},
          {op, "misaligned 4099", {mis, b({4099}, 24, dt)}, f},
          {op, "3-D broadcast (5, 1, 33) with (7, 1)", {a({5, 1, 33}, 25, dt), b({7, 1}, 26, dt)}, f, r},
          {op, "zero-size (0, 33) with (33)", {a({0, 33}, 27, dt), b({33}, 28, dt)}, f, r}};
}

/// Every op of ops/ops.h with samples, for one dtype (float32, float64 or int64). Only CPU tensors
/// are made here.
/// A bool attention mask (L, S), true where query i attends key j: about 4 keys in 5, and none for the
/// rows i % 4 == 1.
RawTensor rows_masked(int64_t L, int64_t S) {
  std::vector<double> keep(static_cast<std::size_t>(L * S));
  for (int64_t i = 0; i < L; ++i)
    for (int64_t j = 0; j < S; ++j) keep[static_cast<std::size_t>(i * S + j)] = i % 4 != 1 && (i * 7 + j * 3) % 5 != 0;
  return tg::prim::binary(tg::BinaryOp::Gt, tg::from_vector(keep, {L, S}).data(), tg::prim::full({}, 0.5, tg::kFloat64),
                          "gt");
}

std::vector<Case> parity_table(tg::DType dt) {
  const Maker N = [](const tg::Shape& s, uint64_t seed, tg::DType d) { return normal(s, seed, d); };
  const Maker P = [](const tg::Shape& s, uint64_t seed, tg::DType d) { return positive(s, seed, d); };
  const Maker Z = [](const tg::Shape& s, uint64_t seed, tg::DType d) { return nonzero(s, seed, d); };
  const Maker M = [](const tg::Shape& s, uint64_t seed, tg::DType d) { return normal(s, seed, d, kMulBound); };
  const auto W = wide;
  const int64_t wb = kWideBound;
  const Tol R = Tol::Reduction;
  std::vector<Case> t;
  auto add = [&t](std::vector<Case> cs) {
    for (auto& c : cs) t.push_back(std::move(c));
  };
  // ---- elementwise
  add(binary_cases("add", [](auto& a, auto& b) { return tg::add(a, b); }, N, N, dt));
  add(binary_cases("sub", [](auto& a, auto& b) { return tg::sub(a, b); }, N, N, dt));
  add(binary_cases("mul", [](auto& a, auto& b) { return tg::mul(a, b); }, M, M, dt));
  add(binary_cases("div", [](auto& a, auto& b) { return tg::div(a, b); }, N, Z, dt));
  add(binary_cases("pow", [](auto& a, auto& b) { return tg::pow(a, b); }, P, N, dt));
  add(unary_cases("neg", [](auto& a) { return tg::neg(a); }, N, dt));
  add(unary_cases("exp", [](auto& a) { return tg::exp(a); }, N, dt));
  add(unary_cases("log", [](auto& a) { return tg::log(a); }, P, dt));
  add(unary_cases("sqrt", [](auto& a) { return tg::sqrt(a); }, P, dt));
  add(unary_cases("abs", [](auto& a) { return tg::abs(a); }, Z, dt));
  add(unary_cases("relu", [](auto& a) { return tg::relu(a); }, N, dt));
  add(unary_cases("sigmoid", [](auto& a) { return tg::sigmoid(a); }, N, dt));
  add(unary_cases("tanh", [](auto& a) { return tg::tanh(a); }, N, dt));
  add(unary_cases("pow", [](auto& a) { return tg::pow(a, 2.5); }, P, dt, "exponent 2.5 "));
  add(unary_cases("pow", [](auto& a) { return tg::pow(a, 3.0); }, N, dt, "exponent 3 "));
  add(unary_cases("clamp", [](auto& a) { return tg::clamp(a, -0.55, 0.55); }, N, dt));
  add(unary_cases("round", [](auto& a) { return tg::round(a * 4.0); }, N, dt));
  add(unary_cases("sign", [](auto& a) { return tg::sign(a); }, N, dt));
  add(unary_cases("sort", [](auto& a) { return tg::sort(a).values; }, N, dt, "values "));
  add(unary_cases("sort", [](auto& a) { return tg::sort(a, 0, true).indices; }, N, dt, "descending indices along 0 "));
  add(unary_cases("topk", [](auto& a) { return tg::topk(a, a.dim() ? 5 : 1).values; }, N, dt));
  add(unary_cases("topk", [](auto& a) { return tg::topk(a, a.dim() && a.shape()[0] == 0 ? 0 : 1, 0, false).indices; }, N, dt, "smallest index "));
  add(unary_cases("kthvalue", [](auto& a) { return tg::kthvalue(a, 2 - int64_t(a.dim() == 0), -1).values; }, N, dt));
  for (const char* cmp : {"eq", "ne", "gt", "lt", "ge", "le"}) {
    const std::string c = cmp;
    Fn f = [c](const std::vector<Tensor>& in) {
      const Tensor &a = in[0], &b = in[1];
      if (c == "eq") return tg::eq(a, b);
      if (c == "ne") return tg::ne(a, b);
      if (c == "gt") return tg::gt(a, b);
      if (c == "lt") return tg::lt(a, b);
      if (c == "ge") return tg::ge(a, b);
      return tg::le(a, b);
    };
    t.push_back({c, "broadcast (257, 33) with (33), many equal pairs", {ties({257, 33}, 30, dt), ties({33}, 31, dt)}, f});
  }
  {
    Fn f = [](const std::vector<Tensor>& in) { return tg::where(in[0] > 0.0, in[1], in[2]); };
    t.push_back({"where", "same shape", {W({257, 33}, 32, dt), W({257, 33}, 33, dt), W({257, 33}, 34, dt)}, f});
    t.push_back({"where", "broadcast cond (33), a (257, 33), b 0-d", {W({33}, 35, dt), W({257, 33}, 36, dt), W({}, 37, dt)}, f, R});
    t.push_back({"where", "zero-size", {W({0, 33}, 38, dt), W({0, 33}, 39, dt), W({33}, 40, dt)}, f, R});
  }
  // ---- reductions (sizes reach the split and block paths of backend/cuda/reduce.cu)
  auto red = [&](const std::string& op, const std::string& what, Input in, Fn f) {
    t.push_back({op, what, {std::move(in)}, std::move(f), R});
  };
  red("sum", "all (257, 33)", normal({257, 33}, 41, dt), [](auto& in) { return tg::sum(in[0]); });
  red("sum_to_size", "(257, 33) to (1, 33)", normal({257, 33}, 46, dt), [](auto& in) { return tg::sum_to_size(in[0], {1, 33}); });
  red("sum_to_size", "(4, 257, 33) to (257, 1)", normal({4, 257, 33}, 47, dt),
      [](auto& in) { return tg::sum_to_size(in[0], {257, 1}); });
  red("sum", "all (517, 1031): split rows", normal({517, 1031}, 42, dt), [](auto& in) { return tg::sum(in[0]); });
  red("sum", "dim 0 (257, 33): columns", normal({257, 33}, 43, dt), [](auto& in) { return tg::sum(in[0], 0); });
  red("sum", "dim 1 (257, 33): rows", normal({257, 33}, 44, dt), [](auto& in) { return tg::sum(in[0], 1); });
  red("sum", "dim 1 (3, 70001): split rows", normal({3, 70001}, 45, dt), [](auto& in) { return tg::sum(in[0], 1); });
  red("sum", "dim 0 (70001, 3): split columns", normal({70001, 3}, 46, dt), [](auto& in) { return tg::sum(in[0], 0); });
  red("sum", "dim 1 keepdim (5, 257, 7): strided", normal({5, 257, 7}, 47, dt), [](auto& in) { return tg::sum(in[0], 1, true); });
  red("sum", "dim 1 of a transposed view", transposed(257, 33, 48, dt), [](auto& in) { return tg::sum(in[0], 1); });
  red("sum", "of (0, 33) over dim 0", normal({0, 33}, 49, dt), [](auto& in) { return tg::sum(in[0], 0); });
  red("mean", "all", normal({257, 33}, 50, dt), [](auto& in) { return tg::mean(in[0]); });
  red("mean", "dim 1", normal({257, 33}, 51, dt), [](auto& in) { return tg::mean(in[0], 1); });
  red("max", "all", W({257, 33}, 52, dt), [](auto& in) { return tg::max(in[0]); });
  red("max", "dim 1", W({257, 33}, 53, dt), [](auto& in) { return tg::max(in[0], 1); });
  red("max", "dim 0 keepdim", W({257, 33}, 54, dt), [](auto& in) { return tg::max(in[0], 0, true); });
  red("max", "dim 1 (4, 3000): block rows", W({4, 3000}, 55, dt), [](auto& in) { return tg::max(in[0], 1); });
  red("min", "all", W({257, 33}, 56, dt), [](auto& in) { return tg::min(in[0]); });
  red("min", "dim 1 non-contiguous", transposed(257, 33, 57, dt, wb), [](auto& in) { return tg::min(in[0], 1); });
  red("max", "of ties splits the gradient", Input{tg::prim::full({65, 33}, 1.5, dt), nullptr, true}, [](auto& in) { return tg::max(in[0]); });
  red("argmax", "all", W({257, 33}, 58, dt), [](auto& in) { return tg::argmax(in[0]); });
  red("argmax", "dim 1", W({257, 33}, 59, dt), [](auto& in) { return tg::argmax(in[0], 1); });
  red("argmax", "dim 0 keepdim", W({257, 33}, 60, dt), [](auto& in) { return tg::argmax(in[0], 0, true); });
  red("argmax", "dim 1 (3, 70001): split rows", W({3, 70001}, 61, dt), [](auto& in) { return tg::argmax(in[0], 1); });
  red("argmax", "of ties is the first", constant(tg::prim::full({3, 300}, 2.0, dt)), [](auto& in) { return tg::argmax(in[0], 1); });
  // Unit-stride rows read with 16-byte vectors: rows starting off a 16-byte boundary (narrowed views,
  // odd row lengths) take the scalar head and tail; vectors of every dtype's width (2 to 8 elements).
  const auto narrowed = [](Input in, int64_t dim, int64_t start, int64_t length) {
    in.view = [dim, start, length](const RawTensor& x) { return x.narrow(dim, start, length); };
    return in;
  };
  red("sum", "dim 1 of (9, 1031) narrowed to columns 1..1029: block rows, misaligned", narrowed(normal({9, 1031}, 62, dt), 1, 1, 1029),
      [](auto& in) { return tg::sum(in[0], 1); });
  red("sum", "dim 1 of (9, 70) narrowed to columns 3..63: warp rows, misaligned", narrowed(normal({9, 70}, 63, dt), 1, 3, 61),
      [](auto& in) { return tg::sum(in[0], 1); });
  red("sum", "dim 1 of (3, 20003) narrowed to rows 1..2: split rows, misaligned", narrowed(normal({3, 20003}, 64, dt), 0, 1, 2),
      [](auto& in) { return tg::sum(in[0], 1); });
  red("max", "dim 1 of (9, 1031) narrowed to columns 2..1028: block rows, misaligned", narrowed(W({9, 1031}, 65, dt), 1, 2, 1027),
      [](auto& in) { return tg::max(in[0], 1); });
  red("argmax", "dim 1 of (9, 70) narrowed to columns 1..68, many ties", narrowed(ties({9, 70}, 66, dt), 1, 1, 67),
      [](auto& in) { return tg::argmax(in[0], 1); });
  red("argmax", "dim 1 (5, 4099) with many ties: vector slots keep the first", ties({5, 4099}, 67, dt),
      [](auto& in) { return tg::argmax(in[0], 1); });
  red("sum", "dim 0 (1000, 130): columns split over blocks", normal({1000, 130}, 68, dt), [](auto& in) { return tg::sum(in[0], 0); });
  red("min", "dim 0 (4099, 5): split columns, odd tail", W({4099, 5}, 69, dt), [](auto& in) { return tg::min(in[0], 0); });
  // ---- linear algebra
  auto mm = [&](const std::string& what, Input a, Input b) {
    t.push_back({"matmul", what, {std::move(a), std::move(b)}, [](auto& in) { return tg::matmul(in[0], in[1]); }, R});
  };
  mm("(257, 33) @ (33, 17)", normal({257, 33}, 70, dt), normal({33, 17}, 71, dt));
  mm("transposed views", transposed(257, 33, 72, dt), transposed(33, 17, 73, dt));
  mm("batched (3, 257, 33) @ (3, 33, 17)", normal({3, 257, 33}, 74, dt), normal({3, 33, 17}, 75, dt));
  mm("batched (3, 257, 33) @ (33, 17): folded", normal({3, 257, 33}, 76, dt), normal({33, 17}, 77, dt));
  mm("(257, 33) @ batched (3, 33, 17): looped", normal({257, 33}, 78, dt), normal({3, 33, 17}, 79, dt));
  mm("K = 0", normal({5, 0}, 80, dt), normal({0, 7}, 81, dt));
  mm("M = 0", normal({0, 33}, 82, dt), normal({33, 7}, 83, dt));
  mm("vector-like (1, 33) @ (33, 1)", normal({1, 33}, 84, dt), normal({33, 1}, 85, dt));
  // matmul's other ranks (Note [matmul of any rank] in ops/linalg.cpp), mm, bmm, dot, outer and einsum
  mm("1-D @ 1-D: dot", normal({257}, 1200, dt), normal({257}, 1201, dt));
  mm("(257, 33) @ 1-D", transposed(257, 33, 1202, dt), normal({33}, 1203, dt));
  mm("1-D @ (33, 17)", normal({33}, 1204, dt), normal({33, 17}, 1205, dt));
  mm("(2, 3, 65, 33) @ (33, 17): folded", normal({2, 3, 65, 33}, 1206, dt), normal({33, 17}, 1207, dt));
  mm("1-D @ (2, 3, 33, 17)", normal({33}, 1208, dt), normal({2, 3, 33, 17}, 1209, dt));
  mm("broadcast (2, 1, 9, 33) @ (3, 33, 17)", normal({2, 1, 9, 33}, 1210, dt), normal({3, 33, 17}, 1211, dt));
  {
    auto two = [&](const std::string& op, const std::string& what, Input a, Input b, Fn f, Tol tol) {
      t.push_back({op, what, {std::move(a), std::move(b)}, std::move(f), tol});
    };
    two("mm", "(257, 33) @ (33, 17), transposed views", transposed(257, 33, 1212, dt), transposed(33, 17, 1213, dt),
        [](auto& in) { return tg::mm(in[0], in[1]); }, R);
    two("bmm", "(3, 65, 33) @ (3, 33, 17)", normal({3, 65, 33}, 1214, dt), normal({3, 33, 17}, 1215, dt),
        [](auto& in) { return tg::bmm(in[0], in[1]); }, R);
    two("dot", "(4099) . (4099)", normal({4099}, 1216, dt), normal({4099}, 1217, dt),
        [](auto& in) { return tg::dot(in[0], in[1]); }, R);
    two("outer", "(257) x (33)", normal({257}, 1218, dt, kMulBound), normal({33}, 1219, dt, kMulBound),
        [](auto& in) { return tg::outer(in[0], in[1]); }, Tol::Elementwise);
    auto es = [&](const std::string& equation, std::vector<Input> in) {
      t.push_back({"einsum", "\"" + equation + "\"", std::move(in),
                   [equation](const std::vector<Tensor>& x) { return tg::einsum(equation, x); }, R});
    };
    es("bij,jk->bik", {normal({3, 65, 33}, 1220, dt), transposed(33, 17, 1221, dt)});
    Input batch_t = normal({3, 17, 33}, 1230, dt);
    batch_t.view = [](const RawTensor& x) { return x.transpose(1, 2); };
    es("bij,bjk->bik", {normal({3, 65, 33}, 1231, dt), batch_t});
    es("ii->", {normal({65, 65}, 1222, dt)});
    es("ii->i", {transposed(65, 65, 1223, dt)});
    es("bn,anm,bm->ba", {normal({5, 33}, 1224, dt), normal({7, 33, 17}, 1225, dt), normal({5, 17}, 1226, dt)});
    es("...ij,...jk->...ik", {normal({2, 1, 9, 33}, 1227, dt), normal({3, 33, 17}, 1228, dt)});
    es("ij->", {normal({257, 33}, 1229, dt)});
  }
  {
    Fn f = [](const std::vector<Tensor>& in) { return tg::linear(in[0], in[1], in[2]); };
    t.push_back({"linear", "x (257, 33), W (17, 33), b (17)", {normal({257, 33}, 86, dt), normal({17, 33}, 87, dt), normal({17}, 88, dt)}, f, R});
    t.push_back({"linear", "batched rows (3, 257, 33)", {normal({3, 257, 33}, 89, dt), normal({17, 33}, 90, dt), normal({17}, 91, dt)}, f, R});
    t.push_back({"linear", "non-contiguous x", {transposed(257, 33, 92, dt), normal({17, 33}, 93, dt), normal({17}, 94, dt)}, f, R});
    // Note [Bias folded into the GEMM]: the bias epilogue and the bias gradient's at batch 1, with a
    // transposed weight, and without a bias (the plain GEMM).
    t.push_back({"linear", "batch 1: x (1, 33)", {normal({1, 33}, 95, dt), normal({17, 33}, 96, dt), normal({17}, 97, dt)}, f, R});
    t.push_back({"linear", "transposed x and W", {transposed(257, 33, 98, dt), transposed(17, 33, 99, dt), normal({17}, 193, dt)}, f, R});
    t.push_back({"linear", "without bias", {normal({257, 33}, 194, dt), normal({17, 33}, 195, dt)},
                 [](const std::vector<Tensor>& in) { return tg::linear(in[0], in[1]); }, R});
  }
  // ---- shape ops: copies through the backend's strided copy, views read strided by the op after
  // them, gradients through sum_to and the views' backward
  t.push_back({"cat", "dim 0 with a non-contiguous part", {W({257, 33}, 100, dt), transposed(5, 33, 101, dt, wb), W({0, 33}, 102, dt)},
               [](auto& in) { return tg::cat(in, 0) * 2.0; }});
  t.push_back({"cat", "dim 1", {W({257, 3}, 103, dt), W({257, 33}, 104, dt)}, [](auto& in) { return tg::cat(in, 1) * 3.0; }});
  t.push_back({"stack", "last dim", {W({257, 33}, 105, dt), transposed(257, 33, 106, dt, wb)}, [](auto& in) { return tg::stack(in, -1) * 3.0; }});
  t.push_back({"expand", "(257, 1) to (257, 33)", {W({257, 1}, 107, dt)}, [](auto& in) { return tg::expand(in[0], {257, 33}) * 2.0; }, R});
  t.push_back({"permute", "(2, 0, 1) contiguous", {W({5, 257, 7}, 108, dt)}, [](auto& in) { return tg::contiguous(tg::permute(in[0], {2, 0, 1})) * 2.0; }});
  t.push_back({"reshape", "of a transposed view", {transposed(257, 33, 109, dt, wb)}, [](auto& in) { return tg::reshape(in[0], {-1}) * 2.0; }});
  t.push_back({"tanh", "rank 10 (no coalescing)", {W({2, 3, 2, 3, 2, 3, 2, 3, 2, 3}, 110, dt)},
               [](auto& in) { return tg::tanh(tg::permute(in[0], {9, 8, 7, 6, 5, 4, 3, 2, 1, 0})) + 1.0; }});
  t.push_back({"contiguous", "of a rank 10 reversed permute (no coalescing)", {W({2, 3, 2, 3, 2, 3, 2, 3, 2, 3}, 111, dt)},
               [](auto& in) { return tg::contiguous(tg::permute(in[0], {9, 8, 7, 6, 5, 4, 3, 2, 1, 0})); }});
  t.push_back({"view", "(257, 33) as (33, 257)", {W({257, 33}, 112, dt)}, [](auto& in) { return tg::view(in[0], {33, 257}) * 2.0; }});
  t.push_back({"transpose", "dims 0 and 2 of (5, 257, 7)", {W({5, 257, 7}, 113, dt)}, [](auto& in) { return tg::transpose(in[0], 0, 2) * 2.0; }});
  t.push_back({"t", "(257, 33)", {W({257, 33}, 114, dt)}, [](auto& in) { return tg::t(in[0]) * 2.0; }});
  t.push_back({"squeeze", "every size-1 dim of (257, 1, 33, 1)", {W({257, 1, 33, 1}, 115, dt)}, [](auto& in) { return tg::squeeze(in[0]) * 2.0; }});
  t.push_back({"squeeze", "dim 1 of (257, 1, 33)", {W({257, 1, 33}, 116, dt)}, [](auto& in) { return tg::squeeze(in[0], 1) * 2.0; }});
  t.push_back({"unsqueeze", "dim 1 of (257, 33)", {W({257, 33}, 117, dt)}, [](auto& in) { return tg::unsqueeze(in[0], 1) * 2.0; }});
  t.push_back({"flatten", "of a transposed view (a copy)", {transposed(257, 33, 118, dt, wb)}, [](auto& in) { return tg::flatten(in[0]) * 2.0; }});
  t.push_back({"clone", "of a transposed view", {transposed(257, 33, 118, dt, wb)}, [](auto& in) { return tg::clone(in[0]) * 2.0; }});
  t.push_back({"scalar_like", "-3 like (257, 33)", {W({257, 33}, 119, dt)}, [](auto& in) { return tg::scalar_like(-3.0, in[0]); }});
  // ---- indexing
  {
    const Input idx0 = random_index({40}, 257, 120), idx1 = random_index({50}, 33, 121);
    t.push_back({"index_select", "dim 0 with repeats", {W({257, 33}, 122, dt), idx0},
                 [](auto& in) { return tg::index_select(in[0], 0, in[1]); }, R});
    t.push_back({"index_select", "dim 1 non-contiguous", {transposed(257, 33, 123, dt, wb), idx1},
                 [](auto& in) { return tg::index_select(in[0], 1, in[1]); }, R});
    const Input g1 = random_index({257, 50}, 33, 124), g0 = random_index({20, 33}, 257, 125);
    t.push_back({"gather", "dim 1 with repeats", {W({257, 33}, 126, dt), g1}, [](auto& in) { return tg::gather(in[0], 1, in[1]); }, R});
    t.push_back({"scatter_add", "dim 1 with repeats", {W({257, 33}, 136, dt), random_index({257, 20}, 33, 137), W({257, 20}, 138, dt)},
                 [](auto& in) { return tg::scatter_add(in[0], 1, in[1], in[2]); }, R});
    t.push_back({"index_add", "dim 0 with repeats, alpha 0.5", {W({257, 33}, 139, dt), idx0, W({40, 33}, 140, dt)},
                 [](auto& in) { return tg::index_add(in[0], 0, in[1], in[2], 0.5); }, R});
    t.push_back({"embedding", "(7, 33) indices into (257, 33), repeats", {W({257, 33}, 128, dt), random_index({7, 33}, 257, 129)},
                 [](auto& in) { return tg::embedding(in[1], in[0]); }, R});
    t.push_back({"embedding", "padding_idx 5, non-contiguous weight", {transposed(257, 33, 135, dt, wb), int_values({5, 0, 5, 256, 3, 5}, {2, 3})},
                 [](auto& in) { return tg::embedding(in[1], in[0], 5); }, R});
    t.push_back({"gather", "dim 0 non-contiguous", {transposed(257, 33, 127, dt, wb), g0}, [](auto& in) { return tg::gather(in[0], 0, in[1]); }, R});
    // index_put and advanced index(): the index Tensors are read on the host, the writes are where /
    // index_select / index_add on the device. accumulate's integer sums of a few repeats stay in range
    // with kMulBound's values.
    t.push_back({"index_put", "mask (257) of (257, 33), values (33)", {W({257, 33}, 141, dt), W({257}, 142, dt), W({33}, 143, dt)},
                 [](auto& in) { return tg::index_put(in[0], {in[1] > 0.0}, in[2]); }});
    t.push_back({"index_put", "accumulate, 40 rows with repeats, values (40, 33)", {normal({257, 33}, 144, dt, kMulBound), idx0, normal({40, 33}, 145, dt, kMulBound)},
                 [](auto& in) { return tg::index_put(in[0], {in[1]}, in[2], true); }, R});
    t.push_back({"index_put", "40 rows with repeats (the last wins), non-contiguous x", {transposed(257, 33, 146, dt, wb), idx0, W({40, 1}, 147, dt)},
                 [](auto& in) { return tg::index_put(in[0], {in[1]}, in[2]); }});
    t.push_back({"index", "x[mask] of (257, 33), a copy", {W({257, 33}, 148, dt), W({257, 33}, 149, dt)},
                 [](auto& in) { return tg::index(in[0], {in[1] > 0.0}) * 2.0; }, R});
    t.push_back({"index", "x[i0, i1] with repeats", {W({257, 33}, 150, dt), idx0, random_index({40}, 33, 151)},
                 [](auto& in) { return tg::index(in[0], {in[1], in[2]}) * 2.0; }, R});
    t.push_back({"index", "x[:, i] mixed with a slice, repeats", {W({257, 33}, 1400, dt), random_index({40}, 33, 1401)},
                 [](auto& in) { return tg::index(in[0], {tg::Slice(), in[1]}) * 2.0; }, R});
    t.push_back({"one_hot", "(7, 33) of 257 classes", {random_index({7, 33}, 257, 152)}, [](auto& in) { return tg::one_hot(in[0], 257); }});
  }
  // ---- nn functions
  for (bool log : {false, true}) {
    const std::string n = log ? "log_softmax" : "softmax";
    auto sm = [log](int64_t dim) {
      return [log, dim](const std::vector<Tensor>& in) { return log ? tg::log_softmax(in[0], dim) : tg::softmax(in[0], dim); };
    };
    t.push_back({n, "(257, 33) last dim: warp rows", {normal({257, 33}, 130, dt)}, sm(-1), R});
    t.push_back({n, "(5, 2000) last dim: block rows", {normal({5, 2000}, 131, dt)}, sm(-1), R});
    t.push_back({n, "(4, 33, 5) dim 1: columns", {normal({4, 33, 5}, 132, dt)}, sm(1), R});
    t.push_back({n, "non-contiguous", {transposed(257, 33, 133, dt)}, sm(-1), R});
    t.push_back({n, "zero rows", {normal({0, 33}, 134, dt)}, sm(-1), R});
    // Rows of odd length from a view narrowed by one row: the input rows start off a 16-byte boundary
    // and unlike the output's (scalar writes), or like it (vector writes, scalar head and tail).
    Input off_warp = normal({10, 37}, 135, dt), off_block = normal({4, 1029}, 136, dt), even = normal({9, 1032}, 137, dt);
    off_warp.view = [](const RawTensor& x) { return x.narrow(0, 1, 9); };
    off_block.view = [](const RawTensor& x) { return x.narrow(0, 1, 3); };
    even.view = [](const RawTensor& x) { return x.narrow(0, 1, 8); };
    t.push_back({n, "(9, 37) narrowed by a row: warp rows, misaligned", {off_warp}, sm(-1), R});
    t.push_back({n, "(3, 1029) narrowed by a row: block rows, misaligned", {off_block}, sm(-1), R});
    t.push_back({n, "(8, 1032) narrowed by a row: block rows, aligned vectors", {even}, sm(-1), R});
  }
  {
    const Input tgt = random_index({257}, 33, 140);
    auto ce = [](tg::Reduction r, int64_t ignore, double smooth) {
      return [r, ignore, smooth](const std::vector<Tensor>& in) { return tg::cross_entropy(in[0], in[1], r, ignore, smooth); };
    };
    const std::string n = "cross_entropy";
    t.push_back({n, "mean (257, 33)", {normal({257, 33}, 141, dt), tgt}, ce(tg::Reduction::Mean, -100, 0), R});
    t.push_back({n, "sum", {normal({257, 33}, 142, dt), tgt}, ce(tg::Reduction::Sum, -100, 0), R});
    t.push_back({n, "none", {normal({257, 33}, 143, dt), tgt}, ce(tg::Reduction::None, -100, 0), R});
    t.push_back({n, "ignore_index 3 and label smoothing 0.1", {normal({257, 33}, 144, dt), tgt}, ce(tg::Reduction::Mean, 3, 0.1), R});
    t.push_back({n, "ignore_index -100 rows", {normal({5, 33}, 145, dt), int_values({0, -100, 7, 32, -100}, {5})},
                 ce(tg::Reduction::None, -100, 0.2), R});
    t.push_back({n, "(64, 2000): block rows", {normal({64, 2000}, 146, dt), random_index({64}, 2000, 147)},
                 ce(tg::Reduction::Mean, -100, 0.05), R});
    t.push_back({n, "non-contiguous logits", {transposed(257, 33, 148, dt), tgt}, ce(tg::Reduction::Sum, -100, 0), R});
    t.push_back({n, "(4, 7, 3, 5) logits, (4, 3, 5) targets", {normal({4, 7, 3, 5}, 152, dt), random_index({4, 3, 5}, 7, 153)},
                 ce(tg::Reduction::Mean, -100, 0.1), R});
    t.push_back({n, "class probabilities (57, 33) with their gradient", {normal({57, 33}, 154, dt), normal({57, 33}, 155, dt)},
                 [](auto& in) { return tg::cross_entropy(in[0], tg::softmax(in[1], 1), tg::Reduction::Mean, -100, 0.1); }, R});
    Input off = normal({65, 37}, 151, dt);
    off.view = [](const RawTensor& x) { return x.narrow(0, 1, 64); };
    t.push_back({n, "(64, 37) narrowed by a row: misaligned rows, label smoothing", {off, random_index({64}, 37, 152)},
                 ce(tg::Reduction::Mean, -100, 0.1), R});
    Input big = normal({257, 33}, 149, dt);
    if (tg::is_floating(dt)) big.base = tg::prim::mul(big.base, 1e3);   // integer logits: the error case
    t.push_back({n, "logits of magnitude 1e3", {big, tgt}, ce(tg::Reduction::Sum, -100, 0), R});
    t.push_back({n, "zero rows", {normal({0, 33}, 150, dt), int_values({}, {0})}, ce(tg::Reduction::Sum, -100, 0), R});
    auto class_weights = [](const Tensor& x) {   // 0.5, 0.6, ... on the logits' device
      return tg::arange(x.size(1), tg::TensorOptions().dtype(x.dtype()).device(x.device())) * 0.1 + 0.5;
    };
    t.push_back({n, "class weights, ignore_index 3 and label smoothing 0.1", {normal({257, 33}, 156, dt), tgt},
                 [class_weights](auto& in) {
                   return tg::cross_entropy(in[0], in[1], class_weights(in[0]), tg::Reduction::Mean, 3, 0.1);
                 }, R});
  }
  {
    // integers within kMseBound: the sum of 8481 squared differences fits (mse_loss is sub, mul and
    // the reduction, so Sum and None compute in the integer dtype and Mean raises from mean)
    const int64_t b = kMseBound;
    auto mse = [](tg::Reduction r) { return [r](const std::vector<Tensor>& in) { return tg::mse_loss(in[0], in[1], r); }; };
    t.push_back({"mse_loss", "mean", {normal({257, 33}, 151, dt, b), normal({257, 33}, 152, dt, b)}, mse(tg::Reduction::Mean), R});
    t.push_back({"mse_loss", "sum, target without grad", {normal({257, 33}, 154, dt, b), constant(normal({257, 33}, 155, dt, b).base)},
                 mse(tg::Reduction::Sum), R});
    t.push_back({"mse_loss", "none, non-contiguous input", {transposed(257, 33, 156, dt, b), normal({257, 33}, 157, dt, b)},
                 mse(tg::Reduction::None)});
  }
  // ---- the losses of ops/loss.cpp: compositions of the ops above, binary_cross_entropy's own backward
  t.push_back({"nll_loss", "(257, 33) with class weights, sum", {normal({257, 33}, 220, dt), random_index({257}, 33, 221),
                                                                  constant(normal({33}, 222, dt).base)},
               [](auto& in) { return tg::nll_loss(in[0], in[1], in[2], tg::Reduction::Sum); }, R});
  t.push_back({"binary_cross_entropy", "sigmoids of (257, 33), the target with grad",
               {normal({257, 33}, 223, dt), normal({257, 33}, 224, dt)},
               [](auto& in) { return tg::binary_cross_entropy(tg::sigmoid(in[0]), tg::sigmoid(in[1])); }, R});
  t.push_back({"binary_cross_entropy_with_logits", "(257, 33) with weight and pos_weight",
               {normal({257, 33}, 225, dt), normal({257, 33}, 226, dt), normal({257, 33}, 227, dt), normal({33}, 228, dt)},
               [](auto& in) { return tg::binary_cross_entropy_with_logits(in[0], in[1], in[2], in[3]); }, R});
  t.push_back({"l1_loss", "(257, 33), none", {normal({257, 33}, 229, dt), normal({257, 33}, 230, dt)},
               [](auto& in) { return tg::l1_loss(in[0], in[1], tg::Reduction::None); }});
  t.push_back({"smooth_l1_loss", "(257, 33), beta 0.5", {normal({257, 33}, 231, dt), normal({257, 33}, 232, dt)},
               [](auto& in) { return tg::smooth_l1_loss(in[0], in[1], tg::Reduction::Mean, 0.5); }, R});
  t.push_back({"huber_loss", "(257, 33), delta 0.7, sum", {normal({257, 33}, 233, dt), normal({257, 33}, 234, dt)},
               [](auto& in) { return tg::huber_loss(in[0], in[1], tg::Reduction::Sum, 0.7); }, R});
  t.push_back({"pad", "(4, 3, 17, 9) reflect (2, 3, 1, 4)", {normal({4, 3, 17, 9}, 246, dt)},
               [](auto& in) { return tg::pad(in[0], {2, 3, 1, 4}, "reflect"); }});
  t.push_back({"pad", "(4, 3, 17, 9) constant (1, -2, 3, 0), value 2", {normal({4, 3, 17, 9}, 247, dt)},
               [](auto& in) { return tg::pad(in[0], {1, -2, 3, 0}, "constant", 2.0); }});
  t.push_back({"pad", "(5, 33) circular and replicate", {normal({5, 33}, 248, dt)},
               [](auto& in) { return tg::pad(tg::pad(in[0], {4, 7}, "circular"), {2, 2}, "replicate"); }});
  t.push_back({"interpolate", "(2, 3, 9, 7) bilinear to (17, 12)", {normal({2, 3, 9, 7}, 249, dt)},
               [](auto& in) { return tg::interpolate(in[0], {17, 12}, {}, "bilinear"); }, R});
  t.push_back({"interpolate", "(2, 3, 9, 7) nearest, scale 2.5", {normal({2, 3, 9, 7}, 250, dt)},
               [](auto& in) { return tg::interpolate(in[0], {}, {2.5}); }});
  t.push_back({"interpolate", "(3, 4, 33) linear, align_corners, to 50", {normal({3, 4, 33}, 251, dt)},
               [](auto& in) { return tg::interpolate(in[0], {50}, {}, "linear", true); }, R});
  t.push_back({"kl_div", "(257, 33) log-probabilities, batchmean", {normal({257, 33}, 236, dt), normal({257, 33}, 237, dt)},
               [](auto& in) { return tg::kl_div(tg::log_softmax(in[0], 1), tg::softmax(in[1], 1), tg::kBatchMean); }, R});
  t.push_back({"kl_div", "(257, 33) log_target, none", {normal({257, 33}, 238, dt), normal({257, 33}, 239, dt)},
               [](auto& in) { return tg::kl_div(in[0], in[1], tg::Reduction::None, true); }});
  t.push_back({"margin_ranking_loss", "(257, 33), margin 0.2",
               {normal({257, 33}, 240, dt), normal({257, 33}, 241, dt), constant(normal({257, 33}, 242, dt).base)},
               [](auto& in) { return tg::margin_ranking_loss(in[0], in[1], tg::sign(in[2]), 0.2); }, R});
  t.push_back({"cosine_embedding_loss", "(257, 33), margin 0.1, sum",
               {normal({257, 33}, 243, dt), normal({257, 33}, 244, dt), constant(normal({257}, 245, dt).base)},
               [](auto& in) { return tg::cosine_embedding_loss(in[0], in[1], tg::sign(in[2]), 0.1, tg::Reduction::Sum); }, R});
  t.push_back({"hinge_embedding_loss", "(257, 33), margin 0.5", {normal({257, 33}, 252, dt), constant(normal({257, 33}, 253, dt).base)},
               [](auto& in) { return tg::hinge_embedding_loss(in[0], tg::sign(in[1]), 0.5); }, R});
  t.push_back({"triplet_margin_loss", "(257, 33), p 1, swap, sum",
               {normal({257, 33}, 254, dt), normal({257, 33}, 255, dt), normal({257, 33}, 256, dt)},
               [](auto& in) { return tg::triplet_margin_loss(in[0], in[1], in[2], 2.0, 1, 1e-6, true, tg::Reduction::Sum); }, R});
  t.push_back({"multi_margin_loss", "(257, 33), p 2, weight", {normal({257, 33}, 257, dt), random_index({257}, 33, 258),
                                                               constant(normal({33}, 259, dt).base)},
               [](auto& in) { return tg::multi_margin_loss(in[0], in[1], 2, 0.7, tg::abs(in[2])); }, R});
  t.push_back({"poisson_nll_loss", "(257, 33), log input, full", {normal({257, 33}, 260, dt), constant(normal({257, 33}, 261, dt).base)},
               [](auto& in) { return tg::poisson_nll_loss(in[0], tg::abs(in[1]) * 3.0, true, true); }, R});
  t.push_back({"gaussian_nll_loss", "(257, 33), var (257)", {normal({257, 33}, 262, dt), normal({257, 33}, 263, dt),
                                                             normal({257}, 264, dt)},
               [](auto& in) { return tg::gaussian_nll_loss(in[0], in[1], tg::abs(in[2]) + 0.5, true); }, R});
  t.push_back({"soft_margin_loss", "(257, 33), sum", {normal({257, 33}, 1300, dt), constant(normal({257, 33}, 1301, dt).base)},
               [](auto& in) { return tg::soft_margin_loss(in[0], tg::sign(in[1]), tg::Reduction::Sum); }, R});
  t.push_back({"multilabel_soft_margin_loss", "(257, 33), soft target and weight with grad, none",
               {normal({257, 33}, 1302, dt), normal({257, 33}, 1303, dt), normal({33}, 1304, dt)},
               [](auto& in) {
                 return tg::multilabel_soft_margin_loss(in[0], tg::sigmoid(in[1]), in[2], tg::Reduction::None);
               }, R});
  t.push_back({"multilabel_margin_loss", "(257, 33), targets in [-1, 33)", {normal({257, 33}, 1305, dt), random_index({257, 33}, 34, 1306)},
               [](auto& in) { return tg::multilabel_margin_loss(in[0], in[1] - 1); }, R});
  t.push_back({"triplet_margin_with_distance_loss", "(257, 33), pairwise distance, swap, sum",
               {normal({257, 33}, 1307, dt), normal({257, 33}, 1308, dt), normal({257, 33}, 1309, dt)},
               [](auto& in) {
                 return tg::triplet_margin_with_distance_loss(in[0], in[1], in[2], {}, 2.0, true, tg::Reduction::Sum);
               }, R});
  t.push_back({"ctc_loss", "(9, 3, 6) padded targets, on the device's kernels",
               {normal({9, 3, 6}, 265, dt), int_values({1, 2, 2, 3, 5, 5, 0, 0, 4, 1, 3, 0}, {3, 4}),
                int_values({9, 7, 5}, {3}), int_values({4, 2, 3}, {3})},
               [](auto& in) { return tg::ctc_loss(tg::log_softmax(in[0], -1), in[1], in[2], in[3]); }, R});
  t.push_back({"dropout2d", "(8, 16, 5, 5), p = 0.4 with the same seed", {normal({8, 16, 5, 5}, 235, dt)}, [](auto& in) {
                 tg::manual_seed(10);
                 return tg::dropout2d(in[0], 0.4, true);
               }});
  t.push_back({"dropout", "p = 0.4 with the same seed", {normal({257, 33}, 153, dt)}, [](auto& in) {
                 tg::manual_seed(9);
                 return tg::dropout(in[0], 0.4, true);
               }});
  // ---- activations (kernels/elementwise.h through both backends' unary kernels), masks, slicing views
  add(unary_cases("gelu", [](auto& a) { return tg::gelu(a); }, N, dt));
  add(unary_cases("gelu", [](auto& a) { return tg::gelu(a, "tanh"); }, N, dt, "tanh "));
  add(unary_cases("silu", [](auto& a) { return tg::silu(a); }, N, dt));
  add(unary_cases("softplus", [](auto& a) { return tg::softplus(a); }, N, dt));
  add(unary_cases("softplus", [](auto& a) { return tg::softplus(a, 2, 1); }, N, dt, "beta 2 threshold 1 "));
  add(unary_cases("leaky_relu", [](auto& a) { return tg::leaky_relu(a, 0.2); }, N, dt));
  add(unary_cases("log_sigmoid", [](auto& a) { return tg::log_sigmoid(a); }, N, dt));
  t.push_back({"prelu", "(33, 17, 9) with a weight per channel", {nonzero({33, 17, 9}, 267, dt), normal({17}, 268, dt)},
               [](auto& in) { return tg::prelu(in[0], in[1]); }});
  t.push_back({"prelu", "(257) with one weight", {nonzero({257}, 269, dt), normal({1}, 270, dt)},
               [](auto& in) { return tg::prelu(in[0], in[1]); }});
  // the math functions (composed with tanh or an offset to stay inside asin's, acos's, atanh's and acosh's domains)
  add(unary_cases("sin", [](auto& a) { return tg::sin(a); }, N, dt));
  add(unary_cases("cos", [](auto& a) { return tg::cos(a); }, N, dt));
  add(unary_cases("tan", [](auto& a) { return tg::tan(a); }, N, dt));
  add(unary_cases("asin", [](auto& a) { return tg::asin(tg::tanh(a)); }, N, dt));
  add(unary_cases("acos", [](auto& a) { return tg::acos(tg::tanh(a)); }, N, dt));
  add(unary_cases("atan", [](auto& a) { return tg::atan(a); }, N, dt));
  add(unary_cases("sinh", [](auto& a) { return tg::sinh(a); }, N, dt));
  add(unary_cases("cosh", [](auto& a) { return tg::cosh(a); }, N, dt));
  add(unary_cases("asinh", [](auto& a) { return tg::asinh(a); }, N, dt));
  add(unary_cases("acosh", [](auto& a) { return tg::acosh(a + 1.5); }, P, dt));
  add(unary_cases("atanh", [](auto& a) { return tg::atanh(tg::tanh(a) * 0.9); }, N, dt));
  add(unary_cases("erf", [](auto& a) { return tg::erf(a); }, N, dt));
  add(unary_cases("erfc", [](auto& a) { return tg::erfc(a); }, N, dt));
  add(unary_cases("log1p", [](auto& a) { return tg::log1p(a); }, P, dt));
  add(unary_cases("expm1", [](auto& a) { return tg::expm1(a); }, N, dt));
  add(unary_cases("log2", [](auto& a) { return tg::log2(a); }, P, dt));
  add(unary_cases("log10", [](auto& a) { return tg::log10(a); }, P, dt));
  add(unary_cases("rsqrt", [](auto& a) { return tg::rsqrt(a); }, P, dt));
  add(unary_cases("reciprocal", [](auto& a) { return tg::reciprocal(a); }, P, dt));
  add(unary_cases("square", [](auto& a) { return tg::square(a); }, N, dt));
  add(unary_cases("floor", [](auto& a) { return tg::floor(a); }, N, dt));
  add(unary_cases("ceil", [](auto& a) { return tg::ceil(a); }, N, dt));
  add(unary_cases("trunc", [](auto& a) { return tg::trunc(a); }, N, dt));
  add(unary_cases("frac", [](auto& a) { return tg::frac(a); }, N, dt));
  add(unary_cases("hardtanh", [](auto& a) { return tg::hardtanh(a, -0.5, 0.8); }, N, dt));
  add(unary_cases("relu6", [](auto& a) { return tg::relu6(a * 4.0); }, N, dt));
  add(unary_cases("hardswish", [](auto& a) { return tg::hardswish(a * 3.0); }, N, dt));
  add(unary_cases("hardsigmoid", [](auto& a) { return tg::hardsigmoid(a * 3.0); }, N, dt));
  add(unary_cases("elu", [](auto& a) { return tg::elu(a, 1.3); }, N, dt));
  add(unary_cases("selu", [](auto& a) { return tg::selu(a); }, N, dt));
  add(unary_cases("celu", [](auto& a) { return tg::celu(a, 0.6); }, N, dt));
  add(unary_cases("mish", [](auto& a) { return tg::mish(a); }, N, dt));
  add(unary_cases("softsign", [](auto& a) { return tg::softsign(a); }, N, dt));

  {
    Fn mf = [](const std::vector<Tensor>& in) { return tg::masked_fill(in[0], in[1] > 0.0, 0.75); };
    Fn mv = [](const std::vector<Tensor>& in) { return tg::masked_fill(in[0], in[1] > 0.0, in[2]); };
    t.push_back({"masked_fill", "mask (257, 33)", {W({257, 33}, 160, dt), W({257, 33}, 161, dt)}, mf});
    t.push_back({"masked_fill", "x (33) broadcast to the mask (257, 33), 0-d value", {W({33}, 162, dt), W({257, 33}, 163, dt), W({}, 164, dt)}, mv, R});
    t.push_back({"tril", "(257, 33) diagonal -3", {W({257, 33}, 165, dt)}, [](auto& in) { return tg::tril(in[0], -3) * 2.0; }});
    t.push_back({"triu", "batched (3, 33, 65) diagonal 5, non-contiguous", {transposed(33, 65, 166, dt, wb)},
                 [](auto& in) { return tg::triu(tg::expand(in[0], {3, 33, 65}), 5) * 2.0; }, R});
    t.push_back({"narrow", "dim 1 of (257, 33)", {W({257, 33}, 167, dt)}, [](auto& in) { return tg::narrow(in[0], 1, 3, 17) * 2.0; }});
    t.push_back({"select", "dim 0 of a transposed view", {transposed(257, 33, 168, dt, wb)}, [](auto& in) { return tg::select(in[0], 0, -5) * 2.0; }});
    t.push_back({"index", "x[1:200:3, None, -20:]", {W({257, 33}, 169, dt)}, [](auto& in) {
                   return tg::index(in[0], {tg::Slice(1, 200, 3), tg::indexing::None, tg::Slice(-20)}) * 2.0;
                 }});
  }
  // ---- convolution and pooling (backend/cuda/conv.cu against backend/cpu/conv.cpp)
  t.push_back({"conv2d", "(4, 6, 13, 11) groups 2, stride (2, 1), padding (1, 2), dilation (1, 2), bias",
               {normal({4, 6, 13, 11}, 160, dt), normal({8, 3, 3, 2}, 161, dt), normal({8}, 162, dt)},
               [](auto& in) { return tg::conv2d(in[0], in[1], in[2], {2, 1}, {1, 2}, {1, 2}, 2); }, R});
  t.push_back({"conv2d", "1x1 on a non-contiguous input", {transposed(33, 17, 163, dt), normal({5, 1, 1, 1}, 164, dt)},
               [](auto& in) { return tg::conv2d(tg::unsqueeze(tg::unsqueeze(in[0], 0), 0), in[1]); }, R});
  t.push_back({"conv_transpose2d", "(3, 4, 7, 6) groups 2, stride (2, 1), padding (1, 0), output_padding (1, 0), dilation (1, 2)",
               {normal({3, 4, 7, 6}, 236, dt), normal({4, 3, 3, 2}, 237, dt), normal({6}, 238, dt)},
               [](auto& in) { return tg::conv_transpose2d(in[0], in[1], in[2], {2, 1}, {1, 0}, {1, 0}, 2, {1, 2}); }, R});
  t.push_back({"conv1d", "(3, 4, 33) stride 2, padding 1", {normal({3, 4, 33}, 165, dt), normal({5, 4, 3}, 166, dt), normal({5}, 167, dt)},
               [](auto& in) { return tg::conv1d(in[0], in[1], in[2], 2, 1); }, R});
  t.push_back({"max_pool2d", "(3, 5, 17, 16) kernel 3, stride 2, padding 1", {W({3, 5, 17, 16}, 168, dt)},
               [](auto& in) { return tg::max_pool2d(in[0], {3}, {2}, {1}); }, R});
  t.push_back({"avg_pool2d", "(3, 5, 17, 16) kernel (3, 2), padding 1, count_include_pad false", {normal({3, 5, 17, 16}, 169, dt)},
               [](auto& in) { return tg::avg_pool2d(in[0], {3, 2}, {2}, {1}, false); }, R});
  t.push_back({"max_pool2d", "(3, 5, 17, 16) kernel (3, 2), padding 1, dilation (2, 3), ceil_mode", {W({3, 5, 17, 16}, 168, dt)},
               [](auto& in) { return tg::max_pool2d(in[0], {3, 2}, {2}, {1}, {2, 3}, true); }, R});
  t.push_back({"avg_pool2d", "(3, 5, 17, 16) kernel 3, stride 2, padding 1, ceil_mode", {normal({3, 5, 17, 16}, 169, dt)},
               [](auto& in) { return tg::avg_pool2d(in[0], {3}, {2}, {1}, true, true); }, R});
  t.push_back({"avg_pool2d", "(3, 5, 17, 16) kernel 2, stride 3, ceil_mode, count_include_pad false", {normal({3, 5, 17, 16}, 169, dt)},
               [](auto& in) { return tg::avg_pool2d(in[0], {2}, {3}, {0}, false, true); }, R});
  t.push_back({"adaptive_avg_pool2d", "(3, 5, 17, 16) to (5, 7)", {normal({3, 5, 17, 16}, 170, dt)},
               [](auto& in) { return tg::adaptive_avg_pool2d(in[0], {5, 7}); }, R});
  // the 1-D and adaptive max poolings, conv_transpose1d: compositions over the kernels above (ops/pooling.cpp)
  t.push_back({"max_pool1d", "(3, 5, 33) kernel 3, stride 2, padding 1, dilation 2, ceil_mode", {W({3, 5, 33}, 250, dt)},
               [](auto& in) { return tg::max_pool1d(in[0], 3, 2, 1, 2, true); }, R});
  t.push_back({"avg_pool1d", "(3, 5, 33) kernel 4, stride 3, padding 2, count_include_pad false", {normal({3, 5, 33}, 251, dt)},
               [](auto& in) { return tg::avg_pool1d(in[0], 4, 3, 2, false, false); }, R});
  t.push_back({"adaptive_avg_pool1d", "(3, 5, 33) to 7", {normal({3, 5, 33}, 252, dt)},
               [](auto& in) { return tg::adaptive_avg_pool1d(in[0], 7); }, R});
  t.push_back({"adaptive_max_pool2d", "(3, 5, 17, 16) to (5, 7): index_select and amax", {W({3, 5, 17, 16}, 253, dt)},
               [](auto& in) { return tg::adaptive_max_pool2d(in[0], {5, 7}); }, R});
  t.push_back({"adaptive_max_pool2d", "(3, 5, 15, 14) to (5, 7): max_pool2d's windows", {W({3, 5, 15, 14}, 254, dt)},
               [](auto& in) { return tg::adaptive_max_pool2d(in[0], {5, 7}); }, R});
  t.push_back({"adaptive_max_pool1d", "(3, 5, 33) to 7", {W({3, 5, 33}, 255, dt)},
               [](auto& in) { return tg::adaptive_max_pool1d(in[0], 7); }, R});
  t.push_back({"conv_transpose1d", "(3, 4, 17) groups 2, stride 2, padding 1, output_padding 1, dilation 2",
               {normal({3, 4, 17}, 256, dt), normal({4, 3, 3}, 257, dt), normal({6}, 258, dt)},
               [](auto& in) { return tg::conv_transpose1d(in[0], in[1], in[2], 2, 1, 1, 2, 2); }, R});
  // the 3-D family: compositions over the 2-D kernels, views, pad and stack (ops/conv3d.cpp)
  t.push_back({"conv3d", "(2, 4, 7, 9, 8) groups 2, stride (2, 1, 2), padding (1, 2, 0), dilation (1, 2, 1)",
               {normal({2, 4, 7, 9, 8}, 290, dt), normal({6, 2, 3, 2, 3}, 291, dt), normal({6}, 292, dt)},
               [](auto& in) { return tg::conv3d(in[0], in[1], in[2], {2, 1, 2}, {1, 2, 0}, {1, 2, 1}, 2); }, R});
  t.push_back({"conv_transpose3d", "(2, 4, 5, 6, 4) groups 2, stride 2, padding 1, output_padding (1, 0, 1), dilation (1, 1, 2)",
               {normal({2, 4, 5, 6, 4}, 293, dt), normal({4, 3, 3, 2, 2}, 294, dt), normal({6}, 295, dt)},
               [](auto& in) { return tg::conv_transpose3d(in[0], in[1], in[2], 2, 1, {1, 0, 1}, 2, {1, 1, 2}); }, R});
  t.push_back({"max_pool3d", "(2, 3, 9, 10, 11) kernel 3, stride 2, padding 1, dilation (1, 2, 1), ceil_mode",
               {W({2, 3, 9, 10, 11}, 296, dt)}, [](auto& in) { return tg::max_pool3d(in[0], 3, 2, 1, {1, 2, 1}, true); }, R});
  t.push_back({"avg_pool3d", "(2, 3, 9, 10, 11) kernel (3, 2, 3), stride 2, padding 1, ceil_mode, count_include_pad false",
               {normal({2, 3, 9, 10, 11}, 297, dt)},
               [](auto& in) { return tg::avg_pool3d(in[0], {3, 2, 3}, 2, 1, true, false); }, R});
  t.push_back({"adaptive_avg_pool3d", "(2, 3, 9, 10, 11) to (4, 3, 5)", {normal({2, 3, 9, 10, 11}, 298, dt)},
               [](auto& in) { return tg::adaptive_avg_pool3d(in[0], {4, 3, 5}); }, R});
  t.push_back({"adaptive_max_pool3d", "(2, 3, 9, 10, 11) to (4, 3, 5)", {W({2, 3, 9, 10, 11}, 299, dt)},
               [](auto& in) { return tg::adaptive_max_pool3d(in[0], {4, 3, 5}); }, R});
  // ---- normalization (batch_norm of prims; layer_norm and group_norm rows through Backend::layer_norm)
  t.push_back({"batch_norm", "training (8, 5, 7, 9) with running stats, weight and bias",
               {normal({8, 5, 7, 9}, 171, dt), constant(tg::prim::full({5}, 0.0, dt)), constant(tg::prim::full({5}, 1.0, dt)),
                normal({5}, 172, dt), normal({5}, 173, dt)},
               [](auto& in) { return tg::batch_norm(in[0], in[1], in[2], in[3], in[4], true); }, R});
  t.push_back({"batch_norm", "eval (33, 5)", {normal({33, 5}, 174, dt), normal({5}, 175, dt), positive({5}, 176, dt),
                                              normal({5}, 177, dt), normal({5}, 178, dt)},
               [](auto& in) { return tg::batch_norm(in[0], tg::Tensor(in[1].data()), tg::Tensor(in[2].data()), in[3], in[4], false); }, R});
  t.push_back({"layer_norm", "(257, 33) with weight and bias", {normal({257, 33}, 179, dt), normal({33}, 180, dt), normal({33}, 181, dt)},
               [](auto& in) { return tg::layer_norm(in[0], {33}, in[1], in[2]); }, R});
  t.push_back({"layer_norm", "(9, 3, 1100) over the last two dims, weight only (block rows, several row parts)",
               {normal({9, 3, 1100}, 185, dt), normal({3, 1100}, 186, dt)},
               [](auto& in) { return tg::layer_norm(in[0], {3, 1100}, in[1], tg::Tensor()); }, R});
  t.push_back({"layer_norm", "(300, 7) without weight or bias", {normal({300, 7}, 187, dt)},
               [](auto& in) { return tg::layer_norm(in[0], {7}); }, R});
  // the fused recurrent cells: h' and c' side by side, so that both outputs' gradients are compared
  t.push_back({"fused_lstm_cell", "(37, 4 x 33) gates, state (37, 33)",
               {normal({37, 132}, 901, dt), normal({37, 132}, 902, dt), normal({37, 33}, 903, dt)},
               [](auto& in) {
                 auto [h, c] = tg::fused_lstm_cell(in[0], in[1], in[2]);
                 return tg::cat({h, c}, 1);
               }});
  t.push_back({"fused_lstm_cell", "transposed gates, state without grad",
               {transposed(5, 24, 904, dt), normal({5, 24}, 905, dt), constant(normal({5, 6}, 906, dt).base)},
               [](auto& in) { return std::get<0>(tg::fused_lstm_cell(in[0], in[1], in[2])); }});
  t.push_back({"fused_gru_cell", "(37, 3 x 33) gates, state (37, 33)",
               {normal({37, 99}, 907, dt), normal({37, 99}, 908, dt), normal({37, 33}, 909, dt)},
               [](auto& in) { return tg::fused_gru_cell(in[0], in[1], in[2]); }});
  t.push_back({"fused_gru_cell", "zero-size batch (0, 3 x 4)",
               {normal({0, 12}, 910, dt), normal({0, 12}, 911, dt), normal({0, 4}, 912, dt)},
               [](auto& in) { return tg::fused_gru_cell(in[0], in[1], in[2]); }});
  t.push_back({"group_norm", "(6, 12, 5, 7) 4 groups with weight and bias", {normal({6, 12, 5, 7}, 182, dt), normal({12}, 183, dt), normal({12}, 184, dt)},
               [](auto& in) { return tg::group_norm(in[0], 4, in[1], in[2]); }, R});
  // instance_norm: group_norm with a group per channel, and the running statistics it updates (copies of
  // the inputs, so that a second run starts from the same values), added to the output to be compared
  t.push_back({"instance_norm", "training (6, 12, 35) with running stats, weight and bias",
               {normal({6, 12, 35}, 259, dt), constant(tg::prim::full({12}, 0.0, dt)), constant(tg::prim::full({12}, 1.0, dt)),
                normal({12}, 260, dt), normal({12}, 261, dt)},
               [](auto& in) {
                 const Tensor rm(in[1].data().clone()), rv(in[2].data().clone());
                 const Tensor y = tg::instance_norm(in[0], rm, rv, in[3], in[4], true, 0.3);
                 return y + tg::reshape(rm, {12, 1}) + tg::reshape(rv, {12, 1});
               }, R});
  t.push_back({"instance_norm", "eval (4, 5, 7, 9) with running stats", {normal({4, 5, 7, 9}, 262, dt), normal({5}, 263, dt),
                                                                         positive({5}, 264, dt), normal({5}, 265, dt), normal({5}, 266, dt)},
               [](auto& in) {
                 return tg::instance_norm(in[0], Tensor(in[1].data()), Tensor(in[2].data()), in[3], in[4], false);
               }, R});
  // ---- attention: matmul, where, softmax and dropout of both backends
  t.push_back({"scaled_dot_product_attention", "(2, 3, 33, 16) x (2, 3, 65, 16), causal",
               {normal({2, 3, 33, 16}, 185, dt), normal({2, 3, 65, 16}, 186, dt), normal({2, 3, 65, 8}, 187, dt)},
               [](auto& in) { return tg::scaled_dot_product_attention(in[0], in[1], in[2], {}, 0, true); }, R});
  // ---- splitting: the pieces put back in another order, so a piece read from the wrong place shows
  {
    auto reorder = [](const std::vector<Tensor>& ps, int64_t d) {
      std::vector<Tensor> r(ps.rbegin(), ps.rend());
      return tg::cat(r, d);
    };
    t.push_back({"split", "(257, 33) by 100 along 0", {normal({257, 33}, 300, dt)},
                 [reorder](auto& in) { return reorder(tg::split(in[0], 100, 0), 0); }});
    t.push_back({"split", "sizes {5, 20, 8} along 1 of a transposed view", {transposed(257, 33, 301, dt)},
                 [reorder](auto& in) { return reorder(tg::split(in[0], {5, 20, 8}, 1), 1); }});
    t.push_back({"split_with_sizes", "sizes {1, 0, 32} along -1", {normal({17, 33}, 302, dt)},
                 [reorder](auto& in) { return reorder(tg::split_with_sizes(in[0], {1, 0, 32}, -1), -1); }});
    t.push_back({"chunk", "(257, 33) in 4 along 0", {normal({257, 33}, 303, dt)},
                 [reorder](auto& in) { return reorder(tg::chunk(in[0], 4, 0), 0); }});
    t.push_back({"unbind", "(5, 33, 7) along 2", {normal({5, 33, 7}, 304, dt)},
                 [](auto& in) { return tg::stack(tg::unbind(in[0], 2), 0); }});
  }
  // ---- more reductions (compositions and scans: ops/reduce.cpp, ops/scan.cpp)
  red("amax", "dims {0, 2} of (33, 5, 257)", W({33, 5, 257}, 310, dt), [](auto& in) { return tg::amax(in[0], {0, 2}); });
  red("amin", "dim 1 keepdim of a transposed view", transposed(257, 33, 311, dt, kWideBound),
      [](auto& in) { return tg::amin(in[0], 1, true); });
  red("all", "dim 1 of (257, 33), few distinct values", ties({257, 33}, 312, dt), [](auto& in) { return tg::all(in[0], 1); });
  red("any", "all of (257, 33) and dim 0 of (0, 33)", ties({257, 33}, 313, dt),
      [](auto& in) { return tg::cat({tg::reshape(tg::any(in[0]), {1}), tg::any(tg::narrow(in[0], 0, 0, 0), 0)}, 0); });
  red("logsumexp", "dim 1 of (257, 33)", normal({257, 33}, 314, dt), [](auto& in) { return tg::logsumexp(in[0], 1); });
  red("logsumexp", "dims {0, 1} keepdim of (33, 257, 3)", normal({33, 257, 3}, 315, dt),
      [](auto& in) { return tg::logsumexp(in[0], {0, 1}, true); });
  red("var", "dim 0 of (257, 33)", normal({257, 33}, 316, dt), [](auto& in) { return tg::var(in[0], 0); });
  red("var", "all, correction 0", normal({257, 33}, 317, dt), [](auto& in) { return tg::var(in[0], {}, 0); });
  red("std", "dim 1 keepdim of a transposed view", transposed(257, 33, 318, dt), [](auto& in) { return tg::std(in[0], 1, true, true); });
  red("norm", "p 2 dim 1", normal({257, 33}, 319, dt), [](auto& in) { return tg::norm(in[0], 2, 1); });
  red("norm", "p 1, p inf and p 3 over dims {0, 1}", normal({33, 7, 5}, 320, dt),
      [](auto& in) { return tg::norm(in[0], 1, {0, 1}) + tg::norm(in[0], INFINITY, {0, 1}) + tg::norm(in[0], 3, {0, 1}); });
  red("prod", "dim 1 of (257, 33), few distinct values (zeros among them)", ties({257, 33}, 321, dt),
      [](auto& in) { return tg::prod(in[0], 1); });
  red("prod", "all of (7, 9)", ties({7, 9}, 322, dt), [](auto& in) { return tg::prod(in[0]); });
  red("cumsum", "dim 0 of (257, 33)", normal({257, 33}, 323, dt), [](auto& in) { return tg::cumsum(in[0], 0); });
  red("cumsum", "dim 1 of a transposed view", transposed(257, 33, 324, dt), [](auto& in) { return tg::cumsum(in[0], 1); });
  red("cumprod", "dim 1 of (65, 33), few distinct values (zeros among them)", ties({65, 33}, 325, dt),
      [](auto& in) { return tg::cumprod(in[0], 1); });
  // ---- rearranging (ops/shape.cpp)
  t.push_back({"flip", "dims {0, 1} of (257, 33)", {normal({257, 33}, 326, dt)}, [](auto& in) { return tg::flip(in[0], {0, 1}); }});
  t.push_back({"roll", "shifts {5, -40} of a transposed view", {transposed(257, 33, 327, dt)},
               [](auto& in) { return tg::roll(in[0], {5, -40}, {0, 1}); }});
  t.push_back({"repeat", "(33, 7) by {2, 3, 1}", {normal({33, 7}, 328, dt)}, [](auto& in) { return tg::repeat(in[0], {2, 3, 1}); }, R});
  t.push_back({"repeat_interleave", "3 along 0 of (257, 5)", {normal({257, 5}, 329, dt)},
               [](auto& in) { return tg::repeat_interleave(in[0], 3, 0); }, R});
  // ---- sampling: the same seed draws the same samples on both devices
  t.push_back({"multinomial", "(5, 257) 40 samples with replacement, 33 without", {positive({5, 257}, 330, dt)},
               [](auto& in) {
                 tg::manual_seed(21);
                 const Tensor with = tg::multinomial(in[0], 40, true);
                 return tg::cat({with, tg::multinomial(in[0], 33)}, 1);
               }});
  t.push_back({"bernoulli", "(257, 33) probabilities, and p 0.3", {constant(tg::prim::unary(tg::UnaryOp::Sigmoid, randn_t({257, 33}, 331, tg::kFloat64)).to(dt))},
               [](auto& in) {
                 tg::manual_seed(22);
                 const Tensor a = tg::bernoulli(in[0]);
                 return a + tg::bernoulli(in[0], 0.3);
               }});
  t.push_back({"scaled_dot_product_attention", "bool mask (33, 65), float mask, dropout 0.2",
               {normal({4, 33, 16}, 188, dt), normal({4, 65, 16}, 189, dt), normal({4, 65, 8}, 190, dt), W({33, 65}, 191, dt), normal({4, 1, 65}, 192, dt)},
               [](auto& in) {
                 const Tensor a = tg::scaled_dot_product_attention(in[0], in[1], in[2], in[3] > 0.0);
                 tg::manual_seed(13);
                 return a + tg::scaled_dot_product_attention(in[0], in[1], in[2], in[4], 0.2, false, 0.5);
               }, R});
  // the fused kernels (Note [Fused attention]): head dim 64, a key-padding mask over (N, H), L != S
  // both ways, broadcast batch dims, a float mask with Ev != E
  t.push_back({"scaled_dot_product_attention", "(2, 4, 40, 64) fused, key padding bool mask (2, 1, 1, 40)",
               {normal({2, 4, 40, 64}, 193, dt), normal({2, 4, 40, 64}, 194, dt), normal({2, 4, 40, 64}, 195, dt), W({2, 1, 1, 40}, 196, dt)},
               [](auto& in) { return tg::scaled_dot_product_attention(in[0], in[1], in[2], in[3] > -1.0); }, R});
  t.push_back({"scaled_dot_product_attention", "(2, 3, 65, 8) x (3, 33, 8) fused, causal L > S, key batch broadcast",
               {normal({2, 3, 65, 8}, 197, dt), normal({3, 33, 8}, 198, dt), normal({3, 33, 8}, 199, dt)},
               [](auto& in) { return tg::scaled_dot_product_attention(in[0], in[1], in[2], {}, 0, true); }, R});
  t.push_back({"scaled_dot_product_attention", "(3, 33, 16) x (3, 70, 16) fused, float mask (33, 70), Ev 24, scale 0.3",
               {normal({3, 33, 16}, 200, dt), normal({3, 70, 16}, 201, dt), normal({3, 70, 24}, 202, dt), normal({33, 70}, 203, dt)},
               [](auto& in) { return tg::scaled_dot_product_attention(in[0], in[1], in[2], in[3], 0, false, 0.3); }, R});
  // query rows whose every key is masked (rows i % 4 == 1): 0 and zero gradients on both devices (Note
  // [Fused attention]); fused with a bool mask, composed with a float mask of -inf rows that needs its
  // gradient, and with dropout
  t.push_back({"scaled_dot_product_attention", "(2, 3, 33, 16) x (2, 3, 40, 16) fused, bool mask (33, 40), masked rows",
               {normal({2, 3, 33, 16}, 204, dt), normal({2, 3, 40, 16}, 205, dt), normal({2, 3, 40, 8}, 206, dt),
                constant(rows_masked(33, 40))},
               [](auto& in) { return tg::scaled_dot_product_attention(in[0], in[1], in[2], in[3]); }, R});
  Input minus_inf_rows = normal({33, 40}, 207, dt);
  if (tg::is_floating(dt)) {
    const RawTensor r = minus_inf_rows.base;
    minus_inf_rows.base = tg::prim::where(rows_masked(33, 40), r, tg::prim::scalar_like(-INFINITY, r));
  }
  t.push_back({"scaled_dot_product_attention", "(4, 33, 16) x (4, 40, 8) composed, float mask, -inf rows, dropout 0.2",
               {normal({4, 33, 16}, 208, dt), normal({4, 40, 16}, 209, dt), normal({4, 40, 8}, 210, dt), minus_inf_rows,
                constant(rows_masked(33, 40))},
               [](auto& in) {
                 const Tensor a = tg::scaled_dot_product_attention(in[0], in[1], in[2], in[3]);
                 tg::manual_seed(14);
                 return a + tg::scaled_dot_product_attention(in[0], in[1], in[2], in[4], 0.2);
               }, R});
  return t;
}

/// The ops that need floating input (ops/ops.h; DTypeError for integers on both backends). In the integer
/// tables their cases check that CUDA raises the CPU's error; a case of any other op must compute.
const std::set<std::string> kFloatingOnly = {
    "div", "pow", "neg", "exp", "log", "sqrt", "abs", "relu", "sigmoid", "tanh", "clamp", "mean", "matmul",
    "round", "sign",
    "linear", "softmax", "log_softmax", "cross_entropy", "dropout",
    "mse_loss",   // its Mean reduction only (mean); Sum and None compute in int64
    "nll_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits", "l1_loss", "smooth_l1_loss", "huber_loss",
    "kl_div", "margin_ranking_loss", "cosine_embedding_loss", "interpolate",
    "hinge_embedding_loss", "triplet_margin_loss", "multi_margin_loss", "poisson_nll_loss", "gaussian_nll_loss",
    "ctc_loss",
    "soft_margin_loss", "multilabel_soft_margin_loss", "multilabel_margin_loss", "triplet_margin_with_distance_loss",
    "dropout2d", "conv_transpose2d",
    "gelu", "silu", "softplus", "leaky_relu", "log_sigmoid",
    "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "erf", "erfc", "log1p",
    "expm1", "log2", "log10", "rsqrt", "reciprocal", "square", "frac", "hardtanh", "relu6", "hardswish",
    "hardsigmoid", "elu", "selu", "celu", "mish", "softsign",
    "conv2d", "conv1d", "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d", "batch_norm", "layer_norm", "group_norm",
    "scaled_dot_product_attention",   // float kernels only
    "prelu", "instance_norm", "max_pool1d", "avg_pool1d", "adaptive_avg_pool1d", "adaptive_max_pool2d",
    "adaptive_max_pool1d", "conv_transpose1d",   // compositions that check for floating input first
    "conv3d", "conv_transpose3d", "max_pool3d", "avg_pool3d", "adaptive_avg_pool3d",   // the same (ops/conv3d.cpp)
    "adaptive_max_pool3d",   // the same (ops/pooling.cpp)
    "fused_lstm_cell", "fused_gru_cell",
    "var", "std", "norm", "multinomial", "bernoulli",
    "mm", "bmm", "dot", "einsum", "scatter_add", "index_add"};

/// Ops outside kFloatingOnly that both backends refuse in one integer dtype, as PyTorch does: bool
/// subtraction, floor, ceil and trunc of bool, and a fill of -3 into uint8 (scalar_like's case). Their
/// cases compare the errors.
bool refused(tg::DType dt, const std::string& op) {
  return (dt == tg::kBool && (op == "sub" || op == "floor" || op == "ceil" || op == "trunc")) ||
         (dt == tg::kUInt8 && op == "scalar_like");
}

/// The dtypes the parity table runs in: all nine of the dtype table.
const tg::DType kParityDTypes[] = {tg::kFloat32, tg::kFloat64, tg::kInt64, tg::kFloat16, tg::kBFloat16,
                                   tg::kInt32,   tg::kInt8,    tg::kUInt8, tg::kBool};

/// Ops of ops/ops.h without a parity case, each with the reason. None today: even the pure views
/// have a case, since the op after them reads them strided on the device.
const std::map<std::string, std::string> kNoParityCase = {};

}  // namespace

// ------------------------------------------------------------------------------------------------
// Without a GPU

TEST_CASE("cuda: is_available never throws and agrees with device_count") {
  bool available = false;
  CHECK_NOTHROW(available = tg::cuda::is_available());
  CHECK_NOTHROW(tg::cuda::device_count());
  CHECK(available == (tg::cuda::device_count() > 0));
  if (testing::require_cuda()) CHECK_MESSAGE(available, "TG_REQUIRE_CUDA=1 but no usable GPU:\n" << tg::cuda::info());
  MESSAGE("tg::cuda::info(): " << tg::cuda::info());
}

TEST_CASE("cuda: without a usable GPU info explains why and CUDA tensors raise DeviceError") {
  if (tg::cuda::is_available()) {
    MESSAGE("a GPU is usable: the no-GPU behaviour is not exercised here");
    return;
  }
  const std::string info = tg::cuda::info();
  CHECK(info.find("not available") != std::string::npos);
  TG_CHECK_THROWS(tg::zeros({3}, tg::TensorOptions().device(tg::Device::cuda())), tg::DeviceError, "cannot use cuda:0");
  TG_CHECK_THROWS(tg::randn({2}).cuda(), tg::DeviceError, "cuda:0");
  TG_CHECK_THROWS(tg::randn({2}).data().to(tg::Device::cuda(7)), tg::DeviceError, "cannot use cuda:7");
  TG_CHECK_THROWS(tg::cuda::set_device(1), tg::DeviceError, "cuda:1");
  CHECK(tg::cuda::current_device() == 0);
  CHECK(tg::cuda::memory_allocated() == 0);
  CHECK(tg::cuda::memory_reserved() == 0);
  CHECK_NOTHROW(tg::cuda::synchronize());
  CHECK_NOTHROW(tg::cuda::empty_cache());
  CHECK_NOTHROW(tg::cuda::reset_peak_memory_stats());
  // pin_memory is a no-op without a GPU
  const RawTensor x = tg::randn({4}).data();
  CHECK(tg::cuda::detail::pin(x).storage() == x.storage());
  CHECK_FALSE(tg::cuda::detail::is_pinned(x));
}

TEST_CASE("cuda: info names each piece CUDA needs (runtime, driver, cuBLAS, cuBLASLt) and where it was found") {
  const std::string info = tg::cuda::info();
  MESSAGE(info);
  if (info.find("built without CUDA") != std::string::npos) {
    MESSAGE("tensorgrad was built without CUDA: nothing to load");
    return;
  }
  CHECK(info.find("runtime: CUDA ") != std::string::npos);
  CHECK(info.find("\n  driver: ") != std::string::npos);
  CHECK(info.find("\n  cuBLAS: ") != std::string::npos);
  CHECK(info.find("\n  cuBLASLt: ") != std::string::npos);
  if (info.find("driver: not found (libcuda.so.1") != std::string::npos)
    CHECK(info.find("CUDA: not available: no CUDA driver installed (libcuda.so.1") != std::string::npos);
  if (info.find("CUDA emulator") != std::string::npos) {   // -DTENSORGRAD_CUDA_EMULATE=ON: nothing is opened
    CHECK(info.find("cuBLAS: 13.0.0 (reference GEMM of the tensorgrad CUDA emulator") != std::string::npos);
    CHECK(info.find("cuBLASLt: 13.0.0 (reference matmul of the tensorgrad CUDA emulator") != std::string::npos);
    return;
  }
  // With the toolkit on this machine, cuBLAS opens at run time and every entry point resolves
  // (Note [CUDA at run time]); tests/consumer/hidden_cuda.sh checks the message without it.
  std::FILE* f = std::fopen("/usr/local/cuda/lib64/libcublas.so.13", "rb");
  if (f != nullptr) {
    std::fclose(f);
    CHECK_MESSAGE(info.find("cuBLAS: 13.") != std::string::npos, "cuBLAS is installed but was not loaded");
    CHECK(info.find("libcublas.so.13)") != std::string::npos);
  }
  f = std::fopen("/usr/local/cuda/lib64/libcublasLt.so.13", "rb");   // cuBLASLt, opened the same way
  if (f != nullptr) {
    std::fclose(f);
    CHECK_MESSAGE(info.find("cuBLASLt: 13.") != std::string::npos, "cuBLASLt is installed but was not loaded");
    CHECK(info.find("libcublasLt.so.13)") != std::string::npos);
  }
}

// ------------------------------------------------------------------------------------------------
// Device management

TEST_CASE("cuda: info names the devices and the compiled architectures") {
  TG_NEED_CUDA();
  const std::string info = tg::cuda::info();
  MESSAGE(info);
  CHECK(info.find("CUDA: available") != std::string::npos);
  CHECK(info.find("compute capability") != std::string::npos);
  CHECK(info.find("compiled for architectures") != std::string::npos);
  CHECK(tg::cuda::device_count() >= 1);
}

TEST_CASE("cuda: a device index beyond the count raises DeviceError naming the count") {
  TG_NEED_CUDA();
  const int n = tg::cuda::device_count();
  TG_CHECK_THROWS(tg::zeros({1}, tg::TensorOptions().device(tg::Device::cuda(n))), tg::DeviceError,
                  "usable CUDA device");
  TG_CHECK_THROWS(tg::cuda::set_device(n), tg::DeviceError, tg::detail::cat("cuda:", n));
  CHECK_NOTHROW(tg::cuda::set_device(0));
  CHECK(tg::cuda::current_device() == 0);
}

TEST_CASE("cuda: tensors move both ways and between dtypes") {
  TG_NEED_CUDA();
  for (tg::DType dt : {tg::kFloat32, tg::kFloat64, tg::kInt64}) {
    const std::string dtype = tg::dtype_name(dt);
    CAPTURE(dtype);
    tg::manual_seed(3);
    const Tensor x = dt == tg::kInt64 ? tg::randint(-50, 50, {257, 33}) : tg::randn({257, 33}, tg::TensorOptions().dtype(dt));
    const Tensor g = x.to(kGpu);
    CHECK(g.device() == kGpu);
    check_same(g, x, 0, 0);                                  // exact round trip
    check_same(g.to(kCpu), x, 0, 0);
    check_same(Tensor(x.data().transpose(0, 1)).to(kGpu), Tensor(x.data().transpose(0, 1)), 0, 0);
    check_same(Tensor(g.data().transpose(0, 1)).cpu(), Tensor(x.data().transpose(0, 1)), 0, 0);
    for (tg::DType to : {tg::kFloat32, tg::kFloat64, tg::kInt64})   // conversions on the device
      check_same(g.to(to), x.to(to), 0, 0);
    check_same(tg::zeros({0, 3}).to(kGpu), tg::zeros({0, 3}), 0, 0);
  }
}

TEST_CASE("cuda: creation ops and fills match the CPU") {
  TG_NEED_CUDA();
  const tg::TensorOptions opts = tg::TensorOptions().device(kGpu);
  check_same(tg::zeros({257, 33}, opts), tg::zeros({257, 33}), 0, 0);
  check_same(tg::ones({257, 33}, opts), tg::ones({257, 33}), 0, 0);
  check_same(tg::full({5, 7}, -0.0, tg::TensorOptions().device(kGpu).dtype(tg::kFloat64)),
                       tg::full({5, 7}, -0.0, tg::TensorOptions().dtype(tg::kFloat64)), 0, 0);
  check_same(tg::full({257}, 2.5, opts), tg::full({257}, 2.5), 0, 0);
  check_same(tg::arange(257, opts), tg::arange(257), 0, 0);
  check_same(tg::eye(33, opts), tg::eye(33), 0, 0);   // a strided fill of the diagonal
  Tensor x = tg::zeros({33, 257}, opts);
  tg::prim::fill_(x.data().transpose(0, 1).narrow(0, 3, 100), 4.0);   // strided fill
  Tensor y = tg::zeros({33, 257});
  tg::prim::fill_(y.data().transpose(0, 1).narrow(0, 3, 100), 4.0);
  check_same(x, y, 0, 0);
}

// ------------------------------------------------------------------------------------------------
// Parity: every op forward and every input gradient

TEST_CASE("cuda parity table covers every op in ops/ops.h") {
  // Needs no GPU: the table is only built and inspected, in each dtype it runs in.
  const std::size_t allocated = tg::cuda::memory_allocated();
  for (tg::DType dt : kParityDTypes) {
    const std::string dtype = tg::dtype_name(dt);
    CAPTURE(dtype);
    std::set<std::string> covered;
    for (const Case& c : parity_table(dt)) {
      covered.insert(c.op);
      CHECK_MESSAGE(!c.inputs.empty(), c.name() << ": no inputs");
      for (const Input& in : c.inputs)
        CHECK_MESSAGE(in.base.device() == kCpu, c.name() << ": an input was made off the CPU");
    }
    testing::check_covers_declared_ops(covered, kNoParityCase, "the CUDA parity table of tests/test_cuda.cpp");
  }
  CHECK(tg::cuda::memory_allocated() == allocated);   // building the tables allocated nothing on the device
}

namespace {
/// Runs the table in dt and says how many cases ran, and per op how many of them compared the error
/// both devices raised rather than values (integer cases of kFloatingOnly and refused()). TG_CUDA_PARITY_FILTER=text
/// runs only the cases whose name contains text (tools/gpu_check.sh uses it to keep compute-sanitizer
/// runs short).
void run_table(tg::DType dt) {
  const char* filter = std::getenv("TG_CUDA_PARITY_FILTER");
  int values = 0, errors = 0;
  std::map<std::string, int> errors_per_op;
  for (const Case& c : parity_table(dt)) {
    if (filter != nullptr && c.name().find(filter) == std::string::npos) continue;
    const bool errors_allowed = !tg::is_floating(dt) && (kFloatingOnly.count(c.op) == 1 || refused(dt, c.op));
    if (check_parity(c, errors_allowed) == Outcome::SameError) {
      ++errors;
      ++errors_per_op[c.op];
    } else {
      ++values;
    }
  }
  std::string listed;
  for (const auto& e : errors_per_op) listed += " " + e.first + " (" + std::to_string(e.second) + ")";
  MESSAGE((values + errors) << " " << std::string(tg::dtype_name(dt)) << " parity cases"
                          << std::string(filter != nullptr ? " matching the filter" : "") << ": " << values
                          << " compared by value, " << errors << " by the error both raised" << std::string(errors > 0 ? ":" : "")
                          << listed);
}
}  // namespace

TEST_CASE("cuda parity: every op and gradient in float64 against the CPU") {
  TG_NEED_CUDA();
  run_table(tg::kFloat64);
}

TEST_CASE("cuda parity: second derivatives of every twice-differentiable op in float64 against the CPU") {
  // For each case of the float64 table whose op is in testing::kTwice: the gradient of sum(y * w) with
  // create_graph, then the gradient of sum_k (g_k * v_k) (w, v fixed), on both devices.
  TG_NEED_CUDA();
  const char* filter = std::getenv("TG_CUDA_PARITY_FILTER");
  int cases = 0;
  for (const Case& c : parity_table(tg::kFloat64)) {
    if (testing::kTwice.count(c.op) == 0) continue;
    if (filter != nullptr && c.name().find(filter) == std::string::npos) continue;
    const std::string name = c.name();
    CAPTURE(name);
    auto second = [&c](Device d, std::vector<Tensor>& first) {
      std::vector<Tensor> in, wrt;
      for (const Input& i : c.inputs) in.push_back(i.on(d));
      for (const Tensor& t : in)
        if (t.requires_grad()) wrt.push_back(t);
      const Tensor y = c.fn(in);
      std::vector<Tensor> out;
      if (!y.requires_grad() || wrt.empty()) return out;
      const Tensor w(randn_t(y.shape(), 999, y.dtype()).to(d));
      first = tg::autograd::grad({tg::sum(y * w)}, wrt, {}, true, /*create_graph=*/true, /*allow_unused=*/true);
      Tensor s = tg::zeros({}, tg::TensorOptions().dtype(tg::kFloat64).device(d));
      for (std::size_t k = 0; k < first.size(); ++k)
        if (first[k].defined() && first[k].requires_grad())
          s = s + tg::sum(first[k] * Tensor(randn_t(first[k].shape(), 1000 + k, first[k].dtype()).to(d)));
      if (!s.requires_grad()) return out;
      return tg::autograd::grad({s}, wrt, {}, false, false, /*allow_unused=*/true);
    };
    std::vector<Tensor> g_cpu, g_gpu;
    const std::vector<Tensor> cpu = second(kCpu, g_cpu), gpu = second(kGpu, g_gpu);
    REQUIRE(cpu.size() == gpu.size());
    const Tolerance tol = tolerance(tg::kFloat64, Tol::Reduction);
    for (std::size_t k = 0; k < g_cpu.size(); ++k) {
      REQUIRE(g_cpu[k].defined() == g_gpu[k].defined());
      if (g_cpu[k].defined()) check_same(g_gpu[k], g_cpu[k], tol.rtol, tol.atol);
    }
    for (std::size_t k = 0; k < cpu.size(); ++k) {
      CAPTURE(k);
      REQUIRE(cpu[k].defined() == gpu[k].defined());
      if (!cpu[k].defined()) continue;
      CHECK(gpu[k].device() == kGpu);
      check_same(gpu[k], cpu[k], tol.rtol, tol.atol);
    }
    ++cases;
  }
  MESSAGE(cases << " float64 double-backward parity cases");
  CHECK(cases > 0);
}

TEST_CASE("cuda parity: every op and gradient in float32 against the CPU") {
  TG_NEED_CUDA();
  run_table(tg::kFloat32);
}

TEST_CASE("cuda parity: every op in int64 against the CPU, exactly or by the same error") {
  TG_NEED_CUDA();
  run_table(tg::kInt64);
}

TEST_CASE("cuda parity: every op and gradient in float16 and bfloat16 against the CPU") {
  TG_NEED_CUDA();
  run_table(tg::kFloat16);
  run_table(tg::kBFloat16);
}

TEST_CASE("cuda parity: every op in int32, int8, uint8 and bool against the CPU, exactly or by the same error") {
  TG_NEED_CUDA();
  for (tg::DType dt : {tg::kInt32, tg::kInt8, tg::kUInt8, tg::kBool}) {
    const std::string dtype = tg::dtype_name(dt);
    CAPTURE(dtype);
    run_table(dt);
  }
}

TEST_CASE("cuda parity: NaN and infinity positions match the CPU") {
  TG_NEED_CUDA();
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  for (tg::DType dt : {tg::kFloat32, tg::kFloat64}) {
    const std::string dtype = tg::dtype_name(dt);
    CAPTURE(dtype);
    std::vector<double> v(7 * 33);
    tg::manual_seed(12);
    const auto r = tg::randn({7 * 33}, tg::TensorOptions().dtype(tg::kFloat64)).to_vector<double>();
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = r[i];
    v[0] = nan;                                          // row 0: NaN first
    v[33 + 17] = nan;                                    // row 1: NaN inside
    v[2 * 33 + 5] = nan, v[2 * 33 + 30] = nan;           // row 2: two NaNs (the first wins argmax)
    v[3 * 33 + 9] = inf;                                 // row 3: +inf
    for (int j = 0; j < 33; ++j) v[4 * 33 + j] = -inf;   // row 4: all -inf
    v[5 * 33 + 2] = -inf;                                // row 5: one -inf
    const Tensor x = tg::from_vector(v, {7, 33}).to(dt), xg = x.to(kGpu);
    check_same(tg::relu(xg), tg::relu(x));
    check_same(tg::exp(xg), tg::exp(x), 1e-5, 1e-6);
    check_same(tg::sum(xg, 1), tg::sum(x, 1), 1e-4, 1e-4);
    check_same(tg::max(xg, 1), tg::max(x, 1));
    check_same(tg::min(xg, 1), tg::min(x, 1));
    check_same(tg::max(xg), tg::max(x));
    check_same(tg::argmax(xg, 1), tg::argmax(x, 1), 0, 0);
    check_same(tg::argmax(xg), tg::argmax(x), 0, 0);
    check_same(tg::softmax(xg, 1), tg::softmax(x, 1), 1e-4, 1e-5);
    check_same(tg::log_softmax(xg, 1), tg::log_softmax(x, 1), 1e-4, 1e-4);
    check_same(tg::softmax(xg, 0), tg::softmax(x, 0), 1e-4, 1e-5);   // the column kernel
    const Tensor tgt = tg::from_vector(std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7}, {7});
    check_same(tg::cross_entropy(xg, tgt.to(kGpu), tg::Reduction::None),
                         tg::cross_entropy(x, tgt, tg::Reduction::None), 1e-4, 1e-4);
    // gradients: cross-entropy's rows, and pow where it is locally constant (Note [NaN and infinity])
    Tensor xc = x.detach(), xgc = xg.detach();
    xc.set_requires_grad(true);
    xgc.set_requires_grad(true);
    tg::cross_entropy(xc, tgt, tg::Reduction::Sum).backward();
    tg::cross_entropy(xgc, tgt.to(kGpu), tg::Reduction::Sum).backward();
    check_same(xgc.grad(), xc.grad(), 1e-4, 1e-5);
    Tensor a = tg::from_vector(std::vector<double>{0, 0, 2, 0, 3}, {5}).to(dt);
    Tensor b = tg::from_vector(std::vector<double>{2, 0, 0, -1, 2}, {5}).to(dt);
    Tensor ag = a.to(kGpu), bg = b.to(kGpu);
    for (Tensor* v : {&a, &b, &ag, &bg}) v->set_requires_grad(true);
    tg::pow(a, b).sum().backward();
    tg::pow(ag, bg).sum().backward();
    check_same(ag.grad(), a.grad(), 1e-6, 1e-7);
    check_same(bg.grad(), b.grad(), 1e-6, 1e-7);
  }
}

namespace {
/// Whether y's graph has a node named name (an explicit stack over the edges, no recursion).
bool graph_has(const Tensor& y, const std::string& name) {
  std::vector<const tg::Node*> stack;
  std::set<const tg::Node*> seen;
  if (y.grad_fn()) stack.push_back(y.grad_fn().get());
  while (!stack.empty()) {
    const tg::Node* n = stack.back();
    stack.pop_back();
    if (!seen.insert(n).second) continue;
    if (name == n->name) return true;
    for (const tg::Edge& e : n->next)
      if (e.fn) stack.push_back(e.fn.get());
  }
  return false;
}
}  // namespace

TEST_CASE("cuda: mma fragment layouts are the hardware's (layout conformance)") {
  TG_NEED_CUDA();
  // Note [Tensor-core fragments]: the tensor-core kernels place operands by layout functions that the
  // emulator also computes with, so a wrong table would pass every emulated test; on a GPU this product
  // of integer-valued matrices placed by the same functions equals the host's product only if the
  // table is the hardware's
  for (int kind : {0, 1, 2}) {
    CAPTURE(kind);
    const std::vector<float> d = tg::cuda::detail::mma_layout_probe(kind);
    REQUIRE(d.size() == 128u);
    const int K = kind == 0 ? 8 : 16;
    for (int r = 0; r < 16; ++r)
      for (int n = 0; n < 8; ++n) {
        double want = 0;
        for (int k = 0; k < K; ++k) want += double((3 * r + k) % 7 - 3) * double((5 * k + 2 * n) % 5 - 2);
        CAPTURE(r);
        CAPTURE(n);
        CHECK(d[static_cast<std::size_t>(r * 8 + n)] == want);
      }
  }
  TG_CHECK_THROWS(tg::cuda::detail::mma_layout_probe(3), tg::Error, "kind 3");
}

/// Sets an environment variable for a scope, then restores what was there.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    had_ = old != nullptr;
    if (had_) old_ = old;
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (had_) ::setenv(name_.c_str(), old_.c_str(), 1);
    else ::unsetenv(name_.c_str());
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_, old_;
  bool had_ = false;
};

TEST_CASE("cuda: scaled_dot_product_attention runs fused and matches the CPU in every floating dtype") {
  TG_NEED_CUDA();
  // Note [Fused attention]: on CUDA the op records one fused node (the kernels of backend/cuda/attention.cu);
  // the CPU composes matmul and softmax. Each sample runs on CUDA in dt and on the CPU in dt (float32
  // for float16/bfloat16 inputs: the same values, the float32 arithmetic the kernels accumulate in).
  struct Sample {
    const char* what;
    tg::Shape q, k, v;
    int mask;   // 0 none, 1 bool key padding (N, 1, 1, S), 2 float (L, S), 3 bool (N, 1, L, S) over 3 batch
                // dims, 4 bool (L, S) with the rows i % 4 == 1 masked whole
    bool causal;
    double scale;   // 0: 1 / sqrt(E)
  };
  const Sample samples[] = {
      {"head dim 8, causal, L < S", {2, 3, 33, 8}, {2, 3, 65, 8}, {2, 3, 65, 8}, 0, true, 0},
      {"head dim 64, causal, L > S", {2, 2, 70, 64}, {2, 2, 37, 64}, {2, 2, 37, 64}, 0, true, 0},
      {"head dim 64, key padding mask", {2, 4, 40, 64}, {2, 4, 40, 64}, {2, 4, 40, 64}, 1, false, 0},
      {"float mask, Ev 24, scale 0.3", {3, 33, 16}, {3, 70, 16}, {3, 70, 24}, 2, false, 0.3},
      {"bool mask copied: batch dims that do not fold", {2, 3, 2, 17, 8}, {2, 3, 2, 19, 8}, {2, 3, 2, 19, 8}, 3, false, 0},
      {"head dim 128, causal, odd lengths", {2, 2, 37, 128}, {2, 2, 37, 128}, {2, 2, 37, 128}, 0, true, 0},
      {"head dim 72, Ev 100, masked rows", {3, 21, 72}, {3, 45, 72}, {3, 45, 100}, 4, false, 0},
  };
  // Note [Attention providers]: the default choice (the tensor cores for float32 and the 16-bit types
  // on the emulator's sm_90), then the CUDA-core kernels by the override; both against the CPU
  const std::string info = tg::cuda::info();
  CHECK(info.find("attention (float32, float16, bfloat16): tensor cores") != std::string::npos);
  for (const char* provider : {"auto", "cuda-cores"})
  for (tg::DType dt : {tg::kFloat32, tg::kFloat64, tg::kFloat16, tg::kBFloat16}) {
    const ScopedEnv env("TG_CUDA_ATTENTION", provider);
    const tg::DType ref_dt = dt == tg::kFloat64 ? tg::kFloat64 : tg::kFloat32;
    for (const Sample& sm : samples) {
      const std::string what = std::string(sm.what) + " " + tg::dtype_name(dt) + " " + provider;
      CAPTURE(what);
      const RawTensor q = randn_t(sm.q, 400, dt), k = randn_t(sm.k, 401, dt), v = randn_t(sm.v, 402, dt);
      const int64_t L = sm.q[sm.q.size() - 2], S = sm.k[sm.k.size() - 2];
      RawTensor mask;
      if (sm.mask == 1) mask = tg::prim::binary(tg::BinaryOp::Gt, randn_t({sm.q[0], 1, 1, S}, 403, tg::kFloat32),
                                                tg::prim::full({}, -1.0, tg::kFloat32), "gt");
      if (sm.mask == 2) mask = randn_t({L, S}, 403, dt);
      if (sm.mask == 3) mask = tg::prim::binary(tg::BinaryOp::Gt, randn_t({2, 1, 2, L, S}, 403, tg::kFloat32),
                                                tg::prim::full({}, -1.0, tg::kFloat32), "gt");
      if (sm.mask == 4) mask = rows_masked(L, S);
      const std::optional<double> scale = sm.scale > 0 ? std::optional<double>(sm.scale) : std::nullopt;
      auto run = [&](Device d, tg::DType t, std::vector<Tensor>& in) {
        in = {Tensor(q.to(t).to(d), true), Tensor(k.to(t).to(d), true), Tensor(v.to(t).to(d), true)};
        const Tensor m = !mask.defined() ? Tensor()
                           : mask.dtype() == tg::kBool ? Tensor(mask.to(d)) : Tensor(mask.to(t).to(d));
        return tg::scaled_dot_product_attention(in[0], in[1], in[2], m, 0, sm.causal, scale);
      };
      std::vector<Tensor> gin, cin;
      const Tensor yg = run(kGpu, dt, gin), yc = run(kCpu, ref_dt, cin);
      // the fused node (float64's tiles hold head dims up to 64: wider ones compose on CUDA too)
      const bool fits = dt != tg::kFloat64 || std::max(sm.q.back(), sm.v.back()) <= 64;
      CHECK(graph_has(yg, "scaled_dot_product_attention") == fits);
      CHECK_FALSE(graph_has(yc, "scaled_dot_product_attention"));   // the CPU composes
      CHECK(graph_has(yc, "softmax"));
      const RawTensor w = randn_t(yc.shape(), 404, dt);
      tg::sum(yg * Tensor(w.to(kGpu))).backward();
      tg::sum(yc * Tensor(w.to(ref_dt))).backward();
      // float64 1e-7 and float32 1e-4 as the parity table's reductions; float16/bfloat16: the CPU's
      // float32 result rounded once against the kernels' float32 accumulation rounded once, plus the
      // backward's D_i = dout . out read from the rounded out: 4u of each tensor's largest value
      const double u = testing::unit_roundoff(dt);
      const double rtol = dt == tg::kFloat64 ? 1e-7 : dt == tg::kFloat32 ? 1e-4 : 4 * u;
      auto close = [&](const Tensor& got, const Tensor& want) {
        double biggest = 0;
        for (double x : want.to_vector<double>()) biggest = std::max(biggest, std::fabs(x));
        check_same(got.cpu().to(tg::kFloat64), want.to(tg::kFloat64), rtol, rtol * std::max(1.0, biggest));
      };
      close(yg, yc);
      for (std::size_t i = 0; i < 3; ++i) {
        CAPTURE(i);
        close(gin[i].grad(), cin[i].grad());
      }
    }
  }
  // the composed path on CUDA: dropout (its mask is drawn over the materialised probabilities), and a
  // float mask that requires grad (the fused backward gives none)
  const Tensor q = Tensor(randn_t({2, 9, 8}, 405, tg::kFloat32).to(kGpu), true);
  CHECK_FALSE(graph_has(tg::scaled_dot_product_attention(q, q, q, {}, 0.2), "scaled_dot_product_attention"));
  const Tensor m = Tensor(randn_t({9, 9}, 406, tg::kFloat32).to(kGpu), true);
  const Tensor y = tg::scaled_dot_product_attention(q, q, q, m);
  CHECK_FALSE(graph_has(y, "scaled_dot_product_attention"));
  tg::sum(y).backward();
  CHECK(m.grad().defined());
  {
    // a misspelt override is an error naming the choices, not a silent default
    const ScopedEnv env("TG_CUDA_ATTENTION", "tensor");
    const Tensor x = Tensor(randn_t({2, 9, 8}, 408, tg::kFloat32).to(kGpu));
    CHECK_THROWS_WITH_AS(tg::scaled_dot_product_attention(x, x, x), doctest::Contains("expected auto, mma or cuda-cores"),
                         tg::Error);
  }
  // a head dim above the kernels' tiles (128 here) composes too, and agrees with the CPU
  const RawTensor wide = randn_t({2, 5, 160}, 407, tg::kFloat32);
  const Tensor yw = tg::scaled_dot_product_attention(Tensor(wide.to(kGpu)), Tensor(wide.to(kGpu)), Tensor(wide.to(kGpu)));
  check_same(yw, tg::scaled_dot_product_attention(Tensor(wide), Tensor(wide), Tensor(wide)), 1e-4, 1e-4);
  // the heads of one packed projection, read in place (Note [Attention operands in place]): q, k, v are
  // strided views of one (B, L, 3, H, E) leaf, the output merges its heads by a view, and the gradient
  // reaches the leaf through the selects; against the CPU's composition
  for (tg::DType dt : {tg::kFloat32, tg::kFloat64}) {
    CAPTURE(tg::dtype_name(dt));
    const RawTensor packed = randn_t({2, 19, 3, 4, 16}, 408, dt);
    const RawTensor up = randn_t({2, 19, 64}, 409, dt);
    auto run = [&](Device d) {
      Tensor leaf(packed.to(d), true);
      const Tensor all = leaf.permute({2, 0, 3, 1, 4});
      const Tensor y = tg::scaled_dot_product_attention(all.select(0, 0), all.select(0, 1), all.select(0, 2), {}, 0,
                                                        /*is_causal=*/true);
      const Tensor merged = y.transpose(1, 2).reshape({2, 19, 64});
      tg::sum(merged * Tensor(up.to(d))).backward();
      return std::make_pair(merged, leaf.grad());
    };
    const auto [yg, gg] = run(kGpu);
    const auto [yc, gc] = run(kCpu);
    const double tol = dt == tg::kFloat64 ? 1e-7 : 1e-4;
    check_same(yg, yc, tol, tol);
    check_same(gg, gc, tol, tol);
  }
}

TEST_CASE("cuda: under autocast scaled_dot_product_attention runs fused in the lower precision") {
  TG_NEED_CUDA();
  // Note [Fused attention] and Note [Autocast op lists]: float32 q, k, v (and a float mask) are cast to
  // the region's dtype and the fused kernels run on them, as PyTorch's autocast lists the op; the
  // result matches the fused op run on inputs cast by hand (the same kernels on the same values), the
  // gradients reach the float32 leaves in float32, and the output is the float32 CPU composition's
  // within the 16-bit rounding of the inputs and of the output: rounding q, k (u each) moves a score
  // s = q.k scale by up to 2u|s| and the mask by u|mask|, shifting the softmax weights by about that
  // much; v's rounding (u) and the output's (u) add to it: with scores of a few units, 16u of the
  // largest output value.
  for (tg::DType low : {tg::kFloat16, tg::kBFloat16}) {
    const std::string name = tg::dtype_name(low);
    CAPTURE(name);
    const RawTensor q = randn_t({2, 3, 20, 16}, 410, tg::kFloat32), k = randn_t({2, 3, 24, 16}, 411, tg::kFloat32);
    const RawTensor v = randn_t({2, 3, 24, 16}, 412, tg::kFloat32), mask = randn_t({20, 24}, 413, tg::kFloat32);
    const Tensor qg(q.to(kGpu), true), kg(k.to(kGpu), true), vg(v.to(kGpu), true), mg(mask.to(kGpu));
    Tensor y;
    {
      tg::amp::AutocastGuard region(kGpu, low);
      y = tg::scaled_dot_product_attention(qg, kg, vg, mg);
    }
    CHECK(y.dtype() == low);
    CHECK(graph_has(y, "scaled_dot_product_attention"));
    const Tensor by_hand = tg::scaled_dot_product_attention(Tensor(q.to(low).to(kGpu)), Tensor(k.to(low).to(kGpu)),
                                                              Tensor(v.to(low).to(kGpu)), Tensor(mask.to(low).to(kGpu)));
    check_same(y, by_hand, 0, 0);
    tg::sum(y.to(tg::kFloat32)).backward();
    for (const Tensor* leaf : {&qg, &kg, &vg}) {
      REQUIRE(leaf->grad().defined());
      CHECK(leaf->grad().dtype() == tg::kFloat32);
    }
    const Tensor want = tg::scaled_dot_product_attention(Tensor(q), Tensor(k), Tensor(v), Tensor(mask));
    double biggest = 0;
    for (double x : want.to_vector<double>()) biggest = std::max(biggest, std::fabs(x));
    const double u = testing::unit_roundoff(low);
    check_same(y.cpu().to(tg::kFloat64), want.to(tg::kFloat64), 16 * u, 16 * u * std::max(1.0, biggest));
  }
}

TEST_CASE("cuda: the same seed gives the same random numbers on both devices") {
  TG_NEED_CUDA();
  const auto on = [](Device d, tg::DType dt) { return tg::TensorOptions().device(d).dtype(dt); };
  for (tg::DType dt : {tg::kFloat32, tg::kFloat64}) {
    const std::string dtype = tg::dtype_name(dt);
    CAPTURE(dtype);
    tg::manual_seed(2024);
    const Tensor a = tg::randn({257, 33}, on(kCpu, dt)), u = tg::rand({1001}, on(kCpu, dt));
    tg::manual_seed(2024);
    const Tensor ag = tg::randn({257, 33}, on(kGpu, dt)), ug = tg::rand({1001}, on(kGpu, dt));
    if (dt == tg::kFloat32) {   // float32: bit for bit
      check_same(ag, a, 0, 0);
      check_same(ug, u, 0, 0);
    } else {                    // float64: the device's log/cos may differ in the last ulp
      check_same(ag, a, 1e-14, 1e-15);
      check_same(ug, u, 0, 0);
    }
  }
  tg::manual_seed(7);
  const Tensor i = tg::randint(-5, 1000, {4099});
  tg::manual_seed(7);
  const Tensor ig = tg::randint(-5, 1000, {4099}, tg::TensorOptions().device(kGpu));
  check_same(ig, i, 0, 0);
  // integers beyond 2^53, exactly (compared as int64, not through double)
  const int64_t max = std::numeric_limits<int64_t>::max(), min = std::numeric_limits<int64_t>::min();
  for (auto [low, high] : {std::pair<int64_t, int64_t>{max - 10, max}, {min, max}, {int64_t(1) << 53, (int64_t(1) << 53) + 3}}) {
    tg::manual_seed(8);
    const auto cpu = tg::randint(low, high, {1031}).to_vector<int64_t>();
    tg::manual_seed(8);
    CHECK(tg::randint(low, high, {1031}, tg::TensorOptions().device(kGpu)).to_vector<int64_t>() == cpu);
  }
}

// The vector path of binary ops (backend/cuda/elementwise.cu) reads each operand whole, as one broadcast
// element, or as a block of trailing dims repeated over the leading ones; other layouts take the
// strided launcher. Every layout against the CPU, both operand orders, with vector tails (1001
// elements), blocks that are and are not whole vectors, and a misaligned block.
TEST_CASE("cuda: binary ops with a broadcast scalar, row or block match the CPU on every layout") {
  TG_NEED_CUDA();
  struct Layout {
    const char* name;
    tg::Shape a, b;
  };
  const std::vector<Layout> layouts = {
      {"same shape, tail", {1001}, {1001}},
      {"0-d scalar, tail", {1001}, {}},
      {"one-element tensor", {37, 8}, {1, 1}},
      {"row of 8", {37, 8}, {8}},
      {"row of 6 (not whole float32 vectors)", {37, 6}, {6}},
      {"block of 3x8 over a leading dim", {5, 3, 8}, {3, 8}},
      {"block with a size-1 dim", {5, 1, 8}, {1, 8}},
      {"column (strided)", {37, 8}, {37, 1}},
      {"middle broadcast (strided)", {5, 3, 8}, {5, 1, 8}},
  };
  for (tg::DType dt : {tg::kFloat32, tg::kFloat64, tg::kInt64, tg::kFloat16}) {
    const std::string dtype = tg::dtype_name(dt);
    CAPTURE(dtype);
    for (const Layout& l : layouts) {
      const std::string layout = l.name;
      CAPTURE(layout);
      for (bool swapped : {false, true}) {
        CAPTURE(swapped);
        const RawTensor a = dt == tg::kInt64 ? randint_t(l.a, 11, -50, 50) : randn_t(l.a, 11, dt);
        const RawTensor b = dt == tg::kInt64 ? randint_t(l.b, 12, 1, 50) : randn_t(l.b, 12, dt);
        const RawTensor& x = swapped ? b : a;
        const RawTensor& y = swapped ? a : b;
        const Tensor xc(x), yc(y), xg(x.to(kGpu)), yg(y.to(kGpu));
        check_same(xg + yg, xc + yc, 0, 0);   // IEEE sums, products and differences: the same bits
        check_same(xg - yg, xc - yc, 0, 0);
        check_same(xg * yg, xc * yc, 0, 0);
        if (dt != tg::kInt64) check_same(xg / yg, xc / yc, 1e-6, 0);
      }
    }
    // a block that starts off a 16-byte boundary: the strided launcher
    const RawTensor a = dt == tg::kInt64 ? randint_t({7, 8}, 13, -50, 50) : randn_t({7, 8}, 13, dt);
    const RawTensor base = dt == tg::kInt64 ? randint_t({9}, 14, -50, 50) : randn_t({9}, 14, dt);
    const Tensor row_c(base.narrow(0, 1, 8)), row_g(base.to(kGpu).narrow(0, 1, 8));
    check_same(Tensor(a.to(kGpu)) + row_g, Tensor(a) + row_c, 0, 0);
  }
}

TEST_CASE("cuda: copies that transpose (t(), permutes that move the last dim) give the CPU's bits in every dtype") {
  // The tiled kernel of Note [Tiled transpose copy] for (batched) transposes of at least 16 x 16, the
  // strided kernel for the rest; every element size (1, 2, 4 and 8 bytes), tiles cut by the edges.
  TG_NEED_CUDA();
  struct Case {
    const char* name;
    tg::Shape shape;
    std::vector<int64_t> perm;
  };
  const std::vector<Case> cases = {
      {"2-D, tiles cut by both edges", {37, 70}, {1, 0}},
      {"2-D, whole tiles", {64, 96}, {1, 0}},
      {"2-D, 16 x 16 (the smallest tiled)", {16, 16}, {1, 0}},
      {"2-D, 5 x 100 (strided)", {5, 100}, {1, 0}},
      {"batched", {3, 33, 50}, {0, 2, 1}},
      {"two batch dims that coalesce", {2, 3, 40, 17}, {0, 1, 3, 2}},
      {"(B, L, H, D) -> (B, H, D, L)", {2, 20, 3, 24}, {0, 2, 3, 1}},
      {"a permute that coalesces to 4 dims (strided)", {3, 4, 18, 20}, {2, 0, 3, 1}},
  };
  for (tg::DType dt : {tg::kFloat64, tg::kFloat32, tg::kFloat16, tg::kBFloat16, tg::kInt64, tg::kInt32, tg::kInt8,
                       tg::kUInt8, tg::kBool}) {
    const std::string dtype = tg::dtype_name(dt);
    CAPTURE(dtype);
    for (const Case& c : cases) {
      const std::string layout = c.name;
      CAPTURE(layout);
      const RawTensor x = tg::is_floating(dt) ? randn_t(c.shape, 31, dt) : randint_t(c.shape, 31, 0, 100).to(dt);
      const Tensor cpu = Tensor(x).permute(c.perm).contiguous();
      const Tensor gpu = Tensor(x.to(kGpu)).permute(c.perm).contiguous();
      CHECK(gpu.dtype() == dt);
      CHECK(gpu.is_contiguous());
      check_same(gpu, cpu, 0, 0);
      // a view that starts off the storage's first element and skips a column of every row
      const Tensor vc = Tensor(x).narrow(-1, 1, c.shape.back() - 1).permute(c.perm).contiguous();
      const Tensor vg = Tensor(x.to(kGpu)).narrow(-1, 1, c.shape.back() - 1).permute(c.perm).contiguous();
      check_same(vg, vc, 0, 0);
    }
  }
}

TEST_CASE("cuda: reductions and softmax and cross-entropy are bitwise deterministic") {
  TG_NEED_CUDA();
  tg::manual_seed(5);
  const Tensor x = tg::randn({3, 70001}, tg::TensorOptions().device(kGpu));
  const Tensor big = tg::randn({517, 1031}, tg::TensorOptions().device(kGpu));
  const Tensor tgt = tg::randint(0, 1031, {517}, tg::TensorOptions().device(kGpu));
  auto bits = [](const Tensor& v) { return v.to_vector<double>(); };
  CHECK(bits(tg::sum(x, 1)) == bits(tg::sum(x, 1)));
  CHECK(bits(tg::sum(x, 0)) == bits(tg::sum(x, 0)));
  CHECK(bits(tg::sum(big)) == bits(tg::sum(big)));
  CHECK(bits(tg::sum(big, 0)) == bits(tg::sum(big, 0)));
  CHECK(bits(tg::softmax(big, 1)) == bits(tg::softmax(big, 1)));
  CHECK(bits(tg::cross_entropy(big, tgt)) == bits(tg::cross_entropy(big, tgt)));
  CHECK(bits(tg::matmul(big, tg::t(big))) == bits(tg::matmul(big, tg::t(big))));
}

TEST_CASE("cuda: optimizer updates match the CPU (SGD with momentum and Adam and AdamW with amsgrad)") {
  TG_NEED_CUDA();
  for (int which = 0; which < 3; ++which) {
    CAPTURE(which);
    const RawTensor w0 = randn_t({257, 33}, 20, tg::kFloat32), g0 = randn_t({257, 33}, 21, tg::kFloat32);
    Tensor wc(w0.clone(), true), wg(w0.to(kGpu), true);
    std::unique_ptr<tg::optim::Optimizer> oc, og;
    if (which == 0) {
      const auto o = tg::optim::SGDOptions(0.1).momentum(0.9).nesterov(true).weight_decay(1e-2);
      oc.reset(new tg::optim::SGD({wc}, o));
      og.reset(new tg::optim::SGD({wg}, o));
    } else if (which == 1) {
      oc.reset(new tg::optim::Adam({wc}, tg::optim::AdamOptions(1e-2).weight_decay(1e-3)));
      og.reset(new tg::optim::Adam({wg}, tg::optim::AdamOptions(1e-2).weight_decay(1e-3)));
    } else {
      oc.reset(new tg::optim::AdamW({wc}, tg::optim::AdamOptions(1e-2).amsgrad(true).weight_decay(1e-2)));
      og.reset(new tg::optim::AdamW({wg}, tg::optim::AdamOptions(1e-2).amsgrad(true).weight_decay(1e-2)));
    }
    for (int step = 0; step < 5; ++step) {
      wc.set_grad(Tensor(tg::prim::mul(g0, 1.0 + step)));
      wg.set_grad(Tensor(tg::prim::mul(g0.to(kGpu), 1.0 + step)));
      oc->step();
      og->step();
    }
    check_same(wg, wc, 1e-5, 1e-6);
  }
}

TEST_CASE("cuda: RMSprop Adagrad Adadelta Adamax NAdam RAdam (compositions of prim ops) match the CPU") {
  TG_NEED_CUDA();
  using Factory = std::function<std::unique_ptr<tg::optim::Optimizer>(std::vector<Tensor>)>;
  const std::vector<Factory> make = {
      [](std::vector<Tensor> w) {
        return std::make_unique<tg::optim::RMSprop>(w, tg::optim::RMSpropOptions(1e-2).momentum(0.9).centered(true).weight_decay(1e-2));
      },
      [](std::vector<Tensor> w) {
        return std::make_unique<tg::optim::Adagrad>(w, tg::optim::AdagradOptions(1e-1).lr_decay(0.01).initial_accumulator_value(0.1));
      },
      [](std::vector<Tensor> w) { return std::make_unique<tg::optim::Adadelta>(w, tg::optim::AdadeltaOptions().weight_decay(1e-2)); },
      [](std::vector<Tensor> w) { return std::make_unique<tg::optim::Adamax>(w, tg::optim::AdamaxOptions(1e-2).weight_decay(1e-2)); },
      [](std::vector<Tensor> w) {
        return std::make_unique<tg::optim::NAdam>(w, tg::optim::NAdamOptions(1e-2).weight_decay(1e-2).decoupled_weight_decay(true));
      },
      [](std::vector<Tensor> w) { return std::make_unique<tg::optim::RAdam>(w, tg::optim::RAdamOptions(1e-2).weight_decay(1e-2)); },
  };
  for (std::size_t which = 0; which < make.size(); ++which) {
    CAPTURE(which);
    const RawTensor w0 = randn_t({257, 33}, 20, tg::kFloat32), g0 = randn_t({257, 33}, 21, tg::kFloat32);
    Tensor wc(w0.clone(), true), wg(w0.to(kGpu), true);
    auto oc = make[which]({wc});
    auto og = make[which]({wg});
    for (int step = 0; step < 8; ++step) {   // 8 steps: RAdam's rectified branch starts at step 6
      wc.set_grad(Tensor(tg::prim::mul(g0, 1.0 + step)));
      wg.set_grad(Tensor(tg::prim::mul(g0.to(kGpu), 1.0 + step)));
      oc->step();
      og->step();
    }
    check_same(wg, wc, 1e-5, 1e-6);
  }
}

namespace {
struct Net : tg::nn::Module {   // the tutorial MLP (README's first program)
  tg::nn::Linear fc1{784, 128}, fc2{128, 10};
  Net() {
    register_module("fc1", fc1);
    register_module("fc2", fc2);
  }
  tg::Tensor forward(const tg::Tensor& x) override { return fc2(tg::relu(fc1(x))); }
};

std::vector<double> train_losses(Device device, bool momentum) {
  tg::manual_seed(0);
  Net model;   // same initial weights on both devices: drawn on the CPU from the same seed
  model.to(device);
  tg::manual_seed(1);
  const Tensor inputs = tg::randn({100, 784}).to(device);
  const Tensor targets = tg::randint(0, 10, {100}).to(device);
  tg::nn::CrossEntropyLoss criterion;
  std::unique_ptr<tg::optim::Optimizer> opt;
  opt.reset(new tg::optim::SGD(model.parameters(), tg::optim::SGDOptions(0.01).momentum(momentum ? 0.9 : 0.0)));
  std::vector<double> losses;
  for (int step = 0; step < 20; ++step) {
    opt->zero_grad();
    Tensor loss = criterion(model(inputs), targets);
    loss.backward();
    opt->step();
    losses.push_back(loss.item());
  }
  return losses;
}
}  // namespace

TEST_CASE("cuda: the tutorial MLP trains 20 steps to the same losses on both devices") {
  TG_NEED_CUDA();
  for (bool momentum : {false, true}) {   // the tutorial's SGD(lr 0.01), then with momentum 0.9
    CAPTURE(momentum);
    const std::vector<double> cpu = train_losses(kCpu, momentum), gpu = train_losses(kGpu, momentum);
    REQUIRE(cpu.size() == gpu.size());
    for (std::size_t i = 0; i < cpu.size(); ++i)
      CHECK_MESSAGE(std::fabs(gpu[i] - cpu[i]) <= 1e-4 * std::fabs(cpu[i]),
                    "step " << i << ": cuda " << gpu[i] << " vs cpu " << cpu[i]);
    CHECK(gpu.back() < gpu.front());
  }
}

TEST_CASE("cuda: an out-of-range cross_entropy target raises IndexError at the next sync") {
  TG_NEED_CUDA();
  const Tensor logits = tg::randn({4, 5}, tg::TensorOptions().device(kGpu));
  const Tensor bad = tg::from_vector(std::vector<int64_t>{0, 7, 1, 2}, {4}).to(kGpu);
  Tensor loss;
  CHECK_NOTHROW(loss = tg::cross_entropy(logits, bad));   // queued, not checked: no hidden sync
  TG_CHECK_THROWS(loss.item(), tg::IndexError, "cross_entropy: target 7 is out of bounds for 5 classes");
  // the CPU raises the very same message, at the call
  TG_CHECK_THROWS(tg::cross_entropy(logits.cpu(), bad.cpu()), tg::IndexError,
                  "cross_entropy: target 7 is out of bounds for 5 classes");
  // the flag was cleared: the device keeps working
  const Tensor good = tg::from_vector(std::vector<int64_t>{0, 4, 1, 2}, {4}).to(kGpu);
  CHECK(std::isfinite(tg::cross_entropy(logits, good).item()));
  const Tensor negative = tg::from_vector(std::vector<int64_t>{-3, 0, 0, 0}, {4}).to(kGpu);
  Tensor l2 = tg::cross_entropy(logits, negative, tg::Reduction::None);
  TG_CHECK_THROWS(tg::cuda::synchronize(), tg::IndexError, "target -3 is out of bounds for 5 classes");
  CHECK_NOTHROW(tg::cuda::synchronize());
}

TEST_CASE("cuda: an out-of-range index raises the CPU's IndexError at the next sync") {
  TG_NEED_CUDA();
  const Tensor x = tg::randn({5, 3}, tg::TensorOptions().device(kGpu));
  const Tensor idx = tg::from_vector(std::vector<int64_t>{1, 9, 0}, {3});
  const std::string msg = "index_select: index 9 is out of bounds for dimension 0 with size 5";
  TG_CHECK_THROWS(tg::index_select(x.cpu(), 0, idx), tg::IndexError, msg);
  Tensor y;
  CHECK_NOTHROW(y = tg::index_select(x, 0, idx.to(kGpu)));   // no hidden sync: checked on the device
  TG_CHECK_THROWS(tg::sum(y).item(), tg::IndexError, msg);
  const Tensor gidx = tg::from_vector(std::vector<int64_t>{0, 1, 2, 3, 0, 0}, {2, 3});
  Tensor g = tg::gather(x, 1, gidx.to(kGpu));
  TG_CHECK_THROWS(tg::cuda::synchronize(), tg::IndexError, "gather: index 3 is out of bounds for dimension 1 with size 3");
  CHECK(std::isfinite(tg::sum(x).item()));
}

TEST_CASE("cuda: allocator statistics grow and shrink and empty_cache returns the cache") {
  TG_NEED_CUDA();
  tg::cuda::synchronize();
  const std::size_t before = tg::cuda::memory_allocated();
  tg::cuda::reset_peak_memory_stats();
  {
    const Tensor x = tg::zeros({1024, 1024}, tg::TensorOptions().device(kGpu));   // 4 MiB
    CHECK(tg::cuda::memory_allocated() >= before + 4 * 1024 * 1024);
    CHECK(tg::cuda::memory_reserved() >= tg::cuda::memory_allocated());
    CHECK(tg::cuda::max_memory_allocated() >= tg::cuda::memory_allocated());
  }
  CHECK(tg::cuda::memory_allocated() == before);
  CHECK(tg::cuda::max_memory_allocated() >= before + 4 * 1024 * 1024);
  if (tg::cuda::info().find("allocator: passthrough") == std::string::npos)
    CHECK(tg::cuda::memory_reserved() > tg::cuda::memory_allocated());    // the block stayed cached
  else
    CHECK(tg::cuda::memory_reserved() == tg::cuda::memory_allocated());   // TG_CUDA_ALLOCATOR=passthrough frees at once
  tg::cuda::empty_cache();
  CHECK(tg::cuda::memory_reserved() == tg::cuda::memory_allocated());
  tg::cuda::reset_peak_memory_stats();
  CHECK(tg::cuda::max_memory_allocated() == tg::cuda::memory_allocated());
  // A request the device cannot hold: OutOfMemoryError with the device's numbers and the largest
  // live tensors (Note [Live tensor report]), not a crash.
  {
    const Tensor held = tg::relu(tg::randn({512, 1024}, tg::TensorOptions().device(kGpu)));   // 2 MiB
    TG_CHECK_THROWS(tg::empty({int64_t(1) << 40}, tg::TensorOptions().device(kGpu)), tg::OutOfMemoryError,
                    "CUDA out of memory on cuda:0");
    TG_CHECK_THROWS(tg::empty({int64_t(1) << 40}, tg::TensorOptions().device(kGpu)), tg::OutOfMemoryError,
                    "2048 KiB float32 [512, 1024] on cuda:0 from relu");
  }
  CHECK(std::isfinite(tg::sum(tg::ones({3}, tg::TensorOptions().device(kGpu))).item()));
}

TEST_CASE("cuda: pinned DataLoader batches move to the GPU with non_blocking") {
  TG_NEED_CUDA();
  tg::manual_seed(4);
  const Tensor data = tg::randn({103, 7}), targets = tg::randint(0, 10, {103});
  tg::data::TensorDataset ds(data, targets);
  tg::data::DataLoader loader(ds, tg::data::LoaderOptions().batch_size(10).pin_memory(true));
  tg::data::DataLoader plain(ds, tg::data::LoaderOptions().batch_size(10));
  auto it = plain.begin();
  int64_t batches = 0;
  for (auto& batch : loader) {
    CHECK(tg::cuda::detail::is_pinned(batch.data.data()));
    CHECK(tg::cuda::detail::is_pinned(batch.target.data()));
    const Tensor x = batch.data.to(kGpu, /*non_blocking=*/true), y = batch.target.to(kGpu, true);
    check_same(x, it->data, 0, 0);
    check_same(y, it->target, 0, 0);
    ++it;
    ++batches;
  }
  CHECK(batches == 11);
  CHECK_FALSE(tg::cuda::detail::is_pinned(data.data()));
  // A pinned buffer reused at once after a non-blocking copy must not corrupt the copy.
  for (int round = 0; round < 3; ++round) {
    RawTensor pinned = tg::cuda::detail::pin(tg::prim::full({1 << 20}, double(round), tg::kFloat32));
    const RawTensor on_gpu = pinned.to(kGpu, true);
    pinned = RawTensor();   // back to the pinned cache while the copy may still run
    RawTensor next = tg::cuda::detail::pin(tg::prim::full({1 << 20}, -1.0, tg::kFloat32));
    CHECK(tg::prim::sum(on_gpu).item() == doctest::Approx(double(round) * (1 << 20)));
  }
}

TEST_CASE("cuda: copies between two GPUs") {
  TG_NEED_CUDA();
  if (tg::cuda::device_count() < 2) {
    MESSAGE("one GPU: copies between devices not exercised");
    return;
  }
  const Tensor x = tg::randn({257, 33});
  const Tensor a = x.to(Device::cuda(0)), b = a.to(Device::cuda(1));
  CHECK(b.device() == Device::cuda(1));
  check_same(b, x, 0, 0);
  check_same(tg::sum(b * 2.0), tg::sum(x * 2.0), 1e-5, 1e-5);
  check_same(b.to(Device::cuda(0)), x, 0, 0);
}

TEST_CASE("cuda: \"cuda\" without an index is the calling thread's current device, as in PyTorch") {
  TG_NEED_CUDA();
  const int last = tg::cuda::device_count() - 1;
  struct Restore {
    ~Restore() { tg::cuda::set_device(0); }
  } restore;
  tg::cuda::set_device(last);
  const Device current("cuda");
  CHECK(tg::zeros({3}, tg::TensorOptions().device(current)).device() == Device::cuda(last));
  const Tensor x = tg::randn({4, 5});
  const Tensor on = x.cuda();
  CHECK(on.device() == Device::cuda(last));
  check_same(on, x, 0, 0);
  CHECK(on.to(current).data().raw_data() == on.data().raw_data());   // already there: no copy
  tg::nn::Linear layer(5, 2);
  layer.to(Device::cuda());
  CHECK(layer.weight.device() == Device::cuda(last));
  // the current device is per thread: another thread still has cuda:0
  Device other_thread_device;
  std::thread([&] { other_thread_device = tg::zeros({1}, tg::TensorOptions().device(current)).device(); }).join();
  CHECK(other_thread_device == Device::cuda(0));
  tg::cuda::set_device(0);
  CHECK(tg::zeros({3}, tg::TensorOptions().device(current)).device() == Device::cuda(0));
  // a tensor made on cuda:last keeps its device when the current one changes
  CHECK(on.device() == Device::cuda(last));
}

TEST_CASE("cuda: threads synchronizing one device see a recorded kernel error exactly once") {
  TG_NEED_CUDA();
  const Tensor x = tg::randn({8, 3}, tg::TensorOptions().device(kGpu));
  const Tensor bad = tg::from_vector(std::vector<int64_t>{1, 9}, {2}).to(kGpu);
  for (int round = 0; round < 100; ++round) {
    const Tensor y = tg::index_select(x, 0, bad);   // records the error; nothing waits yet
    std::atomic<int> raised{0}, other{0}, waiting{8};
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t)
      threads.emplace_back([&] {
        --waiting;
        while (waiting.load() > 0) std::this_thread::yield();
        try {
          tg::cuda::synchronize();
        } catch (const tg::IndexError& e) {
          if (std::string(e.what()).find("index 9 is out of bounds") != std::string::npos) ++raised;
          else ++other;
        } catch (...) {
          ++other;
        }
      });
    for (auto& th : threads) th.join();
    CHECK(raised.load() == 1);
    CHECK(other.load() == 0);
    CHECK_NOTHROW(tg::cuda::synchronize());   // cleared
  }
}

namespace {
/// The launches one SGD training step of the tutorial MLP queues at `batch` (the third step: the first
/// creates the momentum buffers).
uint64_t mlp_step_launches(int64_t batch, bool momentum) {
  tg::manual_seed(0);
  Net model;
  model.to(kGpu);
  const Tensor inputs = tg::randn({batch, 784}).to(kGpu), targets = tg::randint(0, 10, {batch}).to(kGpu);
  tg::nn::CrossEntropyLoss criterion;
  tg::optim::SGD opt(model.parameters(), tg::optim::SGDOptions(0.01).momentum(momentum ? 0.9 : 0.0));
  Tensor loss;
  auto step = [&] {
    opt.zero_grad();
    loss = criterion(model(inputs), targets);
    loss.backward();
    opt.step();
  };
  step();
  step();
  tg::cuda::synchronize();
  const uint64_t before = tg::cuda::detail::launch_count();
  step();
  const uint64_t launches = tg::cuda::detail::launch_count() - before;
  CHECK(std::isfinite(loss.item()));
  return launches;
}

/// Restores the GEMM epilogue setting (tg::cuda::detail::set_gemm_epilogues) when a case ends.
struct EpiloguesSetting {
  bool previous;
  explicit EpiloguesSetting(bool on) : previous(tg::cuda::detail::set_gemm_epilogues(on)) {}
  ~EpiloguesSetting() { tg::cuda::detail::set_gemm_epilogues(previous); }
};

/// Whether the CUDA backend runs on the CUDA emulator, whose cuBLASLt folds every float32 and float64
/// bias (a GPU's may refuse a configuration: Note [cuBLASLt epilogues]).
bool on_emulator() { return tg::cuda::info().find("CUDA emulator") != std::string::npos; }
}  // namespace

// Per step: forward fc1 and fc2 (a GEMM each, with their bias folded in), relu, the cross-entropy
// (one launch with its mean); backward the cross-entropy, fc2's weight gradient with its bias gradient
// folded in, fc2's input gradient, relu's, fc1's weight gradient with its bias gradient folded in; one
// fused SGD launch. Without the epilogues each bias is a launch of its own forward, and each bias
// gradient a column sum: one launch at batch 64, two (the split column sum's second pass) at 1024.
TEST_CASE("cuda: one training step of the tutorial MLP queues 11 launches at batch 64 and 1024 (15 and 17 unfolded)") {
  TG_NEED_CUDA();
  for (bool momentum : {false, true}) {
    CAPTURE(momentum);
    for (int64_t batch : {64, 1024}) {
      CAPTURE(batch);
      uint64_t folded = 0, unfolded = 0;
      {
        EpiloguesSetting on(true);
        folded = mlp_step_launches(batch, momentum);
      }
      {
        EpiloguesSetting off(false);
        unfolded = mlp_step_launches(batch, momentum);
      }
      MESSAGE("MLP step (batch " << batch << ", SGD momentum " << (momentum ? 0.9 : 0.0) << "): " << folded
                                 << " launches with the bias folded into the GEMMs, " << unfolded << " without");
      CHECK(folded == 11);
      CHECK(unfolded == (batch == 64 ? 15u : 17u));
    }
  }
}

namespace {
/// The most launches one pre-norm block may queue, forward and backward (see the case below): 10
/// forward (2 layer_norms, 4 GEMMs with their bias, attention reading q, k and v in place, gelu, 2
/// residual adds) and 27 backward (the GEMMs' input and weight gradients with the bias gradients
/// folded in, 2 x 2 for the layer_norms, attention's 2, gelu's, the residual and the q, k, v gradients'
/// sums, and the copy that makes the packed qkv gradient contiguous).
constexpr uint64_t kBlockLaunchBudget = 37;

/// GPT-2's pre-norm block: x + proj(attention(qkv(ln1(x)))), then h + fc2(gelu(fc1(ln2(h)))), with
/// causal scaled_dot_product_attention over `heads` heads, as examples/models.h writes it.
struct PreNormBlock : tg::nn::Module {
  tg::nn::LayerNorm ln1, ln2;
  tg::nn::Linear qkv, proj, fc1, fc2;
  int64_t heads;
  PreNormBlock(int64_t d, int64_t h)
      : ln1(std::vector<int64_t>{d}), ln2(std::vector<int64_t>{d}), qkv(d, 3 * d), proj(d, d), fc1(d, 4 * d),
        fc2(4 * d, d), heads(h) {
    register_module("ln1", ln1);
    register_module("ln2", ln2);
    register_module("qkv", qkv);
    register_module("proj", proj);
    register_module("fc1", fc1);
    register_module("fc2", fc2);
  }
  Tensor forward(const Tensor& x) override {
    const int64_t B = x.size(0), L = x.size(1), D = x.size(2);
    const Tensor all = qkv(ln1(x).reshape({B * L, D})).reshape({B, L, 3, heads, D / heads}).permute({2, 0, 3, 1, 4});
    const Tensor y = tg::scaled_dot_product_attention(all.select(0, 0), all.select(0, 1), all.select(0, 2), {}, 0.0, true);
    const Tensor h = x + proj(y.transpose(1, 2).reshape({B * L, D})).reshape({B, L, D});
    return h + fc2(tg::gelu(fc1(ln2(h).reshape({B * L, D})))).reshape({B, L, D});
  }
};
}  // namespace

// The launch budget of a transformer: every launch of one pre-norm block's forward and of its backward
// (the second pass: the first allocates). Today's count is the bound, so a change that adds launches
// fails here and says how many; the kernels the count is made of are listed with
// TG_CUDA_EMULATE_TRACE=1 on the emulator. Nothing of the loss is counted: the upstream gradient is
// given to backward.
TEST_CASE("cuda: launches per pre-norm transformer block, forward and backward") {
  TG_NEED_CUDA();
  tg::manual_seed(3);
  PreNormBlock block(64, 4);
  block.to(kGpu);
  Tensor x = tg::randn({2, 16, 64}).to(kGpu).requires_grad_(true);
  const Tensor up = tg::randn({2, 16, 64}).to(kGpu);
  uint64_t forward = 0, backward = 0;
  for (int pass = 0; pass < 2; ++pass) {
    block.zero_grad();
    x.zero_grad();
    tg::cuda::synchronize();
    uint64_t before = tg::cuda::detail::launch_count();
    const Tensor y = block(x);
    forward = tg::cuda::detail::launch_count() - before;
    before = tg::cuda::detail::launch_count();
    y.backward(up);
    backward = tg::cuda::detail::launch_count() - before;
    CHECK(x.grad().defined());
  }
  MESSAGE("pre-norm transformer block (float32, batch 2 x 16 tokens, width 64, 4 heads): " << forward
          << " launches forward, " << backward << " backward, " << forward + backward << " in all");
  CHECK(forward + backward <= kBlockLaunchBudget);
}

// Note [Bias folded into the GEMM]: linear's forward with its bias, and its weight gradient with the
// bias gradient, are one cuBLASLt launch each; with the epilogues off (as without cuBLASLt) the same
// results come from the cuBLAS GEMM and a bias pass. Both paths against the CPU, in every floating
// dtype, at batch 1 and with a tall input (the column sum's two passes), for each layout of x and W.
TEST_CASE("cuda: linear folds its bias and bias gradient into the GEMM, matching the CPU and the unfolded path") {
  TG_NEED_CUDA();
  const bool emulated = on_emulator();
  for (tg::DType dt : {tg::kFloat32, tg::kFloat64, tg::kFloat16, tg::kBFloat16}) {
    const std::string dtype = tg::dtype_name(dt);
    CAPTURE(dtype);
    const Tolerance tol = tolerance(dt, Tol::Reduction);
    for (int64_t rows : {1, 7, 1500}) {
      CAPTURE(rows);
      for (int layout = 0; layout < 4; ++layout) {
        const bool x_t = (layout & 1) != 0, w_t = (layout & 2) != 0;   // stored transposed, used as a view
        CAPTURE(x_t);
        CAPTURE(w_t);
        for (bool with_bias : {true, false}) {
          CAPTURE(with_bias);
          const uint64_t seed = 1000 + 10 * static_cast<uint64_t>(rows) + static_cast<uint64_t>(layout);
          const Input x = x_t ? transposed(rows, 33, seed, dt) : normal({rows, 33}, seed, dt);
          const Input w = w_t ? transposed(17, 33, seed + 1, dt) : normal({17, 33}, seed + 1, dt);
          const Input b = normal({17}, seed + 2, dt);
          const RawTensor up = randn_t({rows, 17}, seed + 3, dt);   // the upstream gradient
          struct Result {
            Tensor y, dx, dw, db;
            uint64_t forward = 0, backward = 0;
          };
          auto run = [&](Device d) {
            Result r;
            Tensor xv = x.on(d), wv = w.on(d), bv = with_bias ? b.on(d) : Tensor();
            const Tensor upv(up.to(d));
            tg::cuda::synchronize();
            uint64_t before = tg::cuda::detail::launch_count();
            r.y = tg::linear(xv, wv, bv);
            r.forward = tg::cuda::detail::launch_count() - before;
            const Tensor loss = tg::sum(r.y * upv);
            tg::cuda::synchronize();
            before = tg::cuda::detail::launch_count();
            loss.backward();
            r.backward = tg::cuda::detail::launch_count() - before;
            r.dx = xv.grad();
            r.dw = wv.grad();
            if (with_bias) r.db = bv.grad();
            return r;
          };
          const Result cpu = run(kCpu);
          Result folded, unfolded;
          {
            EpiloguesSetting on(true);
            folded = run(kGpu);
          }
          {
            EpiloguesSetting off(false);
            unfolded = run(kGpu);
          }
          for (const Result* r : {&folded, &unfolded}) {
            check_same(r->y, cpu.y, tol.rtol, tol.atol);
            check_same(r->dx, cpu.dx, tol.rtol, tol.atol);
            check_same(r->dw, cpu.dw, tol.rtol, tol.atol);
            if (with_bias) check_same(r->db, cpu.db, tol.rtol, tol.atol);
          }
          if (!with_bias) {   // nothing to fold: the same launches either way
            CHECK(folded.forward == unfolded.forward);
            CHECK(folded.backward == unfolded.backward);
          } else if (dt == tg::kFloat32 || emulated) {
            // One launch forward instead of two; backward, the bias gradient's pass disappears. The
            // 16-bit dtypes too: cuBLASLt in their own dtype (Note [16-bit GEMMs on CUDA]). At batch 1
            // the weight gradient's GEMM has K = 1, for which the H200's cuBLASLt 13.1 offers no
            // float32 BGRADB algorithm (seen by tools/gpu_check.sh): there the GEMM and the bias pass
            // run apart (Note [cuBLASLt epilogues]), with the results checked above.
            CHECK(folded.forward == 1);
            CHECK(unfolded.forward == 2);
            if (rows > 1 || emulated)
              CHECK(folded.backward < unfolded.backward);
            else
              CHECK(folded.backward <= unfolded.backward);
          } else {
            CHECK(folded.forward <= unfolded.forward);
            CHECK(folded.backward <= unfolded.backward);
          }
        }
      }
    }
  }
}

TEST_CASE("cuda: float16 and bfloat16 products run in cuBLAS in their own dtype, one launch each") {
  TG_NEED_CUDA();
  // Note [16-bit GEMMs on CUDA]: no conversion launches around the GEMM (the CPU converts to float32,
  // multiplies and rounds once; cuBLAS accumulates in float32 and rounds once). Plain, transposed,
  // batched and broadcast-batched products, against the CPU within the reduction tolerance.
  for (tg::DType dt : {tg::kFloat16, tg::kBFloat16}) {
    const std::string dtype = tg::dtype_name(dt);
    CAPTURE(dtype);
    const Tolerance tol = tolerance(dt, Tol::Reduction);
    const RawTensor a = randn_t({5, 33}, 501, dt), b = randn_t({33, 17}, 502, dt), bt = randn_t({17, 33}, 503, dt);
    const RawTensor a3 = randn_t({3, 5, 33}, 504, dt), b3 = randn_t({3, 33, 17}, 505, dt);
    struct Case {
      const char* what;
      RawTensor x, y;
      bool transpose_y;
    };
    const Case cases[] = {{"plain", a, b, false}, {"transposed operand", a, bt, true},
                          {"batched", a3, b3, false}, {"batch times one matrix", a3, b, false}};
    for (const Case& c : cases) {
      CAPTURE(c.what);
      const RawTensor yc = c.transpose_y ? c.y.transpose(0, 1) : c.y;
      const RawTensor xg = c.x.to(kGpu), yg_stored = c.y.to(kGpu);
      const RawTensor yg = c.transpose_y ? yg_stored.transpose(0, 1) : yg_stored;
      tg::cuda::synchronize();
      const uint64_t before = tg::cuda::detail::launch_count();
      const RawTensor out = tg::prim::matmul(xg, yg);
      CHECK(tg::cuda::detail::launch_count() - before == 1);
      CHECK(out.dtype() == dt);
      check_same(Tensor(out), Tensor(tg::prim::matmul(c.x, yc)), tol.rtol, tol.atol);
    }
  }
}

TEST_CASE("cuda: round_to_precision gives the CPU's bits") {
  TG_NEED_CUDA();
  // fn::RoundToBFloat16 / RoundToFloat16 (Note [Autocast products through float32] uses them on the
  // CPU): ties, half's overflow and subnormals, a NaN; the CUDA kernel runs the same functor.
  std::vector<float> v{1.00390625f, 1.01171875f, 1.0004883f, 1.0014648f, 65520.0f, -65519.99f, 2.9802322e-8f,
                       6.1e-5f, 3.0e38f, -0.0f, 1e-40f, std::numeric_limits<float>::infinity()};
  for (int i = 0; v.size() < 77; ++i) v.push_back(std::ldexp(std::sin(1.3 * i) + 1.25f, i % 30 - 15));
  RawTensor x = RawTensor::empty({static_cast<int64_t>(v.size())}, tg::kFloat32);
  std::copy(v.begin(), v.end(), x.data<float>());
  for (tg::DType lowp : {tg::kBFloat16, tg::kFloat16}) {
    const std::string dtype = tg::dtype_name(lowp);
    CAPTURE(dtype);
    const RawTensor cpu = tg::prim::round_to_precision(x, lowp);
    const RawTensor gpu = tg::prim::round_to_precision(x.to(kGpu), lowp).to(tg::Device::cpu());
    CHECK(std::memcmp(cpu.data<float>(), gpu.data<float>(), v.size() * sizeof(float)) == 0);
    const RawTensor round_trip = x.to(lowp).to(tg::kFloat32);
    CHECK(std::memcmp(cpu.data<float>(), round_trip.data<float>(), v.size() * sizeof(float)) == 0);
  }
}

TEST_CASE("cuda: one fused SGD step over more parameters than one launch holds matches the CPU") {
  TG_NEED_CUDA();
  // 30 parameters (the fused kernel takes 24 per launch), sizes from 0 to 4099, two learning rates
  std::vector<Tensor> wc, wg;
  for (int i = 0; i < 30; ++i) {
    const Tensor w = testing::randn64({(i * 137) % 4100}, 300 + i, false).to(tg::kFloat32);
    wc.push_back(Tensor(w.data().clone(), true));
    wg.push_back(Tensor(w.data().to(kGpu), true));
  }
  const auto groups = [](const std::vector<Tensor>& w) {
    return std::vector<tg::optim::ParamGroup>{{{w.begin(), w.begin() + 13}, std::nullopt}, {{w.begin() + 13, w.end()}, 0.05}};
  };
  const auto o = tg::optim::SGDOptions(0.1).momentum(0.9).weight_decay(1e-2);
  tg::optim::SGD oc(groups(wc), o), og(groups(wg), o);
  for (int step = 0; step < 3; ++step) {
    for (std::size_t i = 0; i < wc.size(); ++i) {
      (wc[i] * wc[i]).sum().backward();
      (wg[i] * wg[i]).sum().backward();
    }
    const uint64_t before = tg::cuda::detail::launch_count();
    oc.step();
    og.step();
    CHECK(tg::cuda::detail::launch_count() - before == 2);   // 29 non-empty parameters: two launches
    oc.zero_grad();
    og.zero_grad();
  }
  for (std::size_t i = 0; i < wc.size(); ++i) check_same(wg[i], wc[i], 1e-5, 1e-6);
}

TEST_CASE("cuda: one fused Adam step over more parameters than one launch holds matches the CPU") {
  TG_NEED_CUDA();
  // 30 parameters (the fused kernel takes 24 per launch), sizes from 0 to 4099, two learning rates;
  // every third parameter has no gradient on the second step, so the parameters' step counts (and
  // bias corrections) differ within one launch
  for (bool amsgrad : {false, true}) {
    CAPTURE(amsgrad);
    std::vector<Tensor> wc, wg;
    for (int i = 0; i < 30; ++i) {
      const Tensor w = testing::randn64({(i * 137) % 4100}, 400 + i, false).to(tg::kFloat32);
      wc.push_back(Tensor(w.data().clone(), true));
      wg.push_back(Tensor(w.data().to(kGpu), true));
    }
    const auto groups = [](const std::vector<Tensor>& w) {
      return std::vector<tg::optim::ParamGroup>{{{w.begin(), w.begin() + 13}, std::nullopt},
                                                {{w.begin() + 13, w.end()}, 0.05}};
    };
    const auto o = tg::optim::AdamOptions(0.01).weight_decay(1e-2).amsgrad(amsgrad);
    tg::optim::AdamW oc(groups(wc), o), og(groups(wg), o);
    for (int step = 0; step < 3; ++step) {
      int with_grad = 0;
      for (std::size_t i = 0; i < wc.size(); ++i) {
        if (step == 1 && i % 3 == 0) continue;
        (wc[i] * wc[i] * (1.0 + step)).sum().backward();
        (wg[i] * wg[i] * (1.0 + step)).sum().backward();
        with_grad += wc[i].numel() > 0;
      }
      const uint64_t before = tg::cuda::detail::launch_count();
      oc.step();
      og.step();
      // After the first step (which also fills the new state with zeros): one launch per 24
      // non-empty parameters with a gradient, 20 -> 1 and 29 -> 2
      if (step > 0) CHECK(tg::cuda::detail::launch_count() - before == static_cast<uint64_t>((with_grad + 23) / 24));
      oc.zero_grad();
      og.zero_grad();
    }
    for (std::size_t i = 0; i < wc.size(); ++i) check_same(wg[i], wc[i], 1e-5, 1e-6);
  }
}

TEST_CASE("cuda: the fused LSTM and GRU cells are one launch forward and one backward") {
  TG_NEED_CUDA();
  const Tensor xg(randn_t({20, 1024}, 511, tg::kFloat32).to(kGpu), true), hg(randn_t({20, 1024}, 512, tg::kFloat32).to(kGpu), true);
  const Tensor c(randn_t({20, 256}, 513, tg::kFloat32).to(kGpu), true);
  uint64_t before = tg::cuda::detail::launch_count();
  (void)tg::fused_lstm_cell(xg, hg, c);
  CHECK(tg::cuda::detail::launch_count() - before == 1);   // h' and c' are views of one result
  const tg::prim::LstmCell f = tg::prim::lstm_cell(xg.data(), hg.data(), c.data());
  const RawTensor dhc = randn_t({2, 20, 256}, 514, tg::kFloat32).to(kGpu);
  before = tg::cuda::detail::launch_count();
  const tg::prim::LstmCellGrads d = tg::prim::lstm_cell_backward(dhc, c.data(), f.ws);
  CHECK(tg::cuda::detail::launch_count() - before == 1);
  check_same(Tensor(d.dgates), Tensor(tg::prim::lstm_cell_backward(dhc.to(kCpu), c.data().to(kCpu), f.ws.to(kCpu)).dgates),
             1e-5, 1e-6);
  const Tensor gx(randn_t({20, 768}, 515, tg::kFloat32).to(kGpu), true), gh(randn_t({20, 768}, 516, tg::kFloat32).to(kGpu), true);
  before = tg::cuda::detail::launch_count();
  const Tensor hy = tg::fused_gru_cell(gx, gh, c);
  CHECK(tg::cuda::detail::launch_count() - before == 1);
  const tg::prim::GruCell gf = tg::prim::gru_cell(gx.data(), gh.data(), c.data());
  before = tg::cuda::detail::launch_count();
  (void)tg::prim::gru_cell_backward(hy.data(), c.data(), gf.ws);
  CHECK(tg::cuda::detail::launch_count() - before == 1);
}

TEST_CASE("cuda: a fused LSTM or GRU layer launches two kernels per step forwards and three backwards") {
  TG_NEED_CUDA();
  // Note [Fused recurrent layer]: per step, the recurrent GEMM with its bias and the cell; backwards,
  // the add of the output's gradient, the cell's backward and the GEMM of dh_prev. The difference
  // between 16 and 8 steps leaves out what a layer launches once (copies of the states, W_hh's
  // gradient, the losses).
  using tg::detail::CellKind;
  for (CellKind k : {CellKind::Lstm, CellKind::Gru}) {
    CAPTURE(static_cast<int>(k));
    const int64_t B = 4, H = 8, G = (k == CellKind::Lstm ? 4 : 3) * H;
    auto launches = [&](int64_t T) {
      const Tensor xp(randn_t({T * B, G}, 521, tg::kFloat32).to(kGpu), true);
      const Tensor h0(randn_t({B, H}, 522, tg::kFloat32).to(kGpu), true), c0(randn_t({B, H}, 523, tg::kFloat32).to(kGpu));
      const Tensor w(randn_t({G, H}, 524, tg::kFloat32).to(kGpu), true), b(randn_t({G}, 525, tg::kFloat32).to(kGpu), true);
      const uint64_t before = tg::cuda::detail::launch_count();
      auto [y, hn, cn] = tg::detail::recurrent_layer(k, xp, std::vector<int64_t>(static_cast<std::size_t>(T), B), h0,
                                                     k == CellKind::Lstm ? c0 : Tensor(), w, b, Tensor(), false);
      const uint64_t forward = tg::cuda::detail::launch_count() - before;
      const Tensor loss = tg::sum(y) + tg::sum(hn);
      const uint64_t mid = tg::cuda::detail::launch_count();
      (void)tg::autograd::grad({loss}, {xp, h0, w, b});
      return std::pair<uint64_t, uint64_t>{forward, tg::cuda::detail::launch_count() - mid};
    };
    const auto [f8, b8] = launches(8);
    const auto [f16, b16] = launches(16);
    CHECK(f16 - f8 == 2 * 8);
    CHECK(b16 - b8 == 3 * 8);
  }
}

// The CUDA emulator's counter of device-to-host copies (tests/cuda_emulator/runtime.cpp); absent on a GPU.
extern "C" unsigned long long tg_cuda_emulator_device_to_host_copies() __attribute__((weak));

/// ctc_loss's batch for the device tests: log_probs (T, 6, 7) of dtype dt (a log_softmax of seeded
/// normals), the entries' lengths and targets, padded (6, 5) or concatenated: repeated labels (entries
/// 0 and 5), an impossible alignment (entry 1: three equal labels need 5 steps, it has 3), input length
/// 0 with a label (inf) and without (0), an empty target.
struct CtcBatch {
  RawTensor lp;
  Tensor padded, concatenated;
  std::vector<int64_t> il, tl;
};
CtcBatch ctc_batch(int64_t T, tg::DType dt, uint64_t seed) {
  CtcBatch b;
  b.lp = tg::log_softmax(Tensor(randn_t({T, 6, 7}, seed, tg::kFloat64)), -1).data().to(dt);
  const std::vector<std::vector<int64_t>> targets = {{1, 2, 2, 3}, {4, 4, 4}, {5}, {}, {}, {5, 1, 5, 1, 3}};
  b.il = {T, 3, 0, 0, T - 2, T - 1};
  std::vector<int64_t> padded(6 * 5, 6), concatenated;   // padding: a valid class, never read
  for (std::size_t e = 0; e < targets.size(); ++e) {
    b.tl.push_back(static_cast<int64_t>(targets[e].size()));
    for (std::size_t i = 0; i < targets[e].size(); ++i) {
      padded[e * 5 + i] = targets[e][i];
      concatenated.push_back(targets[e][i]);
    }
  }
  b.padded = tg::from_vector(padded, {6, 5});
  b.concatenated = tg::from_vector(concatenated);
  return b;
}

TEST_CASE("cuda: ctc_loss computes on the device: no copy to the host, one launch each for alpha and the gradient") {
  TG_NEED_CUDA();
  using tg::Reduction;
  // the op: no device-to-host copy for the loss and its gradient rule (a CPU round trip of the data
  // makes several), and a launch count that does not grow with T (the recursions loop over t inside
  // one launch, Note [ctc_loss] in kernels/ctc.h)
  std::vector<uint64_t> launches;
  for (int64_t T : {12, 40}) {
    const CtcBatch b = ctc_batch(T, tg::kFloat32, 801);
    const Tensor lp(b.lp.to(kGpu), true);
    const Tensor tgt = b.padded.to(kGpu);
    tg::cuda::synchronize();
    const unsigned long long copies =
        tg_cuda_emulator_device_to_host_copies != nullptr ? tg_cuda_emulator_device_to_host_copies() : 0;
    const uint64_t before = tg::cuda::detail::launch_count();
    const Tensor loss = tg::ctc_loss(lp, tgt, b.il, b.tl, 0, Reduction::Mean, true);
    loss.backward();
    launches.push_back(tg::cuda::detail::launch_count() - before);
    if (tg_cuda_emulator_device_to_host_copies != nullptr) CHECK(tg_cuda_emulator_device_to_host_copies() == copies);
    CHECK(std::isfinite(loss.item<double>()));
    // the counter sees a copy: item() makes one
    if (tg_cuda_emulator_device_to_host_copies != nullptr) CHECK(tg_cuda_emulator_device_to_host_copies() > copies);
  }
  CHECK(launches[0] == launches[1]);
  // the kernels themselves: one launch for the forward, one for the rule
  const CtcBatch b = ctc_batch(12, tg::kFloat64, 802);
  std::vector<int64_t> len(b.il);
  len.insert(len.end(), b.tl.begin(), b.tl.end());
  for (int64_t e = 0; e < 6; ++e) len.push_back(e * 5);
  tg::CtcArgs args;
  args.T = 12;
  args.N = 6;
  args.C = 7;
  args.S = 5;
  const RawTensor lengths = tg::from_vector(len, {3, 6}).data().to(kGpu), lp = b.lp.to(kGpu), tgt = b.padded.data().to(kGpu);
  uint64_t before = tg::cuda::detail::launch_count();
  const tg::prim::CtcLoss f = tg::prim::ctc_loss(lp, tgt, lengths, args);
  CHECK(tg::cuda::detail::launch_count() - before == 1);
  before = tg::cuda::detail::launch_count();
  const RawTensor rule = tg::prim::ctc_loss_backward(lp, tgt, lengths, f, args);
  CHECK(tg::cuda::detail::launch_count() - before == 1);
  const tg::prim::CtcLoss fc = tg::prim::ctc_loss(b.lp, b.padded.data(), lengths.to(kCpu), args);
  check_same(Tensor(f.nll), Tensor(fc.nll), 1e-11, 1e-12);
  check_same(Tensor(rule), Tensor(tg::prim::ctc_loss_backward(b.lp, b.padded.data(), lengths.to(kCpu), fc, args)), 1e-11,
             1e-12);
  // a bad label is found by the kernel and raised at the next sync, as the CPU's IndexError
  const Tensor bad = tg::from_vector(std::vector<int64_t>{1, 2, 7, 3, 0, 0}, {2, 3}).to(kGpu);
  const Tensor small = Tensor(b.lp.to(kGpu)).narrow(1, 0, 2);
  TG_CHECK_THROWS(tg::ctc_loss(small, bad, std::vector<int64_t>{12, 12}, std::vector<int64_t>{3, 1}).item<double>(),
                  tg::IndexError, "ctc_loss: target 7 of batch entry 0 (position 2) is out of range for 7 classes");
  TG_CHECK_THROWS(tg::ctc_loss(small, bad, std::vector<int64_t>{12, 12}, std::vector<int64_t>{2, 2}).item<double>(),
                  tg::IndexError, "target 0 of batch entry 1 (position 1) is out of range for 7 classes or equal to blank 0");
  CHECK(std::isfinite(tg::ctc_loss(small, bad, std::vector<int64_t>{12, 12}, std::vector<int64_t>{2, 1}).item<double>()));
}

TEST_CASE("cuda: multinomial with replacement draws on the device in one launch, the CPU's categories") {
  TG_NEED_CUDA();
  // The kernel runs the CPU's arithmetic (Note [Drawing categories in one pass] in
  // backend/cpu/random.cpp), so the same uniforms give the same categories: rows of many 64-weight
  // blocks and a partial last one, a third of the weights 0 (never drawn), a row whose only weights
  // are its last two, in float32 and float64.
  for (tg::DType dt : {tg::kFloat32, tg::kFloat64}) {
    CAPTURE(tg::dtype_name(dt));
    tg::manual_seed(900);
    const Tensor r = tg::rand({3, 10007}, tg::TensorOptions().dtype(dt));
    Tensor w = tg::where(r > 0.33, r, tg::zeros_like(r));
    std::vector<double> last(10007, 0.0);
    last[10005] = 1;
    last[10006] = 3;
    w = tg::cat({w, tg::from_vector(last, {1, 10007}).to(dt)}, 0);
    tg::manual_seed(901);
    const std::vector<int64_t> cpu = tg::multinomial(w, 1000, true).to_vector<int64_t>();
    tg::manual_seed(901);
    const std::vector<int64_t> gpu = tg::multinomial(w.to(kGpu), 1000, true).to_vector<int64_t>();
    CHECK(gpu == cpu);
    const std::vector<double> wv = w.to_vector<double>();
    bool positive = true;
    for (std::size_t i = 0; i < gpu.size(); ++i) positive = positive && wv[(i / 1000) * 10007 + std::size_t(gpu[i])] > 0;
    CHECK(positive);
    // the backend's part: one launch for any number of rows, draws and weights
    const RawTensor p = w.data().to(kGpu), u = tg::rand({4, 1000}, tg::TensorOptions().dtype(tg::kFloat64)).data().to(kGpu);
    const RawTensor out = RawTensor::empty({4, 1000}, tg::kInt64, kGpu), status = RawTensor::empty({4}, tg::kInt64, kGpu);
    const uint64_t before = tg::cuda::detail::launch_count();
    CHECK(tg::backend_for(kGpu).sample_categories(p, u, out, status));
    CHECK(tg::cuda::detail::launch_count() - before == 1);
    CHECK(Tensor(status).to_vector<int64_t>() == std::vector<int64_t>{0, 0, 0, 0});
  }
  // bad rows are found by the kernel and raised as on the CPU
  const Tensor nan_row = tg::from_vector(std::vector<double>{0.5, 1.0, std::nan(""), 1.0}, {2, 2}).to(kGpu);
  TG_CHECK_THROWS(tg::multinomial(nan_row, 3, true), tg::Error, "probability tensor contains either `inf`, `nan` or element < 0");
  const Tensor negative = tg::from_vector(std::vector<double>{0.5, -1.0, 2.0}, {3}).to(kGpu);
  TG_CHECK_THROWS(tg::multinomial(negative, 3, true), tg::Error, "probability tensor contains either `inf`, `nan` or element < 0");
  const Tensor zero_row = tg::from_vector(std::vector<double>{0.5, 1.0, 0.0, 0.0}, {2, 2}).to(kGpu);
  TG_CHECK_THROWS(tg::multinomial(zero_row, 3, true), tg::Error, "invalid multinomial distribution (sum of probabilities <= 0)");
}

TEST_CASE("cuda: ctc_loss on the device matches the CPU: values and gradients, every reduction, zero_infinity") {
  TG_NEED_CUDA();
  using tg::Reduction;
  // Both backends compute in float64 in the same order (kernels/ctc.h); they differ only where the
  // device's exp and log1p differ from libm's (at most a few ulp each), an error that grows with the
  // T = 12 steps of a recursion: about 12 * 4 * 2^-53 * |alpha| <= 4e-13 in log space for |alpha| <= 40,
  // so float64 values and gradients within rtol 1e-11 (25x that) and atol 1e-12. A float32 result is
  // that float64 value rounded once: one float32 ulp (2^-23 relative) at most between the devices.
  for (tg::DType dt : {tg::kFloat64, tg::kFloat32}) {
    const double rtol = dt == tg::kFloat64 ? 1e-11 : std::ldexp(1.0, -23) + 1e-11, atol = 1e-12;
    const CtcBatch b = ctc_batch(12, dt, 803);
    const RawTensor w = randn_t({6}, 804, tg::kFloat64).to(dt);   // the gradient of the none reduction's losses
    for (Reduction red : {Reduction::None, Reduction::Mean, Reduction::Sum}) {
      for (bool zero_infinity : {false, true}) {
        for (bool concatenated : {false, true}) {
          CAPTURE(tg::dtype_name(dt));
          CAPTURE(static_cast<int>(red));
          CAPTURE(zero_infinity);
          CAPTURE(concatenated);
          const Tensor& targets = concatenated ? b.concatenated : b.padded;
          auto run = [&](Device d) {
            const Tensor lp(b.lp.to(d), true);
            const Tensor loss = tg::ctc_loss(lp, targets.to(d), b.il, b.tl, 0, red, zero_infinity);
            (red == Reduction::None ? tg::sum(loss * Tensor(w.to(d))) : loss * 1.5).backward();
            return std::make_pair(loss, lp.grad());
          };
          const auto cpu = run(kCpu), gpu = run(kGpu);
          REQUIRE(gpu.first.device() == kGpu);
          REQUIRE(gpu.second.device() == kGpu);
          check_same(gpu.first, cpu.first, rtol, atol);
          check_same(gpu.second, cpu.second, rtol, atol);
          // the cases the batch is built for, on the device: inf (or 0) for entries 1 and 2, 0 for 3,
          // zero rows past each input length, NaN rows of an impossible entry without zero_infinity
          if (red == Reduction::None) {
            const std::vector<double> l = gpu.first.to_vector<double>();
            CHECK(l[1] == (zero_infinity ? 0.0 : INFINITY));
            CHECK(l[2] == (zero_infinity ? 0.0 : INFINITY));
            CHECK(l[3] == 0.0);
            CHECK(std::isfinite(l[0]));
            CHECK(std::isfinite(l[4]));
          }
          const Tensor g = gpu.second.to(kCpu);
          CHECK(tg::sum(tg::abs(g.narrow(0, 3, 9).narrow(1, 1, 1))).item<double>() == 0.0);   // entry 1, t >= 3
          CHECK(std::isnan(g.narrow(1, 1, 1).narrow(0, 0, 3).sum().item<double>()) == !zero_infinity);
          CHECK(tg::sum(tg::abs(g.narrow(1, 2, 2))).item<double>() == 0.0);   // input length 0
        }
      }
    }
    // unbatched (T, C) with int32 targets (widened on the device) and the lengths as CPU tensors
    const Tensor one = tg::from_vector(std::vector<int32_t>{5, 1, 5, 1, 3});
    auto run = [&](Device d) {
      const Tensor lp(Tensor(b.lp).select(1, 5).to(d).data(), true);
      const Tensor loss = tg::ctc_loss(lp, one.to(d), tg::from_vector(std::vector<int64_t>{11}, {}),
                                       tg::from_vector(std::vector<int64_t>{5}, {}), 0, Reduction::Mean);
      loss.backward();
      return std::make_pair(loss, lp.grad());
    };
    const auto cpu = run(kCpu), gpu = run(kGpu);
    CHECK(gpu.first.dim() == 0);
    check_same(gpu.first, cpu.first, rtol, atol);
    check_same(gpu.second, cpu.second, rtol, atol);
  }
}

TEST_CASE("cuda: LSTM and GRU on the device match the CPU, outputs and gradients, padded and packed") {
  TG_NEED_CUDA();
  // the recurrent layers: linears, the fused cells (ops/rnn.cpp), views and cat: the same module on both
  // devices, bidirectional over two layers, forward and backward through time
  tg::manual_seed(31);
  tg::nn::LSTM lstm(tg::nn::LSTMOptions(5, 6).num_layers(2).bidirectional(true).batch_first(true));
  tg::nn::GRU gru(tg::nn::GRUOptions(5, 6).num_layers(2));
  const RawTensor x = randn_t({3, 7, 5}, 501, tg::kFloat32), w = randn_t({3, 7, 12}, 502, tg::kFloat32);
  auto run_lstm = [&](Device d) {
    lstm.to(d);
    lstm.zero_grad();
    Tensor xi(x.to(d), true);
    auto [y, state] = lstm.forward(xi);
    tg::sum(y * Tensor(w.to(d))).backward();
    return std::vector<Tensor>{y, std::get<0>(state), std::get<1>(state), xi.grad(),
                               lstm.named_parameters()[0].second.grad()};
  };
  const std::vector<Tensor> c = run_lstm(kCpu), g = run_lstm(kGpu);
  for (std::size_t i = 0; i < c.size(); ++i) {
    CAPTURE(i);
    check_same(g[i], c[i], 1e-4, 1e-5);
  }
  auto run_gru = [&](Device d) {
    gru.to(d);
    gru.zero_grad();
    Tensor xi(x.to(d).transpose(0, 1).contiguous(), true);   // (7, 3, 5): sequence first
    auto [y, h] = gru.forward(xi);
    tg::sum(y).backward();
    return std::vector<Tensor>{y, h, xi.grad(), gru.named_parameters()[1].second.grad()};
  };
  const std::vector<Tensor> cg = run_gru(kCpu), gg = run_gru(kGpu);
  for (std::size_t i = 0; i < cg.size(); ++i) {
    CAPTURE(i);
    check_same(gg[i], cg[i], 1e-4, 1e-5);
  }
  // packed input, unsorted lengths (sorted_indices and unsorted_indices on the device): the packed
  // output, the final states at each sequence's own end, the input's gradient through packing
  auto run_packed = [&](Device d) {
    lstm.to(d);
    lstm.zero_grad();
    Tensor xi(x.to(d), true);   // (3, 7, 5) batch first
    const tg::nn::utils::rnn::PackedSequence packed =
        tg::nn::utils::rnn::pack_padded_sequence(xi, std::vector<int64_t>{4, 7, 2}, true, false);
    auto [y, state] = lstm.forward_with_packed_input(packed);
    const Tensor padded = std::get<0>(tg::nn::utils::rnn::pad_packed_sequence(y, true));
    tg::sum(padded * Tensor(w.to(d))).backward();
    return std::vector<Tensor>{y.data(), std::get<0>(state), std::get<1>(state), xi.grad(),
                               lstm.named_parameters()[0].second.grad()};
  };
  const std::vector<Tensor> cp = run_packed(kCpu), gp = run_packed(kGpu);
  for (std::size_t i = 0; i < cp.size(); ++i) {
    CAPTURE(i);
    check_same(gp[i], cp[i], 1e-4, 1e-5);
  }
}
