/// \file
/// ops/creation.h: factory functions (tg::randn, tg::zeros, ...) and the random seed. Not
/// differentiable ops: results are leaves, requiring grad only when the options say so.
/// Defined in ops/creation.cpp; the Philox generator behind them is engine/philox.h.
#pragma once
#include <cstdint>
#include <vector>

#include "tensorgrad/engine/variable.h"

namespace tg {

void manual_seed(uint64_t seed);

Variable empty(const Shape& shape, const TensorOptions& options = {});
Variable zeros(const Shape& shape, const TensorOptions& options = {});
Variable ones(const Shape& shape, const TensorOptions& options = {});
Variable full(const Shape& shape, double value, const TensorOptions& options = {});
Variable arange(int64_t n, const TensorOptions& options = {});
Variable eye(int64_t n, const TensorOptions& options = {});
Variable rand(const Shape& shape, const TensorOptions& options = {});    // uniform [0, 1)
Variable randn(const Shape& shape, const TensorOptions& options = {});   // standard normal
/// Integers uniform in [low, high); int64 unless options set another dtype.
Variable randint(int64_t low, int64_t high, const Shape& shape, const TensorOptions& options = {});
/// Copies values into a tensor of `shape` (default: 1-D). The dtype follows T unless options set one.
template <class T>
Variable from_vector(const std::vector<T>& values, const Shape& shape, const TensorOptions& options = {});
template <class T>
Variable from_vector(const std::vector<T>& values) { return from_vector(values, {static_cast<int64_t>(values.size())}); }

Variable zeros_like(const Variable& x);
Variable ones_like(const Variable& x);
Variable full_like(const Variable& x, double value);
Variable rand_like(const Variable& x);
Variable randn_like(const Variable& x);

}  // namespace tg
