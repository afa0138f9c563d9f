/// \file
/// data/transforms.h: libtorch's transforms (torch::data::transforms), which dataset.map(...) applies
/// to a dataset's batches (data/datasets.h): per-example ones (Normalize, Lambda, TensorLambda) and
/// collations that turn a batch into one value (Stack, Collate); and torchvision's image transforms
/// (RandomHorizontalFlip, RandomVerticalFlip, RandomCrop, CenterCrop, Pad, Compose, Resize,
/// RandomResizedCrop, ColorJitter, Grayscale, RandomGrayscale, RandomRotation, RandomAffine,
/// GaussianBlur), which are TensorTransforms too, so that both .map(...) and tensorgrad's own
/// TransformDataset (data/dataset_utils.h) take them, with the deterministic operations under them in
/// transforms::functional (torchvision.transforms.v2.functional). Their shape, pixel and random logic
/// is in data/transforms.cpp.
#pragma once
#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
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
// coin or a uniform parameter, tg::randint for a window, tg::randperm for ColorJitter's order, all
// under tg's lock), in torchvision's order of draws, so tg::manual_seed fixes them and they are safe
// to call from several loader workers; they are tensorgrad's numbers, not torchvision's.

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

/// The sampling of the resizing and geometric transforms (torchvision's InterpolationMode, the two
/// modes its tensor kernels share): the nearest pixel, or the bilinear blend of the four around.
enum class InterpolationMode { Nearest, Bilinear };

/// The deterministic image operations under the random transforms (torchvision.transforms.v2.functional
/// for tensors), for a floating (..., H, W) image or batch; the colour ones take (..., C, H, W) with C
/// 1 or 3 and values in [0, 1]. DTypeError for an integer image, ShapeError for too few dims. They read
/// the image to the host, compute in double, and return a tensor of its dtype on its device (resize
/// stays on the device), without a gradient. See Note [Image transforms].
namespace functional {

/// img (..., H, W) resized (torchvision's resize): size {s} sets the shorter side to s and the longer to
/// int(s * long / short) (capped by max_size, torchvision's rule), size {h, w} sets both. Bilinear uses
/// half-pixel centres (tg::interpolate, align_corners=false); with antialias a downscale averages
/// with torch's antialiasing triangle filter (PyTorch's interpolate(antialias=True)), an upscale is
/// plain bilinear either way; nearest ignores antialias and is tg::interpolate's nearest. The image
/// itself when the size does not change. DataError for a size other than 1 or 2 positive values, or
/// a max_size not above the shorter side (or with two sizes).
Tensor resize(const Tensor& img, const std::vector<int64_t>& size,
              InterpolationMode interpolation = InterpolationMode::Bilinear,
              std::optional<int64_t> max_size = std::nullopt, bool antialias = true);
/// The window (top, left, height, width) of img resized to size (torchvision's resized_crop).
Tensor resized_crop(const Tensor& img, int64_t top, int64_t left, int64_t height, int64_t width,
                    const std::vector<int64_t>& size, InterpolationMode interpolation = InterpolationMode::Bilinear,
                    bool antialias = true);
/// img (..., C, H, W) with C = 3 (RGB) -> (..., n, H, W) of luma 0.2989 R + 0.587 G + 0.114 B
/// (torchvision's rgb_to_grayscale), repeated n times; a one-channel image is repeated as it is.
/// DataError unless num_output_channels is 1 or 3.
Tensor rgb_to_grayscale(const Tensor& img, int64_t num_output_channels = 1);
/// clamp(factor * img, 0, 1) (torchvision's adjust_brightness). DataError for a negative factor.
Tensor adjust_brightness(const Tensor& img, double brightness_factor);
/// clamp(factor * img + (1 - factor) * mean, 0, 1), mean the average of each image's grayscale
/// (of all of it for one channel) (torchvision's adjust_contrast). DataError for a negative factor.
Tensor adjust_contrast(const Tensor& img, double contrast_factor);
/// clamp(factor * img + (1 - factor) * grayscale, 0, 1) for RGB, a one-channel image unchanged
/// (torchvision's adjust_saturation). DataError for a negative factor.
Tensor adjust_saturation(const Tensor& img, double saturation_factor);
/// The hue of an RGB image shifted by hue_factor turns of the colour wheel, through HSV (torchvision's
/// adjust_hue); a one-channel image unchanged. DataError ("hue_factor (0.7) is not in [-0.5, 0.5].").
Tensor adjust_hue(const Tensor& img, double hue_factor);
/// img (..., H, W) rotated counter-clockwise by angle degrees about center (pixel coordinates (x, y),
/// default the image's centre) (torchvision's rotate): each output pixel centre mapped through the
/// inverse rotation and sampled from img (zero outside). With expand, the output grows to hold the
/// whole rotated image (torchvision's size rule). With fill, pixels whose sample falls outside are
/// fill: for nearest those outside, for bilinear a blend mask * (sample - fill) + fill by the share
/// of the blend inside, as torchvision does. Multiples of 90 degrees about the centre are exact
/// index permutations, as torchvision's.
Tensor rotate(const Tensor& img, double angle, InterpolationMode interpolation = InterpolationMode::Nearest,
              bool expand = false, std::optional<std::array<double, 2>> center = std::nullopt,
              std::optional<double> fill = std::nullopt);
/// img (..., H, W) through the affine map of torchvision's affine: rotation by angle degrees
/// (clockwise for positive angles in image coordinates, torchvision's convention), scale, shear
/// (x, y) degrees, all about center (default the image's centre), then translate (x, y) pixels;
/// sampled through the inverse map as rotate. DataError for a scale not above 0.
Tensor affine(const Tensor& img, double angle, std::array<double, 2> translate, double scale,
              std::array<double, 2> shear, InterpolationMode interpolation = InterpolationMode::Nearest,
              std::optional<double> fill = std::nullopt, std::optional<std::array<double, 2>> center = std::nullopt);
/// img (..., H, W) convolved with a Gaussian kernel (torchvision's gaussian_blur): kernel_size {k} or
/// {kx, ky}, odd and positive; sigma {} (0.15 k + 0.35 per side), {s} or {sx, sy}, positive; the
/// kernel is exp(-x^2 / (2 sigma^2)) normalised, the border reflected. DataError for bad arguments,
/// ShapeError when a reflection pad k / 2 is not below the image's side.
Tensor gaussian_blur(const Tensor& img, const std::vector<int64_t>& kernel_size,
                     const std::vector<double>& sigma = {});

}  // namespace functional

