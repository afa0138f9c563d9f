/// \file
/// data/dataset.h: the Dataset interface (one Example by index, or a whole Batch at once) and
/// TensorDataset over two tensors that share their first (sample) dimension. The IDX/MNIST datasets
/// are in data/idx.h; batching, shuffling and the prefetch thread are in data/loader.h.
#pragma once
#include <cstdint>
#include <vector>

#include "tensorgrad/autograd/tensor.h"

namespace tg {
namespace data {

/// One sample: data (...) and target (...), e.g. an image (1, 28, 28) and a 0-d int64 label.
struct Example {
  /// The input.
  Tensor data;
  /// The label.
  Tensor target;
};

/// A stack of samples along a new first dimension: data (B, ...) and target (B, ...).
struct Batch {
  /// The inputs, (B, ...).
  Tensor data;
  /// The labels, (B, ...).
  Tensor target;
};

/// Note [Dataset thread safety]
/// A DataLoader calls get_batch() (and so get()) from its worker threads, several at once with
/// num_workers(n), while the user's thread may call them too. Implementations must therefore be safe to call concurrently through a const
/// reference: read-only state, or state guarded by the dataset itself.
/// The interface a DataLoader reads (PyTorch's torch.utils.data.Dataset): a size and samples by index.
class Dataset {
 public:
  virtual ~Dataset() = default;
  /// The number of samples.
  virtual int64_t size() const = 0;
  /// The sample at index in [0, size()); out of range throws IndexError.
  virtual Example get(int64_t index) const = 0;
  /// The samples at indices, stacked. The default stacks get() results (all of one shape and dtype,
  /// else DataError); datasets backed by one tensor override it with a single gather.
  virtual Batch get_batch(const std::vector<int64_t>& indices) const;
};

/// Samples are rows of two tensors: data (N, ...) and targets (N, ...). get() returns views that share
/// the tensors' storage (as PyTorch's TensorDataset does); get_batch() copies the rows into fresh tensors.
class TensorDataset : public Dataset {
 public:
  /// data (N, ...), targets (N, ...): both defined (Error), with at least one dim and the same N
  /// (ShapeError).
  TensorDataset(Tensor data, Tensor targets);   // data (N, ...), targets (N, ...)
  /// N.
  int64_t size() const override { return size_; }
  Example get(int64_t index) const override;         ///< -> data (...), target (...)
  Batch get_batch(const std::vector<int64_t>& indices) const override;   ///< -> (B, ...), (B, ...)
  /// All samples' inputs, (N, ...).
  const Tensor& data() const { return data_; }
  /// All samples' labels, (N, ...).
  const Tensor& targets() const { return targets_; }

 private:
  Tensor data_, targets_;
  int64_t size_ = 0;
};

}  // namespace data
}  // namespace tg
