/// \file
/// engine/device.h: Device ("cpu", "cuda:N") and DType (float32, float64, int64).
/// Pure value types; which backend serves a device is decided in engine/backend.cpp.
#pragma once
#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>

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

/// The element type of a tensor (PyTorch's torch::Dtype). Float32 is the default everywhere.
enum class DType : uint8_t { Float32, Float64, Int64 };
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

/// Bytes per element: 4 for float32, 8 for float64 and int64.
inline std::size_t dtype_size(DType t) { return t == DType::Float32 ? 4 : 8; }
/// True for float32 and float64 (PyTorch's is_floating_point).
inline bool is_floating(DType t) { return t != DType::Int64; }
const char* dtype_name(DType t);              ///< "float32", "float64", "int64"
/// Writes dtype_name(t).
std::ostream& operator<<(std::ostream& os, DType t);

/// Calls fn(T{}) with T = float, double or int64_t for the runtime dtype and returns its result:
/// how backends and custom ops turn a DType into a C++ type.
template <class Fn>
decltype(auto) dispatch_dtype(DType t, Fn&& fn) {
  switch (t) {
    case DType::Float32: return fn(float{});
    case DType::Float64: return fn(double{});
    default: return fn(int64_t{});
  }
}
/// Same, for the floating dtypes only; int64 throws DTypeError naming the op.
template <class Fn>
decltype(auto) dispatch_floating(DType t, const char* op, Fn&& fn);

}  // namespace tg

#include "tensorgrad/engine/error.h"
namespace tg {
template <class Fn>
decltype(auto) dispatch_floating(DType t, const char* op, Fn&& fn) {
  if (t == DType::Float64) return fn(double{});
  TG_CHECK(t == DType::Float32, DTypeError, op, ": expected a floating point tensor (float32 or float64), got ",
           dtype_name(t));
  return fn(float{});
}
}  // namespace tg