namespace detail {
/// functional::resize's checks of size and max_size.
void check_resize_args(const std::vector<int64_t>& size, std::optional<int64_t> max_size, const char* who);
/// A uniform draw in [low, high) from tg's stream (torchvision's torch.empty(1).uniform_(low, high)).
double uniform(double low, double high);
/// The window (top, left, height, width) of RandomResizedCrop for an H x W image: ten tries of a
/// random area share in scale and log-uniform aspect ratio in ratio, else the centre window of the
/// ratio nearest the image's (torchvision's RandomResizedCrop.get_params).
std::array<int64_t, 4> resized_crop_window(int64_t H, int64_t W, const std::array<double, 2>& scale,
                                           const std::array<double, 2>& ratio);
/// ColorJitter: the four adjustments in a random order (torchvision's randperm(4)), each factor drawn
/// uniformly from its range (brightness, contrast, saturation, hue, in that order); a range of
/// nullopt is skipped.
Tensor color_jitter(const Tensor& img, const std::array<std::optional<std::array<double, 2>>, 4>& ranges);
/// torchvision's ColorJitter argument check: one value v becomes (center - v, center + v) (the low end
/// clipped at 0 for the factors), two are a range inside bound; nullopt when it is the identity.
std::optional<std::array<double, 2>> jitter_range(const std::vector<double>& value, const char* name, double center,
                                                  std::array<double, 2> bound, bool clip_first_on_zero);
/// torchvision's degrees argument: one non-negative value d is (-d, d), two are (min, max).
std::array<double, 2> degree_range(const std::vector<double>& degrees, const char* who);
/// RandomAffine's draw for an H x W image (torchvision's get_params): angle, translation (rounded to
/// whole pixels), scale and shear.
Tensor random_affine(const Tensor& img, const std::array<double, 2>& degrees,
                     const std::optional<std::array<double, 2>>& translate,
                     const std::optional<std::array<double, 2>>& scale, const std::vector<double>& shear,
                     InterpolationMode interpolation, double fill, const std::optional<std::array<double, 2>>& center);
/// RandomAffine's shear argument: one value s is (-s, s) in x, two are an x range, four x and y ranges.
std::vector<double> shear_ranges(const std::vector<double>& shear);
}  // namespace detail

