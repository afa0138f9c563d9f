/// \file
/// ops/creation.h: factory functions (tg::randn, tg::zeros, ...) and the random seed. Not
/// differentiable ops: results are leaves, requiring grad only when the options say so.
/// Defined in ops/creation.cpp; the Philox generator behind them is kernels/philox.h.
#pragma once
#include <cstdint>
#include <vector>

#include "tensorgrad/prim/prim.h"
#include "tensorgrad/autograd/tensor.h"

namespace tg {

/// Seeds the one random stream behind rand, randn, randint, dropout and the nn::init functions, on
/// every device (torch.manual_seed). The same seed gives the same values on the CPU and the GPU,
/// whatever the thread count.
void manual_seed(uint64_t seed);
/// The random stream's position (torch.get_rng_state): set_rng_state(get_rng_state()) later replays
/// the same draws on every device. tg::checkpoint uses it to give recomputed dropout the same masks.
RngState get_rng_state();
/// Moves the random stream to a position get_rng_state returned (torch.set_rng_state).
void set_rng_state(RngState state);

// Every factory below returns a leaf with options' dtype (float32 unless set) and device (cpu
// unless set) that requires grad when options say so (floating dtypes only). A negative size throws
// ShapeError, an unusable device DeviceError.

/// Unspecified contents (torch.empty).
Tensor empty(const Shape& shape, const TensorOptions& options = {});
/// All zeros (torch.zeros).
Tensor zeros(const Shape& shape, const TensorOptions& options = {});
/// All ones (torch.ones).
Tensor ones(const Shape& shape, const TensorOptions& options = {});
/// Every element value (torch.full).
Tensor full(const Shape& shape, double value, const TensorOptions& options = {});
/// 0, 1, ..., n-1, 1-D (torch.arange(n)).
Tensor arange(int64_t n, const TensorOptions& options = {});
/// The (n, n) identity matrix (torch.eye).
Tensor eye(int64_t n, const TensorOptions& options = {});
/// Uniform in [0, 1) (torch.rand); DTypeError for int64.
Tensor rand(const Shape& shape, const TensorOptions& options = {});
/// Standard normal (torch.randn); DTypeError for int64.
Tensor randn(const Shape& shape, const TensorOptions& options = {});
/// Integers uniform in [low, high); int64 unless options set another dtype. Error unless low < high
/// and low and high - 1 are values of the dtype (torch.randint: "from is out of bounds for unsigned
/// char" for uint8 and low = -1; bool holds [0, 1], float16 [-65504, 65504]).
Tensor randint(int64_t low, int64_t high, const Shape& shape, const TensorOptions& options = {});
/// Copies values into a tensor of `shape` (default: 1-D). The dtype follows T unless options set one.
/// T is float, double or int64_t; ShapeError unless values.size() is shape's element count.
template <class T>
Tensor from_vector(const std::vector<T>& values, const Shape& shape, const TensorOptions& options = {});
/// from_vector(values, shape) with the 1-D shape {values.size()}.
template <class T>
Tensor from_vector(const std::vector<T>& values) { return from_vector(values, {static_cast<int64_t>(values.size())}); }

/// zeros() with x's shape, dtype and device (torch.zeros_like).
Tensor zeros_like(const Tensor& x);
/// ones() with x's shape, dtype and device.
Tensor ones_like(const Tensor& x);
/// full() with x's shape, dtype and device.
Tensor full_like(const Tensor& x, double value);
/// rand() with x's shape, dtype and device.
Tensor rand_like(const Tensor& x);
/// randn() with x's shape, dtype and device.
Tensor randn_like(const Tensor& x);

// The *_like factories with options, as torch::zeros_like(x, options): the dtype and device that
// options set replace x's, requires_grad comes from options.
/// zeros() with x's shape; dtype and device from options where set, else x's.
Tensor zeros_like(const Tensor& x, const TensorOptions& options);
/// ones() with x's shape; dtype and device from options where set, else x's.
Tensor ones_like(const Tensor& x, const TensorOptions& options);
/// full() with x's shape; dtype and device from options where set, else x's.
Tensor full_like(const Tensor& x, double value, const TensorOptions& options);
/// rand() with x's shape; dtype and device from options where set, else x's.
Tensor rand_like(const Tensor& x, const TensorOptions& options);
/// randn() with x's shape; dtype and device from options where set, else x's.
Tensor randn_like(const Tensor& x, const TensorOptions& options);

}  // namespace tg
