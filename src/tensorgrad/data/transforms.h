/// \file
/// data/transforms.h: libtorch's transforms (torch::data::transforms), which dataset.map(...) applies
/// to a dataset's batches (data/datasets.h): per-example ones (Normalize, Lambda, TensorLambda) and
/// collations that turn a batch into one value (Stack, Collate); and torchvision's image transforms
/// (RandomHorizontalFlip, RandomVerticalFlip, RandomCrop, CenterCrop, Pad, Compose), which are
/// TensorTransforms too, so that both .map(...) and tensorgrad's own TransformDataset
/// (data/dataset_utils.h) take them. Their shape and random logic is in data/transforms.cpp.
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <utility>
#include <vector>

#include "tensorgrad/core/error.h"

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

/// (data - mean) / stddev for each example (libtorch's Normalize, torchvision's for tensors): mean and
/// stddev hold one value, or one per channel of a (C, H, W) image or an (N, C, H, W) batch; each
/// becomes a float32 (C, 1, 1) tensor, as in libtorch. A channel count other than C is a ShapeError
/// of the broadcast. `.map(transforms::Normalize<>(0.1307, 0.3081))`.
template <class Target = Tensor>
struct Normalize : public TensorTransform<Target> {
  /// One mean and one standard deviation for every channel.
  Normalize(double mean, double stddev) : Normalize(std::vector<double>{mean}, std::vector<double>{stddev}) {}
  /// A mean and a standard deviation per channel: Normalize<>({0.5, 0.5, 0.5}, {0.2, 0.2, 0.2}).
  /// DataError (torchvision's ValueError) for a standard deviation of zero.
  Normalize(const std::vector<double>& mean, const std::vector<double>& stddev)
      : mean(channels(mean)), stddev(channels(stddev)) {
    for (const double s : stddev)
      TG_CHECK(static_cast<float>(s) != 0.0f, DataError, "Normalize: std evaluated to zero after conversion to "
               "float32, leading to division by zero");
  }
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

namespace detail {
// Note [Image transforms]
// The image transforms take a tensor (..., H, W), a (C, H, W) image or an (N, C, H, W) batch, as
// torchvision's do for tensors, and treat a batch as one image: one coin or one crop window for all
// of it. ShapeError for fewer than 2 dims. Their random draws come from tg's stream (tg::rand for a
// coin, tg::randint for a window, both under tg's lock), so tg::manual_seed fixes them and they are
// safe to call from several loader workers; they are tensorgrad's numbers, not torchvision's.

/// (height, width) from torchvision's size argument: one value (a square) or two; DataError unless
/// each is positive.
std::array<int64_t, 2> image_size(const std::vector<int64_t>& size, const char* who);
/// (left, top, right, bottom) from torchvision's padding argument: one value (every side), two (left
/// and right, top and bottom) or four; DataError unless each is non-negative.
std::array<int64_t, 4> image_padding(const std::vector<int64_t>& padding, const char* who);
/// x (..., H, W) with the last dim reversed (hflip) or the one before (vflip) when a draw of
/// tg::rand is below p. DataError unless 0 <= p <= 1 (checked by the transforms' constructors).
Tensor random_flip(const Tensor& x, double p, bool horizontal, const char* who);
/// x (..., H, W) -> (..., H + top + bottom, W + left + right), the border filled with fill.
Tensor pad_image(const Tensor& x, const std::array<int64_t, 4>& ltrb, double fill, const char* who);
/// x (..., H, W) -> (..., h, w), the centre window (torchvision's rounding: top = round((H - h) / 2),
/// half to even); an image smaller than the window is padded with zeros first, as torchvision does.
Tensor center_crop(const Tensor& x, const std::array<int64_t, 2>& size, const char* who);
/// x (..., H, W) padded by ltrb with fill, then a window (..., h, w) at a uniformly drawn top-left
/// corner. ShapeError (torchvision's "Required crop size ... is larger than input image size") when
/// the padded image is smaller than the window.
Tensor random_crop(const Tensor& x, const std::array<int64_t, 2>& size, const std::array<int64_t, 4>& ltrb,
                   double fill, const char* who);
/// DataError unless 0 <= p <= 1.
void check_probability(double p, const char* who);
}  // namespace detail

/// Reverses the image's width (last dim) with probability p (torchvision's RandomHorizontalFlip):
/// (..., H, W) -> (..., H, W). See Note [Image transforms].
template <class Target = Tensor>
struct RandomHorizontalFlip : public TensorTransform<Target> {
  /// Flips with probability p (DataError unless 0 <= p <= 1).
  explicit RandomHorizontalFlip(double p = 0.5) : p(p) { detail::check_probability(p, "RandomHorizontalFlip"); }
  /// input, flipped or not.
  Tensor operator()(Tensor input) override { return detail::random_flip(input, p, true, "RandomHorizontalFlip"); }
  /// The flip probability.
  double p;
};

/// Reverses the image's height (dim -2) with probability p (torchvision's RandomVerticalFlip):
/// (..., H, W) -> (..., H, W). See Note [Image transforms].
template <class Target = Tensor>
struct RandomVerticalFlip : public TensorTransform<Target> {
  /// Flips with probability p (DataError unless 0 <= p <= 1).
  explicit RandomVerticalFlip(double p = 0.5) : p(p) { detail::check_probability(p, "RandomVerticalFlip"); }
  /// input, flipped or not.
  Tensor operator()(Tensor input) override { return detail::random_flip(input, p, false, "RandomVerticalFlip"); }
  /// The flip probability.
  double p;
};

/// Pads the image's border with a constant (torchvision's Pad with padding_mode "constant"):
/// (..., H, W) -> (..., H + top + bottom, W + left + right). padding is one value (every side), two
/// (left/right, top/bottom) or four (left, top, right, bottom); DataError for another count or a
/// negative value. See Note [Image transforms].
template <class Target = Tensor>
struct Pad : public TensorTransform<Target> {
  /// padding on every side, filled with fill.
  explicit Pad(int64_t padding, double fill = 0) : Pad(std::vector<int64_t>{padding}, fill) {}
  /// padding as torchvision's sequence, filled with fill.
  explicit Pad(const std::vector<int64_t>& padding, double fill = 0)
      : ltrb(detail::image_padding(padding, "Pad")), fill(fill) {}
  /// A braced padding, Pad<>({1, 2}): the sequence, not a padding and a fill.
  explicit Pad(std::initializer_list<int64_t> padding, double fill = 0)
      : Pad(std::vector<int64_t>(padding), fill) {}
  /// The padded input.
  Tensor operator()(Tensor input) override { return detail::pad_image(input, ltrb, fill, "Pad"); }
  /// The padding: left, top, right, bottom.
  std::array<int64_t, 4> ltrb;
  /// The border's value.
  double fill;
};

/// The centre window of the image (torchvision's CenterCrop): (..., H, W) -> (..., h, w); an image
/// smaller than the window is zero-padded first. size is one value (a square) or (h, w); DataError
/// unless positive. See Note [Image transforms].
template <class Target = Tensor>
struct CenterCrop : public TensorTransform<Target> {
  /// A size x size window.
  explicit CenterCrop(int64_t size) : CenterCrop(std::vector<int64_t>{size}) {}
  /// A (h, w) window: CenterCrop<>({24, 20}).
  explicit CenterCrop(const std::vector<int64_t>& size) : size(detail::image_size(size, "CenterCrop")) {}
  /// The centre window of input.
  Tensor operator()(Tensor input) override { return detail::center_crop(input, size, "CenterCrop"); }
  /// The window: height, width.
  std::array<int64_t, 2> size;
};

/// A window of the image at a random position (torchvision's RandomCrop), after padding the border
/// by padding with fill (as Pad, default none): (..., H, W) -> (..., h, w), each position of the
/// window inside the padded image equally likely. ShapeError when the padded image is smaller than
/// the window (torchvision's pad_if_needed is not offered). See Note [Image transforms].
/// `RandomCrop<>(32, 4)`: CIFAR's augmentation.
template <class Target = Tensor>
struct RandomCrop : public TensorTransform<Target> {
  /// A size x size window after padding every side by padding.
  explicit RandomCrop(int64_t size, int64_t padding = 0, double fill = 0)
      : RandomCrop(std::vector<int64_t>{size}, std::vector<int64_t>{padding}, fill) {}
  /// A (h, w) window after torchvision's padding sequence (one, two or four values).
  explicit RandomCrop(const std::vector<int64_t>& size, const std::vector<int64_t>& padding = {0}, double fill = 0)
      : size(detail::image_size(size, "RandomCrop")), ltrb(detail::image_padding(padding, "RandomCrop")), fill(fill) {}
  /// A braced size (and padding), RandomCrop<>({24, 20}, {2}): the sequences, not a size and a padding.
  explicit RandomCrop(std::initializer_list<int64_t> size, std::initializer_list<int64_t> padding = {0},
                      double fill = 0)
      : RandomCrop(std::vector<int64_t>(size), std::vector<int64_t>(padding), fill) {}
  /// A random window of the padded input.
  Tensor operator()(Tensor input) override { return detail::random_crop(input, size, ltrb, fill, "RandomCrop"); }
  /// The window: height, width.
  std::array<int64_t, 2> size;
  /// The padding: left, top, right, bottom.
  std::array<int64_t, 4> ltrb;
  /// The padding's value.
  double fill;
};

/// Several transforms one after the other (torchvision's Compose):
/// `Compose<>({RandomCrop<>(28, 4), RandomHorizontalFlip<>(), Normalize<>(0.5, 0.5)})`. Each is any
/// Tensor -> Tensor callable (the transforms above, a lambda), held by value.
template <class Target = Tensor>
class Compose : public TensorTransform<Target> {
 public:
  /// One transform.
  using FunctionType = std::function<Tensor(Tensor)>;
  /// transforms, applied first to last; Error for an empty one.
  explicit Compose(std::vector<FunctionType> transforms) : transforms_(std::move(transforms)) {
    for (size_t k = 0; k < transforms_.size(); ++k)
      TG_CHECK(static_cast<bool>(transforms_[k]), Error, "Compose: transform ", k, " is empty");
  }
  /// input through every transform in order.
  Tensor operator()(Tensor input) override {
    for (FunctionType& t : transforms_) input = t(std::move(input));
    return input;
  }

 private:
  std::vector<FunctionType> transforms_;
};

}  // namespace transforms
}  // namespace data
}  // namespace tg
