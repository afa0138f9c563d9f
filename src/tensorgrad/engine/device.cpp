// engine/device.cpp: Device parsing and printing, DType names.
#include <cctype>
#include <cstdlib>

#include "tensorgrad/engine/device.h"
#include "tensorgrad/engine/error.h"

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

void detail::unknown_dtype(DType t) {
  throw DTypeError(detail::cat("unknown dtype (value ", static_cast<int>(t), "): not in the dtype table"));
}

std::ostream& operator<<(std::ostream& os, DType t) { return os << dtype_name(t); }

}  // namespace tg