/// The image resized (torchvision's Resize): an int size sets the shorter side (the longer one keeps
/// the aspect ratio, int(size * long / short), at most max_size), a (h, w) size both. Bilinear by
/// default, antialiased on a downscale as torchvision's default. See functional::resize.
template <class Target = Tensor>
struct Resize : public TensorTransform<Target> {
  /// The shorter side to size.
  explicit Resize(int64_t size, InterpolationMode interpolation = InterpolationMode::Bilinear,
                  std::optional<int64_t> max_size = std::nullopt, bool antialias = true)
      : Resize(std::vector<int64_t>{size}, interpolation, max_size, antialias) {}
  /// {s} (the shorter side) or {h, w}; DataError for other counts, non-positive sizes, or a max_size
  /// with two sizes or not above the shorter side.
  explicit Resize(const std::vector<int64_t>& size, InterpolationMode interpolation = InterpolationMode::Bilinear,
                  std::optional<int64_t> max_size = std::nullopt, bool antialias = true)
      : size(size), interpolation(interpolation), max_size(max_size), antialias(antialias) {
    detail::check_resize_args(size, max_size, "Resize");
  }
  /// A braced size, Resize<>({24, 32}).
  explicit Resize(std::initializer_list<int64_t> size, InterpolationMode interpolation = InterpolationMode::Bilinear,
                  std::optional<int64_t> max_size = std::nullopt, bool antialias = true)
      : Resize(std::vector<int64_t>(size), interpolation, max_size, antialias) {}
  /// The resized input.
  Tensor operator()(Tensor input) override {
    return functional::resize(input, size, interpolation, max_size, antialias);
  }
  std::vector<int64_t> size;            ///< {shorter side} or {h, w}.
  InterpolationMode interpolation;      ///< The sampling.
  std::optional<int64_t> max_size;      ///< The cap of the longer side with one size.
  bool antialias;                       ///< Whether a bilinear downscale is antialiased.
};

/// A random window of the image resized to size (torchvision's RandomResizedCrop): its area a share
/// of the image's uniform in scale, its aspect ratio log-uniform in ratio, ten tries before the
/// centre window; then resized (bilinear, antialiased by default). (..., H, W) -> (..., h, w).
/// DataError for a bad size, a scale or ratio range that is not (min, max) with min > 0 (torchvision
/// only warns for min > max).
template <class Target = Tensor>
struct RandomResizedCrop : public TensorTransform<Target> {
  /// A size x size output.
  explicit RandomResizedCrop(int64_t size, std::array<double, 2> scale = {0.08, 1.0},
                             std::array<double, 2> ratio = {3.0 / 4.0, 4.0 / 3.0},
                             InterpolationMode interpolation = InterpolationMode::Bilinear, bool antialias = true)
      : RandomResizedCrop(std::vector<int64_t>{size}, scale, ratio, interpolation, antialias) {}
  /// A (h, w) output (one value: a square).
  explicit RandomResizedCrop(const std::vector<int64_t>& size, std::array<double, 2> scale = {0.08, 1.0},
                             std::array<double, 2> ratio = {3.0 / 4.0, 4.0 / 3.0},
                             InterpolationMode interpolation = InterpolationMode::Bilinear, bool antialias = true)
      : size(detail::image_size(size, "RandomResizedCrop")), scale(scale), ratio(ratio),
        interpolation(interpolation), antialias(antialias) {
    TG_CHECK(scale[0] > 0 && scale[0] <= scale[1] && ratio[0] > 0 && ratio[0] <= ratio[1], DataError,
             "RandomResizedCrop: Scale and ratio should be of kind (min, max) with min > 0, got scale (", scale[0],
             ", ", scale[1], ") and ratio (", ratio[0], ", ", ratio[1], ")");
  }
  /// A braced size, RandomResizedCrop<>({24, 32}).
  explicit RandomResizedCrop(std::initializer_list<int64_t> size, std::array<double, 2> scale = {0.08, 1.0},
                             std::array<double, 2> ratio = {3.0 / 4.0, 4.0 / 3.0},
                             InterpolationMode interpolation = InterpolationMode::Bilinear, bool antialias = true)
      : RandomResizedCrop(std::vector<int64_t>(size), scale, ratio, interpolation, antialias) {}
  /// A random window of input, resized.
  Tensor operator()(Tensor input) override {
    TG_CHECK(input.defined() && input.dim() >= 2, ShapeError,
             "RandomResizedCrop: expected a tensor image (..., H, W) with at least 2 dims");
    const std::array<int64_t, 4> w = detail::resized_crop_window(input.size(-2), input.size(-1), scale, ratio);
    return functional::resized_crop(input, w[0], w[1], w[2], w[3], {size[0], size[1]}, interpolation, antialias);
  }
  std::array<int64_t, 2> size;          ///< The output: height, width.
  std::array<double, 2> scale;          ///< The range of the window's share of the area.
  std::array<double, 2> ratio;          ///< The range of the window's aspect ratio (width / height).
  InterpolationMode interpolation;      ///< The resize's sampling.
  bool antialias;                       ///< Whether a bilinear downscale is antialiased.
};

