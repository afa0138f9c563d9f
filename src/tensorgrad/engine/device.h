/// \file
/// engine/device.h: Device ("cpu", "cuda:N") and DType (float32, float64, int64).
/// Pure value types; which backend serves a device is decided in engine/backend.cpp.
#pragma once
#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>

namespace tg {

enum class DeviceType : uint8_t { CPU, CUDA };

class Device {
 public:
  Device() = default;                         // cpu
  Device(DeviceType type, int index = 0);     // NOLINT(google-explicit-constructor)
  explicit Device(const std::string& spec);   // "cpu", "cuda", "cuda:1"; anything else throws tg::Error
  static Device cpu() { return Device(); }
  static Device cuda(int index = 0) { return Device(DeviceType::CUDA, index); }

  DeviceType type() const { return type_; }
  int index() const { return index_; }
  bool is_cpu() const { return type_ == DeviceType::CPU; }
  bool is_cuda() const { return type_ == DeviceType::CUDA; }
  std::string str() const;                    // "cpu", "cuda:0"

  bool operator==(const Device& o) const { return type_ == o.type_ && index_ == o.index_; }
  bool operator!=(const Device& o) const { return !(*this == o); }

 private:
  DeviceType type_ = DeviceType::CPU;
  int index_ = 0;
};
std::ostream& operator<<(std::ostream& os, const Device& d);

enum class DType : uint8_t { Float32, Float64, Int64 };
constexpr DType kFloat32 = DType::Float32;
constexpr DType kFloat64 = DType::Float64;
constexpr DType kInt64 = DType::Int64;

inline std::size_t dtype_size(DType t) { return t == DType::Float32 ? 4 : 8; }
inline bool is_floating(DType t) { return t != DType::Int64; }
const char* dtype_name(DType t);              // "float32", "float64", "int64"
std::ostream& operator<<(std::ostream& os, DType t);

/// Calls fn(T{}) with T = float, double or int64_t for the runtime dtype.
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
