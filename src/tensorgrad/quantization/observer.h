/// \file
/// quantization/observer.h: observers (torch.ao.quantization.MinMaxObserver,
/// MovingAverageMinMaxObserver, HistogramObserver), which record the range of the tensors they see
/// and turn it into a scale and zero point, and FakeQuantize, which quantizes and dequantizes in the forward with the
/// straight-through estimator in the backward (quantization-aware training). The function behind it
/// is tg::fake_quantize_per_tensor_affine. Quantized tensors: quantization/quantize.h.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tensorgrad/nn/module.h"

namespace tg {

/// x quantized and dequantized in one step (torch.fake_quantize_per_tensor_affine):
/// (clamp(nearbyint(x / scale) + zero_point, quant_min, quant_max) - zero_point) * scale, in float32
/// (halves to even), returned in x's dtype. Backward is the straight-through estimator: the gradient
/// passes unchanged where nearbyint(x / scale) + zero_point lies in [quant_min, quant_max], and is 0
/// where it was clamped. Error for scale <= 0 or quant_min > quant_max, or a zero point outside them.
Tensor fake_quantize_per_tensor_affine(const Tensor& x, double scale, int64_t zero_point, int64_t quant_min,
                                         int64_t quant_max);

namespace quantization {

// Note [Observers]
// ~~~~~~~~~~~~~~~~
// PyTorch's observer arithmetic, in float32 as its tensors do it (values checked against PyTorch in
// tests/test_quantization.cpp): min_val / max_val start at +inf / -inf; MinMaxObserver keeps the
// running min and max, MovingAverageMinMaxObserver takes the first batch's and then
// min_val += c (batch min - min_val) (likewise max). calculate_qparams() widens the range to include
// 0 and gives, affine: scale = max(span / (quant_max - quant_min), eps), zero_point = clamp(quant_min -
// round(min / scale)); symmetric: scale = max(max(-min, max) / ((quant_max - quant_min) / 2), eps),
// zero_point 0 (128 for uint8). The range is [0, 255] for uint8 and [-128, 127] for int8, halved by
// reduce_range. The state is PyTorch's buffers ("eps", "min_val", "max_val"), kept on the CPU: the
// statistics of each observed batch are read to the host (one synchronization per forward for a CUDA
// input).

/// The quantization parameters an observer computes.
struct QParams {
  double scale = 1;         ///< float32 value, as a double
  int64_t zero_point = 0;   ///< in [quant_min, quant_max]
};

/// What every per-tensor observer gives (torch.ao.quantization.ObserverBase): forward(x) records x and
/// returns it; calculate_qparams() turns what was recorded into a scale and zero point in
/// [quant_min(), quant_max()]. Lets prepare() take any of them (QConfig in quantization/qat.h).
class ObserverBase : public nn::Module {
 public:
  /// The scale and zero point for what was observed so far.
  virtual QParams calculate_qparams() const = 0;
  /// The smallest quantized value.
  virtual int64_t quant_min() const = 0;
  /// The largest quantized value.
  virtual int64_t quant_max() const = 0;
};

/// Records the min and max of what it sees (torch.ao.quantization.MinMaxObserver); forward(x) returns
/// x unchanged. See Note [Observers] in quantization/observer.h.
class MinMaxObserver : public ObserverBase {
 public:
  /// dtype kUInt8 (default) or kInt8 (DTypeError otherwise); symmetric: per_tensor_symmetric instead
  /// of per_tensor_affine; reduce_range: one bit less of range (PyTorch's reduce_range).
  explicit MinMaxObserver(DType dtype = kUInt8, bool symmetric = false, bool reduce_range = false);
  /// Records x's min and max (floating x, any device; DTypeError otherwise) and returns x.
  Tensor forward(const Tensor& x) override;
  /// The scale and zero point for the range seen so far; before any data, scale 1 and zero point 0
  /// (PyTorch warns and returns the same).
  QParams calculate_qparams() const override;
  /// The smallest quantized value (0, or -128, halved with reduce_range).
  int64_t quant_min() const override { return quant_min_; }
  /// The largest quantized value (255 or 127, halved with reduce_range).
  int64_t quant_max() const override { return quant_max_; }
  /// The observed minimum (+inf before any data).
  double min_val() const;
  /// The observed maximum (-inf before any data).
  double max_val() const;
  /// "MinMaxObserver(min_val=..., max_val=...)".
  std::string name() const override;
  /// An observer with the same settings and no statistics (for clone()).
  std::unique_ptr<nn::Module> new_instance() const override;

