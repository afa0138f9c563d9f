/// \file
/// engine/device.h: Device ("cpu", "cuda:N") and DType (float32, float64, int64).
/// Pure value types; which backend serves a device is decided in engine/backend.cpp.
#pragma once
#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <type_traits>

namespace tg {

/// The kind of a Device.
enum class DeviceType : uint8_t { CPU, CUDA };
/** \var DeviceType::CPU
    Host memory and the CPU backend. */
/** \var DeviceType::CUDA
    An NVIDIA GPU (the CUDA backend). */

/// Where a tensor lives: "cpu", "cuda:N", or "cuda" (PyTorch's torch::Device). A plain value;
/// whether the device is usable is checked when a tensor is created or moved there (DeviceError).
/// "cuda" without an index means the calling thread's current device (cuda::set_device), looked up
/// when a tensor is created or moved there, as in PyTorch: a tensor's own device() always has an
/// index. Like PyTorch's, Device("cuda") != Device("cuda:0") as values.
class Device {
 public:
  Device() = default;                         ///< cpu
  /// A device of `type`; the index is ignored for the CPU (always 0). -1 (the default) for CUDA
  /// means the current device. Throws DeviceError for an index below -1.
  Device(DeviceType type, int index = -1);    // NOLINT(google-explicit-constructor)
  explicit Device(const std::string& spec);   ///< "cpu", "cuda", "cuda:1"; anything else throws tg::Error
  /// The CPU.
  static Device cpu() { return Device(); }
  /// cuda:index; without an index, the current device (see the class comment). Does not check that
  /// the GPU exists: see cuda::is_available().
  static Device cuda(int index = -1) { return Device(DeviceType::CUDA, index); }

  /// CPU or CUDA.
  DeviceType type() const { return type_; }
  /// The device index: N of "cuda:N"; -1 for "cuda" (the current device); 0 for the CPU.
  int index() const { return index_; }
  /// False only for "cuda" without an index.
  bool has_index() const { return index_ >= 0; }
  /// type() == DeviceType::CPU.
  bool is_cpu() const { return type_ == DeviceType::CPU; }
  /// type() == DeviceType::CUDA.
  bool is_cuda() const { return type_ == DeviceType::CUDA; }
  std::string str() const;                    ///< "cpu", "cuda:0", "cuda"

  /// Same type and index.
  bool operator==(const Device& o) const { return type_ == o.type_ && index_ == o.index_; }
  /// Different type or index.
  bool operator!=(const Device& o) const { return !(*this == o); }

 private:
  DeviceType type_ = DeviceType::CPU;
  int index_ = 0;
};
/// Writes d.str().
std::ostream& operator<<(std::ostream& os, const Device& d);

// Note [The dtype table]
// ~~~~~~~~~~~~~~~~~~~~~~
// TG_FORALL_DTYPES is the one list of element types: X(Enum, C++ type, sum accumulator type, name,
// safetensors name, floating). DType, dtype_size, is_floating, dtype_name, dispatch_dtype and the
// checkpoint format's names are all generated from it, so a dtype is added in one row (plus its
// kernels), and a DType value outside the table is a DTypeError in every helper, never a silent
// fallthrough to another type.
/// The dtype table: see Note [The dtype table].
#define TG_FORALL_DTYPES(X)                                \
  X(Float32, float, double, "float32", "F32", true)        \
  X(Float64, double, double, "float64", "F64", true)       \
  X(Int64, int64_t, int64_t, "int64", "I64", false)

/// The element type of a tensor (PyTorch's torch::Dtype). Float32 is the default everywhere.
enum class DType : uint8_t {
#define TG_DTYPE_ENUM(e, T, Acc, name, st, fl) e,
  TG_FORALL_DTYPES(TG_DTYPE_ENUM)
#undef TG_DTYPE_ENUM
};
/** \var DType::Float32
    32-bit IEEE float (torch.float32). */
/** \var DType::Float64
    64-bit IEEE float (torch.float64): the reference dtype of gradcheck. */
/** \var DType::Int64
    64-bit signed integer (torch.int64): class targets, indices, argmax results. */
/// DType::Float32, as PyTorch's torch::kFloat32.
constexpr DType kFloat32 = DType::Float32;
/// DType::Float64, as PyTorch's torch::kFloat64.
constexpr DType kFloat64 = DType::Float64;
/// DType::Int64, as PyTorch's torch::kInt64.
constexpr DType kInt64 = DType::Int64;

/// Bytes per element: 4 for float32, 8 for float64 and int64. DTypeError outside the table.
std::size_t dtype_size(DType t);
/// True for float32 and float64 (PyTorch's is_floating_point). DTypeError outside the table.
bool is_floating(DType t);
const char* dtype_name(DType t);              ///< "float32", "float64", "int64"; "unknown" outside the table
/// Writes dtype_name(t).
std::ostream& operator<<(std::ostream& os, DType t);

namespace detail {
/// Throws DTypeError for a DType value outside the table (engine/device.cpp).
[[noreturn]] void unknown_dtype(DType t);
template <class T>
struct SumAccumulator;
#define TG_DTYPE_ACC(e, T, Acc, name, st, fl) \
  template <>                                 \
  struct SumAccumulator<T> {                  \
    using type = Acc;                         \
  };
TG_FORALL_DTYPES(TG_DTYPE_ACC)
#undef TG_DTYPE_ACC
}  // namespace detail

/// The type sums of T accumulate in (the dtype table's third column): double for floating types,
/// int64_t for integers.
template <class T>
using sum_accumulator_t = typename detail::SumAccumulator<T>::type;

/// Calls fn(T{}) with T = the table's C++ type for the runtime dtype (float, double, int64_t) and
/// returns its result: how backends and custom ops turn a DType into a C++ type.
template <class Fn>
decltype(auto) dispatch_dtype(DType t, Fn&& fn) {
  switch (t) {
#define TG_DTYPE_CASE(e, T, Acc, name, st, fl) \
  case DType::e:                               \
    return fn(T{});
    TG_FORALL_DTYPES(TG_DTYPE_CASE)
#undef TG_DTYPE_CASE
  }
  detail::unknown_dtype(t);
}
/// Same, for the floating dtypes only; any other throws DTypeError naming the op.
template <class Fn>
decltype(auto) dispatch_floating(DType t, const char* op, Fn&& fn);

}  // namespace tg

#include "tensorgrad/engine/error.h"
namespace tg {
template <class Fn>
decltype(auto) dispatch_floating(DType t, const char* op, Fn&& fn) {
  TG_CHECK(is_floating(t), DTypeError, op, ": expected a floating point tensor (float32 or float64), got ",
           dtype_name(t));
  return dispatch_dtype(t, [&](auto z) -> decltype(fn(float{})) {
    using T = decltype(z);
    if constexpr (std::is_floating_point<T>::value) return fn(T{});
    else detail::unknown_dtype(t);   // unreachable: is_floating was checked
  });
}
}  // namespace tg
