/// \file
/// core/device.h: Device ("cpu", "cuda:N") and DType (the dtype table: float32, float64, float16,
/// bfloat16, int64, int32, int8, uint8, bool), with PyTorch's type promotion.
/// Pure value types; which backend serves a device is decided in backend/backend.cpp.
#pragma once
#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <initializer_list>
#include <type_traits>

#include "tensorgrad/core/half.h"

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

/// DeviceType::CPU, as libtorch's torch::kCPU: `x.to(tg::kCPU)`, `tg::Device(tg::kCPU)`.
constexpr DeviceType kCPU = DeviceType::CPU;
/// DeviceType::CUDA, as libtorch's torch::kCUDA: `tg::Device(tg::kCUDA, 0)`, `x.to(tg::kCUDA)` (the
/// current CUDA device).
constexpr DeviceType kCUDA = DeviceType::CUDA;

/// `device` with its index: "cuda" becomes cuda:N for the calling thread's current device N
/// (cuda::current_device()); every other device is returned as it is.
Device with_index(Device device);
/// Writes d.str().
std::ostream& operator<<(std::ostream& os, const Device& d);

// Note [The dtype table]
// ~~~~~~~~~~~~~~~~~~~~~~
// TG_FORALL_DTYPES is the one list of element types: X(Enum, C++ type, sum accumulator type, name,
// safetensors name, floating). DType, dtype_size, is_floating, dtype_name, dispatch_dtype, the
// C++ type of a DType (cpp_type_t) and the checkpoint format's names are all generated from it, so a
// dtype is added in one row (plus its C++ type's conversions, core/half.h for the 16-bit floats),
// and a DType value outside the table is a DTypeError in every helper, never a silent fallthrough to
// another type. The enum keeps the table's order; checkpoints store names, not values.
/// The dtype table: see Note [The dtype table].
#define TG_FORALL_DTYPES(X)                                \
  X(Float32, float, double, "float32", "F32", true)        \
  X(Float64, double, double, "float64", "F64", true)       \
  X(Int64, int64_t, int64_t, "int64", "I64", false)        \
  X(Float16, Half, float, "float16", "F16", true)          \
  X(BFloat16, BFloat16, float, "bfloat16", "BF16", true)   \
  X(Int32, int32_t, int64_t, "int32", "I32", false)        \
  X(Int8, int8_t, int64_t, "int8", "I8", false)            \
  X(UInt8, uint8_t, int64_t, "uint8", "U8", false)         \
  X(Bool, bool, int64_t, "bool", "BOOL", false)

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
/** \var DType::Float16
    IEEE binary16 (torch.float16, tg::Half): mixed precision on GPUs. */
/** \var DType::BFloat16
    bfloat16 (torch.bfloat16, tg::BFloat16): float32's range with 8 significant bits. */
/** \var DType::Int32
    32-bit signed integer (torch.int32). */
/** \var DType::Int8
    8-bit signed integer (torch.int8): quantized weights. */
/** \var DType::UInt8
    8-bit unsigned integer (torch.uint8): images, quantized activations. */
/** \var DType::Bool
    true/false (torch.bool): the results of comparisons, where's condition. */
/// DType::Float32, as PyTorch's torch::kFloat32.
constexpr DType kFloat32 = DType::Float32;
/// DType::Float64, as PyTorch's torch::kFloat64.
constexpr DType kFloat64 = DType::Float64;
/// DType::Int64, as PyTorch's torch::kInt64.
constexpr DType kInt64 = DType::Int64;
/// DType::Float16, as PyTorch's torch::kFloat16.
constexpr DType kFloat16 = DType::Float16;
/// DType::BFloat16, as PyTorch's torch::kBFloat16.
constexpr DType kBFloat16 = DType::BFloat16;
/// DType::Int32, as PyTorch's torch::kInt32.
constexpr DType kInt32 = DType::Int32;
/// DType::Int8, as PyTorch's torch::kInt8.
constexpr DType kInt8 = DType::Int8;
/// DType::UInt8, as PyTorch's torch::kUInt8.
constexpr DType kUInt8 = DType::UInt8;
/// DType::Bool, as PyTorch's torch::kBool.
constexpr DType kBool = DType::Bool;

// libtorch's other names for the same dtypes (torch::kFloat, ...). There is no kShort, kInt16,
// kUInt16 or complex: the dtype table has no such row.
/// kFloat32, as libtorch's torch::kFloat.
constexpr DType kFloat = DType::Float32;
/// kFloat64, as libtorch's torch::kDouble.
constexpr DType kDouble = DType::Float64;
/// kFloat16, as libtorch's torch::kHalf.
constexpr DType kHalf = DType::Float16;
/// kInt64, as libtorch's torch::kLong.
constexpr DType kLong = DType::Int64;
/// kInt32, as libtorch's torch::kInt.
constexpr DType kInt = DType::Int32;
/// kInt8, as libtorch's torch::kChar.
constexpr DType kChar = DType::Int8;
/// kUInt8, as libtorch's torch::kByte.
constexpr DType kByte = DType::UInt8;

