// backend/backend.cpp: the backend selector (the one place outside backend/ that knows CUDA exists), the
// row and reduction layouts the kernels walk, the errors the backends report, and the methods of
// core/raw_tensor.h that need a device (allocation, copies, RawTensor::to). A build without CUDA links
// backend/no_cuda/cuda.cpp for the tg::cuda functions of core/accelerator.h.
#include "tensorgrad/backend/backend.h"

#include <limits>

#include "tensorgrad/core/accelerator.h"
#include "tensorgrad/core/error.h"
#include "tensorgrad/core/memory.h"

namespace tg {

Backend& backend_for(Device device) {
  if (device.is_cpu()) return cpu_backend();
  return cuda::detail::backend(with_index(device).index());
}

RowView rows_of(const RawTensor& x, int64_t dim) {
  RowView r{1, x.dim() == 0 ? 1 : x.shape()[dim], 1};
  for (int64_t d = 0; d < dim; ++d) r.outer *= x.shape()[d];
  for (int64_t d = dim + 1; d < x.dim(); ++d) r.inner *= x.shape()[d];
  return r;
}

ReductionLayout reduction_layout(const RawTensor& x, const RawTensor& out) {
  ReductionLayout l;
  std::vector<int64_t> perm, reduced;
  for (int64_t d = 0; d < x.dim(); ++d) (out.shape()[d] == x.shape()[d] ? perm : reduced).push_back(d);
  l.nkept = static_cast<int64_t>(perm.size());
  perm.insert(perm.end(), reduced.begin(), reduced.end());
  l.x = x.permute(perm);
  for (int64_t d : reduced) l.R *= x.shape()[d];
  bool single = true;   // are the reduced dims one stride apart?
  int64_t expect = -1;
  for (int64_t d = l.x.dim() - 1; d >= l.nkept; --d) {
    if (l.x.shape()[d] == 1) continue;
    if (expect == -1) l.rstride = l.x.strides()[d];
    else if (l.x.strides()[d] != expect) single = false;
    expect = l.x.strides()[d] * l.x.shape()[d];
  }
  if (!single) {
    l.x = l.x.contiguous();
    l.rstride = 1;
  }
  return l;
}

IndexError index_out_of_range_error(const char* op, int64_t index, int64_t dim, int64_t size) {
  return IndexError(detail::cat(op, ": index ", index, " is out of bounds for dimension ", dim, " with size ", size));
}

IndexError cross_entropy_target_error(int64_t target, int64_t classes) {
  return IndexError(detail::cat("cross_entropy: target ", target, " is out of bounds for ", classes, " classes"));
}

IndexError ctc_target_error(int64_t label, int64_t entry, int64_t position, int64_t classes, int64_t blank) {
  return IndexError(detail::cat("ctc_loss: target ", label, " of batch entry ", entry, " (position ", position,
                                ") is out of range for ", classes, " classes or equal to blank ", blank));
}

// ---- RawTensor's methods that need a device: declared in core/raw_tensor.h, defined here where the devices are.

RawTensor RawTensor::empty(const Shape& shape, DType dtype, Device device) {
  const int64_t n = checked_numel(shape, "empty");
  TG_CHECK(n <= std::numeric_limits<int64_t>::max() / int64_t(dtype_size(dtype)), OutOfMemoryError, "empty: cannot allocate ", n, " elements of ",
           dtype_name(dtype), " (shape ", shape_str(shape), ")");
  Backend& be = backend_for(device);   // throws DeviceError for an unusable device
  auto storage = std::make_shared<Storage>(static_cast<std::size_t>(n) * dtype_size(dtype), device, &be.allocator());
  storage->describe(shape, dtype);
  return RawTensor(std::move(storage), shape, contiguous_strides(shape), 0, dtype);
}

RawTensor RawTensor::clone() const {
  RawTensor out = empty(shape_, dtype_, device());
  backend_for(device()).copy(*this, out);
  return out;
}

RawTensor RawTensor::to(DType dtype) const {
  if (dtype == dtype_) return *this;
  RawTensor out = empty(shape_, dtype, device());
  backend_for(device()).copy(*this, out);
  return out;
}

RawTensor RawTensor::to(Device target, bool non_blocking) const {
  const Device device = with_index(target);
  if (device == this->device()) return *this;
  backend_for(device);   // throws DeviceError when the target device is unusable
  // Host<->device and device<->device copies: backend/cuda/runtime.cu (stream-ordered; pinned sources may be
  // asynchronous with non_blocking; copies to the CPU synchronize).
  return cuda::detail::to_device(*this, device, non_blocking);
}


}  // namespace tg
