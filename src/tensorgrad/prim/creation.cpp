// prim/creation.cpp: allocation, fills and copies: empty, full, arange, eye, from_host, fill_ and
// copy_ (in place: they bump the written storage's version).
#include "tensorgrad/prim/prim.h"

#include <cstring>

#include "tensorgrad/core/error.h"
#include "tensorgrad/prim/internal.h"

namespace tg {
namespace prim {

RawTensor empty(const Shape& shape, DType dtype, Device device) { return RawTensor::empty(shape, dtype, device); }


RawTensor full(const Shape& shape, double value, DType dtype, Device device) {
  check_representable("full", value, dtype);
  RawTensor t = RawTensor::empty(shape, dtype, device);
  backend_for(device).fill(t, value);
  return t;
}

RawTensor zeros_like(const RawTensor& t) { return full(t.shape(), 0.0, t.dtype(), t.device()); }

RawTensor scalar_like(double value, const RawTensor& like) {
  return full({}, value, scalar_dtype(value, like.dtype()), like.device());
}


RawTensor arange(int64_t n, DType dtype, Device device) {
  TG_CHECK(n >= 0, ShapeError, "arange: upper bound must be non-negative, got ", n);
  RawTensor host = RawTensor::empty({n}, dtype, Device::cpu());
  dispatch_dtype(dtype, [&](auto z) {
    using T = decltype(z);
    for (int64_t i = 0; i < n; ++i) host.data<T>()[i] = static_cast<T>(i);
  });
  return to_device(host, device);
}

RawTensor eye(int64_t n, DType dtype, Device device) {
  TG_CHECK(n >= 0, ShapeError, "eye: n must be non-negative, got ", n);
  RawTensor t = full({n, n}, 0.0, dtype, device);
  fill_(t.as_strided({n}, {n + 1}, 0), 1.0);   // the diagonal as a strided view
  return t;
}

RawTensor from_host(const void* data, const Shape& shape, DType dtype, Device device) {
  RawTensor host = RawTensor::empty(shape, dtype, Device::cpu());
  if (host.numel() > 0) std::memcpy(host.raw_data(), data, static_cast<std::size_t>(host.numel()) * dtype_size(dtype));
  return to_device(host, device);
}


void fill_(const RawTensor& dst, double value) {
  check_defined("fill_", dst);
  check_representable("fill_", value, dst.dtype());
  check_no_internal_overlap("fill_", dst);
  backend_for(dst.device()).fill(dst, value);
  dst.storage()->bump_version();
}

void copy_(const RawTensor& dst, const RawTensor& src) {
  check_defined("copy_", dst);
  check_defined("copy_", src);
  TG_CHECK(broadcast_shapes(dst.shape(), src.shape(), "copy_") == dst.shape(), ShapeError, "copy_: source of shape ",
           shape_str(src.shape()), " cannot be broadcast to the destination's shape ", shape_str(dst.shape()));
  check_no_internal_overlap("copy_", dst);
  check_no_partial_overlap("copy_", dst, src);
  const RawTensor s = src.expand(dst.shape());
  if (src.device() == dst.device()) {
    backend_for(dst.device()).copy(s, dst);
  } else {
    backend_for(dst.device()).copy(to_device(s.contiguous(), dst.device()), dst);
  }
  dst.storage()->bump_version();
}

RawTensor to_device(const RawTensor& t, Device device) { return t.to(device); }

}  // namespace prim
}  // namespace tg
