// tests/testing.h: helpers shared by the suites: seeded inputs and closeness checks.
#pragma once
#include <doctest/doctest.h>
#include <tensorgrad.h>

#include "tensorgrad/prim/prim.h"

#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <vector>

namespace testing {

/// Runs this test binary again through the shell as `<env> <binary> --test-case='<pattern>'`, with
/// `<prefix>` (e.g. "ulimit -s N &&") first, and returns what it printed (stdout and stderr): how
/// tests check behaviour that is fixed when a process starts (environment variables, limits).
inline std::string run_self(const std::string& prefix, const std::string& env, const std::string& pattern) {
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  const std::string cmd = prefix + " " + env + " '" + self + "' --test-case='" + pattern + "' 2>&1";
  std::FILE* p = ::popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::string out;
  char buf[512];
  while (std::fgets(buf, sizeof buf, p) != nullptr) out += buf;
  ::pclose(p);
  return out;
}

/// float64 standard-normal leaf (requires grad), seeded so every run sees the same values.
inline tg::Tensor randn64(const tg::Shape& shape, uint64_t seed, bool requires_grad = true) {
  tg::manual_seed(seed);
  return tg::randn(shape, tg::TensorOptions().dtype(tg::kFloat64).requires_grad(requires_grad));
}

/// float64 leaf with |values| in [lo, lo + |randn|): away from kinks (abs, relu) or positive (log).
inline tg::Tensor away_from_zero(const tg::Shape& shape, uint64_t seed, double lo, bool positive) {
  tg::Tensor x = randn64(shape, seed, false);
  tg::Tensor y;
  {
    tg::NoGradGuard g;
    y = tg::abs(x) + lo;
    if (!positive) y = tg::where(x > 0.0, y, -y);
  }
  return tg::Tensor(y.data().clone(), true);
}

/// Leaf whose data is a non-contiguous (transposed) view of a fresh tensor of shape {cols, rows}.
inline tg::Tensor transposed64(int64_t rows, int64_t cols, uint64_t seed) {
  tg::Tensor base = randn64({cols, rows}, seed, false);
  return tg::Tensor(base.data().transpose(0, 1), true);
}

/// Restores the CPU code path (Note [CPU capabilities]) the guard was made on when it dies, also when
/// a check throws; the test may switch paths while it lives.
struct CpuCapabilityGuard {
  tg::CpuCapability saved = tg::cpu_capability();
  CpuCapabilityGuard() = default;
  ~CpuCapabilityGuard() { tg::set_cpu_capability(saved); }
  CpuCapabilityGuard(const CpuCapabilityGuard&) = delete;
  CpuCapabilityGuard& operator=(const CpuCapabilityGuard&) = delete;
};

/// While alive, the CPU runs bfloat16 products through float32 (Note [Low precision through float32]
/// in prim/blas.cpp) also where its backend multiplies bfloat16 itself (Note [bfloat16 GEMMs through
/// oneDNN] in backend/cpu/blas.cpp): the CPU code path drops from avx512 to avx2 for the guard's life
/// (every AVX-512 CPU runs AVX2), and comes back after.
struct Bf16ProductsThroughFloat32 : CpuCapabilityGuard {
  Bf16ProductsThroughFloat32() {
    if (saved == tg::CpuCapability::Avx512) tg::set_cpu_capability(tg::CpuCapability::Avx2);
  }
};

/// Every element of a equal to b or within atol + rtol * |b| of it; NaN positions must match.
inline void check_close(const tg::Tensor& a, const tg::Tensor& b, double rtol = 1e-5, double atol = 1e-7) {
  REQUIRE(a.shape() == b.shape());
  const auto x = a.to_vector<double>(), y = b.to_vector<double>();
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(y[i])) {
      CHECK_MESSAGE(std::isnan(x[i]), "element " << i << ": expected NaN, got " << x[i]);
      continue;
    }
    if (x[i] == y[i]) continue;   // also equal infinities
    CHECK_MESSAGE(std::fabs(x[i] - y[i]) <= atol + rtol * std::fabs(y[i]),
                  "element " << i << ": " << x[i] << " vs " << y[i]);
  }
}

