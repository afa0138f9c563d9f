/// \file
/// core/raw_tensor.h: Storage (owned bytes) and RawTensor (a strided view over a shared Storage).
/// No autograd here: that is Tensor (autograd/tensor.h). Math on RawTensors is in prim/prim.h.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "tensorgrad/core/allocator.h"
#include "tensorgrad/core/debug.h"
#include "tensorgrad/core/device.h"
#include "tensorgrad/core/shape.h"

namespace tg {

namespace memory {
struct StorageList;
}

/// Owns nbytes on one device through the allocator that frees them. Not copyable.
/// `version` counts in-place writes to these bytes; every view (and every detach) shares it.
/// See Note [Version counter] in autograd/tensor.h.
class Storage {
 public:
  /// Allocates nbytes from allocator (which must outlive the Storage); throws OutOfMemoryError.
  Storage(std::size_t nbytes, Device device, Allocator* allocator);
  /// Gives the bytes back to the allocator.
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  /// The first byte; nullptr when nbytes() is 0.
  void* data() const { return data_; }
  /// The size in bytes, as requested.
  std::size_t nbytes() const { return nbytes_; }
  /// The device that holds the bytes.
  Device device() const { return device_; }
  /// The number of in-place writes so far.
  uint64_t version() const { return version_; }
  /// Records an in-place write (every prim that writes in place calls it).
  void bump_version() { ++version_; }
  /// When other has the same size, device and allocator: exchanges the two blocks of bytes in O(1)
  /// (what copying all of other's bytes here would show through this storage's views), bumps both
  /// versions and returns true. Otherwise changes nothing and returns false. Checkpoint loads use it
  /// to move freshly read parameters in without a second copy (io/checkpoint.cpp).
  bool swap_bytes(Storage& other) noexcept;

  /// Storages of at least this many bytes are listed in OutOfMemoryError reports (Note [Live tensor
  /// report], core/memory.cpp); smaller ones cost nothing extra.
  static constexpr std::size_t kReportedBytes = 64 * 1024;
  /// Records the shape and dtype these bytes were allocated for, and the op running on this thread
  /// (the backward of a Node while the engine runs it), and lists a storage of at least
  /// kReportedBytes among the live tensors. RawTensor::empty calls it.
  void describe(const Shape& shape, DType dtype);
  /// Names the op whose result these bytes hold when none is named yet (tg::record calls it).
  void name_op(const char* op) noexcept {
    const char* none = nullptr;
    if (tracked_) op_.compare_exchange_strong(none, op, std::memory_order_relaxed);
  }
  /// Whether the storage is listed among the live tensors.
  bool tracked() const { return tracked_; }
  /// The shape given to describe().
  const Shape& described_shape() const { return shape_; }
  /// The dtype given to describe().
  DType described_dtype() const { return dtype_; }
  /// The op that created these bytes, or nullptr when unknown.
  const char* op() const { return op_.load(std::memory_order_relaxed); }
  /// True when the bytes were created by the backward of op().
  bool op_is_backward() const { return op_backward_; }

 private:
  friend struct memory::StorageList;   // core/memory.cpp: the list of live storages
  void* data_ = nullptr;
  std::size_t nbytes_ = 0;
  Device device_;
  Allocator* allocator_ = nullptr;
  uint64_t version_ = 0;
  debug::detail::Counted<debug::detail::kStorage> counted_;
  // Note [Live tensor report]: describe() fills these once, before the storage is listed.
  Shape shape_;
  DType dtype_ = DType::Float32;
  std::atomic<const char*> op_{nullptr};
  bool op_backward_ = false;
  bool tracked_ = false;
  Storage* live_prev_ = nullptr;
  Storage* live_next_ = nullptr;
};

/// A strided view over a shared Storage: shape, strides and offset in elements, and a dtype. No
/// autograd (that is Tensor, which holds one). Copies are cheap handles that share the bytes;
/// views share them too. Math on RawTensors is in tg::prim; backward rules (tg::record) receive and
/// return RawTensors. PyTorch's at::Tensor without its autograd part.
class RawTensor {
 public:
  /// Undefined: defined() is false.
  // User-provided (not = default) so that value-initialization (Grads,
  // std::vector<RawTensor>(n)) runs the member initializers only, instead of zeroing all 152 bytes first.
  RawTensor() noexcept {}
  /// A view of storage with the given sizes, strides (in elements) and offset. Unchecked: every
  /// element it addresses must lie inside the storage.
  RawTensor(std::shared_ptr<Storage> storage, Shape shape, Shape strides, int64_t offset, DType dtype);

  /// Fresh contiguous tensor with unspecified contents; validates the shape before allocating.
  static RawTensor empty(const Shape& shape, DType dtype = kFloat32, Device device = Device::cpu());

