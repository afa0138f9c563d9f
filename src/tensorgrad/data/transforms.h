/// \file
/// data/transforms.h: libtorch's transforms (torch::data::transforms), which dataset.map(...) applies
/// to a dataset's batches (data/datasets.h): per-example ones (Normalize, Lambda, TensorLambda) and
/// collations that turn a batch into one value (Stack, Collate).
#pragma once
#include <functional>
#include <initializer_list>
#include <utility>
#include <vector>

#include "tensorgrad/data/dataset.h"
#include "tensorgrad/ops/creation.h"
#include "tensorgrad/ops/ops.h"

namespace tg {
namespace data {
/// libtorch's transforms (torch::data::transforms): what dataset.map(...) applies.
namespace transforms {

/// A transform of a whole batch into a new batch (libtorch's BatchTransform).
template <class InputBatch, class OutputBatch>
class BatchTransform {
 public:
  using InputBatchType = InputBatch;     ///< What it takes.
  using OutputBatchType = OutputBatch;   ///< What it gives.
  virtual ~BatchTransform() = default;
  /// The transformed batch.
  virtual OutputBatch apply_batch(InputBatch input_batch) = 0;
};

/// A transform of single examples, applied to each example of a batch (libtorch's Transform).
template <class Input, class Output>
class Transform : public BatchTransform<std::vector<Input>, std::vector<Output>> {
 public:
  using InputType = Input;     ///< The example it takes.
  using OutputType = Output;   ///< The example it gives.
  /// The transformed example.
  virtual OutputType apply(InputType input) = 0;
  /// apply() on every example of the batch.
  std::vector<Output> apply_batch(std::vector<Input> input_batch) override {
    std::vector<Output> output_batch;
    output_batch.reserve(input_batch.size());
    for (auto&& input : input_batch) output_batch.push_back(apply(std::move(input)));
    return output_batch;
  }
};

/// A BatchTransform that calls a function on the batch (libtorch's BatchLambda).
template <class Input, class Output = Input>
class BatchLambda : public BatchTransform<Input, Output> {
 public:
  /// The function's type.
  using FunctionType = std::function<Output(Input)>;
  /// Applies function.
  explicit BatchLambda(FunctionType function) : function_(std::move(function)) {}
  /// function(input_batch).
  Output apply_batch(Input input_batch) override { return function_(std::move(input_batch)); }

 private:
  FunctionType function_;
};

/// A Transform that calls a function on each example (libtorch's Lambda):
/// `.map(transforms::Lambda<Example<>>([](Example<> e) { e.data = e.data.flatten(); return e; }))`.
template <class Input, class Output = Input>
class Lambda : public Transform<Input, Output> {
 public:
  /// The function's type.
  using FunctionType = std::function<Output(Input)>;
  /// Applies function.
  explicit Lambda(FunctionType function) : function_(std::move(function)) {}
  /// function(input).
  Output apply(Input input) override { return function_(std::move(input)); }

 private:
  FunctionType function_;
};

/// A transform that reduces a batch to one value (libtorch's Collation).
template <class T, class BatchType = std::vector<T>>
using Collation = BatchTransform<BatchType, T>;
/// A Collation through a function (libtorch's Collate).
template <class T, class BatchType = std::vector<T>>
using Collate = BatchLambda<BatchType, T>;

/// Stacks a batch of examples into one (libtorch's Stack): `.map(transforms::Stack<>())` makes the
/// loader yield Example<> with data (B, ...) and target (B, ...) instead of a vector of examples.
template <class T = Example<>>
struct Stack;

/// Stacks the data and the targets of the batch, each along a new first dimension.
template <>
struct Stack<Example<>> : public Collation<Example<>> {
  /// {stack(data), stack(targets)}; ShapeError when the examples differ in shape.
  Example<> apply_batch(std::vector<Example<>> examples) override {
    std::vector<Tensor> data, targets;
    data.reserve(examples.size());
    targets.reserve(examples.size());
    for (auto& example : examples) {
      data.push_back(std::move(example.data));
      targets.push_back(std::move(example.target));
    }
    return {stack(data), stack(targets)};
  }
};

/// Stacks the data of a batch of examples without targets.
template <>
struct Stack<TensorExample> : public Collation<TensorExample> {
  /// stack(data); ShapeError when the examples differ in shape.
  TensorExample apply_batch(std::vector<TensorExample> examples) override {
    std::vector<Tensor> data;
    data.reserve(examples.size());
    for (auto& example : examples) data.push_back(std::move(example.data));
    return stack(data);
  }
};

/// A Transform of an Example's data only, the target passing through (libtorch's TensorTransform):
/// override operator()(Tensor).
template <class Target = Tensor>
class TensorTransform : public Transform<Example<Tensor, Target>, Example<Tensor, Target>> {
 public:
  /// The example type.
  using E = Example<Tensor, Target>;
  /// The transformed data.
  virtual Tensor operator()(Tensor input) = 0;
  /// The example with operator() applied to its data.
  E apply(E input) override {
    input.data = (*this)(std::move(input.data));
    return input;
  }
};

/// A TensorTransform through a function (libtorch's TensorLambda).
template <class Target = Tensor>
class TensorLambda : public TensorTransform<Target> {
 public:
  /// The function's type.
  using FunctionType = std::function<Tensor(Tensor)>;
  /// Applies function to each example's data.
  explicit TensorLambda(FunctionType function) : function_(std::move(function)) {}
  /// function(input).
  Tensor operator()(Tensor input) override { return function_(std::move(input)); }

 private:
  FunctionType function_;
};

/// (data - mean) / stddev for each example (libtorch's Normalize): mean and stddev hold one value, or
/// one per channel of a (C, H, W) image; each becomes a float32 (C, 1, 1) tensor, as in libtorch.
/// `.map(transforms::Normalize<>(0.1307, 0.3081))`.
template <class Target = Tensor>
struct Normalize : public TensorTransform<Target> {
  /// One mean and one standard deviation for every channel.
  Normalize(double mean, double stddev) : Normalize(std::vector<double>{mean}, std::vector<double>{stddev}) {}
  /// A mean and a standard deviation per channel: Normalize<>({0.5, 0.5, 0.5}, {0.2, 0.2, 0.2}).
  Normalize(const std::vector<double>& mean, const std::vector<double>& stddev)
      : mean(channels(mean)), stddev(channels(stddev)) {}
  /// (input - mean) / stddev, broadcast.
  Tensor operator()(Tensor input) override { return input.sub(mean).div(stddev); }
  /// The means, (C, 1, 1) float32.
  Tensor mean;
  /// The standard deviations, (C, 1, 1) float32.
  Tensor stddev;

 private:
  static Tensor channels(const std::vector<double>& v) {
    return from_vector(v, {static_cast<int64_t>(v.size()), 1, 1}, TensorOptions().dtype(kFloat32));
  }
};

}  // namespace transforms
}  // namespace data
}  // namespace tg
