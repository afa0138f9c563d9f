// engine/tensor.h: Storage (owned bytes) and Tensor (a strided view over a shared Storage).
// No autograd here: that is Variable (engine/variable.h). Math on Tensors is in engine/prim.h.
#pragma once
#include <cstdint>
#include <memory>
#include <ostream>
#include <vector>

#include "tensorgrad/engine/allocator.h"
#include "tensorgrad/engine/debug.h"
#include "tensorgrad/engine/device.h"
#include "tensorgrad/engine/shape.h"

namespace tg {

/// Owns nbytes on one device through the allocator that frees them. Not copyable.
/// `version` counts in-place writes to these bytes; every view (and every detach) shares it.
/// See Note [Version counter] in engine/variable.h.
class Storage {
 public:
  Storage(std::size_t nbytes, Device device, Allocator* allocator);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  std::size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }
  uint64_t version() const { return version_; }
  void bump_version() { ++version_; }
  /// When other has the same size, device and allocator: exchanges the two blocks of bytes in O(1)
  /// (what copying all of other's bytes here would show through this storage's views), bumps both
  /// versions and returns true. Otherwise changes nothing and returns false. Checkpoint loads use it
  /// to move freshly read parameters in without a second copy (nn/serialize.cpp).
  bool swap_bytes(Storage& other) noexcept;

 private:
  void* data_ = nullptr;
  std::size_t nbytes_ = 0;
  Device device_;
  Allocator* allocator_ = nullptr;
  uint64_t version_ = 0;
  debug::detail::Counted<debug::detail::kStorage> counted_;
};

class Tensor {
 public:
  // Undefined: defined() is false. User-provided (not = default) so that value-initialization (Grads,
  // std::vector<Tensor>(n)) runs the member initializers only, instead of zeroing all 152 bytes first.
  Tensor() noexcept {}
  Tensor(std::shared_ptr<Storage> storage, Shape shape, Shape strides, int64_t offset, DType dtype);

  /// Fresh contiguous tensor with unspecified contents; validates the shape before allocating.
  static Tensor empty(const Shape& shape, DType dtype = kFloat32, Device device = Device::cpu());

  bool defined() const { return storage_ != nullptr; }
  const Shape& shape() const { return shape_; }
  const Shape& strides() const { return strides_; }
  int64_t offset() const { return offset_; }
  int64_t dim() const { return static_cast<int64_t>(shape_.size()); }
  int64_t size(int64_t d) const;
  int64_t numel() const { return numel_; }
  DType dtype() const { return dtype_; }
  Device device() const { return storage_ ? storage_->device() : Device::cpu(); }
  bool is_contiguous() const;
  const std::shared_ptr<Storage>& storage() const { return storage_; }
  uint64_t version() const { return storage_ ? storage_->version() : 0; }

  /// Pointer to element [0,...,0] (offset applied); nullptr when the storage holds no bytes (a zero-size
  /// tensor, whose views may still carry an offset: null + offset would be undefined behaviour).
  template <class T>
  T* data() const {
    T* base = static_cast<T*>(storage_->data());
    return base ? base + offset_ : nullptr;
  }
  void* raw_data() const {
    char* base = static_cast<char*>(storage_->data());
    return base ? base + offset_ * int64_t(dtype_size(dtype_)) : nullptr;
  }

  // Views: share storage, metadata only. Each validates and throws with the op name.
  Tensor view(const Shape& shape) const;            // needs compatible strides (else ShapeError)
  Tensor reshape(const Shape& shape) const;         // view when possible, else a contiguous copy
  Tensor as_strided(const Shape& shape, const Shape& strides, int64_t offset) const;
  Tensor transpose(int64_t d0, int64_t d1) const;
  Tensor permute(const std::vector<int64_t>& dims) const;
  Tensor expand(const Shape& shape) const;
  Tensor squeeze(int64_t d) const;
  Tensor squeeze() const;
  Tensor unsqueeze(int64_t d) const;
  Tensor narrow(int64_t d, int64_t start, int64_t length) const;
  Tensor select(int64_t d, int64_t index) const;

  // Copies (through the backend).
  Tensor contiguous() const;                        // this if already contiguous
  Tensor clone() const;                             // always a fresh contiguous copy
  Tensor to(Device device, bool non_blocking = false) const;   // this if already there; engine/backend.cpp
  Tensor to(DType dtype) const;                     // this if already that dtype
  double item() const;                              // one element, any device (syncs)

 private:
  std::shared_ptr<Storage> storage_;
  Shape shape_, strides_;
  int64_t offset_ = 0;
  int64_t numel_ = 0;
  DType dtype_ = kFloat32;
};

/// Resolves one -1 in a requested shape against numel; throws ShapeError naming op.
Shape infer_shape(const Shape& requested, int64_t numel, const char* op);

/// Prints like PyTorch: "tensor([[1.0000, 2.0000], ...])" with dtype/device suffixes when not defaults.
std::ostream& operator<<(std::ostream& os, const Tensor& t);
std::string tensor_meta_str(const Tensor& t);       // "[float32 [2, 3]]", used in error messages

}  // namespace tg