// ---- Note [Derived tolerances]: a float result that depends on the CPU code path (FMA contraction,
// Note [CPU capabilities]), on the thread split or on the BLAS kernel OpenBLAS picks for this CPU
// (blocking, summation order) is checked against a bound derived from the computation, never against
// one CPU's observed rounding. u is the unit roundoff (2^-24 for float32, half an ulp of 1); a sum or
// dot product of K terms in any order, blocked or with FMAs, is within gamma_K sum|terms| of the exact
// value, gamma_K = K u / (1 - K u) (Higham, Accuracy and Stability of Numerical Algorithms, 3.1). Two
// computations that each meet a bound b differ by at most 2 b; a float64 reference adds its own bound.

/// Unit roundoff of a floating dtype: 2^-24 for float32, 2^-53 for float64, 2^-11 for float16, 2^-8
/// for bfloat16.
inline double unit_roundoff(tg::DType d) {
  return d == tg::kFloat32 ? 0x1p-24 : d == tg::kFloat16 ? 0x1p-11 : d == tg::kBFloat16 ? 0x1p-8 : 0x1p-53;
}

/// fn::exp's accuracy in ulps on every CPU code path (Note [Vectorizable exp]): 1 without FMA
/// contraction (baseline), 1.02 with it (AVX2, AVX-512: a 20M-point sweep peaks at 1.0152 ulp). An FMA
/// is exactly rounded, so a path gives the same bits on every CPU that runs it.
constexpr double kExpUlps = 1.02;
/// The same as a relative error: one ulp of a normal float is at most 2u of its value.
inline double exp_relative_error() { return 2 * kExpUlps * unit_roundoff(tg::kFloat32); }

/// gamma_K = K u / (1 - K u): the relative bound on K roundings.
inline double gamma_n(int64_t K, tg::DType d) {
  const double ku = static_cast<double>(K) * unit_roundoff(d);
  return ku / (1 - ku);
}

/// Per element of matmul(a, b) computed in a's dtype (2-D, or batched like tg::matmul): the bound
/// gamma_K sum_k |a_ik| |b_kj| on its distance from the exact product of the stored inputs, for any
/// blocking, thread split, summation order or FMA use (K = a's last dim). A float64 tensor.
inline tg::Tensor gemm_error_bound(const tg::Tensor& a, const tg::Tensor& b) {
  tg::NoGradGuard no_grad;
  const int64_t K = a.shape().back();
  const tg::Tensor abs_a(tg::abs(a).data().to(tg::kFloat64)), abs_b(tg::abs(b).data().to(tg::kFloat64));
  return tg::matmul(abs_a, abs_b) * gamma_n(K, a.dtype());
}

/// |got - want| <= bound for every element (bound: a tensor of got's shape); NaN positions must match.
inline void check_within(const tg::Tensor& got, const tg::Tensor& want, const tg::Tensor& bound) {
  REQUIRE(got.shape() == want.shape());
  REQUIRE(bound.shape() == want.shape());
  const auto x = got.to_vector<double>(), y = want.to_vector<double>(), b = bound.to_vector<double>();
  int64_t reported = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(y[i])) {
      CHECK_MESSAGE(std::isnan(x[i]), "element " << i << ": expected NaN, got " << x[i]);
      continue;
    }
    if (x[i] == y[i]) continue;   // also equal infinities
    if (std::fabs(x[i] - y[i]) <= b[i]) continue;
    if (reported++ < 5)
      CHECK_MESSAGE(false, "element " << i << ": " << x[i] << " vs " << y[i] << ", |difference| "
                                      << std::fabs(x[i] - y[i]) << " above the derived bound " << b[i]);
  }
  CHECK_MESSAGE(reported == 0, reported << " elements outside the derived bound");
}

/// Every element of got within `ulps` units in the last place (of got's dtype, at want) of want.
inline void check_ulps(const tg::Tensor& got, const tg::Tensor& want, double ulps) {
  const bool f32 = got.dtype() == tg::kFloat32;
  const auto y = want.to_vector<double>();
  std::vector<double> b(y.size());
  for (std::size_t i = 0; i < y.size(); ++i) {
    const double a = std::fabs(y[i]);
    const double ulp = f32 ? double(std::nextafter(float(a), INFINITY)) - double(float(a))
                           : std::nextafter(a, INFINITY) - a;
    b[i] = ulps * (std::isfinite(ulp) ? ulp : 0.0);
  }
  check_within(got, want, tg::from_vector(b, want.shape()));
}

inline void check_values(const tg::Tensor& a, const std::vector<double>& expected, double tol = 1e-6) {
  const auto x = a.to_vector<double>();
  REQUIRE(x.size() == expected.size());
  for (std::size_t i = 0; i < x.size(); ++i)
    CHECK_MESSAGE(std::fabs(x[i] - expected[i]) <= tol, "element " << i << ": " << x[i] << " vs " << expected[i]);
}

