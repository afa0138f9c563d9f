/// \file
/// data/datasets.h: libtorch's datasets (torch::data::datasets): the CRTP bases a user's dataset
/// derives from (Dataset<Self>, BatchDataset<Self>), MapDataset and .map() (transforms are in
/// data/transforms.h), MNIST with libtorch's Mode and TensorDataset. make_data_loader
/// (data/dataloader.h) loads them. tensorgrad's own Dataset interface, read by DataLoader, is
/// data/dataset.h; see Note [Two data APIs] in data/dataloader.h.
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "tensorgrad/autograd/tensor.h"
#include "tensorgrad/data/dataset.h"

namespace tg {
namespace data {
/// libtorch's datasets (torch::data::datasets): CRTP bases for one's own, MNIST, MapDataset.
namespace datasets {

template <class SourceDataset, class AppliedTransform>
class MapDataset;
template <class DatasetType, class TransformType>
MapDataset<DatasetType, TransformType> map(DatasetType dataset, TransformType transform);

namespace detail {
/// Whether T is a std::optional (a stateful dataset's batch type).
template <class T>
struct is_optional : std::false_type {};
/// See is_optional.
template <class T>
struct is_optional<std::optional<T>> : std::true_type {};
/// false, for a static_assert that fires only when its template is used.
template <class...>
struct always_false : std::false_type {};
}  // namespace detail

/// A dataset that yields whole batches (libtorch's torch::data::datasets::BatchDataset): Self is the
/// deriving class (CRTP), Batch what get_batch returns, BatchRequest what it takes. libtorch takes an
/// ArrayRef<size_t>; here the default request is a std::vector<size_t>, moved in.
template <class Self, class Batch = std::vector<Example<>>, class BatchRequest = std::vector<size_t>>
class BatchDataset {
 public:
  using SelfType = Self;                    ///< The deriving class.
  using BatchType = Batch;                  ///< What get_batch returns.
  using BatchRequestType = BatchRequest;    ///< What get_batch takes.
  /// Stateful datasets (a std::optional batch: libtorch's StatefulDataset, ChunkDataset) are not
  /// loaded by make_data_loader, which says so at compile time.
  static constexpr bool is_stateful = detail::is_optional<BatchType>::value;

  virtual ~BatchDataset() = default;
  /// The batch for request.
  virtual Batch get_batch(BatchRequest request) = 0;
  /// The number of samples, or nullopt for an unsized dataset.
  virtual std::optional<size_t> size() const = 0;