 protected:
  /// Folds a batch's min and max into the statistics (MinMax: the running extremes).
  virtual void update(float batch_min, float batch_max);
  /// The settings, kept for new_instance().
  DType dtype_;
  bool symmetric_;   ///< Symmetric quantization (zero point fixed).
  bool reduce_range_;   ///< PyTorch's reduce_range: one bit less of range.
  int64_t quant_min_ = 0;   ///< The smallest quantized value.
  int64_t quant_max_ = 255;   ///< The largest quantized value.
  Tensor eps_;   ///< PyTorch's buffer eps: (1) float32.
  Tensor min_val_;   ///< The observed minimum, 0-d float32 (+inf at first).
  Tensor max_val_;   ///< The observed maximum, 0-d float32 (-inf at first).
};

/// The moving average of the min and max (torch.ao.quantization.MovingAverageMinMaxObserver):
/// min_val += averaging_constant (batch min - min_val) after the first batch.
class MovingAverageMinMaxObserver : public MinMaxObserver {
 public:
  /// averaging_constant in (0, 1] (Error otherwise); the rest as MinMaxObserver.
  explicit MovingAverageMinMaxObserver(double averaging_constant = 0.01, DType dtype = kUInt8,
                                       bool symmetric = false, bool reduce_range = false);
  /// "MovingAverageMinMaxObserver(min_val=..., max_val=...)".
  std::string name() const override;
  /// An observer with the same settings and no statistics (for clone()).
  std::unique_ptr<nn::Module> new_instance() const override;

 protected:
  /// min_val += c (batch min - min_val), max likewise; the first batch sets them.
  void update(float batch_min, float batch_max) override;

 private:
  double averaging_constant_;
};

// Note [Histogram observer]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// HistogramObserver follows PyTorch 1.13's torch.ao.quantization.HistogramObserver step by step, in
// its float32 / float64 mix, so that its scale and zero point match PyTorch's (checked against
// recorded values in tests/test_qat.cpp):
// - The first batch (or any batch while min_val == max_val) sets min_val / max_val to its extremes
//   and the histogram to histc(x, bins, min=int(min_val), max=int(max_val)). PyTorch 1.13 truncates
//   the range to integers there, so values outside [int(min), int(max)] are not counted (at most
//   one unit at each end); this is kept, since the recorded values depend on it. histc itself: when
//   the two ends are equal it takes the data's min and max, and when those are equal too, min - 1
//   and max + 1; a value v lands in bin (int64)((v - lo) * bins / (hi - lo)) computed in float32,
//   the last bin including hi.
// - A later batch widens the range to include its extremes, the max moved out so that each new bin
//   spans a whole number (downsample_rate) of 1/upsample_rate-th (1/128) old bins: the old histogram
//   is upsampled 128 times, placed at its offset (start_idx) in the wider range, and summed back down
//   in groups of downsample_rate (the integral histogram in float64, differences over 128), then
//   added to the batch's own histc (again over the integer-truncated range).
// - calculate_qparams() runs _non_linear_param_search: starting from the full range, it moves the
//   start or the end bin inwards by quantile steps of 1e-5 (the side with more bins to skip), and
//   stops when the L2 quantization error of uniform quantization into 256 bins over [start, end]
//   (each source bin's mass spread uniformly over the bin) grows. The chosen [min, max] then give
//   scale and zero point as in Note [Observers].
// The histogram lives on the CPU: each observed batch is read to the host.

/// Records a histogram of what it sees and picks the range that minimizes the quantization error
/// (torch.ao.quantization.HistogramObserver, PyTorch 1.13's algorithm; see Note [Histogram
/// observer] in quantization/observer.h). forward(x) returns x. Buffers and state_dict keys are
/// PyTorch's: eps, histogram (bins float32 counts), min_val, max_val.
class HistogramObserver : public ObserverBase {
 public:
  /// bins >= 1 (Error otherwise; PyTorch's default 2048); dtype kUInt8 or kInt8 (DTypeError
  /// otherwise); symmetric: per_tensor_symmetric instead of per_tensor_affine; reduce_range as
  /// MinMaxObserver.
  explicit HistogramObserver(int64_t bins = 2048, DType dtype = kUInt8, bool symmetric = false,
                             bool reduce_range = false);
  /// Adds x (floating, any device; DTypeError otherwise) to the histogram and returns x. An empty x
  /// changes nothing; non-finite values raise an Error (PyTorch 1.13 fails on them too).
  Tensor forward(const Tensor& x) override;
  /// The scale and zero point for the range chosen by the L2 error search; before any data, scale 1
  /// and zero point 0 (PyTorch warns and returns the same).
  QParams calculate_qparams() const override;
  /// The range the L2 error search picks from the histogram, {min, max} ({+inf, -inf} before any data);
  /// calculate_qparams() turns it into a scale and zero point.
  std::pair<double, double> search_range() const;
  /// The smallest quantized value.
  int64_t quant_min() const override { return quant_min_; }
  /// The largest quantized value.
  int64_t quant_max() const override { return quant_max_; }
  /// The number of histogram bins.
  int64_t bins() const { return bins_; }
  /// The lower end of the histogram's range (+inf before any data).
  double min_val() const;
  /// The upper end of the histogram's range (-inf before any data).
  double max_val() const;
  /// The histogram, bins float32 values on the CPU.
  const Tensor& histogram() const { return histogram_; }
  /// "HistogramObserver(min_val=..., max_val=...)".
  std::string name() const override;
  /// An observer with the same settings and no statistics (for clone()).
  std::unique_ptr<nn::Module> new_instance() const override;

