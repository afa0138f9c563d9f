/// \file
/// engine/prim.h: graph-free tensor math. Each function validates its operands (shapes, dtypes,
/// devices: DESIGN.md section 7 messages), allocates the output and calls the device's backend.
/// Differentiable ops (ops/) are built from these; backward closures call them too.
#pragma once
#include <cstdint>
#include <vector>

#include "tensorgrad/engine/backend.h"
#include "tensorgrad/engine/tensor.h"

namespace tg {
namespace prim {

// ---- creation
Tensor empty(const Shape& shape, DType dtype = kFloat32, Device device = Device::cpu());
Tensor full(const Shape& shape, double value, DType dtype = kFloat32, Device device = Device::cpu());
Tensor zeros_like(const Tensor& t);
Tensor scalar_like(double value, const Tensor& like);   // 0-d tensor with like's dtype and device
Tensor arange(int64_t n, DType dtype, Device device);
Tensor eye(int64_t n, DType dtype, Device device);
/// Copies host memory holding numel(shape) elements of dtype onto device.
Tensor from_host(const void* data, const Shape& shape, DType dtype, Device device);

// ---- random (Philox; see engine/philox.h). One generator: manual_seed resets it.
void manual_seed(uint64_t seed);
Tensor random(philox::Kind kind, const Shape& shape, double a, double b, DType dtype, Device device);

// ---- copies and fills (in place: bump the version counter of the written storage)
void fill_(const Tensor& dst, double value);
void copy_(const Tensor& dst, const Tensor& src);       // src broadcast to dst's shape; any dtypes
Tensor to_device(const Tensor& t, Device device);

// ---- elementwise
Tensor unary(UnaryOp op, const Tensor& x, UnaryArgs args = {});
Tensor unary_backward(UnaryOp op, const Tensor& x, const Tensor& y, const Tensor& dy, UnaryArgs args = {});
Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b, const char* name);   // broadcasts
void binary_(BinaryOp op, const Tensor& self, const Tensor& other, const char* name);   // self op= other
inline Tensor add(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Add, a, b, "add"); }
inline Tensor sub(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Sub, a, b, "sub"); }
inline Tensor mul(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Mul, a, b, "mul"); }
inline Tensor div(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Div, a, b, "div"); }
Tensor mul(const Tensor& a, double s);
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);

// ---- reductions. dims empty = all dims. ArgMax/ArgMin take at most one dim and give int64.
Tensor reduce(ReduceOp op, const Tensor& x, const std::vector<int64_t>& dims, bool keepdim, const char* name);
inline Tensor sum(const Tensor& x) { return reduce(ReduceOp::Sum, x, {}, false, "sum"); }
/// Sums x down to `shape`, which x's shape broadcasts from (the engine's undoing of broadcasting).
Tensor sum_to(const Tensor& x, const Shape& shape);

// ---- linear algebra: a (M, K) or (B, M, K), b (K, N) or (B, K, N) -> (M, N) or (B, M, N).
// Transposed views are passed to the BLAS as flags, not copied.
Tensor matmul(const Tensor& a, const Tensor& b);

// ---- softmax family and the fused loss
Tensor softmax(const Tensor& x, int64_t dim, bool log);
Tensor softmax_backward(const Tensor& y, const Tensor& dy, int64_t dim, bool log);
/// logits (N, C) float, target (N) int64 -> per-row loss (N); lse (N) is set for the backward.
Tensor cross_entropy(const Tensor& logits, const Tensor& target, const CrossEntropyArgs& args, Tensor* lse);
/// The errors for a bad class target (outside [0, C), not ignore_index) and a bad index (index_select,
/// index_add_, gather, scatter_add_): raised by the host checks for CPU tensors and, for CUDA tensors,
/// at the next sync from the device error flag (Note [Device error flag] in cuda/reduce.cu).
IndexError cross_entropy_target_error(int64_t target, int64_t classes);
IndexError index_out_of_range_error(const char* op, int64_t index, int64_t dim, int64_t size);
/// dloss (N) or 0-d (broadcast to every row) -> dlogits (N, C).
Tensor cross_entropy_backward(const Tensor& logits, const Tensor& target, const CrossEntropyArgs& args,
                              const Tensor& lse, const Tensor& dloss);

// ---- indexing
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index);
void index_add_(const Tensor& dst, int64_t dim, const Tensor& index, const Tensor& src);
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index);
void scatter_add_(const Tensor& dst, int64_t dim, const Tensor& index, const Tensor& src);
Tensor cat(const std::vector<Tensor>& xs, int64_t dim);

// ---- checks shared with ops/
void check_same_device(const char* op, const Tensor& a, const Tensor& b);
void check_same_dtype(const char* op, const Tensor& a, const Tensor& b);
void check_floating(const char* op, const Tensor& t);

}  // namespace prim
}  // namespace tg