/// Bytes per element (sizeof the table's C++ type). DTypeError outside the table.
std::size_t dtype_size(DType t);
/// True for float32, float64, float16 and bfloat16 (PyTorch's is_floating_point). DTypeError outside
/// the table.
bool is_floating(DType t);
const char* dtype_name(DType t);              ///< "float32", "bfloat16", ...; "unknown" outside the table
/// True for the floating dtypes narrower than float32 (float16, bfloat16): the ones that compute
/// through float32 (Note [Low precision through float32] in prim/blas.cpp), keep float32 optimizer
/// state (Note [Master weights]) and that autocast casts to. DTypeError outside the table.
bool is_low_precision(DType t);
/// PyTorch's torch.promote_types: the dtype both operands of a binary op are computed in. Bool <
/// integers < floating types; within integers the wider one (uint8 with int8 gives int32, as
/// tensorgrad has no int16), float16 with bfloat16 gives float32, otherwise the wider floating type.
DType promote_types(DType a, DType b);
/// Writes dtype_name(t).
std::ostream& operator<<(std::ostream& os, DType t);

namespace detail {
/// Throws DTypeError for a DType value outside the table (core/device.cpp).
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

namespace detail {
/// The C++ type of a DType (cpp_type_t).
template <DType D>
struct CppType;
#define TG_DTYPE_CPP(e, T, Acc, name, st, fl) \
  template <>                                 \
  struct CppType<DType::e> {                  \
    using type = T;                           \
  };
TG_FORALL_DTYPES(TG_DTYPE_CPP)
#undef TG_DTYPE_CPP
}  // namespace detail
/// The table's C++ type of dtype D: float for kFloat32, tg::Half for kFloat16, bool for kBool, ...
template <DType D>
using cpp_type_t = typename detail::CppType<D>::type;

namespace detail {
/// The DType of a C++ type (dtype_of).
template <class T>
struct DTypeOf;
#define TG_DTYPE_OF(e, T, Acc, name, st, fl)        \
  template <>                                       \
  struct DTypeOf<T> {                               \
    static constexpr DType value = DType::e;        \
  };
TG_FORALL_DTYPES(TG_DTYPE_OF)
#undef TG_DTYPE_OF
}  // namespace detail
/// The DType whose C++ type is T (kFloat32 for float, kBool for bool, ...); a type outside the
/// table does not compile.
template <class T>
constexpr DType dtype_of() {
  return detail::DTypeOf<T>::value;
}

/// The type sums of T accumulate in (the dtype table's third column): double for float32 and
/// float64, float for the 16-bit floats, int64_t for integers and bool.
template <class T>
using sum_accumulator_t = typename detail::SumAccumulator<T>::type;

/// Calls fn(T{}) with T = the table's C++ type for the runtime dtype (float, tg::Half, bool, ...)
/// and returns its result: how backends and custom ops turn a DType into a C++ type.
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
/// Same, for the listed dtypes only (dispatch_only<kFloat32, kFloat64>(t, "matmul", fn)): a kernel
/// family that exists for a few dtypes instantiates fn only for those; any other throws DTypeError
/// naming the op and the dtypes it takes. (prim:: sends the other dtypes through a supported one
/// first: Note [Low precision through float32] in prim/blas.cpp.)
template <DType... Ds, class Fn>
decltype(auto) dispatch_only(DType t, const char* op, Fn&& fn);

}  // namespace tg

#include "tensorgrad/core/error.h"
namespace tg {
template <class Fn>
decltype(auto) dispatch_floating(DType t, const char* op, Fn&& fn) {
  TG_CHECK(is_floating(t), DTypeError, op, ": expected a floating point tensor, got ", dtype_name(t));
  switch (t) {   // the table's floating rows; fn is never instantiated for the others
#define TG_DTYPE_FLOATING_CASE(e, T, Acc, name, st, fl) \
  case DType::e:                                        \
    if constexpr (fl) return fn(T{});                   \
    break;
    TG_FORALL_DTYPES(TG_DTYPE_FLOATING_CASE)
#undef TG_DTYPE_FLOATING_CASE
  }
  detail::unknown_dtype(t);
}

namespace detail {
/// Throws DTypeError: op does not take dtype t, only the listed ones.
[[noreturn]] void unsupported_dtype(const char* op, DType t, std::initializer_list<DType> supported);
/// fn(T{}) for the first of D, Rest... equal to t; t is one of them (dispatch_only checked it).
template <DType D, DType... Rest, class Fn>
decltype(auto) dispatch_only_step(DType t, Fn& fn) {
  if constexpr (sizeof...(Rest) > 0) {
    if (t == D) return fn(cpp_type_t<D>{});
    return dispatch_only_step<Rest...>(t, fn);
  } else {
    return fn(cpp_type_t<D>{});
  }
}
}  // namespace detail
template <DType... Ds, class Fn>
decltype(auto) dispatch_only(DType t, const char* op, Fn&& fn) {
  bool listed = false;
  for (DType d : {Ds...}) listed = listed || d == t;
  if (!listed) detail::unsupported_dtype(op, t, {Ds...});
  return detail::dispatch_only_step<Ds...>(t, fn);
}
}  // namespace tg