/// Random brightness, contrast, saturation and hue changes in a random order (torchvision's
/// ColorJitter) of a (..., C, H, W) image with values in [0, 1], C 1 or 3. Each argument is one value
/// v, a factor range (max(0, 1 - v), 1 + v) (hue: (-v, v)), or two values (min, max); a factor of
/// exactly 1 (hue 0) is skipped. DataError for a negative single value, a range outside [0, inf)
/// (hue: [-0.5, 0.5]) or decreasing, or another count.
template <class Target = Tensor>
struct ColorJitter : public TensorTransform<Target> {
  /// Single values: ColorJitter<>(0.4, 0.4, 0.4, 0.1).
  explicit ColorJitter(double brightness = 0, double contrast = 0, double saturation = 0, double hue = 0)
      : ColorJitter(std::vector<double>{brightness}, std::vector<double>{contrast}, std::vector<double>{saturation},
                    std::vector<double>{hue}) {}
  /// Each one value or a (min, max) range: ColorJitter<>({0.5, 1.5}, {1}, {0}, {-0.1, 0.2}).
  ColorJitter(const std::vector<double>& brightness, const std::vector<double>& contrast,
              const std::vector<double>& saturation = {0}, const std::vector<double>& hue = {0})
      : ranges{detail::jitter_range(brightness, "brightness", 1, {0, INFINITY}, true),
               detail::jitter_range(contrast, "contrast", 1, {0, INFINITY}, true),
               detail::jitter_range(saturation, "saturation", 1, {0, INFINITY}, true),
               detail::jitter_range(hue, "hue", 0, {-0.5, 0.5}, false)} {}
  /// input with the adjustments.
  Tensor operator()(Tensor input) override { return detail::color_jitter(input, ranges); }
  /// The factor ranges of brightness, contrast, saturation and hue (nullopt: not applied).
  std::array<std::optional<std::array<double, 2>>, 4> ranges;
};

/// The image in grayscale (torchvision's Grayscale): (..., 3, H, W) -> (..., n, H, W), n = 1 or 3
/// copies. See functional::rgb_to_grayscale.
template <class Target = Tensor>
struct Grayscale : public TensorTransform<Target> {
  /// DataError unless num_output_channels is 1 or 3.
  explicit Grayscale(int64_t num_output_channels = 1) : num_output_channels(num_output_channels) {
    TG_CHECK(num_output_channels == 1 || num_output_channels == 3, DataError,
             "Grayscale: num_output_channels should be either 1 or 3, got ", num_output_channels);
  }
  /// The grayscale input.
  Tensor operator()(Tensor input) override { return functional::rgb_to_grayscale(input, num_output_channels); }
  int64_t num_output_channels;   ///< 1 or 3.
};