/// A fresh folder under the system temp directory, removed with everything in it.
struct TempDir {
  std::string path;
  explicit TempDir(const std::string& prefix = "tg_test") {
    std::string tmpl = (std::filesystem::temp_directory_path() / (prefix + "_XXXXXX")).string();
    REQUIRE(::mkdtemp(&tmpl[0]) != nullptr);
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return path + "/" + name; }
  /// Names in the folder that look like a checkpoint writer's temporary files.
  std::vector<std::string> temp_files() const {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(path))
      if (e.path().filename().string().find(".tmp.") != std::string::npos) out.push_back(e.path().string());
    return out;
  }
};

/// A path under the system temp directory that no other test process uses: name's stem, the process
/// id and a per-process count, then name's extension ("tg_adam_state.safetensors" ->
/// "<tmp>/tg_adam_state-<pid>-<n>.safetensors"), so suites run at once (ctest -j, CI) never share a
/// file. The file is not created; the caller removes what it writes.
inline std::string temp_path(const std::string& name) {
  static std::atomic<unsigned long> count{0};
  const std::filesystem::path n(name);
  const std::string unique = n.stem().string() + "-" + std::to_string(static_cast<long>(::getpid())) + "-" +
                             std::to_string(count.fetch_add(1)) + n.extension().string();
  return (std::filesystem::temp_directory_path() / unique).string();
}

/// A whole file's bytes ("" when it cannot be read).
inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

/// TG_REQUIRE_CUDA=1 (set by tools/gpu_check.sh and the emulator check): a case that needs a GPU fails
/// without one instead of skipping.
inline bool require_cuda() {
  const char* v = std::getenv("TG_REQUIRE_CUDA");
  return v != nullptr && std::string(v) == "1";
}

/// The closed-form values the tests against PyTorch use, so that the Python printing the reference is
/// short: vals(n, a, b)[i] = a + b sin(1.3 i + 0.4) as a float64 tensor of `shape` (a leaf requiring grad
/// when grad); in Python `a + b * torch.sin(1.3 * torch.arange(n, dtype=torch.float64) + 0.4)`.
/// sin(0.7 i + seed) over the flattened tensor, float64, a leaf requiring grad unless told not to:
/// the inputs and weights of tests/data/layers_reference.py and layers_extra_reference.py.
inline tg::Tensor sin_fill(const tg::Shape& shape, double seed, bool requires_grad = true) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = std::sin(0.7 * static_cast<double>(i) + seed);
  tg::Tensor x = tg::from_vector(v, shape);
  x.set_requires_grad(requires_grad);
  return x;
}

inline tg::Tensor vals(int64_t n, double a, double b, const tg::Shape& shape, bool grad = false) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = a + b * std::sin(1.3 * static_cast<double>(i) + 0.4);
  tg::Tensor t = tg::from_vector(v, shape);
  return grad ? tg::Tensor(t.data(), true) : t;
}

}  // namespace testing

/// First statement of every case that needs a GPU: skips visibly without one, fails under TG_REQUIRE_CUDA=1.
#define TG_NEED_CUDA()                                                                                 \
  do {                                                                                                 \
    if (!tg::cuda::is_available()) {                                                                   \
      if (testing::require_cuda()) FAIL("TG_REQUIRE_CUDA=1 but no usable GPU:\n" << tg::cuda::info()); \
      MESSAGE("no CUDA device: skipped");                                                              \
      return;                                                                                          \
    }                                                                                                  \
  } while (0)

/// Checks that `expr` throws exactly ErrorType with `substring` in its message.
#define TG_CHECK_THROWS(expr, ErrorType, substring)                                                \
  do {                                                                                             \
    bool tg_thrown_ = false;                                                                       \
    try {                                                                                          \
      (void)(expr);                                                                                \
    } catch (const ErrorType& e_) {                                                                \
      tg_thrown_ = true;                                                                           \
      CHECK_MESSAGE(std::string(e_.what()).find(substring) != std::string::npos,                   \
                    "message \"" << std::string(e_.what()) << "\" lacks \"" << substring << "\"");               \
    }                                                                                              \
    CHECK_MESSAGE(tg_thrown_, #expr " did not throw " #ErrorType);                                  \
  } while (0)