  /// A MapDataset applying transform to the batches of a copy of this dataset.
  template <class TransformType>
  MapDataset<Self, TransformType> map(TransformType transform) & {
    return datasets::map(static_cast<Self&>(*this), std::move(transform));
  }
  /// A MapDataset applying transform to the batches of this dataset, moved in.
  template <class TransformType>
  MapDataset<Self, TransformType> map(TransformType transform) && {
    return datasets::map(std::move(static_cast<Self&>(*this)), std::move(transform));
  }
};

/// A dataset of samples by index, what a user's dataset derives from (libtorch's
/// torch::data::datasets::Dataset): override get(index) and size(); batches are the vector of get()
/// over the requested indices (override get_batch for a faster one).
/// \code
/// struct Squares : tg::data::datasets::Dataset<Squares> {
///   tg::data::Example<> get(size_t i) override { return {tg::full({1}, double(i)), tg::full({1}, double(i * i))}; }
///   std::optional<size_t> size() const override { return 100; }
/// };
/// \endcode
template <class Self, class SingleExample = Example<>>
class Dataset : public BatchDataset<Self, std::vector<SingleExample>> {
 public:
  using ExampleType = SingleExample;   ///< What get returns.
  /// The sample at index.
  virtual ExampleType get(size_t index) = 0;
  /// get(i) for every requested index, in order.
  std::vector<ExampleType> get_batch(std::vector<size_t> indices) override {
    std::vector<ExampleType> batch;
    batch.reserve(indices.size());
    for (const size_t i : indices) batch.push_back(get(i));
    return batch;
  }
};

/// A dataset whose batches are another dataset's with a transform applied (libtorch's MapDataset):
/// what dataset.map(transform) returns. It holds both by value.
template <class SourceDataset, class AppliedTransform>
class MapDataset : public BatchDataset<MapDataset<SourceDataset, AppliedTransform>,
                                       typename AppliedTransform::OutputBatchType,
                                       typename SourceDataset::BatchRequestType> {
  static_assert(!SourceDataset::is_stateful,
                "MapDataset: stateful datasets (StatefulDataset, ChunkDataset) are not supported; derive from "
                "tg::data::datasets::Dataset<Self> or BatchDataset<Self>");

 public:
  using DatasetType = SourceDataset;                                       ///< The source dataset.
  using TransformType = AppliedTransform;                                  ///< The transform.
  using BatchRequestType = typename SourceDataset::BatchRequestType;       ///< The source's request.
  using OutputBatchType = typename AppliedTransform::OutputBatchType;      ///< The transform's result.

  /// Applies transform to dataset's batches.
  MapDataset(DatasetType dataset, TransformType transform)
      : dataset_(std::move(dataset)), transform_(std::move(transform)) {}
  /// The source's batch for indices, transformed.
  OutputBatchType get_batch(BatchRequestType indices) override {
    return transform_.apply_batch(dataset_.get_batch(std::move(indices)));
  }
  /// The source's size.
  std::optional<size_t> size() const override { return dataset_.size(); }
  /// The source dataset.
  const SourceDataset& dataset() noexcept { return dataset_; }
  /// The transform.
  const AppliedTransform& transform() noexcept { return transform_; }

 private:
  SourceDataset dataset_;
  AppliedTransform transform_;
};

/// MapDataset(dataset, transform), checking that the transform takes the dataset's batches.
template <class DatasetType, class TransformType>
MapDataset<DatasetType, TransformType> map(DatasetType dataset, TransformType transform) {
  static_assert(std::is_same<typename DatasetType::BatchType, typename TransformType::InputBatchType>::value,
                "map: BatchType type of dataset does not match input type of transform (an example transform "
                "such as Normalize or Lambda goes before Stack, which turns the batch into one Example)");
  return {std::move(dataset), std::move(transform)};
}

/// Not supported: libtorch's StatefulDataset (batches until an empty optional, reset() per epoch).
/// Deriving from it stops the build with a message naming what to use instead.
template <class Self, class Batch = std::vector<Example<>>, class BatchRequest = size_t>
class StatefulDataset {
  static_assert(detail::always_false<Self>::value,
                "tg::data::datasets::StatefulDataset: stateful datasets are not supported; derive from "
                "tg::data::datasets::Dataset<Self> (get(index), size()) or BatchDataset<Self>");
};

/// Not supported: libtorch's ChunkDataset (chunk readers and their samplers). Naming it stops the
/// build with a message naming what to use instead.
template <class... Args>
class ChunkDataset {
  static_assert(detail::always_false<Args...>::value,
                "tg::data::datasets::ChunkDataset: stateful datasets are not supported; derive from "
                "tg::data::datasets::Dataset<Self> (get(index), size()) or BatchDataset<Self>");
};

/// MNIST, or Fashion-MNIST, from a folder of the four IDX files train-images-idx3-ubyte,
/// train-labels-idx1-ubyte, t10k-images-idx3-ubyte and t10k-labels-idx1-ubyte, plain or gzipped
/// (".gz" added) (libtorch's torch::data::datasets::MNIST, which reads plain files only). Samples:
/// data (1, 28, 28) float32 in [0, 1], target a 0-d int64 label. Unlike libtorch, any number of
/// images and any image size are accepted. The files are read by data/idx.h's reader (IOError for
/// a missing file, naming it; DataError for a malformed one).
class MNIST : public Dataset<MNIST> {
 public:
  /// Which split to load.
  enum class Mode { kTrain, kTest };
  /** \var Mode::kTrain
      The training set (train-*). */
  /** \var Mode::kTest
      The test set (t10k-*). */

  /// Reads the mode's two files from root.
  explicit MNIST(const std::string& root, Mode mode = Mode::kTrain);
  /// Image index (1, 28, 28) and its label (0-d), views of images() and targets(); IndexError out of range.
  Example<> get(size_t index) override;
  /// The number of images.
  std::optional<size_t> size() const override;
  /// Whether this is the training split (libtorch compares the count with 60,000; here the mode says).
  bool is_train() const noexcept { return mode_ == Mode::kTrain; }
  /// All images, (N, 1, 28, 28) float32.
  const Tensor& images() const { return images_; }
  /// All labels, (N) int64.
  const Tensor& targets() const { return targets_; }

 private:
  Tensor images_, targets_;
  Mode mode_;
};

/// The rows of one tensor, each an Example without a target (libtorch's
/// torch::data::datasets::TensorDataset; tensorgrad's own data::TensorDataset holds data and targets).
struct TensorDataset : public Dataset<TensorDataset, TensorExample> {
  /// The tensors stacked along a new first dimension.
  explicit TensorDataset(const std::vector<Tensor>& tensors);
  /// tensor's rows (ShapeError for a 0-d tensor).
  explicit TensorDataset(Tensor tensor);
  /// Row index (a view); IndexError out of range.
  TensorExample get(size_t index) override;
  /// The number of rows.
  std::optional<size_t> size() const override { return static_cast<size_t>(tensor.size(0)); }
  /// The rows.
  Tensor tensor;
};

}  // namespace datasets
}  // namespace data
}  // namespace tg