 private:
  /// The L2 error of quantizing into 256 bins over source bins [start_bin, end_bin] (PyTorch's
  /// _compute_quantization_error).
  float quantization_error(const std::vector<float>& hist, float lo, float hi, int64_t start_bin,
                           int64_t end_bin) const;
  int64_t bins_;
  DType dtype_;
  bool symmetric_, reduce_range_;
  int64_t quant_min_ = 0, quant_max_ = 255;
  Tensor eps_, histogram_, min_val_, max_val_;
};

/// What the per-tensor and per-channel fake quantizers share (torch.ao.quantization.FakeQuantizeBase):
/// the uint8 buffers fake_quant_enabled and observer_enabled, the scale (float32) and zero_point
/// (int32) buffers, registered in PyTorch's state_dict order, and the switches.
class FakeQuantizeBase : public nn::Module {
 public:
  /// Turns fake quantization on or off (off: forward returns x after observing).
  void enable_fake_quant(bool on = true);
  /// Turns the observer on or off (off: the scale and zero point stay frozen).
  void enable_observer(bool on = true);
  /// Whether fake quantization is on.
  bool fake_quant_enabled() const;
  /// Whether the observer is on.
  bool observer_enabled() const;

 protected:
  /// Registers the four buffers: both switches on, `channels` scales of 1 and zero points of 0.
  explicit FakeQuantizeBase(int64_t channels);
  /// "fake_quant_enabled=1, observer_enabled=1, quant_min=..., quant_max=..." for name().
  std::string describe_switches(int64_t quant_min, int64_t quant_max) const;
  Tensor fake_quant_enabled_;   ///< uint8 (1): 1 while fake quantization is on
  Tensor observer_enabled_;     ///< uint8 (1): 1 while the observer is on
  Tensor scale_;                ///< float32 (channels): the scales in use
  Tensor zero_point_;           ///< int32 (channels): the zero points in use
};

/// Fake quantization for quantization-aware training (torch.ao.quantization.FakeQuantize with
/// MovingAverageMinMaxObserver, PyTorch's default_fake_quant settings by default): forward observes
/// x (when the observer is enabled), stores the observer's scale and zero point, and returns
/// fake_quantize_per_tensor_affine(x, ...) (when fake quantization is enabled), whose backward is the
/// straight-through estimator. Buffers and state_dict keys are PyTorch's: fake_quant_enabled,
/// observer_enabled, scale, zero_point, activation_post_process.{eps, min_val, max_val}.
class FakeQuantize : public FakeQuantizeBase {
 public:
  /// The observer's settings (see MovingAverageMinMaxObserver).
  explicit FakeQuantize(double averaging_constant = 0.01, DType dtype = kUInt8, bool symmetric = false,
                        bool reduce_range = false);
  /// Observes, then fake-quantizes x (see the class comment).
  Tensor forward(const Tensor& x) override;
  /// The scale in use.
  double scale() const;
  /// The zero point in use.
  int64_t zero_point() const;
  /// The observer (PyTorch's activation_post_process).
  MovingAverageMinMaxObserver& observer() { return observer_; }
  /// The observer, read-only.
  const MovingAverageMinMaxObserver& observer() const { return observer_; }
  /// "FakeQuantize(fake_quant_enabled=1, observer_enabled=1, quant_min=0, quant_max=255, ...)".
  std::string name() const override;
  /// A FakeQuantize with the same settings and fresh state (for clone()).
  std::unique_ptr<nn::Module> new_instance() const override;

 private:
  MovingAverageMinMaxObserver observer_;
  double averaging_constant_;
  DType dtype_;
  bool symmetric_, reduce_range_;
};

}  // namespace quantization
}  // namespace tg