/// The image in grayscale with probability p, keeping its channel count (torchvision's
/// RandomGrayscale): (..., C, H, W) -> (..., C, H, W), C 1 or 3.
template <class Target = Tensor>
struct RandomGrayscale : public TensorTransform<Target> {
  /// DataError unless 0 <= p <= 1.
  explicit RandomGrayscale(double p = 0.1) : p(p) { detail::check_probability(p, "RandomGrayscale"); }
  /// input, grayscale or not.
  Tensor operator()(Tensor input) override {
    TG_CHECK(input.defined() && input.dim() >= 3, ShapeError,
             "RandomGrayscale: expected a tensor image (..., C, H, W) with at least 3 dims");
    if (rand({1}).item<double>() < p) return functional::rgb_to_grayscale(input, input.size(-3));
    return input;
  }
  double p;   ///< The probability.
};

/// The image rotated by an angle drawn uniformly from degrees (torchvision's RandomRotation): one value
/// d is (-d, d). Nearest sampling by default; expand grows the output to hold the rotated image;
/// center in pixel coordinates (x, y); pixels from outside the image are fill. See
/// functional::rotate. DataError for a negative single value or a count other than 1 or 2.
template <class Target = Tensor>
struct RandomRotation : public TensorTransform<Target> {
  /// An angle in (-degrees, degrees).
  explicit RandomRotation(double degrees, InterpolationMode interpolation = InterpolationMode::Nearest,
                          bool expand = false, std::optional<std::array<double, 2>> center = std::nullopt,
                          double fill = 0)
      : RandomRotation(std::vector<double>{degrees}, interpolation, expand, center, fill) {}
  /// An angle in (degrees[0], degrees[1]) (or (-d, d) for one value).
  explicit RandomRotation(const std::vector<double>& degrees,
                          InterpolationMode interpolation = InterpolationMode::Nearest, bool expand = false,
                          std::optional<std::array<double, 2>> center = std::nullopt, double fill = 0)
      : degrees(detail::degree_range(degrees, "RandomRotation")), interpolation(interpolation), expand(expand),
        center(center), fill(fill) {}
  /// The rotated input.
  Tensor operator()(Tensor input) override {
    const double angle = detail::uniform(degrees[0], degrees[1]);
    return functional::rotate(input, angle, interpolation, expand, center, fill);
  }
  std::array<double, 2> degrees;                 ///< The angle's range.
  InterpolationMode interpolation;               ///< The sampling.
  bool expand;                                   ///< Whether the output holds the whole rotated image.
  std::optional<std::array<double, 2>> center;   ///< The centre of rotation (default the image's).
  double fill;                                   ///< The value of pixels from outside.
};

