// tests/testing.h: helpers shared by the suites: seeded inputs and closeness checks.
#pragma once
#include <doctest/doctest.h>
#include <tensorgrad.h>

#include "tensorgrad/engine/prim.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <vector>

namespace testing {

/// float64 standard-normal leaf (requires grad), seeded so every run sees the same values.
inline tg::Variable randn64(const tg::Shape& shape, uint64_t seed, bool requires_grad = true) {
  tg::manual_seed(seed);
  return tg::randn(shape, tg::TensorOptions().dtype(tg::kFloat64).requires_grad(requires_grad));
}

/// float64 leaf with |values| in [lo, lo + |randn|): away from kinks (abs, relu) or positive (log).
inline tg::Variable away_from_zero(const tg::Shape& shape, uint64_t seed, double lo, bool positive) {
  tg::Variable x = randn64(shape, seed, false);
  tg::Variable y;
  {
    tg::NoGradGuard g;
    y = tg::abs(x) + lo;
    if (!positive) y = tg::where(x > 0.0, y, -y);
  }
  return tg::Variable(y.data().clone(), true);
}

/// Leaf whose data is a non-contiguous (transposed) view of a fresh tensor of shape {cols, rows}.
inline tg::Variable transposed64(int64_t rows, int64_t cols, uint64_t seed) {
  tg::Variable base = randn64({cols, rows}, seed, false);
  return tg::Variable(base.data().transpose(0, 1), true);
}

/// Every element of a equal to b or within atol + rtol * |b| of it; NaN positions must match.
inline void check_close(const tg::Variable& a, const tg::Variable& b, double rtol = 1e-5, double atol = 1e-7) {
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

inline void check_values(const tg::Variable& a, const std::vector<double>& expected, double tol = 1e-6) {
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

/// A whole file's bytes ("" when it cannot be read).
inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace testing

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
