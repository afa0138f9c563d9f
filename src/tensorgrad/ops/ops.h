/// \file
/// ops/ops.h: every differentiable op (and the few non-differentiable ones on Variables), as free
/// functions. Each is defined in ops/<family>.cpp with its backward right below its forward.
/// tests/test_gradcheck.cpp reads this file: every function declared here must have a gradcheck
/// entry there (or be listed as non-differentiable with a reason), or the coverage test fails.
#pragma once
#include <cstdint>
#include <vector>

#include "tensorgrad/engine/variable.h"

namespace tg {

enum class Reduction { None, Mean, Sum };

// ---- elementwise (ops/elementwise.cpp); binary ops broadcast (NumPy rules)
Variable add(const Variable& a, const Variable& b);
Variable sub(const Variable& a, const Variable& b);
Variable mul(const Variable& a, const Variable& b);
Variable div(const Variable& a, const Variable& b);
Variable pow(const Variable& a, const Variable& b);
Variable pow(const Variable& a, double exponent);
Variable neg(const Variable& x);
Variable exp(const Variable& x);
Variable log(const Variable& x);
Variable sqrt(const Variable& x);
Variable abs(const Variable& x);
Variable relu(const Variable& x);
Variable sigmoid(const Variable& x);
Variable tanh(const Variable& x);
Variable clamp(const Variable& x, double min, double max);
Variable where(const Variable& cond, const Variable& a, const Variable& b);   // cond != 0 picks a
// comparisons: 1 or 0 in the operands' dtype (no bool dtype); not differentiable
Variable eq(const Variable& a, const Variable& b);
Variable ne(const Variable& a, const Variable& b);
Variable gt(const Variable& a, const Variable& b);
Variable lt(const Variable& a, const Variable& b);
Variable ge(const Variable& a, const Variable& b);
Variable le(const Variable& a, const Variable& b);

// ---- reductions (ops/reduce.cpp); max/min over all elements split the gradient among ties
Variable sum(const Variable& x);
Variable sum(const Variable& x, int64_t dim, bool keepdim = false);
Variable mean(const Variable& x);
Variable mean(const Variable& x, int64_t dim, bool keepdim = false);
Variable max(const Variable& x);
Variable max(const Variable& x, int64_t dim, bool keepdim = false);
Variable min(const Variable& x);
Variable min(const Variable& x, int64_t dim, bool keepdim = false);
Variable argmax(const Variable& x);                                   // int64, not differentiable
Variable argmax(const Variable& x, int64_t dim, bool keepdim = false);

// ---- linear algebra (ops/linalg.cpp)
Variable matmul(const Variable& a, const Variable& b);   // (M,K)@(K,N), batched (B,M,K)@(B,K,N), mixed 2-D/3-D
/// y = x . weight^T + bias: x (..., I), weight (O, I), bias (O) or undefined -> y (..., O). Fused.
Variable linear(const Variable& x, const Variable& weight, const Variable& bias = Variable());

// ---- views and shape (ops/shape.cpp): views share storage with their input
Variable reshape(const Variable& x, const Shape& shape);
Variable view(const Variable& x, const Shape& shape);
Variable transpose(const Variable& x, int64_t d0, int64_t d1);
Variable t(const Variable& x);                                        // 2-D transpose
Variable permute(const Variable& x, const std::vector<int64_t>& dims);
Variable squeeze(const Variable& x);
Variable squeeze(const Variable& x, int64_t dim);
Variable unsqueeze(const Variable& x, int64_t dim);
Variable expand(const Variable& x, const Shape& shape);
Variable contiguous(const Variable& x);
Variable flatten(const Variable& x, int64_t start_dim = 0, int64_t end_dim = -1);
Variable cat(const std::vector<Variable>& xs, int64_t dim = 0);
Variable stack(const std::vector<Variable>& xs, int64_t dim = 0);

// ---- indexing (ops/index.cpp); index is int64
Variable index_select(const Variable& x, int64_t dim, const Variable& index);
Variable gather(const Variable& x, int64_t dim, const Variable& index);

// ---- neural-network functions (ops/nn.cpp)
Variable softmax(const Variable& x, int64_t dim);
Variable log_softmax(const Variable& x, int64_t dim);
/// logits (N, C), target (N) int64 class indices. Fused log-softmax + NLL, stable for large logits.
/// Targets equal to ignore_index contribute nothing; label_smoothing mixes in the uniform distribution.
Variable cross_entropy(const Variable& logits, const Variable& target, Reduction reduction = Reduction::Mean,
                       int64_t ignore_index = -100, double label_smoothing = 0);
Variable mse_loss(const Variable& input, const Variable& target, Reduction reduction = Reduction::Mean);
/// Zeroes each element with probability p and scales the rest by 1/(1-p) when training.
Variable dropout(const Variable& x, double p = 0.5, bool training = true);

// ---- operators (ops/methods.cpp): Variables and scalars on either side
Variable operator+(const Variable& a, const Variable& b);
Variable operator-(const Variable& a, const Variable& b);
Variable operator*(const Variable& a, const Variable& b);
Variable operator/(const Variable& a, const Variable& b);
Variable operator-(const Variable& x);
Variable operator+(const Variable& a, double s);
Variable operator-(const Variable& a, double s);
Variable operator*(const Variable& a, double s);
Variable operator/(const Variable& a, double s);
Variable operator+(double s, const Variable& a);
Variable operator-(double s, const Variable& a);
Variable operator*(double s, const Variable& a);
Variable operator/(double s, const Variable& a);
Variable operator==(const Variable& a, const Variable& b);
Variable operator!=(const Variable& a, const Variable& b);
Variable operator>(const Variable& a, const Variable& b);
Variable operator<(const Variable& a, const Variable& b);
Variable operator>=(const Variable& a, const Variable& b);
Variable operator<=(const Variable& a, const Variable& b);
Variable operator>(const Variable& a, double s);
Variable operator<(const Variable& a, double s);

/// A 0-d constant with like's dtype and device (scalar operands of the operators above).
Variable scalar_like(double value, const Variable& like);

}  // namespace tg