/// A random affine map of the image about its centre (torchvision's RandomAffine): angle uniform in
/// degrees (one value d: (-d, d)); a translation uniform in (-translate[0] W, translate[0] W) x
/// (-translate[1] H, translate[1] H) rounded to whole pixels; a scale uniform in scale; shear one
/// value s (x in (-s, s)), two (an x range) or four (x and y ranges). Nearest sampling by default;
/// pixels from outside are fill. See functional::affine. DataError for translate outside [0, 1], a
/// scale not positive, a negative single shear or degrees, or bad counts.
template <class Target = Tensor>
struct RandomAffine : public TensorTransform<Target> {
  /// All of torchvision's arguments; degrees {d} or {min, max}; translate, scale and shear optional.
  explicit RandomAffine(const std::vector<double>& degrees,
                        std::optional<std::array<double, 2>> translate = std::nullopt,
                        std::optional<std::array<double, 2>> scale = std::nullopt,
                        const std::vector<double>& shear = {},
                        InterpolationMode interpolation = InterpolationMode::Nearest, double fill = 0,
                        std::optional<std::array<double, 2>> center = std::nullopt)
      : degrees(detail::degree_range(degrees, "RandomAffine")), translate(translate), scale(scale),
        shear(detail::shear_ranges(shear)), interpolation(interpolation), fill(fill), center(center) {
    if (translate)
      for (const double t : *translate)
        TG_CHECK(t >= 0.0 && t <= 1.0, DataError, "RandomAffine: translation values should be between 0 and 1");
    if (scale)
      for (const double s : *scale) TG_CHECK(s > 0, DataError, "RandomAffine: scale values should be positive");
  }
  /// Rotation only, an angle in (-degrees, degrees).
  explicit RandomAffine(double degrees, std::optional<std::array<double, 2>> translate = std::nullopt,
                        std::optional<std::array<double, 2>> scale = std::nullopt,
                        const std::vector<double>& shear = {},
                        InterpolationMode interpolation = InterpolationMode::Nearest, double fill = 0,
                        std::optional<std::array<double, 2>> center = std::nullopt)
      : RandomAffine(std::vector<double>{degrees}, translate, scale, shear, interpolation, fill, center) {}
  /// The transformed input.
  Tensor operator()(Tensor input) override {
    return detail::random_affine(input, degrees, translate, scale, shear, interpolation, fill, center);
  }
  std::array<double, 2> degrees;                    ///< The angle's range.
  std::optional<std::array<double, 2>> translate;   ///< The translation's share of the width and height.
  std::optional<std::array<double, 2>> scale;       ///< The scale's range.
  std::vector<double> shear;                        ///< Empty, or x (min, max) and y (min, max) shear ranges.
  InterpolationMode interpolation;                  ///< The sampling.
  double fill;                                      ///< The value of pixels from outside.
  std::optional<std::array<double, 2>> center;      ///< The centre (default the image's).
};

/// The image blurred by a Gaussian of a standard deviation drawn uniformly from sigma (min, max) (one
/// value: fixed), the same in x and y (torchvision's GaussianBlur). See functional::gaussian_blur.
/// DataError for an even or non-positive kernel size, or sigma not 0 < min <= max.
template <class Target = Tensor>
struct GaussianBlur : public TensorTransform<Target> {
  /// A kernel_size x kernel_size kernel.
  explicit GaussianBlur(int64_t kernel_size, const std::vector<double>& sigma = {0.1, 2.0})
      : GaussianBlur(std::vector<int64_t>{kernel_size}, sigma) {}
  /// A {k} or {kx, ky} kernel; sigma {s} or {min, max}.
  explicit GaussianBlur(const std::vector<int64_t>& kernel_size, const std::vector<double>& sigma = {0.1, 2.0})
      : kernel_size(kernel_size.size() == 1 ? std::vector<int64_t>{kernel_size[0], kernel_size[0]} : kernel_size) {
    TG_CHECK(kernel_size.size() == 1 || kernel_size.size() == 2, DataError,
             "GaussianBlur: If kernel_size is a sequence its length should be 1 or 2. Got ", kernel_size.size());
    for (const int64_t k : kernel_size)
      TG_CHECK(k > 0 && k % 2 == 1, DataError, "GaussianBlur: Kernel size value should be an odd and positive number.");
    TG_CHECK(sigma.size() == 1 || sigma.size() == 2, DataError,
             "GaussianBlur: If sigma is a sequence its length should be 1 or 2. Got ", sigma.size());
    this->sigma = {sigma[0], sigma.back()};
    TG_CHECK(this->sigma[0] > 0 && this->sigma[0] <= this->sigma[1], DataError,
             "GaussianBlur: sigma values should be positive and of the form (min, max). Got (", this->sigma[0], ", ",
             this->sigma[1], ")");
  }
  /// A braced kernel size, GaussianBlur<>({3, 5}).
  explicit GaussianBlur(std::initializer_list<int64_t> kernel_size, const std::vector<double>& sigma = {0.1, 2.0})
      : GaussianBlur(std::vector<int64_t>(kernel_size), sigma) {}
  /// The blurred input.
  Tensor operator()(Tensor input) override {
    const double s = detail::uniform(sigma[0], sigma[1]);
    return functional::gaussian_blur(input, kernel_size, {s, s});
  }
  std::vector<int64_t> kernel_size;   ///< {kx, ky}.
  std::array<double, 2> sigma{};      ///< The standard deviation's range.
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
