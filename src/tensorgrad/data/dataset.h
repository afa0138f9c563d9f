/// \file
/// data/dataset.h: the Dataset interface (one Example by index, or a whole Batch at once) and
/// TensorDataset over two tensors that share their first (sample) dimension. The IDX/MNIST datasets
/// are in data/idx.h; batching, shuffling and the prefetch thread are in data/loader.h.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "tensorgrad/autograd/tensor.h"

namespace tg {
namespace data {

/// One sample: data and target, e.g. an image (1, 28, 28) and a 0-d int64 label (libtorch's
/// torch::data::Example). Example<> is two Tensors, what Dataset::get returns; the libtorch-style
/// datasets of data/datasets.h return it too, and the Stack transform makes a batch of them one.
template <class Data = Tensor, class Target = Tensor>
struct Example {
  using DataType = Data;       ///< The type of data.
  using TargetType = Target;   ///< The type of target.
  Example() = default;         ///< Both members default-constructed (undefined Tensors).
  /// Holds data and target: `return {image, label};`.
  Example(Data data, Target target) : data(std::move(data)), target(std::move(target)) {}
  /// The input.
  Data data;
  /// The label.
  Target target;
};

namespace example {
/// The Target of an Example without a target (libtorch's torch::data::example::NoTarget).
using NoTarget = void;
}  // namespace example

/// An Example without a target: only data, to which it converts (libtorch's specialization).
template <class Data>
struct Example<Data, example::NoTarget> {
  using DataType = Data;                   ///< The type of data.
  using TargetType = example::NoTarget;    ///< No target.
  Example() = default;                     ///< data default-constructed.
  /// Holds data; implicit, so that `return tensor[i];` makes one.
  Example(Data data) : data(std::move(data)) {}   // NOLINT(google-explicit-constructor)
  /// The data, as libtorch's loader hands an unlabelled Example to code that wants the Data.
  operator Data&() { return data; }               // NOLINT(google-explicit-constructor)
  /// See operator Data&().
  operator const Data&() const { return data; }   // NOLINT(google-explicit-constructor)
  /// The input.
  Data data;
};

/// An Example of one Tensor and no target (libtorch's torch::data::TensorExample).
using TensorExample = Example<Tensor, example::NoTarget>;

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
  virtual Example<> get(int64_t index) const = 0;
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
  Example<> get(int64_t index) const override;       ///< -> data (...), target (...)
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