  /// False for a default-constructed RawTensor (no storage).
  bool defined() const { return storage_ != nullptr; }
  /// The size of each dim.
  const Shape& shape() const { return shape_; }
  /// shape(), by libtorch's name.
  const Shape& sizes() const { return shape_; }
  /// The step, in elements, between neighbours along each dim (0 where expanded).
  const Shape& strides() const { return strides_; }
  /// The position of element [0,...,0] in the storage, in elements.
  int64_t offset() const { return offset_; }
  /// The number of dims (0 for a scalar).
  int64_t dim() const { return static_cast<int64_t>(shape_.size()); }
  /// The size of dim d (negative d counts from the end); IndexError when out of range.
  int64_t size(int64_t d) const;
  /// The number of elements.
  int64_t numel() const { return numel_; }
  /// The element type.
  DType dtype() const { return dtype_; }
  /// The storage's device; cpu for an undefined tensor.
  Device device() const { return storage_ ? storage_->device() : Device::cpu(); }
  /// True when the elements are laid out in row-major order without gaps (size-1 dims and
  /// zero-size tensors count as contiguous, as in PyTorch).
  bool is_contiguous() const;
  /// The shared bytes.
  const std::shared_ptr<Storage>& storage() const { return storage_; }
  /// The storage's version counter (0 when undefined); see Note [Version counter].
  uint64_t version() const { return storage_ ? storage_->version() : 0; }

  /// Pointer to element [0,...,0] (offset applied); nullptr when the storage holds no bytes (a zero-size
  /// tensor, whose views may still carry an offset: null + offset would be undefined behaviour).
  template <class T>
  T* data() const {
    T* base = static_cast<T*>(storage_->data());
    return base ? base + offset_ : nullptr;
  }
  /// The same pointer, untyped (offset applied in bytes of the dtype).
  void* raw_data() const {
    char* base = static_cast<char*>(storage_->data());
    return base ? base + offset_ * int64_t(dtype_size(dtype_)) : nullptr;
  }

  // Views: share storage, metadata only. Each validates and throws with the op name.
  /// The same elements with another shape (one size may be -1: inferred). Needs strides compatible
  /// with the new shape (always so when contiguous), else ShapeError.
  RawTensor view(const Shape& shape) const;
  /// As view() when possible, else a contiguous copy with the new shape.
  RawTensor reshape(const Shape& shape) const;
  /// A view with the given sizes, strides and offset over the same storage. Unchecked.
  RawTensor as_strided(const Shape& shape, const Shape& strides, int64_t offset) const;
  /// Swaps dims d0 and d1.
  RawTensor transpose(int64_t d0, int64_t d1) const;
  /// Reorders the dims: dim i of the result is dim dims[i] of this. ShapeError unless dims is a
  /// permutation of all dims.
  RawTensor permute(const std::vector<int64_t>& dims) const;
  /// Broadcasts size-1 dims (and new leading dims) to shape with stride 0; -1 keeps a size.
  RawTensor expand(const Shape& shape) const;
  /// Removes dim d when its size is 1; otherwise returns this unchanged.
  RawTensor squeeze(int64_t d) const;
  /// Removes every size-1 dim.
  RawTensor squeeze() const;
  /// Inserts a size-1 dim at position d (in [-dim()-1, dim()]).
  RawTensor unsqueeze(int64_t d) const;
  /// Elements [start, start + length) along dim d; IndexError when out of range.
  RawTensor narrow(int64_t d, int64_t start, int64_t length) const;
  /// The slice at index along dim d, which is removed; negative index counts from the end.
  RawTensor select(int64_t d, int64_t index) const;

  // Copies (through the backend).
  RawTensor contiguous() const;                        ///< this if already contiguous, else clone()
  RawTensor clone() const;                             ///< always a fresh contiguous copy
  /// A copy on device; this itself when already there. Host-to-GPU copies from pinned memory are
  /// asynchronous with non_blocking; copies to the CPU synchronize. DeviceError when the device is unusable.
  RawTensor to(Device device, bool non_blocking = false) const;
  RawTensor to(DType dtype) const;                     ///< a converted copy; this if already that dtype
  /// The value of a one-element tensor as double, from any device (syncs); ShapeError otherwise.
  double item() const;

 private:
  std::shared_ptr<Storage> storage_;
  Shape shape_, strides_;
  int64_t offset_ = 0;
  int64_t numel_ = 0;
  DType dtype_ = kFloat32;
};

/// Resolves one -1 in a requested shape against numel; throws ShapeError naming op.
Shape infer_shape(const Shape& requested, int64_t numel, const char* op);

/// Prints like PyTorch: "tensor([[1.0000, 2.0000], ...])" with dtype/device suffixes when not defaults
/// (Note [Printing numbers] in core/raw_tensor.cpp).
std::ostream& operator<<(std::ostream& os, const RawTensor& t);
namespace detail {
/// What operator<< prints, with extra_suffixes (Tensor's "grad_fn=<mul>") after its own, each placed
/// as PyTorch places suffixes: on a new line when it would pass the 80-column line width.
std::string tensor_repr(const RawTensor& t, const std::vector<std::string>& extra_suffixes);
}  // namespace detail
std::string tensor_meta_str(const RawTensor& t);       ///< "[float32 [2, 3]]", used in error messages

}  // namespace tg
