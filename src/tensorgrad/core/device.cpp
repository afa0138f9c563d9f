// core/device.cpp: Device parsing and printing, DType names.
#include <cctype>
#include <cstdlib>
#include <string>

#include "tensorgrad/core/device.h"
#include "tensorgrad/core/accelerator.h"
#include "tensorgrad/core/error.h"

namespace tg {

Device::Device(DeviceType type, int index) : type_(type), index_(type == DeviceType::CPU ? 0 : index) {
  TG_CHECK(index >= -1, DeviceError, "Device: device index must be -1 or non-negative, got ", index);
}

Device::Device(const std::string& spec) {
  if (spec == "cpu") return;
  const std::string prefix = "cuda";
  bool ok = spec.compare(0, prefix.size(), prefix) == 0;
  int index = -1;
  if (ok && spec.size() > prefix.size()) {
    ok = spec[prefix.size()] == ':' && spec.size() > prefix.size() + 1 && spec.size() <= prefix.size() + 6;
    for (std::size_t i = prefix.size() + 1; ok && i < spec.size(); ++i)
      ok = std::isdigit(static_cast<unsigned char>(spec[i])) != 0;
    if (ok) index = std::atoi(spec.c_str() + prefix.size() + 1);
  }
  TG_CHECK(ok, Error, "Device: expected a device string like \"cpu\", \"cuda\" or \"cuda:1\", got \"", spec, "\"");
  type_ = DeviceType::CUDA;
  index_ = index;
}

std::string Device::str() const {
  if (is_cpu()) return "cpu";
  return has_index() ? "cuda:" + std::to_string(index_) : "cuda";
}

std::ostream& operator<<(std::ostream& os, const Device& d) { return os << d.str(); }

const char* dtype_name(DType t) {
  switch (t) {
#define TG_DTYPE_NAME(e, T, Acc, name, st, fl) \
  case DType::e:                               \
    return name;
    TG_FORALL_DTYPES(TG_DTYPE_NAME)
#undef TG_DTYPE_NAME
  }
  return "unknown";
}

std::size_t dtype_size(DType t) {
  return dispatch_dtype(t, [](auto z) { return sizeof(z); });
}

bool is_floating(DType t) {
  switch (t) {
#define TG_DTYPE_FLOATING(e, T, Acc, name, st, fl) \
  case DType::e:                                   \
    return fl;
    TG_FORALL_DTYPES(TG_DTYPE_FLOATING)
#undef TG_DTYPE_FLOATING
  }
  detail::unknown_dtype(t);
}

bool is_low_precision(DType t) { return is_floating(t) && dtype_size(t) < 4; }

void detail::unknown_dtype(DType t) {
  throw DTypeError(detail::cat("unknown dtype (value ", static_cast<int>(t), "): not in the dtype table"));
}

std::ostream& operator<<(std::ostream& os, DType t) { return os << dtype_name(t); }

void detail::unsupported_dtype(const char* op, DType t, std::initializer_list<DType> supported) {
  std::string list;
  for (DType d : supported) list += std::string(list.empty() ? "" : ", ") + dtype_name(d);
  throw DTypeError(detail::cat(op, ": not implemented for ", dtype_name(t), " tensors (it takes ", list, ")"));
}

namespace {
/// Bool < integers < floating types: the category decides first in PyTorch's promotion.
int category(DType t) { return t == kBool ? 0 : is_floating(t) ? 2 : 1; }
}  // namespace

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  const int ca = category(a), cb = category(b);
  if (ca != cb) return ca > cb ? a : b;
  if (ca == 1) {   // two integer types: the wider; uint8 with int8 needs int16, which int32 holds
    const std::size_t sa = dtype_size(a), sb = dtype_size(b);
    if (sa == sb) return kInt32;   // only uint8 with int8 has equal sizes
    return sa > sb ? a : b;        // the wider one is signed (uint8 is the narrowest)
  }
  // two floating types
  if ((a == kFloat16 && b == kBFloat16) || (a == kBFloat16 && b == kFloat16)) return kFloat32;
  return dtype_size(a) >= dtype_size(b) ? a : b;
}

Device with_index(Device device) {
  return device.is_cuda() && !device.has_index() ? Device::cuda(cuda::current_device()) : device;
}

}  // namespace tg
